"""What every LLM call of a study is: a :class:`Call` in, an :class:`Answer` out, through an
:class:`LLMClient` that caches answers.

The LLM stages (re-rankers, judges, citation studies) all ask a language model the same kinds of
question: generate a short answer, give the probabilities of the next tokens, or score a few
fixed answers ("yes"/"no", grades 0-3). One frozen request type whose every field enters the
cache key makes each answer reusable across runs and stages, and makes a rerun after a kill
send only the calls not answered yet.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol


@dataclass(frozen=True)
class Call:
    """One request to a language model.

    ``messages`` are chat messages ``((role, content), ...)`` with OpenAI roles. ``top_logprobs > 0``
    asks for the ``k`` most likely tokens at each generated step. ``choices`` asks for
    ``log P(choice | prompt)`` of each choice string: a local model scores each choice's tokens
    exactly after the chat-templated prompt; a server's value is read from the first generated
    token's top log-probabilities (see :func:`choices_from_top`), and a choice absent from them
    is reported as ``None`` (missing), never as 0 or -inf. ``max_tokens=0`` with ``choices``
    scores the choices without generating (a server still generates one token to read them).
    """

    messages: tuple[tuple[str, str], ...]
    max_tokens: int = 16
    temperature: float = 0.0
    seed: int | None = 0
    top_logprobs: int = 0
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.messages or not all(isinstance(m, tuple) and len(m) == 2 for m in self.messages):
            raise ValueError("Call.messages must be a non-empty tuple of (role, content) pairs")
        if self.max_tokens < 0 or (self.max_tokens == 0 and not self.choices):
            raise ValueError("Call.max_tokens must be positive (0 only to score choices)")
        if not 0 <= self.top_logprobs <= 20:
            raise ValueError("Call.top_logprobs must be in [0, 20]")
        if len(set(self.choices)) != len(self.choices) or any(not c for c in self.choices):
            raise ValueError("Call.choices must be distinct non-empty strings")

    def chat(self) -> list[dict[str, str]]:
        """The messages as OpenAI's list of ``{"role", "content"}`` dictionaries."""
        return [{"role": r, "content": c} for r, c in self.messages]


def user_call(prompt: str, *, system: str | None = None, **kwargs: Any) -> Call:
    """A :class:`Call` of one user message (after an optional system message)."""
    msgs = ((("system", system),) if system else ()) + (("user", prompt),)
    return Call(messages=msgs, **kwargs)


@dataclass
class Answer:
    """A model's answer to one :class:`Call`.

    ``finish_reason``: ``"stop"`` or ``"length"`` (``None`` for a choices-only local call);
    ``top_logprobs``: per generated token, ``{token text: log-probability}`` of the most likely
    tokens (when asked for); ``choice_logprobs``: for ``Call.choices``, ``{choice: log-prob or
    None}`` (``None``: not available from this backend for this call); ``cached``: read from the
    answer store rather than computed now. ``usage``: what computing it cost, ``{"prompt_tokens",
    "completion_tokens", "seconds"}`` (the model's own token counts, ``None`` where a server sent
    none; the wall time of the call, retries included); ``served``: what a server's answer named,
    ``{"model", "system_fingerprint"}``. Both are stored with the answer (a cached answer carries
    the cost of the call that made it).
    """

    text: str
    finish_reason: str | None
    top_logprobs: list[dict[str, float]] | None = None
    choice_logprobs: dict[str, float | None] | None = None
    cached: bool = False
    usage: dict[str, Any] | None = None
    served: dict[str, str | None] | None = None

    def to_json(self) -> dict[str, Any]:
        """What the model said (the answer store keeps ``usage`` and ``served`` beside it)."""
        return {"text": self.text, "finish_reason": self.finish_reason, "top_logprobs": self.top_logprobs, "choice_logprobs": self.choice_logprobs}

    @classmethod
    def from_json(cls, data: dict[str, Any], *, cached: bool = False, usage: dict[str, Any] | None = None, served: dict[str, Any] | None = None) -> Answer:
        return cls(
            text=str(data["text"]),
            finish_reason=data.get("finish_reason"),
            top_logprobs=data.get("top_logprobs"),
            choice_logprobs=data.get("choice_logprobs"),
            cached=cached,
            usage=usage,
            served=served,
        )


