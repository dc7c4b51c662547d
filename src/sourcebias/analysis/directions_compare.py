"""Directions, as far as they go: ``sourcebias analyze compare-directions``.

Beside the LLM − human direction of :mod:`sourcebias.analysis.direction` (the unit mean of the
twin pairs' embedding differences), three things Huang et al. (2026) look at:

**The positive − negative (PN) direction.** Per query of the split, the mean embedding of its
relevant documents (grade > 0) minus the mean embedding of its judged-irrelevant ones (grade 0),
both of the human source (the judged originals); the PN direction is the unit mean of these
per-query differences. A query with no judged-irrelevant document (NFCorpus's dev qrels have
none: every judgement is 1 or 2) has no difference: by default it is **left out and counted**
(``no_judged_negative``); with ``unjudged_negatives=K`` it takes instead K seeded random
documents of the source that the query does not judge at all (an assumption — unjudged is not
irrelevant — named in the output). A query without a relevant document is left out and counted.

**Their angle and its test.** ``cos(u_LH, u_PN)`` and the angle in degrees. Two seeded sign-flip
nulls, from the same idea as the direction's own test (a set of differences symmetric about 0
has no direction, so flipping any of them leaves its distribution unchanged): flip the per-query
PN differences with ``u_LH`` fixed, and flip the twin-pair differences with ``u_PN`` fixed; each
p is two-sided, ``(1 + #{|cos*| ≥ |cos|}) / (1 + B)``. **Random reference:** the cosine of two
independent uniformly random unit vectors in d dimensions, ``(1 + C)/2 ~ Beta((d−1)/2, (d−1)/2)``
(SciPy), gives the angle chance alone produces in d dimensions: its central 95% band and
``P(|C| ≥ |cos|)``.

**A direction shared across datasets: the joint sign-flip test.** Given the twin-pair differences
of several datasets (one model), the statistic is the norm of the average of the datasets' mean
differences, ``||(1/K) Σ_k mean(d_k)||`` (each dataset weighs the same), and — from the same
flips — the mean pairwise cosine of the datasets' mean differences (do they point the same
way?). One random flip per pair, drawn once for all datasets together, so the null is the joint
one. The flips are a ±1 matrix times the pair matrix, in chunks (NumPy BLAS); p-values as above,
one-sided (large is evidence).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from sourcebias.analysis.base import SEED, Analysis, AnalysisTable, Param, column, integer, register_analysis, sig, text
from sourcebias.analysis.common import dense_model, make_result, twin_pairs
from sourcebias.core.errors import ConfigError

_EPS = 1e-12


# -- the statistics ----------------------------------------------------------------------------------
def _p_upper(null: np.ndarray, observed: float) -> float:
    """Phipson & Smyth's ``(1 + #{null ≥ observed}) / (1 + B)`` (a 1e-12 tolerance for ties)."""
    return float((1 + np.sum(null >= observed - 1e-12)) / (1 + len(null)))


def _signs(rng, rows: int, cols: int) -> np.ndarray:
    return (rng.integers(0, 2, size=(rows, cols), dtype=np.int8) * 2 - 1).astype(np.float64)


