"""Interventions between rounds of a simulated loop.

* ``fair``: every ranking readers see is re-ordered for exposure parity of two groups, human text
  and generated text (all rounds' sources together), over the top k, with the deficit-greedy
  interleaving of :func:`sourcebias.mitigation.fair.interleave` (the ``fair:`` stage's rule; the
  stage itself would treat every round's source as a group of its own).
* ``detector``: the audit's built-in detector (:mod:`sourcebias.audit`), trained and calibrated
  on labelled twins named in the configuration — or the zero-shot detector of a ``sourcebias
  detect`` folder, calibrated on that folder's scores — scores each new document; one it flags as LLM
  (score ≥ its calibrated threshold) is recorded but not added to the corpus. Its calibration
  (Se, Sp) is written to the simulation's state so the report can say how good the filter is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.retrieval.run import Run


def fair_view(run: Run, cfg: Any, human_source: str) -> Run:
    """``run`` with each query's top ``depth`` re-ordered for human/generated exposure parity in the top k."""
    from sourcebias.mitigation.fair import interleave

    corpus = run.corpus
    human = np.asarray(corpus.source_codes) == corpus.sources.index(human_source) if human_source in corpus.sources else np.zeros(len(corpus), dtype=bool)
    group = np.where(human, 0, 1)
    positions, scores = {}, {}
    for q, pos in run.positions.items():
        top = np.asarray(pos, dtype=np.int64)  # already in the tie rule's order
        order, _ = interleave(group[top], cfg.k, cfg.intervention.fair_target)
        positions[q] = top[order]
        scores[q] = np.arange(len(top), 0, -1, dtype=np.float64)
    info = dict(run.info)
    info["intervention"] = {"kind": "fair", "groups": ["human", "generated"], "k": cfg.k, "target": cfg.intervention.fair_target}
    return Run(corpus, run.name, positions, scores, info)


def build_detector(cfg: Any) -> Any:
    """The calibrated detector of ``[intervention]`` (trained once per simulation)."""
    from sourcebias.audit.features import FeatureSpec
    from sourcebias.audit.job import DetectorOptions
    from sourcebias.audit.job import build_detector as build

    iv = cfg.intervention
    if (Path(iv.detector) / "detect.json").is_file():  # a `sourcebias detect` folder: its zero-shot detector, calibrated on its scores
        from sourcebias.audit.calibrate import detection_detector

        return detection_detector(iv.detector, threshold=iv.threshold, cache_dir=cfg.cache_dir)
    options = DetectorOptions(train=iv.detector, spec=FeatureSpec(model=iv.detector_model), max_pairs=iv.max_pairs, threshold=iv.threshold, seed=cfg.seed)
    return build(options, cache_dir=cfg.cache_dir)


def filter_by_detector(records: list[dict[str, Any]], corpus: Any, source: str, detector: Any) -> None:
    """Score the round's documents that would be added; flagged ones are marked not added."""
    from sourcebias.data.corpus import Corpus, Document

    cand = [r for r in records if r["metadata"]["added"]]
    if not cand:
        return
    new = Corpus.from_documents([Document(r["_id"], source, r.get("title", ""), r["text"]) for r in cand])
    both = Corpus.concat([corpus, new])
    scores = detector.score(both, list(range(len(corpus), len(both))))
    for r, s in zip(cand, scores.tolist()):
        r["metadata"]["detector_score"] = float(s)
        r["metadata"]["added"] = bool(s < detector.threshold)
