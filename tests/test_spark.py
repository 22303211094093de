"""``format("morlog")`` in Spark: reads equal morlog's snapshot, writes upsert through the client.

The session-scoped ``spark`` fixture: ``tests/spark_session.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (pip install .[spark])")

from morlog.readers.table import Table  # noqa: E402

from .hudi_fixtures import requires_fixtures, tables  # noqa: E402


def _rows(df: Any, key: str) -> list[dict[str, Any]]:
    return sorted((r.asDict() for r in df.collect()), key=lambda r: r[key])


@requires_fixtures
@pytest.mark.parametrize("path", tables(), ids=lambda p: p.name)
def test_spark_read_equals_the_snapshot(spark: Any, path: Path) -> None:
    df = spark.read.format("morlog").load(str(path))
    expected = Table(str(path)).read()
    assert df.rdd.getNumPartitions() == max(1, len(Table(str(path)).file_slices()))
    got = _rows(df, "_hoodie_record_key")
    want = sorted(expected.to_pylist(), key=lambda r: r["_hoodie_record_key"])
    assert [r["_hoodie_record_key"] for r in got] == [r["_hoodie_record_key"] for r in want]
    assert set(df.columns) == set(expected.column_names)


@requires_fixtures
def test_spark_read_prunes_columns_partitions_and_travels_in_time(spark: Any) -> None:
    path = next(p for p in tables() if p.name == "v9_txns_simple_nometa")
    df = (spark.read.format("morlog").schema("txn_id string, region string")
          .load(str(path)))
    assert df.columns == ["txn_id", "region"]
    eu = df.filter("region = 'eu'")
    assert {r.region for r in eu.collect()} == {"eu"}
    old = spark.read.format("morlog").option("as.of.instant", "20260307135832616").load(
        str(path))
    assert old.count() == Table(str(path)).read("20260307135832616").num_rows


def test_unknown_options_are_errors(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="unknown read option 'no.such.option'"):
        spark.read.format("morlog").option("no.such.option", "1").load(str(tmp_path)).count()


def test_spark_write_upserts_and_reads_back(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df1 = spark.createDataFrame([(f"k{i}", "eu" if i % 2 else "us", 1, float(i))
                                 for i in range(50)], "id string, region string, ts long, "
                                "amount double").repartition(3)
    opts = {"hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.table.name": "sparky"}
    df1.write.format("morlog").options(**opts).mode("append").save(path)
    df2 = spark.createDataFrame([(f"k{i}", "eu" if i % 2 else "us", 2, float(100 + i))
                                 for i in range(40, 60)], df1.schema)
    df2.write.format("morlog").options(**opts).mode("append").save(path)
    back = spark.read.format("morlog").load(path)
    rows = {r.id: (r.ts, r.amount) for r in back.collect()}
    assert len(rows) == 60
    assert rows["k45"] == (2, 145.0) and rows["k10"] == (1, 10.0)
    # stock reader agrees
    import hudi

    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read()
    assert pa.Table.from_batches(batches).num_rows == 60
    # deletes through the same path
    spark.createDataFrame([("k1", "eu"), ("k2", "us")], "id string, region string") \
        .write.format("morlog").options(**opts).option(
            "hoodie.datasource.write.operation", "delete").mode("append").save(path)
    assert spark.read.format("morlog").load(path).count() == 58
    with pytest.raises(Exception, match="unknown write option 'colour'"):
        df2.write.format("morlog").options(**opts).option("colour", "red").mode(
            "append").save(path)


def test_spark_demo_pipeline(spark: Any, tmp_path: Path) -> None:
    import io

    from morlog.cli.spark_demo import run

    out = io.StringIO()
    assert run("local[2]", str(tmp_path / "demo"), 3, 600, out) == 0
    text = out.getvalue()
    assert text.count("  commit ") == 3
    # later batches: the tasks route inserts into the small file groups the first opened
    import re

    routed = [int(m) for m in re.findall(r": 420 inserts \((\d+) routed into existing", text)]
    assert len(routed) == 2 and all(n > 0 for n in routed), text
    assert "read back with Spark: 1440 rows" in text
    assert spark.sparkContext._jsc is not None  # the shared session is still alive


def _df(spark: Any, ids: range, ts: int) -> Any:
    return spark.createDataFrame([(f"k{i:04d}", "eu" if i % 2 else "us", ts, float(ts * 1000 + i))
                                  for i in ids], "id string, region string, ts long, "
                                 "amount double").repartition(3)


def test_distributed_upsert(spark: Any, tmp_path: Path) -> None:
    from morlog.spark.write import upsert
    from morlog.writers.options import WriteConfig

    path = str(tmp_path / "d")
    cfg = WriteConfig(fsync=False, max_file_size=2_000_000, small_file_limit=1_500_000,
                      record_size=100)
    kw = dict(key="id", partition="region", ordering="ts", config=cfg)
    first = upsert(spark, _df(spark, range(300), 1), path, **kw)
    assert first["morlog.inserts"] == "300" and first["morlog.inserts.routed"] == "0"
    second = upsert(spark, _df(spark, range(200, 600), 2), path, **kw)
    assert second["morlog.inserts"] == "300" and second["morlog.inserts.routed"] == "300"
    rows = {r["id"]: r["ts"] for r in Table(path).read().to_pylist()}
    assert len(rows) == 600 and rows["k0250"] == 2 and rows["k0100"] == 1
    # duplicates in a DataFrame combine by the ordering field
    dup = spark.createDataFrame([("k0001", "eu", 9, 1.0), ("k0001", "eu", 5, 2.0)],
                                "id string, region string, ts long, amount double")
    upsert(spark, dup, path, **kw)
    assert {r["id"]: r["ts"] for r in Table(path).read().to_pylist()}["k0001"] == 9
    dels = spark.createDataFrame([("k0003", "eu"), ("k0004", "us")], "id string, region string")
    upsert(spark, dels, path, operation="delete", **kw)
    final = {r["id"] for r in Table(path).read().to_pylist()}
    assert len(final) == 598 and "k0003" not in final
    # a key upserted with another partition value is a new record in that partition (Hudi's
    # non-global index), and routing it into that partition's group keeps the group's data
    moved = spark.createDataFrame([("k0005", "us", 7, 7.0)], dup.schema)
    upsert(spark, moved, path, **kw)
    after = Table(path).read().to_pylist()
    assert len(after) == 599
    assert sorted(r["region"] for r in after if r["id"] == "k0005") == ["eu", "us"]
    import hudi

    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read()
    assert pa.Table.from_batches(batches).num_rows == 599


def _fail_first_attempt() -> Any:
    """A write-task hook failing every task's first attempt after its first file group
    (a closure, so that Spark ships it by value to the workers)."""

    def hook(fid: str) -> None:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if ctx is not None and ctx.attemptNumber() == 0:
            raise RuntimeError(f"injected failure after writing {fid}")

    return hook


def test_distributed_upsert_task_retries_do_not_duplicate(spark: Any, tmp_path: Path) -> None:
    from morlog.spark.write import upsert
    from morlog.writers.options import WriteConfig

    path = str(tmp_path / "r")
    cfg = WriteConfig(fsync=False, max_file_size=2_000_000, small_file_limit=1_500_000,
                      record_size=100)
    kw = dict(key="id", partition="region", ordering="ts", config=cfg)
    upsert(spark, _df(spark, range(100), 1), path, **kw)

    fail_first_attempt = _fail_first_attempt()
    upsert(spark, _df(spark, range(50, 150), 2), path, task_hook=fail_first_attempt, **kw)
    table = Table(path)
    rows = table.read().to_pylist()
    assert len(rows) == 150 and len({r["id"] for r in rows}) == 150
    # every block of the retried instant appears once per file group
    from morlog.readers import LogFileReader

    instant = table.timeline.completed()[-1].requested
    for s in table.file_slices():
        d = tmp_path / "r" / s.partition
        blocks = []
        for name in s.log_files:
            with LogFileReader(str(d / name)) as r:
                blocks += [b for b in r.blocks() if b.instant == instant]
        assert len(blocks) <= 1


def test_spark_on_s3_distributed_upsert_with_retries_and_data_source(
        spark: Any, s3: str) -> None:
    """The same upserts against S3 (moto): executors write new log versions with
    conditional PUTs, a retried task drops its earlier attempt's objects, and the data
    source writes and reads the table by URI."""
    pytest.importorskip("boto3", reason="boto3 is not installed (pip install .[test])")
    import uuid

    import pyarrow.fs as pafs

    from morlog.spark.write import upsert
    from morlog.writers.options import WriteConfig

    bucket = f"s{uuid.uuid4().hex[:12]}"
    uri = f"s3://test:test@{bucket}/t?{s3}"
    fs, _ = pafs.FileSystem.from_uri(uri)
    fs.create_dir(bucket)
    cfg = WriteConfig(max_file_size=2_000_000, small_file_limit=1_500_000, record_size=100)
    kw = dict(key="id", partition="region", ordering="ts", config=cfg)
    upsert(spark, _df(spark, range(100), 1), uri, **kw)

    fail_first_attempt = _fail_first_attempt()
    second = upsert(spark, _df(spark, range(50, 150), 2), uri, task_hook=fail_first_attempt,
                    **kw)
    assert second["morlog.inserts.routed"] == "50"
    rows = {r["id"]: r["ts"] for r in Table(uri).read().to_pylist()}
    assert len(rows) == 150 and rows["k0060"] == 2 and rows["k0010"] == 1
    # the data source: append (upsert) by URI, then read by URI
    (_df(spark, range(140, 160), 3).write.format("morlog")
     .option("hoodie.datasource.write.recordkey.field", "id")
     .option("hoodie.datasource.write.partitionpath.field", "region")
     .option("hoodie.datasource.write.precombine.field", "ts").mode("append").save(uri))
    got = {r["id"]: r["ts"] for r in spark.read.format("morlog").load(uri).collect()}
    assert len(got) == 160 and got["k0145"] == 3 and got["k0060"] == 2
    assert got == {r["id"]: r["ts"] for r in Table(uri).read().to_pylist()}
    # nothing staged is left behind
    names = [i.path for i in fs.get_file_info(pafs.FileSelector(f"{bucket}/t/.hoodie",
                                                                recursive=True))]
    assert not [n for n in names if "/.temp/" in n and n.endswith(".arrow")]


def _counting_task(inner: Any, out_dir: str) -> Any:
    """A Spark task function running ``inner`` and recording, in a file of ``out_dir``, how
    many times the task resolved a path or URI into a TableLocation (a closure, so that
    Spark ships it by value)."""

    def run(batches: Any) -> Any:
        import os
        import uuid

        from morlog.readers.storage import TableLocation

        real = TableLocation.__dict__["resolve"]
        calls: list[str] = []

        def counting(cls: Any, path: str, filesystem: Any = None) -> Any:
            calls.append(path)
            return real.__func__(cls, path, filesystem)

        TableLocation.resolve = classmethod(counting)  # type: ignore[assignment,method-assign]
        try:
            yield from inner(batches)
        finally:
            TableLocation.resolve = real  # type: ignore[method-assign]
            with open(os.path.join(out_dir, uuid.uuid4().hex), "w") as f:
                f.write(str(len(calls)))

    return run


def _small_groups_table(spark: Any, where: Path) -> tuple[str, dict[str, Any]]:
    """A 100-row table of small file groups written by the distributed upsert; its path
    and the upsert's keyword arguments."""
    import morlog.spark.write as spark_mod
    from morlog.writers.options import WriteConfig

    cfg = WriteConfig(fsync=False, max_file_size=2_000_000, small_file_limit=1_500_000,
                      record_size=100)
    kw: dict[str, Any] = dict(key="id", partition="region", ordering="ts", config=cfg)
    spark_mod.upsert(spark, _df(spark, range(100), 1), str(where), **kw)
    return str(where), kw


