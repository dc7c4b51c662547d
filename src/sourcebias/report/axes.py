"""Axis limits that show the size of a change honestly.

matplotlib scales an axis to the data's own range, so a series that moves from 13.83 to 13.86
fills the panel like a fall from 80 to 10. :func:`value_limits` gives the axis a minimum span
instead: at least ``relative`` of the largest absolute value (10%) and at least ``floor`` (one
unit: a percentage point on a percent axis), centred on the data and kept inside ``bounds`` (0–100
for a percentage). A series that really moves across more than that keeps its own range.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

#: the stated rule, for captions
RULE = "each y-axis spans at least 10% of its largest value (and at least 1 point), so that a small change looks small"


def value_limits(
    values: Iterable[float], *, relative: float = 0.10, floor: float = 1.0, margin: float = 0.05, bounds: tuple[float, float] | None = (0.0, 100.0)
) -> tuple[float, float]:
    """``(low, high)`` of an axis showing ``values`` (NaN and infinities left out).

    Args:
        values: the plotted values.
        relative: the least span, as a share of the largest absolute value.
        floor: the least span in the values' unit.
        margin: padding on each side, as a share of the span.
        bounds: where the widened window may not go (it is shifted, not cut, to stay inside;
            the margin may reach past them, as matplotlib's does); None for no bounds.

    Returns:
        The limits: the data's range padded by ``margin``, widened about its middle to the least
        span where the data span less.
    """
    finite = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not finite:
        return bounds if bounds is not None else (0.0, 1.0)
    lo, hi = min(finite), max(finite)
    span = max(hi - lo, relative * max(abs(lo), abs(hi)), floor)
    low = (lo + hi) / 2 - span / 2
    if bounds is not None:  # shift the window inside the bounds (the data are inside it either way)
        low = max(min(low, bounds[1] - span), bounds[0]) if lo >= bounds[0] and hi <= bounds[1] and span <= bounds[1] - bounds[0] else low
    return low - margin * span, low + span + margin * span
