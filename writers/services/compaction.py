"""Compaction (Hudi's major compaction): the base file and logs of a file slice merged into a
new base file that starts the file group's next slice (spec/services.md §4).

Three steps, each under the table's writer lock, as Hudi's table service client runs them:

1. **Schedule** (:func:`schedule_compaction`): when the trigger fires (Hudi's
   ``hoodie.compact.inline.trigger.strategy``, by default ``NUM_COMMITS``: at least
   ``hoodie.compact.inline.max.delta.commits`` = 5 delta commits since the last compaction)
   or when asked to, every latest slice with log files that no pending compaction or
   clustering holds becomes one operation of a plan (``HoodieCompactionPlan``, largest log
   size first, Hudi's default ``LogFileSizeBasedCompactionStrategy``), written as
   ``<C>.compaction.requested``.
2. **Execute** (:func:`run_compaction`): ``<C>.compaction.inflight``; each operation's slice
   (exactly the files the plan names) is read merged with the table's merge rules and
   written as ``<fileId>_<token>_<C>.<ext>`` with Hudi's footers; each record keeps its
   meta fields (the commit time of its last write) but ``_hoodie_file_name``. A slice whose
   merge leaves no record gets no file. The metadata table learns the new base files in a
   delta commit of the same instant (``files``, column statistics, bloom filters; the
   record index and secondary indexes stay, as Hudi leaves them).
3. **Complete**: ``<C>.commit`` (layout 2: ``<C>_<done>.commit``) with the commit metadata of
   a compaction (``compacted`` true, operation ``COMPACT``).

A failure while executing rolls the attempt back (its base files deleted, its metadata-table
commit rolled back, the inflight file removed) and leaves the plan requested: the next
:func:`run_compaction` (or ``morlog compact``) executes it again, as Hudi re-runs a failed
compaction from its plan. A process that died mid-way leaves the instant inflight, which the
next execution cleans up the same way before it starts.

While a compaction is pending, writers put new logs into the slice it starts and route no
inserts into its file groups (``morlog.writers.client``), and readers merge the pending
slice with the one before (``morlog.readers.table``).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

import morlog.config as conf
from morlog.logformat.errors import (
    ContentError,
    MorlogError,
    MorlogWarning,
    UsageError,
)
from morlog.logformat.naming import BaseFileName, LogFileName
from morlog.logformat.timeline_meta import (
    compaction_commit_metadata,
    compaction_metrics,
    compaction_operation,
    compaction_plan,
    write_stat,
)
from morlog.readers.base_files import table_base_format
from morlog.readers.merge import conform, read_slice
from morlog.readers.table import FileSlice, Table
from morlog.writers.core.commit import CommitHooks
from morlog.writers.core.timeline import (
    TimelineWriter,
    base_file_name,
    latest_time,
    new_instant,
    timeline_utc,
)
from morlog.writers.core.undo import PlanOperation
from morlog.writers.core.undo import read_plan as read_service_plan
from morlog.writers.services.base import (
    PlanRun,
    option_flag,
    option_int,
    run_with_progress,
    service_lock,
)

if TYPE_CHECKING:
    from morlog.writers.client import MorTable

COMPACTION = "compaction"
#: the meta field that names the file a record lives in
FILE_NAME_FIELD = "_hoodie_file_name"

#: Hudi's compaction settings (``HoodieCompactionConfig``) and their defaults
INLINE = conf.COMPACT_INLINE
SCHEDULE_INLINE = conf.COMPACT_SCHEDULE_INLINE
MAX_DELTA_COMMITS = conf.COMPACT_MAX_DELTA_COMMITS
MAX_DELTA_SECONDS = conf.COMPACT_MAX_DELTA_SECONDS
TRIGGER_STRATEGY = conf.COMPACT_TRIGGER_STRATEGY
LOG_SIZE_THRESHOLD = conf.COMPACTION_LOGFILE_SIZE_THRESHOLD
TARGET_IO = conf.COMPACTION_TARGET_IO
STRATEGY = conf.COMPACTION_STRATEGY
#: every compaction setting (write options kept in ``WriteConfig.hoodie_options``)
OPTION_KEYS = frozenset({INLINE, SCHEDULE_INLINE, MAX_DELTA_COMMITS, MAX_DELTA_SECONDS,
                         TRIGGER_STRATEGY, LOG_SIZE_THRESHOLD, TARGET_IO, STRATEGY})
BOOLEAN_KEYS = frozenset({INLINE, SCHEDULE_INLINE})
TRIGGERS = ("NUM_COMMITS", "NUM_COMMITS_AFTER_LAST_REQUEST", "TIME_ELAPSED", "NUM_OR_TIME",
            "NUM_AND_TIME")
#: the strategies whose rule morlog applies (Hudi's default, and the size-bounded base)
STRATEGIES = ("org.apache.hudi.table.action.compact.strategy."
              "LogFileSizeBasedCompactionStrategy",
              "org.apache.hudi.table.action.compact.strategy.BoundedIOCompactionStrategy")


@dataclass(frozen=True)
class CompactionSettings:
    """Hudi's compaction settings from a table's properties and write options."""

    inline: bool = conf.default_bool(INLINE)
    schedule_inline: bool = conf.default_bool(SCHEDULE_INLINE)
    max_delta_commits: int = conf.default_int(MAX_DELTA_COMMITS)
    max_delta_seconds: int = conf.default_int(MAX_DELTA_SECONDS)
    trigger: str = conf.default(TRIGGER_STRATEGY)
    log_size_threshold: int = conf.default_int(LOG_SIZE_THRESHOLD)
    target_io_mb: int = conf.default_int(TARGET_IO)

    @classmethod
    def of(cls, options: Mapping[str, str]) -> CompactionSettings:
        """From Hudi's option names (``UsageError`` naming a bad value)."""
        trigger = str(options.get(TRIGGER_STRATEGY, cls.trigger)).strip().upper()
        if trigger not in TRIGGERS:
            raise UsageError(f"{TRIGGER_STRATEGY}: unknown trigger strategy",
                             expected=list(TRIGGERS), actual=trigger)
        strategy = options.get(STRATEGY)
        if strategy and strategy not in STRATEGIES:
            raise UsageError(f"{STRATEGY}: morlog plans with Hudi's default strategy",
                             expected=list(STRATEGIES), actual=strategy)
        return cls(inline=option_flag(options, INLINE, cls.inline),
                   schedule_inline=option_flag(options, SCHEDULE_INLINE, cls.schedule_inline),
                   max_delta_commits=max(1, option_int(options, MAX_DELTA_COMMITS,
                                                       cls.max_delta_commits)),
                   max_delta_seconds=option_int(options, MAX_DELTA_SECONDS,
                                                cls.max_delta_seconds),
                   trigger=trigger,
                   log_size_threshold=option_int(options, LOG_SIZE_THRESHOLD,
                                                 cls.log_size_threshold),
                   target_io_mb=option_int(options, TARGET_IO, cls.target_io_mb))


