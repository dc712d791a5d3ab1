"""The extension API as documented (spec/extending.md) works as written:
the page shows the worked example's module and registry file exactly as
they are in the tree, and the profile they make checks real policies."""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from policyspec.adapters import subject_for_class
from policyspec.options import CheckOptions
from policyspec.profiles import Profile, get_profile
from policyspec.reference import LRUCachePolicy
from policyspec.session import check_target, run_check

ROOT = Path(__file__).resolve().parents[1]


def _block(language: str, text: str, after: str) -> str:
    start = text.index(after)
    found = re.search(rf"```{language}\n(.*?)```", text[start:], re.DOTALL)
    assert found, after
    return found.group(1)


def test_the_page_shows_the_worked_example_as_it_is() -> None:
    page = (ROOT / "spec" / "extending.md").read_text(encoding="utf-8")
    module = (ROOT / "src" / "policyspec" / "examples" / "fifo.py").read_text(encoding="utf-8")
    registry = (ROOT / "spec" / "requirements" / "fifo.toml").read_text(encoding="utf-8")
    assert _block("python", page, "`src/policyspec/examples/fifo.py`:") == module
    assert _block("toml", page, "`spec/requirements/fifo.toml`:") == registry


def test_the_registry_makes_the_profile_from_the_module() -> None:
    profile = get_profile("fifo")
    assert profile.includes == ("core", "fifo") and profile.exact
    assert type(profile.refinement).__module__ == "policyspec.examples.fifo"


def test_a_fifo_policy_conforms_to_the_fifo_profile() -> None:
    report = check_target(f"{ROOT / 'tests' / 'correct' / 'fifo.py'}:Policy", "fifo",
                          CheckOptions(budget=2.0, seed=2, engines=("stateful", "fast")))
    # (no failure; the MUSTs only other engines exercise leave it unjudged)
    assert report.verdict != "fail" and not report.errors, report.to_text()
    fifo_rows = [r for r in report.requirements if r.profile == "fifo"]
    assert fifo_rows and all(r.status == "pass" and r.checks > 0 for r in fifo_rows)


def test_the_seed_lru_is_not_a_fifo() -> None:
    report = run_check(subject_for_class(LRUCachePolicy), get_profile("fifo"), budget=2.0,
                       engines=["fast"], seed=2)
    assert report.verdict == "fail"
    assert {f.requirement for f in report.failures} <= {"FIFO-ORDER-KEPT", "FIFO-EVICT-ORDER"}


def _load_fifo() -> type[Any]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("fifo_example", ROOT / "tests/correct/fifo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    policy: type[Any] = module.Policy
    return policy


def test_a_fifo_that_reorders_on_touch_fails_with_the_touch_named() -> None:
    base = _load_fifo()

    class TouchMoves(base):  # type: ignore[misc, valid-type]
        def touch(self, keys: Any) -> None:
            for key in reversed(list(keys)):  # an LRU's habit, wrong for a FIFO
                if key in self.blocks:
                    self.blocks[key] = self.blocks.pop(key)

    report = run_check(subject_for_class(TouchMoves), get_profile("fifo"), budget=2.0, seed=2,
                       engines=["fast"])
    assert [f.requirement for f in report.failures] == ["FIFO-ORDER-KEPT"], report.to_text()


def test_a_profile_object_can_be_named_by_module_path() -> None:
    profile = get_profile("policyspec.profiles:EXAMPLE")  # see below
    assert isinstance(profile, Profile) and profile.name == "fifo-again"


@pytest.fixture(autouse=True)
def _example_profile() -> Any:
    import policyspec.profiles as profiles

    profiles.EXAMPLE = Profile(  # type: ignore[attr-defined]
        "fifo-again", ("core", "fifo"), get_profile("fifo").refinement)
    yield
    del profiles.EXAMPLE  # type: ignore[attr-defined]


# -- the worked examples of an engine and a report format -------------------------


def _run_block(after: str, name: str) -> dict[str, Any]:
    """Run the page's Python block that follows ``after`` as module ``name``."""
    page = (ROOT / "spec" / "extending.md").read_text(encoding="utf-8")
    namespace: dict[str, Any] = {"__name__": name}
    exec(compile(_block("python", page, after), f"extending.md:{name}", "exec"), namespace)
    return namespace


@pytest.fixture
def random_walk() -> Iterator[str]:
    from policyspec.engines import ENGINES

    _run_block("(`random_walk.py`):", "random_walk")
    yield "random-walk"
    del ENGINES["random-walk"]


def test_the_engine_of_the_page_checks_policies(random_walk: str) -> None:
    options = CheckOptions(budget=1.0, engines=(random_walk,), jobs=1, seed=2)
    passing = run_check(subject_for_class(LRUCachePolicy), get_profile("core"), options=options)
    assert passing.verdict == "unjudged" and not passing.failures  # (one engine judges a part)
    assert passing.stats["engines"][random_walk]["examples"] == 40
    failing = check_target(f"{ROOT / 'tests' / 'faulty' / 'v01_ignores_protected.py'}:Policy",
                           get_profile("core"), options)
    [failure] = failing.failures
    assert failure.requirement == "EVICT-UNPROTECTED" and len(failure.trace) <= 4


@pytest.fixture
def tap_format() -> Iterator[str]:
    from policyspec.reports.write import FORMATS

    _run_block("(`tap_report.py`):", "tap_report")
    yield "tap"
    del FORMATS["tap"]


def test_the_report_format_of_the_page_is_written_by_check(tap_format: str,
                                                           tmp_path: Path) -> None:
    from policyspec.cli import main

    out = tmp_path / "report.tap"
    target = f"{ROOT / 'tests' / 'faulty' / 'v01_ignores_protected.py'}:Policy"
    code = main(["check", target, "--engine", "fast", "--budget", "1", "--jobs", "1", "-q",
                 "--tap", str(out)])
    assert code == 1
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "TAP version 13" and lines[1].startswith("1..")
    assert any(line.startswith("not ok") and "EVICT-UNPROTECTED" in line for line in lines)
    assert len(lines) == 2 + int(lines[1][3:])


# -- one engine API: the page's engine takes the path the tree's engines take -----------


def test_every_registered_engine_runs_from_an_engine_context(random_walk: str) -> None:
    """Each engine's ``run`` is called with the context alone (``workers``
    does ``engine.run(ctx)``): its first parameter is an EngineContext and
    every other one is keyword-only with a default, so no engine is handed
    subject, units or seed one by one."""
    from policyspec.engines import ENGINES, EngineContext, EngineRun

    assert random_walk in ENGINES and len(ENGINES) > 12
    for name, engine in ENGINES.items():
        hints = get_type_hints(engine.run)
        first, *others = inspect.signature(engine.run).parameters.values()
        assert hints[first.name] is EngineContext, name
        assert first.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD, name
        assert hints["return"] is EngineRun, name
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY
                   or (p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and p.default is not
                       inspect.Parameter.empty) for p in others), name
        assert all(p.default is not inspect.Parameter.empty for p in others), name
        assert not {"units", "seed", "capacity", "cap", "examples"} & {p.name for p in others}
    # ... and no second entry point beside it that takes them one by one.
    modules = {sys.modules[engine.run.__module__] for engine in ENGINES.values()
               if engine.run.__module__.startswith("policyspec.engines.")}
    assert len(modules) == 12
    for module in modules:
        for name, function in vars(module).items():
            if inspect.isfunction(function) and function.__module__ == module.__name__:
                assert "units" not in inspect.signature(function).parameters, name


