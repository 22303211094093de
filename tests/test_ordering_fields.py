"""Several ordering fields (``hoodie.table.ordering.fields=a,b``, table version 9): records
compare as a tuple, field by field (Hudi 1.1's ``ArrayComparable``); morlog's reads are checked
against a model (hudi-rs 0.5 refuses such tables) and hudi-rs on the one-field case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.blocks import META_FIELDS
from morlog.logformat.constants import BlockType
from morlog.logformat.delete_content import (
    DeleteRecord,
    OrderingValue,
    decode_delete_content,
    encode_delete_content,
)
from morlog.logformat.errors import UnsupportedSettingError
from morlog.readers import LogFileReader
from morlog.readers.merge import KEY, SEQ, MergeSpec, _pick_winners
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig

SCHEMA = pa.schema([("id", pa.string()), ("region", pa.string()), ("ts", pa.int64()),
                    ("seq", pa.int32()), ("v", pa.string())])
COLS = ["id", "region", "ts", "seq", "v"]
TWO = {"hoodie.table.ordering.fields": "ts,seq"}


def _create(path: Path, props: dict[str, str] | None = None, version: int = 9,
            **config: Any) -> MorTable:
    return MorTable.create(str(path), SCHEMA, key_field="id", partition_field="region",
                           ordering_field="ts", table_version=version,
                           table_properties=props if props is not None else TWO,
                           config=WriteConfig(**config))


def _read(path: Path) -> dict[str, tuple[Any, ...]]:
    t = Table(str(path)).read()
    return {r["id"]: (r["ts"], r["seq"], r["v"]) for r in t.select(COLS).to_pylist()}


def _batch(rows: list[tuple[str, int, int, str]]) -> pa.Table:
    return pa.Table.from_pylist([{"id": k, "region": "eu" if k < "k3" else "us", "ts": ts,
                                  "seq": seq, "v": v} for k, ts, seq, v in rows], SCHEMA)


_row = st.tuples(st.sampled_from([f"k{i}" for i in range(6)]), st.integers(0, 2),
                 st.integers(0, 3), st.text("abc", min_size=1, max_size=3))


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(_row, min_size=1, max_size=8), min_size=1, max_size=4),
       carrier=st.sampled_from(["avro", "parquet"]))
def test_ties_on_the_first_field_are_decided_by_the_second(tmp_path_factory: Any,
                                                           batches: list[Any],
                                                           carrier: str) -> None:
    """Model: per key the greatest (ts, seq) wins; on a full tie the later write (in a batch:
    the later row) wins, as Hudi's event-time merge keeps the newer record on ties."""
    path = tmp_path_factory.mktemp("ord")
    t = _create(path, carrier=carrier, max_file_size=2048, small_file_limit=1024,
                record_size=64)
    model: dict[str, tuple[Any, ...]] = {}
    for rows in batches:
        t.upsert(_batch(rows))
        for k, ts, seq, v in rows:
            if k not in model or (ts, seq) >= model[k][:2]:
                model[k] = (ts, seq, v)
    assert _read(path) == model


def test_several_ordering_fields_in_one_slice(tmp_path: Path) -> None:
    t = _create(tmp_path)
    t.insert(_batch([("k1", 5, 1, "a"), ("k4", 5, 1, "a")]))
    t.upsert(_batch([("k1", 5, 0, "lower seq"), ("k4", 5, 2, "higher seq")]))
    t.upsert(_batch([("k1", 4, 9, "lower ts"), ("k4", 6, 0, "higher ts")]))
    assert _read(tmp_path) == {"k1": (5, 1, "a"), "k4": (6, 0, "higher ts")}


def test_deletes_carry_no_ordering_value(tmp_path: Path) -> None:
    """Deletes of a table with several ordering fields hold a null ordering value (the one
    form every Hudi release decodes; spec/table.md §14): they remove what came before, and a
    later record of the key lives again whatever its ordering value."""
    t = _create(tmp_path)
    t.insert(_batch([("k1", 9, 9, "a"), ("k4", 9, 9, "b")]))
    t.delete(_batch([("k1", 0, 0, "")]))
    assert _read(tmp_path) == {"k4": (9, 9, "b")}
    t.upsert(_batch([("k1", 1, 0, "back")]))
    assert _read(tmp_path)["k1"] == (1, 0, "back")
    found = []
    for log in tmp_path.rglob(".*.log.*"):
        if ".hoodie" in log.parts:
            continue
        r = LogFileReader(str(log))
        try:
            found += [d for b in r.blocks() if b.block_type == BlockType.DELETE
                      for d in b.delete_records()]
        finally:
            r.close()
    assert [(d.record_key, d.ordering_value) for d in found] == [("k1", None)]


