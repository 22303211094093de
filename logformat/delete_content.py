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
    """The delete records of a delete block's content (column-wise decoding, then one
    :class:`DeleteRecord` per record; the same records and errors as
    :func:`decode_delete_content_fastavro`)."""
    cols = decode_delete_columns(content, base=base, path=path)
    return DeleteContent(cols.version, cols.records())


def decode_delete_content_fastavro(content: bytes | memoryview, *, base: int = 0,
                                   path: str | None = None) -> DeleteContent:
    """The delete records decoded by fastavro, one Python object per record: the reference
    the column-wise decoder (:func:`decode_delete_columns`) equals, and its fallback."""
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


# --- column-wise decoding -----------------------------------------------------------------

#: union branch of ``ArrayWrapper`` (several ordering fields), after the eleven wrappers
ARRAY_BRANCH = 12
#: union branch -> ordering kind (``OrderingValue.kind``)
BRANCH_KINDS: dict[int, str] = {**{i + 1: kind for i, (kind, _, _) in
                                   enumerate(ORDERING_BRANCHES)}, ARRAY_BRANCH: ARRAY_KIND}
#: union branch -> the Arrow type of its values in :attr:`DeleteColumns.values`
ORDERING_ARROW_TYPES: dict[int, pa.DataType] = {
    1: pa.bool_(), 2: pa.int32(), 3: pa.int64(), 4: pa.float32(), 5: pa.float64(),
    6: pa.binary(), 7: pa.string(), 8: pa.date32(), 9: pa.decimal128(30, 15),
    10: pa.time64("us"), 11: pa.timestamp("us", tz="UTC"),
}
_INT_BRANCH = _BRANCH["int"]
_DECIMAL_BRANCH = _BRANCH["decimal"]
_TS_BRANCH = _BRANCH["timestamp_micros"]
_TS_PY = pa.timestamp("us", tz="+00:00")  # to_pylist gives datetime.timezone.utc, as fastavro


def branch_python(branch: int, values: pa.Array) -> list[Any]:
    """The Python values of one branch's Arrow values, as fastavro gives them."""
    if branch == _TS_BRANCH:
        values = values.cast(_TS_PY)
    return list(values.to_pylist())


