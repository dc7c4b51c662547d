"""`analyze decompose`: the joint gap regression against statsmodels called directly, a
clustered sandwich computed here with numpy, the truth of simulated data, the shares' definition,
the held-out half against scikit-learn's R², constant regressors, and the command end to end."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from sklearn.metrics import r2_score

from sourcebias.analysis import decompose as dc
from sourcebias.core.errors import ConfigError

TRUTH = {"intercept": 0.5, "perplexity": -0.8, "length": 0.02, "direction": 1.5}


def _simulated(n_queries=120, per_query=6, seed=0):
    """Rows clustered by query: a query effect shared by its rows (so clustering matters)."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_queries), per_query)
    n = len(groups)
    x = {"perplexity": rng.normal(0.3, 1.0, n), "length": rng.normal(20, 30, n), "direction": rng.normal(0.1, 0.5, n)}
    # a regressor correlated within query, so clustered and naive SEs differ
    x["direction"] += rng.normal(0, 0.5, n_queries)[groups]
    y = TRUTH["intercept"] + sum(TRUTH[k] * v for k, v in x.items()) + rng.normal(0, 1.0, n_queries)[groups] + rng.normal(0, 0.5, n)
    return y, x, groups


def _sandwich_se(y, X, groups):
    """Cluster-robust SEs by hand: (X'X)^-1 (sum_g X_g' u_g u_g' X_g) (X'X)^-1 with the factor
    G/(G-1) (N-1)/(N-K) (Stata's, statsmodels' default)."""
    b, *_ = np.linalg.lstsq(X, y, rcond=None)
    u = y - X @ b
    bread = np.linalg.inv(X.T @ X)
    meat = np.zeros((X.shape[1], X.shape[1]))
    for g in np.unique(groups):
        s = X[groups == g].T @ u[groups == g]
        meat += np.outer(s, s)
    n, k, G = len(y), X.shape[1], len(np.unique(groups))
    cov = bread @ meat @ bread * G / (G - 1) * (n - 1) / (n - k)
    return b, np.sqrt(np.diag(cov))


def test_estimates_and_clustered_ses_match_statsmodels_numpy_and_the_truth():
    y, x, groups = _simulated()
    res = dc.decompose_gap(y, x, groups, seed=1)
    terms = {t["term"]: t for t in res["terms"]}
    X = sm.add_constant(np.column_stack([x[k] for k in x]))
    direct = sm.OLS(y, X).fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)
    b, se = _sandwich_se(y, X, groups)
    ci = direct.conf_int(0.05)
    for k, name in enumerate(["intercept", *x]):
        t = terms[name]
        assert t["coef"] == pytest.approx(direct.params[k], rel=1e-10)
        assert t["coef"] == pytest.approx(b[k], rel=1e-8)
        assert t["se"] == pytest.approx(direct.bse[k], rel=1e-10)
        assert t["se"] == pytest.approx(se[k], rel=1e-8)
        assert (t["ci_low"], t["ci_high"]) == pytest.approx((ci[k, 0], ci[k, 1]), rel=1e-10)
        # the truth within 4 clustered SEs
        assert abs(t["coef"] - TRUTH[name]) < 4 * t["se"]
    # t intervals with G - 1 degrees of freedom
    from scipy import stats

    t = terms["length"]
    half = stats.t.ppf(0.975, 119) * t["se"]
    assert (t["ci_low"], t["ci_high"]) == pytest.approx((t["coef"] - half, t["coef"] + half), rel=1e-9)
    assert res["rows"] == len(y) and res["queries"] == 120 and res["excluded"] == {}
    assert res["r2"] == pytest.approx(direct.rsquared)


