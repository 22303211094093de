"""PySpark integration: ``df.write.format("morlog")``, the distributed :func:`upsert`.

Spark 4's Python Data Source API. :class:`MorlogDataSource` is the read source of
``morlog.spark.source`` (``spark.read.format("morlog")``: one Spark partition per file
slice) with the writer added. Spark finds it without any call: at its first use of a Python
data source, Spark imports every installed top-level module named ``pyspark_*`` and registers
its ``DefaultSource`` (``pyspark/sql/worker/lookup_data_sources.py``); morlog installs
``pyspark_morlog`` for that (``make setup``'s editable install too). :func:`register`
installs it explicitly (needed where morlog is importable but not installed, e.g. on
``PYTHONPATH``).

Save modes, as Hudi's data source has them (``HoodieSparkSqlWriter``):

- ``append``: the write operation (``hoodie.datasource.write.operation``, upsert by
  default), creating the table first if there is none;
- ``overwrite``: creates the table, or replaces all its data with the batch in one
  ``insert_overwrite_table`` replace commit (Hudi deletes and recreates the table; morlog
  keeps its history, so time travel still sees the old data). Delete operations refuse it
  (Hudi: "Append is the only save mode applicable");
- ``errorifexists`` (Spark's default) and ``ignore``: Spark 4 refuses them for every
  Python data source before the source is called (``AnalysisException``
  ``[UNSUPPORTED_DATA_SOURCE_SAVE_MODE]``); the data source's ``writer(schema, overwrite)``
  only learns append (False) or overwrite (True). :func:`save` gives the four modes with
  Hudi's meaning (``errorifexists``: an error when the table exists, ``ignore``: nothing).

Upserts, inserts and deletes are written by the Spark tasks themselves
(``morlog.writers.distributed``, spec/table.md §7.6): ``writer()`` plans on the driver (the
instant, the snapshot the conflict check compares with; the table is created first when
there is none), each task keys, tags, combines and writes its own rows into log files of
its own (Hudi's write token ``partition-stage-attempt``) and new file groups of its own,
marking every file, and the commit (on the driver, without Spark) receives only write stats
and file names: it checks conflicts, reconciles the markers (failed and speculative attempts
leave nothing), removes keys two tasks both inserted, updates the indexes and completes the
instant. The driver holds O(files + tasks), never rows (spec §7.6 says where a duplicate
key's file is read back). A Python data source cannot ask Spark to cluster its input: new
keys are routed into small file groups by their hash, each task claiming room there with
exclusive slot files (spec §7.6), the rest into new file groups of each task; a file group
updated by several tasks gets a log file from each (``df.repartition(key)`` gives one). The replace
operations (``insert_overwrite``, ``insert_overwrite_table``, ``delete_partition``,
``mode("overwrite")``) still stage each task attempt's rows as an Arrow file under
``.hoodie/.temp/`` and the driver commits the batch once through the write client (spec
§11); only the attempts Spark reports as successful are committed.

Options use Hudi's names; any other option is an error naming it:

- read: ``path``, ``as.of.instant`` [``as_of``] (Hudi's formats: ``yyyyMMddHHmmssSSS``,
  ``yyyy-MM-dd HH:mm:ss[.SSS]``, ``yyyy-MM-dd``), ``columns``
- write: ``path`` and Hudi's write options as ``morlog.writers.options`` maps them (one
  mapping for every writer), with the short aliases ``table``, ``key``, ``partition``,
  ``ordering``, ``operation``. Operations: upsert, insert, bulk_insert (as insert), delete,
  insert_overwrite, insert_overwrite_table, delete_partition (the partitions of
  ``hoodie.datasource.write.partitions.to.delete``, or else the batch's).

Hudi's meta columns (``_hoodie_commit_time``...) in a written DataFrame are dropped, as Hudi
drops them: a DataFrame read from a table writes back as it is.

The table's path is resolved once on the driver (``morlog.readers.storage.TableLocation``)
and shipped to the tasks, which never parse it again.

pyspark is imported only under ``spark/`` and by the Spark commands; nothing else needs a JVM.
"""

from __future__ import annotations

import os
import pickle
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

import morlog.config as conf
from morlog.logformat.blocks import META_FIELDS
from morlog.logformat.errors import MorlogError, UsageError, WriteError
from morlog.logformat.keybatch import KeyBatch
from morlog.logformat.keygen import KeyGenSpec
from morlog.logformat.xxh64 import xxh64_batch
from morlog.readers.base_files import table_base_format
from morlog.readers.properties import has_properties
from morlog.readers.storage import TableLocation
from morlog.readers.table import Table
from morlog.spark.source import (
    READ_OPTIONS,
    MorlogReader,
    MorlogReadSource,
    SlicePartition,
)
from morlog.writers.client import MorTable
from morlog.writers.core.commit import RecordChanges
from morlog.writers.core.store import WriteStore, store_at
from morlog.writers.core.tagging import global_index, update_partition_path
from morlog.writers.core.timeline import base_file_name
from morlog.writers.distributed import (
    TaskReport,
    WritePlan,
    abort_write,
    commit_write,
    new_token,
    plan_write,
    write_task,
)
from morlog.writers.mdt.plan import apply_drops
from morlog.writers.options import WriteConfig, WriteOptions, parse_write_options
from morlog.writers.services.overwrite import partitions_of

#: save modes (Spark's names, any case) -> Hudi's meaning; see the module's docstring
SAVE_MODES = ("append", "overwrite", "errorifexists", "error", "default", "ignore")


@dataclass
class StagedFile(WriterCommitMessage):
    path: str
    rows: int


@dataclass
class TaskWritten(WriterCommitMessage):
    """A distributed write task's message: what it wrote (write stats, file names), no rows
    (``morlog.writers.distributed.TaskReport``)."""

    report: TaskReport


class MorlogWriter(DataSourceArrowWriter):
    def __init__(self, path: str | TableLocation, options: WriteOptions, schema: StructType,
                 overwrite: bool) -> None:
        self.location = TableLocation.of(path)
        if overwrite and options.operation in ("delete", "delete_partition"):
            raise UsageError("Append is the only save mode for a delete: mode('append')",
                             path=self.location.uri, actual=options.operation_name)
        self.options = options
        self.overwrite = overwrite
        self.schema = schema
        self.run = uuid.uuid4().hex
        self.stage = self.location.join(".hoodie", ".temp", f"spark-{self.run}")
        #: upsert, insert and delete are written by the tasks themselves (the plan of the
        #: distributed write); the replace operations stage their rows for the driver
        self.plan: WritePlan | None = None
        if not overwrite and options.operation in DISTRIBUTED:
            self.plan = _plan(self.location, options, schema)

    @property
    def path(self) -> str:
        return self.location.uri

    def _store(self) -> WriteStore:
        return store_at(self.location, single_writer=True)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        schema = to_arrow_schema(self.schema, timezone="UTC")
        batches = _conformed(iterator, schema)
        if self.plan is not None:
            # Hudi's write token: partition id, stage id, attempt number (distinct per attempt)
            token = (f"{ctx.partitionId()}-{ctx.stageId()}-{ctx.attemptNumber()}"
                     if ctx is not None else new_token())
            return TaskWritten(write_task(self.plan, batches, token))
        attempt = (f"{ctx.partitionId()}-{ctx.attemptNumber()}-{ctx.taskAttemptId()}"
                   if ctx is not None else uuid.uuid4().hex)
        store = self._store()
        final = store.join(self.stage, f"part-{attempt}.arrow")
        rows = 0
        sink = pa.BufferOutputStream()
        with ipc.new_file(sink, schema) as w:
            for batch in batches:
                w.write_batch(batch)
                rows += batch.num_rows
        # a task attempt has a name of its own; published whole
        if not store.create(final, sink.getvalue().to_pybytes(), sync=False):
            raise UsageError("staged file exists already", path=final)
        return StagedFile(final, rows)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.plan is not None:
            reports = [m.report for m in messages if isinstance(m, TaskWritten)]
            if not any(r.stats for r in reports):
                abort_write(self.plan)  # nothing written: no commit (as before)
                return
            commit_write(self.plan, reports)
            return
        store = self._store()
        try:
            parts = []
            for m in messages:
                if not isinstance(m, StagedFile) or not m.rows:
                    continue
                parts.append(ipc.open_file(pa.py_buffer(store.read(m.path))).read_all())
            if parts:
                batch = pa.concat_tables(parts)
            elif self.overwrite or self.options.partitions_to_delete is not None:
                # an empty DataFrame still empties the table, or drops the named partitions
                batch = to_arrow_schema(self.schema, timezone="UTC").empty_table()
            else:
                return  # nothing to write: no commit (as before)
            _commit(self.location, self.options, batch, self.overwrite)
        finally:
            self._clean(store)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.plan is not None:
            abort_write(self.plan)
            return
        self._clean(self._store())

    def _clean(self, store: WriteStore) -> None:
        """Remove the stage (every task attempt's file, failed attempts' too) and its
        folder (on S3 too: ``morlog repair`` reports a staging folder left as a write that
        never committed)."""
        store.remove_tree(self.stage)


