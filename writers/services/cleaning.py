"""Cleaning (Hudi's cleaner): the file slices no reader of a retained instant needs are
deleted, with Hudi's clean plan and clean instant on the timeline (spec/services.md §5).

Three steps, under the table's writer lock after dead writers are rolled back, as Hudi's
table service client runs them (``BaseHoodieTableServiceClient.clean``):

1. **Plan** (:func:`plan_clean`, ``CleanPlanner``): the earliest commit to retain
   (``CleanerUtils.getEarliestCommitToRetain``) and, per partition, the files of the slices
   the policy gives up (``hoodie.clean.policy``: ``KEEP_LATEST_COMMITS`` by default,
   ``KEEP_LATEST_BY_HOURS``, ``KEEP_LATEST_FILE_VERSIONS``): never a file group's latest
   slice, never the latest slice before the earliest commit to retain, never a slice a
   pending compaction or log compaction needs, never a savepointed file; every slice of a
   file group replaced before the earliest commit to retain; partitions left without any
   file group. Saved as ``<K>.clean.requested`` (Avro ``HoodieCleanerPlan``, full paths)
   only when it deletes something.
2. **Execute** (:func:`run_clean`, ``CleanActionExecutor.runClean``): ``<K>.clean.inflight``
   (the plan again, as Hudi 0.14 and 1.0 write it); every planned path is checked to be a
   data file of its partition under the table root before the first one is deleted (a plan
   is read from storage: never trusted); the files are deleted, a file already gone counting
   as a failed delete (Hudi's rule, which makes a re-run from the plan finish).
3. **Complete**: the metadata table learns the deleted files in a delta commit of the same
   instant ``K`` (``files`` tombstones; ``column_stats`` and ``bloom_filters`` tombstones,
   as ``HoodieTableMetadataUtil.convertMetadataToRecords(HoodieCleanMetadata)`` writes
   them), then ``<K>.clean`` (layout 2: ``<K>_<done>.clean``) with the Avro
   ``HoodieCleanMetadata``.

A failure before completion leaves the clean requested or inflight; the next
:func:`clean` (or ``morlog clean``) finishes it from its plan first, as Hudi's
``CleanActionExecutor.execute`` does. Time-travel readers refuse an instant earlier than
the last clean's earliest commit to retain (``morlog.readers.table``).
"""

from __future__ import annotations

import datetime as _dt
import os
import posixpath
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import morlog.config as conf
from morlog.logformat.errors import (
    CleanPlanError,
    ContentError,
    MorlogError,
    UsageError,
    WriteError,
)
from morlog.logformat.naming import (
    COMPLETED,
    INFLIGHT,
    BaseFileName,
    LogFileName,
    TimelineFileName,
)
from morlog.logformat.partition_path import check_relative_partition_path
from morlog.logformat.timeline_meta import (
    CLEAN_METADATA_SCHEMA,
    CLEANER_PLAN_SCHEMA,
    CLEANER_POLICIES,
    SAVEPOINTED_TIMESTAMPS,
    action_instant,
    clean_metadata,
    clean_partition_metadata,
    cleaner_plan,
    decode_avro_as,
)
from morlog.readers.base_files import check_base_file
from morlog.readers.base_keys import base_keys_path
from morlog.readers.containment import check_file_name, is_under, resolve_under
from morlog.readers.table import Table
from morlog.readers.timeline import Instant
from morlog.writers.core.timeline import TimelineWriter, latest_time, new_instant, timeline_utc
from morlog.writers.mdt.plan import apply_drops
from morlog.writers.mdt.writer import MetadataTable
from morlog.writers.services.base import service_lock

if TYPE_CHECKING:
    from morlog.writers.client import MorTable

CLEAN = "clean"

#: Hudi's clean settings (``HoodieCleanConfig``): the 1.x key first, then the older name
POLICY = (conf.CLEAN_POLICY, conf.CLEANER_POLICY)
COMMITS_RETAINED = (conf.CLEAN_COMMITS_RETAINED, conf.CLEANER_COMMITS_RETAINED)
FILE_VERSIONS_RETAINED = (conf.CLEAN_FILE_VERSIONS_RETAINED,
                          conf.CLEANER_FILE_VERSIONS_RETAINED)
HOURS_RETAINED = (conf.CLEAN_HOURS_RETAINED, conf.CLEANER_HOURS_RETAINED)
AUTOMATIC = (conf.CLEAN_AUTOMATIC,)
MAX_COMMITS = (conf.CLEAN_TRIGGER_MAX_COMMITS, conf.CLEAN_MAX_COMMITS)
TRIGGER_STRATEGY = (conf.CLEAN_TRIGGER_STRATEGY,)
INCREMENTAL = (conf.CLEAN_INCREMENTAL, conf.CLEANER_INCREMENTAL_MODE)

