"""Quality of an LLM twin corpus: term overlap, lengths, semantic similarity, a 2-D map.

Dai et al., KDD 2024, §2.3 (term level §2.3.1, semantic level §2.3.2), and Cocktail (Findings of ACL 2024),
Appendix A.3: per twin pair (d^G, d^H)

* term level: Jaccard |G ∩ H| / |G ∪ H| and overlap |G ∩ H| / |H| of the two documents'
  term *sets* (the papers plot their distributions: peaks ≈0.4/0.6 on NQ320K, 0.6/0.8 on SciFact);
* semantic level: the cosine of the two documents' embeddings, against a baseline of random
  (LLM doc i, human doc j ≠ i) pairs (Cocktail, Table 9: 0.98 vs 0.71 on average with OpenAI's
  text-embedding-ada-002; NQ-UTD 0.9833 ± 0.0122 vs 0.7138 ± 0.0443);
* length distributions per source, and a t-SNE picture of both corpora.

Everything here works on what it is given: aligned sequences of texts or embedding matrices
whose row ``i`` is the ``i``-th twin pair (pairing by ``(doc_id, source)`` is the caller's job),
and an analyzer callable for terms (the command passes the BM25 analyzer,
``sourcebias.retrieval.lexical.EnglishAnalyzer()``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError


def _same_length(a: Sequence, b: Sequence, what: str) -> None:
    if len(a) != len(b):
        raise ConfigError(f"{what}: the two sides must be aligned pair by pair, got {len(a)} and {len(b)} items")


def term_similarity(llm_texts: Sequence[str], human_texts: Sequence[str], analyzer: Callable[[str], Iterable[str]]) -> dict[str, np.ndarray]:
    """Per pair, on the term sets ``G = set(analyzer(llm))`` and ``H = set(analyzer(human))``:

    ``jaccard`` = |G ∩ H| / |G ∪ H|, ``overlap`` = |G ∩ H| / |H|, and the counts ``terms_llm``
    = |G|, ``terms_human`` = |H|, ``terms_shared`` = |G ∩ H|. A ratio with an empty
    denominator (no terms at all) is NaN.
    """
    _same_length(llm_texts, human_texts, "term_similarity")
    n = len(llm_texts)
    g_n, h_n, shared, union = (np.zeros(n, dtype=np.int64) for _ in range(4))
    for i, (tg, th) in enumerate(zip(llm_texts, human_texts)):
        g, h = set(analyzer(tg)), set(analyzer(th))
        g_n[i], h_n[i], shared[i], union[i] = len(g), len(h), len(g & h), len(g | h)
    with np.errstate(invalid="ignore", divide="ignore"):
        jaccard = np.where(union > 0, shared / np.maximum(union, 1), np.nan)
        overlap = np.where(h_n > 0, shared / np.maximum(h_n, 1), np.nan)
    return {"jaccard": jaccard, "overlap": overlap, "terms_llm": g_n, "terms_human": h_n, "terms_shared": shared}


def word_counts(texts: Iterable[str]) -> np.ndarray:
    """Number of whitespace-separated words of each text (``len(text.split())``), the "word
    length" of Cocktail's Table 1."""
    return np.array([len(t.split()) for t in texts], dtype=np.int64)


def token_counts(texts: Iterable[str], tokenize: Callable[[str], Sequence[Any]]) -> np.ndarray:
    """Number of tokens of each text under ``tokenize`` (e.g. a Hugging Face tokenizer's
    ``tokenize`` method for model tokens, or the BM25 analyzer for index terms)."""
    return np.array([len(tokenize(t)) for t in texts], dtype=np.int64)


