"""Experiment grids: a TOML file naming datasets, retrievers (and runs), measures and settings.

Example (every key but ``datasets[].path`` and ``retrievers[].spec`` is optional; the ``[grid]``
settings, their bounds and defaults are declared in :mod:`sourcebias.experiments.settings`)::

    [grid]
    name = "cocktail-mini"
    measures = ["NDCG", "MAP", "Share"]   # the --metric names
    cutoffs = [1, 3, 5]                  # the --k values
    depth = 1000                         # documents kept per ranking
    seed = 0                             # tie rule, tests, bootstrap
    # seeds = [42, 100, 2026]            # instead of seed: every cell once per seed, and the
    #                                    # report gives the mean and spread across seeds
    sole = true                          # also rank each source alone
    significance_resamples = 10000       # paired randomization test per cell
    bootstrap_resamples = 2000           # confidence interval of Relative Δ
    confidence = 0.95
    correction = "holm"                  # or "fdr_bh": across all of the grid's tests
    primary = "NDCG@3"                   # the report's measure: one of measures x cutoffs (any spelling)
    orphans = "drop"                     # or "keep": judged originals without a copy in every source
    ndsr_k = 10                          # cut-off of ΔNDSR@k in the report

    [options]                            # command-wide options of every cell (--batch-size ...)
    batch_size = 32
    device = "cpu"

    [[datasets]]
    path = "../shared/data/nq-utd"       # relative to the config file
    split = "test"
    # name = "nq-utd"; sources = ["human", "llama-2-7b-chat-tmp0.2"]; human_source = "human"

    [[retrievers]]
    spec = "bm25"
    [[retrievers]]
    spec = "minilm"
    gpus = 1                             # Ray: GPUs a cell of this retriever asks for
    encode_workers = 4                   # Ray: encode the corpus with 4 workers first
    [[retrievers]]
    spec = "bm25>>lm:smollm2,depth=20"
    datasets = ["nq-utd"]                # only on these datasets (default: all)
    [[retrievers]]
    spec = "rg=bm25>>rankgpt:openai:qwen@http://gpu1:8000/v1"   # LABEL=SPEC, as -r takes it

    [[runs]]                             # a run made by another system, for one dataset
    name = "pyserini-bm25"
    dataset = "nq-utd"
    path = "runs/nq-utd.trec"
    # docnos = "runs/docnos.tsv"  or  docno_pattern = "{doc_id}-{source}"; source_labels = {...}

A retriever is named by ``name``, or by the label of a ``LABEL=SPEC``, or else by its spec less
its servers' addresses (as ``evaluate -r`` names it).

Each cell is one (dataset, retriever) or (dataset, run) pair. A cell's *hash* covers everything
that decides its results: the dataset's files (SHA-256), the retriever specification, the
command-wide options, the measures, cut-offs, depth, seed, settings, and the sourcebias version.

**Seeds.** ``seeds = [42, 100, 2026]`` (a non-empty list of distinct integers) runs every cell once
per seed: each (cell, seed) is its own cell run, with the seed in its hash, its own folder and
record, and every seeded step (the tie rule, the randomization tests, the bootstrap) takes that
seed. ``seed = N`` is ``seeds = [N]``, and a grid of one seed is exactly the grid it always was
(same cell keys, folders and hashes). Giving both keys is an error.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sourcebias.core.errors import ConfigError
from sourcebias.core.tomlfile import TomlFile, key_line
from sourcebias.experiments.settings import GRID_SETTINGS, RETRIEVER_SETTINGS, Setting

GRID_KEYS = frozenset(s.name for s in GRID_SETTINGS)
DATASET_KEYS = {"path", "name", "split", "sources", "human_source", "twins"}
RETRIEVER_KEYS = {"spec", "name", "datasets"} | {s.name for s in RETRIEVER_SETTINGS}
RUN_KEYS = {"name", "dataset", "path", "docnos", "docno_pattern", "source_labels"}
OPTION_KEYS = {"batch_size", "device", "max_length", "rerank_depth"}
TABLES = {"grid", "options", "datasets", "retrievers", "runs"}


@dataclass(frozen=True)
class DatasetEntry:
    path: Path
    name: str
    split: str = "test"
    sources: tuple[str, ...] | None = None
    human_source: str = "human"
    twins: Path | None = None  # with path = "irds:<id>": the folder of the LLM twins


@dataclass(frozen=True)
class RetrieverEntry:
    spec: str
    name: str
    gpus: float = 0.0
    cpus: float = 1.0
    encode_workers: int = 0
    datasets: tuple[str, ...] | None = None  # only these datasets (None: all)


@dataclass(frozen=True)
class RunEntry:
    name: str
    dataset: str
    path: Path
    docnos: Path | None = None
    docno_pattern: str | None = None
    source_labels: tuple[tuple[str, str], ...] = ()


def _declared_settings(cls: type) -> type:
    """Give the (not yet dataclass) class one field per declared ``[grid]`` setting, with the
    declared default: the settings are declared once, in :data:`GRID_SETTINGS`."""
    types = {int: int, float: float, bool: bool, str: str, list: list}
    for s in GRID_SETTINGS:
        cls.__annotations__[s.name] = types[s.type] if s.default is not None else Any
        setattr(cls, s.name, field(default_factory=s.initial))
    return cls


@dataclass
@_declared_settings
class GridConfig:
    """A parsed and validated grid configuration (see the module docstring): the file, its
    entries, ``[options]``, and one field per setting of
    :data:`~sourcebias.experiments.settings.GRID_SETTINGS` (``depth``, ``seeds``, ...; ``seed`` is
    the first of ``seeds``, ``name`` the file's stem unless given, ``cache_dir`` a resolved path
    or None)."""

    path: Path
    text: str
    datasets: list[DatasetEntry]
    retrievers: list[RetrieverEntry]
    runs: list[RunEntry] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    if TYPE_CHECKING:
        # The fields that _declared_settings adds (one per GRID_SETTINGS entry, each with its
        # declared default), spelled out for type checkers only; tests/project/test_typing.py checks that
        # these names are exactly the declared settings. After loading: ``name`` is the file's stem
        # unless given, ``seed`` the first of ``seeds``, ``cache_dir`` a resolved path or None.
        name: str = field(default_factory=str)
        measures: list[str] = field(default_factory=list)
        cutoffs: list[int] = field(default_factory=list)
        depth: int = field(default_factory=int)
        seed: int = field(default_factory=int)
        seeds: list[int] = field(default_factory=list)
        sole: bool = field(default_factory=bool)
        significance_resamples: int = field(default_factory=int)
        bootstrap_resamples: int = field(default_factory=int)
        confidence: float = field(default_factory=float)
        correction: str = field(default_factory=str)
        primary: str = field(default_factory=str)
        orphans: str = field(default_factory=str)
        ndsr_k: int = field(default_factory=int)
        cache_dir: Path | None = None

    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def several_seeds(self) -> bool:
        """Whether each cell runs once per seed (``seeds`` with more than one seed)."""
        return len(self.seeds) > 1

    def settings(self, seed: int | None = None) -> dict[str, Any]:
        """What every cell shares and what decides its results (beyond dataset and retriever): the
        ``hashed`` settings and ``[options]``, for one of the grid's seeds (default: the first,
        the only one of a one-seed grid). A cell's hash covers exactly this."""
        out = {s.name: getattr(self, s.name) for s in GRID_SETTINGS if s.hashed}
        out["seed"] = self.seed if seed is None else int(seed)
        return {**out, "options": self.options}

    def statistics_settings(self) -> dict[str, Any]:
        """The settings the report's statistics take (the ``context`` settings), as keyword
        arguments of :class:`~sourcebias.evaluation.stats.StatContext`."""
        return {s.name: getattr(self, s.name) for s in GRID_SETTINGS if s.context}

    def load_dataset(self, entry: DatasetEntry | dict[str, Any]):
        """The dataset of a grid entry (a :class:`DatasetEntry` or its JSON form, as a cell task
        gets it), loaded with the grid's orphan policy; the grid's cells and its report both load
        through here."""
        return load_grid_dataset(entry, self.orphans)


