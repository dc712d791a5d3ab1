"""policyspec: executable specification and conformance suite for vLLM's
KV-offload CachePolicy.

The names in ``__all__`` are the supported API for scripts and extensions
(spec/extending.md, "Supported API"); every module below this package is
internal and may change between releases. The names are imported when
first used, so ``import policyspec`` stays cheap."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from policyspec.version import SPEC_VERSION, __version__

_FRONT: dict[str, tuple[str, ...]] = {
    # Running a check, and what it runs on.
    "policyspec.session": ("check_target", "run_check"),
    "policyspec.options": ("CheckOptions",),
    "policyspec.adapters": ("TargetError", "load_subject", "subject_for_class"),
    "policyspec.subject": ("Block", "Subject"),
    "policyspec.profiles": ("Profile", "get_profile", "register_profile"),
    "policyspec.reference": ("ARCCachePolicy", "LRU033CachePolicy", "LRU034CachePolicy",
                             "LRUCachePolicy"),
    "policyspec.protocols": ("CachePolicyR9", "CachePolicyR10"),
    "policyspec.cli": ("main",),
    # What the snippets and tests a check or prove writes import.
    "policyspec.assertions": ("assert_engine_finds_nothing", "assert_requirement_holds",
                              "policy_class", "vllm_types"),
    "policyspec.environment": ("policy_environment",),
    # The report, its verdict and the exit codes.
    "policyspec.reports.report": ("FAIL", "NA", "NOT_TESTED", "PASS", "XFAIL", "FailureReport",
                                  "Report", "RequirementStatus", "load_report"),
    "policyspec.reports.verdict": ("ERROR", "INCOMPLETE", "INTERRUPTED", "UNJUDGED", "VERDICTS",
                                   "Verdict", "decide", "exit_code"),
    "policyspec.exits": ("EXIT_CONFORMS", "EXIT_FAILS", "EXIT_INCOMPLETE", "EXIT_UNJUDGED",
                         "EXIT_USAGE", "UsageError"),
    # Report formats.
    "policyspec.reports.write": ("FORMATS", "Format", "register_format", "write_reports"),
    # Engines.
    "policyspec.engines": ("ENGINES", "register_engine"),
    "policyspec.run.context": ("Engine", "EngineContext"),
    "policyspec.run.result": ("EngineRun", "Finding"),
    "policyspec.harness": ("ConformanceFailure", "Lockstep"),
    "policyspec.model.actions": ("Action", "Primitive", "is_legal"),
    # Profiles: the model's state and what a refinement plugs into.
    "policyspec.model.state": ("IDLE", "IN_FLIGHT", "State"),
    "policyspec.model.request": ("Requests",),
    "policyspec.model.step": ("Diagnosis", "Refinement"),
    # The conformance suite as pytest classes.
    "policyspec.testing": ("ConformanceSuite",),
}
_HOME = {name: module for module, names in _FRONT.items() for name in names}

__all__ = [
    "ENGINES",
    "ERROR",
    "EXIT_CONFORMS",
    "EXIT_FAILS",
    "EXIT_INCOMPLETE",
    "EXIT_UNJUDGED",
    "EXIT_USAGE",
    "FAIL",
    "FORMATS",
    "IDLE",
    "INCOMPLETE",
    "INTERRUPTED",
    "IN_FLIGHT",
    "NA",
    "NOT_TESTED",
    "PASS",
    "SPEC_VERSION",
    "UNJUDGED",
    "VERDICTS",
    "XFAIL",
    "ARCCachePolicy",
    "Action",
    "Block",
    "CachePolicyR9",
    "CachePolicyR10",
    "CheckOptions",
    "ConformanceFailure",
    "ConformanceSuite",
    "Diagnosis",
    "Engine",
    "EngineContext",
    "EngineRun",
    "FailureReport",
    "Finding",
    "Format",
    "LRU033CachePolicy",
    "LRU034CachePolicy",
    "LRUCachePolicy",
    "Lockstep",
    "Primitive",
    "Profile",
    "Refinement",
    "Report",
    "Requests",
    "RequirementStatus",
    "State",
    "Subject",
    "TargetError",
    "UsageError",
    "Verdict",
    "__version__",
    "assert_engine_finds_nothing",
    "assert_requirement_holds",
    "check_target",
    "decide",
    "exit_code",
    "get_profile",
    "is_legal",
    "load_report",
    "load_subject",
    "main",
    "policy_class",
    "policy_environment",
    "register_engine",
    "register_format",
    "register_profile",
    "run_check",
    "subject_for_class",
    "vllm_types",
    "write_reports",
]

if TYPE_CHECKING:
    from policyspec.adapters import TargetError, load_subject, subject_for_class
    from policyspec.assertions import (
        assert_engine_finds_nothing,
        assert_requirement_holds,
        policy_class,
        vllm_types,
    )
    from policyspec.cli import main
    from policyspec.engines import ENGINES, register_engine
    from policyspec.environment import policy_environment
    from policyspec.exits import (
        EXIT_CONFORMS,
        EXIT_FAILS,
        EXIT_INCOMPLETE,
        EXIT_UNJUDGED,
        EXIT_USAGE,
        UsageError,
    )
    from policyspec.harness import ConformanceFailure, Lockstep
    from policyspec.model.actions import Action, Primitive, is_legal
    from policyspec.model.request import Requests
    from policyspec.model.state import IDLE, IN_FLIGHT, State
    from policyspec.model.step import Diagnosis, Refinement
    from policyspec.options import CheckOptions
    from policyspec.profiles import Profile, get_profile, register_profile
    from policyspec.protocols import CachePolicyR9, CachePolicyR10
    from policyspec.reference import (
        ARCCachePolicy,
        LRU033CachePolicy,
        LRU034CachePolicy,
        LRUCachePolicy,
    )
    from policyspec.reports.report import (
        FAIL,
        NA,
        NOT_TESTED,
        PASS,
        XFAIL,
        FailureReport,
        Report,
        RequirementStatus,
        load_report,
    )
    from policyspec.reports.verdict import (
        ERROR,
        INCOMPLETE,
        INTERRUPTED,
        UNJUDGED,
        VERDICTS,
        Verdict,
        decide,
        exit_code,
    )
    from policyspec.reports.write import FORMATS, Format, register_format, write_reports
    from policyspec.run.context import Engine, EngineContext
    from policyspec.run.result import EngineRun, Finding
    from policyspec.session import check_target, run_check
    from policyspec.subject import Block, Subject
    from policyspec.testing import ConformanceSuite


def __getattr__(name: str) -> Any:
    """A name of the front, imported from its module when first asked for."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'policyspec' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
