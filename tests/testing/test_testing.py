"""sourcebias.testing, the extension authors' test cases: they pass for the built-in retrievers,
statistics and measures, and they fail for a retriever that breaks a contract."""

from __future__ import annotations

import os
import unittest

import numpy as np

from sourcebias.retrieval import FirstStage, ScoreBlock, build_retriever
from sourcebias.testing import TOY_HUMAN, TOY_LLM, EstimatorTestCase, MeasureTestCase, PromptTestCase, RetrieverTestCase, StatisticTestCase, toy_dataset


class TestBM25Contract(RetrieverTestCase):
    def make_retriever(self):
        return build_retriever("bm25")


class TestPipelineContract(RetrieverTestCase):
    def make_retriever(self):
        return build_retriever("tfidf>>cut:2")


class TestTwinPreferenceContract(StatisticTestCase):
    def make_statistic(self):
        from sourcebias.evaluation.stats import get_statistic

        return get_statistic("twin_preference")


class TestRelativeDeltaContract(StatisticTestCase):
    def make_statistic(self):
        from sourcebias.evaluation.stats import get_statistic

        return get_statistic("relative_delta_ci")


class TestMeanDifferenceContract(EstimatorTestCase):
    def make_estimator(self):
        from sourcebias.clustered import get_estimator

        return get_estimator("mean_difference")


class TestClusteredProportionContract(EstimatorTestCase):
    def make_estimator(self):
        from sourcebias.clustered import get_estimator

        return get_estimator("clustered_proportion")


class TestPositionSourceContract(EstimatorTestCase):
    def make_estimator(self):
        from sourcebias.clustered import get_estimator

        return get_estimator("position_source")


def test_an_estimator_that_gives_an_interval_from_one_query_fails_the_case():
    from sourcebias.clustered.base import Estimate
    from sourcebias.clustered.mean_difference import MeanDifference

    class Naive(MeanDifference):
        """Refuses nothing: a t interval on the items whatever the queries."""

        def estimate(self, values, clusters, **kw):
            v = np.asarray(values, dtype=float)
            v = v[np.isfinite(v)]
            m = float(v.mean()) if len(v) else float("nan")
            return Estimate(estimate=m, low=m - 1.0, high=m + 1.0, p=0.5, items=len(v), queries=len(set(clusters)))

    class Case(EstimatorTestCase):
        def make_estimator(self):
            return Naive()

    with open(os.devnull, "w") as quiet:
        outcome = unittest.TextTestRunner(stream=quiet, verbosity=0).run(unittest.defaultTestLoader.loadTestsFromTestCase(Case))
    failed = {t.id().rsplit(".", 1)[-1] for t, _ in outcome.failures}
    assert {"test_one_to_four_queries_are_refused_by_the_shared_rule", "test_nothing_parsed_is_refused"} <= failed


class TestShareContract(MeasureTestCase):
    def measure_name(self):
        return "Share"


class TestNDCGContract(MeasureTestCase):
    def measure_name(self):
        return "NDCG"


class TestUmbrelaPromptContract(PromptTestCase):
    def prompt_spec(self):
        return "umbrela"

    def answer(self):
        return "##final score: 2", (2, 15)


class TestRankGPTPromptContract(PromptTestCase):
    def prompt_spec(self):
        return "rankgpt"

    def answer(self):
        return "[2] > [3] > [1]", ([1, 2, 0], {"unknown": 0, "duplicates": 0, "missing": 0})


class TestALCEPromptContract(PromptTestCase):
    def prompt_spec(self):
        return "alce"


def test_every_shipped_prompt_passes_the_prompt_case():
    from sourcebias.llmcalls.prompts import prompt_kinds

    for name in prompt_kinds():

        class Case(PromptTestCase):
            def prompt_spec(self, name=name):
                return name

        with open(os.devnull, "w") as quiet:
            outcome = unittest.TextTestRunner(stream=quiet, verbosity=0).run(unittest.defaultTestLoader.loadTestsFromTestCase(Case))
        assert outcome.wasSuccessful() and outcome.testsRun == 4, (name, outcome.failures, outcome.errors)


def test_a_prompt_no_stage_can_send_fails_the_case(tmp_path):
    path = tmp_path / "odd.toml"
    # a grade prompt with a field {a} that only the pairwise mode gives, and no {passage}: no stage can send it
    path.write_text('name = "odd"\nanswer = "grade"\nparser = "umbrela-grade"\n[[messages]]\nrole = "user"\ncontent = "Rate {query}: {a}"\n', encoding="utf-8")

    class Case(PromptTestCase):
        def prompt_spec(self):
            return str(path)

    with open(os.devnull, "w") as quiet:
        outcome = unittest.TextTestRunner(stream=quiet, verbosity=0).run(unittest.defaultTestLoader.loadTestsFromTestCase(Case))
    assert {t.id().rsplit(".", 1)[-1] for t, _ in outcome.failures} == {"test_a_stage_takes_it"}


class CorpusOrderTies(FirstStage):
    """Breaks the tie contract: every document scores 1, ranked in corpus order (human first)."""

    name = "corpus-order"

    def retrieve(self, corpus, queries, depth=1000, *, seed=0):
        from sourcebias.retrieval import Run

        n = min(depth, len(corpus))
        return Run(corpus, self.name, {q: np.arange(n) for q in queries}, {q: np.ones(n, dtype=np.float32) for q in queries}, {})

    def score(self, corpus, queries, depth):
        yield ScoreBlock(list(queries), np.ones((len(queries), len(corpus)), dtype=np.float32))


def test_the_toy_dataset_is_what_the_module_says():
    ds = toy_dataset()
    assert tuple(ds.sources) == ("human", "llm")
    assert len(ds.corpus) == len(TOY_HUMAN) + len(TOY_LLM)
    assert sorted(ds.evaluation_queries()) == ["q1", "q2", "q3"]  # q2 and q3 have a relevant document


def test_a_retriever_that_orders_ties_by_corpus_position_fails_the_case():
    class Case(RetrieverTestCase):
        def make_retriever(self):
            return CorpusOrderTies()

    with open(os.devnull, "w") as quiet:
        outcome = unittest.TextTestRunner(stream=quiet, verbosity=0).run(unittest.defaultTestLoader.loadTestsFromTestCase(Case))
    failed = {t.id().rsplit(".", 1)[-1] for t, _ in outcome.failures}
    assert failed == {"test_equal_scores_follow_the_tie_rule"}


def test_the_base_cases_are_not_collected():
    assert RetrieverTestCase.__test__ is False and TestBM25Contract.__test__ is True
