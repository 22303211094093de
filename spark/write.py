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
its own (Hudi's write token ``partition-stage-taskAttemptId``) and new file groups of its own,
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
from morlog.writers.core.store import WriteStore, store_at
from morlog.writers.core.tagging import update_partition_path
from morlog.writers.distributed import (
    ROUTE_DEL,
    ROUTE_FID,
    ROUTE_INS,
    ROUTE_KEY,
    ROUTE_NEW,
    ROUTE_PART,
    TaskReport,
    WritePlan,
    abort_write,
    commit_write,
    insert_bins,
    insert_counts,
    new_token,
    plan_write,
    publish_insert_counts,
    write_routed_task,
    write_task,
)
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
            return TaskWritten(write_task(self.plan, batches, _task_token()))
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

#: a routed row's partition path, file group (null: a new key), record key (as the table's
#: key generator renders it), new-group, insert and delete flags
#: (``morlog.writers.distributed``, spec/table.md §7.9)
_FID, _PART, _KEY = ROUTE_FID, ROUTE_PART, ROUTE_KEY
_NEW, _INS, _DEL = ROUTE_NEW, ROUTE_INS, ROUTE_DEL
#: a row's position in the batch (the later row wins a tie)
_SEQ = "__morlog_seq"
#: a record moving to another partition (morlog's record index,
#: hoodie.record.index.update.partition.path=true): the partition and file group it leaves
_OLDPART, _OLDFID = "__morlog_oldpart", "__morlog_oldfid"
#: the Hudi options of the shuffles' task counts (0, Hudi's default: Spark's default
#: parallelism)
SHUFFLE_PARALLELISM = {"upsert": conf.UPSERT_SHUFFLE_PARALLELISM,
                       "insert": conf.INSERT_SHUFFLE_PARALLELISM,
                       "delete": conf.DELETE_SHUFFLE_PARALLELISM}


def upsert(spark: Any, df: Any, path: str, *, key: str, partition: str | None = None,
           ordering: str | None = None, table_name: str | None = None,
           config: WriteConfig | None = None, operation: str = "upsert",
           task_hook: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Upsert (or insert, or delete) a DataFrame, distributed: one Spark job in which the
    executors tag the keys, combine duplicates, route the inserts and write each file
    group's rows in one task; the driver plans and commits (spec/table.md §7.9).

    ``key`` and ``partition``: the table's record key and partition fields (comma-separated
    when there are several; the table's key generator makes the keys and paths).

    Steps: plan (driver: the instant requested with a heartbeat, the small file groups and
    the record size, ``morlog.writers.distributed.plan_write``) -> stage 1, tagging: each
    row with its record key, partition path and file group (null: a new key; executors,
    the table's key generator and ``KeyTagger``), each task publishing its count of new
    keys per partition -> shuffle by record key -> stage 2, routing: copies of a record
    combined by Hudi's rules (the greatest ordering value, the later row on ties; by key
    alone with a global index, else by key and partition path), the inserts' bins planned
    from every tagging task's counts exactly as the write client plans them (small file
    groups first, then new groups of ``hoodie.parquet.max.file.size``; the shuffle waits
    for every tagging task, so every routing task plans the same bins) and each insert
    assigned to a bin by its key's hash -> shuffle by file group -> stage 3, writing: each
    task writes its file groups' rows in chunks of at most ``chunk_rows`` rows, into log
    files of its own (Hudi's write token) and new file groups, every file marked -> commit
    (driver, ``commit_write``: markers reconciled, so failed and retried attempts leave
    nothing; conflicts checked; the indexes and the metadata table updated). One pass over
    the rows: each is read and tagged once, shuffled twice (nothing cached). Before, a
    counting job tagged the batch's keys first (three jobs) and the write job tagged
    every row again. A failed job removes every file it marked: the table is as before.
    Speculative execution must stay off (two live attempts would write one file group).

    Task counts: ``hoodie.upsert.shuffle.parallelism`` (``insert``, ``delete``), else
    Spark's default parallelism.

    Memory: nothing is cached; a tagging task holds at most ``TAG_CHUNK_BYTES`` of its rows
    (one lookup per chunk), a routing task one Arrow batch, a write task one chunk
    (``hoodie.logfile.data.block.max.size`` at the record size; default 256 MiB) or one
    new file group's rows (at most one ``hoodie.parquet.max.file.size`` file, by its bin);
    the driver holds the tasks' reports (write stats, file names), never rows.

    ``task_hook`` (for fault-injection tests) runs in each write task after each chunk, with
    each file id the chunk wrote.
    """
    try:
        return _upsert(spark, df, path, key=key, partition=partition, ordering=ordering,
                       table_name=table_name, config=config, operation=operation,
                       task_hook=task_hook)
    except MorlogError:
        raise
    except Exception as exc:
        # Spark reports a task's MorlogError (a refused batch) as its own exception: the
        # write's files were removed already (abort_write)
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
    plan = plan_write(location, cfg, operation, chunk_rows(cfg, table.record_size()))
    try:
        reports = _write_job(spark, df, table, plan, task_hook)
        # the bins the routing tasks planned (the same in every task)
        bins = {p: insert_bins(plan, p, n) for p, n in sorted(insert_counts(plan).items())}
    except BaseException:
        abort_write(plan)  # every marked file, the stage, the requested instant
        raise
    result = commit_write(plan, reports)
    written = sum(int(s.get("numWrites", 0)) for r in reports for stats in r.stats.values()
                  for s in stats)
    return {"instant": plan.instant, "rolled_back": result.rolled_back, **result.summary(),
            conf.STAT_ROWS_WRITTEN: str(written), "insert_bins": bins}


def _write_job(spark: Any, df: Any, table: MorTable, plan: WritePlan,
               hook: Callable[[str], None] | None) -> list[TaskReport]:
    """The write's one Spark job (see :func:`upsert`): the successful write tasks' reports."""
    from pyspark.sql import functions as F

    from morlog.writers.services.base import option_int

    operation, cfg, location = plan.operation, plan.config, plan.location
    combine = operation != "delete"
    check = _BatchRules(table.keygen, table.ordering_field if combine else None,
                        tuple(table.ordering_fields) if combine else (),
                        moves=update_partition_path(cfg.hoodie_options), delete=not combine)
    n = option_int(cfg.hoodie_options, SHUFFLE_PARALLELISM[operation], 0, minimum=0)
    n = n or max(1, default_parallelism(spark))
    tag_columns = [(_PART, "string"), (_FID, "string"), (_KEY, "string"),
                   (_OLDPART, "string"), (_OLDFID, "string")]
    if combine:
        source = df.withColumn(_SEQ, F.monotonically_increasing_id())
        tagged = source.mapInArrow(_tagger(location, check, plan),
                                   _with_columns(source.schema, tag_columns))
        # what identifies a record among the batch's copies: its key with a global index,
        # else its key and partition path (Hudi's HoodieWriteHelper.deduplicateRecords),
        # and the file group it is tagged to (a key the table holds in several groups has
        # a row for each: each is updated); the row it keeps first
        ident = [_KEY] if plan.global_index else [_KEY, _PART, _FID]
        order = [*ident, *(F.col(f).desc_nulls_last() for f in table.ordering_fields),
                 F.col(_SEQ).desc()]
        routed = (tagged.repartition(n, _KEY).sortWithinPartitions(*order)
                  .mapInArrow(_router(plan, ident, check.moves),
                              _with_columns(tagged.schema, _ROUTE_COLUMNS))
                  .drop(_SEQ, _OLDPART, _OLDFID))
    else:
        tagged = df.mapInArrow(_tagger(location, check),
                               _with_columns(df.schema, tag_columns))
        routed = (tagged.filter(F.col(_FID).isNotNull()).drop(_OLDPART, _OLDFID)
                  .withColumns({_NEW: F.lit(False), _INS: F.lit(False), _DEL: F.lit(True)}))
    rows = (routed.repartition(n, _FID).sortWithinPartitions(_FID)
            .mapInArrow(_routed_writer(plan, hook), "report binary").collect())
    return [pickle.loads(r["report"]) for r in rows]


#: the columns :meth:`_InsertRoutes.assign` adds
_ROUTE_COLUMNS = [(_NEW, "boolean"), (_INS, "boolean"), (_DEL, "boolean")]


def _router(plan: WritePlan, ident: list[str], moves: bool) -> Any:
    """The routing tasks' function: rows sorted by ``ident`` and the row a record keeps
    first; each record's first row kept, its insert routed to its bin
    (:class:`_InsertRoutes`, bins from every tagging task's counts), and, for a record
    moving to another partition, a delete row for the file group it leaves."""
    def route(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        routes: _InsertRoutes | None = None
        last: tuple[Any, ...] | None = None
        for b in batches:
            if not b.num_rows:
                continue
            b, last = _first_of_each(b, ident, last)
            if routes is None:  # every tagging task is done: their counts are all there
                routes = _InsertRoutes.of({p: insert_bins(plan, p, c)
                                           for p, c in insert_counts(plan).items()})
            out = routes.assign(b)
            if out.column(_FID).null_count:
                raise WriteError("an insert's partition has no planned bin (a tagging "
                                 "task's insert counts are missing)", path=plan.location.uri)
            yield out
            if moves:
                leaving = _leaving(out)
                if leaving is not None:
                    yield leaving
    return route


def _leaving(b: pa.RecordBatch) -> pa.RecordBatch | None:
    """For the records of ``b`` moving to another partition: a delete row each, in the
    partition and file group it leaves (a natural delete: no ordering value counts)."""
    gone = b.column(_OLDFID).is_valid()
    if not pc.any(gone).as_py():
        return None
    rows = b.filter(gone)
    names = rows.schema.names
    cols = list(rows.columns)
    cols[names.index(_PART)] = rows.column(_OLDPART)
    cols[names.index(_FID)] = rows.column(_OLDFID)
    for name, flag in ((_NEW, False), (_INS, False), (_DEL, True)):
        cols[names.index(name)] = pa.repeat(pa.scalar(flag), rows.num_rows)
    return pa.RecordBatch.from_arrays(cols, names=names)


def _first_of_each(batch: pa.RecordBatch, cols: list[str], last: tuple[Any, ...] | None
                   ) -> tuple[pa.RecordBatch, tuple[Any, ...]]:
    """The rows of ``batch`` (sorted by ``cols``) whose values of ``cols`` differ from the
    row before (``last``: the previous batch's last row; nulls equal nulls), and this
    batch's last."""
    n = batch.num_rows
    arrays = [batch.column(c) for c in cols]
    same = np.zeros(n, dtype=bool)
    if n > 1:
        eq = pa.repeat(pa.scalar(True), n - 1)
        for a in arrays:
            x, y = a.slice(1), a.slice(0, n - 1)
            e = pc.or_kleene(pc.equal(x, y), pc.and_(x.is_null(), y.is_null())).fill_null(False)
            eq = pc.and_(eq, e)
        same[1:] = np.asarray(eq.to_numpy(zero_copy_only=False), dtype=np.bool_)
    if last is not None:
        same[0] = tuple(a[0].as_py() for a in arrays) == last
    end = tuple(a[n - 1].as_py() for a in arrays)
    return (batch.filter(pa.array(~same)) if same.any() else batch), end


def _task_token() -> str:
    """Hudi's write token of the running Spark task attempt (partition id, stage id, task
    attempt id, as Hudi's ``SparkTaskContextSupplier``: distinct per attempt, stage retries
    too); a random one outside Spark."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return new_token()
    return f"{ctx.partitionId()}-{ctx.stageId()}-{ctx.taskAttemptId()}"


def _routed_writer(plan: WritePlan, hook: Callable[[str], None] | None) -> Any:
    """The write tasks' function: their routed rows, sorted by file group, written
    (:func:`~morlog.writers.distributed.write_routed_task`); one row out, the pickled
    :class:`TaskReport` (write stats and file names, no rows)."""
    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        report = write_routed_task(plan, batches, _task_token(), hook)
        yield pa.RecordBatch.from_pydict({"report": [pickle.dumps(report)]},
                                         schema=pa.schema([("report", pa.binary())]))
    return write


def _with_columns(schema: StructType, extra: list[tuple[str, str]]) -> StructType:
    from pyspark.sql.types import StructType as ST

    out = ST(list(schema.fields))
    for name, typ in extra:
        out = out.add(name, typ)
    return out


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


def _tagger(location: TableLocation, rules: _BatchRules, counts: WritePlan | None = None
            ) -> Any:
    """The tagging tasks' function: each row with its partition path, file group (null: a
    new key), record key and, for a moving record, the partition and group it leaves. With
    ``counts`` (the write's plan) the task publishes its new keys' count per partition when
    it is done (:func:`~morlog.writers.distributed.publish_insert_counts`)."""
    chunk_bytes = TAG_CHUNK_BYTES  # read on the driver, shipped with the function

    def tag(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from morlog.readers.lookup import KeyTagger

        table = Table(location)
        index: KeyTagger | None = None
        rows: list[pa.RecordBatch] = []
        size = 0
        new_keys: dict[str, int] = {}

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
                fids = tags.file_ids()  # one take over the group codes, no per-key Python
                if tags.also:
                    # a key the table holds in several file groups (Hudi's insert allows
                    # it): a copy of its row for each other group, which the write task
                    # updates (or deletes from) too, as the client does every copy
                    extra = _copies_for(data, keys, tags.also)
            else:
                fids, parts, old_parts, old_fids = found
            parts = parts.cast(pa.string())
            if counts is not None and fids.null_count:
                for item in pc.value_counts(parts.filter(fids.is_null())).to_pylist():
                    part = item["values"]
                    new_keys[part] = new_keys.get(part, 0) + int(item["counts"])
            start = 0
            for b in rows:
                n = b.num_rows
                yield pa.RecordBatch.from_arrays(
                    [*b.columns, parts.slice(start, n), fids.slice(start, n),
                     keys.slice(start, n).cast(pa.string()), old_parts.slice(start, n),
                     old_fids.slice(start, n)],
                    names=[*b.schema.names, _PART, _FID, _KEY, _OLDPART, _OLDFID])
                start += n
            if extra is not None:
                yield extra

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
        if counts is not None and new_keys:
            # after its last row: the routing tasks read the counts once every tagging
            # task is done (they start after the shuffle's map stage)
            publish_insert_counts(counts, _task_id(), new_keys)
    return tag


def _task_id() -> str:
    """The running Spark task's partition id (the same for every attempt); a random name
    outside Spark."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return str(ctx.partitionId()) if ctx is not None else uuid.uuid4().hex


def _copies_for(data: pa.Table, keys: pa.Array, also: dict[int, list[tuple[str, str]]]
                ) -> pa.RecordBatch:
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
         key.combine_chunks() if isinstance(key, pa.ChunkedArray) else key, none, none],
        names=[*data.schema.names, _PART, _FID, _KEY, _OLDPART, _OLDFID])


def _global_tags(table: Table, keys: pa.Array, parts: pa.Array, rules: _BatchRules,
                 location: TableLocation, data: pa.Table
                 ) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array] | None:
    """With a global record index (morlog's or Hudi's ``record_index``:
    ``morlog.writers.core.tagging.global_tags``, spec/rli.md §4a): the file id of every
    key (null: an insert) and the partition each row is written to, as
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
    fids = tags.file_ids()
    none = pa.nulls(len(keys), pa.string())
    if not found.moved.any():
        return fids, parts, none, none
    # where each moved key lives now (every moved key is one the index holds)
    old_part, old_fid = tags.partitions(), fids
    moves = np.zeros(len(keys), dtype=bool)
    if rules.moves and not rules.delete:
        moves = found.moved & ~stored_wins(table, found, data, keys)
    stay = pa.array(found.moved & ~moves)
    parts = pc.if_else(stay, old_part, parts.cast(pa.string()))
    mv = pa.array(moves)
    if moves.any():
        fids = pc.if_else(mv, none, fids)
    return (fids, parts, pc.if_else(mv, old_part, none), pc.if_else(mv, old_fid, none))


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
