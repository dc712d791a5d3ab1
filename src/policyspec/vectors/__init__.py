"""Golden vectors: the spec's expectations published as data
(spec/vectors.md), so that a policy in any language can be checked
against the same source of truth.

``generate`` writes them from the model (never by hand), ``schema`` is the
file format, ``replay`` runs them against a policy, ``script`` and
``scenarios`` are how cases are written.
"""

from policyspec.vectors.generation import FILES, generate, write_vectors
from policyspec.vectors.runner import CaseResult, replay_case, replay_directory
from policyspec.vectors.schema import SCHEMA, VectorError, read_vectors, vector_files

__all__ = [
    "FILES",
    "SCHEMA",
    "CaseResult",
    "VectorError",
    "generate",
    "read_vectors",
    "replay_case",
    "replay_directory",
    "vector_files",
    "write_vectors",
]