@dataclass
class CompactionResult:
    """What one compaction did."""

    instant: str
    #: (partition, file id, new base file name or None when the slice merged to nothing)
    compacted: list[tuple[str, str, str | None]] = field(default_factory=list)
    records_written: int = 0
    bytes_written: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"instant": self.instant, "records_written": self.records_written,
                "bytes_written": self.bytes_written, "seconds": round(self.seconds, 3),
                "file_groups": [{"partition": p, "file_id": f, "base_file": b}
                                for p, f, b in self.compacted]}


def settings_of(mt: MorTable) -> CompactionSettings:
    return CompactionSettings.of({**mt.props, **mt.config.hoodie_options})


# --- scheduling ------------------------------------------------------------------------------


def _order_time(table: Table, requested: str) -> str:
    """When an instant counts for the trigger: its completion time in layout 2 (Hudi 1.1
    counts by completion time), its requested time in layout 1 (Hudi 0.14)."""
    if table.timeline.layout == 2:
        return table.timeline.completion_time(requested) or requested
    return requested


def delta_commits_since_compaction(table: Table, *, after_request: bool = False
                                   ) -> tuple[int, str | None]:
    """(completed delta commits after the last completed compaction, or after the last
    compaction request with ``after_request``; the time counted from, None when no
    compaction yet: the first delta commit's) as
    ``CompactionUtils.getCompletedDeltaCommitsSinceLatestCompaction`` counts them."""
    tl = table.timeline
    compactions = [i for i in tl.instants if i.action in ("commit", COMPACTION)
                   and (after_request or i.is_completed)]
    since = max((_order_time(table, i.requested) for i in compactions), default=None)
    deltas = sorted(_order_time(table, i.requested) for i in tl.completed(frozenset(
        {"deltacommit"})))
    counted = [t for t in deltas if since is None or t > since]
    start = since if since is not None else (deltas[0] if deltas else None)
    return len(counted), start