def _matrix(x: Any, what: str) -> np.ndarray:
    m = np.asarray(x, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] == 0:
        raise ConfigError(f"{what}: expected a non-empty 2-D array (documents x dimensions), got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise ConfigError(f"{what}: the embeddings contain NaN or infinite values")
    return m


def _unit_rows(m: np.ndarray, what: str) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ConfigError(f"{what}: {int(np.sum(norms == 0))} embedding(s) are all zeros; their cosine is undefined")
    return m / norms


def pair_cosines(e_llm: Any, e_human: Any) -> np.ndarray:
    """Cosine similarity of each matched pair: row ``i`` of ``e_llm`` with row ``i`` of
    ``e_human`` (the embeddings need not be normalised)."""
    a, b = _matrix(e_llm, "e_llm"), _matrix(e_human, "e_human")
    if a.shape != b.shape:
        raise ConfigError(f"pair_cosines: shapes differ, {a.shape} and {b.shape}")
    return np.einsum("ij,ij->i", _unit_rows(a, "e_llm"), _unit_rows(b, "e_human"))


def random_pair_indices(n: int, n_pairs: int | None = None, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n_pairs`` (default ``n``) random index pairs ``(i, j)`` with ``i != j``, each uniform
    over the ``n (n - 1)`` ordered pairs (drawn independently, with replacement), seeded."""
    if n < 2:
        raise ConfigError("random pairs need at least 2 documents per source")
    rng = np.random.default_rng(seed)
    m = n if n_pairs is None else int(n_pairs)
    i = rng.integers(0, n, size=m)
    j = (i + rng.integers(1, n, size=m)) % n  # a uniform offset 1..n-1: j uniform over j != i
    return i, j


def random_pair_cosines(e_llm: Any, e_human: Any, *, n_pairs: int | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    """The random-pair baseline: cosines of LLM document ``i`` with human document ``j != i``
    for :func:`random_pair_indices` pairs. Returns ``cosine``, ``llm_index``, ``human_index``.
    Summarise with ``mean`` ± ``std`` (Cocktail's Table 9)."""
    a, b = _matrix(e_llm, "e_llm"), _matrix(e_human, "e_human")
    if a.shape != b.shape:
        raise ConfigError(f"random_pair_cosines: shapes differ, {a.shape} and {b.shape}")
    i, j = random_pair_indices(len(a), n_pairs, seed=seed)
    ua, ub = _unit_rows(a, "e_llm"), _unit_rows(b, "e_human")
    return {"cosine": np.einsum("ij,ij->i", ua[i], ub[j]), "llm_index": i, "human_index": j}


def tsne_map(
    embeddings: Mapping[str, Any], *, perplexity: float = 30.0, seed: int = 0, metric: str = "euclidean", max_iter: int = 1000
) -> tuple[np.ndarray, np.ndarray]:
    """A 2-D t-SNE map of several corpora together (scikit-learn's ``TSNE``: Barnes-Hut,
    ``init="pca"``, ``learning_rate="auto"``, ``random_state=seed``).

    ``embeddings`` maps a source name to its matrix (all with the same dimension). Returns
    ``(coords, sources)``: an ``(N, 2)`` array and the source name of each row, rows in the
    mapping's order. The default perplexity, 30, is scikit-learn's and van der Maaten &
    Hinton's usual value (the papers do not give theirs); it must be below the number of
    documents. With unit-normalised embeddings, the Euclidean metric ranks neighbours as the
    cosine does.
    """
    from sklearn.manifold import TSNE

    if not embeddings:
        raise ConfigError("tsne_map: no embeddings given")
    mats = [_matrix(m, f"embeddings[{name!r}]") for name, m in embeddings.items()]
    dims = {m.shape[1] for m in mats}
    if len(dims) != 1:
        raise ConfigError(f"tsne_map: the sources have different dimensions {sorted(dims)}")
    x = np.concatenate(mats)
    if not 0 < perplexity < len(x):
        raise ConfigError(f"tsne_map: perplexity must be in (0, {len(x)}), the number of documents; got {perplexity}")
    sources = np.concatenate([np.full(len(m), name, dtype=object) for name, m in zip(embeddings, mats)])
    coords = TSNE(n_components=2, perplexity=perplexity, init="pca", learning_rate="auto", random_state=seed, metric=metric, max_iter=max_iter).fit_transform(x)
    return coords, sources
