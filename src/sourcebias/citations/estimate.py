"""Which sources an answer cites: citation rates and the source effect conditional on rank.

The unit is a passage shown to the generator: one row per (query, context order, passage) with
its source, retrieval rank (1..k), position in the context (1..k) and whether the answer cited it
(``passages`` of :class:`~sourcebias.citations.result.CitationResult`). Rows of one query are not
independent (one answer cites them all, and the same passages come back in every context
order), so every interval is clustered by query.

Three estimators, each saying when it is undefined:

* **Rates** P(cited | source, rank) and P(cited | position): the pooled share with a Wilson
  interval on Korn & Graubard's (1998) effective sample size n / deff, where deff is the design
  effect of query clustering (the ratio-estimator variance over the binomial one, floored at 1).
  statsmodels has no clustered proportion interval, so the few lines are written here. A cell
  whose rate is 0 or 1 has no estimable design effect: its interval uses n (said in the row).
* **Logistic regression** cited ~ source + rank fixed effects (+ position fixed effects when the
  context order varies, so position and source are separated), statsmodels GLM (binomial) with
  query-clustered covariance. The source effect is a log odds ratio and an average marginal
  effect (the mean change in P(cited) when every row's source is switched from human to the
  LLM source, with a delta-method interval). As in fixest, rows of a rank or position level whose
  outcomes never vary are left out first (they cannot inform the other coefficients; their count
  is reported); a source whose rows are all cited or all uncited is separated: undefined.
* **Matched twins**: where a document and its LLM twin are both in one context, the paired
  difference cited(LLM) − cited(human), its mean with a query-clustered t interval (OLS on a
  constant, G − 1 degrees of freedom). Shuffled context orders put each copy at each position
  equally often, so the mean separates source from position.

With fewer than :data:`MIN_QUERIES` queries a clustered interval is too narrow to trust: those
rows are marked ``few_queries``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

MIN_QUERIES = 20
#: a fitted |log odds| above this is a diverging coefficient (quasi-separation: statsmodels stops
#: at a large finite value), not an estimate; an odds ratio of e^10 ≈ 22,000 is no citation rate
MAX_LOG_ODDS = 10.0
RATE_METHOD = "Wilson interval on Korn & Graubard's effective sample size (design effect of query clustering, floored at 1)"
LOGIT_METHOD = "statsmodels GLM binomial, cited ~ source + C(rank) [+ C(position)], covariance clustered by query (CR1); AME by the delta method"
TWIN_METHOD = "mean of cited(LLM twin) - cited(human original) over twin pairs in one context; OLS on a constant, query-clustered, t with G - 1 df"


def clustered_rate(cited: np.ndarray, groups: np.ndarray, level: float = 0.95) -> dict[str, Any]:
    """The share of ``cited`` with a Wilson interval on the effective sample size.

    Args:
        cited: 0/1 outcomes.
        groups: the query of each outcome (any hashable codes).
        level: the interval's coverage.

    Returns:
        ``rate``, ``low``, ``high``, ``n``, ``cited``, ``queries``, ``deff`` (None when the rate is
        0 or 1, or a single query) and ``n_eff``.
    """
    from statsmodels.stats.proportion import proportion_confint

    y = np.asarray(cited, dtype=float)
    n = len(y)
    if n == 0:
        return {"rate": None, "low": None, "high": None, "n": 0, "cited": 0, "queries": 0, "deff": None, "n_eff": 0.0}
    codes = pd.factorize(np.asarray(groups))[0]
    n_groups = int(codes.max()) + 1
    p = float(y.mean())
    deff = None
    n_eff = float(n)
    if 0.0 < p < 1.0 and n_groups > 1:
        y_g, m_g = np.bincount(codes, weights=y), np.bincount(codes)
        var = n_groups / (n_groups - 1) * float(np.sum((y_g - p * m_g) ** 2)) / n**2
        deff = max(1.0, var / (p * (1.0 - p) / n))
        n_eff = n / deff
    low, high = proportion_confint(p * n_eff, n_eff, alpha=1.0 - level, method="wilson")
    return {"rate": p, "low": float(low), "high": float(high), "n": n, "cited": int(y.sum()), "queries": n_groups, "deff": deff, "n_eff": n_eff}


def rate_table(passages: pd.DataFrame, by: Sequence[str], level: float = 0.95) -> list[dict[str, Any]]:
    """One :func:`clustered_rate` row per combination of the ``by`` columns (sorted)."""
    rows = []
    for keys, part in passages.groupby(list(by), sort=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        r = clustered_rate(part["cited"].to_numpy(), part["query_id"].to_numpy(), level)
        note = "rate 0 or 1: no design effect, interval on n" if r["deff"] is None and r["n"] else ""
        rows.append({**dict(zip(by, (k.item() if hasattr(k, "item") else k for k in keys))), **r, "note": note})
    return rows


def _status(queries: int) -> str:
    return "few_queries" if queries < MIN_QUERIES else "ok"


def _few_note(queries: int) -> str:
    return f"{queries} queries (< {MIN_QUERIES}): a query-clustered interval is too narrow to trust" if queries < MIN_QUERIES else ""


def prune_constant_levels(frame: pd.DataFrame, columns: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    """Drop the rows of every level of ``columns`` whose ``cited`` never varies, repeatedly until
    none is left (fixest's rule for fixed effects in a logit). Returns the kept rows and what was
    dropped, as text."""
    dropped: list[str] = []
    while True:
        bad = []
        for col in columns:
            spread = frame.groupby(col)["cited"].agg(["min", "max", "size"])
            for level, row in spread[spread["min"] == spread["max"]].iterrows():
                bad.append((col, level, int(row["size"]), "cited" if row["min"] else "uncited"))
        if not bad:
            return frame, dropped
        for col, level, size, what in bad:
            dropped.append(f"{col} {level}: {size} rows, all {what}")
            frame = frame[frame[col] != level]
        if frame.empty:
            return frame, dropped


def _design(frame: pd.DataFrame, human: str, llm: Sequence[str], with_position: bool) -> tuple[np.ndarray, list[tuple[str, Any]]]:
    """The design matrix: a constant, one dummy per LLM source, rank (and position) dummies with
    the lowest level as reference; and what each column is."""
    cols: list[np.ndarray] = [np.ones(len(frame))]
    names: list[tuple[str, Any]] = [("const", None)]
    for s in llm:
        cols.append((frame["source"] == s).to_numpy(float))
        names.append(("source", s))
    for term in ("rank", "position") if with_position else ("rank",):
        for level in sorted(frame[term].unique())[1:]:
            cols.append((frame[term] == level).to_numpy(float))
            names.append((term, int(level)))
    return np.column_stack(cols), names


def _fit_glm(y: np.ndarray, x: np.ndarray, groups: np.ndarray) -> Any:
    """The clustered binomial GLM, or the reason it has no finite estimate (separation, no
    convergence) as a string."""
    import statsmodels.api as sm
    from statsmodels.tools.sm_exceptions import ConvergenceWarning, PerfectSeparationError, PerfectSeparationWarning

    if np.linalg.matrix_rank(x) < x.shape[1]:
        return "the design is collinear (a source, rank or position level coincides with another)"
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerfectSeparationWarning)
        warnings.simplefilter("error", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)  # a degenerate fit shows as a non-finite covariance, checked below
        try:
            fit = sm.GLM(y, x, family=sm.families.Binomial()).fit(cov_type="cluster", cov_kwds={"groups": pd.factorize(groups)[0]})
        except (PerfectSeparationError, PerfectSeparationWarning):
            return "perfect separation: some combination of source, rank and position predicts citation exactly"
        except ConvergenceWarning:
            return "the logistic regression did not converge (quasi-separation)"
    if not np.all(np.isfinite(fit.bse)):
        return "the clustered covariance is not finite"
    if np.max(np.abs(fit.params)) > MAX_LOG_ODDS:
        return f"quasi-separation: a coefficient diverges (|log odds| > {MAX_LOG_ODDS:g}; some level's passages are almost all cited or all uncited)"
    return fit


def _ame(fit: Any, x: np.ndarray, column: int, source_columns: Sequence[int], z: float) -> tuple[float, float, float]:
    """Average marginal effect of switching every row to the source of ``column`` from human,
    with its delta-method interval."""
    x1, x0 = x.copy(), x.copy()
    x1[:, list(source_columns)] = 0.0
    x0[:, list(source_columns)] = 0.0
    x1[:, column] = 1.0
    b = np.asarray(fit.params)
    p1, p0 = 1 / (1 + np.exp(-x1 @ b)), 1 / (1 + np.exp(-x0 @ b))
    grad = ((p1 * (1 - p1))[:, None] * x1 - (p0 * (1 - p0))[:, None] * x0).mean(axis=0)
    se = float(np.sqrt(grad @ np.asarray(fit.cov_params()) @ grad))
    ame = float(np.mean(p1 - p0))
    return ame, ame - z * se, ame + z * se


def _logit_row(term: str, level: Any, **values: Any) -> dict[str, Any]:
    base = dict.fromkeys(("estimate", "se", "low", "high", "p", "odds_ratio", "ame", "ame_low", "ame_high"))
    return {"estimator": "logit", "term": term, "level": level, **base, **values}


def _separated(frame: pd.DataFrame, llm: Sequence[str]) -> dict[str, str]:
    """LLM sources whose coefficient has no finite estimate: no rows left, or every row cited
    alike (perfect separation)."""
    out = {}
    for s in llm:
        cited = frame.loc[frame["source"] == s, "cited"]
        if cited.empty:
            out[s] = "no rows left after the fixed effects without variation"
        elif cited.nunique() == 1:
            out[s] = f"perfect separation: every kept {s} passage is {'cited' if cited.iloc[0] else 'uncited'}"
    return out


def logit_effects(passages: pd.DataFrame, human: str, level: float = 0.95) -> tuple[list[dict[str, Any]], list[str]]:
    """The source effect conditional on rank (and position): rows for each LLM source, rank and
    position level, and notes (what was left out, why an estimate is undefined)."""
    from scipy.stats import norm

    llm = sorted(s for s in passages["source"].unique() if s != human)
    with_position = bool((passages["position"] != passages["rank"]).any())
    frame, dropped = prune_constant_levels(passages, ["rank", "position"] if with_position else ["rank"])
    notes = [f"logit: left out {d} (a fixed effect without variation)" for d in dropped]
    if not with_position:
        notes.append("one context order: position and rank coincide, so the rank effects include the position effect (use orders > 1 to separate them)")
    undefined = _separated(frame, llm)
    kept = [s for s in llm if s not in undefined]
    frame = frame[frame["source"].isin([human, *kept])]
    queries = int(frame["query_id"].nunique())
    x, names = _design(frame, human, kept, with_position)
    if with_position and len(frame) and np.linalg.matrix_rank(x) < x.shape[1]:
        x, names = _design(frame, human, kept, False)
        notes.append(
            "logit: the position effects are collinear with the rank effects in these contexts (too few shuffled orders): fitted with rank effects only"
        )
    fit: Any = "no human rows left" if not len(frame) or not (frame["source"] == human).any() else "no LLM source left to compare" if not kept else None
    if fit is None:
        fit = _fit_glm(frame["cited"].to_numpy(float), x, frame["query_id"].to_numpy())
    if isinstance(fit, str):
        return [_logit_row("source", s, n=len(frame), queries=queries, status="undefined", note=undefined.get(s, fit)) for s in llm], notes
    z = float(norm.ppf(0.5 + level / 2))
    rows = []
    source_cols = [i for i, (t, _) in enumerate(names) if t == "source"]
    for i, (term, lvl) in enumerate(names[1:], start=1):
        b, se = float(fit.params[i]), float(fit.bse[i])
        extra = dict(zip(("ame", "ame_low", "ame_high"), _ame(fit, x, i, source_cols, z))) if term == "source" else {}
        rows.append(_logit_row(term, lvl, estimate=b, se=se, low=b - z * se, high=b + z * se, p=float(fit.pvalues[i]), odds_ratio=float(np.exp(b)), n=len(frame), queries=queries,
                               status=_status(queries), note=_few_note(queries), **extra))  # fmt: skip
    rows += [_logit_row("source", s, n=len(frame), queries=queries, status="undefined", note=why) for s, why in undefined.items()]
    return rows, notes


def _one_order_note(passages: pd.DataFrame, row: dict[str, Any]) -> str:
    """With one context order each copy keeps its rank's position, so the twin difference includes
    the position effect: said, with how often the LLM copy stood first."""
    if passages["order"].nunique() > 1:
        return ""
    return f"one context order: the LLM copy stood before its original in {row['llm_earlier']} of {row['pairs']} pairs, so the difference includes the position effect (use orders > 1)"


def twin_differences(passages: pd.DataFrame, human: str, level: float = 0.95) -> list[dict[str, Any]]:
    """For each LLM source, the mean paired difference cited(twin) − cited(original) over the
    contexts that hold both copies of a document, with a query-clustered t interval."""
    import statsmodels.api as sm

    keys = ["query_id", "order", "doc_id"]
    originals = passages[passages["source"] == human][[*keys, "cited", "position"]]
    rows = []
    for s in sorted(x for x in passages["source"].unique() if x != human):
        both = passages[passages["source"] == s][[*keys, "cited", "position"]].merge(originals, on=keys, suffixes=("_llm", "_human"))
        d = (both["cited_llm"] - both["cited_human"]).to_numpy(float)
        queries = int(both["query_id"].nunique())
        row: dict[str, Any] = {
            "estimator": "twins",
            "term": "source",
            "level": s,
            "pairs": len(d),
            "queries": queries,
            "llm_only": int((d > 0).sum()),
            "human_only": int((d < 0).sum()),
            "llm_earlier": int((both["position_llm"] < both["position_human"]).sum()),
        }
        row |= dict.fromkeys(("estimate", "se", "low", "high", "p"))
        if queries < 2:
            rows.append({**row, "status": "undefined", "note": f"{queries} queries with a document and its twin both in the context (2 needed)"})
            continue
        row["estimate"] = float(d.mean())
        if not d.any() or np.all(d == d[0]):
            rows.append({**row, "status": "undefined", "note": "every pair's difference is the same: no variation to estimate an interval from"})
            continue
        fit = sm.OLS(d, np.ones((len(d), 1))).fit(cov_type="cluster", cov_kwds={"groups": pd.factorize(both["query_id"])[0]}, use_t=True)
        low, high = fit.conf_int(alpha=1.0 - level)[0]
        note = "; ".join(x for x in (_few_note(queries), _one_order_note(passages, row)) if x)
        rows.append(
            {**row, "se": float(fit.bse[0]), "low": float(low), "high": float(high), "p": float(fit.pvalues[0]), "status": _status(queries), "note": note}
        )
    return rows