#: the operations the data source's tasks write themselves (``morlog.writers.distributed``)
DISTRIBUTED = ("upsert", "insert", "delete")


def _conformed(iterator: Iterator[pa.RecordBatch], schema: pa.Schema
               ) -> Iterator[pa.RecordBatch]:
    for batch in iterator:
        if not batch.schema.equals(schema):
            # Spark's Arrow batches may differ in field nullability or timestamp zone from
            # the declared schema: the values are the same
            batch = pa.RecordBatch.from_arrays(
                [c if c.type == f.type else c.cast(f.type)
                 for c, f in zip(batch.columns, schema, strict=True)], schema=schema)
        yield batch


def _plan(location: TableLocation, options: WriteOptions, schema: StructType) -> WritePlan:
    """The plan of a distributed write (on the driver, before any task runs): the table is
    created first if there is none (as Hudi's data source initialises it), the options
    checked against it, the tasks' chunk size taken from the table's record size."""
    if table_exists(location):
        table = MorTable(location, options.config)
        options.check_table(table)
    else:
        if options.operation == "delete":
            raise UsageError(f"nothing to {options.operation_name}: no table here",
                             path=location.uri)
        arrow = to_arrow_schema(schema, timezone="UTC")
        arrow = pa.schema([f for f in arrow if f.name not in META_FIELDS])
        table = MorTable.create_from_options(location, arrow, options)
    table.validate(to_arrow_schema(schema, timezone="UTC").empty_table().drop_columns(
        [n for n in schema.fieldNames() if n in META_FIELDS]), options.operation)
    rows = chunk_rows(options.config, table.record_size())
    return plan_write(location, options.config, options.operation, rows)


def table_exists(location: str | TableLocation) -> bool:
    """Whether a table (its ``hoodie.properties``) exists at ``location``."""
    loc = TableLocation.of(location)
    return has_properties(store_at(loc, single_writer=True).storage, loc.path)


def _commit(location: TableLocation, options: WriteOptions, batch: pa.Table,
            overwrite: bool = False) -> None:
    """Commit one written DataFrame's rows (on the driver): create the table if there is
    none, then run the operation (``overwrite``: replace the table's data)."""
    batch = batch.drop_columns([c for c in batch.column_names if c in META_FIELDS])
    operation = options.operation
    if table_exists(location):
        table = MorTable(location, options.config)
        options.check_table(table)
        if overwrite:
            operation = "insert_overwrite_table"
    else:
        if operation in ("delete", "delete_partition"):
            raise UsageError(f"nothing to {options.operation_name}: no table here",
                             path=location.uri)
        table = MorTable.create_from_options(location, batch.schema, options)
    if operation == "delete_partition":
        names = options.partitions_to_delete
        if names is None:
            if not table.partition_field or table.partition_field not in batch.column_names:
                raise UsageError("delete_partition needs hoodie.datasource.write.partitions."
                                 "to.delete, or a partition column in the DataFrame",
                                 path=location.uri)
            names = partitions_of(table, batch)
        table.delete_partitions(names)
    elif operation == "insert_overwrite":
        table.insert_overwrite(batch)
    elif operation == "insert_overwrite_table":
        table.insert_overwrite_table(batch)
    elif operation == "insert":
        table.insert(batch)
    elif operation == "delete":
        table.delete(batch)
    else:
        table.upsert(batch)


class MorlogDataSource(MorlogReadSource):
    """``format("morlog")``: Hudi merge-on-read tables with indexable logs, read and written."""

    def writer(self, schema: StructType, overwrite: bool) -> MorlogWriter:
        opts = parse_write_options(dict(self.options), spark_aliases=True)
        return MorlogWriter(self.location(), opts, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:  # noqa: N802
        from morlog.spark.stream import stream_writer  # the streaming sink

        return stream_writer(self, schema, overwrite, MorlogWriter)


class MorlogPushdownDataSource(MorlogDataSource):
    """:class:`MorlogDataSource` that pushes filters down unless the read says
    ``filter.pushdown=false`` (what ``register(spark, pushdown=True)`` installs; see
    ``morlog.spark.source`` for why it is not the default)."""

    PUSHDOWN = True


#: the Spark SQL setting that lets Python data sources take filters (Spark 4.1+, off by default)
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: Any, *, pushdown: bool = False) -> None:
    """Make ``format("morlog")`` available in a Spark session (an installed morlog is found
    by Spark without it; see the module's docstring). It turns on :data:`PUSHDOWN_CONF` for
    the session (sources that take no filters ignore it), so that a read may ask for filter
    pushdown with ``.option("filter.pushdown", "true")``: morlog then prunes file slices
    with the filters and filters rows in the read tasks (``morlog.spark.source``).
    ``pushdown=True`` makes that every read's default; it is off by default because PySpark
    4.3 lets one scan's pushed filters leak into later scans of the same DataFrame or view
    (wrong rows; ``morlog.spark.source`` says when it is safe)."""
    spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(MorlogPushdownDataSource if pushdown else MorlogDataSource)


def save(df: Any, path: str, mode: str = "errorifexists",
         options: dict[str, str] | None = None) -> bool:
    """``df.write.format("morlog").options(**options).mode(mode).save(path)`` with every save
    mode as Hudi's data source has it, including the two Spark refuses for Python data
    sources: ``errorifexists`` (``error``, ``default``; a :class:`UsageError` when a table
    exists) and ``ignore`` (no write when a table exists). Whether it wrote."""
    m = mode.strip().lower()
    if m not in SAVE_MODES:
        raise UsageError("unknown save mode", expected=list(SAVE_MODES), actual=mode)
    if m not in ("append", "overwrite") and table_exists(path):
        if m == "ignore":
            return False
        raise UsageError("a table exists already (save mode errorifexists)", path=path)
    register(df.sparkSession)
    (df.write.format("morlog").options(**(options or {}))
     .mode("overwrite" if m == "overwrite" else "append").save(path))
    return True


# --- the distributed upsert ---------------------------------------------------------------

_FID, _PART, _NEW, _BASE, _DEL, _ORDER = ("__morlog_fid", "__morlog_part", "__morlog_new",
                                          "__morlog_base", "__morlog_delete", "__morlog_order")
#: the record key (as the table's key generator renders it) and whether the row is an insert
_KEY, _INS = "__morlog_key", "__morlog_insert"
#: a row's position in the batch (the later row wins a tie), whether a key's rows go to
#: several partitions
_SEQ, _CROSS = "__morlog_seq", "__morlog_cross"
#: a record moving to another partition (morlog's record index,
#: hoodie.record.index.update.partition.path=true): the partition and file group it leaves
_OLDPART, _OLDFID = "__morlog_oldpart", "__morlog_oldfid"


