"""Adapters: any vLLM ``CachePolicy`` (any API revision, vLLM installed or
not) turned into a ``Subject`` speaking the seed API.

``load_subject("path/to/policy.py:Class")`` is what the CLI calls;
``subject_for_class(cls)`` is for classes already imported. Every user
mistake is a ``TargetError`` with a one-line message. The pieces:
``target`` (parse and import), ``policyspec.vllm.standins`` (fake ``vllm`` modules),
``revisions`` (detection), ``seed`` (the seed-API view), ``blocks`` (block
and request objects of the right vLLM types).
"""

from policyspec.adapters.errors import TargetError
from policyspec.adapters.loader import load_subject, subject_for_class
from policyspec.adapters.seed import SeedAdapter, unwrap
from policyspec.vllm.standins import PlaceholderUsedError, installed

__all__ = [
    "PlaceholderUsedError",
    "SeedAdapter",
    "TargetError",
    "installed",
    "load_subject",
    "subject_for_class",
    "unwrap",
]
