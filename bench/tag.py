"""``morlog bench tag``: tagging an upsert batch against a whole MOR table.

A table-version-6 merge-on-read table is generated: 20 partitions x 10 file groups, each file
slice a base Parquet file of 20,000 records (with Hudi's footer index: DYNAMIC_V0 bloom
filter, min/max key) plus one log of 10 indexed Avro data blocks of 200 records, three in
four updating base records of the slice, one in four inserting new keys. Every log block is
its own delta commit (one block per slice per commit, as an upsert writes). A batch of
200,000 keys, half updates of keys live in the table (a fifth of them keys that only a log
holds) and half inserts, each with its partition (an upsert batch knows it), is tagged twice:

- morlog: ``KeyTagger(Table(path)).tag(keys, partitions)``: base footers and key columns,
  then each slice's logs probed through their stored index;
- the baseline, which is all Hudi's bloom index can do on a MOR table whose logs carry no
  index: per slice of the key's partition, base-file min/max + bloom and the base key column
  as above, then every data block of every log of the slice read and its keys decoded (only
  the key field: :func:`morlog.compat.recompute.block_keys`) to confirm; a slice is a
  candidate when the batch has any key in its partition, as the logs hold inserts no base
  footer knows of.

Both open the table themselves (timeline, listing) inside the timed call, fresh per repeat
(no caching across repeats; local files, warm OS page cache). Both must agree on every key's
location, find every update key in its file group and no insert: else the benchmark stops.
The base-file half is the same code in both (:func:`morlog.readers.lookup.base_file_hits`,
keys prepared once per partition); to see what the log index buys, the log half
is also timed on its own: the baseline's share of its run, and morlog's slice probes
(:class:`SliceProbe`, as ``tag`` runs them) in a separate timed pass, which must confirm the
same (key, block) pairs as decoding every block did.
The morlog path is profiled once more (cProfile, untimed) and its top functions under
``readers/`` reported, so one can see where the time goes.
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import morlog.readers as readers
from morlog.compat.base_footer import encode_base_footer
from morlog.compat.recompute import block_keys
from morlog.logformat.avroschema import avro_to_arrow_schema
from morlog.logformat.blocks import META_FIELDS
from morlog.logformat.naming import COMPLETED, INFLIGHT, REQUESTED, BaseFileName, TimelineFileName
from morlog.logformat.table_files import (
    PARTITION_METADATA_FILE,
    PROPERTIES_FILE,
    format_partition_metadata,
    format_properties,
    new_table_properties,
    partition_depth,
)
from morlog.logformat.virtual_keys import KeyField
from morlog.readers.logfile import LogFileReader
from morlog.readers.lookup import KeyTagger, PreparedKeys, TagResult, base_file_hits
from morlog.readers.probe import SliceProbe
from morlog.readers.storage import LocalFileSource
from morlog.readers.table import FileSlice, Table
from morlog.writers.core.indexed import IndexedLogWriter
from morlog.writers.core.timeline import WRITE_TOKEN

from .common import (
    BASE_INSTANT,
    BenchError,
    bar,
    best_of,
    goal,
    instant_for,
    make_keys,
    make_report,
    make_rng,
    num,
    progress,
    rate,
    ratio,
)

#: Hudi's five meta fields, then a small payload: about 200 bytes per encoded record
SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "rides_record",
    "namespace": "hoodie.bench",
    "fields": [{"name": f, "type": ["null", "string"], "default": None} for f in META_FIELDS]
    + [
        {"name": "uuid", "type": "string"},
        {"name": "city", "type": "string"},
        {"name": "ts", "type": "long"},
        {"name": "fare", "type": ["null", "double"], "default": None},
    ],
}
SCHEMA_TEXT = json.dumps(SCHEMA, separators=(",", ":"))
ARROW_SCHEMA = avro_to_arrow_schema(SCHEMA)
#: entries per row of the base files' DYNAMIC_V0 filter (Hudi's default)
BLOOM_ENTRIES = 60_000


@dataclass(frozen=True)
class TagSizes:
    partitions: int = 20
    groups_per_partition: int = 10
    base_rows: int = 20_000
    log_blocks: int = 10
    records_per_block: int = 200
    #: of each block's records, this many insert new keys (the rest update base records)
    inserts_per_block: int = 50
    batch_keys: int = 200_000
    #: share of the batch's update keys drawn from keys that only a log holds
    log_only_update_share: float = 0.2


FULL = TagSizes()
QUICK = TagSizes(2, 2, 2_000, 3, 100, 25, 2_000)

Location = tuple[str, str]


# --- the table ------------------------------------------------------------------------------


@dataclass
class GeneratedTable:
    path: str
    partitions: list[str]
    #: keys of the base files, and keys that only a log holds (inserted by a log block)
    base_keys: list[str] = field(default_factory=list)
    log_only_keys: list[str] = field(default_factory=list)
    #: key -> (partition, file id) for every key live in the table
    location: dict[str, Location] = field(default_factory=dict)
    slices: int = 0
    base_rows: int = 0
    log_blocks: int = 0
    log_records: int = 0
    base_bytes: int = 0
    log_bytes: int = 0


def _timeline(path: str, instant: str, meta: dict[str, Any]) -> None:
    hoodie = os.path.join(path, ".hoodie")
    for state in (REQUESTED, INFLIGHT):
        name = str(TimelineFileName(instant, "deltacommit", state))
        with open(os.path.join(hoodie, name), "w", encoding="utf-8") as f:
            f.write("{}")
    name = str(TimelineFileName(instant, "deltacommit", COMPLETED))
    with open(os.path.join(hoodie, name), "w", encoding="utf-8") as f:
        json.dump(meta, f)


def _commit_meta(written: Sequence[tuple[str, str, str]]) -> dict[str, Any]:
    """Commit metadata as Hudi 0.x writes it: write stats per file, schema in extraMetadata."""
    stats: dict[str, list[dict[str, Any]]] = {}
    for part, fid, rel in written:
        stats.setdefault(part, []).append({"fileId": fid, "path": rel, "partitionPath": part})
    return {"partitionToWriteStats": stats, "compacted": False,
            "extraMetadata": {"schema": SCHEMA_TEXT}, "operationType": "UPSERT"}


def _write_properties(path: str) -> None:
    os.makedirs(os.path.join(path, ".hoodie"), exist_ok=True)
    props = new_table_properties(name="bench_tag", key_field="uuid", partition_field="city",
                                 ordering_field="ts", create_schema=SCHEMA_TEXT,
                                 event_time_ordering=False, archive_folder=None)
    with open(os.path.join(path, ".hoodie", PROPERTIES_FILE), "w",
              encoding="utf-8") as f:
        f.write(format_properties(props))


def _base_table(keys: list[str], partition: str, fid: str, instant: str,
                rng: np.random.Generator) -> pa.Table:
    n = len(keys)
    key_arr = pa.array(keys, type=pa.string())
    cols = {
        "_hoodie_commit_time": pa.array([instant] * n, type=pa.string()),
        "_hoodie_commit_seqno": pa.array([f"{instant}_0_{i}" for i in range(n)],
                                         type=pa.string()),
        "_hoodie_record_key": key_arr,
        "_hoodie_partition_path": pa.array([partition] * n, type=pa.string()),
        "_hoodie_file_name": pa.array([fid] * n, type=pa.string()),
        "uuid": key_arr,
        "city": pa.array([partition] * n, type=pa.string()),
        "ts": pa.array(1_700_000_000_000 + rng.integers(0, 10**9, n), type=pa.int64()),
        "fare": pa.array(np.round(rng.uniform(5, 100, n), 2), type=pa.float64()),
    }
    return pa.table(cols, schema=ARROW_SCHEMA)


def _log_records(keys: Sequence[str], partition: str, fid: str, instant: str,
                 rng: np.random.Generator) -> list[dict[str, Any]]:
    ts = rng.integers(0, 10**9, len(keys))
    fare = np.round(rng.uniform(5, 100, len(keys)), 2)
    return [{
        "_hoodie_commit_time": instant,
        "_hoodie_commit_seqno": f"{instant}_0_{i}",
        "_hoodie_record_key": k,
        "_hoodie_partition_path": partition,
        "_hoodie_file_name": fid,
        "uuid": k,
        "city": partition,
        "ts": 1_700_000_000_000 + int(ts[i]),
        "fare": float(fare[i]),
    } for i, k in enumerate(keys)]


def build_table(path: str, s: TagSizes, salt: int = 7) -> GeneratedTable:
    """The benchmark table at ``path``: base files by one delta commit, then one delta commit
    per log block round (one indexed Avro block per file slice each)."""
    rng = make_rng(salt)
    nprng = np.random.default_rng(rng.getrandbits(64))
    _write_properties(path)
    partitions = [f"city_{i:02d}" for i in range(s.partitions)]
    out = GeneratedTable(path, partitions)
    updates = s.records_per_block - s.inserts_per_block
    if updates < 0 or updates * s.log_blocks > s.base_rows:
        raise BenchError("log blocks update more records than a base file holds")
    groups: list[tuple[str, str, list[str]]] = []
    written: list[tuple[str, str, str]] = []
    for part in partitions:
        d = os.path.join(path, part)
        os.makedirs(d)
        with open(os.path.join(d, PARTITION_METADATA_FILE), "w", encoding="utf-8") as f:
            f.write(format_partition_metadata(0, partition_depth(part)))
        for _ in range(s.groups_per_partition):
            fid = f"{make_keys(1, rng)[0]}-0"
            keys = make_keys(s.base_rows, rng)
            table = _base_table(keys, part, fid, BASE_INSTANT, nprng)
            md = encode_base_footer(table.column("_hoodie_record_key"), BLOOM_ENTRIES)
            name = str(BaseFileName(fid, WRITE_TOKEN, BASE_INSTANT))
            # the footer as parquet-mr writes it: Hudi's keys, no ARROW:schema copy of them
            with pq.ParquetWriter(os.path.join(d, name), table.schema,
                                  store_schema=False) as w:
                w.write_table(table)
                w.add_key_value_metadata(md)
            out.base_bytes += os.path.getsize(os.path.join(d, name))
            written.append((part, fid, f"{part}/{name}"))
            groups.append((part, fid, keys))
            out.base_keys.extend(keys)
            out.location.update((k, (part, fid)) for k in keys)
            out.base_rows += len(keys)
    _timeline(path, BASE_INSTANT, _commit_meta(written))
    out.slices = len(groups)

    writers = {(part, fid): IndexedLogWriter(os.path.join(path, part), fid, BASE_INSTANT,
                                             write_token=WRITE_TOKEN, fsync=False)
               for part, fid, _ in groups}
    # per slice: distinct base keys to update, spread over its blocks
    updated = {(part, fid): rng.sample(keys, updates * s.log_blocks)
               for part, fid, keys in groups}
    log_files: dict[Location, str] = {}
    for b in range(s.log_blocks):
        instant = instant_for(b)
        written = []
        for part, fid, _ in groups:
            ups = updated[(part, fid)][b * updates : (b + 1) * updates]
            ins = make_keys(s.inserts_per_block, rng)
            keys = ups + ins
            rng.shuffle(keys)
            recs = _log_records(keys, part, fid, instant, nprng)
            r = writers[(part, fid)].append_avro(recs, SCHEMA_TEXT, instant)
            log_files[(part, fid)] = r.path
            written.append((part, fid, f"{part}/{os.path.basename(r.path)}"))
            out.log_only_keys.extend(ins)
            out.location.update((k, (part, fid)) for k in ins)
            out.log_blocks += 1
            out.log_records += len(recs)
        _timeline(path, instant, _commit_meta(written))
    out.log_bytes = sum(os.path.getsize(p) for p in set(log_files.values()))
    return out


# --- the batch ------------------------------------------------------------------------------


@dataclass
class Batch:
    keys: pa.Array
    partitions: pa.Array
    #: per key: its (partition, file id) for an update, None for an insert
    expected: list[Location | None]
    update_keys: int
    log_only_update_keys: int


def make_batch(t: GeneratedTable, s: TagSizes, salt: int = 8) -> Batch:
    rng = make_rng(salt)
    n_updates = s.batch_keys // 2
    n_log = min(len(t.log_only_keys), round(n_updates * s.log_only_update_share))
    ups = rng.sample(t.log_only_keys, n_log) + rng.sample(t.base_keys, n_updates - n_log)
    ins = make_keys(s.batch_keys - n_updates, rng)
    rows: list[tuple[str, str, Location | None]] = [
        (k, t.location[k][0], t.location[k]) for k in ups]
    rows += [(k, rng.choice(t.partitions), None) for k in ins]
    rng.shuffle(rows)
    return Batch(pa.array([r[0] for r in rows], type=pa.string()),
                 pa.array([r[1] for r in rows], type=pa.string()),
                 [r[2] for r in rows], n_updates, n_log)


# --- the two methods ------------------------------------------------------------------------


@dataclass
class Tagged:
    """The baseline's answers and what it did (reads split into base files and logs)."""

    locations: list[Location | None]
    slices: int = 0
    base_footers: int = 0
    #: keys left by the base footers' min/max and bloom filter (summed over slices)
    base_candidates: int = 0
    base_key_reads: int = 0
    log_files: int = 0
    log_blocks_decoded: int = 0
    log_keys_decoded: int = 0
    #: (key, log block) pairs confirmed
    log_hits: int = 0
    base_reads: int = 0
    base_bytes_read: int = 0
    log_reads: int = 0
    log_bytes_read: int = 0
    #: wall time in the base-file part and the log part (the rest: listing, bookkeeping)
    base_seconds: float = 0.0
    log_seconds: float = 0.0

    @property
    def reads(self) -> int:
        return self.base_reads + self.log_reads

    @property
    def bytes_read(self) -> int:
        return self.base_bytes_read + self.log_bytes_read


