"""Column-wise Avro record codec for Avro data block content (no Python object per record).

Hudi's Avro data block content is ``i32 version | i32 count | count x (i32 length | datum)``
(see :mod:`.avro_content`). fastavro decodes and encodes one record at a time through Python
dicts; this module does the same work one *field* at a time over all records with numpy:

* decoding keeps a position per record and reads each field of every record in one vectorised
  step (varints, zigzag, union branches, string lengths and bytes), then checks that every record
  consumed exactly its length prefix;
* encoding computes each field's encoded size per row from the Arrow arrays, lays the records
  out by a cumulative sum and scatters each field's bytes into place.

Supported Avro types: null unions of two branches (either order), boolean, int, long, float,
double, string, bytes, fixed, enum, records (nested, nullable or not) and the logical types
date, time-millis, time-micros, timestamp-*, local-timestamp-* and decimal (on bytes or fixed,
precision at most 38: Arrow ``decimal128``). Anything else (arrays, maps, uuid, other unions,
wider decimals) raises :class:`Unsupported`; so does input the fast path cannot
prove it reads exactly like fastavro (non-canonical varints, out-of-range values, bad framing).
The callers in :mod:`.blocks` then take the fastavro path, which gives the same result or the
same typed error as before. Pure: bytes in, values out.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .avro_content import record_spans
from .avroschema import avro_to_arrow_schema
from .errors import MorlogError

__all__ = ["Unsupported", "decode_block_records_to_arrow", "decode_column",
           "encode_arrow_to_records"]

_I32 = struct.Struct(">i")
_U8 = np.uint8
_I64 = np.int64


class Unsupported(Exception):
    """The fast path cannot handle this schema or input; use the fastavro path."""


# --- schema plan --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Node:
    kind: str  # bool int long float double string bytes fixed enum record nullable
    arrow: pa.DataType
    size: int = 0  # fixed
    symbols: tuple[str, ...] = ()  # enum
    fields: tuple[tuple[str, _Node], ...] = ()  # record
    inner: _Node | None = None  # nullable
    null_index: int = 0  # nullable: branch index of "null"
    precision: int = 0  # decimal (its scale is the Arrow type's; size 0: on bytes)


_INT_LOGICAL = {"date": pa.date32(), "time-millis": pa.time32("ms")}
_LONG_LOGICAL = {
    "time-micros": pa.time64("us"),
    "timestamp-millis": pa.timestamp("ms", tz="UTC"),
    "timestamp-micros": pa.timestamp("us", tz="UTC"),
    "local-timestamp-millis": pa.timestamp("ms"),
    "local-timestamp-micros": pa.timestamp("us"),
}
_PRIM = {"boolean": ("bool", pa.bool_()), "int": ("int", pa.int32()),
         "long": ("long", pa.int64()), "float": ("float", pa.float32()),
         "double": ("double", pa.float64()), "string": ("string", pa.string()),
         "bytes": ("bytes", pa.binary())}


def _full_name(t: dict[str, Any], ns: str | None) -> tuple[str, str | None]:
    name = str(t["name"])
    if "." in name:
        return name, name.rsplit(".", 1)[0]
    space: str | None = t.get("namespace", ns)
    return (f"{space}.{name}" if space else name), space


def _plan(t: Any, named: dict[str, _Node], ns: str | None) -> _Node:
    if isinstance(t, str):
        if t in _PRIM:
            prim, at = _PRIM[t]
            return _Node(prim, at)
        for key in (t, f"{ns}.{t}" if ns else t):
            if key in named:
                return named[key]
        raise Unsupported(f"type {t!r}")
    if isinstance(t, list):
        if len(t) == 2 and t.count("null") == 1:
            idx = t.index("null")
            inner = _plan(t[1 - idx], named, ns)
            if inner.kind == "nullable":
                raise Unsupported("nested union")
            return _Node("nullable", inner.arrow, inner=inner, null_index=idx)
        raise Unsupported("union")
    if not isinstance(t, dict):
        raise Unsupported(repr(t))
    kind = t.get("type")
    lt = t.get("logicalType")
    if kind == "int" and lt in _INT_LOGICAL:
        return _Node("int", _INT_LOGICAL[lt])
    if kind == "long" and lt in _LONG_LOGICAL:
        return _Node("long", _LONG_LOGICAL[lt])
    if lt == "decimal" and kind in ("bytes", "fixed"):
        return _decimal_node(t, named, ns)
    if lt in ("decimal", "uuid"):
        raise Unsupported(f"logical type {lt}")
    if kind in ("array", "map"):
        inner = _plan(t["items" if kind == "array" else "values"], named, ns)
        child = pa.field("element" if kind == "array" else "value", inner.arrow,
                         nullable=inner.kind == "nullable")
        return _Node(kind, pa.list_(child) if kind == "array" else pa.map_(pa.string(), child),
                     inner=inner)
    if kind == "record":
        full, space = _full_name(t, ns)
        fields = tuple((str(f["name"]), _plan(f["type"], named, space)) for f in t["fields"])
        st = pa.struct([pa.field(n, f.arrow, nullable=f.kind == "nullable") for n, f in fields])
        node = _Node("record", st, fields=fields)
        named[full] = node
        return node
    if kind == "enum":
        full, _ = _full_name(t, ns)
        node = _Node("enum", pa.string(), symbols=tuple(str(s) for s in t["symbols"]))
        named[full] = node
        return node
    if kind == "fixed":
        full, _ = _full_name(t, ns)
        node = _Node("fixed", pa.binary(int(t["size"])), size=int(t["size"]))
        named[full] = node
        return node
    if isinstance(kind, (str, list)) and kind not in ("array", "map"):
        return _plan(kind, named, ns)
    raise Unsupported(f"type {kind!r}")


def _decimal_node(t: dict[str, Any], named: dict[str, _Node], ns: str | None) -> _Node:
    """A decimal on ``bytes`` (``size`` 0) or on ``fixed``: Arrow ``decimal128`` (precision at
    most 38; wider ones are ``decimal256`` on the fastavro path)."""
    precision, scale = t.get("precision"), t.get("scale", 0)
    if not (isinstance(precision, int) and isinstance(scale, int)
            and 0 < precision <= 38 and 0 <= scale <= precision):
        raise Unsupported("decimal precision or scale")
    size = 0
    if t["type"] == "fixed":
        size = int(t["size"])
        if not 0 < size <= 16:
            raise Unsupported("decimal fixed size")
    node = _Node("decimal", pa.decimal128(precision, scale), size=size,
                 precision=precision)
    if size:
        full, _ = _full_name(t, ns)
        named[full] = node
    return node


#: a map's keys
_STRING = _Node("string", pa.string())


def _key_twice(counts: np.ndarray, keys: pa.Array) -> bool:
    """Whether a map holds a key twice (``counts``: entries per map, ``keys`` of all maps
    in order)."""
    if len(keys) < 2:
        return False
    row = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    pairs = pa.table({"r": row, "k": keys})
    return bool(pairs.group_by(["r", "k"]).aggregate([]).num_rows != len(keys))
#: the column-wise reader reads item j of every array in one step; more steps than this in
#: one column of a block (a very long array) and fastavro reads the block instead
MAX_ITEM_STEPS = 4096

#: 10**p as (high, low) unsigned 64-bit halves, p = 0..38: a decimal's bound
_POW10 = [(10**p >> 64, 10**p & (2**64 - 1)) for p in range(39)]


def _magnitude(le: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(negative?, high, low): the sign and the absolute value (two unsigned 64-bit halves) of
    the 128-bit two's complement integers of ``le`` (``n x 16`` little-endian bytes)."""
    halves = np.ascontiguousarray(le).view("<u8").reshape(-1, 2)
    lo, hi = halves[:, 0], halves[:, 1]
    neg = (hi >> np.uint64(63)) == 1
    nlo = ~lo + np.uint64(1)
    nhi = ~hi + (nlo == 0).astype(np.uint64)
    return neg, np.where(neg, nhi, hi), np.where(neg, nlo, lo)


