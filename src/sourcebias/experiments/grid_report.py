"""The report of an experiment grid: the cells table as a :class:`~sourcebias.report.model.Report`
(rendered by :mod:`sourcebias.report.render`, like a single evaluation's), figures, and one
self-contained HTML file (figures embedded, no external CSS, JavaScript or fonts).

Layout of ``DIR/report/``::

    report.html        everything below in one file, for a browser or print
    cells.csv          the cells table (:mod:`sourcebias.experiments.aggregate`), every field
    tables.md, tables.tex   one table per dataset: retrievers x statistics, the papers' layout
    figures/accuracy_vs_bias.png   Cocktail's Figure 1: accuracy against Relative Δ per retriever
    figures/relative_delta_<dataset>.png   Relative Δ per retriever with its bootstrap CI
    seeds.csv, figures/seeds_<dataset>.png   with several ``seeds``: mean, SD, min, max across
                       seeds per cell (:func:`~sourcebias.experiments.aggregate.seed_summary`) and
                       each seed's Relative Δ beside its mean ± SD

With several seeds the cells tables have one row per seed (a ``seed`` column), and a table per
dataset gives each cell's mean ± sample SD [min, max] across seeds with the number of seeds
(:class:`SpreadColumn`: brackets only where the seeds' values differ, printed with enough decimals
to tell min from max); a cell with one finished seed shows its value and "1 seed", never an SD of
0. A spread of exactly 0 is printed as ``± 0``: for a deterministic retriever only tie-breaking
depends on the seed.

Stale cells (results of an earlier configuration) are listed apart and in no table or figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sourcebias.core.palette import HUMAN_COLOR, LLM_COLOR, UNDEFINED_COLOR
from sourcebias.evaluation.stats import SIGNIFICANCE, Column
from sourcebias.evaluation.stats.base import _number
from sourcebias.report.model import Report
from sourcebias.report.render import to_html, to_latex, to_markdown, to_rich
from sourcebias.report.tables import cells_report


def _mark(row: dict[str, Any]) -> str:
    p = row.get("p_adjusted")
    return "*" if isinstance(p, float) and not math.isnan(p) and p < SIGNIFICANCE else ""


def _color(v: float) -> str:
    return UNDEFINED_COLOR if not math.isfinite(v) else LLM_COLOR if v < 0 else HUMAN_COLOR


def _level(ok) -> str:
    levels = sorted({float(v) for v in ok["ci_level"] if isinstance(v, (int, float)) and math.isfinite(v)}) if len(ok) else []
    return ", ".join(f"{v:.0%}" for v in levels) or "no"


def _label(row: dict[str, Any], several: bool) -> str:
    name = f"{row['retriever']} / {row['llm_source']}" if several else str(row["retriever"])
    seed = row.get("seed")
    return f"{name} (seed {int(seed)})" if isinstance(seed, (int, float)) and math.isfinite(seed) else name


def fixed(v: float, digits: int) -> str:
    """``v`` with ``digits`` decimals; a value that rounds to zero prints as 0.0, never -0.0."""
    text = f"{v:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


@dataclass(frozen=True)
class SpreadColumn(Column):
    """A quantity across seeds in one cell, from the fields ``<key>_mean``, ``_sd``, ``_min``,
    ``_max`` of a :func:`seed_summary` row.

    * one seed: the value alone (no SD of 0 for a spread that was not measured);
    * every seed gave the same value (min = max): ``mean ± 0``, no brackets;
    * the seeds differ: ``mean ± SD [min, max]``, with as many decimals beyond the column's as it
      takes for min and max to print differently (``70.52 ± 0.02 [70.51, 70.54]``, not
      ``70.5 ± 0.0 [70.5, 70.5]``): the text never shows a spread that is not there, nor hides one.
    """

    def text(self, row: dict[str, Any]) -> str:
        q, n = self.key[: -len("_mean")], row.get("n_seeds", 0)
        mean = _number(row.get(self.key), self.kind, self.digits)
        if n < 2 or mean == "–":
            return mean
        scale = 100.0 if self.kind == "pct" else 1.0
        m, sd, lo, hi = (float(row[f"{q}_{s}"]) * scale for s in ("mean", "sd", "min", "max"))
        if not math.isfinite(sd):  # one seed with a defined value: no spread was measured
            return mean
        if lo == hi:
            return f"{fixed(m, self.digits)} ± 0"
        d = self.digits
        while fixed(lo, d) == fixed(hi, d) and d < 17:  # more decimals until min and max differ in print
            d += 1
        return f"{fixed(m, d)} ± {fixed(sd, d)} [{fixed(lo, d)}, {fixed(hi, d)}]"


def seed_columns(several_sources: bool) -> list[Column]:
    cols = [Column("retriever", "retriever", "text")] + ([Column("llm_source", "LLM source", "text")] if several_sources else [])
    return cols + [
        Column("n_text", "n", "text"),
        SpreadColumn("all_mean", "all", "pct"),
        SpreadColumn("rel_delta_mean", "Rel Δ", "delta", 1),
        SpreadColumn("delta_ndsr_mean", "ΔNDSR", "delta", 3),
        SpreadColumn("mean_abs_delta_ndsr_mean", "mean abs. ΔNDSR", "num", 3),
        SpreadColumn("twin_pref_rate_mean", "twin pref.", "pct"),
    ]


def seed_caption(cells, summary) -> str:
    """What the spread is, the seeds and their number, stated from the table itself."""
    seeds = sorted({int(s) for s in cells["seed"].dropna()}) if "seed" in cells else []
    k = ", ".join(str(int(v)) for v in sorted(set(cells.loc[cells["status"] == "ok", "delta_ndsr_k"].dropna()))) or "k"
    measure = summary["measure"].iloc[0] if len(summary) else "the primary measure"
    return (
        f"Across {len(seeds)} seeds ({', '.join(map(str, seeds))}): each cell is run once per seed (tie rule, randomization tests, bootstrap). "
        f"Cells show mean ± sample SD (n − 1) over the seeds that finished (n), then the minimum and maximum in brackets where the seeds' values differ, "
        f"with as many decimals as it takes to tell them apart; ± 0: every seed gave the same value; a cell with one seed shows its value alone. "
        f"all and twin pref. in percent, Rel Δ of {measure} in percent, ΔNDSR@{k} = mean over queries of NDSR_human − NDSR_LLM, "
        f"mean abs. ΔNDSR = mean over queries of |NDSR_human − NDSR_LLM| within a seed. "
        "For a deterministic retriever only tie-breaking depends on the seed, so a spread of 0 is a measured result. Per-seed values: the tables "
        "above; every field: seeds.csv."
    )


def _with_seeds(report: Report, cells) -> Report:
    """A report of a cells table of several seeds: a seed column in the per-seed tables, and per
    dataset a table of the mean and spread across seeds (data ``seeds`` for seeds.csv)."""
    from sourcebias.experiments.aggregate import seed_summary
    from sourcebias.report.model import Table

    summary = seed_summary(cells)
    report.data["seeds"] = summary
    n = int(cells["seed"].nunique())
    for t in report.tables:
        if t.key.startswith("dataset:"):
            t.columns.insert(1, Column("seed", "seed", "text"))
            t.caption = f"One row per (cell, seed), {n} seeds. " + t.caption.replace("across the grid's tests", "across the cells of its seed")
    several = summary["llm_source"].nunique() > 1 if len(summary) else False
    caption = seed_caption(cells, summary)
    for ds, part in summary.groupby("dataset", sort=False):
        rows = [{**r, "n_text": f"{r['n_seeds']} seed{'s' if r['n_seeds'] != 1 else ''}"} for r in part.to_dict("records")]
        report.tables.append(
            Table(f"seeds:{ds}", f"{ds} ({part['split'].iloc[0]}): mean and spread across seeds", seed_columns(several), rows, caption, status_rows=False)
        )
    return report


def grid_report(cells, title: str = "sourcebias grid") -> Report:
    """The report model of a cells table (tables only; :func:`write_grid_report` adds figures);
    with a ``seed`` column (several seeds), the tables across seeds too."""
    report = cells_report(cells, title)
    return _with_seeds(report, cells) if "seed" in cells else report


def markdown_tables(cells) -> str:
    return to_markdown(grid_report(cells))


def latex_tables(cells) -> str:
    return to_latex(grid_report(cells))


def grid_title(cfg: Any) -> str:
    """The title of a grid's report: in the terminal, ``tables.md``, ``tables.tex`` and the HTML page alike."""
    return f"sourcebias grid: {cfg.name}"


