"""``morlog bench upsert``: upsert batches from Spark, morlog's insert routing vs new file groups
(through ``morlog.spark.upsert``, which routes; the data source's tasks cannot, see
``morlog bench spark``).

Ten batches of 100,000 rows (the first all inserts, then 70 % inserts of new keys and 30 %
updates of keys written before, each key staying in its partition) are upserted with
``morlog.spark.upsert`` into a table of 10 partitions (rows of about 100 bytes: UUID4
key, partition string, long ``ts`` that grows with the batch, rider/driver strings, three
doubles), on local Spark (``local[2]``), by each method into its own table directory, the same
DataFrame per batch for all of them, in one Spark session:

- morlog: the default options (inserts routed into the partition's small file groups, as log
  blocks of indexed Avro);
- baseline: ``morlog.route.inserts=false``: every batch's inserts go to new file groups (a base
  file each), as Hudi does on MOR when its index cannot look into logs;
- morlog_parquet: the morlog defaults with ``morlog.carrier=parquet`` (reported, no goal);
- python_client: the same batches (the Arrow tables the DataFrames were made from) written by
  the Python write client on the driver (``MorTable.upsert``, the same options parsed by
  ``parse_write_options``), no Spark: the distributed upsert's goal is at most 1.5x its time.

Sizing is Hudi's default (``morlog.max.file.size`` 120 MB, ``morlog.small.file.limit``
100 MB): with 100,000-row batches every file stays far below both, which is exactly the
small-file problem routing is for. The methods take turns batch by batch (the first method
rotates) after an untimed warm-up: the first two batches into a scratch table (Python
workers started, JVM warm). A batch's time is the wall time of its ``df.write...save``
(staging in the Spark tasks and the driver's commit); per-commit numbers are read back from
the timeline (the ``morlog.*`` entries of each commit's extra metadata). At the end the data
files of each table (base Parquet files and log files) are listed and sized, and each table
is read back with ``spark.read.format("morlog")``: its row count must equal the number of
distinct keys written, and its ``ts`` values must sum to those of every key's latest version.

A full run takes minutes, so this scenario defaults to one repeat; with more, the whole run is
repeated in fresh directories and, per method, the run with the least total time is kept.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import morlog.config as conf
from morlog.logformat.naming import BaseFileName, LogFileName
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import parse_write_options

from .common import (
    BenchError,
    bar,
    goal,
    make_keys,
    make_report,
    make_rng,
    num,
    progress,
    rate,
    ratio,
    require,
)

MASTER = "local[2]"
#: Hudi's hoodie.parquet.max.file.size and hoodie.parquet.small.file.limit defaults
MAX_FILE_SIZE = 120 * 1024 * 1024
SMALL_FILE_LIMIT = 100 * 1024 * 1024
KEY_FIELD = "uuid"
PARTITION_FIELD = "region"
ORDERING_FIELD = "ts"
BASE_OPTIONS: dict[str, str] = {
    conf.TABLE_NAME: "bench_upsert",
    conf.WRITE_RECORDKEY_FIELD: KEY_FIELD,
    conf.WRITE_PARTITIONPATH_FIELD: PARTITION_FIELD,
    conf.WRITE_PRECOMBINE_FIELD: ORDERING_FIELD,
    conf.MAX_FILE_SIZE: str(MAX_FILE_SIZE),
    conf.SMALL_FILE_LIMIT: str(SMALL_FILE_LIMIT),
}
#: method -> its options on top of BASE_OPTIONS (the first two carry the goals)
METHODS: dict[str, dict[str, str]] = {
    "morlog": {},
    "baseline": {conf.ROUTE_INSERTS: "false"},
    "morlog_parquet": {conf.CARRIER: "parquet"},
}
#: the per-commit entries of the timeline, as reported (extraMetadata key -> report name)
COMMIT_FIELDS = {
    conf.STAT_INSERTS: "inserts",
    conf.STAT_INSERTS_ROUTED: "inserts_routed",
    conf.STAT_UPDATES: "updates",
    conf.STAT_GROUPS_TOUCHED: "groups_touched",
    conf.STAT_GROUPS_NEW: "groups_new",
    conf.STAT_FILES_CREATED: "files_created",
}
HISTOGRAM_BINS = 24
#: the Python write client (no Spark), measured on the same batches
CLIENT = "python_client"


@dataclass(frozen=True)
class UpsertSizes:
    batches: int = 10
    rows_per_batch: int = 100_000
    #: share of a batch (after the first, which is all inserts) that inserts new keys
    insert_share: float = 0.7
    partitions: int = 10


FULL = UpsertSizes()
#: --quick: two batches (the first creates the file groups, the second routes its inserts
#: into them), each a Spark upsert per method (a third batch added 4 Spark jobs and proved
#: nothing more)
QUICK = UpsertSizes(2, 2_000, 0.7, 2)


def available() -> bool:
    """Whether pyspark can be imported (the scenario needs it; ``all`` skips it otherwise)."""
    return importlib.util.find_spec("pyspark") is not None


def require_spark() -> None:
    """Fail with a ``UsageError`` naming the ``bench`` extra unless Spark's Python side
    (pyspark, and pandas for Arrow conversions) is installed."""
    require("pyspark", "upsert")
    require("pandas", "upsert")


# --- the data -------------------------------------------------------------------------------


@dataclass
class Batches:
    tables: list[pa.Table]
    inserts: list[int]
    updates: list[int]
    distinct_keys: int
    #: the sum of every key's latest ``ts``: what a correct snapshot sums to
    latest_ts_sum: int = 0


def make_batches(s: UpsertSizes, salt: int = 11) -> Batches:
    """The batches: each one's new keys get a random partition, its updates are distinct keys
    of earlier batches in their own partition, with a ``ts`` above every earlier one."""
    rng = make_rng(salt)
    nprng = np.random.default_rng(rng.getrandbits(64))
    parts = [f"region_{i:02d}" for i in range(s.partitions)]
    keys: list[str] = []
    key_part: list[int] = []
    key_ts: list[int] = []
    out = Batches([], [], [], 0)
    for b in range(s.batches):
        n_upd = 0 if b == 0 else round(s.rows_per_batch * (1 - s.insert_share))
        n_ins = s.rows_per_batch - n_upd
        upd = rng.sample(range(len(keys)), n_upd)
        new = make_keys(n_ins, rng)
        new_parts = nprng.integers(0, s.partitions, n_ins).tolist()
        rows = upd + list(range(len(keys), len(keys) + n_ins))
        keys.extend(new)
        key_part.extend(new_parts)
        key_ts.extend([0] * n_ins)
        rng.shuffle(rows)
        n = len(rows)
        riders = nprng.integers(0, 1000, n)
        drivers = nprng.integers(0, 1000, n)
        ts = (1_700_000_000_000 + b * 10**9 + nprng.integers(0, 10**9, n)).tolist()
        for i, t in zip(rows, ts, strict=True):
            key_ts[i] = t
        out.tables.append(pa.table({
            KEY_FIELD: pa.array([keys[i] for i in rows], type=pa.string()),
            PARTITION_FIELD: pa.array([parts[key_part[i]] for i in rows], type=pa.string()),
            ORDERING_FIELD: pa.array(ts, type=pa.int64()),
            "rider": pa.array([f"rider-{x:03d}" for x in riders], type=pa.string()),
            "driver": pa.array([f"driver-{x:03d}" for x in drivers], type=pa.string()),
            "fare": pa.array(np.round(nprng.uniform(5, 100, n), 2), type=pa.float64()),
            "begin_lat": pa.array(nprng.uniform(-90, 90, n), type=pa.float64()),
            "begin_lon": pa.array(nprng.uniform(-180, 180, n), type=pa.float64()),
        }))
        out.inserts.append(n_ins)
        out.updates.append(n_upd)
    out.distinct_keys = len(keys)
    out.latest_ts_sum = sum(key_ts)
    return out


def row_bytes(t: pa.Table) -> float:
    """Mean bytes of a row's values (string bytes plus fixed-width values, no offsets)."""
    total = 0
    for col in t.columns:
        if pa.types.is_string(col.type):
            total += int(pc.sum(pc.binary_length(col)).as_py() or 0)
        else:
            total += len(col) * int(col.type.byte_width)
    return total / max(1, int(t.num_rows))