def test_array_wrapper_delete_records_round_trip() -> None:
    """Hudi's ArrayWrapper (union branch 12) decodes; single values keep their bytes."""
    recs = [DeleteRecord("a", "p", OrderingValue("array", (OrderingValue("long", 5),
                                                           None,
                                                           OrderingValue("string", "x")))),
            DeleteRecord("b", "p", OrderingValue("long", 7))]
    back = decode_delete_content(encode_delete_content(recs)).records
    assert back == tuple(recs)
    one = encode_delete_content(recs[1:])
    # i32 version 3 | i32 length | array of one record: "b", "p", branch 3 (LongWrapper) 7
    assert one.hex() == "000000030000000a02020262020270060e00"
    payload = encode_delete_content([DeleteRecord("a", None, recs[0].ordering_value)])[8:]
    assert payload[5] == 24  # zig-zag union index 12: ArrayWrapper


def _records(keys: list[str], ts: list[int], seq: list[Any]) -> pa.Table:
    n = len(keys)
    return pa.table({"ts": pa.array(ts, pa.int64()), "seq": pa.array(seq, pa.int64()),
                     KEY: pa.array(keys), SEQ: pa.array(np.arange(n, dtype=np.int64))})


def test_array_ordering_deletes_compete_like_records() -> None:
    """A delete whose ordering value is an ArrayWrapper compares as a tuple: it removes an
    older record with a smaller tuple and loses to one with a greater tuple."""
    spec = MergeSpec(ordering_field="ts", ordering_fields=("ts", "seq"),
                     merge_mode="EVENT_TIME_ORDERING")
    recs = _records(["a", "b"], [5, 5], [1, 3])
    dv = (OrderingValue("long", 5), OrderingValue("long", 2))
    out = _pick_winners(recs, [("a", 10, False, dv), ("b", 11, False, dv)], spec)
    assert out.column("seq").to_pylist() == [3]  # a deleted (5,2) > (5,1); b kept (5,3)


def test_null_numeric_ordering_value_counts_as_zero() -> None:
    """OrderingValues.handleNullValue: a null field value is the default ordering value 0."""
    spec = MergeSpec(ordering_field="ts", ordering_fields=("ts", "seq"),
                     merge_mode="EVENT_TIME_ORDERING")
    recs = _records(["a", "a", "b", "b"], [1, 1, 1, 1], [None, -1, 0, None])
    out = _pick_winners(recs, [], spec)
    # a: (1, null=0) beats the later (1, -1); b: (1, null=0) ties (1, 0), the later wins
    assert out.num_rows == 2
    assert out.column("seq").to_pylist() == [None, None]


@pytest.mark.parametrize("version", [6, 8])
def test_several_precombine_fields_before_version_9_are_refused(tmp_path: Path,
                                                                version: int) -> None:
    """Hudi 0.x and 1.0 take the precombine field as one field name."""
    key = "hoodie.table.precombine.field"
    with pytest.raises(UnsupportedSettingError) as err:
        _create(tmp_path / "t", {key: "ts,seq"}, version=version)
    assert err.value.property == key
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").rglob("*"))


def test_hudi_rs_reads_the_one_field_case_and_refuses_several(tmp_path: Path) -> None:
    hudi = pytest.importorskip("hudi", reason="the hudi package (hudi-rs) is not installed")
    one = _create(tmp_path / "one", {})
    two = _create(tmp_path / "two")
    rows = [("k1", 5, 1, "a"), ("k4", 5, 1, "a")]
    later = [("k1", 4, 9, "lower ts"), ("k4", 6, 0, "higher ts")]
    for t in (one, two):
        t.insert(_batch(rows))
        t.upsert(_batch(later))
    batches = hudi.HudiTableBuilder.from_base_uri(str(tmp_path / "one")).build().read()
    got = pa.Table.from_batches(batches)
    assert {r["id"]: (r["ts"], r["seq"], r["v"]) for r in got.select(COLS).to_pylist()} \
        == _read(tmp_path / "one") == {"k1": (5, 1, "a"), "k4": (6, 0, "higher ts")}
    # hudi-rs 0.5: "Multiple ordering fields ... are not yet supported"
    with pytest.raises(Exception, match="rdering"):
        hudi.HudiTableBuilder.from_base_uri(str(tmp_path / "two")).build()
    assert not [c for c in Table(str(tmp_path / "two")).read().column_names
                if c not in META_FIELDS and c not in COLS]


def test_spark_writes_combine_duplicates_by_the_tuple(spark: Any, tmp_path: Path) -> None:
    """``format("morlog")`` into a table with several ordering fields and no meta fields:
    duplicate keys of a batch combine by (ts, seq), the table merges by it too."""
    _create(tmp_path, {**TWO, "hoodie.populate.meta.fields": "false"})
    first = [("k1", 5, 1, "a"), ("k4", 5, 1, "a")]
    MorTable(str(tmp_path)).insert(_batch(first))
    dup = [("k1", 5, 3, "wins"), ("k1", 5, 2, "tie on ts, lower seq"), ("k4", 5, 0, "loses"),
           ("k2", 1, 1, "new")]
    df = spark.createDataFrame(_batch(dup).to_pandas())
    opts = {"hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.precombine.field": "ts,seq"}
    df.write.format("morlog").options(**opts).mode("append").save(str(tmp_path))
    assert _read(tmp_path) == {"k1": (5, 3, "wins"), "k4": (5, 1, "a"), "k2": (1, 1, "new")}
