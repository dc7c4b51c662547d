"""The version of sourcebias, in ``core`` so that any layer can name it (a cell's hash, a manifest)
without importing the top-level package, whose lazy exports reach the layers above."""

from __future__ import annotations

__version__ = "0.2.0"
