"""`--field text|title+text`: perplexity, artifacts, quality and CDC measure the field asked for
(the text by default, as the papers' code), checked against a plain forward pass of SmolLM2 and
hand-computed counts; the field is in the store's key (a cached value of one field is never
served for the other) and in every output."""

from __future__ import annotations

import json

import lm_helpers
import numpy as np
import pytest
from conftest import TWIN_HUMAN, TWIN_LLM, TWIN_QUERIES, write_jsonl, write_qrels
from lm_helpers import store_sharing_models

import sourcebias as sb
from sourcebias.cli.main import main

pytest.importorskip("torch")
pytest.importorskip("gguf")

# twins keep the human title, as nfcorpus's do
TITLES = ["Cats at home", "Dogs at night", "Rivers and rain", "Bread"]
HUMAN, LLM, QUERIES = TWIN_HUMAN, TWIN_LLM, TWIN_QUERIES


@pytest.fixture(scope="module")
def titled(tmp_path_factory):
    root = tmp_path_factory.mktemp("titled")
    write_jsonl(root / "corpus" / "human.jsonl", [{"_id": f"d{i}", "title": t, "text": x} for i, (t, x) in enumerate(zip(TITLES, HUMAN))])
    write_jsonl(root / "corpus" / "llm.jsonl", [{"_id": f"d{i}", "title": t, "text": x} for i, (t, x) in enumerate(zip(TITLES, LLM))])
    write_jsonl(root / "queries.jsonl", [{"_id": f"q{i}", "text": t} for i, t in enumerate(QUERIES)])
    write_qrels(root / "qrels" / "train.tsv", [(f"q{i}", f"d{i}", 1) for i in range(4)])
    write_qrels(root / "qrels" / "dev.tsv", [(f"q{i}", f"d{i}", 1) for i in range(4)])
    return root


@pytest.fixture(scope="module")
def lm_cache(tmp_path_factory):
    """One store for the module (``fresh``): the CLI and CDC tests read what the first test
    computed; SmolLM2 converted once a session (:func:`lm_helpers.store_sharing_models`)."""
    root = tmp_path_factory.mktemp("lm-cache")
    store_sharing_models(root / "fresh")
    return root


@pytest.fixture(scope="module")
def smollm2():
    from sourcebias.models.llm import load_causal_lm

    return load_causal_lm("smollm2", device="cpu")


def plain_nll(lm, text: str) -> float:
    """Mean NLL per token of ``text`` after the start (or end-of-text) token: one forward pass."""
    return lm_helpers.plain_nll(*lm, text)


def test_perplexity_scores_the_field_asked_for_and_the_store_keeps_them_apart(titled, smollm2, lm_cache):
    from sourcebias.analysis import perplexity as _perplexity

    ds = sb.load_dataset(titled, split=None)
    cache = lm_cache / "fresh"  # its own store: the cache counts below start from nothing
    text = _perplexity.perplexity(ds, "lm:smollm2", options={"cache_dir": cache})  # default: the text
    joined = _perplexity.perplexity(ds, "lm:smollm2", field="title+text", options={"cache_dir": cache})
    again = _perplexity.perplexity(ds, "lm:smollm2", options={"cache_dir": cache})
    for res, field, texts in ((text, "text", HUMAN), (joined, "title+text", [f"{t} {x}" for t, x in zip(TITLES, HUMAN)]), (again, "text", HUMAN)):
        t = res.tables["perplexity"]
        got = t[t["source"] == "human"].set_index("doc_id")["value"]
        np.testing.assert_allclose([got[f"d{i}"] for i in range(4)], [plain_nll(smollm2, x) for x in texts], atol=2e-3)
        assert res.parameters["field"] == field and res.summary["field"] == field and res.models["lm"]["field"] == field
    assert joined.summary["cache"]["encoded"] > 0  # not served the text's values
    assert again.summary["cache"]["encoded"] == 0  # the text's values, from the store


