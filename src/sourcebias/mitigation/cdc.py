"""Causal Diagnosis and Correction (CDC; Perplexity Trap, Dai et al., 2025, arXiv 2503.08684, §4.1.1 and Eqs. 1–3): how much of a retriever's score is caused by
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

import dataclasses
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from sourcebias.core.errors import ConfigError, DataError

if TYPE_CHECKING:
    from linearmodels.iv.results import IVResults

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
    #: the document field whose perplexity was used; a fit saved before it was recorded used title + text
    field: str = "title+text"
    details: dict[str, Any] = dataclasses.field(default_factory=dict)  # (the attribute `field` shadows dataclasses.field here)

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
            f"OLS slope {self.ols.get('beta', float('nan')):.4g}; perplexity of the {self.field}"
        )


def fit_iv(
    scores: Sequence[float],
    perplexity: Sequence[float],
    is_llm: Sequence[int],
    query_ids: Sequence[str],
    *,
    cov_type: str = "robust",
    query_effects: bool = False,
    confidence: float = 0.95,
) -> dict[str, Any]:
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
    df = pd.DataFrame(
        {"score": np.asarray(scores, dtype=float), "ppl": np.asarray(perplexity, dtype=float), "llm": np.asarray(is_llm, dtype=float), "q": list(query_ids)}
    )
    if len(df) < 4 or df["llm"].nunique() < 2:
        raise ConfigError("2SLS needs documents of both sources (at least 4 observations)")
    if not np.all(np.isfinite(df[["score", "ppl"]].to_numpy())):
        raise ConfigError("scores and perplexities must be finite")
    exog, wald = _within(df) if query_effects else _with_constant(df)
    fit_kw: dict[str, Any] = {"cov_type": cov_type}
    if cov_type == "clustered":
        fit_kw["clusters"] = pd.Categorical(df["q"]).codes
    iv = cast("IVResults", IV2SLS(df["score"], exog, df["ppl"], df["llm"]).fit(**fit_kw))  # with an endogenous regressor: IV results
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


def _within(df: Any) -> tuple[None, None]:
    """Query fixed effects: subtract each query's mean from score, perplexity and instrument (in
    place); no exogenous regressors and no Wald estimator."""
    for c in ("score", "ppl", "llm"):
        df[c] = df[c] - df.groupby("q")[c].transform("mean")
    return None, None


def _with_constant(df: Any) -> tuple[Any, float]:
    """A constant as the exogenous regressor (added to ``df``) and the Wald estimator: the
    difference of the sources' mean scores over that of their mean perplexities (NaN when equal)."""
    df["const"] = 1.0
    m = df.groupby("llm")[["score", "ppl"]].mean()
    dp = m.loc[1.0, "ppl"] - m.loc[0.0, "ppl"]
    return df[["const"]], float((m.loc[1.0, "score"] - m.loc[0.0, "score"]) / dp) if dp != 0 else float("nan")


def correct(scores: np.ndarray, perplexity: np.ndarray, beta: float) -> np.ndarray:
    """R̃ = R̂ − β̂₂ · P."""
    return np.asarray(scores, dtype=np.float64) - float(beta) * np.asarray(perplexity, dtype=np.float64)


@dataclass
class CDCCalibration:
    """A fitted CDC and its calibration data: ``table`` has one row per scored copy (``query_id,
    doc_id, source, is_llm, score, perplexity``), complete pairs only; ``dropped`` counts the
    copies whose pair was left out because the retriever did not score its other copy."""

    fit: CDCFit
    table: Any
    dropped: int

    def save(self, folder: Path, evaluation: dict[str, Any] | None = None) -> None:
        """Write the fit (``cdc.json``) and the calibration sample (``sample.csv``) into ``folder``.

        Args:
            folder: an existing folder (an output folder's staging folder).
            evaluation: where the fit is evaluated (recorded in the fit's details), or None.
        """
        if evaluation is not None:
            self.fit.details["evaluation"] = evaluation
        self.fit.save(folder / "cdc.json")
        self.table.to_csv(folder / "sample.csv", index=False, lineterminator="\n")


