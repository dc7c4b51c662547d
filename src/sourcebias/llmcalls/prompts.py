"""Prompts as plug-ins: a prompt is one TOML file, registered by name like a measure.

A prompt file holds what a stage asks a model and how the answer is read: its name, where it
comes from, the chat messages with named fields, the answer format it asks for, the parser of
that answer (by name, :data:`sourcebias.llmcalls.parsers.PARSERS`) and how the answer's
probabilities are read. The peers' prompts ship as such files (package data,
``sourcebias/llmcalls/prompt_files/``): UMBRELA and its digit variant (``umbrela``, ``digit``),
the pairwise A/B judge (``pairwise``), RankGPT (``rankgpt``), the yes/no and 0-3 pointwise
re-rankers (``yesno``, ``yesno-grade``) and ALCE's citation prompt (``alce``). A stage takes one
by name or by file (``sourcebias judge --prompt umbrela|digit|my-judge.toml``,
``rankgpt:MODEL,prompt=...``, ``llm-yesno:MODEL,prompt=...``, ``sourcebias cite --prompt ...``)
and checks that it asks for the answer the stage reads and uses only the fields the stage gives.

The file (every key checked; an error names the file, the line of the key and what is wrong)::

    name = "my-judge"                      # letters, digits, '-', '.', '_'
    description = "..."                    # one line (optional)
    reference = "..."                      # where the prompt comes from (optional, recorded)
    answer = "grade"                       # grade | yes-no | pick | permutation | citations
    parser = "umbrela-grade"               # a parser of that answer format (none for yes-no)
    probabilities = "grade-token"          # grade: grade-token | first-token; yes-no: first-token
    choices = ["Yes", "No"]                # yes-no: the two answers, the relevant one first
    one_line = ["query"]                   # fields whose white space is collapsed to one space

    [disclosures]                          # the {disclosure} field under each disclosed author
    human = "This passage was written by a human.\\n"
    ai = "This passage was written by an AI language model.\\n"

    [passages]                             # how the {passages} field writes several passages
    item = "Document [{number}](Title: {title}): {text}"
    separator = "\\n"

    [[messages]]                           # the chat messages, in order
    role = "user"                          # system | user | assistant
    content = "Query: {query}\\nPassage: {passage}\\n..."
    each = "passage"                       # optional: repeated per passage (or per demonstration)

    [[demonstrations]]                     # worked examples a stage may show first (cite --shots)
    query = "..."
    answer = "..."
    passages = [{title = "...", text = "..."}]

**Fields.** ``{name}`` is replaced, in one pass, by the field's value (a value's own braces are
never read as fields); any other brace is text. Which fields there are is the stage's to say
(:class:`PromptUse`: the judge gives ``query``, ``passage``, ``disclosure``; RankGPT ``query``,
``count`` and per passage ``number``, ``passage``; ...); a prompt that uses another is refused
before any call. Messages marked ``each = "passage"`` are written once per passage (RankGPT's
``[1] text`` / ``Received passage [1].`` turns), ``each = "demonstration"`` once per
demonstration shown, with that demonstration's fields.

**Byte for byte.** The answer store is keyed by the whole call, so the shipped files render
exactly the messages the stages sent before the prompts were files (a test holds them to the
messages frozen from that code).

**Reading a prompt back** (:meth:`Prompt.read`): a simulated model (the known-truth harnesses)
recovers the fields a call was written with from its messages, through the same file, never from
wording wired into its code.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sourcebias.core.errors import ConfigError, DataError

#: the answer formats a prompt may ask for, and what each is
ANSWERS = {
    "grade": "a relevance grade 0-3",
    "yes-no": "one of two answers, read from the first token's probabilities (the first: relevant)",
    "pick": "which of two passages, A or B",
    "permutation": "an order of the numbered passages",
    "citations": "an answer citing numbered passages",
}
#: the answer format each built-in parser reads (a parser added to PARSERS elsewhere: any format)
PARSER_ANSWERS = {"umbrela-grade": "grade", "digit-grade": "grade", "ab-pick": "pick", "rankgpt-permutation": "permutation", "alce-citations": "citations"}
#: how an answer's probabilities are read: ``none``; ``grade-token``: the expected grade from the top
#: log-probabilities of the token the grade was parsed from; ``first-token``: the choices' (grades',
#: or yes/no's) probabilities as the answer's first token (``Call.choices``)
PROBABILITIES = {"grade": ("grade-token", "first-token"), "yes-no": ("first-token",)}
ROLES = ("system", "user", "assistant")
EACH = ("passage", "demonstration")
_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_KEYS = {
    "name",
    "description",
    "reference",
    "answer",
    "parser",
    "probabilities",
    "choices",
    "one_line",
    "disclosures",
    "passages",
    "messages",
    "demonstrations",
}
#: fields every stage gives: how many passages are shown, and (per passage) the passage's number
COUNT, NUMBER, PASSAGES = "count", "number", "passages"
#: the fields a number takes when a prompt is read back
_NUMERIC = {COUNT, NUMBER}


def one_line(text: str) -> str:
    """White space (newlines included) collapsed to single spaces, ends stripped."""
    return " ".join(text.split())


def fields_of(template: str) -> list[str]:
    """The fields a template uses, in order (each once)."""
    return list(dict.fromkeys(_FIELD.findall(template)))


def fill(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each ``{field}`` replaced by its value, in one pass (values are not read
    again, so their braces stay text); a field without a value stays as written."""
    return _FIELD.sub(lambda m: values.get(m.group(1), m.group(0)), template)


