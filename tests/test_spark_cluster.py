"""Spark with executors in processes of their own, tables on S3 (issue 25, "How it is checked").

The cluster (``local-cluster[2,1,1024]``: two executor JVMs) runs in a process of its own
(``tests/spark_cluster.py``); the tables live on the moto S3 server of the ``s3`` fixture, so
nothing can rely on the driver's JVM or disk. The functions named ``_on_cluster_*`` run in
the cluster's process (``spark_cluster.call``), the checks here: the test keeps a model of the
table (key -> row) and every read, through Spark, through morlog's reader and through
hudi-rs, must equal it. Then the large-batch memory test and the benchmark's cluster half.

One file, one cluster (the fixture is module-scoped): the model, executor-kill and memory
tests share it. They were two files with a cluster each, run at once on the two xdist
workers: the second cluster's start-up and first-use warm-up (about 75 s on a loaded 2-core
machine: 30 s to start, 45 s for its first write and read) were paid twice, and the two
clusters' six JVMs competed for the two cores. The run starts this file first
(``SLOW_FIRST`` in ``tests/conftest.py``); the other worker runs the other files meanwhile.
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

from .spark_cluster import Cluster, ClusterError, ClusterTimeout, PeakSampler  # noqa: E402

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

# --- a large batch and driver-side memory; the benchmark's cluster half -------------------
# (the ``MORLOG_BIG_SPARK=1`` full-size run: ``-k large_batch``, see the README)


def _old_generation_pools(spark: Any) -> list[Any]:
    """The driver JVM's heap pools that hold long-lived objects (the old generation: rows or
    Arrow buffers a driver kept would land there, large arrays directly)."""
    factory = spark.sparkContext._jvm.java.lang.management.ManagementFactory
    return [p for p in factory.getMemoryPoolMXBeans()
            if p.getType().name() == "HEAP" and "Old" in str(p.getName())]


def _on_cluster_reset_old_peak(spark: Any) -> None:
    spark.sparkContext._jvm.java.lang.System.gc()
    for pool in _old_generation_pools(spark):
        pool.resetPeakUsage()


def _on_cluster_old_peak_mb(spark: Any) -> int:
    """The old generation's peak use (MiB) since the last reset."""
    return sum(int(p.getPeakUsage().getUsed()) for p in _old_generation_pools(spark)) >> 20


#: the memory test's batches, CI-sized: rows (about 250 bytes each), the large one 8x the
#: small one (measured on a loaded 2-core machine: the data source's commit worker
#: 282 -> 416 MiB, the distributed upsert's driver-side processes +8 MiB at most)
MEMORY_BATCHES = (25_000, 200_000)
#: characters appended to each row's ``note`` in the CI-sized test
MEMORY_PAD = 200
#: ``MORLOG_BIG_SPARK=1``: the full-size test, a batch several times larger than the
#: driver's memory (spark.driver.memory at Spark's minimum, 450 MiB) and than an executor's
#: (1 GiB): 1,500,000 rows of about 2 KB (a compressible ``note``: about 3 GiB of Arrow
#: data, small files), against a 4x smaller one
BIG_BATCHES = (375_000, 1_500_000)
BIG_PAD = 2_000
BIG = os.environ.get("MORLOG_BIG_SPARK", "").strip() not in ("", "0")
#: a driver-side process grows by less than this (MiB) from the small batch to the large
#: one (the CI-sized large batch is about 45 MiB of Arrow data more; the full-size one
#: 3 GiB more)
MEMORY_GROWTH_LIMIT_MB = 48


def _on_cluster_digest(spark: Any, uri: str) -> dict[str, int]:
    """Rows, distinct keys, a key digest and sums of the table, read through Spark."""
    df = spark.read.format("morlog").load(uri)
    row = df.selectExpr("cast(substr(id, 2) as bigint) as n", "ts", "amount",
                        "length(note) as chars").selectExpr(
        "count(*) as rows", "count(distinct n) as keys", "sum(n) as key_sum",
        "sum(pmod(n * n, 2147483647)) as key_square_sum", "sum(ts) as ts_sum",
        "sum(cast(amount as bigint)) as amount_sum",
        "sum(chars) as chars").collect()[0]
    return {k: int(v) for k, v in row.asDict().items()}


