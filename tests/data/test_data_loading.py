"""Loading the three layouts, choosing sources and splits, and a clear error for each bad input."""

import pytest
from conftest import HUMAN_DOCS, LLM_DOCS, QRELS, QUERIES, write_jsonl, write_qrels

from sourcebias.core.errors import ConfigError, DataError
from sourcebias.data import load_dataset


def test_cocktail_layout(cocktail_dir):
    ds = load_dataset(cocktail_dir, split="test")
    assert ds.layout == "cocktail"
    assert ds.sources == ("human", "llm")
    assert len(ds.corpus) == 6
    i = ds.corpus.position("d2", "llm")
    doc = ds.corpus[i]
    assert (doc.doc_id, doc.source, doc.title) == ("d2", "llm", "Dogs")
    assert doc.retrieval_text() == "Dogs At night, dogs bark very loudly."
    # q2 has a grade-0 judgement for d3 and a relevant d2; q1 has d1.
    assert ds.evaluation_queries() == ["q1", "q2"]
    assert dict(ds.qrels["q2"]) == {"d2": 2, "d3": 0}


def test_kdd_layout(tmp_path):
    root = tmp_path / "kdd"
    write_jsonl(root / "corpus-human.jsonl", HUMAN_DOCS)
    write_jsonl(root / "0.2" / "corpus-llama-2-7b-chat.jsonl", LLM_DOCS)
    write_jsonl(root / "1.0" / "corpus-llama-2-7b-chat.jsonl", LLM_DOCS[:2])
    write_jsonl(root / "queries.jsonl", QUERIES)
    write_qrels(root / "qrels" / "test.tsv", QRELS)
    ds = load_dataset(root)
    assert ds.layout == "kdd"
    assert set(ds.sources) == {"human", "llama-2-7b-chat-tmp0.2", "llama-2-7b-chat-tmp1.0"}
    assert ds.corpus.source_counts()["llama-2-7b-chat-tmp1.0"] == 2
    only = load_dataset(root, sources=["human", "llama-2-7b-chat-tmp1.0"])
    assert only.sources == ("human", "llama-2-7b-chat-tmp1.0")


def test_beir_layout_single_source(tmp_path):
    root = tmp_path / "beir"
    write_jsonl(root / "corpus.jsonl", HUMAN_DOCS)
    write_jsonl(root / "queries.jsonl", QUERIES)
    write_qrels(root / "qrels" / "dev.tsv", QRELS, header=False)
    ds = load_dataset(root, split="dev")
    assert ds.layout == "beir" and ds.sources == ("human",)
    assert len(ds.qrels) == 2


def test_llm_only_selection_still_validates_against_human(cocktail_dir):
    ds = load_dataset(cocktail_dir, sources=["llm"])
    assert ds.sources == ("llm",)
    assert len(ds.corpus) == 3


def test_numeric_ids_are_strings(tmp_path):
    root = tmp_path / "num"
    write_jsonl(root / "corpus.jsonl", [{"_id": 7, "title": "", "text": "seven"}])
    write_jsonl(root / "queries.jsonl", [{"_id": 1, "text": "seven"}])
    write_qrels(root / "qrels" / "test.tsv", [(1, 7, 1)])
    ds = load_dataset(root)
    assert ds.corpus.doc_ids == ["7"] and list(ds.qrels) == ["1"]


# -- bad inputs: each error names the file, the line and the problem --------------------------


def expect(exc_type, fn, *fragments):
    with pytest.raises(exc_type) as info:
        fn()
    msg = str(info.value)
    for f in fragments:
        assert f in msg, f"{f!r} not in {msg!r}"
    return info.value


def test_malformed_json(cocktail_dir):
    path = cocktail_dir / "corpus" / "llm.jsonl"
    lines = path.read_text().splitlines()
    lines[1] = lines[1][:-5]
    path.write_text("\n".join(lines) + "\n")
    err = expect(DataError, lambda: load_dataset(cocktail_dir), "llm.jsonl:2:", "malformed JSON")
    assert err.line == 2 and err.path == path


def test_missing_id_and_text(cocktail_dir):
    write_jsonl(cocktail_dir / "corpus" / "llm.jsonl", [LLM_DOCS[0], {"title": "", "text": "x"}])
    expect(DataError, lambda: load_dataset(cocktail_dir), "llm.jsonl:2:", "missing field '_id'")
    write_jsonl(cocktail_dir / "corpus" / "llm.jsonl", [LLM_DOCS[0], LLM_DOCS[1], {"_id": "d3", "title": ""}])
    expect(DataError, lambda: load_dataset(cocktail_dir), "llm.jsonl:3:", "missing field 'text'")


def test_duplicate_ids_within_a_source(cocktail_dir):
    write_jsonl(cocktail_dir / "corpus" / "human.jsonl", HUMAN_DOCS + [HUMAN_DOCS[1]])
    expect(DataError, lambda: load_dataset(cocktail_dir), "human.jsonl:4:", "duplicate document id 'd2'", "line 2")


