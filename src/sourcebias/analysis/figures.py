"""Figures of the "explain the bias" analyses, as PNG files (matplotlib, no pyplot state).

Every function takes tidy arrays or rows and a path, writes one PNG (180 dpi; 7 inches wide
for two panels, 3.5 for one, so it reads at the width of a paper's column or page) and returns
the path. Colours are the Okabe-Ito colour-blind-safe palette of :mod:`sourcebias.core.palette`,
and a source keeps its colour in every figure: the human source blue, the LLM sources vermillion,
then orange, purple, sky blue, in the order given; pair-level measures are bluish green,
baselines and null distributions grey.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.core.palette import HUMAN_COLOR, LLM_COLORS, NULL_COLOR, PAIR_COLOR

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

DPI = 180
_STYLE: dict[RcKeyType, Any] = {
    "font.size": 8.5,
    "axes.titlesize": 9,
    "axes.labelsize": 8.5,
    "legend.fontsize": 7.5,
    "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": True,
    "legend.framealpha": 0.85,
    "legend.edgecolor": "none",
}


def source_colors(sources: Iterable[str], human_source: str = "human") -> dict[str, str]:
    """The colour of each source: ``human_source`` blue, the others in order from ``LLM_COLORS``."""
    out, k = {}, 0
    for s in sources:
        if s in out:
            continue
        if s == human_source:
            out[s] = HUMAN_COLOR
        else:
            out[s] = LLM_COLORS[k % len(LLM_COLORS)]
            k += 1
    return out


def _figure(ncols: int, height: float = 2.8):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3.5 * ncols, height), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, format="png")
    return path


def _finite(x: Any, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=float).reshape(-1)
    a = a[np.isfinite(a)]
    if a.size == 0:
        raise ConfigError(f"{what}: no finite values to plot")
    return a


def _bins(arrays: Sequence[np.ndarray], n: int = 40) -> np.ndarray:
    lo = min(float(a.min()) for a in arrays)
    hi = max(float(a.max()) for a in arrays)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    return np.linspace(lo, hi, n + 1)


def _headroom(ax, factor: float = 1.3, integer: bool = True) -> None:
    """Room above the bars for the legend; whole-number ticks on a count axis."""
    from matplotlib.ticker import MaxNLocator

    ax.set_ylim(0, ax.get_ylim()[1] * factor)
    if integer:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))


def _mean_sd(a: np.ndarray) -> str:
    return f"mean {a.mean():.3f} ± {a.std(ddof=1) if a.size > 1 else 0.0:.3f}"


def plot_spectrum(rows: Iterable[Mapping[str, Any]], path: str | Path, *, human_source: str = "human", title: str | None = None) -> Path:
    """Singular-value spectra (rows of :func:`sourcebias.analysis.spectrum.spectrum_table`):
    left, each source's values by rank on a log scale; right, each LLM source's value relative
    to the human source's at the same rank, with a line at 1."""
    import matplotlib

    by: dict[str, list[tuple[int, float, float]]] = {}
    dropped = 0
    for r in rows:
        by.setdefault(str(r["source"]), [])
        if r.get("numerically_zero", False):
            dropped += 1
            continue
        by[str(r["source"])].append((int(r["rank"]), float(r["value"]), float(r["relative"])))
    if human_source not in by:
        raise ConfigError(f"plot_spectrum: no rows for the human source {human_source!r}")
    colors = source_colors([human_source, *by], human_source)
    with matplotlib.rc_context(_STYLE):
        fig, (ax, ax2) = _figure(2)
        for s, pts in by.items():
            if not pts:
                continue
            pts.sort()
            rank, val, rel = (np.array(c) for c in zip(*pts))
            ax.plot(rank, val, color=colors[s], lw=1.2, label=s)
            if s != human_source:
                ax2.plot(rank, rel, color=colors[s], lw=1.2, label=f"{s} / {human_source}")
        ax.set_yscale("log")
        ax.set_xlabel("rank (singular values in descending order)")
        ax.set_ylabel("singular value")
        ax.set_title("Singular values per source")
        if dropped:
            ax.text(0.98, 0.02, f"{dropped} numerically zero value(s) not shown", transform=ax.transAxes, ha="right", va="bottom", fontsize=7, color="0.3")
        ax.legend()
        ax2.axhline(1.0, color="black", lw=0.8, ls="--", label="equal (ratio 1)")
        ax2.set_xlabel("rank (singular values in descending order)")
        ax2.set_ylabel("LLM / human singular value (ratio)")
        ax2.set_title("Relative singular values")
        ax2.legend()
        if title:
            fig.suptitle(title, fontsize=9.5)
        return _save(fig, path)


