"""Log-likelihood of text under a causal language model — one scorer for every capability.

The LM re-ranker needs log P(query | prompt(document)) for many (document, query) pairs; the
perplexity analysis and CDC need log P(x_t | x_<t) for every token of a document. Both are
per-token log-probabilities of a *continuation* given a *prefix*, computed here once:

* :meth:`CausalLMScorer.continuation_logprobs` — pairs ``(prefix, continuation)`` of token ids;
  pairs that share a prefix share its key/value cache: the prefix is run through the model once
  (left-padded batches, explicit position ids) and each continuation then costs only its own
  tokens. Models whose cache cannot be split by rows (sliding windows, recurrent state) fall back
  to whole sequences automatically.
* :meth:`CausalLMScorer.sequence_logprobs` — every token of each sequence given the tokens before
  it (the first token is context only), in length-sorted, right-padded batches.

Log-probabilities are ``logit - logsumexp(logits)`` at the target token (no ``[batch, length,
vocab]`` log-softmax copy), accumulated in float64. Batches hold at most ``max_batch_tokens``
positions whose logits are materialised, so memory stays bounded for large vocabularies.

Why not a library: transformers gives logits, not batched per-token log-probabilities with
shared prefixes; lm-eval-harness does this inside its own harness (not importable as a
function). This module is what both the re-ranker and the perplexity analysis call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class _NoPrefixSharing(Exception):
    """The model's key/value cache is not a plain per-layer (key, value) cache."""


