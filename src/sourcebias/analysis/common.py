"""What the analyses share: the twin pairs of two sources, the dense model and the LM values of a
spec, the LLM sources asked for, finite means, and how a result is made. Every model-backed
analysis takes the same ``options`` mapping, the model options: ``device``, ``batch_size`` and
``cache_dir`` (the embedding store's folder); for the encoder these are
:func:`~sourcebias.retrieval.build_retriever`'s command-wide settings, and the LM scorer is built
with the same three (:func:`sourcebias.analysis.perplexity.lm_values`). Every model value goes through the embedding store, so
reruns and other analyses reuse it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sourcebias.analysis.result import AnalysisResult
from sourcebias.core.errors import ConfigError


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


def llm_sources(dataset, sources: Sequence[str] | None) -> list[str]:
    """The LLM sources to compare with the human one: ``sources`` (checked) or every other source."""
    others = list(sources) if sources else dataset.other_sources
    bad = [s for s in others if s not in dataset.sources or s == dataset.human_source]
    if bad:
        raise ConfigError(f"not an LLM source of this dataset: {', '.join(bad)} (sources: {', '.join(dataset.sources)})")
    if not others:
        raise ConfigError("the dataset has no LLM source to compare with the human one")
    return others


def make_result(analysis: str, dataset, parameters: dict, models: dict, tables: dict, summary: dict) -> AnalysisResult:
    """The result of ``analysis`` on ``dataset``, its dicts made JSON-safe."""
    from sourcebias.evaluation.protocol import json_safe

    return AnalysisResult(
        analysis=analysis,
        dataset=json_safe(dataset.describe()),
        parameters=json_safe(parameters),
        models=json_safe(models),
        tables=tables,
        summary=json_safe(summary),
    )


def finite_mean(values: Any) -> tuple[float, int]:
    """The mean of the finite values and how many were left out (NaN: no values)."""
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(v)
    return (float(v[ok].mean()) if ok.any() else float("nan")), int((~ok).sum())
