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

# "filtered" (Cocktail's length filter) and "length" (outside --length-control's band after its
# retries) are decided by the rewriting job, not by clean_output
STATUSES = ("ok", "refused", "empty", "truncated", "filtered", "length")

_SPECIAL_TOKENS = re.compile(r"(?:<\|(?:im_end|eot_id|end|endoftext|im_start)\|>|</s>)\s*$")

# An answer label (Cocktail's format), optionally in Markdown bold or as a heading, also
# "The rewritten text is:" (SmolLM2 writes that).
_MARKER = re.compile(r"(?im)^[ \t#>*_]*(?:\*\*)?\s*(?:(?:the|your|my)\s+)?rewritten\s+(?:text|version|passage)(?:\s+is)?\s*(?:\*\*)?\s*:\s*(?:\*\*)?[ \t]*")

# A leading label before an echo of the input: "The original text:", "Original Text:".
_ORIGINAL_LABEL = re.compile(r"(?i)^[ \t*_]*(?:the\s+)?original\s+text(?:\s+is)?\s*:\s*")

# A short line that announces the answer: "Here is the rewritten text:", "Your rewritten text is:",
# "The above text can be rewritten as:".
_ANNOUNCE = re.compile(
    r"(?im)^[ \t*#_]*(?:(?:sure|certainly|of course|absolutely|okay|ok|alright|great)\b[!,.]?\s*)?"
    r"(?:(?:here(?:'s| is| are)|below is|this is|the following is|your|i(?:'ve| have)\s+(?:re\w+|paraphrased|summari[sz]ed))\b"
    r"[^\n:]{0,120}\b(?:rewrit\w*|re-?written|paraphras\w*|rephras\w*|reword\w*|summar\w*|version|restate\w*|simplif\w*|condensed|text|passage)\b"
    r"|(?:the\s+)?(?:above|given|original|following|provided)\s+(?:text|passage)\s+(?:can be|could be|has been|is|was)\s+"
    r"(?:rewritten|paraphrased|rephrased|reworded|summari[sz]ed|restated|simplified|condensed)(?:\s+as)?)"
    r"[^\n:]{0,60}:[ \t*_]*(?:\n|$)"
)

# A leading preamble: "Sure, here's a possible rewrite of the text:", "Certainly!", "Sure, I can
# help with that.", "Sure, I'd be happy to help you with that."
_PREAMBLE = re.compile(
    r"(?is)^\s*(?:(?:sure|certainly|of course|absolutely|okay|ok|alright|great)\b[!,.]?\s*)+"
    r"(?:(?:here(?:'s| is| are)|below is|i(?:'ve| have| can| will|'ll)|let me)\b[^\n:]{0,160}:\s*"
    r"|i(?: can|'d be happy to|'d be glad to| would be happy to|'ll| will) (?:help|assist|do that|do this)\b[^.!?\n]{0,60}[.!]\s*)?"
)

_TRAILING_NOTE = re.compile(
    r"(?is)^\s*[(\[*_]*\s*(?:note\b|please note|n\.b\.|i hope\b|hope this\b|let me know\b|feel free\b|"
    r"i(?:'ve| have)? (?:made|changed|kept|used|tried|rewr\w+|rephras\w+|paraphras\w+)\b|"
    r"(?:in )?this (?:rewrite|rewritten|version|revision|paraphrase)\b|the rewritten (?:text|version)\b|"
    r"changes made\b|explanation\b|key changes\b|the original (?:text|sentence|passage)\b)"
)

# A last sentence that asks for a rewrite (small models append one: "Please rewrite the above text ...").
_TRAILING_INSTRUCTION = re.compile(
    r"(?is)(?<=[.!?\"”])\s+(?:please\s+)?(?:rewrite|rephrase|paraphrase|reword)\b[^.!?\n]{0,160}\b(?:text|passage|above)\b[^.!?\n]{0,120}[.!?]?\s*$"
)

# Refusals: an answer (or one of its paragraphs) that opens with
#   an apology followed, in the same paragraph, by "can't"-wording ("I'm sorry for any
#   misunderstanding, but as a chatbot ..., I don't have the capability to ..." -- SmolLM2's formula;
#   "I apologize, but I cannot fulfill your request" -- Llama-2-chat's);
#   "I can't / cannot / won't / am unable to <help you/with, assist, fulfil, ...>" ("I can't help
#   feeling ..." is not one);
#   "I must (respectfully) decline";
#   an AI self-description followed by a comma ("As an AI language model, I ...").
_CANT = (
    r"(?:can(?:'|no)?t|can not|cannot|unable|not able|won'?t|will not|must (?:respectfully )?(?:decline|refuse)"
    r"|(?:don'?t|do not) have the (?:ability|capability|capacity|means|access)|(?:am|'m) not (?:allowed|permitted|programmed|designed))"
)
_REFUSAL = re.compile(
    r"(?is)^\W*(?:"
    r"(?:(?:i'?m|i am) (?:so |very |really |truly )?(?:sorry|afraid)|i apologi[sz]e|(?:my )?apologies|sorry)\b[^\n]{0,200}?\b" + _CANT + r"\b"
    r"|i "
    + _CANT
    + r" (?:fulfil+|assist|help (?:you|with)|comply|provide|rewrite|complete|process|create|generate|engage|produce|write|paraphrase|rephrase|do "
    r"that|do this|perform|continue|support)\b"
    r"|i must (?:respectfully )?(?:decline|refuse)\b"
    r"|as an? (?:ai|artificial intelligence|chatbot|language model|large language model)(?: language model| assistant| model)?\s*,"
    r"|i'?m (?:just|only) an ai\b|i am (?:just|only) an ai\b"
    r")"
)

