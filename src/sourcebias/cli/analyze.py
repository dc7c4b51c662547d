"""``sourcebias analyze WHAT DATASET_DIR``: explain the bias — twin quality, embedding spectra,
perplexity, text artifacts, the LLM-minus-human direction."""

from __future__ import annotations

import functools
import inspect
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from sourcebias.cli.common import console

analyze_app = typer.Typer(
    help="Explain the bias: quality, spectrum, perplexity, artifacts, direction. Each writes tables (CSV), summary.json, figures (PNG) and a manifest to -o OUT.",
    no_args_is_help=True,
)

Dataset = Annotated[Path, typer.Argument(help="Dataset folder (any layout evaluate reads).", show_default=False, metavar="DATASET_DIR")]
Output = Annotated[Path, typer.Option("--output", "-o", metavar="DIR", help="Folder for the analysis (checked before any work).", show_default=False)]
Split = Annotated[str | None, typer.Option(help="Qrels split (needed by direction's score gaps; optional elsewhere).")]
Source = Annotated[list[str] | None, typer.Option("--source", "-s", metavar="SOURCE", help="LLM sources to compare with the human one (repeat); default all.")]
Overwrite = Annotated[bool, typer.Option(help="Replace the results of an earlier run in --output.")]
Device = Annotated[str | None, typer.Option(help="cpu, cuda, cuda:1 (default: cuda if available).")]
BatchSize = Annotated[int | None, typer.Option(help="Batch size of the model.", min=1)]
CacheDir = Annotated[Path | None, typer.Option(metavar="DIR", help="Embedding/perplexity store (default: $SOURCEBIAS_CACHE or ~/.cache/sourcebias).")]
Seed = Annotated[int, typer.Option(help="Seed of random pairs, samples and permutations.")]
Encoder = Annotated[str, typer.Option(help="Encoder: minilm, st:NAME_OR_PATH or a preset.")]
Field = Annotated[
    str,
    typer.Option(
        metavar="text|title+text", help="Which field of a document is measured: its text (the papers' code) or title and text joined (what a retriever sees)."
    ),
]


#: the options of every model-backed command, in the order they end its options (before --overwrite)
_MODEL_OPTIONS = {"device": Device, "batch_size": BatchSize, "cache_dir": CacheDir}


@dataclass(frozen=True)
class Shared:
    """What the options every analyze command ends with give it: the model options (``options=``
    of :mod:`sourcebias.analysis.runners`: device, batch_size, cache_dir; empty for a command
    without a model) and whether to replace the results of an earlier run in --output."""

    options: dict[str, Any]
    overwrite: bool


