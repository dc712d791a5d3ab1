"""Every user mistake in a target gives one TargetError line naming the
problem, and good targets of both forms load."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from policyspec.adapters import TargetError, load_subject

GOOD = """
from vllm.v1.kv_offload.cpu.policies.base import CachePolicy


class Tiny(CachePolicy):
    def __init__(self, cache_capacity):
        self.blocks = {}

    def get(self, key):
        return self.blocks.get(key)

    def insert(self, key, block):
        self.blocks[key] = block

    def remove(self, key):
        del self.blocks[key]

    def touch(self, keys):
        pass

    def evict(self, n, protected):
        return [] if n == 0 else None


def helper():
    pass
"""


Write = Callable[..., str]


@pytest.fixture
def write(tmp_path: Path) -> Write:
    """Write a policy file (``policy.py`` unless named) and return its path."""

    def _write(text: str, name: str = "policy.py") -> str:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return str(path)

    return _write


def message(target: str, *, stand_in: bool = True, api: str | None = None) -> str:
    """The one-line TargetError message loading ``target`` gives."""
    with pytest.raises(TargetError) as info:
        load_subject(target, stand_in=stand_in, api=api)
    text = str(info.value)
    assert "\n" not in text and "Traceback" not in text
    return text


@pytest.mark.parametrize("target", ["policy.py", "Class", ":Cls", "policy.py:", "a b:Cls"])
def test_malformed_target_names_the_expected_forms(target: str) -> None:
    text = message(target)
    assert text.startswith(f"malformed target {target!r}")
    assert "'package.module:Class' or 'path/to/file.py:Class'" in text


def test_class_part_must_be_a_name() -> None:
    assert "'1x' is not a class name" in message("policy.py:1x")


def test_missing_file_is_named(tmp_path: Path) -> None:
    target = f"{tmp_path}/nope.py:Cls"
    assert message(target) == f"no such file: {tmp_path}/nope.py (target {target!r})"


def test_directory_is_not_a_policy_file(tmp_path: Path) -> None:
    assert message(f"{tmp_path}/:Cls").endswith(f"is not a file (target '{tmp_path}/:Cls')")


def test_missing_module_is_named() -> None:
    text = message("no_such_pkg_for_policyspec.policies:Cls")
    assert text.startswith("no module named 'no_such_pkg_for_policyspec.policies'")


def test_missing_class_lists_the_policy_classes_there(write: Write) -> None:
    path = write(GOOD)
    assert message(f"{path}:Nope") == f"{path} has no class 'Nope' (policy classes there: Tiny)"


def test_a_function_is_not_a_class(write: Write) -> None:
    path = write(GOOD)
    assert message(f"{path}:helper") == f"'helper' in {path} is a function, not a class"


def test_missing_methods_are_named_with_the_revision(write: Write) -> None:
    path = write(
        """
        class Half:
            def __init__(self, cache_capacity):
                pass

            def get(self, key):
                return None

            def insert(self, key, block):
                pass
        """
    )
    text = message(f"{path}:Half")
    assert text.startswith("Half lacks remove, touch, evict, required by API revision R1")


def test_constructor_without_cache_capacity_is_refused(write: Write) -> None:
    path = write(GOOD.replace("def __init__(self, cache_capacity)", "def __init__(self, size)"))
    assert message(f"{path}:Tiny") == (
        "Tiny(size) does not accept cache_capacity: vLLM builds every policy as "
        "Tiny(cache_capacity=N)"
    )


def test_syntax_error_gives_file_and_line(write: Write) -> None:
    path = write("import os\n\ndef broken(:\n    pass\n")
    text = message(f"{path}:Cls")
    assert text.endswith("policy.py:3: syntax error in the policy file: invalid syntax")


def test_import_error_gives_its_own_message_and_line(write: Write) -> None:
    path = write("import os\nfrom collections import NoSuchThing\n")
    text = message(f"{path}:Cls")
    assert text.endswith(
        "policy.py:2: import error in the policy file: cannot import name 'NoSuchThing' "
        "from 'collections' (" + str(Path(sys.modules["collections"].__file__ or "")) + ")"
    )


def test_missing_import_outside_vllm_is_named(write: Write) -> None:
    path = write("import os\n\nimport sortedcontainers_not_installed_here\n")
    text = message(f"{path}:Cls")
    assert text.endswith(
        "policy.py:3: the policy imports 'sortedcontainers_not_installed_here', which is not "
        "installed (No module named 'sortedcontainers_not_installed_here'): install it where "
        "policyspec runs (the policy's own requirements; spec/check.md)"
    )


def test_error_raised_at_import_gives_file_and_line(write: Write) -> None:
    path = write("X = 1\nraise ValueError('no config found')\n")
    text = message(f"{path}:Cls")
    assert text.endswith(
        "policy.py:2: importing the policy file raised ValueError: no config found"
    )


def test_exit_at_import_is_a_target_error(write: Write) -> None:
    path = write("import sys\nsys.exit(3)\n")
    assert message(f"{path}:Cls").endswith(
        "policy.py:2: the policy file called exit(3) while being imported"
    )


def test_error_in_a_helper_module_points_at_the_policy_line(write: Write) -> None:
    write("raise RuntimeError('helper broke')\n", name="broken_helper_for_policyspec.py")
    path = write("import os\nimport broken_helper_for_policyspec\n")
    text = message(f"{path}:Cls")
    assert "policy.py:2: importing the policy file raised RuntimeError: helper broke" in text
    sys.modules.pop("broken_helper_for_policyspec", None)


def test_no_stand_in_refuses_a_file_that_needs_vllm(write: Write) -> None:
    path = write(GOOD)
    text = message(f"{path}:Tiny", stand_in=False)
    assert text.endswith(
        "policy.py:2: the policy imports vllm, which is not installed, and the vLLM stand-ins "
        "are disabled (--no-stand-in)"
    )


def test_unknown_api_revision_is_refused(write: Write) -> None:
    path = write(GOOD)
    text = message(f"{path}:Tiny", api="R99")
    assert text.startswith("unknown API revision 'R99'; known: R-1, R0, R1, R2, R3")


def test_file_target_loads(write: Write) -> None:
    path = write(GOOD)
    subject = load_subject(f"{path}:Tiny")
    assert subject.api == "R1"
    assert subject.name == f"{path}:Tiny"
    assert "vllm" not in sys.modules


def test_module_target_loads_from_the_working_directory(
    write: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "corp_policies_for_policyspec").mkdir()
    (tmp_path / "corp_policies_for_policyspec" / "__init__.py").write_text("")
    write(GOOD, name="corp_policies_for_policyspec/tiny.py")
    monkeypatch.chdir(tmp_path)
    try:
        subject = load_subject("corp_policies_for_policyspec.tiny:Tiny")
        assert subject.api == "R1"
        assert str(tmp_path) not in sys.path
    finally:
        for name in [m for m in sys.modules if m.startswith("corp_policies_for_policyspec")]:
            del sys.modules[name]


def test_missing_import_inside_a_module_target_is_not_a_missing_target(
    write: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        "import os\nimport not_installed_dep_for_policyspec\n",
        name="needs_dep_for_policyspec.py",
    )
    monkeypatch.chdir(tmp_path)
    text = message("needs_dep_for_policyspec:Cls")
    assert text.endswith(
        "needs_dep_for_policyspec.py:2: the policy imports 'not_installed_dep_for_policyspec', "
        "which is not installed (No module named 'not_installed_dep_for_policyspec'): install "
        "it where policyspec runs (the policy's own requirements; spec/check.md)"
    )
