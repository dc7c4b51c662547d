"""Helpers of the generation tests: a small copy of nq-utd, reading a twin back."""

from __future__ import annotations

import gzip
import json
from pathlib import Path


def _lines(path: Path) -> list[str]:
    """The lines of ``path``, or of its ``.gz`` (the NQ-UTD that ships with sourcebias)."""
    if path.is_file():
        return path.read_text(encoding="utf-8").splitlines()
    with gzip.open(path.with_name(path.name + ".gz"), "rt", encoding="utf-8") as fh:
        return fh.read().splitlines()


def copy_nq_subset(nq_utd: Path, dest: Path, n: int, *, shortest: bool = True) -> Path:
    """Copy ``n`` human documents of nq-utd that are relevant to some query (the shortest ones
    when ``shortest``, else the first in file order), with their queries and qrels, into
    ``dest`` in Cocktail's layout (plain JSON Lines, from plain or gzip-compressed files). The LLM
    twin of the original data is not copied."""
    docs = [json.loads(line) for line in _lines(nq_utd / "corpus" / "human.jsonl") if line.strip()]
    rows = [line.split("\t") for line in _lines(nq_utd / "qrels" / "test.tsv")[1:] if line.strip()]
    relevant = {d for _, d, g in rows if int(g) > 0}
    pool = [d for d in docs if d["_id"] in relevant]
    if shortest:
        pool.sort(key=lambda d: len(d["text"].split()))
    chosen = pool[:n]
    ids = {d["_id"] for d in chosen}
    keep_rows = [r for r in rows if r[1] in ids]
    qids = {q for q, _, _ in keep_rows}
    (dest / "corpus").mkdir(parents=True, exist_ok=True)
    (dest / "qrels").mkdir(parents=True, exist_ok=True)
    order = {d["_id"]: i for i, d in enumerate(docs)}
    with (dest / "corpus" / "human.jsonl").open("w", encoding="utf-8") as fh:
        for d in sorted(chosen, key=lambda d: order[d["_id"]]):
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")
    (dest / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join("\t".join(r) + "\n" for r in keep_rows), encoding="utf-8")
    with (dest / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for line in _lines(nq_utd / "queries.jsonl"):
            if line.strip() and json.loads(line)["_id"] in qids:
                fh.write(line + "\n")
    return dest


def read_twin(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def human_ids(dataset: Path) -> list[str]:
    return [json.loads(line)["_id"] for line in (dataset / "corpus" / "human.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
