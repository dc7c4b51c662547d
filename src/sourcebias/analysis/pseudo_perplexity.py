"""Masked-LM pseudo-log-perplexity of documents, batched, with the naive loop beside it.

Dai et al., KDD 2024, §4.2 (the PPL equation; Perplexity Trap, Dai et al., 2025, arXiv 2503.08684): for a document of tokens
``d_1 .. d_S``,

    PPL(d) = -(1/S) Σ_s log P_MLM(d_s | d without d_s),

one masked copy of the document per token (Salazar et al. 2020, "Masked Language Model
Scoring"), in nats, **not** exponentiated — the papers call this mean the (log-)perplexity.

Matching the reference code (Perplexity-Trap ``calc_perplexity.py``): ``bert-base-uncased``
(``BertForMaskedLM``), the document's ``text``, at most 512 tokens, and **no special tokens**
(``add_special_tokens=False``: the model sees the bare WordPiece sequence, every token is scored).
``special_tokens=True`` instead wraps each copy in ``[CLS] ... [SEP]`` (the input form BERT was
pre-trained on, as Salazar et al. do): the two special tokens are context, never scored, and
count towards ``max_length`` (510 content tokens at 512). Two deliberate differences from the
reference: a literal special-token string in a text (``"[MASK]"``, ``"[SEP]"``) is tokenized as
ordinary text (``split_special_tokens=True``), so a document cannot inject a real mask; and
the reference's ``ignore_index=0`` (a token with id 0, ``[PAD]``, would score 0 yet count) has
no counterpart, as ordinary text never tokenizes to ``[PAD]``. The reference rounds each
token's loss to 6 decimals; this module does not.

Two implementations with the same numbers:

* :func:`pseudo_log_perplexity_naive` — one forward pass per masked copy, the full MLM head at
  every position, the masked position's row picked afterwards (what the reference computes);
* :func:`pseudo_log_perplexity` — the masked copies of one or several documents (documents
  packed by length, so little padding) run through the encoder in batches of about
  ``batch_tokens`` tokens; the last encoder layer's query/attention/feed-forward part and the
  MLM head (transform + vocabulary projection), which act position by position, run only at
  the masked positions (the naive loop spends most of its time in the vocabulary projection
  of all S positions). Right padding under an attention
  mask leaves the real positions' values unchanged (padded keys get zero attention weight).
  The two agree to float rounding (about 1e-6 in float32; see the tests), not bit for bit:
  a batch of different shape may sum in a different order inside the matrix kernels.

Both take a loaded model and tokenizer (any ``*ForMaskedLM`` of transformers; the head-only
shortcut is used for models with a ``cls`` (BERT) or ``lm_head`` (RoBERTa) module, others fall
back to full logits). The model is put in eval mode for the call and restored after.
:func:`load_masked_lm` loads one by name (``bert-base-uncased`` must be in the local Hugging
Face cache or downloadable: no masked LM ships with sourcebias, so the numbers of the real
``bert-base-uncased`` are not verified here; the tests use a small random BERT).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError

DEFAULT_MODEL = "bert-base-uncased"


@dataclass(frozen=True)
class PseudoPerplexity:
    """One document's result: ``tokens`` scored (S), ``value`` = mean NLL in nats (NaN when
    S = 0), ``truncated`` (the text had more tokens than fit), and, when asked for,
    ``token_ids`` and ``token_nll`` of the scored tokens in order."""

    tokens: int
    value: float
    truncated: bool
    token_ids: np.ndarray | None = None
    token_nll: np.ndarray | None = None


def load_masked_lm(name_or_path: str = DEFAULT_MODEL, *, device: str | None = None):
    """``(model, tokenizer)`` for a masked LM by Hub name or local folder (via
    :func:`sourcebias.models.hub.resolve_model`, which explains how to fetch it when offline)."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from sourcebias.models.hub import resolve_device, resolve_model

    path = resolve_model(name_or_path, what="masked language model")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForMaskedLM.from_pretrained(path).to(resolve_device(device)).eval()
    return model, tokenizer


