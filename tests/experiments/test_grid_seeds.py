"""Grids of several seeds: each (cell, seed) is its own resumable cell run, equal to a one-seed
grid with that seed; the report gives the mean and spread across seeds (checked against numpy);
a tie-heavy corpus has a spread > 0; config errors name the line."""

from __future__ import annotations

import math

import numpy as np
import pytest

import sourcebias as sb
from sourcebias.core.errors import DataError
from sourcebias.experiments.aggregate import aggregate_grid, seed_summary
from sourcebias.experiments.config import load_grid_config
from sourcebias.experiments.grid import expected_hash, plan_cells, run_grid
from tests.conftest import write_jsonl, write_qrels

SEEDS = [42, 100, 2026]
PER_SEED = ("all", "human", "llm", "rel_delta", "rel_delta_ci_low", "rel_delta_ci_high", "p_randomization", "p_adjusted", "delta_ndsr", "twin_pref_rate")


def config(tmp_path, data, seed_line: str, name: str = "grid.toml", retrievers=("bm25", "tfidf")):
    from conftest import tiny_grid_toml

    return tiny_grid_toml(tmp_path, data, seed_line, name, retrievers)


def rows_by(table, keys=("retriever", "llm_source")):
    return {tuple(r[k] for k in keys): r for r in table.to_dict("records")}


def abs_delta_ndsr_by_hand(result, retriever: str, k: int = 10) -> float:
    """mean over queries of |NDSR_human − NDSR_LLM|@k from the ranked lists, written anew:
    rank r weighs 1 / log2(1 + r); NDSR_s = the weights of s's documents / all weights."""
    run = result.runs[(retriever, "mixed")]
    src = list(run.corpus.sources)
    h, g = src.index(result.human_source), src.index(result.other_sources[0])
    out = []
    for q in result.query_ids:
        top = list(run.positions[q][:k])
        if not top:
            continue
        w = [1 / math.log2(1 + r) for r in range(1, len(top) + 1)]
        code = [int(run.corpus.source_codes[p]) for p in top]
        nh = sum(wi for wi, c in zip(w, code) if c == h) / sum(w)
        ng = sum(wi for wi, c in zip(w, code) if c == g) / sum(w)
        out.append(abs(nh - ng))
    return sum(out) / len(out)


@pytest.fixture(scope="module")
def three_seeds(tmp_path_factory):
    """The cocktail fixture's data, a 3-seed grid and one one-seed grid per seed."""
    from tests.conftest import HUMAN_DOCS, LLM_DOCS, QRELS, QUERIES

    tmp = tmp_path_factory.mktemp("seeds")
    data = tmp / "tiny"
    write_jsonl(data / "corpus" / "human.jsonl", HUMAN_DOCS)
    write_jsonl(data / "corpus" / "llm.jsonl", LLM_DOCS)
    write_jsonl(data / "queries.jsonl", QUERIES)
    write_qrels(data / "qrels" / "test.tsv", QRELS)
    cfg = load_grid_config(config(tmp, data, f"seeds = {SEEDS}\nndsr_k = 3"))  # BM25 ranks 4 of the 6 documents: ΔNDSR@10 is refused
    run_grid(cfg, tmp / "out")
    singles = {}
    for s in SEEDS:
        one = load_grid_config(config(tmp, data, f"seed = {s}\nndsr_k = 3", name=f"seed{s}.toml"))
        run_grid(one, tmp / f"out{s}")
        singles[s] = aggregate_grid(one, tmp / f"out{s}")
    return tmp, cfg, aggregate_grid(cfg, tmp / "out"), singles


def test_each_seed_equals_a_one_seed_grid_with_that_seed(three_seeds):
    tmp, cfg, table, singles = three_seeds
    assert [c.key for c in plan_cells(cfg)] == [f"tiny/{r}@seed={s}" for r in ("bm25", "tfidf") for s in SEEDS]
    assert list(table["seed"]) == SEEDS * 2 and set(table["status"]) == {"ok"}
    for s, single in singles.items():
        mine = rows_by(table[table["seed"] == s])
        for key, other in rows_by(single).items():
            for f in PER_SEED:
                assert mine[key][f] == pytest.approx(other[f], nan_ok=True), (s, key, f)
        # each seed's cell is an evaluate folder made with that seed
        r = sb.load_result(tmp / "out" / "cells" / "tiny" / f"bm25.seed-{s}")
        assert r.parameters["seed"] == s
        assert mine[("bm25", "llm")]["mean_abs_delta_ndsr"] == pytest.approx(abs_delta_ndsr_by_hand(r, "bm25", k=3))


