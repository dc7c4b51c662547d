"""Turning a raw LLM answer into the twin document's text, or flagging it.

What the papers did: "remove unrelated parts of the original response from LLM like *Sure,
here's a possible rewrite of the text:*" (KDD 2024, §3.1); with Cocktail's prompt, keep what
follows ``Rewritten Text:``; when the LLM refuses, "keep the same content as the
human-written counterparts" so refused rewrites can be removed later (Cocktail, §3).

:func:`clean_output` applies, in order:

1. the answer label (``Rewritten Text:``, also ``Here is the rewritten text:`` lines): keep
   what follows its first occurrence;
2. a leading preamble (``Sure, here's a possible rewrite of the text:``, ``Certainly!``);
3. echoes of the prompt's own instruction sentences at the start or end (small models copy
   ``Please rewrite the above given text.``);
4. trailing notes (``Note: ...``, ``I hope this helps``, ``I made the following changes``),
   only as whole final paragraphs and only when text remains before them;
5. quotes wrapping the whole answer.

Then it decides the status: ``refused`` (a refusal phrase opens the answer or one of its
paragraphs), ``empty`` (nothing left), ``truncated`` (the model was cut at ``max_tokens``:
``finish_reason == "length"``), else ``ok``. Flagged documents keep the human text.

Refusal detection guards against documents *about* refusing: when the input text itself
contains refusal-like phrasing ("I'm sorry, but I cannot help you", said a clerk), only
phrases that name the model as an AI count. The phrase lists were checked against recorded
SmolLM2-135M-Instruct outputs (``tests/fixtures/generation/``) and the refusal formulas of
instruction-tuned chat models (Llama-2-chat, GPT).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

STATUSES = ("ok", "refused", "empty", "truncated", "filtered")

_SPECIAL_TOKENS = re.compile(r"(?:<\|(?:im_end|eot_id|end|endoftext|im_start)\|>|</s>)\s*$")

# An answer label on its own (Cocktail's format), optionally in Markdown bold or as a heading.
_MARKER = re.compile(r"(?im)^[ \t#>*_]*(?:\*\*)?\s*rewritten\s+(?:text|version|passage)\s*(?:\*\*)?\s*:\s*(?:\*\*)?[ \t]*")

# A short line that announces the answer: "Here is the rewritten text:", "Your rewritten text is:".
_ANNOUNCE = re.compile(
    r"(?im)^[ \t*#_]*(?:(?:sure|certainly|of course|absolutely|okay|ok|alright|great)\b[!,.]?\s*)?"
    r"(?:here(?:'s| is| are)|below is|this is|the following is|your|i(?:'ve| have)\s+(?:re\w+|paraphrased|summari[sz]ed))\b"
    r"[^\n:]{0,120}\b(?:rewrit\w*|re-?written|paraphras\w*|rephras\w*|reword\w*|summar\w*|version|restate\w*|simplif\w*|condensed|text|passage)\b"
    r"[^\n:]{0,60}:[ \t*_]*(?:\n|$)"
)

# A leading preamble sentence (same line as the answer, or its own line).
_PREAMBLE = re.compile(
    r"(?is)^\s*(?:(?:sure|certainly|of course|absolutely|okay|ok|alright|great)\b[!,.]?\s*)+"
    r"(?:(?:here(?:'s| is| are)|below is|i(?:'ve| have| can| will|'ll)|let me)\b[^\n:]{0,160}:\s*)?"
)

_TRAILING_NOTE = re.compile(
    r"(?is)^\s*[(\[*_]*\s*(?:note\b|please note|n\.b\.|i hope\b|hope this\b|let me know\b|feel free\b|"
    r"i(?:'ve| have)? (?:made|changed|kept|used|tried|rewr\w+|rephras\w+|paraphras\w+)\b|"
    r"(?:in )?this (?:rewrite|rewritten|version|revision|paraphrase)\b|the rewritten (?:text|version)\b|"
    r"changes made\b|explanation\b|key changes\b|the original (?:text|sentence|passage)\b)"
)

# Refusals: phrases that open an answer (or a paragraph of it).
_REFUSAL = re.compile(
    r"(?is)^\W*(?:"
    r"(?:i'?m|i am) (?:sorry|afraid)\b[^.!?\n]{0,80}\b(?:can(?:'|no)?t|can not|cannot|unable|not able|won'?t|will not|must (?:decline|refuse))\b"
    r"|i apologi[sz]e\b[^.!?\n]{0,80}\b(?:can(?:'|no)?t|can not|cannot|unable|not able|won'?t|will not)\b"
    r"|sorry,? (?:but )?i (?:can(?:'|no)?t|cannot|can not|won'?t|am unable|'m unable)\b"
    r"|i (?:can(?:'|no)?t|cannot|can not|won'?t|will not|am unable to|'m unable to|am not able to|'m not able to|must (?:respectfully )?(?:decline|refuse))"
    r" (?:fulfil+|assist|help|comply|provide|rewrite|complete|process|create|generate|engage|produce|write|paraphrase|rephrase|do that|do this|perform|continue|support)\b"
    r"|i must (?:respectfully )?(?:decline|refuse)\b"
    r"|as an ai\b|as a (?:responsible )?(?:ai|language model|large language model)\b|i'?m just an ai\b|i am just an ai\b"
    r")"
)

# Phrases that name the speaker as an AI: they count even when the input talks about refusing.
_AI_SELF = re.compile(r"(?i)\b(?:as an ai|as a (?:responsible )?(?:ai|language model|large language model)|i'?m (?:just )?an ai|i am (?:just )?an ai|my (?:programming|guidelines|ethical guidelines))\b")

_QUOTES = {'"': '"', "“": "”", "'": "'", "«": "»", "„": "“"}


@dataclass(frozen=True)
class Cleaned:
    """The outcome for one answer.

    ``text`` is the cleaned answer (possibly empty); ``status`` one of :data:`STATUSES`;
    ``reason`` says what decided a flag (the matched refusal phrase, ...); ``removed`` lists
    the clean-up steps that changed the text.
    """

    text: str
    status: str
    reason: str | None = None
    removed: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s.replace("’", "'").replace("‘", "'")).strip().lower()


def _instruction_sentences(template: str | None) -> list[str]:
    """The fixed sentences of a prompt template (what a model may echo), normalised."""
    if not template:
        return []
    literal = re.sub(r"\{(?:text|title)\}", "\n", template)
    parts = re.split(r"(?<=[.!?:])\s+|\n", literal)
    return [p for p in (_norm(x) for x in parts) if len(p) >= 12]


def _strip_echo(text: str, sentences: list[str]) -> tuple[str, bool]:
    changed = False
    for _ in range(4):
        before = text
        low = _norm(text)
        for s in sentences:
            if low.endswith(s) and len(low) > len(s):
                cut = _find_tail(text, s)
                if cut is not None:
                    text = text[:cut].rstrip()
            elif low.startswith(s) and len(low) > len(s):
                cut = _find_head(text, s)
                if cut is not None:
                    text = text[cut:].lstrip()
        if text == before:
            break
        changed = True
    return text, changed


def _find_tail(text: str, sentence: str) -> int | None:
    # Walk back over the original text until its normalised suffix equals the sentence.
    for i in range(len(text) - 1, -1, -1):
        if _norm(text[i:]) == sentence:
            return i
    return None


def _find_head(text: str, sentence: str) -> int | None:
    for i in range(1, len(text) + 1):
        if _norm(text[:i]) == sentence:
            return i
    return None


def _strip_quotes(text: str) -> tuple[str, bool]:
    t = text.strip()
    if len(t) >= 2 and t[0] in _QUOTES and t[-1] == _QUOTES[t[0]]:
        inner = t[1:-1]
        # Only when the quotes wrap everything: no quote of the same kind inside.
        if t[0] not in inner and _QUOTES[t[0]] not in inner:
            return inner.strip(), True
    return text, False


def _paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def detect_refusal(answer: str, source_text: str = "") -> str | None:
    """The refusal phrase that opens ``answer`` or one of its paragraphs, or ``None``.

    A phrase copied from ``source_text`` does not count. When the source itself uses refusal
    or apology wording ("I'm sorry, but I cannot help you", said a clerk), only phrases in
    which the model calls itself an AI count.
    """
    source = _norm(source_text)
    source_refuses = bool(source_text) and bool(re.search(r"(?i)\b(?:sorry|apologi[sz]e|cannot|can't|unable|decline|refuse)\b", source_text.replace("’", "'")))
    for para in _paragraphs(answer)[:6]:
        m = _REFUSAL.match(para.replace("’", "'"))
        if not m:
            continue
        phrase = m.group(0).strip()
        if _norm(phrase) in source:
            continue
        if source_refuses:
            ai = _AI_SELF.search(para.replace("’", "'"))
            if ai and _norm(ai.group(0)) not in source:
                return ai.group(0)
            continue
        return phrase
    return None


def clean_output(
    raw: str,
    *,
    finish_reason: str | None = None,
    source_text: str = "",
    template: str | None = None,
    answer_marker: str | None = "Rewritten Text:",
) -> Cleaned:
    """Clean one raw answer and decide its status (see the module docstring).

    Parameters
    ----------
    raw:
        The model's answer as returned by the backend.
    finish_reason:
        ``"length"`` marks the answer truncated (status ``truncated``).
    source_text:
        The document that was rewritten (guards refusal detection; see :func:`detect_refusal`).
    template:
        The prompt template, whose fixed sentences are stripped when echoed.
    answer_marker:
        The label the answer follows (Cocktail: ``Rewritten Text:``); ``None`` turns the
        label rule off. The common spellings (``**Rewritten text:**``) are matched.
    """
    removed: list[str] = []
    text = (raw or "").replace("\r\n", "\n")
    stripped = _SPECIAL_TOKENS.sub("", text)
    if stripped != text:
        removed.append("special tokens")
        text = stripped
    text = text.strip()

    # Refusals are judged on the answer as given (before anything is cut away).
    refusal = detect_refusal(text, source_text)

    if answer_marker is not None:
        m = _MARKER.search(text)
        if m:
            text = text[m.end() :].strip()
            removed.append("answer label")
    m = _ANNOUNCE.search(text)
    if m and m.start() <= max(0, len(text) // 2):
        after = text[m.end() :].strip()
        if after:
            text = after
            removed.append("announcement line")
    m = _PREAMBLE.match(text)
    if m and m.end() > 0:
        rest = text[m.end() :].strip()
        if rest:
            text = rest
            removed.append("preamble")
    text, echoed = _strip_echo(text, _instruction_sentences(template))
    if echoed:
        removed.append("instruction echo")
    paras = _paragraphs(text)
    kept = list(paras)
    while len(kept) > 1 and _TRAILING_NOTE.match(kept[-1]):
        kept.pop()
    if len(kept) < len(paras):
        removed.append("trailing notes")
        text = "\n\n".join(p.strip("\n") for p in kept).strip()
    text, unquoted = _strip_quotes(text)
    if unquoted:
        removed.append("wrapping quotes")
    text = text.strip()

    if refusal is None:
        refusal = detect_refusal(text, source_text)
    if refusal is not None:
        return Cleaned(text, "refused", f"refusal phrase: {refusal[:80]!r}", tuple(removed))
    if not re.search(r"\w", text):
        return Cleaned(text, "empty", "no text left after clean-up" if raw and raw.strip() else "empty answer", tuple(removed))
    if finish_reason == "length":
        return Cleaned(text, "truncated", "stopped at the max_tokens limit (finish_reason 'length')", tuple(removed))
    return Cleaned(text, "ok", None, tuple(removed))
