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

Log-probabilities at the target tokens come from PyTorch's fused cross-entropy kernel (no
``[batch, length, vocab]`` log-softmax copy) and are summed in float64. Batches hold at most ``max_batch_tokens``
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
        self._split_ok: bool | None = None

    @classmethod
    def load(
        cls, name_or_path: str, *, device: str | None = None, dtype: str | None = None, cache_dir: Any = None, flag: str | None = None, **kwargs: Any
    ) -> CausalLMScorer:
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
        advances by one per sequence.

        Where the model's logits are its output layer applied to its decoder's last hidden
        state (checked once on a short input), the output layer runs only at real (not padded)
        positions, in chunks; otherwise on the model's full logits.
        """
        torch = self._torch
        n = len(sequences)
        out: list[np.ndarray] = [np.empty(0)] * n
        with torch.inference_mode():
            for idx in self._length_batches([len(s) for s in sequences]):
                seqs = [list(sequences[i]) for i in idx]
                targets = [s[1:] for s in seqs]
                if max(len(s) for s in seqs) < 2:
                    for i in idx:
                        out[i] = np.empty(0)
                elif self._head_split():
                    for i, lp in zip(idx, self._split_logprobs(seqs, targets)):
                        out[i] = lp
                else:
                    ids, mask = self._right_pad(seqs)
                    kw = {} if len({len(x) for x in seqs}) == 1 else {"attention_mask": mask}
                    logits = self.model(input_ids=ids, use_cache=False, **kw).logits[:, :-1]
                    for i, lp in zip(idx, self._target_logprobs(logits, targets)):
                        out[i] = lp
                if task is not None:
                    task.advance(len(idx))
        return out

    def next_token_logits(self, sequences: Sequence[Sequence[int]]):
        """The model's next-token logits of one batch of sequences: a float32 tensor
        ``[batch, max length − 1, vocabulary]`` whose row ``r``, column ``t`` predicts
        ``sequences[r][t + 1]`` (columns past a row's length are padding). Batch with
        :meth:`batches`; for detectors that need the whole distribution at each position
        (Fast-DetectGPT, Binoculars), not only the target token's log-probability."""
        torch = self._torch
        seqs = [list(s) for s in sequences]
        ids, mask = self._right_pad(seqs)
        kw = {} if len({len(x) for x in seqs}) == 1 else {"attention_mask": mask}
        with torch.inference_mode():
            return self.model(input_ids=ids, use_cache=False, **kw).logits[:, :-1].float()

    def batches(self, lengths: list[int]) -> list[list[int]]:
        """Batches of sequence indices for :meth:`next_token_logits` (as :meth:`sequence_logprobs`
        forms them: longest first, at most ``batch_size`` rows and ``max_batch_tokens`` positions)."""
        return self._length_batches(lengths)

    def _length_batches(self, lengths: list[int]) -> list[list[int]]:
        """Batches of sequence indices, longest first. On a GPU: up to ``batch_size`` rows (and
        ``max_batch_tokens`` positions) of similar length, padded. On a CPU, where padding and the
        masked attention it needs cost more than a batch saves: runs of *equal* length only, which
        need neither (a bare causal pass per batch)."""
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        batches: list[list[int]] = []
        equal_only = getattr(self.device, "type", str(self.device)) == "cpu"
        k = 0
        while k < len(order):
            width = max(lengths[order[k]], 1)
            rows = max(1, min(self.batch_size, self.max_batch_tokens // width))
            batch = [order[k]]
            k += 1
            while k < len(order) and len(batch) < rows and (not equal_only or lengths[order[k]] == lengths[batch[0]]):
                batch.append(order[k])
                k += 1
            batches.append(batch)
        return batches

    def _head_split(self) -> bool:
        """Whether ``logits == output_layer(decoder(x).last_hidden_state)`` for this model (checked
        once, on a short input): then the output layer can skip padding."""
        if self._split_ok is None:
            self._split_ok = False
            try:
                decoder, head = self.model.get_decoder(), self.model.get_output_embeddings()
                if decoder is not None and head is not None:
                    x = self._torch.tensor([[self.pad_id if self.pad_id else 1] + list(range(2, 9))], device=self.device)
                    full = self.model(input_ids=x, use_cache=False).logits.float()
                    split = head(decoder(input_ids=x, use_cache=False).last_hidden_state).float()
                    self._split_ok = bool(full.shape == split.shape and self._torch.allclose(full, split, atol=1e-4, rtol=1e-4))
            except Exception:
                self._split_ok = False
        return self._split_ok

    def _split_logprobs(self, seqs: list[list[int]], targets: list[list[int]]) -> list[np.ndarray]:
        torch = self._torch
        ids, mask = self._right_pad(seqs)
        kw = {} if len({len(x) for x in seqs}) == 1 else {"attention_mask": mask}  # equal lengths: no padding, no mask
        hidden = self.model.get_decoder()(input_ids=ids, use_cache=False, **kw).last_hidden_state[:, :-1]
        real = torch.zeros(hidden.shape[:2], dtype=torch.bool, device=hidden.device)
        tgt = torch.zeros(hidden.shape[:2], dtype=torch.long, device=hidden.device)
        for r, t in enumerate(targets):
            if t:
                real[r, : len(t)] = True
                tgt[r, : len(t)] = torch.tensor(t, dtype=torch.long)
        h, y = hidden[real], tgt[real]
        head = self.model.get_output_embeddings()
        chunk = max(1, self.max_batch_tokens)
        nll = (
            torch.cat([torch.nn.functional.cross_entropy(head(h[s : s + chunk]).float(), y[s : s + chunk], reduction="none") for s in range(0, len(h), chunk)])
            if len(h)
            else torch.empty(0)
        )
        flat = (-nll).double().cpu().numpy()
        out, k = [], 0
        for t in targets:
            out.append(flat[k : k + len(t)].copy())
            k += len(t)
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
        # -log softmax at the target: PyTorch's fused cross-entropy kernel (no log-softmax copy)
        nll = torch.nn.functional.cross_entropy(lg.reshape(-1, lg.shape[-1]), tgt.reshape(-1), reduction="none").view(tgt.shape)
        lp = (-nll).double().cpu().numpy()
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
    return [(layer.keys, layer.values) for layer in cache.layers if isinstance(layer, DynamicLayer)]  # (every layer is one, checked above)


def _cache_from_tensors(layers: list[tuple[Any, Any]]) -> Any:
    from transformers.cache_utils import DynamicCache

    return DynamicCache(ddp_cache_data=layers)