# --- Spark ----------------------------------------------------------------------------------


@dataclass
class Session:
    spark: Any
    owned: bool
    start_seconds: float


def start_spark(confs: dict[str, str] | None = None) -> Session:
    """The active Spark session (kept running) or a new ``local[2]`` one (stopped after;
    ``confs``: more Spark settings for it)."""
    require_spark()
    from morlog.spark.write import session

    t0 = time.perf_counter()
    spark, created = session(MASTER, "morlog-bench-upsert", confs)
    return Session(spark, created, time.perf_counter() - t0)


def save(df: Any, path: str, options: dict[str, str]) -> float:
    """Wall time of one ``morlog.spark.upsert`` of ``df`` with ``options`` (Hudi's names,
    parsed as the data source parses them)."""
    import morlog.spark

    opts = parse_write_options(options)
    t0 = time.perf_counter()
    morlog.spark.upsert(df.sparkSession, df, path, key=opts.key or KEY_FIELD,
                        partition=opts.partition, ordering=opts.ordering,
                        table_name=opts.table_name, config=opts.config)
    return time.perf_counter() - t0


def client_save(batch: pa.Table, path: str, options: dict[str, str]) -> float:
    """Wall time of one upsert of ``batch`` by the Python write client (the table created
    from the options on the first batch, as the Spark writer does)."""
    t0 = time.perf_counter()
    opts = parse_write_options(options)
    if os.path.exists(os.path.join(path, ".hoodie", "hoodie.properties")):
        table = MorTable(path, opts.config)
    else:
        table = MorTable.create_from_options(path, batch.schema, opts)
    table.upsert(batch)
    return time.perf_counter() - t0