def shared_options(*, model: bool = True) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Under ``@analyze_app.command()``: the command's options end with the shared ones, declared
    here once (--device, --batch-size and --cache-dir with ``model``; --overwrite), and the command
    gets them in one :class:`Shared`, its ``shared`` parameter. typer reads a command's options off
    its signature and type hints: the wrapper's are the command's own (resolved, ``shared`` left
    out) followed by the shared ones."""
    models = _MODEL_OPTIONS if model else {}
    keyword = inspect.Parameter.KEYWORD_ONLY
    added = [
        *(inspect.Parameter(n, keyword, annotation=a, default=None) for n, a in models.items()),
        inspect.Parameter("overwrite", keyword, annotation=Overwrite, default=False),
    ]

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        hints = typing.get_type_hints(command, include_extras=True)
        own = [p.replace(annotation=hints[p.name]) for p in inspect.signature(command).parameters.values() if p.name != "shared"]

        @functools.wraps(command)
        def run(**kwargs: Any) -> None:
            shared = Shared(options={n: kwargs.pop(n) for n in models}, overwrite=kwargs.pop("overwrite"))
            command(**kwargs, shared=shared)

        params = [*own, *added]
        run.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
        return run

    return decorate


def _run(what: str, dataset_dir: Path, output: Path, overwrite: bool, split: str | None, build) -> None:
    from sourcebias.analysis.draw import draw
    from sourcebias.core import progress
    from sourcebias.core.artifacts import OutputFolder
    from sourcebias.core.manifest import build_manifest, describe_file
    from sourcebias.data import load_dataset

    t0 = time.perf_counter()
    folder = OutputFolder.claim(output, kind=f"analyze:{what}", overwrite=overwrite)
    try:
        with console.status(f"Loading {dataset_dir} ..."):
            ds = load_dataset(dataset_dir, split=split)
        counts = ", ".join(f"{s} {n:,}" for s, n in ds.corpus.source_counts().items())
        console.print(f"[bold]{ds.name}[/bold]: {counts} documents")
        with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
            result = build(ds)
        result.save(folder.staging)
        with console.status("Drawing figures ..."):
            draw(result, folder.staging)
        result.save(folder.staging)  # again, now with the figures listed
        d = result.dataset
        files = {f"corpus:{s}": describe_file(info["file"]) for s, info in d["sources"].items()}
        files["queries"] = describe_file(d["queries_file"])
        if d.get("qrels_file"):
            files["qrels"] = describe_file(d["qrels_file"])
        if result.parameters.get("run_result"):
            rr = Path(result.parameters["run_result"]) / "result.json"
            if rr.is_file():
                files["run_result"] = describe_file(rr)
        manifest = build_manifest(
            command=f"analyze {what}",
            inputs={"dataset": d, "files": files},
            parameters=result.parameters,
            models=result.models,
            timings={"total_s": round(time.perf_counter() - t0, 3)},
        )
        path = folder.commit(manifest)
    finally:
        folder.abort()
    _print_summary(result)
    console.print(
        f"Wrote {', '.join(f'{k}.csv' for k in result.tables)}, summary.json and {len(result.figures)} figure{'s' if len(result.figures) != 1 else ''} to [bold]{path}[/bold]"
    )


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _p(v) -> str:
    """A p-value; one that underflows to 0 is shown as a bound."""
    return "< 1e-300" if isinstance(v, float) and v == 0.0 else _fmt(v)


def _print_summary(result) -> None:
    s = result.summary
    if "field" in result.parameters:
        console.print(f"  field measured: [bold]{result.parameters['field']}[/bold]")
    if result.analysis in ("quality", "spectrum", "direction"):
        _print_sources(result.analysis, s)
    elif result.analysis == "perplexity":
        for src, d in s["per_source"].items():
            console.print(f"  [cyan]{src}[/cyan]: mean {_fmt(d['mean'])} (std {_fmt(d['std'])}, n {d['n']}{_left_out(d)})")
        for src, c in s["pairs"].items():
            if "mean_difference" not in c:
                console.print(f"  pairs {src} − human: {c['note']}")
                continue
            console.print(
                f"  pairs {src} − human: mean difference {_fmt(c['mean_difference'])}, d_z {_fmt(c['d_z'])}, paired t p {_p(c['paired_p'])}, Wilcoxon p {_p(c['wilcoxon_p'])}, n {c['n']}{_left_out(c)}"
            )
    elif result.analysis == "artifacts":
        _print_artifacts(result)
    elif result.analysis == "length":
        _print_length(s)
    elif result.analysis in ("decompose", "compare-directions"):
        from sourcebias.analysis import decompose, directions_compare

        for line in {"decompose": decompose, "compare-directions": directions_compare}[result.analysis].summary_lines(result):
            console.print(f"  {line}", markup=False, highlight=False)


def _print_length(s) -> None:
    for llm, units in s["pairs"].items():
        for unit, e in units.items():
            r, c = e["ratio"], e["llm_vs_human"]
            test = f"g_z {_fmt(c['g_z'])}, Wilcoxon p {_p(c['wilcoxon_p'])} (n {c['wilcoxon_n']} non-zero of {c['n']})" if "g_z" in c else c["note"]
            console.print(
                f"  [cyan]{llm}[/cyan] {unit}: mean {_fmt(c.get('mean_llm'))} vs {_fmt(c.get('mean_human'))} human; ratio median {_fmt(r['median'])} (IQR {_fmt(r['q1'])}-{_fmt(r['q3'])}{_left_out(r)}); {test}"
            )
        q = s["queries"][llm]
        for unit in ("words", "tokens"):
            if unit in q and "g_z" in q[unit]["llm_vs_human"]:
                c = q[unit]["llm_vs_human"]
                console.print(f"    per query ({q['queries']} queries) {unit}: g_z {_fmt(c['g_z'])}, Wilcoxon p {_p(c['wilcoxon_p'])} (n {c['wilcoxon_n']})")


def _left_out(entry) -> str:
    n = entry.get("left_out", 0)
    return f"; {n} without a value left out" if n else ""


def _print_sources(analysis: str, s) -> None:
    keys = {
        "quality": ("pairs", "jaccard_mean", "overlap_mean", "cosine_matched_mean", "cosine_random_mean", "words_human_mean", "words_llm_mean"),
        "spectrum": ("ratio_rank1", "head_geomean", "tail_geomean", "ranks_above_1", "ranks"),
        "direction": ("pairs", "mean_difference_norm", "consistency", "p_norm", "p_consistency"),
    }[analysis]
    for src, entry in s["sources"].items():
        console.print(f"  [cyan]{src}[/cyan]: " + ", ".join(f"{k} {_p(entry[k]) if k.startswith('p_') else _fmt(entry[k])}" for k in keys if k in entry))
        left = {k: entry[f"{k}_left_out"] for k in ("jaccard", "overlap") if entry.get(f"{k}_left_out")}
        if left:
            console.print("    left out (no analyzer terms): " + ", ".join(f"{k} {n} pairs" for k, n in left.items()))
        if "score_gap" in entry:
            g = entry["score_gap"]
            held = _fmt(g["share_along_held_out"]) if g.get("share_along_held_out") is not None else g.get("held_out_note", "undefined")
            console.print(
                f"    score gap (LLM − human) over {g['triples']} relevant pairs: mean {_fmt(g['mean_gap'])}, share along the direction {_fmt(g['share_along_in_sample'])} (held out: {held})"
            )


def _present(row, key) -> bool:
    v = row.get(key)
    return v is not None and v == v


def _print_artifacts(result) -> None:
    for row in result.tables["comparisons"].to_dict("records"):
        parts = []
        if _present(row, "independent_n_a"):  # missing (NaN) where the comparison is undefined
            parts.append(f"Hedges' g {_fmt(row['independent_hedges_g'])}")
        if _present(row, "paired_n"):
            parts.append(f"paired d_z {_fmt(row['paired_d_z'])}, paired p {_p(row['paired_paired_p'])}")
        left = row.get("independent_left_out_a", 0) + row.get("independent_left_out_b", 0)
        if left:
            parts.append(f"{left} documents without a value left out")
        note = row.get("note")
        if isinstance(note, str) and note:
            parts.append(note)
        console.print(f"  {row['feature']} ({row['llm_source']} vs human): " + ", ".join(parts))
    if "correlations" in result.tables:
        for row in result.tables["correlations"].to_dict("records"):
            console.print(
                f"  {row['feature']} vs within-query z-scores: Spearman {_fmt(row['spearman_pooled'])} (pooled), mean per query {_fmt(row['spearman_mean_per_query'])} (p {_p(row['p_per_query_ttest'])}, {row['queries']} queries)"
            )


@analyze_app.command()
@shared_options()
def quality(
    dataset_dir: Dataset,
    output: Output,
    model: Encoder = "minilm",
    source: Source = None,
    random_pairs: Annotated[int | None, typer.Option(help="Random pairs for the baseline (default: as many as twin pairs).")] = None,
    tsne_sample: Annotated[int, typer.Option(help="Documents per source in the t-SNE map.")] = 2000,
    field: Field = "text",
    seed: Seed = 0,
    split: Split = None,
    *,
    shared: Shared,
) -> None:
    """Twin quality (Dai et al., KDD 2024, §2.3): term Jaccard/overlap, lengths, matched vs random-pair cosine, t-SNE map."""
    from sourcebias.analysis import runners

    _run(
        "quality",
        dataset_dir,
        output,
        shared.overwrite,
        split,
        lambda ds: runners.quality(
            ds, model, sources=source, seed=seed, random_pairs=random_pairs, tsne_sample=tsne_sample, field=field, options=shared.options
        ),
    )


@analyze_app.command()
@shared_options()
def spectrum(
    dataset_dir: Dataset,
    output: Output,
    model: Encoder = "minilm",
    source: Source = None,
    center: Annotated[bool, typer.Option(help="Centre each matrix first (the papers do not).")] = False,
    split: Split = None,
    *,
    shared: Shared,
) -> None:
    """Singular values of each source's embeddings and the LLM/human ratio (Dai et al., KDD 2024, §4.1)."""
    from sourcebias.analysis import runners

    _run(
        "spectrum", dataset_dir, output, shared.overwrite, split, lambda ds: runners.spectrum(ds, model, sources=source, center=center, options=shared.options)
    )