@dataclass(frozen=True)
class Message:
    """One chat message of a prompt: its role, its template, and what it is repeated for."""

    role: str
    content: str
    each: str | None = None


@dataclass(frozen=True)
class Demonstration:
    """A worked example: its fields (``query``, ``answer``, ...) and its passages."""

    fields: Mapping[str, str]
    passages: tuple[Mapping[str, str], ...] = ()


@dataclass(frozen=True)
class PromptUse:
    """What a stage gives a prompt and reads from it: the check of :meth:`Prompt.check_use`.

    Attributes:
        stage: How errors name the stage (``the judge's grade modes``).
        answers: The answer formats the stage reads.
        fields: The fields it gives every message.
        item_fields: The fields it gives each passage (with ``number``); empty: it shows no list.
        required: The fields the prompt must use (else the model never sees them).
        option: How the stage is given a prompt (``sourcebias judge --prompt``).
        grade_probabilities: How it may read a grade answer's probabilities (``first-token`` only:
            a stage that scores without generating).
    """

    stage: str
    answers: tuple[str, ...]
    fields: frozenset[str]
    item_fields: frozenset[str] = frozenset()
    required: frozenset[str] = frozenset()
    option: str = ""
    grade_probabilities: tuple[str, ...] = PROBABILITIES["grade"]


def _use(stage: str, answers: tuple[str, ...], fields: str, items: str = "", required: str = "", **kw: Any) -> PromptUse:
    return PromptUse(stage, answers, frozenset(fields.split()), frozenset(items.split()), frozenset(required.split()), **kw)


#: every stage that takes a prompt, with what it gives and reads (the stages check their prompt with these)
USES = {
    "judge": _use("the judge's grade modes", ("grade",), "query passage disclosure", "", "query passage", option="sourcebias judge --prompt"),
    "judge-pairwise": _use("the judge's pairwise mode", ("pick",), "query a b", "", "query a b", option="sourcebias judge --pair-prompt"),
    "llm-yesno": _use(
        "llm-yesno", ("yes-no", "grade"), "query passage", "", "query passage", option="llm-yesno:MODEL,prompt=", grade_probabilities=("first-token",)
    ),
    "rankgpt": _use("rankgpt", ("permutation",), "query", "passage", "query passage", option="rankgpt:MODEL,prompt="),
    "cite": _use("the citation study", ("citations",), "query", "title text", "query text", option="sourcebias cite --prompt"),
}


