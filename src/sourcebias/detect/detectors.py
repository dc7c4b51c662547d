"""Zero-shot detectors by spec, each scoring texts (higher: more likely LLM-written):

* ``fast-detectgpt:lm:NAME[,max_tokens=N,batch_size=B,dtype=D]`` — Fast-DetectGPT's analytic
  criterion under one causal LM (:mod:`sourcebias.detect.criteria`);
* ``binoculars:lm:PERFORMER+lm:OBSERVER[,max_tokens=N,...]`` — Binoculars with two LMs that share
  a tokenizer (refused otherwise);
* ``raidar:MODEL[,base_url=URL,max_words=N,max_new_tokens=N,prompt=NAME_OR_FILE]`` — the rewrite
  similarity (:mod:`sourcebias.detect.rewrites`), rewrites by a local model (``smollm2``, a
  folder, a GGUF file) or, with ``base_url``, an OpenAI-compatible server (API key from
  ``$SOURCEBIAS_API_KEY``).

Scores are raw criteria (no probability): a threshold comes from a calibration
(:mod:`sourcebias.audit`). Model values are cached (the embedding store for the LM criteria, the
rewrite cache for Raidar), so an interrupted scoring resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError

KINDS = ("fast-detectgpt", "binoculars", "raidar")
_LM_OPTIONS = {"max_tokens", "batch_size", "dtype"}
_RAIDAR_OPTIONS = {"base_url", "max_words", "max_new_tokens", "prompt"}


@dataclass
class ZeroShotDetector:
    """A detector built from a spec: :meth:`score_texts` gives one raw score per text."""

    spec: str
    kind: str
    engine: Any
    options: dict[str, Any] = field(default_factory=dict)
    cache_dir: Any = None

    def score_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Raw scores of ``texts`` (NaN where a text cannot be scored: no token, a flagged rewrite)."""
        texts = list(texts)
        if self.kind == "raidar":
            from sourcebias.core import progress
            from sourcebias.detect.rewrites import cut_words, similarities

            todo = len({self.engine.key(cut_words(t, self.engine.max_words)) for t in texts} - set(self.engine.cached()))
            with progress.task(f"{self.spec}: rewriting {todo:,} texts", total=todo, unit="texts") as t:
                return similarities(self.engine.rewrite(texts, task=t))
        from sourcebias.models.embedding_store import Embedder

        embedder = Embedder(self.engine, cache_dir=self.cache_dir, batch_size=self.engine.batch_size, name=self.spec)
        return self.engine.scores(embedder.embed(texts, "document"))

    def describe(self) -> dict[str, Any]:
        """The detector's identity: spec, kind, what its score is, models and options."""
        what = {"fast-detectgpt": "Fast-DetectGPT analytic criterion (Bao et al., ICLR 2024)", "binoculars": "minus the Binoculars score (Hans et al., ICML 2024)",
                "raidar": "Raidar rewrite similarity 1 − word edit distance / max length (Mao et al., ICLR 2024)"}[self.kind]  # fmt: skip
        models = self.engine.describe() if self.kind == "raidar" else self.engine.config()
        return {
            "spec": self.spec,
            "kind": self.kind,
            "score": what,
            "direction": "higher: more likely LLM-written",
            "score_type": "raw",
            "options": self.options,
            "models": models,
        }


