"""Writes whose rows never meet in one process: the planning, task and commit steps of a
distributed write (``df.write.format("morlog")``; design: ``docs/design/spark-writes.md``,
bytes: spec/table.md §7.4-§7.6).

A distributed engine hands each task an arbitrary slice of the batch and, for Python data
sources, cannot be asked to cluster it by key or file group (Spark's Python Data Source API
has no ``RequiresDistributionAndOrdering``), and the commit step runs without the engine.
So the write is *optimistic*, as Hudi's optimistic concurrency control is:

- :func:`plan_write` (driver): takes the instant ``I`` of the write, requests it on the
  timeline with a Hudi-style heartbeat (as Hudi's ``startCommit``: a job that dies leaves a
  pending instant the next writer rolls back once the heartbeat expired, never files the
  timeline does not know) and notes the timeline it saw (the snapshot). No lock is held
  while tasks run; tasks refresh the heartbeat.
- :func:`write_task` (each task, any number, in any process): reads its rows in chunks of at
  most ``chunk_rows`` rows; each chunk is checked, keyed, combined and tagged as the write
  client does (``MorTable._plan``) against the table as the task finds it, and written by
  the client's own group writer: updates and deletes appended to **log files of the task's
  own** in the existing file groups (Hudi's write token ``partition-stage-taskAttemptId`` in their
  names, new log versions: never a file another task writes), new keys into **new file
  groups of the task's own**. Every data file is marked before it is created (Hudi's direct
  markers, spec §7.4). For the keys it inserted the task writes a key fingerprint file
  (§7.5) and a key file (§7.6) with their file group and ordering values. It returns a
  :class:`TaskReport`: write stats and file names, never rows.
- :func:`commit_write` (driver, one process, no engine): under the writer lock, the
  conflict check (an instant that appeared after the snapshot and wrote to the same file
  groups, or inserted into the same partitions, aborts the write with
  :class:`ConcurrentWriterError`); requested and inflight; the markers reconciled (every
  marked file no successful task reported, a failed or speculative attempt's, deleted);
  keys two tasks (or two chunks) both inserted found by merging the fingerprint files one
  hash range at a time, read back from the key files only for those hashes, and every copy
  but the one Hudi's combine rule keeps removed by rewriting its new file group without it
  (a delete block would leave the key in the group's indexes, and the next writer would tag
  it there too); then the commit completes as the client's do, the metadata
  table and the record indexes updated from the write stats and the key files. Memory on
  the driver: O(files + tasks) and one hash range of every fingerprint file, plus one new
  file's rows for each file holding a copy of a key another task inserted too (none when
  the input is clustered by key or repeats no key); the record indexes, when kept, read the
  key files (O(changed keys)).

Without a shuffle: inserts are routed into small file groups by key hash, as far as each
task claims room there (exclusive slot files; :class:`_TaskTable`), the rest into new file
groups of the task; a file group updated by several tasks gets one log file per task.
Clustering the input by key (``df.repartition(key)``) gives one task per key; compaction and
log compaction fold the files.
"""

from __future__ import annotations

import dataclasses
import json
import struct
import uuid
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from morlog.logformat.arrow_sort import sort_indices_nulls_first
from morlog.logformat.avroschema import avro_to_arrow_schema
from morlog.logformat.blocks import META_FIELDS, RECORD_KEY_FIELD
from morlog.logformat.constants import BlockType
from morlog.logformat.errors import (
    ChecksumError,
    ConcurrentWriterError,
    ContentError,
    MorlogError,
    UsageError,
)
from morlog.logformat.fingerprints import (
    DEFAULT_BUCKET_BITS,
    FingerprintFile,
    encode_fingerprints,
    find_shared,
)
from morlog.logformat.keybatch import KeyBatch
from morlog.logformat.naming import BaseFileName, LogFileName
from morlog.logformat.xxh64 import xxh64_batch
from morlog.readers.base_files import BaseFileReader, table_base_format
from morlog.readers.base_keys import SUFFIX as BASE_KEYS_SUFFIX
from morlog.readers.base_keys import base_keys_dir
from morlog.readers.cache import CachedSource
from morlog.readers.logfile import LogFileReader
from morlog.readers.mdt.record_index import global_record_index
from morlog.readers.record_index import enabled
from morlog.readers.storage import TableLocation
from morlog.readers.table import FileSlice, Table
from morlog.readers.timeline import Instant
from morlog.writers.client import MorTable
from morlog.writers.core.commit import CommitResult, RecordChanges
from morlog.writers.core.markers import create_marker, delete_markers, list_markers
from morlog.writers.core.store import WriteStore
from morlog.writers.core.tagging import global_index
from morlog.writers.core.timeline import (
    OPTIMISTIC_HEARTBEAT,
    TimelineWriter,
    heartbeat_path,
    latest_time,
    new_instant,
    timeline_utc,
)
from morlog.writers.mdt.plan import apply_drops
from morlog.writers.options import WriteConfig

#: the operations a distributed write runs (the replace operations stage their rows)
OPERATIONS = ("upsert", "insert", "delete")
#: the data-changing actions the conflict check looks at
_DATA_ACTIONS = frozenset({"commit", "deltacommit", "replacecommit", "compaction",
                           "logcompaction", "clustering"})
#: table services: pending ones conflict by their plans' file groups
_SERVICE_ACTIONS = frozenset({"compaction", "logcompaction", "clustering", "replacecommit"})
#: rows per record batch of a key file (the commit reads back whole batches)
_KEY_BATCH_ROWS = 65_536