@dataclass(frozen=True)
class Prompt:
    """A prompt (see the module): read from a file with :func:`read_prompt_file`, or registered."""

    name: str
    answer: str
    messages: tuple[Message, ...]
    parser: str | None = None
    probabilities: str = "none"
    choices: tuple[str, ...] = ()
    description: str = ""
    reference: str = ""
    one_line: frozenset[str] = frozenset()
    disclosures: Mapping[str, str] = field(default_factory=dict)
    item: str | None = None
    separator: str = "\n"
    demonstrations: tuple[Demonstration, ...] = ()
    path: Path | None = None
    text: str = ""
    sha256: str = ""

    # -- rendering ------------------------------------------------------------------------------
    def shown(self, name: str, value: str) -> str:
        """A field's value as the prompt writes it (white space collapsed for ``one_line`` fields)."""
        return one_line(value) if name in self.one_line else value

    def _values(self, fields: Mapping[str, str], passages: Sequence[Mapping[str, str]]) -> dict[str, str]:
        values = {k: self.shown(k, v) for k, v in fields.items()}
        values[COUNT] = str(len(passages))
        if self.item is not None:
            values[PASSAGES] = self.separator.join(fill(self.item, self._item_values(i, p)) for i, p in enumerate(passages, start=1))
        return values

    def _item_values(self, number: int, passage: Mapping[str, str]) -> dict[str, str]:
        return {**{k: self.shown(k, v) for k, v in passage.items()}, NUMBER: str(number)}

    def render(self, fields: Mapping[str, str], passages: Sequence[Mapping[str, str]] = (), shots: int = 0) -> tuple[tuple[str, str], ...]:
        """The chat messages ``((role, content), ...)`` of one call.

        Args:
            fields: The stage's fields (``query``, ``passage``, ...).
            passages: Each passage's fields (``passage``; ``title`` and ``text``), numbered from 1.
            shots: How many of the demonstrations to show first.

        Returns:
            The messages, byte for byte what the model is sent.
        """
        if not 0 <= shots <= len(self.demonstrations):
            raise ConfigError(f"prompt {self.name} has {len(self.demonstrations)} demonstration(s); {shots} asked")
        top = self._values(fields, passages)
        out: list[tuple[str, str]] = []
        for each, group in self._groups():
            if each is None:
                out += [(m.role, fill(m.content, top)) for m in group]
            elif each == "passage":
                for i, p in enumerate(passages, start=1):
                    out += [(m.role, fill(m.content, {**top, **self._item_values(i, p)})) for m in group]
            else:
                for demo in self.demonstrations[:shots]:
                    values = self._values(demo.fields, demo.passages)
                    out += [(m.role, fill(m.content, values)) for m in group]
        return tuple(out)

    def _groups(self) -> list[tuple[str | None, list[Message]]]:
        """The messages in runs of the same ``each`` (a run of repeated messages is one group)."""
        groups: list[tuple[str | None, list[Message]]] = []
        for m in self.messages:
            if groups and m.each is not None and groups[-1][0] == m.each:
                groups[-1][1].append(m)
            else:
                groups.append((m.each, [m]))
        return groups

    # -- reading answers ------------------------------------------------------------------------
    def fixed_text(self) -> list[str]:
        """The prompt's own words: every template's text between its fields."""
        templates = [m.content for m in self.messages] + ([self.item] if self.item else [])
        return [part for t in templates for part in _FIELD.split(t)[::2] if part.strip()]

    def parse(self, text: str | None, *args: Any, messages: Sequence[tuple[str, str]] | None = None) -> Any:
        """The answer read by the prompt's parser (``args``: what it needs besides the text, e.g.
        the number of passages). ``messages``: the call's, whose echoes are not read; ``None``:
        the prompt's own words instead (an answer that repeats the instructions reads nothing);
        ``()``: no echo is looked for."""
        from sourcebias.llmcalls.parsers import get_parser

        if self.parser is None:
            raise ConfigError(f"prompt {self.name} names no parser (its answer, {self.answer}, is read from probabilities)")
        echo_of = [content for _role, content in messages] if messages is not None else self.fixed_text()
        return get_parser(self.parser)(text, *args, echo_of)

    # -- reading a prompt back (simulated models) -------------------------------------------------
    def read(self, messages: Sequence[Mapping[str, str]] | Sequence[tuple[str, str]]) -> dict[str, Any] | None:
        """The fields a call of this prompt was written with, from its messages (OpenAI
        dictionaries or ``(role, content)`` pairs): those of its last message, ``disclosure`` as
        the label (``None``: none), and ``passages``: each passage's fields with its ``number``.
        ``None`` when the last message is not this prompt's."""
        pairs = [(m["role"], m["content"]) if isinstance(m, Mapping) else (m[0], m[1]) for m in messages]
        last = next((m for m in reversed(self.messages) if m.each is None), None)
        if last is None or not pairs:
            return None
        found = self._pattern(last.content).match(pairs[-1][1])
        if found is None:
            return None
        out: dict[str, Any] = {k: (int(v) if k in _NUMERIC else v) for k, v in found.groupdict().items()}
        if "disclosure" in out:
            out["disclosure"] = next((label for label, line in self.disclosures.items() if line == out["disclosure"]), None)
        if PASSAGES in out and self.item is not None:
            out[PASSAGES] = self._read_items(out[PASSAGES].split(self.separator) if self.separator else [out[PASSAGES]], self.item)
        else:
            repeated = [m for m in self.messages if m.each == "passage"]
            if repeated:
                out[PASSAGES] = self._read_items([c for role, c in pairs if role == repeated[0].role], repeated[0].content)
        return out

    def _read_items(self, texts: Sequence[str], template: str) -> list[dict[str, Any]]:
        pattern = self._pattern(template)
        found = [m.groupdict() for m in map(pattern.match, texts) if m is not None]
        return [{k: (int(v) if k in _NUMERIC else v) for k, v in d.items()} for d in found]

    def _pattern(self, template: str) -> re.Pattern[str]:
        """A template as a regular expression whose groups are its fields (a field with a finite
        set of values, the disclosure, as that set; a number as digits)."""
        parts, seen = [], set()
        for i, piece in enumerate(_FIELD.split(template)):
            if i % 2 == 0:
                parts.append(re.escape(piece))
            elif piece in seen:
                parts.append(f"(?P={piece})")
            else:
                seen.add(piece)
                if piece == "disclosure":
                    options = sorted({"", *self.disclosures.values()}, key=len, reverse=True)
                    parts.append(f"(?P<disclosure>{'|'.join(map(re.escape, options))})")
                else:
                    parts.append(f"(?P<{piece}>\\d+)" if piece in _NUMERIC else f"(?P<{piece}>.*?)")
        return re.compile(r"\A" + "".join(parts) + r"\Z", re.DOTALL)

    # -- what a stage checks and records -----------------------------------------------------------
    def where(self) -> str:
        """How errors name the prompt: its file, or its name."""
        return str(self.path) if self.path is not None else f"prompt {self.name}"

    def fail(self, problem: str, key: str | None = None, table: str | None = None, index: int = 1) -> Any:
        """Raise the error of ``problem``, naming the file and the line of ``key`` where known."""
        from sourcebias.core.tomlfile import key_line

        line = key_line(self.text, key, table, index) if (key and self.text) else None
        raise DataError(self.path, problem, line) if self.path is not None else ConfigError(f"prompt {self.name}: {problem}")

    def check_use(self, use: PromptUse) -> Prompt:
        """This prompt, after checking that ``use``'s stage can send it and read its answers.

        Raises:
            DataError: It asks for another answer format, shows a list of passages to a stage that
                shows one, uses a field the stage does not give, or leaves out one the stage needs
                (the file, the line and the field named).
        """
        if self.answer not in use.answers:
            wanted = " or ".join(f'"{a}"' for a in use.answers)
            self.fail(f'answer = "{self.answer}" ({ANSWERS[self.answer]}): {use.stage} read(s) answer = {wanted}', "answer")
        if self.answer == "grade" and self.probabilities not in use.grade_probabilities:
            wanted = " or ".join(f'"{p}"' for p in use.grade_probabilities)
            self.fail(f"{use.stage} read(s) a grade's probabilities without generating: a grade prompt needs probabilities = {wanted}", "probabilities")
        listed = self.item is not None or any(m.each == "passage" for m in self.messages)
        if listed and not use.item_fields:
            self.fail(f'{use.stage} show(s) one passage, not a numbered list ([passages] or each = "passage")', PASSAGES if self.item else "each")
        top: set[str] = {*use.fields, COUNT, *([PASSAGES] if self.item is not None else [])}
        demo: set[str] = {COUNT, *(k for d in self.demonstrations for k in d.fields), *([PASSAGES] if self.item is not None else [])}
        for i, m in enumerate(self.messages, start=1):
            given = {"passage": top | use.item_fields | {NUMBER}, "demonstration": demo}.get(m.each or "", top)
            self._known(m.content, given, use, f"messages[{i}].content", ("content", "messages", i))
        if self.item is not None:
            self._known(self.item, use.item_fields | {NUMBER}, use, "passages.item", ("item", PASSAGES, 1))
        seen = {f for m in self.messages if m.each != "demonstration" for f in fields_of(m.content)} | set(fields_of(self.item or ""))
        missing = sorted(use.required - seen)
        if missing:
            self.fail(f"{use.stage} need(s) the field(s) {', '.join('{' + f + '}' for f in missing)} in the messages", "messages")
        return self

    def _known(self, template: str, given: set[str] | frozenset[str], use: PromptUse, where: str, place: tuple[str, str, int]) -> None:
        import difflib

        unknown = [f for f in fields_of(template) if f not in given]
        if unknown:
            guess = difflib.get_close_matches(unknown[0], sorted(given), n=1, cutoff=0.6)
            hint = f" (did you mean {{{guess[0]}}}?)" if guess else ""
            self.fail(f"{where}: field {{{unknown[0]}}}{hint} is not one {use.stage} give(s): {', '.join(sorted(given))}", *place)

    def digest(self) -> str:
        """SHA-256 of the prompt's file (of its description where it has no file)."""
        source = self.text or repr((self.name, self.answer, self.messages, self.parser, self.probabilities, self.choices))
        return self.sha256 or hashlib.sha256(source.encode("utf-8")).hexdigest()

    def describe(self) -> dict[str, Any]:
        """What a result records: the prompt's name, file, digest and text, and how it is read."""
        return {
            "name": self.name,
            "file": str(self.path.resolve()) if self.path is not None else None,
            "sha256": self.digest(),
            "reference": self.reference,
            "answer": self.answer,
            "parser": self.parser,
            "probabilities": self.probabilities,
            **({"choices": list(self.choices)} if self.choices else {}),
            "text": self.text,
        }


