"""Twin preference: over the relevant (query, document) pairs of the split, the share whose LLM
copy is ranked above its original, tested against 1/2 with a query-clustered sign-flip test (the
test that marks significance), a cluster bootstrap CI over queries, and beside them the exact
two-sided sign test over the pooled pairs (``scipy.stats.binomtest``'s p, p = 1/2: :func:`.resampling.sign_test_p`).

**Why clustered.** The pairs of one query share a ranking, so their outcomes are not
independent; the pair sign test treats them as if they were and is anti-conservative when
outcomes cluster by query (8.6% rejections at α = 0.05 with no effect in the clustered
simulation of ``tests/evaluation/test_twin_preference_cluster.py``, against 3.5% for the clustered test). It is kept as what it is: a test
that assumes independent pairs.

**The clustered test.** Per query, d = llm_first − human_first over its decided pairs; the
statistic is the sum of d over queries (= 2·llm_first − pairs, so it moves with the pooled
rate). Assumption (H0): within each pair the two copies are exchangeable, so each query's d is
symmetric about 0 independently of the other queries; queries are the independent units. The
null distribution flips the sign of each query's d: exactly (the distribution over all 2^m
patterns, by convolution) when m, the
queries with d ≠ 0, is at most :data:`EXACT_MAX_QUERIES` (queries with d = 0 do not change the
sum and are left out of the enumeration), else ``n_resamples`` seeded flips with
p = (1 + #{|T*| ≥ |T|}) / (1 + R), never 0.

**The CI.** A seeded percentile bootstrap over queries (``scipy.stats.bootstrap``'s, :mod:`.resampling`; a query's
llm_first and decided pairs resampled together) of the pooled rate.

The unit is a relevant (query, document) pair whose two copies are both in the run's corpus; a
pair with a copy absent from the corpus is *unpaired* (left out and counted), whatever the
qrels say. A copy that was not retrieved ranks below every retrieved one; a pair where neither
copy was retrieved is left out (``neither_retrieved``). Two copies with equal scores are a tie:
the documented tie rule, not the retriever, ordered them, so they are left out and counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from sourcebias.evaluation.stats.base import Column, Record, StatContext, Statistic, known, register_statistic, result_pairs, total
from sourcebias.evaluation.stats.resampling import bootstrap_distributions, percentile_interval, sign_test_p

EXACT_MAX_QUERIES = 20
EXACT = "exact sign-flip over queries"
RANDOMIZED = "seeded sign-flip over queries"


def pair_counts(run: Any, qrels: Any, query_ids: Sequence[str], human: str, llm: str) -> dict[str, Any]:
    """Per query (of ``query_ids``) its LLM-first and human-first pair counts (arrays), and the
    split's ties, pairs with neither copy retrieved and unpaired pairs (see the module docstring)."""
    corpus = run.corpus
    lf, hf = np.zeros(len(query_ids), dtype=np.int64), np.zeros(len(query_ids), dtype=np.int64)
    neither = ties = unpaired = 0
    for i, q in enumerate(query_ids):
        pos = run.positions.get(q)
        rank_of = dict(zip(pos.tolist(), range(len(pos)))) if pos is not None else {}  # corpus position -> rank
        scores = run.scores.get(q)
        for d, g in qrels.get(q, {}).items():
            if g <= 0:
                continue
            ph, pl = corpus.position(d, human), corpus.position(d, llm)
            if ph is None or pl is None:
                unpaired += 1
                continue
            h, g = _ranked(rank_of, scores, ph), _ranked(rank_of, scores, pl)
            if h is None and g is None:
                neither += 1
            elif h is not None and g is not None and h[1] == g[1]:
                ties += 1
            elif h is None or (g is not None and g[0] < h[0]):
                lf[i] += 1
            else:
                hf[i] += 1
    return {"llm_first": lf, "human_first": hf, "ties": ties, "neither_retrieved": neither, "unpaired": unpaired}


