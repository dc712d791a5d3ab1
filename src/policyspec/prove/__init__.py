"""Symbolic evidence with CrossHair: ``policyspec prove``.

``prove_model`` has CrossHair check the model's own PEP 316 contracts.
``prove_target`` checks a policy: with an abstraction pair (``to_model``,
``from_model``: policyspec.prove.abstraction) every operation is checked
from a symbolic pre-state against the model, one operation at a time, which
is where CrossHair is strong; without one, a bounded symbolic search over
short call sequences, which is weaker and says so. Reports keep "confirmed
over all paths" (within stated bounds), "no counterexample within budget"
and "counterexample" (replayed, with a pytest test) apart. spec/prove.md
is the user's guide.
"""

from policyspec.prove.abstraction import (
    MODULE_ATTRIBUTE,
    Abstraction,
    find_abstraction,
    register_abstraction,
)
from policyspec.prove.commute import Divergence, ProofSubject, check_step
from policyspec.prove.proof_report import ProofReport
from policyspec.prove.proof_target import ProveUsageError, TargetSpec, load_proof_subject
from policyspec.prove.run import prove_model, prove_target

__all__ = [
    "MODULE_ATTRIBUTE",
    "Abstraction",
    "Divergence",
    "ProofReport",
    "ProofSubject",
    "ProveUsageError",
    "TargetSpec",
    "check_step",
    "find_abstraction",
    "load_proof_subject",
    "prove_model",
    "prove_target",
    "register_abstraction",
]
