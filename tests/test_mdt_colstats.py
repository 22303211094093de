"""The metadata table's ``column_stats``, ``partition_stats`` and ``bloom_filters`` partitions
kept true by every commit (spec/mdt.md §8-§11).

The judge is Hudi's own bytes: the statistics morlog computes for every data file of the
fixture tables must equal the records Hudi wrote for them (field by field and as encoded
Avro), and the partition statistics Hudi wrote at each commit must equal the merge of the
file statistics of the partition's latest file slices at that commit. After morlog's writes,
every live file has records equal to its recomputed statistics.
"""

from __future__ import annotations

import decimal
import io
import json
import os
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.blocks import delete_block
from morlog.logformat.constants import BlockType, HeaderKey
from morlog.logformat.errors import MorlogError
from morlog.logformat.framing import decode_blocks
from morlog.logformat.hfile.codec import decode_hfile
from morlog.logformat.hfile.content import decode_hfile_records, encode_hfile_records
from morlog.logformat.mdt_records import metadata_record_schema_json
from morlog.logformat.naming import DEFAULT_WRITE_TOKEN, LogFileName
from morlog.logformat.table_files import (
    PARTITION_METADATA_FILE,
    format_partition_metadata,
    parse_properties,
)
from morlog.readers import column_stats as cs
from morlog.readers.logfile import LogFileReader
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.core.logwriter import LogFileWriter
from morlog.writers.core.properties import update_properties
from morlog.writers.core.timeline import TimelineWriter
from morlog.writers.mdt import writer as mdt_writer
from morlog.writers.mdt.colstats import (
    BLOOM_FILTERS,
    COLUMN_STATS,
    PARTITION_STATS,
    BloomFiltersKeeper,
    ColumnStatsKeeper,
    PartitionStatsKeeper,
    column_stats,
)
from morlog.writers.mdt.keeper import CommitContext, key_to_file_group_index
from morlog.writers.mdt.writer import MetadataTable, metadata_location
from morlog.writers.options import WriteConfig

from .hudi_fixtures import MDT_TABLES, fixture_table
from .test_real_table_writes import _copy, _data, _hudi_rs, _later, _rows, write_three

#: only the secondary indexes (which morlog does not keep) are switched off
KEEP_STATS = {"hoodie.metadata.index.secondary.enable": "false"}
_NAMES = MDT_TABLES
_IDS = [n.split("/")[0] for n in _NAMES]


def _mdt(path: Path) -> MetadataTable:
    t = MorTable(str(path), WriteConfig(hoodie_options=KEEP_STATS))
    return MetadataTable(t.store, t.location, mode=t.mode)


def _v2(path: Path) -> bool:
    return Table(str(path)).version >= 9


def _columns(path: Path) -> list[str]:
    table = Table(str(path))
    rel = table.config.get(cs.INDEX_DEFS_PATH_KEY)
    idx = None
    if rel and (path / rel).is_file():
        idx = json.loads((path / rel).read_text())["indexDefinitions"].get(COLUMN_STATS)
    return cs.columns_to_index(table.config.props, table.config.get(
        "hoodie.table.create.schema") or "", idx, v2=_v2(path))


def _types(path: Path) -> dict[str, pa.DataType]:
    return {f.name: f.type for f in Table(str(path)).arrow_schema()}


def recompute(path: Path, partition: str, name: str, columns: list[str],
              instant: str | None = None) -> list[cs.ColumnRange]:
    """The ranges of one data file, from its own bytes (log files: the data blocks of
    ``instant``, default: the instant its name carries)."""
    full = path / partition / name
    if name.endswith(".parquet"):
        pf = pq.ParquetFile(full)
        return cs.parquet_ranges(pf.metadata, pf.schema_arrow, name, columns)
    instant = instant or LogFileName.parse(name).instant
    parts = [b.to_arrow() for b in LogFileReader(str(full))
             if b.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA)
             and b.header.get(HeaderKey.INSTANT_TIME) == instant]
    data = pa.concat_tables(parts, promote_options="default") if parts else pa.table({})
    return cs.table_ranges(data, name, columns, _types(path))


