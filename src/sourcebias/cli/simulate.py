"""``sourcebias simulate CONFIG -o DIR``: the feedback loop of LLM text in a corpus, round by round."""

from __future__ import annotations

import typer

from sourcebias.cli import options_bench
from sourcebias.cli.common import console


def simulate(
    config: options_bench.SimulationConfig,
    output: options_bench.SimulationOutput,
    overwrite: options_bench.SimulationOverwrite = False,
    ray: options_bench.SimulationRay = None,
) -> None:
    """Simulate LLM text feeding back into a corpus: rank, let a generator write from the top k,
    add what it wrote as a source of its own ('<generator>-round<r>'), repeat.

    Per round and retriever: the share of generated text in the top k (Share@k, NDSR@k), NDCG@k on
    the human judgements, human documents silenced for good, and self-BLEU@k of the top k. BM25
    is appended to, not rebuilt; dense vectors of earlier rounds come from the embedding store.
    Resumable per round; seeded.

    Example:  sourcebias simulate loop.toml -o out/loop
    """
    from sourcebias.core import progress
    from sourcebias.report.render import to_rich
    from sourcebias.simulate import load_simulation_config, run_simulation

    cfg = load_simulation_config(config)
    names = ", ".join(n for n, _ in cfg.retrievers)
    console.print(
        f"[bold]{cfg.name}[/bold]: {cfg.rounds} rounds x {len(cfg.retrievers)} retrievers ({names}); {cfg.generator.model} writes "
        f"'{cfg.generator.write}' from the top {cfg.k} of {cfg.queries_per_round} queries per round; intervention: {cfg.intervention.kind}"
    )

    def on_event(kind: str, rec: dict) -> None:
        if kind == "cached":
            console.print(f"  [dim]= {rec['retriever']} round {rec['round']}: finished earlier, reused[/dim]")
        elif kind == "ok":
            console.print(f"  [green]✓[/green] {rec['retriever']} round {rec['round']}: {rec['seconds']:.1f} s")

    with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
        result, root = run_simulation(cfg, output, overwrite=overwrite, on_event=on_event, ray_address=ray)
    console.print(to_rich(result.report()))
    console.print(
        f"Wrote simulation.csv, sources.csv, report.md, report.html and curves.png to [bold]{root}[/bold] (load with sourcebias.simulate.load_simulation)"
    )


def register(app: typer.Typer) -> None:
    app.command()(simulate)
