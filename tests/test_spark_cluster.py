"""Spark with executors in processes of their own, tables on S3 (issue 25, "How it is checked").

The cluster (``local-cluster[2,1,1024]``: two executor JVMs) runs in a process of its own
(``tests/spark_cluster.py``); the tables live on the moto S3 server of the ``s3`` fixture, so
nothing can rely on the driver's JVM or disk. The functions named ``_on_cluster_*`` run in
the cluster's process (``spark_cluster.call``), the checks here: the test keeps a model of the
table (key -> row) and every read, through Spark, through morlog's reader and through
hudi-rs, must equal it. The large-batch memory test and the benchmark's cluster half are in
``tests/test_spark_cluster_memory.py``, with a cluster of its own: the two files run on the
two xdist workers at once (``SLOW_FIRST`` in ``tests/conftest.py``), each about half of
what one file of every cluster test took.
"""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install .[spark])")
pytest.importorskip("boto3", reason="boto3 is not installed (pip install .[test])")

from morlog.readers.table import Table  # noqa: E402

from .spark_cluster import Cluster, ClusterError, ClusterTimeout  # noqa: E402

Row = tuple[str, str, int, float, str]
Model = dict[str, Row]
#: a batch: (first key, end key) ranges, all rows of one ``ts``
Ranges = list[tuple[int, int]]

COLUMNS = ["id", "region", "ts", "amount", "note"]
REGIONS = ("eu", "us", "ap")
#: the data source's options (Hudi's names)
SOURCE_OPTIONS = {
    "hoodie.table.name": "cluster",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "region",
    "hoodie.datasource.write.precombine.field": "ts",
}


def row(i: int, ts: int) -> Row:
    """Key ``i``'s row at version ``ts`` (what :func:`_frame` makes in Spark)."""
    return (f"k{i:06d}", REGIONS[i % 3], ts, float(ts * 1_000_000 + i), f"n{ts}-{i}")


def apply(model: Model, ranges: Ranges, ts: int, operation: str = "upsert") -> Model:
    out = dict(model)
    for lo, hi in ranges:
        for i in range(lo, hi):
            r = row(i, ts)
            if operation == "delete":
                out.pop(r[0], None)
            else:
                out[r[0]] = r
    return out


# --- run in the cluster's process ----------------------------------------------------------


def _frame(spark: Any, ranges: Ranges, ts: int, pad: int = 0) -> Any:
    """The rows of ``ranges`` at version ``ts``, made by the executors (4 partitions per
    range); ``pad``: characters appended to ``note`` (the memory test's wide rows)."""
    df = None
    for lo, hi in ranges:
        part = spark.range(lo, hi, 1, 4).selectExpr(
            # f"k{i:06d}" (lpad alone would cut a longer number)
            "concat('k', if(id < 1000000, lpad(cast(id as string), 6, '0'), "
            "cast(id as string))) as id",
            "element_at(array('eu', 'us', 'ap'), cast(id % 3 as int) + 1) as region",
            f"cast({ts} as bigint) as ts",
            f"cast({ts} * 1000000 + id as double) as amount",
            f"concat('n{ts}-', cast(id as string), repeat('x', {pad})) as note")
        df = part if df is None else df.unionByName(part)
    return df


def _write(spark: Any, df: Any, uri: str, how: str, operation: str,
           hook: Any = None) -> None:
    if operation == "delete":
        df = df.select("id", "region")
    if how == "source":
        (df.write.format("morlog").options(**SOURCE_OPTIONS)
         .option("hoodie.datasource.write.operation", operation).mode("append").save(uri))
    else:
        from morlog.spark.write import upsert
        from morlog.writers.options import WriteConfig

        # small file groups: several per partition, several write tasks
        cfg = WriteConfig(max_file_size=400_000, small_file_limit=300_000, record_size=100)
        upsert(spark, df, uri, key="id", partition="region", ordering="ts", config=cfg,
               table_name="cluster", operation=operation, task_hook=hook)


def _on_cluster_write(spark: Any, uri: str, how: str, ranges: Ranges, ts: int,
                      operation: str = "upsert", pad: int = 0) -> None:
    _write(spark, _frame(spark, ranges, ts, pad), uri, how, operation)


def _on_cluster_read(spark: Any, uri: str) -> list[Row]:
    df = spark.read.format("morlog").load(uri).select(*COLUMNS)
    return [tuple(r) for r in df.collect()]


