"""Writing a history to disk: buffered, with a size limit per segment and
rotation (spec/history.md, "Segments").

The guard appends each record's text to a list and hands full buffers,
joined, to ``SegmentWriter.write``. A segment that has grown past
``max_bytes`` is closed and the next one starts with a header carrying the
judge's state at that call, so that any suffix of the segments can be
judged on its own; at most ``keep`` segments stay on disk, the oldest go.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

__all__ = ["DEFAULT_KEEP", "DEFAULT_MAX_BYTES", "SegmentWriter", "segment_path"]

DEFAULT_MAX_BYTES = 256 << 20
"""Bytes per segment before rotation."""
DEFAULT_KEEP = 8
"""Segments kept on disk (the oldest are deleted)."""


def segment_path(path: Path, segment: int) -> Path:
    """Segment 0 is ``path`` itself, segment n is ``path.NNNNNN`` (so that
    the segments sort in order by name)."""
    return path if segment == 0 else path.with_name(f"{path.name}.{segment:06d}")


class SegmentWriter:
    """The files of one history (module doc). ``header`` makes the header
    object of segment ``n`` (called at each rotation)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        header: Callable[[int], dict[str, Any]],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        keep: int = DEFAULT_KEEP,
    ) -> None:
        self.path = Path(path)
        self.header = header
        self.max_bytes = max(max_bytes, 1)
        self.keep = max(keep, 1)
        self.segment = -1
        self.written = 0
        self.file: IO[str] | None = None
        self.rotations = 0

    def _open(self) -> IO[str]:
        self.segment += 1
        if self.segment >= self.keep:
            old = segment_path(self.path, self.segment - self.keep)
            old.unlink(missing_ok=True)
        target = segment_path(self.path, self.segment)
        target.parent.mkdir(parents=True, exist_ok=True)
        file = open(target, "w", encoding="ascii")  # noqa: SIM115 (kept open)
        line = json.dumps(self.header(self.segment), separators=(",", ":")) + "\n"
        file.write(line)
        self.written = len(line)
        self.file = file
        return file

    def write(self, text: str) -> None:
        """Append encoded records; when the segment is full, close it and
        open the next at once, its header made now (after these records: a
        buffer is never split, so a segment ends on a record)."""
        file = self.file or self._open()
        file.write(text)
        self.written += len(text)
        if self.written >= self.max_bytes:
            file.close()
            self.file = None
            self.rotations += 1
            self._open()

    def flush(self) -> None:
        if self.file is not None:
            self.file.flush()

    def close(self) -> None:
        if self.file is None and self.segment < 0:
            self._open()  # an empty history still has its header
        if self.file is not None:
            self.file.close()
            self.file = None