def morlog_tag(path: str, keys: pa.Array, partitions: pa.Array) -> TagResult:
    """morlog's lookup, as an upsert would run it (the table opened fresh)."""
    return KeyTagger(Table(path)).tag(keys, partitions)


def _base_hits(path: str, key_field: KeyField, keys: PreparedKeys, out: Tagged
               ) -> npt.NDArray[np.int64]:
    """Indices of ``keys`` in the base file at ``path``: the very step morlog's lookup runs
    (:func:`morlog.readers.lookup.base_file_hits`), so that the base-file half is the same code."""
    src = LocalFileSource(path)
    try:
        out.base_footers += 1
        found = base_file_hits(src, key_field, keys)
        out.base_candidates += found.candidates
        out.base_key_reads += found.key_column_read
        return found.hits
    finally:
        out.base_reads += src.stats.reads
        out.base_bytes_read += src.stats.bytes_read
        src.close()


def _log_hits(path: str, key_field: KeyField, keys: pa.Array, valid: Callable[[str], bool],
              out: Tagged) -> list[tuple[int, str]]:
    """(index into ``keys``, instant) of the keys in any data block of the log at ``path``,
    every block's keys decoded (the log has no index to narrow by)."""
    src = LocalFileSource(path)
    hits: list[tuple[int, str]] = []
    try:
        out.log_files += 1
        for block in LogFileReader(src).blocks():
            if not block.block_type.is_keyed:
                continue
            inst = block.instant or ""
            if not valid(inst):
                continue
            bkeys = block_keys(block.block_type, block.header, block.content(),
                               key_field=key_field, base=block.content_offset, path=src.name)
            out.log_blocks_decoded += 1
            out.log_keys_decoded += len(bkeys)
            present = pc.is_in(keys, value_set=pa.array(bkeys, type=pa.string())).to_numpy(
                zero_copy_only=False)
            found = np.flatnonzero(present)
            out.log_hits += int(found.size)
            hits.extend((int(i), inst) for i in found)
        return hits
    finally:
        out.log_reads += src.stats.reads
        out.log_bytes_read += src.stats.bytes_read
        src.close()