def _seconds_between(a: str, b: str) -> float:
    def parse(t: str) -> float:
        return time.mktime(time.strptime(t[:14], "%Y%m%d%H%M%S")) + int(t[14:17] or 0) / 1000
    return parse(b) - parse(a)


def trigger_fires(table: Table, settings: CompactionSettings, now: str) -> bool:
    """Hudi's ``needCompact`` for the trigger strategy."""
    n, since = delta_commits_since_compaction(
        table, after_request=settings.trigger == "NUM_COMMITS_AFTER_LAST_REQUEST")
    by_num = n >= settings.max_delta_commits
    by_time = since is not None and _seconds_between(since, now) >= settings.max_delta_seconds
    return {"NUM_COMMITS": by_num, "NUM_COMMITS_AFTER_LAST_REQUEST": by_num,
            "TIME_ELAPSED": by_time, "NUM_OR_TIME": by_num or by_time,
            "NUM_AND_TIME": by_num and by_time}[settings.trigger]


def plan_operations(mt: MorTable, table: Table, settings: CompactionSettings
                    ) -> list[dict[str, Any]]:
    """The operations of a new plan: every latest slice with log files outside pending
    compactions and clusterings, of total log size at least the threshold, largest first,
    within the IO bound (``LogFileSizeBasedCompactionStrategy``)."""
    pending = table.timeline.pending_services()
    busy = set(pending.compaction) | set(pending.clustering)
    cands: list[tuple[int, FileSlice, dict[str, int]]] = []
    sizes_by_part: dict[str, dict[str, int]] = {}
    for s in table.file_slices():
        if not s.log_files or (s.partition, s.file_id) in busy:
            continue
        sizes = sizes_by_part.get(s.partition)
        if sizes is None:
            sizes = sizes_by_part[s.partition] = mt.store.storage.sizes(
                mt.partition_path(s.partition))
        log_size = sum(sizes.get(n, 0) for n in s.log_files)
        if log_size < settings.log_size_threshold:
            continue
        cands.append((log_size, s, sizes))
    cands.sort(key=lambda c: (-c[0], c[1].partition, c[1].file_id))
    ops: list[dict[str, Any]] = []
    io_mb = 0.0
    max_file = mt.config.max_file_size
    for _, s, sizes in cands:
        metrics = compaction_metrics([sizes.get(n, 0) for n in s.log_files],
                                     sizes.get(s.base_file) if s.base_file else None,
                                     max_file)
        if ops and io_mb + metrics["TOTAL_IO_MB"] > settings.target_io_mb:
            continue  # BoundedIOCompactionStrategy: over the budget (the first always goes)
        io_mb += metrics["TOTAL_IO_MB"]
        ops.append(compaction_operation(s.partition, s.file_id, s.base_instant,
                                        sorted(s.log_files, key=_log_order), s.base_file,
                                        metrics=metrics))
    return ops


