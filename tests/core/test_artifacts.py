"""Results are artifacts: save -> load gives an equal result; output folders are checked before
any work, never mix two runs, refuse a second writer, and appear whole or not at all."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import sourcebias as sb
from sourcebias.cli.main import main
from sourcebias.core.artifacts import OutputFolder
from sourcebias.core.errors import ConfigError, DataError, OutputError
from sourcebias.evaluation import Key, RunKey, measure_grid
from sourcebias.retrieval import BM25, Run, TfIdf


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


@pytest.fixture
def result(cocktail_dir):
    ds = sb.load_dataset(cocktail_dir)
    external = BM25(name="external").retrieve(ds.corpus, ds.queries, 10)
    return sb.evaluate(ds, [BM25(), TfIdf()], runs=[external], measures=measure_grid(["NDCG", "MAP", "Share"], [1, 3]))


def test_save_load_round_trip_is_equal(result, tmp_path):
    path = sb.write_evaluation(result, tmp_path / "out")
    loaded = sb.load_result(path)
    assert loaded == result
    assert sb.load_artifact(path) == result  # the generic loader dispatches on the manifest's kind
    # equal in detail, not only by __eq__
    assert loaded.per_query.keys() == result.per_query.keys()
    assert all(isinstance(k, Key) for k in loaded.per_query) and all(isinstance(k, RunKey) for k in loaded.runs)
    assert loaded.parameters == result.parameters and loaded.retrievers == result.retrievers
    for k, run in result.runs.items():
        assert loaded.runs[k].keys("q2") == run.keys("q2")
        np.testing.assert_array_equal(loaded.runs[k].scores["q2"], run.scores["q2"])
        assert loaded.runs[k].scores["q2"].dtype == run.scores["q2"].dtype
    # a different value breaks equality (the comparison is not vacuous)
    loaded.per_query[Key("bm25", "mixed", "human", "NDCG@1")] = loaded.per_query[Key("bm25", "mixed", "human", "NDCG@1")] + 1
    assert loaded != result


def test_repr_is_one_short_line(result):
    text = repr(result)
    assert "\n" not in text and len(text) < 120 and "3 retrievers" in text


def test_loaded_runs_have_keys_only_unless_bound_to_the_dataset(result, tmp_path, cocktail_dir):
    path = sb.write_evaluation(result, tmp_path / "out")
    run = sb.load_result(path).runs[RunKey("bm25", "mixed")]
    with pytest.raises(DataError, match=r"run\.bind"):
        run.corpus.texts  # noqa: B018
    ds = sb.load_dataset(cocktail_dir)
    bound = run.bind(ds.corpus)
    assert bound == run and bound.corpus is ds.corpus and bound.corpus.texts[bound.positions["q1"][0]]
    again = sb.load_result(path, dataset=ds).runs[RunKey("bm25", "mixed")]
    assert again.corpus is ds.corpus and again == run


def test_unknown_key_names_what_exists(result):
    with pytest.raises(ConfigError, match="no retriever 'bm26' in this result; retrievers: bm25, external, tfidf"):
        result.mean("bm26", "mixed", "human", "NDCG@1")
    with pytest.raises(ConfigError, match="unknown measure 'NDGC'"):
        result.mean("bm25", "mixed", "human", "NDGC@1")


# -- the output-folder contract ----------------------------------------------------------------
def test_output_that_is_a_file_is_refused_before_any_work(tmp_path, capsys):
    target = tmp_path / "results.csv"
    target.write_text("mine")
    # the dataset does not exist either: the output is checked first, so its error is the one shown
    code, _, err = run_cli(["evaluate", str(tmp_path / "no-such-dataset"), "-o", str(target)], capsys)
    assert code == 2 and "exists and is a file" in err
    assert target.read_text() == "mine"


def test_unusable_parent_is_refused(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run_cli(["evaluate", str(tmp_path / "nope"), "-o", str(blocker / "sub" / "out")], capsys)
    assert code == 2 and "cannot create the parent folder" in err


def test_another_runs_results_are_refused_unless_overwrite(cocktail_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert run_cli(["evaluate", str(cocktail_dir), "-r", "bm25", "-r", "tfidf", "--k", "1", "-o", str(out)], capsys)[0] in (0, None)
    assert (out / "runs" / "tfidf.mixed.trec").is_file()
    before = (out / "manifest.json").read_text()
    code, _, err = run_cli(["evaluate", str(cocktail_dir), "-r", "bm25", "--k", "1", "-o", str(out)], capsys)
    assert code == 2 and "holds the results of another run" in err and "--overwrite" in err
    assert (out / "manifest.json").read_text() == before  # untouched
    code, _, err = run_cli(["evaluate", str(cocktail_dir), "-r", "bm25", "--k", "1", "-o", str(out), "--overwrite"], capsys)
    assert code in (0, None), err
    # nothing of the first run is left beside the second's results
    assert not (out / "runs" / "tfidf.mixed.trec").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["models"]) == {"bm25"}
    assert {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} == set(manifest["outputs"]["files"]) | {"manifest.json"}
    assert not list(tmp_path.glob(".out.*-*"))  # no staging or old folders left behind


def test_foreign_files_are_never_replaced(cocktail_dir, tmp_path, capsys):
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "chapter1.tex").write_text("precious")
    code, _, err = run_cli(["evaluate", str(cocktail_dir), "--k", "1", "-o", str(out), "--overwrite"], capsys)
    assert code == 2 and "holds no sourcebias manifest" in err
    assert (out / "chapter1.tex").read_text() == "precious"


def test_an_empty_folder_is_used(cocktail_dir, tmp_path, capsys):
    out = tmp_path / "empty"
    out.mkdir()
    assert run_cli(["evaluate", str(cocktail_dir), "--k", "1", "-o", str(out)], capsys)[0] in (0, None)
    assert (out / "result.json").is_file()


HOLD = textwrap.dedent(
    """
    import sys, time
    from sourcebias.core.artifacts import OutputFolder
    folder = OutputFolder.claim(sys.argv[1], kind="evaluate")
    (folder.staging / "partial.csv").write_text("half")
    print("claimed", flush=True)
    if sys.argv[2] == "die":
        import os
        os._exit(9)  # killed mid-write: no cleanup runs
    time.sleep(60)
    """
)


def test_a_second_writer_is_refused(cocktail_dir, tmp_path, capsys):
    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out), "hold"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "claimed"
        code, _, err = run_cli(["evaluate", str(cocktail_dir), "--k", "1", "-o", str(out)], capsys)
        assert code == 2 and f"another sourcebias process (pid {holder.pid})" in err
        with pytest.raises(OutputError, match="another sourcebias process"):
            OutputFolder.claim(out, kind="evaluate")
    finally:
        holder.kill()
        holder.wait()
    assert not out.exists()  # the holder never committed: no folder that looks complete


def test_a_killed_writer_leaves_nothing_that_looks_complete(cocktail_dir, tmp_path, capsys):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", HOLD, str(out), "die"], capture_output=True, text=True)
    assert proc.returncode == 9
    assert not out.exists() and list(tmp_path.glob(".out.staging-*"))  # only the hidden staging folder
    assert run_cli(["evaluate", str(cocktail_dir), "--k", "1", "-o", str(out)], capsys)[0] in (0, None)
    assert (out / "manifest.json").is_file() and not list(tmp_path.glob(".out.staging-*"))


def test_no_lock_file_is_left_after_a_command_succeeds_or_fails(cocktail_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert run_cli(["evaluate", str(cocktail_dir), "--k", "1", "-o", str(out)], capsys)[0] in (0, None)
    assert (out / "manifest.json").is_file() and not (tmp_path / ".out.lock").exists()
    code, _, err = run_cli(["evaluate", str(cocktail_dir), "--k", "1", "-r", "no-such-retriever", "-o", str(tmp_path / "bad")], capsys)
    assert code == 2 and not list(tmp_path.glob(".bad*")) and not (tmp_path / "bad").exists()
    code, _, err = run_cli(["evaluate", str(cocktail_dir), "--k", "3", "-o", str(out)], capsys)  # refused: results of another run
    assert code == 2 and "holds the results of another run" in err and not (tmp_path / ".out.lock").exists()
    folder = OutputFolder.claim(tmp_path / "lib", kind="evaluate")
    assert (tmp_path / ".lib.lock").is_file()
    with pytest.raises(RuntimeError), folder:
        raise RuntimeError("failed mid-work")
    assert not (tmp_path / ".lib.lock").exists() and not list(tmp_path.glob(".lib.*"))


CLAIM_LOOP = textwrap.dedent(
    """
    import os, sys, time
    from sourcebias.core.artifacts import OutputFolder
    from sourcebias.core.errors import OutputError
    target, marker, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    held = clashes = 0
    while held < rounds:
        try:
            folder = OutputFolder.claim(target, kind="evaluate")
        except OutputError:
            continue
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # fails if another holder is inside
        except FileExistsError:
            clashes += 1
        else:
            os.close(fd)
            time.sleep(0.001)
            os.unlink(marker)
        held += 1
        folder.abort()
    print(clashes)
    """
)


def test_claimers_racing_on_a_deleted_lock_file_never_both_hold_the_folder(tmp_path):
    """Each release deletes the lock file; a claimer that opened the old file just before must
    not go on holding it while another locks the new file at the same path."""
    procs = [
        subprocess.Popen([sys.executable, "-c", CLAIM_LOOP, str(tmp_path / "out"), str(tmp_path / "inside"), "150"], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    clashes = [int(p.communicate(timeout=300)[0].strip() or -1) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert clashes == [0, 0, 0]
    assert not (tmp_path / ".out.lock").exists()


def test_an_error_during_writing_keeps_the_old_results(result, tmp_path, monkeypatch):
    out = tmp_path / "out"
    sb.write_evaluation(result, out)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr("sourcebias.report.render.to_latex", broken)  # summary.tex, written through the study frame
    with pytest.raises(RuntimeError, match="disk full"):
        sb.write_evaluation(result, out, overwrite=True)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert not list(tmp_path.glob(".out.*-*"))


def test_an_interrupted_overwrite_is_recovered_before_the_folder_is_checked(result, tmp_path):
    """A writer killed between moving the old results aside and moving the new ones in leaves
    them in .out.old-PID. The next claim puts them back first, then checks: without --overwrite
    it is refused (it must not replace them unasked) and the old results are whole again."""
    out = tmp_path / "out"
    sb.write_evaluation(result, out)
    before = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    out.rename(tmp_path / ".out.old-99999")
    with pytest.raises(OutputError, match="holds the results of another run"):
        OutputFolder.claim(out, kind="evaluate")
    assert {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert not list(tmp_path.glob(".out.old-*"))
    OutputFolder.claim(out, kind="evaluate", overwrite=True).abort()  # with --overwrite it may go on


def test_output_dot_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    code, _, err = run_cli(["evaluate", str(tmp_path / "no-such-dataset"), "-o", "."], capsys)
    assert code == 2 and "is the current folder" in err and "--output results" in err
    with pytest.raises(OutputError, match="is the current folder"):
        OutputFolder.claim("..", kind="evaluate")
    assert list(tmp_path.iterdir()) == [here] and not list(here.iterdir())  # nothing written, no lock file


def test_a_path_with_dot_dot_names_the_folder_it_resolves_to(cocktail_dir, tmp_path, monkeypatch, capsys):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert run_cli(["evaluate", str(cocktail_dir), "--k", "1", "-o", "../out/sub/.."], capsys)[0] in (0, None)
    assert (tmp_path / "out" / "manifest.json").is_file() and list(sb.load_result(tmp_path / "out").retrievers) == ["bm25"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "tiny", "work"]  # tiny: the dataset; no lock file left


def test_run_equality_ignores_the_corpus_object_but_not_the_order(cocktail_dir):
    ds = sb.load_dataset(cocktail_dir)
    run = BM25().retrieve(ds.corpus, ds.queries, 5)
    other = Run(ds.corpus.take(np.arange(len(ds.corpus))), run.name, dict(run.positions), dict(run.scores))
    assert other == run
    swapped = dict(run.positions)
    swapped["q2"] = swapped["q2"][::-1].copy()
    assert Run(ds.corpus, run.name, swapped, dict(run.scores)) != run


def test_load_artifact_knows_every_kind_without_importing_its_package(tmp_path):
    """A fresh process that imports only the core loads an evaluate folder, an analysis of any
    kind and a power folder by the kind their manifests name (the loaders are named, not imported)."""
    import subprocess
    import sys

    from sourcebias.core.artifacts import _LOADERS

    assert {"evaluate", "analyze:*", "power", "audit"} <= set(_LOADERS)
    for kind in ("power", "audit", "analyze:length"):
        folder = tmp_path / kind.replace(":", "-")
        folder.mkdir()
        (folder / "manifest.json").write_text(json.dumps({"tool": "sourcebias", "kind": kind, "outputs": {"files": []}}))
        code = "import sys; from sourcebias.core.artifacts import load_artifact\ntry:\n load_artifact(sys.argv[1])\nexcept Exception as e: print(type(e).__name__, e)"
        out = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, timeout=120)
        said = out.stdout + out.stderr
        assert "no loader" not in said and "not a sourcebias manifest" not in said, said
        assert "missing: this output folder holds no" in said, said  # its own loader ran, and found no results file


def test_read_artifact_json_says_what_is_wrong(tmp_path):
    from sourcebias.core.artifacts import read_artifact_json
    from sourcebias.core.errors import DataError, OutputError

    with pytest.raises((OutputError, DataError)):
        read_artifact_json(tmp_path, "power.json", kind="power", version=1, what="power analysis")  # no manifest
    (tmp_path / "manifest.json").write_text(json.dumps({"tool": "sourcebias", "kind": "power", "outputs": {"files": []}}))
    with pytest.raises(DataError, match="holds no power analysis"):
        read_artifact_json(tmp_path, "power.json", kind="power", version=1, what="power analysis")
    (tmp_path / "power.json").write_text("{not json")
    with pytest.raises(DataError, match="not valid JSON"):
        read_artifact_json(tmp_path, "power.json", kind="power", version=1, what="power analysis")
    (tmp_path / "power.json").write_text(json.dumps({"format": 1, "kind": "audit"}))
    with pytest.raises(DataError, match="not a power analysis of format 1"):
        read_artifact_json(tmp_path, "power.json", kind="power", version=1, what="power analysis")
    (tmp_path / "power.json").write_text(json.dumps({"format": 1, "kind": "power", "x": 2}))
    assert read_artifact_json(tmp_path, "power.json", kind="power", version=1, what="power analysis")["x"] == 2


def test_a_misspelt_write_option_is_refused_before_anything_is_left(result, tmp_path):
    with pytest.raises(TypeError, match=r"unexpected keyword argument.*formt"):
        sb.write_evaluation(result, tmp_path / "out", formt="parquet")
    assert not list(tmp_path.glob("*out*"))  # not even a lock file: refused before the claim
