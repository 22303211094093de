"""Tables without meta fields (``hoodie.populate.meta.fields=false``) and tables whose data
files drop the partition columns (``hoodie.datasource.write.drop.partition.columns=true``):
built with morlog, read by morlog and by hudi-rs (where it reads them), file bytes checked
against Hudi's rules (spec/table.md §14)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from morlog.logformat.blocks import META_FIELDS
from morlog.logformat.constants import BlockType, HeaderKey
from morlog.logformat.errors import ContentError, MorlogError, UnsupportedSettingError
from morlog.logformat.table_files import format_properties, parse_properties
from morlog.logformat.virtual_keys import VirtualKeys
from morlog.readers import LogFileReader
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig

from . import hudi_fixtures as hf

SCHEMA = pa.schema([("id", pa.string()), ("sub", pa.int64()), ("region", pa.string()),
                    ("ts", pa.int64()), ("amount", pa.float64())])
DATA = ["id", "sub", "region", "ts", "amount"]
SMALL = {"max_file_size": 4096, "small_file_limit": 2048, "record_size": 64}


def _batch(rows: list[tuple[Any, ...]]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(DATA, r, strict=True)) for r in rows], SCHEMA)


def _morlog(path: Path, cols: list[str] = DATA) -> list[dict[str, Any]]:
    t = Table(str(path)).read()
    return sorted(t.select(cols).to_pylist(), key=lambda r: (r["id"], r["sub"]))


def _hudi_rs(path: Path, cols: list[str] = DATA) -> list[dict[str, Any]]:
    hudi = pytest.importorskip("hudi", reason="the hudi package (hudi-rs) is not installed")
    batches = hudi.HudiTableBuilder.from_base_uri(str(path)).build().read()
    t = pa.Table.from_batches(batches) if batches else pa.table({})
    return sorted(t.select(cols).to_pylist(), key=lambda r: (r["id"], r["sub"]))


def _expected(oracle: dict[tuple[str, int], tuple[Any, ...]]) -> list[dict[str, Any]]:
    return sorted((dict(zip(DATA, v, strict=True)) for v in oracle.values()),
                  key=lambda r: (r["id"], r["sub"]))


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != "morlog.lock"}


KEYS = {
    "simple": {},
    "complex": {"hoodie.table.recordkey.fields": "id,sub"},
}


def _virtual_props(version: int, keys: str) -> dict[str, str]:
    props = {"hoodie.populate.meta.fields": "false", **KEYS[keys]}
    if keys == "complex":
        props["hoodie.table.keygenerator.type" if version >= 8
              else "hoodie.table.keygenerator.class"] = (
            "COMPLEX" if version >= 8 else "org.apache.hudi.keygen.ComplexKeyGenerator")
    return props


def _write_history(t: MorTable, key_of: Any) -> dict[tuple[str, int], tuple[Any, ...]]:
    """Inserts, updates (tagged into their file groups), inserts routed into small groups,
    deletes and re-inserts; returns the oracle (key -> row)."""
    oracle: dict[tuple[str, int], tuple[Any, ...]] = {}

    def apply(rows: list[tuple[Any, ...]]) -> None:
        for r in rows:
            oracle[key_of(r)] = r

    first = [(f"k{i}", i % 2, "us" if i % 3 else "eu", 1, float(i)) for i in range(12)]
    res = t.insert(_batch(first))
    apply(first)
    assert res.inserts == 12
    upd = [(f"k{i}", i % 2, "us" if i % 3 else "eu", 5, 100.0 + i) for i in range(0, 12, 3)]
    new = [(f"n{i}", 1, "eu", 5, -float(i)) for i in range(3)]
    res = t.upsert(_batch(upd + new))
    apply(upd + new)
    # existing keys are found in the base files (keys derived from the key fields)
    assert (res.updates, res.inserts) == (len(upd), len(new))
    gone = [first[1], first[4], new[0]]
    res = t.delete(_batch(gone))
    assert res.deletes == 3
    for r in gone:
        oracle.pop(key_of(r))
    # a stale update (lower ordering value) loses; a re-insert of a deleted key lives
    stale = [(f"k{i}", i % 2, "us" if i % 3 else "eu", 0, 0.5) for i in (0, 3)]
    back = [first[1][:3] + (9, 7.0)]
    t.upsert(_batch(stale + back))
    apply(back)
    return oracle


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("carrier", ["avro", "parquet"])
@pytest.mark.parametrize("keys", ["simple", "complex"])
def test_virtual_keys_table_reads_back_in_morlog_and_hudi_rs(tmp_path: Path, version: int,
                                                              carrier: str, keys: str) -> None:
    t = MorTable.create(str(tmp_path), SCHEMA, key_field="id", partition_field="region",
                        ordering_field="ts", table_version=version,
                        table_properties=_virtual_props(version, keys),
                        config=WriteConfig(carrier=carrier, **SMALL))
    assert not t.populate_meta_fields
    key_of = (lambda r: (r[0], 0)) if keys == "simple" else (lambda r: (r[0], r[1]))
    oracle = _write_history(t, key_of)
    expected = _expected(oracle)
    assert _morlog(tmp_path) == expected
    assert _hudi_rs(tmp_path) == expected


def test_virtual_keys_files_hold_null_meta_columns_and_no_key_index(tmp_path: Path) -> None:
    """Hudi's bytes: base files keep the five meta columns, all null, and no bloom filter or
    min/max key footer; log blocks' SCHEMA holds the meta fields first, their values null;
    delete blocks hold the key generator's keys."""
    t = MorTable.create(str(tmp_path), SCHEMA, key_field="id", partition_field="region",
                        ordering_field="ts", table_version=9,
                        table_properties=_virtual_props(9, "complex"),
                        config=WriteConfig(**SMALL))
    _write_history(t, lambda r: (r[0], r[1]))
    bases = sorted(tmp_path.glob("*/*.parquet"))
    assert bases
    for b in bases:
        table = pq.read_table(b)
        assert table.column_names[:5] == list(META_FIELDS)
        for m in META_FIELDS:
            assert table.column(m).null_count == table.num_rows
        md = pq.read_metadata(b).metadata or {}
        assert not [k for k in md if k.startswith((b"hoodie_", b"org.apache.hudi"))]
    logs = sorted(p for p in tmp_path.glob("*/.*.log.*"))
    kinds = set()
    deleted: set[str] = set()
    for log in logs:
        r = LogFileReader(str(log))
        try:
            for block in r.blocks():
                kinds.add(block.block_type)
                if block.block_type == BlockType.AVRO_DATA:
                    schema = json.loads(block.header.get(HeaderKey.SCHEMA))
                    assert [f["name"] for f in schema["fields"][:5]] == list(META_FIELDS)
                    rows = block.to_arrow()
                    for m in META_FIELDS:
                        assert rows.column(m).null_count == rows.num_rows
                elif block.block_type == BlockType.DELETE:
                    deleted |= {d.record_key for d in block.delete_records()}
        finally:
            r.close()
    assert {BlockType.AVRO_DATA, BlockType.DELETE} <= kinds
    assert deleted == {"id:k1,sub:1", "id:k4,sub:0", "id:n0,sub:1"}


