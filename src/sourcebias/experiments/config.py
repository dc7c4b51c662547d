"""Experiment grids: a TOML file naming datasets, retrievers (and runs), measures and settings.

Example (every key but ``datasets[].path`` and ``retrievers[].spec`` is optional)::

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

    [[runs]]                             # a run made by another system, for one dataset
    name = "pyserini-bm25"
    dataset = "nq-utd"
    path = "runs/nq-utd.trec"
    # docnos = "runs/docnos.tsv"  or  docno_pattern = "{doc_id}-{source}"; source_labels = {...}

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
from typing import Any

from sourcebias.core.errors import ConfigError, DataError

GRID_KEYS = {"name", "measures", "cutoffs", "depth", "seed", "seeds", "sole", "significance_resamples", "bootstrap_resamples", "confidence", "correction", "primary", "cache_dir", "orphans"}
DATASET_KEYS = {"path", "name", "split", "sources", "human_source", "twins"}
RETRIEVER_KEYS = {"spec", "name", "gpus", "cpus", "encode_workers", "datasets"}
RUN_KEYS = {"name", "dataset", "path", "docnos", "docno_pattern", "source_labels"}
OPTION_KEYS = {"batch_size", "device", "max_length", "rerank_depth"}
CORRECTIONS = ("holm", "fdr_bh", "bonferroni", "none")


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


@dataclass
class GridConfig:
    """A parsed and validated grid configuration (see the module docstring)."""

    path: Path
    text: str
    name: str
    datasets: list[DatasetEntry]
    retrievers: list[RetrieverEntry]
    runs: list[RunEntry] = field(default_factory=list)
    measures: list[str] = field(default_factory=lambda: ["NDCG", "MAP", "Recall", "P", "Share"])
    cutoffs: list[int] = field(default_factory=lambda: [1, 3, 5, 10])
    depth: int = 1000
    seed: int = 0  # the first of ``seeds``
    seeds: list[int] = field(default_factory=lambda: [0])
    sole: bool = True
    significance_resamples: int = 10_000
    bootstrap_resamples: int = 2_000
    confidence: float = 0.95
    correction: str = "holm"
    primary: str = "NDCG@3"
    orphans: str = "drop"
    cache_dir: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def several_seeds(self) -> bool:
        """Whether each cell runs once per seed (``seeds`` with more than one seed)."""
        return len(self.seeds) > 1

    def settings(self, seed: int | None = None) -> dict[str, Any]:
        """What every cell shares and what decides its results (beyond dataset and retriever),
        for one of the grid's seeds (default: the first, the only one of a one-seed grid)."""
        return {
            "measures": self.measures,
            "cutoffs": self.cutoffs,
            "depth": self.depth,
            "seed": self.seed if seed is None else int(seed),
            "sole": self.sole,
            "significance_resamples": self.significance_resamples,
            "orphans": self.orphans,
            "options": self.options,
        }

    def load_dataset(self, entry: DatasetEntry | dict[str, Any]):
        """The dataset of a grid entry (a :class:`DatasetEntry` or its JSON form, as a cell task
        gets it), loaded with the grid's orphan policy; the grid's cells and its report both load
        through here."""
        return load_grid_dataset(entry, self.orphans)


def load_grid_dataset(entry: DatasetEntry | dict[str, Any], orphans: str = "drop"):
    """``load_dataset`` of a grid's dataset entry with the grid's orphan policy."""
    from sourcebias.data import DatasetOptions, load_dataset

    d = entry_dict(entry) if isinstance(entry, DatasetEntry) else entry
    return load_dataset(d["path"], DatasetOptions(split=d["split"], sources=d["sources"], human_source=d["human_source"], orphans=orphans, twins=d.get("twins")))


def _key_line(text: str, key: str) -> int | None:
    """The line of ``key = ...`` in a TOML text (for error messages), if there is one."""
    import re

    for i, line in enumerate(text.splitlines(), start=1):
        if re.match(rf"\s*{re.escape(key)}\s*=", line):
            return i
    return None


