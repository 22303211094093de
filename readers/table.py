"""A Hudi merge-on-read table: properties, timeline, partitions, file groups, file slices.

Slice membership follows Hudi (facts §1): for table version <= 6 a log file belongs to the
slice whose base instant equals the instant in its name; for 8+ to the slice with the largest
base instant not after the completion time of the log's delta commit (the newest slice while
it is pending; a group without base file keys its slice by the log's own instant). Files of
failed or pending writes and file groups replaced by completed replace commits are left out.
Base files are those of the table's ``hoodie.table.base.file.format``
(``morlog.readers.base_files``); a base file of another format in a partition is a
:class:`~morlog.logformat.errors.FormatError`, never left out silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import pyarrow as pa

from morlog.config import (
    DROP_PARTITION_COLUMNS,
    HIVE_STYLE_PARTITIONING,
    KEYGEN_CLASS,
    KEYGEN_TYPE,
    ORDERING_FIELDS,
    PARTITION_FIELDS,
    PAYLOAD_CLASS,
    POPULATE_META_FIELDS,
    PRECOMBINE_FIELD,
    RECORD_MERGE_MODE,
    RECORDKEY_FIELDS,
    TABLE_CREATE_SCHEMA,
    TABLE_NAME,
    TABLE_TYPE,
    TABLE_VERSION,
)
from morlog.logformat import file_checksum
from morlog.logformat.blocks import META_FIELDS, RECORD_KEY_FIELD
from morlog.logformat.errors import (
    ContentError,
    FormatError,
    UnsupportedVersionError,
    UsageError,
)
from morlog.logformat.naming import BaseFileName, LogFileName
from morlog.logformat.partition_path import check_relative_partition_path
from morlog.logformat.table_files import (
    PARTITION_METADATA_FILE,
)
from morlog.logformat.virtual_keys import KeyField, VirtualKeys

from .base_files import BaseFormat, check_base_file, table_base_format
from .containment import check_file_name, resolve_under
from .merge import MergeSpec, conform, read_slice
from .parallel import default_threads, run_all
from .partition_columns import PartitionColumns
from .properties import read_properties
from .storage import TableLocation
from .timeline import Timeline

if TYPE_CHECKING:
    from .schema_on_read import Reading, SchemaOnRead

PARTITION_METADATA = PARTITION_METADATA_FILE
#: layout 1 (Hudi 0.x, versions 4-6) and layout 2 (Hudi 1.x, versions 8-9)
SUPPORTED_TABLE_VERSIONS = frozenset({4, 5, 6, 8, 9})
__all__ = ["META_FIELDS", "FileSlice", "InstantInfo", "Table", "TableConfig", "query_instant"]


@dataclass(frozen=True)
class TableConfig:
    props: dict[str, str]
    #: the ``hoodie.properties`` file the settings were read from (for error messages)
    path: str | None = None

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.props.get(key, default)

    @property
    def version(self) -> int:
        """``hoodie.table.version``; a :class:`FormatError` naming the file and the setting
        when it is not a (small) decimal number."""
        raw = (self.props.get(TABLE_VERSION, "0") or "0").strip()
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 9):
            raise FormatError("hoodie.table.version is not a table version number",
                              path=self.path, actual=raw[:40])
        return int(raw)

    @property
    def base_format(self) -> BaseFormat:
        """``hoodie.table.base.file.format`` (default PARQUET); an
        :class:`~morlog.logformat.errors.UnsupportedFormatError` naming the setting for HFILE
        or a value Hudi does not know."""
        return table_base_format(self.props, self.path)

    @property
    def table_type(self) -> str:
        return self.props.get(TABLE_TYPE, "COPY_ON_WRITE")

    @property
    def name(self) -> str:
        return self.props.get(TABLE_NAME, "")

    @property
    def record_key_fields(self) -> list[str]:
        raw = self.props.get(RECORDKEY_FIELDS, "")
        return [f for f in raw.split(",") if f]

    @property
    def record_key_field(self) -> str:
        """The first record key field; a :class:`FormatError` naming the file and the
        setting when ``hoodie.table.recordkey.fields`` names none."""
        fields = self.record_key_fields
        if not fields:
            raise FormatError("hoodie.table.recordkey.fields names no record key field",
                              path=self.path)
        return fields[0]

    @property
    def partition_fields(self) -> list[str]:
        raw = self.props.get(PARTITION_FIELDS, "")
        return [f.split(":")[0] for f in raw.split(",") if f]

    @property
    def ordering_fields(self) -> list[str]:
        raw = (self.props.get(ORDERING_FIELDS)
               or self.props.get(PRECOMBINE_FIELD) or "")
        return [f for f in raw.split(",") if f]

    @property
    def populate_meta_fields(self) -> bool:
        """``hoodie.populate.meta.fields`` (default true; ``HoodieTableConfig
        .POPULATE_META_FIELDS``): false leaves the ``_hoodie_*`` columns null and readers
        derive record keys from the key fields (``morlog.logformat.virtual_keys``)."""
        return (self.props.get(POPULATE_META_FIELDS, "true") or "true"
                ).strip().lower() != "false"

    @property
    def drop_partition_columns(self) -> bool:
        """``hoodie.datasource.write.drop.partition.columns`` (default false;
        ``HoodieTableConfig.DROP_PARTITION_COLUMNS``): true keeps the partition columns out
        of the data files; readers put them back from the partition path."""
        return (self.props.get(DROP_PARTITION_COLUMNS, "false")
                or "false").strip().lower() == "true"

    @property
    def key_generator(self) -> str:
        return (self.props.get(KEYGEN_CLASS)
                or self.props.get(KEYGEN_TYPE) or "")

    @property
    def hive_style_partitioning(self) -> bool:
        return self.props.get(HIVE_STYLE_PARTITIONING,
                              "false").lower() == "true"

    @property
    def merge_mode(self) -> str:
        """COMMIT_TIME_ORDERING or EVENT_TIME_ORDERING (CUSTOM payloads are not supported)."""
        mode = self.props.get(RECORD_MERGE_MODE)
        if mode:
            return mode
        payload = self.props.get(PAYLOAD_CLASS, "")
        if payload.endswith("DefaultHoodieRecordPayload") or payload.endswith(
                "EventTimeAvroPayload"):
            return "EVENT_TIME_ORDERING"
        return "COMMIT_TIME_ORDERING"


class InstantInfo(NamedTuple):
    """One instant of a table's timeline, as :meth:`Table.instants` lists it."""

    #: the instant's requested time (``yyyyMMddHHmmssSSS``): what ``as_of`` takes
    instant: str
    #: the action as the timeline names it (``deltacommit``, ``commit``, ``replacecommit``,
    #: ``clean``, ``rollback``, ``compaction`` while pending...)
    action: str
    #: ``REQUESTED``, ``INFLIGHT`` or ``COMPLETED`` (the latest state on the timeline)
    state: str
    #: when it completed: the completion time of the file name (table version 8+); None
    #: for a pending instant and for table versions <= 6, whose timeline records none
    completed: str | None

    def as_dict(self) -> dict[str, str | None]:
        return {"instant": self.instant, "action": self.action, "state": self.state,
                "completed": self.completed}


