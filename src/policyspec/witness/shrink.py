"""Shrinking a failing trace of caller actions to a short one.

Used by the engines that do not shrink through Hypothesis (fast random,
metamorphic, soft failures). Delta debugging over actions: drop chunks,
then single actions, then simplify arguments, keeping a candidate only if
it is still caller-legal (the model decides) and still fails the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from policyspec.model.actions import Action

__all__ = ["shrink"]


def shrink(
    trace: Sequence[Action],
    fails: Callable[[Sequence[Action]], bool],
    *,
    max_tries: int = 2000,
) -> tuple[Action, ...]:
    """The shortest trace found for which ``fails`` still holds. ``fails``
    replays on a fresh policy and says whether the same failure shows; it
    answers False for a candidate the caller contract forbids."""
    best = tuple(trace)
    tries = 0
    chunk = max(1, len(best) // 2)
    while chunk >= 1 and tries < max_tries:
        index = 0
        progress = False
        while index < len(best) and tries < max_tries:
            candidate = best[:index] + best[index + chunk :]
            tries += 1
            if candidate and fails(candidate):
                best = candidate
                progress = True
            else:
                index += chunk
        if not progress:
            chunk //= 2
    for index in range(len(best)):
        for simpler in _simpler(best[index]):
            if tries >= max_tries:
                return best
            candidate = (*best[:index], simpler, *best[index + 1 :])
            tries += 1
            if fails(candidate):
                best = candidate
                break
    return best


def _simpler(action: Action) -> list[Action]:
    op = action[0]
    if op == "touch" and len(action[1]) > 1:
        keys = action[1]
        return [("touch", keys[:i] + keys[i + 1 :]) for i in range(len(keys))]
    if op == "hook" and len(action[3]) > 1:  # an observation hook takes any keys
        keys = action[3]
        return [(*action[:3], keys[:i] + keys[i + 1 :]) for i in range(len(keys))]
    if op == "evict":
        out: list[Action] = [("evict", action[1], action[2] - {k}) for k in sorted(action[2])]
        if action[1] > 1:
            out.append(("evict", action[1] - 1, action[2]))
        return out
    return []
