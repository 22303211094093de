"""Per-block column statistics (spec/index.md §4.11, §7.6): the COLUMN_STATS section, what
the writers store, and the filter-order ranges of blocks, base files and the metadata table.

The oracle of these tests is a plain Python reduction over ``to_pylist()`` values (strings
compared by their UTF-8 bytes, floats with NaN excluded): independent of the pyarrow
kernels the library uses.
"""

from __future__ import annotations

import decimal
import math
import os
import struct
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.avroschema import arrow_to_avro_schema
from morlog.logformat.column_stats_section import (
    MAX_BOUND_BYTES,
    ColumnStats,
    ColumnStatsSection,
    StatsColumns,
    StatsType,
    compute_column_stats,
    stats_type_of,
)
from morlog.logformat.constants import BlockType
from morlog.logformat.errors import ContentError, LengthError, UnusableIndexWarning, UsageError
from morlog.readers import LogFileReader
from morlog.readers.block_stats import (
    base_file_ranges,
    block_ranges,
    filter_ranges,
    mdt_ranges,
    stored_column_stats,
)
from morlog.readers.column_stats import ColumnRange, merge_records
from morlog.readers.storage import LocalStorage
from morlog.readers.table import Table
from morlog.writers.core.indexed import IndexedLogWriter

from .hudi_fixtures import MDT_TABLES, fixture_id, fixture_table, log_files, requires_fixtures
from .hudi_fixtures import tables as fixture_tables

BASE = "20250101000000000"
KEY = "_hoodie_record_key"

# --- the oracle -----------------------------------------------------------------------------


def _key(v: Any) -> Any:
    return v.encode("utf-8") if isinstance(v, str) else v


def oracle(arr: pa.Array | pa.ChunkedArray) -> tuple[Any, Any, int, int]:
    """(min, max, nulls, rows) in filter order by a Python loop; min/max None: no bounds;
    floats: bounds of the values that are not NaN."""
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.cast(t.value_type)
        t = arr.type
    if pa.types.is_timestamp(t) and t.unit == "s":  # seconds are kept as milliseconds
        arr = arr.cast(pa.timestamp("ms", t.tz))
        t = arr.type
    if pa.types.is_temporal(t):
        arr = arr.cast(pa.int32() if t.bit_width == 32 else pa.int64())
    values = arr.to_pylist()
    present = [v for v in values if v is not None]
    nulls = len(values) - len(present)
    if not present or pa.types.is_nested(t) or pa.types.is_null(t):
        return None, None, nulls, len(values)
    present = [v for v in present if not (isinstance(v, float) and math.isnan(v))]
    if not present:  # only NaN
        return None, None, nulls, len(values)
    ordered = sorted(present, key=_key)
    lo, hi = ordered[0], ordered[-1]
    if isinstance(lo, (str, bytes)):
        if max(len(_key(lo)), len(_key(hi))) > MAX_BOUND_BYTES:
            return None, None, nulls, len(values)
    return lo, hi, nulls, len(values)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b  # -0.0 == 0.0 in filter order
    return bool(a == b)


def check_against_oracle(ranges: dict[str, ColumnRange], table: pa.Table) -> None:
    for name, r in ranges.items():
        if name not in table.column_names:
            assert r.null_count == r.value_count == table.num_rows, name
            continue
        lo, hi, nulls, rows = oracle(table.column(name))
        assert (r.null_count, r.value_count) == (nulls, rows), name
        assert _same(r.min, lo) and _same(r.max, hi), (name, r.min, r.max, lo, hi)
        if pa.types.is_floating(table.schema.field(name).type):
            nans = sum(1 for v in table.column(name).to_pylist()
                       if v is not None and math.isnan(v))
            assert r.nan_count == nans, name


# --- random tables --------------------------------------------------------------------------

_TEXT = st.text(st.characters(codec="utf-8", categories=("L", "N", "S", "Co", "Zs")) |
                st.sampled_from(["\ue000", "\uffff", "\U0001f600", "\U00010000", "a"]),
                max_size=6)
_LONG_TEXT = st.text(st.sampled_from("ab\U0001f600"), min_size=70, max_size=90)
_F64 = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0])
_F32 = st.floats(width=32, allow_nan=True) | st.sampled_from([0.0, -0.0])
_DEC = st.decimals(min_value=-10**6, max_value=10**6, places=2, allow_nan=False,
                   allow_infinity=False)
_DEC_WIDE = st.decimals(min_value=-10**24, max_value=10**24, places=5, allow_nan=False,
                        allow_infinity=False)
