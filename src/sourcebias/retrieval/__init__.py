"""Retrieval.

First stages that score (BM25, TF-IDF, dense), run-to-run stages (re-rankers, cut-offs, filters)
composed with ``>>``, runs and the tie rule.

Kinds are built from specifications (``build_retriever("bm25>>cut:20>>lm:smollm2")``); each kind
registers itself in its own module (:mod:`sourcebias.retrieval.specs`).
"""

from sourcebias.retrieval.analyzer import EnglishAnalyzer
from sourcebias.retrieval.base import FirstStage, Pipeline, Retriever, RunBuilder, ScoreBlock, Stage, StageChain, rank_rows
from sourcebias.retrieval.docnos import DocnoMap
from sourcebias.retrieval.lexical import BM25, TfIdf
from sourcebias.retrieval.registry import available_retrievers, build_retriever, build_stage
from sourcebias.retrieval.run import Run
from sourcebias.retrieval.stages import Cutoff, SelfMatchFilter
from sourcebias.retrieval.ties import TieRule, select_top, tie_keys

__all__ = [
    "BM25",
    "Cutoff",
    "DocnoMap",
    "EnglishAnalyzer",
    "FirstStage",
    "Pipeline",
    "Retriever",
    "Run",
    "RunBuilder",
    "ScoreBlock",
    "SelfMatchFilter",
    "Stage",
    "StageChain",
    "TfIdf",
    "TieRule",
    "available_retrievers",
    "build_retriever",
    "build_stage",
    "rank_rows",
    "select_top",
    "tie_keys",
]
