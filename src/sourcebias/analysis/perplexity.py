"""Document perplexity under a language model (Dai et al., KDD 2024, §4.2), cached per model and text.

* **Causal LM** (``lm:NAME``): the mean negative log-likelihood per token of a document's first
  ``max_tokens`` tokens (512, as the papers truncate), each token given the ones before it, one
  forward pass per document (length-sorted batches through the shared
  :class:`~sourcebias.models.scoring.CausalLMScorer`). The first document token is predicted from
  the tokenizer's start token (its end-of-text token when it has none), as lm-evaluation-harness
  does, so every document token is scored.
* **Masked LM** (``mlm:NAME``): pseudo-log-perplexity, each token masked once
  (:mod:`sourcebias.analysis.pseudo_perplexity`).
* **The retriever's own masked LM** (``mlm:from-retriever:SPEC``, SPEC a retriever such as
  ``minilm`` or ``st:NAME_OR_PATH``, or a checkpoint): the same pseudo-log-perplexity with the
  masked-LM head stored in the retriever's checkpoint (:mod:`sourcebias.analysis.mlm_head`), as the
  Perplexity Trap paper measures it; a checkpoint without that head is refused.

Values are "log-perplexities" (mean NLL in nats, not exponentiated), as in the CDC code. Each
document's value is stored in the embedding store under the model's fingerprint (a two-column
"vector": tokens scored, value), so reruns, other analyses and CDC reuse it, an interrupted run
resumes, and progress is shown per batch.

**Which field is scored** (``field``): ``text`` (the default) scores a document's body, as the
papers' code does; ``title+text`` scores the text a retriever sees (title and body joined). On
twin corpora whose twins keep the human title (nfcorpus), the title dilutes the difference
between the sources. The field is part of the scorer's fingerprint, so the store never serves
one field's value for the other, and it is recorded in every result.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from sourcebias.analysis.base import FIELD, SOURCES, SPLIT, Analysis, AnalysisTable, Param, integer, psig, register_analysis, sig, text
from sourcebias.analysis.common import llm_sources, make_result, twin_pairs
from sourcebias.analysis.result import AnalysisResult
from sourcebias.core.errors import ConfigError

#: bump when the definition of a stored value changes
VALUE_VERSION = "nll-v1"

#: the document fields a perplexity (and the text measures of the analyses) can be computed on
FIELDS = ("text", "title+text")
DEFAULT_FIELD = "text"


def check_field(field: str) -> str:
    """``field`` if it is one of :data:`FIELDS`, else a :class:`ConfigError`."""
    if field not in FIELDS:
        raise ConfigError(f"field must be one of {', '.join(FIELDS)}, got '{field}'")
    return field


def field_texts(corpus, field: str = DEFAULT_FIELD) -> list[str]:
    """Per document of ``corpus``, the text of ``field``: ``text`` (the body) or ``title+text``
    (title and body joined, what retrievers index)."""
    return list(corpus.texts) if check_field(field) == "text" else corpus.retrieval_texts()


def parse_lm_spec(spec: str) -> tuple[str, str, dict[str, str]]:
    """``lm:NAME[,key=value...]``, ``mlm:NAME[,...]`` or ``mlm:from-retriever:SPEC[,...]`` ->
    ``(kind, name, options)`` (for ``from-retriever``, ``name`` is ``from-retriever:SPEC``)."""
    kind, sep, rest = spec.partition(":")
    kind = kind.strip().lower()
    if not sep or kind not in ("lm", "mlm") or not rest.strip():
        raise ConfigError(
            "a language model is written lm:NAME (causal), mlm:NAME (masked) or "
            f"mlm:from-retriever:RETRIEVER (the retriever's own masked-LM head), e.g. lm:smollm2; got '{spec}'"
        )
    name, *opts = rest.split(",")
    options: dict[str, str] = {}
    for o in opts:
        k, eq, v = o.partition("=")
        if not eq:
            raise ConfigError(f"{spec}: expected key=value, got '{o}'")
        options[k.strip()] = v.strip()
    return kind, name.strip(), options


class CausalPerplexity:
    """Mean NLL per token of each text under a causal LM; an "encoder" for
    :class:`~sourcebias.models.embedding_store.Embedder` (rows: ``[tokens, value]``)."""

    kind = "lm"

    def __init__(
        self,
        model: str = "smollm2",
        *,
        max_tokens: int = 512,
        batch_size: int = 8,
        device: str | None = None,
        dtype: str | None = None,
        cache_dir: Any = None,
        field: str = DEFAULT_FIELD,
    ):
        from sourcebias.models.llm import resolve_lm

        if max_tokens < 1:
            raise ConfigError(f"max_tokens must be at least 1, got {max_tokens}")
        self.field = check_field(field)
        self.model = model
        self.max_tokens = int(max_tokens)
        self.batch_size = int(batch_size)
        self.device, self.dtype, self.cache_dir = device, dtype, cache_dir
        self.resolved = resolve_lm(model, cache_dir=cache_dir, flag="--model lm:PATH")
        self.name = f"lm:{model}"
        self._scorer = None
        self._fp: str | None = None

    @property
    def scorer(self):
        if self._scorer is None:
            from sourcebias.models.hub import resolve_device
            from sourcebias.models.scoring import CausalLMScorer

            self._scorer = CausalLMScorer.load(
                self.resolved, device=resolve_device(self.device), dtype=self.dtype, cache_dir=self.cache_dir, batch_size=self.batch_size
            )
        return self._scorer

    def context_token(self) -> int:
        tok = self.scorer.tokenizer
        ident = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        if ident is None:
            raise ConfigError(f"the tokenizer of {self.model} has neither a start nor an end-of-text token to condition the first token on")
        return int(ident)

    def token_ids(self, text: str) -> list[int]:
        """The document's first ``max_tokens`` tokens (no special tokens)."""
        return list(self.scorer.tokenizer(text, add_special_tokens=False)["input_ids"])[: self.max_tokens]

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        ctx = self.context_token()
        seqs = [[ctx] + self.token_ids(t) for t in texts]
        lps = self.scorer.sequence_logprobs(seqs)
        return np.array([[len(lp), -float(np.mean(lp)) if len(lp) else np.nan] for lp in lps], dtype=np.float32)

    encode_queries = encode_documents

    def fingerprint(self, role: str) -> str:
        if self._fp is None:
            from sourcebias.models.hub import folder_digest

            ident = {
                "value": VALUE_VERSION,
                "kind": "causal",
                "weights": folder_digest(self.resolved),
                "max_tokens": self.max_tokens,
                "dtype": self.dtype,
                "context": "bos-or-eos",
                "field": self.field,
            }
            self._fp = "ppl-" + hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]
        return self._fp

    def config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "class": "CausalPerplexity",
            "model": self.model,
            "resolved": self.resolved,
            "max_tokens": self.max_tokens,
            "field": self.field,
            "value": "mean negative log-likelihood per token (nats), first token conditioned on the start (or end-of-text) token",
            "dtype": self.dtype,
        }