def _on_cluster_gated_write(spark: Any, uri: str, how: str, ranges: Ranges, ts: int,
                            gate_dir: str) -> None:
    """A write whose tasks stop at a gate, first attempts only, until the file ``go``
    exists in ``gate_dir``, each writing ``<partition>-<pid>`` there when it stops (the pid of
    its Python worker). The data source: partition 0 passes (its rows are written), the
    others stop before their rows reach the writer. The distributed upsert: every write task
    stops after writing its first file group (``task_hook``)."""

    def gate(first_passes: bool) -> Any:
        def wait(*_: Any) -> None:
            import os
            import time

            from pyspark import TaskContext

            ctx = TaskContext.get()
            go = os.path.join(gate_dir, "go")
            if (ctx is None or ctx.attemptNumber() > 0 or os.path.exists(go)
                    or (first_passes and ctx.partitionId() == 0)):
                return
            mark = os.path.join(gate_dir, f"{ctx.partitionId()}-{os.getpid()}")
            if os.path.exists(mark):
                return
            with open(mark, "w"):
                pass
            deadline = time.monotonic() + 300
            while not os.path.exists(go) and time.monotonic() < deadline:
                time.sleep(0.05)
        return wait

    df = _frame(spark, ranges, ts)
    if how == "source":
        stop = gate(first_passes=True)

        def held(batches: Any) -> Any:
            for b in batches:
                stop()
                yield b

        _write(spark, df.mapInArrow(held, df.schema), uri, how, "upsert")
    else:
        _write(spark, df, uri, how, "upsert", hook=gate(first_passes=False))


def _on_cluster_executor_ids(spark: Any) -> int:
    """How many executors (the driver aside) the cluster has."""
    return int(spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()) - 1


# --- the test's side -----------------------------------------------------------------------


def new_bucket(s3: str) -> str:
    """A new bucket on the S3 server: its name."""
    import pyarrow.fs as pafs

    name = f"c{uuid.uuid4().hex[:12]}"
    fs, _ = pafs.FileSystem.from_uri(f"s3://test:test@{name}/x?{s3}")
    fs.create_dir(name)
    return name


@pytest.fixture(scope="module")
def bucket(s3: str) -> str:
    return new_bucket(s3)


@pytest.fixture
def uri(bucket: str, s3: str) -> Iterator[str]:
    """A new table's URI on the S3 server (credentials in it: never printed)."""
    yield f"s3://test:test@{bucket}/t{uuid.uuid4().hex[:8]}?{s3}"


def _hudi_rows(table_uri: str) -> list[Row]:
    """The table read by hudi-rs, straight from the S3 server."""
    import hudi

    parts = urllib.parse.urlsplit(table_uri)
    q = dict(urllib.parse.parse_qsl(parts.query))
    opts = {"aws_access_key_id": parts.username or "", "aws_secret_access_key":
            parts.password or "", "aws_endpoint_url": f"{q['scheme']}://{q['endpoint_override']}",
            "aws_allow_http": "true", "aws_region": q["region"]}
    base = f"s3://{parts.hostname}{parts.path}"
    t = hudi.HudiTableBuilder.from_base_uri(base).with_storage_options(opts).build()
    data = pa.Table.from_batches(t.read()).select(COLUMNS)
    return [tuple(r.values()) for r in data.to_pylist()]


def _as_model(rows: list[Row], who: str) -> Model:
    keys = [r[0] for r in rows]
    assert len(keys) == len(set(keys)), f"{who}: duplicate keys"
    return {r[0]: tuple(r) for r in rows}  # type: ignore[misc]


def assert_reads(cluster: Cluster, table_uri: str, model: Model) -> None:
    """Spark (on the cluster), morlog's reader and hudi-rs all read ``model``."""
    spark_rows = _as_model(cluster.call(_on_cluster_read, table_uri), "Spark")
    assert spark_rows == model
    ours = Table(table_uri).read(columns=COLUMNS)
    assert _as_model([tuple(r.values()) for r in ours.to_pylist()], "morlog") == model
    assert _as_model(_hudi_rows(table_uri), "hudi-rs") == model


