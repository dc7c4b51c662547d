"""Retrieval stages: lexical (BM25, TF-IDF), dense and re-ranking, composable with ``>>``."""

from sourcebias.retrieval.base import Pipeline, Reranker, Retriever, self_matches
from sourcebias.retrieval.lexical import BM25, EnglishAnalyzer, TfIdf
from sourcebias.retrieval.registry import available_retrievers, build_retriever
from sourcebias.retrieval.run import Run, rank_rows
from sourcebias.retrieval.ties import select_top, tie_keys

__all__ = [
    "BM25",
    "EnglishAnalyzer",
    "Pipeline",
    "Reranker",
    "Retriever",
    "Run",
    "TfIdf",
    "available_retrievers",
    "build_retriever",
    "rank_rows",
    "select_top",
    "self_matches",
    "tie_keys",
]
