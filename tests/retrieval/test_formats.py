"""Other tools' files: BEIR/Cocktail results JSON, the 2026 package's nested-JSON runs and
``<doc_id>-<source>`` names, and per-document feature JSON Lines; names through the one resolver,
problems located by file:line."""

from __future__ import annotations

import json

import numpy as np
import pytest

import sourcebias as sb
from sourcebias.core.errors import ConfigError, DataError
from sourcebias.retrieval.formats import read_feature_jsonl, write_feature_jsonl, write_json_run
from sourcebias.retrieval.run import read_json_run

COCKTAIL = "{doc_id}-{source}"


@pytest.fixture
def tiny(cocktail_dir):
    return sb.load_dataset(cocktail_dir, split="test")


def cocktail_results(path, results):
    """As the Cocktail code saves BEIR's results: sorted by score, json.dump(indent=4)."""
    body = {q: dict(sorted(d.items(), key=lambda kv: kv[1], reverse=True)) for q, d in results.items()}
    path.write_text(json.dumps(body, indent=4))
    return path


RESULTS = {
    "q1": {"d1-human": 3.5, "d1-llm": 3.5, "d3-llm": 1.25, "d2-human": 0.5},
    "q2": {"d2-llm": 2.0, "d2-human": 1.0, "d3-human": 1.0},
}


def test_cocktail_results_read_like_the_same_trec_run(tiny, tmp_path):
    path = cocktail_results(tmp_path / "results.json", RESULTS)
    run = read_json_run(path, tiny.corpus, docno_pattern=COCKTAIL, name="cocktail")
    trec = tmp_path / "same.trec"
    trec.write_text("".join(f"{q} Q0 {d} 1 {s!r} x\n" for q, e in RESULTS.items() for d, s in e.items()))
    expected = sb.Run.from_trec(trec, tiny.corpus, docnos=sb.DocnoMap.from_pattern(COCKTAIL, tiny.corpus), name="cocktail")
    assert run == expected  # same order (ties by the tie rule) and scores
    a = sb.evaluate(tiny, runs=[run], measures=sb.measure_grid(["NDCG"], [1, 3]))
    b = sb.evaluate(tiny, runs=[expected], measures=sb.measure_grid(["NDCG"], [1, 3]))
    assert all(np.array_equal(v, b.per_query[k]) for k, v in a.per_query.items())


def test_a_name_that_maps_to_no_document_stops_with_file_and_line(tiny, tmp_path):
    path = cocktail_results(tmp_path / "results.json", RESULTS)
    # json.dump(indent=4): line 1 "{", line 2 "q1": {, line 3 its first document
    with pytest.raises(DataError, match=r"results\.json:3: document 'd1-human' is not in the dataset .*'\{doc_id\}-\{source\}'"):
        read_json_run(path, tiny.corpus)  # no pattern named: the <source>/<doc_id> names, never a guess
    bad = dict(RESULTS, q2={"d2-llm": 2.0, "d9-llm": 1.0})
    path = cocktail_results(tmp_path / "bad.json", bad)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), start=1) if "d9-llm" in text)
    with pytest.raises(DataError, match=rf"bad\.json:{line}: document 'd9-llm'"):
        read_json_run(path, tiny.corpus, docno_pattern=COCKTAIL)


def test_malformed_runs_are_located(tiny, tmp_path):
    cases = {
        '{\n"q1": {"d1-human": 1.0},\n"q1": {"d2-human": 1.0}\n}': r":3: query 'q1' is given twice \(first on line 2\)",
        '{\n"q1": {"d1-human": 1.0,\n "d1-human": 0.5}\n}': r":3: document 'd1-human' is listed twice",
        '{\n"q1": {"d1-human": "high"}\n}': r":2: the score of 'd1-human' in query 'q1' is not a number",
        '{\n"q1": {"d1-human": 1.0\n\n}': r":4: expected ',' or '}', got the end of the file",
        '{\n"q1": [1, 2]\n}': r":2: expected '\{' opening the ranking of query 'q1'",
    }
    for i, (text, message) in enumerate(cases.items()):
        path = tmp_path / f"r{i}.json"
        path.write_text(text)
        with pytest.raises(DataError, match=message):
            read_json_run(path, tiny.corpus, docno_pattern=COCKTAIL)


def test_written_runs_keep_our_order_for_any_tool_that_sorts_by_score(tiny, tmp_path):
    run = sb.build_retriever("bm25").retrieve(tiny.corpus, tiny.queries, 10)
    names = sb.DocnoMap.from_pattern(COCKTAIL, tiny.corpus)
    path = write_json_run(run, tmp_path / "run.json", names)
    body = json.loads(path.read_text())
    for q in run.query_ids:
        by_score = sorted(body[q], key=lambda d: body[q][d], reverse=True)  # what BEIR / pytrec_eval do
        assert by_score == [f"{d}-{s}" for d, s in run.keys(q)]
        assert len(set(body[q].values())) == len(body[q])  # strictly decreasing: no ties left
    back = read_json_run(path, tiny.corpus, docnos=names, name=run.name)
    assert [back.keys(q) for q in run.query_ids] == [run.keys(q) for q in run.query_ids]
    for q in run.query_ids:
        np.testing.assert_allclose(back.scores[q], run.scores[q], rtol=1e-6)


def test_source_labels_and_ambiguous_patterns(tiny, tmp_path):
    path = cocktail_results(tmp_path / "r.json", {"q1": {"d1-H": 2.0, "d1-L": 1.0}})
    run = read_json_run(path, tiny.corpus, docno_pattern=COCKTAIL, source_labels={"human": "H", "llm": "L"})
    assert run.keys("q1") == [("d1", "human"), ("d1", "llm")]
    with pytest.raises(ConfigError, match="cannot tell a document from its twin"):
        read_json_run(path, tiny.corpus, docno_pattern="{doc_id}")


def test_feature_jsonl_aligned_with_the_corpus(tiny, tmp_path):
    corpus = tiny.corpus
    values = {(d, s): 10.0 + i for i, (d, s) in enumerate((d, s) for d in ("d1", "d2", "d3") for s in ("llm", "human"))}
    path = tmp_path / "ppl.jsonl"
    path.write_text("".join(json.dumps({"_id": f"{d}-{s}", "value": v}) + "\n" for (d, s), v in values.items()))
    out = read_feature_jsonl(path, corpus, docno_pattern=COCKTAIL)
    for (d, s), v in values.items():
        assert out[corpus.position(d, s)] == v
    # written back under our names, read back equal
    mine = write_feature_jsonl(out, tmp_path / "mine.jsonl", corpus)
    np.testing.assert_array_equal(read_feature_jsonl(mine, corpus), out)


def test_feature_jsonl_problems_are_located(tiny, tmp_path):
    good = [{"_id": f"{d}-{s}", "value": 1.0} for d in ("d1", "d2", "d3") for s in ("human", "llm")]
    cases = {
        "unknown": (good[:2] + [{"_id": "d7-llm", "value": 2.0}], r":3: document 'd7-llm' is not in the dataset"),
        "twice": (good + [{"_id": "d1-human", "value": 2.0}], r":7: document 'd1-human' is given twice \(first on line 1\)"),
        "nan": ([{"_id": "d1-human", "value": "n/a"}], r":1: field 'value' of 'd1-human' must be a finite number"),
        "missing": (good[:5], r"1 of the 6 documents have no value here, e.g. \(d3, llm\) named 'd3-llm'"),
    }
    for name, (records, message) in cases.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        with pytest.raises(DataError, match=message):
            read_feature_jsonl(path, tiny.corpus, docno_pattern=COCKTAIL)