#: every clean option a writer takes (``WriteConfig.hoodie_options``), and the true/false ones
OPTION_KEYS = frozenset({*POLICY, *COMMITS_RETAINED, *FILE_VERSIONS_RETAINED, *HOURS_RETAINED,
                         *AUTOMATIC, *MAX_COMMITS, *TRIGGER_STRATEGY, *INCREMENTAL})
BOOLEAN_KEYS = frozenset({*AUTOMATIC, *INCREMENTAL})

KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS, KEEP_LATEST_BY_HOURS = (
    "KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS", "KEEP_LATEST_BY_HOURS")

#: the timeline Hudi picks the earliest commit to retain from
#: (``getCommitsAndCompactionTimeline``; a pending log compaction is not in it)
_COMMITS_AND_COMPACTION = frozenset({"commit", "deltacommit", "replacecommit", "compaction",
                                     "clustering"})
#: ``getCommitsTimeline`` (completed ones: ``getCompletedCommitsTimeline``)
_COMMITS = frozenset({"commit", "deltacommit", "replacecommit"})


# --- settings --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CleanSettings:
    """Hudi's clean settings from a table's properties and write options, with Hudi's
    defaults (``HoodieCleanConfig``, spec/services.md §8)."""

    policy: str = KEEP_LATEST_COMMITS
    commits_retained: int = 10
    file_versions_retained: int = 3
    hours_retained: int = 24
    automatic: bool = True
    max_commits: int = 1
    incremental: bool = True

    @classmethod
    def of(cls, options: Mapping[str, str]) -> CleanSettings:
        """From Hudi's option names, 1.x keys over the older ones (``UsageError`` naming a
        bad value). Without a policy, one of the three ``…retained`` keys given alone
        chooses it (``CLEANER_POLICY.withInferFunction``)."""
        def raw(keys: tuple[str, ...]) -> tuple[str, str] | None:
            for k in keys:
                v = options.get(k)
                if v is not None and str(v).strip() != "":
                    return k, str(v).strip()
            return None

        def flag(keys: tuple[str, ...], default: bool) -> bool:
            got = raw(keys)
            if got is None:
                return default
            if got[1].lower() not in ("true", "false"):
                raise UsageError(f"{got[0]} is true or false", actual=got[1])
            return got[1].lower() == "true"

        def number(keys: tuple[str, ...], default: int) -> int:
            got = raw(keys)
            if got is None:
                return default
            try:
                v = int(got[1])
            except ValueError:
                raise UsageError(f"{got[0]} is a whole number", actual=got[1]) from None
            if v < 0:
                raise UsageError(f"{got[0]} is not negative", actual=got[1])
            return v

        got = raw(POLICY)
        if got is not None:
            policy = got[1].upper()
            if policy not in CLEANER_POLICIES:
                raise UsageError(f"{got[0]}: unknown cleaner policy",
                                 expected=list(CLEANER_POLICIES), actual=got[1])
        else:
            given = [p for p, keys in ((KEEP_LATEST_COMMITS, COMMITS_RETAINED),
                                       (KEEP_LATEST_BY_HOURS, HOURS_RETAINED),
                                       (KEEP_LATEST_FILE_VERSIONS, FILE_VERSIONS_RETAINED))
                     if raw(keys) is not None]
            policy = given[0] if len(given) == 1 else KEEP_LATEST_COMMITS
        trigger = raw(TRIGGER_STRATEGY)
        if trigger is not None and trigger[1].upper() != "NUM_COMMITS":
            raise UsageError(f"{trigger[0]}: Hudi's only clean trigger is NUM_COMMITS",
                             expected=["NUM_COMMITS"], actual=trigger[1])
        return cls(policy=policy, commits_retained=number(COMMITS_RETAINED, 10),
                   file_versions_retained=number(FILE_VERSIONS_RETAINED, 3),
                   hours_retained=number(HOURS_RETAINED, 24),
                   automatic=flag(AUTOMATIC, True), max_commits=number(MAX_COMMITS, 1),
                   incremental=flag(INCREMENTAL, True))


def settings_of(mt: MorTable, options: Mapping[str, str] | None = None) -> CleanSettings:
    """The settings of ``mt``: table properties, the writer's options, then ``options``."""
    return CleanSettings.of({**mt.props, **mt.config.hoodie_options, **(options or {})})


# --- the table as the cleaner sees it --------------------------------------------------------


@dataclass(frozen=True)
class Slice:
    """One file slice of a file group (``FileSlice``): its base instant, base file, logs."""

    base_instant: str
    base_file: str | None
    log_files: tuple[str, ...]

    @property
    def files(self) -> list[str]:
        return [*([self.base_file] if self.base_file else []), *self.log_files]


