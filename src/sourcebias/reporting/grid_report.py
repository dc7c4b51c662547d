"""The report of an experiment grid: aggregated tables (Markdown, LaTeX, terminal), figures, and
one self-contained HTML file (figures embedded, no external CSS, JavaScript or fonts).

Layout of ``DIR/report/``::

    report.html        everything below in one file, for a browser or print
    cells.csv          the cells table (:mod:`sourcebias.experiments.aggregate`)
    tables.md, tables.tex   datasets x retrievers, the papers' layout
    figures/accuracy_vs_bias.png   Cocktail's Figure 1: accuracy against Relative Δ per retriever
    figures/relative_delta_<dataset>.png   Relative Δ per retriever with its bootstrap CI
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import Any

from sourcebias.reporting.tables import latex_escape

SIGNIFICANCE = 0.05
HUMAN_COLOR = "#0072B2"  # Okabe-Ito blue (human text), as in the analysis figures
LLM_COLOR = "#D55E00"  # Okabe-Ito vermillion (LLM text)


def _pct(v: Any) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{float(v) * 100:.1f}"


def _num(v: Any, digits: int = 1) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{float(v):.{digits}f}"


def _mark(row: dict[str, Any]) -> str:
    p = row.get("p_adjusted")
    return "*" if isinstance(p, float) and not math.isnan(p) and p < SIGNIFICANCE else ""


def _caption(cells) -> str:
    ok = cells[cells["status"] == "ok"]
    measure = ok["measure"].iloc[0] if len(ok) else "NDCG"
    correction = ok["correction"].iloc[0] if len(ok) else "none"
    level = ok["ci_level"].iloc[0] if len(ok) else 0.95
    return (
        f"{measure} in percent on the mixed corpus: all targets, human target, LLM target; Relative Δ = (human − LLM) / mean × 100 "
        f"with its {float(level):.0%} bootstrap CI (queries resampled, BCa); > 0: human-written ranked higher, < 0: LLM-generated ranked higher. "
        f"* the human−LLM difference is significant at {SIGNIFICANCE} (paired randomization test, {correction}-corrected across the grid). "
        "Twin pref.: share of relevant pairs whose LLM copy is ranked above its original. ΔNDSR: label-free source preference (< 0: prefers LLM text)."
    )


def table_rows(cells) -> list[dict[str, Any]]:
    return cells.to_dict("records")


def markdown_tables(cells) -> str:
    lines = []
    for ds, part in cells.groupby("dataset", sort=False):
        lines += [f"**{ds}** ({part['split'].iloc[0]})", "", "| retriever | all | human | LLM | Rel Δ [CI] | twin pref. | ΔNDSR | human only | LLM only |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in table_rows(part):
            if r["status"] != "ok":
                lines.append(f"| {r['retriever']} | {r['status']}: {str(r['error'])[:60]} | | | | | | | |")
                continue
            lines.append(
                f"| {r['retriever']} | {_pct(r['all'])} | {_pct(r['human'])} | {_pct(r['llm'])} | {_num(r['rel_delta'])}{_mark(r)} [{_num(r['rel_delta_ci_low'])}, {_num(r['rel_delta_ci_high'])}] | "
                f"{_pct(r['twin_pref_rate'])} | {_num(r['delta_ndsr'], 3)} | {_pct(r['human_only'])} | {_pct(r['llm_only'])} |"
            )
        lines.append("")
    lines.append(_caption(cells))
    return "\n".join(lines) + "\n"


def latex_tables(cells) -> str:
    esc = latex_escape

    out = [r"\begin{table}[t]", r"\centering", r"\small", r"\begin{tabular}{llrrrrrr}", r"\toprule", r"dataset & retriever & all & human & LLM & Rel $\Delta$ & 95\% CI & twin pref. \\", r"\midrule"]
    first = True
    for ds, part in cells.groupby("dataset", sort=False):
        if not first:
            out.append(r"\midrule")
        first = False
        for i, r in enumerate(table_rows(part)):
            name = esc(ds) if i == 0 else ""
            if r["status"] != "ok":
                out.append(f"{name} & {esc(r['retriever'])} & \\multicolumn{{6}}{{l}}{{{esc(r['status'])}}} \\\\")
                continue
            delta = f"{_num(r['rel_delta'])}{'$^*$' if _mark(r) else ''}"
            color = "red" if (r["rel_delta"] or 0) < 0 else "teal"
            out.append(f"{name} & {esc(r['retriever'])} & {_pct(r['all'])} & {_pct(r['human'])} & {_pct(r['llm'])} & \\textcolor{{{color}}}{{{delta}}} & [{_num(r['rel_delta_ci_low'])}, {_num(r['rel_delta_ci_high'])}] & {_pct(r['twin_pref_rate'])} \\\\")
    out += [r"\bottomrule", r"\end{tabular}", r"\caption{" + esc(_caption(cells)) + "}", r"\end{table}", "% needs \\usepackage{booktabs,xcolor}"]
    return "\n".join(out) + "\n"


def rich_tables(cells):
    from rich.table import Table

    t = Table(title="Grid: source bias per dataset and retriever", caption=_caption(cells))
    for c in ("dataset", "retriever", "all", "human", "LLM", "Rel Δ [CI]", "twin pref.", "ΔNDSR"):
        t.add_column(c, justify="left" if c in ("dataset", "retriever") else "right")
    for r in table_rows(cells):
        if r["status"] != "ok":
            t.add_row(r["dataset"], r["retriever"], f"[red]{r['status']}[/red]", "", "", "", "", "")
            continue
        color = "red" if r["rel_delta"] < 0 else "green"
        t.add_row(r["dataset"], r["retriever"], _pct(r["all"]), _pct(r["human"]), _pct(r["llm"]), f"[{color}]{_num(r['rel_delta'])}{_mark(r)}[/] [{_num(r['rel_delta_ci_low'])}, {_num(r['rel_delta_ci_high'])}]", _pct(r["twin_pref_rate"]), _num(r["delta_ndsr"], 3))
    return t


# -- figures -----------------------------------------------------------------------------------
def figure_accuracy_vs_bias(cells, path: Path) -> Path:
    """Cocktail's Figure 1: accuracy (on all targets) against bias (Relative Δ), one labelled
    point per retriever and dataset, a line at Relative Δ = 0."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = cells[cells["status"] == "ok"]
    datasets = list(dict.fromkeys(ok["dataset"]))
    markers = ["o", "s", "^", "D", "v", "P"]
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=180, layout="constrained")
    points: list[tuple[float, float, str]] = []
    for i, ds in enumerate(datasets):
        part = ok[ok["dataset"] == ds]
        x = part["rel_delta"].astype(float).to_numpy()
        y = part["all"].astype(float).to_numpy() * 100
        lo = x - part["rel_delta_ci_low"].astype(float).to_numpy()
        hi = part["rel_delta_ci_high"].astype(float).to_numpy() - x
        colors = [LLM_COLOR if v < 0 else HUMAN_COLOR for v in x]
        ax.errorbar(x, y, xerr=[lo, hi], fmt="none", ecolor="#999999", elinewidth=1, capsize=2, zorder=1)
        ax.scatter(x, y, c=colors, marker=markers[i % len(markers)], s=46, zorder=2, edgecolors="black", linewidths=0.5, label=ds)
        points += [(float(xv), float(yv), str(name)) for xv, yv, name in zip(x, y, part["retriever"])]
    ax.axvline(0, color="black", lw=0.8, ls="--")
    ax.set_xlabel("Relative Δ (%): < 0 LLM text ranked higher, > 0 human text ranked higher")
    measure = ok["measure"].iloc[0] if len(ok) else "NDCG"
    ax.set_ylabel(f"{measure} on all targets (%)")
    ax.set_title("Accuracy against source bias (Cocktail, Fig. 1)")
    ymin, ymax = ax.get_ylim()
    ax.text(0.01, 0.98, "← prefers LLM-generated", transform=ax.transAxes, ha="left", va="top", fontsize=8, color=LLM_COLOR)
    ax.text(0.99, 0.98, "prefers human-written →", transform=ax.transAxes, ha="right", va="top", fontsize=8, color=HUMAN_COLOR)
    ax.set_ylim(ymin - (ymax - ymin) * 0.06, ymax + (ymax - ymin) * 0.10)
    # marker shapes tell the datasets apart; colours are the sign of Relative Δ
    handles = [plt.Line2D([], [], marker=markers[i % len(markers)], ls="", color="gray", markeredgecolor="black", label=ds) for i, ds in enumerate(datasets)]
    fig.legend(handles=handles, loc="outside lower center", ncol=max(len(handles), 1), fontsize=8, title="dataset (marker); colour: sign of Relative Δ; error bars: 95% CI", title_fontsize=8, frameon=False)
    _place_labels(fig, ax, points)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _place_labels(fig, ax, points: list[tuple[float, float, str]], fontsize: float = 7.5) -> None:
    """Label each point where its text overlaps no earlier label, no marker and no axes edge.

    Greedy over eight offsets around the point (first that fits wins; else the one overlapping
    least). Written here because matplotlib has no label placement of its own and adjustText, the
    usual add-on, moves labels iteratively and is not deterministic across versions.
    """
    from matplotlib.transforms import Bbox

    fig.canvas.draw()  # final layout, so that display coordinates hold
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    marker_r = 5.0 * fig.dpi / 72
    markers = [Bbox.from_bounds(px - marker_r, py - marker_r, 2 * marker_r, 2 * marker_r) for px, py in ax.transData.transform([(x, y) for x, y, _ in points])] if points else []
    placed: list = []
    offsets = [(6, 3, "left", "bottom"), (6, -3, "left", "top"), (-6, 3, "right", "bottom"), (-6, -3, "right", "top"), (0, 7, "center", "bottom"), (0, -7, "center", "top"), (6, 12, "left", "bottom"), (6, -12, "left", "top")]

    def cost(box, own: int) -> float:
        inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
        hits = sum(box.overlaps(b) for b in placed) + sum(box.overlaps(m) for j, m in enumerate(markers) if j != own)
        return hits + (0 if inside else 10)

    for own, (x, y, name) in enumerate(points):
        best = None
        for dx, dy, ha, va in offsets:
            t = ax.annotate(name, (x, y), textcoords="offset points", xytext=(dx, dy), ha=ha, va=va, fontsize=fontsize)
            box = t.get_window_extent(renderer).expanded(1.04, 1.1)
            c = cost(box, own)
            if best is None or c < best[0]:
                if best is not None:
                    best[1].remove()
                best = (c, t, box)
            else:
                t.remove()
            if c == 0:
                break
        placed.append(best[2])


