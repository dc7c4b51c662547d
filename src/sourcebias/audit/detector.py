"""Detectors of LLM text, calibrated on held-out labelled twins.

A detector gives each document a score (higher: more likely LLM-written) and, at a threshold,
a hard label. Two kinds:

* :func:`train_detector` — the built-in one: scikit-learn's ``LogisticRegression`` (after
  ``SimpleImputer`` and ``StandardScaler``) on the features of :mod:`sourcebias.audit.features`,
  trained on labelled twin pairs of a dataset; its score is P(LLM).
* :func:`score_file_detector` — scores the user supplies (:mod:`sourcebias.audit.scores`) for the
  audited documents and for the documents of a labelled calibration dataset.

**Calibration.** The twin pairs (a human document and its LLM copies, grouped by ``doc_id``) are
split *by pair* (``sklearn.model_selection.train_test_split`` on the pair ids, seeded): every copy
of a document lies on the same side, so the calibration never sees a copy of a training document.
On the calibration pairs the threshold is chosen (``youden``: the score maximising Se + Sp − 1,
which also keeps the Rogan–Gladen denominator as far from 0 as possible; or a fixed number), and
sensitivity and specificity are estimated at it. The threshold is chosen on the same pairs that
estimate Se and Sp, which makes Se + Sp slightly optimistic (by at most the noise of picking one of
the calibration's ROC points); give a fixed ``threshold`` to avoid it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sourcebias.audit.correction import Calibration
from sourcebias.audit.features import FeatureExtractor, FeatureSpec
from sourcebias.core.errors import ConfigError
from sourcebias.core.sampling import seeded_sample

YOUDEN = "youden"


@dataclass
class CalibratedDetector:
    """A detector with its calibration: ``score(corpus, positions)`` gives scores (higher: LLM);
    ``threshold``: a document is labelled LLM when its score ≥ threshold; ``calibration_table``:
    one row per held-out calibration document (``doc_id``, ``source``, ``is_llm``, ``score``,
    ``flagged``); ``info``: what it is (kind, features, training, threshold rule, AUC ...)."""

    score: Callable[[Any, Sequence[int] | np.ndarray], np.ndarray]
    threshold: float
    calibration_table: Any
    info: dict[str, Any] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)
    features: Callable[[Any, Sequence[int] | np.ndarray], dict[str, np.ndarray]] | None = (
        None  # the inputs of the score, for the transfer check; their calibration values are the table's ``feature:NAME`` columns
    )
    calibration_corpus: Any = None  # the corpus of the calibration twins: is it the audited one? (sourcebias.audit.calibrate.calibration_domain)

    def calibration(self) -> Calibration:
        """Per calibration pair (grouped by ``doc_id``): the flags of its human and LLM copies."""
        t = self.calibration_table
        g = t.assign(h=(~t["is_llm"]) & t["flagged"], l=t["is_llm"] & t["flagged"], n=t["is_llm"]).groupby("doc_id", sort=True)[["h", "l", "n"]].sum()
        return Calibration(human_flagged=g["h"].to_numpy(np.float64), llm_copies=g["n"].to_numpy(np.float64), llm_flagged=g["l"].to_numpy(np.float64))

    def summary(self) -> dict[str, Any]:
        """Se, Sp (with Wilson 95% intervals, statsmodels), Youden's J, AUC, counts, threshold."""
        from statsmodels.stats.proportion import proportion_confint

        t = self.calibration_table
        llm, hum = t[t["is_llm"]], t[~t["is_llm"]]
        tp, fn, tn, fp = int(llm["flagged"].sum()), int((~llm["flagged"]).sum()), int((~hum["flagged"]).sum()), int(hum["flagged"].sum())
        se, sp = tp / max(tp + fn, 1), tn / max(tn + fp, 1)
        se_ci = proportion_confint(tp, tp + fn, method="wilson") if tp + fn else (None, None)
        sp_ci = proportion_confint(tn, tn + fp, method="wilson") if tn + fp else (None, None)
        return {
            "threshold": self.threshold,
            "sensitivity": se,
            "sensitivity_ci95": [None if x is None else float(x) for x in se_ci],
            "specificity": sp,
            "specificity_ci95": [None if x is None else float(x) for x in sp_ci],
            "youden_j": se + sp - 1,
            "true_positive": tp,
            "false_negative": fn,
            "true_negative": tn,
            "false_positive": fp,
            "pairs": int(t["doc_id"].nunique()),
            "auc": self.info.get("auc"),
        }


