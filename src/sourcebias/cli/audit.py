"""``sourcebias audit RUN``: source bias of a run whose documents' sources are unknown."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sourcebias.cli.common import console, fail


def _threshold(text: str) -> str | float:
    if text.strip().lower() == "youden":
        return "youden"
    try:
        return float(text)
    except ValueError:
        fail(f"--threshold is 'youden' or a number, got '{text}'")
        raise


def audit(
    target: Annotated[
        Path,
        typer.Argument(
            help="An `evaluate` output folder (its mixed-corpus runs are audited) or a TREC run file (with --dataset).",
            show_default=False,
            metavar="RUN_OR_EVALUATE_FOLDER",
        ),
    ],
    detector: Annotated[
        str | None,
        typer.Option(
            "--detector",
            metavar="DIR[,split]|SPEC",
            help="Labelled twin dataset to train and calibrate the built-in detector on (pairs split in two: training and held-out calibration); or a zero-shot detector (fast-detectgpt:lm:NAME, binoculars:lm:A+lm:B, raidar:MODEL; see `sourcebias detect`) calibrated on --calibrate.",
        ),
    ] = None,
    scores: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE|DIR",
            help="Your own detector's scores of the audited documents (.tsv with header doc_id, source, score; .jsonl; or a `sourcebias detect` folder); higher = more likely LLM.",
        ),
    ] = None,
    calibrate: Annotated[
        str | None,
        typer.Option(metavar="DIR[,split]", help="With --scores or a zero-shot --detector: a labelled twin dataset whose pairs calibrate the scores."),
    ] = None,
    calibration_scores: Annotated[
        Path | None, typer.Option(metavar="FILE", help="With --scores: your detector's scores of --calibrate's documents (same format).")
    ] = None,
    dataset: Annotated[
        str | None,
        typer.Option(
            metavar="DIR[,split]", help="The dataset the run ranks (needed for a TREC run; for an evaluate folder the recorded path is used unless given)."
        ),
    ] = None,
    retriever: Annotated[
        list[str] | None, typer.Option("--retriever", "-r", metavar="NAME", help="Runs of the evaluate folder to audit (repeat). \\[default: all]")
    ] = None,
    k: Annotated[list[int] | None, typer.Option("--k", metavar="K...", help="Cut-offs of Share@k and ΔNDSR@k. \\[default: 10]")] = None,
    model: Annotated[str, typer.Option(help="Dense model of the built-in detector's LLM − human direction feature.")] = "minilm",
    lm: Annotated[
        str | None,
        typer.Option(
            metavar="lm:NAME[,max_tokens=N]",
            help="Add log-perplexity under a causal LM to the built-in detector's features (slow on CPU: cap max_tokens, use --max-pairs).",
        ),
    ] = None,
    field: Annotated[str, typer.Option(help="Document field the features are computed on: text or title+text.")] = "text",
    normalize: Annotated[
        str,
        typer.Option(
            metavar="collection|none",
            help="Standardise each feature within its collection (training documents; a sample of the audited corpus) so that a detector trained on one collection transfers to another; assumes a share of LLM text near the training one's. 'none': raw values.",
        ),
    ] = "collection",
    reference_docs: Annotated[int, typer.Option(min=10, help="Documents of the audited corpus (seeded sample) whose features set its normalisation.")] = 2000,
    max_pairs: Annotated[int | None, typer.Option(min=4, help="Use a seeded sample of this many twin pairs of --detector's dataset. \\[default: all]")] = None,
    calibration_share: Annotated[float, typer.Option(help="Share of the twin pairs held out to calibrate the built-in detector.")] = 0.5,
    threshold: Annotated[
        str,
        typer.Option(
            metavar="youden|NUMBER",
            help="Score at or above which a document is labelled LLM: 'youden' (chosen on the calibration pairs: max Se + Sp − 1) or a number.",
        ),
    ] = "youden",
    resamples: Annotated[int, typer.Option(min=100, help="Bootstrap resamples (queries and calibration pairs resampled jointly).")] = 2000,
    level: Annotated[float, typer.Option(help="Level of the confidence intervals.")] = 0.95,
    seed: Annotated[int, typer.Option(help="Seed of the pair split, the samples and the bootstraps.")] = 0,
    max_queries: Annotated[int | None, typer.Option(min=1, help="Audit a seeded sample of this many queries (the same in every run). \\[default: all]")] = None,
    human_reference: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Documents of the audited corpus known to be human (e.g. written before 2022): TSV with header doc_id, source (or JSONL). Sp and the transfer check's human component then come from them, in domain.",
        ),
    ] = None,
    check_alpha: Annotated[float, typer.Option(help="Level of the transfer check: below it the corrected figures are marked unreliable.")] = 0.05,
    check_resamples: Annotated[int, typer.Option(min=20, help="Parametric bootstrap resamples of the transfer check.")] = 200,
    strict: Annotated[bool, typer.Option(help="Exit with status 3 (after writing the results) when the transfer check fails.")] = False,
    docnos: Annotated[Path | None, typer.Option(metavar="FILE", help="Table docno<TAB>doc_id<TAB>source naming the documents of a TREC run.")] = None,
    docno_pattern: Annotated[str | None, typer.Option(metavar="PATTERN", help="How a TREC run names documents, e.g. '{doc_id}-{source}'.")] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="DIR",
            help="Folder for the results (audit.json, audit.csv, calibration.csv, documents.csv, audit.png, manifest.json); checked before any work.",
        ),
    ] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace the results of an earlier run in --output.")] = False,
) -> None:
    """Measure source bias when the sources are unknown: Share@k and ΔNDSR@k of LLM text from a
    detector's labels, naive and corrected for misclassification (Rogan–Gladen with the Se and Sp
    of a calibration on labelled twins; joint bootstrap CIs). A transfer check tests that the
    calibration fits the audited documents; where it does not, every corrected figure is marked
    UNRELIABLE (and --strict exits with 3). True values are shown where the corpus has labels.

    Examples:

      sourcebias audit out/nq-utd --detector data/nfcorpus -o out/nq-utd-audit

      sourcebias audit out/nq-utd --detector fast-detectgpt:lm:smollm2 --calibrate data/nfcorpus --max-pairs 200

      sourcebias audit run.trec --dataset data/mine --scores mine.tsv --calibrate data/nq-utd --calibration-scores nq.tsv
    """
    from sourcebias.audit import AuditSettings, DetectorOptions, FeatureSpec
    from sourcebias.core.errors import ConfigError
    from sourcebias.detect import is_detector_spec

    try:
        settings = AuditSettings(ks=tuple(k or (10,)), resamples=resamples, level=level, seed=seed, check_alpha=check_alpha, check_resamples=check_resamples)
        zero_shot = detector if detector is not None and is_detector_spec(detector) else None
        options = DetectorOptions(train=None if zero_shot else detector, zero_shot=zero_shot, scores=scores, calibrate=calibrate, calibration_scores=calibration_scores,
                                  spec=FeatureSpec(model=model, lm=lm, field=field, normalize=normalize, reference_docs=reference_docs), calibration_share=calibration_share, max_pairs=max_pairs,
                                  threshold=_threshold(threshold), seed=seed)  # fmt: skip
        options.check()
    except ConfigError as exc:
        fail(str(exc))
    _run(
        target,
        output,
        options,
        settings,
        strict=strict,
        dataset=dataset,
        retrievers=retriever,
        docnos=docnos,
        docno_pattern=docno_pattern,
        overwrite=overwrite,
        max_queries=max_queries,
        human_reference=human_reference,
    )


def _run(target: Path, output: Path | None, options, settings, *, strict: bool, **kwargs) -> None:
    """Run the audit with progress bars, print the report, exit 3 under ``strict`` when the
    transfer check failed."""
    from sourcebias.audit import run_audit
    from sourcebias.audit.report import audit_report
    from sourcebias.core import progress
    from sourcebias.reporting.render import to_rich

    with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
        result, path = run_audit(target, output, detector=options, settings=settings, **kwargs)
    console.print(to_rich(audit_report(result)))
    if path is not None:
        console.print(
            f"Wrote audit.json, audit.csv, calibration.csv, documents.csv, summary.md, summary.tex and audit.png to [bold]{path}[/bold] (load them with sourcebias.audit.load_audit)"
        )
    else:
        console.print("[dim]Add --output DIR to save the results and the figure.[/dim]")
    if strict and not result.reliable:
        console.print("[red]--strict: the transfer check failed; the corrected figures are unreliable.[/red]")
        raise typer.Exit(3)


def register(app: typer.Typer) -> None:
    app.command()(audit)
