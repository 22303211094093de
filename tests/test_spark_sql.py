"""Spark SQL over morlog tables (``morlog.spark.sql``): Hudi's quickstart SQL statements, as
far as Spark 4 lets a Python data source take part; the statements it refuses are checked
to fail and their equivalent calls (the README's table) to do the same thing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (pip install .[spark])")

from morlog.readers.table import Table  # noqa: E402
from morlog.spark.sql import sql_options  # noqa: E402

COLUMNS = "ts BIGINT, uuid STRING, rider STRING, driver STRING, fare DOUBLE, city STRING"
# Hudi's quickstart rows (hudi website, quick-start-guide, Spark SQL)
ROWS = [
    (1695159649087, "334e26e9-8355-45cc-97c6-c31daf0df330", "rider-A", "driver-K", 19.10,
     "san_francisco"),
    (1695091554788, "e96c4396-3fad-413a-a942-4cb36106d721", "rider-C", "driver-M", 27.70,
     "san_francisco"),
    (1695046462179, "9909a8b1-2d15-4d3d-8ec9-efc48c536a00", "rider-D", "driver-L", 33.90,
     "san_francisco"),
    (1695332066204, "1dced545-862b-4ceb-8b43-d2a568f6616b", "rider-E", "driver-O", 93.50,
     "san_francisco"),
    (1695516137016, "e3cf430c-889d-4015-bc98-59bdce1e530c", "rider-F", "driver-P", 34.15,
     "sao_paulo"),
    (1695376420876, "7a84095f-737f-40bc-b62f-6b69664712d2", "rider-G", "driver-Q", 43.40,
     "sao_paulo"),
    (1695173887231, "3eeb61f7-c2b0-4636-99bd-5d7a5a1d2c04", "rider-I", "driver-S", 41.06,
     "chennai"),
    (1695115999911, "c8abbe79-8d89-47ea-b4ce-4d224bae5bfa", "rider-J", "driver-T", 17.85,
     "chennai"),
]
NAMES = ["ts", "uuid", "rider", "driver", "fare", "city"]


def _values(rows: list[tuple[Any, ...]]) -> str:
    return ",\n".join("(" + ", ".join(repr(v) for v in r) + ")" for r in rows)


def _view(spark: Any, path: Path, name: str = "hudi_table", extra: str = "") -> None:
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name} ({COLUMNS}) USING morlog OPTIONS ("
              f"path '{path}', primaryKey 'uuid', preCombineField 'ts', type 'mor', "
              f"`hoodie.datasource.write.partitionpath.field` 'city'{extra})")


def _last_operation(path: Path) -> str:
    tl = Table(str(path)).timeline
    return str(tl.metadata(tl.completed()[-1])["operationType"])


def _table(path: Path) -> dict[str, dict[str, Any]]:
    return {r["uuid"]: r for r in Table(str(path)).read(columns=NAMES).to_pylist()}


def test_hudi_quickstart_sql(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "hudi_table"
    _view(spark, path)
    spark.sql(f"INSERT INTO hudi_table VALUES {_values(ROWS)}")
    assert _last_operation(path) == "INSERT"  # hoodie.spark.sql.insert.into.operation
    assert set(_table(path)) == {r[1] for r in ROWS}
    got = spark.sql("SELECT ts, fare, rider, driver, city FROM hudi_table WHERE fare > 20.0")
    want = {(r[0], r[4], r[2], r[3], r[5]) for r in ROWS if r[4] > 20.0}
    assert {tuple(r) for r in got.collect()} == want

    # UPDATE and DELETE FROM need DSv2 capabilities Spark gives no Python data source
    with pytest.raises(Exception, match="UPDATE"):
        spark.sql("UPDATE hudi_table SET fare = 25.0 WHERE rider = 'rider-D'")
    with pytest.raises(Exception, match="(?i)delete"):
        spark.sql("DELETE FROM hudi_table WHERE uuid = '3f3d9565-7261-40e6-9b39-b8aa784f95e2'")
    # ... the README's equivalents: an upsert and a delete of the rows the WHERE selects
    upd = spark.sql("SELECT ts + 1 AS ts, uuid, rider, driver, 25.0D AS fare, city "
                    "FROM hudi_table WHERE rider = 'rider-D'")
    (upd.write.format("morlog").mode("append")
     .option("hoodie.datasource.write.operation", "upsert").save(str(path)))
    gone = spark.sql("SELECT * FROM hudi_table WHERE rider = 'rider-J'")
    (gone.write.format("morlog").mode("append")
     .option("hoodie.datasource.write.operation", "delete").save(str(path)))
    _view(spark, path)  # a view plans its read once (README): re-created after the writes
    rows = {r.rider: r.fare for r in spark.sql("SELECT rider, fare FROM hudi_table").collect()}
    assert rows["rider-D"] == 25.0 and "rider-J" not in rows and len(rows) == len(ROWS) - 1

    # INSERT INTO as upsert: Hudi's hoodie.spark.sql.insert.into.operation
    _view(spark, path, "hudi_upserts", ", `hoodie.spark.sql.insert.into.operation` 'upsert'")
    newer = (ROWS[0][0] + 5, *ROWS[0][1:4], 99.0, ROWS[0][5])
    spark.sql(f"INSERT INTO hudi_upserts VALUES {_values([newer])}")
    assert _last_operation(path) == "UPSERT"
    assert _table(path)[ROWS[0][1]]["fare"] == 99.0


def test_catalog_tables_take_sparks_options(spark: Any, tmp_path: Path) -> None:
    """CREATE TABLE ... USING morlog LOCATION: Spark's owner, provider, location accepted;
    the table is read and written with its path named in the statement (Spark passes a
    Python source no stored options), and a statement without it says so."""
    path = tmp_path / "t"
    df = spark.createDataFrame(ROWS, COLUMNS)
    (df.write.format("morlog").option("primaryKey", "uuid").option("preCombineField", "ts")
     .option("path", str(path)).saveAsTable("morlog_saved"))
    assert len(_table(path)) == len(ROWS)
    spark.sql(f"CREATE TABLE morlog_located USING morlog LOCATION '{path}'")
    got = spark.sql(f"SELECT count(*) AS n FROM morlog_located WITH ('path' = '{path}')")
    assert got.collect()[0].n == len(ROWS)
    with pytest.raises(Exception, match="CREATE TEMPORARY VIEW"):
        spark.sql("SELECT * FROM morlog_located").collect()
    with pytest.raises(Exception, match="CREATE TEMPORARY VIEW"):
        df.write.format("morlog").mode("append").saveAsTable("morlog_unplaced")
    spark.sql("DROP TABLE IF EXISTS morlog_saved")
    spark.sql("DROP TABLE IF EXISTS morlog_located")


def test_sql_options_map_sparks_keys_and_hudis_table_properties() -> None:
    opts = sql_options({"owner": "me", "provider": "morlog", "location": "file:/tmp/x",
                        "option.primaryKey": "id", "primarykey": "id",
                        "preCombineField": "ts", "type": "mor"})
    assert opts == {"path": "file:///tmp/x", "hoodie.datasource.write.recordkey.field": "id",
                    "hoodie.datasource.write.precombine.field": "ts",
                    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
                    "hoodie.datasource.write.operation": "insert"}
    # the operation given wins; a DataFrame write without SQL properties stays Hudi's upsert
    assert sql_options({"primaryKey": "id", "hoodie.datasource.write.operation": "upsert"})[
        "hoodie.datasource.write.operation"] == "upsert"
    assert "hoodie.datasource.write.operation" not in sql_options({"path": "/t"})
    assert sql_options({"hoodie.spark.sql.insert.into.operation": "UPSERT"})[
        "hoodie.datasource.write.operation"] == "upsert"
    with pytest.raises(Exception, match="insert.into.operation"):
        sql_options({"hoodie.spark.sql.insert.into.operation": "delete"})
