"""Every option of ``evaluate`` is checked before any work.

The dataset given does not exist: an option error must be the one reported (so it was found before
the dataset was read), no retriever may have been built, and no output folder claimed (its parent
is not even created).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sourcebias.cli.main import main
from sourcebias.core.errors import ConfigError
from sourcebias.evaluation.plan import EvaluationPlan, parse_statistics


@pytest.mark.parametrize(
    "args, message",
    [
        (["--statistics", "nope"], "unknown statistic 'nope'"),
        (["--statistics-measure", "NDCG@7"], "--statistics-measure NDCG@7: not computed by this evaluation"),
        (["--statistics-measure", "Share@3"], "--statistics-measure Share@3: not computed"),
        (["--correction", "sidak"], "--correction must be one of holm, fdr_bh, bonferroni, none, got 'sidak'"),
        (["--format", "xlsx"], "--format must be csv or parquet, got 'xlsx'"),
        (["--orphans", "maybe"], "orphans must be 'drop' or 'keep', got 'maybe'"),
        (["--k", "20", "--depth", "10"], "--depth 10 is smaller than the largest cut-off 20"),
        (["--metric", "NDGC"], "unknown measure 'NDGC'"),
        (["--run", "no-such-run.trec"], "--run no-such-run.trec: file not found"),
        (["--docno-pattern", "{doc_id}-{source}"], "give --run FILE"),
    ],
)
def test_a_bad_option_is_reported_before_the_dataset_is_read(tmp_path, capsys, monkeypatch, args, message):
    from sourcebias import retrieval

    built = []
    real = retrieval.build_retriever
    monkeypatch.setattr(retrieval, "build_retriever", lambda *a, **kw: built.append(a) or real(*a, **kw))
    out = tmp_path / "not-yet" / "out"
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(tmp_path / "no-such-dataset"), *args, "-o", str(out)])
    err = capsys.readouterr().err.replace("\n", "")
    assert info.value.code == 2 and message in err, err
    assert "dataset folder not found" not in err and "Traceback" not in err
    assert built == [] and not (tmp_path / "not-yet").exists()


def test_the_plan_is_the_library_check():
    EvaluationPlan(measures=("NDCG",), cutoffs=(1, 3), statistics_measures=("ndcg@3",), statistics=("means", "paired_tests")).check()
    with pytest.raises(ConfigError, match="not computed"):
        EvaluationPlan(measures=("NDCG",), cutoffs=(1, 3), statistics_measures=("MAP@3",)).check()
    assert (
        parse_statistics(None) is None
        and parse_statistics(["none"]) == ()
        and parse_statistics(["means,paired_tests", "twin_preference"]) == ("means", "paired_tests", "twin_preference")
    )
    assert EvaluationPlan().specs == ["bm25"] and EvaluationPlan(runs=((None, Path("r.trec")),)).specs == []
    assert EvaluationPlan(retrievers=("bm25", "tfidf", "bm25")).specs == ["bm25", "tfidf"]
