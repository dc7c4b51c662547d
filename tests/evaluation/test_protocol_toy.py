"""The toy example of Dai et al. (KDD 2024), Appendix A.1 / Figure 12, and hand-worked cases.

Ranking of one query (best first): d1^G, d2^G, d1^H, d3^G, d2^H, d3^H; relevant: d1^H and d1^G.
The paper's figure gives, for the human-written target, NDCG@1,3,5 = 0, 1/2, 1/2 and
MAP@1,3,5 = 0, 1/3, 1/3; for the LLM-generated target every value is 1.
"""

import math

import numpy as np
import pytest

from sourcebias.data import Corpus, Qrels
from sourcebias.evaluation import measure_grid, relative_delta, score_run
from sourcebias.retrieval import Run

H, G = "human", "llm"


@pytest.fixture
def toy():
    docs = [("d1", H), ("d2", H), ("d3", H), ("d1", G), ("d2", G), ("d3", G)]
    corpus = Corpus([d for d, _ in docs], [s for _, s in docs], [""] * 6, ["text"] * 6)
    order = [("d1", G), ("d2", G), ("d1", H), ("d3", G), ("d2", H), ("d3", H)]
    pos = np.array([corpus.position(d, s) for d, s in order])
    run = Run(corpus, "toy", {"q": pos}, {"q": np.array([6.0, 5, 4, 3, 2, 1])})
    return run, Qrels({"q": {"d1": 1}})


def test_paper_figure_12(toy):
    run, qrels = toy
    v = score_run(run, qrels, ["q"], measure_grid(["NDCG", "MAP"], [1, 3, 5]), [H, G])
    expected_human = {"NDCG@1": 0.0, "NDCG@3": 0.5, "NDCG@5": 0.5, "MAP@1": 0.0, "MAP@3": 1 / 3, "MAP@5": 1 / 3}
    for metric, value in expected_human.items():
        assert v[(H, metric)][0] == pytest.approx(value), metric
        assert v[(G, metric)][0] == pytest.approx(1.0), metric


def test_all_targets_hand_worked(toy):
    run, qrels = toy
    v = score_run(run, qrels, ["q"], measure_grid(["NDCG", "MAP", "Recall", "P"], [1, 3]), ["all"])
    # Both copies relevant, at ranks 1 and 3: DCG@3 = 1 + 1/log2(4); ideal = 1 + 1/log2(3).
    assert v[("all", "NDCG@1")][0] == pytest.approx(1.0)
    assert v[("all", "NDCG@3")][0] == pytest.approx((1 + 0.5) / (1 + 1 / math.log2(3)))
    # AP@3 = (1/1 + 2/3) / 2 relevant documents.
    assert v[("all", "MAP@3")][0] == pytest.approx((1 + 2 / 3) / 2)
    assert v[("all", "Recall@1")][0] == pytest.approx(0.5)
    assert v[("all", "P@3")][0] == pytest.approx(2 / 3)


def test_relative_delta_of_toy(toy):
    run, qrels = toy
    v = score_run(run, qrels, ["q"], measure_grid(["NDCG"], [3]), [H, G])
    # (0.5 - 1) / 0.75 * 100
    assert relative_delta(v[(H, "NDCG@3")][0], v[(G, "NDCG@3")][0]) == pytest.approx(-200 / 3)
    assert relative_delta(0.0, 0.0) != relative_delta(0.0, 0.0)  # NaN when both are 0
    assert relative_delta(0.8, 0.2) == pytest.approx(120.0)


def test_source_shares(toy):
    run, _ = toy
    s = score_run(run, Qrels({}), ["q"], measure_grid(["Share"], [1, 3, 5]), [])
    assert s[(G, "Share@1")][0] == 1.0 and s[(H, "Share@1")][0] == 0.0
    assert s[(H, "Share@3")][0] == pytest.approx(1 / 3)
    assert s[(H, "Share@5")][0] == pytest.approx(2 / 5)


def test_metrics_follow_given_order_not_score_ties():
    """trec_eval re-sorts equal scores by document name; the protocol must keep the run's order."""
    corpus = Corpus(["a", "a"], [H, G], ["", ""], ["x", "x"])
    qrels = Qrels({"q": {"a": 1}})
    for first in (H, G):
        second = G if first == H else H
        pos = np.array([corpus.position("a", first), corpus.position("a", second)])
        run = Run(corpus, "t", {"q": pos}, {"q": np.array([1.0, 1.0])})
        v = score_run(run, qrels, ["q"], measure_grid(["NDCG"], [1]), [H, G])
        assert v[(first, "NDCG@1")][0] == 1.0
        assert v[(second, "NDCG@1")][0] == 0.0


