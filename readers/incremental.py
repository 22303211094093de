"""Hudi's query types on a merge-on-read table: ``snapshot``, ``read_optimized`` and
``incremental`` (spec/queries.md).

- snapshot: the merged latest (or ``as_of``) state, :meth:`Table.read <morlog.readers.table.
  Table.read>`;
- read_optimized: the base files of the latest file slices, no log merged
  (:func:`read_optimized_slices`);
- incremental: the latest state, as of the range's last instant, of the records that the
  range's commits wrote (``_hoodie_commit_time`` one of them), read from the file groups those
  commits wrote only (:func:`instants_in_range`, :func:`read_incremental`).

The range ``(begin, end]`` compares completion times on table versions 8+ (Hudi 1.x's
``MergeOnReadIncrementalRelationV2`` / ``IncrementalQueryAnalyzer``) and requested (instant)
times on versions <= 6 (``MergeOnReadIncrementalRelationV1``). ``begin`` ``earliest`` starts
before the first instant.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

import morlog.config as conf
from morlog.config import (
    ARCHIVELOG_FOLDER,
    INCR_FALLBACK_FULL_TABLE_SCAN,
    TIMELINE_HISTORY_PATH,
)
from morlog.logformat.errors import ContentError, MissingFileError, UsageError
from morlog.logformat.partition_path import check_relative_partition_path

from . import predicate as pr
from .parallel import default_threads, run_all
from .timeline import Instant

if TYPE_CHECKING:
    from .table import FileSlice, Table

#: the values of ``hoodie.datasource.query.type`` morlog reads (Hudi's
#: ``DataSourceReadOptions.QUERY_TYPE``)
QUERY_TYPES = ("snapshot", "read_optimized", "incremental")
#: ``begin`` that starts before every instant (Hudi's ``IncrementalQueryAnalyzer
#: .START_COMMIT_EARLIEST``)
EARLIEST = "earliest"
#: the completed actions an incremental range holds: Hudi's commits-and-compaction timeline
#: (a compaction completes as ``commit``, a clustering as ``replacecommit``, a log compaction
#: as ``deltacommit``)
INCREMENTAL_ACTIONS = frozenset({"commit", "deltacommit", "replacecommit"})

#: the meta field an incremental query filters on
COMMIT_TIME_FIELD = "_hoodie_commit_time"
_FALLBACK_KEY = INCR_FALLBACK_FULL_TABLE_SCAN


@dataclass(frozen=True)
class IncrementalRange:
    """The instants an incremental query ``(begin, end]`` reads (:func:`instants_in_range`)."""

    #: the resolved bounds (``yyyyMMddHHmmssSSS``); begin None: ``earliest``; end None: latest
    begin: str | None
    end: str | None
    #: True when the bounds compare completion times (table version 8+), else requested times
    by_completion: bool
    #: the completed write instants of the active timeline in the range, by requested time
    instants: tuple[Instant, ...]
    #: the range reaches before the active timeline into archived instants (which morlog
    #: does not read)
    archived: bool

    @property
    def commit_times(self) -> tuple[str, ...]:
        """The requested times of :attr:`instants`: the ``_hoodie_commit_time`` values kept."""
        return tuple(i.requested for i in self.instants)

    @property
    def latest(self) -> str | None:
        """The requested time of the range's last instant: the read's ``as_of``."""
        return self.instants[-1].requested if self.instants else None


def resolve_bound(table: Table, text: str | None, what: str) -> str | None:
    """A range bound of an incremental or CDC query as an instant (None: open): the forms
    ``as.of.instant`` takes, and ``earliest`` for ``begin``."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise UsageError(f"the incremental {what} is an instant string", actual=repr(text))
    if what == "begin" and text.strip().lower() == EARLIEST:
        return None
    return table.resolve_instant(text)


def _has_archive(table: Table) -> bool:
    """Whether the table has archived instants: files in its archived timeline folder
    (``hoodie.archivelog.folder``, layout 1) or LSM history (``hoodie.timeline.history.path``,
    layout 2)."""
    st = table.storage
    if table.version >= 8:
        folder = table.config.get(TIMELINE_HISTORY_PATH) or "history"
        directory = st.join(table.timeline.directory, folder)
    else:
        folder = table.config.get(ARCHIVELOG_FOLDER) or "archived"
        directory = st.join(table.path, ".hoodie", folder)
    try:
        names = st.listdir(directory)
    except (OSError, MissingFileError):
        return False
    return any(not n.startswith(".") for n in names)


