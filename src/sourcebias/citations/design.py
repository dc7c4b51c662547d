"""The contexts a generator is shown: the top k of each query's ranking, in several orders, and
what that design can estimate (checked before any call).

The passage an answer cites depends on where it stands in the context (models cite the first
passages more: "lost in the middle", Liu et al., TACL 2024) as well as on who wrote it. In a
single order the two are confounded with retrieval rank, so each query's top k is shown in
``orders`` context orders, the rows of a cyclic Latin square
(:func:`sourcebias.clustered.design.cyclic_orders`): order 0 is the ranking itself, order j the
ranking rotated by an offset. With ``orders = k`` every passage stands at every position exactly
once (*balanced*): a difference between a document's two copies averaged over the orders is free
of the position effect whatever its shape, which the matched twins need. With 1 < orders < k
each passage stands at ``orders`` of the k positions (*partial*): the logistic regression, which
models position, separates position from source; the twins are not estimated (they would
include the copies' position difference). The offsets keep rank and position effects apart (their
greatest common divisor with k is 1); the reverse order is never used (with the ranking and its
reverse only, position dummies are a linear function of rank dummies). A query whose ranking
holds n < k passages is shown in min(orders, n) orders of its n passages. More orders than
passages would repeat a context: refused.

:func:`check_design` reads the contexts before any call: whether the logit's source effect is
identified (the source not collinear with rank or position: a ranking that always puts the LLM
copy at one rank cannot separate the two) and which queries are balanced; a design that can
estimate no source effect at all is refused with a :class:`~sourcebias.core.errors.ConfigError`
before a call is made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sourcebias.clustered.design import cyclic_orders, order_balance
from sourcebias.core.errors import ConfigError


@dataclass(frozen=True)
class Context:
    """One generator call's passages: ``positions`` the corpus positions in context order, and
    ``ranks`` the retrieval rank (1-based) of each."""

    query_id: str
    order: int
    positions: tuple[int, ...]
    ranks: tuple[int, ...]


def context_order(k: int, order: int, orders: int) -> list[int]:
    """The retrieval ranks (1..k) in context order ``order`` of ``orders`` (0: as ranked; from 1:
    the ranking rotated by the cyclic Latin square's offset).

    Args:
        k: Passages in the context.
        order: Which order (0..orders−1).
        orders: How many orders the design has (at most k).

    Returns:
        The ranks, in context order.
    """
    return [int(r) + 1 for r in cyclic_orders(k, orders)[order]]


def build_contexts(top: Mapping[str, Sequence[int]], orders: int) -> list[Context]:
    """One :class:`Context` per query and order (a query of n < ``orders`` passages: n orders).

    Args:
        top: query id -> the corpus positions of its top k, best first (in query order).
        orders: how many context orders per query (at least 1).

    Returns:
        The contexts, query by query, order by order.
    """
    out = []
    for qid, positions in top.items():
        k = len(positions)
        n_orders = min(orders, k)
        for order in range(n_orders):
            ranks = context_order(k, order, n_orders)
            out.append(Context(qid, order, tuple(int(positions[r - 1]) for r in ranks), tuple(ranks)))
    return out


def _dummies(values: np.ndarray, prefix: str) -> tuple[list[np.ndarray], list[str]]:
    levels = sorted(set(values.tolist()))[1:]
    return [(values == lv).astype(float) for lv in levels], [f"{prefix} {lv}" for lv in levels]


def logit_design_problem(sources: np.ndarray, ranks: np.ndarray, positions: np.ndarray, human: str) -> str:
    """Why the logit's source effect is not identified by these passage rows ("" when it is):
    the terms a source dummy is collinear with (rank and position dummies, lowest levels as
    reference), named.

    Args:
        sources: Each shown passage's source.
        ranks: Its retrieval rank.
        positions: Its position in the context.
        human: The reference source.

    Returns:
        The reason, or "".
    """
    from sourcebias.clustered.ols import collinear_terms, dependency_text

    llm = sorted(set(sources.tolist()) - {human})
    if not llm or human not in set(sources.tolist()):
        return "the contexts show one source only: no source effect to estimate"
    cols, names = [np.ones(len(sources))], ["constant"]
    for s in llm:
        cols.append((sources == s).astype(float))
        names.append(f"source {s}")
    with_position = bool((positions != ranks).any())
    for values, prefix in ((ranks, "rank"), (positions, "position")) if with_position else ((ranks, "rank"),):
        c, n = _dummies(values, prefix)
        cols, names = cols + c, names + n
    groups = [g for g in collinear_terms(np.column_stack(cols), names) if any(n.startswith("source ") for n in g)]
    return f"the source is collinear with rank or position in these contexts ({dependency_text(groups)})" if groups else ""


def check_design(contexts: Sequence[Context], corpus: Any, human: str, orders: int) -> dict[str, Any]:
    """What the contexts can estimate, before any call: the logit's identification, the twins'
    balance, and the notes that say so.

    Args:
        contexts: The study's contexts.
        corpus: The mixed corpus (each passage's source and document).
        human: The human source.
        orders: The orders asked for.

    Returns:
        ``logit`` (the reason the source effect is not identified, or ""), ``balanced_queries``,
        ``queries``, ``twin_pairs`` (pairs in one context of a balanced query), ``balance`` (the
        design, :func:`~sourcebias.clustered.design.order_balance`'s sentence for the usual k),
        ``notes``.

    Raises:
        ConfigError: no source effect can be estimated (the logit is not identified and no
            balanced query shows a document with its twin).
    """
    sources = np.array([corpus.source_of(p) for c in contexts for p in c.positions], dtype=object)
    ranks = np.array([r for c in contexts for r in c.ranks])
    positions = np.array([j for c in contexts for j in range(1, len(c.positions) + 1)])
    logit = logit_design_problem(sources, ranks, positions, human)
    by_query: dict[str, list[Context]] = {}
    for c in contexts:
        by_query.setdefault(c.query_id, []).append(c)
    balanced = [q for q, cs in by_query.items() if len(cs) == len(cs[0].positions) > 1]
    pairs = sum(_twin_pairs(by_query[q][0], corpus, human) for q in balanced)
    k = max((len(c.positions) for c in contexts), default=0)
    balance = order_balance(k, orders)["text"] if k else "no context"
    notes = [f"design: {balance}"]
    if logit:
        notes.append(f"logit: source effect not identified: {logit}")
    if not pairs:
        why = "no balanced query shows a document with its twin" if balanced else f"the design is not balanced ({balance}; orders = k balances it)"
        notes.append(f"twins: not estimated: {why}, so cited(twin) − cited(original) would include the copies' position difference")
    if logit and not pairs:
        raise ConfigError("the contexts can estimate no source effect: " + "; ".join(notes[1:]))
    return {"logit": logit, "balanced_queries": len(balanced), "queries": len(by_query), "twin_pairs": pairs, "balance": balance, "notes": notes}


def _twin_pairs(context: Context, corpus: Any, human: str) -> int:
    """Documents of ``context`` shown with both their human copy and another source's copy."""
    docs: dict[str, set[str]] = {}
    for p in context.positions:
        docs.setdefault(corpus.doc_ids[p], set()).add(corpus.source_of(p))
    return sum(len(s - {human}) for s in docs.values() if human in s)
