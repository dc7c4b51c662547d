"""What an evaluation's ΔNDSR and t-test captions say is what was computed.

* ΔNDSR@k of rankings cut at a depth below k would be ΔNDSR@depth printed as ΔNDSR@k: it is
  refused before any work (``evaluate``, a grid file, ``power``) and by the statistic itself; at a
  depth that covers k the figure equals a hand computation of the discounted shares.
* A t-test that is undefined because there is one query says so in the caption (not "every query
  differs by the same amount", the other reason).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from conftest import tiny_grid_toml, write_jsonl, write_qrels

from sourcebias.cli.main import main
from sourcebias.core.errors import ConfigError, DataError
from sourcebias.data import load_dataset
from sourcebias.evaluation import evaluate, parse_measure
from sourcebias.evaluation.plan import EvaluationPlan
from sourcebias.evaluation.stats import StatContext, compute_statistics, get_statistic
from sourcebias.retrieval import build_retriever


def _dataset(root, qrels=(("q1", "d1", 1), ("q2", "d2", 2))):
    """Twenty twin pairs (one word each, some shared) and two queries."""
    words = ["cat", "dog", "mat", "sun", "bark", "night", "river", "bread", "rain", "house"]
    human = [{"_id": f"d{i}", "title": "", "text": f"{words[i % 10]} {words[(i * 3) % 10]} {words[(i * 7) % 10]}"} for i in range(1, 21)]
    llm = [{"_id": f"d{i}", "title": "", "text": f"{words[(i + 1) % 10]} {words[(i * 3) % 10]} the {words[i % 10]}"} for i in range(1, 21)]
    write_jsonl(root / "corpus" / "human.jsonl", human)
    write_jsonl(root / "corpus" / "llm.jsonl", llm)
    write_jsonl(root / "queries.jsonl", [{"_id": "q1", "text": "cat mat"}, {"_id": "q2", "text": "dog bark night"}])
    write_qrels(root / "qrels" / "test.tsv", list(qrels))
    return root


def hand_delta_ndsr(run, k: int) -> float:
    """Mean over queries of NDSR_human − NDSR_LLM at k: ranks weighted 1/log2(1 + r) over the
    documents ranked within k, each source's share of the weights."""
    out = []
    for q in run.query_ids:
        keys = run.keys(q)[:k]
        w = [1 / math.log2(1 + r) for r in range(1, len(keys) + 1)]
        human = sum(wi for wi, (_, s) in zip(w, keys) if s == "human") / sum(w)
        llm = sum(wi for wi, (_, s) in zip(w, keys) if s == "llm") / sum(w)
        out.append(human - llm)
    return float(np.mean(out))


def test_delta_ndsr_deeper_than_the_rankings_is_refused_and_within_them_is_the_hand_value(tmp_path):
    ds = load_dataset(_dataset(tmp_path / "d"))
    deep = evaluate(ds, [build_retriever("bm25")], measures=[parse_measure("NDCG@10")], depth=40)
    run = next(r for k, r in deep.runs.items() if k.setting == "mixed")
    longest = max(len(p) for p in run.positions.values())  # BM25 ranks the documents sharing a term with the query: 28 of 40 here
    assert 12 < longest < 30 and longest < len(run.corpus)
    rec = compute_statistics(deep, StatContext(ndsr_k=longest), ["delta_ndsr"]).records["delta_ndsr"][0]
    assert rec.delta_ndsr_k == longest and rec.delta_ndsr == pytest.approx(hand_delta_ndsr(run, longest), abs=1e-12)
    # deeper than any ranking of the run (the check of --depth 40 cannot see it): the figure would be ΔNDSR@longest
    assert hand_delta_ndsr(run, 30) == pytest.approx(hand_delta_ndsr(run, longest))
    s = compute_statistics(deep, StatContext(ndsr_k=30), ["delta_ndsr"])
    refused = s.records["delta_ndsr"][0]
    assert math.isnan(refused.delta_ndsr) and math.isnan(refused.delta_ndsr_p) and refused.delta_ndsr_depth_note.startswith("ΔNDSR@30 refused")
    assert f"at most {longest} documents" in refused.delta_ndsr_depth_note and any("ΔNDSR@30 refused" in n for n in s.notes())
    assert "Refused (–) for 1 row" in get_statistic("delta_ndsr").caption(s.records["delta_ndsr"])
    cut = evaluate(ds, [build_retriever("bm25")], measures=[parse_measure("NDCG@10")], depth=12)
    cut_run = next(r for k, r in cut.runs.items() if k.setting == "mixed")
    # what used to be printed as ΔNDSR@30 is the top 12's figure, not the top 30's
    assert hand_delta_ndsr(cut_run, 30) == pytest.approx(hand_delta_ndsr(run, 12)) and hand_delta_ndsr(run, 12) != pytest.approx(hand_delta_ndsr(run, 30))
    with pytest.raises(ConfigError, match="the result's depth 12 is smaller than the ΔNDSR cut-off ndsr_k 30"):
        compute_statistics(cut, StatContext(ndsr_k=30), ["delta_ndsr"])


