"""Manifests: what produced an output folder (inputs and their checksums, models, parameters,
package versions, timings), written as ``manifest.json`` beside every output."""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import platform
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

KEY_PACKAGES = (
    "sourcebias",
    "numpy",
    "scipy",
    "scikit-learn",
    "bm25s",
    "PyStemmer",
    "regex",
    "pytrec-eval-terrier",
    "torch",
    "transformers",
    "sentence-transformers",
    "mteb",  # its registry gives mteb: models their prompts
    "onnx",
    "onnxruntime",
    "openvino",
    "nncf",
    "faiss-cpu",
    "gguf",
    "llama-cpp-python",
    "httpx",
    "statsmodels",
    "linearmodels",
    "matplotlib",
    "typer",
    "rich",
)


def package_versions(names: Iterable[str] = KEY_PACKAGES) -> dict[str, str]:
    """Installed versions of the given distributions (those not installed are left out)."""
    out = {"python": sys.version.split()[0]}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            continue
    return out


def file_digest(path: str | Path, algorithm: str = "sha256", chunk: int = 1 << 20) -> str:
    h = hashlib.new(algorithm)
    with Path(path).open("rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def describe_file(path: str | Path) -> dict[str, Any]:
    if str(path).startswith("irds:"):  # read through ir_datasets (sourcebias.data.irds): an id, not a file
        import os

        return {"ir_datasets": str(path)[len("irds:") :], "ir_datasets_home": os.environ.get("IR_DATASETS_HOME", "~/.ir_datasets")}
    p = Path(path)
    return {"path": str(p.resolve()), "bytes": p.stat().st_size, "sha256": file_digest(p)}


def build_manifest(
    *,
    command: str,
    inputs: dict[str, Any],
    parameters: dict[str, Any],
    models: dict[str, Any] | None = None,
    timings: dict[str, Any] | None = None,
    outputs: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "tool": "sourcebias",
        "command": command,
        "argv": list(sys.argv),
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "inputs": inputs,
        "parameters": parameters,
        "models": models or {},
        "timings_s": timings or {},
        "outputs": outputs or {},
        "versions": package_versions(),
        "platform": {"system": platform.system(), "machine": platform.machine(), "cpus": os.cpu_count()},
        **(extra or {}),
    }
