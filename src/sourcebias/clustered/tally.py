"""Counting known-truth studies: how often an estimate covers the truth, how often it is refused
and why, and whether a refused one ever carries a p-value (it must not).

The known-truth benchmarks of the judge, the listwise re-ranker and the citation study
(``benchmarks/judge_known_truth.py``, ``known_truth_rankgpt.py``, ``citations_known_truth.py``)
and their tests feed every study's estimate to a :class:`Tally`; the bar an estimate must meet
(issue 38) is :meth:`Tally.holds`: it covers the truth in at least 90% of the studies, or it is
refused (with a reason) in every study where it does not, and never shows a p-value where its test
was refused (a p beside a missing interval is allowed only where the test itself is defined: every
query giving the same value leaves no clustered variance for an interval, while the sign-flip test
of the query sums is exact there).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

#: the coverage an estimate must reach over the studies where it is not refused
BAR = 0.90


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@dataclass
class Tally:
    """One estimate over many studies (``truth`` None: nothing to cover, e.g. an answer set that
    says nothing; then every study must refuse)."""

    scenario: str
    estimate: str
    truth: float | None
    studies: int = 0
    refused: int = 0
    covered: int = 0
    significant: int = 0
    p_without_interval: int = 0
    reasons: Counter = field(default_factory=Counter)
    per_study: bool = False  # the truth was given study by study (then the table says so)

    def add(self, low: Any, high: Any, p: Any, reason: str = "", *, test_defined: bool = False, truth: float | None = None) -> None:
        """One study's estimate: its interval (None or NaN: none), p, and why it has none.

        Args:
            low: Lower bound.
            high: Upper bound.
            p: The p-value shown (None or NaN: none).
            reason: Why there is no interval.
            test_defined: Whether the estimate's test is defined though its interval is not (then
                a p may be shown).
            truth: This study's truth, where it differs between studies (an AME, a rate cell);
                the tally's ``truth`` otherwise.
        """
        if truth is not None:
            self.truth, self.per_study = truth, True
        self.studies += 1
        if not (_finite(low) and _finite(high)):
            self.refused += 1
            self.reasons[reason or "(no reason given)"] += 1
            self.p_without_interval += int(_finite(p) and not test_defined)
            return
        self.covered += int(self.truth is not None and low <= self.truth <= high)
        self.significant += int(_finite(p) and p < 0.05)

    @property
    def given(self) -> int:
        """Studies with an interval."""
        return self.studies - self.refused

    @property
    def coverage(self) -> float:
        """Coverage over the studies with an interval (NaN when none)."""
        return self.covered / self.given if self.given else float("nan")

    def holds(self) -> bool:
        """The bar: coverage ≥ 90% where an interval was given (none given when there is no truth),
        every refusal with a reason, no p without an interval."""
        if self.p_without_interval or self.reasons.get("(no reason given)"):
            return False
        if self.truth is None:
            return self.given == 0
        return self.given == 0 or self.coverage >= BAR

    def row(self) -> dict[str, Any]:
        """The summary row (for a table)."""
        top = self.reasons.most_common(1)[0][0] if self.reasons else ""
        return {
            "scenario": self.scenario,
            "estimate": self.estimate,
            "truth": "–" if self.truth is None else "per study" if self.per_study else f"{self.truth:+.3f}",
            "studies": self.studies,
            "refused": self.refused,
            "coverage": "–" if not self.given else f"{self.coverage:.1%}",
            "p < 0.05": "–" if not self.given else f"{self.significant / self.given:.1%}",
            "p without CI": self.p_without_interval,
            "holds": "yes" if self.holds() else "NO",
            "main reason refused": top[:90],
        }


def markdown(tallies: list[Tally]) -> str:
    """The tallies as a Markdown table.

    Args:
        tallies: One per scenario and estimate.

    Returns:
        The table.
    """
    rows = [t.row() for t in tallies]
    if not rows:
        return ""
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(lines)