#: name -> (Arrow type, value strategy); the values a block of that column can hold
COLUMN_KINDS: dict[str, tuple[pa.DataType, st.SearchStrategy[Any]]] = {
    "b": (pa.bool_(), st.booleans()),
    "i32": (pa.int32(), st.integers(-2**31, 2**31 - 1)),
    "i64": (pa.int64(), st.integers(-2**63, 2**63 - 1)),
    "f32": (pa.float32(), _F32),
    "f64": (pa.float64(), _F64),
    "s": (pa.string(), _TEXT),
    "long_s": (pa.string(), _TEXT | _LONG_TEXT),
    "bin": (pa.binary(), st.binary(max_size=5)),
    "fix": (pa.binary(3), st.binary(min_size=3, max_size=3)),
    "dec": (pa.decimal128(9, 2), _DEC),
    "dec_wide": (pa.decimal128(30, 5), _DEC_WIDE),
    "date": (pa.date32(), st.integers(-100_000, 100_000)),
    "tms": (pa.time32("ms"), st.integers(0, 86_399_999)),
    "tus": (pa.time64("us"), st.integers(0, 86_399_999_999)),
    "ts_utc": (pa.timestamp("us", tz="UTC"), st.integers(-2**55, 2**55)),
    "ts_local": (pa.timestamp("ms"), st.integers(-2**45, 2**45)),
    # narrower forms: the block decodes them to the tag's type (§4.11.2)
    "i8": (pa.int8(), st.integers(-128, 127)),
    "u16": (pa.uint16(), st.integers(0, 2**16 - 1)),
    "large_s": (pa.large_string(), _TEXT),
    "ts_s": (pa.timestamp("s", tz="UTC"), st.integers(-2**34, 2**34)),
}


def _column(t: pa.DataType, values: list[Any]) -> pa.Array:
    if pa.types.is_temporal(t):
        return pa.array(values, pa.int32() if t.bit_width == 32 else pa.int64()).cast(t)
    return pa.array(values, t)


@st.composite
def random_tables(draw: Callable[..., Any]) -> pa.Table:
    kinds = draw(st.lists(st.sampled_from(sorted(COLUMN_KINDS)), min_size=1, max_size=6,
                          unique=True))
    rows = draw(st.integers(1, 12))
    cols: dict[str, pa.Array] = {KEY: pa.array([f"k{i:03d}" for i in range(rows)])}
    for k in kinds:
        t, values = COLUMN_KINDS[k]
        nullable = draw(st.sampled_from([0.0, 0.3, 1.0]))
        vals = [None if draw(st.floats(0, 1)) < nullable else draw(values)
                for _ in range(rows)]
        cols[k] = _column(t, vals)
    return pa.table(cols)


def _write(d: str, table: pa.Table, carrier: str, **kw: Any) -> list[Any]:
    w = IndexedLogWriter(d, "fg-0", BASE, write_token="0-1-1", fsync=False, **kw)
    if carrier == "avro":
        r = w.append_avro_arrow(table, arrow_to_avro_schema(table.schema), "20250101000000001")
    else:
        r = w.append_parquet(table, "20250101000000001")
    return [b for b in LogFileReader(r.path) if b.block_type in (BlockType.AVRO_DATA,
                                                                  BlockType.PARQUET_DATA)]


# --- the section ----------------------------------------------------------------------------


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(random_tables())
def test_section_round_trips_and_matches_the_oracle(table: pa.Table) -> None:
    section = compute_column_stats(table, table.column_names)
    assert ColumnStatsSection.decode(section.encode()) == section
    ranges = filter_ranges(table, table.column_names)
    check_against_oracle(ranges, table)
    for c in section.columns:  # -0.0 / 0.0 spelled one way
        if c.has_bounds and c.type_tag in (StatsType.FLOAT32, StatsType.FLOAT64,
                                           StatsType.FLOAT32_NANS, StatsType.FLOAT64_NANS):
            assert c.min != 0 or math.copysign(1, c.min) < 0
            assert c.max != 0 or math.copysign(1, c.max) > 0


