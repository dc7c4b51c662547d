"""Zero-shot detectors of LLM text (``sourcebias detect``): Fast-DetectGPT's analytic criterion and
Binoculars from a causal LM's next-token distributions (:mod:`.criteria`), Raidar's rewrite
similarity through the generation backends (:mod:`.rewrites`), each a registered kind
(:mod:`.base`: :class:`DetectorKind`, :func:`register_detector`) built from a spec
(:func:`build_detector`); the scores of a corpus as an output folder (:mod:`.result`, :mod:`.run`).
The audit (:mod:`sourcebias.audit`) calibrates them and the simulation's detector filter uses them.
"""

from sourcebias.core.artifacts import register_loader
from sourcebias.core.moved import Replaced, moved
from sourcebias.detect.base import (
    Detector,
    DetectorKind,
    DetectorRequest,
    EngineKind,
    ZeroShotDetector,
    build_detector,
    detector_kinds,
    get_detector_kind,
    is_detector_spec,
    register_detector,
)
from sourcebias.detect.detectors import corpus_texts
from sourcebias.detect.job import dataset_path, detect, run_detect, sample_positions
from sourcebias.detect.result import DetectionResult, load_detection

register_loader("detect", "sourcebias.detect.result:DetectionResult.load")


#: deprecated names (core/moved.py): ``KINDS``, the names of the registered detector kinds
_MOVED = {"KINDS": Replaced("sourcebias.detect.detector_kinds()", lambda: tuple(detector_kinds()))}
__getattr__ = moved(__name__, _MOVED)


__all__ = [
    "DetectionResult",
    "Detector",
    "DetectorKind",
    "DetectorRequest",
    "EngineKind",
    "ZeroShotDetector",
    "build_detector",
    "corpus_texts",
    "dataset_path",
    "detect",
    "detector_kinds",
    "get_detector_kind",
    "is_detector_spec",
    "load_detection",
    "register_detector",
    "run_detect",
    "sample_positions",
]
