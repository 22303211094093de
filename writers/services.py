"""What the table services share (``morlog.writers.compaction``, ``.logcompaction``,
``.cleaning``): the writer lock they hold, and the operations of a compaction or log
compaction plan read back from the timeline (spec/services.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from morlog.logformat.errors import UsageError
from morlog.readers.containment import check_file_name
from morlog.readers.table import Table

from .client import MorTable
from .commit import rollback_pending
from .metadata import metadata_hooks


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
                             hooks=metadata_hooks(mt.store, mt.location, mt.metadata_plan,
                                                  fsync=mt.config.fsync))
            return mt.table()
        except BaseException:
            self.lock.release()
            raise

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def service_lock(mt: MorTable) -> ServiceLock:
    """``with service_lock(mt) as table:`` (see :class:`ServiceLock`)."""
    return ServiceLock(mt)


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


__all__ = ["PlanOperation", "ServiceLock", "option_flag", "option_int", "service_lock"]