def _log_order(name: str) -> tuple[str, int, str]:
    ln = LogFileName.parse(name)
    return ln.instant, ln.version, ln.write_token or ""


def schedule_compaction(mt: MorTable, *, force: bool = False) -> str | None:
    """Write a compaction plan when the trigger fires (always with ``force``) and some
    slice has logs to compact; its instant, or None when nothing was scheduled."""
    settings = settings_of(mt)
    with service_lock(mt) as table:
        utc = timeline_utc(table.config.props)
        instant = new_instant(latest_time(table), utc=utc)
        if not force and not trigger_fires(table, settings, instant):
            return None
        ops = plan_operations(mt, table, settings)
        if not ops:
            return None
        writer = TimelineWriter(mt.store, mt.location, layout=table.timeline.layout,
                                fsync=mt.config.fsync, utc=utc)
        writer.write(instant, "requested", compaction_plan(ops), COMPACTION)
        return instant


# --- unreadable plans --------------------------------------------------------------------------


def check_unreadable_plans(unreadable: Mapping[str, MorlogError], version: int,
                           slices: Iterable[FileSlice]) -> None:
    """A writer's way past requested compaction plans that do not decode
    (``PendingServices.unreadable``; spec/services.md §4.6). Hudi's writers stop on them
    (``CompactionUtils.getCompactionPlan`` throws while the file system view lists pending
    compactions); such a plan wrote nothing and can never run, so morlog's writers go on
    without it, warning with the file's name, and ``morlog repair --apply`` removes it.
    Table version 6 is the exception when a slice holds logs named after the unreadable
    instant (written into the slice the compaction starts, before its plan was damaged):
    which slice they belong to needs the plan, so the write is refused with the plan
    file's :class:`ContentError`."""
    for instant, exc in sorted(unreadable.items()):
        if version < 8:
            for s in slices:
                if any(LogFileName.parse(n).instant == instant for n in s.log_files):
                    raise ContentError(
                        f"{exc.message}; the pending compaction {instant} it plans holds "
                        f"logs ({s.partition or '.'}/{s.file_id}), so the plan is needed: "
                        "restore it, or roll the compaction back with Hudi's CLI",
                        path=exc.path) from None
        warnings.warn(MorlogWarning(
            f"{exc}: a requested compaction whose plan does not decode is ignored (it "
            "wrote nothing and cannot run); 'morlog repair --apply' removes it"),
            stacklevel=3)


# --- executing -------------------------------------------------------------------------------


def pending_compactions(table: Table) -> list[str]:
    """Instants of the compactions requested or inflight, oldest first."""
    return sorted(i.requested for i in table.timeline.pending() if i.action == COMPACTION)


def read_plan(mt: MorTable, table: Table, instant: str) -> dict[str, Any]:
    """The plan of compaction ``instant`` (:func:`morlog.writers.core.undo.read_plan`)."""
    return read_service_plan(mt.store, mt.location, table, instant, COMPACTION)


#: runs the planned operations of one compaction: (table, instant, operations as plan
#: dicts) -> per operation (operation, new base file name or None, rows, write stat)
OperationRunner = Callable[["MorTable", str, list[dict[str, Any]]],
                           list[tuple[dict[str, Any], str | None, int, dict[str, Any]]]]


