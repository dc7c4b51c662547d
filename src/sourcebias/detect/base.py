"""What a zero-shot detector is, and the registry of detector kinds (``--detector KIND:...``).

A detector kind is one :class:`DetectorKind` subclass and one :func:`register_detector` line, the
shape of the measures' and statistics' registries: it says how its spec is written (``usage``),
what its score is (``description``, ``reference``), which ``key=value`` options it takes, and
builds a :class:`Detector` from a parsed spec (:meth:`DetectorKind.build`). The command line's
help, ``sourcebias detect``'s error for an unknown kind and the reference page are written from
the registry, so a new kind needs no edit anywhere else.

Where kinds come from: the built-in modules of :data:`BUILTIN_MODULES`, the plugin modules of
:mod:`sourcebias.core.plugins` (``$SOURCEBIAS_PLUGINS``, entry points of ``sourcebias.plugins``)
and the entry points of the group :data:`GROUP` (``sourcebias.detectors``: how an installed
package adds a detector), all imported on the first lookup; importing a module runs its
registrations. Importing this module imports no kind, so ``sourcebias.detect`` stays cheap.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from sourcebias.core.errors import ConfigError

#: the entry-point group of third-party detector modules
GROUP = "sourcebias.detectors"
#: modules of this package that register detector kinds (imported on the first lookup)
BUILTIN_MODULES = ("sourcebias.detect.criteria", "sourcebias.detect.rewrites")


@runtime_checkable
class Detector(Protocol):
    """A built detector: one raw score per text (higher: more likely LLM-written; NaN where a
    text cannot be scored), and what it is (written to ``detect.json`` and manifests)."""

    spec: str

    def score_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Raw scores of ``texts``."""
        ...

    def describe(self) -> dict[str, Any]:
        """The detector's identity: spec, kind, what its score is, models and options."""
        ...


@dataclass(frozen=True)
class DetectorRequest:
    """A parsed spec ``KIND:HEAD[,key=value...]`` and how the models run: what
    :meth:`DetectorKind.build` receives."""

    spec: str
    head: str
    options: dict[str, str]
    cache_dir: Any = None
    device: str | None = None
    batch_size: int | None = None
    threads: int | None = None

    def integer(self, key: str, default: int) -> int:
        """Option ``key`` as an integer (``default`` when absent).

        Raises:
            ConfigError: it is not an integer.
        """
        try:
            return int(self.options.get(key, default))
        except ValueError:
            raise ConfigError(f"{self.spec}: {key} must be an integer, got '{self.options[key]}'") from None


class DetectorKind(ABC):
    """A kind of zero-shot detector. Subclass it, set the class attributes, implement
    :meth:`build`, and register an instance with :func:`register_detector`."""

    #: the spec's prefix, ``KIND:...`` (letters, digits and ``-``)
    name: ClassVar[str] = ""
    #: how a spec of this kind is written, e.g. ``raidar:MODEL[,max_words=N]``
    usage: ClassVar[str] = ""
    #: the shortest spec, for one-line help, e.g. ``raidar:MODEL``
    example: ClassVar[str] = ""
    #: what the score is (higher: more likely LLM-written)
    description: ClassVar[str] = ""
    #: the paper or tool it follows
    reference: ClassVar[str] = ""
    #: the ``key=value`` options it takes: name -> what it does
    options: ClassVar[Mapping[str, str]] = {}

    @abstractmethod
    def build(self, request: DetectorRequest) -> Detector:
        """The detector a parsed spec names (models are loaded on first use).

        Raises:
            ConfigError: a malformed head or option.
        """


@dataclass
class ZeroShotDetector:
    """A detector whose ``engine`` (a model wrapper) its kind scores with: :meth:`score_texts`
    and :meth:`describe` ask the registered kind ``kind`` (a :class:`EngineKind`)."""

    spec: str
    kind: str
    engine: Any
    options: dict[str, Any] = field(default_factory=dict)
    cache_dir: Any = None

    def score_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Raw scores of ``texts`` (NaN where a text cannot be scored: no token, a flagged rewrite)."""
        return _engine_kind(self.kind).score(self, list(texts))

    def describe(self) -> dict[str, Any]:
        """The detector's identity: spec, kind, what its score is, models and options."""
        kind = _engine_kind(self.kind)
        return {
            "spec": self.spec,
            "kind": self.kind,
            "score": f"{kind.description} ({kind.reference})" if kind.reference else kind.description,
            "direction": "higher: more likely LLM-written",
            "score_type": "raw",
            "options": self.options,
            "models": kind.models(self),
        }


