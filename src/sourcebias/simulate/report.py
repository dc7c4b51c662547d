"""The simulation's table and curves: one :class:`~sourcebias.report.model.Report` (rendered to
the terminal, Markdown, CSV and HTML by :mod:`sourcebias.report.render`) and one figure of
each measure against the round, a line per retriever (matplotlib)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sourcebias.evaluation.stats import Column
from sourcebias.report.model import Report, Table

COLUMNS = [
    Column("retriever", "retriever", "text"),
    Column("round", "round", "int"),
    Column("documents", "docs", "int"),
    Column("added", "added", "int"),
    Column("share_generated", "gen. Share@k", "pct"),
    Column("ndsr_generated", "gen. NDSR@k", "pct"),
    Column("share_round", "round's Share@k", "pct"),
    Column("ndcg", "NDCG@k", "pct"),
    Column("ndcg_change", "Δ NDCG@k", "delta", digits=1),
    Column("silenced", "silenced", "int"),
    Column("silenced_share", "silenced %", "pct"),
    Column("self_bleu", "self-BLEU@k", "pct"),
]
PANELS = (
    ("share_generated", "generated text, Share@k (%)"),
    ("ndsr_generated", "generated text, NDSR@k (%)"),
    ("ndcg", "NDCG@k, human judgements (%)"),
    ("silenced_share", "human top-k documents silenced (%)"),
    ("self_bleu", "self-BLEU@k of the top k (%)"),
)


def caption(settings: dict[str, Any]) -> str:
    k = settings.get("k")
    iv = (settings.get("intervention") or {}).get("kind", "none")
    gen = settings.get("generator") or {}
    return (
        f"k = {k}. Each retriever runs its own loop: in each round the generator ({gen.get('model')}, writing '{gen.get('write')}') writes from the top k of "
        f"{settings.get('queries_per_round')} queries drawn anew (seed {settings.get('seed')}); its documents join the corpus as source "
        "'<generator>-round<r>'. "
        f"Measured on {settings.get('eval_queries_n')} judged queries. gen. = all generated sources together; NDCG@k on the human judgements "
        "(generated copies judged 0); Δ NDCG against round 0; silenced = (query, human document) pairs of round 0's top k absent from the top k "
        "from that round "
        f"through the last round run, % of round 0's; self-BLEU@k: sacrebleu sentence BLEU of each top-k document against the others (higher = less diverse). "
        f"Intervention: {iv}."
    )


def simulation_report(result: Any, figure: Path | None = None) -> Report:
    import pandas as pd

    k = result.settings.get("k")
    cols = [Column(c.key, c.header.replace("@k", f"@{k}"), c.kind, c.digits) for c in COLUMNS]
    rows = [{**r, "ndcg_change": r["ndcg_change"] * 100} for r in result.rows]
    table = Table("simulation", f"Feedback loop '{result.name}'", cols, rows, caption=caption(result.settings), status_rows=False)
    data = {"simulation": pd.DataFrame(result.rows), "sources": pd.DataFrame(result.sources)}
    return Report(f"sourcebias simulate: {result.name}", [table], notes=list(result.notes), figures={"curves": figure} if figure else {}, data=data)


def curve_panels(result: Any) -> list[tuple[str, dict[str, tuple[list[int], list[float]]], tuple[float, float]]]:
    """Per panel of :data:`PANELS`: its title, each retriever's (rounds, values in percent), and
    the y-limits by :func:`~sourcebias.report.axes.value_limits` (a least span, so that a change
    of 0.03 points does not fill a panel like a collapse)."""
    from sourcebias.report.axes import value_limits

    k = result.settings.get("k")
    out = []
    for key, label in PANELS:
        lines = {name: ([r["round"] for r in result.rounds(name)], [100 * r[key] for r in result.rounds(name)]) for name in result.retrievers}
        out.append((label.replace("@k", f"@{k}"), lines, value_limits([v for _, values in lines.values() for v in values])))
    return out


def plot_curves(result: Any, path: Path) -> Path | None:
    """Each measure of :data:`PANELS` against the round, one line per retriever, on the axes of
    :func:`curve_panels` (their rule stated under the figure)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sourcebias.report.axes import RULE

    if not result.rows:
        return None
    fig, grid = plt.subplots(2, 3, figsize=(12.5, 7.0), constrained_layout=True)
    axes = grid.ravel()
    for ax, (title, lines, limits) in zip(axes, curve_panels(result)):
        for name, (rounds, values) in lines.items():
            ax.plot(rounds, values, marker="o", label=name)
        ax.set_ylim(*limits)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("round")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    axes[-1].axis("off")
    axes[-1].legend(handles, labels, loc="center", title="retriever (own loop)", fontsize=10)
    fig.supxlabel(f"Percent; {RULE}.", fontsize=8.5, color="#444444")
    fig.suptitle(
        f"Feedback loop '{result.name}' ({(result.settings.get('generator') or {}).get('model')} "
        f"writing; intervention: {(result.settings.get('intervention') or {}).get('kind', 'none')})",
        fontsize=11,
    )
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