class _CompactionRun(PlanRun["CompactionResult"]):
    action = COMPACTION
    completed_action = "commit"
    label = "compaction"
    again = "the next 'morlog compact' cleans it up and runs it again"

    def read_plan(self, table: Table) -> dict[str, Any]:
        return read_plan(self.mt, table, self.instant)

    def undo(self, table: Table, writer: TimelineWriter, hooks: CommitHooks | None,
             ops: Sequence[PlanOperation]) -> None:
        _undo_attempt(self.mt, writer, hooks, self.instant, ops)

    def execute(self, table: Table, plan: Mapping[str, Any], ops: Sequence[PlanOperation],
                progress: Callable[[int, int], None] | None, runner: OperationRunner | None
                ) -> tuple[CompactionResult, dict[str, list[dict[str, Any]]]]:
        mt, instant = self.mt, self.instant
        if runner is None:
            outcomes = run_with_progress(lambda op: _compact_one(mt, table, instant, op), ops,
                                         mt.thread_count(), progress)
        else:
            outcomes = [(PlanOperation.of(op, table), name, rows, stat)
                        for op, name, rows, stat in runner(mt, instant, list(plan["operations"]))]
        result = CompactionResult(instant)
        stats: dict[str, list[dict[str, Any]]] = {}
        for op, name, rows, stat in outcomes:
            result.compacted.append((op.partition, op.file_id, name))
            if name is not None:
                stats.setdefault(op.partition, []).append(stat)
                result.records_written += rows
                result.bytes_written += int(stat["fileSizeInBytes"])
        return result, stats

    def completed_metadata(self, stats: Mapping[str, list[dict[str, Any]]], schema: str
                           ) -> dict[str, Any]:
        return compaction_commit_metadata(dict(stats), schema)


def run_compaction(mt: MorTable, instant: str, *,
                   progress: Callable[[int, int], None] | None = None,
                   runner: OperationRunner | None = None) -> CompactionResult:
    """Execute the compaction planned at ``instant`` (see the module docstring).
    ``runner``: where the operations run (default: threads of this process; Spark:
    ``morlog.spark.compact``, one task per file slice)."""
    return _CompactionRun(mt, instant).run(progress, runner)


def compact_operation(mt: MorTable, instant: str, op: Mapping[str, Any], *,
                      retry: bool = False
                      ) -> tuple[dict[str, Any], str | None, int, dict[str, Any]]:
    """One planned operation (a plan dict) of compaction ``instant``, as a task runs it:
    (the operation, the new base file's name or None, rows, write stat). ``retry``: a
    file of the new base file's name is a failed attempt's of this very operation and is
    replaced (the instant is not complete, so no reader trusts it)."""
    table = mt.table()
    o = PlanOperation.of(op, table)
    if retry:
        fmt = table_base_format(mt.props)
        mt.store.delete(mt.store.join(mt.partition_path(o.partition),
                                      base_file_name(o.file_id, instant, fmt.ext)))
    _, name, rows, stat = _compact_one(mt, table, instant, o)
    return dict(op), name, rows, stat


def _compact_one(mt: MorTable, table: Table, instant: str, op: PlanOperation
                 ) -> tuple[PlanOperation, str | None, int, dict[str, Any]]:
    """Merge one planned slice into the new base file; (op, its name or None, rows, stat)."""
    spec = table.merge_spec(None, None)
    rows = read_slice(table.slice_dir(op.partition), op.base_file, list(op.log_files), spec,
                      table.timeline, table.storage, sealed=table.sealed_base_files)
    if rows.num_rows == 0 and op.base_file is None:
        # a log-only slice whose records are all deleted: Hudi writes no file for it [V]
        return op, None, 0, {}
    fmt = table_base_format(mt.props)
    name = base_file_name(op.file_id, instant, fmt.ext)
    # the table's write schema; ``_hoodie_file_name`` names the new file
    records = conform(rows, mt.arrow_schema)
    if FILE_NAME_FIELD in records.column_names:
        i = records.schema.get_field_index(FILE_NAME_FIELD)
        records = records.set_column(i, records.schema.field(i), pa.repeat(
            pa.scalar(name, records.schema.field(i).type), records.num_rows))
    path = mt.write_base(op.partition, op.file_id, instant, records)
    size = mt.store.size(path)
    rel = f"{op.partition}/{name}" if op.partition else name
    stat = write_stat(op.partition, op.file_id, rel, prev_commit=op.base_instant or "null",
                      num_writes=records.num_rows, num_update_writes=records.num_rows,
                      file_size=size)
    if op.base_file:
        stat["prevBaseFile"] = op.base_file
    stat["totalLogFilesCompacted"] = len(op.log_files)
    sizes = mt.store.storage.sizes(mt.partition_path(op.partition))
    stat["totalLogSizeCompacted"] = sum(sizes.get(n, 0) for n in op.log_files)
    return op, name, records.num_rows, stat


