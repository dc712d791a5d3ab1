"""Symbolic evidence with CrossHair: ``policyspec prove``.

``prove_model`` has CrossHair check the model's own PEP 316 contracts.
``prove_target`` checks a policy one operation of its revision at a time,
from every symbolic pre-state within stated bounds, which is where CrossHair
is strong: the pre-state is built and read back through the policy's own
methods (the derived pair, policyspec.prove.derived), or, when asked for,
through a hand-written abstraction pair (policyspec.prove.abstraction).
Reports keep "confirmed over all paths" (a proof within the bounds), "no
counterexample within budget" and "counterexample" (replayed, minimised as
check minimises, with a pytest test) apart. spec/prove.md is the user's
guide.
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
