"""The options of ``sourcebias power``, as reusable ``Annotated`` aliases (the command function then
lists parameters, not option declarations)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

Pilot = Annotated[
    Path,
    typer.Argument(
        help="An `evaluate` output folder, a grid cell (DIR/cells/<dataset>/<retriever>), or a "
        "`judge` output folder (its twin bias): the pilot whose per-query values are resampled.",
        show_default=False,
        metavar="PILOT",
    ),
]
Alpha = Annotated[float, typer.Option(help="Level of the tests.")]
Power = Annotated[float, typer.Option("--power", help="Target power.")]
StudySizes = Annotated[
    list[int] | None,
    typer.Option("--n", metavar="N...", help="Study sizes (queries) for the minimum detectable effects, e.g. --n 50 100 200. \\[default: 50 100 200 500 1000]"),
]
Effects = Annotated[
    list[str] | None,
    typer.Option(
        "--effect",
        metavar="STAT=VALUE...",
        help="Target effects for the power and the n needed: rel_delta=10 (percent), difference=0.05 (human − LLM), twin=0.55 (share "
        "of pairs, LLM copy first), ndsr=0.02; any --statistics name or alias of evaluate. \\[default: each pilot's own estimate]",
    ),
]
PowerStatistics = Annotated[
    list[str] | None,
    typer.Option(
        "--statistic",
        metavar="NAME",
        help="Statistics to analyse (repeat), as evaluate's --statistics names them: relative_delta_ci "
        "(rel_delta), paired_tests (difference), twin_preference (twin), delta_ndsr (ndsr). \\[default: all]",
    ),
]
PowerMeasures = Annotated[
    list[str] | None,
    typer.Option(
        "--measure", "-m", metavar="MEASURE", help="Measures of Relative Δ and the difference (repeat), e.g. NDCG@3. \\[default: every NDCG@k of the pilot]"
    ),
]
PilotRetrievers = Annotated[
    list[str] | None, typer.Option("--retriever", "-r", metavar="NAME", help="Retrievers of the pilot to analyse (repeat). \\[default: all]")
]
PowerResamples = Annotated[int, typer.Option(help="Simulated studies per study size (resampling method).", min=100)]
PowerSeed = Annotated[int, typer.Option(help="Seed of the resampling.")]
MaxN = Annotated[int, typer.Option(help="Largest number of queries searched for the n needed.", min=2)]
PowerNdsrK = Annotated[int, typer.Option(help="Cut-off of ΔNDSR@k.", min=1)]
PowerCorrection = Annotated[
    str,
    typer.Option(
        metavar="holm|fdr_bh|bonferroni|none",
        help="The correction evaluate applies to the paired tests across the report (evaluate's --correction): the power of * is that of the corrected test.",
    ),
]
PilotDataset = Annotated[
    Path | None,
    typer.Option(
        metavar="DIR",
        help="The pilot's dataset folder, for the judgements twin preference needs (default: "
        "the path the pilot recorded; its qrels are checked against the pilot's manifest).",
    ),
]
PowerOutput = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        metavar="DIR",
        help="Folder for the results (power.json, power.csv, pilots.csv, curves.csv, "
        "summary.md, summary.tex, power_curves.png, manifest.json); checked before any work.",
    ),
]
