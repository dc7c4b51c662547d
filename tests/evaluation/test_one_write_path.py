"""One write path for a result (issue 32): ``EvaluationResult.save`` claims the folder, writes the
result's files and the manifest, and :meth:`EvaluationResult.load` reads it back; the two wrappers
that did this before (``write_result``, ``write_result_into``) write the very same files, with a
DeprecationWarning naming ``save``; ``write_evaluation`` is ``save`` with the summaries rendered."""

from __future__ import annotations

import hashlib
import json

import pytest

import sourcebias as sb
from sourcebias.core.artifacts import OutputFolder
from sourcebias.core.errors import OutputError

RESULT_FILES = ("result.json", "metrics.csv", "per_query.csv", "runs/docnos.tsv")


@pytest.fixture
def result(cocktail_dir):
    ds = sb.load_dataset(cocktail_dir, split="test")
    return sb.evaluate(ds, [sb.build_retriever("bm25")], measures=sb.measure_grid(["NDCG"], [1, 3]), depth=10)


def digests(folder):
    """SHA-256 of every file of the folder, by relative path, computed here (not from the manifest)."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "manifest.json"
    }


def test_save_writes_a_folder_that_loads_back_equal_with_every_file_in_its_manifest(result, tmp_path):
    folder = result.save(tmp_path / "out")
    assert folder == (tmp_path / "out").resolve()
    assert sb.load_result(folder) == result
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["kind"] == "evaluate"
    listed = {k: v["sha256"] for k, v in manifest["outputs"]["files"].items()}
    assert listed == digests(folder)
    assert {*RESULT_FILES} <= set(listed)


def test_the_deprecated_wrappers_write_what_save_writes(result, tmp_path):
    from sourcebias.evaluation.artifact import write_result, write_result_into

    new = result.save(tmp_path / "new")
    with pytest.warns(DeprecationWarning, match=r"result\.save\(out"):
        old = write_result(result, tmp_path / "old")
    assert digests(old) == digests(new)
    (tmp_path / "outer").mkdir()
    nested = result.save(tmp_path / "outer" / "a", nested=True, command="cdc fit")
    with pytest.warns(DeprecationWarning, match=r"nested=True"):
        into = write_result_into(result, tmp_path / "outer" / "b", command="cdc fit")
    assert digests(into) == digests(nested) == digests(new)
    assert json.loads((into / "manifest.json").read_text())["command"] == "cdc fit"


def test_write_evaluation_is_save_with_the_summaries(result, tmp_path):
    from sourcebias.study.outputs import summary_renderer

    a = sb.write_evaluation(result, tmp_path / "a")
    b = result.save(tmp_path / "b", render=summary_renderer())
    assert digests(a).keys() == digests(b).keys() >= {"summary.md", "summary.tex", *RESULT_FILES}
    assert {k: v for k, v in digests(a).items() if not k.endswith(".png")} == {k: v for k, v in digests(b).items() if not k.endswith(".png")}


def test_misuse_is_refused_before_anything_is_written(result, tmp_path):
    with pytest.raises(TypeError, match="formt"):
        result.save(tmp_path / "x", formt="parquet")
    assert not (tmp_path / "x").exists() or not any((tmp_path / "x").iterdir())
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="holds no sourcebias manifest"):
        result.save(other)
    assert [p.name for p in other.iterdir()] == ["notes.txt"]
    with OutputFolder.claim(tmp_path / "claimed", kind="evaluate") as claimed, pytest.raises(TypeError, match="nested=True takes a path"):
        result.save(claimed, nested=True)


def test_a_folder_claimed_before_work_is_committed_by_save(result, tmp_path):
    claimed = OutputFolder.claim(tmp_path / "early", kind="evaluate")
    path = result.save(claimed, timings={"total_s": 1.0})
    assert path == claimed.path and sb.load_result(path) == result
    assert json.loads((path / "manifest.json").read_text())["timings_s"]["total_s"] == 1.0
