"""What is measured after each round of a simulated loop, on the ranking readers see.

For the top ``k`` of every evaluation query:

* ``Share@k`` and ``NDSR@k`` of each source (:mod:`sourcebias.evaluation.measures`), and of all
  generated text together (the sum over the rounds' sources);
* ``NDCG@k`` on the dataset's human judgements (trec_eval through pytrec-eval-terrier; copies of a
  judged document written by the loop are judged 0: the judgements stay on the human documents);
* the human documents in the top k (kept so that :mod:`sourcebias.simulate.result` can count the
  ones that left it for good: "silenced");
* **self-BLEU@k**, the diversity of the top k: each document's sentence BLEU (sacrebleu, exponential
  smoothing, effective order) against the other k − 1 as references, averaged over the top k and
  over queries; higher is less diverse. A query with fewer than two documents (or only empty ones)
  has none and is counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sourcebias.retrieval.run import Run


def self_bleu(texts: Sequence[str]) -> float:
    """Mean over ``texts`` of the sentence BLEU of each against all the others (NaN for fewer
    than two non-empty texts)."""
    from sacrebleu.metrics import BLEU

    texts = [t for t in texts if t.strip()]
    if len(texts) < 2:
        return float("nan")
    bleu = BLEU(effective_order=True)
    scores = [bleu.sentence_score(t, texts[:i] + texts[i + 1 :]).score for i, t in enumerate(texts)]
    return float(np.mean(scores)) / 100.0


def round_metrics(run: Run, qrels: Any, query_ids: Sequence[str], *, k: int, human_source: str, generated: Sequence[str]) -> dict[str, Any]:
    """The measures of one round (see the module docstring); ``run`` is what readers see."""
    from sourcebias.evaluation.measures import parse_measure
    from sourcebias.evaluation.protocol import score_run

    run = run.cut(k)
    ms = [parse_measure(f"NDCG@{k}"), parse_measure(f"Share@{k}"), parse_measure(f"NDSR@{k}")]
    values = score_run(run, qrels, query_ids, ms, [human_source])
    sources = list(run.corpus.sources)
    wanted = set(generated)
    gen = [s for s in sources if s in wanted]
    share = {s: values[(s, f"Share@{k}")] for s in sources}
    ndsr = {s: values[(s, f"NDSR@{k}")] for s in sources}
    gen_share = np.sum([share[s] for s in gen], axis=0) if gen else np.zeros(len(query_ids))
    gen_ndsr = np.sum([ndsr[s] for s in gen], axis=0) if gen else np.zeros(len(query_ids))
    texts = run.corpus.texts
    bleu = np.array([self_bleu([texts[p] for p in run.positions.get(q, [])]) for q in query_ids])
    human_code = sources.index(human_source) if human_source in sources else -1
    codes, ids = run.corpus.source_codes, run.corpus.doc_ids
    top_human = {q: [ids[p] for p in run.positions.get(q, np.empty(0, dtype=np.int64)).tolist() if codes[p] == human_code] for q in query_ids}
    return {
        "queries": len(query_ids),
        "ndcg": _mean(values[(human_source, f"NDCG@{k}")]),
        "share_generated": _mean(gen_share),
        "ndsr_generated": _mean(gen_ndsr),
        "share_human": _mean(share.get(human_source, np.full(len(query_ids), np.nan))),
        "ndsr_human": _mean(ndsr.get(human_source, np.full(len(query_ids), np.nan))),
        "share_by_source": {s: _mean(v) for s, v in share.items()},
        "ndsr_by_source": {s: _mean(v) for s, v in ndsr.items()},
        "self_bleu": _mean(bleu),
        "self_bleu_undefined": int(np.isnan(bleu).sum()),
        "empty_rankings": int(sum(1 for q in query_ids if not len(run.positions.get(q, [])))),
        "top_human": top_human,
    }


def _mean(values: np.ndarray) -> float:
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    return float(v.mean()) if len(v) else float("nan")


def silenced_counts(top_human: Sequence[dict[str, list[str]]]) -> list[dict[str, int]]:
    """For rounds ``0 … R`` (each a ``{query: human doc ids in the top k}``), how many
    (query, human document) pairs of round 0's top k are absent from the top k of round r **and
    of every later round** — gone for good as far as the simulation has run — and how many were
    there at round 0. Round 0 has none by definition."""
    base = top_human[0]
    n0 = sum(len(v) for v in base.values())
    out = [{"silenced": 0, "baseline_human": n0}]
    for r in range(1, len(top_human)):
        gone = 0
        for q, docs in base.items():
            present = set().union(*(set(x.get(q, ())) for x in top_human[r:]))
            gone += sum(1 for d in docs if d not in present)
        out.append({"silenced": gone, "baseline_human": n0})
    return out
