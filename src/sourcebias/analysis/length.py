"""Length of the twins: words and model tokens per source, per twin pair, per query.

``sourcebias analyze length`` asks whether an LLM twin is longer or shorter than its original,
and by how much, in the two units that matter: whitespace-separated **words** (what the papers
and Cocktail's length filter count) and **model tokens** under a named tokenizer (what a
retriever sees and truncates; ``--tokenizer minilm`` is the MiniLM retriever's WordPiece). Every
count is of ``field`` of the documents: ``text`` (the body, as the papers' code) or
``title+text`` (what retrievers index), named in every output.

Three levels, each with its own table:

* **per source** (``length_documents``): every document's words and tokens, described per source;
* **per pair** (``length_pairs``): each twin pair's counts and its ratio LLM / human (a human copy
  of 0 words or tokens has no ratio: it is left out of the ratio's statistics and counted); the
  paired LLM − human comparison over pairs — Hedges' g_z and a Wilcoxon signed-rank test (SciPy,
  zero differences dropped, with its n) — from :func:`sourcebias.analysis.effects.compare_paired`;
* **per query** (``length_queries``): for each query of the split, the mean counts of its judged
  documents that have both copies, and the mean per-pair ratio; the same paired comparison with
  the query as the unit (n = queries), which is the unit the retrieval protocol averages over.

Tokens are counted without special tokens (``[CLS]``/``[SEP]``) and without truncation, so a
count is the text's own length, not what fits in the model's window.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from sourcebias.analysis.base import FIELD, SOURCES, Analysis, AnalysisTable, Param, integer, psig, register_analysis, sig, text
from sourcebias.analysis.common import llm_sources, make_result, twin_pairs

#: units counted, in the order of every table and figure
UNITS = ("words", "tokens")


# -- tokenizers -----------------------------------------------------------------------------------
def load_tokenizer(spec: str) -> tuple[Any, dict[str, Any]]:
    """A Hugging Face tokenizer by retriever preset (``minilm``, ``bge-small``, ...), ``smollm2``,
    a Hugging Face name or a local folder, loaded offline when the model is on this machine; and
    its description for the manifest."""
    from transformers import AutoTokenizer

    from sourcebias.models.encoders import PRESETS
    from sourcebias.models.hub import resolve_model
    from sourcebias.models.llm import resolve_lm

    name = PRESETS[spec].model if spec in PRESETS else spec
    if spec.lower() in ("smollm2", "smollm2-135m-instruct"):
        where = resolve_lm(spec, flag="--tokenizer")
    else:
        where = resolve_model(name, what="tokenizer", flag="--tokenizer PATH")
    tok = AutoTokenizer.from_pretrained(where)
    config = {"spec": spec, "name": name, "class": type(tok).__name__, "vocab_size": int(tok.vocab_size), "special_tokens": False, "truncation": False}
    return tok, config


def token_lengths(texts: Sequence[str], tokenizer: Any, *, batch: int = 1024) -> np.ndarray:
    """Tokens of each text under ``tokenizer`` (no special tokens, no truncation)."""
    out = np.zeros(len(texts), dtype=np.int64)
    for start in range(0, len(texts), batch):
        ids = tokenizer(list(texts[start : start + batch]), add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
        out[start : start + len(ids)] = [len(x) for x in ids]
    return out


def word_lengths(texts: Sequence[str]) -> np.ndarray:
    """Whitespace-separated words of each text (``len(text.split())``)."""
    from sourcebias.analysis.quality import word_counts

    return word_counts(texts)


def ratios(llm: Any, human: Any) -> np.ndarray:
    """``llm / human`` per pair; NaN where the human count is 0 (no ratio exists)."""
    a = np.asarray(llm, dtype=float)
    b = np.asarray(human, dtype=float)
    out = np.full(a.shape, np.nan)
    np.divide(a, b, out=out, where=b > 0)
    return out


# -- statistics -----------------------------------------------------------------------------------
def ratio_summary(r: Any, tolerance: float = 0.1) -> dict[str, Any]:
    """Median, geometric mean, quartiles of the finite ratios; the shares of pairs with the LLM
    copy longer, shorter, and within ``1 ± tolerance`` of the human one; how many had no ratio."""
    from sourcebias.analysis.effects import describe_finite

    r = np.asarray(r, dtype=float)
    ok = r[np.isfinite(r)]
    d = describe_finite(r)
    out = {"n": d["n"], "left_out": d["left_out"], "median": d["median"], "q1": d["q1"], "q3": d["q3"], "mean": d["mean"], "min": d["min"], "max": d["max"]}
    if ok.size:
        pos = ok[ok > 0]
        out["geometric_mean"] = float(np.exp(np.mean(np.log(pos)))) if pos.size == ok.size else float("nan")
        out["share_llm_longer"] = float(np.mean(ok > 1))
        out["share_llm_shorter"] = float(np.mean(ok < 1))
        out[f"share_within_{tolerance:g}"] = float(np.mean(np.abs(ok - 1.0) <= tolerance))
    return out


def paired_comparison(llm: Any, human: Any) -> dict[str, Any]:
    """LLM vs human counts over pairs (or queries): mean difference, d_z, Hedges' g_z, paired t
    and Wilcoxon signed-rank (with ``wilcoxon_n``, the non-zero differences) — or, with fewer
    than 2 pairs, ``n`` and a note saying it is undefined."""
    from sourcebias.analysis.effects import compare_paired

    a = np.asarray(llm, dtype=float)
    b = np.asarray(human, dtype=float)
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 2:
        return {"n": int(ok.sum()), "note": "undefined: fewer than 2 pairs"}
    keys = (
        "n",
        "mean_a",
        "mean_b",
        "mean_difference",
        "median_difference",
        "d_z",
        "g_z",
        "g_z_note",
        "paired_t",
        "paired_p",
        "wilcoxon_w",
        "wilcoxon_p",
        "wilcoxon_n",
        "share_a_greater",
    )
    full = compare_paired(a[ok], b[ok], names=("llm", "human"))
    out = {k: full[k] for k in keys if k in full}
    out["mean_llm"], out["mean_human"], out["share_llm_greater"] = out.pop("mean_a"), out.pop("mean_b"), out.pop("share_a_greater")
    return out


# -- the analysis ---------------------------------------------------------------------------------
def length(dataset, tokenizer: str = "minilm", *, sources: Sequence[str] | None = None, field: str = "text", tolerance: float = 0.1):
    """Words and tokens of ``field`` per document, per twin pair (ratio LLM / human) and per
    query (over its judged pairs), with paired effect sizes and Wilcoxon tests; see the module
    docstring. ``tolerance`` sets the band ``1 ± tolerance`` whose share of pairs is reported."""
    import pandas as pd

    from sourcebias.analysis.effects import describe_finite
    from sourcebias.analysis.perplexity import field_texts

    tok, tok_config = load_tokenizer(tokenizer)
    corpus = dataset.corpus
    texts = field_texts(corpus, field)
    counts = {"words": word_lengths(texts), "tokens": token_lengths(texts, tok)}
    docs = pd.DataFrame({"doc_id": corpus.doc_ids, "source": corpus.source_list(), **counts})
    summary: dict[str, Any] = {"field": field, "tokenizer": tok_config["name"], "per_source": {}, "pairs": {}, "queries": {}}
    for s in dataset.sources:
        pos = corpus.positions_of_source(s)
        summary["per_source"][s] = {u: describe_finite(counts[u][pos]) for u in UNITS}
    pair_tables, query_tables = [], []
    for llm in llm_sources(dataset, sources):
        pairs = _pair_table(corpus, counts, dataset.human_source, llm)
        queries = _query_table(dataset, pairs, llm)
        summary["pairs"][llm] = {
            u: {"ratio": ratio_summary(pairs[f"{u}_ratio"], tolerance), "llm_vs_human": paired_comparison(pairs[f"{u}_llm"], pairs[f"{u}_human"])}
            for u in UNITS
        }
        summary["queries"][llm] = _query_summary(queries)
        pair_tables.append(pairs)
        query_tables.append(queries)
    tables = {"length_documents": docs, "length_pairs": pd.concat(pair_tables, ignore_index=True), "length_queries": pd.concat(query_tables, ignore_index=True)}
    parameters = {"tokenizer": tokenizer, "field": field, "tolerance": tolerance}
    return make_result("length", dataset, parameters, {"tokenizer": tok_config}, tables, summary)


def _pair_table(corpus, counts: dict[str, np.ndarray], human: str, llm: str):
    """One row per twin pair of ``llm``: each unit's counts of both copies and their ratio."""
    import pandas as pd

    hp, lp, ids = twin_pairs(corpus, human, llm)
    table = pd.DataFrame({"doc_id": ids, "llm_source": llm})
    for u in UNITS:
        table[f"{u}_human"] = counts[u][hp]
        table[f"{u}_llm"] = counts[u][lp]
        table[f"{u}_ratio"] = ratios(counts[u][lp], counts[u][hp])
    return table