@dataclass(frozen=True, eq=False)
class DeleteColumns:
    """The records of a delete block column-wise (spec/format.md §5.2).

    ``keys`` and ``partitions`` are Arrow strings (null where the record has none);
    ``branches`` is the ordering value's union branch per record (0 null, 1..11 the kinds of
    :data:`ORDERING_BRANCHES`, 12 ``ArrayWrapper``); ``values[b]`` holds the values of the
    records of branch ``b`` in record order, as :data:`ORDERING_ARROW_TYPES` says. A branch
    present in ``branches`` but not in ``values`` (``ArrayWrapper``, or values only the
    fastavro path gave) has its values as :class:`OrderingValue` objects only
    (:meth:`ordering_values`); :attr:`complete` tells whether every branch is in ``values``.
    """

    version: int
    keys: pa.Array
    partitions: pa.Array
    branches: np.ndarray
    values: dict[int, pa.Array]
    #: the ordering value per record, when the fastavro path built them
    objects: tuple[OrderingValue | None, ...] | None = None

    def __len__(self) -> int:
        return int(self.branches.size)

    @property
    def present(self) -> list[int]:
        """The union branches used, ascending."""
        return [int(b) for b in np.unique(self.branches)]

    @property
    def complete(self) -> bool:
        """Every ordering value is in :attr:`values` (none of them needs the objects)."""
        return all(b == 0 or b in self.values for b in self.present)

    def rows(self, branch: int) -> np.ndarray:
        """The records (positions) whose ordering value has union branch ``branch``."""
        return np.flatnonzero(self.branches == branch)

    def branch_values(self, branch: int, rows: np.ndarray) -> pa.Array:
        """The values (Arrow) of ``rows``, all of branch ``branch`` (in :attr:`values`)."""
        rank = np.cumsum(self.branches == branch) - 1
        return self.values[branch].take(pa.array(rank[np.asarray(rows, dtype=np.int64)]))

    def natural(self) -> np.ndarray:
        """Which records carry Hudi's natural order (null ordering value or IntWrapper(0))."""
        out = self.branches == 0
        ints = self.rows(_INT_BRANCH)
        if ints.size:
            if _INT_BRANCH in self.values:
                vals = self.values[_INT_BRANCH].to_numpy(zero_copy_only=False)
                out[ints] = vals == 0
            else:
                objs = self.ordering_values()
                out[ints] = [o is not None and o.value == 0
                             for o in (objs[i] for i in ints.tolist())]
        return np.asarray(out, dtype=bool)

    def ordering_column(self) -> pa.Array | None:
        """The ordering values as one Arrow column (null where none) when at most one kind
        is used and it is in :attr:`values`; else None."""
        kinds = [b for b in self.present if b != 0]
        n = len(self)
        if not kinds:
            return pa.nulls(n, pa.int64())
        if len(kinds) > 1 or kinds[0] not in self.values:
            return None
        vals = self.values[kinds[0]]
        if len(vals) == n:
            return vals
        valid = self.branches != 0
        idx = np.cumsum(valid) - 1
        return vals.take(pa.array(idx, mask=~valid))

    def ordering_values(self) -> list[OrderingValue | None]:
        """The ordering value of each record as an object (built on demand)."""
        if self.objects is not None:
            return list(self.objects)
        out: list[OrderingValue | None] = [None] * len(self)
        for b, arr in self.values.items():
            kind = BRANCH_KINDS[b]
            for i, v in zip(self.rows(b).tolist(), branch_python(b, arr), strict=True):
                out[i] = OrderingValue(kind, v)
        return out

    def records(self) -> tuple[DeleteRecord, ...]:
        """One :class:`DeleteRecord` per record (what :func:`decode_delete_content` gives)."""
        return tuple(DeleteRecord(k, p, o) for k, p, o in zip(
            self.keys.to_pylist(), self.partitions.to_pylist(), self.ordering_values(),
            strict=True))

    def take(self, indices: np.ndarray) -> DeleteColumns:
        """The records at ``indices``, in that order."""
        idx = np.asarray(indices, dtype=np.int64)
        where = pa.array(idx)
        br = self.branches[idx]
        values = {}
        for b in self.values:
            sel = idx[br == b]
            if sel.size:
                values[b] = self.branch_values(b, sel)
        objects = None
        if self.objects is not None:
            objects = tuple(self.objects[i] for i in idx.tolist())
        return DeleteColumns(self.version, self.keys.take(where), self.partitions.take(where),
                             br, values, objects)

    @classmethod
    def concat(cls, parts: Sequence[DeleteColumns]) -> DeleteColumns:
        """The records of ``parts`` one after the other (version of the first; 3 if none)."""
        if len(parts) == 1:
            return parts[0]
        version = parts[0].version if parts else 3
        keys = pa.concat_arrays([p.keys for p in parts]) if parts else pa.nulls(0, pa.string())
        partitions = (pa.concat_arrays([p.partitions for p in parts]) if parts
                      else pa.nulls(0, pa.string()))
        branches = (np.concatenate([p.branches for p in parts]) if parts
                    else np.zeros(0, dtype=np.int8))
        objects = None
        if any(not p.complete for p in parts):
            objects = tuple(o for p in parts for o in p.ordering_values())
        values: dict[int, pa.Array] = {}
        for b in sorted({int(b) for p in parts for b in p.present if b}):
            have = [p for p in parts if bool(np.any(p.branches == b))]
            if all(b in p.values for p in have):
                values[b] = pa.concat_arrays([p.values[b] for p in have])
        return cls(version, keys, partitions, branches, values, objects)

    @classmethod
    def from_records(cls, version: int, records: Sequence[DeleteRecord]) -> DeleteColumns:
        """The columns of records decoded one by one (the fastavro path): a kind's values are
        in :attr:`values` only where Arrow holds them exactly (decimals never)."""
        n = len(records)
        keys = pa.array([r.record_key for r in records], pa.string())
        partitions = pa.array([r.partition_path for r in records], pa.string())
        objects = tuple(r.ordering_value for r in records)
        branches = np.array([0 if o is None else _BRANCH.get(o.kind, ARRAY_BRANCH)
                             for o in objects], dtype=np.int8).reshape(n)
        values: dict[int, pa.Array] = {}
        for b in {int(b) for b in branches.tolist()}:
            if b in (0, ARRAY_BRANCH, _DECIMAL_BRANCH):
                continue
            py = [objects[i].value for i in np.flatnonzero(branches == b).tolist()]  # type: ignore[union-attr]
            try:
                arr = pa.array(py, ORDERING_ARROW_TYPES[b])
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError, ValueError):
                continue
            if branch_python(b, arr) == py:  # exact (NaNs and the like stay objects)
                values[b] = arr
        return cls(version, keys, partitions, branches, values, objects)


