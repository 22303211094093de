"""``morlog bench rli``: morlog's record-level index (issue 15) on 1,000,000 keys, 16 shards.

The table is ``bench tag``'s shape (:func:`morlog.bench.tag.build_table`) scaled to
1,000,000 live keys: 20 partitions x 10 file groups, each slice a base Parquet file of 4,500
records with Hudi's footer (DYNAMIC_V0 bloom, min/max key) plus one log of 10 indexed Avro
blocks of 200 records (150 updates, 50 inserts): 200 x (4,500 + 500) keys. Quick: 25 slices of
2,000 keys (50,000).

Measured, on that one table:

- ``bootstrap``: :func:`morlog.writers.services.record_index.build` (``build(mt, 16)``) of the whole
  table, once (keys/s); ``bytes_per_mapping``: the index's files / its entries right after.
- ``lookup``: 100,000 random keys, half present, ``RecordIndex(Table(path)).lookup(keys,
  threads=1)``: a new table and index object every time (timeline, listing, shard reads
  included; warm OS page cache), best of repeats. Answers checked against the generator's
  key -> file group map. Its time split (prepare, probe, assemble) and one cProfile run of
  it (the top functions under ``readers/``) are reported; so is the default thread count.
- ``tag``: ``bench tag``'s batch (200,000 keys, half updates of live keys of which a fifth
  only a log holds, half inserts, each with its partition) tagged three ways on the same
  table: through the index (``KeyTagger(Table(path))``), through the file probes (``KeyTagger(
  ..., use_morlog_index=False, use_record_index=False)``: base footers and key columns, log
  indexes) and by ``bench tag``'s Hudi bloom-index baseline (every log block's keys decoded).
  All three must give every key the generator's location, else the benchmark stops.
- ``upserts``: 10 upserts by the write client (``MorTable.upsert``, fsync off), each of 1% of
  the keys: three in four update live keys, one in four inserts new ones; the index keeps
  itself true in each commit (its inline services run as configured). Then the bytes per
  mapping again (the index's latest file slices / its live entries), the slices' shape
  (base files, logs, log blocks) and the 100,000-key lookup again, answers checked against
  the map the upserts updated.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa

import morlog.readers as readers
from morlog.readers.logfile import LogFileReader
from morlog.readers.lookup import KeyTagger, TagResult
from morlog.readers.record_index import IndexLookup, RecordIndex, index_location
from morlog.readers.table import Table

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
    ratio,
)
from .tag import (
    Batch,
    GeneratedTable,
    Location,
    TagSizes,
    bloom_index_baseline,
    build_table,
    check_agree,
    check_locations,
    make_batch,
)


@dataclass(frozen=True)
class RliSizes:
    table: TagSizes
    shards: int = 16
    lookup_keys: int = 100_000
    upserts: int = 10
    #: keys per upsert, as a share of the table's keys
    upsert_share: float = 0.01
    #: of each upsert's records, this share inserts new keys (the rest update live ones)
    upsert_insert_share: float = 0.25

    @property
    def keys(self) -> int:
        t = self.table
        return t.partitions * t.groups_per_partition * (
            t.base_rows + t.log_blocks * t.inserts_per_block)


FULL = RliSizes(TagSizes(20, 10, 4_500, 10, 200, 50, 200_000))
QUICK = RliSizes(TagSizes(5, 5, 1_875, 5, 100, 25, 10_000), lookup_keys=5_000, upserts=3)


# --- checks ---------------------------------------------------------------------------------


def lookup_keys(gen: GeneratedTable, n: int, salt: int = 11) -> tuple[pa.Array, list[str]]:
    """``n`` keys in random order, half live in the table (base and log keys alike), half
    new; and the present ones."""
    rng = make_rng(salt)
    present = rng.sample(gen.base_keys + gen.log_only_keys, n // 2)
    keys = present + make_keys(n - n // 2, rng)
    rng.shuffle(keys)
    return pa.array(keys, type=pa.string()), present


def check_lookup(label: str, lk: IndexLookup, where: dict[str, Location]) -> dict[str, int]:
    """Raise :class:`BenchError` unless every key the map holds is found in its file group
    and no other key is found."""
    table = np.empty(len(lk.groups) + 1, dtype=object)
    table[:-1] = lk.groups
    table[-1] = None
    got = table[lk.codes].tolist()
    found = 0
    for k, g in zip(lk.keys.to_pylist(), got, strict=True):
        want = where.get(k)
        if g != want:
            raise BenchError(f"{label}: key {k} looked up at {g}, expected {want}")
        found += want is not None
    return {"present_keys_found": found, "absent_keys_found": 0}


# --- the index on disk ----------------------------------------------------------------------


def index_shape(path: str) -> dict[str, Any]:
    """The index's latest file slices: files, bytes, log blocks, live entries."""
    idx = RecordIndex(Table(path))
    store = idx.table.storage
    slices = idx.slices()
    out: dict[str, Any] = {"shards_with_slices": len(slices), "base_files": 0,
                           "log_files": 0, "log_blocks": 0, "bytes": 0}
    for s in slices.values():
        d = idx.table.slice_dir(s.partition)
        if s.base_file is not None:
            out["base_files"] += 1
            out["bytes"] += os.path.getsize(store.join(d, s.base_file))
        for log in s.log_files:
            out["log_files"] += 1
            p = store.join(d, log)
            out["bytes"] += os.path.getsize(p)
            with LogFileReader(p) as r:
                out["log_blocks"] += sum(1 for _ in r.blocks())
    out["entries"] = idx.entries().num_rows
    out["bytes_per_mapping"] = num(out["bytes"] / out["entries"]) if out["entries"] else 0.0
    root = index_location(idx.data.location).path
    out["directory_bytes"] = sum(os.path.getsize(os.path.join(dp, f))
                                 for dp, _, fs in os.walk(root) for f in fs)
    out["completed_instants"] = len(idx.raw_timeline.completed())
    return out


