"""An audit as an artifact, written to an output folder and loaded back into an equal
:class:`AuditResult` (:func:`load_audit`).

Folder contents::

    audit.json        settings (k, resamples, level, seed, transfer check level), the
                      detector (kind or spec, features, training, threshold and its rule, Se/Sp
                      with intervals, AUC), the audited runs, rows, notes, the CI method, the
                      transfer check (statistics, p-values, passed, reason), where Sp came
                      from (``in_domain``: the calibration twins, or a human reference set) and
                      whether the calibration twins come from the audited domain (``domain``)
    audit.csv         one row per run, measure (Share@k, ΔNDSR@k): naive, its CI, corrected, its
                      CI, flag (clipped / undefined) and note, reliable (calibrated on the
                      audited domain and the transfer check passed) and unreliable_reason, Se, Sp, undefined and clipped resamples,
                      and, where the corpus has source labels: true, errors, coverage
    calibration.csv   the detector's held-out calibration documents: doc_id, source, is_llm,
                      score, flagged
    documents.csv     the audited documents (every document in a top k): doc_id, source, score,
                      flagged
    summary.md, summary.tex
                      the printed tables (the one Report, :mod:`sourcebias.audit.report`)
    audit.png         naive vs corrected (vs true) with their intervals; corrected figures the
                      transfer check refuses are drawn hollow and marked UNRELIABLE
    manifest.json     kind ``audit``, inputs, parameters (seed, features, threshold), files
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sourcebias.core.artifacts import json_plain

FORMAT_VERSION = 1
ROW_COLUMNS = (
    "run",
    "measure",
    "quantity",
    "k",
    "queries",
    "naive",
    "naive_low",
    "naive_high",
    "corrected",
    "corrected_low",
    "corrected_high",
    "flag",
    "note",
    "reliable",
    "unreliable_reason",
    "precise",
    "imprecise_reason",
    "sensitivity",
    "specificity",
    "undefined_resamples",
    "clipped_resamples",
    "true",
    "naive_error",
    "corrected_error",
    "naive_covers",
    "corrected_covers",
)


@dataclass
class AuditResult:
    """Everything an audit computed (see the module docstring); ``calibration`` and
    ``documents`` are pandas DataFrames."""

    settings: dict[str, Any]
    detector: dict[str, Any]
    runs: dict[str, Any]
    rows: list[dict[str, Any]]
    calibration: Any
    documents: Any
    notes: list[str] = field(default_factory=list)
    method: dict[str, Any] = field(default_factory=dict)
    diagnostic: dict[str, Any] = field(default_factory=dict)
    in_domain: dict[str, Any] = field(default_factory=dict)
    domain: dict[str, Any] = field(default_factory=dict)  # were the calibration twins drawn from the audited domain (audit.calibrate.calibration_domain)

    @property
    def reliable(self) -> bool:
        """Whether the corrected figures stand: calibrated on the audited domain and the transfer
        check passed (each True for a folder written before it was recorded)."""
        return bool(self.diagnostic.get("passed", True)) and not (self.domain or {}).get("reason")

    def row(self, run: str, measure: str) -> dict[str, Any]:
        """The row of ``run`` and ``measure`` (e.g. ``Share@10``); ``KeyError`` when absent."""
        for r in self.rows:
            if r["run"] == run and r["measure"] == measure:
                return r
        raise KeyError((run, measure))

    @property
    def specificity(self) -> float:
        """The Sp the correction used: from the human reference set where one was given (as
        ``in_domain`` records), else the calibration twins' (the detector's)."""
        return float(self.in_domain.get("specificity", self.detector["specificity"]))

    @property
    def specificity_source(self) -> str:
        """Where :attr:`specificity` comes from (``calibration twins`` or ``human reference set``)."""
        return str(self.in_domain.get("specificity_from", "calibration twins"))

    @property
    def has_truth(self) -> bool:
        return any(r.get("true") is not None for r in self.rows)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AuditResult):
            return NotImplemented
        same = all(
            _plain(getattr(self, k)) == _plain(getattr(other, k))
            for k in ("settings", "detector", "runs", "rows", "notes", "method", "diagnostic", "in_domain", "domain")
        )
        return same and self.calibration.equals(other.calibration) and self.documents.equals(other.documents)

    def save(self, folder: str | Path) -> dict[str, Path]:
        """Write ``audit.json``, ``audit.csv``, ``calibration.csv`` and ``documents.csv``."""
        import pandas as pd

        from sourcebias.core.atomic import atomic_open, atomic_write_json

        folder = Path(folder)
        body = {
            "format": FORMAT_VERSION,
            "kind": "audit",
            **{k: _plain(getattr(self, k)) for k in ("settings", "detector", "runs", "rows", "notes", "method", "diagnostic", "in_domain", "domain")},
        }
        paths = {"audit": atomic_write_json(folder / "audit.json", body)}
        for name, frame in (("audit", pd.DataFrame(self.rows, columns=list(ROW_COLUMNS))), ("calibration", self.calibration), ("documents", self.documents)):
            with atomic_open(folder / f"{name}.csv", "w", newline="") as fh:
                frame.to_csv(fh, index=False, lineterminator="\n", float_format="%.17g")
            paths[f"{name}_csv"] = folder / f"{name}.csv"
        return paths

    @classmethod
    def load(cls, folder: str | Path) -> AuditResult:
        """Read a folder written by ``sourcebias audit`` (or :meth:`save`)."""
        import pandas as pd

        from sourcebias.core.artifacts import read_artifact_json

        folder = Path(folder)
        body = read_artifact_json(folder, "audit.json", kind="audit", version=FORMAT_VERSION, what="audit")
        dtypes = {"doc_id": str, "source": str}
        calibration = pd.read_csv(folder / "calibration.csv", dtype=dtypes, keep_default_na=False)
        documents = pd.read_csv(folder / "documents.csv", dtype=dtypes, keep_default_na=False)
        return cls(
            calibration=calibration,
            documents=documents,
            **{k: body[k] for k in ("settings", "detector", "runs", "rows", "notes", "method")},
            diagnostic=body.get("diagnostic", {}),
            in_domain=body.get("in_domain", {}),
            domain=body.get("domain", {}),
        )


def load_audit(folder: str | Path) -> AuditResult:
    """Load the output folder of ``sourcebias audit``."""
    return AuditResult.load(folder)


_plain = json_plain  # one JSON-safe conversion for every artifact (core.artifacts)
