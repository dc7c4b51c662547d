"""Grid settings declared once (experiments/settings.py): checks with file and line before any cell
runs, the bounds of the evaluate command, unchanged cell hashes, a did-you-mean, the reference table."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import tiny_grid_toml

import sourcebias.core.version
from sourcebias.core.errors import DataError
from sourcebias.core.tomlfile import key_line
from sourcebias.experiments.config import GridConfig, load_grid_config
from sourcebias.experiments.grid import dataset_fingerprint, expected_hash, plan_cells
from sourcebias.experiments.settings import GRID_SETTINGS, option_kwargs, setting, settings_markdown


def line_of(path: Path, start: str) -> int:
    return next(i for i, t in enumerate(path.read_text().splitlines(), start=1) if t.strip().startswith(start))


def grid_with(tmp_path: Path, data: Path, line: str) -> Path:
    """The tiny grid with ``line`` in [grid], in place of the grid's own line of that key."""
    path = tiny_grid_toml(tmp_path, data)
    key = line.split("=")[0].strip()
    lines = [t for t in path.read_text().splitlines() if not t.startswith(f"{key} =")]
    lines.insert(lines.index("[grid]") + 1, line)
    path.write_text("\n".join(lines) + "\n")
    return path


# -- cell hashes do not change ------------------------------------------------------------------
# Recorded with the code of main at fcaf3cd (before the settings were declared in one place): the
# cocktail_dir fixture, tiny_grid_toml with the extra lines below, sourcebias.core.version.__version__ set to
# "0.2.0", expected_hash(cfg, cell) for every cell of plan_cells(cfg).
RECORDED = {
    "": {
        "tiny/bm25": "40f4f7030516a3a57de5c7cfad452e7aa3c15b82438b93496afdd86cf4df05df",
        "tiny/tfidf": "964b12ab016961e5c6261ac5bcc92cdbdf27e3ef9189839380d9ec1aa4d95fd7",
    },
    'seeds = [42, 100]\ndepth = 50\nsole = false\norphans = "keep"\nconfidence = 0.9\ncorrection = "fdr_bh"\n': {
        "tiny/bm25@seed=42": "644fe883baa63b92a86a93bb32a91e37612b8137a75fdd876128c9eaa6612af7",
        "tiny/bm25@seed=100": "c547db42935932eed688a0f6386218eaa1b9220fe0e4db63b811fe6e849cd429",
        "tiny/tfidf@seed=42": "24b365b5f17a98bda5c4bfb2840d5ea664c0ddb96a1006f1c5eb4b69afb3371a",
        "tiny/tfidf@seed=100": "11e22a1c7f320cd02755e41da53df21812c1797f9a33d075340e935c9ba8349b",
    },
}


@pytest.mark.parametrize("extra", list(RECORDED))
def test_cell_hashes_of_existing_grids_are_unchanged(tmp_path, cocktail_dir, monkeypatch, extra):
    monkeypatch.setattr(sourcebias.core.version, "__version__", "0.2.0")
    cfg = load_grid_config(tiny_grid_toml(tmp_path, cocktail_dir, extra))
    assert {c.key: expected_hash(cfg, c) for c in plan_cells(cfg)} == RECORDED[extra]


def test_cell_hash_is_the_documented_formula(tmp_path, cocktail_dir, monkeypatch):
    """The hash written out anew: SHA-256 of the JSON (sorted keys) of the settings that decide a
    cell's results, the dataset's fingerprint, the system and the version; defaults spelled out."""
    monkeypatch.setattr(sourcebias.core.version, "__version__", "9.9.9")
    path = tmp_path / "g.toml"
    path.write_text(f'[options]\nbatch_size = 8\n[[datasets]]\npath = "{cocktail_dir}"\n[[retrievers]]\nspec = "bm25"\n')
    cfg = load_grid_config(path)
    (cell,) = plan_cells(cfg)
    settings = {
        "measures": ["NDCG", "MAP", "Recall", "P", "Share"],
        "cutoffs": [1, 3, 5, 10],
        "depth": 1000,
        "seed": 0,
        "sole": True,
        "significance_resamples": 10000,
        "orphans": "drop",
        "options": {"batch_size": 8},
    }
    body = {"settings": settings, "dataset": dataset_fingerprint(cell.dataset), "system": {"spec": "bm25", "name": "bm25"}, "sourcebias": "9.9.9"}
    assert expected_hash(cfg, cell) == hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


