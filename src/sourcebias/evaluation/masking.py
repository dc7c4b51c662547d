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
    if target != all_target and target not in corpus.sources:
        raise ConfigError(f"target '{target}' is not a source of this corpus ({', '.join(corpus.sources)})")
    sources = corpus.sources
    out: dict[str, dict[str, int]] = {}
    for q in query_ids:
        entry: dict[str, int] = {}
        for doc_id, grade in qrels.get(q, {}).items():
            for s in sources:
                pos = corpus.position(doc_id, s)
                if pos is not None:
                    entry[names[pos] if names is not None else str(pos)] = int(grade) if (target == all_target or s == target) else 0
        out[q] = entry
    return out
