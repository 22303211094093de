"""PySpark integration: ``spark.read.format("morlog")`` and ``df.write.format("morlog")``.

Spark 4's Python Data Source API. Reading gives the merged snapshot with one Spark partition
per file slice (each task merges its slice's base file and logs and yields Arrow batches);
columns are pruned to the schema the reader is given (``.schema(...)``) or to the ``columns``
option. (Filter pushdown is not used: Spark 4 disables it for Python sources by default.)

Writing stages each task attempt's rows as an Arrow file under ``.hoodie/.temp/``; the driver
then commits the batch once through the write client (tagging, insert routing, indexed blocks,
the commit protocol). A retried task stages under a new attempt id and only the attempts Spark
reports as successful are committed, so retries never duplicate records.

Options use Hudi's names (short aliases in brackets); any other option is an error naming it:

- read: ``path``, ``as.of.instant`` [``as_of``], ``columns``
- write: ``path``, ``hoodie.table.name`` [``table``], ``hoodie.datasource.write.recordkey.field``
  [``key``], ``hoodie.datasource.write.precombine.field`` [``ordering``],
  ``hoodie.datasource.write.partitionpath.field`` [``partition``],
  ``hoodie.datasource.write.operation`` [``operation``: upsert, insert, delete], and morlog's
  ``morlog.carrier`` (avro, parquet), ``morlog.new.groups`` (base, log),
  ``morlog.max.file.size``, ``morlog.small.file.limit``, ``morlog.route.inserts`` (true).

pyspark is imported here only; nothing else in morlog needs a JVM.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from logformat.errors import UsageError
from readers.table import FileSlice, Table

from .client import MorTable, WriteConfig

READ_OPTIONS = {"path": "path", "as.of.instant": "as_of", "as_of": "as_of",
                "columns": "columns"}
WRITE_OPTIONS = {
    "path": "path",
    "hoodie.table.name": "table", "table": "table",
    "hoodie.datasource.write.recordkey.field": "key", "key": "key",
    "hoodie.datasource.write.precombine.field": "ordering", "ordering": "ordering",
    "hoodie.datasource.write.partitionpath.field": "partition", "partition": "partition",
    "hoodie.datasource.write.operation": "operation", "operation": "operation",
    "morlog.carrier": "carrier", "morlog.new.groups": "new_groups",
    "morlog.max.file.size": "max_file_size", "morlog.small.file.limit": "small_file_limit",
    "morlog.route.inserts": "route_inserts",
}


def _options(options: dict[str, str], known: dict[str, str], what: str) -> dict[str, str]:
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
    def __init__(self, path: str, schema: StructType, as_of: str | None,
                 columns: list[str] | None) -> None:
        self.path = path
        self.schema = schema
        self.as_of = as_of
        self.columns = columns or list(schema.fieldNames())

    def partitions(self) -> Sequence[InputPartition]:
        table = Table(self.path)
        slices = table.file_slices(table.resolve_instant(self.as_of))
        return [SlicePartition(s) for s in slices] or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        target = to_arrow_schema(self.schema, timezone="UTC")
        if not isinstance(partition, SlicePartition):
            return iter(())
        table = Table(self.path)
        s = FileSlice(partition.partition, partition.file_id, partition.base_instant,
                      partition.base_file, partition.log_files)
        data = table.read_slice(s, self.as_of, list(self.columns))
        if data.num_rows == 0:
            return iter(())
        cols = [data.column(f.name).cast(f.type) if f.name in data.column_names
                else pa.nulls(data.num_rows, f.type) for f in target]
        return iter(pa.Table.from_arrays(cols, schema=target).to_batches())


@dataclass
class StagedFile(WriterCommitMessage):
    path: str
    rows: int


class MorlogWriter(DataSourceArrowWriter):
    def __init__(self, path: str, options: dict[str, str], schema: StructType,
                 overwrite: bool) -> None:
        if overwrite:
            raise UsageError("mode('overwrite') is not supported; use append (upserts)",
                             path=path)
        self.path = path
        self.options = options
        self.schema = schema
        self.run = uuid.uuid4().hex
        self.stage = os.path.join(path, ".hoodie", ".temp", f"spark-{self.run}")

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedFile:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        attempt = (f"{ctx.partitionId()}-{ctx.attemptNumber()}-{ctx.taskAttemptId()}"
                   if ctx is not None else uuid.uuid4().hex)
        os.makedirs(self.stage, exist_ok=True)
        final = os.path.join(self.stage, f"part-{attempt}.arrow")
        tmp = final + ".tmp"
        rows = 0
        schema = to_arrow_schema(self.schema, timezone="UTC")
        with pa.OSFile(tmp, "wb") as sink, ipc.new_file(sink, schema) as w:
            for batch in iterator:
                w.write_batch(batch)
                rows += batch.num_rows
        os.replace(tmp, final)
        return StagedFile(final, rows)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        try:
            parts = []
            for m in messages:
                if not isinstance(m, StagedFile) or not m.rows:
                    continue
                with pa.memory_map(m.path) as src:
                    parts.append(ipc.open_file(src).read_all())
            if parts:
                batch = pa.concat_tables(parts)
                _commit(self.path, self.options, batch)
        finally:
            shutil.rmtree(self.stage, ignore_errors=True)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        shutil.rmtree(self.stage, ignore_errors=True)


def _commit(path: str, options: dict[str, str], batch: pa.Table) -> None:
    cfg = WriteConfig()
    if "carrier" in options:
        cfg.carrier = options["carrier"]  # type: ignore[assignment]
    if "new_groups" in options:
        cfg.new_groups = options["new_groups"]  # type: ignore[assignment]
    if "max_file_size" in options:
        cfg.max_file_size = int(options["max_file_size"])
    if "small_file_limit" in options:
        cfg.small_file_limit = int(options["small_file_limit"])
    if "route_inserts" in options:
        cfg.route_inserts = options["route_inserts"].lower() in ("true", "1", "yes")
    if os.path.exists(os.path.join(path, ".hoodie", "hoodie.properties")):
        table = MorTable(path, cfg)
    else:
        key = options.get("key")
        if not key:
            raise UsageError("creating a table needs hoodie.datasource.write.recordkey.field",
                             path=path)
        table = MorTable.create(path, batch.schema, key_field=key,
                                partition_field=options.get("partition"),
                                ordering_field=options.get("ordering"),
                                name=options.get("table"), config=cfg)
    operation = options.get("operation", "upsert").lower()
    if operation == "upsert":
        table.upsert(batch)
    elif operation == "insert":
        table.insert(batch)
    elif operation == "delete":
        table.delete(batch)
    else:
        raise UsageError("unknown write operation", expected=["upsert", "insert", "delete"],
                         actual=operation)


class MorlogDataSource(DataSource):
    """``format("morlog")``: Hudi merge-on-read tables with indexable logs."""

    @classmethod
    def name(cls) -> str:
        return "morlog"

    def _path(self) -> str:
        path = self.options.get("path")
        if not path:
            raise UsageError("a morlog table needs a path: .load(path) or .save(path)")
        return str(path)

    def schema(self) -> StructType:
        _options(dict(self.options), READ_OPTIONS, "read")
        table = Table(self._path())
        return from_arrow_schema(table.arrow_schema())

    def reader(self, schema: StructType) -> MorlogReader:
        opts = _options(dict(self.options), READ_OPTIONS, "read")
        columns = [c for c in opts.get("columns", "").split(",") if c] or None
        return MorlogReader(self._path(), schema, opts.get("as_of"), columns)

    def writer(self, schema: StructType, overwrite: bool) -> MorlogWriter:
        opts = _options(dict(self.options), WRITE_OPTIONS, "write")
        return MorlogWriter(self._path(), opts, schema, overwrite)


def register(spark: Any) -> None:
    """Make ``format("morlog")`` available in a Spark session."""
    spark.dataSource.register(MorlogDataSource)