class MaskedPseudoPerplexity:
    """Pseudo-log-perplexity of each text under a masked LM (each token masked once, batched:
    :func:`sourcebias.analysis.pseudo_perplexity.pseudo_log_perplexity`); an "encoder" for the
    embedding store like :class:`CausalPerplexity`. Default model ``bert-base-uncased`` (the CDC
    reference's), no special tokens, 512 tokens."""

    kind = "mlm"

    def __init__(
        self,
        model: str = "bert-base-uncased",
        *,
        max_tokens: int = 512,
        batch_size: int = 8,
        device: str | None = None,
        special_tokens: bool = False,
        field: str = DEFAULT_FIELD,
    ):
        from sourcebias.models.hub import resolve_model

        self.field = check_field(field)
        self.model = model
        self.max_tokens = int(max_tokens)
        self.batch_size = int(batch_size)
        self.device = device
        self.special_tokens = special_tokens
        self.resolved = resolve_model(model, what="masked language model", flag="--model mlm:PATH")
        self.name = f"mlm:{model}"
        self._loaded = None
        self._fp: str | None = None

    def _load(self):
        if self._loaded is None:
            from sourcebias.analysis.pseudo_perplexity import load_masked_lm

            self._loaded = load_masked_lm(self.resolved, device=self.device)
        return self._loaded

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        from sourcebias.analysis.pseudo_perplexity import pseudo_log_perplexity

        model, tok = self._load()
        res = pseudo_log_perplexity(list(texts), model, tok, max_length=self.max_tokens, special_tokens=self.special_tokens)
        return np.array([[r.tokens, r.value] for r in res], dtype=np.float32)

    encode_queries = encode_documents

    def fingerprint(self, role: str) -> str:
        if self._fp is None:
            from sourcebias.models.hub import folder_digest

            ident = {
                "value": VALUE_VERSION,
                "kind": "masked",
                "weights": folder_digest(self.resolved),
                "max_tokens": self.max_tokens,
                "special_tokens": self.special_tokens,
                "field": self.field,
            }
            self._fp = "pppl-" + hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]
        return self._fp

    def config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "class": "MaskedPseudoPerplexity",
            "model": self.model,
            "resolved": self.resolved,
            "max_tokens": self.max_tokens,
            "special_tokens": self.special_tokens,
            "field": self.field,
            "value": "mean pseudo negative log-likelihood per token (nats), each token masked once",
        }


