"""Filter pushdown of ``spark.read.format("morlog")`` (``MorlogReader.pushFilters``,
spark/source.py, spec/prune.md §8.1): which filters are taken, which are left to Spark,
the slices the read tasks see, and that every query returns what Spark computes on the
unpruned read.

The session-scoped ``spark`` fixture: ``tests/spark_session.py`` (``register`` turns
pushdown on)."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install .[spark])")

from pyspark.sql import datasource as sds  # noqa: E402

from morlog.readers import predicate as pr  # noqa: E402
from morlog.readers.prune import prune  # noqa: E402
from morlog.readers.table import Table  # noqa: E402
from morlog.spark.source import MorlogFilteringReader, filter_expr  # noqa: E402
from morlog.spark.write import PUSHDOWN_CONF  # noqa: E402
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig  # noqa: E402

SCHEMA = pa.schema([
    ("id", pa.int64()), ("grp", pa.int32()), ("fare", pa.float64()), ("city", pa.string()),
    ("ts", pa.timestamp("us", tz="UTC")), ("day", pa.date32()),
    ("amount", pa.decimal128(10, 2)), ("flag", pa.bool_()), ("note", pa.string()),
    ("region", pa.string())])
GROUPS = 8
PER_GROUP = 50
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _rows(ids: range, version: int) -> pa.Table:
    grp = [i // PER_GROUP for i in ids]
    return pa.table({
        "id": list(ids), "grp": grp,
        "fare": [float("nan") if i % 97 == 5 else i * 1.5 + version for i in ids],
        "city": [f"city{g:02d}" for g in grp],
        "ts": [T0 + dt.timedelta(hours=i) for i in ids],
        "day": [(T0 + dt.timedelta(days=g)).date() for g in grp],
        "amount": [decimal.Decimal(i) / 4 for i in ids],
        "flag": [i % 2 == 0 for i in ids],
        "note": [None if i % 10 == 0 else f"n{i}" for i in ids],
        "region": ["east" if g % 2 else "west" for g in grp]}, schema=SCHEMA)


@pytest.fixture(scope="module")
def table_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One file group per ``grp`` (batches written group by group with routing off), then
    log blocks: updates, deletes."""
    root = str(tmp_path_factory.mktemp("pushdown") / "t")
    t = MorTable.create(root, SCHEMA, key_field="id", partition_field="region",
                        ordering_field="id",
                        config=WriteConfig(fsync=False, route_inserts=False))
    for g in range(GROUPS):
        t.insert(_rows(range(g * PER_GROUP, (g + 1) * PER_GROUP), 0))
    t.upsert(_rows(range(10, 20), 1))
    t.upsert(_rows(range(210, 215), 2))
    t.delete(_rows(range(300, 310), 0).select(["id", "region"]))
    return root


def _pushed_read(spark: Any, path: str, where: str) -> tuple[list[tuple[Any, ...]], str]:
    df = spark.read.format("morlog").option("filter.pushdown", "true").load(path).where(where)
    plan = df._jdf.queryExecution().executedPlan().toString()
    return sorted(tuple(r) for r in df.select("id", "fare").collect()), plan


@pytest.fixture(scope="module")
def plain(spark: Any, table_path: str) -> Any:
    """The table read once without pushdown, cached: Spark evaluates each query on it. The
    cache's batch pruning by min/max is off: its statistics ignore NaN, so with it Spark
    drops NaN rows that ``fare > 500`` keeps on any plain scan."""
    key = "spark.sql.inMemoryColumnarStorage.partitionPruning"
    before = spark.conf.get(key, None)
    spark.conf.set(key, "false")
    df = spark.read.format("morlog").option("filter.pushdown", "false").load(table_path)
    df = df.cache()
    df.count()
    yield df
    df.unpersist()
    if before is None:
        spark.conf.unset(key)
    else:
        spark.conf.set(key, before)


def _plain_read(plain: Any, where: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in plain.where(where).select("id", "fare").collect())


QUERIES = [
    "id BETWEEN 120 AND 130",
    "id IN (3, 260, 399)",
    "grp = 2 OR grp = 5",
    "city = 'city03'",
    "city > 'city06'",
    "NOT (grp <= 6)",
    "note IS NULL AND grp = 1",
    "note IS NOT NULL AND id < 12",
    "ts >= TIMESTAMP '2026-01-10 00:00:00' AND ts < TIMESTAMP '2026-01-10 05:00:00'",
    "day = DATE '2026-01-04'",
    "amount > 90.5 AND amount <= 92",
    "flag = true AND id < 6",
    "region = 'east' AND id < 60",
    "fare > 500",
    "fare = 'NaN'",
    "isnan(fare)",
    "fare <=> 9.0",
    "NOT (note <=> 'n5')",
    "NOT (grp <=> 3)",
    "city LIKE 'city0%' AND id = 7",
    "id = 305",
    "id > 100000",
]


