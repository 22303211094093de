"""Creating a table: ``hoodie.properties`` with morlog's settings and the caller's, checked
before the table's first byte, the timeline directory, and (versions 8 and 9) the metadata
table with its ``files`` partition, as Hudi initialises it (spec/table.md §1, §15).
:meth:`MorTable.create <morlog.writers.client.MorTable.create>` is the public entry."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from morlog.logformat.avroschema import (
    arrow_to_avro_schema,
)
from morlog.logformat.blocks import META_FIELDS
from morlog.logformat.errors import UnsupportedSettingError, UsageError
from morlog.logformat.table_files import (
    DEFAULT_TABLE_VERSION,
    PROPERTIES_FILE,
    format_properties,
    new_table_properties,
)
from morlog.readers.properties import has_properties
from morlog.readers.storage import TableLocation
from morlog.readers.table import TableConfig
from morlog.writers.core.profile import WRITE_VERSIONS, check_config
from morlog.writers.core.properties import update_properties
from morlog.writers.core.store import (
    WriteStore,
    store_at,
)
from morlog.writers.mdt.keeper import FILES
from morlog.writers.mdt.plan import (
    ENABLE,
    PARTITIONS_PROPERTY,
)
from morlog.writers.mdt.writer import create_metadata_table
from morlog.writers.options import WRITE_TABLE_VERSION, WriteConfig


def create_table(location: TableLocation, schema: pa.Schema, *, key_field: str,
                 partition_field: str | None = None, ordering_field: str | None = None,
                 name: str | None = None, event_time_ordering: bool | None = None,
                 config: WriteConfig | None = None, table_version: int | None = None,
                 table_properties: Mapping[str, str] | None = None) -> None:
    """Create an empty table at ``location`` (the arguments:
    :meth:`morlog.writers.client.MorTable.create`); a :class:`UsageError` when one exists
    or the settings contradict each other, before anything is written."""
    version = create_version(table_version, config)
    path = location.uri
    store, inner = open_store(location, config or WriteConfig()), location.path
    props_path = store.join(inner, ".hoodie", PROPERTIES_FILE)
    if has_properties(store.storage, inner):
        raise UsageError("a table exists already", path=path)
    for fname, what in ((key_field, "key"), (partition_field, "partition"),
                        (ordering_field, "ordering")):
        if fname is not None and fname not in schema.names:
            raise UsageError(f"{what} field {fname!r} is not in the schema",
                             expected=schema.names, actual=fname)
    if any(n in META_FIELDS for n in schema.names):
        raise UsageError("the schema must not hold Hudi meta fields; they are added")
    base = store.basename(os.path.abspath(inner) if store.can_append else inner)
    table_name = name or base or "morlog_table"
    meta = [pa.field(n, pa.string()) for n in META_FIELDS]
    full = pa.schema(meta + list(schema))
    avro = arrow_to_avro_schema(full, f"{table_name}_record", f"hoodie.{table_name}")
    event = ordering_field is not None if event_time_ordering is None else (
        event_time_ordering)
    props = new_table_properties(
        name=table_name, key_field=key_field, partition_field=partition_field,
        ordering_field=ordering_field,
        create_schema=json.dumps(avro, separators=(",", ":")), event_time_ordering=event,
        version=version)
    props.update(table_properties or {})
    # a setting morlog cannot honour (a key generator Hudi refuses without meta fields...)
    # is refused before the table's first byte
    check_config(TableConfig(props, props_path))
    store.makedirs(store.join(inner, ".hoodie"))
    if version >= 8:
        store.makedirs(store.join(inner, ".hoodie", "timeline"))
    if not store.create(props_path, format_properties(props).encode("utf-8")):
        raise UsageError("a table was created here concurrently", path=path)
    cfg = config or WriteConfig()
    enable = (cfg.hoodie_options.get(ENABLE) or "").strip().lower()
    # hudi-rs 0.5 skips file groups without a base file when it lists through the MDT,
    # so a table whose new groups are log-only gets one only when asked for
    if version >= 8 and enable != "false" and (cfg.new_groups == "base"
                                               or enable == "true"):
        fsync = cfg.fsync
        # the MDT first, then listed: a crash in between leaves an unlisted MDT, which
        # the first commit drops (spec/table.md §15)
        create_metadata_table(store, location, name=table_name, version=version,
                              fsync=fsync)
        update_properties(store, location, {**props, PARTITIONS_PROPERTY: FILES},
                          fsync=fsync)


def create_version(version: int | None, config: WriteConfig | None) -> int:
    """The table version of a new table: ``version``, else the config's
    ``hoodie.write.table.version``, else the version current Hudi writes."""
    raw: Any = version
    if raw is None and config is not None:
        raw = config.hoodie_options.get(WRITE_TABLE_VERSION)
    if raw is None:
        return DEFAULT_TABLE_VERSION
    try:
        v = int(str(raw).strip())
    except ValueError:
        v = -1
    if v not in WRITE_VERSIONS:
        raise UnsupportedSettingError("morlog creates tables of version 6, 8 or 9",
                                      property=WRITE_TABLE_VERSION, value=str(raw))
    return v


def open_store(location: TableLocation, config: WriteConfig) -> WriteStore:
    """The store a writer of ``location`` publishes through, as ``config`` asks."""
    store = store_at(location, single_writer=config.single_writer,
                     lease_seconds=config.lock_lease_seconds,
                     lock_wait_seconds=config.lock_wait_seconds)
    if config.mode == "append" and not store.can_append:
        raise UsageError("this storage cannot append to files: use mode='rollover'",
                         path=location.uri)
    return store


__all__ = ["create_table", "create_version", "open_store"]
