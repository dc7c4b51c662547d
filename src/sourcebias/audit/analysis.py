"""The audit of runs whose documents' sources are unknown: Share@k and ΔNDSR@k of LLM text from a
detector's labels, naive and corrected for misclassification (:mod:`sourcebias.audit.correction`).

For each run and cut-off k, over the queries with a non-empty ranking:

* **Share@k** (LLM): the mean over queries of the share of the top k labelled LLM (Cocktail's rate,
  :class:`~sourcebias.evaluation.measures.Share`, with the detector's labels in place of sources);
* **ΔNDSR@k**: NDSR_human − NDSR_LLM = 1 − 2·NDSR_LLM, NDSR the rank-discounted share
  (weights 1/log2(1 + r), :class:`~sourcebias.evaluation.measures.NDSR`); < 0: LLM text ranks higher.
  Rankings are used as retrieved (an audit does not know which documents are twins).

*Naive*: with the detector's hard labels. *Corrected*: Rogan–Gladen applied to the mean share (it
is linear, so this equals the mean of corrected per-query shares before clipping), ΔNDSR from the
corrected NDSR_LLM. CIs: :func:`sourcebias.audit.correction.joint_bootstrap`. *True* (only when
the run's corpus carries source labels, which the audit itself never reads): the same quantities
from the real sources (every non-human source counts as LLM), computed by the evaluation's own
measures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sourcebias.audit.correction import correct, joint_bootstrap
from sourcebias.audit.detector import CalibratedDetector
from sourcebias.core.errors import ConfigError

SHARE = "Share"
DELTA_NDSR = "ΔNDSR"
QUANTITIES = (SHARE, DELTA_NDSR)
#: reported value = a + b * (share of LLM text): Share@k is the share, ΔNDSR@k = 1 − 2·NDSR_LLM
TRANSFORMS = {SHARE: (0.0, 1.0), DELTA_NDSR: (1.0, -2.0)}


@dataclass(frozen=True)
class AuditSettings:
    """Cut-offs, bootstrap resamples, CI level and seed of an audit, and the transfer check's
    level and resamples (:mod:`sourcebias.audit.diagnostic`)."""

    ks: tuple[int, ...] = (10,)
    resamples: int = 2000
    level: float = 0.95
    seed: int = 0
    check_alpha: float = 0.05
    check_resamples: int = 200
    max_half_width: float = 0.10  # a corrected CI wider than ± this (on the share scale) is marked imprecise

    def __post_init__(self) -> None:
        if not self.ks or any(int(k) < 1 for k in self.ks):
            raise ConfigError(f"cut-offs must be positive integers, got {list(self.ks)}")
        if self.resamples < 100:
            raise ConfigError(f"resamples must be at least 100, got {self.resamples}")
        if not 0.5 <= self.level < 1:
            raise ConfigError(f"level must be in [0.5, 1), got {self.level}")
        if not 0 < self.max_half_width <= 1:
            raise ConfigError(f"the widest corrected CI read as an estimate must be a half-width in (0, 1], got {self.max_half_width}")
        if not 0 < self.check_alpha < 1 or self.check_resamples < 20:
            raise ConfigError(f"the transfer check needs 0 < alpha < 1 and at least 20 resamples, got {self.check_alpha}, {self.check_resamples}")

    def describe(self) -> dict[str, Any]:
        return {
            "k": list(self.ks),
            "resamples": self.resamples,
            "level": self.level,
            "seed": self.seed,
            "check_alpha": self.check_alpha,
            "max_half_width": self.max_half_width,
            "check_resamples": self.check_resamples,
        }


def weights(quantity: str, k: int) -> np.ndarray:
    """Rank weights of the top k: 1 (Share) or 1/log2(1 + r) (NDSR)."""
    return np.ones(k) if quantity == SHARE else 1.0 / np.log2(1.0 + np.arange(1, k + 1))


def labelled_shares(run, flags: np.ndarray, query_ids: Sequence[str], w: np.ndarray) -> np.ndarray:
    """Per query, the share of the rank weights ``w`` held by documents flagged LLM (``flags``:
    one value per corpus position, 1 = LLM); NaN for a query with an empty ranking."""
    out = np.full(len(query_ids), np.nan)
    for i, q in enumerate(query_ids):
        pos = run.positions.get(q)
        if pos is None or len(pos) == 0:
            continue
        top = flags[pos[: len(w)]]
        if np.isnan(top).any():
            raise ConfigError(f"a document in the top {len(w)} of query '{q}' has no detector label")
        ww = w[: len(top)]
        out[i] = float(top @ ww / ww.sum())
    return out


def has_labels(corpus, human_source: str | None) -> bool:
    """Whether the corpus carries source labels the truth can be computed from."""
    return human_source is not None and human_source in corpus.sources and len(corpus.sources) > 1


def true_shares(run, query_ids: Sequence[str], human_source: str, k: int) -> dict[str, np.ndarray]:
    """Per query, the true LLM share (Share@k) and NDSR_LLM@k from the corpus' sources, by the
    evaluation's measures (every non-human source is LLM)."""
    from sourcebias.evaluation.measures import NDSR, Share

    h = list(run.corpus.sources).index(human_source)
    return {SHARE: 1.0 - Share().per_query(run, query_ids, k)[:, h], DELTA_NDSR: 1.0 - NDSR().per_query(run, query_ids, k)[:, h]}


def audit_positions(runs: Mapping[str, Any], k: int) -> np.ndarray:
    """Corpus positions of every document in the top ``k`` of any query of any run (the only
    documents the detector has to label)."""
    seen: set[int] = set()
    for run in runs.values():
        for pos in run.positions.values():
            seen.update(pos[:k].tolist())
    return np.array(sorted(seen), dtype=np.int64)


