"""Source bias when the sources are unknown (``sourcebias audit``).

A detector of LLM text (the built-in one, :func:`train_detector`, trained on labelled twins; a
zero-shot one of :mod:`sourcebias.detect`, :func:`zero_shot_detector`; or scores the user
supplies, :func:`read_scores`, a ``sourcebias detect`` folder included) labels the documents a run
ranks high; its sensitivity and specificity, estimated on held-out labelled twin pairs (Sp from a
human reference set of the audited corpus where one is named), correct the run's Share@k and
ΔNDSR@k for misclassification (Rogan–Gladen), with bootstrap CIs that resample the run's queries
and the calibration jointly. The transfer check (:func:`transfer_check`) tests that the
calibration fits the audited documents and marks the corrected figures unreliable where it does
not. See :mod:`sourcebias.audit.correction`, :mod:`.detector`, :mod:`.calibrate`,
:mod:`.diagnostic`, :mod:`.analysis`, :mod:`.report`.
"""

from sourcebias.audit.analysis import AuditSettings, audit_run
from sourcebias.audit.calibrate import detection_detector, in_domain_calibration, zero_shot_detector
from sourcebias.audit.correction import Calibration, correct, joint_bootstrap, rogan_gladen
from sourcebias.audit.detector import CalibratedDetector, score_file_detector, train_detector
from sourcebias.audit.diagnostic import TransferCheck, transfer_check
from sourcebias.audit.features import FeatureSpec
from sourcebias.audit.job import AuditRuns, DetectorOptions, audit, build_detector, load_audited_runs, run_audit
from sourcebias.audit.report import audit_report
from sourcebias.audit.result import AuditResult, load_audit
from sourcebias.audit.scores import read_scores
from sourcebias.core.artifacts import register_loader

register_loader("audit", "sourcebias.audit.result:AuditResult.load")

__all__ = [
    "AuditResult",
    "AuditRuns",
    "AuditSettings",
    "CalibratedDetector",
    "Calibration",
    "DetectorOptions",
    "FeatureSpec",
    "TransferCheck",
    "audit",
    "audit_report",
    "audit_run",
    "build_detector",
    "correct",
    "detection_detector",
    "in_domain_calibration",
    "joint_bootstrap",
    "load_audit",
    "load_audited_runs",
    "read_scores",
    "rogan_gladen",
    "run_audit",
    "score_file_detector",
    "train_detector",
    "transfer_check",
    "zero_shot_detector",
]
