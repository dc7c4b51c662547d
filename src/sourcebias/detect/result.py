"""The output of ``sourcebias detect``, written to a folder and loaded back (:func:`load_detection`).

Folder contents::

    scores.tsv      doc_id, source, score: one row per scored document (the audit's score-file
                    format, so ``audit --scores`` reads the folder or the file); NaN where a
                    document could not be scored (no token; a rewrite the post-processing flagged)
    detect.json     the detector (spec, kind, what the score is, models, options), the corpus,
                    the field, counts, and — only where the corpus carries source labels — the
                    AUROC of the scores against them (a diagnostic; a detector never reads them)
    manifest.json   kind ``detect``, inputs, parameters, models, timings, files
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core.artifacts import json_plain

FORMAT_VERSION = 1
KIND = "detect"


@dataclass
class DetectionResult:
    """Scores of a corpus's documents by one detector (``scores``: a pandas DataFrame with
    ``doc_id``, ``source``, ``score``), what the detector is, the corpus and counts."""

    scores: Any
    detector: dict[str, Any]
    corpus: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)

    def score_map(self) -> dict[tuple[str, str], float]:
        """``(doc_id, source) -> score`` of every document with a finite score."""
        s = self.scores
        return {(d, src): float(v) for d, src, v in zip(s["doc_id"], s["source"], s["score"]) if np.isfinite(v)}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DetectionResult):
            return NotImplemented
        same = all(json_plain(getattr(self, k)) == json_plain(getattr(other, k)) for k in ("detector", "corpus", "summary"))
        return same and self.scores.reset_index(drop=True).equals(other.scores.reset_index(drop=True))

    def save(self, folder: str | Path) -> dict[str, Path]:
        """Write ``scores.tsv`` and ``detect.json``."""
        from sourcebias.core.atomic import atomic_open, atomic_write_json

        folder = Path(folder)
        body = {"format": FORMAT_VERSION, "kind": KIND, **{k: json_plain(getattr(self, k)) for k in ("detector", "corpus", "summary")}}
        out = {"detect": atomic_write_json(folder / "detect.json", body)}
        with atomic_open(folder / "scores.tsv", "w", newline="") as fh:
            self.scores.to_csv(fh, sep="\t", index=False, lineterminator="\n", float_format="%.17g", na_rep="nan")
        out["scores"] = folder / "scores.tsv"
        return out

    @classmethod
    def load(cls, folder: str | Path) -> DetectionResult:
        """Read a folder written by ``sourcebias detect`` (or :meth:`save`)."""
        import pandas as pd

        from sourcebias.core.artifacts import read_artifact_json

        folder = Path(folder)
        body = read_artifact_json(folder, "detect.json", kind=KIND, version=FORMAT_VERSION, what="detection")
        scores = pd.read_csv(
            folder / "scores.tsv", sep="\t", dtype={"doc_id": str, "source": str, "score": "float64"}, keep_default_na=False, na_values={"score": ["nan"]}
        )
        return cls(scores=scores, detector=body["detector"], corpus=body.get("corpus", {}), summary=body.get("summary", {}))


def load_detection(folder: str | Path) -> DetectionResult:
    """Load the output folder of ``sourcebias detect``."""
    return DetectionResult.load(folder)
