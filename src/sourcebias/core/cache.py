"""Where sourcebias keeps what it computes once and reuses (embeddings, converted models, digests,
perplexities): ``$SOURCEBIAS_CACHE`` or ``~/.cache/sourcebias``."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """``$SOURCEBIAS_CACHE`` or ``~/.cache/sourcebias``."""
    return Path(os.environ.get("SOURCEBIAS_CACHE", Path.home() / ".cache" / "sourcebias")).expanduser()
