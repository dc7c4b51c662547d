"""Zero-shot criteria of LLM text from a causal LM's next-token distributions, one forward pass.

For a text ``x`` of tokens ``x_1 .. x_n`` (each conditioned on the ones before it, the first on the
tokenizer's start token, as :mod:`sourcebias.analysis.perplexity` does) a *scoring* model S and a
*reference* model R give at each position ``t`` the log-likelihood ``ll_t = log p_S(x_t | x_<t)``
and, over the whole vocabulary, the mean and variance of ``log p_S`` under R's distribution::

    μ_t = Σ_v p_R(v | x_<t) log p_S(v | x_<t)
    σ²_t = Σ_v p_R(v | x_<t) (log p_S(v | x_<t))² − μ_t²

Stored per document (in the embedding store, by content): ``[tokens, Σ ll_t, Σ μ_t, Σ σ²_t]``.

* **Fast-DetectGPT**, analytic criterion (Bao et al., ICLR 2024, Eq. 5 with the sampling and the
  scoring model the same LM, S = R): ``(Σ ll_t − Σ μ_t) / sqrt(Σ σ²_t)`` — the normalised
  conditional probability curvature; LLM text lies above the expected log-likelihood of the
  model's own samples. Higher: more likely LLM.
* **Binoculars** (Hans et al., ICML 2024): ``log PPL_S(x) / X-PPL_{R,S}(x)`` with ``log PPL =
  −Σ ll_t / n`` and the cross-perplexity ``X-PPL = −Σ μ_t / n`` (R = the observer, whose
  distribution weighs S's = the performer's log-probabilities, as the authors' code does); low:
  machine. We report its negative, so that higher means more likely LLM, as for every detector.
  The two models must share a tokenizer (checked: identical vocabularies).

Why by hand: neither paper's code is a library; the few lines of arithmetic run on the logits
of :meth:`sourcebias.models.scoring.CausalLMScorer.next_token_logits`.
"""

from __future__ import annotations

import hashlib
import json
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.core.moved import Replaced, moved
from sourcebias.detect.base import DetectorRequest, EngineKind, ZeroShotDetector, register_detector

#: bump when the stored values change meaning
VALUE_VERSION = "criteria-v1"


def token_statistics(logits_score, logits_ref, lengths: Sequence[int], targets) -> np.ndarray:
    """Per row: ``[tokens, Σ ll_t, Σ μ_t, Σ σ²_t]`` (float64) from ``[batch, width, vocab]``
    logits of the scoring and the reference model (the same tensor for one model), the number of
    scored positions of each row and the ``[batch, width]`` target token ids."""
    import torch

    lp = torch.log_softmax(logits_score.double(), dim=-1)
    pr = lp.exp() if logits_ref is logits_score else torch.softmax(logits_ref.double(), dim=-1)
    ll = lp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    mean = (pr * lp).sum(-1)
    var = (pr * lp.square()).sum(-1) - mean.square()
    width = ll.shape[1]
    mask = (torch.arange(width).unsqueeze(0) < torch.tensor(list(lengths)).unsqueeze(1)).to(ll.device)
    out = [torch.tensor([float(n) for n in lengths], dtype=torch.float64)]
    out += [(v * mask).sum(-1).cpu() for v in (ll, mean, var)]
    return torch.stack(out, dim=1).numpy()