#: the model name of ``mlm:from-retriever:SPEC``
FROM_RETRIEVER = "from-retriever"


class RetrieverPseudoPerplexity(MaskedPseudoPerplexity):
    """Pseudo-log-perplexity under a retriever's own masked-LM head (``mlm:from-retriever:SPEC``):
    the checkpoint the retriever ``SPEC`` resolves to, its transformer folder and the head weights
    stored there (:func:`sourcebias.analysis.mlm_head.find_head`; refused without one), scored as
    :class:`MaskedPseudoPerplexity` scores ``mlm:NAME``."""

    def __init__(
        self, retriever: str, *, max_tokens: int = 512, batch_size: int = 8, device: str | None = None, special_tokens: bool = False, field: str = DEFAULT_FIELD
    ):
        from sourcebias.analysis.mlm_head import find_head

        self.field = check_field(field)
        self.model = f"{FROM_RETRIEVER}:{retriever}"
        self.max_tokens = int(max_tokens)
        self.batch_size = int(batch_size)
        self.device = device
        self.special_tokens = special_tokens
        self.head = find_head(retriever)
        self.resolved = self.head.folder
        self.name = f"mlm:{self.model}"
        self._loaded = None
        self._fp: str | None = None

    def _load(self):
        if self._loaded is None:
            from sourcebias.analysis.mlm_head import load_retriever_mlm

            self._loaded = load_retriever_mlm(self.head, device=self.device)
        return self._loaded

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        cfg.update({"class": "RetrieverPseudoPerplexity", "head": self.head.config()})
        return cfg


def _split_retriever_options(name: str, opts: dict[str, str], allowed: set[str]) -> tuple[str, dict[str, str]]:
    """For ``mlm:from-retriever:SPEC,...``: options that are not the scorer's belong to the retriever
    spec (``minilm,path=DIR``), and go back into it."""
    extra = [f"{k}={v}" for k, v in opts.items() if k not in allowed]
    spec = name.partition(":")[2].strip()
    if not spec:
        raise ConfigError("mlm:from-retriever needs a retriever: mlm:from-retriever:minilm, mlm:from-retriever:st:PATH")
    return ",".join([spec, *extra]), {k: v for k, v in opts.items() if k in allowed}


