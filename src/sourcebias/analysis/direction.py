"""The LLM-vs-human direction in embedding space, its consistency, and its share of score gaps.

After Huang et al. (2026, "Relevance supervision can teach neural retrievers to prefer
LLM-generated text", arXiv 2604.06163): for every twin pair, the difference of the two documents'
embeddings ``d_i = e_LLM,i - e_human,i``; the mean direction ``u = mean(d) / ||mean(d)||``;
its **consistency**, the mean cosine of the pair differences with ``u``; a seeded **sign-flip
permutation test** against the null that the differences are symmetric about 0 (each pair's
difference as likely to point one way as the other, so there is no common direction); and the
cosine between two such directions (two datasets, two models, or a positive-minus-negative
direction).

**The test statistic.** Under the null, flipping the sign of any subset of the ``d_i`` leaves
their joint distribution unchanged, so every statistic of the flipped set has the same null
distribution — the choice decides power, not validity. The primary statistic here is the norm
of the mean difference, ``||mean(d)||``: the null's claim is about the mean (it is zero), the
norm is the length of exactly the vector whose direction is reported, and it needs no
re-estimated direction per permutation. Consistency (Huang et al.'s statistic, recomputing the
mean direction of each flipped set) is reported as well, from the same flips: it weighs every
pair equally whatever the size of its difference, so a few pairs with large differences (a
rewrite that drifted) cannot carry it. p-values are ``(1 + #{null ≥ observed}) / (1 + B)``
(Phipson & Smyth 2010), with ``B`` random flips (1,000 by default) drawn from
``numpy.random.default_rng(seed)``.

**Score gaps along u.** For a relevant (query, human document, twin) triple with query vector
``q``, the score gap of a dot-product retriever is ``gap = q·(e_L - e_H)``. Writing
``Δ = e_L - e_H = (u·Δ) u + r`` (``r`` orthogonal to ``u``) splits it exactly into
``(q·u)(u·Δ) + q·r``; :func:`score_gap_decomposition` reports both parts and the share of the
mean gap that the ``u`` part explains. For a cosine-scored model pass unit-normalised vectors.
If ``u`` was estimated on the same pairs, the share is in-sample: estimate ``u`` on other
pairs (another dataset, or held-out pairs) for an out-of-sample figure.

Written here because no maintained library offers paired-direction statistics; SciPy's
``permutation_test`` handles scalar statistics of paired samples, not vector-valued
differences, and the flips are a few lines of NumPy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from sourcebias.analysis.base import ENCODER, SEED, SOURCES, Analysis, AnalysisTable, Param, integer, llm_rows, psig, register_analysis, sig, text
from sourcebias.analysis.common import dense_model, llm_sources, make_result, twin_pairs
from sourcebias.analysis.result import AnalysisResult
from sourcebias.core.errors import ConfigError

_EPS = 1e-12


def _matrix(x: Any, what: str) -> np.ndarray:
    m = np.asarray(x, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] == 0:
        raise ConfigError(f"{what}: expected a non-empty 2-D array (rows x dimensions), got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise ConfigError(f"{what}: NaN or infinite values")
    return m


def pair_differences(e_llm: Any, e_human: Any) -> np.ndarray:
    """Row-wise ``e_llm - e_human`` (row ``i`` of each is the ``i``-th twin pair)."""
    a, b = _matrix(e_llm, "e_llm"), _matrix(e_human, "e_human")
    if a.shape != b.shape:
        raise ConfigError(f"pair_differences: shapes differ, {a.shape} and {b.shape}")
    return a - b


def unit(v: Any) -> np.ndarray:
    """``v / ||v||``; an error for a (near-)zero vector, whose direction is undefined."""
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    n = float(np.linalg.norm(v))
    if n < _EPS:
        raise ConfigError("the direction is undefined: the vector is (numerically) zero")
    return v / n


def direction_cosine(u: Any, v: Any) -> float:
    """Cosine similarity of two directions (e.g. the LLM-human directions of two datasets)."""
    a, b = unit(u), unit(v)
    if a.shape != b.shape:
        raise ConfigError(f"direction_cosine: dimensions differ, {a.size} and {b.size}")
    return float(a @ b)


def _consistency(diffs: np.ndarray, u: np.ndarray) -> tuple[float, np.ndarray]:
    norms = np.linalg.norm(diffs, axis=1)
    ok = norms > _EPS
    cos = np.full(len(diffs), np.nan)
    cos[ok] = diffs[ok] @ u / norms[ok]
    return (float(np.mean(cos[ok])) if ok.any() else float("nan")), cos


@dataclass(frozen=True)
class Direction:
    """The mean direction of paired differences and its sign-flip test (see the module docs).

    ``unit``: u; ``mean_difference``: mean(d); ``norm``: ||mean(d)||; ``consistency``: mean over
    pairs with a non-zero difference of cos(d_i, u); ``cosines``: cos(d_i, u) per pair (NaN for
    a zero difference); ``projections``: d_i·u per pair; ``p_norm``, ``p_consistency``: sign-flip
    p-values (None without permutations); ``null_norm``, ``null_consistency``: the statistics of
    each random flip; ``null_projections``: d_i·u* of the first few flipped sets on their own
    mean direction u*, pooled (for the figure).
    """

    unit: np.ndarray
    mean_difference: np.ndarray
    norm: float
    consistency: float
    cosines: np.ndarray
    projections: np.ndarray
    n_pairs: int
    n_permutations: int
    seed: int
    p_norm: float | None = None
    p_consistency: float | None = None
    null_norm: np.ndarray = field(default_factory=lambda: np.empty(0))
    null_consistency: np.ndarray = field(default_factory=lambda: np.empty(0))
    null_projections: np.ndarray = field(default_factory=lambda: np.empty(0))

    def summary(self) -> dict[str, Any]:
        """The scalars, for a table: pairs, dimension, norm, consistency, p-values, the null
        distributions' means, permutations and seed."""
        return {
            "pairs": self.n_pairs,
            "dimension": int(self.unit.size),
            "mean_difference_norm": self.norm,
            "consistency": self.consistency,
            "mean_projection": float(np.mean(self.projections)),
            "share_positive_projection": float(np.mean(self.projections > 0)),
            "p_norm": self.p_norm,
            "p_consistency": self.p_consistency,
            "null_norm_mean": float(np.mean(self.null_norm)) if self.null_norm.size else None,
            "null_consistency_mean": float(np.mean(self.null_consistency)) if self.null_consistency.size else None,
            "permutations": self.n_permutations,
            "seed": self.seed,
        }


