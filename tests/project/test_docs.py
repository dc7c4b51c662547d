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
    "guides/citations",
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
    from sourcebias.detect import detector_kinds
    from sourcebias.evaluation.measures import measure_kinds
    from sourcebias.evaluation.stats import statistic_kinds
    from sourcebias.llmcalls.prompts import prompt_kinds
    from sourcebias.retrieval.specs import kinds

    pages = ("cli", "measures", "statistics", "retrievers", "detectors", "prompts")
    html = {name: (site / "reference" / name / "index.html").read_text(encoding="utf-8") for name in pages}
    assert all(f"{name}@k" in html["measures"] for name in measure_kinds())
    assert all(name in html["statistics"] for name in statistic_kinds())
    assert all(name in html["retrievers"] for name in kinds())
    assert all(f"{name}:" in html["detectors"] and kind.description in html["detectors"] for name, kind in detector_kinds().items())
    assert all(f"<code>{name}</code>" in html["prompts"] for name in prompt_kinds()) and "sourcebias prompts" in html["cli"]
    for command in ("sourcebias evaluate", "sourcebias power", "sourcebias audit", "sourcebias simulate", "sourcebias bench"):
        assert command in html["cli"], command
    assert "<!-- reference:" not in "".join(html.values())


def _visible_text(html: str) -> str:
    """A page's text as a reader sees it: no script, style or tag; entities decoded."""
    import html as html_lib
    import re

    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return html_lib.unescape(re.sub(r"<[^>]+>", "", html))


def _html_pages(site: Path) -> dict[str, str]:
    return {p.relative_to(site).as_posix(): p.read_text(encoding="utf-8") for p in sorted(site.rglob("*.html"))}


def test_no_page_shows_a_raw_sphinx_role_or_an_escaped_metavar(site):
    """The docstrings' :class:/:func:... roles are rendered, not printed (issue 31, item 6), and the
    CLI reference's metavars read as typed: ``text|title+text``, not ``text\\|title+text`` (item 7)."""
    import re

    wrong = re.compile(r":(?:class|mod|func|meth|attr|data|exc|obj):|\\[|\[\]]")  # a role; a backslash before | [ ]
    pages = _html_pages(site)
    assert "reference/api/index.html" in pages and "reference/cli/index.html" in pages
    found = [
        f"{name}: {text[max(0, m.start() - 30) : m.end() + 30]!r}"
        for name, html in pages.items()
        for text in [_visible_text(html)]
        for m in wrong.finditer(text)
    ]
    assert not found, f"{len(found)} raw roles or escaped metavars:\n" + "\n".join(found[:20])
    # the options as `sourcebias evaluate --help` and friends print them, each whole in its cell
    cells = set(re.findall(r"<td><code>(.*?)</code></td>", pages["reference/cli/index.html"]))
    for option in ("--field text|title+text", "--with DIR[:SPLIT]", "--ray [ADDRESS]", "--correction holm|fdr_bh|bonferroni|none", "--run [NAME=]FILE"):
        assert option in cells, option


def test_the_api_reference_has_a_section_per_study_with_its_entry_point(site):
    """Every study a command runs is in the API reference, under its own heading, with the library
    call behind the command (the citations section was missing; judges came after the errors)."""
    import re

    html = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    headings = re.findall(r'<h2 id="([a-z-]+)"', html)
    sections = {
        "llm-calls": "sourcebias.llmcalls.open_client",
        "evaluation": "sourcebias.evaluation.protocol.evaluate",
        "llm-relevance-judges": "sourcebias.judges.job.run_judge",
        "citation-studies": "sourcebias.citations.job.run_cite",
        "audits-without-labels": "sourcebias.audit.job.run_audit",
        "power": "sourcebias.power.job.run_power",
    }
    for heading, entry in sections.items():
        assert heading in headings, heading
        following = headings[headings.index(heading) + 1] if headings.index(heading) + 1 < len(headings) else None
        start = html.index(f'id="{heading}"')
        end = html.index(f'id="{following}"') if following else len(html)
        assert f'id="{entry}"' in html[start:end], (heading, entry)
    assert headings[-1] == "errors"