def test_hudi_reader_key_derivation() -> None:
    """RecordContext.virtualKeyExtractor: one field -> its bare value (empty allowed, null
    refused); several -> f1:v1,f2:v2 with Hudi's placeholders."""
    one = VirtualKeys(("n",))
    assert one.keys(pa.table({"n": [1, 20]})).to_pylist() == ["1", "20"]
    assert one.keys(pa.table({"n": ["", "x"]})).to_pylist() == ["", "x"]
    with pytest.raises(ContentError):
        one.keys(pa.table({"n": ["a", None]}))
    two = VirtualKeys(("a", "b"))
    got = two.keys(pa.table({"a": ["x", None, ""], "b": [1, 2, 3]})).to_pylist()
    assert got == ["a:x,b:1", "a:__null__,b:2", "a:__empty__,b:3"]
    with pytest.raises(ContentError):  # all null or empty: HoodieKeyException
        two.keys(pa.table({"a": [""], "b": pa.array([None], pa.int64())}))
    with pytest.raises(ContentError):
        two.keys(pa.table({"a": [None], "b": pa.array([None], pa.int64())}))
    with pytest.raises(ContentError):
        two.keys(pa.table({"a": ["x"]}))


def test_row_writer_empty_meta_strings_read_the_same(tmp_path: Path) -> None:
    """Spark's row-writer bulk insert leaves "" in the meta columns of a table without meta
    fields (HoodieDatasetBulkInsertHelper): readers derive keys all the same."""
    t = MorTable.create(str(tmp_path), SCHEMA, key_field="id", partition_field="region",
                        ordering_field="ts", table_version=9,
                        table_properties=_virtual_props(9, "simple"))
    rows = [(f"k{i}", 0, "us", 1, float(i)) for i in range(5)]
    t.insert(_batch(rows))
    t.upsert(_batch([("k1", 0, "us", 2, 9.0)]))
    before = _morlog(tmp_path)
    for b in tmp_path.glob("*/*.parquet"):
        f = pq.ParquetFile(b)
        table, md = f.read(), f.metadata.metadata
        for m in META_FIELDS:
            i = table.column_names.index(m)
            table = table.set_column(i, m, pa.array([""] * table.num_rows, pa.string()))
        pq.write_table(table.replace_schema_metadata(md), b)
    assert _morlog(tmp_path) == before


