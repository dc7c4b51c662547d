"""Known truth for the LLM-judge estimators: a judge of known bias served over HTTP, 200 studies.

Each study grades the judged documents (both copies) of a seeded sample of NQ-UTD queries with
:class:`sourcebias.judges.known_truth.BiasedJudge` behind :class:`sourcebias.llmcalls.simulated.SimulatedServer`
(the same HTTP path, client and parser as a real OpenAI-compatible server); the judge grades the
LLM twin ``delta`` higher on average, with query-level variation and per-copy noise. The script
reports, over the studies, the mean estimate of the twin bias, its 95% CI's coverage of ``delta``,
the mean CI width and the rejection rate of the sign-flip test; then, over fewer studies, the same
for the pairwise source preference and position effect and the disclosure effect.

Run:  python benchmarks/judge_known_truth.py [--studies 200] [--queries 20] [--delta 0.3]
(from any folder: the NQ-UTD that ships with sourcebias, or ``$SOURCEBIAS_DATA/nq-utd`` when that
is set; see ``benchmarks/script_data.py``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import script_data

from sourcebias.data import load_dataset
from sourcebias.judges import JudgeSettings, judge
from sourcebias.judges.known_truth import BiasedJudge
from sourcebias.llmcalls import open_client
from sourcebias.llmcalls.simulated import SimulatedServer


def summarise(name: str, truth: float, rows: list[dict]) -> None:
    est = np.array([r["estimate"] for r in rows])
    covered = np.array([r["low"] <= truth <= r["high"] for r in rows])
    width = np.array([r["high"] - r["low"] for r in rows])
    reject = np.array([r["p"] < 0.05 for r in rows])
    missing = sum(r["missing"] for r in rows)
    print(f"{name:<34} truth {truth:+.3f}  mean estimate {est.mean():+.4f} (sd {est.std(ddof=1):.4f})  95% CI covers truth in {covered.sum()}/{len(rows)} "
          f"({covered.mean():.1%})  mean CI width {width.mean():.3f}  p < 0.05 in {reject.mean():.1%}  left out (unparseable) {missing}")  # fmt: skip


def studies(ds, bj: BiasedJudge, url: str, modes: tuple[str, ...], n: int, queries: int, resamples: int) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    client = open_client(f"openai:sim@{url}", cache=False, concurrency=8)
    for seed in range(n):
        r = judge(ds, client, JudgeSettings(modes=modes, seed=seed, top_logprobs=0), max_queries=queries, resamples=resamples)
        for section in ("twin_bias", "pairwise", "disclosure"):
            for row in r.rows(section):
                out.setdefault(f"{row['quantity']} ({row['llm_source']})", []).append(row)
        if (seed + 1) % 20 == 0:
            print(f"  {seed + 1} studies done", flush=True)
    client.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--studies", type=int, default=200)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--delta", type=float, default=0.3)
    ap.add_argument("--extra-studies", type=int, default=50, help="studies of the pairwise and disclosure modes")
    ap.add_argument("--resamples", type=int, default=2000)
    args = ap.parse_args()
    ds = load_dataset(script_data.dataset("nq-utd"))
    llm = ds.other_sources[0]
    bj = BiasedJudge.from_corpus(ds.corpus, ds.human_source, delta=args.delta, spread=0.1, noise=0.4, label_effect=0.25, preference=0.1, position=0.15)
    print(f"NQ-UTD, {args.queries} seeded queries a study (10 judged documents each, both copies); judge: delta {args.delta}, label effect 0.25, "
          f"pairwise preference 0.10, position 0.15; {args.resamples:,} bootstrap resamples of queries")  # fmt: skip
    with SimulatedServer(bj) as url:
        t0 = time.perf_counter()
        main_rows = studies(ds, bj, url, ("grade",), args.studies, args.queries, args.resamples)
        t1 = time.perf_counter()
        extra = studies(ds, bj, url, ("disclosure", "pairwise"), args.extra_studies, args.queries, args.resamples) if args.extra_studies else {}
        t2 = time.perf_counter()
    print(
        f"\n{args.studies} studies of the grade mode: {t1 - t0:.0f} s; {args.extra_studies} of disclosure + pairwise: {t2 - t1:.0f} s; {bj.calls:,} HTTP calls answered"
    )
    if args.studies:
        summarise("twin bias (grade)", args.delta, main_rows[f"grade ({llm})"])
    truths = {"disclosed AI − human (all)": None, "pairwise: LLM copy preferred": 0.1, "pairwise: first passage preferred": 0.15}
    for key, rows in extra.items():
        if key == f"disclosed AI − human (copies of {ds.human_source})":
            summarise(
                "disclosure (human originals)", 0.25, rows
            )  # exact on the originals (base grade 1: +1 never clipped); the twins' can reach 4 and be clipped to 3
        for prefix, truth in truths.items():
            if truth is not None and key.startswith(prefix):
                summarise(prefix.replace("pairwise: ", "pairwise, "), truth, rows)


if __name__ == "__main__":
    script_data.run(main)
