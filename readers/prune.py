"""File-slice pruning by column statistics that stays sound with rollback, delete and
failed-commit blocks (issue 14, HUDI-8389; the rules: spec/prune.md).

:func:`prune` decides, for every latest file slice of a table, whether it may hold a row of
the merged snapshot for which a predicate (``morlog.readers.predicate``) is TRUE. A slice is
pruned only when the statistics prove it cannot:

1. partition values (:class:`PartitionValues`): a predicate on partition columns decided by
   the values the partition path holds;
2. the slice's files: the base file's ranges (the metadata table's ``column_stats`` when it
   covers the predicate's columns, else the file's footer) and the ranges of every data block
   :func:`~morlog.readers.slice_blocks.effective_blocks` keeps. Blocks of failed, pending or
   rolled-back instants and blocks replaced by log compaction never count; command and delete
   blocks never make a slice match. Whole-record merges keep the slice when any of these
   files may match; partial-update merges decide on the union of their ranges. A slice with
   nothing left is pruned ("empty").

``rule="hudi"`` applies Hudi's rule to the same statistics, for comparison: per file (base
file, each log file), a file is dropped when its statistics prove no match, a log file
without statistics (one holding a delete block, a command block or a block of a failed or
rolled-back commit, HUDI-8389) is kept, and a slice is kept when any of its files is.

What is read: the partition path; the base file's footer (or nothing, with MDT statistics);
per log file the block headers (the scan of ``morlog.readers.logfile``) and, per data block
that counts, its statistics (``morlog.readers.block_stats.block_ranges``: the stored
COLUMN_STATS section, or the records of an old block recomputed).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from morlog.config import PAYLOAD_CLASS, TABLE_PARTIAL_UPDATE_MODE, WRITE_PARTIAL_UPDATE_MODE
from morlog.logformat.constants import BlockType, CommandType, HeaderKey
from morlog.logformat.errors import ContentError, UsageError
from morlog.logformat.table_files import RECORD_INDEX_ENABLE_PROPERTY
from morlog.readers.mdt.read import column_stats_index

from . import predicate as pr
from .block_stats import base_file_ranges, block_ranges, mdt_ranges
from .column_stats import ColumnRange
from .logfile import LogBlock, LogFileReader
from .merge import COMMIT_TIME, EVENT_TIME
from .partition_columns import PartitionColumns
from .slice_blocks import effective_blocks, instant_counts

if TYPE_CHECKING:
    from .table import FileSlice, Table

#: the pruning rules :func:`prune` knows
RULES = ("morlog", "hudi")
#: block types that hold rows
DATA_BLOCKS = frozenset({BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.HFILE_DATA})
#: payload classes whose merge keeps one whole record per key (anything else: partial)
WHOLE_RECORD_PAYLOADS = ("OverwriteWithLatestAvroPayload", "DefaultHoodieRecordPayload",
                         "EventTimeAvroPayload", "HoodieAvroPayload",
                         "OverwriteWithLatestMerger", "AWSDmsAvroPayload",
                         "MySqlDebeziumAvroPayload")


@dataclass(frozen=True)
class SliceDecision:
    """What :func:`prune` decided for one file slice, and why (a short stable text)."""

    slice: FileSlice
    kept: bool
    reason: str

    @property
    def partition(self) -> str:
        return self.slice.partition

    @property
    def file_id(self) -> str:
        return self.slice.file_id

    def to_json(self) -> dict[str, str]:
        return {"partition": self.partition, "file_id": self.file_id, "reason": self.reason}


@dataclass
class PruneResult:
    """The slices kept and pruned, each in the order of ``Table.file_slices``."""

    kept: list[SliceDecision] = field(default_factory=list)
    pruned: list[SliceDecision] = field(default_factory=list)

    @property
    def kept_slices(self) -> list[FileSlice]:
        return [d.slice for d in self.kept]

    def to_json(self) -> dict[str, list[dict[str, str]]]:
        return {"kept": [d.to_json() for d in self.kept],
                "pruned": [d.to_json() for d in self.pruned]}


# --- the predicate against a table ----------------------------------------------------------


def predicate_schema(table: Table) -> pa.Schema:
    """The schema predicates bind to: the table's latest (``Table.schema``: columns a
    write added, types it widened) plus the partition columns it lacks (strings, or the
    type ``PartitionColumns`` gives them)."""
    schema = table.schema()
    fields = table.config.partition_fields
    if not fields:
        return schema
    try:
        types = PartitionColumns.of(table).types
    except UsageError:
        types = {}
    extra = [pa.field(f, types.get(f, pa.string())) for f in fields
             if "." not in f and f not in schema.names]
    return pa.schema(list(schema) + extra) if extra else schema


def bind_where(table: Table, where: pr.Expr | str) -> pr.Expr:
    """``where`` (text or a tree) bound to :func:`predicate_schema`; a ``UsageError`` for
    bad syntax, unknown columns or literals that do not fit."""
    expr = pr.parse(where) if isinstance(where, str) else where
    return pr.bind(expr, predicate_schema(table))


class SliceFilter:
    """The merged rows of one file slice for which a bound predicate is TRUE, projected to
    ``columns`` (None: all): reads the predicate's columns too, gives a column no file of the
    slice holds NULL in every row (spec/prune.md §5), then filters with
    :func:`~morlog.readers.predicate.to_arrow`. Picklable (Spark ships it to read tasks)."""

    def __init__(self, schema: pa.Schema, expr: pr.Expr, columns: list[str] | None) -> None:
        self.need = sorted(pr.columns(expr))
        self.fields = {c: schema.field(c) for c in self.need}
        self.expr = expr
        self.columns = columns
        self.read_columns = (None if columns is None
                             else list(dict.fromkeys([*columns, *self.need])))

    @classmethod
    def of(cls, table: Table, expr: pr.Expr, columns: list[str] | None) -> SliceFilter:
        return cls(predicate_schema(table), expr, columns)

    def read(self, table: Table, s: FileSlice, as_of: str | None) -> pa.Table:
        t = table.read_slice(s, as_of, self.read_columns)
        if not t.num_rows:
            return t
        added = [c for c in self.need if c not in t.column_names]
        for c in added:
            f = self.fields[c]
            t = t.append_column(f, pa.nulls(t.num_rows, f.type))
        t = t.filter(pr.to_arrow(self.expr))
        if self.columns is not None:
            return t.select([c for c in self.columns if c in t.column_names])
        return t.drop_columns(added) if added else t


# --- partition values -----------------------------------------------------------------------


_INT = re.compile(r"-?[0-9]+")


def _exact_value(text: str, t: pa.DataType) -> tuple[bool, Any]:
    """The column value a partition path segment stands for, when its text form is exact
    (Java's ``toString`` of the value, as the key generators write it, read back without
    loss): strings, integers, booleans, dates. (False, None) otherwise."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return True, text
    if pa.types.is_integer(t) and _INT.fullmatch(text) and str(int(text)) == text:
        return True, int(text)
    if pa.types.is_boolean(t) and text in ("true", "false"):
        return True, text == "true"
    if pa.types.is_date32(t) and len(text) == 10:
        try:
            d = dt.date.fromisoformat(text)
        except ValueError:
            return False, None
        if d.isoformat() == text:
            return True, (d - dt.date(1970, 1, 1)).days
    return False, None


