"""Calibrating a zero-shot detector (:mod:`sourcebias.detect`) and adapting a calibration to the
audited documents.

**Zero-shot detectors** need no training: every sampled twin pair of the calibration dataset
(``max_pairs`` of them, seeded, the rule of ``sourcebias detect --max-pairs``, so the scores are
shared through the caches) is a calibration pair; the threshold and Se, Sp are taken there as for
the built-in detector (:mod:`sourcebias.audit.detector`).

**Adaptation** (``adapt``): how the calibration is carried to the audited documents.

* ``none``: as it is (Se and Sp of the calibration twins assumed to hold);
* ``shift``: mixture-proportion estimation on the audited documents themselves: the location
  shift δ of the score distribution and the share π are fitted jointly
  (:func:`sourcebias.audit.diagnostic.fit_shift`, the components' shapes anchored on the
  calibration twins) and the audited scores are moved by −δ before the threshold is applied.
  The bootstrap CIs treat δ as known (they resample queries and calibration pairs); the
  transfer check refits δ in each of its resamples.

Either way the transfer check (:func:`sourcebias.audit.diagnostic.transfer_check`) then tests
the audited scores against the calibration's mixture.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sourcebias.audit.detector import YOUDEN, CalibratedDetector, _auc, _positions, calibration_table, choose_threshold, twin_groups
from sourcebias.core.errors import ConfigError

ADAPTATIONS = ("none", "shift")


def sample_pair_ids(ids: Sequence[str], max_pairs: int | None, seed: int) -> list[str]:
    """A seeded sample of ``max_pairs`` pair ids (all when None), sorted; nested in ``max_pairs``."""
    ids = list(ids)
    if max_pairs is None or max_pairs >= len(ids):
        return ids
    rng = np.random.default_rng(seed)
    return sorted(ids[i] for i in rng.permutation(len(ids))[:max_pairs])


def zero_shot_detector(detector: Any, calibration_dataset: Any, *, max_pairs: int | None = None, threshold: str | float = YOUDEN, seed: int = 0, field: str = "text") -> CalibratedDetector:
    """A :class:`~sourcebias.detect.ZeroShotDetector` calibrated on the twin pairs of
    ``calibration_dataset``; documents it cannot score (NaN) are left out of the calibration and
    counted in ``info``."""
    from sourcebias.detect import corpus_texts

    ids, groups = twin_groups(calibration_dataset)
    chosen = sample_pair_ids(ids, max_pairs, seed)
    pos, is_llm, pair_of = _positions(groups, chosen)
    corpus = calibration_dataset.corpus
    scores = np.asarray(detector.score_texts(corpus_texts(corpus, pos, field)), dtype=np.float64)
    ok = np.isfinite(scores)
    if ok.sum() < 4:
        raise ConfigError(f"the detector scored {int(ok.sum())} of {len(scores)} calibration documents: too few to calibrate")
    pos, is_llm, scores, pair_of = pos[ok], is_llm[ok], scores[ok], [p for p, k in zip(pair_of, ok) if k]
    thr = choose_threshold(is_llm, scores, threshold)
    table = calibration_table(pair_of, [corpus.source_of(int(p)) for p in pos], is_llm, scores, thr)
    name = calibration_dataset.describe().get("name") if hasattr(calibration_dataset, "describe") else None
    info = {**detector.describe(), "kind": "zero-shot", "detector": detector.kind, "calibration_dataset": name, "calibration_pairs": int(len(set(pair_of))), "max_pairs": max_pairs, "seed": seed,
            "field": field, "not_scored_calibration_documents": int((~ok).sum()), "threshold_rule": threshold if isinstance(threshold, str) else "fixed", "auc": _auc(is_llm, scores)}  # fmt: skip

    def score(target_corpus, positions: Sequence[int]) -> np.ndarray:
        return np.asarray(detector.score_texts(corpus_texts(target_corpus, positions, field)), dtype=np.float64)

    return CalibratedDetector(score=score, threshold=thr, calibration_table=table, info=info, models={"detector": info.get("models")})


def calibration_scores(detector: CalibratedDetector) -> tuple[np.ndarray, np.ndarray]:
    """``(human, llm)`` scores of the calibration documents."""
    t = detector.calibration_table
    return t.loc[~t["is_llm"], "score"].to_numpy(np.float64), t.loc[t["is_llm"], "score"].to_numpy(np.float64)


def adapt_scores(scores: np.ndarray, detector: CalibratedDetector, adapt: str) -> tuple[np.ndarray, dict[str, Any]]:
    """The audited scores as the calibration sees them, and what was done (recorded)."""
    from sourcebias.audit.diagnostic import fit_shift

    if adapt not in ADAPTATIONS:
        raise ConfigError(f"adapt must be one of {', '.join(ADAPTATIONS)}, got '{adapt}'")
    if adapt == "none":
        return scores, {"adapt": "none", "note": "the calibration twins' Se and Sp are assumed to hold for the audited documents"}
    human, llm = calibration_scores(detector)
    finite = np.sort(scores[np.isfinite(scores)])
    shift, share, dist = fit_shift(finite, np.sort(human), np.sort(llm))
    info = {"adapt": "shift", "shift": shift, "fitted_share": share, "fit_ks": dist, "documents": int(len(finite)),
            "note": (f"scores of the audited documents moved by {-shift:+.4g}: the location shift of the calibration's human and LLM score distributions that, with a share of "
                     f"{share:.2f}, fits them best (KS {dist:.3f}); the bootstrap CIs treat the shift as known")}  # fmt: skip
    return scores - shift, info
