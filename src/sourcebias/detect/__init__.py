"""Zero-shot detectors of LLM text (``sourcebias detect``): Fast-DetectGPT's analytic criterion and
Binoculars from a causal LM's next-token distributions (:mod:`.criteria`), Raidar's rewrite
similarity through the generation backends (:mod:`.rewrites`), built from a spec
(:mod:`.detectors`); the scores of a corpus as an output folder (:mod:`.result`, :mod:`.run`).
The audit (:mod:`sourcebias.audit`) calibrates them and the simulation's detector filter uses them.
"""

from sourcebias.core.artifacts import register_loader
from sourcebias.detect.detectors import KINDS, ZeroShotDetector, build_detector, corpus_texts, is_detector_spec
from sourcebias.detect.result import DetectionResult, load_detection
from sourcebias.detect.run import dataset_path, detect, run_detect, sample_positions

register_loader("detect", "sourcebias.detect.result:DetectionResult.load")

__all__ = [
    "KINDS",
    "DetectionResult",
    "ZeroShotDetector",
    "build_detector",
    "corpus_texts",
    "dataset_path",
    "detect",
    "is_detector_spec",
    "load_detection",
    "run_detect",
    "sample_positions",
]
