"""PySpark reading: ``spark.read.format("morlog")`` (the read half of the data source).

Spark 4's Python Data Source API. Reading gives the merged snapshot with one Spark partition
per file slice (each task merges its slice's base file and logs and yields Arrow batches);
columns are pruned to the schema the reader is given (``.schema(...)``) or to the ``columns``
option.

Filters are pushed down (``DataSourceReader.pushFilters``, Spark 4.1+) when the read option
``filter.pushdown`` says so (the session's ``spark.sql.python.filterPushdown.enabled`` must be
on too: ``morlog.spark.register`` turns it on). Its default is off: PySpark 4.3 keeps
the partitions and read function planned by one scan's filter pushdown on the data source
object that every later scan of the same DataFrame or view shares, so a query without
filters after one with filters reads only the slices and rows the first kept (wrong rows;
Spark's newer sources keep that state per scan). Turn it on for a DataFrame read once
(``.option("filter.pushdown", "true")``) or for a session whose Spark is fixed
(``register(spark, pushdown=True)``); ``tests/test_spark_prune.py`` holds a strict xfail that
tells when the installed Spark no longer leaks. Every filter
with a morlog predicate form (comparisons, IN, IS [NOT] NULL, NOT of those; spec/prune.md §8.1)
prunes file slices on the driver
(:class:`~morlog.readers.prune.Pruner`), and the read tasks filter the merged rows with it
(:class:`~morlog.readers.prune.SliceFilter`). Such a filter is reported fully handled (not
returned to Spark) unless its column is a float or double one: Spark orders NaN above every
number and equal to itself, the predicate follows IEEE, so those filters prune only (rewritten
to Spark's order by :func:`~morlog.readers.predicate.nan_largest`: ``fare > 5`` prunes as
``fare > 5 OR fare is NaN``) and Spark evaluates them again. Filters on nested fields,
string matching (``StartsWith`` ...), NaN literals and literals that do not fit the column
are left to Spark.

Read options use Hudi's names (short aliases in brackets); any other option is an error naming
it: ``path``, ``as.of.instant`` [``as_of``] (an instant, or Hudi's ``yyyy-MM-dd HH:mm:ss[.SSS]``
and ``yyyy-MM-dd``), ``columns``, ``filter.pushdown`` [``pushdown``] (``true``/``false``),
and the query types (spec/queries.md): ``hoodie.datasource.query.type`` (``snapshot``,
``read_optimized``: the latest base files only, ``incremental``),
``hoodie.datasource.read.begin.instanttime`` / ``end.instanttime`` (the range
``(begin, end]``), ``hoodie.datasource.read.incr.fallback.fulltablescan.enable`` and
``hoodie.datasource.query.incremental.format`` (``latest_state``; ``cdc``:
``morlog.readers.cdc.read_cdc`` in one task). An incremental query's partitions are the file
groups its commits wrote, each read as of the range's last instant and filtered on
``_hoodie_commit_time``.

:class:`MorlogReadSource` reads only; ``morlog.spark.write.MorlogDataSource`` extends it
with the writer (``df.write.format("morlog")``) and is what ``register`` installs. The table's
path is resolved once on the driver (:class:`~morlog.readers.storage.TableLocation`) and
shipped to the read tasks.

pyspark is imported only under ``spark/`` and by the Spark commands; nothing else needs a JVM.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import datasource as sds
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from morlog.config import (
    INCR_FALLBACK_FULL_TABLE_SCAN,
    INCREMENTAL_FORMAT,
    QUERY_TYPE,
    READ_BEGIN_INSTANTTIME,
    READ_END_INSTANTTIME,
)
from morlog.logformat.errors import UsageError
from morlog.readers import predicate as pr
from morlog.readers.incremental import QUERY_TYPES, plan_incremental, read_optimized_slices
from morlog.readers.prune import Pruner, SliceFilter, predicate_schema
from morlog.readers.storage import TableLocation
from morlog.readers.table import FileSlice, Table, query_instant
from morlog.spark.sql import CATALOG_TABLE_HINT, sql_options, without_write_options

#: Spark's comparison filters -> the predicate's operators
_COMPARE = {sds.EqualTo: "=", sds.GreaterThan: ">", sds.GreaterThanOrEqual: ">=",
            sds.LessThan: "<", sds.LessThanOrEqual: "<="}

READ_OPTIONS = {"path": "path", "as.of.instant": "as_of", "as_of": "as_of",
                "columns": "columns", "filter.pushdown": "pushdown", "pushdown": "pushdown",
                # query types (spec/queries.md)
                QUERY_TYPE: "query_type", READ_BEGIN_INSTANTTIME: "begin",
                READ_END_INSTANTTIME: "end", INCR_FALLBACK_FULL_TABLE_SCAN: "fallback",
                INCREMENTAL_FORMAT: "incremental_format"}
#: the values of hoodie.datasource.query.incremental.format
INCREMENTAL_FORMATS = ("latest_state", "cdc")


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


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


def filter_expr(f: sds.Filter) -> pr.Expr | None:
    """The predicate tree of one pushed Spark filter (unbound), or None when it has no exact
    form: a nested column, string matching, a NULL or NaN literal."""
    attr = getattr(f, "attribute", None)
    if attr is not None and len(attr) != 1:
        return None
    col = attr[0] if attr is not None else ""
    if type(f) in _COMPARE:
        v = f.value  # type: ignore[attr-defined]
        return None if v is None or _is_nan(v) else pr.Compare(col, _COMPARE[type(f)], v)
    if isinstance(f, sds.EqualNullSafe):  # a <=> v: TRUE or FALSE, never NULL
        if f.value is None:
            return pr.IsNull(col)
        if _is_nan(f.value):
            return None
        # a NULL a gives FALSE (not NULL): NOT (a <=> v) is TRUE for it
        return pr.And((pr.Not(pr.IsNull(col)), pr.Compare(col, "=", f.value)))
    if isinstance(f, sds.In):
        vals = tuple(f.value)
        if not vals or any(v is None or _is_nan(v) for v in vals):
            return None  # NULL in an IN list makes NOT IN never TRUE: Spark decides it
        return pr.In(col, vals)
    if isinstance(f, sds.IsNull):
        return pr.IsNull(col)
    if isinstance(f, sds.IsNotNull):
        return pr.Not(pr.IsNull(col))
    if isinstance(f, sds.Not):
        inner = filter_expr(f.child)
        return None if inner is None else pr.Not(inner)
    return None


def _float_column(schema: pa.Schema, expr: pr.Expr) -> bool:
    return any(pa.types.is_floating(schema.field(c).type) for c in pr.columns(expr))


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


class QueryPartition(SlicePartition):
    """A file slice of a read-optimized or incremental query, with the instant it is read as
    of and the predicate its merged rows must satisfy (incremental: ``_hoodie_commit_time``
    in the range; bound)."""

    def __init__(self, s: FileSlice, as_of: str | None, expr: pr.Expr | None) -> None:
        super().__init__(s)
        self.as_of = as_of
        self.expr = expr


@dataclass(frozen=True)
class Query:
    """The query type of a read (``hoodie.datasource.query.type`` and its range)."""

    kind: str = "snapshot"
    begin: str | None = None
    end: str | None = None
    fallback: bool | None = None


class MorlogReader(DataSourceReader):
    """Reads a table's snapshot, one Spark partition per file slice."""

    def __init__(self, path: str | TableLocation, schema: StructType, as_of: str | None,
                 columns: list[str] | None, query: Query | None = None) -> None:
        self.query = query or Query()
        self.location = TableLocation.of(path)
        self.schema = schema
        # Hudi's time formats resolved once, here: planning and the read tasks see one instant
        self.as_of = None if as_of is None else query_instant(as_of)
        self.columns = columns or list(schema.fieldNames())
        #: the pushed filters: all of them prune, the exact ones filter rows in the tasks
        self.prune_expr: pr.Expr | None = None
        self.rows: SliceFilter | None = None

    @property
    def path(self) -> str:
        return self.location.uri

    def partitions(self) -> Sequence[InputPartition]:
        table = Table(self.location)
        as_of = table.resolve_instant(self.as_of)
        q = self.query
        expr: pr.Expr | None = None
        if q.kind == "incremental":
            plan = plan_incremental(table, q.begin, q.end, q.fallback)
            as_of, slices = plan.as_of, plan.slices
            if plan.expr is None:
                slices = []
            else:
                expr = pr.bind(plan.expr, predicate_schema(table))
        elif q.kind == "read_optimized":
            if as_of is not None:
                table.check_time_travel(as_of)
            slices = read_optimized_slices(table, as_of)
        else:
            slices = table.file_slices(as_of)
        if self.prune_expr is not None:
            pruner = Pruner(table, self.prune_expr, as_of, "morlog")
            slices = [s for s in slices if pruner.decide(s).kept]
        if q.kind == "snapshot":
            return [SlicePartition(s) for s in slices] or [InputPartition(None)]
        return [QueryPartition(s, as_of, expr) for s in slices] or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        target = to_arrow_schema(self.schema, timezone="UTC")
        if not isinstance(partition, SlicePartition):
            return iter(())
        table = Table(self.location)
        s = FileSlice(partition.partition, partition.file_id, partition.base_instant,
                      partition.base_file, partition.log_files)
        as_of, rows = self.as_of, self.rows
        if isinstance(partition, QueryPartition):
            as_of = partition.as_of
            if partition.expr is not None:
                expr = (partition.expr if rows is None
                        else pr.And((partition.expr, rows.expr)))
                rows = SliceFilter(predicate_schema(table), expr, list(self.columns))
        data = (table.read_slice(s, as_of, list(self.columns)) if rows is None
                else rows.read(table, s, as_of))
        if data.num_rows == 0:
            return iter(())
        cols = [data.column(f.name).cast(f.type) if f.name in data.column_names
                else pa.nulls(data.num_rows, f.type) for f in target]
        return iter(pa.Table.from_arrays(cols, schema=target).to_batches())


