"""PySpark reading: ``spark.read.format("morlog")`` (the read half of the data source).

Spark 4's Python Data Source API. Reading gives the merged snapshot with one Spark partition
per file slice (each task merges its slice's base file and logs and yields Arrow batches);
columns are pruned to the schema the reader is given (``.schema(...)``) or to the ``columns``
option. (Filter pushdown is not used: Spark 4 disables it for Python sources by default.)

Read options use Hudi's names (short aliases in brackets); any other option is an error naming
it: ``path``, ``as.of.instant`` [``as_of``] (an instant, or Hudi's ``yyyy-MM-dd HH:mm:ss[.SSS]``
and ``yyyy-MM-dd``), ``columns``.

:class:`MorlogReadSource` reads only; ``morlog.writers.spark.MorlogDataSource`` extends it
with the writer (``df.write.format("morlog")``) and is what ``register`` installs. The table's
path is resolved once on the driver (:class:`~morlog.readers.storage.TableLocation`) and
shipped to the read tasks.

pyspark is imported only by modules whose name contains "spark"; nothing else needs a JVM.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from morlog.logformat.errors import UsageError

from .storage import TableLocation
from .table import FileSlice, Table, query_instant

READ_OPTIONS = {"path": "path", "as.of.instant": "as_of", "as_of": "as_of",
                "columns": "columns"}


def parse_options(options: dict[str, str], known: dict[str, str],
                  what: str) -> dict[str, str]:
    """``options`` by their canonical names (``known``: option or alias -> name); an unknown
    option is a :class:`UsageError` naming it."""
    out = {}
    for k, v in options.items():
        name = known.get(k) or known.get(k.lower())
        if name is None:
            raise UsageError(f"unknown {what} option {k!r}", expected=sorted(known), actual=k)
        out[name] = v
    return out


@dataclass
class SlicePartition(InputPartition):
    partition: str
    file_id: str
    base_instant: str
    base_file: str | None
    log_files: list[str]

    def __init__(self, s: FileSlice) -> None:
        self.partition = s.partition
        self.file_id = s.file_id
        self.base_instant = s.base_instant
        self.base_file = s.base_file
        self.log_files = list(s.log_files)
        super().__init__(f"{s.partition}/{s.file_id}")


class MorlogReader(DataSourceReader):
    """Reads a table's snapshot, one Spark partition per file slice."""

    def __init__(self, path: str | TableLocation, schema: StructType, as_of: str | None,
                 columns: list[str] | None) -> None:
        self.location = TableLocation.of(path)
        self.schema = schema
        # Hudi's time formats resolved once, here: planning and the read tasks see one instant
        self.as_of = None if as_of is None else query_instant(as_of)
        self.columns = columns or list(schema.fieldNames())

    @property
    def path(self) -> str:
        return self.location.uri

    def partitions(self) -> Sequence[InputPartition]:
        table = Table(self.location)
        slices = table.file_slices(table.resolve_instant(self.as_of))
        return [SlicePartition(s) for s in slices] or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        target = to_arrow_schema(self.schema, timezone="UTC")
        if not isinstance(partition, SlicePartition):
            return iter(())
        table = Table(self.location)
        s = FileSlice(partition.partition, partition.file_id, partition.base_instant,
                      partition.base_file, partition.log_files)
        data = table.read_slice(s, self.as_of, list(self.columns))
        if data.num_rows == 0:
            return iter(())
        cols = [data.column(f.name).cast(f.type) if f.name in data.column_names
                else pa.nulls(data.num_rows, f.type) for f in target]
        return iter(pa.Table.from_arrays(cols, schema=target).to_batches())


class MorlogReadSource(DataSource):
    """``format("morlog")`` for reading: Hudi merge-on-read tables with indexable logs."""

    @classmethod
    def name(cls) -> str:
        return "morlog"

    def path(self) -> str:
        """The ``path`` option (``.load(path)`` or ``.save(path)``)."""
        path = self.options.get("path")
        if not path:
            raise UsageError("a morlog table needs a path: .load(path) or .save(path)")
        return str(path)

    def location(self) -> TableLocation:
        """The table's location, resolved once per source object."""
        loc: TableLocation | None = getattr(self, "_location", None)
        if loc is None:
            loc = TableLocation.of(self.path())
            self._location = loc
        return loc

    def schema(self) -> StructType:
        parse_options(dict(self.options), READ_OPTIONS, "read")
        table = Table(self.location())
        return from_arrow_schema(table.arrow_schema())

    def reader(self, schema: StructType) -> MorlogReader:
        opts = parse_options(dict(self.options), READ_OPTIONS, "read")
        columns = [c for c in opts.get("columns", "").split(",") if c] or None
        return MorlogReader(self.location(), schema, opts.get("as_of"), columns)


def register_reader(spark: Any) -> None:
    """Make ``spark.read.format("morlog")`` available (reading only; the writing source is
    ``morlog.writers.spark.register``)."""
    spark.dataSource.register(MorlogReadSource)


__all__ = ["READ_OPTIONS", "MorlogReadSource", "MorlogReader", "SlicePartition",
           "parse_options", "register_reader"]
