"""The output of ``sourcebias judge``, written to a folder and loaded back (:func:`load_judge`).

Folder contents::

    judge.json        the judge (spec, client identity), settings, prompts and parsing rules, the
                      dataset, and the analyses: twin bias (grade and expected grade), disclosure
                      effect, pairwise source preference and position effect, parse-failure
                      counts, agreement with the assessors (Cohen's κ), the grade distribution,
                      and with runs the protocol under each qrels (Relative Δ, ΔNDSR, Kendall's τ)
    grades.tsv        one row per graded (query, document, source[, disclosed label]): the grade
                      (NaN: unparseable), the expected grade and its note, the answer
    pairs.tsv         one row per pairwise question (both orders): the pick and the answer
    qrels/            the judge's qrels per source (``judge-<source>.tsv``) and the assessors'
                      on the judged queries (``assessors.tsv``), BEIR's ``query-id corpus-id score``
    dataset/          the dataset with those qrels as splits (corpus and queries copied,
                      gzip-compressed): ``sourcebias evaluate DIR/dataset --split judge-human`` evaluates
                      any retriever with the judge's judgements
    summary.md, summary.tex, judge.png
    manifest.json     kind ``judge``, inputs, parameters, models, timings, files
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sourcebias.core.artifacts import json_plain

FORMAT_VERSION = 1
KIND = "judge"


@dataclass
class JudgeResult:
    """A judge run: ``grades`` and ``pairs`` (pandas DataFrames) and the analyses (plain rows)."""

    judge: dict[str, Any]
    settings: dict[str, Any]
    dataset: dict[str, Any]
    analyses: dict[str, Any]
    grades: Any
    pairs: Any
    protocol: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.grades, self.pairs = _typed(self.grades), _typed(self.pairs)

    def rows(self, section: str) -> list[dict[str, Any]]:
        """The rows of one analysis (``twin_bias``, ``disclosure``, ``pairwise``, ``parse``, ``agreement``, ``grades``)."""
        return list(self.analyses.get(section, []))

    def twin_bias(self, llm_source: str | None = None, quantity: str = "grade") -> dict[str, Any]:
        """The twin-bias row of ``quantity`` (``grade`` or ``expected grade``) for an LLM source (the first by default)."""
        for r in self.rows("twin_bias"):
            if r["quantity"] == quantity and (llm_source is None or r["llm_source"] == llm_source):
                return r
        raise KeyError((llm_source, quantity))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JudgeResult):
            return NotImplemented
        keys = ("judge", "settings", "dataset", "analyses", "protocol", "notes")
        same = all(json_plain(getattr(self, k)) == json_plain(getattr(other, k)) for k in keys)
        return same and _frames_equal(self.grades, other.grades) and _frames_equal(self.pairs, other.pairs)

    def save(self, folder: str | Path) -> dict[str, Path]:
        """Write ``judge.json``, ``grades.tsv`` and ``pairs.tsv`` into ``folder``."""
        from sourcebias.core.atomic import atomic_write_json

        folder = Path(folder)
        body = {
            "format": FORMAT_VERSION,
            "kind": KIND,
            **{k: json_plain(getattr(self, k)) for k in ("judge", "settings", "dataset", "analyses", "protocol", "notes")},
        }
        out = {"judge": atomic_write_json(folder / "judge.json", body)}
        for name, frame in (("grades", self.grades), ("pairs", self.pairs)):
            out[name] = _write_tsv(frame, folder / f"{name}.tsv")
        return out

    @classmethod
    def load(cls, folder: str | Path) -> JudgeResult:
        """Read a folder written by ``sourcebias judge`` (or :meth:`save`)."""
        from sourcebias.core.artifacts import read_artifact_json

        folder = Path(folder)
        body = read_artifact_json(folder, "judge.json", kind=KIND, version=FORMAT_VERSION, what="judge run")
        return cls(
            judge=body["judge"],
            settings=body["settings"],
            dataset=body["dataset"],
            analyses=body["analyses"],
            grades=_read_tsv(folder / "grades.tsv"),
            pairs=_read_tsv(folder / "pairs.tsv"),
            protocol=body.get("protocol") or {},
            notes=list(body.get("notes") or []),
        )


_TEXT = ("mode", "query_id", "doc_id", "source", "label", "origin", "expected_note", "finish_reason", "answer", "llm_source", "order", "pick", "picked")


def _write_tsv(frame: Any, path: Path) -> Path:
    from sourcebias.core.atomic import atomic_open

    with atomic_open(path, "w", newline="") as fh:
        frame.to_csv(
            fh, sep="\t", index=False, lineterminator="\n", float_format="%.17g", na_rep="nan", escapechar="\\", quoting=2
        )  # 2: QUOTE_NONNUMERIC (answers hold tabs)
    return path


def _read_tsv(path: Path) -> Any:
    import pandas as pd

    frame = pd.read_csv(path, sep="\t", escapechar="\\", quoting=2, keep_default_na=False, na_values=["nan"], dtype=dict.fromkeys(_TEXT, str))
    for c in _TEXT:
        if c in frame:
            frame[c] = frame[c].fillna("").astype(str)
    return frame


def _typed(frame: Any) -> Any:
    """Text columns as strings and the others as floats, whether made or read back (an empty
    table reads back with no types to infer)."""
    frame = frame.copy()
    for c in frame.columns:
        frame[c] = frame[c].fillna("").astype(str) if c in _TEXT else frame[c].astype(float)
    return frame


def _frames_equal(a: Any, b: Any) -> bool:
    return bool(a.reset_index(drop=True).equals(b.reset_index(drop=True)))


def load_judge(folder: str | Path) -> JudgeResult:
    """Load the output folder of ``sourcebias judge``."""
    return JudgeResult.load(folder)