class _View:
    """What the planner reads of a table: Hudi's visible timeline (completed commits and
    compaction instants), pending (log) compactions, replaced file groups, savepoints."""

    def __init__(self, table: Table) -> None:
        self.table = table
        tl = self.tl = table.timeline
        visible = [i for i in tl.instants if i.action in _COMMITS_AND_COMPACTION
                   and (i.is_completed or i.action == "compaction")]
        self.visible = {i.requested for i in visible}
        self.first_visible = visible[0].requested if visible else None
        self.last_visible = visible[-1].requested if visible else None
        #: (partition, file id) -> base instant its pending compaction / log compaction reads
        self.compaction_base: dict[tuple[str, str], str] = {}
        self.log_compaction_base: dict[tuple[str, str], str] = {}
        #: (partition, file id) -> instant of its pending compaction (a slice starts there)
        self.compaction_at: dict[tuple[str, str], str] = {}
        unreadable = tl.pending_services().unreadable
        if unreadable:
            from morlog.writers.services.compaction import check_unreadable_plans

            check_unreadable_plans(unreadable, 8, ())  # a warning naming each plan file
        for i in tl.pending():
            if i.action not in ("compaction", "logcompaction") or i.requested in unreadable:
                continue  # a requested plan that does not decode reads nothing (§4.6)
            plan = tl.plan(i)
            for op in plan.get("operations") or []:
                if not isinstance(op, dict):
                    continue
                key = (str(op.get("partitionPath") or ""), str(op.get("fileId") or ""))
                base = str(op.get("baseInstantTime") or "")
                if i.action == "compaction":
                    self.compaction_base[key] = base
                    self.compaction_at[key] = i.requested
                else:
                    self.log_compaction_base[key] = base
        #: (partition, file id) -> requested time of the completed replace commit replacing it
        self.replaced: dict[tuple[str, str], str] = {}
        for i in tl.completed(frozenset({"replacecommit"})):
            for key in _replaced_by(tl, i):
                self.replaced.setdefault(key, i.requested)
        # a savepoint shares its commit's instant time, so it is listed here rather than
        # through the timeline (which keeps one instant per time)
        points = [sp for n in table.storage.listdir(tl.directory)
                  if (sp := _savepoint_of(n, tl.layout)) is not None]
        self.savepoints = sorted(sp.requested for sp in points)
        self.savepointed: set[str] = set()
        for sp in points:
            md = tl.metadata(sp)
            for pm in (md.get("partitionMetadata") or {}).values():
                if isinstance(pm, dict):
                    self.savepointed.update(str(n) for n in pm.get("savepointDataFile") or [])

    def committed(self, base_instant: str) -> bool:
        """``HoodieFileGroup.isFileSliceCommitted``: the slice's base instant is on the
        visible timeline (or older than it) and not after its last instant."""
        if self.last_visible is None or base_instant > self.last_visible:
            return False
        return base_instant in self.visible or base_instant < (self.first_visible or "")

    def file_groups(self, partition: str) -> dict[str, list[Slice]]:
        """Every file group of ``partition`` listed on storage -> its committed slices,
        newest first (``AbstractTableFileSystemView.buildFileGroups`` then
        ``HoodieFileGroup.getAllFileSlices``); a group whose slices are all uncommitted maps
        to []."""
        table = self.table
        d = table.slice_dir(partition)
        bases: dict[str, list[BaseFileName]] = {}
        logs: dict[str, list[LogFileName]] = {}
        for n in table.storage.listdir(d):  # per file
            if LogFileName.matches(n):
                ln = LogFileName.parse(n)
                logs.setdefault(ln.file_id, []).append(ln)
            elif check_base_file(n, table.base_format, table.storage.join(d, n)):
                b = BaseFileName.parse(n)
                bases.setdefault(b.file_id, []).append(b)
        out: dict[str, list[Slice]] = {}
        for fid in sorted(set(bases) | set(logs)):
            slices: dict[str, tuple[str | None, list[str]]] = {}
            for b in bases.get(fid, []):
                slices[b.instant] = (str(b), slices.get(b.instant, (None, []))[1])
            at = self.compaction_at.get((partition, fid))
            if at is not None:
                slices.setdefault(at, (None, []))
            for ln in sorted(logs.get(fid, []), key=LogFileName.sort_key):
                key = self._log_slice(ln, slices)
                base, names = slices.setdefault(key, (None, []))
                names.append(str(ln))
            out[fid] = [Slice(k, slices[k][0], tuple(slices[k][1]))
                        for k in sorted(slices, reverse=True) if self.committed(k)]
        return out

    def _log_slice(self, ln: LogFileName, slices: Mapping[str, Any]) -> str:
        """The base instant of the slice a log file joins: table version 6 its name's
        (``HoodieLogFile.getBaseCommitTime``); 8+ the largest base instant not after its
        delta commit's completion time, its own instant when there is none, the latest
        slice while it is pending (``HoodieFileGroup.getBaseInstantTime``)."""
        if self.table.version <= 6 or not slices:
            return ln.instant
        tl = self.tl
        if not tl.is_committed(ln.instant):
            return max(slices)
        done = tl.completion_time(ln.instant) or ln.instant
        for key in sorted(slices, reverse=True):
            if done >= key:
                return str(key)
        return ln.instant


