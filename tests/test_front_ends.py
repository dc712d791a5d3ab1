"""Every front end gives the same verdict: ``policyspec check`` and
``pytest --policy`` share one run set-up (``session.check_target``), so on a
policy of the corpus they agree on the verdict and on the failing ids.

Each comparison runs both front ends as a user would (two processes). The
default run covers a few corpus files of each kind and the policy that
imports vLLM lazily (the case where they used to disagree); the whole
corpus is the nightly run (``pytest -m nightly tests/test_front_ends.py``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
BUDGET = "3"
SEED = "7"
SAMPLE = (
    "correct/lazy_vllm_import.py", "correct/fifo.py", "faulty/v01_ignores_protected.py",
    "faulty/touch_walks_forward.py", "faulty/v09_evicts_in_flight_first.py",
)


def _profile(path: Path) -> str:
    first = path.read_text(encoding="utf-8").split('"""')[1].splitlines()[0]
    found = re.search(r"profile=([\w-]+)", first)
    return found.group(1) if found else "core"


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}


def by_check(path: Path, profile: str, tmp: Path) -> tuple[str, set[str]]:
    report = tmp / "report.json"
    subprocess.run(
        [sys.executable, "-m", "policyspec", "check", f"{path}:Policy", "--profile", profile,
         "--budget", BUDGET, "--seed", SEED, "-q", "--json-report", str(report)],
        capture_output=True, text=True, timeout=600, check=False, env=_env(),
    )
    document = json.loads(report.read_text())
    failing = {f["requirement"] for f in document["failures"] if f["level"] == "MUST"}
    return document["verdict"], failing


def by_pytest(path: Path, profile: str, tmp: Path) -> tuple[str, set[str]]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rf",
         "-p", "no:xdist", "--policy", f"{path}:Policy", "--policy-profile", profile,
         "--policy-budget", BUDGET, "--policy-seed", SEED],
        cwd=tmp, capture_output=True, text=True, timeout=600, check=False, env=_env(),
    )
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    failing = set(re.findall(r"^FAILED .*test_requirement\[([A-Z0-9-]+)\]", done.stdout,
                             re.MULTILINE))
    return ("pass" if done.returncode == 0 else "fail"), failing


def _compare(name: str, tmp_path: Path) -> None:
    path = HERE / name
    profile = _profile(path)
    check = by_check(path, profile, tmp_path)
    plugin = by_pytest(path, profile, tmp_path)
    assert check == plugin, (name, profile, check, plugin)
    assert check[0] == ("pass" if name.startswith("correct/") else "fail"), check


@pytest.mark.parametrize("name", SAMPLE)
def test_check_and_pytest_give_the_same_verdict(name: str, tmp_path: Path) -> None:
    _compare(name, tmp_path)


ALL = sorted(
    f"{p.parent.name}/{p.name}"
    for d in ("faulty", "correct") for p in (HERE / d).glob("*.py")
    if not p.name.startswith("_") and "profile=cost" not in p.read_text()
    and "engine" not in p.read_text(encoding="utf-8").split('"""')[1]
)


@pytest.mark.nightly
@pytest.mark.parametrize("name", ALL)
def test_every_corpus_policy_gets_the_same_verdict_from_both(name: str, tmp_path: Path) -> None:
    _compare(name, tmp_path)
