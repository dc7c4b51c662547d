"""The source-bias evaluation protocol (Dai et al., KDD 2024, §3.1; the toy example of its Appendix A, A.1 in the arXiv version).

For each retriever (or each given run):

1. **Mixed corpus.** The union of the chosen sources is ranked once per query. The ranking
   is scored once per *target* source: the target's copies keep their labels, every other
   source's copies keep their rank positions but count as non-relevant (labels masked to 0).
   A further view, target ``all``, counts every source's copies as relevant.
2. **Sole corpora.** Each source alone is indexed and ranked (the "human only" and "LLM only"
   settings), scored against its own labels. (Not for runs given from files: they rank what
   they rank.)
3. **Source measures** (``Share@k``, ...) are computed on the mixed ranking, per source.
4. **Relative Δ** between the human target and each other target (:mod:`.results`). The
   statistics (paired tests, CIs, twin preference, ΔNDSR) are computed from the result by the
   statistic registry (:mod:`sourcebias.evaluation.stats`).

The evaluated queries are those of the split with at least one relevant document; every target
and setting is averaged over that same set (a query with no retrieved document scores 0). The
judgements are the dataset's after its orphan rule (:mod:`sourcebias.data.pairing`): by default
a judged original without a copy in every source is left out, so no source gets credit that the
others cannot earn; the rule and its counts travel in ``result.parameters`` and ``result.dataset``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sourcebias.core import progress
from sourcebias.core.errors import ConfigError
from sourcebias.core.sampling import check_sample_size, seeded_sample
from sourcebias.data.corpus import Corpus
from sourcebias.data.dataset import Dataset, require_evaluable
from sourcebias.data.qrels import Qrels
from sourcebias.evaluation.depth import INFO_KEY, beyond, depth_summary
from sourcebias.evaluation.masking import masked_qrels, masked_qrels_by_target
from sourcebias.evaluation.measures import DEFAULT_CUTOFFS, DEFAULT_MEASURES, Measure, SourceMeasureKind, measure_grid, trec_depth, trec_measure_spec
from sourcebias.evaluation.results import ALL, MIXED, EvaluationResult, Key, RunKey
from sourcebias.retrieval.base import Retriever, with_stage_after_first
from sourcebias.retrieval.run import Run
from sourcebias.retrieval.stages import SelfMatchFilter


def target_qrels(corpus: Corpus, qrels: Qrels, target: str, query_ids: Sequence[str]) -> dict[str, dict[str, int]]:
    """Qrels for one target, keyed by corpus position (as strings) for trec_eval.

    Every copy of a judged document present in ``corpus`` is listed; copies of sources other than
    ``target`` get label 0 (unless ``target == "all"``); see :mod:`.masking` (Dai et al., KDD 2024,
    §3.1).

    Args:
        corpus: The corpus ranked.
        qrels: The judgements (on originals' ids).
        target: A source, or ``"all"``.
        query_ids: The queries evaluated.

    Returns:
        ``{query_id: {str(position): grade}}``.
    """
    return masked_qrels(corpus, qrels, target, query_ids, all_target=ALL)


def trec_run(run: Run, query_ids: Sequence[str], depth: int | None = None) -> dict[str, dict[str, float]]:
    """The run for trec_eval, with scores that encode the final rank.

    Positions become document names, and the score is ``depth - rank``, so trec_eval's own
    re-sorting cannot reorder ties.

    Args:
        run: A tie-broken run.
        query_ids: The queries evaluated (those without a ranking are left out).
        depth: Only the top ``depth`` documents of each ranking (all of them by default; the
            measures' :func:`~sourcebias.evaluation.measures.trec_depth`).

    Returns:
        ``{query_id: {str(position): score}}``.
    """
    out: dict[str, dict[str, float]] = {}
    names: dict[int, str] = {}  # a position's document name, made once
    name = names.__getitem__
    longest = min(max((len(p) for p in run.positions.values()), default=0), depth if depth is not None else len(run.corpus))
    score = [float(i) for i in range(longest + 1)].__getitem__  # one float object per rank, shared by all queries
    for q in query_ids:
        pos = run.positions.get(q)
        if pos is None or len(pos) == 0:
            continue
        top = pos[:depth].tolist()
        for p in top:
            if p not in names:
                names[p] = str(p)
        out[q] = dict(zip(map(name, top), map(score, range(len(top), 0, -1))))  # n - rank, rank from 0
    return out


def score_run(
    run: Run, qrels: Qrels, query_ids: Sequence[str], measures: Sequence[Measure], targets: Sequence[str], *, source_measures: bool = True
) -> dict[tuple[str, str], np.ndarray]:
    """Per-query values of each measure on one run.

    Args:
        run: The run.
        qrels: The judgements.
        query_ids: The queries evaluated; the values are aligned with them.
        measures: The measures (target measures need labels; source measures do not).
        targets: The targets of the target measures (sources, and ``"all"``).
        source_measures: Also compute the source measures (``Share``, ``NDSR``).

    Returns:
        ``{(target, "NDCG@10"): values}`` for the target measures and every target, and ``{(source,
        "Share@3"): values}`` for the source measures; 0 for a query with no retrieved document, NaN
        where a source measure is undefined, and for every query where its cut-off lies beyond the
        run's longest ranking (:mod:`sourcebias.evaluation.depth`: the share would be the share
        of the run's depth under another name).

    Raises:
        ConfigError: A measure of scope ``source`` whose kind is not a
            :class:`~sourcebias.evaluation.measures.SourceMeasureKind`.
    """
    import pytrec_eval

    target_ms = [m for m in measures if m.scope == "target"]
    out: dict[tuple[str, str], np.ndarray] = {}
    if target_ms:
        spec = trec_measure_spec(target_ms)
        trun = trec_run(run, query_ids, trec_depth(target_ms))
        by_target = masked_qrels_by_target(run.corpus, qrels, targets, query_ids, all_target=ALL)  # as target_qrels, each target
        for target in targets:
            res = pytrec_eval.RelevanceEvaluator(by_target[target], spec).evaluate(trun)
            rows = [res.get(q, {}) for q in query_ids]  # aligned with query_ids once per target
            for m in target_ms:
                get = m.trec_key
                out[(target, str(m))] = np.fromiter((r.get(get, 0.0) for r in rows), dtype=np.float64, count=len(rows))
    if source_measures:
        depth = depth_summary(run, query_ids, ())
        for m in measures:
            if m.scope != "source":
                continue
            kind = m.kind
            if not isinstance(kind, SourceMeasureKind):
                raise ConfigError(f"measure {m}: a kind of scope 'source' must subclass SourceMeasureKind (it has no per_query)")
            mat = kind.per_query(run, query_ids, m.cutoff) if not beyond(depth, m.cutoff) else np.full((len(query_ids), len(run.corpus.sources)), np.nan)
            for j, s in enumerate(run.corpus.sources):
                out[(s, str(m))] = mat[:, j]
    return out


def json_safe(obj: Any) -> Any:
    """``obj`` as it reads back from JSON, so that a saved and reloaded result compares equal.

    Args:
        obj: A JSON-able value (tuples become lists, paths and other objects strings).

    Returns:
        The value after a JSON round trip.
    """
    return json.loads(json.dumps(obj, default=str))


def evaluate(
    dataset: Dataset,
    retrievers: Sequence[Retriever] = (),
    *,
    runs: Mapping[str, Run] | Sequence[Run] = (),
    measures: Sequence[Measure] | None = None,
    depth: int = 1000,
    seed: int = 0,
    sole: bool = True,
    exclude_self: bool = False,
    keep_runs: bool = True,
    max_queries: int | None = None,
) -> EvaluationResult:
    """Run the protocol for each retriever, and for each given run, on ``dataset``.

    Args:
        dataset: The loaded dataset; it must have a query to evaluate (:func:`~sourcebias.data.require_evaluable`).
        retrievers: Retrievers or pipelines; each ranks the mixed corpus and (with ``sole``) each source alone.
        runs: Rankings of the mixed corpus made by any system (e.g. :meth:`Run.from_trec`), named by the
            mapping's keys or their ``name``; each must rank ``dataset.corpus`` (or is bound to it).
        measures: Default: NDCG, MAP, Recall, P and Share at 1, 3, 5 and 10.
        depth: How many documents each ranking keeps (1000 by default, enough for re-rankers).
        seed: Seed of the tie-breaking rule (see :mod:`sourcebias.retrieval.ties`).
        sole: Also rank each source alone (the human-only and LLM-only settings).
        exclude_self: Leave out documents whose id equals the query id (BEIR's ArguAna/Quora quirk): a
            :class:`~sourcebias.retrieval.stages.SelfMatchFilter` right after each first stage.
        keep_runs: Keep the rankings in ``result.runs``.
        max_queries: Evaluate a seeded sample of this many of the queries the split can evaluate
            (:func:`~sourcebias.core.sampling.seeded_sample` with ``seed``; a larger sample holds a
            smaller one); their ids are ``result.query_ids`` and ``parameters["query_sample"]``.

    Returns:
        The :class:`~sourcebias.evaluation.results.EvaluationResult`.

    Raises:
        ConfigError: no measures, a depth below a cut-off, two systems of one name, ``max_queries`` below 1.
        DataError: no query of the split can be evaluated (naming the qrels file).
    """
    measures = _checked_measures(measures, depth)
    run_map = _named_runs(retrievers, runs)
    evaluable = require_evaluable(dataset)
    query_ids, sample = _sampled(evaluable, max_queries, seed)
    queries: Mapping[str, str] = {q: dataset.queries[q] for q in query_ids}
    settings = _settings(dataset, sole)
    result = EvaluationResult(
        dataset=json_safe(dataset.describe()),
        human_source=dataset.human_source,
        sources=list(dataset.sources),
        measures=measures,
        query_ids=query_ids,
        parameters={"depth": depth, "seed": seed, "sole": sole, "exclude_self": exclude_self, "orphans": dataset.orphans.get("policy", "drop"), **sample},
    )
    recorder = _Recorder(result, dataset.qrels, settings[0][0], keep_runs)
    for retriever in retrievers:
        recorder.rank(retriever, settings, queries, depth=depth, seed=seed, exclude_self=exclude_self)
    for name, run in run_map.items():
        run = _given_run(run, name, dataset, queries, depth=depth, seed=seed, exclude_self=exclude_self, evaluable=evaluable)
        result.retrievers[name] = json_safe({"name": name, "class": "Run", "file": run.info.get("source_file"), "docnos": run.info.get("docnos")})
        recorder.record(name, settings[0][0], run, settings[0][2], None)
    return result


def _sampled(evaluable: list[str], max_queries: int | None, seed: int) -> tuple[list[str], dict[str, Any]]:
    """The queries to evaluate and the sample's parameters.

    All the queries the split can evaluate and no parameters (a result without a sample reads as
    before), or a seeded sample of them and what it was drawn with.
    """
    if max_queries is None:
        return evaluable, {}
    check_sample_size(max_queries, "max_queries")
    ids = seeded_sample(evaluable, max_queries, seed)
    return ids, {"max_queries": max_queries, "queries_evaluable": len(evaluable), "query_sample": list(ids)}


def _checked_measures(measures: Sequence[Measure] | None, depth: int) -> list[Measure]:
    measures = list(measures) if measures is not None else measure_grid(DEFAULT_MEASURES, DEFAULT_CUTOFFS)
    if not measures:
        raise ConfigError("no measures to compute")
    if depth < max(m.cutoff for m in measures):
        raise ConfigError(f"depth {depth} is smaller than the largest cut-off {max(m.cutoff for m in measures)}")
    return measures


def _named_runs(retrievers: Sequence[Retriever], runs: Mapping[str, Run] | Sequence[Run]) -> dict[str, Run]:
    """The given runs by name; two systems (retrievers or runs) of one name are refused."""
    run_map: dict[str, Run] = dict(runs) if isinstance(runs, Mapping) else {r.name: r for r in runs}
    names = [r.name for r in retrievers] + (list(runs) if isinstance(runs, Mapping) else [r.name for r in runs])
    if len(set(names)) != len(names):
        raise ConfigError(f"two systems have the same name: {', '.join(names)}")
    return run_map


def _settings(dataset: Dataset, sole: bool) -> list[tuple[str, Corpus, list[str]]]:
    """``(setting, corpus, targets)``.

    The mixed corpus first (all sources and ``all`` as targets), then, with ``sole`` and several
    sources, each source alone.
    """
    sources = list(dataset.sources)
    if len(sources) == 1:
        return [(sources[0], dataset.corpus, sources)]
    settings: list[tuple[str, Corpus, list[str]]] = [(MIXED, dataset.corpus, sources + [ALL])]
    return settings + ([(s, dataset.sole_corpus(s), [s]) for s in sources] if sole else [])


def _given_run(
    run: Run, name: str, dataset: Dataset, queries: Mapping[str, str], *, depth: int, seed: int, exclude_self: bool, evaluable: Sequence[str]
) -> Run:
    """A given run bound to the dataset's corpus, restricted to the evaluated queries and cut at ``depth``.

    Its info counts the queries it has that are not evaluated (apart from those a sample left
    out, counted on their own when there is a sample), and those it lacks.
    """
    if run.corpus is not dataset.corpus:
        run = run.bind(dataset.corpus)
    if exclude_self:
        run = SelfMatchFilter().apply(run, queries, seed=seed)
    info = dict(run.info)
    info["queries_in_run"] = len(run)
    can = set(evaluable)
    info["queries_not_evaluated"] = sum(1 for q in run.query_ids if q not in can)  # not in the split, or without a relevant document
    if len(can) > len(queries):
        info["queries_not_sampled"] = sum(1 for q in run.query_ids if q in can and q not in queries)
    info["evaluated_queries_without_ranking"] = sum(1 for q in queries if q not in run.positions)
    run = run.restrict(list(queries)).cut(depth)
    run.name, run.info = name, info
    return run


class _Recorder:
    """Scores each ranking and files its values, timings, info and (with ``keep_runs``) the run."""

    def __init__(self, result: EvaluationResult, qrels: Qrels, mixed_setting: str, keep_runs: bool) -> None:
        self.result, self.qrels, self.mixed_setting, self.keep_runs = result, qrels, mixed_setting, keep_runs

    def rank(
        self, retriever: Retriever, settings: list[tuple[str, Corpus, list[str]]], queries: Mapping[str, str], *, depth: int, seed: int, exclude_self: bool
    ) -> None:
        """Rank every setting's corpus with ``retriever`` (self-matches filtered after its first stage with ``exclude_self``) and record each ranking."""
        self.result.retrievers[retriever.name] = json_safe(retriever.config())
        system = with_stage_after_first(retriever, SelfMatchFilter()) if exclude_self else retriever
        for setting, corpus, targets in settings:
            t0 = time.perf_counter()
            run = system.retrieve(corpus, queries, depth, seed=seed)
            run.name = retriever.name
            self.record(retriever.name, setting, run, targets, time.perf_counter() - t0)

    def record(self, name: str, setting: str, run: Run, targets: list[str], retrieve_s: float | None) -> None:
        result = self.result
        t1 = time.perf_counter()
        with progress.task(f"{name}: scoring {setting}", total=1) as t:
            values = score_run(run, self.qrels, result.query_ids, result.measures, targets, source_measures=setting == self.mixed_setting)
            t.advance()
        for (target, metric), v in values.items():
            result.per_query[Key(name, setting, target, metric)] = v
        key = RunKey(name, setting)
        timing = {"evaluate_s": round(time.perf_counter() - t1, 3)}
        result.timings[key] = {"retrieve_s": round(retrieve_s, 3), **timing} if retrieve_s is not None else timing
        result.run_info[key] = json_safe({**run.info, INFO_KEY: depth_summary(run, result.query_ids, [m.cutoff for m in result.measures])})
        if self.keep_runs:
            result.runs[key] = run
