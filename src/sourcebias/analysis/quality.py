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
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from sourcebias.analysis.base import ENCODER, FIELD, SEED, SOURCES, SPLIT, Analysis, AnalysisTable, Param, integer, llm_rows, register_analysis, sig, text
from sourcebias.analysis.common import dense_model, finite_mean, llm_sources, make_result, twin_pairs
from sourcebias.analysis.result import AnalysisResult
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


# -- the analysis ----------------------------------------------------------------------------------
def quality(
    dataset,
    model: str = "minilm",
    *,
    sources: Sequence[str] | None = None,
    seed: int = 0,
    random_pairs: int | None = None,
    tsne_sample: int = 2000,
    field: str = "text",
    options: Mapping[str, Any] | None = None,
) -> AnalysisResult:
    """Per twin pair: term Jaccard and overlap (the BM25 analyzer's terms), words and tokens of
    each copy, embedding cosine; cosine of seeded random pairs as the baseline; a t-SNE map of a
    seeded sample of both corpora. Every measure is computed on ``field`` of the documents
    (``text``, the default, as the papers' code; or ``title+text``). A pair without analyzer
    terms has no Jaccard (or overlap): the means are over the pairs that have one, and the
    count left out is reported."""
    import pandas as pd

    from sourcebias.analysis.perplexity import field_texts
    from sourcebias.retrieval.lexical import EnglishAnalyzer

    retriever = dense_model(model, options)
    corpus = dataset.corpus
    texts = field_texts(corpus, field)
    analyzer = EnglishAnalyzer()
    rows, summary, maps = [], {"model": retriever.name, "field": field, "sources": {}}, {}
    human = dataset.human_source
    for llm in llm_sources(dataset, sources):
        pair_rows, summary["sources"][llm], maps[llm] = _quality_pairs(corpus, texts, human, llm, retriever, analyzer, seed=seed, random_pairs=random_pairs)
        rows += pair_rows
    tsne, perp = _tsne_table(corpus, texts, [human, *llm_sources(dataset, sources)], retriever, sample=tsne_sample, seed=seed)
    result = make_result(
        "quality",
        dataset,
        {
            "model": model,
            "seed": seed,
            "random_pairs": random_pairs,
            "tsne_sample": tsne_sample,
            "tsne_perplexity": perp,
            "field": field,
            "analyzer": analyzer.config(),
        },
        {"encoder": retriever.config()},
        {"quality": pd.DataFrame(rows), "tsne": tsne},
        summary,
    )
    result.arrays["cosines"] = maps  # matched and random-pair cosines, for the figure
    return result


def _tsne_table(corpus, texts: Sequence[str], sources: Sequence[str], retriever, *, sample: int, seed: int) -> tuple[Any, float]:
    """The t-SNE map of a seeded sample of ``sample`` documents of every source (all of a smaller
    source), embedded by ``retriever``: its table (source, x, y) and the perplexity used."""
    import pandas as pd

    from sourcebias.core import progress

    rng = np.random.default_rng(seed)
    emb = {}
    for s in sources:
        pos = corpus.positions_of_source(s)
        if len(pos) > sample:
            pos = np.sort(rng.choice(pos, size=sample, replace=False))
        emb[s] = retriever.embed([texts[i] for i in pos], "document")
    n_map = sum(len(e) for e in emb.values())
    perp = float(min(30.0, max(1.0, (n_map - 1) / 3)))  # scikit-learn's default, below N for tiny corpora
    with progress.task(f"t-SNE of {n_map:,} documents", total=1, unit="map") as t:  # long (tens of seconds), one call
        coords, labels = tsne_map(emb, seed=seed, perplexity=perp)
        t.advance()
    return pd.DataFrame({"source": labels, "x": coords[:, 0], "y": coords[:, 1]}), perp


