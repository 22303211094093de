"""The commit protocol: one delta commit of a table, from the writer lock to completion.

Used by the write client (``morlog.writers.client.MorTable``) and by Spark's distributed
upsert (``morlog.writers.spark.upsert``); both write a commit the same way::

    with Commit(store, location, mode=..., operation="upsert", schema=avro) as c:
        # c.instant, c.rolled_back, c.view (the table after rollback)
        c.start(groups)            # <instant>.deltacommit.requested and .inflight
        ...                        # write the file groups' blocks and base files
        c.complete(stats, summary) # <instant>.deltacommit with commit metadata

1. Entering takes the table's writer lock (``.hoodie/morlog.lock``, see
   ``morlog.writers.store``): a second concurrent writer gets ``ConcurrentWriterError``.
2. It rolls back the delta commits a dead writer left pending (:func:`rollback_pending`): a
   ROLLBACK command block in every log the failed instant wrote to, its new base files
   deleted, a completed rollback instant, its timeline files removed.
3. It allocates the new instant, later than every instant on the timeline.
4. :meth:`Commit.start` writes ``requested`` and ``inflight`` (listing the file groups the
   commit writes, so that a rollback knows where to put its command blocks).
5. :meth:`Commit.complete` checks the lock is still held (a writer whose lease ran out must
   not complete) and writes the completed instant with Hudi's commit metadata.

Leaving the block releases the lock, whatever happened. A commit that fails with an
exception after :meth:`Commit.start` is rolled back by the same call before the lock is
released (and an exception other than a ``MorlogError`` is re-raised as a ``WriteError``); a
writer that dies (killed, or a ``BaseException`` such as ``KeyboardInterrupt``) leaves it
pending on the timeline: readers ignore its files, and the next writer rolls it back.

Every partition and file id a rollback reads from a pending instant's metadata is checked
before anything is listed or deleted (:func:`safe_group`): an entry that would leave the
table is skipped, the rest of the rollback completes, and then an ``UnsafePathError`` names
what was skipped (the table stays writable: the next writer finds nothing pending).
Entering also removes temporary files (``.morlog-tmp-*``) that killed local writers left in
the directories the commit lists anyway (see ``morlog.writers.repair``).
"""

from __future__ import annotations

import datetime as _dt
import json
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from morlog.logformat.blocks import rollback_block
from morlog.logformat.errors import HeartbeatWarning, MorlogError, UsageError, WriteError
from morlog.logformat.naming import (
    COMPLETED,
    INFLIGHT,
    REQUESTED,
    BaseFileName,
    LogFileName,
    TimelineFileName,
)
from morlog.logformat.partition_path import UnsafePathError, check_relative_partition_path
from morlog.logformat.table_files import (
    PARTITION_METADATA_FILE,
    format_partition_metadata,
    partition_depth,
)
from morlog.logformat.timeline_meta import (
    CLEAN_METADATA_SCHEMA,
    CLEAN_METADATA_SCHEMA_014,
    CLEANER_PLAN_SCHEMA,
    CLEANER_PLAN_SCHEMA_014,
    COMPACTION_PLAN_SCHEMA,
    COMPACTION_PLAN_SCHEMA_014,
    ROLLBACK_METADATA_SCHEMA,
    ROLLBACK_PLAN_SCHEMA,
    decode_avro,
    encode_avro,
    encode_commit_metadata,
    write_stat,
)
from morlog.readers.base_keys import base_keys_dir
from morlog.readers.containment import check_file_name, resolve_under
from morlog.readers.storage import TableLocation
from morlog.readers.table import Table

from .logwriter import LogFileWriter, Mode
from .repair import sweep_orphan_temps
from .store import ConcurrentWriterError, LocalStore, WriterLock, WriteStore, write_errors

#: the write token of every file morlog writes (``taskPartitionId-stageId-taskAttemptId``)
WRITE_TOKEN = "0-1-1"
#: extra metadata entry of a morlog writer's inflight instant
MORLOG_WRITER_KEY = "morlog.writer"
#: the timeline file of each state of an instant, by the names the protocol uses
_STATES = {"requested": REQUESTED, "inflight": INFLIGHT, "completed": COMPLETED}


#: the table property choosing the time zone of instant times (``HoodieTableConfig``
#: TIMELINE_TIMEZONE: LOCAL, Hudi's default, or UTC; ``HoodieInstantTimeGenerator``)
TIMELINE_TIMEZONE = "hoodie.table.timeline.timezone"


def timeline_utc(props: Mapping[str, str]) -> bool:
    """Whether the table's instants are UTC times (else the local time zone, Hudi's
    default)."""
    return (props.get(TIMELINE_TIMEZONE) or "LOCAL").strip().upper() == "UTC"


def latest_time(table: Table) -> str | None:
    """The latest time on the table's timeline, completion times (layout 2) included: a new
    instant comes after it, as Hudi's time generator hands out requested and completion
    times from one monotonic clock."""
    times = [t for i in table.timeline.instants for t in (i.requested, i.completed) if t]
    return max(times) if times else None


