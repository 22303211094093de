"""Hudi's timeline: instants, their states and completion times (table versions 6, 8 and 9).

Layout 1 (table version <= 6): ``.hoodie/<instant>.<action>`` when completed,
``<instant>.<action>.inflight`` / ``.requested`` before (a ``commit`` in flight is
``<instant>.inflight``). Layout 2 (table version 8+): ``.hoodie/timeline/`` with completed
instants named ``<requested>_<completed>.<action>``. The names are encoded and decoded by
``morlog.logformat.naming.TimelineFileName``. A compaction completes as a ``commit``, a
clustering as a ``replacecommit``. Commit metadata is JSON in layout 1 and an Avro container
file in layout 2.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from morlog.logformat.errors import ContentError, FormatError, UsageError
from morlog.logformat.naming import COMPLETED, INFLIGHT, REQUESTED, TimelineFileName
from morlog.logformat.partition_path import check_relative_partition_path
from morlog.logformat.timeline_meta import decode_avro

from .storage import LocalStorage, Storage

_RANK = {REQUESTED: 0, INFLIGHT: 1, COMPLETED: 2}
#: actions whose completed instants write data files
WRITE_ACTIONS = frozenset({"commit", "deltacommit", "replacecommit", "compaction",
                           "clustering", "logcompaction"})
#: what a requested action is called once completed
_COMPLETES_AS = {"compaction": "commit", "clustering": "replacecommit",
                 "logcompaction": "deltacommit"}



@dataclass(frozen=True)
class Instant:
    requested: str
    action: str
    state: str
    #: completion time (layout 2 only; None for layout 1 and for pending instants)
    completed: str | None
    file_name: str

    @property
    def is_completed(self) -> bool:
        return self.state == COMPLETED


class Timeline:
    """The active timeline of a table (archived instants are older than all of these)."""

    def __init__(self, directory: str, instants: list[Instant], layout: int,
                 storage: Storage | None = None) -> None:
        self.directory = directory
        self.storage = storage or LocalStorage()
        self.layout = layout
        # the latest state of each (requested time) wins
        latest: dict[str, Instant] = {}
        for i in instants:
            cur = latest.get(i.requested)
            if cur is None or _RANK[i.state] > _RANK[cur.state]:
                latest[i.requested] = i
        self.instants = sorted(latest.values(), key=lambda x: x.requested)
        self._by_time = {i.requested: i for i in self.instants}
        self._rolled_back: set[str] | None = None  # read once (rolled_back_instants)

    @classmethod
    def load(cls, table_path: str, table_version: int,
             storage: Storage | None = None) -> Timeline:
        st = storage or LocalStorage()
        if table_version >= 8:
            directory = st.join(table_path, ".hoodie", "timeline")
            layout = 2
        else:
            directory = st.join(table_path, ".hoodie")
            layout = 1
        names = st.listdir(directory)
        return cls(directory, [i for n in names if (i := _parse(n, layout)) is not None],
                   layout, st)

    def get(self, instant: str) -> Instant | None:
        return self._by_time.get(instant)

    def completed(self, actions: frozenset[str] = WRITE_ACTIONS) -> list[Instant]:
        return [i for i in self.instants if i.is_completed and i.action in actions]

    def pending(self) -> list[Instant]:
        return [i for i in self.instants if not i.is_completed]

    @property
    def first(self) -> str | None:
        return self.instants[0].requested if self.instants else None

    def is_committed(self, instant: str, as_of: str | None = None) -> bool:
        """Whether data written by ``instant`` is visible: completed (and not after
        ``as_of``), or older than the active timeline (archived, hence completed)."""
        if as_of is not None and instant > as_of:
            return False
        i = self._by_time.get(instant)
        if i is None:
            return self.first is None or instant < self.first
        return i.is_completed

    def completion_time(self, instant: str) -> str | None:
        i = self._by_time.get(instant)
        if i is None or not i.is_completed:
            return None
        return i.completed or i.requested

    def metadata(self, instant: Instant) -> dict[str, Any]:
        """The commit metadata of a completed instant (JSON or Avro), {} when empty."""
        path = self.storage.join(self.directory, instant.file_name)
        data = self.storage.read(path)
        if not data.strip():
            return {}
        if data[:4] == b"Obj\x01":
            return decode_avro(data, path)
        try:
            value = json.loads(data)
        except ValueError as exc:
            raise ContentError(f"commit metadata is not JSON: {exc}", path=path) from None
        except RecursionError:
            raise ContentError("commit metadata is nested too deeply", path=path) from None
        return value if isinstance(value, dict) else {}

    def rolled_back_instants(self) -> set[str]:
        """Instants that completed rollbacks (or restores) undid, from their metadata (whose
        values are type-checked: a :class:`ContentError` naming the file otherwise). Read
        once per timeline; do not modify the returned set."""
        if self._rolled_back is not None:
            return self._rolled_back
        out: set[str] = set()
        for i in self.completed(frozenset({"rollback", "restore"})):
            md = self.metadata(i)
            where = self.storage.join(self.directory, i.file_name)
            for t in _list_of(md, "commitsRollback", where):
                if not isinstance(t, (str, int)) or isinstance(t, bool):
                    raise ContentError("commitsRollback holds a value that is not an "
                                       "instant time", path=where, actual=type(t).__name__)
                out.add(str(t))
            for t in _list_of(md, "instantsRollback", where):
                if not isinstance(t, dict):
                    raise ContentError("instantsRollback holds a value that is not an "
                                       "object", path=where, actual=type(t).__name__)
                ct = t.get("commitTime")
                if ct is None or ct == "":
                    continue
                if not isinstance(ct, (str, int)) or isinstance(ct, bool):
                    raise ContentError("instantsRollback commitTime is not an instant time",
                                       path=where, actual=type(ct).__name__)
                out.add(str(ct))
        self._rolled_back = out
        return out

    def replaced_file_groups(self, as_of: str | None = None) -> set[tuple[str, str]]:
        """(partition, file id) of file groups replaced by completed replace commits
        (partitions checked to be safe relative paths, file ids strings)."""
        out: set[tuple[str, str]] = set()
        for i in self.completed(frozenset({"replacecommit"})):
            if as_of is not None and i.requested > as_of:
                continue
            md = self.metadata(i)
            where = self.storage.join(self.directory, i.file_name)
            groups = md.get("partitionToReplaceFileIds")
            if groups is None:
                continue
            if not isinstance(groups, dict):
                raise ContentError("partitionToReplaceFileIds is not an object", path=where,
                                   actual=type(groups).__name__)
            for part in groups:
                if part != "":
                    try:
                        check_relative_partition_path(part)
                    except UsageError as exc:
                        raise ContentError(f"partitionToReplaceFileIds names an unsafe "
                                           f"partition ({exc.message})", path=where) from None
                for fid in _list_of(groups, part, where):
                    if not isinstance(fid, str):
                        raise ContentError("partitionToReplaceFileIds holds a file id that "
                                           "is not a string", path=where,
                                           actual=type(fid).__name__)
                    out.add((part, fid))
        return out


    def plan(self, instant: Instant) -> dict[str, Any]:
        """The plan of a pending service (``<instant>.<action>.requested``: an Avro
        HoodieCompactionPlan or HoodieRequestedReplaceMetadata); {} when empty."""
        name = TimelineFileName(instant.requested, instant.action, REQUESTED, None,
                                self.layout)
        path = self.storage.join(self.directory, str(name))
        if not self.storage.isfile(path):
            return {}
        data = self.storage.read(path)
        if not data.strip():
            return {}
        return decode_avro(data, path)

    def pending_services(self) -> PendingServices:
        """The file groups that pending compactions, log compactions and clusterings work
        on (from their plans: ``operations[].partitionPath/fileId`` of a (log) compaction
        plan, ``clusteringPlan.inputGroups[].slices[]`` of a clustering or replace plan)."""
        out = PendingServices()
        for i in self.pending():
            if i.action in ("compaction", "logcompaction"):
                where = self.storage.join(self.directory, i.file_name)
                target = out.compaction if i.action == "compaction" else out.log_compaction
                try:
                    keys = [_group_of(op, where)
                            for op in _list_of(self.plan(i), "operations", where)]
                except FormatError as exc:
                    if i.state != REQUESTED:
                        raise
                    # a requested plan that does not decode wrote nothing and can never run
                    # (spec/services.md §4.6): writers go on without it, repair removes it
                    out.unreadable[i.requested] = exc
                    continue
                for key in keys:
                    if key is not None:
                        target[key] = i.requested
            elif i.action in ("clustering", "replacecommit"):
                where = self.storage.join(self.directory, i.file_name)
                plan = self.plan(i).get("clusteringPlan")
                if not isinstance(plan, dict):
                    continue
                for group in _list_of(plan, "inputGroups", where):
                    if not isinstance(group, dict):
                        raise ContentError("a clustering input group is not an object",
                                           path=where)
                    for sl in _list_of(group, "slices", where):
                        key = _group_of(sl, where)
                        if key is not None:
                            out.clustering[key] = i.requested
        return out


@dataclass
class PendingServices:
    """File groups under pending table services: (partition, file id) -> service instant."""

    #: compactions only: a pending compaction starts a new file slice, which writers write
    #: into (spec/services.md §4.4)
    compaction: dict[tuple[str, str], str] = field(default_factory=dict)
    clustering: dict[tuple[str, str], str] = field(default_factory=dict)
    #: log compactions: they start no slice, writers write as usual (spec/services.md §3.2)
    log_compaction: dict[tuple[str, str], str] = field(default_factory=dict)
    #: requested (never started) compactions and log compactions whose plan does not decode:
    #: instant -> the error, which names the plan file (spec/services.md §4.6)
    unreadable: dict[str, FormatError] = field(default_factory=dict)


def _group_of(entry: Any, where: str) -> tuple[str, str] | None:
    if not isinstance(entry, dict):
        raise ContentError("a service plan entry is not an object", path=where)
    part, fid = entry.get("partitionPath"), entry.get("fileId")
    if not isinstance(fid, str) or not fid:
        return None
    if not isinstance(part, str):
        raise ContentError("a service plan entry has no partition path", path=where)
    if part:
        try:
            check_relative_partition_path(part)
        except UsageError as exc:
            raise ContentError(f"a service plan names an unsafe partition ({exc.message})",
                               path=where) from None
    return part, fid


def _list_of(md: dict[str, Any], key: str, where: str) -> list[Any]:
    """``md[key]`` when a list (absent or null: empty); a :class:`ContentError` otherwise."""
    value = md.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ContentError(f"{key or 'a partition'} in commit metadata is not a list",
                           path=where, actual=type(value).__name__)
    return value


def _parse(name: str, layout: int) -> Instant | None:
    tf = TimelineFileName.parse(name, layout)
    if tf is None:
        return None
    return Instant(tf.requested, tf.action, tf.state, tf.completed, name)


def completes_as(action: str) -> str:
    return _COMPLETES_AS.get(action, action)
