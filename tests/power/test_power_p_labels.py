"""The p that ``power`` prints beside a test is that test's p: the 'uncorrected' row models the
paired t-test and shows the pilot's paired t-test p (SciPy's ``ttest_rel`` of the per-query values,
as ``evaluate``'s p (t)), not the randomization test's."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import write_jsonl, write_qrels
from scipy import stats

from sourcebias.data import load_dataset
from sourcebias.evaluation import MIXED, Key, evaluate, measure_grid
from sourcebias.power import PowerSettings, power_analysis
from sourcebias.power.report import power_report
from sourcebias.retrieval import build_retriever


def _pilot(root):
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
    human = [{"_id": f"d{i}", "title": "", "text": " ".join(words[(i + j) % 10] for j in range(5 + i % 4))} for i in range(40)]
    llm = [{"_id": f"d{i}", "title": "", "text": " ".join(words[(i + 2 * j) % 10] for j in range(6 + i % 3))} for i in range(40)]
    write_jsonl(root / "corpus" / "human.jsonl", human)
    write_jsonl(root / "corpus" / "llm.jsonl", llm)
    write_jsonl(root / "queries.jsonl", [{"_id": f"q{i}", "text": f"{words[i]} {words[(i + 3) % 10]}"} for i in range(10)])
    write_qrels(root / "qrels" / "test.tsv", [(f"q{i}", f"d{i}", 1) for i in range(10)] + [(f"q{i}", f"d{i + 10}", 1) for i in range(10)])
    ds = load_dataset(root)
    return evaluate(ds, [build_retriever("bm25")], measures=measure_grid(["NDCG"], [3, 5]), sole=False)


def test_the_uncorrected_rows_p_is_the_paired_t_tests(tmp_path):
    pilot = _pilot(tmp_path / "d")
    res = power_analysis(pilot, settings=PowerSettings(ns=(20,), resamples=200, max_n=200), statistics=["difference"])
    llm = pilot.other_sources[0]
    checked = 0
    for p in res.pilots:
        h = pilot.per_query[Key("bm25", MIXED, pilot.human_source, p["measure"])]
        g = pilot.per_query[Key("bm25", MIXED, llm, p["measure"])]
        expected = stats.ttest_rel(h, g).pvalue  # independently: SciPy's paired t-test
        assert np.isfinite(expected) and "t-test" in p["uncorrected_test"]
        assert p["p_uncorrected"] == pytest.approx(expected, rel=1e-12)
        checked += 1
    assert checked == 2
    rows = [r for r in power_report(res).tables[0].rows if r["test"] == "uncorrected"]
    assert len(rows) == 2
    for row in rows:
        p = next(x for x in res.pilots if x["measure"] == row["measure"])
        assert row["p"] == p["p_uncorrected"] and not math.isnan(row["p"])
