"""The ranking a citation study shows its generator: an ``evaluate`` folder's mixed run, a TREC
run file, or a retriever run now (:class:`RankingSource`, :func:`load_ranking`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sourcebias.core.errors import ConfigError
from sourcebias.data.dataset import require_twins

__all__ = ["RankingSource", "check_ranking", "load_ranking"]

#: what needs the twins, as a refusal names it
STUDY = "a citation study (which of the passages shown a generator cites)"


@dataclass(frozen=True)
class RankingSource:
    """Where the mixed ranking comes from: exactly one of ``run`` and ``retriever``.

    Attributes:
        run: An ``evaluate`` output folder (its mixed run; ``run_name`` picks one of several) or a
            TREC run file over the dataset (document names by the project's docno rule).
        retriever: Or a retriever specification, run now over the dataset's mixed corpus
            (``LABEL=SPEC``: the label names the ranking, as in ``evaluate``).
        run_name: Which mixed run of an ``evaluate`` folder.
        docnos: How a TREC file names documents: a docno map (``sourcebias.retrieval.run``).
        docno_pattern: Or a pattern of the names (``{doc_id}-{source}``).
    """

    run: str | Path | None = None
    retriever: str | None = None
    run_name: str | None = None
    docnos: Path | None = None
    docno_pattern: str | None = None


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


def load_ranking(data: str, source: RankingSource, *, retriever_options: dict[str, Any] | None = None) -> tuple[Any, Any, dict[str, Any]]:
    """``(run, dataset, info)``: the mixed ranking whose top k the generator sees.

    Args:
        data: the dataset (folder or registered name) whose texts the generator reads.
        source: the run, or the retriever to run (:class:`RankingSource`).
        retriever_options: command-wide options of the retriever (device, cache_dir, ...).

    Raises:
        ConfigError: neither or both of ``run`` and ``retriever``; a path that is neither a
            folder nor a file; an unknown run name; a dataset without LLM twins (before any
            ranking).
    """
    check_ranking(source, retriever_options)
    retriever = source.retriever
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
    path = Path(source.run)  # type: ignore[arg-type]  # one of the two is given (checked above)
    if path.is_dir():
        ranked, ds = _evaluate_run(data, path, source.run_name)
    else:
        from sourcebias.retrieval.run import Run, resolve_docnos

        ds = _load(data)
        require_twins(ds, STUDY)
        ranked = Run.from_trec(path, ds.corpus, docnos=resolve_docnos(path, ds.corpus, docnos=source.docnos, docno_pattern=source.docno_pattern))
    return ranked, ds, {"run": str(path.resolve()), "run_name": ranked.name, "dataset": ds.describe().get("name")}


def check_ranking(source: RankingSource, retriever_options: dict[str, Any] | None = None) -> None:
    """Refuse a ranking that cannot be read, reading nothing: neither or both of ``run`` and
    ``retriever``, a ``run`` that is neither a folder nor a file, a retriever spec that does not
    build (an unknown kind or option, a missing extra)."""
    run, retriever = source.run, source.retriever
    if (run is None) == (retriever is None):
        raise ConfigError("give the ranking: --run RUN (an evaluate folder or a TREC run file) or --retriever SPEC")
    if retriever is not None:
        from sourcebias.retrieval.registry import check_retriever, split_label

        check_retriever(split_label(retriever)[1], **(retriever_options or {}))
    elif not (Path(run).is_dir() or Path(run).is_file()):  # type: ignore[arg-type]  # one of the two is given (checked above)
        raise ConfigError(f"{run}: neither an evaluate output folder nor a TREC run file")
