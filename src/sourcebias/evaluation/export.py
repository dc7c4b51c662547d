"""A result handed to ranx and ir_measures (the ``ecosystem`` extra).

:meth:`EvaluationResult.to_ranx` gives, for each retriever and corpus setting, a ``ranx.Run``
and, for each target, the masked ``ranx.Qrels`` of the protocol: every copy of a judged document
is listed, copies written by a source other than the target with label 0 (target ``all``: every
copy keeps its label). The judgements are the dataset's after its orphan rule
(:mod:`sourcebias.data.pairing`), restricted to the evaluated queries. Documents are named
``<source>/<doc_id>`` (:meth:`~sourcebias.retrieval.docnos.DocnoMap.sourcebias`), and the runs carry
tie-resolved, strictly decreasing scores (:func:`~sourcebias.retrieval.ties.tie_resolved_scores`),
so ranx (or trec_eval, PyTerrier) re-sorting them keeps sourcebias' order: ``ranx.compare`` on
them gives the per-target values of the result.

:func:`ir_measures_metrics` gives the per-query values as ``ir_measures.Metric(query_id, measure,
value)`` records, and :func:`ir_measures_frame` as a DataFrame; the target measures are named as
ir_measures names them (``nDCG@10``, ``AP@10``, ``R@10``, ``P@10``: trec_eval's definitions).

This module never imports :mod:`.results` or :mod:`.protocol` (they import it), so the masking
rule is stated here over document names; the tests check it equals
:func:`~sourcebias.evaluation.protocol.target_qrels`. ranx (which imports numba) and ir_measures
are imported only when used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sourcebias.core.errors import ConfigError
from sourcebias.data.corpus import Corpus
from sourcebias.evaluation.masking import masked_qrels as _masked
from sourcebias.evaluation.measures import Measure, parse_measure
from sourcebias.retrieval.docnos import DocnoMap
from sourcebias.retrieval.formats import nested_run
from sourcebias.retrieval.run import Run

#: trec_eval family -> ranx metric name (same definitions: linear gains, log2 discount for NDCG)
RANX_METRICS = {"ndcg_cut": "ndcg", "map_cut": "map", "recall": "recall", "P": "precision", "success": "hit_rate"}
EXTRA = "pip install -e '.[ecosystem]' (ranx, ir-measures)"


def _require(module: str):
    from importlib import import_module

    try:
        return import_module(module)
    except ImportError:
        raise ConfigError(f"{module} is not installed: {EXTRA}") from None


def ranx_metric(measure: str | Measure) -> str:
    """The ranx name of a target measure (``NDCG@3`` -> ``ndcg@3``)."""
    m = parse_measure(measure)
    family = getattr(m.kind, "trec_family", None)
    if m.scope != "target" or family not in RANX_METRICS:
        raise ConfigError(f"{m} has no ranx equivalent; ranx measures here: {', '.join(sorted(RANX_METRICS))} (trec_eval families)")
    return f"{RANX_METRICS[family]}@{m.cutoff}"


def ir_measure(measure: str | Measure):
    """The ir_measures measure of a target measure (``NDCG@3`` -> ``nDCG@3``), parsed by
    ir_measures from the trec_eval name (``ndcg_cut.3``)."""
    ir_measures = _require("ir_measures")
    m = parse_measure(measure)
    if m.scope != "target":
        raise ConfigError(f"{m} is a source measure: ir_measures has no equivalent")
    try:
        (out,) = ir_measures.parse_trec_measure(f"{m.trec_family}.{m.cutoff}")
    except (ValueError, KeyError, NameError) as exc:
        raise ConfigError(f"ir_measures does not know the trec_eval measure {m.trec_family}.{m.cutoff} ({m}): {exc}") from None
    return out


def masked_qrels(
    corpus: Corpus, qrels: Mapping[str, Mapping[str, int]], target: str, query_ids: Sequence[str], *, all_target: str, docnos: DocnoMap | None = None
) -> dict[str, dict[str, int]]:
    """The protocol's qrels for one target (:mod:`.masking`, the rule the evaluation itself
    uses), keyed by document name (``<source>/<doc_id>`` unless ``docnos`` says otherwise)."""
    names = (docnos or DocnoMap.sourcebias(corpus)).names
    return _masked(corpus, qrels, target, query_ids, all_target=all_target, names=names)


@dataclass
class RanxExport:
    """ranx objects of one result: ``runs[(retriever, setting)]`` and ``qrels[target]``.

    ``qrels[t]`` serves every setting (a sole corpus holds only the target's copies, which keep
    their labels there). ``metrics`` are the ranx names of the result's target measures.
    """

    runs: dict[tuple[str, str], Any]
    qrels: dict[str, Any]
    metrics: list[str]
    query_ids: list[str]
    settings: dict[str, list[str]] = field(default_factory=dict)  # setting -> its targets

    def runs_of(self, setting: str) -> list[Any]:
        """The ranx runs of one setting (one per retriever, named by it)."""
        return [r for (_, s), r in self.runs.items() if s == setting]

    def compare(self, target: str, setting: str, metrics: Sequence[str] | None = None, **kwargs: Any):
        """``ranx.compare`` of every retriever of ``setting`` on ``target``'s qrels (queries
        without a ranking count 0, as in the protocol)."""
        ranx = _require("ranx")
        kwargs.setdefault("make_comparable", True)
        return ranx.compare(self.qrels[target], self.runs_of(setting), list(metrics or self.metrics), **kwargs)


def to_ranx(result: Any, qrels: Mapping[str, Mapping[str, int]], *, all_target: str) -> RanxExport:
    """See :meth:`EvaluationResult.to_ranx` (``result`` is one; ``qrels`` the dataset's)."""
    ranx = _require("ranx")
    if not result.runs:
        raise ConfigError("this result holds no runs (evaluated with keep_runs=False, or loaded with runs=False)")
    metrics = [ranx_metric(m) for m in result.target_measures]
    widest = max(result.runs.values(), key=lambda r: len(r.corpus.sources)).corpus
    settings: dict[str, list[str]] = {}
    for k in result.per_query:
        if k.measure in {str(m) for m in result.target_measures}:
            settings.setdefault(k.setting, [])
            if k.target not in settings[k.setting]:
                settings[k.setting].append(k.target)
    targets = list(dict.fromkeys(t for ts in settings.values() for t in ts))
    names = DocnoMap.sourcebias(widest)
    out_qrels = {t: ranx.Qrels(masked_qrels(widest, qrels, t, result.query_ids, all_target=all_target, docnos=names), name=t) for t in targets}
    runs = {}
    for key, run in result.runs.items():
        runs[(key.retriever, key.setting)] = ranx.Run(ranx_run_dict(run, result.query_ids), name=key.retriever)
    return RanxExport(runs, out_qrels, metrics, list(result.query_ids), settings)


def ranx_run_dict(run: Run, query_ids: Sequence[str]) -> dict[str, dict[str, float]]:
    """``{query_id: {<source>/<doc_id>: tie-resolved score}}`` of the evaluated queries."""
    return nested_run(run, DocnoMap.sourcebias(run.corpus), list(query_ids))


def ir_measures_metrics(result: Any, retriever: str, setting: str, target: str) -> list[Any]:
    """The per-query values of one retriever, setting and target as ``ir_measures.Metric``
    records (target measures; one record per query and measure, in query order)."""
    ir_measures = _require("ir_measures")
    out: list[Any] = []
    for m in result.target_measures:
        measure = ir_measure(m)
        values = result.values(retriever, setting, target, m)
        out.extend(ir_measures.Metric(q, measure, float(v)) for q, v in zip(result.query_ids, values.tolist()))
    return out


def ir_measures_frame(result: Any):
    """Every per-query value of the target measures as a DataFrame with columns ``retriever,
    corpus, target, query_id, measure, value`` (``measure`` in ir_measures' notation)."""
    import pandas as pd

    target_names = {str(m): str(ir_measure(m)) for m in result.target_measures}
    frames = []
    for k, values in result.per_query.items():
        if k.measure not in target_names:
            continue
        n = len(values)
        frames.append(
            pd.DataFrame(
                {
                    "retriever": [k.retriever] * n,
                    "corpus": [k.setting] * n,
                    "target": [k.target] * n,
                    "query_id": result.query_ids,
                    "measure": [target_names[k.measure]] * n,
                    "value": values,
                }
            )
        )
    columns = ["retriever", "corpus", "target", "query_id", "measure", "value"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