def twin_groups(dataset) -> tuple[list[str], dict[str, list[tuple[int, bool]]]]:
    """Pair ids (``doc_id`` of human documents with at least one LLM copy) and, per pair, the
    positions of its copies with ``is_llm``."""
    from sourcebias.analysis.common import twin_pairs

    corpus, human = dataset.corpus, dataset.human_source
    groups: dict[str, list[tuple[int, bool]]] = {}
    for llm in dataset.other_sources:
        hp, lp, ids = twin_pairs(corpus, human, llm)
        for h, lpos, d in zip(hp.tolist(), lp.tolist(), ids):
            groups.setdefault(d, [(h, False)]).append((lpos, True))
    if not groups:
        raise ConfigError("the detector's dataset has no twin pairs (a human document with an LLM copy)")
    return sorted(groups), groups


def split_pairs(pair_ids: Sequence[str], *, calibration_share: float, max_pairs: int | None, seed: int) -> tuple[list[str], list[str]]:
    """``(train, calibration)`` pair ids: an optional seeded subsample of ``max_pairs``, split by
    pair with scikit-learn's ``train_test_split`` (``calibration_share`` of them held out)."""
    from sklearn.model_selection import train_test_split

    ids = list(pair_ids)
    if max_pairs is not None and max_pairs < len(ids):
        ids = sorted(seeded_sample(ids, max_pairs, seed))  # nested: a larger sample holds a smaller one
    if not 0 < calibration_share < 1:
        raise ConfigError(f"calibration_share must be in (0, 1), got {calibration_share}")
    if len(ids) < 4:
        raise ConfigError(f"{len(ids)} twin pairs: too few to train and calibrate a detector (at least 4)")
    train, calib = train_test_split(ids, test_size=calibration_share, random_state=seed, shuffle=True)
    return sorted(train), sorted(calib)


def choose_threshold(is_llm: np.ndarray, scores: np.ndarray, rule: str | float = YOUDEN) -> float:
    """The threshold (label LLM when score ≥ it): a number as given, or ``youden``: the ROC point
    of the calibration documents with the largest Se + Sp − 1 (``sklearn.metrics.roc_curve``)."""
    from sklearn.metrics import roc_curve

    if not isinstance(rule, str):
        return float(rule)
    if rule != YOUDEN:
        raise ConfigError(f"threshold must be a number or '{YOUDEN}', got '{rule}'")
    if is_llm.all() or not is_llm.any():
        raise ConfigError("the calibration documents are all of one kind; a threshold cannot be chosen")
    fpr, tpr, thr = roc_curve(is_llm, scores)
    best = int(np.argmax(tpr - fpr))
    return float(min(thr[best], np.max(scores)))  # roc_curve's first threshold is +inf


def calibration_table(doc_ids: Sequence[str], sources: Sequence[str], is_llm: np.ndarray, scores: np.ndarray, threshold: float):
    import pandas as pd

    return pd.DataFrame(
        {
            "doc_id": list(doc_ids),
            "source": list(sources),
            "is_llm": np.asarray(is_llm, bool),
            "score": np.asarray(scores, np.float64),
            "flagged": np.asarray(scores) >= threshold,
        }
    )


def _auc(is_llm: np.ndarray, scores: np.ndarray) -> float | None:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(is_llm, scores)) if 0 < is_llm.sum() < len(is_llm) else None


