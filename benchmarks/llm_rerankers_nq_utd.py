"""The LLM re-rankers on NQ-UTD with a local offline model: the worked run of the guide.

Evaluates ``FIRST>>rankgpt:MODEL`` (window = depth, so one window per query, shown in
``--orders`` input orders) and ``FIRST`` itself on the first ``--queries`` test queries (mixed
corpus, top ``--depth``), prints NDCG@k, the LLM share of the top k, the answers repaired, the
position/source regression, and the call counts, and writes the evaluate result folder
(``--output/NAME``) that ``benchmarks/llm_rerankers_figure.py`` draws. Answers are kept in the
answer store, so a rerun (or ``--orders 1`` after ``--orders 3``, whose first order is the same
call) sends no request again.

Usage:
    python benchmarks/llm_rerankers_nq_utd.py [--model smollm2] [--first bm25] [--queries 20] [--depth 10] [--orders 3] [--words 30] -o out/llm-rerankers

Runs from any folder: ``--dataset`` defaults to the NQ-UTD that ships with sourcebias
(``$SOURCEBIAS_DATA/nq-utd`` when that is set; see ``benchmarks/script_data.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import script_data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default=script_data.dataset("nq-utd"), help="a dataset folder or a known name (default: nq-utd, built in)")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--first", default="bm25")
    ap.add_argument("--kind", default="rankgpt", choices=("rankgpt", "llm-yesno"))
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--orders", type=int, default=3)
    ap.add_argument("--words", type=int, default=30)
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    from sourcebias.data import load_dataset
    from sourcebias.data.qrels import Qrels
    from sourcebias.evaluation import evaluate, measure_grid
    from sourcebias.retrieval import build_retriever
    from sourcebias.study.job import llm_stage_notes

    ds = load_dataset(args.dataset, split="test")
    keep = ds.evaluation_queries()[: args.queries]
    ds = dataclasses.replace(ds, qrels=Qrels({q: ds.qrels[q] for q in keep}))
    extra = f",window={args.depth},orders={args.orders}" if args.kind == "rankgpt" else ""
    spec = f"{args.first}>>{args.kind}:{args.model},depth={args.depth},words={args.words}{extra}"
    t0 = time.perf_counter()
    result = evaluate(
        ds, [build_retriever(args.first), build_retriever(spec)], measures=measure_grid(["NDCG", "Share"], [1, 3, 5]), depth=args.depth, sole=False
    )
    print(f"NQ-UTD test, first {len(keep)} queries, mixed corpus, top {args.depth}; {time.perf_counter() - t0:.0f} s")
    llm = next(s for s in ds.corpus.sources if s != ds.human_source)
    print(f"{'retriever':<58} {'NDCG@1':>7} {'NDCG@3':>7} {'LLM Share@1':>12} {'LLM Share@3':>12}")
    for name in (args.first, spec):
        v = [result.mean(name, "mixed", t, m) for t, m in (("all", "NDCG@1"), ("all", "NDCG@3"), (llm, "Share@1"), (llm, "Share@3"))]
        print(f"{name:<58} {v[0]:7.3f} {v[1]:7.3f} {v[2]:12.3f} {v[3]:12.3f}")
    info = result.run_info[(spec, "mixed")]
    for level, text in llm_stage_notes("mixed", info):
        print(f"{level}: {text}")
    print("calls:", json.dumps(info["stages"][-1]["client"]["calls"]))
    out = Path(args.output) / (f"{args.kind}-orders{args.orders}" if args.kind == "rankgpt" else args.kind)
    result.save(out)
    print(f"result: {out}")


if __name__ == "__main__":
    script_data.run(main)
