"""A p-value that underflows to 0 (a t-test of thousands of queries that all move the same way) is
never shown or written as p = 0: the tables print the bound ``< 1e-300``, ``statistics.csv`` holds
the bound and names it in its ``p_bounds`` column."""

from __future__ import annotations

import csv
import io

import numpy as np
from scipy import stats

from sourcebias.evaluation.stats import StatisticsSet, resolve_statistics
from sourcebias.evaluation.stats.base import P_BOUNDS, P_UNDERFLOW, is_p_field, with_p_bounds
from sourcebias.evaluation.stats.paired_tests import PairedTestsRecord, paired_tests
from sourcebias.report.tables import statistics_frame


def _underflowing_pair():
    """6,979 queries (MS MARCO's count), the human target ahead on every one by about 0.5 with a
    spread of 0.01: t is about 4,000, far beyond where P(T > t) is a float64 (about 1e-308)."""
    rng = np.random.default_rng(0)
    llm = rng.random(6979) * 0.4
    return llm + 0.5 + rng.normal(0, 0.01, 6979), llm


def test_the_t_test_underflows_here_as_in_scipy():
    h, g = _underflowing_pair()
    assert stats.ttest_1samp(h - g, 0.0).pvalue == 0.0  # SciPy's p underflows too: the case is real
    t = paired_tests(h, g, n_resamples=99)
    assert t["p_ttest"] == 0.0 and t["p_sign"] == 0.0  # the sign test of 6,979 of 6,979 (2 / 2^6979) as well
    assert 0 < t["p_randomization"] <= 2 / 100  # a randomization p is never 0 (at least 1 / (1 + R))


def _stats_set(**fields):
    paired = resolve_statistics(["paired_tests"])
    record = PairedTestsRecord("bm25", "llm", "NDCG@10", **fields)
    return StatisticsSet(paired, {"paired_tests": [record]})


def test_no_table_prints_p_0():
    h, g = _underflowing_pair()
    t = paired_tests(h, g, n_resamples=99)
    t.pop("p_randomization")
    s = _stats_set(**t, p_randomization=0.01, p_adjusted=0.0)
    row = s.rows(True)[0]
    shown = {c.header: c.text(row) for c in PairedTestsRecord.columns}
    assert shown["p (t)"] == shown["p (sign)"] == shown["p (adj.)"] == "< 1e-300"
    assert shown["p (rand.)"] == "0.01"


def test_statistics_csv_writes_the_bound_and_names_it():
    s = _stats_set(mean_difference=0.5, p_ttest=0.0, p_sign=0.0, p_randomization=0.01, p_adjusted=0.02, n_queries=6979)
    frame = statistics_frame(s)
    fh = io.StringIO()
    frame.write_csv(fh)
    [row] = list(csv.DictReader(io.StringIO(fh.getvalue())))
    assert float(row["p_ttest"]) == float(row["p_sign"]) == P_UNDERFLOW == 1e-300
    assert row[P_BOUNDS] == "p_ttest < 1e-300; p_sign < 1e-300"
    assert (row["p_randomization"], row["p_adjusted"]) == ("0.01", "0.02")
    none = statistics_frame(_stats_set(p_ttest=0.2, p_sign=0.3, p_randomization=0.01, p_adjusted=0.02))
    assert none.rows[0][P_BOUNDS] == ""


def test_which_fields_are_p_values():
    assert [
        k
        for k in ("p_ttest", "twin_pref_p", "twin_pref_p_cluster", "twin_pref_p_method", "randomization_resamples", "ttest_note", "mean_difference")
        if is_p_field(k)
    ] == [
        "p_ttest",
        "twin_pref_p",
        "twin_pref_p_cluster",
    ]
    row = {"p_ttest": 0.0, "ttest_note": "", "n_queries": 0, "p_sign": float("nan")}
    assert with_p_bounds(row) == {"p_ttest": 1e-300, "ttest_note": "", "n_queries": 0, "p_sign": row["p_sign"], P_BOUNDS: "p_ttest < 1e-300"}
