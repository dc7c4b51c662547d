"""What a CPU backend does to the figures that matter: Relative Δ@1/@3 and NDCG@10 on nq-utd.

all-MiniLM-L6-v2 (offline) ranks nq-utd's mixed corpus on each backend (``torch``, ``onnx``,
``onnx-int8``, ``openvino``, ``openvino-int8``, ``openvino-bf16``, ``torch-bf16``) through
``sourcebias.evaluate``; the table gives, per backend, Relative Δ of NDCG@1 and NDCG@3 with the bootstrap CI of ``sourcebias evaluate``
(BCa over queries, 2,000 resamples, seed 0) and NDCG@10 of target ``all`` (every copy relevant)
with a 95% percentile bootstrap CI over queries (``scipy.stats.bootstrap``, seed 0), and whether
each backend's Relative Δ@1/@3 lies inside the PyTorch run's CI. Markdown, ready for the README.

    python benchmarks/backend_effects_nq_utd.py [--data DIR] [--backends torch onnx ...]   # --data: default the built-in nq-utd
"""

from __future__ import annotations

import argparse
import os

import script_data
from bench_cpu_backends import BACKENDS


def effects(data: str, names: list[str]) -> list[dict]:
    import numpy as np
    from scipy.stats import bootstrap

    from sourcebias.data import load_dataset
    from sourcebias.evaluation import ALL, MIXED, Key, evaluate, measure_grid
    from sourcebias.report import result_report
    from sourcebias.retrieval import build_retriever

    ds = load_dataset(data, split="test")
    retrievers = [build_retriever(f"{BACKENDS[n]},name={n}", cache_dir=False) for n in names]
    result = evaluate(ds, retrievers, measures=measure_grid(["NDCG"], [1, 3, 10]), sole=False)
    report = result_report(result, ds.qrels, statistics=["relative_delta_ci"], measures=["NDCG@1", "NDCG@3"])
    stats = report.data["statistics"].to_pandas()
    rows = []
    for n in names:
        row = {"backend": n}
        for m in ("NDCG@1", "NDCG@3"):
            s = stats[(stats["retriever"] == n) & (stats["measure"] == m)].iloc[0]
            row[m] = (float(s["rel_delta"]), float(s["rel_delta_ci_low"]), float(s["rel_delta_ci_high"]))
        v = result.per_query[Key(n, MIXED, ALL, "NDCG@10")]
        ci = bootstrap((v,), np.mean, n_resamples=2000, confidence_level=0.95, method="percentile", random_state=0).confidence_interval
        row["NDCG@10"] = (float(v.mean()), float(ci.low), float(ci.high))
        rows.append(row)
    base = rows[0]
    for row in rows:
        row["inside"] = all(base[m][1] <= row[m][0] <= base[m][2] for m in ("NDCG@1", "NDCG@3"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=script_data.dataset("nq-utd"), help="a dataset folder or a known name (default: nq-utd, built in)")
    ap.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    names = ["torch"] + [b for b in args.backends if b != "torch"]
    print("| backend | Rel Δ NDCG@1 [95% CI] | Rel Δ NDCG@3 [95% CI] | NDCG@10 (all) [95% CI] | Rel Δ@1/@3 inside torch's CI |")
    print("|---|---|---|---|---|")
    for r in effects(args.data, names):
        cells = [f"{r[m][0]:.1f} [{r[m][1]:.1f}, {r[m][2]:.1f}]" for m in ("NDCG@1", "NDCG@3")]
        nd = r["NDCG@10"]
        print(f"| {r['backend']} | {cells[0]} | {cells[1]} | {nd[0] * 100:.2f} [{nd[1] * 100:.2f}, {nd[2] * 100:.2f}] | {'yes' if r['inside'] else 'no'} |")


if __name__ == "__main__":
    script_data.run(main)
