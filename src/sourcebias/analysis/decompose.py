"""One joint account of the twin gap: ``sourcebias analyze decompose``.

For every relevant (query, document) pair whose document has both copies, the **score gap**
``g = s(q, d_LLM) − s(q, d_human)`` (the retriever's inner product) is regressed, jointly, on the
differences of the two copies (LLM − human):

* ``perplexity`` — Δ log-perplexity under a causal or masked LM (only with ``lm``: it is slow);
* ``length`` — Δ words of ``field``;
* ``median_idf`` — Δ median term IDF (Lucene's BM25 idf over the loaded collection);
* ``direction`` — the projection ``(e_LLM − e_human)·u`` of the embedding difference on the LLM −
  human direction ``u``, **cross-fitted**: the twin pairs are split into two seeded halves, and a
  pair's projection uses the ``u`` estimated on the *other* half, so no pair's own difference
  enters the direction it is projected on.

The model is ordinary least squares with an intercept (statsmodels ``OLS``), with standard errors
clustered by query (``cov_type="cluster"``: the pairs of one query share its vector and are not
independent; statsmodels' small-sample correction; t intervals with G − 1 degrees of freedom, G
the number of queries): the package's one clustered OLS (:func:`sourcebias.clustered.ols.clustered_ols`,
the re-rankers' position/source fit too), with its refusal rule: with too few queries for an
interval (:func:`sourcebias.clustered.interval_refusal`, 1–4 at 95%) the coefficients come without
CI and p, and the result says why (``interval_refused``). Reported per term: the coefficient, its clustered SE, CI and p; the
**standardised coefficient** ``b · sd(x) / sd(g)`` (sample SDs) with its CI scaled alike; the
mean of the regressor; and its **share of the mean gap**::

    share_k = b_k · mean(x_k) / mean(g),     share_intercept = b_0 / mean(g)

In the fitted sample these add up to exactly 1 (OLS with an intercept passes through the means),
so a share says how much of the average LLM − human gap the factor's average difference accounts
for, given the other factors; the intercept's share is the gap left when every difference is 0.
Shares are point estimates (no interval); they are undefined when the mean gap is 0.

**Held-out half.** The queries are split into two seeded halves; the model is fitted on the
first and judged on the second: R² = 1 − Σ(g − ĝ)² / Σ(g − ḡ)² there, and the shares with the
first half's coefficients and the second half's means, plus the **residual share**
``mean(g − ĝ) / mean(g)`` so that the held-out shares, too, add up to 1.

A regressor without variation (every difference equal, e.g. an LM that gives each copy the same
value) has no coefficient: :func:`fit_gap_model` refuses it, and :func:`decompose` leaves it out
and says so (``excluded``); collinear regressors are refused. Rows with a missing value (a
document without analyzer terms has no median IDF) are left out and counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from sourcebias.analysis.base import FIELD, SEED, SOURCES, Analysis, AnalysisTable, Param, column, integer, register_analysis, sig, text
from sourcebias.analysis.common import dense_model, llm_sources, make_result, twin_pairs
from sourcebias.core.errors import ConfigError

#: the factors, in the order of every table and figure
FACTORS = ("perplexity", "length", "median_idf", "direction")
LABELS = {"perplexity": "Δ log-perplexity", "length": "Δ words", "median_idf": "Δ median IDF", "direction": "Δe · u (cross-fitted)", "intercept": "intercept"}


# -- the regression ---------------------------------------------------------------------------------
def constant_regressors(factors: Mapping[str, Any]) -> dict[str, str]:
    """The regressors without variation, each with why (its single value)."""
    out = {}
    for name, x in factors.items():
        v = np.asarray(x, dtype=np.float64)
        if v.size and np.ptp(v) == 0:
            out[name] = f"constant (every value {v[0]:.6g}): no variation to explain the gap"
    return out


def _design(gap: Any, factors: Mapping[str, Any], groups: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    y = np.asarray(gap, dtype=np.float64).reshape(-1)
    names = list(factors)
    if not names:
        raise ConfigError("the gap model needs at least one regressor")
    X = np.column_stack([np.asarray(factors[k], dtype=np.float64).reshape(-1) for k in names])
    g = np.asarray(groups).reshape(-1)
    if not (len(y) == len(X) == len(g)):
        raise ConfigError(f"gap, regressors and groups differ in length: {len(y)}, {len(X)}, {len(g)}")
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(X))):
        raise ConfigError("the gap model got NaN or infinite values (leave those rows out first)")
    const = constant_regressors(factors)
    if const:
        raise ConfigError("; ".join(f"regressor '{k}' is {why}" for k, why in const.items()))
    design = np.column_stack([np.ones(len(y)), X])
    if len(y) <= design.shape[1] or np.linalg.matrix_rank(design) < design.shape[1]:
        raise ConfigError(f"the gap model is not identified: {len(y)} rows for {design.shape[1]} terms, or collinear regressors ({', '.join(names)})")
    return y, design, g, names


def fit_gap_model(gap: Any, factors: Mapping[str, Any], groups: Any, *, confidence: float = 0.95):
    """OLS of ``gap`` on an intercept and ``factors`` (name → values) with SEs clustered by
    ``groups`` (:func:`sourcebias.clustered.ols.clustered_ols`: statsmodels, t intervals with G − 1
    df); refuses a constant or collinear regressor and fewer than 2 clusters. Returns the
    statsmodels results, the term names, and why the fit carries no interval ("" when it does)."""
    from sourcebias.clustered.ols import clustered_ols

    y, design, g, names = _design(gap, factors, groups)
    if len(np.unique(g)) < 2:
        raise ConfigError("clustered standard errors need at least 2 clusters (queries)")
    fit = clustered_ols(y, design, ["intercept", *names], g, level=confidence)
    if fit.refused:
        raise ConfigError(f"the gap model is not identified: {fit.refused}")
    return fit.fit, ["intercept", *names], fit.interval_refused


def term_table(fit, names: Sequence[str], gap: Any, factors: Mapping[str, Any], *, confidence: float = 0.95, refused: str = "") -> list[dict[str, Any]]:
    """One row per term of a fitted gap model: coefficient, clustered SE, CI, p, standardised
    coefficient and CI (b · sd(x) / sd(gap)), the regressor's mean and its share of the mean gap
    (b · mean(x) / mean(gap); the intercept's b / mean(gap)); shares None when the mean gap is 0;
    SE, CI and p None when ``refused`` (too few queries for an interval)."""
    y = np.asarray(gap, dtype=np.float64)
    ci = np.full((len(names), 2), np.nan) if refused else np.asarray(fit.conf_int(alpha=1 - confidence))
    mean_gap, sd_gap = float(y.mean()), float(y.std(ddof=1))
    rows = []
    for k, name in enumerate(names):
        x = np.ones_like(y) if name == "intercept" else np.asarray(factors[name], dtype=np.float64)
        b = float(fit.params[k])
        row: dict[str, Any] = {
            "term": name,
            "label": LABELS.get(name, name),
            "coef": b,
            "se": None if refused else float(fit.bse[k]),
            "ci_low": None if refused else float(ci[k, 0]),
            "ci_high": None if refused else float(ci[k, 1]),
            "p": None if refused else float(fit.pvalues[k]),
            "mean_x": float(x.mean()),
        }
        scale = float(x.std(ddof=1)) / sd_gap if name != "intercept" and sd_gap > 0 else float("nan")
        row.update(std_coef=b * scale, std_ci_low=None if refused else float(ci[k, 0]) * scale, std_ci_high=None if refused else float(ci[k, 1]) * scale)
        row["share"] = b * row["mean_x"] / mean_gap if mean_gap != 0 else None
        rows.append(row)
    return rows


def held_out(gap: Any, factors: Mapping[str, Any], groups: Any, *, seed: int = 0) -> dict[str, Any]:
    """Fit on a seeded half of the clusters (queries), judge on the other: R², the shares with
    the first half's coefficients and the second half's means, and the residual share. Undefined
    (a ``note``) when a half cannot be fitted (too few rows or clusters, a constant regressor)."""
    g = np.asarray(groups).reshape(-1)
    clusters = np.unique(g)
    order = np.random.default_rng(seed).permutation(len(clusters))
    fit_clusters = set(clusters[order[: len(clusters) // 2]].tolist())
    a = np.array([c in fit_clusters for c in g.tolist()])
    b = ~a
    base = {
        "fit_queries": len(fit_clusters),
        "test_queries": len(clusters) - len(fit_clusters),
        "fit_rows": int(a.sum()),
        "test_rows": int(b.sum()),
        "seed": seed,
    }
    y = np.asarray(gap, dtype=np.float64)
    try:
        fit, names, _ = fit_gap_model(y[a], {k: np.asarray(v)[a] for k, v in factors.items()}, g[a])
    except ConfigError as e:
        return {**base, "note": f"undefined: the fitting half cannot be fitted ({e})"}
    if b.sum() < 2:
        return {**base, "note": "undefined: fewer than 2 rows in the held-out half"}
    design = np.column_stack([np.ones(int(b.sum()))] + [np.asarray(factors[k], dtype=np.float64)[b] for k in names[1:]])
    pred = design @ np.asarray(fit.params)
    yb = y[b]
    ss_tot = float(np.sum((yb - yb.mean()) ** 2))
    out: dict[str, Any] = {**base, "r2": 1.0 - float(np.sum((yb - pred) ** 2)) / ss_tot if ss_tot > 0 else None, "mean_gap": float(yb.mean())}
    m = float(yb.mean())
    out["shares"] = {n: float(fit.params[k] * design[:, k].mean() / m) if m != 0 else None for k, n in enumerate(names)}
    out["shares"]["residual"] = float((yb - pred).mean() / m) if m != 0 else None
    return out


def decompose_gap(gap: Any, factors: Mapping[str, Any], groups: Any, *, seed: int = 0, confidence: float = 0.95) -> dict[str, Any]:
    """The whole decomposition of one set of pairs: constant regressors left out (and named),
    rows with a missing value left out (and counted), the clustered fit, the term table, the
    held-out half. Refuses when no regressor is left."""
    y = np.asarray(gap, dtype=np.float64).reshape(-1)
    f = {k: np.asarray(v, dtype=np.float64).reshape(-1) for k, v in factors.items()}
    g = np.asarray(groups).reshape(-1)
    ok = np.isfinite(y) & np.all([np.isfinite(v) for v in f.values()], axis=0) if f else np.isfinite(y)
    missing = {k: int((~np.isfinite(v)).sum()) for k, v in f.items() if (~np.isfinite(v)).any()}
    y, g, f = y[ok], g[ok], {k: v[ok] for k, v in f.items()}
    excluded = constant_regressors(f)
    f = {k: v for k, v in f.items() if k not in excluded}
    if not f:
        raise ConfigError("no regressor left to explain the gap: " + "; ".join(f"{k} {why}" for k, why in excluded.items()))
    fit, names, refused = fit_gap_model(y, f, g, confidence=confidence)
    return (
        {
            "terms": term_table(fit, names, y, f, confidence=confidence, refused=refused),
            "factors": list(f),
            "excluded": excluded,
            "rows": len(y),
            "rows_left_out": int((~ok).sum()),
            "missing_values": missing,
            "queries": len(np.unique(g)),
            "mean_gap": float(y.mean()),
            "r2": float(fit.rsquared),
            "confidence": confidence,
            "held_out": held_out(y, f, g, seed=seed),
        }
        | ({"share_note": "shares undefined: the mean gap is 0"} if float(y.mean()) == 0 else {})
        | ({"interval_refused": refused} if refused else {})
    )


# -- the embedding factor -----------------------------------------------------------------------
def cross_fitted_projections(diffs: Any, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's difference projected on the LLM − human direction estimated on the other
    seeded half of the pairs (:func:`sourcebias.analysis.direction.estimate_direction`); and the
    half (0/1) of each pair. Needs at least 2 pairs."""
    from sourcebias.analysis.direction import estimate_direction

    d = np.asarray(diffs, dtype=np.float64)
    if len(d) < 2:
        raise ConfigError(f"the cross-fitted direction needs at least 2 twin pairs, got {len(d)}")
    half = (np.random.default_rng(seed).permutation(len(d)) < len(d) // 2).astype(np.int64)
    proj = np.empty(len(d))
    for h in (0, 1):
        u = estimate_direction(d[half == 1 - h], np.zeros_like(d[half == 1 - h]), n_permutations=0).unit
        proj[half == h] = d[half == h] @ u
    return proj, half


# -- the analysis -------------------------------------------------------------------------------
def decompose(
    dataset,
    model: str = "minilm",
    *,
    lm: str | None = None,
    sources: Sequence[str] | None = None,
    field: str = "text",
    seed: int = 0,
    confidence: float = 0.95,
    options: Mapping[str, Any] | None = None,
):
    """The joint regression of the twin score gaps of ``model`` (see the module docs), per LLM
    source; Δ log-perplexity only with ``lm``. Differences of words, median IDF and perplexity are
    of ``field``; the embeddings (and so the gap) of title and text, as the retriever sees them.
    ``options`` are the model options of every analysis (``device``, ``batch_size``,
    ``cache_dir``; :mod:`sourcebias.analysis.common`), for the retriever and the LM alike."""
    import pandas as pd

    from sourcebias.analysis.artifacts import artifact_table

    retriever = dense_model(model, options)
    table, models = artifact_table(dataset, lm, field=field, options=options)
    summary: dict[str, Any] = {"model": retriever.name, "field": field, "factors_requested": [f for f in FACTORS if f != "perplexity" or lm], "sources": {}}
    if not lm:
        summary["not_included"] = {"perplexity": "no --lm given (perplexity is slow to compute)"}
    pair_tables, term_rows = [], []
    for llm in llm_sources(dataset, sources):
        rows = _gap_rows(dataset, retriever, table, llm, seed=seed)
        if rows.empty:
            summary["sources"][llm] = {"rows": 0, "note": "undefined: no relevant judged document of the split has both copies"}
            continue
        factors = {f: rows[f"delta_{f}"].to_numpy() for f in FACTORS if f"delta_{f}" in rows}
        res = decompose_gap(rows["gap"].to_numpy(), factors, rows["query_id"].to_numpy(), seed=seed, confidence=confidence)
        summary["sources"][llm] = {k: v for k, v in res.items() if k != "terms"} | {
            "share_definition": "b·mean(x)/mean(gap); intercept b0/mean(gap); in-sample shares add up to 1"
        }
        term_rows += [{"llm_source": llm, **t, "share_held_out": res["held_out"].get("shares", {}).get(t["term"])} for t in res["terms"]]
        pair_tables.append(rows)
    if not term_rows:
        raise ConfigError("no LLM source has a relevant judged pair with both copies (give --split with relevance judgements)")
    tables = {"decompose_terms": pd.DataFrame(term_rows), "decompose_pairs": pd.concat(pair_tables, ignore_index=True)}
    parameters = {"model": model, "lm": lm, "field": field, "seed": seed, "confidence": confidence}
    return make_result("decompose", dataset, parameters, {"encoder": retriever.config(), **models}, tables, summary)


def _gap_rows(dataset, retriever, table, llm: str, *, seed: int):
    """One row per relevant (query, document) pair with both copies of ``llm``: the score gap and
    each factor's LLM − human difference."""
    import pandas as pd

    corpus = dataset.corpus
    texts = corpus.retrieval_texts()
    hp, lp, ids = twin_pairs(corpus, dataset.human_source, llm)
    row_of = {d: k for k, d in enumerate(ids)}
    pairs = [(q, row_of[d]) for q in dataset.evaluation_queries() for d, g in dataset.qrels[q].items() if g > 0 and d in row_of]
    if not pairs:
        return pd.DataFrame()
    diffs = retriever.embed([texts[i] for i in lp], "document").astype(np.float64) - retriever.embed([texts[i] for i in hp], "document").astype(np.float64)
    proj, half = cross_fitted_projections(diffs, seed=seed)
    k = np.array([r for _, r in pairs])
    q_vecs = retriever.embed([dataset.queries[q] for q, _ in pairs], "query").astype(np.float64)
    out = pd.DataFrame({"query_id": [q for q, _ in pairs], "doc_id": [ids[r] for r in k], "llm_source": llm, "gap": np.einsum("ij,ij->i", q_vecs, diffs[k])})
    cols = {"perplexity": "perplexity", "length": "words", "median_idf": "median_idf"}
    for f, col in cols.items():
        if col in table:
            v = table[col].to_numpy(dtype=np.float64)
            out[f"delta_{f}"] = v[lp[k]] - v[hp[k]]
    out["delta_direction"] = proj[k]
    out["direction_half"] = half[k]
    return out


# -- the figure and the lines the CLI prints ---------------------------------------------------------
def plot_coefficients(
    terms, path: str | Path, *, residual_held_out: Mapping[str, float] | None = None, confidence: float = 0.95, title: str | None = None
) -> Path:
    """Left: each factor's standardised coefficient with its clustered CI. Right: each term's share
    of the mean gap, in-sample and on the held-out half (with the held-out residual share)."""
    import matplotlib

    from sourcebias.analysis import figures as fg

    sources = list(dict.fromkeys(terms["llm_source"]))
    colors = fg.source_colors(["human", *sources], "human")
    with matplotlib.rc_context(fg._STYLE):
        fig, (ax, bx) = fg._figure(2, 3.4)
        step = 0.8 / max(len(sources), 1)
        for j, s in enumerate(sources):
            part = terms[(terms["llm_source"] == s) & (terms["term"] != "intercept")]
            y = np.arange(len(part)) + (j - (len(sources) - 1) / 2) * step
            low, high = part["std_ci_low"].astype(float), part["std_ci_high"].astype(float)  # None (no CI: too few queries) -> NaN: no bar
            err = np.nan_to_num(np.vstack([part["std_coef"] - low, high - part["std_coef"]]), nan=0.0)
            ax.errorbar(part["std_coef"], y, xerr=err, fmt="o", color=colors[s], capsize=3, label=s)
            ax.set_yticks(np.arange(len(part)), list(part["label"]))
            _share_bars(bx, terms[terms["llm_source"] == s], (residual_held_out or {}).get(s), j, len(sources), colors[s], fg.NULL_COLOR)
        ax.axvline(0, color=fg.NULL_COLOR, lw=1)
        ax.invert_yaxis()
        level = round(100 * confidence)
        ax.set_xlabel(f"standardised coefficient b·sd(x)/sd(gap)\n({level}% CI, SEs clustered by query)")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=2)
        bx.axvline(0, color=fg.NULL_COLOR, lw=1)
        bx.invert_yaxis()
        bx.set_xlabel("share of the mean gap\nb·mean(x) / mean(gap)")
        bx.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=2)
        import textwrap

        fig.suptitle("\n".join(textwrap.wrap(title or "Joint decomposition of the twin score gap", 110)), fontsize=9)  # a long factor list fits the width
        return fg._save(fig, path)


