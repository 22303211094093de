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
from collections.abc import Iterable
from typing import Any

from morlog.logformat.blocks import rollback_block
from morlog.logformat.errors import MorlogError, UsageError, WriteError
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
from morlog.readers.containment import check_file_name, resolve_under
from morlog.readers.storage import TableLocation
from morlog.readers.table import Table

from .logwriter import LogFileWriter, Mode
from .repair import sweep_orphan_temps
from .store import LocalStore, WriterLock, WriteStore

#: the write token of every file morlog writes (``taskPartitionId-stageId-taskAttemptId``)
WRITE_TOKEN = "0-1-1"
#: the timeline file of each state of an instant, by the names the protocol uses
_STATES = {"requested": REQUESTED, "inflight": INFLIGHT, "completed": COMPLETED}


def new_instant(after: str | None = None) -> str:
    """A fresh instant (yyyyMMddHHmmssSSS, UTC), later than ``after``."""
    now = _dt.datetime.now(_dt.UTC)
    inst = now.strftime("%Y%m%d%H%M%S") + f"{now.microsecond // 1000:03d}"
    if after is not None and inst <= after:
        inst = str(int(after) + 1).zfill(17)
    return inst


def base_file_name(file_id: str, instant: str) -> str:
    """The name of the base file a commit ``instant`` writes for file group ``file_id``."""
    return str(BaseFileName(file_id, WRITE_TOKEN, instant))


class TimelineWriter:
    """Writes a table's timeline files (layout 1, ``.hoodie/``), each published whole."""

    def __init__(self, store: WriteStore, location: TableLocation, *,
                 fsync: bool = True) -> None:
        self.store = store
        self.location = location
        self.fsync = fsync

    def path(self, instant: str, state: str, action: str = "deltacommit") -> str:
        """The file of ``instant`` in ``state`` (requested, inflight, completed)."""
        name = TimelineFileName(instant, action, _STATES[state])
        return self.store.join(self.location.path, ".hoodie", str(name))

    def write(self, instant: str, state: str, meta: dict[str, Any] | None,
              action: str = "deltacommit") -> None:
        """Publish one timeline file with ``meta`` as JSON (None: an empty file); the name
        must be free."""
        final = self.path(instant, state, action)
        data = b"" if meta is None else json.dumps(meta, indent=2).encode("utf-8")
        if not self.store.create(final, data, sync=self.fsync):
            raise UsageError("timeline file exists already", path=final)

    def inflight_groups(self, instant: str, action: str = "deltacommit") -> list[Any]:
        """The file group entries a pending delta commit said it writes ([] when unknown or
        unreadable); unchecked: see :func:`safe_group`."""
        inflight = self.path(instant, "inflight", action)
        if not self.store.exists(inflight):
            return []
        text = self.store.read(inflight).decode("utf-8", errors="replace")
        try:
            meta = json.loads(text) if text.strip() else {}
        except (ValueError, RecursionError):
            return []
        groups = meta.get("morlogFileGroups", []) if isinstance(meta, dict) else []
        return list(groups) if isinstance(groups, list) else []

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


def rollback_pending(store: WriteStore, location: TableLocation, *, mode: Mode,
                     fsync: bool = True, view: Table | None = None) -> list[str]:
    """Roll back delta commits a dead writer left requested or inflight; their instants."""
    table = view or Table(location)
    timeline = TimelineWriter(store, location, fsync=fsync)
    done = []
    skipped: list[str] = []
    for inst in table.timeline.pending():
        if inst.action != "deltacommit" and not _own_replace(timeline, inst.requested,
                                                             inst.action):
            continue
        skipped += _rollback(store, location, timeline, table, inst.requested, mode, fsync,
                             inst.action)
        done.append(inst.requested)
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


def _own_replace(timeline: TimelineWriter, instant: str, action: str) -> bool:
    """Whether a pending instant is a replace commit that morlog writes (its requested file
    empty); Hudi's clustering plans (Avro content) are left to Hudi."""
    if action != "replacecommit":
        return False
    requested = timeline.path(instant, "requested", action)
    return timeline.store.exists(requested) and not timeline.store.read(requested)


