"""``morlog bench spark``: upserts through Spark against the Python write client.

A table of 1,000,000 rows (10 partitions, rows of about 100 bytes: UUID4 key, partition
string, long ``ts``, rider/driver strings, three doubles) is created once by the Python
client and copied for each method; then batches of 100,000 rows (30 % updates of keys of the
table in their own partition, 70 % new keys) are upserted into each copy, the same batch for
every method, methods taking turns per batch (the first rotating), after an untimed warm-up
of every Spark method into a scratch table:

- ``python_client``: ``MorTable.upsert`` of the batch's Arrow table in this process (no
  Spark): the anchor; its CPU seconds (all its threads) are reported too;
- ``data_source``: ``df.write.format("morlog")`` with Hudi's options (the tasks write, the
  driver commits: ``morlog.writers.distributed``);
- ``spark_upsert``: ``morlog.spark.upsert`` (Spark jobs of its own; routes inserts into small
  file groups);
- ``noop_data_source``: a Python data source whose tasks only count the rows they get
  (:func:`noop_source`): Spark's own fixed cost of a Python data-source write of the batch
  (query, writer pickled to the tasks, task launch, the rows to the Python workers, the
  commit round trip), the floor under ``data_source``; reported, no goal.

The Spark methods read each batch from Parquet files, one per core Spark has (a pipeline
reads its input from somewhere; the client is not charged for reading, Spark is).

Two halves, the same batches and table: Spark's ``local[2]`` master in this process, then
``local-cluster[2,1,1024]`` (two executor JVMs of one core and 1 GB each, their own Python
workers) in a process of its own (``python -m morlog.bench.spark``, started by
``morlog.bench.spark_cluster.run_half``; ``--quick`` leaves it
out: starting the cluster alone takes about a minute). Each half times the client again in
its own process, so that each ratio compares runs on the same machine state. Goals (issue
25): each Spark method's time at most 1.5x the client's on ``local[2]`` and 2x on
``local-cluster``. A batch's time is the wall time of the
call. Reported per method and half: seconds per batch, rows/s, and the peak resident memory
(VmHWM) of the driver-side processes by role (``driver_python_mb``, ``driver_jvm_mb``, the
largest ``python_worker_mb`` the driver's JVM starts, and ``driver_side_mb``, their sum),
measured as the cluster tests measure it (``morlog.bench.spark_cluster.DriverPeaks``); on
``local[2]`` the driver's JVM and its Python workers run the tasks too. Each Spark method's
batches are also split as Spark's event log records them (``spark_split``, per batch: jobs,
stages, tasks, the tasks' summed time, the wall time inside jobs and outside them, i.e. the
driver's own work; ``morlog.bench.spark_events``). ``data_source_bound_vs_client`` is the
least a data-source write could take against the client: the no-op source's time plus the
client's CPU seconds split evenly over the cores, as if the tasks repeated no work at all; a
goal below it cannot be met on that master. Before any number is
reported every table of both halves is read back with morlog's reader: equal row counts, key
digests and ``ts`` sums, or the run fails.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import morlog.config as conf
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import parse_write_options

from .common import BenchError, bar, goal, make_keys, make_report, make_rng, num, progress, rate
from .spark_events import event_log_confs
from .spark_upsert import ORDERING_FIELD, PARTITION_FIELD, start_spark

KEY_FIELD = "uuid"
CLIENT = "python_client"
METHODS = ("data_source", "spark_upsert")
#: the baseline of Spark's own cost (:func:`noop_source`)
NOOP = "noop_data_source"
OPTIONS: dict[str, str] = {
    conf.TABLE_NAME: "bench_spark",
    conf.WRITE_RECORDKEY_FIELD: KEY_FIELD,
    conf.WRITE_PARTITIONPATH_FIELD: PARTITION_FIELD,
    conf.WRITE_PRECOMBINE_FIELD: ORDERING_FIELD,
}


@dataclass(frozen=True)
class Sizes:
    table_rows: int = 1_000_000
    batches: int = 3
    rows_per_batch: int = 100_000
    update_share: float = 0.3
    partitions: int = 10


FULL = Sizes()
QUICK = Sizes(20_000, 2, 2_000, 0.3, 2)


def _table(keys: list[str], parts: np.ndarray, ts: np.ndarray, rng: np.random.Generator
           ) -> pa.Table:
    n = len(keys)
    return pa.table({
        KEY_FIELD: pa.array(keys, pa.string()),
        PARTITION_FIELD: pa.array([f"region_{p:02d}" for p in parts.tolist()], pa.string()),
        ORDERING_FIELD: pa.array(ts, pa.int64()),
        "rider": pa.array([f"rider-{x:03d}" for x in rng.integers(0, 1000, n)], pa.string()),
        "driver": pa.array([f"driver-{x:03d}" for x in rng.integers(0, 1000, n)], pa.string()),
        "fare": pa.array(np.round(rng.uniform(5, 100, n), 2), pa.float64()),
        "begin_lat": pa.array(rng.uniform(-90, 90, n), pa.float64()),
        "begin_lon": pa.array(rng.uniform(-180, 180, n), pa.float64()),
    })


def make_data(s: Sizes) -> tuple[pa.Table, list[pa.Table]]:
    """The initial table and the batches (updates: distinct keys of the table, in their own
    partition, with a ``ts`` above every earlier one)."""
    rng = make_rng(2503)
    nprng = np.random.default_rng(rng.getrandbits(64))
    keys = make_keys(s.table_rows, rng)
    parts = nprng.integers(0, s.partitions, s.table_rows)
    initial = _table(keys, parts, np.full(s.table_rows, 1_700_000_000_000), nprng)
    batches = []
    for b in range(s.batches):
        n_upd = round(s.rows_per_batch * s.update_share)
        n_ins = s.rows_per_batch - n_upd
        upd = nprng.choice(s.table_rows, n_upd, replace=False)
        new = make_keys(n_ins, rng)
        bk = [keys[i] for i in upd.tolist()] + new
        bp = np.concatenate([parts[upd], nprng.integers(0, s.partitions, n_ins)])
        ts = 1_700_000_000_000 + (b + 1) * 10**9 + nprng.integers(0, 10**9, len(bk))
        t = _table(bk, bp, ts, nprng)
        batches.append(t.take(pa.array(nprng.permutation(t.num_rows))))
    return initial, batches


def _write(method: str, spark: Any, df: Any, batch: pa.Table, path: str) -> float:
    t0 = time.perf_counter()
    if method == CLIENT:
        MorTable(path, parse_write_options(OPTIONS).config).upsert(batch)
    elif method == "data_source":
        df.write.format("morlog").options(**OPTIONS).mode("append").save(path)
    elif method == NOOP:
        df.write.format(_NOOP_NAME).mode("append").save()
    else:
        import morlog.spark

        morlog.spark.upsert(spark, df, path, key=KEY_FIELD, partition=PARTITION_FIELD,
                            ordering=ORDERING_FIELD)
    return time.perf_counter() - t0


_NOOP_NAME = "morlog_bench_noop"


def noop_source() -> Any:
    """A Python data source whose tasks only count the Arrow rows they get and whose commit
    does nothing: Spark's own fixed cost of a Python data-source write of the batch (the
    query, the writer's pickling, task launch, the rows to the Python workers, the commit
    round trip), measured in the same run as the real writes."""
    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

    class NoopWriter(DataSourceArrowWriter):
        def write(self, iterator: Any) -> WriterCommitMessage:
            for _ in iterator:
                pass
            return WriterCommitMessage()

        def commit(self, messages: Any) -> None:
            pass

    class NoopSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return _NOOP_NAME

        def writer(self, schema: Any, overwrite: bool) -> NoopWriter:
            return NoopWriter()

    return NoopSource


def _digest(path: str) -> dict[str, Any]:
    t = Table(path).read(columns=[KEY_FIELD, ORDERING_FIELD])
    keys = pc.sort_indices(t, [(KEY_FIELD, "ascending")])
    h = hashlib.sha256()
    for k in t.column(KEY_FIELD).take(keys).to_pylist():
        h.update(k.encode() + b"\0")
    return {"rows": t.num_rows, "key_digest": h.hexdigest()[:16],
            "ts_sum": int(pc.sum(t.column(ORDERING_FIELD)).as_py() or 0)}


def measure(spark: Any, params: dict[str, Any]) -> dict[str, Any]:
    """One half of the benchmark on ``spark``'s master: the methods (``params["methods"]``,
    default all) take turns on the batches (Arrow IPC files
    ``params["batches"]``), each into its copy of the table ``params["base"]`` under
    ``params["dir"]``, after an untimed warm-up of the Spark ones; seconds per batch,
    rows/s, the driver side's peak memory per method (:class:`DriverPeaks`), the client's
    CPU seconds, Spark's split of each Spark method's batches (:func:`spark_events.split`,
    when the session logs its events), files, and the tables read back (:func:`_digest`).

    The Spark methods read each batch from Parquet files (one per core Spark has), as a
    pipeline reads its sources; the client gets the batch in memory. (A DataFrame made
    with ``createDataFrame`` from an in-memory table carries its rows inside the query plan,
    which the driver plans again for every job: measured +1.2-1.9 s per
    ``morlog.spark.upsert`` batch of 100k rows and +0.15 s per data-source batch, a cost no
    pipeline reading files pays.)"""
    import resource

    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq

    from morlog.bench.spark_cluster import DriverPeaks

    from . import spark_events

    master = str(spark.sparkContext.master)
    cores = max(1, int(spark.sparkContext.defaultParallelism))
    batches = [ipc.open_file(pa.memory_map(b)).read_all() for b in params["batches"]]
    rows_per_batch = batches[0].num_rows if batches else 0
    spark.dataSource.register(noop_source())
    methods = list(params.get("methods") or (CLIENT, *METHODS, NOOP))
    paths = {}
    for m in methods:
        paths[m] = os.path.join(params["dir"], m)
        if m != NOOP:
            shutil.copytree(params["base"], paths[m])
    dfs = []
    for b, batch in enumerate(batches):
        where = os.path.join(params["dir"], f"input-{b}")
        os.makedirs(where)
        step = -(-batch.num_rows // cores)
        for i in range(cores):
            pq.write_table(batch.slice(i * step, step), os.path.join(where, f"part-{i}.parquet"))
        dfs.append(spark.read.parquet(where))
    progress(f"spark ({master}): warming up (each Spark method into a scratch table)")
    warm = dfs[0].limit(max(1, rows_per_batch // 10))
    for m in (m for m in methods if m != CLIENT):
        _write(m, spark, warm, batches[0].slice(0, 1), os.path.join(params["dir"], f"warm-{m}"))
    seconds: dict[str, list[float]] = {m: [] for m in methods}
    windows: dict[str, list[tuple[float, float]]] = {m: [] for m in methods}
    cpu: list[float] = []
    peaks: dict[str, dict[str, int]] = {m: {} for m in methods}
    for b, (df, batch) in enumerate(zip(dfs, batches, strict=True)):
        turn = methods[b % len(methods):] + methods[: b % len(methods)]
        for m in turn:
            progress(f"spark ({master}): batch {b + 1}/{len(batches)}: {m}")
            before = resource.getrusage(resource.RUSAGE_SELF)
            with DriverPeaks() as sampler:
                # the window of Spark's events is the timed write alone: the sampler's start
                # and stop (a thread joined, /proc read) stay outside it (with them inside,
                # a loaded machine's window exceeded the batch's time by more than 0.05 s)
                t0 = time.time()
                seconds[m].append(_write(m, spark, df, batch, paths[m]))
                t1 = time.time()
            windows[m].append((t0, t1))
            if m == CLIENT:
                after = resource.getrusage(resource.RUSAGE_SELF)
                cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            for k, v in sampler.mb().items():
                peaks[m][k] = max(peaks[m].get(k, 0), v)
    progress(f"spark ({master}): reading every table back")
    checks = {m: _digest(p) for m, p in paths.items() if m != NOOP}
    files = {m: sum(len(fs) for _, _, fs in os.walk(p)) for m, p in paths.items() if m != NOOP}
    rows = len(batches) * rows_per_batch
    out: dict[str, Any] = {"master": master, "version": spark.version, "cores": cores,
                           "checks": checks}
    log = spark_events.event_log_dir(spark.conf)
    jobs = spark_events.read_events(log) if log is not None else None
    for m in methods:
        out[m] = {"batch_seconds": [num(x) for x in seconds[m]],
                  "total_seconds": num(sum(seconds[m])),
                  "rows_per_s": rate(rows, sum(seconds[m])), **peaks[m]}
        if m in files:
            out[m]["files"] = files[m]
        if m == CLIENT:
            out[m]["cpu_seconds"] = num(sum(cpu))
        elif jobs is not None:
            out[m]["spark_split"] = [spark_events.split(jobs, a, z) for a, z in windows[m]]
    return out


def _same_tables(halves: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Every table of every half read back the same (rows, key digest, ``ts`` sum), or
    :class:`BenchError`; the client's check."""
    checks = {f"{h}/{m}": c for h, r in halves.items() for m, c in r["checks"].items()}
    if len({(c["rows"], c["key_digest"], c["ts_sum"]) for c in checks.values()}) != 1:
        raise BenchError("the methods' tables differ", actual=checks)
    first: dict[str, Any] = next(iter(halves.values()))["checks"][CLIENT]
    return first