def _share_bars(ax, part, residual: float | None, j: int, n_sources: int, color: str, held_color: str) -> None:
    labels = [*part["label"], "residual (held out)"]
    ins = [*part["share"].astype(float), np.nan]
    held = [*part["share_held_out"].astype(float), np.nan if residual is None else float(residual)]
    y = np.arange(len(labels))
    w = 0.4 / n_sources
    off = j * 2 * w - 0.4 + w
    ax.barh(y + off, np.nan_to_num(ins), height=w, color=color, label=f"in-sample ({part['llm_source'].iloc[0]})")
    ax.barh(y + off + w, np.nan_to_num(held), height=w, color=held_color, label="held-out half")
    ax.set_yticks(y, labels)


def draw(result, out: Path) -> dict[str, Path]:
    """The coefficient plot of a decompose result (for :func:`sourcebias.analysis.draw.draw`)."""
    terms = result.tables["decompose_terms"]
    residual = {s: e.get("held_out", {}).get("shares", {}).get("residual") for s, e in result.summary["sources"].items()}
    included = ", ".join(LABELS[f] for f in FACTORS if any(f in e.get("factors", []) for e in result.summary["sources"].values()))
    counts = "; ".join(f"{e['rows']} pairs, {e['queries']} queries" for e in result.summary["sources"].values() if "factors" in e)
    title = f"{result.dataset.get('name', '')}, {result.summary.get('model')}: twin score gap ({counts}) on {included} [{result.parameters.get('field')}]"
    return {
        "decompose": plot_coefficients(
            terms, out / "decompose.png", residual_held_out=residual, confidence=result.parameters.get("confidence", 0.95), title=title
        )
    }


