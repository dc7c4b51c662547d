"""Known truth for the LLM-judge estimators, with honest and adversarial judges served over HTTP:
every estimate must cover the truth in at least 90% of the studies, or be refused with a reason,
and never show a p-value without an interval.

Each study grades the judged documents (both copies) of a seeded sample of NQ-UTD queries through
:class:`sourcebias.llmcalls.simulated.SimulatedServer` (the HTTP path, client and parser of a real
OpenAI-compatible server). The scenarios:

* ``biased``: :class:`sourcebias.judges.known_truth.BiasedJudge`, the LLM twin graded ``delta``
  higher on average (query-level variation, per-copy noise): the twin bias' truth is ``delta``;
* ``half-garbage``: the same judge, but half of the prompts (chosen by a hash of the prompt, so
  independently of the source) get "I cannot grade this passage.": unparseable, left out; the
  truth is still ``delta``;
* ``garbage``: every answer is "I cannot grade this passage.": nothing to estimate from;
* ``echo``: every answer repeats the prompt (a small model continuing its input): no grade was
  given, so no estimate may be shown with an interval;
* ``few-queries``: the biased judge on 3 queries: refused by the audit's rule;
* ``position-only``: the pairwise mode with a judge that prefers the first passage (+0.15) and
  neither copy: the source preference's truth is 0, the position effect's 0.15.

Run:  python benchmarks/judge_known_truth.py [--studies 200] [--queries 20] [--scenario all]
(from any folder: the NQ-UTD that ships with sourcebias, or ``$SOURCEBIAS_DATA/nq-utd`` when that
is set; see ``benchmarks/script_data.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import time
from typing import Any

import script_data

from sourcebias.clustered.tally import Tally, markdown
from sourcebias.data import load_dataset
from sourcebias.judges import JudgePlan, JudgeSettings, judge
from sourcebias.judges.known_truth import BiasedJudge
from sourcebias.llmcalls import open_client
from sourcebias.llmcalls.simulated import SimulatedServer

GARBAGE = "I cannot grade this passage."
SCENARIOS = ("biased", "half-garbage", "garbage", "echo", "few-queries", "position-only")


def responder(scenario: str, bj: BiasedJudge) -> Any:
    """The simulated judge of a scenario."""

    def garbage(messages: list[dict[str, str]], params: dict[str, Any]) -> tuple[str, None]:
        return GARBAGE, None

    def echo(messages: list[dict[str, str]], params: dict[str, Any]) -> tuple[str, None]:
        return messages[-1]["content"], None

    def half(messages: list[dict[str, str]], params: dict[str, Any]) -> Any:
        if hashlib.sha256(messages[-1]["content"].encode()).digest()[0] % 2:
            return GARBAGE, None
        return bj(messages, params)

    return {"garbage": garbage, "echo": echo, "half-garbage": half}.get(scenario, bj)


def study_rows(scenario: str, ds: Any, url: str, seed: int, queries: int) -> list[dict[str, Any]]:
    """The estimate rows of one study."""
    client = open_client(f"openai:sim@{url}", cache=False, concurrency=8)
    modes = ("pairwise",) if scenario == "position-only" else ("grade",)
    result = judge(ds, client, JudgeSettings(modes=modes, seed=seed, top_logprobs=0), plan=JudgePlan(max_queries=3 if scenario == "few-queries" else queries))
    client.close()
    return result.rows("twin_bias") + result.rows("pairwise")


def truths(scenario: str, delta: float) -> dict[str, float | None]:
    """The truth of each estimate a scenario reports (None: nothing to cover)."""
    if scenario == "position-only":
        return {"pairwise: LLM copy preferred": 0.0, "pairwise: first passage preferred": 0.15}
    return {"grade": None if scenario in ("garbage", "echo") else delta}


def run(scenario: str, ds: Any, studies: int, queries: int, delta: float) -> list[Tally]:
    position = 0.15 if scenario == "position-only" else 0.0
    bj = BiasedJudge.from_corpus(ds.corpus, ds.human_source, delta=delta, spread=0.1, noise=0.4, position=position)
    tallies = {q: Tally(scenario, q, t) for q, t in truths(scenario, delta).items()}
    with SimulatedServer(responder(scenario, bj)) as url:
        for seed in range(studies):
            rows = {r["quantity"]: r for r in study_rows(scenario, ds, url, seed, queries)}
            for quantity, tally in tallies.items():
                r = rows.get(quantity)
                if r is None:  # no row at all: nothing parsed in either copy
                    tally.add(None, None, None, "no row: nothing parsed")
                    continue
                tally.add(r["low"], r["high"], r["p"], r.get("refused") or r.get("note") or "", test_defined=not r.get("refused"))
    return list(tallies.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=200)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--delta", type=float, default=0.3)
    ap.add_argument("--scenario", default="all", choices=("all", *SCENARIOS))
    args = ap.parse_args()
    ds = load_dataset(script_data.dataset("nq-utd"))
    t0 = time.perf_counter()
    tallies: list[Tally] = []
    for scenario in SCENARIOS if args.scenario == "all" else (args.scenario,):
        tallies += run(scenario, ds, args.studies, args.queries, args.delta)
        print(f"  {scenario}: {time.perf_counter() - t0:.0f} s", flush=True)
    seconds = time.perf_counter() - t0
    print(f"\n{args.studies} studies a scenario, {args.queries} seeded NQ-UTD queries a study (few-queries: 3), every answer over HTTP; {seconds:.0f} s\n")
    print(markdown(tallies))
    raise SystemExit(0 if all(t.holds() for t in tallies) else 1)


if __name__ == "__main__":
    script_data.run(main)
