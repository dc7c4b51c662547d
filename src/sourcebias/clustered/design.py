"""Balanced orders: the orders in which a list of n passages is shown to a model (a citation
study's contexts, a listwise re-ranker's windows), as rows of a cyclic Latin square.

Order j shows the list rotated by an offset o_j (position p holds passage (p + o_j) mod n; order 0
is the list as given). With as many orders as passages (``orders = n``) the offsets are 0..n−1:
every passage stands at every position exactly once, so any difference between two passages
averaged over the orders is free of the position effect, whatever its shape (*balanced*). With
fewer (1 < orders < n) no design can put every passage at every position; the rows are spread
(o_j = ⌊j·n/orders⌋), so each passage stands at ``orders`` positions about n/orders apart
(*partial*): a model of position (a regression with position terms) separates it from the
source, a plain difference does not. More orders than passages would repeat a row (the same
prompt, the same answer): refused.

The offsets are chosen so that, with any two or more orders, position and rank are not
collinear: position − rank is o_j mod n, and rank and position effects are both identified when
the offsets' greatest common divisor with n is 1 (otherwise a position effect with period
gcd could be read as a rank effect); when ⌊j·n/orders⌋ gives a larger divisor, the last offset
is moved down by one until it is 1. The reverse order is never used: the ranking and its reverse
make position dummies a linear function of rank dummies.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError

BALANCED = "balanced"
PARTIAL = "partial"
SINGLE = "single"


def rotation_offsets(n: int, orders: int) -> list[int]:
    """The offsets of the ``orders`` rows (module docstring).

    Args:
        n: Passages in the list.
        orders: Orders wanted (1..n).

    Returns:
        The offsets, increasing, the first 0.

    Raises:
        ConfigError: ``orders`` below 1 or above ``n``.
    """
    if orders < 1:
        raise ConfigError(f"orders must be at least 1, got {orders}")
    if orders > n:
        raise ConfigError(f"a list of {n} passages has {n} cyclic orders; {orders} orders would show some twice (the same prompt, the same answer)")
    offsets = [j * n // orders for j in range(orders)]
    while orders > 1 and math.gcd(n, *offsets) > 1:
        offsets[-1] -= 1  # spacing >= 2 whenever the gcd exceeds 1, so the offsets stay distinct
    return offsets


def cyclic_orders(n: int, orders: int) -> list[np.ndarray]:
    """The orders themselves: ``out[j][p]`` is the passage (0..n−1, as given) shown at position p.

    Args:
        n: Passages in the list.
        orders: Orders (1..n).

    Returns:
        One index array per order, order 0 the list as given.
    """
    return [(np.arange(n) + o) % n for o in rotation_offsets(n, orders)]


def order_balance(n: int, orders: int) -> dict[str, Any]:
    """What balance the design of ``orders`` cyclic orders of ``n`` passages holds.

    Args:
        n: Passages in the list.
        orders: Orders shown.

    Returns:
        ``kind`` (``balanced``, ``partial`` or ``single``), ``orders``, ``size``,
        ``positions_per_passage`` and ``text`` (a sentence for the output).
    """
    orders = min(orders, n)
    if orders == n and n > 1:
        kind, text = BALANCED, f"balanced: {orders} orders of {n} passages, a cyclic Latin square (each passage at each position once)"
    elif orders > 1:
        kind, text = PARTIAL, f"partial: {orders} orders of {n} passages (each passage at {orders} of the {n} positions, about {n / orders:.1f} apart)"
    else:
        kind, text = SINGLE, f"single: one order of {n} passages (as given, so position and the previous ranking coincide)"
    return {"kind": kind, "orders": orders, "size": n, "positions_per_passage": orders, "text": text}