def _global_index(table: Table) -> bool:
    """Whether the table has a global record index (morlog's, or Hudi's ``record_index``),
    under which a row may live in another partition than its partition column names."""
    from morlog.readers.mdt.record_index import global_record_index

    morlog_index = table.config.get(RECORD_INDEX_ENABLE_PROPERTY) or ""
    return morlog_index.strip().lower() == "true" or global_record_index(table)


class PartitionValues:
    """Partition column ranges of a partition path (spec/prune.md §3)."""

    def __init__(self, table: Table, schema: pa.Schema) -> None:
        self.drop = table.config.drop_partition_columns
        self.columns: PartitionColumns | None = None
        if table.config.partition_fields:
            try:
                self.columns = PartitionColumns.of(table)
            except UsageError:
                self.columns = None  # paths that do not parse back: no partition pruning
        self.schema = schema
        #: whether a partition's path values are its rows' values (spec/prune.md §3): not
        #: under a global record index whose writers keep a record in the partition its key
        #: lives in while its partition column takes another value (§10), unless the files
        #: drop the partition columns (the merged rows take them from the path)
        self.prunes = self.drop or not _global_index(table)
        self._cache: dict[str, tuple[dict[str, ColumnRange], set[str], set[str]]] = {}

    def of(self, partition: str) -> tuple[dict[str, ColumnRange], set[str], set[str]]:
        """(ranges of the columns whose value is known exactly, columns whose value is the
        null marker, columns whose value is not known)."""
        got = self._cache.get(partition)
        if got is not None:
            return got
        ranges: dict[str, ColumnRange] = {}
        nulls: set[str] = set()
        unknown: set[str] = set()
        if self.columns is not None:
            try:
                values = self.columns.values(partition)
            except ContentError:
                values = {f: None for f in self.columns.fields}
                unknown = set(self.columns.fields)
            for name, text in values.items():
                if name in unknown:
                    continue
                i = self.schema.get_field_index(name)
                t = self.schema.field(i).type if i >= 0 else pa.string()
                if text is None:
                    nulls.add(name)
                    continue
                ok, value = _exact_value(text, t)
                if ok:
                    ranges[name] = ColumnRange(partition, name, value, value, 0, 1, type=t)
                else:
                    unknown.add(name)
        got = (ranges, nulls, unknown)
        self._cache[partition] = got
        return got

    def overlay(self, partition: str, ranges: dict[str, ColumnRange]) -> dict[str, ColumnRange]:
        """A file's ranges as the merged rows see them: with the partition columns dropped
        from the data files, their values come from the path (known, null, or unknown)."""
        if not self.drop or self.columns is None or not ranges:
            return ranges  # no statistics stay none: they stand for no row count
        known, nulls, unknown = self.of(partition)
        out = dict(ranges)
        rows = max((r.value_count for r in ranges.values()), default=0)
        for name, r in known.items():
            out[name] = ColumnRange(r.file_name, name, r.min, r.max, 0, rows, type=r.type)
        for name in nulls:
            i = self.schema.get_field_index(name)
            out[name] = ColumnRange(partition, name, None, None, rows, rows,
                                    type=self.schema.field(i).type if i >= 0 else None)
        for name in unknown:
            out.pop(name, None)
        return out