def _savepoint_of(name: str, layout: int) -> Instant | None:
    """A completed ``savepoint`` instant's timeline file (``HoodieSavepointMetadata``)."""
    tf = TimelineFileName.parse(name, layout)
    if tf is None or tf.action != "savepoint" or tf.state != COMPLETED:
        return None
    return Instant(tf.requested, tf.action, tf.state, tf.completed, name)


def _replaced_by(tl: Any, inst: Instant) -> list[tuple[str, str]]:
    md = tl.metadata(inst)
    groups = md.get("partitionToReplaceFileIds") or {}
    if not isinstance(groups, dict):
        raise ContentError("partitionToReplaceFileIds is not an object",
                           path=tl.storage.join(tl.directory, inst.file_name))
    return [(str(p), str(f)) for p, fids in groups.items() for f in (fids or [])]


def _written_partitions(tl: Any, inst: Instant) -> list[str]:
    """The partitions a completed commit wrote or replaced (``getPartitionsForInstants``)."""
    md = tl.metadata(inst)
    out = list((md.get("partitionToWriteStats") or {}).keys())
    if inst.action == "replacecommit":
        out += list((md.get("partitionToReplaceFileIds") or {}).keys())
    return [str(p) for p in out]


# --- planning --------------------------------------------------------------------------------


def earliest_commit_to_retain(table: Table, settings: CleanSettings,
                              now: _dt.datetime | None = None) -> Instant | None:
    """``CleanerUtils.getEarliestCommitToRetain`` over the commits-and-compaction timeline
    (spec/services.md §5.2); None when the policy keeps everything (or has no such instant)."""
    tl = table.timeline
    timeline = [i for i in tl.instants if i.action in _COMMITS_AND_COMPACTION]
    completed = [i for i in timeline if i.is_completed]
    if settings.policy == KEEP_LATEST_COMMITS:
        n = len(completed) - settings.commits_retained
        if len(completed) <= settings.commits_retained or not 0 <= n < len(completed):
            return None  # nthInstant out of range: nothing to retain from
        nth = completed[n]
        pending = next((i for i in timeline if not i.is_completed), None)
        if pending is not None and nth.requested > pending.requested:
            before = [i for i in completed if i.requested < pending.requested]
            return before[-1] if before else None
        return nth
    if settings.policy == KEEP_LATEST_BY_HOURS:
        utc = timeline_utc(table.config.props)
        if now is None:
            now = _dt.datetime.now(_dt.UTC) if utc else _dt.datetime.now()
        t = now - _dt.timedelta(hours=settings.hours_retained)
        earliest = t.strftime("%Y%m%d%H%M%S") + f"{t.microsecond // 1000:03d}"
        return next((i for i in completed if i.requested >= earliest), None)
    return None


def last_completed_clean(table: Table) -> tuple[Instant, dict[str, Any]] | None:
    """The last completed clean and its metadata (any release's schema)."""
    cleans = table.timeline.completed(frozenset({CLEAN}))
    if not cleans:
        return None
    last = cleans[-1]
    data = table.storage.read(table.storage.join(table.timeline.directory, last.file_name))
    return last, decode_avro_as(data, CLEAN_METADATA_SCHEMA, last.file_name)


def _partitions_to_clean(view: _View, settings: CleanSettings, ectr: Instant | None
                         ) -> list[str]:
    """``CleanPlanner.getPartitionPathsToClean`` (incremental cleaning included)."""
    table = view.table
    if settings.policy == KEEP_LATEST_FILE_VERSIONS:
        return table.partitions()
    if ectr is None:
        return []
    last = last_completed_clean(table) if settings.incremental else None
    if last is not None:
        md = last[1]
        prev = str(md.get("earliestCommitToRetain") or "").strip()
        commits = [i for i in view.tl.instants if i.action in _COMMITS]
        on_timeline = bool(commits) and prev >= commits[0].requested
        if prev and on_timeline:
            seen = [s for s in str((md.get("extraMetadata") or {}).get(
                SAVEPOINTED_TIMESTAMPS, "")).split(",") if s]
            if not [s for s in seen if s not in view.savepoints]:
                parts: dict[str, None] = {}
                for i in view.tl.completed(_COMMITS):
                    if prev <= i.requested < ectr.requested:
                        for p in _written_partitions(view.tl, i):
                            parts[p] = None
                return list(parts)
    return table.partitions()


def _protected(view: _View, partition: str, fid: str, s: Slice) -> bool:
    """``isFileSliceNeededForPendingMajorOrMinorCompaction``."""
    for bases in (view.compaction_base, view.log_compaction_base):
        base = bases.get((partition, fid))
        if base is not None and s.base_instant >= base:
            return True
    return False