# --- the measured calls ---------------------------------------------------------------------


def index_lookup(path: str, keys: pa.Array, threads: int | None = 1) -> IndexLookup:
    """A cold lookup: the table and its index opened inside the call."""
    return RecordIndex(Table(path)).lookup(keys, threads=threads)


def tag_by_index(path: str, batch: Batch) -> TagResult:
    return KeyTagger(Table(path)).tag(batch.keys, batch.partitions)


def tag_by_files(path: str, batch: Batch) -> TagResult:
    return KeyTagger(Table(path), use_morlog_index=False,
                     use_record_index=False).tag(batch.keys, batch.partitions)


def lookup_profile(path: str, keys: pa.Array, top: int = 6) -> list[str]:
    """The ``top`` functions under ``readers/`` by cumulative time in one profiled lookup."""
    prof = cProfile.Profile()
    prof.enable()
    index_lookup(path, keys)
    prof.disable()
    pkg = os.path.dirname(os.path.abspath(readers.__file__))
    root = os.path.dirname(pkg)
    stats: dict[Any, Any] = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    rows = []
    for (filename, line, func), (_cc, ncalls, _tt, ct, _callers) in stats.items():
        full = os.path.abspath(filename)
        if full.startswith(pkg + os.sep) and func != "index_lookup":
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            rows.append((ct, f"{rel}:{line}({func}) cumtime={ct:.3f}s calls={ncalls}"))
    rows.sort(key=lambda r: -r[0])
    return [r[1] for r in rows[:top]]


