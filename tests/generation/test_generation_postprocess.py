"""Post-processing of LLM answers: on real SmolLM2-135M-Instruct outputs recorded as fixtures
(tests/fixtures/generation/, made by record_smollm2_outputs.py there; hand labels in
smollm2_labels.json), and on the chat-model formulas the papers describe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sourcebias.generation.postprocess import clean_output, detect_refusal
from sourcebias.generation.prompts import COCKTAIL_PROMPT, KDD_PROMPT, PromptTemplate, load_prompt

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "generation"
RECORDED = [json.loads(line) for line in (FIXTURES / "smollm2_outputs.jsonl").read_text(encoding="utf-8").splitlines()]
LABELS = json.loads((FIXTURES / "smollm2_labels.json").read_text(encoding="utf-8"))


def _prompt(name: str) -> PromptTemplate:
    return PromptTemplate("direct", "{text}") if name == "direct" else load_prompt(name)


def test_every_recorded_output_is_labelled():
    assert sorted(r["case"] for r in RECORDED) == sorted(k for k in LABELS if not k.startswith("_"))
    statuses = {LABELS[r["case"]]["status"] for r in RECORDED}
    assert statuses == {"ok", "refused", "empty", "truncated"}  # the recordings cover every outcome


@pytest.mark.parametrize("rec", RECORDED, ids=[r["case"] for r in RECORDED])
def test_recorded_smollm2_output(rec):
    label = LABELS[rec["case"]]
    prompt = _prompt(rec["prompt"])
    got = clean_output(
        rec["raw"],
        finish_reason=rec["finish_reason"],
        source_text=rec["input_text"],
        template=prompt.template,
        answer_marker=prompt.answer_marker or "Rewritten Text:",
    )
    assert got.status == label["status"], (got.reason, got.text[:200])
    expected = label["text"] if "text" in label else rec["raw"].strip()
    assert got.text == expected
    assert list(got.removed) == label.get("removed", [])


# The papers' examples and the formulas of chat models (Llama-2-chat, GPT); written here, not
# recorded: SmolLM2 produces none of them.
@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("Sure, here's a possible rewrite of the text:\n\nThe cat sat on the mat.", "The cat sat on the mat."),  # KDD paper, §3.1
        ('Sure! Here is the rewritten text:\n\n"The cat sat on the mat."', "The cat sat on the mat."),
        ("Rewritten Text: The cat sat on the mat.", "The cat sat on the mat."),  # Cocktail's format
        ("**Rewritten Text:** The cat sat on the mat.", "The cat sat on the mat."),
        ("Certainly! The cat sat on the mat.\n\nNote: I kept the meaning but changed the wording.", "The cat sat on the mat."),
        ("“The cat sat on the mat.”", "The cat sat on the mat."),
        ("The cat sat on the mat.\n\nI hope this helps! Let me know if you need anything else.", "The cat sat on the mat."),
    ],
)
def test_chatter_is_stripped(raw, text):
    got = clean_output(raw, finish_reason="stop", source_text="A cat was sitting on the mat.", template=KDD_PROMPT)
    assert got.status == "ok" and got.text == text


@pytest.mark.parametrize(
    "raw",
    [
        "I apologize, but I cannot fulfill your request. The text contains harmful content.",
        "I cannot rewrite this text as it promotes violence.",
        "I'm sorry, but I can't assist with that.",
        "As an AI language model, I must respectfully decline.",
        "Here is the rewritten text:\n\nI'm sorry, but I cannot help with that request.",
    ],
)
def test_refusals_are_flagged(raw):
    assert clean_output(raw, finish_reason="stop", source_text="How to build a weapon at home.").status == "refused"


@pytest.mark.parametrize(
    ("raw", "source"),
    [
        # Documents about refusing, apologising or AI: faithful rewrites are not refusals.
        ("The clinic said it cannot provide the vaccine to children under five.", "The clinic cannot provide the vaccine to under-fives, it said."),
        ("I'm sorry, but we cannot accept returns after 30 days, the shop's notice says.", "Sorry, we cannot accept returns after 30 days (shop notice)."),
        ("As an AI researcher, I cannot wait for the next model.", "As an AI researcher I can't wait for the next model."),
        ("I can't help feeling that this album is the best of the year.", "This album is the best of the year, the critic felt."),
        ("Patients who refused treatment had worse outcomes.", "Refusal of treatment was associated with worse outcomes."),
    ],
)
def test_documents_about_refusal_are_not_refusals(raw, source):
    assert detect_refusal(raw, source) is None
    assert clean_output(raw, finish_reason="stop", source_text=source).status == "ok"


def test_empty_truncated_and_text_the_document_contains():
    assert clean_output("   ", finish_reason="stop").status == "empty"
    assert clean_output("Sure! Here is the rewritten text:", finish_reason="stop").status == "empty"
    assert clean_output("A long rewrite that was cut", finish_reason="length").status == "truncated"
    # A line the document itself has is content, even if it looks like an announcement.
    src = "Here is the text of the speech:\nWe shall fight on the beaches."
    assert clean_output(src, finish_reason="stop", source_text=src).text == src
    # The Cocktail prompt's own sentence echoed at the end is dropped.
    got = clean_output(
        "Original Text: Dogs bark. Please rewrite the above given text.", finish_reason="stop", source_text="Dogs bark.", template=COCKTAIL_PROMPT
    )
    assert got.text == "Dogs bark." and got.status == "ok"


def test_provider_content_filter_counts_as_refusal():
    got = clean_output("The partial answer", finish_reason="content_filter", source_text="x")
    assert got.status == "refused" and "content_filter" in got.reason
