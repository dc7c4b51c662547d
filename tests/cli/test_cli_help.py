"""What a newcomer reads: help at 80 columns with nothing cut, descriptions not broken
mid-sentence, one citation for the Cocktail datasets, no stale progress bar, messages that read
right and suggest the name meant."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap

import pytest
from rich.cells import cell_len

from sourcebias.cli.main import main

HELP_OF_EVERY_COMMAND = textwrap.dedent(
    """
    import json, sys, typer
    from sourcebias.cli.main import app, main

    def walk(cmd, path=()):
        yield path, cmd
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            yield from walk(sub, path + (name,))

    for path, cmd in walk(typer.main.get_command(app)):
        options = [o for p in cmd.params if not getattr(p, "hidden", False) for o in (*p.opts, *getattr(p, "secondary_opts", ())) if o.startswith("-")]
        print("@@@" + json.dumps({"path": list(path), "options": options}), flush=True)
        try:
            main([*path, "--help"])
        except SystemExit:
            pass
        sys.stdout.flush()
    """
)


def help_pages(columns: int) -> list[tuple[dict, str]]:
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "dumb", "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-c", HELP_OF_EVERY_COMMAND], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    pages = []
    for chunk in proc.stdout.split("@@@")[1:]:
        head, _, page = chunk.partition("\n")
        pages.append((json.loads(head), page))
    return pages


@pytest.fixture(scope="module")
def pages_80():
    return help_pages(80)


def test_help_at_80_columns_cuts_no_option_and_no_word(pages_80):
    assert len(pages_80) > 20  # every command and sub-command
    for info, page in pages_80:
        where = "sourcebias " + " ".join(info["path"])
        assert "…" not in page, f"{where} --help cuts: " + next(line for line in page.splitlines() if "…" in line)
        assert [line for line in page.splitlines() if cell_len(line) > 80] == [], where  # cells: β̂ is two characters, one cell
        for option in info["options"]:  # each option's every spelling is shown whole
            assert option in page.replace("│", " ").split() or f"{option}," in page, f"{where}: {option} is not shown whole"


def test_evaluate_help_at_80_columns_shows_the_long_values_whole(pages_80):
    page = next(p for info, p in pages_80 if info["path"] == ["evaluate"])
    text = page.replace("│", " ")
    for whole in ("--remove-self-matches / --no-remove-self-matches", "bm25:k1=0.9,b=0.4", "'bm25>>cut:20>>lm:smollm2'"):
        assert whole in text


def test_the_command_list_keeps_no_line_break_of_a_docstring():
    """At 1000 columns every command's description is one row: a docstring's hard line break
    would start a second row mid-sentence."""
    (_, page), *_ = help_pages(1000)
    rows = [line for line in page.split("Commands", 1)[1].splitlines() if line.startswith("│")]
    commands = [line for line in rows if line[2:3].strip()]
    assert len(commands) >= 15 and len(rows) == len(commands)
    datasets = next(line for line in commands if line.startswith("│ datasets "))
    assert "and the other Cocktail datasets" in " ".join(datasets.split())


def test_metric_help_lists_every_measure_of_the_registry():
    from sourcebias.evaluation.measures import measure_kinds

    page = next(p for info, p in help_pages(1000) if info["path"] == ["evaluate"])
    line = next(x for x in page.splitlines() if "Measures, e.g. --metric" in x)
    assert set(measure_kinds()) == {"NDCG", "MAP", "Recall", "P", "Share", "NDSR"}
    for name in measure_kinds():
        assert f" {name}," in line or f" {name} (" in line, name


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


def test_datasets_prints_the_shared_citation_once(capsys):
    from sourcebias.data.registry import listing

    code, out, _ = run_cli(["datasets"], capsys)
    rows = listing()
    assert code in (0, None) and len(rows) >= 10
    assert out.count("Cocktail: A Comprehensive Information Retrieval Benchmark") == 1
    assert out.count("cite: [1]") == len(rows)
    for row in rows:  # each original dataset is still cited where it is listed
        if "; and the original dataset (" in row["citation"]:
            url = row["citation"].rsplit("(", 1)[1].rstrip(")")
            assert url.split("//")[1][:20] in "".join(out.split())


def test_a_finished_task_leaves_no_bar():
    from rich.console import Console

    from sourcebias.core.progress import RichProgress

    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100)
    with RichProgress(console=console) as reporter:
        with reporter.task("Loading nq-utd"):
            pass
        with reporter.task("Encoding", total=4) as t:
            t.advance(2)
            shown = Console(file=io.StringIO(), width=100)
            shown.print(reporter._progress.get_renderable())
            live = shown.file.getvalue()
    assert "Encoding" in live and "Loading" not in live


def test_malformed_json_reads_right(cocktail_dir, capsys):
    (cocktail_dir / "corpus" / "llm.jsonl").write_text('{"_id": "d1", "text": "unterminated\n')
    code, _, err = run_cli(["evaluate", str(cocktail_dir), "--k", "1"], capsys)
    assert code == 2 and "llm.jsonl:1: malformed JSON (Unterminated string starting at column 23)" in " ".join(err.split())
    assert "at at" not in err


@pytest.mark.parametrize(("spec", "meant"), [("bm26", "'bm25'"), ("tfid", "'tfidf'"), ("bm25>>cutt:5", "'cut'")])
def test_a_misspelt_retriever_suggests_the_name_meant(cocktail_dir, capsys, spec, meant):
    code, _, err = run_cli(["evaluate", str(cocktail_dir), "-r", spec, "--k", "1"], capsys)
    assert code == 2 and f"did you mean {meant}" in " ".join(err.split())


def test_a_command_that_draws_no_help_does_not_import_typers_help_renderer():
    """typer's help renderer (``typer.rich_utils``: rich's markdown, syntax and traceback modules,
    0.1 s of CPU) is imported for a help page only; the stacked option panels still apply to
    every help page (the tests above)."""
    code = textwrap.dedent(
        """
        import sys
        from sourcebias.cli.main import main
        try:
            main(["--version"])
        except SystemExit:
            pass
        assert "typer.rich_utils" not in sys.modules, "imported at start-up"
        try:
            main(["evaluate", "--help"])
        except SystemExit:
            pass
        from typer import rich_utils
        assert rich_utils._print_options_panel.__module__ == "sourcebias.cli.common"
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    assert "sourcebias" in proc.stdout and "--retriever" in proc.stdout