def test_distributed_upsert_resolves_the_path_once_on_the_driver_and_never_in_tasks(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import morlog.spark.write as spark_mod
    from morlog.readers.storage import TableLocation

    path, kw = _small_groups_table(spark, tmp_path / "c")
    counts = tmp_path / "counts"
    counts.mkdir()
    for name in ("_tagger", "_router", "_routed_writer"):
        real_task = getattr(spark_mod, name)
        monkeypatch.setattr(spark_mod, name, lambda *a, f=real_task: _counting_task(
            f(*a), str(counts)))
    real = TableLocation.resolve.__func__  # type: ignore[attr-defined]
    driver: list[str] = []

    def counting(cls: Any, p: str, filesystem: Any = None) -> Any:
        driver.append(p)
        return real(cls, p, filesystem)

    monkeypatch.setattr(TableLocation, "resolve", classmethod(counting))
    r = spark_mod.upsert(spark, _df(spark, range(50, 150), 2), path, **kw)
    assert r["morlog.inserts"] == "50"
    assert driver == [path]  # once, on the driver
    tasks = [int(f.read_text()) for f in counts.iterdir()]
    assert tasks and set(tasks) == {0}  # tagging and writing tasks never parse it again


def _recording_tagger(inner: Any, out_dir: str) -> Any:
    """A tagging task running ``inner`` and recording, in a file of ``out_dir``, the
    columns and the number of rows it was given (a closure: Spark ships it by value)."""

    def run(batches: Any) -> Any:
        import json
        import os
        import uuid

        seen = {"columns": [], "rows": 0}

        def counted(it: Any) -> Any:
            for b in it:
                seen["columns"] = b.schema.names
                seen["rows"] += b.num_rows
                yield b

        try:
            yield from inner(counted(batches))
        finally:
            with open(os.path.join(out_dir, uuid.uuid4().hex), "w") as f:
                f.write(json.dumps(seen))

    return run


def test_distributed_upsert_passes_the_rows_through_python_once(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every row goes through the Python tagging once, with all its columns, in the write's
    one job: no counting job tags the keys first. Before, a counting job tagged the keys,
    partitions and ordering values, and the write job tagged every row again (and, earlier
    still, each combined duplicates with a window over the batch)."""
    import json

    import morlog.spark.write as spark_mod

    path, kw = _small_groups_table(spark, tmp_path / "once")
    seen = tmp_path / "seen"
    seen.mkdir()
    real = spark_mod._tagger
    monkeypatch.setattr(spark_mod, "_tagger", lambda *a: _recording_tagger(
        real(*a), str(seen)))
    r = spark_mod.upsert(spark, _df(spark, range(50, 150), 2), path, **kw)
    assert r["morlog.inserts"] == "50" and r["morlog.updates"] == "50"
    tasks = [json.loads(f.read_text()) for f in seen.iterdir()]
    wide = sum(t["rows"] for t in tasks if "amount" in t["columns"])
    narrow = [t for t in tasks if t["rows"] and "amount" not in t["columns"]]
    assert wide == 100, tasks  # every row once
    assert not narrow, tasks  # and no tagging of the keys alone
    rows = {x["id"]: x["ts"] for x in Table(path).read().to_pylist()}
    assert len(rows) == 150 and rows["k0060"] == 2 and rows["k0010"] == 1


def test_distributed_upsert_combines_duplicates_as_the_client(
        spark: Any, tmp_path: Path) -> None:
    """Copies of a key in several input partitions combine as the write client combines
    them: the greatest ordering value, the later row on ties; a key sent to two partitions
    keeps a row in each (a non-global index: Hudi combines by key and partition path,
    ``HoodieWriteHelper.deduplicateRecords``)."""
    from morlog.spark.write import upsert
    from morlog.writers.client import MorTable
    from morlog.writers.options import WriteConfig

    cfg = WriteConfig(fsync=False, max_file_size=2_000_000, small_file_limit=1_500_000,
                      record_size=100)
    first = pa.table({"id": [f"k{i:04d}" for i in range(40)],
                      "region": ["eu" if i % 2 else "us" for i in range(40)],
                      "ts": pa.array([1] * 40, pa.int64()),
                      "amount": [float(i) for i in range(40)]})
    dup = [("k0001", "eu", 5, 1.0), ("k0001", "eu", 9, 2.0), ("k0100", "us", 3, 3.0),
           ("k0001", "eu", 9, 3.0), ("k0100", "us", 3, 4.0), ("k0002", "us", 0, 5.0),
           ("k0101", "eu", 1, 6.0), ("k0100", "us", 2, 7.0)]
    cross = [("k0200", "eu", 1, 8.0), ("k0200", "us", 2, 9.0), ("k0003", "eu", 4, 10.0)]
    for name, rows in (("same", dup), ("cross", cross)):
        batch = pa.table({"id": [r[0] for r in rows], "region": [r[1] for r in rows],
                          "ts": pa.array([r[2] for r in rows], pa.int64()),
                          "amount": [r[3] for r in rows]})
        client = MorTable.create(str(tmp_path / f"{name}-c"), first.schema, key_field="id",
                                 partition_field="region", ordering_field="ts", config=cfg)
        client.upsert(first)
        client.upsert(batch)
        path = str(tmp_path / f"{name}-s")
        kw = dict(key="id", partition="region", ordering="ts", config=cfg)
        upsert(spark, spark.createDataFrame(first), path, **kw)
        # several input partitions, the rows' order kept (a later row: a later partition)
        upsert(spark, spark.createDataFrame(batch).repartitionByRange(3, "amount")
               .sortWithinPartitions("amount"), path, **kw)
        want = sorted(Table(str(tmp_path / f"{name}-c")).read(
            columns=["id", "region", "ts", "amount"]).to_pylist(), key=lambda r: r["id"])
        got = sorted(Table(path).read(columns=["id", "region", "ts", "amount"]).to_pylist(),
                     key=lambda r: r["id"])
        assert got == want, name


def test_distributed_upsert_and_delete_reach_every_copy_of_a_key(
        spark: Any, tmp_path: Path) -> None:
    """Hudi's insert may leave a key in two file groups; the distributed upsert then updates
    both copies and its delete removes both, as the client does (the tagger's other groups
    of a key: ``TagResult.also``). Copies of a new key in two partitions stay two records,
    one in each (a non-global index)."""
    from morlog.spark.write import upsert
    from morlog.writers.client import MorTable
    from morlog.writers.options import WriteConfig

    cfg = WriteConfig(fsync=False, route_inserts=False)
    schema = pa.schema([("id", pa.string()), ("region", pa.string()), ("ts", pa.int64())])

    def batch(rows: list[tuple[str, str, int]]) -> pa.Table:
        return pa.table({"id": [r[0] for r in rows], "region": [r[1] for r in rows],
                         "ts": pa.array([r[2] for r in rows], pa.int64())}, schema=schema)

    paths = [str(tmp_path / "client"), str(tmp_path / "spark")]
    for p in paths:
        t = MorTable.create(p, schema, key_field="id", partition_field="region",
                            ordering_field="ts", config=cfg)
        t.insert(batch([("k1", "eu", 1), ("k2", "eu", 1)]))
        t.insert(batch([("k1", "eu", 1), ("k3", "eu", 1)]))  # k1 again: a new file group
    change = batch([("k1", "eu", 7), ("k4", "eu", 2), ("k4", "us", 3), ("k4", "us", 1)])
    MorTable(paths[0], cfg).upsert(change)
    upsert(spark, spark.createDataFrame(change), paths[1], key="id", partition="region",
           ordering="ts", config=cfg)

    def rows(p: str) -> list[tuple[Any, ...]]:
        return sorted((r["id"], r["region"], r["ts"]) for r in Table(p).read(
            columns=["id", "region", "ts"]).to_pylist())

    want = [("k1", "eu", 7), ("k1", "eu", 7), ("k2", "eu", 1), ("k3", "eu", 1),
            ("k4", "eu", 2), ("k4", "us", 3)]
    assert rows(paths[0]) == want
    assert rows(paths[1]) == want
    gone = batch([("k1", "eu", 8)]).select(["id", "region"])
    MorTable(paths[0], cfg).delete(gone)
    upsert(spark, spark.createDataFrame(gone), paths[1], key="id", partition="region",
           operation="delete", config=cfg)
    assert rows(paths[1]) == rows(paths[0]) == want[2:]


_BINS = st.dictionaries(
    st.sampled_from(["eu", "us", "ap", "a/b"]),
    st.lists(st.tuples(st.integers(0, 40), st.booleans()), min_size=1, max_size=6),
    max_size=3)


@settings(max_examples=60, deadline=None)
@given(bins=_BINS, rows=st.lists(st.tuples(st.integers(0, 300),
                                           st.sampled_from(["eu", "us", "ap", "a/b"]),
                                           st.booleans()), max_size=80))
def test_insert_routes_follow_the_bins(bins: dict[str, list[tuple[int, bool]]],
                                       rows: list[tuple[int, str, bool]]) -> None:
    """The distributed upsert's insert routing, done in the tasks on Arrow batches (it was
    a Spark SQL CASE of one branch per bin, whose code grew with the batch): a tagged row
    keeps its file group; an insert goes to a bin of its partition that was planned rows,
    the same one for the same key, flagged new as its bin is; a partition without bins
    leaves it unrouted. Model: the key's XXH64 modulo the partition's planned total,
    against the bins' cumulative counts."""
    from morlog.logformat.keybatch import KeyBatch
    from morlog.logformat.xxh64 import xxh64_batch
    from morlog.spark.write import _FID, _INS, _KEY, _NEW, _PART, _InsertRoutes

    planned = {p: [(f"{p}-g{i}", n, new) for i, (n, new) in enumerate(b)]
               for p, b in bins.items()}
    routes = _InsertRoutes.of(planned)
    keys = [f"k{k}" for k, _, _ in rows]
    batch = pa.RecordBatch.from_arrays(
        [pa.array(keys, pa.string()), pa.array([p for _, p, _ in rows], pa.string()),
         pa.array([f"old-{k}" if tagged else None for k, _, tagged in rows], pa.string())],
        names=[_KEY, _PART, _FID])
    out = routes.assign(batch).to_pydict()
    hashes = xxh64_batch(KeyBatch.of(keys)).tolist() if keys else []
    for i, (k, p, tagged) in enumerate(rows):
        assert out[_INS][i] is (not tagged)
        if tagged:
            assert (out[_FID][i], out[_NEW][i]) == (f"old-{k}", False)
            continue
        if p not in planned:
            assert out[_FID][i] is None
            continue
        total = max(1, sum(n for _, n, _ in planned[p]))
        slot, start = hashes[i] % total, 0
        want = planned[p][-1]
        for b in planned[p]:
            if start <= slot < start + b[1]:
                want = b
                break
            start += b[1]
        assert (out[_FID][i], out[_NEW][i]) == (want[0], want[2])
        if sum(n for _, n, _ in planned[p]):
            assert want[1] > 0, "an insert routed to a bin planned no rows"


def test_the_write_source_extends_the_read_source(tmp_path: Path) -> None:
    from morlog.logformat.errors import UsageError
    from morlog.spark.source import MorlogReader, MorlogReadSource
    from morlog.spark.write import MorlogDataSource

    assert issubclass(MorlogDataSource, MorlogReadSource)
    assert MorlogReadSource.name() == MorlogDataSource.name() == "morlog"
    assert not hasattr(MorlogReadSource, "writer") or (
        MorlogReadSource.writer is not MorlogDataSource.writer)
    with pytest.raises(UsageError, match="unknown read option 'bogus'"):
        MorlogReadSource({"path": str(tmp_path), "bogus": "1"}).schema()
    with pytest.raises(UsageError, match="needs a path"):
        MorlogReadSource({}).schema()
    from pyspark.sql.types import StructType

    reader = MorlogReadSource({"path": str(tmp_path)}).reader(StructType([]))
    assert isinstance(reader, MorlogReader) and reader.path == str(tmp_path)


def _instants(path: str) -> list[tuple[str, str]]:
    return [(i.requested, i.action) for i in Table(path).timeline.completed()]


def _hudi_count(path: str) -> int:
    import hudi

    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read()
    return pa.Table.from_batches(batches).num_rows if batches else 0


_OPTS = {"hoodie.datasource.write.recordkey.field": "id",
         "hoodie.datasource.write.partitionpath.field": "region",
         "hoodie.datasource.write.precombine.field": "ts", "hoodie.table.name": "modes"}


def test_save_modes_as_hudi_has_them(spark: Any, tmp_path: Path) -> None:
    from morlog.logformat.errors import UsageError
    from morlog.spark.write import save

    path = str(tmp_path / "m")
    # overwrite on no table: creates it (the operation, upsert, on the new table)
    _df(spark, range(10), 1).write.format("morlog").options(**_OPTS).mode("overwrite").save(path)
    assert _instants(path)[-1][1] == "deltacommit"
    assert spark.read.format("morlog").load(path).count() == 10
    # overwrite on a table: one insert_overwrite_table replace commit, only the new rows
    _df(spark, range(100, 103), 2).write.format("morlog").options(**_OPTS).mode(
        "overwrite").save(path)
    inst, action = _instants(path)[-1]
    assert action == "replacecommit"
    meta = Table(path).timeline.metadata(Table(path).timeline.get(inst))  # type: ignore[arg-type]
    assert meta["operationType"] == "INSERT_OVERWRITE_TABLE"
    got = {r.id for r in spark.read.format("morlog").load(path).collect()}
    assert got == {"k0100", "k0101", "k0102"} and _hudi_count(path) == 3
    # the old data is still there for time travel
    old = spark.read.format("morlog").option("as.of.instant", _instants(path)[0][0]).load(path)
    assert old.count() == 10
    # Spark refuses errorifexists (its default) and ignore for Python data sources itself
    for mode in (None, "errorifexists", "ignore"):
        w = _df(spark, range(3), 3).write.format("morlog").options(**_OPTS)
        with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
            (w if mode is None else w.mode(mode)).save(path)
    # ... which morlog's save() gives with Hudi's meaning
    n = len(_instants(path))
    with pytest.raises(UsageError, match="exists already"):
        save(_df(spark, range(3), 3), path, "errorifexists", _OPTS)
    assert save(_df(spark, range(3), 3), path, "ignore", _OPTS) is False
    assert len(_instants(path)) == n
    assert save(_df(spark, range(3), 3), path, "append", _OPTS) is True
    fresh = str(tmp_path / "fresh")
    assert save(_df(spark, range(4), 1), fresh, options=_OPTS) is True
    assert spark.read.format("morlog").load(fresh).count() == 4
    # a delete takes append only (Hudi's rule)
    with pytest.raises(Exception, match="Append is the only save mode"):
        _df(spark, range(3), 3).write.format("morlog").options(**_OPTS).option(
            "hoodie.datasource.write.operation", "delete").mode("overwrite").save(path)


def test_replace_operations_through_the_data_source(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "r")
    w = {**_OPTS, "hoodie.datasource.write.operation": "bulk_insert",
         "hoodie.upsert.shuffle.parallelism": "2"}
    _df(spark, range(40), 1).write.format("morlog").options(**w).mode("append").save(path)
    _df(spark, [100, 102], 1).write.format("morlog").options(**_OPTS).mode("append").save(
        path)
    spark.createDataFrame([("k0900", "asia", 1, 1.0)], "id string, region string, ts long, "
                          "amount double").write.format("morlog").options(**_OPTS).mode(
        "append").save(path)

    def rows() -> set[tuple[str, str]]:
        got = {(r.id, r.region) for r in spark.read.format("morlog").load(path).collect()}
        assert {(r["id"], r["region"]) for r in Table(path).read().to_pylist()} == got
        assert _hudi_count(path) == len(got)
        return got

    before = rows()
    assert len(before) == 43
    # insert_overwrite: the partitions of the batch (us) replaced, eu and asia kept
    op = {**_OPTS, "hoodie.datasource.write.operation": "insert_overwrite"}
    _df(spark, [200, 202], 2).write.format("morlog").options(**op).mode("append").save(path)
    assert rows() == {x for x in before if x[1] != "us"} | {("k0200", "us"), ("k0202", "us")}
    # delete_partition: named by hoodie.datasource.write.partitions.to.delete
    dp = {**_OPTS, "hoodie.datasource.write.operation": "delete_partition",
          "hoodie.datasource.write.partitions.to.delete": "asia"}
    spark.createDataFrame([], "id string, region string, ts long, amount double").write \
        .format("morlog").options(**dp).mode("append").save(path)
    assert {r for r in rows() if r[1] == "asia"} == set()
    # ... or by the DataFrame's partitions
    dp.pop("hoodie.datasource.write.partitions.to.delete")
    _df(spark, [1], 9).write.format("morlog").options(**dp).mode("append").save(path)
    assert rows() == {("k0200", "us"), ("k0202", "us")}
    # insert_overwrite_table in append mode
    ot = {**_OPTS, "hoodie.datasource.write.operation": "insert_overwrite_table"}
    _df(spark, [5], 3).write.format("morlog").options(**ot).mode("append").save(path)
    assert rows() == {("k0005", "eu")}
    ops = [Table(path).timeline.metadata(i)["operationType"]
           for i in Table(path).timeline.completed()]
    assert ops == ["INSERT", "UPSERT", "UPSERT", "INSERT_OVERWRITE", "DELETE_PARTITION",
                   "DELETE_PARTITION", "INSERT_OVERWRITE_TABLE"]
    # options that contradict the table, and Hudi's refusals, name the option
    with pytest.raises(Exception, match="COPY_ON_WRITE"):
        _df(spark, [5], 3).write.format("morlog").options(**_OPTS).option(
            "hoodie.datasource.write.table.type", "COPY_ON_WRITE").mode("append").save(path)
    with pytest.raises(Exception, match="record key field differs"):
        _df(spark, [5], 3).write.format("morlog").options(**_OPTS).option(
            "hoodie.datasource.write.recordkey.field", "region").mode("append").save(path)


def test_hudi_time_formats_of_as_of_instant(spark: Any, tmp_path: Path) -> None:
    import datetime as dt

    path = str(tmp_path / "tt")
    _df(spark, range(5), 1).write.format("morlog").options(**_OPTS).mode("append").save(path)
    first = _instants(path)[0][0]
    _df(spark, range(5, 8), 1).write.format("morlog").options(**_OPTS).mode("append").save(
        path)
    t = dt.datetime.strptime(first, "%Y%m%d%H%M%S%f")
    as_time = t.strftime("%Y-%m-%d %H:%M:%S.") + first[-3:]
    for value, n in ((first, 5), (as_time, 5), (t.strftime("%Y-%m-%d"), 0),
                     ((t + dt.timedelta(days=1)).strftime("%Y-%m-%d"), 8)):
        got = spark.read.format("morlog").option("as.of.instant", value).load(path).count()
        assert got == n, value
    with pytest.raises(Exception, match="an instant is yyyyMMddHHmmssSSS"):
        spark.read.format("morlog").option("as.of.instant", "yesterday").load(path).count()


@requires_fixtures
def test_spark_read_refuses_unknown_columns(spark: Any) -> None:
    path = next(p for p in tables() if p.name == "v9_txns_simple_nometa")
    with pytest.raises(Exception, match="unknown column 'nope'"):
        spark.read.format("morlog").option("columns", "txn_id,nope").load(str(path)).count()
    df = spark.read.format("morlog").option("columns", "txn_id").load(str(path))
    assert df.count() == Table(str(path)).read().num_rows


def test_spark_write_refuses_a_string_column_for_a_double_one(spark: Any, tmp_path: Path
                                                              ) -> None:
    path = str(tmp_path / "t")
    opts = {"hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.table.name": "typed"}
    spark.createDataFrame([("k1", 1, 1.5)], "id string, ts long, amount double") \
        .write.format("morlog").options(**opts).mode("append").save(path)
    before = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "t").rglob("*"))
    bad = spark.createDataFrame([("k2", 2, "2.5")], "id string, ts long, amount string")
    with pytest.raises(Exception, match="column 'amount' is string in the batch and double"):
        bad.write.format("morlog").options(**opts).mode("append").save(path)
    assert sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "t").rglob("*")) == before
    # an int column promotes into the long one
    spark.createDataFrame([("k3", 3, 3.5)], "id string, ts int, amount double") \
        .write.format("morlog").options(**opts).mode("append").save(path)
    assert Table(path).read(columns=["id", "ts"]).sort_by("id").to_pylist() == [
        {"id": "k1", "ts": 1}, {"id": "k3", "ts": 3}]


