"""What an audit prints is what it computed: the Sp of its caption and figure is the one the
correction used, an audit of too few queries gives no interval (and says why), and a cut-off
deeper than the audited rankings is refused before work."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_audit import IN_DOMAIN, run_cli, score_args, score_file, simulated, tiny_dataset

from sourcebias.audit import AuditSettings, audit
from sourcebias.audit.correction import interval_refusal
from sourcebias.audit.figure import audit_title
from sourcebias.audit.report import audit_report, caption


def _with_reference(seed: int = 4):
    run, det, is_llm, flagged = simulated(seed, queries=60)
    humans = [i for i in range(len(run.corpus)) if not is_llm.ravel()[i]][:40]
    ref = [(run.corpus.doc_ids[i], run.corpus.source_of(i)) for i in humans]
    res = audit({"sim": run}, det, AuditSettings(resamples=300, check_resamples=50), human_source="human", calibration_domain=IN_DOMAIN, reference=ref)
    return res, det, 1 - flagged[humans].mean()


def test_caption_and_figure_give_the_sp_the_correction_used():
    res, _, sp_ref = _with_reference()
    se, sp_cal = res.detector["sensitivity"], res.detector["specificity"]  # the calibration twins' (the detector's summary)
    assert f"{sp_ref:.3f}" != f"{sp_cal:.3f}" and f"{sp_ref:.2f}" != f"{sp_cal:.2f}"  # the case can tell them apart
    row = res.row("sim", "Share@10")
    assert row["corrected"] == pytest.approx(np.clip((row["naive"] + sp_ref - 1) / (se + sp_ref - 1), 0, 1))  # the correction used sp_ref
    text = caption(res)
    assert f"Se = {se:.3f}, Sp = {sp_ref:.3f}," in text and f"Sp = {sp_cal:.3f}," not in text
    assert "Sp from the human reference set" in text and f"the calibration twins' Sp: {sp_cal:.3f}" in text
    title = audit_title(res)
    assert f"Sp = {sp_ref:.2f} from the human reference set" in title and f"Sp = {sp_cal:.2f}," not in title


def test_without_a_reference_set_the_title_is_as_before():
    run, det, _, _ = simulated(4, queries=60)
    res = audit({"sim": run}, det, AuditSettings(resamples=300, check_resamples=50), human_source="human", calibration_domain=IN_DOMAIN)
    se, sp = res.detector["sensitivity"], res.detector["specificity"]
    assert audit_title(res) == f"Audit with simulated (Se = {se:.2f}, Sp = {sp:.2f}, threshold 0.5); bars: 95% bootstrap CIs"
    assert f"Se = {se:.3f}, Sp = {sp:.3f}, AUC" in caption(res) and "Sp from the calibration twins." in caption(res)


def test_the_interval_rule_by_hand():
    # multisets of n of n queries: C(2n - 1, n) = 1, 3, 10, 35, 126; a 95% interval's tails need 2 / 0.05 = 40
    assert [math.comb(2 * n - 1, n) for n in range(1, 6)] == [1, 3, 10, 35, 126]
    assert interval_refusal(1, 0.95).startswith("fewer than 2 queries")
    assert "4 queries give 35 distinct resamples" in interval_refusal(4, 0.95) and "need 40" in interval_refusal(4, 0.95)
    assert interval_refusal(5, 0.95) == "" and interval_refusal(4, 0.9) == ""  # at 90%: 20 needed


def test_an_audit_of_one_query_gives_no_interval_and_says_so():
    run, det, is_llm, flagged = simulated(6, queries=1)
    res = audit({"sim": run}, det, AuditSettings(resamples=300, check_resamples=50), human_source="human", calibration_domain=IN_DOMAIN)
    share = res.row("sim", "Share@10")
    assert share["queries"] == 1 and share["naive"] == pytest.approx(flagged[:10].mean())  # the one query's share, by hand
    assert share["true"] == pytest.approx(is_llm[0].mean())
    for r in res.rows:
        assert r["naive_low"] is None and r["naive_high"] is None and r["corrected_low"] is None and r["corrected_high"] is None
        assert r["precise"] is False and "fewer than 2 queries" in r["imprecise_reason"]
    report = audit_report(res)
    shown = [row for t in report.tables for row in t.rows]
    assert all("ok" not in row["flag_text"].split(", ") and "IMPRECISE" in row["flag_text"] and "–" in row["naive_text"] for row in shown)
    assert any("fewer than 2 queries" in n for n in res.notes)
    assert "no interval, too few queries (1)" in caption(res)


def test_five_queries_get_an_interval():
    run, det, _, _ = simulated(6, queries=5)
    res = audit({"sim": run}, det, AuditSettings(resamples=300, check_resamples=50), human_source="human", calibration_domain=IN_DOMAIN)
    assert all(r["naive_low"] is not None and r["naive_low"] < r["naive_high"] for r in res.rows)


@pytest.fixture
def inputs(tmp_path):
    """test_audit's audit inputs (a target dataset, labelled twins, score files), with evaluate
    folders ranked to depth 1000 (``eval``) and to depth 5 (``shallow``)."""
    from sourcebias.data import load_dataset
    from sourcebias.evaluation import evaluate, parse_measure
    from sourcebias.retrieval import build_retriever

    target, calib = tiny_dataset(tmp_path / "target", 40, "t"), tiny_dataset(tmp_path / "calib", 60, "c")
    for name, depth in (("eval", 1000), ("shallow", 5)):
        evaluate(load_dataset(target), [build_retriever("bm25")], measures=[parse_measure("NDCG@3")], depth=depth).save(tmp_path / name)
    return {
        "eval": tmp_path / "eval",
        "shallow": tmp_path / "shallow",
        "target": target,
        "calib": calib,
        "scores": score_file(tmp_path / "t.tsv", target, 1),
        "cal_scores": score_file(tmp_path / "c.tsv", calib, 2),
    }


def test_audit_k_deeper_than_the_evaluations_depth_is_refused_before_work(inputs, tmp_path, capsys):
    i, shallow_eval = inputs, inputs["shallow"]
    missing = tmp_path / "no-such-scores.tsv"  # never read: the refusal comes first
    args = ["audit", str(shallow_eval), "--scores", str(missing), "--calibrate", str(i["calib"]), "--calibration-scores", str(missing), "--k", "3", "10"]
    code, _, err = run_cli([*args, "-o", str(tmp_path / "a")], capsys)
    err = err.replace("\n", "")
    assert code == 2 and "--k 10 is deeper than the audited rankings: the evaluation's --depth 5 is smaller than the largest cut-off 10" in err, err
    assert not (tmp_path / "a").exists()
    code, _, err = run_cli(["audit", str(shallow_eval), *score_args(i), "--k", "5", "--resamples", "200"], capsys)
    assert code in (0, None), err  # at the depth itself: audited


def test_audit_k_deeper_than_a_trec_runs_rankings_is_refused(inputs, tmp_path, capsys):
    from sourcebias.data import load_dataset
    from sourcebias.evaluation import load_result

    i = inputs
    run = next(r for k, r in load_result(i["eval"], dataset=load_dataset(i["target"])).runs.items() if k.setting == "mixed")
    lines = [f"{q} Q0 {s}/{d} {r + 1} {10 - r} t" for q in run.query_ids for r, (d, s) in enumerate(run.keys(q)[:4])]
    path = tmp_path / "short.trec"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = run_cli(["audit", str(path), "--dataset", str(i["target"]), *score_args(i), "--k", "10"], capsys)
    err = err.replace("\n", "")
    assert code == 2 and "--k 10 is deeper than the audited rankings: the run 'short' ranks at most 4 documents per query" in err, err
