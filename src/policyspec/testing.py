"""Reusing the conformance suite from pytest (spec/pytest.md): a test class
that derives from ``ConformanceSuite`` and sets ``target`` (or
``policy_class``) and ``profile`` gets one test per requirement. The check
runs once per target, profile, budget and seed and is shared, also by the
workers of ``pytest -n N``.

    class TestMyPolicy(ConformanceSuite):
        target = "my_pkg.policy:MyPolicy"
        profile = "core"
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import pytest

from policyspec.files import write_atomic
from policyspec.registry import load_registry, requirements_for
from policyspec.reports.report import (
    FAIL,
    NA,
    NOT_TESTED,
    XFAIL,
    Report,
    dumps,
    load_report,
)
from policyspec.reports.verdict import (
    INCOMPLETE,
    INTERRUPTED,
    judged_strictly,
    unjudged_musts,
)
from policyspec.witness.steps import numbered

__all__ = ["ConformanceSuite", "assert_requirement", "report_for", "terminal_progress"]

DEFAULT_TARGET = "policyspec.reference:LRUCachePolicy"
DEFAULT_PROFILE = "lru"
REFERENCE_BUDGET = 5.0
"""Work units of a conformance module's check of a bundled reference
(``ConformanceSuite.default_budget``)."""

_Key = tuple[str, str, str | float, int, int | None, int | None, float | None]
_REPORTS: dict[_Key, Report] = {}


def report_for(
    target: str | type, profile: str, budget: str | float = "quick", seed: int = 0,
    jobs: int | None = None, strict: bool = False, capacity: int | None = None,
    *, progress: Callable[[str], None] | None = None, time_limit: float | None = None,
    share_in: Path | None = None,
) -> Report:
    """The report of one check, computed once per session and cached
    (``strict`` judges the same run: ``judged_strictly``).
    ``capacity`` None: the check's default (engines may draw sizes);
    ``progress`` gets the check's progress lines, as ``policyspec check``
    prints them; ``time_limit``: the wall-time cap (``--time-limit``);
    ``share_in``: a directory the processes of one run share (pytest-xdist's
    workers), where the first to need a check leaves its report for the
    others (``_shared``)."""
    label = target if isinstance(target, str) else f"{target.__module__}:{target.__qualname__}"
    key = (label, profile, budget, seed, jobs, capacity, time_limit)
    if key not in _REPORTS:
        from policyspec.options import CheckOptions
        from policyspec.session import check_target

        # The same run set-up as policyspec check (stand-ins for the whole
        # run, watchdog, ...), hence the same verdict.
        options = CheckOptions(budget=budget, seed=seed, jobs=jobs, time_limit=time_limit)
        if capacity is not None:
            options = replace(options, capacity=capacity, capacity_fixed=True)

        def run() -> Report:
            return check_target(target, profile, options, progress=progress)

        _REPORTS[key] = run() if share_in is None else _shared(share_in, key, run)
    return judged_strictly(_REPORTS[key]) if strict else _REPORTS[key]


def _shared(directory: Path, key: _Key, run: Callable[[], Report]) -> Report:
    """The report of ``key``'s check, made once for all the processes that
    share ``directory``: the first to ask runs it and writes its JSON
    report there, under a lock the others wait on; they read that report
    (it round-trips exactly). Without POSIX locks (Windows) each process
    runs its own check. A check that raises leaves nothing: the next
    process runs it again and meets the same error."""
    try:
        import fcntl
    except ImportError:
        return run()
    directory.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(repr(key).encode()).hexdigest()[:32]
    with open(directory / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        path = directory / f"{name}.json"
        if path.exists():
            return load_report(path)
        report = run()
        write_atomic(path, dumps(report))
        return report


def assert_requirement(report: Report, requirement: str) -> None:
    """Pass, fail with the failure's story, or skip, as the report says; a
    MUST that applies and stayed n/a or not tested fails (not judged).

    A failed SHOULD fails the test only when the report was made strict
    (``--policy-strict``, as ``policyspec check --strict``); otherwise it
    is an xfail carrying the same story, so that the two front ends give
    one verdict and the finding is still shown (``pytest -rx``).
    """
    status = next((r for r in report.requirements if r.id == requirement), None)
    if status is None:
        pytest.skip(f"{requirement} is not part of profile {report.profile}")
    if status.status == FAIL:
        failure = next(f for f in report.failures if f.requirement == requirement)
        steps = "\n".join(f"  {line}" for line in numbered(failure.trace))
        story = (f"{requirement} ({failure.level}): {failure.title}\n{failure.message}\n"
                 f"minimal trace:\n{steps}\nreproduce:\n{failure.repro}")
        if failure.level == "SHOULD" and not report.stats.get("strict", False):
            pytest.xfail(f"a SHOULD (fails only with --policy-strict): {story}")
        pytest.fail(story, pytrace=False)
    if status in unjudged_musts([status]):
        # As the verdict (policyspec.reports.verdict): a MUST that applies and was not
        # judged is no pass, so its test does not pass either.
        pytest.fail(f"{requirement} (MUST) was not judged: {status.status} ({status.reason}); "
                    f"verdict: {report.verdict.upper()}", pytrace=False)
    if status.status in (NA, NOT_TESTED, XFAIL):
        pytest.skip(f"{requirement}: {status.status} ({status.reason})")
    if report.errors:
        pytest.fail("the check could not run to the end: " + "; ".join(report.errors))
    if report.verdict == INCOMPLETE:
        # The time limit stopped the check: what ran passed, but not all the
        # work the budget asks for ran, which is never a pass.
        pytest.fail(f"INCOMPLETE: {requirement} held in the work that ran, but the time limit "
                    "stopped the check before its work was done (--policy-time-limit)",
                    pytrace=False)
    if report.verdict == INTERRUPTED:
        pytest.fail(f"INTERRUPTED: {requirement} held in the work that ran, but the check was "
                    "stopped before the end", pytrace=False)


class ConformanceSuite:
    """Base class for conformance tests of one policy (spec/pytest.md)."""

    target: ClassVar[str | None] = None
    policy_class: ClassVar[type | None] = None
    profile: ClassVar[str | None] = None
    budget: ClassVar[str | float] = "quick"
    seed: ClassVar[int] = 0
    strict: ClassVar[bool] = False
    """SHOULD failures fail their tests (``--policy-strict`` sets it too)."""
    capacity: ClassVar[int | None] = None
    """The check's capacity (``--policy-capacity`` when None; None there
    too: the check's default)."""
    section: ClassVar[str | None] = None
    """Only requirements defined in spec/<section>.md (None: all)."""
    default_target: ClassVar[str | None] = None
    default_profile: ClassVar[str | None] = None
    """What a conformance module checks when no policy is named anywhere
    (this repository's own CI): the reference LRU under lru by default."""
    default_budget: ClassVar[str | float] = REFERENCE_BUDGET
    """The budget of that check when no budget is named either: the
    references' whole checks at quick are tests/test_references.py's
    (marked slow)."""

    def _choice(self, config: pytest.Config) -> tuple[str | type, str, str | float, int]:
        option = config.getoption
        target: str | type = (
            self.policy_class
            or self.target
            or option("policy", None)
            or self.default_target
            or DEFAULT_TARGET
        )
        explicit = bool(self.policy_class or self.target or option("policy", None))
        profile = self.profile or option("policy_profile", None) or (
            "core" if explicit else self.default_profile or DEFAULT_PROFILE
        )
        named = option("policy_budget", None)
        budget = named or (self.budget if explicit else self.default_budget)
        seed = option("policy_seed", None)
        return target, profile, budget, self.seed if seed is None else int(seed)

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "requirement_id" not in metafunc.fixturenames:
            return
        _, profile, _, _ = self._choice(metafunc.config)
        from policyspec.profiles import get_profile

        ids = [
            r.id
            for r in requirements_for(get_profile(profile).includes)
            if self.section is None or r.spec_file == f"{self.section}.md"
        ]
        metafunc.parametrize("requirement_id", ids, ids=ids)

    def test_requirement(self, requirement_id: str, request: pytest.FixtureRequest) -> None:
        target, profile, budget, seed = self._choice(request.config)
        assert requirement_id in load_registry()
        jobs = request.config.getoption("policy_jobs", None)
        strict = self.strict or bool(request.config.getoption("policy_strict", False))
        capacity = self.capacity or request.config.getoption("policy_capacity", None)
        report = report_for(target, profile, budget, seed, jobs, strict, capacity,
                            progress=terminal_progress(request.config),
                            time_limit=request.config.getoption("policy_time_limit", None),
                            share_in=_xdist_shared(request))
        assert_requirement(report, requirement_id)


def _xdist_shared(request: pytest.FixtureRequest) -> Path | None:
    """Where the workers of one ``pytest -n N`` run share their checks:
    beside their temporary directories (in the run's own directory, which
    pytest creates and prunes), named after the run's id, so that no other
    run's report is ever read. None outside a pytest-xdist worker."""
    worker: dict[str, object] | None = getattr(request.config, "workerinput", None)
    run = worker.get("testrunuid") if worker is not None else None
    if not isinstance(run, str) or not run.isalnum():
        return None
    factory: pytest.TempPathFactory = request.getfixturevalue("tmp_path_factory")
    return factory.getbasetemp().parent / f"policyspec-checks-{run}"


def terminal_progress(config: pytest.Config) -> Callable[[str], None] | None:
    """Progress lines on pytest's terminal while a check runs, as ``policyspec
    check`` prints them (``[policyspec] ...``), past pytest's capture; None
    under ``-qq``."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if terminal is None or config.get_verbosity() < -1:
        return None

    def say(message: str) -> None:
        if capture is not None:
            with capture.global_and_fixture_disabled():
                terminal.write_line(f"[policyspec] {message}")
        else:
            terminal.write_line(f"[policyspec] {message}")

    return say


