"""What an LLM re-ranker says about its answers, typed: one entry of ``run.info["stages"]``.

A re-ranker appends a dict to ``run.info["stages"]`` (``result.json`` stores it as it is); the
evaluation's notes (:func:`sourcebias.study.job.llm_stage_notes`) and a grid's cells
(:func:`sourcebias.experiments.aggregate.llm_stage_counts`) read it through
:class:`StageDiagnostics`, not as a dict: the parse counts of a listwise stage
(:class:`AnswerCounts`), the pairs a pointwise stage could not score from the model's
log-probabilities, the pairs without an expected grade, and the calls and tokens of its client
(:class:`CallUsage`). ``StageDiagnostics.from_dict(d).to_dict() == d``, key order included, for
every entry a stage writes or an earlier folder holds: the format of ``result.json`` is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["AnswerCounts", "CallUsage", "StageDiagnostics", "stage_diagnostics"]


@dataclass(frozen=True)
class AnswerCounts:
    """How a listwise stage's answers parsed (RankGPT's repair rule; ``llm_answers`` in the file).

    Attributes:
        answers: Answers read.
        repaired: Answers that needed a repair (an id unknown, repeated or missing).
        unparseable: Answers with no ranking at all (kept in shown order).
        length_cut: Answers cut at ``max_tokens``.
        ids_unknown: Ids outside the window, dropped.
        ids_duplicates: Ids repeated, dropped.
        ids_missing: Ids the answer left out, appended in shown order.
    """

    answers: int = 0
    repaired: int = 0
    unparseable: int = 0
    length_cut: int = 0
    ids_unknown: int = 0
    ids_duplicates: int = 0
    ids_missing: int = 0

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AnswerCounts:
        """The counts of a mapping (a ``Counter`` of the stage, or ``llm_answers`` as stored); absent counts are 0."""
        return cls(**{f.name: int(d.get(f.name, 0)) for f in fields(cls)})

    def to_dict(self) -> dict[str, int]:
        """``llm_answers`` as stored in ``result.json``."""
        return {f.name: int(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True)
class CallUsage:
    """The calls and tokens of a stage's LLM client (from its ``describe()``, the ``client`` entry).

    Attributes:
        calls: Calls asked (cached ones included).
        cached: Calls answered from the answer store.
        computed: Calls the model answered.
        retries: Requests retried.
        failed: Calls with no answer after their retries.
        prompt_tokens: Prompt tokens of the computed calls, as the model counted them.
        completion_tokens: Completion tokens of the computed calls.
    """

    calls: int = 0
    cached: int = 0
    computed: int = 0
    retries: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @classmethod
    def from_client(cls, client: Mapping[str, Any]) -> CallUsage:
        """The usage of a client's ``describe()``; counts it does not hold are 0."""
        calls = client.get("calls") or {}
        computed = (client.get("usage") or {}).get("computed") or {}
        return cls(
            **{k: int(calls.get(k, 0)) for k in ("calls", "cached", "computed", "retries", "failed")},
            prompt_tokens=int(computed.get("prompt_tokens", 0)),
            completion_tokens=int(computed.get("completion_tokens", 0)),
        )


#: the typed entries, by their key in the file, in the order a stage writes them after its own
_TYPED = ("llm_answers", "position_source", "choice_missing", "missing_rule", "answers", "no_expected_grade", "client", "seconds")


@dataclass
class StageDiagnostics:
    """One stage's entry of ``run.info["stages"]``.

    Attributes:
        name: The stage's name (its specification).
        details: Everything else the stage says (``input_run``, ``depth``, ``window``, ``pairs``...).
        llm_answers: A listwise stage's parse counts.
        position_source: A listwise stage's fit of the answered position on shown position and
            source (:func:`sourcebias.clustered.position_source.position_source_fit`'s dict).
        choice_missing: A pointwise stage's pairs whose answer was outside a server's top tokens.
        missing_rule: How those pairs were scored.
        choices: A pointwise stage's answers (``Yes``, ``No``; the grades); ``answers`` in the file.
        no_expected_grade: Pairs with no expected grade, by reason (a grading stage).
        client: The client's ``describe()`` (identity, store, calls, usage).
        seconds: The stage's time.
        order: The keys in the order they were read (kept on writing; empty for a new entry).
    """

    name: str
    details: dict[str, Any] = field(default_factory=dict)
    llm_answers: AnswerCounts | None = None
    position_source: dict[str, Any] | None = None
    choice_missing: int | None = None
    missing_rule: str | None = None
    choices: list[str] | None = None
    no_expected_grade: dict[str, int] | None = None
    client: dict[str, Any] | None = None
    seconds: float | None = None
    order: tuple[str, ...] = ()

    @property
    def usage(self) -> CallUsage | None:
        """The calls and tokens of the stage's client (``None``: the stage has no client)."""
        return CallUsage.from_client(self.client) if self.client is not None else None

    @property
    def expected_grade_missing(self) -> int:
        """Pairs with no expected grade (all reasons)."""
        return sum((self.no_expected_grade or {}).values())

    def _typed(self) -> dict[str, Any]:
        values = {
            "llm_answers": self.llm_answers.to_dict() if self.llm_answers is not None else None,
            "position_source": self.position_source,
            "choice_missing": self.choice_missing,
            "missing_rule": self.missing_rule,
            "answers": self.choices,
            "no_expected_grade": self.no_expected_grade,
            "client": self.client,
            "seconds": self.seconds,
        }
        return {k: v for k, v in values.items() if v is not None}

    def to_dict(self) -> dict[str, Any]:
        """The entry as stored in ``result.json``: the keys read first in their order, then the
        name, the details and the typed entries that were not read."""
        every = {"name": self.name, **self.details, **self._typed()}
        keys = [k for k in self.order if k in every] + [k for k in every if k not in self.order]
        return {k: every[k] for k in keys}

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> StageDiagnostics:
        """Read a stored entry (any stage's: a stage without LLM answers has only details)."""
        answers = entry.get("llm_answers")
        choices = entry.get("answers")
        return cls(
            name=str(entry.get("name", "")),
            details={k: v for k, v in entry.items() if k != "name" and k not in _TYPED},
            llm_answers=AnswerCounts.from_dict(answers) if answers is not None else None,
            position_source=entry.get("position_source"),
            choice_missing=int(entry["choice_missing"]) if entry.get("choice_missing") is not None else None,
            missing_rule=entry.get("missing_rule"),
            choices=list(choices) if choices is not None else None,
            no_expected_grade={str(k): int(v) for k, v in entry["no_expected_grade"].items()} if entry.get("no_expected_grade") is not None else None,
            client=entry.get("client"),
            seconds=entry.get("seconds"),
            order=tuple(entry),
        )


def stage_diagnostics(info: Mapping[str, Any]) -> list[StageDiagnostics]:
    """The stages of a run's ``info`` (``run.info``, or a result's ``run_info`` entry), typed."""
    return [StageDiagnostics.from_dict(s) for s in info.get("stages", [])]
