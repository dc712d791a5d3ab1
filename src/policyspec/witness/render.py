"""Turning caller actions into words and into Python that reproduces them.

A failure is only useful if a policy author can read it as a story and paste
it into a test: ``describe`` gives the story line, ``repro`` the program.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from policyspec.harness.shapes import keys_shape, set_shape
from policyspec.model.actions import REQUEST_ACTIONS, Action, expand
from policyspec.model.state import State

__all__ = ["clock_step", "describe", "repro"]


def describe(action: Action, marks: bool = True) -> str:
    """One line for a trace: what the manager did. ``marks``: whether the
    policy's revision has ``mark_evictable`` (R3 on); without it a finished
    store is only the ref_cnt write."""
    op = action[0]
    if op == "insert":
        where = "in flight" if action[2] == -1 else "idle"
        by = f" for request {action[3]}" if len(action) > 3 else ""
        return f"insert key {action[1]} ({where}, ref_cnt {action[2]}){by}"
    if op == "finish_store":
        then = ", mark_evictable" if marks else ""
        return f"store of key {action[1]} completes: ref_cnt -1 -> 0{then}"
    if op == "remove":
        return f"remove key {action[1]}"
    if op == "start_read":
        return f"load of key {action[1]} starts (ref_cnt += 1)"
    if op == "end_read":
        return f"load of key {action[1]} ends (ref_cnt -= 1)"
    if op == "touch":
        return f"touch {list(action[1])}{_as(keys_shape('touch', action[1]))}"
    if op == "evict":
        return (f"evict({action[1]}, protected={sorted(action[2])}"
                f"{_as(set_shape('evict', action[2]))})")
    if op == "get":
        return f"get key {action[1]}"
    if op == "set_positions":
        placed = ", ".join(f"{k}@{pos}" for k, pos in action[2])
        return f"request {action[1]} places keys at positions {placed}"
    if op in ("on_store_miss", "on_request_access"):
        return f"request {action[1]}: {op}({list(action[2])}{_as(keys_shape(op, action[2]))})"
    if op == "on_request_finished":
        groups = [list(g) for g in action[2]]
        return (f"request {action[1]} finishes: on_request_finished({groups}, "
                f"insertion_only={sorted(action[3])}, reused={sorted(action[4])})")
    if op == "clock":
        return clock_step(action[1])
    return "clear()"


def clock_step(ms: int) -> str:
    """A clock step in words (policyspec.environment)."""
    if ms < 0:
        return (f"the wall clock steps back {_duration(-ms)} (time.monotonic and "
                "time.perf_counter do not)")
    if ms < 1000:
        return f"the clock advances {_duration(ms)}"
    return f"the clock jumps forward {_duration(ms)}"


def _duration(ms: int) -> str:
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


def _as(shape: str) -> str:
    """How a description names the shape a call's keys were passed in
    (``harness.shapes``); nothing for the manager's own list."""
    return "" if shape == "list" else f" as a {shape.replace('_', ' ')}"


def _passed(shape: str, keys: Sequence[int]) -> str:
    """Python source of the container of ``shape`` the harness passes."""
    items = [f"key({k})" for k in keys]
    inner = ", ".join(items)
    if shape == "tuple":
        return _tuple(items)
    if shape == "generator":
        return f"(k for k in [{inner}])"
    if shape == "set":
        return _set(items)
    if shape == "frozenset":
        return f"frozenset([{inner}])"
    if shape == "dict_keys":
        return f"dict.fromkeys([{inner}]).keys()"
    return f"[{inner}]"