def test_evaluate_refuses_ndsr_k_deeper_than_depth_before_work(tmp_path, capsys):
    with pytest.raises(ConfigError, match=r"--depth 20 is smaller than the ΔNDSR cut-off --ndsr-k 500"):
        EvaluationPlan(depth=20, ndsr_k=500, statistics=("delta_ndsr",)).check()
    with pytest.raises(ConfigError, match=r"--depth 20 is smaller than the ΔNDSR cut-off --ndsr-k 500"):
        EvaluationPlan(depth=20, ndsr_k=500).check()  # the default statistics hold ΔNDSR
    EvaluationPlan(depth=20, ndsr_k=500, statistics=("paired_tests",)).check()  # no ΔNDSR: nothing to refuse
    EvaluationPlan(depth=20, ndsr_k=500, statistics=()).check()
    out = tmp_path / "not-yet" / "out"
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(tmp_path / "no-such-dataset"), "-r", "bm25", "--depth", "20", "--ndsr-k", "500", "--statistics", "delta_ndsr", "-o", str(out)])
    err = capsys.readouterr().err.replace("\n", "")
    assert info.value.code == 2 and "--depth 20 is smaller than the ΔNDSR cut-off --ndsr-k 500" in err and "dataset folder not found" not in err
    assert not (tmp_path / "not-yet").exists()


def test_a_grid_whose_ndsr_k_exceeds_its_depth_is_refused_at_the_line(tmp_path):
    from sourcebias.experiments.config import load_grid_config

    path = tiny_grid_toml(tmp_path, _dataset(tmp_path / "d"), extra="depth = 20\nndsr_k = 500")
    with pytest.raises(DataError) as info:
        load_grid_config(path)
    line = path.read_text().splitlines().index("ndsr_k = 500") + 1
    assert "[grid].depth 20 is smaller than the ΔNDSR cut-off [grid].ndsr_k 500" in str(info.value) and f"grid.toml:{line}:" in str(info.value)


def test_power_refuses_ndsr_k_deeper_than_the_pilots_depth(tmp_path):
    from sourcebias.power import PowerSettings, power_analysis

    ds = load_dataset(_dataset(tmp_path / "d"))
    pilot = evaluate(ds, [build_retriever("bm25")], measures=[parse_measure("NDCG@3")], depth=20)
    with pytest.raises(ConfigError, match="the pilot's --depth 20 is smaller than the ΔNDSR cut-off --ndsr-k 500"):
        power_analysis(pilot, settings=PowerSettings(ns=(10,), resamples=100, max_n=50, ndsr_k=500), statistics=["ndsr"])


def test_a_one_query_caption_gives_the_one_query_reason(tmp_path):
    """One evaluable query: scipy's t-test of one difference is undefined (no degrees of
    freedom); the caption says "fewer than 2 queries", as the notes and the CSV do."""
    from scipy import stats

    ds = load_dataset(_dataset(tmp_path / "d", qrels=(("q1", "d10", 1),)))  # its human and LLM copies rank apart
    result = evaluate(ds, [build_retriever("bm25")], measures=[parse_measure("NDCG@3"), parse_measure("NDCG@5")])
    assert len(result.query_ids) == 1
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(stats.ttest_1samp([0.3], 0.0).pvalue)  # the undefined test, independently
    s = compute_statistics(result, StatContext(qrels=ds.qrels, measures=["NDCG@3", "NDCG@5"], significance_resamples=200), ["paired_tests", "delta_ndsr"])
    paired = get_statistic("paired_tests").caption(s.records["paired_tests"])
    ndsr = get_statistic("delta_ndsr").caption(s.records["delta_ndsr"])
    assert "The t-test is undefined in 2 row(s) (–): fewer than 2 queries." in paired and "every query differs by the same amount" not in paired
    assert "The t-test is undefined in 1 row(s) (–): fewer than 2 queries." in ndsr and "every query has the same ΔNDSR" not in ndsr
    assert all("fewer than 2 queries" in n for n in s.notes())