def plot_term_similarity(jaccard: Any, overlap: Any, path: str | Path, *, title: str | None = None) -> Path:
    """Histograms of the per-pair term Jaccard similarity and overlap (0-1), means marked."""
    import matplotlib

    j, o = _finite(jaccard, "jaccard"), _finite(overlap, "overlap")
    with matplotlib.rc_context(_STYLE):
        fig, axes = _figure(2)
        for ax, a, name, formula in ((axes[0], j, "Jaccard similarity", "|G ∩ H| / |G ∪ H|"), (axes[1], o, "Overlap", "|G ∩ H| / |H|")):
            ax.hist(a, bins=np.linspace(0, 1, 41), color=PAIR_COLOR, alpha=0.85, label=f"twin pairs (n = {a.size})")
            ax.axvline(a.mean(), color="black", lw=1, ls="--", label=_mean_sd(a))
            ax.set_xlim(0, 1)
            ax.set_xlabel(f"{name} of term sets, {formula}")
            ax.set_ylabel("number of pairs")
            ax.set_title(name)
            _headroom(ax)
            ax.legend(loc="upper left")
        if title:
            fig.suptitle(title, fontsize=9.5)
        return _save(fig, path)


def plot_pair_cosines(matched: Any, random: Any, path: str | Path, *, title: str | None = None) -> Path:
    """Histograms (densities) of the embedding cosine of matched twin pairs and of random
    (LLM i, human j ≠ i) pairs, with their means ± standard deviations in the legend."""
    import matplotlib

    m, r = _finite(matched, "matched"), _finite(random, "random")
    bins = _bins([m, r], 60)
    with matplotlib.rc_context(_STYLE):
        fig, (ax,) = _figure(1, 2.8)
        ax.hist(r, bins=bins, density=True, color=NULL_COLOR, alpha=0.7, label=f"random pairs: {_mean_sd(r)}")
        ax.hist(m, bins=bins, density=True, color=PAIR_COLOR, alpha=0.8, label=f"twin pairs: {_mean_sd(m)}")
        ax.set_xlabel("cosine similarity of embeddings")
        ax.set_ylabel("density")
        ax.set_title(title or "Twin pairs vs random pairs")
        _headroom(ax, integer=False)
        ax.legend(loc="upper left")
        return _save(fig, path)


def plot_lengths(lengths: Mapping[str, Any], path: str | Path, *, unit: str = "words", human_source: str = "human", title: str | None = None) -> Path:
    """Overlaid length histograms per source (``unit`` names what is counted)."""
    import matplotlib

    data = {s: _finite(v, f"lengths[{s!r}]") for s, v in lengths.items()}
    colors = source_colors(data, human_source)
    bins = _bins(list(data.values()), 50)
    with matplotlib.rc_context(_STYLE):
        fig, (ax,) = _figure(1, 2.8)
        for s, a in data.items():
            ax.hist(a, bins=bins, color=colors[s], alpha=0.55, label=f"{s} (median {np.median(a):.0f})")
            ax.hist(a, bins=bins, color=colors[s], histtype="step", lw=1)
        ax.set_xlabel(f"document length ({unit})")
        ax.set_ylabel("number of documents")
        ax.set_title(title or "Length distributions")
        _headroom(ax)
        ax.legend(loc="upper right")
        return _save(fig, path)


def plot_tsne(
    coords: Any, sources: Sequence[str], path: str | Path, *, human_source: str = "human", perplexity: float | None = None, title: str | None = None
) -> Path:
    """The 2-D t-SNE map of :func:`sourcebias.analysis.quality.tsne_map`, one colour per source."""
    import matplotlib

    xy = np.asarray(coords, dtype=float)
    src = np.asarray(sources, dtype=object)
    if xy.ndim != 2 or xy.shape[1] != 2 or len(xy) != len(src):
        raise ConfigError(f"plot_tsne: expected (N, 2) coordinates and N source names, got {xy.shape} and {len(src)}")
    names = list(dict.fromkeys(src.tolist()))
    colors = source_colors(names, human_source)
    with matplotlib.rc_context(_STYLE):
        fig, (ax,) = _figure(1, 3.6)
        # the human documents as larger discs underneath, each LLM source as small dots on top:
        # a twin that lands on its original shows as a dot inside a disc
        for s in sorted(names, key=lambda n: n != human_source):
            sel = src == s
            big = s == human_source
            ax.scatter(
                xy[sel, 0], xy[sel, 1], s=14 if big else 3, alpha=0.45 if big else 0.9, color=colors[s], label=f"{s} (n = {int(sel.sum())})", linewidths=0
            )
        ax.set_xlabel("t-SNE dimension 1 (arbitrary units)")
        ax.set_ylabel("t-SNE dimension 2 (arbitrary units)")
        ax.set_title(title or ("t-SNE of document embeddings" + (f" (perplexity {perplexity:g})" if perplexity else "")))
        fig.legend(loc="outside lower center", ncol=min(len(names), 2), markerscale=2)
        return _save(fig, path)


