"""The options of ``sourcebias audit`` and ``sourcebias detect``, as reusable ``Annotated`` aliases
(the command functions then list parameters, not option declarations)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

#: placeholders of the help texts, replaced by what the detector registry holds (:class:`DetectorHelp`)
EXAMPLES, USAGE = "{registered detector examples}", "{registered detector usages}"


class DetectorHelp(TyperCommand):
    """A command whose options' help names the registered detector kinds: the placeholders
    :data:`EXAMPLES` and :data:`USAGE` are written from the registry the first time the options are
    read (to parse, show or document them), so that ``sourcebias`` starts without importing the
    detectors and the plugins' modules."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._written = False
        super().__init__(*args, **kwargs)

    @property  # click declares a plain attribute; read here, it writes the help first
    def params(self) -> list[Any]:
        if not self._written:
            self._written = True
            from sourcebias.detect.base import detector_examples, detector_usage

            for p in self._params:
                if isinstance(getattr(p, "help", None), str) and (EXAMPLES in p.help or USAGE in p.help):
                    p.help = p.help.replace(EXAMPLES, detector_examples()).replace(USAGE, detector_usage())
        return self._params

    @params.setter
    def params(self, value: list[Any]) -> None:
        self._params = value


# -- audit ------------------------------------------------------------------------------------
Target = Annotated[
    Path,
    typer.Argument(
        help="An `evaluate` output folder (its mixed-corpus runs are audited) or a TREC run file (with --dataset).",
        show_default=False,
        metavar="RUN_OR_EVALUATE_FOLDER",
    ),
]
Detector = Annotated[
    str | None,
    typer.Option(
        "--detector",
        metavar="DIR[,split]|SPEC",
        help="Labelled twin dataset to train and calibrate the built-in detector on (pairs split in two: training and held-out calibration); or a "
        "zero-shot detector "
        f"({EXAMPLES}; see `sourcebias detect`) calibrated on --calibrate.",
    ),
]
Scores = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE|DIR",
        help="Your own detector's scores of the audited documents (.tsv with header doc_id, "
        "source, score; .jsonl; or a `sourcebias detect` folder); higher = more likely LLM.",
    ),
]
Calibrate = Annotated[
    str | None,
    typer.Option(metavar="DIR[,split]", help="With --scores or a zero-shot --detector: a labelled twin dataset whose pairs calibrate the scores."),
]
CalibrationScores = Annotated[Path | None, typer.Option(metavar="FILE", help="With --scores: your detector's scores of --calibrate's documents (same format).")]
RunDataset = Annotated[
    str | None,
    typer.Option(
        metavar="DIR[,split]", help="The dataset the run ranks (needed for a TREC run; for an evaluate folder the recorded path is used unless given)."
    ),
]
AuditedRuns = Annotated[
    list[str] | None, typer.Option("--retriever", "-r", metavar="NAME", help="Runs of the evaluate folder to audit (repeat). \\[default: all]")
]
AuditCutoffs = Annotated[list[int] | None, typer.Option("--k", metavar="K...", help="Cut-offs of Share@k and ΔNDSR@k. \\[default: 10]")]
DirectionModel = Annotated[str, typer.Option(help="Dense model of the built-in detector's LLM − human direction feature.")]
FeatureLm = Annotated[
    str | None,
    typer.Option(
        metavar="lm:NAME[,max_tokens=N]",
        help="Add log-perplexity under a causal LM to the built-in detector's features (slow on CPU: cap max_tokens, use --max-pairs).",
    ),
]
FeatureField = Annotated[str, typer.Option(help="Document field the features are computed on: text or title+text.")]
Normalize = Annotated[
    str,
    typer.Option(
        metavar="collection|none",
        help="Standardise each feature within its collection (training documents; a sample of the audited corpus) so that a detector "
        "trained on one collection transfers to another; assumes a share of LLM text near the training one's. 'none': raw values.",
    ),
]
ReferenceDocs = Annotated[int, typer.Option(min=10, help="Documents of the audited corpus (seeded sample) whose features set its normalisation.")]
MaxPairs = Annotated[int | None, typer.Option(min=4, help="Use a seeded sample of this many twin pairs of --detector's dataset. \\[default: all]")]
CalibrationShare = Annotated[float, typer.Option(help="Share of the twin pairs held out to calibrate the built-in detector.")]
Threshold = Annotated[
    str,
    typer.Option(
        metavar="youden|NUMBER",
        help="Score at or above which a document is labelled LLM: 'youden' (chosen on the calibration pairs: max Se + Sp − 1) or a number.",
    ),
]
AuditResamples = Annotated[int, typer.Option(min=100, help="Bootstrap resamples (queries and calibration pairs resampled jointly).")]
Level = Annotated[float, typer.Option(help="Level of the confidence intervals.")]
AuditSeed = Annotated[int, typer.Option(help="Seed of the pair split, the samples and the bootstraps.")]
MaxQueries = Annotated[int | None, typer.Option(min=1, help="Audit a seeded sample of this many queries (the same in every run). \\[default: all]")]
HumanReference = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help="Documents of the audited corpus known to be human (e.g. written before 2022): TSV with header "
        "doc_id, source (or JSONL). Sp and the transfer check's human component then come from them, in domain.",
    ),
]
CalibrationDomain = Annotated[
    str,
    typer.Option(
        metavar="auto|audited|other",
        help="Were the calibration twins drawn from the audited domain? auto: yes when at least half of their human documents are documents of the "
        "audited corpus; "
        "audited: your word (twins of a sample of the audited domain). Corrected figures calibrated on another domain are marked unreliable.",
    ),
]
CheckAlpha = Annotated[float, typer.Option(help="Level of the transfer check: below it the corrected figures are marked unreliable.")]
CheckResamples = Annotated[int, typer.Option(min=20, help="Parametric bootstrap resamples of the transfer check.")]
Strict = Annotated[
    bool,
    typer.Option(help="Exit with status 3 (after writing the results) when the corrected figures are unreliable (another domain, or a failed transfer check)."),
]
RunDocnos = Annotated[Path | None, typer.Option(metavar="FILE", help="Table docno<TAB>doc_id<TAB>source naming the documents of a TREC run.")]
RunDocnoPattern = Annotated[str | None, typer.Option(metavar="PATTERN", help="How a TREC run names documents, e.g. '{doc_id}-{source}'.")]
AuditOutput = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        metavar="DIR",
        help="Folder for the results (audit.json, audit.csv, calibration.csv, documents.csv, audit.png, manifest.json); checked before any work.",
    ),
]

