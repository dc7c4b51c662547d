"""How a model is named, everywhere, and the one place a backend is chosen.

One grammar names a model in every place that reaches one (``generate --model``, ``judge --judge``,
``cite --generator``, the ``rankgpt:`` and ``llm-yesno:`` stages, the ``raidar:`` detector, a
simulation's ``[generator] model``)::

    smollm2 | gemma3 | FILE.gguf | FOLDER | HUB/NAME     a local model (transformers; a GGUF converted once)
    openai:MODEL@URL[@URL...]                            MODEL as OpenAI-compatible servers at URL serve it
    KIND:MODEL@URL[@URL...]                              a backend kind registered by a plug-in

:func:`parse_model_spec` reads it (the only function that does), :func:`open_backend` opens the
backend it names (the only place a backend is chosen: the kind registered for its prefix,
:func:`register_backend`; ``openai`` is one). The old forms of 0.2.0 are read as the new
one, with a deprecation warning (:func:`server_spec`; removed in 0.4.0): ``--backend openai
--base-url URL --model M`` of ``generate``, ``raidar:M,base_url=URL``, and ``backend = "openai"`` with
``base_url = [URL]`` in a simulation's ``[generator]``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sourcebias.core.errors import ConfigError

#: short names of offline local models
ALIASES = {"gemma3": "gemma3-270m", "gemma-3": "gemma3-270m"}
_URL_SPLIT = re.compile(r"@(?=https?://)")
#: requests in flight per server of a spec when no concurrency is given (as the HTTP backend's)
CONCURRENCY_PER_SERVER = 4
#: the entry-point group of backend plug-ins (``sourcebias.plugins`` and ``$SOURCEBIAS_PLUGINS`` work too)
GROUP = "sourcebias.backends"


@dataclass(frozen=True)
class BackendKind:
    """A kind of backend a spec names by its prefix, ``KIND:MODEL@URL[@URL...]``.

    ``opener(model, urls, *, what, concurrency, **options)`` returns the backend: an object with
    the :class:`~sourcebias.llmcalls.backends.OpenAIBackend` interface (``generate`` giving a
    :class:`~sourcebias.llmcalls.backends.GenerationResult` with OpenAI-format ``logprobs``,
    ``probe``, ``expect``, ``mark_verified``, ``describe``, ``close``; subclassing it is the short
    way), whose answers a :class:`~sourcebias.llmcalls.server_client.ServerClient` stores under
    its ``kind``. ``extra``: the optional extra it needs and the modules checked; ``urls``:
    whether a spec must name servers."""

    prefix: str
    opener: Callable[..., Any]
    extra: tuple[str, tuple[str, ...]] = ("generate", ("httpx",))
    urls: bool = True
    help: str = ""


_KINDS: dict[str, BackendKind] = {}


def register_backend(
    prefix: str, opener: Callable[..., Any], *, extra: tuple[str, tuple[str, ...]] = ("generate", ("httpx",)), urls: bool = True, help: str = ""
) -> None:
    """Make ``PREFIX:MODEL@URL`` name a backend that ``opener`` opens (see :class:`BackendKind`).

    Raises:
        ConfigError: The prefix is taken by another opener, or is not a lower-case word.
    """
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", prefix):
        raise ConfigError(f"a backend prefix is a lower-case word, got '{prefix}'")
    known = _KINDS.get(prefix)
    if known is not None and known.opener is not opener:
        raise ConfigError(f"backend prefix '{prefix}' is registered twice")
    _KINDS[prefix] = BackendKind(prefix, opener, extra, urls, help)


def backend_kinds() -> dict[str, BackendKind]:
    """Every registered backend kind (plug-ins loaded first), by prefix."""
    from sourcebias.core.plugins import load_plugins

    load_plugins()
    load_plugins(GROUP)
    return dict(_KINDS)


def _open_openai(model: str, urls: list[str], **options: Any) -> Any:
    from sourcebias.llmcalls.backends.openai import OpenAIBackend

    return OpenAIBackend(urls, model, **options)


register_backend("openai", _open_openai, help="any OpenAI-compatible server (vLLM, llama.cpp, sourcebias serve, OpenAI)")


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec: ``backend`` (``local``, ``openai`` or a registered kind), the ``model``
    name (as the servers know it, or a local name/path) and the servers' base ``urls``. ``str()``
    gives the spec back."""

    backend: str
    model: str
    urls: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.model if self.backend == "local" else f"{self.backend}:{self.model}" + "".join(f"@{u}" for u in self.urls)