def load_grid_dataset(entry: DatasetEntry | dict[str, Any], orphans: str = "drop"):
    """``load_dataset`` of a grid's dataset entry with the grid's orphan policy."""
    from sourcebias.data import DatasetOptions, load_dataset

    d = entry_dict(entry) if isinstance(entry, DatasetEntry) else entry
    return load_dataset(
        d["path"], DatasetOptions(split=d["split"], sources=d["sources"], human_source=d["human_source"], orphans=orphans, twins=d.get("twins"))
    )


class _File(TomlFile):
    """A grid file being checked (:class:`~sourcebias.core.tomlfile.TomlFile`), and its declared settings."""

    def value(self, table: dict[str, Any], s: Setting, where: str, name: str | None = None, index: int = 1) -> Any:
        """The checked value of setting ``s`` in ``table`` (its declared default when absent)."""
        if s.name not in table:
            return s.initial()
        problem = s.problem(table[s.name])
        if problem:
            self.fail(f"{where}.{s.name}: {problem}", s.name, name, index)
        return s.convert(table[s.name])


def load_grid_config(path: str | Path) -> GridConfig:
    """Read and validate a grid TOML file, before any work.

    Args:
        path: the grid file (see the module docstring).

    Returns:
        The configuration, every setting checked against its declaration
        (:data:`~sourcebias.experiments.settings.GRID_SETTINGS`: type, bounds, choices).

    Raises:
        DataError: the file is missing or wrong; the message names the file, the line of the key
            (or the TOML syntax error), the entry (``retrievers[2].spec``) and what is wrong.
    """
    from sourcebias.core.tomlfile import read_toml

    path, text, raw = read_toml(path, "grid configuration")
    f = _File(path, text)
    f.keys(raw, TABLES, "top level")
    grid = f.keys(raw.get("grid", {}), GRID_KEYS, "[grid]", "grid")
    options = f.keys(raw.get("options", {}), OPTION_KEYS, "[options]", "options")
    datasets = [_dataset(f, d, i) for i, d in enumerate(raw.get("datasets", []), start=1)]
    if not datasets:
        f.fail("no [[datasets]]: name at least one dataset folder")
    names = [d.name for d in datasets]
    if len(set(names)) != len(names):
        f.fail(f"two datasets have the same name ({', '.join(names)}); give them distinct 'name's")
    retrievers = [_retriever(f, r, i, names) for i, r in enumerate(raw.get("retrievers", []), start=1)]
    runs = [_run(f, r, i, names) for i, r in enumerate(raw.get("runs", []), start=1)]
    if not retrievers and not runs:
        f.fail("no [[retrievers]] and no [[runs]]: nothing to evaluate")
    systems = [r.name for r in retrievers] + [r.name for r in runs]
    if len(set(systems)) != len(systems):
        f.fail(f"two retrievers or runs have the same name ({', '.join(systems)}); give them distinct 'name's")
    cfg = GridConfig(path=path.resolve(), text=text, datasets=datasets, retrievers=retrievers, runs=runs, options=dict(options))
    _grid_settings(f, grid, cfg)
    return cfg


