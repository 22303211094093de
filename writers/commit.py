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

Leaving the block releases the lock, whatever happened. A commit that failed before
:meth:`Commit.complete` stays pending on the timeline: readers ignore its files, and the next
writer rolls it back.
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from collections.abc import Iterable
from typing import Any

from morlog.logformat.blocks import rollback_block
from morlog.logformat.errors import UsageError
from morlog.logformat.naming import (
    COMPLETED,
    INFLIGHT,
    REQUESTED,
    BaseFileName,
    LogFileName,
    TimelineFileName,
)
from morlog.logformat.table_files import (
    PARTITION_METADATA_FILE,
    format_partition_metadata,
    partition_depth,
)
from morlog.readers.storage import TableLocation
from morlog.readers.table import Table

from .logwriter import LogFileWriter, Mode
from .store import WriterLock, WriteStore

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

    def write(self, instant: str, state: str, meta: dict[str, Any],
              action: str = "deltacommit") -> None:
        """Publish one timeline file with ``meta`` as JSON; the name must be free."""
        final = self.path(instant, state, action)
        data = json.dumps(meta, indent=2).encode("utf-8")
        if not self.store.create(final, data, sync=self.fsync):
            raise UsageError("timeline file exists already", path=final)

    def inflight_groups(self, instant: str) -> list[dict[str, str]]:
        """The file groups a pending delta commit said it writes ([] when unknown)."""
        inflight = self.path(instant, "inflight")
        if not self.store.exists(inflight):
            return []
        text = self.store.read(inflight).decode("utf-8", errors="replace")
        try:
            groups = json.loads(text).get("morlogFileGroups", []) if text.strip() else []
        except ValueError:
            groups = []
        return list(groups)

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


def rollback_pending(store: WriteStore, location: TableLocation, *, mode: Mode,
                     fsync: bool = True, view: Table | None = None) -> list[str]:
    """Roll back delta commits a dead writer left requested or inflight; their instants."""
    table = view or Table(location)
    timeline = TimelineWriter(store, location, fsync=fsync)
    done = []
    for inst in table.timeline.pending():
        if inst.action != "deltacommit":
            continue
        _rollback(store, location, timeline, table, inst.requested, mode, fsync)
        done.append(inst.requested)
    return done


def _rollback(st: WriteStore, location: TableLocation, timeline: TimelineWriter,
              table: Table, failed: str, mode: Mode, fsync: bool) -> None:
    groups = timeline.inflight_groups(failed)
    last = table.timeline.instants[-1].requested if table.timeline.instants else None
    rb = new_instant(max(x for x in (last, failed) if x is not None))
    timeline.write(rb, "requested", {}, "rollback")
    timeline.write(rb, "inflight", {}, "rollback")
    slices = {(s.partition, s.file_id): s for s in table.file_slices()}
    for g in groups:
        key = (g["partition"], g["fileId"])
        d = location.partition_path(key[0])
        # base files the failed instant created go away
        for name in st.listdir(d):
            if name.startswith(key[1] + "_") and name.endswith(f"_{failed}.parquet"):
                st.delete(st.join(d, name))
        s = slices.get(key)
        if s is not None and has_logs(st, d, key[1]):
            d = ensure_partition(st, location, key[0], fsync=fsync)
            LogFileWriter(d, key[1], s.base_instant, write_token=WRITE_TOKEN, mode=mode,
                          fsync=fsync, store=st).append(rollback_block(rb, failed))
    timeline.write(rb, "completed", {"commitsRollback": [failed], "startRollbackTime": rb,
                                     "totalFilesDeleted": 0}, "rollback")
    timeline.remove_pending(failed)


class Commit:
    """One delta commit of a table (a context manager; see the module's docstring).

    ``schema``: the table's Avro schema (commit metadata carries it, as Hudi's does).
    """

    def __init__(self, store: WriteStore, location: TableLocation, *, mode: Mode,
                 operation: str, schema: dict[str, Any], fsync: bool = True) -> None:
        self.store = store
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

    def __enter__(self) -> Commit:
        lock = self.store.lock(self.location.path)
        try:
            self.rolled_back = rollback_pending(self.store, self.location, mode=self.mode,
                                                fsync=self.fsync)
            view = self.view = Table(self.location)
            last = view.timeline.instants[-1].requested if view.timeline.instants else None
            self.instant = new_instant(last)
        except BaseException:
            lock.release()
            raise
        self._lock = lock
        return self

    def __exit__(self, *exc: object) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def table(self) -> Table:
        """The table as it was when the commit began (after rolling back dead writers)."""
        if self.view is None:
            raise UsageError("the commit has not begun (use it in a with block)")
        return self.view

    def start(self, groups: Iterable[tuple[str, str]]) -> None:
        """Write the requested and inflight instant; ``groups``: (partition, file id) of
        every file group the commit will write."""
        self.timeline.write(self.instant, "requested", {})
        self.timeline.write(self.instant, "inflight", {"morlogFileGroups": [
            {"partition": p, "fileId": f} for p, f in groups]})

    def complete(self, stats: dict[str, list[dict[str, Any]]],
                 summary: dict[str, str]) -> None:
        """Complete the instant with Hudi's commit metadata: ``stats`` (write stats per
        partition) and ``summary`` (``morlog.*`` entries of the extra metadata)."""
        if self._lock is None:
            raise UsageError("the commit has not begun (use it in a with block)")
        self._lock.check()  # a writer whose lease ran out must not complete the instant
        self.timeline.write(self.instant, "completed", {
            "partitionToWriteStats": stats, "compacted": False,
            "extraMetadata": {"schema": json.dumps(self.schema, separators=(",", ":")),
                              **summary},
            "operationType": self.operation.upper()})


__all__ = ["WRITE_TOKEN", "Commit", "TimelineWriter", "base_file_name", "ensure_partition",
           "new_instant", "rollback_pending"]
