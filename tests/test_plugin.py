"""The pytest route: ``pytest --policy TARGET`` and ConformanceSuite subclasses."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from policyspec.witness.shown import CHILD_FLAG

FAULTY = textwrap.dedent(
    """
    from policyspec.reference import LRUCachePolicy


    class Policy(LRUCachePolicy):
        def evict(self, n, protected):
            return super().evict(n, set())
    """
)


def pytest_run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfs", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
        env={k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"},
    )


def test_policy_option_runs_the_suite_and_names_the_broken_requirement(tmp_path: Path) -> None:
    (tmp_path / "faulty.py").write_text(FAULTY)
    done = pytest_run(tmp_path, "--policy", "faulty.py:Policy", "--policy-budget", "3",
                      "--policy-profile", "lru")
    assert done.returncode == 1, done.stdout[-2000:]
    assert "test_requirement[EVICT-UNPROTECTED]" in done.stdout
    assert "evict(" in done.stdout and "minimal trace" in done.stdout
    # one test per requirement of the profile, most of them passing
    assert " passed" in done.stdout


def test_conformance_suite_subclasses_check_several_policies(tmp_path: Path) -> None:
    (tmp_path / "faulty.py").write_text(FAULTY)
    (tmp_path / "test_mine.py").write_text(textwrap.dedent(
        """
        import faulty
        from policyspec.reference import LRUCachePolicy
        from policyspec.testing import ConformanceSuite


        class TestReference(ConformanceSuite):
            policy_class = LRUCachePolicy
            profile = "lru"
            budget = 3


        class TestFaulty(ConformanceSuite):
            policy_class = faulty.Policy
            profile = "core"
            budget = 3
        """
    ))
    done = pytest_run(tmp_path, "test_mine.py")
    assert done.returncode == 1, done.stdout[-2000:]
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    assert failed and all("TestFaulty" in line for line in failed), failed
    assert any("EVICT-UNPROTECTED" in line for line in failed)


def test_a_suite_class_can_be_strict_and_choose_its_capacity(tmp_path: Path) -> None:
    """A design that breaks SHOULDs on purpose: its SHOULD rows are xfails in
    a plain suite class and failures in a strict one; ``capacity`` reaches
    the check."""
    gate = Path(__file__).parent / "correct" / "admission_gate.py"
    (tmp_path / "test_gate.py").write_text(textwrap.dedent(
        f"""
        from policyspec.testing import ConformanceSuite, report_for


        class TestPlain(ConformanceSuite):
            target = {str(gate) + ":Policy"!r}
            budget = 3


        class TestStrict(TestPlain):
            strict = True


        def test_capacity_reaches_the_check():
            report = report_for(TestPlain.target, "core", 1, 0, None, False, 16)
            assert report.stats["capacity"] == 16
        """
    ))
    done = pytest_run(tmp_path, "-rfxs", "test_gate.py")
    assert done.returncode == 1, done.stdout[-2000:]
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    xfailed = [line for line in done.stdout.splitlines() if line.startswith("XFAIL")]
    assert failed and all("TestStrict" in line for line in failed), failed
    assert xfailed and all("TestPlain" in line for line in xfailed), xfailed
    assert {line.split("[")[1].split("]")[0] for line in failed} == {
        line.split("[")[1].split("]")[0] for line in xfailed}


def test_the_workers_of_pytest_n_share_one_check(tmp_path: Path) -> None:
    """Under pytest-xdist the first worker to need a check runs it and the
    others read its report: the target is imported by one worker only,
    and the tests have the outcomes of a run without workers. (The fresh
    process that runs each failure's snippet imports it too; it does not
    count as a worker.)"""
    imports = tmp_path / "imports.txt"
    (tmp_path / "marked.py").write_text(textwrap.dedent(
        f"""
        import os

        if os.environ.get({CHILD_FLAG!r}) != "1":
            with open({str(imports)!r}, "a") as log:
                log.write(f"{{os.getpid()}}\\n")
        """
    ) + FAULTY)
    (tmp_path / "test_mine.py").write_text(textwrap.dedent(
        """
        from policyspec.testing import ConformanceSuite


        class TestMarked(ConformanceSuite):
            target = "marked.py:Policy"
            profile = "core"
            budget = 1
        """
    ))

    def outcomes(done: subprocess.CompletedProcess[str]) -> set[str]:
        return {line.split(" - ")[0] for line in done.stdout.splitlines()
                if line.startswith("FAILED")}

    shared = pytest_run(tmp_path, "-n", "2", "-vv", "--policy-jobs", "1", "test_mine.py")
    assert shared.returncode == 1, shared.stdout[-2000:]
    assert "[gw0]" in shared.stdout and "[gw1]" in shared.stdout, shared.stdout[-2000:]
    assert len(set(imports.read_text().split())) == 1, imports.read_text()
    imports.unlink()
    alone = pytest_run(tmp_path, "-p", "no:xdist", "--policy-jobs", "1", "test_mine.py")
    assert outcomes(shared) == outcomes(alone)
    assert any("EVICT-UNPROTECTED" in line for line in outcomes(shared)), shared.stdout[-2000:]