def _query_table(dataset, pairs, llm: str):
    """One row per query of the split with a judged twin pair: its judged pairs and relevant
    pairs, the mean counts of each copy and the mean per-pair ratio."""
    import pandas as pd

    row_of = {d: k for k, d in enumerate(pairs["doc_id"])}
    rows = []
    for q in dataset.qrels:
        judged = [(row_of[d], g) for d, g in dataset.qrels[q].items() if d in row_of]
        if not judged:
            continue
        part = pairs.iloc[[k for k, _ in judged]]
        row: dict[str, Any] = {"query_id": q, "llm_source": llm, "judged_pairs": len(judged), "relevant_pairs": sum(g > 0 for _, g in judged)}
        for u in UNITS:
            row[f"{u}_human_mean"] = float(part[f"{u}_human"].mean())
            row[f"{u}_llm_mean"] = float(part[f"{u}_llm"].mean())
            r = part[f"{u}_ratio"].to_numpy(dtype=float)
            row[f"{u}_ratio_mean"] = float(np.nanmean(r)) if np.isfinite(r).any() else float("nan")
        rows.append(row)
    columns = ["query_id", "llm_source", "judged_pairs", "relevant_pairs", *(f"{u}_{k}" for u in UNITS for k in ("human_mean", "llm_mean", "ratio_mean"))]
    return pd.DataFrame(rows, columns=columns)