class _Miss(Exception):
    """The column-wise decoder cannot prove it reads these bytes as fastavro does."""


_U64_7F = np.uint64(0x7F)


def _varints(buf: np.ndarray, pos: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Zigzag varints starting at ``pos`` (int64): (value, position after it, ok). Only
    canonical encodings of at most ten bytes that end inside ``buf`` are ok."""
    n = pos.size
    size = buf.size
    u = np.zeros(n, dtype=np.uint64)
    end = pos.copy()
    ok = np.ones(n, dtype=bool)
    active = np.arange(n)
    for k in range(10):
        q = pos[active] + k
        inside = q < size
        if not bool(inside.all()):
            ok[active[~inside]] = False
            active, q = active[inside], q[inside]
        b = buf[q]
        u[active] |= (b & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        cont = (b & 0x80) != 0
        if k:
            bad = ~cont & (b == 0)
            if k == 9:
                bad |= cont | (b > 1)
            ok[active[bad]] = False
        done = ~cont
        end[active[done]] = q[done] + 1
        active = active[cont]
        if not active.size:
            break
    value = (u >> np.uint64(1)).astype(np.int64) ^ -(u & np.uint64(1)).astype(np.int64)
    return value, end, ok


class _Scan:
    """For every byte position that could start a record (first byte 0x00 or 0x02), the
    record that would start there under the strict grammar, and the position after it;
    positions where no such record can start are dropped."""

    def __init__(self, buf: np.ndarray) -> None:
        size = buf.size
        start = np.flatnonzero((buf == 0) | (buf == 2)).astype(np.int64)
        cols: dict[str, np.ndarray] = {"start": start}
        p = start.copy()
        for f in ("k", "p"):  # recordKey, partitionPath: ["null", "string"]
            inside = p < size
            b = np.zeros(p.size, dtype=np.uint8)
            b[inside] = buf[p[inside]]
            keep = inside & ((b == 0) | (b == 2))
            cols, p, b = self._keep(cols, keep, p, b)
            p += 1
            valid = b == 2
            length = np.zeros(p.size, dtype=np.int64)
            sel = np.flatnonzero(valid)
            v, e, ok = _varints(buf, p[sel])
            ok &= (v >= 0) & (v <= size - e)
            length[sel] = v
            p[sel] = e
            cols[f + "_valid"] = valid
            cols[f + "_pos"] = p.copy()
            cols[f + "_len"] = length
            p = p + np.where(valid, length, 0)
            keep = np.ones(p.size, dtype=bool)
            keep[sel[~ok]] = False
            cols, p = self._keep(cols, keep, p)
        # orderingVal: union branch 0..11 (ArrayWrapper and odd branches: fastavro's job)
        inside = p < size
        b = np.full(p.size, 0xFF, dtype=np.uint8)
        b[inside] = buf[p[inside]]
        keep = inside & ((b & 1) == 0) & (b <= 2 * 11)
        cols, p, b = self._keep(cols, keep, p, b)
        p += 1
        branch = (b >> 1).astype(np.int8)
        length = np.zeros(p.size, dtype=np.int64)  # bytes kinds: the value's length
        ival = np.zeros(p.size, dtype=np.int64)  # varint kinds: the value
        vpos = p.copy()
        ok = np.ones(p.size, dtype=bool)
        sel = np.flatnonzero(branch == 1)  # boolean: one byte, 0 or 1
        if sel.size:
            ins = p[sel] < size
            ok[sel] = ins
            good = sel[ins]
            ok[good] &= buf[p[good]] <= 1
            p[sel] += 1
        for kinds, width in (((4,), 4), ((5,), 8)):
            sel = np.flatnonzero(np.isin(branch, kinds))
            ok[sel] &= p[sel] + width <= size
            p[sel] += width
        sel = np.flatnonzero(np.isin(branch, (2, 3, 8, 10, 11)))
        if sel.size:
            v, e, vok = _varints(buf, p[sel])
            ival[sel] = v
            ok[sel] &= vok
            p[sel] = e
        sel = np.flatnonzero(np.isin(branch, (6, 7, 9)))
        if sel.size:
            v, e, vok = _varints(buf, p[sel])
            vok &= (v >= 0) & (v <= size - e)
            ok[sel] &= vok
            v = np.where(vok, v, 0)
            length[sel] = v
            vpos[sel] = e
            p[sel] = e + v
        cols.update(branch=branch, vpos=vpos, vlen=length, ival=ival)
        cols, p = self._keep(cols, ok, p)
        cols["next"] = p
        self.cols = cols
        self.start = cols["start"]

    @staticmethod
    def _keep(cols: dict[str, np.ndarray], keep: np.ndarray, *arrays: np.ndarray) -> Any:
        if bool(keep.all()):
            return (cols, *arrays)
        return ({k: v[keep] for k, v in cols.items()}, *(a[keep] for a in arrays))

    def chain(self, first: int, count: int) -> tuple[np.ndarray, int]:
        """The ``count`` records from position ``first`` (indices into the scan) and the
        position after the last, by pointer doubling over the next-record links."""
        start = self.start
        m = start.size
        i = int(np.searchsorted(start, first))
        if i >= m or int(start[i]) != first:
            raise _Miss("no record at an array block's start")
        nxt = self.cols["next"]
        j = np.searchsorted(start, nxt)
        j_clip = np.minimum(j, m - 1)
        link = np.where((j < m) & (start[j_clip] == nxt), j, m) if m else j
        jump = np.append(link, m)  # m: no record; it leads to itself
        chain = np.array([i], dtype=np.int64)
        while chain.size < count:
            chain = np.concatenate([chain, jump[chain]])[:count]
            if chain.size < count:
                jump = jump[jump]
        if bool(np.any(chain == m)):
            raise _Miss("records do not chain")
        return chain, int(nxt[chain[-1]])


def _one_varint(buf: np.ndarray, pos: int) -> tuple[int, int]:
    v, e, ok = _varints(buf, np.array([pos], dtype=np.int64))
    if not bool(ok[0]):
        raise _Miss("array block header")
    return int(v[0]), int(e[0])


#: most array blocks the column-wise decoder follows (Hudi writes one)
_MAX_ARRAY_BLOCKS = 16


def _strings(buf: np.ndarray, pos: np.ndarray, length: np.ndarray, valid: np.ndarray,
             arrow_type: pa.DataType) -> pa.Array:
    """The strings (or bytes) at ``pos`` (ascending, each ending before the next starts),
    null where not ``valid``: one Arrow array over the payload whose even items are the
    values and odd items the bytes between them, then a take of the even items (the bytes
    are copied in Arrow, never per value in Python)."""
    n = pos.size
    if n == 0:
        return pa.array([], arrow_type)
    if buf.size >= 2**31 - 1:
        raise _Miss("payload over 2 GiB")
    offsets = np.empty(2 * n, dtype=np.int32)
    offsets[0::2] = pos
    offsets[1::2] = pos + np.where(valid, length, 0)
    if n > 1 and bool(np.any(np.diff(offsets) < 0)):  # pragma: no cover - records ascend
        raise _Miss("values out of order")
    whole = pa.Array.from_buffers(arrow_type, 2 * n - 1,
                                  [None, pa.py_buffer(offsets), pa.py_buffer(buf)])
    every = bool(valid.all())
    arr = whole.take(pa.array(np.arange(0, 2 * n, 2, dtype=np.int64),
                              mask=None if every else ~valid))
    if arrow_type == pa.string():
        try:
            arr.validate(full=True)
        except pa.ArrowInvalid:
            raise _Miss("invalid UTF-8") from None
    return arr


def _decimals(buf: np.ndarray, pos: np.ndarray, length: np.ndarray) -> pa.Array:
    """decimal(30, 15) values from their big-endian two's complement unscaled bytes; at most
    12 bytes (below 10**30, so fastavro's 30-digit context keeps them exact)."""
    n = pos.size
    if n and int(length.max()) > 12:
        raise _Miss("decimal of more than 12 bytes")
    out = np.zeros((n, 16), dtype=np.uint8)
    neg = np.zeros(n, dtype=bool)
    has = length > 0
    neg[has] = (buf[pos[has]] & 0x80) != 0
    for j in range(12):
        sel = np.flatnonzero(length > j)
        out[sel, j] = buf[pos[sel] + length[sel] - 1 - j]
        fill = neg & (length <= j)
        out[fill, j] = 0xFF
    out[neg, 12:] = 0xFF
    return pa.Array.from_buffers(ORDERING_ARROW_TYPES[_DECIMAL_BRANCH], n,
                                 [None, pa.py_buffer(out.reshape(-1))])


def _branch_array(buf: np.ndarray, b: int, vpos: np.ndarray, vlen: np.ndarray,
                  ival: np.ndarray) -> pa.Array:
    t = ORDERING_ARROW_TYPES[b]
    n = vpos.size
    if b == 1:
        return pa.array(buf[vpos].astype(bool))
    if b in (2, 8):
        lo, hi = (-(2**31), 2**31 - 1) if b == 2 else _DATE_RANGE
        if n and (int(ival.min()) < lo or int(ival.max()) > hi):
            raise _Miss("int out of range")
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(ival.astype(np.int32))])
    if b in (3, 10, 11):
        lo, hi = _LONG_RANGES[b]
        if n and (int(ival.min()) < lo or int(ival.max()) > hi):
            raise _Miss("long out of range")
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(np.ascontiguousarray(ival))])
    if b in (4, 5):
        width = 4 if b == 4 else 8
        raw = buf[vpos[:, None] + np.arange(width)].reshape(-1)
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(raw.copy())])
    if b in (6, 7):
        return _strings(buf, vpos, vlen, np.ones(n, dtype=bool), t)
    return _decimals(buf, vpos, vlen)