def test_docstring_cross_references_link_to_the_objects_the_site_renders(site):
    """A role whose target the API page renders is a link to it; one whose target it does not
    render shows the name in code, and its target is checked (by Python's own import) not to be on
    the page under another path."""
    import pydoc
    import re

    html = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    anchors = set(re.findall(r'\bid="([^"]+)"', html))
    links = set(re.findall(r'<a class="autorefs autorefs-internal"[^>]*href="#([^"]+)"', html))
    assert links <= anchors
    # written in the docstrings as :class:`~sourcebias.retrieval.base.Retriever` (build_retriever),
    # :class:`~sourcebias.evaluation.export.RanxExport` (EvaluationResult.to_ranx),
    # :func:`~sourcebias.data.load_dataset` (a re-export: DatasetOptions), :class:`DataError` (an import)
    for target in ("retrieval.base.Retriever", "retrieval.base.Pipeline", "evaluation.export.RanxExport", "data.dataset.load_dataset", "core.errors.DataError"):
        assert f"sourcebias.{target}" in links, target
    unlinked = set(re.findall(r'<span title="([\w.]+)"><code>', html))
    assert unlinked, "expected some references to objects the page does not render"
    for target in unlinked:
        obj = pydoc.locate(target)
        if hasattr(obj, "__qualname__") and hasattr(obj, "__module__"):
            assert f"{obj.__module__}.{obj.__qualname__}" not in anchors, f"{target} is on the page but not linked"


def test_the_role_rewrite_resolves_targets_as_sphinx_would(tmp_path):
    """docs/hooks.py's griffe extension on a package written here: each role's identifier worked
    out by hand (an import, a sibling module, a method of the class, a re-export, a name not in
    scope) and the name shown by Sphinx's rules (``~``: the last part; ``Title <target>``)."""
    import griffe

    pkg = tmp_path / "pkgx"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pkgx.core import Thing\n", encoding="utf-8")
    (pkg / "core.py").write_text("class Thing:\n    def go(self):\n        pass\n", encoding="utf-8")
    (pkg / "sub" / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "sub" / "tools.py").write_text("", encoding="utf-8")
    (pkg / "sub" / "user.py").write_text(
        '''"""Uses :class:`Thing`, :mod:`.tools`, :class:`~pkgx.Thing`, :meth:`Go <pkgx.core.Thing.go>` and :func:`missing`."""

from pkgx.core import Thing


class User:
    """Calls :meth:`run`; see :attr:`~pkgx.sub.user.User.size`."""

    size = 1

    def run(self):
        """Before :meth:`~User.run` ends, :meth:`.Thing.go`."""
''',
        encoding="utf-8",
    )
    ext = griffe.load_extensions(str(REPO / "docs" / "hooks.py") + ":SphinxRoles")
    mod = griffe.load("pkgx.sub.user", search_paths=[str(tmp_path)], extensions=ext)

    def ref(identifier: str, shown: str) -> str:
        return f'<autoref identifier="{identifier}" optional>`{shown}`</autoref>'

    assert mod.docstring.value == (
        f"Uses {ref('pkgx.core.Thing', 'Thing')}, {ref('pkgx.sub.tools', 'tools')}, {ref('pkgx.core.Thing', 'Thing')}, "
        f"{ref('pkgx.core.Thing.go', 'Go')} and {ref('missing', 'missing')}."
    )
    assert mod["User"].docstring.value == f"Calls {ref('pkgx.sub.user.User.run', 'run')}; see {ref('pkgx.sub.user.User.size', 'size')}."
    assert mod["User.run"].docstring.value == f"Before {ref('pkgx.sub.user.User.run', 'run')} ends, {ref('pkgx.core.Thing.go', 'Thing.go')}."


