"""Mitigations on the command line: ``sourcebias cdc fit`` (causal correction at inference) and
``sourcebias project fit`` (remove the LLM-minus-human direction); ``sourcebias train`` is in
:mod:`sourcebias.cli.train`. Each prints a before/after table and writes a folder with the fit,
its evaluation and a manifest."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer

from sourcebias.cli import options_mitigate
from sourcebias.cli.common import console, fail

cdc_app = typer.Typer(help="Causal Diagnosis and Correction (CDC): fit β̂₂ by 2SLS, then --retriever 'SPEC>>cdc:OUT/cdc.json'.", no_args_is_help=True)
project_app = typer.Typer(
    help="Projection debiasing: fit the LLM − human direction, then --retriever 'SPEC:project=OUT/projection.json'.", no_args_is_help=True
)


def _write_and_print(result, names: list[str], measure: str, label: str, folder, command, extra) -> None:
    """Write the before/after evaluation with its summary (the before/after table, the papers'
    table and the paired tests: :func:`sourcebias.mitigation.before_after.before_after_report`)
    and print that same report."""
    from sourcebias.mitigation.before_after import before_after_report
    from sourcebias.report.render import to_rich
    from sourcebias.study.outputs import write_summaries

    report = before_after_report(result, names, measure, label)
    result.save(folder, nested=True, command=command, manifest_extra=extra, render=lambda res, out: write_summaries(res, out, report))
    console.print(to_rich(report))


def _evaluate(target, systems, seed):
    from sourcebias.core import progress
    from sourcebias.mitigation.before_after import evaluate_before_after

    with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
        return evaluate_before_after(target, systems, seed=seed)


@cdc_app.command("fit")
def cdc_fit(
    dataset_dir: options_mitigate.CalibrationDataset,
    retriever: options_mitigate.Retriever,
    output: options_mitigate.CdcOutput,
    lm: options_mitigate.Lm = "lm:smollm2",
    field: options_mitigate.Field = "text",
    split: options_mitigate.CalibrationSplit = "train",
    sample: options_mitigate.Sample = 128,
    seed: options_mitigate.CdcSeed = 42,
    cov: options_mitigate.Cov = "robust",
    query_effects: options_mitigate.QueryEffects = False,
    eval_split: options_mitigate.CdcEvalSplit = None,
    eval_dataset: options_mitigate.CdcEvalDataset = None,
    in_sample: options_mitigate.InSample = False,
    depth: options_mitigate.Depth = 100,
    k: options_mitigate.BeforeAfterK = 3,
    evaluation: options_mitigate.CdcEvaluation = True,
    device: options_mitigate.CdcDevice = None,
    batch_size: options_mitigate.ModelBatchSize = None,
    cache_dir: options_mitigate.CdcCacheDir = None,
    overwrite: options_mitigate.CdcOverwrite = False,
) -> None:
    """Fit CDC's β̂₂: 2SLS of the retriever's score on document log-perplexity, the source as instrument.

    Writes OUT/cdc.json; then evaluate with --retriever "SPEC>>cdc:OUT/cdc.json" (on any dataset: the fit transfers).
    """
    from sourcebias.analysis.perplexity import check_field
    from sourcebias.core.artifacts import OutputFolder
    from sourcebias.mitigation.before_after import evaluation_target

    t0 = time.perf_counter()
    check_field(field)  # both refuse before any folder or model: a ConfigError ends the command with its message
    where = evaluation_target(dataset_dir, split, eval_dataset=eval_dataset, eval_split=eval_split, in_sample=in_sample) if evaluation else None
    folder = OutputFolder.claim(output, kind="cdc", overwrite=overwrite)
    try:
        options = {"device": device, "batch_size": batch_size, "cache_dir": cache_dir}
        ds, target, system, scorer, llm = _cdc_inputs(dataset_dir, split, where, retriever, lm, field, options)
        console.print(f"Calibration: {sample} relevant pairs of {ds.name} ({split}), seed {seed}, each with its twin; perplexity of the {field}")
        cal = _calibrate(ds, system, scorer, llm, retriever, lm, sample, seed, cov, query_effects, cache_dir)
        cal.save(folder.staging, where.to_dict() if where is not None else None)
        _print_fit(cal)
        if target is not None:
            stage = _cdc_stage(lm, field, depth, output, batch_size, device, cache_dir)
            _cdc_before_after(cal.fit, where, target, system, retriever, options, stage, folder.staging / "evaluation", seed, k)
        parameters = _cdc_parameters(retriever, lm, field, split, sample, seed, cov, query_effects, depth, where)
        path = folder.commit(_cdc_manifest(ds, system, scorer, parameters, t0))
        console.print(
            f"Wrote cdc.json, sample.csv{' and the before/after evaluation' if evaluation else ''} to [bold]{path}[/bold]; use --retriever "
            f'"{retriever}>>cdc:{path / "cdc.json"}"'
        )
    finally:
        folder.abort()


def _cdc_inputs(dataset_dir: Path, split: str, where, retriever: str, lm: str, field: str, options: dict):
    """The calibration dataset, the evaluation target (None without ``where``), the retriever, the
    LM scorer and the one LLM source; the data first: a typo in a folder stops here, before any
    model loads."""
    from sourcebias.analysis.perplexity import build_lm_scorer
    from sourcebias.data import load_dataset
    from sourcebias.retrieval import build_retriever

    ds = load_dataset(dataset_dir, split=split)
    target = load_dataset(where.dataset, split=where.split) if where is not None else None
    system = build_retriever(retriever, **options)
    scorer = build_lm_scorer(lm, batch_size=options["batch_size"], device=options["device"], cache_dir=options["cache_dir"], field=field)
    llm = ds.other_sources[0] if len(ds.other_sources) == 1 else fail(f"{ds.name} has several LLM sources; keep one with a dataset of two sources")
    return ds, target, system, scorer, llm


def _calibrate(ds, system, scorer, llm: str, retriever: str, lm: str, sample: int, seed: int, cov: str, query_effects: bool, cache_dir: Path | None):
    """:func:`sourcebias.mitigation.cdc.calibrate` with progress bars: ``sample`` relevant pairs
    with their ``llm`` twins, the fit with covariance ``cov``."""
    from sourcebias.core import progress
    from sourcebias.mitigation.cdc import calibrate

    with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
        return calibrate(
            ds,
            system,
            scorer,
            sample=sample,
            seed=seed,
            llm_source=llm,
            cov_type=cov,
            query_effects=query_effects,
            cache_dir=cache_dir,
            lm=lm,
            retriever_spec=retriever,
        )


def _cdc_stage(lm: str, field: str, depth: int, output: Path, batch_size: int | None, device: str | None, cache_dir: Path | None) -> dict:
    """The options of the CDC correction stage of the before/after evaluation (the fit read from ``output``)."""
    return {
        "lm": lm,
        "field": field,
        "depth": depth,
        "fit_path": str(Path(output) / "cdc.json"),
        "batch_size": batch_size,
        "device": device,
        "cache_dir": cache_dir,
    }


def _cdc_parameters(retriever: str, lm: str, field: str, split: str, sample: int, seed: int, cov: str, query_effects: bool, depth: int, where: Any) -> dict:
    """The parameters of a ``cdc fit`` run, as its manifest records them."""
    return {
        "retriever": retriever,
        "lm": lm,
        "field": field,
        "split": split,
        "sample": sample,
        "seed": seed,
        "cov": cov,
        "query_effects": query_effects,
        "depth": depth,
        "evaluation": where.to_dict() if where else None,
    }


def _print_fit(cal) -> None:
    """The fit's summary line and, when the retriever left documents of the sample unscored, a note."""
    console.print(f"[bold]{cal.fit.summary()}[/bold]")
    if cal.dropped:
        console.print(
            f"[yellow]Note:[/yellow] {cal.dropped} documents of the sample were not scored by the retriever (below its depth); their pairs were left out"
        )