def _within_precision(le: np.ndarray, precision: int) -> bool:
    """Whether every value's magnitude is below ``10**precision`` (fastavro rounds a value with
    more digits to the schema's precision: only its path reads those)."""
    _, hi, lo = _magnitude(le)
    bh, bl = _POW10[precision]
    over = (hi > np.uint64(bh)) | ((hi == np.uint64(bh)) & (lo >= np.uint64(bl)))
    return not bool(over.any())


@lru_cache(maxsize=256)
def _schema_plan(schema_json: str) -> tuple[_Node, pa.Schema]:
    """The record plan of a schema and the Arrow schema the slow path gives it."""
    s = json.loads(schema_json)
    if not isinstance(s, dict) or s.get("type") != "record":
        raise Unsupported("not a record schema")
    node = _plan(s, {}, None)
    try:
        arrow_schema = avro_to_arrow_schema(s)
    except Exception as exc:
        raise Unsupported(str(exc)) from None
    return node, arrow_schema


# --- decoding -----------------------------------------------------------------------------

_TS_LIMITS = {  # the datetime range fastavro can decode into, per logical unit
    "ms": (-62135596800000, 253402300799999),
    "us": (-62135596800000000, 253402300799999999),
}
_DATE_LIMITS = (-719162, 2932896)  # 0001-01-01 .. 9999-12-31 in days since the epoch