def _query_summary(queries) -> dict[str, Any]:
    if not len(queries):
        return {"queries": 0, "note": "no query of the split judges a document with both copies (give --split)"}
    out: dict[str, Any] = {"queries": len(queries), "judged_pairs": int(queries["judged_pairs"].sum())}
    for u in UNITS:
        out[u] = {
            "ratio_mean_median": float(np.nanmedian(queries[f"{u}_ratio_mean"])),
            "llm_vs_human": paired_comparison(queries[f"{u}_llm_mean"], queries[f"{u}_human_mean"]),
        }
    return out


# -- the figure -----------------------------------------------------------------------------------
#: ratio ticks, about an octave apart (finer near 1)
_RATIO_TICKS = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 0.75, 1.0, 1.5, 2.0, 4.0, 8.0, 16.0)


def plot_ratios(pairs, path: str | Path, *, human_source: str = "human", title: str | None = None) -> Path:
    """Histograms of the per-pair ratios LLM / human (words left, tokens right) on a log2 axis,
    one colour per LLM source, with the ratio 1 (grey) and each source's median (dashed)."""
    import matplotlib
    import matplotlib.ticker

    from sourcebias.analysis import figures as fg

    sources = list(dict.fromkeys(pairs["llm_source"]))
    colors = fg.source_colors([human_source, *sources], human_source)
    with matplotlib.rc_context(fg._STYLE):
        fig, axes = fg._figure(2, 3.0)
        for ax, u in zip(axes, UNITS):
            data = {s: fg._finite(pairs.loc[(pairs["llm_source"] == s) & (pairs[f"{u}_ratio"] > 0), f"{u}_ratio"], f"{u} ratios of {s}") for s in sources}
            lo = min(float(a.min()) for a in data.values())
            hi = max(float(a.max()) for a in data.values())
            bins = np.geomspace(min(lo, 0.9), max(hi, 1.1), 41)
            for s, a in data.items():
                med = float(np.median(a))
                ax.hist(a, bins=bins, color=colors[s], alpha=0.55, label=f"{s}\nmedian {med:.2f} (dashed), n = {a.size}")
                ax.axvline(med, color=colors[s], ls="--", lw=1.2)
            ax.axvline(1.0, color=fg.NULL_COLOR, lw=1.2, label="equal length (ratio 1)")
            ax.set_xscale("log", base=2)
            ticks = [t for t in _RATIO_TICKS if bins[0] <= t <= bins[-1]]
            ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(ticks))
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.set_xlabel(f"{u} ratio, LLM / {human_source} (log scale)")
            ax.set_ylabel("number of twin pairs")
            fg._headroom(ax, 1.45)
            ax.legend(loc="upper left")
        fig.suptitle(title or "Twin length ratios", fontsize=9)
        return fg._save(fig, path)


