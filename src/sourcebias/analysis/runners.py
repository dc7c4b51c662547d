"""The analyses of ``sourcebias analyze``: each turns a dataset (and a model, and optionally a
run) into an :class:`~sourcebias.analysis.result.AnalysisResult` of tables, a summary and figures.

* :func:`quality` — does each twin keep its original's meaning (Dai et al., KDD 2024, §2.3)?
* :func:`spectrum` — singular values of each source's embeddings (Dai et al., KDD 2024, §4.1).
* :func:`perplexity` — log-perplexity per document under a causal or masked LM (Dai et al., KDD 2024, §4.2).
* :func:`artifacts` — perplexity, length and median term IDF per document, compared across
  sources with effect sizes, and (given an evaluate result) their correlation with a retriever's
  within-query scores (Huang et al. 2026).
* :func:`direction` — the LLM-minus-human direction in embedding space and its share of score
  gaps (Huang et al. 2026).

Every model value (embeddings, perplexities) goes through the embedding store, so reruns and
other analyses reuse it. Every model-backed analysis takes the same ``options`` mapping, the
model options: ``device``, ``batch_size`` and ``cache_dir`` (the store's folder); for the encoder
these are :func:`~sourcebias.retrieval.build_retriever`'s command-wide settings, and the LM scorer
of :func:`perplexity` and :func:`artifacts` is built with the same three (:func:`lm_values`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.analysis.result import AnalysisResult
from sourcebias.core.errors import ConfigError


# -- shared helpers --------------------------------------------------------------------------------
def twin_pairs(corpus, human: str, llm: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Positions ``(human_positions, llm_positions, doc_ids)`` of the documents present in both
    sources, in the human source's order."""
    hp, lp, ids = [], [], []
    for i in corpus.positions_of_source(human).tolist():
        d = corpus.doc_ids[i]
        j = corpus.position(d, llm)
        if j is not None:
            hp.append(i)
            lp.append(j)
            ids.append(d)
    if not ids:
        raise ConfigError(f"no twin pairs: no document of '{llm}' has an original in '{human}'")
    return np.asarray(hp, dtype=np.int64), np.asarray(lp, dtype=np.int64), ids


def dense_model(spec: str, options: Mapping[str, Any] | None = None):
    """The dense first stage of a ``--retriever`` specification (``minilm``, ``st:NAME``, presets)."""
    from sourcebias.retrieval import build_retriever
    from sourcebias.retrieval.base import Pipeline

    r = build_retriever(spec, **dict(options or {}))
    first = r.first if isinstance(r, Pipeline) else r
    if getattr(first, "embedder", None) is None:
        raise ConfigError(f"'{spec}' is not a dense retriever (embedding analyses need an encoder: minilm, st:NAME, a preset)")
    return first


def lm_values(corpus, lm: str, *, field: str = "text", options: Mapping[str, Any] | None = None):
    """The LM scorer of ``lm`` (``lm:NAME``, ``mlm:NAME``, ``mlm:from-retriever:SPEC``) built with
    the model options (``device``, ``batch_size``, ``cache_dir``; any other key is the encoder's,
    and left out here), and per document of ``corpus`` its ``field``'s ``(tokens, values)`` with
    the store's statistics, through the store in ``cache_dir``: ``(scorer, tokens, values, stats)``."""
    from sourcebias.analysis.perplexity import build_lm_scorer, document_values

    opts = dict(options or {})
    scorer = build_lm_scorer(lm, batch_size=opts.get("batch_size"), device=opts.get("device"), cache_dir=opts.get("cache_dir"), field=field)
    tokens, values, stats = document_values(corpus, scorer, cache_dir=opts.get("cache_dir"))
    return scorer, tokens, values, stats


def _llm_sources(dataset, sources: Sequence[str] | None) -> list[str]:
    others = list(sources) if sources else dataset.other_sources
    bad = [s for s in others if s not in dataset.sources or s == dataset.human_source]
    if bad:
        raise ConfigError(f"not an LLM source of this dataset: {', '.join(bad)} (sources: {', '.join(dataset.sources)})")
    if not others:
        raise ConfigError("the dataset has no LLM source to compare with the human one")
    return others


