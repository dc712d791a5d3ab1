"""The serving-trace reader (spec/traffic.md, "Trace formats"): both line
formats, one error naming the file and line for a bad line (exit 2 from
the front ends, nothing written), and a file larger than the memory a
process may use read as a stream."""

from __future__ import annotations

import gzip
import json
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from policyspec.cli import main
from policyspec.workload.reader import (
    BLOCK_TOKENS,
    TraceFormatError,
    block_key,
    read_trace,
    validate_trace,
)

MOONCAKE = [
    {"timestamp": 0, "input_length": 1100, "output_length": 7, "hash_ids": [0, 1, 2]},
    {"timestamp": 12, "input_length": 600, "output_length": 3, "hash_ids": [0, 3]},
]


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_mooncake_lines_are_requests_in_order(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", [json.dumps(r) for r in MOONCAKE])
    requests = list(read_trace(path))
    assert [(r.line, r.arrival_ms, r.input_tokens, r.output_tokens, r.blocks)
            for r in requests] == [(1, 0.0, 1100, 7, (0, 1, 2)), (2, 12.0, 600, 3, (0, 3))]


def test_policyspec_lines_name_blocks_by_number_or_string(tmp_path: Path) -> None:
    path = write(tmp_path / "own.jsonl", [
        json.dumps({"time_ms": 1.5, "blocks": ["system", 7], "output_tokens": 4}),
        "",  # blank lines are skipped
        json.dumps({"time_ms": 2, "blocks": ["system"]}),
    ])
    first, second = read_trace(path)
    assert first.blocks == ("system", 7) and first.input_tokens == 2 * BLOCK_TOKENS
    assert first.output_tokens == 4 and second.output_tokens == 0 and second.line == 3
    assert block_key("system") != block_key(7)
    assert block_key("system") == block_key("system") and len(block_key(7)) == 12


def test_gzip_files_are_read_through_gzip(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.writelines(json.dumps(r) + "\n" for r in MOONCAKE)
    assert validate_trace(path) == (2, 5)


BAD_LINES = [
    ("{", "not JSON"),
    ("[1, 2]", "a JSON list, not an object"),
    ('{"timestamp": 0, "input_length": 1, "output_length": 1}', "neither a Mooncake"),
    ('{"input_length": 1, "output_length": 1, "hash_ids": [1]}', "no field 'timestamp'"),
    ('{"timestamp": -1, "input_length": 1, "output_length": 1, "hash_ids": [1]}',
     "timestamp is -1"),
    ('{"timestamp": 0, "input_length": true, "output_length": 1, "hash_ids": [1]}',
     "input_length is true"),
    ('{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": 5}',
     "hash_ids is a number"),
    ('{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": ["a"]}',
     'hash_ids[0] is "a"'),
    ('{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [3, 4, 3]}',
     "names block 3 twice"),
    ('{"time_ms": 0, "blocks": [1.5]}', "blocks[0] is 1.5"),
    ('{"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [1]}',
     "before the line above"),
]


@pytest.mark.parametrize(("line", "problem"), BAD_LINES)
def test_a_bad_line_is_one_error_naming_file_and_line(tmp_path: Path, line: str,
                                                      problem: str) -> None:
    good = json.dumps({"timestamp": 10, "input_length": 1, "output_length": 1, "hash_ids": [9]})
    path = write(tmp_path / "bad.jsonl", [good, line])
    with pytest.raises(TraceFormatError) as raised:
        validate_trace(path)
    assert raised.value.line == 2
    assert str(raised.value).startswith(f"{path}, line 2: ")
    assert problem in str(raised.value)


def test_bytes_that_are_not_utf8_are_named(tmp_path: Path) -> None:
    path = tmp_path / "bin.jsonl"
    path.write_bytes(b'{"time_ms": 0, "blocks": [1]}\n\xff\xfe\n')
    with pytest.raises(TraceFormatError, match="line 2: not UTF-8"):
        validate_trace(path)


@pytest.mark.parametrize("command", [
    ["simulate", "--requests", "5"],
    ["check", "policyspec.reference:LRU033CachePolicy", "--engine", "trace", "--budget", "1"],
])
def test_front_ends_stop_at_a_bad_line_with_exit_2_and_write_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    lines = [json.dumps(r) for r in MOONCAKE] + ['{"timestamp": 20, "hash_ids": [1]}']
    path = write(tmp_path / "bad.jsonl", lines)
    report = tmp_path / "out.json"
    code = main([*command, "--trace", str(path), "--json-report", str(report)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == [f"policyspec: error: {path}, line 3: no field 'input_length'"]
    assert not report.exists()


_STREAM = textwrap.dedent("""
    import resource, sys
    limit = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from policyspec.workload.player import Player
    from policyspec.workload.reader import read_trace

    class Stored:
        keys_to_store = evicted_keys = ()

    class Manager:  # every call answered as vLLM's manager could, keeping nothing
        def on_new_request(self, ctx): pass
        def lookup(self, key, ctx): return "MISS"
        def prepare_store(self, keys, ctx): return Stored
        def on_request_finished(self, ctx): pass

    counts = Player(Manager(), read_trace(sys.argv[1])).run()
    print(counts.requests, counts.blocks)
""")


def test_a_trace_larger_than_the_memory_limit_streams(tmp_path: Path) -> None:
    """A child process whose address space is limited to its start-up size
    plus 32 MiB plays (reader and player) a trace file larger than that
    whole limit. Each line carries a field the reader ignores, so that the
    file is large and the play short; the requests are still many enough
    (over 35,000) that keeping them, or anything per request, would not fit."""
    probe = subprocess.run(
        [sys.executable, "-c", "import policyspec.workload.player, resource; "
         "print(open('/proc/self/statm').read().split()[0])"],
        check=True, capture_output=True, text=True)
    start = int(probe.stdout) * resource.getpagesize()
    limit = start + (32 << 20)
    path = tmp_path / "big.jsonl"
    line_blocks = 20
    requests = 0
    padding = "x" * 1400
    with open(path, "w", encoding="ascii") as out:
        while out.tell() < limit + (4 << 20):
            lines = []
            for _ in range(2000):
                first = requests * line_blocks
                lines.append(json.dumps({
                    "timestamp": requests * 100_000, "input_length": line_blocks * 512,
                    "output_length": 0, "hash_ids": list(range(first, first + line_blocks)),
                    "padding": padding}))
                requests += 1
            out.write("\n".join(lines) + "\n")
    assert path.stat().st_size > limit and requests >= 35_000
    done = subprocess.run([sys.executable, "-c", _STREAM, str(path), str(limit)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [str(requests), str(requests * line_blocks)]
