"""The contexts a generator is shown: the top k of each query's ranking, in several orders.

The passage an answer cites depends on where it stands in the context (models cite the first
passages more: "lost in the middle", Liu et al., TACL 2024) as well as on who wrote it. In a
single order the two are confounded with retrieval rank, so each query's top k is shown in
``orders`` context orders: order 0 is the ranking itself and orders 1, 2, ... seeded shuffles
(the seed, the order and the query's id decide each, so a rerun shows the same contexts). The
reverse is not one of them: with the ranking and its reverse only, position dummies are an exact
linear function of the rank dummies (positions j and k+1−j together equal ranks j and k+1−j
together), so rank and position effects could not both be estimated. Over the orders every passage stands at several positions, which separates the
position effect from the source effect (Kakimov et al., 2026, condition citation rates on rank
and provenance; the shuffles add position).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from sourcebias.data.corpus import hash64


@dataclass(frozen=True)
class Context:
    """One generator call's passages: ``positions`` the corpus positions in context order, and
    ``ranks`` the retrieval rank (1-based) of each."""

    query_id: str
    order: int
    positions: tuple[int, ...]
    ranks: tuple[int, ...]


def context_order(k: int, order: int, seed: int, query_id: str) -> list[int]:
    """The retrieval ranks (1..k) in the context order ``order`` (0: as ranked; from 1: a
    shuffle seeded by ``seed``, ``order`` and the query's id)."""
    ranks = list(range(1, k + 1))
    if order == 0:
        return ranks
    rng = np.random.default_rng([seed, order, hash64(query_id) & 0xFFFFFFFF])
    return [int(r) for r in rng.permutation(ranks)]


def build_contexts(top: Mapping[str, Sequence[int]], orders: int, seed: int) -> list[Context]:
    """One :class:`Context` per query and order.

    Args:
        top: query id -> the corpus positions of its top k, best first (in query order).
        orders: how many context orders per query (at least 1).
        seed: seed of the shuffled orders.

    Returns:
        The contexts, query by query, order by order.
    """
    out = []
    for qid, positions in top.items():
        k = len(positions)
        for order in range(orders):
            ranks = context_order(k, order, seed, qid)
            out.append(Context(qid, order, tuple(int(positions[r - 1]) for r in ranks), tuple(ranks)))
    return out
