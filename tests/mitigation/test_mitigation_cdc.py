"""CDC's estimator: 2SLS with the source as instrument recovers a known causal slope where naive
OLS is confounded; hand-computed Wald and within-pair estimators; a seeded calibration sample."""

from __future__ import annotations

import numpy as np
import pytest

import sourcebias as sb
from sourcebias.core.errors import ConfigError
from sourcebias.mitigation.cdc import calibration_sample, correct, fit_iv

BETA = -1.5


def simulate(seed: int, n_pairs: int = 150):
    """Pairs (query, human doc, twin). A hidden quality u of each document raises both its
    perplexity and its score (the confounder); the LLM rewrite lowers perplexity by 0.5 and
    changes the score only through perplexity."""
    rng = np.random.default_rng(seed)
    q = np.repeat([f"q{i}" for i in range(n_pairs)], 2)
    llm = np.tile([0, 1], n_pairs)
    u = np.repeat(rng.normal(size=n_pairs), 2) + rng.normal(scale=0.3, size=2 * n_pairs)
    ppl = 3.5 - 0.5 * llm + 0.8 * u + rng.normal(scale=0.2, size=2 * n_pairs)
    score = 1.0 + BETA * ppl + 2.0 * u + rng.normal(scale=0.2, size=2 * n_pairs)
    return score, ppl, llm, q


def test_2sls_recovers_the_causal_slope_and_ols_does_not():
    score, ppl, llm, q = simulate(0)
    fit = fit_iv(score, ppl, llm, q)
    assert fit["ci_low"] <= BETA <= fit["ci_high"]
    assert fit["first_stage"]["f_stat"] > 10  # a strong instrument
    ols = fit["ols"]
    assert abs(ols["beta"] - BETA) > 3 * ols["se"]  # confounded: far from -1.5 (the hidden quality pushes it up)


def test_confidence_intervals_cover_near_the_nominal_rate():
    fits = [fit_iv(*simulate(seed), cov_type="clustered") for seed in range(50)]  # a twin pair shares its hidden quality
    covered = [f["ci_low"] <= BETA <= f["ci_high"] for f in fits]
    assert 0.86 <= np.mean(covered) <= 1.0  # 95% nominal; 50 draws: a binomial 95% range


def test_binary_instrument_gives_the_wald_estimator_and_the_within_pair_ratio():
    score, ppl, llm, q = simulate(3, n_pairs=40)
    fit = fit_iv(score, ppl, llm, q)
    wald = (score[llm == 1].mean() - score[llm == 0].mean()) / (ppl[llm == 1].mean() - ppl[llm == 0].mean())
    assert fit["beta"] == pytest.approx(wald, rel=1e-9) and fit["wald"] == pytest.approx(wald, rel=1e-9)
    fe = fit_iv(score, ppl, llm, q, query_effects=True)
    d_score = score[llm == 1] - score[llm == 0]
    d_ppl = ppl[llm == 1] - ppl[llm == 0]
    assert fe["beta"] == pytest.approx(d_score.sum() / d_ppl.sum(), rel=1e-9)  # one pair per query


def test_clustering_changes_the_standard_error_not_the_estimate():
    score, ppl, llm, q = simulate(5)
    a, b, c = (fit_iv(score, ppl, llm, q, cov_type=t) for t in ("robust", "clustered", "unadjusted"))
    assert a["beta"] == pytest.approx(b["beta"]) == pytest.approx(c["beta"])
    # the simulated errors are homoskedastic (robust ~ unadjusted) but correlated within a pair
    assert b["se"] != pytest.approx(a["se"], rel=0.05) and a["se"] == pytest.approx(c["se"], rel=0.05)
    with pytest.raises(ConfigError, match="cov_type"):
        fit_iv(score, ppl, llm, q, cov_type="bootstrap")


def test_correction_is_score_minus_beta_times_perplexity():
    np.testing.assert_allclose(correct(np.array([1.0, 2.0]), np.array([3.0, 4.0]), -0.5), [2.5, 4.0])


def test_calibration_sample_is_seeded_and_valid(nq_utd):
    ds = sb.load_dataset(nq_utd, split="test")
    a = calibration_sample(ds, 32, seed=42)
    assert a == calibration_sample(ds, 32, seed=42) and a != calibration_sample(ds, 32, seed=7)
    assert len({(p.query_id, p.doc_id) for p in a}) == 32
    for p in a:
        assert ds.qrels[p.query_id][p.doc_id] > 0 and p.grade > 0
        assert ds.corpus.position(p.doc_id, "human") is not None and ds.corpus.position(p.doc_id, "llama-2-7b-chat-tmp0.2") is not None
    with pytest.raises(ConfigError, match="relevant pairs with both copies"):
        calibration_sample(ds, 10**6)
