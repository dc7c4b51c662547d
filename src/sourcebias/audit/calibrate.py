"""Calibrating a zero-shot detector (:mod:`sourcebias.detect`) and adapting a calibration to the
audited documents.

**Zero-shot detectors** need no training: every sampled twin pair of the calibration dataset
(``max_pairs`` of them, seeded, the rule of ``sourcebias detect --max-pairs``, so the scores are
shared through the caches) is a calibration pair; the threshold and Se, Sp are taken there as for
the built-in detector (:mod:`sourcebias.audit.detector`).

**In domain** (:func:`in_domain_calibration`): a *human reference set* — documents of the
audited corpus the user knows to be human (written before 2022, say) — gives the specificity on
the audited domain itself, and the human component of the transfer check; the sensitivity still
comes from the calibration's LLM documents. Without one, Se and Sp of the calibration are
assumed to hold, and the transfer check (:func:`sourcebias.audit.diagnostic.transfer_check`)
tests that assumption on the audited documents.

(Mixture-proportion estimation with a location shift fitted on the audited documents was tried
and left out: with these detectors a shift of both components and a change of share fit the
audited scores equally well, so the fit chose a confident wrong share — 0.04 for a true 0.50 on
nq-utd — and no check on the scores can tell.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sourcebias.audit.detector import YOUDEN, CalibratedDetector, _auc, _positions, calibration_table, choose_threshold, twin_groups
from sourcebias.core.errors import ConfigError
from sourcebias.core.sampling import seeded_sample


def sample_pair_ids(ids: Sequence[str], max_pairs: int | None, seed: int) -> list[str]:
    """A seeded sample of ``max_pairs`` pair ids (all when None), sorted; nested in ``max_pairs``."""
    if max_pairs is None or max_pairs >= len(ids):
        return list(ids)
    return sorted(seeded_sample(ids, max_pairs, seed))


def zero_shot_detector(
    detector: Any, calibration_dataset: Any, *, max_pairs: int | None = None, threshold: str | float = YOUDEN, seed: int = 0, field: str = "text"
) -> CalibratedDetector:
    """A zero-shot detector calibrated on the twin pairs of ``calibration_dataset``.

    Args:
        detector: a :class:`~sourcebias.detect.Detector`.
        calibration_dataset: a labelled twin dataset.
        max_pairs: a seeded sample of this many pairs (the rule of ``sourcebias detect --max-pairs``).
        threshold: ``youden`` or a number.
        seed: seed of the sample.
        field: ``text`` or ``title+text``.

    Returns:
        The :class:`~sourcebias.audit.CalibratedDetector`; documents it cannot score (NaN) are
        left out of the calibration and counted in ``info``.

    Raises:
        ConfigError: no twin pairs, or fewer than 4 scored calibration documents.
    """
    from sourcebias.detect import corpus_texts

    ids, groups = twin_groups(calibration_dataset)
    pos, is_llm, pair_of = _positions(groups, sample_pair_ids(ids, max_pairs, seed))
    scores = np.asarray(detector.score_texts(corpus_texts(calibration_dataset.corpus, pos, field)), dtype=np.float64)
    return _calibrated(
        detector, calibration_dataset, pos, is_llm, pair_of, scores, threshold=threshold, field=field, extra={"max_pairs": max_pairs, "seed": seed}
    )


def detection_detector(folder: Any, *, threshold: str | float = YOUDEN, cache_dir: Any = None) -> CalibratedDetector:
    """The detector of a ``sourcebias detect`` folder, calibrated on the folder's own scores.

    Args:
        folder: the output of ``sourcebias detect`` on a labelled twin corpus.
        threshold: ``youden`` or a number.
        cache_dir: cache of the detector's model values (new documents are scored by its spec).

    Returns:
        The :class:`~sourcebias.audit.CalibratedDetector` (every pair whose copies all have a score).

    Raises:
        ConfigError: fewer than 4 complete twin pairs in the folder.
    """
    from sourcebias.data import load_dataset
    from sourcebias.detect import build_detector, dataset_path, load_detection

    found = load_detection(folder)
    path, split = dataset_path(found.corpus.get("path") or "")
    dataset = load_dataset(path, split=split)
    scores, corpus = found.score_map(), dataset.corpus
    ids, groups = twin_groups(dataset)
    scored = [d for d in ids if all((corpus.doc_ids[p], corpus.source_of(int(p))) in scores for p, _ in groups[d])]
    if len(scored) < 4:
        raise ConfigError(
            f"{folder}: scores of {len(scored)} complete twin pairs; a detector is calibrated "
            "on a labelled twin corpus scored by `sourcebias detect` (at least 4 pairs)"
        )
    pos, is_llm, pair_of = _positions(groups, scored)
    cal = np.array([scores[(corpus.doc_ids[p], corpus.source_of(int(p)))] for p in pos], dtype=np.float64)
    det = build_detector(found.detector["spec"], cache_dir=cache_dir)
    return _calibrated(
        det, dataset, pos, is_llm, pair_of, cal, threshold=threshold, field=found.corpus.get("field") or "text", extra={"detect_folder": str(folder)}
    )


def _calibrated(
    detector: Any,
    dataset: Any,
    pos: np.ndarray,
    is_llm: np.ndarray,
    pair_of: list[str],
    scores: np.ndarray,
    *,
    threshold: str | float,
    field: str,
    extra: dict[str, Any],
) -> CalibratedDetector:
    from sourcebias.detect import corpus_texts

    ok = np.isfinite(scores)
    if ok.sum() < 4:
        raise ConfigError(f"the detector scored {int(ok.sum())} of {len(scores)} calibration documents: too few to calibrate")
    pos, is_llm, scores, pair_of = pos[ok], is_llm[ok], scores[ok], [p for p, k in zip(pair_of, ok) if k]
    thr = choose_threshold(is_llm, scores, threshold)
    table = calibration_table(pair_of, [dataset.corpus.source_of(int(p)) for p in pos], is_llm, scores, thr)
    name = dataset.describe().get("name") if hasattr(dataset, "describe") else None
    info = {
        **detector.describe(),
        "kind": "zero-shot",
        "detector": detector.kind,
        "calibration_dataset": name,
        "calibration_pairs": len(set(pair_of)),
        **extra,
        "field": field,
        "not_scored_calibration_documents": int((~ok).sum()),
        "threshold_rule": threshold if isinstance(threshold, str) else "fixed",
        "auc": _auc(is_llm, scores),
    }

    def score(target_corpus, positions: Sequence[int] | np.ndarray) -> np.ndarray:
        return np.asarray(detector.score_texts(corpus_texts(target_corpus, positions, field)), dtype=np.float64)

    return CalibratedDetector(
        score=score, threshold=thr, calibration_table=table, info=info, models={"detector": info.get("models")}, calibration_corpus=dataset.corpus
    )


def calibration_dimensions(detector: CalibratedDetector) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``(human, llm)``: per dimension (``score`` and each ``feature:NAME`` of the calibration
    table), the values of the calibration's human and LLM documents."""
    t = detector.calibration_table
    dims = ["score"] + [c for c in t.columns if c.startswith("feature:")]
    return ({d: t.loc[~t["is_llm"], d].to_numpy(np.float64) for d in dims}, {d: t.loc[t["is_llm"], d].to_numpy(np.float64) for d in dims})