def new_instant(after: str | None = None, *, utc: bool = False) -> str:
    """A fresh instant (yyyyMMddHHmmssSSS) in local time, or UTC with ``utc`` (the table's
    ``hoodie.table.timeline.timezone``, as Hudi's instant generator), later than
    ``after``."""
    now = _dt.datetime.now(_dt.UTC) if utc else _dt.datetime.now()
    inst = now.strftime("%Y%m%d%H%M%S") + f"{now.microsecond // 1000:03d}"
    if after is not None and inst <= after:
        inst = str(int(after) + 1).zfill(17)
    return inst


def base_file_name(file_id: str, instant: str, ext: str = "parquet") -> str:
    """The name of the base file a commit ``instant`` writes for file group ``file_id``
    (``ext``: the table's base-file extension, ``morlog.readers.base_files``)."""
    return str(BaseFileName(file_id, WRITE_TOKEN, instant, ext))


class TimelineWriter:
    """Writes a table's timeline files in the table's layout, each published whole.

    Layout 1 (table version 6): ``.hoodie/<instant>.<action>[.<state>]``, commit metadata as
    JSON. Layout 2 (table versions 8 and 9): ``.hoodie/timeline/``, a completed instant named
    ``<requested>_<completed>.<action>`` and its commit metadata as Avro. Rollback plans and
    rollback metadata are Avro in both (``morlog.logformat.timeline_meta``)."""

    def __init__(self, store: WriteStore, location: TableLocation, *, layout: int = 1,
                 fsync: bool = True, utc: bool = False) -> None:
        self.store = store
        self.location = location
        self.layout = layout
        self.fsync = fsync
        #: instants (completion times, rollbacks) in UTC, else local time (the table's zone)
        self.utc = utc
        self.directory = (store.join(location.path, ".hoodie", "timeline") if layout == 2
                          else store.join(location.path, ".hoodie"))

    def path(self, instant: str, state: str, action: str = "deltacommit",
             completed: str | None = None) -> str:
        """The file of ``instant`` in ``state`` (requested, inflight, completed; a completed
        instant of layout 2 needs its completion time)."""
        name = TimelineFileName(instant, action, _STATES[state],
                                completed if self.layout == 2 else None, self.layout)
        return self.store.join(self.directory, str(name))

    def encode(self, state: str, meta: dict[str, Any], action: str) -> bytes:
        """The bytes of a timeline file: empty for an empty ``meta`` of a pending state,
        rollback plans and metadata as Avro, commit metadata in the layout's encoding."""
        if action == "rollback":
            if state == "requested":
                return encode_avro(ROLLBACK_PLAN_SCHEMA, meta)
            if state == "completed":
                return encode_avro(ROLLBACK_METADATA_SCHEMA, meta)
            return b""
        if action in ("compaction", "logcompaction"):
            # the plan (Avro in both layouts; Hudi 0.14's record in layout 1), an empty
            # inflight (spec/services.md §1); the completed instant is a commit/deltacommit
            if state != "requested":
                return b""
            return encode_avro(COMPACTION_PLAN_SCHEMA_014 if self.layout == 1
                               else COMPACTION_PLAN_SCHEMA, meta)
        if action == "clean":
            # the plan in requested and (Hudi 0.14/1.0's way) inflight, the clean metadata
            # when completed (spec/services.md §1)
            if state == "completed":
                return encode_avro(CLEAN_METADATA_SCHEMA_014 if self.layout == 1
                                   else CLEAN_METADATA_SCHEMA, meta)
            return encode_avro(CLEANER_PLAN_SCHEMA_014 if self.layout == 1
                               else CLEANER_PLAN_SCHEMA, meta)
        if not meta and state != "completed":
            return b""
        return encode_commit_metadata(meta, self.layout)

    def write(self, instant: str, state: str, meta: dict[str, Any] | None,
              action: str = "deltacommit") -> str:
        """Publish one timeline file with ``meta`` (None: an empty file); the name must be
        free. Returns the completion time (layout 2 completed instants; else ``instant``)."""
        done = (new_instant(instant, utc=self.utc) if state == "completed" and self.layout == 2
                else instant)
        final = self.path(instant, state, action, done)
        data = b"" if meta is None else self.encode(state, meta, action)
        if not self.store.create(final, data, sync=self.fsync):
            raise UsageError("timeline file exists already", path=final)
        return done

    def inflight_meta(self, instant: str, action: str = "deltacommit") -> dict[str, Any]:
        """The inflight commit metadata of a pending instant ({} when absent or unreadable);
        unchecked: see :func:`safe_group`."""
        inflight = self.path(instant, "inflight", action)
        if not self.store.exists(inflight):
            return {}
        data = self.store.read(inflight)
        meta: Any
        try:
            if data[:4] == b"Obj\x01":
                meta = decode_avro(data, inflight)
            else:
                text = data.decode("utf-8", errors="replace")
                meta = json.loads(text) if text.strip() else {}
        except (MorlogError, ValueError, RecursionError):
            return {}
        return meta if isinstance(meta, dict) else {}

    def inflight_groups(self, instant: str, action: str = "deltacommit") -> list[Any]:
        """The file group entries (``{"partition", "fileId"}``) a pending commit said it
        writes, from its inflight commit metadata ([] when unknown); unchecked: see
        :func:`safe_group`."""
        meta = self.inflight_meta(instant, action)
        out: list[Any] = []
        legacy = meta.get("morlogFileGroups")  # written by morlog before table versions 8+
        if isinstance(legacy, list):
            out += legacy
        stats = meta.get("partitionToWriteStats")
        if isinstance(stats, dict):
            for part, entries in stats.items():
                for e in entries if isinstance(entries, list) else [entries]:
                    fid = e.get("fileId") if isinstance(e, dict) else e
                    if fid != "":  # Hudi's workload profile lists inserts with no file id
                        out.append({"partition": part, "fileId": fid})
        return out

    def is_morlogs(self, instant: str, action: str = "deltacommit") -> bool:
        """Whether a pending instant is a morlog writer's: its inflight metadata says so,
        or (a writer that died before writing its inflight) its heartbeat file holds
        :data:`MORLOG_HEARTBEAT` (spec/table.md §9.1)."""
        meta = self.inflight_meta(instant, action)
        extra = meta.get("extraMetadata")
        if "morlogFileGroups" in meta or (isinstance(extra, dict)
                                          and MORLOG_WRITER_KEY in extra):
            return True
        return is_morlog_heartbeat(self.store, self.location, instant)

    def remove_pending(self, instant: str, action: str = "deltacommit") -> None:
        for state in ("requested", "inflight"):
            self.store.delete(self.path(instant, state, action))


