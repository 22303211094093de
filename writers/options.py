"""Hudi's write options, read into morlog's write settings: one mapping for every writer.

Hudi users configure a write with string options (``hoodie.*`` keys, as in
``df.write.format("hudi").options(**hudi_options)``). :func:`parse_write_options` reads such
a dict into :class:`WriteOptions`: the :class:`~morlog.writers.options.WriteConfig` of the
write, the table-level settings used when the write creates the table, and the operation.
``WriteConfig.from_hoodie_options`` and the Spark data source (``morlog.spark.write``)
both use it.

==============================================  =========================================
option (Hudi's key, or morlog's)                what it sets
==============================================  =========================================
hoodie.table.name                               table name (``hoodie.datasource.write.
                                                table.name`` too)
hoodie.datasource.write.recordkey.field         record key field
hoodie.datasource.write.partitionpath.field     partition field
hoodie.datasource.write.precombine.field        ordering field (Hudi 1.x:
                                                ``hoodie.table.ordering.fields``)
hoodie.datasource.write.operation               upsert (default), insert, bulk_insert (as
                                                insert), delete, insert_overwrite,
                                                insert_overwrite_table, delete_partition
hoodie.datasource.write.partitions.to.delete    delete_partition: comma-separated paths
hoodie.datasource.write.table.type              MERGE_ON_READ (COPY_ON_WRITE refused)
hoodie.write.record.merge.mode                  EVENT_TIME_ORDERING / COMMIT_TIME_ORDERING
                                                (new tables: the payload class)
hoodie.datasource.write.hive_style_partitioning table property (new tables)
hoodie.datasource.write.partitionpath.urlencode table property (new tables)
hoodie.datasource.write.keygenerator.class      table property ``hoodie.table.keygenerator
                                                .class`` (new tables)
hoodie.datasource.write.keygenerator.type       ``hoodie.table.keygenerator.type``
hoodie.logfile.data.block.format                ``carrier``: avro, parquet
                                                (alias ``morlog.carrier``)
hoodie.parquet.max.file.size                    ``max_file_size`` (``morlog.max.file.size``)
hoodie.parquet.small.file.limit                 ``small_file_limit``
                                                (``morlog.small.file.limit``)
hoodie.logfile.to.parquet.compression.ratio     ``log_to_parquet_ratio``
hoodie.write.set.null.for.missing.columns       ``set_null_for_missing_columns``
hoodie.write.lock.wait_time_ms                  ``lock_wait_seconds`` (ms there, s here)
hoodie.datasource.write.reconcile.schema        ``reconcile_schema``
hoodie.datasource.write.new.columns.nullable    ``new_columns_nullable``
hoodie.schema.on.read.enable                    ``schema_on_read`` (spec/table.md §7.8)
hoodie.parquet.compression.codec, .block.size,  ``hoodie_options`` (base files)
.page.size, .dictionary.enabled
hoodie.metadata.enable and the switches of      ``hoodie_options`` (``morlog.writers.mdt.plan``)
each metadata-table partition
hoodie.write.table.version                      ``hoodie_options``: a new table's version
hoodie.orc.compression.codec                    ``hoodie_options`` (ORC base files)
hoodie.metadata.index.column.stats.column.list  ``hoodie_options``: the columns of every
and ...max.columns.to.index                     block's COLUMN_STATS (spec/index.md §4.11.5)
hoodie.compact.*, hoodie.compaction.strategy,   ``hoodie_options``: compaction
.logfile.size.threshold, .target.io             (``morlog.writers.services.compaction``)
hoodie.log.compaction.*, hoodie.logfile.data    ``hoodie_options``: log compaction
.block.max.size                                 (``morlog.writers.services.logcompaction``)
hoodie.record.index.update.partition.path       ``hoodie_options``: with morlog's record
                                                index, a key given another partition moves
                                                there (true) or is written where it lives
                                                (false, Hudi's default; spec/rli.md §4a)
hoodie.clean.* / hoodie.cleaner.* (policy,      ``hoodie_options``: the cleaner
retained commits/versions/hours, automatic,     (``morlog.writers.services.cleaning``)
trigger, incremental mode)
morlog.new.groups                               ``new_groups``: base, log
morlog.route.inserts                            ``route_inserts``: true, false
morlog.record.size                              ``record_size``: bytes per record, fixed
hoodie.copyonwrite.record.size.estimate         ``record_size_estimate``: bytes per record
                                                until past commits measure it
                                                (``morlog.writers.core.sizing``)
hoodie.record.size.estimation.threshold         ``record_size_threshold``: files larger than
                                                this x small.file.limit measure it
_hoodie.record.size.estimator.max.commits       ``record_size_max_commits``: commits read
morlog.write.threads                            ``write_threads``: file groups written at
                                                once (default: cores, at most 4)
morlog.base.key.index                           ``base_key_index``: true (default), false:
                                                a base-key index beside each base file
==============================================  =========================================

Options of Hudi that only tune how Hudi's own engine runs (:data:`IGNORED_HOODIE_OPTIONS`:
shuffle parallelism, markers, the timeline server...) are accepted and ignored. Any other
option is a :class:`~morlog.logformat.errors.UsageError` naming it: an unknown ``morlog.*``
option, a ``hoodie.*`` option morlog does not implement, or anything else. The Spark data
source also takes ``path`` and the short aliases ``table``, ``key``, ``partition``,
``ordering``, ``operation`` (:data:`SPARK_ALIASES`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import morlog.config as conf
from morlog.logformat.cdc import logging_mode
from morlog.logformat.column_stats_section import COLUMN_LIST_KEY, MAX_COLUMNS_KEY
from morlog.logformat.errors import UsageError
from morlog.writers.core.base_file import (
    BLOCK_SIZE,
    COMPRESSION_CODEC,
    DICTIONARY_ENABLED,
    PAGE_SIZE,
    positive_int,
)
from morlog.writers.core.logwriter import Mode
from morlog.writers.core.sizing import (
    DEFAULT_ESTIMATION_THRESHOLD,
    DEFAULT_ESTIMATOR_MAX_COMMITS,
    DEFAULT_RECORD_SIZE_ESTIMATE,
    ESTIMATION_THRESHOLD,
    ESTIMATOR_MAX_COMMITS,
    RECORD_SIZE_ESTIMATE,
)
from morlog.writers.core.store import (
    DEFAULT_LEASE_SECONDS,
)
from morlog.writers.core.tagging import UPDATE_PARTITION_PATH
from morlog.writers.mdt.plan import METADATA_SWITCHES
from morlog.writers.services.cleaning import BOOLEAN_KEYS as CLEAN_BOOLEANS
from morlog.writers.services.cleaning import OPTION_KEYS as CLEAN_OPTIONS
from morlog.writers.services.compaction import BOOLEAN_KEYS as COMPACTION_BOOLEANS
from morlog.writers.services.compaction import OPTION_KEYS as COMPACTION_OPTIONS
from morlog.writers.services.logcompaction import INLINE as LOG_COMPACTION_INLINE
from morlog.writers.services.logcompaction import SETTINGS as LOG_COMPACTION_OPTIONS

if TYPE_CHECKING:

    from morlog.writers.client import MorTable

@dataclass
class WriteConfig:
    """Knobs of the write path; Hudi's names where Hudi has the same knob.

    >>> WriteConfig.from_hoodie_options({"hoodie.parquet.max.file.size": "1048576"}
    ...                                 ).max_file_size
    1048576
    """

    #: hoodie.parquet.max.file.size
    max_file_size: int = conf.default_int(conf.PARQUET_MAX_FILE_SIZE)
    #: hoodie.parquet.small.file.limit
    small_file_limit: int = conf.default_int(conf.PARQUET_SMALL_FILE_LIMIT)
    #: hoodie.logfile.to.parquet.compression.ratio
    log_to_parquet_ratio: float = conf.default_float(conf.LOGFILE_TO_PARQUET_RATIO)
    #: where inserts that fit nowhere go: new file groups with a base file, or log-only groups
    new_groups: Literal["base", "log"] = "base"
    #: carrier of indexed blocks
    carrier: Literal["avro", "parquet"] = "avro"
    #: log writes: append to the newest log file, or a new log version per write (None:
    #: append where the storage can, rollover on object stores)
    mode: Mode | None = None
    fsync: bool = True
    #: bytes per record in a Parquet base file, fixed (``morlog.record.size``; None: Hudi's
    #: estimate from past commits, ``morlog.writers.core.sizing``)
    record_size: int | None = None
    #: hoodie.copyonwrite.record.size.estimate: bytes per record before a commit measured one
    record_size_estimate: int = DEFAULT_RECORD_SIZE_ESTIMATE
    #: hoodie.record.size.estimation.threshold: a written base file measures the record size
    #: when larger than this times ``small_file_limit``
    record_size_threshold: float = DEFAULT_ESTIMATION_THRESHOLD
    #: _hoodie.record.size.estimator.max.commits: the newest commits the estimate reads
    record_size_max_commits: int = DEFAULT_ESTIMATOR_MAX_COMMITS
    #: route inserts into existing small file groups (False: every batch's inserts go to new
    #: file groups, as Hudi does on MOR with indexes that cannot look into logs)
    route_inserts: bool = conf.default_bool(conf.ROUTE_INSERTS)
    #: on a file system without atomic exclusive create (other than local and S3): the
    #: caller guarantees that no other writer writes the table
    single_writer: bool = False
    #: S3: how long the writer lock object holds (a commit must finish within it; a writer
    #: that died leaves a lock that the next writer takes over after this time)
    lock_lease_seconds: float = DEFAULT_LEASE_SECONDS
    #: hoodie.write.lock.wait_time_ms (in seconds here): how long a writer waits for
    #: another writer's lock before it fails with ConcurrentWriterError (0: fails at once)
    lock_wait_seconds: float = conf.default_int(conf.LOCK_WAIT_TIME_MS) / 1000
    #: hoodie.write.set.null.for.missing.columns: a batch without a nullable data column
    #: is refused (False, Hudi's default) or written with NULL in that column (True: the
    #: stored value of an updated record is replaced by NULL, as in Hudi)
    set_null_for_missing_columns: bool = conf.default_bool(conf.SET_NULL_FOR_MISSING_COLUMNS)
    #: hoodie.datasource.write.reconcile.schema: a batch lacking table columns is written
    #: under the table's schema (those columns NULL) instead of refused, as Hudi's legacy
    #: reconciliation picks the wider schema (``morlog.writers.core.evolution``)
    reconcile_schema: bool = conf.default_bool(conf.RECONCILE_SCHEMA)
    #: hoodie.datasource.write.new.columns.nullable: a new column the batch declares not
    #: nullable is added as nullable (True) or refused (False, Hudi's default)
    new_columns_nullable: bool = conf.default_bool(conf.NEW_COLUMNS_NULLABLE)
    #: hoodie.schema.on.read.enable: Hudi's schema-on-read evolution. A table with an
    #: internal schema history is written keeping it (each commit records its version)
    #: whatever this setting; a table without one gets none (spec/table.md §7.8)
    schema_on_read: bool = conf.default_bool(conf.SCHEMA_ON_READ_ENABLE)
    #: Hudi write settings that are not table properties, by Hudi's keys; today the base
    #: files' ``hoodie.parquet.compression.codec`` / ``.block.size`` / ``.page.size`` /
    #: ``.dictionary.enabled`` (``morlog.writers.core.base_file``; Hudi's defaults otherwise)
    hoodie_options: dict[str, str] = field(default_factory=dict)
    #: file groups of a commit written at once (threads: Parquet and Avro encoding release
    #: the GIL); None: the machine's cores, at most 4; 1: one after the other
    write_threads: int | None = None
    #: a base-key index beside every base file written (``morlog.readers.base_keys``):
    #: tagging reads it instead of the file's footer filter and key column
    base_key_index: bool = conf.default_bool(conf.BASE_KEY_INDEX)
    #: entries added to the ``extraMetadata`` of every data commit of this config (not of
    #: services' commits): the streaming sink's checkpoint (``morlog.spark.stream``)
    commit_metadata: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_hoodie_options(cls, options: Mapping[str, object]) -> WriteConfig:
        """The config that Hudi's write options (``hoodie.*`` keys, and ``morlog.*``)
        describe; the keys and what they map to: ``morlog.writers.options``. An option
        morlog does not know is a :class:`UsageError` naming it; table-level options
        (key, partition, ordering fields...) are accepted and left to table creation."""
        return parse_write_options(options).config


#: hoodie.properties key of Hudi's partition URL-encoding (HoodieTableConfig
#: URL_ENCODE_PARTITIONING, from KeyGeneratorOptions; default false)
URLENCODE_PROPERTY = conf.URL_ENCODE_PARTITIONING


#: Hudi's write option choosing the table version of a new table
WRITE_TABLE_VERSION = conf.WRITE_TABLE_VERSION


TABLE_NAME = conf.TABLE_NAME
RECORDKEY_FIELD = conf.WRITE_RECORDKEY_FIELD
PARTITIONPATH_FIELD = conf.WRITE_PARTITIONPATH_FIELD
PRECOMBINE_FIELD = conf.WRITE_PRECOMBINE_FIELD
ORDERING_FIELDS = conf.ORDERING_FIELDS
OPERATION = conf.WRITE_OPERATION
PARTITIONS_TO_DELETE = conf.WRITE_PARTITIONS_TO_DELETE
TABLE_TYPE = conf.WRITE_TABLE_TYPE
MERGE_MODE = conf.WRITE_RECORD_MERGE_MODE
HIVE_STYLE = conf.HIVE_STYLE_PARTITIONING
URLENCODE = conf.URL_ENCODE_PARTITIONING
KEYGEN_CLASS = conf.WRITE_KEYGEN_CLASS
KEYGEN_TYPE = conf.WRITE_KEYGEN_TYPE
BLOCK_FORMAT = conf.LOGFILE_DATA_BLOCK_FORMAT
METADATA_ENABLE = conf.METADATA_ENABLE
STATS_COLUMN_LIST = COLUMN_LIST_KEY
STATS_MAX_COLUMNS = MAX_COLUMNS_KEY

#: the write operations (Hudi's names) and what morlog runs for each
OPERATIONS = {"upsert": "upsert", "insert": "insert", "bulk_insert": "insert",
              "delete": "delete", "insert_overwrite": "insert_overwrite",
              "insert_overwrite_table": "insert_overwrite_table",
              "delete_partition": "delete_partition"}

#: Hudi options that only tune Hudi's own engine (parallelism, markers, its timeline server,
#: its row writer, sort modes, its file-size estimate): accepted and ignored
IGNORED_HOODIE_OPTIONS = frozenset({
    conf.UPSERT_SHUFFLE_PARALLELISM,
    conf.INSERT_SHUFFLE_PARALLELISM,
    conf.BULKINSERT_SHUFFLE_PARALLELISM,
    conf.DELETE_SHUFFLE_PARALLELISM,
    conf.FINALIZE_WRITE_PARALLELISM,
    conf.MARKERS_DELETE_PARALLELISM,
    conf.ROLLBACK_PARALLELISM,
    conf.EMBED_TIMELINE_SERVER,
    conf.WRITE_MARKERS_TYPE,
    conf.ROW_WRITER_ENABLE,
    conf.BULKINSERT_SORT_MODE,
    conf.PARQUET_COMPRESSION_RATIO,
})

#: the Spark data source's own keys and short aliases -> the Hudi key they stand for
SPARK_ALIASES = {"path": "path", "table": TABLE_NAME, "key": RECORDKEY_FIELD,
                 "partition": PARTITIONPATH_FIELD, "ordering": PRECOMBINE_FIELD,
                 "operation": OPERATION}

_TABLE_FIELDS = {TABLE_NAME: "table_name", conf.WRITE_TABLE_NAME: "table_name",
                 RECORDKEY_FIELD: "key", PARTITIONPATH_FIELD: "partition",
                 PRECOMBINE_FIELD: "ordering", ORDERING_FIELDS: "ordering"}
#: write options that become table properties of a new table (key in hoodie.properties)
_TABLE_PROPERTIES = {HIVE_STYLE: HIVE_STYLE, URLENCODE: URLENCODE_PROPERTY,
                     KEYGEN_CLASS: conf.KEYGEN_CLASS,
                     KEYGEN_TYPE: conf.KEYGEN_TYPE,
                     # change data capture of a new table (spec/cdc.md)
                     conf.TABLE_CDC_ENABLED: conf.TABLE_CDC_ENABLED,
                     conf.TABLE_CDC_LOGGING_MODE: conf.TABLE_CDC_LOGGING_MODE}
_BOOLEAN_PROPERTIES = {HIVE_STYLE, URLENCODE, conf.TABLE_CDC_ENABLED}
#: options kept in WriteConfig.hoodie_options under their own keys
_HOODIE_OPTIONS = {COMPRESSION_CODEC, BLOCK_SIZE, PAGE_SIZE, DICTIONARY_ENABLED,
                   METADATA_ENABLE, *METADATA_SWITCHES, WRITE_TABLE_VERSION,
                   conf.ORC_COMPRESSION_CODEC, *CLEAN_OPTIONS, *COMPACTION_OPTIONS,
                   *LOG_COMPACTION_OPTIONS, STATS_COLUMN_LIST, STATS_MAX_COLUMNS,
                   UPDATE_PARTITION_PATH}
_BOOLEAN_OPTIONS = {DICTIONARY_ENABLED, *METADATA_SWITCHES, *CLEAN_BOOLEANS,
                    *COMPACTION_BOOLEANS, LOG_COMPACTION_INLINE, UPDATE_PARTITION_PATH}
_INTS = {conf.PARQUET_MAX_FILE_SIZE: "max_file_size",
         conf.MAX_FILE_SIZE: "max_file_size",
         conf.PARQUET_SMALL_FILE_LIMIT: "small_file_limit",
         conf.SMALL_FILE_LIMIT: "small_file_limit",
         conf.RECORD_SIZE: "record_size",
         RECORD_SIZE_ESTIMATE: "record_size_estimate",
         ESTIMATOR_MAX_COMMITS: "record_size_max_commits",
         conf.WRITE_THREADS: "write_threads"}
_CHOICES = {BLOCK_FORMAT: ("carrier", ("avro", "parquet")),
            conf.CARRIER: ("carrier", ("avro", "parquet")),
            conf.NEW_GROUPS: ("new_groups", ("base", "log"))}
_BOOLS = {conf.SET_NULL_FOR_MISSING_COLUMNS: "set_null_for_missing_columns",
          conf.RECONCILE_SCHEMA: "reconcile_schema",
          conf.NEW_COLUMNS_NULLABLE: "new_columns_nullable",
          conf.SCHEMA_ON_READ_ENABLE: "schema_on_read",
          conf.ROUTE_INSERTS: "route_inserts",
          conf.BASE_KEY_INDEX: "base_key_index"}
_FLOATS = {conf.LOGFILE_TO_PARQUET_RATIO: "log_to_parquet_ratio"}
#: floats that may be 0
_NON_NEGATIVE_FLOATS = {ESTIMATION_THRESHOLD: "record_size_threshold"}


@dataclass
class WriteOptions:
    """A write described by Hudi's options: its config, the table it creates (if it does)
    and its operation."""

    config: WriteConfig = field(default_factory=WriteConfig)
    #: the morlog operation (``bulk_insert`` read as ``insert``)
    operation: str = "upsert"
    #: the operation as given (Hudi's name)
    operation_name: str = "upsert"
    table_name: str | None = None
    key: str | None = None
    partition: str | None = None
    ordering: str | None = None
    #: delete_partition: the partition paths named (None: the batch's partitions)
    partitions_to_delete: list[str] | None = None
    #: hoodie.write.record.merge.mode (None: by whether there is an ordering field)
    event_time_ordering: bool | None = None
    #: hoodie.properties entries for a new table
    table_properties: dict[str, str] = field(default_factory=dict)
    #: the Spark source's ``path`` option
    path: str | None = None

    def check_table(self, table: MorTable) -> None:
        """A :class:`UsageError` when an option contradicts the existing table's settings
        (Hudi refuses such a write too)."""
        given = {"table name": (self.table_name, table.props.get(TABLE_NAME)),
                 "record key field": (self.key, table.key_field),
                 "partition field": (self.partition, table.partition_field or ""),
                 "ordering field": (self.ordering, ",".join(table.ordering_fields))}
        for what, (mine, theirs) in given.items():
            if mine is not None and mine != (theirs or ""):
                raise UsageError(f"the {what} differs from the table's", path=table.uri,
                                 expected=theirs, actual=mine)


def parse_write_options(options: Mapping[str, object], *,
                        spark_aliases: bool = False) -> WriteOptions:
    """:class:`WriteOptions` from Hudi's write options (values as strings, or as Python
    values that print as Hudi expects); ``spark_aliases``: also the Spark source's ``path``
    and short aliases. Every option is checked; see the module's table."""
    out = WriteOptions()
    cfg = out.config
    fields: dict[str, str] = {}
    for raw_key, raw_value in options.items():
        key = str(raw_key).strip().lower()
        value = _text(raw_value)
        if spark_aliases and key in SPARK_ALIASES:
            if key == "path":
                out.path = value
                continue
            key = SPARK_ALIASES[key]
        if key in _TABLE_FIELDS:
            name = _TABLE_FIELDS[key]
            if name in fields and fields[name] != value:
                raise UsageError(f"{raw_key} contradicts another option for the {name}",
                                 expected=fields[name], actual=value)
            fields[name] = value
        elif key == OPERATION:
            op = value.lower()
            if op not in OPERATIONS:
                raise UsageError(f"unsupported {OPERATION}", expected=sorted(OPERATIONS),
                                 actual=value)
            out.operation, out.operation_name = OPERATIONS[op], op
        elif key == PARTITIONS_TO_DELETE:
            out.partitions_to_delete = [p.strip() for p in value.split(",") if p.strip()]
        elif key == TABLE_TYPE:
            if value.upper() != "MERGE_ON_READ":
                raise UsageError(f"morlog writes merge-on-read tables only: {TABLE_TYPE}="
                                 f"{value}", expected="MERGE_ON_READ", actual=value)
        elif key == MERGE_MODE:
            modes = {"EVENT_TIME_ORDERING": True, "COMMIT_TIME_ORDERING": False}
            if value.upper() not in modes:
                raise UsageError(f"unsupported {MERGE_MODE}", expected=sorted(modes),
                                 actual=value)
            out.event_time_ordering = modes[value.upper()]
        elif key in _TABLE_PROPERTIES:
            if key in _BOOLEAN_PROPERTIES:
                value = str(_bool(key, value)).lower()
            elif key == conf.TABLE_CDC_LOGGING_MODE:
                value = logging_mode(value)
            out.table_properties[_TABLE_PROPERTIES[key]] = value
        elif key in _HOODIE_OPTIONS:
            if key in _BOOLEAN_OPTIONS:
                value = str(_bool(key, value)).lower()
            cfg.hoodie_options[key] = value
        elif key in _INTS:
            setattr(cfg, _INTS[key], positive_int(key, value))
        elif key in _CHOICES:
            attr, choices = _CHOICES[key]
            if value.lower() not in choices:
                raise UsageError(f"unsupported {key}", expected=list(choices), actual=value)
            setattr(cfg, attr, value.lower())
        elif key in _BOOLS:
            setattr(cfg, _BOOLS[key], _bool(key, value))
        elif key in _FLOATS:
            setattr(cfg, _FLOATS[key], _float(key, value))
        elif key in _NON_NEGATIVE_FLOATS:
            setattr(cfg, _NON_NEGATIVE_FLOATS[key], _float(key, value, zero=True))
        elif key == conf.LOCK_WAIT_TIME_MS:
            cfg.lock_wait_seconds = _float(key, value, zero=True) / 1000
        elif key in IGNORED_HOODIE_OPTIONS:
            continue
        else:
            raise UsageError(_unknown(raw_key, key), actual=str(raw_key))
    out.table_name = fields.get("table_name")
    out.key = fields.get("key")
    out.partition = fields.get("partition")
    out.ordering = fields.get("ordering")
    if out.key is not None and "," in out.key:
        raise UsageError(f"morlog writes tables with one record key field: {RECORDKEY_FIELD}",
                         actual=out.key)
    return out


