"""A feedback-loop simulation's TOML file, read and checked before any work.

Example (every key but ``dataset.path``, ``retrievers`` and ``generator.model`` is optional)::

    [simulation]
    name = "nq-utd-loop"
    rounds = 5                 # rounds of writing after round 0 (the starting corpus)
    queries_per_round = 10     # queries whose results are written from, drawn anew each round (seeded)
    k = 10                     # the top k a reader sees: what is written from and what is measured
    depth = 100                # documents kept per ranking
    seed = 42                  # query draws, generation seeds, the tie rule
    eval_queries = 0           # queries measured each round: 0 = every judged query of the split
    cache_dir = "cache"        # embedding store (default $SOURCEBIAS_CACHE)

    [dataset]
    path = "../shared/data/nq-utd"   # relative to this file
    split = "test"
    sources = ["human"]              # the starting corpus (default: the human source only)

    [[retrievers]]
    spec = "bm25"
    [[retrievers]]
    spec = "minilm"

    [generator]
    model = "smollm2"          # as `sourcebias generate --model` (a server: "openai:MODEL@http://host:8000/v1")
    name = "smollm2"           # new documents of round r get the source "<name>-round<r>"
    write = "answer"           # "answer": an answer to the query from the top k; "rewrite": the top document rewritten
    context = 3                # answer: how many of the top k go into the prompt
    prompt = "kdd"             # rewrite: a `generate --prompt`; answer: "rag" or a FILE with {query} and {passages}
    temperature = 0.2
    max_new_tokens = 256

    [intervention]
    kind = "none"              # "fair": exposure parity of human vs generated text in every top k;
                               # "detector": generated documents flagged by the audit's detector are not added
    # detector = "../shared/data/nfcorpus,dev"; threshold = "youden"
    # fair_target = "proportional" (default: each group's exposure in proportion to its share of
    # the candidates) or "equal" (half each: it promotes generated text while that is the minority)

Each retriever runs its own loop (its readers write from its rankings), from the same starting
corpus, with the same queries drawn in each round.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sourcebias.core.errors import ConfigError
from sourcebias.core.tomlfile import TomlFile

SIM_KEYS = {"name", "rounds", "queries_per_round", "k", "depth", "seed", "eval_queries", "cache_dir"}
DATASET_KEYS = {"path", "split", "sources", "human_source"}
RETRIEVER_KEYS = {"spec", "name"}
GENERATOR_KEYS = {
    "model",
    "backend",
    "name",
    "write",
    "context",
    "prompt",
    "system",
    "temperature",
    "top_p",
    "max_new_tokens",
    "base_url",
    "api_key_env",
    "completions",
    "concurrency",
    "timeout",
    "threads",
    "device",
}
INTERVENTION_KEYS = {"kind", "detector", "threshold", "fair_target", "detector_model", "max_pairs"}
WRITES = ("answer", "rewrite")
INTERVENTIONS = ("none", "fair", "detector")


@dataclass(frozen=True)
class GeneratorEntry:
    """Who writes the new documents and how (see the module docstring)."""

    model: str
    backend: str = "local"
    name: str = ""
    write: str = "answer"
    context: int = 3
    prompt: str = ""
    system: str | None = None
    temperature: float = 0.2
    top_p: float = 1.0
    max_new_tokens: int = 256
    base_url: tuple[str, ...] = ()
    api_key_env: str | None = None
    completions: bool = False
    concurrency: int = 4
    timeout: float = 300.0
    threads: int | None = None
    device: str | None = None


@dataclass(frozen=True)
class InterventionEntry:
    """What is done between rounds: nothing, exposure parity, or a detector filter."""

    kind: str = "none"
    detector: str | None = None  # DIR[,split]: labelled twins the built-in detector is trained on
    threshold: str | float = "youden"
    fair_target: str = "proportional"  # "equal" would promote generated text while it is the minority
    detector_model: str = "minilm"
    max_pairs: int | None = 400


@dataclass
class SimulationConfig:
    """A parsed and checked simulation configuration."""

    path: Path
    text: str
    name: str
    dataset: Path
    split: str
    sources: tuple[str, ...] | None
    human_source: str
    retrievers: list[tuple[str, str]]  # (name, spec)
    generator: GeneratorEntry
    intervention: InterventionEntry = field(default_factory=InterventionEntry)
    rounds: int = 5
    queries_per_round: int = 10
    k: int = 10
    depth: int = 100
    seed: int = 0
    eval_queries: int = 0
    cache_dir: Path | None = None

    def digest(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def loop_settings(self) -> dict[str, Any]:
        """Everything that decides a round's documents and rankings (its hash); ``rounds`` is not
        in it, so that a run extended by more rounds reuses the finished ones."""
        gen = asdict(self.generator)
        for key in ("concurrency", "timeout", "threads", "device", "api_key_env", "base_url"):
            gen.pop(key)  # how the work is spread, not what it computes
        return {
            "dataset": str(self.dataset),
            "split": self.split,
            "sources": list(self.sources) if self.sources else None,
            "human_source": self.human_source,
            "queries_per_round": self.queries_per_round,
            "k": self.k,
            "depth": self.depth,
            "seed": self.seed,
            "eval_queries": self.eval_queries,
            "generator": gen,
            "intervention": asdict(self.intervention),
        }

    def settings_hash(self, retriever: str) -> str:
        spec = dict(self.retrievers)[retriever]
        blob = json.dumps({"retriever": spec, **self.loop_settings()}, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    def source_name(self, round_: int) -> str:
        return f"{self.generator.name}-round{round_}"


def load_simulation_config(path: str | Path) -> SimulationConfig:
    """Read and check a simulation TOML file (see the module docstring)."""
    from sourcebias.core.tomlfile import read_toml

    path, text, raw = read_toml(path, "simulation configuration")
    c = TomlFile(path, text)
    c.keys_at(raw, {"simulation", "dataset", "retrievers", "generator", "intervention"}, "the file")
    sim = c.keys_at(raw.get("simulation", {}), SIM_KEYS, "[simulation]")
    dataset, split, sources, human = _dataset(c, raw, path)
    retrievers = _retrievers(c, raw)
    generator = _generator(c, raw)
    intervention = _intervention(c, raw, path)
    cfg = SimulationConfig(
        path=path,
        text=text,
        name=c.get(sim, "name", str, "[simulation]", path.stem),
        dataset=dataset,
        split=split,
        sources=sources,
        human_source=human,
        retrievers=retrievers,
        generator=generator,
        intervention=intervention,
        rounds=c.get(sim, "rounds", int, "[simulation]", 5, 1),
        queries_per_round=c.get(sim, "queries_per_round", int, "[simulation]", 10, 1),
        k=c.get(sim, "k", int, "[simulation]", 10, 1),
        depth=c.get(sim, "depth", int, "[simulation]", 100, 1),
        seed=c.get(sim, "seed", int, "[simulation]", 0),
        eval_queries=c.get(sim, "eval_queries", int, "[simulation]", 0, 0),
    )
    if "cache_dir" in sim:
        cfg.cache_dir = (path.parent / c.get(sim, "cache_dir", str, "[simulation]")).resolve()
    if cfg.depth < cfg.k:
        c.fail_at("[simulation].depth", f"must be at least k ({cfg.k}), got {cfg.depth}", "depth")
    if generator.write == "answer" and generator.context > cfg.k:
        c.fail_at("[generator].context", f"the prompt can hold at most the top k ({cfg.k}) documents, got {generator.context}", "context")
    return cfg


def _dataset(c: TomlFile, raw: dict[str, Any], path: Path) -> tuple[Path, str, tuple[str, ...] | None, str]:
    if "dataset" not in raw:
        c.fail_at("[dataset]", "missing: the dataset whose human corpus starts the loop (path = DIR)")
    d = c.keys_at(raw["dataset"], DATASET_KEYS, "[dataset]")
    if "path" not in d:
        c.fail_at("[dataset]", "missing path = DIR")
    from sourcebias.core.errors import ConfigError
    from sourcebias.data.dataset import resolve_in

    try:
        folder, _ = resolve_in(c.get(d, "path", str, "[dataset]"), path.parent)  # a folder, or a known dataset's name
    except ConfigError as exc:
        c.fail_at("[dataset].path", str(exc), "path")
    if not folder.is_dir():
        c.fail_at("[dataset].path", f"{folder} is not a folder", "path")
    sources = c.get(d, "sources", list, "[dataset]")
    if sources is not None and (not sources or not all(isinstance(s, str) for s in sources)):
        c.fail_at("[dataset].sources", f"expected a non-empty list of source names, got {sources!r}", "sources")
    return folder, c.get(d, "split", str, "[dataset]", "test"), tuple(sources) if sources else None, c.get(d, "human_source", str, "[dataset]", "human")


def _retrievers(c: TomlFile, raw: dict[str, Any]) -> list[tuple[str, str]]:
    from sourcebias.retrieval.specs import get_kind, split_stage

    entries = raw.get("retrievers")
    if not isinstance(entries, list) or not entries:
        c.fail_at("[[retrievers]]", 'at least one retriever is needed (spec = "bm25")', "retrievers")
    out: list[tuple[str, str]] = []
    for i, e in enumerate(entries, start=1):
        e = c.keys_at(e, RETRIEVER_KEYS, f"retrievers[{i}]")
        if "spec" not in e:
            c.fail_at(f"retrievers[{i}]", 'missing spec = "..."')
        spec = c.get(e, "spec", str, f"retrievers[{i}]")
        kind, _ = split_stage(spec.split(">>")[0])
        if get_kind(kind) is None:
            c.fail_at(f"retrievers[{i}].spec", f"unknown retriever '{kind}' (sourcebias retrievers lists them)", "spec")
        name = c.get(e, "name", str, f"retrievers[{i}]", spec)
        if not re.fullmatch(r"[A-Za-z0-9._:,=>-]+", name) or any(name == n for n, _ in out):
            c.fail_at(f"retrievers[{i}].name", f"'{name}' is a duplicate or has characters a folder name cannot hold", "name")
        out.append((name, spec))
    return out


def _generator(c: TomlFile, raw: dict[str, Any]) -> GeneratorEntry:
    if "generator" not in raw:
        c.fail_at("[generator]", 'missing: the model that writes each round\'s documents (model = "smollm2")')
    g = c.keys_at(raw["generator"], GENERATOR_KEYS, "[generator]")
    w = "[generator]"
    if "model" not in g:
        c.fail_at(w, 'missing model = "..."')
    spec = _model_spec(c, g, w)
    model, backend, base_url = spec.model, spec.backend, list(spec.urls)
    name = c.get(g, "name", str, w, re.sub(r"[^A-Za-z0-9._-]+", "-", Path(model).stem if model.endswith(".gguf") else model.split("/")[-1]))
    write = c.choice(g, "write", WRITES, w, "answer")
    temperature = c.get(g, "temperature", (int, float), w, 0.2, 0)
    return GeneratorEntry(
        model=model,
        backend=backend,
        name=name,
        write=write,
        context=c.get(g, "context", int, w, 3, 1),
        prompt=c.get(g, "prompt", str, w, "rag" if write == "answer" else "kdd"),
        system=c.get(g, "system", str, w),
        temperature=float(temperature),
        top_p=float(c.get(g, "top_p", (int, float), w, 1.0, 0)),
        max_new_tokens=c.get(g, "max_new_tokens", int, w, 256, 1),
        base_url=tuple(base_url),
        api_key_env=c.get(g, "api_key_env", str, w),
        completions=c.get(g, "completions", bool, w, False),
        concurrency=c.get(g, "concurrency", int, w, 4, 1),
        timeout=float(c.get(g, "timeout", (int, float), w, 300.0, 1)),
        threads=c.get(g, "threads", int, w, None, 1),
        device=c.get(g, "device", str, w),
    )


def _model_spec(c: TomlFile, g: dict[str, Any], w: str) -> Any:
    """``model`` as a model spec (:func:`sourcebias.llmcalls.parse_model_spec`); the 0.2.0 keys
    ``backend = "openai"`` and ``base_url = [...]`` are read as ``model = "openai:M@URL"`` with a
    deprecation warning."""
    from sourcebias.llmcalls.spec import parse_model_spec, server_spec

    text = c.get(g, "model", str, w)
    try:
        spec = parse_model_spec(text, what=f"{w}.model")
    except ConfigError as exc:
        c.fail_at(f"{w}.model", str(exc), "model")
    base_url = c.get(g, "base_url", (str, list), w, [])
    base_url = [base_url] if isinstance(base_url, str) else base_url
    if "backend" not in g and not base_url:
        return spec
    backend = c.choice(g, "backend", ("local", "openai"), w, "openai" if base_url else "local")
    if base_url and (spec.backend != "local" or backend != "openai"):
        c.fail_at(f"{w}.base_url", 'base_url goes with backend = "openai" and a model name; write model = "openai:MODEL@URL" instead', "base_url")
    if backend == "openai" and spec.backend == "local":
        if not base_url:
            c.fail_at(f"{w}.backend", 'a server is named in the model: model = "openai:MODEL@http://HOST:PORT/v1"', "backend")
        old = f'{w} backend = "openai", base_url = {base_url}, model = "{text}"'
        return server_spec(text, base_url, old=old, new='model = "{spec}"')
    if "backend" in g:
        from sourcebias.core.moved import deprecated

        deprecated(f'{w} backend = "{backend}"', f'model = "{spec}" alone')
    return spec


def _intervention(c: TomlFile, raw: dict[str, Any], path: Path) -> InterventionEntry:
    t = c.keys_at(raw.get("intervention", {}), INTERVENTION_KEYS, "[intervention]")
    w = "[intervention]"
    kind = c.choice(t, "kind", INTERVENTIONS, w, "none")
    detector = c.get(t, "detector", str, w)
    if kind == "detector" and not detector:
        c.fail_at(f"{w}.detector", 'kind = "detector" needs detector = "DIR[,split]": labelled twins to train and calibrate it on', "kind")
    if detector and kind != "detector":
        c.fail_at(f"{w}.detector", f'only used with kind = "detector" (kind is "{kind}")', "detector")
    if detector:
        head, sep, tail = detector.rpartition(",")
        folder = path.parent / (head if sep and "/" not in tail else detector)
        detector = str(folder.resolve()) + (f",{tail}" if sep and "/" not in tail else "")
    threshold = c.get(t, "threshold", (str, int, float), w, "youden")
    fair_target = c.choice(t, "fair_target", ("equal", "proportional"), w, "proportional")
    return InterventionEntry(
        kind=kind,
        detector=detector,
        threshold=threshold,
        fair_target=fair_target,
        detector_model=c.get(t, "detector_model", str, w, "minilm"),
        max_pairs=c.get(t, "max_pairs", int, w, 400, 10),
    )