def test_query_without_retrieved_documents_scores_zero():
    corpus = Corpus(["a"], [H], [""], ["x"])
    run = Run(corpus, "t", {"q1": np.array([0])}, {"q1": np.array([1.0])})
    qrels = Qrels({"q1": {"a": 1}, "q2": {"a": 1}})
    v = score_run(run, qrels, ["q1", "q2"], measure_grid(["NDCG"], [1]), [H])
    assert v[(H, "NDCG@1")].tolist() == [1.0, 0.0]


def test_graded_relevance_uses_grades_as_gains():
    # Ranking: grade-1 doc then grade-2 doc. DCG@2 = 1 + 2/log2(3); ideal = 2 + 1/log2(3).
    corpus = Corpus(["a", "b"], [H, H], ["", ""], ["x", "y"])
    run = Run(corpus, "t", {"q": np.array([0, 1])}, {"q": np.array([2.0, 1.0])})
    v = score_run(run, Qrels({"q": {"a": 1, "b": 2}}), ["q"], measure_grid(["NDCG"], [2]), [H])
    assert v[(H, "NDCG@2")][0] == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))


def test_paired_tests_on_hand_checkable_samples():
    from sourcebias.evaluation.stats.paired_tests import paired_randomization_test, paired_t_test

    a = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    b = np.zeros(12)
    # All 12 differences are +1: only the all-positive sign pattern (and its mirror) is as
    # extreme, so the exact two-sided p is 2 / 2^12; resampling estimates (k + 1) / (n + 1).
    p = paired_randomization_test(a, b, n_resamples=20000, seed=0)
    assert p < 0.002
    assert paired_randomization_test(a, a) == 1.0 and paired_t_test(a, a) == 1.0
    assert paired_randomization_test(a, b, seed=1) == paired_randomization_test(a, b, seed=1)  # seeded
    x = np.array([0.2, 0.5, 0.3, 0.9, 0.4])
    y = np.array([0.1, 0.55, 0.1, 0.6, 0.45])
    d = x - y
    t = d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
    from scipy import stats

    assert paired_t_test(x, y) == pytest.approx(2 * stats.t.sf(abs(t), df=len(d) - 1))


def test_ndsr_hand_worked(toy):
    """NDSR@k (Huang et al. 2026): ranks weighted 1/log2(1 + r). Toy ranking G, G, H, G, H, H."""
    run, _ = toy
    v = score_run(run, Qrels({}), ["q"], measure_grid(["NDSR"], [1, 3, 6]), [])
    w = [1 / math.log2(1 + r) for r in range(1, 7)]  # 1, 0.6309, 0.5, 0.4307, 0.3869, 0.3562
    assert v[(G, "NDSR@1")][0] == 1.0 and v[(H, "NDSR@1")][0] == 0.0
    assert v[(H, "NDSR@3")][0] == pytest.approx(w[2] / (w[0] + w[1] + w[2]))
    assert v[(G, "NDSR@3")][0] == pytest.approx((w[0] + w[1]) / (w[0] + w[1] + w[2]))
    assert v[(H, "NDSR@6")][0] == pytest.approx((w[2] + w[4] + w[5]) / sum(w))
    # a query with fewer documents than k in a run that ranks k for another query: the ranked ones' weights
    two = Run(run.corpus, "two", {"q": run.positions["q"][:2], "p": run.positions["q"]}, {"q": run.scores["q"][:2], "p": run.scores["q"]})
    assert score_run(two, Qrels({}), ["q", "p"], measure_grid(["NDSR"], [5]), [])[(G, "NDSR@5")][0] == 1.0
    # k beyond every ranking of the run (2 of the 6 documents): NDSR@5 would be NDSR@2 under another name, so none
    short = Run(run.corpus, "short", {"q": run.positions["q"][:2]}, {"q": run.scores["q"][:2]})
    assert np.isnan(score_run(short, Qrels({}), ["q"], measure_grid(["NDSR"], [5]), [])[(G, "NDSR@5")][0])
    assert score_run(short, Qrels({}), ["q"], measure_grid(["NDSR"], [2]), [])[(G, "NDSR@2")][0] == 1.0
    # a ranking of the whole corpus is complete: k beyond it is not short of anything
    assert score_run(run, Qrels({}), ["q"], measure_grid(["NDSR"], [10]), [])[(H, "NDSR@10")][0] == pytest.approx((w[2] + w[4] + w[5]) / sum(w))
