"""The bundled sample trace (spec/traffic.md, "The bundled sample"): it is
what the generator makes from its seed, in Mooncake's format, and it has
what makes real serving traffic hard for a cache: shared prefixes with a
skewed popularity, conversations that grow, bursts."""

from __future__ import annotations

import itertools
import json
from collections import Counter

from policyspec.workload.reader import read_trace
from policyspec.workload.sample import SAMPLE_REQUESTS, generate, sample_path, sample_text


def test_the_bundled_file_is_the_generators_output() -> None:
    assert sample_path().read_text(encoding="ascii") == sample_text()


def test_the_same_seed_gives_the_same_trace_and_another_seed_another() -> None:
    assert list(generate(5, 50)) == list(generate(5, 50))
    assert list(generate(5, 50)) != list(generate(6, 50))


def test_lines_are_mooncake_requests_with_their_block_counts() -> None:
    lines = [json.loads(line) for line in sample_path().read_text().splitlines()]
    assert len(lines) == SAMPLE_REQUESTS
    for line in lines:
        assert list(line) == ["timestamp", "input_length", "output_length", "hash_ids"]
        assert len(line["hash_ids"]) == -(-line["input_length"] // 512)
    ids = [h for line in lines for h in line["hash_ids"]]
    assert sorted(set(ids)) == list(range(len(set(ids))))  # numbered by first use


def test_prefixes_are_shared_with_skew_and_conversations_grow() -> None:
    requests = list(read_trace(sample_path()))
    uses = Counter(block for r in requests for block in r.blocks)
    blocks = sum(uses.values())
    assert len(uses) < 0.6 * blocks  # most blocks are named again
    top = uses.most_common(1)[0][1]
    assert top > 0.3 * len(requests)  # a system prompt heads a third of the requests
    assert sorted(uses.values())[len(uses) // 2] == 1  # and most blocks are named once
    starts = Counter(r.blocks[0] for r in requests)
    assert len(starts) < 40  # few heads (system prompts, conversations' first blocks)
    extended = sum(1 for a in requests for b in requests
                   if len(b.blocks) > len(a.blocks) > 2 and b.blocks[:len(a.blocks) - 1]
                   == a.blocks[:-1] and b.line > a.line and b.blocks[0] != a.blocks[-1])
    assert extended > 50  # later turns repeat an earlier turn's full blocks


def test_arrivals_come_in_bursts_between_poisson_gaps() -> None:
    times = [r.arrival_ms for r in read_trace(sample_path())]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= 0
    assert sum(1 for g in gaps if g <= 3) > 60  # bursts
    assert max(gaps) > 500  # and quiet spells
