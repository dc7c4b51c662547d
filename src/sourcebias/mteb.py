"""Source bias as MTEB tasks (``pip install "sourcebias[mteb]"``).

``sourcebias.mteb.tasks(DATASET)`` builds an MTEB retrieval task (``mteb`` 2.x) from any mixed
dataset sourcebias loads (a folder, an ``irds:`` id, a built-in name): the mixed corpus (every
source's copies, documents named ``<source>/<doc_id>``) is the corpus, the split's evaluated
queries are the queries, and every copy of a judged document is relevant (sourcebias' target
``all``, after the orphan rule). Run it like any MTEB task::

    import mteb, sourcebias.mteb
    model = sourcebias.mteb.get_model("sentence-transformers/all-MiniLM-L6-v2")  # or mteb.get_model(...)
    results = mteb.evaluate(model, tasks=sourcebias.mteb.tasks("data/nq-utd"), cache=mteb.ResultCache("results"))

The task's scores are MTEB's usual retrieval scores (``ndcg_at_10``, ``map_at_10``, ... over that
corpus; main score ``ndcg_at_10``) and beside them sourcebias' own protocol, computed by
:func:`sourcebias.evaluation.evaluate` and :func:`sourcebias.report.tables.result_report` on the same
ranking — not re-implemented: per-target NDCG@k and the other measures (``sourcebias_ndcg_at_10_human``),
Relative Δ with its bootstrap CI and tests (``sourcebias_relative_delta_ndcg_at_10``, ``..._ci_low``),
ΔNDSR@k (``sourcebias_delta_ndsr_at_10``), and under ``sourcebias`` every value, statistic, note
(orphans left out, ties) and parameter, as ``sourcebias evaluate`` reports them.

How the ranking is made: an encoder model (MTEB's ``EncoderProtocol``: every dense model of MTEB's
registry) is wrapped in :class:`~sourcebias.models.mteb_encoder.MTEBEncoder` — MTEB's own prompts and
data loaders, told it runs this task — and ranked by sourcebias' dense retrieval (each distinct text
encoded once, cached on disk, exact search, the tie rule), so the values equal ``sourcebias evaluate
-r mteb:NAME`` (and ``-r minilm`` for all-MiniLM-L6-v2). Any other MTEB model (a search model such as
BM25, a cross-encoder) ranks through MTEB's own search; its scores become a sourcebias run, equal
scores ordered by the tie rule, and the sole-corpus settings are left out (named in the notes).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sourcebias.models.mteb_encoder import load_mteb_model, require_mteb, retrieval_metadata

require_mteb()
from mteb.abstasks.retrieval import AbsTaskRetrieval  # noqa: E402

__all__ = ["SourceBiasOptions", "SourceBiasRetrieval", "get_model", "tasks"]

#: flat score keys: ``sourcebias_<field>[_<LLM source>]`` for these statistics fields
_STAT_FIELDS = ("rel_delta", "rel_delta_ci_low", "rel_delta_ci_high", "p_randomization", "p_adjusted", "p_ttest")
_PAIR_FIELDS = ("delta_ndsr", "delta_ndsr_p", "twin_pref_rate", "twin_pref_ci_low", "twin_pref_ci_high", "twin_pref_p_cluster")


@dataclass
class SourceBiasOptions:
    """How the dataset is loaded and scored; the defaults are ``sourcebias evaluate``'s."""

    split: str = "test"
    sources: Sequence[str] | None = None
    human_source: str = "human"
    twins: str | None = None
    orphans: str = "drop"
    measures: Sequence[str] | None = None  # e.g. ("NDCG", "MAP"); default NDCG, MAP, Recall, P, Share
    cutoffs: Sequence[int] | None = None  # default 1, 3, 5, 10
    depth: int = 1000
    seed: int = 0
    sole: bool = True
    statistics: Sequence[str] | None = None  # default: sourcebias evaluate's four
    statistics_measures: Sequence[str] | None = None
    bootstrap_resamples: int = 2000
    confidence: float = 0.95
    significance_resamples: int = 10_000
    correction: str = "holm"
    ndsr_k: int = 10
    cache_dir: str | None = None  # embedding store (default $SOURCEBIAS_CACHE); False: memory only
    load: dict[str, Any] = field(default_factory=dict)  # more options of sourcebias.load_dataset


