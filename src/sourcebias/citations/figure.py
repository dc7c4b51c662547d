"""The citation figure: P(cited) by retrieval rank (left) and by position in the context (right),
one line per source with its query-clustered interval; the title gives the source effect."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sourcebias.citations.result import CitationResult


def _effect_text(result: CitationResult) -> str:
    parts = []
    for r in result.effects:
        if r["term"] != "source":
            continue
        if r["estimate"] is None:
            parts.append(f"{r['estimator']} {r['level']}: undefined")
        elif r["estimator"] == "logit":
            ame = "" if r.get("ame") is None else f", AME {r['ame']:+.3f}"
            parts.append(f"logit OR {r['odds_ratio']:.2f} [{_exp(r['low']):.2f}, {_exp(r['high']):.2f}]{ame}")
        elif r["low"] is not None:
            parts.append(f"twins Δ {r['estimate']:+.3f} [{r['low']:+.3f}, {r['high']:+.3f}] ({r['pairs']} pairs)")
        else:
            parts.append(f"twins Δ {r['estimate']:+.3f} (no interval)")
        if r.get("status") not in (None, "", "ok"):  # the table's status (few_queries, ...) travels with the figure's numbers
            parts[-1] += f" ({r['status'].replace('_', ' ')})"
    return "; ".join(parts) or "no source effect estimated"


def _rate_text(result: CitationResult) -> str:
    """What the bars are, with the cells whose interval used another method or is missing."""
    rows = [r for table in ("source_rank", "source_position") for r in result.rates.get(table, [])]
    extreme, refused = sum(1 for r in rows if r.get("note")), sum(1 for r in rows if r.get("refused"))
    text = f"bars: {result.settings['level']:.0%} query-clustered CIs"
    if extreme:
        text += f"; hollow: {extreme} rate(s) of 0 or 1, CI on the effective number of queries"
    if refused:
        text += f"; no bar: {refused} cell(s) on too few queries"
    return text


def _exp(v: float) -> float:
    import math

    return math.exp(v)


def _panel(ax: Any, rows: list[dict[str, Any]], key: str, sources: list[str]) -> None:
    for i, s in enumerate(sources):
        pts = sorted((r[key], r["rate"], r["low"], r["high"], bool(r.get("note"))) for r in rows if r["source"] == s and r["rate"] is not None)
        if not pts:
            continue
        shift = (i - (len(sources) - 1) / 2) * 0.08
        xs = [p[0] + shift for p in pts]
        ys = [p[1] for p in pts]
        # a Wilson bound can sit a rounding error inside a rate of 0 or 1; a refused cell has no bar
        err = [[0.0 if p[2] is None else max(0.0, y - p[2]) for y, p in zip(ys, pts)], [0.0 if p[3] is None else max(0.0, p[3] - y) for y, p in zip(ys, pts)]]
        line = ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=s)
        hollow = [(x, y) for x, y, p in zip(xs, ys, pts) if p[4]]
        if hollow:
            ax.plot(*zip(*hollow), linestyle="none", marker="o", markerfacecolor="white", markeredgecolor=line[0].get_color())
    levels = sorted({r[key] for r in rows})
    if levels:
        ax.set_xticks(levels)
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("P(cited)")
    ax.grid(alpha=0.3)


def plot_citations(result: CitationResult, path: str | Path) -> Path:
    """Draw the figure into ``path`` (PNG) and return it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sources = list(dict.fromkeys(r["source"] for r in result.rates.get("source", [])))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.4), sharey=True)
    _panel(axes[0], result.rates.get("source_rank", []), "rank", sources)
    axes[0].set_xlabel("retrieval rank")
    _panel(axes[1], result.rates.get("source_position", []), "position", sources)
    axes[1].set_xlabel("position in the context")
    s, c = result.settings, result.counts
    silent = c["no_citation"] + c["empty"] + c.get("only_out_of_range", 0)
    head = f"Citations by {result.generator_name}: top {s['k']}, {s['orders']} order(s), {c['answers']} answers ({silent} cite nothing)"
    fig.suptitle(f"{head}\n{_rate_text(result)}\n{_effect_text(result)}", fontsize=9)  # three lines: one was cut at both edges
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=max(1, len(labels)), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
