"""Running the same command twice into one output folder: the second run replaces the first's
results; a run that differs (settings, data, command) is still refused and told what differs; the
Python API names its own keyword (``overwrite=True``), the command line ``--overwrite``."""

from __future__ import annotations

import json
import os

import pytest

import sourcebias as sb
from sourcebias.cli.main import main
from sourcebias.core.artifacts import OutputFolder
from sourcebias.core.errors import OutputError


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


def _ok(args, capsys):
    code, out, err = run_cli(args, capsys)
    assert code in (0, None), err
    return out


def test_the_same_command_twice_replaces_its_own_results(cocktail_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    args = ["evaluate", str(cocktail_dir), "-r", "bm25", "--k", "1", "3", "-o", str(out)]
    _ok(args, capsys)
    first = json.loads((out / "manifest.json").read_text())
    metrics = (out / "metrics.csv").read_text()
    os.utime(out / "metrics.csv", ns=(1, 1))  # to see that the file is written again
    # the same command, spelt otherwise (--k 1 --k 3, a relative path from another folder): the same run
    monkeypatch.chdir(tmp_path)
    said = _ok(["evaluate", os.path.relpath(cocktail_dir), "-r", "bm25", "--k", "1", "--k", "3", "--output", "out"], capsys)
    assert "holds the results of this same command (same settings, input files and versions): they are replaced" in " ".join(said.split())
    second = json.loads((out / "manifest.json").read_text())
    assert (out / "metrics.csv").read_text() == metrics and (out / "metrics.csv").stat().st_mtime_ns != 1
    assert second["run_identity"]["sha256"] == first["run_identity"]["sha256"]
    assert not list(tmp_path.glob(".out.*"))  # no staging, old folder or lock left

    # another setting: refused, naming it, results untouched
    code, _, err = run_cli(["evaluate", str(cocktail_dir), "-r", "bm25", "--k", "1", "3", "--seed", "7", "-o", str(out)], capsys)
    assert code == 2 and "holds the results of another run" in err and "differs in seed" in err and "--overwrite" in err
    # the same command on changed data: refused
    corpus = cocktail_dir / "corpus" / "human.jsonl"
    corpus.write_text(corpus.read_text() + "\n")
    code, _, err = run_cli(args, capsys)
    assert code == 2 and "differs in the input data" in err
    assert json.loads((out / "manifest.json").read_text()) == second
    _ok([*args, "--overwrite"], capsys)


def test_a_folder_without_a_recorded_identity_is_not_taken_for_the_same_run(cocktail_dir, tmp_path, capsys):
    """A folder written through the Python API records no command: the command line refuses it."""
    out = tmp_path / "out"
    ds = sb.load_dataset(cocktail_dir)
    sb.write_evaluation(sb.evaluate(ds, [sb.BM25()], measures=sb.measure_grid(["NDCG"], [1])), out)
    code, _, err = run_cli(["evaluate", str(cocktail_dir), "-r", "bm25", "--k", "1", "-o", str(out)], capsys)
    assert code == 2 and "records no run identity" in err


def test_power_reruns_like_every_claiming_command(cocktail_dir, tmp_path, capsys):
    pilot = tmp_path / "pilot"
    _ok(["evaluate", str(cocktail_dir), "-r", "bm25", "--k", "1", "-o", str(pilot)], capsys)
    args = ["power", str(pilot), "--n", "20", "--resamples", "100", "--statistic", "relative_delta_ci", "-o", str(tmp_path / "power")]
    _ok(args, capsys)
    _ok(args, capsys)
    code, _, err = run_cli([*args[:-2], "--seed", "1", "-o", str(tmp_path / "power")], capsys)
    assert code == 2 and "differs in seed" in err


def test_the_python_api_names_its_keyword_not_the_option(cocktail_dir, tmp_path):
    ds = sb.load_dataset(cocktail_dir)
    result = sb.evaluate(ds, [sb.BM25()], measures=sb.measure_grid(["NDCG"], [1]))
    out = tmp_path / "out"
    sb.write_evaluation(result, out)
    with pytest.raises(OutputError) as info:
        sb.write_evaluation(result, out)
    message = str(info.value)
    assert "pass overwrite=True to replace them" in message and "--" not in message
    sb.write_evaluation(result, out, overwrite=True)
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "a.tex").write_text("x")
    with pytest.raises(OutputError, match=r"with overwrite=True") as info:
        OutputFolder.claim(tmp_path / "thesis", kind="evaluate")
    assert "--overwrite" not in str(info.value)
