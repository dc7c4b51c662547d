"""The grid's cells table: every finished cell has its row (whatever the spelling of `primary`),
cells of an earlier configuration are marked stale and left out, the orphan policy is an option."""

from __future__ import annotations

import numpy as np
import pytest

import sourcebias as sb
from sourcebias.core.errors import DataError
from sourcebias.experiments.aggregate import aggregate_grid
from sourcebias.experiments.config import load_grid_config
from sourcebias.experiments.grid import run_grid


def config(tmp_path, cocktail_dir, grid_extra: str = "", name: str = "grid.toml"):
    from conftest import tiny_grid_toml

    return tiny_grid_toml(tmp_path, cocktail_dir, grid_extra, name)


def test_primary_in_any_spelling_reports_every_finished_cell(tmp_path, cocktail_dir):
    cfg = load_grid_config(config(tmp_path, cocktail_dir, 'primary = "ndcg@3"'))
    assert cfg.primary == "NDCG@3"
    out = tmp_path / "out"
    run_grid(cfg, out)
    table = aggregate_grid(cfg, out)
    assert list(table["status"]) == ["ok", "ok"] and set(table["measure"]) == {"NDCG@3"}
    for _, row in table.iterrows():  # the means, against the per-query values averaged here
        r = sb.load_result(out / "cells" / "tiny" / row["retriever"])
        h = r.per_query[("{}".format(row["retriever"]), "mixed", "human", "NDCG@3")]
        g = r.per_query[(row["retriever"], "mixed", "llm", "NDCG@3")]
        assert row["human"] == pytest.approx(np.mean(h)) and row["llm"] == pytest.approx(np.mean(g))
        assert row["rel_delta"] == pytest.approx((np.mean(h) - np.mean(g)) / ((np.mean(h) + np.mean(g)) / 2) * 100)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('primary = "ndcg@10"', r"grid.toml:\d+: \[grid\].primary: NDCG@10 is not among the grid's measures x cutoffs \(NDCG@1, NDCG@3, Share@1, Share@3\)"),
        ('primary = "share@3"', r"grid.toml:\d+: \[grid\].primary: Share@3 needs no labels"),
        ('primary = "nDCG"', r"grid.toml:\d+: \[grid\].primary: cannot read measure"),
        ('orphans = "maybe"', r"grid.toml:\d+: \[grid\].orphans: 'maybe' is not one of drop, keep"),
    ],
)
def test_a_primary_outside_the_grid_is_a_config_error_with_its_line(tmp_path, cocktail_dir, line, message):
    path = config(tmp_path, cocktail_dir, line)
    with pytest.raises(DataError, match=message):
        load_grid_config(path)
    expected_line = next(i for i, t in enumerate(path.read_text().splitlines(), start=1) if t.strip() == line)
    with pytest.raises(DataError) as info:
        load_grid_config(path)
    assert f"grid.toml:{expected_line}:" in str(info.value)


def test_cells_of_an_earlier_configuration_are_stale_not_current(tmp_path, cocktail_dir):
    out = tmp_path / "out"
    run_grid(load_grid_config(config(tmp_path, cocktail_dir)), out)
    changed = load_grid_config(config(tmp_path, cocktail_dir, "seed = 7"))  # every cell's hash changes
    run_grid(changed, out, only=["tiny/bm25"])
    table = aggregate_grid(changed, out)
    status = dict(zip(table["retriever"], table["status"]))
    assert status == {"bm25": "ok", "tfidf": "stale"}
    stale = table[table["retriever"] == "tfidf"].iloc[0]
    assert np.isnan(stale["rel_delta"]) and "earlier configuration" in stale["error"]


def test_the_orphan_policy_is_a_grid_setting_and_part_of_the_cell_hash(tmp_path, cocktail_dir):
    from sourcebias.experiments.grid import expected_hash, plan_cells

    drop = load_grid_config(config(tmp_path, cocktail_dir))
    keep = load_grid_config(config(tmp_path, cocktail_dir, 'orphans = "keep"', name="keep.toml"))
    assert (drop.orphans, keep.orphans) == ("drop", "keep")
    assert expected_hash(drop, plan_cells(drop)[0]) != expected_hash(keep, plan_cells(keep)[0])
    assert keep.load_dataset(keep.datasets[0]).describe()["orphans"]["policy"] == "keep"


def test_bench_only_counts_this_invocation_and_reports_stale_cells_apart(tmp_path, cocktail_dir, capsys):
    from sourcebias.cli.main import main

    out = tmp_path / "out"
    run_grid(load_grid_config(config(tmp_path, cocktail_dir)), out)
    changed = config(tmp_path, cocktail_dir, "seed = 7", name="changed.toml")
    with pytest.raises(SystemExit) as info:
        main(["bench", str(changed), "-o", str(out), "--only", "tiny/bm25"])
    assert info.value.code in (0, None)
    text = " ".join(capsys.readouterr().out.split())
    assert "1 cells: 1 run, 0 reused, 0 failed" in text  # tfidf, finished by the earlier run, is not "run"
    assert "1 cell(s) hold results of an earlier configuration and are left out: tiny/tfidf" in text
    md = (out / "report" / "tables.md").read_text()
    table = md[: md.index("## Cells from an earlier configuration")]
    assert "| bm25 |" in table and "| tfidf |" not in table  # stale: listed apart, in no table
    assert "| tiny | tfidf | stale |" in md
