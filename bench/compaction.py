"""``morlog bench compaction``: what log compaction (RFC-48) and compaction buy, and cost.

Tables are written with morlog's write client (``MorTable``, table version 9, Avro carrier,
``WriteConfig(fsync=False)``, automatic cleaning off, seeded data of ``bench scale``'s
trips-like schema: 12 columns, ``uuid`` key, ``city`` partition, ``ts`` ordering field), then
measured on copies of the same table:

**Slice**: one file group (one partition; ``new_groups="log"``, so every commit is a log
block of that group and the slice has no base file) receiving 50 rounds of 2,000 records:
round 0 inserts 2,000 keys; every later round upserts 400 updates of live keys and 1,500
inserts (one commit, routed into the same group: small-file limit and maximum file size set
high) and deletes 100 other live keys (a delete commit: the client has no mixed batch). That
makes 50 data blocks and 49 delete blocks, one log file each (table version 9).

**Table**: ``bench scale``'s data (default 1,000,000 rows in 4 partitions, ``MorTable.create``
+ ``insert``: base files), then 10 upserts of 100,000 rows, 30 % updates (inserts routed into
the existing file groups as log blocks).

Measured on each (``table_`` prefixed goals for the table; (d) for the slice only):

(a) merged read (``Table(path).read()``, best of repeats, warm cache) before and after
    ``log_compact``: ``read_speedup_after_log_compaction`` = before / after, goal >= 5;
(b) bytes of the data files the service wrote (``bytes_written``: new log files vs new base
    files), ``log_compact`` on one copy vs ``compact`` on another:
    ``log_compaction_bytes_vs_compaction`` goal <= 0.5;
(c) ``compact`` seconds vs writing the same merged rows as new base files
    (``MorTable.create`` + ``insert`` of the table's merged rows, meta fields dropped, into
    a fresh table of the same settings): ``compaction_time_vs_base_file_write`` goal <= 1.5;
(d) the slice's cumulative index (the newest data block's: its range and bloom filter, plus
    the checkpoint's filter when it is a delta, as ``SliceProbe.probe`` tests it) asked about
    keys that are not live in the slice (every deleted key, and never-written keys): the
    share it still lets through, before and after log compaction, against the false-positive
    rate morlog's indexed blocks are built for (``morlog.logformat.sbbf.DEFAULT_FPP``):
    ``cumulative_fpp_after_vs_configured`` = after / configured, goal <= 1.5.

Every service and baseline runs on a fresh copy of the built table for each repeat (copy
untimed), best time kept. Each table is read before and after each service and must read the
same (row count, sum of ``ts``, digest of the sorted keys and ``ts``), which is also what the
generator says it must hold; a mismatch is reported in ``checks`` and fails the goals.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import morlog.config as conf
from morlog.logformat.keybatch import KeyBatch
from morlog.logformat.sbbf import DEFAULT_FPP
from morlog.logformat.xxh64 import xxh64_batch
from morlog.readers.lookup import KeyTagger
from morlog.readers.probe import RangeTester, SliceProbe
from morlog.readers.slice_index import read_slice_index
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig
from morlog.writers.services.compaction import compact
from morlog.writers.services.logcompaction import log_compact

from .common import (
    BenchError,
    bar,
    best_of,
    goal,
    make_keys,
    make_report,
    make_rng,
    num,
    progress,
    rate,
)
from .common import ratio as div
from .scale import (
    ARROW_SCHEMA,
    CITIES,
    KEY_FIELD,
    ORDERING_FIELD,
    PARTITION_FIELD,
    UPDATE_SHARE,
    UPSERT_BATCHES,
    make_data,
    trip_rows,
)

TABLE_VERSION = 9
#: the slice's partition
SLICE_CITY = 0
TS0 = 1_700_000_000_000
ROUND_TS = 10**9
GOAL_READ = 5.0
GOAL_BYTES = 0.5
GOAL_TIME = 1.5
GOAL_FPP = 1.5
NO_CLEAN = {conf.CLEAN_AUTOMATIC: "false"}
BIG = 1 << 40


@dataclass(frozen=True)
class Sizes:
    rounds: int = 50
    records_per_round: int = 2_000
    update_share: float = 0.20
    delete_share: float = 0.05
    #: never-written keys asked of the cumulative index
    absent_keys: int = 20_000
    table_rows: int = 1_000_000


FULL = Sizes()
QUICK = Sizes(rounds=25, records_per_round=200, absent_keys=2_000, table_rows=20_000)


def _config(new_groups: str = "base", metadata: bool | None = None) -> WriteConfig:
    opts = dict(NO_CLEAN)
    if metadata is not None:
        opts[conf.METADATA_ENABLE] = "true" if metadata else "false"
    return WriteConfig(fsync=False, new_groups=new_groups,  # type: ignore[arg-type]
                       small_file_limit=BIG, max_file_size=2 * BIG, hoodie_options=opts)


def _create(path: str, config: WriteConfig) -> MorTable:
    return MorTable.create(path, ARROW_SCHEMA, key_field=KEY_FIELD,
                           partition_field=PARTITION_FIELD, ordering_field=ORDERING_FIELD,
                           config=config, table_version=TABLE_VERSION)


# --- what a table holds ---------------------------------------------------------------------


def digest(t: pa.Table) -> dict[str, Any]:
    """Row count, sum of ``ts`` and a digest of the (key, ts) pairs in key order."""
    if t.num_rows == 0:
        return {"rows": 0, "ts_sum": 0, "digest": ""}
    keys = t.column(KEY_FIELD).combine_chunks()
    ts = t.column(ORDERING_FIELD).combine_chunks()
    order = pc.sort_indices(keys)
    h = hashlib.sha256()
    for chunk in (keys.take(order), ts.take(order)):
        for buf in chunk.buffers():
            if buf is not None:
                h.update(memoryview(buf))
    return {"rows": int(t.num_rows), "ts_sum": int(pc.sum(ts).as_py()),
            "digest": h.hexdigest()[:16]}


def expected_digest(keys: list[str], ts: np.ndarray, live: np.ndarray) -> dict[str, Any]:
    idx = np.flatnonzero(live)
    return digest(pa.table({KEY_FIELD: pa.array([keys[i] for i in idx], pa.string()),
                            ORDERING_FIELD: pa.array(ts[idx], pa.int64())}))


def dir_bytes(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total


def data_files(path: str) -> dict[str, int]:
    """Log files and base files of the table and their bytes (metadata table not counted)."""
    out = {"log_files": 0, "log_bytes": 0, "base_files": 0, "base_bytes": 0}
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != ".hoodie"]
        for f in files:
            kind = "log" if f.startswith(".") and ".log." in f else (
                "base" if f.endswith(".parquet") else None)
            if kind is not None:
                out[f"{kind}_files"] += 1
                out[f"{kind}_bytes"] += os.path.getsize(os.path.join(root, f))
    return out


# --- building the tables --------------------------------------------------------------------


@dataclass
class Built:
    path: str
    expected: dict[str, Any]
    seconds: float
    info: dict[str, Any]
    deleted: list[str]


def build_slice(path: str, s: Sizes) -> Built:
    """The one-slice table of the module docstring; the deleted keys."""
    rng = make_rng(1300)
    nprng = np.random.default_rng(rng.getrandbits(64))
    n = s.records_per_round
    n_upd, n_del = round(n * s.update_share), round(n * s.delete_share)
    n_ins = n - n_upd - n_del
    keys: list[str] = []
    ts = np.zeros(0, np.int64)
    live = np.zeros(0, bool)
    t0 = time.perf_counter()
    mt = _create(path, _config("log"))
    commits = updates = deletes = inserts = 0
    for r in range(s.rounds):
        lo = TS0 + r * ROUND_TS
        if r == 0:
            upd = np.zeros(0, np.int64)
            dels = np.zeros(0, np.int64)
            new = make_keys(n, rng)
        else:
            pick = nprng.choice(np.flatnonzero(live), n_upd + n_del, replace=False)
            upd, dels = pick[:n_upd], pick[n_upd:]
            new = make_keys(n_ins, rng)
        first_new = len(keys)
        keys.extend(new)
        ts = np.concatenate([ts, np.zeros(len(new), np.int64)])
        live = np.concatenate([live, np.ones(len(new), bool)])
        idx = np.concatenate([upd, np.arange(first_new, len(keys))])
        nprng.shuffle(idx)
        bts = lo + nprng.integers(0, ROUND_TS - 1, idx.size)
        ts[idx] = bts
        batch = trip_rows([keys[i] for i in idx], np.full(len(idx), SLICE_CITY), bts, nprng)
        c = mt.upsert(batch)
        commits += 1
        updates += c.updates
        inserts += c.inserts
        if c.updates != upd.size or c.inserts != idx.size - upd.size:
            raise BenchError(f"slice round {r}: the upsert tagged {c.updates} updates, "
                               f"expected {upd.size}")
        if dels.size:
            # the delete's ordering value is the round's greatest: it wins over every copy
            d = pa.table({KEY_FIELD: pa.array([keys[i] for i in dels], pa.string()),
                          PARTITION_FIELD: pa.array([CITIES[SLICE_CITY]] * dels.size),
                          ORDERING_FIELD: pa.array(np.full(dels.size, lo + ROUND_TS - 1),
                                                   pa.int64())})
            c = mt.delete(d)
            commits += 1
            deletes += c.deletes
            live[dels] = False
    seconds = time.perf_counter() - t0
    slices = mt.table().file_slices()
    info = {"commits": commits, "updates": updates, "inserts": inserts, "deletes": deletes,
            "file_groups": len(slices), "log_files": sum(len(x.log_files) for x in slices),
            "base_files": sum(x.base_file is not None for x in slices),
            "bytes": dir_bytes(path)}
    if info["file_groups"] != 1 or info["base_files"]:
        raise BenchError(f"the slice table has {info['file_groups']} file groups and "
                         f"{info['base_files']} base files, not one log-only group")
    deleted = [keys[i] for i in np.flatnonzero(~live)]
    return Built(path, expected_digest(keys, ts, live), seconds, info, deleted)


def build_table(path: str, data_dir: str, rows: int) -> Built:
    """``bench scale``'s table: create + insert, then 10 upserts (Avro carrier)."""
    data = make_data(data_dir, rows)
    t0 = time.perf_counter()
    mt = _create(path, _config("base"))
    mt.insert(pq.read_table(data.create))
    ups = [mt.upsert(pq.read_table(p)) for p in data.upserts]
    seconds = time.perf_counter() - t0
    slices = mt.table().file_slices()
    info = {"commits": 1 + len(ups), "rows": rows,
            "upsert_updates": sum(c.updates for c in ups),
            "upsert_inserts": sum(c.inserts for c in ups),
            "distinct_keys": data.distinct_keys,
            "file_groups": len(slices), "log_files": sum(len(x.log_files) for x in slices),
            "base_files": sum(x.base_file is not None for x in slices),
            "bytes": dir_bytes(path)}
    if (info["upsert_updates"], info["upsert_inserts"]) != (data.upsert_updates,
                                                            data.upsert_inserts):
        raise BenchError("the table's upserts tagged other updates than generated")
    expected = {"rows": data.distinct_keys, "ts_sum": data.latest_ts_sum}
    return Built(path, expected, seconds, info, [])


