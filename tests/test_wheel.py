"""An installed wheel (not an editable install) carries everything
``policyspec check`` and ``pytest --policy`` need: the spec registry, the
report schema and the conformance modules travel inside the package."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def run(*args: str | Path, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "VIRTUAL_ENV")}
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, check=False, env=env)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with policyspec installed from a wheel."""
    work = tmp_path_factory.mktemp("wheel")
    built = run(sys.executable, "-m", "build", "--wheel", "--outdir", work / "dist", ROOT,
                cwd=work)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    wheel = next((work / "dist").glob("policyspec-*.whl"))
    venv.create(work / "env", with_pip=True)
    python = work / "env" / "bin" / "python"
    done = run(python, "-m", "pip", "install", "-q", wheel, cwd=work)
    assert done.returncode == 0, done.stderr[-3000:]
    return work


def test_wheel_check_runs_the_full_suite_outside_the_source_tree(installed: Path) -> None:
    cli = installed / "env" / "bin" / "policyspec"
    done = run(cli, "check", "policyspec.reference:LRUCachePolicy", "--profile", "lru",
               "--budget", "10", "-q", cwd=installed)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "verdict: PASS" in done.stdout


def test_wheel_ships_spec_and_conformance(installed: Path) -> None:
    python = installed / "env" / "bin" / "python"
    done = run(python, "-c",
               "import policyspec.registry as r, policyspec.pytest_plugin as p;"
               "print(r.spec_dir()); print(p.conformance_dir());"
               "print(len(r.load_registry()))", cwd=installed)
    assert done.returncode == 0, done.stderr
    spec, conformance, count = done.stdout.split()
    assert "site-packages" in spec and spec.endswith("_spec")
    assert "site-packages" in conformance and conformance.endswith("_conformance")
    assert int(count) > 30


def test_wheel_pytest_plugin_runs_conformance_modules(installed: Path) -> None:
    python = installed / "env" / "bin" / "python"
    done = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--policy",
               "policyspec.reference:LRUCachePolicy", "--policy-profile", "lru",
               "--policy-budget", "5", cwd=installed)
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout


def test_wheel_ships_the_sample_trace(installed: Path) -> None:
    cli = installed / "env" / "bin" / "policyspec"
    done = run(cli, "simulate", "--requests", "30", "--capacity", "64", "-q", cwd=installed)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "| sample.jsonl | 64 | reference LRU |" in done.stdout
