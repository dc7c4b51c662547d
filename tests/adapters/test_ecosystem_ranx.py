"""Results handed to ranx and ir_measures: the libraries themselves recompute our numbers.

ranx, ir_measures and pytrec_eval re-sort each run by score; the exported runs carry
tie-resolved scores, so they must reproduce our per-target values to 1e-9, ties included.
"""

from __future__ import annotations

import numpy as np
import pytest

ranx = pytest.importorskip("ranx")
ir_measures = pytest.importorskip("ir_measures")

import pytrec_eval  # noqa: E402
from conftest import hand_ndcg, hand_rank  # noqa: E402

import sourcebias as sb  # noqa: E402
from sourcebias.evaluation.export import masked_qrels, ranx_metric  # noqa: E402
from sourcebias.evaluation.protocol import target_qrels  # noqa: E402
from sourcebias.retrieval.formats import tie_resolved_scores  # noqa: E402


@pytest.fixture(scope="module")
def nq_result(nq_utd):
    ds = sb.load_dataset(nq_utd, split="test")
    measures = sb.measure_grid(["NDCG", "MAP", "Recall", "P"], [1, 3, 10])
    return ds, sb.evaluate(ds, [sb.build_retriever("bm25")], runs=[], measures=measures, depth=100)


@pytest.fixture(scope="module")
def nq_export(nq_result):
    ds, result = nq_result
    return result.to_ranx(ds)


def test_ranx_compare_on_to_ranx_reproduces_per_target_ndcg_on_nq_utd(nq_result, nq_export):
    _ds, result = nq_result
    export = nq_export
    assert set(export.qrels) == {"human", "llama-2-7b-chat-tmp0.2", "all"}
    for setting, targets in export.settings.items():
        for target in targets:
            report = ranx.compare(export.qrels[target], export.runs_of(setting), export.metrics, make_comparable=True)
            for m in result.target_measures:
                assert report.results["bm25"][ranx_metric(m)] == pytest.approx(result.mean("bm25", setting, target, m), abs=1e-9), (setting, target, m)
    # per query too, NDCG@3 on the mixed corpus for each target
    for target in ("human", "llama-2-7b-chat-tmp0.2"):
        theirs = ranx.evaluate(export.qrels[target], export.runs[("bm25", "mixed")], "ndcg@3", return_mean=False, make_comparable=True)
        order = list(export.qrels[target].keys())
        ours = dict(zip(result.query_ids, result.values("bm25", "mixed", target, "NDCG@3")))
        np.testing.assert_allclose(theirs, [ours[q] for q in order], atol=1e-9)


def test_masked_qrels_are_the_protocols_target_qrels(nq_result, nq_export):
    ds, result = nq_result
    corpus = ds.corpus
    names = sb.DocnoMap.sourcebias(corpus).names
    for target in (*corpus.sources, "all"):
        by_pos = target_qrels(corpus, ds.qrels, target, result.query_ids)
        expected = {q: {names[int(p)]: g for p, g in e.items()} for q, e in by_pos.items()}
        assert masked_qrels(corpus, ds.qrels, target, result.query_ids, all_target="all") == expected
    ranx_qrels = nq_export.qrels["human"].to_dict()
    assert ranx_qrels == masked_qrels(corpus, ds.qrels, "human", result.query_ids, all_target="all")
    assert any(g == 0 for e in ranx_qrels.values() for d, g in e.items() if d.startswith("llama-2-7b-chat-tmp0.2/"))


def test_to_ranx_of_a_reloaded_folder_loads_the_dataset_again(nq_result, tmp_path):
    _ds, result = nq_result
    folder = result.save(tmp_path / "out")
    export = sb.load_result(folder).to_ranx()
    report = ranx.compare(export.qrels["llama-2-7b-chat-tmp0.2"], export.runs_of("mixed"), ["ndcg@3"], make_comparable=True)
    assert report.results["bm25"]["ndcg@3"] == pytest.approx(result.mean("bm25", "mixed", "llama-2-7b-chat-tmp0.2", "NDCG@3"), abs=1e-9)