def sign_flip_null(diffs: Any, *, n_permutations: int = 1000, seed: int = 0, block: int = 100, keep_projections: int = 20) -> dict[str, np.ndarray]:
    """Null distributions under random sign flips of the rows of ``diffs``.

    Each of ``n_permutations`` flips draws independent signs ±1 per pair (seeded); for the
    flipped set it computes ``norm`` = ||mean||, ``consistency`` = mean cos(s_i d_i, u*) with
    u* its own unit mean, and, for the first ``keep_projections`` flips, the projections
    s_i d_i · u*. Returns ``norm``, ``consistency`` and ``projections`` (pooled).
    """
    d = _matrix(diffs, "diffs")
    if n_permutations < 1:
        raise ConfigError(f"n_permutations must be >= 1, got {n_permutations}")
    n = len(d)
    norms = np.linalg.norm(d, axis=1)
    ok = norms > _EPS
    d_unit = np.zeros_like(d)
    d_unit[ok] = d[ok] / norms[ok, None]
    n_ok = max(int(ok.sum()), 1)
    rng = np.random.default_rng(seed)
    null_norm = np.empty(n_permutations)
    null_cons = np.empty(n_permutations)
    kept: list[np.ndarray] = []
    for start in range(0, n_permutations, block):
        b = min(block, n_permutations - start)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(b, n))
        sums = signs @ d  # (b, dim)
        sum_norms = np.linalg.norm(sums, axis=1)
        null_norm[start : start + b] = sum_norms / n
        dirs = np.divide(sums, sum_norms[:, None], out=np.zeros_like(sums), where=sum_norms[:, None] > _EPS)
        null_cons[start : start + b] = np.einsum("ij,ij->i", signs @ d_unit, dirs) / n_ok
        for k in range(min(b, keep_projections - len(kept))):
            kept.append(signs[k] * (d @ dirs[k]))
    return {"norm": null_norm, "consistency": null_cons, "projections": np.concatenate(kept) if kept else np.empty(0)}


