"""Singular-value spectra of embedded corpora: the "compression" view of source bias.

Dai et al. (KDD 2024, long version §4.1, Figs. 7-8) embed each corpus (the human originals and
an LLM rewrite of the same documents) with one model, "perform SVD on these matrices", sort the
singular values in descending order and plot the LLM corpus' values relative to the human
corpus'. Their reading: LLM text has *larger* singular values at the head (stronger main topics)
and *smaller* ones at the tail (less noise); a higher sampling temperature moves the tail back
towards the human one.

What the paper does, and so the default here: the SVD of the raw embedding matrix, **not
centred** (the paper names no centring, and "SVD on these matrices" of unit-norm OpenAI
embeddings). With unit-norm rows, Σ_k s_k² = n (the squared Frobenius norm) for every
corpus, so the two spectra distribute the same total energy and "larger head, smaller tail"
is a statement about its concentration. ``center=True`` subtracts each corpus' mean embedding
first (a PCA spectrum: the first, "mean" direction is removed) for readers who want that view.

Requirements: the same documents of each source (twin pairs), the same model and settings, and
the same number of rows; the spectrum does not depend on the row order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from sourcebias.analysis.base import ENCODER, SOURCES, SPLIT, Analysis, AnalysisTable, Param, integer, llm_rows, register_analysis, sig, text
from sourcebias.analysis.common import dense_model, llm_sources, make_result, twin_pairs
from sourcebias.analysis.result import AnalysisResult
from sourcebias.core.errors import ConfigError


def singular_values(embeddings: Any, *, center: bool = False) -> np.ndarray:
    """Singular values of an ``(n, d)`` embedding matrix, in descending order (LAPACK via
    ``numpy.linalg.svd``, in float64); ``min(n, d)`` of them."""
    m = np.asarray(embeddings, dtype=np.float64)
    if m.ndim != 2 or min(m.shape) == 0:
        raise ConfigError(f"singular_values: expected a non-empty 2-D array, got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise ConfigError("singular_values: the embeddings contain NaN or infinite values")
    if center:
        m = m - m.mean(axis=0, keepdims=True)
    return np.linalg.svd(m, compute_uv=False)


def zero_tolerance(embeddings: Any, dtype: Any = None) -> float:
    """The threshold under which a singular value is numerically zero: ``eps · ‖X‖_F``, with the
    machine epsilon of the embeddings' own precision (``dtype``, default the array's; float32
    embeddings carry float32 rounding even when the SVD runs in float64).

    Why this and not NumPy's ``matrix_rank`` rule ``s_max · max(n, d) · eps`` (Numerical
    Recipes'): that bound grows with the number of rows, and at 100,000 documents it marks real
    tail values as zero. The noise in X is the rounding of its entries, |e_ij| ≤ u·|x_ij| with
    u = eps/2, so ‖E‖₂ ≤ ‖E‖_F ≤ u·‖X‖_F whatever n; by Weyl's inequality each singular value
    of the stored matrix is within ‖E‖₂ of the exact one, so a value above eps·‖X‖_F cannot be
    rounding alone, and one below it cannot be told from zero. This is the ε-rank of Golub & Van
    Loan (*Matrix Computations*, 4th ed., §5.4.1 and §2.4.8: rank(A, δ) with δ = u·‖A‖), with
    the Frobenius norm and a factor 2 of margin; the SVD's own backward error (float64, of order
    eps₆₄·‖X‖₂) is far below it."""
    m = np.asarray(embeddings)
    dt = np.dtype(dtype if dtype is not None else m.dtype)
    eps = np.finfo(dt).eps if np.issubdtype(dt, np.floating) else np.finfo(np.float64).eps
    return float(eps * np.linalg.norm(np.asarray(m, dtype=np.float64)))


def spectrum_table(embeddings: Mapping[str, Any], *, reference: str = "human", center: bool = False) -> list[dict[str, Any]]:
    """Tidy rows ``{source, rank, value, relative, numerically_zero}`` for every source and
    rank (1-based).

    ``value`` is the singular value, ``relative`` the ratio to the ``reference`` source's value
    at the same rank (1 for the reference itself); ``numerically_zero`` marks values under
    :func:`zero_tolerance` (rounding noise of a rank-deficient matrix: some encoders' embeddings
    span fewer than ``d`` dimensions), where ``relative`` is NaN — a ratio of two rounding
    errors means nothing. All sources must have the same shape (the same documents embedded by
    the same model).
    """
    if reference not in embeddings:
        raise ConfigError(f"spectrum_table: reference source {reference!r} is not among {list(embeddings)}")
    shapes = {name: np.shape(m) for name, m in embeddings.items()}
    if len(set(shapes.values())) != 1:
        raise ConfigError(f"spectrum_table: every source must embed the same documents with the same model; shapes {shapes}")
    values = {name: singular_values(m, center=center) for name, m in embeddings.items()}
    # the tolerance is that of the stored (uncentred) matrix: its rounding is the noise, and centring does not shrink it
    zero = {name: v <= zero_tolerance(embeddings[name]) for name, v in values.items()}
    ref = values[reference]
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = {name: np.where(zero[name] | zero[reference], np.nan, v / np.where(zero[reference], 1.0, ref)) for name, v in values.items()}
    return [
        {"source": name, "rank": k + 1, "value": float(v[k]), "relative": float(rel[name][k]), "numerically_zero": bool(zero[name][k])}
        for name, v in values.items()
        for k in range(len(v))
    ]


def ratio_summary(relative: Any, *, head: int = 10, tail: int = 10) -> dict[str, float]:
    """Summary of an LLM/human ratio curve (``relative`` of one source, by rank; NaN entries —
    numerically zero values — are dropped first): the ratio at rank 1, the geometric means of the
    first ``head`` and last ``tail`` ranks, the number of ranks above 1 and the first rank
    (1-based) where the ratio drops below 1 (0 if never), and ``ranks``, the ranks used."""
    r = np.asarray(relative, dtype=np.float64)
    r = r[np.isfinite(r) & (r > 0)]
    if r.size == 0:
        raise ConfigError("ratio_summary: no finite positive ratios")
    below = np.flatnonzero(r < 1)
    return {
        "ratio_rank1": float(r[0]),
        "head_geomean": float(np.exp(np.mean(np.log(r[:head])))),
        "tail_geomean": float(np.exp(np.mean(np.log(r[-tail:])))),
        "ranks_above_1": int(np.sum(r > 1)),
        "first_rank_below_1": int(below[0] + 1) if below.size else 0,
        "ranks": int(r.size),
    }


# -- the analysis ----------------------------------------------------------------------------------
def spectrum(
    dataset, model: str = "minilm", *, sources: Sequence[str] | None = None, center: bool = False, options: Mapping[str, Any] | None = None
) -> AnalysisResult:
    """Singular values of each source's embedding matrix over the same documents (the twin
    pairs, in the same order), and each LLM source's values relative to the human source's."""
    import pandas as pd

    retriever = dense_model(model, options)
    corpus = dataset.corpus
    texts = corpus.retrieval_texts()
    human = dataset.human_source
    llms = llm_sources(dataset, sources)
    common: set[str] = set.intersection(*(set(twin_pairs(corpus, human, llm)[2]) for llm in llms))  # llms is never empty
    ids = [d for d in corpus.doc_ids if d in common and corpus.position(d, human) is not None]
    ids = list(dict.fromkeys(ids))
    emb = {s: retriever.embed([texts[corpus.position(d, s)] for d in ids], "document") for s in [human, *llms]}
    table = pd.DataFrame(spectrum_table(emb, reference=human, center=center))
    summary: dict[str, Any] = {"model": retriever.name, "documents": len(ids), "centered": center, "sources": {}}
    for llm in llms:
        rel = table[table["source"] == llm]["relative"].to_numpy()
        summary["sources"][llm] = ratio_summary(rel)
    return make_result("spectrum", dataset, {"model": model, "center": center}, {"encoder": retriever.config()}, {"spectrum": table}, summary)


class Spectrum(Analysis):
    """``sourcebias analyze spectrum``."""

    name = "spectrum"
    help = "Singular values of each source's embeddings and the LLM/human ratio (Dai et al., KDD 2024, §4.1)."
    params: ClassVar[Mapping[str, Param]] = {
        "model": ENCODER,
        "source": SOURCES,
        "center": Param(bool, False, "Centre each matrix first (the papers do not)."),
        "split": SPLIT,
    }

    def run(self, dataset, params, options) -> AnalysisResult:
        return spectrum(dataset, params["model"], sources=params["source"], center=params["center"], options=options)

    def tables(self, result) -> list[AnalysisTable]:
        keys = ("ratio_rank1", "head_geomean", "tail_geomean", "ranks_above_1", "ranks")
        columns = [
            text("source", "LLM source"),
            sig("ratio_rank1", "ratio at rank 1"),
            sig("head_geomean", "head geomean"),
            sig("tail_geomean", "tail geomean"),
            integer("ranks_above_1", "ranks above 1"),
            integer("ranks", "ranks"),
        ]
        caption = "Singular values of the LLM source over the human source's, rank by rank (geometric means of the first and last ten)."
        return [AnalysisTable("spectrum", "Embedding spectrum", columns, llm_rows(result, keys), caption)]

    def draw(self, result, out: Path) -> dict[str, Path]:
        from sourcebias.analysis.draw import draw_spectrum

        return draw_spectrum(result, out)


register_analysis(Spectrum())