class _Reader:
    def __init__(self, buf: np.ndarray, ends: np.ndarray) -> None:
        self.buf = buf
        self.ends = ends  # per record, exclusive

    def check(self, pos: np.ndarray, rows: np.ndarray, need: np.ndarray | int) -> None:
        if pos.size and bool(np.any(pos + need > self.ends[rows])):
            raise Unsupported("record overrun")

    def varint(self, pos: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Zigzag varints at ``pos`` (advanced in place); canonical encodings only."""
        n = pos.size
        val = np.zeros(n, dtype=np.uint64)
        active = np.arange(n)
        buf = self.buf
        for k in range(10):
            p = pos[active]
            if bool(np.any(p >= self.ends[rows[active]])):
                raise Unsupported("varint overrun")
            b = buf[p]
            val[active] |= (b & 0x7F).astype(np.uint64) << np.uint64(7 * k)
            pos[active] += 1
            cont = (b & 0x80) != 0
            if k and bool(np.any(~cont & (b == 0))):
                raise Unsupported("non-canonical varint")
            active = active[cont]
            if not active.size:
                break
        else:
            raise Unsupported("varint too long")
        return ((val >> np.uint64(1)).astype(_I64) ^ -(val & np.uint64(1)).astype(_I64))

    def fixed_bytes(self, pos: np.ndarray, rows: np.ndarray, width: int) -> np.ndarray:
        self.check(pos, rows, width)
        out = self.buf[pos[:, None] + np.arange(width)]
        pos += width
        return np.ascontiguousarray(out)

    def decimal(self, node: _Node, pos: np.ndarray, rows: np.ndarray) -> pa.Array:
        """Big-endian two's complement unscaled values (``size`` bytes, or a length and that
        many bytes) as ``decimal128``: sign-extended into 16 little-endian bytes."""
        n = pos.size
        if node.size:
            lengths = np.full(n, node.size, dtype=_I64)
        else:
            lengths = self.varint(pos, rows)
            if bool(np.any((lengths < 1) | (lengths > 16))):
                raise Unsupported("decimal bytes length")
        self.check(pos, rows, lengths)
        le = np.zeros((n, 16), dtype=_U8)
        total = int(lengths.sum())
        if total:
            starts = np.zeros(n, dtype=_I64)
            np.cumsum(lengths[:-1], out=starts[1:])
            j = np.arange(total, dtype=_I64) - np.repeat(starts, lengths)  # byte j of its value
            row = np.repeat(np.arange(n, dtype=_I64), lengths)
            src = np.repeat(pos, lengths) + j
            le.reshape(-1)[row * 16 + np.repeat(lengths, lengths) - 1 - j] = self.buf[src]
            neg = self.buf[pos] >= 0x80
            fill = np.arange(16)[None, :] >= lengths[:, None]
            le[fill & neg[:, None]] = 0xFF
        pos += lengths
        if not _within_precision(le, node.precision):
            raise Unsupported("decimal beyond its precision")
        return pa.Array.from_buffers(node.arrow, n, [None, pa.py_buffer(le.reshape(-1))])

    def repeated(self, node: _Node, pos: np.ndarray, rows: np.ndarray) -> pa.Array:
        """An array's items (a map's entries) in Avro's blocks: a count, that many items, ...,
        a zero count. Item ``j`` of every row whose block holds it is read in one step; a
        block given with its byte size (a negative count), or more than
        :data:`MAX_ITEM_STEPS` steps in all, is left to fastavro."""
        n = pos.size
        assert node.inner is not None
        got: list[pa.Array] = []
        keys: list[pa.Array] = []
        owner: list[np.ndarray] = []  # the row (0..n-1) of each item read, in read order
        totals = np.zeros(n, dtype=_I64)
        active = np.arange(n)
        steps = 0
        while active.size:
            p = pos[active]
            count = self.varint(p, rows[active])
            pos[active] = p
            if bool(np.any(count < 0)):
                raise Unsupported("array block with a byte size")
            keep = count > 0
            active, count = active[keep], count[keep]
            if not active.size:
                break
            steps += int(count.max())
            if steps > MAX_ITEM_STEPS:
                raise Unsupported("arrays too long for the column-wise reader")
            for j in range(int(count.max())):
                sel = active[count > j]
                p = pos[sel].copy()
                if node.kind == "map":
                    keys.append(self.read(_STRING, p, rows[sel]))
                    p = self.last_pos
                got.append(self.read(node.inner, p, rows[sel]))
                pos[sel] = self.last_pos
                owner.append(sel)
            totals[active] += count
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(totals, out=offsets[1:])
        if owner:
            who = np.concatenate(owner)
            order = pa.array(np.argsort(who, kind="stable"))  # row-major, items in order
            values = pa.concat_arrays(got).take(order)
        else:
            values = pa.array([], node.arrow.value_type if node.kind == "array"
                              else node.arrow.item_type)
        self.last_pos = pos
        offs = pa.array(offsets)
        if node.kind == "array":
            return pa.ListArray.from_arrays(offs, values, type=node.arrow)
        key_arr = pa.concat_arrays(keys).take(order) if keys else pa.array([], pa.string())
        if _key_twice(totals, key_arr):
            # fastavro's dict keeps one entry (the last value at the first key's place);
            # only its path reads that
            raise Unsupported("a map with a key twice")
        return pa.MapArray.from_arrays(offs, key_arr, values, type=node.arrow)

    def read(self, node: _Node, pos: np.ndarray, rows: np.ndarray) -> pa.Array:
        k = node.kind
        n = pos.size
        if k == "nullable":
            assert node.inner is not None
            branch = self.varint(pos, rows)
            if bool(np.any((branch != 0) & (branch != 1))):
                raise Unsupported("union branch out of range")
            valid = branch != node.null_index
            sel = np.flatnonzero(valid)
            inner = self.read(node.inner, pos[sel], rows[sel])
            pos[sel] = self.last_pos
            self.last_pos = pos
            if sel.size == n:
                return inner
            idx = np.cumsum(valid) - 1
            return inner.take(pa.array(idx, mask=~valid))
        if k == "bool":
            raw = self.fixed_bytes(pos, rows, 1)[:, 0]
            if bool(np.any(raw > 1)):
                raise Unsupported("boolean byte")
            arr: pa.Array = pa.array(raw.astype(bool))
        elif k in ("int", "long"):
            v = self.varint(pos, rows)
            if k == "int":
                if bool(np.any((v < -(2**31)) | (v >= 2**31))):
                    raise Unsupported("int out of range")
                v = v.astype(np.int32)
            t = node.arrow
            if pa.types.is_timestamp(t):
                lo, hi = _TS_LIMITS[t.unit]
                if bool(np.any((v < lo) | (v > hi))):
                    raise Unsupported("timestamp out of datetime range")
            elif pa.types.is_date32(t):
                if bool(np.any((v < _DATE_LIMITS[0]) | (v > _DATE_LIMITS[1]))):
                    raise Unsupported("date out of range")
            elif pa.types.is_time32(t) or pa.types.is_time64(t):
                day = 86_400_000 if pa.types.is_time32(t) else 86_400_000_000
                if bool(np.any((v < 0) | (v >= day))):
                    raise Unsupported("time of day out of range")
            arr = pa.Array.from_buffers(t, n, [None, pa.py_buffer(np.ascontiguousarray(v))])
        elif k in ("float", "double"):
            width = 4 if k == "float" else 8
            raw = self.fixed_bytes(pos, rows, width)
            vals = raw.reshape(-1).view("<f4" if width == 4 else "<f8")
            arr = pa.Array.from_buffers(node.arrow, n, [None, pa.py_buffer(vals.copy())])
        elif k in ("string", "bytes"):
            lengths = self.varint(pos, rows)
            if bool(np.any(lengths < 0)):
                raise Unsupported("negative length")
            self.check(pos, rows, lengths)
            offsets = np.zeros(n + 1, dtype=_I64)
            np.cumsum(lengths, out=offsets[1:])
            total = int(offsets[-1])
            if total:
                src = np.repeat(pos - offsets[:-1], lengths) + np.arange(total, dtype=_I64)
                data = self.buf[src]
            else:
                data = np.zeros(0, dtype=_U8)
            pos += lengths
            big = total >= 2**31 - 1
            at = (pa.large_string() if k == "string" else pa.large_binary()) if big else \
                (pa.string() if k == "string" else pa.binary())
            offs = offsets if big else offsets.astype(np.int32)
            arr = pa.Array.from_buffers(at, n, [None, pa.py_buffer(offs),
                                                pa.py_buffer(data)])
            if k == "string":
                try:
                    arr.validate(full=True)
                except pa.ArrowInvalid:
                    raise Unsupported("invalid UTF-8") from None
            if big:
                arr = arr.cast(pa.string() if k == "string" else pa.binary())
        elif k == "fixed":
            raw = self.fixed_bytes(pos, rows, node.size)
            arr = pa.Array.from_buffers(node.arrow, n, [None, pa.py_buffer(raw.reshape(-1))])
        elif k == "decimal":
            arr = self.decimal(node, pos, rows)
        elif k in ("array", "map"):
            arr = self.repeated(node, pos, rows)
        elif k == "enum":
            idx = self.varint(pos, rows)
            if bool(np.any((idx < 0) | (idx >= len(node.symbols)))):
                raise Unsupported("enum index out of range")
            arr = pa.array(node.symbols, pa.string()).take(pa.array(idx))
        elif k == "record":
            children = []
            for _, child in node.fields:
                children.append(self.read(child, pos, rows))
                pos = self.last_pos
            assert isinstance(node.arrow, pa.StructType)
            arr = pa.StructArray.from_arrays(children, fields=list(node.arrow))
        else:  # pragma: no cover - _plan admits no other kinds
            raise Unsupported(k)
        self.last_pos = pos
        return arr

    #: where each record's read stands after the last read() (the next field starts there)
    last_pos: np.ndarray


def _walk_framing(content: bytes | memoryview, count: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Start and end of every record's datum; raises Unsupported on bad framing."""
    try:
        starts, lengths, end = record_spans(content, count)
    except MorlogError:
        raise Unsupported("framing") from None
    return starts, starts + lengths, end


