"""compare-directions: the PN direction on a hand-made qrels (policy and counts), the angle and its
sign-flip nulls against exact enumeration and direct numpy, the random-vector reference against
simulation, and the joint cross-dataset sign-flip test against exact enumeration and a loop."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from sourcebias.analysis import directions_compare as dc
from sourcebias.core.errors import ConfigError


def _planted(n, d, c, seed, u=None):
    rng = np.random.default_rng(seed)
    if u is None:
        u = rng.normal(size=d)
        u /= np.linalg.norm(u)
    return c * u + rng.normal(size=(n, d)), u


def test_random_reference_matches_simulated_random_unit_vectors():
    d = 16
    rng = np.random.default_rng(0)
    a = rng.normal(size=(40_000, d))
    b = rng.normal(size=(40_000, d))
    cos = np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    ref = dc.random_cosine_reference(d, observed=0.3)
    assert ref["cos_low"] == pytest.approx(np.quantile(cos, 0.025), abs=0.01)
    assert ref["cos_high"] == pytest.approx(np.quantile(cos, 0.975), abs=0.01)
    assert ref["p_two_sided"] == pytest.approx(np.mean(np.abs(cos) >= 0.3), abs=0.01)
    assert ref["angle_low_deg"] == pytest.approx(np.degrees(np.arccos(ref["cos_high"])))
    assert stats.kstest((1 + cos) / 2, "beta", args=((d - 1) / 2, (d - 1) / 2)).pvalue > 0.001
    with pytest.raises(ConfigError):
        dc.random_cosine_reference(1)


def test_flipped_cosines_by_direct_computation_and_the_angle_p_against_exact_enumeration():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(9, 4)) + np.array([0.5, 0.3, 0, 0])
    fixed = np.array([1.0, 0, 0, 0])
    # the flips, reproduced: the same generator draws the same ±1 matrix
    null = dc.flipped_cosines(a, fixed, n_permutations=7, seed=11, chunk=3)
    g = np.random.default_rng(11)
    direct = []
    for b in (3, 3, 1):
        s = g.integers(0, 2, size=(b, 9), dtype=np.int8) * 2 - 1.0
        m = s @ a
        direct += list(m[:, 0] / np.linalg.norm(m, axis=1))
    np.testing.assert_allclose(null, direct)
    # the p of the angle against all 2^9 sign patterns (random flips approach it)
    b = rng.normal(size=(30, 4)) + np.array([1.0, 0, 0, 0])
    res = dc.angle_test(a, b, n_permutations=20_000, seed=1)["summary"]
    ub = b.mean(0) / np.linalg.norm(b.mean(0))
    ua = a.mean(0) / np.linalg.norm(a.mean(0))
    assert res["cosine"] == pytest.approx(ua @ ub)
    assert res["angle_deg"] == pytest.approx(np.degrees(np.arccos(ua @ ub)))
    exact = []
    for s in itertools.product([-1.0, 1.0], repeat=9):
        m = np.array(s) @ a
        exact.append(abs(m @ ub) / np.linalg.norm(m))
    assert res["p_flip_a"] == pytest.approx(np.mean(np.array(exact) >= abs(res["cosine"]) - 1e-12), abs=0.01)


def test_aligned_directions_are_detected_and_orthogonal_ones_are_not():
    d = 64
    lh, u = _planted(300, d, 2.0, seed=0)
    pn, _ = _planted(80, d, 2.0, seed=1, u=u)  # noise of the means: sqrt(d / n) = 0.46 and 0.89
    res = dc.angle_test(pn, lh, n_permutations=999, seed=0)["summary"]
    assert res["cosine"] > 0.8 and res["p_flip_a"] == pytest.approx(1 / 1000) and res["p_flip_b"] == pytest.approx(1 / 1000)
    assert res["random"]["p_two_sided"] < 1e-6
    # an orthogonal PN direction: the angle is what chance gives
    v = np.random.default_rng(5).normal(size=d)
    v -= (v @ u) * u
    pn2, _ = _planted(80, d, 2.0, seed=2, u=v / np.linalg.norm(v))
    res2 = dc.angle_test(pn2, lh, n_permutations=999, seed=0)["summary"]
    assert abs(res2["cosine"]) < 0.3 and res2["p_flip_a"] > 0.01 and res2["random"]["p_two_sided"] > 0.01


def test_joint_sign_flip_against_exact_enumeration_and_a_loop():
    rng = np.random.default_rng(2)
    d1 = rng.normal(size=(5, 3)) + np.array([0.6, 0, 0])
    d2 = rng.normal(size=(4, 3)) + np.array([0.6, 0, 0])
    res = dc.joint_sign_flip([d1, d2], n_permutations=20_000, seed=0)
    m1, m2 = d1.mean(0), d2.mean(0)
    assert res["shared_norm"] == pytest.approx(np.linalg.norm((m1 + m2) / 2))
    assert res["mean_pairwise_cosine"] == pytest.approx(m1 @ m2 / np.linalg.norm(m1) / np.linalg.norm(m2))
    norms, coss = [], []
    for s in itertools.product([-1.0, 1.0], repeat=9):  # one flip per pair, both datasets at once
        s = np.array(s)
        a, b = s[:5] @ d1 / 5, s[5:] @ d2 / 4
        norms.append(np.linalg.norm((a + b) / 2))
        coss.append(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    assert res["p_shared_norm"] == pytest.approx(np.mean(np.array(norms) >= res["shared_norm"] - 1e-12), abs=0.01)
    assert res["p_pairwise_cosine"] == pytest.approx(np.mean(np.array(coss) >= res["mean_pairwise_cosine"] - 1e-12), abs=0.01)
    # the chunked matrix product equals a loop over the same flips
    small = dc.joint_sign_flip([d1, d2], n_permutations=6, seed=4, chunk=4)
    g = np.random.default_rng(4)
    loop = []
    for b in (4, 2):
        for s in g.integers(0, 2, size=(b, 9), dtype=np.int8) * 2 - 1.0:
            loop.append(np.linalg.norm((s[:5] @ d1 / 5 + s[5:] @ d2 / 4) / 2))
    np.testing.assert_allclose(small["null_shared_norm"], loop)
    with pytest.raises(ConfigError):
        dc.joint_sign_flip([d1])
    with pytest.raises(ConfigError):
        dc.joint_sign_flip([d1, rng.normal(size=(4, 5))])


def test_a_shared_direction_is_found_and_opposite_ones_are_not_shared():
    d = 32
    a, u = _planted(200, d, 0.5, seed=0)
    b, _ = _planted(150, d, 0.5, seed=1, u=u)
    res = dc.joint_sign_flip([a, b], n_permutations=999, seed=0)
    assert res["p_shared_norm"] == pytest.approx(1 / 1000) and res["p_pairwise_cosine"] < 0.01
    c, _ = _planted(150, d, 0.5, seed=2, u=-u)  # the same axis, opposite way: no agreement
    res2 = dc.joint_sign_flip([a, c], n_permutations=999, seed=0)
    assert res2["mean_pairwise_cosine"] < 0 and res2["p_pairwise_cosine"] > 0.9


class _Qrels(dict):
    pass


def _dataset():
    """Two queries: q1 judges d0 (2), d1 (0); q2 judges d2 (1) only; q3 judges d3 (0) only."""
    ids = ["d0", "d1", "d2", "d3", "d4", "d5"]
    corpus = SimpleNamespace(
        doc_ids=ids,
        positions_of_source=lambda s: np.arange(6),
        retrieval_texts=lambda: [f"text {i}" for i in ids],
    )
    qrels = _Qrels({"q1": {"d0": 2, "d1": 0}, "q2": {"d2": 1}, "q3": {"d3": 0}})
    return SimpleNamespace(corpus=corpus, qrels=qrels, human_source="human")


def _embed(texts):
    return np.array([[float(t.split("d")[1]), 1.0] for t in texts])


def test_pn_differences_policy_and_counts():
    diffs, qs, counts = dc.pn_differences(_dataset(), _embed)
    assert qs == ["q1"] and counts == {"queries": 3, "used": 1, "no_relevant": 1, "no_judged_negative": 1, "sampled_negatives": 0}
    np.testing.assert_allclose(diffs, [[0.0 - 1.0, 0.0]])
    diffs, qs, counts = dc.pn_differences(_dataset(), _embed, unjudged_negatives=2, seed=0)
    assert qs == ["q1", "q2"] and counts["sampled_negatives"] == 1 and counts["used"] == 2
    # q2's negatives: 2 of the documents it does not judge (d0, d1, d3, d4, d5), seeded
    pool = np.array([0, 1, 3, 4, 5])
    neg = np.random.default_rng(0).choice(pool, size=2, replace=False)
    np.testing.assert_allclose(diffs[1], [2.0 - neg.mean(), 0.0])


def test_command_end_to_end_on_two_small_datasets(tmp_path):
    pytest.importorskip("torch")
    from conftest import write_jsonl, write_qrels
    from sentence_transformers import SentenceTransformer

    from sourcebias.analysis.result import AnalysisResult
    from sourcebias.cli.main import main
    from sourcebias.models.hub import resolve_model

    rng = np.random.default_rng(0)
    words = ["river", "bridge", "cat", "dog", "solar", "bread", "museum", "rain", "valley", "mayor", "school", "panel", "paint", "century", "bake"]
    roots, texts = [], {}
    for name, with_negatives in (("a", True), ("b", False)):
        root = tmp_path / name
        human = [" ".join(rng.choice(words, size=8)) for _ in range(12)]
        llm = [t + " indeed" for t in human]
        write_jsonl(root / "corpus" / "human.jsonl", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(human)])
        write_jsonl(root / "corpus" / "llm.jsonl", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(llm)])
        write_jsonl(root / "queries.jsonl", [{"_id": f"q{j}", "text": words[j]} for j in range(3)])
        rows = [(f"q{j}", f"d{4 * j}", 1) for j in range(3)] + ([(f"q{j}", f"d{4 * j + 1}", 0) for j in range(2)] if with_negatives else [])
        write_qrels(root / "qrels" / "test.tsv", rows)
        roots.append(root)
        texts[name] = (human, llm)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_:
        main(
            [
                "analyze",
                "compare-directions",
                str(roots[0]),
                "--with",
                f"{roots[1]}:test",
                "-o",
                str(out),
                "--permutations",
                "99",
                "--joint-permutations",
                "199",
                "--cache-dir",
                str(tmp_path / "cache"),
            ]
        )
    assert exit_.value.code == 0
    r = AnalysisResult.load(out)
    counts = {c["dataset"]: c for c in r.summary["pn_queries"]}
    assert (counts["a"]["used"], counts["a"]["no_judged_negative"]) == (2, 1)
    assert (counts["b"]["used"], counts["b"]["no_judged_negative"]) == (0, 3)
    st = SentenceTransformer(resolve_model("sentence-transformers/all-MiniLM-L6-v2"), device="cpu")
    enc = {k: st.encode(h, normalize_embeddings=True) for k, (h, _) in texts.items()}
    lh = {k: st.encode(l, normalize_embeddings=True) - enc[k] for k, (_, l) in texts.items()}
    pn = np.stack([enc["a"][4 * j] - enc["a"][4 * j + 1] for j in range(2)])
    ua, upn = lh["a"].mean(0), pn.mean(0)
    angle = r.tables["angles"].set_index("dataset").loc["a"]
    assert angle["cosine"] == pytest.approx(ua @ upn / np.linalg.norm(ua) / np.linalg.norm(upn), abs=1e-4)
    ub = lh["b"].mean(0)
    assert r.summary["joint"]["shared_norm"] == pytest.approx(np.linalg.norm((ua + ub) / 2), rel=1e-4)
    assert r.summary["joint"]["permutations"] == 199
    assert sorted(p.name for p in (out / "figures").iterdir()) == ["angle-a.png", "joint-signflip.png"]
