"""``sourcebias bench``: run an experiment grid (datasets x retrievers) resumably, here or on Ray,
and write the report."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.markup import escape

from sourcebias.cli import options_bench
from sourcebias.cli.common import console, err_console


def bench(
    config: options_bench.GridConfig,
    output: options_bench.GridOutput,
    ray: options_bench.GridRay = None,
    only: options_bench.Only = None,
    overwrite: options_bench.GridOverwrite = False,
    report: options_bench.WriteReport = True,
) -> None:
    """Run every cell of an experiment grid into its own result folder, resumably.

    A finished cell is never run again; a cell whose dataset files, retriever or settings changed
    is; a failing cell is recorded with its error and the others go on. Embeddings are shared by
    all cells and reruns.

    Example:  sourcebias bench grid.toml -o out/grid   (add --ray for a local Ray cluster)
    """
    from sourcebias.experiments.config import load_grid_config
    from sourcebias.experiments.grid import plan_cells

    cfg = load_grid_config(config)
    cells = plan_cells(cfg)
    if only:
        cells = [c for c in cells if c.key in only or getattr(c, "base_key", None) in only]
    console.print(
        f"[bold]{cfg.name}[/bold]: {_n(len(cfg.datasets), 'dataset')} x {_n(len(cfg.retrievers), 'retriever')}"
        + (f" + {_n(len(cfg.runs), 'run')}" if cfg.runs else "")
        + f" = {_n(len(cells), 'cell')}"
        + (f" on Ray ({ray})" if ray else "")
    )
    t0 = time.perf_counter()
    result, seen = _run_cells(cfg, output, len(cells), ray=ray, overwrite=overwrite, only=only)
    failed = seen.get("failed", 0)
    others = len(result.records) - sum(seen.values())
    console.print(
        f"{sum(seen.values())} cells: {seen.get('ok', 0)} run, {seen.get('cached', 0)} reused, {failed} failed, in {time.perf_counter() - t0:.1f} s"
        + (f" ({others} other cells of the grid not selected by --only)" if only and others > 0 else "")
    )
    if report:
        _report(cfg, output)
    if failed:
        err_console.print(f"[yellow]{failed} cells failed[/yellow] (errors in {output}/grid.json); rerun the same command to retry them.")
        raise typer.Exit(1)


def _run_cells(cfg, output: Path, n_cells: int, **kwargs):
    """``run_grid`` with a progress bar and a line per finished cell; returns the run and what
    happened in this invocation (``grid.json`` also holds earlier runs' cells), by kind."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from sourcebias.experiments.grid import run_grid

    seen: dict[str, int] = {}
    with Progress(
        TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True
    ) as progress:
        task = progress.add_task("cells", total=n_cells)

        def on_event(kind: str, rec: dict) -> None:
            if kind == "start":
                progress.update(task, description=f"running {rec['cell']}")
                return
            seen[kind] = seen.get(kind, 0) + 1
            progress.advance(task)
            if kind == "cached":
                console.print(f"  [dim]= {rec['cell']}: finished earlier, reused[/dim]")
            elif kind == "ok":
                console.print(f"  [green]✓[/green] {rec['cell']}: {rec['seconds']:.1f} s")
            else:
                err_console.print(f"  [red]✗ {escape(rec['cell'])}: {escape(str(rec.get('error')))}[/red]", highlight=False)

        return run_grid(cfg, output, ray_address=kwargs["ray"], overwrite=kwargs["overwrite"], only=kwargs["only"], on_event=on_event), seen


def _report(cfg, output: Path) -> None:
    """The grid's statistics and report, written to OUTPUT/report and its tables printed."""
    from sourcebias.experiments.aggregate import aggregate_grid
    from sourcebias.experiments.grid_report import grid_title, rich_tables, write_grid_report

    with console.status("Statistics and report ..."):
        cells_table = aggregate_grid(cfg, output)
        paths = write_grid_report(cells_table, cfg, output)
    console.print(rich_tables(cells_table, grid_title(cfg)))  # what tables.md holds
    console.print(f"Report: [bold]{paths['html']}[/bold] (tables.md, tables.tex, cells.csv, figures/ beside it)")


def register(app: typer.Typer) -> None:
    app.command()(bench)


def _n(count: int, noun: str) -> str:
    """``1 dataset``, ``2 datasets``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
