"""Twin preference: over the relevant (query, document) pairs of the split, the share whose LLM
copy is ranked above its original, tested against 1/2 with a query-clustered sign-flip test (the
test that marks significance), a query-clustered CI, and beside them the exact two-sided sign
test over the pooled pairs (``scipy.stats.binomtest``'s p, p = 1/2: :func:`.resampling.sign_test_p`). The rate is a mean of paired
differences (each decided pair's d = +1 when its LLM copy ranks first, −1 otherwise: rate =
(1 + mean d) / 2), so its CI and test are those of the registered ``mean_difference`` estimator
(:mod:`sourcebias.clustered.mean_difference`), the judges' and the citation study's too, with its
refusals: with too few queries with a decided pair (1–4 at 95%) no CI and no clustered p.

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

**The CI.** The cluster-robust (CR1) t interval over queries of mean d, mapped to the rate
(see :mod:`sourcebias.clustered.mean_difference` for why not the percentile bootstrap).

The unit is a relevant (query, document) pair whose two copies are both in the run's corpus; a
pair with a copy absent from the corpus is *unpaired* (left out and counted), whatever the
qrels say. A copy that was not retrieved ranks below every retrieved one; a pair where neither
copy was retrieved is left out (``neither_retrieved``). Two copies with equal scores are a tie:
the documented tie rule, not the retriever, ordered them, so they are left out and counted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from sourcebias.clustered.signflip import EXACT, EXACT_MAX_QUERIES, RANDOMIZED, exact_sign_flip_p, sign_flip_normal_p, sign_flip_test
from sourcebias.evaluation.stats.base import Column, Record, StatContext, Statistic, known, register_statistic, result_pairs, total
from sourcebias.evaluation.stats.resampling import sign_test_p

__all__ = ["EXACT", "EXACT_MAX_QUERIES", "RANDOMIZED", "cluster_sign_flip_test", "exact_sign_flip_p", "pair_counts", "sign_flip_normal_p", "twin_preference"]


def pair_counts(run: Any, qrels: Any, query_ids: Sequence[str], human: str, llm: str) -> dict[str, Any]:
    """Per query (of ``query_ids``) its LLM-first and human-first pair counts (arrays), and the
    split's ties, pairs with neither copy retrieved and unpaired pairs (see the module docstring)."""
    corpus = run.corpus
    lf, hf = np.zeros(len(query_ids), dtype=np.int64), np.zeros(len(query_ids), dtype=np.int64)
    neither = ties = unpaired = 0
    for i, q in enumerate(query_ids):
        pos = run.positions.get(q)
        rank_of = _RankOf(pos)
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


class _RankOf:
    """A ranking's rank of a corpus position (None if absent): a scan of the ranking's positions
    for the first few lookups, a dict once a query asks for more (most queries have one or two
    relevant pairs: a dict of the top 1,000 per query was most of the statistics' time at 6,979
    queries)."""

    SCANS = 8

    def __init__(self, positions: np.ndarray | None) -> None:
        self.positions = positions
        self.asked = 0
        self.index: dict[int, int] | None = None

    def get(self, position: int) -> int | None:
        if self.positions is None:
            return None
        self.asked += 1
        if self.index is None and self.asked > self.SCANS:
            self.index = dict(zip(reversed(self.positions.tolist()), range(len(self.positions) - 1, -1, -1)))  # the first rank of a position
        if self.index is not None:
            return self.index.get(position)
        hit = np.flatnonzero(self.positions == position)
        return int(hit[0]) if len(hit) else None


def _ranked(rank_of: _RankOf, scores: Any, position: int) -> tuple[int, float] | None:
    """(rank, score) of the document at a corpus position in one query's ranking; None if absent."""
    r = rank_of.get(position)
    return None if r is None else (r, float(scores[r]))


