"""The faster read paths of issue 28 give what the paths they replace gave.

- Parquet files (base files, Parquet blocks) read with their dictionary-encoded string
  columns as dictionaries, then cast (``read_parquet_table``), equal ``ParquetFile.read``:
  values, types, nulls, schema metadata, column subsets, dictionary pages that fall back to
  plain ones;
- the merge's key groups (Arrow's hash table) partition keys as the XXH64 groups do;
- the winners of each key (only keys that occur more than once are sorted; integer ordering
  values sorted as they are) equal a plain sort of every candidate;
- keeping the winners batch by batch equals ``Table.filter``;
- numpy <-> Arrow without ``pa.array``/``to_numpy`` gives the same arrays;
- a Parquet block's footer parsed once for the checksum check and the decode gives the
  verdicts of two parses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from morlog.logformat import xxh64
from morlog.logformat.arrow_sort import from_numpy, rank_nulls_first, to_numpy
from morlog.logformat.block_checksum import verify_block
from morlog.logformat.errors import ChecksumError
from morlog.logformat.parquet_content import (
    decode_parquet_content,
    dictionary_columns,
    parquet_file,
    read_parquet_table,
)
from morlog.readers import LogFileReader
from morlog.readers.merge import KEY, SEQ, _ord_name, _winners, keep_rows, key_groups

WORDS = st.text(alphabet=st.sampled_from("ab\u00e9\U0001f600z"), max_size=4)


@st.composite
def parquet_files(draw: st.DrawFn) -> tuple[bytes, list[str] | None]:
    """A Parquet file of string, binary, large string, integer and nested columns with
    nulls, several row groups, small dictionaries that may fall back to plain pages; and a
    column subset (None: all)."""
    n = draw(st.integers(0, 60))
    words = draw(st.lists(WORDS, min_size=1, max_size=80))

    def column(kind: str) -> pa.Array:
        vals = [None if draw(st.integers(0, 5)) == 0 else draw(st.sampled_from(words))
                for _ in range(n)]
        if kind == "binary":
            return pa.array([None if v is None else v.encode() for v in vals], pa.binary())
        return pa.array(vals, pa.large_string() if kind == "large" else pa.string())

    cols = {"s": column("string"), "low": pa.array([draw(st.sampled_from(["x", "y", None]))
                                                     for _ in range(n)], pa.string()),
            "b": column("binary"), "l": column("large"),
            "i": pa.array(draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n)),
                          pa.int64()),
            "nested": pa.array([{"t": None if i % 3 else "a"} for i in range(n)],
                               pa.struct([("t", pa.string())]))}
    table = pa.table(cols).replace_schema_metadata({"k": "v"})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=draw(st.integers(1, 64)),
                   use_dictionary=draw(st.sampled_from([True, False, ["s", "b"]])),
                   dictionary_pagesize_limit=draw(st.sampled_from([16, 64, 1 << 20])),
                   data_page_size=draw(st.sampled_from([16, 1 << 20])))
    subset = draw(st.one_of(st.none(), st.lists(st.sampled_from(list(cols)), unique=True)))
    return sink.getvalue().to_pybytes(), subset


@settings(max_examples=60, deadline=None)
@given(parquet_files())
def test_dictionary_reads_equal_plain_reads(case: tuple[bytes, list[str] | None]) -> None:
    data, columns = case
    want = pq.ParquetFile(pa.BufferReader(data)).read(columns=columns)
    got = read_parquet_table(pa.BufferReader(data), None, columns, validate=True)
    assert got.schema.equals(want.schema, check_metadata=True)
    assert got.equals(want)
    pf = parquet_file(data)
    assert decode_parquet_content(data, columns=columns, pf=pf).equals(want)
    assert decode_parquet_content(data, columns=columns).equals(want)
    for name in dictionary_columns(pf, columns):  # top-level strings and binaries only
        assert want.schema.field(name).type in (pa.string(), pa.binary(), pa.large_string())


def test_dictionary_columns_are_hudis_low_cardinality_meta_columns() -> None:
    t = pa.table({"_hoodie_commit_time": ["1"] * 100, "_hoodie_record_key": [str(i) for i in
                                                                           range(100)],
                  "low": ["a", "b"] * 50, "i": list(range(100))})
    sink = pa.BufferOutputStream()
    pq.write_table(t, sink, use_dictionary=["low", "i"])
    pf = pq.ParquetFile(pa.BufferReader(sink.getvalue()))
    assert dictionary_columns(pf) == ["_hoodie_commit_time"]
    assert dictionary_columns(pf, ["low"]) == []


def test_a_footer_whose_chunk_metadata_pyarrow_cannot_build_is_an_error_not_an_abort() -> None:
    """Damaged column-chunk metadata (here: a level histogram of the wrong size) makes
    pyarrow abort the process when Python looks at the chunk, and raise when it reads:
    the block's decode looks at no chunk metadata, so the damage is a library error."""
    import random

    from morlog.logformat.errors import MorlogError

    t = pa.table({"_hoodie_commit_time": ["20250101000000000"] * 300,
                  "k": [f"key{i}" for i in range(300)], "city": ["sf", "nyc", "la"] * 100,
                  "v": list(range(300))})
    sink = pa.BufferOutputStream()
    pq.write_table(t, sink, row_group_size=100)
    data = sink.getvalue().to_pybytes()
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    for seed in range(200):  # damaged footers: each decodes or raises a MorlogError
        rnd = random.Random(seed)
        damaged = bytearray(data)
        for _ in range(rnd.randint(1, 3)):
            damaged[rnd.randrange(footer, len(data) - 8)] = rnd.randrange(256)
        try:
            decode_parquet_content(bytes(damaged))
        except MorlogError:
            pass


