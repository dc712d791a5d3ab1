"""The bundled sample trace: synthetic serving traffic in Mooncake's JSONL
format, generated here from a seed (spec/traffic.md, "The bundled sample").

Public traces of real serving are not ours to ship, so this one imitates
what makes real traffic hard for a cache policy. Only
``random.Random.random`` is drawn from (its sequence is stable across Python
versions), so the same seed gives the same file;
tests/test_workload_sample.py regenerates it and compares.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

__all__ = ["SAMPLE_REQUESTS", "SAMPLE_SEED", "generate", "sample_path", "sample_text"]

SAMPLE_SEED = 31
SAMPLE_REQUESTS = 600
BLOCK = 512
"""Tokens per block (Mooncake's)."""

SYSTEM_PROMPTS = 8
"""Distinct system prompts, whole blocks each, 2 to 16 blocks long."""
DOCUMENTS = 40
"""Distinct documents a question may be about, 8 to 48 blocks long."""
MEAN_GAP_MS = 200.0
"""Mean gap between arrivals (5 requests per second) outside bursts."""
BURST = 0.05
"""Chance that an arrival starts a burst of 4 to 16 requests."""
NEW_CONVERSATION, DOCUMENT_QUESTION = 0.3, 0.15
"""Chances of a request of each kind; the rest are later turns."""
THINK_MS = 3000.0
"""A conversation's next turn comes at least this long after the last."""
END_CONVERSATION = 0.25
"""Chance that a conversation ends after a turn."""
ACTIVE = 64
"""Conversations kept open at most (the oldest is dropped)."""


def _zipf(rng: random.Random, n: int, s: float) -> int:
    """An index in ``range(n)`` with probability proportional to 1/(i+1)**s."""
    weights = [1.0 / (i + 1) ** s for i in range(n)]
    pick = rng.random() * sum(weights)
    for index, weight in enumerate(weights):
        pick -= weight
        if pick < 0:
            return index
    return n - 1


def _lognormal(rng: random.Random, median: float, sigma: float, low: int, high: int) -> int:
    """A log-normal whole number (Box-Muller from two uniforms), clamped."""
    u1, u2 = 1.0 - rng.random(), rng.random()
    normal = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
    return max(low, min(high, round(median * math.exp(sigma * normal))))


class _Conversation:
    __slots__ = ("head", "last_ms", "name", "tokens")

    def __init__(self, name: int, head: list[tuple[object, ...]], tokens: int) -> None:
        self.name = name
        self.head = head
        """The shared blocks it starts with (system prompt, document)."""
        self.tokens = tokens
        self.last_ms = 0.0


class _Generator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.ids: dict[tuple[int, tuple[object, ...]], int] = {}
        """(parent block id, block content) -> block id: two requests share
        a block exactly when they share the prefix up to its end."""
        rng = self.rng
        self.prompts = [2 + int(rng.random() * 15) for _ in range(SYSTEM_PROMPTS)]
        self.documents = [8 + int(rng.random() * 41) for _ in range(DOCUMENTS)]
        self.active: list[_Conversation] = []
        self.conversations = 0

    def _id(self, parent: int, content: tuple[object, ...]) -> int:
        found = self.ids.get((parent, content))
        if found is None:
            found = self.ids[(parent, content)] = len(self.ids)
        return found

    def hash_ids(self, conversation: _Conversation) -> list[int]:
        """The conversation's blocks now: its shared head, then blocks of
        its own (a partly filled block is named by its fill)."""
        head = conversation.head
        blocks = math.ceil(conversation.tokens / BLOCK)
        out: list[int] = []
        parent = -1
        for index in range(blocks):
            if index < len(head):
                content = head[index]
            else:
                fill = min(BLOCK, conversation.tokens - index * BLOCK)
                content = ("conv", conversation.name, index, fill)
            parent = self._id(parent, content)
            out.append(parent)
        return out

    def _open(self, head: list[tuple[object, ...]], user_tokens: int) -> _Conversation:
        self.conversations += 1
        return _Conversation(self.conversations, head, len(head) * BLOCK + user_tokens)

    def _system(self) -> list[tuple[object, ...]]:
        prompt = _zipf(self.rng, SYSTEM_PROMPTS, 1.1)
        return [("system", prompt, i) for i in range(self.prompts[prompt])]

    def request(self, now: float) -> tuple[list[int], int, int]:
        """The hash ids, input length and output length of a request
        arriving at ``now``."""
        rng = self.rng
        kind = rng.random()
        ready = [c for c in self.active if c.last_ms + THINK_MS <= now]
        if kind < DOCUMENT_QUESTION:
            document = _zipf(rng, DOCUMENTS, 1.0)
            head = self._system() + [
                ("document", document, i) for i in range(self.documents[document])]
            conversation = self._open(head, _lognormal(rng, 60, 0.6, 8, 600))
        elif kind < DOCUMENT_QUESTION + NEW_CONVERSATION or not ready:
            conversation = self._open(self._system(), _lognormal(rng, 600, 1.1, 16, 24_000))
            self.active.append(conversation)
            if len(self.active) > ACTIVE:
                self.active.pop(0)
        else:
            ready.sort(key=lambda c: -c.last_ms)  # the most recently active first
            conversation = ready[_zipf(rng, len(ready), 0.8)]
            conversation.tokens += _lognormal(rng, 150, 1.0, 4, 8_000)
        hash_ids = self.hash_ids(conversation)
        input_length = conversation.tokens
        output = _lognormal(rng, 150, 0.9, 1, 2_000)
        conversation.tokens += output  # the answer is part of the next turn
        conversation.last_ms = now
        if conversation in self.active and rng.random() < END_CONVERSATION:
            self.active.remove(conversation)
        return hash_ids, input_length, output


def generate(seed: int = SAMPLE_SEED, requests: int = SAMPLE_REQUESTS) -> Iterator[str]:
    """The sample's lines (without line ends), Mooncake's fields in its
    order."""
    generator = _Generator(seed)
    rng = generator.rng
    now = 0.0
    burst = 0
    for _ in range(requests):
        if burst:
            burst -= 1
            now += rng.random() * 3.0
        else:
            now += -math.log(1.0 - rng.random()) * MEAN_GAP_MS
            if rng.random() < BURST:
                burst = 3 + int(rng.random() * 13)
        hash_ids, input_length, output_length = generator.request(now)
        yield json.dumps({"timestamp": int(now), "input_length": input_length,
                          "output_length": output_length, "hash_ids": hash_ids})


def sample_text() -> str:
    """The bundled sample's content, as ``generate()`` makes it."""
    return "".join(line + "\n" for line in generate())


def sample_path() -> Path:
    """The bundled sample file (package data)."""
    return Path(str(resources.files("policyspec.workload") / "sample.jsonl"))


if __name__ == "__main__":  # regenerate the bundled file
    sample_path().write_text(sample_text(), encoding="ascii")
