"""Write an evaluation to an output folder.

Layout::

    OUT/manifest.json          inputs (with checksums), sources, split, parameters, models,
                               package versions, timings
    OUT/metrics.csv            retriever,corpus,target,metric,value (tidy; see EvaluationResult)
    OUT/per_query.csv          retriever,corpus,target,query_id,metric,value
    OUT/significance.csv       (with significance_resamples > 0) paired tests, human vs each
                               LLM target, per retriever and measure
    OUT/summary.md, summary.tex   the printed table
    OUT/runs/<retriever>.<corpus>.trec   TREC runs (qid Q0 docno rank score tag)
    OUT/runs/docnos.tsv        docno -> doc_id, source: how to read a run's documents

In a run of the mixed corpus a document and its twin share a ``doc_id``, so the TREC
``docno`` is ``<source>/<doc_id>``; ``docnos.tsv`` lists ``docno, doc_id, source`` for every
document, so nobody has to take the name apart. The rank column is sourcebias' final order
(ties broken by the documented rule); ``trec_eval`` re-sorts equal scores by docno, so its
figures can differ from ours exactly where scores tie.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

from sourcebias.data.corpus import Corpus
from sourcebias.evaluation.results import EvaluationResult
from sourcebias.evaluation.significance import source_bias_tests
from sourcebias.core.manifest import build_manifest, write_manifest
from sourcebias.reporting.tables import latex_table, markdown_table


def slug(name: str) -> str:
    """A file-name-safe form of a retriever name (``st:/models/x`` -> ``st_models_x``)."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_.")
    return s or "run"


def docno_table(corpus: Corpus) -> dict[tuple[str, str], str]:
    """``(doc_id, source) -> docno`` for TREC files: ``<source>/<doc_id>``, whitespace replaced."""
    out: dict[tuple[str, str], str] = {}
    seen: set[str] = set()
    for d, s in zip(corpus.doc_ids, corpus.source_list()):
        name = re.sub(r"\s+", "_", f"{s}/{d}")
        if name in seen:
            raise ValueError(f"two documents map to the TREC docno '{name}'; rename a source or an id")
        seen.add(name)
        out[(d, s)] = name
    return out


def write_docnos(path: Path, table: dict[tuple[str, str], str]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(["docno", "doc_id", "source"])
        for (d, s), name in table.items():
            w.writerow([name, d, s])


def read_trec_run(path: str | Path, docnos: str | Path) -> dict[str, list[tuple[str, str, int, float]]]:
    """Read a run written by sourcebias: ``{query_id: [(doc_id, source, rank, score), ...]}``."""
    table: dict[str, tuple[str, str]] = {}
    with Path(docnos).open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            table[row["docno"]] = (row["doc_id"], row["source"])
    out: dict[str, list[tuple[str, str, int, float]]] = {}
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            q, _, docno, rank, score, _tag = line.split()
            d, s = table[docno]
            out.setdefault(q, []).append((d, s, int(rank), float(score)))
    return out


def write_evaluation(
    result: EvaluationResult,
    out: str | Path,
    *,
    write_runs: bool = True,
    significance_resamples: int = 0,
    timings: dict[str, Any] | None = None,
    command: str = "evaluate",
) -> dict[str, Path]:
    """Write metrics, per-query values, tests, tables, runs and the manifest to ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    result.write_metrics_csv(paths.setdefault("metrics", out / "metrics.csv"))
    result.write_per_query_csv(paths.setdefault("per_query", out / "per_query.csv"))
    tests = list(source_bias_tests(result, n_resamples=significance_resamples, seed=int(result.parameters.get("seed", 0)))) if significance_resamples else []
    if tests:
        p = paths.setdefault("significance", out / "significance.csv")
        with p.open("w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=list(tests[0]))
            w.writeheader()
            w.writerows(tests)
    (out / "summary.md").write_text(markdown_table(result), encoding="utf-8")
    (out / "summary.tex").write_text(latex_table(result), encoding="utf-8")
    paths["summary"] = out / "summary.md"

    run_files: dict[str, str] = {}
    if write_runs and result.runs:
        rdir = out / "runs"
        rdir.mkdir(exist_ok=True)
        docnos: dict[tuple[str, str], str] = {}
        used: dict[str, str] = {}
        for (retriever, corpus_name), run in result.runs.items():
            table = docno_table(run.corpus)
            docnos.update(table)
            base = slug(retriever)
            if used.setdefault(base, retriever) != retriever:
                base = f"{base}-{len(used)}"
                used[base] = retriever
            path = rdir / f"{base}.{slug(corpus_name)}.trec"
            run.write_trec(path, docno=table, tag=retriever)
            run_files[f"{retriever}/{corpus_name}"] = str(path.relative_to(out))
        write_docnos(rdir / "docnos.tsv", docnos)
        paths["runs"] = rdir

    from sourcebias.core.manifest import describe_file

    ds = result.dataset
    inputs = {
        "dataset": ds,
        "files": {
            **{f"corpus:{s}": describe_file(info["file"]) for s, info in ds["sources"].items()},
            "queries": describe_file(ds["queries_file"]),
            "qrels": describe_file(ds["qrels_file"]),
        },
    }
    manifest = build_manifest(
        command=command,
        inputs=inputs,
        parameters={
            **result.parameters,
            "measures": [str(m) for m in result.measures],
            "share_cutoffs": result.share_cutoffs,
            "significance": {"test": "paired randomization (scipy.stats.permutation_test) and paired t-test", "n_resamples": significance_resamples} if tests else None,
            "tie_breaking": "score desc, then splitmix64(blake2b(source, doc_id) ^ blake2b(seed, query_id)) asc (sourcebias.retrieval.ties)",
        },
        models=result.retrievers,
        timings={**(timings or {}), "per_ranking": result.timings},
        outputs={"files": {k: str(v.relative_to(out)) for k, v in paths.items()}, "runs": run_files, "run_info": result.run_info},
        extra={"queries_evaluated": len(result.query_ids)},
    )
    paths["manifest"] = write_manifest(out, manifest)
    return paths
