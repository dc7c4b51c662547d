"""The power of the test that marks ``*`` in ``evaluate`` (issue 22): the paired randomization
test corrected across the report's tests. The advised n is checked by simulating studies on the
real nq-utd pilot and running the corrected test on each, independently of the power code."""

from __future__ import annotations

import math

import numpy as np
import pytest

import sourcebias as sb
from sourcebias.power import ANALYTIC, RESAMPLING, PowerSettings
from sourcebias.power.analysis import pilots_of
from sourcebias.power.family import adjust_rows

ALPHA = 0.05


@pytest.fixture
def statsmodels_without_gc(monkeypatch):
    """statsmodels' Holm branch runs ``gc.collect()`` on every call: a full collection, one to two
    seconds each in a test process holding models, for 200 calls per test; the p-values do not
    depend on it (see sourcebias.evaluation.stats.multiple)."""
    import gc

    monkeypatch.setattr(gc, "collect", lambda generation=2: 0)


def test_hand_holm_is_statsmodels(statsmodels_without_gc):
    """The step-down rule star_share applies is statsmodels' Holm (adjusted p < α)."""
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(9)
    for _ in range(200):
        p = rng.random(6) ** 4
        adjusted = multipletests(p, method="holm")[1]
        order = list(np.argsort(p, kind="stable"))
        for j in range(6):
            rank = order.index(j)
            assert all(p[order[i]] * (6 - i) < ALPHA for i in range(rank + 1)) == (adjusted[j] < ALPHA)


@pytest.mark.parametrize("method", ["holm", "fdr_bh", "bonferroni"])
def test_adjust_rows_is_statsmodels_multipletests_per_row(method, statsmodels_without_gc):
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(4)
    p = rng.random((200, 6)) ** 3  # many small p-values, some ties at the cap
    p[0] = [0.01, 0.01, 0.04, 0.2, 0.5, 0.011]  # ties in the order
    expected = np.array([multipletests(row, method=method)[1] for row in p])
    np.testing.assert_allclose(adjust_rows(p, method), expected, rtol=1e-12, atol=0)


@pytest.fixture(scope="module")
def nq_pilot(nq_utd):
    """The quick start's pilot: bm25 and tfidf on nq-utd, NDCG@1, 3, 5 (80 queries)."""
    ds = sb.load_dataset(nq_utd)
    return sb.evaluate(ds, [sb.build_retriever("bm25"), sb.build_retriever("tfidf")], measures=sb.measure_grid(["NDCG"], [1, 3, 5]), sole=False)


def sign_flip_p(d: np.ndarray, flips: np.ndarray) -> float:
    """Two-sided sign-flip randomization p of mean(d) = 0 (the test evaluate runs, written here
    independently): (1 + #{|Σ s·d| >= |Σ d|}) / (1 + R); p = 1 when every difference is 0."""
    if np.allclose(d, 0):
        return 1.0
    t = abs(d.sum())
    null = np.abs(flips @ d)
    return float((1 + np.count_nonzero(null >= t - 1e-12)) / (1 + len(flips)))


def star_share(pilot, n: int, studies: int, seed: int, target: tuple[str, str]) -> float:
    """Share of ``studies`` simulated studies of n queries (drawn with replacement from the pilot,
    the same queries for every test) in which the target test gets its * in evaluate: the
    randomization test of each (retriever, measure), Holm-corrected across all six (step-down,
    written here: the target is marked when every p up to its rank, times m − i + 1, is below α;
    the same rule as statsmodels' adjusted p < α), corrected p < 0.05."""
    from sourcebias.evaluation.results import MIXED, Key

    keys = [(r, m) for r in ("bm25", "tfidf") for m in ("NDCG@1", "NDCG@3", "NDCG@5")]
    llm = pilot.other_sources[0]
    d = np.array([pilot.per_query[Key(r, MIXED, pilot.human_source, m)] - pilot.per_query[Key(r, MIXED, llm, m)] for r, m in keys])
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(studies):
        x = d[:, rng.integers(0, d.shape[1], n)]
        flips = rng.integers(0, 2, size=(1000, n)).astype(float) * 2 - 1
        null = np.abs(flips @ x.T)  # the same sign patterns for the six tests, as sign_flip_p applies them
        p = np.array(
            [1.0 if np.allclose(row, 0) else (1 + np.count_nonzero(null[:, j] >= abs(row.sum()) - 1e-12)) / (1 + len(flips)) for j, row in enumerate(x)]
        )
        order = list(np.argsort(p, kind="stable"))
        rank = order.index(keys.index(target))
        hits += all(p[order[i]] * (len(p) - i) < ALPHA for i in range(rank + 1))
    return hits / studies


