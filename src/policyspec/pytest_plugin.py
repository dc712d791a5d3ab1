"""pytest plugin (entry point ``pytest11``): ``pytest --policy TARGET``.

With ``--policy`` the conformance suite (one module per spec section,
shipped with policyspec) is collected and run against TARGET; without it
the plugin only adds its options and stays out of the way.
"""

from __future__ import annotations

from pathlib import Path

import pytest

__all__ = ["conformance_dir"]


def conformance_dir() -> Path:
    """The conformance modules: shipped in the wheel, or the source tree's."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_conformance", here.parents[1] / "conformance"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("policyspec: the conformance suite is missing from this install")


def _budget(text: str) -> str | float:
    from policyspec.run.budget import BUDGETS

    return text if text in BUDGETS else float(text)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("policyspec", "policyspec conformance suite")
    group.addoption("--policy", default=None, metavar="TARGET",
                    help="run the conformance suite on TARGET (pkg.module:Class or file.py:Class)")
    group.addoption("--policy-profile", default=None, metavar="NAME",
                    help="profile for --policy: core (default), lru, ...")
    group.addoption("--policy-budget", default=None, type=_budget, metavar="BUDGET",
                    help="work budget of the check behind the suite: quick (default), "
                    "standard, deep, or work units (the same work on any machine)")
    group.addoption("--policy-time-limit", default=None, type=float, metavar="SECONDS",
                    help="stop the check after this much wall time; a check stopped before "
                    "its work is done fails every test it would have passed (INCOMPLETE)")
    group.addoption("--policy-seed", default=None, type=int, help="seed of the check")
    group.addoption("--policy-jobs", default=None, type=int, metavar="N",
                    help="worker processes of the check (default: the cores this process "
                    "may use)")
    group.addoption("--policy-capacity", default=None, type=int, metavar="N",
                    help="cache capacity of the check (as policyspec check --capacity)")
    group.addoption("--policy-strict", action="store_true", default=False,
                    help="SHOULD failures fail their tests (as policyspec check --strict); "
                    "without it they are xfails")


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("policy", None):
        return
    suite = str(conformance_dir())
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        # No paths on the command line: run just the suite. (Adding it beside
        # the default directory would not work when the suite is installed
        # in a virtual environment below it: pytest skips virtualenvs.)
        config.args[:] = [suite]
    elif suite not in config.args:
        config.args.append(suite)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Say when this pytest hashes keys under a seed of its own: a policy
    that acts on set order then does other work than under the
    ``policyspec`` command (policyspec.hash_order)."""
    import policyspec.hash_order as hash_order

    if not config.getoption("policy", None) or hash_order.fixed():
        return []
    return [f"policyspec: keys hash under this process's random seed; for the traces "
            f"of the policyspec command run pytest with "
            f"{hash_order.ENV}={hash_order.HASH_SEED}"]
