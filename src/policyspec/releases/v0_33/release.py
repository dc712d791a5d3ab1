"""vLLM 0.33.0: API revision R9 (spec/contract.md). ``insert`` takes the
storing request's context and ``on_request_access`` became upstream API;
its manager still has ``touch``."""

from policyspec.releases import Release

RELEASE = Release(
    version="0.33.0",
    revision="R9",
    summary="vLLM 0.33.0: insert takes req_context; on_request_access upstream",
    methods=(
        ("get(key)", "core"),
        ("insert(key, chunk, req_context)", "core"),
        ("remove(key)", "core"),
        ("touch(keys, req_context)", "core"),
        ("evict(n, protected)", "core"),
        ("clear()", "abstract"),
        ("mark_evictable(key)", "hook"),
        ("mark_non_evictable(key)", "hook"),
        ("on_store_miss(keys, req_context)", "hook"),
        ("on_request_access(keys, req_context)", "hook"),
        ("on_request_finished(key_groups, insertion_only_keys, reused_keys, req_context)",
         "hook"),
    ),
    manager_touches=True,
    counts_once=False,
    intree=(
        ("vllm.v1.kv_offload.cpu.policies.lru", "LRUCachePolicy"),
        ("vllm.v1.kv_offload.cpu.policies.arc", "ARCCachePolicy"),
    ),
    references=(
        ("reference LRU", "policyspec.reference:LRU033CachePolicy"),
        ("reference ARC", "policyspec.reference:ARCCachePolicy"),
    ),
)