def fast_detectgpt(rows: np.ndarray) -> np.ndarray:
    """The analytic Fast-DetectGPT criterion of stored rows (NaN for a text of no token)."""
    rows = np.asarray(rows, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(rows[:, 0] > 0, (rows[:, 1] - rows[:, 2]) / np.sqrt(rows[:, 3]), np.nan)


def binoculars(rows: np.ndarray) -> np.ndarray:
    """Minus the Binoculars score, ``−log PPL / X-PPL`` (higher: more likely LLM)."""
    rows = np.asarray(rows, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(rows[:, 0] > 0, -(rows[:, 1] / rows[:, 2]), np.nan)


#: deprecated names (core/moved.py): the registry's LM-criterion kinds, and their criteria
_MOVED = {
    "CRITERIA": Replaced("sourcebias.detect.detector_kinds()", lambda: tuple(_criterion_kinds())),
    "SCORES": Replaced("sourcebias.detect.detector_kinds()", lambda: {k: v.criterion for k, v in _criterion_kinds().items()}),
}
__getattr__ = moved(__name__, _MOVED)


def _criterion_kinds() -> dict[str, LMCriterionKind]:
    from sourcebias.detect.base import detector_kinds

    return {k: v for k, v in detector_kinds().items() if isinstance(v, LMCriterionKind)}


class LMCriterion:
    """The per-document rows of :func:`token_statistics` under a scoring LM (and a reference LM
    for Binoculars); an "encoder" for :class:`~sourcebias.models.embedding_store.Embedder`, so the
    rows are batched, cached by content and resumable.

    Args:
        criterion: a registered :class:`LMCriterionKind` (``fast-detectgpt``, ``binoculars``).
        score_model: the scoring LM (``smollm2``, ``gemma3-270m``, a folder, a GGUF file).
        reference_model: Binoculars' observer (required for it; Fast-DetectGPT uses S = R).
        max_tokens: the first tokens of each text scored (texts are truncated).
    """

    kind = "lm-criterion"

    def __init__(
        self,
        criterion: str,
        score_model: str,
        *,
        reference_model: str | None = None,
        max_tokens: int = 128,
        batch_size: int = 8,
        device: str | None = None,
        dtype: str | None = None,
        cache_dir: Any = None,
    ):
        from sourcebias.models.llm import resolve_lm

        kinds = _criterion_kinds()
        if criterion not in kinds:
            raise ConfigError(f"unknown criterion '{criterion}'; criteria: {', '.join(kinds)}")
        self.criterion_kind = kinds[criterion]
        if self.criterion_kind.models_needed == 2 and not reference_model:
            raise ConfigError(f"{criterion} needs two models that share a tokenizer: {self.criterion_kind.usage.split('[')[0]}")
        if max_tokens < 2:
            raise ConfigError(f"max_tokens must be at least 2, got {max_tokens}")
        self.criterion, self.score_model, self.reference_model = criterion, score_model, reference_model if self.criterion_kind.models_needed == 2 else None
        self.max_tokens, self.batch_size = int(max_tokens), int(batch_size)
        self.device, self.dtype, self.cache_dir = device, dtype, cache_dir
        self.resolved = [resolve_lm(m, cache_dir=cache_dir, flag="--detector") for m in filter(None, (score_model, self.reference_model))]
        self.name = f"{criterion}:{score_model}" + (f"+{self.reference_model}" if self.reference_model else "")
        self._scorers: list[Any] | None = None
        self._fp: str | None = None

    @property
    def scorers(self) -> list[Any]:
        """The loaded scorer(s): ``[S]`` or ``[S, R]`` (vocabularies checked equal)."""
        if self._scorers is None:
            from sourcebias.models.hub import resolve_device
            from sourcebias.models.scoring import CausalLMScorer

            self._scorers = [
                CausalLMScorer.load(p, device=resolve_device(self.device), dtype=self.dtype, cache_dir=self.cache_dir, batch_size=self.batch_size)
                for p in self.resolved
            ]
            if len(self._scorers) == 2 and self._scorers[0].tokenizer.get_vocab() != self._scorers[1].tokenizer.get_vocab():
                a, b = (len(s.tokenizer) for s in self._scorers)
                raise ConfigError(
                    f"binoculars needs two models that share a tokenizer; {self.score_model} ({a:,} tokens) and {self.reference_model} ({b:,} tokens) do not"
                )
        return self._scorers

    def token_ids(self, text: str) -> list[int]:
        """The context token, then the text's first ``max_tokens`` tokens."""
        tok = self.scorers[0].tokenizer
        ctx = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        if ctx is None:
            raise ConfigError(f"the tokenizer of {self.score_model} has neither a start nor an end-of-text token")
        return [int(ctx)] + list(tok(text, add_special_tokens=False)["input_ids"])[: self.max_tokens]

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        seqs = [self.token_ids(t) for t in texts]
        out = np.zeros((len(seqs), 4), dtype=np.float64)
        score = self.scorers[0]
        for idx in score.batches([len(s) for s in seqs]):
            batch = [seqs[i] for i in idx]
            if max(len(s) for s in batch) < 2:
                continue  # no token to score: rows stay 0 tokens (NaN scores)
            logits_s = score.next_token_logits(batch)
            logits_r = self.scorers[1].next_token_logits(batch) if len(self.scorers) == 2 else logits_s
            width = logits_s.shape[1]
            targets = torch.zeros((len(batch), width), dtype=torch.long, device=logits_s.device)
            for r, s in enumerate(batch):
                targets[r, : len(s) - 1] = torch.tensor(s[1:], dtype=torch.long)
            out[idx] = token_statistics(logits_s, logits_r, [len(s) - 1 for s in batch], targets)
        return out

    encode_queries = encode_documents

    def scores(self, rows: np.ndarray) -> np.ndarray:
        """The criterion of stored rows (higher: more likely LLM)."""
        return self.criterion_kind.criterion(rows)

    def fingerprint(self, role: str) -> str:
        if self._fp is None:
            from sourcebias.models.hub import folder_digest

            ident = {
                "value": VALUE_VERSION,
                "weights": [folder_digest(p) for p in self.resolved],
                "max_tokens": self.max_tokens,
                "dtype": self.dtype,
                "context": "bos-or-eos",
            }
            self._fp = "crit-" + hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]
        return self._fp

    def config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "class": "LMCriterion",
            "criterion": self.criterion,
            "score_model": self.score_model,
            "reference_model": self.reference_model,
            "resolved": self.resolved,
            "max_tokens": self.max_tokens,
            "dtype": self.dtype,
            "value": "tokens, Σ log p_S(x_t), Σ E_R[log p_S], Σ Var_R[log p_S] (first token conditioned on the start or end-of-text token)",
        }


