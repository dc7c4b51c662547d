"""Which judged originals can be compared across sources: the orphan rule.

The source-bias protocol compares how a ranking treats the copies of one document written by
different sources. A judged original whose copy is missing in some compared source (a failed
rewrite, a ``rewrite_status`` filter, a partial twin corpus) cannot be compared: scoring it would
give the sources that do hold it free credit. With the human original judged and its twin
missing, Relative Δ NDCG@1 of a ranking that puts every LLM copy first reads 0 instead of −200.

The rule (``orphans="drop"``, the default): a judged original is evaluated only if every loaded
source holds its copy; otherwise its judgements are left out of the split (its documents stay in
the corpus, unjudged), and what was left out is counted per source. ``orphans="keep"`` restores
the earlier rule (every judgement kept) and is named in every output.
"""

from __future__ import annotations

from typing import Any, Literal

from sourcebias.core.errors import ConfigError
from sourcebias.data.corpus import Corpus
from sourcebias.data.qrels import Qrels

OrphanPolicy = Literal["drop", "keep"]
ORPHAN_POLICIES = ("drop", "keep")


def check_policy(policy: str) -> OrphanPolicy:
    if policy not in ORPHAN_POLICIES:
        raise ConfigError(f"orphans must be 'drop' or 'keep', got '{policy}'")
    return "drop" if policy == "drop" else "keep"


def apply_orphan_rule(corpus: Corpus, qrels: Qrels, policy: str = "drop") -> tuple[Qrels, dict[str, Any]]:
    """The qrels to evaluate with, and a summary of the judged originals without a copy in every
    source of ``corpus``.

    The summary (written to ``result.json`` and the manifest through ``Dataset.describe()``)::

        {"policy": "drop", "judged_originals_left_out": 3, "judgements_left_out": 4,
         "missing_copies": {"llm": 3}, "queries_left_out": 1}

    ``judged_originals_left_out`` counts distinct documents; ``judgements_left_out`` their
    (query, document) judgements; ``missing_copies[s]`` how many judged originals source ``s``
    lacks; ``queries_left_out`` the queries that had a relevant document before and have none
    after (they are no longer evaluated). With ``policy="keep"`` nothing is left out but the
    same counts are reported (as ``judged_originals_without_copy`` and
    ``judgements_without_copy``) so that the user sees what the earlier rule scores.
    """
    policy = check_policy(policy)
    holders: dict[str, set[str]] = {}
    for d, s in zip(corpus.doc_ids, corpus.source_list()):
        holders.setdefault(d, set()).add(s)
    sources = list(corpus.sources)
    judged = {d for q in qrels for d in qrels[q]}
    orphans = {d for d in judged if len(holders.get(d, ())) < len(sources)}
    missing = {s: sum(1 for d in orphans if s not in holders.get(d, ())) for s in sources}
    n_judgements = sum(1 for q in qrels for d in qrels[q] if d in orphans)
    summary: dict[str, Any] = {"policy": policy, "missing_copies": {s: n for s, n in missing.items() if n}}
    if policy == "keep":
        summary.update(judged_originals_without_copy=len(orphans), judgements_without_copy=n_judgements)
        return qrels, summary
    kept = Qrels({q: {d: g for d, g in qrels[q].items() if d not in orphans} for q in qrels})
    before = set(qrels.queries_with_relevant())
    after = set(kept.queries_with_relevant())
    summary.update(judged_originals_left_out=len(orphans), judgements_left_out=n_judgements, queries_left_out=len(before - after))
    return kept, summary


def orphan_note(summary: dict[str, Any]) -> str | None:
    """One line for the terminal (``None`` when there is nothing to say)."""
    per = ", ".join(f"{s}: {n}" for s, n in summary.get("missing_copies", {}).items())
    if summary.get("policy") == "keep":
        n = summary.get("judged_originals_without_copy", 0)
        if not n:
            return None
        return (
            f"--orphans keep: {n} judged originals without a copy in every source are still scored "
            f"({summary.get('judgements_without_copy', 0)} judgements; missing copies: {per}); the sources that hold them get credit the others cannot"
        )
    n = summary.get("judged_originals_left_out", 0)
    if not n:
        return None
    return (
        f"left out the judgements of {n} judged originals without a copy in every source "
        f"({summary.get('judgements_left_out', 0)} judgements, {summary.get('queries_left_out', 0)} queries no longer evaluated; "
        f"missing copies: {per}); --orphans keep scores them anyway"
    )