@dataclass
class FileSlice:
    partition: str
    file_id: str
    #: the slice's base instant (for a log-only slice: the instant of its first log)
    base_instant: str
    base_file: str | None = None
    log_files: list[str] = field(default_factory=list)

    @property
    def directory_rel(self) -> str:
        return self.partition

    def log_names(self) -> list[LogFileName]:
        return [LogFileName.parse(n) for n in self.log_files]


def _plain_name(name: str) -> bool:
    try:
        check_file_name(name)
    except UsageError:
        return False
    return True


_TIME_FORMATS = {10: "%Y-%m-%d", 19: "%Y-%m-%d %H:%M:%S", 23: "%Y-%m-%d %H:%M:%S.%f"}


def query_instant(text: str) -> str:
    """Hudi's ``as.of.instant`` value as an instant: digits (``yyyyMMddHHmmssSSS``) as they
    are; ``yyyy-MM-dd HH:mm:ss[.SSS]`` and ``yyyy-MM-dd`` (its midnight) rewritten in the
    same clock, as Hudi's ``HoodieSqlCommonUtils.formatQueryInstant`` does; a
    :class:`UsageError` otherwise."""
    import datetime as _dt

    value = text.strip()
    if value.isdigit():
        return value
    fmt = _TIME_FORMATS.get(len(value))
    if fmt is not None:
        try:
            t = _dt.datetime.strptime(value, fmt)
        except ValueError:
            pass
        else:
            return t.strftime("%Y%m%d%H%M%S") + f"{t.microsecond // 1000:03d}"
    raise UsageError("an instant is yyyyMMddHHmmssSSS, or a time yyyy-MM-dd HH:mm:ss[.SSS] "
                     "or a date yyyy-MM-dd", actual=text)


