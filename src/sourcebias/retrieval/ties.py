"""The tie-breaking rule, used by every retriever and re-ranker in sourcebias.

A document and its LLM twin often receive the same score (identical texts, identical
embeddings, a re-ranker's saturated score). How such ties are ordered decides which source
is ranked first, so the rule must not favour a source. Corpus order (human file first) or
document-id order — what search engines and ``trec_eval`` do — would.

**Rule.** Documents are ordered by score, highest first. Documents with exactly equal scores
are ordered by a key ``splitmix64(h(source, doc_id) XOR h(seed, query_id))``, smallest first,
where ``h`` is a 64-bit BLAKE2b hash. The key is a pseudo-random function of the query, the
document and its source, so:

* it is deterministic (same seed, same order, on any machine and in any corpus order);
* for any tied pair, each source wins with probability 1/2 over queries and seeds (it depends
  on neither the position of a document in the corpus, nor the order or names of sources);
* a different ``seed`` gives an independent draw, so a result's sensitivity to ties can be
  measured by rerunning with other seeds.

If two keys were equal (probability about 2^-64) the corpus position decides, which keeps the
order total.

Only exact ties are broken this way; retrievers that could produce *spurious* near-ties for
identical texts (e.g. encoders fed different batch paddings) avoid them by encoding each
distinct text once.

Because external tools (``trec_eval``) re-sort tied scores by document name, sourcebias passes
the final rank, not the raw score, to the metric library.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sourcebias.data.corpus import hash64

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_G = np.uint64(0x9E3779B97F4A7C15)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The SplitMix64 finaliser, vectorised (wrapping uint64 arithmetic)."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64, copy=True) + _G
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def query_hash(query_id: str, seed: int = 0) -> np.uint64:
    return np.uint64(hash64("query", str(seed), query_id))


def tie_resolved_scores(scores: np.ndarray) -> np.ndarray:
    """The scores of one ranked list (best first) made strictly decreasing, as float64 values
    that are exact in float32, so that a tool re-sorting by score keeps the tie rule's order.

    Every writer of scores for other tools uses it: nested-JSON runs
    (:mod:`sourcebias.retrieval.formats`), ranx runs and PyTerrier frames
    (:mod:`sourcebias.pyterrier`); tools that re-sort by score (trec_eval, ranx, PyTerrier, BEIR)
    would otherwise break our ties by document name.

    Each score is rounded to float32 (trec_eval, through pytrec_eval, keeps scores in single
    precision, so a float64 difference below that would be a tie again), kept where it is below
    the previous one, and otherwise replaced by the next float32 below its predecessor
    (``numpy.nextafter``). The values stay within a few float32 units in the last place of the
    originals, and re-sorting them by score, in single or double precision, gives back the list's
    order. Lists with a score that is not finite in float32 get ``n - rank`` instead.

    Args:
        scores: one list's scores, in its final order (non-increasing).

    Returns:
        float64 values, exact in float32, strictly decreasing.
    """
    s = np.asarray(scores, dtype=np.float64)
    n = len(s)
    if n == 0:
        return s.copy()
    with np.errstate(over="ignore"):
        s32 = s.astype(np.float32)
    if not np.isfinite(s32).all():
        return np.arange(n, 0, -1, dtype=np.float64)
    out = s32.tolist()
    down = np.float32(-np.inf)
    for i in range(1, n):
        if out[i] >= out[i - 1]:
            out[i] = float(np.nextafter(np.float32(out[i - 1]), down))
    return np.asarray(out, dtype=np.float64)


def tie_keys(doc_hashes: np.ndarray, query_id: str, seed: int = 0) -> np.ndarray:
    """Per-document tie-break keys for one query (see the module docstring)."""
    return splitmix64(doc_hashes ^ query_hash(query_id, seed))


_LOW32 = np.uint64(0xFFFFFFFF)


def rank_order(scores: np.ndarray, keys: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Indices that sort ``(score desc, key asc, position asc)``.

    float32 scores (a lexical retriever's): one sort of a 64-bit integer made of the score's
    bits (reordered so that the integer decreases as the score grows) and the key's upper 32
    bits, where :func:`numpy.lexsort` makes three passes: a third of the time of the tie rule
    on MS MARCO's 6,979 queries. It is that order exactly unless two candidates share the
    score and the key's upper half (about 2^-32 per tied pair), when ``lexsort`` decides.
    """
    if scores.dtype == np.float32 and len(scores) > 1 and not np.isnan(scores).any():
        bits = (scores + np.float32(0.0)).view(np.uint32).astype(np.uint64)  # + 0: -0.0 and 0.0 are one score
        ascending = np.where(bits >> np.uint64(31), ~bits & _LOW32, bits | np.uint64(0x80000000))  # grows with the value
        combined = ((_LOW32 - ascending) << np.uint64(32)) | (np.asarray(keys, dtype=np.uint64) >> np.uint64(32))
        order = np.argsort(combined)
        ordered = combined[order]
        if not (ordered[1:] == ordered[:-1]).any():
            return order
    return np.lexsort((positions, keys, -scores))


