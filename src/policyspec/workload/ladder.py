"""The gap between a plain cache simulator and vLLM's manager, measured a
mechanism at a time (spec/traffic.md, "Plain caching and the gap"), so that
a reader can tell a gap the manager explains from a bug: the reference LRU
and ARC on the bundled sample, the mechanisms switched on in turn
(``STEPS``). ``python -m policyspec.workload.ladder --write spec/traffic.md``
rewrites the page's table; tests/test_simulate_plain.py holds it true.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from policyspec.adapters import load_subject
from policyspec.adapters.blocks import req_context_class
from policyspec.vllm import standins
from policyspec.workload.player import Player, Timing, manager_class, play_in_turn
from policyspec.workload.ports import Chunk, driven_policy
from policyspec.workload.reader import read_trace
from policyspec.workload.sample import sample_path

__all__ = [
    "BEGIN", "END", "POLICIES", "SIZES", "STEPS", "block_ids", "hit_rate", "ladder_markdown",
    "libcachesim_hits", "main", "page_table",
]

STEPS: tuple[tuple[str, str, int], ...] = (
    ("plain: every block a request, one eviction per insert", "plain", 1),
    ("+ requests: one context per request, hit prefix only", "requests", 1),
    ("+ batched stores: 4 blocks per offer, one evict per offer", "batches", 1),
    ("+ time: overlap, blocks in flight (vLLM 0.34.0's manager)", "vllm", 1),
    ("+ store threshold 2", "vllm", 2),
)
"""Each row's label, its ``--semantics`` and its store threshold."""

POLICIES = (("LRU", "policyspec.reference:LRU034CachePolicy", "LRU"),
            ("ARC", "policyspec.reference:ARC034CachePolicy", "ARC"))
"""Each column group's name, the policy, and libCacheSim's cache of the
same name."""
SIZES = (256, 1024, 4096)
"""The bundled sample's default sizes (``simulate`` without ``--capacity``)."""

BEGIN = "<!-- ladder: begin (python -m policyspec.workload.ladder --write) -->"
END = "<!-- ladder: end -->"


def hit_rate(target: str, capacity: int, semantics: str, store_threshold: int = 1,
             trace: str | None = None) -> tuple[int, int]:
    """(blocks hit, blocks named) of one play of ``trace`` (the bundled
    sample) by the policy ``target`` at ``capacity``, as ``simulate`` plays
    it with these options."""
    subject = load_subject(target)
    path = trace or str(sample_path())
    with standins.installed():
        manager = manager_class(subject.api)(driven_policy(subject, capacity), capacity,
                                             store_threshold=store_threshold, chunk_type=Chunk)
        if semantics == "vllm":
            counts = Player(manager, read_trace(path), timing=Timing(),
                            new_context=req_context_class()).run()
        else:
            counts = play_in_turn(manager, read_trace(path), semantics=semantics,
                                  new_context=req_context_class())
    return counts.hit_blocks, counts.blocks


def block_ids(trace: str | None = None) -> list[int]:
    """The trace's block references in order, each block numbered from 1 by
    its first appearance: what a plain simulator is given."""
    ids: dict[object, int] = {}
    return [ids.setdefault(block, len(ids) + 1)
            for request in read_trace(trace or str(sample_path())) for block in request.blocks]


def libcachesim_hits(cache: str, capacity: int, ids: Sequence[int]) -> int:
    """Hits of libCacheSim's ``cache`` (a class name: ``LRU``, ``FIFO``,
    ``ARC``) of ``capacity`` objects of size 1 over ``ids``, every block
    reference a request (ImportError without libcachesim, a test extra)."""
    import libcachesim  # type: ignore[import-untyped, import-not-found, unused-ignore]

    simulator = getattr(libcachesim, cache)(cache_size=capacity)
    request = libcachesim.Request
    return sum(1 for block in ids if simulator.get(request(obj_size=1, obj_id=block)))


def ladder_markdown(sizes: Sequence[int] = SIZES) -> str:
    """The table: libCacheSim's row, then a row per step, a column per
    policy and size (block hit rates, two decimals of a percent)."""
    head = ["step"] + [f"{name} {size:,}" for name, _, _ in POLICIES for size in sizes]
    lines = ["| " + " | ".join(head) + " |",
             "|---" + "|---:" * (len(head) - 1) + "|"]
    ids = block_ids()
    import libcachesim  # type: ignore[import-untyped, import-not-found, unused-ignore]

    rates = [f"{libcachesim_hits(cache, size, ids) / len(ids):.2%}"
             for _, _, cache in POLICIES for size in sizes]
    lines.append(f"| libCacheSim {libcachesim.__version__} (its LRU, its ARC) | "
                 + " | ".join(rates) + " |")
    for label, semantics, threshold in STEPS:
        rates = []
        for _, target, _ in POLICIES:
            for size in sizes:
                hits, blocks = hit_rate(target, size, semantics, threshold)
                rates.append(f"{hits / blocks:.2%}")
        lines.append(f"| {label} | " + " | ".join(rates) + " |")
    return "\n".join(lines) + "\n"


def page_table(text: str) -> str:
    """The table between ``BEGIN`` and ``END`` on a page (ValueError when
    the markers are missing)."""
    match = re.search(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), text, re.S)
    if match is None:
        raise ValueError("no ladder table (its begin and end markers) on the page")
    return match.group(1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m policyspec.workload.ladder",
        description="Print the table of hit rates with vLLM's mechanisms switched on in turn; "
        "with --write, replace the copy between its markers on a page.")
    parser.add_argument("--write", metavar="PAGE", help="the page to rewrite (spec/traffic.md)")
    args = parser.parse_args(argv)
    try:
        table = ladder_markdown()
    except ImportError:
        print("the table compares with libCacheSim, which is not installed "
              "(pip install -e '.[test]')", file=sys.stderr)
        return 2
    if args.write is None:
        sys.stdout.write(table)
        return 0
    page = Path(args.write)
    text = page.read_text(encoding="utf-8")
    try:
        old = page_table(text)
    except ValueError as exc:
        print(f"{args.write}: {exc}", file=sys.stderr)
        return 2
    page.write_text(text.replace(BEGIN + "\n" + old + END, BEGIN + "\n" + table + END),
                    encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
