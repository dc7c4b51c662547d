"""The documentation's "Extending sourcebias" files (docs/extending.md), run exactly as printed: a new retriever, a new
re-ranker, a new measure and a new statistic, each one file plus one registration line, used from
the command line."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HUMAN_DOCS, LLM_DOCS, QRELS, QUERIES, REPO, hand_ndcg, hand_rank


def readme_files() -> dict[str, str]:
    text = (REPO / "docs" / "extending.md").read_text(encoding="utf-8")
    section = text[: text.index("## Test your extension")]
    files = {}
    for block in re.findall(r"```python\n(.*?)```", section, re.S):
        first = block.splitlines()[0]
        assert first.startswith("# ") and first.endswith(".py"), first
        files[first[2:]] = block
    return files


def test_the_docs_show_four_one_file_extensions():
    assert set(readme_files()) == {"my_retrievers.py", "my_rerankers.py", "my_measures.py", "my_statistics.py"}
    for name, code in readme_files().items():
        registrations = [line for line in code.splitlines() if line.startswith("register_")]
        assert len(registrations) == 1, name  # one registration line


def test_the_extensions_work_from_the_command_line(cocktail_dir, tmp_path):
    for name, code in readme_files().items():
        (tmp_path / name).write_text(code, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
        "SOURCEBIAS_PLUGINS": "my_retrievers,my_rerankers,my_measures,my_statistics",
    }
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "sourcebias",
        "evaluate",
        str(cocktail_dir),
        "-r",
        "overlap",
        "-r",
        "bm25>>jaccard,depth=10",
        "--metric",
        "NDCG",
        "Success",
        "--k",
        "1",
        "3",
        "--statistics",
        "relative_delta_ci,human_wins",
        "-o",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    with (out / "metrics.csv").open() as fh:
        m = {(r["retriever"], r["corpus"], r["target"], r["metric"]): float(r["value"]) for r in csv.DictReader(fh)}
    # Expected values computed here from the definitions: word overlap (first stage) over all six
    # documents, and Jaccard over the documents BM25 returned (read from the saved run); both
    # ordered by score, ties by the tie rule.
    docs = {(d["_id"], "human"): d["text"] for d in HUMAN_DOCS} | {(d["_id"], "llm"): d["text"] for d in LLM_DOCS}
    qtext = {q["_id"]: q["text"] for q in QUERIES}
    labels: dict[str, dict[str, int]] = {}
    for q, d, g in QRELS:
        labels.setdefault(q, {})[d] = g
    evaluated = [q for q in labels if any(g > 0 for g in labels[q].values())]
    candidates: dict[str, list] = {}
    for line in (out / "runs" / "bm25_jaccard_depth_10.mixed.trec").read_text().splitlines():
        q, _, docno, *_ = line.split()
        source, _, doc_id = docno.partition("/")
        candidates.setdefault(q, []).append((doc_id, source))

    def words(t):
        return set(t.lower().split())

    hand: dict[tuple[int, str], list[float]] = {}
    for k in (1, 3):
        for target in ("human", "llm", "all"):
            ov, ja = hand.setdefault((k, target), []), []
            for q in evaluated:
                qw = words(qtext[q])
                overlap = {key: len(qw & words(t)) for key, t in docs.items() if qw & words(t)}
                ov.append(hand_ndcg(hand_rank(q, overlap), labels[q], target, 2, k))
                jac = {key: len(qw & words(docs[key])) / len(qw | words(docs[key])) for key in candidates.get(q, [])}
                ja.append(hand_ndcg(hand_rank(q, jac), labels[q], target, 2, k))
            assert m[("overlap", "mixed", target, f"NDCG@{k}")] == pytest.approx(sum(ov) / len(ov)), (k, target)
            assert m[("bm25>>jaccard,depth=10", "mixed", target, f"NDCG@{k}")] == pytest.approx(sum(ja) / len(ja)), (k, target)
    # Success@k: 1 when a relevant copy (of the target) is in the top k.
    for q in evaluated:
        qw = words(qtext[q])
        overlap = {key: len(qw & words(t)) for key, t in docs.items() if qw & words(t)}
        assert any(labels[q].get(d, 0) > 0 for d, _ in hand_rank(q, overlap)[:3])
    assert m[("overlap", "mixed", "all", "Success@3")] == pytest.approx(1.0)
    # the statistic: share of queries whose human NDCG beats the LLM one, from the values above
    with (out / "statistics.csv").open() as fh:
        wins = {(r["retriever"], r["measure"]): float(r["human_wins"]) for r in csv.DictReader(fh)}
    for k in (1, 3):
        h, g = hand[(k, "human")], hand[(k, "llm")]
        assert wins[("overlap", f"NDCG@{k}")] == pytest.approx(sum(a > b for a, b in zip(h, g)) / len(h))
    assert "human wins" in (out / "summary.md").read_text() and "Human wins: share of the queries" in (out / "summary.md").read_text()
    # the manifest records the new kinds' configurations
    manifest = (out / "manifest.json").read_text()
    assert "WordOverlap" in manifest and "JaccardReranker" in manifest


def test_a_broken_plugin_is_reported_not_fatal(cocktail_dir, tmp_path):
    (tmp_path / "broken_plugin.py").write_text("raise ImportError('needs a GPU library')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "SOURCEBIAS_PLUGINS": "broken_plugin"}
    proc = subprocess.run([sys.executable, "-m", "sourcebias", "evaluate", str(cocktail_dir), "--k", "1"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and "broken_plugin" in proc.stderr and "needs a GPU library" in proc.stderr


def test_repo_is_where_the_readme_is():
    assert (Path(REPO) / "README.md").is_file()
