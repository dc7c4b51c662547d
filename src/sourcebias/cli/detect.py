"""``sourcebias detect CORPUS --detector SPEC -o DIR``: score every document with a zero-shot detector."""

from __future__ import annotations

import typer

from sourcebias.cli import options, options_audit
from sourcebias.cli.common import console


def detect(
    dataset: options_audit.DetectDataset,
    detector: options_audit.ZeroShotDetector,
    output: options_audit.DetectOutput,
    field: options_audit.DetectField = "text",
    max_pairs: options_audit.DetectMaxPairs = None,
    seed: options_audit.DetectSeed = 0,
    device: options_audit.DetectDevice = None,
    batch_size: options_audit.DetectBatchSize = None,
    threads: options_audit.Threads = None,
    cache_dir: options_audit.DetectCacheDir = None,
    overwrite: options.ReplaceResults = False,
) -> None:
    """Score every document of a corpus with a zero-shot detector of LLM text (higher: more
    likely LLM-written; raw scores, calibrated by `sourcebias audit`).

    The model values (LM criteria) and rewrites (raidar) are cached as they are made: an
    interrupted run loses at most the batch in flight, and a rerun computes only what is missing.
    Where the corpus carries source labels, detect.json adds the AUROC against them (never used
    by the detector). Read the folder back with sourcebias.detect.load_detection, or pass it to
    `sourcebias audit --scores`.

    Examples:

      sourcebias detect data/nq-utd --detector fast-detectgpt:lm:smollm2,max_tokens=64 -o out/nq-fdg

      sourcebias detect data/mine --detector raidar:smollm2,max_words=64 -o out/mine-raidar
    """
    from sourcebias.core import progress
    from sourcebias.detect import run_detect

    with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
        result, path = run_detect(
            dataset,
            detector,
            output,
            field=field,
            max_pairs=max_pairs,
            seed=seed,
            overwrite=overwrite,
            cache_dir=cache_dir,
            device=device,
            batch_size=batch_size,
            threads=threads,
        )
    s = result.summary
    console.print(f"Scored {s['scored']:,} of {s['documents']:,} documents with {result.detector['spec']} ({result.detector['score']}).")
    if s.get("not_scored_note"):
        console.print(f"[yellow]Note:[/yellow] {s['not_scored_note']}")
    lab = s.get("labelled") or {}
    if lab.get("auroc") is not None:
        per = ", ".join(f"{k}: {v:.3f}" for k, v in lab.get("per_source", {}).items())
        console.print(f"AUROC against the corpus's source labels (never read by the detector): {lab['auroc']:.3f} ({per})")
    console.print(f"Wrote scores.tsv and detect.json to [bold]{path}[/bold] (load them with sourcebias.detect.load_detection)")


def register(app: typer.Typer) -> None:
    from sourcebias.cli.options_audit import DetectorHelp

    app.command(cls=DetectorHelp)(detect)
