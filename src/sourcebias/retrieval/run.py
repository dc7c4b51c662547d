"""Ranked lists (a "run") over one corpus, in the tie-broken order of :mod:`.ties`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sourcebias.data.corpus import Corpus
from sourcebias.retrieval.ties import select_top, tie_keys


@dataclass
class Run:
    """For each query, the ranked corpus positions and their scores (best first).

    ``positions[q]`` index into ``corpus``; rank ``r`` (1-based) of query ``q`` is document
    ``corpus[positions[q][r - 1]]``. The order already applies the tie-breaking rule, so it
    is final: metrics use this order, not a re-sort of the scores.
    """

    corpus: Corpus
    name: str
    positions: dict[str, np.ndarray]
    scores: dict[str, np.ndarray]
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.positions.keys() != self.scores.keys():
            raise ValueError("positions and scores must have the same queries")

    @property
    def query_ids(self) -> list[str]:
        return list(self.positions)

    def __len__(self) -> int:
        return len(self.positions)

    def depth(self) -> int:
        return max((len(p) for p in self.positions.values()), default=0)

    def ranking(self, query_id: str) -> list[tuple[str, str, float]]:
        """``[(doc_id, source, score), ...]`` best first."""
        c = self.corpus
        return [(c.doc_ids[i], c.source_of(i), float(s)) for i, s in zip(self.positions[query_id], self.scores[query_id])]

    def iter_rows(self) -> Iterator[tuple[str, int, str, str, float]]:
        """``(query_id, rank, doc_id, source, score)`` for every entry, rank 1-based."""
        c = self.corpus
        ids = c.doc_ids
        names = c.sources
        codes = c.source_codes
        for q, pos in self.positions.items():
            sc = self.scores[q]
            for r, (i, s) in enumerate(zip(pos.tolist(), sc.tolist()), start=1):
                yield q, r, ids[i], names[codes[i]], s

    def cut(self, depth: int) -> Run:
        return Run(self.corpus, self.name, {q: p[:depth] for q, p in self.positions.items()}, {q: s[:depth] for q, s in self.scores.items()}, dict(self.info))

    def write_trec(self, path: str | Path, docno: Mapping[tuple[str, str], str] | None = None, tag: str | None = None) -> None:
        """Write the run in TREC format ``qid Q0 docno rank score tag``.

        ``docno`` maps ``(doc_id, source)`` to the document name written in the file; by
        default it is the ``doc_id`` for a single-source corpus. For a mixed corpus, where
        a document and its twin share a ``doc_id``, a mapping must be given (see
        :func:`sourcebias.reporting.outputs.docno_table`) and is saved beside the run.
        """
        tag = tag or self.name
        tag = "".join(ch if not ch.isspace() else "_" for ch in tag)
        if docno is None and len(self.corpus.sources) > 1:
            raise ValueError("a mixed-source run needs a docno mapping to be written in TREC format")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as fh:
            for q, r, d, s, score in self.iter_rows():
                name = d if docno is None else docno[(d, s)]
                fh.write(f"{q} Q0 {name} {r} {score:.9g} {tag}\n")


def rank_rows(
    corpus: Corpus,
    query_ids: Sequence[str],
    score_rows: Sequence[np.ndarray] | np.ndarray,
    depth: int,
    *,
    seed: int = 0,
    exclude: Mapping[str, np.ndarray] | None = None,
    keep: str = "all",
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Turn full score vectors (one per query, over all of ``corpus``) into ranked lists.

    ``exclude`` gives, per query, positions to leave out (self-matches). ``keep="positive"``
    keeps only documents with a score > 0 (a lexical match), as a search engine returns only
    matching documents.
    """
    doc_hashes = corpus.key_hashes()
    all_pos = np.arange(len(corpus))
    positions: dict[str, np.ndarray] = {}
    scores: dict[str, np.ndarray] = {}
    for qid, row in zip(query_ids, score_rows):
        row = np.asarray(row)
        cand = all_pos
        if keep == "positive":
            cand = np.flatnonzero(row > 0)
        if exclude is not None and qid in exclude and len(exclude[qid]):
            cand = np.setdiff1d(cand, exclude[qid], assume_unique=True)
        sub = row[cand]
        top = select_top(sub, lambda p, q=qid: tie_keys(doc_hashes[p], q, seed), cand, depth)
        positions[qid] = cand[top]
        scores[qid] = sub[top]
    return positions, scores