def ensure_partition(store: WriteStore, location: TableLocation, partition: str, *,
                     fsync: bool = True) -> str:
    """The partition's directory, made (with Hudi's partition metadata) if missing."""
    d = location.partition_path(partition)
    meta = store.join(d, PARTITION_METADATA_FILE)
    if partition and not store.exists(meta):
        store.makedirs(d)
        # a concurrent task may have written it: either copy is right
        store.create(meta, format_partition_metadata(int(time.time()),
                                                     partition_depth(partition)).encode(),
                     sync=fsync)
    return d


def has_logs(store: WriteStore, directory: str, fid: str) -> bool:
    return any(LogFileName.matches(n) and LogFileName.parse(n).file_id == fid
               for n in store.listdir(directory))


def safe_group(location: TableLocation, entry: Any) -> tuple[str, str]:
    """(partition, file id) of one ``morlogFileGroups`` entry of a pending instant;
    :class:`UnsafePathError` (a ``UsageError``) unless it names a file group inside the
    table (a safe relative partition path under the table root, a plain file id)."""
    if not isinstance(entry, dict):
        raise UnsafePathError("file group entry is not an object", actual=repr(entry)[:200])
    partition, fid = entry.get("partition"), entry.get("fileId")
    if not isinstance(partition, str) or not isinstance(fid, str):
        raise UnsafePathError("partition or fileId is not a string", actual=repr(entry)[:200])
    if partition:
        check_relative_partition_path(partition)
        resolve_under(location.path, partition)
    check_file_name(fid)
    return partition, fid


def instant_files(store: WriteStore, directory: str, instant: str,
                  file_id: str | None = None) -> list[str]:
    """Names of the data files in ``directory`` that ``instant`` created: base files of any
    format and log files named after it (of group ``file_id`` when given)."""
    out = []
    for name in store.listdir(directory):
        if BaseFileName.matches(name):
            b = BaseFileName.parse(name)
            if b.instant == instant and file_id in (None, b.file_id):
                out.append(name)
        elif LogFileName.matches(name):
            ln = LogFileName.parse(name)
            if ln.instant == instant and file_id in (None, ln.file_id):
                out.append(name)
    return out


