"""Causal Diagnosis and Correction (CDC; SPEC §8): how much of a retriever's score is caused by
a document's perplexity, estimated with the document's source as an instrument.

Causal graph: source S → perplexity P → score R̂, with unobserved causes (the document's
content) of both P and R̂. Regressing R̂ on P directly (OLS) mixes the causal effect with that
confounding. Two-stage least squares with S as the instrument — S moves P (LLM rewrites have
lower perplexity) and affects R̂ only through P (a twin says the same thing) — recovers the
causal slope β̂₂:

* stage 1: P = a + b·S (+ query effects);  stage 2: R̂ = c + β₂·P̂ (+ query effects).

With a binary instrument and no covariates this is the Wald estimator
(mean R̂_LLM − mean R̂_human) / (mean P_LLM − mean P_human). The correction is
R̃(q, d) = R̂(q, d) − β̂₂·P(d) (:class:`sourcebias.mitigation.stages.CDCCorrection`).

Done better than the reference code: the calibration sample is seeded; the estimate comes with
proper IV standard errors (heteroskedasticity-robust by default, or clustered by query), its
confidence interval and p-value; query fixed effects are an option (each query's mean removed
from score and perplexity — the sample holds a human document and its twin per query, so the
effect is then identified from within-query differences only); the first stage is reported
(F statistic, partial R²) so that a weak instrument shows; the naive OLS slope is reported beside
it. Estimation is linearmodels' ``IV2SLS``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError, DataError

COV_TYPES = ("robust", "clustered", "unadjusted")


@dataclass(frozen=True)
class CalibrationPair:
    """A relevant (query, document) pair of the calibration sample; both copies are used."""

    query_id: str
    doc_id: str
    grade: int


def calibration_sample(dataset: Any, size: int = 128, seed: int = 42, llm_source: str | None = None) -> list[CalibrationPair]:
    """``size`` relevant (query, document) pairs of the dataset's split whose document has a twin
    in ``llm_source``, drawn without replacement with ``numpy.random.default_rng(seed)`` from
    the pairs sorted by (query, document) — the same sample on any machine and corpus order."""
    llm = llm_source or _single_llm(dataset)
    corpus = dataset.corpus
    human = dataset.human_source
    pool = sorted(
        (q, d, g)
        for q in dataset.evaluation_queries()
        for d, g in dataset.qrels[q].items()
        if g > 0 and corpus.position(d, human) is not None and corpus.position(d, llm) is not None
    )
    if not pool:
        raise ConfigError(f"no relevant pair with both a '{human}' and a '{llm}' copy in split '{dataset.split}'")
    if size > len(pool):
        raise ConfigError(f"a calibration sample of {size} pairs asked for, but split '{dataset.split}' has {len(pool)} relevant pairs with both copies")
    idx = np.sort(np.random.default_rng(seed).choice(len(pool), size=size, replace=False))
    return [CalibrationPair(*pool[i]) for i in idx.tolist()]


def _single_llm(dataset: Any) -> str:
    others = dataset.other_sources
    if len(others) != 1:
        raise ConfigError(f"several LLM sources ({', '.join(others)}): name the one to calibrate on")
    return others[0]


@dataclass
class CDCFit:
    """A fitted β̂₂ and everything needed to judge and reuse it (saved as ``cdc.json``)."""

    beta: float
    se: float
    ci_low: float
    ci_high: float
    p_value: float
    confidence: float
    n_obs: int
    n_pairs: int
    cov_type: str
    query_effects: bool
    first_stage: dict[str, float]
    ols: dict[str, float]
    wald: float | None
    lm: str
    retriever: str = ""
    dataset: str = ""
    split: str = ""
    llm_source: str = ""
    sample_size: int = 0
    seed: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "cdc-fit", **asdict(self)}

    def save(self, path: str | Path) -> Path:
        from sourcebias.core.atomic import atomic_write_json

        return atomic_write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | Path) -> CDCFit:
        from sourcebias.core.atomic import read_json_file

        path, body = read_json_file(path, default_name="cdc.json", missing="CDC fit not found")
        if body.pop("kind", None) != "cdc-fit":
            raise DataError(path, "not a CDC fit (kind is not cdc-fit)")
        return cls(**body)

    def summary(self) -> str:
        fs = self.first_stage
        return (
            f"β̂₂ = {self.beta:.4g} (SE {self.se:.3g}, {self.confidence:.0%} CI [{self.ci_low:.4g}, {self.ci_high:.4g}], p = {self.p_value:.3g}; "
            f"{self.cov_type}{', query effects' if self.query_effects else ''}; n = {self.n_obs}); first stage F = {fs.get('f_stat', float('nan')):.1f}; "
            f"OLS slope {self.ols.get('beta', float('nan')):.4g}"
        )


def fit_iv(scores: Sequence[float], perplexity: Sequence[float], is_llm: Sequence[int], query_ids: Sequence[str], *, cov_type: str = "robust", query_effects: bool = False, confidence: float = 0.95) -> dict[str, Any]:
    """2SLS of ``scores`` on ``perplexity`` instrumented by ``is_llm`` (linearmodels ``IV2SLS``),
    with the first stage, the naive OLS slope and, without query effects, the Wald estimator.

    ``cov_type``: ``robust`` (heteroskedasticity-robust, default), ``clustered`` (by query) or
    ``unadjusted``. ``query_effects``: subtract each query's mean from score, perplexity and
    instrument first (fixed effects, the within transformation). The standard errors do not
    count the absorbed means as parameters; use ``clustered`` with query effects — cluster-robust
    errors stay valid under the within transformation, the others are then slightly too small.
    """
    import pandas as pd
    from linearmodels.iv import IV2SLS

    if cov_type not in COV_TYPES:
        raise ConfigError(f"cov_type must be one of {', '.join(COV_TYPES)}, got '{cov_type}'")
    df = pd.DataFrame({"score": np.asarray(scores, dtype=float), "ppl": np.asarray(perplexity, dtype=float), "llm": np.asarray(is_llm, dtype=float), "q": list(query_ids)})
    if len(df) < 4 or df["llm"].nunique() < 2:
        raise ConfigError("2SLS needs documents of both sources (at least 4 observations)")
    if not np.all(np.isfinite(df[["score", "ppl"]].to_numpy())):
        raise ConfigError("scores and perplexities must be finite")
    wald = None
    if query_effects:
        for c in ("score", "ppl", "llm"):
            df[c] = df[c] - df.groupby("q")[c].transform("mean")
        exog = None
    else:
        df["const"] = 1.0
        exog = df[["const"]]
        m = df.groupby("llm")[["score", "ppl"]].mean()
        dp = m.loc[1.0, "ppl"] - m.loc[0.0, "ppl"]
        wald = float((m.loc[1.0, "score"] - m.loc[0.0, "score"]) / dp) if dp != 0 else float("nan")
    fit_kw: dict[str, Any] = {"cov_type": cov_type}
    if cov_type == "clustered":
        fit_kw["clusters"] = pd.Categorical(df["q"]).codes
    iv = IV2SLS(df["score"], exog, df["ppl"], df["llm"]).fit(**fit_kw)
    ci = iv.conf_int(level=confidence).loc["ppl"]
    diag = iv.first_stage.diagnostics.loc["ppl"]
    ols_exog = df[["ppl"]] if exog is None else df[["const", "ppl"]]
    ols = IV2SLS(df["score"], ols_exog, None, None).fit(**fit_kw)
    return {
        "beta": float(iv.params["ppl"]),
        "se": float(iv.std_errors["ppl"]),
        "ci_low": float(ci["lower"]),
        "ci_high": float(ci["upper"]),
        "p_value": float(iv.pvalues["ppl"]),
        "n_obs": int(iv.nobs),
        "first_stage": {"f_stat": float(diag["f.stat"]), "f_pvalue": float(diag["f.pval"]), "partial_r2": float(diag["partial.rsquared"])},
        "ols": {"beta": float(ols.params["ppl"]), "se": float(ols.std_errors["ppl"]), "p_value": float(ols.pvalues["ppl"])},
        "wald": wald,
        "cov_type": cov_type,
        "query_effects": query_effects,
        "confidence": confidence,
    }


def correct(scores: np.ndarray, perplexity: np.ndarray, beta: float) -> np.ndarray:
    """R̃ = R̂ − β̂₂ · P."""
    return np.asarray(scores, dtype=np.float64) - float(beta) * np.asarray(perplexity, dtype=np.float64)


def pair_scores(retriever: Any, corpus: Any, queries: dict[str, str], wanted: dict[str, list[int]], *, seed: int = 0) -> dict[tuple[str, int], float]:
    """The retriever's score of each wanted (query, corpus position), from one ranking of the
    whole corpus per query (so that collection statistics, e.g. BM25's idf, are the real ones).
    A pair the retriever does not rank (no shared term; below a re-ranker's depth) is left out."""
    sub = {q: queries[q] for q in wanted}
    depth = len(corpus)
    run = retriever.retrieve(corpus, sub, depth, seed=seed)
    out: dict[tuple[str, int], float] = {}
    for q, positions in wanted.items():
        score_of = dict(zip(run.positions[q].tolist(), np.asarray(run.scores[q], dtype=float).tolist()))
        for p in positions:
            if p in score_of:
                out[(q, p)] = score_of[p]
    return out
