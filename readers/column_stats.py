"""Column statistics of data files as Hudi's metadata table records them (spec/mdt.md §8-§10).

Computed from what is on storage, never per record in Python:

- base files (Parquet): the footer's column-chunk statistics, as Hudi's
  ``ParquetUtils.readColumnStatsFromMetadata`` / ``readRangeFromParquetMetadata`` read them
  (min/max of the chunk statistics, ``getNumNulls``, the chunk's ``getValueCount`` (nulls
  included), ``getTotalSize`` and ``getTotalUncompressedSize``, summed / min-maxed over row
  groups);
- log files: the data blocks of one instant decoded to Arrow, then ``pyarrow.compute`` per
  column, as ``HoodieTableMetadataUtil.collectColumnRangeMetadata`` does over the records a
  ``HoodieAppendHandle`` wrote (value count = records, null count = nulls, sizes 0, min/max
  in Avro's ``GenericData.compare`` order);

and turned into ``HoodieMetadataColumnStats`` values: ``minValue``/``maxValue`` wrapped in
the union branch Hudi uses for the column's type (index version V1: ``HoodieAvroUtils
.wrapValueIntoAvro``; V2: ``ValueType``'s primitive wrapper and ``valueType``), with the keys
of ``HoodieMetadataPayload.getColumnStatsIndexKey`` / ``getPartitionStatsIndexKey`` /
``getBloomFilterIndexKey`` (``ColumnIndexID``, ``PartitionIndexID``, ``FileIndexID``).

:func:`live_column_stats` merges records of one key as ``HoodieTableMetadataUtil
.mergeColumnStatsRecords`` does and returns the live statistics as an Arrow table.
"""

from __future__ import annotations

import base64
import dataclasses
import decimal
import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from morlog.config import (
    COLUMN_STATS_COLUMN_LIST,
    COLUMN_STATS_MAX_COLUMNS,
    INDEX_DEFS_PATH,
    POPULATE_META_FIELDS,
)
from morlog.logformat.errors import ContentError
from morlog.logformat.keybatch import KeyBatch
from morlog.logformat.mdt_records import META_FIELD_NAMES, NAMESPACE
from morlog.logformat.xxh64 import xxh64_batch

#: ``HashID``'s XXH64 seed: the Java int 0xdabadaba sign-extended to a long
_SEED = 0xFFFFFFFFDABADABA
_W = NAMESPACE + "."
#: ``HoodieTableMetadataUtil.META_COLS_TO_ALWAYS_INDEX`` in its TreeMap (sorted) order
META_COLS_TO_ALWAYS_INDEX = ("_hoodie_commit_time", "_hoodie_partition_path",
                             "_hoodie_record_key")
#: ``HoodieMetadataConfig.COLUMN_STATS_INDEX_MAX_COLUMNS`` default
DEFAULT_MAX_COLUMNS = 32
MAX_COLUMNS_KEY = COLUMN_STATS_MAX_COLUMNS
COLUMN_LIST_KEY = COLUMN_STATS_COLUMN_LIST
INDEX_DEFS_PATH_KEY = INDEX_DEFS_PATH
#: ``DecimalWrapper``'s precision and scale (``HoodieMetadata.avsc``)
_DECIMAL_MAX_PRECISION = 30
_DECIMAL_MAX_SCALE = 15

#: ``org.apache.hudi.stats.ValueType`` ordinals (Hudi 1.1, index version V2)
V1, NULL, BOOLEAN, INT, LONG, FLOAT, DOUBLE, STRING, BYTES, FIXED, DECIMAL, UUID, DATE = range(13)
TIME_MILLIS, TIME_MICROS, TIMESTAMP_MILLIS, TIMESTAMP_MICROS, TIMESTAMP_NANOS = range(13, 18)
LOCAL_TIMESTAMP_MILLIS, LOCAL_TIMESTAMP_MICROS, LOCAL_TIMESTAMP_NANOS = range(18, 21)
#: ValueType -> ``HoodieAvroWrapperUtils.PrimitiveWrapperType`` wrapper record
_PRIMITIVE = {BOOLEAN: "BooleanWrapper", INT: "IntWrapper", LONG: "LongWrapper",
              FLOAT: "FloatWrapper", DOUBLE: "DoubleWrapper", STRING: "StringWrapper",
              BYTES: "BytesWrapper", FIXED: "BytesWrapper", DECIMAL: "BytesWrapper",
              UUID: "StringWrapper", DATE: "IntWrapper", TIME_MILLIS: "IntWrapper",
              TIME_MICROS: "LongWrapper", TIMESTAMP_MILLIS: "LongWrapper",
              TIMESTAMP_MICROS: "LongWrapper", TIMESTAMP_NANOS: "LongWrapper",
              LOCAL_TIMESTAMP_MILLIS: "LongWrapper", LOCAL_TIMESTAMP_MICROS: "LongWrapper",
              LOCAL_TIMESTAMP_NANOS: "LongWrapper"}