# --- the cumulative index -------------------------------------------------------------------


def cumulative_maybe(table_path: str, keys: pa.Array) -> dict[str, Any]:
    """What the one slice's stored cumulative index answers for ``keys`` (the test
    ``SliceProbe.probe`` makes before it looks at any block), and what the probe reads."""
    table = Table(table_path)
    (s,) = table.file_slices()
    directory = table.slice_dir(s.partition)
    hashes = xxh64_batch(KeyBatch.of(keys))
    with SliceProbe(directory, s.log_files) as p:
        index = read_slice_index(p.log_files, p.source)
        if index is None:
            raise BenchError("the slice's newest data block carries no cumulative index")
        cum = index.cumulative
        in_range = RangeTester(keys).test(cum.min_key, cum.max_key)
        maybe = in_range & cum.bloom.check_hashes(hashes)
        if index.checkpoint is not None:
            maybe |= in_range & index.checkpoint.bloom.check_hashes(hashes)
        kind = cum.kind.name
        covered = len(index.block_refs())
        files = index.files
    uncovered = [n for n in s.log_files if n not in files]
    return {"maybe": maybe, "kind": kind, "blocks_covered": covered,
            # key entries of every covered block (a key updated twice counts twice)
            "cumulative_key_entries": int(cum.keys),
            "log_files": len(s.log_files), "log_files_not_in_index": len(uncovered)}


