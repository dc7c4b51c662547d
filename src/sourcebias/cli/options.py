"""Command-line options as reusable ``Annotated`` types: one declaration (flag, metavar, help) per
option, so that commands sharing an option declare it the same way and their functions stay short."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sourcebias.experiments.settings import option_kwargs

# -- the dataset and how it is loaded ------------------------------------------------------------------
DatasetArg = Annotated[
    str,
    typer.Argument(
        help="Dataset: a folder (corpus/<source>.jsonl (Cocktail), corpus-human.jsonl + <T>/corpus-<llm>.jsonl (KDD), or corpus.jsonl (BEIR); "
        "with queries.jsonl and qrels/<split>.tsv, .gz too), a known dataset's name (nq-utd ships with sourcebias; `sourcebias datasets`), or irds:<id>.",
        show_default=False,
        metavar="DATASET",
    ),
]
Split = Annotated[str, typer.Option(help="Which qrels/<split>.tsv to evaluate on.")]
Sources = Annotated[list[str] | None, typer.Option("--source", "-s", metavar="SOURCE", help="Sources to include (repeat); default all.")]
HumanSource = Annotated[str, typer.Option(help="Name of the human-written (original) source.")]
Twins = Annotated[
    Path | None,
    typer.Option(
        help="With DATASET irds:<id> (the human side through ir_datasets, e.g. irds:beir/nfcorpus/test): "
        "the folder of the LLM twins (<source>.jsonl files, or a Cocktail folder).",
        metavar="DIR",
    ),
]
SkipUnknownQrels = Annotated[bool, typer.Option(help="Skip (and count) judgements naming unknown documents or queries instead of stopping.")]
SkipEmptyText = Annotated[bool, typer.Option(help="Skip (and count) documents with empty text instead of stopping.")]
AllowUnknownFiles = Annotated[
    bool,
    typer.Option(help="Go on (with a note) when the corpus folder holds a file that is not a source (<source>.jsonl or .jsonl.gz); by default that stops."),
]
Orphans = Annotated[str, typer.Option(**option_kwargs("orphans"))]  # help, choices and bounds: the grid setting's one declaration

# -- systems ----------------------------------------------------------------------------------------
Retrievers = Annotated[
    list[str] | None,
    typer.Option(
        "--retriever",
        "-r",
        metavar="[LABEL=]SPEC",
        help="Retriever to evaluate; repeat for several. bm25, tfidf, bm25:k1=0.9,b=0.4, st:NAME_OR_PATH, presets (minilm, tas-b, ...), pipelines "
        "'bm25>>cut:20>>lm:smollm2'. See `sourcebias retrievers`. LABEL= names it in the tables and files (as --run NAME=FILE names a run; "
        "unlabelled, a spec is named without its servers' @URLs); the full spec is in the notes and result.json. Default: bm25 (when no --run is given).",
    ),
]
Runs = Annotated[
    list[str] | None,
    typer.Option(
        "--run",
        metavar="[NAME=]FILE",
        help="A TREC run of the mixed corpus made by any system (qid Q0 docno rank score tag); repeat "
        "for several. Scored with the same protocol; equal scores are ordered by the tie rule.",
    ),
]
Docnos = Annotated[
    Path | None,
    typer.Option(
        help="Table docno<TAB>doc_id<TAB>source naming the documents of --run files "
        "(default: docnos.tsv beside the run if present, else names <source>/<doc_id>).",
        metavar="FILE",
    ),
]
DocnoPattern = Annotated[
    str | None, typer.Option(help="How --run files name documents, e.g. '{doc_id}-{source}' (Cocktail's suffix); see --source-label.", metavar="PATTERN")
]
SourceLabels = Annotated[
    list[str] | None,
    typer.Option(
        "--source-label",
        metavar="SOURCE=LABEL",
        help="How --docno-pattern writes a source when not by its name, e.g. llama-2-7b-chat-tmp0.2=llama; repeat per source.",
    ),
]
Device = Annotated[str | None, typer.Option(help="Device for neural models: cpu, cuda, cuda:1 (default: cuda if available).")]
BatchSize = Annotated[int | None, typer.Option(help="Batch size for neural models (default: each kind's, 32).", min=1)]
MaxLength = Annotated[
    int | None,
    typer.Option(help="Maximum tokens per text for neural models (default: the model's, 512 for the papers' presets). A stage's own max_length= wins."),
]
CacheDir = Annotated[Path | None, typer.Option(help="Embedding cache folder (default: $SOURCEBIAS_CACHE or ~/.cache/sourcebias).", metavar="DIR")]
UseCache = Annotated[
    bool, typer.Option("--cache/--no-cache", help="Keep document and query embeddings on disk, keyed by model and text, for reuse by later runs.")
]
RerankDepth = Annotated[int | None, typer.Option(help="How many first-stage documents a re-ranker re-scores (default 100). A stage's own depth= wins.", min=1)]

# -- the protocol -------------------------------------------------------------------------------------
Cutoffs = Annotated[list[int] | None, typer.Option("--k", metavar="K...", help="Cut-offs, e.g. --k 1 3 5. \\[default: 1 3 5 10]")]
Metrics = Annotated[
    list[str] | None,
    typer.Option(
        "--metric",
        metavar="NAME...",
        help="Measures, e.g. --metric NDCG MAP (every measure of the registry; listed by --help).",
    ),
]


def describe_measures() -> None:
    """Write the measure registry's names into the help of ``--metric`` (plugins' measures too).

    Called when help is shown (``--help``, the CLI reference): the registry imports numpy and the
    plugins, which a command that does not need them should not wait for.
    """
    from sourcebias.evaluation.measures import DEFAULT_MEASURES, measure_kinds

    kinds = measure_kinds()
    labels = [k for k, v in kinds.items() if v.scope == "target"]
    free = [k for k, v in kinds.items() if v.scope != "target"]
    Metrics.__metadata__[0].help = (  # type: ignore[attr-defined]  # the OptionInfo of the Annotated alias
        f"Measures, e.g. --metric NDCG MAP: {', '.join(labels)} (need labels) and {', '.join(free)} (label-free: each source's share of the top k; "
        f"NDSR discounted by rank). \\[default: {' '.join(DEFAULT_MEASURES)}]"
    )


Depth = Annotated[int, typer.Option(**option_kwargs("depth"))]
Seed = Annotated[int, typer.Option(**option_kwargs("seed"))]
Sole = Annotated[bool, typer.Option("--sole/--no-sole", help="Also rank each source alone (human-only, LLM-only settings).")]
MaxQueries = Annotated[
    int | None,
    typer.Option(
        min=1, help="Evaluate a seeded sample (--seed) of this many of the split's queries; their ids go into result.json and the manifest. \\[default: all]"
    ),
]
RemoveSelfMatches = Annotated[bool, typer.Option(help="Leave out documents whose id equals the query id (BEIR ArguAna/Quora quirk).")]

# -- output --------------------------------------------------------------------------------------------
Output = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        metavar="DIR",
        help="Folder for the results (result.json, metrics.csv, per-query values, runs, summary, manifest.json); checked before any work.",
    ),
]
Overwrite = Annotated[bool, typer.Option(help="Replace the results of an earlier run in --output (never files sourcebias did not write).")]
WriteRuns = Annotated[bool, typer.Option("--runs/--no-runs", help="Write the TREC runs to OUTPUT/runs.")]
DrawFigure = Annotated[
    bool,
    typer.Option(
        "--figure/--no-figure",
        help="Draw OUTPUT/figures/source_bias.png (matplotlib's import and drawing: about 0.5 s and 20 MB a run); "
        "without it OUTPUT/figures/not-drawn.txt says so and how to draw it later from the folder.",
    ),
]
Format = Annotated[
    str,
    typer.Option(
        "--format",
        metavar="csv|parquet",
        help="File format of the per-query values in OUTPUT: per_query.csv or per_query.parquet (pyarrow; columnar, fast to load). load_result reads either.",
    ),
]

# -- statistics ----------------------------------------------------------------------------------------
Resamples = Annotated[int, typer.Option(**option_kwargs("significance_resamples"))]
Statistics = Annotated[
    list[str] | None,
    typer.Option(
        "--statistics",
        metavar="NAME...",
        help="Statistics to show and write (summary.md, summary.tex, statistics.csv), repeated or comma-separated: relative_delta_ci, paired_tests, "
        "twin_preference, delta_ndsr, means, or none. \\[default: the first four]",
    ),
]
StatisticsMeasures = Annotated[
    list[str] | None,
    typer.Option(
        "--statistics-measure",
        metavar="MEASURE...",
        help="Measures of the per-measure statistics, e.g. NDCG@3. \\[default: every cut-off of the first measure with labels]",
    ),
]
BootstrapResamples = Annotated[int, typer.Option(**option_kwargs("bootstrap_resamples"))]
Confidence = Annotated[float, typer.Option(**option_kwargs("confidence"))]
Correction = Annotated[str, typer.Option(**option_kwargs("correction"))]
NdsrK = Annotated[int, typer.Option("--ndsr-k", **option_kwargs("ndsr_k"))]
ReplaceResults = Annotated[bool, typer.Option(help="Replace the results of an earlier run in --output.")]  # audit, detect, power
# judge, cite: a server request's time-out
ServerTimeout = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        min=1,
        help="Seconds a server request may take, waiting included (default 300). llama-cpp-python's server answers one request at a time: "
        "with long prompts raise it or lower --concurrency, or the requests waiting behind time out, are sent again and wait behind "
        "the ones abandoned (the server still computes them): the job can give up (a rerun sends only what was not answered).",
    ),
]
