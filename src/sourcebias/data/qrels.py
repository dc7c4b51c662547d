"""Relevance judgements (qrels) on original documents.

Qrels name a query and a ``doc_id`` and hold for every source's copy of that document: the
labels of ``(q, d^H)`` are copied to each twin ``(q, d^G)``. Which copies count as relevant in
an evaluation (one target source, or all) is decided by the evaluation protocol, not here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path


class Qrels(Mapping[str, Mapping[str, int]]):
    """``query_id -> {doc_id: grade}``; a grade > 0 means relevant."""

    def __init__(self, labels: Mapping[str, Mapping[str, int]]):
        self._labels: dict[str, dict[str, int]] = {q: dict(d) for q, d in labels.items()}

    def __getitem__(self, query_id: str) -> Mapping[str, int]:
        return self._labels[query_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._labels)

    def __len__(self) -> int:
        return len(self._labels)

    def __repr__(self) -> str:
        return f"Qrels({len(self)} queries, {self.n_judgements} judgements)"

    @property
    def n_judgements(self) -> int:
        """The number of (query, document) judgements, of any grade."""
        return sum(len(d) for d in self._labels.values())

    def queries_with_relevant(self) -> list[str]:
        """Query ids with at least one document of grade > 0 (the queries that can be evaluated).

        Returns:
            Their ids, in qrels order.
        """
        return [q for q, docs in self._labels.items() if any(g > 0 for g in docs.values())]

    def relevant(self, query_id: str) -> dict[str, int]:
        """The relevant documents of a query.

        Args:
            query_id: The query.

        Returns:
            ``{doc_id: grade}`` of its documents of grade > 0 (empty for an unknown query).
        """
        return {d: g for d, g in self._labels.get(query_id, {}).items() if g > 0}

    def restrict(self, query_ids: set[str] | list[str]) -> Qrels:
        """The judgements of some queries only.

        Args:
            query_ids: The queries to keep.

        Returns:
            A new :class:`Qrels`.
        """
        keep = set(query_ids)
        return Qrels({q: d for q, d in self._labels.items() if q in keep})


def require_evaluable(query_ids: list[str], qrels_file: str | Path | None, *, split: str | None = None) -> list[str]:
    """``query_ids`` (the queries that can be evaluated), refused when there is none.

    The one check that a split has a query with a relevant judgement (grade > 0): without one
    every measure is undefined, so a command that would report on no query stops instead.

    Args:
        query_ids: The queries with a relevant judgement.
        qrels_file: The judgements file, named in the error.
        split: The split, named in the error.

    Returns:
        ``query_ids``.

    Raises:
        DataError: naming ``qrels_file`` when ``query_ids`` is empty.
    """
    from sourcebias.core.errors import DataError

    if not query_ids:
        where = f" of split '{split}'" if split else ""
        problem = f"no query{where} has a relevant judgement (grade > 0): nothing can be evaluated; every judgement is grade 0 or the split is empty"
        raise DataError(qrels_file, problem)
    return query_ids
