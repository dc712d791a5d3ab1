"""What a policy sees of the world while it is checked: a virtual clock the
engines drive and a random stream seeded per policy instance
(spec/environment.md). Time and randomness are inputs of a check, like the
calls, so every replay of a trace gives the policy the same clock readings
and random numbers, and the requirements that need a replay judge a policy
that reads a clock like any other. policyspec's own code always reads the
real clock.
"""

from __future__ import annotations

import contextlib
import datetime as _datetime_module
import random
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

__all__ = [
    "MONOTONIC_START",
    "SPIN_READS",
    "WALL_START",
    "Environment",
    "LocalEnvironment",
    "active",
    "controlled",
    "policy_environment",
    "run_seed",
]

MONOTONIC_START = 1_000_000_000_000
"""The monotonic clocks' reading (ns) when a policy instance is built."""
WALL_START = 1_735_689_600_000_000_000
"""The wall clock's reading (ns since the epoch) when a policy instance is
built: 2025-01-01 00:00:00 UTC."""
SPIN_READS = 1_000_000
"""Reads since the last clock step after which each read advances 1 µs."""
_SPIN_NS = 1_000


class Environment(Protocol):
    """One policy instance's clock and random stream, as the engines see it
    (in this process, ``LocalEnvironment``; behind ``--isolate``, the child's,
    through the line protocol)."""

    @property
    def read_clock(self) -> bool:
        """The policy has read a clock (the engines then add clock steps)."""
        ...

    @property
    def read_wall_after_back(self) -> bool:
        """The policy read the wall clock after it stepped back."""
        ...

    def step(self, ms: int) -> None:
        """Move the clock by ``ms`` milliseconds (< 0: the wall clock steps back)."""
        ...

    def enter(self) -> object:
        """A policy call (or a chunk of them) starts; returns what ``leave`` restores."""
        ...

    def leave(self, outer: object) -> None:
        """The call ended; ``outer`` is what ``enter`` returned."""
        ...


_REAL_TIME = {name: getattr(time, name) for name in (
    "time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns")}
_real_time_ns = time.time_ns
_real_monotonic = time.monotonic
_real_monotonic_ns = time.monotonic_ns
_real_perf_counter = time.perf_counter
_real_perf_counter_ns = time.perf_counter_ns
_real_time = time.time
_RealDatetime = _datetime_module.datetime
_real_seed = random.Random.seed

_active: LocalEnvironment | None = None
"""The environment whose policy call runs now (None: no policy call)."""
_owner: LocalEnvironment | None = None
"""The environment whose random stream ``random``'s global generator holds."""
_seed = 0
"""The run's seed (``controlled``): every new environment's random seed."""


def run_seed() -> int:
    """The seed new environments get (the run's, inside ``controlled``)."""
    return _seed


class LocalEnvironment:
    """The environment of a policy instance in this process (spec/environment.md)."""

    __slots__ = ("_numpy_state", "_random_state", "monotonic_ns", "read_clock",
                 "read_wall_after_back", "reads", "seed", "stepped_back", "unseeded", "wall_ns")

    def __init__(self, seed: int | None = None) -> None:
        self.seed = _seed if seed is None else seed
        self.monotonic_ns = MONOTONIC_START
        self.wall_ns = WALL_START
        self.reads = 0
        self.read_clock = False
        self.stepped_back = False
        self.read_wall_after_back = False
        self.unseeded = 0
        self._random_state: object = None
        self._numpy_state: object = None

    def step(self, ms: int) -> None:
        ns = ms * 1_000_000
        self.wall_ns += ns
        if ns >= 0:
            self.monotonic_ns += ns
        else:
            self.stepped_back = True
        self.reads = 0

    def enter(self) -> object:
        global _active
        outer = _active
        _active = self
        if self is not _owner:
            _switch(self)
        return outer

    def leave(self, outer: object) -> None:
        global _active
        _active = outer if isinstance(outer, LocalEnvironment) else None
        if _active is not None and _active is not _owner:
            _switch(_active)

    # -- what the policy reads ----------------------------------------------

    def monotonic(self) -> int:
        self.read_clock = True
        self._spin()
        return self.monotonic_ns

    def wall(self) -> int:
        self.read_clock = True
        if self.stepped_back:
            self.read_wall_after_back = True
        self._spin()
        return self.wall_ns

    def _spin(self) -> None:
        self.reads += 1
        if self.reads > SPIN_READS:
            self.monotonic_ns += _SPIN_NS
            self.wall_ns += _SPIN_NS

    def next_seed(self) -> int:
        """A seed for a ``random.Random()`` the policy makes without one."""
        self.unseeded += 1
        return self.seed * 1_000_003 + self.unseeded

    def __deepcopy__(self, memo: dict[int, Any]) -> LocalEnvironment:
        """A copy that goes on from here: the same clock, and the random
        stream where this instance's is now (``engines.snapshot.fork``)."""
        copy = LocalEnvironment(self.seed)
        for name in ("monotonic_ns", "wall_ns", "reads", "read_clock", "stepped_back",
                     "read_wall_after_back", "unseeded"):
            setattr(copy, name, getattr(self, name))
        if self is _owner:
            copy._random_state = random.getstate()
            numpy = sys.modules.get("numpy")
            copy._numpy_state = numpy.random.get_state() if numpy is not None else None
        else:
            copy._random_state, copy._numpy_state = self._random_state, self._numpy_state
        return copy


