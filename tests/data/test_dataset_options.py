"""A result remembers how its dataset was loaded; a split with nothing to evaluate is an error.

* ``DatasetOptions`` round-trips through JSON and is saved in ``result.json`` and ``manifest.json``.
* A result evaluated with ``--skip-empty-text`` on a dataset with an empty document reloads its
  dataset the same way: ``result.to_ranx()`` (no dataset passed) works, and ranx, given the run and
  the qrels built here by hand from the files, recomputes the result's NDCG.
* A result written before the options were saved still loads (defaults, and a note saying so).
* A split whose judgements are all grade 0: a clear error naming the qrels file, exit status 2,
  no output folder.
"""

from __future__ import annotations

import json

import pytest
from conftest import write_jsonl, write_qrels

from sourcebias.cli.main import main
from sourcebias.core.errors import ConfigError, DataError
from sourcebias.data import DatasetOptions, load_dataset, recorded_options, require_evaluable
from sourcebias.data.options import NOT_RECORDED

HUMAN = [
    {"_id": "d1", "text": "the cat sat on the mat"},
    {"_id": "d2", "text": "dogs are barking loudly at night"},
    {"_id": "d3", "text": ""},  # empty: skipped with --skip-empty-text, with its twin and judgements
    {"_id": "d4", "text": "a recipe for apple pie"},
]
LLM = [
    {"_id": "d1", "text": "a cat is sitting on a mat"},
    {"_id": "d2", "text": "barking dogs at night are loud"},
    {"_id": "d3", "text": "an llm wrote this text about cats and dogs"},
    {"_id": "d4", "text": "how to bake an apple pie"},
]


@pytest.fixture
def with_empty(tmp_path):
    root = tmp_path / "empty-doc"
    write_jsonl(root / "corpus" / "human.jsonl", HUMAN)
    write_jsonl(root / "corpus" / "llm.jsonl", LLM)
    write_jsonl(root / "queries.jsonl", [{"_id": "q1", "text": "cat on a mat"}, {"_id": "q2", "text": "barking dogs"}, {"_id": "q3", "text": "apple pie"}])
    write_qrels(root / "qrels" / "test.tsv", [("q1", "d1", 1), ("q1", "d3", 1), ("q2", "d2", 2), ("q3", "d4", 1)])
    return root


def test_options_round_trip_and_refuse_bad_values():
    opts = DatasetOptions(split="dev", sources=["human", "llm", "human"], empty_text="skip", orphans="keep")
    assert opts.sources == ("human", "llm")
    assert DatasetOptions.from_dict(json.loads(json.dumps(opts.to_dict()))) == opts
    with pytest.raises(ConfigError, match="empty_text must be 'error' or 'skip', got 'maybe'"):
        DatasetOptions(empty_text="maybe")
    with pytest.raises(ConfigError, match="unknown dataset option"):
        DatasetOptions.from_dict({"split": "test", "fields": "title"})
    with pytest.raises(TypeError, match="unknown dataset option"):
        load_dataset("nq-utd", splt="test")


def test_keyword_arguments_still_work_and_override_options(with_empty):
    a = load_dataset(with_empty, empty_text="skip")
    b = load_dataset(with_empty, DatasetOptions(empty_text="skip"))
    c = load_dataset(with_empty, DatasetOptions(empty_text="error", orphans="keep"), empty_text="skip")
    assert a.options == b.options == DatasetOptions(empty_text="skip")
    assert c.options == DatasetOptions(empty_text="skip", orphans="keep")
    assert a.corpus.doc_ids == b.corpus.doc_ids and "d3" not in a.corpus.doc_ids
    with pytest.raises(DataError, match="document 'd3' has empty text"):
        load_dataset(with_empty)


def _hand_qrels_without_d3():
    """The judgements of the files, less those of the skipped original d3, per target
    (``source/doc_id`` names, the other source's copy at grade 0), written here from the files."""
    judged = {"q1": {"d1": 1}, "q2": {"d2": 2}, "q3": {"d4": 1}}
    out = {}
    for target in ("human", "llm"):
        out[target] = {q: {f"{s}/{d}": (g if s == target else 0) for d, g in docs.items() for s in ("human", "llm")} for q, docs in judged.items()}
    return out


def test_a_result_evaluated_with_skip_empty_text_reloads_its_dataset(with_empty, tmp_path, capsys):
    ranx = pytest.importorskip("ranx")
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(with_empty), "--skip-empty-text", "--k", "1", "3", "--metric", "NDCG", "--no-sole", "--statistics", "none", "-o", str(out)])
    assert info.value.code in (0, None), capsys.readouterr().err
    saved = json.loads((out / "result.json").read_text())["dataset"]["options"]
    assert saved["empty_text"] == "skip"
    assert json.loads((out / "manifest.json").read_text())["inputs"]["dataset"]["options"] == saved

    import sourcebias as sb

    result = sb.load_result(out)
    assert result.dataset_options() == (DatasetOptions(empty_text="skip", sources=("human", "llm")), "")
    export = result.to_ranx()  # no dataset: loaded again with the saved options
    hand = _hand_qrels_without_d3()
    run = ranx.Run(export.runs[("bm25", "mixed")].to_dict())
    for target in ("human", "llm"):
        assert export.qrels[target].to_dict() == hand[target]
        for k in (1, 3):
            theirs = ranx.evaluate(ranx.Qrels(hand[target]), run, f"ndcg@{k}", make_comparable=True)
            assert theirs == pytest.approx(result.mean("bm25", "mixed", target, f"NDCG@{k}"), abs=1e-12)


def test_a_result_without_saved_options_loads_with_defaults_and_says_so(with_empty, tmp_path, capsys):
    out = tmp_path / "out"
    with pytest.raises(SystemExit):
        main(["evaluate", str(with_empty), "--skip-empty-text", "--k", "1", "--metric", "NDCG", "--no-sole", "--statistics", "none", "-o", str(out)])
    body = json.loads((out / "result.json").read_text())
    del body["dataset"]["options"]  # as written before the options were saved
    (out / "result.json").write_text(json.dumps(body))
    import sourcebias as sb

    result = sb.load_result(out)
    options, note = result.dataset_options()
    assert options == DatasetOptions(split="test", sources=("human", "llm")) and note == NOT_RECORDED
    with pytest.raises(DataError, match="empty text"):  # the defaults cannot read this folder: said, not guessed
        result.to_ranx()
    assert recorded_options({"split": "", "human_source": "h"}, {"orphans": "keep"}) == (
        DatasetOptions(split=None, human_source="h", orphans="keep"),
        NOT_RECORDED,
    )


def test_all_zero_judgements_are_an_error_naming_the_qrels_file(cocktail_dir, tmp_path, capsys):
    write_qrels(cocktail_dir / "qrels" / "test.tsv", [("q1", "d1", 0), ("q2", "d2", 0)])
    ds = load_dataset(cocktail_dir)
    with pytest.raises(DataError, match=r"qrels/test.tsv: no query can be evaluated.*2 judgements of 2 queries, grades 0"):
        require_evaluable(ds)
    import sourcebias as sb

    with pytest.raises(DataError, match="no query can be evaluated"):
        sb.evaluate(ds, [sb.build_retriever("bm25")])
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(cocktail_dir), "-o", str(out)])
    err = capsys.readouterr().err.replace("\n", "")
    assert info.value.code == 2 and "test.tsv: no query can be evaluated" in err and "Traceback" not in err
    assert not out.exists() and not list(tmp_path.glob(".out.staging*"))