# -- reading a file --------------------------------------------------------------------------------
def read_prompt_file(path: str | Path) -> Prompt:
    """A prompt from its TOML file (the module gives the format).

    Raises:
        DataError: The file is missing, not TOML, or a key is unknown, of the wrong type or value
            (the file, the line and the key named).
    """
    from sourcebias.core.tomlfile import TomlFile, read_toml

    path, text, table = read_toml(path, "prompt file")
    f = TomlFile(path, text)
    f.keys(table, _KEYS, "the file")
    for key in ("name", "answer", "messages"):
        if key not in table:
            f.fail(f"'{key}' is missing")
    name = _get(f, table, "name", str)
    if not _NAME.fullmatch(name):
        f.fail(f"name: '{name}' is not a name (letters, digits, '-', '.', '_')", "name")
    answer = _get(f, table, "answer", str)
    if answer not in ANSWERS:
        f.fail(f"answer: '{answer}' is not one of {', '.join(ANSWERS)}", "answer")
    parser, probabilities, choices = _reading(f, table, answer)
    passages = f.keys(table.get(PASSAGES, {}), {"item", "separator"}, "[passages]", PASSAGES)
    return Prompt(
        name=name,
        answer=answer,
        messages=_messages(f, table),
        parser=parser,
        probabilities=probabilities,
        choices=choices,
        description=_get(f, table, "description", str, ""),
        reference=_get(f, table, "reference", str, ""),
        one_line=frozenset(_strings(f, table, "one_line")),
        disclosures=_disclosures(f, table),
        item=f.get(passages, "item", str, "[passages]") if passages else None,
        separator=f.get(passages, "separator", str, "[passages]", "\n") if passages else "\n",
        demonstrations=_demonstrations(f, table),
        path=path,
        text=text,
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
    )


