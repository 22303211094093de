"""Delete block content (spec §5.2).

Content::

    i32 contentVersion | i32 payloadLength N | N bytes payload

Version 3 payload is the Avro binary encoding of ``HoodieDeleteRecordList``. The ordering value
is a union over single-field wrapper records, exactly as Hudi's Java model declares it; since a
one-field record encodes like its field, the wire form is ``union index + primitive``. Versions
1 and 2 hold Kryo-serialized Java objects and cannot be decoded outside the JVM.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import io
import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .avro_content import read_content_version
from .constants import CONTENT_VERSIONS
from .errors import ContentError, LengthError, TruncatedError, UnsupportedVersionError, UsageError

_II = struct.Struct(">ii")
_NS = "org.apache.hudi.avro.model"


def _wrapper(name: str, value_type: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "namespace": _NS,
            "fields": [{"name": "value", "type": value_type}]}


#: union branch index -> (kind, wrapper record name, value type). Order is the wire format.
ORDERING_BRANCHES: tuple[tuple[str, str, Any], ...] = (
    ("boolean", "BooleanWrapper", "boolean"),
    ("int", "IntWrapper", "int"),
    ("long", "LongWrapper", "long"),
    ("float", "FloatWrapper", "float"),
    ("double", "DoubleWrapper", "double"),
    ("bytes", "BytesWrapper", "bytes"),
    ("string", "StringWrapper", "string"),
    ("date", "DateWrapper", {"type": "int", "logicalType": "date"}),
    ("decimal", "DecimalWrapper",
     {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    ("time_micros", "TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
    ("timestamp_micros", "TimestampMicrosWrapper",
     {"type": "long", "logicalType": "timestamp-micros"}),
)
_KIND_TO_NAME = {kind: f"{_NS}.{name}" for kind, name, _ in ORDERING_BRANCHES}
_NAME_TO_KIND = {v: k for k, v in _KIND_TO_NAME.items()}
#: the ordering value of several ordering fields (``hoodie.table.ordering.fields=a,b``): Hudi's
#: ``ArrayWrapper`` (union branch 12 after the eleven single-value wrappers:
#: ``HoodieDeleteRecordList.avsc``; ``HoodieAvroWrapperUtils.wrapValueIntoAvro`` wraps an
#: ``ArrayComparable`` into it), its ``wrappedValues`` a nullable array over the wrappers,
#: ``LocalDateWrapper`` included, as ``HoodieMetadata.avsc`` (table version 9) declares it
ARRAY_KIND = "array"
_LOCAL_DATE = "LocalDateWrapper"
_ARRAY_WRAPPER: dict[str, Any] = {
    "type": "record", "name": "ArrayWrapper", "namespace": _NS,
    "fields": [{"name": "wrappedValues", "default": None, "type": [
        "null", {"type": "array", "items": ["null", *[f"{_NS}.{n}" for _, n, _ in
                                                      ORDERING_BRANCHES],
                                            _wrapper(_LOCAL_DATE, "int")]}]}],
}
_KIND_TO_NAME[ARRAY_KIND] = f"{_NS}.ArrayWrapper"
_NAME_TO_KIND[f"{_NS}.ArrayWrapper"] = ARRAY_KIND
_NAME_TO_KIND[f"{_NS}.{_LOCAL_DATE}"] = "date"

DELETE_RECORD_LIST_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieDeleteRecordList",
    "namespace": _NS,
    "fields": [
        {
            "name": "deleteRecordList",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "HoodieDeleteRecord",
                    "namespace": _NS,
                    "fields": [
                        {"name": "recordKey", "type": ["null", "string"], "default": None},
                        {"name": "partitionPath", "type": ["null", "string"], "default": None},
                        {
                            "name": "orderingVal",
                            "type": ["null"] + [_wrapper(n, t) for _, n, t in ORDERING_BRANCHES]
                            + [_ARRAY_WRAPPER],
                            "default": None,
                        },
                    ],
                },
            },
        }
    ],
}
_PARSED = fastavro.parse_schema(DELETE_RECORD_LIST_SCHEMA, named_schemas={})


@dataclass(frozen=True)
class OrderingValue:
    """An ordering (precombine) value with its explicit wrapper kind (``int``, ``long``...).

    The kind matters on the wire: it selects the union branch. ``natural()`` is Hudi's
    "natural order" default, IntWrapper(0), which SQL DELETE writes.
    """

    kind: str
    #: the value; for ``array`` (several ordering fields) a tuple of
    #: :class:`OrderingValue` or None, one per field
    value: Any

    def __post_init__(self) -> None:
        if self.kind not in _KIND_TO_NAME:
            raise UsageError("unknown ordering value kind", expected=sorted(_KIND_TO_NAME),
                             actual=self.kind)

    @classmethod
    def natural(cls) -> OrderingValue:
        return cls("int", 0)

    @classmethod
    def infer(cls, value: Any) -> OrderingValue | None:
        """Pick the kind a Python value maps to (int -> long, str -> string...)."""
        if value is None:
            return None
        if isinstance(value, OrderingValue):
            return value
        if isinstance(value, bool):
            return cls("boolean", value)
        if isinstance(value, int):
            return cls("long", value)
        if isinstance(value, float):
            return cls("double", value)
        if isinstance(value, str):
            return cls("string", value)
        if isinstance(value, bytes):
            return cls("bytes", value)
        if isinstance(value, decimal.Decimal):
            return cls("decimal", value)
        if isinstance(value, _dt.datetime):
            return cls("timestamp_micros", value)
        if isinstance(value, _dt.date):
            return cls("date", value)
        if isinstance(value, _dt.time):
            return cls("time_micros", value)
        raise UsageError(f"no ordering value kind for {type(value).__name__}")


@dataclass(frozen=True)
class DeleteRecord:
    record_key: str | None
    partition_path: str | None = None
    ordering_value: OrderingValue | None = None


@dataclass(frozen=True)
class DeleteContent:
    version: int
    records: tuple[DeleteRecord, ...]

    def __len__(self) -> int:
        return len(self.records)


def _split(content: bytes | memoryview, base: int, path: str | None) -> tuple[int, bytes]:
    version = read_content_version(content, base=base, path=path)
    if len(content) < 8:
        raise TruncatedError("delete payload length cut off", path=path, offset=base + 4)
    _, n = _II.unpack_from(content, 0)
    if n < 0 or n > len(content) - 8:
        raise LengthError("delete payload length out of range", path=path, offset=base + 4,
                          expected=f"0..{len(content) - 8}", actual=n)
    return version, bytes(content[8 : 8 + n])


def decode_delete_payload(content: bytes | memoryview, *, base: int = 0,
                          path: str | None = None) -> tuple[int, dict[str, Any]]:
    """The version and the raw fastavro value of the payload (union branches as tuples)."""
    version, payload = _split(content, base, path)
    if CONTENT_VERSIONS[version].delete_payload != "avro":
        raise UnsupportedVersionError(
            "delete block content is Kryo-serialized Java objects; only version 3 (Avro) "
            "can be decoded outside the JVM", path=path, offset=base, expected=3, actual=version)
    buf = io.BytesIO(payload)
    try:
        value = fastavro.schemaless_reader(buf, _PARSED, None, return_record_name=True)
    except Exception as exc:
        raise ContentError(f"delete payload does not decode: {type(exc).__name__}: {exc}",
                           path=path, offset=base + 8) from None
    if not isinstance(value, dict):
        raise ContentError("delete payload is not a record", path=path, offset=base + 8)
    if buf.tell() != len(payload):
        raise ContentError("delete payload has trailing bytes", path=path, offset=base + 8,
                           expected=len(payload), actual=buf.tell())
    return version, value


def decode_delete_content(content: bytes | memoryview, *, base: int = 0,
                          path: str | None = None) -> DeleteContent:
    version, value = decode_delete_payload(content, base=base, path=path)
    records = []
    for item in value["deleteRecordList"]:
        ov = item["orderingVal"]
        ordering = None
        if ov is not None:
            ordering = _unwrap(ov)
        records.append(DeleteRecord(item["recordKey"], item["partitionPath"], ordering))
    return DeleteContent(version, tuple(records))


def _unwrap(ov: Any) -> OrderingValue:
    name, inner = ov
    kind = _NAME_TO_KIND[name]
    if kind != ARRAY_KIND:
        return OrderingValue(kind, inner["value"])
    values = inner["wrappedValues"] or []
    return OrderingValue(ARRAY_KIND, tuple(None if v is None else _unwrap(v) for v in values))


def _wrap(ov: OrderingValue) -> Any:
    if ov.kind != ARRAY_KIND:
        return (_KIND_TO_NAME[ov.kind], {"value": ov.value})
    return (_KIND_TO_NAME[ARRAY_KIND],
            {"wrappedValues": [None if v is None else _wrap(v) for v in ov.value]})


def delete_records_to_payload(records: Sequence[DeleteRecord]) -> dict[str, Any]:
    items = []
    for r in records:
        ov: Any = None
        if r.ordering_value is not None:
            ov = _wrap(r.ordering_value)
        items.append({"recordKey": r.record_key, "partitionPath": r.partition_path,
                      "orderingVal": ov})
    return {"deleteRecordList": items}


def encode_delete_payload_value(value: dict[str, Any], version: int = 3) -> bytes:
    """Encode a raw payload value (as returned by :func:`decode_delete_payload`)."""
    if version != 3:
        raise UsageError("morlog writes delete block content version 3 only", actual=version)
    buf = io.BytesIO()
    try:
        fastavro.schemaless_writer(buf, _PARSED, value)
    except Exception as exc:
        raise UsageError(f"delete records do not encode: {type(exc).__name__}: {exc}") from None
    payload = buf.getvalue()
    return _II.pack(version, len(payload)) + payload


def encode_delete_content(records: Sequence[DeleteRecord], version: int = 3) -> bytes:
    return encode_delete_payload_value(delete_records_to_payload(records), version)


#: union index (the wire value) of each ordering kind: branch 0 is null
_BRANCH = {kind: i + 1 for i, (kind, _, _) in enumerate(ORDERING_BRANCHES)}
#: Arrow ordering column -> (ordering kind, Avro type) encoded column-wise; a null ordering
#: value is written as Hudi's natural order, IntWrapper(0), which takes one zero byte like
#: a zero long or ``false`` (so only these kinds allow nulls column-wise)
_NULL_AS_NATURAL = frozenset({"long", "boolean"})


def encode_delete_columns(keys: pa.Array, partitions: pa.Array,
                          ordering: pa.Array | None = None, *,
                          no_ordering: bool = False) -> bytes:
    """Delete block content (version 3) for the keys, partition paths and ordering values
    of a batch, column-wise: byte-identical to :func:`encode_delete_content` of the
    :class:`DeleteRecord` per row that a writer builds (ordering value kind inferred from
    the Python value, :meth:`OrderingValue.infer`; a null or absent one is
    :meth:`OrderingValue.natural`; ``no_ordering``: every ordering value null, union branch
    0). Ordering types other than integers, floats, strings and booleans, and nulls among
    floats or strings, take the per-record path."""
    from .avro_columnar import Unsupported, encode_arrow_to_records

    n = len(keys)
    if len(partitions) != n or (ordering is not None and len(ordering) != n):
        raise UsageError("one partition path and ordering value per key", expected=n,
                         actual=(len(partitions), None if ordering is None else len(ordering)))
    kind: str | None
    if no_ordering:
        kind, values = "null", pa.nulls(n, pa.int64())
    else:
        kind, values = _ordering_column(ordering, n)
    if kind is None or keys.null_count or partitions.null_count:
        return _encode_rows(keys, partitions, ordering, no_ordering=no_ordering)
    avro = {"long": "long", "double": "double", "string": "string", "boolean": "boolean"}
    fields = [{"name": "k", "type": ["null", "string"]},
              {"name": "p", "type": ["null", "string"]}, {"name": "b", "type": "int"}]
    columns = {"k": keys.cast(pa.string()), "p": partitions.cast(pa.string())}
    if kind == "null":
        columns["b"] = pa.array(np.zeros(n, dtype=np.int32))
    else:
        columns["b"] = pa.array(np.where(np.asarray(values.is_valid()), _BRANCH[kind],
                                         _BRANCH["int"]).astype(np.int32))
        if values.null_count:
            values = pc.fill_null(values, pa.scalar(0 if kind == "long" else False,
                                                    values.type))
        fields.append({"name": "v", "type": avro[kind]})
        columns["v"] = values
    row_schema = json.dumps({"type": "record", "name": "DeleteRow", "fields": fields})
    try:
        rows, _ = encode_arrow_to_records(pa.table(columns), row_schema, prefixed=False)
    except Unsupported:
        return _encode_rows(keys, partitions, ordering, no_ordering=no_ordering)
    # HoodieDeleteRecordList: one array block of n items, then the end-of-array 0
    payload = (_zigzag_varint(n) + rows + b"\x00") if n else b"\x00"
    return _II.pack(3, len(payload)) + payload


def _ordering_column(ordering: pa.Array | None, n: int) -> tuple[str | None, pa.Array]:
    """(kind, values as the Arrow type of that kind) when column-wise encoding applies."""
    if ordering is None:
        return "long", pa.nulls(n, pa.int64())
    t = ordering.type
    if pa.types.is_integer(t) and t != pa.uint64():
        kind, values = "long", ordering.cast(pa.int64())
    elif pa.types.is_floating(t) and t != pa.float16():
        kind, values = "double", ordering.cast(pa.float64())
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        kind, values = "string", ordering.cast(pa.string())
    elif pa.types.is_boolean(t):
        kind, values = "boolean", ordering
    else:
        return None, ordering
    if values.null_count and kind not in _NULL_AS_NATURAL:
        return None, ordering
    return kind, values


def _encode_rows(keys: pa.Array, partitions: pa.Array, ordering: pa.Array | None, *,
                 no_ordering: bool = False) -> bytes:
    ords = ordering.to_pylist() if ordering is not None else [None] * len(keys)
    recs = [DeleteRecord(k, p, None if no_ordering else OrderingValue.natural() if o is None
                         else OrderingValue.infer(o))
            for k, p, o in zip(keys.to_pylist(), partitions.to_pylist(), ords, strict=True)]
    return encode_delete_content(recs)


def _zigzag_varint(v: int) -> bytes:
    u = (v << 1) ^ (v >> 63)
    out = bytearray()
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)