def test_standardised_coefficients_and_shares_follow_their_definitions():
    y, x, groups = _simulated(seed=3)
    res = dc.decompose_gap(y, x, groups)
    terms = {t["term"]: t for t in res["terms"]}
    for k, v in x.items():
        t = terms[k]
        assert t["std_coef"] == pytest.approx(t["coef"] * np.std(v, ddof=1) / np.std(y, ddof=1))
        assert t["std_ci_low"] == pytest.approx(t["ci_low"] * np.std(v, ddof=1) / np.std(y, ddof=1))
        assert t["share"] == pytest.approx(t["coef"] * v.mean() / y.mean())
    assert terms["intercept"]["share"] == pytest.approx(terms["intercept"]["coef"] / y.mean())
    # OLS with an intercept passes through the means: the in-sample shares add up to 1
    assert sum(t["share"] for t in terms.values()) == pytest.approx(1.0, abs=1e-9)


def test_held_out_half_against_statsmodels_and_sklearn():
    y, x, groups = _simulated(seed=4)
    h = dc.held_out(y, x, groups, seed=7)
    clusters = np.unique(groups)
    order = np.random.default_rng(7).permutation(len(clusters))
    fit_q = clusters[order[: len(clusters) // 2]]
    a = np.isin(groups, fit_q)
    X = sm.add_constant(np.column_stack([x[k] for k in x]))
    fit = sm.OLS(y[a], X[a]).fit()
    pred = X[~a] @ fit.params
    assert h["fit_queries"] == 60 and h["test_rows"] == int((~a).sum())
    assert h["r2"] == pytest.approx(r2_score(y[~a], pred), rel=1e-9)
    m = y[~a].mean()
    for k, name in enumerate(["intercept", *x]):
        assert h["shares"][name] == pytest.approx(fit.params[k] * X[~a, k].mean() / m, rel=1e-9)
    assert h["shares"]["residual"] == pytest.approx((y[~a] - pred).mean() / m, rel=1e-9)
    assert sum(h["shares"].values()) == pytest.approx(1.0, abs=1e-9)
    assert 0.3 < h["r2"] < 1.0  # the model is right, so it predicts the other half


def test_a_constant_regressor_is_refused_or_reported_never_nan():
    y, x, groups = _simulated(seed=5)
    x["length"] = np.full(len(y), 3.0)
    with pytest.raises(ConfigError, match="'length' is constant"):
        dc.fit_gap_model(y, x, groups)
    res = dc.decompose_gap(y, x, groups)
    assert "length" in res["excluded"] and "constant" in res["excluded"]["length"]
    assert res["factors"] == ["perplexity", "direction"]
    assert all(np.isfinite(t[k]) for t in res["terms"] for k in ("coef", "se", "ci_low", "ci_high", "p"))
    with pytest.raises(ConfigError, match="no regressor left"):
        dc.decompose_gap(y, {"length": x["length"]}, groups)
    with pytest.raises(ConfigError, match="collinear"):
        dc.fit_gap_model(y, {"a": x["perplexity"], "b": 2 * x["perplexity"]}, groups)
    with pytest.raises(ConfigError, match="2 clusters"):
        dc.fit_gap_model(y, {"a": x["perplexity"]}, np.zeros(len(y)))


def test_too_few_queries_give_coefficients_without_intervals():
    """The shared refusal rule (sourcebias.clustered.interval_refusal): 4 queries give 35 distinct
    resamples, too few for a 95% interval: the coefficients, no CI and no p, and the reason."""
    from sourcebias.clustered import interval_refusal

    y, x, groups = _simulated(n_queries=4, per_query=20, seed=8)
    res = dc.decompose_gap(y, x, groups)
    assert res["interval_refused"] == interval_refusal(4, 0.95)
    assert all(t["ci_low"] is None and t["p"] is None and np.isfinite(t["coef"]) for t in res["terms"])
    direct = sm.OLS(y, sm.add_constant(np.column_stack(list(x.values())))).fit()
    assert [t["coef"] for t in res["terms"]] == pytest.approx(list(direct.params))


def test_rows_with_a_missing_value_are_left_out_and_counted():
    y, x, groups = _simulated(seed=6)
    x["length"][[0, 5, 9]] = np.nan
    res = dc.decompose_gap(y, x, groups)
    keep = np.isfinite(x["length"])
    direct = sm.OLS(y[keep], sm.add_constant(np.column_stack([v[keep] for v in x.values()]))).fit()
    assert res["rows"] == len(y) - 3 and res["rows_left_out"] == 3 and res["missing_values"] == {"length": 3}
    assert res["terms"][2]["coef"] == pytest.approx(direct.params[2])


def test_cross_fitted_projection_uses_the_other_half():
    rng = np.random.default_rng(0)
    d = rng.normal(size=(11, 5)) + np.array([1.0, 0, 0, 0, 0])
    proj, half = dc.cross_fitted_projections(d, seed=2)
    assert set(half.tolist()) == {0, 1}
    for h in (0, 1):
        m = d[half == 1 - h].mean(axis=0)
        np.testing.assert_allclose(proj[half == h], d[half == h] @ (m / np.linalg.norm(m)))
    # a pair's own difference does not move its projection's direction
    d2 = d.copy()
    i = int(np.flatnonzero(half == 0)[0])
    d2[i] *= 5
    p2, _ = dc.cross_fitted_projections(d2, seed=2)
    same = (half == 0) & (np.arange(len(d)) != i)
    np.testing.assert_allclose(p2[same], proj[same])
    assert p2[i] == pytest.approx(5 * proj[i])
    with pytest.raises(ConfigError, match="at least 2"):
        dc.cross_fitted_projections(d[:1])


def test_coefficient_plot_is_written(tmp_path):
    y, x, groups = _simulated(seed=8)
    res = dc.decompose_gap(y, x, groups)
    terms = pd.DataFrame([{"llm_source": "llm", **t, "share_held_out": res["held_out"]["shares"][t["term"]]} for t in res["terms"]])
    path = dc.plot_coefficients(terms, tmp_path / "d.png", residual_held_out={"llm": res["held_out"]["shares"]["residual"]})
    assert path.stat().st_size > 10_000


def test_a_long_title_stays_inside_the_figure(tmp_path):
    """The title names every factor; with perplexity included it once ran off both edges: the
    saved image's first and last pixel columns must stay background in the title's band."""
    import matplotlib.image

    y, x, groups = _simulated(seed=8)
    res = dc.decompose_gap(y, x, groups)
    terms = pd.DataFrame([{"llm_source": "llm", **t, "share_held_out": res["held_out"]["shares"][t["term"]]} for t in res["terms"]])
    title = "nq-utd, minilm: twin score gap (297 pairs, 80 queries) on Δ log-perplexity, Δ words, Δ median IDF, Δe · u (cross-fitted) [text]"
    img = matplotlib.image.imread(dc.plot_coefficients(terms, tmp_path / "d.png", title=title))
    band = img[: img.shape[0] // 10, :, :3]
    assert band.max() > band.min()  # the title is drawn in the band ...
    assert (band[:, :3] > 0.95).all() and (band[:, -3:] > 0.95).all()  # ... and does not touch either edge


def test_command_end_to_end_on_a_small_dataset(tmp_path):
    pytest.importorskip("torch")
    from conftest import write_jsonl, write_qrels

    from sourcebias.analysis.result import AnalysisResult
    from sourcebias.cli.main import main

    rng = np.random.default_rng(0)
    words = ["river", "bridge", "cat", "dog", "solar", "bread", "museum", "rain", "valley", "mayor", "school", "panel", "paint", "century", "bake"]
    root = tmp_path / "ds"
    human = [" ".join(rng.choice(words, size=rng.integers(6, 14))) for _ in range(40)]
    llm = [t + " " + " ".join(rng.choice(words, size=rng.integers(0, 6))) for t in human]
    write_jsonl(root / "corpus" / "human.jsonl", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(human)])
    write_jsonl(root / "corpus" / "llm.jsonl", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(llm)])
    write_jsonl(root / "queries.jsonl", [{"_id": f"q{j}", "text": " ".join(words[j : j + 2])} for j in range(10)])
    write_qrels(root / "qrels" / "test.tsv", [(f"q{j}", f"d{4 * j + k}", 1) for j in range(10) for k in range(4)] + [("q0", "d39", 0)])
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_:
        main(["analyze", "decompose", str(root), "-o", str(out), "--cache-dir", str(tmp_path / "cache")])
    assert exit_.value.code == 0
    r = AnalysisResult.load(out)
    e = r.summary["sources"]["llm"]
    assert e["rows"] == 40 and e["queries"] == 10 and r.summary["not_included"]["perplexity"]
    assert e["factors"] == ["length", "median_idf", "direction"]
    pairs = r.tables["decompose_pairs"]
    wl = np.array([len(t.split()) for t in llm])
    wh = np.array([len(t.split()) for t in human])
    idx = pairs["doc_id"].str[1:].astype(int).to_numpy()
    np.testing.assert_array_equal(pairs["delta_length"], wl[idx] - wh[idx])
    from sentence_transformers import SentenceTransformer

    from sourcebias.models.hub import resolve_model

    st = SentenceTransformer(resolve_model("sentence-transformers/all-MiniLM-L6-v2"), device="cpu")
    q = st.encode([f"{words[int(k[1:])]} {words[int(k[1:]) + 1]}" for k in pairs["query_id"]], normalize_embeddings=True)
    gap = np.sum(q * (st.encode([llm[i] for i in idx], normalize_embeddings=True) - st.encode([human[i] for i in idx], normalize_embeddings=True)), axis=1)
    np.testing.assert_allclose(pairs["gap"], gap, atol=2e-5)
    direct = sm.OLS(pairs["gap"], sm.add_constant(pairs[["delta_length", "delta_median_idf", "delta_direction"]])).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(pairs["query_id"])[0]}, use_t=True
    )
    t = r.tables["decompose_terms"]
    np.testing.assert_allclose(t["coef"], direct.params.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(t["se"], direct.bse.to_numpy(), rtol=1e-6)
    assert (out / "figures" / "decompose.png").is_file()


@pytest.mark.slow
def test_perplexity_factor_with_smollm2_on_a_tiny_dataset(tmp_path):
    pytest.importorskip("torch")
    from conftest import write_jsonl, write_qrels
    from lm_helpers import plain_nll, store_sharing_models

    import sourcebias as sb
    from sourcebias.models.llm import load_causal_lm

    human = [
        "The river flooded the valley after rain.",
        "A new bridge opened on Monday.",
        "Fresh bread is baked every morning.",
        "The museum shows old paintings.",
        "Solar panels power the school.",
        "Dogs bark at night.",
    ]
    llm = [
        "After the rain, the river flooded the valley.",
        "On Monday a new bridge was opened.",
        "Every morning fresh bread gets baked.",
        "Old paintings are shown at the museum.",
        "The school is powered by solar panels.",
        "At night, dogs bark.",
    ]
    root = tmp_path / "ds"
    write_jsonl(root / "corpus" / "human.jsonl", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(human)])
    write_jsonl(root / "corpus" / "llm.jsonl", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(llm)])
    write_jsonl(root / "queries.jsonl", [{"_id": f"q{j}", "text": t} for j, t in enumerate(["river flood", "bread", "school power"])])
    write_qrels(root / "qrels" / "test.tsv", [("q0", "d0", 1), ("q0", "d1", 1), ("q1", "d2", 1), ("q1", "d3", 1), ("q2", "d4", 1), ("q2", "d5", 1)])
    ds = sb.load_dataset(root)
    cache = store_sharing_models(tmp_path / "cache")
    r = dc.decompose(ds, "minilm", lm="lm:smollm2", options={"cache_dir": cache})
    e = r.summary["sources"]["llm"]
    assert "perplexity" in r.summary["factors_requested"] and "not_included" not in r.summary
    pairs = r.tables["decompose_pairs"]
    # Δ log-perplexity of each pair against a plain forward pass of SmolLM2 (not the package's scorer)
    model, tok = load_causal_lm("smollm2", device="cpu")
    idx = pairs["doc_id"].str[1:].astype(int).to_numpy()
    np.testing.assert_allclose(pairs["delta_perplexity"], [plain_nll(model, tok, llm[i]) - plain_nll(model, tok, human[i]) for i in idx], atol=4e-3)
    # 6 pairs over 3 queries: 5 terms leave 1 residual degree of freedom; the model is fitted, and says so
    assert e["rows"] == 6 and "perplexity" in e["factors"]
