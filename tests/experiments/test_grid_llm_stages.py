"""LLM re-rankers as cells of a grid (issue 33): a ``bm25>>rankgpt:openai:...`` cell over a simulated
server ranks exactly as its answers say, equals the same pipeline evaluated directly, and the
grid's report says how many of its answers needed a repair (a re-ranker that ignored the prompt
must not look like a result)."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

import sourcebias as sb
from sourcebias.experiments.aggregate import aggregate_grid
from sourcebias.experiments.config import load_grid_config
from sourcebias.experiments.grid import run_grid
from sourcebias.experiments.grid_report import write_grid_report
from sourcebias.llmcalls.simulated import SimulatedServer


def swap_first_two(messages, params):
    """Ranks passage [2] above [1] and names no other: RankGPT's repair appends the rest in shown order."""
    return "[2] > [1]", None


def cells_dir(cfg, out):
    return out / "cells" / cfg.datasets[0].name


@pytest.fixture
def grid(tmp_path, nq_utd):
    with SimulatedServer(swap_first_two) as url:
        spec = f"bm25>>rankgpt:openai:sim@{url},depth=5,cache=false"
        path = tmp_path / "grid.toml"
        path.write_text(
            textwrap.dedent(
                f"""
                [grid]
                name = "llm"
                measures = ["NDCG"]
                cutoffs = [1, 3]
                significance_resamples = 200
                bootstrap_resamples = 200

                [[datasets]]
                path = "{nq_utd}"

                [[retrievers]]
                spec = "bm25"
                [[retrievers]]
                spec = "{spec}"
                name = "rankgpt"
                """
            ),
            encoding="utf-8",
        )
        cfg = load_grid_config(path)
        out = tmp_path / "out"
        assert run_grid(cfg, out).counts() == {"ok": 2}
        direct = sb.evaluate(sb.load_dataset(nq_utd), [sb.build_retriever(spec)], measures=sb.measure_grid(["NDCG"], [1, 3]))
    return cfg, out, direct


def test_the_rankgpt_cell_ranks_as_its_answers_say_and_equals_a_direct_evaluation(grid):
    cfg, out, direct = grid
    bm25 = sb.load_result(cells_dir(cfg, out) / "bm25")
    cell = sb.load_result(cells_dir(cfg, out) / "rankgpt")
    for setting in ("mixed", "human"):
        first, reranked = bm25.runs[("bm25", setting)], cell.runs[("rankgpt", setting)]
        for q, pos in first.positions.items():
            expected = pos[:5].copy()
            if len(expected) >= 2:  # the answer "[2] > [1]" swaps the first two; the rest keep their order
                expected[[0, 1]] = expected[[1, 0]]
            assert list(reranked.positions[q][:5]) == list(expected), q
    # the same pipeline evaluated directly (named by its spec there): the same values, key by key
    theirs = {k._replace(retriever="rankgpt"): v for k, v in direct.per_query.items()}
    assert cell.per_query.keys() == theirs.keys()
    assert all(np.array_equal(v, theirs[k], equal_nan=True) for k, v in cell.per_query.items())


def test_the_grid_report_counts_the_repaired_answers(grid):
    cfg, out, _ = grid
    cells = aggregate_grid(cfg, out)
    row = cells[cells["retriever"] == "rankgpt"].iloc[0]
    windows = len(sb.load_result(cells_dir(cfg, out) / "rankgpt").query_ids)  # depth 5: one window per query with a ranking
    mixed = sb.load_result(cells_dir(cfg, out) / "rankgpt").run_info[("rankgpt", "mixed")]
    answers = mixed["stages"][-1]["llm_answers"]["answers"]
    assert windows >= answers > 0
    assert int(row["llm_answers"]) == int(row["llm_repaired"]) == answers and int(row["llm_unparseable"]) == 0
    assert np.isnan(cells[cells["retriever"] == "bm25"].iloc[0]["llm_answers"])
    paths = write_grid_report(cells, cfg, out)
    text = paths["markdown"].read_text()
    assert re.search(rf"{cfg.datasets[0].name}/rankgpt: {answers} of {answers} LLM re-ranker answers repaired \(0 with no ranking at all", text)
    assert "llm_repaired" in paths["cells"].read_text().splitlines()[0]
