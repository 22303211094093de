"""What the table services share (``morlog.writers.services.compaction``, ``.logcompaction``,
``.cleaning``): their settings' parsing, the writer lock they hold, and the run of a planned
service (:class:`PlanRun`: the skeleton of a compaction's and a log compaction's execution;
spec/services.md)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from morlog.logformat.errors import MorlogError, UsageError, WriteError
from morlog.logformat.naming import INFLIGHT
from morlog.readers.parallel import run_all
from morlog.readers.table import Table
from morlog.writers.core.commit import CommitHooks, RecordChanges, rollback_pending
from morlog.writers.core.timeline import TimelineWriter, timeline_utc
from morlog.writers.core.undo import PlanOperation

if TYPE_CHECKING:
    from morlog.writers.client import MorTable

T = TypeVar("T")
R = TypeVar("R")


class Timed(Protocol):
    """A service's result: how long the run took."""

    seconds: float


TR = TypeVar("TR", bound=Timed)


def option_flag(options: Mapping[str, str], key: str, default: bool = False) -> bool:
    """A true/false setting of a service (``UsageError`` naming it otherwise)."""
    raw = str(options.get(key, "true" if default else "false")).strip().lower()
    if raw not in ("true", "false"):
        raise UsageError(f"{key} is true or false", actual=raw)
    return raw == "true"


def option_int(options: Mapping[str, str], key: str, default: int, *,
               minimum: int = 0) -> int:
    """A whole-number setting of a service, at least ``minimum`` (``UsageError`` naming it
    otherwise); ``default`` when absent or empty."""
    raw = options.get(key)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        v = int(str(raw).strip())
    except ValueError:
        raise UsageError(f"{key} is a whole number", actual=raw) from None
    if v < minimum:
        raise UsageError(f"{key} is at least {minimum}", actual=raw)
    return v


class ServiceLock:
    """The table's writer lock held by a table service, with what dead writers left rolled
    back on entering (their delta commits, and morlog's dead log compactions:
    ``rollback_pending``), as a write does; yields the table as it is then."""

    def __init__(self, mt: MorTable) -> None:
        self.mt = mt
        self.lock: Any = None

    def __enter__(self) -> Table:
        mt = self.mt
        self.lock = mt.writer_lock()
        try:
            rollback_pending(mt.store, mt.location, mode=mt.mode, fsync=mt.config.fsync,
                             hooks=mt.commit_hooks())
            return mt.table()
        except BaseException:
            self.lock.release()
            raise

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def service_lock(mt: MorTable) -> ServiceLock:
    """``with service_lock(mt) as table:`` (see :class:`ServiceLock`)."""
    return ServiceLock(mt)


__all__ = ["PlanRun", "R", "ServiceLock", "T", "TR", "Timed", "option_flag", "option_int",
           "run_with_progress", "service_lock"]


def run_with_progress(fn: Callable[[T], R], items: Sequence[T], threads: int,
                      progress: Callable[[int, int], None] | None) -> list[R]:
    """``fn`` over ``items`` on ``threads`` threads (results in order), ``progress(done,
    total)`` after each."""
    done = [0]

    def one(item: T) -> R:
        out = fn(item)
        done[0] += 1
        if progress is not None:
            progress(done[0], len(items))
        return out

    return run_all(one, list(items), threads)


class PlanRun(Generic[TR]):
    """The run of one planned table service (a compaction or a log compaction): the skeleton
    they share, each step a method a service fills in (spec/services.md §4).

    Under the writer lock: the plan is checked pending and runnable, read, what a dead attempt
    left is undone, the instant goes inflight; the operations run (here, or through a
    ``runner``: Spark); the metadata table and indexes are told (a rewrite: no key changes);
    the instant completes. Any failure undoes the attempt and leaves the plan requested; a
    failed undo leaves it inflight for the next run (``again`` says which)."""

    #: the timeline action of the plan, and what the completed instant is written as
    action: str = ""
    completed_action: str = ""
    #: the service's name in messages, and what cleans up a failed attempt
    label: str = ""
    again: str = ""

    def __init__(self, mt: MorTable, instant: str) -> None:
        self.mt = mt
        self.instant = instant

    # --- the steps a service fills in ---------------------------------------------------

    def read_plan(self, table: Table) -> dict[str, Any]:  # pragma: no cover - interface
        raise NotImplementedError

    def refusal(self, table: Table) -> str | None:
        """Why the plan may not run now (None: it may)."""
        return None

    def undo(self, table: Table, writer: TimelineWriter, hooks: CommitHooks | None,
             ops: Sequence[PlanOperation]) -> None:  # pragma: no cover - interface
        """Remove what an attempt wrote; the instant back to requested."""
        raise NotImplementedError

    def execute(self, table: Table, plan: Mapping[str, Any], ops: Sequence[PlanOperation],
                progress: Callable[[int, int], None] | None, runner: Any
                ) -> tuple[TR, dict[str, list[dict[str, Any]]]]:  # pragma: no cover
        """Run the operations: (the result so far, write stats per partition)."""
        raise NotImplementedError

    def completed_metadata(self, stats: Mapping[str, list[dict[str, Any]]], schema: str
                           ) -> dict[str, Any]:  # pragma: no cover - interface
        raise NotImplementedError

    # --- the skeleton -------------------------------------------------------------------

    def run(self, progress: Callable[[int, int], None] | None = None,
            runner: Any = None) -> TR:
        mt, instant = self.mt, self.instant
        t0 = time.perf_counter()
        with service_lock(mt) as table:
            inst = table.timeline.get(instant)
            if inst is None or inst.action != self.action or inst.is_completed:
                raise UsageError(f"no pending {self.label} at this instant", actual=instant,
                                 path=mt.uri)
            why = self.refusal(table)
            if why is not None:
                raise UsageError(why, path=mt.uri)
            plan = self.read_plan(table)
            writer = TimelineWriter(mt.store, mt.location, layout=table.timeline.layout,
                                    fsync=mt.config.fsync,
                                    utc=timeline_utc(table.config.props))
            hooks = mt.commit_hooks()
            ops = [PlanOperation.of(op, table) for op in plan["operations"]]
            if inst.state == INFLIGHT:  # a dead attempt's leftovers
                self.undo(table, writer, hooks, ops)
            writer.write(instant, "inflight", None, self.action)
            try:
                result, stats = self.execute(table, plan, ops, progress, runner)
                schema = json.dumps(mt.commit_schema(), separators=(",", ":"))
                if hooks is not None:
                    written = {p: {s["path"].rsplit("/", 1)[-1]: int(s["fileSizeInBytes"])
                                   for s in ss} for p, ss in stats.items()}
                    hooks.committing(instant, written, lambda: RecordChanges(), rewrite=True,
                                     schema=schema)
                writer.write(instant, "completed", self.completed_metadata(stats, schema),
                             self.completed_action)
            except Exception as exc:
                try:
                    self.undo(table, writer, hooks, ops)
                except Exception as undo_exc:
                    raise WriteError(f"{self.label} {instant} failed ({exc}) and so did "
                                     f"undoing its attempt ({undo_exc}): it stays inflight; "
                                     f"{self.again}", path=mt.uri) from exc
                if isinstance(exc, MorlogError):
                    raise
                raise WriteError(f"{self.label} {instant} failed and was undone (its plan "
                                 f"stays requested): {type(exc).__name__}: {exc}",
                                 path=mt.uri) from exc
        result.seconds = time.perf_counter() - t0
        return result
