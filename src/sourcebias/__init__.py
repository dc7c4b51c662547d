"""sourcebias: measure, explain and mitigate source bias in retrieval over human and LLM-written text.

The top level re-exports the most used entry points lazily (importing ``sourcebias`` stays
cheap; PyTorch is imported only by the neural parts, when used)::

    import sourcebias as sb
    ds = sb.load_dataset("nq-utd", split="test")  # the built-in copy, or your own folder
    result = sb.evaluate(ds, [sb.build_retriever("bm25")])
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from sourcebias.core.moved import install as _install_moved_modules
from sourcebias.core.version import __version__

_install_moved_modules()  # the old paths of modules that moved (core/moved.py, removed in 0.4.0)

if TYPE_CHECKING:  # what _EXPORTS names, for type checkers and editors (imported lazily at run time)
    from sourcebias.core.artifacts import load_artifact as load_artifact
    from sourcebias.data import Corpus as Corpus
    from sourcebias.data import Dataset as Dataset
    from sourcebias.data import DatasetOptions as DatasetOptions
    from sourcebias.data import Qrels as Qrels
    from sourcebias.data import load_dataset as load_dataset
    from sourcebias.evaluation import EvaluationResult as EvaluationResult
    from sourcebias.evaluation import evaluate as evaluate
    from sourcebias.evaluation import load_result as load_result
    from sourcebias.evaluation import measure_grid as measure_grid
    from sourcebias.evaluation import relative_delta as relative_delta
    from sourcebias.retrieval import BM25 as BM25
    from sourcebias.retrieval import DocnoMap as DocnoMap
    from sourcebias.retrieval import Pipeline as Pipeline
    from sourcebias.retrieval import Run as Run
    from sourcebias.retrieval import Stage as Stage
    from sourcebias.retrieval import TfIdf as TfIdf
    from sourcebias.retrieval import build_retriever as build_retriever
    from sourcebias.study import write_evaluation as write_evaluation

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
    "write_evaluation": "sourcebias.study",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    """The exported name ``name``, imported from its module on first use.

    Args:
        name: one of ``__all__``.

    Returns:
        The object :data:`_EXPORTS` says where to find.

    Raises:
        AttributeError: ``name`` is not exported.
    """
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sourcebias' has no attribute '{name}'")
    return getattr(import_module(module), name)
