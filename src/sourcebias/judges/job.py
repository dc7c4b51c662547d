"""``sourcebias judge`` as a library call: claim the output folder, grade the judged documents
(and optionally the top k of runs) through an LLM client, analyse, and write the folder.

Resumable through the client's answer store: every answer is stored as it arrives, so a killed
run loses at most the calls in flight and a rerun sends only the calls not answered yet (the
output folder is written only at the end, atomically)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sourcebias.core.errors import ConfigError
from sourcebias.judges.analysis import analyse
from sourcebias.judges.grading import JudgeSettings, ask
from sourcebias.judges.items import item_table, judged_documents, judged_queries
from sourcebias.judges.plan import JudgePlan
from sourcebias.judges.prompts import describe_prompts
from sourcebias.judges.result import KIND, JudgeResult
from sourcebias.llmcalls import ModelAccess
from sourcebias.llmcalls.client import call_notes


def judge(
    dataset: Any,
    client: Any,
    settings: JudgeSettings,
    *,
    runs: dict[str, Any] | None = None,
    plan: JudgePlan | None = None,
    queries: Sequence[str] | None = None,
) -> JudgeResult:
    """Grade ``dataset``'s judged documents (both copies) with ``client`` and analyse the grades.

    Args:
        dataset: A loaded dataset with a split and LLM twins.
        client: An :class:`~sourcebias.llmcalls.LLMClient`.
        settings: Modes, tokens, log-probabilities, seed (:class:`~sourcebias.judges.grading.JudgeSettings`).
        runs: ``{name: Run}`` of the mixed corpus: their top ``plan.top_k`` documents are graded
            too, and each is evaluated with the assessors' and the judge's qrels.
        plan: The sample, the runs' depth and the statistics (:class:`~sourcebias.judges.plan.JudgePlan`;
            default: every query, no run documents, NDCG@10, 2,000 resamples, 95% CIs).
        queries: The queries to judge, when the caller drew them already
            (:func:`~sourcebias.judges.items.judged_queries` with ``plan.max_queries`` and
            ``settings.seed``, as :func:`run_judge` does before it opens the model); by default
            drawn here the same way.

    Returns:
        The :class:`~sourcebias.judges.result.JudgeResult`.
    """
    plan = plan or JudgePlan()
    if queries is None:
        queries = judged_queries(dataset, max_queries=plan.max_queries, seed=settings.seed)
    documents = sampled_documents(dataset, queries, plan.max_docs, settings.seed)
    items = item_table(dataset, queries, runs or {}, plan.top_k, documents)
    grades, pairs, counts = ask(client, dataset, items, settings)
    analyses = analyse(grades, pairs, dataset.human_source, list(dataset.sources), confidence=plan.confidence, seed=settings.seed)
    protocol = _protocol(dataset, runs, grades, queries, documents, settings, plan)
    described = client.describe()
    info, notes = dataset.describe(), judge_notes(analyses) + list(protocol.get("skipped", [])) + call_notes(described, "judge calls: ")
    judged = _judged_counts(dataset, queries, documents)
    if documents is not None:
        notes.insert(0, sample_note(judged, plan.max_docs))
    grade, pair = settings.prompts()
    return JudgeResult(
        judge={"identity": client.identity(), **counts, "client": described},
        settings={
            **settings.describe(),
            **plan.describe(),
            "prompts": describe_prompts(grade, pair),
        },
        dataset={**_dataset_entry(dataset, info), "queries": len(queries), **judged, "items": len(items), "runs": sorted(runs or {})},
        analyses=analyses,
        grades=grades,
        pairs=pairs,
        protocol=protocol,
        notes=notes,
    )


def _protocol(
    dataset: Any,
    runs: dict[str, Any] | None,
    grades: Any,
    queries: Sequence[str],
    documents: dict[str, list[str]] | None,
    settings: JudgeSettings,
    plan: JudgePlan,
) -> dict[str, Any]:
    """The protocol under the assessors' and the judge's qrels (on ``documents``, the judged documents
    graded, when sampled), when runs were given and grades asked ({} otherwise)."""
    from sourcebias.judges.protocol import protocol_effect, qrels_variants

    if not runs or "grade" not in settings.modes:
        return {}
    variants = qrels_variants(dataset, grades, queries, documents)
    return protocol_effect(dataset, runs, variants, measure=plan.measure, resamples=plan.resamples, confidence=plan.confidence, seed=settings.seed)


def sampled_documents(dataset: Any, queries: Sequence[str], max_docs: int | None, seed: int) -> dict[str, list[str]] | None:
    """Each query's judged documents drawn for grading when ``max_docs`` is set (``None``: every one)."""
    return None if max_docs is None else judged_documents(dataset, queries, max_docs=max_docs, seed=seed)