def rollback_pending(store: WriteStore, location: TableLocation, *, mode: Mode,
                     fsync: bool = True, view: Table | None = None,
                     hooks: RollbackHooks | None = None) -> list[str]:
    """Roll back the delta commits that dead writers left requested or inflight; their
    instants. A pending instant of a live Hudi writer (fresh heartbeat) is never touched:
    :class:`ConcurrentWriterError` names it (see :func:`pending_owner`)."""
    table = view or Table(location)
    timeline = TimelineWriter(store, location, layout=table.timeline.layout, fsync=fsync,
                              utc=timeline_utc(table.config.props))
    done = []
    skipped: list[str] = []
    for inst in table.timeline.pending():
        if inst.action != "deltacommit" and not _own_replace(timeline, inst.requested,
                                                             inst.action):
            continue
        if not timeline.is_morlogs(inst.requested, inst.action):
            # we hold morlog's writer lock, so a morlog instant's writer is gone; another
            # writer's instant follows Hudi's heartbeat rule
            check_heartbeat(store, location, inst.requested)
        skipped += _rollback(store, location, timeline, table, inst.requested, mode, fsync,
                             hooks, inst.action)
        done.append(inst.requested)
    # log compactions morlog scheduled and a dead process left inflight: back to requested
    # (their new blocks are gone; ``morlog.writers.logcompaction``)
    from .logcompaction import undo_dead_log_compactions

    done += undo_dead_log_compactions(store, location, table, timeline, hooks)
    for inst in table.timeline.pending():
        if inst.action == "rollback":
            # a rollback that died (its writer is gone: we hold the lock); the instants it
            # was rolling back are still pending and were rolled back again above, and a
            # repeated ROLLBACK command block is harmless
            timeline.remove_pending(inst.requested, "rollback")
    if skipped:
        # every instant is rolled back (the table stays writable); the hostile entries
        # are reported, never followed
        raise UnsafePathError("rolled back " + ", ".join(done) + ", skipping file group "
                              "entries of their metadata that leave the table: "
                              + "; ".join(skipped), path=location.uri)
    return done


#: Hudi's heartbeat of a writer's instant (``HoodieHeartbeatClient``): a file
#: ``.hoodie/.heartbeat/<instant>`` whose modification time the writer refreshes every
#: ``hoodie.client.heartbeat.interval_in_ms`` (default 60000); the instant counts as failed
#: once ``hoodie.client.heartbeat.tolerable.misses`` (default 2) intervals passed without one
HEARTBEAT_DIR = ".heartbeat"
HEARTBEAT_INTERVAL_MS = 60_000
HEARTBEAT_TOLERABLE_MISSES = 2


#: the body of a morlog writer's heartbeat file. Hudi reads only a heartbeat's modification
#: time (``HoodieHeartbeatUtils.getLastHeartbeatTime``) and writes it empty, so the body
#: marks an instant as written under morlog's writer lock from the moment its heartbeat
#: exists, before its inflight metadata says so
MORLOG_HEARTBEAT = b"morlog.writer\n"


def heartbeat_path(store: WriteStore, location: TableLocation, instant: str) -> str:
    return store.join(location.path, ".hoodie", HEARTBEAT_DIR, instant)


def is_morlog_heartbeat(store: WriteStore, location: TableLocation, instant: str) -> bool:
    """Whether ``instant``'s heartbeat file is a morlog writer's (:data:`MORLOG_HEARTBEAT`)."""
    try:
        return store.read(heartbeat_path(store, location, instant)) == MORLOG_HEARTBEAT
    except (FileNotFoundError, MorlogError, OSError):
        return False


def check_heartbeat(store: WriteStore, location: TableLocation, instant: str) -> None:
    """:class:`ConcurrentWriterError` when pending ``instant`` has a heartbeat fresher than
    Hudi's expiry (its writer is alive); a missing or expired heartbeat means a dead writer,
    whose instant Hudi's next writer rolls back too."""
    path = heartbeat_path(store, location, instant)
    mtime = store.mtime(path)
    if mtime is None:
        return
    expiry = HEARTBEAT_INTERVAL_MS * (HEARTBEAT_TOLERABLE_MISSES + 1) / 1000.0
    if time.time() - mtime < expiry:
        raise ConcurrentWriterError(
            f"instant {instant} is pending with a live heartbeat (another writer is writing "
            f"the table; it counts as failed {expiry:.0f} s after its last heartbeat)",
            path=location.uri)


class RollbackHooks:
    """What a rollback must also undo outside the data files (the metadata table)."""

    def rolled_back(self, failed: str, rollback_instant: str,
                    deleted: dict[str, list[str]]) -> None:  # pragma: no cover - interface
        """``failed`` was rolled back; ``deleted``: partition -> data file names removed."""


def _own_replace(timeline: TimelineWriter, instant: str, action: str) -> bool:
    """Whether a pending instant is a replace commit that morlog writes (its requested file
    empty); Hudi's clustering plans (Avro content) are left to Hudi."""
    if action != "replacecommit":
        return False
    requested = timeline.path(instant, "requested", action)
    return timeline.store.exists(requested) and not timeline.store.read(requested)


def _rollback(st: WriteStore, location: TableLocation, timeline: TimelineWriter,
              table: Table, failed: str, mode: Mode, fsync: bool,
              hooks: RollbackHooks | None = None, action: str = "deltacommit", *,
              instant: str | None = None) -> list[str]:
    """:func:`_rollback_files`; a storage failure (a store's untyped ``OSError``) is a
    :class:`WriteError` naming the instant (it stays pending for the next writer)."""
    with write_errors(f"rolling back instant {failed}", location.uri):
        return _rollback_files(st, location, timeline, table, failed, mode, fsync, hooks,
                               action, instant=instant)


