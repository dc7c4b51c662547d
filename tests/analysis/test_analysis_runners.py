"""`sourcebias analyze`: each analysis on a small dataset, checked against values computed here
independently (the encoder and the LM run directly, numpy and SciPy), the output folder, and the
round trip of the result."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import write_jsonl, write_qrels
from scipy import stats

import sourcebias as sb
from sourcebias.cli.main import main

pytest.importorskip("torch")

HUMAN = [
    "The cat sat on the mat in the warm sun all afternoon.",
    "Dogs bark loudly at night when strangers walk past the house.",
    "Cats and dogs can live together peacefully if introduced early.",
    "The river flooded the valley after three days of heavy rain.",
    "A new bridge was opened over the river by the mayor on Monday.",
    "Fresh bread is baked every morning at the bakery on the corner.",
    "The museum shows paintings from the seventeenth century.",
    "Solar panels on the roof produce electricity for the whole school.",
]
LLM = [
    "A cat was sitting on the mat under the warm afternoon sun.",
    "At night, dogs bark loudly whenever strangers pass by the house.",
    "If they are introduced early, cats and dogs can peacefully live together.",
    "After three days of heavy rainfall, the river flooded the valley.",
    "On Monday the mayor opened a new bridge across the river.",
    "Every morning, the bakery on the corner bakes fresh bread.",
    "Paintings from the 17th century are displayed at the museum.",
    "The whole school gets its electricity from solar panels on the roof.",
]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("small")
    write_jsonl(root / "corpus" / "human.jsonl", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(HUMAN)])
    write_jsonl(root / "corpus" / "llm.jsonl", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(LLM)])
    write_jsonl(
        root / "queries.jsonl",
        [{"_id": "q1", "text": "cat on the mat"}, {"_id": "q2", "text": "river flood"}, {"_id": "q3", "text": "solar electricity school"}],
    )
    write_qrels(root / "qrels" / "test.tsv", [("q1", "d0", 1), ("q2", "d3", 2), ("q2", "d4", 1), ("q3", "d7", 1)])
    return root


@pytest.fixture(scope="module")
def minilm():
    from sentence_transformers import SentenceTransformer

    from sourcebias.models.hub import resolve_model

    return SentenceTransformer(resolve_model("sentence-transformers/all-MiniLM-L6-v2"), device="cpu")


def test_quality_against_direct_computation(small, minilm, tmp_path):
    from sourcebias.analysis import quality as _quality
    from sourcebias.retrieval.lexical import EnglishAnalyzer

    ds = sb.load_dataset(small)
    res = _quality.quality(ds, "minilm", seed=3, options={"cache_dir": tmp_path})
    t = res.tables["quality"].set_index("doc_id")
    a = EnglishAnalyzer()
    h, g = set(a(HUMAN[3])), set(a(LLM[3]))
    assert t.loc["d3", "jaccard"] == pytest.approx(len(h & g) / len(h | g))
    assert t.loc["d3", "overlap"] == pytest.approx(len(h & g) / len(h))
    eh = minilm.encode(HUMAN, normalize_embeddings=True)
    el = minilm.encode(LLM, normalize_embeddings=True)
    np.testing.assert_allclose(t.loc[[f"d{i}" for i in range(8)], "cosine"], np.sum(eh * el, axis=1), atol=1e-5)
    s = res.summary["sources"]["llm"]
    assert s["pairs"] == 8 and s["cosine_matched_mean"] > s["cosine_random_mean"] + 0.3
    assert t.loc["d0", "words_human"] == len(HUMAN[0].split())


def test_spectrum_and_direction_against_numpy(small, minilm, tmp_path):
    from sourcebias.analysis import direction as _direction
    from sourcebias.analysis import spectrum as _spectrum

    ds = sb.load_dataset(small, split="test")
    eh = minilm.encode(HUMAN, normalize_embeddings=True).astype(np.float64)
    el = minilm.encode(LLM, normalize_embeddings=True).astype(np.float64)
    sp = _spectrum.spectrum(ds, "minilm", options={"cache_dir": tmp_path}).tables["spectrum"]
    sv_h = np.linalg.svd(eh, compute_uv=False)
    np.testing.assert_allclose(sp[sp["source"] == "human"]["value"].to_numpy()[:8], sv_h, rtol=1e-4)
    dr = _direction.direction(ds, "minilm", permutations=200, seed=1, options={"cache_dir": tmp_path})
    d = el - eh
    u = d.mean(axis=0) / np.linalg.norm(d.mean(axis=0))
    np.testing.assert_allclose(dr.tables["direction_pairs"]["projection"].to_numpy(), d @ u, atol=1e-5)
    gap = dr.tables["score_gaps"]
    q = minilm.encode(["cat on the mat"], normalize_embeddings=True)[0]
    row = gap[(gap["query_id"] == "q1") & (gap["doc_id"] == "d0")].iloc[0]
    assert row["gap"] == pytest.approx(float(q @ (el[0] - eh[0])), abs=1e-5)
    assert row["along"] + row["residual"] == pytest.approx(row["gap"], abs=1e-9)
    assert dr.summary["sources"]["llm"]["score_gap"]["triples"] == 4


@pytest.fixture(scope="module")
def lm_cache(tmp_path_factory):
    from lm_helpers import store_sharing_models

    return store_sharing_models(tmp_path_factory.mktemp("lm-cache"))


@pytest.fixture(scope="module")
def smollm2():
    pytest.importorskip("gguf")
    from sourcebias.models.llm import load_causal_lm

    return load_causal_lm("smollm2", device="cpu")


def test_perplexity_against_a_plain_forward_pass(small, smollm2, lm_cache):
    import torch

    from sourcebias.analysis import perplexity as _perplexity

    ds = sb.load_dataset(small)
    res = _perplexity.perplexity(ds, "lm:smollm2", options={"cache_dir": lm_cache})
    t = res.tables["perplexity"]
    model, tok = smollm2
    ctx = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    ids = [ctx] + tok(HUMAN[1], add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].double(), dim=-1)
    nll = -np.mean([logp[i - 1, ids[i]].item() for i in range(1, len(ids))])
    row = t[(t["doc_id"] == "d1") & (t["source"] == "human")].iloc[0]
    assert row["value"] == pytest.approx(nll, abs=2e-3) and row["tokens"] == len(ids) - 1
    h = t[t["source"] == "human"].set_index("doc_id")["value"]
    g = t[t["source"] == "llm"].set_index("doc_id")["value"].loc[h.index]
    pair = res.summary["pairs"]["llm"]
    assert pair["mean_difference"] == pytest.approx(float((g - h).mean()))
    assert pair["paired_p"] == pytest.approx(stats.ttest_rel(g, h).pvalue)
    assert pair["wilcoxon_p"] == pytest.approx(stats.wilcoxon(g, h).pvalue)
    # a rerun reads every value from the store
    again = _perplexity.perplexity(ds, "lm:smollm2", options={"cache_dir": lm_cache})
    assert again.summary["cache"]["encoded"] == 0 and again.tables["perplexity"].equals(t)


def test_artifacts_with_a_run(small, smollm2, lm_cache, tmp_path):
    from sourcebias.analysis import artifacts as _artifacts
    from sourcebias.retrieval import BM25

    ds = sb.load_dataset(small, split="test")
    out = sb.write_evaluation(sb.evaluate(ds, [BM25()], measures=sb.measure_grid(["NDCG"], [1])), tmp_path / "eval")
    res = _artifacts.artifacts(ds, "lm:smollm2", run_result=out, top=20, options={"cache_dir": lm_cache})
    t = res.tables["artifacts"]
    # median term IDF of one document, by hand: Lucene's idf over the 16 documents
    from sourcebias.retrieval.lexical import EnglishAnalyzer

    a = EnglishAnalyzer()
    docs = [a(x) for x in HUMAN + LLM]
    df = {}
    for terms in docs:
        for term in set(terms):
            df[term] = df.get(term, 0) + 1
    idf = [np.log(1 + (16 - df[term] + 0.5) / (df[term] + 0.5)) for term in docs[5]]
    assert t[(t["doc_id"] == "d5") & (t["source"] == "human")]["median_idf"].iloc[0] == pytest.approx(np.median(idf))
    # Spearman of within-query z-scores with perplexity, pooled, by hand from the saved run
    res_eval = sb.load_result(out, dataset=ds)
    run = res_eval.runs[("bm25", "mixed")]
    z, f = [], []
    val = {(r.doc_id, r.source): r.perplexity for r in t.itertuples()}
    for q in run.query_ids:
        sc = np.asarray(run.scores[q], dtype=float)
        if len(sc) < 3 or sc.std() == 0:
            continue
        z += list((sc - sc.mean()) / sc.std())
        f += [val[k] for k in run.keys(q)]
    corr = res.tables["correlations"].set_index("feature")
    assert corr.loc["perplexity", "spearman_pooled"] == pytest.approx(stats.spearmanr(z, f).statistic)
    comp = res.tables["comparisons"].set_index("feature")
    words_h = [len(x.split()) for x in HUMAN]
    words_l = [len(x.split()) for x in LLM]
    assert comp.loc["words", "paired_mean_difference"] == pytest.approx(np.mean(np.subtract(words_l, words_h)))


def test_cli_writes_a_loadable_folder_with_figures(small, tmp_path, capsys):
    out = tmp_path / "q"
    with pytest.raises(SystemExit) as info:
        main(["analyze", "quality", str(small), "-o", str(out), "--cache-dir", str(tmp_path / "cache")])
    assert info.value.code in (0, None), capsys.readouterr().err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "analyze:quality"
    figs = [p for p in manifest["outputs"]["files"] if p.endswith(".png")]
    assert {"figures/term_similarity.png", "figures/pair_cosines.png", "figures/lengths.png", "figures/tsne.png"} <= set(figs)
    loaded = sb.load_artifact(out)
    assert loaded.analysis == "quality" and len(loaded.tables["quality"]) == 8
    from sourcebias.analysis.result import AnalysisResult

    again = AnalysisResult.load(out)
    assert (again == loaded and (out / again.figures["tsne"]).is_file()) or again.figures["tsne"].is_file()
    # the same folder, another run (another seed): refused without --overwrite
    with pytest.raises(SystemExit) as info:
        main(["analyze", "quality", str(small), "-o", str(out), "--seed", "1", "--cache-dir", str(tmp_path / "cache")])
    assert info.value.code == 2 and "holds the results of another run" in capsys.readouterr().err


def test_masked_lm_perplexity_through_the_store(small, tmp_path):
    """`analyze perplexity --model mlm:DIR` on a tiny random BERT saved to a folder (no masked LM
    ships offline): values equal the pseudo-perplexity core's, and a rerun reads the store."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    from sourcebias.analysis import perplexity as _perplexity
    from sourcebias.analysis.pseudo_perplexity import pseudo_log_perplexity_naive

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(HUMAN + LLM, trainers.WordPieceTrainer(vocab_size=200, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    tokenizer = BertTokenizerFast(tokenizer_object=tok)
    import torch

    torch.manual_seed(0)
    model = BertForMaskedLM(
        BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    )
    folder = tmp_path / "tiny-bert"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    ds = sb.load_dataset(small)
    res = _perplexity.perplexity(ds, f"mlm:{folder},max_tokens=32", options={"cache_dir": tmp_path / "cache", "device": "cpu"})
    t = res.tables["perplexity"]
    naive = pseudo_log_perplexity_naive(HUMAN[:2], model.eval(), tokenizer, max_length=32)
    got = t[t["source"] == "human"].set_index("doc_id")
    assert got.loc["d0", "value"] == pytest.approx(naive[0].value, abs=1e-5) and got.loc["d0", "tokens"] == naive[0].tokens
    assert got.loc["d1", "value"] == pytest.approx(naive[1].value, abs=1e-5)
    again = _perplexity.perplexity(ds, f"mlm:{folder},max_tokens=32", options={"cache_dir": tmp_path / "cache", "device": "cpu"})
    assert again.summary["cache"]["encoded"] == 0
