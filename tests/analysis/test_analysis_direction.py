"""The LLM-human direction: planted directions, the sign-flip null, and the gap decomposition."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from sourcebias.analysis import direction
from sourcebias.core.errors import ConfigError


def _planted(n, d, c, noise, seed):
    rng = np.random.default_rng(seed)
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    e_h = rng.normal(size=(n, d))
    e_l = e_h + c * u + noise * rng.normal(size=(n, d))
    return e_l, e_h, u


def test_hand_worked_direction():
    e_h = np.zeros((2, 2))
    e_l = np.array([[1.0, 0.0], [0.0, 1.0]])
    r = direction.estimate_direction(e_l, e_h, n_permutations=0)
    np.testing.assert_allclose(r.unit, [1 / math.sqrt(2)] * 2)
    assert r.norm == pytest.approx(math.sqrt(0.5))
    assert r.consistency == pytest.approx(1 / math.sqrt(2))
    np.testing.assert_allclose(r.projections, [1 / math.sqrt(2)] * 2)
    assert r.p_norm is None
    assert direction.direction_cosine([1, 0], [1, 1]) == pytest.approx(1 / math.sqrt(2))
    with pytest.raises(ConfigError, match="undefined"):
        direction.estimate_direction(e_h, e_h, n_permutations=0)


def test_planted_direction_is_recovered():
    # the mean of the noise has norm about noise * sqrt(d / n) = 0.08, against c = 1
    e_l, e_h, u = _planted(n=400, d=64, c=1.0, noise=0.2, seed=0)
    r = direction.estimate_direction(e_l, e_h, n_permutations=1000, seed=0)
    assert direction.direction_cosine(r.unit, u) > 0.99
    assert r.p_norm == pytest.approx(1 / 1001) and r.p_consistency == pytest.approx(1 / 1001)
    # consistency: cos(c u + noise, u) is about c / sqrt(c^2 + d noise^2) when d is large
    assert r.consistency == pytest.approx(1.0 / math.sqrt(1.0 + 64 * 0.04), abs=0.02)
    assert r.null_norm.size == 1000 and r.null_projections.size == 20 * 400
    s = r.summary()
    assert s["pairs"] == 400 and s["dimension"] == 64 and s["permutations"] == 1000


def test_random_flip_p_value_approaches_the_exact_enumeration():
    rng = np.random.default_rng(5)
    d = rng.normal(size=(8, 3)) + np.array([0.4, 0.0, 0.0])
    obs = np.linalg.norm(d.mean(0))
    # exact sign-flip p over all 2^8 patterns (the identity included)
    null = [np.linalg.norm((np.array(s)[:, None] * d).mean(0)) for s in itertools.product([-1.0, 1.0], repeat=8)]
    p_exact = np.mean(np.array(null) >= obs - 1e-12)
    r = direction.estimate_direction(d, np.zeros_like(d), n_permutations=20_000, seed=1)
    assert r.p_norm == pytest.approx(p_exact, abs=0.01)


def test_symmetric_noise_gives_roughly_uniform_p_values():
    ps_norm, ps_cons = [], []
    for seed in range(40):
        rng = np.random.default_rng(100 + seed)
        e_h = rng.normal(size=(60, 8))
        e_l = e_h + rng.normal(size=(60, 8))  # differences symmetric about 0: no direction
        r = direction.estimate_direction(e_l, e_h, n_permutations=500, seed=seed)
        ps_norm.append(r.p_norm)
        ps_cons.append(r.p_consistency)
    assert stats.kstest(ps_norm, "uniform").pvalue > 0.01
    assert stats.kstest(ps_cons, "uniform").pvalue > 0.01
    assert np.mean(np.array(ps_norm) < 0.05) < 0.2


def test_gap_decomposition_hand_worked_and_exact():
    q = np.array([[1.0, 2.0]])
    e_l, e_h = np.array([[3.0, 1.0]]), np.array([[1.0, 1.0]])  # delta = (2, 0), gap = 2
    r = direction.score_gap_decomposition(q, e_l, e_h, [1.0, 0.0])
    assert (r["mean_gap"], r["mean_along"], r["mean_residual"], r["share_along"]) == pytest.approx((2.0, 2.0, 0.0, 1.0))
    r = direction.score_gap_decomposition(q, e_l, e_h, [0.0, 3.0])  # u = (0, 1): all residual
    assert (r["mean_along"], r["mean_residual"], r["share_along"]) == pytest.approx((0.0, 2.0, 0.0))

    e_l, e_h, u = _planted(n=200, d=32, c=0.3, noise=0.5, seed=2)
    qs = np.random.default_rng(9).normal(size=(200, 32)) + 0.5 * u
    r = direction.score_gap_decomposition(qs, e_l, e_h, u)
    np.testing.assert_allclose(r["along"] + r["residual"], r["gap"], atol=1e-12)
    np.testing.assert_allclose(r["gap"], np.einsum("ij,ij->i", qs, e_l - e_h))
    # the planted shift contributes (q·u) c on average: 0.5 * 0.3 of the gap
    assert r["mean_along"] == pytest.approx(np.mean((qs @ u) * ((e_l - e_h) @ u)))
    with pytest.raises(ConfigError, match="same shape"):
        direction.score_gap_decomposition(qs[:5], e_l, e_h, u)
