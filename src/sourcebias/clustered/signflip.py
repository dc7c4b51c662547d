"""The sign-flip randomization test of a sum of per-query values: the test of every query-clustered
mean of the package (:mod:`.mean_difference`) and of the paired tests over queries.

Under H0 each query's sum is symmetric about 0, independently of the other queries, so the null
distribution of their total flips the sign of each: exactly (all 2^m patterns, m the queries with
a non-zero sum; queries with a sum of 0 do not change the total) for up to
:data:`EXACT_MAX_QUERIES` of them, else ``n_resamples`` seeded patterns with
p = (1 + #{|T*| ≥ |T|}) / (1 + R), never 0. Exact p-values of sums that are multiples of a common
step (integer grade differences, pairwise halves) come from the null distribution built by
convolution; other sums enumerate the 2^m patterns (at most 2^20).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

EXACT_MAX_QUERIES = 20
EXACT = "exact sign-flip over queries"
RANDOMIZED = "seeded sign-flip over queries"

#: sign patterns drawn (or enumerated) per block: bounds the test's memory
_FLIP_BLOCK = 1 << 16
#: steps tried to write every sum as an integer multiple (an integer grade, a half, a quarter...)
_STEPS = (1, 2, 3, 4, 6, 8, 12, 16)


def _sign_flip_blocks(n: int, n_resamples: int, seed: int) -> tuple[Iterator[np.ndarray], bool]:
    """Blocks of sign patterns, packed: row r, byte j, bit i (least significant first) is 1 when
    value 8j + i is flipped; and whether the blocks hold all 2^n patterns.

    Exact when 2^n <= ``n_resamples``: every pattern once (pattern k flips the values of k's set
    bits). Otherwise ``n_resamples`` patterns, each value flipped with probability 1/2
    independently: the bits of the raw 64-bit stream of ``numpy.random.default_rng(seed)``,
    ``ceil(n / 64)`` words a pattern (the same patterns whatever the block size)."""
    exact = n < 63 and (1 << n) <= n_resamples
    total = (1 << n) if exact else int(n_resamples)
    words, nbytes = -(-n // 64), -(-n // 8)
    bits = np.random.default_rng(seed).bit_generator if not exact else None

    def blocks() -> Iterator[np.ndarray]:
        for start in range(0, total, _FLIP_BLOCK):
            m = min(_FLIP_BLOCK, total - start)
            if exact:
                raw = np.arange(start, start + m, dtype=np.uint64).reshape(m, 1)
            else:
                assert bits is not None  # drawn whenever the test is not exact
                raw = bits.random_raw(m * words).reshape(m, words)
            yield raw.astype("<u8", copy=False).view(np.uint8)[:, :nbytes]

    return blocks(), exact


def _byte_sums(d: np.ndarray) -> np.ndarray:
    """``table[b, j]``: the sum of the d's of values 8j..8j+7 whose bits are set in the byte b."""
    nbytes = -(-len(d) // 8)
    padded = np.zeros(nbytes * 8)
    padded[: len(d)] = d
    bit_of_byte = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(float)
    return bit_of_byte @ padded.reshape(nbytes, 8).T


def sign_flip_sums(d: np.ndarray, *, n_resamples: int = 10_000, seed: int = 0) -> tuple[np.ndarray, bool]:
    """The randomization distribution of ``Σ d`` under sign flips of its terms, and whether it is
    exact. Drawn vectorised: ``Σd - 2·F·d`` for 0/1 flip patterns ``F`` (random bits,
    :func:`_sign_flip_blocks`), summed eight values at a time through a table of the 256 partial
    sums of each eight (hand-written: SciPy's ``permutation_test`` permutes each pair's two values
    with ``Generator.permuted``, a hundred times slower).

    Args:
        d: Per-query values (no NaN).
        n_resamples: Random sign patterns; all 2^n when that is no more.
        seed: Seed of ``numpy.random.default_rng``.

    Returns:
        ``(sums, exact)``: one total per pattern (the pattern that flips nothing gives
        ``float(d.sum())`` exactly; integer ``d`` give exact sums), 2^n values when ``exact``,
        else ``n_resamples``.
    """
    d = np.asarray(d, dtype=float)
    total = float(d.sum())
    blocks, exact = _sign_flip_blocks(len(d), n_resamples, seed)
    table = _byte_sums(d)
    column = np.arange(table.shape[1])
    return np.concatenate([total - 2.0 * table[packed, column].sum(axis=1) for packed in blocks]), exact


def exact_sign_flip_p(d: np.ndarray) -> float:
    """Exact two-sided p of the sum of the integer values ``d`` under independent sign flips:
    the null distribution built by convolution, P(sum = s) over the 2^m patterns. Hand-written
    because SciPy's exact ``permutation_test`` lists the 2^m patterns (about 30 s for m = 20);
    the convolution is the same distribution in O(m · Σ|d|)."""
    t = abs(int(np.sum(d)))
    d = np.abs(np.asarray(d, dtype=np.int64))
    span = int(d.sum())
    dist = np.zeros(2 * span + 1)
    dist[span] = 1.0  # index = sum + span
    for v in d.tolist():
        dist = 0.5 * (np.roll(dist, v) + np.roll(dist, -v))  # no wrap-around: |partial sums| <= span
    sums = np.abs(np.arange(-span, span + 1))
    return float(min(1.0, dist[sums >= t].sum()))


def _integer_step(d: np.ndarray) -> int | None:
    """The smallest of :data:`_STEPS` that makes every value of ``d`` an integer (within rounding),
    or None (the exact test then enumerates the patterns)."""
    for step in _STEPS:
        scaled = d * step
        if np.allclose(scaled, np.round(scaled), rtol=0.0, atol=1e-9) and float(np.abs(np.round(scaled)).sum()) <= 1e7:
            return step
    return None


def sign_flip_test(sums: Any, *, n_resamples: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """Two-sided sign-flip test of ``Σ sums = 0`` over queries (see the module docstring).

    Args:
        sums: One value per query (its sum over items); NaN not allowed.
        n_resamples: Seeded patterns when more than :data:`EXACT_MAX_QUERIES` queries have a
            non-zero sum.
        seed: Seed of the patterns.

    Returns:
        ``p`` (1 when every sum is 0: nothing leans either way), ``method`` (exact or seeded),
        ``resamples`` (2^m when exact, else the seeded patterns) and ``nonzero`` (m).
    """
    s = np.asarray(sums, dtype=float)
    d = s[s != 0]
    m = len(d)
    if m == 0:
        return {"p": 1.0, "method": EXACT, "resamples": 1, "nonzero": 0}
    if m <= EXACT_MAX_QUERIES:
        step = _integer_step(d)
        if step is not None:
            return {"p": exact_sign_flip_p(np.round(d * step).astype(np.int64)), "method": EXACT, "resamples": 2**m, "nonzero": m}
        null, _ = sign_flip_sums(d, n_resamples=2**m)
        gamma = 100 * np.finfo(float).eps * float(np.abs(d).sum())
        return {"p": float(min(1.0, np.mean(np.abs(null) >= abs(float(d.sum())) - gamma))), "method": EXACT, "resamples": 2**m, "nonzero": m}
    null, _ = sign_flip_sums(d, n_resamples=min(int(n_resamples), 2**m - 1), seed=seed)
    gamma = 100 * np.finfo(float).eps * float(np.abs(d).sum())
    hits = int(np.count_nonzero(np.abs(null) >= abs(float(d.sum())) - gamma))
    return {"p": float(min(1.0, (1 + hits) / (1 + len(null)))), "method": RANDOMIZED, "resamples": len(null), "nonzero": m}


def sign_flip_normal_p(total: Any, squares: Any, correction: float = 0.0) -> np.ndarray:
    """Large-sample two-sided p of the sign-flip test of a sum of per-query values d: under
    independent sign flips Σ s_q d_q has mean 0 and variance Σ d², so
    z = max(0, |Σd| − ``correction``) / √(Σd²) is compared with N(0, 1) (p = 2·Φ(−z)); a
    continuity correction of 1 (half the step 2 of the sums of integer d) brings it close to the
    exact test. Vectorised over ``total`` (Σd) and ``squares`` (Σd²); NaN where Σd² = 0 (every d
    is 0: undefined, never a rejection). Not what :func:`sign_flip_test` reports (exact or
    seeded); :mod:`sourcebias.power.twin` uses it to simulate that test fast."""
    from scipy.special import ndtr  # N(0, 1)'s cdf: scipy.stats.norm.sf(z) is ndtr(-z); scipy.stats costs 0.7 s to import

    t, q = np.asarray(total, dtype=float), np.asarray(squares, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.maximum(0.0, np.abs(t) - correction) / np.sqrt(q)
    return np.where(q > 0, 2.0 * ndtr(-z), np.nan)
