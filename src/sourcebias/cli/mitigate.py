"""Mitigations on the command line: ``sourcebias cdc fit`` (causal correction at inference) and
``sourcebias project fit`` (remove the LLM-minus-human direction); ``sourcebias train`` is in
:mod:`sourcebias.cli.train`. Each prints a before/after table and writes a folder with the fit,
its evaluation and a manifest."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from sourcebias.cli.common import console, fail

cdc_app = typer.Typer(help="Causal Diagnosis and Correction (CDC): fit β̂₂ by 2SLS, then --retriever 'SPEC>>cdc:OUT/cdc.json'.", no_args_is_help=True)
project_app = typer.Typer(help="Projection debiasing: fit the LLM − human direction, then --retriever 'SPEC:project=OUT/projection.json'.", no_args_is_help=True)


def before_after(result, names: list[str], measure: str) -> None:
    """The before/after table: per system, the measure on all targets, per target, Relative Δ,
    and on the human-only corpus (percent)."""
    from rich.table import Table

    from sourcebias.evaluation.results import ALL, MIXED, Key

    human = result.human_source
    other = result.other_sources[0] if result.other_sources else None
    t = Table(title=f"{result.dataset.get('name')} ({result.dataset.get('split')}), {measure}", caption="percent; Rel Δ > 0: human-written ranked higher, < 0: LLM-generated ranked higher")
    for c in ("system", "all", "human", "LLM", "Rel Δ", "human only"):
        t.add_column(c, justify="left" if c == "system" else "right")

    def pct(key):
        return f"{result.mean(*key) * 100:.1f}" if Key(*key) in result.per_query else "–"

    for n in names:
        delta = result.relative_delta(n, measure, other) if other else float("nan")
        color = "red" if delta < 0 else "green"
        t.add_row(n, pct((n, MIXED, ALL, measure)), pct((n, MIXED, human, measure)), pct((n, MIXED, other, measure)) if other else "–", f"[{color}]{delta:.1f}[/{color}]", pct((n, human, human, measure)))
    console.print(t)


def _evaluate_before_after(dataset, systems, measures, folder, command, extra):
    from sourcebias.core import progress
    from sourcebias.evaluation import evaluate
    from sourcebias.evaluation.artifact import write_result_into
    from sourcebias.reporting.outputs import write_summaries

    with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
        result = evaluate(dataset, systems, measures=measures, significance_resamples=10_000)
    write_result_into(result, folder, command=command, manifest_extra=extra, render=write_summaries)
    return result


@cdc_app.command("fit")
def cdc_fit(
    dataset_dir: Annotated[Path, typer.Argument(help="Dataset folder of the calibration sample.", show_default=False, metavar="DATASET_DIR")],
    retriever: Annotated[str, typer.Option("--retriever", "-r", metavar="SPEC", help="The retriever to correct (any --retriever specification).", show_default=False)],
    output: Annotated[Path, typer.Option("--output", "-o", metavar="DIR", help="Folder for cdc.json, the sample, the before/after evaluation and a manifest.", show_default=False)],
    lm: Annotated[str, typer.Option(metavar="SPEC", help="Language model of the perplexities: lm:NAME (causal) or mlm:NAME (masked), options ,max_tokens=N.")] = "lm:smollm2",
    split: Annotated[str, typer.Option(help="Split whose relevant pairs form the calibration sample.")] = "dev",
    sample: Annotated[int, typer.Option(help="Relevant (query, document) pairs in the sample (each with its twin).", min=2)] = 128,
    seed: Annotated[int, typer.Option(help="Seed of the sample.")] = 42,
    cov: Annotated[str, typer.Option(help="Standard errors: robust, clustered (by query) or unadjusted.")] = "robust",
    query_effects: Annotated[bool, typer.Option(help="Query fixed effects (within-query differences only).")] = False,
    eval_split: Annotated[str | None, typer.Option(metavar="SPLIT", help="Evaluate before/after on this split (default: --split).")] = None,
    eval_dataset: Annotated[Path | None, typer.Option(metavar="DIR", help="Evaluate before/after on another dataset (the transfer setting).")] = None,
    depth: Annotated[int, typer.Option(help="Candidates corrected per query.", min=1)] = 100,
    k: Annotated[int, typer.Option("--k", help="Cut-off of the before/after table (NDCG@k).", min=1)] = 3,
    evaluation: Annotated[bool, typer.Option("--eval/--no-eval", help="Evaluate before and after the correction.")] = True,
    device: Annotated[str | None, typer.Option(help="cpu, cuda, cuda:1.")] = None,
    batch_size: Annotated[int | None, typer.Option(help="Batch size of the models.", min=1)] = None,
    cache_dir: Annotated[Path | None, typer.Option(metavar="DIR", help="Embedding/perplexity store.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an earlier run's results in --output.")] = False,
) -> None:
    """Fit CDC's β̂₂: 2SLS of the retriever's score on document log-perplexity, the source as instrument.

    Writes OUT/cdc.json; then evaluate with --retriever "SPEC>>cdc:OUT/cdc.json" (on any dataset: the fit transfers).
    """
    import pandas as pd

    from sourcebias.analysis.perplexity import build_lm_scorer
    from sourcebias.core.artifacts import OutputFolder
    from sourcebias.core.manifest import build_manifest
    from sourcebias.data import load_dataset
    from sourcebias.evaluation.measures import measure_grid
    from sourcebias.evaluation.protocol import json_safe
    from sourcebias.mitigation.cdc import CDCFit, calibration_sample, fit_iv, pair_scores
    from sourcebias.models.embedding_store import Embedder
    from sourcebias.retrieval import build_retriever

    t0 = time.perf_counter()
    folder = OutputFolder.claim(output, kind="cdc", overwrite=overwrite)
    try:
        # the data first: a typo in a folder stops here, before any model loads
        ds = load_dataset(dataset_dir, split=split)
        target = load_dataset(eval_dataset or dataset_dir, split=eval_split or split) if evaluation else None
        options = {"device": device, "batch_size": batch_size, "cache_dir": cache_dir}
        system = build_retriever(retriever, **options)
        scorer = build_lm_scorer(lm, batch_size=batch_size, device=device, cache_dir=cache_dir)
        llm = ds.other_sources[0] if len(ds.other_sources) == 1 else fail(f"{ds.name} has several LLM sources; keep one with a dataset of two sources")
        pairs = calibration_sample(ds, sample, seed=seed, llm_source=llm)
        corpus = ds.corpus
        wanted: dict[str, list[int]] = {}
        for p in pairs:
            wanted.setdefault(p.query_id, []).extend([corpus.position(p.doc_id, ds.human_source), corpus.position(p.doc_id, llm)])
        console.print(f"Calibration: {len(pairs)} relevant pairs of {ds.name} ({split}), seed {seed}, each with its twin")
        from sourcebias.core import progress

        with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
            scores = pair_scores(system, corpus, ds.queries, wanted, seed=0)
            positions = sorted({pos for v in wanted.values() for pos in v})
            texts = corpus.retrieval_texts()
            values = Embedder(scorer, cache_dir=cache_dir, batch_size=scorer.batch_size, name=f"{lm}: perplexity").embed([texts[i] for i in positions], "document")[:, 1]
        ppl = dict(zip(positions, values.astype(float).tolist()))
        rows = []
        for p in pairs:
            for src in (ds.human_source, llm):
                pos = corpus.position(p.doc_id, src)
                if (p.query_id, pos) in scores:
                    rows.append({"query_id": p.query_id, "doc_id": p.doc_id, "source": src, "is_llm": int(src == llm), "score": scores[(p.query_id, pos)], "perplexity": ppl[pos]})
        table = pd.DataFrame(rows)
        complete = table.groupby(["query_id", "doc_id"])["source"].transform("count") == 2
        dropped = int((~complete).sum())
        table = table[complete]
        if len(table) < 4:
            fail(f"the retriever scored too few calibration documents ({len(table)}); is it a re-ranker with a small depth?")
        est = fit_iv(table["score"], table["perplexity"], table["is_llm"], table["query_id"], cov_type=cov, query_effects=query_effects)
        fit = CDCFit(
            **est,
            n_pairs=len(table) // 2,
            lm=lm,
            retriever=retriever,
            dataset=ds.name,
            split=split,
            llm_source=llm,
            sample_size=sample,
            seed=seed,
            details={"pairs_dropped_unscored": dropped, "lm_config": json_safe(scorer.config()), "retriever_config": json_safe(system.config())},
        )
        fit.save(folder.staging / "cdc.json")
        table.to_csv(folder.staging / "sample.csv", index=False, lineterminator="\n")
        console.print(f"[bold]{fit.summary()}[/bold]")
        if dropped:
            console.print(f"[yellow]Note:[/yellow] {dropped} documents of the sample were not scored by the retriever (below its depth); their pairs were left out")
        if target is not None:
            from sourcebias.mitigation.stages import CDCCorrection
            from sourcebias.retrieval import Pipeline

            stage = CDCCorrection(fit.beta, lm, depth=depth, name="cdc", fit_path=str(Path(output) / "cdc.json"), batch_size=batch_size, device=device, cache_dir=cache_dir)
            after = Pipeline(build_retriever(retriever, **options), [stage], name=f"{retriever}>>cdc")
            result = _evaluate_before_after(target, [system, after], measure_grid(["NDCG", "MAP", "Share"], [1, 3, 5, 10]), folder.staging / "evaluation", "cdc fit", {"cdc": fit.to_dict()})
            before_after(result, [system.name, after.name], f"NDCG@{k}")
        manifest = build_manifest(command="cdc fit", inputs={"dataset": json_safe(ds.describe())}, parameters={"retriever": retriever, "lm": lm, "split": split, "sample": sample, "seed": seed, "cov": cov, "query_effects": query_effects, "depth": depth, "eval_dataset": str(eval_dataset or dataset_dir), "eval_split": eval_split or split}, models={"retriever": json_safe(system.config()), "lm": json_safe(scorer.config())}, timings={"total_s": round(time.perf_counter() - t0, 3)})
        path = folder.commit(manifest)
        console.print(f"Wrote cdc.json, sample.csv{' and the before/after evaluation' if evaluation else ''} to [bold]{path}[/bold]; use --retriever \"{retriever}>>cdc:{path / 'cdc.json'}\"")
    finally:
        folder.abort()


@project_app.command("fit")
def project_fit(
    calibration: Annotated[list[Path], typer.Argument(help="Calibration dataset folders (leave the target out).", show_default=False, metavar="DATASET_DIR...")],
    output: Annotated[Path, typer.Option("--output", "-o", metavar="DIR", help="Folder for projection.json, the evaluation and a manifest.", show_default=False)],
    model: Annotated[str, typer.Option(metavar="SPEC", help="The dense retriever whose document vectors are projected.")] = "minilm",
    pairs: Annotated[int, typer.Option(help="Twin pairs sampled per calibration dataset.", min=1)] = 100,
    seed: Annotated[int, typer.Option(help="Seed of the samples.")] = 42,
    target: Annotated[Path | None, typer.Option(metavar="DIR", help="Evaluate before/after on this dataset.")] = None,
    split: Annotated[str, typer.Option(help="Split of the evaluation.")] = "test",
    k: Annotated[int, typer.Option("--k", help="Cut-off of the before/after table (NDCG@k).", min=1)] = 3,
    device: Annotated[str | None, typer.Option(help="cpu, cuda, cuda:1.")] = None,
    batch_size: Annotated[int | None, typer.Option(help="Batch size of the encoder.", min=1)] = None,
    cache_dir: Annotated[Path | None, typer.Option(metavar="DIR", help="Embedding store.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an earlier run's results in --output.")] = False,
) -> None:
    """Fit the LLM − human direction on calibration datasets (seeded pairs per dataset).

    Then evaluate with --retriever "MODEL:project=OUT/projection.json" (document vectors only; queries unchanged).
    """
    from sourcebias.core.artifacts import OutputFolder
    from sourcebias.core.manifest import build_manifest
    from sourcebias.data import load_dataset
    from sourcebias.evaluation.measures import measure_grid
    from sourcebias.evaluation.protocol import json_safe
    from sourcebias.mitigation.projection import fit_direction
    from sourcebias.retrieval import build_retriever

    t0 = time.perf_counter()
    folder = OutputFolder.claim(output, kind="projection", overwrite=overwrite)
    try:
        if target is not None and any(Path(c).resolve() == Path(target).resolve() for c in calibration):
            fail(f"the target {target} is among the calibration datasets: leave it out (the direction must come from other data)")
        # the data first: a typo in a folder stops here, before any model loads
        cal = [load_dataset(c, split=None) for c in calibration]
        ds = load_dataset(target, split=split) if target is not None else None
        options = {"device": device, "batch_size": batch_size, "cache_dir": cache_dir}
        system = build_retriever(model, **options)
        proj = fit_direction(system, cal, pairs_per_dataset=pairs, seed=seed)
        proj.save(folder.staging / "projection.json")
        console.print(f"Direction from {proj.details['pairs']} twin pairs of {', '.join(proj.details['calibration'])}: ‖mean difference‖ {proj.details['mean_difference_norm']:.4f}")
        if ds is not None:
            after = build_retriever(model, **options)
            proj.source = str(Path(output) / "projection.json")
            after.doc_transform = proj
            after.name = f"{model}+projection"
            result = _evaluate_before_after(ds, [system, after], measure_grid(["NDCG", "MAP", "Share"], [1, 3, 5, 10]), folder.staging / "evaluation", "project fit", {"projection": proj.to_dict() | {"direction": None}})
            before_after(result, [system.name, after.name], f"NDCG@{k}")
        manifest = build_manifest(command="project fit", inputs={"calibration": [str(c) for c in calibration], "target": str(target) if target else None}, parameters={"model": model, "pairs": pairs, "seed": seed, "split": split}, models={"retriever": json_safe(system.config())}, timings={"total_s": round(time.perf_counter() - t0, 3)})
        path = folder.commit(manifest)
        console.print(f"Wrote projection.json to [bold]{path}[/bold]; use --retriever \"{model}{':' if ':' not in model else ','}project={path / 'projection.json'}\"")
    finally:
        folder.abort()


def register(app: typer.Typer) -> None:
    app.add_typer(cdc_app, name="cdc")
    app.add_typer(project_app, name="project")
