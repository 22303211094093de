"""The CDC query (spec/cdc.md §4): :func:`read_cdc`, Hudi's CDC query columns (``op``,
``ts_ms``, ``before``, ``after``) for the commits in a range; the work is in
``morlog.readers.changes`` (see its docstring for the rules)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from .changes import CDC_SCHEMA, instants_in_range, table_changes
from .incremental import resolve_bound
from .storage import TableLocation
from .table import Table


def resolve_range(table: Table, begin: str | None, end: str | None) -> tuple[str | None,
                                                                             str | None]:
    """``begin``/``end`` in the forms ``as.of.instant`` takes (``begin`` also ``earliest``),
    as instants (None: open).
    What they are compared with is the table's version's: completion times for 8+, instant
    times for 6 (:func:`morlog.readers.changes.instants_in_range`)."""
    return resolve_bound(table, begin, "begin"), resolve_bound(table, end, "end")


def read_cdc(table: Table | TableLocation | str, begin: str | None, end: str | None,
             columns: Sequence[str] | None = None) -> pa.Table:
    """The changes of the commits in (``begin``, ``end``] as Hudi's CDC query returns them:
    columns ``op``, ``ts_ms``, ``before``, ``after`` (strings; ``columns``: a subset, in
    that order). ``begin`` exclusive, ``end`` inclusive, each in ``as.of.instant``'s forms
    or None (open); table version 8+ ranges by completion time, 6 by instant time."""
    t = table if isinstance(table, Table) else Table(table)
    lo, hi = resolve_range(t, begin, end)
    return table_changes(t, lo, hi, columns)


__all__ = ["CDC_SCHEMA", "instants_in_range", "read_cdc", "resolve_range"]