class Table:
    """A merge-on-read table on the local file system or any ``pyarrow.fs`` filesystem,
    opened for reading (any Hudi MOR table of version 6, 8 or 9; ``rides`` is the table of
    the :meth:`MorTable.create <morlog.writers.client.MorTable.create>` example).

    >>> t = Table("rides")
    >>> t.read().num_rows, len(t.file_slices()), t.partitions()
    (3, 2, ['nyc', 'sf'])
    """

    def __init__(self, path: str | TableLocation, filesystem: Any = None) -> None:
        """``path``: a local path, a URI (``s3://bucket/table``) read through pyarrow.fs, or a
        :class:`~morlog.readers.storage.TableLocation` resolved already; ``filesystem``: a
        ``pyarrow.fs`` filesystem for ``path``."""
        self.location = TableLocation.of(path, filesystem)
        self.storage = self.location.storage
        path = self.location.path
        # the file, else its backup (a rewrite under way, or one whose writer died)
        props, props_path = read_properties(self.storage, path)
        self.path = path
        self.config = TableConfig(props, props_path)
        if self.config.version not in SUPPORTED_TABLE_VERSIONS:
            raise UnsupportedVersionError("unsupported table version (hoodie.table.version)",
                                          path=props_path,
                                          expected=sorted(SUPPORTED_TABLE_VERSIONS),
                                          actual=self.config.version)
        if self.config.table_type != "MERGE_ON_READ":
            raise UsageError("morlog reads merge-on-read tables (hoodie.table.type)",
                             path=props_path,
                             expected="MERGE_ON_READ", actual=self.config.table_type)
        #: the format of the table's base files (``hoodie.table.base.file.format``)
        self.base_format = self._base_format()
        self.timeline = Timeline.load(path, self.config.version, self.storage)

    def _base_format(self) -> BaseFormat:
        """The base-file format of a data table (HFILE refused: the metadata table's)."""
        return self.config.base_format

    @property
    def version(self) -> int:
        return self.config.version

    @property
    def key_field(self) -> KeyField:
        """How readers key records: the meta field ``_hoodie_record_key``, or, for a table
        that populates no meta fields, its record key fields (Hudi's
        ``RecordContext.virtualKeyExtractor``: ``morlog.logformat.virtual_keys``)."""
        if self.config.populate_meta_fields:
            return RECORD_KEY_FIELD
        fields = [f.strip() for f in self.config.record_key_fields if f.strip()]
        if not fields:
            raise UsageError("a table without meta fields needs record key fields "
                             "(hoodie.table.recordkey.fields)", path=self.config.path)
        return VirtualKeys(tuple(fields))

    def merge_spec(self, as_of: str | None = None,
                   columns: list[str] | None = None) -> MergeSpec:
        ordering = self.config.ordering_fields
        return MergeSpec(key_field=self.key_field,
                         ordering_field=ordering[0] if ordering else None,
                         merge_mode=self.config.merge_mode, table_version=self.version,
                         as_of=as_of, columns=columns, ordering_fields=tuple(ordering),
                         evolve=self.schema_reading(as_of))

    def schema_on_read(self) -> SchemaOnRead | None:
        """The table's Hudi internal schemas when it uses schema-on-read evolution
        (``hoodie.schema.on.read.enable``: a ``.hoodie/.schema/*.schemacommit`` history),
        else None (``morlog.readers.schema_on_read``; read once per table object)."""
        if "_sor" not in self.__dict__:
            from .schema_on_read import SchemaOnRead, history_text

            self.__dict__["_sor"] = (SchemaOnRead.of(self) if history_text(self) is not None
                                     else None)
        got: SchemaOnRead | None = self.__dict__["_sor"]
        return got

    def schema_reading(self, as_of: str | None = None) -> Reading | None:
        """How a read as of ``as_of`` maps each file's columns to its query schema by
        column id (a schema-on-read table), else None."""
        sor = self.schema_on_read()
        if sor is None:
            return None
        readings: dict[str | None, Reading] = self.__dict__.setdefault("_readings", {})
        if as_of not in readings:
            from morlog.logformat import internal_schema as isc

            from .schema_on_read import Reading

            query = sor.query(as_of)
            avro = isc.to_avro(query, "record")
            target = self._with_meta(json.dumps(avro), self.storage.join(
                self.path, ".hoodie", ".schema"))
            readings[as_of] = Reading(sor, query, target)
        return readings[as_of]

    def resolve_instant(self, as_of: str | None) -> str | None:
        """``as_of`` as an instant (None: the latest state): an instant
        (``yyyyMMddHHmmssSSS``), or Hudi's other ``as.of.instant`` formats (see
        :func:`query_instant`)."""
        if as_of is None:
            return None
        return query_instant(as_of)

    def arrow_schema(self) -> pa.Schema:
        """The table's schema: ``hoodie.table.create.schema`` with Hudi's meta fields first
        (when the table populates them)."""
        text = self.config.get(TABLE_CREATE_SCHEMA)
        if not text:
            raise UsageError("table has no hoodie.table.create.schema", path=self.path)
        return self._with_meta(text, self.config.path)

    def _with_meta(self, avro_text: str, where: str | None) -> pa.Schema:
        from morlog.logformat.avroschema import avro_to_arrow_schema

        try:
            schema = avro_to_arrow_schema(avro_text)
        except ContentError as exc:
            raise exc.at(where) from exc.__cause__
        if self.config.populate_meta_fields:
            meta = [pa.field(n, pa.string()) for n in META_FIELDS if n not in schema.names]
            schema = pa.schema(meta + list(schema))
        return schema

    def schema(self) -> pa.Schema:
        """The table's latest schema, the columns a read returns: the schema the latest
        completed write records (commit metadata ``extraMetadata.schema``, which Hudi's
        ``TableSchemaResolver.getTableAvroSchema`` prefers), else
        ``hoodie.table.create.schema``; Hudi's meta fields first (when the table populates
        them), then the partition columns the data files drop (when
        ``hoodie.datasource.write.drop.partition.columns``). A :class:`UsageError` when the
        table records no schema at all.

        >>> Table("rides").schema().names[-4:]
        ['uuid', 'ts', 'fare', 'city']
        """
        tl = self.timeline
        schema: pa.Schema | None = None
        for inst in reversed(tl.completed(frozenset({"commit", "deltacommit",
                                                      "replacecommit"}))):
            try:
                extra = tl.metadata(inst).get("extraMetadata")
            except (FormatError, UnsupportedVersionError):
                continue  # a damaged commit file: an older commit may still say
            text = extra.get("schema") if isinstance(extra, dict) else None
            if isinstance(text, str) and text.strip():
                try:
                    schema = self._with_meta(text, self.storage.join(tl.directory,
                                                                     inst.file_name))
                except ContentError:
                    continue
                break
        if schema is None:
            schema = self.arrow_schema()
        if self.config.drop_partition_columns:
            types = self._partition_columns.types
            extra_fields = [pa.field(f, types.get(f, pa.string())) for f in types
                            if f not in schema.names]
            schema = pa.schema(list(schema) + extra_fields)
        return schema

    def check_columns(self, columns: Sequence[str] | None) -> None:
        """A :class:`UsageError` naming every column of ``columns`` that the table does not
        have (neither in its latest :meth:`schema` nor in its create schema) and the
        table's columns; nothing when ``columns`` is None. A read never answers a column it
        does not know with no data."""
        if columns is None:
            return
        if isinstance(columns, str):
            raise UsageError("columns is a list of column names, not a string",
                             path=self.path, actual=columns)
        if not self._records_schema():
            return  # nothing to check against (a read of such a table returns what it finds)
        known = list(self.schema().names)
        try:
            known += [n for n in self.arrow_schema().names if n not in known]
        except (UsageError, ContentError):
            pass
        unknown = [c for c in columns if c not in known]
        if unknown:
            word = "column" if len(unknown) == 1 else "columns"
            raise UsageError(f"unknown {word} {', '.join(map(repr, unknown))}; the table's "
                             f"columns are {', '.join(known)}", path=self.path)

    def empty(self, columns: Sequence[str] | None = None) -> pa.Table:
        """A table of no rows with the table's :meth:`schema` (projected to ``columns``):
        what a read that finds no rows returns."""
        if not self._records_schema():
            return pa.table({})
        schema = self.schema()
        if columns is not None:
            schema = pa.schema([schema.field(c) for c in dict.fromkeys(columns)
                                if c in schema.names])
        return schema.empty_table()

    def _records_schema(self) -> bool:
        """Whether the table records a schema (create schema or a write's)."""
        if self.config.get(TABLE_CREATE_SCHEMA):
            return True
        try:
            self.schema()
        except UsageError:
            return False
        return True

    def instants(self) -> list[InstantInfo]:
        """Every instant of the table's active timeline, oldest first: requested time,
        action, latest state and completion time (:class:`InstantInfo`). Archived instants
        (older than all of these, all completed) are not listed: morlog does not read
        Hudi's archived timeline. Any ``instant`` of a completed write is a valid
        ``as_of``.

        >>> [(i.action, i.state) for i in Table("rides").instants()]
        [('deltacommit', 'COMPLETED'), ('deltacommit', 'COMPLETED')]
        >>> first = Table("rides").instants()[0].instant
        >>> Table("rides").read(first, columns=["uuid", "fare"]).sort_by("uuid").to_pylist()[0]
        {'uuid': 'a', 'fare': 10.0}
        """
        return [InstantInfo(i.requested, i.action, i.state,
                            i.completed if i.is_completed else None)
                for i in self.timeline.instants]

    @property
    def sealed_base_files(self) -> bool:
        """Whether the table seals its Parquet base files with a whole-file checksum that
        readers check (``morlog.base.file.checksum=crc32``: morlog's record index table,
        spec/rli.md §1a)."""
        raw = self.config.get(file_checksum.PROPERTY) or ""
        return raw.strip().lower() == file_checksum.PROPERTY_VALUE

    def read_slice(self, s: FileSlice, as_of: str | None = None,
                   columns: list[str] | None = None) -> pa.Table:
        """The merged records of one file slice (memory bounded by that slice)."""
        spec = self.merge_spec(as_of, columns)
        out = read_slice(self.slice_dir(s.partition), s.base_file, s.log_files, spec,
                         self.timeline, self.storage, sealed=self.sealed_base_files)
        if spec.evolve is not None and out.num_columns:
            # the query schema's columns in its order and types, NULL where no file of the
            # slice has them (a column added after all of them were written)
            target = spec.evolve.target
            out = conform(out.select([c for c in out.column_names if c in target.names]),
                          pa.schema([f for f in target if columns is None
                                     or f.name in columns or f.name in out.column_names]))
        if self.config.drop_partition_columns and out.num_columns:
            out = self._partition_columns.restore(out, s.partition)
        if columns is not None and out.num_columns:
            out = out.select([c for c in columns if c in out.column_names])
        return out

    @property
    def _partition_columns(self) -> PartitionColumns:
        cached = self.__dict__.get("_pcols")
        if cached is None:
            cached = self.__dict__["_pcols"] = PartitionColumns.of(self)
        return cached

    def snapshot(self, as_of: str | None = None, columns: list[str] | None = None,
                 where: Any = None) -> Iterator[pa.Table]:
        """The table as of ``as_of`` (default: latest), one merged file slice at a time
        (slices without rows are skipped). An instant a clean has given up
        (:meth:`check_time_travel`) and a column the table does not have
        (:meth:`check_columns`) are refused here, before the first slice is read.

        ``where``: a predicate (text or a ``morlog.readers.predicate`` tree, bound to
        :func:`morlog.readers.prune.predicate_schema`): only the file slices
        :func:`morlog.readers.prune.prune` keeps are read, and only the merged rows for
        which the predicate is TRUE are returned.

        >>> sum(t.num_rows for t in Table("rides").snapshot(where="fare > 15"))
        2
        """
        as_of = self.resolve_instant(as_of)
        if as_of is not None:
            self.check_time_travel(as_of)
        self.check_columns(columns)
        slices = self.file_slices(as_of)
        if where is None:
            return self._slices(slices, as_of, columns)
        from .prune import Pruner, SliceFilter, bind_where

        expr = bind_where(self, where)
        pruner = Pruner(self, expr, as_of, "morlog")
        rows = SliceFilter.of(self, expr, columns)
        return self._filtered(slices, as_of, pruner, rows)

    def _slices(self, slices: list[FileSlice], as_of: str | None,
                columns: list[str] | None) -> Iterator[pa.Table]:
        for s in slices:
            t = self.read_slice(s, as_of, columns)
            if t.num_rows:
                yield t

    def _filtered(self, slices: list[FileSlice], as_of: str | None, pruner: Any,
                  rows: Any) -> Iterator[pa.Table]:
        for s in slices:
            if pruner.decide(s).kept:
                t = rows.read(self, s, as_of)
                if t.num_rows:
                    yield t

    def check_time_travel(self, as_of: str) -> None:
        """A :class:`UsageError` naming ``as_of`` and the clean when the last completed
        clean may have deleted files a read as of ``as_of`` needs: ``as_of`` earlier than
        its ``earliestCommitToRetain``, or, when it retains by file versions (no such
        instant), earlier than the first completed write on the timeline (Hudi's
        ``TimelineUtils.validateTimestampAsOf``, spec/services.md §5.5)."""
        cleans = self.timeline.completed(frozenset({"clean"}))
        if not cleans:
            return
        last = cleans[-1]
        keep = self.timeline.metadata(last).get("earliestCommitToRetain") or ""
        if not isinstance(keep, str):
            raise ContentError("earliestCommitToRetain of a clean is not a string",
                               path=self.storage.join(self.timeline.directory, last.file_name))
        if keep:
            if as_of < keep:
                raise UsageError(
                    f"time travel to {as_of}: clean {last.requested} deleted the files of "
                    f"instants before its earliest commit to retain {keep} (Hudi: \"Cleaner "
                    "cleaned up the timestamp of interest\"); retain more commits "
                    "(hoodie.clean.commits.retained) to read that far back",
                    path=self.path, expected=f">= {keep}", actual=as_of)
            return
        first = next((i.requested for i in self.timeline.completed()), None)
        if first is not None and as_of < first:
            raise UsageError(
                f"time travel to {as_of}: before the first completed write {first} on the "
                f"timeline, and clean {last.requested} retains file versions, not commits",
                path=self.path, expected=f">= {first}", actual=as_of)

    def read(self, as_of: str | None = None, columns: list[str] | None = None,
             where: Any = None, *, threads: int | None = None, query_type: str = "snapshot",
             begin: str | None = None, end: str | None = None,
             fallback: bool | None = None) -> pa.Table:
        """The whole snapshot in memory (small tables; prefer :meth:`snapshot`); ``where``:
        only the rows for which that predicate is TRUE (see :meth:`snapshot`). Without
        ``where``, file slices are read and merged on up to ``threads`` threads (default:
        the machine's cores, at most 4), each holding one slice more than the result. A
        column the table does not have is a :class:`UsageError` naming it; a read that finds
        no rows returns no rows with the table's columns (:meth:`empty`).

        >>> Table("rides").read(columns=["uuid", "fare"]).sort_by("uuid").to_pylist()
        [{'uuid': 'a', 'fare': 12.5}, {'uuid': 'b', 'fare': 20.0}, {'uuid': 'c', 'fare': 30.0}]
        >>> Table("rides").read(columns=["nope"])
        Traceback (most recent call last):
        ...
        morlog.logformat.errors.UsageError: ...: unknown column 'nope'; the table's columns are ...

        ``query_type`` (Hudi's ``hoodie.datasource.query.type``, spec/queries.md):
        ``snapshot`` (this read), ``read_optimized`` (:meth:`read_optimized`) or
        ``incremental`` (:meth:`incremental` with ``begin``, ``end`` and ``fallback``).
        """
        if query_type != "snapshot":
            return self._query(query_type, as_of, columns, where, begin, end, fallback)
        if begin is not None or end is not None:
            raise UsageError("begin and end belong to incremental queries "
                             "(query_type='incremental')", path=self.path)
        if where is None:
            as_of = self.resolve_instant(as_of)
            if as_of is not None:
                self.check_time_travel(as_of)
            self.check_columns(columns)
            n = default_threads() if threads is None else max(1, threads)
            parts = [t for t in run_all(lambda s: self.read_slice(s, as_of, columns),
                                        self.file_slices(as_of), n, "morlog-read")
                     if t.num_rows]
        else:
            parts = list(self.snapshot(as_of, columns, where))
        if not parts:
            return self.empty(columns)
        try:
            return pa.concat_tables(parts, promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return pa.concat_tables(parts)

    def _query(self, query_type: str, as_of: str | None, columns: list[str] | None,
               where: Any, begin: str | None, end: str | None,
               fallback: bool | None) -> pa.Table:
        from .incremental import QUERY_TYPES

        if query_type == "read_optimized":
            if begin is not None or end is not None:
                raise UsageError("begin and end belong to incremental queries", path=self.path)
            return self.read_optimized(as_of, columns, where)
        if query_type == "incremental":
            if as_of is not None:
                raise UsageError("an incremental query takes begin and end, not as_of",
                                 path=self.path)
            if begin is None:
                raise UsageError("an incremental query needs begin (an instant, or "
                                 "'earliest'): hoodie.datasource.read.begin.instanttime",
                                 path=self.path)
            return self.incremental(begin, end, columns, where, fallback=fallback)
        raise UsageError("unknown query type (hoodie.datasource.query.type)", path=self.path,
                         expected=list(QUERY_TYPES), actual=query_type)

    def incremental(self, begin: str, end: str | None = None,
                    columns: list[str] | None = None, where: Any = None, *,
                    fallback: bool | None = None) -> pa.Table:
        """Hudi's incremental query (spec/queries.md §3): the latest state, as of the range's
        last instant, of the records written by the completed writes in ``(begin, end]``
        (completion times on table version 8+, instant times on 6; ``begin`` ``"earliest"``:
        from the start; ``end`` None: to the latest). ``begin``/``end`` take the forms of
        ``as_of``. Only the file groups those writes wrote are read. ``fallback``
        (``hoodie.datasource.read.incr.fallback.fulltablescan.enable``, default false): when
        the range reaches archived instants or files a clean deleted, scan every latest file
        slice instead of failing.

        >>> t = Table("rides")
        >>> first, second = [i.completed or i.instant for i in t.instants()]
        >>> t.incremental(first, second, columns=["uuid", "fare"]).to_pylist()
        [{'uuid': 'a', 'fare': 12.5}]
        """
        from .incremental import read_incremental

        return read_incremental(self, begin, end, columns, where, fallback)

    def read_optimized(self, as_of: str | None = None, columns: list[str] | None = None,
                       where: Any = None) -> pa.Table:
        """Hudi's read-optimized query: the rows of the latest file slices' base files (as of
        ``as_of``), no log merged; file groups without a base file give no row.

        >>> Table("rides").read_optimized(columns=["fare"], where="uuid = 'a'").to_pylist()
        [{'fare': 10.0}]
        """
        from .incremental import read_read_optimized

        return read_read_optimized(self, as_of, columns, where)

    def changes(self, begin: str | None = None, end: str | None = None,
                columns: Sequence[str] | None = None) -> pa.Table:
        """Hudi's CDC query (``hoodie.datasource.query.type=incremental`` with
        ``hoodie.datasource.query.incremental.format=cdc``): the record changes of the commits
        after ``begin`` up to ``end`` (``as.of.instant`` forms, ``begin`` also ``earliest``;
        completion times for table version 8+, instant times for 6; None: open), as columns
        ``op`` (``i``/``u``/``d``),
        ``ts_ms`` (the commit's instant), ``before`` and ``after`` (JSON); ``columns``: a
        subset of those. Only for tables with ``hoodie.table.cdc.enabled=true``
        (``morlog.readers.changes``, spec/cdc.md)."""
        from .changes import table_changes
        from .incremental import resolve_bound

        return table_changes(self, resolve_bound(self, begin, "begin"),
                             resolve_bound(self, end, "end"), columns)

    def slice_dir(self, partition: str) -> str:
        """The directory of a partition, checked to lie under the table root (a partition
        name comes from a listing or from commit metadata: never trusted to stay inside)."""
        if not partition:
            return self.path
        check_relative_partition_path(partition)
        return resolve_under(self.path, partition)

    def partitions(self) -> list[str]:
        """Relative partition paths ("" for a non-partitioned table): the directories that
        hold a ``.hoodie_partition_metadata`` file."""
        if not self.config.partition_fields:
            return [""]
        out = []
        stack = [""]
        while stack:
            rel = stack.pop()
            for d in self.storage.subdirs(self.slice_dir(rel)):
                if d.startswith(".") or not _plain_name(d):
                    continue  # hidden, or a name no partition path can have
                child = f"{rel}/{d}" if rel else d
                if PARTITION_METADATA in self.storage.listdir(self.slice_dir(child)):
                    out.append(child)
                stack.append(child)
        return sorted(out)

    def file_slices(self, as_of: str | None = None, partition: str | None = None
                    ) -> list[FileSlice]:
        """The latest file slice of every file group as of ``as_of`` (default: now)."""
        replaced = self.timeline.replaced_file_groups(as_of)
        out = []
        for part in [partition] if partition is not None else self.partitions():
            for s in self._partition_slices(part, self.slice_dir(part), as_of):
                if (part, s.file_id) not in replaced:
                    out.append(s)
        return out

    def _partition_slices(self, part: str, directory: str, as_of: str | None
                          ) -> Iterator[FileSlice]:
        names = self.storage.listdir(directory)
        bases: dict[str, list[BaseFileName]] = {}
        logs: dict[str, list[LogFileName]] = {}
        tl = self.timeline
        for n in names:
            if LogFileName.matches(n):
                ln = LogFileName.parse(n)
                if ln.ext == "log" and not ln.cdc:
                    logs.setdefault(ln.file_id, []).append(ln)
            elif check_base_file(n, self.base_format, self.storage.join(directory, n)):
                bf = BaseFileName.parse(n)
                if tl.is_committed(bf.instant, as_of):
                    bases.setdefault(bf.file_id, []).append(bf)
        for fid in sorted(set(bases) | set(logs)):
            yield self._latest_slice(part, fid, bases.get(fid, []), logs.get(fid, []), as_of)

    def _latest_slice(self, part: str, fid: str, bases: list[BaseFileName],
                      logs: list[LogFileName], as_of: str | None) -> FileSlice:
        base = max(bases, key=lambda b: b.instant) if bases else None
        tl = self.timeline
        mine: list[LogFileName] = []
        if self.version <= 6:
            # logs named after the base instant, plus those of later slices whose base file
            # does not exist yet (a pending compaction): Hudi merges those into this slice
            key = base.instant if base else None
            for ln in logs:
                if key is None or ln.instant >= key:
                    mine.append(ln)
            if key is None and mine:
                # a log-only group: its slice is keyed by the oldest log instant
                key = min(ln.instant for ln in mine)
        else:
            key = base.instant if base else None
            for ln in logs:
                if not tl.is_committed(ln.instant, as_of):
                    continue  # uncommitted log files are not part of any slice (8+)
                done = tl.completion_time(ln.instant) or ln.instant
                if key is None or done >= key:
                    mine.append(ln)
            if key is None and mine:
                key = min(ln.instant for ln in mine)
        mine.sort(key=LogFileName.sort_key)
        return FileSlice(part, fid, key or "", str(base) if base else None,
                         [str(n) for n in mine])
