"""``sourcebias judge`` from the command line, against a judge served over HTTP."""

from __future__ import annotations

import pytest

from sourcebias.cli.main import main
from sourcebias.data import load_dataset
from sourcebias.judges import load_judge
from sourcebias.judges.known_truth import BiasedJudge
from sourcebias.llmcalls.simulated import SimulatedServer


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as info:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


def test_judge_command(nq_utd, tmp_path, capsys):
    ds = load_dataset(nq_utd)
    judge = BiasedJudge.from_corpus(ds.corpus, ds.human_source, delta=0.4)
    out = tmp_path / "out"
    with SimulatedServer(judge) as url:
        spec = f"openai:sim@{url}"
        code, _, err = run_cli(["judge", nq_utd, "--judge", spec, "--top-k", "5", "-o", out], capsys)
        assert code == 2 and "--top-k grades the top documents of runs" in err and not out.exists() and judge.calls == 0  # refused before any call
        code, text, err = run_cli(
            ["judge", nq_utd, "--judge", spec, "--max-queries", "3", "--mode", "grade", "--mode", "pairwise", "--cache-dir", tmp_path / "c", "-o", out], capsys
        )
        assert code == 0, err
        assert "Twin bias of the judge" in text and "Pairwise" in text and "Answers and parse failures" in text
        code, _, err = run_cli(["judge", nq_utd, "--judge", spec, "--max-queries", "3", "-o", out], capsys)
        assert code == 2 and "holds the results of another run (`sourcebias judge`" in err
    result = load_judge(out)
    assert result.settings["modes"] == ["grade", "pairwise"] and result.dataset["queries"] == 3
    assert judge.calls == 3 * 10 * 2 + 3 * 10 * 2  # 60 grades and 60 pairwise questions, each asked once
    assert (out / "qrels" / "assessors.tsv").read_text().startswith("query-id\tcorpus-id\tscore\n")


def test_unknown_mode_is_refused(nq_utd, tmp_path, capsys):
    code, _, err = run_cli(["judge", nq_utd, "--judge", "openai:x@http://127.0.0.1:9/v1", "--mode", "listwise", "-o", tmp_path / "o"], capsys)
    assert code == 2 and "unknown judge mode(s) listwise" in err and not (tmp_path / "o").exists()