def _get(f: Any, table: dict[str, Any], key: str, typ: type, default: Any = None) -> Any:
    """A top-level key's value, checked for its type (the error names its line)."""
    if key not in table:
        return default
    if not isinstance(table[key], typ) or isinstance(table[key], bool):
        f.fail(f"{key}: expected {typ.__name__}, got {table[key]!r}", key)
    return table[key]


def _strings(f: Any, table: dict[str, Any], key: str) -> list[str]:
    values = _get(f, table, key, list, [])
    if not all(isinstance(v, str) and v for v in values):
        f.fail(f"{key}: expected a list of non-empty strings, got {values!r}", key)
    return list(values)


def _reading(f: Any, table: dict[str, Any], answer: str) -> tuple[str | None, str, tuple[str, ...]]:
    """``(parser, probabilities, choices)`` of a prompt file, checked against its answer format."""
    from sourcebias.llmcalls.parsers import PARSERS

    parser = _get(f, table, "parser", str)
    if answer == "yes-no":
        if parser is not None:
            f.fail('parser: answer = "yes-no" is read from the first token\'s probabilities: no parser', "parser")
    elif parser is None:
        f.fail(f"'parser' is missing (the answer {answer} is read by one of: {', '.join(p for p, a in PARSER_ANSWERS.items() if a == answer)})", "answer")
    elif parser not in PARSERS:
        f.fail(f"parser: unknown parser '{parser}'; known: {', '.join(PARSERS)}", "parser")
    elif PARSER_ANSWERS.get(parser, answer) != answer:
        f.fail(f'parser: \'{parser}\' reads answer = "{PARSER_ANSWERS[parser]}", not "{answer}"', "parser")
    allowed = PROBABILITIES.get(answer, ("none",))
    probabilities = _get(f, table, "probabilities", str, allowed[0])
    if probabilities not in allowed:
        f.fail(f"probabilities: '{probabilities}' is not one of {', '.join(allowed)} (answer = \"{answer}\")", "probabilities")
    choices = tuple(_strings(f, table, "choices"))
    if answer == "yes-no" and (len(choices) != 2 or len(set(choices)) != 2):
        f.fail(f'choices: answer = "yes-no" needs two different choices, the relevant one first (e.g. ["Yes", "No"]), got {list(choices)}', "choices")
    if answer != "yes-no" and choices:
        f.fail(f'choices: only answer = "yes-no" takes choices (answer = "{answer}")', "choices")
    return parser, probabilities, choices