def test_a_constant_difference_keeps_its_own_reason():
    """Two queries that differ by the same amount: the t-test's zero-variance reason, unchanged."""
    from sourcebias.evaluation.stats.paired_tests import CONSTANT, TOO_FEW, PairedTestsRecord

    recs = [PairedTestsRecord("bm25", "llm", "NDCG@3", ttest_note=CONSTANT), PairedTestsRecord("bm25", "llm", "NDCG@5", ttest_note=TOO_FEW)]
    text = get_statistic("paired_tests").caption(recs)
    assert "undefined in 1 row(s) (–): every query differs by the same amount; read the sign test there." in text
    assert "undefined in 1 row(s) (–): fewer than 2 queries." in text


def _trec_top(src, dst, depth_of):
    """The lines of a TREC run ``src`` whose rank is within ``depth_of(query)``."""
    lines = [x for x in src.read_text().splitlines() if int(x.split()[3]) <= depth_of(x.split()[0])]
    dst.write_text("\n".join(lines) + "\n")
    return dst


def test_a_run_file_shorter_than_the_ndsr_cut_off_is_refused_per_run(nq_utd, tmp_path, capsys):
    """The issue's case: a TREC run of BM25's top 4 evaluated with --ndsr-k 10 used to print
    ΔNDSR@10 = 0.070*, the figure of --ndsr-k 4 (the check compared k with --depth, 1000)."""
    import csv

    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(nq_utd), "-r", "bm25", "--k", "10", "--metric", "NDCG", "--statistics", "none", "-o", str(tmp_path / "full")])
    assert info.value.code in (0, None)
    full = tmp_path / "full" / "runs" / "bm25.mixed.trec"
    top4 = _trec_top(full, tmp_path / "bm25_top4.trec", lambda q: 4)
    queries = sorted({x.split()[0] for x in full.read_text().splitlines()})
    cut = set(queries[:7])
    mixed = _trec_top(full, tmp_path / "mixed_depth.trec", lambda q: 4 if q in cut else 20)  # 7 queries cut at 4, the others at 20
    capsys.readouterr()

    def stats(out, *extra):
        with pytest.raises(SystemExit) as info:
            main(
                [
                    "evaluate",
                    str(nq_utd),
                    *extra,
                    "--k",
                    "4",
                    "--k",
                    "10",
                    "--metric",
                    "NDCG",
                    "--metric",
                    "Share",
                    "--statistics",
                    "delta_ndsr",
                    "-o",
                    str(out),
                ]
            )
        assert info.value.code in (0, None)
        rows = list(csv.DictReader((out / "statistics.csv").open()))
        metrics = {(r["target"], r["metric"]): r["value"] for r in csv.DictReader((out / "metrics.csv").open())}
        return rows[0], metrics, (out / "summary.md").read_text()

    row, metrics, summary = stats(tmp_path / "a", "--run", f"short={top4}", "--ndsr-k", "10")
    printed = " ".join(capsys.readouterr().out.split())
    assert row["delta_ndsr"] in ("", "nan") and row["delta_ndsr_depth_note"].startswith("ΔNDSR@10 refused: the run's rankings hold at most 4 documents")
    assert metrics[("human", "Share@10")] == "nan" and float(metrics[("human", "Share@4")]) > 0  # Share@10 would be Share@4
    for text in (" ".join(summary.split()), printed):
        assert "ΔNDSR@10 refused" in text and "short/mixed: its rankings hold at most 4 documents; NDCG@10: the ranks below 4 count as non-relevant" in text
        assert "0.070" not in text
    row4, _, _ = stats(tmp_path / "b", "--run", f"short={top4}", "--ndsr-k", "4")
    assert float(row4["delta_ndsr"]) == pytest.approx(0.0703, abs=5e-4) and row4["delta_ndsr_depth_note"] == ""  # within the run: computed
    # a run whose queries differ in depth: computed at 10, the short queries counted
    row, metrics, summary = stats(tmp_path / "c", "--run", f"mixed={mixed}", "--ndsr-k", "10")
    assert row["delta_ndsr_depth_note"].startswith("7 of 80 queries rank fewer than 10 documents (the shortest 4)") and float(row["delta_ndsr"]) == float(
        row["delta_ndsr"]
    )
    assert "mixed/mixed: 7 of 80 queries rank fewer than 10 documents (the shortest 4)" in summary.replace("\n", " ")