def test_mean_and_spread_across_seeds_are_numpys(three_seeds):
    _, _, table, singles = three_seeds
    summary = rows_by(seed_summary(table))
    for key, row in summary.items():
        assert row["n_seeds"] == 3 and row["seeds"] == "42 100 2026"
        for q in ("all", "rel_delta", "delta_ndsr", "twin_pref_rate"):
            v = np.array([rows_by(singles[s])[key][q] for s in SEEDS], dtype=float)
            assert row[f"{q}_mean"] == pytest.approx(np.mean(v)) and row[f"{q}_sd"] == pytest.approx(np.std(v, ddof=1), abs=1e-12)
            assert (row[f"{q}_min"], row[f"{q}_max"]) == (pytest.approx(v.min()), pytest.approx(v.max()))
        m = table[(table["retriever"] == key[0])]["mean_abs_delta_ndsr"].to_numpy(dtype=float)
        assert row["mean_abs_delta_ndsr_mean"] == pytest.approx(m.mean()) and row["mean_abs_delta_ndsr_sd"] == pytest.approx(m.std(ddof=1), abs=1e-12)


def test_the_report_shows_mean_and_spread_with_the_number_of_seeds(three_seeds):
    from sourcebias.experiments.grid_report import write_grid_report

    tmp, cfg, table, _ = three_seeds
    paths = write_grid_report(table, cfg, tmp / "out")
    md = paths["markdown"].read_text()
    assert "mean and spread across seeds" in md and "| 3 seeds |" in md and " ± " in md
    assert "Across 3 seeds (42, 100, 2026)" in md and "sample SD (n − 1)" in md
    assert "| bm25 | 2026 |" in md and "across the cells of its seed" in md
    assert (paths["folder"] / "seeds.csv").is_file() and (paths["folder"] / "figures" / "seeds_tiny.png").is_file()
    assert r"$\pm$" in paths["latex"].read_text()
    assert "mean and spread across seeds" in paths["html"].read_text()


def test_a_cell_with_one_finished_seed_says_1_seed_not_sd_0(tmp_path, cocktail_dir):
    from sourcebias.experiments.grid_report import grid_report
    from sourcebias.report.render import to_markdown

    cfg = load_grid_config(config(tmp_path, cocktail_dir, "seeds = [42, 100]", retrievers=("bm25",)))
    run_grid(cfg, tmp_path / "out", only=["tiny/bm25@seed=42"])
    table = aggregate_grid(cfg, tmp_path / "out")
    assert list(table["status"]) == ["ok", "missing"]
    row = seed_summary(table).iloc[0]
    assert row["n_seeds"] == 1 and np.isnan(row["rel_delta_sd"])
    line = next(t for t in to_markdown(grid_report(table)).splitlines() if t.startswith("| bm25 | 1 seed |"))
    assert "±" not in line and f"{row['rel_delta_mean']:.1f}" in line


def test_one_seed_is_the_grid_it_always_was(tmp_path, cocktail_dir):
    one = load_grid_config(config(tmp_path, cocktail_dir, "seeds = [42]"))
    old = load_grid_config(config(tmp_path, cocktail_dir, "seed = 42", name="old.toml"))
    assert [c.key for c in plan_cells(one)] == ["tiny/bm25", "tiny/tfidf"]
    assert [expected_hash(one, c) for c in plan_cells(one)] == [expected_hash(old, c) for c in plan_cells(old)]
    run_grid(one, tmp_path / "out")
    table = aggregate_grid(one, tmp_path / "out")
    assert "seed" not in table and "mean_abs_delta_ndsr" not in table