@dataclass(frozen=True)
class WritePlan:
    """What every task of one distributed write shares (small; shipped to the tasks)."""

    location: TableLocation
    config: WriteConfig
    operation: str
    #: the instant of the write (nothing of it is on the timeline until the commit)
    instant: str
    #: (requested time, state) of every instant the planning saw: the snapshot
    seen: frozenset[tuple[str, str]]
    #: at most this many rows of a task are held at once
    chunk_rows: int
    #: partition -> the small file groups inserts may be routed into: (file id, rows it
    #: takes at the table's record size), smallest first, as the client's routing sees them
    small: dict[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    #: the table's index is global (:func:`~morlog.writers.core.tagging.global_index`):
    #: copies of a key combine by key alone, else by key and partition path (tasks and
    #: commit decide alike, from the plan's snapshot)
    global_index: bool = False
    #: bytes per record of the table (Hudi's estimate, ``MorTable.record_size``): the
    #: planned insert bins' sizes (:func:`insert_bins`)
    record_size: int = 0

    @property
    def stage(self) -> str:
        """Where tasks put their key fingerprint and key files (spec/table.md §7.6)."""
        return self.location.join(".hoodie", ".temp", f"spark-{self.instant}")


@dataclass
class TaskReport:
    """What one successful task attempt tells the commit: no rows."""

    token: str
    #: partition -> Hudi write stats of every file the attempt wrote
    stats: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: existing file groups it appended to (updates, deletes)
    groups: set[tuple[str, str]] = field(default_factory=set)
    #: its new file groups
    new_groups: set[tuple[str, str]] = field(default_factory=set)
    #: partitions it inserted keys into (routed into small groups or in new groups)
    insert_parts: set[str] = field(default_factory=set)
    #: key fingerprint and key files (relative to the stage), one pair per chunk
    chunks: list[str] = field(default_factory=list)
    inserts: int = 0
    #: of which routed into small file groups
    routed: int = 0
    updates: int = 0
    deletes: int = 0
    files_created: int = 0
    #: the Avro write schema the attempt's rows evolved the table's to (new columns, wider
    #: types: spec/table.md §7.7), JSON; None: the table's schema as it was
    schema: str | None = None

    @property
    def files(self) -> set[tuple[str, str]]:
        """(partition, file name) of every data file the attempt wrote."""
        out = set()
        for part, stats in self.stats.items():
            for s in stats:
                out.add((part, str(s["path"]).rsplit("/", 1)[-1]))
        return out


def plan_write(location: TableLocation, config: WriteConfig, operation: str,
               chunk_rows: int) -> WritePlan:
    """The plan of a distributed write into the existing table at ``location``: its
    instant and the snapshot the commit checks conflicts against. Writes the instant's
    heartbeat (spec/table.md §9.1), so that other writers and ``morlog repair`` see a live
    writer; nothing else."""
    if operation not in OPERATIONS:
        raise UsageError("a distributed write runs upsert, insert or delete",
                         path=location.uri, expected=OPERATIONS, actual=operation)
    mt = MorTable(location, config)
    with mt.writer_lock():
        # the instant is picked and requested under the lock (no other writer takes it)
        view = mt.table()
        utc = timeline_utc(view.config.props)
        instant = new_instant(latest_time(view), utc=utc)
        seen = frozenset((i.requested, i.state) for i in view.timeline.instants)
        # an optimistic writer's heartbeat first (other writers go on beside the instant
        # and roll it back only once it expires, spec/table.md §9.1), then the requested, as Hudi's
        # startCommit: a job that dies leaves a pending instant the next writer rolls back,
        # never files of an instant the timeline does not know
        beat = heartbeat_path(mt.store, location, instant)
        mt.store.makedirs(beat.rsplit("/", 1)[0])
        mt.store.create(beat, OPTIMISTIC_HEARTBEAT, sync=False)
        TimelineWriter(mt.store, location, layout=view.timeline.layout,
                       fsync=config.fsync, utc=utc).write(instant, "requested", None)
    small = _small_groups(mt, view) if operation != "delete" else {}
    return WritePlan(location, config, operation, instant, seen, max(1, chunk_rows), small,
                     global_index(view), mt.record_size(view))


def _small_groups(mt: MorTable, view: Table) -> dict[str, tuple[tuple[str, int], ...]]:
    """The file groups below ``hoodie.parquet.small.file.limit`` per partition and how many
    rows each takes (up to ``hoodie.parquet.max.file.size`` at the table's record size), as
    the client routes (``MorTable.insert_bins``); decided once, on the driver, so that every
    task routes a key to the same group. Groups under a pending compaction or clustering
    take none."""
    cfg = mt.config
    if not cfg.route_inserts:
        return {}
    record_size = mt.record_size(view)
    pending = view.timeline.pending_services()
    out: dict[str, list[tuple[int, str, int]]] = {}
    for sl in view.file_slices():
        key = (sl.partition, sl.file_id)
        if key in pending.compaction or key in pending.clustering:
            continue
        size = mt.slice_size(sl)
        room = (cfg.max_file_size - size) // max(1, record_size)
        if size < cfg.small_file_limit and room > 0:
            out.setdefault(sl.partition, []).append((size, sl.file_id, int(room)))
    return {p: tuple((f, n) for _, f, n in sorted(groups)) for p, groups in out.items()}


def beat(plan: WritePlan, store: WriteStore) -> None:
    """Refresh the write's heartbeat (each task does, per chunk), where the store can
    replace a file in place."""
    if store.can_replace:
        store.replace(heartbeat_path(store, plan.location, plan.instant), OPTIMISTIC_HEARTBEAT,
                      sync=False)


class _MarkingStore:
    """A write store that marks every data file (base or log file) before creating it
    (spec/table.md §7.4); everything else passes through."""

    def __init__(self, inner: WriteStore, location: TableLocation, instant: str) -> None:
        self._inner = inner
        self._location = location
        self._instant = instant

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def create(self, path: str, data: bytes, *, sync: bool = True) -> bool:
        name = self._inner.basename(path)
        io = ("CREATE" if BaseFileName.matches(name)
              else "APPEND" if LogFileName.matches(name) else None)
        if io is not None:
            rel = self._inner.relpath(path, self._location.path)
            part = rel.rsplit("/", 1)[0] if "/" in rel else ""
            create_marker(self._inner, self._location, self._instant, part, name, io)
        return self._inner.create(path, data, sync=sync)


#: a small file group's room is claimed in this many slots at most (spec/table.md §7.6)
CLAIM_SLOTS = 16


class _TaskView(Table):
    """The table as a task attempt found it, its latest file slices listed once: the
    tagging, the routing and the group writes of a chunk (and, table version 8 and up,
    every chunk of the task) share one listing of the partitions instead of one each."""

    _listed: list[FileSlice] | None = None

    def file_slices(self, as_of: str | None = None, partition: str | None = None
                    ) -> list[FileSlice]:
        if as_of is not None:
            return super().file_slices(as_of, partition)
        if self._listed is None:
            self._listed = super().file_slices()
        if partition is not None:
            return [s for s in self._listed if s.partition == partition]
        return list(self._listed)


class _TaskTable(MorTable):
    """The write client of one task attempt: the attempt's write token in every file name,
    a new log file per write (never appending to a file another task may write), every data
    file marked; inserts routed as below. :meth:`table` is the attempt's view
    (:class:`_TaskView`), opened once and renewed by :meth:`refresh`."""

    _view: _TaskView | None = None

    def __init__(self, plan: WritePlan, token: str) -> None:
        super().__init__(plan.location, dataclasses.replace(plan.config, route_inserts=False,
                                                            mode="rollover"))
        self.plan = plan
        self.write_token = token
        self.store = _MarkingStore(self.store, plan.location, plan.instant)  # type: ignore[assignment]

    def table(self) -> Table:
        if self._view is None:
            self._view = _TaskView(self.location)
        return self._view

    def refresh(self) -> None:
        """The next :meth:`table` lists the table again. Table version 6 names a slice's
        log files after its base instant, so a slice lists the task's own uncommitted log
        files too: each chunk sees those of the chunks before it, as the client's next
        write would. From version 8 a slice lists committed log files only, and one view
        serves every chunk."""
        if self.version < 8:
            self._view = None

    def route(self, part: str, rows: list[int], record_size: int,
              slices: dict[tuple[str, str], FileSlice], plan: Any,
              result: CommitResult) -> None:
        """Inserts of partition ``part``: each key to the small file group its hash picks
        among the plan's (the same group in every task, so copies of a key inserted by two
        tasks meet in one group), as far as the task claims room there (exclusive slot
        files: the tasks together never take more than the group's room); the rest into new
        file groups of the task's own."""
        small = self.plan.small.get(part, ())
        left = np.asarray(rows, dtype=np.int64)
        if small and left.size:
            keys = plan.keys.take(pa.array(left)).cast(pa.string())
            which = xxh64_batch(KeyBatch.of(keys)) % np.uint64(len(small))
            rest = []
            for i, (fid, room) in enumerate(small):
                mine = left[which == i]
                if not mine.size:
                    continue
                got = self._claim(part, fid, room, int(mine.size))
                take = mine[:got].tolist()
                rest.append(mine[got:])
                if take:
                    plan.updates.setdefault((part, fid), []).extend(take)
                    plan.routed.setdefault((part, fid), []).extend(take)
                    result.inserts_routed_to_existing += len(take)
            left = np.sort(np.concatenate(rest)) if rest else left[:0]
        if left.size:
            super().route(part, left.tolist(), record_size, slices, plan, result)

    def _claim(self, part: str, fid: str, room: int, n: int) -> int:
        """How many of ``n`` inserts this task may route into small group ``fid``: the rows
        of the slots of its room it could claim (slot ``i`` holds ``min(s, room - i*s)``
        rows, ``s = ceil(room / CLAIM_SLOTS)``: the slots together hold exactly the room)."""
        slot = -(-room // CLAIM_SLOTS)
        slots = -(-room // slot) if room > 0 else 0
        st = self.store
        where = st.join(self.plan.stage, "claims", *(part.split("/") if part else []))
        st.makedirs(where)
        got = 0
        for i in range(slots):
            if got >= n:
                break
            if st.create(st.join(where, f"{fid}.{i}"), self.write_token.encode(), sync=False):
                got += min(slot, room - i * slot)
        return min(n, got)


def task_table(plan: WritePlan, token: str) -> MorTable:
    """The write client of one task attempt (:class:`_TaskTable`)."""
    return _TaskTable(plan, token)


def write_task(plan: WritePlan, batches: Iterable[pa.RecordBatch], token: str) -> TaskReport:
    """Write one task's rows (any slice of the batch) for ``plan``; ``token``: the attempt's
    Hudi write token (``partitionId-stageId-taskAttemptId``), distinct per attempt."""
    mt = _TaskTable(plan, token)
    _discard_earlier_attempts(mt, plan, token)
    report = TaskReport(token)
    before = mt.avro_schema
    for n, chunk in enumerate(_chunks(batches, plan.chunk_rows)):
        beat(plan, mt.store)
        if n:
            mt.refresh()
        _write_chunk(mt, mt.table(), plan, chunk, report, f"{token}-{n}")
    if mt.avro_schema is not before:
        report.schema = json.dumps(mt.avro_schema, separators=(",", ":"))
    return report


def _discard_earlier_attempts(mt: MorTable, plan: WritePlan, token: str) -> None:
    """Delete the data files an earlier, failed attempt of the same task (the same
    partition and stage in its write token) left: the commit would remove them, but until
    then a table version 6 slice lists them (its log files are named after the slice), and
    this attempt's log files must not continue their index chains (spec/index.md §6.7).
    Attempts of one task never run at once (speculation is off)."""
    mine = token.split("-")
    if len(mine) != 3:
        return
    for m in list_markers(mt.store, plan.location, plan.instant):
        name = m.file_name
        other = (LogFileName.parse(name).write_token if LogFileName.matches(name)
                 else BaseFileName.parse(name).write_token if BaseFileName.matches(name)
                 else None)
        if other and other != token and other.split("-")[:2] == mine[:2]:
            _delete_data_file(mt, plan.location, m.partition, name)


def _adopt_schema(mt: MorTable, reports: list[TaskReport]) -> None:
    """The commit's client takes the schema the tasks' rows evolved the table's to (every
    task saw the same batch schema; each evolution is checked again, by Hudi's rules)."""
    for r in reports:
        if r.schema is not None:
            mt.evolve_schema(avro_to_arrow_schema(r.schema))


def _chunks(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    held: list[pa.RecordBatch] = []
    count = 0
    for b in batches:
        while b.num_rows:
            take = min(b.num_rows, rows - count)
            held.append(b.slice(0, take))
            b = b.slice(take)
            count += take
            if count >= rows:
                yield pa.Table.from_batches(held)
                held, count = [], 0
    if count:
        yield pa.Table.from_batches(held)


def _write_chunk(mt: MorTable, view: Table, plan: WritePlan, chunk: pa.Table,
                 report: TaskReport, name: str) -> None:
    op = plan.operation
    chunk = chunk.drop_columns([c for c in chunk.column_names if c in META_FIELDS])
    data = mt.validate(chunk, op)
    keys, parts = mt.keys_of(data)
    if op != "delete":
        data, keys, parts = mt.combine_duplicates(data, keys, parts,
                                                  by_partition=not plan.global_index)
    result = CommitResult(plan.instant, op)
    p = mt.plan_batch(view, data, keys, parts, op, result)
    _execute_chunk(mt, plan, p, result, data, keys, report, name)


def _execute_chunk(mt: MorTable, plan: WritePlan, p: Any, result: CommitResult,
                   data: pa.Table, keys: pa.Array, report: TaskReport, name: str) -> None:
    """Write a chunk's plan ``p`` and add what it wrote to ``report`` (with the chunk's key
    and fingerprint files, named ``name``, when it inserted or deleted keys)."""
    stats = mt.execute_plan(p, plan.instant, result)
    for part, s in stats.items():
        report.stats.setdefault(part, []).extend(s)
    report.groups |= {g for g in [*p.updates, *p.deletes]}
    report.new_groups |= {(pt, f) for pt, f, _ in p.new_groups}
    report.insert_parts |= {pt for pt, _ in p.routed} | {pt for pt, _, _ in p.new_groups}
    report.inserts += result.inserts
    report.routed += result.inserts_routed_to_existing
    report.updates += result.updates
    report.deletes += result.deletes
    report.files_created += len(result.files_created)
    ins, dels = p.record_changes().tables()
    if ins.num_rows or dels.num_rows:
        _write_keys(mt, plan, name, ins, dels, data, p, keys)
        report.chunks.append(name)


#: the key file's columns (spec/table.md §7.6); ordering values follow as ``o0``, ``o1``...
KEY_COLUMNS = ("key", "partition", "file_id", "deleted")


def _write_keys(mt: MorTable, plan: WritePlan, name: str, ins: pa.Table, dels: pa.Table,
                data: pa.Table, p: Any, keys: pa.Array) -> None:
    """The chunk's key file (inserted rows first, in fingerprint row order, then the keys it
    deleted) and the fingerprint file of its inserted keys."""
    n_ins = ins.num_rows
    cols: dict[str, pa.Array] = {
        "key": pa.concat_arrays([ins.column("key").combine_chunks().cast(pa.string()),
                                 dels.column("key").combine_chunks().cast(pa.string())]),
        "partition": pa.concat_arrays([ins.column("partition").combine_chunks(),
                                       dels.column("partition").combine_chunks()]),
        "file_id": pa.concat_arrays([ins.column("file_id").combine_chunks(),
                                     pa.nulls(dels.num_rows, pa.string())]),
        "deleted": pa.concat_arrays([pa.repeat(pa.scalar(False), n_ins),
                                     pa.repeat(pa.scalar(True), dels.num_rows)]),
    }
    # the ordering values of the inserted rows, in the same order as record_changes lists
    # them (inserts routed into small file groups, then the new groups' rows)
    rows = [r for rs in p.routed.values() for r in rs]
    rows += [r for _, _, rs in p.new_groups for r in rs]
    if op_orders := [f for f in mt.ordering_fields if f in data.column_names]:
        idx = pa.array(rows, pa.int64())
        for j, f in enumerate(op_orders):
            col = data.column(f).combine_chunks().take(idx)
            cols[f"o{j}"] = pa.concat_arrays([col, pa.nulls(dels.num_rows, col.type)])
    table = pa.table(cols)
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as w:
        w.write_table(table, max_chunksize=_KEY_BATCH_ROWS)
    st = mt.store
    st.makedirs(plan.stage)
    _publish(st, st.join(plan.stage, f"{name}.keys"), seal_keys(sink.getvalue().to_pybytes()))
    if n_ins:
        # of what identifies a copy: its key, or its key and partition path (_ident)
        ident = _ident(ins.column("key").combine_chunks(),
                       ins.column("partition").combine_chunks(), not plan.global_index)
        hashes = xxh64_batch(KeyBatch.of(ident))
        fp = encode_fingerprints(np.asarray(hashes, dtype=np.uint64),
                                 np.arange(n_ins, dtype=np.uint32), bits=DEFAULT_BUCKET_BITS)
        _publish(st, st.join(plan.stage, f"{name}.fp"), fp)


def _publish(st: WriteStore, path: str, data: bytes) -> None:
    st.delete(path)  # a retried attempt of the same token: never, but harmless
    if not st.create(path, data, sync=False):
        raise UsageError("a task's key file exists already", path=path)


# --- tagged and routed rows (Spark's distributed upsert) ------------------------------------

#: the columns of a routed row (spec/table.md §7.9): its partition path, file group, record
#: key, and whether its group is new, it is an insert, it is a delete
ROUTE_PART, ROUTE_FID, ROUTE_KEY = "__morlog_part", "__morlog_fid", "__morlog_key"
ROUTE_NEW, ROUTE_INS, ROUTE_DEL = "__morlog_new", "__morlog_insert", "__morlog_delete"
#: every helper column of a tagged or routed row starts so (dropped before writing)
ROUTE_PREFIX = "__morlog_"
_NEW_GROUP_IDS = uuid.UUID("6d6f726c-6f67-5370-8172-6b2d67726f75")


def insert_bins(plan: WritePlan, part: str, count: int) -> list[tuple[str, int, bool]]:
    """Where ``count`` inserts of partition ``part`` go: (file id, how many, new group?), as
    ``MorTable.insert_bins`` plans them (the plan's small file groups first, smallest
    first, each up to its room; then new groups of ``hoodie.parquet.max.file.size`` at the
    plan's record size). A pure function of the plan: every task that computes it gets the
    same bins, new groups' ids included (UUID 5 of the instant, partition and bin)."""
    bins: list[tuple[str, int, bool]] = []
    left = count
    for fid, room in plan.small.get(part, ()):
        if left <= 0:
            break
        take = min(left, room)
        if take > 0:
            bins.append((fid, take, False))
            left -= take
    per_group = max(1, plan.config.max_file_size // max(1, plan.record_size))
    i = 0
    while left > 0:
        n = min(left, per_group)
        name = uuid.uuid5(_NEW_GROUP_IDS, f"{plan.instant}/{part}/{i}")
        bins.append((f"{name}-0", n, True))
        left -= n
        i += 1
    return bins


def _counts_dir(plan: WritePlan) -> str:
    return plan.location.join(".hoodie", ".temp", f"spark-{plan.instant}", "counts")


def publish_insert_counts(plan: WritePlan, task: str, counts: dict[str, int]) -> None:
    """A tagging task's count of its new keys per partition (spec/table.md §7.9), named
    after its task and published whole, once: a retried attempt of the task counts the same
    rows, and a file that exists is kept (never deleted and written again: a routing task
    of an earlier stage attempt may be reading it)."""
    mt = MorTable(plan.location, plan.config)
    st = mt.store
    where = _counts_dir(plan)
    st.makedirs(where)
    st.create(st.join(where, f"{task}.json"), json.dumps(counts, sort_keys=True).encode(),
              sync=False)


def insert_counts(plan: WritePlan) -> dict[str, int]:
    """Every tagging task's insert counts, summed per partition (read once every tagging
    task finished: by the tasks of the next stage, or the driver after the job)."""
    st = MorTable(plan.location, plan.config).store
    where = _counts_dir(plan)
    out: dict[str, int] = {}
    for name in sorted(st.listdir(where)):  # [] when no task had new keys
        path = st.join(where, name)
        try:
            got = json.loads(st.read(path))
            items = [(str(p), int(n)) for p, n in got.items()]
        except (ValueError, AttributeError, TypeError) as exc:
            raise ContentError(f"a tagging task's insert counts do not read: {exc}",
                               path=path) from exc
        for part, n in items:
            out[part] = out.get(part, 0) + n
    return out


def _routed_chunks(batches: Iterable[pa.RecordBatch], rows: int, whole_new: bool
                   ) -> Iterator[pa.Table]:
    """A write task's rows (sorted by file group) in chunks of about ``rows`` rows; with
    ``whole_new`` a new file group's rows (one base file, at most one file's worth by its
    bin) are never split."""
    held: list[pa.RecordBatch] = []
    count = 0
    whole: str | None = None  # the new group being held whole

    for b in batches:
        if not b.num_rows:
            continue
        fids = b.column(ROUTE_FID)
        if fids.null_count:
            raise UsageError("a row reached a write task without a file group")
        codes = fids.dictionary_encode().indices.to_numpy(zero_copy_only=False)
        cuts = [0, *(np.flatnonzero(np.diff(codes)) + 1).tolist(), b.num_rows]
        for a, e in zip(cuts[:-1], cuts[1:], strict=True):
            run = b.slice(a, e - a)
            fid = fids[a].as_py()
            if whole is not None and fid != whole:
                whole = None
            if whole_new and run.column(ROUTE_NEW)[0].as_py():
                if whole is None and count >= rows:
                    yield pa.Table.from_batches(held)
                    held, count = [], 0
                held.append(run)
                count += run.num_rows
                whole = fid
                continue
            while run.num_rows:
                if count >= rows:
                    yield pa.Table.from_batches(held)
                    held, count = [], 0
                take = min(run.num_rows, rows - count)
                held.append(run.slice(0, take))
                run = run.slice(take)
                count += take
    if held:
        yield pa.Table.from_batches(held)


def write_routed_task(plan: WritePlan, batches: Iterable[pa.RecordBatch], token: str,
                      hook: Any = None) -> TaskReport:
    """Write one task's routed rows (spec/table.md §7.9: the ``ROUTE_*`` columns, sorted by
    file group; a file group's rows all in this task, copies of a key combined) for
    ``plan``, in chunks of at most ``plan.chunk_rows`` rows; ``token``: the attempt's write
    token. ``hook`` (fault-injection tests) runs after each chunk with each file id it
    wrote."""
    mt = _TaskTable(plan, token)
    _discard_earlier_attempts(mt, plan, token)
    report = TaskReport(token)
    before = mt.avro_schema
    op = plan.operation
    whole = op != "delete" and plan.config.new_groups == "base"
    for n, chunk in enumerate(_routed_chunks(batches, plan.chunk_rows, whole)):
        beat(plan, mt.store)
        if n:
            mt.refresh()
        data = chunk.select([c for c in chunk.column_names
                             if not c.startswith(ROUTE_PREFIX) and c not in META_FIELDS])
        data = mt.validate(data, op)
        keys = chunk.column(ROUTE_KEY).combine_chunks().cast(pa.string())
        result = CommitResult(plan.instant, op)
        p = mt.plan_routed(mt.table(), data, keys, chunk.column(ROUTE_PART).combine_chunks(),
                           chunk.column(ROUTE_FID).combine_chunks(),
                           chunk.column(ROUTE_NEW).combine_chunks(),
                           chunk.column(ROUTE_INS).combine_chunks(),
                           chunk.column(ROUTE_DEL).combine_chunks(), op, result)
        _execute_chunk(mt, plan, p, result, data, keys, report, f"{token}-{n}")
        if hook is not None:
            for _, fid in p.groups():
                hook(fid)
    if mt.avro_schema is not before:
        report.schema = json.dumps(mt.avro_schema, separators=(",", ":"))
    return report


# --- the commit ---------------------------------------------------------------------------


def commit_write(plan: WritePlan, reports: list[TaskReport]) -> CommitResult:
    """Commit the tasks' work (``reports``: one per successful task attempt): conflict check,
    markers, duplicate inserts, indexes, completion; then the inline services. On any error
    the instant is rolled back and every file of the write removed."""
    mt = MorTable(plan.location, plan.config)
    result = CommitResult(plan.instant, plan.operation)
    _adopt_schema(mt, reports)
    c = mt.commit(plan.operation, instant=plan.instant)
    try:
        with c:
            result.rolled_back = c.rolled_back
            view = c.table()
            _check_conflicts(view, plan, reports)
            groups = sorted({g for r in reports for g in (*r.groups, *r.new_groups)})
            apply_drops(mt.store, plan.location, view, mt.metadata_plan,
                        fsync=plan.config.fsync)
            c.start(groups)
            _reconcile_markers(mt, plan, reports)
            stats: dict[str, list[dict[str, Any]]] = {}
            for r in reports:
                for part, s in r.stats.items():
                    stats.setdefault(part, []).extend(s)
            removed = _remove_duplicate_inserts(mt, plan, reports, stats)
            result.inserts = sum(r.inserts for r in reports) - len(removed)
            result.inserts_routed_to_existing = sum(r.routed for r in reports)
            result.updates = sum(r.updates for r in reports)
            result.deletes = sum(r.deletes for r in reports)
            result.new_groups = sorted({g for r in reports for g in r.new_groups})
            result.groups_touched = {g: 0 for g in groups}
            result.files_created = [f"{p}/{n}" for r in reports for p, n in r.files]
            c.complete(stats, result.summary(),
                       changes=lambda: _record_changes(mt, plan, reports, removed))
    except BaseException:
        if not c.completed:
            # rolled back by the commit already, or never started: nothing of it stays
            abort_write(plan)
        raise
    finally:
        mt.store.remove_tree(plan.stage)
        delete_markers(mt.store, plan.location, plan.instant)
    mt.table_services()
    return result


def abort_write(plan: WritePlan) -> None:
    """Remove every file of a write that will not commit (the job failed): the marked data
    files, the stage, the markers, the heartbeat. The timeline was never touched."""
    mt = MorTable(plan.location, plan.config)
    with mt.writer_lock():
        _remove_files(mt, plan)
        mt.store.remove_tree(plan.stage)
        delete_markers(mt.store, plan.location, plan.instant)
        view = mt.table()
        TimelineWriter(mt.store, plan.location, layout=view.timeline.layout,
                       fsync=plan.config.fsync).remove_pending(plan.instant)
        mt.store.delete(heartbeat_path(mt.store, plan.location, plan.instant))


def _remove_files(mt: MorTable, plan: WritePlan) -> None:
    for m in list_markers(mt.store, plan.location, plan.instant):
        _delete_data_file(mt, plan.location, m.partition, m.file_name)


def _delete_data_file(mt: MorTable, location: TableLocation, partition: str, name: str) -> None:
    st = mt.store
    directory = location.partition_path(partition)
    st.delete(st.join(directory, name))
    if BaseFileName.matches(name):
        st.delete(st.join(base_keys_dir(location, partition), name + BASE_KEYS_SUFFIX))


def _check_conflicts(view: Table, plan: WritePlan, reports: list[TaskReport]) -> None:
    """Hudi's conflict rule for optimistic writers (``SimpleConcurrentFileWritesConflict
    ResolutionStrategy``): an instant that appeared (or completed) after the snapshot and
    wrote to a file group the tasks wrote to, or inserted into a partition the tasks
    inserted into (its keys were not seen by the tagging), is a conflict; so is any such
    instant later than the write's own (its data would sort after the write's in table
    version 6, and the metadata table holds instants in order)."""
    ours = {g for r in reports for g in r.groups}
    # (inserts routed into small file groups count: a key another writer inserted into
    # another group of the partition meanwhile would be there twice)
    insert_parts = {p for r in reports for p in r.insert_parts}
    # a global index: a key may live in any partition, so any insert clashes
    global_index = enabled(view) or global_record_index(view)
    tl = view.timeline
    for i in tl.instants:
        if (i.requested, i.state) in plan.seen or i.requested == plan.instant:
            continue
        if i.action not in _DATA_ACTIONS:
            continue
        if not i.is_completed and i.action not in _SERVICE_ACTIONS:
            # another writer's pending write checks this one at its own commit (Hudi's
            # candidate instants: completed writes and pending table services)
            continue
        if i.requested > plan.instant and i.is_completed:
            raise ConcurrentWriterError(
                f"instant {i.requested} ({i.action}) completed while this write ran and is "
                f"later than the write's {plan.instant}: write again", path=plan.location.uri)
        touched, parts = _instant_footprint(tl, i)
        clash = ours & touched
        if global_index and insert_parts and parts:
            parts = parts | insert_parts
        if clash or (insert_parts & parts and i.action in ("deltacommit", "commit",
                                                            "replacecommit")):
            what = (f"file group {sorted(clash)[0][1]}" if clash
                    else f"partition {sorted(insert_parts & parts)[0]!r}")
            raise ConcurrentWriterError(
                f"instant {i.requested} ({i.action}, {i.state}) wrote to {what} while this "
                f"write ran (Hudi's optimistic concurrency check): write again",
                path=plan.location.uri)


def _instant_footprint(tl: Any, i: Instant) -> tuple[set[tuple[str, str]], set[str]]:
    """(file groups, partitions) an instant writes: from its plan when a pending service,
    else from its (inflight or completed) write stats and replaced file groups."""
    groups: set[tuple[str, str]] = set()
    if not i.is_completed:  # a pending table service: the file groups of its plan
        pending = tl.pending_services()
        for table in (pending.compaction, pending.log_compaction, pending.clustering):
            groups |= {g for g, inst in table.items() if inst == i.requested}
        return groups, {p for p, _ in groups}
    try:
        md = tl.metadata(i)
    except MorlogError:
        md = {}
    stats = md.get("partitionToWriteStats") or {}
    parts: set[str] = set()
    if isinstance(stats, dict):
        for part, entries in stats.items():
            parts.add(str(part))
            for e in entries if isinstance(entries, list) else []:
                if isinstance(e, dict) and isinstance(e.get("fileId"), str):
                    groups.add((str(part), e["fileId"]))
    replaced = md.get("partitionToReplaceFileIds") or {}
    if isinstance(replaced, dict):
        for part, fids in replaced.items():
            parts.add(str(part))
            groups |= {(str(part), str(f)) for f in fids if isinstance(fids, list)}
    if not md:
        # nothing readable: assume the worst (every group and partition of ours)
        raise ConcurrentWriterError(
            f"instant {i.requested} ({i.action}) appeared while this write ran and its "
            "metadata cannot be read: write again", path=tl.directory)
    return groups, parts


def _reconcile_markers(mt: MorTable, plan: WritePlan, reports: list[TaskReport]) -> None:
    """Delete every marked data file no successful attempt reported (Hudi's
    ``reconcileAgainstMarkers``): a failed or speculative attempt leaves nothing."""
    reported = {f for r in reports for f in r.files}
    for m in list_markers(mt.store, plan.location, plan.instant):
        if (m.partition, m.file_name) not in reported:
            _delete_data_file(mt, plan.location, m.partition, m.file_name)


#: the key file's trailer: this magic, then the CRC-32 (zlib, u32 little-endian) of every
#: byte before the trailer (spec/table.md §7.6)
KEYS_MAGIC = b"MORLKEY1"
_TRAILER = struct.Struct("<8sI")


def seal_keys(data: bytes) -> bytes:
    """An Arrow IPC key file with its trailer."""
    return data + _TRAILER.pack(KEYS_MAGIC, zlib.crc32(data))


def open_keys(data: bytes, path: str) -> ipc.RecordBatchFileReader:
    """A key file checked (trailer, CRC-32) and opened; a :class:`ContentError`
    (:class:`ChecksumError`) naming ``path`` otherwise."""
    if len(data) < _TRAILER.size:
        raise ContentError("a task's key file is too short", path=path, actual=len(data))
    magic, crc = _TRAILER.unpack(data[-_TRAILER.size:])
    body = data[:-_TRAILER.size]
    if magic != KEYS_MAGIC:
        raise ContentError("a task's key file has no trailer", path=path, actual=magic)
    if zlib.crc32(body) != crc:
        raise ChecksumError("a task's key file checksum mismatch", path=path, expected=crc,
                            actual=zlib.crc32(body))
    try:
        reader = ipc.open_file(pa.py_buffer(body))
    except (pa.ArrowInvalid, pa.ArrowException) as exc:
        raise ContentError(f"a task's key file does not decode: {exc}", path=path) from None
    names = reader.schema.names
    if names[:len(KEY_COLUMNS)] != list(KEY_COLUMNS):
        raise ContentError("a task's key file has other columns", path=path,
                           expected=list(KEY_COLUMNS), actual=names)
    return reader


_NO_PAIRS = pa.chunked_array([], pa.string())


def _key_file(mt: MorTable, plan: WritePlan, name: str) -> ipc.RecordBatchFileReader:
    path = mt.store.join(plan.stage, f"{name}.keys")
    return open_keys(mt.store.storage.read(path), path)


#: bytes of each window the commit reads a task's fingerprint file in (two kept a file): the
#: merge asks each file for two ranges per run of buckets (its hashes and its rows), small
#: ones when many files share a run; on an object store one GET each (a 25k-row, 4-task
#: write read bucket by bucket made 8,200 of them: 22-28 s on a moto S3 server against 1 s
#: on local disk)
FP_WINDOW = 256 * 1024


def _remove_duplicate_inserts(mt: MorTable, plan: WritePlan, reports: list[TaskReport],
                              stats: dict[str, list[dict[str, Any]]]
                              ) -> pa.ChunkedArray:
    """Keys inserted by more than one task (or chunk): every copy but the one Hudi's
    combine rule keeps (greatest ordering value; on ties the later task, by write token and
    chunk) is removed: its new file group is rewritten without it (only the groups holding
    such copies are read, one at a time). Returns the removed copies as ``key\\x00file id``."""
    names = [n for r in sorted(reports, key=lambda r: _token_order(r.token))
             for n in r.chunks]
    st = mt.store
    files: list[FingerprintFile] = []
    chunk_of: list[str] = []
    for n in names:
        path = st.join(plan.stage, f"{n}.fp")
        if not st.exists(path):
            continue
        src = st.storage.source(path)
        files.append(FingerprintFile(path, src.size,
                                     CachedSource(src, window=FP_WINDOW).read))
        chunk_of.append(n)
    if len(files) < 1:
        return _NO_PAIRS
    shared = find_shared(files)
    if not shared.hashes.size:
        return _NO_PAIRS
    # read back the rows behind the shared hashes (whole record batches of the key files)
    rows: list[pa.Table] = []
    for fi in np.unique(shared.files):
        want = np.sort(shared.rows[shared.files == fi].astype(np.int64))
        reader = _key_file(mt, plan, chunk_of[int(fi)])
        got = _rows_of(reader, want)
        rows.append(got.append_column("order", pa.repeat(pa.scalar(int(fi), pa.int64()),
                                                         got.num_rows))
                    .append_column("row", pa.array(want)))
    t = pa.concat_tables(rows, promote_options="permissive")
    t = t.filter(pc.invert(t.column("deleted")))
    # the copies that combine: those of one key (a global index), else of one key and
    # partition path (Hudi's HoodieWriteHelper.deduplicateRecords; the client's combine)
    by_partition = not plan.global_index
    t = t.append_column("ident", _ident(t.column("key"), t.column("partition"), by_partition))
    # the winner per key: greatest ordering tuple, then the latest task/chunk and row
    sort = [("ident", "ascending")] + [(c, "ascending") for c in t.column_names
                                       if c.startswith("o") and c[1:].isdigit()]
    sort += [("order", "ascending"), ("row", "ascending")]
    # (null ordering values first: the smallest, as the client's combine and the reader)
    t = t.take(sort_indices_nulls_first(t, sort))
    k = t.column("ident").combine_chunks()
    n = t.num_rows
    last = np.ones(n, dtype=bool)
    if n > 1:
        last[:-1] = ~pc.equal(k.slice(0, n - 1), k.slice(1)).to_numpy(zero_copy_only=False)
    # copies in small file groups the tasks routed into ("existing" groups: at most one
    # per key, the one its hash picks) stay; copies in the tasks' new groups go, and where
    # such a copy wins the merge its row is written into the key's existing group too
    new_pairs = pa.array(sorted({f"{p}\x00{f}" for r in reports for p, f in r.new_groups})
                         or [""], pa.string())
    pair = pc.binary_join_element_wise(t.column("partition"), t.column("file_id"), "\x00")
    existing = ~pc.is_in(pair, value_set=new_pairs).to_numpy(zero_copy_only=False)
    codes = k.dictionary_encode().indices.to_numpy(zero_copy_only=False)
    per_key = np.zeros(int(codes.max()) + 1 if n else 0, dtype=bool)
    np.logical_or.at(per_key, codes, existing)
    has_existing = per_key[codes]
    remove = ~existing & (~last | has_existing)
    append = last & ~existing & has_existing
    if not remove.any():
        return _NO_PAIRS
    # the existing group of each key that has one (its first existing copy)
    at = np.flatnonzero(existing)
    _, first = np.unique(codes[at], return_index=True)
    home = t.select(["ident", "partition", "file_id"]).take(pa.array(at[first]))
    targets: dict[tuple[str, str], list[pa.Table]] = {}
    winners = t.select(["key", "partition"]).filter(pa.array(append))
    removed: list[pa.Array] = []
    losers = t.filter(pa.array(remove))
    by_group = losers.group_by(["partition", "file_id"]).aggregate([("key", "list")])
    for part, fid, gone in zip(by_group.column("partition").to_pylist(),
                               by_group.column("file_id").to_pylist(),
                               by_group.column("key_list").combine_chunks(), strict=True):
        gone_keys = gone.values.cast(pa.string())
        # the winners whose rows this group holds: of its partition only, unless global
        mine = (winners.filter(pc.equal(winners.column("partition"), part)) if by_partition
                else winners)
        moving = pc.unique(mine.column("key")) if mine.num_rows else None
        won = _rewrite_without(mt, plan, part, fid, gone_keys, stats, moving)
        removed.append(pc.binary_join_element_wise(gone_keys, fid, "\x00"))
        if won is not None and won.num_rows:
            # (data columns only: the keys from the key generator, as on write)
            ident = _ident(mt.keygen.record_keys(won),
                           pa.repeat(pa.scalar(part, pa.string()), won.num_rows), by_partition)
            _route_winners(won, ident, home, targets, plan)
    if targets:
        _append_winners(mt, plan, reports, stats, targets)
    return pa.chunked_array(removed, pa.string())


def _ident(keys: pa.Array | pa.ChunkedArray, parts: pa.Array | pa.ChunkedArray,
           by_partition: bool) -> pa.Array | pa.ChunkedArray:
    """What identifies a record among a write's copies: its key, or its key and partition
    path (``by_partition``: a non-global index)."""
    keys = keys.cast(pa.string())
    return (pc.binary_join_element_wise(keys, parts.cast(pa.string()), "\x00")
            if by_partition else keys)


def _route_winners(won: pa.Table, keys: pa.Array | pa.ChunkedArray, home: pa.Table,
                   targets: dict[tuple[str, str], list[pa.Table]], plan: WritePlan) -> None:
    """Add the winning rows ``won`` (identities ``keys``: :func:`_ident`) to ``targets``,
    by the existing (small) file group ``home`` names for each."""
    at = pc.index_in(keys, value_set=home.column("ident"))
    if at.null_count:
        raise ContentError("a winning duplicate insert has no existing file group",
                           path=plan.location.uri)
    dest = pa.table({"partition": home.column("partition").take(at),
                     "file_id": home.column("file_id").take(at)})
    pairs = dest.group_by(["partition", "file_id"]).aggregate([])
    for part, fid in zip(pairs.column("partition").to_pylist(),
                         pairs.column("file_id").to_pylist(), strict=True):
        mask = pc.and_(pc.equal(dest.column("partition"), part),
                       pc.equal(dest.column("file_id"), fid))
        targets.setdefault((part, fid), []).append(won.filter(mask))


def _append_winners(mt: MorTable, plan: WritePlan, reports: list[TaskReport],
                    stats: dict[str, list[dict[str, Any]]],
                    targets: dict[tuple[str, str], list[pa.Table]]) -> None:
    """Write the winning rows of keys whose winning copy was in a new file group into the
    key's small file group (a log file of the commit's own write token, after every task's:
    it wins the merge there, its ordering value being the greatest)."""
    view = mt.table()
    slices = {(sl.partition, sl.file_id): sl for sl in view.file_slices()}
    pending = view.timeline.pending_services().compaction
    top = max((_token_order(r.token)[0] for r in reports), default=0)
    writer = _TaskTable(plan, f"{top + 1}-0-0")
    writer.avro_schema, writer.arrow_schema, writer.data_schema = (
        mt.avro_schema, mt.arrow_schema, mt.data_schema)  # the write's (evolved) schema
    for (part, fid), rows in sorted(targets.items()):
        sl = slices.get((part, fid))
        if sl is None:
            raise ContentError("a small file group of the plan vanished", path=plan.location.uri,
                               actual=(part, fid))
        base = sl.base_instant
        if writer.version < 8 and (part, fid) in pending:
            base = pending[(part, fid)]  # table version 6: the slice the compaction starts
        for w in writer.write_group(plan.instant, part, fid, base, pa.concat_tables(rows),
                                    None, slice_logs=sl.log_files):
            stats.setdefault(part, []).append(w.stat(writer.store, writer.path))


def _rewrite_without(mt: MorTable, plan: WritePlan, partition: str, fid: str, gone: pa.Array,
                     stats: dict[str, list[dict[str, Any]]],
                     extract: pa.Array | None = None) -> pa.Table | None:
    """Rewrite new file group ``fid`` (one task chunk's: one base file or one log file,
    never committed) without the records of keys ``gone``, under the same file name; its
    write stat replaced. A key left in any index of a file group would make later writers
    tag it there too, so the copy is removed, not deleted by a block. Returns the data
    columns of the removed records whose keys are in ``extract``."""
    st = mt.store
    entries = stats.get(partition, [])
    mine = [e for e in entries if e.get("fileId") == fid]
    if len(mine) != 1:
        raise ContentError("a new file group of a distributed write has several files",
                           path=plan.location.uri, actual=(partition, fid, len(mine)))
    rel = str(mine[0]["path"])
    path = plan.location.join(*rel.split("/"))
    name = rel.rsplit("/", 1)[-1]
    rows = _read_new_file(mt, path, name)
    keys = (rows.column(RECORD_KEY_FIELD) if mt.populate_meta_fields
            else mt.keygen.record_keys(rows))
    data_cols = [f.name for f in mt.data_schema]
    out = None
    if extract is not None:
        out = rows.filter(pc.is_in(keys, value_set=extract)).select(data_cols)
    keep = rows.filter(pc.invert(pc.is_in(keys, value_set=gone))).select(data_cols)
    _delete_data_file(mt, plan.location, partition, name)
    stats[partition] = [e for e in entries if e.get("fileId") != fid]
    if not keep.num_rows:
        return out
    token = (BaseFileName.parse(name).write_token if BaseFileName.matches(name)
             else LogFileName.parse(name).write_token) or ""
    writer = MorTable(plan.location, dataclasses.replace(plan.config, mode="rollover"))
    writer.avro_schema, writer.arrow_schema, writer.data_schema = (
        mt.avro_schema, mt.arrow_schema, mt.data_schema)  # the write's (evolved) schema
    writer.write_token = token
    for w in writer.write_group(plan.instant, partition, fid, None, keep, None):
        if st.basename(w.path) != name:
            raise ContentError("a rewritten file group changed its file name",
                               path=w.path, expected=name)
        stats[partition].append(w.stat(writer.store, writer.path))
    return out


def _read_new_file(mt: MorTable, path: str, name: str) -> pa.Table:
    """Every record of one data file a task wrote (its instant is not on the timeline, so
    the table's readers would skip it)."""
    src = mt.store.storage.source(path)
    if BaseFileName.matches(name):
        with BaseFileReader(src, table_base_format(mt.props, path)) as r:
            return r.read()
    with LogFileReader(src) as reader:
        parts = [b.to_arrow() for b in reader.blocks()
                 if b.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA)]
    if not parts:
        raise ContentError("a new log file of a distributed write holds no data block",
                           path=path)
    return pa.concat_tables(parts)


def _rows_of(reader: ipc.RecordBatchFileReader, want: np.ndarray) -> pa.Table:
    """Rows ``want`` (ascending) of a key file, reading only the batches that hold them."""
    out = []
    start = 0
    for b in range(reader.num_record_batches):
        batch = reader.get_batch(b)
        end = start + batch.num_rows
        lo, hi = np.searchsorted(want, [start, end])
        if hi > lo:
            out.append(pa.Table.from_batches([batch]).take(pa.array(want[lo:hi] - start)))
        start = end
    if not out:
        return reader.schema.empty_table()
    return pa.concat_tables(out)


def _token_order(token: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in token.split("-"))
    except ValueError:
        return (0,)


def _record_changes(mt: MorTable, plan: WritePlan, reports: list[TaskReport],
                    removed: pa.ChunkedArray) -> RecordChanges:
    """The write's key changes from the key files (asked only when a record index is kept)."""
    ins, dels = [], []
    for r in reports:
        for n in r.chunks:
            t = _key_file(mt, plan, n).read_all().select(list(KEY_COLUMNS))
            gone = t.column("deleted")
            ins.append(t.filter(pc.invert(gone)))
            dels.append(t.filter(gone))
    inserted = pa.concat_tables(ins) if ins else None
    if inserted is not None and len(removed):
        pairs = pc.binary_join_element_wise(inserted.column("key"),
                                            inserted.column("file_id"), "\x00")
        drop = removed.combine_chunks()
        inserted = inserted.filter(pc.invert(pc.is_in(pairs, value_set=drop)))
    return RecordChanges.of_arrays(inserted, pa.concat_tables(dels) if dels else None)


def new_token() -> str:
    """A write token for a task attempt outside an engine (tests, other engines)."""
    return f"{uuid.uuid4().int % 1_000_000}-0-0"


__all__ = ["KEY_COLUMNS", "OPERATIONS", "ROUTE_DEL", "ROUTE_FID", "ROUTE_INS", "ROUTE_KEY",
           "ROUTE_NEW", "ROUTE_PART", "ROUTE_PREFIX", "TaskReport", "WritePlan",
           "abort_write", "commit_write", "insert_bins", "insert_counts", "new_token",
           "plan_write", "publish_insert_counts", "task_table", "write_routed_task",
           "write_task"]