def _ranked(rank_of: dict[int, int], scores: Any, position: int) -> tuple[int, float] | None:
    """(rank, score) of the document at a corpus position in one query's ranking; None if absent."""
    r = rank_of.get(position)
    return None if r is None else (r, float(scores[r]))


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


def sign_flip_normal_p(total: Any, squares: Any, correction: float = 0.0) -> np.ndarray:
    """Large-sample two-sided p of the sign-flip test of a sum of per-query values d: under
    independent sign flips Σ s_q d_q has mean 0 and variance Σ d², so
    z = max(0, |Σd| − ``correction``) / √(Σd²) is compared with N(0, 1) (p = 2·Φ(−z)); a
    continuity correction of 1 (half the step 2 of the sums of integer d) brings it close to the
    exact test. Vectorised over ``total`` (Σd) and ``squares`` (Σd²); NaN where Σd² = 0 (every d
    is 0: undefined, never a rejection). Not what :func:`cluster_sign_flip_test` reports (exact
    or seeded); :mod:`sourcebias.power.twin` uses it to simulate that test fast."""
    from scipy.special import ndtr  # N(0, 1)'s cdf: scipy.stats.norm.sf(z) is ndtr(-z)

    t, q = np.asarray(total, dtype=float), np.asarray(squares, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.maximum(0.0, np.abs(t) - correction) / np.sqrt(q)
    return np.where(q > 0, 2.0 * ndtr(-z), np.nan)


def cluster_sign_flip_test(llm_first: Sequence[int], human_first: Sequence[int], *, n_resamples: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """Two-sided query-clustered sign-flip test of rate = 1/2 (see the module docstring):
    ``p``, ``method`` (exact or seeded), ``resamples`` (2^m sign patterns when exact, else the
    seeded flips) and ``queries`` (with a decided pair). Exact: :func:`exact_sign_flip_p`.
    Seeded: :func:`~sourcebias.evaluation.stats.paired_tests.sign_flip_sums` (a sign flip per
    query, ``numpy.random.default_rng(seed)``, drawn vectorised; the sums of integer d are exact),
    with p = (1 + #{|T*| >= |T|}) / (1 + R)."""
    from sourcebias.evaluation.stats.paired_tests import sign_flip_sums

    a, b = np.asarray(llm_first, dtype=np.int64), np.asarray(human_first, dtype=np.int64)
    decided = int(np.count_nonzero(a + b))
    d = (a - b)[a != b]
    if len(d) == 0:
        return {
            "p": 1.0 if decided else float("nan"),
            "method": EXACT if decided else "none (no decided pair)",
            "resamples": 1 if decided else 0,
            "queries": decided,
        }
    if len(d) <= EXACT_MAX_QUERIES:
        return {"p": exact_sign_flip_p(d), "method": EXACT, "resamples": 2 ** len(d), "queries": decided}
    sums, _ = sign_flip_sums(d.astype(float), n_resamples=min(int(n_resamples), 2 ** len(d) - 1), seed=seed)
    t, null = abs(float(np.sum(d))), np.abs(sums)
    hits = int(np.count_nonzero(null >= t))  # integer sums: no rounding in the comparison
    return {"p": float(min(1.0, (1 + hits) / (1 + len(null)))), "method": RANDOMIZED, "resamples": len(null), "queries": decided}


def cluster_bootstrap_rate(
    llm_first: Sequence[int], human_first: Sequence[int], *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> dict[str, Any]:
    """Percentile bootstrap CI of the pooled rate, queries with a decided pair resampled with
    all their pairs (``scipy.stats.bootstrap(paired=True)``'s draws and interval, seeded:
    :mod:`.resampling`): ``low``, ``high``, ``method``, ``resamples``, ``confidence``; NaN bounds
    with fewer than 2 such queries."""
    a, b = np.asarray(llm_first, dtype=float), np.asarray(human_first, dtype=float)
    keep = (a + b) > 0
    a, n = a[keep], (a + b)[keep]
    out = {"low": float("nan"), "high": float("nan"), "method": "percentile (queries resampled)", "resamples": int(n_resamples), "confidence": confidence}
    if len(a) < 2:
        out.update(method="none (fewer than 2 queries with a decided pair)", resamples=0)
        return out
    [dist] = bootstrap_distributions(lambda x, y, axis=-1: np.sum(x, axis=axis) / np.sum(y, axis=axis), [(a, n)], n_resamples, seed)
    out["low"], out["high"] = percentile_interval(dist, confidence)
    return out


def twin_preference(
    run: Any,
    qrels: Any,
    query_ids: Sequence[str],
    human: str,
    llm: str,
    *,
    n_resamples: int = 10_000,
    bootstrap_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Counts, the query-clustered sign-flip test (``p_cluster``), the cluster bootstrap CI and
    the pair sign test (``p_sign_test``, assumes independent pairs) of the LLM-first pairs."""
    c = pair_counts(run, qrels, query_ids, human, llm)
    llm_first, human_first = int(c["llm_first"].sum()), int(c["human_first"].sum())
    n = llm_first + human_first
    p = sign_test_p(llm_first, n) if n else float("nan")
    flip = cluster_sign_flip_test(c["llm_first"], c["human_first"], n_resamples=n_resamples, seed=seed)
    ci = cluster_bootstrap_rate(c["llm_first"], c["human_first"], n_resamples=bootstrap_resamples, confidence=confidence, seed=seed)
    return {
        "rate": llm_first / n if n else float("nan"), "llm_first": llm_first, "human_first": human_first, "pairs": n,
        "ties": c["ties"], "neither_retrieved": c["neither_retrieved"], "unpaired": c["unpaired"], "p_sign_test": p,
        "p_cluster": flip["p"], "p_cluster_method": flip["method"], "p_cluster_resamples": flip["resamples"], "queries": flip["queries"],
        "ci_low": ci["low"], "ci_high": ci["high"], "ci_level": ci["confidence"], "ci_method": ci["method"], "ci_resamples": ci["resamples"], "seed": seed,
    }  # fmt: skip


@dataclass
class TwinPreferenceRecord(Record):
    twin_pref_rate: float = float("nan")
    twin_pref_llm_first: int = 0
    twin_pref_human_first: int = 0
    twin_pref_pairs: int = 0
    twin_pref_ties: int = 0
    twin_pref_neither: int = 0
    twin_pref_unpaired: int = 0
    twin_pref_p: float = float("nan")  # the pair sign test (assumes independent pairs)
    twin_pref_p_cluster: float = float("nan")  # the query-clustered sign-flip test: marks significance
    twin_pref_p_method: str = ""
    twin_pref_resamples: int = 0
    twin_pref_queries: int = 0
    twin_pref_ci_low: float = float("nan")
    twin_pref_ci_high: float = float("nan")
    twin_pref_ci_level: float = 0.95
    twin_pref_ci_method: str = ""
    twin_pref_ci_resamples: int = 0
    twin_pref_seed: int = 0

    columns: ClassVar[tuple[Column, ...]] = (
        Column("twin_pref_rate", "twin pref.", "pct", mark="twin_pref_p_cluster"),
        Column("twin_pref_pairs", "pairs", "int"),
        Column("twin_pref_queries", "queries", "int"),
        Column("twin_pref_ci_low", "CI low", "pct"),
        Column("twin_pref_ci_high", "CI high", "pct"),
        Column("twin_pref_p_cluster", "twin p (queries)", "p"),
        Column("twin_pref_p", "twin p (sign, pairs)", "p"),
    )


class TwinPreference(Statistic):
    """Per retriever and LLM source: the share of relevant pairs whose LLM copy ranks first."""

    name = "twin_preference"
    aliases = ("twin", "twin_pref", "pairs")
    description = (
        "share of relevant twin pairs whose LLM copy is ranked above its original (query-clustered sign-flip test, cluster bootstrap CI; pair sign test beside)"
    )
    per_measure = False
    needs_qrels = True
    record = TwinPreferenceRecord

    def compute(self, result: Any, ctx: StatContext) -> list[Record]:
        from sourcebias.evaluation.results import MIXED, RunKey

        out: list[Record] = []
        if ctx.qrels is None:
            return out
        for name, llm in result_pairs(result):
            run = result.runs.get(RunKey(name, MIXED))
            if run is None:
                continue
            t = twin_preference(
                run,
                ctx.qrels,
                result.query_ids,
                result.human_source,
                llm,
                n_resamples=ctx.significance_resamples,
                bootstrap_resamples=ctx.bootstrap_resamples,
                confidence=ctx.confidence,
                seed=ctx.seed,
            )
            out.append(
                TwinPreferenceRecord(
                    name, llm, "", twin_pref_rate=t["rate"], twin_pref_llm_first=t["llm_first"], twin_pref_human_first=t["human_first"], twin_pref_pairs=t["pairs"],
                    twin_pref_ties=t["ties"], twin_pref_neither=t["neither_retrieved"], twin_pref_unpaired=t["unpaired"], twin_pref_p=t["p_sign_test"],
                    twin_pref_p_cluster=t["p_cluster"], twin_pref_p_method=t["p_cluster_method"], twin_pref_resamples=t["p_cluster_resamples"], twin_pref_queries=t["queries"],
                    twin_pref_ci_low=t["ci_low"], twin_pref_ci_high=t["ci_high"], twin_pref_ci_level=t["ci_level"], twin_pref_ci_method=t["ci_method"],
                    twin_pref_ci_resamples=t["ci_resamples"], twin_pref_seed=t["seed"],
                )
            )  # fmt: skip
        return out

    def caption(self, records: Sequence[Record]) -> str:
        recs = cast("list[TwinPreferenceRecord]", list(records))  # this statistic's own records
        if not recs:
            return ""
        methods = "; ".join(known(r.twin_pref_p_method for r in recs)) or "sign-flip over queries"
        resamples = ", ".join(f"{int(n):,}" for n in known(r.twin_pref_resamples for r in recs)) or "?"
        levels = ", ".join(f"{lv:.0%}" for lv in known(r.twin_pref_ci_level for r in recs)) or "a"
        ci_methods = "; ".join(known(r.twin_pref_ci_method for r in recs)) or "?"
        ci_resamples = ", ".join(f"{int(n):,}" for n in known(r.twin_pref_ci_resamples for r in recs)) or "?"
        seeds = ", ".join(str(int(x)) for x in known(r.twin_pref_seed for r in recs)) or "?"
        text = (
            "Twin pref.: share of the relevant (query, document) pairs whose LLM copy is ranked above its original. "
            f"* marks p < 0.05 (uncorrected) of the query-clustered test of rate = 1/2 (twin p (queries)): the per-query llm-first − human-first counts, "
            f"summed, against random sign flips per query ({methods}; {resamples} sign patterns; seed {seeds}); it assumes the two copies of a pair "
            f"exchangeable under H0 and queries independent. CI: {levels} bootstrap over queries ({ci_methods}; {ci_resamples} resamples; seed {seeds}). "
            "twin p (sign, pairs): the exact sign test over the pooled pairs, shown for reference only: it assumes independent pairs, "
            "but the pairs of one query share a ranking, so it is anti-conservative when outcomes cluster by query. "
            "Pairs with equal scores (ties), with neither copy retrieved, or with a copy absent from the corpus (unpaired) are left out"
        )
        ties, neither, unpaired = total(r.twin_pref_ties for r in recs), total(r.twin_pref_neither for r in recs), total(r.twin_pref_unpaired for r in recs)
        where = "" if len(recs) == 1 else " in all rows together"
        return text + f" ({ties:,} ties, {neither:,} with neither copy retrieved, {unpaired:,} unpaired{where})."


register_statistic(TwinPreference())
