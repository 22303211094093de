"""Structured Streaming out of a table: ``spark.readStream.format("morlog").load(path)``.

Offsets are completed instants: an offset is ``{"instant": T}``, the completion time of the
newest completed instant the stream has read (the instant itself on tables of timeline
layout 1, version 6, where instants complete in order). The first micro-batch starts before
every instant (Hudi's ``earliest``); each later one reads the instants completed after the
last offset, up to the newest completed now, so a restarted query goes on from the offset in
its checkpoint.

What a micro-batch emits comes through one seam, ``morlog.readers.follow.changes`` (the
records the instants completed in ``(begin, end]`` wrote, in the incremental format; see
that module for how it reads them until morlog's incremental reader takes its place).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from morlog.readers.follow import changes, completed_since
from morlog.readers.storage import TableLocation
from morlog.readers.table import Table


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


__all__ = ["MorlogStreamReader", "stream_reader"]
