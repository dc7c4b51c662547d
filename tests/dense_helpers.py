"""A tiny random sentence-transformers model built from a config (no download), for tests that
encode many texts: 1 layer, 16 dimensions, a vocabulary of a few words and the digits."""

from __future__ import annotations

from pathlib import Path

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau"


def tiny_sentence_transformer(root: Path) -> Path:
    """Write a random BERT (seeded) with mean pooling and normalisation as a sentence-transformers
    folder under ``root``; returns the folder."""
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    try:
        from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    except ImportError:  # older sentence-transformers
        from sentence_transformers.models import Normalize, Pooling, Transformer

    hf = root / "hf"
    hf.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS.split(), *"0123456789"]
    (hf / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tok = BertTokenizerFast(vocab_file=str(hf / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
    BertModel(cfg).eval().save_pretrained(hf)
    tok.save_pretrained(hf)
    word = Transformer(str(hf), max_seq_length=32)
    st = SentenceTransformer(modules=[word, Pooling(word.get_embedding_dimension(), pooling_mode="mean"), Normalize()], device="cpu")
    folder = root / "st"
    st.save(str(folder))
    return folder


def short_texts(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct short texts (a number spelled in digits, among a few words)."""
    words = WORDS.split()
    return [f"{words[i % len(words)]} {' '.join(str(i))} {words[(i * 7 + seed) % len(words)]}" for i in range(n)]