def repro(
    target: str, capacity: int, trace: Sequence[Action], comment: str = "", marks: bool = True,
    *, placeholders: Sequence[str] = (), judged: tuple[str, str] | None = None,
    api: str | None = None, seed: int | None = None,
) -> str:
    """A standalone Python snippet replaying ``trace`` on ``target`` with the
    calls and ref_cnt writes vLLM's manager would make (the mark calls only
    when the policy's revision has them: ``marks``; the names the check kept
    as placeholders: ``placeholders``). ``judged``: (profile, requirement id)
    to end with an assertion of that requirement on a replay of the trace
    (``policyspec.assertions``). ``api``: the revision to load it as, for a
    policy that fits several (``Subject.fits``). With ``seed`` (a check's
    ``--seed``), the calls run inside ``policy_environment(seed)``: the
    policy reads the clock and draws the random numbers it did in the check
    (policyspec.environment), and the trace's clock steps step it."""
    kept = f", placeholders={tuple(placeholders)!r}" if placeholders else ""
    if api is not None:
        kept = f", api={api!r}{kept}"
    lines = [
        "from policyspec.adapters import load_subject",
        *(["from policyspec.environment import policy_environment"] if seed is not None else []),
        "",
        f"subject = load_subject({target!r}{kept})",
        "key = subject.make_key",
        "blocks = {}",
    ]
    if any(a[0] in REQUEST_ACTIONS or len(a) > 3 for a in trace):
        lines += [
            "contexts = {}",
            "",
            "",
            "def request(r):",
            "    if r not in contexts:",
            "        contexts[r] = subject.make_request(f'policyspec-req-{r}')",
            "    return contexts[r]",
            "",
        ]
    calls = _calls(capacity, trace, marks)
    if seed is not None:
        lines += [f"with policy_environment(seed={seed}) as clock:",
                  *(f"    {line}" for line in calls)]
    else:
        lines += calls
    if comment:
        lines.append(f"# {comment}")
    if judged is not None:
        profile, requirement = judged
        assertion = [
            "",
            f"# {requirement} must hold on these calls: replayed in lockstep with the spec's "
            "model,",
            "# this fails with the requirement's message until the policy is fixed.",
            "from policyspec.assertions import assert_requirement_holds",
            "",
            f"TRACE = {list(trace)!r}",
            f"assert_requirement_holds(subject, {profile!r}, {capacity}, TRACE, "
            f"{requirement!r})",
        ]
        if seed is not None:  # the replay's policy gets the check's clock and randomness
            assertion[-1:] = [f"with policy_environment(seed={seed}):",
                              f"    {assertion[-1]}"]
        lines += assertion
    return "\n".join(lines) + "\n"


def _calls(capacity: int, trace: Sequence[Action], marks: bool) -> list[str]:
    """The snippet's lines from building the policy to the last call."""
    lines = [f"policy = subject.build({capacity})"]
    # Only ref counts matter to expand(); keys the policy evicted are never
    # named again by a legal trace, so stale entries are harmless.
    refs: dict[int, int] = {}
    next_id = 0
    last = len(trace) - 1
    for index, action in enumerate(trace):
        for call in expand(State(refs=refs), action):
            op = call[0]
            if op == "insert":
                k, ref = call[1], call[2]
                ctx = f", request({call[3]})" if len(call) > 3 else ""
                lines.append(f"blocks[{k}] = subject.make_block({ref}, {next_id})")
                lines.append(f"policy.insert(key({k}), blocks[{k}]{ctx})")
                next_id += 1
                refs[k] = ref
            elif op == "set_ref":
                lines.append(f"blocks[{call[1]}].ref_cnt = {call[2]}")
                refs[call[1]] = call[2]
            elif op == "touch":
                lines.append(f"policy.touch({_passed(keys_shape('touch', call[1]), call[1])})")
            elif op == "evict":
                prot_text = _passed(set_shape("evict", call[2]), sorted(call[2]))
                prefix = "result = " if index == last else ""
                lines.append(f"{prefix}policy.evict({call[1]}, {prot_text})")
            elif op == "clear":
                lines.append("policy.clear()")
                refs.clear()
            elif op == "set_positions":
                for k, position in call[2]:
                    lines.append(f"request({call[1]}).set_offload_key_position(key({k}), "
                                 f"{position})")
            elif op in ("on_store_miss", "on_request_access"):
                given = _passed(keys_shape(op, call[2]), call[2])
                lines.append(f"policy.{op}({given}, request({call[1]}))")
            elif op == "on_request_finished":
                groups = _tuple(_tuple(f"key({k})" for k in g) for g in call[2])
                only = _passed(set_shape("insertion_only", call[3]), sorted(call[3]))
                reused = _passed(set_shape("reused", call[4]), sorted(call[4]))
                lines.append(f"policy.on_request_finished({groups}, {only}, {reused}, "
                             f"request({call[1]}))")
            elif op in ("mark_evictable", "mark_non_evictable") and not marks:
                continue
            elif op == "clock":
                lines.append(f"clock.step({call[1]})  # {clock_step(call[1])}")
            else:
                lines.append(f"policy.{op}(key({call[1]}))")
                if op == "remove":
                    refs.pop(call[1], None)
    return lines


def _tuple(items: Iterable[str]) -> str:
    """A tuple display of ``items``: ``()``, ``(a,)``, ``(a, b)``."""
    shown = list(items)
    return f"({shown[0]},)" if len(shown) == 1 else "(" + ", ".join(shown) + ")"


def _set(items: Iterable[str]) -> str:
    """A set display of ``items``; ``set()`` when there are none."""
    shown = list(items)
    return "{" + ", ".join(shown) + "}" if shown else "set()"