def document_dimensions(detector: CalibratedDetector, corpus: Any, positions: Sequence[int] | np.ndarray, scores: np.ndarray) -> dict[str, np.ndarray]:
    """The same dimensions for documents of ``corpus`` (``scores`` already computed)."""
    out = {"score": np.asarray(scores, dtype=np.float64)}
    if detector.features is not None and any(c.startswith("feature:") for c in detector.calibration_table.columns):
        out |= {f"feature:{k}": np.asarray(v, dtype=np.float64) for k, v in detector.features(corpus, positions).items()}
    return out


def reference_positions(corpus: Any, keys: Sequence[tuple[str, str]], path: Any) -> np.ndarray:
    """Corpus positions of the human reference set's documents ``(doc_id, source)``; a clear
    error naming how many (and which) are not in the audited corpus."""
    pos = [corpus.position(d, s) for d, s in keys]
    missing = [k for k, p in zip(keys, pos) if p is None]
    if missing:
        shown = ", ".join(f"({d}, {s})" for d, s in missing[:3])
        raise ConfigError(f"{path}: {len(missing):,} document(s) of the human reference set are not in the audited corpus, e.g. {shown}")
    if len(pos) < 5:
        raise ConfigError(f"{path}: {len(pos)} documents in the human reference set; at least 5 are needed to estimate Sp")
    return np.array(pos, dtype=np.int64)


def in_domain_calibration(
    detector: CalibratedDetector, corpus: Any, reference: Sequence[tuple[str, str]] | None, path: Any = None
) -> tuple[Any, dict[str, np.ndarray], dict[str, np.ndarray], dict[str, Any]]:
    """What the correction and the transfer check calibrate with.

    Args:
        detector: the calibrated detector.
        corpus: the audited corpus.
        reference: documents ``(doc_id, source)`` of the audited corpus known to be human (e.g.
            written before 2022), or None.
        path: where the reference set was read (for messages).

    Returns:
        ``(calibration, human, llm, info)``: the Se/Sp data of the correction (with a reference
        set, Sp from it, in domain; Se from the calibration), the human and LLM dimensions of the
        transfer check, and what was used (recorded).

    Raises:
        ConfigError: reference documents missing from the corpus, fewer than 5, or unscored.
    """
    from dataclasses import replace

    human, llm = calibration_dimensions(detector)
    cal = detector.calibration()
    if not reference:
        return (
            cal,
            human,
            llm,
            {"specificity_from": "calibration twins", "note": "Se and Sp of the calibration documents are assumed to hold for the audited documents"},
        )
    pos = reference_positions(corpus, reference, path)
    scores = np.asarray(detector.score(corpus, pos), dtype=np.float64)
    if not np.isfinite(scores).all():
        raise ConfigError(f"the detector gave no score to {int((~np.isfinite(scores)).sum())} document(s) of the human reference set")
    flagged = (scores >= detector.threshold).astype(np.float64)
    ref_dims = document_dimensions(detector, corpus, pos, scores)
    sp = 1.0 - float(flagged.mean())
    info = {
        "specificity_from": "human reference set",
        "reference": None if path is None else str(path),
        "reference_documents": len(pos),
        "specificity": sp,
        "note": f"Sp = {sp:.3f} from {len(pos):,} documents of the audited corpus named as human (in domain); Se from the calibration twins",
    }
    return replace(cal, reference_flagged=flagged), ref_dims, llm, info