def parse_model_spec(text: str, *, what: str = "the model") -> ModelSpec:
    """Read a model spec (see the module).

    Args:
        text: The spec.
        what: Where the user wrote it (``--judge``, a stage spec), named in errors.

    Returns:
        The :class:`ModelSpec` (a local alias resolved: ``gemma3`` -> ``gemma3-270m``).

    Raises:
        ConfigError: An empty spec, or a server spec without a model or a URL.
    """
    text = text.strip()
    if not text:
        raise ConfigError(f"{what}: name a model (smollm2, a GGUF file, a folder, or openai:MODEL@http://HOST:PORT/v1)")
    prefix, sep, rest = text.partition(":")
    kind = (_KINDS.get(prefix) or backend_kinds().get(prefix)) if sep else None
    if kind is None:
        return ModelSpec("local", ALIASES.get(text.lower(), text))
    model, *urls = _URL_SPLIT.split(rest)
    if not model or (kind.urls and not urls) or any(not u.strip() for u in urls):
        raise ConfigError(f"{what} '{text}': a server is named {prefix}:MODEL@http://HOST:PORT/v1 (more @URLs for several servers)")
    return ModelSpec(prefix, model, tuple(u.strip() for u in urls))


def server_spec(model: str, base_urls: Sequence[str], *, old: str, new: str = "{spec}") -> ModelSpec:
    """``model`` at ``base_urls``, given in an old form (``old``: how the user wrote it), with a
    deprecation warning naming what to write instead (``new``, with ``{spec}`` for the spec). The
    URLs are checked where they are used, as before."""
    from sourcebias.core.moved import deprecated

    spec = ModelSpec("openai", model, tuple(base_urls))
    deprecated(old, new.format(spec=spec), stacklevel=3)
    return spec


def required_extra(spec: str | ModelSpec) -> tuple[str, tuple[str, ...]]:
    """The optional extra a spec's backend needs and the modules checked (``generate``: httpx for
    servers; ``neural``: PyTorch and transformers for local models)."""
    s = spec if isinstance(spec, ModelSpec) else parse_model_spec(spec)
    return ("neural", ("torch", "transformers")) if s.backend == "local" else backend_kinds()[s.backend].extra


def require_backend(spec: str | ModelSpec, what: str) -> None:
    """Refuse in one line, naming the extra to install, a spec whose backend is not installed."""
    from sourcebias.core.extras import require

    extra, modules = required_extra(spec)
    require(extra, f"{what} {spec}".strip(), modules)


def open_backend(
    spec: str | ModelSpec,
    *,
    what: str = "--model",
    device: str | None = None,
    threads: int | None = None,
    dtype: str | None = None,
    model_cache_dir: Any = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    **options: Any,
) -> Any:
    """The backend a spec names: the only place one is chosen.

    Args:
        spec: A model spec (see the module).
        what: Where the user named it (``--model``, ``--judge``, ``rankgpt:...``): named in errors
            (an unknown local model, a server that does not serve the name).
        device: Where a local model runs (ignored for servers).
        threads: PyTorch threads of a local model while it generates.
        dtype: A local model's weights type (``float32``, ``bfloat16``).
        model_cache_dir: Where a local GGUF file is converted (default: the sourcebias cache).
        concurrency: Requests in flight against servers (default 4 per server of the spec; a
            local model answers one at a time).
        timeout: Seconds a server request may take, waiting included (default 300; ignored for
            a local model). A server that answers one request at a time (llama-cpp-python's)
            makes the requests behind it wait: with long prompts raise it or lower ``concurrency``,
            or the waiting requests time out, are sent again and wait behind the ones abandoned
            (the server still computes them), until the job gives up.
        **options: The backend's own: ``chat`` for both; for servers
            :class:`~sourcebias.llmcalls.backends.openai.OpenAIBackend`'s (``api_key_env``,
            ``timeout``, ``max_retries``, ...).

    Returns:
        A :class:`~sourcebias.llmcalls.backends.local.LocalBackend` or
        :class:`~sourcebias.llmcalls.backends.openai.OpenAIBackend`.

    Raises:
        ConfigError: A malformed spec, or its backend's extra is not installed (one line naming it).
    """
    s = spec if isinstance(spec, ModelSpec) else parse_model_spec(spec, what=what)
    require_backend(s, what)
    if s.backend != "local":
        named = what if str(s) in what else f"{what} {s}".strip()  # "--judge openai:M@URL"; a stage spec names it already
        per_server = CONCURRENCY_PER_SERVER * max(1, len(s.urls))  # a pool of N servers: N times the requests in flight
        if timeout is not None:
            options["timeout"] = timeout
        return backend_kinds()[s.backend].opener(s.model, list(s.urls), what=named, concurrency=concurrency or per_server, **options)
    from sourcebias.llmcalls.backends.local import LocalBackend

    return LocalBackend(s.model, device=device, threads=threads, dtype=dtype, cache_dir=model_cache_dir, what=what, **options)