def _check_keys(table: dict[str, Any], allowed: set[str], where: str, path: Path) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise DataError(path, f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")


def _typed(value: Any, typ: type | tuple[type, ...], where: str, path: Path) -> Any:
    if isinstance(value, bool) and typ in (int, float, (int, float)):
        raise DataError(path, f"{where}: expected {getattr(typ, '__name__', 'a number')}, got {value!r}")
    if not isinstance(value, typ):
        name = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
        raise DataError(path, f"{where}: expected {name}, got {value!r}")
    return value


def load_grid_config(path: str | Path) -> GridConfig:
    """Read and validate a grid TOML file; errors name the file, the line (TOML syntax) or the
    entry (``retrievers[2].spec``) and what is wrong."""
    from sourcebias.core.tomlfile import read_toml

    path, text, raw = read_toml(path, "grid configuration")
    _check_keys(raw, {"grid", "options", "datasets", "retrievers", "runs"}, "top level", path)
    base = path.parent
    grid = raw.get("grid", {})
    _check_keys(grid, GRID_KEYS, "[grid]", path)
    options = raw.get("options", {})
    _check_keys(options, OPTION_KEYS, "[options]", path)

    datasets: list[DatasetEntry] = []
    for i, d in enumerate(raw.get("datasets", [])):
        where = f"datasets[{i + 1}]"
        _check_keys(d, DATASET_KEYS, where, path)
        if "path" not in d:
            raise DataError(path, f"{where}: 'path' is required (the dataset folder)")
        irds = str(d["path"]).startswith("irds:")  # the human side through ir_datasets, twins beside it
        p = Path(_typed(d["path"], str, f"{where}.path", path)).expanduser()
        p = p if (p.is_absolute() or irds) else (base / p)
        twins = Path(_typed(d["twins"], str, f"{where}.twins", path)).expanduser() if "twins" in d else None
        twins = (twins if twins.is_absolute() else base / twins).resolve() if twins is not None else None
        sources = d.get("sources")
        if sources is not None and not (isinstance(sources, list) and all(isinstance(s, str) for s in sources)):
            raise DataError(path, f"{where}.sources: expected a list of source names")
        p, default_name = (p, str(d["path"])[len("irds:") :].replace("/", "-")) if irds else (p.resolve(), p.resolve().name)
        datasets.append(DatasetEntry(p, str(d.get("name") or default_name), str(d.get("split", "test")), tuple(sources) if sources else None, str(d.get("human_source", "human")), twins))
    if not datasets:
        raise DataError(path, "no [[datasets]]: name at least one dataset folder")
    names = [d.name for d in datasets]
    if len(set(names)) != len(names):
        raise DataError(path, f"two datasets have the same name ({', '.join(names)}); give them distinct 'name's")

    retrievers: list[RetrieverEntry] = []
    for i, r in enumerate(raw.get("retrievers", [])):
        where = f"retrievers[{i + 1}]"
        _check_keys(r, RETRIEVER_KEYS, where, path)
        if "spec" not in r:
            raise DataError(path, f"{where}: 'spec' is required (a --retriever specification, e.g. bm25)")
        spec = _typed(r["spec"], str, f"{where}.spec", path)
        only = r.get("datasets")
        if only is not None:
            if not (isinstance(only, list) and only and all(isinstance(x, str) for x in only)):
                raise DataError(path, f"{where}.datasets: expected a non-empty list of dataset names, got {only!r}")
            unknown = [x for x in only if x not in names]
            if unknown:
                raise DataError(path, f"{where}.datasets: {', '.join(map(repr, unknown))} is not a dataset of this grid ({', '.join(names)})")
        retrievers.append(
            RetrieverEntry(
                spec,
                str(r.get("name") or spec),
                float(_typed(r.get("gpus", 0), (int, float), f"{where}.gpus", path)),
                float(_typed(r.get("cpus", 1), (int, float), f"{where}.cpus", path)),
                int(_typed(r.get("encode_workers", 0), int, f"{where}.encode_workers", path)),
                tuple(only) if only is not None else None,
            )
        )
    runs: list[RunEntry] = []
    for i, r in enumerate(raw.get("runs", [])):
        where = f"runs[{i + 1}]"
        _check_keys(r, RUN_KEYS, where, path)
        for k in ("name", "dataset", "path"):
            if k not in r:
                raise DataError(path, f"{where}: '{k}' is required")
        if r["dataset"] not in names:
            raise DataError(path, f"{where}.dataset: '{r['dataset']}' is not a dataset of this grid ({', '.join(names)})")
        rp = Path(r["path"]).expanduser()
        dn = Path(r["docnos"]).expanduser() if r.get("docnos") else None
        labels = r.get("source_labels") or {}
        if not isinstance(labels, dict):
            raise DataError(path, f"{where}.source_labels: expected a table source = label")
        runs.append(
            RunEntry(
                str(r["name"]),
                str(r["dataset"]),
                (rp if rp.is_absolute() else base / rp).resolve(),
                None if dn is None else (dn if dn.is_absolute() else base / dn).resolve(),
                r.get("docno_pattern"),
                tuple(sorted((str(k), str(v)) for k, v in labels.items())),
            )
        )
    if not retrievers and not runs:
        raise DataError(path, "no [[retrievers]] and no [[runs]]: nothing to evaluate")
    systems = [r.name for r in retrievers] + [r.name for r in runs]
    if len({s for s in systems}) != len(systems):
        raise DataError(path, f"two retrievers or runs have the same name ({', '.join(systems)}); give them distinct 'name's")

    correction = str(grid.get("correction", "holm"))
    if correction not in CORRECTIONS:
        raise DataError(path, f"[grid].correction: '{correction}' is not one of {', '.join(CORRECTIONS)}")
    cfg = GridConfig(
        path=path.resolve(),
        text=text,
        name=str(grid.get("name") or path.stem),
        datasets=datasets,
        retrievers=retrievers,
        runs=runs,
        correction=correction,
        options=dict(options),
    )
    for key, typ in (("measures", list), ("cutoffs", list), ("depth", int), ("sole", bool), ("significance_resamples", int), ("bootstrap_resamples", int), ("confidence", float), ("primary", str), ("orphans", str)):
        if key in grid:
            setattr(cfg, key, _typed(grid[key], typ, f"[grid].{key}", path))
    cfg.seeds = _seeds(grid, text, path)
    cfg.seed = cfg.seeds[0]
    if "cache_dir" in grid:
        cd = Path(_typed(grid["cache_dir"], str, "[grid].cache_dir", path)).expanduser()
        cfg.cache_dir = (cd if cd.is_absolute() else base / cd).resolve()
    # Check measures, cut-offs and every retriever specification now, before any work.
    from sourcebias.evaluation.measures import measure_grid, parse_measure

    try:
        ms = measure_grid(cfg.measures, cfg.cutoffs)
    except ConfigError as exc:
        raise DataError(path, f"[grid]: {exc}") from None
    _check_primary(cfg, ms, path, given="primary" in grid)
    if cfg.orphans not in ("drop", "keep"):
        raise DataError(path, f"[grid].orphans: '{cfg.orphans}' is not one of drop, keep", _key_line(text, "orphans"))
    if cfg.depth < max(m.cutoff for m in ms):
        raise DataError(path, f"[grid].depth {cfg.depth} is smaller than the largest cut-off")
    if not 0.5 < cfg.confidence < 1:
        raise DataError(path, f"[grid].confidence must be between 0.5 and 1, got {cfg.confidence}")
    return cfg


def _seeds(grid: dict[str, Any], text: str, path: Path) -> list[int]:
    """The grid's seeds: ``seeds = [..]`` (non-empty, distinct integers) or ``seed = N`` (one
    seed; 0 when neither is given). Errors name the line of the key."""
    if "seed" in grid and "seeds" in grid:
        raise DataError(path, f"[grid].seeds: give either seed = N (line {_key_line(text, 'seed')}) or seeds = [..], not both (seed = N is seeds = [N])", _key_line(text, "seeds"))
    if "seeds" not in grid:
        seed = grid.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise DataError(path, f"[grid].seed: expected int, got {seed!r}", _key_line(text, "seed"))
        return [seed]
    seeds, line = grid["seeds"], _key_line(text, "seeds")
    if not isinstance(seeds, list) or not seeds:
        raise DataError(path, f"[grid].seeds: expected a non-empty list of integers, got {seeds!r}", line)
    bad = [s for s in seeds if isinstance(s, bool) or not isinstance(s, int)]
    if bad:
        raise DataError(path, f"[grid].seeds: expected integers, got {', '.join(map(repr, bad))}", line)
    repeated = sorted({s for s in seeds if seeds.count(s) > 1})
    if repeated:
        raise DataError(path, f"[grid].seeds: seed(s) {', '.join(map(str, repeated))} given more than once; the seeds must be distinct", line)
    return list(seeds)


def _check_primary(cfg: GridConfig, ms: list, path: Path, given: bool = True) -> None:
    """``primary`` canonicalised (``ndcg@3`` -> ``NDCG@3``) and required among the grid's
    measures and cut-offs, as a measure with labels (its Relative Δ is the report's headline).
    Not given, it is NDCG@3 when the grid has it, else the grid's first measure with labels."""
    from sourcebias.evaluation.measures import parse_measure

    targets = [m for m in ms if m.scope == "target"]
    if not targets:
        raise DataError(path, "[grid].measures: no measure with relevance labels (NDCG, MAP, Recall, P): Relative Δ and the report need one", _key_line(cfg.text, "measures"))
    if not given and parse_measure(cfg.primary) not in ms:
        cfg.primary = str(targets[0])
    line = _key_line(cfg.text, "primary")
    try:
        primary = parse_measure(cfg.primary)
    except ConfigError as exc:
        raise DataError(path, f"[grid].primary: {exc}", line) from None
    if primary not in ms:
        raise DataError(path, f"[grid].primary: {primary} is not among the grid's measures x cutoffs ({', '.join(map(str, ms))})", line)
    if primary.scope != "target":
        raise DataError(path, f"[grid].primary: {primary} needs no labels and has no human/LLM target; choose one of {', '.join(str(m) for m in ms if m.scope == 'target')}", line)
    cfg.primary = str(primary)


def cell_hash(settings: dict[str, Any], dataset_fingerprint: dict[str, Any], system: dict[str, Any]) -> str:
    """The identity of a cell's results (see the module docstring)."""
    from sourcebias import __version__

    body = {"settings": settings, "dataset": dataset_fingerprint, "system": system, "sourcebias": __version__}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def entry_dict(entry: Any) -> dict[str, Any]:
    return json.loads(json.dumps(asdict(entry), default=str))
