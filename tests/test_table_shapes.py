"""Table shapes the fixtures do not cover, built with morlog and written through the write
client: complex (multi-field) keys, several partition fields, hive style with URL-encoding,
the timestamp-based and custom key generators, table version 8. Every shape takes upserts,
inserts and deletes and then reads exactly the expected rows in morlog and in hudi-rs, with
the meta columns Hudi's key generator would have written (``morlog.logformat.keygen``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from morlog.logformat.keygen import KeyGenSpec
from morlog.readers.table import Table
from morlog.writers.client import MorTable

SCHEMA = pa.schema([("id", pa.string()), ("seq", pa.int32()), ("region", pa.string()),
                    ("day", pa.string()), ("ts", pa.int64()), ("v", pa.float64())])
_TS = "hoodie.keygen.timebased."

SHAPES: dict[str, tuple[int, dict[str, str], str]] = {
    # name: (table version, hoodie.properties over morlog's, expected first partition path)
    "complex_keys_two_partition_fields": (9, {
        "hoodie.table.keygenerator.type": "COMPLEX",
        "hoodie.table.recordkey.fields": "id,seq",
        "hoodie.table.partition.fields": "region,day"}, "eu/2024-01-05"),
    "hive_style_urlencoded": (9, {
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.partitionpath.urlencode": "true",
        "hoodie.table.partition.fields": "day"}, "day=2024-01-05"),
    "timestamp_keygen": (9, {
        "hoodie.table.keygenerator.type": "TIMESTAMP",
        "hoodie.table.partition.fields": "ts",
        _TS + "timestamp.type": "EPOCHMILLISECONDS",
        _TS + "output.dateformat": "yyyy/MM/dd",
        _TS + "output.timezone": "UTC"}, "2024/01/05"),
    "custom_keygen": (9, {
        "hoodie.table.keygenerator.type": "CUSTOM",
        "hoodie.table.partition.fields": "region:SIMPLE,ts:TIMESTAMP",
        _TS + "timestamp.type": "EPOCHMILLISECONDS",
        _TS + "output.dateformat": "yyyyMMdd",
        _TS + "output.timezone": "UTC"}, "eu/20240105"),
    "table_version_8_hive_style": (8, {
        "hoodie.datasource.write.hive_style_partitioning": "true"}, "region=eu"),
    "table_version_6_complex_class": (6, {
        "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
        "hoodie.table.recordkey.fields": "id,seq"}, "eu"),
}

#: 2024-01-05 00:00 UTC plus a few hours
_T0 = 1704412800000


def _batch(rows: list[tuple[str, int, str, int]]) -> pa.Table:
    return pa.Table.from_pylist([
        {"id": i, "seq": s, "region": r, "day": "2024-01-05" if r == "eu" else "2024/01:06",
         "ts": _T0 + 3600_000 * h, "v": float(h)} for i, s, r, h in rows], SCHEMA)


def _rows(t: pa.Table) -> dict[str, dict[str, Any]]:
    return {r["_hoodie_record_key"]: {"partition": r["_hoodie_partition_path"],
                                      "v": r["v"], "id": r["id"]} for r in t.to_pylist()}


def _hudi_rs(path: Path) -> pa.Table:
    import hudi

    batches = hudi.HudiTableBuilder.from_base_uri(str(path)).build().read()
    return pa.Table.from_batches(batches) if batches else pa.table({})


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_shape_takes_writes_and_reads_right(tmp_path: Path, shape: str) -> None:
    version, props, first_path = SHAPES[shape]
    path = tmp_path / shape
    MorTable.create(str(path), SCHEMA, key_field="id", partition_field="region",
                    ordering_field="ts", table_version=version, table_properties=props)
    t = MorTable(str(path))
    spec = KeyGenSpec.from_properties(Table(str(path)).config.props)
    first = _batch([("a", 1, "eu", 1), ("a", 2, "eu", 2), ("b", 1, "us", 3),
                    ("c", 1, "us", 4)])
    t.upsert(first)
    keys = spec.record_keys(first).to_pylist()
    paths = spec.partition_paths(first).to_pylist()
    assert paths[0] == first_path
    expected = {k: {"partition": p, "v": v, "id": i} for k, p, v, i in zip(
        keys, paths, first.column("v").to_pylist(), first.column("id").to_pylist(),
        strict=True)}
    assert len(expected) == (4 if "complex" in shape else 3)
    # an update with a later ordering value, an insert, a delete
    later = _batch([("b", 1, "us", 9)])  # later, same day (the same partition)
    t.upsert(later)
    expected[spec.record_keys(later)[0].as_py()]["v"] = 9.0
    new = _batch([("d", 7, "eu", 5)])
    t.insert(new)
    expected[spec.record_keys(new)[0].as_py()] = {
        "partition": spec.partition_paths(new)[0].as_py(), "v": 5.0, "id": "d"}
    gone = _batch([("c", 1, "us", 4)])
    assert t.delete(gone).deletes == 1
    expected.pop(spec.record_keys(gone)[0].as_py())
    assert _rows(Table(str(path)).read()) == expected
    if shape != "custom_keygen":
        # hudi-rs 0.5 refuses the custom key generator's typed partition fields
        # (`region:SIMPLE` in hoodie.table.partition.fields, as Hudi 1.x stores them):
        # "Partition field ... is not present in the table schema"
        assert _rows(_hudi_rs(path)) == expected
    for p in {e["partition"] for e in expected.values()}:
        assert (path / p / ".hoodie_partition_metadata").is_file()


@pytest.mark.parametrize("shape", ["complex_keys_two_partition_fields", "timestamp_keygen",
                                   "hive_style_urlencoded"])
def test_distributed_upsert_writes_every_shape(tmp_path: Path, shape: str,
                                               spark: Any) -> None:
    """``morlog.spark.upsert`` keys rows with the table's key generator in its
    tagging tasks: composite keys and generated partition paths work as in the client."""
    from morlog.spark.write import upsert

    version, props, _ = SHAPES[shape]
    path = tmp_path / shape
    MorTable.create(str(path), SCHEMA, key_field="id", partition_field="region",
                    ordering_field="ts", table_version=version, table_properties=props)
    table = Table(str(path))
    spec = KeyGenSpec.from_properties(table.config.props)
    key = ",".join(spec.key_fields)
    part = ",".join(spec.partition_fields) or None
    first = _batch([("a", 1, "eu", 1), ("a", 2, "eu", 2), ("b", 1, "us", 3)])
    upsert(spark, spark.createDataFrame(first), str(path), key=key, partition=part,
           ordering="ts")
    # a later version of b (same day), a duplicate of a/1 in the batch, a new key
    second = _batch([("b", 1, "us", 9), ("a", 1, "eu", 5), ("a", 1, "eu", 4),
                     ("d", 7, "eu", 6)])
    upsert(spark, spark.createDataFrame(second), str(path), key=key, partition=part,
           ordering="ts")
    expected: dict[str, dict[str, Any]] = {}
    for b in (first, second):
        for k, p, row in zip(spec.record_keys(b).to_pylist(),
                             spec.partition_paths(b).to_pylist(), b.to_pylist(), strict=True):
            if k not in expected or row["ts"] >= expected[k]["ts"]:
                expected[k] = {"partition": p, "v": row["v"], "id": row["id"],
                               "ts": row["ts"]}
    want = {k: {x: v[x] for x in ("partition", "v", "id")} for k, v in expected.items()}
    assert _rows(Table(str(path)).read()) == want
    assert _rows(_hudi_rs(path)) == want