def _undo_attempt(mt: MorTable, writer: TimelineWriter, hooks: Any, instant: str,
                  ops: Sequence[PlanOperation]) -> None:
    """Remove what an attempt at ``instant`` wrote: its base files in the planned groups, its
    metadata-table commit; the instant goes back to requested (Hudi's
    ``revertInstantFromInflightToRequested``)."""
    if hooks is not None and hasattr(hooks, "mdt"):
        hooks.mdt.roll_back(instant, None)
    for part in dict.fromkeys(op.partition for op in ops):
        d = mt.partition_path(part)
        fids = {op.file_id for op in ops if op.partition == part}
        for n in mt.store.listdir(d):
            if BaseFileName.matches(n):
                b = BaseFileName.parse(n)
                if b.instant == instant and b.file_id in fids:
                    mt.store.delete(mt.store.join(d, n))
    mt.store.delete(writer.path(instant, "inflight", COMPACTION))


# --- the whole service -----------------------------------------------------------------------


@dataclass
class CompactReport:
    """What :func:`compact` planned and ran."""

    planned: list[dict[str, Any]] = field(default_factory=list)
    results: list[CompactionResult] = field(default_factory=list)
    dry_run: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "planned": self.planned,
                "compactions": [r.as_dict() for r in self.results]}


def compact(mt: MorTable, *, dry_run: bool = False, force: bool = True,
            progress: Callable[[int, int], None] | None = None,
            runner: OperationRunner | None = None) -> CompactReport:
    """Run the compactions pending, then plan one over every latest slice with logs (with
    ``force``, the default; else only when the trigger fires) and run it: afterwards no
    latest slice has log files, except those of file groups under pending clustering.
    ``dry_run``: only report the operations a plan would hold now."""
    report = CompactReport(dry_run=dry_run)
    table = mt.table()
    if dry_run:
        report.planned = [{"instant": i, "pending": True} for i in pending_compactions(table)]
        report.planned += [
            {"partition": op["partitionPath"], "file_id": op["fileId"],
             "base_file": op["dataFilePath"], "log_files": op["deltaFilePaths"],
             "metrics": op["metrics"]}
            for op in plan_operations(mt, table, settings_of(mt))]
        return report
    unreadable = table.timeline.pending_services().unreadable
    for pending in pending_compactions(table):
        if pending in unreadable:  # requested, cannot run: left to repair (§4.6)
            check_unreadable_plans({pending: unreadable[pending]}, 8, ())
            continue
        report.results.append(run_compaction(mt, pending, progress=progress, runner=runner))
    instant = schedule_compaction(mt, force=force)
    if instant is not None:
        plan = read_plan(mt, mt.table(), instant)
        report.planned = list(plan["operations"])
        report.results.append(run_compaction(mt, instant, progress=progress, runner=runner))
    return report


def inline_compaction(mt: MorTable) -> CompactionResult | str | None:
    """After a write: Hudi's inline compaction (``hoodie.compact.inline``: schedule when the
    trigger fires, then run) or inline scheduling (``hoodie.compact.schedule.inline``: only
    the plan, when no compaction is pending)."""
    settings = settings_of(mt)
    if settings.inline:
        instant = schedule_compaction(mt)
        if instant is not None:
            return run_compaction(mt, instant)
        return None
    if settings.schedule_inline and not pending_compactions(mt.table()):
        return schedule_compaction(mt)
    return None


__all__ = ["CompactReport", "CompactionResult", "CompactionSettings", "OperationRunner",

           "check_unreadable_plans", "compact", "compact_operation",
           "delta_commits_since_compaction", "inline_compaction", "pending_compactions",
           "plan_operations", "run_compaction", "schedule_compaction", "trigger_fires"]
