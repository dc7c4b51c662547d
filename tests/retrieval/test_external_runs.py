"""Runs from anywhere: a TREC run written by another tool (raw bm25s here, no sourcebias code)
evaluates with the protocol to the values of an independent computation written out in this test."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import numpy as np
import pytest
from conftest import LLAMA, hand_ndcg, tie_key

from sourcebias.cli.main import main
from sourcebias.core.errors import ConfigError, DataError

ndcg = hand_ndcg


def read_jsonl(path):
    import json

    return [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]


@pytest.fixture(scope="module")
def bm25s_run(nq_utd, tmp_path_factory):
    """A BM25 run of nq-utd's mixed corpus made with bm25s's own tokenizer and scorer, written in
    TREC format with <source>/<doc_id> names and rounded scores (so that some scores tie)."""
    import bm25s

    docs = []
    for source, fname in (("human", "human.jsonl"), (LLAMA, f"{LLAMA}.jsonl")):
        for rec in read_jsonl(nq_utd / "corpus" / fname):
            title = rec.get("title") or ""
            docs.append((rec["_id"], source, f"{title} {rec['text']}".strip()))
    queries = {r["_id"]: r["text"] for r in read_jsonl(nq_utd / "queries.jsonl")}
    qrels = [line.split("\t") for line in (nq_utd / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    qids = sorted({q for q, _, _ in qrels})
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([t for _, _, t in docs], stopwords="en", show_progress=False), show_progress=False)
    path = tmp_path_factory.mktemp("ext") / "bm25s.trec"
    with path.open("w") as fh:
        for q in qids:
            scores = retriever.get_scores(bm25s.tokenize(queries[q], stopwords="en", show_progress=False, return_ids=False)[0])
            top = np.argsort(-scores, kind="stable")[:100]
            for r, i in enumerate(top, start=1):
                fh.write(f"{q} Q0 {docs[i][1]}/{docs[i][0]} {r} {round(float(scores[i]), 1)} bm25s\n")
    return path


def hand_evaluation(run_path, nq_utd, *, seed=0):
    """Per target and k, mean NDCG over the split's queries with a relevant document: the run's
    documents sorted by score, ties by the documented tie rule, all computed here."""
    per_query = {}
    for line in Path(run_path).read_text().splitlines():
        q, _, docno, _, score, _ = line.split()
        source, _, doc_id = docno.partition("/")
        per_query.setdefault(q, []).append((-float(score), tie_key(q, doc_id, source, seed), doc_id, source))
    labels = {}
    for q, d, g in (line.split("\t") for line in (nq_utd / "qrels" / "test.tsv").read_text().splitlines()[1:]):
        labels.setdefault(q, {})[d] = int(g)
    evaluated = [q for q in labels if any(g > 0 for g in labels[q].values())]
    out = {}
    for target in ("human", LLAMA, "all"):
        for k in (1, 3, 5, 10):
            vals = []
            for q in evaluated:
                ranked = [(d, s) for _, _, d, s in sorted(per_query.get(q, []))]
                vals.append(ndcg(ranked, labels[q], target, 2, k))
            out[(target, k)] = float(np.mean(vals))
    return out


def read_metrics(out):
    with (out / "metrics.csv").open() as fh:
        return {(r["retriever"], r["corpus"], r["target"], r["metric"]): float(r["value"]) for r in csv.DictReader(fh)}


def test_run_from_another_tool_gives_the_independent_values(bm25s_run, nq_utd, tmp_path, capsys):
    lines = bm25s_run.read_text().splitlines()
    scores_by_q = {}
    for line in lines:
        scores_by_q.setdefault(line.split()[0], []).append(line.split()[4])
    assert any(len(v) != len(set(v)) for v in scores_by_q.values())  # the rounded run has ties to order
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(nq_utd), "--run", f"bm25s={bm25s_run}", "--k", "1", "3", "5", "10", "--metric", "NDCG", "Share", "-o", str(out)])
    assert info.value.code in (0, None), capsys.readouterr().err
    got = read_metrics(out)
    expected = hand_evaluation(bm25s_run, nq_utd)
    for (target, k), value in expected.items():
        assert got[("bm25s", "mixed", target, f"NDCG@{k}")] == pytest.approx(value, abs=1e-9), (target, k)
    h, g = got[("bm25s", "mixed", "human", "NDCG@3")], got[("bm25s", "mixed", LLAMA, "NDCG@3")]
    assert got[("bm25s", "mixed", "relative_delta", "NDCG@3")] == pytest.approx((h - g) / ((h + g) / 2) * 100)
    assert got[("bm25s", "mixed", "human", "Share@10")] + got[("bm25s", "mixed", LLAMA, "Share@10")] == pytest.approx(1.0)


def test_gzipped_run_and_docnos_table(bm25s_run, nq_utd, tmp_path, capsys):
    """The same run, gzipped, with documents named by a docnos.tsv beside it (numbers here)."""
    folder = tmp_path / "ext"
    folder.mkdir()
    names, rows = {}, []
    for line in bm25s_run.read_text().splitlines():
        q, z, docno, r, s, t = line.split()
        names.setdefault(docno, f"D{len(names)}")
        rows.append(f"{q} {z} {names[docno]} {r} {s} {t}\n")
    with gzip.open(folder / "run.trec.gz", "wt") as fh:
        fh.writelines(rows)
    # the table must name every document of the dataset (those not in the run too)
    for source, fname in (("human", "human.jsonl"), (LLAMA, f"{LLAMA}.jsonl")):
        for rec in read_jsonl(nq_utd / "corpus" / fname):
            names.setdefault(f"{source}/{rec['_id']}", f"D{len(names)}")
    with (folder / "docnos.tsv").open("w") as fh:
        fh.write("docno\tdoc_id\tsource\n")
        for docno, name in names.items():
            source, _, doc_id = docno.partition("/")
            fh.write(f"{name}\t{doc_id}\t{source}\n")
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(nq_utd), "--run", str(folder / "run.trec.gz"), "--k", "1", "3", "--metric", "NDCG", "-o", str(out)])
    assert info.value.code in (0, None), capsys.readouterr().err
    got = read_metrics(out)
    expected = hand_evaluation(bm25s_run, nq_utd)
    assert got[("run", "mixed", "all", "NDCG@3")] == pytest.approx(expected[("all", 3)], abs=1e-9)
    assert got[("run", "mixed", "human", "NDCG@1")] == pytest.approx(expected[("human", 1)], abs=1e-9)


def test_cocktail_suffix_pattern_with_source_labels(cocktail_dir, tmp_path, capsys):
    run = tmp_path / "cocktail.trec"
    run.write_text("q1 Q0 d1-L 1 2.0 x\nq1 Q0 d1-H 2 1.0 x\nq2 Q0 d2-H 1 3.0 x\nq2 Q0 d2-L 2 3.0 x\n")
    out = tmp_path / "out"
    labels = ["--source-label", "human=H", "--source-label", "llm=L"]
    args = ["evaluate", str(cocktail_dir), "--run", str(run), "--docno-pattern", "{doc_id}-{source}", *labels, "--k", "1", "--metric", "NDCG", "-o", str(out)]
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code in (0, None), capsys.readouterr().err
    m = read_metrics(out)
    # q1: the LLM copy first (score 2 > 1): LLM target 1, human target 0. q2: a tie, ordered by the rule.
    first = "human" if tie_key("q2", "d2", "human") < tie_key("q2", "d2", "llm") else "llm"
    assert m[("cocktail", "mixed", "llm", "NDCG@1")] == pytest.approx((1.0 + (first == "llm")) / 2)
    assert m[("cocktail", "mixed", "human", "NDCG@1")] == pytest.approx((0.0 + (first == "human")) / 2)


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("q1 Q0 human/d1 1 2.0\n", "run.trec:1: expected 6 columns"),
        ("q1 Q0 human/d1 1 2.0 x\nq1 Q0 human/d9 2 1.0 x\n", "run.trec:2: document 'human/d9' is not in the dataset"),
        ("q1 Q0 human/d1 1 2.0 x\nq1 Q0 human/d1 2 1.0 x\n", "run.trec:2: document 'human/d1' is listed twice for query 'q1' (first on line 1)"),
        ("q1 Q0 human/d1 1 high x\n", "run.trec:1: score 'high' is not a number"),
        ("", "run.trec: empty run"),
        ("q1 Q0 d1-human 1 2.0 x\n", "run.trec:1: document 'd1-human' is not in the dataset (sourcebias names <source>/<doc_id>)"),
    ],
)
def test_bad_run_files_stop_with_file_and_line(cocktail_dir, tmp_path, capsys, content, fragment):
    run = tmp_path / "run.trec"
    run.write_text(content)
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(cocktail_dir), "--run", str(run), "--k", "1"])
    err = capsys.readouterr().err.replace("\n", "")
    assert info.value.code == 2 and fragment in err and "Traceback" not in err


def test_a_trec_run_with_bare_document_ids_says_how_to_name_the_copies(cocktail_dir, tmp_path, capsys):
    """A bare doc_id cannot say which copy was ranked; the error names the file and line and the
    two ways to say it (--docnos, --docno-pattern), as the nested-JSON reader does."""
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 human/d1 1 2.0 x\nq1 Q0 d2 2 1.0 x\n")
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(cocktail_dir), "--run", str(run), "--k", "1"])
    err = capsys.readouterr().err.replace("\n", "")
    assert info.value.code == 2 and "run.trec:2: document 'd2' is not in the dataset" in err
    assert "'d2' is a bare document id" in err and "copies (human, llm)" in err
    assert "--docnos FILE" in err and "--docno-pattern" in err and "'{doc_id}-{source}'" in err
    other = tmp_path / "other.trec"
    other.write_text("q1 Q0 d1-human 1 2.0 x\n")
    with pytest.raises(SystemExit):
        main(["evaluate", str(cocktail_dir), "--run", str(other), "--k", "1"])
    err = capsys.readouterr().err.replace("\n", "")
    assert "name copies {doc_id}-{source}" in err and "--docno-pattern" in err and "bare document id" not in err


def test_pattern_that_cannot_tell_twins_apart_is_refused(cocktail_dir):
    from sourcebias.data import load_dataset
    from sourcebias.retrieval import DocnoMap

    ds = load_dataset(cocktail_dir)
    with pytest.raises(ConfigError, match="cannot tell a document from its twin"):
        DocnoMap.from_pattern("{doc_id}", ds.corpus)
    with pytest.raises(ConfigError, match="two documents have the name 'd1-x'"):
        DocnoMap.from_pattern("{doc_id}-{source}", ds.corpus, {"human": "x", "llm": "x"})
    with pytest.raises(ConfigError, match="unknown source"):
        DocnoMap.from_pattern("{doc_id}-{source}", ds.corpus, {"gpt": "g"})


def test_docnos_table_missing_documents_is_an_error(cocktail_dir, tmp_path):
    from sourcebias.data import load_dataset
    from sourcebias.retrieval import DocnoMap

    ds = load_dataset(cocktail_dir)
    table = tmp_path / "docnos.tsv"
    table.write_text("docno\tdoc_id\tsource\nA\td1\thuman\n")
    with pytest.raises(DataError, match="5 documents of the dataset have no name here"):
        DocnoMap.from_table(table, ds.corpus)


def test_a_docnos_table_beside_the_run_reads_the_same_through_evaluate_and_a_grid_cell(cocktail_dir, tmp_path, capsys):
    """One rule (sourcebias.retrieval.docnos.resolve_docnos): a docnos.tsv beside the run names its
    documents, for `evaluate --run` and for a grid's [[runs]] alike."""
    from conftest import QRELS

    from sourcebias.experiments.config import load_grid_config
    from sourcebias.experiments.grid import run_grid

    folder = tmp_path / "ext"
    folder.mkdir()
    name = {(d, s): f"N{i}" for i, (d, s) in enumerate((d, s) for s in ("human", "llm") for d in ("d1", "d2", "d3"))}
    (folder / "docnos.tsv").write_text("docno\tdoc_id\tsource\n" + "".join(f"{n}\t{d}\t{s}\n" for (d, s), n in name.items()))
    ranking = {"q1": [(("d1", "llm"), 3.0), (("d1", "human"), 2.0)], "q2": [(("d2", "human"), 3.0), (("d2", "llm"), 1.0), (("d3", "human"), 0.5)]}
    run = folder / "other.trec"
    run.write_text("".join(f"{q} Q0 {name[key]} {r} {s} t\n" for q, rows in ranking.items() for r, (key, s) in enumerate(rows, start=1)))
    labels: dict = {}
    for q, d, g in QRELS:
        labels.setdefault(q, {})[d] = g
    expected = {
        (t, k): float(np.mean([ndcg([key for key, _ in ranking[q]], labels[q], t, 2, k) for q in ("q1", "q2")]))
        for t in ("human", "llm", "all")
        for k in (1, 3)
    }
    assert expected[("human", 1)] == 0.5 and expected[("all", 1)] == 1.0  # q1: the LLM copy first; q2: the human one

    out = tmp_path / "out"
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(cocktail_dir), "--run", str(run), "--k", "1", "3", "--metric", "NDCG", "-o", str(out)])
    assert info.value.code in (0, None), capsys.readouterr().err
    via_evaluate = read_metrics(out)

    cfg = tmp_path / "g.toml"
    cfg.write_text(
        f'[grid]\nname = "g"\nmeasures = ["NDCG"]\ncutoffs = [1, 3]\n[[datasets]]\npath = "{cocktail_dir}"\n[[runs]]\nname = "other"\ndataset = "tiny"\npath = "{run}"\n'
    )
    res = run_grid(load_grid_config(cfg), tmp_path / "grid")
    assert res.records["tiny/other"]["status"] == "ok", res.records["tiny/other"].get("error")
    import sourcebias as sb

    via_grid = sb.load_result(tmp_path / "grid" / "cells" / "tiny" / "other")
    for (t, k), value in expected.items():
        assert via_evaluate[("other", "mixed", t, f"NDCG@{k}")] == pytest.approx(value, abs=1e-12)
        assert via_grid.mean("other", "mixed", t, f"NDCG@{k}") == pytest.approx(value, abs=1e-12)


