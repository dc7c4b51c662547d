"""The estimator registry and the refusal rules every query-clustered estimate shares.

An :class:`Estimator` computes one kind of quantity from per-item values and the query of each
item (the cluster): a mean of paired differences, a proportion, a position/source fit. Each kind is
one class in one file and one :func:`register_estimator` line, and every caller (the retrievers'
twin preference, the listwise re-rankers, the judges, the citation study, the analyses) uses the
registered one, so a paper that reports a judge's twin bias beside a citation twin difference
carries one interval method for one kind of number.

**The refusal rules live here, once** (:func:`interval_refusal`, :func:`nothing_refusal`,
:data:`NO_VARIATION`): an estimate that the data make undefined or untrustworthy is reported with
the reason and without the interval or p-value it cannot have, never with a number computed as if
it could (no p = 1 from one query, no zero-width interval, no interval on items the model never
answered).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Any

from sourcebias.core.errors import ConfigError

#: an interval refused because every query gives the same value (a clustered variance of 0)
NO_VARIATION = "every query gives the same value: no variation between queries to estimate a clustered interval from"


def interval_refusal(queries: int, level: float) -> str:
    """Why ``queries`` clusters give no interval at ``level`` ("" when they give one).

    The rule of every query-clustered interval and test of the package (the audit's corrected
    estimates, the judges, the citation study, the re-rankers' fit, the retrievers' twin
    preference). The queries are the independent units: with one query there is no spread between
    queries to estimate from. With a few, the resamples of the queries take only C(2n − 1, n)
    distinct values (multisets of n of them), fewer than the 2 / (1 − level) that the interval's
    two tails of (1 − level) / 2 each need to hold one value (at 95%: 40; 4 queries give 35, 5 give
    126): the queries cannot say where the tails are, whatever the method. A cluster-robust interval
    on so few queries rests on n − 1 ≤ 3 degrees of freedom and a sign-flip test on them cannot
    reach p < 0.05 (its smallest p is 2 / 2^n), so the interval and the p-value are refused alike.

    Args:
        queries: The clusters (queries) the estimate rests on.
        level: The interval's coverage.

    Returns:
        The reason, or "" when the queries support an interval.
    """
    if queries < 2:
        return f"fewer than 2 queries ({queries}): a query-clustered interval or test needs the spread between queries"
    distinct, need = math.comb(2 * queries - 1, queries), math.ceil(2 / (1 - level) - 1e-9)
    if distinct < need:
        return (
            f"{queries} queries give {distinct} distinct resamples of the queries, too "
            f"few for a {level:.0%} interval clustered by query (its tails need {need})"
        )
    return ""


def nothing_refusal(left_out: int, what: str = "item") -> str:
    """The reason of an estimate with nothing to estimate from.

    Every unit was left out (an unparseable or repaired answer), or there was none.

    Args:
        left_out: Units left out.
        what: What a unit is (``item``, ``answer``, ``pair``).

    Returns:
        The reason.
    """
    if left_out:
        return f"nothing to estimate from: all {left_out:,} {what}s were left out (no value the model gave could be read)"
    return f"nothing to estimate from: no {what}"


@dataclass
class Estimate:
    """One query-clustered estimate: the value, its interval and test, what it rests on.

    ``refused`` is why there is no interval and no p ("" when both were computed); ``method`` and
    ``p_method`` name the methods actually used (or ``none`` with the reason); ``note`` is what a
    reader must see beside the number (e.g. a rate of 0 whose interval uses another method).
    """

    estimate: float = float("nan")
    low: float = float("nan")
    high: float = float("nan")
    p: float = float("nan")
    level: float = 0.95
    method: str = ""
    p_method: str = ""
    items: int = 0
    queries: int = 0
    left_out: int = 0
    refused: str = ""
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The fields by name (JSON-ready: NaN stays NaN; see :func:`finite_or_none`).

        Returns:
            ``{field: value}``.
        """
        return asdict(self)

    @property
    def has_interval(self) -> bool:
        """Whether an interval was computed (finite bounds)."""
        return math.isfinite(self.low) and math.isfinite(self.high)

    def refuse(self, reason: str) -> Estimate:
        """This estimate without interval and p, with ``reason`` (kept: the first reason given).

        Args:
            reason: Why.

        Returns:
            ``self``.
        """
        self.low = self.high = self.p = float("nan")
        self.refused = self.refused or reason
        self.method = self.method if self.method.startswith("none") else f"none ({self.refused})"
        self.p_method = self.p_method if self.p_method.startswith("none") else f"none ({self.refused})"
        return self


def finite_or_none(v: Any) -> Any:
    """``None`` for NaN or infinity (JSON has neither), the value otherwise.

    Args:
        v: A value.

    Returns:
        The value, or None.
    """
    return None if isinstance(v, float) and not math.isfinite(v) else v


class Estimator(ABC):
    """A query-clustered estimator of one kind of quantity: one class in one file, one registration line.

    ``refusals`` lists, for its docstring and the docs, when it refuses.
    """

    name: str = ""
    description: str = ""
    refusals: tuple[str, ...] = ()

    @abstractmethod
    def estimate(self, *args: Any, **kwargs: Any) -> Any:
        """The estimate.

        Args:
            *args: The estimator's inputs (per item values and their queries).
            **kwargs: Its options (the level, seeds).

        Returns:
            An :class:`Estimate`, or a fit's dict holding several.
        """

    @abstractmethod
    def example(self, queries: int, seed: int) -> dict[str, Any]:
        """Keyword arguments of :meth:`estimate` for a study of ``queries`` queries with a known effect.

        What :class:`sourcebias.testing.EstimatorTestCase` feeds it.

        Args:
            queries: Clusters.
            seed: Seed of the draws.

        Returns:
            The keyword arguments.
        """


_ESTIMATORS: dict[str, Estimator] = {}


def register_estimator(estimator: Estimator) -> Estimator:
    """Make ``estimator`` known to :func:`get_estimator` under its name.

    Args:
        estimator: The estimator (an instance).

    Returns:
        ``estimator``.

    Raises:
        ValueError: Its name is not made of letters, digits and ``_``.
    """
    if not estimator.name or not estimator.name.replace("_", "").isalnum():
        raise ValueError(f"an estimator needs a name of letters, digits and _, got {estimator.name!r}")
    _ESTIMATORS[estimator.name] = estimator
    return estimator


def estimator_kinds() -> dict[str, Estimator]:
    """Every registered estimator (the built-in ones imported first).

    Returns:
        ``{name: estimator}``.
    """
    from sourcebias.core.plugins import load_builtins

    load_builtins(BUILTIN)
    return dict(_ESTIMATORS)


def get_estimator(name: str) -> Estimator:
    """A registered estimator by name (case-insensitive).

    Args:
        name: ``mean_difference``, ``clustered_proportion``, ``position_source``.

    Returns:
        The estimator.

    Raises:
        ConfigError: An unknown name (the known ones are listed).
    """
    kinds = estimator_kinds()
    key = name.strip().lower()
    if key not in kinds:
        raise ConfigError(f"unknown estimator '{name}'; known: {', '.join(kinds)}")
    return kinds[key]


BUILTIN = ("sourcebias.clustered.mean_difference", "sourcebias.clustered.clustered_proportion", "sourcebias.clustered.position_source")
