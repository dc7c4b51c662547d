"""Exposure parity (``fair:k=10``) beside its base retriever on nq-utd (test): the remedy table.

    OMP_NUM_THREADS=1 python benchmarks/demo_fair_remedy.py [DATASET] [SPLIT] [CDC_FIT] [PROJECTION_FIT]

Prints, per base retriever (BM25, MiniLM), NDCG@3 / NDCG@10 (all targets), Relative Δ@3 and
Share@10 / NDSR@10 of each source, before → after ``>>fair:k=10`` (markdown), and the number of
queries where a source ran out of candidates in the top 10. With a CDC fit (``cdc.json`` from
``sourcebias cdc fit``) and a projection (``projection.json`` from ``sourcebias project fit``),
their rows are added beside MiniLM's (the same evaluation, the same queries and seed). DATASET:
a folder or a known name (default: the built-in nq-utd; see ``benchmarks/script_data.py``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import script_data

import sourcebias as sb
from sourcebias.evaluation.measures import measure_grid
from sourcebias.evaluation.results import MIXED, RunKey
from sourcebias.evaluation.stats import StatContext, compute_statistics
from sourcebias.mitigation.before_after import evaluate_before_after
from sourcebias.mitigation.fair import remedy_rows
from sourcebias.retrieval import build_retriever

DATA = Path(sys.argv[1] if len(sys.argv) > 1 else script_data.dataset("nq-utd"))
SPLIT = sys.argv[2] if len(sys.argv) > 2 else "test"

ds = sb.load_dataset(DATA, split=SPLIT)
pairs = [(f"{b} >> fair:k=10", b, f"{b}>>fair:k=10") for b in ("bm25", "minilm")]
if len(sys.argv) > 3:
    pairs.append(("minilm >> CDC", "minilm", f"minilm>>cdc:{sys.argv[3]}"))
if len(sys.argv) > 4:
    pairs.append(("minilm + projection", "minilm", f"minilm:project={sys.argv[4]}"))
names = list(dict.fromkeys(name for _, b, a in pairs for name in (b, a)))
systems = [build_retriever(name) for name in names]
t0 = time.perf_counter()
measures = measure_grid(["NDCG", "Share", "NDSR"], [3, 10])
result = evaluate_before_after(ds, systems, seed=0, measures=measures)
print(f"{DATA.name} ({SPLIT}), {len(ds.evaluation_queries())} queries, {time.perf_counter() - t0:.0f} s")
print(remedy_rows(result, pairs).to_markdown(index=False))
for _, _, a in pairs[:2]:
    print(a, "queries where a source ran out of candidates in the top 10:", result.runs[RunKey(a, MIXED)].info["stages"][-1]["queries_without_parity"])

tests = compute_statistics(result, StatContext(measures=["NDCG@3"], seed=0, significance_resamples=10_000, correction="none"), ["paired_tests"], correct=False)
for t in tests.records["paired_tests"]:
    print(t.retriever, t.measure, "human − LLM", f"{t.mean_difference:+.4f}", "p (randomization)", t.p_randomization)
