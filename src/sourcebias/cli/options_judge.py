"""The options of ``sourcebias judge``, as reusable ``Annotated`` aliases."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

JudgeDataset = Annotated[
    str,
    typer.Argument(
        help="Dataset (DIR, DIR,split or a known name such as nq-utd; split test by default) whose judged documents and their twins are graded.",
        show_default=False,
        metavar="DATASET",
    ),
]
JudgeSpec = Annotated[
    str,
    typer.Option(
        "--judge",
        metavar="SPEC",
        help="The judge: smollm2, gemma3, a GGUF file, a transformers folder or name, or "
        "openai:MODEL@http://HOST:PORT/v1 (any OpenAI-compatible server; several @URL).",
    ),
]
JudgeOutput = Annotated[
    Path,
    typer.Option(
        "--output", "-o", metavar="DIR", help="Folder for the results (judge.json, grades.tsv, qrels/, dataset/, summary, figure); checked before any work."
    ),
]
JudgeModes = Annotated[
    list[str] | None,
    typer.Option(
        "--mode",
        metavar="MODE",
        help="grade (UMBRELA 0-3 per copy), disclosure (graded again, told the author is a human / an AI), "
        "pairwise (which copy is more relevant, both orders); repeat for several. \\[default: grade]",
    ),
]
JudgePrompt = Annotated[
    str,
    typer.Option(
        metavar="NAME|FILE",
        help="The grade prompt: umbrela (UMBRELA's zero-shot prompt verbatim, '##final score: N'); digit (the same asking for the grade alone, whose "
        "first-token probabilities give the expected grade: for small models); or a prompt file (.toml) asking for a 0-3 grade (see `sourcebias prompts`).",
    ),
]
JudgePairPrompt = Annotated[
    str, typer.Option(metavar="NAME|FILE", help="The pairwise mode's prompt: pairwise (A or B), or a prompt file (.toml) asking for a pick.")
]
JudgeRetrievers = Annotated[
    list[str] | None,
    typer.Option(
        "--retriever",
        "-r",
        metavar="[LABEL=]SPEC",
        help="A retriever whose mixed-corpus ranking is evaluated with the assessors' and the judge's qrels (and, with "
        "--top-k, whose top documents are graded too); repeat for several. LABEL= names it in the tables (as in evaluate).",
    ),
]
JudgeRuns = Annotated[
    list[Path] | None, typer.Option("--run", metavar="FILE", help="A TREC run of the mixed corpus, used like a --retriever; repeat for several.")
]
JudgeTopK = Annotated[int, typer.Option(min=0, help="Also grade the top K documents of each run (both copies of each).")]
JudgeMaxQueries = Annotated[int | None, typer.Option(min=1, help="Judge a seeded sample of this many queries. \\[default: every judged query]")]
JudgeMaxDocs = Annotated[
    int | None,
    typer.Option(
        min=1,
        help=(
            "Grade a seeded sample of this many judged documents of each query (every copy of each;"
            " the protocol's assessors' qrels are restricted to them). \\[default: every judged document]"
        ),
    ),
]
JudgeMeasure = Annotated[str, typer.Option(help="The measure of Relative Δ and of the system orderings under each qrels.")]
JudgeMaxTokens = Annotated[int, typer.Option(min=1, help="Tokens a pointwise answer may take (UMBRELA's '##final score: N' needs about 8).")]
JudgeTopLogprobs = Annotated[int, typer.Option(min=0, max=20, help="Top log-probabilities asked per generated token (0: none); they give the expected grade.")]
JudgeSeed = Annotated[int, typer.Option(help="Seed of the calls, of the query sample, of the bootstrap and of the randomization tests.")]
JudgeResamples = Annotated[int, typer.Option(min=100, help="Bootstrap resamples of queries.")]
JudgeConcurrency = Annotated[int | None, typer.Option(min=1, help="Requests in flight against servers (default 4 per server).")]
JudgeDevice = Annotated[str | None, typer.Option(help="Device of a local judge model: cpu, cuda (default: cuda if available).")]
JudgeCacheDir = Annotated[
    Path | None, typer.Option(metavar="DIR", help="Where answers are stored (default: $SOURCEBIAS_CACHE or ~/.cache/sourcebias); a rerun reads them back.")
]
