"""Presets for BGE, E5 and GTE: prefixes and pooling as their model cards give them.

The plumbing is checked on a tiny random BERT (2 layers) saved as a sentence-transformers
folder whose own pooling is *max*: a preset's vectors must equal what the card's usage code
computes by hand (prefix + text through the tokenizer and model, CLS or attention-masked mean,
L2 normalisation), so both the text actually encoded and the pooling are the card's.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")

import numpy as np  # noqa: E402

from sourcebias.core.errors import ModelUnavailableError  # noqa: E402
from sourcebias.data.corpus import Corpus  # noqa: E402
from sourcebias.models import hub  # noqa: E402
from sourcebias.models.encoders import BGE_QUERY_INSTRUCTION, PRESETS  # noqa: E402
from sourcebias.retrieval.dense import preset_listing  # noqa: E402
from sourcebias.retrieval.registry import build_retriever  # noqa: E402

WORDS = "represent this sentence for searching relevant passages query passage : how much protein should a female eat the cdc says grams per day"
QUERIES = ["how much protein should a female eat"]
DOCS = ["the cdc says 46 grams per day", "protein per day"]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A random 2-layer BERT with a small vocabulary, saved as a sentence-transformers folder with
    max pooling (so a preset that used the checkpoint's pooling would give other vectors)."""
    from sentence_transformers import SentenceTransformer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    try:
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:  # older sentence-transformers
        from sentence_transformers.models import Pooling, Transformer

    root = tmp_path_factory.mktemp("tiny-bert")
    hf = root / "hf"
    hf.mkdir()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *dict.fromkeys(WORDS.split()), *"0123456789"]
    (hf / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tok = BertTokenizerFast(vocab_file=str(hf / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=128)
    BertModel(cfg).eval().save_pretrained(hf)
    tok.save_pretrained(hf)
    word = Transformer(str(hf))
    st = SentenceTransformer(modules=[word, Pooling(word.get_embedding_dimension(), pooling_mode="max")], device="cpu")
    folder = root / "st"
    st.save(str(folder))
    return folder


def card_vectors(folder, texts, pooling):
    """What the model cards' usage code computes: tokenize, run the model, pool, normalise."""
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder)).eval()
    batch = tok(list(texts), padding=True, truncation=True, max_length=512, return_tensors="pt")
    with torch.no_grad():
        last = model(**batch).last_hidden_state
    if pooling == "cls":
        pooled = last[:, 0]
    else:  # the E5 / GTE cards' average_pool
        mask = batch["attention_mask"]
        pooled = last.masked_fill(~mask[..., None].bool(), 0.0).sum(dim=1) / mask.sum(dim=1)[..., None]
    return torch.nn.functional.normalize(pooled, p=2, dim=1).numpy()


@pytest.mark.parametrize(
    "preset,pooling,qp,dp",
    [
        ("bge-base", "cls", BGE_QUERY_INSTRUCTION, ""),
        ("bge-small", "cls", BGE_QUERY_INSTRUCTION, ""),
        ("bge-large", "cls", BGE_QUERY_INSTRUCTION, ""),
        ("e5-base", "mean", "query: ", "passage: "),
        ("multilingual-e5-base", "mean", "query: ", "passage: "),
        ("gte-base", "mean", "", ""),
    ],
)
def test_preset_encodes_the_cards_text_with_the_cards_pooling(tiny_model, preset, pooling, qp, dp):
    r = build_retriever(f"{preset}:path={tiny_model},cache=false", device="cpu")
    enc = r.encoder
    assert (enc.pooling, enc.similarity, enc.query_prefix, enc.document_prefix) == (pooling, "cos", qp, dp)
    q, d = enc.encode_queries(QUERIES), enc.encode_documents(DOCS)
    np.testing.assert_allclose(q, card_vectors(tiny_model, [qp + t for t in QUERIES], pooling), atol=1e-5)
    np.testing.assert_allclose(d, card_vectors(tiny_model, [dp + t for t in DOCS], pooling), atol=1e-5)
    if qp:  # the prefix really reaches the model: without it the vectors differ
        assert not np.allclose(q, card_vectors(tiny_model, QUERIES, pooling), atol=1e-3)
    other = "mean" if pooling == "cls" else "cls"
    assert not np.allclose(d, card_vectors(tiny_model, [dp + t for t in DOCS], other), atol=1e-3)
    assert enc.config()["query_prefix"] == qp and enc.config()["pooling"] == pooling


def test_preset_prefix_and_pooling_can_be_overridden(tiny_model):
    enc = build_retriever(f"e5-base:path={tiny_model},query_prefix=,doc_prefix=,pooling=cls,cache=false").encoder
    assert (enc.query_prefix, enc.document_prefix, enc.pooling) == ("", "", "cls")


def test_preset_ranks_a_corpus_and_fingerprint_depends_on_prefix(tiny_model):
    corpus = Corpus(["d1", "d2"], ["human", "human"], ["", ""], DOCS)
    run = build_retriever(f"bge-base:path={tiny_model},cache=false", device="cpu").retrieve(corpus, {"q": QUERIES[0]}, depth=2)
    assert len(run.positions["q"]) == 2
    bge = build_retriever(f"bge-base:path={tiny_model},cache=false").encoder
    bare = build_retriever(f"bge-base:path={tiny_model},query_prefix=,cache=false").encoder
    assert bge.fingerprint("query") != bare.fingerprint("query")
    assert bge.fingerprint("document") == bare.fingerprint("document")


@pytest.mark.parametrize("preset", ["bge-base", "e5-base", "multilingual-e5-base", "gte-base"])
def test_offline_error_names_the_model_and_how_to_pass_a_folder(preset, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    hub.hub_reachable.cache_clear()
    try:
        r = build_retriever(preset, cache_dir=tmp_path)
        with pytest.raises(ModelUnavailableError) as info:
            r.retrieve(Corpus(["a"], ["human"], [""], ["x"]), {"q": "x"}, depth=1)
    finally:
        hub.hub_reachable.cache_clear()
    msg = str(info.value)
    assert PRESETS[preset].model in msg and f"{preset}:path=DIR" in msg and "hf download" in msg


def test_listing_has_every_new_preset_with_its_card_settings():
    rows = {r["preset"]: r for r in preset_listing()}
    assert rows["bge-base"]["model"] == "BAAI/bge-base-en-v1.5" and rows["bge-small"]["model"] == "BAAI/bge-small-en-v1.5"
    assert rows["bge-large"]["query_prefix"] == "Represent this sentence for searching relevant passages: " and rows["bge-large"]["doc_prefix"] == ""
    assert (rows["e5-base"]["model"], rows["e5-base"]["pooling"], rows["e5-base"]["doc_prefix"]) == ("intfloat/e5-base-v2", "mean", "passage: ")
    assert rows["multilingual-e5-base"]["model"] == "intfloat/multilingual-e5-base"
    assert (rows["gte-base"]["model"], rows["gte-base"]["pooling"], rows["gte-base"]["query_prefix"]) == ("thenlper/gte-base", "mean", "")
    assert rows["minilm"]["offline"] in (True, False)


def test_cli_lists_presets(capsys, monkeypatch):
    from sourcebias.cli.common import console
    from sourcebias.cli.main import main

    monkeypatch.setattr(console, "_width", 250)  # one line per preset

    try:
        main(["retrievers", "--presets"])
    except SystemExit as e:
        assert e.code in (0, None)
    out = capsys.readouterr().out
    for name in ("bge-base", "e5-base", "multilingual-e5-base", "gte-base", "passage: "):
        assert name in out