def run(*, quick: bool = False, repeats: int = 1, cluster: bool | None = None
        ) -> dict[str, Any]:
    """The benchmark (see the module's docstring); ``cluster``: run the ``local-cluster``
    half (default: unless ``quick``, whose smoke run stays short; the cluster tests run
    :func:`measure` on their cluster instead)."""
    import pyarrow.ipc as ipc

    from morlog.bench.spark_cluster import MASTER as CLUSTER_MASTER
    from morlog.bench.spark_cluster import run_half

    s = QUICK if quick else FULL
    if cluster is None:
        cluster = not quick
    progress(f"spark: generating a {s.table_rows:,}-row table and {s.batches} batches of "
             f"{s.rows_per_batch:,} rows")
    initial, batches = make_data(s)
    with tempfile.TemporaryDirectory(prefix="morlog-bench-spark-") as tmp:
        base = os.path.join(tmp, "base")
        t0 = time.perf_counter()
        MorTable.create_from_options(base, initial.schema, parse_write_options(OPTIONS)
                                     ).upsert(initial)
        create_s = time.perf_counter() - t0
        names = []
        for i, b in enumerate(batches):
            names.append(os.path.join(tmp, f"batch-{i}.arrow"))
            with ipc.new_file(names[-1], b.schema) as w:
                w.write_table(b)
        params = {"base": base, "batches": names}
        session = start_spark(event_log_confs(os.path.join(tmp, "events-local")))
        try:
            local = measure(session.spark, {**params, "dir": os.path.join(tmp, "local")})
        finally:
            if session.owned:
                session.spark.stop()
        halves = {"local": local}
        if cluster:
            progress(f"spark: the {CLUSTER_MASTER} half (a process of its own)")
            halves["local_cluster"] = run_half(
                Path(tmp, "cluster"), {**params, "dir": os.path.join(tmp, "cl"),
                                       "events": os.path.join(tmp, "events-cluster")})
    check = _same_tables(halves)
    results: dict[str, Any] = {"create_seconds": num(create_s), "checks": check,
                               "spark": {"version": local["version"],
                                         "master": local["master"]}}
    results.update({m: local[m] for m in (CLIENT, *METHODS, NOOP)})
    ratios: dict[str, float] = {}
    goals: dict[str, dict[str, Any]] = {}
    for half, prefix, target in (("local", "", 1.5), ("local_cluster", "cluster_", 2.0)):
        if half not in halves:
            continue
        r = halves[half]
        if half != "local":
            results[half] = {k: v for k, v in r.items() if k != "checks"}
        cl = r[CLIENT]["total_seconds"]
        for m in (*METHODS, NOOP):
            ratios[f"{prefix}{m}_vs_client"] = num(r[m]["total_seconds"] / cl) if cl else 0.0
        # the least a data-source write can take: Spark's no-op cost plus the client's own
        # CPU work split evenly over the cores (no work repeated by the tasks)
        bound = r[NOOP]["total_seconds"] + r[CLIENT]["cpu_seconds"] / r["cores"]
        ratios[f"{prefix}data_source_bound_vs_client"] = num(bound / cl) if cl else 0.0
        for m in METHODS:
            goals[f"{prefix}{m}_vs_client"] = goal(ratios[f"{prefix}{m}_vs_client"], target,
                                                   "<=")
    params_out = {**asdict(s), "options": OPTIONS, "repeats": repeats, "quick": quick,
                  "methods": {CLIENT: "MorTable.upsert on the driver",
                              "data_source": "df.write.format('morlog')",
                              "spark_upsert": "morlog.spark.upsert",
                              NOOP: "a Python data source that only counts its rows "
                                    "(Spark's fixed cost; no goal)"},
                  "masters": {"local": local["master"],
                              "local_cluster": CLUSTER_MASTER if cluster else
                              "left out (--quick)"},
                  "memory": "peak RSS (VmHWM) of the driver-side processes: the driver's "
                            "Python, its JVM, the Python workers that JVM starts (on "
                            "local[2] these run the tasks too; on local-cluster only the "
                            "data source's planning and commit)"}
    return make_report("spark", params_out, results, ratios, goals)




