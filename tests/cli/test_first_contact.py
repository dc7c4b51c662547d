"""What a newcomer's first hour broke: gzipped data, files silently left out, Ctrl-C, messages,
`inspect` without a split."""

from __future__ import annotations

import csv
import gzip
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import LLAMA, write_jsonl

from sourcebias.cli.main import main
from sourcebias.core.errors import ConfigError, DataError


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err.replace("\n", "")


def gzip_copy(src: Path, dest: Path) -> None:
    with src.open("rb") as fin, gzip.open(dest, "wb") as fout:
        shutil.copyfileobj(fin, fout)


def metrics(out: Path) -> dict:
    with (out / "metrics.csv").open() as fh:
        return {(r["retriever"], r["corpus"], r["target"], r["metric"]): r["value"] for r in csv.DictReader(fh)}


def test_a_gzipped_copy_of_nq_utd_gives_identical_metrics(nq_utd, tmp_path, capsys):
    gz = tmp_path / "nq-utd-gz"
    (gz / "corpus").mkdir(parents=True)
    (gz / "qrels").mkdir()
    for name in ("human.jsonl", f"{LLAMA}.jsonl"):
        gzip_copy(nq_utd / "corpus" / name, gz / "corpus" / f"{name}.gz")
    gzip_copy(nq_utd / "queries.jsonl", gz / "queries.jsonl.gz")
    gzip_copy(nq_utd / "qrels" / "test.tsv", gz / "qrels" / "test.tsv.gz")
    args = ["-r", "bm25", "-r", "tfidf", "--k", "1", "3", "5"]
    assert run_cli(["evaluate", str(nq_utd), *args, "-o", str(tmp_path / "plain")], capsys)[0] in (0, None)
    code, out, err = run_cli(["evaluate", str(gz), *args, "-o", str(tmp_path / "gz")], capsys)
    assert code in (0, None), err
    assert f"human 800, {LLAMA} 800 documents" in " ".join(out.split())
    plain, packed = metrics(tmp_path / "plain"), metrics(tmp_path / "gz")
    assert plain == packed and len(plain) > 100


@pytest.mark.parametrize("name", ["llm.json", "llm.jsonl.zip", "notes.txt"])
def test_a_file_that_is_not_a_source_is_an_error_not_ignored(cocktail_dir, capsys, name):
    (cocktail_dir / "corpus" / name).write_text('{"_id": "d1", "text": "x"}\n')
    code, _, err = run_cli(["evaluate", str(cocktail_dir), "--k", "1"], capsys)
    assert code == 2 and f"corpus/{name}: not a corpus file" in err and "--allow-unknown-files" in err
    code, out, err = run_cli(["evaluate", str(cocktail_dir), "--k", "1", "--allow-unknown-files"], capsys)
    assert code in (0, None) and f"{name}: ignored, not a corpus file" in "".join(out.split("\n"))


def test_a_twin_stored_gzipped_is_a_source(cocktail_dir, capsys):
    src = cocktail_dir / "corpus" / "llm.jsonl"
    gzip_copy(src, cocktail_dir / "corpus" / "llm2.jsonl.gz")
    code, out, _ = run_cli(["inspect", str(cocktail_dir)], capsys)
    assert code in (0, None) and "source llm2" in out and "valid" in out
    # the same source as plain and gzipped is ambiguous
    gzip_copy(src, cocktail_dir / "corpus" / "llm.jsonl.gz")
    code, _, err = run_cli(["inspect", str(cocktail_dir)], capsys)
    assert code == 2 and "both llm.jsonl and llm.jsonl.gz exist" in err


def test_inspect_without_split_validates_everything(cocktail_dir, capsys):
    code, out, _ = run_cli(["inspect", str(cocktail_dir)], capsys)
    assert code in (0, None)
    assert "human: 3 documents" in out and "llm: 3 documents" in out and "test: 2 queries judged" in out and "valid" in out
    # a broken line in a corpus that --split was not needed to find
    with (cocktail_dir / "corpus" / "llm.jsonl").open("a") as fh:
        fh.write('{"_id": "d4", "text": \n')
    code, out, err = run_cli(["inspect", str(cocktail_dir)], capsys)
    assert code == 2 and "llm.jsonl:4: malformed JSON" in err and "valid" not in out


