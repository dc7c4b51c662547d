"""Does `sourcebias power` predict power? Predicted power against the rejection rate of 2,000
simulated studies, over many configurations; writes a CSV and a figure, prints the largest gap.

    python benchmarks/power_validation.py -o out/power-validation [--pilot out/nq-utd]

Populations with a known effect (the truth is simulated from the population itself, tested with
scipy's own tests, not with sourcebias' code):

* paired differences, heavy-tailed (over half near 0, gamma tails) and normal; with --pilot, also
  the per-query NDCG@3 differences of each retriever of a real `evaluate` folder, centred;
  the pilot shows another effect and the prediction shifts it (d - mean(d) + δ); studies tested
  with scipy.stats.ttest_1samp;
* twin pairs clustered by query (1-3 decided pairs, a per-query propensity ~ Beta(0.8, 0.8)); the
  rate moved by flipping pairs one at a time (numpy's binomial per query); studies tested with
  the query-clustered sign-flip test that `evaluate` uses, in its large-sample form
  z = (|Σd| − 1) / √Σd² (d = LLM-first − human-first per query; continuity-corrected), computed
  here with scipy.stats.norm.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np
from scipy import stats

from sourcebias.power import ANALYTIC, RESAMPLING, PairedPower, TwinPower

ALPHA, STUDIES, PREDICT_RESAMPLES = 0.05, 2000, 20_000


def heavy_tailed(size=200, seed=11):
    rng = np.random.default_rng(seed)
    x = np.where(rng.random(size) < 0.55, rng.normal(0, 0.02, size), rng.gamma(1.5, 0.2, size) * rng.choice([-1, 1], size, p=[0.4, 0.6]))
    return x - x.mean()


def normal(size=200, seed=2):
    x = np.random.default_rng(seed).normal(0, 0.25, size)
    return x - x.mean()


def t_truth(pop, effect, n, seed):
    rng = np.random.default_rng(seed)
    x = pop[rng.integers(0, len(pop), size=(STUDIES, n))] + effect
    return float(np.mean(stats.ttest_1samp(x, 0.0, axis=1).pvalue < ALPHA))


def clustered(queries=300, seed=5):
    rng = np.random.default_rng(seed)
    m = rng.integers(1, 4, queries)
    a = rng.binomial(m, rng.beta(0.8, 0.8, queries))
    return a.astype(float), (m - a).astype(float)


def cluster_truth(a, b, n, rate, seed):
    rng = np.random.default_rng(seed)
    pilot = a.sum() / (a.sum() + b.sum())
    idx = rng.integers(0, len(a), (STUDIES, n))
    k, h = a[idx].astype(np.int64), b[idx].astype(np.int64)
    if rate >= pilot:
        moved = rng.binomial(h, (rate - pilot) / (1 - pilot))
    else:
        moved = -rng.binomial(k, (pilot - rate) / pilot)
    d = (k - h + 2 * moved).astype(float)
    total, squares = d.sum(axis=1), (d * d).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(squares > 0, 2 * stats.norm.sf(np.maximum(0, np.abs(total) - 1) / np.sqrt(squares)), 1.0)
    return float(np.mean(p < ALPHA))


def paired_rows(name, pop):
    from statsmodels.stats.power import TTestPower

    sd = pop.std(ddof=1)
    model = PairedPower(pop + 0.5 * sd, alpha=ALPHA, resamples=PREDICT_RESAMPLES, seed=1, key=name)
    for n in (10, 20, 40, 80, 160):
        for target in (0.05, 0.2, 0.5, 0.8, 0.95):
            effect = 0.0 if target == ALPHA else float(TTestPower().solve_power(nobs=n, alpha=ALPHA, power=target)) * sd
            truth = t_truth(pop, effect, n, seed=n * 1000 + int(target * 100))
            for method in (RESAMPLING, ANALYTIC):
                yield {
                    "population": name,
                    "statistic": "paired t",
                    "n": n,
                    "effect": effect,
                    "method": method,
                    "predicted": model.power(method, n, effect),
                    "simulated": truth,
                }


def twin_rows():
    a, b = clustered()
    model = TwinPower(a, b, alpha=ALPHA, resamples=PREDICT_RESAMPLES, seed=2, key="twin")
    for n in (20, 50, 100, 200):
        for rate in (0.5, 0.55, 0.6, 0.65):
            truth = cluster_truth(a, b, n, rate, seed=n * 1000 + int(rate * 100))
            for method in (RESAMPLING, ANALYTIC):
                yield {
                    "population": "twin pairs, clustered",
                    "statistic": "clustered sign-flip (z, corrected)",
                    "n": n,
                    "effect": rate,
                    "method": method,
                    "predicted": model.power(method, n, rate),
                    "simulated": truth,
                }


def pilot_populations(folder):
    from sourcebias.evaluation import MIXED, Key, load_result

    result = load_result(folder, runs=False)
    llm = result.other_sources[0]
    for r in result.retrievers:
        h = result.per_query[Key(r, MIXED, result.human_source, "NDCG@3")]
        lv = result.per_query[Key(r, MIXED, llm, "NDCG@3")]
        d = h - lv
        yield f"{result.dataset.get('name')} {r} NDCG@3", d - d.mean()


def figure(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5.6), sharey=True)
    for ax, method in zip(axes, (RESAMPLING, ANALYTIC)):
        sel = [r for r in rows if r["method"] == method]
        for i, pop in enumerate(dict.fromkeys(r["population"] for r in sel)):
            pts = [r for r in sel if r["population"] == pop]
            ax.scatter([r["simulated"] for r in pts], [r["predicted"] for r in pts], s=18, label=pop, color=plt.get_cmap("tab10")(i))
        ax.plot([0, 1], [0, 1], color="0.3", lw=0.8)
        ax.fill_between([0, 1], [-0.03, 0.97], [0.03, 1.03], color="0.8", alpha=0.5, label="±3 points")
        gap = max(abs(r["predicted"] - r["simulated"]) for r in sel)
        ax.set_title(f"{method}: largest gap {gap * 100:.1f} points", fontsize=11)
        ax.set_xlabel(f"rejection rate of {STUDIES:,} simulated studies")
        ax.set_xlim(0, 1.0)
        ax.set_ylim(0, 1.0)
        ax.grid(lw=0.3, alpha=0.5)
    axes[0].set_ylabel("predicted power")
    axes[1].legend(fontsize=8, loc="lower right")
    fig.suptitle("sourcebias power: predicted vs simulated (α = 0.05)", fontsize=12)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", type=Path, default=Path("out/power-validation"))
    ap.add_argument("--pilot", type=Path, help="an evaluate folder whose NDCG@3 differences serve as real-shaped populations")
    args = ap.parse_args()
    args.output.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    pops = [("heavy-tailed", heavy_tailed()), ("normal", normal())] + (list(pilot_populations(args.pilot)) if args.pilot else [])
    rows = [r for name, pop in pops for r in paired_rows(name, pop)] + list(twin_rows())
    with (args.output / "validation.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    figure(rows, args.output / "validation.png")
    for method in (RESAMPLING, ANALYTIC):
        for pop in dict.fromkeys(r["population"] for r in rows):
            sel = [r for r in rows if r["method"] == method and r["population"] == pop]
            worst = max(sel, key=lambda r: abs(r["predicted"] - r["simulated"]))
            print(
                f"{method:10s} {pop:28s} {len(sel):3d} configurations, largest gap {abs(worst['predicted'] - worst['simulated']) * 100:4.1f} points (n = {worst['n']}, predicted {worst['predicted']:.3f}, simulated {worst['simulated']:.3f})"
            )
    print(f"{len(rows)} comparisons in {time.perf_counter() - t0:.1f} s; wrote {args.output}/validation.csv and validation.png")


if __name__ == "__main__":
    main()
