"""Metadata table (MDT) records: the ``HoodieMetadataRecord`` schema and the ``files``
partition (spec/mdt.md §3).

The schema is built here field by field with the names, types, order and defaults of Hudi
1.1's ``hudi-common/src/main/avro/HoodieMetadata.avsc`` (docs left out: they do not take
part in schema resolution), preceded by the five ``_hoodie_*`` meta fields that Hudi's
metadata writer puts in front of it in every SCHEMA header of the fixtures.

``files`` partition records: key ``__all_partitions__`` (type 1) maps partition names to
``{size: 0, isDeleted}``; one record per partition (type 2, key = partition path, ``.`` for a
non-partitioned table) maps file names to ``{size, isDeleted}``. Records of one key merge
with :func:`combine_files_metadata` (``HoodieMetadataPayload.combineFileSystemMetadata``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .errors import UsageError

NAMESPACE = "org.apache.hudi.avro.model"
#: ``HoodieTableMetadata.RECORDKEY_PARTITION_LIST``
ALL_PARTITIONS_KEY = "__all_partitions__"
#: ``HoodieTableMetadata.NON_PARTITIONED_NAME``: the key of a non-partitioned table's files
NON_PARTITIONED_NAME = "."
#: ``HoodieMetadataPayload`` record types
TYPE_PARTITION_LIST = 1
TYPE_FILE_LIST = 2
TYPE_COLUMN_STATS = 3
TYPE_BLOOM_FILTER = 4
TYPE_RECORD_INDEX = 5
TYPE_PARTITION_STATS = 6
TYPE_SECONDARY_INDEX = 7

META_FIELD_NAMES = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                    "_hoodie_partition_path", "_hoodie_file_name")

_JSTRING: dict[str, Any] = {"type": "string", "avro.java.string": "String"}


def _field(name: str, type_: Any, **default: Any) -> dict[str, Any]:
    out = {"name": name, "type": type_}
    if "default" in default:
        out["default"] = default["default"]
    return out


def _opt(name: str, type_: Any) -> dict[str, Any]:
    return _field(name, ["null", type_], default=None)


def _record(name: str, fields: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": fields}


def _wrappers() -> list[dict[str, Any]]:
    """The value wrappers of column statistics, in union order."""
    kinds: list[tuple[str, Any]] = [
        ("BooleanWrapper", "boolean"), ("IntWrapper", "int"), ("LongWrapper", "long"),
        ("FloatWrapper", "float"), ("DoubleWrapper", "double"), ("BytesWrapper", "bytes"),
        ("StringWrapper", dict(_JSTRING)), ("DateWrapper", "int"),
        ("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30,
                            "scale": 15}),
        ("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
        ("TimestampMicrosWrapper", "long"), ("LocalDateWrapper", "int"),
    ]
    return [_record(n, [_field("value", t)]) for n, t in kinds]


def metadata_record_schema(*, meta_fields: bool = True) -> dict[str, Any]:
    """``HoodieMetadataRecord`` (Hudi 1.1 / table version 9) as a schema dict."""
    wrappers = _wrappers()
    names = [w["name"] for w in wrappers]
    array_wrapper = _record("ArrayWrapper", [
        _opt("wrappedValues", {"type": "array", "items": ["null", *names]})])
    column_stats = _record("HoodieMetadataColumnStats", [
        _opt("fileName", dict(_JSTRING)),
        _opt("columnName", dict(_JSTRING)),
        _field("minValue", ["null", *wrappers, array_wrapper], default=None),
        _field("maxValue", ["null", *names, "ArrayWrapper"], default=None),
        _opt("valueCount", "long"),
        _opt("nullCount", "long"),
        _opt("totalSize", "long"),
        _opt("totalUncompressedSize", "long"),
        _field("isDeleted", "boolean"),
        _field("isTightBound", "boolean", default=False),
        _opt("valueType", _record("HoodieValueTypeInfo", [
            _field("typeOrdinal", "int"), _opt("additionalInfo", dict(_JSTRING))])),
    ])
    record_index = _record("HoodieRecordIndexInfo", [
        _opt("partitionName", dict(_JSTRING)),
        _opt("fileIdHighBits", "long"),
        _opt("fileIdLowBits", "long"),
        _opt("fileIndex", "int"),
        _opt("fileId", dict(_JSTRING)),
        _opt("instantTime", "long"),
        _field("fileIdEncoding", "int", default=0),
        _opt("position", "long"),
    ])
    fields: list[dict[str, Any]] = []
    if meta_fields:
        fields += [_field(n, ["null", "string"], default=None) for n in META_FIELD_NAMES]
    fields += [
        _field("key", dict(_JSTRING)),
        _field("type", "int"),
        _field("filesystemMetadata", ["null", {
            "type": "map",
            "values": _record("HoodieMetadataFileInfo", [
                _field("size", "long"), _field("isDeleted", "boolean")]),
            "avro.java.string": "String"}]),
        _opt("BloomFilterMetadata", _record("HoodieMetadataBloomFilter", [
            _field("type", dict(_JSTRING)), _field("timestamp", dict(_JSTRING)),
            _field("bloomFilter", "bytes"), _field("isDeleted", "boolean")])),
        _opt("ColumnStatsMetadata", column_stats),
        _opt("recordIndexMetadata", record_index),
        _opt("SecondaryIndexMetadata", _record("HoodieSecondaryIndexInfo", [
            _field("isDeleted", "boolean")])),
    ]
    return {"type": "record", "name": "HoodieMetadataRecord", "namespace": NAMESPACE,
            "fields": fields}


def metadata_record_schema_json(*, meta_fields: bool = True) -> str:
    """The schema as compact JSON text (what a SCHEMA header and file info carry)."""
    return json.dumps(metadata_record_schema(meta_fields=meta_fields), separators=(",", ":"))


# --- files partition ------------------------------------------------------------------------


def partition_key(partition: str) -> str:
    """The ``files`` record key of a data-table partition path (``.`` for ``""``)."""
    return partition if partition else NON_PARTITIONED_NAME


def _record_of(key: str, type_: int, files: Mapping[str, tuple[int, bool]]) -> dict[str, Any]:
    rec: dict[str, Any] = {n: None for n in META_FIELD_NAMES}
    rec.update(key=key, type=type_, BloomFilterMetadata=None, ColumnStatsMetadata=None,
               recordIndexMetadata=None, SecondaryIndexMetadata=None)
    rec["filesystemMetadata"] = {name: {"size": size, "isDeleted": deleted}
                                 for name, (size, deleted) in files.items()}
    return rec


def files_partition_records(
    partition_to_files: Mapping[str, Mapping[str, int]],
    deleted: Mapping[str, Sequence[str]] | None = None,
    new_partitions: Sequence[str] | None = None,
    *,
    deleted_partitions: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """The ``files`` records of one commit, sorted by key.

    ``partition_to_files``: partition path -> {file name: size in bytes (> 0)} written or
    grown by the commit; ``deleted``: partition path -> file names removed (tombstones,
    ``isDeleted`` true, size 0); ``new_partitions`` (default: every partition named) go into
    the ``__all_partitions__`` record with size 0, ``deleted_partitions`` with isDeleted
    true. ``""`` is the non-partitioned table's partition (key ``.``).
    """
    deleted = deleted or {}
    per: dict[str, dict[str, tuple[int, bool]]] = {}
    for part, files in partition_to_files.items():
        entry = per.setdefault(partition_key(part), {})
        for name, size in files.items():
            if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
                raise UsageError(f"file {name!r} of partition {part!r}: existing files need a "
                                 "size > 0 (HoodieMetadataPayload.validatePayload)", actual=size)
            entry[name] = (size, False)
    for part, names in deleted.items():
        entry = per.setdefault(partition_key(part), {})
        for name in names:
            if name in entry:
                raise UsageError(f"file {name!r} of partition {part!r} is both written and "
                                 "deleted")
            entry[name] = (0, True)
    parts = list(new_partitions) if new_partitions is not None else [
        *partition_to_files, *(p for p in deleted if p not in partition_to_files)]
    listing: dict[str, tuple[int, bool]] = {partition_key(p): (0, False) for p in parts}
    listing.update({partition_key(p): (0, True) for p in deleted_partitions})
    records = [_record_of(k, TYPE_FILE_LIST, files) for k, files in per.items()]
    if listing:
        records.append(_record_of(ALL_PARTITIONS_KEY, TYPE_PARTITION_LIST, listing))
    records.sort(key=lambda r: str(r["key"]).encode("utf-8"))
    return records


FileInfo = dict[str, dict[str, Any]]


def combine_files_metadata(older: FileInfo | None, newer: FileInfo | None) -> FileInfo:
    """Merge two ``filesystemMetadata`` maps of one key, ``newer`` written later.

    ``HoodieMetadataPayload.combineFileSystemMetadata`` (Hudi 1.x): every entry of
    ``older``, then each entry of ``newer``: a name only in ``newer`` is taken as is (a
    tombstone included); a name in both is dropped if ``newer`` marks it deleted, else it
    becomes ``{size: max(old, new), isDeleted: false}``.
    """
    out: FileInfo = dict(older or {})
    for name, info in (newer or {}).items():
        if name not in out:
            out[name] = info
        elif info["isDeleted"]:
            del out[name]
        else:
            out[name] = {"size": max(int(info["size"]), int(out[name]["size"])),
                         "isDeleted": False}
    return out


def merge_files_records(records: Iterable[Mapping[str, Any]]) -> dict[str, FileInfo]:
    """Fold ``files`` records (oldest first) into one ``filesystemMetadata`` per key."""
    merged: dict[str, FileInfo] = {}
    for rec in records:  # one per (commit, partition): not per data file
        key = rec["key"]
        if rec.get("type") not in (TYPE_PARTITION_LIST, TYPE_FILE_LIST):
            raise UsageError("not a files-partition record", actual=rec.get("type"))
        merged[key] = combine_files_metadata(merged.get(key), rec.get("filesystemMetadata"))
    return merged


def files_view(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """``{partition: {file name: size}}`` of live files after merging ``records`` (oldest
    first), tombstones honoured. Partitions are those of the type-2 records, under their
    record key (``.`` for a non-partitioned table); empty ones are kept."""
    merged = merge_files_records(records)
    return {key: {n: int(i["size"]) for n, i in sorted(files.items()) if not i["isDeleted"]}
            for key, files in sorted(merged.items()) if key != ALL_PARTITIONS_KEY}


def partitions_view(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """The partitions listed live by the ``__all_partitions__`` records."""
    merged = merge_files_records(r for r in records if r["key"] == ALL_PARTITIONS_KEY)
    return sorted(n for n, i in merged.get(ALL_PARTITIONS_KEY, {}).items()
                  if not i["isDeleted"])


# --- record_index partition -----------------------------------------------------------------

#: ``HoodieRecordIndexInfo.fileIdEncoding``: the file id as a UUID's two halves and an index
FILE_ID_ENCODING_UUID = 0
#: ``HoodieRecordIndexInfo.fileIdEncoding``: the file id as a string
FILE_ID_ENCODING_RAW = 1
#: ``HoodieMetadataPayload.RECORD_INDEX_MISSING_FILEINDEX_FALLBACK``: a bare-UUID file id
MISSING_FILE_INDEX = -1


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _parse_uuid_file_id(file_id: str) -> tuple[int, int, int] | None:
    """(high bits, low bits, file index) of a ``<uuid>-<n>`` or bare-UUID file id, as
    Java's ``UUID.fromString`` / ``getMost``/``getLeastSignificantBits`` give them (signed
    longs); None for any other file id."""
    import uuid

    if len(file_id) == 36:
        head, index = file_id, MISSING_FILE_INDEX
    else:
        head, sep, tail = file_id.rpartition("-")
        # isdecimal: the digits int() reads (isdigit also passes "²", which int() refuses)
        if not sep or len(head) != 36 or not tail.isdecimal() or len(tail) > 9:
            return None
        index = int(tail)
    try:
        u = uuid.UUID(head)
    except ValueError:
        return None
    if str(u) != head.lower():
        return None
    return _signed64(u.int >> 64), _signed64(u.int & ((1 << 64) - 1)), index


def record_index_info(partition: str, file_id: str, instant_millis: int) -> dict[str, Any]:
    """``HoodieRecordIndexInfo`` of a record in ``file_id`` of ``partition``, written at
    ``instant_millis`` (``HoodieMetadataPayload.createRecordIndexUpdate``): a UUID-style file
    id (``<uuid>-<n>``, Hudi's own) as encoding 0 (high and low 64 bits, index, ``fileId``
    ``""``), any other as encoding 1 (the string; bits and index -1). ``position`` null."""
    parsed = _parse_uuid_file_id(file_id)
    if parsed is not None:
        high, low, index = parsed
        return {"partitionName": partition, "fileIdHighBits": high, "fileIdLowBits": low,
                "fileIndex": index, "fileId": "", "instantTime": instant_millis,
                "fileIdEncoding": FILE_ID_ENCODING_UUID, "position": None}
    return {"partitionName": partition, "fileIdHighBits": -1, "fileIdLowBits": -1,
            "fileIndex": -1, "fileId": file_id, "instantTime": instant_millis,
            "fileIdEncoding": FILE_ID_ENCODING_RAW, "position": None}


def record_index_file_id(info: Mapping[str, Any]) -> str:
    """The file id a ``HoodieRecordIndexInfo`` names (``HoodieRecordIndexInfo`` decoding of
    ``HoodieMetadataPayload.getRecordGlobalLocation``)."""
    import uuid

    if info.get("fileIdEncoding", 0) == FILE_ID_ENCODING_RAW:
        return str(info["fileId"])
    high = int(info["fileIdHighBits"]) & ((1 << 64) - 1)
    low = int(info["fileIdLowBits"]) & ((1 << 64) - 1)
    u = str(uuid.UUID(int=(high << 64) | low))
    index = info.get("fileIndex")
    return u if index is None or index == MISSING_FILE_INDEX else f"{u}-{index}"


def record_index_record(key: str, partition: str, file_id: str,
                        instant_millis: int) -> dict[str, Any]:
    """The type-5 ``record_index`` record of data-table record ``key``."""
    rec: dict[str, Any] = {n: None for n in META_FIELD_NAMES}
    rec.update(key=key, type=TYPE_RECORD_INDEX, filesystemMetadata=None,
               BloomFilterMetadata=None, ColumnStatsMetadata=None,
               recordIndexMetadata=record_index_info(partition, file_id, instant_millis),
               SecondaryIndexMetadata=None)
    return rec


def instant_millis(instant: str, *, utc: bool) -> int:
    """``HoodieInstantTimeGenerator.parseDateFromInstantTime`` as epoch milliseconds: a
    ``yyyyMMddHHmmss[SSS]`` instant in UTC (``hoodie.table.timeline.timezone=UTC``) or the
    local time zone (Hudi's default, LOCAL)."""
    import datetime as dt

    if len(instant) not in (14, 17) or not instant.isdigit():
        raise UsageError("not an instant time (yyyyMMddHHmmss[SSS])", actual=instant)
    ms = int(instant[14:] or "0")
    t = dt.datetime.strptime(instant[:14], "%Y%m%d%H%M%S")
    if utc:
        t = t.replace(tzinfo=dt.UTC)
    return int(t.timestamp()) * 1000 + ms