@analyze_app.command()
@shared_options()
def perplexity(
    dataset_dir: Dataset,
    output: Output,
    model: Annotated[
        str,
        typer.Option(
            help="lm:NAME (causal, e.g. lm:smollm2), mlm:NAME (masked, e.g. mlm:bert-base-uncased) or mlm:from-retriever:RETRIEVER (the masked-LM head in a retriever's checkpoint, e.g. mlm:from-retriever:st:DIR; refused without one); options ,max_tokens=512."
        ),
    ] = "lm:smollm2",
    field: Field = "text",
    source: Source = None,
    split: Split = None,
    *,
    shared: Shared,
) -> None:
    """Log-perplexity of every document and the paired LLM − human difference (Dai et al., KDD 2024, §4.2)."""
    from sourcebias.analysis import runners

    _run(
        "perplexity",
        dataset_dir,
        output,
        shared.overwrite,
        split,
        lambda ds: runners.perplexity(ds, model, sources=source, field=field, options=shared.options),
    )


@analyze_app.command()
@shared_options()
def artifacts(
    dataset_dir: Dataset,
    output: Output,
    lm: Annotated[
        str | None, typer.Option(help="Language model for perplexity (lm:NAME, mlm:NAME or mlm:from-retriever:RETRIEVER); 'none' to leave it out.")
    ] = "lm:smollm2",
    run: Annotated[
        Path | None,
        typer.Option("--run", metavar="EVALUATE_DIR", help="An evaluate output folder: correlate each artifact with the retriever's within-query z-scores."),
    ] = None,
    retriever: Annotated[str | None, typer.Option(help="Which retriever of --run (when it holds several).")] = None,
    top: Annotated[int, typer.Option(help="Documents per query of the run used for the correlations.", min=3)] = 200,
    field: Field = "text",
    source: Source = None,
    split: Split = None,
    *,
    shared: Shared,
) -> None:
    """Perplexity, length and median term IDF per document: effect sizes and tests across sources,
    and their correlation with a retriever's scores (Huang et al. 2026)."""
    from sourcebias.analysis import runners

    lm_spec = None if (lm or "").lower() in ("", "none") else lm
    _run(
        "artifacts",
        dataset_dir,
        output,
        shared.overwrite,
        split,
        lambda ds: runners.artifacts(ds, lm_spec, run_result=run, retriever=retriever, top=top, sources=source, field=field, options=shared.options),
    )