def _options(spec: str, parts: Sequence[str], allowed: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for o in parts:
        k, eq, v = o.partition("=")
        if not eq:
            raise ConfigError(f"{spec}: expected key=value, got '{o}'")
        out[k.strip()] = v.strip()
    unknown = set(out) - allowed
    if unknown:
        raise ConfigError(f"{spec}: unknown option(s) {', '.join(sorted(unknown))}; options: {', '.join(sorted(allowed))}")
    return out


def _int(spec: str, opts: dict[str, str], key: str, default: int) -> int:
    try:
        return int(opts.get(key, default))
    except ValueError:
        raise ConfigError(f"{spec}: {key} must be an integer, got '{opts[key]}'") from None


def _lm_name(spec: str, text: str) -> str:
    kind, sep, name = text.strip().partition(":")
    if kind.lower() != "lm" or not sep or not name.strip():
        raise ConfigError(f"{spec}: a language model is written lm:NAME (e.g. lm:smollm2, lm:gemma3-270m, lm:PATH), got '{text}'")
    return name.strip()


def is_detector_spec(text: str) -> bool:
    """Whether ``text`` names a zero-shot detector (starts with one of :data:`KINDS` and ``:``)."""
    return text.partition(":")[0].strip().lower() in KINDS and ":" in text


def build_detector(
    spec: str, *, cache_dir: Any = None, device: str | None = None, batch_size: int | None = None, threads: int | None = None
) -> ZeroShotDetector:
    """The detector ``spec`` names (see the module docs); models are loaded on first use.

    Args:
        spec: ``fast-detectgpt:lm:NAME[,...]``, ``binoculars:lm:A+lm:B[,...]`` or ``raidar:MODEL[,...]``.
        cache_dir: cache of model values, rewrites and converted models.
        device, batch_size, threads: how the models run.

    Returns:
        A :class:`ZeroShotDetector`.

    Raises:
        ConfigError: an unknown kind, a malformed model name, an unknown or non-integer option.
    """
    kind, sep, rest = spec.partition(":")
    kind = kind.strip().lower()
    if not sep or kind not in KINDS or not rest.strip():
        raise ConfigError(f"a zero-shot detector is one of {', '.join(k + ':...' for k in KINDS)}, e.g. fast-detectgpt:lm:smollm2; got '{spec}'")
    head, *opt_parts = rest.split(",")
    if kind == "raidar":
        return _raidar(spec, head.strip(), _options(spec, opt_parts, _RAIDAR_OPTIONS), cache_dir=cache_dir, device=device, threads=threads)
    from sourcebias.detect.criteria import LMCriterion

    opts = _options(spec, opt_parts, _LM_OPTIONS)
    names = [_lm_name(spec, p) for p in head.split("+")]
    if (kind == "binoculars") != (len(names) == 2) or len(names) > 2:
        raise ConfigError(
            f"{spec}: fast-detectgpt takes one model (fast-detectgpt:lm:NAME), binoculars two that share a tokenizer (binoculars:lm:PERFORMER+lm:OBSERVER)"
        )
    engine = LMCriterion(kind, names[0], reference_model=names[1] if len(names) == 2 else None, max_tokens=_int(spec, opts, "max_tokens", 128),
                         batch_size=_int(spec, opts, "batch_size", batch_size or 8), device=device, dtype=opts.get("dtype"), cache_dir=cache_dir)  # fmt: skip
    return ZeroShotDetector(spec, kind, engine, opts, cache_dir)


def _raidar(spec: str, model: str, opts: dict[str, str], *, cache_dir: Any, device: str | None, threads: int | None) -> ZeroShotDetector:
    from sourcebias.detect.rewrites import Rewriter

    if not model:
        raise ConfigError(f"{spec}: name the rewriting model, e.g. raidar:smollm2")
    if opts.get("base_url"):
        from sourcebias.generation.backends import OpenAIBackend

        backend = OpenAIBackend([opts["base_url"]], model)
    else:
        from sourcebias.generation.backends import LocalBackend

        backend = LocalBackend(model, device=device, cache_dir=cache_dir, threads=threads)
    prompt = None
    if opts.get("prompt"):
        from sourcebias.generation import load_prompt

        prompt = load_prompt(opts["prompt"])
    engine = Rewriter(
        backend, prompt=prompt, max_words=_int(spec, opts, "max_words", 96), max_new_tokens=_int(spec, opts, "max_new_tokens", 256), cache_dir=cache_dir
    )
    return ZeroShotDetector(spec, "raidar", engine, opts, cache_dir)


def corpus_texts(corpus, positions: Sequence[int] | np.ndarray, field: str = "text") -> list[str]:
    """The ``field`` texts (``text`` or ``title+text``) of the documents at ``positions``."""
    from sourcebias.analysis.perplexity import field_texts

    texts = field_texts(corpus, field)
    return [texts[int(p)] for p in positions]
