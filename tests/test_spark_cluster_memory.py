"""Spark with executors in processes of their own: a batch larger than the small one, written
through ``format("morlog")`` and the distributed upsert, with driver-side memory measured;
``morlog bench spark``'s cluster half (issue 25, "How it is checked").

The cluster's own file, apart from ``tests/test_spark_cluster.py`` (the model test and the
executor-kill tests), so that the two xdist workers each run one half with a cluster of
their own instead of one worker running every cluster test (minutes) alone. The writes, the
reads and the S3 bucket are those of ``tests/test_spark_cluster.py``.
"""

from __future__ import annotations

import os
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install .[spark])")
pytest.importorskip("boto3", reason="boto3 is not installed (pip install .[test])")

from morlog.readers.table import Table  # noqa: E402

from .spark_cluster import Cluster, PeakSampler  # noqa: E402
from .test_spark_cluster import COLUMNS, _on_cluster_write, new_bucket  # noqa: E402


@pytest.fixture(scope="module")
def bucket(s3: str) -> str:
    return new_bucket(s3)


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
