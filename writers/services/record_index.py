"""morlog's record-level index (issue 15, spec/rli.md): building it and keeping it true.

- :func:`build` (``morlog rli build``): under the data table's writer lock, reads the key of
  every live record (one file slice at a time, in threads), writes the index table afresh
  (one base file per shard, keys sorted) and enables it in the data table's
  ``hoodie.properties`` (``morlog.record.index.enable=true``).
- :class:`RecordIndexWriter` (a :class:`~morlog.writers.core.commit.CommitHooks`): in every commit
  of a morlog writer (write client, Spark, replace operations), the commit's key changes
  (:class:`~morlog.writers.core.commit.RecordChanges`) go into the index in a delta commit of the
  same instant, completed before the data instant: inserts add entries (one indexed Parquet
  block per touched shard), deletes remove them (a delete block), updates in place write
  nothing. Compaction and log compaction change no key: they leave an empty index instant,
  so the index still covers the data timeline. A rollback of a data instant rolls back the
  index's instant of the same time.
- :func:`verify` (``morlog rli verify``): the index against the table's live keys.

The reading side (shard hash, which instants count, lookups): ``morlog.readers.record_index``.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import morlog.config as conf
from morlog.logformat import file_checksum
from morlog.logformat.errors import (
    FormatError,
    IndexServiceWarning,
    MorlogError,
    StorageError,
    UsageError,
)
from morlog.logformat.naming import LogFileName
from morlog.logformat.virtual_keys import key_array, key_columns
from morlog.readers.parallel import run_all
from morlog.readers.record_index import (
    BUILT_AS_OF_PROPERTY,
    ENABLE_PROPERTY,
    HASH,
    HASH_PROPERTY,
    MAX_SHARDS,
    SCHEMA,
    SHARDS_PROPERTY,
    DamagedIndexWarning,
    RecordIndex,
    check_shard_blocks,
    index_location,
    shard_count,
    shard_file_id,
    shard_log_blocks,
    shards_of,
)
from morlog.readers.storage import TableLocation
from morlog.readers.table import FileSlice, Table
from morlog.writers.core.commit import Commit, CommitHooks, RecordChanges, rollback_instant
from morlog.writers.core.indexed import load_slice_state
from morlog.writers.core.logwriter import Mode
from morlog.writers.core.properties import update_properties
from morlog.writers.core.store import WriteStore
from morlog.writers.core.timeline import TimelineWriter
from morlog.writers.services.base import service_lock

if TYPE_CHECKING:
    from morlog.writers.client import MorTable

DEFAULT_SHARDS = 16
#: the index table's write settings: no metadata table of its own; its services run inline
#: after every data commit (:meth:`RecordIndexWriter.committed`): log compaction of a shard
#: with 5 log blocks or more, compaction of every shard with logs after 10 delta commits,
#: and a clean keeping the two latest file slices of each shard; zstd (level 3) for its
#: Parquet base files and blocks: random keys shrink to about half (hex digits), and zstd
#: decodes them faster than snappy (bench rli: 22 instead of 37 bytes per mapping)
INDEX_OPTIONS = {
    conf.METADATA_ENABLE: "false",
    conf.PARQUET_COMPRESSION_CODEC: "zstd",
    conf.LOG_COMPACTION_INLINE: "true",
    conf.LOG_COMPACTION_BLOCKS_THRESHOLD: "5",
    conf.COMPACT_INLINE: "true",
    conf.COMPACT_MAX_DELTA_COMMITS: "10",
    conf.CLEAN_AUTOMATIC: "true",
    conf.CLEANER_POLICY: "KEEP_LATEST_FILE_VERSIONS",
    conf.CLEANER_FILE_VERSIONS_RETAINED: "2",
}
INDEX_VERSION = 6

Progress = Callable[[int, int], None]


def _entries(keys: Any, parts: Any, fids: Any, instants: Any) -> pa.Table:
    """Index rows from four string arrays (or chunked arrays)."""
    return pa.Table.from_arrays([keys.cast(pa.string()), parts.cast(pa.string()),
                                 fids.cast(pa.string()), instants.cast(pa.string())],
                                schema=SCHEMA)


def shard_pieces(t: pa.Table, shards: int) -> list[tuple[int, pa.Table]]:
    """(shard, its rows of ``t``) for every shard ``t`` has keys of."""
    return list(_by_shard(t, shards).items())


def _by_shard(t: pa.Table, shards: int) -> dict[int, pa.Table]:
    """``t``'s rows per shard of their ``key``, each sorted by key."""
    if t.num_rows == 0:
        return {}
    s = shards_of(t.column("key"), shards)
    t = t.append_column("__shard", pa.array(s, pa.int64())).sort_by(
        [("__shard", "ascending"), ("key", "ascending")])
    s = t.column("__shard").to_numpy()
    t = t.drop_columns(["__shard"])
    bounds = np.flatnonzero(np.diff(s)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [len(s)]])
    return {int(s[a]): t.slice(int(a), int(b - a)) for a, b in zip(starts, ends, strict=True)}