def _judged_counts(dataset: Any, queries: Sequence[str], documents: dict[str, list[str]] | None) -> dict[str, int]:
    """How many (query, judged document) pairs were graded, of how many the queries have."""
    available = sum(len(dataset.qrels.get(q, {})) for q in queries)
    return {"judged_documents": available if documents is None else sum(map(len, documents.values())), "judged_documents_available": available}


def sample_note(judged: dict[str, int], max_docs: int | None) -> str:
    """The note that says a sample of each query's judged documents was graded."""
    return (
        f"graded a seeded sample of at most {max_docs:,} judged documents per query (--max-docs): {judged['judged_documents']:,} of the queries'"
        f" {judged['judged_documents_available']:,} judged (query, document) pairs, every copy of each; the protocol's assessors' qrels are restricted to them"
    )


def _dataset_entry(dataset: Any, info: dict[str, Any]) -> dict[str, Any]:
    """The dataset's name, split and sources, as ``judge.json`` records them."""
    return {"name": info["name"], "split": info["split"], "human_source": dataset.human_source, "sources": list(dataset.sources)}


def judge_notes(analyses: dict[str, Any]) -> list[str]:
    """What a reader must see: unparseable answers left out, expected grades not available,
    estimates without interval or p (and why), κ not computed on the grades."""
    out = []
    for p in analyses.get("parse", []):
        if p["unparseable"]:
            out.append(f"{p['mode']}: {p['unparseable']:,} of {p['answers']:,} answers unparseable (left out of every estimate; see grades.tsv / pairs.tsv)")
        for why, n in (p.get("no_expected_grade") or {}).items():
            if why != "unparsed":
                out.append(f"{p['mode']}: no expected grade for {n:,} of {p['answers']:,} answers ({why})")
    for section in ("twin_bias", "pairwise", "disclosure"):
        for r in analyses.get(section, []):
            if r.get("refused") or r.get("note"):
                what = f"no CI and no p: {r['refused']}" if r.get("refused") else f"no CI: {r['note']}"
                out.append(f"{r['quantity']} ({r['llm_source']}): {what}")
    for a in analyses.get("agreement", []):
        if a.get("note"):
            out.append(f"Cohen's κ ({a['source']}; {a.get('scales', '')}): {a['note']}")
    return out


def load_runs(
    dataset: Any, retrievers: Sequence[str], run_files: Sequence[str | Path], query_ids: Sequence[str], *, depth: int = 100, seed: int = 0
) -> dict[str, Any]:
    """``{name: Run}``: each TREC run file (read first: a file that does not read stops the job
    before any retrieval), and each retriever spec's ranking of the mixed corpus (``LABEL=SPEC``:
    named by its label; else by its spec less the servers' addresses, as in ``evaluate``)."""
    from sourcebias.retrieval.registry import build_retriever, split_label, system_name
    from sourcebias.retrieval.run import Run

    names = [system_name(t) for t in retrievers]
    runs: dict[str, Any] = {}
    for path in run_files:
        run = Run.from_trec(path, dataset.corpus, seed=seed)
        runs[run.name] = run
    if len(set(names) | set(runs)) < len(retrievers) + len(run_files):
        raise ConfigError("two runs share a name; give each retriever (-r LABEL=SPEC) or run file a distinct name")
    queries = {q: dataset.queries[q] for q in query_ids}
    for name, text in zip(names, retrievers):
        r = build_retriever(split_label(text)[1])
        r.name = name
        runs[name] = r.retrieve(dataset.corpus, queries, depth, seed=seed)
    return runs


def check_inputs(spec: str | None, retrievers: Sequence[str], run_files: Sequence[str | Path], top_k: int = 0) -> None:
    """Refuse, reading no data, what would stop the job later: the judge's spec (malformed, or its
    backend's extra not installed; ``None``: a client is given), a retriever spec that does not
    build, two retrievers of one name, a run file that is not there, a ``top_k`` without runs."""
    from sourcebias.retrieval.registry import check_retriever, split_label, system_name

    if top_k and not (retrievers or run_files):
        raise ConfigError("--top-k grades the top documents of runs: give -r RETRIEVER or --run FILE")

    if spec is not None:
        from sourcebias.llmcalls.spec import parse_model_spec, require_backend

        require_backend(parse_model_spec(spec, what="--judge"), "--judge")
    for text in retrievers:
        check_retriever(split_label(text)[1])
    names = [system_name(t) for t in retrievers]
    if len(set(names)) < len(names):
        raise ConfigError(f"two runs share a name ({', '.join(names)}); give each retriever a distinct name: -r LABEL=SPEC")
    for path in run_files:
        if not Path(path).is_file():
            raise ConfigError(f"--run {path}: file not found")