class EngineKind(DetectorKind):
    """A kind whose detectors are :class:`ZeroShotDetector` s around a model wrapper: it scores
    texts with the engine and says which models the engine holds."""

    @abstractmethod
    def score(self, detector: ZeroShotDetector, texts: list[str]) -> np.ndarray:
        """Raw scores of ``texts`` by ``detector`` (built by this kind)."""

    @abstractmethod
    def models(self, detector: ZeroShotDetector) -> dict[str, Any]:
        """The models of ``detector``'s engine, for ``describe()`` and the manifest."""


_KINDS: dict[str, DetectorKind] = {}


def register_detector(kind: DetectorKind) -> DetectorKind:
    """Make ``kind`` known to ``--detector`` and :func:`build_detector` (case-insensitive).

    Args:
        kind: The detector kind (an instance).

    Returns:
        ``kind``.

    Raises:
        ValueError: Its name is empty or not made of letters, digits and ``-``; or another kind
            of that name is registered.
    """
    key = kind.name.lower()
    if not key or not key.replace("-", "").isalnum():
        raise ValueError(f"a detector kind needs a name of letters, digits and -, got {kind.name!r}")
    if key in _KINDS and type(_KINDS[key]) is not type(kind):
        raise ValueError(f"detector kind '{key}' is registered twice ({type(_KINDS[key]).__module__} and {type(kind).__module__})")
    _KINDS[key] = kind
    return kind


def _load() -> None:
    from sourcebias.core.plugins import GROUP as PLUGINS
    from sourcebias.core.plugins import load_builtins

    load_builtins(BUILTIN_MODULES, PLUGINS, GROUP)


def detector_kinds() -> dict[str, DetectorKind]:
    """Every registered detector kind, built-in and plugins (loaded first), in registration order.

    Returns:
        ``{name: kind}``.
    """
    _load()
    return dict(_KINDS)


def get_detector_kind(name: str) -> DetectorKind | None:
    """The registered kind ``name`` (any case), or None."""
    _load()
    return _KINDS.get(name.strip().lower())


def _engine_kind(name: str) -> EngineKind:
    kind = get_detector_kind(name)
    if not isinstance(kind, EngineKind):
        raise ConfigError(f"'{name}' is not a registered detector kind that scores with an engine")
    return kind


def parse_options(spec: str, parts: Sequence[str], allowed: Mapping[str, str] | set[str]) -> dict[str, str]:
    """``key=value`` parts of a spec as a dict, refused when malformed or not in ``allowed``."""
    out: dict[str, str] = {}
    for o in parts:
        k, eq, v = o.partition("=")
        if not eq:
            raise ConfigError(f"{spec}: expected key=value, got '{o}'")
        out[k.strip()] = v.strip()
    unknown = set(out) - set(allowed)
    if unknown:
        raise ConfigError(f"{spec}: unknown option(s) {', '.join(sorted(unknown))}; options: {', '.join(sorted(allowed))}")
    return out


def is_detector_spec(text: str) -> bool:
    """Whether ``text`` names a zero-shot detector (a registered kind, then ``:``)."""
    return ":" in text and get_detector_kind(text.partition(":")[0]) is not None


def build_detector(spec: str, *, cache_dir: Any = None, device: str | None = None, batch_size: int | None = None, threads: int | None = None) -> Detector:
    """The detector ``spec`` names, ``KIND:HEAD[,key=value...]``; models are loaded on first use.

    Args:
        spec: e.g. ``fast-detectgpt:lm:NAME[,...]``, ``binoculars:lm:A+lm:B[,...]``,
            ``raidar:MODEL[,...]`` (every registered kind: :func:`detector_kinds`).
        cache_dir: cache of model values, rewrites and converted models.
        device: where the models run (``cpu``, ``cuda``; default: cuda if available).
        batch_size: texts per forward pass (the kind's default when None).
        threads: PyTorch CPU threads of a local model.

    Returns:
        The kind's :class:`Detector`.

    Raises:
        ConfigError: an unknown kind, a malformed head, an unknown or non-integer option.
    """
    name, sep, rest = spec.partition(":")
    kind = get_detector_kind(name)
    if not sep or kind is None or not rest.strip():
        known = ", ".join(k + ":..." for k in detector_kinds())
        raise ConfigError(f"a zero-shot detector is one of {known}, e.g. fast-detectgpt:lm:smollm2; got '{spec}'")
    head, *parts = rest.split(",")
    request = DetectorRequest(spec, head.strip(), parse_options(spec, parts, kind.options), cache_dir, device, batch_size, threads)
    return kind.build(request)


def detector_usage() -> str:
    """Every kind's usage, comma-separated (the ``--detector`` help of ``sourcebias detect``)."""
    return ", ".join(k.usage for k in detector_kinds().values())


def detector_examples() -> str:
    """Every kind's shortest spec, comma-separated (one-line help)."""
    return ", ".join(k.example or k.usage for k in detector_kinds().values())
