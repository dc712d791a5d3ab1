"""Turning caller actions into words and into Python that reproduces them.

A failure is only useful if a policy author can read it as a story and paste
it into a test: ``describe`` gives the story line, ``repro`` the program.
A fault that shows only at a size needs hundreds of stores before the call
that fails; the program says those as loops (``for k in range(...)``), as
the printed trace says them as one step (``witness.steps``), so that a
snippet is as long as the story, not as the trace.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from policyspec.harness.display import keys_text
from policyspec.harness.shapes import keys_shape, set_shape
from policyspec.model.actions import REQUEST_ACTIONS, Action, expand
from policyspec.model.state import State
from policyspec.releases import RELEASES

__all__ = [
    "clock_step",
    "comparison_repro",
    "describe",
    "measurement_repro",
    "repro",
    "trace_literal",
]


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
        return f"touch {keys_text(action[1])}{_as(keys_shape('touch', action[1]))}"
    if op == "evict":
        return (f"evict({action[1]}, protected={keys_text(sorted(action[2]))}"
                f"{_as(set_shape('evict', action[2]))})")
    if op == "get":
        return f"get key {action[1]}"
    if op == "set_positions":
        placed = ", ".join(f"{k}@{pos}" for k, pos in action[2])
        return f"request {action[1]} places keys at positions {placed}"
    if op in ("on_store_miss", "on_request_access"):
        return (f"request {action[1]}: {op}({keys_text(action[2])}"
                f"{_as(keys_shape(op, action[2]))})")
    if op == "on_request_finished":
        groups = [list(g) for g in action[2]]
        return (f"request {action[1]} finishes: on_request_finished({groups}, "
                f"insertion_only={sorted(action[3])}, reused={sorted(action[4])})")
    if op == "hook":
        return (f"request {action[2]}: {action[1]}({keys_text(action[3])}"
                f"{_as(keys_shape('hook', action[3]))})")
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


SNIPPET_CONTEXT = "policyspec-req-0"
"""The request id of the context a store outside any modelled request
carries (R9 and R10 ``insert``, R4 to R9 ``touch``): the harness's own."""
_TOUCH_CONTEXT = frozenset({"R4", "R5", "R7", "R7b", "R8"}) | {
    r.revision for r in RELEASES if r.manager_touches}
_INSERT_CONTEXT = frozenset(r.revision for r in RELEASES)
"""The revisions of the release folders (policyspec.releases): insert takes
the storing request's context."""
_ADAPTED = frozenset({"R6", "R6-draft"})
"""Revisions whose calls depend on the manager's sessions around a store:
their snippet drives the policy through policyspec's adapter (``Subject``)."""


def _load_lines(target: str, placeholders: Sequence[str], revision: str) -> list[str]:
    """The snippet's opening: the policy's class, imported as the check
    imported it, and vLLM's own types (stand-ins without vLLM)."""
    kept = f", placeholders={tuple(placeholders)!r}" if placeholders else ""
    return [
        "from policyspec import policy_class, vllm_types",
        "",
        "# Run with PYTHONHASHSEED=0 (as policyspec check runs): sets of keys then iterate",
        "# in the check's order.",
        "# The policy's class as the check imported it; with your own class, import it here.",
        f"Policy = policy_class({target!r}{kept})",
        "# vLLM's BlockStatus / ChunkStatus, ReqContext and OffloadKey (policyspec's stand-ins",
        "# for them when vLLM is not installed).",
        f"block, ReqContext, key = vllm_types(Policy, {revision!r})",
    ]


def measurement_repro(target: str, profile: str, engine: str, requirement: str,
                      api: str | None = None, *, revision: str = "R3", seed: int = 0,
                      budget: float | str = "quick", capacity: int | None = None,
                      message: str = "", placeholders: Sequence[str] = ()) -> str:
    """A standalone Python snippet rerunning the engine behind a finding
    that no single trace of calls shows (a measurement of work at two sizes,
    a metamorphic comparison of two runs, a call that never returns), with
    the check's seed and budget, and asserting the requirement: it exits
    non-zero while the engine still reports it."""
    forced = api if api is not None else revision
    sized = "" if capacity is None else f", capacity={capacity}"
    return "\n".join([
        *_load_lines(target, placeholders, revision),
        "from policyspec import assert_engine_finds_nothing",
        "",
        f"# {requirement} is not shown by one trace of calls: the {engine} engine runs again",
        "# on the class, with the check's seed and budget, and must not report it.",
        f"assert_engine_finds_nothing(Policy, {profile!r}, {engine!r}, {requirement!r}, "
        f"seed={seed}, budget={budget!r}{sized}, api={forced!r},",
        f"                            message={message!r})",
    ]) + "\n"


