"""``sourcebias detect`` as a library call: claim the output folder, score the corpus's documents
with a zero-shot detector (resumable through the caches), write the folder."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.core.sampling import seeded_sample
from sourcebias.data.dataset import dataset_path
from sourcebias.detect.base import Detector
from sourcebias.detect.detectors import corpus_texts
from sourcebias.detect.result import KIND, DetectionResult


def sample_positions(dataset, *, max_pairs: int | None = None, seed: int = 0) -> np.ndarray:
    """Every document of the corpus, or with ``max_pairs`` both copies of a seeded sample of twin
    pairs (the rule of the audit's calibration sample: a larger sample holds a smaller one)."""
    corpus = dataset.corpus
    if max_pairs is None:
        return np.arange(len(corpus), dtype=np.int64)
    from sourcebias.analysis.common import twin_pairs

    human = dataset.human_source
    if human not in corpus.sources or len(corpus.sources) < 2:
        raise ConfigError("--max-pairs samples twin pairs: the corpus needs a human source and an LLM one")
    groups: dict[str, list[int]] = {}
    for llm in dataset.other_sources:
        hp, lp, ids = twin_pairs(corpus, human, llm)
        for h, lpos, d in zip(hp.tolist(), lp.tolist(), ids):
            groups.setdefault(d, [h]).append(lpos)
    chosen = seeded_sample(sorted(groups), max_pairs, seed)
    return np.array(sorted(p for d in chosen for p in groups[d]), dtype=np.int64)


def labelled_summary(dataset, positions: np.ndarray, scores: np.ndarray) -> dict[str, Any] | None:
    """AUROC of the scores against the corpus's source labels (every non-human source is LLM),
    overall and per LLM source (scikit-learn); None without labels."""
    from sklearn.metrics import roc_auc_score

    corpus, human = dataset.corpus, dataset.human_source
    if human not in corpus.sources or len(corpus.sources) < 2:
        return None
    sources = np.array([corpus.source_of(int(p)) for p in positions])
    ok = np.isfinite(scores)
    out: dict[str, Any] = {"note": "from the corpus's source labels, which no detector reads", "human_source": human}
    is_llm = sources != human
    if 0 < is_llm[ok].sum() < ok.sum():
        out["auroc"] = float(roc_auc_score(is_llm[ok], scores[ok]))
    out["per_source"] = {
        s: float(roc_auc_score(sources[ok & ((sources == s) | ~is_llm)] == s, scores[ok & ((sources == s) | ~is_llm)]))
        for s in dataset.other_sources
        if (ok & (sources == s)).any()
    }
    return out


def detect(dataset, detector: Detector, *, field: str = "text", max_pairs: int | None = None, seed: int = 0) -> DetectionResult:
    """Score the documents of ``dataset`` (all, or the copies of ``max_pairs`` seeded twin pairs).

    Args:
        dataset: a loaded dataset (its corpus is scored; its source labels only feed the AUROC
            of the summary).
        detector: a :class:`~sourcebias.detect.Detector` (:func:`~sourcebias.detect.build_detector`).
        field: ``text`` or ``title+text``.
        max_pairs: score both copies of this many seeded twin pairs only.
        seed: seed of the pair sample.

    Returns:
        The :class:`~sourcebias.detect.DetectionResult`.
    """
    import pandas as pd

    positions = sample_positions(dataset, max_pairs=max_pairs, seed=seed)
    corpus = dataset.corpus
    scores = np.asarray(detector.score_texts(corpus_texts(corpus, positions, field)), dtype=np.float64)
    frame = pd.DataFrame({"doc_id": [corpus.doc_ids[p] for p in positions], "source": [corpus.source_of(int(p)) for p in positions], "score": scores})
    nan = int((~np.isfinite(scores)).sum())
    summary: dict[str, Any] = {"documents": len(positions), "scored": int(len(positions) - nan), "not_scored": nan, "max_pairs": max_pairs, "seed": seed}
    if nan:
        summary["not_scored_note"] = (
            f"{nan:,} document(s) have no score (no token to score, or a rewrite the "
            "post-processing flagged: refused, empty, truncated); they are NaN in scores.tsv"
        )
    labelled = labelled_summary(dataset, positions, scores)
    if labelled:
        summary["labelled"] = labelled
    info = dataset.describe() if hasattr(dataset, "describe") else {}
    return DetectionResult(
        scores=frame,
        detector=detector.describe(),
        corpus={"name": info.get("name"), "path": info.get("path"), "field": field, "sources": list(corpus.sources)},
        summary=summary,
    )


def run_detect(
    dataset_arg: str | Path,
    spec: str,
    output: str | Path,
    *,
    field: str = "text",
    max_pairs: int | None = None,
    seed: int = 0,
    overwrite: bool = False,
    cache_dir: Any = None,
    device: str | None = None,
    batch_size: int | None = None,
    threads: int | None = None,
    emit: Callable[[str], None] | None = None,
) -> tuple[DetectionResult, Path]:
    """Score ``dataset_arg``'s corpus with the detector ``spec`` and write the folder ``output``.

    Args:
        dataset_arg: ``DIR`` or ``DIR,split``.
        spec: the detector (:func:`sourcebias.detect.build_detector`).
        output: the folder, claimed before any work.
        field, max_pairs, seed: as :func:`detect`.
        overwrite: replace an earlier result in ``output``.
        cache_dir, device, batch_size, threads: where model values and rewrites are cached, and
            how models run.
        emit: receives progress messages.

    Returns:
        ``(result, path)``.

    Raises:
        ConfigError: a bad spec or field; OutputError: a misused output folder.
    """
    from sourcebias.analysis.perplexity import check_field
    from sourcebias.core.artifacts import OutputFolder
    from sourcebias.core.manifest import build_manifest
    from sourcebias.data import load_dataset
    from sourcebias.detect.base import build_detector

    check_field(field)
    det = build_detector(spec, cache_dir=cache_dir, device=device, batch_size=batch_size, threads=threads)
    folder = OutputFolder.claim(output, kind=KIND, overwrite=overwrite)
    try:
        t0 = time.perf_counter()
        path, split = dataset_path(dataset_arg)
        dataset = load_dataset(path, split=split)
        (emit or (lambda _m: None))(f"scoring with {spec}")
        result = detect(dataset, det, field=field, max_pairs=max_pairs, seed=seed)
        result.save(folder.staging)
        manifest = build_manifest(
            command=KIND,
            inputs={"dataset": str(path.resolve()), "split": split},
            parameters={"detector": spec, "field": field, "max_pairs": max_pairs, "seed": seed},
            models=result.detector.get("models") or {},
            timings={"total_s": round(time.perf_counter() - t0, 3)},
        )
        return result, folder.commit(manifest)
    finally:
        folder.abort()