def test_a_rerun_skips_finished_cell_seed_pairs(tmp_path, cocktail_dir):
    out, log = tmp_path / "out", []
    run_grid(load_grid_config(config(tmp_path, cocktail_dir, "seeds = [42, 100]", retrievers=("bm25",))), out)
    stamp = (out / "cells" / "tiny" / "bm25.seed-42" / "manifest.json").stat().st_mtime_ns
    run = run_grid(
        load_grid_config(config(tmp_path, cocktail_dir, "seeds = [42, 100, 2026]", retrievers=("bm25",))), out, on_event=lambda k, r: log.append((k, r["cell"]))
    )
    assert sorted(log) == [("cached", "tiny/bm25@seed=100"), ("cached", "tiny/bm25@seed=42"), ("ok", "tiny/bm25@seed=2026"), ("start", "tiny/bm25@seed=2026")]
    assert run.counts() == {"ok": 3}
    assert (out / "cells" / "tiny" / "bm25.seed-42" / "manifest.json").stat().st_mtime_ns == stamp
    # dropping a seed removes its cell folder (stale rule as for a removed retriever)
    run_grid(load_grid_config(config(tmp_path, cocktail_dir, "seeds = [42, 100]", retrievers=("bm25",))), out)
    assert sorted(p.name for p in (out / "cells" / "tiny").iterdir() if not p.name.startswith(".")) == ["bm25.seed-100", "bm25.seed-42"]


def test_ties_make_the_seed_matter(tmp_path):
    """Every LLM copy is the human text itself: BM25 ties each pair, only the seeded tie rule
    orders them, so Relative Δ differs across seeds (spread > 0)."""
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "eta",
        "theta",
        "iota",
        "kappa",
        "lambda",
        "mu",
        "nu",
        "xi",
        "omicron",
        "pi",
        "rho",
        "sigma",
        "tau",
        "upsilon",
    ]
    docs = [{"_id": f"d{i}", "title": "", "text": f"{w} {words[(i + 3) % len(words)]} common text"} for i, w in enumerate(words)]
    data = tmp_path / "ties"
    write_jsonl(data / "corpus" / "human.jsonl", docs)
    write_jsonl(data / "corpus" / "llm.jsonl", docs)
    write_jsonl(data / "queries.jsonl", [{"_id": f"q{i}", "text": w} for i, w in enumerate(words)])
    write_qrels(data / "qrels" / "test.tsv", [(f"q{i}", f"d{i}", 1) for i in range(len(words))])
    cfg = load_grid_config(config(tmp_path, data, "seeds = [1, 2, 3, 4]", retrievers=("bm25",)))
    run_grid(cfg, tmp_path / "out")
    table = aggregate_grid(cfg, tmp_path / "out")
    row = seed_summary(table).iloc[0]
    values = table["rel_delta"].to_numpy(dtype=float)
    assert len(set(np.round(values, 9))) > 1 and row["rel_delta_sd"] > 0
    assert row["rel_delta_sd"] == pytest.approx(np.std(values, ddof=1))


@pytest.mark.parametrize(
    ("lines", "message", "key"),
    [
        ("seed = 1\nseeds = [1, 2]", r"give either seed = N \(line \d+\) or seeds", "seeds"),
        ("seeds = []", r"\[grid\]\.seeds: expected a non-empty list of integers", "seeds"),
        ("seeds = [42, 100, 42]", r"\[grid\]\.seeds: seed\(s\) 42 given more than once", "seeds"),
        ('seeds = [42, "x"]', r"\[grid\]\.seeds: expected integers, got 'x'", "seeds"),
        ("seed = 1.5", r"\[grid\]\.seed: expected int", "seed"),
    ],
)
def test_seed_config_errors_name_the_line(tmp_path, cocktail_dir, lines, message, key):
    path = config(tmp_path, cocktail_dir, lines)
    with pytest.raises(DataError, match=message) as info:
        load_grid_config(path)
    line = next(i for i, t in enumerate(path.read_text().splitlines(), start=1) if t.strip().startswith(f"{key} ="))
    assert f"grid.toml:{line}:" in str(info.value)


def test_bench_only_one_cell_counts_all_its_seeds(tmp_path, cocktail_dir, capsys):
    """`bench --only dataset/system` in a grid of several seeds runs, and announces, every seed of it."""
    from sourcebias.cli.main import main

    path = config(tmp_path, cocktail_dir, "seeds = [42, 100]")
    with pytest.raises(SystemExit) as info:
        main(["bench", str(path), "-o", str(tmp_path / "out"), "--only", "tiny/bm25", "--no-report"])
    assert info.value.code in (0, None)
    out = capsys.readouterr().out
    assert "= 2 cells" in out and "2 cells: 2 run" in out
    assert sorted(p.name for p in (tmp_path / "out" / "cells" / "tiny").iterdir() if not p.name.startswith(".")) == ["bm25.seed-100", "bm25.seed-42"]
