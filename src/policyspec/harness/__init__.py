"""The harness: drives a policy and the model in lockstep, plays the manager."""

from policyspec.harness.failures import (
    Aborted,
    CallerContractError,
    ConformanceFailure,
    failure_type,
)
from policyspec.harness.lockstep import Lockstep

__all__ = ["Aborted", "CallerContractError", "ConformanceFailure", "Lockstep", "failure_type"]