def _valid_entries() -> st.SearchStrategy[ColumnStats]:
    def entry(tag: StatsType, values: st.SearchStrategy[Any], **params: Any
              ) -> st.SearchStrategy[ColumnStats]:
        @st.composite
        def build(draw: Callable[..., Any]) -> ColumnStats:
            name = draw(st.text(max_size=8))
            rows = draw(st.integers(1, 2**40))
            nulls = draw(st.integers(0, rows))
            if nulls < rows and draw(st.booleans()):
                a, b = sorted((draw(values), draw(values)), key=_key)
                return ColumnStats(name, int(tag), nulls, rows, a, b, **params)
            return ColumnStats(name, int(tag), nulls, rows, None, None, **params)
        return build()

    return st.one_of(
        entry(StatsType.BOOLEAN, st.booleans()),
        entry(StatsType.INT32, st.integers(-2**31, 2**31 - 1)),
        entry(StatsType.TIMESTAMP_NANOS, st.integers(-2**63, 2**63 - 1)),
        entry(StatsType.FLOAT64, st.floats(allow_nan=False)),
        entry(StatsType.FLOAT32, st.floats(width=32, allow_nan=False)),
        entry(StatsType.STRING, st.text(max_size=10)),
        entry(StatsType.BYTES, st.binary(max_size=10)),
        entry(StatsType.FIXED, st.binary(min_size=4, max_size=4), width=4),
        entry(StatsType.DECIMAL, st.decimals(-10**20, 10**20, places=4), precision=25,
              scale=4),
        entry(StatsType.OTHER, st.nothing()), entry(StatsType.NULL, st.nothing()),
        _nan_entries())


def _nan_entries() -> st.SearchStrategy[ColumnStats]:
    @st.composite
    def build(draw: Callable[..., Any]) -> ColumnStats:
        tag = draw(st.sampled_from([StatsType.FLOAT32_NANS, StatsType.FLOAT64_NANS]))
        rows = draw(st.integers(1, 2**40))
        nulls = draw(st.integers(0, rows - 1))
        nans = draw(st.integers(1, rows - nulls))
        if nans < rows - nulls and draw(st.booleans()):
            floats = st.floats(width=32 if tag == StatsType.FLOAT32_NANS else 64,
                               allow_nan=False)
            a, b = sorted((draw(floats), draw(floats)))
            return ColumnStats("n", int(tag), nulls, rows, a, b, nans=nans)
        return ColumnStats("n", int(tag), nulls, rows, nans=nans)
    return build()


@given(st.lists(_valid_entries(), max_size=6, unique_by=lambda c: c.name))
def test_any_valid_section_round_trips(entries: list[ColumnStats]) -> None:
    rows = max([c.value_count for c in entries], default=0)
    section = ColumnStatsSection(rows, tuple(entries))
    data = section.encode()
    assert ColumnStatsSection.decode(data) == section
    assert ColumnStatsSection.decode(data).encode() == data


_SAMPLE = compute_column_stats(pa.table({
    "s": ["a", "\U0001f600", None], "i": [1, None, 3], "d": pa.array(
        [decimal.Decimal("1.5"), None, decimal.Decimal("-2")], pa.decimal128(5, 1)),
    "x": pa.array([b"ab", b"cd", None], pa.binary(2)), "f": [0.5, -1.0, None]}),
    ["s", "i", "d", "x", "f"]).encode()


@given(st.one_of(
    st.binary(max_size=200),
    st.tuples(st.integers(0, len(_SAMPLE) - 1), st.integers(0, 255)).map(
        lambda p: _SAMPLE[:p[0]] + bytes([p[1]]) + _SAMPLE[p[0] + 1:]),
    st.integers(0, len(_SAMPLE)).map(lambda n: _SAMPLE[:n]),
    st.tuples(st.integers(0, len(_SAMPLE)), st.binary(min_size=1, max_size=9)).map(
        lambda p: _SAMPLE[:p[0]] + p[1] + _SAMPLE[p[0]:])))
def test_hostile_bytes_raise_only_typed_errors(data: bytes) -> None:
    try:
        got = ColumnStatsSection.decode(data, base=1000, path="fuzz")
    except (LengthError, ContentError) as exc:
        assert exc.path == "fuzz" and exc.offset is not None and exc.offset >= 1000
        return
    for c in got.columns:  # what decodes is consistent
        assert c.null_count <= c.value_count <= got.rows
        if c.has_bounds:
            assert c.known and _key(c.min) <= _key(c.max)


def test_float_columns_with_nan_keep_bounds_and_a_nan_count() -> None:
    """A float column holding NaN is written with the NaN tag: bounds of the numbers and
    the NaN count; readers turn the entries of both float tags into NaN counts."""
    t = pa.table({"a": pa.array([float("nan"), 99.99, None, -0.0], pa.float64()),
                  "b": pa.array([float("nan"), None], pa.float32()).take([0, 1, 0, 0]),
                  "c": pa.array([1.5, 2.5, None, 0.0], pa.float32())})
    section = compute_column_stats(t, ["a", "b", "c"])
    a, b, c = section.columns
    assert (a.type_tag, a.min, a.max, a.nans, a.nan_count) == (
        StatsType.FLOAT64_NANS, -0.0, 99.99, 1, 1)
    assert (b.type_tag, b.has_bounds, b.nan_count) == (StatsType.FLOAT32_NANS, False, 3)
    assert (c.type_tag, c.min, c.max, c.nan_count) == (StatsType.FLOAT32, -0.0, 2.5, 0)
    assert ColumnStatsSection.decode(section.encode()) == section
    r = filter_ranges(t, ["a", "b"])
    assert (r["a"].min, r["a"].max, r["a"].nan_count, r["a"].type) == (
        -0.0, 99.99, 1, pa.float64())
    assert (r["b"].min, r["b"].nan_count, r["b"].type) == (None, 3, pa.float32())
    # a section written before the NaN tags: a float column with values but no bounds
    # held NaN (count unknown); one with bounds held none
    old = ColumnStatsSection(4, (ColumnStats("a", int(StatsType.FLOAT64), 1, 4),
                                 ColumnStats("c", int(StatsType.FLOAT32), 1, 4, 0.5, 2.5)))
    got = {e.name: e for e in ColumnStatsSection.decode(old.encode()).columns}
    assert (got["a"].nan_count, got["c"].nan_count) == (None, 0)