@pytest.mark.parametrize("where", QUERIES)
def test_pushed_query_returns_what_spark_computes_unpruned(spark: Any, table_path: str,
                                                           plain: Any, where: str) -> None:
    rows, _ = _pushed_read(spark, table_path, where)
    expected = _plain_read(plain, where)
    # NaN != NaN in tuples: compare their text
    assert [repr(r) for r in rows] == [repr(r) for r in expected]
    if where in ("id = 305", "id > 100000"):
        assert rows == []
    elif where not in ("fare > 500",):
        assert rows, f"{where}: the data has matches"


def _reader(path: str) -> MorlogFilteringReader:
    from pyspark.sql.types import StructType

    return MorlogFilteringReader(path, StructType(), None, ["id"])


def test_push_filters_takes_exact_filters_and_leaves_the_rest(table_path: str) -> None:
    r = _reader(table_path)
    taken = [sds.EqualTo(("id",), 7), sds.In(("city",), ("city01", "city02")),
             sds.IsNull(("note",)), sds.Not(sds.IsNotNull(("note",))),
             sds.GreaterThanOrEqual(("ts",), T0), sds.EqualNullSafe(("grp",), None),
             sds.LessThan(("amount",), decimal.Decimal("3.25"))]
    left = [sds.StringStartsWith(("city",), "city0"), sds.EqualTo(("id", "x"), 1),
            sds.In(("id",), (1, None)), sds.EqualTo(("fare",), float("nan")),
            sds.EqualTo(("nope",), 1), sds.EqualTo(("grp",), "not a number")]
    prune_only = [sds.GreaterThan(("fare",), 3.0), sds.Not(sds.LessThan(("fare",), 3.0))]
    returned = r.pushFilters([*taken, *left, *prune_only])
    assert [id(f) for f in returned] == [id(f) for f in left + prune_only]
    assert r.prune_expr is not None and r.rows is not None
    assert len(pr.columns(r.rows.expr)) == 6 and "fare" not in pr.columns(r.rows.expr)
    assert "fare" in pr.columns(r.prune_expr)


def test_pushed_float_filters_prune_in_sparks_nan_order(tmp_path: Any) -> None:
    """Spark's ``fare > 500`` holds for NaN: a slice whose numbers stay below 500 but which
    holds NaN is kept; one without NaN (the base file's NaN count says so) is pruned."""
    root = str(tmp_path / "t")
    t = MorTable.create(root, SCHEMA, key_field="id", partition_field="region",
                        ordering_field="id", config=WriteConfig(fsync=False))
    rows = _rows(range(0, 4), 0).to_pylist()
    rows[0]["fare"] = float("nan")
    rows[1]["region"] = rows[2]["region"] = rows[3]["region"] = "south"
    t.insert(pa.Table.from_pylist(rows, schema=SCHEMA))
    from morlog.writers.services.compaction import compact

    compact(t)
    r = _reader(root)
    assert r.pushFilters([sds.GreaterThan(("fare",), 500.0)]) != []
    assert sorted(p.partition for p in r.partitions()) == ["west"]  # NaN > 500 in Spark
    assert not prune(Table(root), "fare > 500").kept  # IEEE: NaN > 500 is FALSE


def test_no_filter_taken_leaves_the_read_unchanged(table_path: str) -> None:
    r = _reader(table_path)
    f = [sds.StringContains(("city",), "3")]
    assert r.pushFilters(f) == f
    assert r.prune_expr is None and r.rows is None
    assert len(r.partitions()) == len(Table(table_path).file_slices())


def test_filter_expr_forms() -> None:
    assert filter_expr(sds.GreaterThan(("a",), 1)) == pr.Compare("a", ">", 1)
    assert filter_expr(sds.Not(sds.In(("a",), (1, 2)))) == pr.Not(pr.In("a", (1, 2)))
    assert filter_expr(sds.EqualNullSafe(("a",), 3)) == pr.And(
        (pr.Not(pr.IsNull("a")), pr.Compare("a", "=", 3)))
    assert filter_expr(sds.IsNotNull(("a",))) == pr.Not(pr.IsNull("a"))
    assert filter_expr(sds.EqualTo(("a",), None)) is None
    assert filter_expr(sds.Not(sds.StringEndsWith(("a",), "x"))) is None


