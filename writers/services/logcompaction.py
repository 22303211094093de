"""Log compaction (RFC-48, Hudi's minor compaction): a run of log blocks of a file slice
merged into new indexed blocks that replace them (spec/services.md §3, spec/index.md §6.8).

Three steps, each under the table's writer lock (dead writers rolled back first), as Hudi's
table service client runs them:

1. **Schedule** (:func:`schedule_log_compaction`): every latest file slice with log files
   whose file group is under no pending compaction, log compaction or clustering, and whose
   logs hold a run of at least ``hoodie.log.compaction.blocks.threshold`` (default 5) blocks
   (data and delete blocks, counted after rollbacks and earlier log compactions, as Hudi's
   optimized scan counts them), becomes one operation of a ``HoodieCompactionPlan`` written as
   ``<L>.logcompaction.requested``. The *run* is morlog's size rule (RFC-48 "Disadvantages"):
   the newest run of consecutive instants none of whose blocks is at least
   ``morlog.log.compaction.max.block.bytes`` (default: half of
   ``hoodie.logfile.data.block.max.size``, 128 MiB); larger blocks are left alone, not
   rewritten again and again. Below that size every block is in the run, as in Hudi.
2. **Execute** (:func:`run_log_compaction`): ``<L>.logcompaction.inflight``; per operation
   the run's blocks as of ``L`` (only the planned log files, never the base file) are merged
   with the table's merge rules, and the slice gets a new log file (table version 8+: named
   after ``L``; version 6: the next version of the slice's log) holding, all with
   ``INSTANT_TIME`` = ``L`` and ``COMPACTED_BLOCK_TIMES`` = the run's instants (newest
   first): for event-time ordering only, a delete block of the natural deletes that a
   surviving record of the run follows (morlog's merge applies such a delete as a barrier to
   everything before it); the live records, sorted by key, as indexed data blocks of the
   table's carrier, cut at ``hoodie.logfile.data.block.max.size``; a delete block of the keys
   the run deletes (so the copies of the base file and of earlier blocks stay deleted). The
   new blocks' per-block index is theirs; their cumulative index covers exactly the slice's
   data blocks that still count (not replaced, not undone) plus the new ones, so deleted and
   rolled-back keys are gone from it. The metadata table learns the new log file in a delta
   commit of the same instant (``files``, column statistics of its records; the record index
   and secondary indexes stay, as for a compaction).
3. **Complete**: ``<L>.deltacommit`` (layout 2: ``<L>_<done>.deltacommit``) with the commit
   metadata of a log compaction (``compacted`` true, operation ``LOG_COMPACT``).

A failure while executing deletes what the attempt wrote (its new log files, its
metadata-table commit) and leaves the plan requested: the next :func:`run_log_compaction`
(``morlog logcompact``) executes it again. A process that died leaves the instant inflight;
the next writer or service undoes it the same way (``morlog.writers.core.commit.rollback_pending``,
for plans morlog scheduled). A log compaction refuses to run once a compaction (or commit)
instant later than its own is on the timeline (Hudi's ``logCompact``); :func:`log_compact`
then drops that plan, which can never run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import morlog.config as conf
from morlog.logformat.arrow_sort import sort_indices_nulls_first
from morlog.logformat.blocks import RECORD_KEY_FIELD
from morlog.logformat.constants import BlockType, HeaderKey
from morlog.logformat.delete_content import (
    ARRAY_BRANCH,
    DeleteColumns,
    encode_delete_column_records,
)
from morlog.logformat.errors import UsageError, WriteError
from morlog.logformat.naming import INFLIGHT, LogFileName
from morlog.logformat.timeline_meta import (
    compaction_commit_metadata,
    compaction_metrics,
    compaction_operation,
    compaction_plan,
    write_stat,
)
from morlog.logformat.virtual_keys import KeyField, VirtualKeys, key_array
from morlog.readers.logfile import LogBlock, LogFileReader
from morlog.readers.merge import EVENT_TIME, MergeSpec, conform, merge_slice
from morlog.readers.slice_blocks import effective_blocks
from morlog.readers.table import FileSlice, Table
from morlog.writers.core.commit import CommitHooks
from morlog.writers.core.indexed import IndexedLogWriter, load_slice_state
from morlog.writers.core.timeline import (
    WRITE_TOKEN,
    TimelineWriter,
    ensure_partition,
    latest_time,
    new_instant,
    timeline_utc,
)
from morlog.writers.core.undo import (
    LOG_COMPACTION,
    MORLOG_PLAN_KEY,
    PlanOperation,
    read_plan,
    undo_attempt,
    undo_slice,
)
from morlog.writers.services.base import (
    PlanRun,
    option_flag,
    option_int,
    run_with_progress,
    service_lock,
)

if TYPE_CHECKING:
    from morlog.writers.client import MorTable

#: Hudi's settings (``HoodieCompactionConfig``, ``HoodieStorageConfig``) and morlog's own
BLOCKS_THRESHOLD = conf.LOG_COMPACTION_BLOCKS_THRESHOLD
INLINE = conf.LOG_COMPACTION_INLINE
DATA_BLOCK_MAX_SIZE = conf.LOGFILE_DATA_BLOCK_MAX_SIZE
MAX_BLOCK_BYTES = conf.LOG_COMPACTION_MAX_BLOCK_BYTES
#: the data block type log compaction writes (spec/services.md §3.4): ``parquet`` (default)
#: or ``avro``, whatever the table's ``hoodie.logfile.data.block.format``
BLOCK_FORMAT = conf.LOG_COMPACTION_BLOCK_FORMAT
BLOCK_FORMATS = ("parquet", "avro")
#: every key :meth:`LogCompactionSettings.of` reads
SETTINGS = (BLOCKS_THRESHOLD, INLINE, DATA_BLOCK_MAX_SIZE, MAX_BLOCK_BYTES, BLOCK_FORMAT)
#: Hudi's default data block size, 256 MiB (``LOGFILE_DATA_BLOCK_SIZE_MAX_BYTES``)
DEFAULT_DATA_BLOCK_MAX = conf.default_int(DATA_BLOCK_MAX_SIZE)


@dataclass(frozen=True)
class LogCompactionSettings:
    """Log compaction settings from a table's properties and write options."""

    blocks_threshold: int = conf.default_int(BLOCKS_THRESHOLD)
    inline: bool = conf.default_bool(INLINE)
    data_block_max_bytes: int = DEFAULT_DATA_BLOCK_MAX
    max_block_bytes: int = DEFAULT_DATA_BLOCK_MAX // 2
    block_format: str = conf.default(BLOCK_FORMAT)

    @classmethod
    def of(cls, options: Mapping[str, str]) -> LogCompactionSettings:
        """From Hudi's option names and ``morlog.log.compaction.max.block.bytes``
        (``UsageError`` naming a bad value)."""
        block_max = option_int(options, DATA_BLOCK_MAX_SIZE, DEFAULT_DATA_BLOCK_MAX, minimum=1)
        fmt = options.get(BLOCK_FORMAT, cls.block_format).strip().lower()
        if fmt not in BLOCK_FORMATS:
            raise UsageError(f"{BLOCK_FORMAT} is parquet or avro",
                             actual=options.get(BLOCK_FORMAT))
        return cls(block_format=fmt,
                   blocks_threshold=option_int(options, BLOCKS_THRESHOLD, cls.blocks_threshold,
                                               minimum=1),
                   inline=option_flag(options, INLINE, cls.inline),
                   data_block_max_bytes=block_max,
                   max_block_bytes=option_int(options, MAX_BLOCK_BYTES,
                                              max(1, block_max // 2), minimum=1))


def settings_of(mt: MorTable) -> LogCompactionSettings:
    return LogCompactionSettings.of({**mt.props, **mt.config.hoodie_options})


# --- the write client's parts a service needs -------------------------------------------------


def _key_field(mt: MorTable) -> KeyField:
    """How the table's blocks are keyed: the meta column, or the key fields."""
    return RECORD_KEY_FIELD if mt.populate_meta_fields else VirtualKeys(mt.key_fields)


@dataclass
class LogCompactionResult:
    """What one log compaction did."""

    instant: str
    #: per file group: (partition, file id, new log files, instants replaced)
    compacted: list[tuple[str, str, list[str], list[str]]] = field(default_factory=list)
    records_written: int = 0
    deletes_written: int = 0
    blocks_written: int = 0
    bytes_written: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"instant": self.instant, "records_written": self.records_written,
                "deletes_written": self.deletes_written,
                "blocks_written": self.blocks_written, "bytes_written": self.bytes_written,
                "seconds": round(self.seconds, 3),
                "file_groups": [{"partition": p, "file_id": f, "log_files": n,
                                 "replaced_instants": r}
                                for p, f, n, r in self.compacted]}


# --- which blocks: the run --------------------------------------------------------------------


def _by_instant(blocks: Sequence[LogBlock]) -> list[tuple[str, list[LogBlock]]]:
    """The blocks grouped by instant, in the order a reader applies them."""
    order: dict[str, list[LogBlock]] = {}
    for b in blocks:
        order.setdefault(b.instant or "", []).append(b)
    return list(order.items())


def choose_run(blocks: Sequence[LogBlock], settings: LogCompactionSettings
               ) -> list[tuple[str, list[LogBlock]]]:
    """The instants (with their blocks, in reading order) a log compaction merges: the
    newest run of consecutive instants without a block of ``max_block_bytes`` or more that
    holds at least ``blocks_threshold`` blocks; [] when there is none."""
    runs: list[list[tuple[str, list[LogBlock]]]] = [[]]
    for inst, bs in _by_instant(blocks):
        if any(b.size >= settings.max_block_bytes for b in bs):
            runs.append([])  # a large instant stays as it is and splits the runs
        else:
            runs[-1].append((inst, bs))
    for run in reversed(runs):
        if sum(len(bs) for _, bs in run) >= settings.blocks_threshold:
            return run
    return []


class _SliceLogs:
    """The blocks of a file slice's log files (framing read, content on demand)."""

    def __init__(self, table: Table, partition: str, names: Sequence[str]) -> None:
        self.directory = table.slice_dir(partition)
        st = table.storage
        self.readers = []
        self.blocks: list[LogBlock] = []
        self.file_of: dict[int, str] = {}
        try:
            for name in names:
                r = LogFileReader(st.source(st.join(self.directory, name)))
                self.readers.append(r)
                for b in r.blocks():
                    self.file_of[id(b)] = name
                    self.blocks.append(b)
        except BaseException:
            self.close()
            raise

    def of_files(self, names: Sequence[str]) -> list[LogBlock]:
        wanted = set(names)
        return [b for b in self.blocks if self.file_of[id(b)] in wanted]

    def close(self) -> None:
        for r in self.readers:
            r.close()

    def __enter__(self) -> _SliceLogs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _slice_run(table: Table, s: FileSlice, settings: LogCompactionSettings,
               as_of: str | None = None) -> list[tuple[str, list[LogBlock]]]:
    with _SliceLogs(table, s.partition, s.log_files) as logs:
        blocks = effective_blocks(logs.blocks, table.timeline, table.merge_spec(as_of))
        return choose_run(blocks, settings)


# --- scheduling --------------------------------------------------------------------------------


def plan_log_compaction(mt: MorTable, table: Table | None = None,
                        settings: LogCompactionSettings | None = None
                        ) -> list[dict[str, Any]]:
    """The operations a new plan would hold now: one ``HoodieCompactionOperation`` per
    eligible latest slice (see the module docstring), in the order of the file slices."""
    table = table or mt.table()
    settings = settings or settings_of(mt)
    pending = table.timeline.pending_services()
    busy = set(pending.compaction) | set(pending.clustering) | set(pending.log_compaction)
    ops: list[dict[str, Any]] = []
    sizes_by_part: dict[str, dict[str, int]] = {}
    for s in table.file_slices():
        if not s.log_files or (s.partition, s.file_id) in busy:
            continue
        if not _slice_run(table, s, settings):
            continue
        sizes = sizes_by_part.get(s.partition)
        if sizes is None:
            sizes = sizes_by_part[s.partition] = mt.store.storage.sizes(
                mt.partition_path(s.partition))
        logs = sorted(s.log_files, key=lambda n: LogFileName.sort_key(LogFileName.parse(n)))
        metrics = compaction_metrics([sizes.get(n, 0) for n in logs],
                                     sizes.get(s.base_file) if s.base_file else None,
                                     mt.config.max_file_size)
        ops.append(compaction_operation(s.partition, s.file_id, s.base_instant, logs,
                                        s.base_file, metrics=metrics))
    return ops


def schedule_log_compaction(mt: MorTable) -> str | None:
    """Write a log compaction plan over every eligible slice; its instant, or None when no
    slice is eligible."""
    settings = settings_of(mt)
    with service_lock(mt) as table:
        ops = plan_log_compaction(mt, table, settings)
        if not ops:
            return None
        utc = timeline_utc(table.config.props)
        instant = new_instant(latest_time(table), utc=utc)
        writer = TimelineWriter(mt.store, mt.location, layout=table.timeline.layout,
                                fsync=mt.config.fsync, utc=utc)
        writer.write(instant, "requested", compaction_plan(
            ops, log_compaction=True, extra_metadata={MORLOG_PLAN_KEY: "1"}), LOG_COMPACTION)
        return instant


def pending_log_compactions(table: Table) -> list[str]:
    """Instants of the log compactions requested or inflight, oldest first."""
    return sorted(i.requested for i in table.timeline.pending()
                  if i.action == LOG_COMPACTION)


def refusal(table: Table, instant: str) -> str | None:
    """Why the log compaction ``instant`` may not run (None: it may): a compaction or commit
    instant later than it is on the timeline (``BaseHoodieTableServiceClient.logCompact``:
    "Cannot log compact since a compaction instant with greater timestamp exists")."""
    later = [i for i in table.timeline.instants
             if i.action in ("commit", "compaction") and i.requested > instant]
    if not later:
        return None
    first = later[0]
    return (f"log compaction {instant} refuses to run: {first.action} {first.requested} is "
            "later (Hudi: \"Cannot log compact since a compaction instant with greater "
            "timestamp exists\")")


# --- executing ---------------------------------------------------------------------------------


ProgressFn = Callable[[int, int], None]
#: where the planned slices of log compaction ``instant`` are merged: (the table, the
#: instant, the plan's operations as stored) -> one :class:`SliceOutcome` per operation, in
#: order (default: threads of this process; Spark: ``morlog.spark.log_compact``)
LogOperationRunner = Callable[["MorTable", str, list[dict[str, Any]]], list["SliceOutcome"]]


class _LogCompactionRun(PlanRun["LogCompactionResult"]):
    action = LOG_COMPACTION
    completed_action = "deltacommit"
    label = "log compaction"
    again = "the next writer or 'morlog logcompact' undoes it"

    def read_plan(self, table: Table) -> dict[str, Any]:
        return read_plan(self.mt.store, self.mt.location, table, self.instant)

    def refusal(self, table: Table) -> str | None:
        return refusal(table, self.instant)

    def undo(self, table: Table, writer: TimelineWriter, hooks: CommitHooks | None,
             ops: Sequence[PlanOperation]) -> None:
        undo_attempt(self.mt.store, self.mt.location, table, writer, hooks, self.instant, ops)

    def execute(self, table: Table, plan: Mapping[str, Any], ops: Sequence[PlanOperation],
                progress: ProgressFn | None, runner: LogOperationRunner | None
                ) -> tuple[LogCompactionResult, dict[str, list[dict[str, Any]]]]:
        mt, instant = self.mt, self.instant
        settings = settings_of(mt)
        outcomes = (run_with_progress(lambda op: _log_compact_one(mt, table, instant, op,
                                                                  settings),
                                      ops, mt.thread_count(), progress)
                    if runner is None else runner(mt, instant, list(plan["operations"])))
        if len(outcomes) != len(ops):
            raise WriteError(f"log compaction {instant}: {len(outcomes)} results for "
                             f"{len(ops)} planned file slices", path=mt.uri)
        result = LogCompactionResult(instant)
        stats: dict[str, list[dict[str, Any]]] = {}
        for out in outcomes:
            if not out.files:
                continue
            result.compacted.append((out.op.partition, out.op.file_id,
                                     [n for n, _ in out.files], out.replaced))
            stats.setdefault(out.op.partition, []).extend(out.stats)
            result.records_written += out.records
            result.deletes_written += out.deletes
            result.blocks_written += out.blocks
            result.bytes_written += sum(size for _, size in out.files)
        return result, stats

    def completed_metadata(self, stats: Mapping[str, list[dict[str, Any]]], schema: str
                           ) -> dict[str, Any]:
        return compaction_commit_metadata(dict(stats), schema, log_compaction=True)


def run_log_compaction(mt: MorTable, instant: str, *,
                       progress: ProgressFn | None = None,
                       runner: LogOperationRunner | None = None) -> LogCompactionResult:
    """Execute the log compaction planned at ``instant`` (see the module docstring);
    ``runner``: where the planned slices are merged (:data:`LogOperationRunner`)."""
    return _LogCompactionRun(mt, instant).run(progress, runner)


@dataclass
class SliceOutcome:
    """What merging one planned slice wrote (plain data: a Spark task returns it)."""

    op: PlanOperation
    #: (new log file name, its size)
    files: list[tuple[str, int]] = field(default_factory=list)
    stats: list[dict[str, Any]] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    records: int = 0
    deletes: int = 0
    blocks: int = 0


def log_compact_operation(mt: MorTable, instant: str, op: Mapping[str, Any], *,
                          retry: bool = False) -> SliceOutcome:
    """One planned operation (a plan dict) of log compaction ``instant``, as a task runs
    it. ``retry``: first remove what an earlier attempt at ``instant`` wrote in this file
    group (:func:`undo_slice`: the instant is inflight, so no reader counts those blocks),
    so a retried task leaves no duplicate blocks."""
    table = mt.table()
    o = PlanOperation.of(op, table)
    if retry:
        undo_slice(mt.store, mt.location, table, instant, o)
    return _log_compact_one(mt, table, instant, o, settings_of(mt))


def _log_compact_one(mt: MorTable, table: Table, instant: str, op: PlanOperation,
                     settings: LogCompactionSettings) -> SliceOutcome:
    """Merge the run of one planned slice into new blocks in a new log file of the slice."""
    out = SliceOutcome(op)
    current = next((s for s in table.file_slices(partition=op.partition)
                    if s.file_id == op.file_id), None)
    names = list(current.log_files) if current is not None else list(op.log_files)
    names += [n for n in op.log_files if n not in names]
    with _SliceLogs(table, op.partition, names) as logs:
        planned = effective_blocks(logs.of_files(op.log_files), table.timeline,
                                   table.merge_spec(instant), verify=True)
        run = choose_run(planned, settings)
        if not run:
            return out
        run_instants = [inst for inst, _ in run]
        run_blocks = [b for _, bs in run for b in bs]
        merged = merge_log_records(run_blocks, table.merge_spec(instant))
        # the blocks the new cumulative index covers besides the new ones: every data block
        # of the slice that counts now and is not replaced (spec/index.md §6.8)
        now = effective_blocks(logs.blocks, table.timeline, table.merge_spec(None))
        replaced = set(run_instants)
        keep = {(logs.file_of[id(b)], b.offset) for b in now
                if b.block_type.is_keyed and (b.instant or "") not in replaced}
    base = current.base_instant if current is not None else op.base_instant
    out.replaced = list(reversed(run_instants))  # newest first, as Hudi lists them
    header = {HeaderKey.COMPACTED_BLOCK_TIMES: ",".join(out.replaced)}
    directory = ensure_partition(mt.store, mt.location, op.partition, fsync=mt.config.fsync)
    state = load_slice_state(directory, [LogFileName.parse(n) for n in names], scope=base,
                             key_field=_key_field(mt), storage=mt.store.storage,
                             keep=lambda f, off: (f, off) in keep)
    name_instant = instant if mt.version >= 8 else base
    w = IndexedLogWriter(directory, op.file_id, name_instant, write_token=WRITE_TOKEN,
                         mode="rollover", key_field=_key_field(mt), fsync=mt.config.fsync,
                         store=mt.store, scope=base, state=state,
                         column_stats=mt.stats_columns)
    written: dict[str, int] = {}

    def wrote(r: Any) -> None:
        written[str(r.name)] = 0
        out.blocks += len(r.blocks)
        if mt.store.can_append:
            w.log.mode = "append"  # the next blocks follow in the same new file

    schema = mt.avro_schema
    # the run's deletes only matter for rows outside it: a base file, or other blocks of
    # the slice; a log-only slice holding nothing else needs no delete block (the new data
    # blocks carry COMPACTED_BLOCK_TIMES, so the run's own blocks stop counting)
    alone = (current is not None and current.base_file is None and not keep
             and merged.records.num_rows > 0)
    if alone:
        none = np.zeros(0, dtype=np.int64)
        merged = dataclasses.replace(merged, barriers=merged.barriers.take(none),
                                     deletes=merged.deletes.take(none))
    for part in _by_ordering_kind(merged.barriers):
        wrote(w.append_delete(encode_delete_column_records(part), instant, schema=schema,
                              extra_header=header))
    records = merged.records
    if records.num_rows:
        records = conform(records, mt.arrow_schema)  # meta fields kept, as Hudi's
        keys = key_array(records, table.key_field)
        order = pc.sort_indices(keys.cast(pa.binary()))
        records, keys = records.take(order), keys.take(order)
        per_block = _rows_per_block(records, settings.data_block_max_bytes)
        vkeys_needed = not mt.populate_meta_fields
        for start in range(0, records.num_rows, per_block):
            chunk = records.slice(start, per_block)
            vkeys = keys.slice(start, per_block) if vkeys_needed else None
            if settings.block_format == "parquet":
                r = w.append_parquet(chunk, instant, schema=schema,
                                     compression=mt.log_parquet_codec, keys=vkeys,
                                     extra_header=header)
            else:
                r = w.append_avro_arrow(chunk, schema, instant, extra_header=header,
                                        keys=vkeys)
            wrote(r)
        out.records = records.num_rows
    for part in _by_ordering_kind(merged.deletes):
        wrote(w.append_delete(encode_delete_column_records(part), instant, schema=schema,
                              extra_header=header))
    out.deletes = len(merged.deletes)
    sizes = mt.store.storage.sizes(mt.partition_path(op.partition))
    plan_log_size = sum(sizes.get(n, 0) for n in op.log_files)
    for name in written:
        size = sizes.get(name, 0)
        out.files.append((name, size))
        rel = f"{op.partition}/{name}" if op.partition else name
        ln = LogFileName.parse(name)
        stat = write_stat(op.partition, op.file_id, rel, prev_commit=base,
                          num_writes=out.records, num_update_writes=out.records,
                          num_deletes=out.deletes, file_size=size, log_files=[name],
                          base_file=op.base_file or "")
        stat.update(logVersion=ln.version, logOffset=0, totalLogFilesCompacted=len(
            op.log_files), totalLogSizeCompacted=plan_log_size,
            totalLogBlocks=len(run_blocks), totalLogRecords=merged.read,
            totalRollbackBlocks=0)
        out.stats.append(stat)
    return out


def _by_ordering_kind(records: DeleteColumns) -> list[DeleteColumns]:
    """Delete records split into one block per ordering value kind (none, natural ``int``,
    ``long``...), in the order the kinds first appear: hudi-rs 0.5 refuses a delete block
    whose records mix union branches ("Delete block mixes ordering types"); Hudi reads
    either. Each key is in one block only, so the order of the blocks does not matter."""
    branches = records.branches
    if not branches.size:
        return []
    kinds, first = np.unique(branches, return_index=True)
    return [records.take(np.flatnonzero(branches == b)) for b in kinds[np.argsort(first)]]


def _rows_per_block(records: pa.Table, max_bytes: int) -> int:
    """Rows per data block so that a block's records take about ``max_bytes`` in memory
    (Hudi's ``HoodieAppendHandle`` cuts at ``hoodie.logfile.data.block.max.size`` over its
    estimated record size; morlog estimates by the records' Arrow size)."""
    avg = max(1, int(records.nbytes) // max(1, int(records.num_rows)))
    return int(max(1, max_bytes // avg))


# --- the log-only merge ------------------------------------------------------------------------


@dataclass
class MergedLogs:
    """What a run of blocks amounts to: the records that survive (the reader's merge of the
    blocks alone), the delete of every key the run deletes, and (event-time ordering) the
    natural deletes that must still precede surviving records."""

    records: pa.Table
    deletes: DeleteColumns
    barriers: DeleteColumns
    #: records and delete records read
    read: int = 0


def merge_log_records(blocks: Sequence[LogBlock], spec: MergeSpec) -> MergedLogs:
    """Merge ``blocks`` (in reading order) without a base file, so that a reader applying the
    result instead of the blocks, after anything else, reads the same (spec/services.md
    §3.5):

    - commit-time ordering: a surviving record is the key's last write; a deleted key gets
      its last delete record;
    - event-time ordering: the greatest ordering value wins (the later on ties). A delete
      with the natural ordering value removes everything before it (base file included):
      a deleted key whose run holds one gets that natural delete, else its winning delete
      (which keeps its ordering value and competes with earlier copies as before); a
      surviving record after a natural delete gets that delete too, in a block before the
      records.
    """
    data = [b for b in blocks if b.block_type != BlockType.DELETE]
    records = merge_slice(None, list(blocks), spec) if data else pa.table({})
    read = sum(int(b.record_count() or 0) for b in data)
    parts = []
    for b in blocks:
        if b.block_type == BlockType.DELETE:
            cols = b.delete_columns()
            if cols.keys.null_count:
                cols = cols.take(np.flatnonzero(cols.keys.is_valid().to_numpy(
                    zero_copy_only=False)))
            parts.append(cols)
    recs = DeleteColumns.concat(parts)
    n = len(recs)
    read += n
    if not n:
        return MergedLogs(records, recs, recs, read)
    keys = recs.keys
    live = (key_array(records, spec.key_field) if records.num_rows
            else pa.array([], pa.string()))
    is_live = pc.is_in(keys, value_set=live).to_numpy(zero_copy_only=False)
    seq = np.arange(n, dtype=np.int64)
    event = spec.merge_mode == EVENT_TIME and bool(spec.orderings)
    none = np.zeros(0, dtype=np.int64)
    if not event:
        pick = _last_per_key(keys, seq, ~is_live)
        return MergedLogs(records, recs.take(_by_key(keys, pick)), recs.take(none), read)
    natural = recs.natural()
    barrier_keys = pc.unique(keys.filter(pa.array(natural)))
    has_barrier = pc.is_in(keys, value_set=barrier_keys).to_numpy(zero_copy_only=False)
    # keys with a barrier: its last natural delete (alone for a deleted key, before the
    # record for a surviving one)
    last_natural = _last_per_key(keys, seq, natural)
    nat_live = last_natural[is_live[last_natural]]
    nat_dead = last_natural[~is_live[last_natural]]
    # deleted keys without a barrier: the delete with the greatest ordering value
    plain = ~is_live & ~has_barrier
    best = _max_ordering_per_key(recs, keys, seq, plain, len(spec.orderings) > 1)
    deletes = _by_key(keys, np.concatenate([nat_dead, best]))
    return MergedLogs(records, recs.take(deletes), recs.take(_by_key(keys, nat_live)), read)


def _by_key(keys: pa.Array, idx: np.ndarray) -> np.ndarray:
    """``idx`` ordered by the keys at those positions (UTF-8 bytes)."""
    idx = np.asarray(idx, dtype=np.int64)
    if len(idx) == 0:
        return idx
    order = pc.sort_indices(keys.take(pa.array(idx)).cast(pa.binary())).to_numpy()
    return np.asarray(idx[order], dtype=np.int64)


def _last_per_key(keys: pa.Array, seq: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Positions of the last entry (greatest ``seq``) of each key among ``mask``."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return idx.astype(np.int64)
    t = pa.table({"k": keys.take(pa.array(idx)), "i": pa.array(seq[idx])})
    g = t.group_by("k", use_threads=False).aggregate([("i", "max")])
    return np.sort(g.column("i_max").to_numpy()).astype(np.int64)


def _max_ordering_per_key(recs: DeleteColumns, keys: pa.Array, seq: np.ndarray,
                          mask: np.ndarray, several: bool) -> np.ndarray:
    """Positions of the delete with the greatest ordering value (the later on ties) of each
    key among ``mask``; several ordering fields compare as a tuple."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return idx.astype(np.int64)
    width = 1
    kinds = np.unique(recs.branches[idx]).tolist()
    cols: dict[str, Any] = {"k": keys.take(pa.array(idx))}
    if len(kinds) == 1 and kinds[0] not in (0, ARRAY_BRANCH) and kinds[0] in recs.values:
        # one kind: its values column-wise, as the type pa.array infers for them
        vals = recs.branch_values(kinds[0], idx)
        wide = {pa.int32(): pa.int64(), pa.float32(): pa.float64()}.get(vals.type)
        cols["o0"] = vals.cast(wide) if wide is not None else vals
        return _max_of(cols, seq[idx], width)
    values: list[list[Any]] = []
    objects = recs.ordering_values()
    for i in idx.tolist():  # mixed kinds or ArrayWrapper (several ordering fields): rare
        ov = objects[i]
        v = None if ov is None else ov.value
        if several:
            items = v if isinstance(v, tuple) else (v,)
            row = [getattr(x, "value", x) for x in items]
        else:
            row = [v]
        width = max(width, len(row))
        values.append(row)
    try:
        for j in range(width):
            cols[f"o{j}"] = pa.array([r[j] if j < len(r) else None for r in values])
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        # ordering values that make no column: the reader compares them as nulls, so the
        # later delete wins (``merge._ordering_array``)
        return _last_per_key(keys, seq, mask)
    return _max_of(cols, seq[idx], width)


def _max_of(cols: dict[str, Any], seq: np.ndarray, width: int) -> np.ndarray:
    """The greatest ``o0..`` (nulls first; then ``seq``) of each key ``k``: their seqs."""
    cols["i"] = pa.array(seq)
    t = pa.table(cols)
    sort = ([("k", "ascending")] + [(f"o{j}", "ascending") for j in range(width)]
            + [("i", "ascending")])
    t = t.take(sort_indices_nulls_first(t, sort))
    k = t.column("k")
    last = np.ones(t.num_rows, dtype=bool)
    if t.num_rows > 1:
        last[:-1] = ~pc.equal(k.slice(0, t.num_rows - 1), k.slice(1)).to_numpy(
            zero_copy_only=False)
    return np.sort(t.column("i").to_numpy()[last]).astype(np.int64)


# --- undoing an attempt ------------------------------------------------------------------------


def discard_log_compaction(mt: MorTable, instant: str) -> None:
    """Drop a pending log compaction that may never run (:func:`refusal`): what an attempt
    wrote is removed, then its plan (Hudi deletes a log compaction's instant files when it
    rolls one back: log compaction plans are "mutable plans")."""
    with service_lock(mt) as table:
        inst = table.timeline.get(instant)
        if inst is None or inst.action != LOG_COMPACTION or inst.is_completed:
            raise UsageError("no pending log compaction at this instant", actual=instant,
                             path=mt.uri)
        writer = TimelineWriter(mt.store, mt.location, layout=table.timeline.layout,
                                fsync=mt.config.fsync)
        if inst.state == INFLIGHT:
            plan = read_plan(mt.store, mt.location, table, instant)
            ops = [PlanOperation.of(op, table) for op in plan["operations"]]
            hooks = mt.commit_hooks()
            undo_attempt(mt.store, mt.location, table, writer, hooks, instant, ops)
        mt.store.delete(writer.path(instant, "requested", LOG_COMPACTION))


# --- the whole service -------------------------------------------------------------------------


@dataclass
class LogCompactReport:
    """What :func:`log_compact` planned and ran."""

    planned: list[dict[str, Any]] = field(default_factory=list)
    results: list[LogCompactionResult] = field(default_factory=list)
    #: pending plans dropped because they may never run (instant, why)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    dry_run: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "planned": self.planned,
                "dropped": [{"instant": i, "reason": r} for i, r in self.dropped],
                "log_compactions": [r.as_dict() for r in self.results]}


def log_compact(mt: MorTable, *, dry_run: bool = False,
                progress: ProgressFn | None = None,
                runner: LogOperationRunner | None = None) -> LogCompactReport:
    """Run the log compactions pending (dropping those that may never run), then plan one
    over every eligible slice and run it. ``dry_run``: only report what would run;
    ``runner``: where the slices are merged (:data:`LogOperationRunner`)."""
    report = LogCompactReport(dry_run=dry_run)
    table = mt.table()
    if dry_run:
        for i in pending_log_compactions(table):
            why = refusal(table, i)
            report.planned.append({"instant": i, "pending": True, "refused": why})
        report.planned += [
            {"partition": op["partitionPath"], "file_id": op["fileId"],
             "base_file": op["dataFilePath"], "log_files": op["deltaFilePaths"],
             "metrics": op["metrics"]} for op in plan_log_compaction(mt, table)]
        return report
    unreadable = table.timeline.pending_services().unreadable
    for pending in pending_log_compactions(table):
        why = refusal(mt.table(), pending)
        if pending in unreadable:
            # a requested plan that does not decode: dropped, as Hudi drops a log
            # compaction it rolls back (log compaction plans are mutable; §4.6)
            why = f"its plan does not decode ({unreadable[pending]})"
        if why is not None:
            discard_log_compaction(mt, pending)
            report.dropped.append((pending, why))
            continue
        report.results.append(run_log_compaction(mt, pending, progress=progress,
                                                 runner=runner))
    instant = schedule_log_compaction(mt)
    if instant is not None:
        plan = read_plan(mt.store, mt.location, mt.table(), instant)
        report.planned = list(plan["operations"])
        report.results.append(run_log_compaction(mt, instant, progress=progress,
                                                 runner=runner))
    return report


def inline_log_compaction(mt: MorTable) -> LogCompactReport | None:
    """After a write: Hudi's inline log compaction (``hoodie.log.compaction.inline``:
    pending log compactions first, then schedule and run one; ``BaseHoodieTableServiceClient
    .inlineLogCompact``); None when it is off."""
    if not settings_of(mt).inline:
        return None
    return log_compact(mt)


__all__ = ["BLOCKS_THRESHOLD", "BLOCK_FORMAT", "BLOCK_FORMATS", "DATA_BLOCK_MAX_SIZE",
           "DEFAULT_DATA_BLOCK_MAX", "INLINE", "LogCompactReport", "LogCompactionResult",
           "LogCompactionSettings", "LogOperationRunner", "MAX_BLOCK_BYTES", "MergedLogs",
           "ProgressFn", "SETTINGS", "SliceOutcome", "choose_run", "discard_log_compaction",
           "inline_log_compaction", "log_compact", "log_compact_operation", "merge_log_records",
           "pending_log_compactions", "plan_log_compaction", "refusal", "run_log_compaction",
           "schedule_log_compaction", "settings_of"]
