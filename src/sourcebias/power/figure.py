"""The power-curve figure: power against the number of queries in a study, at each pilot's
target effect, one panel per statistic; solid lines by resampling, dashed analytic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sourcebias.power.result import PowerResult, format_effect

TITLES = {
    "relative_delta": "Relative Δ (paired t-test of the per-query differences)",
    "ndcg_difference": "NDCG difference human − LLM (paired t-test)",
    "twin_preference": "Twin preference (query-clustered sign-flip test; queries resampled with their pairs)",
    "delta_ndsr": "ΔNDSR (t-test over queries)",
}


def _lines(result: PowerResult, statistic: str) -> dict[tuple[str, str, str], dict[str, list[tuple[int, float]]]]:
    out: dict[tuple[str, str, str], dict[str, list[tuple[int, float]]]] = {}
    for c in result.curves:
        if c["statistic"] != statistic:
            continue
        key = (c["retriever"], c["llm_source"], c["measure"])
        out.setdefault(key, {}).setdefault(c["method"], []).append((c["n"], c["power"]))
    return out


def plot_power_curves(result: PowerResult, path: str | Path) -> Path | None:
    """Draw the figure into ``path`` (PNG); ``None`` (nothing written) when no curve exists."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stats = [s for s in TITLES if any(c["statistic"] == s for c in result.curves)]
    if not stats:
        return None
    several_llm = len({p["llm_source"] for p in result.pilots}) > 1
    fig, axes = plt.subplots(len(stats), 1, figsize=(11, 3.4 * len(stats)), squeeze=False)
    alpha, power = result.settings["alpha"], result.settings["power"]
    colours = plt.get_cmap("tab10")
    for ax, statistic in zip(axes[:, 0], stats):
        effects = {(c["retriever"], c["llm_source"], c["measure"]): c["effect"] for c in result.curves if c["statistic"] == statistic}
        for i, (key, methods) in enumerate(_lines(result, statistic).items()):
            label = f"{key[0]}{'/' + key[1] if several_llm else ''}{'' if statistic in ('twin_preference', 'delta_ndsr') else ' ' + key[2]}: {format_effect(statistic, effects[key])}"
            for method, style in (("resampling", "-"), ("analytic", "--")):
                pts = sorted(methods.get(method, []))
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=colours(i % 10), lw=1.6, label=f"{label} ({method})")
        ax.axhline(power, color="0.3", lw=0.8, ls=":")
        ax.axhline(alpha, color="0.6", lw=0.8, ls=":")
        pilot_n = result.pilot.get("queries")
        if pilot_n:
            ax.axvline(pilot_n, color="0.5", lw=0.8, ls="-.")
            ax.annotate(f"pilot: {pilot_n} queries", (pilot_n, 0.97), xytext=(4, 0), textcoords="offset points", fontsize=8, color="0.35", va="top")
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_title(TITLES[statistic], fontsize=11, loc="left")
        ax.set_xlabel("queries in a study (n)")
        ax.set_ylabel(f"power (α = {alpha:g})")
        ax.grid(True, which="both", lw=0.3, alpha=0.5)
        ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.suptitle(f"Power at each pilot's effect ({_subtitle(result)}); dotted: power {power:g} and α", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    path = Path(path)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return path


def _subtitle(result: PowerResult) -> str:
    p: dict[str, Any] = result.pilot
    s = result.settings
    return f"{p.get('dataset', '?')} {p.get('split', '')}, {s['resamples']:,} simulated studies per n, seed {s['seed']}"
