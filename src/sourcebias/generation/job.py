"""What a rewriting job is made with (:class:`RewriteSettings`), where it reads and writes
(:class:`RewriteTarget`, :func:`resolve_target`), and which documents it covers
(:func:`select_documents`)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sourcebias.core.errors import ConfigError, DataError
from sourcebias.data.corpus import Corpus
from sourcebias.data.dataset import detect_layout
from sourcebias.data.readers import read_qrels
from sourcebias.generation.length import LengthControl
from sourcebias.generation.prompts import PromptTemplate
from sourcebias.generation.rules import cocktail_sample

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


@dataclass
class RewriteSettings:
    """What a twin is made with (recorded in the manifest; see :meth:`fingerprint`).

    ``temperature``/``top_p``: the papers' defaults 0.2 and 1.0. ``seed``: base of the
    per-document seeds (:func:`~sourcebias.generation.rules.document_seed`; ``None`` sends none). ``max_new_tokens_ratio``,
    ``min_new_tokens``, ``max_new_tokens``: the answer budget (:func:`~sourcebias.generation.rules.max_new_tokens_for`).
    ``length_filter``: ``(min_words, max_words)`` or ``None``. ``sample_cap``: Cocktail's
    large-corpus rule or ``None``. ``limit``: only the first ``limit`` (selected) documents.
    ``keep_raw``: store the raw answer in ``metadata.raw``. ``fsync``: fsync every line
    (power-loss safety; a killed process loses nothing flushed even without it).
    ``max_consecutive_failures``: stop the run when that many documents in a row fail.
    ``length_control``: a target length with retries, or ``None``
    (:mod:`sourcebias.generation.length`).
    """

    prompt: PromptTemplate
    temperature: float = 0.2
    top_p: float = 1.0
    seed: int | None = 0
    max_new_tokens_ratio: float = 2.0
    min_new_tokens: int = 64
    max_new_tokens: int = 2048
    length_filter: tuple[int, int] | None = None
    sample_cap: int | None = None
    limit: int | None = None
    keep_raw: bool = False
    fsync: bool = False
    max_consecutive_failures: int = 20
    length_control: LengthControl | None = None

    def validate(self) -> None:
        if not 0.0 <= self.temperature <= 2.0:
            raise ConfigError("--temperature must be between 0 and 2")
        if not 0.0 < self.top_p <= 1.0:
            raise ConfigError("--top-p must be in (0, 1]")
        if self.max_new_tokens_ratio <= 0:
            raise ConfigError("--max-new-tokens-ratio must be positive")
        if not 1 <= self.min_new_tokens <= self.max_new_tokens:
            raise ConfigError("need 1 <= --min-new-tokens <= --max-new-tokens")
        if self.length_filter is not None and not 0 <= self.length_filter[0] <= self.length_filter[1]:
            raise ConfigError("the length filter needs 0 <= min words <= max words")
        if self.limit is not None and self.limit < 1:
            raise ConfigError("--limit must be at least 1")
        if self.max_consecutive_failures < 1:
            raise ConfigError("--max-consecutive-failures must be at least 1")

    def fingerprint(self, model: str) -> dict[str, Any]:
        """The settings that decide a twin's content; a resumed run must match them."""
        return {
            "model": model,
            "prompt": {"template": self.prompt.template, "system": self.prompt.system, "answer_marker": self.prompt.answer_marker},
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
            "max_new_tokens": {"ratio": self.max_new_tokens_ratio, "min": self.min_new_tokens, "max": self.max_new_tokens},
            "length_filter": list(self.length_filter) if self.length_filter else None,
            "sample_cap": self.sample_cap,
            # only when set, so twins made before length control existed resume unchanged
            **({"length_control": self.length_control.fingerprint()} if self.length_control else {}),
        }

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["prompt"] = self.prompt.describe()
        d["length_control"] = self.length_control.describe() if self.length_control else None
        return d


