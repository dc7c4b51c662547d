"""``sourcebias audit RUN``: source bias of a run whose documents' sources are unknown."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from sourcebias.cli import options, options_audit
from sourcebias.cli.common import console, fail

if TYPE_CHECKING:
    from sourcebias.audit import DetectorOptions, FeatureSpec


def _threshold(text: str) -> str | float:
    if text.strip().lower() == "youden":
        return "youden"
    try:
        return float(text)
    except ValueError:
        fail(f"--threshold is 'youden' or a number, got '{text}'")
        raise


def audit(
    target: options_audit.Target,
    detector: options_audit.Detector = None,
    scores: options_audit.Scores = None,
    calibrate: options_audit.Calibrate = None,
    calibration_scores: options_audit.CalibrationScores = None,
    dataset: options_audit.RunDataset = None,
    retriever: options_audit.AuditedRuns = None,
    k: options_audit.AuditCutoffs = None,
    model: options_audit.DirectionModel = "minilm",
    lm: options_audit.FeatureLm = None,
    field: options_audit.FeatureField = "text",
    normalize: options_audit.Normalize = "collection",
    reference_docs: options_audit.ReferenceDocs = 2000,
    max_pairs: options_audit.MaxPairs = None,
    calibration_share: options_audit.CalibrationShare = 0.5,
    threshold: options_audit.Threshold = "youden",
    resamples: options_audit.AuditResamples = 2000,
    level: options_audit.Level = 0.95,
    seed: options_audit.AuditSeed = 0,
    max_queries: options_audit.MaxQueries = None,
    human_reference: options_audit.HumanReference = None,
    check_alpha: options_audit.CheckAlpha = 0.05,
    check_resamples: options_audit.CheckResamples = 200,
    calibration_domain: options_audit.CalibrationDomain = "auto",
    strict: options_audit.Strict = False,
    docnos: options_audit.RunDocnos = None,
    docno_pattern: options_audit.RunDocnoPattern = None,
    output: options_audit.AuditOutput = None,
    overwrite: options.ReplaceResults = False,
) -> None:
    """Measure source bias when the sources are unknown: Share@k and ΔNDSR@k of LLM text from a
    detector's labels, naive and corrected for misclassification (Rogan–Gladen with the Se and Sp
    of a calibration on labelled twins; joint bootstrap CIs). A transfer check tests that the
    calibration fits the audited documents; where it does not, or where the calibration twins come
    from another domain, every corrected figure is marked UNRELIABLE (and --strict exits with 3). True values are shown where the corpus has labels.

    Examples:

      sourcebias audit out/nq-utd --detector data/nfcorpus -o out/nq-utd-audit

      sourcebias audit out/nq-utd --detector fast-detectgpt:lm:smollm2 --calibrate data/nfcorpus --max-pairs 200

      sourcebias audit run.trec --dataset data/mine --scores mine.tsv --calibrate data/nq-utd --calibration-scores nq.tsv
    """
    from sourcebias.audit import AuditRuns, AuditSettings, FeatureSpec
    from sourcebias.core.errors import ConfigError

    try:
        settings = AuditSettings(ks=tuple(k or (10,)), resamples=resamples, level=level, seed=seed, check_alpha=check_alpha, check_resamples=check_resamples)
        spec = FeatureSpec(model=model, lm=lm, field=field, normalize=normalize, reference_docs=reference_docs)
        detector_options = _detector_options(detector, scores, calibrate, calibration_scores, spec, calibration_share, max_pairs, _threshold(threshold), seed)
    except ConfigError as exc:
        fail(str(exc))
    runs = AuditRuns(dataset=dataset, retrievers=retriever, docnos=docnos, docno_pattern=docno_pattern, max_queries=max_queries)
    _run(target, output, detector_options, settings, runs, strict, overwrite=overwrite, human_reference=human_reference, calibration_domain=calibration_domain)


def _detector_options(
    detector: str | None,
    scores: Path | None,
    calibrate: str | None,
    calibration_scores: Path | None,
    spec: FeatureSpec,
    calibration_share: float,
    max_pairs: int | None,
    threshold: str | float,
    seed: int,
) -> DetectorOptions:
    """The detector's options, checked: ``--detector`` is a zero-shot detector's spec or the
    dataset to train the built-in one on.

    Raises:
        ConfigError: not exactly one detector, or options that do not go together.
    """
    from sourcebias.audit import DetectorOptions
    from sourcebias.detect import is_detector_spec

    zero_shot = detector if detector is not None and is_detector_spec(detector) else None
    detector_options = DetectorOptions(
        train=None if zero_shot else detector,
        zero_shot=zero_shot,
        scores=scores,
        calibrate=calibrate,
        calibration_scores=calibration_scores,
        spec=spec,
        calibration_share=calibration_share,
        max_pairs=max_pairs,
        threshold=threshold,
        seed=seed,
    )
    detector_options.check()
    return detector_options


def _run(target: Path, output: Path | None, detector_options, settings, runs, strict: bool, **kwargs) -> None:
    """Run the audit with progress bars, print the report, exit 3 under ``strict`` when the
    transfer check failed."""
    from sourcebias.audit import run_audit
    from sourcebias.audit.report import audit_report
    from sourcebias.core import progress
    from sourcebias.report.render import to_rich

    with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
        result, path = run_audit(target, output, detector=detector_options, settings=settings, runs=runs, **kwargs)
    console.print(to_rich(audit_report(result)))
    if path is not None:
        console.print(
            "Wrote audit.json, audit.csv, calibration.csv, documents.csv, summary.md, summary.tex "
            f"and audit.png to [bold]{path}[/bold] (load them with sourcebias.audit.load_audit)"
        )
    else:
        console.print("[dim]Add --output DIR to save the results and the figure.[/dim]")
    if strict and not result.reliable:
        console.print("[red]--strict: the corrected figures are unreliable (see the notes).[/red]")
        raise typer.Exit(3)


def register(app: typer.Typer) -> None:
    from sourcebias.cli.options_audit import DetectorHelp

    app.command(cls=DetectorHelp)(audit)
