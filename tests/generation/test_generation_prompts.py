"""Rewriting prompts: the papers' exact wording, user templates, chat messages."""

from pathlib import Path

import pytest
from conftest import DATA

from sourcebias.core.errors import ConfigError
from sourcebias.generation.prompts import BUILTIN_PROMPTS, TABLE7_INSTRUCTIONS, load_prompt

PAPERS = DATA.parent / "papers" / "003_12c7f2be73f6d196.txt"  # KDD 2024 with Appendix B, beside the data


def test_kdd_prompt_is_the_papers():
    p = load_prompt("kdd")
    assert p.render("The cat sat.") == "Please rewrite the following text: The cat sat."
    assert p.messages("The cat sat.") == [{"role": "user", "content": "Please rewrite the following text: The cat sat."}]


def test_cocktail_prompt_is_the_papers():
    p = load_prompt("cocktail")
    assert p.render("X.") == (
        "Original Text: X. Please rewrite the above given text. Your answer must be formatted as follows: Rewritten Text: <your rewritten text>."
    )
    assert p.answer_marker == "Rewritten Text:"


def test_table7_has_nine_prompts_in_the_papers_wording():
    assert len(TABLE7_INSTRUCTIONS) == 9
    assert TABLE7_INSTRUCTIONS["paraphrase"] == "Paraphrase the provided text while maintaining its meaning:"
    assert TABLE7_INSTRUCTIONS["summarize"] == "Summarize the following passage in a concise manner:"
    assert load_prompt("express").render("T") == "Express the following text in a different way while keeping its intent: T"
    try:  # when the paper's text is at hand, check every instruction against Table 7's rows verbatim
        table = Path(PAPERS).read_text(encoding="utf-8").split("Table 7.", 1)[1][:2000]
    except (OSError, IndexError):
        pytest.skip("paper text not available")
    for instruction in TABLE7_INSTRUCTIONS.values():
        assert instruction in table
    assert all(name in BUILTIN_PROMPTS for name in TABLE7_INSTRUCTIONS)


def test_template_file_with_title_and_literal_braces(tmp_path):
    f = tmp_path / "mine.txt"
    f.write_text('Title: {title}\nRewrite as JSON {"text": ...}: {text}\n', encoding="utf-8")
    p = load_prompt(str(f), system="Be brief.")
    # Only {text} and {title} are substituted, once: braces in the document stay as they are.
    assert p.render("a {title} b", "T") == 'Title: T\nRewrite as JSON {"text": ...}: a {title} b'
    assert p.messages("x", "T")[0] == {"role": "system", "content": "Be brief."}
    assert p.name == "mine"


def test_bad_templates_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="neither a built-in prompt"):
        load_prompt("no-such-prompt.txt")
    f = tmp_path / "typo.txt"
    f.write_text("Rewrite: {txt}", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown placeholder\(s\) \{txt\}"):
        load_prompt(str(f))
    g = tmp_path / "none.txt"
    g.write_text("Rewrite this.", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"no \{text\}"):
        load_prompt(str(g))
