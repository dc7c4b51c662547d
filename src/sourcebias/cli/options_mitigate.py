"""The options of ``sourcebias train`` and ``sourcebias cdc fit``, as reusable ``Annotated``
aliases (the command functions then list parameters, not option declarations)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# -- train: evaluation -------------------------------------------------------------------------
EvalSplit = Annotated[str | None, typer.Option(metavar="SPLIT", help="Evaluate each model on this split (default: dev, else test).")]
EvalDataset = Annotated[Path | None, typer.Option(metavar="DIR", help="Evaluate on another dataset.")]
TableK = Annotated[int, typer.Option("--k", help="Cut-off of the table (NDCG@k).", min=1)]
Device = Annotated[str | None, typer.Option(help="cpu, cuda, cuda:1 (default: cuda if available).")]

# -- train ------------------------------------------------------------------------------------
TrainDataset = Annotated[
    Path, typer.Argument(help="Mixed dataset whose training qrels give (query, human document, twin) tuples.", show_default=False, metavar="DATASET_DIR")
]
SweepOutput = Annotated[
    Path,
    typer.Option("--output", "-o", metavar="DIR", help="Sweep folder: plan.jsonl, one model per α, sweep.csv. Rerunning into it resumes.", show_default=False),
]
Alphas = Annotated[
    list[float], typer.Option("--alpha", metavar="A...", help="Weights of the debiasing constraint, e.g. --alpha 0 1 10 (a sweep; 0 = no constraint).")
]
Base = Annotated[str, typer.Option(metavar="SPEC", help="Model to start from: a preset (minilm, tas-b, ...), a sentence-transformers name or a folder.")]
TrainSplit = Annotated[str, typer.Option(help="Training split.")]
Negatives = Annotated[str, typer.Option(help="Negative strategy: in-batch, hard (in-batch + BM25-mined), hard-only.")]
Positives = Annotated[
    str,
    typer.Option(
        metavar="POOL",
        help="Positive pool: both (human copy and twin, the reference), human, llm, or mix[:p] (per tuple the twin with probability p, default 0.5, seeded). "
        "A copy outside the pool is never a negative of its query; the hinge still compares both.",
    ),
]
BatchSize = Annotated[int, typer.Option(help="Tuples per batch (papers: 64).", min=2)]
Epochs = Annotated[int, typer.Option(help="Epochs (papers: 10).", min=1)]
MaxTuples = Annotated[int | None, typer.Option(help="Train on a seeded subset of this many tuples (a short budget).", min=2)]
LearningRate = Annotated[float, typer.Option(help="Learning rate (AdamW).")]
Warmup = Annotated[float, typer.Option(help="Warm-up, as a share of the steps.")]
MaxSeqLength = Annotated[int | None, typer.Option(help="Tokens per text while training (default: the model's).")]
TrainSeed = Annotated[int, typer.Option(help="Seed of the plan and of training.")]
SaveSteps = Annotated[int, typer.Option(help="Checkpoint every this many steps.", min=1)]
TrainEvaluation = Annotated[bool, typer.Option("--eval/--no-eval", help="Evaluate the base model and each trained model.")]
TrainCacheDir = Annotated[Path | None, typer.Option(metavar="DIR", help="Embedding store for the evaluations.")]
TrainOverwrite = Annotated[bool, typer.Option(help="Start again in a folder that holds another configuration's training.")]

# -- cdc fit ----------------------------------------------------------------------------------
CalibrationDataset = Annotated[Path, typer.Argument(help="Dataset folder of the calibration sample.", show_default=False, metavar="DATASET_DIR")]
Retriever = Annotated[
    str, typer.Option("--retriever", "-r", metavar="SPEC", help="The retriever to correct (any --retriever specification).", show_default=False)
]
CdcOutput = Annotated[
    Path, typer.Option("--output", "-o", metavar="DIR", help="Folder for cdc.json, the sample, the before/after evaluation and a manifest.", show_default=False)
]
Lm = Annotated[
    str,
    typer.Option(
        metavar="SPEC",
        help="Language model of the perplexities: lm:NAME (causal), mlm:NAME (masked) or mlm:from-retriever:RETRIEVER (the masked-LM head in the "
        "retriever's checkpoint), "
        "options ,max_tokens=N.",
    ),
]
Field = Annotated[str, typer.Option(metavar="text|title+text", help="Which field's perplexity: the text (the papers' code) or title and text joined.")]
CalibrationSplit = Annotated[str, typer.Option(help="Split whose relevant pairs form the calibration sample.")]
Sample = Annotated[int, typer.Option(help="Relevant (query, document) pairs in the sample (each with its twin).", min=2)]
CdcSeed = Annotated[int, typer.Option(help="Seed of the sample, of the ties and of the tests.")]
Cov = Annotated[str, typer.Option(help="Standard errors: robust, clustered (by query) or unadjusted.")]
QueryEffects = Annotated[bool, typer.Option(help="Query fixed effects (within-query differences only).")]
CdcEvalSplit = Annotated[
    str | None,
    typer.Option(
        metavar="SPLIT",
        help="Evaluate before/after on this split (default: dev of the calibration dataset, "
        "test of --eval-dataset); never the calibration split unless --in-sample.",
    ),
]
CdcEvalDataset = Annotated[Path | None, typer.Option(metavar="DIR", help="Evaluate before/after on another dataset (the transfer setting).")]
InSample = Annotated[bool, typer.Option("--in-sample", help="Evaluate on the calibration data itself (labelled in-sample: the fit has seen it).")]
Depth = Annotated[int, typer.Option(help="Candidates corrected per query.", min=1)]
BeforeAfterK = Annotated[int, typer.Option("--k", help="Cut-off of the before/after table (NDCG@k).", min=1)]
CdcEvaluation = Annotated[bool, typer.Option("--eval/--no-eval", help="Evaluate before and after the correction.")]
CdcDevice = Annotated[str | None, typer.Option(help="cpu, cuda, cuda:1.")]
ModelBatchSize = Annotated[int | None, typer.Option(help="Batch size of the models.", min=1)]
CdcCacheDir = Annotated[Path | None, typer.Option(metavar="DIR", help="Embedding/perplexity store.")]
CdcOverwrite = Annotated[bool, typer.Option(help="Replace an earlier run's results in --output.")]

# -- project fit --------------------------------------------------------------------------------
CalibrationDatasets = Annotated[
    list[Path], typer.Argument(help="Calibration dataset folders (leave the target out).", show_default=False, metavar="DATASET_DIR...")
]
ProjectionOutput = Annotated[
    Path, typer.Option("--output", "-o", metavar="DIR", help="Folder for projection.json, the evaluation and a manifest.", show_default=False)
]
ProjectedModel = Annotated[str, typer.Option(metavar="SPEC", help="The dense retriever whose document vectors are projected.")]
Pairs = Annotated[int, typer.Option(help="Twin pairs sampled per calibration dataset.", min=1)]
ProjectionSeed = Annotated[int, typer.Option(help="Seed of the samples, of the ties and of the tests.")]
ProjectionTarget = Annotated[Path | None, typer.Option(metavar="DIR", help="Evaluate before/after on this dataset.")]
ProjectionSplit = Annotated[str, typer.Option(help="Split of the evaluation.")]
EncoderBatchSize = Annotated[int | None, typer.Option(help="Batch size of the encoder.", min=1)]
EmbeddingStore = Annotated[Path | None, typer.Option(metavar="DIR", help="Embedding store.")]
