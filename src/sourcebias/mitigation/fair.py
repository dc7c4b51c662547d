"""Exposure parity as a retrieval stage: ``--retriever "minilm>>fair:k=10"``.

A training-free remedy to set beside debiased training, CDC and projection: re-order each
query's candidates so that every source receives its target share of the *exposure* of the top
``k``, exposure measured with the DCG discount ``1 / log2(rank + 1)`` — the discount of NDSR@k
(:class:`sourcebias.evaluation.measures.NDSR`), so NDSR@k of the output is the quantity being
equalised and Share@k follows it.

**Why this formulation.** Fairness of exposure (Singh & Joachims, KDD 2018, "Fairness of
Exposure in Rankings") asks that groups receive exposure in proportion to a target — here the
groups are the sources of a mixed corpus. Singh & Joachims and Diaz et al. (CIKM 2020,
"Evaluating Stochastic Rankings with Expected Exposure") reach parity *in expectation* with a
stochastic policy (a distribution over rankings); that gives each single ranking a random
source order, so an evaluation would need many samples per query and its numbers would move
with the sampling seed. We use instead the deterministic counterpart of the same target, the
exposure-deficit controller of Morik et al. (SIGIR 2020, "Controlling Fairness and Bias in
Dynamic Learning-to-Rank", FairCo) applied rank by rank within one list, which is also the
greedy "fair interleaving" of the constrained-ranking literature (Zehlike et al., CIKM 2017,
FA*IR; Celis et al., ICALP 2018, "Ranking with Fairness Constraints"):

* take each query's top ``depth`` candidates in the order of the stage before (ties by the tie
  rule, :mod:`sourcebias.retrieval.ties`); they form one queue per source, in that order, so
  **relevance within a source is preserved** (the interleaving only decides which source speaks
  next);
* for rank ``r = 1 … k``, with ``E(r) = Σ_{i ≤ r} 1 / log2(i + 1)`` and ``E_s(r − 1)`` the exposure
  source ``s`` already has, give rank ``r`` to the non-empty source with the largest deficit
  ``t_s · E(r) − E_s(r − 1)``; equal deficits go to the source whose next document comes first in
  the input order (the more relevant one, ties by the tie rule);
* ranks ``k + 1 … depth`` keep the remaining candidates in their input order (parity is asked of
  the top ``k`` only; what is below it pays no further NDCG).

Targets ``t_s``: ``equal`` (default; 1/m for each of the m sources among the query's candidates)
or ``proportional`` (each source's share of the query's candidate list).

**Discretisation bound.** While every source still has candidates, each source's exposure in the
top k satisfies ``t_s·E(k) − 1 ≤ E_s(k) ≤ t_s·E(k) + (m − 1)`` (a source only loses deficit when
chosen, and the chosen deficit is ≥ 0 because the deficits sum to ``1 / log2(r + 1)`` > 0; the
deficits sum to zero after each pick, which bounds them above). For two sources this is
``|E_s(k) − t_s·E(k)| ≤ 1``, i.e. ``|NDSR_s@k − t_s| ≤ 1 / E(k)`` (0.22 at k = 10). When a source
runs out of candidates the others fill the list and parity is, necessarily, not reached; the
number of such queries is recorded in the run's stage info.

Output scores are ``n, n − 1, …, 1`` for the ``n`` documents of a query: strictly decreasing in
the new order, so a tool that re-sorts by score (trec_eval) keeps it. The cost of the remedy is
read off the evaluation (NDCG before and after); ``sourcebias evaluate DATA --retriever minilm
--retriever "minilm>>fair:k=10"`` gives both, and :func:`remedy_rows` the before → after table.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.data.corpus import Corpus
from sourcebias.retrieval.base import Stage
from sourcebias.retrieval.run import Run
from sourcebias.retrieval.specs import Param, register_stage
from sourcebias.retrieval.stages import append_stage_info
from sourcebias.retrieval.ties import TieRule

TARGETS = ("equal", "proportional")
#: deficits closer than this (relative) are equal: exposures are sums of irrational discounts
_TIE_TOLERANCE = 1e-12


def dcg_weights(k: int) -> np.ndarray:
    """The exposure of ranks 1 … k: ``1 / log2(rank + 1)`` (NDSR's discount)."""
    return 1.0 / np.log2(1.0 + np.arange(1, k + 1))


def target_shares(codes: np.ndarray, target: str) -> dict[int, float]:
    """Target exposure share of each source code present in ``codes`` (one query's candidates)."""
    present, counts = np.unique(codes, return_counts=True)
    if target == "equal":
        return {int(s): 1.0 / len(present) for s in present}
    if target == "proportional":
        return {int(s): float(c) / len(codes) for s, c in zip(present, counts)}
    raise ConfigError(f"fair: target must be one of {', '.join(TARGETS)}, got '{target}'")


def interleave(codes: np.ndarray, k: int, target: str = "equal") -> tuple[np.ndarray, bool]:
    """The exposure-parity order of one query's candidates (see the module docstring).

    ``codes`` are the candidates' source codes in input order (best first). Returns the indices
    of the candidates in the new order (all of them: the top ``k`` interleaved, the rest in input
    order) and whether some source ran out of candidates before rank ``k``.

    Hand-written: no library in the environment re-orders a given ranking for exposure parity
    (fairsearchcore implements FA*IR's binomial test for one protected group, a different
    constraint; fairlearn works on classifiers), and the rule is a few lines.
    """
    codes = np.asarray(codes)
    n = len(codes)
    k = min(int(k), n)
    targets = target_shares(codes, target)
    queues = {s: list(np.flatnonzero(codes == s)) for s in targets}  # input order within a source
    heads = dict.fromkeys(targets, 0)
    exposure = dict.fromkeys(targets, 0.0)
    weights = dcg_weights(k)
    total = 0.0
    order: list[int] = []
    exhausted = False
    for r in range(k):
        total += weights[r]
        live = [s for s in targets if heads[s] < len(queues[s])]
        exhausted |= len(live) < len(targets)
        deficit = {s: targets[s] * total - exposure[s] for s in live}
        best = max(deficit.values())
        tied = [s for s in live if deficit[s] >= best - _TIE_TOLERANCE * max(1.0, abs(best))]
        pick = min(tied, key=lambda s: queues[s][heads[s]])  # the earlier candidate in input order
        order.append(int(queues[pick][heads[pick]]))
        heads[pick] += 1
        exposure[pick] += weights[r]
    taken = set(order)
    order += [i for i in range(n) if i not in taken]
    return np.asarray(order, dtype=np.int64), exhausted


class ExposureParity(Stage):
    """Re-order the top ``depth`` candidates so each source has its target exposure in the top ``k``.

    Parameters
    ----------
    k:
        The ranks over which exposure is equalised (NDSR@k's k).
    target:
        ``equal`` (each source present among the candidates, the same share) or ``proportional``
        (each source's share of the candidate list).
    depth:
        Candidates taken from the stage before (the rest of its list is dropped, as re-rankers do).
    """

    def __init__(self, k: int = 10, *, target: str = "equal", depth: int = 100, name: str | None = None):
        if k < 1:
            raise ConfigError(f"fair: k must be at least 1, got {k}")
        if depth < k:
            raise ConfigError(f"fair: depth ({depth}) must be at least k ({k})")
        if target not in TARGETS:
            raise ConfigError(f"fair: target must be one of {', '.join(TARGETS)}, got '{target}'")
        self.k, self.target, self.depth = int(k), target, int(depth)
        self.name = name or f"fair:k={self.k}"

    def input_depth(self, depth: int, corpus: Corpus) -> int:
        return self.depth

    def apply(self, run: Run, queries: Mapping[str, str], *, seed: int = 0) -> Run:
        t0 = time.perf_counter()
        corpus = run.corpus
        codes = corpus.source_codes
        rule = TieRule(corpus, seed)
        positions: dict[str, np.ndarray] = {}
        scores: dict[str, np.ndarray] = {}
        short = 0
        for q, pos in run.positions.items():
            top = np.asarray(pos[: self.depth], dtype=np.int64)
            top = top[rule.order(q, np.asarray(run.scores[q][: len(top)], dtype=np.float64), top)]
            order, exhausted = interleave(codes[top], self.k, self.target)
            short += bool(exhausted)
            positions[q] = top[order]
            scores[q] = np.arange(len(top), 0, -1, dtype=np.float64)
        info = append_stage_info(
            run,
            {
                "name": self.name,
                "k": self.k,
                "target": self.target,
                "depth": self.depth,
                "queries_without_parity": short,
                "seconds": round(time.perf_counter() - t0, 3),
            },
        )
        return Run(corpus, self.name, positions, scores, info)

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "class": "ExposureParity", "k": self.k, "target": self.target, "depth": self.depth, "exposure": "1/log2(rank+1), as NDSR"}


