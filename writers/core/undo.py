"""Plans read back from the timeline, and the undo of attempts a dead process left behind.

:class:`PlanOperation` is one operation of a compaction or log compaction plan, its names
checked to stay under the table root (a plan is never trusted). Every writer holding the
table's lock undoes morlog's dead log compactions (:func:`undo_dead_log_compactions`, called
by ``rollback_pending``): what they wrote is removed and the instant goes back to requested
(spec/services.md). The services schedule and run plans (``morlog.writers.services``); the
commit protocol (``morlog.writers.core.commit``) only needs this undo."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import morlog.config as conf
from morlog.logformat.errors import ContentError, MorlogError, UsageError
from morlog.logformat.naming import INFLIGHT, LogFileName
from morlog.logformat.timeline_meta import (
    COMPACTION_PLAN_SCHEMA,
    COMPACTION_PLAN_SCHEMA_014,
    decode_avro_as,
)
from morlog.readers.containment import check_file_name
from morlog.readers.storage import TableLocation
from morlog.readers.table import Table
from morlog.writers.core.logwriter import discard_uncommitted
from morlog.writers.core.store import WriteStore
from morlog.writers.core.timeline import (
    TimelineWriter,
    instant_files,
)


@dataclass(frozen=True)
class PlanOperation:
    """One ``HoodieCompactionOperation`` of a plan read from storage, its names checked to
    stay plain file names of a partition under the table root (a plan is never trusted)."""

    partition: str
    file_id: str
    base_instant: str
    base_file: str | None
    log_files: tuple[str, ...]

    @classmethod
    def of(cls, op: Mapping[str, Any], table: Table) -> PlanOperation:
        part = str(op.get("partitionPath") or "")
        table.slice_dir(part)  # raises for a partition outside the table
        logs = [str(n).rsplit("/", 1)[-1] for n in op.get("deltaFilePaths") or []]
        for n in logs:
            check_file_name(n)
        fid = str(op.get("fileId") or "")
        check_file_name(fid)
        base = op.get("dataFilePath")
        if base:
            check_file_name(str(base).rsplit("/", 1)[-1])
        return cls(part, fid, str(op.get("baseInstantTime") or ""),
                   str(base).rsplit("/", 1)[-1] if base else None, tuple(logs))


LOG_COMPACTION = "logcompaction"


#: extra metadata entry of the plans morlog schedules (the next writer may undo their dead
#: attempts; another engine's pending plans are never touched)
MORLOG_PLAN_KEY = conf.WRITER_MARK


def read_plan(store: WriteStore, location: TableLocation, table: Table, instant: str,
              action: str = LOG_COMPACTION) -> dict[str, Any]:
    """The plan of the compaction or log compaction (``action``) requested at ``instant``
    (both are ``HoodieCompactionPlan``); a :class:`ContentError` naming the plan file when it
    does not decode (``morlog repair --apply`` removes a requested one)."""
    what = "compaction" if action == "compaction" else "log compaction"
    writer = TimelineWriter(store, location, layout=table.timeline.layout)
    path = writer.path(instant, "requested", action)
    if not store.exists(path):
        raise UsageError(f"no {what} plan of this instant", path=path)
    schema = COMPACTION_PLAN_SCHEMA_014 if table.timeline.layout == 1 else COMPACTION_PLAN_SCHEMA
    try:
        plan = decode_avro_as(store.read(path), schema, path)
    except ContentError as exc:
        raise ContentError(f"{exc.message}; a {what} whose plan does not decode cannot run "
                           "('morlog repair --apply' removes it while it is requested)",
                           path=path) from None
    if not isinstance(plan.get("operations"), list):
        raise UsageError(f"the {what} plan has no operations", path=path)
    return plan


def undo_attempt(store: WriteStore, location: TableLocation, table: Table,
                 writer: TimelineWriter, hooks: Any, instant: str,
                 ops: Sequence[PlanOperation]) -> None:
    """Remove what an attempt at log compaction ``instant`` wrote: its log files in the
    planned file groups (version 8+: those named after ``instant``; version 6: the slice's
    log files holding only its blocks), its metadata-table commit; the instant goes back to
    requested."""
    if hooks is not None and hasattr(hooks, "mdt"):
        hooks.mdt.roll_back(instant, None)
    for op in ops:
        undo_slice(store, location, table, instant, op)
    store.delete(writer.path(instant, "inflight", LOG_COMPACTION))


def undo_slice(store: WriteStore, location: TableLocation, table: Table, instant: str,
               op: PlanOperation) -> None:
    """Remove the log files an attempt at log compaction ``instant`` wrote in the file group
    of ``op``: version 8+ those named after ``instant``, version 6 the slice's log files
    holding only its blocks (the output always starts a new log file, §3.5)."""
    d = location.partition_path(op.partition)
    if table.version >= 8:
        for n in instant_files(store, d, instant, op.file_id):
            if LogFileName.matches(n):
                store.delete(store.join(d, n))
    else:
        discard_uncommitted(d, op.file_id, op.base_instant, instant, store)


def undo_dead_log_compactions(store: WriteStore, location: TableLocation, table: Table,
                              writer: TimelineWriter, hooks: Any) -> list[str]:
    """Called by every writer holding the table's lock (``rollback_pending``): the log
    compactions that morlog scheduled and a dead process left inflight go back to
    requested, what they wrote removed (their new blocks would otherwise stand in the
    slice's logs with an index that no longer covers the blocks they were to replace).
    Another engine's pending log compactions are left alone. Their instants."""
    out = []
    for inst in table.timeline.pending():
        if inst.action != LOG_COMPACTION or inst.state != INFLIGHT:
            continue
        try:
            plan = read_plan(store, location, table, inst.requested)
        except MorlogError:
            continue
        if (plan.get("extraMetadata") or {}).get(MORLOG_PLAN_KEY) != "1":
            continue
        ops = [PlanOperation.of(op, table) for op in plan["operations"]]
        undo_attempt(store, location, table, writer, hooks, inst.requested, ops)
        out.append(inst.requested)
    return out


__all__ = ["LOG_COMPACTION", "MORLOG_PLAN_KEY", "PlanOperation", "read_plan", "undo_attempt",
           "undo_dead_log_compactions", "undo_slice"]