class TieRule:
    """The tie rule bound to one corpus and seed: the one place that orders ranked lists.

    ``top(query_id, scores, positions, k)`` selects and orders the best ``k`` candidates;
    ``order(query_id, scores, positions)`` orders all of them. ``positions`` are corpus
    positions (they decide each candidate's tie key), ``scores`` their scores; both return
    indices into the given arrays, best first.
    """

    def __init__(self, corpus, seed: int = 0):
        self.corpus = corpus
        self.seed = int(seed)
        self._hashes = corpus.key_hashes()

    def keys(self, query_id: str, positions: np.ndarray) -> np.ndarray:
        return tie_keys(self._hashes[positions], query_id, self.seed)

    def top(self, query_id: str, scores: np.ndarray, positions: np.ndarray, k: int) -> np.ndarray:
        return select_top(scores, lambda p: self.keys(query_id, p), positions, k)

    def order(self, query_id: str, scores: np.ndarray, positions: np.ndarray) -> np.ndarray:
        return select_top(scores, lambda p: self.keys(query_id, p), positions, len(scores))


def select_top(
    scores: np.ndarray,
    keys: np.ndarray | Callable[[np.ndarray], np.ndarray],
    positions: np.ndarray,
    k: int,
) -> np.ndarray:
    """Indices (into the given arrays) of the top ``k`` under the total order of :func:`rank_order`,
    in rank order.

    ``keys`` is the array of tie keys, or a function from the candidates' ``positions`` to
    their keys (so keys are computed only for the few candidates). Runs in O(n) for the
    selection plus O(m log m) for the m candidates whose score is at least the k-th largest
    (all documents tied at the cut-off are candidates, so the rule decides which make the list).
    """
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return np.empty(0, dtype=np.int64)
    if np.issubdtype(scores.dtype, np.floating) and np.isnan(scores).any():
        scores = np.where(np.isnan(scores), -np.inf, scores)
    cand = _at_least_kth(scores, k) if k < n else np.arange(n)
    cand_pos = positions[cand]
    cand_keys = keys(cand_pos) if callable(keys) else keys[cand]
    order = rank_order(scores[cand], cand_keys, cand_pos)[:k]
    return cand[order]


#: Candidates past which :func:`_at_least_kth` first narrows them with a sample's threshold.
PREFILTER_MIN = 1 << 14
#: The sample's stride: every 16th score.
_STRIDE = 16


def _at_least_kth(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the scores at least the ``k``-th largest (``0 < k < len(scores)``; no NaN), in
    index order: the ``k`` best and every score tied with the ``k``-th.

    A long row (a query's matching documents in a large corpus, :data:`PREFILTER_MIN` or more)
    is narrowed first: the ``2k/16``-th largest of every 16th score is a threshold that about
    ``2k`` scores reach; when at least ``k`` reach it, the ``k``-th largest of the row is the
    ``k``-th largest of those, so the partition runs over them instead of the whole row (the
    largest part of the selection at 100,000 documents: the ranking phase of 6,979 queries over a
    million documents went from 50 s to 35 s). When fewer reach it, the whole row
    is partitioned. Either way the result is the same indices.
    """
    n = scores.shape[0]
    if n >= PREFILTER_MIN and n >= 8 * k:
        sample = scores[::_STRIDE]
        r = min(len(sample), 2 * -(-k // _STRIDE))
        threshold = np.partition(sample, len(sample) - r)[len(sample) - r]
        reach = np.flatnonzero(scores >= threshold)
        if len(reach) >= k:
            sub = scores[reach]
            kth = np.partition(sub, len(sub) - k)[len(sub) - k]
            return reach[sub >= kth]
    kth = np.partition(scores, n - k)[n - k]
    return np.flatnonzero(scores >= kth)
