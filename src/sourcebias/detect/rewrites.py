"""Rewrites of texts by an LLM, cached, and the rewrite-distance criterion (Raidar).

**Raidar** (Mao et al., "Raidar: geneRative AI Detection viA Rewriting", ICLR 2024): asked to
rewrite a text, an LLM changes human text more than LLM text. The score of a text is
``1 − d(x, rewrite(x)) / max(|x|, |rewrite(x)|)``, ``d`` the Levenshtein distance over
whitespace-separated lower-cased words (NLTK's ``edit_distance``), ``|·|`` in words: the
normalised similarity; higher means less rewritten, more likely LLM. (The paper's detectors
feed such edit-distance features to a classifier; the normalised distance alone is their
zero-shot form.) Texts are cut to their first ``max_words`` words before rewriting, to bound
the cost.

**Rewrites** are asked of a model through :mod:`sourcebias.llmcalls` (a local model or an
OpenAI-compatible server, named as everywhere: ``raidar:smollm2``, ``raidar:openai:M@URL``), with
greedy decoding (deterministic, so a rewrite is a function of the text), and cleaned by the
generation package's post-processing (:func:`sourcebias.generation.clean_output`: echoed prompts,
"Here is the rewritten text:"). Each answer is stored in the answer store as it arrives
(:mod:`sourcebias.llmcalls.cache`: a call's key holds the model, the prompt, ``max_new_tokens`` and the
cut text), so a kill loses at most the rewrite in flight, and a rerun (or the audit's self-twins, or
another detector) reuses every rewrite already made. A rewrite the post-processing flags (refused,
empty, truncated) keeps its status; its score is NaN and reported as such.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.detect.base import DetectorRequest, EngineKind, ZeroShotDetector, register_detector

#: Raidar's prompt "Rewrite this for me" (one of the paper's seven rewriting prompts)
RAIDAR_TEMPLATE = "Rewrite this for me: {text}"


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
    """Greedy rewrites of texts by an LLM client, stored as answers (see the module docs).

    Args:
        client: a :func:`sourcebias.llmcalls.open_client` client.
        prompt: a :class:`~sourcebias.generation.PromptTemplate` (default: Raidar's).
        max_words: texts are cut to this many words first.
        max_new_tokens: the longest rewrite, in tokens.
    """

    def __init__(self, client: Any, *, prompt: Any = None, max_words: int = 96, max_new_tokens: int = 256):
        from sourcebias.generation import PromptTemplate

        if max_words < 1:
            raise ConfigError(f"max_words must be at least 1, got {max_words}")
        self.client = client
        self.prompt = prompt or PromptTemplate("raidar", RAIDAR_TEMPLATE)
        self.max_words, self.max_new_tokens = int(max_words), int(max_new_tokens)

    def call(self, text: str) -> Any:
        """The rewrite request of a (cut) text: greedy, seeded, at most ``max_new_tokens``."""
        from sourcebias.llmcalls import Call

        messages = tuple((m["role"], m["content"]) for m in self.prompt.messages(text, ""))
        return Call(messages=messages, max_tokens=self.max_new_tokens, temperature=0.0, seed=0)

    def missing(self, texts: Sequence[str]) -> int:
        """How many distinct (cut) texts have no stored rewrite yet."""
        return self.client.missing([self.call(c) for c in dict.fromkeys(cut_words(t, self.max_words) for t in texts)])

    def rewrite(self, texts: Sequence[str], task: Any = None) -> list[dict[str, Any]]:
        """Per text: ``{"input", "text", "status", "reason"}`` (``input``: the cut text); each
        distinct text asked once, its answer stored as it arrives. ``task`` advances per text."""
        cut = [cut_words(t, self.max_words) for t in texts]
        unique = list(dict.fromkeys(cut))
        answers = self.client.answer([self.call(c) for c in unique], task=task)
        done = {c: self._record(c, a) for c, a in zip(unique, answers)}
        return [done[c] for c in cut]

    def _record(self, text: str, answer: Any) -> dict[str, Any]:
        from sourcebias.generation import clean_output

        cleaned = clean_output(answer.text, finish_reason=answer.finish_reason, source_text=text, template=self.prompt.template, answer_marker=None)
        return {"input": text, "text": cleaned.text, "status": cleaned.status, "reason": cleaned.reason}

    def describe(self) -> dict[str, Any]:
        return {
            "client": self.client.describe(),
            "prompt": self.prompt.template,
            "system": self.prompt.system,
            "max_words": self.max_words,
            "max_new_tokens": self.max_new_tokens,
            "decoding": "greedy (temperature 0)",
        }


def similarities(records: Sequence[dict[str, Any]]) -> np.ndarray:
    """Raidar's score of each rewrite record (NaN where the rewrite was flagged)."""
    return np.array([rewrite_similarity(r["input"], r["text"]) if r["status"] == "ok" else np.nan for r in records], dtype=np.float64)


class Raidar(EngineKind):
    """Raidar's rewrite similarity, rewrites by a local model or an OpenAI-compatible server
    (``raidar:openai:MODEL@URL``; API key from ``$OPENAI_API_KEY``)."""

    name = "raidar"
    usage = "raidar:MODEL[,max_words=N,max_new_tokens=N,prompt=NAME_OR_FILE]"
    example = "raidar:MODEL"
    description = "Raidar rewrite similarity 1 − word edit distance / max length"
    reference = "Mao et al., ICLR 2024"
    options: ClassVar[Mapping[str, str]] = {
        "base_url": "deprecated (removed in 0.4.0): write raidar:openai:MODEL@URL",
        "max_words": "texts are cut to this many words first (default 96)",
        "max_new_tokens": "the longest rewrite, in tokens (default 256)",
        "prompt": "a generation prompt name or file (default: Raidar's 'Rewrite this for me')",
    }

    def build(self, request: DetectorRequest) -> ZeroShotDetector:
        from sourcebias.llmcalls import open_client
        from sourcebias.llmcalls.spec import parse_model_spec, server_spec

        spec, model, opts = request.spec, request.head, request.options
        if not model:
            raise ConfigError(f"{spec}: name the rewriting model, e.g. raidar:smollm2 or raidar:openai:MODEL@http://HOST:PORT/v1")
        named: Any = model
        if opts.get("base_url"):  # the 0.2.0 form
            if parse_model_spec(model, what=spec).backend != "local":
                raise ConfigError(f"{spec}: base_url= goes with a model name, not with an openai:MODEL@URL spec (which names its server)")
            named = server_spec(model, [opts["base_url"]], old=f"{self.name}:{model},base_url={opts['base_url']}", new=f"{self.name}:{{spec}}")
        prompt = None
        if opts.get("prompt"):
            from sourcebias.generation import load_prompt

            prompt = load_prompt(opts["prompt"])
        client = open_client(named, cache_dir=request.cache_dir, device=request.device, threads=request.threads, model_cache_dir=request.cache_dir, what=spec)
        engine = Rewriter(client, prompt=prompt, max_words=request.integer("max_words", 96), max_new_tokens=request.integer("max_new_tokens", 256))
        return ZeroShotDetector(spec, self.name, engine, opts, request.cache_dir)

    def score(self, detector: ZeroShotDetector, texts: list[str]) -> np.ndarray:
        from sourcebias.core import progress

        engine = detector.engine
        todo = engine.missing(texts)
        unique = len({cut_words(t, engine.max_words) for t in texts})
        with progress.task(f"{detector.spec}: rewriting {todo:,} texts", total=unique, unit="texts") as t:
            return similarities(engine.rewrite(texts, task=t))

    def models(self, detector: ZeroShotDetector) -> dict[str, Any]:
        return detector.engine.describe()


register_detector(Raidar())
