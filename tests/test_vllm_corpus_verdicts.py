"""Every vLLM-style policy file of tests/vllm_corpus/ gets the verdict its
docstring states from the real CLI, on a machine without vLLM: correct
files pass core, faulty files fail with the stated requirement id, and the
report names the API revision detected."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_adapters_corpus import EXPECTED, verdict_of

CORPUS = Path(__file__).parent / "vllm_corpus"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cli_verdict_matches_the_docstring(name: str, tmp_path: Path) -> None:
    cls, api, _ = EXPECTED[name]
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-m", "policyspec", "check", f"{CORPUS / name}:{cls}", "--budget", "4",
         "--seed", "1", "-q", "--json-report", str(report)],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )
    document = json.loads(report.read_text())
    assert document["api"] == api
    assert any(api in note for note in document["notes"]), document["notes"]
    verdict = verdict_of(CORPUS / name)
    if verdict == "correct":
        assert done.returncode == 0, done.stdout[-3000:]
        assert document["verdict"] == "pass"
    else:
        assert done.returncode == 1, done.stdout[-3000:]
        assert document["failures"][0]["requirement"] == verdict, done.stdout[-3000:]
