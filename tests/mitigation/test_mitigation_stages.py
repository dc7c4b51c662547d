"""The CDC correction as a stage: ``minilm>>cdc:FIT`` re-ranks by score − β·log-perplexity,
checked against the corrected scores computed here from the run and a plain LM forward pass."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import hand_rank
from lm_helpers import plain_nll, store_sharing_models

import sourcebias as sb

pytest.importorskip("torch")
pytest.importorskip("gguf")


def plain_log_perplexity(model, tok, text):
    return plain_nll(model, tok, text, max_tokens=512)


def test_cdc_stage_corrects_and_reranks_the_candidates(cocktail_dir, tmp_path):
    from sourcebias.models.llm import load_causal_lm
    from sourcebias.retrieval import build_retriever

    fit = tmp_path / "cdc.json"
    fit.write_text(json.dumps({"beta": 0.05, "lm": "lm:smollm2"}))
    ds = sb.load_dataset(cocktail_dir)
    queries = {q: ds.queries[q] for q in ds.evaluation_queries()}
    first = build_retriever("bm25").retrieve(ds.corpus, queries, 10)
    pipe = build_retriever(f"bm25>>cdc:{fit},depth=10", cache_dir=store_sharing_models(tmp_path / "cache"))
    assert pipe.name == f"bm25>>cdc:{fit},depth=10"
    run = pipe.retrieve(ds.corpus, queries, 10)
    model, tok = load_causal_lm("smollm2", device="cpu")
    texts = ds.corpus.retrieval_texts()
    for q in queries:
        expected = {}
        for p, s in zip(first.positions[q].tolist(), first.scores[q].tolist()):
            expected[(ds.corpus.doc_ids[p], ds.corpus.source_of(p))] = s - 0.05 * plain_log_perplexity(model, tok, texts[p])
        assert run.keys(q) == hand_rank(q, expected)
        np.testing.assert_allclose(run.scores[q], [expected[k] for k in run.keys(q)], atol=1e-4)
    assert run.info["stages"][-1]["beta"] == 0.05


def test_cdc_fit_errors(tmp_path):
    from sourcebias.core.errors import DataError
    from sourcebias.retrieval import build_retriever

    with pytest.raises(DataError, match="CDC fit not found"):
        build_retriever(f"bm25>>cdc:{tmp_path / 'nope.json'}")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"lm": "lm:smollm2"}))
    with pytest.raises(DataError, match="not a CDC fit: no 'beta'"):
        build_retriever(f"bm25>>cdc:{bad}")


def test_projection_option_removes_the_direction_from_documents_only(cocktail_dir, tmp_path):
    """`minilm,project=FILE`: scores become q·d − (q·u)(d·u) (derived by hand), from stored
    vectors (nothing is encoded again); another encoder's projection is refused."""
    from sourcebias.core.errors import ConfigError
    from sourcebias.models.projection import DirectionRemoval
    from sourcebias.retrieval import build_retriever

    ds = sb.load_dataset(cocktail_dir)
    queries = {q: ds.queries[q] for q in ds.evaluation_queries()}
    plain = build_retriever("minilm", cache_dir=tmp_path)
    base = plain.retrieve(ds.corpus, queries, 6)
    d = plain.embed_corpus(ds.corpus).astype(np.float64)
    rng = np.random.default_rng(0)
    u = rng.normal(size=d.shape[1])
    u /= np.linalg.norm(u)
    DirectionRemoval(u, fingerprint=plain.encoder.fingerprint("document")).save(tmp_path / "projection.json")
    proj = build_retriever(f"minilm:project={tmp_path / 'projection.json'}", cache_dir=tmp_path)
    run = proj.retrieve(ds.corpus, queries, 6)
    assert proj.stats["encoded"] == 0  # document and query vectors from the store
    for q in queries:
        qv = plain.embed([queries[q]], "query")[0].astype(np.float64)
        expected = {(ds.corpus.doc_ids[i], ds.corpus.source_of(i)): float(qv @ d[i] - (qv @ u) * (d[i] @ u)) for i in range(len(ds.corpus))}
        np.testing.assert_allclose(run.scores[q], sorted(expected.values(), reverse=True), atol=1e-5)
        assert set(run.keys(q)) == set(base.keys(q))
    DirectionRemoval(u, fingerprint="another-encoder").save(tmp_path / "other.json")
    with pytest.raises(ConfigError, match="fitted on vectors of encoder another-encoder"):
        build_retriever(f"minilm:project={tmp_path / 'other.json'}", cache_dir=tmp_path).retrieve(ds.corpus, queries, 3)
    np.testing.assert_allclose(DirectionRemoval(u)(d.astype(np.float32)) @ u, 0, atol=1e-6)  # orthogonal to u