def _quality_pairs(corpus, texts, human, llm, retriever, analyzer, *, seed, random_pairs):
    """The rows, the summary entry and the cosines (for the figure) of one LLM source's twin pairs."""
    hp, lp, ids = twin_pairs(corpus, human, llm)
    th, tl = [texts[i] for i in hp], [texts[i] for i in lp]
    e_h = retriever.embed(th, "document")
    e_l = retriever.embed(tl, "document")
    terms = term_similarity(tl, th, analyzer)
    cos = pair_cosines(e_l, e_h)
    rnd_cos = random_pair_cosines(e_l, e_h, n_pairs=random_pairs, seed=seed)["cosine"]
    tok = _tokenizer_counter(retriever)
    words_h, words_l = word_counts(th), word_counts(tl)
    toks_h, toks_l = token_counts(th, tok), token_counts(tl, tok)
    rows = [
        {
            "doc_id": d,
            "llm_source": llm,
            "jaccard": terms["jaccard"][k],
            "overlap": terms["overlap"][k],
            "cosine": cos[k],
            "words_human": int(words_h[k]),
            "words_llm": int(words_l[k]),
            "tokens_human": int(toks_h[k]),
            "tokens_llm": int(toks_l[k]),
        }
        for k, d in enumerate(ids)
    ]
    jaccard, jaccard_out = finite_mean(terms["jaccard"])
    overlap, overlap_out = finite_mean(terms["overlap"])
    entry = {
        "pairs": len(ids),
        "jaccard_mean": jaccard,
        "jaccard_left_out": jaccard_out,
        "overlap_mean": overlap,
        "overlap_left_out": overlap_out,
        "left_out_reason": "pairs without analyzer terms (Jaccard: in neither copy; overlap: in the human copy) have no value and are left out of the means",
        "cosine_matched_mean": float(np.mean(cos)),
        "cosine_matched_std": float(np.std(cos, ddof=1)) if len(cos) > 1 else 0.0,
        "cosine_random_mean": float(np.mean(rnd_cos)),
        "cosine_random_std": float(np.std(rnd_cos, ddof=1)) if len(rnd_cos) > 1 else 0.0,
        "random_pairs": len(rnd_cos),
        "words_human_mean": float(np.mean(words_h)),
        "words_llm_mean": float(np.mean(words_l)),
        "tokens_human_mean": float(np.mean(toks_h)),
        "tokens_llm_mean": float(np.mean(toks_l)),
        "identical_texts": int(sum(a == b for a, b in zip(th, tl))),
    }
    return rows, entry, {"matched": cos, "random": rnd_cos}


def _tokenizer_counter(retriever):
    """A function text -> tokens of the retriever's own tokenizer (for token lengths)."""
    enc = retriever.encoder

    def tokens(text: str):
        st = enc._model("document") if hasattr(enc, "_model") else None
        if st is None:
            return text.split()
        return st.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]

    return tokens


class Quality(Analysis):
    """``sourcebias analyze quality``."""

    name = "quality"
    help = "Twin quality (Dai et al., KDD 2024, §2.3): term Jaccard/overlap, lengths, matched vs random-pair cosine, t-SNE map."
    params: ClassVar[Mapping[str, Param]] = {
        "model": ENCODER,
        "source": SOURCES,
        "random_pairs": Param(int | None, None, "Random pairs for the baseline (default: as many as twin pairs)."),
        "tsne_sample": Param(int, 2000, "Documents per source in the t-SNE map."),
        "field": FIELD,
        "seed": SEED,
        "split": SPLIT,
    }

    def run(self, dataset, params, options) -> AnalysisResult:
        p = params
        return quality(
            dataset,
            p["model"],
            sources=p["source"],
            seed=p["seed"],
            random_pairs=p["random_pairs"],
            tsne_sample=p["tsne_sample"],
            field=p["field"],
            options=options,
        )

    def tables(self, result) -> list[AnalysisTable]:
        keys = ("pairs", "jaccard_mean", "overlap_mean", "cosine_matched_mean", "cosine_random_mean", "words_human_mean", "words_llm_mean")
        columns = [
            text("source", "LLM source"),
            integer("pairs", "pairs"),
            sig("jaccard_mean", "Jaccard"),
            sig("overlap_mean", "overlap"),
            sig("cosine_matched_mean", "cosine matched"),
            sig("cosine_random_mean", "cosine random"),
            sig("words_human_mean", "words human"),
            sig("words_llm_mean", "words LLM"),
        ]
        caption = "Means over the twin pairs (Jaccard and overlap of the BM25 analyzer's terms; cosines of the encoder's embeddings) and over random pairs."
        return [AnalysisTable("quality", "Twin quality", columns, llm_rows(result, keys), caption)]

    def notes(self, result) -> list[str]:
        out = []
        for src, entry in result.summary["sources"].items():
            left = {k: entry[f"{k}_left_out"] for k in ("jaccard", "overlap") if entry.get(f"{k}_left_out")}
            if left:
                out.append(f"{src}: left out (no analyzer terms): " + ", ".join(f"{k} {n} pairs" for k, n in left.items()))
        return out

    def draw(self, result, out: Path) -> dict[str, Path]:
        from sourcebias.analysis.draw import draw_quality

        return draw_quality(result, out)


register_analysis(Quality())
