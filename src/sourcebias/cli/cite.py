"""``sourcebias cite DATA --run RUN --generator SPEC -o DIR``: which sources a generated answer cites."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from sourcebias.cli import options as o
from sourcebias.cli.common import console, fail

Data = Annotated[
    str,
    typer.Argument(
        help="The dataset (folder or name, e.g. nq-utd; DIR,split for another split than "
        "test) whose passages the generator reads, asked about its judged queries.",
        show_default=False,
        metavar="DATA",
    ),
]
RunArg = Annotated[
    Path | None, typer.Option("--run", metavar="DIR|FILE", help="An `evaluate` output folder (its mixed-corpus run) or a TREC run file over DATA.")
]
RetrieverArg = Annotated[
    str | None, typer.Option("--retriever", "-r", metavar="SPEC", help="Or rank DATA's mixed corpus now with this retriever (e.g. bm25; LABEL=SPEC names it).")
]
RunName = Annotated[str | None, typer.Option(help="Which mixed run of an `evaluate` folder that holds several.")]
Generator = Annotated[
    str,
    typer.Option(metavar="SPEC", help="The generator: smollm2, gemma3, a GGUF file, a transformers model, or openai:MODEL@URL (an OpenAI-compatible server)."),
]
Output = Annotated[Path | None, typer.Option("--output", "-o", metavar="DIR", help="Output folder (results, answers, report, figure, manifest).")]
K = Annotated[int, typer.Option("--k", "-k", min=2, help="Passages per context: the top k of each query's ranking.")]
Orders = Annotated[
    int,
    typer.Option(
        min=1,
        help="Context orders per query, at most -k: 1 as ranked; more add rotations of it (a cyclic Latin square); = k balances positions (the twins need it).",
    ),
]
Seed = Annotated[int, typer.Option(help="Seed of the query sample (also sent with each call).")]
MaxTokens = Annotated[int, typer.Option(min=1, help="Most tokens per answer.")]
Temperature = Annotated[float, typer.Option(min=0.0, help="Sampling temperature (0: greedy).")]
Uncited = Annotated[str, typer.Option(help="An answer citing no passage (none, or only numbers outside 1..k): keep (cites none) or drop (left out); counted.")]
Level = Annotated[float, typer.Option(help="Level of the confidence intervals.")]
MaxQueries = Annotated[int | None, typer.Option(min=1, help="Ask about a seeded sample of this many queries. \\[default: all]")]
Concurrency = Annotated[int | None, typer.Option(min=1, help="Requests in flight against servers. \\[default: 4 per server]")]
Device = Annotated[str | None, typer.Option(help="Device of a local generator (and of --retriever): cpu, cuda.")]
Shots = Annotated[
    int, typer.Option(min=0, help="How many of the prompt's demonstrations to show first (alce has one: a question, two passages, a cited answer); 0: none.")
]
PromptArg = Annotated[
    str,
    typer.Option(
        "--prompt",
        metavar="NAME|FILE",
        help="The citation prompt: alce (ALCE's instruction and passage format), or a prompt file (.toml) asking for citations.",
    ),
]
CacheDir = Annotated[Path | None, typer.Option(metavar="DIR", help="Where answers are stored (default: the sourcebias cache); a rerun reads them back.")]


def cite(
    data: Data,
    generator: Generator,
    run: RunArg = None,
    retriever: RetrieverArg = None,
    run_name: RunName = None,
    output: Output = None,
    k: K = 5,
    orders: Orders = 1,
    seed: Seed = 0,
    max_tokens: MaxTokens = 128,
    temperature: Temperature = 0.0,
    uncited: Uncited = "keep",
    level: Level = 0.95,
    max_queries: MaxQueries = None,
    concurrency: Concurrency = None,
    device: Device = None,
    cache_dir: CacheDir = None,
    shots: Shots = 1,
    prompt: PromptArg = "alce",
    overwrite: o.ReplaceResults = False,
    timeout: o.ServerTimeout = None,
) -> None:
    """Measure which sources a generated answer cites: the top k passages of a mixed ranking go
    to the generator with ALCE's numbered-citation prompt (or --prompt), in --orders context orders; the
    citations are read from each answer (answers that cite nothing, or a passage that does not
    exist, are counted). Reports P(cited | source, rank), P(cited | source, position) and the
    source effect conditional on rank: a query-clustered logistic regression with rank (and
    position) fixed effects, and matched twins shown in the same context.

    Every answer is stored as it arrives: an interrupted run loses at most the calls in flight,
    and the same command resumes.

    Examples:

      sourcebias cite nq-utd -r bm25 --generator smollm2 -k 5 --orders 5 -o out/nq-cite

      sourcebias cite nq-utd --run out/nq-utd --generator openai:qwen@http://127.0.0.1:8080/v1 -o out/nq-cite-qwen
    """
    from sourcebias.citations import RankingSource
    from sourcebias.llmcalls import ModelAccess

    settings = _cite_settings(k, orders, seed, max_tokens, temperature, uncited, level, max_queries, shots, prompt)
    ranking = RankingSource(run=run, retriever=retriever, run_name=run_name)
    access = ModelAccess(cache_dir=cache_dir, concurrency=concurrency, device=device, timeout=timeout)
    _run(data, output, settings, generator=generator, ranking=ranking, access=access, overwrite=overwrite)


def _cite_settings(
    k: int, orders: int, seed: int, max_tokens: int, temperature: float, uncited: str, level: float, max_queries: int | None, shots: int, prompt: str
) -> Any:
    """The study's settings, checked (a bad option ends the command with its message)."""
    from sourcebias.citations import CiteSettings
    from sourcebias.core.errors import ConfigError

    settings = CiteSettings(
        k=k,
        orders=orders,
        seed=seed,
        max_tokens=max_tokens,
        temperature=temperature,
        uncited=uncited,
        level=level,
        max_queries=max_queries,
        shots=shots,
        prompt=prompt,
    )
    try:
        settings.check()
    except ConfigError as exc:
        fail(str(exc))
    return settings


def _run(data: str, output: Path | None, settings: Any, **kwargs: Any) -> None:
    """Run the study with progress bars and print its report and where it was written."""
    from sourcebias.citations.job import run_cite
    from sourcebias.citations.report import citation_report
    from sourcebias.core import progress
    from sourcebias.report.render import to_rich

    with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
        result, path = run_cite(data, output, settings=settings, **kwargs)
    console.print(to_rich(citation_report(result)))
    if path is not None:
        console.print(
            "Wrote citations.json, passages.csv, answers.csv, summary.md, summary.tex and "
            f"citations.png to [bold]{path}[/bold] (load them with sourcebias.citations.load_citations)"
        )
    else:
        console.print("[dim]Add --output DIR to save the results and the figure.[/dim]")


def register(app: typer.Typer) -> None:
    app.command()(cite)
