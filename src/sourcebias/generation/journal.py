"""The rewriting job's files beside the twin, which make it resumable and safe to interrupt.

* the twin itself (``<name>.jsonl``): the ids already written (:func:`read_done_ids`, after
  removing a torn last line) are skipped by the next run;
* ``.<name>.state/``: ``settings.json`` (what the twin is made with; :func:`check_settings`
  refuses other settings), ``failed.jsonl`` (documents to retry; :func:`consolidate_failed`)
  and ``lock`` (:func:`exclusive`: one run at a time);
* ``<name>.manifest.json``: every run's parameters, counts and timings (:func:`write_run_manifest`).
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sourcebias.core.atomic import atomic_open, atomic_write_json
from sourcebias.core.errors import ConfigError, DataError
from sourcebias.core.manifest import build_manifest, describe_file
from sourcebias.data.jsonl import iter_jsonl, repair_torn_tail
from sourcebias.generation.job import RewriteSettings, RewriteTarget
from sourcebias.llmcalls.backends.base import Backend, redact_url_credentials


@contextlib.contextmanager
def exclusive(target: RewriteTarget) -> Iterator[None]:
    """Hold an exclusive lock on the twin for the run: two runs appending to one file would
    write documents twice. ``flock`` locks die with their process, so a ``kill -9`` never
    leaves a stale lock behind."""
    target.state_dir.mkdir(parents=True, exist_ok=True)
    fh = (target.state_dir / "lock").open("a+")
    try:
        try:
            import fcntl
        except ImportError:  # not POSIX (Windows): no lock
            pass
        else:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ConfigError(_busy(target)) from None
        yield
    finally:
        fh.close()


def _busy(target: RewriteTarget) -> str:
    return f"another `sourcebias generate` is writing {target.output}; wait for it to finish or stop it"


def refuse_early(target: RewriteTarget, fingerprint: dict[str, Any], *, overwrite: bool) -> None:
    """Before the backend is opened (a local model loaded, a server asked), refuse what the run
    would refuse once it holds the twin: another run writing it, or a twin made with other
    settings (unless ``overwrite``). Writes nothing; the run checks both again, holding its lock.

    Raises:
        ConfigError: as :func:`exclusive` and :func:`check_settings` do.
    """
    lock = target.state_dir / "lock"
    if lock.is_file():
        try:
            import fcntl
        except ImportError:  # not POSIX (Windows): no lock
            pass
        else:
            with lock.open("a+") as fh:
                try:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise ConfigError(_busy(target)) from None
    if not overwrite:
        _refuse_other_settings(target, fingerprint, has_output=target.output.exists() and target.output.stat().st_size > 0)


def start_over(target: RewriteTarget) -> None:
    """``--overwrite``: remove the twin, its manifest and its state (but the lock, held now)."""
    for p in (target.output, target.manifest_file):
        p.unlink(missing_ok=True)
    for p in target.state_dir.iterdir():
        if p.name != "lock":
            shutil.rmtree(p) if p.is_dir() else p.unlink()


def read_done_ids(path: Path) -> tuple[set[str], int]:
    """Repair a torn last line, then return the ids already written and the bytes removed.

    A duplicate id in the file (never produced by this job; possible if two jobs wrote the same
    file at once) is an error naming the line.
    """
    removed = repair_torn_tail(path)
    done: set[str] = set()
    if path.exists():
        for lineno, rec in iter_jsonl(path):
            doc_id = str(rec.get("_id", ""))
            if doc_id in done:
                raise DataError(path, f"document '{doc_id}' appears twice (were two generate runs writing this file at once?)", lineno)
            done.add(doc_id)
    return done, removed


def count_output(path: Path) -> tuple[Counter, int, int]:
    """The twin's records by status, their number, and how many are identical to the original."""
    counts: Counter = Counter()
    identical = 0
    n = 0
    if path.exists():
        for _, rec in iter_jsonl(path):
            n += 1
            meta = rec.get("metadata") or {}
            counts[meta.get("rewrite_status", "unknown")] += 1
            identical += bool(meta.get("identical_to_original"))
    return counts, n, identical


