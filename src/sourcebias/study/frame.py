"""Write a study's output folder: its result, its report's summaries, its figure, its manifest.

Every study (the judge, the citation study, the audit) ends the same way: a folder claimed before
any work (:class:`~sourcebias.core.artifacts.OutputFolder`) receives the result's own files, the
report as ``summary.md`` and ``summary.tex``, the figure, and a manifest that records the inputs,
parameters, models and time; the folder is then committed whole. :func:`write_study` is that end,
once; what differs between studies is data (:class:`Study`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sourcebias.report.model import Report

if TYPE_CHECKING:
    from sourcebias.core.artifacts import OutputFolder

__all__ = ["SavesItself", "Study", "write_study", "write_summaries"]


class SavesItself(Protocol):
    """A study's result: it writes its own files into a folder."""

    def save(self, folder: Path) -> Any:
        """Write the result's own files into ``folder``."""


def write_summaries(report: Report, folder: str | Path, *, csv: bool = False) -> dict[str, Path]:
    """Write ``report`` as ``summary.md`` and ``summary.tex`` into ``folder``.

    Args:
        report: The report (:class:`~sourcebias.report.model.Report`).
        folder: Where to write.
        csv: Also write each data frame of the report as ``<name>.csv``
            (:func:`~sourcebias.report.render.to_csv`).

    Returns:
        What was written, by name (``summary``, ``summary_tex``, and with ``csv`` the report's data).
    """
    from sourcebias.core.atomic import atomic_write_text
    from sourcebias.report.render import to_csv, to_latex, to_markdown

    folder = Path(folder)
    out = {
        "summary": atomic_write_text(folder / "summary.md", to_markdown(report)),
        "summary_tex": atomic_write_text(folder / "summary.tex", to_latex(report)),
    }
    return out | to_csv(report, folder) if csv else out


@dataclass
class Study:
    """What a study writes into its folder besides the result's own files.

    Attributes:
        report: The study's report, rendered into ``summary.md`` and ``summary.tex``.
        figure: Draws the figure into a path (``None``: no figure).
        figure_file: The figure's file name in the folder.
        inputs: The manifest's ``inputs`` (datasets, runs, score files).
        parameters: The manifest's ``parameters`` (every setting that changes a number).
        models: The manifest's ``models`` (the identity of each model asked).
        extra: Further top-level entries of the manifest.
    """

    report: Report
    figure: Callable[[Path], Any] | None = None
    figure_file: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] | None = None


def write_study(folder: OutputFolder, result: SavesItself, study: Study, *, seconds: float) -> Path:
    """Write ``result`` and ``study`` into a claimed output folder and commit it.

    Args:
        folder: An :class:`~sourcebias.core.artifacts.OutputFolder` claimed before any work.
        result: The study's result (its ``save(folder)`` writes its files).
        study: Its report, figure and manifest entries.
        seconds: The study's running time (the manifest's ``timings_s.total_s``).

    Returns:
        The folder's final path.
    """
    from sourcebias.core.manifest import build_manifest

    result.save(folder.staging)
    write_summaries(study.report, folder.staging)
    if study.figure is not None:
        study.figure(folder.staging / study.figure_file)
    manifest = build_manifest(
        command=folder.kind,
        inputs=study.inputs,
        parameters=study.parameters,
        models=study.models,
        timings={"total_s": round(seconds, 3)},
        extra=study.extra,
    )
    return folder.commit(manifest)