def draw(result, out: Path) -> dict[str, Path]:
    """The figure of a length result (for :func:`sourcebias.analysis.draw.draw`)."""
    field = result.parameters.get("field")
    tok = result.summary.get("tokenizer", "")
    title = f"{result.dataset.get('name', '')}: per-pair length ratios [{field}; tokens: {tok}]"
    return {
        "length_ratios": plot_ratios(
            result.tables["length_pairs"], out / "length_ratios.png", human_source=result.dataset.get("human_source", "human"), title=title
        )
    }


class Length(Analysis):
    """``sourcebias analyze length``."""

    name = "length"
    help = "Words and model tokens per source, per twin pair (ratio LLM / human) and per query, with g_z and Wilcoxon tests."
    model = False
    params: ClassVar[Mapping[str, Param]] = {
        "tokenizer": Param(
            str,
            "minilm",
            "Tokenizer counting model tokens: a retriever preset (minilm, bge-small, ...), "
            "smollm2, a Hugging Face name or a local folder (offline when on this machine).",
        ),
        "tolerance": Param(float, 0.1, "Report the share of pairs whose ratio is within 1 ± this.", min=0.0),
        "field": FIELD,
        "source": SOURCES,
        "split": Param(str | None, None, "Qrels split whose judged pairs give the per-query table (none: no per-query table)."),
    }

    def run(self, dataset, params, options):
        p = params
        return length(dataset, p["tokenizer"], sources=p["source"], field=p["field"], tolerance=p["tolerance"])

    def tables(self, result) -> list[AnalysisTable]:
        s = result.summary
        pairs, queries = [], []
        for llm, units in s["pairs"].items():
            for unit, e in units.items():
                c = e["llm_vs_human"]
                pairs.append(
                    {"source": llm, "unit": unit, **{f"ratio_{k}": v for k, v in e["ratio"].items()}, **c, "note": "" if "g_z" in c else c.get("note", "")}
                )
            q = s["queries"][llm]
            for unit in UNITS:
                if unit in q and "g_z" in q[unit]["llm_vs_human"]:
                    queries.append({"source": llm, "unit": unit, "queries": q["queries"], **q[unit]["llm_vs_human"]})
        columns = [
            text("source", "LLM source"),
            text("unit", "unit"),
            sig("mean_llm", "mean LLM"),
            sig("mean_human", "mean human"),
            sig("ratio_median", "ratio median"),
            sig("ratio_q1", "IQR low"),
            sig("ratio_q3", "IQR high"),
            integer("ratio_left_out", "left out"),
            sig("g_z", "g_z"),
            psig("wilcoxon_p", "Wilcoxon p"),
            integer("wilcoxon_n", "non-zero"),
            integer("n", "pairs"),
            text("note", "note"),
        ]
        out = [
            AnalysisTable(
                "length_pairs",
                "Length of the twin pairs",
                columns,
                pairs,
                "Ratio LLM / human per pair; g_z and the Wilcoxon signed-rank test over the pairs (zero differences left out of it).",
            )
        ]
        if queries:
            columns = [
                text("source", "LLM source"),
                text("unit", "unit"),
                integer("queries", "queries"),
                sig("g_z", "g_z"),
                psig("wilcoxon_p", "Wilcoxon p"),
                integer("wilcoxon_n", "non-zero"),
            ]
            out.append(AnalysisTable("length_queries", "Per query (mean over its judged pairs)", columns, queries))
        return out

    def draw(self, result, out: Path) -> dict[str, Path]:
        return draw(result, out)


register_analysis(Length())

__all__ = ["UNITS", "draw", "length", "load_tokenizer", "paired_comparison", "plot_ratios", "ratio_summary", "ratios", "token_lengths", "word_lengths"]
