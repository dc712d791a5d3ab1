"""``policyspec new``: the starting policy of every revision that shipped in a
vLLM release type-checks against its Protocol and passes core as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from policyspec.cli import main
from policyspec.protocols import REVISIONS
from policyspec.starter import class_name_for, newest_released, released


def _write(tmp_path: Path, api: str) -> tuple[Path, str]:
    path = tmp_path / f"policy_{api.replace('-', 'm').lower()}.py"
    assert main(["new", str(path), "--api", api]) == 0
    return path, class_name_for(path.stem)


def test_new_offers_exactly_the_revisions_that_shipped() -> None:
    assert released() == tuple(r.name for r in REVISIONS.values() if r.released)
    assert newest_released() == released()[-1]
    assert not {"R6", "R6-draft", "R7", "R7b"} & set(released())


def test_new_refuses_a_revision_that_never_shipped(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["new", str(tmp_path / "p.py"), "--api", "R7"])
    assert stop.value.code == 2
    assert "invalid choice: 'R7'" in capsys.readouterr().err
    assert not (tmp_path / "p.py").exists()


def test_new_never_overwrites_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mine.py"
    path.write_text("kept\n")
    assert main(["new", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already exists" in err
    assert path.read_text() == "kept\n"


def test_every_shipped_revision_type_checks_against_its_protocol(tmp_path: Path) -> None:
    mypy_api = pytest.importorskip("mypy.api")
    written = [_write(tmp_path, api)[0] for api in released()]
    broken = tmp_path / "broken.py"
    # the newest revision's policy with a hook missing its req_context: mypy must say so
    newest = written[-1].read_text()
    hook = "def on_request_access(self, keys: Iterable[Key], req_context: Any)"
    assert hook in newest
    broken.write_text(newest.replace(hook, "def on_request_access(self, keys: Iterable[Key])"))
    out, _err, status = mypy_api.run([
        "--strict", "--cache-dir", str(tmp_path / ".mypy_cache"), "--no-error-summary",
        *map(str, written), str(broken),
    ])
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 1, out
    assert len(errors) == 1, out
    assert errors[0].startswith(str(broken)) and 'Signature of "on_request_access"' in errors[0]


def test_the_starting_policy_says_where_the_authors_choices_go(tmp_path: Path) -> None:
    path, name = _write(tmp_path, newest_released())
    text = path.read_text()
    assert text.count("# Your choice") >= 4
    assert f"policyspec check {path}:{name}" in text


def _passes_core(tmp_path: Path, api: str, capsys: pytest.CaptureFixture[str]) -> None:
    path, name = _write(tmp_path, api)
    capsys.readouterr()
    code = main(["check", f"{path}:{name}", "--budget", "3", "--jobs", "1", "-q"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "verdict: PASS" in out and "\n  FAIL " not in out


def test_the_newest_revisions_policy_passes_core(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _passes_core(tmp_path, newest_released(), capsys)


@pytest.mark.slow
@pytest.mark.parametrize("api", released()[:-1])
def test_every_older_shipped_revisions_policy_passes_core(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], api: str
) -> None:
    _passes_core(tmp_path, api, capsys)
