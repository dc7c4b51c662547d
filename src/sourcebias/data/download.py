"""Fetching a known dataset (``sourcebias download NAME``): resumable, verified, unpacked, checked.

Each archive is downloaded into ``<file>.part`` and resumed from where it stopped with an HTTP
``Range`` request (a server that ignores the range sends the whole file again, which is then
written from the start). A finished archive is checked against the checksums known for it (MD5
and/or SHA-256; a mismatch removes the file and stops, naming both sums), unpacked, and the
unpacked folder is read as a dataset (its layout, queries and qrels found) before it is marked
complete. Where a checksum is not published, that is said in the result rather than skipped
silently.

Without network (or when the host cannot be reached) the error names every URL and the exact
file to place it at; run the same command again and it verifies and unpacks what it finds.

Written with urllib (the standard library) rather than a download library: the project needs
only ranged GETs, and nothing else here needs an HTTP client.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sourcebias.core.errors import ConfigError, DataError
from sourcebias.data.registry import KNOWN, MARKER, KnownDataset, RemoteFile, is_complete

CHUNK = 1 << 20


class DownloadUnavailable(ConfigError):
    """The file could not be fetched (no network, host unreachable, HTTP error): the message says
    what to download by hand and where to put it."""


def file_digests(path: Path) -> dict[str, str]:
    """MD5 and SHA-256 of a file."""
    md5, sha = hashlib.md5(usedforsecurity=False), hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            md5.update(block)
            sha.update(block)
    return {"md5": md5.hexdigest(), "sha256": sha.hexdigest()}


def verify(path: Path, remote: RemoteFile) -> dict[str, Any]:
    """Check ``path`` against the sums known for ``remote``; a mismatch deletes it and raises
    :class:`DataError` naming both sums. Returns the sums and which ones were checked."""
    got = file_digests(path)
    checked = []
    for algo in ("sha256", "md5"):
        want = getattr(remote, algo)
        if want is None:
            continue
        if got[algo] != want.lower():
            path.unlink()
            raise DataError(path, f"{algo.upper()} {got[algo]} differs from the expected {want} ({remote.url}); the file was removed, download it again")
        checked.append(algo)
    return {**got, "verified": checked, "unverified": [a for a in ("sha256", "md5") if a not in checked]}


def fetch(remote: RemoteFile, dest: Path, *, timeout: float = 30.0, emit: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Download ``remote`` to ``dest`` (resuming ``dest.part``) and verify it; a ``dest`` that is
    already there is only verified. Returns :func:`verify`'s record.

    Raises:
        DownloadUnavailable: the host could not be reached or answered with an error.
        DataError: the file does not match its known checksum (it is removed).
    """
    emit = emit or (lambda _m: None)
    dest = Path(dest)
    if not dest.is_file():
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = dest.with_name(dest.name + ".part")
        _download(remote, part, timeout, emit)
        part.replace(dest)
    return verify(dest, remote)


def _download(remote: RemoteFile, part: Path, timeout: float, emit: Callable[[str], None]) -> None:
    import http.client
    import urllib.error
    import urllib.request

    offset = part.stat().st_size if part.is_file() else 0
    headers = {"User-Agent": "sourcebias", **({"Range": f"bytes={offset}-"} if offset else {})}
    try:
        with urllib.request.urlopen(urllib.request.Request(remote.url, headers=headers), timeout=timeout) as resp:
            mode = "ab" if offset and resp.status == 206 else "wb"
            emit(f"{'resuming' if mode == 'ab' else 'downloading'} {remote.url}" + (f" from byte {offset:,}" if mode == "ab" else ""))
            expected = _expected_size(resp, offset if mode == "ab" else 0)
            with part.open(mode) as fh:
                for block in iter(lambda: resp.read(CHUNK), b""):
                    fh.write(block)
        if expected is not None and part.stat().st_size < expected:  # http.client returns a short body without an error
            raise ConnectionError(f"the connection closed after {part.stat().st_size:,} of {expected:,} bytes")
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:  # the range starts at the end: the part file is whole
            return
        raise DownloadUnavailable(f"{remote.url} answered HTTP {exc.code} ({exc.reason}). {by_hand([remote], part.parent)}") from None
    except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
        kept = part.stat().st_size if part.is_file() else 0
        resume = f" {kept:,} bytes are kept in {part}; run the command again to resume." if kept else ""
        raise DownloadUnavailable(
            f"could not download {remote.url} ({type(exc).__name__}: {str(exc)[:200]}).{resume} {by_hand([remote], part.parent)}"
        ) from None


def _expected_size(resp: Any, offset: int) -> int | None:
    """The whole file's size from ``Content-Range`` (``bytes a-b/total``) or ``offset`` plus
    ``Content-Length``; ``None`` when the server does not say."""
    total = (resp.headers.get("Content-Range") or "").rpartition("/")[2]
    if total.isdigit():
        return int(total)
    length = resp.headers.get("Content-Length")
    return offset + int(length) if length and length.isdigit() else None


