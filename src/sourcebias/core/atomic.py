"""Atomic file writes: write to a temporary file beside the target, then rename it into place.

A reader (or a rerun after a crash) sees either the old file or the complete new one, never a
half-written file. The temporary name carries the process id, so concurrent writers of the same
target do not clobber each other's temporary files (the last rename wins, each file whole).
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any


def _tmp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp{os.getpid()}")


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", *, encoding: str | None = "utf-8", newline: str | None = None, fsync: bool = False) -> Iterator[IO[Any]]:
    """Open a temporary file for writing; on a clean exit it replaces ``path``.

    On an exception the temporary file is removed and ``path`` is left as it was.
    """
    if "w" not in mode:
        raise ValueError("atomic_open writes a whole file: mode must contain 'w'")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_path(path)
    fh = tmp.open(mode, encoding=None if "b" in mode else encoding, newline=newline)
    try:
        yield fh
        fh.flush()
        if fsync:
            os.fsync(fh.fileno())
        fh.close()
        os.replace(tmp, path)
    except BaseException:
        fh.close()
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str, *, encoding: str = "utf-8") -> Path:
    with atomic_open(path, "w", encoding=encoding) as fh:
        fh.write(text)
    return Path(path)


def atomic_write_json(path: str | Path, obj: Any, *, indent: int | None = 2) -> Path:
    """JSON with a trailing newline; objects that JSON cannot encode are written with ``str``."""
    return atomic_write_text(path, json.dumps(obj, indent=indent, default=str, ensure_ascii=False) + "\n")


def read_json_file(path: str | Path, *, default_name: str | None = None, missing: str = "not found") -> tuple[Path, Any]:
    """``(path, object)`` of a JSON file (``path/default_name`` when ``path`` is a folder); a
    missing file or invalid JSON is a :class:`~sourcebias.core.errors.DataError` naming the file."""
    from sourcebias.core.errors import DataError

    path = Path(path)
    if path.is_dir() and default_name:
        path = path / default_name
    if not path.is_file():
        raise DataError(path, missing)
    try:
        return path, json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DataError(path, f"not valid JSON ({exc})") from None


def csv_cell(v: Any) -> Any:
    """A value as a CSV cell that reads back exactly: a float as its ``repr`` (``nan`` for NaN), a
    dict or list as JSON, anything else as it is (``None`` an empty cell)."""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else repr(v)
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return v


def write_csv(path: str | Path, columns: tuple[str, ...], rows: Iterable[Mapping[str, Any]]) -> Path:
    """The one writer of sourcebias' table files: ``columns`` as the header, a line per row (a
    missing field an empty cell), each cell as :func:`csv_cell` writes it; atomically.

    Args:
        path: The file.
        columns: The header, in order.
        rows: One mapping per row.

    Returns:
        ``path``.
    """
    with atomic_open(path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow([csv_cell(r.get(c)) for c in columns])
    return Path(path)