class CausalLMScorer:
    """Per-token log-probabilities under a causal LM.

    Parameters
    ----------
    model, tokenizer:
        A transformers causal LM (eval mode) and its tokenizer (see
        :func:`sourcebias.models.llm.load_causal_lm`).
    batch_size:
        Rows per forward pass (prefixes, continuations or sequences).
    prefix_cache:
        Share a prefix's key/value cache among the continuations that follow it (default).
    max_batch_tokens:
        At most this many positions whose logits are kept per forward pass (default: about
        256 MB of float32 logits, ``64M / vocabulary size`` positions).
    """

    def __init__(self, model: Any, tokenizer: Any, *, batch_size: int = 32, prefix_cache: bool = True, max_batch_tokens: int | None = None):
        import torch

        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = int(batch_size)
        self.prefix_cache = prefix_cache
        self._prefix_ok = prefix_cache
        vocab = int(getattr(model.config, "vocab_size", 0) or len(tokenizer))
        self.max_batch_tokens = int(max_batch_tokens or max(512, (64 * 1024 * 1024) // max(vocab, 1)))
        self._torch = torch
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad) if pad is not None else 0

    @classmethod
    def load(cls, name_or_path: str, *, device: str | None = None, dtype: str | None = None, cache_dir: Any = None, flag: str | None = None, **kwargs: Any) -> CausalLMScorer:
        """Load a causal LM by name, folder or GGUF file (``smollm2``: the offline SmolLM2)."""
        from sourcebias.models.llm import load_causal_lm

        model, tok = load_causal_lm(name_or_path, device=device, dtype=dtype, cache_dir=cache_dir, flag=flag)
        return cls(model, tok, **kwargs)

    @property
    def device(self) -> Any:
        return self.model.device

    # -- public API ------------------------------------------------------------------------------
    def continuation_logprobs(self, prefixes: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]], task: Any = None) -> list[np.ndarray]:
        """For each pair ``i``: ``log P(continuations[i][t] | prefixes[i], continuations[i][:t])``
        for every ``t`` (float64 array of ``len(continuations[i])``).

        Every prefix must have at least one token (e.g. the start token) and every continuation
        at least one. ``task`` (a progress handle) advances by one per pair.
        """
        if len(prefixes) != len(continuations):
            raise ValueError("prefixes and continuations differ in length")
        n = len(prefixes)
        out: list[np.ndarray] = [np.empty(0)] * n
        if n == 0:
            return out
        for i in range(n):
            if len(prefixes[i]) < 1 or len(continuations[i]) < 1:
                raise ValueError(f"pair {i}: a prefix and a continuation need at least one token each")
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, p in enumerate(prefixes):
            groups.setdefault(tuple(p), []).append(i)
        # Longest prefixes first: batches of similar length, and an out-of-memory error early.
        order = sorted(groups, key=lambda p: -len(p))
        bs = self.batch_size
        with self._torch.inference_mode():
            for start in range(0, len(order), bs):
                chunk = order[start : start + bs]
                pairs = [(r, i) for r, p in enumerate(chunk) for i in groups[p]]
                # A one-token prefix leaves nothing to cache: such a chunk runs whole sequences.
                if self._prefix_ok and min(len(p) for p in chunk) > 1:
                    try:
                        self._shared(chunk, pairs, continuations, out, task)
                        continue
                    except _NoPrefixSharing:
                        self._prefix_ok = False
                for s in range(0, len(pairs), bs):
                    sub = [i for _, i in pairs[s : s + bs]]
                    for i, lp in zip(sub, self._full([list(prefixes[i]) for i in sub], [list(continuations[i]) for i in sub])):
                        out[i] = lp
                    if task is not None:
                        task.advance(len(sub))
        return out

    def sequence_logprobs(self, sequences: Sequence[Sequence[int]], task: Any = None) -> list[np.ndarray]:
        """For each sequence: ``log P(x_t | x_<t)`` for ``t = 1 .. len - 1`` (float64; the first
        token is context only, so a sequence of ``n`` tokens gives ``n - 1`` values). ``task``
        advances by one per sequence."""
        torch = self._torch
        n = len(sequences)
        out: list[np.ndarray] = [np.empty(0)] * n
        order = sorted(range(n), key=lambda i: -len(sequences[i]))
        pos = 0
        with torch.inference_mode():
            while pos < n:
                width = max(len(sequences[order[pos]]), 1)
                rows = max(1, min(self.batch_size, self.max_batch_tokens // width))
                idx = order[pos : pos + rows]
                pos += len(idx)
                seqs = [list(sequences[i]) for i in idx]
                if max(len(s) for s in seqs) < 2:
                    for i in idx:
                        out[i] = np.empty(0)
                    if task is not None:
                        task.advance(len(idx))
                    continue
                ids, mask = self._right_pad(seqs)
                logits = self.model(input_ids=ids, attention_mask=mask, use_cache=False).logits[:, :-1]
                targets = [s[1:] for s in seqs]
                for i, lp in zip(idx, self._target_logprobs(logits, targets)):
                    out[i] = lp
                if task is not None:
                    task.advance(len(idx))
        return out

    # -- internals -------------------------------------------------------------------------------
    def _right_pad(self, seqs: list[list[int]]):
        torch = self._torch
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for r, s in enumerate(seqs):
            ids[r, : len(s)] = torch.tensor(s, dtype=torch.long)
            mask[r, : len(s)] = 1
        return ids.to(self.device), mask.to(self.device)

    def _left_pad(self, seqs: list[list[int]]):
        """Left-padded ids, attention mask and position ids (0 at each row's first real token)."""
        torch = self._torch
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for r, s in enumerate(seqs):
            if s:
                ids[r, width - len(s) :] = torch.tensor(s, dtype=torch.long)
                mask[r, width - len(s) :] = 1
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        dev = self.device
        return ids.to(dev), mask.to(dev), pos.to(dev)

    def _target_logprobs(self, logits, targets: list[list[int]]) -> list[np.ndarray]:
        """``logits[r, t]`` predicts ``targets[r][t]``; returns each row's log-probabilities
        (columns past a row's target length are ignored)."""
        torch = self._torch
        width = max(len(t) for t in targets)
        tgt = torch.zeros((len(targets), width), dtype=torch.long, device=logits.device)
        for r, t in enumerate(targets):
            if t:
                tgt[r, : len(t)] = torch.tensor(t, dtype=torch.long)
        lg = logits[:, :width].float()
        lp = (lg.gather(-1, tgt.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(lg, dim=-1)).double().cpu().numpy()
        return [lp[r, : len(t)].copy() for r, t in enumerate(targets)]

    def _full(self, prefixes: list[list[int]], conts: list[list[int]]) -> list[np.ndarray]:
        """Whole ``prefix + continuation`` sequences, left-padded so that every row ends at the
        last column; only the last ``max continuation length + 1`` positions reach the output layer."""
        seqs = [p + c for p, c in zip(prefixes, conts)]
        ids, mask, pos = self._left_pad(seqs)
        k = max(len(c) for c in conts) + 1
        logits = self.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False, logits_to_keep=k).logits
        # Row r's continuation starts at column k - len(c_r) of the kept block; the column before
        # it (the prefix's last token) predicts the continuation's first token.
        torch = self._torch
        width = max(len(c) for c in conts)
        aligned = [logits[r, k - 1 - len(c) : k - 1] for r, c in enumerate(conts)]
        stacked = torch.stack([torch.nn.functional.pad(a, (0, 0, 0, width - a.shape[0])) for a in aligned])
        return self._target_logprobs(stacked, conts)

    def _shared(self, chunk: list[tuple[int, ...]], pairs: list[tuple[int, int]], conts: Sequence[Sequence[int]], out: list[np.ndarray], task: Any) -> None:
        """Run each prefix (all but its last token) once, left-padded, keep the key/value cache;
        then for batches of (prefix, continuation) pairs run ``[last prefix token] +
        continuation`` on the rows of that cache (right-padded, explicit positions)."""
        torch = self._torch
        heads = [list(p) for p in chunk]
        ids, mask, pos = self._left_pad([h[:-1] for h in heads])
        res = self.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, logits_to_keep=1)
        layers = _cache_tensors(res.past_key_values)
        bs = self.batch_size
        dev = self.device
        for s in range(0, len(pairs), bs):
            sub = pairs[s : s + bs]
            rows = torch.tensor([r for r, _ in sub], dtype=torch.long, device=dev)
            tails = [[heads[r][-1]] + list(conts[i]) for r, i in sub]
            width = max(len(t) for t in tails)
            t_ids = torch.full((len(sub), width), self.pad_id, dtype=torch.long)
            t_mask = torch.zeros((len(sub), width), dtype=torch.long)
            for j, t in enumerate(tails):
                t_ids[j, : len(t)] = torch.tensor(t, dtype=torch.long)
                t_mask[j, : len(t)] = 1
            start = torch.tensor([len(heads[r]) - 1 for r, _ in sub], dtype=torch.long).unsqueeze(1)
            t_pos = start + torch.arange(width).unsqueeze(0)
            cache = _cache_from_tensors([(k.index_select(0, rows), v.index_select(0, rows)) for k, v in layers])
            logits = self.model(
                input_ids=t_ids.to(dev),
                attention_mask=torch.cat([mask.index_select(0, rows), t_mask.to(dev)], dim=1),
                position_ids=t_pos.to(dev),
                past_key_values=cache,
                use_cache=True,
            ).logits
            for (_, i), lp in zip(sub, self._target_logprobs(logits, [list(conts[i]) for _, i in sub])):
                out[i] = lp
            if task is not None:
                task.advance(len(sub))


def _cache_tensors(cache: Any) -> list[tuple[Any, Any]]:
    """``[(keys, values), ...]`` per layer of a transformers ``DynamicCache`` of full-attention
    layers (``[batch, heads, length, dim]``); raises :class:`_NoPrefixSharing` for any other
    cache (sliding windows, recurrent states, quantized caches), which cannot be row-selected
    this way."""
    try:
        from transformers.cache_utils import DynamicCache, DynamicLayer
    except ImportError:
        raise _NoPrefixSharing from None
    if type(cache) is not DynamicCache or not all(type(layer) is DynamicLayer for layer in getattr(cache, "layers", [None])):
        raise _NoPrefixSharing
    return [(layer.keys, layer.values) for layer in cache.layers]


def _cache_from_tensors(layers: list[tuple[Any, Any]]) -> Any:
    from transformers.cache_utils import DynamicCache

    return DynamicCache(ddp_cache_data=layers)
