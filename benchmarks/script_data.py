"""Where the scripts of benchmarks/ find their datasets, and how they end on a user's error.

A script names the datasets it needs (``nq-utd``, ``nfcorpus``) and :func:`dataset` gives what
``load_dataset`` takes: ``$SOURCEBIAS_DATA/NAME`` when that variable is set and holds the dataset
(the development copies, which the tests read too), else the name itself, which ``load_dataset``
resolves through the dataset registry: the NQ-UTD that ships with sourcebias, or a dataset that
``sourcebias download NAME`` fetched. :func:`folder` gives the dataset's folder, for a script that
reads the files itself, and :func:`records` the records of one of them (plain or gzip-compressed,
as the built-in NQ-UTD is). :func:`run` runs a script's ``main`` and ends a user's error (a dataset
not downloaded yet, a bad option) with one line and exit status 2, as the command line does.

So a script runs from any folder on a plain install: no path of the development tree is assumed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def dataset(name: str) -> str:
    """``$SOURCEBIAS_DATA/NAME`` if that folder exists, else ``NAME`` (a dataset known by name)."""
    root = os.environ.get("SOURCEBIAS_DATA")
    if root and (Path(root) / name).is_dir():
        return str(Path(root) / name)
    return name


def folder(given: str | Path) -> Path:
    """The folder of a dataset: ``given`` itself when it is one, else the folder of the dataset
    :func:`dataset` names (a known one not downloaded yet is a one-line error saying how to get it)."""
    from sourcebias.data.dataset import resolve_dataset

    if Path(given).is_dir():
        return Path(given)
    return resolve_dataset(dataset(str(given)))[0]


def records(given: str | Path, relative: str) -> list[dict[str, Any]]:
    """The records of a JSON Lines file of a dataset (``corpus/human.jsonl``), in file order; its
    ``.gz`` when the plain file is not there."""
    from sourcebias.data.jsonl import iter_jsonl

    path = folder(given) / relative
    return [r for _, r in iter_jsonl(path if path.is_file() else path.with_name(path.name + ".gz"))]


def run(main: Callable[[], Any]) -> None:
    """``main()``; a :class:`~sourcebias.core.errors.SourceBiasError` ends the script with its
    message on one line (``error: ...``) and exit status 2, not a traceback."""
    from sourcebias.core.errors import SourceBiasError

    try:
        main()
    except SourceBiasError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