# -- bounds, checked before any cell runs ---------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("bootstrap_resamples = 3", "[grid].bootstrap_resamples: must be ≥ 100 (as evaluate's --bootstrap-resamples), got 3"),
        ("bootstrap_resamples = 0", "[grid].bootstrap_resamples: must be ≥ 100"),
        ("bootstrap_resamples = -1", "[grid].bootstrap_resamples: must be ≥ 100"),
        ("significance_resamples = 0", "[grid].significance_resamples: must be ≥ 100 (as evaluate's --resamples), got 0"),
        ("confidence = 0.3", "[grid].confidence: must be 0.5 – 0.999 (as evaluate's --confidence), got 0.3"),
        ("confidence = 1", "[grid].confidence: must be 0.5 – 0.999"),
        ("depth = 0", "[grid].depth: must be ≥ 1"),
        ("ndsr_k = 0", "[grid].ndsr_k: must be ≥ 1"),
        ("cutoffs = [0, 3]", "[grid].cutoffs: every value must be ≥ 1 (as evaluate's --k), got 0"),
        ('correction = "bh"', "[grid].correction: 'bh' is not one of holm, fdr_bh, bonferroni, none"),
        ("bootstrap_resamples = 2000.0", "[grid].bootstrap_resamples: expected int, got 2000.0"),
        ("sole = 1", "[grid].sole: expected bool (true or false), got 1"),
    ],
)
def test_a_setting_out_of_bounds_is_refused_with_file_and_line(tmp_path, cocktail_dir, line, message):
    path = grid_with(tmp_path, cocktail_dir, line)
    with pytest.raises(DataError) as info:
        load_grid_config(path)
    assert f"{path}:{line_of(path, line)}: {message}" in str(info.value)


def test_a_retrievers_ray_resources_obey_their_bounds(tmp_path, cocktail_dir):
    path = tiny_grid_toml(tmp_path, cocktail_dir)
    path.write_text(path.read_text() + "gpus = -1\n")
    with pytest.raises(DataError) as info:
        load_grid_config(path)
    assert f"{path}:{line_of(path, 'gpus')}: retrievers[2].gpus: must be ≥ 0, got -1" in str(info.value)


@pytest.mark.parametrize("value", ["3", "0", "-1"])
def test_bench_refuses_a_bad_resample_count_before_any_cell(tmp_path, cocktail_dir, capsys, value):
    from sourcebias.cli.main import main

    path = grid_with(tmp_path, cocktail_dir, f"bootstrap_resamples = {value}")
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as code:
        main(["bench", str(path), "-o", str(out)])
    assert code.value.code != 0
    err = " ".join(capsys.readouterr().err.split())  # rich may wrap the line
    assert f"grid.toml:{line_of(path, 'bootstrap_resamples')}: [grid].bootstrap_resamples: must be ≥ 100" in err
    assert not out.exists()  # no grid folder, so no cell folder either