def _result(analysis: str, dataset, parameters: dict, models: dict, tables: dict, summary: dict) -> AnalysisResult:
    from sourcebias.evaluation.protocol import json_safe

    return AnalysisResult(
        analysis=analysis,
        dataset=json_safe(dataset.describe()),
        parameters=json_safe(parameters),
        models=json_safe(models),
        tables=tables,
        summary=json_safe(summary),
    )


# -- quality ---------------------------------------------------------------------------------------
def quality(
    dataset,
    model: str = "minilm",
    *,
    sources: Sequence[str] | None = None,
    seed: int = 0,
    random_pairs: int | None = None,
    tsne_sample: int = 2000,
    field: str = "text",
    options: Mapping[str, Any] | None = None,
) -> AnalysisResult:
    """Per twin pair: term Jaccard and overlap (the BM25 analyzer's terms), words and tokens of
    each copy, embedding cosine; cosine of seeded random pairs as the baseline; a t-SNE map of a
    seeded sample of both corpora. Every measure is computed on ``field`` of the documents
    (``text``, the default, as the papers' code; or ``title+text``). A pair without analyzer
    terms has no Jaccard (or overlap): the means are over the pairs that have one, and the
    count left out is reported."""
    import pandas as pd

    from sourcebias.analysis.perplexity import field_texts
    from sourcebias.retrieval.lexical import EnglishAnalyzer

    retriever = dense_model(model, options)
    corpus = dataset.corpus
    texts = field_texts(corpus, field)
    analyzer = EnglishAnalyzer()
    rows, summary, maps = [], {"model": retriever.name, "field": field, "sources": {}}, {}
    human = dataset.human_source
    for llm in _llm_sources(dataset, sources):
        pair_rows, summary["sources"][llm], maps[llm] = _quality_pairs(corpus, texts, human, llm, retriever, analyzer, seed=seed, random_pairs=random_pairs)
        rows += pair_rows
    tsne, perp = _tsne_table(corpus, texts, [human, *_llm_sources(dataset, sources)], retriever, sample=tsne_sample, seed=seed)
    result = _result(
        "quality",
        dataset,
        {
            "model": model,
            "seed": seed,
            "random_pairs": random_pairs,
            "tsne_sample": tsne_sample,
            "tsne_perplexity": perp,
            "field": field,
            "analyzer": analyzer.config(),
        },
        {"encoder": retriever.config()},
        {"quality": pd.DataFrame(rows), "tsne": tsne},
        summary,
    )
    result.arrays["cosines"] = maps  # matched and random-pair cosines, for the figure
    return result


def _tsne_table(corpus, texts: Sequence[str], sources: Sequence[str], retriever, *, sample: int, seed: int) -> tuple[Any, float]:
    """The t-SNE map of a seeded sample of ``sample`` documents of every source (all of a smaller
    source), embedded by ``retriever``: its table (source, x, y) and the perplexity used."""
    import pandas as pd

    from sourcebias.analysis import quality as q
    from sourcebias.core import progress

    rng = np.random.default_rng(seed)
    emb = {}
    for s in sources:
        pos = corpus.positions_of_source(s)
        if len(pos) > sample:
            pos = np.sort(rng.choice(pos, size=sample, replace=False))
        emb[s] = retriever.embed([texts[i] for i in pos], "document")
    n_map = sum(len(e) for e in emb.values())
    perp = float(min(30.0, max(1.0, (n_map - 1) / 3)))  # scikit-learn's default, below N for tiny corpora
    with progress.task(f"t-SNE of {n_map:,} documents", total=1, unit="map") as t:  # long (tens of seconds), one call
        coords, labels = q.tsne_map(emb, seed=seed, perplexity=perp)
        t.advance()
    return pd.DataFrame({"source": labels, "x": coords[:, 0], "y": coords[:, 1]}), perp


def finite_mean(values: Any) -> tuple[float, int]:
    """The mean of the finite values and how many were left out (NaN: no values)."""
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(v)
    return (float(v[ok].mean()) if ok.any() else float("nan")), int((~ok).sum())


