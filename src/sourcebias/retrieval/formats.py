"""Run files in and out: TREC runs, nested-JSON runs, and per-document feature JSON Lines.

**TREC runs** ``qid Q0 docno rank score tag`` (trec_eval's format; ``.gz`` too) are read by
:func:`read_trec` and written by :func:`write_trec` (:meth:`Run.from_trec` and :meth:`Run.write_trec`
call them): documents ordered by score and equal scores by the tie rule, never by the rank column
or by name; scores written with as many digits as they need to read back exactly.

**Nested-JSON runs** ``{"<query_id>": {"<document name>": score, ...}, ...}`` are what BEIR's
``EvaluateRetrieval.retrieve`` returns and what the Cocktail code saves (``json.dump`` of those
results), and the shape of the nested-JSON runs of Huang et al.'s 2026 package. A mixed corpus
holds two copies of each ``doc_id``, so a bare ``doc_id`` cannot say which copy was ranked: the
Cocktail code and the 2026 package name a copy ``<doc_id>-<source>``. How a name maps to a
document is never guessed from the name: it is a :class:`~sourcebias.retrieval.docnos.DocnoMap` the
user names (``DocnoMap.from_pattern("{doc_id}-{source}", corpus)``, ``--docno-pattern
"{doc_id}-{source}"`` on the command line, or a ``docnos.tsv`` table), resolved by the one rule
of :func:`~sourcebias.retrieval.docnos.resolve_docnos`; a name that maps to no document stops with
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError, DataError
from sourcebias.core.moved import moved
from sourcebias.data.corpus import Corpus
from sourcebias.data.io import iter_lines
from sourcebias.retrieval.docnos import WHITESPACE, DocnoMap, resolve_docnos, unknown_docno
from sourcebias.retrieval.ties import TieRule, tie_resolved_scores
from sourcebias.retrieval.trec_bulk import read_trec_bulk, worth_it

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def nested_run(run: Any, docnos: DocnoMap | None = None, query_ids: list[str] | None = None) -> dict[str, dict[str, float]]:
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


def write_json_run(run: Any, path: str | Path, docnos: DocnoMap | None = None, *, indent: int | None = 1) -> Path:
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


def read_json(
    path: str | Path,
    corpus: Corpus,
    *,
    docnos: DocnoMap | None = None,
    docno_pattern: str | None = None,
    source_labels: dict[str, str] | None = None,
    seed: int = 0,
) -> tuple[str, dict[str, np.ndarray], dict[str, np.ndarray], dict[str, Any]]:
    """Read a nested-JSON run ``{query_id: {name: score}}`` over ``corpus``.

    Names are mapped by ``docnos``, or else by :func:`~sourcebias.retrieval.docnos.resolve_docnos`
    with ``docno_pattern`` / ``source_labels`` (a ``docnos.tsv`` beside the file, or the
    ``<source>/<doc_id>`` names otherwise). Documents are ordered by score, equal scores by the
    tie rule with ``seed`` (as :meth:`Run.from_trec`). A name that maps to no document, a query
    or document given twice, or a score that is not a number stops with ``file:line``; a query
    with an empty object is kept as an empty ranking.

    Returns ``(name, positions, scores, info)``: the file's name without its suffixes, per query the
    corpus positions and scores in their final order, and what the run's ``info`` records
    (:func:`sourcebias.retrieval.run.read_json_run` builds the :class:`~sourcebias.retrieval.run.Run`).
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
    return _stem(path), positions, scores, info


def _file_docnos(path: Path, corpus: Corpus, docnos: DocnoMap | None, docno_pattern: str | None, source_labels: dict[str, str] | None) -> DocnoMap:
    """How the file ``path`` names documents: the map given, or else the one rule of
    :func:`~sourcebias.retrieval.docnos.resolve_docnos` (pattern, table beside the file, default)."""
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

    Names map to documents by ``docnos`` or else :func:`~sourcebias.retrieval.docnos.resolve_docnos`
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


