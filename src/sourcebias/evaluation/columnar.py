"""Per-query values as Parquet (``per_query.parquet``), written and read with pyarrow.

The table has the columns of ``per_query.csv`` (``retriever, corpus, target, query_id, metric,
value``), one row per value, the four key columns and ``query_id`` dictionary-encoded, rows
grouped by key and ordered by the result's queries within a key. It opens in pandas, polars,
DuckDB or Spark as it is (``pandas.read_parquet("per_query.parquet")``).

The values are stored uncompressed (measure values hardly compress; reading them is then a
copy), the other columns zstd-compressed. Loading reads every column and takes each key from the
file's own cells: when the rows come in blocks of one key each, the blocks holding the result's
queries in order (as sourcebias writes them), the values are cut into vectors as they lie;
otherwise (rows reordered or rewritten by another tool) the dictionary codes give the rows of
each key, scattered into vectors over the result's queries. Either way a label edited in the file
(pandas, pyarrow) loads as edited, and a (key, query) pair on two rows is refused.
``benchmarks/bench_parquet_load.py`` times a 10-million-value folder.

This module knows tuples, not :class:`~sourcebias.evaluation.results.Key` (which imports it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sourcebias.core.errors import DataError

PARQUET_FILE = "per_query.parquet"
QUERY_COLUMN, VALUE_COLUMN = "query_id", "value"


def _key_columns(columns: Sequence[str]) -> list[str]:
    """The four key columns, in file order (the columns other than the query and the value)."""
    keys = [c for c in columns if c not in (QUERY_COLUMN, VALUE_COLUMN)]
    if len(keys) != 4 or len(columns) != 6:
        raise ValueError(f"expected four key columns, {QUERY_COLUMN} and {VALUE_COLUMN}, got {columns}")
    return keys


def write_per_query_parquet(
    path: str | Path, columns: Sequence[str], keys: Sequence[tuple[str, str, str, str]], vectors: Sequence[np.ndarray], query_ids: Sequence[str]
) -> Path:
    """Write the vectors (one per key, aligned with ``query_ids``) as a long Parquet table.

    Args:
        path: the file to write (atomically).
        columns: the file's column order: the four key fields (in the order of each key tuple),
            with ``query_id`` and ``value`` anywhere among them.
        keys: one tuple per vector.
        vectors: the values, each aligned with ``query_ids``.
        query_ids: the result's queries.

    Returns:
        The path written.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sourcebias.core.atomic import atomic_open

    nk, nq = len(keys), len(query_ids)
    rows = np.repeat(np.arange(nk), nq)
    arrays = {}
    for j, name in enumerate(_key_columns(columns)):
        labels = list(dict.fromkeys(k[j] for k in keys))
        code = {v: i for i, v in enumerate(labels)}
        codes = np.asarray([code[k[j]] for k in keys], dtype=np.int32)
        arrays[name] = pa.DictionaryArray.from_arrays(pa.array(codes[rows], type=pa.int32()), pa.array(labels, type=pa.string()))
    qcodes = np.tile(np.arange(nq, dtype=np.int32), nk)
    arrays[QUERY_COLUMN] = pa.DictionaryArray.from_arrays(pa.array(qcodes, type=pa.int32()), pa.array(list(query_ids), type=pa.string()))
    values = np.concatenate([np.asarray(v, dtype=np.float64) for v in vectors]) if nk else np.zeros(0)
    arrays[VALUE_COLUMN] = pa.array(values, type=pa.float64())
    table = pa.Table.from_arrays([arrays[c] for c in columns], names=list(columns))
    with atomic_open(path, "wb") as fh:
        pq.write_table(table, fh, compression={c: "none" if c == VALUE_COLUMN else "zstd" for c in columns})
    return Path(path)