_DATE_RANGE = (-719162, 2932896)  # 0001-01-01 .. 9999-12-31, days since the epoch
_LONG_RANGES = {
    3: (-(2**63), 2**63 - 1),
    10: (0, 86_400_000_000 - 1),  # a time of day
    11: (-62135596800000000, 253402300799999999),  # the datetime range
}


def _decode_columns(version: int, payload: bytes) -> DeleteColumns:
    """The strict column-wise decode; :class:`_Miss` when fastavro must decide."""
    buf = np.frombuffer(payload, dtype=np.uint8)
    size = buf.size
    scan: _Scan | None = None
    pos = 0
    chains = []
    for _ in range(_MAX_ARRAY_BLOCKS + 1):
        count, pos = _one_varint(buf, pos)
        if count == 0:
            break
        sized = count < 0
        if sized:
            count = -count
            block_bytes, pos = _one_varint(buf, pos)
        if count > (size - pos) // 3:  # a record takes at least three bytes
            raise _Miss("array block count")
        if scan is None:
            scan = _Scan(buf)
        chain, end = scan.chain(pos, count)
        if sized and end - pos != block_bytes:
            raise _Miss("array block byte size")
        chains.append(chain)
        pos = end
    else:
        raise _Miss("too many array blocks")
    if pos != size:
        raise _Miss("trailing bytes")
    if scan is None:
        empty = pa.array([], pa.string())
        return DeleteColumns(version, empty, empty, np.zeros(0, dtype=np.int8), {})
    c = scan.cols
    idx = chains[0] if len(chains) == 1 else np.concatenate(chains)
    keys = _strings(buf, c["k_pos"][idx], c["k_len"][idx], c["k_valid"][idx], pa.string())
    partitions = _strings(buf, c["p_pos"][idx], c["p_len"][idx], c["p_valid"][idx],
                          pa.string())
    branches = c["branch"][idx]
    values = {}
    for b in np.unique(branches).tolist():
        if b:
            sel = idx[branches == b]
            values[int(b)] = _branch_array(buf, int(b), c["vpos"][sel], c["vlen"][sel],
                                           c["ival"][sel])
    return DeleteColumns(version, keys, partitions, branches, values)


