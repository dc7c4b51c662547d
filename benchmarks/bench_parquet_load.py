"""Benchmark: loading an ``evaluate`` folder whose per-query values are Parquet.

Builds a result the size of a large grid — 5,000 queries x 40 measures (NDCG, MAP, Recall and P
at 10 cut-offs) x 10 retrievers, each on the mixed corpus scored for three targets and on the
two sole corpora: 2,000 vectors, 10 million values — saves it with ``format="parquet"`` (no
runs: TREC runs of that size are not a load-time question) and times, best of ``--repeat``:

* **load_result**: ``sourcebias.load_result(folder)``, the whole folder back into an
  ``EvaluationResult`` (result.json and the vectors keyed by retriever, setting, target, measure);
* **pyarrow**: ``pyarrow.parquet.read_table`` of the same file (the floor: reading the table);
* **pandas**: ``pandas.read_parquet`` of the same file.

Prints the times and the ratios load_result / pyarrow and load_result / pandas.

    python benchmarks/bench_parquet_load.py [--queries 5000] [--measures 40] [--retrievers 10]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np


def build_result(n_queries: int, n_measures: int, n_retrievers: int, seed: int = 0):
    from sourcebias.evaluation import EvaluationResult, Key, measure_grid

    cutoffs = list(range(1, n_measures // 4 + 1))
    measures = measure_grid(["NDCG", "MAP", "Recall", "P"], cutoffs)[:n_measures]
    sources = ["human", "llama-2-7b-chat-tmp0.2"]
    query_ids = [f"q{i}" for i in range(n_queries)]
    rng = np.random.default_rng(seed)
    result = EvaluationResult(
        dataset={"name": "synthetic", "split": "test"},
        human_source="human",
        sources=sources,
        measures=measures,
        query_ids=query_ids,
        retrievers={f"retriever-{r}": {"name": f"retriever-{r}"} for r in range(n_retrievers)},
    )
    settings = [("mixed", t) for t in (*sources, "all")] + [(s, s) for s in sources]
    for r in result.retrievers:
        for setting, target in settings:
            for m in measures:
                result.per_query[Key(r, setting, target, str(m))] = rng.random(n_queries)
    return result


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--measures", type=int, default=40)
    ap.add_argument("--retrievers", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import pandas as pd
    import pyarrow.parquet as pq

    import sourcebias as sb
    from sourcebias.evaluation.result_io import save_result

    result = build_result(args.queries, args.measures, args.retrievers)
    n_values = len(result.per_query) * len(result.query_ids)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        folder = Path(tmp) / "out"
        save_result(result, folder, write_runs=False, format="parquet")  # the result's own files (no manifest: no dataset files here)
        t_write = time.perf_counter() - t0
        path = folder / "per_query.parquet"
        loaded = sb.load_result(folder)
        assert loaded.per_query.keys() == result.per_query.keys()
        assert all(np.array_equal(loaded.per_query[k], v) for k, v in result.per_query.items())
        t_load = best_of(args.repeat, lambda: sb.load_result(folder))
        t_arrow = best_of(args.repeat, lambda: pq.read_table(path))
        t_pandas = best_of(args.repeat, lambda: pd.read_parquet(path))
        size = path.stat().st_size
    print(
        f"{args.queries:,} queries x {args.measures} measures x {args.retrievers} retrievers x 5 (setting, target): {len(result.per_query):,} vectors, {n_values:,} values"
    )
    print(f"per_query.parquet: {size / 1e6:.1f} MB, written in {t_write:.2f} s")
    print(f"load_result (whole folder): {t_load:.3f} s")
    print(f"pyarrow.parquet.read_table: {t_arrow:.3f} s   ratio load_result / pyarrow = {t_load / t_arrow:.2f}")
    print(f"pandas.read_parquet:        {t_pandas:.3f} s   ratio load_result / pandas  = {t_load / t_pandas:.2f}")


if __name__ == "__main__":
    main()
