"""Opening data files: plain or gzip-compressed (``.gz``), always as UTF-8 text.

BEIR and many corpora ship ``corpus.jsonl.gz``; every reader of sourcebias goes through
:func:`open_text`, so compressed and plain files are read the same way. A UTF-8 byte-order mark
at the start of a file is removed (``utf-8-sig``), since it would otherwise become part of the
first record.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import IO

COMPRESSED_SUFFIXES = (".gz",)


def open_text(path: str | Path, newline: str | None = None) -> IO[str]:
    """Open ``path`` for reading text; ``.gz`` files are decompressed on the fly."""
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig", newline=newline)
    return path.open("r", encoding="utf-8-sig", newline=newline)


def strip_compression(name: str) -> str:
    """``corpus.jsonl.gz`` -> ``corpus.jsonl``."""
    for suffix in COMPRESSED_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def iter_lines(path: str | Path):
    """``(line_number, text)`` for each line of a (possibly gzipped) UTF-8 file, newline removed.

    Lines are decoded one at a time, so a byte that is not UTF-8 is reported with its line
    (:class:`~sourcebias.core.errors.DataError`), and so is a truncated or corrupt ``.gz`` file.
    """
    from sourcebias.core.errors import DataError

    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    lineno = 0
    try:
        with opener(path, "rb") as fh:
            for raw in fh:
                lineno += 1
                if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]  # a UTF-8 byte-order mark
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise DataError(path, f"not UTF-8 text (byte {raw[exc.start : exc.start + 1]!r} at column {exc.start + 1})", lineno) from None
                yield lineno, text.rstrip("\n").rstrip("\r")
    except (OSError, EOFError) as exc:  # gzip: not a gzip file, or cut short
        raise DataError(path, f"cannot read the file ({exc})", lineno + 1) from None
