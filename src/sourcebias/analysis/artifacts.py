"""``sourcebias analyze artifacts``: perplexity, length and median term IDF per document, compared
across sources with effect sizes, and (given an evaluate result) their correlation with a
retriever's within-query scores (Huang et al. 2026). The BM25 analyzer's terms and Lucene's idf
(:func:`lucene_idf`) make the IDF feature, which the audit's detector reuses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from sourcebias.analysis.base import FIELD, SOURCES, SPLIT, Analysis, AnalysisTable, Param, integer, psig, register_analysis, sig, text
from sourcebias.analysis.common import llm_sources, make_result, twin_pairs
from sourcebias.analysis.perplexity import field_texts, lm_values
from sourcebias.analysis.result import AnalysisResult
from sourcebias.core.errors import ConfigError


def lucene_idf(doc_terms: Sequence[Sequence[str]]) -> dict[str, float]:
    """Lucene's BM25 idf, ln(1 + (N − df + 0.5) / (df + 0.5)), over a collection of term lists."""
    from collections import Counter

    df: Counter[str] = Counter()
    for terms in doc_terms:
        df.update(set(terms))
    n = len(doc_terms)
    return {t: float(np.log1p((n - c + 0.5) / (c + 0.5))) for t, c in df.items()}


def artifacts(
    dataset,
    lm: str | None = "lm:smollm2",
    *,
    run_result: str | Path | None = None,
    retriever: str | None = None,
    setting: str = "mixed",
    top: int = 200,
    sources: Sequence[str] | None = None,
    field: str = "text",
    options: Mapping[str, Any] | None = None,
) -> AnalysisResult:
    """Per document, of its ``field`` (``text``, the default, as the papers' code; or
    ``title+text``): log-perplexity (with ``lm``, built with the model ``options``: ``device``,
    ``batch_size``, ``cache_dir``), length in words and in analyzer terms, and the
    median term IDF (Lucene's BM25 idf over the whole loaded collection, the BM25 analyzer's
    terms, with repetitions). Per source: descriptive statistics; per LLM source vs human:
    Cohen's d, Hedges' g, Welch t and Mann-Whitney U (independent) and the paired versions over
    twin pairs. Values that do not exist (the median IDF of a document without analyzer terms,
    the perplexity of an empty field) are left out of every statistic and counted
    (``left_out``). With ``run_result`` (an ``evaluate`` output folder): the Spearman correlation
    of each artifact with the retriever's scores z-normalised within each query (its top ``top``
    documents per query), pooled over queries, and the mean per-query correlation with a t-test
    over queries (which respects that documents of one query are not independent)."""
    import pandas as pd

    from sourcebias.analysis.effects import describe_finite

    table, models = artifact_table(dataset, lm, field=field, options=options)
    features = [c for c in ("perplexity", "words", "terms", "median_idf") if c in table]
    summary: dict[str, Any] = {
        "features": features,
        "field": field,
        "idf": "ln(1 + (N - df + 0.5) / (df + 0.5)) over the loaded collection; median over a document's terms",
        "left_out": "values that do not exist (median IDF without analyzer terms, perplexity "
        "of an empty field) are left out of every statistic; left_out counts them",
        "per_source": {},
        "comparisons": {},
    }
    comparisons = []
    for f in features:
        summary["per_source"][f] = {s: describe_finite(table.loc[table["source"] == s, f].to_numpy(dtype=float)) for s in dataset.sources}
        comparisons += [_artifact_comparison(dataset, table, f, llm) for llm in llm_sources(dataset, sources)]
    tables = {"artifacts": table, "comparisons": pd.DataFrame(comparisons)}
    parameters: dict[str, Any] = {"lm": lm, "top": top, "field": field}
    if run_result is not None:
        corr, info = _score_correlations(dataset, table, features, run_result, retriever, setting, top)
        tables["correlations"] = corr
        summary["run"] = info
        parameters.update({"run_result": str(run_result), "retriever": info["retriever"], "setting": setting})
    return make_result("artifacts", dataset, parameters, models, tables, summary)