def _messages(f: Any, table: dict[str, Any]) -> tuple[Message, ...]:
    raw = table["messages"]
    if not isinstance(raw, list) or not raw:
        f.fail("messages: expected [[messages]] tables (role, content)", "messages")
    out = []
    for i, m in enumerate(raw, start=1):
        where = f"messages[{i}]"
        f.keys(m, {"role", "content", "each"}, where, "messages", i)
        for key in ("role", "content"):
            if key not in m:
                raise DataError(f.path, f"{where}: '{key}' is missing", _header_line(f.text, "messages", i))
        role = f.typed(m["role"], str, where, "role", "messages", i)
        if role not in ROLES:
            f.fail(f"{where}.role: '{role}' is not one of {', '.join(ROLES)}", "role", "messages", i)
        each = m.get("each")
        if each is not None and each not in EACH:
            f.fail(f"{where}.each: '{each}' is not one of {', '.join(EACH)}", "each", "messages", i)
        out.append(Message(role, f.typed(m["content"], str, where, "content", "messages", i), each))
    return tuple(out)


def _header_line(text: str, table: str, index: int) -> int | None:
    """The line of the ``index``-th ``[[table]]`` header (from 1), for an error about the table itself."""
    headers = [i for i, line in enumerate(text.splitlines(), start=1) if line.strip().startswith(f"[[{table}]]")]
    return headers[index - 1] if index <= len(headers) else None