def bloom_index_baseline(path: str, keys: pa.Array, partitions: pa.Array) -> Tagged:
    """What Hudi's bloom index can do on a MOR table whose logs carry no index.

    Per file slice of each key's partition: the base file's footer (min/max key, then the
    bloom filter) prunes, the base key column confirms; then every data block of every log
    of the slice has its keys decoded (key field only) and checked. Blocks of instants not
    committed or rolled back do not count; among several hits the newest instant wins (as in
    :class:`KeyTagger`). Reads and bytes are counted at the file sources.
    """
    table = Table(path)
    tl = table.timeline
    rolled_back = tl.rolled_back_instants()

    def valid(instant: str) -> bool:
        return instant not in rolled_back and tl.is_committed(instant)

    key_field = table.key_field
    n = len(keys)
    part_idx: dict[str, list[int]] = {}
    for i, p in enumerate(partitions.to_pylist()):
        part_idx.setdefault(p, []).append(i)
    best = [""] * n
    locations: list[Location | None] = [None] * n
    out = Tagged(locations)
    prepared: dict[str, PreparedKeys] = {}  # once per partition, as morlog does
    for s in table.file_slices():
        idx_list = part_idx.get(s.partition)
        if not idx_list:
            continue
        out.slices += 1
        idx = np.asarray(idx_list, dtype=np.int64)
        if s.partition not in prepared:
            prepared[s.partition] = PreparedKeys(keys.take(pa.array(idx)))
        sub = prepared[s.partition].arr
        directory = os.path.join(path, s.partition) if s.partition else path
        hits: list[tuple[int, str]] = []
        t0 = time.perf_counter()
        if s.base_file is not None:
            found = _base_hits(os.path.join(directory, s.base_file), key_field,
                               prepared[s.partition], out)
            hits.extend((int(i), s.base_instant) for i in found)
        t1 = time.perf_counter()
        for log in s.log_files:
            hits.extend(_log_hits(os.path.join(directory, log), key_field, sub, valid, out))
        out.base_seconds += t1 - t0
        out.log_seconds += time.perf_counter() - t1
        for local, inst in hits:
            i = int(idx[local])
            if inst >= best[i]:
                best[i] = inst
                locations[i] = (s.partition, s.file_id)
    return out