def _cdc_manifest(ds, system, scorer, parameters: dict, t0: float) -> dict:
    """The manifest of a ``cdc fit`` run (timed from ``t0``)."""
    from sourcebias.core.manifest import build_manifest
    from sourcebias.evaluation.protocol import json_safe

    return build_manifest(
        command="cdc fit",
        inputs={"dataset": json_safe(ds.describe())},
        parameters=parameters,
        models={"retriever": json_safe(system.config()), "lm": json_safe(scorer.config())},
        timings={"total_s": round(time.perf_counter() - t0, 3)},
    )


def _cdc_before_after(fit, where, target, system, retriever: str, options: dict, stage: dict, folder: Path, seed: int, k: int) -> None:
    """Evaluate the retriever before and after the CDC correction (``stage``: its options) on the
    evaluation target, write the evaluation into ``folder`` and print the before/after table."""
    from sourcebias.mitigation.stages import CDCCorrection
    from sourcebias.retrieval import Pipeline, build_retriever

    correction = CDCCorrection(fit.beta, stage.pop("lm"), name="cdc", **stage)
    after = Pipeline(build_retriever(retriever, **options), [correction], name=f"{retriever}>>cdc")
    result = _evaluate(target, [system, after], seed)
    _write_and_print(result, [system.name, after.name], f"NDCG@{k}", where.label, folder, "cdc fit", {"cdc": fit.to_dict(), "evaluation": where.to_dict()})


