"""Shared fixtures: the real data in ../shared/data and small datasets written on the fly."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SOURCEBIAS_DATA", REPO.parent / "shared" / "data"))
LLAMA = "llama-2-7b-chat-tmp0.2"


def data_dir(name: str) -> Path:
    path = DATA / name
    if not (path / "queries.jsonl").is_file():
        pytest.skip(f"dataset {name} not found under {DATA} (set SOURCEBIAS_DATA)")
    return path


@pytest.fixture(scope="session")
def nq_utd() -> Path:
    return data_dir("nq-utd")


@pytest.fixture(scope="session")
def nfcorpus() -> Path:
    return data_dir("nfcorpus")


def write_jsonl(path: Path, records) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


def write_qrels(path: Path, rows, header: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = (["query-id\tcorpus-id\tscore"] if header else []) + ["\t".join(str(x) for x in r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


HUMAN_DOCS = [
    {"_id": "d1", "title": "", "text": "The cat sat on the mat in the sun."},
    {"_id": "d2", "title": "Dogs", "text": "Dogs bark loudly at night."},
    {"_id": "d3", "title": "", "text": "Cats and dogs can live together peacefully."},
]
LLM_DOCS = [
    {"_id": "d1", "title": "", "text": "A cat was sitting on the mat under the sun."},
    {"_id": "d2", "title": "Dogs", "text": "At night, dogs bark very loudly."},
    {"_id": "d3", "title": "", "text": "Cats and dogs are able to live together in peace."},
]
QUERIES = [{"_id": "q1", "text": "cat on a mat"}, {"_id": "q2", "text": "barking dogs"}]
QRELS = [("q1", "d1", 1), ("q2", "d2", 2), ("q2", "d3", 0)]


@pytest.fixture
def cocktail_dir(tmp_path: Path) -> Path:
    """A tiny dataset in Cocktail's layout (human + one LLM twin, split 'test')."""
    root = tmp_path / "tiny"
    write_jsonl(root / "corpus" / "human.jsonl", HUMAN_DOCS)
    write_jsonl(root / "corpus" / "llm.jsonl", LLM_DOCS)
    write_jsonl(root / "queries.jsonl", QUERIES)
    write_qrels(root / "qrels" / "test.tsv", QRELS)
    return root
