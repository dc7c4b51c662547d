"""The source-bias evaluation protocol (SPEC §4; Dai et al., KDD 2024, Appendix A.1).

For each retriever:

1. **Mixed corpus.** The union of the chosen sources is ranked once per query. The ranking
   is scored once per *target* source: the target's copies keep their labels, every other
   source's copies keep their rank positions but count as non-relevant (labels masked to 0).
   A further view, target ``all``, counts every source's copies as relevant.
2. **Sole corpora.** Each source alone is indexed and ranked (the "human only" and "LLM only"
   settings), scored against its own labels.
3. **Relative Δ** between the human target and each other target:
   ``(M_human - M_llm) / ((M_human + M_llm) / 2) * 100``; > 0 means human-written documents
   are ranked higher, < 0 means LLM-generated ones are (source bias).
4. **Share@k** ("human rate@k" in Cocktail): the fraction of each source in the top k of the
   mixed ranking, averaged over queries.

Per-query values are kept for significance tests. The evaluated queries are those of the
split with at least one relevant document; every target and setting is averaged over that
same set (a query with no retrieved document scores 0).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from sourcebias.core import progress
from sourcebias.data.corpus import Corpus
from sourcebias.data.dataset import Dataset
from sourcebias.data.qrels import Qrels
from sourcebias.evaluation.measures import DEFAULT_CUTOFFS, Measure, measure_grid, trec_measure_spec
from sourcebias.evaluation.results import ALL, EvaluationResult, MIXED
from sourcebias.retrieval.base import Retriever
from sourcebias.retrieval.run import Run


def target_qrels(corpus: Corpus, qrels: Qrels, target: str, query_ids: Sequence[str]) -> dict[str, dict[str, int]]:
    """Qrels for one target, keyed by corpus position (as strings) for trec_eval.

    Every copy of a judged document present in ``corpus`` is listed; copies of sources other
    than ``target`` get label 0 (unless ``target == "all"``).
    """
    out: dict[str, dict[str, int]] = {}
    sources = corpus.sources
    if target != ALL and target not in sources:
        raise ValueError(f"target '{target}' is not a source of this corpus ({', '.join(sources)})")
    for q in query_ids:
        labels = qrels.get(q, {})
        entry: dict[str, int] = {}
        for doc_id, grade in labels.items():
            for s in sources:
                pos = corpus.position(doc_id, s)
                if pos is not None:
                    entry[str(pos)] = grade if (target == ALL or s == target) else 0
        out[q] = entry
    return out


def trec_run(run: Run, query_ids: Sequence[str]) -> dict[str, dict[str, float]]:
    """The run for trec_eval: positions as document names, and a score that encodes the final
    rank (``depth - rank``), so trec_eval's own re-sorting cannot reorder ties."""
    out: dict[str, dict[str, float]] = {}
    for q in query_ids:
        pos = run.positions.get(q)
        if pos is None or len(pos) == 0:
            continue
        n = len(pos)
        out[q] = {str(p): float(n - r) for r, p in enumerate(pos.tolist())}
    return out


def score_run(
    run: Run,
    qrels: Qrels,
    query_ids: Sequence[str],
    measures: Sequence[Measure],
    targets: Sequence[str],
) -> dict[tuple[str, str], np.ndarray]:
    """Per-query values of each measure for each target: ``{(target, "NDCG@10"): values}``,
    values aligned with ``query_ids`` (0 for a query with no retrieved document)."""
    import pytrec_eval

    spec = trec_measure_spec(measures)
    trun = trec_run(run, query_ids)
    out: dict[tuple[str, str], np.ndarray] = {}
    for target in targets:
        tq = target_qrels(run.corpus, qrels, target, query_ids)
        evaluator = pytrec_eval.RelevanceEvaluator(tq, spec)
        res = evaluator.evaluate(trun)
        for m in measures:
            key = m.trec_key
            out[(target, str(m))] = np.array([res.get(q, {}).get(key, 0.0) for q in query_ids], dtype=np.float64)
    return out