def upsert_batch(mt: Any, where: dict[str, Location], partitions: Sequence[str], n: int,
                 insert_share: float, rng: Any, nprng: np.random.Generator
                 ) -> tuple[pa.Table, list[str], list[tuple[str, str]]]:
    """An upsert of ``n`` records: updates of live keys (in their partition), inserts of new
    keys in random partitions. Returns the batch, the updated keys, and (key, partition) of
    the inserts."""
    n_ins = round(n * insert_share)
    ups = rng.sample(sorted(where), n - n_ins)
    ins = [(k, rng.choice(list(partitions))) for k in make_keys(n_ins, rng)]
    keys = ups + [k for k, _ in ins]
    parts = [where[k][0] for k in ups] + [p for _, p in ins]
    t = pa.table({
        "uuid": pa.array(keys, pa.string()),
        "city": pa.array(parts, pa.string()),
        "ts": pa.array(1_800_000_000_000 + nprng.integers(0, 10**9, n), pa.int64()),
        "fare": pa.array(np.round(nprng.uniform(5, 100, n), 2), pa.float64()),
    })
    return t.select([f.name for f in mt.data_schema]), ups, ins


# --- the run --------------------------------------------------------------------------------


def run(*, quick: bool = False, repeats: int = 3) -> dict[str, Any]:
    from morlog.writers.client import MorTable
    from morlog.writers.options import WriteConfig
    from morlog.writers.services.record_index import build

    s = QUICK if quick else FULL
    t = s.table
    with tempfile.TemporaryDirectory(prefix="morlog-bench-rli-") as tmp:
        path = os.path.join(tmp, "table")
        progress(f"rli: building a table of {s.keys:,} keys ({t.partitions} partitions x "
                 f"{t.groups_per_partition} file groups, {t.base_rows:,} base rows and "
                 f"{t.log_blocks} log blocks of {t.records_per_block} records per slice)")
        t0 = time.perf_counter()
        gen = build_table(path, t)
        batch = make_batch(gen, t)
        lkeys, _ = lookup_keys(gen, s.lookup_keys)
        setup_s = time.perf_counter() - t0
        if len(gen.location) != s.keys:
            raise BenchError(f"the table holds {len(gen.location):,} keys, not {s.keys:,}")

        progress(f"rli: bootstrapping the index ({s.shards} shards)")
        mt = MorTable(path, WriteConfig(fsync=False))
        boot = build(mt, s.shards)
        if boot.entries != s.keys:
            raise BenchError(f"the build indexed {boot.entries:,} keys, not {s.keys:,}")
        boot_s = boot.seconds["total"]
        shape_built = index_shape(path)

        nl = len(lkeys)
        progress(f"rli: looking up {nl:,} keys (one thread, cold objects)")
        look_s, look = best_of(repeats, lambda: index_lookup(path, lkeys))
        look_answers = check_lookup("lookup", look, gen.location)
        look_threads_s, look_threads = best_of(repeats, lambda: index_lookup(path, lkeys,
                                                                             None))
        check_lookup("lookup (threads)", look_threads, gen.location)
        profile_top = lookup_profile(path, lkeys)

        nt = len(batch.keys)
        progress(f"rli: tagging {nt:,} keys through the index")
        idx_s, idx_res = best_of(repeats, lambda: tag_by_index(path, batch))
        if idx_res.stats.morlog_index_shards == 0:
            raise BenchError("tagging did not go through the record index")
        progress(f"rli: tagging {nt:,} keys through the file probes")
        files_s, files_res = best_of(repeats, lambda: tag_by_files(path, batch))
        if files_res.stats.morlog_index_shards or not files_res.stats.slices:
            raise BenchError("the file-probe tagging went through an index")
        progress(f"rli: tagging {nt:,} keys by the Hudi bloom-index baseline")
        base_s, base_res = best_of(
            repeats, lambda: bloom_index_baseline(path, batch.keys, batch.partitions))
        tag_answers = check_locations("tag by the index", idx_res.locations, batch)
        check_locations("tag by the file probes", files_res.locations, batch)
        check_locations("bloom index baseline", base_res.locations, batch)
        check_agree(idx_res.locations, base_res.locations, batch.keys)
        check_agree(files_res.locations, base_res.locations, batch.keys)

        per = max(1, round(s.keys * s.upsert_share))
        progress(f"rli: {s.upserts} upserts of {per:,} records ({s.upsert_insert_share:.0%} "
                 "inserts), the index maintained in each")
        rng = make_rng(12)
        nprng = np.random.default_rng(rng.getrandbits(64))
        where = dict(gen.location)
        up_seconds: list[float] = []
        new_keys: list[tuple[str, str]] = []
        for _ in range(s.upserts):
            b, _ups, ins = upsert_batch(mt, where, gen.partitions, per,
                                        s.upsert_insert_share, rng, nprng)
            u0 = time.perf_counter()
            res = mt.upsert(b)
            up_seconds.append(time.perf_counter() - u0)
            if res.inserts != len(ins) or res.updates != per - len(ins):
                raise BenchError(f"upsert {res.instant}: {res.inserts} inserts, "
                                 f"{res.updates} updates; expected {len(ins)}, "
                                 f"{per - len(ins)}")
            new_keys.extend(ins)
        # where the inserts went (routing picked the file groups): the file probes say
        where.update(_placed(path, new_keys))
        inserted = len(new_keys)
        if len(where) != s.keys + inserted:
            raise BenchError(f"{len(where):,} live keys after the upserts, expected "
                             f"{s.keys + inserted:,}")
        shape_after = index_shape(path)
        if shape_after["entries"] != len(where):
            raise BenchError(f"the index holds {shape_after['entries']:,} entries, the "
                             f"table {len(where):,} keys")
        lkeys2, _ = lookup_keys_from(where, s.lookup_keys)
        progress(f"rli: looking up {nl:,} keys after the upserts")
        look2_s, look2 = best_of(repeats, lambda: index_lookup(path, lkeys2))
        look2_answers = check_lookup("lookup after upserts", look2, where)

    results: dict[str, Any] = {
        "table": {"keys": s.keys, "slices": gen.slices, "base_rows": gen.base_rows,
                  "log_blocks": gen.log_blocks, "log_only_keys": len(gen.log_only_keys),
                  "base_bytes": gen.base_bytes, "log_bytes": gen.log_bytes},
        "setup_seconds": num(setup_s),
        "bootstrap": {"seconds": num(boot_s), "keys_per_s": rate(boot.entries, boot_s),
                      "entries": boot.entries, "slices_read": boot.slices,
                      "split_seconds": {k: num(v) for k, v in boot.seconds.items()},
                      "bytes": boot.bytes,
                      "bytes_per_mapping": ratio(boot.bytes, boot.entries),
                      "index": shape_built},
        "lookup": {"keys": nl, "seconds": num(look_s), "ms": num(look_s * 1000),
                   "keys_per_s": rate(nl, look_s), "threads": 1,
                   "shards_read": look.shards_read,
                   "split_seconds": {k: num(v) for k, v in look.seconds.items()},
                   "answers": look_answers,
                   "default_threads_ms": num(look_threads_s * 1000),
                   "profile_top": profile_top},
        "tag": {"batch": {"keys": nt, "update_keys": batch.update_keys,
                          "log_only_update_keys": batch.log_only_update_keys,
                          "insert_keys": nt - batch.update_keys},
                "index": {"seconds": num(idx_s), "keys_per_s": rate(nt, idx_s),
                          "shards_read": idx_res.stats.morlog_index_shards},
                "file_probes": {"seconds": num(files_s), "keys_per_s": rate(nt, files_s),
                                "stats": asdict(files_res.stats)},
                "bloom_index_baseline": {"seconds": num(base_s),
                                         "keys_per_s": rate(nt, base_s),
                                         "log_blocks_decoded": base_res.log_blocks_decoded},
                "answers": tag_answers,
                "locations_agree": True},
        "upserts": {"count": s.upserts, "records_each": per, "inserted_keys": inserted,
                    "seconds": [num(x) for x in up_seconds],
                    "live_keys": len(where), "index": shape_after,
                    "bytes_per_mapping": shape_after["bytes_per_mapping"],
                    "lookup": {"keys": nl, "ms": num(look2_s * 1000),
                               "shards_read": look2.shards_read,
                               "split_seconds": {k: num(v) for k, v in look2.seconds.items()},
                               "answers": look2_answers}},
    }
    ratios = {
        "tag_vs_bloom_baseline": ratio(base_s, idx_s),
        "tag_vs_file_probes": ratio(files_s, idx_s),
        "file_probes_vs_bloom_baseline": ratio(base_s, files_s),
        "lookup_ms_vs_jvm_anchor_600": ratio(look_s * 1000, 600),
        "bytes_per_mapping_vs_hudi_48": ratio(boot.bytes / boot.entries, 48),
    }
    goals = {
        "bytes_per_mapping": goal(boot.bytes / boot.entries, 40, "<="),
        "lookup_100k_ms": goal(look_s * 1000, 300, "<="),
        "tag_keys_per_s": goal(rate(nt, idx_s), 1_000_000, ">="),
        "tag_vs_bloom_baseline": goal(ratios["tag_vs_bloom_baseline"], 10, ">="),
    }
    params: dict[str, Any] = {
        **{k: v for k, v in asdict(s).items() if k != "table"},
        **asdict(t),
        "keys": s.keys,
        "key_kind": "UUID4 strings (36 bytes), seeded RNG",
        "table": "bench tag's table (table version 6 MOR, base Parquet with Hudi footer, one "
                 "log of indexed Avro blocks per slice), scaled to the key count",
        "lookup": "RecordIndex(Table(path)).lookup(keys, threads=1): table and index opened "
                  "in the call; half the keys present; best of repeats, warm OS page cache",
        "tag": "the same batch with partitions: KeyTagger(Table(path)) (index), KeyTagger("
               "..., use_morlog_index=False, use_record_index=False) (file probes), bench "
               "tag's bloom_index_baseline; best of repeats",
        "bytes_per_mapping": "index files of the latest slices / live entries",
        "repeats": repeats,
        "quick": quick,
    }
    return make_report("rli", params, results, ratios, goals)