def _partition_of(path: Path, name: str) -> str | None:
    for part in Table(str(path)).partitions():
        if (path / part / name).is_file():
            return part
    return None


def _encode(stats: dict[str, Any], schema: str) -> bytes:
    rec = cs.metadata_record("k", 3, stats)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(json.loads(schema)), rec)
    return buf.getvalue()


def _column_stats_schema(path: Path) -> str:
    return _mdt(path).block_schema(COLUMN_STATS)


# --- Hudi's own records ---------------------------------------------------------------------


@pytest.mark.parametrize("name", _NAMES, ids=_IDS)
def test_fixture_column_stats_are_recomputed_byte_for_byte(name: str) -> None:
    """Every ``column_stats`` record Hudi wrote for a file still on disk equals the record
    morlog computes from the file: same key, same fields, same Avro bytes; and sits in the
    file group ``mapRecordKeyToFileGroupIndex`` names."""
    path = fixture_table(name)
    mdt = _mdt(path)
    recs = [r for r in mdt.partition_records(COLUMN_STATS) if "key" in r]
    assert recs
    columns = _columns(path)
    schema = _column_stats_schema(path)
    seen = 0
    for r in recs:
        theirs = r["ColumnStatsMetadata"]
        fname = theirs["fileName"]
        part = _partition_of(path, fname)
        if part is None:
            continue  # a file cleaned since
        mine = recompute(path, part, fname, [theirs["columnName"]])
        assert len(mine) == 1
        stats = cs.stats_metadata(mine[0], v2=_v2(path))
        assert cs.column_stats_key(theirs["columnName"], part, fname) == r["key"]
        assert stats == theirs, fname
        assert _encode(stats, schema) == _encode(theirs, schema)
        seen += 1
    assert seen >= 90
    # every file's records cover exactly the indexed columns
    per_file: dict[str, set[str]] = {}
    for r in recs:
        per_file.setdefault(r["ColumnStatsMetadata"]["fileName"], set()).add(
            r["ColumnStatsMetadata"]["columnName"])
    assert all(cols == set(columns) for cols in per_file.values())
    # the file group of each key (base files of the MDT compaction)
    groups = mdt.file_groups(COLUMN_STATS)
    d = path / ".hoodie" / "metadata" / COLUMN_STATS
    for n in os.listdir(d):
        if n.endswith(".hfile"):
            data = (d / n).read_bytes()
            for rec in decode_hfile_records(data, decode_hfile(data).file_info[b"schema"]
                                            .decode()):
                assert n.startswith(groups[key_to_file_group_index(rec["key"], len(groups))])


def _block_records(d: Path, name: str) -> list[dict[str, Any]]:
    out = []
    for fr in decode_blocks((d / name).read_bytes()):
        if fr.block_type == BlockType.HFILE_DATA:
            out += decode_hfile_records(fr.content, fr.header.get(HeaderKey.SCHEMA) or "")
    return out


@pytest.mark.parametrize("name", _NAMES, ids=_IDS)
def test_fixture_partition_stats_merge_the_latest_slices(name: str) -> None:
    """Each ``partition_stats`` record Hudi wrote at commit ``I`` equals the merge of the
    ``column_stats`` of the files in the partition's latest file slices as ``I`` saw them:
    the slices before ``I`` with ``I``'s files added (file groups ``I`` replaces still in),
    ``isTightBound`` true."""
    path = fixture_table(name)
    table = Table(str(path))
    mdt = _mdt(path)
    live = cs.merge_records(mdt.partition_records(COLUMN_STATS))
    types = _types(path)
    d = path / ".hoodie" / "metadata" / PARTITION_STATS
    instants = [i for i in table.timeline.completed()
                if i.action in ("deltacommit", "commit", "replacecommit")]
    checked = 0
    for k, inst in enumerate(instants):
        logs = [n for n in os.listdir(d) if LogFileName.matches(n)
                and LogFileName.parse(n).instant == inst.requested]
        if not logs:
            continue
        meta = table.timeline.metadata(inst)
        prev = instants[k - 1].requested if k else None
        for rec in (r for n in logs for r in _block_records(d, n)):
            theirs = rec["ColumnStatsMetadata"]
            part, col = theirs["fileName"], theirs["columnName"]
            written = {os.path.basename(s["path"]): 1
                       for s in meta["partitionToWriteStats"].get(part, [])}
            names = _slice_files(table, part, written, prev)
            pid = cs.hash_id(cs.partition_identifier(part))
            ranges = [cs.range_of_stats(s, types.get(col)) for key, s in live.items()
                      if key[12:24] == pid and s["columnName"] == col
                      and s["fileName"] in names]
            merged = cs.merge_ranges(ranges, part)
            assert merged is not None
            mine = cs.stats_metadata(merged, v2=_v2(path), is_tight_bound=True)
            assert mine == theirs, (inst.requested, part, col)
            assert rec["key"] == cs.partition_stats_key(col, part)
            checked += 1
    assert checked >= 27