def repro(
    target: str, capacity: int, trace: Sequence[Action], comment: str = "", marks: bool = True,
    *, placeholders: Sequence[str] = (), judged: tuple[str, str] | None = None,
    api: str | None = None, seed: int | None = None, revision: str = "R3",
    seen: str | None = None, message: str = "", first: bool = False,
    call_timeout: float | None = None,
) -> str:
    """A standalone Python snippet replaying ``trace`` on ``target``'s class
    with the calls and ref_cnt writes vLLM's manager would make, in the
    policy's own API revision ``revision`` (R9 and R10 ``insert`` with the
    storing request's ``req_context``, ``touch`` with one from R4 to R9),
    vLLM's types for keys, blocks and request contexts, and no policyspec
    adapter (but for R6's sessions). The mark calls only when the revision
    has them (``marks``); ``placeholders``: the names the check kept inert.
    ``judged``: (profile, requirement id) to end with the assertion of that
    requirement on a replay of the trace (``policyspec.assertions``), quoting
    ``message``; ``seen``: the id the replay shows it as when the check
    blamed another. ``first``: the assertion comes before the calls written
    out (a call that raises or never returns would stop the snippet before
    it). ``api``: the revision a policy that fits several was driven as.
    With ``seed`` (a check's ``--seed``), the calls run inside
    ``policy_environment(seed)``: the policy reads the clock and draws the
    random numbers it did in the check (policyspec.environment), and the
    trace's clock steps step it. ``call_timeout``: the seconds the
    assertion's replay gives each call (a fault that hangs)."""
    revision = api if api is not None else revision
    adapted = revision in _ADAPTED
    if adapted:
        kept = f", placeholders={tuple(placeholders)!r}" if placeholders else ""
        lines = [
            "from policyspec import load_subject",
            "from policyspec import policy_class",
            "",
            f"# Revision {revision}: its evict and insert take the manager's store session, "
            "which policyspec's",
            "# adapter opens and closes around each store as vLLM's manager does.",
            f"Policy = policy_class({target!r}{kept})",
            f"subject = load_subject({target!r}, api={revision!r}{kept})",
            "key = subject.make_key",
            "block = subject.make_block",
        ]
    else:
        lines = _load_lines(target, placeholders, revision)
    if seed is not None:
        lines.insert(1, "from policyspec import policy_environment")
    lines += ["blocks = {}"]
    contexts = any(a[0] in REQUEST_ACTIONS or len(a) > 3 for a in trace)
    if contexts and not adapted:
        lines += [
            "contexts = {}",
            "",
            "",
            "def request(r):",
            "    # One ReqContext per request, as vLLM's manager has.",
            "    if r not in contexts:",
            "        contexts[r] = ReqContext(f'policyspec-req-{r}')",
            "    return contexts[r]",
            "",
        ]
    elif contexts:
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
    if not adapted and (revision in _INSERT_CONTEXT or revision in _TOUCH_CONTEXT):
        lines += [
            "# The context of a store or touch outside the trace's requests.",
            f"store = ReqContext({SNIPPET_CONTEXT!r})",
        ]
    assertion: list[str] = []
    if judged is not None:
        profile, requirement = judged
        also = f", seen={seen!r}" if seen is not None and seen != requirement else ""
        limit = "" if call_timeout is None else f", call_timeout={call_timeout!r}"
        assertion = [
            "",
            f"# {requirement} must hold on these calls: replayed on a fresh {'policy'} in "
            "lockstep with the spec's",
            "# model, this fails with the requirement's id and message until the policy is "
            "fixed.",
            "from policyspec import assert_requirement_holds",
            "",
            f"TRACE = {trace_literal(trace)}",
            f"assert_requirement_holds(Policy, {profile!r}, {capacity}, TRACE, "
            f"{requirement!r}{also}, api={revision!r},",
            f"                         message={message!r}{limit})",
        ]
        if seed is not None:  # the replay's policy gets the check's clock and randomness
            assertion[-2:] = [f"with policy_environment(seed={seed}):",
                              f"    {assertion[-2]}", f"    {assertion[-1]}"]
    calls = _calls(capacity, trace, marks, revision)
    if adapted:
        calls[0] = f"policy = subject.build({capacity})"
    body: list[str] = []
    if seed is not None:
        body += [f"with policy_environment(seed={seed}) as clock:",
                 *(f"    {line}" for line in calls)]
    else:
        body += calls
    if comment:
        body.append(f"# {comment}")
    if first and assertion:
        lines += [*assertion[1:], "", "# The same calls written out (they stop the snippet "
                  "while the fault is there):", *body]
    else:
        lines += body + assertion
    return "\n".join(lines) + "\n"