def get_model(name: str, *, revision: str | None = None, path: str | None = None, device: str | None = None) -> Any:
    """An MTEB model loaded by MTEB's own loader, from a local folder when offline.

    Args:
        name: The model's name in MTEB's registry.
        revision: The registered revision (checked against the registry).
        path: A local copy of the weights; default: a packaged copy (all-MiniLM-L6-v2's), the
            Hugging Face cache, or the Hub when it can be reached (as ``mteb.get_model`` does).
        device: ``cpu``, ``cuda``, ...; default: a GPU when there is one.

    Returns:
        The MTEB model, its ``mteb_model_meta`` the registry's entry.

    Raises:
        ConfigError: the model is not in MTEB's registry, or the revision is not the registered one.
        ModelUnavailableError: offline and the weights are not here (the message says how to pass them).
    """
    return load_mteb_model(name, revision=revision, path=path, device=device)[0]


def tasks(*datasets: str | Path, **options: Any) -> list[SourceBiasRetrieval]:
    """MTEB retrieval tasks over sourcebias' mixed datasets.

    Args:
        *datasets: Folders, ``irds:`` ids or built-in names; one task each.
        **options: :class:`SourceBiasOptions` fields (``split="dev"``, ``orphans="keep"``, ...).

    Returns:
        One :class:`SourceBiasRetrieval` per dataset, for ``mteb.evaluate(model, tasks=...)``.

    Raises:
        ConfigError: no dataset given. (A dataset is loaded, and checked, when MTEB runs the task.)
    """
    if not datasets:
        from sourcebias.core.errors import ConfigError

        raise ConfigError("sourcebias.mteb.tasks needs at least one dataset (a folder, an irds: id or a built-in name)")
    opts = SourceBiasOptions(**options)
    return [SourceBiasRetrieval(str(d), opts) for d in datasets]


def task_name(dataset: str) -> str:
    """The MTEB task name of a dataset.

    Args:
        dataset: A folder, ``irds:`` id or built-in name.

    Returns:
        ``SourceBias-nq-utd`` for ``data/nq-utd``, ``SourceBias-beir-nfcorpus-test`` for ``irds:beir/nfcorpus/test``.
    """
    text = dataset[5:] if dataset.startswith("irds:") else Path(dataset).name or dataset
    return "SourceBias-" + re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