def _digest_of(t: pa.Table) -> dict[str, int]:
    """:func:`_on_cluster_digest` of rows read in this process (without ``chars`` when
    ``note`` was not read)."""
    import numpy as np
    import pyarrow.compute as pc

    n = pc.cast(pc.utf8_slice_codeunits(t.column("id"), 1), pa.int64()).to_numpy()
    return {"rows": t.num_rows, "keys": len(np.unique(n)), "key_sum": int(n.sum()),
            "key_square_sum": int(((n * n) % 2147483647).sum()),
            "ts_sum": int(pc.sum(t.column("ts")).as_py() or 0),
            "amount_sum": int(pc.cast(t.column("amount"), pa.int64()).to_numpy().sum()),
            **({"chars": int(pc.sum(pc.utf8_length(t.column("note"))).as_py() or 0)}
               if "note" in t.column_names else {})}


def _expected_digest(n: int, ts: int, pad: int) -> dict[str, int]:
    import numpy as np

    i = np.arange(n, dtype=np.int64)
    widths = np.char.str_len(i.astype(str)) if n else np.zeros(0, dtype=np.int64)
    return {"rows": n, "keys": n, "key_sum": int(i.sum()),
            "key_square_sum": int(((i * i) % 2147483647).sum()), "ts_sum": n * ts,
            "amount_sum": int((ts * 1_000_000 + i).sum()),
            "chars": int(widths.sum()) + n * (len(f"n{ts}-") + pad)}


def _read_digests(table_uri: str, big: bool) -> dict[str, dict[str, int]]:
    """The digests of the table read by morlog's reader and by hudi-rs (``big``: by
    morlog's reader only, without ``note``: GiBs)."""
    if big:
        return {"morlog": _digest_of(Table(table_uri).read(columns=["id", "ts", "amount"]))}
    out = {"morlog": _digest_of(Table(table_uri).read(columns=COLUMNS))}
    import hudi

    parts = urllib.parse.urlsplit(table_uri)
    q = dict(urllib.parse.parse_qsl(parts.query))
    opts = {"aws_access_key_id": parts.username or "", "aws_secret_access_key":
            parts.password or "", "aws_endpoint_url": f"{q['scheme']}://{q['endpoint_override']}",
            "aws_allow_http": "true", "aws_region": q["region"]}
    t = hudi.HudiTableBuilder.from_base_uri(f"s3://{parts.hostname}{parts.path}"
                                            ).with_storage_options(opts).build()
    out["hudi-rs"] = _digest_of(pa.Table.from_batches(t.read()).select(COLUMNS))
    return out


@pytest.fixture(scope="module")
def warm_cluster(spark_cluster: Cluster, bucket: str, s3: str) -> Cluster:
    """The cluster after a small write through the data source and a read through Spark:
    the Python workers a first write or read starts (the data source's lookup, planning and
    commit workers; idle ones stay and are sampled) exist before either batch of the memory
    test, as they did when the test ran after the model test on a shared cluster. On a fresh
    cluster the small batch's window missed workers that the large batch's window then
    counted as grown from nothing. (The distributed upsert starts no driver-side worker of
    its own: its test runs after the data source's.)"""
    spark_cluster.wait_for_executors()
    table_uri = f"s3://test:test@{bucket}/w{uuid.uuid4().hex[:8]}?{s3}"
    spark_cluster.call(_on_cluster_write, table_uri, "source", [(0, 1_000)], 1)
    assert spark_cluster.call(_on_cluster_digest, table_uri)["rows"] == 1_000
    return spark_cluster