def fpp_part(table_path: str, deleted: pa.Array, absent: pa.Array) -> dict[str, Any]:
    keys = pa.concat_arrays([deleted, absent])
    m = cumulative_maybe(table_path, keys)
    maybe = m.pop("maybe")
    nd = len(deleted)
    m.update({
        "deleted_keys_maybe": int(maybe[:nd].sum()),
        "never_written_keys_maybe": int(maybe[nd:].sum()),
        "deleted_rate": num(float(maybe[:nd].mean())) if nd else 0.0,
        "never_written_rate": num(float(maybe[nd:].mean())) if len(absent) else 0.0,
        "non_live_rate": num(float(maybe.mean())),
    })
    return m


def tag_cost(table_path: str, keys: pa.Array) -> dict[str, Any]:
    """Tagging ``keys`` (none of them live) against the table: time, reads, bytes."""
    t0 = time.perf_counter()
    r = KeyTagger(Table(table_path)).tag(keys)
    dt = time.perf_counter() - t0
    return {"seconds": num(dt), "reads": r.stats.reads, "bytes_read": r.stats.bytes_read,
            "found": int((r.codes >= 0).sum())}


# --- the measurements -----------------------------------------------------------------------


class Copies:
    """Fresh copies of a built table, one per timed run (only the latest kept)."""

    def __init__(self, src: str, root: str, label: str) -> None:
        self.src, self.root, self.label = src, root, label
        self.n = 0
        self.path = ""

    def next(self) -> None:
        if self.path:
            shutil.rmtree(self.path, ignore_errors=True)
        self.n += 1
        self.path = os.path.join(self.root, f"{self.label}-{self.n}")
        shutil.copytree(self.src, self.path)


