"""How a model is named, everywhere, and the one place a backend is chosen.

One grammar names a model in every place that reaches one (``generate --model``, ``judge --judge``,
``cite --generator``, the ``rankgpt:`` and ``llm-yesno:`` stages, the ``raidar:`` detector, a
simulation's ``[generator] model``)::

    smollm2 | gemma3 | FILE.gguf | FOLDER | HUB/NAME     a local model (transformers; a GGUF converted once)
    openai:MODEL@URL[@URL...]                            MODEL as OpenAI-compatible servers at URL serve it

:func:`parse_model_spec` reads it (the only function that does), :func:`open_backend` opens the
backend it names (the only place a backend is chosen). The old forms of 0.2.0 are read as the new
one, with a deprecation warning (:func:`server_spec`; removed in 0.4.0): ``--backend openai
--base-url URL --model M`` of ``generate``, ``raidar:M,base_url=URL``, and ``backend = "openai"`` with
``base_url = [URL]`` in a simulation's ``[generator]``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sourcebias.core.errors import ConfigError

#: short names of offline local models
ALIASES = {"gemma3": "gemma3-270m", "gemma-3": "gemma3-270m"}
_URL_SPLIT = re.compile(r"@(?=https?://)")
SERVER_PREFIX = "openai:"


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec: ``backend`` (``local`` or ``openai``), the ``model`` name (as the
    servers know it, or a local name/path) and the servers' base ``urls``. ``str()`` gives the
    spec back."""

    backend: str
    model: str
    urls: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{SERVER_PREFIX}{self.model}@{'@'.join(self.urls)}" if self.backend == "openai" else self.model


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
    if not text.startswith(SERVER_PREFIX):
        return ModelSpec("local", ALIASES.get(text.lower(), text))
    model, *urls = _URL_SPLIT.split(text[len(SERVER_PREFIX) :])
    if not model or not urls or any(not u.strip() for u in urls):
        raise ConfigError(f"{what} '{text}': a server is named openai:MODEL@http://HOST:PORT/v1 (more @URLs for several servers)")
    return ModelSpec("openai", model, tuple(u.strip() for u in urls))


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
    return ("generate", ("httpx",)) if s.backend == "openai" else ("neural", ("torch", "transformers"))


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
    **options: Any,
) -> Any:
    """The backend a spec names: the only place one is chosen.

    Args:
        spec: A model spec (see the module).
        what: Where the user named it (``--model``, ``--judge``, ``rankgpt:...``): named in errors
            (an unknown local model, a server that does not serve the name).
        device, threads, dtype: Where and how a local model runs (ignored for servers).
        model_cache_dir: Where a local GGUF file is converted (default: the sourcebias cache).
        concurrency: Requests in flight against servers (default 4; a local model answers one
            at a time).
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
    if s.backend == "openai":
        from sourcebias.llmcalls.backends.openai import OpenAIBackend

        named = what if str(s) in what else f"{what} {s}".strip()  # "--judge openai:M@URL"; a stage spec names it already
        return OpenAIBackend(list(s.urls), s.model, concurrency=concurrency or 4, what=named, **options)
    from sourcebias.llmcalls.backends.local import LocalBackend

    return LocalBackend(s.model, device=device, threads=threads, dtype=dtype, cache_dir=model_cache_dir, what=what, **options)