def rich_tables(cells, title: str = "sourcebias grid"):
    """The grid's tables for the terminal: the report ``tables.md`` holds (:func:`grid_report`)."""
    return to_rich(grid_report(cells, title))


# -- figures -----------------------------------------------------------------------------------
def figure_accuracy_vs_bias(cells, path: Path) -> Path:
    """Cocktail's Figure 1: accuracy (on all targets) against bias (Relative Δ), one labelled
    point per retriever and dataset, a line at Relative Δ = 0."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sourcebias.report.axes import value_limits

    ok = cells[cells["status"] == "ok"]
    several = ok["llm_source"].nunique() > 1
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
        colors = [_color(v) for v in x]
        ax.errorbar(x, y, xerr=[lo, hi], fmt="none", ecolor="#999999", elinewidth=1, capsize=2, zorder=1)
        ax.scatter(x, y, c=colors, marker=markers[i % len(markers)], s=46, zorder=2, edgecolors="black", linewidths=0.5, label=ds)
        points += _points(x, y, part, several)
    ax.axvline(0, color="black", lw=0.8, ls="--")
    ax.set_xlabel("Relative Δ (%): < 0 LLM text ranked higher, > 0 human text ranked higher")
    measure = ok["measure"].iloc[0] if len(ok) else "NDCG"
    ax.set_ylabel(f"{measure} on all targets (%)")
    ax.set_title("Accuracy against source bias (Cocktail, Fig. 1)")
    ymin, ymax = value_limits(ok["all"].astype(float) * 100)  # a least span: seeds' 70.51 and 70.54 are not drawn far apart
    ax.text(0.01, 0.98, "← prefers LLM-generated", transform=ax.transAxes, ha="left", va="top", fontsize=8, color=LLM_COLOR)
    ax.text(0.99, 0.98, "prefers human-written →", transform=ax.transAxes, ha="right", va="top", fontsize=8, color=HUMAN_COLOR)
    ax.set_ylim(ymin - (ymax - ymin) * 0.06, ymax + (ymax - ymin) * 0.10)
    # marker shapes tell the datasets apart; colours are the sign of Relative Δ
    handles = [plt.Line2D([], [], marker=markers[i % len(markers)], ls="", color="gray", markeredgecolor="black", label=ds) for i, ds in enumerate(datasets)]
    title = f"dataset (marker); colour: sign of Relative Δ (grey: undefined); error bars: {_level(ok)} bootstrap CI"
    if "seed" in ok:
        title += "\none point per seed; ×n: n seeds with the same accuracy and Relative Δ, drawn as one marker"
    fig.legend(handles=handles, loc="outside lower center", ncol=max(len(handles), 1), fontsize=8, title=title, title_fontsize=8, frameon=False)
    _place_labels(fig, ax, points)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _points(x, y, part, several: bool) -> list[tuple[float, float, str]]:
    """Labelled points of Figure 1. With several seeds each cell is labelled once ("bm25 (3
    seeds)", on its first seed's point), and seeds whose points coincide (the same accuracy and
    Relative Δ, as a deterministic retriever's often do) would hide each other: such a point is
    labelled with the count, "×3" (on the cell's label where it is the first point)."""
    out, first = [], set()
    counts = part.groupby(["retriever", "llm_source"], sort=False).size().to_dict() if "seed" in part else {}
    same: dict[tuple, int] = {}  # (cell, x, y) -> how many seeds share the point
    rows = [(float(xv), float(yv), r) for xv, yv, r in zip(x, y, part.to_dict("records")) if math.isfinite(xv) and math.isfinite(yv)]
    for xv, yv, r in rows:
        key = (r["retriever"], r["llm_source"], round(xv, 9), round(yv, 9))
        same[key] = same.get(key, 0) + 1
    for xv, yv, r in rows:
        if "seed" not in part:
            out.append((xv, yv, _label(r, several)))
            continue
        cell = (r["retriever"], r["llm_source"])
        shared = same.pop((*cell, round(xv, 9), round(yv, 9)), 0)  # popped: a shared point is labelled once
        times = f" ×{shared}" if shared > 1 else ""
        if cell not in first:
            first.add(cell)
            n = counts[cell]
            out.append((xv, yv, f"{_label({**r, 'seed': None}, several)} ({n} seed{'s' if n != 1 else ''}){times}"))
        elif times:
            out.append((xv, yv, times.strip()))
    return out


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
    markers = (
        [Bbox.from_bounds(px - marker_r, py - marker_r, 2 * marker_r, 2 * marker_r) for px, py in ax.transData.transform([(x, y) for x, y, _ in points])]
        if points
        else []
    )
    placed: list = []
    offsets = [
        (6, 3, "left", "bottom"),
        (6, -3, "left", "top"),
        (-6, 3, "right", "bottom"),
        (-6, -3, "right", "top"),
        (0, 7, "center", "bottom"),
        (0, -7, "center", "top"),
        (6, 12, "left", "bottom"),
        (6, -12, "left", "top"),
    ]

    def cost(box, own: int) -> float:
        inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
        hits = sum(box.overlaps(b) for b in placed) + sum(box.overlaps(m) for j, m in enumerate(markers) if j != own)
        return hits + (0 if inside else 10)

    for own, (x, y, name) in enumerate(points):
        best: tuple[float, Any, Any] | None = None
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
        if best is not None:  # (always: offsets is not empty)
            placed.append(best[2])


def figure_relative_delta(cells, dataset: str, path: Path) -> Path:
    """Relative Δ per retriever on one dataset, with its bootstrap CI; significant ones marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    part = cells[(cells["dataset"] == dataset) & (cells["status"] == "ok")]
    several = cells.loc[cells["status"] == "ok", "llm_source"].nunique() > 1
    names = [_label(r, several) for r in part.to_dict("records")]
    x = part["rel_delta"].astype(float).to_numpy()
    lo = x - part["rel_delta_ci_low"].astype(float).to_numpy()
    hi = part["rel_delta_ci_high"].astype(float).to_numpy() - x
    fig, ax = plt.subplots(figsize=(6.4, 0.5 + 0.55 * max(len(names), 1)), dpi=180, layout="constrained")
    y = np.arange(len(names))[::-1]
    ax.barh(y, np.nan_to_num(x), color=[_color(v) for v in x], height=0.6, xerr=[lo, hi], error_kw={"ecolor": "black", "capsize": 3, "lw": 1})
    ends = np.abs(np.concatenate([x - lo, x + hi, x]))
    ends = ends[np.isfinite(ends)]
    span = max(float(ends.max()) if len(ends) else 1.0, 1e-9)
    for yi, xi, r, l_, h_ in zip(y, x, part.to_dict("records"), x - lo, x + hi):
        end, ha = (h_ + 0.03 * span, "left") if xi >= 0 else (l_ - 0.03 * span, "right")
        if not math.isfinite(xi):
            ax.text(0.03 * span, yi, "undefined", ha="left", va="center", fontsize=7.5, color="#666666")
            continue
        ax.text(end, yi, f"{fixed(xi, 1)}{_mark(r)}", ha=ha, va="center", fontsize=7.5)
    ax.set_xlim(-1.25 * span, 1.25 * span)
    ax.set_yticks(y, names, fontsize=8)
    ax.axvline(0, color="black", lw=0.8)
    measure = part["measure"].iloc[0] if len(part) else "NDCG"
    ax.set_xlabel(f"Relative Δ of {measure} (%), {_level(part)} bootstrap CI")
    ax.set_title(f"{dataset}: < 0 LLM-generated ranked higher (* significant)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _coinciding(values) -> list[tuple[float, int]]:
    """``(value, how many)`` for each finite value that two or more of ``values`` share."""
    counts: dict[float, int] = {}
    for v in values:
        if math.isfinite(v):
            counts[round(float(v), 9)] = counts.get(round(float(v), 9), 0) + 1
    return [(v, n) for v, n in counts.items() if n > 1]


def figure_seeds(cells, dataset: str, path: Path) -> Path:
    """Relative Δ of each seed (dots) and its mean ± sample SD across seeds (bar), per retriever
    on one dataset; n seeds named on each row."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from sourcebias.experiments.aggregate import seed_summary

    part = cells[(cells["dataset"] == dataset) & (cells["status"] == "ok")]
    summary = seed_summary(part)
    several = summary["llm_source"].nunique() > 1
    fig, ax = plt.subplots(figsize=(6.4, 0.9 + 0.6 * max(len(summary), 1)), dpi=180, layout="constrained")
    names = []
    for i, r in enumerate(summary.to_dict("records")):
        y = len(summary) - 1 - i
        sel = part[(part["retriever"] == r["retriever"]) & (part["llm_source"] == r["llm_source"])]
        vals = sel["rel_delta"].astype(float).to_numpy()
        m, sd = r["rel_delta_mean"], r["rel_delta_sd"]
        ax.scatter(vals, np.full(len(vals), y + 0.12), s=22, color=[_color(v) for v in vals], edgecolors="black", linewidths=0.4, zorder=3)
        for v, times in _coinciding(vals):  # seeds with the same value would hide each other
            ax.annotate(f"×{times}", (v, y + 0.12), textcoords="offset points", xytext=(5, 3), ha="left", va="bottom", fontsize=7)
        if math.isfinite(m):
            ax.errorbar([m], [y - 0.12], xerr=[[sd if math.isfinite(sd) else 0.0]] * 2, fmt="D", color="black", ms=4, capsize=3, lw=1, zorder=2)
        spread = f"mean {fixed(m, 2)} ± {'0' if sd == 0 else fixed(sd, 2)}" if math.isfinite(sd) else (fixed(m, 2) if math.isfinite(m) else "undefined")
        names.append(f"{r['retriever']}{' / ' + str(r['llm_source']) if several else ''}\n{r['n_seeds']} seed{'s' if r['n_seeds'] != 1 else ''}: {spread}")
    ax.set_yticks(np.arange(len(summary))[::-1], names, fontsize=7.5)
    ax.axvline(0, color="black", lw=0.8, ls="--")
    measure = part["measure"].iloc[0] if len(part) else "NDCG"
    ax.set_xlabel(
        f"Relative Δ of {measure} (%)\ndots: each seed (×n: n seeds with the same value)\ndiamond and bar: mean ± sample SD across seeds", fontsize=8.5
    )
    ax.set_title(f"{dataset}: Relative Δ across seeds (< 0: LLM-generated ranked higher)", fontsize=9)
    lo, hi = ax.get_xlim()
    span = max(abs(lo), abs(hi), 1e-6)
    ax.set_xlim(-1.1 * span, 1.1 * span)
    ax.set_ylim(-0.6, len(summary) - 0.4)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


# -- the report folder -------------------------------------------------------------------------
def _timings_table(timings: dict[str, Any]):
    from sourcebias.evaluation.stats import Column
    from sourcebias.report.model import Table

    rows = [{"cell": k, "seconds": v.get("seconds"), "status": f"{v.get('status')}{' (reused)' if v.get('reused') else ''}"} for k, v in timings.items()]
    return Table(
        "timings",
        "Timings",
        [Column("cell", "cell", "text"), Column("seconds", "seconds", "num", 1), Column("status", "status", "text")],
        rows,
        status_rows=False,
    )


def _versions_table(versions: dict[str, str]):
    from sourcebias.evaluation.stats import Column
    from sourcebias.report.model import Table

    return Table(
        "versions",
        "Versions",
        [Column("package", "package", "text"), Column("version", "version", "text")],
        [{"package": k, "version": v} for k, v in versions.items()],
        status_rows=False,
    )


def write_grid_report(cells, cfg: Any, root: str | Path) -> dict[str, Path]:
    """Write ``root/report/``: cells.csv, tables, figures and report.html (replaced as a whole)."""
    import json
    import shutil

    from sourcebias.core.atomic import atomic_write_text
    from sourcebias.core.manifest import package_versions
    from sourcebias.report.render import to_csv

    root = Path(root)
    final = root / "report"
    tmp = root / ".report.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "figures").mkdir(parents=True)
    report = grid_report(cells, grid_title(cfg))
    to_csv(report, tmp)
    atomic_write_text(tmp / "tables.md", to_markdown(report))
    atomic_write_text(tmp / "tables.tex", to_latex(report))
    ok = cells["status"] == "ok"
    if ok.any():
        report.figures["Accuracy against bias (Cocktail, Figure 1)"] = figure_accuracy_vs_bias(cells, tmp / "figures" / "accuracy_vs_bias.png")
        for ds in dict.fromkeys(cells.loc[ok, "dataset"]):
            slug = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(ds))
            report.figures[f"Relative Δ per retriever: {ds}"] = figure_relative_delta(cells, ds, tmp / "figures" / f"relative_delta_{slug}.png")
            if "seed" in cells:
                report.figures[f"Relative Δ across seeds: {ds}"] = figure_seeds(cells, ds, tmp / "figures" / f"seeds_{slug}.png")
    report.sections.append(("Configuration", cfg.text))
    state = root / "grid.json"
    timings = json.loads(state.read_text(encoding="utf-8")).get("cells", {}) if state.is_file() else None
    if timings:
        report.sections.append(("Timings", _timings_table(timings)))
    report.sections.append(("Versions", _versions_table(package_versions())))
    atomic_write_text(tmp / "report.html", to_html(report))
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    return {"html": final / "report.html", "cells": final / "cells.csv", "markdown": final / "tables.md", "latex": final / "tables.tex", "folder": final}
