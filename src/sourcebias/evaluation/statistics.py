"""The statistics of a grid cell (and of any evaluation): is the difference between human and LLM
targets real, how large is it, and does the retriever prefer LLM text without any labels?

* **Paired per-query differences** human − LLM target of a measure on the mixed ranking: mean,
  paired t-test, seeded sign-flip randomization test (:mod:`.significance`).
* **Relative Δ with a confidence interval**: a seeded bootstrap over queries (a query's human and
  LLM values are resampled together), ``scipy.stats.bootstrap`` with ``paired=True``, BCa
  intervals by default (percentile when BCa cannot be computed, e.g. a constant statistic).
* **Twin preference**: over the relevant (query, document) pairs of the split, the share whose LLM
  copy is ranked above its original; a copy that was not retrieved ranks below every retrieved one;
  pairs with neither copy retrieved are left out and counted. Exact two-sided sign test
  (``scipy.stats.binomtest``, p = 1/2).
* **ΔNDSR@k** (Huang et al., 2026): per query NDSR_human − NDSR_LLM (the discounted share of each
  source in the top k, :class:`~sourcebias.evaluation.measures.NDSR`), averaged over the queries
  with a non-empty ranking (the others are counted), with a one-sample t-test against 0; < 0 means
  the retriever prefers LLM text. Needs no relevance labels.
* **Multiple testing**: Holm or Benjamini–Hochberg (or Bonferroni) across a grid's tests with
  ``statsmodels.stats.multitest.multipletests``; the method is named wherever p-values are shown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError


def relative_delta_values(h: np.ndarray, llm: np.ndarray, axis: int = -1) -> np.ndarray:
    """Relative Δ (percent) of the means along ``axis`` (vectorised for the bootstrap)."""
    mh, ml = np.mean(h, axis=axis), np.mean(llm, axis=axis)
    denom = (mh + ml) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom != 0, (mh - ml) / denom * 100.0, np.nan)


def bootstrap_relative_delta(h: Sequence[float], llm: Sequence[float], *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0, method: str = "BCa") -> dict[str, Any]:
    """Relative Δ and its bootstrap confidence interval over queries (pairs kept together).

    Returns ``estimate``, ``low``, ``high``, ``confidence``, ``method`` (the one used),
    ``n_resamples`` and ``seed``. Degenerate cases: both means 0 -> NaN everywhere; every
    query with the same values -> the estimate as both bounds (no variability to resample).
    """
    from scipy import stats

    a = np.asarray(h, dtype=float)
    b = np.asarray(llm, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ConfigError("the human and LLM values must be paired vectors of the same length")
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    est = float(relative_delta_values(a, b)) if len(a) else float("nan")
    out = {"estimate": est, "low": float("nan"), "high": float("nan"), "confidence": confidence, "method": method, "n_resamples": n_resamples, "seed": seed, "queries": int(len(a))}
    if len(a) < 2 or not math.isfinite(est):
        out["method"] = "none"
        return out
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        out.update(low=est, high=est, method="none (no variability)")
        return out

    def stat(x, y, axis=-1):
        return relative_delta_values(x, y, axis=axis)

    for m in ([method, "percentile"] if method != "percentile" else ["percentile"]):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = stats.bootstrap((a, b), stat, paired=True, vectorized=True, n_resamples=n_resamples, confidence_level=confidence, method=m, random_state=np.random.default_rng(seed))
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(lo) and math.isfinite(hi):
            out.update(low=lo, high=hi, method=m)
            return out
    return out


def twin_preference(run: Any, qrels: Any, query_ids: Sequence[str], human: str, llm: str) -> dict[str, Any]:
    """Share of relevant pairs whose LLM copy is ranked above its original, with an exact sign test.

    The unit is a relevant (query, document) pair with both copies in the corpus. A copy that
    was not retrieved ranks below every retrieved one; a pair where neither copy was retrieved is
    left out (``neither_retrieved``). Two copies with *equal scores* are a tie: the documented tie
    rule, not the retriever, ordered them, so they are left out of the test and counted in ``ties``.
    """
    from scipy import stats

    corpus = run.corpus
    ids, codes, names = corpus.doc_ids, corpus.source_codes, corpus.sources
    llm_first = human_first = neither = ties = 0
    for q in query_ids:
        pos = run.positions.get(q)
        rank: dict[tuple[str, str], tuple[int, float]] = {}
        if pos is not None:
            scores = run.scores[q]
            for r, p in enumerate(pos.tolist()):
                rank[(ids[p], names[codes[p]])] = (r, float(scores[r]))
        for d, g in qrels.get(q, {}).items():
            if g <= 0:
                continue
            h, l = rank.get((d, human)), rank.get((d, llm))
            if h is None and l is None:
                neither += 1
            elif h is not None and l is not None and h[1] == l[1]:
                ties += 1
            elif h is None or (l is not None and l[0] < h[0]):
                llm_first += 1
            else:
                human_first += 1
    n = llm_first + human_first
    p = float(stats.binomtest(llm_first, n, 0.5).pvalue) if n else float("nan")
    return {"rate": llm_first / n if n else float("nan"), "llm_first": llm_first, "human_first": human_first, "pairs": n, "ties": ties, "neither_retrieved": neither, "p_sign_test": p}


def delta_ndsr(run: Any, query_ids: Sequence[str], human: str, llm: str, k: int = 10) -> dict[str, Any]:
    """ΔNDSR@k: mean over queries of NDSR_human − NDSR_LLM, with a one-sample t-test."""
    from scipy import stats

    from sourcebias.evaluation.measures import NDSR

    mat = NDSR().per_query(run, query_ids, k)
    sources = list(run.corpus.sources)
    if human not in sources or llm not in sources:
        raise ConfigError(f"the run ranks {', '.join(sources)}; ΔNDSR needs {human} and {llm}")
    d = mat[:, sources.index(human)] - mat[:, sources.index(llm)]
    ok = np.isfinite(d)
    d = d[ok]
    if len(d) < 2:
        p = float("nan")
    elif np.ptp(d) == 0:
        p = 1.0 if d[0] == 0 else 0.0
    else:
        p = float(stats.ttest_1samp(d, 0.0).pvalue)
    return {"k": k, "delta": float(d.mean()) if len(d) else float("nan"), "std": float(d.std(ddof=1)) if len(d) > 1 else float("nan"), "p_ttest": p, "queries": int(len(d)), "empty_rankings": int((~ok).sum())}


CORRECTIONS = {"holm": "Holm", "fdr_bh": "Benjamini-Hochberg", "bonferroni": "Bonferroni", "none": "none"}


def adjust_pvalues(pvalues: Sequence[float], method: str = "holm") -> np.ndarray:
    """Adjusted p-values across tests (NaN kept as NaN, not counted as a test)."""
    from statsmodels.stats.multitest import multipletests

    if method not in CORRECTIONS:
        raise ConfigError(f"correction must be one of {', '.join(CORRECTIONS)}, got '{method}'")
    p = np.asarray(pvalues, dtype=float)
    out = np.full_like(p, np.nan)
    ok = np.isfinite(p)
    if method == "none" or not ok.any():
        out[ok] = p[ok]
        return out
    out[ok] = multipletests(p[ok], method=method)[1]
    return out


def cell_statistics(result: Any, qrels: Any, *, measure: str = "NDCG@3", ndsr_k: int = 10, bootstrap_resamples: int = 2000, confidence: float = 0.95, seed: int = 0) -> list[dict[str, Any]]:
    """Every statistic above for each retriever and LLM source of an evaluation result (one row
    each): means on all targets, human and LLM, Relative Δ with its CI, the paired tests, twin
    preference, ΔNDSR, and the sole-corpus values when present."""
    from sourcebias.evaluation.results import ALL, MIXED, Key, RunKey
    from sourcebias.evaluation.significance import paired_randomization_test, paired_t_test

    rows = []
    human = result.human_source
    for name in result.retriever_names:
        for llm in result.other_sources:
            kh, kl = Key(name, MIXED, human, measure), Key(name, MIXED, llm, measure)
            if kh not in result.per_query:
                continue
            h, g = result.per_query[kh], result.per_query[kl]
            test = next((t for t in result.tests if t["retriever"] == name and t["other"] == llm and t["metric"] == measure), None)
            boot = bootstrap_relative_delta(h, g, n_resamples=bootstrap_resamples, confidence=confidence, seed=seed)
            row: dict[str, Any] = {
                "retriever": name,
                "llm_source": llm,
                "measure": measure,
                "all": result.mean(name, MIXED, ALL, measure),
                "human": float(np.nanmean(h)),
                "llm": float(np.nanmean(g)),
                "rel_delta": boot["estimate"],
                "rel_delta_ci_low": boot["low"],
                "rel_delta_ci_high": boot["high"],
                "ci_level": confidence,
                "ci_method": boot["method"],
                "mean_difference": float(np.nanmean(h - g)),
                "p_ttest": test["p_ttest"] if test else paired_t_test(h, g),
                "p_randomization": test["p_randomization"] if test else paired_randomization_test(h, g, seed=seed),
                "n_queries": int(len(h)),
            }
            for setting, col in ((human, "human_only"), (llm, "llm_only")):
                key = Key(name, setting, setting, measure)
                row[col] = result.mean(*key) if key in result.per_query else float("nan")
            run = result.runs.get(RunKey(name, MIXED))
            if run is not None:
                tp = twin_preference(run, qrels, result.query_ids, human, llm)
                dn = delta_ndsr(run, result.query_ids, human, llm, ndsr_k)
                row.update({"twin_pref_rate": tp["rate"], "twin_pref_pairs": tp["pairs"], "twin_pref_ties": tp["ties"], "twin_pref_p": tp["p_sign_test"], "delta_ndsr": dn["delta"], "delta_ndsr_k": ndsr_k, "delta_ndsr_p": dn["p_ttest"]})
            rows.append(row)
    return rows
