"""A citation study as an artifact, written to an output folder and loaded back into an equal
:class:`CitationResult` (:func:`load_citations`).

Folder contents::

    citations.json   settings (k, orders, seed, generation parameters, the rule for answers that
                     cite nothing, level), the generator (identity, backend, cached/computed
                     calls), the run and dataset, the answers' status counts, the rate tables,
                     the effects (logit and twins), notes and the methods
    passages.csv     one row per (query, context order, passage): query_id, order, doc_id,
                     source, rank (retrieval), position (in the context), cited, status (of the
                     answer), used (entered the estimates)
    answers.csv      one row per generator call: query_id, order, status, citations (the cited
                     positions), out_of_range, echoed (repeats a passage header),
                     finish_reason, cached, text
    summary.md, summary.tex   the printed tables (the one Report, :mod:`.report`)
    citations.png    P(cited) by retrieval rank and by position in the context, per source
    manifest.json    kind ``cite``, inputs, parameters, the generator, files
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sourcebias.core.artifacts import json_plain

KIND = "cite"
FORMAT_VERSION = 1
_JSON_FIELDS = ("settings", "generator", "inputs", "counts", "rates", "effects", "notes", "method")
_TEXT_COLUMNS = {"query_id": str, "doc_id": str, "source": str, "status": str, "citations": str, "out_of_range": str, "text": str, "finish_reason": str}


@dataclass
class CitationResult:
    """Everything a citation study computed (see the module docstring); ``passages`` and
    ``answers`` are pandas DataFrames, ``rates`` maps a table name (``source``, ``source_rank``,
    ``source_position``) to its rows."""

    settings: dict[str, Any]
    generator: dict[str, Any]
    inputs: dict[str, Any]
    counts: dict[str, Any]
    rates: dict[str, list[dict[str, Any]]]
    effects: list[dict[str, Any]]
    passages: Any
    answers: Any
    notes: list[str] = field(default_factory=list)
    method: dict[str, Any] = field(default_factory=dict)

    @property
    def generator_name(self) -> str:
        """The generator's model name (from its identity), for titles."""
        g = self.generator
        return str(g.get("model") or (g.get("identity") or {}).get("model") or "the generator")

    def effect(self, estimator: str, term: str, level: Any) -> dict[str, Any]:
        """The effect row of ``estimator`` (``logit``, ``twins``), ``term`` (``source``, ``rank``,
        ``position``) and ``level`` (a source, a rank); ``KeyError`` when absent."""
        for r in self.effects:
            if (r["estimator"], r["term"], r["level"]) == (estimator, term, level):
                return r
        raise KeyError((estimator, term, level))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CitationResult):
            return NotImplemented
        same = all(json_plain(getattr(self, k)) == json_plain(getattr(other, k)) for k in _JSON_FIELDS)
        return same and self.passages.equals(other.passages) and self.answers.equals(other.answers)

    def save(self, folder: str | Path) -> dict[str, Path]:
        """Write ``citations.json``, ``passages.csv`` and ``answers.csv`` into ``folder``."""
        from sourcebias.core.atomic import atomic_open, atomic_write_json

        folder = Path(folder)
        body = {"format": FORMAT_VERSION, "kind": KIND, **{k: json_plain(getattr(self, k)) for k in _JSON_FIELDS}}
        paths = {"citations": atomic_write_json(folder / "citations.json", body)}
        for name, frame in (("passages", self.passages), ("answers", self.answers)):
            with atomic_open(folder / f"{name}.csv", "w", newline="") as fh:
                frame.to_csv(fh, index=False, lineterminator="\n")
            paths[name] = folder / f"{name}.csv"
        return paths

    @classmethod
    def load(cls, folder: str | Path) -> CitationResult:
        """Read a folder written by ``sourcebias cite`` (or :meth:`save`)."""
        import pandas as pd

        from sourcebias.core.artifacts import read_artifact_json

        folder = Path(folder)
        body = read_artifact_json(folder, "citations.json", kind=KIND, version=FORMAT_VERSION, what="citation study")
        frames = {name: pd.read_csv(folder / f"{name}.csv", dtype=_TEXT_COLUMNS, keep_default_na=False) for name in ("passages", "answers")}
        return cls(**{k: body[k] for k in _JSON_FIELDS}, **frames)


def load_citations(folder: str | Path) -> CitationResult:
    """Load the output folder of ``sourcebias cite``."""
    return CitationResult.load(folder)
