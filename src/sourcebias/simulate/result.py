"""A simulation's results: read from its round folders, shown as one :class:`Report`, loaded back.

``SimulationResult.load(DIR)`` reads every finished round of every loop (``metrics.json``) and
derives what needs several rounds (silenced human documents, change of NDCG since round 0).

Rows (``simulation.csv``, one per retriever and round): ``retriever, round, documents, written,
added, share_generated, ndsr_generated, share_round, ndcg, ndcg_change, silenced,
silenced_share, self_bleu, self_bleu_undefined, queries, seconds``; ``sources.csv``: Share@k and
NDSR@k of every source per retriever and round.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sourcebias.core.errors import OutputError

KIND = "simulate"
ROW_COLUMNS = (
    "retriever",
    "round",
    "documents",
    "written",
    "added",
    "share_generated",
    "ndsr_generated",
    "share_round",
    "ndcg",
    "ndcg_change",
    "silenced",
    "silenced_share",
    "self_bleu",
    "self_bleu_undefined",
    "queries",
    "seconds",
)


@dataclass
class SimulationResult:
    """Rows per retriever and round, per-source shares, settings and notes (module docstring)."""

    name: str
    settings: dict[str, Any]
    rows: list[dict[str, Any]]
    sources: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, folder: str | Path) -> SimulationResult:
        from sourcebias.simulate.loop import STATE_FILE

        folder = Path(folder)
        state_path = folder / STATE_FILE
        if not state_path.is_file():
            raise OutputError(f"{folder}: no {STATE_FILE}; not a sourcebias simulation folder")
        state = json.loads(state_path.read_text(encoding="utf-8"))
        rows, sources, notes = [], [], []
        for retriever in state.get("retrievers", []):
            metrics = _finished_rounds(folder / "loops" / retriever)
            if not metrics:
                continue
            r_rows, r_sources, r_notes = _loop_rows(retriever, metrics, state.get("settings", {}).get("k"))
            rows += r_rows
            sources += r_sources
            notes += r_notes
        return cls(state.get("name", folder.name), state.get("settings", {}), rows, sources, notes + list(state.get("notes", [])))

    def rounds(self, retriever: str) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["retriever"] == retriever]

    @property
    def retrievers(self) -> list[str]:
        return list(dict.fromkeys(r["retriever"] for r in self.rows))

    def report(self, figure: Path | None = None) -> Any:
        from sourcebias.simulate.report import simulation_report

        return simulation_report(self, figure)


def _finished_rounds(loop: Path) -> list[dict[str, Any]]:
    out = []
    r = 0
    while (loop / f"round-{r:03d}" / "manifest.json").is_file():
        out.append(json.loads((loop / f"round-{r:03d}" / "metrics.json").read_text(encoding="utf-8")))
        r += 1
    return out


def _loop_rows(retriever: str, metrics: list[dict[str, Any]], k: Any) -> tuple[list[dict], list[dict], list[str]]:
    from sourcebias.simulate.metrics import silenced_counts

    silenced = silenced_counts([m["top_human"] for m in metrics])
    base_ndcg = _num(metrics[0]["ndcg"])
    rows, sources, notes = [], [], []
    for m, s in zip(metrics, silenced):
        rnd = m["round"]
        rows.append(
            {
                "retriever": retriever,
                "round": rnd,
                "documents": m["documents"],
                "written": m["written"],
                "added": m["added"],
                "share_generated": _num(m["share_generated"]),
                "ndsr_generated": _num(m["ndsr_generated"]),
                "share_round": _num(m["share_by_source"].get(m["source"])) if m.get("source") else float("nan"),
                "ndcg": _num(m["ndcg"]),
                "ndcg_change": _num(m["ndcg"]) - base_ndcg,
                "silenced": s["silenced"],
                "silenced_share": s["silenced"] / s["baseline_human"] if s["baseline_human"] else float("nan"),
                "self_bleu": _num(m["self_bleu"]),
                "self_bleu_undefined": m["self_bleu_undefined"],
                "queries": m["queries"],
                "seconds": m.get("seconds"),
            }
        )
        for src, v in m["share_by_source"].items():
            sources.append({"retriever": retriever, "round": rnd, "source": src, "share": _num(v), "ndsr": _num(m["ndsr_by_source"].get(src))})
        not_added = {k2: v for k2, v in (m.get("statuses") or {}).items() if k2 != "ok"}
        if not_added:
            notes.append(
                f"{retriever}, round {rnd}: {m['written'] - m['added']} of {m['written']} written documents not added ("
                + ", ".join(f"{k2}: {v}" for k2, v in sorted(not_added.items()))
                + ")"
            )
        if m["self_bleu_undefined"]:
            notes.append(
                f"{retriever}, round {rnd}: self-BLEU@{k} undefined for {m['self_bleu_undefined']} of "
                f"{m['queries']} queries (fewer than two non-empty documents in the top k); left out of its mean"
            )
    return rows, sources, notes


def _num(v: Any) -> float:
    return float("nan") if v is None else float(v)
