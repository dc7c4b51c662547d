"""How many queries a claim needs: power analysis of source-bias statistics from a pilot's
per-query values (``sourcebias power``).

From an ``evaluate`` folder (or a grid cell): the minimum detectable Relative Δ, NDCG difference,
twin preference and ΔNDSR at a level α and power for studies of n queries, and the n a target
effect needs, for the test that marks ``*`` in ``evaluate`` (with its correction across the
report's tests, :mod:`.family`) and beside it the uncorrected one, by resampling the pilot's
queries (seeded) and analytically (statsmodels' ``TTestPower``, the normal approximation of the
clustered twin test), side by side, with a power-curve figure; see :mod:`sourcebias.power.analysis`,
:mod:`.paired`, :mod:`.family` and :mod:`.twin` for what a shift means for each statistic.
"""

from sourcebias.core.artifacts import register_loader
from sourcebias.power.analysis import PowerSettings, power_analysis
from sourcebias.power.base import ANALYTIC, METHODS, RESAMPLING, STAR, TESTS, UNCORRECTED
from sourcebias.power.family import FamilyPower, PairedFamily
from sourcebias.power.job import load_pilot, run_power
from sourcebias.power.paired import PairedPower
from sourcebias.power.pilot import EFFECT_UNITS, STATISTICS, UNITS, statistic_name
from sourcebias.power.result import PowerResult, format_effect, load_power
from sourcebias.power.twin import TwinPower

register_loader("power", "sourcebias.power.result:PowerResult.load")

__all__ = [
    "ANALYTIC",
    "EFFECT_UNITS",
    "METHODS",
    "RESAMPLING",
    "STAR",
    "STATISTICS",
    "TESTS",
    "UNCORRECTED",
    "UNITS",
    "FamilyPower",
    "PairedFamily",
    "PairedPower",
    "PowerResult",
    "PowerSettings",
    "TwinPower",
    "format_effect",
    "load_pilot",
    "load_power",
    "power_analysis",
    "run_power",
    "statistic_name",
]