def _unknown(raw: object, key: str) -> str:
    if key.startswith("morlog."):
        return f"unknown morlog option {raw!r}"
    if key.startswith("hoodie."):
        return f"unsupported Hudi write option {raw!r} (morlog does not implement it)"
    return f"unknown write option {raw!r}"


def _text(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value).strip()


def _float(key: str, value: str, *, zero: bool = False) -> float:
    try:
        x = float(value)
    except ValueError:
        raise UsageError(f"{key} must be a number", actual=value) from None
    if not (0 <= x if zero else 0 < x) or not x < float("inf"):
        raise UsageError(f"{key} must be {'0 or more' if zero else 'positive'}", actual=value)
    return x


def _bool(key: str, value: str) -> bool:
    v = value.lower()
    if v not in ("true", "false"):
        raise UsageError(f"{key} must be true or false", actual=value)
    return v == "true"


__all__ = ["BLOCK_FORMAT", "HIVE_STYLE", "IGNORED_HOODIE_OPTIONS", "KEYGEN_CLASS", "KEYGEN_TYPE",
           "MERGE_MODE", "METADATA_ENABLE", "OPERATION", "OPERATIONS", "ORDERING_FIELDS",
           "PARTITIONPATH_FIELD", "PARTITIONS_TO_DELETE", "PRECOMBINE_FIELD", "RECORDKEY_FIELD",
           "SPARK_ALIASES", "STATS_COLUMN_LIST", "STATS_MAX_COLUMNS", "TABLE_NAME", "TABLE_TYPE",
           "URLENCODE", "URLENCODE_PROPERTY", "WRITE_TABLE_VERSION", "WriteConfig", "WriteOptions",
           "parse_write_options"]