def _slice_files(table: Table, part: str, written: dict[str, int], as_of: str | None
                 ) -> set[str]:
    from morlog.writers.mdt.colstats import _latest_slice_files

    if as_of is None:
        slices: list[Any] = []
    else:
        slices = table.file_slices(as_of=as_of, partition=part)
    view = type("V", (), {"file_slices": staticmethod(lambda partition: slices)})()
    return _latest_slice_files(view, part, written)  # type: ignore[arg-type]


# --- morlog's writes ------------------------------------------------------------------------


def check_stats(path: Path) -> None:
    """Every file of the table's latest slices has ``column_stats`` records equal to its
    recomputed statistics; every partition's ``partition_stats`` are the merge of them."""
    table = Table(str(path))
    mdt = _mdt(path)
    columns = _columns(path)
    v2 = _v2(path)
    live = cs.merge_records(mdt.partition_records(COLUMN_STATS))
    pstats = cs.merge_records(mdt.partition_records(PARTITION_STATS))
    for part in table.partitions():
        ranges: list[cs.ColumnRange] = []
        for s in table.file_slices(partition=part):
            for fname in [*([s.base_file] if s.base_file else []), *s.log_files]:
                mine = recompute(path, part, fname, columns)
                ranges += mine
                for r in mine:
                    assert live[cs.column_stats_key(r.column, part, fname)] == \
                        cs.stats_metadata(r, v2=v2), fname
        for col in columns:
            merged = cs.merge_ranges([r for r in ranges if r.column == col], part)
            assert merged is not None
            got = pstats[cs.partition_stats_key(col, part)]
            assert got == cs.stats_metadata(merged, v2=v2, is_tight_bound=True), (part, col)


@pytest.mark.parametrize("name", _NAMES, ids=_IDS)
def test_writes_keep_column_and_partition_stats_true(tmp_path: Path, name: str) -> None:
    path = _copy(fixture_table(name), tmp_path)
    t = MorTable(str(path), WriteConfig(hoodie_options=KEEP_STATS))
    listed = parse_properties((path / ".hoodie" / "hoodie.properties").read_text())
    assert {COLUMN_STATS, PARTITION_STATS} <= set(
        listed["hoodie.table.metadata.partitions"].split(","))
    expected = write_three(t, path)
    key = t.key_field
    view = Table(str(path))
    assert view.timeline.pending() == []
    assert _rows(view.read(), key) == expected
    assert _rows(_hudi_rs(path), key) == expected
    # still listed, and true
    listed = parse_properties((path / ".hoodie" / "hoodie.properties").read_text())
    assert {COLUMN_STATS, PARTITION_STATS} <= set(
        listed["hoodie.table.metadata.partitions"].split(","))
    check_stats(path)
    stats = column_stats(_mdt(path))
    assert stats.num_rows > 0 and set(stats.column("column").to_pylist()) == set(_columns(path))


class _Boom(MorlogError):
    pass


