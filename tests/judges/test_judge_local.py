"""The judge end to end with SmolLM2 through the local backend, on two NQ-UTD queries (two judged
documents each, both copies): the grade tokens' probability mass in grades.tsv is recomputed here
straight from transformers (the next-token distribution after the chat-templated prompt), and so
is the expected grade, given only where that mass is at least MIN_GRADE_MASS; every answer is
either parsed or counted as unparseable."""

from __future__ import annotations

import json
import math

import pytest
from conftest import write_jsonl, write_qrels

from sourcebias.data import load_dataset
from sourcebias.judges import JudgePlan, JudgeSettings, load_judge, run_judge
from sourcebias.judges.prompts import grade_messages
from sourcebias.llmcalls import ModelAccess
from sourcebias.llmcalls.grades import LOW_MASS, MIN_GRADE_MASS


@pytest.fixture(scope="module")
def small_nq(nq_utd, tmp_path_factory):
    """Two queries of NQ-UTD with two of their judged documents each, both sources."""
    full = load_dataset(nq_utd)
    queries = [q for q in full.queries if q in full.qrels][:2]
    keep = {q: list(full.qrels[q].items())[:2] for q in queries}
    docs = {d for pairs in keep.values() for d, _ in pairs}
    root = tmp_path_factory.mktemp("nq-small")
    for s in full.sources:
        rows = [{"_id": d.doc_id, "title": d.title, "text": d.text} for d in full.corpus if d.source == s and d.doc_id in docs]
        write_jsonl(root / "corpus" / f"{s}.jsonl", rows)
    write_jsonl(root / "queries.jsonl", [{"_id": q, "text": full.queries[q]} for q in queries])
    write_qrels(root / "qrels" / "test.tsv", [(q, d, g) for q, pairs in keep.items() for d, g in pairs])
    return root


def test_smollm2_judge_end_to_end(small_nq, tmp_path):
    from sourcebias.models.llm import resolve_lm

    settings = JudgeSettings(prompt="digit", max_tokens=1)
    result, path = run_judge(
        str(small_nq), "smollm2", tmp_path / "out", settings=settings, plan=JudgePlan(resamples=200), access=ModelAccess(cache_dir=tmp_path / "cache")
    )
    g = result.grades
    assert len(g) == 8 and result.judge["calls"] == 8
    (p,) = result.rows("parse")
    assert p["answers"] == 8 and p["unparseable"] == int(g["grade"].isna().sum())
    # the local backend scores the four grades exactly: every parsed answer has its mass; unparsed ones have none
    assert (g["grade_mass"].notna() == g["grade"].notna()).all() and (g.loc[g["grade"].isna(), "expected_note"] == "unparsed").all()
    # the expected grade of the first item, from transformers directly
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where = resolve_lm("smollm2")
    tok, model = AutoTokenizer.from_pretrained(where), AutoModelForCausalLM.from_pretrained(where, dtype=torch.float32)
    ds = load_dataset(small_nq)
    row = g[g["grade"].notna()].iloc[0]
    passage = ds.corpus[ds.corpus.position(row["doc_id"], row["source"])].retrieval_text()
    ((_, prompt),) = grade_messages(ds.queries[row["query_id"]], passage, prompt="digit")
    text = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False)
    ids = tok(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(model(ids).logits[0, -1].double(), dim=-1)
    probs = [math.exp(float(logp[tok(str(k), add_special_tokens=False)["input_ids"][0]])) for k in range(4)]
    assert row["grade_mass"] == pytest.approx(sum(probs), rel=1e-2)
    if sum(probs) >= MIN_GRADE_MASS:
        assert row["expected"] == pytest.approx(sum(k * pk for k, pk in enumerate(probs)) / sum(probs), abs=1e-3)
    else:  # SmolLM2-135M leaves about 24-31% of its first token on the grades: no expected grade, and it says why
        assert math.isnan(row["expected"]) and row["expected_note"] == LOW_MASS
    assert load_judge(path) == result
    assert json.loads((path / "manifest.json").read_text())["models"]["judge"]["model"] == "smollm2"
