"""Benchmark: dense retrieval at MS MARCO's size on CPU: exact search over a million vectors, an
approximate FAISS index beside it, and streaming encode throughput with the projection to 1.08M.

Why: Cocktail's MS MARCO mixes 1,084,406 passages; every dense measurement so far ran on a few
thousand. Each part runs in a fresh child process (wall, CPU = user + system, peak RSS =
``ru_maxrss``), against the plain library doing the same work; the load average is printed beside
every figure (the development machine is shared).

* ``search``: N random unit vectors (384 dimensions, seeded), Q queries, top 100. ``ours``: the
  blocked exact search of :mod:`sourcebias.retrieval.dense` (``exact_blocks``: 256 queries x 65,536
  vectors at a time) ranked by :class:`~sourcebias.retrieval.RunBuilder` (partial sorts and the tie
  rule); ``numpy``: one Q x N score matrix and ``argpartition`` + ``argsort`` per query (no tie
  rule); ``faiss-flat``: ``IndexFlatIP`` (exact); ``faiss-hnsw``: ``IndexHNSWFlat`` (M=32,
  efSearch=256), build and search timed, its recall@100 against exact (``recall_at_k``).
* ``encode``: the first T texts of a corpus folder (``make_scale_corpus.py`` output) encoded by
  all-MiniLM-L6-v2 through the streaming embedding store (shards of 2,048) with each backend
  (``torch``: sentence-transformers on PyTorch; ``openvino-bf16``, the fastest CPU backend of
  docs/guides/fast-encoding.md), texts/s and peak RSS, and the linear projection to 1,084,406;
  with ``--hnsw-queries Q``, FAISS's HNSW (as above) over these real embeddings, with its
  recall@100 against exact search on the corpus's first Q queries.

    python benchmarks/bench_dense_scale.py search --n 1000000 --queries 200
    python benchmarks/bench_dense_scale.py encode --corpus /tmp/scale/s100000 --texts 100000 --threads 2 --hnsw-queries 1000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MSMARCO = 1_084_406
DIM = 384
DEPTH = 100
BACKENDS = {"torch": "minilm", "openvino-bf16": "minilm,backend=openvino,quantize=bf16"}


def unit_vectors(n: int, seed: int):
    import numpy as np

    rng = np.random.default_rng(seed)
    out = np.empty((n, DIM), dtype=np.float32)
    for s in range(0, n, 65536):  # in blocks: no float64 copy of the whole matrix
        block = rng.standard_normal((min(65536, n - s), DIM), dtype=np.float32)
        out[s : s + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def search_child(mode: str, n: int, queries: int) -> dict:
    import numpy as np

    docs, q = unit_vectors(n, 0), unit_vectors(queries, 1)
    t = time.perf_counter()
    info: dict = {}
    if mode == "ours":
        from sourcebias.data import Corpus
        from sourcebias.retrieval import RunBuilder
        from sourcebias.retrieval.dense import exact_blocks

        corpus = Corpus([f"d{i}" for i in range(n)], ["human"] * n, [""] * n, [""] * n)
        t = time.perf_counter()
        builder = RunBuilder(corpus, DEPTH)
        for block in exact_blocks(docs, q, [f"q{i}" for i in range(queries)]):
            builder.add(block)
        builder.build("x", [f"q{i}" for i in range(queries)])
    elif mode == "numpy":
        scores = q @ docs.T
        for row in scores:
            top = np.argpartition(-row, DEPTH)[:DEPTH]
            top[np.argsort(-row[top])]
    else:
        import faiss

        index = faiss.IndexFlatIP(DIM) if mode == "faiss-flat" else faiss.IndexHNSWFlat(DIM, 32, faiss.METRIC_INNER_PRODUCT)
        if mode == "faiss-hnsw":
            index.hnsw.efSearch = 256
        index.add(docs)
        info["build_s"] = time.perf_counter() - t
        _, ix = index.search(q, DEPTH)
        if mode == "faiss-hnsw":
            from sourcebias.retrieval.dense import recall_at_k

            wall = time.perf_counter() - t
            info["recall_at_100"] = recall_at_k(docs, q, ix, DEPTH)
            return {"wall_s": wall, **info}
    return {"wall_s": time.perf_counter() - t, **info}


def encode_child(backend: str, corpus: Path, texts: int, hnsw_queries: int = 0) -> dict:
    from sourcebias.data import load_dataset
    from sourcebias.retrieval import build_retriever

    ds = load_dataset(corpus, split=None)
    all_texts = ds.corpus.retrieval_texts()[:texts]
    with tempfile.TemporaryDirectory() as cache:
        retriever = build_retriever(BACKENDS[backend], cache_dir=cache)
        retriever.embed(["warm-up text"], "document")
        t = time.perf_counter()
        vectors, _ = retriever.embed_unique(all_texts, "document")
        wall = time.perf_counter() - t
        shards = len(list(Path(cache).glob("embeddings/*/shard-*.npz")))
        queries = [ds.queries[q] for q in list(ds.queries)[:hnsw_queries]]
        q_vecs = retriever.embed(queries, "query") if queries else None
    n = len(set(all_texts))
    out = {"wall_s": wall, "texts": n, "texts_per_s": n / wall, "projected_1_08M_h": MSMARCO / (n / wall) / 3600, "shards": shards}
    if q_vecs is not None:  # FAISS's HNSW on these real embeddings, its recall@100 against exact search
        out["hnsw"] = hnsw_on(vectors, q_vecs)
    return out


def hnsw_on(vectors, q_vecs) -> dict:
    """Build ``IndexHNSWFlat`` (M=32, efSearch=256, as ``faiss-hnsw`` of the search part) over
    ``vectors``, search ``q_vecs``, and give build and search time and recall@100 against exact."""
    import faiss
    import numpy as np

    from sourcebias.retrieval.dense import recall_at_k

    vectors, q_vecs = np.ascontiguousarray(vectors, dtype=np.float32), np.ascontiguousarray(q_vecs, dtype=np.float32)
    t = time.perf_counter()
    index = faiss.IndexHNSWFlat(vectors.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efSearch = 256
    index.add(vectors)
    build = time.perf_counter() - t
    t = time.perf_counter()
    _, ix = index.search(q_vecs, DEPTH)
    search = time.perf_counter() - t
    return {"vectors": len(vectors), "queries": len(q_vecs), "build_s": build, "search_s": search, "recall_at_100": recall_at_k(vectors, q_vecs, ix, DEPTH)}


def measured(args: list[str]) -> dict:
    """Run this script's child mode in a fresh process; its result with its CPU time and peak RSS
    (the child's own ``getrusage``: the whole process, set-up included)."""
    out = subprocess.run([sys.executable, __file__, "child", *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["load"] = os.getloadavg()[0]
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", choices=["search", "encode", "child"])
    ap.add_argument("rest", nargs="*")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--modes", nargs="+", default=["ours", "faiss-flat", "faiss-hnsw", "numpy"])
    ap.add_argument("--corpus", type=Path)
    ap.add_argument("--texts", type=int, default=100_000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    ap.add_argument("--hnsw-queries", type=int, default=0, help="encode: also index the vectors with FAISS's HNSW and give its recall@100 on this many queries")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    if a.part == "child":
        kind, *rest = a.rest
        res = search_child(rest[0], int(rest[1]), int(rest[2])) if kind == "search" else encode_child(rest[0], Path(rest[1]), int(rest[2]), int(rest[3]))
        ru = resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({**res, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_rss_mb": ru.ru_maxrss / 1024}))
        return
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    rows = {}
    if a.part == "search":
        for mode in a.modes:
            rows[mode] = measured(["search", mode, str(a.n), str(a.queries)])
            print(f"{mode:11s} {json.dumps(rows[mode])}", flush=True)
        base_name = next((m for m in ("numpy", "faiss-flat", "ours") if m in rows), a.modes[0])
        base = rows[base_name]
        print(f"\n{a.n:,} vectors x {a.queries} queries, top {DEPTH}, {a.threads} thread(s); ratio to {base_name}")
        for mode, r in rows.items():
            extra = f"  recall@100 {r['recall_at_100']:.4f}, build {r['build_s']:.1f} s" if "recall_at_100" in r else ""
            print(f"{mode:11s} wall {r['wall_s']:7.1f} s ({r['wall_s'] / base['wall_s']:.2f}x)  peak {r['peak_rss_mb']:7.0f} MB  load {r['load']:.1f}{extra}")
    else:
        for backend in a.backends:
            rows[backend] = measured(["encode", backend, str(a.corpus), str(a.texts), str(a.hnsw_queries)])
            r = rows[backend]
            print(
                f"{backend:14s} {r['texts']:,} texts {r['texts_per_s']:7.1f}/s ({r['texts_per_s'] / rows[a.backends[0]]['texts_per_s']:.2f}x)  1.08M projected {r['projected_1_08M_h']:.1f} h  load {r['load']:.1f}",
                flush=True,
            )
            if "hnsw" in r:
                h = r["hnsw"]
                print(
                    f"{'':14s} HNSW over these {h['vectors']:,} vectors: recall@100 {h['recall_at_100']:.4f} on {h['queries']:,} queries; build {h['build_s']:.1f} s, search {h['search_s']:.1f} s",
                    flush=True,
                )
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
