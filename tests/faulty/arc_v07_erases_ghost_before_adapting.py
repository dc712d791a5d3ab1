"""faulty: ARC-GHOST-ADAPT profile=arc engine=fast capacity=8

Re-creates spec/bugs.md V7 (vLLM PR #51787: "ARC learns from B1/B2 before
insert() removes the ghost entry") inside one policy. The bug was an order
of steps on the store path: ``insert`` erased the ghost, and the adaptation
that came after it found no ghost, so ghost hits on stores never moved the
target. The row's literal mutant, "adapt only in touch, erase ghosts in
insert", is what spec/arc.md requires of a seed-API policy: there the
scheduler touches a request's keys before it stores the missing ones, and
that touch adapts (ARC-GHOST-ADAPT) before the insert erases the ghost
(ARC-INSERT-T1); only a manager can get that order wrong. This ARC has the
bug's order itself: its ``touch`` leaves the learning to the store, and its
``insert`` erases the ghost first and asks which ghost list holds the key
afterwards, so the target never moves. At 0.33's API (R9) the store path
starts with ``on_store_miss``; this ARC leaves that hook idle too.
"""

from collections.abc import Iterable
from typing import Any

from policyspec.reference.arc import ARCCachePolicy


class Policy(ARCCachePolicy[Any, Any]):
    def touch(self, keys: Iterable[Any], req_context: Any) -> None:
        for key in reversed(list(keys)):
            if key in self.b1:
                self.b1.move_to_end(key)  # learning is left to the store path
            elif key in self.b2:
                self.b2.move_to_end(key)
            else:
                super().touch([key], req_context)

    def on_store_miss(self, keys: Iterable[Any], req_context: Any) -> None:
        return None  # learning is left to insert (R9's store path)

    def insert(self, key: Any, block: Any, req_context: Any) -> None:
        super().insert(key, block, req_context)  # erases the ghost ...
        if key in self.b1:  # ... so the adaptation (the fault: too late) never runs
            self._grow_target()
        elif key in self.b2:
            self._shrink_target()