def test_no_engine_turns_work_units_into_a_count_itself() -> None:
    """The budget's arithmetic lives in EngineContext (``examples``,
    ``work``): an engine that read ``units`` would count its work its own
    way, and a change of the rule would miss it."""
    engines = ROOT / "src" / "policyspec" / "engines"
    for path in sorted(engines.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\.units\b|\bunits\s*\*", text), path.name


def test_the_page_engine_takes_the_path_of_the_tree_engines(
    random_walk: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One check with the page's engine and the fast engine: both are
    planned by ``workers.plan``, both get an EngineContext built by
    ``session.run_check`` from the same options, and both runs reach
    ``findings.finish``, which minimises the page engine's finding too."""
    from policyspec import session
    from policyspec.engines import ENGINES, EngineContext, EngineRun

    planned: list[list[str]] = []
    contexts: dict[str, list[EngineContext]] = {}
    finished: list[list[EngineRun]] = []
    real_plan, real_finish = session.plan, session.finish

    def plan(chosen: Any, *args: Any, **kwargs: Any) -> Any:
        planned.append([engine.name for engine in chosen])
        return real_plan(chosen, *args, **kwargs)

    def finish(subject: Any, profile: Any, runs: list[EngineRun], **kwargs: Any) -> Any:
        finished.append(list(runs))
        return real_finish(subject, profile, runs, **kwargs)

    def recorded(name: str) -> Any:
        run = ENGINES[name].run

        def spy(ctx: EngineContext) -> EngineRun:
            contexts.setdefault(name, []).append(ctx)
            return run(ctx)
        return spy

    monkeypatch.setattr(session, "plan", plan)
    monkeypatch.setattr(session, "finish", finish)
    for name in (random_walk, "fast"):
        monkeypatch.setitem(ENGINES, name, replace(ENGINES[name], run=recorded(name)))
    options = CheckOptions(budget=1.0, engines=(random_walk, "fast"), jobs=1, seed=2,
                           capacity=32)
    report = check_target(f"{ROOT / 'tests' / 'faulty' / 'v01_ignores_protected.py'}:Policy",
                          get_profile("core"), options)

    assert planned == [[random_walk, "fast"]]
    walk, fast = contexts[random_walk], contexts["fast"]
    assert len(walk) == 1 and len(fast) == ENGINES["fast"].parts
    for ctx in (*walk, *fast):
        assert type(ctx) is EngineContext
        assert ctx.capacity == 32 and ctx.count is None and ctx.cap is None
        assert (ctx.subject, ctx.profile, ctx.options) == (
            walk[0].subject, walk[0].profile, walk[0].options)
    # The shares split the budget: the page's engine counts its walks from it.
    total = ENGINES[random_walk].share + ENGINES["fast"].share
    assert walk[0].units == pytest.approx(ENGINES[random_walk].share / total)
    assert sum(c.units for c in fast) == pytest.approx(ENGINES["fast"].share / total)
    stats = report.stats["engines"]
    assert stats[random_walk]["planned"] == walk[0].examples(40)
    [runs] = finished
    assert {r.engine for r in runs} == {random_walk, "fast"}
    [walked] = [r for r in runs if r.engine == random_walk]
    assert any(f.requirement == "EVICT-UNPROTECTED" for f in walked.findings)
    [failure] = report.failures
    assert failure.requirement == "EVICT-UNPROTECTED" and len(failure.trace) <= 4
