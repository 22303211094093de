"""``morlog bench spark``: upserts through Spark against the Python write client.

A table of 1,000,000 rows (10 partitions, rows of about 100 bytes: UUID4 key, partition
string, long ``ts``, rider/driver strings, three doubles) is created once by the Python
client and copied for each method; then batches of 100,000 rows (30 % updates of keys of the
table in their own partition, 70 % new keys) are upserted into each copy, the same batch for
every method, methods taking turns per batch (the first rotating), after an untimed warm-up
of every Spark method into a scratch table:

- ``python_client``: ``MorTable.upsert`` of the batch's Arrow table in this process (no
  Spark): the anchor;
- ``data_source``: ``df.write.format("morlog")`` with Hudi's options (the tasks write, the
  driver commits: ``morlog.writers.distributed``);
- ``spark_upsert``: ``morlog.spark.upsert`` (Spark jobs of its own; routes inserts into small
  file groups).

Goals (issue 25): each Spark method's time at most 1.5x the client's on ``local[2]``. A
batch's time is the wall time of the call. Reported per method: seconds per batch, rows/s,
and the peak resident memory of the driver's Python process and of the largest Python
worker process Spark starts (sampled every 20 ms from ``/proc``; on ``local[2]`` the
driver's JVM runs the executors too, so it is not reported). Before any number is reported
the tables are read back with morlog's reader: equal row counts, key digests and ``ts``
sums across methods, or the run fails.

The same on Spark's ``local-cluster`` master (executors in JVMs of their own, 2x goal) needs
a Spark distribution's scripts; ``tests/test_spark_cluster.py`` runs that cluster for
correctness and driver memory, this benchmark does not.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import morlog.config as conf
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import parse_write_options

from .common import BenchError, bar, goal, make_keys, make_report, make_rng, num, progress, rate
from .spark_upsert import ORDERING_FIELD, PARTITION_FIELD, start_spark

KEY_FIELD = "uuid"
CLIENT = "python_client"
METHODS = ("data_source", "spark_upsert")
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


class PeakSampler:
    """Peak resident size (MiB) of this process and of the largest Python process among its
    descendants, sampled from ``/proc`` every ``interval`` seconds (Linux; zeros elsewhere)."""

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self.driver = 0
        self.worker = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            self.driver = max(self.driver, _rss_mb(me))
            for pid in _descendants(me):
                if _is_python(pid):
                    self.worker = max(self.worker, _rss_mb(pid))
            self._stop.wait(self.interval)


def _rss_mb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for n in names:
        if not n.isdigit():
            continue
        try:
            with open(f"/proc/{n}/stat", encoding="ascii", errors="replace") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(n))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _is_python(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"python" in f.read().split(b"\0", 1)[0]
    except OSError:
        return False


def _write(method: str, spark: Any, df: Any, batch: pa.Table, path: str) -> float:
    t0 = time.perf_counter()
    if method == CLIENT:
        MorTable(path, parse_write_options(OPTIONS).config).upsert(batch)
    elif method == "data_source":
        df.write.format("morlog").options(**OPTIONS).mode("append").save(path)
    else:
        import morlog.spark

        morlog.spark.upsert(spark, df, path, key=KEY_FIELD, partition=PARTITION_FIELD,
                            ordering=ORDERING_FIELD)
    return time.perf_counter() - t0


def _digest(path: str) -> dict[str, Any]:
    t = Table(path).read(columns=[KEY_FIELD, ORDERING_FIELD])
    keys = pc.sort_indices(t, [(KEY_FIELD, "ascending")])
    h = hashlib.sha256()
    for k in t.column(KEY_FIELD).take(keys).to_pylist():
        h.update(k.encode() + b"\0")
    return {"rows": t.num_rows, "key_digest": h.hexdigest()[:16],
            "ts_sum": int(pc.sum(t.column(ORDERING_FIELD)).as_py() or 0)}


def run(*, quick: bool = False, repeats: int = 1) -> dict[str, Any]:
    s = QUICK if quick else FULL
    progress(f"spark: generating a {s.table_rows:,}-row table and {s.batches} batches of "
             f"{s.rows_per_batch:,} rows")
    initial, batches = make_data(s)
    session = start_spark()
    spark = session.spark
    seconds: dict[str, list[float]] = {m: [] for m in (CLIENT, *METHODS)}
    peaks: dict[str, dict[str, int]] = {m: {"driver_python_mb": 0, "python_worker_mb": 0}
                                        for m in (CLIENT, *METHODS)}
    try:
        with tempfile.TemporaryDirectory(prefix="morlog-bench-spark-") as tmp:
            base = os.path.join(tmp, "base")
            t0 = time.perf_counter()
            MorTable.create_from_options(base, initial.schema, parse_write_options(OPTIONS)
                                         ).upsert(initial)
            create_s = time.perf_counter() - t0
            paths = {}
            for m in (CLIENT, *METHODS):
                paths[m] = os.path.join(tmp, m)
                shutil.copytree(base, paths[m])
            dfs = [spark.createDataFrame(b) for b in batches]
            progress("spark: warming up (each Spark method into a scratch table)")
            warm = dfs[0].limit(max(1, s.rows_per_batch // 10))
            for m in METHODS:
                scratch = os.path.join(tmp, f"warm-{m}")
                _write(m, spark, warm, batches[0].slice(0, 1), scratch)
            order = [CLIENT, *METHODS]
            for b, (df, batch) in enumerate(zip(dfs, batches, strict=True)):
                turn = order[b % len(order):] + order[: b % len(order)]
                for m in turn:
                    progress(f"spark: batch {b + 1}/{len(batches)}: {m}")
                    with PeakSampler() as sampler:
                        seconds[m].append(_write(m, spark, df, batch, paths[m]))
                    peaks[m]["driver_python_mb"] = max(peaks[m]["driver_python_mb"],
                                                       sampler.driver)
                    peaks[m]["python_worker_mb"] = max(peaks[m]["python_worker_mb"],
                                                       sampler.worker)
            progress("spark: reading every table back")
            checks = {m: _digest(p) for m, p in paths.items()}
            files = {m: sum(len(fs) for _, _, fs in os.walk(p)) for m, p in paths.items()}
        version = spark.version
    finally:
        if session.owned:
            spark.stop()
    if len({(c["rows"], c["key_digest"], c["ts_sum"]) for c in checks.values()}) != 1:
        raise BenchError("the methods' tables differ", actual=checks)
    rows = s.batches * s.rows_per_batch
    results: dict[str, Any] = {
        "create_seconds": num(create_s), "checks": checks[CLIENT],
        "spark": {"version": version, "master": "local[2]"},
        **{m: {"batch_seconds": [num(x) for x in seconds[m]],
               "total_seconds": num(sum(seconds[m])),
               "rows_per_s": rate(rows, sum(seconds[m])), "files": files[m], **peaks[m]}
           for m in seconds}}
    cl = sum(seconds[CLIENT])
    ratios = {f"{m}_vs_client": num(sum(seconds[m]) / cl) if cl else 0.0 for m in METHODS}
    goals = {f"{m}_vs_client": goal(ratios[f"{m}_vs_client"], 1.5, "<=") for m in METHODS}
    params = {**asdict(s), "options": OPTIONS, "repeats": repeats, "quick": quick,
              "methods": {CLIENT: "MorTable.upsert on the driver",
                          "data_source": "df.write.format('morlog')",
                          "spark_upsert": "morlog.spark.upsert"},
              "cluster": "local-cluster is measured by tests/test_spark_cluster.py (not here)"}
    return make_report("spark", params, results, ratios, goals)


def plot(plt: Any, report: dict[str, Any]) -> Any:
    r = report["results"]
    names = [CLIENT, *METHODS]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    bar(axes[0], names, [r[m]["total_seconds"] for m in names],
        "upsert time, all batches (s)", "seconds", fmt="{:.2f}")
    bar(axes[1], names, [r[m]["driver_python_mb"] for m in names],
        "driver Python peak RSS (MiB)", "MiB")
    return fig


__all__ = ["FULL", "QUICK", "Sizes", "make_data", "plot", "run"]