def encode(texts: Sequence[str], tokenizer: Any, *, max_length: int = 512, special_tokens: bool = False) -> tuple[list[list[int]], list[bool]]:
    """Token ids of each text as the model will see them (with ``[CLS]``/``[SEP]`` when
    ``special_tokens``), cut to ``max_length``, and whether each was cut. Truncation keeps the
    first tokens, as ``truncation=True`` does for one sequence."""
    n_special = 2 if special_tokens else 0
    if max_length <= n_special:
        raise ConfigError(f"max_length must exceed {n_special}, got {max_length}")
    if special_tokens and (tokenizer.cls_token_id is None or tokenizer.sep_token_id is None):
        raise ConfigError("special_tokens=True needs a tokenizer with cls and sep tokens")
    keep = max_length - n_special
    enc = tokenizer(list(texts), add_special_tokens=False, split_special_tokens=True, verbose=False)["input_ids"]
    ids, cut = [], []
    for seq in enc:
        cut.append(len(seq) > keep)
        seq = list(seq[:keep])
        ids.append([tokenizer.cls_token_id, *seq, tokenizer.sep_token_id] if special_tokens else seq)
    return ids, cut


def _scored_positions(length: int, special_tokens: bool) -> range:
    return range(1, length - 1) if special_tokens else range(length)


def _mlm_head(model: Any):
    for name in ("cls", "lm_head"):
        head = getattr(model, name, None)
        if head is not None and callable(head):
            return head
    return None


def _check(model: Any, tokenizer: Any, max_length: int) -> None:
    if tokenizer.mask_token_id is None:
        raise ConfigError("the tokenizer has no mask token: a masked language model is needed")
    limit = getattr(model.config, "max_position_embeddings", None)
    if limit is not None and max_length > limit:
        raise ConfigError(f"max_length {max_length} exceeds the model's {limit} positions")


def _uses_token_types(tokenizer: Any) -> bool:
    return "token_type_ids" in getattr(tokenizer, "model_input_names", ())


def _results(ids: list[list[int]], cut: list[bool], nll: list[np.ndarray], special_tokens: bool, per_token: bool) -> list[PseudoPerplexity]:
    out = []
    for seq, c, v in zip(ids, cut, nll):
        pos = list(_scored_positions(len(seq), special_tokens))
        out.append(
            PseudoPerplexity(
                tokens=len(pos),
                value=float(v.mean()) if len(pos) else math.nan,
                truncated=c,
                token_ids=np.asarray([seq[p] for p in pos], dtype=np.int64) if per_token else None,
                token_nll=v.copy() if per_token else None,
            )
        )
    return out


class _EvalMode:
    def __init__(self, model):
        self.model = model

    def __enter__(self):
        self.was_training = self.model.training
        self.model.eval()

    def __exit__(self, *exc):
        self.model.train(self.was_training)


def pseudo_log_perplexity_naive(
    texts: Sequence[str], model: Any, tokenizer: Any, *, max_length: int = 512, special_tokens: bool = False, per_token: bool = False
) -> list[PseudoPerplexity]:
    """The reference computation: for each document and each scored token, one forward pass
    of the copy with that token masked; full logits; NLL of the true token at the masked
    position (log-softmax in float64). Slow; kept as the yardstick of the batched version."""
    import torch

    _check(model, tokenizer, max_length)
    ids, cut = encode(texts, tokenizer, max_length=max_length, special_tokens=special_tokens)
    device = next(model.parameters()).device
    types = _uses_token_types(tokenizer)
    nll: list[np.ndarray] = []
    with _EvalMode(model), torch.inference_mode():
        for seq in ids:
            base = torch.tensor([seq], dtype=torch.long, device=device)
            values = []
            for s in _scored_positions(len(seq), special_tokens):
                x = base.clone()
                x[0, s] = tokenizer.mask_token_id
                kwargs = {"attention_mask": torch.ones_like(x)}
                if types:
                    kwargs["token_type_ids"] = torch.zeros_like(x)
                logits = model(input_ids=x, **kwargs).logits[0, s]
                values.append(-torch.log_softmax(logits.double(), dim=-1)[seq[s]].item())
            nll.append(np.asarray(values, dtype=np.float64))
    return _results(ids, cut, nll, special_tokens, per_token)