@pytest.mark.parametrize(("nulls", "nans", "bounds", "message"), [
    (1, 0, False, "NaN count"), (1, 4, False, "NaN count"),
    (1, 3, True, "no non-null value that is not NaN")])
def test_nan_tag_entries_are_checked(nulls: int, nans: int, bounds: bool,
                                     message: str) -> None:
    e = ColumnStats("x", int(StatsType.FLOAT64_NANS), nulls, 4, *((1.0, 2.0) if bounds
                                                                   else (None, None)),
                    nans=nans)
    with pytest.raises(ContentError, match=message):
        ColumnStatsSection.decode(ColumnStatsSection(4, (e,)).encode())


def test_unknown_tags_keep_their_counts_only() -> None:
    good = ColumnStatsSection(2, (ColumnStats("a", int(StatsType.INT32), 0, 2, 1, 5),))
    raw = bytearray(good.encode())
    raw[12 + 4 + 1] = 200  # the type tag of column "a"
    got = ColumnStatsSection.decode(bytes(raw))
    (c,) = got.columns
    assert (c.type_tag, c.known, c.has_bounds, c.null_count, c.value_count) == (200, False,
                                                                                 False, 0, 2)
    r = filter_ranges(pa.table({"a": [1]}), ["a"])  # sanity: a known tag has bounds
    assert r["a"].min == 1


def test_bounds_longer_than_the_limit_are_dropped_not_truncated() -> None:
    t = pa.table({"s": ["a" * MAX_BOUND_BYTES, "b"], "t": ["a" * (MAX_BOUND_BYTES + 1), "b"],
                  "u": ["\U0001f600" * 64, "a"], "v": ["\U0001f600" * 65, "a"]})
    r = filter_ranges(t, t.column_names)
    assert (r["s"].min, r["s"].max) == ("a" * MAX_BOUND_BYTES, "b")
    assert r["t"].min is None and r["t"].max is None
    assert r["u"].max == "\U0001f600" * 64  # 256 bytes: kept
    assert r["v"].max is None  # 260 bytes: dropped


def test_decimals_outside_avros_range_have_no_bounds() -> None:
    assert stats_type_of(pa.decimal128(5, 7)) == (StatsType.OTHER, None)
    t = pa.table({"b": pa.array([decimal.Decimal("100")], pa.decimal128(5, -2))})
    section = compute_column_stats(t, ["b"])
    assert [c.type_tag for c in section.columns] == [StatsType.OTHER]
    assert ColumnStatsSection.decode(section.encode()) == section


def test_strings_and_bytes_in_unsigned_byte_order() -> None:
    t = pa.table({"s": ["\uffff", "\U00010000", "\ue000"], "b": [b"\x80", b"\x7f", b"\x80\x00"]})
    r = filter_ranges(t, ["s", "b"])
    assert (r["s"].min, r["s"].max) == ("\ue000", "\U00010000")  # UTF-16 order would differ
    assert (r["b"].min, r["b"].max) == (b"\x7f", b"\x80\x00")  # signed order would differ


def test_hudis_column_choice() -> None:
    schema = pa.schema([("_hoodie_commit_time", pa.string()), ("_hoodie_commit_seqno",
                        pa.string()), (KEY, pa.string()), ("_hoodie_partition_path", pa.string()),
                        ("_hoodie_file_name", pa.string()), ("a", pa.int64()),
                        ("n", pa.struct([("x", pa.int32())])), ("b", pa.string()),
                        ("c", pa.float64()), ("z", pa.null())])
    assert StatsColumns().select(schema) == ["_hoodie_commit_time", "_hoodie_partition_path",
                                             KEY, "a", "b", "c"]
    assert StatsColumns(max_columns=2).select(schema)[3:] == ["a", "b"]
    listed = StatsColumns.from_props({"hoodie.metadata.index.column.stats.column.list":
                                      "c, missing ,n,a,c"})
    assert listed.select(schema) == ["_hoodie_commit_time", "_hoodie_partition_path", KEY,
                                     "c", "a"]
    assert StatsColumns.from_props(
        {"hoodie.metadata.index.column.stats.max.columns.to.index": "1"}).max_columns == 1
    with pytest.raises(UsageError):
        StatsColumns.from_props({"hoodie.metadata.index.column.stats.max.columns.to.index":
                                 "many"})


