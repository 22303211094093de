"""Hudi's small table files, as text: ``hoodie.properties`` and ``.hoodie_partition_metadata``.

Pure codecs (text in, values out; no file I/O), the only place these files are encoded and
decoded (``morlog.readers.table`` reads them, ``morlog.writers.client`` and
``morlog.bench.tag`` write them):

- Java ``.properties`` (:func:`parse_properties`, :func:`format_properties`): the subset of the
  format Hudi writes plus what ``java.util.Properties`` accepts (comments, ``=``/``:``/space
  separators, escapes, ``\\uXXXX``, line continuations).
- The properties of a new merge-on-read table of version 6, 8 or 9 (:func:`new_table_properties`).
- A partition's ``.hoodie_partition_metadata`` (:func:`format_partition_metadata`,
  :func:`parse_partition_metadata`).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping

from morlog.config import (
    ARCHIVELOG_FOLDER,
    DATABASE_NAME,
    DROP_PARTITION_COLUMNS,
    HIVE_STYLE_PARTITIONING,
    KEYGEN_CLASS,
    KEYGEN_TYPE,
    METADATA_PARTITIONS,
    ORDERING_FIELDS,
    PARTITION_FIELDS,
    PAYLOAD_CLASS,
    PRECOMBINE_FIELD,
    RECORD_INDEX_ENABLE,
    RECORD_MERGE_MODE,
    RECORD_MERGE_STRATEGY_ID,
    RECORDKEY_FIELDS,
    TABLE_CHECKSUM,
    TABLE_CREATE_SCHEMA,
    TABLE_FORMAT,
    TABLE_INITIAL_VERSION,
    TABLE_NAME,
    TABLE_TYPE,
    TABLE_VERSION,
    TIMELINE_HISTORY_PATH,
    TIMELINE_LAYOUT_VERSION,
    TIMELINE_PATH,
    URL_ENCODE_PARTITIONING,
)

from .errors import ContentError

#: the file, under ``.hoodie/``, that holds a table's properties
PROPERTIES_FILE = "hoodie.properties"
#: the copy a rewrite of ``hoodie.properties`` keeps meanwhile, which readers fall back to
#: (``HoodieTableConfig.HOODIE_PROPERTIES_FILE_BACKUP``)
PROPERTIES_BACKUP_FILE = "hoodie.properties.backup"
#: the file that marks a directory as a partition of the table
PARTITION_METADATA_FILE = ".hoodie_partition_metadata"
#: ``hoodie.properties`` key saying morlog's writers keep morlog's record index (spec/rli.md)
RECORD_INDEX_ENABLE_PROPERTY = RECORD_INDEX_ENABLE
#: record payloads: latest commit wins, or greatest ordering value wins
PAYLOAD_COMMIT_TIME = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
PAYLOAD_EVENT_TIME = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str, path: str | None) -> str:
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 >= len(text):
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            code = text[i + 2 : i + 6]
            try:
                out.append(chr(int(code, 16)))
            except ValueError:
                raise ContentError(f"bad \\u escape {code!r}", path=path) from None
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t\f":
            key = line[:i]
            rest = line[i:].lstrip(" \t\f")
            if rest[:1] in ("=", ":") and c in " \t\f":
                rest = rest[1:].lstrip(" \t\f")
            elif c in "=:":
                rest = line[i + 1 :].lstrip(" \t\f")
            return key, rest
        i += 1
    return line, ""


def parse_properties(text: str, path: str | None = None) -> dict[str, str]:
    props: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        # a line ending in an odd number of backslashes continues on the next one
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1 and i < len(lines):
            line = line[:-1] + lines[i].lstrip(" \t\f")
            i += 1
        key, value = _split(line)
        props[_unescape(key, path)] = _unescape(value, path)
    return props


def properties_usable(props: Mapping[str, str]) -> bool:
    """Whether parsed ``hoodie.properties`` can be a table's: not empty (a file a writer
    is still writing in place reads empty) and, when it holds ``hoodie.table.checksum``,
    with the checksum of its name (``ConfigUtils.fetchConfigs`` skips a file whose
    checksum does not validate, ``HoodieTableConfig.validateChecksum``)."""
    if not props:
        return False
    checksum = props.get(TABLE_CHECKSUM)
    if checksum is None:
        return True
    return checksum.strip() == table_checksum(props.get(TABLE_NAME) or "",
                                              props.get(DATABASE_NAME) or "")


def format_properties(props: Mapping[str, str]) -> str:
    """Properties in the form Java writes them (``:`` and ``=`` escaped in values too)."""

    def esc(s: str, is_key: bool) -> str:
        out = []
        for ch in s:
            if ch in "\\=:#!" or (is_key and ch == " "):
                out.append("\\" + ch)
            elif ch == "\n":
                out.append("\\n")
            elif ch == "\t":
                out.append("\\t")
            elif ord(ch) > 0x7E or ord(ch) < 0x20:
                out.append(f"\\u{ord(ch):04x}")
            else:
                out.append(ch)
        return "".join(out)

    return "".join(f"{esc(k, True)}={esc(v, False)}\n" for k, v in props.items())


#: the table version a new table gets (the version current Hudi writes, 1.1)
DEFAULT_TABLE_VERSION = 9
#: Hudi's record merge strategy ids (HoodieRecordMerger)
EVENT_TIME_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
COMMIT_TIME_STRATEGY = "ce9acb64-bde0-424c-9b91-f6ebba25356d"


def table_checksum(name: str, database: str = "") -> str:
    """``hoodie.table.checksum``: CRC-32 of ``<database>.<table name>`` in UTF-8
    (``HoodieTableConfig.generateChecksum``; verified on the fixture tables)."""
    return str(zlib.crc32(f"{database}.{name}".encode()))


def new_table_properties(*, name: str, key_field: str, partition_field: str | None,
                         ordering_field: str | None, create_schema: str,
                         event_time_ordering: bool,
                         archive_folder: str | None = "archived",
                         version: int = 6, metadata_partitions: str = "") -> dict[str, str]:
    """``hoodie.properties`` of a new merge-on-read table of ``version`` 6 (timeline layout
    1) or 8/9 (layout 2, ``.hoodie/timeline``), in the order morlog writes them, as Hudi's
    writer of that version creates them. ``create_schema``: the Avro schema as JSON text."""
    keygen = "SIMPLE" if partition_field else "NON_PARTITION"
    props = {
        TABLE_TYPE: "MERGE_ON_READ",
        TABLE_VERSION: str(version),
        TABLE_NAME: name,
        RECORDKEY_FIELDS: key_field,
        PARTITION_FIELDS: partition_field or "",
    }
    if version >= 8:
        props.update({
            TABLE_INITIAL_VERSION: str(version),
            KEYGEN_TYPE: keygen,
            TIMELINE_LAYOUT_VERSION: "2",
            TIMELINE_PATH: "timeline",
            TIMELINE_HISTORY_PATH: "history",
            TABLE_CREATE_SCHEMA: create_schema,
            HIVE_STYLE_PARTITIONING: "false",
            URL_ENCODE_PARTITIONING: "false",
            DROP_PARTITION_COLUMNS: "false",
            RECORD_MERGE_MODE: "EVENT_TIME_ORDERING" if event_time_ordering
            else "COMMIT_TIME_ORDERING",
            METADATA_PARTITIONS: metadata_partitions,
            TABLE_CHECKSUM: table_checksum(name),
        })
        if version == 8:
            props[RECORD_MERGE_STRATEGY_ID] = (
                EVENT_TIME_STRATEGY if event_time_ordering else COMMIT_TIME_STRATEGY)
            props[PAYLOAD_CLASS] = (
                PAYLOAD_EVENT_TIME if event_time_ordering else PAYLOAD_COMMIT_TIME)
        else:
            props[TABLE_FORMAT] = "native"
        if ordering_field:
            props[ORDERING_FIELDS if version >= 9
                  else PRECOMBINE_FIELD] = ordering_field
    else:
        props.update({
            KEYGEN_CLASS: "org.apache.hudi.keygen.SimpleKeyGenerator"
            if partition_field else "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
            TIMELINE_LAYOUT_VERSION: "1",
            TABLE_CREATE_SCHEMA: create_schema,
            HIVE_STYLE_PARTITIONING: "false",
            PAYLOAD_CLASS: PAYLOAD_EVENT_TIME if event_time_ordering
            else PAYLOAD_COMMIT_TIME,
        })
    if archive_folder is not None:
        props[ARCHIVELOG_FOLDER] = archive_folder
    if ordering_field and version < 8:
        props[PRECOMBINE_FIELD] = ordering_field
    return props


def partition_depth(partition: str) -> int:
    """How many directory levels a relative partition path has (``a/b``: 2)."""
    return partition.count("/") + 1


def format_partition_metadata(commit_time: int, depth: int) -> str:
    """A ``.hoodie_partition_metadata`` file as Hudi writes it (text properties)."""
    return f"#partition metadata\ncommitTime={commit_time}\npartitionDepth={depth}\n"


def parse_partition_metadata(text: str, path: str | None = None) -> tuple[int, int]:
    """(commit time, partition depth) of a ``.hoodie_partition_metadata`` text."""
    props = parse_properties(text, path)
    try:
        return int(props["commitTime"]), int(props["partitionDepth"])
    except (KeyError, ValueError):
        raise ContentError("partition metadata needs integer commitTime and partitionDepth",
                           path=path, actual=sorted(props)) from None