def _read(path: str) -> pa.Table:
    return Table(path).read()


def measure(built: Built, work: str, repeats: int, label: str, *, metadata: bool | None
            ) -> tuple[dict[str, Any], str]:
    """(a), (b), (c) on copies of ``built``; the results and the log-compacted copy."""
    src = built.path
    out: dict[str, Any] = {}
    checks: dict[str, Any] = {}
    progress(f"compaction {label}: merged read before ({repeats}x)")
    _read(src)  # warm the page cache
    read_before, before = best_of(repeats, lambda: _read(src))
    d_before = digest(before)
    merged = before
    del before

    progress(f"compaction {label}: log compaction ({repeats}x, fresh copies)")
    lc = Copies(src, work, f"{label}-logcompacted")
    lc_s, lc_report = best_of(repeats, lambda: log_compact(MorTable(lc.path, _config())),
                              lc.next)
    lc_res = lc_report.results
    lc_bytes = sum(r.bytes_written for r in lc_res)
    lc_growth = dir_bytes(lc.path) - dir_bytes(src)
    progress(f"compaction {label}: merged read after log compaction ({repeats}x)")
    _read(lc.path)
    read_after, after = best_of(repeats, lambda: _read(lc.path))
    checks["read_after_log_compaction"] = d_after = digest(after)
    del after

    progress(f"compaction {label}: compaction ({repeats}x, fresh copies)")
    cc = Copies(src, work, f"{label}-compacted")
    c_s, c_report = best_of(repeats, lambda: compact(MorTable(cc.path, _config())), cc.next)
    c_bytes = sum(r.bytes_written for r in c_report.results)
    c_rows = sum(r.records_written for r in c_report.results)
    c_growth = dir_bytes(cc.path) - dir_bytes(src)
    checks["read_after_compaction"] = digest(_read(cc.path))
    after_files = data_files(cc.path)
    slices_after = Table(cc.path).file_slices()
    shutil.rmtree(cc.path, ignore_errors=True)

    progress(f"compaction {label}: the merged rows written as new base files ({repeats}x)")
    rows = merged.select(ARROW_SCHEMA.names).cast(ARROW_SCHEMA)
    del merged
    fresh = os.path.join(work, f"{label}-base-write")

    def clear() -> None:
        shutil.rmtree(fresh, ignore_errors=True)

    def write_base() -> int:
        t = _create(fresh, _config("base", metadata))
        t.insert(rows)
        return dir_bytes(fresh)

    bw_s, bw_bytes_dir = best_of(repeats, write_base, clear)
    bw_files = data_files(fresh)
    clear()
    n_rows = rows.num_rows

    checks["read_before"] = d_before
    want = built.expected
    ok_before = all(d_before[k] == v for k, v in want.items())
    checks["expected"] = want
    checks["ok"] = bool(ok_before and d_after == d_before
                        and checks["read_after_compaction"] == d_before)
    out["read"] = {"before_seconds": num(read_before), "after_seconds": num(read_after),
                   "rows": d_before["rows"],
                   "before_rows_per_s": rate(d_before["rows"], read_before),
                   "after_rows_per_s": rate(d_before["rows"], read_after)}
    out["log_compaction"] = {
        "seconds": num(lc_s), "instants": len(lc_res),
        "file_groups": sum(len(r.compacted) for r in lc_res),
        "records_written": sum(r.records_written for r in lc_res),
        "deletes_written": sum(r.deletes_written for r in lc_res),
        "blocks_written": sum(r.blocks_written for r in lc_res),
        "bytes_written": lc_bytes, "table_bytes_growth": lc_growth,
        "replaced_instants": sum(len(x[3]) for r in lc_res for x in r.compacted)}
    out["compaction"] = {
        "seconds": num(c_s), "rows_per_s": rate(c_rows, c_s), "records_written": c_rows,
        "file_groups": sum(len(r.compacted) for r in c_report.results),
        "bytes_written": c_bytes, "table_bytes_growth": c_growth,
        "latest_slices_with_logs": sum(bool(s.log_files) for s in slices_after),
        "base_files_after": after_files["base_files"]}
    out["base_file_write"] = {
        "seconds": num(bw_s), "rows_per_s": rate(n_rows, bw_s), "rows": n_rows,
        "base_files": bw_files["base_files"], "base_file_bytes": bw_files["base_bytes"],
        "table_bytes": bw_bytes_dir,
        "how": "MorTable.create + insert of the merged rows (meta fields dropped) into a "
               "fresh table of the same settings"}
    out["checks"] = checks
    return out, lc.path


