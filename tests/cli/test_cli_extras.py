"""A core install (no extras) meets one line naming the extra to install, before any work.

The core install is simulated in a subprocess: an import hook refuses the extras' modules, and
``importlib.util.find_spec`` answers that they are absent (nothing is uninstalled)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sourcebias.core.extras import EXTRAS

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]

CORE_INSTALL = textwrap.dedent(
    """
    import importlib.abc, importlib.util, sys
    BLOCKED = set(sys.argv[1].split(","))

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named '{name}'", name=name)
            return None

    sys.meta_path.insert(0, Blocker())
    _find_spec = importlib.util.find_spec
    importlib.util.find_spec = lambda name, package=None: None if name.partition(".")[0] in BLOCKED else _find_spec(name, package)
    from sourcebias.cli.main import main
    main(sys.argv[2:])
    """
)

#: the modules of every extra (pyproject.toml): what a core install lacks
NO_EXTRAS = "torch,sentence_transformers,transformers,accelerate,gguf,faiss,datasets,httpx,matplotlib,linearmodels,sacrebleu,PIL,ray,ranx,ir_measures,ir_datasets,pyterrier,mteb,onnx,onnxruntime,openvino,nncf"


def core_cli(args, cwd, blocked=NO_EXTRAS):
    proc = subprocess.run([sys.executable, "-c", CORE_INSTALL, blocked, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize(
    ("spec", "missing"),
    [
        ("minilm", "PyTorch, sentence-transformers, transformers missing"),
        ("st:MODEL_DIR", "PyTorch, sentence-transformers, transformers missing"),
        ("bm25>>ce:cross-encoder/ms-marco-MiniLM-L-6-v2", "PyTorch, sentence-transformers, transformers missing"),
        ("bm25>>cut:5>>lm:smollm2", "PyTorch, transformers, gguf missing"),
    ],
)
def test_a_neural_retriever_on_a_core_install_names_the_extra(cocktail_dir, tmp_path, spec, missing):
    tmp_path = tmp_path / "work"
    (tmp_path / "MODEL_DIR").mkdir(parents=True)
    code, out, err = core_cli(["evaluate", cocktail_dir, "-r", spec, "--k", "1", "-o", "out"], tmp_path)
    assert code == 2, err
    assert (
        err.strip()
        == f"Error: --retriever {spec.split('>>')[-1]} needs the 'neural' extra, which is not installed ({missing}): pip install 'sourcebias[neural]'"
    )
    assert "Traceback" not in err and "documents" not in out  # refused before the dataset was read
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("spec", "extra", "missing"),
    [("bm25>>rankgpt:smollm2,depth=5", "neural", "PyTorch, transformers"), ("bm25>>llm-yesno:openai:m@http://localhost:1/v1", "generate", "httpx")],
)
def test_an_llm_stage_on_a_core_install_names_the_extra_its_model_needs(cocktail_dir, tmp_path, spec, extra, missing):
    code, out, err = core_cli(["evaluate", cocktail_dir, "-r", spec, "--k", "1"], tmp_path)
    stage = spec.split(">>")[-1]
    assert (code, err.strip()) == (
        2,
        f"Error: --retriever {stage} needs the '{extra}' extra, which is not installed ({missing} missing): pip install 'sourcebias[{extra}]'",
    )
    assert "documents" not in out


@pytest.mark.parametrize(
    ("args", "blocked", "line"),
    [
        (
            ["-r", "minilm:backend=openvino"],
            "openvino",
            "--retriever minilm:backend=openvino needs the 'fast' extra, which is not installed (openvino missing)",
        ),
        (["-r", "minilm:index=faiss"], "faiss", "--retriever minilm:index=faiss needs the 'neural' extra, which is not installed (faiss missing)"),
        (["--format", "parquet"], "pyarrow", "--format parquet needs the 'analysis' extra, which is not installed (pyarrow missing)"),
    ],
)
def test_an_option_whose_extra_is_missing_names_it(cocktail_dir, tmp_path, args, blocked, line):
    code, out, err = core_cli(["evaluate", cocktail_dir, *args, "--k", "1"], tmp_path, blocked=blocked)
    assert code == 2 and line in err and "Traceback" not in err and "documents" not in out


def test_evaluate_on_a_core_install_says_why_no_figure_was_drawn(cocktail_dir, tmp_path):
    code, out, err = core_cli(["evaluate", cocktail_dir, "-r", "bm25", "--k", "1", "-o", "out"], tmp_path)
    assert code == 0, err
    said = " ".join(out.split())
    assert "figures/source_bias.png was not drawn: matplotlib is not installed (pip install 'sourcebias[analysis]')" in said
    assert (tmp_path / "out" / "result.json").is_file() and not (tmp_path / "out" / "figures" / "source_bias.png").exists()


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["power", "PILOT", "-o", "out"],
            "sourcebias power needs the 'analysis' extra, which is not installed (matplotlib missing): pip install 'sourcebias[analysis]'",
        ),
        (
            ["bench", "grid.toml", "-o", "out", "--ray"],
            "sourcebias bench needs the 'ray' extra, which is not installed (Ray missing): pip install 'sourcebias[ray]'",
        ),
        (
            ["generate", "DATA", "--name", "x", "--model", "m", "--base-url", "http://localhost:1/v1"],
            "sourcebias generate needs the 'generate' extra, which is not installed (httpx missing): pip install 'sourcebias[generate]'",
        ),
        (
            ["generate", "DATA", "--name", "x", "--model", "smollm2"],
            "sourcebias generate needs the 'neural' extra, which is not installed (PyTorch, transformers missing): pip install 'sourcebias[neural]'",
        ),
        (
            ["judge", "DATA", "--judge", "smollm2", "-o", "out"],
            "sourcebias judge needs the 'neural' extra, which is not installed (PyTorch, transformers missing): pip install 'sourcebias[neural]'",
        ),
        (
            ["judge", "DATA", "--judge", "openai:m@http://localhost:1/v1", "-o", "out"],
            "sourcebias judge needs the 'generate' extra, which is not installed (httpx missing): pip install 'sourcebias[generate]'",
        ),
        (
            ["cite", "DATA", "-r", "bm25", "--generator", "gemma3"],
            "sourcebias cite needs the 'neural' extra, which is not installed (PyTorch, transformers missing): pip install 'sourcebias[neural]'",
        ),
        (
            ["cite", "DATA", "-r", "bm25", "--generator", "openai:m@http://localhost:1/v1", "-o", "out"],
            "sourcebias cite needs the 'generate' extra, which is not installed (httpx missing): pip install 'sourcebias[generate]'",
        ),
        (
            ["cdc", "fit", "DATA", "-r", "bm25", "-o", "out"],
            "sourcebias cdc fit needs the 'neural' extra, which is not installed (PyTorch, sentence-transformers, transformers missing): pip install 'sourcebias[neural]'",
        ),
    ],
)
def test_a_command_that_needs_an_extra_is_refused_before_any_work(cocktail_dir, tmp_path, args, line):
    tmp_path = tmp_path / "work"
    (tmp_path / "PILOT").mkdir(parents=True)
    (tmp_path / "grid.toml").write_text("[grid]\nname = 'g'\n")
    args = [str(cocktail_dir) if a == "DATA" else a for a in args]
    code, _, err = core_cli(args, tmp_path)
    assert (code, err.strip()) == (2, f"Error: {line}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["PILOT", "grid.toml"]  # nothing written


def test_every_extra_of_pyproject_is_known_and_its_modules_are_its_packages():
    """EXTRAS (what is checked) against pyproject.toml (what `pip install 'sourcebias[X]'` installs)."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRAS) == set(extras) - {"all", "docs", "lint", "test"}
    distribution = {"sentence_transformers": "sentence-transformers", "ir_measures": "ir-measures"}
    for extra, modules in EXTRAS.items():
        listed = {req.split(">")[0].split("<")[0].split("=")[0].split("[")[0].strip().lower() for req in extras[extra]}
        assert {distribution.get(m, m).lower() for m in modules} <= listed, extra


def test_every_command_named_in_the_table_of_extras_exists():
    """A misspelt name in COMMAND_EXTRAS would silently check nothing."""
    import typer

    from sourcebias.cli.extras import COMMAND_EXTRAS
    from sourcebias.cli.main import app

    def walk(cmd, path=()):
        yield " ".join(path)
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, path + (name,))

    commands = set(walk(typer.main.get_command(app)))
    assert set(COMMAND_EXTRAS) <= commands, set(COMMAND_EXTRAS) - commands
    assert {c for c in commands if c.startswith("analyze ")} <= set(COMMAND_EXTRAS)
