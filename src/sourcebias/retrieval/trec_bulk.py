"""A TREC run read in bulk with pyarrow's CSV reader, for files without a fault.

:func:`~sourcebias.retrieval.formats.read_trec` reads a run line by line so that every fault is
reported with its line (about 3 µs a line: reading back a result of 10,000 documents and 324
queries took longer than computing it; a run of MS MARCO's size, about a minute). This reader
takes the common case, a clean file, in bulk (pyarrow's parser, then numpy); it gives up (``None``)
at anything it cannot vouch for, and the line-by-line reader then reads the file and names the
fault's line. It accepts only files that reader accepts, and returns the same values:

* fields split on single spaces, or single tabs in a file without spaces: a line of other than six
  fields so split, or with an empty field, is given up (several spaces in a row, a space at the
  start or end of a line), as is a carriage return that does not end a line, a query id, ``Q0``
  or tag that holds any whitespace (``str.split`` splits on tabs, vertical tabs, form feeds,
  0x1c-0x1f and non-ASCII spaces), and a document name no document has (names never hold
  whitespace: :class:`~sourcebias.retrieval.docnos.DocnoMap`); a rank or score holding one does
  not convert;
* a rank or score that pyarrow does not read as an integer or a float. pyarrow reads decimal
  floats correctly rounded, as Python's ``float`` does, so a score reads back to the same value;
  its "inf" and "-Infinity" are Python's too; a NaN score (pyarrow reads "nan(1)", Python does
  not) and what Python reads and pyarrow does not ("1_0", "+1", non-ASCII digits) go to the
  line-by-line reader;
* a document listed twice for a query, or (``order="rank"``) a rank used twice;
* bytes that are not UTF-8, a cut-off ``.gz``.

pyarrow is an optional dependency (the ``analysis`` extra): without it every run is read line by
line, to the same values.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.retrieval.docnos import WHITESPACE, DocnoMap

#: a file smaller than this is read line by line (pyarrow's import costs about as much as such a
#: file does line by line)
MIN_BYTES = 1 << 20
_BOM = b"\xef\xbb\xbf"

#: bytes pyarrow parses per block (its default): a column comes back in chunks of this many bytes of lines
BLOCK_BYTES = 1 << 20

PerQuery = dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]


def worth_it(path: Path) -> bool:
    """Whether the bulk reader is worth trying on ``path`` (see :data:`MIN_BYTES`)."""
    try:
        return path.stat().st_size >= MIN_BYTES
    except OSError:
        return False


def read_trec_bulk(path: Path, docnos: DocnoMap, order: str) -> tuple[PerQuery, int] | None:
    """Per query (in order of first appearance), the listed corpus positions, scores and ranks in
    the file's order; and the number of entries. ``None`` where pyarrow is not installed, or the
    file has a fault or anything this reader does not vouch for (see the module)."""
    try:
        import pyarrow.compute as pc
    except ImportError:
        return None
    data = _clean_bytes(path)
    if data is None:
        return None
    table = _parse(data, b"\t" if b" " not in data else b" ")
    del data  # the table holds its own copy: the file's bytes are not kept beside it
    if table is None or table.num_rows == 0:
        return None
    for col in ("z", "t"):  # Q0 and the tag: a few distinct texts; empty where two delimiters meet
        if any(u == "" or WHITESPACE.search(u) for u in pc.unique(table[col]).to_pylist()):
            return None
    q, qids = _codes(table["q"])
    if q is None or any(WHITESPACE.search(u) for u in qids):
        return None
    d, names = _codes(table["d"])
    found = [docnos.position(u) for u in names]
    if d is None or any(pos is None for pos in found):
        return None
    p = np.asarray(found, dtype=np.int64)[d]
    s = table["s"].to_numpy()
    r = table["r"].to_numpy()
    per_query = _group(q, p, s, r, qids, order)
    return (per_query, len(q)) if per_query is not None else None


def _clean_bytes(path: Path) -> bytes | None:
    """The file's bytes (``.gz`` decompressed, a byte-order mark removed); None where it cannot be
    read or holds a carriage return that does not end a line."""
    try:
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    if b"\r" in data and data.count(b"\r") != data.count(b"\r\n"):  # pyarrow ends a line there; str.split splits a field
        return None
    return data


def _parse(data: bytes, delimiter: bytes) -> Any:
    """The six columns (q, z, d, r, s, t) as a pyarrow table; None at a parse or conversion error."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    try:
        table = pcsv.read_csv(
            pa.py_buffer(data),
            read_options=pcsv.ReadOptions(column_names=list("qzdrst"), block_size=BLOCK_BYTES),
            parse_options=pcsv.ParseOptions(delimiter=delimiter.decode(), quote_char=False, escape_char=False, ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(
                # ranks as text: pyarrow reads "0x10" as 16, Python's int refuses it (checked below)
                column_types={"q": pa.string(), "z": pa.string(), "d": pa.string(), "r": pa.string(), "s": pa.float64(), "t": pa.string()},
                null_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                check_utf8=True,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowException):
        return None
    if pc.any(pc.is_nan(table["s"])).as_py():  # pyarrow reads "nan(1)" too, Python's float does not: NaN goes line by line
        return None
    ranks = table["r"]
    if not pc.all(pc.ascii_is_decimal(ranks)).as_py():  # ASCII digits, which Python's int reads too ("-1", "+1", "1_0", "٣" go line by line)
        return None
    try:
        return table.set_column(3, "r", pc.cast(ranks, pa.int64()))
    except (pa.ArrowInvalid, pa.ArrowException):  # past int64
        return None


def _codes(column: Any) -> tuple[np.ndarray | None, list[str]]:
    """The column's codes (into its distinct texts in order of first appearance) and those texts;
    ``(None, [])`` where a text is empty."""
    import pyarrow as pa

    # encoded chunk by chunk (no copy of the whole column), then one dictionary for all chunks
    encoded = pa.table({"c": column.dictionary_encode()}).unify_dictionaries()["c"]
    if encoded.num_chunks == 0:
        return None, []
    texts = encoded.chunk(0).dictionary.to_pylist()
    if any(t == "" for t in texts):
        return None, []
    return np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in encoded.chunks]).astype(np.int64), texts


def _group(q: np.ndarray, p: np.ndarray, s: np.ndarray, r: np.ndarray, qids: list[str], order: str) -> PerQuery | None:
    """Split the entries by query (file order kept within one); None where a query lists a
    document twice, or (``order="rank"``) uses a rank twice."""
    if len(q) > 1 and (q[1:] < q[:-1]).any():  # a query's lines not together: gather them (file order kept)
        idx = np.argsort(q, kind="stable")
        q, p, s, r = q[idx], p[idx], s[idx], r[idx]
    if _repeats(q, p) or (order == "rank" and _repeats(q, r)):
        return None
    bounds = np.flatnonzero(np.diff(q)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [len(q)]])
    return {qids[q[a]]: (p[a:b], s[a:b], r[a:b]) for a, b in zip(starts.tolist(), ends.tolist())}


def _repeats(q: np.ndarray, values: np.ndarray) -> bool:
    """Whether a value repeats within a query (``q`` sorted)."""
    lo, hi = int(values.min()), int(values.max())
    if (hi - lo + 1) * (int(q.max()) + 1) < 2**62:  # one integer key per entry: a plain sort
        keys = np.sort(q * (hi - lo + 1) + (values - lo))
        return bool((keys[1:] == keys[:-1]).any())
    o = np.lexsort((values, q))
    q, values = q[o], values[o]
    return bool(((q[1:] == q[:-1]) & (values[1:] == values[:-1])).any())