def figure_relative_delta(cells, dataset: str, path: Path) -> Path:
    """Relative Δ per retriever on one dataset, with its bootstrap CI; significant ones marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    part = cells[(cells["dataset"] == dataset) & (cells["status"] == "ok")]
    names = list(part["retriever"])
    x = part["rel_delta"].astype(float).to_numpy()
    lo = x - part["rel_delta_ci_low"].astype(float).to_numpy()
    hi = part["rel_delta_ci_high"].astype(float).to_numpy() - x
    fig, ax = plt.subplots(figsize=(6.4, 0.5 + 0.55 * max(len(names), 1)), dpi=180, layout="constrained")
    y = np.arange(len(names))[::-1]
    ax.barh(y, x, color=[LLM_COLOR if v < 0 else HUMAN_COLOR for v in x], height=0.6, xerr=[lo, hi], error_kw={"ecolor": "black", "capsize": 3, "lw": 1})
    span = max(float(np.nanmax(np.abs(np.concatenate([x - lo, x + hi])))) if len(x) else 1.0, 1e-9)
    for yi, xi, r, l_, h_ in zip(y, x, part.to_dict("records"), x - lo, x + hi):
        end, ha = (h_ + 0.03 * span, "left") if xi >= 0 else (l_ - 0.03 * span, "right")
        ax.text(end, yi, f"{xi:.1f}{_mark(r)}", ha=ha, va="center", fontsize=7.5)
    ax.set_xlim(-1.25 * span, 1.25 * span)
    ax.set_yticks(y, names, fontsize=8)
    ax.axvline(0, color="black", lw=0.8)
    measure = part["measure"].iloc[0] if len(part) else "NDCG"
    ax.set_xlabel(f"Relative Δ of {measure} (%), 95% bootstrap CI")
    ax.set_title(f"{dataset}: < 0 LLM-generated ranked higher (* significant)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


# -- HTML --------------------------------------------------------------------------------------
_CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:2em auto;max-width:70em;color:#222;line-height:1.45}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:0.6em 0;font-size:0.92em}
th,td{border-bottom:1px solid #ddd;padding:0.25em 0.7em;text-align:right}
th:first-child,td:first-child,th:nth-child(2),td:nth-child(2){text-align:left}
thead th{border-bottom:2px solid #444}
td.neg{color:#b33c00;font-weight:600}td.pos{color:#005a8c;font-weight:600}
td.failed{color:#a00}
caption{caption-side:bottom;text-align:left;font-size:0.85em;color:#555;padding-top:0.4em;max-width:60em}
figure{margin:1em 0}img{max-width:min(100%,44em);height:auto}figcaption{font-size:0.85em;color:#555}
pre{background:#f6f6f6;padding:0.8em;overflow-x:auto;font-size:0.85em}
@media print{body{margin:0;max-width:none}h2{page-break-after:avoid}figure,table{page-break-inside:avoid}}
"""


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">'