@lru_cache(maxsize=256)
def _prefix_plan(schema_json: str, field: str) -> _Node:
    """The plan of the record's fields up to ``field``: the fields after it may be of types
    the columnar reader does not take (named types are defined before they are used)."""
    s = json.loads(schema_json)
    fields = s.get("fields") if isinstance(s, dict) else None
    if not isinstance(fields, list):
        raise Unsupported("not a record schema")
    names = [f.get("name") if isinstance(f, dict) else None for f in fields]
    if field not in names:
        raise Unsupported(f"no field {field}")
    node, _ = _schema_plan(json.dumps({**s, "fields": fields[: names.index(field) + 1]}))
    return node


def decode_column(content: bytes | memoryview, schema_json: str, field: str,
                  starts: np.ndarray, ends: np.ndarray) -> pa.Array:
    """One top-level field of the records whose datums are ``content[starts[i]:ends[i]]``,
    reading only the fields up to it (the records' remaining bytes are not checked).

    Equals the field's column of the fastavro path when that reads the same fields; raises
    :class:`Unsupported` for anything it cannot prove so (as the other decoders).
    """
    node = _prefix_plan(schema_json, field)
    reader = _Reader(np.frombuffer(content, dtype=_U8), np.asarray(ends, dtype=_I64))
    rows = np.arange(len(starts))
    pos = np.array(starts, dtype=_I64)
    for name, child in node.fields:
        arr = reader.read(child, pos, rows)
        if name == field:
            return arr
        pos = reader.last_pos
    raise Unsupported(f"no field {field}")  # pragma: no cover - checked above


