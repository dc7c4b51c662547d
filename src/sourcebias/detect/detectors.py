"""Zero-shot detectors by spec, each scoring texts (higher: more likely LLM-written). The kinds are
registered (:mod:`sourcebias.detect.base`); the built-in ones:

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

import numpy as np

from sourcebias.core.moved import Replaced, moved
from sourcebias.detect.base import ZeroShotDetector, build_detector, detector_kinds, is_detector_spec

__all__ = ["ZeroShotDetector", "build_detector", "corpus_texts", "is_detector_spec"]


#: deprecated names (core/moved.py): ``KINDS``, the names of the registered detector kinds
_MOVED = {"KINDS": Replaced("sourcebias.detect.detector_kinds()", lambda: tuple(detector_kinds()))}
__getattr__ = moved(__name__, _MOVED)


def corpus_texts(corpus, positions: Sequence[int] | np.ndarray, field: str = "text") -> list[str]:
    """The ``field`` texts (``text`` or ``title+text``) of the documents at ``positions``."""
    from sourcebias.analysis.perplexity import field_texts

    texts = field_texts(corpus, field)
    return [texts[int(p)] for p in positions]
