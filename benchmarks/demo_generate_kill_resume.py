"""Demo: build a SmolLM2 twin of 50 nq-utd documents, kill -9 the run mid-way, resume, evaluate.

Steps (each printed with its timing):
1. copy the first ``--docs`` nq-utd human documents that are relevant to some query, with their
   queries and qrels, into ``--workdir`` (Cocktail layout; the original Llama-2 twin is not copied);
2. start ``sourcebias generate WORKDIR --name smollm2-tmp0.2 --model smollm2 --limit DOCS``;
3. ``kill -9`` it once ``--kill-after`` documents are written;
4. run the same command again until it finishes;
5. check the twin: every document exactly once; print the statuses;
6. ``sourcebias evaluate WORKDIR --retriever bm25 --k 1 3 5``.

Usage:
    python benchmarks/demo_generate_kill_resume.py [--docs 50] [--kill-after 20] [--workdir /tmp/sb-demo] [-- extra generate options]
(about 1 document per 10-60 s on 2 shared CPU cores with SmolLM2-135M).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import script_data  # noqa: E402
from generation_helpers import copy_nq_subset  # noqa: E402 (a test helper, reused here)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", type=Path, default=None, help="an nq-utd folder (default: the one that ships with sourcebias; see script_data.py)")
    ap.add_argument("--docs", type=int, default=50)
    ap.add_argument("--kill-after", type=int, default=20)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/sb-demo"))
    ap.add_argument("extra", nargs="*", help="more `sourcebias generate` options (after --)")
    args = ap.parse_args(argv)

    shutil.rmtree(args.workdir, ignore_errors=True)
    ds = copy_nq_subset(args.dataset or script_data.folder("nq-utd"), args.workdir / "nq", args.docs, shortest=False)
    name = "smollm2-tmp0.2"
    out = ds / "corpus" / f"{name}.jsonl"
    cmd = [sys.executable, "-m", "sourcebias", "generate", str(ds), "--name", name, "--model", "smollm2", "--limit", str(args.docs), *args.extra]
    print("$", " ".join(cmd[2:]))

    t0 = time.perf_counter()
    child = subprocess.Popen(cmd, env={**os.environ, "COLUMNS": "120"})
    while child.poll() is None and (not out.exists() or sum(1 for _ in out.open()) < args.kill_after):
        time.sleep(0.2)
    if child.poll() is None:
        child.send_signal(signal.SIGKILL)
        child.wait()
    killed_at = sum(1 for _ in out.open()) if out.exists() else 0
    print(f"\n[demo] kill -9 after {killed_at} documents ({time.perf_counter() - t0:.0f} s)\n")

    t1 = time.perf_counter()
    rc = subprocess.call(cmd, env={**os.environ, "COLUMNS": "120"})
    print(f"\n[demo] resumed run exited with {rc} after {time.perf_counter() - t1:.0f} s")

    records = [json.loads(line) for line in out.open(encoding="utf-8")]
    ids = [r["_id"] for r in records]
    human = [json.loads(line)["_id"] for line in (ds / "corpus" / "human.jsonl").open(encoding="utf-8")]
    statuses = collections.Counter(r["metadata"]["rewrite_status"] for r in records)
    print(
        f"[demo] twin: {len(ids)} lines, {len(set(ids))} unique ids, missing {len(set(human) - set(ids))}, duplicates {len(ids) - len(set(ids))}; statuses {dict(statuses)}"
    )
    assert sorted(ids) == sorted(human), "every document exactly once"

    evaluate = [sys.executable, "-m", "sourcebias", "evaluate", str(ds), "--retriever", "bm25", "--k", "1", "3", "5", "--output", str(args.workdir / "eval")]
    print("$", " ".join(evaluate[2:]))
    subprocess.check_call(evaluate, env={**os.environ, "COLUMNS": "120"})


if __name__ == "__main__":
    script_data.run(main)
