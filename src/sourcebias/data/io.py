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
