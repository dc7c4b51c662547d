"""The power-curve figure: power against the number of queries in a study, at each pilot's
target effect, one panel per statistic, for the test that marks ``*`` in ``evaluate``; solid
lines by resampling, dashed analytic. One colour per retriever, LLM source and measure, the same
in every panel, named once in a shared legend below the panels (the effect of each line is in
curves.csv and the table); the uncorrected curves are in curves.csv."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sourcebias.power.base import STAR
from sourcebias.power.result import PowerResult

TITLES = {
    "relative_delta_ci": "Relative Δ (paired randomization test, corrected as evaluate marks *)",
    "paired_tests": "NDCG difference human − LLM (the same test)",
    "twin_preference": "Twin preference (query-clustered sign-flip test; queries resampled with their pairs)",
    "delta_ndsr": "ΔNDSR (t-test over queries)",
    "judge_twin_bias": "Judge twin bias, LLM − human grade (CR1 t interval over queries)",
}


def _series(result: PowerResult, several_llm: bool) -> dict[tuple[str, str, str], str]:
    """Each line's key (retriever, LLM source, measure) and its legend label, in table order;
    twin preference and ΔNDSR (one line per retriever and source) share a retriever's entry."""
    out: dict[tuple[str, str, str], str] = {}
    for c in result.curves:
        single = c["statistic"] in ("twin_preference", "delta_ndsr", "judge_twin_bias")
        key = (c["retriever"], c["llm_source"], "" if single else c["measure"])
        out.setdefault(key, f"{key[0]}{'/' + key[1] if several_llm else ''}{' ' + key[2] if key[2] else ''}")
    return out


def _panel(ax: Any, result: PowerResult, statistic: str, colours: dict[tuple[str, str, str], Any]) -> None:
    lines: dict[tuple[str, str, str, str], list[tuple[int, float]]] = {}
    for c in result.curves:
        if c["statistic"] == statistic and c.get("test", STAR) == STAR:
            single = statistic in ("twin_preference", "delta_ndsr", "judge_twin_bias")
            lines.setdefault((c["retriever"], c["llm_source"], "" if single else c["measure"], c["method"]), []).append((c["n"], c["power"]))
    for (r, llm, m, method), pts in lines.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "-" if method == "resampling" else "--", color=colours[(r, llm, m)], lw=1.5)
    alpha, power = result.settings["alpha"], result.settings["power"]
    ax.axhline(power, color="0.3", lw=0.8, ls=":")
    ax.axhline(alpha, color="0.6", lw=0.8, ls=":")
    pilot_n = result.pilot.get("queries")
    if pilot_n:
        ax.axvline(pilot_n, color="0.5", lw=0.8, ls="-.")
        ax.annotate(f"pilot: {pilot_n} queries", (pilot_n, 0.97), xytext=(4, 0), textcoords="offset points", fontsize=8, color="0.35", va="top")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_title(TITLES[statistic], fontsize=10.5, loc="left")
    ax.set_ylabel(f"power (α = {alpha:g})")
    ax.grid(True, which="both", lw=0.3, alpha=0.5)


def plot_power_curves(result: PowerResult, path: str | Path) -> Path | None:
    """Draw the figure into ``path`` (PNG); ``None`` (nothing written) when no curve exists."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    stats = [s for s in TITLES if any(c["statistic"] == s for c in result.curves)]
    if not stats:
        return None
    series = _series(result, len({p["llm_source"] for p in result.pilots}) > 1)
    cmap = plt.get_cmap("tab10" if len(series) <= 10 else "tab20")
    colours = {key: cmap(i % cmap.N) for i, key in enumerate(series)}
    fig, axes = plt.subplots(len(stats), 1, figsize=(9, 2.9 * len(stats) + 1.2), squeeze=False, sharex=True)
    for ax, statistic in zip(axes[:, 0], stats):
        _panel(ax, result, statistic, colours)
    axes[-1, 0].set_xlabel("queries in a study (n)")
    handles = [Line2D([], [], color=colours[k], lw=2, label=label) for k, label in series.items()]
    handles += [Line2D([], [], color="0.2", ls="-", label="resampling"), Line2D([], [], color="0.2", ls="--", label="analytic")]
    test = "the judge's CR1 t interval" if result.pilot.get("kind") == "judge" else "the test that marks * in evaluate"
    target = "the effect given (--effect)" if result.settings.get("effects") else "each pilot's own effect"
    fig.suptitle(f"Power of {test}, at {target}\n{_subtitle(result)}; dotted: power {result.settings['power']:g} and α", fontsize=10.5)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.legend(handles=handles, loc="upper center", ncol=min(4, len(handles)), fontsize=8.5, frameon=False, bbox_to_anchor=(0.5, 0.0))
    path = Path(path)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return path


def _subtitle(result: PowerResult) -> str:
    p: dict[str, Any] = result.pilot
    s = result.settings
    return f"{p.get('dataset', '?')} {p.get('split', '')}, {s['resamples']:,} simulated studies per n, seed {s['seed']}"
