"""sourcebias: measure, explain and mitigate source bias in retrieval over human and LLM-written text.

The top level re-exports the most used entry points lazily (importing ``sourcebias`` stays
cheap; PyTorch is imported only by the neural parts, when used)::

    import sourcebias as sb
    ds = sb.load_dataset("nq-utd", split="test")  # the built-in copy, or your own folder
    result = sb.evaluate(ds, [sb.build_retriever("bm25")])
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.2.0"

_EXPORTS = {
    "load_dataset": "sourcebias.data",
    "DatasetOptions": "sourcebias.data",
    "Corpus": "sourcebias.data",
    "Dataset": "sourcebias.data",
    "Qrels": "sourcebias.data",
    "build_retriever": "sourcebias.retrieval",
    "BM25": "sourcebias.retrieval",
    "TfIdf": "sourcebias.retrieval",
    "Run": "sourcebias.retrieval",
    "evaluate": "sourcebias.evaluation",
    "measure_grid": "sourcebias.evaluation",
    "relative_delta": "sourcebias.evaluation",
    "EvaluationResult": "sourcebias.evaluation",
    "load_result": "sourcebias.evaluation",
    "load_artifact": "sourcebias.core.artifacts",
    "Pipeline": "sourcebias.retrieval",
    "Stage": "sourcebias.retrieval",
    "DocnoMap": "sourcebias.retrieval",
    "write_evaluation": "sourcebias.reporting",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sourcebias' has no attribute '{name}'")
    return getattr(import_module(module), name)
