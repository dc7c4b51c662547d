"""The result of an analysis, as an artifact: tidy tables, a summary, figures, loadable back.

An ``analyze`` output folder holds::

    <table>.csv        tidy tables (e.g. quality.csv: one row per twin pair)
    summary.json       the key numbers (means, tests, p-values) and what produced them
    figures/*.png      figures, readable at paper size
    manifest.json      kind (analyze:<what>), inputs with checksums, parameters, models, versions

:meth:`AnalysisResult.load` (or :func:`sourcebias.load_artifact`) reads it back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1


@dataclass(eq=False)
class AnalysisResult:
    """Tables (pandas DataFrames), a JSON-able summary and figure files of one analysis."""

    analysis: str
    dataset: dict[str, Any]
    parameters: dict[str, Any] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    figures: dict[str, Path] = field(default_factory=dict)
    #: in-memory arrays for figures (null distributions, random-pair cosines); not saved
    arrays: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def kind(self) -> str:
        return f"analyze:{self.analysis}"

    def __repr__(self) -> str:
        tables = ", ".join(f"{k} ({len(v)} rows)" for k, v in self.tables.items())
        return (
            f"AnalysisResult({self.analysis} on {self.dataset.get('name', '?')}: {tables}; {len(self.figures)} figure{'s' if len(self.figures) != 1 else ''})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AnalysisResult):
            return NotImplemented
        if (self.analysis, self.parameters, self.models) != (other.analysis, other.parameters, other.models):
            return False
        if _canon(self.summary) != _canon(other.summary) or _canon(self.dataset) != _canon(other.dataset):
            return False
        if self.tables.keys() != other.tables.keys():
            return False
        for k, t in self.tables.items():
            o = other.tables[k]
            if list(t.columns) != list(o.columns) or len(t) != len(o):
                return False
            try:
                import pandas as pd

                pd.testing.assert_frame_equal(t.reset_index(drop=True), o.reset_index(drop=True), check_dtype=False, check_exact=True)
            except AssertionError:
                return False
        return sorted(self.figures) == sorted(other.figures)

    __hash__ = None  # type: ignore[assignment]  # unhashable (it defines __eq__); typeshed types object.__hash__ as a method

    # -- the artifact ------------------------------------------------------------------------
    def save(self, folder: str | Path) -> dict[str, Path]:
        """Write the tables and ``summary.json`` into ``folder`` (figures are drawn there by the
        analysis, see :meth:`draw`)."""
        from sourcebias.core.atomic import atomic_open, atomic_write_json

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths: dict[str, Path] = {}
        for name, table in self.tables.items():
            path = folder / f"{name}.csv"
            with atomic_open(path, "w", newline="") as fh:
                table.to_csv(fh, index=False, float_format=None, lineterminator="\n")
            paths[name] = path
        body = {
            "format": FORMAT_VERSION,
            "kind": self.kind,
            "analysis": self.analysis,
            "dataset": self.dataset,
            "parameters": self.parameters,
            "models": self.models,
            "tables": list(self.tables),
            "figures": {
                k: Path(v).relative_to(folder).as_posix() if Path(v).is_absolute() and Path(v).is_relative_to(folder) else str(v)
                for k, v in self.figures.items()
            },
            "summary": self.summary,
        }
        paths["summary"] = atomic_write_json(folder / "summary.json", body)
        return paths

    @classmethod
    def load(cls, folder: str | Path) -> AnalysisResult:
        import pandas as pd

        from sourcebias.core.errors import DataError

        folder = Path(folder)
        spath = folder / "summary.json"
        if not spath.is_file():
            raise DataError(spath, "missing: this output folder holds no analysis result")
        body = json.loads(spath.read_text(encoding="utf-8"))
        if body.get("format") != FORMAT_VERSION:
            raise DataError(spath, f"analysis format {body.get('format')!r} is not supported")
        tables = {}
        for name in body["tables"]:
            tables[name] = pd.read_csv(
                folder / f"{name}.csv", keep_default_na=False, na_values=["", "nan", "NaN"], dtype={"doc_id": str, "query_id": str, "source": str}
            )
        return cls(
            analysis=body["analysis"],
            dataset=body["dataset"],
            parameters=body["parameters"],
            models=body["models"],
            tables=tables,
            summary=body["summary"],
            figures={k: folder / v for k, v in body["figures"].items()},
        )


def _canon(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, default=str)
