"""An appendable BM25 index: Lucene's own design, an index made of immutable segments.

``sourcebias simulate`` adds about 1% of new documents per round and re-ranks. Rebuilding BM25
each round costs the whole corpus (analysis, then every posting's score); :class:`SegmentedBM25`
costs what the round adds. Its scores equal :class:`~sourcebias.retrieval.lucene.LuceneBM25`'s
(and so Lucene 9.9.1's and :class:`~sourcebias.retrieval.lexical.BM25`'s) over the concatenated
corpus to the last bit, after any sequence of additions.

Why written here: bm25s and ``LuceneBM25`` precompute every posting's score at indexing time,
from the corpus-wide idf and average length, so one new document changes every stored score and
forces a rebuild; no maintained Python library appends to a Lucene-scored index (Lucene itself
does, through segments, which is the design copied here).

Design
------
* One growing vocabulary (term -> id), shared by all segments; the analyzer's ``to_ids`` with
  ``grow=True`` adds a round's new terms.
* A segment is the documents of one ``add`` (or of a merge), never changed afterwards: its
  postings term-major (sorted distinct term ids, an offset array, local document ids and term
  frequencies), each document's length and, with ``norms="lucene"``, its one-byte norm.
* Global statistics are updated incrementally on ``add``: the per-term document frequency array
  (grown by doubling with the vocabulary), ``doc_count`` (documents with at least one term),
  ``sum_total_term_freq`` and the number of documents.
* ``score_batch`` is lazy, as Lucene's search is: it reads only the postings of the query's
  terms, segment by segment, with the current idf and average length, in ``LuceneBM25``'s exact
  float32 operation order (``1 + freq * cache[norm]``, ``weight - weight / denom``; a term
  repeated ``n`` times is one clause of boost ``n``; power-of-two boosts scale the unboosted
  score, others are scored with ``weight = (float) n * idf``), summed in float64 in ascending
  term order, then cast to float32.
* ``merge`` joins adjacent segments into one; ``add`` merges automatically while there are more
  than ``max_segments`` (the adjacent pair with the fewest documents first, a log-like policy:
  small recent segments are merged often, the large old one rarely).

Cost model (``P_new``: postings a round adds; ``P_q``: postings of the query terms; ``S``:
segments; ``D``: documents)
------------------------------------------------------------------------------------------
* ``add``: analysis of the new texts only, plus ``O(P_new log P_new)`` to sort their postings and
  ``O(distinct new terms)`` to update the document frequencies. The corpus already indexed is
  not read.
* ``score_batch``: ``O(P_q + S * |query terms| * log V)`` to gather and score the postings,
  plus writing the dense ``(queries, D)`` result (which any scorer returning dense scores pays).
* ``merge`` of segments holding ``P`` postings: ``O(P log S)`` — their postings are concatenated
  in document order and stably sorted by term; numpy's stable sort (timsort) merges the ``S``
  already-sorted runs.
* ``save``: segment files are immutable and written once (a resumed simulation writes only the
  new ones); the vocabulary and a manifest are rewritten atomically, the manifest last.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError, DataError
from sourcebias.retrieval.lucene import encode_lengths, norm_cache

_FORMAT = "sourcebias-segmented-bm25/1"


@dataclass(frozen=True)
class Segment:
    """The documents ``base .. base + n_docs - 1``, term-major and immutable.

    ``terms`` are the distinct term ids (ascending); the postings of ``terms[i]`` are
    ``docs[ptr[i]:ptr[i + 1]]`` (local document ids, ascending) with frequencies ``freqs``."""

    base: int
    lengths: np.ndarray  # int64, one per document
    norm_bytes: np.ndarray  # uint8, SmallFloat.intToByte4 of each length
    terms: np.ndarray  # int64
    ptr: np.ndarray  # int64, len(terms) + 1
    docs: np.ndarray  # int32, local
    freqs: np.ndarray  # int32

    @property
    def n_docs(self) -> int:
        return len(self.lengths)

    @property
    def n_postings(self) -> int:
        return len(self.docs)

    @classmethod
    def from_ids(cls, base: int, doc_term_ids: Sequence[Sequence[int]]) -> Segment:
        """A segment of documents given as term ids: postings sorted by (term, document)."""
        n = len(doc_term_ids)
        lengths = np.fromiter((len(d) for d in doc_term_ids), dtype=np.int64, count=n)
        total = int(lengths.sum())
        term = np.fromiter((t for d in doc_term_ids for t in d), dtype=np.int64, count=total)
        doc = np.repeat(np.arange(n, dtype=np.int64), lengths)
        # one key per (term, document); unique sorts and counts the duplicates (frequencies)
        key, freqs = np.unique(term * max(n, 1) + doc, return_counts=True)
        terms_all, docs = np.divmod(key, max(n, 1))
        terms, starts = np.unique(terms_all, return_index=True)
        ptr = np.append(starts, len(key)).astype(np.int64)
        return cls(base, lengths, encode_lengths(lengths), terms, ptr, docs.astype(np.int32), freqs.astype(np.int32))

    def postings(self, term_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(start, end)`` offsets of each asked term's postings (empty where absent)."""
        pos = np.searchsorted(self.terms, term_ids)
        pos_c = np.minimum(pos, max(len(self.terms) - 1, 0))
        found = (pos < len(self.terms)) & (self.terms[pos_c] == term_ids) if len(self.terms) else np.zeros(len(term_ids), bool)
        start = np.where(found, self.ptr[pos_c], 0)
        end = np.where(found, self.ptr[np.minimum(pos_c + 1, len(self.ptr) - 1)], 0)
        return start, end