def by_hand(files: list[RemoteFile], folder: Path) -> str:
    """What to do without network: each URL, with the file to save it as."""
    what = "; ".join(f"{f.url} -> {Path(folder) / f.name}" + (f" (MD5 {f.md5})" if f.md5 else "") for f in files)
    return f"Without network here, download on another machine: {what}; then run the same command again (it verifies and unpacks the file)."


def download_dataset(
    dataset: str | KnownDataset, to: str | Path | None = None, *, timeout: float = 30.0, emit: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Fetch a known dataset into ``to/<name>`` (default: the dataset cache) and check it.

    Args:
        dataset: A registered name (see ``sourcebias datasets``) or a :class:`KnownDataset`.
        to: The folder to put it in (``to/<name>/``); default :func:`~sourcebias.data.registry.datasets_dir`.
        timeout: Seconds without data before a download is abandoned.
        emit: Receives progress lines.

    Returns:
        The record also written to ``<folder>/.sourcebias-download.json``: the folder, each
        archive's URL and sums (which were verified, which are not published), the layout,
        sources and splits found.

    Raises:
        ConfigError: an unknown name, or a built-in dataset (nothing to download).
        DownloadUnavailable: no network: the message names each URL and where to put it.
        DataError: a checksum mismatch, or an archive that does not hold a dataset.
    """
    entry = dataset if isinstance(dataset, KnownDataset) else KNOWN.get(dataset)
    if entry is None:
        raise ConfigError(f"unknown dataset '{dataset}'; known: {', '.join(KNOWN)}")
    if entry.builtin:
        raise ConfigError(f"'{entry.name}' ships with sourcebias (at {entry.builtin_path()}); there is nothing to download")
    folder = entry.cached_path(to)
    if is_complete(folder):
        return _already_there(entry, folder)
    archives = []
    for remote in entry.files:
        record = fetch(remote, folder.parent / remote.name, timeout=timeout, emit=emit)
        archives.append({"url": remote.url, "file": remote.name, "checksums_from": remote.checksums_from, **record})
    for remote in entry.files:
        unpack(folder.parent / remote.name, folder)
    info = {
        "name": entry.name,
        "folder": str(folder),
        "archives": archives,
        "downloaded": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **check_dataset(folder),
    }
    (folder / MARKER).write_text(json.dumps(info, indent=2), encoding="utf-8")
    for remote in entry.files:
        (folder.parent / remote.name).unlink()
    return info


def _already_there(entry: KnownDataset, folder: Path) -> dict[str, Any]:
    """The record of an earlier download of ``entry`` into ``folder``, the dataset checked again
    (``already``: True; the archives verified then, as its marker file records them)."""
    try:
        recorded = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(folder / MARKER, f"unreadable record of an earlier download ({exc}); remove {folder} and download again") from None
    return {**recorded, "name": entry.name, "folder": str(folder), "archives": recorded.get("archives", []), **check_dataset(folder), "already": True}


def unpack(archive: Path, folder: Path) -> None:
    """Unpack a zip archive into ``folder``; an archive holding one top folder (``nfcorpus/...``)
    gives that folder's contents."""
    staging = folder.with_name(f".{folder.name}.unpacking")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        with zipfile.ZipFile(archive) as z:
            z.extractall(staging)  # zipfile refuses absolute paths and ".." (it strips them)
    except zipfile.BadZipFile as exc:
        archive.unlink()
        raise DataError(archive, f"not a zip archive ({exc}); the file was removed, download it again") from None
    root = staging
    entries = [p for p in staging.iterdir() if p.name != "__MACOSX"]
    if len(entries) == 1 and entries[0].is_dir() and not (staging / "corpus").exists():
        root = entries[0]
    folder.mkdir(parents=True, exist_ok=True)
    for p in root.iterdir():
        if p.name != "__MACOSX":
            target = folder / p.name
            if target.is_dir():
                shutil.rmtree(target)
            shutil.move(str(p), target)
    shutil.rmtree(staging, ignore_errors=True)


def check_dataset(folder: Path) -> dict[str, Any]:
    """What can be checked of an unpacked dataset without reading every record: its layout and
    sources (:func:`~sourcebias.data.dataset.detect_layout`), its queries file and its splits."""
    from sourcebias.data.dataset import detect_layout

    layout = detect_layout(folder)
    if not layout.queries_file.is_file():
        raise DataError(folder, "the archive holds no queries.jsonl (or .jsonl.gz)")
    splits = layout.splits()
    if not splits:
        raise DataError(folder, "the archive holds no qrels/<split>.tsv")
    return {"layout": layout.layout, "sources": list(layout.source_files), "splits": splits}