DOMAINS = ("auto", "audited", "other")
#: the share of the calibration's human documents found in the audited corpus that makes a calibration "in domain"
IN_DOMAIN_SHARE = 0.5


def calibration_domain(detector: CalibratedDetector, corpus: Any, asserted: str = "auto") -> dict[str, Any]:
    """Were Se and Sp estimated on the audited domain?

    The joint bootstrap carries the calibration's sampling noise into the corrected intervals, not
    a change of domain: a detector's error rates on another corpus's twins can differ on the
    audited documents (nq-utd audited with nfcorpus' calibration: a corrected ΔNDSR@10 of −0.79
    [−1.00, −0.04] against a true +0.02), and the transfer check cannot see every such change (a
    shift of both score components looks like a change of share). So a corrected figure is offered
    as an estimate only when the calibration twins come from the audited corpus.

    ``auto`` decides from the documents: the calibration is in domain when at least half of its
    human documents are documents of the audited corpus (same id, and the same text where both
    corpora hold texts); ``audited`` and ``other`` are the user's word (e.g. twins written for a
    sample of the audited domain that is not in the audited corpus itself).

    Returns:
        ``{"domain": "audited" | "other" | "unknown", "how", "matched", "calibration_human", "reason"}``;
        ``reason`` (why the corrected figures are unreliable) is empty for ``audited``.

    Raises:
        ConfigError: ``asserted`` is not one of :data:`DOMAINS`.
    """
    if asserted not in DOMAINS:
        raise ConfigError(f"--calibration-domain must be one of {', '.join(DOMAINS)}, got '{asserted}'")
    table = detector.calibration_table
    humans = table.loc[~table["is_llm"], ["doc_id", "source"]].drop_duplicates()
    name = detector.info.get("calibration_dataset") or detector.info.get("dataset") or "the calibration dataset"
    out: dict[str, Any] = {"calibration_human": len(humans), "matched": None, "calibration_dataset": name}
    if asserted != "auto":
        out |= {"domain": asserted, "how": "the user's word (--calibration-domain)"}
    elif detector.calibration_corpus is None:
        out |= {"domain": "unknown", "how": "the detector does not carry the corpus it was calibrated on"}
    else:
        matched = _documents_in(detector.calibration_corpus, humans, corpus)
        how = f"{matched:,} of the calibration's {len(humans):,} human documents are documents of the audited corpus"
        out |= {"matched": matched, "domain": "audited" if matched >= IN_DOMAIN_SHARE * len(humans) else "other", "how": how}
    out["reason"] = "" if out["domain"] == "audited" else _domain_reason(out, name)
    return out


def _documents_in(calibration_corpus: Any, keys: Any, corpus: Any) -> int:
    """How many calibration documents ``keys`` (doc_id, source) are documents of ``corpus``:
    the same id under any of its sources, with the same text where both corpora hold texts."""
    texts = calibration_corpus.has_texts and corpus.has_texts
    found = 0
    for doc_id, source in keys.itertuples(index=False):
        mine = calibration_corpus.position(doc_id, source)
        for s in corpus.sources:
            p = corpus.position(doc_id, s)
            if p is not None and (not texts or mine is None or corpus.texts[p] == calibration_corpus.texts[mine]):
                found += 1
                break
    return found


def _domain_reason(domain: dict[str, Any], name: str) -> str:
    what = {
        "other": f"calibrated on another domain ({name}: {domain['how']})",
        "unknown": f"the calibration's domain is not known ({domain['how']})",
    }.get(domain["domain"], f"calibrated on another domain ({name}, {domain['how']})")
    advice = (
        "calibrate on twins of documents of the audited corpus (sourcebias generate), "
        "or say --calibration-domain audited where the calibration twins come from it"
    )
    return (
        f"{what}: the interval carries the sampling noise of Se and Sp, not a change of "
        f"domain, which can move them far (and which the transfer check can miss); {advice}"
    )
