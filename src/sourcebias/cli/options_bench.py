"""The options of ``sourcebias bench`` (an experiment grid) and ``sourcebias simulate`` (a feedback
loop), as reusable ``Annotated`` aliases (the command functions then list parameters, not option
declarations)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# -- bench ------------------------------------------------------------------------------------
GridConfig = Annotated[
    Path,
    typer.Argument(
        help=r"Grid configuration (TOML): [\[datasets]], [\[retrievers]], optional [\[runs]], \[grid] settings, \[options].",
        show_default=False,
        metavar="CONFIG",
    ),
]
GridOutput = Annotated[
    Path,
    typer.Option(
        "--output",
        "-o",
        metavar="DIR",
        help="Grid folder: one result folder per cell, grid.json, the report. Rerunning into it resumes.",
        show_default=False,
    ),
]
GridRay = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="[ADDRESS]",
        help="Run cells as Ray tasks: --ray alone starts a local cluster; --ray ADDRESS joins one (e.g. ray://head:10001 or auto).",
    ),
]
Only = Annotated[list[str] | None, typer.Option("--only", metavar="DATASET/SYSTEM", help="Run only these cells (repeat).")]
GridOverwrite = Annotated[bool, typer.Option(help="Replace a folder that holds another grid's results.")]
WriteReport = Annotated[bool, typer.Option("--report/--no-report", help="Write the report (tables, figures, HTML) after the cells.")]

# -- simulate ---------------------------------------------------------------------------------
SimulationConfig = Annotated[
    Path,
    typer.Argument(
        help=r"Simulation configuration (TOML): \[simulation], \[dataset], [\[retrievers]], \[generator], optional \[intervention].",
        show_default=False,
        metavar="CONFIG",
    ),
]
SimulationOutput = Annotated[
    Path,
    typer.Option(
        "--output",
        "-o",
        metavar="DIR",
        help="Simulation folder: a folder per retriever and round, the report. Rerunning into it resumes; more rounds continue it.",
        show_default=False,
    ),
]
SimulationOverwrite = Annotated[bool, typer.Option(help="Replace a folder of another simulation, or rounds made with other settings.")]
SimulationRay = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="ADDRESS",
        help="Run each retriever's loop as a Ray task: local starts a cluster here; an address (auto, "
        "head:6379) joins one. The folder, config and dataset must be on storage every node sees.",
    ),
]