# --- one method's table ---------------------------------------------------------------------


@dataclass
class MethodRun:
    path: str
    batch_seconds: list[float] = field(default_factory=list)

    @property
    def total(self) -> float:
        return sum(self.batch_seconds)


def commits(path: str) -> list[dict[str, Any]]:
    """Each completed delta commit's ``morlog.*`` numbers, oldest first."""
    tl = Table(path).timeline
    out = []
    for inst in tl.completed():
        if inst.action != "deltacommit":
            continue
        extra: dict[str, Any] = tl.metadata(inst).get("extraMetadata", {})
        row: dict[str, Any] = {"instant": inst.requested}
        for k, name in COMMIT_FIELDS.items():
            row[name] = int(extra.get(k, 0))
        row["commit_seconds"] = num(float(extra.get(conf.STAT_SECONDS, 0.0)))
        out.append(row)
    return out


def data_files(path: str) -> tuple[list[int], list[int]]:
    """Sizes of the table's base Parquet files and of its log files (partition directories;
    the timeline and other hidden files are not data)."""
    base: list[int] = []
    logs: list[int] = []
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if BaseFileName.matches(name):
                base.append(os.path.getsize(os.path.join(root, name)))
            elif LogFileName.matches(name):
                logs.append(os.path.getsize(os.path.join(root, name)))
    return base, logs


def size_stats(sizes: list[int]) -> dict[str, Any]:
    if not sizes:
        return {"min": 0, "median": 0, "max": 0, "mean": 0.0, "total": 0}
    return {"min": min(sizes), "median": num(statistics.median(sizes)), "max": max(sizes),
            "mean": num(statistics.fmean(sizes)), "total": sum(sizes)}


def histogram_edges(sizes: list[int], bins: int = HISTOGRAM_BINS) -> list[float]:
    """Log-spaced bin edges covering every size (one set shared by the methods)."""
    lo = max(1, min(sizes, default=1))
    hi = max(lo + 1, max(sizes, default=2))
    return [num(float(x)) for x in np.geomspace(lo * 0.999, hi * 1.001, bins + 1)]


