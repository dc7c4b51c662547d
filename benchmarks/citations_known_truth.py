"""Do the citation estimators recover a known source effect, and do their 95% CIs cover it in at
least 90% of simulated studies? Every answer goes through the same HTTP path as a real server.

    python benchmarks/citations_known_truth.py -o out/cite-truth [--studies 200] [--orders 2] [--beta 0.7]

The generator is a SimulatedServer (sourcebias.llmcalls.simulated) whose responder
(sourcebias.citations.simulated.CitingResponder) cites each passage it is shown independently with
probability σ(a_position + β·[LLM-written]): position log odds a = (0.6, 0.0, −0.4, −0.8, −1.0) for
positions 1..5 and a known β, no rank effect. The rankings are BM25's on NQ-UTD's mixed corpus
(80 queries, top 5). Study i runs sourcebias.citations.cite_run with seed i (its own shuffled
context orders and its own draws) through the client a real server would get. Per study, the
truth of each estimator for the contexts shown (simulated.true_effects): β for the logit's log
odds ratio, the mean σ(a+β) − σ(a) over shown passages for its average marginal effect, and the
mean over twin pairs of σ(a_twin+β) − σ(a_original) for the twin difference.
Writes OUTPUT/studies.csv (one row per study) and OUTPUT/summary.md, and prints the summary.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

POSITION_LOGITS = (0.6, 0.0, -0.4, -0.8, -1.0)


def one_study(seed, run, ds, client, responder, orders, llm):
    from sourcebias.citations import CiteSettings, cite_run
    from sourcebias.citations.simulated import true_effects

    result = cite_run(run, ds.queries, client, CiteSettings(k=5, orders=orders, seed=seed), ds.human_source)
    truth = true_effects(responder, result.passages, ds.human_source)
    lo, tw = result.effect("logit", "source", llm), result.effect("twins", "source", llm)
    row = {"seed": seed, "answers": result.counts["answers"], "no_citation": result.counts["no_citation"], "pairs": tw["pairs"]}
    for name, est, low, high, true in (
        ("log_odds", lo["estimate"], lo["low"], lo["high"], truth["log_odds"]),
        ("ame", lo["ame"], lo["ame_low"], lo["ame_high"], truth["ame"]),
        ("twins", tw["estimate"], tw["low"], tw["high"], truth["twins"]),
    ):
        row |= {f"{name}_true": true, f"{name}_est": est, f"{name}_low": low, f"{name}_high": high, f"{name}_covers": low is not None and low <= true <= high}
    return row


def summary(frame: pd.DataFrame, beta: float, orders: int, seconds: float) -> str:
    lines = [
        f"{len(frame)} simulated studies, BM25 top 5 on NQ-UTD (80 queries x {orders} context orders), β = {beta} (log odds), "
        f"every answer over HTTP; {seconds:.0f} s on a shared 2-core machine.",
        "",
        "| estimator | mean truth | mean estimate | bias | sd of estimates | mean CI width | 95% CI coverage |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, label in (("log_odds", "logit: log odds ratio"), ("ame", "logit: AME on P(cited)"), ("twins", "twins: Δ cited")):
        est, true = frame[f"{name}_est"].astype(float), frame[f"{name}_true"].astype(float)
        width = (frame[f"{name}_high"].astype(float) - frame[f"{name}_low"].astype(float)).mean()
        cover = frame[f"{name}_covers"].mean()
        lines.append(f"| {label} | {true.mean():+.4f} | {est.mean():+.4f} | {(est - true).mean():+.4f} | {est.std():.4f} | {width:.4f} | {cover:.1%} |")
    lines += [
        "",
        f"answers per study: {int(frame['answers'].iloc[0])}; citing nothing: {frame['no_citation'].mean():.1f} on average; twin pairs per study: {frame['pairs'].mean():.1f}.",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--studies", type=int, default=200)
    parser.add_argument("--orders", type=int, default=2)
    parser.add_argument("--beta", type=float, default=0.7)
    parser.add_argument("--data", default="nq-utd")
    args = parser.parse_args(argv)

    from sourcebias.citations.simulated import responder_for
    from sourcebias.data import load_dataset
    from sourcebias.llmcalls import open_client
    from sourcebias.llmcalls.simulated import SimulatedServer
    from sourcebias.retrieval import build_retriever

    ds = load_dataset(args.data)
    ids = ds.evaluation_queries()
    run = build_retriever("bm25").retrieve(ds.corpus, {q: ds.queries[q] for q in ids}, depth=10)
    llm = next(s for s in ds.sources if s != ds.human_source)
    responder = responder_for(ds.corpus, ds.human_source, POSITION_LOGITS, args.beta)
    t0 = time.perf_counter()
    rows = []
    with SimulatedServer(responder) as url:
        client = open_client(f"openai:sim@{url}", cache=False, concurrency=8)
        for seed in range(args.studies):
            rows.append(one_study(seed, run, ds, client, responder, args.orders, llm))
            if (seed + 1) % 20 == 0:
                print(f"{seed + 1} studies, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        client.close()
    frame = pd.DataFrame(rows)
    args.output.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.output / "studies.csv", index=False)
    text = summary(frame, args.beta, args.orders, time.perf_counter() - t0)
    (args.output / "summary.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    ok = all(frame[f"{n}_covers"].mean() >= 0.90 for n in ("log_odds", "ame", "twins"))
    return 0 if ok else 1


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