class MorlogFilteringReader(MorlogReader):
    """:class:`MorlogReader` that takes Spark's filters (module docstring). A separate class:
    Spark refuses any reader that implements ``pushFilters`` while its pushdown setting is
    off."""

    def pushFilters(self, filters: list[sds.Filter]) -> list[sds.Filter]:  # noqa: N802
        """Take every filter with an exact predicate form (module docstring); return those
        Spark must still evaluate."""
        schema = predicate_schema(Table(self.location))
        pushed: list[pr.Expr] = []
        exact: list[pr.Expr] = []
        left: list[sds.Filter] = []
        for f in filters:
            expr = filter_expr(f)
            if expr is not None:
                try:
                    expr = pr.bind(expr, schema)
                except UsageError:  # a literal that does not fit, an unknown column
                    expr = None
            if expr is None:
                left.append(f)
                continue
            # pruning is IEEE; Spark orders NaN above every number (spec/prune.md §8.1)
            pushed.append(pr.nan_largest(expr))
            if _float_column(schema, expr):
                left.append(f)
            else:
                exact.append(expr)
        if pushed:
            self.prune_expr = pr.And(tuple(pushed))
        if exact:
            self.rows = SliceFilter(schema, pr.And(tuple(exact)), list(self.columns))
        return left


def _flag(value: str | None, default: bool, option: str) -> bool:
    if value is None:
        return default
    v = value.strip().lower()
    if v not in ("true", "false"):
        raise UsageError(f"read option {option} is true or false", expected=["true", "false"],
                         actual=value)
    return v == "true"