def instants_in_range(table: Table, begin: str | None, end: str | None = None
                      ) -> IncrementalRange:
    """The completed writes (commits, delta commits, replace commits, compactions, log
    compactions, clusterings) whose time lies in ``(begin, end]``: completion time on table
    version 8+, requested time on <= 6. ``begin``/``end`` take the forms of ``as.of.instant``
    (``yyyyMMddHHmmssSSS``, ``yyyy-MM-dd HH:mm:ss[.SSS]``, ``yyyy-MM-dd``); ``begin``
    ``"earliest"`` (or None) starts before every instant, ``end`` None ends at the latest.

    A :class:`UsageError` for a table without meta fields (Hudi: "Incremental queries are not
    supported when meta fields are disabled") and for a table without any completed write
    (Hudi: "No instants to incrementally pull")."""
    if not table.config.populate_meta_fields:
        raise UsageError("incremental queries need the meta field _hoodie_commit_time: the "
                         "table populates no meta fields (hoodie.populate.meta.fields)",
                         path=table.config.path)
    lo = resolve_bound(table, begin, "begin")
    hi = resolve_bound(table, end, "end")
    tl = table.timeline
    done = tl.completed(INCREMENTAL_ACTIONS)
    if not done:
        raise UsageError("no completed write to pull incrementally (the table's active "
                         "timeline has no completed commit)", path=table.path)
    by_completion = table.version >= 8

    def key(i: Instant) -> str:
        return (i.completed or i.requested) if by_completion else i.requested

    picked = tuple(i for i in done
                   if (lo is None or key(i) > lo) and (hi is None or key(i) <= hi))
    first = min(key(i) for i in done)
    archived = (lo is None or lo < first) and _has_archive(table)
    return IncrementalRange(lo, hi, by_completion, picked, archived)


def _write_stats(table: Table, inst: Instant) -> list[tuple[str, str, str]]:
    """(partition, file id, path relative to the table) of every write stat of a commit."""
    md = table.timeline.metadata(inst)
    where = table.storage.join(table.timeline.directory, inst.file_name)
    stats = md.get("partitionToWriteStats") or {}
    if not isinstance(stats, dict):
        raise ContentError("partitionToWriteStats is not an object", path=where)
    out = []
    for part, items in stats.items():
        if not isinstance(items, list):
            raise ContentError("partitionToWriteStats holds a value that is not a list",
                               path=where, actual=type(items).__name__)
        if part:
            try:
                check_relative_partition_path(part)
            except UsageError as exc:
                raise ContentError(f"partitionToWriteStats names an unsafe partition "
                                   f"({exc.message})", path=where) from None
        for w in items:
            if not isinstance(w, dict):
                raise ContentError("a write stat is not an object", path=where)
            fid, path = w.get("fileId"), w.get("path")
            if not isinstance(fid, str) or not fid:
                continue
            out.append((part, fid, path if isinstance(path, str) else ""))
    return out


@dataclass(frozen=True)
class IncrementalPlan:
    """What an incremental read reads: the file slices, as of which instant, and the row
    filter (``_hoodie_commit_time`` in the range)."""

    range: IncrementalRange
    slices: list[FileSlice]
    #: the read's instant (None: the latest state, a full table scan)
    as_of: str | None
    #: the predicate on ``_hoodie_commit_time`` rows must satisfy (unbound); None: no row
    expr: pr.Expr | None
    #: True when the plan scans every latest slice (Hudi's full table scan fallback)
    full_scan: bool


def _fallback(fallback: bool | None) -> bool:
    """The fallback flag; None: the option's default (Hudi's DataSourceReadOptions)."""
    if fallback is None:
        return conf.default_bool(INCR_FALLBACK_FULL_TABLE_SCAN)
    return bool(fallback)


def plan_incremental(table: Table, begin: str | None, end: str | None = None,
                     fallback: bool | None = None) -> IncrementalPlan:
    """The file slices and row filter of the incremental query ``(begin, end]``
    (spec/queries.md §3): the latest slices, as of the range's last instant, of the file
    groups that the range's commits wrote (their write stats), unless the range reaches
    archived instants or files its commits wrote are gone (a clean), when ``fallback``
    (``hoodie.datasource.read.incr.fallback.fulltablescan.enable``, default false) reads every
    latest slice instead; without it a gone file is a :class:`MissingFileError` and (table
    version 8+) archived instants a :class:`UsageError`."""
    rng = instants_in_range(table, begin, end)
    fall = _fallback(fallback)
    col = COMMIT_TIME_FIELD
    in_range: pr.Expr | None = pr.In(col, rng.commit_times) if rng.instants else None
    if rng.archived:
        first_active = min(i.requested for i in table.timeline.completed(INCREMENTAL_ACTIONS))
        if fall:
            # archived instants: the records older than the active timeline and after begin
            older: list[pr.Expr] = [pr.Compare(col, "<", first_active)]
            if rng.begin is not None:
                older.append(pr.Compare(col, ">", rng.begin))
            if rng.end is not None:
                older.append(pr.Compare(col, "<=", rng.end))
            parts = [pr.And(tuple(older))] + ([in_range] if in_range is not None else [])
            return IncrementalPlan(rng, table.file_slices(), None, pr.Or(tuple(parts)), True)
        if table.version >= 8:
            raise UsageError(
                f"the incremental range ({rng.begin or EARLIEST}, {rng.end or 'latest'}] "
                f"reaches archived instants (before {first_active}), which morlog does not "
                f"read; set {_FALLBACK_KEY}=true to scan the latest file slices instead",
                path=table.path)
        # version 6: Hudi's V1 relation reads the active instants of the range only
    if not rng.instants:
        return IncrementalPlan(rng, [], rng.latest, None, False)
    groups: dict[str, set[str]] = {}
    files: dict[str, set[str]] = {}
    for inst in rng.instants:
        for part, fid, path in _write_stats(table, inst):
            groups.setdefault(part, set()).add(fid)
            if path:
                files.setdefault(part, set()).add(path.rsplit("/", 1)[-1])
    missing = _missing_file(table, files)
    if missing is not None:
        if fall:
            return IncrementalPlan(rng, table.file_slices(), None, in_range, True)
        raise MissingFileError(
            f"the incremental range ({rng.begin or EARLIEST}, {rng.end or 'latest'}] needs a "
            f"file a clean has deleted; set {_FALLBACK_KEY}=true to scan the latest file "
            "slices instead", path=missing)
    as_of = rng.latest
    slices: list[FileSlice] = []
    for part in sorted(groups):
        wanted = groups[part]
        slices.extend(s for s in table.file_slices(as_of, part) if s.file_id in wanted)
    return IncrementalPlan(rng, slices, as_of, in_range, False)