def test_twin_without_original(cocktail_dir):
    write_jsonl(cocktail_dir / "corpus" / "llm.jsonl", LLM_DOCS + [{"_id": "d9", "title": "", "text": "orphan"}])
    expect(DataError, lambda: load_dataset(cocktail_dir), "llm.jsonl:4:", "twin 'd9' has no original")


def test_qrels_unknown_document_and_query(cocktail_dir):
    write_qrels(cocktail_dir / "qrels" / "test.tsv", QRELS + [("q1", "d42", 1)])
    expect(DataError, lambda: load_dataset(cocktail_dir), "test.tsv:5:", "document 'd42' is not in the corpus")
    ds = load_dataset(cocktail_dir, unknown_qrels="skip")
    assert ds.report.skipped == {"judgements for unknown documents": 1}
    assert any("test.tsv:5" in n for n in ds.report.notes())
    write_qrels(cocktail_dir / "qrels" / "test.tsv", [("q7", "d1", 1)] + QRELS)
    expect(DataError, lambda: load_dataset(cocktail_dir), "test.tsv:2:", "query 'q7' is not in the queries file")


def test_bad_qrels_lines(cocktail_dir):
    write_qrels(cocktail_dir / "qrels" / "test.tsv", QRELS + [("q1", "d2", "high")])
    expect(DataError, lambda: load_dataset(cocktail_dir), "test.tsv:5:", "score 'high' is not an integer")
    write_qrels(cocktail_dir / "qrels" / "test.tsv", QRELS + [("q1", "d1", 2)])
    expect(DataError, lambda: load_dataset(cocktail_dir), "test.tsv:5:", "duplicate judgement for (q1, d1)")
    (cocktail_dir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\n")
    expect(DataError, lambda: load_dataset(cocktail_dir), "test.tsv:2:", "expected 3 columns")


def test_missing_split_lists_available(cocktail_dir):
    write_qrels(cocktail_dir / "qrels" / "dev.tsv", QRELS)
    expect(DataError, lambda: load_dataset(cocktail_dir, split="train"), "train.tsv", "split 'train' not found", "dev, test")


def test_empty_corpus(cocktail_dir):
    (cocktail_dir / "corpus" / "llm.jsonl").write_text("")
    expect(DataError, lambda: load_dataset(cocktail_dir), "llm.jsonl", "empty corpus")


def test_empty_text(cocktail_dir):
    write_jsonl(cocktail_dir / "corpus" / "llm.jsonl", [LLM_DOCS[0], {"_id": "d2", "title": "t", "text": "  "}, LLM_DOCS[2]])
    expect(DataError, lambda: load_dataset(cocktail_dir), "llm.jsonl:2:", "document 'd2' has empty text")
    ds = load_dataset(cocktail_dir, empty_text="skip")
    assert ds.corpus.source_counts() == {"human": 3, "llm": 2}
    assert ds.report.skipped == {"documents with empty text": 1}


def test_not_an_object_and_wrong_types(cocktail_dir):
    write_jsonl(cocktail_dir / "queries.jsonl", [QUERIES[0], "[1, 2]"])
    expect(DataError, lambda: load_dataset(cocktail_dir), "queries.jsonl:2:", "expected a JSON object")
    write_jsonl(cocktail_dir / "queries.jsonl", [QUERIES[0], {"_id": "q2", "text": ["a"]}])
    expect(DataError, lambda: load_dataset(cocktail_dir), "queries.jsonl:2:", "'text' must be a string")
    write_jsonl(cocktail_dir / "queries.jsonl", [QUERIES[0], QUERIES[0]])
    expect(DataError, lambda: load_dataset(cocktail_dir), "queries.jsonl:2:", "duplicate query id 'q1'")


def test_missing_folder_and_unknown_layout(tmp_path):
    expect(DataError, lambda: load_dataset(tmp_path / "nope"), "dataset folder not found")
    (tmp_path / "empty").mkdir()
    expect(DataError, lambda: load_dataset(tmp_path / "empty"), "no corpus found")


def test_missing_human_source_and_unknown_source(cocktail_dir):
    (cocktail_dir / "corpus" / "human.jsonl").rename(cocktail_dir / "corpus" / "original.jsonl")
    expect(DataError, lambda: load_dataset(cocktail_dir), "no source named 'human'", "original", "--human-source")
    ds = load_dataset(cocktail_dir, human_source="original")
    assert ds.human_source == "original" and ds.other_sources == ["llm"]
    expect(ConfigError, lambda: load_dataset(cocktail_dir, human_source="original", sources=["gpt"]), "unknown source(s) gpt")


def test_real_datasets_load(nq_utd, nfcorpus):
    ds = load_dataset(nq_utd)
    assert ds.corpus.source_counts() == {"human": 800, "llama-2-7b-chat-tmp0.2": 800}
    assert len(ds.evaluation_queries()) == 80
    nf = load_dataset(nfcorpus, split="dev")
    assert nf.corpus.source_counts() == {"human": 3633, "llama-2-7b-chat-tmp0.2": 3633}
    assert len(nf.qrels) == 324
    with pytest.raises(DataError, match="split 'test' not found; available splits: dev, train"):
        load_dataset(nfcorpus, split="test")
