"""``sourcebias analyze WHAT DATASET_DIR``: explain the bias — one subcommand per registered analysis
(:mod:`sourcebias.analysis.base`: twin quality, embedding spectra, perplexity, text artifacts, the
LLM-minus-human direction, lengths, the joint decomposition, the compared directions, and any
plugin's). Each subcommand's options are the analysis's own (:attr:`Analysis.params`), then the
shared ones, declared here once; what it prints is the analysis's tables and notes, rendered
through the one report every command prints."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from sourcebias.cli.common import console

if TYPE_CHECKING:
    from sourcebias.analysis.base import Analysis, Param


class AnalysisGroup(TyperGroup):
    """The ``analyze`` group, whose subcommands are made from the analysis registry the first time
    its commands are read (to list, document or run one), so that ``sourcebias`` starts without
    importing the analyses, their libraries or the plugins' modules."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._filled = False
        super().__init__(*args, **kwargs)

    @property  # type: ignore[override]  # click declares a plain attribute
    def commands(self) -> dict[str, Any]:
        if not self._filled:
            self._filled = True
            from sourcebias.analysis.base import analysis_kinds
            from sourcebias.cli.identity import identified

            for analysis in analysis_kinds().values():
                callback = identified(f"analyze {analysis.name}", command(analysis))  # extras checked, rerun identity, as every command
                info = typer.models.CommandInfo(name=analysis.name, help=analysis.help, callback=callback)
                self._commands.setdefault(analysis.name, typer.main.get_command_from_info(info, pretty_exceptions_short=False, rich_markup_mode="rich"))
        return self._commands

    @commands.setter
    def commands(self, value: dict[str, Any]) -> None:
        self._commands = value


analyze_app = typer.Typer(
    cls=AnalysisGroup,
    help="Explain the bias: quality, spectrum, perplexity, artifacts, direction. Each "
    "writes tables (CSV), summary.json, figures (PNG) and a manifest to -o OUT.",
    no_args_is_help=True,
)

Dataset = Annotated[Path, typer.Argument(help="Dataset folder (any layout evaluate reads).", show_default=False, metavar="DATASET_DIR")]
Output = Annotated[Path, typer.Option("--output", "-o", metavar="DIR", help="Folder for the analysis (checked before any work).", show_default=False)]
Overwrite = Annotated[bool, typer.Option(help="Replace the results of an earlier run in --output.")]
Device = Annotated[str | None, typer.Option(help="cpu, cuda, cuda:1 (default: cuda if available).")]
BatchSize = Annotated[int | None, typer.Option(help="Batch size of the model.", min=1)]
CacheDir = Annotated[Path | None, typer.Option(metavar="DIR", help="Embedding/perplexity store (default: $SOURCEBIAS_CACHE or ~/.cache/sourcebias).")]

#: the options of every model-backed command, in the order they end its options (before --overwrite)
MODEL_OPTIONS = {"device": Device, "batch_size": BatchSize, "cache_dir": CacheDir}


def _option(name: str, param: Param) -> inspect.Parameter:
    """An analysis option as typer reads it: a keyword parameter annotated with its ``typer.Option``."""
    option = typer.Option(*param.flags, help=param.help, metavar=param.metavar, min=param.min, max=param.max)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[param.type, option], default=param.default)


