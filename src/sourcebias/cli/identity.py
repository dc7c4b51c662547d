"""The run identity of a command line: what makes two runs of a command the same run.

A user who runs the quick start twice means the same run twice; its output folder should not
refuse it as "another run". Every command is wrapped (:func:`identify_commands`) so that it runs
inside :func:`sourcebias.core.artifacts.command_run` with an identity made of the command's name,
its parsed settings (``--k 1 3 5`` and ``--k 1 --k 3 --k 5`` are equal; paths resolved), a
fingerprint of every input it names (path, size and modification time of each file, for folders
of every file under them; a registered dataset's name stands for its folder) and the installed
versions of sourcebias and the libraries it reports. A claim whose identity equals the one in the
folder's manifest replaces the folder; any other run is still refused unless ``--overwrite``.

Left out of the identity: where the results go (``--output``, ``--overwrite``) and the embedding
cache (``--cache-dir``, ``--cache/--no-cache``: a cache changes how fast, not what is computed).
Models named by a Hub id are identified by their name, not their weights.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer

#: parameters that do not change what a command computes
NOT_IDENTITY = frozenset({"output", "overwrite", "cache_dir", "cache"})
_PIECES = re.compile(r"[=,;>:]+")  # NAME=FILE, st:PATH, a>>b, k=v,k=v


def identify_commands(app: typer.Typer, prefix: str = "") -> None:
    """Wrap every command of ``app`` (and of its sub-apps): its extras are checked
    (:mod:`sourcebias.cli.extras`), then it runs with its run identity."""
    for info in app.registered_commands:
        if info.callback is not None and not getattr(info.callback, "_sourcebias_identified", False):
            name = f"{prefix}{info.name or info.callback.__name__.replace('_', '-')}"
            info.callback = identified(name, info.callback)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            identify_commands(group.typer_instance, f"{prefix}{group.name} ")


def identified(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, the callback of the command ``name``, wrapped: its extras checked, then run with its
    run identity (what :func:`identify_commands` does to every registered command; a command made
    later, such as an ``analyze`` subcommand from the analysis registry, is wrapped with it)."""

    @functools.wraps(fn)  # typer reads the parameters (and their annotations) through __wrapped__
    def command(**kwargs: Any) -> Any:
        from sourcebias.cli.extras import require_command_extras
        from sourcebias.core.artifacts import command_run

        require_command_extras(name, kwargs)  # a missing extra: one line, before any work
        with command_run(lambda: run_identity(name, kwargs), interface="cli"):  # fingerprinted only if a folder is claimed
            return fn(**kwargs)

    command._sourcebias_identified = True  # type: ignore[attr-defined]
    return command


def run_identity(command: str, params: dict[str, Any]) -> dict[str, Any]:
    """The identity of ``command`` run with ``params`` (the parsed options, by parameter name).

    Args:
        command: The command's name (``"evaluate"``, ``"cdc fit"``).
        params: Its parameters as parsed.

    Returns:
        ``{"command", "parameters", "inputs", "versions"}`` in plain JSON values.
    """
    from sourcebias.core.manifest import package_versions

    kept = {k: v for k, v in params.items() if k not in NOT_IDENTITY}
    # what the command writes (its output, the embedding cache) may lie inside an input folder
    exclude = [Path(v).expanduser().resolve() for k, v in params.items() if k in ("output", "cache_dir") and isinstance(v, (str, Path))]
    inputs: dict[str, Any] = {}
    for path in sorted({p for value in kept.values() for p in _named_paths(value)}):
        inputs[str(path)] = _fingerprint(path, exclude)
    return {"command": command, "parameters": {k: _plain(v) for k, v in sorted(kept.items())}, "inputs": inputs, "versions": package_versions()}


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value.expanduser().resolve())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, str) and value and Path(value).expanduser().exists():
        return str(Path(value).expanduser().resolve())  # a path given as text (DATASET): where it is, not how it was spelt
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _named_paths(value: Any) -> Iterator[Path]:
    """The existing files and folders a parameter names: itself, a piece of it (``st:PATH``,
    ``NAME=FILE``, a pipeline's stages) or a registered dataset's name."""
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _named_paths(v)
        return
    if not isinstance(value, (str, Path)) or isinstance(value, bool):
        return
    text = str(value)
    for piece in dict.fromkeys([text, *_PIECES.split(text)]):
        piece = piece.strip()
        if not piece:
            continue
        path = Path(piece).expanduser()
        if path.exists():
            yield path.resolve()
        elif piece == text and isinstance(value, str):
            folder = _dataset_folder(piece)
            if folder is not None:
                yield folder.resolve()


def _dataset_folder(name: str) -> Path | None:
    from sourcebias.core.errors import SourceBiasError
    from sourcebias.data.registry import resolve_name

    try:
        return resolve_name(name)
    except SourceBiasError:  # registered, not downloaded: the command says so itself
        return None


def _fingerprint(path: Path, exclude: list[Path]) -> Any:
    """``[bytes, mtime_ns]`` of a file; of a folder, that of every file under it by relative path
    (the output folder and its hidden siblings left out: an input folder may hold the output)."""
    if path.is_file():
        st = path.stat()
        return [st.st_size, st.st_mtime_ns]
    out: dict[str, Any] = {}
    for root, dirs, files in os.walk(path):
        here = Path(root)
        dirs[:] = sorted(d for d in dirs if not _excluded(here / d, exclude))
        for f in sorted(files):
            p = here / f
            if not _excluded(p, exclude) and p.is_file():
                st = p.stat()
                out[p.relative_to(path).as_posix()] = [st.st_size, st.st_mtime_ns]
    return out


def _excluded(path: Path, exclude: list[Path]) -> bool:
    return any(path == e or (path.parent == e.parent and path.name.startswith(f".{e.name}.")) for e in exclude)
