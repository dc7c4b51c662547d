"""Benchmark: the joint cross-dataset sign-flip test (target: under 30 s).

10,000 joint flips of 2 datasets × 5,000 twin-pair differences in 384 dimensions (MiniLM's),
synthetic (a shared planted direction plus noise). The flips are a ±1 matrix times each
dataset's pair matrix, in chunks (:func:`sourcebias.analysis.directions_compare.joint_sign_flip`).
For scale, also times a plain Python loop over 100 flips (one matrix-vector product per dataset
per flip) and extrapolates it to 10,000.

    OMP_NUM_THREADS=1 python benchmarks/bench_signflip.py [--flips 10000] [--pairs 5000] [--dim 384]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flips", type=int, default=10_000)
    ap.add_argument("--pairs", type=int, default=5_000)
    ap.add_argument("--datasets", type=int, default=2)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--chunk", type=int, default=250)
    args = ap.parse_args()

    from sourcebias.analysis.directions_compare import joint_sign_flip

    rng = np.random.default_rng(0)
    u = rng.normal(size=args.dim)
    u /= np.linalg.norm(u)
    diffs = [0.02 * u + 0.05 * rng.normal(size=(args.pairs, args.dim)) for _ in range(args.datasets)]

    t0 = time.perf_counter()
    res = joint_sign_flip(diffs, n_permutations=args.flips, seed=0, chunk=args.chunk)
    t = time.perf_counter() - t0

    loop_flips = 100
    t1 = time.perf_counter()
    g = np.random.default_rng(1)
    for _ in range(loop_flips):
        means = [(g.integers(0, 2, size=len(d)) * 2 - 1.0) @ d / len(d) for d in diffs]
        np.linalg.norm(sum(means) / len(means))
    t_loop = (time.perf_counter() - t1) * args.flips / loop_flips

    print(f"joint sign-flip test: {args.flips:,} flips, {args.datasets} datasets x {args.pairs:,} pairs, {args.dim} dims (chunk {args.chunk})")
    print(f"vectorised: {t:.2f} s (target < 30 s: {'met' if t < 30 else 'NOT met'}); a per-flip loop would take about {t_loop:.1f} s ({t_loop / t:.1f} x)")
    print(
        f"shared norm {res['shared_norm']:.4g} (p {res['p_shared_norm']:.3g}), mean pairwise cosine {res['mean_pairwise_cosine']:.3f} (p {res['p_pairwise_cosine']:.3g})"
    )


if __name__ == "__main__":
    main()