# --- keys -----------------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def hash_id(text: str) -> str:
    """``ColumnIndexID`` / ``PartitionIndexID``: XXH64 (seed 0xFFFFFFFFDABADABA) of the
    UTF-8 text, 8 bytes big-endian, Base64 (12 characters)."""
    h = int(xxh64_batch(KeyBatch.of([text]), _SEED)[0])
    return _b64(h.to_bytes(8, "big"))


def file_index_id(file_name: str) -> str:
    """``FileIndexID``: MD5 of the file name (16 bytes), Base64 (24 characters)."""
    return _b64(hashlib.md5(file_name.encode("utf-8")).digest())


def partition_identifier(partition: str) -> str:
    """``HoodieTableMetadataUtil.getPartitionIdentifier``: ``.`` for the non-partitioned
    table's ``""``."""
    return partition if partition else "."


def column_stats_key(column: str, partition: str, file_name: str) -> str:
    """``HoodieMetadataPayload.getColumnStatsIndexKey``: ColumnIndexID + PartitionIndexID +
    FileIndexID."""
    return hash_id(column) + hash_id(partition_identifier(partition)) + file_index_id(file_name)


def partition_stats_key(column: str, partition: str) -> str:
    """``HoodieTableMetadataUtil.getPartitionStatsIndexKey``: ColumnIndexID +
    PartitionIndexID."""
    return hash_id(column) + hash_id(partition_identifier(partition))


def bloom_filter_key(partition: str, file_name: str) -> str:
    """``HoodieMetadataPayload.getBloomFilterIndexKey``: PartitionIndexID + FileIndexID."""
    return hash_id(partition_identifier(partition)) + file_index_id(file_name)


# --- which columns --------------------------------------------------------------------------


def _avro_field_types(schema_text: str) -> dict[str, Any]:
    """Top-level field name -> its non-null Avro type (dict or name)."""
    parsed = json.loads(schema_text)
    out: dict[str, Any] = {}
    for f in parsed.get("fields", []):
        t = f["type"]
        if isinstance(t, list):
            rest = [x for x in t if x != "null"]
            t = rest[0] if len(rest) == 1 else {"type": "union"}
        out[f["name"]] = t
    return out


def avro_type_supported(t: Any, *, v2: bool) -> bool:
    """``HoodieTableMetadataUtil.isColumnTypeSupported``: records, arrays, maps, enums and
    unions are not indexed; decimals only while ``precision + (15 - scale) <= 30`` and
    ``scale <= 15``; index version V1 (Hudi 1.0, Spark records) skips ``bytes`` and
    ``fixed`` too (decimals stored as ``fixed`` included)."""
    kind = t.get("type") if isinstance(t, dict) else t
    if isinstance(t, dict) and t.get("logicalType") == "decimal":
        p, s = int(t.get("precision", 0)), int(t.get("scale", 0))
        if p + (_DECIMAL_MAX_SCALE - s) > _DECIMAL_MAX_PRECISION or s > _DECIMAL_MAX_SCALE:
            return False
    if kind in ("record", "array", "map", "enum", "union"):
        return False
    if not v2 and kind in ("bytes", "fixed"):
        return False
    return isinstance(kind, str) and kind in (
        "boolean", "int", "long", "float", "double", "string", "bytes", "fixed", "null")


