"""How a dataset is loaded: one value object, saved with every result and used by every reload.

:func:`sourcebias.data.load_dataset` takes these options (as a :class:`DatasetOptions` or as
keyword arguments); the loaded :class:`~sourcebias.data.dataset.Dataset` keeps them, its
``describe()`` writes them (``"options"``) into ``result.json`` and ``manifest.json``, and every
later command that loads the dataset of a result again (``EvaluationResult.to_ranx()``, ``power``,
``audit``, grids) reads them back with :func:`recorded_options`, so a dataset evaluated with, say,
``empty_text="skip"`` is reloaded the same way without repeating the option by hand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from sourcebias.core.errors import ConfigError

HUMAN = "human"
ON_PROBLEM = ("error", "skip")
ON_UNKNOWN_FILE = ("error", "note")
ORPHAN_RULES = ("drop", "keep")

#: what a result written before the options were recorded is reloaded with (and says so)
NOT_RECORDED = (
    "the result does not record how its dataset was loaded (written before sourcebias recorded it): reloaded with the default "
    "options (unknown judgements, empty texts and unknown files are errors), the split, sources and orphan rule it does record"
)


@dataclass(frozen=True)
class DatasetOptions:
    """The options of :func:`~sourcebias.data.load_dataset` (every field has the default it uses).

    Attributes:
        split: Which ``qrels/<split>.tsv`` to use; ``None`` loads and validates the corpus and
            queries only (no judgements).
        sources: Sources to load (``None``: all). The human source is read for validation even
            when not chosen.
        human_source: Name of the original (human-written) source; other sources are its twins.
        unknown_qrels: ``"error"`` or ``"skip"`` (and count) judgements naming unknown documents
            or queries.
        empty_text: ``"error"`` or ``"skip"`` (and count) documents with empty text. A skipped
            original takes its twins and its judgements with it (counted too).
        unknown_files: ``"error"`` or ``"note"``: a file among the corpus files that is not one
            (see :func:`~sourcebias.data.dataset.detect_layout`).
        orphans: ``"drop"``: a judged original without a copy in every loaded source loses its
            judgements (counted; :mod:`sourcebias.data.pairing`); ``"keep"``: they stay.
        twins: With an ``irds:`` dataset, the folder of its LLM twins.
    """

    split: str | None = "test"
    sources: tuple[str, ...] | None = None
    human_source: str = HUMAN
    unknown_qrels: str = "error"
    empty_text: str = "error"
    unknown_files: str = "error"
    orphans: str = "drop"
    twins: str | None = None

    def __post_init__(self) -> None:
        if self.sources is not None and not isinstance(self.sources, tuple):
            if isinstance(self.sources, str):
                raise ConfigError(f"sources must be a list of source names, got the string {self.sources!r}")
            object.__setattr__(self, "sources", tuple(dict.fromkeys(self.sources)) or None)
        if self.twins is not None and not isinstance(self.twins, str):
            object.__setattr__(self, "twins", str(self.twins))
        for name, allowed in (("unknown_qrels", ON_PROBLEM), ("empty_text", ON_PROBLEM), ("unknown_files", ON_UNKNOWN_FILE), ("orphans", ORPHAN_RULES)):
            value = getattr(self, name)
            if value not in allowed:
                raise ConfigError(f"{name} must be {' or '.join(repr(a) for a in allowed)}, got {value!r}")

    def with_changes(self, **changes: Any) -> DatasetOptions:
        """A copy with some options changed.

        Args:
            **changes: Options by name, e.g. ``split="dev"``.

        Returns:
            The new options (checked like any others: a value an option does not take is a ConfigError).

        Raises:
            TypeError: An unknown option name (the known ones are listed).
        """
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TypeError(f"unknown dataset option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The options as plain JSON values.

        Returns:
            ``{option: value}`` (``sources`` a list).
        """
        out = asdict(self)
        out["sources"] = list(self.sources) if self.sources is not None else None
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DatasetOptions:
        """Options from :meth:`to_dict`'s form.

        Args:
            data: ``{option: value}``.

        Returns:
            The options.

        Raises:
            ConfigError: An unknown key (named), or a value an option does not take.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown dataset option(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        return cls(**dict(data))


def recorded_options(
    dataset: Mapping[str, Any] | None, parameters: Mapping[str, Any] | None = None, *, sources: Sequence[str] | None = None
) -> tuple[DatasetOptions, str]:
    """``(options, note)``.

    How the dataset of a result was loaded, from the result's ``dataset`` record (its ``describe()``)
    and ``parameters``.

    Args:
        dataset: The result's dataset record (``result.dataset``).
        parameters: The result's parameters (older results keep the orphan rule there).
        sources: The sources the result holds; when given they replace the recorded choice, so
            the reload holds the same sources even if the folder gained one since.

    Returns:
        The options, and ``""`` when they were recorded, else :data:`NOT_RECORDED` (the result
        predates the record: defaults, with the split, human source and orphan rule it records).
    """
    dataset = dataset or {}
    saved = dataset.get("options")
    note = ""
    if isinstance(saved, Mapping):
        options = DatasetOptions.from_dict(saved)
    else:
        orphans = (parameters or {}).get("orphans") or (dataset.get("orphans") or {}).get("policy") or "drop"
        options = DatasetOptions(split=dataset.get("split") or None, human_source=dataset.get("human_source") or HUMAN, orphans=str(orphans))
        note = NOT_RECORDED
    if sources is not None:
        options = options.with_changes(sources=tuple(sources))
    return options, note
