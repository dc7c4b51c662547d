"""Features of a document for the built-in detector of LLM text, all of one field (``text`` by
default, the body; or ``title+text``):

* ``log_words``: ln(1 + number of whitespace-separated words);
* ``median_idf``: the median Lucene BM25 idf of the document's analyzer terms, the idf taken over
  the collection the document belongs to (:func:`sourcebias.analysis.artifacts.lucene_idf`, the BM25
  analyzer; NaN without terms, imputed by the detector);
* ``projection``: the document's embedding projected on the LLM − human direction
  (:func:`sourcebias.analysis.direction.estimate_direction` over the *training* twin pairs only),
  embeddings from a dense model through the embedding store;
* ``perplexity`` (optional, slow): mean negative log-likelihood per token under an ``lm:`` model
  (:func:`sourcebias.analysis.perplexity.document_values`, through the embedding store).

Model values are cached in the embedding store by content, so a rerun (or an interrupted run)
computes only what is missing. None of the features looks at a document's source.

**Normalisation by collection** (``normalize="collection"``, the default). The levels of these
features differ between collections far more than between a human document and its LLM twin
(nfcorpus abstracts are longer, rarer-worded and less predictable than nq-utd's news paragraphs),
so a detector trained on one collection labels nearly everything of another as one kind. Each
feature is therefore standardised within its collection: ``(x − mean) / sd``, the mean and sd
over a reference sample of the collection (the training documents for the training collection; a
seeded sample of up to ``reference_docs`` documents of the audited one, sources never read). The
price is an assumption: the collection's mean moves with its share π of LLM text by
π·(μ_LLM − μ_human), so the detector's Se and Sp carry over when the audited collection's π is near
the training collection's (0.5 for twin corpora) or when the within-collection difference is
small against the spread; ``normalize="none"`` keeps raw values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError

BASE_FEATURES = ("log_words", "median_idf", "projection")
NORMALIZATIONS = ("collection", "none")


@dataclass(frozen=True)
class FeatureSpec:
    """What the detector's features are computed with: ``model`` (a dense retriever spec for the
    direction), ``lm`` (``lm:NAME[,max_tokens=N]`` or None), ``field`` (``text`` or
    ``title+text``)."""

    model: str = "minilm"
    lm: str | None = None
    field: str = "text"
    normalize: str = "collection"
    reference_docs: int = 2000

    def __post_init__(self) -> None:
        if self.normalize not in NORMALIZATIONS:
            raise ConfigError(f"normalize must be one of {', '.join(NORMALIZATIONS)}, got '{self.normalize}'")
        if self.reference_docs < 10:
            raise ConfigError(f"reference_docs must be at least 10, got {self.reference_docs}")

    @property
    def names(self) -> tuple[str, ...]:
        return BASE_FEATURES + (("perplexity",) if self.lm else ())

    def describe(self) -> dict[str, Any]:
        return {
            "features": list(self.names),
            "model": self.model,
            "lm": self.lm,
            "field": self.field,
            "normalize": self.normalize,
            "reference_docs": self.reference_docs,
        }


class FeatureExtractor:
    """Computes :class:`FeatureSpec`'s features for documents of a corpus (see the module docs)."""

    def __init__(self, spec: FeatureSpec, *, cache_dir: Any = None, batch_size: int | None = None, device: str | None = None):
        from sourcebias.analysis.perplexity import check_field

        check_field(spec.field)
        self.spec = spec
        self.cache_dir = cache_dir
        self.batch_size = batch_size
        self.device = device
        self._dense = None
        self._lm = None
        self.direction: np.ndarray | None = None
        self.direction_summary: dict[str, Any] = {}
        self._stats: dict[tuple[int, int], dict[str, tuple[float, float]]] = {}
        self._idf: dict[int, Any] = {}
        self.reference_stats: list[dict[str, Any]] = []

    @property
    def dense(self):
        if self._dense is None:
            from sourcebias.analysis.common import dense_model

            options = {} if self.cache_dir is None else {"cache_dir": self.cache_dir}
            self._dense = dense_model(self.spec.model, options)
        return self._dense

    @property
    def lm(self):
        if self._lm is None and self.spec.lm:
            from sourcebias.analysis.perplexity import build_lm_scorer

            self._lm = build_lm_scorer(self.spec.lm, batch_size=self.batch_size, device=self.device, cache_dir=self.cache_dir, field=self.spec.field)
        return self._lm

    def texts(self, corpus, positions: Sequence[int] | np.ndarray) -> list[str]:
        from sourcebias.analysis.perplexity import field_texts

        all_texts = field_texts(corpus, self.spec.field)
        return [all_texts[i] for i in positions]

    def embed(self, corpus, positions: Sequence[int] | np.ndarray) -> np.ndarray:
        return np.asarray(self.dense.embed(self.texts(corpus, positions), "document"), dtype=np.float64)

    def fit_direction(self, corpus, llm_positions: Sequence[int] | np.ndarray, human_positions: Sequence[int] | np.ndarray) -> None:
        """The LLM − human direction from twin pairs (row i of each: the i-th pair)."""
        from sourcebias.analysis.direction import estimate_direction

        est = estimate_direction(self.embed(corpus, llm_positions), self.embed(corpus, human_positions), n_permutations=0)
        self.direction = est.unit
        self.direction_summary = {
            k: v for k, v in est.summary().items() if k in ("pairs", "dimension", "mean_difference_norm", "consistency", "share_positive_projection")
        }

    def compute(
        self, corpus, positions: Sequence[int] | np.ndarray, *, reference: Sequence[int] | np.ndarray | None = None, seed: int = 0
    ) -> dict[str, np.ndarray]:
        """Feature name -> values for the documents at ``positions`` of ``corpus`` (the idf over
        the whole ``corpus``), standardised within the collection (``spec.normalize``) by the
        documents at ``reference`` (default: a seeded sample of ``spec.reference_docs``)."""
        raw = self.raw(corpus, positions)
        if self.spec.normalize == "none":
            return raw
        if reference is None:
            n = len(corpus)
            reference = np.sort(np.random.default_rng(seed).permutation(n)[: self.spec.reference_docs])
        key = (id(corpus), hash(np.asarray(reference, dtype=np.int64).tobytes()))
        if key not in self._stats:
            ref = self.raw(corpus, reference)
            self._stats[key] = {f: (float(np.nanmean(v)), float(np.nanstd(v))) for f, v in ref.items()}
            self.reference_stats.append({"documents": len(reference), **{f: {"mean": m, "sd": s} for f, (m, s) in self._stats[key].items()}})
        stats = self._stats[key]
        return {f: (v - stats[f][0]) / (stats[f][1] if stats[f][1] > 0 else 1.0) for f, v in raw.items()}

    def raw(self, corpus, positions: Sequence[int] | np.ndarray) -> dict[str, np.ndarray]:
        """The features before normalisation."""
        if self.direction is None:
            raise ConfigError("the LLM − human direction is not estimated yet (fit_direction)")
        positions = np.asarray(positions, dtype=np.int64)
        texts = self.texts(corpus, positions)
        out = {
            "log_words": np.log1p(np.array([len(t.split()) for t in texts], dtype=np.float64)),
            "median_idf": self._median_idf(corpus, positions),
            "projection": self.embed(corpus, positions) @ self.direction,
        }
        if self.lm is not None:
            from sourcebias.analysis.perplexity import document_values

            _, values, _ = document_values(corpus, self.lm, cache_dir=self.cache_dir, positions=positions.tolist())
            out["perplexity"] = values
        return out

    def _median_idf(self, corpus, positions: np.ndarray) -> np.ndarray:
        if id(corpus) not in self._idf:
            self._idf[id(corpus)] = median_idf(corpus, np.arange(len(corpus)), self.spec.field)
        return self._idf[id(corpus)][positions]

    def models(self) -> dict[str, Any]:
        out: dict[str, Any] = {"encoder": self.dense.config() if hasattr(self.dense, "config") else self.spec.model}
        if self.lm is not None:
            out["lm"] = self.lm.config()
        return out


def median_idf(corpus, positions: Sequence[int] | np.ndarray, field: str = "text") -> np.ndarray:
    """Median Lucene idf of each document's analyzer terms, idf over all of ``corpus``'s
    ``field`` texts (NaN for a document without terms)."""
    from sourcebias.analysis.artifacts import lucene_idf
    from sourcebias.analysis.perplexity import field_texts
    from sourcebias.retrieval.analyzer import EnglishAnalyzer

    analyzer = EnglishAnalyzer()
    terms = [analyzer(t) for t in field_texts(corpus, field)]
    idf = lucene_idf(terms)
    return np.array([np.median([idf[t] for t in terms[i]]) if terms[i] else np.nan for i in positions], dtype=np.float64)
