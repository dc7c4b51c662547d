"""BM25 scores equal to Lucene's (and so Elasticsearch's) to the last bit.

Lucene's ``BM25Similarity`` (Lucene 8 and later; Elasticsearch 7 and later) does not use a
document's exact length. At indexing time it stores the length — the number of tokens the
analyzer emitted for the field — in one byte (``SmallFloat.intToByte4``); at search time it
decodes the byte (``SmallFloat.byte4ToInt``) and looks up a 256-entry table of float32 values.
Lengths 0 to 40 are stored exactly; longer ones are rounded down to 4 significant bits
(41 -> 40, 100 -> 96, 1000 -> 984). The arithmetic, following ``BM25Similarity.java``::

    idf       = (float) ln(1 + (docCount - docFreq + 0.5) / (docFreq + 0.5))      # in double
    avgdl     = (float) (sumTotalTermFreq / (double) docCount)
    cache[i]  = 1f / (k1 * ((1 - b) + b * LENGTH_TABLE[i] / avgdl))           # float32
    weight    = boost * idf                                                       # float32
    term      = weight - weight / (1f + freq * cache[norm])                       # float32
    score     = (float) sum over the query's terms (in double)                    # WANDScorer,
                                                                                  # MaxScoreBulkScorer

(the ``(k1 + 1)`` factor of classic BM25 was dropped in Lucene 8: it does not change rankings).
A term repeated in a query is one clause with a boost: Lucene's ``BooleanQuery.rewrite`` merges
``n`` duplicate SHOULD clauses into one ``BoostQuery`` of boost ``(float) n`` (Anserini's
bag-of-words query generator builds that boost directly), and ``weight = boost * idf`` is then
rounded to float32 before the term's score is computed. For ``n`` a power of two this is exactly
``n`` times the single term's score; for ``n = 3, 5, 6, ...`` it is not, and is computed so. Summing float32 term scores in double is
exact for scores within 2^29 of each other, so the order of the terms does not matter and the
float32 result equals Lucene's.

Why written here: bm25s (the BM25 library sourcebias uses for exact lengths, ``norms="exact"``)
scores with exact lengths and its own operation order; no maintained Python library reproduces
Lucene's one-byte norms bit for bit. The scorer precomputes each posting's float32 score once
(a sparse term x document matrix, as bm25s does) and sums the query's rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError

# SmallFloat: longToInt4(Integer.MAX_VALUE) == 231, so 255 - 231 = 24 byte values hold lengths
# 0..23 exactly and the rest encode (length - 24) with 4 significant bits.
MAX_INT4 = 231
NUM_FREE_VALUES = 255 - MAX_INT4


def long_to_int4(i: int) -> int:
    """``SmallFloat.longToInt4``: a float-like code of a non-negative integer (4 significant bits)."""
    if i < 0:
        raise ValueError(f"only non-negative values, got {i}")
    num_bits = int(i).bit_length()
    if num_bits < 4:
        return int(i)  # subnormal: exact
    shift = num_bits - 4
    encoded = (int(i) >> shift) & 0x07  # keep the 4 most significant bits, the top one implicit
    return encoded | ((shift + 1) << 3)


def int4_to_long(i: int) -> int:
    bits = i & 0x07
    shift = (i >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


def int_to_byte4(n: int) -> int:
    """``SmallFloat.intToByte4`` as an unsigned byte (0..255)."""
    if n < 0:
        raise ValueError(f"only non-negative values, got {n}")
    return n if n < NUM_FREE_VALUES else NUM_FREE_VALUES + long_to_int4(n - NUM_FREE_VALUES)


def byte4_to_int(b: int) -> int:
    """``SmallFloat.byte4ToInt`` of an unsigned byte."""
    b &= 0xFF
    return b if b < NUM_FREE_VALUES else NUM_FREE_VALUES + int4_to_long(b - NUM_FREE_VALUES)


#: the decoded length of each norm byte, as Lucene's ``LENGTH_TABLE`` (float32)
LENGTH_TABLE = np.array([byte4_to_int(i) for i in range(256)], dtype=np.float32)
_BYTE_OF_LENGTH: dict[int, int] = {}


def encode_lengths(lengths: np.ndarray) -> np.ndarray:
    """Norm bytes of an array of lengths (vectorised through a memo of distinct lengths)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    uniq, inv = np.unique(lengths, return_inverse=True)
    codes = np.array([_BYTE_OF_LENGTH.setdefault(int(n), int_to_byte4(int(n))) for n in uniq], dtype=np.uint8)
    return codes[inv]