def ratios_of(m: dict[str, Any]) -> dict[str, float]:
    return {
        "read_speedup_after_log_compaction": div(m["read"]["before_seconds"],
                                                 m["read"]["after_seconds"]),
        "log_compaction_bytes_vs_compaction": div(m["log_compaction"]["bytes_written"],
                                                  m["compaction"]["bytes_written"]),
        "compaction_time_vs_base_file_write": div(m["compaction"]["seconds"],
                                                  m["base_file_write"]["seconds"]),
    }


def goals_of(r: dict[str, float], ok: bool, prefix: str = "") -> dict[str, dict[str, Any]]:
    targets = {"read_speedup_after_log_compaction": (GOAL_READ, ">="),
               "log_compaction_bytes_vs_compaction": (GOAL_BYTES, "<="),
               "compaction_time_vs_base_file_write": (GOAL_TIME, "<=")}
    out = {}
    for name, (target, op) in targets.items():
        g = goal(r[name], target, op)
        if not ok:
            g["met"] = False  # the services changed what the table reads
        out[prefix + name] = g
    return out


def run(*, quick: bool = False, repeats: int = 3, rows: int | None = None) -> dict[str, Any]:
    s = QUICK if quick else FULL
    if rows is not None:
        s = Sizes(**{**asdict(s), "table_rows": int(rows)})
    rng = make_rng(1301)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="morlog-bench-compaction-") as tmp:
        # --- one file slice
        progress(f"compaction slice: building {s.rounds} rounds x {s.records_per_round:,} "
                 "records")
        sl = build_slice(os.path.join(tmp, "slice"), s)
        deleted = pa.array(sl.deleted, pa.string())
        absent = pa.array(make_keys(s.absent_keys, rng), pa.string())
        fpp_before = fpp_part(sl.path, deleted, absent)
        probe_keys = pa.concat_arrays([deleted, absent])
        tag_before = tag_cost(sl.path, probe_keys)
        m, lc_path = measure(sl, tmp, repeats, "slice", metadata=False)
        fpp_after = fpp_part(lc_path, deleted, absent)
        tag_after = tag_cost(lc_path, probe_keys)
        shutil.rmtree(lc_path, ignore_errors=True)
        shutil.rmtree(sl.path, ignore_errors=True)
        m["build"] = {"seconds": num(sl.seconds), **sl.info}
        m["cumulative_index"] = {"configured_fpp": DEFAULT_FPP, "before": fpp_before,
                                 "after": fpp_after, "deleted_keys": len(deleted),
                                 "never_written_keys": len(absent)}
        m["tag_non_live_keys"] = {"before": tag_before, "after": tag_after}
        results["slice"] = m
        # --- a table
        progress(f"compaction table: building {s.table_rows:,} rows + {UPSERT_BATCHES} "
                 "upserts")
        tb = build_table(os.path.join(tmp, "table"), os.path.join(tmp, "table-data"),
                         s.table_rows)
        mt_, lc_path = measure(tb, tmp, repeats, "table", metadata=None)
        shutil.rmtree(lc_path, ignore_errors=True)
        mt_["build"] = {"seconds": num(tb.seconds), **tb.info}
        results["table"] = mt_

    r_slice, r_table = ratios_of(results["slice"]), ratios_of(results["table"])
    fb = results["slice"]["cumulative_index"]["before"]["non_live_rate"]
    fa = results["slice"]["cumulative_index"]["after"]["non_live_rate"]
    ratios: dict[str, Any] = {
        **r_slice,
        "cumulative_fpp_before_vs_configured": div(fb, DEFAULT_FPP),
        "cumulative_fpp_after_vs_configured": div(fa, DEFAULT_FPP),
        "log_compaction_bytes_vs_logs": div(results["slice"]["log_compaction"]["bytes_written"],
                                            results["slice"]["build"]["bytes"]),
        **{f"table_{k}": v for k, v in r_table.items()},
    }
    ok_slice = results["slice"]["checks"]["ok"]
    goals = goals_of(r_slice, ok_slice)
    g = goal(ratios["cumulative_fpp_after_vs_configured"], GOAL_FPP, "<=")
    if not ok_slice:
        g["met"] = False
    goals["cumulative_fpp_after_vs_configured"] = g
    goals.update(goals_of(r_table, results["table"]["checks"]["ok"], "table_"))
    params: dict[str, Any] = {
        **asdict(s),
        "deletes": "a delete commit per round (the client writes no mixed batch): "
                   "each round is an upsert commit (updates + inserts) and a delete commit",
        "slice_layout": "one partition, new_groups='log' (a log-only file group, no base "
                        "file), one log file per delta commit (table version 9)",
        "table_upserts": UPSERT_BATCHES,
        "table_update_share": UPDATE_SHARE,
        "table_partitions": len(CITIES),
        "table_version": TABLE_VERSION,
        "carrier": "avro",
        "write_config": "WriteConfig(fsync=False, small_file_limit and max_file_size 1 TiB+, "
                        "hoodie.clean.automatic=false); slice without metadata table, table "
                        "with (morlog's default)",
        "configured_fpp": DEFAULT_FPP,
        "repeats": repeats,
        "quick": quick,
        "timing": "best of repeats; each service on a fresh copy of the built table (copy "
                  "untimed); reads after one untimed read (warm page cache)",
    }
    return make_report("compaction", params, results, ratios, goals)