def read_per_query_parquet(path: str | Path, columns: Sequence[str], query_ids: Sequence[str]) -> dict[tuple[str, str, str, str], np.ndarray]:
    """The vectors of a ``per_query.parquet``, keyed by the file's own labels.

    Args:
        path: the Parquet file.
        columns: the expected column names, in order (four key fields, ``query_id``, ``value``).
        query_ids: the result's queries.

    Returns:
        ``(retriever, corpus, target, metric)`` tuples (in file order) to vectors aligned with
        ``query_ids`` (NaN where a query has no row).

    Raises:
        DataError: naming the file, when it is missing or unreadable, its columns differ, a cell
            is empty, a query is not the result's, or a (key, query) pair has two rows.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise DataError(path, "missing: the per-query values of this result")
    key_columns = _key_columns(columns)
    try:
        table = pq.read_table(path, read_dictionary=[*key_columns, QUERY_COLUMN])
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(path, f"not a readable Parquet file ({exc})") from None
    if table.column_names != list(columns):
        raise DataError(path, f"expected the columns {','.join(columns)}, got {','.join(table.column_names)}")
    codes, labels = [], []
    for name in [*key_columns, QUERY_COLUMN]:
        col = table.column(name).combine_chunks()
        if not pa.types.is_dictionary(col.type):
            col = col.dictionary_encode()
        if col.null_count:
            raise DataError(path, f"column '{name}' has {col.null_count} empty cells")
        codes.append(col.indices.to_numpy(zero_copy_only=False))
        labels.append(col.dictionary.to_pylist())
    value_col = table.column(VALUE_COLUMN)
    if value_col.null_count:
        raise DataError(path, f"column '{VALUE_COLUMN}' has {value_col.null_count} empty cells")
    values = value_col.to_numpy().astype(np.float64, copy=False)
    blocks = _read_as_blocks(codes, labels, values, query_ids)
    if blocks is not None:
        return blocks
    qrow = _query_rows(path, labels[4], query_ids)[codes[4]]
    merged = [_merge_equal_labels(c, lab) for c, lab in zip(codes[:4], labels[:4])]
    return _scatter(path, [c for c, _ in merged], [lab for _, lab in merged], qrow, values, query_ids)


def _read_as_blocks(
    codes: list[np.ndarray], labels: list[list[str]], values: np.ndarray, query_ids: Sequence[str]
) -> dict[tuple[str, str, str, str], np.ndarray] | None:
    """The fast path, for the layout sourcebias writes: rows in blocks of ``len(query_ids)``, each
    block one key (read from its cells) over the result's queries in order. None when the file
    is laid out otherwise (or two blocks share a key), for the general path to read."""
    nq = len(query_ids)
    if nq == 0 or len(values) == 0 or len(values) % nq or labels[4] != list(query_ids):
        return None
    nk = len(values) // nq
    if not np.array_equal(codes[4].reshape(nk, nq), np.broadcast_to(np.arange(nq, dtype=codes[4].dtype), (nk, nq))):
        return None
    firsts = []
    for c in codes[:4]:
        block = c.reshape(nk, nq)
        if not (block == block[:, :1]).all():
            return None
        firsts.append(block[:, 0].tolist())
    keys = [tuple(labels[j][firsts[j][b]] for j in range(4)) for b in range(nk)]
    if len(set(keys)) != nk:
        return None
    return dict(zip(keys, values.reshape(nk, nq)))


def _merge_equal_labels(codes: np.ndarray, labels: list[str]) -> tuple[np.ndarray, list[str]]:
    """Codes (int64) over distinct labels: a dictionary edited by hand may hold a label twice."""
    distinct = list(dict.fromkeys(labels))
    if len(distinct) == len(labels):
        return codes.astype(np.int64), labels
    index = {v: i for i, v in enumerate(distinct)}
    return np.asarray([index[v] for v in labels], dtype=np.int64)[codes], distinct


def _query_rows(path: Path, names: list[str], query_ids: Sequence[str]) -> np.ndarray:
    index = {q: i for i, q in enumerate(query_ids)}
    unknown = [q for q in names if q not in index]
    if unknown:
        raise DataError(path, f"query '{unknown[0]}' is not among the result's queries ({len(unknown)} such)")
    return np.asarray([index[q] for q in names], dtype=np.int64)


def _scatter(
    path: Path, codes: list[np.ndarray], labels: list[list[str]], qrow: np.ndarray, values: np.ndarray, query_ids: Sequence[str]
) -> dict[tuple[str, str, str, str], np.ndarray]:
    """Each key's rows (found by sorting the key codes) scattered into a vector over the
    queries, keys in order of first appearance; a DataError when a (key, query) pair has more
    than one row."""
    out: dict[tuple[str, str, str, str], np.ndarray] = {}
    if len(values) == 0:
        return out
    nq = len(query_ids)
    key = np.ravel_multi_index(tuple(codes), tuple(max(len(x), 1) for x in labels))
    order = np.argsort(key, kind="stable")
    starts = np.concatenate(([0], np.flatnonzero(np.diff(key[order])) + 1))
    ends = np.append(starts[1:], len(key))
    for i in np.argsort(order[starts]).tolist():  # keys in file order (the sort is stable)
        rows = order[starts[i] : ends[i]]
        k = tuple(labels[j][codes[j][rows[0]]] for j in range(4))
        q = qrow[rows]
        seen = np.bincount(q, minlength=nq)
        if seen.max() > 1:
            raise DataError(path, f"{int((seen - 1).clip(0).sum())} rows repeat a query already given for {k}, e.g. query '{query_ids[int(seen.argmax())]}'")
        vec = out[k] = np.full(nq, np.nan)
        vec[q] = values[rows]
    return out
