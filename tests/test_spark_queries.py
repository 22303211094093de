"""Query types through ``spark.read.format("morlog")`` (spec/queries.md): Hudi's
``hoodie.datasource.query.type`` options give what ``Table.read(query_type=...)`` gives.

The session-scoped ``spark`` fixture: ``tests/spark_session.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (pip install .[spark])")

from morlog.readers.incremental import INCREMENTAL_ACTIONS  # noqa: E402
from morlog.readers.table import Table  # noqa: E402

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("v", pa.int64()),
                    ("p", pa.string())])
QT = "hoodie.datasource.query.type"
BEGIN = "hoodie.datasource.read.begin.instanttime"
END = "hoodie.datasource.read.end.instanttime"


def _table(root: Path) -> Table:
    from morlog.writers.client import MorTable

    t = MorTable.create(str(root), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", table_version=8)
    for i in range(4):
        t.upsert(pa.table({"id": [f"k{i}", "k0"], "ts": [i + 1, i + 1], "v": [i, 10 * i],
                           "p": ["a" if i % 2 else "b", "b"]}, schema=SCHEMA))
    return Table(str(root))


def _rows(df: Any) -> list[dict[str, Any]]:
    return sorted((r.asDict() for r in df.collect()), key=lambda r: r["id"])


def _arrow_rows(t: pa.Table) -> list[dict[str, Any]]:
    return sorted(t.to_pylist(), key=lambda r: r["id"])


def test_spark_query_types(spark: Any, tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    path = str(tmp_path / "t")
    done = table.timeline.completed(INCREMENTAL_ACTIONS)
    b, e = done[1].completed, done[2].completed
    assert b is not None and e is not None
    # snapshot, passed explicitly as many Hudi jobs do
    snap = spark.read.format("morlog").option(QT, "snapshot").load(path)
    assert _rows(snap) == _arrow_rows(table.read())
    # incremental: the range's records only, with projection and a filter
    inc = (spark.read.format("morlog").option(QT, "incremental").option(BEGIN, b)
           .option(END, e).load(path))
    assert _rows(inc) == _arrow_rows(table.incremental(b, e))
    assert _rows(inc.select("id", "v")) == [{"id": "k0", "v": 20}, {"id": "k2", "v": 2}]
    assert _rows(inc.where("v > 5").select("id")) == [{"id": "k0"}]
    # with filter pushdown: the pushed filter prunes and filters with the range's predicate
    pushed = (spark.read.format("morlog").option(QT, "incremental").option(BEGIN, b)
              .option(END, e).option("filter.pushdown", "true").load(path))
    assert _rows(pushed.where("v > 5").select("id", "v")) == [{"id": "k0", "v": 20}]
    assert _rows(pushed.where("id = 'k1'")) == []  # k1 is not in the range
    # end defaults to the latest
    tail = spark.read.format("morlog").option(QT, "incremental").option(BEGIN, b).load(path)
    assert _rows(tail) == _arrow_rows(table.incremental(b))
    # read optimized: base files only
    ro = spark.read.format("morlog").option(QT, "read_optimized").load(path)
    assert _rows(ro) == _arrow_rows(table.read_optimized())
    assert _rows(ro) != _rows(snap)


def test_spark_query_type_errors(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import PySparkException

    _table(tmp_path / "t")
    path = str(tmp_path / "t")
    cases = [({QT: "realtime"}, "unknown query type"),
             ({QT: "incremental"}, "needs hoodie.datasource.read.begin.instanttime"),
             ({QT: "incremental", BEGIN: "earliest",
               "hoodie.datasource.query.incremental.format": "cdc"},
              "hoodie.table.cdc.enabled=true"),
             ({QT: "incremental", BEGIN: "earliest",
               "hoodie.datasource.query.incremental.format": "x"}, "incremental format")]
    for opts, words in cases:
        with pytest.raises((PySparkException, Exception)) as info:
            spark.read.format("morlog").options(**opts).load(path).collect()
        assert words in str(info.value), (opts, str(info.value)[:500])


def test_hudi_quickstart_incremental_query(spark: Any, tmp_path: Path) -> None:
    """The quick start's incremental query (hudi.apache.org/docs/quick-start-guide,
    "Incremental query"), ``format("hudi")`` become ``format("morlog")``: begin is a
    ``_hoodie_commit_time`` read from the table, and on table version 8+ Hudi 1.x compares it
    with completion times, so the commit whose instant it is is in the range too."""
    base_path = str(tmp_path / "trips_table")
    columns = ["ts", "uuid", "rider", "driver", "fare", "city"]
    data = [(1695159649087, "334e26e9", "rider-A", "driver-K", 19.10, "san_francisco"),
            (1695046462179, "9909a8b1", "rider-D", "driver-L", 33.90, "san_francisco"),
            (1695115999911, "c8abbe79", "rider-J", "driver-T", 17.85, "chennai")]
    hudi_options = {
        "hoodie.table.name": "trips_table",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.table.ordering.fields": "ts",
    }
    spark.createDataFrame(data).toDF(*columns).write.format("morlog") \
        .options(**hudi_options).mode("overwrite").save(base_path)
    from pyspark.sql.functions import col

    spark.read.format("morlog").load(base_path).filter("rider == 'rider-D'") \
        .withColumn("fare", col("fare") * 10).write.format("morlog") \
        .options(**hudi_options).mode("append").save(base_path)
    spark.read.format("morlog").load(base_path).createOrReplaceTempView("trips_table")
    commits = [row[0] for row in spark.sql(
        "SELECT DISTINCT(_hoodie_commit_time) AS commitTime FROM trips_table "
        "ORDER BY commitTime").limit(50).collect()]
    begin_time = commits[len(commits) - 2]
    incremental_read_options = {
        "hoodie.datasource.query.type": "incremental",
        "hoodie.datasource.read.begin.instanttime": begin_time,
    }
    trips_incremental = spark.read.format("morlog").options(**incremental_read_options) \
        .load(base_path)
    trips_incremental.createOrReplaceTempView("trips_incremental")
    got = spark.sql("SELECT `_hoodie_commit_time`, fare, rider, driver, uuid, ts FROM "
                    "trips_incremental WHERE fare > 20.0").collect()
    table = Table(base_path)
    assert table.version >= 8
    assert sorted((r["rider"], r["fare"]) for r in got) == [("rider-D", 339.0)]
    # both commits completed after begin_time (the first one's instant): every record
    whole = spark.read.format("morlog").options(**incremental_read_options).load(base_path)
    assert whole.count() == 3
    # from the second commit's completion on: nothing
    last = table.timeline.completed(INCREMENTAL_ACTIONS)[-1].completed
    assert spark.read.format("morlog").options(**{
        **incremental_read_options, BEGIN: last}).load(base_path).count() == 0


def test_spark_cdc_query_equals_table_changes(spark: Any, tmp_path: Path) -> None:
    """``hoodie.datasource.query.incremental.format=cdc`` through Spark: Hudi's ``op``,
    ``ts_ms``, ``before``, ``after`` rows, as ``Table.changes`` gives them."""
    from morlog.writers.client import MorTable

    schema = pa.schema([("uuid", pa.string()), ("city", pa.string()), ("ts", pa.int64()),
                        ("fare", pa.float64())])
    path = str(tmp_path / "cdc")
    t = MorTable.create(path, schema, key_field="uuid", partition_field="city",
                        ordering_field="ts",
                        table_properties={"hoodie.table.cdc.enabled": "true"})
    t.upsert(pa.table({"uuid": ["a", "b"], "city": ["sf", "sf"], "ts": [1, 1],
                       "fare": [9.5, 12.0]}, schema=schema))
    t.upsert(pa.table({"uuid": ["a", "c"], "city": ["sf", "la"], "ts": [2, 2],
                       "fare": [10.0, 3.0]}, schema=schema))
    t.delete(pa.table({"uuid": ["b"], "city": ["sf"]}))
    want = Table(path).changes("earliest")
    got = (spark.read.format("morlog").option(QT, "incremental").option(BEGIN, "earliest")
           .option("hoodie.datasource.query.incremental.format", "cdc").load(path))
    key = ["op", "ts_ms", "before", "after"]
    assert sorted(tuple(r[k] for k in key) for r in got.collect()) == sorted(
        tuple(r[k] for k in key) for r in want.to_pylist())
    assert sorted(r["op"] for r in want.to_pylist()) == ["d", "i", "i", "i", "u"]
