"""Writing one vector case: caller actions in, policy calls with the
results the model requires out.

A ``Script`` holds the model state of a case. Each caller action is
expanded into the manager's calls and ref_cnt writes (``model.actions``),
and every call that returns something gets its expectation from the model:
``get`` from presence, ``evict`` from the profile's refinement (exact
victims) or, for core, from the eligible keys (allowed outcomes). Nothing
expected is written by hand. The ``prepare_*``/``complete_*`` helpers play
the seed-era manager (spec/manager.md) for the scenarios of vLLM's tests.
"""

from __future__ import annotations

from typing import Any

from policyspec.model.actions import Action, Primitive, expand, is_legal
from policyspec.model.evict import eligible
from policyspec.model.state import IN_FLIGHT, State
from policyspec.model.step import ProfileModel
from policyspec.profiles import Profile

__all__ = ["Script"]


class Script:
    """One case under construction. Under core an eviction whose victims
    the spec leaves open must be the last call that depends on them: the
    script refuses further calls after it (the model state would fork)."""

    def __init__(
        self, name: str, profile: Profile, capacity: int, *, source: str, description: str,
        exposes: str | None = None,
    ) -> None:
        self.name = name
        self.profile = profile
        self.capacity = capacity
        self.source = source
        self.description = description
        self.exposes = exposes
        self.model: ProfileModel = profile.model(capacity)
        self.ids: dict[int, int] = {}
        """The block id of each present key."""
        self.next_id = 0
        self.calls: list[dict[str, Any]] = []
        self.last_victims: list[int] | None = None
        self._open = True

    @property
    def state(self) -> State:
        return self.model.state

    # -- caller actions ---------------------------------------------------------

    def act(self, *actions: Action) -> Script:
        for action in actions:
            if not is_legal(self.state, action):
                raise ValueError(f"{self.name}: {action!r} breaks the caller contract in "
                                 f"{self.state!r}")
            for call in expand(self.state, action):
                self._primitive(call)
        return self

    def _primitive(self, call: Primitive) -> None:
        """Record ``call`` with what the model expects of it, and step."""
        if not self._open:
            raise ValueError(f"{self.name}: a call follows an evict whose victims core leaves "
                             "open")
        op, args = call[0], call[1:]
        if op == "evict":
            self._evict(*args)
            return
        if op == "insert":
            key, ref_cnt = args
            self.ids[key] = self.next_id
            self.calls.append({"op": "insert", "key": key,
                               "block": {"id": self.next_id, "ref_cnt": ref_cnt}})
            self.next_id += 1
        elif op == "set_ref":
            key, ref_cnt = args
            self.calls.append({"op": "set_ref", "id": self.ids[key], "ref_cnt": ref_cnt})
        elif op == "get":
            (key,) = args
            present = self.model.step(call).expected
            self.calls.append({"op": "get", "key": key,
                               "expect": {"block": self.ids.get(key) if present else None}})
        elif op == "touch":
            self.calls.append({"op": "touch", "keys": list(args[0])})
        elif op == "clear":
            self.calls.append({"op": "clear"})
            self.ids.clear()
        else:
            self.calls.append({"op": op, "key": args[0]})
            if op == "remove":
                self.ids.pop(args[0], None)
        self.model = self.model.step(call).model

    def _evict(self, n: int, protected: frozenset[int]) -> None:
        step = self.model.step(("evict", n, protected))
        call: dict[str, Any] = {"op": "evict", "n": n, "protected": sorted(protected)}
        victims: list[int] | None
        if step.exact:
            victims = step.expected  # type: ignore[assignment]
            call["expect"] = {"victims": None if victims is None else self._pairs(victims)}
            after = step.model
        else:
            # Core leaves the victims open: any n of the eligible keys.
            allowed = eligible(self.state, protected)
            if n == 0:
                victims = []
                call["expect"] = {"victims": []}
            elif len(allowed) < n:
                victims = None
                call["expect"] = {"victims": None}
            else:
                victims = sorted(allowed) if len(allowed) == n else None
                call["expect"] = {"count": n, "any_of": self._pairs(sorted(allowed)),
                                  "none_level": "SHOULD"}
                self._open = len(allowed) == n
            after = self.model.step(("evict", n, protected), victims).model
        self.calls.append(call)
        self.last_victims = victims
        if victims:
            for key in victims:
                self.ids.pop(key, None)
        self.model = after

    def _pairs(self, keys: list[int]) -> list[list[int]]:
        return [[key, self.ids[key]] for key in keys]

    # -- the seed-era manager (spec/manager.md) ---------------------------------

    def lookup(self, *keys: int) -> Script:
        return self.act(*(("get", k) for k in keys))

    def prepare_store(self, *keys: int) -> bool:
        """Store the offered keys that are absent: evict first when free ids
        run short (unless the idle counter says it cannot succeed), then
        insert in flight. False when the manager gives up."""
        self.lookup(*keys)
        to_store = [k for k in keys if k not in self.state.refs]
        need = len(to_store) - (self.capacity - len(self.state.refs))
        if need > 0:
            if need > len(self.state.idle):
                return False  # the fast-fail guard: evict is not called
            self.act(("evict", need, frozenset(keys)))
            if self.last_victims is None:
                return False
        self.act(*(("insert", k, IN_FLIGHT) for k in to_store))
        return True

    def complete_store(self, *keys: int, success: bool = True) -> Script:
        for key in keys:
            self.act(("get", key))
            if self.state.refs.get(key) == IN_FLIGHT:
                self.act(("finish_store", key) if success else ("remove", key))
        return self

    def prepare_load(self, *keys: int) -> Script:
        for key in keys:
            self.act(("get", key), ("start_read", key))
        return self

    def complete_load(self, *keys: int) -> Script:
        for key in keys:
            self.act(("get", key), ("end_read", key))
        return self

    # -- output -------------------------------------------------------------------

    def case(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "name": self.name,
            "profile": self.profile.name,
            "capacity": self.capacity,
            "source": self.source,
        }
        if self.exposes:
            record["exposes"] = self.exposes
        record["description"] = self.description
        record["calls"] = self.calls
        return record

    def model_state(self) -> State:
        return self.model.state
