"""Per-query values as Parquet: written when asked, read back by load_result into an equal result,
and readable by pandas/pyarrow as the same table as per_query.csv."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sourcebias as sb
from sourcebias.core.errors import ConfigError, DataError


@pytest.fixture
def tiny_result(cocktail_dir):
    ds = sb.load_dataset(cocktail_dir, split="test")
    return sb.evaluate(ds, [sb.build_retriever("bm25"), sb.build_retriever("tfidf")], measures=sb.measure_grid(["NDCG", "Share"], [1, 3]), depth=10)


def test_parquet_folder_loads_back_equal(tiny_result, tmp_path):
    share = next(k for k in tiny_result.per_query if k.measure == "Share@1")
    tiny_result.per_query[share][0] = np.nan  # an undefined value (Share@k of an empty list) is kept
    folder = tiny_result.save(tmp_path / "out", format="parquet")
    assert (folder / "per_query.parquet").is_file() and not (folder / "per_query.csv").exists()
    loaded = sb.load_result(folder)
    assert loaded == tiny_result
    assert np.isnan(loaded.per_query[share][0])
    # the same rows, read by pandas itself, as the CSV would hold
    theirs = pd.read_parquet(folder / "per_query.parquet")
    ours = tiny_result.to_pandas(per_query=True)
    assert list(theirs.columns) == list(ours.columns)
    pd.testing.assert_frame_equal(theirs.astype(dict.fromkeys(theirs.columns[:5], str)), ours, check_dtype=False)


def test_csv_and_parquet_folders_hold_the_same_values(tiny_result, tmp_path):
    a = sb.load_result(tiny_result.save(tmp_path / "csv"))
    b = sb.load_result(tiny_result.save(tmp_path / "pq", format="parquet"))
    assert a == b


def test_rows_in_any_order_read_back_the_same(tiny_result, tmp_path):
    folder = tiny_result.save(tmp_path / "out", format="parquet")
    table = pq.read_table(folder / "per_query.parquet")
    shuffled = table.take(pa.array(np.random.default_rng(0).permutation(table.num_rows)))
    pq.write_table(shuffled, folder / "per_query.parquet")
    loaded = sb.load_result(folder)
    assert set(loaded.per_query) == set(tiny_result.per_query)
    for k, v in tiny_result.per_query.items():
        np.testing.assert_array_equal(loaded.per_query[k], v)


def test_a_query_that_is_not_the_results_is_refused(tiny_result, tmp_path):
    folder = tiny_result.save(tmp_path / "out", format="parquet")
    df = pd.read_parquet(folder / "per_query.parquet").astype({"query_id": str})
    df.loc[0, "query_id"] = "nope"
    df.to_parquet(folder / "per_query.parquet")
    with pytest.raises(DataError, match="query 'nope' is not among the result's queries"):
        sb.load_result(folder)


def test_unknown_format_is_refused(tiny_result, tmp_path):
    with pytest.raises(ConfigError, match="csv' or 'parquet'"):
        tiny_result.save(tmp_path / "out", format="feather")


def test_cli_format_parquet(cocktail_dir, tmp_path):
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "sourcebias",
        "evaluate",
        str(cocktail_dir),
        "-r",
        "bm25",
        "--metric",
        "NDCG",
        "--k",
        "1",
        "3",
        "--format",
        "parquet",
        "-o",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (out / "per_query.parquet").is_file() and not (out / "per_query.csv").exists()
    result = sb.load_result(out)
    ds = sb.load_dataset(cocktail_dir, split="test")
    expected = sb.evaluate(ds, [sb.build_retriever("bm25")], measures=sb.measure_grid(["NDCG"], [1, 3]))
    for k, v in expected.per_query.items():
        np.testing.assert_array_equal(result.per_query[k], v)
    bad = subprocess.run([*cmd[:-2], "-o", str(tmp_path / "x"), "--format", "xlsx"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--format must be csv or parquet" in bad.stdout + bad.stderr


def _as_pandas_holds(path):
    """The per-query vectors as the file holds them, read by pyarrow and pandas alone."""
    df = pq.read_table(path).to_pandas()
    df = df.astype(dict.fromkeys(("retriever", "corpus", "target", "query_id", "metric"), str))
    return {k: g.set_index("query_id")["value"] for k, g in df.groupby(["retriever", "corpus", "target", "metric"], sort=False)}


def _assert_loads_as_held(folder, query_ids):
    loaded = sb.load_result(folder)
    held = _as_pandas_holds(folder / "per_query.parquet")
    assert {tuple(k) for k in loaded.per_query} == set(held)
    for k, v in loaded.per_query.items():
        expected = held[tuple(k)].reindex(query_ids).to_numpy()
        np.testing.assert_array_equal(v, expected)
    return loaded


def test_a_target_label_edited_with_pyarrow_loads_as_edited(tiny_result, tmp_path):
    folder = tiny_result.save(tmp_path / "out", format="parquet")
    path = folder / "per_query.parquet"
    table = pq.read_table(path, read_dictionary=["target"])  # the schema metadata comes along
    col = table.column("target").combine_chunks()
    old = col.dictionary.to_pylist()
    renamed = pa.DictionaryArray.from_arrays(col.indices, pa.array([f"{old[0]}-edited", *old[1:]]))
    edited = table.set_column(table.column_names.index("target"), "target", renamed)
    assert edited.schema.metadata == table.schema.metadata
    pq.write_table(edited, path)
    loaded = _assert_loads_as_held(folder, tiny_result.query_ids)
    assert any(k.target == f"{old[0]}-edited" for k in loaded.per_query)
    assert not any(k.target == old[0] for k in loaded.per_query)


def test_one_cell_edited_with_pandas_loads_as_edited(tiny_result, tmp_path):
    folder = tiny_result.save(tmp_path / "out", format="parquet")
    path = folder / "per_query.parquet"
    df = pd.read_parquet(path).astype({"target": str})
    df.loc[3, "target"] = "renamed"
    df.to_parquet(path)
    loaded = _assert_loads_as_held(folder, tiny_result.query_ids)
    assert sum(k.target == "renamed" for k in loaded.per_query) == 1


def test_rows_reversed_read_back_the_same(tiny_result, tmp_path):
    folder = tiny_result.save(tmp_path / "out", format="parquet")
    table = pq.read_table(folder / "per_query.parquet")
    pq.write_table(table.take(pa.array(np.arange(table.num_rows)[::-1])), folder / "per_query.parquet")
    loaded = _assert_loads_as_held(folder, tiny_result.query_ids)
    assert set(loaded.per_query) == set(tiny_result.per_query)
    assert all(np.array_equal(loaded.per_query[k], v, equal_nan=True) for k, v in tiny_result.per_query.items())


def test_a_key_and_query_given_twice_is_refused(tiny_result, tmp_path):
    folder = tiny_result.save(tmp_path / "out", format="parquet")
    path = folder / "per_query.parquet"
    df = pd.read_parquet(path).astype({"metric": str})
    metrics = df["metric"].unique()
    df.loc[df["metric"] == metrics[1], "metric"] = metrics[0]  # two blocks now claim one key
    df.to_parquet(path)
    with pytest.raises(DataError, match=r"per_query.parquet.*rows repeat a query already given"):
        sb.load_result(folder)
