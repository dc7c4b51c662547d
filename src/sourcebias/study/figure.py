"""The figure of an evaluation (``figures/source_bias.png``): per retriever, the headline measure at
each cut-off on the mixed corpus for the human target and each LLM target, side by side, with the
Relative Δ of each pair written above it (human text blue, LLM text vermillion, as in every figure
of sourcebias; a Relative Δ below 0, LLM text ranked higher, in vermillion)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from sourcebias.core.palette import HUMAN_COLOR, LLM_COLOR
from sourcebias.evaluation.results import MIXED, EvaluationResult

#: Where an output folder holds the figure.
FIGURE_FILE = Path("figures") / "source_bias.png"
#: the LLM sources after the first are told apart by hatching (the colour stays LLM text's)
HATCHES = ("", "//", "..", "xx", "\\\\")


def headline_measures(result: EvaluationResult) -> list[Any]:
    """The cut-offs of the first measure with labels (NDCG when it was computed)."""
    measures = result.target_measures
    if not measures:
        return []
    names = [m.name for m in measures]
    name = "NDCG" if "NDCG" in names else names[0]
    return [m for m in measures if m.name == name]


def figure_data(result: EvaluationResult) -> dict[str, Any] | None:
    """What the figure shows, as plain JSON-ready values; ``None`` when the result has no
    mixed-corpus measure with labels.

    Keys: ``dataset``, ``split``, ``measure`` (the headline measure's name), ``cutoffs`` (its
    measures, e.g. ``NDCG@10``), ``targets`` (the human source, then each LLM source) and
    ``panels``: per retriever, ``values`` (per target, the mean at each cut-off, in percent)
    and ``deltas`` (per cut-off, the Relative Δ of each LLM source).
    """
    measures = headline_measures(result)
    if not result.has_mixed or not measures:
        return None
    targets = [result.human_source, *result.other_sources]
    dataset = result.dataset or {}
    return {
        "dataset": dataset.get("name", "?"),
        "split": dataset.get("split", "?"),
        "measure": measures[0].name,
        "cutoffs": [str(m) for m in measures],
        "targets": targets,
        "panels": [
            {
                "retriever": name,
                "values": {t: [100 * result.mean(name, MIXED, t, m) for m in measures] for t in targets},
                "deltas": [[result.relative_delta(name, m, other) for other in result.other_sources] for m in measures],
            }
            for name in result.retriever_names
        ],
    }


def plot_source_bias(result: EvaluationResult, path: str | Path) -> Path | None:
    """Draw the figure; ``None`` when the result has no mixed-corpus measure with labels.

    Args:
        result: An evaluation with the mixed corpus scored per target.
        path: Where to write the PNG.

    Returns:
        The path written, or ``None`` when there is nothing to draw.
    """
    data = figure_data(result)
    return None if data is None else draw_source_bias(data, path)


def draw_source_bias(data: dict[str, Any], path: str | Path) -> Path:
    """Draw the figure of :func:`figure_data`'s values into the PNG file ``path``.

    Args:
        data: What :func:`figure_data` returned.
        path: Where to write the PNG.

    Returns:
        ``path``.
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    source_bias_figure(data).savefig(out, dpi=150)
    return out


def source_bias_figure(data: dict[str, Any]) -> Any:
    """The matplotlib ``Figure`` of :func:`figure_data`'s values (see :func:`draw_source_bias`)."""
    # The object API, not pyplot: no global figure state and no pyplot import on evaluate's path
    # (savefig renders a PNG with Agg).
    from matplotlib.figure import Figure

    panels = data["panels"]
    values = [v for panel in panels for row in panel["values"].values() for v in row]
    top = max([1.0, *[v for v in values if math.isfinite(v)]])
    fig = Figure(figsize=(max(4.0, 3.2 * len(panels)), 3.8))
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)
    for ax, panel in zip(axes[0], panels):
        _panel(ax, panel, data["targets"], data["cutoffs"], top)
    axes[0][0].set_ylabel(f"{data['measure']} on the mixed corpus (%)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    # two lines where one panel leaves too little width for one (the title was cut at both ends)
    sep = "\n" if len(panels) < 3 else "; "
    fig.suptitle(f"Source bias on {data['dataset']} ({data['split']}){sep}above each pair: Relative Δ (< 0: LLM text ranked higher)", fontsize=9)
    fig.tight_layout(rect=(0, 0.08, 1, 0.92 if sep == "\n" else 0.94))
    return fig


def _panel(ax: Any, panel: dict[str, Any], targets: list[str], cutoffs: list[str], top: float) -> None:
    """One retriever: bars per cut-off for the human target and each LLM target; ``top`` is the
    highest bar of every panel (the panels share their y axis)."""
    width = 0.8 / len(targets)
    for j, target in enumerate(targets):
        colour, hatch = (HUMAN_COLOR, "") if j == 0 else (LLM_COLOR, HATCHES[(j - 1) % len(HATCHES)])
        ax.bar(
            [i + (j - (len(targets) - 1) / 2) * width for i in range(len(cutoffs))],
            panel["values"][target],
            width,
            color=colour,
            hatch=hatch,
            edgecolor="white",
            label=target,
        )
    for i, deltas in enumerate(panel["deltas"]):
        text = " / ".join("–" if not math.isfinite(d) else f"{d:+.1f}" for d in deltas)
        colour = LLM_COLOR if any(math.isfinite(d) and d < 0 for d in deltas) else HUMAN_COLOR
        ax.text(i, top * 1.03, text, ha="center", va="bottom", fontsize=8, color=colour)
    ax.set_xticks(range(len(cutoffs)), cutoffs, fontsize=8)
    ax.set_ylim(0, top * 1.13)
    ax.set_title(panel["retriever"], fontsize=9, pad=4)
    ax.spines[["top", "right"]].set_visible(False)