def _batches(lengths: list[int], special_tokens: bool, batch_tokens: int, max_rows: int):
    """Greedy packing: documents longest first; each batch takes masked copies (rows) while
    rows x (its longest document's length) <= batch_tokens. Yields lists of (doc, position)."""
    order = sorted(range(len(lengths)), key=lambda k: (-lengths[k], k))
    batch: list[tuple[int, int]] = []
    cap = 0
    for k in order:
        for s in _scored_positions(lengths[k], special_tokens):
            if not batch:
                cap = max(1, min(max_rows, batch_tokens // lengths[k]))
            batch.append((k, s))
            if len(batch) == cap:
                yield batch
                batch = []
    if batch:
        yield batch


def _last_layer_parts(model: Any):
    """For a BERT-family encoder (``base_model.encoder.layer`` of layers with ``attention.self``
    query/key/value, ``attention.output``, ``intermediate``, ``output``; absolute positions; not
    a decoder): ``(encoder, layers)``. None for any other architecture."""
    import torch

    cfg = model.config
    if getattr(cfg, "is_decoder", False) or getattr(cfg, "position_embedding_type", "absolute") != "absolute":
        return None
    enc = getattr(model.base_model, "encoder", None)
    layers = getattr(enc, "layer", None)
    if not isinstance(layers, torch.nn.ModuleList) or len(layers) == 0:
        return None
    last = layers[-1]
    sa = getattr(getattr(last, "attention", None), "self", None)
    parts = [getattr(sa, n, None) for n in ("query", "key", "value", "num_attention_heads", "attention_head_size")]
    parts += [getattr(last.attention, "output", None), getattr(last, "intermediate", None), getattr(last, "output", None)]
    if any(p is None for p in parts) or hasattr(last, "crossattention"):
        return None
    return enc, layers


def _masked_hidden(model: Any, parts: Any, x: Any, kwargs: dict, rows: Any, pos: Any, padded: bool):
    """Hidden states of the last encoder layer at the masked positions only.

    The layers before the last run as transformers' own modules (the encoder's layer list is
    shortened for the call and restored after). The last layer is evaluated at one position
    per row: its query, attention, output projection and feed-forward block act position by
    position, so only the keys and values need every position. Written here because
    transformers has no "outputs at these positions only" option; equal to the full layer up to
    float rounding (checked against transformers' own masked-LM loss in the tests).
    """
    import torch

    enc, layers = parts
    enc.layer = layers[:-1]
    try:
        h = model.base_model(input_ids=x, **kwargs).last_hidden_state
    finally:
        enc.layer = layers
    last = layers[-1]
    sa = last.attention.self
    n_rows, width, _ = h.shape
    nh, dh = sa.num_attention_heads, sa.attention_head_size
    hs = h[rows, pos]
    q = sa.query(hs).view(n_rows, nh, 1, dh)
    k = sa.key(h).view(n_rows, width, nh, dh).transpose(1, 2)
    v = sa.value(h).view(n_rows, width, nh, dh).transpose(1, 2)
    attn_mask = kwargs["attention_mask"].bool()[:, None, None, :] if padded else None
    ctx = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, scale=getattr(sa, "scaling", dh**-0.5))
    a = last.attention.output(ctx.reshape(n_rows, nh * dh), hs)
    return last.output(last.intermediate(a), a)


def _masked_copies(
    batch: list[tuple[int, int]], ids: list, lengths: list[int], pad: int, mask_id: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One row per ``(document, position)`` of ``batch``: the document's ids (padded to the
    batch's widest) with that position masked; its attention mask; the positions; the true ids."""
    docs = sorted({k for k, _ in batch})
    width = max(lengths[k] for k in docs)
    table = np.full((len(docs), width), pad, dtype=np.int64)
    for r, k in enumerate(docs):
        table[r, : lengths[k]] = ids[k]
    row_doc = np.searchsorted(docs, [k for k, _ in batch])
    pos = np.array([s for _, s in batch])
    x = table[row_doc]
    targets = x[np.arange(len(batch)), pos].copy()
    x[np.arange(len(batch)), pos] = mask_id
    mask = (np.arange(width)[None, :] < np.array([lengths[k] for k, _ in batch])[:, None]).astype(np.int64)
    return x, mask, pos, targets


def _masked_nll(model: Any, head: Any, parts: Any, types: bool, x: np.ndarray, mask: np.ndarray, pos: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """The negative log-likelihood (float64) of each row's true id at its masked position: the
    last layer and the MLM head at the masked positions only (``parts``), the MLM head over the
    encoder's output (``head``), or the whole model."""
    import torch

    device = next(model.parameters()).device
    xt = torch.from_numpy(x).to(device)
    kwargs = {"attention_mask": torch.from_numpy(mask).to(device)}
    if types:
        kwargs["token_type_ids"] = torch.zeros_like(xt)
    rows = torch.arange(len(x), device=device)
    pt = torch.from_numpy(pos).to(device)
    if parts is not None:
        logits = head(_masked_hidden(model, parts, xt, kwargs, rows, pt, padded=bool((mask == 0).any())))
    elif head is not None:
        hidden = model.base_model(input_ids=xt, **kwargs).last_hidden_state
        logits = head(hidden[rows, pt])
    else:
        logits = model(input_ids=xt, **kwargs).logits[rows, pt]
    lp = torch.log_softmax(logits.double(), dim=-1)
    return (-lp[rows, torch.from_numpy(targets).to(device)]).cpu().numpy()


def pseudo_log_perplexity(
    texts: Sequence[str],
    model: Any,
    tokenizer: Any,
    *,
    max_length: int = 512,
    special_tokens: bool = False,
    batch_tokens: int | None = None,
    max_rows: int = 512,
    per_token: bool = False,
    shortcut: bool = True,
) -> list[PseudoPerplexity]:
    """Pseudo-log-perplexity of each text (see the module docstring), batched.

    ``texts``: the documents (the reference uses each document's ``text``, without its title);
    ``model``: a ``*ForMaskedLM`` (on any device; its dtype is used, float32 recommended);
    ``tokenizer``: its tokenizer; ``max_length``: tokens per document, special tokens included;
    ``special_tokens``: see the module docstring (default False, as the reference);
    ``batch_tokens``: padded tokens per forward pass (default 4,096 on a CPU, where larger
    batches fall out of the caches and run slower, 16,384 on a GPU; 16,384 tokens of bert-base
    take about 1 GB of activations); ``max_rows``: masked copies per pass at most;
    ``per_token``: also return each scored token's id and NLL; ``shortcut``: for BERT-family
    models, evaluate the last encoder layer and the MLM head only at the masked positions (the
    default; False runs the whole encoder and picks the masked rows, for checking).
    Returns one :class:`PseudoPerplexity` per text, in order.
    """
    import torch

    from sourcebias.core.progress import task

    _check(model, tokenizer, max_length)
    device = next(model.parameters()).device
    if batch_tokens is None:
        batch_tokens = 4096 if device.type == "cpu" else 16384
    if batch_tokens < 1 or max_rows < 1:
        raise ConfigError("batch_tokens and max_rows must be positive")
    ids, cut = encode(texts, tokenizer, max_length=max_length, special_tokens=special_tokens)
    lengths = [len(s) for s in ids]
    nll = [np.zeros(len(_scored_positions(n, special_tokens)), dtype=np.float64) for n in lengths]
    first = [1 if special_tokens else 0 for _ in ids]
    head = _mlm_head(model)
    parts = _last_layer_parts(model) if (shortcut and head is not None) else None
    types = _uses_token_types(tokenizer)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    total = sum(len(v) for v in nll)
    with _EvalMode(model), torch.inference_mode(), task("pseudo-perplexity", total=total, unit="tok") as progress:
        for batch in _batches(lengths, special_tokens, batch_tokens, max_rows):
            x, mask, pos, targets = _masked_copies(batch, ids, lengths, pad, tokenizer.mask_token_id)
            vals = _masked_nll(model, head, parts, types, x, mask, pos, targets)
            for (k, s), v in zip(batch, vals):
                nll[k][s - first[k]] = v
            progress.advance(len(batch))
    return _results(ids, cut, nll, special_tokens, per_token)
