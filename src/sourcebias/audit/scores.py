"""Detector scores the user supplies: one score per document, keyed by ``(doc_id, source)``.

Two formats (``.gz`` too), chosen by the file name, or a ``sourcebias detect`` folder:

* **TSV** (``.tsv``): a header naming the columns ``doc_id``, ``source`` and ``score`` (in any
  order; other columns are ignored), then one row per document;
* **JSONL** (``.jsonl``): one object per line with ``doc_id``, ``source`` and ``score``.

A higher score means "more likely LLM-written" (a probability or any real number: the threshold is
chosen on the calibration documents). A document is named by its two keys, never by an id with a
source inside it. Problems stop with ``file:line``: a missing column, an empty key, a key with
whitespace, a score that is not a finite number, a document listed twice.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError, DataError

COLUMNS = ("doc_id", "source", "score")
_WHITESPACE = re.compile(r"\s")


def read_scores(path: str | Path) -> dict[tuple[str, str], float]:
    """``(doc_id, source) -> score`` from a TSV or JSONL file (see the module docs), or from the
    output folder of ``sourcebias detect`` (its documents with a finite score)."""
    path = Path(path)
    if path.is_dir():
        from sourcebias.detect import load_detection

        return load_detection(path).score_map()
    if not path.is_file():
        raise DataError(path, "file not found")
    name = path.name.removesuffix(".gz")
    if name.endswith(".jsonl"):
        rows = _jsonl_rows(path)
    elif name.endswith(".tsv"):
        rows = _tsv_rows(path)
    else:
        raise DataError(path, 'a score file is .tsv (header doc_id, source, score) or .jsonl ({"doc_id", "source", "score"})')
    out: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], int] = {}
    for lineno, doc_id, source, raw in rows:
        for what, v in (("doc_id", doc_id), ("source", source)):
            if not v:
                raise DataError(path, f"empty {what}", lineno)
            if _WHITESPACE.search(v):
                raise DataError(path, f"{what} '{v}' contains whitespace", lineno)
        score = _number(raw, path, lineno)
        key = (doc_id, source)
        if key in first:
            raise DataError(path, f"document ({doc_id}, {source}) is listed twice (first on line {first[key]})", lineno)
        first[key] = lineno
        out[key] = score
    if not out:
        raise DataError(path, "no scores in the file")
    return out


def _number(raw: Any, path: Path, lineno: int) -> float:
    if isinstance(raw, bool):
        raise DataError(path, f"score {raw!r} is not a number", lineno)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise DataError(path, f"score {raw!r} is not a number", lineno) from None
    if not math.isfinite(value):
        raise DataError(path, f"score {raw!r} is not finite", lineno)
    return value


def _tsv_rows(path: Path) -> Iterator[tuple[int, str, str, Any]]:
    from sourcebias.data.io import iter_lines

    index: dict[str, int] | None = None
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        cells = line.split("\t")
        if index is None:
            header = [c.strip() for c in cells]
            missing = [c for c in COLUMNS if c not in header]
            if missing:
                raise DataError(path, f"the header must name the columns {', '.join(COLUMNS)}; missing {', '.join(missing)} (header: {line!r})", lineno)
            index = {c: header.index(c) for c in COLUMNS}
            continue
        if len(cells) <= max(index.values()):
            raise DataError(path, f"expected at least {max(index.values()) + 1} tab-separated columns, got {len(cells)}", lineno)
        yield lineno, cells[index["doc_id"]], cells[index["source"]], cells[index["score"]].strip()


def _jsonl_rows(path: Path) -> Iterator[tuple[int, str, str, Any]]:
    from sourcebias.data.jsonl import iter_jsonl

    for lineno, rec in iter_jsonl(path):
        for c in COLUMNS:
            if c not in rec:
                raise DataError(path, f"missing field '{c}'", lineno)
        for c in ("doc_id", "source"):
            if not isinstance(rec[c], str):
                raise DataError(path, f"field '{c}' must be a string, got {type(rec[c]).__name__}", lineno)
        yield lineno, rec["doc_id"], rec["source"], rec["score"]


def require_scores(scores: dict[tuple[str, str], float], keys: Sequence[tuple[str, str]], what: str) -> np.ndarray:
    """The scores of ``keys``, in order; a :class:`ConfigError` naming how many (and the first
    few) documents of ``what`` have no score."""
    missing = [k for k in keys if k not in scores]
    if missing:
        shown = ", ".join(f"({d}, {s})" for d, s in missing[:3])
        raise ConfigError(f"{len(missing):,} document(s) of {what} have no score in the score file, e.g. {shown}")
    return np.array([scores[k] for k in keys], dtype=np.float64)


def read_keys(path: str | Path) -> list[tuple[str, str]]:
    """The documents ``(doc_id, source)`` a file names: TSV with a header naming ``doc_id`` and
    ``source`` (other columns ignored), or JSONL with those fields; each listed once."""
    from sourcebias.data.io import iter_lines

    path = Path(path)
    if not path.is_file():
        raise DataError(path, "file not found")
    out: dict[tuple[str, str], int] = {}
    index: dict[str, int] | None = None
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        if path.name.endswith((".jsonl", ".jsonl.gz")):
            import json

            rec = json.loads(line)
            key = (str(rec.get("doc_id", "")), str(rec.get("source", "")))
        elif index is None:
            header = [c.strip() for c in line.split("\t")]
            if "doc_id" not in header or "source" not in header:
                raise DataError(path, f"the header must name the columns doc_id and source (header: {line!r})", lineno)
            index = {c: header.index(c) for c in ("doc_id", "source")}
            continue
        else:
            cells = line.split("\t")
            if len(cells) <= max(index.values()):
                raise DataError(path, f"expected at least {max(index.values()) + 1} tab-separated columns, got {len(cells)}", lineno)
            key = (cells[index["doc_id"]].strip(), cells[index["source"]].strip())
        if not key[0] or not key[1]:
            raise DataError(path, "empty doc_id or source", lineno)
        if key in out:
            raise DataError(path, f"document ({key[0]}, {key[1]}) is listed twice (first on line {out[key]})", lineno)
        out[key] = lineno
    if not out:
        raise DataError(path, "no documents in the file")
    return list(out)