def test_cli_records_the_field_in_the_summary_and_the_manifest(titled, lm_cache, tmp_path, capsys):
    out = tmp_path / "ppl"
    with pytest.raises(SystemExit) as info:
        main(["analyze", "perplexity", str(titled), "--field", "title+text", "-o", str(out), "--cache-dir", str(lm_cache / "fresh")])
    printed = capsys.readouterr()
    assert info.value.code in (0, None), printed.err
    assert "title+text" in printed.out
    assert json.loads((out / "manifest.json").read_text())["parameters"]["field"] == "title+text"
    assert sb.load_artifact(out).parameters["field"] == "title+text"
    with pytest.raises(SystemExit) as info:
        main(["analyze", "perplexity", str(titled), "--field", "body", "-o", str(tmp_path / "bad")])
    assert info.value.code not in (0, None) and "field must be one of text, title+text" in capsys.readouterr().err


def test_artifacts_and_quality_measure_the_field(titled, tmp_path):
    from sourcebias.analysis import artifacts as _artifacts
    from sourcebias.analysis import quality as _quality
    from sourcebias.retrieval.lexical import EnglishAnalyzer

    ds = sb.load_dataset(titled, split=None)
    for field, human in (("text", HUMAN), ("title+text", [f"{t} {x}" for t, x in zip(TITLES, HUMAN)])):
        res = _artifacts.artifacts(ds, None, field=field)
        t = res.tables["artifacts"]
        assert t[t["source"] == "human"]["words"].tolist() == [len(x.split()) for x in human]
        assert res.parameters["field"] == field and res.summary["field"] == field
    analyzer = EnglishAnalyzer()
    res = _quality.quality(ds, "minilm", field="text", options={"cache_dir": tmp_path / "cache"})
    hand = [len(set(analyzer(a)) & set(analyzer(b))) / len(set(analyzer(a)) | set(analyzer(b))) for a, b in zip(LLM, HUMAN)]
    assert res.summary["sources"]["llm"]["jaccard_mean"] == pytest.approx(np.mean(hand))
    assert res.summary["field"] == "text"


def test_cdc_calibration_and_stage_use_the_field_of_the_fit(titled, smollm2, lm_cache, tmp_path):
    """The library's calibration (what `cdc fit` runs) scores the text by default; the stage
    applies the fit's field, and a fit written before the field was recorded is applied to
    title + text, the field it was fitted on."""
    from sourcebias.analysis.perplexity import build_lm_scorer
    from sourcebias.mitigation.cdc import calibrate
    from sourcebias.mitigation.stages import CDCCorrection, _cdc
    from sourcebias.retrieval import build_retriever

    ds = sb.load_dataset(titled, split="train")
    cache = lm_cache / "fresh"
    cal = calibrate(ds, build_retriever("minilm", cache_dir=cache), build_lm_scorer("lm:smollm2", cache_dir=cache), sample=4, seed=1, cache_dir=cache)
    t = cal.table.set_index(["doc_id", "source"])["perplexity"]
    np.testing.assert_allclose([t[(f"d{i}", "human")] for i in range(4)], [plain_nll(smollm2, x) for x in HUMAN], atol=2e-3)
    np.testing.assert_allclose([t[(f"d{i}", "llm")] for i in range(4)], [plain_nll(smollm2, x) for x in LLM], atol=2e-3)
    assert cal.fit.field == "text" and cal.fit.to_dict()["field"] == "text"
    corpus = ds.corpus
    pos = np.array([corpus.position("d0", "human")])
    stage = CDCCorrection(0.1, "lm:smollm2", field="text", cache_dir=cache)
    assert stage.perplexities(corpus, pos)[0] == pytest.approx(plain_nll(smollm2, HUMAN[0]), abs=2e-3)
    legacy = tmp_path / "old.json"
    legacy.write_text(json.dumps({"beta": 0.1, "lm": "lm:smollm2"}))
    old = _cdc({"fit": str(legacy), "depth": 10}, f"cdc:{legacy}")
    assert old.field == "title+text"
    assert old.perplexities(corpus, pos)[0] == pytest.approx(plain_nll(smollm2, f"{TITLES[0]} {HUMAN[0]}"), abs=2e-3)