def test_damaged_utf8_in_a_dictionary_is_a_content_error() -> None:
    """The UTF-8 check still runs when the string column is read as a dictionary."""
    from morlog.logformat.errors import ContentError

    t = pa.table({"_hoodie_file_name": ["good\u00e9"] * 20})
    sink = pa.BufferOutputStream()
    pq.write_table(t, sink, compression="none", use_dictionary=True)
    data = bytearray(sink.getvalue().to_pybytes())
    at = bytes(data).index("good\u00e9".encode())
    data[at + 4] = 0xFF  # the first byte of the two-byte e-acute: not UTF-8 any more
    pf = pq.ParquetFile(pa.BufferReader(bytes(data)))
    assert dictionary_columns(pf) == ["_hoodie_file_name"]
    with pytest.raises(ContentError, match="does not decode"):
        decode_parquet_content(bytes(data))


KEY_LISTS = st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "c", "\u00e9", "", "dd"])),
                     max_size=40)


@settings(max_examples=100, deadline=None)
@given(KEY_LISTS, st.integers(1, 3))
def test_key_groups_partition_keys_as_the_xxh64_groups_do(keys: list[str | None],
                                                          chunks: int) -> None:
    arr = pa.array(keys, pa.string())
    cut = len(keys) // chunks
    chunked = pa.chunked_array([arr.slice(i * cut, cut if i < chunks - 1 else None)
                                for i in range(chunks)] if keys else [arr], pa.string())
    got = key_groups(chunked)
    want = xxh64.key_groups(arr)
    assert got.dtype == np.int64 and len(got) == len(keys)
    # the same partition: equal group numbers exactly where the other's are equal
    assert ((got[:, None] == got[None, :]) == (want[:, None] == want[None, :])).all()


ORDER_TYPES = st.sampled_from([pa.int64(), pa.int32(), pa.float64(), pa.string(),
                               pa.timestamp("ms")])


@st.composite
def candidates(draw: st.DrawFn) -> tuple[pa.Table, int]:
    n = draw(st.integers(1, 40))
    n_ord = draw(st.integers(0, 2))
    keys = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=n, max_size=n))
    seq = draw(st.permutations(list(range(n))))
    cols: dict[str, Any] = {KEY: pa.array(keys, pa.string()), SEQ: pa.array(seq, pa.int64())}
    for i in range(n_ord):
        t = draw(ORDER_TYPES)
        nulls = draw(st.booleans())
        vals = [None if nulls and draw(st.integers(0, 3)) == 0 else draw(st.integers(-2, 2))
                for _ in range(n)]
        if pa.types.is_string(t):
            arr = pa.array([None if v is None else str(v + 5) for v in vals], t)
        else:
            arr = pa.array(vals, pa.int64()).cast(t)
        cols[_ord_name(i)] = arr
    table = pa.table(cols)
    cut = draw(st.integers(0, n))  # two chunks, as the merge's candidates have several
    return pa.concat_tables([table.slice(0, cut), table.slice(cut)]), n_ord


