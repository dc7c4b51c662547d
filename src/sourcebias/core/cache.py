"""Where sourcebias keeps what it computes once and reuses (embeddings, converted models, digests,
perplexities): ``$SOURCEBIAS_CACHE`` or ``~/.cache/sourcebias``."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """``$SOURCEBIAS_CACHE`` or ``~/.cache/sourcebias``."""
    return Path(os.environ.get("SOURCEBIAS_CACHE", Path.home() / ".cache" / "sourcebias")).expanduser()


def default_flush_seconds() -> float:
    """How often (seconds) encoding writes a shard of finished vectors: ``$SOURCEBIAS_FLUSH_SECONDS``
    or 10. Lower it where encoding is slow and interruptions are likely."""
    from sourcebias.core.errors import ConfigError

    text = os.environ.get("SOURCEBIAS_FLUSH_SECONDS")
    if text is None:
        return 10.0
    try:
        value = float(text)
        if value > 0:  # also refuses nan
            return value
    except ValueError:
        pass
    raise ConfigError(f"SOURCEBIAS_FLUSH_SECONDS={text!r}: expected a positive number of seconds")