@pytest.mark.parametrize("key, value, version", [
    ("hoodie.table.keygenerator.class", "org.apache.hudi.keygen.TimestampBasedKeyGenerator", 6),
    ("hoodie.table.keygenerator.class", "org.apache.hudi.keygen.CustomKeyGenerator", 6),
    ("hoodie.table.keygenerator.class", "org.apache.hudi.keygen.SimpleAvroKeyGenerator", 6),
    ("hoodie.table.keygenerator.type", "TIMESTAMP", 9),
    ("hoodie.table.keygenerator.type", "CUSTOM", 9),
    ("hoodie.table.keygenerator.type", "SIMPLE_AVRO", 9),
])
def test_key_generator_hudi_refuses_without_meta_fields(tmp_path: Path, key: str, value: str,
                                                        version: int) -> None:
    """BaseHoodieWriteClient.validateAgainstTableProperties: simple, complex and
    non-partitioned key generators only; refused before the first byte."""
    props = {"hoodie.populate.meta.fields": "false", key: value,
             "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
             "hoodie.keygen.timebased.output.dateformat": "yyyy",
             "hoodie.keygen.timebased.output.timezone": "UTC"}
    with pytest.raises(UnsupportedSettingError) as err:
        MorTable.create(str(tmp_path / "t"), SCHEMA, key_field="id", partition_field="region",
                        ordering_field="ts", table_version=version, table_properties=props)
    assert err.value.property == key
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").rglob("*"))


def test_one_field_complex_key_is_refused_without_meta_fields(tmp_path: Path) -> None:
    """Version 9 writes a one-field complex key as ``id:value``; Hudi's readers of a table
    without meta fields key records by the bare value: deletes would never match."""
    props = {"hoodie.populate.meta.fields": "false", "hoodie.table.keygenerator.type": "COMPLEX"}
    with pytest.raises(UnsupportedSettingError) as err:
        MorTable.create(str(tmp_path / "t"), SCHEMA, key_field="id", partition_field="region",
                        table_version=9, table_properties=props)
    assert err.value.property == "hoodie.table.recordkey.fields"