def _winners_by_full_sort(cand: pa.Table, n_ord: int) -> np.ndarray:
    """Every candidate sorted by (key, ordering values nulls first, SEQ): each key's last."""
    keys = pc.dictionary_encode(cand.column(KEY).combine_chunks()).indices.to_numpy()
    sort_cols = [cand.column(SEQ).to_numpy()]
    for i in reversed(range(n_ord)):
        sort_cols.append(rank_nulls_first(cand.column(_ord_name(i)).combine_chunks()
                                          ).to_numpy())
    sort_cols.append(keys)
    o = np.lexsort(sort_cols)
    k = keys[o]
    last = np.ones(len(o), dtype=bool)
    last[:-1] = k[:-1] != k[1:]
    win = np.zeros(len(o), dtype=bool)
    win[o[last]] = True
    return win


@settings(max_examples=150, deadline=None)
@given(candidates())
def test_winners_equal_a_full_sort_of_every_candidate(case: tuple[pa.Table, int]) -> None:
    """The fast path (a key seen once wins without sorting; integer ordering values used as
    they are) against the general one (every candidate sorted, ordering values ranked)."""
    cand, n_ord = case
    assert (_winners(cand, n_ord) == _winners_by_full_sort(cand, n_ord)).all()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=5), st.data())
def test_keep_rows_equals_filter(sizes: list[int], data: st.DataObject) -> None:
    parts = [pa.table({"k": pa.array([f"r{j}" for j in range(n)], pa.string()),
                       "v": pa.array(list(range(n)), pa.int64())}) for n in sizes]
    table = pa.concat_tables(parts)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=table.num_rows,
                                       max_size=table.num_rows)), dtype=bool)
    got = keep_rows(table, mask)
    want = table.filter(pa.array(mask, pa.bool_()))
    assert got.schema == want.schema and got.equals(want)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([np.int64, np.int32, np.uint8, np.float64, np.bool_]),
       st.lists(st.integers(0, 100), max_size=30), st.integers(0, 5))
def test_numpy_arrow_conversions_equal_pyarrows(dtype: Any, values: list[int],
                                                offset: int) -> None:
    arr = np.asarray(values).astype(dtype)
    got = from_numpy(arr)
    assert got.equals(pa.array(arr))
    sliced = got.slice(min(offset, len(got)))
    back = to_numpy(sliced)
    assert back.dtype == sliced.to_numpy(zero_copy_only=False).dtype
    assert (back == sliced.to_numpy(zero_copy_only=False)).all()
    assert (to_numpy(pa.chunked_array([got, got], got.type)) == np.concatenate([arr, arr])
            ).all()
    # with nulls: what to_numpy gives (floats, NaN for null)
    assert np.isnan(to_numpy(pa.array([1, None], pa.int64()))[1])


def test_parquet_block_footer_parsed_once_gives_the_same_verdicts(tmp_path: Path) -> None:
    """``verify_block`` with the block's opened file equals it without, for an intact and a
    damaged block; a block's decode after its check reads the same rows as a fresh one."""
    from .test_indexed import _written_blocks

    path, blocks = _written_blocks(tmp_path, "parquet")
    data = path.read_bytes()
    b = blocks[1]
    head = data[b.offset + 14 : b.content_offset]
    content = data[b.content_offset : b.content_offset + b.content_length]
    assert verify_block(int(b.block_type), head, content) is True
    assert verify_block(int(b.block_type), head, content, parquet=parquet_file(content))
    damaged = bytearray(content)
    damaged[40] ^= 0x01
    for pf in (None, parquet_file(bytes(damaged))):
        with pytest.raises(ChecksumError):
            verify_block(int(b.block_type), head, bytes(damaged), parquet=pf)
    with LogFileReader(str(path)) as r:
        fresh = [x for x in r.blocks() if x.block_type.is_data]
        assert fresh[1].verify() is True
        assert fresh[1].to_arrow().equals(blocks[1].to_arrow())


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.binary(min_size=0, max_size=150), st.data())
def test_long_value_search_equals_bytes_find(data: bytes, value: bytes,
                                             draw: st.DataObject) -> None:
    """The footer search of the checksum check (a long value found by its first bytes)
    equals ``bytes.find`` in every window, also with near-misses of the value planted."""
    from morlog.logformat.block_checksum import _find_long

    planted = data
    if value and draw.draw(st.booleans()):
        cut = draw.draw(st.integers(0, len(value)))
        planted = data + value[:cut] + value + data
    start = draw.draw(st.integers(0, len(planted)))
    end = draw.draw(st.integers(start, len(planted)))
    assert _find_long(planted, value, start, end) == planted.find(value, start, end)