def decode_block_records_to_arrow(content: bytes | memoryview, schema_json: str, *,
                                  base: int = 0, path: str | None = None) -> pa.Table:
    """The ``record count`` records of an Avro data block's content as an Arrow table.

    The table equals ``records_to_arrow(decode_records(content, schema))`` (schema from
    :func:`~.avroschema.avro_to_arrow_schema`); bytes after the last record (an index trailer)
    are ignored. Raises :class:`Unsupported` when the schema or the bytes need the fastavro
    path (which then gives the result or the typed error). ``base`` and ``path`` are accepted
    for symmetry with the other decoders; errors are reported by that fallback.
    """
    del base, path
    node, arrow_schema = _schema_plan(schema_json)
    if not node.fields:
        raise Unsupported("record without fields")
    if len(content) < 8:
        raise Unsupported("short content")
    version, count = struct.unpack_from(">ii", content, 0)
    if version not in (1, 2, 3) or count < 0 or count * 4 > len(content) - 8:
        raise Unsupported("header")
    starts, ends, _ = _walk_framing(content, count)
    buf = np.frombuffer(content, dtype=_U8)
    reader = _Reader(buf, ends)
    rows = np.arange(count)
    pos = starts.copy()
    cols = []
    for _, child in node.fields:
        cols.append(reader.read(child, pos, rows))
        pos = reader.last_pos
    if not np.array_equal(pos, ends):
        raise Unsupported("record length does not match its encoding")
    return pa.Table.from_arrays(cols, schema=arrow_schema)


# --- encoding -----------------------------------------------------------------------------


def _varint_sizes(u: np.ndarray) -> np.ndarray:
    """Bytes of the varint of each unsigned value."""
    sizes = np.ones(u.size, dtype=_I64)
    for k in range(1, 10):
        sizes += u >= np.uint64(1 << (7 * k))
    return sizes


def _zigzag(v: np.ndarray) -> np.ndarray:
    v = v.astype(_I64)
    return ((v << 1) ^ (v >> 63)).astype(np.uint64)


def _write_varints(out: np.ndarray, pos: np.ndarray, u: np.ndarray, sizes: np.ndarray) -> None:
    u = u.copy()
    for k in range(int(sizes.max()) if sizes.size else 0):
        sel = np.flatnonzero(sizes > k)
        byte = (u[sel] & np.uint64(0x7F)).astype(_U8)
        byte |= np.where(sizes[sel] > k + 1, 0x80, 0).astype(_U8)
        out[pos[sel] + k] = byte
        u[sel] >>= np.uint64(7)