def _quality_pairs(corpus, texts, human, llm, retriever, analyzer, *, seed, random_pairs):
    """The rows, the summary entry and the cosines (for the figure) of one LLM source's twin pairs."""
    from sourcebias.analysis import quality as q

    hp, lp, ids = twin_pairs(corpus, human, llm)
    th, tl = [texts[i] for i in hp], [texts[i] for i in lp]
    e_h = retriever.embed(th, "document")
    e_l = retriever.embed(tl, "document")
    terms = q.term_similarity(tl, th, analyzer)
    cos = q.pair_cosines(e_l, e_h)
    rnd_cos = q.random_pair_cosines(e_l, e_h, n_pairs=random_pairs, seed=seed)["cosine"]
    tok = _tokenizer_counter(retriever)
    words_h, words_l = q.word_counts(th), q.word_counts(tl)
    toks_h, toks_l = q.token_counts(th, tok), q.token_counts(tl, tok)
    rows = [
        {
            "doc_id": d,
            "llm_source": llm,
            "jaccard": terms["jaccard"][k],
            "overlap": terms["overlap"][k],
            "cosine": cos[k],
            "words_human": int(words_h[k]),
            "words_llm": int(words_l[k]),
            "tokens_human": int(toks_h[k]),
            "tokens_llm": int(toks_l[k]),
        }
        for k, d in enumerate(ids)
    ]
    jaccard, jaccard_out = finite_mean(terms["jaccard"])
    overlap, overlap_out = finite_mean(terms["overlap"])
    entry = {
        "pairs": len(ids),
        "jaccard_mean": jaccard,
        "jaccard_left_out": jaccard_out,
        "overlap_mean": overlap,
        "overlap_left_out": overlap_out,
        "left_out_reason": "pairs without analyzer terms (Jaccard: in neither copy; overlap: in the human copy) have no value and are left out of the means",
        "cosine_matched_mean": float(np.mean(cos)),
        "cosine_matched_std": float(np.std(cos, ddof=1)) if len(cos) > 1 else 0.0,
        "cosine_random_mean": float(np.mean(rnd_cos)),
        "cosine_random_std": float(np.std(rnd_cos, ddof=1)) if len(rnd_cos) > 1 else 0.0,
        "random_pairs": len(rnd_cos),
        "words_human_mean": float(np.mean(words_h)),
        "words_llm_mean": float(np.mean(words_l)),
        "tokens_human_mean": float(np.mean(toks_h)),
        "tokens_llm_mean": float(np.mean(toks_l)),
        "identical_texts": int(sum(a == b for a, b in zip(th, tl))),
    }
    return rows, entry, {"matched": cos, "random": rnd_cos}


def _tokenizer_counter(retriever):
    """A function text -> tokens of the retriever's own tokenizer (for token lengths)."""
    enc = retriever.encoder

    def tokens(text: str):
        st = enc._model("document") if hasattr(enc, "_model") else None
        if st is None:
            return text.split()
        return st.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]

    return tokens


# -- spectrum --------------------------------------------------------------------------------------
def spectrum(
    dataset, model: str = "minilm", *, sources: Sequence[str] | None = None, center: bool = False, options: Mapping[str, Any] | None = None
) -> AnalysisResult:
    """Singular values of each source's embedding matrix over the same documents (the twin
    pairs, in the same order), and each LLM source's values relative to the human source's."""
    import pandas as pd

    from sourcebias.analysis import spectrum as sp

    retriever = dense_model(model, options)
    corpus = dataset.corpus
    texts = corpus.retrieval_texts()
    human = dataset.human_source
    llms = _llm_sources(dataset, sources)
    common: set[str] = set.intersection(*(set(twin_pairs(corpus, human, llm)[2]) for llm in llms))  # llms is never empty
    ids = [d for d in corpus.doc_ids if d in common and corpus.position(d, human) is not None]
    ids = list(dict.fromkeys(ids))
    emb = {s: retriever.embed([texts[corpus.position(d, s)] for d in ids], "document") for s in [human, *llms]}
    table = pd.DataFrame(sp.spectrum_table(emb, reference=human, center=center))
    summary: dict[str, Any] = {"model": retriever.name, "documents": len(ids), "centered": center, "sources": {}}
    for llm in llms:
        rel = table[table["source"] == llm]["relative"].to_numpy()
        summary["sources"][llm] = sp.ratio_summary(rel)
    return _result("spectrum", dataset, {"model": model, "center": center}, {"encoder": retriever.config()}, {"spectrum": table}, summary)


