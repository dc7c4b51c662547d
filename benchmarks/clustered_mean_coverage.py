"""Which interval for a mean of paired differences clustered by query? Coverage of the CR1 t
interval (the ``mean_difference`` estimator's, sourcebias.clustered) against the percentile and
BCa bootstraps over queries (what the judges and the twin preference used before), and the size
of the sign-flip test of the query sums beside the t test of the same fit, on simulated studies.

Three kinds of clustered differences, each query with its own propensity (so clustering matters)
and 1-15 items (10 for the pairwise kind):

* judge: a judge's grade difference, Bernoulli(p_q) bump of the LLM copy (p_q = 0.3 ± 0.1) plus
  ±1 noise on each copy (truth 0.3);
* rare: a rare 0/1 event, p_q = 0.05 ± 0.05 (truth 0.05);
* pairwise: the pairwise position effect, ((A_1 + A_2)/2 − 1/2) with P(A) = 0.65 ± 0.3 per query
  (truth 0.15).

The tests' size is measured under a null of the same design with the two copies exchangeable
(the judge's and the rare event's LLM copy drawn like the original; P(A) = 0.5 ± 0.3), the
hypothesis the sign-flip test assumes.

Run:  python benchmarks/clustered_mean_coverage.py [--studies 400] [--resamples 1000]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy import stats

from sourcebias.clustered.mean_difference import cr1_mean_interval
from sourcebias.clustered.signflip import sign_flip_test

TRUTH = {"judge": 0.3, "rare": 0.05, "pairwise": 0.15}


def draw(kind: str, queries: int, rng: np.random.Generator, null: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per-query sums and item counts of one study; ``null``: the two copies exchangeable (the
    sign-flip test's H0: each difference symmetric about 0)."""
    m = np.full(queries, 10) if kind == "pairwise" else rng.integers(1, 16, size=queries)
    sums = np.zeros(queries)
    for q in range(queries):
        if kind == "judge":
            p = 0.3 + rng.uniform(-0.1, 0.1)
            bump = (rng.random(m[q]) < p).astype(float) - (null * (rng.random(m[q]) < p))
            noise = [np.where(rng.random(m[q]) < 0.2, -1, np.where(rng.random(m[q]) < 0.25, 1, 0)) for _ in range(2)]
            d = bump + noise[0] - noise[1]
        elif kind == "rare":
            p = 0.05 + rng.uniform(-0.05, 0.05)
            d = (rng.random(m[q]) < p).astype(float) - (null * (rng.random(m[q]) < p))
        else:
            p = (0.5 if null else 0.65) + rng.uniform(-0.3, 0.3)
            d = ((rng.random(m[q]) < p).astype(float) + (rng.random(m[q]) < p)) / 2 - 0.5
        sums[q] = d.sum()
    return sums, m.astype(float)


def bootstrap(sums: np.ndarray, counts: np.ndarray, method: str, resamples: int, seed: int) -> tuple[float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ratio = lambda s, n, axis=-1: s.sum(axis=axis) / n.sum(axis=axis)  # noqa: E731 - the statistic scipy resamples
        res = stats.bootstrap(
            (sums, counts), ratio, paired=True, vectorized=True, n_resamples=resamples, method=method, random_state=np.random.default_rng(seed)
        )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def cell(kind: str, queries: int, studies: int, resamples: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    hits = {"cr1": 0, "percentile": 0, "bca": 0}
    rejects = {"sign-flip": 0, "t (CR1)": 0}
    used = 0
    for s in range(studies):
        sums, counts = draw(kind, queries, rng)
        if np.ptp(sums / counts) == 0:
            continue  # no variation: every method refuses (mean_difference says why)
        used += 1
        truth = TRUTH[kind]
        _, lo, hi, _ = cr1_mean_interval(sums, counts)
        hits["cr1"] += lo <= truth <= hi
        for method, key in (("percentile", "percentile"), ("BCa", "bca")):
            lo, hi = bootstrap(sums, counts, method, resamples, s)
            hits[key] += lo <= truth <= hi
        null_sums, null_counts = draw(kind, queries, rng, null=True)  # the same design, copies exchangeable
        rejects["sign-flip"] += sign_flip_test(null_sums, n_resamples=999, seed=s)["p"] < 0.05
        est, lo, hi, se = cr1_mean_interval(null_sums, null_counts)
        rejects["t (CR1)"] += bool(se > 0 and 2 * stats.t.sf(abs(est / se), queries - 1) < 0.05)
    return {**{k: v / used for k, v in hits.items()}, **{k: v / used for k, v in rejects.items()}, "studies": used}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=400)
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args()
    t0 = time.perf_counter()
    print(
        f"{args.studies} studies a cell; bootstrap {args.resamples:,} resamples; 95% intervals; size of the tests at α = 0.05 under a null of the same design"
    )
    print(f"{'kind':<9} {'queries':>7} {'CR1 t':>7} {'percentile':>10} {'BCa':>6} | {'sign-flip size':>14} {'t size':>7}")
    for kind in TRUTH:
        for queries in (5, 10, 20, 40):
            r = cell(kind, queries, args.studies, args.resamples, seed=queries)
            print(
                f"{kind:<9} {queries:>7} {r['cr1']:>7.1%} {r['percentile']:>10.1%} {r['bca']:>6.1%} | {r['sign-flip']:>14.1%} {r['t (CR1)']:>7.1%}", flush=True
            )
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
