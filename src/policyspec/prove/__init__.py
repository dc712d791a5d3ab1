"""Symbolic evidence with CrossHair: ``policyspec prove`` (spec/prove.md).

``prove_model`` has CrossHair check the model's own PEP 316 contracts;
``prove_target`` checks a policy one operation of its revision at a time
from every symbolic pre-state within stated bounds, which is where
CrossHair is strong. Reports keep a proof within the bounds, "no
counterexample within budget" and a counterexample apart.
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
from policyspec.prove.prover import prove_model, prove_target

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