def source_shares(run: Run, query_ids: Sequence[str], cutoffs: Sequence[int]) -> dict[tuple[str, str], np.ndarray]:
    """Per query, the fraction of each source among the top k (``{(source, "Share@k"): values}``).

    The denominator is the number of documents in the top k (fewer than k if fewer were
    retrieved); a query with an empty ranking gets NaN and is left out of the mean.
    """
    codes = run.corpus.source_codes
    n_src = len(run.corpus.sources)
    out: dict[tuple[str, str], np.ndarray] = {}
    for k in cutoffs:
        mat = np.full((len(query_ids), n_src), np.nan)
        for i, q in enumerate(query_ids):
            pos = run.positions.get(q)
            if pos is None or len(pos) == 0:
                continue
            top = codes[pos[:k]]
            mat[i] = np.bincount(top, minlength=n_src) / len(top)
        for j, s in enumerate(run.corpus.sources):
            out[(s, f"Share@{k}")] = mat[:, j]
    return out


def evaluate(
    dataset: Dataset,
    retrievers: Sequence[Retriever],
    *,
    measures: Sequence[Measure] | None = None,
    depth: int = 1000,
    seed: int = 0,
    sole: bool = True,
    exclude_self: bool = False,
    share_cutoffs: Sequence[int] | None = None,
    on_run: Callable[[str, str, Run], None] | None = None,
    keep_runs: bool = True,
) -> EvaluationResult:
    """Run the protocol for each retriever on ``dataset``.

    Parameters
    ----------
    measures:
        Default: NDCG, MAP, Recall and P at 1, 3, 5 and 10.
    depth:
        How many documents each ranking keeps (1000 by default, enough for re-rankers).
    seed:
        Seed of the tie-breaking rule (see :mod:`sourcebias.retrieval.ties`).
    sole:
        Also rank each source alone (the human-only and LLM-only settings).
    exclude_self:
        Leave out documents whose id equals the query id (BEIR's ArguAna/Quora quirk).
    share_cutoffs:
        Cut-offs for Share@k (default: the measures' cut-offs).
    on_run:
        Called as ``on_run(retriever_name, corpus_name, run)`` after each ranking (e.g. to
        write it to disk).
    """
    measures = list(measures) if measures is not None else measure_grid(cutoffs=DEFAULT_CUTOFFS)
    if not measures:
        raise ValueError("no measures to compute")
    if depth < max(m.cutoff for m in measures):
        raise ValueError(f"depth {depth} is smaller than the largest cut-off {max(m.cutoff for m in measures)}")
    share_cutoffs = sorted(set(share_cutoffs if share_cutoffs is not None else (m.cutoff for m in measures)))
    query_ids = dataset.evaluation_queries()
    queries: Mapping[str, str] = {q: dataset.queries[q] for q in query_ids}
    sources = list(dataset.sources)

    settings: list[tuple[str, Corpus, list[str]]] = []
    if len(sources) > 1:
        settings.append((MIXED, dataset.corpus, sources + [ALL]))
        if sole:
            settings += [(s, dataset.sole_corpus(s), [s]) for s in sources]
    else:
        settings.append((sources[0], dataset.corpus, sources))

    result = EvaluationResult(
        dataset=dataset.describe(),
        human_source=dataset.human_source,
        sources=sources,
        measures=list(measures),
        share_cutoffs=share_cutoffs,
        query_ids=query_ids,
        parameters={"depth": depth, "seed": seed, "sole": sole, "exclude_self": exclude_self},
    )
    for retriever in retrievers:
        result.retrievers[retriever.name] = retriever.config()
        for corpus_name, corpus, targets in settings:
            t0 = time.perf_counter()
            run = retriever.retrieve(corpus, queries, depth, seed=seed, exclude_self=exclude_self)
            t1 = time.perf_counter()
            with progress.task(f"{retriever.name}: scoring {corpus_name}", total=1) as t:
                values = score_run(run, dataset.qrels, query_ids, measures, targets)
                if corpus_name == MIXED:
                    values.update(source_shares(run, query_ids, share_cutoffs))
                t.advance()
            t2 = time.perf_counter()
            for (target, metric), v in values.items():
                result.per_query[(retriever.name, corpus_name, target, metric)] = v
            result.timings[f"{retriever.name}/{corpus_name}"] = {"retrieve_s": round(t1 - t0, 3), "evaluate_s": round(t2 - t1, 3)}
            if run.info:
                result.run_info[f"{retriever.name}/{corpus_name}"] = dict(run.info)
            if on_run is not None:
                on_run(retriever.name, corpus_name, run)
            if keep_runs:
                result.runs[(retriever.name, corpus_name)] = run
    return result