def table_numbers(session: Session, run: MethodRun, data: Batches, rows: int,
                  method: str) -> dict[str, Any]:
    """Files, file groups, sizes, per-commit numbers and the read-back of one table."""
    base, logs = data_files(run.path)
    sizes = base + logs
    slices = Table(run.path).file_slices()
    listed = sum((s.base_file is not None) + len(s.log_files) for s in slices)
    per_commit = commits(run.path)
    if len(per_commit) != len(run.batch_seconds):
        raise BenchError(f"{method}: {len(per_commit)} completed commits for "
                         f"{len(run.batch_seconds)} batches")
    for c, secs in zip(per_commit, run.batch_seconds, strict=True):
        c["seconds"] = num(secs)
    created = sum(c["files_created"] for c in per_commit)
    commit_total = sum(c["commit_seconds"] for c in per_commit)

    from pyspark.sql import functions as F

    back = session.spark.read.format("morlog").load(run.path)
    t0 = time.perf_counter()
    got = back.agg(F.count(F.lit(1)).alias("n"), F.sum(ORDERING_FIELD).alias("ts")).collect()[0]
    read_s = time.perf_counter() - t0
    n, ts_sum = int(got["n"]), int(got["ts"] or 0)
    if n != data.distinct_keys:
        raise BenchError(f"{method}: read back {n} rows, wrote {data.distinct_keys} distinct "
                         "keys")
    if ts_sum != data.latest_ts_sum:
        raise BenchError(f"{method}: the rows read back are not every key's latest version "
                         f"(sum of {ORDERING_FIELD} {ts_sum}, expected {data.latest_ts_sum})")
    return {
        "options": dict(METHODS.get(method, {})),
        "total_seconds": num(run.total),
        "rows_per_s": rate(rows, run.total),
        "batch_seconds": [num(x) for x in run.batch_seconds],
        # morlog.seconds summed: the driver's commit (plan and write), the rest is Spark
        "commit_seconds": num(commit_total),
        "outside_commit_seconds": num(run.total - commit_total),
        "files": {
            "data_files": len(sizes),
            "base_files": len(base),
            "log_files": len(logs),
            "file_groups": len(slices),
            "files_in_latest_slices": listed,
            "files_created_per_timeline": created,
        },
        "file_sizes": size_stats(sizes),
        "base_file_sizes": size_stats(base),
        "log_file_sizes": size_stats(logs),
        "sizes": sorted(sizes),
        "commits": per_commit,
        "read_back": {"rows": n, "latest_versions": True, "seconds": num(read_s),
                      "spark_partitions": back.rdd.getNumPartitions()},
    }


# --- the run --------------------------------------------------------------------------------


def _one_run(session: Session, dfs: list[Any], tables: list[pa.Table], root: str, label: str
             ) -> dict[str, MethodRun]:
    names = [*METHODS, CLIENT]
    runs = {m: MethodRun(os.path.join(root, f"{label}-{m}")) for m in names}
    for b, df in enumerate(dfs):
        order = names[b % len(names):] + names[: b % len(names)]
        for m in order:
            if m == CLIENT:
                secs = client_save(tables[b], runs[m].path, BASE_OPTIONS)
            else:
                secs = save(df, runs[m].path, {**BASE_OPTIONS, **METHODS[m]})
            runs[m].batch_seconds.append(secs)
        progress(f"upsert: batch {b + 1}/{len(dfs)}: " + ", ".join(
            f"{m} {runs[m].batch_seconds[-1]:.2f} s" for m in names))
    return runs


def _warm_up(session: Session, dfs: list[Any], root: str, batches: int = 2) -> float:
    """The first ``batches`` batches written untimed into a scratch table with the morlog
    defaults (Python workers started, JVM and both commit paths warm at the real batch size;
    the second batch's upsert is the first that routes into existing file groups)."""
    path = os.path.join(root, "warm-up")
    t0 = time.perf_counter()
    for df in dfs[:batches]:
        save(df, path, BASE_OPTIONS)
    secs = time.perf_counter() - t0
    shutil.rmtree(path, ignore_errors=True)
    return secs