def _savepointed(view: _View, s: Slice) -> bool:
    return any(n in view.savepointed for n in s.files)


def _partition_deletes(view: _View, settings: CleanSettings, partition: str,
                       ectr: Instant | None, commits: int) -> tuple[bool, list[str]]:
    """(delete the partition, file names to delete) of one partition
    (``CleanPlanner.getDeletePaths``)."""
    groups = view.file_groups(partition)
    replaced = {fid: at for (p, fid), at in view.replaced.items() if p == partition}
    active = {fid: s for fid, s in groups.items() if fid not in replaced}
    out: list[str] = []
    if settings.policy == KEEP_LATEST_FILE_VERSIONS:
        for fid in sorted(replaced):
            out += [n for s in groups.get(fid, []) if not _savepointed(view, s) for n in s.files]
        for fid, slices in active.items():
            keep = settings.file_versions_retained
            candidates = [s for s in slices if not _protected(view, partition, fid, s)]
            if (partition, fid) in view.compaction_base or \
                    (partition, fid) in view.log_compaction_base:
                keep -= 1  # the pending (log) compaction keeps its slices already
            for s in candidates[max(keep, 0):]:
                if not _savepointed(view, s):
                    out += s.files
        return not active, out
    retained = settings.commits_retained if settings.policy == KEEP_LATEST_COMMITS else 0
    if commits <= retained or ectr is None:
        return False, out
    e = ectr.requested
    for fid in sorted(replaced):
        if replaced[fid] < e:  # getReplacedFileGroupsBefore
            out += [n for s in groups.get(fid, []) if not _savepointed(view, s)
                    for n in s.files]
    for fid, slices in active.items():
        if not slices:
            continue
        last_version = slices[0].base_instant
        before = next((s.base_instant for s in slices if s.base_instant < e), None)
        for s in slices:
            if _savepointed(view, s) or s.base_instant in (last_version, before):
                continue
            if not _protected(view, partition, fid, s) and s.base_instant < e:
                out += s.files
    later_replace = any(at >= e for at in replaced.values())
    return not active and not later_replace, out


def plan_clean(mt: MorTable, table: Table | None = None, *,
               settings: CleanSettings | None = None,
               now: _dt.datetime | None = None) -> dict[str, Any] | None:
    """A ``HoodieCleanerPlan`` of what the policy gives up now, or None when it deletes
    nothing (Hudi saves no such plan). Reads only; ``table`` defaults to the table now."""
    table = table if table is not None else mt.table()
    settings = settings if settings is not None else settings_of(mt)
    view = _View(table)
    ectr = earliest_commit_to_retain(table, settings, now)
    commits = len(table.timeline.completed(_COMMITS))
    files: dict[str, list[str]] = {}
    gone: list[str] = []
    partitioned = bool(table.config.partition_fields)
    for part in _partitions_to_clean(view, settings, ectr):  # per partition
        if part:
            check_relative_partition_path(part)
        if not table.storage.listdir(table.slice_dir(part)):
            continue  # no such partition (any more)
        delete_partition, names = _partition_deletes(view, settings, part, ectr, commits)
        if names:
            files[part] = [full_path(mt, part, n) for n in dict.fromkeys(names)]
        if delete_partition and partitioned and part:
            gone.append(part)
    if not any(files.values()):
        return None
    last = table.timeline.completed(_COMMITS)
    extra: dict[str, str] = {}
    if view.savepoints and partitioned:
        extra[SAVEPOINTED_TIMESTAMPS] = ",".join(view.savepoints)
    return cleaner_plan(
        settings.policy, files,
        earliest_to_retain=(action_instant(ectr.requested, ectr.action)
                            if ectr is not None else None),
        last_completed_commit=last[-1].requested if last else "",
        partitions_to_delete=gone, extra_metadata=extra)


# --- paths -----------------------------------------------------------------------------------


def _root(mt: MorTable) -> str:
    """The table root as plans name it: an absolute local path, or ``bucket/key``."""
    loc = mt.location
    if loc.kind == "local":
        return posixpath.normpath(os.path.abspath(loc.path))
    return loc.path.strip("/")


def full_path(mt: MorTable, partition: str, name: str) -> str:
    """The full path a plan records for a data file (``CleanFileInfo``: Hudi's
    ``StoragePath`` string): an absolute local path, or ``<scheme>://bucket/key/...``."""
    rel = f"{partition}/{name}" if partition else name
    loc = mt.location
    if loc.kind == "local":
        return f"{_root(mt)}/{rel}"
    scheme = loc.fs_type or "s3"
    return f"{scheme}://{_root(mt)}/{rel}"


