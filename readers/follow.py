"""Following a table: the records each newly completed commit wrote, as a Python loop
(:func:`follow`) or a Spark stream (``morlog.spark.stream_source``, which uses the same
:func:`completed_since` offsets and :func:`changes` seam).

:func:`changes` gives the records written by the instants completed in ``(begin, end]``
(completion times; the instant itself on layout-1 timelines, version 6) in the incremental
format: the table's columns, each record those instants wrote as it is at ``end``, no
deletes, as Hudi's incremental query gives them (``morlog.readers.incremental``: only the
file groups those instants wrote are read; services keep a record's commit time, so
compaction and clustering emit nothing).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from morlog.readers.storage import TableLocation
from morlog.readers.table import Table
from morlog.readers.timeline import WRITE_ACTIONS

COMMIT_TIME = "_hoodie_commit_time"


def completed_since(table: Table, begin: str | None, end: str | None = None
                    ) -> list[tuple[str, str]]:
    """(requested time, completion time) of every completed write instant whose completion
    time is after ``begin`` and at most ``end`` (None: no bound), oldest first."""
    tl = table.timeline
    out = []
    for i in tl.completed(WRITE_ACTIONS):
        done = i.completed or i.requested
        if (begin is None or done > begin) and (end is None or done <= end):
            out.append((i.requested, done))
    return sorted(out, key=lambda x: x[1])


def changes(location: str | TableLocation, begin: str | None, end: str,
            columns: list[str] | None = None) -> pa.Table:
    """The seam: the records the instants completed in ``(begin, end]`` wrote (module
    docstring)."""
    from morlog.readers.incremental import read_incremental

    table = Table(TableLocation.of(location))
    if not completed_since(table, begin, end):
        return (table.arrow_schema().empty_table() if columns is None
                else table.empty(columns))
    return read_incremental(table, begin if begin is not None else "earliest", end, columns)


@dataclass(frozen=True)
class CommitChanges:
    """What one completed instant wrote (:func:`follow`)."""

    #: the instant (requested time) and its completion time (the offset to go on from)
    instant: str
    completed: str
    rows: pa.Table


def follow(table: str | TableLocation, since: str | None = None, *,
           columns: list[str] | None = None, wait: bool = True,
           poll_seconds: float = 1.0) -> Iterator[CommitChanges]:
    """The records of every write instant completed after ``since`` (a completion time, as
    :attr:`CommitChanges.completed` gives it; None: from the first), one instant at a time,
    oldest first. With ``wait`` the loop polls for new instants every ``poll_seconds`` and
    never ends (break out of it); without, it ends when it has caught up. Instants that
    wrote no record (services, deletes only) are passed over. A consumer that
    keeps the last ``completed`` it handled goes on from there with ``since``."""
    location = TableLocation.of(table)
    offset = since
    while True:
        done = completed_since(Table(location), offset)
        for requested, completed in done:
            rows = changes(location, offset, completed, columns)
            offset = completed
            if rows.num_rows:
                yield CommitChanges(requested, completed, rows)
        if not wait:
            return
        if not done:
            time.sleep(poll_seconds)


__all__ = ["CommitChanges", "changes", "completed_since", "follow"]
