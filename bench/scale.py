"""``morlog bench scale``: morlog side by side with the Rust engines, on the same data, in one run.

A trips-like table (12 columns: ``uuid`` key string, ``city`` partition string (4 values), ``ts``
long ordering field, two integers, five doubles, two nullable strings) of N rows is written,
upserted, read and tagged by each engine, for each size of ``--rows`` (default 1,000,000):

=================  ==========================================  ===============================
step               morlog                                      baseline (same run, same rows)
=================  ==========================================  ===============================
create             ``MorTable.create`` + ``insert`` (N rows)    delta-rs ``write_deltalake``
                                                               (partitioned by ``city``)
upsert             10 ``upsert`` s of N/10 rows, 30 % updates   delta-rs ``MERGE`` (matched:
                   (Avro log blocks; Parquet carrier too,      update all, not matched: insert
                   reported without a goal)                    all; partition in the predicate)
read_avro          ``Table(path).read()``                      hudi-rs ``HudiTable.read()`` of
                                                               the same morlog-written table
read_parquet       the same, table written with the Parquet    hudi-rs (same table); delta-rs
                   carrier                                     ``to_pyarrow_table`` (no merge)
compact            ``compact`` (``morlog compact``'s service:   delta-rs ``DeltaTable(path)``
                   schedule and run compaction of every file   ``.optimize.compact()`` (its
                   slice with logs) of a copy of the Avro-log  defaults) of a copy of its table
                   table after the upserts                     after the MERGEs
read_compacted     ``Table(path).read()`` of the compacted     delta-rs ``to_pyarrow_table`` of
                   table                                       its compacted table
tag                ``KeyTagger.tag`` of 100,000 keys, half     ``bench tag``'s Hudi bloom index
                   present, with their partitions (base files  baseline (every log block read,
                   through their base-key index; and, as       base files through their
                   ``morlog_rli``, through morlog's record     footers); pypaimon's read of its
                   index built untimed on a copy)              table filtered by the keys
=================  ==========================================  ===============================

delta-rs's ``MERGE`` rewrites every file it touches (copy-on-write): after the 10 upserts its
table may hold one file per partition, which ``optimize.compact()`` leaves as it is. The
ratio ``upsert_and_compact_vs_delta_rs`` (no goal) compares the whole way to a compacted
table: morlog's upserts and compaction over delta-rs's MERGEs and compaction.

pypaimon (Apache Paimon's Python package) runs every step but ``read_parquet`` on a table of its
own: a primary-key table (``city`` + ``uuid``) partitioned by ``city``, ``ts`` its sequence
field, with fixed buckets per partition as Paimon's documentation recommends (200 MB - 1 GB of
data per bucket: one bucket per partition up to ~4 GB of rows); ``pypaimon`` with the Rust
paths of ``pypaimon-rust`` on (write, commit, read: the faster set-up, the goals' anchor),
``pypaimon_py`` with pypaimon's defaults (pure Python; ratios only). Its upserts are plain
writes of the batches (a primary-key table keeps the row of the highest sequence per key).

Every timed step of every engine runs in a subprocess of its own (``python -c`` into
:func:`child_main`), started fresh for each repeat (nothing cached across repeats): the child
loads its input (untimed), runs the step once under ``time.perf_counter`` and reports the time,
its peak resident set (``VmHWM`` of ``/proc/self/status``: Arrow's and the Rust engines'
allocations included, which ``tracemalloc`` would miss) and what it produced (row count, sum of
``ts``, tag answers), which the parent checks across engines (the compacted tables' reads also
against the reads before compaction). Writes go to fresh directories (upserts to a fresh copy
of the created table, compactions to a fresh copy of the upserted one) on local disk; before
each read every file of the table is read once (warm page cache for all engines). Engines take
turns within a repeat; the best time of ``--repeats`` is kept. A step that exceeds
``--timeout`` seconds is killed and recorded as a timeout (its goals missed); a step that fails
is recorded with its error.

The goals are judged at the largest size; with two sizes or more, morlog's time per row at the
largest is also compared with the smallest (``time_per_row_growth_*``).
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .common import (
    BenchError,
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
from .names import SCALE_TIMEOUT

KEY_FIELD = "uuid"
PARTITION_FIELD = "city"
ORDERING_FIELD = "ts"
CITIES = ("san_francisco", "sao_paulo", "chennai", "amsterdam")
ARROW_SCHEMA = pa.schema([
    pa.field(KEY_FIELD, pa.string(), nullable=False),
    pa.field(PARTITION_FIELD, pa.string(), nullable=False),
    pa.field(ORDERING_FIELD, pa.int64(), nullable=False),
    pa.field("passengers", pa.int32()),
    pa.field("distance_m", pa.int64()),
    pa.field("begin_lat", pa.float64()),
    pa.field("begin_lon", pa.float64()),
    pa.field("end_lat", pa.float64()),
    pa.field("end_lon", pa.float64()),
    pa.field("fare", pa.float64()),
    pa.field("rider", pa.string()),
    pa.field("driver", pa.string()),
])
UPSERT_BATCHES = 10
UPDATE_SHARE = 0.3
TAG_KEYS = 100_000
DEFAULT_ROWS = (1_000_000,)
QUICK_ROWS = (20_000,)
#: ``bench all`` runs scale at this size unless --rows says otherwise
ALL_ROWS = (200_000,)
DEFAULT_TIMEOUT = SCALE_TIMEOUT
#: (step, engine) pairs in the order they run; the first engine of a step is morlog's
STEPS: dict[str, tuple[str, ...]] = {
    "create": ("morlog", "delta_rs", "pypaimon", "pypaimon_py"),
    "upsert": ("morlog", "morlog_parquet", "delta_rs", "pypaimon", "pypaimon_py"),
    "compact": ("morlog", "delta_rs"),
    "read_avro": ("morlog", "hudi_rs", "pypaimon", "pypaimon_py"),
    "read_parquet": ("morlog", "hudi_rs", "delta_rs"),
    "read_compacted": ("morlog", "delta_rs"),
    "tag": ("morlog", "morlog_rli", "bloom_index", "pypaimon"),
}
#: pypaimon's primary-key table: database and table name inside the engine's warehouse
PAIMON_TABLE = "bench.trips"
#: Paimon's documentation (Primary Key Table > Bucket): "the recommended data size in each
#: bucket is about 200MB - 1GB"; fixed buckets per partition = the data of a partition over the
#: top of that range, at least one (one bucket per partition at 1M and 10M rows)
PAIMON_BUCKET_BYTES = 1 << 30
#: pypaimon's optional Rust paths (the ``pypaimon-rust`` package; off by default): ``pypaimon``
#: turns them on (write, commit, read), ``pypaimon_py`` is the pure-Python default
PAIMON_NATIVE_OPTIONS = {"write.native.enabled": "true", "commit.native.enabled": "true",
                         "read.native.enabled": "true"}


# --- the data -------------------------------------------------------------------------------


def trip_rows(keys: Sequence[str], cities: Any, ts: Any, nprng: np.random.Generator
              ) -> pa.Table:
    """The rows of ``keys`` (``cities``: indices into :data:`CITIES`; ``ts``: ints),
    column-wise (``bench compaction`` builds its slice with it too)."""
    n = len(keys)

    def nullable_names(prefix: str) -> pa.Array:
        ids = nprng.integers(0, 1000, n)
        nulls = nprng.random(n) < 0.1
        text = np.char.add(f"{prefix}-", np.char.zfill(ids.astype(str), 3))
        return pa.array(text.astype(object), type=pa.string(), mask=nulls)

    return pa.table({
        KEY_FIELD: pa.array(keys, type=pa.string()),
        PARTITION_FIELD: pa.array(np.asarray(CITIES, dtype=object)[np.asarray(cities)],
                                  type=pa.string()),
        ORDERING_FIELD: pa.array(ts, type=pa.int64()),
        "passengers": pa.array(nprng.integers(1, 7, n), type=pa.int32()),
        "distance_m": pa.array(nprng.integers(100, 50_000, n), type=pa.int64()),
        "begin_lat": pa.array(nprng.uniform(-90, 90, n), type=pa.float64()),
        "begin_lon": pa.array(nprng.uniform(-180, 180, n), type=pa.float64()),
        "end_lat": pa.array(nprng.uniform(-90, 90, n), type=pa.float64()),
        "end_lon": pa.array(nprng.uniform(-180, 180, n), type=pa.float64()),
        "fare": pa.array(np.round(nprng.uniform(5, 100, n), 2), type=pa.float64()),
        "rider": nullable_names("rider"),
        "driver": nullable_names("driver"),
    }, schema=ARROW_SCHEMA)


@dataclass
class DataSet:
    """The files of one size: the create batch, the upsert batches, the tag batch."""

    rows: int
    create: str
    upserts: list[str]
    tag: str
    distinct_keys: int
    #: sum of every key's latest ts: what a correct snapshot sums to
    latest_ts_sum: int
    tag_present: int
    upsert_updates: int
    upsert_inserts: int


def make_data(directory: str, n: int) -> DataSet:
    """Generate the rows of one size into Parquet files under ``directory`` (seeded)."""
    os.makedirs(directory, exist_ok=True)
    rng = make_rng(1200 + n % 997)
    nprng = np.random.default_rng(rng.getrandbits(64))
    keys = make_keys(n, rng)
    cities = nprng.integers(0, len(CITIES), n)
    ts = 1_700_000_000_000 + nprng.integers(0, 10**9, n)
    latest = ts.astype(np.int64).copy()
    create = os.path.join(directory, "create.parquet")
    pq.write_table(trip_rows(keys, cities, ts, nprng), create)
    per = max(1, n // UPSERT_BATCHES)
    upserts = []
    upd_total = ins_total = 0
    for b in range(UPSERT_BATCHES):
        n_upd = round(per * UPDATE_SHARE)
        n_ins = per - n_upd
        upd = nprng.choice(len(keys), n_upd, replace=False)
        new = make_keys(n_ins, rng)
        new_cities = nprng.integers(0, len(CITIES), n_ins)
        idx = np.concatenate([upd, np.arange(len(keys), len(keys) + n_ins)])
        keys.extend(new)
        cities = np.concatenate([cities, new_cities])
        latest = np.concatenate([latest, np.zeros(n_ins, dtype=np.int64)])
        nprng.shuffle(idx)
        bts = 1_700_000_000_000 + (b + 1) * 10**9 + nprng.integers(0, 10**9, per)
        latest[idx] = bts
        path = os.path.join(directory, f"upsert_{b:02d}.parquet")
        pq.write_table(trip_rows([keys[i] for i in idx], cities[idx], bts, nprng), path)
        upserts.append(path)
        upd_total += n_upd
        ins_total += n_ins
    # the tag batch: half keys live in the table, half new ones, each with its partition
    n_tag = min(TAG_KEYS, len(keys))
    half = n_tag // 2
    present = nprng.choice(len(keys), half, replace=False)
    absent = make_keys(n_tag - half, rng)
    tag_keys = [keys[i] for i in present] + absent
    tag_cities = np.concatenate([cities[present],
                                 nprng.integers(0, len(CITIES), n_tag - half)])
    order = nprng.permutation(n_tag)
    tag = os.path.join(directory, "tag.parquet")
    pq.write_table(pa.table({
        KEY_FIELD: pa.array([tag_keys[i] for i in order], type=pa.string()),
        PARTITION_FIELD: pa.array([CITIES[c] for c in tag_cities[order]], type=pa.string()),
    }), tag)
    return DataSet(n, create, upserts, tag, len(keys), int(latest.sum()), half,
                   upd_total, ins_total)


# --- the child: one step of one engine ------------------------------------------------------


def _rss_now() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _peak_rss() -> int:
    """Peak resident set of this process since its ``exec``: ``VmHWM`` (Linux). Not
    ``ru_maxrss``: exec keeps the high-water mark of the process before it, so a child's
    ``ru_maxrss`` starts at the parent's size at fork (the parent holds the generated data)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) * (1 if sys.platform == "darwin" else 1024)