def test_writes_on_a_cluster_equal_the_model(spark_cluster: Cluster, uri: str) -> None:
    """Create, updates, inserts and deletes through ``format("morlog")`` and through the
    distributed upsert, executors in their own JVMs, the table on S3."""
    assert len(spark_cluster.tree.executors()) == 2
    assert spark_cluster.call(_on_cluster_executor_ids) == 2
    model: Model = {}
    steps: list[tuple[str, Ranges, int, str]] = [
        ("source", [(0, 300)], 1, "upsert"),              # creates the table
        ("source", [(0, 60), (300, 360)], 2, "upsert"),   # 60 updates, 60 inserts
        ("source", [(10, 20), (900, 905)], 0, "delete"),  # 10 deletes (5 absent keys)
        ("upsert", [(100, 150), (400, 450)], 3, "upsert"),
        ("upsert", [(20, 30), (120, 125)], 0, "delete"),
    ]
    for i, (how, ranges, ts, operation) in enumerate(steps):
        spark_cluster.call(_on_cluster_write, uri, how, ranges, ts, operation)
        model = apply(model, ranges, ts, operation)
        if i in (2, len(steps) - 1):
            assert_reads(spark_cluster, uri, model)
    assert len(model) == 300 + 60 - 10 + 50 - 15


def _repair_findings(table_uri: str) -> list[dict[str, Any]]:
    import contextlib
    import io

    from morlog.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["repair", table_uri, "--json", "--min-temp-age", "0"])
    findings: list[dict[str, Any]] = json.loads(out.getvalue())["findings"]
    assert code == (1 if findings else 0)
    return findings


def _verify_logs(table_uri: str) -> int:
    """``morlog verify`` of every log file of the table's latest slices: its exit status."""
    import contextlib
    import io

    from morlog.cli import main

    parts = urllib.parse.urlsplit(table_uri)
    files = []
    for s in Table(table_uri).file_slices():
        d = f"{parts.path}/{s.partition}" if s.partition else parts.path
        files += [urllib.parse.urlunsplit(parts._replace(path=f"{d}/{n}")) for n in s.log_files]
    assert files
    with contextlib.redirect_stdout(io.StringIO()):
        return main(["verify", "-q", *files])


def _wait_for(what: str, found: Any, timeout: float = 240.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = found()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.mark.parametrize("how", ["source", "upsert"])
def test_an_executor_killed_mid_write(spark_cluster: Cluster, uri: str, tmp_path: Path,
                                      how: str) -> None:
    """SIGKILL of the executor JVM running a write task while the write's other tasks
    have written: Spark retries the task elsewhere (the job succeeds) or the job fails;
    either way the table reads as exactly before or exactly after, no key twice, and the
    next write succeeds, leaving nothing ``morlog repair`` or ``morlog verify`` finds."""
    import pyarrow.fs as pafs

    spark_cluster.wait_for_executors()
    before = apply({}, [(0, 240)], 1)
    spark_cluster.call(_on_cluster_write, uri, how, [(0, 240)], 1)
    ranges: Ranges = [(0, 120), (240, 360)]
    after = apply(before, ranges, 2)
    gates = tmp_path / "gates"
    gates.mkdir()
    spark_cluster.submit(_on_cluster_gated_write, uri, how, ranges, 2, str(gates))
    try:
        mark = _wait_for("a write task at its gate", lambda: sorted(gates.iterdir()))[0]
        worker = int(mark.name.split("-")[1])
        if how == "source":
            # partition 0 writes (on S3) before the kill: a data file is marked before it
            # is created (spec/table.md §7.4, §7.6)
            fs, path = pafs.FileSystem.from_uri(uri)
            sel = pafs.FileSelector(f"{path}/.hoodie/.temp", recursive=True,
                                    allow_not_found=True)
            _wait_for("a task's marker", lambda: [
                i for i in fs.get_file_info(sel) if ".marker." in i.path])
        executor = spark_cluster.tree.executor_of(worker)
        assert executor is not None, "the gated task's executor JVM"
        doomed = spark_cluster.tree.subtree(executor.pid)
        os.kill(executor.pid, signal.SIGKILL)
        # the executor's Python workers end with it (pyspark's daemon sees its JVM gone)
        _wait_for("the killed executor's processes to end", lambda: not {
            p.pid for p in spark_cluster.tree.members()} & doomed, timeout=60)
    finally:
        (gates / "go").touch()
    try:
        spark_cluster.result()
        expected, outcome = after, "retried"
    except ClusterTimeout:
        raise
    except ClusterError:
        expected, outcome = before, "failed"
    print(f"{how}: the write with a killed executor {outcome}")
    assert_reads(spark_cluster, uri, expected)
    # the next writer (after a failure: rolling back what the killed write left) succeeds
    spark_cluster.wait_for_executors()
    spark_cluster.call(_on_cluster_write, uri, how, [(100, 110), (500, 510)], 3)
    model = apply(expected, [(100, 110), (500, 510)], 3)
    assert_reads(spark_cluster, uri, model)
    assert _repair_findings(uri) == []
    assert _verify_logs(uri) == 0
