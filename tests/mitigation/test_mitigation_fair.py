"""Exposure parity, ``fair:k``: a hand-worked interleaving, the exposure bound on real rankings,
within-source order, the tie rule, and the NDCG cost on nq-utd checked with pytrec_eval directly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import hand_rank

import sourcebias as sb
from sourcebias.evaluation.measures import measure_grid
from sourcebias.mitigation.fair import ExposureParity, interleave
from sourcebias.retrieval import build_retriever
from sourcebias.retrieval.run import Run


def w(rank: int) -> float:
    return 1.0 / math.log2(rank + 1)


def test_hand_worked_interleaving():
    # candidates (input order) from sources A=0 / B=1: A A A B B A B B; k = 6, equal targets 1/2.
    # E(r) = Σ_{i≤r} w(i); the deficit of s is E(r)/2 − E_s(r−1); the largest deficit takes rank r.
    # r1: E=1.0000, A .5000 = B .5000, tie -> the earlier candidate, A (#0)    E_A=1.0000
    # r2: E=1.6309, A −.1845, B .8155 -> B (#3)                               E_B=0.6309
    # r3: E=2.1309, A .0655, B .4346 -> B (#4)                                E_B=1.1309
    # r4: E=2.5616, A .2808, B .1499 -> A (#1)                                E_A=1.4307
    # r5: E=2.9485, A .0436, B .3434 -> B (#6)                                E_B=1.5178
    # r6: E=3.3047, A .2216, B .1345 -> A (#2)                                E_A=1.7869
    # then the rest in input order: #5, #7
    order, exhausted = interleave(np.array([0, 0, 0, 1, 1, 0, 1, 1]), 6)
    assert order.tolist() == [0, 3, 4, 1, 6, 2, 5, 7] and not exhausted
    e_a = w(1) + w(4) + w(6)
    e_b = w(2) + w(3) + w(5)
    assert e_a == pytest.approx(1.7869, abs=1e-4) and e_b == pytest.approx(1.5178, abs=1e-4)
    assert abs(e_a - (e_a + e_b) / 2) <= 1.0  # the stated bound, two sources


def test_stage_on_documents_keeps_scores_decreasing(cocktail_dir):
    ds = sb.load_dataset(cocktail_dir)
    c = ds.corpus
    llm = ds.other_sources[0]
    keys = [("d1", "human"), ("d2", "human"), ("d3", "human"), ("d1", llm), ("d2", llm), ("d3", llm)]
    pos = np.array([c.position(d, s) for d, s in keys])
    run = Run(c, "x", {"q1": pos}, {"q1": np.array([6.0, 5, 4, 3, 2, 1])})
    out = ExposureParity(4, depth=6).apply(run, {"q1": ""})
    # as the hand-worked case above, for k = 4: human, llm, llm, human; then the rest in input order
    assert out.keys("q1") == [keys[0], keys[3], keys[4], keys[1], keys[2], keys[5]]
    assert out.scores["q1"].tolist() == [6.0, 5.0, 4.0, 3.0, 2.0, 1.0]
    # proportional targets equal the equal ones here (3 + 3 candidates)
    assert ExposureParity(4, target="proportional", depth=6).apply(run, {"q1": ""}).keys("q1") == out.keys("q1")


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_ties_follow_the_tie_rule(cocktail_dir, seed):
    ds = sb.load_dataset(cocktail_dir)
    c = ds.corpus
    pos = np.arange(len(c))
    run = Run(c, "x", {"q1": pos}, {"q1": np.zeros(len(c))})  # all tied, in corpus order
    out = ExposureParity(6, depth=6).apply(run, {"q1": ""}, seed=seed)
    ranked = hand_rank("q1", {(c.doc_ids[i], c.source_of(i)): 0.0 for i in pos.tolist()}, seed)
    got = out.keys("q1")
    assert got[0] == ranked[0]  # equal deficits at rank 1: the tie rule's first document
    for s in c.sources:  # within a source: the tie rule's order
        assert [k for k in got if k[1] == s] == [k for k in ranked if k[1] == s]
    assert [k[1] for k in got[:2]] != [got[0][1]] * 2  # sources alternate at the top


@pytest.fixture(scope="module")
def nq(nq_utd):
    ds = sb.load_dataset(nq_utd, split="test")
    queries = {q: ds.queries[q] for q in ds.evaluation_queries()}
    base = build_retriever("bm25").retrieve(ds.corpus, queries, 100)
    return ds, queries, base


@pytest.mark.parametrize("target", ["equal", "proportional"])
@pytest.mark.parametrize("k", [3, 10])
def test_exposure_shares_meet_targets_within_the_bound(nq, k, target):
    from sourcebias.evaluation.measures import NDSR

    ds, queries, base = nq
    c = ds.corpus
    out = build_retriever(f"bm25>>fair:k={k},target={target}").retrieve(c, queries, 100)
    qids = list(queries)
    ndsr = NDSR().per_query(out, qids, k)  # the package's own measure, independent of fair.py
    e_k = sum(w(r) for r in range(1, k + 1))
    for i, q in enumerate(qids):
        src = c.source_codes[base.positions[q]]
        present, counts = np.unique(src, return_counts=True)
        if min(counts) < k:
            continue  # a source without k candidates cannot reach parity
        t = 1 / len(present) if target == "equal" else counts / counts.sum()
        dev = (ndsr[i, present] - t) * e_k  # exposure minus target exposure
        assert np.all(np.abs(dev) <= 1.0 + 1e-9), (q, dev)
        # within-source order of the input is kept, every candidate is kept
        for s in present:
            assert [p for p in out.positions[q].tolist() if c.source_codes[p] == s] == [p for p in base.positions[q].tolist() if c.source_codes[p] == s]
        assert sorted(out.positions[q].tolist()) == sorted(base.positions[q].tolist())
        assert np.all(np.diff(out.scores[q]) < 0)


def test_bound_with_three_sources_random():
    rng = np.random.default_rng(3)
    for _ in range(300):
        m, k = int(rng.integers(2, 5)), int(rng.integers(1, 30))
        codes = np.concatenate([np.full(k, s) for s in range(m)])
        rng.shuffle(codes)
        order, exhausted = interleave(codes, k)
        assert not exhausted and sorted(order.tolist()) == list(range(len(codes)))
        e = np.bincount(codes[order[:k]], weights=[w(r) for r in range(1, k + 1)], minlength=m)
        dev = e - e.sum() / m
        assert dev.min() >= -1 - 1e-9 and dev.max() <= m - 1 + 1e-9
        for s in range(m):  # within-source order
            idx = [i for i in order.tolist() if codes[i] == s]
            assert idx == sorted(idx)


def test_ndcg_cost_matches_pytrec_eval_on_the_reordered_run(nq, nq_utd):
    import pytrec_eval

    ds, queries, base = nq
    c = ds.corpus
    result = sb.evaluate(ds, [build_retriever("bm25"), build_retriever("bm25>>fair:k=10")], measures=measure_grid(["NDCG"], [3, 10]), sole=False)
    after = build_retriever("bm25>>fair:k=10").retrieve(c, queries, 100)
    # qrels read from the file; target "all": every copy of a judged document carries its grade
    grades: dict[str, dict[str, int]] = {}
    for line in (nq_utd / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, g = line.split("\t")
        if q in queries:
            for s in c.sources:
                grades.setdefault(q, {})[f"{s}/{d}"] = int(g)

    def trec(run):  # minus the rank: trec_eval re-sorts tied scores by name (BM25 has ties)
        return {q: {f"{s}/{d}": -float(r) for r, (d, s) in enumerate(run.keys(q), start=1)} for q in queries}

    ev = pytrec_eval.RelevanceEvaluator(grades, {"ndcg_cut.3,10"})
    for key, run in (("bm25", base), ("bm25>>fair:k=10", after)):
        got = ev.evaluate(trec(run))
        for kk in (3, 10):
            direct = np.mean([got.get(q, {}).get(f"ndcg_cut_{kk}", 0.0) for q in queries])
            assert result.mean(key, "mixed", "all", f"NDCG@{kk}") == pytest.approx(direct, abs=1e-12)
    cost = result.mean("bm25", "mixed", "all", "NDCG@10") - result.mean("bm25>>fair:k=10", "mixed", "all", "NDCG@10")
    assert np.isfinite(cost)