def comparison_repro(
    target: str, capacity: int, trace: Sequence[Action], reference: Sequence[Action],
    requirement: str, message: str, marks: bool = True, *, placeholders: Sequence[str] = (),
    api: str | None = None, seed: int = 0, revision: str = "R3",
) -> str:
    """A standalone Python snippet of a metamorphic finding: two runs on
    fresh policies, ``trace`` and the run it is compared with
    (``reference``), each written out as the calls vLLM's manager would
    make (as ``repro``), and the assertion that their last steps agree, as
    the requirement says they must (an evict's victims, a get's presence)."""
    revision = api if api is not None else revision
    lines = [
        *_load_lines(target, placeholders, revision),
        "from policyspec import policy_environment",
        "",
        "blocks = {}",
    ]
    if revision in _INSERT_CONTEXT or revision in _TOUCH_CONTEXT:
        lines += [
            "# The context of a store or touch outside the trace's requests.",
            f"store = ReqContext({SNIPPET_CONTEXT!r})",
        ]
    for name, actions, what in (("changed", trace, "The trace: the run with the change."),
                                ("reference", reference, "The run it is compared with.")):
        lines += ["", "", f"def {name}():", f"    # {what}", "    blocks.clear()",
                  f"    with policy_environment(seed={seed}) as clock:",
                  *(f"        {line}" for line in _calls(capacity, actions, marks, revision)),
                  "    return result"]
    last = trace[-1][0]
    if last == "get":
        outcome = ["def outcome(result):", "    # What the runs must agree on: presence.",
                   "    return result is not None"]
    else:
        named = max((k for a in (*trace, *reference) for k in _keys_of(a)), default=0) + 1
        outcome = ["# The trace's numbers of the keys, to show the victims as the trace does.",
                   f"NUMBERS = {{key(k): k for k in range({named})}}", "", "",
                   "def outcome(result):",
                   "    # What the runs must agree on: the victims' keys (None: refused).",
                   "    if result is None:",
                   "        return None",
                   "    return [NUMBERS.get(pair[0], pair[0]) for pair in result]"]
    lines += [
        "", "", *outcome, "", "",
        f"# {requirement}: {message}",
        "got, wanted = outcome(changed()), outcome(reference())",
        f"assert got == wanted, ({requirement + ': ' + message!r}",
        "                        + f' (this run: {got} against {wanted})')",
    ]
    return "\n".join(lines) + "\n"


MIN_LOOP = 4
"""Fewer repeats than this are written out call by call."""
_ONE_KEY = frozenset({"insert", "finish_store", "remove", "start_read", "end_read", "get"})
"""Actions whose only key is their second item."""


def trace_literal(trace: Sequence[Action]) -> str:
    """``list(trace)`` as a Python expression, runs of one or two actions on
    one key counting up (``MIN_LOOP`` or more) written as comprehensions."""
    parts: list[str] = []
    for start, period, repeats in _runs([_key_of(a) for a in trace], trace, len(trace)):
        if repeats == 1:
            parts += [repr(a) for a in trace[start:start + period]]
            continue
        first = _key_of(trace[start])
        assert first is not None
        block = [_with_k(a) for a in trace[start:start + period]]
        loop = f"for k in range({first}, {first + repeats})"
        parts.append(f"*[{block[0]} {loop}]" if period == 1
                     else f"*[a {loop} for a in ({', '.join(block)})]")
    return "[" + ", ".join(parts) + "]"


def _keys_of(action: Action) -> tuple[int, ...]:
    """Every key an action names."""
    op = action[0]
    if op in _ONE_KEY:
        return (int(action[1]),)
    if op == "touch":
        return tuple(action[1])
    if op == "evict":
        return tuple(action[2])
    return ()


def _with_k(action: Action) -> str:
    return "(" + ", ".join([repr(action[0]), "k", *map(repr, action[2:])]) + ")"


def _key_of(action: Action) -> int | None:
    return int(action[1]) if action[0] in _ONE_KEY else None


def _runs(
    keys: Sequence[int | None], items: Sequence[object], last: int,
) -> list[tuple[int, int, int]]:
    """``items`` cut into (start, period, repeats): runs of ``period`` (1 or
    2) items on one key, alike but for that key, which counts up by one
    over ``repeats`` (at least ``MIN_LOOP``) blocks that end before ``last``
    (the failing step stands alone); everything else as (i, 1, 1)."""
    def template(i: int) -> object:
        return items[i] if keys[i] is None else ("k", _shifted(items[i], keys[i]))

    def block(at: int, period: int) -> tuple[int, list[object]] | None:
        if at + period > len(items) or keys[at] is None:
            return None
        if any(keys[at + j] != keys[at] for j in range(period)):
            return None
        return keys[at] or 0, [template(at + j) for j in range(period)]

    out: list[tuple[int, int, int]] = []
    i = 0
    while i < len(items):
        best = (1, 1)
        for period in (1, 2):
            first = block(i, period)
            if first is None:
                continue
            repeats = 1
            while i + period * (repeats + 1) <= last:
                nxt = block(i + period * repeats, period)
                if nxt is None or nxt != (first[0] + repeats, first[1]):
                    break
                repeats += 1
            if repeats >= MIN_LOOP and period * repeats > best[0] * best[1]:
                best = (period, repeats)
        out.append((i, *best))
        i += best[0] * best[1]
    return out