def _switch(env: LocalEnvironment) -> None:
    """Give ``random``'s (and numpy's) global generator to ``env``: keep the
    current owner's state, restore ``env``'s or seed it."""
    global _owner
    numpy = sys.modules.get("numpy")
    old = _owner
    if old is not None:
        old._random_state = random.getstate()
        old._numpy_state = numpy.random.get_state() if numpy is not None else None
    if env._random_state is None:
        random.seed(env.seed)
        if numpy is not None:
            numpy.random.seed(env.seed % 2**32)
    else:
        random.setstate(env._random_state)  # type: ignore[arg-type]
        if numpy is not None and env._numpy_state is not None:
            numpy.random.set_state(env._numpy_state)
    _owner = env


# -- the clock functions the policy calls ---------------------------------------


def _ours(frame: Any) -> bool:
    """Whether the code reading the clock is policyspec's own (its timing
    must stay real), not the policy's."""
    name = frame.f_globals.get("__name__", "")
    return name.startswith("policyspec.") and not name.startswith("policyspec.reference")


def _reader() -> LocalEnvironment | None:
    """The environment a clock read now belongs to: the active one, unless
    the reader (two frames up: the caller of the clock function) is
    policyspec's own code."""
    env = _active
    if env is None or _ours(sys._getframe(2)):
        return None
    return env


def _time() -> float:
    env = _reader()
    return _real_time() if env is None else env.wall() / 1e9


def _time_ns() -> int:
    env = _reader()
    return _real_time_ns() if env is None else env.wall()


def _monotonic() -> float:
    env = _reader()
    return _real_monotonic() if env is None else env.monotonic() / 1e9


def _monotonic_ns() -> int:
    env = _reader()
    return _real_monotonic_ns() if env is None else env.monotonic()


def _perf_counter() -> float:
    env = _reader()
    return _real_perf_counter() if env is None else env.monotonic() / 1e9


def _perf_counter_ns() -> int:
    env = _reader()
    return _real_perf_counter_ns() if env is None else env.monotonic()


_VIRTUAL_TIME: dict[str, Callable[[], Any]] = {
    "time": _time, "time_ns": _time_ns, "monotonic": _monotonic,
    "monotonic_ns": _monotonic_ns, "perf_counter": _perf_counter,
    "perf_counter_ns": _perf_counter_ns,
}


class _DatetimeType(type):
    """Any real ``datetime`` is an instance of the stand-in class, so code
    that tests ``isinstance(x, datetime)`` with it keeps working."""

    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, _RealDatetime)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, _RealDatetime)