class RecordIndexWriter(CommitHooks):
    """Keeps the record index true in every commit and rollback (module docstring)."""

    def __init__(self, store: WriteStore, location: TableLocation,
                 index_client: Callable[[], MorTable], *, fsync: bool = True,
                 mode: Mode | None = None) -> None:
        #: the write client of the index table (``MorTable.record_index_client``)
        self.index_client = index_client
        self.store = store
        self.data_location = location
        self.location = index_location(location)
        self.fsync = fsync
        self.mode: Mode = mode or ("append" if store.can_append else "rollover")

    def _timeline(self) -> TimelineWriter:
        return TimelineWriter(self.store, self.location, fsync=self.fsync)

    def committing(self, instant: str, written: dict[str, dict[str, int]],
                   changes: Callable[[], RecordChanges] | None = None, *,
                   rewrite: bool = False, schema: str | None = None) -> None:
        if rewrite:
            self._empty_instant(instant)
            return
        if changes is None:
            raise UsageError("this write cannot tell the record index its key changes; "
                             f"disable the index ({ENABLE_PROPERTY}=false) to write this way",
                             path=self.data_location.uri)
        ins_t, del_t = changes().tables()
        mt = self.index_client()
        shards = shard_count(mt.props, mt.location.uri)
        n = ins_t.num_rows
        ins = _entries(ins_t.column("key"), ins_t.column("partition"), ins_t.column("file_id"),
                       pa.repeat(pa.scalar(instant, pa.string()), n)) if n else (
            SCHEMA.empty_table())
        dels = del_t.column("key").combine_chunks()
        if len(dels) and ins.num_rows:  # a key deleted and placed again: its new place wins
            dels = dels.filter(pc.invert(pc.is_in(dels, value_set=ins.column("key"))))
        dels = pc.unique(dels) if len(dels) else dels
        ins_by = _by_shard(ins, shards)
        del_by = _by_shard(pa.table({"key": dels}), shards) if len(dels) else {}
        work = sorted(set(ins_by) | set(del_by))
        damaged = self._damaged_shards(work)
        if damaged:
            # nothing is written to the index: it misses this data instant, so readers
            # take it as stale (spec/rli.md §5) and tag through the table's files until
            # 'morlog rli build' rebuilds it; the data commit goes on
            warnings.warn(f"morlog's record index of {self.data_location.uri} is damaged "
                          f"({damaged[0]}); it was not updated by {instant} and is stale "
                          "until rebuilt with 'morlog rli build'", DamagedIndexWarning,
                          stacklevel=3)
            return
        with Commit(self.store, self.location, mode=self.mode, operation="upsert",
                    schema=mt.commit_schema(), fsync=self.fsync, instant=instant) as c:
            slices = {s.file_id: s for s in c.table().file_slices()}
            c.start([("", shard_file_id(k)) for k in work])
            stats: dict[str, list[dict[str, Any]]] = {}
            for k in work:
                fid = shard_file_id(k)
                s = slices.get(fid)
                recs = ins_by.get(k)
                gone = del_by.get(k)
                if s is None and recs is None:
                    continue  # deletes of keys in a shard that holds nothing
                for w in mt.write_group(instant, "", fid, None if s is None else s.base_instant,
                                        recs, gone, slice_logs=s.log_files if s else ()):
                    stats.setdefault("", []).append(w.stat(self.store, self.location.path))
            c.complete(stats, {conf.STAT_RLI_INSERTED: str(ins.num_rows),
                               conf.STAT_RLI_DELETED: str(len(dels))})

    def _damaged_shards(self, work: list[int]) -> list[str]:
        """The typed errors of the shards in ``work`` whose log files do not read: what a
        write to them would load first (the slice's cumulative key index). Checked before
        the index's first byte, so that a damaged shard never fails the data commit."""
        reader = RecordIndex(Table(self.data_location))
        index = reader.table
        slices = {s.file_id: s for s in index.file_slices()}
        directory = index.slice_dir("")
        key_field = index.key_field
        out: list[str] = []
        for k in work:
            s = slices.get(shard_file_id(k))
            if s is None or not s.log_files:
                continue
            try:
                check_shard_blocks(shard_log_blocks(self.store.storage, directory,
                                                    s.log_files), self.location,
                                   reader.log_writes(s), directory)
                load_slice_state(directory, [LogFileName.parse(n) for n in s.log_files],
                                 scope=s.base_instant, key_field=key_field,
                                 storage=self.store.storage)
            except FormatError as exc:
                out.append(f"shard {k}: {type(exc).__name__}: {exc}")
        return out

    def committed(self, instant: str) -> None:
        """The data instant completed (the data table's lock is held, no index instant is
        ahead of the data): the index's inline services (:data:`INDEX_OPTIONS`). A failure
        is a warning: the data commit stands and the next commit tries again."""
        try:
            self.index_client().table_services()
        except MorlogError as exc:
            warnings.warn(f"record index services after {instant} failed: {exc.message}",
                          IndexServiceWarning, stacklevel=2)

    def latest_instant(self) -> str | None:
        from morlog.writers.core.timeline import latest_time

        try:
            return latest_time(Table(self.location))
        except UsageError:  # no index table (yet): nothing to come after
            return None

    def _empty_instant(self, instant: str) -> None:
        """A completed index instant without blocks (a data commit that moved no key)."""
        tw = self._timeline()
        t = Table(self.location)
        i = t.timeline.get(instant)
        if i is not None and i.is_completed:
            return
        meta = {"partitionToWriteStats": {}, "compacted": False,
                "extraMetadata": {}, "operationType": "UPSERT"}
        tw.write(instant, "requested", {}, "deltacommit")
        tw.write(instant, "inflight", meta, "deltacommit")
        tw.write(instant, "completed", meta, "deltacommit")

    def rolled_back(self, failed: str, rollback_instant_time: str,
                    deleted: dict[str, list[str]]) -> None:
        """The data table rolled back ``failed``: so does the index (any state)."""
        t = Table(self.location)
        inst = t.timeline.get(failed)
        if inst is None or inst.action != "deltacommit":
            return
        if inst.is_completed:
            # back to pending first: a crash from here leaves a pending index instant that
            # the next index commit rolls back (readers hide it already: the data instant
            # is not committed)
            self.store.delete(self.store.join(t.timeline.directory, inst.file_name))
            t = Table(self.location)
        rollback_instant(self.store, self.location, self._timeline(), t, failed, self.mode,
                         self.fsync)