def upsert(spark: Any, df: Any, path: str, *, key: str, partition: str | None = None,
           ordering: str | None = None, table_name: str | None = None,
           config: WriteConfig | None = None, operation: str = "upsert",
           task_hook: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Upsert (or insert, or delete) a DataFrame, distributed: executors tag keys and write
    the blocks of their file groups; the driver plans insert routing from the slices' sizes
    and commits the instant once.

    ``key`` and ``partition``: the table's record key and partition fields (comma-separated
    when there are several; the table's key generator makes the keys and paths).

    Steps: lock and roll back dead writers' instants (driver) -> the counting job: the
    columns keys, partition paths and ordering values need (not the rows) are tagged
    with record key, partition path and file group (executors, the table's key generator
    and ``KeyTagger``), combined to one row per key and counted per file group -> plan the
    inserts' bins at the table's record size estimate (driver, ``MorTable.record_size``,
    as the write client) -> write requested and inflight (driver) -> the write job: every
    row tagged (its one pass through Python before the write), each insert assigned to a
    bin by its key's hash (one projection), rows repartitioned by file group and sorted by
    file group, key and ordering value; each task combines a key's copies (the first
    wins) and writes its groups' rows, in order, in blocks of at most ``chunk_rows`` rows
    (executors) -> complete the instant with the tasks' write stats (driver). A key whose
    copies go to several partitions (a non-global index) is combined before the write by
    a window over the batch instead, as before. A retried task first discards what an
    earlier attempt wrote for this instant, so retries never duplicate records;
    speculative execution must stay off (two live attempts would share a file group).

    Memory: nothing is cached; the counting job tags only key, partition and ordering
    columns, the write job the rows. A tagging task holds at most ``TAG_CHUNK_BYTES`` of
    its rows (one lookup per chunk); a write task holds one block's rows
    (``hoodie.logfile.data.block.max.size`` at the estimated record size; default 256 MiB)
    or, for a new file group with a base file, that group's rows (at most one
    ``hoodie.parquet.max.file.size`` file's worth, by routing); the driver holds the
    per-file-group counts and write stats, never rows (the record index's key changes
    aside, collected only when that index is kept).

    ``task_hook`` (for fault-injection tests) runs in each write task after each file group
    is written, with the group's file id.
    """
    try:
        return _upsert(spark, df, path, key=key, partition=partition, ordering=ordering,
                       table_name=table_name, config=config, operation=operation,
                       task_hook=task_hook)
    except MorlogError:
        raise
    except Exception as exc:
        # Spark reports a task's MorlogError (a refused batch) as its own exception: the
        # commit, if it had begun, was rolled back already (see Commit)
        text = str(exc)
        # a task's own typed error, where the Python worker's traceback holds one
        typed = re.search(r"morlog\.logformat\.errors\.(\w+): (.*)", text)
        first = (f"{typed.group(1)}: {typed.group(2)}" if typed is not None
                 else (text.strip().splitlines() or [""])[0])[:300]
        raise WriteError(f"the Spark write failed: {type(exc).__name__}: {first}",
                         path=path) from exc


def _upsert(spark: Any, df: Any, path: str, *, key: str, partition: str | None,
            ordering: str | None, table_name: str | None, config: WriteConfig | None,
            operation: str, task_hook: Callable[[str], None] | None) -> dict[str, Any]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if str(spark.conf.get("spark.speculation", "false")).lower() == "true":
        raise UsageError("morlog's distributed upsert needs spark.speculation=false")
    cfg = config or WriteConfig()
    arrow_schema = to_arrow_schema(df.schema, timezone="UTC")
    location = TableLocation.of(path)  # the only time the path is parsed
    store = store_at(location, single_writer=True)
    if not has_properties(store.storage, location.path):
        if operation == "delete":
            raise UsageError("nothing to delete: no table here", path=location.uri)
        MorTable.create(location, arrow_schema, key_field=key, partition_field=partition,
                        ordering_field=ordering, name=table_name, config=cfg)
    table = MorTable(location, cfg)
    keys_of_table = ",".join(table.key_fields)
    parts_of_table = ",".join(table.keygen.partition_fields) or None
    if key not in (table.key_field, keys_of_table) or (partition or None) not in (
            table.partition_field, parts_of_table):
        raise UsageError("key or partition field differs from the table's",
                         path=location.uri, expected=(keys_of_table, parts_of_table),
                         actual=(key, partition))
    table.validate(arrow_schema.empty_table(), operation)  # schema check, nothing written
    with table.commit(operation) as commit:
        view = commit.table()
        instant = commit.instant
        tag_columns = [(_PART, "string"), (_FID, "string"), (_BASE, "string"),
                       (_KEY, "string"), (_OLDPART, "string"), (_OLDFID, "string")]
        check = _BatchRules(table.keygen,
                            table.ordering_field if operation != "delete" else None,
                            tuple(table.ordering_fields) if operation != "delete" else (),
                            moves=update_partition_path(cfg.hoodie_options),
                            delete=operation == "delete")
        combine = operation != "delete"
        # several ordering fields compare as a tuple (spec/table.md §14.2)
        orders = list(table.ordering_fields) if combine else []
        source = df.withColumn(_SEQ, F.monotonically_increasing_id()) if combine else df
        # job 1, the counting pass: only the columns keys, partition paths and the
        # combining need are tagged (every row gets its record key from the table's key
        # generator: composite keys, timestamp partitions...), then combined to one row
        # per key as the write combines them, and counted per (partition, file group);
        # no file group: the partition's inserts. Not cached (a batch larger than the
        # executors' memory must not be held): the write job tags the rows again.
        narrow_cols = list(dict.fromkeys([*table.keygen.required_columns, *orders,
                                          *([_SEQ] if combine else [])]))
        narrow_df = source.select(*narrow_cols)
        narrow = narrow_df.mapInArrow(
            _tagger(location, check), _with_columns(narrow_df.schema, tag_columns))
        where = [_PART, _FID, _OLDPART, _OLDFID]
        # what identifies a record among the batch's copies: its key with a global index,
        # else its key and partition path (Hudi's HoodieWriteHelper.deduplicateRecords,
        # the client's combine), and the file group it is tagged to (a key the table holds
        # in several groups has a row for each: each is updated)
        is_global = global_index(view)
        ident = [_KEY] if is_global else [_KEY, _PART, _FID]
        if combine:
            # the row a record keeps: the greatest ordering value (several: the greatest
            # tuple), the later row on ties; a key whose rows are headed for several
            # partitions (a global index) is counted once, where its winner goes
            per_key = narrow.groupBy(*ident).agg(
                F.max_by(F.struct(*where), F.struct(*orders, _SEQ)).alias("w"),
                (F.min(_PART) != F.max(_PART)).cast("long").alias(_CROSS))
            per_group = (per_key.select(*(F.col(f"w.{c}").alias(c) for c in where), _CROSS)
                         .groupBy(*where).agg(F.count(F.lit(1)).alias("count"),
                                              F.sum(_CROSS).alias(_CROSS))
                         .collect())
        else:
            per_group = narrow.groupBy(*where).count().collect()
        # with a global index, a key whose rows go to several partitions (new in the
        # table, or moving) is combined by its key alone, as the write client combines it,
        # before the write with a window over the batch; otherwise every copy of a record
        # goes to the same file group, and the write task combines them (its rows come
        # sorted by file group, key, ordering value)
        crossing = combine and is_global and any(int(r[_CROSS] or 0) for r in per_group)
        # routing: inserts per partition -> bins (driver)
        pending = view.timeline.pending_services()
        slices = {(s.partition, s.file_id): s for s in view.file_slices()
                  if (s.partition, s.file_id) not in pending.compaction
                  and (s.partition, s.file_id) not in pending.clustering}
        bins: dict[str, list[tuple[str, int, bool]]] = {}
        # Hudi's estimate from the table's past commits, the write client's too
        record_size = table.record_size(view)
        touched_set = {(r[_PART], r[_FID]) for r in per_group if r[_FID] is not None}
        # the groups moving records leave: a delete there
        touched_set |= {(r[_OLDPART], r[_OLDFID]) for r in per_group
                        if r[_OLDFID] is not None}
        if operation != "delete":
            new_rows: dict[str, int] = {}
            for row in per_group:
                if row[_FID] is None:
                    new_rows[row[_PART]] = new_rows.get(row[_PART], 0) + int(row["count"])
            for part, count in new_rows.items():
                bins[part] = table.insert_bins(part, count, record_size, slices)
            touched_set |= {(p, fid) for p, b in bins.items() for fid, n, _ in b if n > 0}
        if bins and not crossing:
            # the tagging tasks route the inserts too (one Python pass over the rows)
            tagged = groups = df.mapInArrow(
                _tagger(location, check, _InsertRoutes.of(bins)),
                _with_columns(df.schema, tag_columns + _ROUTE_COLUMNS))
        else:
            tagged = df.mapInArrow(_tagger(location, check),
                                   _with_columns(df.schema, tag_columns))
            if crossing:
                tagged = _combine_duplicates(tagged, _KEY, orders, F, Window)
            groups = _assign(tagged, bins, operation, F)
        if combine and not crossing:
            tagged = tagged.withColumn(_SEQ, F.monotonically_increasing_id())
            groups = groups.withColumn(_SEQ, F.monotonically_increasing_id())
        if operation != "delete" and check.moves:
            # a moving record: also a (natural) delete where its key lives (only with
            # hoodie.record.index.update.partition.path: another pass over the rows)
            leaving = (tagged.filter(F.col(_OLDFID).isNotNull())
                       .withColumn(_PART, F.col(_OLDPART)).withColumn(_FID, F.col(_OLDFID))
                       .withColumn(_NEW, F.lit(False)).withColumn(_INS, F.lit(False))
                       .withColumn(_DEL, F.lit(True)))
            groups = groups.unionByName(leaving)
        touched = sorted(touched_set)
        apply_drops(table.store, location, view, table.metadata_plan,
                    fsync=cfg.fsync)
        commit.start(sorted(touched))
        n_tasks = max(1, min(len(touched), default_parallelism(spark) * 4))
        stats_schema = ("partition string, file_id string, path string, num_writes long, "
                        "created boolean, size long, inserts long, new boolean")
        # each task gets its file groups' rows one group after the other (sorted: Spark
        # spills what does not fit) and writes them in blocks as they fill
        writer = _group_writer(location, cfg, instant, operation, task_hook,
                               chunk_rows(cfg, record_size), combine and not crossing)
        order = [F.col(_FID)]
        if combine and not crossing:
            # a key's copies side by side, the one it keeps first
            order += ([F.col(_KEY)] + [F.col(f).desc_nulls_last() for f in orders]
                      + [F.col(_SEQ).desc()])
        stats_rows = (groups.repartition(n_tasks, _FID).sortWithinPartitions(*order)
                      .mapInArrow(writer, stats_schema).collect())
        stats: dict[str, list[dict[str, Any]]] = {}
        for r in stats_rows:
            stat: dict[str, Any] = {"fileId": r["file_id"], "path": r["path"],
                                    "numWrites": r["num_writes"],
                                    "partitionPath": r["partition"]}
            if r["size"]:
                stat["totalWriteBytes"] = stat["fileSizeInBytes"] = r["size"]
            stats.setdefault(r["partition"], []).append(stat)
        inserts = sum(r["inserts"] for r in stats_rows)
        # rows tagged to a file group: updates (deletes for a delete)
        tagged_rows = sum(int(r["count"]) for r in per_group if r[_FID] is not None)
        routed = sum(r["inserts"] for r in stats_rows if not r["new"])
        summary = {conf.STAT_INSERTS: str(inserts),
                   (conf.STAT_DELETES if operation == "delete" else conf.STAT_UPDATES):
                       str(tagged_rows),
                   conf.STAT_INSERTS_ROUTED: str(routed),
                   conf.STAT_GROUPS_TOUCHED: str(len(touched)),
                   conf.STAT_GROUPS_NEW: str(len({r["file_id"] for r in stats_rows
                                                      if r["new"]})),
                   conf.STAT_FILES_CREATED: str(sum(1 for r in stats_rows if r["created"])),
                   conf.STAT_ROWS_WRITTEN: str(sum(r["num_writes"] for r in stats_rows))}

        def changes() -> RecordChanges:
            # inserts (routed ones too) and tagged deletes, collected only when the record
            # index is kept
            t = (groups.filter(F.col(_INS) | F.col(_DEL))
                 .select(F.col(_KEY).alias("key"), F.col(_PART).alias("partition"),
                         F.col(_FID).alias("file_id"), F.col(_DEL).alias("deleted"))
                 .toArrow())
            gone = t.column("deleted").fill_null(False)
            return RecordChanges.of_arrays(t.filter(pa.compute.invert(gone)), t.filter(gone))

        commit.complete(stats, summary, changes=changes)
        # the planned bins: (file id, inserts planned, new group?) per partition
        done = {"instant": instant, "rolled_back": commit.rolled_back, **summary,
                "insert_bins": bins}
    table.table_services()  # inline services, on the driver
    return done


def _with_columns(schema: StructType, extra: list[tuple[str, str]]) -> StructType:
    from pyspark.sql.types import StructType as ST

    out = ST(list(schema.fields))
    for name, typ in extra:
        out = out.add(name, typ)
    return out


def _combine_duplicates(df: Any, key: str, ordering: str | list[str] | None, F: Any,
                        Window: Any) -> Any:
    """One row per key: the greatest ordering value (several fields: the greatest tuple),
    the later row on ties."""
    seq = "__morlog_seq"
    df = df.withColumn(seq, F.monotonically_increasing_id())
    fields = [ordering] if isinstance(ordering, str) else list(ordering or [])
    order = [F.col(f).desc_nulls_last() for f in fields] + [F.col(seq).desc()]
    w = Window.partitionBy(key).orderBy(*order)
    return (df.withColumn("__morlog_rank", F.row_number().over(w))
            .filter(F.col("__morlog_rank") == 1).drop("__morlog_rank", seq))


@dataclass(frozen=True)
class _BatchRules:
    """What a tagging task checks in its rows, as ``MorTable.validate`` does on one
    machine: keys neither null nor empty, ordering values not null, every partition value a
    safe partition path (the table's key generator, ``morlog.logformat.keygen``)."""

    keygen: KeyGenSpec
    ordering: str | None
    #: every ordering field (several: table version 9)
    orderings: tuple[str, ...] = ()
    #: hoodie.record.index.update.partition.path (morlog's record index on)
    moves: bool = False
    #: the operation is a delete
    delete: bool = False

    @property
    def key(self) -> str:
        return self.keygen.key_fields[0]

    def keys_and_partitions(self, data: pa.Table, uri: str) -> tuple[pa.Array, pa.Array]:
        for f in dict.fromkeys([*([self.ordering] if self.ordering else []), *self.orderings]):
            if data.column(f).null_count:
                raise UsageError(f"ordering field {f!r} must not be null", path=uri)
        return self.keygen.record_keys(data), self.keygen.partition_paths(data)


#: at most this many bytes of a tagging task's rows are tagged at once (each chunk is one
#: lookup: every lookup reads each candidate slice's key data, so not batch by batch)
TAG_CHUNK_BYTES = 128 << 20


def _tagger(location: TableLocation, rules: _BatchRules,
            routes: _InsertRoutes | None = None) -> Any:
    """The tagging tasks' function: each row with its partition path, file group (null: a
    new key), slice base instant, record key and, for a moving record, the group it leaves;
    with ``routes``, inserts routed to their file groups too (:meth:`_InsertRoutes.assign`)."""
    chunk_bytes = TAG_CHUNK_BYTES  # read on the driver, shipped with the function

    def tag(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from morlog.readers.lookup import KeyTagger

        table = Table(location)
        index: KeyTagger | None = None
        rows: list[pa.RecordBatch] = []
        size = 0

        def tag_chunk(rows: list[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            nonlocal index
            data = pa.Table.from_batches(rows)
            keys, parts = rules.keys_and_partitions(data, location.uri)
            found = _global_tags(table, keys, parts, rules, location, data)
            old_parts = old_fids = pa.nulls(len(keys), pa.string())
            extra: pa.RecordBatch | None = None
            if found is None:
                if index is None:  # one tagger for the task's chunks (it keeps what it read)
                    index = KeyTagger(table)
                tags = index.tag(keys, parts)
                locs = tags.locations
                slices = {(s.partition, s.file_id): s.base_instant for s in index.slices}
                if tags.also:
                    # a key the table holds in several file groups (Hudi's insert allows
                    # it): a copy of its row for each other group, which the write task
                    # updates (or deletes from) too, as the client does every copy
                    extra = _copies_for(data, keys, tags.also, slices)
            else:
                locs, parts, old_parts, old_fids = found
                slices = {(s.partition, s.file_id): s.base_instant
                          for s in table.file_slices()}
            fids = pa.array([None if loc is None else loc[1] for loc in locs], pa.string())
            bases = pa.array([None if loc is None else slices.get(loc) for loc in locs],
                             pa.string())
            start = 0
            for b in rows:
                n = b.num_rows
                out = pa.RecordBatch.from_arrays(
                    [*b.columns, parts.slice(start, n), fids.slice(start, n),
                     bases.slice(start, n), keys.slice(start, n).cast(pa.string()),
                     old_parts.slice(start, n), old_fids.slice(start, n)],
                    names=[*b.schema.names, _PART, _FID, _BASE, _KEY, _OLDPART, _OLDFID])
                yield out if routes is None else routes.assign(out)
                start += n
            if extra is not None:
                yield extra if routes is None else routes.assign(extra)

        # the task's rows in chunks of at most chunk_bytes (a task holds one chunk), each
        # tagged with one lookup
        for b in batches:
            if not b.num_rows:
                continue
            rows.append(b)
            size += b.nbytes
            if size >= chunk_bytes:
                yield from tag_chunk(rows)
                rows, size = [], 0
        if rows:
            yield from tag_chunk(rows)
    return tag


def _copies_for(data: pa.Table, keys: pa.Array, also: dict[int, list[tuple[str, str]]],
                slices: dict[tuple[str, str], str]) -> pa.RecordBatch:
    """The rows of ``data`` whose keys live in more file groups than the one tagged, once
    for each other group (``TagResult.also``), with the tagging columns (a batch built as
    the tagged ones are)."""
    rows = [(i, g) for i in sorted(also) for g in also[i]]
    take = pa.array([i for i, _ in rows], pa.int64())
    none = pa.nulls(len(rows), pa.string())
    cols = [c.combine_chunks() for c in data.take(take).columns]
    key = keys.take(take).cast(pa.string())
    return pa.RecordBatch.from_arrays(
        [*cols, pa.array([g[0] for _, g in rows], pa.string()),
         pa.array([g[1] for _, g in rows], pa.string()),
         pa.array([slices.get(g) for _, g in rows], pa.string()),
         key.combine_chunks() if isinstance(key, pa.ChunkedArray) else key, none, none],
        names=[*data.schema.names, _PART, _FID, _BASE, _KEY, _OLDPART, _OLDFID])


def _global_tags(table: Table, keys: pa.Array, parts: pa.Array, rules: _BatchRules,
                 location: TableLocation, data: pa.Table
                 ) -> tuple[list[tuple[str, str] | None], pa.Array, pa.Array, pa.Array] | None:
    """With a global record index (morlog's or Hudi's ``record_index``:
    ``morlog.writers.core.tagging.global_tags``, spec/rli.md §4a): the location of every
    key and the partition each row is written to, as
    ``MorTable`` does: a key living in another partition is written (or deleted) where it
    lives, or, with ``hoodie.record.index.update.partition.path`` true, moves: the row
    becomes an insert in its own partition and the partition and file group it leaves
    (the last two arrays, null for the other rows) get a delete of it, unless the stored
    record wins the merge (``stored_wins``). None without the index."""
    from morlog.writers.core.tagging import global_tags, stored_wins

    found = global_tags(table, keys, parts)
    if found is None:
        return None
    tags = found.tags
    locs = tags.locations
    none = pa.nulls(len(keys), pa.string())
    if not found.moved.any():
        return locs, parts, none, none
    where = pa.array([g[0] for g in tags.groups] or [""], pa.string())
    fid_of = pa.array([g[1] for g in tags.groups] or [""], pa.string())
    at = pa.array(np.where(tags.codes >= 0, tags.codes, 0))
    old_part, old_fid = where.take(at), fid_of.take(at)
    moves = np.zeros(len(keys), dtype=bool)
    if rules.moves and not rules.delete:
        moves = found.moved & ~stored_wins(table, found, data, keys)
    stay = pa.array(found.moved & ~moves)
    parts = pc.if_else(stay, old_part, parts.cast(pa.string()))
    if moves.any():
        locs = [None if m else loc for loc, m in zip(locs, moves.tolist(), strict=True)]
    mv = pa.array(moves)
    return (locs, parts, pc.if_else(mv, old_part, none), pc.if_else(mv, old_fid, none))


@dataclass(frozen=True)
class _InsertRoutes:
    """Where the inserts of a write go: per partition, its bins (file id, planned count,
    new group?) laid end to end over ``[0, total)``. Shipped to the tasks (O(file groups)),
    applied to Arrow batches: a row's slot is its key's XXH64 (seed 0) modulo the
    partition's total, its bin the one whose range holds the slot, as Hudi's
    ``UpsertPartitioner.getPartition`` routes inserts (apache/hudi ``hudi-client/
    hudi-spark-client/.../table/action/commit/UpsertPartitioner.java``: the key's hash
    modulo the partition's insert count, against the bins' cumulative weights). A row
    recomputed lands where it landed first (the hash is the key's); each bin gets its
    planned count up to the spread of the hash. Before, the same rule was a Spark SQL
    ``CASE`` of one branch per bin: its code grew with the batch, and at ~400 bins (a 3 GiB
    batch) compiling it exhausted a 450 MiB driver."""

    parts: tuple[str, ...]
    totals: tuple[int, ...]
    #: per partition: the cumulative end of each of its bins
    ends: tuple[tuple[int, ...], ...]
    #: every bin's file id and whether it is a new group, partition after partition
    fids: tuple[str, ...]
    news: tuple[bool, ...]

    @classmethod
    def of(cls, bins: dict[str, list[tuple[str, int, bool]]]) -> _InsertRoutes:
        parts = tuple(bins)
        ends = tuple(tuple(int(x) for x in np.cumsum([n for _, n, _ in bins[p]]))
                     for p in parts)
        return cls(parts, tuple(max(1, e[-1] if e else 0) for e in ends), ends,
                   tuple(f for p in parts for f, _, _ in bins[p]),
                   tuple(bool(new) for p in parts for _, _, new in bins[p]))

    def assign(self, b: pa.RecordBatch) -> pa.RecordBatch:
        """Batch ``b`` of tagged rows with its inserts' file groups (``_FID``) and the
        flags ``_NEW`` (a new group), ``_INS`` (an insert), ``_DEL`` (false)."""
        names = b.schema.names
        fid = b.column(names.index(_FID))
        ins = np.asarray(fid.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        code = np.full(b.num_rows, -1, dtype=np.int64)
        if ins.any():
            rows = np.flatnonzero(ins)
            part = b.column(names.index(_PART)).take(pa.array(rows))
            pidx = pc.index_in(part, value_set=pa.array(self.parts, pa.string()))
            pidx_np = np.asarray(pidx.fill_null(-1).to_numpy(zero_copy_only=False))
            keys = b.column(names.index(_KEY)).take(pa.array(rows)).cast(pa.string())
            h = xxh64_batch(KeyBatch.of(keys))
            base = 0
            for k, ends in enumerate(self.ends):
                mine = pidx_np == k
                if ends and mine.any():
                    slot = (h[mine] % np.uint64(self.totals[k])).astype(np.int64)
                    at = np.searchsorted(np.asarray(ends, dtype=np.int64), slot, side="right")
                    code[rows[mine]] = base + np.minimum(at, len(ends) - 1)
                base += len(ends)
        hit = code >= 0
        where = pa.array(np.where(hit, code, 0))
        fids = (pa.array(self.fids, pa.string()) if self.fids else pa.array([""], pa.string()))
        news = pa.array(self.news or (False,), pa.bool_())
        mask = pa.array(hit)
        cols = list(b.columns)
        cols[names.index(_FID)] = pc.if_else(mask, fids.take(where), fid.cast(pa.string()))
        return pa.RecordBatch.from_arrays(
            [*cols, pc.if_else(mask, news.take(where), False), pa.array(ins),
             pa.repeat(pa.scalar(False), b.num_rows)],
            names=[*names, _NEW, _INS, _DEL])


#: the columns :meth:`_InsertRoutes.assign` adds
_ROUTE_COLUMNS = [(_NEW, "boolean"), (_INS, "boolean"), (_DEL, "boolean")]


def _assign(tagged: Any, bins: dict[str, list[tuple[str, int, bool]]], operation: str,
            F: Any) -> Any:
    """Every row with its file group: tagged rows keep theirs; an insert goes to the bin
    its key routes to (:class:`_InsertRoutes`, in the tasks). Deletes and batches without
    inserts: the tagged rows alone."""
    if operation == "delete":
        return (tagged.filter(F.col(_FID).isNotNull()).withColumn(_NEW, F.lit(False))
                .withColumn(_INS, F.lit(False)).withColumn(_DEL, F.lit(True)))
    if not bins:
        return (tagged.filter(F.col(_FID).isNotNull())
                .withColumns({_NEW: F.lit(False), _INS: F.lit(False), _DEL: F.lit(False)}))
    routes = _InsertRoutes.of(bins)

    def assign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            yield routes.assign(b)

    return tagged.mapInArrow(assign, _with_columns(tagged.schema, _ROUTE_COLUMNS))


#: what a write task reports per file it wrote (and, on a group's first row, the group's
#: inserts and whether they were routed into an existing group)
_STATS_SCHEMA = pa.schema([("partition", pa.string()), ("file_id", pa.string()),
                           ("path", pa.string()), ("num_writes", pa.int64()),
                           ("created", pa.bool_()), ("size", pa.int64()),
                           ("inserts", pa.int64()), ("new", pa.bool_())])


def chunk_rows(cfg: WriteConfig, record_size: int) -> int:
    """How many rows a write task holds of a file group before it writes them as a block:
    ``hoodie.logfile.data.block.max.size`` (Hudi's ``HoodieAppendHandle`` cuts its data
    blocks there; default 256 MiB) at ``record_size`` bytes per record."""
    from morlog.writers.services.base import option_int
    from morlog.writers.services.logcompaction import (
        DATA_BLOCK_MAX_SIZE,
        DEFAULT_DATA_BLOCK_MAX,
    )

    block = option_int(cfg.hoodie_options, DATA_BLOCK_MAX_SIZE, DEFAULT_DATA_BLOCK_MAX,
                       minimum=1)
    return max(1, block // max(1, record_size))


def _group_writer(location: TableLocation, cfg: WriteConfig, instant: str, operation: str,
                  hook: Callable[[str], None] | None, max_rows: int,
                  dedup: bool = False) -> Any:
    """The write task: its rows arrive sorted by file group; each group's rows are written
    in blocks of at most ``max_rows`` rows as they come (a new file group with a base file
    is one file: its rows, at most one file's worth by routing, are held until it ends).
    ``dedup``: the rows come sorted by file group and key too, the row a key keeps first
    (``_upsert``): the others are dropped (duplicate keys combined by Hudi's rules)."""
    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from morlog.writers.core.logwriter import discard_uncommitted

        table = MorTable(location, cfg)
        st = table.store
        base_ext = table_base_format(table.props).ext
        latest: dict[tuple[str, str], Any] | None = None
        out: dict[str, list[Any]] = {f.name: [] for f in _STATS_SCHEMA}

        def write_chunk(fid: str, parts: list[pa.RecordBatch], first: bool) -> None:
            nonlocal latest
            g = pa.Table.from_batches(parts)
            partition = g.column(_PART)[0].as_py()
            new = bool(g.column(_NEW)[0].as_py())
            base = None
            slice_logs: list[str] = []
            if not new:
                if latest is None:
                    # the latest slice of every existing group (inserts routed into a group
                    # carry no base instant of their own); the new instant is not completed,
                    # so this is stable
                    latest = {(s.partition, s.file_id): s for s in table.table().file_slices()}
                s = latest.get((partition, fid))
                if s is None:
                    raise UsageError("file group vanished during the upsert",
                                     path=location.uri, actual=(partition, fid))
                base, slice_logs = s.base_instant, s.log_files
            directory = table.partition_path(partition)
            if first:
                # a retried task: drop what an earlier attempt wrote for this instant (its
                # own log files in table version 8+, named after the instant)
                discard_uncommitted(directory, fid, instant if base is None
                                    or table.version >= 8 else base, instant, st)
                st.delete(st.join(directory, base_file_name(fid, instant, base_ext)))
            data_cols = [c for c in g.column_names if not c.startswith("__morlog_")]
            rows = g.select(data_cols)
            if operation == "delete":
                writes = table.write_group(instant, partition, fid, base, None, rows,
                                           slice_logs=slice_logs)
            else:
                gone = g.column(_DEL).fill_null(False)
                # the deletes of records moving away (natural: no ordering value)
                leaving = rows.filter(gone).select(list(table.keygen.required_columns))
                rows = table.validate(rows.filter(pc.invert(gone)), operation)
                writes = table.write_group(instant, partition, fid, base,
                                           rows if rows.num_rows else None,
                                           leaving if leaving.num_rows else None,
                                           slice_logs=slice_logs)
            inserted = int(pc.sum(g.column(_INS).cast(pa.int64())).as_py() or 0)
            for i, w in enumerate(writes):
                for name, value in (("partition", w.partition), ("file_id", w.file_id),
                                    ("path", st.relpath(w.path, location.path)),
                                    ("num_writes", w.num_writes), ("created", w.created),
                                    ("size", w.size), ("inserts", inserted if i == 0 else 0),
                                    ("new", new)):
                    out[name].append(value)

        current: str | None = None
        held: list[pa.RecordBatch] = []
        count = 0
        first = True
        whole = False  # a new group with a base file: written once, at its end
        last: tuple[Any, Any] | None = None  # the (file group, key) of the row before

        def finish() -> None:
            if current is not None and held:
                write_chunk(current, held, first)
            if current is not None and hook is not None:
                hook(current)

        for batch in batches:
            if not batch.num_rows:
                continue
            fids = batch.column(_FID)
            if fids.null_count:
                raise WriteError("a row reached a write task without a file group",
                                 path=location.uri)
            if dedup:
                batch, last = _first_of_each_key(batch, last)
                fids = batch.column(_FID)
            codes = fids.dictionary_encode().indices.to_numpy(zero_copy_only=False)
            cuts = [0, *(np.flatnonzero(np.diff(codes)) + 1).tolist(), batch.num_rows]
            for a, b in zip(cuts[:-1], cuts[1:], strict=True):
                run = batch.slice(a, b - a)
                fid = fids[a].as_py()
                if fid != current:
                    finish()
                    current, held, count, first = fid, [], 0, True
                    whole = (operation != "delete" and cfg.new_groups == "base"
                             and bool(run.column(_NEW)[0].as_py()))
                while run.num_rows:
                    take = run.num_rows if whole else min(run.num_rows, max_rows - count)
                    held.append(run.slice(0, take))
                    run = run.slice(take)
                    count += take
                    if not whole and count >= max_rows:
                        write_chunk(fid, held, first)
                        held, count, first = [], 0, False
        finish()
        if out["path"]:
            yield pa.RecordBatch.from_pydict(out, schema=_STATS_SCHEMA)
    return write


def _first_of_each_key(batch: pa.RecordBatch, last: tuple[Any, Any] | None
                       ) -> tuple[pa.RecordBatch, tuple[Any, Any]]:
    """The rows of ``batch`` (sorted by file group and key) whose (file group, key) differs
    from the row before (``last``: the previous batch's last row), and this batch's last."""
    n = batch.num_rows
    fids, keys = batch.column(_FID), batch.column(_KEY)
    same = np.zeros(n, dtype=bool)
    if n > 1:
        eq = pc.and_(pc.equal(fids.slice(1), fids.slice(0, n - 1)),
                     pc.equal(keys.slice(1), keys.slice(0, n - 1)))
        same[1:] = eq.fill_null(False).to_numpy(zero_copy_only=False)
    if last is not None:
        same[0] = (fids[0].as_py(), keys[0].as_py()) == last
    end = (fids[n - 1].as_py(), keys[n - 1].as_py())
    return (batch.filter(pa.array(~same)) if same.any() else batch), end


def compact(spark: Any, path: str, options: dict[str, str] | None = None, *,
            dry_run: bool = False) -> Any:
    """``morlog compact`` distributed: the driver plans and commits under the table's
    writer lock (``morlog.writers.services.compaction``), one Spark task per planned file slice
    writes its new base file. A retried task replaces the file its failed attempt left
    (the name is the operation's own), so a retry leaves no duplicate."""
    from morlog.writers.services.compaction import compact as compact_table

    opts = dict(options or {})
    table = MorTable(path, WriteConfig.from_hoodie_options(opts))
    location, cfg = table.location, table.config

    def runner(mt: MorTable, instant: str, ops: list[dict[str, Any]]
               ) -> list[tuple[dict[str, Any], str | None, int, dict[str, Any]]]:
        return run_tasks(spark, ops, _compaction_task(location, cfg, instant))

    return compact_table(table, dry_run=dry_run, runner=runner)


def log_compact(spark: Any, path: str, options: dict[str, str] | None = None, *,
                dry_run: bool = False) -> Any:
    """``morlog logcompact`` distributed: the driver plans, takes the table's writer lock,
    marks the instant inflight and commits (``morlog.writers.services.logcompaction``); one Spark
    task per planned file slice merges its run into new blocks. A retried task first
    removes what its failed attempt wrote in that file group (``undo_slice``: blocks of the
    inflight instant, which no reader counts), so a retry leaves no duplicate."""
    from morlog.writers.services.logcompaction import log_compact as log_compact_table

    opts = dict(options or {})
    table = MorTable(path, WriteConfig.from_hoodie_options(opts))
    location, cfg = table.location, table.config

    def runner(mt: MorTable, instant: str, ops: list[dict[str, Any]]) -> list[Any]:
        return run_tasks(spark, ops, _log_compaction_task(location, cfg, instant))

    return log_compact_table(table, dry_run=dry_run, runner=runner)


def _log_compaction_task(location: TableLocation, cfg: WriteConfig, instant: str) -> Any:
    def run(op: dict[str, Any]) -> Any:
        from morlog.writers.services.logcompaction import log_compact_operation

        return log_compact_operation(MorTable(location, cfg), instant, op, retry=True)
    return run


def clean(spark: Any, path: str, options: dict[str, str] | None = None, *,
          dry_run: bool = False) -> Any:
    """``morlog clean`` distributed: the driver plans, checks the plan and commits under
    the table's writer lock (``morlog.writers.services.cleaning``); Spark tasks delete the planned
    files, one task per partition directory. A retried task finds its files gone and
    reports them as failed deletes, as Hudi counts them."""
    from morlog.writers.services.cleaning import clean as clean_table

    opts = dict(options or {})
    table = MorTable(path, WriteConfig.from_hoodie_options(opts))
    location, cfg = table.location, table.config

    def deleter(paths: list[str]) -> list[bool]:
        by_dir: dict[str, list[tuple[int, str]]] = {}
        for i, p in enumerate(paths):
            by_dir.setdefault(p.rsplit("/", 1)[0], []).append((i, p))
        out = [False] * len(paths)
        for done in run_tasks(spark, list(by_dir.values()), _delete_task(location, cfg)):
            for i, ok in done:
                out[i] = ok
        return out

    return clean_table(table, dry_run=dry_run, options=opts, deleter=deleter)


def _delete_task(location: TableLocation, cfg: WriteConfig) -> Any:
    def run(items: list[tuple[int, str]]) -> list[tuple[int, bool]]:
        store = MorTable(location, cfg).store
        return [(i, store.delete(p)) for i, p in items]
    return run


def _compaction_task(location: TableLocation, cfg: WriteConfig, instant: str) -> Any:
    def run(op: dict[str, Any]) -> tuple[dict[str, Any], str | None, int, dict[str, Any]]:
        from morlog.writers.services.compaction import compact_operation

        return compact_operation(MorTable(location, cfg), instant, op, retry=True)
    return run


def build_record_index(spark: Any, path: str, shards: int = 16,
                       options: dict[str, str] | None = None, *,
                       task_hook: Callable[[int], None] | None = None) -> Any:
    """``morlog rli build`` distributed (``morlog.writers.services.record_index.build``): the driver
    takes the table's writer lock, creates the index table and commits; one Spark task per
    data file slice reads its live keys and tags each with its shard, Spark's shuffle
    brings each shard's entries to a task of its own (:func:`partition_slots`), which sorts
    them into a base file (a retried task first removes its failed attempt's file).
    Returns the :class:`~morlog.writers.services.record_index.BuildResult`. ``task_hook(shard)``
    runs in a shard task after its file is written (tests inject failures with it)."""
    from morlog.readers.record_index import SCHEMA as ENTRIES
    from morlog.writers.services.record_index import build

    table = MorTable(path, WriteConfig.from_hoodie_options(dict(options or {})))
    location, cfg = table.location, table.config

    def runner(data: Table, as_of: str | None, n: int, idx: MorTable, instant: str
               ) -> tuple[list[dict[str, Any]], int, int]:
        slices = data.file_slices(as_of)
        if not slices:
            return [], 0, 0
        entries = (f"{_SLOT} long, {_SHARD} long, "
                   + ", ".join(f"{f.name} string" for f in ENTRIES))
        out = (_task_items(spark, slices)
               .mapInArrow(_entries_task(location, as_of, n, partition_slots(spark, n)),
                           entries)
               .repartition(n, _SLOT)
               .mapInArrow(_shard_task(location, cfg, instant, task_hook), _RESULTS)
               .toArrow())
        done = [pickle.loads(r) for r in out.column("result").to_pylist()]
        return [w for ws, _ in done for w in ws], sum(c for _, c in done), len(slices)

    return build(table, shards, runner=runner)


_SLOT, _SHARD = "__morlog_slot", "__morlog_shard"


def _entries_task(location: TableLocation, as_of: str | None, shards: int,
                  slots: list[int]) -> Any:
    def run(items: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from morlog.writers.services.record_index import shard_pieces, slice_entries

        table = Table(location)
        for b in items:
            for raw in b.column("item").to_pylist():
                for shard, t in shard_pieces(slice_entries(table, pickle.loads(raw), as_of),
                                             shards):
                    n = t.num_rows
                    yield pa.RecordBatch.from_arrays(
                        [pa.repeat(pa.scalar(slots[shard], pa.int64()), n),
                         pa.repeat(pa.scalar(shard, pa.int64()), n),
                         *(c.combine_chunks() for c in t.columns)],
                        names=[_SLOT, _SHARD, *t.column_names])
    return run


def _shard_task(location: TableLocation, cfg: WriteConfig, instant: str,
                hook: Callable[[int], None] | None) -> Any:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from morlog.readers.record_index import SCHEMA as ENTRIES
        from morlog.writers.client import record_index_client
        from morlog.writers.services.record_index import write_shard

        parts = [b for b in batches if b.num_rows]
        if not parts:
            return
        rows = pa.Table.from_batches(parts)
        # one shard a task (partition_slots); several would each be written on their own
        for shard in np.unique(rows.column(_SHARD).to_numpy()).tolist():
            mine = rows.filter(pc.equal(rows.column(_SHARD), shard))
            piece = mine.select(ENTRIES.names).cast(ENTRIES)
            out = write_shard(record_index_client(location, cfg.fsync), instant, shard,
                              [piece], retry=True)
            if hook is not None:
                hook(shard)
            yield pa.RecordBatch.from_pydict({"i": [shard], "result": [pickle.dumps(out)]},
                                             schema=_RESULTS_ARROW)
    return run


# --- work items as Spark tasks, DataFrame API only (Spark Connect has no SparkContext) ----

#: what a work-item task returns: the item's number and its pickled result
_RESULTS = "i long, result binary"
_RESULTS_ARROW = pa.schema([("i", pa.int64()), ("result", pa.binary())])


#: partition_slots' answers, by partition count
_SLOTS: dict[int, list[int]] = {}


def partition_slots(spark: Any, n: int) -> list[int]:
    """For every ``i`` in ``0..n-1``, a number that ``repartition(n, column)`` sends to
    partition ``i``: one task per work item, or per record index shard, with the
    DataFrame API alone (an RDD's ``partitionBy(n, lambda k: k)`` has no DataFrame twin).
    Spark's hash partitioning puts a row in partition ``pmod(hash(column), n)``
    (``HashPartitioning.partitionIdExpression`` in apache/spark ``sql/catalyst/.../
    physical/partitioning.scala``: ``Pmod(Murmur3Hash(expressions), n)``, the SQL function
    ``hash``); the slots are the smallest numbers hashing to each partition, found by one
    small Spark job over ``64 * n`` candidates (every partition is hit with probability
    ``1 - n * e**-64``; more candidates are tried otherwise), then kept for the process
    (the hash is Spark's, the same for every session)."""
    if n <= 1:
        return [0] * n
    known = _SLOTS.get(n)
    if known is not None:
        return known
    from pyspark.sql import functions as F

    candidates = 64 * n
    while True:
        t = (spark.range(0, candidates)
             .select(F.col("id"), F.expr(f"pmod(hash(id), {n})").alias("p"))
             .groupBy("p").agg(F.min("id").alias("id")).toArrow())
        if t.num_rows == n:
            slots = [0] * n
            for p, i in zip(t.column("p").to_pylist(), t.column("id").to_pylist(),
                            strict=True):
                slots[p] = i
            _SLOTS[n] = slots
            return slots
        candidates *= 4


def _task_items(spark: Any, items: list[Any]) -> Any:
    """A DataFrame of ``items`` (pickled, column ``item``, with their number ``i``), one
    Spark partition each: what ``sparkContext.parallelize(items, len(items))`` gave."""
    n = len(items)
    slots = partition_slots(spark, n)
    df = spark.createDataFrame(pa.table({
        _SLOT: pa.array(slots, pa.int64()), "i": pa.array(range(n), pa.int64()),
        "item": pa.array([pickle.dumps(x) for x in items], pa.binary())}))
    return df.repartition(n, _SLOT) if n > 1 else df


def run_tasks(spark: Any, items: list[Any], task: Callable[[Any], Any]) -> list[Any]:
    """``task(item)`` for every item, one Spark task each (retried by Spark as its tasks
    are), the results in the items' order. DataFrame API only, so that it runs from a
    Spark Connect client as from a classic session: the items travel pickled in a
    DataFrame's column and the results come back pickled through ``toArrow()``; ``task``
    and the items must pickle without a SparkSession (closures over plain data)."""
    if not items:
        return []
    out = _task_items(spark, items).mapInArrow(_item_runner(task), _RESULTS).toArrow()
    results: list[Any] = [None] * len(items)
    for i, raw in zip(out.column("i").to_pylist(), out.column("result").to_pylist(),
                      strict=True):
        results[i] = pickle.loads(raw)
    return results


def _item_runner(task: Callable[[Any], Any]) -> Any:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            ids = b.column("i").to_pylist()
            done = [pickle.dumps(task(pickle.loads(raw))) for raw in b.column("item").to_pylist()]
            if ids:
                yield pa.RecordBatch.from_pydict({"i": ids, "result": done},
                                                 schema=_RESULTS_ARROW)
    return run


def pc_unique(col: pa.ChunkedArray) -> list[str]:
    return [v for v in pa.compute.unique(col).to_pylist() if v is not None]


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect client's session (no ``sparkContext``, no RDDs:
    every entry point of this module uses the DataFrame API only)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


#: the default parallelism found per Connect session (:func:`default_parallelism`)
_PARALLELISM: dict[str, int] = {}


def default_parallelism(spark: Any) -> int:
    """``sparkContext.defaultParallelism`` (a classic session), or what a Spark Connect
    client can learn of it: ``spark.default.parallelism`` where the session sets it, or
    else the partitions of ``spark.range`` without a partition count, which Spark sizes at
    the default parallelism (``spark.sql.leafNodeDefaultParallelism``, by default
    ``defaultParallelism``); one small job, once per session."""
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    set_ = spark.conf.get("spark.default.parallelism", None)
    if set_ and str(set_).strip().isdigit() and int(set_) > 0:
        return int(set_)
    sid = str(getattr(spark, "session_id", ""))
    found = _PARALLELISM.get(sid)
    if found is None:
        from pyspark.sql import functions as F

        # 1024 rows: one a partition at least, up to 1024 cores
        found = max(1, spark.range(0, 1024).select(F.spark_partition_id().alias("p"))
                    .distinct().count())
        _PARALLELISM[sid] = found
    return found


def session(master: str, app: str, confs: dict[str, str] | None = None) -> tuple[Any, bool]:
    """The active Spark session, or a new one on ``master`` (UI and console progress off,
    workers on this interpreter, ``confs`` set) with ``format("morlog")`` registered. With
    ``SPARK_REMOTE`` set (a Spark Connect server's ``sc://`` URL, PySpark's own setting) the
    new session is
    that server's and ``master`` is ignored: the server's configuration holds. Returns the
    session and whether it was created here (then the caller stops it)."""
    import sys

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()
    if existing is not None:
        spark = existing
    elif os.environ.get("SPARK_REMOTE"):
        spark = SparkSession.builder.appName(app).getOrCreate()
        spark.conf.set("spark.sql.shuffle.partitions", "4")
    else:
        builder = (SparkSession.builder.master(master).appName(app)
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.shuffle.partitions", "4"))
        for k, v in (confs or {}).items():
            builder = builder.config(k, v)
        spark = builder.getOrCreate()
    if not is_connect(spark):
        spark.sparkContext.setLogLevel("ERROR")  # a Connect server keeps its own log level
    register(spark)
    return spark, existing is None


__all__ = ["PUSHDOWN_CONF", "READ_OPTIONS", "SAVE_MODES", "MorlogDataSource",
           "MorlogPushdownDataSource", "MorlogReader", "MorlogWriter", "SlicePartition",
           "build_record_index", "clean", "compact", "log_compact", "register", "save",
           "session", "table_exists", "upsert"]