def test_cdc_fit_cli_then_the_stage(tmp_path, capsys):
    """`sourcebias cdc fit`: the sample's scores are MiniLM's cosines, its perplexities SmolLM2's,
    β̂₂ equals the Wald estimator computed here from them; the before/after evaluation and the
    fit load back; `minilm>>cdc:OUT/cdc.json` evaluates like any pipeline."""
    from conftest import write_jsonl, write_qrels
    from sentence_transformers import SentenceTransformer

    from sourcebias.cli.main import main
    from sourcebias.mitigation.cdc import CDCFit
    from sourcebias.models.hub import resolve_model
    from sourcebias.models.llm import load_causal_lm

    human = [
        "The cat sat on the mat all day.",
        "Dogs bark at night near the old house.",
        "The river flooded the valley after the rain.",
        "Fresh bread is baked every morning here.",
    ]
    llm = [
        "A cat was sitting on the mat all day long.",
        "At night, dogs bark near the old house.",
        "After the rain, the river flooded the valley.",
        "Every morning, fresh bread is baked here.",
    ]
    root = tmp_path / "d"
    write_jsonl(root / "corpus" / "human.jsonl", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(human)])
    write_jsonl(root / "corpus" / "llm.jsonl", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(llm)])
    write_jsonl(root / "queries.jsonl", [{"_id": f"q{i}", "text": t} for i, t in enumerate(["cat on a mat", "barking dogs", "river flood", "bread bakery"])])
    write_qrels(root / "qrels" / "dev.tsv", [(f"q{i}", f"d{i}", 1) for i in range(4)])
    out = tmp_path / "cdc"
    store_sharing_models(tmp_path / "cache")
    with pytest.raises(SystemExit) as info:
        main(
            [
                "cdc",
                "fit",
                str(root),
                "-r",
                "minilm",
                "--lm",
                "lm:smollm2",
                "--sample",
                "4",
                "--split",
                "dev",
                "--in-sample",
                "-o",
                str(out),
                "--cache-dir",
                str(tmp_path / "cache"),
            ]
        )
    printed = capsys.readouterr()
    assert info.value.code in (0, None), printed.err
    assert "in-sample" in printed.out  # the table says the fit has seen its evaluation data
    fit = CDCFit.load(out)
    assert fit.field == "text" and fit.details["evaluation"]["label"] == "in-sample"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["parameters"]["evaluation"]["in_sample"] is True and manifest["parameters"]["field"] == "text"
    enc = SentenceTransformer(resolve_model("sentence-transformers/all-MiniLM-L6-v2"), device="cpu")
    model, tok = load_causal_lm("smollm2", device="cpu")
    qv = enc.encode(["cat on a mat", "barking dogs", "river flood", "bread bakery"], normalize_embeddings=True)
    s_h = np.sum(qv * enc.encode(human, normalize_embeddings=True), axis=1)
    s_l = np.sum(qv * enc.encode(llm, normalize_embeddings=True), axis=1)
    p_h = np.array([plain_log_perplexity(model, tok, t) for t in human])
    p_l = np.array([plain_log_perplexity(model, tok, t) for t in llm])
    wald = (s_l.mean() - s_h.mean()) / (p_l.mean() - p_h.mean())
    assert fit.beta == pytest.approx(wald, rel=1e-3) and fit.n_pairs == 4 and fit.lm == "lm:smollm2"
    ev = sb.load_result(out / "evaluation")
    assert set(ev.retrievers) == {"minilm", "minilm>>cdc"}
    # the fit, used as a stage, ranks as the evaluation's "after" system did
    from sourcebias.retrieval import build_retriever

    ds = sb.load_dataset(root, split="dev")
    run = build_retriever(f"minilm>>cdc:{out / 'cdc.json'}", cache_dir=tmp_path / "cache").retrieve(
        ds.corpus, {q: ds.queries[q] for q in ds.evaluation_queries()}, 8
    )
    for q in run.query_ids:
        assert run.keys(q) == ev.runs[("minilm>>cdc", "mixed")].keys(q)


def test_fit_commands_refuse_a_missing_evaluation_dataset_before_any_work(cocktail_dir, tmp_path, capsys):
    """A typo in --eval-dataset / --target stops both fit commands before the (long) fit, naming
    the folder, and leaves no output folder behind."""
    from sourcebias.cli.main import main

    missing = tmp_path / "no-such-dataset"
    for argv, out in (
        (["cdc", "fit", str(cocktail_dir), "-r", "bm25", "--lm", "lm:smollm2", "--split", "test", "--eval-dataset", str(missing)], tmp_path / "cdc"),
        (["project", "fit", str(cocktail_dir), "--target", str(missing)], tmp_path / "proj"),
    ):
        with pytest.raises(SystemExit) as info:
            main([*argv, "-o", str(out), "--cache-dir", str(tmp_path / "cache")])
        err = capsys.readouterr().err
        assert info.value.code not in (0, None)
        assert "no-such-dataset" in err, err
        assert not out.exists() or not any(out.iterdir())
