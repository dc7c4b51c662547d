"""What one evaluation is asked to do, checked in full before any work.

An :class:`EvaluationPlan` holds every choice of ``sourcebias evaluate`` apart from the dataset
and its loading options (:class:`~sourcebias.data.options.DatasetOptions`): the systems (retriever
specifications and run files), the measures, the protocol's settings and the statistics of the
report. :meth:`EvaluationPlan.check` refuses any choice that cannot be used — an unknown measure
or statistic, a statistics measure that will not be computed, a depth below a cut-off, an unknown
correction or file format, a run file that is not there — before an output folder is claimed,
a dataset read or a document retrieved. The rules that need the dataset (run files naming its
documents, two systems of one name) are in :meth:`EvaluationPlan.load_runs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sourcebias.core.errors import ConfigError
from sourcebias.core.sampling import check_sample_size
from sourcebias.evaluation.measures import DEFAULT_CUTOFFS, DEFAULT_MEASURES, Measure, measure_grid, parse_measure

FORMATS = ("csv", "parquet")


def parse_statistics(items: Sequence[str] | None) -> tuple[str, ...] | None:
    """Statistic names, repeated or comma-separated: ``None`` for none given (the report's
    default), ``()`` for ``none``."""
    names = tuple(x.strip() for s in items or () for x in s.split(",") if x.strip())
    if not names:
        return None
    return () if [n.lower() for n in names] == ["none"] else names


@dataclass(frozen=True)
class EvaluationPlan:
    """The systems, measures, protocol settings and report statistics of one evaluation.

    Attributes:
        retrievers: Retriever specifications (``bm25``, ``st:NAME``, pipelines), each optionally
            labelled ``LABEL=SPEC``; none and no runs means ``bm25``.
        runs: ``(name or None, file)`` of TREC runs made by any system.
        docnos, docno_pattern, source_labels: How the run files name documents (see
            :func:`sourcebias.retrieval.docnos.resolve_docnos`).
        measures, cutoffs: The measure names and cut-offs (every name at every cut-off; empty: NDCG,
            MAP, Recall, P and Share at 1, 3, 5 and 10).
        depth, seed, sole, exclude_self: The protocol's settings (see :func:`sourcebias.evaluation.evaluate`).
        max_queries: Evaluate a seeded sample (``seed``) of this many queries (``None``: all).
        resamples: Resamples of the report's paired randomization tests.
        statistics: The report's statistics (``None``: its default; ``()``: none).
        statistics_measures: The measures of the per-measure statistics (default: every cut-off
            of the first measure with labels); each must be computed.
        bootstrap_resamples, confidence, correction, ndsr_k: The statistics' settings.
        format: File format of the per-query values (``csv`` or ``parquet``).
        write_runs: Write the runs into the output folder.
        draw_figure: Draw the folder's figure (``False``: ``figures/not-drawn.txt`` says so).
        retriever_options: Command-wide settings of the retrievers (device, batch size, ...).
    """

    retrievers: tuple[str, ...] = ()
    runs: tuple[tuple[str | None, Path], ...] = ()
    docnos: Path | None = None
    docno_pattern: str | None = None
    source_labels: tuple[tuple[str, str], ...] = ()
    measures: tuple[str, ...] = ()
    cutoffs: tuple[int, ...] = ()
    depth: int = 1000
    seed: int = 0
    sole: bool = True
    exclude_self: bool = False
    max_queries: int | None = None
    resamples: int = 10_000
    statistics: tuple[str, ...] | None = None
    statistics_measures: tuple[str, ...] = ()
    bootstrap_resamples: int = 2000
    confidence: float = 0.95
    correction: str = "holm"
    ndsr_k: int = 10
    format: str = "csv"
    write_runs: bool = True
    draw_figure: bool = True
    retriever_options: dict[str, Any] = field(default_factory=dict)

    @property
    def specs(self) -> list[str]:
        """The retriever specifications to build (``bm25`` when neither retrievers nor runs are
        given), each as given: ``SPEC`` or ``LABEL=SPEC``."""
        return list(dict.fromkeys(self.retrievers or (() if self.runs else ("bm25",))))

    def named_specs(self) -> dict[str, str]:
        """``{name: specification}`` of the retrievers: a ``LABEL=SPEC``'s label, else the
        specification without its servers' addresses (:func:`~sourcebias.retrieval.registry.system_name`).

        Raises:
            ConfigError: two retrievers of one name (label them: ``-r LABEL=SPEC``).
        """
        from sourcebias.retrieval.registry import split_label, system_name

        out: dict[str, str] = {}
        for text in self.specs:
            name, spec = system_name(text), split_label(text)[1]
            if name in out:
                raise ConfigError(f"two retrievers are named '{name}' ({out[name]} and {spec}); label them: --retriever LABEL=SPEC")
            out[name] = spec
        return out

    def measure_list(self) -> list[Measure]:
        """Every measure at every cut-off (unknown names are refused)."""
        return measure_grid(self.measures or DEFAULT_MEASURES, sorted(set(self.cutoffs or DEFAULT_CUTOFFS)))

    def check(self) -> None:
        """Refuse any choice that cannot be used; reads nothing but whether the run files exist.

        Raises:
            ConfigError: naming the option and what is wrong.
        """
        measures = self.measure_list()
        cutoff = max(m.cutoff for m in measures)
        if self.depth < cutoff:
            raise ConfigError(f"--depth {self.depth} is smaller than the largest cut-off {cutoff}")
        check_sample_size(self.max_queries)
        if self.format not in FORMATS:
            raise ConfigError(f"--format must be csv or parquet, got '{self.format}'")
        if self.format == "parquet":
            from sourcebias.core.extras import require

            require("analysis", "--format parquet", ("pyarrow",))
        self._check_statistics(measures)
        if "delta_ndsr" in self.statistic_names():
            from sourcebias.evaluation.stats.delta_ndsr import check_ndsr_depth

            check_ndsr_depth(self.ndsr_k, self.depth)
        from sourcebias.retrieval.registry import check_retriever

        for spec in self.named_specs().values():  # kinds, their options and their extras, before any work
            check_retriever(spec, **self.retriever_options)
        for _, path in self.runs:
            if not Path(path).is_file():
                raise ConfigError(f"--run {path}: file not found")
        if self.docnos is not None and self.docno_pattern is not None:
            raise ConfigError("give --docnos or --docno-pattern, not both")
        if (self.docnos is not None or self.docno_pattern is not None or self.source_labels) and not self.runs:
            raise ConfigError("--docnos, --docno-pattern and --source-label name the documents of --run files; give --run FILE")

    def statistic_names(self) -> list[str]:
        """The registry names of the report's statistics (the registry's defaults, ΔNDSR among
        them as in the report's, when none are given; none for ``()``)."""
        from sourcebias.evaluation.stats import resolve_statistics

        return [] if self.statistics == () else [s.name for s in resolve_statistics(self.statistics)]

    def _check_statistics(self, measures: list[Measure]) -> None:
        from sourcebias.evaluation.stats import CORRECTIONS
        from sourcebias.evaluation.stats.base import get_statistic

        if self.correction not in CORRECTIONS:
            raise ConfigError(f"--correction must be one of {', '.join(CORRECTIONS)}, got '{self.correction}'")
        for name in self.statistics or ():
            get_statistic(name)  # an unknown name is refused with the known ones
        targets = [m for m in measures if m.scope == "target"]
        missing = [m for m in self.statistics_measures if parse_measure(m) not in targets]
        if missing:
            raise ConfigError(
                f"--statistics-measure {', '.join(missing)}: not computed by this evaluation; measures with labels: "
                f"{', '.join(map(str, targets)) or 'none'} (add the measure with --metric and its cut-off with --k)"
            )

    def build_systems(self) -> list[Any]:
        """The retrievers (:func:`sourcebias.retrieval.build_retriever` with the command-wide
        options), each named by its ``LABEL=``, else by its own name (``name=``, a backend's
        precision) without its servers' addresses."""
        from sourcebias.retrieval import build_retriever
        from sourcebias.retrieval.registry import short_name, split_label

        systems: list[Any] = []
        self.named_specs()  # two specifications of one name are refused before any model loads
        for text in self.specs:
            label, spec = split_label(text)
            system = build_retriever(spec, **self.retriever_options)
            system.name = label or short_name(system.name)  # the retriever's own name (name=, backend) unless labelled
            if system.name in {s.name for s in systems}:
                raise ConfigError(f"two retrievers are named '{system.name}'; label them: --retriever LABEL=SPEC")
            systems.append(system)
        return systems

    def load_runs(self, dataset: Any, systems: Sequence[Any] = ()) -> dict[str, Any]:
        """The run files read over ``dataset``'s corpus, by name.

        Raises:
            DataError: a run file that does not read (with file and line).
            ConfigError: two systems (runs or retrievers) with one name.
        """
        from sourcebias.retrieval.docnos import resolve_docnos
        from sourcebias.retrieval.run import Run

        taken = {s.name for s in systems}
        out: dict[str, Any] = {}
        for name, path in self.runs:
            mapping = resolve_docnos(path, dataset.corpus, docnos=self.docnos, docno_pattern=self.docno_pattern, source_labels=dict(self.source_labels))
            run = Run.from_trec(path, dataset.corpus, docnos=mapping, name=name, seed=self.seed)
            if run.name in out or run.name in taken:
                raise ConfigError(f"two systems are named '{run.name}'; name the run: --run NAME={path}")
            out[run.name] = run
        return out