def _path_part(path: str) -> str:
    """A plan path without its scheme (``file:``, ``s3a://bucket``: the bucket stays)."""
    if path.startswith("file://"):
        return urllib.parse.urlsplit(path).path
    if path.startswith("file:"):
        return path[len("file:"):]
    if "://" in path:
        parts = urllib.parse.urlsplit(path)
        if parts.query or parts.fragment:
            raise CleanPlanError("a path to delete carries a query", actual=path)
        return f"{parts.netloc}{parts.path}"
    return path


@dataclass(frozen=True)
class _Target:
    partition: str
    name: str
    #: the path to delete, in the store's form
    path: str


def _check_plan(mt: MorTable, table: Table, plan: Mapping[str, Any]
                ) -> tuple[list[_Target], list[str]]:
    """Every path of the plan as a data file of its partition under the table root, and
    the partitions to delete; :class:`CleanPlanError` for anything else (nothing is deleted
    when one entry is refused)."""
    root = _root(mt)
    local = mt.location.kind == "local"
    targets: list[_Target] = []
    per = plan.get("filePathsToBeDeletedPerPartition")
    if not isinstance(per, dict):
        raise CleanPlanError("the clean plan has no filePathsToBeDeletedPerPartition map")
    for part, entries in per.items():
        if not isinstance(part, str):
            raise CleanPlanError("a partition of the clean plan is not a string",
                                 actual=repr(part)[:200])
        try:
            if part:
                check_relative_partition_path(part)
        except UsageError as exc:
            raise CleanPlanError(f"the clean plan names an unsafe partition ({exc.message})",
                                 actual=part) from None
        if bool(part) != bool(table.config.partition_fields):
            raise CleanPlanError("the clean plan names a partition the table cannot have "
                                 "(a partition of a non-partitioned table, or the root of a "
                                 "partitioned one)", actual=part)
        for entry in entries or []:
            targets.append(_target(mt, table, root, local, part, entry))
    gone = []
    partitions: list[str] | None = None
    for part in plan.get("partitionsToBeDeleted") or []:
        if not table.config.partition_fields:
            continue  # CleanActionExecutor.clean: only in partitioned tables
        if not isinstance(part, str) or not part:
            raise CleanPlanError("a partition to delete is not a partition path",
                                 actual=repr(part)[:200])
        try:
            check_relative_partition_path(part)
            d = resolve_under(table.path, part, follow_symlinks=local)
        except UsageError as exc:
            raise CleanPlanError(f"the clean plan would delete an unsafe partition "
                                 f"({exc.message})", actual=part) from None
        if partitions is None:
            partitions = table.partitions()
        exists = bool(table.storage.listdir(d)) or bool(table.storage.subdirs(d))
        if exists and part not in partitions:
            raise CleanPlanError("the clean plan would delete a directory that is no "
                                 "partition of the table", actual=part)
        gone.append(part)
    return targets, gone


def _target(mt: MorTable, table: Table, root: str, local: bool, part: str,
            entry: Any) -> _Target:
    fp = entry.get("filePath") if isinstance(entry, dict) else None
    if not isinstance(fp, str) or not fp:
        raise CleanPlanError("a clean plan entry has no file path", actual=repr(entry)[:200])
    if isinstance(entry, dict) and entry.get("isBootstrapBaseFile"):
        raise CleanPlanError("the clean plan deletes a bootstrap source file, which lives "
                             "outside the table", actual=fp)
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in fp) or "\\" in fp:
        raise CleanPlanError("a path to delete holds a control character or backslash",
                             actual=fp)
    p = _path_part(fp)
    if not local:
        p = p.strip("/")
    segments = p.split("/")
    if any(s in (".", "..") for s in segments) or "//" in p.lstrip("/"):
        raise CleanPlanError("a path to delete is not in normal form", actual=fp)
    if not is_under(root, p) or p == root:
        raise CleanPlanError("a path to delete is outside the table", path=table.path,
                             actual=fp)
    rel = p[len(root):].lstrip("/")
    rel_part, _, name = rel.rpartition("/")
    if rel_part != part:
        raise CleanPlanError(f"a path to delete is not in its partition {part!r}",
                             actual=fp)
    try:
        check_file_name(name)
        path = resolve_under(table.path, rel, follow_symlinks=local)
    except UsageError as exc:
        raise CleanPlanError(f"a path to delete is unsafe ({exc.message})",
                             actual=fp) from None
    if not (LogFileName.matches(name) or BaseFileName.matches(name)):
        raise CleanPlanError("a path to delete is not a data file of the table", actual=fp)
    return _Target(part, name, path)


# --- executing -------------------------------------------------------------------------------


@dataclass
class CleanResult:
    """What one clean did."""

    instant: str
    earliest_retained: str = ""
    policy: str = ""
    #: (partition, file name) deleted
    deleted: list[tuple[str, str]] = field(default_factory=list)
    #: (partition, file name) not deleted (already gone)
    failed: list[tuple[str, str]] = field(default_factory=list)
    partitions_deleted: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"instant": self.instant, "earliest_commit_to_retain": self.earliest_retained,
                "policy": self.policy, "seconds": round(self.seconds, 3),
                "deleted": [{"partition": p, "file": n} for p, n in self.deleted],
                "failed": [{"partition": p, "file": n} for p, n in self.failed],
                "partitions_deleted": self.partitions_deleted}