def _rollback(st: WriteStore, location: TableLocation, timeline: TimelineWriter,
              table: Table, failed: str, mode: Mode, fsync: bool,
              action: str = "deltacommit") -> list[str]:
    """Roll back instant ``failed``; the file group entries skipped as unsafe, each
    described."""
    skipped = []
    groups = timeline.inflight_groups(failed, action)
    last = table.timeline.instants[-1].requested if table.timeline.instants else None
    rb = new_instant(max(x for x in (last, failed) if x is not None))
    timeline.write(rb, "requested", {}, "rollback")
    timeline.write(rb, "inflight", {}, "rollback")
    slices = {(s.partition, s.file_id): s for s in table.file_slices()}
    for g in groups:
        try:
            key = safe_group(location, g)
        except MorlogError as exc:
            skipped.append(f"{repr(g)[:200]} ({exc.message})")
            continue
        d = location.partition_path(key[0])
        # base files the failed instant created go away
        for name in st.listdir(d):
            if (name.startswith(key[1] + "_") and name.endswith(f"_{failed}.parquet")
                    and BaseFileName.matches(name)):
                st.delete(st.join(d, check_file_name(name)))
        s = slices.get(key)
        if s is not None and has_logs(st, d, key[1]):
            d = ensure_partition(st, location, key[0], fsync=fsync)
            LogFileWriter(d, key[1], s.base_instant, write_token=WRITE_TOKEN, mode=mode,
                          fsync=fsync, store=st).append(rollback_block(rb, failed))
    timeline.write(rb, "completed", {"commitsRollback": [failed], "startRollbackTime": rb,
                                     "totalFilesDeleted": 0}, "rollback")
    timeline.remove_pending(failed, action)
    return skipped


class Commit:
    """One delta commit of a table (a context manager; see the module's docstring).

    ``schema``: the table's Avro schema (commit metadata carries it, as Hudi's does).
    ``action``: ``deltacommit``, or ``replacecommit`` for the replace operations
    (``morlog.writers.overwrite``; its requested file is empty, as Hudi accepts).
    """

    def __init__(self, store: WriteStore, location: TableLocation, *, mode: Mode,
                 operation: str, schema: dict[str, Any], fsync: bool = True,
                 action: str = "deltacommit") -> None:
        self.store = store
        self.action = action
        self.location = location
        self.mode: Mode = mode
        self.operation = operation
        self.schema = schema
        self.fsync = fsync
        self.timeline = TimelineWriter(store, location, fsync=fsync)
        self._lock: WriterLock | None = None
        #: set on entering: the instants rolled back, the table after that, the new instant
        self.rolled_back: list[str] = []
        self.view: Table | None = None
        self.instant = ""
        #: temporary files of dead writers removed on entering
        self.swept: list[str] = []
        self._started = False
        self._completed = False

    def __enter__(self) -> Commit:
        lock = self.store.lock(self.location.path)
        try:
            self.rolled_back = rollback_pending(self.store, self.location, mode=self.mode,
                                                fsync=self.fsync)
            view = self.view = Table(self.location)
            last = view.timeline.instants[-1].requested if view.timeline.instants else None
            self.instant = new_instant(last)
            if isinstance(self.store, LocalStore):
                # only local writes stage temporary files (S3 publishes by conditional PUT)
                root = self.location.path
                dirs = [root, self.store.join(root, ".hoodie"),
                        *(self.location.partition_path(p) for p in view.partitions() if p)]
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
            lock.release()

    def _roll_back_own(self, exc: Exception) -> None:
        """Roll back this commit's own instant after ``exc`` (the writer is alive: the
        table is left as before, not for the next writer); raise the typed error."""
        try:
            _rollback(self.store, self.location, self.timeline, Table(self.location),
                      self.instant, self.mode, self.fsync, self.action)
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
        every file group the commit will write."""
        self._started = True
        self.timeline.write(self.instant, "requested",
                            {} if self.action == "deltacommit" else None, self.action)
        self.timeline.write(self.instant, "inflight", {"morlogFileGroups": [
            {"partition": p, "fileId": f} for p, f in groups]}, self.action)

    def complete(self, stats: dict[str, list[dict[str, Any]]],
                 summary: dict[str, str],
                 replaced: dict[str, list[str]] | None = None) -> None:
        """Complete the instant with Hudi's commit metadata: ``stats`` (write stats per
        partition), ``summary`` (``morlog.*`` entries of the extra metadata) and, for a
        replace commit, ``replaced`` (``partitionToReplaceFileIds``)."""
        if self._lock is None:
            raise UsageError("the commit has not begun (use it in a with block)")
        self._lock.check()  # a writer whose lease ran out must not complete the instant
        self.timeline.write(self.instant, "completed", {
            "partitionToWriteStats": stats, "compacted": False,
            "extraMetadata": {"schema": json.dumps(self.schema, separators=(",", ":")),
                              **summary},
            "operationType": self.operation.upper(),
            **({} if replaced is None else {"partitionToReplaceFileIds": replaced})},
            self.action)
        self._completed = True


def _describe(exc: BaseException) -> str:
    if isinstance(exc, MorlogError):
        return f"{type(exc).__name__}: {exc.message}"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{type(exc).__name__}: {exc.strerror}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


__all__ = ["WRITE_TOKEN", "Commit", "TimelineWriter", "base_file_name",
           "ensure_partition", "new_instant", "rollback_pending", "safe_group"]
