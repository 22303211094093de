"""Following a table: the records each newly completed commit wrote, as a Python loop
(:func:`follow`) or a Spark stream (``morlog.spark.stream_source``, which uses the same
:func:`completed_since` offsets and :func:`changes` seam).

:func:`changes` gives the records written by the instants completed in ``(begin, end]``
(completion times; the instant itself on layout-1 timelines, version 6) in the incremental
format: the table's columns, each record those instants wrote as it is at ``end``, no
deletes, as Hudi's incremental query gives them. Until morlog's incremental reader takes its
place it reads the snapshot as of the newest of those instants and keeps the records whose
``_hoodie_commit_time`` is one of them (services keep a record's commit time, so compaction
and clustering emit nothing): right, but a whole snapshot read per call, and it needs the
meta fields (``hoodie.populate.meta.fields``, on by default).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from morlog.logformat.errors import UsageError
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
    location = TableLocation.of(location)
    table = Table(location)
    instants = [r for r, _ in completed_since(table, begin, end)]
    if not instants:
        return table.arrow_schema().empty_table()
    if COMMIT_TIME not in table.arrow_schema().names:
        raise UsageError("a streaming read needs the table's meta fields "
                         "(hoodie.populate.meta.fields)", path=location.uri)
    latest = max(instants)
    rows = table.read(latest, columns)
    if COMMIT_TIME not in rows.column_names:
        rows = table.read(latest, [*(columns or []), COMMIT_TIME])
    keep = pc.is_in(rows.column(COMMIT_TIME), value_set=pa.array(instants, pa.string()))
    out = rows.filter(keep)
    return out.select(columns) if columns is not None else out



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