def run_judge(
    dataset_arg: str | Path,
    spec: str,
    output: str | Path,
    *,
    settings: JudgeSettings | None = None,
    plan: JudgePlan | None = None,
    retrievers: Sequence[str] = (),
    run_files: Sequence[str | Path] = (),
    access: ModelAccess | None = None,
    overwrite: bool = False,
    emit: Callable[[str], None] | None = None,
) -> tuple[JudgeResult, Path]:
    """Judge ``dataset_arg`` with ``spec`` and write the folder ``output`` (claimed before any work).

    Args:
        dataset_arg: ``DIR``, ``DIR,split`` or a known dataset's name (split ``test`` by default).
        spec: The judge (:func:`sourcebias.llmcalls.open_client`: ``smollm2``, a GGUF file,
            ``openai:MODEL@URL``).
        output: The output folder.
        settings: Modes, prompts, tokens, log-probabilities, seed.
        plan: The sample, the runs' depth and the statistics (:func:`judge`'s).
        retrievers: Retriever specs (``LABEL=SPEC`` names one) whose mixed-corpus rankings are
            graded (top ``plan.top_k``) and evaluated with each qrels.
        run_files: TREC runs of the mixed corpus, used like ``retrievers``.
        access: The answer store, requests in flight, device, or an open client
            (:class:`~sourcebias.llmcalls.ModelAccess`; an open client is not closed here).
        overwrite: Replace an earlier result in ``output``.
        emit: Receives progress messages.

    Returns:
        ``(result, path)``.
    """
    from sourcebias.core.artifacts import OutputFolder
    from sourcebias.data import load_dataset
    from sourcebias.data.dataset import dataset_path

    settings, plan, access = settings or JudgeSettings(), plan or JudgePlan(), access or ModelAccess()
    path, split = dataset_path(dataset_arg)
    check_inputs(spec if access.opens else None, retrievers, run_files, plan.top_k)
    folder = OutputFolder.claim(output, kind=KIND, overwrite=overwrite)
    client = None
    try:
        t0 = time.perf_counter()
        dataset = load_dataset(path, split=split or "test")
        queries = judged_queries(dataset, max_queries=plan.max_queries, seed=settings.seed)  # refuses a split without judgements or twins: before any model
        client = access.open(spec, what="--judge")
        runs = load_runs(dataset, retrievers, run_files, queries, seed=settings.seed) if (retrievers or run_files) else {}
        (emit or (lambda _m: None))(f"judging with {spec}")
        result = judge(dataset, client, settings, runs=runs, plan=plan, queries=queries)  # the sample drawn above, not drawn again
        result.judge["spec"] = spec
        return result, write_folder(result, folder, dataset, queries, path=path, retrievers=retrievers, run_files=run_files, seconds=time.perf_counter() - t0)
    finally:
        folder.abort()
        if access.opens and client is not None:
            client.close()


def write_folder(
    result: JudgeResult,
    folder: Any,
    dataset: Any,
    queries: Sequence[str],
    *,
    path: Path,
    retrievers: Sequence[str],
    run_files: Sequence[str | Path],
    seconds: float,
) -> Path:
    """Write the judge's folder through the study frame and commit it: the judge's qrels and
    dataset copy (grade mode), ``judge.json`` and the tables, the summaries, the figure, the manifest."""
    from sourcebias.judges.figure import plot_judge
    from sourcebias.judges.output import write_outputs
    from sourcebias.judges.protocol import qrels_variants
    from sourcebias.judges.report import judge_report
    from sourcebias.study import Study, write_study

    if "grade" in result.settings["modes"]:
        documents = sampled_documents(dataset, queries, result.settings["max_docs"], result.settings["seed"])
        result.notes += write_outputs(folder.staging, dataset, qrels_variants(dataset, result.grades, queries, documents))
    parameters = {"judge": result.judge["spec"], **result.settings, "retrievers": list(retrievers), "runs": [str(p) for p in run_files]}
    study = Study(
        judge_report(result),
        figure=lambda target: plot_judge(result, target),
        figure_file="judge.png",
        inputs={"dataset": str(path), "split": dataset.split},
        parameters=parameters,
        models={"judge": result.judge["identity"]},
    )
    return write_study(folder, result, study, seconds=seconds)
