"""Generating the golden vectors from the model: ``policyspec vectors``.

Four files: vLLM's own scenarios, one case per catalogued fault, and
seeded random walks for each profile (legal actions drawn with the
exhaustive engine's domains). Generation is deterministic: same code, same
bytes (a test regenerates and compares with conformance/vectors/).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from policyspec.engines.exhaustive import Bounds, candidate_actions, named
from policyspec.model.actions import Action
from policyspec.model.evict import eligible
from policyspec.model.state import State
from policyspec.profiles import get_profile
from policyspec.vectors.scenarios import FAULT_CASES, VLLM_CASES
from policyspec.vectors.schema import SCHEMA, dump_line
from policyspec.vectors.script import Script
from policyspec.version import SPEC_VERSION

__all__ = ["FILES", "generate", "render", "walk", "write_vectors"]

WALK_BOUNDS = Bounds(depth=14, keys=4, touch_length=3, protected_size=2)
"""Walks: 14 actions over 4 keys (capacity 4, so the cache fills)."""
WALKS = 40
WALK_SEED = 20260601


def walk(profile_name: str, index: int, rng: random.Random) -> Script:
    """A random legal walk. Under core, evictions are drawn only among
    those whose victims the spec fixes up to order (n = 0, n = all eligible
    keys, or more than there are), so the case can go on after them. Every
    walk ends by looking up every key and evicting every eligible one."""
    bounds = WALK_BOUNDS
    name = f"{profile_name}-walk-{index:03d}"
    s = Script(name, get_profile(profile_name), bounds.keys,
               source=f"random walk, seed {WALK_SEED}", description="seeded random legal "
               f"walk of {bounds.depth} actions over {bounds.keys} keys")
    exact = s.profile.exact
    used = 0
    for _ in range(bounds.depth):
        if rng.randrange(4) == 0:
            s.act(("get", rng.randrange(bounds.keys)))
            continue
        state = s.model_state()
        actions = candidate_actions(state, used, bounds)
        if not exact:
            actions = [a for a in actions if a[0] != "evict" or _fixed(state, a)]
        action = actions[rng.randrange(len(actions))]
        s.act(action)
        used = named(action, used)
    s.lookup(*range(bounds.keys))
    state = s.model_state()
    return s.act(("evict", len(eligible(state, ())), frozenset()))


def _fixed(state: State, action: Action) -> bool:
    n: int = action[1]
    return n == 0 or n >= len(eligible(state, action[2]))


def _walks(profile_name: str) -> list[Script]:
    rng = random.Random(f"{WALK_SEED}-{profile_name}")
    return [walk(profile_name, i + 1, rng) for i in range(WALKS)]


FILES: dict[str, tuple[str, Callable[[], Iterable[Script]]]] = {
    "vllm": ("scenarios of vLLM's own tests of the seed-era LRU and manager",
             lambda: [build() for build in VLLM_CASES]),
    "faults": ("one case per catalogued fault that shows at the policy level",
               lambda: [build() for build in FAULT_CASES]),
    "walks-core": ("seeded random legal walks with core's allowed outcomes",
                   lambda: _walks("core")),
    "walks-lru": ("seeded random legal walks with the lru profile's exact results",
                  lambda: _walks("lru")),
}
"""Each file: its description and its cases."""


def render(name: str) -> str:
    """The text of one vector file."""
    description, build = FILES[name]
    cases = [script.case() for script in build()]
    header: dict[str, Any] = {
        "schema": SCHEMA,
        "spec_version": SPEC_VERSION,
        "file": name,
        "description": description,
        "cases": len(cases),
    }
    return dump_line(header) + "".join(dump_line(case) for case in cases)


def generate() -> dict[str, str]:
    """Every vector file: name -> text."""
    return {f"{name}.jsonl": render(name) for name in FILES}


def write_vectors(out: Path) -> list[Path]:
    """Write every vector file into ``out`` (created if needed)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for filename, text in generate().items():
        path = out / filename
        path.write_text(text, encoding="utf-8", newline="\n")
        written.append(path)
    return written