def read_failed(path: Path) -> set[str]:
    """The ids listed in a failure file (none when it does not exist)."""
    if not path.exists():
        return set()
    return {str(rec["_id"]) for _, rec in iter_jsonl(path) if "_id" in rec}


def check_settings(target: RewriteTarget, fingerprint: dict[str, Any], has_output: bool) -> None:
    """Refuse to resume a twin made with other settings (or not made by this job), then record
    ``fingerprint`` as the twin's settings.

    Raises:
        ConfigError: naming the settings that differ, or the file not made by ``generate``.
    """
    _refuse_other_settings(target, fingerprint, has_output)
    target.state_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(target.settings_file, fingerprint)


def _refuse_other_settings(target: RewriteTarget, fingerprint: dict[str, Any], has_output: bool) -> None:
    if target.settings_file.is_file():
        previous = json.loads(target.settings_file.read_text(encoding="utf-8"))
        if previous != fingerprint:
            keys = sorted(k for k in set(previous) | set(fingerprint) if previous.get(k) != fingerprint.get(k))
            raise ConfigError(
                f"{target.output} was made with other settings ({', '.join(keys)} differ). Use another --name, or --overwrite to start this twin again."
            )
    elif has_output:
        raise ConfigError(
            f"{target.output} exists but was not made by `sourcebias generate` (no {target.settings_file.name}); use --overwrite or another --name"
        )


def consolidate_failed(target: RewriteTarget, done: set[str]) -> int:
    """Merge this (or a killed) run's failure log into ``failed.jsonl``, dropping documents that
    are now in the output; return how many documents remain listed as failed.

    During a run failures are appended to ``failed.log.jsonl``; the list proper is rewritten
    atomically only here, so a kill at any moment leaves both files readable.
    """
    entries: dict[str, dict[str, Any]] = {}
    for path in (target.failed_file, target.failed_log):
        if path.exists():
            repair_torn_tail(path)
            for _, rec in iter_jsonl(path):
                if "_id" in rec:
                    entries[str(rec["_id"])] = rec
    keep = [e for d, e in entries.items() if d not in done]
    if keep:
        with atomic_open(target.failed_file, "w") as fh:
            for e in keep:
                fh.write(json.dumps(e, ensure_ascii=False) + "\n")
    else:
        target.failed_file.unlink(missing_ok=True)
    target.failed_log.unlink(missing_ok=True)
    return len(keep)


def write_run_manifest(target: RewriteTarget, backend: Backend, settings: RewriteSettings, selected: int, run: dict[str, Any]) -> None:
    """Write ``<name>.manifest.json`` atomically with ``run`` as the latest entry of ``runs``.

    Called when a run starts (``finished: false``) and when it ends (the entry is replaced), so
    a run killed in between stays on record as unfinished.
    """
    runs: list[dict[str, Any]] = []
    if target.manifest_file.is_file():
        try:
            runs = list(json.loads(target.manifest_file.read_text(encoding="utf-8")).get("runs", []))
        except (ValueError, AttributeError):
            runs = []
    if runs and runs[-1].get("started_utc") == run["started_utc"] and not runs[-1].get("finished"):
        runs.pop()
    runs.append(run)
    counts, n_out, identical = count_output(target.output)
    pending_failed = len(read_failed(target.failed_file))
    manifest = build_manifest(
        command="generate",
        inputs={
            "human_corpus": describe_file(target.human_file),
            "dataset": str(target.dataset_root) if target.dataset_root else None,
            "qrels_files": [str(p) for p in target.qrels_files],
        },
        parameters=settings.to_dict(),
        models={"rewriter": backend.describe()},
        timings={"last_run_s": run.get("seconds"), "all_runs_s": round(sum(r.get("seconds") or 0 for r in runs), 3)},
        outputs={
            "twin": describe_file(target.output) if target.output.exists() else None,
            "documents": n_out,
            "selected": selected,
            "status_counts": dict(counts),
            "identical_to_original": identical,
            "failed_pending": pending_failed,
            "failed_file": str(target.failed_file) if pending_failed else None,
            "complete": n_out >= selected and pending_failed == 0,
        },
        extra={"runs": runs},
    )
    manifest["argv"] = [redact_url_credentials(a) for a in manifest["argv"]]
    atomic_write_json(target.manifest_file, manifest)
