"""The ``sourcebias`` command line.

Every user-caused error (a bad file, a bad option, a missing model) ends with one clear
message and exit status 2, not a traceback.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from sourcebias.core.errors import SourceBiasError

app = typer.Typer(
    name="sourcebias",
    help=(
        "Measure, explain and mitigate source bias: retrievers that rank LLM-written copies of "
        "documents above the human originals.\n\n"
        "Start with:  sourcebias evaluate DATASET_DIR --retriever bm25"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
console = Console()
err_console = Console(stderr=True)

# Options that take several values after one flag (``--k 1 3 5``); click wants ``--k 1 --k 3``,
# so the argument list is rewritten before parsing. Each entry says which tokens belong to it.
_GREEDY = {
    "--k": lambda tok: tok.isdigit(),
    "--metric": lambda tok: tok.split("@")[0].lower() in {"ndcg", "map", "ap", "recall", "r", "p", "precision"},
}


def expand_greedy_options(argv: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        out.append(tok)
        accepts = _GREEDY.get(tok)
        if accepts is not None and i + 1 < len(argv):
            out.append(argv[i + 1])
            i += 2
            while i < len(argv) and accepts(argv[i]):
                out += [tok, argv[i]]
                i += 1
            continue
        i += 1
    return out


def fail(message: str, code: int = 2) -> None:
    err_console.print(f"[bold red]Error:[/bold red] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@app.command()
def evaluate(
    dataset_dir: Annotated[Path, typer.Argument(help="Dataset folder: corpus/<source>.jsonl (Cocktail), corpus-human.jsonl + <T>/corpus-<llm>.jsonl (KDD), or corpus.jsonl (BEIR); with queries.jsonl and qrels/<split>.tsv.", show_default=False)],
    retriever: Annotated[list[str], typer.Option("--retriever", "-r", help="Retriever to evaluate; repeat for several. bm25, tfidf, bm25:k1=0.9,b=0.4, and (with the neural extra) st:NAME_OR_PATH, presets, 'bm25>>ce:NAME'. See `sourcebias retrievers`.")] = ["bm25"],  # noqa: B006
    split: Annotated[str, typer.Option(help="Which qrels/<split>.tsv to evaluate on.")] = "test",
    k: Annotated[list[int], typer.Option("--k", help="Cut-offs, e.g. --k 1 3 5.")] = [1, 3, 5, 10],  # noqa: B006
    metric: Annotated[list[str], typer.Option("--metric", help="Measures: NDCG, MAP, Recall, P (e.g. --metric NDCG MAP).")] = ["NDCG", "MAP", "Recall", "P"],  # noqa: B006
    source: Annotated[list[str] | None, typer.Option("--source", "-s", help="Sources to include (repeat); default all.")] = None,
    human_source: Annotated[str, typer.Option(help="Name of the human-written (original) source.")] = "human",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Folder for runs, metrics.csv, per-query values and manifest.json.")] = None,
    depth: Annotated[int, typer.Option(help="Documents kept per query in each ranking.", min=1)] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the tie-breaking rule (and of significance tests).")] = 0,
    sole: Annotated[bool, typer.Option("--sole/--no-sole", help="Also rank each source alone (human-only, LLM-only settings).")] = True,
    remove_self_matches: Annotated[bool, typer.Option(help="Leave out documents whose id equals the query id (BEIR ArguAna/Quora quirk).")] = False,
    skip_unknown_qrels: Annotated[bool, typer.Option(help="Skip (and count) judgements naming unknown documents or queries instead of stopping.")] = False,
    skip_empty_text: Annotated[bool, typer.Option(help="Skip (and count) documents with empty text instead of stopping.")] = False,
    device: Annotated[str | None, typer.Option(help="Device for neural models: cpu, cuda, cuda:1 (default: cuda if available).")] = None,
    batch_size: Annotated[int, typer.Option(help="Batch size for neural models.", min=1)] = 32,
    max_length: Annotated[int | None, typer.Option(help="Maximum tokens per text for neural models (default: the model's, 512 for the papers' presets).")] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Embedding cache folder (default: $SOURCEBIAS_CACHE or ~/.cache/sourcebias).")] = None,
    cache: Annotated[bool, typer.Option("--cache/--no-cache", help="Keep document and query embeddings on disk, keyed by model and text, for reuse by later runs.")] = True,
    rerank_depth: Annotated[int, typer.Option(help="How many first-stage documents a re-ranker re-scores.", min=1)] = 100,
    runs: Annotated[bool, typer.Option("--runs/--no-runs", help="Write the TREC runs to OUTPUT/runs.")] = True,
    significance: Annotated[bool, typer.Option(help="Write significance.csv: human vs LLM target per measure, paired randomization and t-tests (SciPy; a few seconds).")] = False,
    resamples: Annotated[int, typer.Option(help="Resamples of the paired randomization test.", min=100)] = 10_000,
) -> None:
    """Measure the source bias of retrievers on a mixed human/LLM corpus.

    Ranks the mixed corpus once per retriever and scores it per target source (the other
    sources' copies count as non-relevant), with all sources as targets, and on each source
    alone. Prints NDCG/MAP/... in percent and Relative Δ = (human − LLM) / mean × 100:
    negative means LLM-generated text is ranked higher.

    Example:  sourcebias evaluate data/nq-utd -r bm25 -r tfidf --k 1 3 5 -o out/nq-utd
    """
    from sourcebias.core import progress
    from sourcebias.data import load_dataset
    from sourcebias.evaluation import evaluate as run_evaluation
    from sourcebias.evaluation import measure_grid
    from sourcebias.reporting import rich_table, write_evaluation
    from sourcebias.retrieval import build_retriever

    t_start = time.perf_counter()
    measures = measure_grid(metric, sorted(set(k)))
    if depth < max(k):
        fail(f"--depth {depth} is smaller than the largest cut-off {max(k)}")
    options = {"device": device, "batch_size": batch_size, "max_length": max_length, "cache_dir": cache_dir if cache else False, "rerank_depth": rerank_depth}
    retrievers = [build_retriever(spec, **options) for spec in dict.fromkeys(retriever)]
    names = [r.name for r in retrievers]
    if len(set(names)) != len(names):
        fail(f"two retrievers have the same name: {', '.join(names)}")

    t0 = time.perf_counter()
    with console.status(f"Loading {dataset_dir} ..."):
        dataset = load_dataset(
            dataset_dir,
            split=split,
            sources=source,
            human_source=human_source,
            unknown_qrels="skip" if skip_unknown_qrels else "error",
            empty_text="skip" if skip_empty_text else "error",
        )
    t_load = time.perf_counter() - t0
    counts = ", ".join(f"{s} {n:,}" for s, n in dataset.corpus.source_counts().items())
    console.print(f"[bold]{dataset.name}[/bold] ({dataset.layout} layout), split [bold]{split}[/bold]: {counts} documents; {len(dataset.evaluation_queries())} queries evaluated")
    for note in dataset.report.notes():
        console.print(f"[yellow]Note:[/yellow] {note}")

    with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
        result = run_evaluation(dataset, retrievers, measures=measures, depth=depth, seed=seed, sole=sole, exclude_self=remove_self_matches, keep_runs=output is not None and runs)
    for key, info in result.run_info.items():
        if "self_matches_removed" in info:
            console.print(f"[yellow]Note:[/yellow] {key}: removed {info['self_matches_removed']} self-matches (document id = query id)")
    for name in result.retrievers:
        infos = [i for k, i in result.run_info.items() if k.startswith(f"{name}/") and "embeddings" in i]
        if infos:
            e = infos[-1]["embeddings"]
            console.print(f"[dim]{name}: {e['encoded']:,} texts encoded, {e['from_disk']:,} read from the embedding cache, {e['from_memory']:,} reused in memory[/dim]")
    console.print(rich_table(result, title=f"Source bias on {dataset.name} ({split})"))
    if output is not None:
        paths = write_evaluation(result, output, write_runs=runs, significance_resamples=resamples if significance else 0, timings={"load_s": round(t_load, 3), "total_s": round(time.perf_counter() - t_start, 3)})
        console.print(f"Wrote {', '.join(p.name for p in paths.values())} to [bold]{output}[/bold]")
    else:
        console.print("[dim]Add --output DIR to save runs, metrics.csv, per-query values and a manifest.[/dim]")


@app.command()
def retrievers() -> None:
    """List the retrievers and re-rankers that --retriever accepts."""
    from sourcebias.retrieval import available_retrievers

    avail = available_retrievers()
    console.print("[bold]First stages[/bold] (--retriever KIND[:ARG])")
    for kind, help_ in avail["first_stage"].items():
        console.print(f"  [cyan]{kind}[/cyan]  {help_}")
    console.print("[bold]Re-rankers[/bold] (after a first stage: FIRST>>KIND:NAME)")
    for kind, help_ in avail["rerankers"].items() or {}:
        console.print(f"  [cyan]{kind}[/cyan]  {help_}")


@app.command()
def inspect(
    dataset_dir: Annotated[Path, typer.Argument(help="Dataset folder.", show_default=False)],
    split: Annotated[str | None, typer.Option(help="Also load and check this split's qrels.")] = None,
    human_source: Annotated[str, typer.Option(help="Name of the human-written (original) source.")] = "human",
) -> None:
    """Show a dataset's layout, sources, splits and sizes, and validate it."""
    from sourcebias.data import detect_layout, load_dataset

    layout = detect_layout(dataset_dir, human_source)
    console.print(f"[bold]{Path(dataset_dir).resolve().name}[/bold]: {layout.layout} layout")
    for s, p in layout.source_files.items():
        console.print(f"  source [cyan]{s}[/cyan]: {p}")
    console.print(f"  splits: {', '.join(layout.splits()) or 'none'}")
    if split is not None:
        ds = load_dataset(dataset_dir, split=split, human_source=human_source)
        d = ds.describe()
        console.print(f"  {split}: {d['queries_in_split']} queries judged, {d['queries_evaluated']} with a relevant document, {d['judgements']:,} judgements")
        for s, info in d["sources"].items():
            console.print(f"  {s}: {info['documents']:,} documents")
        for note in ds.report.notes():
            console.print(f"  [yellow]Note:[/yellow] {note}")
        console.print("[green]valid[/green]")


from sourcebias.cli.generate import register as _register_generate  # noqa: E402

_register_generate(app)  # generate, serve


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``sourcebias`` command."""
    # The CLI draws its own progress bars; Hugging Face's tqdm bars (weights loading,
    # downloads) would interleave with them. Read by huggingface_hub and transformers at import.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    args = expand_greedy_options(list(sys.argv[1:] if argv is None else argv))
    try:
        app(args=args, prog_name="sourcebias", standalone_mode=True)
    except SourceBiasError as exc:
        err_console.print(f"[bold red]Error:[/bold red] {exc}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("[yellow]Interrupted.[/yellow] Finished work is kept; rerun to resume where resumable.")
        sys.exit(130)