@dataclass
class BuildResult:
    """What :func:`build` did."""

    shards: int
    entries: int
    slices: int
    built_as_of: str
    instant: str
    bytes: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"shards": self.shards, "entries": self.entries, "slices": self.slices,
                "built_as_of": self.built_as_of, "instant": self.instant,
                "bytes": self.bytes,
                "bytes_per_entry": round(self.bytes / self.entries, 2) if self.entries else None,
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()}}


def slice_entries(table: Table, s: FileSlice, as_of: str | None = None) -> pa.Table:
    """The index entries of one data file slice's live records: key, partition, file id,
    and the slice's base instant."""
    kf = table.key_field
    t = table.read_slice(s, as_of, list(key_columns(kf)))
    n = t.num_rows
    if n == 0:
        return SCHEMA.empty_table()
    keys = key_array(t, kf, path=table.path)
    return _entries(keys, pa.repeat(pa.scalar(s.partition, pa.string()), n),
                    pa.repeat(pa.scalar(s.file_id, pa.string()), n),
                    pa.repeat(pa.scalar(s.base_instant, pa.string()), n))


def table_entries(table: Table, as_of: str | None = None, *, threads: int | None = None,
                  progress: Progress | None = None) -> tuple[pa.Table, int]:
    """Every live key of ``table`` with its file group (and the number of slices read)."""
    slices = table.file_slices(as_of)
    done = [0]

    def one(s: FileSlice) -> pa.Table:
        out = slice_entries(table, s, as_of)
        done[0] += 1
        if progress is not None:
            progress(done[0], len(slices))
        return out

    n = threads if threads is not None else 2
    parts = run_all(one, slices, n)
    return pa.concat_tables([SCHEMA.empty_table(), *parts]), len(slices)


