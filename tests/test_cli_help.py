"""Every command's ``--help`` lists the exit codes it can return, as
``policyspec.exits.COMMAND_EXITS`` has them, and the codes a command's code
returns are in its row; the helps, summaries and reports name the vLLM
release whose API and manager the run emulated (``policyspec.releases``)."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path
from typing import Any

import pytest

import policyspec.exits as exits
from policyspec.cli import COMMANDS, build_parser, main
from policyspec.exits import COMMAND_EXITS, EXIT_FAILS
from policyspec.releases import RELEASES
from policyspec.reports.report import Report
from policyspec.reports.verdict import VERDICTS, exit_code
from policyspec.reports.write import FORMATS

SOURCES = Path(exits.__file__).parent / "commands"


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _squashed(text: str) -> str:
    # argparse wraps help text, breaking lines at spaces and after hyphens
    return re.sub(r"\s+", "", text)


def listed_codes(help_text: str) -> dict[int, str]:
    """The exit codes a help text lists, with their meanings (whitespace
    removed, as the wrapping moves it): ``{}`` when it lists none."""
    _, found, section = help_text.partition("exit codes:")
    if not found:
        return {}
    listed = {}
    for part in _squashed(section).rstrip(".").split(";"):
        code = re.match(r"\d+", part)
        if code is not None:
            listed[int(code.group())] = part[code.end():]
    return listed


def test_every_command_has_one_row_of_exit_codes() -> None:
    commands = {name.replace("_", "-") for name in COMMANDS}
    assert set(COMMAND_EXITS) == commands == set(_subparsers())


@pytest.mark.parametrize("command", sorted(COMMAND_EXITS))
def test_every_help_lists_the_exit_codes_of_its_command(command: str) -> None:
    help_text = _subparsers()[command].format_help()
    expected = {code: _squashed(meaning) for code, meaning in COMMAND_EXITS[command].items()}
    assert listed_codes(help_text) == expected


def test_a_help_that_leaves_a_code_out_is_caught() -> None:
    parser = _subparsers()["check"]
    full = listed_codes(parser.format_help())
    parser.epilog = exits.exits_help("check").replace("; 4 ", "; 4x ").replace("4 incomplete", "")
    assert listed_codes(parser.format_help()) != full
    parser.epilog = None
    assert listed_codes(parser.format_help()) == {}


def _constants(module: str) -> set[int]:
    """The exit codes (``EXIT_*`` of policyspec.exits) a command's module names."""
    tree = ast.parse((SOURCES / f"{module}.py").read_text(encoding="utf-8"))
    names = {node.id for node in ast.walk(tree)
             if isinstance(node, ast.Name) and node.id.startswith("EXIT_")}
    return {getattr(exits, name) for name in names}


@pytest.mark.parametrize("module", COMMANDS)
def test_the_codes_a_command_returns_by_name_are_in_its_row(module: str) -> None:
    row = COMMAND_EXITS[module.replace("_", "-")]
    assert _constants(module) <= set(row)
    # a UsageError or a bad argument is exit 2, an interrupt 1, for every command
    assert {exits.EXIT_USAGE, EXIT_FAILS} <= set(row)
    assert "interrupted" in row[EXIT_FAILS]


def test_check_lists_every_code_a_verdict_has() -> None:
    # check's runs reach every verdict: a time limit, an interrupt, an engine error
    reached = {exit_code(verdict, failures) for verdict in VERDICTS for failures in (False, True)}
    assert reached <= set(COMMAND_EXITS["check"])
    assert exits.EXIT_INCOMPLETE in reached