class _Enc:
    """Encoded sizes of one Arrow array under one Avro node; writes them later."""

    def __init__(self, node: _Node, arr: pa.Array) -> None:
        self.node = node
        k = node.kind
        self.kind = k  # a decimal encodes as the bytes or fixed it stands on
        n = len(arr)
        self.children: list[_Enc] = []
        if k != "nullable" and arr.null_count:
            raise Unsupported("null in a non-nullable field")
        if k == "nullable":
            assert node.inner is not None
            valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            self.valid = valid
            self.sel = np.flatnonzero(valid)
            inner_arr = arr if self.sel.size == n else arr.filter(pa.array(valid))
            self.inner = _Enc(node.inner, inner_arr)
            self.sizes = np.ones(n, dtype=_I64)
            self.sizes[self.sel] += self.inner.sizes
            return
        t = node.arrow
        if k == "decimal":
            self._decimal(arr)
            return
        if k in ("array", "map"):
            self._repeated(arr)
            return
        if k == "record":
            assert isinstance(t, pa.StructType)
            if not pa.types.is_struct(arr.type):
                raise Unsupported("not a struct")
            names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
            self.sizes = np.zeros(n, dtype=_I64)
            flat = arr.flatten()
            for name, child in node.fields:
                if name not in names:
                    raise Unsupported(f"field {name} missing")
                enc = _Enc(child, flat[names.index(name)])
                self.children.append(enc)
                self.sizes += enc.sizes
            return
        arr = _conform(arr, t, k)
        self.arr = arr
        if k == "bool":
            self.values = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=_U8)
            self.sizes = np.ones(n, dtype=_I64)
        elif k in ("int", "long"):
            ints = arr.view(pa.int32() if k == "int" or t.bit_width == 32 else pa.int64())
            self.u = _zigzag(ints.to_numpy(zero_copy_only=False))
            self.sizes = _varint_sizes(self.u)
        elif k in ("float", "double"):
            vals = np.asarray(arr.to_numpy(zero_copy_only=False))
            width = 4 if k == "float" else 8
            self.raw = vals.astype(f"<f{width}").view(_U8).reshape(n, width)
            self.sizes = np.full(n, 4 if k == "float" else 8, dtype=_I64)
        elif k in ("string", "bytes"):
            offs = np.frombuffer(arr.buffers()[1], dtype=np.int32)[arr.offset: arr.offset + n + 1]
            self.offs = offs.astype(_I64)
            self.lengths = np.diff(self.offs)
            self.data = np.frombuffer(arr.buffers()[2], dtype=_U8) if arr.buffers()[2] \
                else np.zeros(0, dtype=_U8)
            self.u = _zigzag(self.lengths)
            self.lsizes = _varint_sizes(self.u)
            self.sizes = self.lsizes + self.lengths
        elif k == "fixed":
            width = node.size
            data = np.frombuffer(arr.buffers()[1], dtype=_U8) if n else np.zeros(0, dtype=_U8)
            self.raw = data[arr.offset * width: (arr.offset + n) * width].reshape(n, width)
            self.sizes = np.full(n, width, dtype=_I64)
        elif k == "enum":
            idx = pc.index_in(arr, value_set=pa.array(node.symbols, pa.string()))
            if idx.null_count:
                raise Unsupported("enum symbol")
            self.u = _zigzag(idx.to_numpy(zero_copy_only=False))
            self.sizes = _varint_sizes(self.u)
        else:  # pragma: no cover
            raise Unsupported(k)

    def _decimal(self, arr: pa.Array) -> None:
        """A ``decimal128`` column of the schema's scale as fastavro writes it: the unscaled
        value in big-endian two's complement, on ``fixed`` sign-extended to its size, on
        ``bytes`` in ``|v|.bit_length() // 8 + 1`` bytes (fastavro's length: one more than
        Java's ``BigInteger.toByteArray`` for some negative values; both read back alike)."""
        node, n = self.node, len(arr)
        at = arr.type
        if not (pa.types.is_decimal128(at) and at.scale == node.arrow.scale):
            raise Unsupported(f"Arrow {at} for Avro decimal")
        buf = arr.buffers()[1]
        le = (np.frombuffer(buf, dtype=_U8)[arr.offset * 16: (arr.offset + n) * 16]
              if n else np.zeros(0, dtype=_U8)).reshape(n, 16)
        if not _within_precision(le, node.precision):
            raise Unsupported("decimal beyond the schema's precision")
        be = le[:, ::-1]
        if node.size:
            w = node.size
            neg = be[:, 0] >= 0x80
            head_ok = (be[:, : 16 - w] == np.where(neg, 0xFF, 0).astype(_U8)[:, None]).all(axis=1)
            if not bool((head_ok & ((be[:, 16 - w] >= 0x80) == neg)).all()):
                raise Unsupported("decimal wider than its fixed size")
            self.kind = "fixed"
            self.raw = np.ascontiguousarray(be[:, 16 - w:])
            self.sizes = np.full(n, w, dtype=_I64)
            return
        _, hi, lo = _magnitude(le)
        mag = np.stack([lo, hi], axis=1).view(_U8).reshape(n, 16)
        nz = mag != 0
        top = 15 - np.argmax(nz[:, ::-1], axis=1)  # the highest non-zero byte
        some = nz.any(axis=1)
        top_byte = mag[np.arange(n), top]
        lengths = np.where(some, top + 1 + (top_byte >= 0x80), 1).astype(_I64)
        data = np.ascontiguousarray(be[np.arange(16)[None, :] >= (16 - lengths)[:, None]])
        self.kind = "bytes"
        self.offs = np.zeros(n + 1, dtype=_I64)
        np.cumsum(lengths, out=self.offs[1:])
        self.lengths = lengths
        self.data = data
        self.arr = pa.Array.from_buffers(pa.binary(), n, [
            None, pa.py_buffer(self.offs.astype(np.int32)), pa.py_buffer(data)])
        self.u = _zigzag(lengths)
        self.lsizes = _varint_sizes(self.u)
        self.sizes = self.lsizes + lengths

    def _repeated(self, arr: pa.Array) -> None:
        """An array (a map) as fastavro writes it: one block, the item count then the items
        (a map's: key, value), then a zero count; an empty one is the zero count alone."""
        node = self.node
        assert node.inner is not None
        if not isinstance(arr, pa.MapArray if node.kind == "map" else pa.ListArray) or \
                isinstance(arr, pa.MapArray) != (node.kind == "map"):
            raise Unsupported(f"Arrow {arr.type} for Avro {node.kind}")
        offs = np.asarray(arr.offsets.to_numpy(), dtype=_I64)
        first, last = int(offs[0]), int(offs[-1])
        self.item_offs = offs - first
        counts = np.diff(offs)
        if node.kind == "map":
            keys, values = arr.values.slice(first, last - first).flatten()
            if _key_twice(counts, keys):
                # the per-record path makes each map a dict: one entry per key
                raise Unsupported("a map with a key twice")
            self.items = [_Enc(_STRING, keys), _Enc(node.inner, values)]
        else:
            self.items = [_Enc(node.inner, arr.values.slice(first, last - first))]
        item_sizes = sum((e.sizes for e in self.items), np.zeros(last - first, dtype=_I64))
        cum = np.zeros(last - first + 1, dtype=_I64)
        np.cumsum(item_sizes, out=cum[1:])
        self.u = _zigzag(counts)
        self.lsizes = np.where(counts > 0, _varint_sizes(self.u), 0)
        self.sizes = self.lsizes + cum[self.item_offs[1:]] - cum[self.item_offs[:-1]] + 1

    def pieces(self) -> list[Piece]:
        """The encoding as pieces, one value per row, whose row-wise concatenation is each
        row's datum: ``(n, w)`` byte matrices where every row takes ``w`` bytes, else Arrow
        ``large_binary`` arrays (a null: nothing). Adjacent matrices are stacked into one,
        and Arrow's element-wise join then lays the records out in one pass
        (:func:`encode_arrow_to_records`), instead of a per-byte index scatter."""
        k = self.kind
        n = self.sizes.size
        if k == "nullable":
            node = self.node
            branch = np.where(self.valid, (1 - node.null_index) * 2,
                              node.null_index * 2).astype(_U8)
            inner = self.inner.pieces()
            if self.sel.size != n:
                at = np.cumsum(self.valid) - 1
                idx = pa.array(at, mask=~self.valid)
                inner = [_binary_piece(p).take(idx) for p in inner]
            return [branch.reshape(n, 1), *inner]
        if k == "record":
            return [p for child in self.children for p in child.pieces()]
        if k in ("array", "map"):
            # every row's items lie side by side in the items' encoding: a row's bytes are
            # the range between its first item's offset and its end's (no copy)
            total = int(self.item_offs[-1])
            if total:
                items = _join_pieces([p for e in self.items for p in e.pieces()], total)
                ioffs = np.frombuffer(items.buffers()[1], dtype=_I64)[
                    items.offset: items.offset + total + 1]
                data = items.buffers()[2]
            else:
                ioffs, data = np.zeros(1, dtype=_I64), pa.py_buffer(b"")
            rows = pa.Array.from_buffers(pa.large_binary(), n, [
                None, pa.py_buffer(np.ascontiguousarray(ioffs[self.item_offs])), data])
            return [_varint_binary(self.u, self.lsizes), rows, np.zeros((n, 1), dtype=_U8)]
        if k == "bool":
            return [self.values.reshape(n, 1)]
        if k in ("int", "long", "enum"):
            return [_varint_piece(self.u, self.sizes)]
        if k in ("float", "double", "fixed"):
            return [self.raw]
        # string, bytes: the zigzag varint of the length, then the bytes
        if n and int(self.lengths.min()) == int(self.lengths.max()):
            # every value of one length (keys of one format, one instant, one file): a matrix
            width = int(self.lengths[0])
            start = int(self.offs[0])
            return [_varint_piece(self.u, self.lsizes),
                    self.data[start: start + n * width].reshape(n, width)]
        data = self.arr.cast(pa.large_binary()) if n else pa.array([], pa.large_binary())
        return [_varint_piece(self.u, self.lsizes), data]


