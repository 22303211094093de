"""Every option morlog honours, in one place: the ``hoodie.*`` keys (Hudi's names, for the
settings Hudi has too) and morlog's own ``morlog.*`` keys, with morlog's default, the type of
the value, where the key applies and what it means.

This is the lowest layer: it imports nothing of morlog, so every layer spells an option as
the constant defined here (``from morlog.config import TABLE_VERSION``). :data:`OPTIONS` is
the registry, keyed by option name; :func:`render_markdown` writes the reference
``docs/options.md`` (``python -m morlog.config > docs/options.md``; a test checks the file
is current, another that every ``hoodie.*``/``morlog.*`` key spelled in the code is here).

Where an option applies (:class:`Scope`):

- ``table``: a table property, in ``.hoodie/hoodie.properties``; read by every reader and
  writer, written when morlog creates a table (or a service changes it);
- ``write``: a write option (``MorTable(..., config=WriteConfig.from_hoodie_options(...))``,
  ``parse_write_options``, the Spark data source's ``df.write.options(...)``), also read
  from the table's properties by the table services;
- ``commit``: a key of the ``extraMetadata`` morlog writes into its commits and plans;
- ``file``: a key of the key/value metadata morlog writes into its base files.

The default is what morlog uses when the key is absent: Hudi's default where Hudi has the
same setting (``hudi_source`` names the Hudi config class and constant it was read from,
apache/hudi), ``None`` where there is none (the value is derived, required or absent).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Scope(StrEnum):
    """Where an option applies."""

    TABLE = "table"
    WRITE = "write"
    COMMIT = "commit"
    FILE = "file"
    READ = "read"


#: the meaning of each scope in the reference
SCOPE_DOC = {
    Scope.TABLE: "table property (.hoodie/hoodie.properties)",
    Scope.WRITE: "write option (WriteConfig / parse_write_options / Spark writer options; "
                 "table services also read it from the table's properties)",
    Scope.COMMIT: "extraMetadata key morlog writes into its commits and plans",
    Scope.FILE: "key/value metadata key morlog writes into its base files",
    Scope.READ: "read option (Spark reader options; Table.read arguments; morlog snapshot "
                "flags)",
}


@dataclass(frozen=True)
class ConfigOption:
    """One option morlog honours (reads or writes)."""

    #: the option's name (Hudi's key, or morlog's own ``morlog.*``)
    key: str
    #: morlog's default when the key is absent (as the string form of the value); None:
    #: no default (derived from other settings, required, or simply absent)
    default: str | None
    #: the value's type: ``string``, ``int``, ``float``, ``bool``, ``enum``, ``class``,
    #: ``list`` (comma-separated), ``json``
    type: str
    scope: Scope
    #: the group of the reference this option is listed in
    area: str
    #: one line: what the option means to morlog
    doc: str
    #: the Hudi config class (and constant) defining the same key; None for morlog's own
    hudi_source: str | None = None


#: every option morlog honours, by key, in the order defined here
OPTIONS: dict[str, ConfigOption] = {}
#: the reference's groups, in their order
AREAS = ("table", "keys and partitions", "merging", "timeline", "metadata table",
         "base files", "log files", "write", "compaction", "log compaction", "cleaning",
         "record index", "queries", "Hudi engine tuning (accepted, ignored)", "commit metadata",
         "file metadata")


def _o(key: str, default: str | None, type_: str, scope: Scope, area: str, doc: str,
       hudi: str | None = None) -> str:
    """Register one option and return its key (the module's constant for it)."""
    assert key not in OPTIONS, key
    assert area in AREAS, area
    OPTIONS[key] = ConfigOption(key, default, type_, scope, area, doc, hudi)
    return key


T, W, C, F = Scope.TABLE, Scope.WRITE, Scope.COMMIT, Scope.FILE
_TC = "HoodieTableConfig"
_DS = "DataSourceWriteOptions"

# --- table -----------------------------------------------------------------------------------
TABLE_TYPE = _o("hoodie.table.type", "COPY_ON_WRITE", "enum", T, "table",
                "MERGE_ON_READ or COPY_ON_WRITE; morlog writes merge-on-read tables only",
                f"{_TC}.TYPE")
TABLE_VERSION = _o("hoodie.table.version", None, "int", T, "table",
                   "the table's format version (6, 8 or 9); required to read a table",
                   f"{_TC}.VERSION")
TABLE_INITIAL_VERSION = _o("hoodie.table.initial.version", None, "int", T, "table",
                           "the version the table was created with (written at creation)",
                           f"{_TC}.INITIAL_VERSION")
TABLE_NAME = _o("hoodie.table.name", "", "string", T, "table",
                "the table's name (also the write option naming a new table)",
                f"{_TC}.NAME")
DATABASE_NAME = _o("hoodie.database.name", "", "string", T, "table",
                   "the database name, part of the table checksum", f"{_TC}.DATABASE_NAME")
TABLE_CHECKSUM = _o("hoodie.table.checksum", None, "int", T, "table",
                    "checksum of the table and database names; checks hoodie.properties",
                    f"{_TC}.TABLE_CHECKSUM")
TABLE_CREATE_SCHEMA = _o("hoodie.table.create.schema", None, "json", T, "table",
                         "the Avro schema the table was created with (the writer schema "
                         "before any commit)", f"{_TC}.CREATE_SCHEMA")
TABLE_FORMAT = _o("hoodie.table.format", "native", "string", T, "table",
                  "the table format; morlog writes Hudi's native format only",
                  f"{_TC}.TABLE_FORMAT")
TABLE_CDC_ENABLED = _o("hoodie.table.cdc.enabled", "false", "bool", T, "table",
                       "change-data-capture: the CDC query reads the table's changes "
                       "(spec/cdc.md); morlog writes CDC log files in data_before_after mode",
                       f"{_TC}.CDC_ENABLED")
TABLE_CDC_LOGGING_MODE = _o("hoodie.table.cdc.supplemental.logging.mode", "DATA_BEFORE_AFTER",
                            "enum", T, "table",
                            "what a CDC log record holds: OP_KEY_ONLY, DATA_BEFORE or "
                            "DATA_BEFORE_AFTER (spec/cdc.md §2)",
                            f"{_TC}.CDC_SUPPLEMENTAL_LOGGING_MODE")
BOOTSTRAP_BASE_PATH = _o("hoodie.bootstrap.base.path", None, "string", T, "table",
                         "the source of a bootstrapped table; morlog refuses to write one",
                         f"{_TC}.BOOTSTRAP_BASE_PATH")
POPULATE_META_FIELDS = _o("hoodie.populate.meta.fields", "true", "bool", T, "table",
                          "data files carry the _hoodie_* meta columns (false: virtual keys)",
                          f"{_TC}.POPULATE_META_FIELDS")
BASE_FILE_FORMAT = _o("hoodie.table.base.file.format", "PARQUET", "enum", T, "table",
                      "the base file format: PARQUET, ORC, HFILE or LANCE",
                      f"{_TC}.BASE_FILE_FORMAT")
RO_FILE_FORMAT = _o("hoodie.table.ro.file.format", None, "enum", T, "table",
                    "older name of hoodie.table.base.file.format, read when that is absent",
                    f"{_TC}.BASE_FILE_FORMAT (alternative)")
INDEX_DEFS_PATH = _o("hoodie.table.index.defs.path", None, "string", T, "table",
                     "relative path of the index definitions (secondary and expression "
                     "indexes, column stats columns)", f"{_TC}.RELATIVE_INDEX_DEFINITION_PATH")

# --- keys and partitions ---------------------------------------------------------------------
_KG = "KeyGeneratorOptions"
RECORDKEY_FIELDS = _o("hoodie.table.recordkey.fields", None, "list", T, "keys and partitions",
                      "the record key field(s); morlog writes keyed tables only",
                      f"{_TC}.RECORDKEY_FIELDS")
PARTITION_FIELDS = _o("hoodie.table.partition.fields", "", "list", T, "keys and partitions",
                      "the partition field(s) (empty: a non-partitioned table)",
                      f"{_TC}.PARTITION_FIELDS")
KEYGEN_CLASS = _o("hoodie.table.keygenerator.class", None, "class", T, "keys and partitions",
                  "the key generator class (simple, complex, timestamp, custom, non-partitioned)",
                  f"{_TC}.KEY_GENERATOR_CLASS_NAME")
KEYGEN_TYPE = _o("hoodie.table.keygenerator.type", None, "enum", T, "keys and partitions",
                 "the key generator by type name (SIMPLE, COMPLEX, TIMESTAMP, ...)",
                 f"{_TC}.KEY_GENERATOR_TYPE")
HIVE_STYLE_PARTITIONING = _o("hoodie.datasource.write.hive_style_partitioning", "false",
                             "bool", T, "keys and partitions",
                             "partition folders named field=value",
                             f"{_TC}.HIVE_STYLE_PARTITIONING_ENABLE")
URL_ENCODE_PARTITIONING = _o("hoodie.datasource.write.partitionpath.urlencode", "false",
                             "bool", T, "keys and partitions",
                             "partition values URL-encoded in the partition path",
                             f"{_TC}.URL_ENCODE_PARTITIONING")
DROP_PARTITION_COLUMNS = _o("hoodie.datasource.write.drop.partition.columns", "false", "bool",
                            T, "keys and partitions",
                            "data files hold no partition columns (read from the path)",
                            f"{_TC}.DROP_PARTITION_COLUMNS")
COMPLEX_KEYGEN_ENCODING = _o("hoodie.table.complex.keygen.encoding", None, "enum", T,
                             "keys and partitions",
                             "how the complex key generator's single-field keys are encoded: "
                             "FIELD_PREFIXED or VALUE_ONLY (unset: from the table version)",
                             f"{_TC} (Hudi 1.1.1+; not in the Hudi source read)")
WRITE_RECORDKEY_FIELD = _o("hoodie.datasource.write.recordkey.field", None, "list", W,
                           "keys and partitions", "record key field(s) of a new table",
                           f"{_KG}.RECORDKEY_FIELD_NAME")
WRITE_PARTITIONPATH_FIELD = _o("hoodie.datasource.write.partitionpath.field", None, "list", W,
                               "keys and partitions", "partition field(s) of a new table",
                               f"{_KG}.PARTITIONPATH_FIELD_NAME")
WRITE_KEYGEN_CLASS = _o("hoodie.datasource.write.keygenerator.class", None, "class", W,
                        "keys and partitions",
                        "key generator class of a new table (hoodie.table.keygenerator.class)",
                        "HoodieWriteConfig.KEYGENERATOR_CLASS_NAME")
WRITE_KEYGEN_TYPE = _o("hoodie.datasource.write.keygenerator.type", None, "enum", W,
                       "keys and partitions",
                       "key generator type of a new table (hoodie.table.keygenerator.type)",
                       "HoodieWriteConfig.KEYGENERATOR_TYPE")
SLASH_SEPARATED_DATE = _o("hoodie.datasource.write.slash.separated.date.partitioning", "false",
                          "bool", W, "keys and partitions",
                          "timestamp partition values yyyy/MM/dd as nested folders",
                          f"{_KG}.SLASH_SEPARATED_DATE_PARTITIONING")
CONSISTENT_LOGICAL_TIMESTAMP = _o(
    "hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled", "false",
    "bool", W, "keys and partitions",
    "logical timestamp key values rendered as Spark's row writer does",
    f"{_KG}.KEYGENERATOR_CONSISTENT_LOGICAL_TIMESTAMP_ENABLED")
COMPLEX_KEYGEN_NEW_ENCODING = _o("hoodie.write.complex.keygen.new.encoding", "false", "bool",
                                 W, "keys and partitions",
                                 "tables of version 8 and below: the complex key generator's "
                                 "single-field key without the field name",
                                 "HoodieWriteConfig.COMPLEX_KEYGEN_NEW_ENCODING")
KEYGEN_DATETIME_PARSER = _o("hoodie.keygen.datetime.parser.class",
                            "org.apache.hudi.keygen.parser.HoodieDateTimeParser", "class", W,
                            "keys and partitions",
                            "the timestamp key generator's parser (only Hudi's own is "
                            "implemented)", "TimestampKeyGeneratorConfig")
KEYGEN_DATETIME_PARSER_OLD = _o("hoodie.deltastreamer.keygen.datetime.parser.class", None,
                                "class", W, "keys and partitions",
                                "older name of hoodie.keygen.datetime.parser.class",
                                "TimestampKeyGeneratorConfig")
#: the prefix of the timestamp key generator's settings, and its older spelling
TIMESTAMP_KEYGEN_PREFIX = "hoodie.keygen.timebased."
TIMESTAMP_KEYGEN_PREFIX_OLD = "hoodie.deltastreamer.keygen.timebased."
_TS = "TimestampKeyGeneratorConfig"
TS_TYPE = _o(TIMESTAMP_KEYGEN_PREFIX + "timestamp.type", None, "enum", W,
             "keys and partitions",
             "timestamp key generator: UNIX_TIMESTAMP, EPOCHMILLISECONDS, EPOCHMICROSECONDS, "
             "SCALAR, DATE_STRING or MIXED", f"{_TS}.TIMESTAMP_TYPE_FIELD")
TS_SCALAR_UNIT = _o(TIMESTAMP_KEYGEN_PREFIX + "timestamp.scalar.time.unit", "SECONDS", "enum",
                    W, "keys and partitions", "SCALAR timestamps: the Java TimeUnit",
                    f"{_TS}.INPUT_TIME_UNIT")
TS_INPUT_FORMAT = _o(TIMESTAMP_KEYGEN_PREFIX + "input.dateformat", "", "string", W,
                     "keys and partitions",
                     "DATE_STRING/MIXED: the input pattern(s), comma-separated",
                     f"{_TS}.TIMESTAMP_INPUT_DATE_FORMAT")
TS_INPUT_DELIMITER = _o(TIMESTAMP_KEYGEN_PREFIX + "input.dateformat.list.delimiter.regex",
                        ",", "string", W, "keys and partitions",
                        "the delimiter between input patterns (only , is supported)",
                        f"{_TS}.TIMESTAMP_INPUT_DATE_FORMAT_LIST_DELIMITER_REGEX")
TS_INPUT_TZ = _o(TIMESTAMP_KEYGEN_PREFIX + "input.timezone", None, "string", W,
                 "keys and partitions",
                 "the zone of input date strings (unset: the zone the string names)",
                 f"{_TS}.TIMESTAMP_INPUT_TIMEZONE_FORMAT")
TS_OUTPUT_FORMAT = _o(TIMESTAMP_KEYGEN_PREFIX + "output.dateformat", "", "string", W,
                      "keys and partitions", "the partition path pattern",
                      f"{_TS}.TIMESTAMP_OUTPUT_DATE_FORMAT")
TS_OUTPUT_TZ = _o(TIMESTAMP_KEYGEN_PREFIX + "output.timezone", None, "string", W,
                  "keys and partitions",
                  "the zone of the partition path (unset: the parsed string's; numeric "
                  "timestamps need one)",
                  f"{_TS}.TIMESTAMP_OUTPUT_TIMEZONE_FORMAT")
TS_TZ = _o(TIMESTAMP_KEYGEN_PREFIX + "timezone", None, "string", W, "keys and partitions",
           "deprecated: the zone of both input and output, over the two settings above",
           f"{_TS}.TIMESTAMP_TIMEZONE_FORMAT")
#: the older spelling of each timestamp key generator setting, read when the new one is absent
for _key in [k for k in OPTIONS if k.startswith(TIMESTAMP_KEYGEN_PREFIX)]:
    _o(_key.replace(TIMESTAMP_KEYGEN_PREFIX, TIMESTAMP_KEYGEN_PREFIX_OLD), None, OPTIONS[_key].type,
       W, "keys and partitions", f"older name of {_key}", OPTIONS[_key].hudi_source)
del _key

# --- merging ---------------------------------------------------------------------------------
ORDERING_FIELDS = _o("hoodie.table.ordering.fields", None, "list", T, "merging",
                     "the ordering field(s) of event-time merging (table version 9)",
                     f"{_TC} (1.1; hoodie.table.precombine.field before)")
PRECOMBINE_FIELD = _o("hoodie.table.precombine.field", None, "string", T, "merging",
                      "the ordering field before table version 9", f"{_TC}.PRECOMBINE_FIELD")
RECORD_MERGE_MODE = _o("hoodie.record.merge.mode", None, "enum", T, "merging",
                       "EVENT_TIME_ORDERING or COMMIT_TIME_ORDERING (CUSTOM refused; absent: "
                       "from the payload class)", f"{_TC}.RECORD_MERGE_MODE")
RECORD_MERGE_STRATEGY_ID = _o("hoodie.record.merge.strategy.id", None, "string", T, "merging",
                              "the merger strategy UUID; morlog writes the built-in ones only",
                              f"{_TC}.RECORD_MERGE_STRATEGY_ID")
COMPACTION_RECORD_MERGER_STRATEGY = _o("hoodie.compaction.record.merger.strategy", None,
                                       "string", T, "merging",
                                       "older name of hoodie.record.merge.strategy.id",
                                       f"{_TC}.RECORD_MERGE_STRATEGY_ID (alternative)")
PAYLOAD_CLASS = _o("hoodie.compaction.payload.class", None, "class", T, "merging",
                   "the payload class (table versions 6/8: decides the merge mode)",
                   f"{_TC}.PAYLOAD_CLASS_NAME")
TABLE_PARTIAL_UPDATE_MODE = _o("hoodie.table.partial.update.mode", None, "enum", T, "merging",
                               "partial updates; morlog refuses to write such a table and "
                               "does not prune on it", f"{_TC}.PARTIAL_UPDATE_MODE")
WRITE_PARTIAL_UPDATE_MODE = _o("hoodie.write.partial.update.mode", None, "enum", T, "merging",
                               "partial updates, as a write setting; refused as the table "
                               "property is", "HoodieWriteConfig (not in the Hudi source read)")
WRITE_PRECOMBINE_FIELD = _o("hoodie.datasource.write.precombine.field", None, "string", W,
                            "merging", "ordering field of a new table",
                            f"{_DS}.PRECOMBINE_FIELD")
WRITE_RECORD_MERGE_MODE = _o("hoodie.write.record.merge.mode", None, "enum", W, "merging",
                             "merge mode of a new table: EVENT_TIME_ORDERING or "
                             "COMMIT_TIME_ORDERING (unset: event time when an ordering field "
                             "is set)", "HoodieWriteConfig.RECORD_MERGE_MODE")

# --- timeline --------------------------------------------------------------------------------
TIMELINE_LAYOUT_VERSION = _o("hoodie.timeline.layout.version", None, "int", T, "timeline",
                             "timeline layout: 1 (table version 6) or 2 (8+)",
                             f"{_TC}.TIMELINE_LAYOUT_VERSION")
TIMELINE_PATH = _o("hoodie.timeline.path", "timeline", "string", T, "timeline",
                   "folder of the active timeline under .hoodie (layout 2; written, morlog "
                   "reads timeline/)",
                   f"{_TC}.TIMELINE_PATH")
TIMELINE_HISTORY_PATH = _o("hoodie.timeline.history.path", "history", "string", T, "timeline",
                           "folder of the LSM timeline history (layout 2; written at creation)",
                           f"{_TC}.TIMELINE_HISTORY_PATH")
ARCHIVELOG_FOLDER = _o("hoodie.archivelog.folder", "archived", "string", T, "timeline",
                       "folder of the archived timeline (layout 1; written at creation)",
                       f"{_TC}.ARCHIVELOG_FOLDER")
TIMELINE_TIMEZONE = _o("hoodie.table.timeline.timezone", "LOCAL", "enum", T, "timeline",
                       "instant times in LOCAL time or UTC", f"{_TC}.TIMELINE_TIMEZONE")

# --- metadata table --------------------------------------------------------------------------
_MC = "HoodieMetadataConfig"
METADATA_PARTITIONS = _o("hoodie.table.metadata.partitions", "", "list", T, "metadata table",
                         "the metadata-table partitions built (files, column_stats, ...)",
                         f"{_TC}.TABLE_METADATA_PARTITIONS")
METADATA_PARTITIONS_INFLIGHT = _o("hoodie.table.metadata.partitions.inflight", "", "list", T,
                                  "metadata table",
                                  "the metadata-table partitions being built",
                                  f"{_TC}.TABLE_METADATA_PARTITIONS_INFLIGHT")
METADATA_ENABLE = _o("hoodie.metadata.enable", "true", "bool", W, "metadata table",
                     "false: drop the whole metadata table", f"{_MC}.ENABLE")
METADATA_COLUMN_STATS_ENABLE = _o("hoodie.metadata.index.column.stats.enable", "true", "bool",
                                  W, "metadata table",
                                  "false: drop column_stats (true: kept where the table has "
                                  "it; Hudi's default false)",
                                  f"{_MC}.ENABLE_METADATA_INDEX_COLUMN_STATS")
METADATA_PARTITION_STATS_ENABLE = _o("hoodie.metadata.index.partition.stats.enable", "true",
                                     "bool", W, "metadata table",
                                     "false: drop partition_stats (true: kept where present)",
                                     f"{_MC}.ENABLE_METADATA_INDEX_PARTITION_STATS")
METADATA_RECORD_INDEX_ENABLE = _o("hoodie.metadata.record.index.enable", "true", "bool", W,
                                  "metadata table",
                                  "false: drop record_index (true: kept where present; "
                                  "Hudi's default false)", f"{_MC}.RECORD_INDEX_ENABLE_PROP")
METADATA_BLOOM_FILTER_ENABLE = _o("hoodie.metadata.index.bloom.filter.enable", "true", "bool",
                                  W, "metadata table",
                                  "false: drop bloom_filters (true: kept where present; "
                                  "Hudi's default false)",
                                  f"{_MC}.ENABLE_METADATA_INDEX_BLOOM_FILTER")
METADATA_SECONDARY_ENABLE = _o("hoodie.metadata.index.secondary.enable", "true", "bool", W,
                               "metadata table",
                               "false: drop every secondary_index_* partition",
                               f"{_MC}.SECONDARY_INDEX_ENABLE_PROP")
METADATA_EXPRESSION_ENABLE = _o("hoodie.metadata.index.expression.enable", "true", "bool", W,
                                "metadata table", "false: drop every expr_index_* partition",
                                f"{_MC}.EXPRESSION_INDEX_ENABLE_PROP")
COLUMN_STATS_COLUMN_LIST = _o("hoodie.metadata.index.column.stats.column.list", None, "list",
                              W, "metadata table",
                              "columns with column stats (in MDT column_stats and in indexed "
                              "blocks); unset: the first max.columns.to.index",
                              f"{_MC}.COLUMN_STATS_INDEX_FOR_COLUMNS")
COLUMN_STATS_MAX_COLUMNS = _o("hoodie.metadata.index.column.stats.max.columns.to.index", "32",
                              "int", W, "metadata table",
                              "how many leading columns get column stats when no list is set",
                              f"{_MC}.COLUMN_STATS_INDEX_MAX_COLUMNS")

# --- base files ------------------------------------------------------------------------------
_SC = "HoodieStorageConfig"
PARQUET_COMPRESSION_CODEC = _o("hoodie.parquet.compression.codec", "snappy", "enum", W,
                               "base files", "Parquet base files' codec",
                               f"{_SC}.PARQUET_COMPRESSION_CODEC_NAME")
PARQUET_BLOCK_SIZE = _o("hoodie.parquet.block.size", str(120 * 1024 * 1024), "int", W,
                        "base files", "Parquet row group size in bytes",
                        f"{_SC}.PARQUET_BLOCK_SIZE")
PARQUET_PAGE_SIZE = _o("hoodie.parquet.page.size", str(1024 * 1024), "int", W, "base files",
                       "Parquet data page size in bytes", f"{_SC}.PARQUET_PAGE_SIZE")
PARQUET_DICTIONARY_ENABLED = _o("hoodie.parquet.dictionary.enabled", "true", "bool", W,
                                "base files", "Parquet dictionary encoding",
                                f"{_SC}.PARQUET_DICTIONARY_ENABLED")
ORC_COMPRESSION_CODEC = _o("hoodie.orc.compression.codec", "ZLIB", "enum", W, "base files",
                           "ORC base files' codec", f"{_SC}.ORC_COMPRESSION_CODEC_NAME")
BLOOM_FILTER_TYPE = _o("hoodie.bloom.index.filter.type", "DYNAMIC_V0", "enum", W,
                       "base files", "bloom filter type recorded in the MDT bloom_filters "
                       "entries of base files", f"{_SC}.BLOOM_FILTER_TYPE")
PARQUET_MAX_FILE_SIZE = _o("hoodie.parquet.max.file.size", str(120 * 1024 * 1024), "int", W,
                           "base files", "target size of a file group's base file in bytes",
                           f"{_SC}.PARQUET_MAX_FILE_SIZE")
PARQUET_SMALL_FILE_LIMIT = _o("hoodie.parquet.small.file.limit", str(100 * 1024 * 1024),
                              "int", W, "base files",
                              "file groups below this size take inserts (0: never)",
                              "HoodieCompactionConfig.PARQUET_SMALL_FILE_LIMIT")
MAX_FILE_SIZE = _o("morlog.max.file.size", str(120 * 1024 * 1024), "int", W, "base files",
                   "alias of hoodie.parquet.max.file.size")
SMALL_FILE_LIMIT = _o("morlog.small.file.limit", str(100 * 1024 * 1024), "int", W,
                      "base files", "alias of hoodie.parquet.small.file.limit")
BASE_KEY_INDEX = _o("morlog.base.key.index", "true", "bool", W, "base files",
                    "write a base-key index beside every base file (tagging reads it)")

# --- log files -------------------------------------------------------------------------------
LOGFILE_DATA_BLOCK_FORMAT = _o("hoodie.logfile.data.block.format", "avro", "enum", W,
                               "log files", "carrier of indexed data blocks: avro or parquet",
                               f"{_SC}.LOGFILE_DATA_BLOCK_FORMAT")
CARRIER = _o("morlog.carrier", "avro", "enum", W, "log files",
             "alias of hoodie.logfile.data.block.format")
LOGFILE_DATA_BLOCK_MAX_SIZE = _o("hoodie.logfile.data.block.max.size", str(256 * 1024 * 1024),
                                 "int", W, "log files",
                                 "largest data block in bytes (log compaction cuts there)",
                                 f"{_SC}.LOGFILE_DATA_BLOCK_MAX_SIZE")
LOGFILE_TO_PARQUET_RATIO = _o("hoodie.logfile.to.parquet.compression.ratio", "0.35", "float",
                              W, "log files",
                              "log bytes x ratio = the base-file bytes they will compact to",
                              f"{_SC}.LOGFILE_TO_PARQUET_COMPRESSION_RATIO_FRACTION")

# --- write -----------------------------------------------------------------------------------
WRITE_TABLE_NAME = _o("hoodie.datasource.write.table.name", None, "string", W, "write",
                      "name of a new table (as hoodie.table.name)", f"{_DS}.TABLE_NAME")
WRITE_OPERATION = _o("hoodie.datasource.write.operation", "upsert", "enum", W, "write",
                     "upsert, insert, bulk_insert (as insert), delete, insert_overwrite, "
                     "insert_overwrite_table, delete_partition", f"{_DS}.OPERATION")
WRITE_PARTITIONS_TO_DELETE = _o("hoodie.datasource.write.partitions.to.delete", None, "list",
                                W, "write", "delete_partition: the partition paths",
                                f"{_DS}.PARTITIONS_TO_DELETE")
WRITE_TABLE_TYPE = _o("hoodie.datasource.write.table.type", "MERGE_ON_READ", "enum", W,
                      "write", "MERGE_ON_READ (COPY_ON_WRITE refused)", f"{_DS}.TABLE_TYPE")
WRITE_TABLE_VERSION = _o("hoodie.write.table.version", "9", "int", W, "write",
                         "the table version of a new table (6, 8 or 9)",
                         "HoodieWriteConfig.WRITE_TABLE_VERSION")
SET_NULL_FOR_MISSING_COLUMNS = _o("hoodie.write.set.null.for.missing.columns", "false", "bool",
                                  W, "write",
                                  "a batch without a nullable column writes NULL (false: "
                                  "refused)", "HoodieCommonConfig.SET_NULL_FOR_MISSING_COLUMNS")
NEW_COLUMNS_NULLABLE = _o("hoodie.datasource.write.new.columns.nullable", "false", "bool", W,
                          "write", "a new column the batch declares not nullable is added "
                          "as nullable (false: refused; Hudi 0.14.0, folded into "
                          "hoodie.write.set.null.for.missing.columns since 0.14.1)",
                          "HoodieCommonConfig.MAKE_NEW_COLUMNS_NULLABLE")
RECONCILE_SCHEMA = _o("hoodie.datasource.write.reconcile.schema", "false", "bool", W, "write",
                     "a batch lacking table columns keeps the table's schema (its columns "
                     "written NULL) instead of being refused; new columns still evolve it",
                     f"{_DS}.RECONCILE_SCHEMA")
SCHEMA_ON_READ_ENABLE = _o("hoodie.schema.on.read.enable", "false", "bool", W, "write",
                           "Hudi's schema-on-read evolution (internal schema in "
                           ".hoodie/.schema): a table that has one is read by column id and "
                           "every commit records its version, whatever this setting (a "
                           "table without one gets none: ALTER TABLE makes the first)",
                           "HoodieCommonConfig.SCHEMA_EVOLUTION_ENABLE")
NEW_GROUPS = _o("morlog.new.groups", "base", "enum", W, "write",
                "inserts that fit nowhere go to new file groups with a base file or a log")
ROUTE_INSERTS = _o("morlog.route.inserts", "true", "bool", W, "write",
                   "route inserts into small file groups (false: new groups only)")
RECORD_SIZE = _o("morlog.record.size", None, "int", W, "write",
                 "bytes per record in a base file, fixed (unset: estimated from past commits)")
RECORD_SIZE_ESTIMATE = _o("hoodie.copyonwrite.record.size.estimate", "1024", "int", W, "write",
                          "bytes per record before any past commit gives an average",
                          "HoodieCompactionConfig.COPY_ON_WRITE_RECORD_SIZE_ESTIMATE")
RECORD_SIZE_ESTIMATION_THRESHOLD = _o(
    "hoodie.record.size.estimation.threshold", "1.0", "float", W, "write",
    "a past commit's base files count for the average when their bytes exceed this times "
    "hoodie.parquet.small.file.limit", "HoodieCompactionConfig.RECORD_SIZE_ESTIMATION_THRESHOLD")
RECORD_SIZE_ESTIMATOR_MAX_COMMITS = _o(
    "_hoodie.record.size.estimator.max.commits", "5", "int", W, "write",
    "how many of the newest completed commits the average reads",
    "HoodieCompactionConfig.RECORD_SIZE_ESTIMATOR_MAX_COMMITS")
WRITE_THREADS = _o("morlog.write.threads", None, "int", W, "write",
                   "file groups written at once (unset: the cores, at most 4)")
LOCK_WAIT_TIME_MS = _o("hoodie.write.lock.wait_time_ms", "60000", "int", W, "write",
                       "milliseconds a writer waits for another writer's lock on the table "
                       "(held while a commit is planned or published) before it fails with "
                       "ConcurrentWriterError (0: fails at once)",
                       "HoodieLockConfig.LOCK_ACQUIRE_WAIT_TIMEOUT_MS")

# the streaming sink (morlog.spark.stream) and Spark SQL (morlog.spark.sql)
STREAMING_CHECKPOINT_IDENTIFIER = _o(
    "hoodie.datasource.write.streaming.checkpoint.identifier", "default_single_writer",
    "string", W, "write",
    "the streaming sink's name in the commit checkpoint (one per stream writing a table)",
    f"{_DS}.STREAMING_CHECKPOINT_IDENTIFIER")
STREAMING_IGNORE_FAILED_BATCH = _o("hoodie.datasource.write.streaming.ignore.failed.batch",
                                   "false", "bool", W, "write",
                                   "a micro-batch that fails every attempt is skipped (true) "
                                   "or stops the stream", f"{_DS}.STREAMING_IGNORE_FAILED_BATCH")
ASYNC_COMPACT_ENABLE = _o("hoodie.datasource.compaction.async.enable", "true", "bool", W,
                          "write",
                          "streaming sink: schedule compaction by its trigger after each "
                          "micro-batch and run it once the batch is committed "
                          "(hoodie.compact.inline=true runs it inline instead)",
                          f"{_DS}.ASYNC_COMPACT_ENABLE")
SQL_INSERT_INTO_OPERATION = _o("hoodie.spark.sql.insert.into.operation", "insert", "enum", W,
                               "write",
                               "INSERT INTO a morlog SQL table: insert, bulk_insert or upsert",
                               f"{_DS}.SPARK_SQL_INSERT_INTO_OPERATION")

# --- compaction ------------------------------------------------------------------------------
_CC = "HoodieCompactionConfig"
COMPACT_INLINE = _o("hoodie.compact.inline", "false", "bool", W, "compaction",
                    "schedule and run compaction after a write when the trigger fires",
                    f"{_CC}.INLINE_COMPACT")
COMPACT_SCHEDULE_INLINE = _o("hoodie.compact.schedule.inline", "false", "bool", W,
                             "compaction", "only schedule compaction after a write",
                             f"{_CC}.SCHEDULE_INLINE_COMPACT")
COMPACT_MAX_DELTA_COMMITS = _o("hoodie.compact.inline.max.delta.commits", "5", "int", W,
                               "compaction",
                               "delta commits since the last compaction that trigger one",
                               f"{_CC}.INLINE_COMPACT_NUM_DELTA_COMMITS")
COMPACT_MAX_DELTA_SECONDS = _o("hoodie.compact.inline.max.delta.seconds", "3600", "int", W,
                               "compaction", "seconds since the last compaction that trigger one",
                               f"{_CC}.INLINE_COMPACT_TIME_DELTA_SECONDS")
COMPACT_TRIGGER_STRATEGY = _o("hoodie.compact.inline.trigger.strategy", "NUM_COMMITS", "enum",
                              W, "compaction",
                              "NUM_COMMITS, NUM_COMMITS_AFTER_LAST_REQUEST, TIME_ELAPSED, "
                              "NUM_OR_TIME, NUM_AND_TIME",
                              f"{_CC}.INLINE_COMPACT_TRIGGER_STRATEGY")
COMPACTION_LOGFILE_SIZE_THRESHOLD = _o("hoodie.compaction.logfile.size.threshold", "0", "int",
                                       W, "compaction",
                                       "only file groups with more log bytes are compacted",
                                       f"{_CC}.COMPACTION_LOG_FILE_SIZE_THRESHOLD")
COMPACTION_TARGET_IO = _o("hoodie.compaction.target.io", str(500 * 1024), "int", W,
                          "compaction", "MB a compaction plan reads and writes at most",
                          f"{_CC}.TARGET_IO_PER_COMPACTION_IN_MB")
COMPACTION_STRATEGY = _o("hoodie.compaction.strategy",
                         "org.apache.hudi.table.action.compact.strategy."
                         "LogFileSizeBasedCompactionStrategy", "class", W, "compaction",
                         "the plan's strategy (LogFileSizeBased or BoundedIO)",
                         f"{_CC}.COMPACTION_STRATEGY")

# --- log compaction --------------------------------------------------------------------------
LOG_COMPACTION_INLINE = _o("hoodie.log.compaction.inline", "false", "bool", W,
                           "log compaction", "run log compaction after a write",
                           f"{_CC}.INLINE_LOG_COMPACT")
LOG_COMPACTION_BLOCKS_THRESHOLD = _o("hoodie.log.compaction.blocks.threshold", "5", "int", W,
                                     "log compaction",
                                     "a slice's log blocks that make it a candidate",
                                     f"{_CC}.LOG_COMPACTION_BLOCKS_THRESHOLD")
LOG_COMPACTION_MAX_BLOCK_BYTES = _o("morlog.log.compaction.max.block.bytes", None, "int", W,
                                    "log compaction",
                                    "larger blocks are left alone (unset: half of "
                                    "hoodie.logfile.data.block.max.size)")
LOG_COMPACTION_BLOCK_FORMAT = _o("morlog.log.compaction.block.format", "parquet", "enum", W,
                                 "log compaction", "data block type written: parquet or avro")

# --- cleaning --------------------------------------------------------------------------------
_CL = "HoodieCleanConfig"
CLEAN_POLICY = _o("hoodie.clean.policy", "KEEP_LATEST_COMMITS", "enum", W, "cleaning",
                  "KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS or KEEP_LATEST_BY_HOURS "
                  "(unset: the one retained setting given)", f"{_CL}.CLEANER_POLICY")
CLEANER_POLICY = _o("hoodie.cleaner.policy", "KEEP_LATEST_COMMITS", "enum", W, "cleaning",
                    "older name of hoodie.clean.policy", f"{_CL}.CLEANER_POLICY")
CLEAN_COMMITS_RETAINED = _o("hoodie.clean.commits.retained", "10", "int", W, "cleaning",
                            "commits whose file slices are kept", f"{_CL}.CLEANER_COMMITS_RETAINED")
CLEANER_COMMITS_RETAINED = _o("hoodie.cleaner.commits.retained", "10", "int", W, "cleaning",
                              "older name of hoodie.clean.commits.retained",
                              f"{_CL}.CLEANER_COMMITS_RETAINED")
CLEAN_FILE_VERSIONS_RETAINED = _o("hoodie.clean.fileversions.retained", "3", "int", W,
                                  "cleaning", "file slices kept per file group",
                                  f"{_CL}.CLEANER_FILE_VERSIONS_RETAINED")
CLEANER_FILE_VERSIONS_RETAINED = _o("hoodie.cleaner.fileversions.retained", "3", "int", W,
                                    "cleaning",
                                    "older name of hoodie.clean.fileversions.retained",
                                    f"{_CL}.CLEANER_FILE_VERSIONS_RETAINED")
CLEAN_HOURS_RETAINED = _o("hoodie.clean.hours.retained", "24", "int", W, "cleaning",
                          "hours of commits whose file slices are kept",
                          f"{_CL}.CLEANER_HOURS_RETAINED")
CLEANER_HOURS_RETAINED = _o("hoodie.cleaner.hours.retained", "24", "int", W, "cleaning",
                            "older name of hoodie.clean.hours.retained",
                            f"{_CL}.CLEANER_HOURS_RETAINED")
CLEAN_AUTOMATIC = _o("hoodie.clean.automatic", "true", "bool", W, "cleaning",
                     "clean after each commit when the trigger fires", f"{_CL}.AUTO_CLEAN")
CLEAN_TRIGGER_MAX_COMMITS = _o("hoodie.clean.trigger.max.commits", "1", "int", W, "cleaning",
                               "commits since the last clean that trigger one",
                               f"{_CL}.CLEAN_MAX_COMMITS")
CLEAN_MAX_COMMITS = _o("hoodie.clean.max.commits", "1", "int", W, "cleaning",
                       "older name of hoodie.clean.trigger.max.commits",
                       f"{_CL}.CLEAN_MAX_COMMITS")
CLEAN_TRIGGER_STRATEGY = _o("hoodie.clean.trigger.strategy", "NUM_COMMITS", "enum", W,
                            "cleaning", "NUM_COMMITS (Hudi's only strategy)",
                            f"{_CL}.CLEAN_TRIGGER_STRATEGY")
CLEAN_INCREMENTAL = _o("hoodie.clean.incremental.enabled", "true", "bool", W, "cleaning",
                       "plan from the partitions touched since the last clean",
                       f"{_CL}.CLEANER_INCREMENTAL_MODE_ENABLE")
CLEANER_INCREMENTAL_MODE = _o("hoodie.cleaner.incremental.mode", "true", "bool", W, "cleaning",
                              "older name of hoodie.clean.incremental.enabled",
                              f"{_CL}.CLEANER_INCREMENTAL_MODE_ENABLE")

# --- record index ----------------------------------------------------------------------------
RECORD_INDEX_ENABLE = _o("morlog.record.index.enable", "false", "bool", T, "record index",
                         "every morlog writer maintains morlog's record index "
                         "(.hoodie/morlog/record_index)")
RECORD_INDEX_SHARDS = _o("morlog.record.index.shards", None, "int", T, "record index",
                         "property of the index table: its shard count (required)")
RECORD_INDEX_HASH = _o("morlog.record.index.hash", None, "string", T, "record index",
                       "property of the index table: the hash assigning keys to shards "
                       "(required; xxh64)")
RECORD_INDEX_BUILT_AS_OF = _o("morlog.record.index.built.as.of", None, "string", T,
                              "record index",
                              "property of the index table: the data instant it was built as of")
BASE_FILE_CHECKSUM = _o("morlog.base.file.checksum", None, "string", T, "record index",
                        "crc32: every Parquet base file of the table is sealed with a whole-file "
                        "checksum readers check (set on the index table; spec/rli.md §1a)")
RECORD_INDEX_UPDATE_PARTITION_PATH = _o("hoodie.record.index.update.partition.path", "false",
                                        "bool", W, "record index",
                                        "a key given another partition moves there (false: "
                                        "written where it lives)",
                                        "HoodieIndexConfig.RECORD_INDEX_UPDATE_PARTITION_PATH_"
                                        "ENABLE")

# --- Spark's distributed upsert ---------------------------------------------------------------
_SPU = ("the task count of morlog.spark.upsert's shuffles, operation {} (0 or unset: Spark's "
        "default parallelism)")
UPSERT_SHUFFLE_PARALLELISM = _o("hoodie.upsert.shuffle.parallelism", None, "int", W, "write",
                                _SPU.format("upsert"), "HoodieWriteConfig.UPSERT_PARALLELISM_VALUE")
INSERT_SHUFFLE_PARALLELISM = _o("hoodie.insert.shuffle.parallelism", None, "int", W, "write",
                                _SPU.format("insert"), "HoodieWriteConfig.INSERT_PARALLELISM_VALUE")
DELETE_SHUFFLE_PARALLELISM = _o("hoodie.delete.shuffle.parallelism", None, "int", W, "write",
                                _SPU.format("delete"), "HoodieWriteConfig.DELETE_PARALLELISM_VALUE")

# --- Hudi engine tuning ----------------------------------------------------------------------
_IG = "Hudi engine tuning (accepted, ignored)"
_WC = "HoodieWriteConfig"
BULKINSERT_SHUFFLE_PARALLELISM = _o("hoodie.bulkinsert.shuffle.parallelism", None, "int", W,
                                    _IG, "Spark parallelism of Hudi's bulk insert",
                                    f"{_WC}.BULKINSERT_PARALLELISM_VALUE")
FINALIZE_WRITE_PARALLELISM = _o("hoodie.finalize.write.parallelism", None, "int", W, _IG,
                                "parallelism of Hudi's write finalization",
                                f"{_WC}.FINALIZE_WRITE_PARALLELISM_VALUE")
MARKERS_DELETE_PARALLELISM = _o("hoodie.markers.delete.parallelism", None, "int", W, _IG,
                                "parallelism of Hudi's marker deletion",
                                f"{_WC}.MARKERS_DELETE_PARALLELISM_VALUE")
ROLLBACK_PARALLELISM = _o("hoodie.rollback.parallelism", None, "int", W, _IG,
                          "parallelism of Hudi's rollback", f"{_WC}.ROLLBACK_PARALLELISM_VALUE")
EMBED_TIMELINE_SERVER = _o("hoodie.embed.timeline.server", None, "bool", W, _IG,
                           "Hudi's embedded timeline server",
                           f"{_WC}.EMBEDDED_TIMELINE_SERVER_ENABLE")
WRITE_MARKERS_TYPE = _o("hoodie.write.markers.type", None, "enum", W, _IG,
                        "Hudi's marker mechanism", f"{_WC}.MARKERS_TYPE")
ROW_WRITER_ENABLE = _o("hoodie.datasource.write.row.writer.enable", None, "bool", W, _IG,
                       "Hudi's Spark row writer", f"{_DS}.ENABLE_ROW_WRITER")
BULKINSERT_SORT_MODE = _o("hoodie.bulkinsert.sort.mode", None, "enum", W, _IG,
                          "Hudi's bulk insert sort", f"{_WC}.BULK_INSERT_SORT_MODE")
PARQUET_COMPRESSION_RATIO = _o("hoodie.parquet.compression.ratio", None, "float", W, _IG,
                               "Hudi's file-size estimate for bulk insert",
                               f"{_SC}.PARQUET_COMPRESSION_RATIO_FRACTION")

# --- commit metadata -------------------------------------------------------------------------
_CM = "commit metadata"
WRITER_MARK = _o("morlog.writer", None, "string", C, _CM,
                 "marks an instant or service plan written by morlog (\"1\")")
STAT_INSERTS = _o("morlog.inserts", None, "int", C, _CM, "records inserted by the commit")
STAT_UPDATES = _o("morlog.updates", None, "int", C, _CM, "records updated by the commit")
STAT_DELETES = _o("morlog.deletes", None, "int", C, _CM, "records deleted by the commit")
STAT_INSERTS_ROUTED = _o("morlog.inserts.routed", None, "int", C, _CM,
                         "inserts routed into existing file groups")
STAT_GROUPS_TOUCHED = _o("morlog.groups.touched", None, "int", C, _CM,
                         "file groups the commit wrote")
STAT_GROUPS_NEW = _o("morlog.groups.new", None, "int", C, _CM,
                     "file groups the commit created")
STAT_FILES_CREATED = _o("morlog.files.created", None, "int", C, _CM,
                        "files the commit created")
STAT_SECONDS = _o("morlog.seconds", None, "float", C, _CM, "seconds the commit's phases took")
STAT_ROWS_WRITTEN = _o("morlog.rows.written", None, "int", C, _CM,
                       "rows the Spark writer's tasks wrote")
STAT_CDC_CRC32 = _o("morlog.cdc.crc32", None, "json", C, _CM,
                    "CRC-32 of every CDC log file the commit wrote (relative path -> CRC, "
                    "spec/cdc.md §3): readers check them")
STAT_GROUPS_REPLACED = _o("morlog.groups.replaced", None, "int", C, _CM,
                          "file groups an insert-overwrite replaced")
STAT_RLI_INSERTED = _o("morlog.rli.inserted", None, "int", C, _CM,
                       "entries written into morlog's record index")
STAT_RLI_DELETED = _o("morlog.rli.deleted", None, "int", C, _CM,
                      "entries deleted from morlog's record index")

# --- queries (spec/queries.md) ---------------------------------------------------------------
_RD = "DataSourceReadOptions"
QUERY_TYPE = _o("hoodie.datasource.query.type", "snapshot", "enum", Scope.READ, "queries",
                "snapshot (merged), read_optimized (base files only) or incremental",
                f"{_RD}.QUERY_TYPE")
READ_BEGIN_INSTANTTIME = _o("hoodie.datasource.read.begin.instanttime", None, "string",
                            Scope.READ, "queries",
                            "incremental query: exclusive start (completion time on table "
                            "version 8+, instant time on 6; 'earliest': from the start)",
                            f"{_RD}.START_COMMIT")
READ_END_INSTANTTIME = _o("hoodie.datasource.read.end.instanttime", None, "string",
                          Scope.READ, "queries",
                          "incremental query: inclusive end (default: the latest)",
                          f"{_RD}.END_COMMIT")
INCR_FALLBACK_FULL_TABLE_SCAN = _o("hoodie.datasource.read.incr.fallback.fulltablescan.enable",
                                   "false", "bool", Scope.READ, "queries",
                                   "incremental query reaching archived instants or cleaned "
                                   "files: scan the latest file slices (false: an error)",
                                   f"{_RD}.INCREMENTAL_FALLBACK_TO_FULL_TABLE_SCAN")
INCREMENTAL_FORMAT = _o("hoodie.datasource.query.incremental.format", "latest_state", "enum",
                        Scope.READ, "queries",
                        "incremental query output: latest_state (records) or cdc (changes)",
                        f"{_RD}.INCREMENTAL_FORMAT")

# --- file metadata ---------------------------------------------------------------------------
NAN_COUNTS = _o("morlog.nan_counts", None, "json", F, "file metadata",
                "Parquet footer: NaN values of each float column (spec/prune.md §4.1)")
INDEX_TRAILER_KEY = _o("morlog.index", None, "string", F, "file metadata",
                       "Parquet-carrier data block footer: the block's index trailer, Base64 "
                       "(spec/index.md §5.2)")
FILE_CHECKSUM = _o("morlog.file.checksum", None, "string", F, "file metadata",
                   "Parquet footer of a sealed base file: CRC-32 and length of the whole file, "
                   "24 hex digits (spec/rli.md §1a)")

del T, W, C, F


def option(key: str) -> ConfigOption:
    """The registered option ``key`` (``KeyError`` when morlog does not honour it)."""
    return OPTIONS[key]


def default(key: str) -> str:
    """The default of option ``key`` (``KeyError`` when it has none: derived or required)."""
    value = OPTIONS[key].default
    if value is None:
        raise KeyError(f"option {key} has no default")
    return value


def default_int(key: str) -> int:
    """The default of the int option ``key``."""
    return int(default(key))


def default_float(key: str) -> float:
    """The default of the float option ``key``."""
    return float(default(key))


def default_bool(key: str) -> bool:
    """The default of the bool option ``key``."""
    return default(key) == "true"


def _cell(text: str | None) -> str:
    return "" if text is None else text.replace("|", "\\|")


def render_markdown() -> str:
    """The options reference ``docs/options.md``: every option, grouped by area."""
    out = ["# Options morlog honours", "",
           "Generated from `morlog.config` (`python -m morlog.config > docs/options.md`); "
           "do not edit by hand.", "",
           "Scope: where the key applies.", ""]
    out += [f"- `{s.value}`: {SCOPE_DOC[s]}" for s in Scope]
    out += ["", "Default: morlog's value when the key is absent (Hudi's default where Hudi "
            "has the setting; the Hudi column names the config class in apache/hudi). "
            "Blank: no default (derived, required or absent); (empty): the empty string.",
            ""]
    for area in AREAS:
        rows = [o for o in OPTIONS.values() if o.area == area]
        if not rows:
            continue
        out += [f"## {area[:1].upper()}{area[1:]}", "",
                "| key | default | type | scope | meaning | Hudi |",
                "|---|---|---|---|---|---|"]
        for o in rows:
            default = ("" if o.default is None else "(empty)" if o.default == ""
                       else f"`{_cell(o.default)}`")
            hudi = "" if o.hudi_source is None else f"`{o.hudi_source}`"
            out.append(f"| `{o.key}` | {default} | {o.type} | {o.scope.value} | "
                       f"{_cell(o.doc)} | {hudi} |")
        out.append("")
    return "\n".join(out)