def build_lm_scorer(spec: str, *, batch_size: int | None = None, device: str | None = None, cache_dir: Any = None, field: str = DEFAULT_FIELD):
    """A cached-value "encoder" for ``lm:NAME``, ``mlm:NAME`` or ``mlm:from-retriever:SPEC``
    (options: ``max_tokens``, ``dtype``, ``batch_size``, ``special_tokens``) that scores a
    document's ``field`` (``text`` or ``title+text``; part of its fingerprint)."""
    kind, name, opts = parse_lm_spec(spec)
    allowed = {"max_tokens", "dtype", "batch_size"} if kind == "lm" else {"max_tokens", "batch_size", "special_tokens"}
    retriever = None
    if kind == "mlm" and name.split(":", 1)[0].strip().lower() == FROM_RETRIEVER:
        retriever, opts = _split_retriever_options(name, opts, allowed)
    unknown = set(opts) - allowed
    if unknown:
        raise ConfigError(f"{spec}: unknown option(s) {', '.join(sorted(unknown))}; options: {', '.join(sorted(allowed))}")
    try:
        max_tokens = int(opts.get("max_tokens", 512))
        bs = int(opts.get("batch_size", batch_size or 8))
    except ValueError:
        raise ConfigError(f"{spec}: max_tokens and batch_size are integers") from None
    if kind == "lm":
        return CausalPerplexity(name, max_tokens=max_tokens, batch_size=bs, device=device, dtype=opts.get("dtype"), cache_dir=cache_dir, field=field)
    special = opts.get("special_tokens", "false").lower() in ("1", "true", "yes")
    if retriever is not None:
        return RetrieverPseudoPerplexity(retriever, max_tokens=max_tokens, batch_size=bs, device=device, special_tokens=special, field=field)
    return MaskedPseudoPerplexity(name, max_tokens=max_tokens, batch_size=bs, device=device, special_tokens=special, field=field)


def document_values(corpus, scorer, *, cache_dir: Any = None, unique: bool = True, positions: Sequence[int] | None = None):
    """``(tokens, value)`` arrays, one entry per document of ``corpus`` (or per position of
    ``positions``), of the scorer's field (``scorer.field``: the text, or title and text joined),
    each distinct text computed once and cached on disk (see :class:`Embedder`)."""
    from sourcebias.models.embedding_store import Embedder

    texts = field_texts(corpus, getattr(scorer, "field", DEFAULT_FIELD))
    if positions is not None:
        texts = [texts[i] for i in positions]
    embedder = Embedder(scorer, cache_dir=cache_dir, batch_size=scorer.batch_size, name=f"{scorer.name} ({scorer.field}): perplexity")
    rows = embedder.embed(texts, "document")
    return rows[:, 0].astype(np.int64), rows[:, 1].astype(np.float64), embedder.stats


def lm_values(corpus, lm: str, *, field: str = "text", options: Mapping[str, Any] | None = None):
    """The LM scorer of ``lm`` (``lm:NAME``, ``mlm:NAME``, ``mlm:from-retriever:SPEC``) built with
    the model options (``device``, ``batch_size``, ``cache_dir``; any other key is the encoder's,
    and left out here), and per document of ``corpus`` its ``field``'s ``(tokens, values)`` with
    the store's statistics, through the store in ``cache_dir``: ``(scorer, tokens, values, stats)``."""
    opts = dict(options or {})
    scorer = build_lm_scorer(lm, batch_size=opts.get("batch_size"), device=opts.get("device"), cache_dir=opts.get("cache_dir"), field=field)
    tokens, values, stats = document_values(corpus, scorer, cache_dir=opts.get("cache_dir"))
    return scorer, tokens, values, stats