def test_byte_order_mark_and_null_text(cocktail_dir, capsys):
    path = cocktail_dir / "corpus" / "human.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # a UTF-8 BOM (Windows editors add one)
    assert run_cli(["inspect", str(cocktail_dir)], capsys)[0] in (0, None)
    write_jsonl(cocktail_dir / "queries.jsonl", [{"_id": "q1", "text": None}, {"_id": "q2", "text": "dogs"}])
    code, _, err = run_cli(["inspect", str(cocktail_dir)], capsys)
    assert code == 2 and "queries.jsonl:1: field 'text' is null (expected a string)" in err


def test_not_utf8_is_located(cocktail_dir):
    from sourcebias.data import load_dataset

    path = cocktail_dir / "corpus" / "llm.jsonl"
    path.write_bytes(path.read_bytes() + b'{"_id": "d9", "text": "caf\xe9"}\n')
    with pytest.raises(DataError, match=r"llm.jsonl:4: not UTF-8 text"):
        load_dataset(cocktail_dir)


def test_messages(capsys):
    code, _, err = run_cli(["evaluate", "x", "--k", "1", "abc"], capsys)
    assert code == 2 and "'abc'" in err and "--k" in err
    code, out, _ = run_cli(["--version"], capsys)
    from sourcebias import __version__

    assert code in (0, None) and out.strip() == f"sourcebias {__version__}"
    code, out, _ = run_cli(["evaluate", "--help"], capsys)
    assert "<list" not in out and "{DATASET}" not in out and "<path>" not in out and "DATASET" in out
    from sourcebias.evaluation import Measure, parse_measure

    with pytest.raises(ConfigError, match="unknown measure 'MRR'; known: NDCG, MAP, Recall, P, Share, NDSR"):
        Measure("MRR", 10)
    with pytest.raises(ConfigError, match="unknown measure"):
        parse_measure("MRR@10")


def test_offline_error_recommends_the_current_cli(monkeypatch, tmp_path):
    from sourcebias.core.errors import ModelUnavailableError
    from sourcebias.models import hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    hub.hub_reachable.cache_clear()
    try:
        with pytest.raises(ModelUnavailableError, match=r"`hf download org/some-model --local-dir DIR`"):
            hub.resolve_model("org/some-model")
    finally:
        hub.hub_reachable.cache_clear()