#: one piece of a column's encoding: a byte matrix (a row per record) or a binary array
Piece: TypeAlias = np.ndarray | pa.Array


def _fixed_binary(raw: np.ndarray, width: int, n: int) -> pa.Array:
    """``width`` bytes per row (``n`` rows) of the contiguous ``raw``, as ``large_binary``."""
    offs = np.arange(n + 1, dtype=_I64) * width
    return pa.Array.from_buffers(pa.large_binary(), n,
                                 [None, pa.py_buffer(offs), pa.py_buffer(raw)])


def _binary_piece(p: Piece) -> pa.Array:
    """A piece as ``large_binary``."""
    if isinstance(p, np.ndarray):
        m: np.ndarray = np.ascontiguousarray(p)
        return _fixed_binary(m.reshape(-1), int(m.shape[1]), int(m.shape[0]))
    return p


def _coalesce(pieces: list[Piece]) -> list[Piece]:
    """Runs of adjacent byte matrices stacked into one matrix each."""
    out: list[Piece] = []
    run: list[np.ndarray] = []
    for p in [*pieces, None]:
        if isinstance(p, np.ndarray):
            run.append(p)
            continue
        if run:
            out.append(run[0] if len(run) == 1 else np.hstack(run))
            run = []
        if p is not None:
            out.append(p)
    return out


