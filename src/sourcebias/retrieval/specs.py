"""Registration of retrieval kinds and their typed options (what ``--retriever`` accepts).

A kind registers itself, in its own module, with a decorator::

    @register_first_stage("bm25", params={"k1": Param(float, "term saturation", default=1.2)}, help="...")
    def _bm25(params, text):
        return BM25(**params, name=text)

Grammar of a specification (``sourcebias.retrieval.registry.build_retriever``)::

    spec   := stage (">>" stage)*
    stage  := kind [(":" | ",") args]
    args   := [positional ","] key=value ("," key=value)*

**Option precedence** (one rule, every kind): an option written in the stage
(``st:NAME,max_length=128``) beats the command-wide option (``--max-length 256``), which beats
the kind's default. Each :class:`Param` names the command-wide option it falls back to.

Where kinds come from: the built-in modules listed in :data:`BUILTIN_MODULES` and the plugin
modules of :mod:`sourcebias.core.plugins` (entry points of the group ``sourcebias.plugins`` — how
other packages, and sourcebias' own higher layers such as mitigation, add kinds — and
``$SOURCEBIAS_PLUGINS``) are imported on the first lookup; importing a module runs its
registrations. Nothing here imports a kind's module by name in code, so the registry depends on
no retriever.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from sourcebias.core.errors import ConfigError

#: modules of this package that register kinds (imported on first lookup)
BUILTIN_MODULES = (
    "sourcebias.retrieval.lexical",
    "sourcebias.retrieval.dense",
    "sourcebias.retrieval.stages",
    "sourcebias.retrieval.rerankers.cross_encoder",
    "sourcebias.retrieval.rerankers.monot5",
    "sourcebias.retrieval.rerankers.causal_lm",
    "sourcebias.retrieval.rerankers.llm_yesno",
    "sourcebias.retrieval.rerankers.rankgpt",
    "sourcebias.retrieval.pyterrier_stage",
    "sourcebias.retrieval.mteb_retriever",
)

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Param:
    """A typed option of a kind.

    ``option`` names the command-wide option (``device``, ``batch_size``, ``max_length``,
    ``cache_dir``, ``rerank_depth``, and ``cache``, which ``cache_dir=False`` sets to false: see
    :func:`command_wide`) used when the stage does not set this one.
    """

    type: type
    help: str = ""
    default: Any = None
    option: str | None = None
    required: bool = False
    choices: tuple[str, ...] | None = None
    #: the optional extra its value needs, ``(value, stage text) -> (extra, modules)`` (a model
    #: spec: the server client's or the local model's), refused before any work when missing
    extra_of: Callable[[Any, str], tuple[str, tuple[str, ...]]] | None = None

    def parse(self, kind: str, key: str, text: str) -> Any:
        """The option's value from its text in a specification.

        Args:
            kind: The kind, named in errors.
            key: The option's key, named in errors.
            text: The text after ``key=``.

        Returns:
            The value, of the option's type (``true``/``false`` and the like for a bool; a path expanded).

        Raises:
            ConfigError: The text is not of the option's type, or not one of its choices.
        """
        t = text.strip()
        try:
            if self.type is bool:
                if t.lower() in _TRUE:
                    value: Any = True
                elif t.lower() in _FALSE:
                    value = False
                else:
                    raise ValueError
            elif self.type is Path:
                value = Path(t).expanduser()
            else:
                value = self.type(t)
        except ValueError:
            raise ConfigError(f"{kind}: option '{key}' expects {_type_name(self.type)}, got '{text}'") from None
        if self.choices is not None and value not in self.choices:
            raise ConfigError(f"{kind}: option '{key}' must be one of {', '.join(self.choices)}, got '{text}'")
        return value


def _type_name(t: type) -> str:
    return {bool: "true/false", int: "an integer", float: "a number", str: "text", Path: "a path"}.get(t, t.__name__)


@dataclass
class Kind:
    """A registered kind: its role (``first`` stage or run-to-run ``stage``), factory and options."""

    kind: str
    role: str
    factory: Callable[[dict[str, Any], str], Any]
    params: dict[str, Param] = field(default_factory=dict)
    positional: str | None = None
    help: str = ""
    offline: str | None = None  # which models of this kind work without network, if any
    models: tuple[str, ...] = ()  # checkpoints a preset needs (checked for offline use by `sourcebias retrievers`)
    extra: str | None = None  # the optional extra it needs (sourcebias.core.extras), checked before any work
    extra_modules: tuple[str, ...] = ()  # the extra's modules it needs (default: all the extra's)

    def usage(self) -> str:
        """How the kind is written, for ``sourcebias retrievers`` (``ce:MODEL[,depth=..]``).

        Returns:
            The usage text.
        """
        pos = f":{self.positional.upper()}" if self.positional else ""
        opts = ",".join(f"{k}=" for k in self.params if k != self.positional and self.params[k].option is None)
        return f"{self.kind}{pos}" + (f"[{',' if pos else ':'}{opts}..]" if opts else "")


_KINDS: dict[str, Kind] = {}
#: a kind's factory ``(params, text) -> Retriever or Stage``, as the registration decorators keep it
_Factory = TypeVar("_Factory", bound=Callable[[dict[str, Any], str], Any])


def _register(
    role: str,
    kind: str,
    params: Mapping[str, Param] | None,
    help: str,
    positional: str | None,
    offline: str | None,
    models: tuple[str, ...] = (),
    extra: tuple[str | None, tuple[str, ...]] = (None, ()),
) -> Callable[[_Factory], _Factory]:
    def deco(factory: _Factory) -> _Factory:
        key = kind.lower()
        if key in _KINDS and _KINDS[key].factory is not factory:
            raise ConfigError(f"retrieval kind '{kind}' is registered twice ({_KINDS[key].factory.__module__} and {factory.__module__})")
        _KINDS[key] = Kind(key, role, factory, dict(params or {}), positional, help, offline, tuple(models), extra[0], tuple(extra[1]))
        return factory

    return deco


def register_first_stage(
    kind: str,
    *,
    params: Mapping[str, Param] | None = None,
    help: str = "",
    positional: str | None = None,
    offline: str | None = None,
    models: tuple[str, ...] = (),
    extra: str | None = None,
    extra_modules: tuple[str, ...] = (),
) -> Callable[[_Factory], _Factory]:
    """Decorator: register a factory ``(params, text) -> Retriever`` for ``--retriever KIND...``.

    Args:
        kind: The kind's name (case-insensitive).
        params: Its typed options, by key.
        help: One line for ``sourcebias retrievers``.
        positional: The option a bare first argument sets (``bm25:...``, ``ce:MODEL``).
        offline: Which models of this kind work without network, if any.
        models: Checkpoints a preset needs (checked for offline use by ``sourcebias retrievers``).
        extra: The optional extra the kind needs (``"neural"``), refused before any work when missing.
        extra_modules: The extra's modules it needs (default: all of the extra's, :data:`sourcebias.core.extras.EXTRAS`).

    Returns:
        The decorator; it returns the factory unchanged.

    Raises:
        ConfigError: (when the decorator runs) another factory has that kind.
    """
    return _register("first", kind, params, help, positional, offline, models, (extra, extra_modules))


def register_stage(
    kind: str,
    *,
    params: Mapping[str, Param] | None = None,
    help: str = "",
    positional: str | None = None,
    offline: str | None = None,
    extra: str | None = None,
    extra_modules: tuple[str, ...] = (),
) -> Callable[[_Factory], _Factory]:
    """Decorator: register a factory ``(params, text) -> Stage`` for ``... >> KIND...``.

    The arguments are those of :func:`register_first_stage` (without ``models``).

    Returns:
        The decorator; it returns the factory unchanged.

    Raises:
        ConfigError: (when the decorator runs) another factory has that kind.
    """
    return _register("stage", kind, params, help, positional, offline, (), (extra, extra_modules))


def load_plugins() -> None:
    """Import the built-in kind modules and the plugin modules (once)."""
    from sourcebias.core.plugins import GROUP, load_builtins

    load_builtins(BUILTIN_MODULES, GROUP)


def kinds(role: str | None = None) -> dict[str, Kind]:
    """The registered kinds (built-in and plugin modules loaded first), sorted by name.

    Args:
        role: ``"first"`` or ``"stage"``; None for every kind.

    Returns:
        ``{kind: Kind}``.
    """
    load_plugins()
    return {k: v for k, v in sorted(_KINDS.items()) if role is None or v.role == role}


def get_kind(kind: str) -> Kind | None:
    """A registered kind by name (built-in and plugin modules loaded first).

    Args:
        kind: The name, any case.

    Returns:
        Its :class:`Kind`, or None when there is none.
    """
    load_plugins()
    return _KINDS.get(kind.lower())


def split_stage(text: str) -> tuple[str, str | None]:
    """A stage's kind and argument: ``"ce:MODEL,depth=20"`` -> ``("ce", "MODEL,depth=20")``.

    A comma before any colon also ends the kind (``"jaccard,depth=10"`` reads as
    ``"jaccard:depth=10"``).

    Args:
        text: One stage of a specification (between ``>>``).

    Returns:
        ``(kind, argument)``: the kind lower-cased, the argument None when there is none.

    Raises:
        ConfigError: An empty stage.
    """
    text = text.strip()
    if not text:
        raise ConfigError("empty retrieval stage (check the '>>' in the specification)")
    colon, comma = text.find(":"), text.find(",")
    if comma != -1 and (colon == -1 or comma < colon):  # "jaccard,depth=10" reads as "jaccard:depth=10"
        kind, arg = text[:comma], text[comma + 1 :]
        return kind.strip().lower(), arg.strip()
    kind, sep, arg = text.partition(":")
    return kind.strip().lower(), (arg.strip() if sep else None)


def command_wide(options: Mapping[str, Any]) -> dict[str, Any]:
    """The command-wide options as kinds fall back to them.

    ``cache_dir=False`` (what ``--no-cache`` passes) is the command-wide ``cache=False``, not a
    folder: a stage's own ``cache=true`` still beats it, as every stage option beats the command-wide
    one.

    Args:
        options: The command-wide options (``device``, ``batch_size``, ``cache_dir``, ...).

    Returns:
        A copy, with ``cache_dir=False`` turned into ``cache_dir=None, cache=False``.
    """
    opts = dict(options)
    if opts.get("cache_dir") is False:
        opts["cache_dir"] = None
        opts["cache"] = False
    return opts


def resolve_params(spec: Kind, arg: str | None, options: Mapping[str, Any]) -> dict[str, Any]:
    """The values of a kind's options: stage-level, else command-wide, else the default.

    Args:
        spec: The kind.
        arg: The stage's argument (after ``KIND:``), or None.
        options: The command-wide options.

    Returns:
        ``{option: value}`` of every option that has a value.

    Raises:
        ConfigError: A part that is not ``key=value``, an unknown or repeated option, a value of the
            wrong type, or a required option without a value.
    """
    options = command_wide(options)
    given: dict[str, Any] = {}
    parts = arg.split(",") if arg else []
    if parts and spec.positional and "=" not in parts[0]:
        given[spec.positional] = spec.params[spec.positional].parse(spec.kind, spec.positional, parts.pop(0))
    for part in parts:
        if "=" not in part:
            hint = f" (the {spec.positional} comes first: {spec.kind}:{spec.positional.upper()},key=value)" if spec.positional else ""
            raise ConfigError(f"{spec.kind}: expected key=value, got '{part}'{hint}")
        k, v = (x.strip() for x in part.split("=", 1))
        if k not in spec.params:
            raise ConfigError(f"{spec.kind}: unknown option '{k}'; options: {', '.join(spec.params) or 'none'}")
        if k in given:
            raise ConfigError(f"{spec.kind}: option '{k}' given twice")
        given[k] = spec.params[k].parse(spec.kind, k, v)
    values: dict[str, Any] = {}
    for k, p in spec.params.items():
        if k in given:
            values[k] = given[k]
        elif p.option is not None and options.get(p.option) is not None:
            values[k] = options[p.option]
        elif p.default is not None:
            values[k] = p.default
        elif p.required:
            what = f"{spec.kind}:{k.upper()}" if k == spec.positional else f"{spec.kind}:{k}=..."
            raise ConfigError(f"{spec.kind} needs {'a ' + k if k == spec.positional else 'the option ' + k}: {what} (see `sourcebias retrievers`)")
    return values