def test_partitions_are_the_slices_the_pruner_keeps(table_path: str) -> None:
    r = _reader(table_path)
    r.pushFilters([sds.GreaterThanOrEqual(("id",), 120), sds.LessThan(("id",), 140)])
    parts = r.partitions()
    kept = prune(Table(table_path), "id >= 120 AND id < 140").kept
    assert (sorted(f"{p.partition}/{p.file_id}" for p in parts)
            == sorted(f"{d.partition}/{d.file_id}" for d in kept))
    assert len(parts) < len(Table(table_path).file_slices())


def test_spark_plan_reads_only_the_kept_slices(spark: Any, table_path: str) -> None:
    df = (spark.read.format("morlog").option("filter.pushdown", "true").load(table_path)
          .where("id >= 120 AND id < 140"))
    assert df.rdd.getNumPartitions() == len(prune(Table(table_path),
                                                  "id >= 120 AND id < 140").kept)
    for plain in (spark.read.format("morlog"),  # pushdown is off by default
                  spark.read.format("morlog").option("pushdown", "false")):
        df = plain.load(table_path).where("id >= 120 AND id < 140")
        assert df.rdd.getNumPartitions() == len(Table(table_path).file_slices())


def _view_reused(spark: Any, table_path: str, pushdown: str | None) -> tuple[int, int]:
    """Rows of a query without filters after one with a filter, on one temp view, and the
    rows the table holds."""
    reader = spark.read.format("morlog")
    if pushdown is not None:
        reader = reader.option("filter.pushdown", pushdown)
    df = reader.load(table_path)
    df.createOrReplaceTempView("reused_view")
    assert spark.sql("SELECT id FROM reused_view WHERE id >= 120 AND id < 140").count() == 20
    return (spark.sql("SELECT id FROM reused_view").count(), Table(table_path).read().num_rows)


def test_a_view_queried_again_reads_every_row(spark: Any, table_path: str) -> None:
    """The default (no pushdown): a filterless query after a filtered one on the same view
    reads the whole table (with pushdown on by default it read only the first query's
    slices: tests/test_quickstart.py lost rows)."""
    got, want = _view_reused(spark, table_path, None)
    assert got == want


@pytest.mark.xfail(strict=True, reason=(
    "PySpark 4.3 keeps the read planned by one scan's filter pushdown on the data source "
    "object later scans of the same view share, so they read the first query's slices "
    "only; strict: when the installed Spark keeps it per scan, this passes and fails the "
    "run, and pushdown can become the default again (morlog.spark.source)"))
def test_pushdown_does_not_leak_between_queries_of_a_view(spark: Any, table_path: str) -> None:
    got, want = _view_reused(spark, table_path, "true")
    assert got == want


def test_without_the_spark_setting_reads_work_and_pushdown_is_spark_s_error(
        spark: Any, table_path: str) -> None:
    """The source Spark finds by itself (no ``register``) does not push filters, so reads
    work in a session whose pushdown setting is off; asking for pushdown there is Spark's
    error naming the setting. (Registering the plain source here stands for that.)"""
    from pyspark.errors import AnalysisException

    from morlog.spark.write import MorlogDataSource, register

    spark.conf.set(PUSHDOWN_CONF, "false")
    spark.dataSource.register(MorlogDataSource)
    try:
        df = spark.read.format("morlog").load(table_path).where("id = 7")
        assert [r.id for r in df.collect()] == [7]
        assert df.rdd.getNumPartitions() == len(Table(table_path).file_slices())
        with pytest.raises(AnalysisException, match=PUSHDOWN_CONF.replace(".", r"\.")):
            spark.read.format("morlog").option("pushdown", "true").load(table_path).collect()
        with pytest.raises(Exception, match="filter.pushdown"):
            spark.read.format("morlog").option("pushdown", "yes").load(table_path).collect()
    finally:
        register(spark)


def test_time_travel_with_pushdown(spark: Any, table_path: str) -> None:
    t = Table(table_path)
    first = t.timeline.completed()[GROUPS - 1].requested  # after the inserts, before updates
    df = (spark.read.format("morlog").option("as.of.instant", first).load(table_path)
          .where("id BETWEEN 10 AND 12"))
    assert sorted(r.fare for r in df.collect()) == [15.0, 16.5, 18.0]