def test_client_and_spark_route_a_batch_to_the_same_bins(spark: Any, tmp_path: Path) -> None:
    """Both writers size file groups with the one record size estimate of the table's past
    commits (``MorTable.record_size``). Before, Spark guessed from the schema (16 bytes per
    string column, ~28 bytes a row here) and the client from the batch's Arrow size (a
    quarter of it), so the same batch went to bins of different sizes, and Spark's base
    files grew past the maximum file size. Spark's inserts are spread by their keys' hash
    over the bins, as Hudi spreads them: each bin gets its planned count up to the hash's
    spread (here at most 5% of a full group, the test's tolerance above the maximum)."""
    import shutil

    from morlog.spark.write import upsert
    from morlog.writers.client import MorTable
    from morlog.writers.options import WriteConfig

    from .test_client import WIDE, WIDE_CFG, _base_files, _wide_batch

    cfg = WriteConfig(**WIDE_CFG)  # type: ignore[arg-type]
    base = tmp_path / "base"
    table = MorTable.create(str(base), WIDE, key_field="id", ordering_field="ts", config=cfg)
    for b in range(2):
        table.upsert(_wide_batch(range(b * 8000, (b + 1) * 8000), 1))
    before = set(_base_files(base))
    shutil.copytree(base, tmp_path / "client")
    shutil.copytree(base, tmp_path / "spark")
    batch = _wide_batch(range(16000, 30000), 1)
    mine = MorTable(str(tmp_path / "client"), cfg).upsert(batch)
    got = upsert(spark, spark.createDataFrame(batch).repartition(4),
                 str(tmp_path / "spark"), key="id", ordering="ts", config=cfg)
    planned = got["insert_bins"][""]
    client_meta = Table(str(tmp_path / "client")).timeline
    instant = client_meta.completed()[-1]
    counts = {s["fileId"]: s["numWrites"] for s in
              client_meta.metadata(instant)["partitionToWriteStats"][""]}
    new = {fid for _, fid in mine.new_groups}
    # routed into the same existing groups, the same counts; new groups of the same sizes
    assert {f: n for f, n, is_new in planned if not is_new} == {
        f: n for f, n in counts.items() if f not in new}
    assert sorted(n for _, n, is_new in planned if is_new) == sorted(
        n for f, n in counts.items() if f in new)
    assert int(got["morlog.inserts"]) == mine.inserts == 14000
    spark_files = _base_files(tmp_path / "spark")
    assert set(spark_files) > before
    assert max(spark_files.values()) <= cfg.max_file_size * 1.05, spark_files
    rows = Table(str(tmp_path / "spark")).read(columns=["id"])["id"].to_pylist()
    assert len(rows) == len(set(rows)) == 30000