def columns_to_index(props: Mapping[str, str], schema_text: str,
                     index_definition: Mapping[str, Any] | None, *, v2: bool) -> list[str]:
    """The columns Hudi indexes in ``column_stats`` (and ``partition_stats``).

    ``index_definition``: the ``column_stats`` entry of the table's index definitions
    (``hoodie.table.index.defs.path``, Hudi 1.x), whose ``sourceFields`` are the columns Hudi
    chose when it built the index: taken as they are. Otherwise
    ``HoodieTableMetadataUtil.getColumnsToIndex``: the three ``META_COLS_TO_ALWAYS_INDEX``
    (when the table populates meta fields), then ``hoodie.metadata.index.column.stats
    .column.list`` if set, else the first ``...max.columns.to.index`` (32) non-meta fields of
    the table schema whose type is supported (:func:`avro_type_supported`)."""
    types = _avro_field_types(schema_text)
    if index_definition is not None and index_definition.get("sourceFields"):
        return [str(c) for c in index_definition["sourceFields"]]
    meta = (props.get(POPULATE_META_FIELDS, "true").strip().lower() != "false")
    out: list[str] = list(META_COLS_TO_ALWAYS_INDEX) if meta else []
    listed = [c.strip() for c in (props.get(COLUMN_LIST_KEY) or "").split(",") if c.strip()]
    if listed:
        out += [c for c in listed if c not in META_COLS_TO_ALWAYS_INDEX
                and (c not in types or avro_type_supported(types[c], v2=v2))]
        return out
    limit = int(props.get(MAX_COLUMNS_KEY) or DEFAULT_MAX_COLUMNS)
    plain = [n for n, t in types.items()
             if n not in META_FIELD_NAMES and n != "_hoodie_operation"
             and avro_type_supported(t, v2=v2)]
    return out + plain[:limit]


# --- one column's range ---------------------------------------------------------------------


@dataclasses.dataclass
class ColumnRange:
    """``HoodieColumnRangeMetadata``: one column's statistics over one file (or partition).
    ``min``/``max`` are plain values (int for integers, dates, times and timestamps, Decimal,
    str, bytes, float, bool) of Arrow type ``type`` (None: no value was seen)."""

    file_name: str
    column: str
    min: Any
    max: Any
    null_count: int
    value_count: int
    total_size: int = 0
    total_uncompressed_size: int = 0
    type: pa.DataType | None = None
    #: float columns in filter order (``morlog.readers.predicate``): how many non-null
    #: values are NaN; None: not known. Hudi's records have no such count (always None)
    nan_count: int | None = None


def _java_key(value: Any, t: pa.DataType | None) -> Any:
    """Sort key of a value in Java's ``compareTo`` order of its Hudi type: floats with -0.0
    below 0.0 and NaN above everything (``Double.compare``), strings in UTF-16 order
    (``String.compareTo``), bytes as signed bytes (``ByteBuffer.compareTo``)."""
    if isinstance(value, float):
        return (math.isnan(value), value if not math.isnan(value) else 0.0,
                math.copysign(1.0, value))
    if isinstance(value, str):
        return value.encode("utf-16-be")
    if isinstance(value, bytes) and t is not None and not pa.types.is_fixed_size_binary(t):
        return bytes(b ^ 0x80 for b in value)
    return value


def _pick(a: Any, b: Any, t: pa.DataType | None, smaller: bool) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    ka, kb = _java_key(a, t), _java_key(b, t)
    if smaller:
        return a if ka <= kb else b
    return a if ka >= kb else b


def merge_ranges(ranges: Iterable[ColumnRange], name: str) -> ColumnRange | None:
    """``HoodieColumnRangeMetadata.merge`` / ``FileFormatUtils.getColumnRangeInPartition``:
    min of the mins and max of the maxes (nulls ignored), counts and sizes summed; the type
    of the first range that has one."""
    out: ColumnRange | None = None
    for r in ranges:
        if out is None:
            out = dataclasses.replace(r, file_name=name)
            continue
        out.min = _pick(out.min, r.min, out.type or r.type, True)
        out.max = _pick(out.max, r.max, out.type or r.type, False)
        out.null_count += r.null_count
        out.value_count += r.value_count
        out.total_size += r.total_size
        out.total_uncompressed_size += r.total_uncompressed_size
        if out.type is None or pa.types.is_null(out.type):
            out.type = r.type
    return out


# --- base files (Parquet footers) -----------------------------------------------------------


def _stat_value(stat: Any, which: str, t: pa.DataType) -> Any:
    raw = getattr(stat, which + "_raw")
    if pa.types.is_decimal(t):
        if isinstance(raw, bytes):
            unscaled = int.from_bytes(raw, "big", signed=True)
        else:
            unscaled = int(raw)
        return decimal.Decimal(unscaled).scaleb(-t.scale)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw)
    if pa.types.is_boolean(t):
        return bool(raw)
    if pa.types.is_floating(t):
        return float(raw)
    return raw