def _unit_rows(m: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(m, axis=1, keepdims=True)
    return np.divide(m, n, out=np.zeros_like(m), where=n > _EPS)


def flipped_cosines(diffs: Any, fixed: Any, *, n_permutations: int = 1000, seed: int = 0, chunk: int = 500) -> np.ndarray:
    """cos(mean of randomly sign-flipped ``diffs``, ``fixed``) for each of ``n_permutations``
    seeded flips (the null of the angle between the diffs' direction and a fixed one)."""
    from sourcebias.analysis.direction import _matrix, unit

    d = _matrix(diffs, "diffs")
    u = unit(fixed)
    rng = np.random.default_rng(seed)
    out = np.empty(n_permutations)
    for start in range(0, n_permutations, chunk):
        b = min(chunk, n_permutations - start)
        out[start : start + b] = _unit_rows(_signs(rng, b, len(d)) @ d) @ u
    return out


def random_cosine_reference(dim: int, observed: float | None = None, *, level: float = 0.95) -> dict[str, Any]:
    """The cosine of two independent uniform random unit vectors in ``dim`` dimensions:
    ``(1 + C)/2 ~ Beta((dim−1)/2, (dim−1)/2)``. Its central ``level`` band (as cosines and
    angles) and, given ``observed``, ``P(|C| ≥ |observed|)``."""
    from scipy import stats

    if dim < 2:
        raise ConfigError(f"the random-direction reference needs at least 2 dimensions, got {dim}")
    a = (dim - 1) / 2
    lo, hi = (2 * stats.beta.ppf([(1 - level) / 2, (1 + level) / 2], a, a) - 1).tolist()
    out: dict[str, Any] = {
        "dimension": dim,
        "level": level,
        "cos_low": lo,
        "cos_high": hi,
        "angle_low_deg": float(np.degrees(np.arccos(hi))),
        "angle_high_deg": float(np.degrees(np.arccos(lo))),
        "sd": float(1 / np.sqrt(dim)),
    }
    if observed is not None:
        out["p_two_sided"] = float(min(1.0, 2 * stats.beta.sf((1 + abs(observed)) / 2, a, a)))
    return out


def angle_test(diffs_a: Any, diffs_b: Any, *, n_permutations: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The angle between the mean directions of two sets of differences (``a``: e.g. the PN
    per-query differences; ``b``: the twin pairs'), with both sign-flip nulls (flip ``a`` with
    ``b``'s direction fixed, and the reverse; independent seeds from ``seed``), two-sided, and
    the random-vector reference. Returns the numbers and the two null arrays."""
    from sourcebias.analysis.direction import direction_cosine, unit

    a, b = np.asarray(diffs_a, dtype=np.float64), np.asarray(diffs_b, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ConfigError(f"angle_test: two (n, dim) arrays of the same dimension needed, got {a.shape} and {b.shape}")
    ua, ub = unit(a.mean(axis=0)), unit(b.mean(axis=0))
    cos = direction_cosine(ua, ub)
    seeds = np.random.SeedSequence(seed).spawn(2)
    null_a = flipped_cosines(a, ub, n_permutations=n_permutations, seed=int(seeds[0].generate_state(1)[0])) if n_permutations else np.empty(0)
    null_b = flipped_cosines(b, ua, n_permutations=n_permutations, seed=int(seeds[1].generate_state(1)[0])) if n_permutations else np.empty(0)
    out = {
        "cosine": cos,
        "angle_deg": float(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))),
        "n_a": len(a),
        "n_b": len(b),
        "permutations": int(n_permutations),
        "seed": seed,
        "p_flip_a": _p_upper(np.abs(null_a), abs(cos)) if n_permutations else None,
        "p_flip_b": _p_upper(np.abs(null_b), abs(cos)) if n_permutations else None,
        "random": random_cosine_reference(a.shape[1], cos),
    }
    return {"summary": out, "null_a": null_a, "null_b": null_b}


def joint_sign_flip(diffs: Sequence[Any], *, n_permutations: int = 10_000, seed: int = 0, chunk: int = 250) -> dict[str, Any]:
    """The joint sign-flip test of a direction shared by several datasets' pair differences (see
    the module docs): the observed shared norm and mean pairwise cosine, their null distributions
    and p-values. One seeded ±1 flip per pair per permutation, for all datasets at once."""
    from sourcebias.analysis.direction import _matrix

    ds = [_matrix(d, f"diffs[{k}]") for k, d in enumerate(diffs)]
    if len(ds) < 2 or len({d.shape[1] for d in ds}) != 1:
        raise ConfigError(f"the joint test needs 2 or more datasets of one dimension, got shapes {[d.shape for d in ds]}")
    obs_norm, obs_agree = _shared_statistics([d.mean(axis=0)[None, :] for d in ds])
    rng = np.random.default_rng(seed)
    sizes = [len(d) for d in ds]
    null_norm, null_agree = np.empty(n_permutations), np.empty(n_permutations)
    for start in range(0, n_permutations, chunk):
        b = min(chunk, n_permutations - start)
        s = _signs(rng, b, sum(sizes))  # one flip per pair, all datasets at once
        cuts = np.cumsum([0, *sizes])
        means = [s[:, cuts[k] : cuts[k + 1]] @ d / len(d) for k, d in enumerate(ds)]
        null_norm[start : start + b], null_agree[start : start + b] = _shared_statistics(means)
    return {
        "datasets": len(ds),
        "pairs": sizes,
        "dimension": int(ds[0].shape[1]),
        "shared_norm": float(obs_norm[0]),
        "mean_pairwise_cosine": float(obs_agree[0]),
        "p_shared_norm": _p_upper(null_norm, float(obs_norm[0])),
        "p_pairwise_cosine": _p_upper(null_agree, float(obs_agree[0])),
        "permutations": int(n_permutations),
        "seed": seed,
        "null_shared_norm": null_norm,
        "null_pairwise_cosine": null_agree,
    }


def _shared_statistics(means: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per row: ||average of the datasets' means|| and the mean pairwise cosine of the means."""
    norm = np.linalg.norm(sum(means) / len(means), axis=1)
    units = [_unit_rows(m) for m in means]
    cos = [np.einsum("ij,ij->i", units[i], units[j]) for i in range(len(units)) for j in range(i + 1, len(units))]
    return norm, np.mean(cos, axis=0)


# -- the PN differences --------------------------------------------------------------------------------
def pn_differences(dataset, embed, *, source: str | None = None, unjudged_negatives: int = 0, seed: int = 0) -> tuple[np.ndarray, list[str], dict[str, Any]]:
    """Per query of the split: mean embedding of its relevant documents minus that of its
    judged-irrelevant ones (``source``: the human source by default; ``embed``: texts → vectors).
    Returns the differences, their query ids and the counts of queries used and left out (see the
    module docs for the policy)."""
    corpus = dataset.corpus
    source = source or dataset.human_source
    pos = corpus.positions_of_source(source)
    by_id = {corpus.doc_ids[i]: i for i in pos.tolist()}
    rng = np.random.default_rng(seed)
    plan, counts = [], {"queries": 0, "used": 0, "no_relevant": 0, "no_judged_negative": 0, "sampled_negatives": 0}
    for q in dataset.qrels:
        judged = {d: g for d, g in dataset.qrels[q].items() if d in by_id}
        counts["queries"] += 1
        rel = [by_id[d] for d, g in judged.items() if g > 0]
        neg = [by_id[d] for d, g in judged.items() if g <= 0]
        if not rel:
            counts["no_relevant"] += 1
            continue
        if not neg:
            counts["no_judged_negative"] += 1
            if not unjudged_negatives:
                continue
            pool = np.array([i for i in pos.tolist() if corpus.doc_ids[i] not in judged])
            neg = rng.choice(pool, size=min(unjudged_negatives, len(pool)), replace=False).tolist()
            counts["sampled_negatives"] += 1
        plan.append((q, rel, neg))
    counts["used"] = len(plan)
    if not plan:
        return np.empty((0, 0)), [], counts
    texts = corpus.retrieval_texts()
    need = sorted({i for _, r, n in plan for i in r + n})
    vec = dict(zip(need, np.asarray(embed([texts[i] for i in need]), dtype=np.float64)))
    diffs = np.stack([np.mean([vec[i] for i in r], axis=0) - np.mean([vec[i] for i in n], axis=0) for _, r, n in plan])
    return diffs, [q for q, _, _ in plan], counts


# -- the analysis -------------------------------------------------------------------------------------
def compare_directions(
    datasets: Sequence[Any],
    model: str = "minilm",
    *,
    source: str | None = None,
    permutations: int = 1000,
    joint_permutations: int = 10_000,
    unjudged_negatives: int = 0,
    seed: int = 0,
    options: Mapping[str, Any] | None = None,
):
    """Per dataset: the LLM − human direction (with its sign-flip test), the PN direction, their
    angle with both sign-flip nulls and the random reference; with 2 or more datasets, the angle
    between their LLM − human directions and the joint sign-flip test. ``source``: the LLM source
    (needed when a dataset has several)."""
    import pandas as pd

    if not datasets:
        raise ConfigError("compare-directions needs at least one dataset")
    retriever = dense_model(model, options)
    rows, angles, counts, lh_diffs = [], [], [], []
    arrays: dict[str, Any] = {"angles": {}}
    for ds in datasets:
        one = _one_dataset(ds, retriever, source=source, permutations=permutations, unjudged_negatives=unjudged_negatives, seed=seed)
        rows += one["rows"]
        counts.append(one["counts"])
        lh_diffs.append(one["lh_diffs"])
        if one["angle"] is not None:
            angles.append({"dataset": ds.name, "a": "positive − negative", "b": "LLM − human", **_flat_angle(one["angle"]["summary"])})
            arrays["angles"][ds.name] = one["angle"]
    summary: dict[str, Any] = {"model": retriever.name, "datasets": [d.name for d in datasets], "pn_queries": counts, "pn_policy": _policy(unjudged_negatives)}
    if len(datasets) > 1:
        summary["joint"], arrays["joint"], cross = _joint(datasets, lh_diffs, joint_permutations=joint_permutations, permutations=permutations, seed=seed)
        angles += cross
    tables = {"directions": pd.DataFrame(rows), "angles": pd.DataFrame(angles), "pn_queries": pd.DataFrame(counts)}
    parameters = {
        "model": model,
        "source": source,
        "permutations": permutations,
        "joint_permutations": joint_permutations,
        "unjudged_negatives": unjudged_negatives,
        "seed": seed,
        "datasets": [{"path": str(d.root), "split": d.split} for d in datasets],
    }
    result = make_result("compare-directions", datasets[0], parameters, {"encoder": retriever.config()}, tables, summary)
    result.arrays.update(arrays)
    return result


def _policy(k: int) -> str:
    if not k:
        return "a query without a judged-irrelevant document (grade 0) is left out of the PN direction and counted (no_judged_negative)"
    return (
        f"a query without a judged-irrelevant document takes {k} seeded random documents it does "
        "not judge as negatives (assumes unjudged = irrelevant); counted (sampled_negatives)"
    )


def _flat_angle(a: Mapping[str, Any]) -> dict[str, Any]:
    r = a["random"]
    return {k: v for k, v in a.items() if k != "random"} | {
        "random_cos_low": r["cos_low"],
        "random_cos_high": r["cos_high"],
        "random_angle_low_deg": r["angle_low_deg"],
        "random_angle_high_deg": r["angle_high_deg"],
        "p_random": r.get("p_two_sided"),
        "dimension": r["dimension"],
    }


def _llm_source(ds, source: str | None) -> str:
    others = [source] if source else ds.other_sources
    if len(others) != 1 or others[0] not in ds.other_sources:
        raise ConfigError(f"{ds.name}: name one LLM source with --source (sources: {', '.join(ds.other_sources)})")
    return others[0]


def _one_dataset(ds, retriever, *, source, permutations, unjudged_negatives, seed) -> dict[str, Any]:
    """The LLM − human and PN directions of one dataset, their angle and test, and the rows."""
    from sourcebias.analysis.direction import estimate_direction

    llm = _llm_source(ds, source)
    texts = ds.corpus.retrieval_texts()
    hp, lp, _ = twin_pairs(ds.corpus, ds.human_source, llm)
    diffs = retriever.embed([texts[i] for i in lp], "document").astype(np.float64) - retriever.embed([texts[i] for i in hp], "document").astype(np.float64)
    lh = estimate_direction(diffs, np.zeros_like(diffs), n_permutations=permutations, seed=seed, keep_projections=0)
    rows = [{"dataset": ds.name, "direction": "LLM − human", "llm_source": llm, "units": "twin pairs", **lh.summary()}]
    pn, _, counts = pn_differences(ds, lambda t: retriever.embed(t, "document"), unjudged_negatives=unjudged_negatives, seed=seed)
    counts = {"dataset": ds.name, **counts}
    angle = None
    if len(pn) >= 2:
        est = estimate_direction(pn, np.zeros_like(pn), n_permutations=permutations, seed=seed, keep_projections=0)
        rows.append({"dataset": ds.name, "direction": "positive − negative", "llm_source": None, "units": "queries", **est.summary()})
        angle = angle_test(pn, diffs, n_permutations=permutations, seed=seed)
    else:
        rows.append(
            {
                "dataset": ds.name,
                "direction": "positive − negative",
                "llm_source": None,
                "units": "queries",
                "pairs": len(pn),
                "note": f"undefined: {len(pn)} queries with both relevant and judged-irrelevant documents (of "
                f"{counts['queries']}; {counts['no_judged_negative']} without a judged-irrelevant one)",
            }
        )
    return {"rows": rows, "counts": counts, "lh_diffs": diffs, "angle": angle}


def _joint(datasets, lh_diffs, *, joint_permutations, permutations, seed):
    """The joint sign-flip test over the datasets' twin pairs, and the angle between each two
    datasets' LLM − human directions (with their sign-flip nulls and the random reference)."""
    joint = joint_sign_flip(lh_diffs, n_permutations=joint_permutations, seed=seed)
    summary = {k: v for k, v in joint.items() if not k.startswith("null_")} | {"datasets": [d.name for d in datasets]}
    cross = []
    for i in range(len(datasets)):
        for j in range(i + 1, len(datasets)):
            a = angle_test(lh_diffs[i], lh_diffs[j], n_permutations=permutations, seed=seed)
            cross.append(
                {
                    "dataset": f"{datasets[i].name} vs {datasets[j].name}",
                    "a": f"LLM − human ({datasets[i].name})",
                    "b": f"LLM − human ({datasets[j].name})",
                    **_flat_angle(a["summary"]),
                }
            )
    return summary, joint, cross


# -- figures and the lines the CLI prints ------------------------------------------------------------
def plot_angle(
    null_a: Any, null_b: Any, summary: Mapping[str, Any], path: str | Path, *, labels: tuple[str, str] = ("PN", "LLM − human"), title: str | None = None
) -> Path:
    """The observed cosine of two directions against both sign-flip nulls (histograms) and the
    cosine of two random unit vectors in d dimensions (its exact density, SciPy's Beta)."""
    import matplotlib
    from scipy import stats

    from sourcebias.analysis import figures as fg

    dim = int(summary["random"]["dimension"])
    with matplotlib.rc_context(fg._STYLE):
        fig, (ax,) = fg._figure(1, 3.0)
        fig.set_size_inches(5.0, 3.2)
        lo = min(-0.3, float(np.min(null_a, initial=0)), float(np.min(null_b, initial=0)), summary["cosine"] - 0.05)
        hi = max(0.3, float(np.max(null_a, initial=0)), float(np.max(null_b, initial=0)), summary["cosine"] + 0.05)
        bins = np.linspace(lo, hi, 60)
        if len(null_a):
            ax.hist(null_a, bins=bins, density=True, color=fg.NULL_COLOR, alpha=0.6, label=f"flip {labels[0]} (p {summary['p_flip_a']:.3g})")
        if len(null_b):
            ax.hist(null_b, bins=bins, density=True, color=fg.LLM_COLORS[2], alpha=0.45, label=f"flip {labels[1]} (p {summary['p_flip_b']:.3g})")
        c = np.linspace(lo, hi, 400)
        a = (dim - 1) / 2
        ax.plot(
            c, stats.beta.pdf((1 + c) / 2, a, a) / 2, color="black", lw=1.2, label=f"random unit vectors, d = {dim} (p {summary['random']['p_two_sided']:.3g})"
        )
        ax.axvline(summary["cosine"], color=fg.PAIR_COLOR, lw=2, label=f"observed cos {summary['cosine']:.3f} ({summary['angle_deg']:.1f}°)")
        ax.set_xlabel(f"cosine of the {labels[0]} and {labels[1]} directions")
        ax.set_ylabel("density")
        fg._headroom(ax, 1.5, integer=False)
        ax.legend(loc="upper left")
        ax.set_title(title or "Angle between two directions", fontsize=8.5)
        return fg._save(fig, path)


def plot_joint(joint: Mapping[str, Any], path: str | Path, *, title: str | None = None) -> Path:
    """The joint sign-flip test: the null of the shared norm (left) and of the mean pairwise
    cosine (right), each with the observed value."""
    import matplotlib

    from sourcebias.analysis import figures as fg

    with matplotlib.rc_context(fg._STYLE):
        fig, axes = fg._figure(2, 3.0)
        for ax, key, label in zip(
            axes,
            ("shared_norm", "pairwise_cosine"),
            ("shared norm ||average of the datasets' mean(e_LLM − e_human)||", "cosine of the datasets' mean differences"),
        ):
            null, obs = joint[f"null_{key}"], joint[key if key == "shared_norm" else "mean_pairwise_cosine"]
            lo, hi = min(float(null.min()), obs), max(float(null.max()), obs)
            ax.hist(
                null,
                bins=np.linspace(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo), 60),
                color=fg.NULL_COLOR,
                alpha=0.7,
                label=f"joint sign flips (B = {len(null):,})",
            )
            ax.axvline(obs, color=fg.PAIR_COLOR, lw=2, label=f"observed {obs:.3g} (p {joint[f'p_{key}']:.3g})")
            ax.set_xlabel(label)
            ax.set_ylabel("flips")
            fg._headroom(ax, 1.4)
            ax.legend(loc="upper center")
        fig.suptitle(title or "Joint sign-flip test", fontsize=9)
        return fg._save(fig, path)


def draw(result, out: Path) -> dict[str, Path]:
    """The figures of a compare-directions result (for :func:`sourcebias.analysis.draw.draw`)."""
    figs: dict[str, Path] = {}
    model = result.summary.get("model")
    k = result.parameters.get("unjudged_negatives") or 0
    neg = f"; {k} unjudged as negatives if none judged" if k else ""
    for name, a in result.arrays.get("angles", {}).items():
        s = a["summary"]
        figs[f"angle-{name}"] = plot_angle(
            a["null_a"],
            a["null_b"],
            s,
            out / f"angle-{name}.png",
            title=f"{name}, {model}: PN ({s['n_a']:,} queries{neg})\nvs LLM − human ({s['n_b']:,} twin pairs)",
        )
    joint = result.arrays.get("joint")
    if joint is not None:
        sizes = ", ".join(f"{d} {n:,}" for d, n in zip(result.summary["joint"]["datasets"], joint["pairs"]))
        figs["joint"] = plot_joint(
            joint, out / "joint-signflip.png", title=f"{model}: a shared LLM − human direction? Joint sign flips over {sizes} twin pairs"
        )
    return figs


class CompareDirections(Analysis):
    """``sourcebias analyze compare-directions``."""

    name = "compare-directions"
    help = "LLM − human vs positive − negative directions: angle, sign-flip tests, random reference; with --with, the joint cross-dataset sign-flip test."
    params: ClassVar[Mapping[str, Param]] = {
        "model": Param(str, "minilm", "Encoder: minilm, st:NAME_OR_PATH or a preset."),
        "also": Param(
            list[str] | None,
            None,
            "Another dataset for the joint sign-flip test (repeat); its qrels split after a colon (default: --split).",
            flags=("--with",),
            metavar="DIR[:SPLIT]",
        ),
        "split": Param(str, "test", "Qrels split of DATASET_DIR (the PN direction's judgements)."),
        "source": Param(str | None, None, "The LLM source (needed when a dataset has several).", flags=("--source", "-s")),
        "permutations": Param(int, 1000, "Sign flips of each dataset's tests.", min=0),
        "joint_permutations": Param(int, 10_000, "Sign flips of the joint test.", min=1),
        "unjudged_negatives": Param(
            int, 0, "For a query without a judged-irrelevant document: this many seeded random unjudged documents as negatives (0: leave the query out).", min=0
        ),
        "seed": SEED,
    }

    def run(self, dataset, params, options):
        from sourcebias.data import load_dataset

        p, others = params, []
        for spec in p["also"] or []:
            path, _, sp = spec.rpartition(":") if ":" in spec and "/" not in spec.rpartition(":")[2] else (spec, "", "")
            others.append(load_dataset(Path(path), split=sp or p["split"]))
        return compare_directions(
            [dataset, *others],
            p["model"],
            source=p["source"],
            permutations=p["permutations"],
            joint_permutations=p["joint_permutations"],
            unjudged_negatives=p["unjudged_negatives"],
            seed=p["seed"],
            options=options,
        )

    def tables(self, result) -> list[AnalysisTable]:
        s, t = result.summary, result.tables
        pn = [
            text("dataset", "dataset"),
            integer("used", "PN queries"),
            integer("queries", "judged queries"),
            integer("no_relevant", "without a relevant"),
            integer("no_judged_negative", "without a judged-irrelevant"),
            integer("sampled_negatives", "with sampled negatives"),
        ]
        directions = [
            text("dataset", "dataset"),
            text("direction", "direction"),
            integer("pairs", "pairs"),
            text("units", "of"),
            sig("mean_difference_norm", "||mean||"),
            column("consistency", "consistency", "num", 3),
            column("p_norm", "sign-flip p", "sig", 3),
            integer("permutations", "flips"),
        ]
        angles = [
            text("dataset", "dataset"),
            text("a", "a"),
            text("b", "b"),
            column("cosine", "cos", "num", 3),
            column("angle_deg", "angle °", "num", 1),
            column("p_flip_a", "p (flip a)", "sig", 3),
            column("p_flip_b", "p (flip b)", "sig", 3),
            integer("dimension", "d"),
            column("random_cos_low", "random 95% low", "num", 3),
            column("random_cos_high", "random 95% high", "num", 3),
            column("p_random", "p (random)", "sig", 3),
        ]
        out = [
            AnalysisTable("pn_queries", "PN directions: the judged queries", pn, t["pn_queries"].to_dict("records"), f"PN policy: {s['pn_policy']}"),
            AnalysisTable("directions", "Directions", directions, [r for r in t["directions"].to_dict("records") if not isinstance(r.get("note"), str)]),
            AnalysisTable(
                "angles",
                "Angles between directions",
                angles,
                t["angles"].to_dict("records"),
                "Sign-flip p of each direction's flips; random unit vectors in d dimensions as the reference.",
            ),
        ]
        j = s.get("joint")
        if j:
            row = {"datasets": ", ".join(f"{d} ({n:,} pairs)" for d, n in zip(j["datasets"], j["pairs"])), **j}
            columns = [
                text("datasets", "datasets"),
                sig("shared_norm", "shared norm"),
                column("p_shared_norm", "p", "sig", 3),
                column("mean_pairwise_cosine", "mean pairwise cos", "num", 3),
                column("p_pairwise_cosine", "p", "sig", 3),
                integer("permutations", "flips"),
                integer("seed", "seed"),
            ]
            out.append(AnalysisTable("joint", "Joint sign-flip test", columns, [row]))
        return out

    def notes(self, result) -> list[str]:
        return [f"{r['dataset']} {r['direction']}: {r['note']}" for r in result.tables["directions"].to_dict("records") if isinstance(r.get("note"), str)]

    def draw(self, result, out: Path) -> dict[str, Path]:
        return draw(result, out)


register_analysis(CompareDirections())


__all__ = [
    "angle_test",
    "compare_directions",
    "draw",
    "flipped_cosines",
    "joint_sign_flip",
    "plot_angle",
    "plot_joint",
    "pn_differences",
    "random_cosine_reference",
]
