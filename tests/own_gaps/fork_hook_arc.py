"""A fork's ARC, derived from vLLM's in-tree one, that reports every
finished request to a fork-only vLLM helper: the name is first used in a
request hook, so only the engines that call hooks reach it."""

from vllm.v1.kv_offload.cpu.policies.arc import ARCCachePolicy, report_reuse


class ReportingARC(ARCCachePolicy):
    def on_request_finished(self, key_groups, insertion_only_keys, reused_keys, req_context):
        report_reuse(len(reused_keys))
        super().on_request_finished(key_groups, insertion_only_keys, reused_keys, req_context)