def parquet_ranges(metadata: Any, arrow_schema: pa.Schema, file_name: str,
                   columns: Sequence[str]) -> list[ColumnRange]:
    """The ranges of ``columns`` in a Parquet file (``metadata``: ``pyarrow.parquet
    .FileMetaData``): per column chunk the statistics' min/max and null count, the chunk's
    value count and sizes; chunks of several row groups merged. Columns absent from the
    file (or nested) give no range, as in Hudi's reader."""
    paths = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    out: list[ColumnRange] = []
    for col in columns:
        i = paths.get(col)
        if i is None or col not in arrow_schema.names:
            continue
        t = arrow_schema.field(col).type
        parts = []
        for g in range(metadata.num_row_groups):
            c = metadata.row_group(g).column(i)
            st = c.statistics
            has = st is not None and st.has_min_max
            lo = _stat_value(st, "min", t) if has else None
            hi = _stat_value(st, "max", t) if has else None
            if isinstance(lo, float) and isinstance(hi, float):
                # parquet-mr's ParquetMetadataConverter on read: NaN bounds are no bounds,
                # a 0.0 min reads as -0.0 and a -0.0 max as 0.0 (PARQUET-1222)
                if math.isnan(lo) or math.isnan(hi):
                    lo = hi = None
                else:
                    lo = -0.0 if lo == 0 else lo
                    hi = 0.0 if hi == 0 else hi
            parts.append(ColumnRange(
                file_name, col, lo, hi,
                int(st.null_count) if st is not None and st.has_null_count else 0,
                int(c.num_values), int(c.total_compressed_size),
                int(c.total_uncompressed_size), t))
        merged = merge_ranges(parts, file_name)
        if merged is not None:
            out.append(merged)
    return out


# --- log files (decoded records) ------------------------------------------------------------


def _float_min_max(arr: pa.Array) -> tuple[Any, Any]:
    """Min and max of a float array in ``Double.compare`` order (-0.0 < 0.0 < ... < NaN)."""
    v = arr.drop_null().to_numpy(zero_copy_only=False).astype(np.float64)
    if not len(v):
        return None, None
    nan = np.isnan(v)
    finite = v[~nan]
    if not len(finite):
        return float("nan"), float("nan")
    lo, hi = float(finite.min()), float(finite.max())
    zeros = finite[finite == 0]
    if lo == 0:
        lo = -0.0 if np.signbit(zeros).any() else 0.0
    if hi == 0:
        hi = 0.0 if (~np.signbit(zeros)).any() else -0.0
    return lo, (float("nan") if nan.any() else hi)


def _array_min_max(arr: pa.Array) -> tuple[Any, Any]:
    t = arr.type
    if pa.types.is_floating(t):
        return _float_min_max(arr)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        # ByteBuffer.compareTo: signed bytes; one key per distinct value
        distinct = [v for v in pc.unique(arr.drop_null()).to_pylist()]
        if not distinct:
            return None, None
        keyed = sorted(distinct, key=lambda b: _java_key(b, t))
        return keyed[0], keyed[-1]
    if pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_timestamp(t):
        arr = arr.cast(pa.int64() if t.bit_width == 64 else pa.int32())
    mm = pc.min_max(arr)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    return lo, hi


def table_ranges(table: pa.Table, file_name: str, columns: Sequence[str],
                 types: Mapping[str, pa.DataType]) -> list[ColumnRange]:
    """``collectColumnRangeMetadata`` over decoded records: per column the number of
    records, the nulls, min and max; sizes 0 (Hudi: not comparable with Parquet's). No
    record at all: every column without values, type NULL."""
    out = []
    for col in columns:
        t = types.get(col)
        if t is None:
            continue
        if table.num_rows == 0:
            out.append(ColumnRange(file_name, col, None, None, 0, 0, 0, 0, None))
            continue
        if col not in table.column_names:
            out.append(ColumnRange(file_name, col, None, None, table.num_rows,
                                   table.num_rows, 0, 0, t))
            continue
        arr = table.column(col).combine_chunks()
        if arr.type != t:
            arr = arr.cast(t)
        lo, hi = _array_min_max(arr)
        out.append(ColumnRange(file_name, col, lo, hi, int(arr.null_count), len(arr), 0, 0, t))
    return out


# --- value wrappers -------------------------------------------------------------------------