def _rollback_files(st: WriteStore, location: TableLocation, timeline: TimelineWriter,
                    table: Table, failed: str, mode: Mode, fsync: bool,
                    hooks: RollbackHooks | None = None, action: str = "deltacommit", *,
                    instant: str | None = None) -> list[str]:
    """Roll back instant ``failed``; the file group entries skipped as unsafe, each described.

    Files named after ``failed`` (its new base files, and the log files it created) are
    deleted. In layout 1 (table version 6) a log of an older slice may hold its blocks too:
    each such log of the groups its inflight metadata names gets a ROLLBACK command block.
    In layout 2 (8+) every log file carries its delta commit's instant, so deleting is all
    (Hudi 1.x rolls back the same way). ``instant``: the rollback instant (default a new
    one; the metadata table reuses the data table's, as Hudi does)."""
    started = time.monotonic()
    skipped = []
    groups = timeline.inflight_groups(failed, action)
    last = latest_time(table)
    rb = instant or new_instant(max(x for x in (last, failed) if x is not None),
                                utc=timeline.utc)
    keys: list[tuple[str, str]] = []
    for g in groups:
        try:
            keys.append(safe_group(location, g))
        except MorlogError as exc:
            skipped.append(f"{repr(g)[:200]} ({exc.message})")
    # every partition may hold a new file group of the failed instant (Hudi's inflight
    # metadata does not name them): list them all, delete what the instant named
    partitions = sorted(set(table.partitions()) | {p for p, _ in keys})
    doomed = {p: instant_files(st, location.partition_path(p), failed) for p in partitions}
    doomed = {p: names for p, names in doomed.items() if names}
    slices = {(s.partition, s.file_id): s for s in table.file_slices()}
    command: list[tuple[str, str]] = []
    if timeline.layout == 1:
        for key in dict.fromkeys(keys):
            s = slices.get(key)
            d = location.partition_path(key[0])
            if s is not None and s.base_instant != failed and has_logs(st, d, key[1]):
                command.append(key)
    requests = [{"partitionPath": p, "fileId": "", "latestBaseInstant": "",
                 "filesToBeDeleted": names, "logBlocksToBeDeleted": {}}
                for p, names in doomed.items()]
    requests += [{"partitionPath": p, "fileId": f, "latestBaseInstant": slices[(p, f)].base_instant,
                  "filesToBeDeleted": [], "logBlocksToBeDeleted": {}} for p, f in command]
    timeline.write(rb, "requested", {"instantToRollback": {"commitTime": failed,
                                                           "action": action},
                                     "RollbackRequests": requests, "version": 1}, "rollback")
    timeline.write(rb, "inflight", {}, "rollback")
    part_meta: dict[str, dict[str, Any]] = {}
    for p, names in doomed.items():
        d = location.partition_path(p)
        for name in names:
            st.delete(st.join(d, check_file_name(name)))
        part_meta[p] = {"partitionPath": p, "successDeleteFiles": names,
                        "failedDeleteFiles": [], "rollbackLogFiles": None,
                        "logFilesFromFailedCommit": None}
    for p, fid in command:
        d = ensure_partition(st, location, p, fsync=fsync)
        r = LogFileWriter(d, fid, slices[(p, fid)].base_instant, write_token=WRITE_TOKEN,
                          mode=mode, fsync=fsync, store=st).append(rollback_block(rb, failed))
        entry = part_meta.setdefault(p, {"partitionPath": p, "successDeleteFiles": [],
                                         "failedDeleteFiles": [], "rollbackLogFiles": None,
                                         "logFilesFromFailedCommit": None})
        entry["rollbackLogFiles"] = {**(entry["rollbackLogFiles"] or {}),
                                     st.relpath(r.path, location.path): r.size}
    if hooks is not None:
        hooks.rolled_back(failed, rb, doomed)
    timeline.write(rb, "completed", {
        "startRollbackTime": rb, "timeTakenInMillis": int((time.monotonic() - started) * 1000),
        "totalFilesDeleted": sum(len(n) for n in doomed.values()),
        "commitsRollback": [failed], "partitionMetadata": part_meta, "version": 1,
        "instantsRollback": [{"commitTime": failed, "action": action}]}, "rollback")
    timeline.remove_pending(failed, action)
    st.delete(heartbeat_path(st, location, failed))
    return skipped


def rollback_instant(st: WriteStore, location: TableLocation, timeline: TimelineWriter,
                     table: Table, failed: str, mode: Mode, fsync: bool = True, *,
                     instant: str | None = None) -> list[str]:
    """Roll back instant ``failed`` of any merge-on-read table (the metadata table too:
    ``table`` is how it is listed) with rollback instant ``instant`` (default a new one);
    the file group entries skipped as unsafe (see :func:`rollback_pending`)."""
    return _rollback(st, location, timeline, table, failed, mode, fsync, instant=instant)


