"""The documentation site: it builds with ``mkdocs build --strict``, and every code block on every
page runs as printed (the rules are in tests/docs_blocks.py)."""

from __future__ import annotations

import os
import subprocess
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from pathlib import Path

import pytest
from conftest import REPO
from docs_blocks import DOCS, Block, page_blocks, pages, shell_commands

CAPABILITY_PAGES = [
    "getting-started",
    "guides/measure",
    "guides/build-twin",
    "guides/explain",
    "guides/mitigate",
    "guides/benchmark",
    "guides/simulate",
    "guides/power",
    "guides/audit",
    "guides/ecosystem",
    "guides/llm-rerankers",
    "concepts/protocol",
    "concepts/statistics",
    "reproducing",
    "reference/cli",
    "reference/api",
    "extending",
    "changelog",
]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)], cwd=REPO, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_the_site_builds_strict_with_a_page_per_capability(site):
    for page in CAPABILITY_PAGES:
        assert (site / page / "index.html").is_file(), page


def test_reference_pages_are_written_from_the_registries(site):
    from sourcebias.evaluation.measures import measure_kinds
    from sourcebias.evaluation.stats import statistic_kinds
    from sourcebias.retrieval.specs import kinds

    html = {name: (site / "reference" / name / "index.html").read_text(encoding="utf-8") for name in ("cli", "measures", "statistics", "retrievers")}
    assert all(f"{name}@k" in html["measures"] for name in measure_kinds())
    assert all(name in html["statistics"] for name in statistic_kinds())
    assert all(name in html["retrievers"] for name in kinds())
    for command in ("sourcebias evaluate", "sourcebias power", "sourcebias audit", "sourcebias simulate", "sourcebias bench"):
        assert command in html["cli"], command
    assert "<!-- reference:" not in "".join(html.values())


ALL_BLOCKS = [b for p in pages() for b in page_blocks(p)]


def test_every_block_has_a_known_mode_and_reasons_are_given():
    assert ALL_BLOCKS, "no code blocks found under docs/"
    for b in ALL_BLOCKS:
        assert b.mode in {"run", "file", "parse-only", "skip", "output", "shown"}, b.where
        if b.mode in ("skip", "parse-only"):
            assert b.reason.strip(), f"{b.where}: a {b.mode} block needs a reason"
        if b.mode == "shown":
            assert b.lang in {"text", "console", "toml", ""}, f"{b.where}: a ```{b.lang} block is neither run nor marked"
        if b.mode == "output":
            assert b.lang == "text", f"{b.where}: an output block is ```text"


def _env(cache: Path, datasets: Path, irds_home: Path | None = None) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "SOURCEBIAS_CACHE": str(cache),
        "SOURCEBIAS_DATASETS": str(datasets),
        "OMP_NUM_THREADS": "1",
        "COLUMNS": "100",
        **({"IR_DATASETS_HOME": str(irds_home)} if irds_home is not None else {}),
    }


