"""Rewriting prompts: the papers' wording, user templates, and the chat messages sent to a model.

References
----------
* KDD 2024 (Dai et al., *Neural Retrievers are Biased Towards LLM-Generated Content*), §3.1:
  ``Please rewrite the following text: {text}``.
* Cocktail (Dai et al., ACL Findings 2024), §3: a post-instruction prompt whose answer is
  introduced by ``Rewritten Text:`` (see :mod:`sourcebias.generation.postprocess`).
* KDD 2024, Appendix B, Table 7: nine common rephrasing prompts (from the InstructGPT-prompts
  repository); the instruction is followed by the text, as in the KDD prompt.

A template is plain text with the placeholders ``{text}`` (required) and ``{title}``
(optional). Only these two are substituted, in one pass, so braces elsewhere in a template
(JSON examples) or in a document never need escaping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from sourcebias.core.errors import ConfigError

KDD_PROMPT = "Please rewrite the following text: {text}"
COCKTAIL_PROMPT = "Original Text: {text} Please rewrite the above given text. Your answer must be formatted as follows: Rewritten Text: <your rewritten text>."

# KDD 2024, Appendix B, Table 7, in the paper's order (the wording is the paper's, verbatim).
TABLE7_INSTRUCTIONS: dict[str, str] = {
    "own-words": "Rewrite the text below in your own words:",
    "paraphrase": "Paraphrase the provided text while maintaining its meaning:",
    "summarize": "Summarize the following passage in a concise manner:",
    "simplify": "Simplify the given passage while keeping the main ideas:",
    "rephrase": "Rephrase the given text using alternative expressions:",
    "condense": "Condense the following passage to focus on key points:",
    "restate": "Briefly restate the provided text without losing its essence:",
    "reword": "Reword the passage below to make it more succinct:",
    "express": "Express the following text in a different way while keeping its intent:",
}

_PLACEHOLDER = re.compile(r"\{(text|title)\}")
_OTHER_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class PromptTemplate:
    """A rewriting prompt.

    ``template`` holds ``{text}`` and optionally ``{title}``; ``system`` is an optional system
    message (``None`` keeps the model's own default, e.g. SmolLM2's chat template adds one);
    ``answer_marker`` is the label the answer follows (Cocktail's ``Rewritten Text:``), which
    post-processing uses to cut the answer out.
    """

    name: str
    template: str
    system: str | None = None
    answer_marker: str | None = None
    reference: str = ""

    def __post_init__(self) -> None:
        if "{text}" not in self.template:
            raise ConfigError(f"prompt '{self.name}' has no {{text}} placeholder: {self.template[:80]!r}")

    def render(self, text: str, title: str = "") -> str:
        """The user message for one document (placeholders substituted in a single pass)."""
        values = {"text": text, "title": title}
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], self.template)

    def messages(self, text: str, title: str = "") -> list[dict[str, str]]:
        """Chat messages (OpenAI format) for one document: an optional system message and the user turn."""
        out: list[dict[str, str]] = []
        if self.system:
            out.append({"role": "system", "content": self.system})
        out.append({"role": "user", "content": self.render(text, title)})
        return out

    def with_sentence(self, sentence: str) -> PromptTemplate:
        """This prompt with ``sentence`` added after it, separated by a blank line (the length
        target of :mod:`sourcebias.generation.length`); the prompt's own wording is unchanged."""
        return replace(self, template=f"{self.template}\n\n{sentence}")

    def describe(self) -> dict[str, str | None]:
        return {"name": self.name, "template": self.template, "system": self.system, "answer_marker": self.answer_marker, "reference": self.reference}


def _builtin() -> dict[str, PromptTemplate]:
    out = {
        "kdd": PromptTemplate("kdd", KDD_PROMPT, reference="Dai et al., KDD 2024, §3.1"),
        "cocktail": PromptTemplate("cocktail", COCKTAIL_PROMPT, answer_marker="Rewritten Text:", reference="Dai et al., Cocktail, ACL Findings 2024, §3"),
    }
    for key, instruction in TABLE7_INSTRUCTIONS.items():
        out[key] = PromptTemplate(key, f"{instruction} {{text}}", reference="Dai et al., KDD 2024, Appendix B, Table 7")
    return out


BUILTIN_PROMPTS: dict[str, PromptTemplate] = _builtin()


def load_prompt(spec: str, *, system: str | None = None, answer_marker: str | None = None) -> PromptTemplate:
    """A built-in prompt by name (``kdd``, ``cocktail``, ``paraphrase``, ...) or a template file.

    A file holds the template as UTF-8 text (one trailing newline is dropped) with ``{text}``
    and optionally ``{title}``; any other ``{name}`` is an error, so that typos such as
    ``{txt}`` do not silently reach the model. Raises :class:`ConfigError` for an unknown name,
    a missing file or a bad template.
    """
    if spec in BUILTIN_PROMPTS:
        base = BUILTIN_PROMPTS[spec]
    else:
        path = Path(spec).expanduser()
        if not path.is_file():
            names = ", ".join(BUILTIN_PROMPTS)
            raise ConfigError(f"--prompt '{spec}' is neither a built-in prompt ({names}) nor an existing template file")
        template = path.read_text(encoding="utf-8")
        if template.endswith("\n"):
            template = template[:-1]
        unknown = sorted({m.group(1) for m in _OTHER_FIELD.finditer(template)} - {"text", "title"})
        if unknown:
            raise ConfigError(f"prompt file {path}: unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}; use {{text}} and {{title}}")
        if "{text}" not in template:
            raise ConfigError(f"prompt file {path} has no {{text}} placeholder")
        marker = "Rewritten Text:" if "Rewritten Text:" in template else None
        base = PromptTemplate(path.stem, template, answer_marker=marker, reference=str(path.resolve()))
    if system is None and answer_marker is None:
        return base
    return PromptTemplate(base.name, base.template, system if system is not None else base.system, answer_marker or base.answer_marker, base.reference)