# -- the kinds ---------------------------------------------------------------------------------
_LM_OPTIONS = {
    "max_tokens": "the first tokens of each text scored (default 128)",
    "batch_size": "texts per forward pass (default: --batch-size, else 8)",
    "dtype": "the models' dtype (float32, bfloat16, ...)",
}


def _lm_name(spec: str, text: str) -> str:
    kind, sep, name = text.strip().partition(":")
    if kind.lower() != "lm" or not sep or not name.strip():
        raise ConfigError(f"{spec}: a language model is written lm:NAME (e.g. lm:smollm2, lm:gemma3-270m, lm:PATH), got '{text}'")
    return name.strip()


class LMCriterionKind(EngineKind):
    """A criterion of the rows of :func:`token_statistics` under ``models`` causal LMs (1: the
    scoring model is also the reference; 2: ``lm:PERFORMER+lm:OBSERVER``); the rows are stored in
    the embedding store, so every such kind shares them. Implement :meth:`criterion`."""

    #: how many LMs the spec names
    models_needed: int = 1
    options = _LM_OPTIONS

    @abstractmethod
    def criterion(self, rows: np.ndarray) -> np.ndarray:
        """The score of stored rows (higher: more likely LLM); NaN for a text of no token."""

    def build(self, request: DetectorRequest) -> ZeroShotDetector:
        spec, opts = request.spec, request.options
        names = [_lm_name(spec, p) for p in request.head.split("+")]
        if len(names) != self.models_needed:
            how = "one model" if self.models_needed == 1 else f"{self.models_needed} models that share a tokenizer".replace("2 ", "two ")
            raise ConfigError(f"{spec}: {self.name} takes {how} ({self.usage.split('[')[0]})")
        engine = LMCriterion(
            self.name,
            names[0],
            reference_model=names[1] if len(names) == 2 else None,
            max_tokens=request.integer("max_tokens", 128),
            batch_size=request.integer("batch_size", request.batch_size or 8),
            device=request.device,
            dtype=opts.get("dtype"),
            cache_dir=request.cache_dir,
        )
        return ZeroShotDetector(spec, self.name, engine, opts, request.cache_dir)

    def score(self, detector: ZeroShotDetector, texts: list[str]) -> np.ndarray:
        from sourcebias.models.embedding_store import Embedder

        engine = detector.engine
        embedder = Embedder(engine, cache_dir=detector.cache_dir, batch_size=engine.batch_size, name=detector.spec)
        return engine.scores(embedder.embed(texts, "document"))

    def models(self, detector: ZeroShotDetector) -> dict[str, Any]:
        return detector.engine.config()


class FastDetectGPT(LMCriterionKind):
    """Fast-DetectGPT's analytic criterion under one causal LM (:func:`fast_detectgpt`)."""

    name = "fast-detectgpt"
    usage = "fast-detectgpt:lm:NAME[,max_tokens=N,batch_size=B,dtype=D]"
    example = "fast-detectgpt:lm:NAME"
    description = "Fast-DetectGPT analytic criterion"
    reference = "Bao et al., ICLR 2024"

    def criterion(self, rows: np.ndarray) -> np.ndarray:
        return fast_detectgpt(rows)


class Binoculars(LMCriterionKind):
    """Binoculars with two LMs that share a tokenizer (:func:`binoculars`)."""

    name = "binoculars"
    usage = "binoculars:lm:PERFORMER+lm:OBSERVER[,max_tokens=N,batch_size=B,dtype=D]"
    example = "binoculars:lm:A+lm:B"
    description = "minus the Binoculars score"
    reference = "Hans et al., ICML 2024"
    models_needed = 2

    def criterion(self, rows: np.ndarray) -> np.ndarray:
        return binoculars(rows)


register_detector(FastDetectGPT())
register_detector(Binoculars())