def _parse_cli(words: list[str], where: str) -> None:
    """Parse one ``sourcebias`` command with the real app, without running it."""
    import typer

    from sourcebias.cli.common import expand_greedy_options
    from sourcebias.cli.main import app

    cmd = typer.main.get_command(app)
    args = expand_greedy_options(words[1:])
    ctx = cmd.make_context("sourcebias", args, resilient_parsing=False)
    rest = [*(getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", None) or []), *ctx.args]
    while hasattr(cmd, "resolve_command") and rest:
        name, sub, rest = cmd.resolve_command(ctx, rest)
        assert sub is not None, f"{where}: unknown command {name}"
        ctx = sub.make_context(name, list(rest), parent=ctx)
        cmd, rest = sub, [*(getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", None) or []), *ctx.args]


def _check_parse_only(block: Block) -> None:
    if block.lang == "python":
        compile(block.body, block.where, "exec")
        return
    for words in shell_commands(block.body):
        if words[0] == "sourcebias":
            _parse_cli(words, block.where)
        elif words[0] in ("python", "python3") and words[1:] and words[1].endswith(".py"):
            assert (REPO / words[1]).is_file(), f"{block.where}: {words[1]} does not exist"


def _write_file(block: Block, cwd: Path) -> None:
    name = block.file_name
    assert name is not None
    (cwd / name).write_text(block.body + "\n", encoding="utf-8")
    if name.endswith(".py"):
        compile(block.body, block.where, "exec")
    else:
        tomllib.loads(block.body)


def _run(block: Block, cwd: Path, env: dict[str, str]) -> str:
    cmd = ["bash", "-euo", "pipefail", "-c", block.body] if block.lang == "bash" else [sys.executable, "-c", block.body]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env={**env, "PYTHONPATH": os.pathsep.join([str(cwd), env.get("PYTHONPATH", "")])})
    assert proc.returncode == 0, f"{block.where} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def _matches(got: list[str], want: list[str]) -> bool:
    """``want`` equals ``got``, where a line ``...`` in ``want`` stands for any number of lines."""
    if "..." not in want:
        return got == want
    cut = want.index("...")
    head, rest = want[:cut], want[cut + 1 :]
    if got[: len(head)] != head:
        return False
    return any(_matches(got[i:], rest) for i in range(len(head), len(got) + 1))


def _same_output(printed: str, shown: Block, ran: Block) -> None:
    got = [line.rstrip() for line in printed.strip("\n").splitlines()]
    want = [line.rstrip() for line in shown.body.strip("\n").splitlines()]
    assert _matches(got, want), f"{shown.where}: the output shown differs from what {ran.where} printed:\n" + "\n".join(got)


def _page_path(page: str) -> Path:
    return REPO / page if page == "README.md" else DOCS / page


@pytest.mark.parametrize(
    "page",
    [
        p.name if p.name == "README.md" else p.relative_to(DOCS).as_posix()
        for p in pages()
        if any(b.mode in ("run", "file", "parse-only") for b in page_blocks(p))
    ],
)
def test_the_page_runs_as_printed(page, tmp_path, docs_cache, docs_datasets, docs_irds_home):
    env = _env(docs_cache, docs_datasets, docs_irds_home)
    if page == "README.md":  # the quick start runs after the set-up, beside its .venv
        (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    last_run, printed = None, ""
    for block in page_blocks(_page_path(page)):
        if block.mode == "file":
            _write_file(block, tmp_path)
        elif block.mode == "parse-only":
            _check_parse_only(block)
        elif block.mode == "run":
            printed, last_run = _run(block, tmp_path, env), block
        elif block.mode == "output":
            assert last_run is not None, f"{block.where}: an output block with no block before it"
            _same_output(printed, block, last_run)


@pytest.fixture(scope="session")
def docs_cache(tmp_path_factory) -> Path:
    return Path(os.environ.get("SOURCEBIAS_CACHE") or tmp_path_factory.mktemp("docs-cache"))


@pytest.fixture(scope="session")
def docs_datasets(tmp_path_factory) -> Path:
    """The dataset cache the pages see: nfcorpus as if `sourcebias download nfcorpus` had run,
    made of the development copy in ../shared/data (linked, with the download's marker file)."""
    from conftest import data_dir

    from sourcebias.data.registry import MARKER

    root = tmp_path_factory.mktemp("docs-datasets")
    shared = data_dir("nfcorpus")
    folder = root / "nfcorpus"
    folder.mkdir()
    for item in shared.iterdir():
        (folder / item.name).symlink_to(item.resolve())
    (folder / MARKER).write_text('{"note": "the development copy of ../shared/data/nfcorpus, linked by tests/project/test_docs.py"}\n', encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def docs_irds_home(tmp_path_factory) -> Path:
    """ir_datasets' home with BEIR's nfcorpus.zip rebuilt from the development copy's human side
    (there is no network here), for the pages that load `irds:beir/nfcorpus/dev`."""
    from conftest import data_dir
    from irds_helpers import placed_nfcorpus

    return placed_nfcorpus(data_dir("nfcorpus"), tmp_path_factory.mktemp("irds-home"))