def decode_delete_columns(content: bytes | memoryview, *, base: int = 0,
                          path: str | None = None) -> DeleteColumns:
    """The records of a delete block's content column-wise, without a Python object per
    record: record starts found by pointer doubling over the next-record links of every
    position that could start one, then each field read over all records at once.

    Equals :func:`decode_delete_content_fastavro` field by field; bytes it cannot prove it
    reads as fastavro does (``ArrayWrapper``, non-canonical varints, bad framing, invalid
    UTF-8, values out of range) are decoded by that path, which gives the same records or
    the same typed error.
    """
    version, payload = _split(content, base, path)
    if CONTENT_VERSIONS[version].delete_payload == "avro":
        try:
            return _decode_columns(version, payload)
        except _Miss:
            pass
    dc = decode_delete_content_fastavro(content, base=base, path=path)
    return DeleteColumns.from_records(dc.version, dc.records)


def encode_delete_column_records(cols: DeleteColumns) -> bytes:
    """Delete block content (version 3) of the records of ``cols``: byte-identical to
    :func:`encode_delete_content` of ``cols.records()``. Column-wise when the records use
    one union branch whose values Arrow holds exactly (no decimals, ``ArrayWrapper`` or NaN
    floats); else record by record."""
    from .avro_columnar import Unsupported, encode_arrow_to_records

    n = len(cols)
    present = cols.present
    b = present[0] if len(present) == 1 else -1
    if n and b >= 0 and b not in (ARRAY_BRANCH, _DECIMAL_BRANCH) and (b == 0 or b in cols.values):
        fields: list[dict[str, Any]] = [{"name": "k", "type": ["null", "string"]},
                                        {"name": "p", "type": ["null", "string"]},
                                        {"name": "b", "type": "int"}]
        columns = {"k": cols.keys, "p": cols.partitions,
                   "b": pa.array(np.full(n, b, dtype=np.int32))}
        nan = False
        if b:
            values = cols.values[b]
            if pa.types.is_floating(values.type):
                nan = bool(pc.any(pc.is_nan(values)).as_py())
            fields.append({"name": "v", "type": ORDERING_BRANCHES[b - 1][2]})
            columns["v"] = values
        if not nan:
            schema = json.dumps({"type": "record", "name": "DeleteRow", "fields": fields})
            try:
                rows, _ = encode_arrow_to_records(pa.table(columns), schema, prefixed=False)
            except Unsupported:
                pass
            else:
                payload = _zigzag_varint(n) + rows + b"\x00"
                return _II.pack(3, len(payload)) + payload
    return encode_delete_content(cols.records())