@pytest.mark.parametrize("name", _NAMES, ids=_IDS)
def test_a_failed_commit_leaves_the_stats_as_before(tmp_path: Path, name: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = _copy(fixture_table(name), tmp_path)
    before_cs = column_stats(_mdt(path))
    before_ps = column_stats(_mdt(path), PARTITION_STATS)
    original_append = mdt_writer.LogFileWriter.append
    calls: list[str] = []

    def fail_append(self: Any, *a: Any, **k: Any) -> Any:
        out = original_append(self, *a, **k)
        if os.path.basename(self.directory) in (COLUMN_STATS, PARTITION_STATS):
            calls.append(os.path.basename(self.directory))
            if PARTITION_STATS in calls:  # both statistics blocks are on storage
                raise _Boom("after the MDT blocks, before the MDT completed")
        return out

    monkeypatch.setattr(mdt_writer.LogFileWriter, "append", fail_append)
    t = MorTable(str(path), WriteConfig(hoodie_options=KEEP_STATS))
    upd = _later(_data(path).slice(0, 1), t.ordering_field)
    with pytest.raises(MorlogError):
        t.upsert(upd)
    monkeypatch.undo()
    assert COLUMN_STATS in calls and PARTITION_STATS in calls
    assert column_stats(_mdt(path)).equals(before_cs)
    assert column_stats(_mdt(path), PARTITION_STATS).equals(before_ps)
    assert Table(str(path)).timeline.pending() == []
    t.upsert(upd)  # the table takes the next commit
    check_stats(path)


def test_a_rollback_writes_no_statistics() -> None:
    """A rollback's context (no files written, files deleted) gives no record: Hudi turns a
    rollback's metadata into ``files`` records only."""
    ctx = CommitContext("20260101000000000", {}, {"p": ["a.parquet", ".a_1.log.1_0-1-1"]})
    for keeper in (ColumnStatsKeeper(), PartitionStatsKeeper(), BloomFiltersKeeper()):
        assert keeper.records(None, ctx) == ([], [])  # type: ignore[arg-type]


# --- bloom_filters --------------------------------------------------------------------------


def add_bloom_filters_partition(path: Path) -> None:
    """Initialise ``bloom_filters`` in a table's MDT as Hudi does for a table without data
    (``HoodieBackedTableMetadataWriter.initializeFileGroups``): an init delta commit
    ``0000000000000000N`` (N the next free offset) with empty requested, inflight and
    completed metadata, the partition metadata file, one file group ``bloom-filters-0000-0``
    whose first log holds an empty delete block (write token ``0-0-0``); then the partition
    is listed in ``hoodie.table.metadata.partitions``."""
    t = MorTable(str(path), WriteConfig())
    mloc = metadata_location(t.location)
    mdt = MetadataTable(t.store, t.location, mode=t.mode)
    used = [i.requested for i in mdt.timeline().instants if i.requested.startswith("000")]
    instant = f"{int(max(used)) + 1:017d}"
    w = TimelineWriter(t.store, mloc, layout=2)
    w.write(instant, "requested", {})
    w.write(instant, "inflight", {})
    d = t.store.join(mloc.path, BLOOM_FILTERS)
    t.store.makedirs(d)
    t.store.create(t.store.join(d, PARTITION_METADATA_FILE),
                   format_partition_metadata(0, 1).encode())
    LogFileWriter(d, "bloom-filters-0000-0", instant, write_token=DEFAULT_WRITE_TOKEN,
                  mode="rollover", store=t.store).append(delete_block([], instant))
    w.write(instant, "completed", {"partitionToWriteStats": {}, "compacted": False,
                                   "extraMetadata": {"schema": metadata_record_schema_json(
                                       meta_fields=False)},
                                   "operationType": "BULK_INSERT_PREPPED"})
    props = dict(Table(str(path)).config.props)
    props["hoodie.table.metadata.partitions"] = "bloom_filters,files"
    update_properties(t.store, t.location, props)


def test_bloom_filters_get_one_record_per_new_base_file(tmp_path: Path) -> None:
    path = tmp_path / "t"
    schema = pa.schema([("id", pa.string()), ("p", pa.string()), ("v", pa.int64())])
    t = MorTable.create(str(path), schema, key_field="id", partition_field="p",
                        ordering_field="v", table_version=9)
    add_bloom_filters_partition(path)
    t = MorTable(str(path), WriteConfig())
    t.upsert(pa.table({"id": ["a", "b", "c"], "p": ["x", "y", "x"], "v": [1, 2, 3]}))
    t.upsert(pa.table({"id": ["a"], "p": ["x"], "v": [5]}))  # a log: no bloom record
    t.insert(pa.table({"id": ["d"], "p": ["z"], "v": [1]}))
    mdt = _mdt(path)
    recs = [r for r in mdt.partition_records(BLOOM_FILTERS) if "key" in r]
    table = Table(str(path))
    bases = {(s.partition, s.base_file) for s in table.file_slices() if s.base_file}
    assert len(bases) == 3 == len(recs)
    by_key = {r["key"]: r for r in recs}
    for part, name in bases:
        rec = by_key[cs.bloom_filter_key(part, name)]
        assert rec["type"] == 4
        meta = rec["BloomFilterMetadata"]
        footer = pq.ParquetFile(path / part / name).metadata.metadata
        assert meta["bloomFilter"] == footer[b"org.apache.hudi.bloomfilter"]
        assert meta["type"] == "DYNAMIC_V0" and meta["isDeleted"] is False
        assert meta["timestamp"] == name.rsplit("_", 1)[1].split(".")[0]
    assert _rows(_hudi_rs(path), "id") == {
        "a": {"id": "a", "p": "x", "v": 5}, "b": {"id": "b", "p": "y", "v": 2},
        "c": {"id": "c", "p": "x", "v": 3}, "d": {"id": "d", "p": "z", "v": 1}}
    # the MDT's own timeline: every delta commit completed, listing its bloom log
    last = mdt.timeline().completed()[-1]
    assert BLOOM_FILTERS in mdt.timeline().metadata(last)["partitionToWriteStats"]


# --- value wrappers -------------------------------------------------------------------------


_W = "org.apache.hudi.avro.model."
_TYPES: list[tuple[pa.DataType, Any]] = [
    (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    (pa.float32(), st.floats(width=32, allow_nan=False)),
    (pa.float64(), st.floats(allow_nan=False)),
    (pa.string(), st.text(max_size=20)),
    (pa.binary(), st.binary(max_size=20)),
    (pa.bool_(), st.booleans()),
    (pa.date32(), st.integers(-10**6, 10**6)),
    (pa.timestamp("us", tz="UTC"), st.integers(-(2**62), 2**62)),
    (pa.decimal128(15, 2), st.integers(-(10**15) + 1, 10**15 - 1).map(
        lambda n: decimal.Decimal(n).scaleb(-2))),
    (pa.decimal128(10, 0), st.integers(-(10**10) + 1, 10**10 - 1).map(decimal.Decimal)),
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(_TYPES))).flatmap(
    lambda i: st.tuples(st.just(i), _TYPES[i][1], st.booleans())))
