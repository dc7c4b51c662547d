"""An evaluation as an output folder: claimed before work, atomic, with a manifest.

:func:`save_folder` is what :meth:`EvaluationResult.save` does, the one write path of a result: it
claims the folder (or takes one claimed earlier), writes the result's own files (see
:mod:`.result_io`), lets a ``render`` callback add rendered files (the summary tables of
:mod:`sourcebias.study.outputs`) into the same staging folder, so that they are listed in the manifest
and appear atomically, and commits. ``write_result`` and ``write_result_into``, the two wrappers
that did this before, remain for one release with a ``DeprecationWarning``.

The model imports this module (its ``save`` calls it), so, as in :mod:`.result_io`, a result is
typed ``Any`` here: an :class:`~sourcebias.evaluation.results.EvaluationResult`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sourcebias.core.artifacts import OutputFolder
from sourcebias.core.manifest import build_manifest, describe_file
from sourcebias.evaluation.result_io import WriteOptions, save_result

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+; the annotations are never evaluated at run time
    from typing_extensions import Unpack

__all__ = ["TIE_RULE", "WriteOptions", "evaluation_manifest", "save_folder", "write_result", "write_result_into"]

TIE_RULE = "score desc, then splitmix64(blake2b(source, doc_id) ^ blake2b(seed, query_id)) asc (sourcebias.retrieval.ties)"

Render = Callable[[Any, Path], Any]


def evaluation_manifest(
    result: Any, *, timings: dict[str, Any] | None = None, command: str = "evaluate", extra: dict[str, Any] | None = None
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


def _check_options(options: Mapping[str, object]) -> None:
    """A keyword the writer does not know is refused (a TypedDict checks nothing at run time)."""
    unknown = sorted(set(options) - set(WriteOptions.__annotations__))
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {', '.join(unknown)}; known: {', '.join(WriteOptions.__annotations__)}, render, overwrite, nested")


def _write_files(result: Any, folder: Path, render: Render | None, options: WriteOptions) -> dict[str, Any]:
    """Write the result's files (and ``render``'s) into ``folder``; return its manifest."""
    save_result(result, folder, write_runs=options.get("write_runs", True), format=options.get("format", "csv"))
    if render is not None:
        render(result, folder)
    return evaluation_manifest(result, timings=options.get("timings"), command=options.get("command", "evaluate"), extra=options.get("manifest_extra"))


def save_folder(
    result: Any,
    out: str | Path | OutputFolder,
    *,
    overwrite: bool = False,
    nested: bool = False,
    render: Render | None = None,
    **options: Unpack[WriteOptions],
) -> Path:
    """Write ``result`` as an output folder: what :meth:`EvaluationResult.save` does.

    Its arguments, what it returns and what it raises are :meth:`EvaluationResult.save`'s.
    """
    _check_options(options)
    if nested:
        if isinstance(out, OutputFolder):
            raise TypeError("nested=True takes a path inside an output folder claimed earlier, not an OutputFolder")
        return _save_nested(result, Path(out), render, options)
    folder = out if isinstance(out, OutputFolder) else OutputFolder.claim(out, kind="evaluate", overwrite=overwrite)
    try:
        return folder.commit(_write_files(result, folder.staging, render, options))
    except BaseException:
        folder.abort()
        raise


def _save_nested(result: Any, folder: Path, render: Render | None, options: WriteOptions) -> Path:
    """Write into ``folder``, part of an output folder claimed earlier, with its own manifest."""
    from sourcebias.core.artifacts import MANIFEST, list_files
    from sourcebias.core.atomic import atomic_write_json

    manifest = _write_files(result, folder, render, options)
    manifest["kind"] = "evaluate"
    manifest["outputs"] = {**(manifest.get("outputs") or {}), "files": list_files(folder)}
    atomic_write_json(folder / MANIFEST, manifest)
    return folder


def write_result(result: Any, out: str | Path | OutputFolder, **kwargs: Any) -> Path:
    """Deprecated: :meth:`EvaluationResult.save` (the same arguments); goes in the next release."""
    warnings.warn("write_result(result, out, ...) is result.save(out, ...); the old name goes in the next release", DeprecationWarning, stacklevel=2)
    return save_folder(result, out, **kwargs)


def write_result_into(result: Any, folder: str | Path, **kwargs: Any) -> Path:
    """Deprecated: :meth:`EvaluationResult.save` with ``nested=True``; goes in the next release."""
    warnings.warn(
        "write_result_into(result, folder, ...) is result.save(folder, nested=True, ...); the old name goes in the next release",
        DeprecationWarning,
        stacklevel=2,
    )
    return save_folder(result, folder, nested=True, **kwargs)
