"""The test suite keeps its sourcebias cache in a temporary folder of its own, never under the
home folder (tests/conftest.py sets SOURCEBIAS_CACHE for the session and its subprocesses)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from sourcebias.core.cache import default_cache_dir


def _outside_home(path: Path) -> bool:
    tmp = Path(tempfile.gettempdir()).resolve()
    return path.resolve().is_relative_to(tmp) and not path.resolve().is_relative_to((Path.home() / ".cache").resolve())


def test_the_default_cache_is_a_temporary_folder():
    assert os.environ["SOURCEBIAS_CACHE"] == str(default_cache_dir())
    assert default_cache_dir().is_dir() and _outside_home(default_cache_dir())
    assert default_cache_dir().name.startswith("sourcebias-test-cache-")


def test_a_subprocess_uses_the_same_cache():
    code = "from sourcebias.core.cache import default_cache_dir; print(default_cache_dir())"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert Path(proc.stdout.strip()) == default_cache_dir()


def test_every_default_cache_path_of_the_library_goes_through_default_cache_dir():
    """The home folder's cache is named in one place only (core/cache.py); every other default
    reads default_cache_dir(), which the session variable redirects."""
    src = Path(__file__).resolve().parents[2] / "src" / "sourcebias"
    naming_home = [
        p.relative_to(src).as_posix()
        for p in src.rglob("*.py")
        if '".cache"' in p.read_text(encoding="utf-8") or "Path.home()" in p.read_text(encoding="utf-8")
    ]
    assert naming_home == ["core/cache.py"]