def norm_cache(k1: float, b: float, avgdl: np.float32) -> np.ndarray:
    """``1f / (k1 * ((1 - b) + b * LENGTH_TABLE[i] / avgdl))`` for the 256 norm bytes, float32,
    in Java's evaluation order."""
    k1f, bf, avg = np.float32(k1), np.float32(b), np.float32(avgdl)
    one_minus_b = np.float32(np.float32(1.0) - bf)
    with np.errstate(divide="ignore"):
        return (np.float32(1.0) / (k1f * (one_minus_b + (bf * LENGTH_TABLE) / avg))).astype(np.float32)


#: Postings whose scores :meth:`LuceneBM25.index_flat` computes at once (16 bytes of temporaries each).
POSTING_BLOCK = 1 << 20


def _compact_counts(counts: np.ndarray) -> np.ndarray:
    """Whole counts held as float32 (exact below 2^24) in the smallest unsigned type that holds
    the largest (uint8, uint16, uint32); converting back to float32 gives the same values."""
    top = float(counts.max()) if len(counts) else 0.0
    for dtype in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dtype).max:
            return counts.astype(dtype)
    return counts  # pragma: no cover - a term repeated 2^32 times in one document


class LuceneBM25:
    """Lucene's BM25 over documents given as lists of term ids.

    Parameters
    ----------
    k1, b:
        Elasticsearch's defaults 1.2 and 0.75.
    norms:
        ``"lucene"`` (one-byte lengths, the default: Elasticsearch's scores) or ``"exact"``
        (each document's exact length; otherwise the same arithmetic).

    ``index(doc_term_ids, n_terms)`` then ``score_batch(query_term_ids)`` -> float32 array
    ``(queries, documents)``; a document sharing no term with the query scores 0.
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75, norms: str = "lucene"):
        if norms not in ("lucene", "exact"):
            raise ConfigError(f"norms must be 'lucene' or 'exact', got '{norms}'")
        self.k1, self.b, self.norms = float(k1), float(b), norms

    def index(self, doc_term_ids: Sequence[Sequence[int]], n_terms: int) -> LuceneBM25:
        n_docs = len(doc_term_ids)
        lengths = np.fromiter((len(d) for d in doc_term_ids), dtype=np.int64, count=n_docs)
        flat = np.fromiter(itertools.chain.from_iterable(doc_term_ids), dtype=np.int64, count=int(lengths.sum()))
        return self.index_flat(lengths, flat, n_terms)

    def index_flat(self, lengths: np.ndarray, term_ids: np.ndarray, n_terms: int) -> LuceneBM25:
        """:meth:`index` from the documents' lengths and their term ids end to end (one array):
        no Python list per document, which at a million documents is ~0.5 GB."""
        from scipy.sparse import csc_matrix, csr_matrix

        n_docs = len(lengths)
        doc_count = int(np.count_nonzero(lengths))  # documents with at least one term in the field
        total = int(lengths.sum())
        self.n_docs, self.n_terms, self.doc_count, self.sum_total_term_freq = n_docs, int(n_terms), doc_count, total
        # term frequencies: a (documents x terms) count matrix, duplicates summed, then by term;
        # 32-bit indices where they fit (half the memory), and a copy of the term ids, which
        # sum_duplicates sorts in place (the caller's may be read only: the analyzer keeps them)
        small = total < np.iinfo(np.int32).max and self.n_terms < np.iinfo(np.int32).max
        index_dtype = np.int32 if small else np.int64
        indptr = np.zeros(n_docs + 1, dtype=index_dtype)
        np.cumsum(lengths, out=indptr[1:])
        indices = np.array(term_ids, dtype=index_dtype)
        tf = csr_matrix((np.ones(total, dtype=np.float32), indices, indptr), shape=(n_docs, max(self.n_terms, 1)))
        del indices
        tf.sum_duplicates()
        tf = tf.tocsc()  # columns = terms
        df = np.diff(tf.indptr).astype(np.int64)
        with np.errstate(divide="ignore", invalid="ignore"):
            idf64 = np.log(1.0 + (doc_count - df + 0.5) / (df + 0.5))
        self.idf = idf64.astype(np.float32)
        self.avgdl = np.float32(total / float(doc_count)) if doc_count else np.float32(0.0)
        rows = tf.indices  # documents of each posting, column by column
        self._inverse = self._inverse_norms(lengths)
        post = self._posting_scores(tf.data, rows, tf.indptr, self._inverse)
        # terms x documents, float64 so that sums over a query's terms are exact
        shape = (n_docs, tf.shape[1])
        self._matrix = csc_matrix((post, rows, tf.indptr), shape=shape).T.tocsr()
        del post
        # each posting's frequency, aligned with the matrix's entries (the same structure gives the
        # same order): in the smallest integer type that holds it (one byte a posting for passages,
        # where the float32 denominators took four; their matrix shared these indices), for the
        # boosts that are not powers of two, scored anew from it (:meth:`_boosted_row`)
        self._freqs = csc_matrix((_compact_counts(tf.data), rows, tf.indptr), shape=shape).T.tocsr().data
        return self

    def _posting_scores(self, freqs: np.ndarray, rows: np.ndarray, indptr: np.ndarray, inverse: np.ndarray) -> np.ndarray:
        """Each posting's score in float32, in Lucene's order (``weight - weight / (1 + freq * inv)``),
        stored as float64, postings by term.

        Computed a block of terms at a time (about :data:`POSTING_BLOCK` postings): the whole
        corpus's temporaries (each posting's weight, its norm, the float32 score before its float64
        copy: 16 bytes a posting) were the peak of an evaluation at 300,000 documents.
        """
        post = np.empty(len(rows), dtype=np.float64)
        n_terms = len(indptr) - 1
        # term boundaries about POSTING_BLOCK postings apart
        cuts = np.unique(np.concatenate(([0], np.searchsorted(indptr, np.arange(POSTING_BLOCK, indptr[-1], POSTING_BLOCK)), [n_terms])))
        for t0, t1 in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
            start, end = int(indptr[t0]), int(indptr[t1])
            weight = np.repeat(self.idf[t0:t1], np.diff(indptr[t0 : t1 + 1]))
            d = np.float32(1.0) + freqs[start:end] * inverse[rows[start:end]]  # float32 frequencies
            post[start:end] = weight - weight / d
        return post

    def _inverse_norms(self, lengths: np.ndarray) -> np.ndarray:
        """Per document, ``cache[norm]``: ``1 / (k1 * ((1 - b) + b * length / avgdl))`` in float32."""
        if self.norms == "lucene":
            self.norm_bytes = encode_lengths(lengths)
            return norm_cache(self.k1, self.b, self.avgdl)[self.norm_bytes]
        k1f, bf = np.float32(self.k1), np.float32(self.b)
        one_minus_b = np.float32(np.float32(1.0) - bf)
        with np.errstate(divide="ignore"):
            return (np.float32(1.0) / (k1f * (one_minus_b + (bf * lengths.astype(np.float32)) / self.avgdl))).astype(np.float32)

    def _boosted_row(self, term: int, boost: int) -> tuple[np.ndarray, np.ndarray]:
        """``(documents, float32 scores)`` of one term under a query boost, in Lucene's order:
        ``weight = (float) boost * idf``, then ``weight - weight / (1 + freq * cache[norm])``."""
        start, end = self._matrix.indptr[term], self._matrix.indptr[term + 1]
        docs = self._matrix.indices[start:end]
        weight = np.float32(boost) * self.idf[term]
        denom = np.float32(1.0) + self._freqs[start:end].astype(np.float32) * self._inverse[docs]  # as _posting_scores: the same bits
        return docs, (weight - weight / denom).astype(np.float32)

    def score_batch(self, query_term_ids: Sequence[Sequence[int]]) -> np.ndarray:
        """Scores of every document for each query (float32, ``(len(queries), n_docs)``).

        A term repeated ``n`` times is one clause of boost ``n`` (see the module's docstring):
        powers of two scale the precomputed postings exactly; other counts are scored anew."""
        if not len(query_term_ids):
            return np.zeros((0, self.n_docs), dtype=np.float32)
        return self.score_sparse(query_term_ids).toarray()

    def score_sparse(self, query_term_ids: Sequence[Sequence[int]]) -> Any:
        """:meth:`score_batch`'s scores as a sparse ``(len(queries), n_docs)`` float32 CSR matrix
        holding the documents that share a term with each query (every other scores 0).

        Memory grows with the matching documents, not with ``queries x documents``: at a million
        documents a dense float64 block of 256 queries would take 2 GB. The sums are taken in
        double (exact, see the module's docstring) and rounded to float32 once, as Lucene does."""
        from scipy.sparse import coo_matrix, csr_matrix

        n_q = len(query_term_ids)
        data, cols, indptr = [], [], [0]
        boosted: list[tuple[int, int, int]] = []  # (query, term, boost)
        for qi, q in enumerate(query_term_ids):
            c = np.bincount(np.asarray(q, dtype=np.int64)) if len(q) else np.zeros(0, dtype=np.int64)
            nz = np.flatnonzero(c)
            exact = (c[nz] & (c[nz] - 1)) == 0  # a power of two: n * score is exact in float32
            cols.append(nz[exact])
            data.append(c[nz][exact].astype(np.float64))
            indptr.append(indptr[-1] + int(exact.sum()))
            boosted.extend((qi, int(t), int(n)) for t, n in zip(nz[~exact], c[nz][~exact]))
        qm = csr_matrix(
            (np.concatenate(data or [np.zeros(0)]), np.concatenate(cols or [np.zeros(0, dtype=np.int64)]), np.asarray(indptr)),
            shape=(n_q, self._matrix.shape[0]),
        )
        out = (qm @ self._matrix).tocsr()
        if boosted:  # summed in double, like the other clauses
            parts = [(np.full(len(docs), qi), docs, scores.astype(np.float64)) for qi, term, n in boosted for docs, scores in [self._boosted_row(term, n)]]
            rows, docs, scores = (np.concatenate(x) for x in zip(*parts))
            out = (out + coo_matrix((scores, (rows, docs)), shape=out.shape).tocsr()).tocsr()
        # rounded once to float32; the product's entries are distinct per row, so they need no
        # sorting (``astype`` would sort every row's documents first: most of the ranking's time)
        return csr_matrix((out.data.astype(np.float32), out.indices, out.indptr), shape=out.shape)

    def postings_of(self, query_term_ids: Sequence[Sequence[int]]) -> np.ndarray:
        """Per query, the postings of its terms summed (a bound on its matching documents and on
        the entries of its row in :meth:`score_sparse`), to size blocks of queries."""
        df = np.diff(self._matrix.indptr)
        return np.array([int(df[np.unique(np.asarray(q, dtype=np.int64))].sum()) if len(q) else 0 for q in query_term_ids], dtype=np.int64)