def _missing_file(table: Table, files: dict[str, set[str]]) -> str | None:
    """The path of the first file named by the range's write stats that does not exist (one
    listing per partition), None when all do."""
    st = table.storage
    for part in sorted(files):
        directory = table.slice_dir(part)
        try:
            present = set(st.listdir(directory))
        except (OSError, MissingFileError):
            present = set()
        gone = sorted(files[part] - present)
        if gone:
            return st.join(directory, gone[0])
    return None


def read_incremental(table: Table, begin: str | None, end: str | None = None,
                     columns: list[str] | None = None, where: Any = None,
                     fallback: bool | None = None, threads: int | None = None) -> pa.Table:
    """The incremental query ``(begin, end]`` (:func:`plan_incremental`): the merged records
    of the range's file groups, as of the range's last instant, whose
    ``_hoodie_commit_time`` is one of the range's instants; ``columns`` projects, ``where``
    (a predicate) prunes slices and filters rows as in a snapshot read; slices are read on up
    to ``threads`` threads (default: the machine's cores, at most 4)."""
    from .prune import Pruner, SliceFilter, bind_where, predicate_schema

    table.check_columns(columns)
    plan = plan_incremental(table, begin, end, fallback)
    if plan.expr is None or not plan.slices:
        return table.empty(columns)
    expr = pr.bind(plan.expr, predicate_schema(table))
    if where is not None:
        expr = pr.And((expr, bind_where(table, where)))
    rows = SliceFilter.of(table, expr, columns)
    slices = plan.slices
    if where is not None:
        pruner = Pruner(table, expr, plan.as_of, "morlog")
        slices = [s for s in slices if pruner.decide(s).kept]
    n = default_threads() if threads is None else max(1, threads)
    parts = [t for t in run_all(lambda s: rows.read(table, s, plan.as_of), slices, n,
                                "morlog-incremental") if t.num_rows]
    return _concat(table, parts, columns)


def read_optimized_slices(table: Table, as_of: str | None = None) -> list[FileSlice]:
    """The base files of the latest file slices (as of ``as_of``) as slices without logs:
    what a read-optimized query reads (Hudi's ``BaseFileOnlyRelation``); slices without a
    base file hold no row for it."""
    return [replace(s, log_files=[])
            for s in table.file_slices(as_of) if s.base_file is not None]


def read_read_optimized(table: Table, as_of: str | None = None,
                        columns: list[str] | None = None, where: Any = None) -> pa.Table:
    """The read-optimized query: the rows of the latest base files, no log merged;
    ``columns`` and ``where`` as in a snapshot read."""
    from .prune import Pruner, SliceFilter, bind_where

    as_of = table.resolve_instant(as_of)
    if as_of is not None:
        table.check_time_travel(as_of)
    table.check_columns(columns)
    slices = read_optimized_slices(table, as_of)
    parts = []
    if where is None:
        for s in slices:
            t = table.read_slice(s, as_of, columns)
            if t.num_rows:
                parts.append(t)
    else:
        expr = bind_where(table, where)
        pruner = Pruner(table, expr, as_of, "morlog")
        rows = SliceFilter.of(table, expr, columns)
        for s in slices:
            if pruner.decide(s).kept:
                t = rows.read(table, s, as_of)
                if t.num_rows:
                    parts.append(t)
    return _concat(table, parts, columns)


def _concat(table: Table, parts: list[pa.Table], columns: list[str] | None) -> pa.Table:
    if not parts:
        return table.empty(columns)
    try:
        return pa.concat_tables(parts, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.concat_tables(parts)


__all__ = ["EARLIEST", "resolve_bound", "INCREMENTAL_ACTIONS", "QUERY_TYPES", "IncrementalPlan",
           "IncrementalRange", "instants_in_range", "plan_incremental", "read_incremental",
           "read_optimized_slices", "read_read_optimized"]
