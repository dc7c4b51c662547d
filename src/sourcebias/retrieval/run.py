"""Ranked lists (a "run") over one corpus, in the final order of the tie rule (:mod:`.ties`).

A :class:`Run` can come from a sourcebias retriever or from any other system's TREC run file
(:meth:`Run.from_trec`; the TREC and JSON formats are :mod:`.formats`). Document names in a run
file are mapped to ``(doc_id, source)`` explicitly by a :class:`~sourcebias.retrieval.docnos.DocnoMap`
(:mod:`.docnos`): the ``<source>/<doc_id>`` names that sourcebias writes, a ``docnos.tsv`` table,
or a pattern the user gives (``{doc_id}-{source}``). A map is built by
*rendering* every document's name and inverting the table — no name is ever taken apart — and it
refuses names that two documents would share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.core.moved import moved
from sourcebias.data.corpus import Corpus
from sourcebias.retrieval.docnos import DocnoMap, _position_lookup, resolve_docnos, unknown_docno

__all__ = ["DocnoMap", "Run", "read_json_run", "resolve_docnos", "unknown_docno"]


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

    # -- TREC files (the format is .formats') -------------------------------------------------
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
        from sourcebias.retrieval.formats import write_trec

        write_trec(self, path, docnos, tag)

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
        from sourcebias.retrieval.formats import read_trec

        file_name, positions, scores, info = read_trec(path, corpus, docnos=docnos, seed=seed, order=order)
        return cls(corpus, name or file_name, positions, scores, info)


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

    The format is :func:`sourcebias.retrieval.formats.read_json`'s, which says how names map and what
    is refused; this builds the :class:`Run` from what it reads (``name`` defaults to the file's).
    """
    from sourcebias.retrieval.formats import read_json

    file_name, positions, scores, info = read_json(path, corpus, docnos=docnos, docno_pattern=docno_pattern, source_labels=source_labels, seed=seed)
    return Run(corpus, name or file_name, positions, scores, info)


_MOVED = dict.fromkeys(("COCKTAIL_DOCNO", "DOCNO_TABLE", "SOURCEBIAS_DOCNO"), "sourcebias.retrieval.docnos")
__getattr__ = moved(__name__, _MOVED)
