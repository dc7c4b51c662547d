"""Write an evaluation to an output folder: the result's files, the summary tables, the manifest.

Layout (see :mod:`sourcebias.evaluation.results` for the result's own files)::

    OUT/manifest.json          kind, inputs (with checksums), parameters, models, versions,
                               timings, and every file written (bytes, SHA-256)
    OUT/result.json, metrics.csv, per_query.csv, significance.csv (when tests were computed)
    OUT/summary.md, summary.tex   the printed table (rendered from the result)
    OUT/runs/<retriever>.<corpus>.trec, runs/docnos.tsv

In a run of the mixed corpus a document and its twin share a ``doc_id``, so the TREC ``docno``
is ``<source>/<doc_id>``; ``docnos.tsv`` lists ``docno, doc_id, source`` for every document,
so nobody has to take the name apart. The rank column is sourcebias' final order (ties broken
by the documented rule); ``trec_eval`` re-sorts equal scores by docno, so its figures can
differ from ours exactly where scores tie.

The folder is claimed before any work (:class:`~sourcebias.core.artifacts.OutputFolder`):
misuse is refused, two writers are refused, and the folder appears complete or not at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sourcebias.core.artifacts import OutputFolder
from sourcebias.core.manifest import build_manifest, describe_file
from sourcebias.evaluation.results import EvaluationResult
from sourcebias.reporting.tables import latex_table, markdown_table

TIE_RULE = "score desc, then splitmix64(blake2b(source, doc_id) ^ blake2b(seed, query_id)) asc (sourcebias.retrieval.ties)"


def evaluation_manifest(result: EvaluationResult, *, timings: dict[str, Any] | None = None, command: str = "evaluate") -> dict[str, Any]:
    """The manifest of an evaluation: inputs with checksums, parameters, models, timings."""
    ds = result.dataset
    files: dict[str, Any] = {f"corpus:{s}": describe_file(info["file"]) for s, info in ds["sources"].items()}
    files["queries"] = describe_file(ds["queries_file"])
    files["qrels"] = describe_file(ds["qrels_file"])
    run_files = {r.get("name"): r.get("file") for r in result.retrievers.values() if r.get("class") == "Run" and r.get("file")}
    for name, f in run_files.items():
        if Path(f).is_file():
            files[f"run:{name}"] = describe_file(f)
    return build_manifest(
        command=command,
        inputs={"dataset": ds, "files": files},
        parameters={**result.parameters, "measures": [str(m) for m in result.measures], "tie_breaking": TIE_RULE},
        models=result.retrievers,
        timings={**(timings or {}), "per_ranking": {f"{k.retriever}/{k.setting}": v for k, v in result.timings.items()}},
        extra={"queries_evaluated": len(result.query_ids)},
    )


def write_evaluation_files(result: EvaluationResult, folder: str | Path, *, write_runs: bool = True) -> dict[str, Path]:
    """The result's files and the summary tables, into ``folder`` (no manifest)."""
    folder = Path(folder)
    paths = result.save(folder, write_runs=write_runs)
    from sourcebias.core.atomic import atomic_write_text

    paths["summary"] = atomic_write_text(folder / "summary.md", markdown_table(result))
    paths["summary_tex"] = atomic_write_text(folder / "summary.tex", latex_table(result))
    return paths


def write_evaluation(
    result: EvaluationResult,
    out: str | Path | OutputFolder,
    *,
    write_runs: bool = True,
    overwrite: bool = False,
    timings: dict[str, Any] | None = None,
    command: str = "evaluate",
) -> Path:
    """Write ``result`` as an output folder and return its path.

    ``out`` is a path (claimed here: refused if it holds another run's results, unless
    ``overwrite``) or an :class:`OutputFolder` claimed earlier (as the CLI does, before any work).
    """
    folder = out if isinstance(out, OutputFolder) else OutputFolder.claim(out, kind="evaluate", overwrite=overwrite)
    try:
        write_evaluation_files(result, folder.staging, write_runs=write_runs)
        return folder.commit(evaluation_manifest(result, timings=timings, command=command))
    except BaseException:
        folder.abort()
        raise
