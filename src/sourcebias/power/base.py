"""What every statistic's power model offers: power at (n, effect) by a method, the minimum
detectable effect (MDE) at n, and the n a target effect needs.

Effects are in the statistic's own units (a difference, a Relative Δ in percent, a share of
pairs); ``null`` is the value of no effect (0, or 0.5 for a share of pairs) and an MDE is searched
in one *direction* from it (+1: above the null, -1: below; the command uses the pilot's
direction). Two methods:

* ``resampling``: simulated studies of n queries drawn with replacement from the pilot's queries
  after the hypothetical effect is imposed (each model says how), tested with the analysis' own
  test; the power is the share of studies that reject (seeded, common draws for every effect at
  one n, so a power curve over effects is monotone).
* ``analytic``: a closed form (statsmodels' ``TTestPower``, the exact binomial), where one exists.

A number that cannot be right is never returned: an undefined pilot, an effect beyond what the
statistic can take, or a power that no effect or n up to the limit reaches give NaN (or ``None``)
with the reason.
"""

from __future__ import annotations

import math
import zlib
from abc import ABC, abstractmethod

import numpy as np

from sourcebias.power.search import smallest_effect, smallest_n

RESAMPLING = "resampling"
ANALYTIC = "analytic"
METHODS = (RESAMPLING, ANALYTIC)
#: the test a figure is the power of: the one that marks ``*`` in ``evaluate`` (with its
#: correction), and the same statistic's test alone where that differs
STAR = "star"
UNCORRECTED = "uncorrected"
TESTS = (STAR, UNCORRECTED)
#: largest number of values drawn at once (the draws of a large n are made in chunks)
CHUNK_VALUES = 4_000_000


def seeded_rng(seed: int, key: str, n: int) -> np.random.Generator:
    """The generator of the studies of ``n`` queries for the pilot values named ``key``: the
    same numbers whatever else is analysed, and the same draws for statistics that share values
    (Relative Δ and the NDCG difference of one measure)."""
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8")), n])


def chunks(resamples: int, n: int):
    """``(start, stop)`` slices of the studies such that one slice draws at most
    :data:`CHUNK_VALUES` values."""
    step = max(1, CHUNK_VALUES // max(1, n))
    for start in range(0, resamples, step):
        yield start, min(resamples, start + step)


class PowerModel(ABC):
    """Power of one statistic's test, from a pilot. Subclasses set :attr:`null`, :attr:`min_n`
    and implement :meth:`power`, :meth:`bound` and :meth:`search_span`."""

    null: float = 0.0
    min_n: int = 2
    #: the statistic's test, as the output names it
    test: str = ""
    #: how a hypothetical effect is imposed on the resampled pilot
    shift: str = ""
    #: the pilot's number of queries (each model sets it)
    queries: int

    def __init__(self, *, alpha: float, resamples: int, seed: int, key: str):
        self.alpha = alpha
        self.resamples = resamples
        self.seed = seed
        self.key = key
        self.undefined = ""

    @property
    @abstractmethod
    def estimate(self) -> float:
        """The pilot's own value of the statistic."""

    @abstractmethod
    def power(self, method: str, n: int, effect: float) -> float:
        """Power of the test at ``n`` queries when the true value of the statistic is ``effect``."""

    @abstractmethod
    def bound(self) -> float:
        """The largest distance from :attr:`null` the statistic can take (``inf``: none)."""

    @abstractmethod
    def search_span(self, n: int) -> float:
        """A distance from :attr:`null` beyond any MDE the search could find at ``n``."""

    @property
    def direction(self) -> int:
        """+1 when the pilot lies at or above the null, -1 below: the side MDEs are searched on."""
        return -1 if self.estimate < self.null else 1

    def mde(self, method: str, n: int, power: float) -> tuple[float, str]:
        """``(effect, note)``: the smallest effect in the pilot's direction whose power at ``n``
        reaches ``power``; NaN with the reason when none does or the pilot cannot say."""
        if self.undefined:
            return math.nan, self.undefined
        if n < self.min_n:
            return math.nan, f"undefined: the test needs at least {self.min_n} queries"
        sign = self.direction
        span = min(self.search_span(n), self.bound())
        tol = span * 1e-5
        e = smallest_effect(lambda x: self.power(method, n, self.null + sign * x), power, lo=0.0, hi=span, tol=tol)
        if math.isnan(e) and math.isnan(self.power(method, n, self.null + sign * span)):
            return math.nan, f"undefined: the power at n = {n:,} could not be computed"
        if math.isnan(e):
            return math.nan, f"not reachable: power {power:g} is not reached at n = {n:,} by any effect the statistic can take"
        return self.null + sign * e, ""

    def n_needed(self, method: str, effect: float, power: float, max_n: int) -> tuple[int | None, str]:
        """``(n, note)``: the smallest number of queries whose power at ``effect`` reaches
        ``power`` (``None`` with the reason when the pilot cannot say, there is no effect, or
        ``max_n`` queries do not suffice)."""
        if self.undefined:
            return None, self.undefined
        if not math.isfinite(effect) or math.isclose(effect, self.null, abs_tol=1e-12):
            return None, "undefined: no effect to detect (the effect equals the null)"
        if abs(effect - self.null) > self.bound() * (1 + 1e-9):
            return None, f"undefined: an effect of {effect:g} is beyond what the statistic can take"
        n = smallest_n(lambda m: self.power(method, m, effect), power, start=self.min_n, max_n=max_n)
        if n is None:
            if math.isnan(self.power(method, max_n, effect)):
                return None, f"undefined: the power at n = {max_n:,} could not be computed"
            return None, f"more than {max_n:,} queries (power {power:g} not reached at n = {max_n:,})"
        return n, ""

    def check_effect(self, effect: float) -> str:
        """Why ``effect`` cannot be analysed, or ``""``."""
        if self.undefined:
            return self.undefined
        if abs(effect - self.null) > self.bound() * (1 + 1e-9):
            return f"undefined: an effect of {effect:g} is beyond what the statistic can take"
        return ""