def run(*, quick: bool = False, repeats: int = 1) -> dict[str, Any]:
    s = QUICK if quick else FULL
    require_spark()  # before generating the data
    progress(f"upsert: generating {s.batches} batches x {s.rows_per_batch:,} rows "
             f"({s.partitions} partitions)")
    data = make_batches(s)
    rows = sum(t.num_rows for t in data.tables)
    progress(f"upsert: starting Spark ({MASTER})")
    session = start_spark()
    try:
        with tempfile.TemporaryDirectory(prefix="morlog-bench-upsert-") as tmp:
            dfs = [session.spark.createDataFrame(t) for t in data.tables]
            # --quick (a smoke run): one warm-up batch, not two (about 10 s less on a
            # loaded 2-core machine; the first batch starts the workers and both commit paths)
            warm = 1 if quick else 2
            progress(f"upsert: warming up (the first {warm} batch(es) into a scratch table)")
            warm_s = _warm_up(session, dfs, tmp, warm)
            spark_parts = dfs[0].rdd.getNumPartitions()
            best: dict[str, MethodRun] = {}
            for r in range(max(1, repeats)):
                progress(f"upsert: run {r + 1}/{max(1, repeats)}: methods "
                         f"{', '.join([*METHODS, CLIENT])} take turns per batch")
                runs = _one_run(session, dfs, data.tables, tmp, f"run{r + 1}")
                for m, mr in runs.items():
                    if m not in best or mr.total < best[m].total:
                        if m in best:
                            shutil.rmtree(best[m].path, ignore_errors=True)
                        best[m] = mr
                    else:
                        shutil.rmtree(mr.path, ignore_errors=True)
            progress("upsert: listing the tables, reading them back with Spark")
            methods = {m: table_numbers(session, best[m], data, rows, m)
                       for m in [*METHODS, CLIENT]}
        version = session.spark.version
    finally:
        if session.owned:
            session.spark.stop()

    all_sizes = [x for numbers in methods.values() for x in numbers["sizes"]]
    edges = histogram_edges(all_sizes)
    for numbers in methods.values():
        counts, _ = np.histogram(numbers.pop("sizes"), bins=edges)
        numbers["size_histogram"] = [int(c) for c in counts]

    mo, ba, pq_ = methods["morlog"], methods["baseline"], methods["morlog_parquet"]
    cl = methods[CLIENT]
    results: dict[str, Any] = {
        "data": {
            "batches": s.batches,
            "rows_written": rows,
            "inserts": sum(data.inserts),
            "updates": sum(data.updates),
            "distinct_keys": data.distinct_keys,
            "row_bytes_avg": num(row_bytes(data.tables[0])),
            "spark_partitions_per_batch": spark_parts,
        },
        "spark": {"version": version, "master": MASTER,
                  "session_start_seconds": num(session.start_seconds),
                  "warm_up_seconds": num(warm_s)},
        "size_histogram_edges": edges,
        **methods,
    }
    ratios = {
        "files_vs_baseline": ratio(mo["files"]["data_files"], ba["files"]["data_files"]),
        "time_vs_baseline": ratio(mo["total_seconds"], ba["total_seconds"]),
        "file_groups_vs_baseline": ratio(mo["files"]["file_groups"],
                                         ba["files"]["file_groups"]),
        "bytes_vs_baseline": ratio(mo["file_sizes"]["total"], ba["file_sizes"]["total"]),
        "median_file_size_vs_baseline": ratio(mo["file_sizes"]["median"],
                                              ba["file_sizes"]["median"]),
        "commit_seconds_vs_baseline": ratio(mo["commit_seconds"], ba["commit_seconds"]),
        "parquet_carrier_files_vs_baseline": ratio(pq_["files"]["data_files"],
                                                   ba["files"]["data_files"]),
        "parquet_carrier_time_vs_baseline": ratio(pq_["total_seconds"], ba["total_seconds"]),
        "parquet_carrier_time_vs_avro": ratio(pq_["total_seconds"], mo["total_seconds"]),
        "parquet_carrier_bytes_vs_avro": ratio(pq_["file_sizes"]["total"],
                                               mo["file_sizes"]["total"]),
        "spark_vs_python_client": ratio(mo["total_seconds"], cl["total_seconds"]),
    }
    goals = {
        "files_vs_baseline": goal(ratios["files_vs_baseline"], 0.2, "<="),
        "time_vs_baseline": goal(ratios["time_vs_baseline"], 1.0, "<="),
        "spark_vs_python_client": goal(ratios["spark_vs_python_client"], 1.5, "<="),
    }
    params: dict[str, Any] = {
        **asdict(s),
        "first_batch": "all inserts; later batches insert_share new keys, the rest updates "
                       "of distinct earlier keys in their own partition (ts grows per batch)",
        "row": "uuid (UUID4 string key), region (partition), ts long (ordering), rider, "
               "driver strings, fare, begin_lat, begin_lon doubles; seeded RNG",
        "spark": f"{MASTER}, UI off; DataFrames from Arrow tables (createDataFrame), the "
                 "same one per batch for every method; one Spark session",
        "options": BASE_OPTIONS,
        "methods": {**{m: o or "defaults" for m, o in METHODS.items()},
                    CLIENT: "MorTable.upsert of the same Arrow batches on the driver"},
        "timing": "wall time of each morlog.spark.upsert (tagging and writing in the "
                  "tasks, the driver's commit); methods take turns per batch, the first "
                  "rotating; warm-up first: the first two batches (--quick: the first one), "
                  "untimed, into a scratch table",
        "files": "data files listed at the end: base Parquet files and log files in the "
                 "partition directories",
        "read_back": "spark.read.format('morlog'): count and sum(ts) in one job; must equal "
                     "the distinct keys written and the sum of their latest ts",
        "repeats": repeats,
        "repeats_note": "a full run takes minutes, so this scenario defaults to 1 repeat; with "
                        "more, each method's run with the least total time is kept",
        "quick": quick,
    }
    return make_report("upsert", params, results, ratios, goals)


