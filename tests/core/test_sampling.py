"""One seeded sample for every ``--max-queries`` and ``--max-pairs``: the helper, and each of its
users giving the very samples it gave before the helper replaced six copies of the rule.

The samples pinned here were printed by the code before the change (sourcebias at the merge of
issues 38c/39a), for the inputs written below; a change of the rule shows as a changed list.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from sourcebias.core.sampling import seeded_sample

ITEMS = list("abcdefghij")


def test_the_rule_by_hand():
    # numpy.random.default_rng(3).permutation(10) = [9, 6, 0, 2, 1, 4, 7, 5, 3, 8]: the first 4, in the items' order
    assert seeded_sample(ITEMS, 4, 3) == ["a", "c", "g", "j"]
    # default_rng([5, 2]).choice(10, 4, replace=False) = [4, 6, 1, 5]
    assert seeded_sample(ITEMS, 4, [5, 2], draw="choice") == ["b", "e", "f", "g"]
    assert seeded_sample(ITEMS, None, 3) == ITEMS and seeded_sample(ITEMS, 10, 3) == ITEMS and seeded_sample(ITEMS, 99, 3) == ITEMS
    assert seeded_sample(ITEMS, 0, 3) == []
    assert seeded_sample(tuple(ITEMS), 2, 3) == ["g", "j"]  # the first 2 of that permutation; any sequence, a list back


def test_a_larger_sample_holds_a_smaller_one_and_keeps_the_order():
    ids = [f"q{i}" for i in np.random.default_rng(0).permutation(200)]  # an order that is not sorted
    for seed in range(5):
        small, large = seeded_sample(ids, 20, seed), seeded_sample(ids, 50, seed)
        assert set(small) < set(large)
        assert large == [q for q in ids if q in set(large)]  # the items' own order


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="draw must be one of"):
        seeded_sample(ITEMS, 2, 0, draw="shuffle")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a sample of -1"):
        seeded_sample(ITEMS, -1, 0)


@pytest.fixture(scope="module")
def nq():
    from sourcebias.data import load_dataset

    return load_dataset("nq-utd")


def test_every_user_gives_the_sample_it_gave_before(nq):
    from sourcebias.audit.calibrate import sample_pair_ids
    from sourcebias.audit.detector import split_pairs
    from sourcebias.audit.job import sample_queries
    from sourcebias.citations.job import sample
    from sourcebias.detect.job import sample_positions
    from sourcebias.judges.items import judged_queries
    from sourcebias.retrieval.run import Run
    from sourcebias.simulate.loop import evaluation_queries, round_queries

    ids = nq.evaluation_queries()
    assert judged_queries(nq, max_queries=7, seed=3) == ["Sports_q1", "News_q12", "Scientific_q10", "Technology_q1", "Technology_q9", "Autos_q3", "Music_q9"]
    assert sample(ids[::-1], 7, 3) == ["Games_q8", "Music_q2", "Technology_q11", "Technology_q10", "Technology_q2", "Scientific_q6", "News_q5"]
    assert sample_pair_ids([f"d{i}" for i in (5, 3, 9, 1, 7, 2, 8, 0, 6, 4, 11, 10)], 5, 2) == ["d10", "d11", "d4", "d5", "d9"]
    train, calibration = split_pairs([f"d{i:02d}" for i in range(20)], calibration_share=0.25, max_pairs=12, seed=4)
    assert (train, calibration) == (["d00", "d01", "d02", "d08", "d10", "d13", "d15", "d16", "d18"], ["d05", "d07", "d09"])
    assert sample_positions(nq, max_pairs=4, seed=2).tolist() == [7, 23, 123, 154, 807, 823, 923, 954]
    two = [np.array([0, 1]), np.array([2.0, 1.0])]
    a = Run(nq.corpus, "a", dict.fromkeys(ids, two[0]), dict.fromkeys(ids, two[1]), {})
    b = Run(nq.corpus, "b", dict.fromkeys(ids[5:], two[0]), dict.fromkeys(ids[5:], two[1]), {})
    runs = {"a": a, "b": b}
    assert sorted(sample_queries(runs, 6, 9)["a"].query_ids) == ["Movies_q1", "Movies_q6", "News_q2", "Scientific_q5", "Scientific_q6", "Technology_q12"]
    cfg = SimpleNamespace(seed=5, queries_per_round=6, eval_queries=9)
    assert round_queries(cfg, ids, 2) == ["Sports_q7", "News_q7", "Scientific_q9", "Autos_q1", "Autos_q8", "Music_q5"]
    assert evaluation_queries(cfg, nq) == [
        "Sports_q2",
        "News_q11",
        "Technology_q1",
        "Technology_q5",
        "Autos_q2",
        "Autos_q3",
        "Music_q4",
        "Music_q6",
        "Games_q7",
    ]


def test_one_seed_names_one_sample_in_every_command(nq):
    """``judge``, ``cite`` and ``evaluate`` draw the same queries from the same list with the same seed."""
    from sourcebias.citations.job import sample
    from sourcebias.evaluation import evaluate
    from sourcebias.judges.items import judged_queries
    from sourcebias.retrieval import build_retriever

    ids = nq.evaluation_queries()
    picked = judged_queries(nq, max_queries=12, seed=7)
    assert sample(ids, 12, 7) == picked
    result = evaluate(nq, [build_retriever("bm25")], depth=10, seed=7, sole=False, max_queries=12)
    assert result.query_ids == picked == result.parameters["query_sample"]


@pytest.mark.parametrize("n", [0, -3])
def test_a_sample_below_one_is_refused_by_every_plan_with_the_same_message(n: int) -> None:
    from sourcebias.core.errors import ConfigError
    from sourcebias.core.sampling import check_sample_size
    from sourcebias.evaluation.plan import EvaluationPlan
    from sourcebias.judges.plan import JudgePlan

    with pytest.raises(ConfigError, match=f"^--max-queries must be at least 1, got {n}$"):
        check_sample_size(n)
    with pytest.raises(ConfigError, match=f"^--max-queries must be at least 1, got {n}$"):
        JudgePlan(max_queries=n)
    with pytest.raises(ConfigError, match=f"^--max-pairs must be at least 1, got {n}$"):
        check_sample_size(n, "--max-pairs")
    with pytest.raises(ConfigError, match=f"^--max-queries must be at least 1, got {n}$"):
        EvaluationPlan(retrievers=("bm25",), max_queries=n).check()
    check_sample_size(None)
    check_sample_size(1)
    assert JudgePlan(max_queries=1).max_queries == 1