def test_write_tasks_write_a_file_groups_rows_in_blocks_as_they_fill(
        spark: Any, tmp_path: Path) -> None:
    """A write task holds at most one block's rows of a file group
    (``hoodie.logfile.data.block.max.size`` at the record size: 10,000 bytes at 100 bytes a
    record, 100 rows here) and writes each block as it fills, retried task included. Before,
    a task held every row of its file groups and wrote one block per group."""
    from morlog.readers import LogFileReader
    from morlog.spark.write import upsert
    from morlog.writers.options import WriteConfig

    path = str(tmp_path / "c")
    cfg = WriteConfig(fsync=False, record_size=100,
                      hoodie_options={"hoodie.logfile.data.block.max.size": "10000"})
    kw = dict(key="id", ordering="ts", config=cfg)
    upsert(spark, _df(spark, range(300), 1), path, **kw)
    upsert(spark, _df(spark, range(300), 2), path,
           task_hook=_fail_first_attempt(), **kw)
    table = Table(path)
    rows = {r["id"]: r["ts"] for r in table.read().to_pylist()}
    assert len(rows) == 300 and set(rows.values()) == {2}
    instant = table.timeline.completed()[-1].requested
    counts = []
    for s in table.file_slices():
        for name in s.log_files:
            with LogFileReader(str(tmp_path / "c" / s.partition / name)) as r:
                counts += [b.record_count() for b in r.blocks() if b.instant == instant]
    assert sorted(counts) == [100, 100, 100]