# -- the analysis ----------------------------------------------------------------------------------
def perplexity(
    dataset,
    lm: str = "lm:smollm2",
    *,
    sources: Sequence[str] | None = None,
    field: str = "text",
    options: Mapping[str, Any] | None = None,
) -> AnalysisResult:
    """Log-perplexity of every document's ``field`` (``text``, the default, as the papers' code;
    or ``title+text``) (``lm:`` causal, ``mlm:`` masked pseudo-perplexity) under the LM built with
    the model ``options`` (``device``, ``batch_size``, ``cache_dir``); per source mean and
    spread; over twin pairs the mean difference (LLM − human) with a paired t-test, a Wilcoxon
    signed-rank test and the paired effect size. A document without a value (an empty field)
    is left out, and counted (``left_out``)."""
    import pandas as pd

    from sourcebias.analysis.effects import compare_paired, describe_finite

    corpus = dataset.corpus
    scorer, tokens, values, stats = lm_values(corpus, lm, field=field, options=options)
    table = pd.DataFrame({"doc_id": corpus.doc_ids, "source": corpus.source_list(), "tokens": tokens, "value": values})
    summary: dict[str, Any] = {
        "model": lm,
        "field": field,
        "value": "mean negative log-likelihood per token (nats)",
        "per_source": {},
        "pairs": {},
        "cache": stats,
    }
    for s in dataset.sources:
        summary["per_source"][s] = describe_finite(values[corpus.positions_of_source(s)])
    human = dataset.human_source
    for llm in llm_sources(dataset, sources):
        hp, lp, _ = twin_pairs(corpus, human, llm)
        ok = np.isfinite(values[hp]) & np.isfinite(values[lp])
        if ok.sum() < 2:
            summary["pairs"][llm] = {"n": int(ok.sum()), "left_out": int((~ok).sum()), "note": "undefined: fewer than 2 twin pairs with a value in both copies"}
            continue
        cmp = compare_paired(values[lp][ok], values[hp][ok], names=(llm, human))
        cmp["share_llm_lower"] = float(np.mean(values[lp][ok] < values[hp][ok]))
        cmp["left_out"] = int((~ok).sum())
        summary["pairs"][llm] = cmp
    return make_result(
        "perplexity",
        dataset,
        {"model": lm, "field": field, "max_tokens": getattr(scorer, "max_tokens", None)},
        {"lm": scorer.config()},
        {"perplexity": table},
        summary,
    )


class Perplexity(Analysis):
    """``sourcebias analyze perplexity``."""

    name = "perplexity"
    help = "Log-perplexity of every document and the paired LLM − human difference (Dai et al., KDD 2024, §4.2)."
    params: ClassVar[Mapping[str, Param]] = {
        "model": Param(
            str,
            "lm:smollm2",
            "lm:NAME (causal, e.g. lm:smollm2), mlm:NAME (masked, e.g. mlm:bert-base-uncased) or mlm:from-retriever:RETRIEVER (the "
            "masked-LM head in a retriever's checkpoint, e.g. mlm:from-retriever:st:DIR; refused without one); options ,max_tokens=512.",
        ),
        "field": FIELD,
        "source": SOURCES,
        "split": SPLIT,
    }

    def run(self, dataset, params, options):
        return perplexity(dataset, params["model"], sources=params["source"], field=params["field"], options=options)

    def tables(self, result) -> list[AnalysisTable]:
        s = result.summary
        per_source = [{"source": src, **d} for src, d in s["per_source"].items()]
        pairs = [{"source": src, **c} for src, c in s["pairs"].items()]
        value = s.get("value", "")
        return [
            AnalysisTable(
                "perplexity_sources",
                "Log-perplexity per source",
                [text("source", "source"), sig("mean", "mean"), sig("std", "std"), integer("n", "n"), integer("left_out", "left out")],
                per_source,
                value,
            ),
            AnalysisTable(
                "perplexity_pairs",
                "Twin pairs: LLM − human",
                [
                    text("source", "LLM source"),
                    sig("mean_difference", "mean difference"),
                    sig("d_z", "d_z"),
                    psig("paired_p", "paired t p"),
                    psig("wilcoxon_p", "Wilcoxon p"),
                    integer("n", "n"),
                    integer("left_out", "left out"),
                ],
                pairs,
                "Over twin pairs with a value in both copies.",
            ),
        ]

    def notes(self, result) -> list[str]:
        return [f"pairs {src} − human: {c['note']}" for src, c in result.summary["pairs"].items() if "mean_difference" not in c and c.get("note")]

    def draw(self, result, out: Path) -> dict[str, Path]:
        from sourcebias.analysis.draw import draw_perplexity

        return draw_perplexity(result, out)


register_analysis(Perplexity())