def test_the_docno_rule_order_and_its_refusals(cocktail_dir, tmp_path):
    from sourcebias.data import load_dataset
    from sourcebias.retrieval.docnos import resolve_docnos

    corpus = load_dataset(cocktail_dir).corpus
    run = tmp_path / "r.trec"
    assert resolve_docnos(run, corpus).describe() == "sourcebias names <source>/<doc_id>"
    (tmp_path / "docnos.tsv").write_text("docno\tdoc_id\tsource\n" + "".join(f"{d}.{s}\t{d}\t{s}\n" for s in ("human", "llm") for d in ("d1", "d2", "d3")))
    assert resolve_docnos(run, corpus).describe() == "table docnos.tsv"
    assert resolve_docnos(run, corpus, docno_pattern="{doc_id}@{source}").describe() == "pattern '{doc_id}@{source}'"
    with pytest.raises(ConfigError, match="not both"):
        resolve_docnos(run, corpus, docnos=tmp_path / "docnos.tsv", docno_pattern="{doc_id}@{source}")
    with pytest.raises(ConfigError, match="give a docno pattern with them"):
        resolve_docnos(run, corpus, source_labels={"human": "H"})


def test_a_docno_table_giving_one_name_to_two_documents_names_its_lines(cocktail_dir, tmp_path):
    from sourcebias.data import load_dataset
    from sourcebias.retrieval import DocnoMap

    corpus = load_dataset(cocktail_dir).corpus
    table = tmp_path / "docnos.tsv"
    table.write_text("docno\tdoc_id\tsource\nA\td1\thuman\nB\td2\thuman\nA\td1\tllm\n")
    with pytest.raises(DataError, match=r"docnos.tsv:4: the name 'A' is given to two documents \(first on line 2\)"):
        DocnoMap.from_table(table, corpus)
    table.write_text("docno\tdoc_id\tsource\nA\td1\thuman\nB b\td2\thuman\n")
    with pytest.raises(DataError, match=r"docnos.tsv:3: the name 'B b' contains whitespace"):
        DocnoMap.from_table(table, corpus)


def test_ids_with_whitespace_are_refused_when_a_run_is_read_or_written(cocktail_dir, tmp_path):
    from sourcebias.data import load_dataset
    from sourcebias.retrieval import Run

    corpus = load_dataset(cocktail_dir).corpus
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 human/d1 1 2.0 x\nq 2 Q0 human/d2 1 1.0 x\n")
    with pytest.raises(DataError, match=r"run.trec:2: expected 6 columns .* got 7 \(a query or document id cannot contain whitespace\)"):
        Run.from_trec(path, corpus)
    run = Run(corpus, "r", {"q 1": np.array([0])}, {"q 1": np.array([1.0])})
    with pytest.raises(ConfigError, match="query id 'q 1' contains whitespace"):
        run.write_trec(tmp_path / "out.trec")
    assert not (tmp_path / "out.trec").exists()