# --- ranges ---------------------------------------------------------------------------------


def rows_of(ranges: Mapping[str, ColumnRange]) -> int:
    """The row count a file's ranges stand for (every range counts every row)."""
    return max((r.value_count for r in ranges.values()), default=0)


def union_ranges(parts: Sequence[Mapping[str, ColumnRange]], name: str = ""
                 ) -> dict[str, ColumnRange]:
    """The ranges of the rows of all ``parts`` together (filter order): a column absent from
    any part is unknown; bounds are lost when a part with non-null values has none, or when
    the parts with non-null values have different types (bounds in different units); NaN
    counts add up, unknown when one part with non-null values does not know its own."""
    if not parts:
        return {}
    common = set(parts[0])
    for p in parts[1:]:
        common &= set(p)
    out: dict[str, ColumnRange] = {}
    for c in sorted(common):
        rs = [p[c] for p in parts]
        nulls = sum(r.null_count for r in rs)
        values = sum(r.value_count for r in rs)
        with_values = [r for r in rs if r.value_count > r.null_count]
        lo = hi = None
        one_type = len({str(r.type) for r in with_values}) <= 1
        if with_values and one_type and all(r.min is not None and r.max is not None
                                            for r in with_values):
            try:
                lo = min(r.min for r in with_values)
                hi = max(r.max for r in with_values)
            except TypeError:
                lo = hi = None
        t = next((r.type for r in with_values + rs if r.type is not None), None)
        nans = [r.nan_count for r in with_values]
        nan = (sum(n for n in nans if n is not None) if None not in nans else None)
        out[c] = ColumnRange(name, c, lo, hi, nulls, values, type=t, nan_count=nan)
    return out