def _grid_settings(f: _File, grid: dict[str, Any], cfg: GridConfig) -> None:
    """Every ``[grid]`` setting of the file, checked against its declaration, into ``cfg``; then
    what ties settings together (seed or seeds, primary among the measures, depth ≥ cut-offs)."""
    from sourcebias.evaluation.measures import measure_grid

    for s in GRID_SETTINGS:
        setattr(cfg, s.name, f.value(grid, s, "[grid]", "grid"))
    if "seed" in grid and "seeds" in grid:
        f.fail(
            f"[grid].seeds: give either seed = N (line {key_line(f.text, 'seed', 'grid')}) or seeds = [..], not both (seed = N is seeds = [N])", "seeds", "grid"
        )
    cfg.seeds = list(cfg.seeds) if "seeds" in grid else [cfg.seed]
    cfg.seed = cfg.seeds[0]
    cfg.name = str(cfg.name or f.path.stem)
    if cfg.cache_dir is not None:
        cd = Path(cfg.cache_dir).expanduser()
        cfg.cache_dir = (cd if cd.is_absolute() else f.path.parent / cd).resolve()
    try:
        ms = measure_grid(cfg.measures, cfg.cutoffs)
    except ConfigError as exc:
        f.fail(f"[grid]: {exc}", "measures", "grid")
    _check_primary(cfg, ms, f, given="primary" in grid)
    if cfg.depth < max(m.cutoff for m in ms):
        f.fail(f"[grid].depth {cfg.depth} is smaller than the largest cut-off", "depth", "grid")
    if cfg.depth < cfg.ndsr_k:  # ΔNDSR@k of rankings cut above k would be ΔNDSR@depth under k's name
        f.fail(f"[grid].depth {cfg.depth} is smaller than the ΔNDSR cut-off [grid].ndsr_k {cfg.ndsr_k}", "ndsr_k" if "ndsr_k" in grid else "depth", "grid")


