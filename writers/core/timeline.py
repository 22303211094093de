"""The timeline a writer writes (spec/table.md): instant times, the timeline files of each
state in the table's layout (:class:`TimelineWriter`), partition metadata, and the files an
instant wrote. The commit protocol (``morlog.writers.core.commit``) and the table services
build on it."""

from __future__ import annotations

import datetime as _dt
import json
import time
from collections.abc import Mapping
from typing import Any

import morlog.config as conf
from morlog.logformat.errors import MorlogError, UsageError
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
)
from morlog.readers.containment import check_file_name, resolve_under
from morlog.readers.storage import TableLocation
from morlog.readers.table import Table
from morlog.writers.core.store import (
    ConcurrentWriterError,
    WriteStore,
)

#: the write token of every file morlog writes (``taskPartitionId-stageId-taskAttemptId``)
WRITE_TOKEN = "0-1-1"
#: extra metadata entry of a morlog writer's inflight instant
MORLOG_WRITER_KEY = conf.WRITER_MARK
#: the timeline file of each state of an instant, by the names the protocol uses
_STATES = {"requested": REQUESTED, "inflight": INFLIGHT, "completed": COMPLETED}


#: the table property choosing the time zone of instant times (``HoodieTableConfig``
#: TIMELINE_TIMEZONE: LOCAL, Hudi's default, or UTC; ``HoodieInstantTimeGenerator``)
TIMELINE_TIMEZONE = conf.TIMELINE_TIMEZONE


def timeline_utc(props: Mapping[str, str]) -> bool:
    """Whether the table's instants are UTC times (else the local time zone, Hudi's
    default)."""
    return (props.get(TIMELINE_TIMEZONE) or "LOCAL").strip().upper() == "UTC"


def latest_time(table: Table, without: str | None = None) -> str | None:
    """The latest time on the table's timeline, completion times (layout 2) included: a new
    instant comes after it, as Hudi's time generator hands out requested and completion
    times from one monotonic clock. ``without``: an instant left out (the caller's own)."""
    times = [t for i in table.timeline.instants if i.requested != without
             for t in (i.requested, i.completed) if t]
    return max(times) if times else None


def latest_completed_request(table: Table, without: str | None = None) -> str | None:
    """The latest requested time of a completed instant (other than ``without``): what an
    optimistic writer's planned instant must follow. Completion times may be later (a
    write completed while it ran: its order is its completion, layout 2), and so may other
    writers' pending instants (they check this one at their own commit)."""
    times = [i.requested for i in table.timeline.instants
             if i.is_completed and i.requested != without]
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


def base_file_name(file_id: str, instant: str, ext: str = "parquet",
                   token: str = WRITE_TOKEN) -> str:
    """The name of the base file a commit ``instant`` writes for file group ``file_id``
    (``ext``: the table's base-file extension, ``morlog.readers.base_files``; ``token``:
    Hudi's write token, a distributed write's task's own)."""
    return str(BaseFileName(file_id, token, instant, ext))


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


__all__ = ["HEARTBEAT_DIR", "HEARTBEAT_INTERVAL_MS", "HEARTBEAT_TOLERABLE_MISSES",
           "OPTIMISTIC_HEARTBEAT", "heartbeat_alive", "heartbeat_is",
           "MORLOG_HEARTBEAT", "MORLOG_WRITER_KEY", "TIMELINE_TIMEZONE", "TimelineWriter",
           "WRITE_TOKEN", "base_file_name", "latest_completed_request", "check_heartbeat",
           "ensure_partition", "has_logs",
           "heartbeat_path", "instant_files", "is_morlog_heartbeat", "latest_time", "new_instant",
           "safe_group", "timeline_utc"]


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
#: the heartbeat of a morlog distributed write (``morlog.writers.distributed``): an optimistic
#: writer that checks conflicts at its commit, so other writers go on beside its pending
#: instant while the heartbeat is fresh (and roll it back once it expired)
OPTIMISTIC_HEARTBEAT = b"morlog.optimistic.writer\n"


def heartbeat_path(store: WriteStore, location: TableLocation, instant: str) -> str:
    return store.join(location.path, ".hoodie", HEARTBEAT_DIR, instant)


def is_morlog_heartbeat(store: WriteStore, location: TableLocation, instant: str) -> bool:
    """Whether ``instant``'s heartbeat file is a morlog writer's (:data:`MORLOG_HEARTBEAT`)."""
    try:
        return store.read(heartbeat_path(store, location, instant)) == MORLOG_HEARTBEAT
    except (FileNotFoundError, MorlogError, OSError):
        return False


def heartbeat_is(store: WriteStore, location: TableLocation, instant: str,
                 content: bytes) -> bool:
    """Whether ``instant``'s heartbeat file holds ``content``."""
    try:
        return store.read(heartbeat_path(store, location, instant)) == content
    except (FileNotFoundError, MorlogError, OSError):
        return False


def heartbeat_alive(store: WriteStore, location: TableLocation, instant: str) -> bool:
    """Whether ``instant``'s heartbeat is fresher than Hudi's expiry."""
    mtime = store.mtime(heartbeat_path(store, location, instant))
    expiry = HEARTBEAT_INTERVAL_MS * (HEARTBEAT_TOLERABLE_MISSES + 1) / 1000.0
    return mtime is not None and time.time() - mtime < expiry


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
