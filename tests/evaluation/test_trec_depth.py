"""trec_eval reads only the top k of a ranking for a measure at cut-off k (issue 41): scoring each
ranking cut at the largest cut-off gives the values of the whole ranking, to the last bit.

The whole ranking is scored by pytrec_eval itself (the independent reference); the cut ranking is
what :func:`score_run` passes. Random rankings of up to 60 documents over a corpus of 200, graded
labels (0 to 3) on up to 8 documents per query, queries with fewer documents than the cut-off,
queries with no relevant document retrieved, and an empty ranking.
"""

from __future__ import annotations

import numpy as np
import pytest

from sourcebias.data import Corpus, Qrels
from sourcebias.evaluation import measure_grid, score_run
from sourcebias.evaluation.measures import Measure, trec_depth, trec_measure_spec
from sourcebias.evaluation.protocol import target_qrels, trec_run
from sourcebias.retrieval import Run


def random_case(seed: int):
    rng = np.random.default_rng(seed)
    n = 100
    corpus = Corpus([f"d{i}" for i in range(n)] * 2, ["human"] * n + ["llm"] * n, [""] * (2 * n), ["text"] * (2 * n))
    positions, scores, qrels = {}, {}, {}
    for k in range(40):
        q = f"q{k}"
        depth = int(rng.choice([0, 1, 3, 7, 10, 11, 25, 60]))
        positions[q] = rng.choice(2 * n, size=depth, replace=False).astype(np.int64)
        scores[q] = np.sort(rng.random(depth))[::-1]
        judged = rng.choice(n, size=int(rng.integers(1, 9)), replace=False)
        qrels[q] = {f"d{j}": int(rng.integers(0, 4)) for j in judged}
    return Run(corpus, "r", positions, scores), Qrels(qrels), list(positions)


@pytest.mark.parametrize("seed", range(5))
def test_a_cut_ranking_scores_as_the_whole_one(seed):
    import pytrec_eval

    run, qrels, qids = random_case(seed)
    measures = measure_grid(["NDCG", "MAP", "Recall", "P"], [1, 3, 5, 10])
    assert trec_depth(measures) == 10
    got = score_run(run, qrels, qids, measures, ["human", "llm", "all"], source_measures=False)
    for target in ("human", "llm", "all"):
        whole = pytrec_eval.RelevanceEvaluator(target_qrels(run.corpus, qrels, target, qids), trec_measure_spec(measures)).evaluate(trec_run(run, qids))
        for m in measures:
            expected = np.array([whole.get(q, {}).get(m.trec_key, 0.0) for q in qids])
            assert np.array_equal(got[(target, str(m))], expected), (target, str(m))


def test_the_depth_is_the_largest_cut_off_of_top_k_families_only():
    assert trec_depth(measure_grid(["NDCG", "P"], [3, 20])) == 20
    assert trec_depth([]) is None

    class Whole(Measure):  # a family that reads the whole ranking (trec_eval's bpref)
        @property
        def trec_family(self) -> str:
            return "bpref"

    assert trec_depth([*measure_grid(["NDCG"], [10]), Whole("NDCG", 5)]) is None