def pending_cleans(table: Table) -> list[str]:
    """Instants of the cleans requested or inflight, oldest first."""
    return sorted(i.requested for i in table.timeline.pending() if i.action == CLEAN)


def read_clean_plan(mt: MorTable, table: Table, instant: str) -> dict[str, Any]:
    """The plan of clean ``instant`` (``<K>.clean.requested``, any release's schema; a
    version 1 plan's file names made full paths, ``CleanPlanV2MigrationHandler``)."""
    writer = TimelineWriter(mt.store, mt.location, layout=table.timeline.layout)
    path = writer.path(instant, "requested", CLEAN)
    if not mt.store.exists(path):
        raise UsageError("no clean plan of this instant", path=path)
    plan = decode_avro_as(mt.store.read(path), CLEANER_PLAN_SCHEMA, path)
    if not plan:
        raise ContentError("the clean plan is empty", path=path)
    if plan.get("filePathsToBeDeletedPerPartition") is None:
        old = plan.get("filesToBeDeletedPerPartition") or {}
        plan["filePathsToBeDeletedPerPartition"] = {
            part: [{"filePath": full_path(mt, str(part), str(n)),
                    "isBootstrapBaseFile": False} for n in names or []]
            for part, names in old.items()}
    return plan


#: deletes the planned files (paths in the store's form, checked against the plan already):
#: whether each was deleted (False: gone already). Default: one after the other here; Spark:
#: ``morlog.spark.clean``, one task per partition.
Deleter = Callable[[list[str]], list[bool]]


def run_clean(mt: MorTable, instant: str, *,
              progress: Callable[[int, int], None] | None = None,
              deleter: Deleter | None = None) -> CleanResult:
    """Execute the clean planned at ``instant`` (see the module docstring)."""
    t0 = time.perf_counter()
    with service_lock(mt) as table:
        result = _run_locked(mt, table, instant, progress, deleter)
    result.seconds = time.perf_counter() - t0
    return result


def _run_locked(mt: MorTable, table: Table, instant: str,
                progress: Callable[[int, int], None] | None,
                deleter: Deleter | None = None) -> CleanResult:
    inst = table.timeline.get(instant)
    if inst is None or inst.action != CLEAN or inst.is_completed:
        raise UsageError("no pending clean at this instant", actual=instant, path=mt.uri)
    plan = read_clean_plan(mt, table, instant)
    targets, gone = _check_plan(mt, table, plan)  # before the first byte
    utc = timeline_utc(table.config.props)
    writer = TimelineWriter(mt.store, mt.location, layout=table.timeline.layout,
                            fsync=mt.config.fsync, utc=utc)
    apply_drops(mt.store, mt.location, table, mt.metadata_plan, fsync=mt.config.fsync)
    hooks = mt.commit_hooks()
    t0 = time.perf_counter()
    if inst.state != INFLIGHT:
        writer.write(instant, "inflight", plan, CLEAN)
    policy = str(plan.get("policy") or "")
    ectr = (plan.get("earliestInstantToRetain") or {}).get("timestamp") or ""
    result = CleanResult(instant, str(ectr), policy)
    try:
        if deleter is not None:
            done = deleter([t.path for t in targets])
            if len(done) != len(targets):
                raise UsageError("the deleter answered for another number of files",
                                 expected=len(targets), actual=len(done))
        else:
            done = []
            for n, t in enumerate(targets, 1):  # per file
                done.append(mt.store.delete(t.path))
                if progress is not None:
                    progress(n, len(targets))
        for t, deleted in zip(targets, done, strict=True):
            if deleted:
                result.deleted.append((t.partition, t.name))
            else:  # gone already (a re-run): Hudi counts a failed delete
                result.failed.append((t.partition, t.name))
            if not LogFileName.matches(t.name):  # a base file: its base-key index too
                mt.store.delete(base_keys_path(mt.location, t.partition, t.name))
        for part in gone:
            mt.store.remove_tree(mt.location.partition_path(part))
            result.partitions_deleted.append(part)
        partitions: dict[str, dict[str, Any]] = {}
        for part in (plan.get("filePathsToBeDeletedPerPartition") or {}):
            partitions[part] = clean_partition_metadata(
                part, policy, [n for p, n in result.deleted if p == part],
                [n for p, n in result.failed if p == part],
                partition_deleted=part in gone)
        meta = clean_metadata(instant, int((time.perf_counter() - t0) * 1000), str(ectr),
                              partitions,
                              last_completed_commit=str(plan.get("lastCompletedCommitTimestamp")
                                                        or ""),
                              extra_metadata=plan.get("extraMetadata") or {})
        cleaned = getattr(hooks, "cleaned", None)
        if cleaned is not None and isinstance(getattr(hooks, "mdt", None), MetadataTable):
            cleaned(instant, {p: list(m["deletePathPatterns"])
                                    for p, m in partitions.items()},
                          [p for p in partitions if p in gone])
        writer.write(instant, "completed", meta, CLEAN)
    except Exception as exc:
        if isinstance(exc, MorlogError):
            raise
        raise WriteError(f"clean {instant} failed: {type(exc).__name__}: {exc}; it stays "
                         "pending and the next 'morlog clean' finishes it from its plan",
                         path=mt.uri) from exc
    return result


