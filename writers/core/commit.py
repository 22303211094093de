"""The commit protocol: one delta commit of a table, from the writer lock to completion.

Used by the write client (``morlog.writers.client.MorTable``) and by Spark's distributed
upsert (``morlog.spark.upsert``); both write a commit the same way::

    with Commit(store, location, mode=..., operation="upsert", schema=avro) as c:
        # c.instant, c.rolled_back, c.view (the table after rollback)
        c.start(groups)            # <instant>.deltacommit.requested and .inflight
        ...                        # write the file groups' blocks and base files
        c.complete(stats, summary) # <instant>.deltacommit with commit metadata

1. Entering takes the table's writer lock (``.hoodie/morlog.lock``, see
   ``morlog.writers.core.store``): a second concurrent writer gets ``ConcurrentWriterError``.
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

import json
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import morlog.config as conf
from morlog.logformat.blocks import rollback_block
from morlog.logformat.errors import (
    ConcurrentWriterError,
    HeartbeatWarning,
    MorlogError,
    UsageError,
    WriteError,
)
from morlog.logformat.naming import BaseFileName
from morlog.logformat.partition_path import UnsafePathError
from morlog.logformat.timeline_meta import (
    write_stat,
)
from morlog.readers.base_keys import SUFFIX as BASE_KEYS_SUFFIX
from morlog.readers.base_keys import base_keys_dir
from morlog.readers.changes import cdc_enabled
from morlog.readers.containment import check_file_name
from morlog.readers.schema_on_read import LATEST_SCHEMA
from morlog.readers.storage import TableLocation
from morlog.readers.table import Table
from morlog.writers.core.cdc import cdc_files_of, write_cdc_files
from morlog.writers.core.logwriter import LogFileWriter, Mode
from morlog.writers.core.markers import delete_markers, list_markers
from morlog.writers.core.properties import restore_properties
from morlog.writers.core.schema_history import record_internal_schema
from morlog.writers.core.store import (
    LocalStore,
    WriterLock,
    WriteStore,
    sweep_orphan_temps,
    write_errors,
)
from morlog.writers.core.timeline import (
    HEARTBEAT_DIR,
    MORLOG_HEARTBEAT,
    MORLOG_WRITER_KEY,
    OPTIMISTIC_HEARTBEAT,
    WRITE_TOKEN,
    TimelineWriter,
    check_heartbeat,
    ensure_partition,
    has_logs,
    heartbeat_alive,
    heartbeat_is,
    heartbeat_path,
    instant_files,
    latest_completed_request,
    latest_time,
    new_instant,
    safe_group,
    timeline_utc,
)
from morlog.writers.core.undo import undo_dead_log_compactions


def rollback_pending(store: WriteStore, location: TableLocation, *, mode: Mode,
                     fsync: bool = True, view: Table | None = None,
                     hooks: RollbackHooks | None = None, keep: str | None = None) -> list[str]:
    """Roll back the delta commits that dead writers left requested or inflight; their
    instants. A pending instant of a live Hudi writer (fresh heartbeat) is never touched:
    :class:`ConcurrentWriterError` names it (see :func:`pending_owner`). ``keep``: the
    caller's own pending instant (a distributed write committing what it planned)."""
    table = view or Table(location)
    timeline = TimelineWriter(store, location, layout=table.timeline.layout, fsync=fsync,
                              utc=timeline_utc(table.config.props))
    done = []
    skipped: list[str] = []
    for inst in table.timeline.pending():
        if inst.requested == keep:
            continue
        if (heartbeat_is(store, location, inst.requested, OPTIMISTIC_HEARTBEAT)
                and heartbeat_alive(store, location, inst.requested)):
            # a live distributed write: it checks conflicts with this commit at its own
            continue
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
    # (their new blocks are gone; ``morlog.writers.services.logcompaction``)
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
    if table.version <= 6 and cdc_enabled(table):
        # CDC log files are named after their slice in version 6 (morlog.writers.core.cdc)
        for p in partitions:
            extra = cdc_files_of(st, location.partition_path(p), failed)
            doomed[p] = list(dict.fromkeys([*doomed[p], *extra]))
    # the files a distributed write marked (its tasks' log files of table version 6 are
    # named after their slice, not the instant; spec/table.md §7.4, §7.6), as Hudi's
    # marker-based rollback finds them
    for m in list_markers(st, location, failed):
        names = doomed.setdefault(m.partition, [])
        if m.file_name not in names and st.exists(m.data_path(location)):
            names.append(m.file_name)
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
            if BaseFileName.matches(name):  # its base-key index goes with it
                st.delete(st.join(base_keys_dir(location, p), name + BASE_KEYS_SUFFIX))
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
    delete_markers(st, location, failed)
    st.remove_tree(location.join(".hoodie", ".temp", f"spark-{failed}"))
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
    (``morlog.writers.services.overwrite``; its requested file is empty, as Hudi accepts).
    """

    def __init__(self, store: WriteStore, location: TableLocation, *, mode: Mode,
                 operation: str, schema: dict[str, Any], fsync: bool = True,
                 action: str = "deltacommit", hooks: CommitHooks | None = None,
                 instant: str | None = None, optimistic: bool = False) -> None:
        self.store = store
        #: ``instant`` was planned by a distributed write before the lock was taken: a
        #: later instant on the timeline is another writer's, a ConcurrentWriterError
        self._optimistic = optimistic
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
        #: more ``extraMetadata`` entries of the completed instant (``WriteConfig.
        #: commit_metadata``: the streaming sink's checkpoint)
        self.extra_metadata: dict[str, str] = {}

    def __enter__(self) -> Commit:
        lock = self.store.lock(self.location.path)
        try:
            # a properties rewrite that died leaves the backup only: finish it (spec §1.1)
            restore_properties(self.store, self.location.path, fsync=self.fsync)
            first = Table(self.location)
            self.timeline = TimelineWriter(self.store, self.location,
                                           layout=first.timeline.layout, fsync=self.fsync,
                                           utc=timeline_utc(first.config.props))
            own = self._given_instant if self._optimistic else None
            if own is not None and first.timeline.get(own) is None:
                raise ConcurrentWriterError(
                    f"instant {own} of this write is no longer on the timeline: another "
                    "writer rolled it back (its heartbeat had expired); write again",
                    path=self.location.uri)
            self.rolled_back = rollback_pending(self.store, self.location, mode=self.mode,
                                                fsync=self.fsync, view=first,
                                                hooks=self.hooks, keep=own)
            view = self.view = Table(self.location) if self.rolled_back else first
            last = (latest_time(view) if own is None
                    else latest_completed_request(view, without=own))
            floor = self.hooks.latest_instant() if self.hooks is not None else None
            if floor is not None and (last is None or floor > last):
                last = floor
            if self._given_instant is None:
                self.instant = new_instant(last, utc=self.timeline.utc)
            elif last is not None and self._given_instant <= last and self._optimistic:
                raise ConcurrentWriterError(
                    f"the timeline moved to {last} while this write ran (it planned instant "
                    f"{self._given_instant}): another writer committed; write again",
                    path=self.location.uri)
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

    @property
    def completed(self) -> bool:
        """Whether the instant completed."""
        return self._completed

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
        if not self._optimistic:  # a distributed write's planning wrote it
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
        if LATEST_SCHEMA not in self.extra_metadata:
            # a table with Hudi's internal schema: the commit's version and history
            # (spec/table.md §7.8; Hudi: unless the commit records one already)
            latest = record_internal_schema(self.store, self.table(), self.instant,
                                            self.schema, fsync=self.fsync)
            if latest is not None:
                self.extra_metadata = {**self.extra_metadata, LATEST_SCHEMA: latest}
        # CDC log files of a CDC-enabled table, their cdcStats added to ``stats``
        # (morlog.writers.core.cdc; nothing for other tables)
        cdc = write_cdc_files(self.store, self.location, self.table(), self.instant,
                              self.action, self.operation, self.schema, stats,
                              fsync=self.fsync)
        if cdc:
            summary = {**summary, conf.STAT_CDC_CRC32: json.dumps(cdc, sort_keys=True)}
        if self.hooks is not None:
            self.hooks.committing(self.instant, self.written_files(stats), changes,
                                  schema=json.dumps(self.schema, separators=(",", ":")))
        self.completed_at = self.timeline.write(self.instant, "completed", {
            "partitionToWriteStats": stats, "compacted": False,
            "extraMetadata": {"schema": json.dumps(self.schema, separators=(",", ":")),
                              **summary, **self.extra_metadata},
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
                   rewrite: bool = False,
                   schema: str | None = None) -> None:  # pragma: no cover - interface
        """The data files of ``instant`` are written and about to be completed;
        ``written``: partition -> {file name: its size in bytes now} of every file the
        commit created or appended to; ``changes``: computes the commit's
        :class:`RecordChanges` (None: the writer does not know them); ``rewrite``: the
        commit rewrote rows without changing any (a compaction); ``schema``: the Avro
        schema the commit records (a write that evolves the schema records a new one)."""

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
                   rewrite: bool = False, schema: str | None = None) -> None:
        memo: list[RecordChanges] = []

        def once() -> RecordChanges:  # the changes are computed once for every hook
            if not memo:
                assert changes is not None
                memo.append(changes())
            return memo[0]

        for h in self.hooks:
            h.committing(instant, written, None if changes is None else once,
                         rewrite=rewrite, schema=schema)

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
            # CDC log files go into the metadata table's files partition too (Hudi's
            # HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords adds cdcStats)
            for cdc_rel, size in (e.get("cdcStats") or {}).items():
                out.setdefault(part, {})[cdc_rel.rsplit("/", 1)[-1]] = int(size)
    return out


def _describe(exc: BaseException) -> str:
    if isinstance(exc, MorlogError):
        return f"{type(exc).__name__}: {exc.message}"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{type(exc).__name__}: {exc.strerror}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


__all__ = ["Commit", "CommitHooks", "CommitResult", "HookChain", "RecordChanges", "RollbackHooks",
           "TimelineWriter", "ensure_partition", "instant_files", "new_instant",
           "rollback_instant", "rollback_pending", "safe_group", "timeline_utc"]


@dataclass
class CommitResult:
    instant: str
    operation: str
    inserts: int = 0
    updates: int = 0
    deletes: int = 0
    #: (partition, file id) -> records written
    groups_touched: dict[tuple[str, str], int] = field(default_factory=dict)
    new_groups: list[tuple[str, str]] = field(default_factory=list)
    inserts_routed_to_existing: int = 0
    files_created: list[str] = field(default_factory=list)
    rolled_back: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    #: replace operations: partition -> file ids the commit replaced
    replaced: dict[str, list[str]] = field(default_factory=dict)

    def summary(self) -> dict[str, str]:
        """What the commit did, as ``morlog.*`` entries of the commit's extra metadata
        (Hudi keeps such string entries; Spark jobs read them back from the timeline)."""
        return {conf.STAT_INSERTS: str(self.inserts), conf.STAT_UPDATES: str(self.updates),
                conf.STAT_DELETES: str(self.deletes),
                conf.STAT_INSERTS_ROUTED: str(self.inserts_routed_to_existing),
                conf.STAT_GROUPS_TOUCHED: str(len(self.groups_touched)),
                conf.STAT_GROUPS_NEW: str(len(self.new_groups)),
                conf.STAT_FILES_CREATED: str(len(self.files_created)),
                conf.STAT_SECONDS: f"{sum(v for k, v in self.seconds.items() if k != 'total'):.3f}"}