@dataclass
class LogPart:
    reads: int = 0
    bytes_read: int = 0
    confirmed: int = 0


def partition_batches(keys: pa.Array, partitions: pa.Array) -> dict[str, pa.Array]:
    """The batch's keys of each partition (in batch order)."""
    idx: dict[str, list[int]] = {}
    for i, p in enumerate(partitions.to_pylist()):
        idx.setdefault(p, []).append(i)
    return {p: keys.take(pa.array(ix, type=pa.int64())) for p, ix in idx.items()}


def morlog_log_part(path: str, slices: Sequence[FileSlice], key_field: KeyField,
                    by_partition: dict[str, pa.Array]) -> LogPart:
    """The log half of :meth:`KeyTagger.tag` alone: each slice's logs probed through their
    index (:class:`SliceProbe`) with the keys of its partition, reads counted."""
    out = LogPart()
    for s in slices:
        sub = by_partition.get(s.partition)
        if sub is None or not s.log_files:
            continue
        directory = os.path.join(path, s.partition) if s.partition else path
        sources: list[LocalFileSource] = []

        def opener(name: str, d: str = directory, srcs: list[LocalFileSource] = sources
                   ) -> LocalFileSource:
            src = LocalFileSource(os.path.join(d, name))
            srcs.append(src)
            return src

        with SliceProbe(directory, s.log_files, key_field=key_field, opener=opener) as probe:
            res = probe.probe(sub)
        out.confirmed += int(res.masks.confirmed.sum())
        out.reads += sum(x.stats.reads for x in sources)
        out.bytes_read += sum(x.stats.bytes_read for x in sources)
        for x in sources:
            x.close()
    return out


