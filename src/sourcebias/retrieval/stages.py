"""Run-to-run stages that are not models: a rank cut-off and the self-match filter.

``--retriever "bm25>>cut:20>>lm:smollm2"`` re-ranks BM25's top 20 (the same as
``lm:smollm2,depth=20``); ``--remove-self-matches`` puts a :class:`SelfMatchFilter` right after
the first stage of every retriever.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.data.corpus import Corpus
from sourcebias.retrieval.base import Stage
from sourcebias.retrieval.run import Run
from sourcebias.retrieval.specs import Param, register_stage


def append_stage_info(run: Run, entry: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``run.info`` with ``entry`` appended to ``info["stages"]``."""
    info = dict(run.info)
    info["stages"] = [*run.info.get("stages", []), entry]
    return info


class Cutoff(Stage):
    """Keep the first ``k`` documents of each query."""

    def __init__(self, k: int):
        if k < 1:
            raise ConfigError(f"a cut-off must keep at least 1 document, got {k}")
        self.k = int(k)
        self.name = f"cut:{self.k}"

    def input_depth(self, depth: int, corpus: Corpus) -> int:
        return self.k

    def apply(self, run: Run, queries: Mapping[str, str], *, seed: int = 0) -> Run:
        out = run.cut(self.k)
        out.info = append_stage_info(run, {"name": self.name, "kept": self.k})
        return out

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "class": "Cutoff", "k": self.k}


class SelfMatchFilter(Stage):
    """Drop documents whose ``doc_id`` equals the query id (any source's copy).

    Some BEIR datasets (ArguAna, Quora) use the query's own document as the query; the document
    would trivially rank first. The filter needs at most one extra document per source from the
    stage before it, so the list still has ``depth`` documents. The number removed is recorded
    in ``run.info["self_matches_removed"]``.
    """

    name = "no-self-matches"

    def input_depth(self, depth: int, corpus: Corpus) -> int:
        return depth + len(corpus.sources)

    def apply(self, run: Run, queries: Mapping[str, str], *, seed: int = 0) -> Run:
        ids = run.corpus.doc_ids
        positions: dict[str, np.ndarray] = {}
        scores: dict[str, np.ndarray] = {}
        removed = 0
        for q, pos in run.positions.items():
            keep = np.fromiter((ids[i] != q for i in pos.tolist()), dtype=bool, count=len(pos))
            removed += int(len(pos) - keep.sum())
            positions[q], scores[q] = pos[keep], run.scores[q][keep]
        info = append_stage_info(run, {"name": self.name, "removed": removed})
        info["self_matches_removed"] = int(run.info.get("self_matches_removed", 0)) + removed
        return Run(run.corpus, run.name, positions, scores, info)

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "class": "SelfMatchFilter"}


@register_stage(
    "cut",
    params={"k": Param(int, "documents kept per query", required=True)},
    positional="k",
    help="keep the first K documents per query: cut:20 (e.g. bm25>>cut:20>>lm:smollm2)",
    offline="always (no model)",
)
def _cut(params: dict[str, Any], text: str) -> Stage:
    return Cutoff(params["k"])