# --- the whole service -----------------------------------------------------------------------


@dataclass
class CleanReport:
    """What :func:`clean` planned and ran."""

    dry_run: bool = False
    #: pending cleans that were (or would be) finished first
    pending: list[str] = field(default_factory=list)
    #: the new plan (``HoodieCleanerPlan`` as a dict), None when nothing is to clean
    plan: dict[str, Any] | None = None
    results: list[CleanResult] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "pending": self.pending, "plan": self.plan,
                "cleans": [r.as_dict() for r in self.results]}


def needs_cleaning(table: Table, settings: CleanSettings) -> bool:
    """Hudi's trigger (``CleanPlanActionExecutor.needsCleaning``, ``NUM_COMMITS``): at least
    ``hoodie.clean.trigger.max.commits`` completed commits after the last clean's
    ``lastCompletedCommitTimestamp`` (all of them without a clean)."""
    commits = table.timeline.completed(_COMMITS)
    last = last_completed_clean(table)
    if last is not None:
        since = str(last[1].get("lastCompletedCommitTimestamp") or "")
        commits = [i for i in commits if i.requested > since]
    return len(commits) >= settings.max_commits


def schedule_clean(mt: MorTable, *, force: bool = True,
                   options: Mapping[str, str] | None = None) -> str | None:
    """Write a clean plan when something is to clean (and, without ``force``, the trigger
    fires); its instant, or None."""
    settings = settings_of(mt, options)
    with service_lock(mt) as table:
        if not force and not needs_cleaning(table, settings):
            return None
        plan = plan_clean(mt, table, settings=settings)
        if plan is None:
            return None
        utc = timeline_utc(table.config.props)
        instant = new_instant(latest_time(table), utc=utc)
        writer = TimelineWriter(mt.store, mt.location, layout=table.timeline.layout,
                                fsync=mt.config.fsync, utc=utc)
        writer.write(instant, "requested", plan, CLEAN)
        return instant


def clean(mt: MorTable, *, dry_run: bool = False, force: bool = True,
          progress: Callable[[int, int], None] | None = None,
          options: Mapping[str, str] | None = None,
          deleter: Deleter | None = None) -> CleanReport:
    """Finish the cleans pending, then plan one with the table's settings (``options``
    over them) and run it. ``force`` (the default) plans whatever the trigger says;
    ``dry_run``: only report the pending cleans and the plan a clean would make now."""
    report = CleanReport(dry_run=dry_run)
    table = mt.table()
    report.pending = pending_cleans(table)
    if dry_run:
        report.plan = plan_clean(mt, table, settings=settings_of(mt, options))
        return report
    for pending in report.pending:
        report.results.append(run_clean(mt, pending, progress=progress, deleter=deleter))
    instant = schedule_clean(mt, force=force, options=options)
    if instant is not None:
        report.plan = read_clean_plan(mt, mt.table(), instant)
        report.results.append(run_clean(mt, instant, progress=progress, deleter=deleter))
    return report


def inline_clean(mt: MorTable) -> CleanReport | None:
    """After a commit: Hudi's automatic clean (``hoodie.clean.automatic``, default true;
    ``BaseHoodieWriteClient.autoCleanOnCommit``): pending cleans are finished and a new one
    is planned and run when the trigger fires. None when automatic cleaning is off."""
    if not settings_of(mt).automatic:
        return None
    return clean(mt, force=False)


def deleted_files(plan: Mapping[str, Any]) -> Iterable[str]:
    """Every full path a plan deletes."""
    for entries in (plan.get("filePathsToBeDeletedPerPartition") or {}).values():
        for e in entries or []:
            yield str(e.get("filePath"))


__all__ = ["BOOLEAN_KEYS", "CLEAN", "OPTION_KEYS", "CleanPlanError", "CleanReport", "Deleter",
           "CleanResult", "CleanSettings", "Slice",
           "clean", "deleted_files", "earliest_commit_to_retain", "full_path", "inline_clean",
           "last_completed_clean", "needs_cleaning", "pending_cleans", "plan_clean",
           "read_clean_plan", "run_clean", "schedule_clean", "settings_of"]
