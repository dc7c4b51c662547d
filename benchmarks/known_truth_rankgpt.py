"""Known-truth coverage of the listwise re-ranker's position and source estimates, with honest and
adversarial re-rankers: every estimate must cover the truth in at least 90% of the studies, or be
refused with a reason, and never show a p-value without an interval.

Each simulated study serves a responder through a :class:`~sourcebias.llmcalls.simulated.SimulatedServer`
(the HTTP path of a real server) and runs ``rankgpt`` (window 2, both input orders: a balanced
design) over ``--queries`` twin pairs (:func:`~sourcebias.retrieval.rerankers.simulated_bias.run_study`).
The scenarios:

* ``biased``: :func:`~sourcebias.retrieval.rerankers.simulated_bias.biased_pair_responder`, which
  moves the LLM twin up by ``2 theta`` of the window and keeps the shown order with a position
  slope of ``2 rho - 1``;
* ``half-garbage``: the same, but half of the windows (by a hash of the prompt, independently of
  the sources) get "Sure! Here is my ranking.": left out of the fit, the truth unchanged;
* ``garbage``: "Sure! Here is my ranking." to every window (issue 38 found position +1.000 from
  it): nothing to fit;
* ``repaired``: every answer names one passage only ("[1]"), the rest appended by the repair
  rule: nothing the model ranked, so nothing to fit;
* ``echo``: every answer repeats the prompt's last message (its example "[1] > [2]" and the
  query's digits): repaired, left out;
* ``position-only``: ``theta = 0``: the source coefficient's truth is 0;
* ``few-queries``: 3 twin pairs: coefficients without interval (the audit's rule).

Usage:
    python benchmarks/known_truth_rankgpt.py [--studies 200] [--queries 50] [--theta 0.15] [--rho 0.7] [--scenario all]
"""

from __future__ import annotations

import argparse
import hashlib
import time
from typing import Any

from sourcebias.clustered.tally import Tally, markdown
from sourcebias.llmcalls.simulated import SimulatedServer
from sourcebias.retrieval.rerankers.simulated_bias import biased_pair_responder, run_study

GARBAGE = "Sure! Here is my ranking."
SCENARIOS = ("biased", "half-garbage", "garbage", "repaired", "echo", "position-only", "few-queries")


def responder(scenario: str, theta: float, rho: float, seed: int) -> Any:
    """The simulated re-ranker of a scenario."""
    biased = biased_pair_responder(0.0 if scenario == "position-only" else theta, rho, seed)

    def garbage(messages: list[dict[str, str]], params: dict[str, Any]) -> tuple[str, None]:
        return GARBAGE, None

    def repaired(messages: list[dict[str, str]], params: dict[str, Any]) -> tuple[str, None]:
        return "[1]", None

    def echo(messages: list[dict[str, str]], params: dict[str, Any]) -> tuple[str, None]:
        return messages[-1]["content"], None

    def half(messages: list[dict[str, str]], params: dict[str, Any]) -> Any:
        if hashlib.sha256("".join(m["content"] for m in messages).encode()).digest()[0] % 2:
            return GARBAGE, None
        return biased(messages, params)

    return {"garbage": garbage, "repaired": repaired, "echo": echo, "half-garbage": half}.get(scenario, biased)


def truths(scenario: str, theta: float, rho: float) -> dict[str, float | None]:
    if scenario in ("garbage", "repaired", "echo"):
        return {"position": None, "source:llm": None}
    return {"position": 2 * rho - 1, "source:llm": 0.0 if scenario == "position-only" else -2 * theta}


def run(scenario: str, studies: int, queries: int, theta: float, rho: float) -> list[Tally]:
    tallies = {k: Tally(scenario, k, t) for k, t in truths(scenario, theta, rho).items()}
    for seed in range(studies):
        with SimulatedServer(responder(scenario, theta, rho, seed)) as url:
            fit = run_study(url, 3 if scenario == "few-queries" else queries, theta=theta, rho=rho, seed=seed)
        for name, tally in tallies.items():
            c = (fit.get("coefficients") or {}).get(name)
            if c is None or c.get("ci") is None:
                tally.add(None, None, None if c is None else c.get("p"), fit.get("refused") or fit.get("interval_refused") or "")
            else:
                tally.add(c["ci"][0], c["ci"][1], c["p"])
    return list(tallies.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=200)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--theta", type=float, default=0.15)
    ap.add_argument("--rho", type=float, default=0.7)
    ap.add_argument("--scenario", default="all", choices=("all", *SCENARIOS))
    args = ap.parse_args()
    t0 = time.perf_counter()
    tallies: list[Tally] = []
    for scenario in SCENARIOS if args.scenario == "all" else (args.scenario,):
        tallies += run(scenario, args.studies, args.queries, args.theta, args.rho)
        print(f"  {scenario}: {time.perf_counter() - t0:.0f} s", flush=True)
    seconds = time.perf_counter() - t0
    print(
        f"\n{args.studies} simulated studies a scenario x {args.queries} twin pairs (few-queries: 3), both input orders; theta={args.theta}, rho={args.rho}; {seconds:.0f} s\n"
    )
    print(markdown(tallies))
    raise SystemExit(0 if all(t.holds() for t in tallies) else 1)


if __name__ == "__main__":
    main()