def whole_record_merges(table: Table) -> bool:
    """Whether every merged row is one whole record of one file (commit-time or event-time
    ordering with a whole-record payload), rather than columns of several records."""
    props = table.config.props
    if table.config.merge_mode not in (COMMIT_TIME, EVENT_TIME):
        return False
    for key in (WRITE_PARTIAL_UPDATE_MODE, TABLE_PARTIAL_UPDATE_MODE):
        if (props.get(key) or "NONE").strip().upper() not in ("", "NONE"):
            return False
    payload = (props.get(PAYLOAD_CLASS) or "").strip()
    return not payload or payload.rsplit(".", 1)[-1] in WHOLE_RECORD_PAYLOADS


def _partial_block(b: LogBlock) -> bool:
    return (b.header.get(HeaderKey.IS_PARTIAL) or "").strip().lower() == "true"


# --- the pruner -----------------------------------------------------------------------------


class _SliceLogs:
    """The blocks of a slice's log files, read once (headers only), kept open for ranged
    reads of their statistics."""

    def __init__(self, table: Table, s: FileSlice) -> None:
        self.readers: list[LogFileReader] = []
        self.files: list[tuple[str, list[LogBlock]]] = []
        directory = table.slice_dir(s.partition)
        try:
            for name in s.log_files:
                r = LogFileReader(table.storage.source(table.storage.join(directory, name)))
                self.readers.append(r)
                self.files.append((name, list(r.blocks())))
        except BaseException:
            self.close()
            raise

    @property
    def blocks(self) -> list[LogBlock]:
        return [b for _, bs in self.files for b in bs]

    def close(self) -> None:
        for r in self.readers:
            r.close()


