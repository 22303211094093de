"""Structured Streaming out of a table: ``spark.readStream.format("morlog").load(path)``.

Offsets are completed instants: an offset is ``{"instant": T}``, the completion time of the
newest completed instant the stream has read (the instant itself on tables of timeline
layout 1, version 6, where instants complete in order). The first micro-batch starts before
every instant (Hudi's ``earliest``); each later one reads the instants completed after the
last offset, up to the newest completed now, so a restarted query goes on from the offset in
its checkpoint.

What a micro-batch emits comes through one seam, :func:`changes`: the records written by the
instants completed in ``(begin, end]``, in the incremental format (the table's columns; the
latest value of each record those instants wrote, no deletes), as Hudi's incremental query
gives them. Until morlog's incremental reader takes its place, :func:`changes` reads the
snapshot as of ``end`` and keeps the records whose ``_hoodie_commit_time`` is one of those
instants (services keep a record's commit time, so compaction and clustering emit nothing):
right, but it reads the whole snapshot for each micro-batch, and needs the meta fields
(``hoodie.populate.meta.fields``, on by default).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

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


def changes(location: TableLocation, begin: str | None, end: str,
            columns: list[str] | None = None) -> pa.Table:
    """The seam: the records the instants completed in ``(begin, end]`` wrote (module
    docstring)."""
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


class _Range(InputPartition):
    def __init__(self, begin: str | None, end: str) -> None:
        super().__init__((begin, end))
        self.begin = begin
        self.end = end


class MorlogStreamReader(DataSourceStreamReader):
    """``readStream.format("morlog")``: offsets are completed instants (module docstring)."""

    def __init__(self, location: TableLocation, schema: StructType) -> None:
        self.location = location
        self.schema = schema

    def initialOffset(self) -> dict[str, Any]:  # noqa: N802
        return {"instant": None}

    def latestOffset(self, start: dict[str, Any] | None = None,  # noqa: N802
                     limit: Any = None) -> dict[str, Any]:
        """The newest completed instant (every instant a micro-batch: no read limit)."""
        done = completed_since(Table(self.location), None)
        return {"instant": done[-1][1] if done else None}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]
                   ) -> Sequence[InputPartition]:
        if end.get("instant") is None or start.get("instant") == end.get("instant"):
            return []
        return [_Range(start.get("instant"), str(end["instant"]))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _Range)
        target = to_arrow_schema(self.schema, timezone="UTC")
        rows = changes(self.location, partition.begin, partition.end, list(target.names))
        cols = [rows.column(f.name).cast(f.type) for f in target]
        return iter(pa.Table.from_arrays(cols, schema=target).to_batches())

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: the offsets are the table's own instants."""


def stream_reader(source: Any, schema: StructType) -> MorlogStreamReader:
    """The data source's ``streamReader`` (``morlog.spark.source.MorlogReadSource``)."""
    return MorlogStreamReader(source.location(), schema)


__all__ = ["MorlogStreamReader", "changes", "completed_since", "stream_reader"]
