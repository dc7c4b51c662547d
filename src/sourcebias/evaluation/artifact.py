"""Writing an evaluation as an output folder (claimed before work, atomic, with a manifest).

:func:`write_result` writes the result's own files (see :mod:`.results`) and the manifest; a
``render`` callback may add rendered files (the summary tables of :mod:`sourcebias.reporting`)
into the same staging folder, so that they are listed in the manifest and appear atomically.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from sourcebias.core.artifacts import OutputFolder
from sourcebias.core.manifest import build_manifest, describe_file
from sourcebias.evaluation.results import EvaluationResult

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+; the annotations are never evaluated at run time
    from typing_extensions import Unpack

TIE_RULE = "score desc, then splitmix64(blake2b(source, doc_id) ^ blake2b(seed, query_id)) asc (sourcebias.retrieval.ties)"


def evaluation_manifest(
    result: EvaluationResult, *, timings: dict[str, Any] | None = None, command: str = "evaluate", extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The manifest of an evaluation: inputs with checksums, parameters, models, timings.

    Args:
        result: The evaluation.
        timings: Timings of the command (the per-ranking ones are the result's).
        command: The command recorded.
        extra: Further entries of the manifest.

    Returns:
        The manifest (:func:`~sourcebias.core.manifest.build_manifest`): the dataset and every input
        file with its checksum (corpora, queries, qrels, given runs), the parameters with the measures
        and the tie rule, the retrievers' configurations, the timings and the queries evaluated.
    """
    ds = result.dataset
    files: dict[str, Any] = {f"corpus:{s}": describe_file(info["file"]) for s, info in ds["sources"].items()}
    files["queries"] = describe_file(ds["queries_file"])
    if ds.get("qrels_file"):
        files["qrels"] = describe_file(ds["qrels_file"])
    for cfg in result.retrievers.values():
        f = cfg.get("file") if cfg.get("class") == "Run" else None
        if f and Path(f).is_file():
            files[f"run:{cfg.get('name')}"] = describe_file(f)
    return build_manifest(
        command=command,
        inputs={"dataset": ds, "files": files},
        parameters={**result.parameters, "measures": [str(m) for m in result.measures], "tie_breaking": TIE_RULE},
        models=result.retrievers,
        timings={**(timings or {}), "per_ranking": {f"{k.retriever}/{k.setting}": v for k, v in result.timings.items()}},
        extra={"queries_evaluated": len(result.query_ids), **(extra or {})},
    )


class WriteOptions(TypedDict, total=False):
    """How an evaluation is written.

    The keyword arguments that :func:`write_result`, :func:`write_result_into` and
    :func:`sourcebias.reporting.outputs.write_evaluation` share.

    Attributes:
        write_runs: write the runs as TREC files (default True).
        timings: timings for the manifest (seconds, by name).
        command: the command the manifest names (default ``evaluate``).
        manifest_extra: more fields for the manifest.
        format: of the per-query values, ``csv`` (``per_query.csv``, the default) or ``parquet``
            (``per_query.parquet``); :func:`~sourcebias.evaluation.results.load_result` reads either.
    """

    write_runs: bool
    timings: dict[str, Any] | None
    command: str
    manifest_extra: dict[str, Any] | None
    format: str


def _check_options(options: Mapping[str, object]) -> None:
    """A keyword the writers do not know is refused (a TypedDict checks nothing at run time)."""
    unknown = sorted(set(options) - set(WriteOptions.__annotations__))
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {', '.join(unknown)}; known: {', '.join(WriteOptions.__annotations__)}, render, overwrite")


def _write_files(result: EvaluationResult, folder: Path, render: Callable[[EvaluationResult, Path], Any] | None, options: WriteOptions) -> dict[str, Any]:
    """Write the result's files (and ``render``'s) into ``folder``; return its manifest."""
    result.save(folder, write_runs=options.get("write_runs", True), format=options.get("format", "csv"))
    if render is not None:
        render(result, folder)
    return evaluation_manifest(result, timings=options.get("timings"), command=options.get("command", "evaluate"), extra=options.get("manifest_extra"))


def write_result_into(
    result: EvaluationResult, folder: str | Path, *, render: Callable[[EvaluationResult, Path], Any] | None = None, **options: Unpack[WriteOptions]
) -> Path:
    """Write ``result`` and its manifest (with every file listed) into ``folder``.

    ``folder`` is a folder inside an output folder that is already claimed (e.g. the before/after
    evaluation of ``cdc fit``).

    Args:
        result: the evaluation.
        folder: where to write (created if need be).
        render: adds rendered files (e.g. the summary tables) to the folder before the manifest.
        **options: see :class:`WriteOptions`.

    Returns:
        ``folder``.
    """
    from sourcebias.core.artifacts import MANIFEST, list_files
    from sourcebias.core.atomic import atomic_write_json

    _check_options(options)
    folder = Path(folder)
    manifest = _write_files(result, folder, render, options)
    manifest["kind"] = "evaluate"
    manifest["outputs"] = {**(manifest.get("outputs") or {}), "files": list_files(folder)}
    atomic_write_json(folder / MANIFEST, manifest)
    return folder


def write_result(
    result: EvaluationResult,
    out: str | Path | OutputFolder,
    *,
    overwrite: bool = False,
    render: Callable[[EvaluationResult, Path], Any] | None = None,
    **options: Unpack[WriteOptions],
) -> Path:
    """Write ``result`` as an output folder and return its path.

    Args:
        result: the evaluation.
        out: a path (claimed here: refused if it holds another run's results, unless
            ``overwrite``) or an :class:`OutputFolder` claimed earlier (before any work).
        overwrite: replace the results of an earlier run at ``out``.
        render: adds rendered files (e.g. the summary tables) to the folder before the manifest.
        **options: see :class:`WriteOptions` (``format="parquet"`` for ``per_query.parquet``).

    Returns:
        The folder's path.
    """
    _check_options(options)
    folder = out if isinstance(out, OutputFolder) else OutputFolder.claim(out, kind="evaluate", overwrite=overwrite)
    try:
        return folder.commit(_write_files(result, folder.staging, render, options))
    except BaseException:
        folder.abort()
        raise