def value_type(t: pa.DataType | None) -> tuple[int, str | None]:
    """``ValueType`` ordinal and additional info (``"precision,scale"`` for decimals) of an
    Arrow type (``ValueType.fromSchema`` / ``fromParquetPrimitiveType``)."""
    if t is None or pa.types.is_null(t):
        return NULL, None
    if pa.types.is_boolean(t):
        return BOOLEAN, None
    if pa.types.is_integer(t):
        return (LONG if t.bit_width == 64 else INT), None
    if pa.types.is_float32(t):
        return FLOAT, None
    if pa.types.is_floating(t):
        return DOUBLE, None
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return STRING, None
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return BYTES, None
    if pa.types.is_fixed_size_binary(t) and not pa.types.is_decimal(t):
        return FIXED, None
    if pa.types.is_decimal(t):
        return DECIMAL, f"{t.precision},{t.scale}"
    if pa.types.is_date(t):
        return DATE, None
    if pa.types.is_time32(t):
        return TIME_MILLIS, None
    if pa.types.is_time64(t):
        return TIME_MICROS, None
    if pa.types.is_timestamp(t):
        base = {"ms": TIMESTAMP_MILLIS, "us": TIMESTAMP_MICROS, "ns": TIMESTAMP_NANOS}
        local = {"ms": LOCAL_TIMESTAMP_MILLIS, "us": LOCAL_TIMESTAMP_MICROS,
                 "ns": LOCAL_TIMESTAMP_NANOS}
        if t.unit not in base:
            raise ContentError("timestamps in seconds have no Hudi value type", actual=str(t))
        return (base if t.tz else local)[t.unit], None
    raise ContentError("a column type Hudi's column statistics do not cover", actual=str(t))


def java_bytes(n: int) -> bytes:
    """``BigInteger.toByteArray``: the shortest big-endian two's complement of ``n``."""
    length = (n.bit_length() if n >= 0 else (~n).bit_length()) // 8 + 1
    return n.to_bytes(length, "big", signed=True)


def _unscaled(value: decimal.Decimal, scale: int) -> int:
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        scaled = value.scaleb(scale)
        if scaled != scaled.to_integral_value():
            raise ContentError("a decimal with more digits than its scale", actual=str(value))
        return int(scaled)


def wrap_value(value: Any, t: pa.DataType | None, *, v2: bool) -> tuple[str, dict[str, Any]] | None:
    """The ``minValue``/``maxValue`` union branch of ``value`` (None stays null).

    V2 (Hudi 1.1): ``ValueType.wrapValue``, the primitive wrapper of the value type;
    decimals as ``BytesWrapper`` of the unscaled value (``BigInteger.toByteArray``), dates
    as days in ``IntWrapper``, times and timestamps as their integer in ``Int``/
    ``LongWrapper``. V1 (Hudi 1.0): ``HoodieAvroUtils.wrapValueIntoAvro`` of the Java value
    Hudi read: dates in ``DateWrapper``, decimals in ``DecimalWrapper`` (scale 15),
    timestamps and times as their ``Long``/``Integer``."""
    if value is None or t is None:
        return None
    if v2:
        vt, _ = value_type(t)
        if vt == DECIMAL:
            inner: Any = java_bytes(_unscaled(decimal.Decimal(value), t.scale))
        else:
            inner = _plain(value, vt)
        return _W + _PRIMITIVE[vt], {"value": inner}
    if pa.types.is_decimal(t):
        q = decimal.Decimal(value).quantize(decimal.Decimal(1).scaleb(-_DECIMAL_MAX_SCALE))
        return _W + "DecimalWrapper", {"value": q}
    if pa.types.is_date(t):
        return _W + "DateWrapper", {"value": int(value)}
    vt, _ = value_type(t)
    if vt in (DATE, TIME_MILLIS):
        vt = INT
    elif vt in (TIME_MICROS, TIMESTAMP_MILLIS, TIMESTAMP_MICROS, TIMESTAMP_NANOS,
                LOCAL_TIMESTAMP_MILLIS, LOCAL_TIMESTAMP_MICROS, LOCAL_TIMESTAMP_NANOS):
        vt = LONG
    elif vt == FIXED:
        raise ContentError("Hudi 1.0 cannot wrap fixed values in column statistics",
                           actual=str(t))
    return _W + _PRIMITIVE[vt], {"value": _plain(value, vt)}


