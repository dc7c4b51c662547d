"""The optional extras (``pip install 'sourcebias[neural]'``) and a one-line refusal when one is missing.

The core install (datasets, the protocol, BM25/TF-IDF, the statistics, the command line) needs no
PyTorch; a capability that needs an extra checks for it *before any work* with :func:`require`, so
that a core install meets one line naming the extra to install, not a traceback after the dataset
was read, nor a misleading cause (an encoder "not in the cache" when PyTorch is missing). Whether a
module is installed is asked with :func:`importlib.util.find_spec` (nothing is imported).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from sourcebias.core.errors import ConfigError

#: extra -> the import names whose absence means the extra is not installed (pyproject.toml's
#: [project.optional-dependencies]; the packages each capability imports)
EXTRAS: dict[str, tuple[str, ...]] = {
    "neural": ("torch", "sentence_transformers", "transformers"),
    "generate": ("httpx",),
    "analysis": ("matplotlib", "linearmodels"),
    "ray": ("ray",),
    "ecosystem": ("ranx", "ir_measures", "ir_datasets", "pyterrier"),
    "mteb": ("mteb",),
    "fast": ("onnx", "onnxruntime", "openvino"),
}

#: what to call an import name in a message (the distribution users know)
DISTRIBUTIONS = {
    "torch": "PyTorch",
    "sentence_transformers": "sentence-transformers",
    "ir_measures": "ir-measures",
    "ir_datasets": "ir_datasets",
    "PIL": "pillow",
    "ray": "Ray",
}


class ExtraMissingError(ConfigError):
    """A capability's optional extra is not installed (the message names the extra to install)."""


def install_hint(extra: str) -> str:
    """``pip install 'sourcebias[EXTRA]'``.

    Args:
        extra: The extra's name.

    Returns:
        The command that installs it.
    """
    return f"pip install 'sourcebias[{extra}]'"


def missing_modules(extra: str, modules: Sequence[str] = ()) -> list[str]:
    """The modules of ``extra`` (or ``modules``, when given) that are not installed.

    Args:
        extra: The extra's name (a key of :data:`EXTRAS`).
        modules: The import names to check instead of the extra's own.

    Returns:
        The missing import names, in order.

    Raises:
        ValueError: ``extra`` is not an extra.
    """
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; extras: {', '.join(EXTRAS)}")
    return [m for m in (modules or EXTRAS[extra]) if _absent(m)]


def _absent(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # a broken or half-installed package counts as missing
        return True


def require(extra: str, what: str, modules: Sequence[str] = ()) -> None:
    """Refuse ``what`` unless ``extra`` (or its ``modules``) is installed.

    Args:
        extra: The extra's name (a key of :data:`EXTRAS`).
        what: What needs it, as the user wrote it (``"--retriever minilm"``, ``"sourcebias train"``).
        modules: The import names ``what`` needs (default: the extra's own list).

    Raises:
        ExtraMissingError: One line: what needs which extra, which packages are missing, the install command.
    """
    missing = missing_modules(extra, modules)
    if missing:
        names = ", ".join(DISTRIBUTIONS.get(m, m) for m in missing)
        raise ExtraMissingError(f"{what} needs the '{extra}' extra, which is not installed ({names} missing): {install_hint(extra)}")