class VirtualDatetime(_RealDatetime, metaclass=_DatetimeType):
    """``datetime.datetime`` while a run is ``controlled``: ``now``,
    ``utcnow`` and ``today`` read the active environment's wall clock.
    Every value it makes is a plain ``datetime``."""

    @classmethod
    def now(cls, tz: _datetime_module.tzinfo | None = None) -> _RealDatetime:  # type: ignore[override]
        env = _reader()
        if env is None:
            return _RealDatetime.now(tz)
        return _RealDatetime.fromtimestamp(env.wall() / 1e9, tz)

    @classmethod
    def utcnow(cls) -> _RealDatetime:  # type: ignore[override]
        env = _reader()
        if env is None:
            return _RealDatetime.now(_datetime_module.UTC).replace(tzinfo=None)
        moment = _RealDatetime.fromtimestamp(env.wall() / 1e9, _datetime_module.UTC)
        return moment.replace(tzinfo=None)

    @classmethod
    def today(cls) -> _RealDatetime:  # type: ignore[override]
        env = _reader()
        if env is None:
            return _RealDatetime.now()
        return _RealDatetime.fromtimestamp(env.wall() / 1e9)


def _random_seed(self: random.Random, a: Any = None, version: int = 2) -> None:
    """``random.Random.seed``: a generator seeded with None (made without a
    seed, or ``random.seed()``) during a policy call gets the instance's
    next seed instead of the operating system's entropy."""
    env = _active
    if a is None and env is not None:
        a = env.next_seed()
    _real_seed(self, a, version)


# -- putting it in place -----------------------------------------------------------

_TOOLS = ("policyspec", "hypothesis", "_hypothesis", "_pytest", "pytest", "pluggy", "crosshair")
"""Packages whose imported clock functions stay real (besides the standard
library): they time the run, not the policy."""

_installed: list[tuple[Any, str, object]] = []
_depth = 0


def _replacements() -> dict[int, tuple[object, object]]:
    """id of a real clock function or class -> (it, its replacement)."""
    table: dict[int, tuple[object, object]] = {
        id(_REAL_TIME[name]): (_REAL_TIME[name], fn) for name, fn in _VIRTUAL_TIME.items()}
    table[id(_RealDatetime)] = (_RealDatetime, VirtualDatetime)
    return table


def _install() -> None:
    """Replace the clock functions and ``random.Random.seed`` (spec/environment.md)."""
    table = _replacements()
    for name, fn in _VIRTUAL_TIME.items():
        _installed.append((time, name, getattr(time, name)))
        setattr(time, name, fn)
    _installed.append((_datetime_module, "datetime", _datetime_module.datetime))
    _datetime_module.datetime = VirtualDatetime  # type: ignore[misc]
    _installed.append((random.Random, "seed", random.Random.seed))
    random.Random.seed = _random_seed  # type: ignore[method-assign]
    stdlib = sys.stdlib_module_names
    for module_name, module in list(sys.modules.items()):
        top = module_name.partition(".")[0]
        if module is None or top in stdlib or top in _TOOLS:
            continue
        try:
            names = list(vars(module).items())
        except TypeError:
            continue
        for name, value in names:
            found = table.get(id(value))
            if found is not None and found[0] is value:
                _installed.append((module, name, value))
                setattr(module, name, found[1])


def _uninstall() -> None:
    while _installed:
        owner, name, value = _installed.pop()
        setattr(owner, name, value)


@contextlib.contextmanager
def controlled(seed: int = 0) -> Iterator[None]:
    """The virtual clock in place, and ``seed`` the random seed of every
    environment made meanwhile (spec/environment.md). Nested uses share the first's
    patches; each restores the seed it found."""
    global _depth, _seed, _owner
    saved = _seed
    _seed = seed
    if _depth == 0:
        _install()
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            _uninstall()
            _owner = None
        _seed = saved


@contextlib.contextmanager
def active(environment: Environment) -> Iterator[Environment]:
    """``environment`` in place for the block: what a policy built or called
    meanwhile reads (``enter``/``leave`` around it)."""
    outer = environment.enter()
    try:
        yield environment
    finally:
        environment.leave(outer)


@contextlib.contextmanager
def policy_environment(seed: int = 0) -> Iterator[LocalEnvironment]:
    """One environment, active for the whole block: how a reproducing
    snippet gives a policy the clock and random stream its check gave it.
    ``step(ms)`` on the environment moves its clock.

        with policy_environment(seed=7) as clock:
            policy = subject.build(64)
            ...
            clock.step(3_600_000)  # the clock jumps forward 1 h
    """
    with controlled(seed):
        env = LocalEnvironment(seed)
        outer = env.enter()
        try:
            yield env
        finally:
            env.leave(outer)
