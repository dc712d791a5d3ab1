"""Model keys and the real keys a policy sees, both ways.

The model names keys by small integers; a policy gets keys in vLLM's
format (``Subject.make_key``), made once per model key and reused, so that
a policy's answers (evict's victims, a key it raised on) can be read back as
the trace's numbers. Every driver of a policy uses one ``KeyMap``: the
harness, the fast engine, the metamorphic runner, the protocol server.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable

__all__ = ["KeyMap"]


class KeyMap:
    """Real keys made by ``make_key``, remembered both ways."""

    __slots__ = ("_model", "_real", "make_key")

    def __init__(self, make_key: Callable[[int], Hashable]) -> None:
        self.make_key = make_key
        self._real: dict[int, Hashable] = {}
        self._model: dict[Hashable, int] = {}

    def real(self, k: int) -> Hashable:
        """The real key of model key ``k`` (made on first use)."""
        real = self._real.get(k)
        if real is None:
            real = self.make_key(k)
            self._real[k] = real
            self._model[real] = k
        return real

    def reals(self, keys: Iterable[int]) -> list[Hashable]:
        return [self.real(k) for k in keys]

    def model(self, real: object) -> int | None:
        """The model key of a real key, or None for one never handed out
        (or an unhashable object a policy returned)."""
        try:
            return self._model.get(real)
        except TypeError:  # unhashable
            return None

    @property
    def index(self) -> dict[Hashable, int]:
        """The real-to-model table itself, for drivers that look keys up in
        a loop (read-only by convention)."""
        return self._model

    def show(self, value: object) -> str:
        """``value`` as a report shows it: a real key as ``key 3``, a list of
        them as ``[3, 5]``, a set as ``{3, 5}``, anything else by repr."""
        if isinstance(value, list | tuple | set | frozenset):
            numbers = [self.model(v) for v in value]
            if all(n is not None for n in numbers):
                known = [n for n in numbers if n is not None]
                if isinstance(value, set | frozenset):
                    # an empty set is set(), as Python prints it, never {} (a dict)
                    shown = ", ".join(str(n) for n in sorted(known))
                    return "{" + shown + "}" if known else "set()"
                return "[" + ", ".join(str(n) for n in known) + "]"
        number = self.model(value)
        return f"key {number}" if number is not None else repr(value)

    def text(self, message: str) -> str:
        """``message`` with the repr of every real key handed out replaced by
        its trace name (``key 3``): an exception's text often spells the key
        the policy failed on (``b'\\xb1...' is not in list``)."""
        for k, real in self._real.items():
            shown = repr(real)
            if shown in message:
                message = message.replace(shown, f"key {k}")
        return message

