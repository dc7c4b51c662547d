"""``sourcebias cite`` as a library call: claim the output folder, read the ranking (an
``evaluate`` folder's mixed run, a TREC run, or a retriever run now), ask the generator, write
the folder (:func:`run_cite`).

The folder is claimed before any work and written at the end in one commit; the answers are
stored as they arrive in the generator client's answer store, so a killed run loses at most the
calls in flight and the rerun (same command) sends only the rest.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sourcebias.citations.result import KIND, CitationResult
from sourcebias.citations.study import CiteSettings, cite_run
from sourcebias.core.errors import ConfigError
from sourcebias.data.dataset import require_twins

#: what needs the twins, as a refusal names it
STUDY = "a citation study (which of the passages shown a generator cites)"


def _load(data: str, options: Any = None) -> Any:
    """The dataset ``data`` names: ``DIR`` or a known name, or ``DIR,split`` (the split whose
    judged queries are asked about; default ``test``), as ``judge`` takes it."""
    from sourcebias.data import load_dataset
    from sourcebias.data.dataset import dataset_path

    path, split = dataset_path(data)
    return load_dataset(path, options, **({"split": split} if split else {}))


def _evaluate_run(data: str, folder: Path, run_name: str | None) -> tuple[Any, Any]:
    """The mixed-corpus run ``run_name`` (or the only one) of an ``evaluate`` folder, bound to
    ``data`` loaded with the options it was evaluated with."""
    from sourcebias.evaluation import load_result

    head = load_result(folder, runs=False)
    ds = _load(data, head.dataset_options()[0])
    require_twins(ds, STUDY)
    runs = {k.retriever: r for k, r in load_result(folder, dataset=ds).runs.items() if k.setting == "mixed"}
    if not runs:
        raise ConfigError(f"{folder} holds no run of the mixed corpus")
    if run_name is None and len(runs) > 1:
        raise ConfigError(f"{folder} holds {len(runs)} mixed runs ({', '.join(runs)}): name one with --run-name")
    name = run_name or next(iter(runs))
    if name not in runs:
        raise ConfigError(f"no mixed run named {name} in {folder} (runs: {', '.join(runs)})")
    return runs[name], ds


def load_ranking(
    data: str,
    *,
    run: str | Path | None = None,
    retriever: str | None = None,
    run_name: str | None = None,
    docnos: Path | None = None,
    docno_pattern: str | None = None,
    retriever_options: dict[str, Any] | None = None,
) -> tuple[Any, Any, dict[str, Any]]:
    """``(run, dataset, info)``: the mixed ranking whose top k the generator sees.

    Args:
        data: the dataset (folder or registered name) whose texts the generator reads.
        run: an ``evaluate`` output folder (its mixed run; ``run_name`` picks one of several) or a
            TREC run file over ``data`` (document names by the project's docno rule).
        retriever: or a retriever specification, run now over ``data``'s mixed corpus
            (``LABEL=SPEC``: the label names the ranking, as in ``evaluate``).
        run_name: which mixed run of an ``evaluate`` folder.
        docnos: how a TREC file names documents: a docno map (``sourcebias.retrieval.run``).
        docno_pattern: or a pattern of the names (``{doc_id}-{source}``).
        retriever_options: command-wide options of ``retriever`` (device, cache_dir, ...).

    Raises:
        ConfigError: neither or both of ``run`` and ``retriever``; a path that is neither a
            folder nor a file; an unknown run name; a dataset without LLM twins (before any
            ranking).
    """
    check_ranking(run, retriever, retriever_options)
    if retriever is not None:
        from sourcebias.retrieval import build_retriever
        from sourcebias.retrieval.registry import split_label, system_name

        ds = _load(data)
        require_twins(ds, STUDY)
        ids = ds.evaluation_queries() or list(ds.queries)
        label, spec = split_label(retriever)  # LABEL=SPEC: the label names the ranking, as in evaluate
        ranked = build_retriever(spec, **(retriever_options or {})).retrieve(ds.corpus, {q: ds.queries[q] for q in ids}, depth=100)
        ranked.name = system_name(retriever)
        return ranked, ds, {"retriever": spec, **({"label": label} if label else {}), "dataset": ds.describe().get("name")}
    path = Path(run)  # type: ignore[arg-type]  # one of the two is given (checked above)
    if path.is_dir():
        ranked, ds = _evaluate_run(data, path, run_name)
    else:
        from sourcebias.retrieval.run import Run, resolve_docnos

        ds = _load(data)
        require_twins(ds, STUDY)
        ranked = Run.from_trec(path, ds.corpus, docnos=resolve_docnos(path, ds.corpus, docnos=docnos, docno_pattern=docno_pattern))
    return ranked, ds, {"run": str(path.resolve()), "run_name": ranked.name, "dataset": ds.describe().get("name")}


def check_ranking(run: str | Path | None, retriever: str | None, retriever_options: dict[str, Any] | None = None) -> None:
    """Refuse a ranking that cannot be read, reading nothing: neither or both of ``run`` and
    ``retriever``, a ``run`` that is neither a folder nor a file, a retriever spec that does not
    build (an unknown kind or option, a missing extra)."""
    if (run is None) == (retriever is None):
        raise ConfigError("give the ranking: --run RUN (an evaluate folder or a TREC run file) or --retriever SPEC")
    if retriever is not None:
        from sourcebias.retrieval.registry import check_retriever, split_label

        check_retriever(split_label(retriever)[1], **(retriever_options or {}))
    elif not (Path(run).is_dir() or Path(run).is_file()):  # type: ignore[arg-type]  # one of the two is given (checked above)
        raise ConfigError(f"{run}: neither an evaluate output folder nor a TREC run file")


def sample(query_ids: list[str], max_queries: int | None, seed: int) -> list[str]:
    """A seeded sample of ``max_queries`` of the queries (in their order; all when None):
    :func:`~sourcebias.core.sampling.seeded_sample`."""
    from sourcebias.core.sampling import seeded_sample

    return seeded_sample(query_ids, max_queries, seed)


def run_cite(
    data: str,
    output: str | Path | None,
    *,
    generator: str,
    settings: CiteSettings,
    run: str | Path | None = None,
    retriever: str | None = None,
    run_name: str | None = None,
    docnos: Path | None = None,
    docno_pattern: str | None = None,
    overwrite: bool = False,
    cache_dir: Any = None,
    concurrency: int | None = None,
    device: str | None = None,
    emit: Callable[[str], None] | None = None,
) -> tuple[CitationResult, Path | None]:
    """Run a citation study and write the folder ``output`` (claimed before any work; ``None``:
    nothing written). Returns the result and the folder's path.

    ``generator`` is an :func:`~sourcebias.llmcalls.open_client` spec (``smollm2``, a GGUF file,
    ``openai:MODEL@URL``); its answers are cached under ``cache_dir`` (default: the sourcebias
    cache), which is what makes a rerun resume."""
    from sourcebias.core.artifacts import OutputFolder
    from sourcebias.llmcalls import open_client
    from sourcebias.llmcalls.spec import parse_model_spec, require_backend

    settings.check()  # every input that can be checked without reading the data, before the folder is claimed
    require_backend(parse_model_spec(generator, what="--generator"), "--generator")
    check_ranking(run, retriever, {"device": device, "cache_dir": cache_dir} if retriever else None)
    folder = OutputFolder.claim(output, kind=KIND, overwrite=overwrite) if output is not None else None
    client = None
    try:
        t0 = time.perf_counter()
        ranked, ds, info = load_ranking(
            data,
            run=run,
            retriever=retriever,
            run_name=run_name,
            docnos=docnos,
            docno_pattern=docno_pattern,
            retriever_options={"device": device, "cache_dir": cache_dir} if retriever else None,
        )
        ids = sample([q for q in ranked.query_ids if len(ranked.positions[q])], settings.max_queries, settings.seed)
        info = {**info, "queries": len(ids), "run_queries": len(ranked), "human_source": ds.human_source, "sources": list(ds.sources)}
        (emit or (lambda _m: None))(f"asking {generator} about {len(ids)} queries x {settings.orders} orders")
        client = open_client(generator, cache_dir=cache_dir, concurrency=concurrency, device=device, what="--generator")
        result = cite_run(ranked, ds.queries, client, settings, ds.human_source, query_ids=ids, inputs=info)
        if folder is None:
            return result, None
        return result, write_citations(result, folder, seconds=time.perf_counter() - t0)
    finally:
        if client is not None:
            client.close()
        if folder is not None:
            folder.abort()  # no-op after the commit


def write_citations(result: CitationResult, folder: Any, *, seconds: float) -> Path:
    """Write ``result``, its report and figure and the manifest into a claimed folder; commit."""
    from sourcebias.citations.figure import plot_citations
    from sourcebias.citations.report import citation_report
    from sourcebias.study import Study, write_study

    study = Study(
        citation_report(result),
        figure=lambda target: plot_citations(result, target),
        figure_file="citations.png",
        inputs=result.inputs,
        parameters={**result.settings, "method": result.method},
        models={"generator": result.generator.get("identity", result.generator)},
        extra={"figure": "citations.png", "counts": result.counts},
    )
    return write_study(folder, result, study, seconds=seconds)