@dataclass
class RewriteTarget:
    """Where the human corpus is read from and the twin written to."""

    human_file: Path
    output: Path
    qrels_files: list[Path] = field(default_factory=list)
    dataset_root: Path | None = None
    layout: str | None = None

    @property
    def state_dir(self) -> Path:
        return self.output.parent / f".{self.output.stem}.state"

    @property
    def failed_file(self) -> Path:
        return self.state_dir / "failed.jsonl"

    @property
    def failed_log(self) -> Path:
        return self.state_dir / "failed.log.jsonl"

    @property
    def settings_file(self) -> Path:
        return self.state_dir / "settings.json"

    @property
    def manifest_file(self) -> Path:
        return self.output.with_name(self.output.stem + ".manifest.json")


def resolve_target(dataset: str | Path, name: str, *, output: str | Path | None = None, human_source: str = "human") -> RewriteTarget:
    """Find the human corpus of ``dataset`` and the twin's path for source ``name``.

    ``dataset`` is a dataset folder (Cocktail layout: the twin goes to ``corpus/<name>.jsonl``;
    KDD layout: ``corpus-<name>.jsonl``) or a corpus ``.jsonl`` file (then ``output`` is
    required). ``output`` overrides the twin's path. A BEIR folder (``corpus.jsonl``) needs
    ``output`` too, since writing ``corpus/<name>.jsonl`` would change its layout.
    """
    if not _NAME.fullmatch(name) or name.endswith(".jsonl"):
        raise ConfigError(f"--name '{name}' is not a usable source name (letters, digits and . _ + -; e.g. smollm2-tmp0.2)")
    if name == human_source:
        raise ConfigError(f"--name '{name}' is the human source's name; choose a name for the twin, e.g. {name}-llm")
    path = Path(dataset)
    if not path.exists():
        raise DataError(path, "dataset folder not found")
    if path.is_file():
        if output is None:
            raise ConfigError(f"{path} is a corpus file: say where the twin goes with --output FILE.jsonl")
        target = RewriteTarget(path, Path(output))
    else:
        layout = detect_layout(path, human_source)
        if human_source not in layout.source_files:
            raise DataError(
                path, f"no source named '{human_source}' to rewrite; sources found: {', '.join(layout.source_files)} (name the original with --human-source)"
            )
        human = layout.source_files[human_source]
        qrels = sorted((path / "qrels").glob("*.tsv")) if (path / "qrels").is_dir() else []
        if output is not None:
            out = Path(output)
        elif layout.layout == "cocktail":
            out = path / "corpus" / f"{name}.jsonl"
        elif layout.layout == "kdd":
            out = path / f"corpus-{name}.jsonl"
        else:
            raise ConfigError(
                f"{path} is a plain BEIR folder (corpus.jsonl). Give --output FILE.jsonl, or turn it into Cocktail's layout first: "
                f"mkdir {path}/corpus && mv {path}/corpus.jsonl {path}/corpus/{human_source}.jsonl"
            )
        target = RewriteTarget(human, out, qrels, path, layout.layout)
    if target.output.suffix != ".jsonl":
        raise ConfigError(f"--output {target.output} must end in .jsonl")
    if target.output.resolve() == target.human_file.resolve():
        raise ConfigError("the output would overwrite the human corpus")
    return target


def _labelled_ids(qrels_files: list[Path]) -> set[str]:
    ids: set[str] = set()
    for p in qrels_files:
        q = read_qrels(p, known_docs=None, known_queries=None)
        for qid in q:
            ids.update(q[qid])
    return ids


def select_documents(corpus: Corpus, settings: RewriteSettings, qrels_files: list[Path]) -> list[int]:
    """Positions of the documents this twin covers: Cocktail's sample (if set), then ``limit``."""
    ids = corpus.doc_ids
    positions = list(range(len(ids)))
    if settings.sample_cap is not None and len(ids) > settings.sample_cap:
        labelled = _labelled_ids(qrels_files)
        chosen = set(cocktail_sample(ids, labelled, settings.sample_cap, seed=settings.seed or 0))
        positions = [i for i in positions if ids[i] in chosen]
    if settings.limit is not None:
        positions = positions[: settings.limit]
    return positions