# -- perplexity ------------------------------------------------------------------------------------
def perplexity(
    dataset,
    lm: str = "lm:smollm2",
    *,
    sources: Sequence[str] | None = None,
    field: str = "text",
    options: Mapping[str, Any] | None = None,
) -> AnalysisResult:
    """Log-perplexity of every document's ``field`` (``text``, the default, as the papers' code;
    or ``title+text``) (``lm:`` causal, ``mlm:`` masked pseudo-perplexity) under the LM built with
    the model ``options`` (``device``, ``batch_size``, ``cache_dir``); per source mean and
    spread; over twin pairs the mean difference (LLM − human) with a paired t-test, a Wilcoxon
    signed-rank test and the paired effect size. A document without a value (an empty field)
    is left out, and counted (``left_out``)."""
    import pandas as pd

    from sourcebias.analysis.effects import compare_paired, describe_finite

    corpus = dataset.corpus
    scorer, tokens, values, stats = lm_values(corpus, lm, field=field, options=options)
    table = pd.DataFrame({"doc_id": corpus.doc_ids, "source": corpus.source_list(), "tokens": tokens, "value": values})
    summary: dict[str, Any] = {
        "model": lm,
        "field": field,
        "value": "mean negative log-likelihood per token (nats)",
        "per_source": {},
        "pairs": {},
        "cache": stats,
    }
    for s in dataset.sources:
        summary["per_source"][s] = describe_finite(values[corpus.positions_of_source(s)])
    human = dataset.human_source
    for llm in _llm_sources(dataset, sources):
        hp, lp, _ = twin_pairs(corpus, human, llm)
        ok = np.isfinite(values[hp]) & np.isfinite(values[lp])
        if ok.sum() < 2:
            summary["pairs"][llm] = {"n": int(ok.sum()), "left_out": int((~ok).sum()), "note": "undefined: fewer than 2 twin pairs with a value in both copies"}
            continue
        cmp = compare_paired(values[lp][ok], values[hp][ok], names=(llm, human))
        cmp["share_llm_lower"] = float(np.mean(values[lp][ok] < values[hp][ok]))
        cmp["left_out"] = int((~ok).sum())
        summary["pairs"][llm] = cmp
    return _result(
        "perplexity",
        dataset,
        {"model": lm, "field": field, "max_tokens": getattr(scorer, "max_tokens", None)},
        {"lm": scorer.config()},
        {"perplexity": table},
        summary,
    )


# -- artifacts -------------------------------------------------------------------------------------
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

    table, models = _artifact_table(dataset, lm, field=field, options=options)
    features = [c for c in ("perplexity", "words", "terms", "median_idf") if c in table]
    summary: dict[str, Any] = {
        "features": features,
        "field": field,
        "idf": "ln(1 + (N - df + 0.5) / (df + 0.5)) over the loaded collection; median over a document's terms",
        "left_out": "values that do not exist (median IDF without analyzer terms, perplexity of an empty field) are left out of every statistic; left_out counts them",
        "per_source": {},
        "comparisons": {},
    }
    comparisons = []
    for f in features:
        summary["per_source"][f] = {s: describe_finite(table.loc[table["source"] == s, f].to_numpy(dtype=float)) for s in dataset.sources}
        comparisons += [_artifact_comparison(dataset, table, f, llm) for llm in _llm_sources(dataset, sources)]
    tables = {"artifacts": table, "comparisons": pd.DataFrame(comparisons)}
    parameters: dict[str, Any] = {"lm": lm, "top": top, "field": field}
    if run_result is not None:
        corr, info = _score_correlations(dataset, table, features, run_result, retriever, setting, top)
        tables["correlations"] = corr
        summary["run"] = info
        parameters.update({"run_result": str(run_result), "retriever": info["retriever"], "setting": setting})
    return _result("artifacts", dataset, parameters, models, tables, summary)


def _artifact_table(dataset, lm, *, field, options=None):
    """One row per document: words, analyzer terms, median term IDF (NaN without terms) and,
    with ``lm`` (built with the model ``options``), log-perplexity, all of ``field``; and the
    models used."""
    import pandas as pd

    from sourcebias.analysis.perplexity import field_texts
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