# -- where a key is, and what was meant -------------------------------------------------------------
def test_an_unknown_key_names_its_line_and_the_key_meant(tmp_path, cocktail_dir):
    path = tiny_grid_toml(tmp_path, cocktail_dir, 'primry = "NDCG@3"')
    with pytest.raises(DataError) as info:
        load_grid_config(path)
    assert f"{path}:{line_of(path, 'primry')}: [grid]: unknown key(s) primry (did you mean primary?); allowed: " in str(info.value)
    table = tiny_grid_toml(tmp_path, cocktail_dir, name="t.toml")
    table.write_text(table.read_text() + "\n[grdi]\nx = 1\n")
    with pytest.raises(DataError) as info:
        load_grid_config(table)
    assert f"{table}:{line_of(table, '[grdi]')}: top level: unknown key(s) grdi (did you mean grid?)" in str(info.value)
    far = tiny_grid_toml(tmp_path, cocktail_dir, 'orphns = "keep"', name="f.toml")
    with pytest.raises(DataError, match=r"unknown key\(s\) orphns \(did you mean orphans\?\)"):
        load_grid_config(far)
    none = tiny_grid_toml(tmp_path, cocktail_dir, "zzzz = 1", name="n.toml")
    with pytest.raises(DataError) as info:
        load_grid_config(none)
    assert "unknown key(s) zzzz; allowed" in str(info.value)  # no guess when nothing is close


def test_key_line_looks_inside_the_table_it_is_asked_about():
    text = '[[retrievers]]\nname = "a"\n[[retrievers]]\nname = "b"\n[grid]\n# name = "old"\nname = 5\n'
    assert key_line(text, "name", "grid") == 7
    assert key_line(text, "name", "retrievers", 2) == 4
    assert key_line(text, "name", "retrievers", 1) == 2
    assert key_line(text, "depth", "grid") is None
    assert key_line(text, "grid") == 5  # at the top level, a table's header


# -- one declaration: GridConfig, the hash, the statistics, the command's options, the docs ---------
def test_every_declared_setting_is_a_field_with_its_default(tmp_path, cocktail_dir):
    cfg = load_grid_config(tiny_grid_toml(tmp_path, cocktail_dir))
    for s in GRID_SETTINGS:
        assert s.name in GridConfig.__dataclass_fields__
    assert cfg.depth == 1000 and cfg.confidence == 0.95 and cfg.ndsr_k == 10 and cfg.correction == "holm" and cfg.orphans == "drop"
    assert set(cfg.settings()) == {"measures", "cutoffs", "depth", "seed", "sole", "significance_resamples", "orphans", "options"}
    assert cfg.statistics_settings() == {"significance_resamples": 200, "bootstrap_resamples": 200, "confidence": 0.95, "orphans": "drop", "ndsr_k": 10}


def test_the_statistics_settings_are_fields_of_the_statistics_context():
    from dataclasses import fields

    from sourcebias.evaluation.stats import StatContext

    assert {s.name for s in GRID_SETTINGS if s.context} <= {f.name for f in fields(StatContext)}


def test_declared_choices_and_defaults_are_the_evaluation_packages():
    from sourcebias.evaluation.measures import DEFAULT_CUTOFFS, DEFAULT_MEASURES
    from sourcebias.evaluation.stats import CORRECTIONS

    assert setting("correction").choices == tuple(CORRECTIONS)
    assert tuple(setting("measures").default) == DEFAULT_MEASURES and tuple(setting("cutoffs").default) == DEFAULT_CUTOFFS


def test_ndsr_k_of_the_grid_reaches_the_report(tmp_path, cocktail_dir):
    from sourcebias.experiments.aggregate import aggregate_grid
    from sourcebias.experiments.grid import run_grid

    cfg = load_grid_config(tiny_grid_toml(tmp_path, cocktail_dir, "ndsr_k = 3", retrievers=("bm25",)))
    run_grid(cfg, tmp_path / "out")
    assert set(aggregate_grid(cfg, tmp_path / "out")["delta_ndsr_k"]) == {3}


def test_option_kwargs_carry_the_bounds_and_help():
    assert option_kwargs("bootstrap_resamples") == {"help": "Resamples of the bootstrap CI of Relative Δ.", "min": 100}
    assert option_kwargs("confidence") == {"help": "Level of the bootstrap CI of Relative Δ.", "min": 0.5, "max": 0.999}
    assert option_kwargs("correction")["metavar"] == "holm|fdr_bh|bonferroni|none"
    with pytest.raises(KeyError):
        option_kwargs("nosuch")