def test_hand_sign_flip_is_evaluates_randomization_test(nq_pilot):
    """The simulation's test agrees with evaluate's own (scipy.stats.permutation_test) on the pilot."""
    from sourcebias.evaluation.results import MIXED, Key
    from sourcebias.evaluation.stats.paired_tests import paired_randomization_test

    llm = nq_pilot.other_sources[0]
    h, g = nq_pilot.per_query[Key("bm25", MIXED, "human", "NDCG@1")], nq_pilot.per_query[Key("bm25", MIXED, llm, "NDCG@1")]
    flips = np.random.default_rng(0).choice([-1.0, 1.0], size=(20000, len(h)))
    assert sign_flip_p(h - g, flips) == pytest.approx(paired_randomization_test(h, g, n_resamples=20000, seed=1), abs=0.01)


def test_advised_n_gives_the_claimed_chance_of_a_star(nq_pilot):
    """At the n power advises for 80% (bm25 NDCG@1 at the pilot's difference), the share of
    simulated studies whose corrected test marks * matches the power claimed, within Monte Carlo
    error; the uncorrected advice (the old figure) gives a * far less often than 80%."""
    settings = PowerSettings(ns=(100,), resamples=2000, max_n=5000)
    pilots, _ = pilots_of(nq_pilot, settings=settings, statistics=["difference"])
    p = next(x for x in pilots if (x.retriever, x.measure) == ("bm25", "NDCG@1"))
    effect = p.model.estimate
    n_star, _ = p.model.n_needed(RESAMPLING, effect, 0.8, 5000)
    n_old, _ = p.uncorrected.n_needed(RESAMPLING, effect, 0.8, 5000)
    assert n_old < n_star  # the correction costs queries
    claim, claim_old = p.model.power(RESAMPLING, n_star, effect), p.model.power(RESAMPLING, n_old, effect)
    studies = 300
    for n, predicted in ((n_star, claim), (n_old, claim_old)):
        share = star_share(nq_pilot, n, studies, seed=n, target=("bm25", "NDCG@1"))
        se = math.sqrt(predicted * (1 - predicted) * (1 / studies + 1 / settings.resamples))
        assert abs(share - predicted) <= 3 * se + 0.01, f"n = {n}: predicted {predicted:.3f}, {studies} studies give a * in {share:.3f}"
        if n == n_old:
            assert share < 0.75, f"the uncorrected advice n = {n} gives a * in {share:.3f} of studies"
    assert claim >= 0.8 and p.model.power(ANALYTIC, n_star, effect) <= claim + 0.03  # the analytic figure is a lower bound


def test_labels_say_what_is_computed(nq_pilot):
    """The analytic method names the clustered z-test of twin preference, not an exact binomial
    sign test over independent pairs; the paired rows name the corrected randomization test."""
    res = sb.power.power_analysis(
        nq_pilot, settings=PowerSettings(ns=(50,), resamples=200, max_n=400), statistics=["difference"], measures=["NDCG@3"], retrievers=["bm25"]
    )
    assert "exact binomial" not in res.methods[ANALYTIC] and "query-clustered z-test" in res.methods[ANALYTIC]
    star = res.pilots[0]["test"]
    assert "randomization" in star and "Holm-corrected across 1 tests" not in star
    assert {r["test"] for r in res.rows} == {"star"}  # one test in the family: corrected = uncorrected, shown once


def test_a_pilot_without_an_evaluable_query_is_refused_naming_the_qrels(tmp_path, capsys):
    """A pilot folder whose split had no judgement of grade > 0 (0 queries evaluated): power stops
    (exit 2) naming the qrels file, instead of reporting nothing with exit 0."""
    from conftest import write_jsonl, write_qrels

    from sourcebias.cli.main import main
    from sourcebias.evaluation import EvaluationResult, parse_measure
    from sourcebias.evaluation.protocol import json_safe
    from sourcebias.study import write_evaluation

    root = tmp_path / "data"
    for source in ("human", "llm"):
        write_jsonl(root / "corpus" / f"{source}.jsonl", [{"_id": f"d{i}", "title": "", "text": f"{source} text {i}"} for i in range(3)])
    write_jsonl(root / "queries.jsonl", [{"_id": "q0", "text": "text"}, {"_id": "q1", "text": "other"}])
    qrels = root / "qrels" / "test.tsv"
    write_qrels(qrels, [("q0", "d0", 0), ("q1", "d1", 0)])  # every judgement grade 0
    ds = sb.load_dataset(root)
    # the folder an earlier evaluate wrote for it: no query evaluated
    result = EvaluationResult(
        dataset=json_safe(ds.describe()), human_source="human", sources=["human", "llm"], measures=[parse_measure("NDCG@3")], query_ids=[]
    )
    write_evaluation(result, tmp_path / "pilot")
    with pytest.raises(SystemExit) as info:
        main(["power", str(tmp_path / "pilot"), "--statistic", "difference"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and str(qrels) in " ".join(err.split()).replace("\n", "") and "grade > 0" in err
