"""Which sources an answer cites: citation rates and the source effect conditional on rank.

The unit is a passage shown to the generator: one row per (query, context order, passage) with
its source, retrieval rank (1..k), position in the context (1..k) and whether the answer cited it
(``passages`` of :class:`~sourcebias.citations.result.CitationResult`). Rows of one query are not
independent (one answer cites them all, and the same passages come back in every context
order), so every interval is clustered by query, and every one follows the package's refusal
rules (:mod:`sourcebias.clustered`: with 1–4 queries at 95% no interval and no p).

Three estimators, each saying when it is undefined:

* **Rates** P(cited | source, rank) and P(cited | position): the registered
  ``clustered_proportion`` estimator (:mod:`sourcebias.clustered.clustered_proportion`): the
  pooled share with a Wilson interval on Korn & Graubard's df-adjusted effective sample size; a
  cell whose rate is 0 or 1 uses the effective number of queries instead (said in its ``note``
  and in the study's notes), a cell on too few queries has no interval (``refused``).
* **Logistic regression** cited ~ source + rank fixed effects (+ position fixed effects when the
  context order varies, so position and source are separated), statsmodels GLM (binomial) with
  query-clustered covariance. The source effect is a log odds ratio and an average marginal
  effect (the mean change in P(cited) when every row's source is switched from human to the
  LLM source, with a delta-method interval). As in fixest, rows of a rank or position level whose
  outcomes never vary are left out first (they cannot inform the other coefficients; their count
  is reported); a source whose rows are all cited or all uncited is separated: undefined; a
  design whose terms are collinear names the terms.
* **Matched twins**: where a document and its LLM twin are both in one context, the paired
  difference cited(LLM) − cited(human), its mean by the registered ``mean_difference`` estimator
  (CR1 t interval over queries, sign-flip test of the query sums), over the queries whose
  contexts are *balanced* (shown in as many cyclic orders as passages, so each copy stands at
  each position exactly once: :mod:`.design`); other queries are left out and counted, so the
  difference never includes the copies' position difference.

With fewer than :data:`MIN_QUERIES` queries a clustered interval is wide and its level approximate:
those rows are marked ``few_queries``.
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
LOGIT_METHOD = "statsmodels GLM binomial, cited ~ source + C(rank) [+ C(position)], covariance clustered by query (CR1); AME by the delta method"
TWIN_METHOD = (
    "mean of cited(LLM twin) - cited(human original) over twin pairs in one context of the balanced queries "
    "(each copy at each position once); CR1 t interval over queries (G - 1 df), sign-flip test of the query sums"
)


def rate_method() -> str:
    """The rates' method, as the ``clustered_proportion`` estimator names it."""
    from sourcebias.clustered.clustered_proportion import METHOD

    return METHOD


def clustered_rate(cited: np.ndarray, groups: np.ndarray, level: float = 0.95) -> dict[str, Any]:
    """The share of ``cited`` with the ``clustered_proportion`` estimator's interval.

    Args:
        cited: 0/1 outcomes.
        groups: the query of each outcome (any hashable codes).
        level: the interval's coverage.

    Returns:
        ``rate`` (None without rows), ``low``, ``high`` (None when refused), ``n``, ``cited``,
        ``queries``, ``method`` (the interval's), ``note`` (a rate of 0 or 1: the method used there)
        and ``refused`` (why no interval).
    """
    from sourcebias.clustered import get_estimator
    from sourcebias.clustered.base import finite_or_none

    y = np.asarray(cited, dtype=float)
    e = get_estimator("clustered_proportion").estimate(y, np.asarray(groups), level=level)
    out = {"rate": finite_or_none(e.estimate), "low": finite_or_none(e.low), "high": finite_or_none(e.high), "n": len(y), "cited": int(y.sum())}
    return {**out, "queries": e.queries, "method": e.method, "note": e.note, "refused": e.refused}


