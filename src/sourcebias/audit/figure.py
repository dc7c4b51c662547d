"""The audit figure: per measure (Share@k, ΔNDSR@k) a panel with, for every run, the naive
estimate and the corrected one with their intervals and, where the corpus has source labels, the
true value."""

from __future__ import annotations

from pathlib import Path

from sourcebias.audit.result import AuditResult

STYLE = {"naive": ("tab:orange", "o", "naive (detector labels)"), "corrected": ("tab:blue", "s", "corrected (Rogan–Gladen)")}


def plot_audit(result: AuditResult, path: str | Path) -> Path:
    """Draw the figure into ``path`` (PNG) and return it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measures = list(dict.fromkeys(r["measure"] for r in result.rows))
    runs = list(dict.fromkeys(r["run"] for r in result.rows))
    fig, axes = plt.subplots(1, len(measures), figsize=(max(5.0, 2.2 * len(runs) + 2) * len(measures), 4.4), squeeze=False)
    for ax, m in zip(axes[0], measures):
        for i, run in enumerate(runs):
            r = result.row(run, m)
            for j, kind in enumerate(("naive", "corrected")):
                _point(ax, i + (j - 0.5) * 0.25, r, kind, first=i == 0)
            if r.get("true") is not None:
                ax.hlines(r["true"], i - 0.35, i + 0.35, colors="black", linewidth=2, label="true (source labels)" if i == 0 else None)
        ax.set_xticks(range(len(runs)), runs)
        ax.set_xlim(-0.6, len(runs) - 0.4)
        ax.set_title(f"{m}: share of LLM text in the top k" if m.startswith("Share") else f"{m}: NDSR human − NDSR LLM", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        if m.startswith("ΔNDSR"):
            ax.axhline(0, color="grey", linewidth=0.8)
    fig.suptitle(audit_title(result), fontsize=10, color="black" if result.reliable else "darkred")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def audit_title(result: AuditResult) -> str:
    """The figure's title: the detector with the Se and Sp the correction used (Sp from the human
    reference set where one was given, and then said so), the intervals, a failed check."""
    d, level = result.detector, result.settings.get("level", 0.95)
    sp = f"{result.specificity:.2f}" + (" from the human reference set" if "specificity" in (result.in_domain or {}) else "")
    title = (
        f"Audit with {d.get('spec') or d.get('kind')} (Se = {d['sensitivity']:.2f}, Sp = {sp}, threshold {d['threshold']:.3g}); bars: {level:.0%} bootstrap CIs"
    )
    c = result.diagnostic
    failed = [f"transfer check FAILED (min-p = {c['p_value']:.3g})"] if c and not c.get("passed", True) else []
    if (result.domain or {}).get("reason"):
        failed.insert(0, "calibrated on another domain" if result.domain.get("domain") == "other" else "calibration domain unknown")
    if failed:
        title += f"\n{'; '.join(failed).capitalize()}: corrected figures UNRELIABLE (hollow)"
    return title


def _point(ax, x: float, r: dict, kind: str, *, first: bool) -> None:
    color, marker, label = STYLE[kind]
    v, lo, hi = r[kind], r[f"{kind}_low"], r[f"{kind}_high"]
    if v is None:
        ax.annotate("undefined", (x, 0), ha="center", fontsize=7, color=color)
        return
    err = None if lo is None else [[max(v - lo, 0)], [max(hi - v, 0)]]
    unreliable = kind == "corrected" and not r.get("reliable", True)
    ax.errorbar(
        [x],
        [v],
        yerr=err,
        fmt=marker,
        color=color,
        capsize=4,
        label=label if first else None,
        mfc="white" if unreliable else color,
        linestyle="none",
        alpha=0.6 if unreliable else 1.0,
    )
    imprecise = kind == "corrected" and not unreliable and r.get("precise") is False
    no_ci = "no CI" if lo is None else ""  # too few queries to resample (the notes say why)
    marks = [m for m in (r.get("flag") if kind == "corrected" else "", "UNRELIABLE" if unreliable else "", "IMPRECISE" if imprecise else "", no_ci) if m]
    if marks:
        ax.annotate(
            ", ".join(marks),
            (x, v),
            textcoords="offset points",
            xytext=(6, 4),
            fontsize=7,
            color="red" if unreliable else color,
            fontweight="bold" if unreliable else "normal",
        )
