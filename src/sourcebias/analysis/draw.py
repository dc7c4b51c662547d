"""The figures of each analysis, drawn from its :class:`AnalysisResult` into a folder
(``figures/*.png``): :func:`draw` asks the registered analysis (:meth:`Analysis.draw`); the figures
of quality, spectrum, perplexity, artifacts and direction are drawn here (``draw_*``), from the
plotting functions of :mod:`sourcebias.analysis.figures`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sourcebias.analysis import figures as fg
from sourcebias.analysis.base import get_analysis
from sourcebias.analysis.result import AnalysisResult


def draw(result: AnalysisResult, folder: str | Path) -> dict[str, Path]:
    """Draw every figure of ``result`` into ``folder/figures`` and record them in ``result.figures``."""
    out = Path(folder) / "figures"
    out.mkdir(parents=True, exist_ok=True)
    drawn = get_analysis(result.analysis).draw(result, out)
    result.figures.update({k: v.relative_to(Path(folder)) if v.is_relative_to(Path(folder)) else v for k, v in drawn.items()})
    return drawn


def _human(result: AnalysisResult) -> str:
    return result.dataset.get("human_source", "human")


def _field(result: AnalysisResult) -> str:
    """The field measured, for a figure's title ("" for analyses of embeddings of title + text)."""
    f = result.parameters.get("field")
    return f" [{f}]" if f else ""


def draw_quality(r: AnalysisResult, out: Path) -> dict[str, Path]:
    t = r.tables["quality"]
    figs: dict[str, Path] = {}
    for llm, part in t.groupby("llm_source", sort=False):
        tag = "" if t["llm_source"].nunique() == 1 else f"-{llm}"
        figs[f"term_similarity{tag}"] = fg.plot_term_similarity(
            part["jaccard"], part["overlap"], out / f"term_similarity{tag}.png", title=f"{r.dataset['name']}: {llm} vs {_human(r)}{_field(r)}"
        )
        cos = r.arrays.get("cosines", {}).get(llm)
        if cos is not None:
            figs[f"pair_cosines{tag}"] = fg.plot_pair_cosines(
                cos["matched"], cos["random"], out / f"pair_cosines{tag}.png", title=f"{r.dataset['name']}, {r.summary.get('model')}{_field(r)}"
            )
        lengths = {_human(r): part["words_human"].to_numpy(), llm: part["words_llm"].to_numpy()}
        figs[f"lengths{tag}"] = fg.plot_lengths(
            lengths, out / f"lengths{tag}.png", unit="words", human_source=_human(r), title=f"{r.dataset['name']}: document length{_field(r)}"
        )
    ts = r.tables.get("tsne")
    if ts is not None and len(ts):
        figs["tsne"] = fg.plot_tsne(
            ts[["x", "y"]].to_numpy(),
            list(ts["source"]),
            out / "tsne.png",
            human_source=_human(r),
            perplexity=r.parameters.get("tsne_perplexity"),
            title=f"{r.dataset['name']}, {r.summary.get('model')}{_field(r)}",
        )
    return figs


def draw_spectrum(r: AnalysisResult, out: Path) -> dict[str, Path]:
    rows = r.tables["spectrum"].to_dict("records")
    return {
        "spectrum": fg.plot_spectrum(
            rows,
            out / "spectrum.png",
            human_source=_human(r),
            title=f"{r.dataset['name']}, {r.summary.get('model')} ({r.summary.get('documents')} documents per source)",
        )
    }


def draw_perplexity(r: AnalysisResult, out: Path) -> dict[str, Path]:
    t = r.tables["perplexity"]
    values = {s: t.loc[t["source"] == s, "value"].to_numpy(dtype=float) for s in t["source"].unique()}
    human = _human(r)
    diffs = None
    others = [s for s in values if s != human]
    if len(others) == 1 and human in values:
        h = t[t["source"] == human].set_index("doc_id")["value"]
        g = t[t["source"] == others[0]].set_index("doc_id")["value"]
        common = h.index.intersection(g.index)
        diffs = (g[common] - h[common]).to_numpy(dtype=float)
    label = "log-perplexity (nats/token)" if str(r.parameters.get("model", "")).startswith("lm:") else "pseudo-log-perplexity (nats/token)"
    return {
        "perplexity": fg.plot_perplexity(
            values,
            out / "perplexity.png",
            paired_differences=diffs,
            human_source=human,
            label=label,
            title=f"{r.dataset['name']}, {r.parameters.get('model')}{_field(r)}",
        )
    }


def draw_artifacts(r: AnalysisResult, out: Path) -> dict[str, Path]:
    t = r.tables["artifacts"]
    human = _human(r)
    figs = {
        "lengths": fg.plot_lengths(
            {s: t.loc[t["source"] == s, "words"].to_numpy() for s in t["source"].unique()},
            out / "lengths.png",
            unit="words",
            human_source=human,
            title=f"{r.dataset['name']}: document length{_field(r)}",
        )
    }
    if "perplexity" in t:
        vals = {s: t.loc[t["source"] == s, "perplexity"].to_numpy(dtype=float) for s in t["source"].unique()}
        figs["perplexity"] = fg.plot_perplexity(
            vals,
            out / "perplexity.png",
            human_source=human,
            label="log-perplexity (nats/token)",
            title=f"{r.dataset['name']}, {r.parameters.get('lm')}{_field(r)}",
        )
    vals = {s: t.loc[t["source"] == s, "median_idf"].to_numpy(dtype=float) for s in t["source"].unique()}
    figs["median_idf"] = fg.plot_perplexity(
        vals,
        out / "median_idf.png",
        human_source=human,
        label="median term IDF (Lucene BM25 idf)",
        title=f"{r.dataset['name']}: median term IDF per document{_field(r)}",
    )
    return figs


def draw_direction(r: AnalysisResult, out: Path) -> dict[str, Path]:
    figs: dict[str, Path] = {}
    ests = r.arrays.get("direction", {})
    t = r.tables["direction_pairs"]
    for llm, part in t.groupby("llm_source", sort=False):
        tag = "" if t["llm_source"].nunique() == 1 else f"-{llm}"
        est = ests.get(llm)
        entry = r.summary["sources"][llm]
        null_proj = est.null_projections if est is not None and est.null_projections.size else np.zeros(1)
        figs[f"direction{tag}"] = fg.plot_direction(
            part["projection"].to_numpy(dtype=float),
            null_proj,
            out / f"direction{tag}.png",
            null_statistic=est.null_norm if est is not None and est.null_norm.size else None,
            observed_statistic=entry["mean_difference_norm"],
            p_value=entry.get("p_norm"),
            title=f"{r.dataset['name']}, {r.summary.get('model')}: LLM − human direction ({entry['pairs']} pairs)",
        )
    return figs