def _held_out_share(q_vecs, e_l, e_h, rows, seed) -> dict[str, Any]:
    """The share of the score gaps along a direction estimated on a seeded half of the twin pairs,
    over the relevant triples whose pair is in the other half. Undefined (``None``, with
    ``held_out_note``) when either half is empty — e.g. a single twin pair, or every judged pair
    drawn into the estimation half."""
    from sourcebias.analysis import direction as dr

    n = len(e_l)
    half = np.random.default_rng(seed).permutation(n) < n // 2
    held = ~half[rows]
    if not half.any() or not held.any():
        why = (
            f"the estimation half is empty ({n} twin pair{'s' if n != 1 else ''})"
            if not half.any()
            else f"no judged pair falls in the held-out half ({len(rows)} judged relevant pair{'s' if len(rows) != 1 else ''})"
        )
        return {"share_along_held_out": None, "held_out_triples": 0, "held_out_note": f"undefined: {why}"}
    est_a = dr.estimate_direction(e_l[half], e_h[half], n_permutations=0, seed=seed)
    out = dr.score_gap_decomposition(q_vecs[held], e_l[rows][held], e_h[rows][held], est_a.unit)
    return {"share_along_held_out": out["share_along"], "held_out_triples": out["triples"]}


# -- direction -------------------------------------------------------------------------------------
def direction(
    dataset, model: str = "minilm", *, sources: Sequence[str] | None = None, permutations: int = 1000, seed: int = 0, options: Mapping[str, Any] | None = None
) -> AnalysisResult:
    """The mean LLM − human embedding difference over twin pairs, its consistency and sign-flip
    p-values; with judged queries, the share of each relevant pair's score gap that lies along it
    — in-sample, and out-of-sample (direction from a seeded half of the pairs, gaps of the other)."""
    import pandas as pd

    from sourcebias.analysis import direction as dr

    retriever = dense_model(model, options)
    corpus = dataset.corpus
    texts = corpus.retrieval_texts()
    human = dataset.human_source
    summary: dict[str, Any] = {"model": retriever.name, "sources": {}}
    pair_rows, gap_rows = [], []
    estimates = {}
    for llm in _llm_sources(dataset, sources):
        hp, lp, ids = twin_pairs(corpus, human, llm)
        e_h = retriever.embed([texts[i] for i in hp], "document")
        e_l = retriever.embed([texts[i] for i in lp], "document")
        est = dr.estimate_direction(e_l, e_h, n_permutations=permutations, seed=seed)
        entry: dict[str, Any] = dict(est.summary())
        for k, d in enumerate(ids):
            pair_rows.append({"doc_id": d, "llm_source": llm, "projection": float(est.projections[k]), "cosine": float(est.cosines[k])})
        # relevant triples: (query, human doc, twin) for judged relevant pairs with both copies
        row_of = {d: k for k, d in enumerate(ids)}
        triples = [(q, row_of[d]) for q in dataset.evaluation_queries() for d, g in dataset.qrels[q].items() if g > 0 and d in row_of]
        if triples:
            q_vecs = retriever.embed([dataset.queries[q] for q, _ in triples], "query")
            rows = np.array([k for _, k in triples])
            ins = dr.score_gap_decomposition(q_vecs, e_l[rows], e_h[rows], est.unit)
            entry["score_gap"] = {
                "triples": ins["triples"],
                "mean_gap": ins["mean_gap"],
                "mean_along": ins["mean_along"],
                "share_along_in_sample": ins["share_along"],
                **_held_out_share(q_vecs, e_l, e_h, rows, seed),
                "share_llm_scored_higher": float(np.mean(ins["gap"] > 0)),
            }
            for (q, k), g, a, r in zip(triples, ins["gap"], ins["along"], ins["residual"]):
                gap_rows.append({"query_id": q, "doc_id": ids[k], "llm_source": llm, "gap": float(g), "along": float(a), "residual": float(r)})
        summary["sources"][llm] = entry
        estimates[llm] = est
    tables = {"direction_pairs": pd.DataFrame(pair_rows)}
    if gap_rows:
        tables["score_gaps"] = pd.DataFrame(gap_rows)
    result = _result("direction", dataset, {"model": model, "permutations": permutations, "seed": seed}, {"encoder": retriever.config()}, tables, summary)
    result.arrays["direction"] = estimates  # the null distributions, for the figure
    return result
