"""Seeded samples of ids: the one rule behind every ``--max-queries`` and ``--max-pairs``.

``evaluate``, ``judge``, ``cite`` and ``audit`` sample queries, ``detect`` and the audit's
detector sample twin pairs, and the simulation draws its readers' queries, all with
:func:`seeded_sample`, so that one seed names one sample wherever it is used.

The rule is a few lines of NumPy, written here once because no library has it with these two
properties: the sample keeps the items' own order (so a report lists them as the dataset does),
and, drawn as the first ``n`` of one seeded permutation, a larger sample holds every smaller one
of the same seed (20 queries of seed 0 are 10 queries of seed 0 and 10 more).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeVar

import numpy as np

from sourcebias.core.errors import ConfigError

T = TypeVar("T")

DRAWS = ("permutation", "choice")


def check_sample_size(n: int | None, option: str = "--max-queries") -> None:
    """Refuse a sample size below 1 (``None``: everything), naming the option it came from.

    Raises:
        ConfigError: ``n`` is below 1.
    """
    if n is not None and n < 1:
        raise ConfigError(f"{option} must be at least 1, got {n}")


def seeded_sample(items: Sequence[T], n: int | None, seed: int | Sequence[int], *, draw: Literal["permutation", "choice"] = "permutation") -> list[T]:
    """``n`` of ``items``, drawn with ``numpy.random.default_rng(seed)``, in the items' order.

    Args:
        items: What to sample (query ids, pair ids), in the order the result keeps.
        n: How many to keep; ``None``, or at least ``len(items)``: all of them (a copy).
        seed: The seed (an integer, or a sequence of integers as NumPy takes it).
        draw: ``permutation``: the first ``n`` indices of ``rng.permutation(len(items))`` (nested:
            a larger sample holds a smaller one); ``choice``: ``rng.choice(len(items), n,
            replace=False)``, the simulation's draw of its readers' queries (kept so that a
            simulation's rounds reproduce; not nested).

    Returns:
        The kept items, in their order in ``items``.

    Raises:
        ValueError: ``n`` below 0, or an unknown ``draw``.
    """
    if draw not in DRAWS:
        raise ValueError(f"draw must be one of {', '.join(DRAWS)}, got {draw!r}")
    if n is not None and n < 0:
        raise ValueError(f"a sample of {n} items")
    if n is None or n >= len(items):
        return list(items)
    rng = np.random.default_rng(seed)
    picked = rng.permutation(len(items))[:n] if draw == "permutation" else rng.choice(len(items), size=n, replace=False)
    return [items[i] for i in sorted(picked.tolist())]
