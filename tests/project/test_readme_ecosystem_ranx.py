"""The README's "Use with PyTerrier, ranx and ir_datasets" snippets for ranx and ir_measures, other
tools' files and Parquet outputs, run as printed with the runner of tests/project/test_readme_ecosystem.py:
every number of each output block must appear in what its snippet printed."""

from __future__ import annotations

import pytest

pytest.importorskip("ranx")
pytest.importorskip("ir_measures")

from test_readme_ecosystem import environment, run_blocks, subsection  # noqa: E402


@pytest.mark.parametrize(("title", "snippets"), [("ranx and ir_measures", 1), ("BEIR, Cocktail and the 2026 package's files", 1), ("Parquet per-query values", 2)])
def test_snippets_run_as_printed(title, snippets, tmp_path, nq_utd):
    blocks = subsection(title)
    assert run_blocks(blocks, tmp_path, environment(tmp_path)) == snippets