class Pruner:
    """:func:`prune` for one table, predicate, instant and rule (reusable over slices)."""

    def __init__(self, table: Table, expr: pr.Expr, as_of: str | None, rule: str) -> None:
        if rule not in RULES:
            raise UsageError("unknown pruning rule", expected=list(RULES), actual=rule)
        self.table = table
        self.expr = expr
        self.as_of = as_of
        self.rule = rule
        self.schema = predicate_schema(table)
        self.columns = sorted(pr.columns(expr))
        part_fields = set(table.config.partition_fields)
        #: the columns data files are asked for (partition columns live in the path when
        #: the table drops them from its files)
        self.file_columns = [c for c in self.columns if not (
            table.config.drop_partition_columns and c in part_fields)]
        self.partitions = PartitionValues(table, self.schema)
        self.spec = table.merge_spec(as_of)
        self.whole = whole_record_merges(table)
        #: the latest schema: files written before a column was added have no statistics
        #: of it (never pruned by it); older narrower types are read cast
        self.data_schema = table.schema()
        #: the MDT's column_stats by file name -> column -> range (None: none; read once)
        self._mdt: dict[str, dict[str, ColumnRange]] | None = None
        self._mdt_read = False
        #: a schema-on-read table whose versions renamed, dropped or retyped a column: the
        #: statistics of a file name its columns as they were (spec/table.md §7.8)
        sor = table.schema_on_read()
        self.renamed = sor is not None and not sor.stable()

    # --- statistics ---------------------------------------------------------------------

    def _mdt_ranges(self) -> dict[str, dict[str, ColumnRange]] | None:
        if not self._mdt_read:
            self._mdt_read = True
            t = self.table
            index = column_stats_index(t.storage, t.path, t.config.props)
            if index is not None:
                types = {f.name: f.type for f in self.data_schema}
                self._mdt = mdt_ranges(index.values(), types)
        return self._mdt

    def base_ranges(self, s: FileSlice) -> tuple[dict[str, ColumnRange], str]:
        """The base file's ranges of the predicate's data columns and where they came from
        ("mdt" or "footer")."""
        assert s.base_file is not None
        mdt = self._mdt_ranges()
        if mdt is not None and self.file_columns:
            known = mdt.get(s.base_file, {})
            if all(c in known for c in self.file_columns):
                got = {c: known[c] for c in self.file_columns}
                return self.partitions.overlay(s.partition, got), "mdt"
        t = self.table
        path = t.storage.join(t.slice_dir(s.partition), s.base_file)
        got = base_file_ranges(t.storage, path, t.base_format, self.data_schema,
                               self.file_columns)
        return self.partitions.overlay(s.partition, dict(got)), "footer"

    def block_ranges(self, s: FileSlice, b: LogBlock) -> dict[str, ColumnRange]:
        got = block_ranges(b, self.table.key_field, self.file_columns)
        return self.partitions.overlay(s.partition, dict(got))

    def may_match(self, ranges: Mapping[str, ColumnRange]) -> bool | None:
        """Whether a file with ``ranges`` may hold a match; None: no statistics."""
        if not ranges:
            return None
        return pr.may_match(self.expr, ranges, rows_of(ranges))

    def why(self, ranges: Mapping[str, ColumnRange], what: str) -> tuple[bool | None, str]:
        """:meth:`may_match` and the reason a slice kept for it gives: ``WHAT has no
        statistics``, ``WHAT may match`` (the bounds allow a match), or ``WHAT may match:
        R1; R2`` with the reasons tests were undecided (``NaN may be present in fare``,
        ``no statistics for fare``, ``no bounds for fare`` ...)."""
        if not ranges:
            return None, f"{what} has no statistics"
        m, notes = pr.why_may_match(self.expr, ranges, rows_of(ranges))
        return m, f"{what} may match" + (": " + "; ".join(notes) if notes else "")

    # --- decisions ----------------------------------------------------------------------

    def decide(self, s: FileSlice) -> SliceDecision:
        if not self.columns and not pr.may_match(self.expr, {}, 1):
            return SliceDecision(s, False, "predicate is never TRUE")
        # Hudi's rule prunes by path values whatever the index (Hudi's listMatchingPartitionPaths)
        known, _, _ = (self.partitions.of(s.partition)
                       if self.partitions.prunes or self.rule == "hudi" else ({}, set(), set()))
        if known and not pr.may_match(self.expr, known, 1):
            return SliceDecision(s, False, "partition values")
        if self.renamed:
            return SliceDecision(s, True, "the internal schema renamed, dropped or retyped "
                                          "columns: file statistics name older columns")
        logs = _SliceLogs(self.table, s)
        try:
            if self.rule == "hudi":
                return self._hudi(s, logs)
            return self._morlog(s, logs)
        finally:
            logs.close()

    def _morlog(self, s: FileSlice, logs: _SliceLogs) -> SliceDecision:
        applied = effective_blocks(logs.blocks, self.table.timeline, self.spec)
        data = [b for b in applied if b.block_type in DATA_BLOCKS]
        if s.base_file is None and not data:
            return SliceDecision(s, False, "empty")
        if not self.file_columns:
            return SliceDecision(s, True, "partition values may match")
        if not self.whole or any(_partial_block(b) for b in data):
            return self._union(s, data)
        if s.base_file is not None:
            ranges, _ = self.base_ranges(s)
            m, why = self.why(ranges, "base file")
            if m is None or m:
                return SliceDecision(s, True, why)
        for b in reversed(data):  # the newest first: the likeliest to hold the match
            m, why = self.why(self.block_ranges(s, b), f"block {b.instant}")
            if m is None or m:
                return SliceDecision(s, True, why)
        return SliceDecision(s, False, _excludes(s.base_file is not None, len(data)))

    def _union(self, s: FileSlice, data: list[LogBlock]) -> SliceDecision:
        parts: list[dict[str, ColumnRange]] = []
        if s.base_file is not None:
            parts.append(self.base_ranges(s)[0])
        parts += [self.block_ranges(s, b) for b in data]
        m, why = self.why(union_ranges(parts), f"union of {len(parts)} files")
        if m is None:
            return SliceDecision(s, True, "no statistics (partial updates)")
        if m:
            return SliceDecision(s, True, why.replace(" may match", " may match (partial "
                                                      "updates)", 1))
        return SliceDecision(s, False, f"union of {len(parts)} files excludes "
                                       "(partial updates)")

    def _hudi(self, s: FileSlice, logs: _SliceLogs) -> SliceDecision:
        if not self.file_columns:
            return SliceDecision(s, True, "partition values may match")
        if s.base_file is not None:
            ranges, _ = self.base_ranges(s)
            m, why = self.why(ranges, "base file")
            if m is None or m:
                return SliceDecision(s, True, why)
        rolled = {b.target_instant for b in logs.blocks
                  if b.block_type == BlockType.COMMAND
                  and b.command_type == CommandType.ROLLBACK}
        for name, blocks in logs.files:
            if not blocks or not all(self._hudi_has_stats(b, rolled) for b in blocks):
                return SliceDecision(s, True, f"log file {name} has no statistics")
            union = union_ranges([self.block_ranges(s, b) for b in blocks], name)
            m, why = self.why(union, f"log file {name}")
            if m is None or m:
                return SliceDecision(s, True, why)
        n = len(logs.files) + (s.base_file is not None)
        return SliceDecision(s, False, f"{n} file{'s' if n != 1 else ''} exclude"
                             + ("s" if n == 1 else ""))

    def _hudi_has_stats(self, b: LogBlock, rolled: set[str | None]) -> bool:
        """Whether Hudi's metadata table has statistics for ``b``'s rows: a data block of a
        committed instant that no rollback undid (not a delete or command block)."""
        if b.block_type not in DATA_BLOCKS:
            return False
        instant = b.instant or ""
        return instant not in rolled and instant_counts(instant, self.table.timeline,
                                                         self.spec)


