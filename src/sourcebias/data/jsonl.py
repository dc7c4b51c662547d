"""Line-numbered JSON Lines reading and crash-safe appending.

The standard library parses each line; what is added here is the bookkeeping users need
when a file is wrong (the file and line of the problem) and the append discipline that
resumable jobs rely on (a record is one flushed line; a torn last line is detectable).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sourcebias.core.errors import DataError


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for each non-blank line of a JSON Lines file (``.gz`` too).

    Raises :class:`DataError` naming the file and line for malformed JSON or a line that is
    not a JSON object. Blank lines carry no data and are passed over.
    """
    from sourcebias.data.io import iter_lines

    path = Path(path)
    if not path.is_file():
        raise DataError(path, "file not found")
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            # json's own messages may end in "at" ("Unterminated string starting at"): the column completes them
            where = f"column {exc.colno}" if exc.msg.endswith(" at") else f"at column {exc.colno}"
            raise DataError(path, f"malformed JSON ({exc.msg} {where})", lineno) from None
        if not isinstance(record, dict):
            raise DataError(path, f"expected a JSON object, got {type(record).__name__}", lineno)
        yield lineno, record


def require_str(record: dict[str, Any], field: str, path: Path, lineno: int, *, allow_empty: bool) -> str:
    """Return ``record[field]`` as a string, or raise a located :class:`DataError`."""
    if field not in record:
        raise DataError(path, f"missing field '{field}'", lineno)
    value = record[field]
    if value is None:
        if not allow_empty:
            raise DataError(path, f"field '{field}' is null (expected a string)", lineno)
        value = ""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and field == "_id":
        value = str(value)  # BEIR corpora with numeric ids exist; an id is a string to us.
    if not isinstance(value, str):
        raise DataError(path, f"field '{field}' must be a string, got {type(value).__name__}", lineno)
    if not allow_empty and not value.strip():
        raise DataError(path, f"field '{field}' is empty", lineno)
    return value


def repair_torn_tail(path: str | Path) -> int:
    """Truncate a half-written last line (no trailing newline, or not valid JSON).

    A process killed while appending can leave a partial final line. This removes it so the
    file is valid JSON Lines again and returns the number of bytes removed (0 if none).
    """
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        return 0
    with path.open("rb+") as fh:
        size = fh.seek(0, os.SEEK_END)
        # Find the start of the last line.
        pos = size
        chunk = 4096
        tail = b""
        while pos > 0:
            step = min(chunk, pos)
            pos -= step
            fh.seek(pos)
            tail = fh.read(step) + tail
            idx = tail.rstrip(b"\n").rfind(b"\n")
            if idx != -1:
                start = pos + idx + 1
                break
        else:
            start = 0
        fh.seek(start)
        last = fh.read()
        complete = last.endswith(b"\n")
        if complete:
            try:
                json.loads(last)
                return 0
            except ValueError:
                pass
        fh.truncate(start)
        return size - start


class JsonlAppender:
    """Append records as single flushed lines; safe against a kill between records.

    Each :meth:`write` serialises the record to one line and writes it with a single
    ``write`` call followed by ``flush`` and (optionally) ``fsync``, so a crash leaves at most
    one torn final line, which :func:`repair_torn_tail` removes on the next open.
    """

    def __init__(self, path: str | Path, *, fsync: bool = False):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.removed_bytes = repair_torn_tail(self.path)
        self._fh = self.path.open("a", encoding="utf-8")
        self._fsync = fsync

    def write(self, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._fh.flush()
        if self._fsync:
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