def rate_table(passages: pd.DataFrame, by: Sequence[str], level: float = 0.95) -> list[dict[str, Any]]:
    """One :func:`clustered_rate` row per combination of the ``by`` columns (sorted)."""
    rows = []
    for keys, part in passages.groupby(list(by), sort=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        r = clustered_rate(part["cited"].to_numpy(), part["query_id"].to_numpy(), level)
        rows.append({**dict(zip(by, (k.item() if hasattr(k, "item") else k for k in keys))), **r})
    return rows


def rate_notes(rates: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The study's notes on the rate cells whose interval used another method or was refused
    (what the summary and the figure must say beside the row's own note)."""
    out = []
    for name, rows in rates.items():
        extreme = [r for r in rows if r.get("note")]
        refused = [r for r in rows if r.get("refused")]
        if extreme:
            out.append(f"rates by {name.replace('_', ' and ')}: {len(extreme)} of {len(rows)} cells have a {extreme[0]['note']}")
        if refused:
            reasons = sorted({r["refused"] for r in refused})
            out.append(f"rates by {name.replace('_', ' and ')}: {len(refused)} of {len(rows)} cells have no interval: {'; '.join(reasons)}")
    return out


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


def _labels(names: Sequence[tuple[str, Any]]) -> list[str]:
    return ["constant" if t == "const" else f"{t} {lvl}" for t, lvl in names]


def dependency_text(groups: Sequence[Sequence[str]]) -> str:
    """Collinear groups as a phrase (:func:`sourcebias.clustered.ols.dependency_text`)."""
    from sourcebias.clustered.ols import dependency_text as text

    return text(groups)


def _collinear(x: np.ndarray, names: Sequence[tuple[str, Any]]) -> list[list[str]]:
    """The groups of design columns that are linear combinations of each other, named."""
    from sourcebias.clustered.ols import collinear_terms

    return collinear_terms(x, _labels(names)) if len(x) else []


def _fit_glm(y: np.ndarray, x: np.ndarray, groups: np.ndarray, names: Sequence[tuple[str, Any]]) -> Any:
    """The clustered binomial GLM, or the reason it has no finite estimate (collinear terms,
    separation, no convergence) as a string."""
    import statsmodels.api as sm
    from statsmodels.tools.sm_exceptions import ConvergenceWarning, PerfectSeparationError, PerfectSeparationWarning

    collinear = _collinear(x, names)
    if collinear:
        return "collinear in the rows left: " + dependency_text(collinear)
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


def _logit_design(frame: pd.DataFrame, human: str, kept: Sequence[str], with_position: bool) -> tuple[np.ndarray, list[tuple[str, Any]], list[str]]:
    """The design, and notes: position terms dropped when they (not a source) are collinear with
    rank, the terms named (a source collinear with something is left to :func:`_fit_glm`, which
    names it as the reason the source effect is undefined)."""
    x, names = _design(frame, human, kept, with_position)
    if not with_position or not len(frame):
        return x, names, []
    groups = _collinear(x, names)
    if groups and not any(n.startswith("source ") for g in groups for n in g):
        x, names = _design(frame, human, kept, False)
        return (
            x,
            names,
            [f"logit: the position terms are collinear with the rank terms in the rows left ({dependency_text(groups)}): fitted with rank effects only"],
        )
    return x, names, []


def logit_effects(passages: pd.DataFrame, human: str, level: float = 0.95) -> tuple[list[dict[str, Any]], list[str]]:
    """The source effect conditional on rank (and position): rows for each LLM source, rank and
    position level, and notes (what was left out, why an estimate is undefined)."""
    from scipy.stats import norm

    from sourcebias.clustered import interval_refusal

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
    x, names, design_notes = _logit_design(frame, human, kept, with_position)
    notes += design_notes
    fit: Any = "no human rows left" if not len(frame) or not (frame["source"] == human).any() else "no LLM source left to compare" if not kept else None
    if fit is None:
        fit = _fit_glm(frame["cited"].to_numpy(float), x, frame["query_id"].to_numpy(), names)
    if isinstance(fit, str):
        return [_logit_row("source", s, n=len(frame), queries=queries, status="undefined", note=undefined.get(s, fit)) for s in llm], notes
    refused = interval_refusal(queries, level)
    z = float(norm.ppf(0.5 + level / 2))
    rows = [_logit_term(fit, x, i, names, z, refused, n=len(frame), queries=queries) for i in range(1, len(names))]
    rows += [_logit_row("source", s, n=len(frame), queries=queries, status="undefined", note=why) for s, why in undefined.items()]
    return rows, notes


def _logit_term(fit: Any, x: np.ndarray, i: int, names: Sequence[tuple[str, Any]], z: float, refused: str, **counts: Any) -> dict[str, Any]:
    """One term's row: log odds ratio, its interval and p (none with too few queries), the AME of a source."""
    term, lvl = names[i]
    b, se = float(fit.params[i]), float(fit.bse[i])
    source_cols = [j for j, (t, _) in enumerate(names) if t == "source"]
    extra: dict[str, Any] = dict(zip(("ame", "ame_low", "ame_high"), _ame(fit, x, i, source_cols, z))) if term == "source" else {}
    if refused:
        if extra:
            extra.update(ame_low=None, ame_high=None)
        return _logit_row(term, lvl, estimate=b, se=se, odds_ratio=float(np.exp(b)), status="no_interval", note=refused, refused=refused, **counts, **extra)
    values = {"estimate": b, "se": se, "low": b - z * se, "high": b + z * se, "p": float(fit.pvalues[i]), "odds_ratio": float(np.exp(b))}
    return _logit_row(term, lvl, **values, status=_status(counts["queries"]), note=_few_note(counts["queries"]), **counts, **extra)


def balanced_queries(passages: pd.DataFrame) -> set[str]:
    """The queries whose contexts are balanced: shown in as many orders as passages (more than 1),
    every context complete, so each passage stood at each position once (:mod:`.design`)."""
    if passages.empty:
        return set()
    sizes = passages.groupby(["query_id", "order"]).size()
    per_query = sizes.groupby(level=0).agg(["min", "max", "size"])
    ok = (per_query["min"] == per_query["max"]) & (per_query["size"] == per_query["max"]) & (per_query["max"] > 1)
    return {str(q) for q in per_query.index[ok]}


def twin_differences(passages: pd.DataFrame, human: str, level: float = 0.95) -> list[dict[str, Any]]:
    """For each LLM source, the mean paired difference cited(twin) − cited(original) over the
    contexts of the balanced queries that hold both copies of a document (the ``mean_difference``
    estimator); pairs of other queries are left out and counted (``unbalanced_pairs``)."""
    from sourcebias.clustered import get_estimator
    from sourcebias.clustered.base import finite_or_none
    from sourcebias.clustered.mean_difference import cr1_mean_interval

    keys = ["query_id", "order", "doc_id"]
    originals = passages[passages["source"] == human][[*keys, "cited", "position"]]
    balanced = balanced_queries(passages)
    rows = []
    for s in sorted(x for x in passages["source"].unique() if x != human):
        both = passages[passages["source"] == s][[*keys, "cited", "position"]].merge(originals, on=keys, suffixes=("_llm", "_human"))
        inside = both["query_id"].astype(str).isin(balanced).to_numpy()
        use = both[inside]
        d = (use["cited_llm"] - use["cited_human"]).to_numpy(float)
        row: dict[str, Any] = {"estimator": "twins", "term": "source", "level": s, "pairs": len(d), "queries": int(use["query_id"].nunique())}
        row.update(unbalanced_pairs=int((~inside).sum()), llm_only=int((d > 0).sum()), human_only=int((d < 0).sum()))
        row["llm_earlier"] = int((use["position_llm"] < use["position_human"]).sum())
        row |= dict.fromkeys(("estimate", "se", "low", "high", "p"))
        if not len(d):
            why = (
                "no balanced query shows a document with its twin"
                if not len(both)
                else f"{len(both)} pairs, none in a balanced query (orders = k balances a query's contexts)"
            )
            rows.append({**row, "status": "undefined", "note": f"{why}: cited(twin) − cited(original) would include the copies' position difference"})
            continue
        e = get_estimator("mean_difference").estimate(d, use["query_id"].to_numpy(), level=level)
        sums = use.assign(d=d).groupby("query_id")["d"].agg(["sum", "size"])
        se = float(cr1_mean_interval(sums["sum"].to_numpy(), sums["size"].to_numpy(), level)[3]) if len(sums) > 1 else float("nan")
        row.update(estimate=e.estimate, se=finite_or_none(se), low=finite_or_none(e.low), high=finite_or_none(e.high), p=finite_or_none(e.p))
        if e.refused or e.note:
            rows.append({**row, "se": None if e.refused else row["se"], "status": "no_interval", "note": e.refused or e.note, "refused": e.refused})
            continue
        rows.append({**row, "status": _status(row["queries"]), "note": _few_note(row["queries"])})
    return rows