def command(analysis: Analysis) -> Callable[..., None]:
    """The subcommand of ``analysis``: DATASET_DIR, -o, the analysis's options, then the shared
    ones (--device, --batch-size and --cache-dir for a model-backed analysis; --overwrite). typer
    reads a command's options off its signature, which is built here from the registry."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    models = MODEL_OPTIONS if analysis.model else {}
    params = [
        inspect.Parameter("dataset_dir", keyword, annotation=Dataset),
        inspect.Parameter("output", keyword, annotation=Output),
        *(_option(n, p) for n, p in analysis.params.items()),
        *(inspect.Parameter(n, keyword, annotation=a, default=None) for n, a in models.items()),
        inspect.Parameter("overwrite", keyword, annotation=Overwrite, default=False),
    ]

    def run(**kwargs: Any) -> None:
        options = {n: kwargs.pop(n) for n in models}
        overwrite, dataset_dir, output = kwargs.pop("overwrite"), kwargs.pop("dataset_dir"), kwargs.pop("output")
        run_analysis(analysis, dataset_dir, output, kwargs, options, overwrite=overwrite)

    run.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    run.__name__ = run.__qualname__ = analysis.name.replace("-", "_")
    run.__doc__ = analysis.help
    return run


def run_analysis(
    analysis: Analysis, dataset_dir: Path, output: Path, params: Mapping[str, Any], options: Mapping[str, Any], *, overwrite: bool = False
) -> Path:
    """Claim ``output``, load the dataset (split ``params["split"]``), run ``analysis``, write its
    tables, summary, figures and manifest, and print its report; returns the folder."""
    from sourcebias.analysis.draw import draw
    from sourcebias.core import progress
    from sourcebias.core.artifacts import OutputFolder
    from sourcebias.core.manifest import build_manifest
    from sourcebias.data import load_dataset

    what = analysis.name
    t0 = time.perf_counter()
    folder = OutputFolder.claim(output, kind=f"analyze:{what}", overwrite=overwrite)
    try:
        with console.status(f"Loading {dataset_dir} ..."):
            ds = load_dataset(dataset_dir, split=params.get("split"))
        counts = ", ".join(f"{s} {n:,}" for s, n in ds.corpus.source_counts().items())
        console.print(f"[bold]{ds.name}[/bold]: {counts} documents")
        with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
            result = analysis.run(ds, dict(params), dict(options))
        result.save(folder.staging)
        with console.status("Drawing figures ..."):
            draw(result, folder.staging)
        result.save(folder.staging)  # again, now with the figures listed
        manifest = build_manifest(
            command=f"analyze {what}",
            inputs=_inputs(result),
            parameters=result.parameters,
            models=result.models,
            timings={"total_s": round(time.perf_counter() - t0, 3)},
        )
        path = folder.commit(manifest)
    finally:
        folder.abort()
    print_report(analysis, result)
    figures = f"{len(result.figures)} figure{'s' if len(result.figures) != 1 else ''}"
    console.print(f"Wrote {', '.join(f'{k}.csv' for k in result.tables)}, summary.json and {figures} to [bold]{path}[/bold]")
    return path


def _inputs(result: Any) -> dict[str, Any]:
    """The manifest's inputs: the dataset and its files with checksums (and an evaluate result read)."""
    from sourcebias.core.manifest import describe_file

    d = result.dataset
    files = {f"corpus:{s}": describe_file(info["file"]) for s, info in d["sources"].items()}
    files["queries"] = describe_file(d["queries_file"])
    if d.get("qrels_file"):
        files["qrels"] = describe_file(d["qrels_file"])
    if result.parameters.get("run_result"):
        rr = Path(result.parameters["run_result"]) / "result.json"
        if rr.is_file():
            files["run_result"] = describe_file(rr)
    return {"dataset": d, "files": files}


def print_report(analysis: Analysis, result: Any) -> None:
    """The analysis's tables and notes through the one report (:func:`sourcebias.report.render.to_rich`)."""
    from sourcebias.report.model import Report, Table
    from sourcebias.report.render import to_rich

    if "field" in result.parameters:
        console.print(f"  field measured: [bold]{result.parameters['field']}[/bold]")
    tables = [Table(t.key, t.title, t.columns, t.rows, t.caption) for t in analysis.tables(result)]
    console.print(to_rich(Report(f"analyze {analysis.name}", tables, notes=analysis.notes(result))))


def register(app: typer.Typer) -> None:
    app.add_typer(analyze_app, name="analyze")