def test_a_tagging_task_holds_one_chunk_of_its_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tagging task tags its rows in chunks of at most ``TAG_CHUNK_BYTES`` (one lookup
    each, one tagger for all), yielding each chunk before it reads the next. Before, it
    held every row of its Spark partition and tagged them in one lookup: a partition
    larger than the worker's memory could not be tagged."""
    import morlog.spark.write as spark_mod
    from morlog.readers.lookup import KeyTagger
    from morlog.readers.storage import TableLocation
    from morlog.writers.client import MorTable
    from morlog.writers.options import WriteConfig

    cfg = WriteConfig(fsync=False)
    n = 600
    data = pa.table({"id": [f"k{i:04d}" for i in range(n)],
                     "region": ["eu" if i % 2 else "us" for i in range(n)],
                     "ts": pa.array([1] * n, pa.int64()), "amount": [float(i) for i in range(n)]})
    path = str(tmp_path / "t")
    table = MorTable.create(path, data.schema, key_field="id", partition_field="region",
                            ordering_field="ts", config=cfg)
    table.upsert(data.slice(0, 300))
    rules = spark_mod._BatchRules(table.keygen, "ts", ("ts",))
    batches = data.to_batches(max_chunksize=100)  # 3 known keys, 3 new ones
    calls: list[int] = []
    real = KeyTagger.tag

    def tag(self: Any, keys: Any, partitions: Any = None) -> Any:
        calls.append(len(keys))
        return real(self, keys, partitions)

    monkeypatch.setattr(KeyTagger, "tag", tag)
    monkeypatch.setattr(spark_mod, "TAG_CHUNK_BYTES", batches[0].nbytes * 2)
    read = []

    def source() -> Any:
        for b in batches:
            read.append(b.num_rows)
            yield b

    out = spark_mod._tagger(TableLocation.of(path), rules)(source())
    first = next(out)
    assert sum(read) == 200 and first.num_rows == 100  # the first chunk only
    got = pa.Table.from_batches([first, *out])
    assert calls == [200, 200, 200]
    fids = dict(zip(got.column("__morlog_key").to_pylist(),
                    got.column("__morlog_fid").to_pylist(), strict=True))
    assert all(fids[f"k{i:04d}"] is not None for i in range(300))
    assert all(fids[f"k{i:04d}"] is None for i in range(300, n))
    assert got.column("amount").to_pylist() == data.column("amount").to_pylist()


