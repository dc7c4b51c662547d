"""``sourcebias evaluate``: measure the source bias of retrievers, or of runs made by any system."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from sourcebias.cli.common import console, fail

#: what ``--significance`` (kept for old scripts; it computes nothing) says
REPLACED_SIGNIFICANCE = (
    "is no longer needed and computes nothing: the paired tests of human vs LLM target (t-test, sign test, seeded randomization test and its "
    "corrected p) are the paired_tests statistic, printed in the statistics table and written to statistics.csv and summary.md "
    "(on by default; see --statistics); significance.csv is no longer written."
)


def _parse_run_arg(text: str) -> tuple[str | None, Path]:
    """``NAME=FILE`` or ``FILE``."""
    name, sep, path = text.partition("=")
    if sep and name and not Path(text).exists():
        return name.strip(), Path(path)
    return None, Path(text)


def _parse_labels(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        source, sep, label = item.partition("=")
        if not sep or not source or not label:
            fail(f"--source-label expects SOURCE=LABEL (how a run file writes a source), got '{item}'")
        out[source.strip()] = label.strip()
    return out


def evaluate(
    dataset_dir: Annotated[Path, typer.Argument(help="Dataset folder: corpus/<source>.jsonl (Cocktail), corpus-human.jsonl + <T>/corpus-<llm>.jsonl (KDD), or corpus.jsonl (BEIR); with queries.jsonl and qrels/<split>.tsv (.gz too).", show_default=False, metavar="DATASET_DIR")],
    retriever: Annotated[list[str] | None, typer.Option("--retriever", "-r", metavar="SPEC", help="Retriever to evaluate; repeat for several. bm25, tfidf, bm25:k1=0.9,b=0.4, st:NAME_OR_PATH, presets (minilm, tas-b, ...), pipelines 'bm25>>cut:20>>lm:smollm2'. See `sourcebias retrievers`. Default: bm25 (when no --run is given).")] = None,
    run: Annotated[list[str] | None, typer.Option("--run", metavar="[NAME=]FILE", help="A TREC run of the mixed corpus made by any system (qid Q0 docno rank score tag); repeat for several. Scored with the same protocol; equal scores are ordered by the tie rule.")] = None,
    docnos: Annotated[Path | None, typer.Option(help="Table docno<TAB>doc_id<TAB>source naming the documents of --run files (default: docnos.tsv beside the run if present, else names <source>/<doc_id>).", metavar="FILE")] = None,
    docno_pattern: Annotated[str | None, typer.Option(help="How --run files name documents, e.g. '{doc_id}-{source}' (Cocktail's suffix); see --source-label.", metavar="PATTERN")] = None,
    source_label: Annotated[list[str] | None, typer.Option("--source-label", metavar="SOURCE=LABEL", help="How --docno-pattern writes a source when not by its name, e.g. llama-2-7b-chat-tmp0.2=llama; repeat per source.")] = None,
    split: Annotated[str, typer.Option(help="Which qrels/<split>.tsv to evaluate on.")] = "test",
    k: Annotated[list[int] | None, typer.Option("--k", metavar="K...", help="Cut-offs, e.g. --k 1 3 5. \\[default: 1 3 5 10]")] = None,
    metric: Annotated[list[str] | None, typer.Option("--metric", metavar="NAME...", help="Measures, e.g. --metric NDCG MAP: NDCG, MAP, Recall, P (need labels) and Share (label-free share of each source in the top k). \\[default: all five]")] = None,
    source: Annotated[list[str] | None, typer.Option("--source", "-s", metavar="SOURCE", help="Sources to include (repeat); default all.")] = None,
    human_source: Annotated[str, typer.Option(help="Name of the human-written (original) source.")] = "human",
    twins: Annotated[Path | None, typer.Option(help="With DATASET_DIR irds:<id> (the human side through ir_datasets, e.g. irds:beir/nfcorpus/test): the folder of the LLM twins (<source>.jsonl files, or a Cocktail folder).", metavar="DIR")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="DIR", help="Folder for the results (result.json, metrics.csv, per-query values, runs, summary, manifest.json); checked before any work.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace the results of an earlier run in --output (never files sourcebias did not write).")] = False,
    depth: Annotated[int, typer.Option(help="Documents kept per query in each ranking.", min=1)] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the tie-breaking rule (and of the statistics' resampling).")] = 0,
    sole: Annotated[bool, typer.Option("--sole/--no-sole", help="Also rank each source alone (human-only, LLM-only settings).")] = True,
    remove_self_matches: Annotated[bool, typer.Option(help="Leave out documents whose id equals the query id (BEIR ArguAna/Quora quirk).")] = False,
    skip_unknown_qrels: Annotated[bool, typer.Option(help="Skip (and count) judgements naming unknown documents or queries instead of stopping.")] = False,
    skip_empty_text: Annotated[bool, typer.Option(help="Skip (and count) documents with empty text instead of stopping.")] = False,
    allow_unknown_files: Annotated[bool, typer.Option(help="Go on (with a note) when the corpus folder holds a file that is not a source (<source>.jsonl or .jsonl.gz); by default that stops.")] = False,
    device: Annotated[str | None, typer.Option(help="Device for neural models: cpu, cuda, cuda:1 (default: cuda if available).")] = None,
    batch_size: Annotated[int | None, typer.Option(help="Batch size for neural models (default: each kind's, 32).", min=1)] = None,
    max_length: Annotated[int | None, typer.Option(help="Maximum tokens per text for neural models (default: the model's, 512 for the papers' presets). A stage's own max_length= wins.")] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Embedding cache folder (default: $SOURCEBIAS_CACHE or ~/.cache/sourcebias).", metavar="DIR")] = None,
    cache: Annotated[bool, typer.Option("--cache/--no-cache", help="Keep document and query embeddings on disk, keyed by model and text, for reuse by later runs.")] = True,
    rerank_depth: Annotated[int | None, typer.Option(help="How many first-stage documents a re-ranker re-scores (default 100). A stage's own depth= wins.", min=1)] = None,
    runs: Annotated[bool, typer.Option("--runs/--no-runs", help="Write the TREC runs to OUTPUT/runs.")] = True,
    format: Annotated[str, typer.Option("--format", metavar="csv|parquet", help="File format of the per-query values in OUTPUT: per_query.csv or per_query.parquet (pyarrow; columnar, fast to load). load_result reads either.")] = "csv",
    significance: Annotated[bool, typer.Option(hidden=True, help="Replaced: the paired tests are the paired_tests statistic (statistics.csv, summary).")] = False,
    resamples: Annotated[int, typer.Option(help="Resamples of the paired randomization test.", min=100)] = 10_000,
    statistics: Annotated[list[str] | None, typer.Option("--statistics", metavar="NAME...", help="Statistics to show and write (summary.md, summary.tex, statistics.csv), repeated or comma-separated: relative_delta_ci, paired_tests, twin_preference, delta_ndsr, means, or none. \\[default: the first four]")] = None,
    statistics_measure: Annotated[list[str] | None, typer.Option("--statistics-measure", metavar="MEASURE...", help="Measures of the per-measure statistics, e.g. NDCG@3. \\[default: every cut-off of the first measure with labels]")] = None,
    bootstrap_resamples: Annotated[int, typer.Option(help="Resamples of the bootstrap CI of Relative Δ.", min=100)] = 2000,
    confidence: Annotated[float, typer.Option(help="Level of the bootstrap CI of Relative Δ.", min=0.5, max=0.999)] = 0.95,
    correction: Annotated[str, typer.Option(metavar="holm|fdr_bh|bonferroni|none", help="Multiple-testing correction of the randomization tests across the report's tests.")] = "holm",
    ndsr_k: Annotated[int, typer.Option("--ndsr-k", help="Cut-off of ΔNDSR@k.", min=1)] = 10,
    orphans: Annotated[str, typer.Option(metavar="drop|keep", help="A judged original whose copy is missing in some source: drop its judgements (compared fairly) or keep them (the earlier rule, named in the output).")] = "drop",
) -> None:
    """Measure the source bias of retrievers (or of runs from any system) on a mixed human/LLM corpus.

    Ranks the mixed corpus once per retriever and scores it per target source (the other
    sources' copies count as non-relevant), with all sources as targets, and on each source
    alone. Prints NDCG/MAP/... in percent and Relative Δ = (human − LLM) / mean × 100:
    negative means LLM-generated text is ranked higher.

    Examples:

      sourcebias evaluate data/nq-utd -r bm25 -r tfidf --k 1 3 5 -o out/nq-utd

      sourcebias evaluate data/nq-utd --run pyserini=bm25.trec --docno-pattern '{doc_id}-{source}'
    """
    from sourcebias.core import progress
    from sourcebias.core.artifacts import OutputFolder
    from sourcebias.data import load_dataset
    from sourcebias.evaluation import evaluate as run_evaluation
    from sourcebias.evaluation import measure_grid
    from sourcebias.evaluation.measures import DEFAULT_CUTOFFS, DEFAULT_MEASURES
    from sourcebias.evaluation.stats import CORRECTIONS
    from sourcebias.reporting import EVALUATE_STATISTICS, result_report, to_rich, write_evaluation
    from sourcebias.retrieval import Run, build_retriever
    from sourcebias.retrieval.run import resolve_docnos

    t_start = time.perf_counter()
    if significance:
        console.print(f"[yellow]Note:[/yellow] --significance {REPLACED_SIGNIFICANCE}")
    cutoffs = sorted(set(k or DEFAULT_CUTOFFS))
    measures = measure_grid(metric or DEFAULT_MEASURES, cutoffs)
    if depth < max(cutoffs):
        fail(f"--depth {depth} is smaller than the largest cut-off {max(cutoffs)}")
    if format not in ("csv", "parquet"):
        fail(f"--format must be csv or parquet, got '{format}'")
    if correction not in CORRECTIONS:
        fail(f"--correction must be one of {', '.join(CORRECTIONS)}, got '{correction}'")
    if orphans not in ("drop", "keep"):
        fail(f"--orphans must be drop or keep, got '{orphans}'")
    statistics = [x.strip() for s in statistics or [] for x in s.split(",") if x.strip()]
    chosen_statistics = [] if [s.lower() for s in statistics] == ["none"] else list(statistics or EVALUATE_STATISTICS)
    run_args = [_parse_run_arg(r) for r in run or []]
    for _, path in run_args:
        if not path.is_file():
            fail(f"--run {path}: file not found")
    if docnos is not None and docno_pattern is not None:
        fail("give --docnos or --docno-pattern, not both")
    if (docnos is not None or docno_pattern is not None or source_label) and not run_args:
        fail("--docnos, --docno-pattern and --source-label name the documents of --run files; give --run FILE")
    labels = _parse_labels(source_label)
    specs = list(dict.fromkeys(retriever or ([] if run_args else ["bm25"])))
    folder = OutputFolder.claim(output, kind="evaluate", overwrite=overwrite) if output is not None else None
    try:
        options = {"device": device, "batch_size": batch_size, "max_length": max_length, "cache_dir": cache_dir if cache else False, "rerank_depth": rerank_depth}
        systems = [build_retriever(spec, **options) for spec in specs]

        t0 = time.perf_counter()
        with console.status(f"Loading {dataset_dir} ..."):
            dataset = load_dataset(
                dataset_dir,
                split=split,
                sources=source,
                human_source=human_source,
                unknown_qrels="skip" if skip_unknown_qrels else "error",
                empty_text="skip" if skip_empty_text else "error",
                unknown_files="note" if allow_unknown_files else "error",
                twins=twins,
                orphans=orphans,
            )
        t_load = time.perf_counter() - t0
        counts = ", ".join(f"{s} {n:,}" for s, n in dataset.corpus.source_counts().items())
        console.print(f"[bold]{dataset.name}[/bold] ({dataset.layout} layout), split [bold]{split}[/bold]: {counts} documents; {len(dataset.evaluation_queries())} queries evaluated")
        for note in dataset.report.notes():
            console.print(f"[yellow]Note:[/yellow] {note}")

        loaded_runs: dict[str, Run] = {}
        for name, path in run_args:
            mapping = resolve_docnos(path, dataset.corpus, docnos=docnos, docno_pattern=docno_pattern, source_labels=labels)
            r = Run.from_trec(path, dataset.corpus, docnos=mapping, name=name, seed=seed)
            if r.name in loaded_runs or r.name in {s.name for s in systems}:
                fail(f"two systems are named '{r.name}'; name the run: --run NAME={path}")
            loaded_runs[r.name] = r
            console.print(f"[dim]{r.name}: {r.info['lines']:,} lines from {path} (documents named by {r.info['docnos']})[/dim]")

        with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
            result = run_evaluation(
                dataset,
                systems,
                runs=loaded_runs,
                measures=measures,
                depth=depth,
                seed=seed,
                sole=sole,
                exclude_self=remove_self_matches,
                keep_runs=(folder is not None and runs) or bool(chosen_statistics),
            )
        for key, info in result.run_info.items():
            if info.get("self_matches_removed"):
                console.print(f"[yellow]Note:[/yellow] {key.retriever}/{key.setting}: removed {info['self_matches_removed']} self-matches (document id = query id)")
            if info.get("queries_not_evaluated"):
                console.print(f"[yellow]Note:[/yellow] {key.retriever}: {info['queries_not_evaluated']} queries of the run are not evaluated (not in split '{split}', or without a relevant document)")
            if info.get("evaluated_queries_without_ranking"):
                console.print(f"[yellow]Note:[/yellow] {key.retriever}: {info['evaluated_queries_without_ranking']} evaluated queries have no ranking in the run (they score 0)")
        for name in result.retrievers:
            infos = [i for k, i in result.run_info.items() if k.retriever == name and "embeddings" in i]
            if infos:
                e = infos[-1]["embeddings"]
                console.print(f"[dim]{name}: {e['encoded']:,} texts encoded, {e['from_disk']:,} read from the embedding cache, {e['from_memory']:,} reused in memory[/dim]")
        with console.status("Statistics ..."):
            report = result_report(
                result, dataset.qrels, statistics=chosen_statistics, measures=statistics_measure, bootstrap_resamples=bootstrap_resamples,
                confidence=confidence, significance_resamples=resamples, correction=correction, ndsr_k=ndsr_k,
            )  # fmt: skip
        console.print(to_rich(report))
        if folder is not None:
            path = write_evaluation(result, folder, report=report, write_runs=runs, timings={"load_s": round(t_load, 3), "total_s": round(time.perf_counter() - t_start, 3)}, format=format)
            console.print(f"Wrote the results to [bold]{path}[/bold] (load them with sourcebias.load_result)")
        else:
            console.print("[dim]Add --output DIR to save the results (runs, metrics.csv, per-query values, manifest).[/dim]")
    finally:
        if folder is not None:
            folder.abort()  # no-op after a commit; otherwise releases the lock, keeps nothing half-written


def register(app: typer.Typer) -> None:
    app.command()(evaluate)