#: what writes the shards of a build: (the data table, the instant it is read as of, the
#: shard count, the index table, the build's index instant) -> (write stats of the shard
#: files, entries, data file slices read); local threads by default, Spark tasks in
#: ``morlog.spark.build_record_index``
BuildRunner = Callable[[Table, str | None, int, Any, str], tuple[list[dict[str, Any]], int, int]]


def write_shard(idx: Any, instant: str, shard: int, pieces: list[pa.Table], *,
                retry: bool = False) -> tuple[list[dict[str, Any]], int]:
    """Write shard ``shard`` of a build: ``pieces`` of its entries, sorted by key into one
    base file of the index table ``idx`` at ``instant``; (its write stats, entries). A key
    twice is a :class:`UsageError` (every copy of a key hashes to the same shard, so this
    checks uniqueness across the table). ``retry``: first remove what an earlier attempt
    of this shard left (files of this shard and instant: no reader counts them)."""
    t = pa.concat_tables([SCHEMA.empty_table(), *pieces]).sort_by("key")
    if t.num_rows == 0:
        return [], 0
    distinct = pc.count_distinct(t.column("key")).as_py()
    if distinct != t.num_rows:
        raise UsageError("the record index needs unique keys across the table (a global "
                         f"index): {t.num_rows - distinct} key(s) live in more than one "
                         "file group", path=idx.location.uri)
    fid = shard_file_id(shard)
    if retry:
        from morlog.writers.core.timeline import instant_files

        d = idx.location.path
        for name in instant_files(idx.store, d, instant):
            if name.startswith(fid + "_") or name.startswith("." + fid + "_"):
                idx.store.delete(idx.store.join(d, name))
    writes = idx.write_group(instant, "", fid, None, t, None)
    return [w.stat(idx.store, idx.location.path) for w in writes], t.num_rows


def _local_runner(threads: int | None, progress: Progress | None) -> BuildRunner:
    def run(table: Table, as_of: str | None, shards: int, idx: Any, instant: str
            ) -> tuple[list[dict[str, Any]], int, int]:
        entries, nslices = table_entries(table, as_of, threads=threads, progress=progress)
        by = _by_shard(entries, shards)
        out = run_all(lambda k: write_shard(idx, instant, k, [by[k]]), sorted(by),
                      idx.thread_count())
        return [w for ws, _ in out for w in ws], sum(n for _, n in out), nslices
    return run


def build(mt: MorTable, shards: int = DEFAULT_SHARDS, *, threads: int | None = None,
          progress: Progress | None = None, runner: BuildRunner | None = None) -> BuildResult:
    """Build (or rebuild) the record index of the table ``mt`` (a
    :class:`~morlog.writers.client.MorTable`) and enable it (module docstring).
    ``runner``: who reads the data slices and writes the shards (default: this process,
    ``threads`` threads, ``progress(done, total)`` per data file slice)."""
    if not isinstance(shards, int) or not 0 < shards <= MAX_SHARDS:
        raise UsageError("the record index's shard count", expected=f"1..{MAX_SHARDS}",
                         actual=shards)
    run = runner or _local_runner(threads, progress)
    t0 = time.perf_counter()
    with service_lock(mt) as table:
        store, loc = mt.store, mt.location
        props = dict(table.config.props)
        if props.get(ENABLE_PROPERTY) is not None:  # off while it is rebuilt
            props.pop(ENABLE_PROPERTY)
            update_properties(store, loc, props, fsync=mt.config.fsync)
        root = index_location(loc)
        store.remove_tree(root.path)
        table = Table(loc)
        done = table.timeline.completed()
        as_of = done[-1].requested if done else ""
        type(mt).create(root, SCHEMA, key_field="key", name="morlog_record_index",
                        config=type(mt.config)(fsync=mt.config.fsync,
                                           hoodie_options=dict(INDEX_OPTIONS)),
                        table_version=INDEX_VERSION,
                        table_properties={conf.POPULATE_META_FIELDS: "false",
                                          SHARDS_PROPERTY: str(shards), HASH_PROPERTY: HASH,
                                          file_checksum.PROPERTY:
                                              file_checksum.PROPERTY_VALUE,
                                          BUILT_AS_OF_PROPERTY: as_of})
        idx = mt.record_index_client()
        with idx.commit("bulk_insert") as c:
            c.start([("", shard_file_id(k)) for k in range(shards)])
            writes, entries, nslices = run(table, as_of or None, shards, idx, c.instant)
            t1 = time.perf_counter()
            c.complete({"": writes} if writes else {},
                       {conf.STAT_RLI_INSERTED: str(entries)})
            instant = c.instant
        props = dict(Table(loc).config.props)
        props[ENABLE_PROPERTY] = "true"
        update_properties(store, loc, props, fsync=mt.config.fsync)
    size = sum(store.size(store.join(root.path, w["path"])) for w in writes)
    return BuildResult(shards, entries, nslices, as_of, instant, size,
                       {"read_and_write": t1 - t0, "total": time.perf_counter() - t0})