def artifact_table(dataset, lm, *, field, options=None):
    """One row per document: words, analyzer terms, median term IDF (NaN without terms) and,
    with ``lm`` (built with the model ``options``), log-perplexity, all of ``field``; and the
    models used."""
    import pandas as pd

    from sourcebias.retrieval.lexical import EnglishAnalyzer

    corpus = dataset.corpus
    texts = field_texts(corpus, field)
    analyzer = EnglishAnalyzer()
    terms = [analyzer(t) for t in texts]
    idf = lucene_idf(terms)
    median_idf = np.array([np.median([idf[t] for t in ts]) if ts else np.nan for ts in terms])
    table = pd.DataFrame(
        {
            "doc_id": corpus.doc_ids,
            "source": corpus.source_list(),
            "words": np.array([len(t.split()) for t in texts]),
            "terms": np.array([len(ts) for ts in terms]),
            "median_idf": median_idf,
        }
    )
    models: dict[str, Any] = {"analyzer": analyzer.config()}
    if lm:
        scorer, _, ppl, _ = lm_values(corpus, lm, field=field, options=options)
        table["perplexity"] = ppl
        models["lm"] = scorer.config()
    return table, models


def _artifact_comparison(dataset, table, f, llm) -> dict[str, Any]:
    """Feature ``f`` of ``llm`` vs the human source: independent and paired comparisons of the
    finite values, with the counts left out; a comparison with fewer than 2 values per group (or
    pairs) is undefined, and said so (``note``)."""
    from sourcebias.analysis.effects import compare_independent, compare_paired

    human = dataset.human_source
    a = table.loc[table["source"] == llm, f].to_numpy(dtype=float)
    b = table.loc[table["source"] == human, f].to_numpy(dtype=float)
    hp, lp, _ = twin_pairs(dataset.corpus, human, llm)
    va, vb = table[f].to_numpy(dtype=float)[lp], table[f].to_numpy(dtype=float)[hp]
    ok = np.isfinite(va) & np.isfinite(vb)
    row: dict[str, Any] = {
        "feature": f,
        "llm_source": llm,
        "independent_left_out_a": int((~np.isfinite(a)).sum()),
        "independent_left_out_b": int((~np.isfinite(b)).sum()),
        "paired_left_out": int((~ok).sum()),
    }
    notes = []
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if min(a.size, b.size) >= 2:
        row.update({f"independent_{k}": v for k, v in compare_independent(a, b, names=(llm, human)).items() if not isinstance(v, (dict, list))})
    else:
        notes.append("independent comparison undefined: fewer than 2 values in a source")
    if ok.sum() >= 2:
        row.update({f"paired_{k}": v for k, v in compare_paired(va[ok], vb[ok], names=(llm, human)).items() if not isinstance(v, (dict, list))})
    else:
        notes.append("paired comparison undefined: fewer than 2 twin pairs with values")
    if notes:
        row["note"] = "; ".join(notes)
    return row


def _score_correlations(dataset, table, features, run_result, retriever, setting, top):
    import pandas as pd

    from sourcebias.evaluation.results import RunKey, load_result

    res = load_result(run_result)
    names = sorted({k.retriever for k in res.runs})
    if retriever is None:
        if len(names) != 1:
            raise ConfigError(f"{run_result} holds runs of {', '.join(names)}: name one with --retriever")
        retriever = names[0]
    key = RunKey(retriever, setting)
    if key not in res.runs:
        raise ConfigError(f"{run_result} has no run of '{retriever}' on '{setting}' (runs: {', '.join(f'{k.retriever}/{k.setting}' for k in res.runs)})")
    corpus = dataset.corpus if setting in ("mixed",) or len(dataset.sources) == 1 else dataset.sole_corpus(setting)
    run = res.runs[key].bind(corpus)
    # feature values by (doc_id, source)
    index = {(d, s): i for i, (d, s) in enumerate(zip(table["doc_id"], table["source"]))}
    z_all, f_all, qid_all = [], {f: [] for f in features}, []
    for q in run.query_ids:
        pos = run.positions[q][:top]
        sc = np.asarray(run.scores[q][:top], dtype=np.float64)
        if len(sc) < 3 or np.std(sc) == 0:
            continue
        z = (sc - sc.mean()) / sc.std()
        rows = [index[(corpus.doc_ids[p], corpus.source_of(p))] for p in pos.tolist()]
        z_all.append(z)
        qid_all += [q] * len(z)
        for f in features:
            f_all[f].append(table[f].to_numpy(dtype=float)[rows])
    if not z_all:
        raise ConfigError(f"run '{retriever}' has no query with 3 or more differently scored documents")
    z = np.concatenate(z_all)
    out = [_feature_correlation(f, z, z_all, f_all[f]) for f in features]
    info = {"retriever": retriever, "setting": setting, "top": top, "queries": len(z_all), "folder": str(run_result)}
    return pd.DataFrame(out), info