# --- checks, profile ------------------------------------------------------------------------


def check_locations(label: str, got: Sequence[Location | None], batch: Batch) -> dict[str, int]:
    """Raise :class:`BenchError` unless every update key is found in its file group and no
    insert key is found anywhere."""
    keys = batch.keys.to_pylist()
    if len(got) != len(keys):
        raise BenchError(f"{label}: {len(got)} answers for {len(keys)} keys")
    found = 0
    for k, g, want in zip(keys, got, batch.expected, strict=True):
        if g != want:
            kind = "update" if want is not None else "insert"
            raise BenchError(f"{label}: {kind} key {k} tagged {g}, expected {want}")
        found += want is not None
    return {"update_keys_found": found, "insert_keys_found": 0}


def check_agree(a: Sequence[Location | None], b: Sequence[Location | None],
                keys: pa.Array) -> None:
    if len(a) != len(b):
        raise BenchError(f"morlog tagged {len(a)} keys, the baseline {len(b)}")
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y:
            raise BenchError(f"key {keys[i].as_py()}: morlog tagged {x}, the baseline {y}")


def readers_profile(path: str, keys: pa.Array, partitions: pa.Array, top: int = 5
                    ) -> list[str]:
    """The ``top`` functions under ``readers/`` by cumulative time in one profiled run."""
    prof = cProfile.Profile()
    prof.enable()
    morlog_tag(path, keys, partitions)
    prof.disable()
    pkg = os.path.dirname(os.path.abspath(readers.__file__))
    root = os.path.dirname(pkg)
    stats: dict[Any, Any] = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    rows = []
    for (filename, line, func), (_cc, ncalls, _tt, ct, _callers) in stats.items():
        full = os.path.abspath(filename)
        if full.startswith(pkg + os.sep):
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            rows.append((ct, f"{rel}:{line}({func}) cumtime={ct:.3f}s calls={ncalls}"))
    rows.sort(key=lambda r: -r[0])
    return [r[1] for r in rows[:top]]