def _dataset(f: _File, d: Any, i: int) -> DatasetEntry:
    """The ``i``-th ``[[datasets]]`` entry, checked; paths relative to the grid file."""
    where = f"datasets[{i}]"
    f.keys(d, DATASET_KEYS, where, "datasets", i)
    if "path" not in d:
        f.fail(f"{where}: 'path' is required (the dataset folder)", None)
    base = f.path.parent
    irds = str(d["path"]).startswith("irds:")  # the human side through ir_datasets, twins beside it
    p = Path(f.typed(d["path"], str, where, "path", "datasets", i)).expanduser()
    p = p if (p.is_absolute() or irds) else (base / p)
    twins = Path(f.typed(d["twins"], str, where, "twins", "datasets", i)).expanduser() if "twins" in d else None
    twins = (twins if twins.is_absolute() else base / twins).resolve() if twins is not None else None
    sources = d.get("sources")
    if sources is not None and not (isinstance(sources, list) and all(isinstance(s, str) for s in sources)):
        f.fail(f"{where}.sources: expected a list of source names", "sources", "datasets", i)
    p, default_name = (p, str(d["path"])[len("irds:") :].replace("/", "-")) if irds else _dataset_folder(f, p, str(d["path"]), i)
    return DatasetEntry(
        p, str(d.get("name") or default_name), str(d.get("split", "test")), tuple(sources) if sources else None, str(d.get("human_source", "human")), twins
    )


def _dataset_folder(f: _File, p: Path, given: str, i: int) -> tuple[Path, str]:
    """The folder of a ``[[datasets]]`` path (relative to the grid file) and its default name; a
    known dataset's name (``nq-utd``) is that dataset, as on the command line."""
    from sourcebias.core.errors import ConfigError
    from sourcebias.data.dataset import resolve_in

    try:
        folder, name = resolve_in(given, f.path.parent)
    except ConfigError as exc:  # known, but not downloaded yet
        f.fail(f"datasets[{i}].path: {exc}", "path", "datasets", i)
    return folder, name or folder.name