class MorlogReadSource(DataSource):
    """``format("morlog")`` for reading: Hudi merge-on-read tables with indexable logs."""

    #: filter pushdown when the ``filter.pushdown`` read option is not given
    PUSHDOWN = False

    def __init__(self, options: dict[str, str]) -> None:
        # Spark SQL's own keys and Hudi's SQL table properties (morlog.spark.sql)
        super().__init__(sds.CaseInsensitiveDict(sql_options(options)))

    @classmethod
    def name(cls) -> str:
        return "morlog"

    def path(self) -> str:
        """The ``path`` option (``.load(path)`` or ``.save(path)``)."""
        path = self.options.get("path")
        if not path:
            raise UsageError("a morlog table needs a path: .load(path) or .save(path); "
                             f"in SQL: {CATALOG_TABLE_HINT}")
        return str(path)

    def location(self) -> TableLocation:
        """The table's location, resolved once per source object."""
        loc: TableLocation | None = getattr(self, "_location", None)
        if loc is None:
            loc = TableLocation.of(self.path())
            self._location = loc
        return loc

    def schema(self) -> StructType:
        opts = parse_options(without_write_options(self.options, READ_OPTIONS), READ_OPTIONS,
                             "read")
        table = Table(self.location())
        if _cdc(opts):
            from morlog.readers.cdc import read_cdc

            q = _query(opts)
            return from_arrow_schema(read_cdc(table, q.begin, q.end, None).schema)
        # the latest schema: the columns a write added, the types it widened (spec/table.md
        # §7.7); older files read them as NULL or cast
        return from_arrow_schema(table.schema())

    def streamReader(self, schema: StructType) -> Any:  # noqa: N802
        from morlog.spark.stream_source import stream_reader  # readStream.format("morlog")

        return stream_reader(self, schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        opts = parse_options(without_write_options(self.options, READ_OPTIONS), READ_OPTIONS,
                             "read")
        columns = [c for c in opts.get("columns", "").split(",") if c] or None
        query = _query(opts)
        if _cdc(opts):
            return CdcReader(self.location(), schema, query, columns)
        if columns is not None:
            Table(self.location()).check_columns(columns)  # an unknown column names itself
        pushdown = _flag(opts.get("pushdown"), self.PUSHDOWN, "filter.pushdown")
        cls = MorlogFilteringReader if pushdown else MorlogReader
        return cls(self.location(), schema, opts.get("as_of"), columns, query)


def _query(opts: dict[str, str]) -> Query:
    """The query type of the read options (spec/queries.md): Hudi's values, the range of an
    incremental query (begin required, as Hudi's ``HoodieIncrementalRelation*.validate``)."""
    kind = (opts.get("query_type") or "snapshot").strip().lower()
    if kind not in QUERY_TYPES:
        raise UsageError(f"unknown query type ({QUERY_TYPE})", expected=list(QUERY_TYPES),
                         actual=opts.get("query_type"))
    if kind != "incremental":
        return Query(kind)
    if opts.get("as_of"):
        raise UsageError(f"an incremental query reads {READ_BEGIN_INSTANTTIME} and "
                         f"{READ_END_INSTANTTIME}, not as.of.instant")
    begin = opts.get("begin")
    if not begin:
        raise UsageError(f"an incremental query needs {READ_BEGIN_INSTANTTIME} (an instant, "
                         "or 'earliest')")
    fallback = opts.get("fallback")
    return Query(kind, begin, opts.get("end") or None,
                 None if fallback is None else _flag(fallback, False,
                                                     INCR_FALLBACK_FULL_TABLE_SCAN))


def _cdc(opts: dict[str, str]) -> bool:
    """Whether the read is a CDC query (incremental query, ``incremental.format=cdc``)."""
    fmt = (opts.get("incremental_format") or "latest_state").strip().lower()
    if fmt not in INCREMENTAL_FORMATS:
        raise UsageError(f"unknown incremental format ({INCREMENTAL_FORMAT})",
                         expected=list(INCREMENTAL_FORMATS),
                         actual=opts.get("incremental_format"))
    return fmt == "cdc" and _query(opts).kind == "incremental"


class CdcReader(DataSourceReader):
    """A CDC query (``morlog.readers.cdc.read_cdc``), read in one task."""

    def __init__(self, path: str | TableLocation, schema: StructType, query: Query,
                 columns: list[str] | None) -> None:
        self.location = TableLocation.of(path)
        self.schema = schema
        self.query = query
        self.columns = columns

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from morlog.readers.cdc import read_cdc

        target = to_arrow_schema(self.schema, timezone="UTC")
        data = read_cdc(Table(self.location), self.query.begin, self.query.end, self.columns)
        if data.num_rows == 0:
            return iter(())
        cols = [data.column(f.name).cast(f.type) if f.name in data.column_names
                else pa.nulls(data.num_rows, f.type) for f in target]
        return iter(pa.Table.from_arrays(cols, schema=target).to_batches())


#: the columns :func:`lookup_record_index` adds
LOOKUP_COLUMNS = (("_rli_partition", pa.string()), ("_rli_file_id", pa.string()),
                  ("_rli_instant", pa.string()))


def lookup_record_index(df: Any, path: str | TableLocation, key: str = "key") -> Any:
    """``df`` with where each of its ``key`` values lives by morlog's record index
    (``morlog.readers.record_index``): columns ``_rli_partition``, ``_rli_file_id``,
    ``_rli_instant`` (NULL for a key the table does not hold). The keys are split by shard
    (a shuffle on the shard number) and each task looks up the shards of its keys, reading
    each shard once. The index must cover the table (else a ``StaleIndexError``)."""
    from pyspark.sql.types import StringType, StructField

    from morlog.readers.record_index import RecordIndex, shards_of

    location = TableLocation.of(path)
    first = RecordIndex.open(Table(location))
    if first is None:
        raise UsageError("the table has no morlog record index (morlog rli build)",
                         path=location.uri)
    first.check_current()
    n = first.shards
    shard_col = "_rli_shard"
    # new StructTypes: StructType.add changes its object (df.schema is cached)
    base = list(df.schema.fields)
    with_shard = StructType([*base, StructField(shard_col, StringType())])

    def add_shard(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            s = shards_of(b.column(key), n)
            yield b.append_column(shard_col, pa.array(s).cast(pa.string()))

    out_schema = StructType([*with_shard.fields,
                             *(StructField(name, StringType()) for name, _ in LOOKUP_COLUMNS)])

    def look(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        parts = [b for b in batches if b.num_rows]
        if not parts:
            return
        t = pa.Table.from_batches(parts)
        index = RecordIndex(Table(location))
        found = index.lookup(t.column(key).combine_chunks(), threads=1, check=False)
        hit = pa.array(found.codes >= 0)
        at = pa.array(np.maximum(found.codes, 0).astype(np.int64))
        for name, i in (("_rli_partition", 0), ("_rli_file_id", 1)):
            values = pa.array([g[i] for g in found.groups] or [""], pa.string())
            t = t.append_column(name, pc.if_else(hit, values.take(at), None))
        t = t.append_column("_rli_instant", pc.if_else(hit, found.instants, None))
        yield from t.to_batches()

    return (df.mapInArrow(add_shard, with_shard).repartition(n, shard_col)
            .mapInArrow(look, out_schema).drop(shard_col))


def register_reader(spark: Any) -> None:
    """Make ``spark.read.format("morlog")`` available (reading only; the writing source is
    ``morlog.spark.register``)."""
    spark.dataSource.register(MorlogReadSource)


__all__ = ["LOOKUP_COLUMNS", "READ_OPTIONS", "CdcReader", "MorlogFilteringReader",
           "MorlogReadSource", "MorlogReader", "Query", "QueryPartition", "SlicePartition",
           "filter_expr", "lookup_record_index", "parse_options", "register_reader"]