def usage_of(prompt_tokens: int | None, completion_tokens: int | None, seconds: float) -> dict[str, Any]:
    """An answer's ``usage`` (as rank_llm's invocation records: tokens in, tokens out, seconds)."""
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "seconds": round(float(seconds), 6)}


class LLMClient(Protocol):
    """What the LLM stages call: :func:`sourcebias.llmcalls.open_client` returns one.

    ``exact_choices``: whether ``Call.choices`` are scored exactly (a local model: the choice's
    tokens after the prompt) or read from the first generated token's ``top_logprobs`` (a server:
    a choice outside its top ``choice_top_k`` tokens is missing); ask it rather than the spec.
    """

    model: str
    exact_choices: bool
    choice_top_k: int

    def identity(self) -> dict[str, Any]:
        """What identifies the model's answers (in cache keys and manifests): backend, model, the
        API or weights digest, and for servers what they reported serving."""
        ...

    def answer(self, calls: Sequence[Call], *, task: Any = None) -> list[Answer]:
        """One answer per call, in order; cached ones are read, the rest computed (concurrently
        against servers) and stored as each arrives. ``task`` (a progress handle) advances by one
        per call answered now; the calls the store answers are ``skip``ped (on the bar, not in the
        rate or the time left)."""
        ...

    def describe(self) -> dict[str, Any]:
        """The client for a manifest: identity, backend settings, counts of cached/computed calls,
        and ``usage``: the tokens and seconds of the calls computed now and of every call answered
        (cached answers as their call cost when made)."""
        ...

    def close(self) -> None: ...


def digest(obj: Any) -> str:
    """SHA-256 of the canonical JSON of ``obj``."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")).hexdigest()


#: the fields of a :class:`Call`, in their order (every one enters the key)
CALL_FIELDS = tuple(f.name for f in fields(Call))


def call_fields(call: Call) -> dict[str, Any]:
    """``dataclasses.asdict(call)`` without its deep copy (the fields are strings, numbers and
    tuples of them; JSON writes a tuple as a list either way): the same key, a tenth of the time."""
    return {name: getattr(call, name) for name in CALL_FIELDS}


def call_key(identity: dict[str, Any], call: Call) -> str:
    """The cache key of ``call`` to the model ``identity``: a digest of both (every field)."""
    return digest({"identity": identity, "call": call_fields(call)})


def top_dicts(logprobs: list[dict[str, Any]] | None, k: int) -> list[dict[str, float]] | None:
    """Per generated token, ``{token: log-prob}`` of its ``k`` most likely tokens (OpenAI chat
    format in). Two entries with the same text (different token ids that decode alike) keep the
    higher log-probability, as the list is sorted most likely first."""
    if logprobs is None or k <= 0:
        return None
    out = []
    for t in logprobs:
        d: dict[str, float] = {}
        for e in t.get("top_logprobs") or []:
            d.setdefault(str(e["token"]), float(e["logprob"]))
        out.append(d)
    return out


def choices_from_top(choices: Sequence[str], logprobs: list[dict[str, Any]] | None) -> dict[str, float | None]:
    """``log P(choice)`` read from the first generated token's top log-probabilities.

    Rule: an entry matches a choice when its token text, with surrounding white space removed,
    equals the choice's (case-sensitive), so ``"Yes"`` and ``" Yes"`` both count for ``Yes``;
    the choice's log-probability is the log-sum-exp of its matching entries. A choice with no
    matching entry is ``None`` (missing: its probability is below the k-th token's, not zero).
    A choice of several tokens can only match when the server's tokens are whole words; prefer
    single-token choices against servers.
    """
    out: dict[str, float | None] = dict.fromkeys(choices)
    if not logprobs:
        return out
    first = logprobs[0]
    entries = list(first.get("top_logprobs") or [])
    if not entries:
        entries = [{"token": first["token"], "logprob": first["logprob"]}]
    for c in choices:
        hits = [float(e["logprob"]) for e in entries if str(e["token"]).strip() == c.strip()]
        if hits:
            m = max(hits)
            out[c] = m + math.log(sum(math.exp(h - m) for h in hits))
    return out