def lookup_keys_from(where: dict[str, Location], n: int, salt: int = 13
                     ) -> tuple[pa.Array, list[str]]:
    rng = make_rng(salt)
    present = rng.sample(sorted(where), n // 2)
    keys = present + make_keys(n - n // 2, rng)
    rng.shuffle(keys)
    return pa.array(keys, type=pa.string()), present


def _placed(path: str, keys: list[tuple[str, str]]) -> dict[str, Location]:
    """The file group of each inserted (key, partition), by the file probes (not the
    index): every one must be found."""
    if not keys:
        return {}
    res = KeyTagger(Table(path), use_morlog_index=False, use_record_index=False).tag(
        [k for k, _ in keys], [p for _, p in keys])
    out: dict[str, Location] = {}
    for (k, p), loc in zip(keys, res.locations, strict=True):
        if loc is None or loc[0] != p:
            raise BenchError(f"inserted key {k} (partition {p}) found at {loc}")
        out[k] = loc
    return out


def plot(plt: Any, report: dict[str, Any]) -> Any:
    r = report["results"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    bar(axes[0], ["after build", "after upserts", "Hudi (practice)"],
        [r["bootstrap"]["bytes_per_mapping"], r["upserts"]["bytes_per_mapping"], 48],
        "bytes per mapping (goal <= 40)", "bytes", fmt="{:,.1f}")
    bar(axes[1], ["morlog, 1 thread", "after upserts", "JVM anchor"],
        [r["lookup"]["ms"], r["upserts"]["lookup"]["ms"], 600],
        f"lookup of {r['lookup']['keys']:,} keys (goal <= 300 ms)", "ms")
    tg = r["tag"]
    bar(axes[2], ["index", "file probes", "bloom baseline"],
        [tg["index"]["keys_per_s"], tg["file_probes"]["keys_per_s"],
         tg["bloom_index_baseline"]["keys_per_s"]],
        f"tagging {tg['batch']['keys']:,} keys", "keys/s", log=True)
    fig.suptitle(f"morlog bench rli: {r['table']['keys']:,} keys, "
                 f"{report['params']['shards']} shards", fontsize=11)
    return fig


__all__ = ["FULL", "QUICK", "RliSizes", "plot", "run"]
