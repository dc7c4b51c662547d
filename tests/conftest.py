"""Shared fixtures: the real data in ../shared/data and small datasets written on the fly."""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SOURCEBIAS_DATA", REPO.parent / "shared" / "data"))
LLAMA = "llama-2-7b-chat-tmp0.2"
_SESSION_CACHE: list[str] = []  # the temporary SOURCEBIAS_CACHE this process made (removed at the end)


def pytest_configure(config):
    """One temporary sourcebias cache per test session, for this process and every subprocess it
    starts (they inherit the variable): model outputs are computed once per session and nothing
    is written under ~/.cache/sourcebias. The Hugging Face/torch caches (the offline models) are
    left alone."""
    import tempfile

    _SESSION_CACHE.append(tempfile.mkdtemp(prefix="sourcebias-test-cache-"))
    os.environ["SOURCEBIAS_CACHE"] = _SESSION_CACHE[-1]


def pytest_unconfigure(config):
    import shutil

    while _SESSION_CACHE:
        shutil.rmtree(_SESSION_CACHE.pop(), ignore_errors=True)


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


def tiny_grid_toml(tmp_path: Path, data: Path, extra: str = "", name: str = "grid.toml", retrievers=("bm25", "tfidf")) -> Path:
    """A small grid file (NDCG and Share at 1 and 3, 200 resamples) over ``data``; ``extra``: more
    ``[grid]`` lines, written as given."""
    systems = "".join(f'\n[[retrievers]]\nspec = "{r}"\n' for r in retrievers)
    body = f"""
[grid]
name = "tiny"
measures = ["NDCG", "Share"]
cutoffs = [1, 3]
significance_resamples = 200
bootstrap_resamples = 200
{extra}

[[datasets]]
path = "{data}"
"""
    path = tmp_path / name
    path.write_text(body + systems, encoding="utf-8")
    return path


# -- independent re-implementations of documented rules, for checking the package against ------------
_MASK = (1 << 64) - 1


def h64(*parts: str) -> int:
    """The documented 64-bit hash (BLAKE2b, 8 bytes, each part length-prefixed), written anew."""
    h = hashlib.blake2b(digest_size=8)
    for p in parts:
        b = p.encode()
        h.update(len(b).to_bytes(4, "little") + b)
    return int.from_bytes(h.digest(), "little")


def splitmix64(x: int) -> int:
    z = (x + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def tie_key(query_id: str, doc_id: str, source: str, seed: int = 0) -> int:
    """README: ties ordered by splitmix64(h(source, doc_id) XOR h("query", seed, query_id)), smallest first."""
    return splitmix64(h64(source, doc_id) ^ h64("query", str(seed), query_id))


def hand_rank(query_id: str, scored: dict, seed: int = 0) -> list:
    """Keys ``(doc_id, source)`` sorted by score (highest first), ties by the tie rule."""
    return sorted(scored, key=lambda key: (-scored[key], tie_key(query_id, key[0], key[1], seed)))


def hand_ndcg(ranked, labels, target, n_sources, k):
    """NDCG@k written out by hand (trec_eval's definition): gain = grade, discount log2(rank + 1);
    other sources' copies count as 0; the ideal list holds every copy that counts as relevant."""
    gains = [labels.get(d, 0) if target in ("all", s) else 0 for d, s in ranked[:k]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted([g for g in labels.values() if g > 0] * (n_sources if target == "all" else 1), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0