def _feature_correlation(f, z, z_all, values) -> dict[str, Any]:
    """Spearman correlation of feature ``f`` with the within-query z-scores: pooled, and the mean
    per query with a t-test over queries (non-finite values left out)."""
    from scipy import stats

    v = np.concatenate(values)
    ok = np.isfinite(v)
    if ok.sum() < 3 or np.ptp(v[ok]) == 0:  # a constant feature has no correlation
        return {
            "feature": f,
            "spearman_pooled": float("nan"),
            "p_pooled": float("nan"),
            "pairs": int(ok.sum()),
            "spearman_mean_per_query": float("nan"),
            "p_per_query_ttest": float("nan"),
            "queries": 0,
        }
    pooled = stats.spearmanr(z[ok], v[ok])
    per_query: list[float] = []
    for zq, vq in zip(z_all, values):
        m = np.isfinite(vq)
        if m.sum() >= 3 and np.std(vq[m]) > 0 and np.std(zq[m]) > 0:
            per_query.append(stats.spearmanr(zq[m], vq[m]).statistic)
    per_q = np.asarray(per_query, dtype=float)
    t = stats.ttest_1samp(per_q, 0.0) if len(per_q) > 1 else None
    return {
        "feature": f,
        "spearman_pooled": float(pooled.statistic),
        "p_pooled": float(pooled.pvalue),
        "pairs": int(ok.sum()),
        "spearman_mean_per_query": float(per_q.mean()) if len(per_q) else float("nan"),
        "p_per_query_ttest": float(t.pvalue) if t is not None else float("nan"),
        "queries": len(per_q),
    }


class Artifacts(Analysis):
    """``sourcebias analyze artifacts``."""

    name = "artifacts"
    help = (
        "Perplexity, length and median term IDF per document: effect sizes and tests across "
        "sources, and their correlation with a retriever's scores (Huang et al. 2026)."
    )
    params: ClassVar[Mapping[str, Param]] = {
        "lm": Param(str | None, "lm:smollm2", "Language model for perplexity (lm:NAME, mlm:NAME or mlm:from-retriever:RETRIEVER); 'none' to leave it out."),
        "run": Param(
            Path | None,
            None,
            "An evaluate output folder: correlate each artifact with the retriever's within-query z-scores.",
            flags=("--run",),
            metavar="EVALUATE_DIR",
        ),
        "retriever": Param(str | None, None, "Which retriever of --run (when it holds several)."),
        "top": Param(int, 200, "Documents per query of the run used for the correlations.", min=3),
        "field": FIELD,
        "source": SOURCES,
        "split": SPLIT,
    }

    def run(self, dataset, params, options) -> AnalysisResult:
        p = params
        lm = None if (p["lm"] or "").lower() in ("", "none") else p["lm"]
        return artifacts(dataset, lm, run_result=p["run"], retriever=p["retriever"], top=p["top"], sources=p["source"], field=p["field"], options=options)

    def tables(self, result) -> list[AnalysisTable]:
        rows = []
        for row in result.tables["comparisons"].to_dict("records"):
            left = row.get("independent_left_out_a", 0) + row.get("independent_left_out_b", 0)
            rows.append({**row, "left_out": left or None, "note": row.get("note") if isinstance(row.get("note"), str) else ""})
        columns = [
            text("feature", "feature"),
            text("llm_source", "LLM source"),
            sig("independent_hedges_g", "Hedges' g"),
            sig("paired_d_z", "paired d_z"),
            psig("paired_paired_p", "paired p"),
            integer("left_out", "left out"),
            text("note", "note"),
        ]
        out = [
            AnalysisTable(
                "comparisons",
                "Artifacts: LLM vs human",
                columns,
                rows,
                "Hedges' g over the documents of each source; d_z and the paired t-test over twin pairs; documents without a value left out.",
            )
        ]
        if "correlations" in result.tables:
            columns = [
                text("feature", "feature"),
                sig("spearman_pooled", "Spearman (pooled)"),
                sig("spearman_mean_per_query", "mean per query"),
                psig("p_per_query_ttest", "p (t-test over queries)"),
                integer("queries", "queries"),
            ]
            out.append(
                AnalysisTable(
                    "correlations",
                    "Artifacts vs within-query z-scores",
                    columns,
                    result.tables["correlations"].to_dict("records"),
                    "Spearman correlation with the retriever's scores, z-normalised within each query.",
                )
            )
        return out

    def draw(self, result, out: Path) -> dict[str, Path]:
        from sourcebias.analysis.draw import draw_artifacts

        return draw_artifacts(result, out)


register_analysis(Artifacts())
