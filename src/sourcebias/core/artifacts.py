"""Output folders: one run's results per folder, checked before work, written atomically, loadable.

Every sourcebias command that writes results writes them into an :class:`OutputFolder`:

* **Checked before any work** (:meth:`OutputFolder.claim`): a path that is a file, a parent that
  cannot be written, a folder that holds another run's results (unless ``overwrite``) or files
  that sourcebias did not write (never deleted, even with ``overwrite``) stop at once with a
  :class:`~sourcebias.core.errors.OutputError`.
* **One writer.** Claiming takes an exclusive lock (``fcntl.flock`` on ``.<name>.lock`` beside the
  folder; the operating system releases it when the process ends, so a killed run leaves no stale
  lock). A second process claiming the same folder is refused. The lock file is deleted when the
  command ends (while still locked); a claimer that locked a file since deleted or replaced (it
  checks the inode at the path after locking) starts over on the file now there, so two
  processes never both hold the folder.
* **Atomic.** Files are written into a staging folder beside the target; :meth:`commit` writes
  ``manifest.json`` listing every file (bytes and SHA-256), then renames the staging folder into
  place (the previous folder, with ``overwrite``, is moved aside first and deleted after). A crash
  never leaves a half-written folder that looks complete, and results of two runs never mix.
* **Loadable.** ``manifest.json`` names the artifact's ``kind``; :func:`load_artifact` dispatches
  to the loader registered for it (e.g. ``evaluate`` -> :meth:`EvaluationResult.load`).
* **A rerun of the same command replaces its own results.** A command that states its *run
  identity* (:func:`command_run`: the command, its settings, a fingerprint of its input data and
  the package versions; the command line states it for every command) records it in the
  manifest; a later claim with the same identity and kind replaces that folder without
  ``overwrite`` (the same results would be written again), while any other run is still refused,
  naming what differs. Messages name the options as the caller spells them: ``--overwrite`` on
  the command line, ``overwrite=True`` in Python.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TextIO

from sourcebias.core.atomic import atomic_write_json
from sourcebias.core.errors import OutputError
from sourcebias.core.manifest import file_digest

MANIFEST = "manifest.json"
#: the manifest key of the run identity (see :func:`command_run`)
RUN_IDENTITY = "run_identity"

# The identity of the command now running, and how its caller spells options ("cli": --overwrite,
# "python": overwrite=True). Context variables, so that every command's claim sees them without
# each library function passing them on.
_IDENTITY: ContextVar[_LazyIdentity | None] = ContextVar("sourcebias_run_identity", default=None)
_INTERFACE: ContextVar[str] = ContextVar("sourcebias_interface", default="python")
_SPELLING = {
    "cli": {"overwrite": "--overwrite", "output": "--output folder", "example": "--output results"},
    "python": {"overwrite": "overwrite=True", "output": "output folder", "example": "output='results'"},
}


def spelling(option: str) -> str:
    """How the caller writes ``option`` (``"overwrite"``, ``"output"``): on the command line or in Python.

    Args:
        option: ``"overwrite"``, ``"output"`` or ``"example"`` (an example output folder).

    Returns:
        ``--overwrite`` under :func:`command_run` with ``interface="cli"``, ``overwrite=True`` otherwise.
    """
    return _SPELLING[_INTERFACE.get()][option]


def identity_digest(identity: Mapping[str, Any]) -> str:
    """The SHA-256 of a run identity's canonical JSON (sorted keys; ``sha256`` itself left out).

    Args:
        identity: The identity (plain JSON values).

    Returns:
        The hex digest.
    """
    body = {k: v for k, v in identity.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode("utf-8")).hexdigest()


class _LazyIdentity:
    """A run identity computed on first use: only a command that claims a folder fingerprints its inputs."""

    def __init__(self, make: Callable[[], Mapping[str, Any]]):
        self._make = make
        self._value: dict[str, Any] | None = None

    def get(self) -> dict[str, Any]:
        if self._value is None:
            identity = self._make()
            self._value = {**identity, "sha256": identity_digest(identity)}
        return self._value


def _identity() -> dict[str, Any] | None:
    lazy = _IDENTITY.get()
    return None if lazy is None else lazy.get()


@contextlib.contextmanager
def command_run(identity: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None, *, interface: str = "python") -> Iterator[None]:
    """Within this block, claims know the running command's identity and its caller's spelling.

    Args:
        identity: What makes two runs the same (plain JSON: command, settings, data fingerprint,
            versions), a function that computes it (called on the first claim only), or ``None``.
            A claim with the identity that a folder's manifest records replaces that folder
            without ``overwrite``.
        interface: ``"cli"`` or ``"python"``: how messages name options (:func:`spelling`).

    Yields:
        Nothing.
    """
    if interface not in _SPELLING:
        raise ValueError(f"interface must be one of {sorted(_SPELLING)}, not {interface!r}")
    if identity is None:
        lazy = None
    else:
        lazy = _LazyIdentity(identity if callable(identity) else lambda: identity)
    tokens = (_IDENTITY.set(lazy), _INTERFACE.set(interface))
    try:
        yield
    finally:
        _IDENTITY.reset(tokens[0])
        _INTERFACE.reset(tokens[1])


def same_run(manifest: Mapping[str, Any], kind: str) -> bool:
    """Whether ``manifest`` records the run identity of the command now running, and ``kind``.

    Args:
        manifest: A manifest, as :func:`read_manifest` returns it.
        kind: The kind of artifact the command writes.

    Returns:
        True when both the identity's digest and the kind are equal.
    """
    ident = _identity()
    recorded = manifest.get(RUN_IDENTITY)
    return ident is not None and isinstance(recorded, dict) and recorded.get("sha256") == ident["sha256"] and artifact_kind(dict(manifest)) == kind


def _differences(manifest: Mapping[str, Any]) -> str:
    """What differs between the recorded run and this one (``""`` when unknown)."""
    ident, recorded = _identity(), manifest.get(RUN_IDENTITY)
    if ident is None:
        return ""
    if not isinstance(recorded, dict):
        return "; its manifest records no run identity to compare with (written through the Python API or by an older sourcebias)"
    mine, theirs = ident.get("parameters") or {}, recorded.get("parameters") or {}
    out = [k.replace("_", "-") for k in sorted(set(mine) | set(theirs)) if mine.get(k) != theirs.get(k)]
    out += [what for what in ("command", "inputs", "versions") if ident.get(what) != recorded.get(what)]
    names = {"inputs": "the input data", "versions": "the package versions", "command": "the command"}
    return "; it differs in " + ", ".join(names.get(x, x) for x in out) if out else ""


#: kind -> "module:attribute" of a callable ``load(path) -> object`` (imported on use, so that
#: this module does not depend on the capabilities that register here).
# Loaders by the kind a manifest names, as "module:attr" strings (imported only when used, so this
# core module depends on no layer above it). Every analysis writes an AnalysisResult folder.
_LOADERS: dict[str, str] = {
    "evaluate": "sourcebias.evaluation.results:EvaluationResult.load",
    "analyze:*": "sourcebias.analysis.result:AnalysisResult.load",
    "power": "sourcebias.power.result:PowerResult.load",
    "audit": "sourcebias.audit.result:AuditResult.load",
    "simulate": "sourcebias.simulate.result:SimulationResult.load",
    "cite": "sourcebias.citations.result:CitationResult.load",
}


def register_loader(kind: str, target: str) -> None:
    """Make :func:`load_artifact` load folders of ``kind`` with ``target``.

    Args:
        kind: The kind a manifest names (``"evaluate"``, ``"power"``, ...).
        target: ``"module:attribute"`` of a callable ``load(path) -> object``, imported on first use.
    """
    _LOADERS[kind] = target


def has_loader(kind: str) -> bool:
    """Whether :func:`load_artifact` reads folders of ``kind`` (a loader is registered for it)."""
    return kind in _LOADERS or (kind.startswith("analyze:") and "analyze:*" in _LOADERS)


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The ``manifest.json`` of a sourcebias output folder, checked.

    Args:
        path: The output folder.

    Returns:
        The manifest.

    Raises:
        OutputError: ``path`` is not a folder, holds no manifest (not a sourcebias folder, or an
            unfinished one), or its manifest is not valid JSON or not sourcebias'.
    """
    path = Path(path)
    mpath = path / MANIFEST
    if not path.is_dir():
        raise OutputError(f"{path}: not a folder (an output folder of sourcebias holds {MANIFEST})")
    if not mpath.is_file():
        raise OutputError(f"{path}: no {MANIFEST}; not a sourcebias output folder (or an unfinished one)")
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise OutputError(f"{mpath}: not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("tool") != "sourcebias":
        raise OutputError(f"{mpath}: not a sourcebias manifest")
    return manifest


def artifact_kind(manifest: dict[str, Any]) -> str:
    """The kind of artifact a manifest describes.

    Args:
        manifest: A manifest, as :func:`read_manifest` returns it.

    Returns:
        Its ``kind`` (older manifests: its ``command``), or ``""`` when it names none.
    """
    return str(manifest.get("kind") or manifest.get("command") or "")


def json_plain(obj: Any) -> Any:
    """``obj`` made JSON-safe for an artifact.

    NaN becomes None (JSON has no NaN), tuples lists, numpy scalars Python numbers, keys strings.

    Args:
        obj: Any value built of dicts, lists, tuples, numbers and strings.

    Returns:
        The same value in plain JSON types.
    """
    import math

    if isinstance(obj, float):
        return None if math.isnan(obj) else obj
    if isinstance(obj, dict):
        return {str(k): json_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_plain(v) for v in obj]
    if hasattr(obj, "item"):  # numpy scalars
        return json_plain(obj.item())
    return obj


def read_artifact_json(folder: str | Path, filename: str, *, kind: str, version: int, what: str) -> dict[str, Any]:
    """The main JSON file of an output folder (e.g. ``power.json``), checked.

    Args:
        folder: The output folder.
        filename: The file's name in it.
        kind: The ``kind`` the file must record.
        version: The ``format`` version the file must record.
        what: What the file holds, for error messages (``"power analysis"``).

    Returns:
        The file's JSON object.

    Raises:
        OutputError: The folder is no sourcebias folder.
        DataError: The folder holds no such file, or the file is not valid JSON, or of another kind
            or format version.
    """
    from sourcebias.core.errors import DataError

    path = Path(folder) / filename
    if not path.is_file():
        read_manifest(folder)  # a clear error when this is no sourcebias folder at all
        raise DataError(path, f"missing: this output folder holds no {what}")
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DataError(path, f"not valid JSON ({exc})") from None
    if not isinstance(body, dict) or body.get("format") != version or body.get("kind") != kind:
        raise DataError(path, f"not a {what} of format {version}")
    return body


def load_artifact(path: str | Path) -> Any:
    """Load any sourcebias output folder by the kind its manifest names.

    Args:
        path: The output folder (of ``evaluate``, ``analyze``, ``power``, ``audit``, ``simulate``, or
            a kind registered with :func:`register_loader`).

    Returns:
        The loaded result (e.g. an :class:`~sourcebias.evaluation.results.EvaluationResult`).

    Raises:
        OutputError: ``path`` is no sourcebias output folder, or no loader knows its kind.
    """
    from importlib import import_module

    manifest = read_manifest(path)
    kind = artifact_kind(manifest)
    target = _LOADERS.get(kind) or (_LOADERS.get("analyze:*") if kind.startswith("analyze:") else None)
    if target is None:
        raise OutputError(f"{path}: no loader for artifacts of kind '{kind}' (known: {', '.join(sorted(_LOADERS))})")
    module, _, attr = target.partition(":")
    obj: Any = import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj(path)


def list_files(folder: str | Path) -> dict[str, dict[str, Any]]:
    """Every file under ``folder`` but its own manifest, with its size and digest.

    Args:
        folder: The folder to list.

    Returns:
        ``{relative path: {"bytes": size, "sha256": digest}}``, in sorted path order.
    """
    folder = Path(folder)
    out: dict[str, dict[str, Any]] = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.relative_to(folder).as_posix() != MANIFEST:
            out[p.relative_to(folder).as_posix()] = {"bytes": p.stat().st_size, "sha256": file_digest(p)}
    return out


def _is_sourcebias_output(folder: Path) -> bool:
    try:
        read_manifest(folder)
        return True
    except OutputError:
        return False


class OutputFolder:
    """A claimed output folder; see the module docstring.

    Use :meth:`claim`, write under :attr:`staging`, then :meth:`commit` (or :meth:`abort`).
    """

    def __init__(self, path: Path, kind: str, lock_fh: Any, staging: Path, replaces: bool, identity: dict[str, Any] | None = None):
        self.path = path
        self.identity = identity
        self.kind = kind
        self.staging = staging
        self.replaces = replaces
        #: whether the results replaced are those of this same run (:func:`same_run`)
        self.same_run = replaces and identity is not None and same_run(read_manifest(path), kind)
        self._lock_fh = lock_fh
        self._done = False

    # -- claiming ------------------------------------------------------------------------------
    @classmethod
    def claim(cls, path: str | Path, *, kind: str, overwrite: bool = False) -> OutputFolder:
        """Check ``path`` and lock it for this process.

        In this order: the path itself (resolved, so ``out/..`` is the folder it names; the current
        folder and its ancestors are refused, since the commit replaces the folder as a whole); the
        lock; recovery of a killed writer's leftovers (an interrupted ``--overwrite`` puts the old
        results back); then the folder's contents, now that no other writer can change them.

        Args:
            path: The output folder to write.
            kind: The kind of artifact it will hold (written into its manifest).
            overwrite: Replace an earlier run's results at ``path`` (without it, only the results of
                this same command, see :func:`command_run`, are replaced).

        Returns:
            The claimed folder, with an empty :attr:`staging` folder to write into.

        Raises:
            OutputError: ``path`` cannot be an output folder, another process holds it, or it holds
                files (another run's results without ``overwrite``, or files sourcebias did not write).
        """
        path = _checked_target(Path(path).expanduser().resolve())
        parent = path.parent
        lock_fh = hold_lock(parent / f".{path.name}.lock", path)
        try:
            _recover(path)
            replaces = _check_contents(path, overwrite, kind)
            staging = parent / f".{path.name}.staging-{os.getpid()}"
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir()
        except BaseException:
            release_lock(lock_fh)
            raise
        return cls(path, kind, lock_fh, staging, replaces, _identity())

    # -- finishing -----------------------------------------------------------------------------
    def files(self) -> dict[str, dict[str, Any]]:
        """Every file under the staging folder, with its size and digest.

        Returns:
            ``{relative path: {"bytes": size, "sha256": digest}}``.
        """
        return list_files(self.staging)

    def commit(self, manifest: dict[str, Any]) -> Path:
        """Write ``manifest.json`` and move the staging folder into place.

        Args:
            manifest: The manifest; ``kind`` and the list of every file (``outputs.files``) are added.

        Returns:
            The final path of the folder.

        Raises:
            RuntimeError: The folder was already committed or aborted.
            OutputError: Files that sourcebias did not write appeared at the target meanwhile (the
                results are kept in the staging folder).
        """
        if self._done:
            raise RuntimeError("output folder already committed or aborted")
        manifest = dict(manifest)
        manifest["kind"] = self.kind
        if self.identity is not None:
            manifest[RUN_IDENTITY] = self.identity
        outputs = dict(manifest.get("outputs") or {})
        outputs["files"] = self.files()
        manifest["outputs"] = outputs
        atomic_write_json(self.staging / MANIFEST, manifest)
        old = self.path.parent / f".{self.path.name}.old-{os.getpid()}"
        try:
            if self.path.exists():
                if any(self.path.iterdir()) and not _is_sourcebias_output(self.path):
                    raise OutputError(f"{self.path}: files appeared that sourcebias did not write; results kept in {self.staging}")
                os.replace(self.path, old)
            os.replace(self.staging, self.path)
            shutil.rmtree(old, ignore_errors=True)
        finally:
            self._release()
        return self.path

    def abort(self) -> None:
        """Remove the staging folder and release the lock (the target is left as it was)."""
        if self._done:
            return
        shutil.rmtree(self.staging, ignore_errors=True)
        self._release()

    def _release(self) -> None:
        self._done = True
        release_lock(self._lock_fh)

    def __enter__(self) -> OutputFolder:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if not self._done:
            self.abort()

    def __repr__(self) -> str:
        return f"OutputFolder({str(self.path)!r}, kind={self.kind!r})"


def hold_lock(lock_path: Path, target: Path) -> TextIO:
    """Hold an exclusive lock on ``lock_path`` (created if need be).

    A file locked after its holder deleted it (the holder unlinks it before unlocking) is no longer
    the lock: start over on the file now at the path.

    Args:
        lock_path: The lock file.
        target: The folder it guards (named in the error).

    Returns:
        The open lock file, holding this process' id; give it to :func:`release_lock`.

    Raises:
        OutputError: Another process holds the lock (its id is named).
    """
    import fcntl

    while True:
        fh = lock_path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                fh.close()
                raise
            fh.seek(0)
            holder = fh.read().strip() or "?"
            fh.close()
            raise OutputError(
                f"{target}: another sourcebias process (pid {holder}) is writing this folder; wait for it or choose another {spelling('output')}"
            ) from None
        if _same_file(fh, lock_path):
            break
        fh.close()  # deleted (or replaced) by its last holder between our open and our lock
    fh.seek(0)
    fh.truncate()
    fh.write(str(os.getpid()))
    fh.flush()
    return fh


def _same_file(fh: IO[Any], path: Path) -> bool:
    """Whether the open file ``fh`` is the file now at ``path``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    own = os.fstat(fh.fileno())
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


def release_lock(fh: IO[Any]) -> None:
    """Delete the lock file, then release the lock.

    The deletion happens while no other process can hold it, and a process that opened the file
    before is told by :func:`hold_lock` to retry.

    Args:
        fh: The lock file :func:`hold_lock` returned.
    """
    import fcntl

    if _same_file(fh, Path(fh.name)):
        with contextlib.suppress(OSError):
            os.unlink(fh.name)
    with contextlib.suppress(OSError):
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    fh.close()


def _checked_target(path: Path) -> Path:
    """``path`` (absolute) if it can be an output folder.

    Not a file, not the current folder or one of its ancestors, in a parent folder that exists (created
    if need be) and is writable.
    """
    if path.exists() and not path.is_dir():
        raise OutputError(f"{path}: exists and is a file; the output must be a folder (choose another path)")
    cwd = Path.cwd().resolve()
    if path == cwd or path in cwd.parents:
        raise OutputError(
            f"{path}: is the current folder (or holds it); sourcebias replaces its output folder as a whole when it "
            f"finishes, so give a folder of its own, e.g. {spelling('example')}"
        )
    parent = path.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{path}: cannot create the parent folder {parent} ({exc.strerror or exc})") from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{path}: the folder {parent} is not writable")
    return path


def _check_contents(path: Path, overwrite: bool, kind: str) -> bool:
    """With the lock held: may ``path`` be written? Returns whether it replaces earlier results.

    It does with ``overwrite``, or when they are those of this same run (:func:`same_run`).
    """
    if not path.is_dir():
        return False
    if not os.access(path, os.W_OK | os.X_OK):
        raise OutputError(f"{path}: not writable")
    entries = list(path.iterdir())
    if not entries:
        return False
    if not _is_sourcebias_output(path):
        raise OutputError(
            f"{path}: is not empty and holds no sourcebias manifest ({len(entries)} entries, e.g. {entries[0].name}); "
            f"sourcebias writes only into a new or empty folder, or replaces its own results with {spelling('overwrite')}"
        )
    m = read_manifest(path)
    if not overwrite and not same_run(m, kind):
        raise OutputError(
            f"{path}: holds the results of another run (`sourcebias {artifact_kind(m)}`, {m.get('created_utc', '?')}{_differences(m)}); "
            f"pass {spelling('overwrite')} to replace them, or choose another {spelling('output')}"
        )
    return True


def _recover(path: Path) -> None:
    """With the lock held, leftovers of a killed writer are stale.

    Remove staging folders; if a kill fell between moving the old results aside and moving the new ones
    in, put the old back.
    """
    parent = path.parent
    for p in parent.glob(f".{path.name}.staging-*"):
        shutil.rmtree(p, ignore_errors=True)
    olds = sorted(parent.glob(f".{path.name}.old-*"))
    for p in olds:
        if not path.exists() and _is_sourcebias_output(p):
            os.replace(p, path)
        else:
            shutil.rmtree(p, ignore_errors=True)