@pytest.mark.parametrize("how", [
    "source",
    "upsert",
])
def test_a_large_batch_and_driver_side_memory(
        warm_cluster: Cluster, bucket: str, s3: str, how: str,
        record_property: Any) -> None:
    """A small and a larger batch written into new tables: both read back equal (rows,
    keys, a key digest and sums, through Spark, morlog's reader and hudi-rs), and the peak
    memory of every driver-side process does not grow with the batch. The driver's Python
    process and the Python workers the JVM starts for the data source: their peak resident
    size; the driver JVM: the peak use of its old generation, where what it keeps lands
    (its resident size follows the allocation rate: measured 524 -> 621 MiB for this very
    test while the old generation stayed flat). CI-sized by default; with
    ``MORLOG_BIG_SPARK=1`` the large batch is several times the driver's and the
    executors' memory (:data:`BIG_BATCHES`)."""
    spark_cluster = warm_cluster
    spark_cluster.wait_for_executors()
    batches, pad = (BIG_BATCHES, BIG_PAD) if BIG else (MEMORY_BATCHES, MEMORY_PAD)
    peaks: list[dict[str, int]] = []
    written: list[tuple[int, str, float]] = []
    # every batch is written before any is read back: the Python workers a read starts
    # stay alive (idle, holding what they read), and a later write's window would count
    # them as driver-side memory that grew with the batch (at full size: +161 MiB of
    # idle read workers in the 1.5M-row window)
    for n in batches:
        table_uri = f"s3://test:test@{bucket}/m{uuid.uuid4().hex[:8]}?{s3}"
        spark_cluster.call(_on_cluster_reset_old_peak)
        with PeakSampler(spark_cluster.tree) as sampler:
            start = time.monotonic()
            spark_cluster.call(_on_cluster_write, table_uri, how, [(0, n)], 1, "upsert", pad,
                               timeout=3600.0)
            written.append((n, table_uri, time.monotonic() - start))
        peaks.append(sampler.by_role())
        # the driver JVM: its old generation's peak, not its resident size (a JVM commits
        # more young-generation pages when more is allocated, whatever it keeps)
        peaks[-1]["driver JVM"] = spark_cluster.call(_on_cluster_old_peak_mb)
        assert peaks[-1]["driver JVM"] > 0, "no old generation pool found in the driver JVM"
        record_property(f"peak_mb_{n}", peaks[-1])
    for (n, table_uri, took), peak in zip(written, peaks, strict=True):
        want = _expected_digest(n, 1, pad)
        got = {"Spark": spark_cluster.call(_on_cluster_digest, table_uri, timeout=3600.0)}
        got.update(_read_digests(table_uri, BIG))
        files = _table_bytes(table_uri)
        print(f"{how}: {n} rows ({n * (pad + 40) / 2**20:.0f} MiB of data) in {took:.1f} s, "
              f"files {files / 2**20:.1f} MiB, driver-side peaks (MiB): {peak}")
        for who, digest in got.items():
            assert digest == {k: want[k] for k in digest}, who
    small, large = peaks
    growth = {role: mb - small.get(role, 0) for role, mb in large.items()}
    record_property("growth_mb", growth)
    assert max(growth.values()) < MEMORY_GROWTH_LIMIT_MB, (
        f"driver-side peaks grew with the batch (MiB): {growth}; "
        f"{batches[0]} rows: {small}, {batches[1]} rows: {large}")


def _table_bytes(table_uri: str) -> int:
    """The size of the table's data files (not .hoodie)."""
    import pyarrow.fs as pafs

    fs, root = pafs.FileSystem.from_uri(table_uri)
    return sum(i.size or 0 for i in fs.get_file_info(pafs.FileSelector(root, recursive=True))
               if i.type == pafs.FileType.File and "/.hoodie/" not in i.path)


def _on_cluster_bench(spark: Any, params: dict[str, Any]) -> dict[str, Any]:
    from morlog.bench.spark import measure

    return measure(spark, params)


def test_bench_spark_half_on_the_cluster(spark_cluster: Cluster, tmp_path: Path) -> None:
    """``morlog bench spark``'s local-cluster half (``measure``) on this cluster, tiny (the
    no-op floor against the client only: the data source's writes on a cluster are the
    tests above; this test takes about 30 s on an idle 2-core machine): the no-op source
    (a class pickled to the executors by value) counts every row, driver-side memory by
    role (executors left out), the table read back."""
    import pyarrow.ipc as ipc

    from morlog.bench.spark import OPTIONS, Sizes, make_data
    from morlog.writers.client import MorTable
    from morlog.writers.options import parse_write_options

    initial, batches = make_data(Sizes(2_000, 1, 300, 0.3, 2))
    base = tmp_path / "base"
    MorTable.create_from_options(str(base), initial.schema, parse_write_options(OPTIONS)
                                 ).upsert(initial)
    with ipc.new_file(str(tmp_path / "b0.arrow"), batches[0].schema) as w:
        w.write_table(batches[0])
    methods = ["python_client", "noop_data_source"]
    r = spark_cluster.call(_on_cluster_bench, {
        "base": str(base), "batches": [str(tmp_path / "b0.arrow")], "methods": methods,
        "dir": str(tmp_path / "run")})
    assert r["master"].startswith("local-cluster")
    assert list(r["checks"]) == ["python_client"]  # the no-op source writes no table
    assert r["checks"]["python_client"]["rows"] == 2_000 + 300 - 90
    for m in methods:
        assert len(r[m]["batch_seconds"]) == 1 and r[m]["total_seconds"] > 0
        assert r[m]["driver_jvm_mb"] > 0 and r[m]["driver_python_mb"] > 0
    # the driver side is the driver's Python, its JVM and that JVM's Python workers: never
    # an executor JVM nor what it starts
    from morlog.bench.spark_cluster import driver_side

    side = driver_side(spark_cluster.pid)
    executors = spark_cluster.tree.executors()
    assert executors and not {p.pid for p in executors} & set(side)
    assert side[spark_cluster.pid] == "driver_python"
    assert "driver_jvm" in side.values()