# --- stored == recomputed --------------------------------------------------------------------


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(random_tables(), st.sampled_from(["avro", "parquet"]))
def test_stored_statistics_equal_recomputed_ones(table: pa.Table, carrier: str) -> None:
    """Every block morlog writes carries COLUMN_STATS; read from the section alone (no
    record decoded) they equal the statistics recomputed from the block's records and the
    oracle over the values written."""
    with tempfile.TemporaryDirectory() as d:
        (block,) = _write(d, table, carrier)
        stored = stored_column_stats(block)
        assert stored is not None and stored.rows == table.num_rows
        names = table.column_names
        assert [c.name for c in stored.columns] == StatsColumns().select(table.schema)
        got = block_ranges(block, columns=names)
        decoded = block.to_arrow()
        assert got == filter_ranges(decoded, names, os.path.basename(block.path or ""))
        check_against_oracle(got, table)


def test_stored_ranges_are_read_without_decoding_records(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    t = pa.table({KEY: [f"k{i}" for i in range(2000)], "v": list(range(2000)),
                  "s": [str(i) * 20 for i in range(2000)]})
    (block,) = _write(str(tmp_path), t, "avro")
    stats = block.source.stats
    stats.reset()

    def no_decode(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("records decoded")

    monkeypatch.setattr(type(block), "to_arrow", no_decode)
    got = block_ranges(block, columns=["v", "s", "absent"])
    assert (got["v"].min, got["v"].max) == (0, 1999)
    assert got["absent"].null_count == got["absent"].value_count == 2000  # not in the schema
    assert stats.reads == 1 and stats.bytes_read <= 16 * 1024  # one ranged read of the end


def test_columns_the_section_lacks_are_recomputed(tmp_path: Path) -> None:
    t = pa.table({KEY: ["a", "b"], "x": [3, 1], "y": ["q", None]})
    (block,) = _write(str(tmp_path), t, "avro", column_stats=StatsColumns(("x",)))
    stored = stored_column_stats(block)
    assert stored is not None and [c.name for c in stored.columns] == [KEY, "x"]
    got = block_ranges(block, columns=["x", "y"])
    assert (got["y"].min, got["y"].max, got["y"].null_count) == ("q", "q", 1)
    assert block_ranges(block).keys() == {KEY, "x"}  # None: the stored columns


def test_blocks_without_the_section_are_recomputed(tmp_path: Path) -> None:
    t = pa.table({KEY: ["a", "b", "c"], "x": [3.5, float("nan"), None], "y": [1, 2, 3]})
    for carrier in ("avro", "parquet"):
        d = tmp_path / carrier
        d.mkdir()
        (block,) = _write(str(d), t, carrier, column_stats=None)
        assert stored_column_stats(block) is None
        got = block_ranges(block)  # Hudi's default choice of columns
        assert set(got) == {KEY, "x", "y"}
        # NaN: bounds of the other values and a NaN count
        assert (got["x"].min, got["x"].max, got["x"].nan_count) == (3.5, 3.5, 1)
        assert got["x"].null_count == 1
        assert (got["y"].min, got["y"].max) == (1, 3)


def test_a_damaged_section_is_recomputed_with_a_warning(tmp_path: Path) -> None:
    t = pa.table({KEY: ["a", "b"], "x": [3, 1]})
    (block,) = _write(str(tmp_path), t, "avro")
    stored = stored_column_stats(block)
    assert stored is not None
    # flip a byte inside the section (found through the section table): its CRC fails
    path = block.path
    assert path is not None
    data = bytearray(Path(path).read_bytes())
    end = block.offset + block.size - 12
    t_len, n = struct.unpack_from("<QI", data, end - 32)
    table_at = end - 32 - 24 * n
    entries = [struct.unpack_from("<HHIQQ", data, table_at + 24 * i) for i in range(n)]
    ((_, _, _, off, length),) = [e for e in entries if e[0] == 6]  # COLUMN_STATS
    data[end - t_len + off + length - 3] ^= 0xFF
    Path(path).write_bytes(bytes(data))
    (damaged,) = [b for b in LogFileReader(path) if b.block_type == BlockType.AVRO_DATA]
    with pytest.warns(UnusableIndexWarning):
        got = block_ranges(damaged, columns=["x"])
    assert (got["x"].min, got["x"].max) == (1, 3)


def test_non_data_blocks_have_no_ranges(tmp_path: Path) -> None:
    w = IndexedLogWriter(tmp_path, "fg-0", BASE, write_token="0-1-1", fsync=False)
    t = pa.table({KEY: ["a"], "x": [1]})
    w.append_avro_arrow(t, arrow_to_avro_schema(t.schema), "20250101000000001")
    from morlog.logformat.delete_content import DeleteRecord

    w.append_delete([DeleteRecord("a", "")], "20250101000000002")
    r = w.append_rollback("20250101000000003", "20250101000000002")
    kinds = {b.block_type: block_ranges(b) for b in LogFileReader(r.path)}
    assert kinds[BlockType.DELETE] == {} and kinds[BlockType.COMMAND] == {}
    assert kinds[BlockType.AVRO_DATA]["x"].max == 1


def test_client_writes_carry_the_configured_columns(tmp_path: Path) -> None:
    from morlog.writers.client import MorTable
    from morlog.writers.options import WriteConfig

    schema = pa.schema([("id", pa.string()), ("region", pa.string()), ("ts", pa.int64()),
                        ("amount", pa.float64()), ("note", pa.string())])
    rows = pa.table({"id": ["a", "b"], "region": ["eu", "eu"], "ts": [1, 2],
                     "amount": [1.5, -0.0], "note": ["x", None]}, schema=schema)
    opts = {"hoodie.metadata.index.column.stats.column.list": "amount,ts"}
    for carrier in ("avro", "parquet"):
        path = tmp_path / carrier
        t = MorTable.create(str(path), schema, key_field="id", partition_field="region",
                            ordering_field="ts",
                            config=WriteConfig(carrier=carrier, fsync=False, new_groups="log",
                                               hoodie_options=dict(opts)))
        t.upsert(rows)
        t.upsert(rows.slice(0, 1))
        logs = [p for p in path.rglob("*.log.*")]
        assert logs
        seen = 0
        for log in logs:
            for b in LogFileReader(str(log)):
                if b.block_type not in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
                    continue
                stored = stored_column_stats(b)
                assert stored is not None
                assert [c.name for c in stored.columns] == [
                    "_hoodie_commit_time", "_hoodie_partition_path", KEY, "amount", "ts"]
                check_against_oracle(block_ranges(b), b.to_arrow())
                seen += 1
        assert seen == 2, carrier


# --- Hudi's fixtures -------------------------------------------------------------------------


def _fixture_blocks() -> list[Any]:
    out = []
    for p in log_files():
        for b in LogFileReader(str(p)):
            if b.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA) and \
                    not b.is_corrupt and b.record_count():
                out.append(pytest.param(str(p), b.offset, id=f"{fixture_id(p)}@{b.offset}"))
    return out


@requires_fixtures
@pytest.mark.parametrize(("path", "offset"), _fixture_blocks())
def test_fixture_blocks_are_recomputed_exactly(path: str, offset: int) -> None:
    """Hudi's blocks carry no COLUMN_STATS: their ranges are recomputed, equal to
    ``filter_ranges`` of the decoded records and to the oracle, for every column."""
    (block,) = [b for b in LogFileReader(path) if b.offset == offset]
    assert stored_column_stats(block) is None
    decoded = block.to_arrow()
    names = decoded.column_names + ["not_a_column"]
    got = block_ranges(block, columns=names)
    assert got == filter_ranges(decoded, names, os.path.basename(path))
    check_against_oracle(got, decoded)
    assert got["not_a_column"].null_count == got["not_a_column"].value_count == \
        decoded.num_rows


def _fixture_base_files() -> list[Any]:
    out = []
    for t in fixture_tables():
        for p in sorted(t.rglob("*.parquet")):
            if ".hoodie" not in p.parts:
                out.append(pytest.param(str(t), str(p), id=fixture_id(p)))
    return out


def _base_oracle_check(ranges: dict[str, ColumnRange], data: pa.Table,
                       arrow_schema: pa.Schema) -> None:
    for name, r in ranges.items():
        if name not in data.column_names:
            assert r.null_count == r.value_count == data.num_rows
            continue
        lo, hi, nulls, rows = oracle(data.column(name))
        assert (r.null_count, r.value_count) == (nulls, rows), name
        if pa.types.is_floating(arrow_schema.field(name).type):
            assert r.nan_count is None, name  # Hudi's writers record no NaN count
            if r.min is not None:  # the bounds hold every number (NaN left out)
                assert lo is not None and r.min <= lo and hi <= r.max, (name, r.min, lo)
        elif r.min is not None:  # footer bounds: exact for these writers
            assert _same(r.min, lo) and _same(r.max, hi), (name, r.min, lo, r.max, hi)


@requires_fixtures
@pytest.mark.parametrize(("table", "path"), _fixture_base_files())
def test_fixture_base_file_ranges_from_their_footers(table: str, path: str) -> None:
    schema = Table(table).arrow_schema()
    ranges = base_file_ranges(LocalStorage(), path, "parquet", schema, schema.names)
    data = pq.read_table(path)
    flat = {f.name for f in schema if not pa.types.is_nested(f.type)}
    assert set(ranges) == flat  # Hudi's writers keep null counts; nested columns: left out
    _base_oracle_check(ranges, data, schema)
    assert any(r.min is not None for r in ranges.values())


def test_base_file_ranges_rules(tmp_path: Path) -> None:
    p = str(tmp_path / "f.parquet")
    data = pa.table({"i": pa.array([5, None, -3, 9], pa.int64()),
                     "f": [1.0, float("nan"), 2.0, None],
                     "s": ["\ue000", "\U0001f600", None, "a"],
                     "u": pa.array([1, 2, 3, 4], pa.uint32()),
                     "ts": pa.array([1, 2, None, 4], pa.timestamp("us", tz="UTC")),
                     "dec": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-7.50"),
                                      None], pa.decimal128(12, 2))})
    pq.write_table(data, p, row_group_size=2)
    schema = pa.schema(list(data.schema) + [pa.field("later", pa.string())])
    r = base_file_ranges(LocalStorage(), p, "PARQUET", schema, schema.names + ["unknown"])
    assert (r["i"].min, r["i"].max, r["i"].null_count, r["i"].value_count) == (-3, 9, 1, 4)
    # floats: the row groups' bounds leave NaN out; no NaN count without morlog's key
    assert (r["f"].min, r["f"].max, r["f"].null_count, r["f"].nan_count) == (1.0, 2.0, 1, None)
    assert (r["s"].min, r["s"].max) == ("a", "\U0001f600")
    assert r["u"].min is None  # unsigned: no bounds
    assert (r["ts"].min, r["ts"].max) == (1, 4)
    assert (r["dec"].min, r["dec"].max) == (decimal.Decimal("-7.50"), decimal.Decimal("1.25"))
    assert r["later"].null_count == r["later"].value_count == 4  # the file lacks it
    assert "unknown" not in r  # not a column of the table
    # a table type other than the file's: no bounds
    other = pa.schema([pa.field("ts", pa.timestamp("ms", tz="UTC")), pa.field("i", pa.int32())])
    r2 = base_file_ranges(LocalStorage(), p, "parquet", other, ["ts", "i"])
    assert r2["ts"].min is None and r2["i"].min is None and r2["i"].null_count == 1
    # without statistics nothing is known
    q = str(tmp_path / "nostats.parquet")
    pq.write_table(data, q, write_statistics=False)
    assert base_file_ranges(LocalStorage(), q, "parquet", schema, ["i", "later"]) == {
        "later": ColumnRange("nostats.parquet", "later", None, None, 4, 4, 0, 0, pa.string())}
    assert base_file_ranges(LocalStorage(), p, "ORC", schema, ["i"]) == {}