def merge_segments(segments: Sequence[Segment]) -> Segment:
    """One segment holding the documents of adjacent ``segments`` (in order), ``O(P log S)``."""
    for a, b in itertools.pairwise(segments):
        if a.base + a.n_docs != b.base:
            raise ConfigError(f"segments to merge must be adjacent: {a.base}+{a.n_docs} then {b.base}")
    base = segments[0].base
    term = np.concatenate([np.repeat(s.terms, np.diff(s.ptr)) for s in segments])
    docs = np.concatenate([s.docs.astype(np.int64) + (s.base - base) for s in segments])
    freqs = np.concatenate([s.freqs for s in segments])
    order = np.argsort(term, kind="stable")  # runs sorted by term, documents ascending within
    term, docs, freqs = term[order], docs[order], freqs[order]
    terms, starts = np.unique(term, return_index=True)
    ptr = np.append(starts, len(term)).astype(np.int64)
    lengths = np.concatenate([s.lengths for s in segments])
    norm_bytes = np.concatenate([s.norm_bytes for s in segments])
    return Segment(base, lengths, norm_bytes, terms, ptr, docs.astype(np.int32), freqs)


class SegmentedBM25:
    """Lucene's BM25 over an index that grows by segments (see the module's docstring).

    Parameters
    ----------
    k1, b:
        Elasticsearch's defaults 1.2 and 0.75.
    norms:
        ``"lucene"`` (one-byte lengths, Elasticsearch's scores) or ``"exact"``, as
        :class:`~sourcebias.retrieval.lucene.LuceneBM25`.
    analyzer:
        Text to terms (default :class:`~sourcebias.retrieval.analyzer.EnglishAnalyzer`).
    max_segments:
        ``add`` merges adjacent segments while there are more than this (``None``: never).

    ``add(texts)`` -> the new documents' rows; ``score_batch(queries)`` -> float32
    ``(queries, documents)``, equal bit for bit to ``LuceneBM25`` indexed on every document
    added so far, in the order added.
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75, norms: str = "lucene", analyzer: Any = None, max_segments: int | None = 16):
        if norms not in ("lucene", "exact"):
            raise ConfigError(f"SegmentedBM25: norms must be 'lucene' or 'exact', got '{norms}'")
        if max_segments is not None and max_segments < 1:
            raise ConfigError(f"SegmentedBM25: max_segments must be at least 1 (or None), got {max_segments}")
        if analyzer is None:
            from sourcebias.retrieval.analyzer import EnglishAnalyzer

            analyzer = EnglishAnalyzer()
        self.k1, self.b, self.norms, self.analyzer, self.max_segments = float(k1), float(b), norms, analyzer, max_segments
        self.vocab: dict[str, int] = {}
        self.segments: list[Segment] = []
        self._df = np.zeros(1024, dtype=np.int64)
        self.n_docs = self.doc_count = self.sum_total_term_freq = 0

    # -- building ---------------------------------------------------------------------------
    def add(self, texts: Sequence[str]) -> range:
        """Analyze ``texts`` only and append them as a new segment; their rows in the index."""
        ids = self.analyzer.to_ids(list(texts), self.vocab, grow=True)
        return self.add_ids(ids)

    def add_ids(self, doc_term_ids: Sequence[Sequence[int]]) -> range:
        """Append documents already given as ids of this index's vocabulary."""
        seg = Segment.from_ids(self.n_docs, doc_term_ids)
        if len(seg.terms) and (seg.terms[0] < 0 or seg.terms[-1] >= len(self.vocab)):
            raise ConfigError(f"SegmentedBM25.add_ids: term ids must lie in 0..{len(self.vocab) - 1} (the vocabulary)")
        self._account(seg)
        self.segments.append(seg)
        rows = range(seg.base, seg.base + seg.n_docs)
        self.n_docs += seg.n_docs
        if self.max_segments is not None:
            while len(self.segments) > self.max_segments:
                self._merge_smallest_pair()
        return rows

    def _account(self, seg: Segment) -> None:
        """Global statistics of a new segment: document frequencies, doc_count, total length."""
        need = len(self.vocab)
        if need > len(self._df):
            grown = np.zeros(max(need, 2 * len(self._df)), dtype=np.int64)
            grown[: len(self._df)] = self._df
            self._df = grown
        self._df[seg.terms] += np.diff(seg.ptr)  # terms are distinct within a segment
        self.doc_count += int(np.count_nonzero(seg.lengths))
        self.sum_total_term_freq += int(seg.lengths.sum())

    def _merge_smallest_pair(self) -> None:
        sizes = [a.n_docs + b.n_docs for a, b in zip(self.segments, self.segments[1:])]
        i = int(np.argmin(sizes))
        self.segments[i : i + 2] = [merge_segments(self.segments[i : i + 2])]

    def merge(self) -> None:
        """Merge every segment into one (``O(postings log segments)``); scores do not change."""
        if len(self.segments) > 1:
            self.segments = [merge_segments(self.segments)]

    @property
    def df(self) -> np.ndarray:
        """Document frequency of each term of the vocabulary."""
        return self._df[: len(self.vocab)]

    @property
    def avgdl(self) -> np.float32:
        return np.float32(self.sum_total_term_freq / float(self.doc_count)) if self.doc_count else np.float32(0.0)

    # -- scoring ----------------------------------------------------------------------------
    def _idf(self, terms: np.ndarray) -> np.ndarray:
        df = self._df[terms]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(1.0 + (self.doc_count - df + 0.5) / (df + 0.5)).astype(np.float32)

    def _inverse(self, seg: Segment, cache: np.ndarray | None) -> np.ndarray:
        """``1 / (k1 * ((1 - b) + b * length / avgdl))`` per document of ``seg``, float32."""
        if cache is not None:
            return cache[seg.norm_bytes]
        k1f, bf = np.float32(self.k1), np.float32(self.b)
        one_minus_b = np.float32(np.float32(1.0) - bf)
        with np.errstate(divide="ignore"):
            return (np.float32(1.0) / (k1f * (one_minus_b + (bf * seg.lengths.astype(np.float32)) / self.avgdl))).astype(np.float32)

    def score_batch(self, queries: Sequence[str]) -> np.ndarray:
        """Scores of every document for each query text (float32, ``(len(queries), n_docs)``);
        query terms not in the vocabulary are ignored."""
        return self.score_ids(self.analyzer.to_ids(list(queries), self.vocab, grow=False))

    def _query_matrix(self, query_term_ids: Sequence[Sequence[int]]):
        """The union of query terms (ascending), a (queries x union) float64 matrix of the
        power-of-two repeat counts, and the other ``(query, union index, count)`` clauses."""
        from scipy.sparse import csr_matrix

        per_query = []
        for q in query_term_ids:
            c = np.bincount(np.asarray(q, dtype=np.int64)) if len(q) else np.zeros(0, dtype=np.int64)
            nz = np.flatnonzero(c)
            per_query.append((nz, c[nz]))
        union = np.unique(np.concatenate([nz for nz, _ in per_query] + [np.zeros(0, np.int64)]))
        data, cols, indptr = [], [], [0]
        boosted: list[tuple[int, int, int]] = []  # (query, union column, boost)
        for qi, (nz, cnt) in enumerate(per_query):
            exact = (cnt & (cnt - 1)) == 0  # a power of two: n * score is exact in float32
            cols.append(np.searchsorted(union, nz[exact]))
            data.append(cnt[exact].astype(np.float64))
            indptr.append(indptr[-1] + int(exact.sum()))
            boosted.extend((qi, int(u), int(n)) for u, n in zip(np.searchsorted(union, nz[~exact]), cnt[~exact]))
        values, columns = np.concatenate(data + [np.zeros(0)]), np.concatenate(cols + [np.zeros(0, np.int64)])
        qm = csr_matrix((values, columns, np.asarray(indptr)), shape=(len(per_query), len(union)))
        return union, qm, boosted

    def score_ids(self, query_term_ids: Sequence[Sequence[int]]) -> np.ndarray:
        """As :meth:`score_batch`, for queries given as term ids of this index's vocabulary."""
        from scipy.sparse import csr_matrix

        out = np.zeros((len(query_term_ids), self.n_docs), dtype=np.float64)
        if not len(query_term_ids) or not self.n_docs:
            return out.astype(np.float32)
        union, qm, boosted = self._query_matrix(query_term_ids)
        idf = self._idf(union)
        cache = norm_cache(self.k1, self.b, self.avgdl) if self.norms == "lucene" else None
        for seg in self.segments:
            start, end = seg.postings(union)
            counts = end - start
            ptr = np.append(0, np.cumsum(counts))
            sel = np.repeat(start - ptr[:-1], counts) + np.arange(ptr[-1])  # postings, term by term
            docs = seg.docs[sel]
            freq = seg.freqs[sel].astype(np.float32)
            weight = np.repeat(idf, counts)
            denom = (np.float32(1.0) + freq * self._inverse(seg, cache)[docs]).astype(np.float32)
            post = (weight - weight / denom).astype(np.float32)
            m = csr_matrix((post.astype(np.float64), docs, ptr), shape=(len(union), seg.n_docs))
            block = np.asarray((qm @ m).todense(), dtype=np.float64)
            for qi, u, n in boosted:  # in Lucene's order, summed in double like the other clauses
                w = np.float32(n) * idf[u]
                d = denom[ptr[u] : ptr[u + 1]]
                block[qi, docs[ptr[u] : ptr[u + 1]]] += (w - w / d).astype(np.float32).astype(np.float64)
            out[:, seg.base : seg.base + seg.n_docs] = block
        return out.astype(np.float32)

    # -- persistence ------------------------------------------------------------------------
    def save(self, folder: str | Path) -> Path:
        """Write the index to ``folder``: one ``.npz`` per segment (immutable: written once and
        kept while the segment lives), ``vocab.json`` and ``segments.json`` (the manifest, written
        last), each atomically; files of segments merged away are removed."""
        from sourcebias.core.atomic import atomic_open, atomic_write_json

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        names = []
        for seg in self.segments:
            name = f"seg-{seg.base:012d}-{seg.n_docs:010d}-{seg.n_postings:012d}.npz"
            names.append(name)
            if not (folder / name).is_file():
                with atomic_open(folder / name, "wb") as fh:
                    np.savez(fh, lengths=seg.lengths, norm_bytes=seg.norm_bytes, terms=seg.terms, ptr=seg.ptr, docs=seg.docs, freqs=seg.freqs)
        terms: list[str | None] = [None] * len(self.vocab)
        for term, i in self.vocab.items():
            terms[i] = term
        atomic_write_json(folder / "vocab.json", terms, indent=None)
        manifest = {
            "format": _FORMAT,
            "k1": self.k1,
            "b": self.b,
            "norms": self.norms,
            "max_segments": self.max_segments,
            "analyzer": _analyzer_config(self.analyzer),
            "n_docs": self.n_docs,
            "n_terms": len(self.vocab),
            "segments": [{"file": n, "base": s.base, "n_docs": s.n_docs} for n, s in zip(names, self.segments)],
        }
        atomic_write_json(folder / "segments.json", manifest)
        for stale in {p.name for p in folder.glob("seg-*.npz")} - set(names):
            (folder / stale).unlink(missing_ok=True)
        return folder

    @classmethod
    def load(cls, folder: str | Path, analyzer: Any = None) -> SegmentedBM25:
        """An index saved by :meth:`save`; nothing is re-analyzed. ``analyzer`` (default: the
        English analyzer) must have the configuration the index was built with."""
        from sourcebias.core.atomic import read_json_file

        folder = Path(folder)
        path, manifest = read_json_file(folder, default_name="segments.json", missing="no SegmentedBM25 index here (segments.json not found)")
        if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT:
            raise DataError(path, f"not a SegmentedBM25 index (format is not {_FORMAT})")
        index = cls(manifest["k1"], manifest["b"], manifest["norms"], analyzer, manifest.get("max_segments"))
        if _analyzer_config(index.analyzer) != manifest["analyzer"]:
            raise ConfigError(f"{path}: the index was built with analyzer {manifest['analyzer']}, not {_analyzer_config(index.analyzer)}")
        _, terms = read_json_file(folder / "vocab.json")
        if len(terms) != manifest["n_terms"]:
            raise DataError(folder / "vocab.json", f"{len(terms)} terms, the manifest says {manifest['n_terms']}")
        index.vocab = {t: i for i, t in enumerate(terms)}
        for entry in manifest["segments"]:
            if entry["base"] != index.n_docs:
                raise DataError(path, f"segment {entry['file']} starts at document {entry['base']}, expected {index.n_docs}")
            seg = _read_segment(folder / entry["file"], entry)
            if len(seg.terms) and (seg.terms[0] < 0 or seg.terms[-1] >= len(terms)):
                raise DataError(folder / entry["file"], f"term ids outside the vocabulary of {len(terms)} terms")
            index._account(seg)
            index.segments.append(seg)
            index.n_docs += seg.n_docs
        return index


def _analyzer_config(analyzer: Any) -> Any:
    config = getattr(analyzer, "config", None)
    return json.loads(json.dumps(config(), default=str)) if callable(config) else type(analyzer).__name__


def _read_segment(path: Path, entry: dict) -> Segment:
    if not path.is_file():
        raise DataError(path, "segment file listed in segments.json is missing")
    with np.load(path, allow_pickle=False) as z:
        seg = Segment(int(entry["base"]), z["lengths"], z["norm_bytes"], z["terms"], z["ptr"], z["docs"], z["freqs"])
    if seg.n_docs != entry["n_docs"] or len(seg.ptr) != len(seg.terms) + 1 or seg.ptr[-1] != seg.n_postings:
        raise DataError(path, "segment arrays are inconsistent with each other or with segments.json")
    return seg