# --- the run --------------------------------------------------------------------------------


def _numbers(seconds: float, nkeys: int, reads: int, bytes_read: int) -> dict[str, Any]:
    return {
        "seconds": num(seconds),
        "keys_per_s": rate(nkeys, seconds),
        "reads": reads,
        "bytes_read": bytes_read,
        "reads_per_1k_keys": num(reads * 1000 / nkeys) if nkeys else 0.0,
        "bytes_read_per_1k_keys": num(bytes_read * 1000 / nkeys) if nkeys else 0.0,
    }


def run(*, quick: bool = False, repeats: int = 3) -> dict[str, Any]:
    s = QUICK if quick else FULL
    with tempfile.TemporaryDirectory(prefix="morlog-bench-tag-") as tmp:
        path = os.path.join(tmp, "table")
        progress(f"tag: building a table of {s.partitions} partitions x "
                 f"{s.groups_per_partition} file groups ({s.base_rows:,} base rows, "
                 f"{s.log_blocks} log blocks x {s.records_per_block} records per slice)")
        t0 = time.perf_counter()
        gen = build_table(path, s)
        batch = make_batch(gen, s)
        setup_s = time.perf_counter() - t0
        nkeys = len(batch.keys)

        progress(f"tag: tagging {nkeys:,} keys, morlog (KeyTagger.tag)")
        morlog_s, morlog_res = best_of(
            repeats, lambda: morlog_tag(path, batch.keys, batch.partitions))
        progress(f"tag: tagging {nkeys:,} keys, bloom index baseline (every log block read)")
        base_s, base_res = best_of(
            repeats, lambda: bloom_index_baseline(path, batch.keys, batch.partitions))
        progress("tag: timing the log half of both alone")
        table = Table(path)
        slices = table.file_slices()
        by_partition = partition_batches(batch.keys, batch.partitions)
        log_s, log_part = best_of(repeats, lambda: morlog_log_part(
            path, slices, table.key_field, by_partition))
        progress("tag: profiling the morlog path once")
        profile_top = readers_profile(path, batch.keys, batch.partitions)

    morlog_answers = check_locations("morlog tag", morlog_res.locations, batch)
    base_answers = check_locations("bloom index baseline", base_res.locations, batch)
    check_agree(morlog_res.locations, base_res.locations, batch.keys)
    if log_part.confirmed != base_res.log_hits:
        raise BenchError(f"log probes confirmed {log_part.confirmed} (key, block) pairs, "
                         f"decoding every block found {base_res.log_hits}")

    st = morlog_res.stats
    morlog = _numbers(morlog_s, nkeys, st.reads, st.bytes_read)
    morlog.update({
        "stats": asdict(st),
        # the log half alone (SliceProbe per slice, as tag runs it), timed on its own
        "log_part": {"seconds": num(log_s), "reads": log_part.reads,
                     "bytes_read": log_part.bytes_read, "log_hits": log_part.confirmed},
        "answers": morlog_answers,
    })
    b = base_res
    baseline = _numbers(base_s, nkeys, b.reads, b.bytes_read)
    baseline.update({
        "stats": {"slices": b.slices, "base_footers": b.base_footers,
                  "base_candidates": b.base_candidates, "base_key_reads": b.base_key_reads,
                  "log_files": b.log_files, "log_blocks_decoded": b.log_blocks_decoded,
                  "log_keys_decoded": b.log_keys_decoded, "log_hits": b.log_hits},
        "base_part": {"seconds": num(b.base_seconds), "reads": b.base_reads,
                      "bytes_read": b.base_bytes_read},
        "log_part": {"seconds": num(b.log_seconds), "reads": b.log_reads,
                     "bytes_read": b.log_bytes_read},
        "answers": base_answers,
    })
    results: dict[str, Any] = {
        "table": {
            "slices": gen.slices,
            "base_rows": gen.base_rows,
            "log_blocks": gen.log_blocks,
            "log_records": gen.log_records,
            "log_only_keys": len(gen.log_only_keys),
            "base_bytes": gen.base_bytes,
            "log_bytes": gen.log_bytes,
        },
        "setup_seconds": num(setup_s),
        "batch": {"keys": nkeys, "update_keys": batch.update_keys,
                  "log_only_update_keys": batch.log_only_update_keys,
                  "insert_keys": nkeys - batch.update_keys},
        "morlog": morlog,
        "baseline": baseline,
        "locations_agree": True,
        "profile_top": profile_top,
    }
    ratios = {
        "tag_vs_bloom_index_baseline_speedup": ratio(base_s, morlog_s),
        "morlog_reads_over_baseline": ratio(st.reads, b.reads),
        "morlog_bytes_read_over_baseline": ratio(st.bytes_read, b.bytes_read),
        "log_part_speedup": ratio(b.log_seconds, log_s),
        "log_part_bytes_read_morlog_over_baseline": ratio(log_part.bytes_read,
                                                          b.log_bytes_read),
        # the base-file part is the same work in both: the speedup morlog could reach if its
        # log lookups cost nothing
        "speedup_bound_if_log_lookups_were_free": ratio(base_s, base_s - b.log_seconds),
    }
    goals = {
        "tag_vs_bloom_index_baseline_speedup": goal(
            ratios["tag_vs_bloom_index_baseline_speedup"], 10, ">="),
        "tag_keys_per_s": goal(morlog["keys_per_s"], 200_000, ">="),
    }
    params: dict[str, Any] = {
        **asdict(s),
        "key_kind": "UUID4 strings (36 bytes), seeded RNG",
        "table": "table version 6 MOR, base Parquet with Hudi footer (DYNAMIC_V0 bloom, "
                 f"{BLOOM_ENTRIES} entries per row, min/max key); one log per slice of "
                 "indexed Avro blocks (IndexedLogWriter defaults, append mode, fsync off), "
                 "one delta commit per block round",
        "morlog": "KeyTagger(Table(path)).tag(keys, partitions)",
        "baseline": "per slice of the key's partition: base min/max + bloom + key column, "
                    "then every log block's keys decoded (morlog.compat.recompute.block_keys)",
        "timing": "each call opens the table (timeline, listing) itself; best of repeats; "
                  "local files, warm OS page cache; setup not timed",
        "repeats": repeats,
        "quick": quick,
    }
    return make_report("tag", params, results, ratios, goals)


def plot(plt: Any, report: dict[str, Any]) -> Any:
    r = report["results"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    labels = ["morlog", "bloom index\nbaseline"]
    bar(axes[0], labels, [r["morlog"]["keys_per_s"], r["baseline"]["keys_per_s"]],
        f"tagging {r['batch']['keys']:,} keys", "keys/s")
    bar(axes[1], labels, [r["morlog"]["reads_per_1k_keys"],
                          r["baseline"]["reads_per_1k_keys"]],
        "ranged reads per 1,000 keys", "reads", fmt="{:,.1f}")
    bar(axes[2], labels, [r["morlog"]["bytes_read_per_1k_keys"] / 1024,
                          r["baseline"]["bytes_read_per_1k_keys"] / 1024],
        "bytes read per 1,000 keys", "KiB", fmt="{:,.1f}")
    t = r["table"]
    fig.suptitle(f"morlog bench tag: {t['slices']} file slices, {t['base_rows']:,} base rows, "
                 f"{t['log_blocks']:,} log blocks", fontsize=11)
    return fig
