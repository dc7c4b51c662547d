"""``sourcebias evaluate``: measure the source bias of retrievers, or of runs made by any system.

Parses the options into a :class:`~sourcebias.data.options.DatasetOptions` and an
:class:`~sourcebias.evaluation.plan.EvaluationPlan` and prints what
:func:`~sourcebias.study.job.run_evaluation_job` reports; the library checks every
option before any work and does the work.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from sourcebias.cli import options
from sourcebias.cli.common import console, fail

if TYPE_CHECKING:
    from sourcebias.data.options import DatasetOptions
    from sourcebias.evaluation.plan import EvaluationPlan

HELP = """Measure the source bias of retrievers (or of runs from any system) on a mixed human/LLM corpus.

Ranks the mixed corpus once per retriever and scores it per target source (the other
sources' copies count as non-relevant), with all sources as targets, and on each source
alone. Prints NDCG/MAP/... in percent and Relative Δ = (human − LLM) / mean × 100:
negative means LLM-generated text is ranked higher.

Examples:

  sourcebias evaluate nq-utd -r bm25 -r tfidf --k 1 3 5 -o out/nq-utd

  sourcebias evaluate data/my-dataset --run pyserini=bm25.trec --docno-pattern '{doc_id}-{source}'
"""

STYLES = {"info": "{}", "note": "[yellow]Note:[/yellow] {}", "detail": "[dim]{}[/dim]"}


def _parse_run_arg(text: str) -> tuple[str | None, Path]:
    """``NAME=FILE`` or ``FILE``."""
    name, sep, path = text.partition("=")
    if sep and name and not Path(text).exists():
        return name.strip(), Path(path)
    return None, Path(text)


def _parse_labels(items: list[str] | None) -> tuple[tuple[str, str], ...]:
    out: dict[str, str] = {}
    for item in items or []:
        source, sep, label = item.partition("=")
        if not sep or not source or not label:
            fail(f"--source-label expects SOURCE=LABEL (how a run file writes a source), got '{item}'")
        out[source.strip()] = label.strip()
    return tuple(out.items())


def evaluate(
    dataset: options.DatasetArg,
    retriever: options.Retrievers = None,
    run: options.Runs = None,
    docnos: options.Docnos = None,
    docno_pattern: options.DocnoPattern = None,
    source_label: options.SourceLabels = None,
    split: options.Split = "test",
    k: options.Cutoffs = None,
    metric: options.Metrics = None,
    source: options.Sources = None,
    human_source: options.HumanSource = "human",
    twins: options.Twins = None,
    output: options.Output = None,
    overwrite: options.Overwrite = False,
    depth: options.Depth = 1000,
    seed: options.Seed = 0,
    max_queries: options.MaxQueries = None,
    sole: options.Sole = True,
    remove_self_matches: options.RemoveSelfMatches = False,
    skip_unknown_qrels: options.SkipUnknownQrels = False,
    skip_empty_text: options.SkipEmptyText = False,
    allow_unknown_files: options.AllowUnknownFiles = False,
    device: options.Device = None,
    batch_size: options.BatchSize = None,
    max_length: options.MaxLength = None,
    cache_dir: options.CacheDir = None,
    cache: options.UseCache = True,
    rerank_depth: options.RerankDepth = None,
    runs: options.WriteRuns = True,
    figure: options.DrawFigure = True,
    format: options.Format = "csv",
    resamples: options.Resamples = 10_000,
    statistics: options.Statistics = None,
    statistics_measure: options.StatisticsMeasures = None,
    bootstrap_resamples: options.BootstrapResamples = 2000,
    confidence: options.Confidence = 0.95,
    correction: options.Correction = "holm",
    ndsr_k: options.NdsrK = 10,
    orphans: options.Orphans = "drop",
) -> None:
    from sourcebias.evaluation.plan import EvaluationPlan

    loading = _dataset_options(split, source, human_source, skip_unknown_qrels, skip_empty_text, allow_unknown_files, twins, orphans)
    plan = EvaluationPlan(
        **_systems(retriever, run, docnos, docno_pattern, source_label),
        **_protocol(metric, k, depth, seed, max_queries, sole, remove_self_matches),
        **_statistics(resamples, statistics, statistics_measure, bootstrap_resamples, confidence, correction, ndsr_k),
        format=format,
        write_runs=runs,
        draw_figure=figure,
        retriever_options=_retriever_options(device, batch_size, max_length, cache_dir, cache, rerank_depth),
    )
    plan.check()  # the job checks it too; here so that a bad option is all that is printed
    _run(dataset, loading, plan, output, overwrite)


def _dataset_options(
    split: str,
    source: list[str] | None,
    human_source: str,
    skip_unknown_qrels: bool,
    skip_empty_text: bool,
    allow_unknown_files: bool,
    twins: Path | None,
    orphans: str,
) -> DatasetOptions:
    """How the dataset is loaded (split, sources, and what to do with unknown or empty entries)."""
    from sourcebias.data.options import DatasetOptions

    return DatasetOptions(
        split=split,
        sources=tuple(dict.fromkeys(source)) if source else None,
        human_source=human_source,
        unknown_qrels="skip" if skip_unknown_qrels else "error",
        orphans=orphans,
        empty_text="skip" if skip_empty_text else "error",
        unknown_files="note" if allow_unknown_files else "error",
        twins=str(twins) if twins is not None else None,
    )


def _systems(
    retriever: list[str] | None, run: list[str] | None, docnos: Path | None, docno_pattern: str | None, source_label: list[str] | None
) -> dict[str, Any]:
    """The plan's systems: the retrievers, the run files and how the run files name documents."""
    return {
        "retrievers": tuple(retriever or ()),
        "runs": tuple(_parse_run_arg(r) for r in run or ()),
        "docnos": docnos,
        "docno_pattern": docno_pattern,
        "source_labels": _parse_labels(source_label),
    }


def _protocol(
    metric: list[str] | None, k: list[int] | None, depth: int, seed: int, max_queries: int | None, sole: bool, remove_self_matches: bool
) -> dict[str, Any]:
    """The plan's measures, cut-offs and protocol settings."""
    return {
        "measures": tuple(metric or ()),
        "cutoffs": tuple(k or ()),
        "depth": depth,
        "seed": seed,
        "max_queries": max_queries,
        "sole": sole,
        "exclude_self": remove_self_matches,
    }


def _statistics(
    resamples: int,
    statistics: list[str] | None,
    statistics_measure: list[str] | None,
    bootstrap_resamples: int,
    confidence: float,
    correction: str,
    ndsr_k: int,
) -> dict[str, Any]:
    """The plan's report statistics and their settings."""
    from sourcebias.evaluation.plan import parse_statistics

    return {
        "resamples": resamples,
        "statistics": parse_statistics(statistics),
        "statistics_measures": tuple(statistics_measure or ()),
        "bootstrap_resamples": bootstrap_resamples,
        "confidence": confidence,
        "correction": correction,
        "ndsr_k": ndsr_k,
    }


def _retriever_options(
    device: str | None, batch_size: int | None, max_length: int | None, cache_dir: Path | None, cache: bool, rerank_depth: int | None
) -> dict[str, Any]:
    """Command-wide settings of the retrievers (``cache_dir`` False: no cache)."""
    return {"device": device, "batch_size": batch_size, "max_length": max_length, "cache_dir": cache_dir if cache else False, "rerank_depth": rerank_depth}


def _run(dataset: str, loading: DatasetOptions, plan: EvaluationPlan, output: Path | None, overwrite: bool) -> None:
    """Run the job under progress bars and print what it reports."""
    from rich.markup import escape

    from sourcebias.core import progress
    from sourcebias.report import to_rich
    from sourcebias.study.job import run_evaluation_job

    def emit(kind: str, text: str) -> None:  # escaped: "sourcebias[analysis]" is text, not rich markup
        console.print(STYLES[kind].format(escape(text)))

    with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
        job = run_evaluation_job(dataset, loading, plan, output, overwrite=overwrite, emit=emit)
    console.print(to_rich(job.report))
    if job.path is not None:
        console.print(f"Wrote the results to [bold]{job.path}[/bold] (load them with sourcebias.load_result)")
    else:
        console.print("[dim]Add --output DIR to save the results (runs, metrics.csv, per-query values, manifest).[/dim]")


def register(app: typer.Typer) -> None:
    app.command(help=HELP)(evaluate)
