"""A tiny random-weight causal LM (and its tokenizer) saved as a transformers folder, for tests of
the zero-shot detectors that need real model code but not a real model."""

from __future__ import annotations

from pathlib import Path

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "the",
    "a",
    "of",
    "and",
    "is",
    "in",
    "on",
    "to",
    "news",
    "study",
    "cells",
    "patients",
]
SENTENCES = [" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(12)) for i in range(40)]


def tiny_causal_lm(folder: Path, *, seed: int = 0, extra_token: str | None = None) -> Path:
    """Save a 2-layer Llama with random weights (``seed``) and a word-level tokenizer trained on
    :data:`SENTENCES` (``extra_token`` adds a token: another vocabulary) into ``folder``."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(SENTENCES, trainers.WordLevelTrainer(special_tokens=["<pad>", "<unk>", "<s>", "</s>"]))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>")
    if extra_token:
        tokenizer.add_tokens([extra_token])
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=128,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(cfg).float().eval()
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