# -- detect -----------------------------------------------------------------------------------
DetectDataset = Annotated[
    str,
    typer.Argument(help="Dataset folder (DIR or DIR,split) whose corpus is scored: every document of every source.", show_default=False, metavar="DATASET_DIR"),
]
ZeroShotDetector = Annotated[
    str,
    typer.Option(
        "--detector",
        metavar="SPEC",
        help=f"{USAGE}.",
    ),
]
DetectOutput = Annotated[
    Path, typer.Option("--output", "-o", metavar="DIR", help="Folder for the scores (scores.tsv, detect.json, manifest.json); checked before any work.")
]
DetectField = Annotated[str, typer.Option(help="Document field scored: text or title+text.")]
DetectMaxPairs = Annotated[
    int | None,
    typer.Option(min=1, help="Score only both copies of a seeded sample of this many twin pairs (a labelled twin corpus). \\[default: every document]"),
]
DetectSeed = Annotated[int, typer.Option(help="Seed of the pair sample.")]
DetectDevice = Annotated[str | None, typer.Option(help="Device of the models: cpu, cuda (default: cuda if available).")]
DetectBatchSize = Annotated[int | None, typer.Option(min=1, help="Texts per forward pass of the LM criteria (default 8).")]
Threads = Annotated[int | None, typer.Option(min=1, help="PyTorch CPU threads while a local model rewrites (raidar).")]
DetectCacheDir = Annotated[
    Path | None, typer.Option(metavar="DIR", help="Cache of model values and rewrites (default: $SOURCEBIAS_CACHE or ~/.cache/sourcebias).")
]