@project_app.command("fit")
def project_fit(
    calibration: options_mitigate.CalibrationDatasets,
    output: options_mitigate.ProjectionOutput,
    model: options_mitigate.ProjectedModel = "minilm",
    pairs: options_mitigate.Pairs = 100,
    seed: options_mitigate.ProjectionSeed = 42,
    target: options_mitigate.ProjectionTarget = None,
    split: options_mitigate.ProjectionSplit = "test",
    k: options_mitigate.BeforeAfterK = 3,
    device: options_mitigate.CdcDevice = None,
    batch_size: options_mitigate.EncoderBatchSize = None,
    cache_dir: options_mitigate.EmbeddingStore = None,
    overwrite: options_mitigate.CdcOverwrite = False,
) -> None:
    """Fit the LLM − human direction on calibration datasets (seeded pairs per dataset).

    Then evaluate with --retriever "MODEL:project=OUT/projection.json" (document vectors only; queries unchanged).
    """
    from sourcebias.core.artifacts import OutputFolder
    from sourcebias.data import load_dataset
    from sourcebias.mitigation.before_after import check_distinct_corpora, projection_target
    from sourcebias.mitigation.projection import fit_direction, projected
    from sourcebias.retrieval import build_retriever

    t0 = time.perf_counter()
    where = projection_target(calibration, target, split) if target is not None else None  # refuses the target among the calibration data
    folder = OutputFolder.claim(output, kind="projection", overwrite=overwrite)
    try:
        # the data first: a typo in a folder stops here, before any model loads
        cal = [load_dataset(c, split=None) for c in calibration]
        ds = load_dataset(target, split=split) if target is not None else None
        if ds is not None:
            check_distinct_corpora(cal, ds)
        options = {"device": device, "batch_size": batch_size, "cache_dir": cache_dir}
        system = build_retriever(model, **options)
        proj = fit_direction(system, cal, pairs_per_dataset=pairs, seed=seed)
        proj.save(folder.staging / "projection.json")
        console.print(
            f"Direction from {proj.details['pairs']} twin pairs of {', '.join(proj.details['calibration'])}: "
            f"‖mean difference‖ {proj.details['mean_difference_norm']:.4f}"
        )
        if ds is not None and where is not None:  # both or neither: a --target was given
            after = projected(build_retriever(model, **options), proj, source=str(Path(output) / "projection.json"), name=f"{model}+projection")
            result = _evaluate(ds, [system, after], seed)
            extra = {"projection": proj.to_dict() | {"direction": None}, "evaluation": where.to_dict()}
            _write_and_print(result, [system.name, after.name], f"NDCG@{k}", where.label, folder.staging / "evaluation", "project fit", extra)
        parameters = {"model": model, "pairs": pairs, "seed": seed, "split": split, "evaluation": where.to_dict() if where else None}
        path = folder.commit(_projection_manifest(calibration, target, parameters, system, t0))
        console.print(
            f'Wrote projection.json to [bold]{path}[/bold]; use --retriever "{model}{":" if ":" not in model else ","}project={path / "projection.json"}"'
        )
    finally:
        folder.abort()


def _projection_manifest(calibration: list[Path], target: Path | None, parameters: dict, system: Any, t0: float) -> dict:
    """The manifest of a ``project fit`` run (timed from ``t0``)."""
    from sourcebias.core.manifest import build_manifest
    from sourcebias.evaluation.protocol import json_safe

    return build_manifest(
        command="project fit",
        inputs={"calibration": [str(c) for c in calibration], "target": str(target) if target else None},
        parameters=parameters,
        models={"retriever": json_safe(system.config())},
        timings={"total_s": round(time.perf_counter() - t0, 3)},
    )


def register(app: typer.Typer) -> None:
    app.add_typer(cdc_app, name="cdc")
    app.add_typer(project_app, name="project")