class SourceBiasRetrieval(AbsTaskRetrieval):
    """An MTEB retrieval task over a sourcebias mixed dataset, scored also by sourcebias' protocol."""

    k_values = (1, 3, 5, 10, 20, 100, 1000)

    # Each task has metadata of its own (its dataset's name and split): kept on the instance, where
    # MTEB's unload_data (which drops an instance's filtered metadata to fall back on the class's) leaves it.
    @property
    def metadata(self) -> Any:
        return self.__dict__["_sb_metadata"]

    @metadata.setter
    def metadata(self, value: Any) -> None:
        self.__dict__["_sb_metadata"] = value

    def __init__(self, dataset: str, options: SourceBiasOptions | None = None):
        self.source = dataset
        self.options = options or SourceBiasOptions()
        self.metadata = retrieval_metadata(
            task_name(dataset),
            split=self.options.split,
            description=f"Source bias on {dataset} (split {self.options.split}): mixed human/LLM corpus; sourcebias protocol.",
        )
        super().__init__()
        self.sb_dataset: Any = None
        self.sb_results: dict[str, Any] = {}  # model name -> sourcebias EvaluationResult, for inspection

    def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
        """Load the dataset with sourcebias (its checks, orphan rule) and expose it in MTEB's format."""
        if self.data_loaded:
            return
        from datasets import Dataset

        from sourcebias.data import load_dataset
        from sourcebias.evaluation import target_qrels

        o = self.options
        ds = load_dataset(self.source, split=o.split, sources=o.sources, human_source=o.human_source, twins=o.twins, orphans=o.orphans, **o.load)
        self.sb_dataset = ds
        corpus, names = ds.corpus, _docnos(ds.corpus)
        query_ids = ds.evaluation_queries()
        qrels = target_qrels(corpus, ds.qrels, "all", query_ids)  # every copy of a judged document, keyed by position
        relevant = {q: {names[int(p)]: int(v) for p, v in docs.items()} for q, docs in qrels.items()}
        self.dataset = {
            "default": {
                o.split: {
                    "corpus": Dataset.from_dict({"id": names, "title": corpus.titles, "text": corpus.texts}),
                    "queries": Dataset.from_dict({"id": list(query_ids), "text": [ds.queries[q] for q in query_ids]}),
                    "relevant_docs": relevant,
                    "top_ranked": None,
                }
            }
        }
        self.data_loaded = True

    def _evaluate_subset(
        self,
        model: Any,
        data_split: Any,
        *,
        encode_kwargs: Any,
        hf_split: str,
        hf_subset: str,
        prediction_folder: Path | None = None,
        num_proc: int | None = None,
        timer: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Rank the mixed corpus (sourcebias' dense retrieval for an encoder, MTEB's search
        otherwise), then score it by MTEB's code and by sourcebias' protocol."""
        from mteb._evaluators.retrieval_metrics import make_score_dict
        from mteb.models.models_protocols import EncoderProtocol, SearchProtocol

        name = str(getattr(getattr(model, "mteb_model_meta", None), "name", None) or type(model).__name__)
        if isinstance(model, EncoderProtocol) and not isinstance(model, SearchProtocol):
            result = self._sourcebias_dense(model, name, encode_kwargs)
            results = _results_dict(result.runs[_mixed_key(result, name)])
        else:
            search = {"encode_kwargs": encode_kwargs, "hf_split": hf_split, "hf_subset": hf_subset, "num_proc": num_proc, "timer": timer}
            results = self._mteb_search(model, data_split, **search, **kwargs)
            result = self._sourcebias_run(results, name)
        self.sb_results[name] = result
        if prediction_folder:
            self._save_task_predictions(results, model, prediction_folder, hf_subset=hf_subset, hf_split=hf_split)
        usual = _mteb_scores(data_split["relevant_docs"], results, self.k_values)
        return make_score_dict(**usual, task_scores=self._sourcebias_scores(result), previous_results_model_meta=self._previous_results_model_meta)

    # -- the ranking -------------------------------------------------------------------------
    def _sourcebias_dense(self, model: Any, name: str, encode_kwargs: Any) -> Any:
        from sourcebias.models.mteb_encoder import MTEBEncoder
        from sourcebias.retrieval.dense import DenseRetriever

        encoder = MTEBEncoder(model=model, task=self.metadata, batch_size=int((encode_kwargs or {}).get("batch_size", 32)), name=name)
        cache: Any = self.options.cache_dir
        retriever = DenseRetriever(encoder, name=name, cache_dir=cache)
        return self._evaluate([retriever], {})

    def _mteb_search(self, model: Any, data_split: Any, **kw: Any) -> dict[str, dict[str, float]]:
        from mteb._evaluators.retrieval_evaluator import RetrievalEvaluator
        from mteb.models.models_protocols import CrossEncoderProtocol, SearchProtocol
        from mteb.models.search_wrappers import SearchCrossEncoderWrapper

        search = model if isinstance(model, SearchProtocol) else SearchCrossEncoderWrapper(model) if isinstance(model, CrossEncoderProtocol) else None
        if search is None:
            raise TypeError(f"{type(model).__name__} is neither an MTEB encoder, a search model nor a cross-encoder")
        evaluator = RetrievalEvaluator(
            corpus=data_split["corpus"],
            queries=data_split["queries"],
            task_metadata=self.metadata,
            hf_split=kw["hf_split"],
            hf_subset=kw["hf_subset"],
            top_ranked=data_split["top_ranked"],
            top_k=self.options.depth,
            **({"timer": kw["timer"]} if kw.get("timer") is not None else {}),
        )
        return evaluator(search, encode_kwargs=kw["encode_kwargs"], num_proc=kw.get("num_proc"))

    def _sourcebias_run(self, results: dict[str, dict[str, float]], name: str) -> Any:
        """MTEB's scores as a sourcebias run: documents by score, equal scores by the tie rule."""
        import numpy as np

        from sourcebias.retrieval.run import Run
        from sourcebias.retrieval.ties import TieRule

        corpus = self.sb_dataset.corpus
        index = {n: i for i, n in enumerate(_docnos(corpus))}
        rule = TieRule(corpus, self.options.seed)
        positions, scores = {}, {}
        for q, docs in results.items():
            p = np.fromiter((index[d] for d in docs), dtype=np.int64, count=len(docs))
            s = np.fromiter(docs.values(), dtype=np.float64, count=len(docs))
            order = rule.order(q, s, p)
            positions[q], scores[q] = p[order], s[order]
        run = Run(corpus, name, positions, scores, {"order": f"MTEB's search scores; equal scores by the tie rule (seed {self.options.seed})"})
        return self._evaluate([], {name: run})

    def _evaluate(self, retrievers: list[Any], runs: dict[str, Any]) -> Any:
        from sourcebias.evaluation import evaluate, measure_grid
        from sourcebias.evaluation.measures import DEFAULT_CUTOFFS, DEFAULT_MEASURES

        o = self.options
        measures = measure_grid(list(o.measures or DEFAULT_MEASURES), sorted(set(o.cutoffs or DEFAULT_CUTOFFS)))
        return evaluate(self.sb_dataset, retrievers, runs=runs, measures=measures, depth=o.depth, seed=o.seed, sole=o.sole and bool(retrievers))

    # -- the scores --------------------------------------------------------------------------
    def _sourcebias_scores(self, result: Any) -> dict[str, Any]:
        """Flat ``sourcebias_*`` scores (fractions; Relative Δ and its CI in percent) and a
        ``sourcebias`` entry with every value, statistic, note and parameter."""
        from sourcebias.report import EVALUATE_STATISTICS, result_report

        o = self.options
        report = result_report(
            result,
            self.sb_dataset.qrels,
            statistics=list(o.statistics or EVALUATE_STATISTICS),
            measures=o.statistics_measures,
            bootstrap_resamples=o.bootstrap_resamples,
            confidence=o.confidence,
            significance_resamples=o.significance_resamples,
            correction=o.correction,
            ndsr_k=o.ndsr_k,
        )
        stats = report.data.get("statistics")
        rows = [] if stats is None else stats.records()
        notes = list(report.notes)
        if o.sole and not result.parameters.get("sole"):
            notes.append("The sole-corpus settings (each source alone) were not ranked: the model ranked through MTEB's search.")
        flat = _flat_scores(result, rows)
        detail = {
            "metrics": [{k: _plain(v) for k, v in r.items() if k != "retriever"} for r in result.metric_rows()],
            "statistics": [{k: _plain(v) for k, v in r.items()} for r in rows],
            "notes": notes,
            "parameters": {
                **result.parameters,
                "measures": [str(m) for m in result.measures],
                "queries": len(result.query_ids),
                "sources": list(result.sources),
            },
            "dataset": {"source": self.source, "split": o.split, "orphans": result.dataset.get("orphans")},
            "retriever": next(iter(result.retrievers.values()), None),
        }
        return {**flat, "sourcebias": _plain(detail)}


def _docnos(corpus: Any) -> list[str]:
    """``<source>/<doc_id>``: the names sourcebias writes for documents in runs."""
    return [f"{s}/{d}" for s, d in zip(corpus.source_list(), corpus.doc_ids)]


def _mixed_key(result: Any, name: str) -> Any:
    from sourcebias.evaluation import MIXED, RunKey

    return RunKey(name, MIXED if len(result.sources) > 1 else result.sources[0])


def _results_dict(run: Any) -> dict[str, dict[str, float]]:
    names = _docnos(run.corpus)
    return {q: {names[int(p)]: float(s) for p, s in zip(run.positions[q], run.scores[q])} for q in run.query_ids}


def _mteb_scores(qrels: Any, results: dict[str, dict[str, float]], k_values: Sequence[int]) -> dict[str, Any]:
    """MTEB's retrieval scores of ``results`` (its own ``calculate_retrieval_scores``)."""
    from mteb._evaluators.retrieval_metrics import calculate_retrieval_scores

    _, ndcg, _map, recall, precision, naucs, mrr, naucs_mrr, hit_rate = calculate_retrieval_scores(results, qrels, list(k_values), False)
    return {"ndcg": ndcg, "_map": _map, "recall": recall, "precision": precision, "mrr": mrr, "naucs": naucs, "naucs_mrr": naucs_mrr, "hit_rate": hit_rate}


def _key(measure: str) -> str:
    """``NDCG@10`` -> ``ndcg_at_10`` (MTEB's spelling)."""
    return measure.lower().replace("@", "_at_")


def _flat_scores(result: Any, rows: list[dict[str, Any]]) -> dict[str, float]:
    from sourcebias.evaluation import MIXED

    several = len(result.other_sources) > 1
    out: dict[str, float] = {}
    for r in result.metric_rows():
        if r["corpus"] != MIXED:
            continue
        target = r["target"]
        if target.startswith("relative_delta"):
            other = target.partition(":")[2]
            out[f"sourcebias_relative_delta_{_key(r['metric'])}" + (f"_{other}" if other else "")] = float(r["value"])
        else:
            out[f"sourcebias_{_key(r['metric'])}_{target}"] = float(r["value"])
    for row in rows:
        suffix = f"_{row['llm_source']}" if several else ""
        m = _key(str(row.get("measure") or ""))
        for f in _STAT_FIELDS:
            if f in row and m:
                rest = f.removeprefix("rel_delta")  # "", "_ci_low", "_ci_high"; the tests: the whole field
                key = f"sourcebias_relative_delta_{m}{rest}" if f.startswith("rel_delta") else f"sourcebias_{f}_{m}"
                out[key + suffix] = _num(row[f])
        for f in _PAIR_FIELDS:
            if f in row:
                k = row.get("delta_ndsr_k") or 10
                out[f"sourcebias_{f.replace('delta_ndsr', f'delta_ndsr_at_{int(k)}')}{suffix}"] = _num(row[f])
    return out


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _plain(v: Any) -> Any:
    """JSON-ready: numpy scalars to Python numbers, containers recursively."""
    import numpy as np

    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v