class Commit:
    """One delta commit of a table (a context manager; see the module's docstring).

    ``schema``: the table's Avro schema (commit metadata carries it, as Hudi's does).
    ``action``: ``deltacommit``, or ``replacecommit`` for the replace operations
    (``morlog.writers.overwrite``; its requested file is empty, as Hudi accepts).
    """

    def __init__(self, store: WriteStore, location: TableLocation, *, mode: Mode,
                 operation: str, schema: dict[str, Any], fsync: bool = True,
                 action: str = "deltacommit", hooks: CommitHooks | None = None,
                 instant: str | None = None) -> None:
        self.store = store
        #: the instant to use (default: a new one); a table that mirrors another's instants
        #: (the record index) passes the data instant, later than every instant it holds
        self._given_instant = instant
        self.action = action
        self.location = location
        self.mode: Mode = mode
        self.operation = operation
        self.schema = schema
        self.fsync = fsync
        self.action = action
        #: what else the commit keeps true in the same instant (the metadata table)
        self.hooks = hooks
        self.timeline = TimelineWriter(store, location, fsync=fsync)
        self._lock: WriterLock | None = None
        #: set on entering: the instants rolled back, the table after that, the new instant
        self.rolled_back: list[str] = []
        self.view: Table | None = None
        self.instant = ""
        #: completion time of the instant (layout 2; the instant itself in layout 1)
        self.completed_at = ""
        #: temporary files of dead writers removed on entering
        self.swept: list[str] = []
        self._started = False
        self._completed = False

    def __enter__(self) -> Commit:
        lock = self.store.lock(self.location.path)
        try:
            from .metadata import restore_properties

            # a properties rewrite that died leaves the backup only: finish it (spec §1.1)
            restore_properties(self.store, self.location.path, fsync=self.fsync)
            first = Table(self.location)
            self.timeline = TimelineWriter(self.store, self.location,
                                           layout=first.timeline.layout, fsync=self.fsync,
                                           utc=timeline_utc(first.config.props))
            self.rolled_back = rollback_pending(self.store, self.location, mode=self.mode,
                                                fsync=self.fsync, view=first,
                                                hooks=self.hooks)
            view = self.view = Table(self.location) if self.rolled_back else first
            last = latest_time(view)
            floor = self.hooks.latest_instant() if self.hooks is not None else None
            if floor is not None and (last is None or floor > last):
                last = floor
            if self._given_instant is None:
                self.instant = new_instant(last, utc=self.timeline.utc)
            elif last is not None and self._given_instant <= last:
                raise UsageError("a mirrored instant must be later than every instant of "
                                 "the table", path=self.location.uri, expected=f"> {last}",
                                 actual=self._given_instant)
            else:
                self.instant = self._given_instant
            if isinstance(self.store, LocalStore):
                # only local writes stage temporary files (S3 publishes by conditional PUT)
                root = self.location.path
                parts = view.partitions()
                dirs = [root, self.store.join(root, ".hoodie"),
                        *(self.location.partition_path(p) for p in parts if p),
                        # base-key indexes are published beside each other there too
                        *(base_keys_dir(self.location, p) for p in parts or [""])]
                self.swept = sweep_orphan_temps(self.store, dirs)
        except BaseException:
            lock.release()
            raise
        self._lock = lock
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: object) -> None:
        lock, self._lock = self._lock, None
        if lock is None:
            return
        try:
            if (exc is not None and isinstance(exc, Exception) and self._started
                    and not self._completed):
                self._roll_back_own(exc)
        finally:
            try:
                if self.instant:
                    self._remove_heartbeat()
            finally:
                lock.release()  # also when removing the heartbeat failed

    def _remove_heartbeat(self) -> None:
        """Delete this instant's heartbeat. Once the instant completed, a failure is a
        warning: the write is done (an error would invite a retry that writes the rows
        again), and a heartbeat left beside a completed instant is ignored by every reader
        and writer (spec/table.md §9.1)."""
        beat = heartbeat_path(self.store, self.location, self.instant)
        try:
            with write_errors(f"instant {self.instant} is not completed; removing its "
                              "heartbeat", beat):
                self.store.delete(beat)
        except WriteError as exc:
            if not self._completed:
                raise
            warnings.warn(f"{beat}: instant {self.instant} completed, but its heartbeat "
                          f"could not be removed ({exc.message})", HeartbeatWarning,
                          stacklevel=3)

    def _roll_back_own(self, exc: Exception) -> None:
        """Roll back this commit's own instant after ``exc`` (the writer is alive: the
        table is left as before, not for the next writer); raise the typed error."""
        try:
            _rollback(self.store, self.location, self.timeline, Table(self.location),
                      self.instant, self.mode, self.fsync, self.hooks, self.action)
        except Exception as rb_exc:
            raise WriteError(
                f"the commit failed ({_describe(exc)}) and so did its rollback "
                f"({_describe(rb_exc)}): instant {self.instant} stays pending; the next "
                "writer (or 'morlog repair --apply') rolls it back",
                path=self.location.uri) from exc
        if isinstance(exc, MorlogError):
            return  # re-raised as it is by the with statement
        raise WriteError(f"the commit failed and was rolled back: {_describe(exc)}",
                         path=self.location.uri) from exc

    def table(self) -> Table:
        """The table as it was when the commit began (after rolling back dead writers)."""
        if self.view is None:
            raise UsageError("the commit has not begun (use it in a with block)")
        return self.view

    def start(self, groups: Iterable[tuple[str, str]]) -> None:
        """Write the requested and inflight instant; ``groups``: (partition, file id) of
        every file group the commit will write (the inflight metadata lists them as write
        stats, Hudi's workload profile, so that a rollback knows where to look). A heartbeat
        file tells Hudi writers that the instant's writer is alive."""
        self._started = True
        stats: dict[str, list[dict[str, Any]]] = {}
        for p, f in groups:
            stats.setdefault(p, []).append(write_stat(p, f))
        self.timeline.write(self.instant, "requested", {}, self.action)
        hb = heartbeat_path(self.store, self.location, self.instant)
        self.store.makedirs(self.store.join(self.location.path, ".hoodie", HEARTBEAT_DIR))
        self.store.create(hb, MORLOG_HEARTBEAT, sync=False)
        self.timeline.write(self.instant, "inflight", {
            "partitionToWriteStats": stats, "extraMetadata": {MORLOG_WRITER_KEY: "1"},
            "operationType": self.operation.upper()}, self.action)

    def written_files(self, stats: dict[str, list[dict[str, Any]]]
                      ) -> dict[str, dict[str, int]]:
        """partition -> {file name: size now} of the files named in ``stats``."""
        return _written_files(self.store, self.location, stats)

    def complete(self, stats: dict[str, list[dict[str, Any]]],
                 summary: dict[str, str], extra: dict[str, Any] | None = None,
                 replaced: dict[str, list[str]] | None = None,
                 changes: Callable[[], RecordChanges] | None = None) -> None:
        """Complete the instant with Hudi's commit metadata: ``stats`` (write stats per
        partition), ``summary`` (``morlog.*`` entries of the extra metadata) and ``extra``
        (further top-level fields) and, for a replace commit, ``replaced``
        (``partitionToReplaceFileIds``). ``changes``: computes the commit's key-level
        changes (:class:`RecordChanges`), called only by a hook that needs them (the
        record index).
        The hooks (metadata table) are committed first, as Hudi does: a reader of the
        metadata table only trusts instants completed on the data timeline."""
        if self._lock is None:
            raise UsageError("the commit has not begun (use it in a with block)")
        self._lock.check()  # a writer whose lease ran out must not complete the instant
        if self.hooks is not None:
            self.hooks.committing(self.instant, self.written_files(stats), changes)
        self.completed_at = self.timeline.write(self.instant, "completed", {
            "partitionToWriteStats": stats, "compacted": False,
            "extraMetadata": {"schema": json.dumps(self.schema, separators=(",", ":")),
                              **summary},
            "operationType": self.operation.upper(), **(extra or {}),
            **({} if replaced is None else {"partitionToReplaceFileIds": replaced})},
            self.action)
        self._completed = True
        if self.hooks is not None:
            self.hooks.committed(self.instant)


