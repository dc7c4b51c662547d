"""Measures as small value objects (``NDCG@10``) backed by a registry of measure kinds.

Two scopes of measure:

* **target** measures need relevance labels and are computed once per *target* (a source, or
  ``all``): NDCG, MAP, Recall, P — trec_eval's definitions, computed by pytrec-eval-terrier
  (sourcebias prepares the qrels of each target and the tie-broken ranking, and lets trec_eval
  compute; see :mod:`sourcebias.evaluation.protocol`);
* **source** measures are label-free functions of the ranking, one value per *source*:
  ``Share@k`` (the fraction of each source in the top k; Cocktail's "human rate@k") and
  ``NDSR@k`` (the same with a log2 rank discount; Huang et al., 2026).

Definitions of the target measures (trec_eval, as in BEIR and the papers):

* ``NDCG@k`` — ``ndcg_cut.k``: gain = relevance grade, log2 discount (Järvelin & Kekäläinen,
  "Cumulated gain-based evaluation of IR techniques", ACM TOIS 20(4), 2002, in trec_eval's form);
* ``MAP@k``  — ``map_cut.k``: precision at each relevant document within the top k, summed and
  divided by the number of relevant documents of the query;
* ``Recall@k`` — ``recall.k``; ``P@k`` — ``P.k``.

References of the source measures: ``Share@k`` is the "human rate@k" of Cocktail's evaluation
(Dai et al., Findings of ACL 2024); ``NDSR@k`` is from Huang et al., *Relevance Supervision Can
Teach Neural Retrievers to Prefer LLM-Generated Text* (2026, arXiv 2604.06163). Each kind names
its reference in :attr:`MeasureKind.reference`.

**Adding a measure** is one class and one registration line in this file (or in your own code):
subclass :class:`TrecMeasureKind` with the trec_eval family name, or :class:`SourceMeasureKind`
with a ``per_query`` method, and pass an instance to :func:`register_measure`. ``--metric`` and
:func:`parse_measure` then accept it, with its aliases.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sourcebias.core.errors import ConfigError

if TYPE_CHECKING:
    from sourcebias.retrieval.run import Run


class MeasureKind:
    """A family of measures, one per cut-off (``NDCG`` -> ``NDCG@1``, ``NDCG@10``, ...).

    Attributes:
        name: The canonical name (``NDCG``).
        aliases: Other spellings ``--metric`` accepts, case-insensitive.
        description: One line on what it measures.
        scope: ``target`` (needs relevance labels; one value per target) or ``source`` (label-free;
            one value per source).
        reference: Where the measure is defined (a paper, or the trec_eval measure it is computed as).
    """

    name: str = ""
    aliases: tuple[str, ...] = ()
    description: str = ""
    scope: str = "target"
    #: where the measure is defined (a paper, or the trec_eval measure it is computed as)
    reference: str = ""


#: trec_eval's families whose value at cut-off k depends on the run's top k documents alone (and
#: the qrels): a run cut at the largest cut-off scores the same (:func:`trec_depth`).
TOP_K_FAMILIES = frozenset({"ndcg_cut", "map_cut", "P", "recall", "success"})


class TrecMeasureKind(MeasureKind):
    """A trec_eval measure with a cut-off, computed per target source by pytrec_eval.

    Args:
        name: The canonical name (``NDCG``).
        trec_family: trec_eval's measure family (``ndcg_cut``); the cut-off is appended.
        aliases: Other spellings.
        description: One line on what it measures.
        reference: Where it is defined (default: trec_eval's family).
    """

    scope = "target"

    def __init__(self, name: str, trec_family: str, aliases: Sequence[str] = (), description: str = "", reference: str = ""):
        self.name, self.trec_family, self.aliases, self.description = name, trec_family, tuple(aliases), description
        self.reference = reference or f"trec_eval's {trec_family}"

    def trec_key(self, cutoff: int) -> str:
        """The key pytrec_eval returns for a cut-off.

        Args:
            cutoff: The cut-off k.

        Returns:
            ``<trec_family>_<k>`` (``ndcg_cut_10``).
        """
        return f"{self.trec_family}_{cutoff}"


class SourceMeasureKind(MeasureKind, ABC):
    """A label-free measure of a ranking, one value per source and query."""

    scope = "source"

    @abstractmethod
    def per_query(self, run: Run, query_ids: Sequence[str], cutoff: int) -> np.ndarray:
        """The measure's values per query and source.

        Args:
            run: A tie-broken run.
            query_ids: The queries, in the order of the rows.
            cutoff: The cut-off k.

        Returns:
            A ``(len(query_ids), len(run.corpus.sources))`` array; NaN for a query without a ranking
            (left out of means).
        """


def weighted_source_shares(run: Run, query_ids: Sequence[str], weights: np.ndarray) -> np.ndarray:
    """Per query and source, the share of the rank weights that the source's documents take.

    Args:
        run: A tie-broken run.
        query_ids: The queries, in the order of the rows.
        weights: ``weights[r - 1]`` is the weight of rank r, for as many ranks as there are weights.

    Returns:
        A ``(len(query_ids), len(run.corpus.sources))`` array of shares; NaN for a query with an
        empty ranking.
    """
    codes = run.corpus.source_codes
    n_src = len(run.corpus.sources)
    mat = np.full((len(query_ids), n_src), np.nan)
    for i, q in enumerate(query_ids):
        pos = run.positions.get(q)
        if pos is None or len(pos) == 0:
            continue
        top = codes[pos[: len(weights)]]
        w = weights[: len(top)]
        mat[i] = np.bincount(top, weights=w, minlength=n_src) / w.sum()
    return mat


class RankWeightedShare(SourceMeasureKind):
    """A source's share of the rank weights in the top k (Share@k, NDSR@k).

    One computation, :func:`weighted_source_shares`, with each measure's :meth:`rank_weights`.
    """

    @abstractmethod
    def rank_weights(self, cutoff: int) -> np.ndarray:
        """The weight of ranks 1..``cutoff``."""

    def per_query(self, run: Run, query_ids: Sequence[str], cutoff: int) -> np.ndarray:
        """The share of the rank weights each source's documents take in each query's top ``cutoff``.

        NaN for a query with an empty ranking; with fewer than k documents ranked, the weights of
        the ranked ones.
        """
        return weighted_source_shares(run, query_ids, self.rank_weights(cutoff))


class Share(RankWeightedShare):
    """``Share@k``: the fraction of each source among the top k of a query's ranking.

    Cocktail's "human rate@k" (Dai et al., Findings of ACL 2024). The denominator is the number of
    documents in the top k (fewer than k if fewer were retrieved); a query with an empty ranking
    gets NaN.
    """

    name = "Share"
    aliases = ("share", "rate", "human-rate")
    description = "fraction of each source in the top k (Cocktail's human rate@k)"
    reference = "Cocktail's human rate@k: Dai et al., Cocktail, Findings of ACL 2024"

    def rank_weights(self, cutoff: int) -> np.ndarray:
        """Every rank of the top ``cutoff`` counts the same (the plain fraction)."""
        return np.ones(cutoff)


class NDSR(RankWeightedShare):
    """``NDSR@k``, normalized discounted source ratio (Huang et al., 2026): the share of each source in the top k, each rank r weighted 1 / log2(1 + r).

    Label-free, so it works on any query set. With fewer than k documents ranked, the weights of the
    ranked ones are used; a query with an empty ranking gets NaN. ΔNDSR@k = mean over queries of
    NDSR_human − NDSR_LLM (< 0: the retriever prefers LLM text); see
    :mod:`sourcebias.evaluation.stats.delta_ndsr`.

    Reference: Huang et al., *Relevance Supervision Can Teach Neural Retrievers to Prefer
    LLM-Generated Text*, 2026, arXiv 2604.06163 (package ``relevance_source_bias``); their ties are broken by
    document id, which favours one source; here ranks come from sourcebias' fair tie rule.
    """

    name = "NDSR"
    aliases = ("ndsr",)
    description = "discounted share of each source in the top k (label-free; Huang et al. 2026)"
    reference = "Huang et al., Relevance Supervision Can Teach Neural Retrievers to Prefer LLM-Generated Text, 2026, arXiv 2604.06163"

    def rank_weights(self, cutoff: int) -> np.ndarray:
        """Rank r weighs 1 / log2(1 + r), as in DCG."""
        weights: np.ndarray = 1.0 / np.log2(1.0 + np.arange(1, cutoff + 1))
        return weights


_KINDS: dict[str, MeasureKind] = {}
_BY_ALIAS: dict[str, str] = {}


def register_measure(kind: MeasureKind) -> MeasureKind:
    """Make ``kind`` (and its aliases, case-insensitive) known to :func:`parse_measure`.

    Args:
        kind: The measure kind (an instance).

    Returns:
        ``kind``.

    Raises:
        ValueError: Its name is empty or holds ``@``.
    """
    if not kind.name or "@" in kind.name:
        raise ValueError(f"a measure kind needs a name without '@', got {kind.name!r}")
    _KINDS[kind.name] = kind
    for a in (kind.name, *kind.aliases):
        _BY_ALIAS[a.lower()] = kind.name
    return kind


register_measure(
    TrecMeasureKind(
        "NDCG",
        "ndcg_cut",
        ("ndcg",),
        "normalised discounted cumulative gain (graded)",
        reference="Järvelin & Kekäläinen, Cumulated gain-based evaluation of IR techniques, ACM TOIS 20(4), 2002; trec_eval's ndcg_cut",
    )
)
register_measure(TrecMeasureKind("MAP", "map_cut", ("map", "ap"), "mean average precision within the top k"))
register_measure(TrecMeasureKind("Recall", "recall", ("recall", "r"), "share of the relevant documents in the top k"))
register_measure(TrecMeasureKind("P", "P", ("p", "precision"), "precision at k"))
register_measure(Share())
register_measure(NDSR())


def measure_kinds() -> dict[str, MeasureKind]:
    """Every registered measure kind (plugins loaded first).

    Returns:
        ``{name: kind}``.
    """
    from sourcebias.core.plugins import load_plugins

    load_plugins()
    return dict(_KINDS)


def _lookup(name: str) -> str | None:
    key = name.strip().lower()
    if key not in _BY_ALIAS:
        from sourcebias.core.plugins import load_plugins

        load_plugins()
    return _BY_ALIAS.get(key)


def canonical_name(name: str) -> str:
    """The canonical name of a measure: ``"ndcg"`` -> ``"NDCG"``.

    Args:
        name: A name or alias, any case.

    Returns:
        The registered kind's name.

    Raises:
        ConfigError: An unknown name (the known measures are listed).
    """
    canonical = _lookup(name)
    if canonical is None:
        raise ConfigError(f"unknown measure '{name}'; known: {', '.join(_KINDS)}")
    return canonical


@dataclass(frozen=True, order=True)
class Measure:
    """A measure at a cut-off, e.g. ``Measure("NDCG", 10)``, written ``NDCG@10``.

    Attributes:
        name: The kind's canonical name (an alias given is canonicalised).
        cutoff: The cut-off k, an integer ≥ 1.
    """

    name: str
    cutoff: int

    def __post_init__(self) -> None:
        if self.name not in _KINDS:
            object.__setattr__(self, "name", canonical_name(self.name))
        if not isinstance(self.cutoff, int) or self.cutoff < 1:
            raise ConfigError(f"cut-off of {self.name} must be an integer >= 1, got {self.cutoff!r}")

    def __str__(self) -> str:
        return f"{self.name}@{self.cutoff}"

    @property
    def kind(self) -> MeasureKind:
        """The registered kind of the measure."""
        return _KINDS[self.name]

    @property
    def scope(self) -> str:
        """``target`` (needs labels) or ``source`` (label-free), as the kind says."""
        return self.kind.scope

    @property
    def trec_family(self) -> str:
        """trec_eval's family of a target measure (``ndcg_cut``); AttributeError for a source measure."""
        return self._trec_kind().trec_family

    @property
    def trec_key(self) -> str:
        """The key pytrec_eval returns for this measure (``ndcg_cut_10``); AttributeError for a source measure."""
        return self._trec_kind().trec_key(self.cutoff)

    def _trec_kind(self) -> TrecMeasureKind:
        kind = self.kind
        if not isinstance(kind, TrecMeasureKind):
            raise AttributeError(f"{self} is not a trec_eval measure (its kind is {type(kind).__name__})")
        return kind


DEFAULT_MEASURES = ("NDCG", "MAP", "Recall", "P", "Share")
DEFAULT_CUTOFFS = (1, 3, 5, 10)


def parse_measure(text: str | Measure) -> Measure:
    """A measure from its written form.

    Args:
        text: ``"nDCG@10"``, ``"map@5"``, ``"Recall@100"``, ``"P@1"``, ``"Share@3"`` (or a
            :class:`Measure`, returned as it is).

    Returns:
        The :class:`Measure`.

    Raises:
        ConfigError: The text is not ``NAME@k``, or names no known measure.
    """
    if isinstance(text, Measure):
        return text
    m = re.fullmatch(r"\s*([A-Za-z][A-Za-z_-]*)\s*@\s*(\d+)\s*", str(text))
    if not m:
        raise ConfigError(f"cannot read measure '{text}'; write it like NDCG@10, MAP@5, Recall@100, P@1 or Share@3")
    return Measure(canonical_name(m.group(1)), int(m.group(2)))


def measure_grid(names: Iterable[str] = DEFAULT_MEASURES, cutoffs: Iterable[int] = DEFAULT_CUTOFFS) -> list[Measure]:
    """Every measure name at every cut-off, in the given order: ``NDCG@1, NDCG@3, ..., MAP@1, ...``.

    Args:
        names: Measure names or aliases.
        cutoffs: Cut-offs.

    Returns:
        The measures, without repeats.

    Raises:
        ConfigError: An unknown name or a cut-off below 1.
    """
    out: list[Measure] = []
    for n in names:
        canonical = canonical_name(n)
        for k in cutoffs:
            m = Measure(canonical, int(k))
            if m not in out:
                out.append(m)
    return out


def is_measure_name(token: str) -> bool:
    """Whether ``token`` names a measure (``NDCG``, ``ndcg@10``); used by the CLI's ``--metric``.

    Args:
        token: A word of the command line.

    Returns:
        True when the part before ``@`` is a known name or alias.
    """
    return _lookup(token.split("@")[0]) is not None


def trec_depth(measures: Sequence[Measure]) -> int | None:
    """How many documents of each ranking trec_eval needs for ``measures``.

    The largest cut-off when every measure's family is in :data:`TOP_K_FAMILIES` (``ndcg_cut.10``,
    ``map_cut.10``, ``recall.10`` and ``P.10`` read the top 10 and the qrels, nothing deeper),
    else ``None`` (the whole ranking). Passing 10 documents a query instead of 1,000 is most of
    trec_eval's time at MS MARCO's 6,979 queries, for the same values.

    Args:
        measures: Target measures.

    Returns:
        The depth, or ``None``.
    """
    if not measures or any(m.trec_family not in TOP_K_FAMILIES for m in measures):
        return None
    return max(m.cutoff for m in measures)


def trec_measure_spec(measures: Sequence[Measure]) -> set[str]:
    """The measure strings for ``pytrec_eval.RelevanceEvaluator``.

    Args:
        measures: Target measures.

    Returns:
        One string per trec_eval family with its cut-offs, e.g. ``{"ndcg_cut.1,3", "P.5"}``.
    """
    by_family: dict[str, set[int]] = {}
    for m in measures:
        by_family.setdefault(m.trec_family, set()).add(m.cutoff)
    return {f"{fam}.{','.join(str(k) for k in sorted(ks))}" for fam, ks in by_family.items()}