def test_every_returns_table_holds_its_description_in_one_row(site):
    """A Returns description wrapped over several docstring lines stays one row (it was split into
    2-3 rows, each taken for another returned value)."""
    import re

    html = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    tables = re.findall(r'<span class="doc-section-title">Returns:</span>.*?</table>', html, flags=re.S)
    assert len(tables) >= 50
    rows = [re.findall(r'<tr class="doc-section-item">(.*?)</tr>', t, flags=re.S) for t in tables]
    assert all(len(r) == 1 for r in rows), [" | ".join(" ".join(_visible_text(c).split()) for c in r) for r in rows if len(r) != 1]
    texts = [" ".join(_visible_text(r[0]).split()) for r in rows]
    # load_dataset's docstring, as written over two lines
    whole = "The dataset; dataset.options are the options it was loaded with (written into every result, so that later commands reload it the same way)."
    assert any(t.endswith(whole) for t in texts)


def test_build_time_code_is_not_published(site):
    """docs/hooks.py (the MkDocs hook and the griffe extension) builds the site; it is no page."""
    assert not list(site.rglob("*.py"))


@pytest.fixture(scope="module")
def chromium() -> str:
    import shutil

    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("Debian's chromium is needed for this test (scripts/install.sh, the README's step 1, installs it: apt-get install -y chromium)")
    return path


def test_the_measure_guides_statistics_tables_fit_the_content_column(site, chromium):
    """In a 1280-pixel window the two statistics tables of the measure guide are no wider than the
    content column (``p (adj.)`` was behind a scrollbar) and every number, interval included, is on
    one line (``Rel Δ [CI]`` took three)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto((site / "guides" / "measure" / "index.html").as_uri())
        tables = page.evaluate(
            """() => [...document.querySelectorAll('.md-content table')].map(t => {
                const wrap = t.closest('.md-typeset__scrollwrap');  // Material scrolls a table too wide
                const lines = c => { const r = document.createRange(); r.selectNodeContents(c); return r.getClientRects().length; };
                const numbers = [...t.querySelectorAll('td')].filter(c => c.style.textAlign === 'right');
                return {header: t.rows[0].innerText.replace(/\\s+/g, ' '), overflow: wrap.scrollWidth - wrap.clientWidth,
                        wrapped: numbers.filter(c => lines(c) !== 1).map(c => c.innerText), numbers: numbers.length};
            })"""
        )
        browser.close()
    tables = [t for t in tables if t["header"].endswith(("p (adj.)", "ΔNDSR p (sign)"))]
    assert [t["numbers"] for t in tables] == [36, 20]  # 6 rows x 6 and 2 rows x 10 numbers
    for t in tables:
        assert t["overflow"] <= 0, f"{t['header'][:40]!r}: {t['overflow']} px wider than the content column"
        assert not t["wrapped"], f"numbers over several lines: {t['wrapped']}"


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


def _reads_nfcorpus(page: str) -> bool:
    """Whether the page's blocks read NFCorpus (by name, or as ir_datasets' beir/nfcorpus): only
    those pages need ../shared/data; a clone without it runs every other page."""
    return any("nfcorpus" in b.body for b in page_blocks(_page_path(page)) if b.mode in ("run", "file"))


@pytest.mark.parametrize(
    "page",
    [
        p.name if p.name == "README.md" else p.relative_to(DOCS).as_posix()
        for p in pages()
        if any(b.mode in ("run", "file", "parse-only") for b in page_blocks(p))
    ],
)
def test_the_page_runs_as_printed(page, tmp_path, tmp_path_factory, request, docs_cache):
    if _reads_nfcorpus(page):  # the development copy (../shared/data); NQ-UTD ships in the package
        env = _env(docs_cache, request.getfixturevalue("docs_datasets"), request.getfixturevalue("docs_irds_home"))
    else:
        env = _env(docs_cache, tmp_path_factory.mktemp("no-datasets"))
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