def test_ir_measures_records_match_ir_measures_own_computation(nq_result, nq_export):
    _ds, result = nq_result
    export = nq_export
    records = result.to_ir_measures("bm25", "mixed", "human")
    assert {type(r) for r in records} == {ir_measures.Metric}
    measures = sorted({r.measure for r in records}, key=str)
    assert {str(m) for m in measures} == {"nDCG@1", "nDCG@3", "nDCG@10", "AP@1", "AP@3", "AP@10", "R@1", "R@3", "R@10", "P@1", "P@3", "P@10"}
    qrels = export.qrels["human"].to_dict()
    run = export.runs[("bm25", "mixed")].to_dict()
    theirs = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)}
    ours = {(r.query_id, str(r.measure)): r.value for r in records}
    assert ours.keys() == theirs.keys()
    for k, v in ours.items():
        assert v == pytest.approx(theirs[k], abs=1e-9), k
    frame = result.to_ir_measures_frame()
    assert list(frame.columns) == ["retriever", "corpus", "target", "query_id", "measure", "value"]
    mine = frame[(frame.corpus == "mixed") & (frame.target == "human")]
    assert {(q, m): v for q, m, v in zip(mine.query_id, mine.measure, mine.value)} == ours


def test_tie_resolved_scores_hand_worked():
    """Ties step down one float32 unit at a time (pytrec_eval keeps scores in single precision)."""
    out = tie_resolved_scores(np.array([3.0, 3.0, 3.0, 1.0, 1.0], dtype=np.float32))
    down = np.float32(-np.inf)
    below = np.nextafter(np.float32(3.0), down)
    assert out.tolist() == [3.0, float(below), float(np.nextafter(below, down)), 1.0, float(np.nextafter(np.float32(1.0), down))]
    assert (np.diff(out) < 0).all() and (np.diff(out.astype(np.float32)) < 0).all()
    # float64 scores closer than float32 can tell apart keep their order too
    close = tie_resolved_scores(np.array([16.146152496337890, 16.146152496337887]))
    assert close[0] > close[1] and np.float32(close[0]) > np.float32(close[1])
    assert tie_resolved_scores(np.array([2.0, -np.inf, -np.inf])).tolist() == [3.0, 2.0, 1.0]


def test_exported_ties_keep_our_order_in_trec_eval_and_ranx(cocktail_dir, tmp_path):
    """Every copy of every document tied at one score: the order is the tie rule's alone. trec_eval
    given the raw (tied) scores re-sorts by document name; given the exported scores it agrees
    with us, and with NDCG worked out by hand from the tie rule."""
    ds = sb.load_dataset(cocktail_dir, split="test")
    lines = [f"{q} Q0 {s}/{d} 1 5.0 flat" for q in ("q1", "q2") for d in ("d1", "d2", "d3") for s in ("human", "llm")]
    (tmp_path / "flat.trec").write_text("\n".join(lines) + "\n")
    run = sb.Run.from_trec(tmp_path / "flat.trec", ds.corpus)
    result = sb.evaluate(ds, runs=[run], measures=sb.measure_grid(["NDCG"], [1, 2]), depth=10)
    export = result.to_ranx(ds)
    labels = {q: dict(ds.qrels.get(q, {})) for q in result.query_ids}
    differs = False
    for target in ("human", "llm"):
        qrels = export.qrels[target].to_dict()
        exported = export.runs[("flat", "mixed")].to_dict()
        raw = {q: dict.fromkeys(e, 5.0) for q, e in exported.items()}
        for k in (1, 2):
            hand = [
                hand_ndcg(hand_rank(q, dict.fromkeys(((d, s) for d in ("d1", "d2", "d3") for s in ("human", "llm")), 5.0)), labels[q], target, 2, k)
                for q in result.query_ids
            ]
            ours = result.values("flat", "mixed", target, f"NDCG@{k}")
            np.testing.assert_allclose(ours, hand, atol=1e-12)
            trec = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{k}"}).evaluate(exported)
            np.testing.assert_allclose([trec[q][f"ndcg_cut_{k}"] for q in result.query_ids], hand, atol=1e-12)
            by_ranx = ranx.evaluate(export.qrels[target], export.runs[("flat", "mixed")], f"ndcg@{k}", return_mean=False, make_comparable=True)
            np.testing.assert_allclose(by_ranx, [hand[result.query_ids.index(q)] for q in export.qrels[target].keys()], atol=1e-12)  # noqa: SIM118 - ranx.Qrels iterates otherwise
            raw_trec = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{k}"}).evaluate(raw)
            differs |= any(abs(raw_trec[q][f"ndcg_cut_{k}"] - h) > 1e-9 for q, h in zip(result.query_ids, hand))
    assert differs, "the raw tied scores should let trec_eval reorder at least one list (else this test shows nothing)"
