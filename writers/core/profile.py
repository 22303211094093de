"""What a table's ``hoodie.properties`` asks of a writer, checked before anything is written.

:func:`write_profile` reads every setting that changes what a writer must write (Hudi's
names, ``HoodieTableConfig``) and returns a :class:`WriteProfile`, or raises
:class:`UnsupportedSettingError` naming the first property whose value morlog cannot honour.
The write client builds it when a table is opened, so a refused table is never touched.

Settings and what morlog does with them (``spec/table.md`` §"Writing into Hudi's tables"):

========================================================  =====================================
``hoodie.table.type``                                      MERGE_ON_READ; COPY_ON_WRITE refused
``hoodie.table.version``                                   6 (layout 1), 8 and 9 (layout 2)
``hoodie.timeline.layout.version``                         must match the version (1 / 2)
``hoodie.table.recordkey.fields``, key generator settings  ``morlog.logformat.keygen``
``hoodie.table.ordering.fields`` / ``precombine.field``     one field; several (``a,b``, compared
                                                           as a tuple) in version 9 only
``hoodie.record.merge.mode``                               EVENT_TIME_ORDERING,
                                                           COMMIT_TIME_ORDERING; CUSTOM refused
``hoodie.compaction.payload.class`` (version 6)            the overwrite and event-time payloads;
                                                           partial-update payloads refused
``hoodie.populate.meta.fields``                            true; false (virtual keys) with the
                                                           simple, complex and non-partitioned
                                                           key generators
``hoodie.datasource.write.drop.partition.columns``         false; true unless partition values
                                                           cannot be parsed back (timestamp
                                                           keys, slash dates, nested fields)
``hoodie.table.cdc.enabled``                               false; true (``morlog.writers.core.cdc``)
``hoodie.table.cdc.supplemental.logging.mode``             OP_KEY_ONLY, DATA_BEFORE,
                                                           DATA_BEFORE_AFTER (spec/cdc.md)
``hoodie.bootstrap.base.path``                             absent; bootstrap tables refused
``hoodie.table.format`` (version 9)                        native; others refused
``hoodie.table.base.file.format``                          PARQUET (others: the base-file module)
``hoodie.table.metadata.partitions``                       ``morlog.writers.mdt.plan``
========================================================  =====================================
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

import morlog.config as conf
from morlog.logformat.avroschema import avro_to_arrow_schema, parse_avro_schema
from morlog.logformat.blocks import META_FIELDS
from morlog.logformat.cdc import LOGGING_MODES
from morlog.logformat.errors import (
    ContentError,
    MorlogError,
    UnsupportedSettingError,
    UsageError,
)
from morlog.readers.table import Table, TableConfig

#: the key generators Hudi allows on a table without meta fields
#: (``BaseHoodieWriteClient.validateAgainstTableProperties``, exact class names: their Avro
#: twins are refused too), and the key generator types that name them
#: (``KeyGeneratorType``)
VIRTUAL_KEY_GENERATORS = {"org.apache.hudi.keygen.SimpleKeyGenerator",
                          "org.apache.hudi.keygen.ComplexKeyGenerator",
                          "org.apache.hudi.keygen.NonpartitionedKeyGenerator"}
_KEYGEN_TYPE_CLASSES = {"SIMPLE": "org.apache.hudi.keygen.SimpleKeyGenerator",
                        "COMPLEX": "org.apache.hudi.keygen.ComplexKeyGenerator",
                        "NON_PARTITION": "org.apache.hudi.keygen.NonpartitionedKeyGenerator"}
#: table versions morlog writes, and the timeline layout of each
WRITE_VERSIONS = {6: 1, 8: 2, 9: 2}
#: payload classes whose merge morlog's readers and writers implement (version 6 tables)
_PAYLOADS = {
    "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload": "COMMIT_TIME_ORDERING",
    "org.apache.hudi.common.model.DefaultHoodieRecordPayload": "EVENT_TIME_ORDERING",
    "org.apache.hudi.common.model.EventTimeAvroPayload": "EVENT_TIME_ORDERING",
}
_MERGE_MODES = ("EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING")
#: the record merge strategy ids of Hudi's built-in merges (HoodieRecordMerger): event time
#: ordering (0.x: the default, payload-driven merger), its 0.15 id, commit time ordering, and
#: payload-based merging (then the payload class decides)
_STRATEGIES = {"eeb8d96f-b1e4-49fd-bbf8-28ac514178e5", "53ce6957-2a07-4c95-bf1e-548663905b70",
               "ce9acb64-bde0-424c-9b91-f6ebba25356d", "00000000-0000-0000-0000-000000000000"}


@dataclass
class WriteProfile:
    """What a writer of one table must honour (read from ``hoodie.properties``)."""

    version: int
    layout: int
    ordering_field: str | None
    merge_mode: str
    #: the record schema blocks and base files are written with (meta fields first; the
    #: partition columns left out when the table drops them)
    avro_schema: dict[str, Any]
    arrow_schema: pa.Schema
    #: the data columns a batch carries (no meta fields; partition columns included)
    data_schema: pa.Schema
    #: every ordering field, in comparison order
    ordering_fields: tuple[str, ...] = ()
    #: ``hoodie.populate.meta.fields``: False leaves the meta columns null (virtual keys)
    populate_meta_fields: bool = True
    #: ``hoodie.datasource.write.drop.partition.columns``: the partition columns left out of
    #: the data files
    dropped_columns: tuple[str, ...] = ()


def _flag(props: dict[str, str], key: str, default: str) -> bool:
    return (props.get(key) or default).strip().lower() == "true"


def check_settings(table: Table) -> None:
    """:class:`UnsupportedSettingError` for the first setting morlog cannot honour."""
    check_config(table.config)


def check_config(cfg: TableConfig) -> None:
    """:func:`check_settings` of ``hoodie.properties`` alone (a table being created is
    checked before its first byte is written)."""
    props = cfg.props
    where = cfg.path

    def refuse(key: str, why: str, expected: Any = None) -> None:
        hint = f" (supported: {expected})" if expected is not None else ""
        raise UnsupportedSettingError(why + hint, property=key, value=props.get(key),
                                      path=where)

    if cfg.table_type != "MERGE_ON_READ":
        refuse(conf.TABLE_TYPE, "morlog writes merge-on-read tables only",
               "MERGE_ON_READ")
    if cfg.version not in WRITE_VERSIONS:
        raise UnsupportedSettingError("morlog writes table versions 6, 8 and 9",
                                      property=conf.TABLE_VERSION,
                                      value=str(cfg.version), path=where)
    layout = props.get(conf.TIMELINE_LAYOUT_VERSION)
    if layout and layout.strip() != str(WRITE_VERSIONS[cfg.version]):
        refuse(conf.TIMELINE_LAYOUT_VERSION,
               f"table version {cfg.version} uses timeline layout "
               f"{WRITE_VERSIONS[cfg.version]}", str(WRITE_VERSIONS[cfg.version]))
    if not cfg.record_key_fields:
        refuse(conf.RECORDKEY_FIELDS, "morlog writes keyed tables only")
    if len(cfg.ordering_fields) > 1 and cfg.version < 9:
        # Hudi 1.1 compares several ordering fields (HoodieTableConfig.getOrderingFields,
        # OrderingValues); the readers of table versions 6 and 8 (Hudi 0.x, 1.0) take the
        # precombine field as one field name
        key = (conf.ORDERING_FIELDS if props.get(conf.ORDERING_FIELDS)
               else conf.PRECOMBINE_FIELD)
        refuse(key, "several ordering fields need table version 9 (Hudi 1.1): older "
               "readers take the precombine field as one field", "one field")
    mode = props.get(conf.RECORD_MERGE_MODE)
    if mode and mode not in _MERGE_MODES:
        refuse(conf.RECORD_MERGE_MODE, "custom record mergers are not supported",
               list(_MERGE_MODES))
    strategy = props.get(conf.RECORD_MERGE_STRATEGY_ID) or props.get(
        conf.COMPACTION_RECORD_MERGER_STRATEGY)
    if strategy and strategy not in _STRATEGIES:
        key = (conf.RECORD_MERGE_STRATEGY_ID if props.get(conf.RECORD_MERGE_STRATEGY_ID)
               else conf.COMPACTION_RECORD_MERGER_STRATEGY)
        refuse(key, "custom record merge strategies are not supported", sorted(_STRATEGIES))
    payload = props.get(conf.PAYLOAD_CLASS)
    if payload and payload not in _PAYLOADS and not mode:
        refuse(conf.PAYLOAD_CLASS,
               "morlog merges with the overwrite and event-time payloads only",
               sorted(_PAYLOADS))
    if not cfg.populate_meta_fields:
        _check_virtual_keys(cfg, refuse)
    if cfg.drop_partition_columns:
        _check_drop_partition_columns(cfg, refuse)
    # hoodie.table.cdc.enabled=true is written (morlog.writers.core.cdc); a logging mode
    # Hudi's HoodieTableConfig.cdcSupplementalLoggingMode cannot parse is refused
    cdc_mode = (props.get(conf.TABLE_CDC_LOGGING_MODE) or "").strip().upper()
    if cdc_mode and cdc_mode not in LOGGING_MODES:
        refuse(conf.TABLE_CDC_LOGGING_MODE, "unknown CDC supplemental logging mode",
               list(LOGGING_MODES))
    if props.get(conf.BOOTSTRAP_BASE_PATH):
        refuse(conf.BOOTSTRAP_BASE_PATH, "bootstrapped tables are not supported")
    fmt = props.get(conf.TABLE_FORMAT)
    if fmt and fmt.strip().lower() != "native":
        refuse(conf.TABLE_FORMAT, "morlog writes Hudi's native table format", "native")
    if props.get(conf.WRITE_PARTIAL_UPDATE_MODE) or props.get(
            conf.TABLE_PARTIAL_UPDATE_MODE):
        refuse(conf.TABLE_PARTIAL_UPDATE_MODE, "partial updates are not supported")


def _keygen(cfg: Any) -> Any:
    from morlog.logformat.keygen import KeyGenSpec

    return KeyGenSpec.from_properties(cfg.props)


def _check_virtual_keys(cfg: Any, refuse: Any) -> None:
    """A table without meta fields: Hudi's writers allow the simple, complex and
    non-partitioned key generators only (exact classes, ``BaseHoodieWriteClient
    .validateAgainstTableProperties``, default the simple one); Hudi's readers derive a key
    of one field as its bare value (``RecordContext.virtualKeyExtractor``), so a one-field
    complex key written as ``field:value`` would never match."""
    props = cfg.props
    cls = (props.get(conf.KEYGEN_CLASS) or "").strip()
    key = conf.KEYGEN_CLASS
    if not cls:
        raw = (props.get(conf.KEYGEN_TYPE) or "").strip()
        if raw:
            key = conf.KEYGEN_TYPE
            cls = _KEYGEN_TYPE_CLASSES.get(raw.upper(), raw)
    if cls and cls not in VIRTUAL_KEY_GENERATORS:
        refuse(key, "Hudi allows only the simple, complex and non-partitioned key "
               "generators on a table without meta fields (hoodie.populate.meta.fields=false)",
               sorted(VIRTUAL_KEY_GENERATORS))
    spec = _keygen(cfg)
    if len(spec.key_fields) == 1 and spec.single_key_field_prefixed:
        refuse(conf.RECORDKEY_FIELDS,
               "a one-field complex key is written as 'field:value' but Hudi's readers of a "
               "table without meta fields key records by the bare value", "several fields, "
               "or the simple key generator")
    if any("." in f for f in spec.key_fields):
        refuse(conf.RECORDKEY_FIELDS,
               "nested record key fields on a table without meta fields are not supported")


def _check_drop_partition_columns(cfg: Any, refuse: Any) -> None:
    """Partition columns dropped from the data files: their values must parse back from the
    partition path, and no key or ordering field may be one of them (readers derive keys and
    compare ordering values from the files)."""
    from morlog.readers.partition_columns import check_partition_columns_parse

    spec = _keygen(cfg)
    check_partition_columns_parse(spec, cfg.path)
    parts = set(spec.partition_fields)
    clash = [f for f in cfg.ordering_fields if f in parts]
    if not cfg.populate_meta_fields:
        clash += [f for f in spec.key_fields if f in parts]
    if clash:
        refuse(conf.DROP_PARTITION_COLUMNS,
               f"fields {sorted(set(clash))} are both partition columns (dropped from the data "
               "files) and record key or ordering fields (read from the data files)", "false")


def table_schema_json(table: Table) -> str:
    """The table's latest schema as Avro JSON text: the schema of the latest completed
    commit that carries one (``extraMetadata.schema``, as Hudi's ``TableSchemaResolver``
    prefers), else ``hoodie.table.create.schema``."""
    tl = table.timeline
    for inst in reversed(tl.completed(frozenset({"commit", "deltacommit", "replacecommit"}))):
        try:
            meta = tl.metadata(inst)
        except MorlogError:
            continue
        extra = meta.get("extraMetadata")
        text = extra.get("schema") if isinstance(extra, dict) else None
        if isinstance(text, str) and text.strip():
            return text
    text = table.config.get(conf.TABLE_CREATE_SCHEMA)
    if not text:
        raise UsageError("table has no hoodie.table.create.schema and no commit with a "
                         "schema", path=table.config.path)
    return text


def _meta_field(name: str) -> dict[str, Any]:
    # as Hudi adds them (HoodieAvroUtils.addMetadataFields): nullable strings, empty doc
    return {"name": name, "type": ["null", "string"], "doc": "", "default": None}


def write_schema(schema_json: str, *, where: str | None = None) -> dict[str, Any]:
    """The record schema a writer writes: Hudi's five meta fields first, then the data
    fields of ``schema_json`` (its own meta fields, if any, replaced)."""
    try:
        avro = parse_avro_schema(schema_json)
    except ContentError as exc:
        raise exc.at(where) from exc.__cause__
    if not isinstance(avro, dict) or avro.get("type") != "record":
        raise UsageError("the table schema is not an Avro record", path=where)
    data = [f for f in avro.get("fields", []) if f.get("name") not in META_FIELDS]
    return {**avro, "fields": [_meta_field(n) for n in META_FIELDS] + data}


def write_profile(table: Table) -> WriteProfile:
    """The profile of ``table`` for writing; raises before anything is written."""
    check_settings(table)
    cfg = table.config
    text = table_schema_json(table)
    dropped: tuple[str, ...] = ()
    if cfg.drop_partition_columns:
        dropped = tuple(_keygen(cfg).partition_fields)
        text = _with_partition_columns(text, table, dropped)
    schema = write_schema(text, where=cfg.path)
    try:
        arrow = avro_to_arrow_schema(json.dumps(schema))
    except ContentError as exc:
        raise exc.at(cfg.path) from exc.__cause__
    ordering = cfg.ordering_fields
    data = pa.schema([f for f in arrow if f.name not in META_FIELDS])
    if dropped:
        # the files hold every column but the partition columns (HoodieSparkSqlWriter drops
        # them from the writer schema; TableSchemaResolver.appendPartitionColumns adds them
        # back on read)
        schema = {**schema, "fields": [f for f in schema["fields"]
                                       if f["name"] not in dropped]}
        arrow = pa.schema([f for f in arrow if f.name not in dropped])
    for f in ordering:
        if f not in data.names:
            raise UnsupportedSettingError(
                f"the ordering field is not a column of the table schema {data.names}",
                property=conf.ORDERING_FIELDS
                if cfg.get(conf.ORDERING_FIELDS) else conf.PRECOMBINE_FIELD,
                value=f, path=cfg.path)
    return WriteProfile(version=cfg.version, layout=WRITE_VERSIONS[cfg.version],
                        ordering_field=ordering[0] if ordering else None,
                        merge_mode=cfg.merge_mode, avro_schema=schema, arrow_schema=arrow,
                        data_schema=data, ordering_fields=tuple(ordering),
                        populate_meta_fields=cfg.populate_meta_fields,
                        dropped_columns=dropped)


def _with_partition_columns(text: str, table: Table, dropped: tuple[str, ...]) -> str:
    """The table schema with its partition columns: a commit of a table that drops them
    records the schema without them; they come back from ``hoodie.table.create.schema``
    (morlog keeps them there, with their types), else as nullable strings (Hudi's
    ``TableSchemaResolver.appendPartitionColumns``)."""
    avro = parse_avro_schema(text)
    if not isinstance(avro, dict):
        return text
    names = [f.get("name") for f in avro.get("fields", [])]
    missing = [c for c in dropped if c not in names]
    if not missing:
        return text
    created: dict[str, Any] = {}
    create = table.config.get(conf.TABLE_CREATE_SCHEMA)
    if create:
        try:
            c = parse_avro_schema(create)
            if isinstance(c, dict):
                created = {f.get("name"): f for f in c.get("fields", [])}
        except ContentError:
            created = {}
    extra = [created.get(n) or {"name": n, "type": ["null", "string"], "default": None}
             for n in missing]
    return json.dumps({**avro, "fields": [*avro.get("fields", []), *extra]})


__all__ = ["VIRTUAL_KEY_GENERATORS", "WRITE_VERSIONS", "WriteProfile", "check_config",
           "check_settings",
           "table_schema_json", "write_profile", "write_schema"]