@analyze_app.command()
@shared_options()
def direction(
    dataset_dir: Dataset,
    output: Output,
    model: Encoder = "minilm",
    split: Annotated[str, typer.Option(help="Qrels split whose relevant pairs give the score gaps.")] = "test",
    source: Source = None,
    permutations: Annotated[int, typer.Option(help="Sign-flip permutations.", min=0)] = 1000,
    seed: Seed = 0,
    *,
    shared: Shared,
) -> None:
    """The LLM − human embedding direction: consistency, sign-flip tests, share of score gaps along it."""
    from sourcebias.analysis import runners

    _run(
        "direction",
        dataset_dir,
        output,
        shared.overwrite,
        split,
        lambda ds: runners.direction(ds, model, sources=source, permutations=permutations, seed=seed, options=shared.options),
    )


@analyze_app.command()
@shared_options(model=False)
def length(
    dataset_dir: Dataset,
    output: Output,
    tokenizer: Annotated[
        str,
        typer.Option(
            help="Tokenizer counting model tokens: a retriever preset (minilm, bge-small, ...), smollm2, a Hugging Face name or a local folder (offline when on this machine)."
        ),
    ] = "minilm",
    tolerance: Annotated[float, typer.Option(help="Report the share of pairs whose ratio is within 1 ± this.", min=0.0)] = 0.1,
    field: Field = "text",
    source: Source = None,
    split: Annotated[str | None, typer.Option(help="Qrels split whose judged pairs give the per-query table (none: no per-query table).")] = None,
    *,
    shared: Shared,
) -> None:
    """Words and model tokens per source, per twin pair (ratio LLM / human) and per query, with g_z and Wilcoxon tests."""
    from sourcebias.analysis import length as ln

    _run("length", dataset_dir, output, shared.overwrite, split, lambda ds: ln.length(ds, tokenizer, sources=source, field=field, tolerance=tolerance))