# --- the metadata table ---------------------------------------------------------------------


def _stats(file: str, col: str, lo: Any, hi: Any, nulls: int = 0, values: int = 3,
           wrapper: str = "StringWrapper") -> dict[str, Any]:
    ns = "org.apache.hudi.avro.model."
    return {"fileName": file, "columnName": col,
            "minValue": None if lo is None else (ns + wrapper, {"value": lo}),
            "maxValue": None if hi is None else (ns + wrapper, {"value": hi}),
            "valueCount": values, "nullCount": nulls, "totalSize": 0,
            "totalUncompressedSize": 0, "isDeleted": False}


def test_mdt_ranges_keep_only_filter_order_bounds() -> None:
    types = {"s": pa.string(), "t": pa.string(), "u": pa.string(), "b": pa.binary(),
             "f": pa.float64(), "i": pa.int64(), "d": pa.date32()}
    recs = [_stats("f1", "s", "abc", "\ud7ff\u00e9"),  # below U+E000: kept
            _stats("f1", "t", "a", "\ue000"),  # U+E000: dropped
            _stats("f1", "u", "\U0001f600", "\U0001f601"),  # supplementary: dropped
            _stats("f1", "b", b"\x01", b"\x80", wrapper="BytesWrapper"),
            _stats("f1", "f", 1.0, 2.0, wrapper="DoubleWrapper"),
            _stats("f1", "i", 5, 9, nulls=1, wrapper="LongWrapper"),
            _stats("f2", "d", 10, 12, wrapper="DateWrapper"),
            _stats("f2", "i", "5", "9", wrapper="StringWrapper"),  # wrong kind: no bounds
            _stats("f2", "zz", 1, 2, wrapper="IntWrapper"),  # not a column
            {**_stats("f3", "i", 1, 2, wrapper="LongWrapper"), "isDeleted": True}]
    got = mdt_ranges(recs, types)
    assert set(got) == {"f1", "f2"}
    f1, f2 = got["f1"], got["f2"]
    assert (f1["s"].min, f1["s"].max) == ("abc", "\ud7ff\u00e9")
    for col in ("t", "u", "b"):
        assert f1[col].min is None and f1[col].max is None, col
        assert f1[col].value_count == 3
    assert "f" not in f1  # a base file's doubles: left to its footer
    log = ".fg-1_20250101000000001.log.1_0-1-1"
    got = mdt_ranges([_stats(log, "f", -0.0, 2.5, wrapper="DoubleWrapper"),
                      _stats(log + "x", "f", 1.0, float("nan"), wrapper="DoubleWrapper")],
                     {"f": pa.float64()})
    # a log file's doubles were reduced NaN-largest: a number as maximum means no NaN
    assert (got[log]["f"].min, got[log]["f"].max, got[log]["f"].nan_count) == (-0.0, 2.5, 0)
    assert (got[log + "x"]["f"].min, got[log + "x"]["f"].nan_count) == (None, None)
    assert (f1["i"].min, f1["i"].max, f1["i"].null_count) == (5, 9, 1)
    assert (f2["d"].min, f2["d"].max) == (10, 12)
    assert f2["i"].min is None and "zz" not in f2