def html_report(cells, *, title: str, config_text: str, versions: dict[str, str], figures: dict[str, Path], timings: dict[str, Any] | None = None) -> str:
    e = html.escape
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title><style>{_CSS}</style></head><body>", f"<h1>{e(title)}</h1>"]
    ok = cells[cells["status"] == "ok"]
    failed = cells[cells["status"] != "ok"]
    parts.append(f"<p>{len(ok)} results from {cells['dataset'].nunique()} datasets and {cells['retriever'].nunique()} retrievers; {len(failed)} cells without results.</p>")
    parts.append("<h2>Source bias per dataset and retriever</h2>")
    for ds, part in cells.groupby("dataset", sort=False):
        parts.append(f"<table><caption>{e(_caption(cells))}</caption><thead><tr><th>{e(ds)} ({e(str(part['split'].iloc[0]))})</th><th>retriever</th><th>all</th><th>human</th><th>LLM</th><th>Rel&nbsp;Δ</th><th>95% CI</th><th>p (adj.)</th><th>twin pref.</th><th>ΔNDSR</th><th>human only</th><th>LLM only</th></tr></thead><tbody>")
        for r in table_rows(part):
            if r["status"] != "ok":
                parts.append(f"<tr><td></td><td>{e(r['retriever'])}</td><td class='failed' colspan='10'>{e(r['status'])}: {e(str(r['error']))}</td></tr>")
                continue
            cls = "neg" if r["rel_delta"] < 0 else "pos"
            parts.append(
                f"<tr><td></td><td>{e(r['retriever'])}</td><td>{_pct(r['all'])}</td><td>{_pct(r['human'])}</td><td>{_pct(r['llm'])}</td>"
                f"<td class='{cls}'>{_num(r['rel_delta'])}{_mark(r)}</td><td>[{_num(r['rel_delta_ci_low'])}, {_num(r['rel_delta_ci_high'])}]</td>"
                f"<td>{_num(r['p_adjusted'], 3)}</td><td>{_pct(r['twin_pref_rate'])}</td><td>{_num(r['delta_ndsr'], 3)}</td><td>{_pct(r['human_only'])}</td><td>{_pct(r['llm_only'])}</td></tr>"
            )
        parts.append("</tbody></table>")
    parts.append("<h2>Figures</h2>")
    for name, path in figures.items():
        parts.append(f"<figure>{_img(path, name)}<figcaption>{e(name)}</figcaption></figure>")
    if len(failed):
        parts.append("<h2>Cells without results</h2><table><thead><tr><th>dataset</th><th>retriever</th><th>status</th><th>error</th></tr></thead><tbody>")
        for r in table_rows(failed):
            parts.append(f"<tr><td>{e(r['dataset'])}</td><td>{e(r['retriever'])}</td><td class='failed'>{e(r['status'])}</td><td style='text-align:left'>{e(str(r['error']))}</td></tr>")
        parts.append("</tbody></table>")
    parts.append(f"<h2>Configuration</h2><pre>{e(config_text)}</pre>")
    if timings:
        parts.append("<h2>Timings</h2><table><thead><tr><th>cell</th><th>seconds</th><th>status</th></tr></thead><tbody>" + "".join(f"<tr><td>{e(k)}</td><td>{_num(v.get('seconds'))}</td><td>{e(str(v.get('status')))}{' (reused)' if v.get('reused') else ''}</td></tr>" for k, v in timings.items()) + "</tbody></table>")
    parts.append("<h2>Versions</h2><table><tbody>" + "".join(f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>" for k, v in versions.items()) + "</tbody></table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_grid_report(cells, cfg: Any, root: str | Path) -> dict[str, Path]:
    """Write ``root/report/``: cells.csv, tables, figures and report.html (replaced as a whole)."""
    import json
    import shutil

    from sourcebias.core.atomic import atomic_write_text
    from sourcebias.core.manifest import package_versions

    root = Path(root)
    final = root / "report"
    tmp = root / ".report.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "figures").mkdir(parents=True)
    cells.to_csv(tmp / "cells.csv", index=False, lineterminator="\n")
    atomic_write_text(tmp / "tables.md", markdown_tables(cells))
    atomic_write_text(tmp / "tables.tex", latex_tables(cells))
    figures: dict[str, Path] = {}
    if (cells["status"] == "ok").any():
        figures["Accuracy against bias (Cocktail, Figure 1)"] = figure_accuracy_vs_bias(cells, tmp / "figures" / "accuracy_vs_bias.png")
        for ds in dict.fromkeys(cells.loc[cells["status"] == "ok", "dataset"]):
            slug = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(ds))
            figures[f"Relative Δ per retriever: {ds}"] = figure_relative_delta(cells, ds, tmp / "figures" / f"relative_delta_{slug}.png")
    state = root / "grid.json"
    timings = json.loads(state.read_text(encoding="utf-8")).get("cells", {}) if state.is_file() else None
    page = html_report(cells, title=f"sourcebias grid: {cfg.name}", config_text=cfg.text, versions=package_versions(), figures=figures, timings=timings)
    atomic_write_text(tmp / "report.html", page)
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    return {"html": final / "report.html", "cells": final / "cells.csv", "markdown": final / "tables.md", "latex": final / "tables.tex", "folder": final}