def _shifted(item: object, key: int | None) -> object:
    """An action, or a call's lines, with its key taken out (to compare two
    of them on different keys)."""
    if isinstance(item, tuple) and item and isinstance(item[0], str):
        return (item[0], *item[2:])
    assert isinstance(item, _Piece)
    return item.template


class _Piece:
    """The snippet's lines of one action, and the same lines with its key
    written ``k`` and block ids as ``k`` plus an offset (the template two
    actions of a loop share)."""

    def __init__(self, lines: list[str], key: int | None, first_id: int) -> None:
        self.lines = lines
        self.template = lines
        if key is not None:
            offset = first_id - key
            shift = "k" if offset == 0 else f"k + {offset}" if offset > 0 else f"k - {-offset}"
            self.template = [
                line.replace(f"[{key}]", "[k]").replace(f"key({key})", "key(k)")
                .replace(f", {first_id})", f", {shift})") for line in lines]


def _looped(pieces: Sequence[_Piece], keys: Sequence[int | None]) -> list[str]:
    """The pieces' lines, runs of them (``_runs``) as ``for`` loops."""
    lines: list[str] = []
    for start, period, repeats in _runs(keys, pieces, len(pieces) - 1):
        if repeats == 1:
            for piece in pieces[start:start + period]:
                lines += piece.lines
            continue
        first = keys[start]
        lines.append(f"for k in range({first}, {(first or 0) + repeats}):")
        for piece in pieces[start:start + period]:
            lines += [f"    {line}" for line in piece.template]
    return lines


def _calls(capacity: int, trace: Sequence[Action], marks: bool,
           revision: str = "R3") -> list[str]:
    """The snippet's lines from building the policy to the last call."""
    pieces: list[_Piece] = []
    # Only ref counts matter to expand(); keys the policy evicted are never
    # named again by a legal trace, so stale entries are harmless.
    refs: dict[int, int] = {}
    next_id = 0
    last = len(trace) - 1
    for index, action in enumerate(trace):
        lines: list[str] = []
        first_id = next_id
        for call in expand(State(refs=refs), action):
            op = call[0]
            if op == "insert":
                k, ref = call[1], call[2]
                ctx = f", request({call[3]})" if len(call) > 3 else ""
                if not ctx and revision in _INSERT_CONTEXT:
                    ctx = ", store"
                elif revision not in _INSERT_CONTEXT:
                    ctx = ""  # (an R8 insert takes no context; its hooks get them)
                lines.append(f"blocks[{k}] = block({ref}, {next_id})")
                lines.append(f"policy.insert(key({k}), blocks[{k}]{ctx})")
                next_id += 1
                refs[k] = ref
            elif op == "set_ref":
                lines.append(f"blocks[{call[1]}].ref_cnt = {call[2]}")
                refs[call[1]] = call[2]
            elif op == "touch":
                given = _passed(keys_shape("touch", call[1]), call[1])
                ctx = ", store" if revision in _TOUCH_CONTEXT else ""
                lines.append(f"policy.touch({given}{ctx})")
            elif op == "evict":
                prot_text = _passed(set_shape("evict", call[2]), sorted(call[2]))
                prefix = "result = " if index == last else ""
                rest = ", set()" if revision == "R7b" else ""  # nothing deprioritized
                lines.append(f"{prefix}policy.evict({call[1]}, {prot_text}{rest})")
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
            elif op == "hook":
                given = _passed(keys_shape("hook", call[3]), call[3])
                lines.append(f"policy.{call[1]}({given}, request({call[2]}))")
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
                prefix = "result = " if op == "get" and index == last else ""
                lines.append(f"{prefix}policy.{op}(key({call[1]}))")
                if op == "remove":
                    refs.pop(call[1], None)
        pieces.append(_Piece(lines, _key_of(action), first_id))
    keys = [_key_of(a) for a in trace]
    return [f"policy = Policy(cache_capacity={capacity})", *_looped(pieces, keys)]


def _tuple(items: Iterable[str]) -> str:
    """A tuple display of ``items``: ``()``, ``(a,)``, ``(a, b)``."""
    shown = list(items)
    return f"({shown[0]},)" if len(shown) == 1 else "(" + ", ".join(shown) + ")"


def _set(items: Iterable[str]) -> str:
    """A set display of ``items``; ``set()`` when there are none."""
    shown = list(items)
    return "{" + ", ".join(shown) + "}" if shown else "set()"
