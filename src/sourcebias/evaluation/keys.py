"""The names an evaluation result is indexed and written by: its keys, its settings and targets,
the columns of its tables and the format version of its folder.

Apart from the model (:mod:`.results`) and its files (:mod:`.result_io`) so that both read them
without importing each other.
"""

from __future__ import annotations

import re
from typing import NamedTuple

MIXED = "mixed"
ALL = "all"
RELATIVE_DELTA = "relative_delta"
METRIC_COLUMNS = ("retriever", "corpus", "target", "metric", "value")
PER_QUERY_COLUMNS = ("retriever", "corpus", "target", "query_id", "metric", "value")
FORMAT_VERSION = 1


class Key(NamedTuple):
    """Which values.

    A retriever, a corpus setting (``mixed`` or a source alone), a target (a source, ``all``; for source
    measures such as Share@k, the source whose share it is) and a measure (``NDCG@1``).
    """

    retriever: str
    setting: str
    target: str
    measure: str


class RunKey(NamedTuple):
    """Which run: a retriever on a corpus setting."""

    retriever: str
    setting: str


# -- files --------------------------------------------------------------------------------------
def slug(name: str) -> str:
    """A file-name-safe form of a name (``st:/models/x`` -> ``st_models_x``).

    Args:
        name: A retriever's or run's name.

    Returns:
        The name with every run of other characters than letters, digits, ``.``, ``_`` and ``-``
        replaced by ``_`` (``run`` if nothing is left).
    """
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_.")
    return s or "run"