def _positions(groups: dict[str, list[tuple[int, bool]]], ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    rows = [(p, llm, d) for d in ids for p, llm in groups[d]]
    return np.array([r[0] for r in rows], dtype=np.int64), np.array([r[1] for r in rows], dtype=bool), [r[2] for r in rows]


def train_detector(
    dataset,
    spec: FeatureSpec,
    *,
    calibration_share: float = 0.5,
    max_pairs: int | None = None,
    threshold: str | float = YOUDEN,
    seed: int = 0,
    cache_dir: Any = None,
    batch_size: int | None = None,
    device: str | None = None,
    emit: Callable[[str], None] | None = None,
) -> CalibratedDetector:
    """The built-in detector, trained and calibrated on ``dataset``'s twin pairs (see the module
    docs); the LLM − human direction is estimated on the training pairs only."""
    say = emit or (lambda _m: None)
    ids, groups = twin_groups(dataset)
    train_ids, calib_ids = split_pairs(ids, calibration_share=calibration_share, max_pairs=max_pairs, seed=seed)
    corpus = dataset.corpus
    extractor = FeatureExtractor(spec, cache_dir=cache_dir, batch_size=batch_size, device=device)
    model, tr_pos = _fit_classifier(extractor, corpus, groups, train_ids, spec, say)
    cal_pos, cal_llm, cal_ids = _positions(groups, calib_ids)
    say("features of the calibration documents")
    cal_features = extractor.compute(corpus, cal_pos, reference=tr_pos)  # the training collection's scale
    cal_scores = model.predict_proba(_matrix(cal_features, spec))[:, 1]
    thr = choose_threshold(cal_llm, cal_scores, threshold)
    table = calibration_table(cal_ids, [corpus.source_of(int(p)) for p in cal_pos], cal_llm, cal_scores, thr)
    for name in spec.names:
        table[f"feature:{name}"] = cal_features[name]
    training = {
        "train_pairs": len(train_ids),
        "calibration_pairs": len(calib_ids),
        "calibration_share": calibration_share,
        "max_pairs": max_pairs,
        "seed": seed,
        "threshold_rule": threshold if isinstance(threshold, str) else "fixed",
        "auc": _auc(cal_llm, cal_scores),
    }
    info = _built_in_info(dataset, spec, training, extractor, model[-1])

    def features(target_corpus, positions: Sequence[int] | np.ndarray) -> dict[str, np.ndarray]:
        return extractor.compute(target_corpus, positions, seed=seed)

    def score(target_corpus, positions: Sequence[int] | np.ndarray) -> np.ndarray:
        return model.predict_proba(_matrix(features(target_corpus, positions), spec))[:, 1]

    return CalibratedDetector(
        score=score, threshold=thr, calibration_table=table, info=info, models=extractor.models(), features=features, calibration_corpus=corpus
    )


def _fit_classifier(
    extractor: FeatureExtractor, corpus, groups: dict[str, list[tuple[int, bool]]], train_ids: Sequence[str], spec: FeatureSpec, say
) -> tuple[Any, np.ndarray]:
    """Estimate the LLM − human direction on the training pairs, then fit the classifier on their
    documents' features; returns it and the training documents' positions (the features' scale)."""
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    tr_pos, tr_llm, tr_ids = _positions(groups, train_ids)
    human_of = {d: p for p, llm, d in zip(tr_pos, tr_llm, tr_ids) if not llm}
    llm_rows = [(p, human_of[d]) for p, llm, d in zip(tr_pos, tr_llm, tr_ids) if llm]
    say(f"direction from {len(train_ids):,} training pairs")
    extractor.fit_direction(corpus, [a for a, _ in llm_rows], [b for _, b in llm_rows])
    say("features of the training documents")
    x_tr = _matrix(extractor.compute(corpus, tr_pos, reference=tr_pos), spec)
    model = make_pipeline(SimpleImputer(strategy="median"), StandardScaler(), LogisticRegression(max_iter=1000))
    model.fit(x_tr, tr_llm)
    return model, tr_pos


def _built_in_info(dataset, spec: FeatureSpec, training: dict[str, Any], extractor: FeatureExtractor, lr: Any) -> dict[str, Any]:
    """What the built-in detector is: its dataset, features, training and calibration (``training``),
    direction, normalisation and the fitted logistic regression ``lr``."""
    return {
        "kind": "built-in",
        "dataset": dataset.describe().get("name") if hasattr(dataset, "describe") else None,
        **spec.describe(),
        **training,
        "direction": extractor.direction_summary,
        "normalization": extractor.reference_stats,
        "classifier": "sklearn LogisticRegression (lbfgs, C=1) after SimpleImputer(median) and StandardScaler",
        "coefficients": dict(zip(spec.names, map(float, lr.coef_[0]))),
        "intercept": float(lr.intercept_[0]),
    }


def _matrix(features: dict[str, np.ndarray], spec: FeatureSpec) -> np.ndarray:
    return np.column_stack([features[n] for n in spec.names])


def score_file_detector(
    scores: dict[tuple[str, str], float],
    calibration_dataset,
    calibration_scores: dict[tuple[str, str], float],
    *,
    threshold: str | float = YOUDEN,
    describe: dict[str, Any] | None = None,
) -> CalibratedDetector:
    """A detector from supplied scores: ``scores`` for the audited documents and
    ``calibration_scores`` for the twin pairs of ``calibration_dataset`` (every pair is a
    calibration pair: nothing is trained). Keys are ``(doc_id, source)``."""
    from sourcebias.audit.scores import require_scores

    ids, groups = twin_groups(calibration_dataset)
    pos, is_llm, pair_of = _positions(groups, ids)
    corpus = calibration_dataset.corpus
    keys = [(corpus.doc_ids[p], corpus.source_of(int(p))) for p in pos]
    cal_scores = require_scores(calibration_scores, keys, "the calibration dataset")
    thr = choose_threshold(is_llm, cal_scores, threshold)
    table = calibration_table(pair_of, [k[1] for k in keys], is_llm, cal_scores, thr)
    info = {
        "kind": "scores",
        **(describe or {}),
        "calibration_pairs": len(ids),
        "threshold_rule": threshold if isinstance(threshold, str) else "fixed",
        "auc": _auc(is_llm, cal_scores),
    }

    def score(target_corpus, positions: Sequence[int] | np.ndarray) -> np.ndarray:
        return require_scores(scores, [(target_corpus.doc_ids[p], target_corpus.source_of(int(p))) for p in positions], "the audited run")

    return CalibratedDetector(score=score, threshold=thr, calibration_table=table, info=info, calibration_corpus=corpus)
