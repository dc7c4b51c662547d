"""The small rules of the rewriting job, none of which needs a model: per-document seeds, the
answer's token budget, and Cocktail's length filter and large-corpus sample (Cocktail, §3 and
Appendix: documents of 10-2,000 words are rewritten; over ``cap`` documents, every labelled one
plus seeded random others up to ``cap``)."""

from __future__ import annotations

import math

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.data.corpus import hash64

COCKTAIL_LENGTH = (10, 2000)
COCKTAIL_SAMPLE_CAP = 100_000


def document_seed(seed: int | None, doc_id: str) -> int | None:
    """A per-document seed derived from the run's seed and the document id (``None`` stays
    ``None``): reruns and resumed runs send the same seed for the same document, whatever the
    order in which documents are processed."""
    if seed is None:
        return None
    return hash64(str(seed), doc_id) % (2**31 - 1)


def attempt_seed(seed: int | None, doc_id: str, attempt: int) -> int | None:
    """The seed of attempt ``attempt`` (0 = the first) of one document under length control: the
    document's seed (:func:`document_seed`) first, then one per retry derived from the run's
    seed, the id and the attempt number; ``None`` (unseeded) stays ``None``."""
    if seed is None or attempt == 0:
        return document_seed(seed, doc_id)
    return hash64(str(seed), doc_id, f"length-retry-{attempt}") % (2**31 - 1)


def max_new_tokens_for(input_tokens: int, ratio: float, floor: int, ceiling: int) -> int:
    """``ceil(ratio * input_tokens)`` clamped to ``[floor, ceiling]``: a rewrite is about as long
    as its input, so the budget follows the input, with room for a short input's answer."""
    return int(min(ceiling, max(floor, math.ceil(ratio * input_tokens))))


def word_count(text: str) -> int:
    """Whitespace-separated words (Cocktail's length filter counts words)."""
    return len(text.split())


def passes_length_filter(text: str, min_words: int = COCKTAIL_LENGTH[0], max_words: int = COCKTAIL_LENGTH[1]) -> bool:
    """Cocktail's filter: keep documents of ``min_words`` to ``max_words`` words (inclusive)."""
    return min_words <= word_count(text) <= max_words


def cocktail_sample(doc_ids: list[str], labelled: set[str], cap: int = COCKTAIL_SAMPLE_CAP, seed: int = 0) -> list[str]:
    """Cocktail's rule for large corpora, returned in corpus order.

    With at most ``cap`` documents, all are kept. Otherwise every labelled document (one that
    appears in any qrels split) is kept, and random other documents (``numpy`` generator seeded
    with ``seed``) fill the sample up to ``cap``. If the labelled documents alone exceed ``cap``
    they are all kept (the rule keeps labelled documents first).
    """
    if cap < 1:
        raise ConfigError("the sample cap must be at least 1")
    if len(doc_ids) <= cap:
        return list(doc_ids)
    keep = [i for i, d in enumerate(doc_ids) if d in labelled]
    others = np.array([i for i, d in enumerate(doc_ids) if d not in labelled], dtype=np.int64)
    room = max(0, cap - len(keep))
    if room and len(others):
        rng = np.random.default_rng(seed)
        picked = rng.choice(others, size=min(room, len(others)), replace=False)
        keep.extend(int(i) for i in picked)
    return [doc_ids[i] for i in sorted(keep)]
