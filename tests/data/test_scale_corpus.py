"""benchmarks/make_scale_corpus.py: a corpus with MS MARCO's shape that every command reads.

Checked against what the script promises, computed here independently: the same seed gives the
same bytes; the Cocktail layout loads with sourcebias's reader; passages average about 58 words;
the twins' length ratio matches the one measured here on the development corpora's twins; about
one judged passage per query, whose words the query's words are.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sourcebias.data import load_dataset

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "make_scale_corpus.py"
LLM = "llama-2-7b-chat-tmp0.2"


def make(out: Path, data: Path, *args: str) -> Path:
    subprocess.run([sys.executable, str(SCRIPT), str(out), "--data", str(data), *args], check=True, capture_output=True)
    return out


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def dev_twin_ratio(data: Path) -> float:
    """Mean LLM words / human words over the development corpora's twins (human text >= 10 words)."""
    ratios = []
    for name in ("nfcorpus", "nq-utd"):
        human = {d["_id"]: d["text"] for d in read(data / name / "corpus" / "human.jsonl")}
        for d in read(data / name / "corpus" / f"{LLM}.jsonl"):
            if d["_id"] in human and len(human[d["_id"]].split()) >= 10:
                ratios.append(len(d["text"].split()) / len(human[d["_id"]].split()))
    return float(np.mean(ratios))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, nfcorpus, nq_utd):
    data = nfcorpus.parent
    return make(tmp_path_factory.mktemp("scale") / "c", data, "--docs", "6000", "--queries", "300", "--seed", "5"), data


def test_same_seed_same_bytes_other_seed_other_text(corpus, tmp_path):
    out, data = corpus
    again = make(tmp_path / "again", data, "--docs", "6000", "--queries", "300", "--seed", "5")
    other = make(tmp_path / "other", data, "--docs", "6000", "--queries", "300", "--seed", "6")
    for rel in ("corpus/human.jsonl", f"corpus/{LLM}.jsonl", "queries.jsonl", "qrels/test.tsv"):
        assert (out / rel).read_bytes() == (again / rel).read_bytes(), rel
        assert (out / rel).read_bytes() != (other / rel).read_bytes(), rel


def test_loads_in_the_cocktail_layout_with_a_twin_per_passage(corpus):
    out, _ = corpus
    ds = load_dataset(out, split="test")
    assert ds.corpus.source_counts() == {"human": 3000, LLM: 3000}
    assert len(ds.evaluation_queries()) == 300


def test_lengths_and_twin_ratio_have_the_shape_promised(corpus):
    out, data = corpus
    human = {d["_id"]: len(d["text"].split()) for d in read(out / "corpus" / "human.jsonl")}
    llm = {d["_id"]: len(d["text"].split()) for d in read(out / "corpus" / f"{LLM}.jsonl")}
    assert human.keys() == llm.keys()
    assert 55 <= np.mean(list(human.values())) <= 62  # MS MARCO's 58 words; sd of the mean ~0.5
    ratio = np.mean([llm[i] / human[i] for i in human])
    assert abs(ratio - dev_twin_ratio(data)) < 0.03


def test_about_one_judged_passage_per_query_made_of_its_words(corpus):
    out, _ = corpus
    rows = [line.split("\t") for line in (out / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    assert 300 <= len(rows) <= 345  # 1 + Binomial(300, 0.065) per query: mean 319.5, sd 4.3
    first = {}
    for q, d, grade in rows:
        assert grade == "1"
        first.setdefault(q, d)
    passages = {d["_id"]: d["text"].lower() for d in read(out / "corpus" / "human.jsonl")}
    for q in read(out / "queries.jsonl"):
        words = set(re.findall(r"[a-z][a-z-]+", passages[first[q["_id"]]]))
        assert 1 <= len(q["text"].split()) <= 12
        assert set(q["text"].split()) <= words, q