def nq_subset(nq_utd: Path, dest: Path, n: int) -> Path:
    """The first ``n`` nq-utd documents of each source, with the qrels and queries that touch them."""
    import json

    (dest / "corpus").mkdir(parents=True)
    (dest / "qrels").mkdir()
    ids = set()
    for name in ("human.jsonl", f"{LLAMA}.jsonl"):
        lines = (nq_utd / "corpus" / name).read_text(encoding="utf-8").splitlines()
        if not ids:
            ids = {json.loads(x)["_id"] for x in lines[:n]}
        (dest / "corpus" / name).write_text("\n".join(x for x in lines if json.loads(x)["_id"] in ids) + "\n", encoding="utf-8")
    rows = [r.split("\t") for r in (nq_utd / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    keep = [r for r in rows if r[1] in ids]
    (dest / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join("\t".join(r) + "\n" for r in keep))
    qids = {r[0] for r in keep}
    qlines = [x for x in (nq_utd / "queries.jsonl").read_text().splitlines() if json.loads(x)["_id"] in qids]
    (dest / "queries.jsonl").write_text("\n".join(qlines) + "\n")
    return dest


@pytest.mark.slow
def test_ctrl_c_during_encoding_keeps_finished_batches(nq_utd, tmp_path):
    """A real SIGINT while all-MiniLM-L6-v2 encodes: the message, exit 130, and the rerun reads
    back every batch that had been encoded (written when the interruption arrived).

    The signal is sent once the progress lines on stderr count more encoded documents than the
    shards on disk hold (batches finished since the last timed flush), so the interruption has
    batches to write whatever the machine's speed; a fixed sleep did not under load."""
    import re
    import threading

    import numpy as np

    data = nq_subset(nq_utd, tmp_path / "data", 300)  # 600 texts: about 6 s of encoding on an idle machine, 2x the flush interval
    cache = tmp_path / "cache"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SOURCEBIAS_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    # a timed flush every 3 s (not 10): the first shard, which the test waits for, comes sooner, and
    # a batch of 8 takes less than that even on a loaded machine (else every batch would be flushed
    # at once); a plain progress line every 0.1 s: how many documents are encoded, as the test goes
    env |= {"SOURCEBIAS_FLUSH_SECONDS": "3", "SOURCEBIAS_PROGRESS_SECONDS": "0.1"}
    cmd = [sys.executable, "-m", "sourcebias", "evaluate", str(data), "-r", "minilm", "--k", "1", "--batch-size", "8", "--no-sole"]
    # a shell's background job (CI started with `... &`) inherits SIGINT ignored, and Python then
    # keeps it ignored; the child gets the default disposition, as in a terminal
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)
    )
    err_lines: list[str] = []
    reader = threading.Thread(target=lambda: err_lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    encoded = re.compile(r"encoding [\d,]+ docs: ([\d,]+)/")

    def on_disk() -> int:
        return sum(int(np.load(p)["keys"].shape[0]) for p in (cache / "embeddings").glob("*/shard-*.npz"))

    def reported() -> int:
        counts = [int(m.group(1).replace(",", "")) for line in list(err_lines) if (m := encoded.search(line))]
        return max(counts, default=0)

    deadline = time.monotonic() + 240
    first = 0
    while time.monotonic() < deadline and not first and proc.poll() is None:
        time.sleep(0.05)
        first = on_disk()  # the first timed flush
    flushed, seen = first, 0
    while time.monotonic() < deadline and proc.poll() is None:
        seen, flushed = reported(), on_disk()
        if seen > flushed:  # batches encoded since the last flush, not yet on disk
            break
        time.sleep(0.02)
    assert proc.poll() is None, f"the command ended before the interruption (status {proc.returncode}): {''.join(err_lines)[-3000:]}"
    proc.send_signal(signal.SIGINT)
    # wait, not communicate(): communicate would read stderr too, racing the reader thread for the
    # last lines (the "Interrupted." message); the interrupted run prints far less than a pipe holds
    proc.wait(timeout=120)
    reader.join(timeout=10)
    err = "".join(err_lines)
    assert proc.returncode == 130, err
    assert "Interrupted." in err and "rerun the same command to resume" in err and "Traceback" not in err, err[-3000:]
    saved = on_disk()
    # the batches finished after the last timed flush were written at the interruption (shards hold 2,048)
    assert 0 < first <= flushed < seen <= saved < 600
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    line = next(x for x in rerun.stdout.splitlines() if "texts encoded" in x)
    read_back = int(line.split(" read from the embedding cache")[0].rsplit(",", 1)[-1].strip().replace(",", ""))
    assert read_back == saved


def test_no_help_text_is_eaten_as_rich_markup():
    """--help renders with rich markup: an unescaped "[x]" in a help text is taken as a style
    tag and vanishes ("[[datasets]]" printed as "[]"). Every help text must render to itself."""
    import typer
    from rich.text import Text

    from sourcebias.cli.main import app

    def walk(cmd, path=()):
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():  # typer's groups are not click.Group
            yield from walk(sub, path + (name,))

    checked = 0
    for path, cmd in walk(typer.main.get_command(app)):
        texts = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
        for text in texts:
            if "[" in text:
                checked += 1
                assert Text.from_markup(text).plain == text.replace("\\[", "["), f"sourcebias {' '.join(path)}: {text!r}"
    assert checked >= 3


def test_flush_interval_from_the_environment(monkeypatch):
    from sourcebias.core.cache import default_flush_seconds
    from sourcebias.core.errors import ConfigError

    monkeypatch.delenv("SOURCEBIAS_FLUSH_SECONDS", raising=False)
    assert default_flush_seconds() == 10.0
    monkeypatch.setenv("SOURCEBIAS_FLUSH_SECONDS", "2.5")
    assert default_flush_seconds() == 2.5
    for bad in ("0", "-1", "soon"):
        monkeypatch.setenv("SOURCEBIAS_FLUSH_SECONDS", bad)
        with pytest.raises(ConfigError, match=f"SOURCEBIAS_FLUSH_SECONDS='{bad}'"):
            default_flush_seconds()