def _join_pieces(pieces: list[Piece], n: int) -> pa.Array:
    """Each row's pieces concatenated (``n`` rows), as ``large_binary``: Arrow's element-wise
    join, one pass."""
    pieces = _coalesce(pieces)
    if not pieces:
        return pa.array([b""] * n, pa.large_binary())
    if len(pieces) == 1:
        return _binary_piece(pieces[0])
    return pc.binary_join_element_wise(*[_binary_piece(p) for p in pieces],
                                       pa.scalar(b"", pa.large_binary()),
                                       null_handling="skip")


def _varint_piece(u: np.ndarray, sizes: np.ndarray) -> Piece:
    """The varints of ``u`` (``sizes`` bytes each), one per row: a matrix when they all
    take the same bytes, else ``large_binary``."""
    n = u.size
    if n and int(sizes.min()) == int(sizes.max()):
        width = int(sizes[0])
        buf = np.zeros(n * width, dtype=_U8)
        _write_varints(buf, np.arange(n, dtype=_I64) * width, u, sizes)
        out: np.ndarray = buf.reshape(n, width)
        return out
    return _varint_binary(u, sizes)


def _varint_binary(u: np.ndarray, sizes: np.ndarray) -> pa.Array:
    """The varints of ``u`` (``sizes`` bytes each), one per row, as ``large_binary``."""
    n = u.size
    offs = np.zeros(n + 1, dtype=_I64)
    np.cumsum(sizes, out=offs[1:])
    buf = np.zeros(int(offs[-1]), dtype=_U8)
    _write_varints(buf, offs[:-1], u, sizes)
    return pa.Array.from_buffers(pa.large_binary(), n,
                                 [None, pa.py_buffer(offs), pa.py_buffer(buf)])


_NARROW_INTS = (pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16())


def _conform(arr: pa.Array, t: pa.DataType, kind: str) -> pa.Array:
    """``arr`` as Arrow type ``t`` when that is lossless and what fastavro would write."""
    if isinstance(arr, pa.ChunkedArray):  # pragma: no cover - callers combine chunks
        arr = arr.combine_chunks()
    at = arr.type
    if at == t:
        return arr
    if kind == "long" and t == pa.int64() and (at in _NARROW_INTS or at == pa.uint32()):
        return arr.cast(t)
    if kind == "int" and t == pa.int32() and at in _NARROW_INTS[:2] + _NARROW_INTS[3:]:
        return arr.cast(t)
    if kind == "string" and (pa.types.is_large_string(at) or pa.types.is_string_view(at)):
        return arr.cast(t)
    if kind == "bytes" and (pa.types.is_large_binary(at) or pa.types.is_binary_view(at)):
        return arr.cast(t)
    raise Unsupported(f"Arrow {at} for Avro {kind}")


def encode_arrow_to_records(table: pa.Table | pa.RecordBatch, schema_json: str, *,
                            prefixed: bool = True) -> tuple[bytes, int]:
    """Every row of ``table`` as Avro binary under ``schema_json``, each with its i32 prefix.

    Returns the concatenated ``i32 length | datum`` bytes and the row count: the content of an
    Avro data block minus its 8-byte version and count. Byte-identical to
    ``encode_records(arrow_to_records(table), schema_json)`` with those prefixes; raises
    :class:`Unsupported` when only the fastavro path can encode it (or report the error).
    ``prefixed=False``: the datums back to back, without the length prefixes.
    """
    node, _ = _schema_plan(schema_json)
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    n = table.num_rows
    names = table.column_names
    encs = []
    sizes = np.zeros(n, dtype=_I64)
    for name, child in node.fields:
        if names.count(name) != 1:
            raise Unsupported(f"column {name}")
        col = table.column(name)
        arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        enc = _Enc(child, arr)
        encs.append(enc)
        sizes += enc.sizes
    if not encs:
        raise Unsupported("record without fields")
    if n and int(sizes.max()) > 2**31 - 1:
        raise Unsupported("record too large")
    if not n:
        return b"", 0
    pieces: list[Piece] = [sizes.astype(">i4").view(_U8).reshape(n, 4)] if prefixed else []
    for enc in encs:
        pieces.extend(enc.pieces())
    pieces = _coalesce(pieces)
    if len(pieces) == 1 and isinstance(pieces[0], np.ndarray):
        return np.ascontiguousarray(pieces[0]).tobytes(), n  # every record of one width
    joined = _join_pieces(pieces, n)
    offs = np.frombuffer(joined.buffers()[1], dtype=_I64)[joined.offset: joined.offset + n + 1]
    start, end = int(offs[0]), int(offs[-1])
    if end - start != int(sizes.sum()) + (4 * n if prefixed else 0):  # pragma: no cover
        raise Unsupported("joined record sizes")
    return joined.buffers()[2].to_pybytes()[start:end], n
