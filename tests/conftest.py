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


_OWNER = "SOURCEBIAS_TEST_SESSION_CACHE"  # set by the process that made the session cache


def pytest_configure(config):
    """One temporary sourcebias cache per test session, for this process and every process it
    starts (they inherit the variable): model outputs are computed once per session and nothing
    is written under ~/.cache/sourcebias. The Hugging Face/torch caches (the offline models) are
    left alone.

    With pytest-xdist (the default: ``-n 2`` in pyproject.toml) the workers inherit the cache the
    controller made, so the session computes each model output once, not once per worker: every
    store under it is written by whole files renamed into place, made for several processes at
    once (:mod:`sourcebias.models.embedding_store`)."""
    import tempfile

    if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(_OWNER) == os.environ.get("SOURCEBIAS_CACHE"):
        return  # an xdist worker: the controller's cache, removed by the controller
    # One thread for torch and BLAS in every test process (two workers share the 2-core machine);
    # set before any test module imports torch, inherited by the workers and their subprocesses.
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    _SESSION_CACHE.append(tempfile.mkdtemp(prefix="sourcebias-test-cache-"))
    os.environ["SOURCEBIAS_CACHE"] = os.environ[_OWNER] = _SESSION_CACHE[-1]


def pytest_unconfigure(config):
    import shutil

    while _SESSION_CACHE:
        shutil.rmtree(_SESSION_CACHE.pop(), ignore_errors=True)
    while _BUILTIN_COPIES:  # every process (xdist workers too) removes the copies it wrote
        shutil.rmtree(_BUILTIN_COPIES.popitem()[1].parent, ignore_errors=True)


# Modules that must not run beside each other on two workers: each starts Ray on this machine.
_SHARED_SCOPES = {
    "tests/experiments/test_grid.py": "ray",
    "tests/experiments/test_ray_cluster.py": "ray",
    "tests/experiments/test_ray_encode.py": "ray",
}


def _scope(nodeid: str) -> str:
    """A test's unit of work under pytest-xdist: its module (module fixtures are computed once),
    the Ray modules together, and each documentation page on its own (pages share only session
    fixtures)."""
    module = nodeid.split("::", 1)[0]
    if module == "tests/project/test_docs.py" and "[" in nodeid:
        return nodeid
    return _SHARED_SCOPES.get(module, module)


@pytest.hookimpl(optionalhook=True)  # an xdist hook: no error where xdist is not loaded
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scope scheduling with the scopes of :func:`_scope` (``--dist loadgroup`` does
    not group under pytest 9, whose test ids no longer take xdist's ``@group`` suffix). The units
    with the most tests go out first (xdist's default order); measured from a fresh clone, this
    beat sending the slow-marked modules first (493 s against 547 s)."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

    return ModuleScheduling(config, log)


_BUILTIN_COPIES: dict[str, Path] = {}  # name -> this process's plain copy of a dataset shipped in the package


def _plain_builtin_copy(name: str) -> Path | None:
    """A dataset the package ships (NQ-UTD, gzip-compressed inside ``sourcebias/data/builtin``)
    written out once per test process in the layout of the development copy in ../shared/data
    (``queries.jsonl``, ``corpus/<source>.jsonl``, ``qrels/<split>.tsv``: the same bytes, checked
    by tests/data/test_builtin_data.py), so that a clone without ../shared runs the tests that
    need it; ``None`` for a dataset the package does not ship."""
    import gzip
    import shutil
    import tempfile

    from sourcebias.data.registry import known_dataset

    if name in _BUILTIN_COPIES:
        return _BUILTIN_COPIES[name]
    known = known_dataset(name)
    if known is None or not known.builtin:
        return None
    shipped, root = known.builtin_path(), Path(tempfile.mkdtemp(prefix="sourcebias-test-builtin-")) / name
    for rel in known.shipped:  # the data files only (the LICENSE stays in the package)
        target = root / rel.removesuffix(".gz")
        target.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(shipped / rel, "rb") as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst)
    _BUILTIN_COPIES[name] = root
    return root


def data_dir(name: str) -> Path:
    """The development copy of a dataset (``$SOURCEBIAS_DATA/<name>``, by default ../shared/data);
    without it, the copy the package ships (NQ-UTD); a test needing another one skips."""
    path = DATA / name
    if (path / "queries.jsonl").is_file():
        return path
    builtin = _plain_builtin_copy(name)
    if builtin is None:
        pytest.skip(f"dataset {name} not found under {DATA} (set SOURCEBIAS_DATA)")
    return builtin


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


# Four short twin pairs and a query for each: the language-model tests' smallest real text.
TWIN_HUMAN = [
    "The cat sat on the mat all day.",
    "Dogs bark at night near the old house.",
    "The river flooded the valley after the rain.",
    "Fresh bread is baked every morning here.",
]
TWIN_LLM = [
    "A cat was sitting on the mat all day long.",
    "At night, dogs bark near the old house.",
    "After the rain, the river flooded the valley.",
    "Every morning, fresh bread is baked here.",
]
TWIN_QUERIES = ["cat on a mat", "barking dogs", "river flood", "bread bakery"]

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
