"""Encoding 100,000 documents into the embedding store with a real (tiny, random)
sentence-transformers model: killed with SIGKILL after a few shards, the store holds only whole
shards, loses at most the shard being filled, and a rerun encodes only what is missing; the
vectors equal sentence-transformers' own ``encode``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from dense_helpers import short_texts, tiny_sentence_transformer

from sourcebias.models.embedding_store import Embedder, EmbeddingStore, text_key
from sourcebias.models.encoders import SentenceTransformerEncoder

pytestmark = pytest.mark.slow

N = 100_000
SHARD = 10_000
BATCH = 500

CHILD = """
import sys
from dense_helpers import short_texts
from sourcebias.models.embedding_store import Embedder
from sourcebias.models.encoders import SentenceTransformerEncoder

enc = SentenceTransformerEncoder(model=sys.argv[1], batch_size=int(sys.argv[5]))
encode = enc.encode_documents

def counted(texts):
    vectors = encode(texts)
    print(len(texts), flush=True)  # the parent adds these up: texts encoded before the kill
    return vectors

enc.encode_documents = counted
Embedder(enc, cache_dir=sys.argv[2], shard_size=int(sys.argv[4]), flush_seconds=1e9).embed_unique(short_texts(int(sys.argv[3])), "document")
print("finished", flush=True)
"""


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return tiny_sentence_transformer(tmp_path_factory.mktemp("tiny-st"))


def _kill_after_shards(model: Path, cache: Path, folder: Path, shards: int) -> list[str]:
    """Start the encode in a child process, SIGKILL it once ``shards`` shards are on disk;
    returns the lines it printed."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "OMP_NUM_THREADS": "1"}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(model), str(cache), str(N), str(SHARD), str(BATCH)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    deadline = time.monotonic() + 600
    while len(list(folder.glob("shard-*.npz"))) < shards:
        assert child.poll() is None, "the child stopped before the kill"
        assert time.monotonic() < deadline, "no shards written in 10 minutes"
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    out, _ = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    return out.split()


def test_sigkill_loses_at_most_the_shard_in_flight_and_rerun_encodes_the_rest(tiny_model, tmp_path):
    cache = tmp_path / "cache"
    enc = SentenceTransformerEncoder(model=str(tiny_model), batch_size=BATCH)
    fingerprint = enc.fingerprint("document")
    folder = cache / "embeddings" / fingerprint
    printed = _kill_after_shards(tiny_model, cache, folder, shards=3)
    assert "finished" not in printed
    encoded_before_kill = sum(int(x) for x in printed)

    store = EmbeddingStore(cache, fingerprint)
    kept = len(store)
    assert not store._unreadable  # every shard-*.npz on disk is whole (temporaries have other names)
    shard_files = sorted(folder.glob("shard-*.npz"))
    assert kept == SHARD * len(shard_files) and len(shard_files) >= 3  # only whole shards
    assert 0 <= encoded_before_kill - kept <= SHARD  # lost: at most the shard being filled

    texts = short_texts(N)
    not_kept = store.missing([text_key(t, "document") for t in texts])  # before the rerun adds shards
    assert len(not_kept) == N - kept
    embedder = Embedder(enc, cache_dir=cache, shard_size=SHARD)
    vectors, inverse = embedder.embed_unique(texts, "document")
    assert embedder.stats["encoded"] == N - kept and embedder.stats["from_disk"] == kept
    assert len(EmbeddingStore(cache, fingerprint)) == N

    # stored and freshly encoded vectors equal sentence-transformers' own encode
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(tiny_model), device="cpu")
    old = sorted(set(range(N)) - set(not_kept))[:: max(1, kept // 300)]
    new = not_kept[:: max(1, len(not_kept) // 300)]
    for rows in (old, new):
        expected = model.encode([texts[i] for i in rows], batch_size=64, convert_to_numpy=True)
        np.testing.assert_allclose(vectors[inverse[rows]], expected, atol=1e-5)

    again = Embedder(SentenceTransformerEncoder(model=str(tiny_model), batch_size=BATCH), cache_dir=cache)
    again.embed_unique(texts, "document")
    assert again.stats["encoded"] == 0 and again.stats["from_disk"] == N