def _plain(value: Any, vt: int) -> Any:
    if vt == BOOLEAN:
        return bool(value)
    if vt in (FLOAT, DOUBLE):
        return float(value)
    if vt in (STRING, UUID):
        return str(value)
    if vt in (BYTES, FIXED):
        return bytes(value)
    return int(value)


def unwrap_value(wrapped: Any, vtype: Mapping[str, Any] | None) -> Any:
    """The plain value of a ``minValue``/``maxValue`` union (``HoodieAvroUtils
    .unwrapAvroValueWrapper``; V2 decimals back to Decimal)."""
    if wrapped is None:
        return None
    name, rec = wrapped if isinstance(wrapped, tuple) else ("", wrapped)
    v = rec["value"] if isinstance(rec, Mapping) else rec
    if vtype and vtype.get("typeOrdinal") == DECIMAL and isinstance(v, bytes):
        scale = int(str(vtype.get("additionalInfo") or "0,0").split(",")[1])
        return decimal.Decimal(int.from_bytes(v, "big", signed=True)).scaleb(-scale)
    return v


# --- records --------------------------------------------------------------------------------


def stats_metadata(r: ColumnRange, *, v2: bool, is_deleted: bool = False,
                   is_tight_bound: bool = False) -> dict[str, Any]:
    """``HoodieMetadataColumnStats`` of a range (``HoodieMetadataPayload
    .createColumnStatsRecord`` / ``createPartitionStatsRecords``)."""
    out: dict[str, Any] = {
        "fileName": r.file_name, "columnName": r.column,
        "minValue": wrap_value(r.min, r.type, v2=v2),
        "maxValue": wrap_value(r.max, r.type, v2=v2),
        "valueCount": r.value_count, "nullCount": r.null_count,
        "totalSize": r.total_size, "totalUncompressedSize": r.total_uncompressed_size,
        "isDeleted": is_deleted, "isTightBound": is_tight_bound,
    }
    if v2:
        ordinal, info = value_type(r.type)
        out["valueType"] = {"typeOrdinal": ordinal, "additionalInfo": info}
    return out