def plot_perplexity(
    values: Mapping[str, Any],
    path: str | Path,
    *,
    paired_differences: Any = None,
    human_source: str = "human",
    label: str = "pseudo-log-perplexity (nats per token)",
    title: str | None = None,
) -> Path:
    """Histograms of a per-document perplexity per source; with ``paired_differences``
    (LLM - human per twin pair) a second panel shows their histogram and a line at 0."""
    import matplotlib

    data = {s: _finite(v, f"values[{s!r}]") for s, v in values.items()}
    colors = source_colors(data, human_source)
    bins = _bins(list(data.values()), 50)
    with matplotlib.rc_context(_STYLE):
        fig, axes = _figure(2 if paired_differences is not None else 1)
        ax = axes[0]
        for s, a in data.items():
            ax.hist(a, bins=bins, color=colors[s], alpha=0.55, label=f"{s} (mean {a.mean():.3f})")
            ax.hist(a, bins=bins, color=colors[s], histtype="step", lw=1)
        ax.set_xlabel(label)
        ax.set_ylabel("number of documents")
        ax.set_title("Per source")
        _headroom(ax)
        ax.legend(loc="upper right")
        if paired_differences is not None:
            d = _finite(paired_differences, "paired_differences")
            ax2 = axes[1]
            ax2.hist(d, bins=50, color=PAIR_COLOR, alpha=0.85, label=f"twin pairs (n = {d.size}), {_mean_sd(d)}")
            ax2.axvline(0, color="black", lw=0.8, ls="--", label="no difference")
            ax2.set_xlabel(f"LLM − human, {label}")
            ax2.set_ylabel("number of pairs")
            ax2.set_title(f"Paired differences ({np.mean(d < 0):.0%} of pairs below 0)")
            _headroom(ax2)
            ax2.legend(loc="upper left")
        if title:
            fig.suptitle(title, fontsize=9.5)
        return _save(fig, path)


def plot_direction(
    projections: Any,
    null_projections: Any,
    path: str | Path,
    *,
    null_statistic: Any = None,
    observed_statistic: float | None = None,
    p_value: float | None = None,
    statistic_name: str = "norm of the mean difference",
    title: str | None = None,
) -> Path:
    """The LLM - human direction u: left, histogram (density) of the pair differences'
    projections on u against those of sign-flipped sets on their own mean direction (the
    null); right (when ``null_statistic`` is given), the null distribution of the test
    statistic with the observed value and p-value."""
    import matplotlib

    pr, nu = _finite(projections, "projections"), _finite(null_projections, "null_projections")
    bins = _bins([pr, nu], 60)
    with matplotlib.rc_context(_STYLE):
        fig, axes = _figure(2 if null_statistic is not None else 1)
        ax = axes[0]
        ax.hist(nu, bins=bins, density=True, color=NULL_COLOR, alpha=0.7, label=f"sign-flip null: mean {nu.mean():.3f}")
        ax.hist(pr, bins=bins, density=True, color=PAIR_COLOR, alpha=0.8, label=f"twin pairs: mean {pr.mean():.3f}")
        ax.axvline(0, color="black", lw=0.8, ls="--")
        ax.set_xlabel("projection of e_LLM − e_human on u")
        ax.set_ylabel("density")
        ax.set_title("Pair differences along the mean direction")
        _headroom(ax, integer=False)
        ax.legend(loc="upper left")
        if null_statistic is not None:
            ns = _finite(null_statistic, "null_statistic")
            ax2 = axes[1]
            ax2.hist(ns, bins=40, color=NULL_COLOR, alpha=0.8, label=f"sign-flip null ({ns.size} flips)")
            if observed_statistic is not None:
                lab = f"observed {observed_statistic:.3g}"
                if p_value is not None:
                    floor = 1 / (ns.size + 1)
                    lab += f", p = 1/{ns.size + 1} (minimum)" if p_value <= floor * (1 + 1e-9) else f", p = {p_value:.2g}"
                ax2.axvline(observed_statistic, color=PAIR_COLOR, lw=2, label=lab)
            hi = max(float(ns.max()), observed_statistic if observed_statistic is not None else -np.inf)
            lo = min(float(ns.min()), observed_statistic if observed_statistic is not None else np.inf)
            pad = 0.08 * (hi - lo if hi > lo else 1.0)
            ax2.set_xlim(lo - pad, hi + pad)
            from matplotlib.ticker import MaxNLocator

            ax2.xaxis.set_major_locator(MaxNLocator(5))
            ax2.set_xlabel(statistic_name)
            ax2.set_ylabel("number of flips")
            ax2.set_title("Sign-flip permutation test")
            _headroom(ax2)
            ax2.legend(loc="upper left")
        if title:
            fig.suptitle(title, fontsize=9.5)
        return _save(fig, path)
