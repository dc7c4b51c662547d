"""IR measures as small value objects (``NDCG@10``), computed by trec_eval (pytrec-eval-terrier).

Definitions are trec_eval's, as in BEIR and the papers:

* ``NDCG@k`` — ``ndcg_cut.k``: gain = relevance grade, log2 discount;
* ``MAP@k``  — ``map_cut.k``: precision at each relevant document within the top k, summed
  and divided by the number of relevant documents of the query;
* ``Recall@k`` — ``recall.k``; ``P@k`` — ``P.k``.

sourcebias does not re-implement them; it prepares the qrels (one target source at a time)
and the ranking (already tie-broken) and lets trec_eval compute.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sourcebias.core.errors import ConfigError

_TREC = {"NDCG": "ndcg_cut", "MAP": "map_cut", "Recall": "recall", "P": "P"}
_ALIASES = {
    "ndcg": "NDCG",
    "map": "MAP",
    "ap": "MAP",
    "recall": "Recall",
    "r": "Recall",
    "p": "P",
    "precision": "P",
}
DEFAULT_MEASURES = ("NDCG", "MAP", "Recall", "P")
DEFAULT_CUTOFFS = (1, 3, 5, 10)


@dataclass(frozen=True, order=True)
class Measure:
    """A measure at a cut-off, e.g. ``Measure("NDCG", 10)``, written ``NDCG@10``."""

    name: str
    cutoff: int

    def __post_init__(self) -> None:
        if self.name not in _TREC:
            raise ConfigError(f"unknown measure '{self.name}'; known: {', '.join(_TREC)}")
        if self.cutoff < 1:
            raise ConfigError(f"cut-off must be >= 1, got {self.cutoff}")

    def __str__(self) -> str:
        return f"{self.name}@{self.cutoff}"

    @property
    def trec_family(self) -> str:
        return _TREC[self.name]

    @property
    def trec_key(self) -> str:
        """The key pytrec_eval returns for this measure (``ndcg_cut_10``)."""
        return f"{_TREC[self.name]}_{self.cutoff}"


def parse_measure(text: str) -> Measure:
    """``"nDCG@10"``, ``"map@5"``, ``"Recall@100"``, ``"P@1"`` -> :class:`Measure`."""
    m = re.fullmatch(r"\s*([A-Za-z]+)\s*@\s*(\d+)\s*", text)
    if not m:
        raise ConfigError(f"cannot read measure '{text}'; write it like NDCG@10, MAP@5, Recall@100 or P@1")
    name = _ALIASES.get(m.group(1).lower())
    if name is None:
        raise ConfigError(f"unknown measure '{m.group(1)}' in '{text}'; known: {', '.join(_TREC)}")
    return Measure(name, int(m.group(2)))


def measure_grid(names: Iterable[str] = DEFAULT_MEASURES, cutoffs: Iterable[int] = DEFAULT_CUTOFFS) -> list[Measure]:
    """Every measure name at every cut-off, in the given order: ``NDCG@1, NDCG@3, ..., MAP@1, ...``."""
    out = []
    for n in names:
        canonical = _ALIASES.get(n.lower(), n)
        for k in cutoffs:
            out.append(Measure(canonical, int(k)))
    return out


def trec_measure_spec(measures: Sequence[Measure]) -> set[str]:
    """The measure strings for ``pytrec_eval.RelevanceEvaluator`` (``{"ndcg_cut.1,3", ...}``)."""
    by_family: dict[str, set[int]] = {}
    for m in measures:
        by_family.setdefault(m.trec_family, set()).add(m.cutoff)
    return {f"{fam}.{','.join(str(k) for k in sorted(ks))}" for fam, ks in by_family.items()}