def calibration_table(
    dataset: Any, retriever: Any, scorer: Any, pairs: Sequence[CalibrationPair], *, llm_source: str, seed: int = 0, cache_dir: Any = None
) -> tuple[Any, int]:
    """The retriever's score and the scorer's log-perplexity (of ``scorer.field``) of both copies
    of each calibration pair, as a DataFrame of complete pairs, and the number of copies left out
    (a pair the retriever ranks only one copy of). ``seed`` is the retriever's tie-breaking seed."""
    import pandas as pd

    from sourcebias.analysis.perplexity import document_values

    corpus = dataset.corpus
    human = dataset.human_source
    wanted: dict[str, list[int]] = {}
    for p in pairs:
        wanted.setdefault(p.query_id, []).extend([corpus.position(p.doc_id, human), corpus.position(p.doc_id, llm_source)])
    scores = pair_scores(retriever, corpus, dataset.queries, wanted, seed=seed)
    positions = sorted({pos for v in wanted.values() for pos in v})
    _, values, _ = document_values(corpus, scorer, cache_dir=cache_dir, positions=positions)
    ppl = dict(zip(positions, values.tolist()))
    rows = []
    for p in pairs:
        for src in (human, llm_source):
            pos = corpus.position(p.doc_id, src)
            if (p.query_id, pos) in scores:
                rows.append(
                    {
                        "query_id": p.query_id,
                        "doc_id": p.doc_id,
                        "source": src,
                        "is_llm": int(src == llm_source),
                        "score": scores[(p.query_id, pos)],
                        "perplexity": ppl[pos],
                    }
                )
    table = pd.DataFrame(rows, columns=["query_id", "doc_id", "source", "is_llm", "score", "perplexity"])
    complete = table.groupby(["query_id", "doc_id"])["source"].transform("count") == 2
    return table[complete].reset_index(drop=True), int((~complete).sum())


def calibrate(
    dataset: Any,
    retriever: Any,
    scorer: Any,
    *,
    sample: int = 128,
    seed: int = 42,
    llm_source: str | None = None,
    cov_type: str = "robust",
    query_effects: bool = False,
    cache_dir: Any = None,
    lm: str | None = None,
    retriever_spec: str | None = None,
) -> CDCCalibration:
    """Fit CDC on ``dataset`` (its split's relevant pairs): a calibration sample of ``sample``
    pairs drawn with ``seed``, the ``retriever``'s scores (ties broken with ``seed``) and the
    ``scorer``'s log-perplexities (:func:`~sourcebias.analysis.perplexity.build_lm_scorer`, its
    field), then :func:`fit_iv`. ``lm`` and ``retriever_spec`` are the specifications recorded
    in the fit (default: the scorer's and the retriever's names)."""
    from sourcebias.evaluation.protocol import json_safe

    llm = llm_source or _single_llm(dataset)
    pairs = calibration_sample(dataset, sample, seed=seed, llm_source=llm)
    table, dropped = calibration_table(dataset, retriever, scorer, pairs, llm_source=llm, seed=seed, cache_dir=cache_dir)
    if len(table) < 4:
        raise ConfigError(f"the retriever scored too few calibration documents ({len(table)} in complete pairs); is it a re-ranker with a small depth?")
    if not np.all(np.isfinite(table["perplexity"].to_numpy(dtype=float))):
        bad = table.loc[~np.isfinite(table["perplexity"].to_numpy(dtype=float)), ["doc_id", "source"]].iloc[0]
        raise ConfigError(f"no perplexity for ({bad['doc_id']}, {bad['source']}): its {scorer.field} is empty after tokenization")
    est = fit_iv(table["score"], table["perplexity"], table["is_llm"], table["query_id"], cov_type=cov_type, query_effects=query_effects)
    fit = CDCFit(
        **est,
        n_pairs=len(table) // 2,
        lm=lm or scorer.name,
        retriever=str(retriever_spec or getattr(retriever, "name", "")),
        dataset=dataset.name,
        split=dataset.split or "",
        llm_source=llm,
        sample_size=sample,
        seed=seed,
        field=scorer.field,
        details={"pairs_dropped_unscored": dropped, "lm_config": json_safe(scorer.config()), "retriever_config": json_safe(retriever.config())},
    )
    return CDCCalibration(fit, table, dropped)


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