# -- TREC runs ------------------------------------------------------------------------------------
def write_trec(run: Any, path: str | Path, docnos: DocnoMap | None = None, tag: str | None = None) -> None:
    """Write ``run`` as a TREC run ``qid Q0 docno rank score tag``: what :meth:`Run.write_trec` does
    (its arguments and errors; scores with as many digits as their type needs to read back exactly)."""
    from sourcebias.core.atomic import atomic_open

    docnos = docnos or DocnoMap.sourcebias(run.corpus)
    names = docnos.names
    tag = re.sub(r"\s+", "_", tag or run.name) or "run"
    spaced = [q for q in run.positions if WHITESPACE.search(q)]
    if spaced:
        raise ConfigError(f"run '{run.name}': query id {spaced[0]!r} contains whitespace, which a TREC run cannot hold ({len(spaced)} such queries)")
    ranked = [q for q, pos in run.positions.items() if len(pos)]
    # every distinct score of the run formatted in one call; each line looks its text up, so
    # the run's 7 million lines at MS MARCO's size never exist as 7 million strings at once
    table, index = _score_table(run._score_dtype())(np.concatenate([run.scores[q] for q in ranked]) if ranked else [])
    # each line is four pieces: "qid Q0 ", "docno ", "rank ", "score tag\n"; the last three are
    # made once (per document, rank and distinct score) and each query's lines are one join
    for i, t in enumerate(table):  # in place: the distinct scores' texts and their tails are never two lists at once (3 million each at 300,000 documents)
        table[i] = f"{t} {tag}\n"
    score_tail = table.__getitem__
    name_of = [f"{n} " for n in names].__getitem__
    ranks = [f"{r} " for r in range(1, 1 + max((len(p) for p in run.positions.values()), default=0))]
    start = 0
    with atomic_open(path, "w") as fh:
        for q in ranked:
            pos = run.positions[q].tolist()
            end = start + len(pos)
            pieces = [f"{q} Q0 "] * (4 * len(pos))
            pieces[1::4] = map(name_of, pos)
            pieces[2::4] = ranks[: len(pos)]
            pieces[3::4] = map(score_tail, index[start:end].tolist())
            fh.write("".join(pieces))
            start = end


def read_trec(
    path: str | Path,
    corpus: Corpus,
    *,
    docnos: DocnoMap | None = None,
    seed: int = 0,
    order: str = "score",
) -> tuple[str, dict[str, np.ndarray], dict[str, np.ndarray], dict[str, Any]]:
    """Read a TREC run (``.gz`` too): what :meth:`Run.from_trec` builds its run from (its arguments and
    errors; equal scores ordered by the tie rule, never by the rank column or by name).

    Returns ``(name, positions, scores, info)``: the file's name without its suffixes, per query the
    corpus positions and scores in their final order, and what the run's ``info`` records.
    """
    if order not in ("score", "rank"):
        raise ConfigError(f"order must be 'score' or 'rank', got '{order}'")
    path = Path(path)
    docnos = docnos or DocnoMap.sourcebias(corpus)
    if docnos.corpus is not corpus:
        raise ValueError("the docno map was built for another corpus")
    bulk = read_trec_bulk(path, docnos, order) if worth_it(path) else None  # None: a fault, named below
    per_query, n = bulk if bulk is not None else _read_trec(path, docnos, order)
    rule = TieRule(corpus, seed) if order == "score" else None  # the rank order needs no tie rule (it hashes every document)
    positions: dict[str, np.ndarray] = {}
    scores: dict[str, np.ndarray] = {}
    for q, (plist, slist, rlist) in per_query.items():
        p = np.asarray(plist, dtype=np.int64)
        s = np.asarray(slist, dtype=np.float64)
        idx = np.argsort(np.asarray(rlist, dtype=np.int64), kind="stable") if rule is None else rule.order(q, s, p)
        positions[q], scores[q] = p[idx], s[idx]
    ties = f"ordered by score, ties by the tie rule (seed {seed})" if order == "score" else "the file's rank order"
    info = {"source_file": str(path), "docnos": docnos.describe(), "lines": n, "order": ties}
    return _run_name(path), positions, scores, info


def _read_trec(path: Path, docnos: DocnoMap, order: str) -> tuple[dict[str, tuple[list[int], list[float], list[int]]], int]:
    """Per query, the listed corpus positions, scores and ranks in the file's order; and the number of entries.

    Every malformed line stops with file:line (:mod:`.trec_bulk` reads clean files faster, the
    same values).
    """
    per_query: dict[str, tuple[list[int], list[float], list[int]]] = {}
    seen: dict[str, dict[int, int]] = {}  # per query, the line of each position
    ranks: dict[str, dict[int, int]] = {}
    n = 0
    for lineno, line in iter_lines(path):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            spaced = " (a query or document id cannot contain whitespace)" if len(parts) > 6 else ""
            raise DataError(path, f"expected 6 columns (qid Q0 docno rank score tag), got {len(parts)}{spaced}", lineno)
        qid, _, docno, rank_s, score_s, _tag = parts
        try:
            score = float(score_s)
        except ValueError:
            raise DataError(path, f"score '{score_s}' is not a number", lineno) from None
        try:
            rank = int(rank_s)
        except ValueError:
            raise DataError(path, f"rank '{rank_s}' is not an integer", lineno) from None
        pos = docnos.position(docno)
        if pos is None:
            raise DataError(path, unknown_docno(docno, docnos), lineno)
        plist, slist, rlist = per_query.setdefault(qid, ([], [], []))
        lines = seen.setdefault(qid, {})
        if pos in lines:
            raise DataError(path, f"document '{docno}' is listed twice for query '{qid}' (first on line {lines[pos]})", lineno)
        lines[pos] = lineno
        if order == "rank":
            rq = ranks.setdefault(qid, {})
            if rank in rq:
                raise DataError(path, f"rank {rank} is used twice for query '{qid}' (first on line {rq[rank]})", lineno)
            rq[rank] = lineno
        plist.append(pos)
        slist.append(score)
        rlist.append(rank)
        n += 1
    if n == 0:
        raise DataError(path, "empty run: no ranked documents")
    return per_query, n