def document_scores(runs: Mapping[str, Any], detector: CalibratedDetector, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(positions, scores)``: the detector's scores of every top-``k`` document (a document it
    cannot score stops the audit with a count: leaving it out would change the shares)."""
    corpus = next(iter(runs.values())).corpus
    if any(r.corpus is not corpus for r in runs.values()):
        raise ConfigError("the audited runs must rank the same corpus")
    positions = audit_positions(runs, k)
    scores = np.asarray(detector.score(corpus, positions), dtype=np.float64)
    bad = ~np.isfinite(scores)
    if bad.any():
        raise ConfigError(
            f"the detector gave no score to {int(bad.sum()):,} of the {len(scores):,} audited "
            f"documents (e.g. {corpus.doc_ids[positions[bad][0]]}); the shares cannot be labelled"
        )
    return positions, scores


def flags_of(n: int, positions: np.ndarray, scores: np.ndarray, threshold: float) -> np.ndarray:
    """Flags over a corpus of ``n`` documents: 1 = LLM (score ≥ threshold), 0 = human, NaN =
    not labelled."""
    flags = np.full(n, np.nan)
    flags[positions] = (scores >= threshold).astype(np.float64)
    return flags


def audit_run(
    name: str,
    run,
    flags: np.ndarray,
    detector: CalibratedDetector,
    settings: AuditSettings,
    human_source: str | None,
    unreliable: str = "",
    calibration: Any = None,
) -> list[dict[str, Any]]:
    """The rows of one run: per cut-off and quantity, naive, corrected (with flag and note) and,
    where labels exist, true values, with the CIs and resample counts. ``unreliable``: why the
    corrected figures are not to be trusted (the transfer check's reason), empty when they are;
    ``calibration``: Se and Sp's data (default: the detector's twin pairs)."""
    query_ids = run.query_ids
    calibration = calibration if calibration is not None else detector.calibration()
    se, sp = (float(x) for x in calibration.se_sp())
    truth = has_labels(run.corpus, human_source)
    rows = []
    for k in settings.ks:
        per_query = {q: labelled_shares(run, flags, query_ids, weights(q, k)) for q in QUANTITIES}
        boot = joint_bootstrap(per_query, calibration, resamples=settings.resamples, level=settings.level, seed=settings.seed, transforms=TRANSFORMS)
        true = true_shares(run, query_ids, human_source, k) if truth and human_source is not None else None
        for q in QUANTITIES:
            a, b = TRANSFORMS[q]
            vals = per_query[q][np.isfinite(per_query[q])]
            p_hat = float(vals.mean())
            corr = correct(p_hat, se, sp)
            row = {
                "run": name,
                "measure": f"{q}@{k}",
                "quantity": q,
                "k": k,
                "queries": len(vals),
                "naive": a + b * p_hat,
                "corrected": None if corr["value"] is None else a + b * corr["value"],
                "flag": corr["flag"],
                "note": corr["note"],
                "reliable": not unreliable,
                "unreliable_reason": unreliable,
                "sensitivity": se,
                "specificity": sp,
                **_ci_columns(boot[q]),
            }
            row.update(precision_columns(row, settings.max_half_width * abs(b)))
            if boot[q].get("no_interval"):  # too few queries: no CI, and the row says why
                row["imprecise_reason"] = f"no {settings.level:.0%} CI: {boot[q]['no_interval']}"
                row["note"] = "; ".join(x for x in (row["note"], row["imprecise_reason"]) if x)
            row.update(_truth_columns(row, None if true is None else float(np.nanmean(a + b * true[q]))))
            rows.append(row)
    return rows


def precision_columns(row: dict[str, Any], max_half_width: float) -> dict[str, Any]:
    """Whether the corrected figure's CI is narrow enough to read as an estimate.

    A corrected CI that is valid but wide says the audit cannot tell the value: a share whose 95%
    CI is [0.05, 1.00] is not an estimate of 0.64. The row is then marked imprecise, with the width,
    whatever the transfer check says.

    Args:
        row: An audit row with ``corrected_low`` and ``corrected_high``.
        max_half_width: The widest half-width read as an estimate, on the row's own scale.

    Returns:
        ``{"precise": bool, "imprecise_reason": str}`` (the reason empty when precise).
    """
    lo, hi = row.get("corrected_low"), row.get("corrected_high")
    if lo is None or hi is None:
        return {"precise": False, "imprecise_reason": "the corrected figure has no CI"}
    half = (hi - lo) / 2
    if half > max_half_width:
        return {"precise": False, "imprecise_reason": f"the corrected CI is ±{half:.3f} wide, more than ±{max_half_width:.3g}: it does not pin the value down"}
    return {"precise": True, "imprecise_reason": ""}


def _ci_columns(b: dict[str, Any]) -> dict[str, Any]:
    return {
        "naive_low": b["naive_ci"][0],
        "naive_high": b["naive_ci"][1],
        "corrected_low": b["corrected_ci"][0],
        "corrected_high": b["corrected_ci"][1],
        "undefined_resamples": b["undefined_resamples"],
        "clipped_resamples": b["clipped_resamples"],
    }


def _truth_columns(row: dict[str, Any], true: float | None) -> dict[str, Any]:
    if true is None:
        return {"true": None, "naive_error": None, "corrected_error": None, "naive_covers": None, "corrected_covers": None}
    lo, hi = row["corrected_low"], row["corrected_high"]
    return {
        "true": true,
        "naive_error": row["naive"] - true,
        "corrected_error": None if row["corrected"] is None else row["corrected"] - true,
        "naive_covers": None if row["naive_low"] is None else bool(row["naive_low"] <= true <= row["naive_high"]),
        "corrected_covers": None if lo is None else bool(lo <= true <= hi),
    }