@analyze_app.command()
@shared_options()
def decompose(
    dataset_dir: Dataset,
    output: Output,
    model: Annotated[str, typer.Option(help="Dense retriever whose score gaps are explained: minilm, st:NAME_OR_PATH or a preset.")] = "minilm",
    lm: Annotated[
        str | None,
        typer.Option(help="Language model for the Δ log-perplexity factor (lm:NAME, mlm:NAME or mlm:from-retriever:RETRIEVER; slow). Left out when not given."),
    ] = None,
    split: Annotated[str, typer.Option(help="Qrels split whose relevant pairs are regressed.")] = "test",
    confidence: Annotated[float, typer.Option(help="Level of the clustered confidence intervals.", min=0.5, max=0.999)] = 0.95,
    field: Field = "text",
    source: Source = None,
    seed: Seed = 0,
    *,
    shared: Shared,
) -> None:
    """One joint account of the twin gap: s(q, LLM) − s(q, human) regressed on Δ perplexity (--lm), Δ words, Δ median IDF and the cross-fitted direction projection, SEs clustered by query, shares of the mean gap, a held-out half."""
    from sourcebias.analysis import decompose as dc

    _run(
        "decompose",
        dataset_dir,
        output,
        shared.overwrite,
        split,
        lambda ds: dc.decompose(
            ds,
            model,
            lm=lm,
            sources=source,
            field=field,
            seed=seed,
            confidence=confidence,
            options=shared.options,
        ),
    )


@analyze_app.command("compare-directions")
@shared_options()
def compare_directions(
    dataset_dir: Dataset,
    output: Output,
    model: Encoder = "minilm",
    also: Annotated[
        list[str] | None,
        typer.Option(
            "--with", metavar="DIR[:SPLIT]", help="Another dataset for the joint sign-flip test (repeat); its qrels split after a colon (default: --split)."
        ),
    ] = None,
    split: Annotated[str, typer.Option(help="Qrels split of DATASET_DIR (the PN direction's judgements).")] = "test",
    source: Annotated[str | None, typer.Option("--source", "-s", help="The LLM source (needed when a dataset has several).")] = None,
    permutations: Annotated[int, typer.Option(help="Sign flips of each dataset's tests.", min=0)] = 1000,
    joint_permutations: Annotated[int, typer.Option(help="Sign flips of the joint test.", min=1)] = 10_000,
    unjudged_negatives: Annotated[
        int,
        typer.Option(
            help="For a query without a judged-irrelevant document: this many seeded random unjudged documents as negatives (0: leave the query out).", min=0
        ),
    ] = 0,
    seed: Seed = 0,
    *,
    shared: Shared,
) -> None:
    """LLM − human vs positive − negative directions: angle, sign-flip tests, random reference; with --with, the joint cross-dataset sign-flip test."""
    from sourcebias.analysis import directions_compare as dcmp
    from sourcebias.data import load_dataset

    def build(ds):
        others = []
        for spec in also or []:
            path, _, sp = spec.rpartition(":") if ":" in spec and "/" not in spec.rpartition(":")[2] else (spec, "", "")
            others.append(load_dataset(Path(path), split=sp or split))
        return dcmp.compare_directions(
            [ds, *others],
            model,
            source=source,
            permutations=permutations,
            joint_permutations=joint_permutations,
            unjudged_negatives=unjudged_negatives,
            seed=seed,
            options=shared.options,
        )

    _run("compare-directions", dataset_dir, output, shared.overwrite, split, build)


def register(app: typer.Typer) -> None:
    app.add_typer(analyze_app, name="analyze")