def test_mdt_decimals_are_exact_at_any_precision() -> None:
    ns = "org.apache.hudi.avro.model."
    big = 10**29 + 1  # 30 digits: more than decimal's default context holds
    rec = {"fileName": "f", "columnName": "d", "valueCount": 1, "nullCount": 0,
           "minValue": (ns + "BytesWrapper", {"value": big.to_bytes(13, "big", signed=True)}),
           "maxValue": (ns + "BytesWrapper", {"value": big.to_bytes(13, "big", signed=True)}),
           "valueType": {"typeOrdinal": 10, "additionalInfo": "30,2"}}
    got = mdt_ranges([rec], {"d": pa.decimal128(30, 2)})["f"]["d"]
    assert got.min == got.max == decimal.Decimal(big).scaleb(-2, decimal.Context(prec=40))
    assert str(got.min) == "1000000000000000000000000000.01"


@requires_fixtures
@pytest.mark.parametrize("name", MDT_TABLES, ids=[n.split("/")[0] for n in MDT_TABLES])
def test_fixture_mdt_ranges_are_sound(name: str) -> None:
    """Every bound converted from Hudi's ``column_stats`` of a file still on disk contains
    that file's values in filter order."""
    from morlog.writers.client import MorTable
    from morlog.writers.mdt.writer import MetadataTable
    from morlog.writers.options import WriteConfig

    path = fixture_table(name)
    t = MorTable(str(path), WriteConfig(hoodie_options={
        "hoodie.metadata.index.secondary.enable": "false"}))
    mdt = MetadataTable(t.store, t.location, mode=t.mode)
    types = {f.name: f.type for f in Table(str(path)).arrow_schema()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranges = mdt_ranges(merge_records(mdt.partition_records("column_stats")).values(),
                            types)
    assert ranges
    checked = bounded = 0
    for file_name, cols in ranges.items():
        found = [p for p in path.rglob(file_name) if ".hoodie" not in p.parts]
        if not found:
            continue
        f = found[0]
        if file_name.endswith(".parquet"):
            data = pq.read_table(f)
        else:
            parts = [b.to_arrow() for b in LogFileReader(str(f))
                     if b.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA)]
            if not parts:
                continue
            data = pa.concat_tables(parts, promote_options="default")
        for col, r in cols.items():
            if col not in data.column_names:
                continue
            checked += 1
            if pa.types.is_binary(types[col]):
                assert r.min is None and r.max is None
            if pa.types.is_floating(types[col]):
                assert ".log." in file_name  # base files' doubles are left to the footer
                values = data.column(col).to_pylist()
                if r.nan_count == 0:
                    assert not any(v is not None and math.isnan(v) for v in values)
            if r.min is None:
                continue
            bounded += 1
            lo, hi, _n, _rows = oracle(data.column(col))
            assert lo is not None and _key(r.min) <= _key(lo) and _key(hi) <= _key(r.max), (
                file_name, col, r.min, lo, hi, r.max)
    assert checked and bounded