# Phrases in which the speaker calls itself an AI: they count even when the input talks about refusing.
_AI_SELF = re.compile(
    r"(?i)\b(?:as an? (?:ai|artificial intelligence|chatbot|language model|large language model)\b|i'?m (?:just |only )?an ai\b|i am (?:just |only )?an ai\b"
    r"|my (?:programming|guidelines|ethical guidelines)\b)"
)

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


def _in_source(fragment: str, source_text: str) -> bool:
    """Whether ``fragment`` (normalised) occurs in the document: text the document itself
    contains is content, never chatter to strip."""
    f = _norm(fragment).strip(" :*_#>")
    return bool(f) and bool(source_text) and f in _norm(source_text)


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
        ``"length"`` marks the answer truncated (status ``truncated``); ``"content_filter"``
        (a provider's safety filter) marks it refused.
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
    text = _strip_head(text, source_text, answer_marker, removed)
    text, echoed = _strip_echo(text, _instruction_sentences(template))
    if echoed:
        removed.append("instruction echo")
    text = _strip_tail(text, source_text, removed)
    text, unquoted = _strip_quotes(text)
    if unquoted:
        removed.append("wrapping quotes")
    text = text.strip()
    if refusal is None:
        refusal = detect_refusal(text, source_text)
    return _judged(text, raw, refusal, finish_reason, tuple(removed))


def _strip_head(text: str, source_text: str, answer_marker: str | None, removed: list[str]) -> str:
    """The answer label, announcement lines, a preamble and an original-text label cut from the
    head of ``text`` (none that the source itself holds); what was cut is added to ``removed``."""
    if answer_marker is not None:
        m = _MARKER.search(text)
        if m and not _in_source(text[m.start() : m.end()], source_text):
            text = text[m.end() :].strip()
            removed.append("answer label")
    # Announcement lines ("Here is the rewritten text:"), possibly repeated by a looping model;
    # only in the first half of the answer, so a closing line ending in ":" is not taken for one.
    for _ in range(20):
        m = _ANNOUNCE.search(text)
        if not m or m.start() > len(text) // 2 or _in_source(m.group(0), source_text):
            break
        text = text[m.end() :].strip()
        if "announcement line" not in removed:
            removed.append("announcement line")
    m = _PREAMBLE.match(text)
    if m and m.end() > 0 and not _in_source(m.group(0), source_text):
        rest = text[m.end() :].strip()
        if rest:
            text = rest
            removed.append("preamble")
    m = _ORIGINAL_LABEL.match(text)
    if m and text[m.end() :].strip() and not _in_source(m.group(0), source_text):
        text = text[m.end() :].strip()
        removed.append("original-text label")
    return text


def _strip_tail(text: str, source_text: str, removed: list[str]) -> str:
    """Trailing notes (whole paragraphs, the first kept) and a trailing instruction cut from the
    end of ``text`` (none that the source itself holds); what was cut is added to ``removed``."""
    paras = _paragraphs(text)
    kept = list(paras)
    while len(kept) > 1 and _TRAILING_NOTE.match(kept[-1]) and not _in_source(kept[-1], source_text):
        kept.pop()
    if len(kept) < len(paras):
        removed.append("trailing notes")
        text = "\n\n".join(p.strip("\n") for p in kept).strip()
    m = _TRAILING_INSTRUCTION.search(text)
    if m and not _in_source(m.group(0), source_text):
        text = text[: m.start()].rstrip()
        removed.append("trailing instruction")
    return text


def _judged(text: str, raw: str, refusal: str | None, finish_reason: str | None, removed: tuple[str, ...]) -> Cleaned:
    """The cleaned answer's status: refused (a refusal phrase, or the provider's safety filter),
    empty, truncated (``finish_reason 'length'``) or ok."""
    if refusal is None and finish_reason == "content_filter":  # OpenAI/Azure: the provider's safety filter stopped it
        refusal = "finish_reason 'content_filter'"
    if refusal is not None:
        why = refusal if refusal.startswith("finish_reason") else f"refusal phrase: {refusal[:80]!r}"
        return Cleaned(text, "refused", why, removed)
    if not re.search(r"\w", text):
        return Cleaned(text, "empty", "no text left after clean-up" if raw and raw.strip() else "empty answer", removed)
    if finish_reason == "length":
        return Cleaned(text, "truncated", "stopped at the max_tokens limit (finish_reason 'length')", removed)
    return Cleaned(text, "ok", None, removed)