def remedy_rows(result: Any, pairs: Sequence[tuple[str, str, str]], measures: Sequence[str] = ("NDCG@3", "NDCG@10")) -> Any:
    """Before → after rows of remedies evaluated in one result: ``pairs`` are ``(remedy, before
    system, after system)``. Per remedy: each of ``measures`` on all targets (percent), Relative
    Δ@3 (percent; > 0: human text ranked higher) and Share@10 / NDSR@10 of each source (percent),
    as ``"before → after"`` strings (measures the result lacks are left out)."""
    import pandas as pd

    from sourcebias.evaluation.results import ALL, MIXED, Key

    human = result.human_source
    other = result.other_sources[0] if result.other_sources else None
    rows = []
    for remedy, before, after in pairs:
        row: dict[str, Any] = {"remedy": remedy}
        cells = [(m, (MIXED, ALL, m)) for m in measures]
        cells += [(f"{m} {s}", (MIXED, s, m)) for m in ("Share@10", "NDSR@10") for s in (human, other) if s]
        for col, (setting, target, m) in cells:
            if Key(before, setting, target, m) in result.per_query and Key(after, setting, target, m) in result.per_query:
                row[col] = f"{result.mean(before, setting, target, m) * 100:.1f} → {result.mean(after, setting, target, m) * 100:.1f}"
        if other and Key(before, MIXED, other, "NDCG@3") in result.per_query:
            row["Rel Δ@3"] = f"{result.relative_delta(before, 'NDCG@3', other):+.1f} → {result.relative_delta(after, 'NDCG@3', other):+.1f}"
        rows.append(row)
    return pd.DataFrame(rows)


@register_stage(
    "fair",
    params={
        "k": Param(int, "ranks over which each source gets its target exposure (NDSR's discount)", default=10),
        "target": Param(str, "equal (default) or proportional (each source's share of the candidates)", default="equal", choices=TARGETS),
        "depth": Param(int, "candidates taken from the stage before", default=100, option="rerank_depth"),
    },
    positional="k",
    help="exposure parity: interleave sources so each has its target exposure in the top k (fair:k=10; target=equal|proportional)",
    offline="always (no model)",
)
def _fair(params: dict[str, Any], text: str) -> ExposureParity:
    return ExposureParity(params["k"], target=params["target"], depth=params["depth"], name=text)