class RecordChanges:
    """The key-level changes of one commit, what a record-level index learns from it.

    ``inserted``: (record key, partition path, file id) of every record the commit placed
    in a file group that did not hold its key before (inserts, inserts routed into existing
    file groups, and the records of new file groups of a replace commit); ``deleted``:
    (record key, partition path) of every key the commit removed from the table (deletes
    of tagged keys, and the keys of file groups a replace commit replaced), each pair once.
    Updates in place change nothing.

    Held column-wise (:meth:`of_arrays`, :meth:`tables`: Arrow arrays, what writers and the
    record index use); the tuples are made on first use for the consumers that want them."""

    def __init__(self, inserted: Iterable[tuple[str, str, str]] = (),
                 deleted: Iterable[tuple[str, str]] = ()) -> None:
        ins = list(inserted)
        dels = list(dict.fromkeys(deleted))
        self._ins = pa.table({
            "key": pa.array([x[0] for x in ins], pa.string()),
            "partition": pa.array([x[1] for x in ins], pa.string()),
            "file_id": pa.array([x[2] for x in ins], pa.string())})
        self._dels = pa.table({"key": pa.array([x[0] for x in dels], pa.string()),
                               "partition": pa.array([x[1] for x in dels], pa.string())})

    @classmethod
    def of_arrays(cls, inserted: pa.Table | None, deleted: pa.Table | None) -> RecordChanges:
        """From tables: ``inserted`` (key, partition, file_id), ``deleted`` (key,
        partition; repeated pairs are kept once, the first)."""
        out = cls()
        if inserted is not None and inserted.num_rows:
            out._ins = inserted.select(["key", "partition", "file_id"]).cast(out._ins.schema)
        if deleted is not None and deleted.num_rows:
            d = deleted.select(["key", "partition"]).cast(out._dels.schema)
            joined = pc.binary_join_element_wise(d.column("key"), d.column("partition"),
                                                 "\x00").combine_chunks()
            codes = joined.dictionary_encode().indices.to_numpy(zero_copy_only=False)
            _, first = np.unique(codes, return_index=True)
            out._dels = d.take(pa.array(np.sort(first)))
        return out

    def tables(self) -> tuple[pa.Table, pa.Table]:
        """(inserted: key, partition, file_id; deleted: key, partition) as Arrow tables."""
        return self._ins, self._dels

    @property
    def inserted(self) -> tuple[tuple[str, str, str], ...]:
        cols = [self._ins.column(c).to_pylist() for c in ("key", "partition", "file_id")]
        return tuple(zip(*cols, strict=True))

    @property
    def deleted(self) -> tuple[tuple[str, str], ...]:
        cols = [self._dels.column(c).to_pylist() for c in ("key", "partition")]
        return tuple(zip(*cols, strict=True))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, RecordChanges) and self._ins.equals(other._ins)
                and self._dels.equals(other._dels))

    __hash__ = None  # type: ignore[assignment]