def _disclosures(f: Any, table: dict[str, Any]) -> dict[str, str]:
    raw = table.get("disclosures", {})
    if not isinstance(raw, dict):
        f.fail("disclosures: expected a [disclosures] table (label = line)", "disclosures")
    return {label: f.typed(line, str, "[disclosures]", label, "disclosures") for label, line in raw.items()}


def _demonstrations(f: Any, table: dict[str, Any]) -> tuple[Demonstration, ...]:
    raw = table.get("demonstrations", [])
    if not isinstance(raw, list):
        f.fail("demonstrations: expected [[demonstrations]] tables", "demonstrations")
    out = []
    for i, d in enumerate(raw, start=1):
        where = f"demonstrations[{i}]"
        f.keys(d, set(d), where, "demonstrations", i)
        passages = d.get(PASSAGES, [])
        if not isinstance(passages, list) or not all(isinstance(p, dict) and all(isinstance(v, str) for v in p.values()) for p in passages):
            f.fail(f"{where}.passages: expected a list of tables of strings", PASSAGES, "demonstrations", i)
        fields = {k: f.typed(v, str, where, k, "demonstrations", i) for k, v in d.items() if k != PASSAGES}
        out.append(Demonstration(fields, tuple(passages)))
    return tuple(out)


# -- the registry ----------------------------------------------------------------------------------
_PROMPTS: dict[str, Prompt] = {}
_BUILTINS_LOADED: list[bool] = []


def builtin_prompt_files() -> list[Path]:
    """The prompt files sourcebias ships (package data)."""
    return sorted((Path(__file__).parent / "prompt_files").glob("*.toml"))


def register_prompt(prompt: Prompt) -> Prompt:
    """Make ``prompt`` known by its name (``--prompt NAME``, ``prompt=NAME``); a plug-in module
    registers its files with ``register_prompt(read_prompt_file(path))``.

    Returns:
        ``prompt``.
    """
    if not _NAME.fullmatch(prompt.name):
        raise ValueError(f"a prompt needs a name of letters, digits, '-', '.', '_', got {prompt.name!r}")
    _PROMPTS[prompt.name] = prompt
    return prompt


def prompt_kinds() -> dict[str, Prompt]:
    """Every registered prompt, by name (the shipped files first, then plug-ins').

    Returns:
        ``{name: prompt}``.
    """
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED.append(True)
        for path in builtin_prompt_files():
            _PROMPTS.setdefault(path.stem, register_prompt(read_prompt_file(path)))
    from sourcebias.core.plugins import load_plugins

    load_plugins()
    return dict(_PROMPTS)


def load_prompt(spec: str | Path | Prompt, use: PromptUse | None = None) -> Prompt:
    """A prompt by registered name or by file, checked for ``use`` when given.

    Args:
        spec: A registered name (``umbrela``), a prompt file (``my-judge.toml``), or a prompt.
        use: The stage that sends it (checked: answer format, fields).

    Raises:
        ConfigError: Neither a registered name nor a file.
        DataError: A file that is not a valid prompt, or not one ``use``'s stage can send.
    """
    if isinstance(spec, Prompt):
        prompt = spec
    else:
        known = prompt_kinds()
        text = str(spec)
        if text in known:
            prompt = known[text]
        elif Path(text).expanduser().is_file():
            prompt = _read_cached(Path(text).expanduser())
        else:
            names = [n for n, p in known.items() if use is None or p.answer in use.answers]
            raise ConfigError(f"prompt '{text}' is neither a registered prompt ({', '.join(names)}) nor a prompt file")
    return prompt.check_use(use) if use is not None else prompt


_FILES: dict[tuple[str, int, int], Prompt] = {}


def _read_cached(path: Path) -> Prompt:
    """:func:`read_prompt_file`, read again only when the file changed (a stage loads its prompt often)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _FILES:
        _FILES[key] = read_prompt_file(path)
    return _FILES[key]


def taken_by(prompt: Prompt) -> list[str]:
    """How each stage that can send ``prompt`` is given it (``sourcebias judge --prompt``, ...)."""
    out = []
    for use in USES.values():
        try:
            prompt.check_use(use)
        except (ConfigError, DataError):
            continue
        out.append(use.option)
    return out
