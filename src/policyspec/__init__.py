"""policyspec: executable specification and conformance suite for vLLM's
KV-offload CachePolicy."""

__version__ = "0.1.0"
SPEC_VERSION = "1.2.0"
"""Version of the normative text in spec/; reports carry it."""

__all__ = ["SPEC_VERSION", "__version__"]