def test_existing_table_with_refused_key_generator_is_untouched(tmp_path: Path) -> None:
    t = MorTable.create(str(tmp_path), SCHEMA, key_field="id", partition_field="region",
                        ordering_field="ts", table_version=9,
                        table_properties={"hoodie.populate.meta.fields": "false"})
    t.insert(_batch([("a", 0, "us", 1, 1.0)]))
    props_file = tmp_path / ".hoodie" / "hoodie.properties"
    props = parse_properties(props_file.read_text())
    props["hoodie.table.keygenerator.type"] = "CUSTOM"
    props["hoodie.table.partition.fields"] = "region:simple"
    props_file.write_text(format_properties(props))
    before = _digest(tmp_path)
    with pytest.raises(UnsupportedSettingError):
        MorTable(str(tmp_path)).upsert(_batch([("a", 0, "us", 2, 2.0)]))
    assert _digest(tmp_path) == before


def _fixture(name: str, tmp_path: Path) -> Path:
    src = next((p for p in hf.tables() if p.name == name), None)
    if src is None:
        pytest.skip(f"fixture table {name} is absent ({hf.SKIP_REASON})")
    dst = tmp_path / name
    shutil.copytree(src, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


@hf.requires_fixtures
def test_hudi_table_read_with_derived_keys_matches_meta_keys(tmp_path: Path) -> None:
    """A Hudi-written table (meta fields populated) read as if it populated none: keys
    derived from txn_id merge every base file, log and delete block exactly as the stored
    ``_hoodie_record_key`` does."""
    path = _fixture("v9_txns_simple_nometa", tmp_path)
    cols = [c for c in Table(str(path)).read().column_names if c not in META_FIELDS]
    before = sorted(Table(str(path)).read().select(cols).to_pylist(), key=lambda r: r["txn_id"])
    props_file = path / ".hoodie" / "hoodie.properties"
    props = parse_properties(props_file.read_text())
    props["hoodie.populate.meta.fields"] = "false"
    props_file.write_text(format_properties(props))
    after = sorted(Table(str(path)).read().select(cols).to_pylist(), key=lambda r: r["txn_id"])
    assert after == before and len(after) > 5
    # and morlog writes into it: an update tagged by derived keys, a delete
    t = MorTable(str(path))
    data = Table(str(path)).read().select(cols)
    row = data.slice(0, 1).to_pylist()[0]
    upd = dict(row, txn_ts=row["txn_ts"] + 10**9, currency="XXX")
    res = t.upsert(pa.Table.from_pylist([upd], data.schema))
    assert res.updates == 1
    t.delete(data.slice(1, 1))
    expected = {r["txn_id"]: r for r in before}
    expected[upd["txn_id"]] = upd
    expected.pop(data.slice(1, 1).to_pylist()[0]["txn_id"])
    got = {r["txn_id"]: r for r in Table(str(path)).read().select(cols).to_pylist()}
    assert got == expected


# ---------------------------------------------------------------------------------------------
# hoodie.datasource.write.drop.partition.columns=true

PSCHEMA = pa.schema([("id", pa.string()), ("sub", pa.int64()), ("region", pa.string()),
                     ("day", pa.int32()), ("ts", pa.int64()), ("amount", pa.float64())])
PDATA = ["id", "sub", "region", "day", "ts", "amount"]


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("style", ["plain", "hive", "urlencode"])
def test_dropped_partition_columns_come_back_from_the_path(tmp_path: Path, version: int,
                                                          style: str) -> None:
    props = {"hoodie.datasource.write.drop.partition.columns": "true",
             "hoodie.table.partition.fields": "region,day",
             "hoodie.table.keygenerator.type" if version >= 8
             else "hoodie.table.keygenerator.class":
             "COMPLEX" if version >= 8 else "org.apache.hudi.keygen.ComplexKeyGenerator"}
    if style == "hive":
        props["hoodie.datasource.write.hive_style_partitioning"] = "true"
    if style == "urlencode":
        props["hoodie.datasource.write.partitionpath.urlencode"] = "true"
    t = MorTable.create(str(tmp_path), PSCHEMA, key_field="id", partition_field="region",
                        ordering_field="ts", table_version=version, table_properties=props,
                        config=WriteConfig(**SMALL))
    regions = ["us", "eu west" if style == "urlencode" else "eu", None]
    rows = [dict(id=f"k{i}", sub=i, region=regions[i % 3], day=20240101 + i % 2, ts=1,
                 amount=float(i)) for i in range(9)]
    t.insert(pa.Table.from_pylist(rows, PSCHEMA))
    upd = [dict(rows[0], ts=2, amount=50.0), dict(rows[5], ts=2, amount=55.0)]
    t.upsert(pa.Table.from_pylist(upd, PSCHEMA))
    t.delete(pa.Table.from_pylist([rows[4]], PSCHEMA))
    expected = {r["id"]: r for r in rows}
    expected.update({r["id"]: r for r in upd})
    expected.pop(rows[4]["id"])
    got = Table(str(tmp_path)).read()
    assert got.schema.field("day").type == pa.int32()
    assert {r["id"]: r for r in got.select(PDATA).to_pylist()} == expected
    # the data files hold no partition column (HoodieSparkSqlWriter drops them)
    for b in tmp_path.rglob("*.parquet"):
        if ".hoodie" not in b.parts:
            names = pq.read_schema(b).names
            assert "region" not in names and "day" not in names
    for log in tmp_path.rglob(".*.log.*"):
        if ".hoodie" in log.parts:
            continue
        r = LogFileReader(str(log))
        try:
            for block in r.blocks():
                if block.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
                    names = [f["name"] for f in json.loads(
                        block.header.get(HeaderKey.SCHEMA))["fields"]]
                    assert "region" not in names and "day" not in names
        finally:
            r.close()
    hudi = pytest.importorskip("hudi")
    # hudi-rs 0.5 refuses such tables ("Only support when ... is disabled")
    with pytest.raises(Exception, match="drop.partition.columns"):
        hudi.HudiTableBuilder.from_base_uri(str(tmp_path)).build()


@pytest.mark.parametrize("extra", [
    {"hoodie.table.keygenerator.type": "TIMESTAMP",
     "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
     "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd",
     "hoodie.keygen.timebased.output.timezone": "UTC",
     "hoodie.table.partition.fields": "ts"},
    {"hoodie.table.keygenerator.type": "CUSTOM",
     "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
     "hoodie.keygen.timebased.output.dateformat": "yyyy",
     "hoodie.keygen.timebased.output.timezone": "UTC",
     "hoodie.table.partition.fields": "ts:timestamp"},
    {"hoodie.datasource.write.slash.separated.date.partitioning": "true"},
    {"hoodie.table.partition.fields": "ts"},  # the ordering field would be dropped
])
def test_unparseable_dropped_partition_columns_are_refused(tmp_path: Path,
                                                           extra: dict[str, str]) -> None:
    props = {"hoodie.datasource.write.drop.partition.columns": "true", **extra}
    with pytest.raises(UnsupportedSettingError) as err:
        MorTable.create(str(tmp_path / "t"), PSCHEMA, key_field="id", partition_field="region",
                        ordering_field="ts", table_version=9, table_properties=props)
    assert err.value.property == "hoodie.datasource.write.drop.partition.columns"
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").rglob("*"))


def test_virtual_keys_with_dropped_partition_columns(tmp_path: Path) -> None:
    props = {"hoodie.populate.meta.fields": "false",
             "hoodie.datasource.write.drop.partition.columns": "true"}
    t = MorTable.create(str(tmp_path), SCHEMA, key_field="id", partition_field="region",
                        ordering_field="ts", table_version=9, table_properties=props)
    oracle = _write_history(t, lambda r: (r[0], 0))
    assert _morlog(tmp_path) == _expected(oracle)


def test_dropped_key_field_is_refused_without_meta_fields(tmp_path: Path) -> None:
    props = {"hoodie.populate.meta.fields": "false",
             "hoodie.datasource.write.drop.partition.columns": "true"}
    with pytest.raises(MorlogError):
        MorTable.create(str(tmp_path / "t"), SCHEMA, key_field="region",
                        partition_field="region", table_version=9, table_properties=props)
