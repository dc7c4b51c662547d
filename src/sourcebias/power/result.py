"""A power analysis as an artifact: what it computed, written to an output folder and loaded back
into an equal :class:`PowerResult`.

Folder contents::

    power.json        settings (α, power, n, effects, resamples, seed, ...), the pilot, every
                      pilot's summary, rows, curve points, notes, what each method is
    power.csv         statistic,retriever,llm_source,measure,test,quantity,method,n,effect,effect_source,value,note
                      quantity: mde (at n), power (at n and the effect), n_needed (for the effect);
                      test: star (the test and correction that mark * in evaluate) or uncorrected
    pilots.csv        one row per statistic, retriever, LLM source and measure: unit, queries,
                      the pilot's estimate, sd, p-value (of its * test), the tests and how an effect is imposed
    curves.csv        statistic,retriever,llm_source,measure,test,method,n,effect,power
    summary.md, summary.tex   the table the command prints, through the one Report
    power_curves.png  the power curves (written by :func:`sourcebias.power.figure.plot_power_curves`)
    manifest.json     kind ``power``, inputs, parameters (seed, α, power, resamples, methods), files
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sourcebias.core.artifacts import json_plain
from sourcebias.core.atomic import write_csv

FORMAT_VERSION = 2  # 2: statistics named as in the registry, rows and curves per test (star / uncorrected)
ROW_COLUMNS = ("statistic", "retriever", "llm_source", "measure", "test", "quantity", "method", "n", "effect", "effect_source", "value", "note")
CURVE_COLUMNS = ("statistic", "retriever", "llm_source", "measure", "test", "method", "n", "effect", "power")
PILOT_COLUMNS = (
    "statistic",
    "retriever",
    "llm_source",
    "measure",
    "unit",
    "queries",
    "estimate",
    "sd",
    "p_value",
    "p_uncorrected",
    "test",
    "uncorrected_test",
    "family",
    "shift",
    "undefined",
)
NUMERIC = {
    "value",
    "effect",
    "n",
    "power",
    "estimate",
    "sd",
    "p_value",
    "p_uncorrected",
    "mean_human",
    "mean_llm",
    "level",
    "relative_delta",
    "pairs_per_query",
}


@dataclass(eq=True)
class PowerResult:
    """Everything a power analysis computed (see the module docstring)."""

    settings: dict[str, Any]
    pilot: dict[str, Any]
    pilots: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    curves: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    methods: dict[str, str] = field(default_factory=dict)

    def value(
        self,
        statistic: str,
        retriever: str,
        quantity: str,
        method: str,
        *,
        measure: str | None = None,
        n: int | None = None,
        llm_source: str | None = None,
        test: str = "star",
    ) -> float:
        """One number of :attr:`rows` (NaN when undefined) of the test that marks ``*`` (``test="star"``)
        or the uncorrected one (``"uncorrected"``); raises ``KeyError`` when absent."""
        for r in self.rows:
            if (r["statistic"], r["retriever"], r["quantity"], r["method"], r.get("test", "star")) != (statistic, retriever, quantity, method, test):
                continue
            if (measure is None or r["measure"] == measure) and (n is None or r["n"] == n) and (llm_source is None or r["llm_source"] == llm_source):
                return r["value"]
        raise KeyError((statistic, retriever, quantity, method, measure, n, test))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PowerResult):
            return NotImplemented
        return _plain(self.__dict__) == _plain(other.__dict__)

    # -- the artifact -----------------------------------------------------------------------
    def save(self, folder: str | Path) -> dict[str, Path]:
        """Write ``power.json`` and the CSV tables into ``folder`` (a claimed folder's staging)."""
        from sourcebias.core.atomic import atomic_write_json

        folder = Path(folder)
        body = {"format": FORMAT_VERSION, "kind": "power", **_plain(self.__dict__)}
        return {
            "power": atomic_write_json(folder / "power.json", body),
            "rows": write_csv(folder / "power.csv", ROW_COLUMNS, self.rows),
            "pilots": write_csv(folder / "pilots.csv", PILOT_COLUMNS, self.pilots),
            "curves": write_csv(folder / "curves.csv", CURVE_COLUMNS, self.curves),
        }

    @classmethod
    def load(cls, folder: str | Path) -> PowerResult:
        """Read a folder written by ``sourcebias power`` (or :meth:`save`)."""
        from sourcebias.core.artifacts import read_artifact_json

        body = _restore(read_artifact_json(folder, "power.json", kind="power", version=FORMAT_VERSION, what="power analysis"))
        return cls(**{k: body[k] for k in ("settings", "pilot", "pilots", "rows", "curves", "notes", "methods")})


def load_power(folder: str | Path) -> PowerResult:
    """Load the output folder of ``sourcebias power``."""
    return PowerResult.load(folder)


def format_effect(statistic: str, value: float) -> str:
    """An effect as the tables write it: Relative Δ in percent, twin preference as a share in
    percent, differences with three decimals; ``–`` for undefined."""
    if value is None or not math.isfinite(value):
        return "–"
    if statistic == "relative_delta_ci":
        return f"{value:+.1f}%"
    if statistic == "twin_preference":
        return f"{value * 100:.1f}%"
    return f"{value:+.3f}"


_plain = json_plain  # one JSON-safe conversion for every artifact (core.artifacts)


def _restore(obj: Any, key: str = "") -> Any:
    """Inverse of :func:`_plain` for the numeric fields (None -> NaN)."""
    if isinstance(obj, dict):
        return {k: _restore(v, k) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_restore(v, key) for v in obj]
    if obj is None and key in NUMERIC:
        return math.nan
    return obj
