"""Twin-quality measures and singular-value spectra against hand-worked and planted values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sourcebias.analysis import quality, spectrum
from sourcebias.core.errors import ConfigError
from sourcebias.retrieval.lexical import EnglishAnalyzer


def test_term_similarity_with_the_bm25_analyzer():
    # EnglishAnalyzer: stop words (a, the, on, was) dropped, Porter stems: sitting -> sit
    llm = ["A cat was sitting on the mat.", "dogs dogs dogs"]
    human = ["The cats sat on the mat.", "Dogs bark"]
    r = quality.term_similarity(llm, human, EnglishAnalyzer())
    # pair 1: G = {cat, sit, mat}, H = {cat, sat, mat}: |G∩H| = 2, |G∪H| = 4, |H| = 3
    # pair 2: G = {dog}, H = {dog, bark}: |G∩H| = 1, |G∪H| = 2, |H| = 2
    np.testing.assert_allclose(r["jaccard"], [2 / 4, 1 / 2])
    np.testing.assert_allclose(r["overlap"], [2 / 3, 1 / 2])
    assert r["terms_llm"].tolist() == [3, 1] and r["terms_human"].tolist() == [3, 2] and r["terms_shared"].tolist() == [2, 1]


def test_term_similarity_sets_and_empty_documents():
    r = quality.term_similarity(["a a b c", "", "x"], ["a b d", "", ""], str.split)
    # sets {a,b,c} vs {a,b,d}: 2 / 4 and 2 / 3; empty vs empty: NaN; {x} vs {}: jaccard 0, overlap NaN
    assert r["jaccard"][0] == pytest.approx(0.5) and r["overlap"][0] == pytest.approx(2 / 3)
    assert math.isnan(r["jaccard"][1]) and math.isnan(r["overlap"][1])
    assert r["jaccard"][2] == 0 and math.isnan(r["overlap"][2])
    with pytest.raises(ConfigError, match="aligned"):
        quality.term_similarity(["a"], [], str.split)


def test_lengths():
    assert quality.word_counts(["one two  three", "", "a\nb"]).tolist() == [3, 0, 2]
    assert quality.token_counts(["The cats sat", "of"], EnglishAnalyzer()).tolist() == [2, 0]


def test_pair_and_random_pair_cosines():
    e_h = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
    e_l = np.array([[1.0, 1.0], [0.0, 1.0], [-1.0, -1.0]])
    np.testing.assert_allclose(quality.pair_cosines(e_l, e_h), [1 / math.sqrt(2), 1.0, -1.0])
    r = quality.random_pair_cosines(e_l, e_h, n_pairs=500, seed=3)
    i, j = r["llm_index"], r["human_index"]
    assert np.all(i != j)
    # the cosine of each drawn pair, worked out from the explicit formula
    expected = [e_l[a] @ e_h[b] / (np.linalg.norm(e_l[a]) * np.linalg.norm(e_h[b])) for a, b in zip(i, j)]
    np.testing.assert_allclose(r["cosine"], expected)
    # seeded and deterministic
    np.testing.assert_array_equal(quality.random_pair_cosines(e_l, e_h, n_pairs=500, seed=3)["llm_index"], i)


def test_random_pairs_are_uniform_over_off_diagonal():
    from scipy import stats

    n = 4
    i, j = quality.random_pair_indices(n, 24_000, seed=0)
    assert np.all(i != j)
    counts = np.bincount(i * n + j, minlength=n * n).reshape(n, n)
    assert np.all(np.diag(counts) == 0)
    off = counts[~np.eye(n, dtype=bool)]
    assert stats.chisquare(off).pvalue > 0.001  # 12 cells, 2,000 expected each


def test_tsne_map_separates_two_clusters_and_is_seeded():
    rng = np.random.default_rng(0)
    a = rng.normal(0, 1, (30, 8)) + 10
    b = rng.normal(0, 1, (30, 8)) - 10
    coords, sources = quality.tsne_map({"human": a, "llm": b}, perplexity=10, seed=1, max_iter=250)
    assert coords.shape == (60, 2)
    assert sources.tolist() == ["human"] * 30 + ["llm"] * 30
    # every point's nearest neighbour in the map is from its own cluster
    dist = np.linalg.norm(coords[:, None] - coords[None], axis=2)
    np.fill_diagonal(dist, np.inf)
    assert np.all(sources[dist.argmin(1)] == sources)
    coords2, _ = quality.tsne_map({"human": a, "llm": b}, perplexity=10, seed=1, max_iter=250)
    np.testing.assert_array_equal(coords, coords2)
    with pytest.raises(ConfigError, match="perplexity"):
        quality.tsne_map({"human": a}, perplexity=30)


def _planted(s, n, d, rng):
    u, _ = np.linalg.qr(rng.normal(size=(n, len(s))))
    v, _ = np.linalg.qr(rng.normal(size=(d, len(s))))
    return (u * s) @ v.T


def test_singular_values_recover_a_planted_spectrum():
    rng = np.random.default_rng(1)
    s_h = np.array([5.0, 3.0, 2.0, 1.0, 0.5])
    s_l = np.array([6.0, 3.3, 1.0, 0.5, 0.25])
    h, g = _planted(s_h, 40, 5, rng), _planted(s_l, 40, 5, rng)
    np.testing.assert_allclose(spectrum.singular_values(h), s_h)
    rows = spectrum.spectrum_table({"human": h, "llm": g})
    assert len(rows) == 10
    assert rows[0] == {"source": "human", "rank": 1, "value": pytest.approx(5.0), "relative": pytest.approx(1.0), "numerically_zero": False}
    llm_rel = [r["relative"] for r in rows if r["source"] == "llm"]
    np.testing.assert_allclose(llm_rel, s_l / s_h)
    summ = spectrum.ratio_summary(llm_rel, head=1, tail=2)
    assert summ["ratio_rank1"] == pytest.approx(1.2)
    assert summ["tail_geomean"] == pytest.approx(0.5)
    assert summ["ranks_above_1"] == 2 and summ["first_rank_below_1"] == 3


def test_centred_spectrum_matches_sklearn_pca():
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(2)
    x = rng.normal(size=(50, 6)) + 3.0
    np.testing.assert_allclose(spectrum.singular_values(x, center=True), PCA(n_components=6).fit(x).singular_values_, rtol=1e-10)
    # uncentred: the mean adds a large first value; Frobenius norm preserved
    s = spectrum.singular_values(x)
    assert np.sum(s**2) == pytest.approx(np.sum(x**2))
    # a rank-deficient matrix: the last singular value is rounding noise, its ratio is NaN
    y = np.concatenate([x[:, :5], x[:, :1] + x[:, 1:2]], axis=1)
    rows = spectrum.spectrum_table({"human": x, "llm": y})
    last = rows[-1]
    assert last["source"] == "llm" and last["numerically_zero"] and math.isnan(last["relative"])
    assert not any(r["numerically_zero"] for r in rows[:-1])
    assert spectrum.ratio_summary([r["relative"] for r in rows if r["source"] == "llm"])["ranks"] == 5
    with pytest.raises(ConfigError, match="same documents"):
        spectrum.spectrum_table({"human": x, "llm": x[:10]})


def test_numerical_rank_at_100k_rows_keeps_a_small_real_tail():
    """100,000 float32 "embeddings" of known rank 8: three large singular values and a real tail
    of five small ones (down to 0.01), planted exactly. Every planted value is reported, and
    only the rounding noise of the float32 entries (the 8 null directions) is marked zero. The
    old rule s_max · max(n, d) · eps (3.6 here) hid the whole tail and reported rank 3."""
    rng = np.random.default_rng(3)
    s = np.array([300.0, 200.0, 100.0, 0.5, 0.2, 0.1, 0.05, 0.01])
    x = _planted(s, 100_000, 16, rng).astype(np.float32)
    rows = spectrum.spectrum_table({"human": x, "llm": x})
    kept = [r["value"] for r in rows if r["source"] == "human" and not r["numerically_zero"]]
    assert len(kept) == 8  # the true rank, by construction
    np.testing.assert_allclose(kept, s, rtol=1e-3)  # the tail is real values, not noise
    # the tolerance: float32 eps times the Frobenius norm, sqrt(sum s²), computed here
    assert spectrum.zero_tolerance(x) == pytest.approx(np.finfo(np.float32).eps * np.sqrt(np.sum(s**2)), rel=1e-4)