class CommitHooks(RollbackHooks):
    """What a commit keeps true beside the data timeline (the metadata table)."""

    def committing(self, instant: str, written: dict[str, dict[str, int]],
                   changes: Callable[[], RecordChanges] | None = None, *,
                   rewrite: bool = False) -> None:  # pragma: no cover - interface
        """The data files of ``instant`` are written and about to be completed;
        ``written``: partition -> {file name: its size in bytes now} of every file the
        commit created or appended to; ``changes``: computes the commit's
        :class:`RecordChanges` (None: the writer does not know them); ``rewrite``: the
        commit rewrote rows without changing any (a compaction)."""

    def committed(self, instant: str) -> None:
        """``instant`` is completed on the data timeline; the writer lock is still held
        (the record index runs its inline services here)."""

    def latest_instant(self) -> str | None:
        """The latest time on the timelines the hooks keep (a new data instant must come
        after it: the record index mirrors data instants); None: none."""
        return None


class HookChain(CommitHooks):
    """Several hooks as one (the metadata table, then the record index), called in order;
    other attributes (``mdt``, ``cleaned``) are the first hook's that has them."""

    def __init__(self, hooks: list[CommitHooks]) -> None:
        self.hooks = hooks

    def committing(self, instant: str, written: dict[str, dict[str, int]],
                   changes: Callable[[], RecordChanges] | None = None, *,
                   rewrite: bool = False) -> None:
        memo: list[RecordChanges] = []

        def once() -> RecordChanges:  # the changes are computed once for every hook
            if not memo:
                assert changes is not None
                memo.append(changes())
            return memo[0]

        for h in self.hooks:
            h.committing(instant, written, None if changes is None else once,
                         rewrite=rewrite)

    def rolled_back(self, failed: str, rollback_instant: str,
                    deleted: dict[str, list[str]]) -> None:
        for h in self.hooks:
            h.rolled_back(failed, rollback_instant, deleted)

    def committed(self, instant: str) -> None:
        for h in self.hooks:
            h.committed(instant)

    def latest_instant(self) -> str | None:
        times = [t for h in self.hooks if (t := h.latest_instant()) is not None]
        return max(times) if times else None

    def __getattr__(self, name: str) -> Any:
        for h in self.__dict__.get("hooks", ()):
            if hasattr(h, name):
                return getattr(h, name)
        raise AttributeError(name)


def _written_files(store: WriteStore, location: TableLocation,
                   stats: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for part, entries in stats.items():
        for e in entries:
            rel = e.get("path")
            if not isinstance(rel, str) or not rel:
                continue
            name = rel.rsplit("/", 1)[-1]
            out.setdefault(part, {})[name] = store.size(store.join(location.path, rel))
    return out


def _describe(exc: BaseException) -> str:
    if isinstance(exc, MorlogError):
        return f"{type(exc).__name__}: {exc.message}"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{type(exc).__name__}: {exc.strerror}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


__all__ = ["HEARTBEAT_DIR", "MORLOG_HEARTBEAT", "TIMELINE_TIMEZONE", "WRITE_TOKEN", "Commit",
           "CommitHooks", "RecordChanges", "RollbackHooks", "TimelineWriter", "base_file_name",
           "check_heartbeat", "ensure_partition", "instant_files", "is_morlog_heartbeat",
           "new_instant",
           "rollback_instant", "rollback_pending", "safe_group", "timeline_utc"]