def plot(plt: Any, report: dict[str, Any]) -> Any:
    r = report["results"]
    names = [CLIENT, *METHODS, NOOP]
    labels = ["client", "data source", "spark upsert", "no-op source"]
    halves = [("local[2]", r)] + ([("local-cluster", r["local_cluster"])]
                                  if "local_cluster" in r else [])
    fig, axes = plt.subplots(2, len(halves), figsize=(6 * len(halves), 8), squeeze=False)
    for col, (title, h) in enumerate(halves):
        bar(axes[0][col], labels, [h[m]["total_seconds"] for m in names],
            f"{title}: upsert time, all batches (s)", "seconds", fmt="{:.2f}")
        bar(axes[1][col], labels, [h[m].get("driver_side_mb", 0) for m in names],
            f"{title}: driver-side peak RSS, sum (MiB)", "MiB")
    return fig


def _cluster_half(argv: list[str]) -> int:
    """The ``local-cluster`` half's process (``morlog.bench.spark_cluster.run_half``)."""
    import json

    from morlog.bench.spark_cluster import start

    spark, params, out, start_s = start(argv)
    try:
        result = measure(spark, params)
    finally:
        spark.stop()
    result["start_seconds"] = start_s
    out.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(_cluster_half(sys.argv[1:]))


__all__ = ["FULL", "NOOP", "QUICK", "Sizes", "make_data", "measure", "noop_source", "plot", "run"]