# --- the plot -------------------------------------------------------------------------------

COLORS = {"morlog": "#4878a8", "baseline": "#e0a040", "morlog_parquet": "#6aa86a",
          CLIENT: "#a05a9c"}


def plot(plt: Any, report: dict[str, Any]) -> Any:
    r = report["results"]
    names = [m for m in [*METHODS, CLIENT] if m in r]
    fig, axes = plt.subplots(2, 2, figsize=(13, 8.4))
    bar(axes[0][0], names, [r[m]["total_seconds"] for m in names],
        f"{r['data']['batches']} upsert batches, total write time", "seconds", fmt="{:.1f}")
    bar(axes[0][1], names, [r[m]["files"]["data_files"] for m in names],
        "data files at the end (base + log)", "files")
    for i, m in enumerate(names):
        axes[0][1].annotate(f"{r[m]['files']['file_groups']} groups",
                            (i, r[m]["files"]["data_files"] / 2), ha="center", fontsize=8,
                            color="white")
    ax = axes[1][0]
    for m in names:
        secs = r[m]["batch_seconds"]
        ax.plot(range(1, len(secs) + 1), secs, marker="o", label=m, color=COLORS[m])
    ax.set_xlabel("batch")
    ax.set_ylabel("seconds")
    ax.set_ylim(bottom=0)
    ax.set_title("time per batch (df.write...save)", fontsize=10)
    ax.legend(fontsize=8)
    ax = axes[1][1]
    edges = r["size_histogram_edges"]
    for m in names:
        ax.stairs(r[m]["size_histogram"], edges, label=m, color=COLORS[m], linewidth=1.5)
    ax.set_xscale("log")
    ax.set_xlabel("file size, bytes")
    ax.set_ylabel("files")
    ax.set_title("data file sizes", fontsize=10)
    ax.legend(fontsize=8)
    d = r["data"]
    fig.suptitle(f"morlog bench upsert: {d['rows_written']:,} rows in {d['batches']} batches, "
                 f"{d['distinct_keys']:,} keys, {report['params']['partitions']} partitions "
                 f"(Spark {r['spark']['master']})", fontsize=11)
    return fig