def test_an_interrupt_is_exit_1_for_any_command(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    import policyspec.commands.new as new

    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(new, "run", interrupted)
    assert main(["new", str(tmp_path / "p.py")]) == EXIT_FAILS


@pytest.mark.parametrize(("argv", "command"), [
    (["new", "{tmp}/exists.py"], "new"),
    (["new", "{tmp}/policy.txt"], "new"),
    (["new", "{tmp}/exists.py/policy.py"], "new"),
    (["vectors", "--out", "{tmp}/exists.py/vectors"], "vectors"),
    (["vectors", "--check", "{tmp}"], "vectors"),
    (["vectors", "--check", "{tmp}/none"], "vectors"),
    (["report", "{tmp}/exists.py"], "report"),
    (["drift", "{tmp}"], "drift"),
    (["check-history", "{tmp}/exists.py"], "check-history"),
])
def test_what_a_command_returns_is_in_its_row(tmp_path: Path, argv: list[str],
                                              command: str) -> None:
    (tmp_path / "exists.py").write_text("not a report, nor a history\n")
    code = main([part.format(tmp=tmp_path) for part in argv])
    assert code != 0 and code in COMMAND_EXITS[command]
    assert (tmp_path / "exists.py").read_text() == "not a report, nor a history\n"


# -- the vLLM release emulated -------------------------------------------------

NAMING = ("check", "new", "replay", "prove", "report", "record", "check-history", "drift")
"""The commands whose help names the releases (vectors hold no release's
calls; simulate's help is its own)."""


@pytest.mark.parametrize("command", NAMING)
def test_the_help_names_every_release_and_its_revision(command: str) -> None:
    help_text = " ".join(_subparsers()[command].format_help().split())
    for release in RELEASES:
        assert f"{release.revision} in vLLM {release.version}" in help_text


def _report(api: str, engines: dict[str, Any] | None) -> Report:
    stats: dict[str, Any] = {"seed": 0, "calls": 10, "steps": 5, "examples": 1, "seconds": 0.1}
    if engines is not None:
        stats["engines"] = engines
    return Report(target="p.py:P", profile="core", verdict="pass", requirements=[],
                  failures=[], stats=stats, api=api)


@pytest.mark.parametrize(("api", "engines", "named"), [
    ("R10", {"vllm-manager": {"calls": 5}}, "vLLM 0.34.0's manager and API"),
    ("R9", {"trace": {"calls": 5}, "stateful": {"calls": 9}}, "vLLM 0.33.0's manager and API"),
    ("R8", {"vllm-manager": {"calls": 5}}, "driven through vLLM 0.33.0's manager"),
    # no engine drove a manager: the release of the API alone
    ("R10", {"vllm-manager": {"calls": 0}, "stateful": {"calls": 9}}, "(vLLM 0.34.0's API)"),
    ("R10", None, "(vLLM 0.34.0's API)"),
    # the manager engine plays the seed-era manager, no release's
    ("R3", {"manager": {"calls": 5}}, "(an API from before vLLM 0.33.0)"),
    ("R6", None, "no vLLM release shipped"),
])
def test_every_report_format_names_the_release(api: str, engines: dict[str, Any] | None,
                                               named: str) -> None:
    report = _report(api, engines)
    assert named in report.to_text()
    for name in ("markdown", "html"):
        assert named.replace("'", "&#x27;" if name == "html" else "'") in (
            FORMATS[name].render(report)), name


@pytest.mark.parametrize(("target", "api", "release"), [
    # 0.33's LRU fits both revisions: driven as each one asked for
    ("policyspec.reference:LRU033CachePolicy", "R9", "vLLM 0.33.0"),
    ("policyspec.reference:LRU033CachePolicy", "R10", "vLLM 0.34.0"),
    ("policyspec.reference:LRU034CachePolicy", "R10", "vLLM 0.34.0"),
])
def test_record_and_check_history_name_the_release(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str, api: str,
        release: str) -> None:
    history = tmp_path / "h.jsonl"
    assert main(["record", target, "--out", str(history), "--calls", "200", "--api", api]) == 0
    assert f"({release}'s API) behind {release}'s manager" in capsys.readouterr().out
    main(["check-history", str(history), "--profile", "core"])
    assert f"{release}'s API" in capsys.readouterr().out.splitlines()[0]


@pytest.mark.parametrize(("api", "release"), [("R9", "vLLM 0.33.0"), ("R10", "vLLM 0.34.0")])
def test_a_check_names_the_release_whose_manager_it_drove(
        capsys: pytest.CaptureFixture[str], api: str, release: str) -> None:
    code = main(["check", "policyspec.reference:LRU033CachePolicy", "--api", api,
                 "--engine", "vllm-manager", "--budget", "0.5", "--jobs", "1", "-q"])
    out = capsys.readouterr().out
    assert code in (0, exits.EXIT_UNJUDGED), out  # (one engine leaves some MUSTs untested)
    assert f"profile core, API {api} ({release}'s manager and API)" in out


@pytest.mark.parametrize(("api", "named"), [
    ("R10", "api:     R10 (vLLM 0.34.0's API)"),
    ("R9", "api:     R9 (vLLM 0.33.0's API)"),
    ("R7", "api:     R7 (an API no vLLM release shipped)"),
])
def test_a_proof_names_the_release_of_its_api(api: str, named: str) -> None:
    from policyspec.prove.crosshair_run import Budget
    from policyspec.prove.proof_report import ProofReport

    report = ProofReport("p.py:P against core", "refinement", [], Budget(10.0, 1, 1),
                         target="p.py:P", profile="core", api=api)
    assert named in report.to_text().splitlines()
    assert f"({named.split('(', 1)[1]}" in report.to_report().to_text()
    # the model's own proof has no policy, so no API line
    assert "api:" not in ProofReport("model", "contracts", [], Budget(10.0, 1, 1)).to_text()


def test_the_matrix_names_the_release_of_each_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from policyspec.reports.write import write_reports

    paths = []
    for api in ("R9", "R10"):
        path = tmp_path / f"{api}.json"
        write_reports(_report(api, {"vllm-manager": {"calls": 3}}), {"json": str(path)})
        paths.append(str(path))
    assert main(["report", *paths, "--label", "old", "--label", "new"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["old: PASS (none failing); API R9 (vLLM 0.33.0's manager and API)",
                   "new: PASS (none failing); API R10 (vLLM 0.34.0's manager and API)"]