# --- the plot -------------------------------------------------------------------------------


def plot(plt: Any, report: dict[str, Any]) -> Any:
    r = report["results"]
    fig, axes = plt.subplots(1, 4, figsize=(18, 4.4))
    sl, tb = r["slice"], r["table"]
    bar(axes[0], ["slice\nbefore", "slice\nafter", "table\nbefore", "table\nafter"],
        [sl["read"]["before_seconds"], sl["read"]["after_seconds"],
         tb["read"]["before_seconds"], tb["read"]["after_seconds"]],
        "merged read, before / after log compaction", "seconds", fmt="{:.3g}")
    mib = 2**20
    bar(axes[1], ["slice\nlog comp.", "slice\ncompaction", "table\nlog comp.",
                  "table\ncompaction"],
        [sl["log_compaction"]["bytes_written"] / mib, sl["compaction"]["bytes_written"] / mib,
         tb["log_compaction"]["bytes_written"] / mib, tb["compaction"]["bytes_written"] / mib],
        "bytes written by the service", "MiB", fmt="{:.3g}")
    bar(axes[2], ["slice\ncompaction", "slice\nbase write", "table\ncompaction",
                  "table\nbase write"],
        [sl["compaction"]["seconds"], sl["base_file_write"]["seconds"],
         tb["compaction"]["seconds"], tb["base_file_write"]["seconds"]],
        "compaction vs writing the rows as base files", "seconds", fmt="{:.3g}")
    ci = sl["cumulative_index"]
    bar(axes[3], ["before", "after", "configured"],
        [100 * ci["before"]["non_live_rate"], 100 * ci["after"]["non_live_rate"],
         100 * ci["configured_fpp"]],
        "cumulative index: non-live keys let through", "%", fmt="{:.3g}", log=True)
    fig.suptitle(f"morlog bench compaction: slice {report['params']['rounds']} rounds x "
                 f"{report['params']['records_per_round']:,}, table "
                 f"{report['params']['table_rows']:,} rows + {UPSERT_BATCHES} upserts",
                 fontsize=11)
    return fig


__all__ = ["build_slice", "build_table", "cumulative_maybe", "digest", "plot", "run"]
