"""Masked-LM pseudo-perplexity on a tiny random BERT with a WordPiece tokenizer trained here.

No masked LM ships offline, so bert-base-uncased itself is not exercised; the checks are on the
computation: the batched version and the naive loop both equal the per-position masked-LM loss
that transformers itself computes (``BertForMaskedLM(..., labels=...)``), padding does not move
the values, and special tokens / truncation / empty texts are handled as documented.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from sourcebias.analysis import pseudo_perplexity as pp  # noqa: E402

SENTENCES = [
    "The cat sat on the mat in the sun.",
    "Dogs bark loudly at night when the moon is full.",
    "A cat was sitting on the mat under the warm sun.",
    "Cats and dogs can live together peacefully in one house.",
    "The Xiaomi SU7 is a battery electric sedan built in China.",
    "Perplexity measures how well a language model predicts a text.",
]
TEXTS = [
    "The cat sat on the mat.",
    "Dogs and cats live together in the sun, and the moon is full at night when dogs bark.",
    "A battery electric sedan.",
    "",
    "Perplexity of the cat.",
]


@pytest.fixture(scope="module")
def tiny():
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(SENTENCES, trainers.WordPieceTrainer(vocab_size=300, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    tokenizer = BertTokenizerFast(tokenizer_object=tok)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(tokenizer), hidden_size=48, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96, max_position_embeddings=64)
    model = BertForMaskedLM(cfg).float()
    return model, tokenizer


def _hf_loss_reference(model, tokenizer, text, *, max_length, special_tokens):
    """Per scored token, transformers' own masked-LM loss (labels = -100 except the masked slot)."""
    ids = tokenizer(text, add_special_tokens=special_tokens, truncation=True, max_length=max_length)["input_ids"]
    positions = range(1, len(ids) - 1) if special_tokens else range(len(ids))
    losses = []
    model.eval()
    with torch.no_grad():
        for s in positions:
            x = torch.tensor([ids])
            labels = torch.full_like(x, -100)
            labels[0, s] = x[0, s]
            x[0, s] = tokenizer.mask_token_id
            out = model(input_ids=x, attention_mask=torch.ones_like(x), token_type_ids=torch.zeros_like(x), labels=labels)
            losses.append(out.loss.item())
    return np.array(losses)


@pytest.mark.parametrize("special_tokens,shortcut", [(False, True), (True, True), (False, False)])
def test_batched_and_naive_equal_transformers_loss(tiny, special_tokens, shortcut):
    model, tokenizer = tiny
    model.train()  # the functions must switch dropout off and restore the mode
    naive = pp.pseudo_log_perplexity_naive(TEXTS, model, tokenizer, max_length=16, special_tokens=special_tokens, per_token=True)
    batched = pp.pseudo_log_perplexity(
        TEXTS, model, tokenizer, max_length=16, special_tokens=special_tokens, batch_tokens=50, per_token=True, shortcut=shortcut
    )
    assert len(model.bert.encoder.layer) == 2  # the shortened layer list is restored
    assert model.training
    for text, a, b in zip(TEXTS, naive, batched):
        ref = _hf_loss_reference(model, tokenizer, text, max_length=16, special_tokens=special_tokens)
        assert a.tokens == b.tokens == len(ref)
        if not text:
            assert a.tokens == 0 and math.isnan(a.value) and math.isnan(b.value)
            continue
        np.testing.assert_allclose(a.token_nll, ref, rtol=0, atol=1e-5)  # HF's loss is float32
        np.testing.assert_allclose(b.token_nll, a.token_nll, rtol=0, atol=1e-6)
        assert b.value == pytest.approx(a.value, abs=1e-6)
        assert a.value == pytest.approx(ref.mean(), abs=1e-5)
        np.testing.assert_array_equal(a.token_ids, b.token_ids)
    # the long text is cut to 16 tokens (14 content tokens with [CLS] and [SEP])
    assert naive[1].truncated and naive[1].tokens == (14 if special_tokens else 16)
    assert not naive[0].truncated


def test_padding_and_packing_do_not_change_values(tiny):
    model, tokenizer = tiny
    alone = [pp.pseudo_log_perplexity([t], model, tokenizer, max_length=32, per_token=True)[0] for t in TEXTS if t]
    # everything in one padded batch, and in batches of 7 rows that split documents
    together = pp.pseudo_log_perplexity([t for t in TEXTS if t], model, tokenizer, max_length=32, batch_tokens=10_000, per_token=True)
    small = pp.pseudo_log_perplexity([t for t in TEXTS if t], model, tokenizer, max_length=32, batch_tokens=7 * 32, per_token=True)
    for a, b, c in zip(alone, together, small):
        np.testing.assert_allclose(b.token_nll, a.token_nll, rtol=0, atol=1e-6)
        np.testing.assert_allclose(c.token_nll, a.token_nll, rtol=0, atol=1e-6)


def test_packing_covers_every_position_once():
    lengths = [5, 0, 12, 3, 12]
    seen = [(k, s) for batch in pp._batches(lengths, False, 24, 100) for k, s in batch]
    assert sorted(seen) == [(k, s) for k, n in enumerate(lengths) for s in range(n)]
    for batch in pp._batches(lengths, False, 24, 100):
        assert len(batch) * max(lengths[k] for k, _ in batch) <= 24


def test_literal_special_token_text_is_not_a_mask(tiny):
    _model, tokenizer = tiny
    ids, _ = pp.encode(["the [MASK] cat"], tokenizer)
    assert tokenizer.mask_token_id not in ids[0]


def test_errors(tiny):
    from sourcebias.core.errors import ConfigError

    model, tokenizer = tiny
    with pytest.raises(ConfigError, match="positions"):
        pp.pseudo_log_perplexity(["x"], model, tokenizer, max_length=512)
    with pytest.raises(ConfigError, match="max_length"):
        pp.pseudo_log_perplexity(["x"], model, tokenizer, max_length=2, special_tokens=True)


def test_roberta_family_model(tiny):
    """The ``lm_head`` path and the last-layer shortcut on a tiny RoBERTa (positions offset by
    the padding index, no token types): batched == naive == transformers' own loss."""
    from transformers import RobertaConfig, RobertaForMaskedLM

    _, tokenizer = tiny
    torch.manual_seed(1)
    cfg = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=40,
        pad_token_id=tokenizer.pad_token_id,
        type_vocab_size=1,
    )
    model = RobertaForMaskedLM(cfg).eval()
    assert pp._last_layer_parts(model) is not None
    texts = [t for t in TEXTS if t]
    naive = pp.pseudo_log_perplexity_naive(texts, model, tokenizer, max_length=24, per_token=True)
    batched = pp.pseudo_log_perplexity(texts, model, tokenizer, max_length=24, batch_tokens=60, per_token=True)
    for a, b in zip(naive, batched):
        np.testing.assert_allclose(b.token_nll, a.token_nll, rtol=0, atol=1e-6)
    ids = tokenizer(texts[0], add_special_tokens=False)["input_ids"]
    losses = []
    with torch.no_grad():
        for s in range(len(ids)):
            x = torch.tensor([ids])
            labels = torch.full_like(x, -100)
            labels[0, s] = x[0, s]
            x[0, s] = tokenizer.mask_token_id
            losses.append(model(input_ids=x, attention_mask=torch.ones_like(x), token_type_ids=torch.zeros_like(x), labels=labels).loss.item())
    assert naive[0].value == pytest.approx(np.mean(losses), abs=1e-5)
