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

from sourcebias.citations.ranking import RankingSource, check_ranking, load_ranking
from sourcebias.citations.result import KIND, CitationResult
from sourcebias.citations.study import CiteSettings, cite_run
from sourcebias.llmcalls import ModelAccess

__all__ = ["run_cite", "sample", "write_citations"]


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
    ranking: RankingSource,
    access: ModelAccess | None = None,
    overwrite: bool = False,
    emit: Callable[[str], None] | None = None,
) -> tuple[CitationResult, Path | None]:
    """Run a citation study and write the folder ``output`` (claimed before any work; ``None``:
    nothing written). Returns the result and the folder's path.

    Args:
        data: The dataset (``DIR``, ``DIR,split`` or a known name) whose texts the generator reads.
        output: The output folder (``None``: nothing written).
        generator: An :func:`~sourcebias.llmcalls.open_client` spec (``smollm2``, a GGUF file,
            ``openai:MODEL@URL``).
        settings: The study's settings (:class:`~sourcebias.citations.study.CiteSettings`).
        ranking: The mixed ranking shown (:class:`~sourcebias.citations.ranking.RankingSource`).
        access: The answer store (default: the sourcebias cache; it is what makes a rerun
            resume), requests in flight, device, or an open client (not closed here).
        overwrite: Replace an earlier result in ``output``.
        emit: Receives progress messages.
    """
    from sourcebias.core.artifacts import OutputFolder
    from sourcebias.llmcalls.spec import parse_model_spec, require_backend

    access = access or ModelAccess()
    options = access.retriever_options() if ranking.retriever else None
    settings.check()  # every input that can be checked without reading the data, before the folder is claimed
    if access.opens:
        require_backend(parse_model_spec(generator, what="--generator"), "--generator")
    check_ranking(ranking, options)
    folder = OutputFolder.claim(output, kind=KIND, overwrite=overwrite) if output is not None else None
    client = None
    try:
        t0 = time.perf_counter()
        ranked, ds, info = load_ranking(data, ranking, retriever_options=options)
        ids = sample([q for q in ranked.query_ids if len(ranked.positions[q])], settings.max_queries, settings.seed)
        info = {**info, "queries": len(ids), "run_queries": len(ranked), "human_source": ds.human_source, "sources": list(ds.sources)}
        (emit or (lambda _m: None))(f"asking {generator} about {len(ids)} queries x {settings.orders} orders")
        client = access.open(generator, what="--generator")
        result = cite_run(ranked, ds.queries, client, settings, ds.human_source, query_ids=ids, inputs=info)
        if folder is None:
            return result, None
        return result, write_citations(result, folder, seconds=time.perf_counter() - t0)
    finally:
        if access.opens and client is not None:
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