def test_the_evaluate_commands_options_obey_the_declared_bounds():
    """evaluate's options of the grid's settings take the same bounds (min/max) as the grid."""
    import typer

    from sourcebias.cli.main import app

    command = typer.main.get_command(app).commands["evaluate"]
    params = {p.opts[0]: p for p in command.params if p.opts}
    checked = 0
    for s in GRID_SETTINGS:
        if s.type not in (int, float) or not s.option:
            continue
        option = params[s.option]
        assert (option.min, option.max) == (s.min, s.max), s.name
        checked += 1
    assert checked == 6  # depth, significance (--resamples), bootstrap, confidence, ndsr_k, seed


def test_the_reference_table_lists_every_setting_with_bounds_and_default():
    table = settings_markdown()
    rows = {line.split(" | ")[0].strip("| `"): line for line in table.splitlines()[2:]}
    assert set(rows) == {s.name for s in GRID_SETTINGS}
    assert "| `bootstrap_resamples` | int | `2000` | ≥ 100 | no | `--bootstrap-resamples` |" in rows["bootstrap_resamples"]
    assert "| `confidence` | float | `0.95` | 0.5 – 0.999 | no | `--confidence` |" in rows["confidence"]
    assert "| `significance_resamples` | int | `10000` | ≥ 100 | yes | `--resamples` |" in rows["significance_resamples"]
    assert '| `correction` | str | `"holm"` | holm, fdr_bh, bonferroni, none | no |' in rows["correction"]
    assert '| `measures` | list of str | `["NDCG", "MAP", "Recall", "P", "Share"]` | – | yes |' in rows["measures"]
    assert "| `cutoffs` | list of int | `[1, 3, 5, 10]` | ≥ 1 | yes |" in rows["cutoffs"]
    assert "| `seed` | int | `0` | – | yes | `--seed` |" in rows["seed"]


def test_the_docs_show_the_table_written_from_the_declarations():
    """The documentation's settings tables are the generated one (a marker the site's build hook
    replaces with settings_markdown()), so they cannot drift from the declarations."""
    from sourcebias.cli.reference import reference_markdown

    docs = Path(__file__).resolve().parents[2] / "docs"
    for page in ("guides/benchmark.md", "reference/grid-settings.md"):
        assert "<!-- reference: grid-settings -->" in (docs / page).read_text(encoding="utf-8"), page
    assert reference_markdown("grid-settings") == settings_markdown()


def test_a_dataset_path_may_be_a_known_dataset_name_as_on_the_command_line(tmp_path, monkeypatch):
    """`path = "nq-utd"` in a grid file is the built-in dataset (no such folder beside the file), as
    `sourcebias evaluate nq-utd` is; a folder of that name beside the file wins; a known dataset
    not downloaded yet is refused with the file, line and what to run."""
    from sourcebias.data.registry import KNOWN

    path = tmp_path / "grid.toml"
    path.write_text('[grid]\nmeasures = ["NDCG"]\ncutoffs = [3]\n\n[[datasets]]\npath = "nq-utd"\n\n[[retrievers]]\nspec = "bm25"\n', encoding="utf-8")
    cfg = load_grid_config(path)
    assert cfg.datasets[0].path == KNOWN["nq-utd"].builtin_path() and cfg.datasets[0].name == "nq-utd"
    (tmp_path / "nq-utd").mkdir()
    assert load_grid_config(path).datasets[0].path == (tmp_path / "nq-utd").resolve()
    monkeypatch.setenv("SOURCEBIAS_DATASETS", str(tmp_path / "none-yet"))
    path.write_text(path.read_text().replace('"nq-utd"', '"scifact"'), encoding="utf-8")
    with pytest.raises(DataError, match=r"grid.toml:6: .*sourcebias download scifact"):
        load_grid_config(path)