def metadata_record(key: str, type_: int, column_stats: dict[str, Any] | None = None,
                    bloom: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``HoodieMetadataRecord`` dict (meta fields null)."""
    rec: dict[str, Any] = {n: None for n in META_FIELD_NAMES}
    rec.update(key=key, type=type_, filesystemMetadata=None, BloomFilterMetadata=bloom,
               ColumnStatsMetadata=column_stats, recordIndexMetadata=None,
               SecondaryIndexMetadata=None)
    return rec


def range_of_stats(stats: Mapping[str, Any], t: pa.DataType | None) -> ColumnRange:
    """A :class:`ColumnRange` back from a ``HoodieMetadataColumnStats`` (its type ``t``, or
    None when the record has no value)."""
    vtype = stats.get("valueType")
    lo = unwrap_value(stats.get("minValue"), vtype)
    hi = unwrap_value(stats.get("maxValue"), vtype)
    if vtype is not None and vtype.get("typeOrdinal") == NULL:
        t = None
    if lo is None and hi is None and int(stats.get("valueCount") or 0) == 0:
        t = None if vtype is None or vtype.get("typeOrdinal") == NULL else t
    return ColumnRange(str(stats.get("fileName")), str(stats.get("columnName")), lo, hi,
                       int(stats.get("nullCount") or 0), int(stats.get("valueCount") or 0),
                       int(stats.get("totalSize") or 0),
                       int(stats.get("totalUncompressedSize") or 0), t)


def merge_column_stats(prev: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """``HoodieTableMetadataUtil.mergeColumnStatsRecords`` (two records of one key, ``new``
    written later): a tombstone on either side, or a tight-bound ``new``, gives ``new``;
    otherwise min of the mins and max of the maxes (nulls ignored), counts and sizes summed,
    ``fileName``/``isDeleted``/``isTightBound`` (and ``valueType``) from ``new``."""
    if new.get("isDeleted") or prev.get("isDeleted") or new.get("isTightBound"):
        return dict(new)
    vt = new.get("valueType") or prev.get("valueType")
    out = dict(new)
    for field, smaller in (("minValue", True), ("maxValue", False)):
        a, b = prev.get(field), new.get(field)
        if a is None or b is None:
            out[field] = b if a is None else a
            continue
        va, vb = unwrap_value(a, vt), unwrap_value(b, vt)
        ka, kb = _java_key(va, None), _java_key(vb, None)
        out[field] = (a if ka <= kb else b) if smaller else (a if ka >= kb else b)
    for field in ("valueCount", "nullCount", "totalSize", "totalUncompressedSize"):
        out[field] = int(prev.get(field) or 0) + int(new.get(field) or 0)
    return out


def merge_records(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Column-statistics records (oldest first; ``{"deleted": key}`` for MDT deletes) merged
    per key: key -> live ``HoodieMetadataColumnStats`` (tombstones dropped)."""
    merged: dict[str, dict[str, Any] | None] = {}
    for r in records:  # one per (file, column): not per data record
        if "deleted" in r:
            merged[str(r["deleted"])] = None
            continue
        stats = r.get("ColumnStatsMetadata")
        if stats is None:
            continue
        key = str(r["key"])
        prev = merged.get(key)
        merged[key] = dict(stats) if prev is None else merge_column_stats(prev, stats)
    return {k: v for k, v in merged.items() if v is not None and not v.get("isDeleted")}


def _wrapper_name(w: Any) -> str | None:
    return w[0].rsplit(".", 1)[-1] if isinstance(w, tuple) else None


def live_column_stats(records: Iterable[Mapping[str, Any]]) -> pa.Table:
    """The live statistics of ``column_stats`` (or ``partition_stats``) records as an Arrow
    table, one row per key: ``key``, ``file_name``, ``column``, ``min``/``max`` (the plain
    value as text, for pruning to cast), ``min_wrapper``, ``value_type``, ``value_count``,
    ``null_count``, ``total_size``, ``total_uncompressed_size``, ``is_tight_bound``; sorted
    by key."""
    live = sorted(merge_records(records).items())
    cols: dict[str, list[Any]] = {n: [] for n in (
        "key", "file_name", "column", "min", "max", "min_wrapper", "value_type",
        "value_count", "null_count", "total_size", "total_uncompressed_size",
        "is_tight_bound")}
    for key, s in live:  # one row per (file, column)
        vt = s.get("valueType")
        lo, hi = unwrap_value(s.get("minValue"), vt), unwrap_value(s.get("maxValue"), vt)
        cols["key"].append(key)
        cols["file_name"].append(s.get("fileName"))
        cols["column"].append(s.get("columnName"))
        cols["min"].append(None if lo is None else _text(lo))
        cols["max"].append(None if hi is None else _text(hi))
        cols["min_wrapper"].append(_wrapper_name(s.get("minValue") or s.get("maxValue")))
        cols["value_type"].append(None if vt is None else vt.get("typeOrdinal"))
        for f, n in (("value_count", "valueCount"), ("null_count", "nullCount"),
                     ("total_size", "totalSize"),
                     ("total_uncompressed_size", "totalUncompressedSize")):
            cols[f].append(int(s.get(n) or 0))
        cols["is_tight_bound"].append(bool(s.get("isTightBound")))
    return pa.table({
        "key": pa.array(cols["key"], pa.string()),
        "file_name": pa.array(cols["file_name"], pa.string()),
        "column": pa.array(cols["column"], pa.string()),
        "min": pa.array(cols["min"], pa.string()),
        "max": pa.array(cols["max"], pa.string()),
        "min_wrapper": pa.array(cols["min_wrapper"], pa.string()),
        "value_type": pa.array(cols["value_type"], pa.int32()),
        "value_count": pa.array(cols["value_count"], pa.int64()),
        "null_count": pa.array(cols["null_count"], pa.int64()),
        "total_size": pa.array(cols["total_size"], pa.int64()),
        "total_uncompressed_size": pa.array(cols["total_uncompressed_size"], pa.int64()),
        "is_tight_bound": pa.array(cols["is_tight_bound"], pa.bool_()),
    })


def _text(v: Any) -> str:
    if isinstance(v, bytes):
        return v.hex()
    return str(v)


__all__ = ["ColumnRange", "bloom_filter_key", "column_stats_key", "columns_to_index",
           "file_index_id", "hash_id", "java_bytes", "live_column_stats", "merge_column_stats",
           "merge_ranges", "merge_records", "metadata_record", "parquet_ranges",
           "partition_stats_key", "range_of_stats", "stats_metadata", "table_ranges",
           "unwrap_value", "value_type", "wrap_value"]