def cluster_sign_flip_test(llm_first: Sequence[int], human_first: Sequence[int], *, n_resamples: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """Two-sided query-clustered sign-flip test of rate = 1/2 (see the module docstring):
    ``p``, ``method`` (exact or seeded), ``resamples`` (2^m sign patterns when exact, else the
    seeded flips) and ``queries`` (with a decided pair); the test of
    :func:`sourcebias.clustered.signflip.sign_flip_test` on d = llm_first − human_first."""
    a, b = np.asarray(llm_first, dtype=np.int64), np.asarray(human_first, dtype=np.int64)
    decided = int(np.count_nonzero(a + b))
    if not decided:
        return {"p": float("nan"), "method": "none (no decided pair)", "resamples": 0, "queries": 0}
    flip = sign_flip_test(a - b, n_resamples=n_resamples, seed=seed)
    return {"p": flip["p"], "method": flip["method"], "resamples": flip["resamples"], "queries": decided}


def twin_preference(
    run: Any, qrels: Any, query_ids: Sequence[str], human: str, llm: str, *, n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> dict[str, Any]:
    """Counts, the query-clustered test (``p_cluster``) and CI of the ``mean_difference`` estimator
    (refused, with ``refused`` the reason, with too few queries), and the pair sign test
    (``p_sign_test``, assumes independent pairs) of the LLM-first pairs."""
    from sourcebias.clustered import get_estimator
    from sourcebias.clustered.mean_difference import MeanDifference

    c = pair_counts(run, qrels, query_ids, human, llm)
    lf, hf = c["llm_first"], c["human_first"]
    llm_first, human_first = int(lf.sum()), int(hf.sum())
    n = llm_first + human_first
    estimator = get_estimator("mean_difference")
    assert isinstance(estimator, MeanDifference)  # the registered one
    est = estimator.from_query_sums(lf - hf, lf + hf, level=confidence, test_resamples=n_resamples, seed=seed)
    low, high, note = _bounded((1 + est.low) / 2, (1 + est.high) / 2)
    return {
        "rate": llm_first / n if n else float("nan"),
        "llm_first": llm_first,
        "human_first": human_first,
        "pairs": n,
        "ties": c["ties"],
        "neither_retrieved": c["neither_retrieved"],
        "unpaired": c["unpaired"],
        "p_sign_test": sign_test_p(llm_first, n) if n else float("nan"),
        "p_cluster": est.p,
        "p_cluster_method": est.p_method,
        "queries": est.queries,
        "ci_low": low,
        "ci_high": high,
        "ci_level": confidence,
        "ci_method": est.method,
        "refused": est.refused or "; ".join(x for x in (est.note, note) if x),
        "seed": seed,
    }


def _bounded(low: float, high: float) -> tuple[float, float, str]:
    """The rate's interval within [0, 1], and a note when it was cut there.

    The CR1 t interval is symmetric about the estimate, so near a rate of 0 or 1 it can reach past
    the bound (a rate of 0.3% with an interval of -0.3% to 0.9%). A rate outside [0, 1] is
    impossible, so cutting the interval there keeps its coverage; the note says it was cut.
    """
    cut = [side for side, bad in (("0", low < 0), ("1", high > 1)) if bad]
    if not cut:
        return low, high, ""
    return max(low, 0.0), min(high, 1.0), f"CI cut at {' and '.join(cut)} (the CR1 t interval is symmetric and reached past the rate's bound)"


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
    twin_pref_queries: int = 0
    twin_pref_ci_low: float = float("nan")
    twin_pref_ci_high: float = float("nan")
    twin_pref_ci_level: float = 0.95
    twin_pref_ci_method: str = ""
    twin_pref_refused: str = ""  # why the clustered CI and p are missing, or a note on them (a CI cut at a bound)
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
        "share of relevant twin pairs whose LLM copy is ranked above its original "
        "(query-clustered sign-flip test, CR1 t CI over queries; pair sign test beside)"
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
                run, ctx.qrels, result.query_ids, result.human_source, llm, n_resamples=ctx.significance_resamples, confidence=ctx.confidence, seed=ctx.seed
            )
            out.append(TwinPreferenceRecord(name, llm, "", **{f"twin_pref_{k}": t[v] for k, v in _FIELDS.items()}))
        return out

    def caption(self, records: Sequence[Record]) -> str:
        recs = cast("list[TwinPreferenceRecord]", list(records))  # this statistic's own records
        if not recs:
            return ""
        computed = [r for r in recs if not (r.twin_pref_refused and math.isnan(r.twin_pref_ci_low))]  # a note (a CI cut at 0) is not a refusal
        methods = "; ".join(known(r.twin_pref_p_method for r in computed)) or "none computed"
        levels = ", ".join(f"{lv:.0%}" for lv in known(r.twin_pref_ci_level for r in recs)) or "a"
        ci_methods = "; ".join(known(r.twin_pref_ci_method for r in computed)) or "none computed"
        seeds = ", ".join(str(int(x)) for x in known(r.twin_pref_seed for r in recs)) or "?"
        text = (
            "Twin pref.: share of the relevant (query, document) pairs whose LLM copy is ranked above its original. "
            f"* marks p < 0.05 (uncorrected) of the query-clustered test of rate = 1/2 (twin p (queries)): the per-query llm-first − human-first counts, "
            f"summed, against random sign flips per query ({methods}; seed {seeds}); it assumes the two copies of a pair "
            f"exchangeable under H0 and queries independent. CI: {levels} {ci_methods}, of the mean of d = ±1 per pair, mapped to the rate. "
            "twin p (sign, pairs): the exact sign test over the pooled pairs, shown for reference only: it assumes independent pairs, "
            "but the pairs of one query share a ranking, so it is anti-conservative when outcomes cluster by query. "
            "Pairs with equal scores (ties), with neither copy retrieved, or with a copy absent from the corpus (unpaired) are left out"
        )
        ties, neither, unpaired = total(r.twin_pref_ties for r in recs), total(r.twin_pref_neither for r in recs), total(r.twin_pref_unpaired for r in recs)
        where = "" if len(recs) == 1 else " in all rows together"
        refused = sum(1 for r in recs if r.twin_pref_refused and math.isnan(r.twin_pref_ci_low))
        tail = f" No clustered CI or p in {refused} row(s) (–): see the notes." if refused else ""
        return text + f" ({ties:,} ties, {neither:,} with neither copy retrieved, {unpaired:,} unpaired{where}).{tail}"

    def notes(self, records: Sequence[Record]) -> list[str]:
        recs = cast("Sequence[TwinPreferenceRecord]", records)  # this statistic's own records
        return [f"{r.retriever} / {r.llm_source}: twin preference: {r.twin_pref_refused}" for r in recs if r.twin_pref_refused]


#: record field (less its ``twin_pref_`` prefix) -> key of :func:`twin_preference`'s dict
_FIELDS = {
    "rate": "rate",
    "llm_first": "llm_first",
    "human_first": "human_first",
    "pairs": "pairs",
    "ties": "ties",
    "neither": "neither_retrieved",
    "unpaired": "unpaired",
    "p": "p_sign_test",
    "p_cluster": "p_cluster",
    "p_method": "p_cluster_method",
    "queries": "queries",
    "ci_low": "ci_low",
    "ci_high": "ci_high",
    "ci_level": "ci_level",
    "ci_method": "ci_method",
    "refused": "refused",
    "seed": "seed",
}

register_statistic(TwinPreference())
