"""Ranked lists (a "run") over one corpus, in the final order of the tie rule (:mod:`.ties`).

A :class:`Run` can come from a sourcebias retriever or from any other system's TREC run file
(:meth:`Run.from_trec`). Document names in a TREC file are mapped to ``(doc_id, source)``
explicitly by a :class:`DocnoMap`: the ``<source>/<doc_id>`` names that sourcebias writes, a
``docnos.tsv`` table, or a pattern the user gives (``{doc_id}-{source}``). A map is built by
*rendering* every document's name and inverting the table — no name is ever taken apart — and it
refuses names that two documents would share.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError, DataError
from sourcebias.data.corpus import Corpus
from sourcebias.data.io import iter_lines, open_text
from sourcebias.retrieval.ties import TieRule

SOURCEBIAS_DOCNO = "{source}/{doc_id}"
_WHITESPACE = re.compile(r"\s")


@dataclass(eq=False)
class Run:
    """For each query, the ranked corpus positions and their scores (best first).

    ``positions[q]`` index into ``corpus``; rank ``r`` (1-based) of query ``q`` is document
    ``corpus[positions[q][r - 1]]``. The order already applies the tie-breaking rule, so it is
    final: metrics use this order, not a re-sort of the scores.

    Two runs are equal (``==``) when they have the same name and, query by query, the same
    ``(doc_id, source)`` sequence and scores (the corpus objects may differ).
    """

    corpus: Corpus
    name: str
    positions: dict[str, np.ndarray]
    scores: dict[str, np.ndarray]
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.positions.keys() != self.scores.keys():
            raise ValueError("positions and scores must have the same queries")

    @property
    def query_ids(self) -> list[str]:
        """The queries of the run, in order."""
        return list(self.positions)

    def __len__(self) -> int:
        return len(self.positions)

    def __repr__(self) -> str:
        return f"Run({self.name!r}, {len(self)} queries, depth {self.depth()}, {len(self.corpus):,} documents)"

    def depth(self) -> int:
        """The length of the longest ranking.

        Returns:
            The most documents any query has (0 for an empty run).
        """
        return max((len(p) for p in self.positions.values()), default=0)

    def keys(self, query_id: str) -> list[tuple[str, str]]:
        """``(doc_id, source)`` of the ranked documents of one query, best first.

        Args:
            query_id: A query of the run.

        Returns:
            The documents' keys.
        """
        c = self.corpus
        names, codes, ids = c.sources, c.source_codes, c.doc_ids
        return [(ids[i], names[codes[i]]) for i in self.positions[query_id].tolist()]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Run):
            return NotImplemented
        if self.name != other.name or self.query_ids != other.query_ids:
            return False
        for q in self.positions:
            if self.keys(q) != other.keys(q):
                return False
            if not np.array_equal(np.asarray(self.scores[q], dtype=np.float64), np.asarray(other.scores[q], dtype=np.float64)):
                return False
        return True

    __hash__ = None  # type: ignore[assignment]  # unhashable (it defines __eq__); typeshed types object.__hash__ as a method

    # -- derived runs ------------------------------------------------------------------------
    def cut(self, depth: int) -> Run:
        """The first ``depth`` documents of each query.

        Args:
            depth: Documents kept per query.

        Returns:
            A new run.
        """
        return Run(self.corpus, self.name, {q: p[:depth] for q, p in self.positions.items()}, {q: s[:depth] for q, s in self.scores.items()}, dict(self.info))

    def restrict(self, query_ids: Sequence[str]) -> Run:
        """The given queries only.

        Args:
            query_ids: The queries, in the order wanted (a query the run lacks gets an empty list).

        Returns:
            A new run.
        """
        empty_p, empty_s = np.empty(0, dtype=np.int64), np.empty(0, dtype=self._score_dtype())
        return Run(
            self.corpus,
            self.name,
            {q: self.positions.get(q, empty_p) for q in query_ids},
            {q: self.scores.get(q, empty_s) for q in query_ids},
            dict(self.info),
        )

    def bind(self, corpus: Corpus) -> Run:
        """The same rankings over another corpus object holding the same documents (matched by ``(doc_id, source)``).

        Args:
            corpus: The other corpus (e.g. the loaded dataset's, with texts).

        Returns:
            The run over ``corpus`` (this run itself when it is already over it).

        Raises:
            ConfigError: A ranked document is not in ``corpus``.
        """
        if corpus is self.corpus:
            return self
        src_pos = _position_lookup(corpus)
        c = self.corpus
        positions: dict[str, np.ndarray] = {}
        for q, pos in self.positions.items():
            new = np.empty(len(pos), dtype=np.int64)
            for j, i in enumerate(pos.tolist()):
                p = src_pos(c.doc_ids[i], c.source_of(i))
                if p is None:
                    raise ConfigError(f"run '{self.name}': document ({c.doc_ids[i]}, {c.source_of(i)}) of query '{q}' is not in the corpus")
                new[j] = p
            positions[q] = new
        return Run(corpus, self.name, positions, dict(self.scores), dict(self.info))

    def _score_dtype(self) -> np.dtype:
        for s in self.scores.values():
            return s.dtype
        return np.dtype(np.float64)

    # -- TREC files --------------------------------------------------------------------------
    def write_trec(self, path: str | Path, docnos: DocnoMap | None = None, tag: str | None = None) -> None:
        """Write the run in TREC format ``qid Q0 docno rank score tag``.

        Document names come from ``docnos`` (default: ``<source>/<doc_id>``, see
        :meth:`DocnoMap.sourcebias`). Scores are written with as many digits as their type needs to be
        read back exactly (float32 scores: 9 significant digits at most). The rank column is the final
        order (ties already broken by the tie rule).

        Args:
            path: The file to write (atomically).
            docnos: How documents are named.
            tag: The last column (default: the run's name, whitespace as ``_``).

        Raises:
            ConfigError: A query id holds whitespace (a TREC run cannot hold it).
        """
        from sourcebias.core.atomic import atomic_open

        docnos = docnos or DocnoMap.sourcebias(self.corpus)
        names = docnos.names
        tag = re.sub(r"\s+", "_", tag or self.name) or "run"
        spaced = [q for q in self.positions if _WHITESPACE.search(q)]
        if spaced:
            raise ConfigError(f"run '{self.name}': query id {spaced[0]!r} contains whitespace, which a TREC run cannot hold ({len(spaced)} such queries)")
        ranked = [q for q, pos in self.positions.items() if len(pos)]
        # every distinct score of the run formatted in one call; each line looks its text up, so
        # the run's 7 million lines at MS MARCO's size never exist as 7 million strings at once
        table, index = _score_table(self._score_dtype())(np.concatenate([self.scores[q] for q in ranked]) if ranked else [])
        text_of = table.__getitem__
        ranks = [str(r) for r in range(1, 1 + max((len(p) for p in self.positions.values()), default=0))]
        start = 0
        with atomic_open(path, "w") as fh:
            for q in ranked:
                pos = self.positions[q]
                end = start + len(pos)
                head, tail = f"{q} Q0 ", f" {tag}\n"  # each line: head, "docno rank score", tail
                texts = map(text_of, index[start:end].tolist())
                fh.write(head + (tail + head).join(map(" ".join, zip(map(names.__getitem__, pos.tolist()), ranks, texts))) + tail)
                start = end

    @classmethod
    def from_trec(
        cls,
        path: str | Path,
        corpus: Corpus,
        *,
        docnos: DocnoMap | None = None,
        name: str | None = None,
        seed: int = 0,
        order: str = "score",
    ) -> Run:
        """Read a TREC run (``qid Q0 docno rank score tag``; ``.gz`` too) written by any system.

        Documents are ordered by score, highest first, and **equal scores by the tie rule** of
        :mod:`sourcebias.retrieval.ties` with ``seed`` — not by the file's rank column, nor by docno as
        trec_eval does, both of which would systematically favour one source.

        Args:
            path: The run file.
            corpus: The corpus the run ranks.
            docnos: Maps the file's document names to documents of ``corpus`` (default: the
                ``<source>/<doc_id>`` names sourcebias writes; see :class:`DocnoMap`).
            name: The run's name (default: the file's name without its suffixes).
            seed: Seed of the tie rule.
            order: ``"score"``, or ``"rank"`` to keep the file's rank column (for runs whose order is
                already final, such as those sourcebias saves; ranks must then be distinct per query).

        Returns:
            The run.

        Raises:
            ConfigError: An unknown ``order``, or ``docnos`` built for another corpus.
            DataError: A name that maps to no document, a malformed line, a document listed twice for a
                query (or a rank used twice), or an empty file; with ``file:line``.
        """
        if order not in ("score", "rank"):
            raise ConfigError(f"order must be 'score' or 'rank', got '{order}'")
        path = Path(path)
        docnos = docnos or DocnoMap.sourcebias(corpus)
        if docnos.corpus is not corpus:
            raise ValueError("the docno map was built for another corpus")
        per_query, n = _read_trec(path, docnos, order)
        rule = TieRule(corpus, seed)
        positions: dict[str, np.ndarray] = {}
        scores: dict[str, np.ndarray] = {}
        for q, (plist, slist, _) in per_query.items():
            p = np.asarray(plist, dtype=np.int64)
            if order == "rank":
                r = np.asarray([x[0] for x in slist], dtype=np.int64)
                s = np.asarray([x[1] for x in slist], dtype=np.float64)
                idx = np.argsort(r, kind="stable")
            else:
                s = np.asarray(slist, dtype=np.float64)
                idx = rule.order(q, s, p)
            positions[q], scores[q] = p[idx], s[idx]
        ties = f"ordered by score, ties by the tie rule (seed {seed})" if order == "score" else "the file's rank order"
        info = {"source_file": str(path), "docnos": docnos.describe(), "lines": n, "order": ties}
        return cls(corpus, name or _run_name(path), positions, scores, info)


def _read_trec(path: Path, docnos: DocnoMap, order: str) -> tuple[dict[str, tuple[list[int], list[Any], dict[int, int]]], int]:
    """Per query, the listed corpus positions, their scores (``(rank, score)`` with ``order="rank"``) and the line of each position; and the number of entries.

    Every malformed line stops with file:line.
    """
    per_query: dict[str, tuple[list[int], list[Any], dict[int, int]]] = {}
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
        plist, slist, seen = per_query.setdefault(qid, ([], [], {}))
        if pos in seen:
            raise DataError(path, f"document '{docno}' is listed twice for query '{qid}' (first on line {seen[pos]})", lineno)
        seen[pos] = lineno
        if order == "rank":
            rq = ranks.setdefault(qid, {})
            if rank in rq:
                raise DataError(path, f"rank {rank} is used twice for query '{qid}' (first on line {rq[rank]})", lineno)
            rq[rank] = lineno
        plist.append(pos)
        slist.append((rank, score) if order == "rank" else score)
        n += 1
    if n == 0:
        raise DataError(path, "empty run: no ranked documents")
    return per_query, n


DOCNO_TABLE = "docnos.tsv"
COCKTAIL_DOCNO = "{doc_id}-{source}"


def unknown_docno(docno: str, docnos: DocnoMap) -> str:
    """The message for a run's (or feature file's) document name that maps to no document, with a hint at how to name the documents.

    Every reader of other tools' files says the same.

    Args:
        docno: the name read from the file.
        docnos: the map it was looked up in.

    Returns:
        ``document 'NAME' is not in the dataset (MAP)`` and, where it helps, a hint: a bare
        ``doc_id`` of a corpus of several sources cannot say which copy was ranked; with the
        default ``<source>/<doc_id>`` names, the Cocktail suffix is suggested.
    """
    message = f"document '{docno}' is not in the dataset ({docnos.describe()})"
    corpus = docnos.corpus
    how = f"a docno table (--docnos FILE, columns docno, doc_id, source) or a docno pattern (--docno-pattern, e.g. '{COCKTAIL_DOCNO}')"
    if len(corpus.sources) > 1 and docno in set(corpus.doc_ids):
        return f"{message}; '{docno}' is a bare document id, which does not say which of the {len(corpus.sources)} copies ({', '.join(corpus.sources)}) was ranked: name them with {how}"
    if docnos.describe() == DocnoMap.SOURCEBIAS_DESCRIPTION:
        return f"{message}; the Cocktail code and the 2026 package name copies {COCKTAIL_DOCNO}: say how this file names documents with {how}"
    return message


def resolve_docnos(
    run_path: str | Path,
    corpus: Corpus,
    *,
    docnos: str | Path | None = None,
    docno_pattern: str | None = None,
    source_labels: Mapping[str, str] | None = None,
) -> DocnoMap:
    """How the document names of the run file ``run_path`` map to documents of ``corpus``.

    The one rule (``evaluate --run`` and a grid's ``[[runs]]`` both use it), first match wins:

    1. ``docno_pattern`` (with ``source_labels``): names rendered from the pattern;
    2. ``docnos``: that ``docno, doc_id, source`` table;
    3. a ``docnos.tsv`` beside the run file (sourcebias writes one next to the runs it saves);
    4. otherwise the names sourcebias writes, ``<source>/<doc_id>``.

    Args:
        run_path: The run file.
        corpus: The corpus it ranks.
        docnos: A ``docnos.tsv`` table.
        docno_pattern: A pattern with ``{doc_id}`` and ``{source}``.
        source_labels: How the pattern writes each source, when not by its name.

    Returns:
        The :class:`DocnoMap`.

    Raises:
        ConfigError: Both ``docnos`` and ``docno_pattern``, or ``source_labels`` without a pattern.
    """
    if docnos is not None and docno_pattern is not None:
        raise ConfigError("give a docno table or a docno pattern, not both")
    if source_labels and docno_pattern is None:
        raise ConfigError("source labels say how a docno pattern writes each source; give a docno pattern with them")
    if docno_pattern is not None:
        return DocnoMap.from_pattern(docno_pattern, corpus, source_labels)
    if docnos is not None:
        return DocnoMap.from_table(docnos, corpus)
    beside = Path(run_path).parent / DOCNO_TABLE
    if beside.is_file():
        return DocnoMap.from_table(beside, corpus)
    return DocnoMap.sourcebias(corpus)


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


def _float32_table(scores: Any) -> tuple[list[str], np.ndarray]:
    bits = np.ascontiguousarray(scores, dtype=np.float32).view(np.uint32)
    distinct, index = np.unique(bits, return_inverse=True)
    return distinct.view(np.float32).astype(str).tolist(), index.reshape(-1)


def _float32_texts(scores: Any) -> list[str]:
    """``str(np.float32(s))`` of each score (see :func:`_score_formatter`)."""
    bits = np.ascontiguousarray(scores, dtype=np.float32).view(np.uint32)
    distinct, index = np.unique(bits, return_inverse=True)
    texts: list[str] = distinct.view(np.float32).astype(str)[index.reshape(-1)].tolist()
    return texts


def _position_lookup(corpus: Corpus) -> Callable[[str, str], int | None]:
    return corpus.position


class DocnoMap:
    """A one-to-one map between document names in run files and documents of one corpus.

    Build it with :meth:`sourcebias` (``<source>/<doc_id>``, what sourcebias writes),
    :meth:`from_pattern` (a template with ``{doc_id}`` and ``{source}``, e.g. Cocktail's
    ``{doc_id}-{source}``; ``source_labels`` says how each source is written when it is not its
    name), or :meth:`from_table` (a ``docnos.tsv`` with ``docno, doc_id, source`` columns).
    Whitespace in a rendered name becomes ``_`` (TREC names cannot contain it).
    """

    def __init__(self, corpus: Corpus, names: list[str], description: str):
        self.corpus = corpus
        self.names = names
        self._description = description
        self._position: dict[str, int] = {}
        for i, nm in enumerate(names):
            if _WHITESPACE.search(nm):
                d = corpus[i]
                raise ConfigError(f"the name {nm!r} of ({d.doc_id}, {d.source}) under {description} contains whitespace, which a TREC run cannot hold")
            j = self._position.setdefault(nm, i)
            if j != i:
                a, b = corpus[j], corpus[i]
                raise ConfigError(f"two documents have the name '{nm}' under {description}: ({a.doc_id}, {a.source}) and ({b.doc_id}, {b.source})")

    def position(self, name: str) -> int | None:
        """The corpus position of a document name.

        Args:
            name: A document name as the run file writes it.

        Returns:
            Its position, or None when no document has that name.
        """
        return self._position.get(name)

    def describe(self) -> str:
        """How the names are made, for messages and manifests (``pattern '{doc_id}-{source}'``).

        Returns:
            The description.
        """
        return self._description

    def rows(self) -> Iterator[tuple[str, str, str]]:
        """The table of names.

        Yields:
            ``(docno, doc_id, source)`` for every document, in corpus order.
        """
        c = self.corpus
        for i, nm in enumerate(self.names):
            yield nm, c.doc_ids[i], c.source_of(i)

    def write_table(self, path: str | Path) -> None:
        """Write ``docnos.tsv`` (``docno, doc_id, source``).

        Args:
            path: The file to write (atomically).
        """
        from sourcebias.core.atomic import atomic_open

        with atomic_open(path, "w", newline="") as fh:
            w = csv.writer(fh, delimiter="\t", lineterminator="\n")
            w.writerow(["docno", "doc_id", "source"])
            w.writerows(self.rows())

    SOURCEBIAS_DESCRIPTION = "sourcebias names <source>/<doc_id>"

    @classmethod
    def sourcebias(cls, corpus: Corpus) -> DocnoMap:
        """The names sourcebias writes: ``<source>/<doc_id>``.

        Args:
            corpus: The corpus named.

        Returns:
            The map.
        """
        return cls.from_pattern(SOURCEBIAS_DOCNO, corpus, _description=cls.SOURCEBIAS_DESCRIPTION)

    @classmethod
    def from_pattern(cls, pattern: str, corpus: Corpus, source_labels: Mapping[str, str] | None = None, *, _description: str | None = None) -> DocnoMap:
        """Names rendered from ``pattern`` (fields ``{doc_id}`` and ``{source}``).

        With a single-source corpus the pattern may be just ``{doc_id}``.

        Args:
            pattern: E.g. Cocktail's ``{doc_id}-{source}``.
            corpus: The corpus named.
            source_labels: How the pattern writes a source when not by its name (e.g.
                ``{"llama-2-7b-chat-tmp0.2": "llama"}``).

        Returns:
            The map.

        Raises:
            ConfigError: The pattern has other fields, lacks ``{doc_id}``, or lacks ``{source}`` for a
                corpus of several sources; a label for an unknown source; two documents given one name.
        """
        fields = set(re.findall(r"{(\w*)}", pattern))
        if not fields <= {"doc_id", "source"} or "doc_id" not in fields:
            raise ConfigError(f"docno pattern '{pattern}' must contain {{doc_id}} and may contain {{source}} (and no other fields)")
        if "source" not in fields and len(corpus.sources) > 1:
            raise ConfigError(
                f"docno pattern '{pattern}' has no {{source}}: it cannot tell a document from its twin in a corpus of {len(corpus.sources)} sources"
            )
        labels = dict(source_labels or {})
        unknown = [s for s in labels if s not in corpus.sources]
        if unknown:
            raise ConfigError(f"source label given for unknown source(s) {', '.join(unknown)}; sources: {', '.join(corpus.sources)}")
        label_of = [labels.get(s, s) for s in corpus.sources]
        ws = re.compile(r"\s+")
        codes = corpus.source_codes.tolist()
        names = [ws.sub("_", pattern.format(doc_id=d, source=label_of[c])) for d, c in zip(corpus.doc_ids, codes)]
        desc = _description or f"pattern '{pattern}'" + (f" with labels {labels}" if labels else "")
        return cls(corpus, names, desc)

    @classmethod
    def from_table(cls, path: str | Path, corpus: Corpus) -> DocnoMap:
        """Names from a ``docnos.tsv`` (header ``docno doc_id source``, tab-separated).

        Every document of ``corpus`` must be listed; rows naming documents outside it are allowed (a
        table may cover a larger corpus) but never used.

        Args:
            path: The table.
            corpus: The corpus named.

        Returns:
            The map.

        Raises:
            DataError: A malformed header or row, a name with whitespace or given twice, a document
                listed twice, or documents of ``corpus`` without a name; with ``file:line``.
        """
        path = Path(path)
        name_of: dict[int, str] = {}
        line_of: dict[str, int] = {}
        with open_text(path) as fh:
            reader = csv.reader(fh, delimiter="\t")
            header = next(reader, None)
            if header is None or [h.strip() for h in header[:3]] != ["docno", "doc_id", "source"]:
                raise DataError(path, "expected the header 'docno<TAB>doc_id<TAB>source'", 1)
            for lineno, row in enumerate(reader, start=2):
                if not row:
                    continue
                if len(row) != 3:
                    raise DataError(path, f"expected 3 tab-separated columns, got {len(row)}", lineno)
                docno, doc_id, source = row
                if _WHITESPACE.search(docno):
                    raise DataError(path, f"the name {docno!r} contains whitespace, which a TREC run cannot hold", lineno)
                first = line_of.setdefault(docno, lineno)
                if first != lineno:
                    raise DataError(path, f"the name '{docno}' is given to two documents (first on line {first})", lineno)
                pos = corpus.position(doc_id, source)
                if pos is None:
                    continue
                if pos in name_of:
                    raise DataError(path, f"({doc_id}, {source}) is listed twice", lineno)
                name_of[pos] = docno
        missing = [i for i in range(len(corpus)) if i not in name_of]
        if missing:
            d = corpus[missing[0]]
            raise DataError(path, f"{len(missing)} documents of the dataset have no name here, e.g. ({d.doc_id}, {d.source})")
        return cls(corpus, [name_of[i] for i in range(len(corpus))], f"table {path.name}")
