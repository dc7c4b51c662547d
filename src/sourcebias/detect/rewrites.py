"""Rewrites of texts by an LLM, cached, and the rewrite-distance criterion (Raidar).

**Raidar** (Mao et al., "Raidar: geneRative AI Detection viA Rewriting", ICLR 2024): asked to
rewrite a text, an LLM changes human text more than LLM text. The score of a text is
``1 − d(x, rewrite(x)) / max(|x|, |rewrite(x)|)``, ``d`` the Levenshtein distance over
whitespace-separated lower-cased words (NLTK's ``edit_distance``), ``|·|`` in words: the
normalised similarity; higher means less rewritten, more likely LLM. (The paper's detectors
feed such edit-distance features to a classifier; the normalised distance alone is their
zero-shot form.) Texts are cut to their first ``max_words`` words before rewriting, to bound
the cost.

**Rewrites** go through any :mod:`sourcebias.generation` backend (a local transformers model or
an OpenAI-compatible server), with greedy decoding (deterministic, so a rewrite is a function of
the text and can be cached), and are cleaned by the generation package's post-processing
(:func:`sourcebias.generation.clean_output`: echoed prompts, "Here is the rewritten text:"). Each
finished rewrite is appended as one flushed JSONL line to
``<cache>/rewrites/<fingerprint>.jsonl`` (fingerprint: model, prompt, decoding, ``max_words``),
so a kill loses at most the rewrite in flight, and a rerun (or the audit's self-twins, or
another detector) reuses every rewrite already made. A rewrite the post-processing flags
(refused, empty, truncated) is kept with its status; its score is NaN and reported as such.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.detect.base import DetectorRequest, EngineKind, ZeroShotDetector, register_detector

#: Raidar's prompt "Rewrite this for me" (one of the paper's seven rewriting prompts)
RAIDAR_TEMPLATE = "Rewrite this for me: {text}"
VALUE_VERSION = "rewrite-v1"


def cut_words(text: str, max_words: int) -> str:
    """The first ``max_words`` whitespace-separated words of ``text``, joined by spaces."""
    return " ".join(text.split()[:max_words])


def rewrite_similarity(text: str, rewrite: str) -> float:
    """``1 − Levenshtein(words) / max(word counts)`` over lower-cased words (NaN when both are
    empty)."""
    from nltk.metrics.distance import edit_distance

    a, b = text.lower().split(), rewrite.lower().split()
    n = max(len(a), len(b))
    return float("nan") if n == 0 else 1.0 - edit_distance(a, b) / n


class Rewriter:
    """Greedy rewrites of texts by a generation backend, cached by content (see the module docs).

    Args:
        backend: a :mod:`sourcebias.generation.backends` backend.
        prompt: a :class:`~sourcebias.generation.PromptTemplate` (default: Raidar's).
        max_words: texts are cut to this many words first.
        cache_dir: root of the cache (default ``$SOURCEBIAS_CACHE``).
    """

    def __init__(self, backend: Any, *, prompt: Any = None, max_words: int = 96, max_new_tokens: int = 256, cache_dir: Any = None):
        from sourcebias.core.cache import default_cache_dir
        from sourcebias.generation import PromptTemplate

        if max_words < 1:
            raise ConfigError(f"max_words must be at least 1, got {max_words}")
        self.backend = backend
        self.prompt = prompt or PromptTemplate("raidar", RAIDAR_TEMPLATE)
        self.max_words, self.max_new_tokens = int(max_words), int(max_new_tokens)
        self.path = Path(cache_dir or default_cache_dir()) / "rewrites" / f"{self.fingerprint()}.jsonl"
        self._done: dict[str, dict[str, Any]] | None = None

    def fingerprint(self) -> str:
        ident = {"value": VALUE_VERSION, "backend": self.backend.kind, "model": self.backend.model, "template": self.prompt.template, "system": self.prompt.system,
                 "max_words": self.max_words, "max_new_tokens": self.max_new_tokens, "decoding": "greedy"}  # fmt: skip
        return "rw-" + hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]

    @staticmethod
    def key(text: str) -> str:
        return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()

    def cached(self) -> dict[str, dict[str, Any]]:
        """Key -> record of every rewrite in the cache file."""
        if self._done is None:
            from sourcebias.data.jsonl import iter_jsonl, repair_torn_tail

            self._done = {}
            if self.path.is_file():
                repair_torn_tail(self.path)
                self._done = {rec["key"]: rec for _, rec in iter_jsonl(self.path)}
        return self._done

    def rewrite(self, texts: Sequence[str], task: Any = None) -> list[dict[str, Any]]:
        """Per text: ``{"key", "input", "text", "status"}`` (``input``: the cut text), each made
        once and appended to the cache as it finishes. ``task`` advances by one per text."""
        from sourcebias.data.jsonl import JsonlAppender

        cut = [cut_words(t, self.max_words) for t in texts]
        done = self.cached()
        todo = list(dict.fromkeys(c for c in cut if self.key(c) not in done))
        if todo:
            with JsonlAppender(self.path) as out:
                for c in todo:
                    rec = self._one(c)
                    out.write(rec)
                    done[rec["key"]] = rec
                    if task is not None:
                        task.advance(1)
        return [done[self.key(c)] for c in cut]

    def _one(self, text: str) -> dict[str, Any]:
        from sourcebias.generation import clean_output
        from sourcebias.generation.backends import GenerationRequest

        req = GenerationRequest(
            key=self.key(text),
            messages=self.prompt.messages(text, ""),
            prompt=self.prompt.render(text, ""),
            max_tokens=self.max_new_tokens,
            temperature=0.0,
            seed=0,
        )
        res = self.backend.generate(req)
        cleaned = clean_output(res.text, finish_reason=res.finish_reason, source_text=text, template=self.prompt.template, answer_marker=None)
        return {"key": self.key(text), "input": text, "text": cleaned.text, "status": cleaned.status, "reason": cleaned.reason}

    def describe(self) -> dict[str, Any]:
        backend = {
            "backend": self.backend.kind,
            "model": self.backend.model,
            "device": getattr(self.backend, "device", None),
        }  # not describe(): it may convert a GGUF into another cache
        return {"backend": backend, "prompt": self.prompt.template, "system": self.prompt.system, "max_words": self.max_words, "max_new_tokens": self.max_new_tokens,
                "decoding": "greedy (temperature 0)", "cache": str(self.path)}  # fmt: skip


def similarities(records: Sequence[dict[str, Any]]) -> np.ndarray:
    """Raidar's score of each rewrite record (NaN where the rewrite was flagged)."""
    return np.array([rewrite_similarity(r["input"], r["text"]) if r["status"] == "ok" else np.nan for r in records], dtype=np.float64)


class Raidar(EngineKind):
    """Raidar's rewrite similarity, rewrites by a local model or an OpenAI-compatible server
    (API key from ``$SOURCEBIAS_API_KEY``)."""

    name = "raidar"
    usage = "raidar:MODEL[,base_url=URL,max_words=N,max_new_tokens=N,prompt=NAME_OR_FILE]"
    example = "raidar:MODEL"
    description = "Raidar rewrite similarity 1 − word edit distance / max length"
    reference = "Mao et al., ICLR 2024"
    options: ClassVar[Mapping[str, str]] = {
        "base_url": "an OpenAI-compatible server that rewrites (default: the model runs here)",
        "max_words": "texts are cut to this many words first (default 96)",
        "max_new_tokens": "the longest rewrite, in tokens (default 256)",
        "prompt": "a generation prompt name or file (default: Raidar's 'Rewrite this for me')",
    }

    def build(self, request: DetectorRequest) -> ZeroShotDetector:
        spec, model, opts = request.spec, request.head, request.options
        if not model:
            raise ConfigError(f"{spec}: name the rewriting model, e.g. raidar:smollm2")
        if opts.get("base_url"):
            from sourcebias.generation.backends import OpenAIBackend

            backend: Any = OpenAIBackend([opts["base_url"]], model)
        else:
            from sourcebias.generation.backends import LocalBackend

            backend = LocalBackend(model, device=request.device, cache_dir=request.cache_dir, threads=request.threads)
        prompt = None
        if opts.get("prompt"):
            from sourcebias.generation import load_prompt

            prompt = load_prompt(opts["prompt"])
        engine = Rewriter(
            backend,
            prompt=prompt,
            max_words=request.integer("max_words", 96),
            max_new_tokens=request.integer("max_new_tokens", 256),
            cache_dir=request.cache_dir,
        )
        return ZeroShotDetector(spec, self.name, engine, opts, request.cache_dir)

    def score(self, detector: ZeroShotDetector, texts: list[str]) -> np.ndarray:
        from sourcebias.core import progress

        engine = detector.engine
        todo = len({engine.key(cut_words(t, engine.max_words)) for t in texts} - set(engine.cached()))
        with progress.task(f"{detector.spec}: rewriting {todo:,} texts", total=todo, unit="texts") as t:
            return similarities(engine.rewrite(texts, task=t))

    def models(self, detector: ZeroShotDetector) -> dict[str, Any]:
        return detector.engine.describe()


register_detector(Raidar())