def _run_name(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".trec", ".run", ".txt", ".tsv"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name or "run"


def _score_formatter(dtype: np.dtype) -> Callable[[Any], list[str]]:
    """Scores -> the shortest texts that read back to the same values of the scores' type.

    float32: ``astype(str)``, numpy's shortest float32 repr, the text of ``str(np.float32(s))``
    for every value, in one call, computed once per distinct value (bit pattern: ``-0.0`` and
    ``0.0`` stay apart): BM25's scores repeat (one-byte length norms), e.g. 110,534 distinct
    values among nfcorpus's 399,636 scores.
    """
    if dtype == np.float32:
        return _float32_texts
    return lambda scores: [repr(s) for s in np.asarray(scores).tolist()]


def _score_table(dtype: Any) -> Callable[[Any], tuple[list[str], np.ndarray]]:
    """As :func:`_score_formatter`, as ``(texts, index)``.

    Score ``i``'s text is ``texts[index[i]]`` (float32: the distinct values' texts only).
    """
    if dtype == np.float32:
        return _float32_table

    def table(scores: Any) -> tuple[list[str], np.ndarray]:
        texts = [repr(s) for s in np.asarray(scores).tolist()]
        return texts, np.arange(len(texts))

    return table


#: Distinct scores whose texts :func:`_float32_table` makes at once: numpy's ``astype(str)`` holds
#: 128 bytes a value (400 MB for the 3 million distinct scores of a run of 6,979 queries over
#: 300,000 documents, the peak of that evaluation) before the list of texts is made.
FLOAT_TEXT_BLOCK = 1 << 16


def _float32_table(scores: Any) -> tuple[list[str], np.ndarray]:
    bits = np.ascontiguousarray(scores, dtype=np.float32).view(np.uint32)
    distinct, index = _unique_inverse(bits)
    values = distinct.view(np.float32)
    texts: list[str] = []
    for start in range(0, len(values), FLOAT_TEXT_BLOCK):
        texts += values[start : start + FLOAT_TEXT_BLOCK].astype(str).tolist()
    return texts, index.reshape(-1)


def _unique_inverse(bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``numpy.unique(bits, return_inverse=True)`` of 32-bit values (the inverse as int32), by one
    sort of 64-bit keys (the value above its index) instead of an argsort and its gathers: 0.7 s
    where numpy took 1.0-1.3 s for the 7 million scores of one run of 6,979 queries (most of them
    distinct), and about 17 bytes a score at its peak where numpy's holds about 33 (144 MB against
    255 MB there)."""
    n = len(bits)
    if n == 0 or n >= 1 << 31:
        distinct, index = np.unique(bits, return_inverse=True)
        return distinct, index.reshape(-1)
    key = bits.astype(np.uint64)
    key <<= np.uint64(32)
    key |= np.arange(n, dtype=np.uint64)
    key.sort()
    ordered = key.view(np.uint32)[1::2] if np.little_endian else key.view(np.uint32)[0::2]  # the values, sorted: a view
    first = np.empty(n, dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    distinct = ordered[first]
    key &= np.uint64(0xFFFFFFFF)  # now each sorted value's index in ``bits``
    ids = np.cumsum(first, dtype=np.int32)
    del first
    ids -= 1
    index = np.empty(n, dtype=np.int32)
    index[key.view(np.int64)] = ids
    return distinct, index


def _float32_texts(scores: Any) -> list[str]:
    """``str(np.float32(s))`` of each score (see :func:`_score_formatter`)."""
    bits = np.ascontiguousarray(scores, dtype=np.float32).view(np.uint32)
    distinct, index = _unique_inverse(bits)
    texts: list[str] = distinct.view(np.float32).astype(str)[index].tolist()
    return texts


_MOVED = {"read_json_run": "sourcebias.retrieval.run"}  # builds a Run, so it lives beside it (one release)
__getattr__ = moved(__name__, _MOVED)
