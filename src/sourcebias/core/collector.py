"""Python's cyclic garbage collector, kept from re-scanning what an evaluation holds.

A full collection traverses every live container object. An evaluation holds millions of them
for its whole life (the corpus's records, the analyzer's memo of terms per text and per chunk,
the runs), and building them triggers collection after collection, each of which walks all that
came before: on nfcorpus (7,266 documents) 0.2 to 0.3 s of ``evaluate -r bm25``'s 3.3 s went to
collections that found nothing to free (``benchmarks/bench_bm25_evaluate.py``).

* :func:`paused` turns the collector off around a step that allocates many objects but creates
  no reference cycle (reading JSON records, analysing texts into tuples of terms): reference
  counting frees all of its garbage, so the collector has nothing to find there.
* :class:`Freezer` moves every object alive at a point (the loaded corpus; then the runs) into
  the collector's permanent generation (:func:`gc.freeze`) until it is released: the later
  steps (ranking, the statistics' imports, the report) then collect their own garbage without
  walking the corpus and the runs again.

Both put things back as they found them, also on an error. The collector is process-wide:
another thread's allocations are not collected meanwhile either, which delays, never loses, a
collection.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

#: The freezers in force (innermost last); see :class:`Freezer`.
_FREEZERS: list[Freezer] = []


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The cyclic collector off for the block (for steps that create no reference cycle).

    Inside a :class:`Freezer`, what the block allocated is frozen before the collector is turned
    back on, so it is never scanned; elsewhere the next collections scan it once, as usual.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if _FREEZERS:
            _FREEZERS[-1].now()
        if was_enabled:
            gc.enable()


class Freezer:
    """Moves every object alive at each :meth:`now` (and at the end of each :func:`paused` block
    inside it) into the collector's permanent generation (:func:`gc.freeze`); leaving the
    ``with`` block puts them back. Does nothing where the process has frozen objects already when
    it is entered (putting them back would undo that freeze too)."""

    def __init__(self) -> None:
        self._active = False
        self._froze = False

    def __enter__(self) -> Freezer:
        self._active = gc.get_freeze_count() == 0
        _FREEZERS.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _FREEZERS.remove(self)
        if self._froze:
            gc.unfreeze()
            self._froze = False

    def now(self) -> None:
        """Keep every object alive now out of later collections' scans."""
        if self._active:
            gc.freeze()
            self._froze = True