def estimate_direction(e_llm: Any, e_human: Any, *, n_permutations: int = 1000, seed: int = 0, keep_projections: int = 20) -> Direction:
    """The mean LLM - human direction of twin pairs, its consistency and sign-flip p-values.

    ``e_llm``, ``e_human``: ``(n, dim)`` arrays, row ``i`` the ``i``-th twin pair (any paired
    a - b works, e.g. relevant minus non-relevant). ``n_permutations=0`` skips the test.
    """
    d = pair_differences(e_llm, e_human)
    mean = d.mean(axis=0)
    u = unit(mean)
    consistency, cos = _consistency(d, u)
    result = {
        "unit": u,
        "mean_difference": mean,
        "norm": float(np.linalg.norm(mean)),
        "consistency": consistency,
        "cosines": cos,
        "projections": d @ u,
        "n_pairs": len(d),
        "n_permutations": int(n_permutations),
        "seed": int(seed),
    }
    if n_permutations:
        null = sign_flip_null(d, n_permutations=n_permutations, seed=seed, keep_projections=keep_projections)
        b = len(null["norm"])
        # a tiny tolerance so that flips reproducing the observed set (all +1 or all -1) count
        tol = 1e-12
        result.update(
            p_norm=float((1 + np.sum(null["norm"] >= result["norm"] - tol)) / (b + 1)),
            p_consistency=float((1 + np.sum(null["consistency"] >= consistency - tol)) / (b + 1)),
            null_norm=null["norm"],
            null_consistency=null["consistency"],
            null_projections=null["projections"],
        )
    return Direction(**result)


def score_gap_decomposition(q: Any, e_llm: Any, e_human: Any, u: Any) -> dict[str, Any]:
    """Split dot-product score gaps ``q·(e_L - e_H)`` into the part along ``u`` and the rest.

    ``q``, ``e_llm``, ``e_human``: ``(m, dim)`` arrays, row ``k`` the ``k``-th relevant
    (query, human document, twin) triple (gather rows with the triples' indices first);
    ``u``: a direction (normalised here). Per triple: ``gap``, ``along`` = (q·u)(u·Δ) and
    ``residual`` = q·(Δ - (u·Δ)u), computed independently (``along + residual == gap`` up to
    float rounding). Summary: ``mean_gap``, ``mean_along``, ``mean_residual``,
    ``share_along`` = mean_along / mean_gap (NaN when the mean gap is 0), ``triples``.
    """
    qm, a, b = _matrix(q, "q"), _matrix(e_llm, "e_llm"), _matrix(e_human, "e_human")
    if not (qm.shape == a.shape == b.shape):
        raise ConfigError(f"score_gap_decomposition: q, e_llm and e_human must have the same shape, got {qm.shape}, {a.shape}, {b.shape}")
    uu = unit(u)
    if uu.size != qm.shape[1]:
        raise ConfigError(f"score_gap_decomposition: u has dimension {uu.size}, the vectors {qm.shape[1]}")
    delta = a - b
    gap = np.einsum("ij,ij->i", qm, delta)
    coef = delta @ uu
    along = (qm @ uu) * coef
    residual = np.einsum("ij,ij->i", qm, delta - coef[:, None] * uu[None, :])
    mean_gap = float(gap.mean())
    return {
        "gap": gap,
        "along": along,
        "residual": residual,
        "mean_gap": mean_gap,
        "mean_along": float(along.mean()),
        "mean_residual": float(residual.mean()),
        "share_along": float(along.mean() / mean_gap) if mean_gap != 0 else float("nan"),
        "triples": len(gap),
    }


# -- the analysis ----------------------------------------------------------------------------------
def _held_out_share(q_vecs, e_l, e_h, rows, seed) -> dict[str, Any]:
    """The share of the score gaps along a direction estimated on a seeded half of the twin pairs,
    over the relevant triples whose pair is in the other half. Undefined (``None``, with
    ``held_out_note``) when either half is empty — e.g. a single twin pair, or every judged pair
    drawn into the estimation half."""
    n = len(e_l)
    half = np.random.default_rng(seed).permutation(n) < n // 2
    held = ~half[rows]
    if not half.any() or not held.any():
        why = (
            f"the estimation half is empty ({n} twin pair{'s' if n != 1 else ''})"
            if not half.any()
            else f"no judged pair falls in the held-out half ({len(rows)} judged relevant pair{'s' if len(rows) != 1 else ''})"
        )
        return {"share_along_held_out": None, "held_out_triples": 0, "held_out_note": f"undefined: {why}"}
    est_a = estimate_direction(e_l[half], e_h[half], n_permutations=0, seed=seed)
    out = score_gap_decomposition(q_vecs[held], e_l[rows][held], e_h[rows][held], est_a.unit)
    return {"share_along_held_out": out["share_along"], "held_out_triples": out["triples"]}


