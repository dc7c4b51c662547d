"""scripts/assemble_gguf.py: a GGUF published in parts is rebuilt byte for byte and verified.

The real parts (Qwen2.5-Coder-1.5B, 1.1 GB in 22 packages) are not a test dependency: a small GGUF
file written here with the ``gguf`` package's own writer (a named model with one tensor) is cut
into parts, packed the way the published packages are (wheels holding ``PKG/data/partNN.bin``, or
installed package folders), and the script must give back the original file, whose SHA-256 is
computed independently (hashlib) and whose name is the one written.
"""

from __future__ import annotations

import hashlib
import importlib.util
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NAME = "Tiny Parts Test Model"


def _script():
    spec = importlib.util.spec_from_file_location("assemble_gguf", ROOT / "scripts" / "assemble_gguf.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def gguf(tmp_path_factory) -> Path:
    import numpy as np
    from gguf import GGUFWriter

    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    writer = GGUFWriter(str(path), "llama")
    writer.add_name(NAME)
    writer.add_tensor("weights", np.arange(20_000, dtype=np.float32).reshape(100, 200))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _cut(data: bytes, parts: int) -> list[bytes]:
    step = -(-len(data) // parts)
    return [data[i : i + step] for i in range(0, len(data), step)]


def _wheels(folder: Path, pieces: list[bytes], prefix: str) -> Path:
    folder.mkdir()
    for i, piece in enumerate(pieces, start=1):
        with zipfile.ZipFile(folder / f"{prefix}{i}-0.2.0-py3-none-any.whl", "w") as zf:
            zf.writestr(f"{prefix}{i}/__init__.py", "")
            zf.writestr(f"{prefix}{i}/data/part{i:02d}.bin", piece)
    return folder


def _args(data: bytes, prefix: str, count: int) -> list[str]:
    return ["--prefix", prefix, "--count", str(count), "--size", str(len(data)), "--sha256", hashlib.sha256(data).hexdigest(), "--name", NAME]


def test_from_wheels_rebuilds_the_file_and_checks_it(tmp_path, gguf):
    mod = _script()
    data = gguf.read_bytes()
    wheels = _wheels(tmp_path / "wheels", _cut(data, 3), "fakemodel_part")
    out = tmp_path / "model.gguf"
    assert mod.main([str(out), "--wheels", str(wheels), *_args(data, "fakemodel_part", 3)]) == 0
    assert out.read_bytes() == data
    assert not (tmp_path / "model.gguf.partial").exists()
    # an existing file is checked again, not rewritten
    assert mod.main([str(out), *_args(data, "fakemodel_part", 3)]) == 0


def test_from_installed_packages(tmp_path, gguf, monkeypatch):
    mod = _script()
    data = gguf.read_bytes()
    for i, piece in enumerate(_cut(data, 4), start=1):
        pkg = tmp_path / "site" / f"fakeinst_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(piece)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    out = tmp_path / "model.gguf"
    assert mod.main([str(out), *_args(data, "fakeinst_part", 4)]) == 0
    assert hashlib.sha256(out.read_bytes()).hexdigest() == hashlib.sha256(data).hexdigest()


def test_parts_in_the_wrong_order_are_refused_and_leave_no_model(tmp_path, gguf, capsys):
    mod = _script()
    data = gguf.read_bytes()
    pieces = _cut(data, 3)
    wheels = _wheels(tmp_path / "wheels", [pieces[1], pieces[0], pieces[2]], "swapped_part")
    out = tmp_path / "model.gguf"
    assert mod.main([str(out), "--wheels", str(wheels), *_args(data, "swapped_part", 3)]) == 1
    assert not out.exists()
    err = capsys.readouterr().err
    assert "SHA-256" in err and "not a readable GGUF file" in err


def test_a_missing_part_is_named(tmp_path, gguf):
    mod = _script()
    data = gguf.read_bytes()
    wheels = _wheels(tmp_path / "wheels", _cut(data, 3)[:2], "short_part")
    with pytest.raises(SystemExit, match=r"short_part3-\*\.whl"):
        mod.main([str(tmp_path / "m.gguf"), "--wheels", str(wheels), *_args(data, "short_part", 3)])
