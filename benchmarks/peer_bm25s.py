"""bm25s + pytrec_eval doing `sourcebias evaluate -r bm25`'s work, as a competent user runs them.

The work: load the human and LLM corpora (Cocktail layout), the queries and a split's qrels; BM25
(k1=1.2, b=0.75, Lucene's formula, English stop words, Porter stemming); index and rank the mixed
corpus and each sole corpus, top 1000 per query; NDCG/MAP/Recall/P at 1, 3, 5, 10 with trec_eval
for the human, LLM and all targets on the mixed corpus and each sole corpus's own target; the
TREC runs and a metrics table written.

At its best: the mixed corpus is tokenized once (one ``bm25s.tokenization.Tokenizer``, one
vocabulary) and each sole corpus is a slice of its token ids; the queries are tokenized once
against that vocabulary; ``--backend numba`` compiles bm25s's retrieval (a few seconds, once per
process) and then ranks faster than ``numpy``; one thread; the runs come from bm25s's sorted
top-k (documents that share no term with the query, score 0, are left out, as a search engine
does); trec_eval is given each ranking's top 10 (every measure is at a cut-off of at most 10, so
it reads nothing deeper: the same values, a hundredth of the input). The scores use each
document's exact length (bm25s), where Lucene rounds lengths to one byte, and bm25s's own
tokenizer (one regular expression, no one-letter words), so the metrics are close to Lucene's,
not equal.

Prints one JSON line: the phases' wall and CPU seconds (load, analyse, index, rank, score,
write). Run by ``bench_bm25_scale.py``::

    python benchmarks/peer_bm25s.py DATASET SPLIT OUT [--backend numba]
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from contextlib import contextmanager
from pathlib import Path

SOURCES = ("human", "llama-2-7b-chat-tmp0.2")
SPEC = {"ndcg_cut.1,3,5,10", "map_cut.1,3,5,10", "recall.1,3,5,10", "P.1,3,5,10"}
DEPTH = 1000
SCORED_DEPTH = 10  # the largest cut-off of SPEC
PHASES: dict[str, list[float]] = {}


@contextmanager
def phase(name: str):
    """Adds the block's wall and CPU seconds to ``PHASES[name]``."""
    w, c = time.perf_counter(), time.process_time()
    yield
    acc = PHASES.setdefault(name, [0.0, 0.0])
    acc[0] += time.perf_counter() - w
    acc[1] += time.process_time() - c


def load(root: Path, split: str):
    docs = {s: [json.loads(line) for line in (root / "corpus" / f"{s}.jsonl").open(encoding="utf-8")] for s in SOURCES}
    queries = {(q := json.loads(line))["_id"]: q["text"] for line in (root / "queries.jsonl").open(encoding="utf-8")}
    qrels: dict[str, dict[str, int]] = {}
    with (root / "qrels" / f"{split}.tsv").open(encoding="utf-8") as fh:
        for row in list(csv.reader(fh, delimiter="\t"))[1:]:
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    qids = [q for q, d in qrels.items() if any(g > 0 for g in d.values())]
    return docs, queries, qrels, qids


def score_setting(side: str, setting: str, targets: list[str], run: dict, qrels: dict, qids: list[str]) -> list[tuple]:
    """metrics.csv's rows of one setting: every measure's mean over ``qids`` for each target (a
    copy of another source counts 0 for a source's target, as the protocol masks it)."""
    import numpy as np
    import pytrec_eval

    sources = [*SOURCES] if setting == "mixed" else [setting]
    rows = []
    for t in targets:
        tq = {q: {f"{s}/{d}": (g if t in ("all", s) else 0) for d, g in qrels[q].items() for s in sources} for q in qids}
        res = pytrec_eval.RelevanceEvaluator(tq, SPEC).evaluate(run)
        for m in sorted(next(iter(res.values()))):
            rows.append((side, setting, t, m, float(np.mean([res[q][m] if q in res else 0.0 for q in qids]))))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", type=Path)
    ap.add_argument("split")
    ap.add_argument("out", type=Path)
    ap.add_argument("--backend", choices=("numpy", "numba"), default="numpy")
    args = ap.parse_args()
    start = time.process_time()
    with phase("load"):
        import bm25s
        import numpy as np
        import pytrec_eval  # noqa: F401 (imported here so that the load phase holds the imports)
        import Stemmer

        docs, queries, qrels, qids = load(args.dataset, args.split)
        names = np.array([f"{s}/{d['_id']}" for s in SOURCES for d in docs[s]], dtype=object)
        texts = [((d.get("title") or "") + " " + d["text"]) for s in SOURCES for d in docs[s]]
        del docs
    with phase("analyse"):
        tokenizer = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=Stemmer.Stemmer("porter"))
        corpus = tokenizer.tokenize(texts, return_as="tuple", show_progress=False)
        query_ids = tokenizer.tokenize([queries[q] for q in qids], update_vocab=False, return_as="ids", show_progress=False)
        del texts
    n_human = int(np.sum([n.startswith(SOURCES[0] + "/") for n in names]))
    settings = [
        ("mixed", slice(0, len(names)), [*SOURCES, "all"]),
        (SOURCES[0], slice(0, n_human), [SOURCES[0]]),
        (SOURCES[1], slice(n_human, len(names)), [SOURCES[1]]),
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for setting, part, targets in settings:
        with phase("index"):
            model = bm25s.BM25(k1=1.2, b=0.75, method="lucene", backend=args.backend)
            model.index(bm25s.tokenization.Tokenized(corpus.ids[part], corpus.vocab), show_progress=False)
        with phase("rank"):
            ids, scores = model.retrieve(query_ids, k=min(DEPTH, part.stop - part.start), show_progress=False, n_threads=1 if args.backend == "numba" else 0)
            del model
        with phase("score"):
            part_names = names[part]
            run = {}
            for i, q in enumerate(qids):
                keep = scores[i] > 0  # sorted: the matching documents first
                run[q] = dict(zip(part_names[ids[i][keep]].tolist(), scores[i][keep].tolist()))
            # every measure is at a cut-off of at most 10: trec_eval reads the top 10 and the qrels
            top = {q: dict(list(ranked.items())[:SCORED_DEPTH]) for q, ranked in run.items()}
            rows += score_setting("bm25s", setting, targets, top, qrels, qids)
        with phase("write"), (args.out / f"bm25s.{setting}.trec").open("w", encoding="utf-8") as fh:
            for q, ranked in run.items():
                fh.writelines(f"{q} Q0 {d} {r} {s:.6g} bm25s\n" for r, (d, s) in enumerate(ranked.items(), 1))
    with phase("write"), (args.out / "metrics.csv").open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([("retriever", "corpus", "target", "metric", "value"), *rows])
    PHASES["total_cpu_in_process"] = [0.0, time.process_time() - start]
    print(json.dumps({"phases": PHASES, "backend": args.backend, "bm25s": bm25s.__version__, "queries": len(qids), "documents": len(names)}))


if __name__ == "__main__":
    main()