def _excludes(base: bool, blocks: int) -> str:
    if base and blocks:
        return f"base file and {blocks} block{'s' if blocks != 1 else ''} exclude"
    if base:
        return "base file excludes"
    return f"{blocks} block{'s' if blocks != 1 else ''} exclude" + ("s" if blocks == 1 else "")


def prune(table: Table, where: pr.Expr | str, as_of: str | None = None, *,
          slices: Iterable[FileSlice] | None = None, rule: str = "morlog") -> PruneResult:
    """The latest file slices of ``table`` (as of ``as_of``; or ``slices``) split into those
    that may hold a row of the merged snapshot where ``where`` is TRUE and those that cannot
    (spec/prune.md). ``rule``: "morlog" (default) or "hudi" (Hudi's rule on the same
    statistics, for comparison)."""
    as_of = table.resolve_instant(as_of)
    if as_of is not None:
        table.check_time_travel(as_of)
    expr = bind_where(table, where)
    pruner = Pruner(table, expr, as_of, rule)
    out = PruneResult()
    for s in (table.file_slices(as_of) if slices is None else slices):
        d = pruner.decide(s)
        (out.kept if d.kept else out.pruned).append(d)
    return out


__all__ = ["DATA_BLOCKS", "RULES", "PartitionValues", "PruneResult", "Pruner", "SliceDecision",
           "SliceFilter",
           "bind_where", "predicate_schema", "prune", "rows_of", "union_ranges",
           "whole_record_merges"]
