"""The judge figure: how often each source's copies got each grade (unparseable answers counted
beside them), every effect with its CI, and, with runs, Relative Δ under each qrels."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any

from sourcebias.judges.result import JudgeResult

GRADE_COLORS = ("#d9d9d9", "#9ecae1", "#4292c6", "#08519c")


def wrapped(name: str, width: int) -> str:
    """``name`` whole, broken over lines of about ``width`` characters (after a hyphen where it
    can). A label never cuts a source short: "llama-2-7b-chat-tmp0.2" cut to 20 characters read
    as another source ("tmp0"), and two sources that shared their first 12 became one column."""
    return textwrap.fill(name, width, break_on_hyphens=True, break_long_words=True) or name


def plot_judge(result: JudgeResult, path: str | Path) -> Path:
    """Draw the figure into ``path`` (PNG) and return it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = 3 if result.protocol else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.4 * panels, 5.0), squeeze=False)
    _grades(axes[0][0], result)
    _effects(axes[0][1], result)
    if result.protocol:
        _protocol(axes[0][2], result)
    ident = result.judge.get("identity", {})
    bars = f"{result.settings.get('confidence', 0.95):.0%} CIs clustered by query (effects: CR1 t; Relative Δ: bootstrap over queries)"
    # two lines: the judge, then what the bars are (one line was cut at both edges of a two-panel figure)
    fig.suptitle(f"LLM judge {ident.get('model', '?')} on {result.dataset.get('name')} ({result.dataset.get('queries')} queries)\nbars: {bars}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _grades(ax: Any, result: JudgeResult) -> None:
    g = result.grades[result.grades["mode"] == "grade"]
    sources = list(result.dataset.get("sources", []))
    bottom = [0.0] * len(sources)
    for k in range(4):
        share = [float(((g["source"] == s) & (g["grade"] == k)).sum()) / max(1, int(((g["source"] == s) & g["grade"].notna()).sum())) for s in sources]
        ax.bar(range(len(sources)), share, bottom=bottom, color=GRADE_COLORS[k], label=f"grade {k}")
        bottom = [b + v for b, v in zip(bottom, share)]
    bad = [int(((g["source"] == s) & g["grade"].isna()).sum()) for s in sources]
    ax.set_xticks(range(len(sources)), [f"{wrapped(s, 24)}\n{b:,} unparseable" for s, b in zip(sources, bad)], fontsize=8)
    ax.set_ylim(0, 1.0)
    ax.set_ylabel("share of parsed answers")
    ax.set_title("Grades given, per source of the passage", fontsize=10)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=4, frameon=False)


def _effects(ax: Any, result: JudgeResult) -> None:
    rows = [r for sec in ("twin_bias", "pairwise", "disclosure") for r in result.rows(sec)]
    labels = []
    for i, r in enumerate(rows):
        v, lo, hi = r["estimate"], r["low"], r["high"]
        labels.append(f"{r['quantity']}\n({wrapped(r['llm_source'], 34)}; {r['missing']:,} left out)")
        if v is None or not math.isfinite(v):
            ax.annotate("undefined", (0, i), ha="center", fontsize=7)
            continue
        err = None if lo is None or not math.isfinite(lo) else [[max(v - lo, 0)], [max(hi - v, 0)]]
        ax.errorbar([v], [i], xerr=err, fmt="o", color="tab:blue" if r["quantity"].startswith(("grade", "expected")) else "tab:orange", capsize=4)
        if err is None:  # refused (too few queries) or no variation: no bar, and the plot says so
            ax.annotate("no CI", (v, i), xytext=(6, -3), textcoords="offset points", fontsize=7)
    ax.axvline(0, color="grey", linewidth=0.8)
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("effect (> 0: LLM copy / first passage / AI label favoured)")
    ax.set_title("Effects with their CIs", fontsize=10)
    ax.grid(axis="x", alpha=0.3)


def _protocol(ax: Any, result: JudgeResult) -> None:
    rows = result.protocol["rows"]
    variants = list(dict.fromkeys(r["qrels"] for r in rows))
    runs = list(dict.fromkeys((r["run"], r["llm_source"]) for r in rows))
    width = 0.8 / max(1, len(variants))
    for j, variant in enumerate(variants):
        for r in (r for r in rows if r["qrels"] == variant):
            i = runs.index((r["run"], r["llm_source"]))
            v = r["rel_delta"]
            if v is None or not math.isfinite(v):
                continue
            err = [[max(v - r["low"], 0)], [max(r["high"] - v, 0)]] if r["low"] is not None and math.isfinite(r["low"]) else None
            x = i + (j - (len(variants) - 1) / 2) * width
            ax.errorbar([x], [v], yerr=err, fmt="os^Dv"[j % 5], capsize=3, color=f"C{j}", label=variant if i == 0 else None)
            if err is None:  # refused (too few queries: the caption says why) or undefined: no bar, and the plot says so
                ax.annotate(f"no CI ({r['queries']} queries)", (x, v), xytext=(0, 6), textcoords="offset points", ha="center", fontsize=7)
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.margins(y=0.15)  # room for a "no CI" label above the highest point
    ax.set_xticks(range(len(runs)), [f"{run}\n{wrapped(source, 24)}" for run, source in runs], fontsize=8)
    ax.set_ylabel(f"Relative Δ {rows[0]['measure'] if rows else ''} (%)")
    ax.set_title("Relative Δ under each qrels\n(< 0: LLM text ranked higher)", fontsize=10)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1, frameon=False)
    ax.grid(axis="y", alpha=0.3)
