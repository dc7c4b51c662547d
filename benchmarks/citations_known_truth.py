"""Do the citation estimators recover a known source effect, and refuse what they cannot know? Every
estimate must cover the truth in at least 90% of the simulated studies, or be refused with a
reason, and never show a p-value where its test was refused. Every answer goes through the same
HTTP path as a real server.

    python benchmarks/citations_known_truth.py -o out/cite-truth [--studies 200] [--beta 0.7] [--scenario all]

The generator is a SimulatedServer (sourcebias.llmcalls.simulated) whose responder
(sourcebias.citations.simulated.CitingResponder) cites each passage it is shown independently with
probability σ(a_position + β·[LLM-written]): position log odds a = (0.6, 0.0, −0.4, −0.8, −1.0) for
positions 1..5 and a known β, no rank effect. Study i runs sourcebias.citations.cite_run with seed
i on BM25's top 5 of NQ-UTD's 80 queries in 5 context orders (a cyclic Latin square: balanced).
The truths (simulated.true_effects, true_rates): β for the logit's log odds ratio; the mean
σ(a+β) − σ(a) over the shown passages for its AME; the source effect at balanced positions,
(1/5) Σ_j σ(a_j+β) − σ(a_j), for the twins; σ(a_j + β·[LLM]) averaged over each rate cell's rows.

Scenarios: ``biased`` (β given); ``null`` (β = 0); ``position-only`` (β = 0 on a ranking that puts
each LLM twin right above its original: the twins' truth is 0, and the logit, whose source is then
collinear with rank, must refuse); ``garbage`` (every answer cites nothing: no citation rate above
0, the logit separated); ``echo`` (every answer repeats the prompt's last message: the documents'
headers are not citations); ``few-queries`` (3 queries: every interval refused).
Writes OUTPUT/summary.md and prints it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.clustered.tally import Tally, markdown

POSITION_LOGITS = (0.6, 0.0, -0.4, -0.8, -1.0)
SCENARIOS = ("biased", "null", "position-only", "garbage", "echo", "few-queries")
NOTHING = "The search results do not answer the question."


def responder(scenario: str, citing: Any) -> Any:
    def garbage(messages: list[dict[str, str]], params: dict[str, Any]) -> tuple[str, None]:
        return NOTHING, None

    def echo(messages: list[dict[str, str]], params: dict[str, Any]) -> tuple[str, None]:
        return messages[-1]["content"], None

    return {"garbage": garbage, "echo": echo}.get(scenario, citing)


def tallies_for(scenario: str) -> dict[str, Tally]:
    names = ("logit: log odds ratio", "logit: AME on P(cited)", "twins: Δ cited", "rates by source and position (cells)", "rates by source and rank (cells)")
    return {n: Tally(scenario, n, 0.0) for n in names}


def one_study(scenario: str, seed: int, run: Any, ds: Any, client: Any, citing: Any, tallies: dict[str, Tally]) -> None:
    from sourcebias.citations import CiteSettings, cite_run
    from sourcebias.citations.simulated import true_effects, true_rates

    llm = ds.other_sources[0]
    ids = list(run.query_ids)[:3] if scenario == "few-queries" else None
    result = cite_run(run, ds.queries, client, CiteSettings(k=5, orders=5, seed=seed), ds.human_source, query_ids=ids)
    silent = scenario in ("garbage", "echo")  # the model cites nothing: every truth is 0, and the logit has none
    truth = {"log_odds": None, "ame": None, "twins": 0.0} if silent else true_effects(citing, result.passages, ds.human_source)
    if scenario == "position-only":
        truth.update(log_odds=None, ame=None)  # the source is collinear with rank: no logit estimate exists
    lo, tw = result.effect("logit", "source", llm), result.effect("twins", "source", llm)
    estimates = [("logit: log odds ratio", lo, "low", "high", "log_odds"), ("logit: AME on P(cited)", lo, "ame_low", "ame_high", "ame")]
    for name, row, low, high, key in [*estimates, ("twins: Δ cited", tw, "low", "high", "twins")]:
        if truth[key] is None:
            tallies[name].truth = None
        defined = row.get("estimate") is not None and not row.get("refused")
        tallies[name].add(row.get(low), row.get(high), row.get("p"), row.get("note") or row.get("status", ""), test_defined=defined, truth=truth[key])
    used = result.passages[result.passages["used"]]
    for table, by in (("source_position", ["source", "position"]), ("source_rank", ["source", "rank"])):
        cells = dict.fromkeys(true_rates(citing, used, ds.human_source, by), 0.0) if silent else true_rates(citing, used, ds.human_source, by)
        tally = tallies[f"rates by {table.replace('_', ' and ')} (cells)"]
        for r in result.rates[table]:
            tally.add(r["low"], r["high"], None, r.get("refused", ""), truth=cells[tuple(r[b] for b in by)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--studies", type=int, default=200)
    parser.add_argument("--beta", type=float, default=0.7)
    parser.add_argument("--scenario", default="all", choices=("all", *SCENARIOS))
    args = parser.parse_args(argv)

    from sourcebias.citations.simulated import responder_for, twins_above_originals
    from sourcebias.data import load_dataset
    from sourcebias.llmcalls import open_client
    from sourcebias.llmcalls.simulated import SimulatedServer
    from sourcebias.retrieval import build_retriever

    ds = load_dataset("nq-utd")
    ids = ds.evaluation_queries()
    bm25 = build_retriever("bm25").retrieve(ds.corpus, {q: ds.queries[q] for q in ids}, depth=10)
    t0, out = time.perf_counter(), []
    for scenario in SCENARIOS if args.scenario == "all" else (args.scenario,):
        beta = args.beta if scenario in ("biased", "few-queries") else 0.0
        citing = responder_for(ds.corpus, ds.human_source, POSITION_LOGITS, beta)
        run = twins_above_originals(ds, bm25) if scenario == "position-only" else bm25
        tallies = tallies_for(scenario)
        with SimulatedServer(responder(scenario, citing)) as url:
            client = open_client(f"openai:sim@{url}", cache=False, concurrency=8)
            for seed in range(args.studies):
                one_study(scenario, seed, run, ds, client, citing, tallies)
            client.close()
        out += list(tallies.values())
        print(f"  {scenario}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    text = (
        f"{args.studies} simulated studies a scenario, BM25 top 5 on NQ-UTD (80 queries; few-queries: 3) x 5 context orders (balanced), "
        f"β = {args.beta} (biased, few-queries; 0 otherwise), every answer over HTTP; {time.perf_counter() - t0:.0f} s.\n\n" + markdown(out)
    )
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "summary.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0 if all(t.holds() for t in out) else 1


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