def direction(
    dataset, model: str = "minilm", *, sources: Sequence[str] | None = None, permutations: int = 1000, seed: int = 0, options: Mapping[str, Any] | None = None
) -> AnalysisResult:
    """The mean LLM − human embedding difference over twin pairs, its consistency and sign-flip
    p-values; with judged queries, the share of each relevant pair's score gap that lies along it
    — in-sample, and out-of-sample (direction from a seeded half of the pairs, gaps of the other)."""
    import pandas as pd

    retriever = dense_model(model, options)
    corpus = dataset.corpus
    texts = corpus.retrieval_texts()
    human = dataset.human_source
    summary: dict[str, Any] = {"model": retriever.name, "sources": {}}
    pair_rows, gap_rows = [], []
    estimates = {}
    for llm in llm_sources(dataset, sources):
        hp, lp, ids = twin_pairs(corpus, human, llm)
        e_h = retriever.embed([texts[i] for i in hp], "document")
        e_l = retriever.embed([texts[i] for i in lp], "document")
        est = estimate_direction(e_l, e_h, n_permutations=permutations, seed=seed)
        entry: dict[str, Any] = dict(est.summary())
        for k, d in enumerate(ids):
            pair_rows.append({"doc_id": d, "llm_source": llm, "projection": float(est.projections[k]), "cosine": float(est.cosines[k])})
        # relevant triples: (query, human doc, twin) for judged relevant pairs with both copies
        row_of = {d: k for k, d in enumerate(ids)}
        triples = [(q, row_of[d]) for q in dataset.evaluation_queries() for d, g in dataset.qrels[q].items() if g > 0 and d in row_of]
        if triples:
            q_vecs = retriever.embed([dataset.queries[q] for q, _ in triples], "query")
            rows = np.array([k for _, k in triples])
            ins = score_gap_decomposition(q_vecs, e_l[rows], e_h[rows], est.unit)
            entry["score_gap"] = {
                "triples": ins["triples"],
                "mean_gap": ins["mean_gap"],
                "mean_along": ins["mean_along"],
                "share_along_in_sample": ins["share_along"],
                **_held_out_share(q_vecs, e_l, e_h, rows, seed),
                "share_llm_scored_higher": float(np.mean(ins["gap"] > 0)),
            }
            for (q, k), g, a, r in zip(triples, ins["gap"], ins["along"], ins["residual"]):
                gap_rows.append({"query_id": q, "doc_id": ids[k], "llm_source": llm, "gap": float(g), "along": float(a), "residual": float(r)})
        summary["sources"][llm] = entry
        estimates[llm] = est
    tables = {"direction_pairs": pd.DataFrame(pair_rows)}
    if gap_rows:
        tables["score_gaps"] = pd.DataFrame(gap_rows)
    result = make_result("direction", dataset, {"model": model, "permutations": permutations, "seed": seed}, {"encoder": retriever.config()}, tables, summary)
    result.arrays["direction"] = estimates  # the null distributions, for the figure
    return result


class DirectionAnalysis(Analysis):
    """``sourcebias analyze direction``."""

    name = "direction"
    help = "The LLM − human embedding direction: consistency, sign-flip tests, share of score gaps along it."
    params: ClassVar[Mapping[str, Param]] = {
        "model": ENCODER,
        "split": Param(str, "test", "Qrels split whose relevant pairs give the score gaps."),
        "source": SOURCES,
        "permutations": Param(int, 1000, "Sign-flip permutations.", min=0),
        "seed": SEED,
    }

    def run(self, dataset, params, options) -> AnalysisResult:
        return direction(dataset, params["model"], sources=params["source"], permutations=params["permutations"], seed=params["seed"], options=options)

    def tables(self, result) -> list[AnalysisTable]:
        rows = llm_rows(result, ("pairs", "mean_difference_norm", "consistency", "p_norm", "p_consistency"))
        for row, entry in zip(rows, result.summary["sources"].values()):
            gap = entry.get("score_gap", {})
            row.update({k: gap.get(k) for k in ("triples", "mean_gap", "share_along_in_sample", "share_along_held_out")})
        columns = [
            text("source", "LLM source"),
            integer("pairs", "pairs"),
            sig("mean_difference_norm", "||mean difference||"),
            sig("consistency", "consistency"),
            psig("p_norm", "p norm"),
            psig("p_consistency", "p consistency"),
            integer("triples", "relevant pairs"),
            sig("mean_gap", "mean score gap"),
            sig("share_along_in_sample", "share along"),
            sig("share_along_held_out", "share along, held out"),
        ]
        caption = (
            "Sign-flip p-values of the mean difference's norm and consistency; the score gap (LLM − "
            "human) of the relevant pairs and its share along the direction, in sample and held out."
        )
        return [AnalysisTable("direction", "The LLM − human direction", columns, rows, caption)]

    def notes(self, result) -> list[str]:
        return [
            f"{src}: the share along the direction, held out: {e['score_gap']['held_out_note']}"
            for src, e in result.summary["sources"].items()
            if e.get("score_gap", {}).get("held_out_note")
        ]

    def draw(self, result, out: Path) -> dict[str, Path]:
        from sourcebias.analysis.draw import draw_direction

        return draw_direction(result, out)


register_analysis(DirectionAnalysis())
