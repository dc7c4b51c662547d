"""How deep a run's rankings go, and what that allows at a cut-off k.

A run read from a file (or made by a retriever that stops early: a ``cut:`` stage, a lexical
retriever that ranks only the documents sharing a term with the query) can hold fewer than k
documents per query. Each kind of measure meets that differently:

* the label-free shares (``Share@k``, ``NDSR@k``, ΔNDSR@k) are taken over the documents ranked
  within k, so over a run whose longest ranking holds d < k documents they are the figures at d
  printed under the name k: they are **refused** (not computed, and the output says why);
* trec_eval's measures (``NDCG@k``, ``MAP@k``, ``Recall@k``, ``P@k``) count the ranks a run does
  not fill as non-relevant, which is their definition, but not the figure of a system that ranked
  k documents: they are computed, with a **note**;
* a run whose longest ranking reaches k but some of whose queries rank fewer: those queries are
  **counted** in a note (their shares are over the documents they rank).

A ranking that holds every document of its corpus is complete: there is nothing deeper to rank,
so it is never short.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

#: the key of a run's depth in ``EvaluationResult.run_info``
INFO_KEY = "ranking_depth"


def ranking_lengths(run: Any, query_ids: Sequence[str]) -> np.ndarray:
    """Per query of ``query_ids``: how many documents its ranking holds (0 without one)."""
    return np.array([len(run.positions.get(q, ())) for q in query_ids], dtype=np.int64)


def depth_summary(run: Any, query_ids: Sequence[str], cutoffs: Iterable[int]) -> dict[str, Any]:
    """The depth of ``run`` over ``query_ids``: the longest and shortest non-empty ranking, the
    corpus size, and per cut-off the queries whose non-empty ranking is short of it.

    Returns:
        ``{"longest", "shortest", "corpus", "short": {"k": queries}}`` (JSON-safe; ``short`` holds
        only the cut-offs that some query is short of).
    """
    lengths = ranking_lengths(run, query_ids)
    ranked = lengths[lengths > 0]
    corpus = len(run.corpus)
    short = {str(k): int(((ranked < k) & (ranked < corpus)).sum()) for k in sorted({int(c) for c in cutoffs})}
    return {
        "longest": int(ranked.max()) if len(ranked) else 0,
        "shortest": int(ranked.min()) if len(ranked) else 0,
        "corpus": corpus,
        "queries": len(ranked),
        "short": {k: n for k, n in short.items() if n},
    }


def beyond(summary: dict[str, Any], k: int) -> bool:
    """Whether cut-off ``k`` lies beyond every ranking of the run (and the rankings do not hold
    their whole corpus): a share at k would be the share at the run's depth."""
    longest = int(summary.get("longest", 0))
    return 0 < longest < k and longest < int(summary.get("corpus", 0))


def refusal(k: int, summary: dict[str, Any], what: str) -> str:
    """Why ``what`` at ``k`` is not computed for a run of this depth (see :func:`beyond`)."""
    longest = int(summary["longest"])
    return (
        f"{what}@{k} refused: the run's rankings hold at most {longest:,} documents, "
        f"fewer than k = {k} ({what}@{k} would be {what}@{longest} under another name)"
    )


def short_count(summary: dict[str, Any], k: int) -> int:
    """How many queries rank fewer than ``k`` documents (and not their whole corpus)."""
    return int((summary.get("short") or {}).get(str(k), 0))


def depth_notes(where: str, summary: dict[str, Any], measures: Sequence[Any]) -> list[str]:
    """The notes of one run: the measures refused or computed over missing ranks, and the
    queries short of a cut-off (none when every ranking reaches every cut-off)."""
    if not summary:
        return []
    longest, queries = int(summary.get("longest", 0)), int(summary.get("queries", 0))
    source = [m for m in measures if m.scope == "source"]
    target = [m for m in measures if m.scope != "source"]
    refused = [str(m) for m in source if beyond(summary, m.cutoff)]
    out = []
    deep_targets = [str(m) for m in target if beyond(summary, m.cutoff)]
    if refused or deep_targets:
        text = f"{where}: its rankings hold at most {longest:,} documents"
        if deep_targets:
            text += (
                f"; {', '.join(deep_targets)}: the ranks below {longest:,} count as non-relevant "
                "(trec_eval's rule), not the figure of a system that ranked k documents"
            )
        if refused:
            text += f"; {', '.join(refused)}: not computed (the shares of the top {longest:,} under another name)"
        out.append(text)
    partly = sorted({m.cutoff for m in measures if not beyond(summary, m.cutoff) and short_count(summary, m.cutoff)})
    for k in partly:
        named = ", ".join(str(m) for m in measures if m.cutoff == k)
        out.append(
            f"{where}: {short_count(summary, k):,} of {queries:,} queries rank fewer than {k} documents (the shortest {int(summary['shortest']):,}): "
            f"their {named} are over the documents they rank (missing ranks non-relevant, shares of what is ranked)"
        )
    return out


def result_depth_notes(result: Any) -> list[str]:
    """:func:`depth_notes` of every ranking of an evaluation result (recorded in its
    ``run_info``; the source measures are computed on the mixed corpus only)."""
    from sourcebias.evaluation.results import MIXED

    out = []
    for key, info in result.run_info.items():
        measures = [m for m in result.measures if key.setting == MIXED or m.scope != "source"]
        out += depth_notes(f"{key.retriever}/{key.setting}", info.get(INFO_KEY) or {}, measures)
    return out
