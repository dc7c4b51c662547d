"""`sourcebias power`: predicted power against simulated studies, the closed forms against
statsmodels and SciPy, undefined pilots, the output folder and the command."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from conftest import write_jsonl, write_qrels
from scipy import stats

from sourcebias.power import ANALYTIC, RESAMPLING, PairedPower, PowerSettings, TwinPower, load_power, power_analysis
from sourcebias.power.twin import FlipTable, clustered_z_power, d_moments

ALPHA = 0.05
STUDIES = 2000  # simulated studies behind each "true" rejection rate


# -- validation: predicted power vs the rejection rate of simulated studies -------------------------
def skewed_population(size: int = 200, seed: int = 11) -> np.ndarray:
    """A fixed, centred, heavy-tailed set of per-query differences (over half near 0, the rest a
    long gamma tail on either side, as NDCG differences are); a population is uniform over such
    values plus the effect."""
    rng = np.random.default_rng(seed)
    x = np.where(rng.random(size) < 0.55, rng.normal(0, 0.02, size), rng.gamma(1.5, 0.2, size) * rng.choice([-1, 1], size, p=[0.4, 0.6]))
    return x - x.mean()


def normal_population(size: int = 200, seed: int = 2) -> np.ndarray:
    x = np.random.default_rng(seed).normal(0, 0.25, size)
    return x - x.mean()


def simulated_t_rejections(population: np.ndarray, effect: float, n: int, seed: int) -> float:
    """Studies of n queries drawn from the population with the effect, each tested with
    scipy.stats.ttest_1samp, as the analysis does."""
    rng = np.random.default_rng(seed)
    x = population[rng.integers(0, len(population), size=(STUDIES, n))] + effect
    return float(np.mean(stats.ttest_1samp(x, 0.0, axis=1).pvalue < ALPHA))


@pytest.mark.parametrize("shape", ["heavy-tailed", "normal"])
@pytest.mark.parametrize("n, target", [(15, 0.3), (15, 0.8), (40, 0.6), (100, 0.85), (60, 0.05)])
def test_paired_power_matches_simulated_studies(shape, n, target):
    """The effect is known (the population's mean); the pilot shows another (0.07) and the
    prediction shifts it. Resampling must match the rejection rate of 2,000 simulated studies
    within 3 points everywhere; the analytic t formula assumes near-normal means, so it is held
    to that only for normal differences or n >= 40 (at n = 15 with heavy tails it says 0.30
    where the studies reject 0.39: the reason both are shown)."""
    from statsmodels.stats.power import TTestPower

    base = skewed_population() if shape == "heavy-tailed" else normal_population()
    sd = base.std(ddof=1)
    effect = 0.0 if target == ALPHA else float(TTestPower().solve_power(nobs=n, alpha=ALPHA, power=target)) * sd
    truth = simulated_t_rejections(base, effect, n, seed=n)
    model = PairedPower(base + 0.07, alpha=ALPHA, resamples=20_000, seed=1, key="validation")
    methods = (RESAMPLING, ANALYTIC) if shape == "normal" or n >= 40 else (RESAMPLING,)
    for method in methods:
        p = model.power(method, n, effect)
        assert abs(p - truth) <= 0.03, f"{method}: predicted {p:.3f}, {STUDIES} simulated studies reject {truth:.3f}"


def clustered_pairs(queries: int = 300, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Per query 1-3 decided pairs whose outcomes are correlated within the query (each query
    has its own propensity to put the LLM copy first): LLM-first and human-first counts."""
    rng = np.random.default_rng(seed)
    m = rng.integers(1, 4, queries)
    propensity = rng.beta(0.8, 0.8, queries)
    a = rng.binomial(m, propensity)
    return a.astype(float), (m - a).astype(float)


def study_counts(a: np.ndarray, b: np.ndarray, n: int, rate: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per query of STUDIES studies of n queries (drawn with all their pairs) the LLM-first and
    human-first counts after each pair is flipped on its own (numpy's binomial, not the inverse
    CDF the code uses) so that the population's rate is ``rate``: human-first pairs to LLM-first
    when it is above the pilot's, the other way below."""
    pilot = a.sum() / (a.sum() + b.sum())
    idx = rng.integers(0, len(a), (STUDIES, n))
    k, h = a[idx].astype(np.int64), b[idx].astype(np.int64)
    if rate >= pilot:
        moved = rng.binomial(h, (rate - pilot) / (1 - pilot))
        return k + moved, h - moved
    moved = rng.binomial(k, (pilot - rate) / pilot)
    return k - moved, h + moved


def simulated_cluster_rejections(a: np.ndarray, b: np.ndarray, n: int, rate: float, seed: int) -> float:
    """Rejection rate of the query-clustered test in its large-sample form, computed here by
    hand: z = (|Σd| − 1) / √Σd² with d = llm_first − human_first per query, two-sided normal p."""
    k, h = study_counts(a, b, n, rate, np.random.default_rng(seed))
    d = (k - h).astype(float)
    total, squares = d.sum(axis=1), (d * d).sum(axis=1)
    p = np.full(STUDIES, np.nan)
    ok = squares > 0
    p[ok] = 2 * stats.norm.sf(np.maximum(0, np.abs(total[ok]) - 1) / np.sqrt(squares[ok]))
    return float(np.mean(np.nan_to_num(p, nan=1.0) < ALPHA))


def simulated_sign_rejections(a: np.ndarray, b: np.ndarray, n: int, rate: float, seed: int) -> float:
    """Rejection rate of the exact sign test over the pooled pairs (scipy's binomtest)."""
    k, h = study_counts(a, b, n, rate, np.random.default_rng(seed))
    p_of: dict[tuple[int, int], float] = {}
    hits = 0
    for key in zip(k.sum(axis=1).tolist(), (k + h).sum(axis=1).tolist()):
        if key not in p_of:
            p_of[key] = stats.binomtest(*key, 0.5).pvalue if key[1] else 1.0
        hits += p_of[key] < ALPHA
    return hits / STUDIES


@pytest.mark.parametrize("n, rate", [(40, None), (60, 0.6), (150, 0.56), (80, 0.4), (300, 0.53)])
def test_twin_power_matches_simulated_studies(n, rate):
    a, b = clustered_pairs()
    pilot = a.sum() / (a.sum() + b.sum())
    rate = pilot if rate is None else rate
    truth = simulated_cluster_rejections(a, b, n, rate, seed=n)
    model = TwinPower(a, b, alpha=ALPHA, resamples=20_000, seed=2, key="validation")
    for method in (RESAMPLING, ANALYTIC):
        predicted = model.power(method, n, rate)
        assert abs(predicted - truth) <= 0.03, f"{method}: predicted {predicted:.3f}, simulated {truth:.3f}"


def test_clustered_test_keeps_its_size_where_the_pair_sign_test_does_not():
    """With no effect (rate 1/2), pairs that share a query make the pooled sign test reject more
    often than α; the clustered test, whose power is computed, stays near α."""
    a, b = clustered_pairs()
    model = TwinPower(a, b, alpha=ALPHA, resamples=20_000, seed=2, key="validation")
    assert simulated_sign_rejections(a, b, 100, 0.5, seed=7) > ALPHA + 0.02
    truth = simulated_cluster_rejections(a, b, 100, 0.5, seed=7)
    assert abs(truth - ALPHA) <= 0.015
    assert abs(model.power(RESAMPLING, 100, 0.5) - truth) <= 0.03
    assert abs(model.power(ANALYTIC, 100, 0.5) - truth) <= 0.015


@pytest.mark.parametrize("n, rate", [(20, 0.5), (20, 0.65)])
def test_twin_power_matches_evaluates_exact_test(n, rate):
    """Against the test `evaluate` reports (exact sign-flip for at most 20 queries), not its
    large-sample form."""
    from sourcebias.evaluation.stats.twin_preference import cluster_sign_flip_test

    a, b = clustered_pairs()
    k, h = study_counts(a, b, n, rate, np.random.default_rng(n))
    truth = np.mean([cluster_sign_flip_test(k[i], h[i])["p"] < ALPHA for i in range(STUDIES)])
    model = TwinPower(a, b, alpha=ALPHA, resamples=20_000, seed=2, key="validation")
    for method in (RESAMPLING, ANALYTIC):
        assert abs(model.power(method, n, rate) - truth) <= 0.03, f"{method}: predicted {model.power(method, n, rate):.3f}, exact test rejects {truth:.3f}"


def test_resampled_twin_power_is_monotone_in_the_rate():
    a, b = clustered_pairs()
    model = TwinPower(a, b, alpha=ALPHA, resamples=4000, seed=5, key="mono")
    up = [model.power(RESAMPLING, 60, r) for r in np.linspace(model.rate, 0.8, 12)]
    down = [model.power(RESAMPLING, 60, r) for r in np.linspace(model.rate, 0.2, 12)]
    assert all(x <= y for x, y in itertools.pairwise(up)) and all(x <= y for x, y in itertools.pairwise(down))


# -- closed forms -----------------------------------------------------------------------------------
def test_flip_quantiles_are_binom_ppf():
    rng = np.random.default_rng(1)
    counts = rng.integers(0, 25, 120).astype(float)
    for f in (0.0, 0.17, 0.5, 0.93, 1.0):
        idx, u = rng.integers(0, 120, (30, 50)), 1.0 - rng.random((30, 50))
        assert np.array_equal(FlipTable(counts, f).flips(idx, u), stats.binom.ppf(u, counts[idx], f))


def test_d_moments_by_enumeration():
    a, b = np.array([2.0, 0.0, 1.0, 3.0]), np.array([1.0, 2.0, 0.0, 4.0])
    pilot = a.sum() / (a.sum() + b.sum())
    for rate in (0.3, pilot, 0.7):
        up = rate >= pilot
        f = (rate - pilot) / (1 - pilot) if up else (pilot - rate) / pilot
        m1 = m2 = 0.0
        for ai, bi in zip(a, b):  # d = a - b ± 2X, X ~ Bin(flipped, f), by its pmf
            c = int(bi if up else ai)
            for x in range(c + 1):
                d = ai - bi + (2 * x if up else -2 * x)
                m1 += stats.binom.pmf(x, c, f) * d / len(a)
                m2 += stats.binom.pmf(x, c, f) * d * d / len(a)
        assert d_moments(a, b, pilot, rate) == pytest.approx((m1, m2), rel=1e-12, abs=1e-12)


def test_clustered_z_power_closed_form():
    # reject when |Σd| > 1 + z·√(n·m2), Σd ~ N(n·μ, n·(m2 − μ²))
    n, mu, m2 = 90, 0.12, 1.7
    bar, sd = 1 + stats.norm.isf(ALPHA / 2) * math.sqrt(n * m2), math.sqrt(n * (m2 - mu**2))
    by_hand = stats.norm.sf(bar, loc=n * mu, scale=sd) + stats.norm.cdf(-bar, loc=n * mu, scale=sd)
    assert clustered_z_power(n, mu, m2, ALPHA) == pytest.approx(by_hand, rel=1e-12)
    assert clustered_z_power(n, 0.0, m2, ALPHA) < ALPHA


def test_analytic_mde_and_n_are_statsmodels_solve_power():
    from statsmodels.stats.power import TTestPower

    d = skewed_population() + 0.03
    model = PairedPower(d, alpha=ALPHA, resamples=200, seed=0, key="x")
    sd = d.std(ddof=1)
    for n in (10, 50, 300):
        mde, note = model.mde(ANALYTIC, n, 0.8)
        assert not note
        assert mde == pytest.approx(TTestPower().solve_power(nobs=n, alpha=ALPHA, power=0.8) * sd, rel=1e-3)
    n_needed, _ = model.n_needed(ANALYTIC, 0.03, 0.8, 20_000)
    exact = TTestPower().solve_power(effect_size=0.03 / sd, alpha=ALPHA, power=0.8)
    assert n_needed == math.ceil(exact)


def test_resampled_mde_reaches_the_power_and_a_bit_less_does_not():
    model = PairedPower(skewed_population() - 0.02, alpha=ALPHA, resamples=4000, seed=9, key="x")
    mde, _ = model.mde(RESAMPLING, 50, 0.8)
    assert mde < 0  # the pilot's direction
    assert model.power(RESAMPLING, 50, mde) >= 0.8
    assert model.power(RESAMPLING, 50, mde * 0.98) < 0.8
    n, _ = model.n_needed(RESAMPLING, -0.05, 0.8, 20_000)
    assert model.power(RESAMPLING, n, -0.05) >= 0.8 > model.power(RESAMPLING, n - 1, -0.05)


# -- undefined, never a wrong number ------------------------------------------------------------------
def test_undefined_pilots_say_so():
    constant = PairedPower(np.full(30, 0.1), alpha=ALPHA, resamples=200, seed=0, key="c")
    assert constant.undefined.startswith("undefined: every pilot query has the same difference")
    value, note = constant.mde(RESAMPLING, 50, 0.8)
    assert math.isnan(value) and note == constant.undefined
    assert constant.n_needed(ANALYTIC, 0.1, 0.8, 1000) == (None, constant.undefined)

    one = PairedPower(np.array([0.3, np.nan]), alpha=ALPHA, resamples=200, seed=0, key="o")
    assert one.undefined.startswith("undefined: the pilot has fewer than 2 queries")

    nothing = TwinPower(np.zeros(5), np.zeros(5), alpha=ALPHA, resamples=200, seed=0, key="t")
    assert nothing.undefined.startswith("undefined: the pilot has no decided relevant pair")
    assert math.isnan(nothing.power(RESAMPLING, 10, 0.6))


def test_unreachable_and_impossible_effects_are_not_numbers():
    # 3 queries with one pair each: z = Σd/√Σd² is at most 3/√3 = 1.73 < 1.96
    twin = TwinPower(np.array([1.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0]), alpha=ALPHA, resamples=500, seed=0, key="t")
    for method in (RESAMPLING, ANALYTIC):
        value, note = twin.mde(method, 3, 0.8)
        assert math.isnan(value) and note.startswith("not reachable")
    diff = PairedPower(skewed_population(), alpha=ALPHA, resamples=200, seed=0, key="d")
    assert diff.n_needed(ANALYTIC, 0.0, 0.8, 1000)[0] is None  # no effect to detect
    n, note = diff.n_needed(ANALYTIC, 1.5, 0.8, 1000)  # a difference of two values in [0, 1] is at most 1
    assert n is None and "beyond" in note
    n, note = diff.n_needed(RESAMPLING, 0.001, 0.8, 300)
    assert n is None and note.startswith("more than 300 queries")


def test_seeded():
    a = PairedPower(skewed_population(), alpha=ALPHA, resamples=500, seed=4, key="k")
    b = PairedPower(skewed_population(), alpha=ALPHA, resamples=500, seed=4, key="k")
    c = PairedPower(skewed_population(), alpha=ALPHA, resamples=500, seed=5, key="k")
    assert a.mde(RESAMPLING, 40, 0.8) == b.mde(RESAMPLING, 40, 0.8) != c.mde(RESAMPLING, 40, 0.8)


# -- a pilot result, the folder, the command ---------------------------------------------------------
def synthetic_dataset(root, queries: int = 40):
    """A small Cocktail-layout dataset where BM25 ranks sometimes the original, sometimes the twin
    first: query i shares a word with its human document (even i) or with its twin (odd i)."""
    human, llm, qs, qrels = [], [], [], []
    for i in range(queries):
        human.append({"_id": f"d{i}", "title": "", "text": f"topic{i} alpha{i} common words here"})
        llm.append({"_id": f"d{i}", "title": "", "text": f"topic{i} beta{i} common words there"})
        qs.append({"_id": f"q{i}", "text": f"topic{i} {'alpha' if i % 2 == 0 else 'beta'}{i}" if i % 3 else f"topic{i}"})
        qrels.append((f"q{i}", f"d{i}", 1))
    write_jsonl(root / "corpus" / "human.jsonl", human)
    write_jsonl(root / "corpus" / "llm.jsonl", llm)
    write_jsonl(root / "queries.jsonl", qs)
    write_qrels(root / "qrels" / "test.tsv", qrels)
    return root


def run_cli(args, capsys):
    from sourcebias.cli.main import main

    with pytest.raises(SystemExit) as info:
        main(args)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


@pytest.fixture
def pilot_dir(tmp_path, capsys):
    data = synthetic_dataset(tmp_path / "data")
    code, _, err = run_cli(["evaluate", str(data), "--retriever", "bm25", "--k", "1", "3", "-o", str(tmp_path / "pilot")], capsys)
    assert code in (0, None), err
    return tmp_path / "pilot"


def test_power_command_writes_a_loadable_folder(pilot_dir, tmp_path, capsys):
    from sourcebias.core.artifacts import load_artifact

    out = tmp_path / "power"
    args = [
        "power",
        str(pilot_dir),
        "--n",
        "20",
        "40",
        "--effect",
        "rel_delta=30",
        "twin=0.7",
        "--resamples",
        "300",
        "--seed",
        "3",
        "--max-n",
        "3000",
        "-o",
        str(out),
    ]
    code, stdout, err = run_cli(args, capsys)
    assert code in (0, None), err
    assert "MDE" in stdout and "twin" in stdout and "resampling / analytic" in " ".join(stdout.split()) and "marks *" in stdout
    result = load_power(out)
    assert load_artifact(out) == result
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "power"
    p = manifest["parameters"]
    assert (p["seed"], p["alpha"], p["power"], p["resamples"], p["methods"]) == (3, 0.05, 0.8, 300, ["resampling", "analytic"])
    assert {"power.json", "power.csv", "pilots.csv", "curves.csv", "power_curves.png", "summary.md", "summary.tex"} <= set(manifest["outputs"]["files"])
    assert (out / "power_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    stats_seen = {r["statistic"] for r in result.pilots}
    assert stats_seen == {"relative_delta_ci", "paired_tests", "twin_preference", "delta_ndsr"}  # the statistic registry's names
    rows = [r for r in result.rows if r["statistic"] == "relative_delta_ci" and r["quantity"] == "n_needed"]
    assert {r["effect"] for r in rows} == {30.0} and {r["effect_source"] for r in rows} == {"given"}


def test_relative_delta_is_the_difference_on_the_pilots_scale(pilot_dir):
    from sourcebias.evaluation import load_result

    res = power_analysis(
        load_result(pilot_dir), settings=PowerSettings(ns=(30,), resamples=300, max_n=2000), statistics=["rel_delta", "difference"], measures=["NDCG@3"]
    )
    rd = next(p for p in res.pilots if p["statistic"] == "relative_delta_ci")
    level = rd["level"]
    for method in (RESAMPLING, ANALYTIC):
        a = res.value("relative_delta_ci", "bm25", "mde", method, n=30)
        b = res.value("paired_tests", "bm25", "mde", method, n=30)
        assert a == pytest.approx(b * 100 / level, rel=1e-4)  # each found to the search's tolerance (1e-5 of its span)


def test_pilot_values_are_the_analysis_statistics(pilot_dir):
    from sourcebias.data import load_dataset
    from sourcebias.evaluation import MIXED, RunKey, load_result
    from sourcebias.evaluation.stats.delta_ndsr import delta_ndsr
    from sourcebias.evaluation.stats.twin_preference import twin_preference

    result = load_result(pilot_dir)
    ds = load_dataset(result.dataset["path"], split="test")
    res = power_analysis(result, qrels=ds.qrels, settings=PowerSettings(ns=(20,), resamples=200, max_n=500))
    run = result.runs[RunKey("bm25", MIXED)]
    twin = twin_preference(run, ds.qrels, result.query_ids, "human", "llm")
    ndsr = delta_ndsr(run, result.query_ids, "human", "llm", 10)
    by = {p["statistic"]: p for p in res.pilots if p["measure"] in ("pairs", "NDSR@10")}
    assert by["twin_preference"]["estimate"] == twin["rate"] and by["twin_preference"]["p_value"] == twin["p_cluster"]
    assert by["delta_ndsr"]["estimate"] == pytest.approx(ndsr["delta"], abs=1e-15)


def test_output_folder_is_checked_before_the_pilot_is_read(tmp_path, capsys):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("not sourcebias'")
    code, _, err = run_cli(["power", str(tmp_path / "no-such-pilot"), "-o", str(foreign)], capsys)
    assert code == 2 and "holds no sourcebias manifest" in err


def test_a_grid_root_is_refused_with_its_cells(tmp_path, capsys):
    (tmp_path / "grid" / "cells" / "nq" / "bm25").mkdir(parents=True)
    (tmp_path / "grid" / "grid.json").write_text("{}")
    (tmp_path / "grid" / "cells" / "nq" / "bm25" / "result.json").write_text("{}")
    code, _, err = run_cli(["power", str(tmp_path / "grid")], capsys)
    assert code == 2 and "cells/nq/bm25" in err


def test_bad_options_stop_with_one_message(pilot_dir, capsys):
    for args, message in (
        (["--effect", "twin=55"], "share of pairs in [0, 1]"),
        (["--effect", "speed=3"], "unknown statistic"),
        (["--power", "0.01"], "power must be between alpha"),
    ):
        code, _, err = run_cli(["power", str(pilot_dir), *args], capsys)
        assert code == 2 and message in err, err


def test_power_without_a_terminal_prints_plain_progress_lines(pilot_dir, tmp_path):
    """A log (no terminal) shows power's long step moving: plain lines on stderr, no ANSI codes."""
    import os
    import re
    import subprocess
    import sys

    env = {**os.environ, "SOURCEBIAS_PROGRESS_SECONDS": "0.005"}
    cmd = [sys.executable, "-m", "sourcebias", "power", str(pilot_dir), "--n", "20", "--resamples", "200", "--max-n", "500", "-o", str(tmp_path / "p")]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert not re.search(r"\x1b\[", proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("Power")]
    assert lines and any(line.endswith("(done)") for line in lines), proc.stderr