def _retriever(f: _File, r: Any, i: int, names: list[str]) -> RetrieverEntry:
    """The ``i``-th ``[[retrievers]]`` entry, checked (its Ray resources against their declarations)."""
    from sourcebias.retrieval.registry import short_name, split_label

    where = f"retrievers[{i}]"
    f.keys(r, RETRIEVER_KEYS, where, "retrievers", i)
    if "spec" not in r:
        f.fail(f"{where}: 'spec' is required (a --retriever specification, e.g. bm25)")
    label, spec = split_label(f.typed(r["spec"], str, where, "spec", "retrievers", i))  # "LABEL=SPEC" as on the command line
    if label is not None and r.get("name") is not None and str(r["name"]) != label:
        f.fail(f"{where}: two names, '{r['name']}' (name) and '{label}' (LABEL= of the spec); give one", "name", "retrievers", i)
    only = r.get("datasets")
    if only is not None:
        if not (isinstance(only, list) and only and all(isinstance(x, str) for x in only)):
            f.fail(f"{where}.datasets: expected a non-empty list of dataset names, got {only!r}", "datasets", "retrievers", i)
        unknown = [x for x in only if x not in names]
        if unknown:
            f.fail(f"{where}.datasets: {', '.join(map(repr, unknown))} is not a dataset of this grid ({', '.join(names)})", "datasets", "retrievers", i)
    ray = {s.name: f.value(r, s, where, "retrievers", i) for s in RETRIEVER_SETTINGS}
    return RetrieverEntry(
        spec,
        str(r.get("name") or label or short_name(spec)),
        float(ray["gpus"]),
        float(ray["cpus"]),
        int(ray["encode_workers"]),
        tuple(only) if only is not None else None,
    )


def _run(f: _File, r: Any, i: int, names: list[str]) -> RunEntry:
    """The ``i``-th ``[[runs]]`` entry, checked; paths relative to the grid file."""
    where = f"runs[{i}]"
    f.keys(r, RUN_KEYS, where, "runs", i)
    for k in ("name", "dataset", "path"):
        if k not in r:
            f.fail(f"{where}: '{k}' is required")
    if r["dataset"] not in names:
        f.fail(f"{where}.dataset: '{r['dataset']}' is not a dataset of this grid ({', '.join(names)})", "dataset", "runs", i)
    base = f.path.parent
    rp = Path(r["path"]).expanduser()
    dn = Path(r["docnos"]).expanduser() if r.get("docnos") else None
    labels = r.get("source_labels") or {}
    if not isinstance(labels, dict):
        f.fail(f"{where}.source_labels: expected a table source = label", "source_labels", "runs", i)
    return RunEntry(
        str(r["name"]),
        str(r["dataset"]),
        (rp if rp.is_absolute() else base / rp).resolve(),
        None if dn is None else (dn if dn.is_absolute() else base / dn).resolve(),
        r.get("docno_pattern"),
        tuple(sorted((str(k), str(v)) for k, v in labels.items())),
    )


def _check_primary(cfg: GridConfig, ms: list, f: _File, given: bool = True) -> None:
    """``primary`` canonicalised (``ndcg@3`` -> ``NDCG@3``) and required among the grid's
    measures and cut-offs, as a measure with labels (its Relative Δ is the report's headline).
    Not given, it is NDCG@3 when the grid has it, else the grid's first measure with labels."""
    from sourcebias.evaluation.measures import parse_measure

    targets = [m for m in ms if m.scope == "target"]
    if not targets:
        f.fail("[grid].measures: no measure with relevance labels (NDCG, MAP, Recall, P): Relative Δ and the report need one", "measures", "grid")
    if not given and parse_measure(cfg.primary) not in ms:
        cfg.primary = str(targets[0])
    try:
        primary = parse_measure(cfg.primary)
    except ConfigError as exc:
        f.fail(f"[grid].primary: {exc}", "primary", "grid")
    if primary not in ms:
        f.fail(f"[grid].primary: {primary} is not among the grid's measures x cutoffs ({', '.join(map(str, ms))})", "primary", "grid")
    if primary.scope != "target":
        f.fail(
            f"[grid].primary: {primary} needs no labels and has no human/LLM target; choose one of {', '.join(str(m) for m in ms if m.scope == 'target')}",
            "primary",
            "grid",
        )
    cfg.primary = str(primary)


def cell_hash(settings: dict[str, Any], dataset_fingerprint: dict[str, Any], system: dict[str, Any]) -> str:
    """The identity of a cell's results (see the module docstring)."""
    from sourcebias.core.version import __version__

    body = {"settings": settings, "dataset": dataset_fingerprint, "system": system, "sourcebias": __version__}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def entry_dict(entry: Any) -> dict[str, Any]:
    return json.loads(json.dumps(asdict(entry), default=str))