def test_values_round_trip_through_the_avro_record(case: tuple[int, Any, bool]) -> None:
    i, value, v2 = case
    t = _TYPES[i][0]
    r = cs.ColumnRange("f.parquet", "c", value, value, 0, 1, 0, 0, t)
    stats = cs.stats_metadata(r, v2=v2)
    schema = metadata_record_schema_json()
    rec = cs.metadata_record("k", 3, stats)
    data = encode_hfile_records([rec], schema)  # as morlog writes and reads MDT blocks
    (read,) = decode_hfile_records(data, schema)
    back = read["ColumnStatsMetadata"]
    name = back["minValue"][0]
    got = cs.unwrap_value(back["minValue"], back.get("valueType"))
    if pa.types.is_decimal(t):
        assert decimal.Decimal(got) == value
        if v2:  # BytesWrapper of BigInteger.toByteArray of the unscaled value
            n = int(value.scaleb(t.scale))
            assert back["minValue"][1]["value"] == cs.java_bytes(n)
            assert back["valueType"] == {"typeOrdinal": cs.DECIMAL,
                                         "additionalInfo": f"{t.precision},{t.scale}"}
        else:  # Avro's decimal bytes are BigInteger.toByteArray of the scale-15 value
            assert name == _W + "DecimalWrapper"
            buf = io.BytesIO()
            wrapper = {"type": "record", "name": "W", "fields": [{"name": "value", "type": {
                "type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}}]}
            fastavro.schemaless_writer(buf, fastavro.parse_schema(wrapper),
                                       back["minValue"][1])
            buf.seek(0)
            raw = fastavro.schemaless_reader(buf, fastavro.parse_schema({
                "type": "record", "name": "R", "fields": [{"name": "value", "type": "bytes"}]}),
                None)
            assert raw["value"] == cs.java_bytes(int(value.scaleb(15)))  # type: ignore[index]
    elif pa.types.is_float32(t):
        assert got == pytest.approx(value, rel=1e-6) or got == value
    else:
        assert got == value
    expected = {  # the wrapper Hudi uses for the type
        (pa.int32(), False): "IntWrapper", (pa.int32(), True): "IntWrapper",
        (pa.int64(), False): "LongWrapper", (pa.string(), True): "StringWrapper",
        (pa.date32(), False): "DateWrapper", (pa.date32(), True): "IntWrapper",
        (pa.timestamp("us", tz="UTC"), True): "LongWrapper",
        (pa.timestamp("us", tz="UTC"), False): "LongWrapper",
        (pa.binary(), True): "BytesWrapper", (pa.bool_(), False): "BooleanWrapper",
        (pa.float64(), True): "DoubleWrapper", (pa.float32(), False): "FloatWrapper",
    }.get((t, v2))
    if expected:
        assert name == _W + expected
    if v2:
        assert back["valueType"]["typeOrdinal"] == cs.value_type(t)[0]
    else:
        assert "valueType" not in stats


@given(st.integers(-(2**80), 2**80))
def test_java_bytes_is_biginteger_to_byte_array(n: int) -> None:
    b = cs.java_bytes(n)
    assert int.from_bytes(b, "big", signed=True) == n
    # shortest: dropping the first byte changes the value or the sign
    if len(b) > 1:
        assert int.from_bytes(b[1:], "big", signed=True) != n


def test_float_ranges_follow_double_compare() -> None:
    t = pa.table({"f": pa.array([0.0, -0.0, 2.5, None, float("nan")])})
    (r,) = cs.table_ranges(t, "x", ["f"], {"f": pa.float64()})
    assert str(r.min) == "-0.0" and r.max != r.max  # NaN is the largest
    assert (r.null_count, r.value_count) == (1, 5)


def test_keys_are_hudis() -> None:
    assert cs.hash_id("driver") == "AjpJ7N1gBZc="
    assert cs.hash_id("city=san_francisco") == "8L2cgj6DtVM="
    assert cs.partition_stats_key("_hoodie_commit_time", "city=sao_paulo") == \
        "JBBzUToHtLc=6Hj+sBy+gvM="


def _tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("name", _NAMES, ids=_IDS)
@pytest.mark.parametrize("case", ["nested_column", "partition_stats_alone"])
def test_stats_settings_morlog_cannot_keep_are_refused_before_writing(
        tmp_path: Path, name: str, case: str) -> None:
    """A column list naming a nested field, or partition_stats listed without column_stats:
    an UnsupportedSettingError naming hoodie.table.metadata.partitions when the write
    starts, and the table is untouched."""
    from morlog.logformat.errors import UnsupportedSettingError
    from morlog.logformat.table_files import format_properties

    path = _copy(fixture_table(name), tmp_path)
    props_path = path / ".hoodie" / "hoodie.properties"
    props = parse_properties(props_path.read_text())
    if case == "nested_column":
        props["hoodie.metadata.index.column.stats.column.list"] = "no_such.nested_field"
        defs = props.get("hoodie.table.index.defs.path")
        if defs and (path / defs).exists():  # the index definition names the columns first
            (path / defs).unlink()
    else:
        props["hoodie.table.metadata.partitions"] = ",".join(
            p for p in props["hoodie.table.metadata.partitions"].split(",")
            if p != COLUMN_STATS)
    props_path.write_text(format_properties(props))
    before = _tree(path)
    with pytest.raises(UnsupportedSettingError, match="(column|partition)_stats partition") as err:
        t = MorTable(str(path), WriteConfig(hoodie_options=KEEP_STATS))
        write_three(t, path)
    assert err.value.property == "hoodie.table.metadata.partitions"
    assert _tree(path) == before
