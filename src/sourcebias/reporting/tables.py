"""The papers' table: per retriever and measure, the mixed-corpus values per target (percent),
Relative Δ, and the sole-corpus values — for the terminal (rich), Markdown and LaTeX."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sourcebias.evaluation.results import ALL, MIXED, EvaluationResult, Key


@dataclass
class SummaryTable:
    """Header and rows of the summary; cells are numbers (percent) or None (not computed)."""

    columns: list[str]
    rows: list[list[object]]
    delta_columns: set[int]


def summary_table(result: EvaluationResult, short: bool = False) -> SummaryTable:
    """With ``short``, a single LLM source is headed "LLM" (the papers' wording)."""
    human = result.human_source
    others = result.other_sources
    mixed = result.has_mixed
    label = {s: s for s in result.sources}
    if short and len(others) == 1:
        label[others[0]] = "LLM"
    cols = ["retriever", "metric"]
    if mixed:
        cols += ["all"] + [label[s] for s in [human] + others]
        cols += ["Rel Δ" if len(others) == 1 else f"Rel Δ {o}" for o in others]
    cols += [f"{label[s]} only" for s in result.sources] if (mixed and _has_sole(result)) or not mixed else []
    delta_cols = {i for i, c in enumerate(cols) if c.startswith("Rel Δ")}
    rows: list[list[object]] = []
    for r in result.retrievers:
        for m in result.target_measures:
            row: list[object] = [r, str(m)]
            if mixed:
                row += [_pct(result, r, MIXED, t, m) for t in [ALL, human] + others]
                row += [_delta(result, r, m, o) for o in others]
            if (mixed and _has_sole(result)) or not mixed:
                row += [_pct(result, r, s, s, m) for s in result.sources]
            rows.append(row)
    return SummaryTable(cols, rows, delta_cols)


def _has_sole(result: EvaluationResult) -> bool:
    return any(k.setting != MIXED for k in result.per_query)


def _pct(result: EvaluationResult, r: str, corpus: str, target: str, m) -> float | None:
    key = Key(r, corpus, target, str(m))
    if key not in result.per_query:
        return None
    return result.mean(r, corpus, target, m) * 100.0


def _delta(result: EvaluationResult, r: str, m, other: str) -> float | None:
    if Key(r, MIXED, result.human_source, str(m)) not in result.per_query:
        return None
    return result.relative_delta(r, m, other)


def _cell(v: object) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.1f}"
    return str(v)


def rich_table(result: EvaluationResult, title: str | None = None):
    """A ``rich.table.Table``; Relative Δ is red when negative (LLM-generated ranked higher),
    green when positive (human-written ranked higher)."""
    from rich.table import Table

    t = summary_table(result, short=True)
    caption = "percent; Rel Δ > 0: human-written ranked higher, < 0: LLM-generated ranked higher"
    if len(result.other_sources) == 1:
        caption = f"LLM = {result.other_sources[0]}; " + caption
    table = Table(title=title, caption=caption)
    for i, c in enumerate(t.columns):
        table.add_column(c, justify="left" if i < 2 else "right", style="bold" if i in t.delta_columns else None)
    previous = None
    for row in t.rows:
        cells = []
        for i, v in enumerate(row):
            s = _cell(v)
            if i == 0 and v == previous:
                s = ""
            if i in t.delta_columns and isinstance(v, float) and not math.isnan(v):
                s = f"[red]{s}[/red]" if v < 0 else f"[green]{s}[/green]" if v > 0 else s
            cells.append(s)
        previous = row[0]
        table.add_row(*cells)
    return table


def markdown_table(result: EvaluationResult) -> str:
    t = summary_table(result)
    lines = ["| " + " | ".join(t.columns) + " |", "|" + "|".join("---" if i < 2 else "---:" for i in range(len(t.columns))) + "|"]
    for row in t.rows:
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


_LATEX = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "%": r"\%", "#": r"\#", "_": r"\_",
    "^": r"\textasciicircum{}", "~": r"\textasciitilde{}", ">": r"\textgreater{}", "<": r"\textless{}", "|": r"\textbar{}",
    "Δ": r"$\Delta$", "−": "--", "×": r"$\times$", "·": r"$\cdot$", "α": r"$\alpha$", "β": r"$\beta$",
}  # fmt: skip


def latex_escape(value: Any) -> str:
    """Text safe in a LaTeX table cell: special characters escaped (``>`` would print as ¡ in
    the default font encoding), the Greek letters and signs our names use in math mode."""
    return "".join(_LATEX.get(ch, ch) for ch in str(value))


def latex_table(result: EvaluationResult) -> str:
    """A ``tabular`` for papers (booktabs)."""
    t = summary_table(result)
    esc = latex_escape

    lines = [r"\begin{tabular}{ll" + "r" * (len(t.columns) - 2) + "}", r"\toprule", " & ".join(esc(c) for c in t.columns) + r" \\", r"\midrule"]
    for row in t.rows:
        lines.append(" & ".join(esc(_cell(v)) for v in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"
