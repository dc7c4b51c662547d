"""The protocol's masking rule, in one place: which copies of a judged document count as
relevant for a target (Dai et al., KDD 2024, §3.1; the toy example of its Appendix A, A.1 in the arXiv version).

Every copy in the corpus of a judged document is listed; the target's copies keep their grade,
every other source's copies get 0 (they keep their rank positions but count as non-relevant);
for the ``all`` view every copy keeps its grade. Used by the evaluation itself (documents named
by corpus position, for trec_eval) and by the exports to ranx / ir_measures (documents named by
their docnos), so the two can never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sourcebias.core.errors import ConfigError
from sourcebias.data.corpus import Corpus


def masked_qrels(
    corpus: Corpus, qrels: Mapping[str, Mapping[str, int]], target: str, query_ids: Sequence[str], *, all_target: str, names: Sequence[str] | None = None
) -> dict[str, dict[str, int]]:
    """Qrels for one target: ``{query_id: {name: grade}}`` where ``name`` is ``names[position]``
    (the position as a string when ``names`` is not given)."""
    return masked_qrels_by_target(corpus, qrels, [target], query_ids, all_target=all_target, names=names)[target]


def masked_qrels_by_target(
    corpus: Corpus,
    qrels: Mapping[str, Mapping[str, int]],
    targets: Sequence[str],
    query_ids: Sequence[str],
    *,
    all_target: str,
    names: Sequence[str] | None = None,
) -> dict[str, dict[str, dict[str, int]]]:
    """:func:`masked_qrels` of several targets, ``{target: qrels}``; the judged copies are looked
    up in the corpus once for all of them."""
    for target in targets:
        if target != all_target and target not in corpus.sources:
            raise ConfigError(f"target '{target}' is not a source of this corpus ({', '.join(corpus.sources)})")
    sources = corpus.sources
    # (query, [(name, source, grade)]) of every copy of a judged document, in the qrels' order
    copies = []
    for q in query_ids:
        entry = []
        for doc_id, grade in qrels.get(q, {}).items():
            for s in sources:
                pos = corpus.position(doc_id, s)
                if pos is not None:
                    entry.append((names[pos] if names is not None else str(pos), s, int(grade)))
        copies.append((q, entry))
    return {target: {q: {name: grade if (target == all_target or s == target) else 0 for name, s, grade in entry} for q, entry in copies} for target in targets}