def test_a_routing_task_keeps_the_first_row_of_each_record() -> None:
    """Rows sorted by what identifies a record (here file group and key; a new key's file
    group is null, and nulls are equal) keep their first row, across batches."""
    from morlog.spark.write import _first_of_each

    cols = ["__morlog_fid", "__morlog_key"]
    b1 = pa.RecordBatch.from_pydict({"__morlog_fid": [None, None, "a", "a", "a", "b"],
                                     "__morlog_key": ["k0", "k0", "k1", "k1", "k2", "k2"],
                                     "v": [-1, -2, 1, 2, 3, 4]})
    b2 = pa.RecordBatch.from_pydict({"__morlog_fid": ["b", "b", "c", None],
                                     "__morlog_key": ["k2", "k3", "k3", "k3"],
                                     "v": [5, 6, 7, 8]})
    kept, last = _first_of_each(b1, cols, None)
    assert kept.column("v").to_pylist() == [-1, 1, 3, 4] and last == ("b", "k2")
    kept, last = _first_of_each(b2, cols, last)
    assert kept.column("v").to_pylist() == [6, 7, 8] and last == (None, "k3")


def test_the_shuffle_parallelism_option_sets_the_write_tasks(spark: Any, tmp_path: Path
                                                             ) -> None:
    """``hoodie.upsert.shuffle.parallelism`` (Hudi's name) is the number of the distributed
    upsert's routing and write tasks: with 1, every file the upsert writes into the eight
    partitions' groups carries the write token of task 0 (Hudi's ``partition-stage-attempt``);
    Spark's default parallelism here is 2."""
    from morlog.logformat.naming import BaseFileName, LogFileName
    from morlog.spark.write import upsert
    from morlog.writers.options import WriteConfig

    path = tmp_path / "p"
    rows = [(f"k{i:04d}", f"r{i % 8}", 1, float(i)) for i in range(80)]
    schema = "id string, region string, ts long, amount double"
    kw: dict[str, Any] = dict(key="id", partition="region", ordering="ts")
    upsert(spark, spark.createDataFrame(rows, schema), str(path),
           config=WriteConfig(fsync=False), **kw)
    one = WriteConfig(fsync=False, hoodie_options={"hoodie.upsert.shuffle.parallelism": "1"})
    r = upsert(spark, spark.createDataFrame([(k, p, 2, a) for k, p, _, a in rows], schema),
               str(path), config=one, **kw)
    assert r["morlog.updates"] == "80"
    tokens = []
    for part in path.iterdir():
        # table version 9: the upsert's log files are named after its instant
        for f in part.glob(f"*{r['instant']}*"):
            tokens.append(LogFileName.parse(f.name).write_token if LogFileName.matches(f.name)
                          else BaseFileName.parse(f.name).write_token)
    assert len(tokens) >= 8 and len({str(t).split("-")[0] for t in tokens}) == 1, tokens
    assert {x["id"]: x["ts"] for x in Table(str(path)).read().to_pylist()} == {
        k: 2 for k, _, _, _ in rows}