@dataclass
class VerifyResult:
    """The index against the table: keys the index lacks, keys it holds that the table
    does not, keys it places in the wrong file group."""

    entries: int
    keys: int
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    misplaced: list[dict[str, Any]] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    #: shards whose files do not read: the typed error of each (its text names the file);
    #: their keys are not compared
    damaged: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.misplaced or self.stale
                    or self.damaged)

    def as_dict(self, limit: int = 100) -> dict[str, Any]:
        return {"ok": self.ok, "entries": self.entries, "keys": self.keys,
                "missing": len(self.missing), "extra": len(self.extra),
                "misplaced": len(self.misplaced), "stale_instants": self.stale[:limit],
                "damaged": self.damaged[:limit],
                "examples": {"missing": self.missing[:limit], "extra": self.extra[:limit],
                             "misplaced": self.misplaced[:limit]}}


def verify(table: Table, *, threads: int | None = None) -> VerifyResult:
    """Compare the index of ``table`` with the table's live keys (as of the latest
    instant)."""
    index = RecordIndex(table)
    slices = index.slices()

    def one(k: int) -> pa.Table | str:
        try:
            return index.read_shard(slices[k])
        except (FormatError, StorageError) as exc:
            return f"shard {k}: {type(exc).__name__}: {exc}"

    shards = sorted(slices)
    got = run_all(one, shards, threads if threads is not None else 2)
    damaged = [x for x in got if isinstance(x, str)]
    bad = [k for k, x in zip(shards, got, strict=True) if isinstance(x, str)]
    have = pa.concat_tables([SCHEMA.empty_table(),
                             *[x for x in got if not isinstance(x, str)]]).sort_by("key")
    want, _ = table_entries(table, threads=threads)
    if bad:  # the keys of damaged shards are not compared
        keep = ~np.isin(shards_of(want.column("key"), index.shards), bad)
        want = want.filter(pa.array(keep))
    j = want.select(["key", "partition", "file_id"]).join(
        have.select(["key", "partition", "file_id"]).rename_columns(
            ["key", "i_partition", "i_file_id"]), "key", join_type="full outer")
    missing = j.filter(pc.is_null(j.column("i_file_id")))
    extra = j.filter(pc.is_null(j.column("file_id")))
    both = j.filter(pc.and_(pc.is_valid(j.column("file_id")),
                            pc.is_valid(j.column("i_file_id"))))
    wrong = both.filter(pc.or_(pc.not_equal(both.column("partition"),
                                            both.column("i_partition")),
                               pc.not_equal(both.column("file_id"),
                                            both.column("i_file_id"))))
    return VerifyResult(
        have.num_rows, want.num_rows,
        sorted(missing.column("key").to_pylist()), sorted(extra.column("key").to_pylist()),
        sorted(wrong.to_pylist(), key=lambda r: r["key"]), index.missing_instants(),
        damaged)


__all__ = ["BuildResult", "BuildRunner", "DEFAULT_SHARDS", "INDEX_OPTIONS", "INDEX_VERSION",
           "IndexServiceWarning", "Progress", "RecordIndexWriter", "VerifyResult", "build",
           "shard_pieces", "slice_entries", "table_entries", "verify",
           "write_shard"]
