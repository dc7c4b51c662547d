"""The judge's effect on the protocol: the same rankings evaluated with the assessors'
judgements and with the judge's, and how Relative Δ and ΔNDSR move.

The protocol's qrels give one grade per document, held by every copy (the project's data model:
the twins of a judged original inherit its grade). A judge grades each copy, so its judgements
come as one qrels per source: ``judge-<source>`` holds the judge's grade of that source's copy of
each judged document (what the judge would have written had it judged that copy's collection).
A judge that grades LLM text higher gives ``judge-<llm>`` higher grades than ``judge-<human>``;
comparing Relative Δ under each shows whether that would hide or inflate a retriever's bias.
Documents whose answer was unparseable are left out of the judge's qrels (counted).

Every variant is evaluated on the same rankings (retrieved once) over the judged queries; the
assessors' qrels are restricted to those queries (``assessors``) and, when the judge graded a
sample of each query's judged documents (``--max-docs``), to those documents. System orderings
are compared by the mean of the measure on target ``all`` (every copy relevant), with Kendall's τ, **on the
queries both qrels evaluate** (a judge's qrels can leave a query without a relevant document,
and means over different query sets would order the systems by the queries as much as by the
qrels); each ordering row says how many queries that is, of how many each side has.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sourcebias.judges.stats import kendall

ASSESSORS = "assessors"


def judge_qrels(grades: Any, source: str) -> dict[str, dict[str, int]]:
    """``{query: {doc_id: grade}}`` of the judge's parsed grades of ``source``'s copies."""
    g = grades[(grades["mode"] == "grade") & (grades["source"] == source)].dropna(subset=["grade"])
    out: dict[str, dict[str, int]] = {}
    for q, d, v in zip(g["query_id"], g["doc_id"], g["grade"]):
        out.setdefault(str(q), {})[str(d)] = int(v)
    return out


def qrels_variants(
    dataset: Any, grades: Any, query_ids: Sequence[str], documents: Mapping[str, Sequence[str]] | None = None
) -> dict[str, dict[str, dict[str, int]]]:
    """``{variant: qrels}``: ``assessors`` (the split's, on the judged queries; with
    ``documents``, a query's judged documents sampled for grading, only those) and
    ``judge-<source>`` per source."""
    keep = set(query_ids)
    out = {ASSESSORS: {q: dict(dataset.qrels[q]) for q in dataset.qrels if q in keep}}
    if documents is not None:
        sampled = {q: set(docs) for q, docs in documents.items()}
        out[ASSESSORS] = {q: {d: g for d, g in judged.items() if d in sampled.get(q, ())} for q, judged in out[ASSESSORS].items()}
    for s in dataset.sources:
        out[f"judge-{s}"] = judge_qrels(grades, s)
    return out


def protocol_effect(
    dataset: Any,
    runs: Mapping[str, Any],
    variants: Mapping[str, Mapping[str, Mapping[str, int]]],
    *,
    measure: str = "NDCG@10",
    ndsr_k: int = 10,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Relative Δ (bootstrap CI) and ΔNDSR@k of each run under each qrels variant.

    Args:
        dataset: The dataset the runs rank (its mixed corpus).
        runs: ``{name: Run}``.
        variants: :func:`qrels_variants`.
        measure: The target measure of Relative Δ and of the system orderings.
        ndsr_k, resamples, confidence, seed: The statistics' settings.

    Returns:
        ``{"rows": [...], "orderings": [...]}``: per run, LLM source and variant the Relative Δ
        with its CI, ΔNDSR and its p, the queries evaluated; per judge variant Kendall's τ of the
        system ordering against the assessors'.
    """
    from sourcebias.core.errors import DataError
    from sourcebias.data.qrels import Qrels
    from sourcebias.evaluation.measures import parse_measure
    from sourcebias.evaluation.protocol import evaluate
    from sourcebias.evaluation.results import ALL, MIXED, Key
    from sourcebias.evaluation.stats import StatContext, compute_statistics

    rows, means, skipped = [], {}, []
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    m = parse_measure(measure)
    for variant, labels in variants.items():
        ds = dataclasses.replace(dataset, qrels=Qrels(labels))
        try:
            result = evaluate(ds, runs=dict(runs), measures=[m], sole=False, seed=seed, keep_runs=True)  # ΔNDSR reads the runs
        except DataError:  # no judged query has a relevant document under these qrels (a judge that graded everything 0, or nothing parsed)
            skipped.append(f"qrels {variant}: no query has a relevant judgement; not evaluated")
            continue
        stats = compute_statistics(
            result,
            StatContext(qrels=ds.qrels, measures=[str(m)], ndsr_k=ndsr_k, bootstrap_resamples=resamples, confidence=confidence, seed=seed),
            ["relative_delta_ci", "delta_ndsr"],
            correct=False,
        )
        rows.extend(_variant_rows(result, stats, variant, str(m)))
        per_query[variant] = {name: dict(zip(result.query_ids, result.per_query[Key(name, MIXED, ALL, str(m))].tolist())) for name in result.retriever_names}
        means[variant] = {name: float(np.mean(list(v.values()))) for name, v in per_query[variant].items()}
    orderings = [
        ordering(per_query[ASSESSORS], per_query[v], list(runs), v, f"{m} (target all)")
        for v in variants
        if v != ASSESSORS and v in per_query and ASSESSORS in per_query
    ]
    return {"rows": rows, "orderings": orderings, "system_means": means, "skipped": skipped}


def _variant_rows(result: Any, stats: Any, variant: str, measure: str) -> list[dict[str, Any]]:
    """The rows of :func:`protocol_effect` for one qrels variant: per run and LLM source, the
    Relative Δ with its CI, ΔNDSR and its p, and the queries evaluated."""
    from sourcebias.evaluation.stats.relative_delta_ci import RelativeDeltaRecord

    rows: list[dict[str, Any]] = []
    ndsr = {(r.retriever, r.llm_source): r for r in stats.records["delta_ndsr"]}
    for r in stats.records["relative_delta_ci"]:
        assert isinstance(r, RelativeDeltaRecord)  # this statistic's own records
        n = ndsr.get((r.retriever, r.llm_source))
        rows.append(
            {
                "run": r.retriever,
                "llm_source": r.llm_source,
                "qrels": variant,
                "measure": measure,
                "rel_delta": r.rel_delta,
                "low": r.rel_delta_ci_low,
                "high": r.rel_delta_ci_high,
                "ci_method": r.ci_method,
                "delta_ndsr": getattr(n, "delta_ndsr", float("nan")),
                "delta_ndsr_p": getattr(n, "delta_ndsr_p", float("nan")),
                "queries": len(result.query_ids),
            }
        )
    return rows


def ordering(
    assessors: Mapping[str, Mapping[str, float]], judge: Mapping[str, Mapping[str, float]], names: Sequence[str], variant: str, measure: str
) -> dict[str, Any]:
    """Kendall's τ of the systems' means under the assessors' and a judge's qrels, on the queries
    both evaluate.

    Args:
        assessors: ``{system: {query: value}}`` under the assessors' qrels.
        judge: The same under the judge's.
        names: The systems, in order.
        variant: The judge's qrels' name.
        measure: What the systems are ordered by (for the row).

    Returns:
        The row: ``qrels``, ``measure``, ``queries`` (common), ``queries_assessors``,
        ``queries_judge``, and :func:`~sourcebias.judges.stats.kendall`'s ``tau``, ``p``, ``systems``,
        ``note`` (the common queries said there when they are fewer than either side's).
    """
    qa, qj = set(next(iter(assessors.values()), {})), set(next(iter(judge.values()), {}))
    common = sorted(qa & qj)
    row: dict[str, Any] = {"qrels": variant, "measure": measure, "queries": len(common), "queries_assessors": len(qa), "queries_judge": len(qj)}
    if not common:
        return {**row, "tau": float("nan"), "p": float("nan"), "systems": len(names), "note": "undefined: no query is evaluated under both qrels"}
    k = kendall([float(np.mean([assessors[n][q] for q in common])) for n in names], [float(np.mean([judge[n][q] for q in common])) for n in names])
    if len(common) < max(len(qa), len(qj)):
        where = f"on the {len(common)} queries both qrels evaluate (assessors {len(qa)}, judge {len(qj)})"
        k["note"] = "; ".join(x for x in (where, k["note"]) if x)
    return {**row, **k}
