"""vLLM 0.34.0: API revision R10 (spec/contract.md). ``touch`` is gone from
policy and manager, ``on_request_finished`` is abstract, and the manager
counts a key once per request toward its store threshold."""

from policyspec.releases import Release

RELEASE = Release(
    version="0.34.0",
    revision="R10",
    summary="vLLM 0.34.0: touch removed; on_request_finished abstract",
    methods=(
        ("get(key)", "core"),
        ("insert(key, chunk, req_context)", "core"),
        ("remove(key)", "core"),
        ("evict(n, protected)", "core"),
        ("clear()", "abstract"),
        ("mark_evictable(key)", "hook"),
        ("mark_non_evictable(key)", "hook"),
        ("on_store_miss(keys, req_context)", "hook"),
        ("on_request_access(keys, req_context)", "hook"),
        ("on_request_finished(key_groups, insertion_only_keys, reused_keys, req_context)",
         "abstract"),
    ),
    manager_touches=False,
    counts_once=True,
    intree=(
        ("vllm.v1.kv_offload.cpu.policies.lru", "LRUCachePolicy"),
        ("vllm.v1.kv_offload.cpu.policies.arc", "ARCCachePolicy"),
    ),
    references=(
        ("reference LRU", "policyspec.reference:LRU034CachePolicy"),
        ("reference ARC", "policyspec.reference:ARC034CachePolicy"),
    ),
)