def _snapshot_summary(t: pa.Table) -> dict[str, Any]:
    return {"rows": int(t.num_rows),
            "ts_sum": int(pc.sum(t.column(ORDERING_FIELD)).as_py() or 0) if t.num_rows else 0}


def _tag_summary(locations: Sequence[tuple[str, str] | None]) -> dict[str, Any]:
    h = hashlib.sha256()
    found = 0
    for loc in locations:
        if loc is None:
            h.update(b"-\n")
        else:
            found += 1
            h.update(f"{loc[0]}/{loc[1]}\n".encode())
    return {"found": found, "digest": h.hexdigest()[:16]}


def _found_summary(present: pa.Array) -> dict[str, Any]:
    """Which of the tagged keys were found (in input order), for engines with and without
    file locations: the count and a digest of the mask."""
    mask = np.asarray(present.to_numpy(zero_copy_only=False), dtype=np.uint8)
    return {"found": int(mask.sum()),
            "found_digest": hashlib.sha256(mask.tobytes()).hexdigest()[:16]}


def _morlog_config(carrier: str) -> Any:
    from morlog.writers.options import WriteConfig

    return WriteConfig(carrier="parquet" if carrier == "parquet" else "avro", fsync=False)


def paimon_buckets(data: DataSet) -> int:
    """Fixed buckets per partition for pypaimon's table, by its documentation's rule
    (:data:`PAIMON_BUCKET_BYTES`): the uncompressed bytes of the rows after the upserts, over
    the partitions, over the bytes a bucket should hold at most."""
    meta = pq.read_metadata(data.create)
    row_bytes = sum(meta.row_group(i).total_byte_size
                    for i in range(meta.num_row_groups)) / max(1, meta.num_rows)
    per_partition = row_bytes * data.distinct_keys / len(CITIES)
    return max(1, -(-int(per_partition) // PAIMON_BUCKET_BYTES))


def _paimon_table(path: str, engine: str, buckets: int = 0) -> Any:
    """pypaimon's table in the warehouse ``path`` (created with ``buckets`` when given): the
    primary key ``(city, uuid)`` (Paimon's partition fields are part of the key), partitioned
    by ``city``, ``ts`` as the sequence field (Hudi's ordering field), fixed buckets;
    ``pypaimon`` with the Rust paths on, ``pypaimon_py`` with pypaimon's defaults."""
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": path})
    if buckets:
        options = {"bucket": str(buckets), "sequence.field": ORDERING_FIELD}
        if engine == "pypaimon":
            from pypaimon.write.native_write import native_write_available

            if not native_write_available():
                raise BenchError("bench scale's pypaimon engine needs pypaimon-rust "
                                 "(the bench extra)")
            options.update(PAIMON_NATIVE_OPTIONS)
        catalog.create_database(PAIMON_TABLE.split(".")[0], True)
        catalog.create_table(PAIMON_TABLE, Schema.from_pyarrow_schema(
            ARROW_SCHEMA, partition_keys=[PARTITION_FIELD],
            primary_keys=[PARTITION_FIELD, KEY_FIELD], options=options), False)
    return catalog.get_table(PAIMON_TABLE)


def _paimon_imports(engine: str) -> None:
    """Import pypaimon's API (and its Rust module) before the clock starts, as the other
    engines' entry points are."""
    import importlib

    for m in ("pypaimon.catalog.catalog_factory", "pypaimon.schema.schema",
              "pypaimon.write.native_write", "pypaimon.read.read_builder",
              *(("pypaimon_rust.datafusion",) if engine == "pypaimon" else ())):
        importlib.import_module(m)


def _paimon_write(table: Any, data: pa.Table) -> None:
    """One batch commit of ``data`` (a primary-key table: rows of a key upsert it)."""
    builder = table.new_batch_write_builder()
    writer, commit = builder.new_write(), builder.new_commit()
    writer.write_arrow(data)
    commit.commit(writer.prepare_commit())
    writer.close()
    commit.close()


def _paimon_read(table: Any, keys: pa.Array | None = None) -> pa.Table:
    """The snapshot, or (``keys``) the rows of those keys: a filtered read (``is_in``
    predicate pushed to the scan), pypaimon's way to look keys up."""
    builder = table.new_read_builder()
    if keys is not None:
        pred = builder.new_predicate_builder().is_in(KEY_FIELD, keys.to_pylist())
        builder = builder.with_filter(pred).with_projection([PARTITION_FIELD, KEY_FIELD])
    return builder.new_read().to_arrow(builder.new_scan().plan().splits())


def run_step(step: str, engine: str, args: dict[str, Any]) -> dict[str, Any]:
    """Run ``step`` of ``engine`` once (inputs loaded untimed); return its time and result."""
    path = args["path"]
    out: dict[str, Any] = {}
    if engine.startswith("pypaimon"):
        _paimon_imports(engine)
    if step == "create":
        data = pq.read_table(args["input"])
        if engine == "morlog":
            from morlog.writers.client import MorTable
            rss0, t0 = _rss_now(), time.perf_counter()
            t = MorTable.create(path, ARROW_SCHEMA, key_field=KEY_FIELD,
                                partition_field=PARTITION_FIELD, ordering_field=ORDERING_FIELD,
                                config=_morlog_config("avro"))
            t.insert(data)
            dt = time.perf_counter() - t0
        elif engine.startswith("pypaimon"):
            rss0, t0 = _rss_now(), time.perf_counter()
            _paimon_write(_paimon_table(path, engine, args["buckets"]), data)
            dt = time.perf_counter() - t0
        else:
            from deltalake import write_deltalake
            rss0, t0 = _rss_now(), time.perf_counter()
            write_deltalake(path, data, partition_by=[PARTITION_FIELD])
            dt = time.perf_counter() - t0
        out["rows_written"] = int(data.num_rows)
    elif step == "upsert":
        batches = [pq.read_table(p) for p in args["inputs"]]
        if engine in ("morlog", "morlog_parquet"):
            from morlog.writers.client import MorTable
            rss0, t0 = _rss_now(), time.perf_counter()
            t = MorTable(path, _morlog_config("parquet" if engine == "morlog_parquet"
                                              else "avro"))
            commits, marks = [], [t0]
            for b in batches:
                commits.append(t.upsert(b))
                marks.append(time.perf_counter())
            dt = time.perf_counter() - t0
            out["inserts"] = sum(c.inserts for c in commits)
            out["updates"] = sum(c.updates for c in commits)
        elif engine.startswith("pypaimon"):
            rss0, t0 = _rss_now(), time.perf_counter()
            ptab = _paimon_table(path, engine)
            marks = [t0]
            for b in batches:
                _paimon_write(ptab, b)
                marks.append(time.perf_counter())
            dt = time.perf_counter() - t0
        else:
            from deltalake import DeltaTable
            pred = (f"t.{PARTITION_FIELD} = s.{PARTITION_FIELD} AND "
                    f"t.{KEY_FIELD} = s.{KEY_FIELD}")
            rss0, t0 = _rss_now(), time.perf_counter()
            marks = [t0]
            # one DeltaTable across the MERGEs, as a user keeps it (each MERGE moves it to
            # the version it committed)
            dtab = DeltaTable(path)
            for b in batches:
                res = (dtab.merge(b, pred, source_alias="s", target_alias="t")
                       .when_matched_update_all().when_not_matched_insert_all().execute())
                marks.append(time.perf_counter())
            dt = time.perf_counter() - t0
            out["last_merge_metrics"] = {k: v for k, v in res.items()
                                         if isinstance(v, int | float)}
        out["rows_written"] = sum(int(b.num_rows) for b in batches)
        # each batch's time: growth as the table grows (the last batch over the first)
        out["batch_seconds"] = [num(b - a) for a, b in zip(marks, marks[1:], strict=False)]
    elif step == "compact":
        if engine == "morlog":
            from morlog.readers.table import Table
            from morlog.writers.client import MorTable
            from morlog.writers.services.compaction import compact
            rss0, t0 = _rss_now(), time.perf_counter()
            report = compact(MorTable(path, _morlog_config("avro")))
            dt = time.perf_counter() - t0
            out["file_groups"] = sum(len(r.compacted) for r in report.results)
            out["rows_written"] = sum(r.records_written for r in report.results)
            out["bytes_written"] = sum(r.bytes_written for r in report.results)
            # morlog compact's promise: afterwards no latest slice has log files
            out["slices_with_logs_after"] = sum(1 for s in Table(path).file_slices()
                                                if s.log_files)
        else:
            from deltalake import DeltaTable
            rss0, t0 = _rss_now(), time.perf_counter()
            dtab = DeltaTable(path)
            metrics = dtab.optimize.compact()
            dt = time.perf_counter() - t0
            out["metrics"] = {k: v for k, v in metrics.items() if isinstance(v, int | float)}
            out["files_after"] = len(DeltaTable(path).file_uris())
    elif step in ("read_avro", "read_parquet", "read_compacted"):
        if engine == "morlog":
            from morlog.readers.table import Table
            rss0, t0 = _rss_now(), time.perf_counter()
            tab = Table(path).read()
            dt = time.perf_counter() - t0
        elif engine == "hudi_rs":
            import hudi
            rss0, t0 = _rss_now(), time.perf_counter()
            batches = hudi.HudiTableBuilder.from_base_uri(path).build().read()
            dt = time.perf_counter() - t0
            tab = pa.Table.from_batches(batches) if batches else pa.table({})
        elif engine.startswith("pypaimon"):
            rss0, t0 = _rss_now(), time.perf_counter()
            tab = _paimon_read(_paimon_table(path, engine))
            dt = time.perf_counter() - t0
        else:
            from deltalake import DeltaTable
            rss0, t0 = _rss_now(), time.perf_counter()
            tab = DeltaTable(path).to_pyarrow_table()
            dt = time.perf_counter() - t0
        out.update(_snapshot_summary(tab))
        out["columns"] = tab.num_columns
    elif step == "tag":
        keys = pq.read_table(args["input"])
        k = keys.column(KEY_FIELD).combine_chunks()
        p = keys.column(PARTITION_FIELD).combine_chunks()
        if engine in ("morlog", "morlog_rli"):
            from morlog.readers.lookup import KeyTagger
            from morlog.readers.table import Table
            rss0, t0 = _rss_now(), time.perf_counter()
            result = KeyTagger(Table(path)).tag(k, p)
            locations = result.locations
            dt = time.perf_counter() - t0
            out["base_key_indexes"] = result.stats.base_key_indexes
            out["record_index_shards_read"] = result.stats.morlog_index_shards
        elif engine.startswith("pypaimon"):
            rss0, t0 = _rss_now(), time.perf_counter()
            got = _paimon_read(_paimon_table(path, engine), k)
            dt = time.perf_counter() - t0
            # present = (partition, key) among the rows read: no file location to compare
            wanted = pc.binary_join_element_wise(p, k, "/")
            found = pc.binary_join_element_wise(got.column(PARTITION_FIELD),
                                                got.column(KEY_FIELD), "/")
            locations = None
            out.update(_found_summary(pc.is_in(wanted, value_set=found.combine_chunks())))
        else:
            from .tag import bloom_index_baseline
            rss0, t0 = _rss_now(), time.perf_counter()
            locations = bloom_index_baseline(path, k, p).locations
            dt = time.perf_counter() - t0
        if locations is not None:
            out.update(_tag_summary(locations))
            out.update(_found_summary(pa.array([loc is not None for loc in locations])))
        out["keys"] = len(k)
    else:
        raise BenchError(f"unknown scale step {step!r}")
    out.update({"seconds": dt, "peak_rss_bytes": _peak_rss(), "rss_before_bytes": rss0})
    if engine.startswith("pypaimon"):  # its own environment: say which versions ran
        out["versions"] = {d: _dist_version(d) for d in ("pypaimon", "pypaimon-rust",
                                                          "pyarrow")}
    return out


def child_main() -> None:
    """Entry of a step's subprocess: ``argv[1]`` is ``{"step", "engine", "args"}``; prints the
    result as one JSON line on stdout."""
    req = json.loads(sys.argv[1])
    res = run_step(req["step"], req["engine"], req["args"])
    sys.stdout.write(json.dumps(res) + "\n")
    sys.stdout.flush()
    # The measurement is out. Leave without the interpreter's teardown: deltalake's native
    # runtime can abort there ("terminate called without an active exception", SIGABRT),
    # which would turn a finished step into a failed one.
    os._exit(0)


CHILD_CODE = "from morlog.bench.scale import child_main; child_main()"


#: where ``make setup`` builds pypaimon's environment, under morlog's own (``sys.prefix``)
PAIMON_VENV = "paimon"


def paimon_python() -> str | None:
    """The interpreter of bench scale's pypaimon steps: this one when pypaimon and its Rust
    paths import here, else the environment ``make setup`` builds for them (pypaimon 2.1 pins
    pyarrow<20, so it has one of its own), else None."""
    import importlib.util

    if all(importlib.util.find_spec(m) is not None for m in ("pypaimon", "pypaimon_rust")):
        return sys.executable
    bindir = "Scripts" if sys.platform == "win32" else "bin"
    exe = os.path.join(sys.prefix, PAIMON_VENV, bindir,
                       "python.exe" if sys.platform == "win32" else "python")
    return exe if os.access(exe, os.X_OK) else None


def run_child(step: str, engine: str, args: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One step of one engine in a fresh subprocess (pypaimon's steps under
    :func:`paimon_python`); a timeout or failure is a result too (``status``), never an
    exception."""
    req = json.dumps({"step": step, "engine": engine, "args": args})
    python = (paimon_python() or sys.executable) if engine.startswith("pypaimon") \
        else sys.executable
    t0 = time.perf_counter()
    try:
        r = subprocess.run([python, "-c", CHILD_CODE, req], capture_output=True,
                           text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "timeout_seconds": timeout,
                "wall_seconds": num(time.perf_counter() - t0)}
    lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
    if r.returncode != 0 or not lines:
        tail = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"status": "error", "returncode": r.returncode, "error": tail[:500]}
    res: dict[str, Any] = json.loads(lines[-1])
    res["status"] = "ok"
    return res


# --- the parent -----------------------------------------------------------------------------


def warm(path: str) -> None:
    """Read every file under ``path`` once (the page cache is warm for every engine)."""
    for root, _dirs, files in os.walk(path):
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                while fh.read(1 << 22):
                    pass


def dir_bytes(path: str) -> tuple[int, int]:
    """(files, bytes) under ``path``."""
    n = size = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            n += 1
            size += os.path.getsize(os.path.join(root, f))
    return n, size


def _best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The fastest ok run (peak memory: the largest of the ok runs), or the first failure."""
    ok = [r for r in runs if r["status"] == "ok"]
    if not ok:
        return dict(runs[0])
    best = dict(min(ok, key=lambda r: r["seconds"]))
    best["peak_rss_bytes"] = max(r["peak_rss_bytes"] for r in ok)
    best["runs_seconds"] = [num(r["seconds"]) for r in ok]
    best["seconds"] = num(best["seconds"])
    failed = [r for r in runs if r["status"] != "ok"]
    if failed:  # a repeat that timed out or failed is reported, not dropped silently
        best["failed_runs"] = failed
    return best


def run_size(data: DataSet, work: str, repeats: int, timeout: float) -> dict[str, Any]:
    """Every step of every engine at one size; the tables they leave are read and tagged."""
    n = data.rows
    tables = {"morlog": os.path.join(work, "morlog"),
              "morlog_parquet": os.path.join(work, "morlog_parquet"),
              "delta_rs": os.path.join(work, "delta"),
              "pypaimon": os.path.join(work, "pypaimon"),
              "pypaimon_py": os.path.join(work, "pypaimon_py")}
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {s: {e: [] for e in es}
                                                       for s, es in STEPS.items()}

    def fresh(p: str) -> str:
        if os.path.exists(p):
            shutil.rmtree(p)
        return p

    # create: each repeat into a fresh directory; the last one stays, copied for the upserts
    # (the carrier is a write setting, not a table property: both morlog carriers upsert
    # into copies of the same created table)
    created = {e: tables[e] + ".created" for e in STEPS["create"]}
    created["morlog_parquet"] = created["morlog"]
    buckets = paimon_buckets(data)
    for rep in range(repeats):
        for engine in STEPS["create"]:
            progress(f"scale {n:,}: create, {engine} ({rep + 1}/{repeats})")
            runs["create"][engine].append(run_child(
                "create", engine, {"path": fresh(created[engine]), "input": data.create,
                                   "buckets": buckets}, timeout))
    created_ok = {e: runs["create"][e][-1]["status"] == "ok" for e in STEPS["create"]}
    created_ok["morlog_parquet"] = created_ok["morlog"]

    def on_copies(step: str, what: str, source: dict[str, str], copy: dict[str, str],
                  ready: dict[str, bool], args: dict[str, Any]) -> None:
        """``step`` of each engine, each repeat on a fresh copy of the engine's ``source``
        table (the last copy stays)."""
        for rep in range(repeats):
            for engine in STEPS[step]:
                if not ready[engine]:
                    runs[step][engine].append({"status": "skipped",
                                               "error": f"{what} did not finish"})
                    continue
                fresh(copy[engine])
                shutil.copytree(source[engine], copy[engine])
                progress(f"scale {n:,}: {step}, {engine} ({rep + 1}/{repeats})")
                runs[step][engine].append(run_child(
                    step, engine, {"path": copy[engine], **args}, timeout))

    # upserts on copies of the created tables; compaction on copies of the upserted ones
    # (morlog's Avro-log table), the last copies left for read_compacted
    on_copies("upsert", "create", created, tables, created_ok, {"inputs": data.upserts})
    upserted_ok = {e: runs["upsert"][e][-1]["status"] == "ok" for e in tables}
    compacted = {e: tables[e] + ".compacted" for e in STEPS["compact"]}
    on_copies("compact", "the upserts", tables, compacted, upserted_ok, {})
    reads = {"read_avro": {"morlog": "morlog", "hudi_rs": "morlog", "pypaimon": "pypaimon",
                           "pypaimon_py": "pypaimon_py"},
             "read_parquet": {"morlog": "morlog_parquet", "hudi_rs": "morlog_parquet",
                              "delta_rs": "delta_rs"},
             "read_compacted": {"morlog": "morlog_compacted", "delta_rs": "delta_rs_compacted"},
             "tag": {"morlog": "morlog", "morlog_rli": "morlog_rli",
                     "bloom_index": "morlog", "pypaimon": "pypaimon"}}
    # morlog's record index (spec/rli.md) built, untimed, on a copy of the upserted table
    if upserted_ok["morlog"]:
        progress(f"scale {n:,}: record index build (untimed)")
        fresh(tables["morlog"] + ".rli")
        shutil.copytree(tables["morlog"], tables["morlog"] + ".rli")
        from morlog.writers.client import MorTable
        from morlog.writers.services.record_index import build
        build(MorTable(tables["morlog"] + ".rli"))
    # the tables the reads and tagging take: name -> (path, why it is missing, or None)
    made: dict[str, tuple[str, str | None]] = {
        e: (p, None if upserted_ok[e] else f"the {e} upserts did not finish")
        for e, p in tables.items()}
    made["morlog_rli"] = (tables["morlog"] + ".rli", made["morlog"][1])
    for e, p in compacted.items():
        made[f"{e}_compacted"] = (p, None if runs["compact"][e][-1]["status"] == "ok"
                                  else f"the {e} compaction did not finish")
    for rep in range(repeats):
        for step, engines in reads.items():
            for engine, table in engines.items():
                where, missing = made[table]
                if missing is not None:
                    runs[step][engine].append({"status": "skipped", "error": missing})
                    continue
                warm(where)
                progress(f"scale {n:,}: {step}, {engine} ({rep + 1}/{repeats})")
                args = {"path": where, "input": data.tag}
                runs[step][engine].append(run_child(step, engine, args, timeout))
    out: dict[str, Any] = {step: {e: _best(rs) for e, rs in by.items()}
                           for step, by in runs.items()}
    out["tables"] = {name: dict(zip(("files", "bytes"), dir_bytes(p), strict=True))
                     for name, (p, _) in made.items() if os.path.isdir(p)}
    out["checks"] = checks(out, data)
    out["pypaimon_buckets_per_partition"] = buckets
    return out


def checks(res: dict[str, Any], data: DataSet) -> dict[str, Any]:
    """Each engine's output against what the data says it must be (ok runs only)."""
    want = {"rows": data.distinct_keys, "ts_sum": data.latest_ts_sum}
    out: dict[str, Any] = {}
    for step in ("read_avro", "read_parquet"):
        for engine, r in res[step].items():
            if r["status"] == "ok":
                got = {"rows": r["rows"], "ts_sum": r["ts_sum"]}
                out[f"{step}.{engine}"] = {"ok": got == want, **got}
    # the compacted tables read as the tables before compaction did, each engine's its own
    # (morlog: the Avro-log table; delta-rs: its table) and both the same
    before = {"morlog": "read_avro", "delta_rs": "read_parquet"}
    compacted: dict[str, dict[str, int]] = {}
    for engine, r in res["read_compacted"].items():
        if r["status"] == "ok":
            got = compacted[engine] = {"rows": r["rows"], "ts_sum": r["ts_sum"]}
            b = res[before[engine]][engine]
            was = {"rows": b["rows"], "ts_sum": b["ts_sum"]} if b["status"] == "ok" else None
            out[f"read_compacted.{engine}"] = {"ok": got == want and was in (None, got),
                                               **got, "before_compaction": was}
    if len(compacted) == len(STEPS["read_compacted"]):
        out["read_compacted"] = {"ok": len({tuple(c.values()) for c in compacted.values()})
                                 == 1}
    # morlog compact's promise: afterwards no latest slice has log files (delta-rs's compact
    # may rightly find nothing to do: its metrics are in its result)
    m = res["compact"]["morlog"]
    if m["status"] == "ok":
        out["compact.morlog"] = {"ok": m["slices_with_logs_after"] == 0 and m["file_groups"] > 0,
                                 "slices_with_logs_after": m["slices_with_logs_after"],
                                 "file_groups": m["file_groups"]}
    for engine, r in res["upsert"].items():
        if r["status"] == "ok" and "inserts" in r:
            ok = (r["inserts"], r["updates"]) == (data.upsert_inserts, data.upsert_updates)
            out[f"upsert.{engine}"] = {"ok": ok, "inserts": r["inserts"],
                                       "updates": r["updates"]}
    tag = res["tag"]
    if all(r["status"] == "ok" for r in tag.values()):
        # the same file locations from every engine that gives them; the same keys found
        # (in input order) from every engine
        digests = {r["digest"] for r in tag.values() if "digest" in r}
        found_digests = {r["found_digest"] for r in tag.values()}
        found = {e: r["found"] for e, r in tag.items()}
        ok = (len(digests) == 1 and len(found_digests) == 1
              and set(found.values()) == {data.tag_present})
        out["tag"] = {"ok": ok, "found": found, "expected_found": data.tag_present}
    out["expected"] = want
    return out


# --- goals ----------------------------------------------------------------------------------


def _seconds(r: dict[str, Any]) -> float | None:
    return float(r["seconds"]) if r.get("status") == "ok" else None


def ratio_goal(res: dict[str, Any], step: str, engine: str, baseline: str, target: float,
               *, key: str = "seconds", bad: Sequence[str] = ()) -> dict[str, Any]:
    """morlog's ``key`` over the baseline's, as a ``<=`` goal; a morlog timeout counts at the
    timeout (a lower bound) and misses; anything not measured misses with value 0."""
    m, b = res[step][engine], res[step][baseline]
    if m["status"] == "ok" and b["status"] == "ok":
        g = goal(ratio(float(m[key]), float(b[key])), target, "<=")
        if any(c in bad for c in (f"{step}.{engine}", f"{step}.{baseline}", step)):
            g.update(met=False, status="wrong_result")
        return g
    if m["status"] == "timeout" and b["status"] == "ok" and key == "seconds":
        g = goal(ratio(float(m["timeout_seconds"]), float(b["seconds"])), target, "<=")
        g.update(met=False, status="timeout")
        return g
    g = goal(0.0, target, "<=")
    failed = engine if m["status"] != "ok" else baseline
    g.update(met=False, status=f"{failed}: {res[step][failed]['status']}")
    return g


def make_goals(res: dict[str, Any], data: DataSet, per_row: dict[str, float] | None
               ) -> dict[str, dict[str, Any]]:
    bad = [k for k, c in res["checks"].items() if isinstance(c, dict) and c.get("ok") is False]
    goals = {
        "create_vs_delta_rs": ratio_goal(res, "create", "morlog", "delta_rs", 1.5, bad=bad),
        "upsert_vs_delta_rs_merge": ratio_goal(res, "upsert", "morlog", "delta_rs", 1.0,
                                               bad=bad),
    }
    up = res["upsert"]["morlog"]
    s = _seconds(up)
    g = goal(rate(_upsert_rows(data), s) if s else 0.0, 250_000, ">=")
    if s is None:
        g.update(met=False, status=up["status"])
    goals["upsert_rows_per_s"] = g
    # flat as the table grows: morlog's last upsert batch over its first (issue 28: <= 1.2)
    bs = up.get("batch_seconds") or []
    g = goal(ratio(bs[-1], bs[0]) if len(bs) > 1 and bs[0] > 0 else 0.0, 1.2, "<=")
    if len(bs) < 2:
        g.update(met=False, status=up["status"] if s is None else "not measured")
    goals["upsert_last_over_first_batch"] = g
    # pypaimon (its Rust paths on: the faster of its two set-ups) on its own table; morlog's
    # time and peak memory at most pypaimon's on create, upserts and read
    for step in ("create", "upsert", "read_avro"):
        goals[f"{step}_vs_pypaimon"] = ratio_goal(res, step, "morlog", "pypaimon", 1.0,
                                                  bad=bad)
        goals[f"{step}_peak_rss_vs_pypaimon"] = ratio_goal(
            res, step, "morlog", "pypaimon", 1.0, key="peak_rss_bytes", bad=bad)
    goals["read_avro_vs_hudi_rs"] = ratio_goal(res, "read_avro", "morlog", "hudi_rs", 1.0,
                                               bad=bad)
    goals["read_avro_peak_rss_vs_hudi_rs"] = ratio_goal(
        res, "read_avro", "morlog", "hudi_rs", 1.0, key="peak_rss_bytes", bad=bad)
    goals["read_parquet_vs_hudi_rs"] = ratio_goal(res, "read_parquet", "morlog", "hudi_rs", 0.5,
                                                  bad=bad)
    goals["read_parquet_vs_delta_rs"] = ratio_goal(res, "read_parquet", "morlog", "delta_rs",
                                                   2.0, bad=bad)
    # compaction of the upserted tables, then a snapshot read of the compacted ones
    goals["compact_vs_delta_rs"] = ratio_goal(res, "compact", "morlog", "delta_rs", 1.0, bad=bad)
    goals["read_compacted_vs_delta_rs"] = ratio_goal(res, "read_compacted", "morlog",
                                                     "delta_rs", 1.2, bad=bad)
    # file probes (base files through their base-key indexes), then morlog's record index
    # (built on a copy of the table, untimed)
    for engine, name in (("morlog", "tag_100k"), ("morlog_rli", "tag_100k_record_index")):
        sp, kps = _tag_goals(res, engine, "tag" in bad)
        goals[f"{name}_vs_bloom_index_speedup"] = sp
        goals[f"{name}_keys_per_s"] = kps
    if per_row is not None:
        for step, growth in per_row.items():
            g = goal(growth, 1.3, "<=")
            if growth <= 0:
                g.update(met=False, status="not measured at both sizes")
            goals[f"time_per_row_growth_{step}"] = g
    return goals


def _tag_goals(res: dict[str, Any], engine: str, wrong: bool
               ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Speedup over the bloom-index baseline and keys/s of one tagging engine."""
    tm = res["tag"].get(engine, {"status": "missing"})
    tb = res["tag"]["bloom_index"]
    if tm["status"] == "ok" and tb["status"] == "ok":
        sp = goal(ratio(tb["seconds"], tm["seconds"]), 5, ">=")
        kps = goal(rate(tm["keys"], tm["seconds"]), 500_000, ">=")
        if wrong:
            sp.update(met=False, status="wrong_result")
            kps.update(met=False, status="wrong_result")
    else:
        sp, kps = goal(0.0, 5, ">="), goal(0.0, 500_000, ">=")
        sp.update(met=False, status=f"{engine} {tm['status']}, baseline {tb['status']}")
        kps.update(met=False, status=f"{engine} {tm['status']}")
    return sp, kps


def paimon_ratios(res: dict[str, Any]) -> dict[str, float]:
    """Ratios without a goal: morlog's time over pure-Python pypaimon's (its defaults), and
    pypaimon's key lookup (a filtered read) over morlog's tagging (0: not measured)."""
    out: dict[str, float] = {}
    for step in ("create", "upsert", "read_avro"):
        m, b = res[step]["morlog"], res[step]["pypaimon_py"]
        out[f"{step}_vs_pypaimon_py"] = (ratio(m["seconds"], b["seconds"])
                                         if m["status"] == b["status"] == "ok" else 0.0)
    m, b = res["tag"]["morlog"], res["tag"]["pypaimon"]
    out["tag_100k_speedup_vs_pypaimon_lookup"] = (
        ratio(b["seconds"], m["seconds"]) if m["status"] == b["status"] == "ok" else 0.0)
    return out


def compact_ratios(res: dict[str, Any]) -> dict[str, float]:
    """Ratios without a goal (0: not measured): morlog's peak memory over delta-rs's when
    compacting and reading the compacted tables; and morlog's upserts and compaction over
    delta-rs's MERGEs and compaction: the whole way from the created table to a compacted one
    (delta-rs's MERGE rewrites the files it touches, so its compact may find little to do)."""
    out: dict[str, float] = {}
    for step in ("compact", "read_compacted"):
        m, b = res[step]["morlog"], res[step]["delta_rs"]
        out[f"{step}_peak_rss_vs_delta_rs"] = (
            ratio(m["peak_rss_bytes"], b["peak_rss_bytes"])
            if m["status"] == b["status"] == "ok" else 0.0)
    steps = [res[s][e] for s in ("upsert", "compact") for e in ("morlog", "delta_rs")]
    out["upsert_and_compact_vs_delta_rs"] = (
        ratio(steps[0]["seconds"] + steps[2]["seconds"],
              steps[1]["seconds"] + steps[3]["seconds"])
        if all(r["status"] == "ok" for r in steps) else 0.0)
    return out


def _upsert_rows(data: DataSet) -> int:
    return data.upsert_inserts + data.upsert_updates


def per_row_growth(by_size: dict[int, dict[str, Any]]) -> dict[str, float] | None:
    """morlog's time per row at the largest size over that at the smallest, per step
    (tag: 100,000 keys at both sizes, so per tagged key against a table 10x larger)."""
    if len(by_size) < 2:
        return None
    lo, hi = min(by_size), max(by_size)
    out: dict[str, float] = {}
    for step in ("create", "upsert", "read_avro", "read_parquet", "tag"):
        a, b = by_size[lo][step]["morlog"], by_size[hi][step]["morlog"]
        work = {"tag": (a.get("keys", 0), b.get("keys", 0))}.get(step, (lo, hi))
        if a["status"] == "ok" and b["status"] == "ok" and all(work):
            out[step] = num((b["seconds"] / work[1]) / (a["seconds"] / work[0]))
        else:
            out[step] = 0.0
    return out


# --- the run --------------------------------------------------------------------------------


def _dist_version(dist: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def parse_rows(text: str) -> tuple[int, ...]:
    """``--rows 100000,1000000`` (underscores allowed) -> sizes, ascending."""
    from morlog.logformat.errors import UsageError

    try:
        sizes = tuple(sorted({int(x.replace("_", "")) for x in text.split(",") if x.strip()}))
    except ValueError:
        raise UsageError("--rows takes row counts separated by commas",
                         actual=text) from None
    if not sizes or sizes[0] < 100:
        raise UsageError("--rows: every size must be at least 100", actual=text)
    return sizes


def run(*, quick: bool = False, repeats: int = 1, rows: Sequence[int] | None = None,
        timeout: float | None = None) -> dict[str, Any]:
    require("deltalake", "scale")
    require("hudi", "scale")
    if paimon_python() is None:
        from morlog.logformat.errors import UsageError

        raise UsageError("bench scale needs pypaimon and pypaimon-rust (the paimon extra; "
                         "`make setup` builds them an environment of their own, "
                         f"<sys.prefix>/{PAIMON_VENV}, as pypaimon pins pyarrow<20)")
    sizes = tuple(sorted(set(rows))) if rows else (QUICK_ROWS if quick else DEFAULT_ROWS)
    timeout = float(timeout or DEFAULT_TIMEOUT)
    by_size: dict[int, dict[str, Any]] = {}
    datasets: dict[int, DataSet] = {}
    gen_seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="morlog-bench-scale-") as tmp:
        for n in sizes:
            progress(f"scale: generating {n:,} rows and {UPSERT_BATCHES} upsert batches")
            t0 = time.perf_counter()
            datasets[n] = make_data(os.path.join(tmp, f"data-{n}"), n)
            gen_seconds[str(n)] = num(time.perf_counter() - t0)
            by_size[n] = run_size(datasets[n], os.path.join(tmp, f"work-{n}"), repeats,
                                  timeout)
            shutil.rmtree(os.path.join(tmp, f"work-{n}"), ignore_errors=True)
    top = max(sizes)
    growth = per_row_growth(by_size)
    goals = make_goals(by_size[top], datasets[top], growth)
    results: dict[str, Any] = {str(n): by_size[n] for n in sizes}
    results["data"] = {str(n): {"rows": d.rows, "distinct_keys_after_upserts": d.distinct_keys,
                                "upsert_updates": d.upsert_updates,
                                "upsert_inserts": d.upsert_inserts,
                                "tag_keys_present": d.tag_present,
                                "generate_seconds": gen_seconds[str(n)]}
                       for n, d in datasets.items()}
    ratios: dict[str, Any] = {}
    for n in sizes:
        r = by_size[n]
        ratios[str(n)] = {name: g["value"] for name, g in make_goals(
            r, datasets[n], None).items()}
        ratios[str(n)].update(paimon_ratios(r))
        ratios[str(n)].update(compact_ratios(r))
    if growth is not None:
        ratios["time_per_row_growth"] = growth
    params: dict[str, Any] = {
        "rows": list(sizes),
        "goals_at_rows": top,
        "partitions": len(CITIES),
        "columns": len(ARROW_SCHEMA),
        "upsert_batches": UPSERT_BATCHES,
        "update_share": UPDATE_SHARE,
        "tag_keys": TAG_KEYS,
        "repeats": repeats,
        "timeout_seconds": timeout,
        "quick": quick,
        "morlog": "MorTable.create + insert, MorTable.upsert x10 (WriteConfig(carrier=avro|"
                  "parquet, fsync=False)), Table(path).read(), KeyTagger(Table(path)).tag; "
                  "compact: writers.services.compaction.compact(MorTable(path, WriteConfig("
                  "carrier=avro, fsync=False))) of a copy of the Avro-log table after the "
                  "upserts (morlog compact's service: pending compactions, then one planned "
                  "over every latest slice with logs), then Table(path).read()",
        "delta_rs": "write_deltalake(partition_by=city); DeltaTable.merge(predicate on city "
                    "and uuid).when_matched_update_all().when_not_matched_insert_all() x10; "
                    "DeltaTable.to_pyarrow_table(); compact: DeltaTable(path).optimize"
                    ".compact() (defaults) of a copy of the table after the MERGEs, then "
                    "DeltaTable(path).to_pyarrow_table()",
        "hudi_rs": "HudiTableBuilder.from_base_uri(path).build().read() of the morlog table",
        "bloom_index": "bench tag's bloom_index_baseline on the morlog (Avro) table",
        "pypaimon": "pypaimon primary-key table (key city+uuid, partitioned by city, "
                    "sequence.field=ts, fixed buckets per partition by its documentation's "
                    "200MB-1GB-per-bucket rule: results.<rows>.pypaimon_buckets_per_partition) "
                    "with pypaimon-rust's write/commit/read paths on "
                    f"({', '.join(f'{k}={v}' for k, v in PAIMON_NATIVE_OPTIONS.items())}); "
                    "batch write + commit per call (create, each upsert); read: "
                    "new_read_builder().new_read().to_arrow(splits); tag: the same read "
                    "filtered by is_in(uuid, keys), projected to city, uuid",
        "pypaimon_py": "the same table with pypaimon's defaults (pure Python; its native "
                       "paths off); ratios only",
        "versions": {d: _dist_version(d) for d in ("deltalake", "hudi")},
        "pypaimon_python": "this interpreter" if paimon_python() == sys.executable
                           else f"<sys.prefix>/{PAIMON_VENV}",
        "timing": "each step of each engine in its own fresh subprocess per repeat, inputs "
                  "loaded untimed; best of repeats; peak RSS = VmHWM of that subprocess "
                  "(imports and inputs included; the largest of the repeats); writes to fresh "
                  "directories on local disk; reads after every file of the table was read "
                  "once (warm page cache)",
    }
    return make_report("scale", params, results, ratios, goals)


# --- the plot -------------------------------------------------------------------------------

PLOT_STEPS = ("create", "upsert", "compact", "read_avro", "read_parquet", "read_compacted",
              "tag")
#: the plot's panels: one per step and the reads' peak memory, in two rows
PLOT_COLUMNS = -(-(len(PLOT_STEPS) + 1) // 2)
COLORS = {"morlog": "#4878a8", "morlog_parquet": "#80a8d0", "delta_rs": "#e0a040",
          "hudi_rs": "#6aa86a", "bloom_index": "#b05050", "morlog_rli": "#304870",
          "pypaimon": "#8a60b0", "pypaimon_py": "#c0a8d8"}


def plot(plt: Any, report: dict[str, Any]) -> Any:
    sizes = [int(n) for n in report["params"]["rows"]]
    res = report["results"]
    fig, grid = plt.subplots(2, PLOT_COLUMNS, figsize=(4 * PLOT_COLUMNS, 8))
    axes = list(grid.ravel())
    for ax in axes[len(PLOT_STEPS) + 1:]:
        ax.set_visible(False)
    for ax, step in zip(axes, PLOT_STEPS, strict=False):
        engines = list(STEPS[step])
        if len(sizes) > 1:
            for e in engines:
                pts = [(n, res[str(n)][step][e]["seconds"]) for n in sizes
                       if res[str(n)][step][e]["status"] == "ok"]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=e,
                            color=COLORS[e])
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("rows")
            ax.legend(fontsize=7)
        else:
            r = res[str(sizes[0])][step]
            vals = [float(r[e]["seconds"]) if r[e]["status"] == "ok" else 0.0 for e in engines]
            bars = ax.bar(engines, vals, color=[COLORS[e] for e in engines])
            for b, e, v in zip(bars, engines, vals, strict=True):
                label = f"{v:.3g}" if r[e]["status"] == "ok" else r[e]["status"]
                ax.annotate(label, (b.get_x() + b.get_width() / 2, b.get_height()),
                            ha="center", va="bottom", fontsize=8)
            ax.tick_params(axis="x", labelsize=7)
        ax.set_title(step, fontsize=10)
        ax.set_ylabel("seconds")
    ax = axes[len(PLOT_STEPS)]
    top = str(max(sizes))
    labels, vals, colors = [], [], []
    for step in ("read_avro", "read_parquet", "read_compacted"):
        for e in STEPS[step]:
            r = res[top][step][e]
            labels.append(f"{step[5:]} {e}")
            vals.append(r["peak_rss_bytes"] / 2**20 if r["status"] == "ok" else 0.0)
            colors.append(COLORS[e])
    ax.bar(labels, vals, color=colors)
    ax.set_title(f"read peak RSS at {int(top):,} rows", fontsize=10)
    ax.set_ylabel("MiB")
    ax.tick_params(axis="x", labelsize=6, labelrotation=90)
    fig.suptitle(f"morlog bench scale: {', '.join(f'{n:,}' for n in sizes)} rows "
                 f"({len(CITIES)} partitions, {len(ARROW_SCHEMA)} columns)", fontsize=11)
    return fig


__all__ = ["ARROW_SCHEMA", "child_main", "make_data", "parse_rows", "plot", "run",
           "run_step"]
