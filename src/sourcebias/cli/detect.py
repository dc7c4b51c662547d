"""``sourcebias detect CORPUS --detector SPEC -o DIR``: score every document with a zero-shot detector."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sourcebias.cli.common import console


def detect(
    dataset: Annotated[
        str,
        typer.Argument(
            help="Dataset folder (DIR or DIR,split) whose corpus is scored: every document of every source.", show_default=False, metavar="DATASET_DIR"
        ),
    ],
    detector: Annotated[
        str,
        typer.Option(
            "--detector",
            metavar="SPEC",
            help="fast-detectgpt:lm:NAME[,max_tokens=N], binoculars:lm:PERFORMER+lm:OBSERVER, raidar:MODEL[,base_url=URL,max_words=N].",
        ),
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", metavar="DIR", help="Folder for the scores (scores.tsv, detect.json, manifest.json); checked before any work.")
    ],
    field: Annotated[str, typer.Option(help="Document field scored: text or title+text.")] = "text",
    max_pairs: Annotated[
        int | None,
        typer.Option(min=1, help="Score only both copies of a seeded sample of this many twin pairs (a labelled twin corpus). \\[default: every document]"),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the pair sample.")] = 0,
    device: Annotated[str | None, typer.Option(help="Device of the models: cpu, cuda (default: cuda if available).")] = None,
    batch_size: Annotated[int | None, typer.Option(min=1, help="Texts per forward pass of the LM criteria (default 8).")] = None,
    threads: Annotated[int | None, typer.Option(min=1, help="PyTorch CPU threads while a local model rewrites (raidar).")] = None,
    cache_dir: Annotated[
        Path | None, typer.Option(metavar="DIR", help="Cache of model values and rewrites (default: $SOURCEBIAS_CACHE or ~/.cache/sourcebias).")
    ] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace the results of an earlier run in --output.")] = False,
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
    app.command()(detect)
