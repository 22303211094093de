"""What the table services share (``morlog.writers.services.compaction``, ``.logcompaction``,
``.cleaning``): the writer lock they hold, and the operations of a compaction or log
compaction plan read back from the timeline (spec/services.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from morlog.logformat.errors import UsageError
from morlog.readers.table import Table
from morlog.writers.core.commit import rollback_pending

if TYPE_CHECKING:
    from morlog.writers.client import MorTable


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


__all__ = ["ServiceLock", "option_flag", "option_int", "service_lock"]
