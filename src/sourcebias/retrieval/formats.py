"""Other tools' files in and out: nested-JSON runs and per-document feature JSON Lines.

**Nested-JSON runs** ``{"<query_id>": {"<document name>": score, ...}, ...}`` are what BEIR's
``EvaluateRetrieval.retrieve`` returns and what the Cocktail code saves (``json.dump`` of those
results), and the shape of the nested-JSON runs of Huang et al.'s 2026 package. A mixed corpus
holds two copies of each ``doc_id``, so a bare ``doc_id`` cannot say which copy was ranked: the
Cocktail code and the 2026 package name a copy ``<doc_id>-<source>``. How a name maps to a
document is never guessed from the name: it is a :class:`~sourcebias.retrieval.run.DocnoMap` the
user names (``DocnoMap.from_pattern("{doc_id}-{source}", corpus)``, ``--docno-pattern
"{doc_id}-{source}"`` on the command line, or a ``docnos.tsv`` table), resolved by the one rule
of :func:`~sourcebias.retrieval.run.resolve_docnos`; a name that maps to no document stops with
``file:line``.

**Feature JSON Lines** ``{"_id": "<document name>", "value": 31.4}``, one document a line (the
2026 package's per-document perplexities), are read into a vector aligned with a corpus by
:func:`read_feature_jsonl`, through the same names.

Runs written here carry **tie-resolved, strictly decreasing scores** (:func:`tie_resolved_scores`):
tools that re-sort by score (trec_eval, ranx, PyTerrier, BEIR) then keep sourcebias' final order
instead of re-breaking ties by document name.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError, DataError
from sourcebias.data.corpus import Corpus
from sourcebias.retrieval.run import DocnoMap, Run, resolve_docnos, unknown_docno
from sourcebias.retrieval.ties import TieRule, tie_resolved_scores

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def nested_run(run: Run, docnos: DocnoMap | None = None, query_ids: list[str] | None = None) -> dict[str, dict[str, float]]:
    """``{query_id: {document name: tie-resolved score}}``, in rank order (queries with an empty
    ranking are left out; ``query_ids`` restricts and orders the queries)."""
    docnos = docnos or DocnoMap.sourcebias(run.corpus)
    if docnos.corpus is not run.corpus:
        raise ValueError("the docno map was built for another corpus")
    names = docnos.names
    out: dict[str, dict[str, float]] = {}
    for q in run.query_ids if query_ids is None else query_ids:
        pos = run.positions.get(q)
        if pos is None or len(pos) == 0:
            continue
        out[q] = dict(zip((names[i] for i in pos.tolist()), tie_resolved_scores(run.scores[q]).tolist()))
    return out


def write_json_run(run: Run, path: str | Path, docnos: DocnoMap | None = None, *, indent: int | None = 1) -> Path:
    """Write ``run`` as a nested-JSON run (BEIR / Cocktail results, the 2026 package's runs).

    Names come from ``docnos`` (default ``<source>/<doc_id>``; pass
    ``DocnoMap.from_pattern("{doc_id}-{source}", run.corpus)`` for the Cocktail code and the
    2026 package). Scores are tie-resolved (:func:`tie_resolved_scores`), written exactly.
    """
    from sourcebias.core.atomic import atomic_open

    body = nested_run(run, docnos)
    with atomic_open(path, "w") as fh:
        json.dump(body, fh, indent=indent)
        fh.write("\n")
    return Path(path)


def read_json_run(
    path: str | Path,
    corpus: Corpus,
    *,
    docnos: DocnoMap | None = None,
    docno_pattern: str | None = None,
    source_labels: dict[str, str] | None = None,
    name: str | None = None,
    seed: int = 0,
) -> Run:
    """Read a nested-JSON run ``{query_id: {name: score}}`` over ``corpus``.

    Names are mapped by ``docnos``, or else by :func:`~sourcebias.retrieval.run.resolve_docnos`
    with ``docno_pattern`` / ``source_labels`` (a ``docnos.tsv`` beside the file, or the
    ``<source>/<doc_id>`` names otherwise). Documents are ordered by score, equal scores by the
    tie rule with ``seed`` (as :meth:`Run.from_trec`). A name that maps to no document, a query
    or document given twice, or a score that is not a number stops with ``file:line``; a query
    with an empty object is kept as an empty ranking.
    """
    path = Path(path)
    docnos = _file_docnos(path, corpus, docnos, docno_pattern, source_labels)
    rule = TieRule(corpus, seed)
    positions: dict[str, np.ndarray] = {}
    scores: dict[str, np.ndarray] = {}
    n = 0
    for qid, entries in _iter_nested(path):
        plist: list[int] = []
        seen: dict[int, int] = {}
        for docno, _score, lineno in entries:
            pos = docnos.position(docno)
            if pos is None:
                raise DataError(path, unknown_docno(docno, docnos), lineno)
            if pos in seen:
                raise DataError(path, f"document '{docno}' is listed twice for query '{qid}' (first on line {seen[pos]})", lineno)
            seen[pos] = lineno
            plist.append(pos)
        p = np.asarray(plist, dtype=np.int64)
        s = np.asarray([e[1] for e in entries], dtype=np.float64)
        idx = rule.order(qid, s, p)
        positions[qid], scores[qid] = p[idx], s[idx]
        n += len(entries)
    if not positions:
        raise DataError(path, "empty run: no queries")
    info = {
        "source_file": str(path),
        "docnos": docnos.describe(),
        "lines": n,
        "order": f"ordered by score, ties by the tie rule (seed {seed})",
        "format": "nested JSON",
    }
    return Run(corpus, name or _stem(path), positions, scores, info)


def _file_docnos(path: Path, corpus: Corpus, docnos: DocnoMap | None, docno_pattern: str | None, source_labels: dict[str, str] | None) -> DocnoMap:
    """How the file ``path`` names documents: the map given, or else the one rule of
    :func:`~sourcebias.retrieval.run.resolve_docnos` (pattern, table beside the file, default)."""
    if docnos is None:
        return resolve_docnos(path, corpus, docno_pattern=docno_pattern, source_labels=source_labels)
    if docno_pattern is not None or source_labels:
        raise ConfigError("give a docno map or a docno pattern, not both")
    if docnos.corpus is not corpus:
        raise ValueError("the docno map was built for another corpus")
    return docnos


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".json", ".jsonl"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name or "run"


# -- a located reader of {str: {str: number}} ----------------------------------------------------
class _Cursor:
    """Walks a JSON text token by token (tokens decoded by :mod:`json` itself), knowing the
    line of each token, so that a problem in a nested-JSON run is reported as ``file:line``."""

    def __init__(self, text: str, path: Path):
        self.text, self.path, self.i = text, path, 0
        self._at, self._line = 0, 1

    def line(self, i: int | None = None) -> int:
        i = self.i if i is None else i
        if i < self._at:  # never happens walking forward; kept exact anyway
            self._at, self._line = 0, 1
        self._line += self.text.count("\n", self._at, i)
        self._at = i
        return self._line

    def peek(self) -> str:
        ws = _WS.match(self.text, self.i)  # (never None: the pattern matches the empty string)
        self.i = ws.end() if ws else self.i
        return self.text[self.i] if self.i < len(self.text) else ""

    def expect(self, ch: str, what: str) -> None:
        got = self.peek()
        if got != ch:
            raise DataError(
                self.path,
                f"expected {what}, got {repr(got) if got else 'the end of the file'} (a nested-JSON run is {{query_id: {{name: score}}}})",
                self.line(),
            )
        self.i += 1

    def value(self) -> tuple[Any, int]:
        self.peek()
        start = self.i
        try:
            v, self.i = _DECODER.raw_decode(self.text, self.i)
        except json.JSONDecodeError as exc:
            raise DataError(self.path, f"malformed JSON ({exc.msg})", self.line(start)) from None
        return v, self.line(start)

    def separator(self, close: str) -> bool:
        """After an entry: True if another follows (``,``), False at ``close``."""
        c = self.peek()
        if c == ",":
            self.i += 1
            return True
        self.expect(close, f"',' or '{close}'")
        return False


def _iter_nested(path: Path) -> Iterator[tuple[str, list[tuple[str, float, int]]]]:
    """``(query_id, [(name, score, line), ...])`` for each query of a nested-JSON run."""
    from sourcebias.data.io import open_text

    if not path.is_file():
        raise DataError(path, "file not found")
    with open_text(path) as fh:
        cur = _Cursor(fh.read(), path)
    cur.expect("{", "'{'")
    seen: dict[str, int] = {}
    more = cur.peek() != "}"
    if not more:
        cur.i += 1
    while more:
        qid, qline = cur.value()
        if not isinstance(qid, str):
            raise DataError(path, f"expected a query id (a string), got {qid!r}", qline)
        if qid in seen:
            raise DataError(path, f"query '{qid}' is given twice (first on line {seen[qid]})", qline)
        seen[qid] = qline
        cur.expect(":", "':'")
        cur.expect("{", f"'{{' opening the ranking of query '{qid}'")
        entries = list(_iter_entries(cur, qid)) if cur.peek() != "}" else []
        cur.expect("}", "'}'")
        yield qid, entries
        more = cur.separator("}")
    if cur.peek():
        raise DataError(path, "unexpected text after the run's JSON object", cur.line())


def _iter_entries(cur: _Cursor, qid: str) -> Iterator[tuple[str, float, int]]:
    while True:
        name, line = cur.value()
        if not isinstance(name, str):
            raise DataError(cur.path, f"expected a document name (a string) in query '{qid}', got {name!r}", line)
        cur.expect(":", "':'")
        score, sline = cur.value()
        if isinstance(score, bool) or not isinstance(score, (int, float)) or math.isnan(score):
            raise DataError(cur.path, f"the score of '{name}' in query '{qid}' is not a number: {score!r}", sline)
        yield name, float(score), line
        c = cur.peek()
        if c == ",":
            cur.i += 1
            continue
        return


# -- per-document features -------------------------------------------------------------------
def read_feature_jsonl(
    path: str | Path,
    corpus: Corpus,
    docnos: DocnoMap | None = None,
    *,
    docno_pattern: str | None = None,
    source_labels: dict[str, str] | None = None,
    id_field: str = "_id",
    value_field: str = "value",
) -> np.ndarray:
    """Per-document values ``{"_id": name, "value": x}`` (one JSON object a line; ``.gz`` too)
    as a float64 vector aligned with ``corpus`` (``out[i]`` is the value of ``corpus[i]``).

    Names map to documents by ``docnos`` or else :func:`~sourcebias.retrieval.run.resolve_docnos`
    (``docno_pattern`` such as ``"{doc_id}-{source}"``, a ``docnos.tsv`` beside the file, or
    ``<source>/<doc_id>``). A name that maps to no document, a document given twice, or a value
    that is not a finite number stops with ``file:line``; a document of ``corpus`` without a
    value stops with the count and an example.
    """
    from sourcebias.data.jsonl import iter_jsonl, require_str

    path = Path(path)
    docnos = _file_docnos(path, corpus, docnos, docno_pattern, source_labels)
    out = np.full(len(corpus), np.nan)
    line_of: dict[int, int] = {}
    for lineno, record in iter_jsonl(path):
        name = require_str(record, id_field, path, lineno, allow_empty=False)
        if value_field not in record:
            raise DataError(path, f"missing field '{value_field}'", lineno)
        value = record[value_field]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise DataError(path, f"field '{value_field}' of '{name}' must be a finite number, got {value!r}", lineno)
        pos = docnos.position(name)
        if pos is None:
            raise DataError(path, unknown_docno(name, docnos), lineno)
        if pos in line_of:
            raise DataError(path, f"document '{name}' is given twice (first on line {line_of[pos]})", lineno)
        line_of[pos] = lineno
        out[pos] = float(value)
    missing = np.flatnonzero(np.isnan(out))
    if len(missing):
        d = corpus[int(missing[0])]
        raise DataError(
            path, f"{len(missing)} of the {len(corpus)} documents have no value here, e.g. ({d.doc_id}, {d.source}) named '{docnos.names[int(missing[0])]}'"
        )
    return out


def write_feature_jsonl(values: np.ndarray, path: str | Path, corpus: Corpus, docnos: DocnoMap | None = None) -> Path:
    """Write per-document values (aligned with ``corpus``) as ``{"_id": name, "value": x}`` lines."""
    from sourcebias.core.atomic import atomic_open

    docnos = docnos or DocnoMap.sourcebias(corpus)
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (len(corpus),):
        raise ValueError(f"expected {len(corpus)} values (one per document), got shape {values.shape}")
    with atomic_open(path, "w") as fh:
        for name, v in zip(docnos.names, values.tolist()):
            fh.write(json.dumps({"_id": name, "value": v}) + "\n")
    return Path(path)