class Decompose(Analysis):
    """``sourcebias analyze decompose``."""

    name = "decompose"
    help = (
        "One joint account of the twin gap: s(q, LLM) − s(q, human) regressed on Δ perplexity (--lm), Δ words, Δ median "
        "IDF and the cross-fitted direction projection, SEs clustered by query, shares of the mean gap, a held-out half."
    )
    params: ClassVar[Mapping[str, Param]] = {
        "model": Param(str, "minilm", "Dense retriever whose score gaps are explained: minilm, st:NAME_OR_PATH or a preset."),
        "lm": Param(
            str | None,
            None,
            "Language model for the Δ log-perplexity factor (lm:NAME, mlm:NAME or mlm:from-retriever:RETRIEVER; slow). Left out when not given.",
        ),
        "split": Param(str, "test", "Qrels split whose relevant pairs are regressed."),
        "confidence": Param(float, 0.95, "Level of the clustered confidence intervals.", min=0.5, max=0.999),
        "field": FIELD,
        "source": SOURCES,
        "seed": SEED,
    }

    def run(self, dataset, params, options):
        p = params
        return decompose(dataset, p["model"], lm=p["lm"], sources=p["source"], field=p["field"], seed=p["seed"], confidence=p["confidence"], options=options)

    def tables(self, result) -> list[AnalysisTable]:
        fits = []
        for llm, e in result.summary["sources"].items():
            if "factors" in e:
                h = e["held_out"]
                fits.append(
                    {
                        "source": llm,
                        **{k: e[k] for k in ("rows", "queries", "rows_left_out", "mean_gap", "r2")},
                        "held_r2": h.get("r2"),
                        "held_rows": h.get("test_rows"),
                        "held_residual": h.get("shares", {}).get("residual"),
                    }
                )
        fit_columns = [
            text("source", "LLM source"),
            integer("rows", "relevant pairs"),
            integer("queries", "queries"),
            integer("rows_left_out", "left out"),
            sig("mean_gap", "mean gap"),
            column("r2", "R²", "num", 3),
            integer("held_rows", "held-out pairs"),
            column("held_r2", "held-out R²", "num", 3),
            column("held_residual", "held-out residual share", "num", 3),
        ]
        terms = result.tables["decompose_terms"].rename(columns={"llm_source": "source"}).to_dict("records")
        term_columns = [
            text("source", "LLM source"),
            text("label", "term"),
            sig("coef", "b"),
            sig("ci_low", "CI low"),
            sig("ci_high", "CI high"),
            column("p", "p", "sig", 3),
            column("std_coef", "standardised", "num", 3),
            column("share", "share", "num", 3),
            column("share_held_out", "share (held out)", "num", 3),
        ]
        level = round(100 * result.parameters.get("confidence", 0.95))
        return [
            AnalysisTable(
                "decompose_fits",
                "The joint regression of the twin score gap",
                fit_columns,
                fits,
                "SEs clustered by query; the held-out half is fitted on the other half's queries.",
            ),
            AnalysisTable(
                "decompose_terms", "Its terms", term_columns, terms, f"b with its {level}% CI (clustered by query); share of the mean gap: b·mean(x)/mean(gap)."
            ),
        ]

    def notes(self, result) -> list[str]:
        s = result.summary
        out = [f"factors: {', '.join(s['factors_requested'])}" + "".join(f"; not included: {k} ({why})" for k, why in s.get("not_included", {}).items())]
        for llm, e in s["sources"].items():
            if "factors" not in e:
                out.append(f"{llm}: {e.get('note')}")
                continue
            out += [f"{llm}: excluded {k}: {why}" for k, why in e["excluded"].items()]
            if "note" in e["held_out"]:
                out.append(f"{llm}: held-out half: {e['held_out']['note']}")
            if e.get("interval_refused"):
                out.append(f"{llm}: no CI or p: {e['interval_refused']}")
        return out

    def draw(self, result, out: Path) -> dict[str, Path]:
        return draw(result, out)


register_analysis(Decompose())

__all__ = [
    "FACTORS",
    "constant_regressors",
    "cross_fitted_projections",
    "decompose",
    "decompose_gap",
    "draw",
    "fit_gap_model",
    "held_out",
    "plot_coefficients",
    "term_table",
]
