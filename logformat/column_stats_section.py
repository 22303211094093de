"""The COLUMN_STATS section (id 6) of the index trailer: per-block column statistics
(spec/index.md §4.9 and §4.11).

For every configured column of a data block: its name, a type tag, the null count, the
value count and, when they are usable, the smallest and largest non-null value in *filter
order* (``morlog.readers.predicate``: numbers numerically, strings and bytes by their
unsigned bytes, booleans ``false < true``). A column has **no bounds** when it holds no
non-null value, when a bound is longer than :data:`MAX_BOUND_BYTES`, or when its type has
no bounds here (records, arrays, maps...). A float column holding NaN is written with the
tag FLOAT32_NANS / FLOAT64_NANS: its NaN count, then the bounds of the values that are not
NaN (readers that do not know those tags keep its counts only, as before the tags existed).

Layout (little-endian, as the rest of the trailer)::

    u64 rows | u32 column count C | C x column
    column:  str name | u8 type tag | u8 flags (bit 0: has bounds) | u64 null count
             | u64 value count | u32 payload length L | L bytes payload
    payload: the type's parameters (FIXED: u32 width; DECIMAL: u8 precision, u8 scale;
             FLOAT32_NANS / FLOAT64_NANS: u64 NaN count), then, with bounds, min and
             max encoded per type (:func:`encode_value`)

A reader skips the payload of a type tag it does not know: that column has counts but no
bounds (forward compatible). Pure: bytes in, values out. The statistics of an Arrow table
(:func:`compute_column_stats`) use ``pyarrow.compute`` per column, never a loop per value.
"""

from __future__ import annotations

import decimal
import enum
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from morlog.config import COLUMN_STATS_COLUMN_LIST, COLUMN_STATS_MAX_COLUMNS

from .errors import ContentError, LengthError, UsageError
from .mdt_records import META_FIELD_NAMES

#: a string, bytes or fixed bound longer than this many bytes is not stored: the column
#: then has no bounds (a bound is never truncated)
MAX_BOUND_BYTES = 256
#: flags bit 0
HAS_BOUNDS = 0x01
#: ``HoodieTableMetadataUtil.META_COLS_TO_ALWAYS_INDEX`` (sorted, as Hudi's TreeMap)
ALWAYS_INDEXED = ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key")
#: ``hoodie.metadata.index.column.stats.column.list`` / ``...max.columns.to.index``
COLUMN_LIST_KEY = COLUMN_STATS_COLUMN_LIST
MAX_COLUMNS_KEY = COLUMN_STATS_MAX_COLUMNS
DEFAULT_MAX_COLUMNS = 32
#: the smallest column entry: empty name, no payload
_MIN_ENTRY = 4 + 1 + 1 + 8 + 8 + 4
_MAX_DECIMAL_PRECISION = 76


class StatsType(enum.IntEnum):
    """Type tags of the COLUMN_STATS section (spec/index.md §4.11)."""

    OTHER = 0  # counts only: a type without bounds (record, array, map, ...)
    BOOLEAN = 1
    INT32 = 2
    INT64 = 3
    FLOAT32 = 4
    FLOAT64 = 5
    STRING = 6
    BYTES = 7
    FIXED = 8
    DECIMAL = 9
    DATE = 10
    TIME_MILLIS = 11
    TIME_MICROS = 12
    TIME_NANOS = 13
    TIMESTAMP_MILLIS = 14
    TIMESTAMP_MICROS = 15
    TIMESTAMP_NANOS = 16
    LOCAL_TIMESTAMP_MILLIS = 17
    LOCAL_TIMESTAMP_MICROS = 18
    LOCAL_TIMESTAMP_NANOS = 19
    NULL = 20  # the Avro null type: every value null
    FLOAT32_NANS = 21  # a float column holding NaN: NaN count, bounds of the other values
    FLOAT64_NANS = 22


_I32 = {StatsType.INT32, StatsType.DATE, StatsType.TIME_MILLIS}
_I64 = {StatsType.INT64, StatsType.TIME_MICROS, StatsType.TIME_NANOS,
        StatsType.TIMESTAMP_MILLIS, StatsType.TIMESTAMP_MICROS, StatsType.TIMESTAMP_NANOS,
        StatsType.LOCAL_TIMESTAMP_MILLIS, StatsType.LOCAL_TIMESTAMP_MICROS,
        StatsType.LOCAL_TIMESTAMP_NANOS}
_NO_BOUNDS = {StatsType.OTHER, StatsType.NULL}
#: float tags -> the tag of the same type holding NaN, and back
_WITH_NANS = {StatsType.FLOAT32: StatsType.FLOAT32_NANS,
              StatsType.FLOAT64: StatsType.FLOAT64_NANS}
_PLAIN_FLOAT = {v: k for k, v in _WITH_NANS.items()}
_FLOATS = {StatsType.FLOAT32, StatsType.FLOAT64}
_TS = {("ms", True): StatsType.TIMESTAMP_MILLIS, ("us", True): StatsType.TIMESTAMP_MICROS,
       ("ns", True): StatsType.TIMESTAMP_NANOS, ("ms", False): StatsType.LOCAL_TIMESTAMP_MILLIS,
       ("us", False): StatsType.LOCAL_TIMESTAMP_MICROS,
       ("ns", False): StatsType.LOCAL_TIMESTAMP_NANOS}
_TS_TYPES: dict[int, pa.DataType] = {tag: pa.timestamp(unit, tz="UTC" if utc else None)
                                     for (unit, utc), tag in _TS.items()}
_SIMPLE_TYPES: dict[int, pa.DataType] = {
    StatsType.BOOLEAN: pa.bool_(), StatsType.INT32: pa.int32(), StatsType.INT64: pa.int64(),
    StatsType.FLOAT32: pa.float32(), StatsType.FLOAT64: pa.float64(),
    StatsType.FLOAT32_NANS: pa.float32(), StatsType.FLOAT64_NANS: pa.float64(),
    StatsType.STRING: pa.string(), StatsType.BYTES: pa.binary(),
    StatsType.DATE: pa.date32(), StatsType.TIME_MILLIS: pa.time32("ms"),
    StatsType.TIME_MICROS: pa.time64("us"), StatsType.TIME_NANOS: pa.time64("ns"),
    StatsType.NULL: pa.null(), **_TS_TYPES,
}


@dataclass(frozen=True)
class ColumnStats:
    """One column's statistics. ``min``/``max``: None when the column has no bounds; else
    plain values (int for integers, dates, times and timestamps in the type's unit,
    ``Decimal``, ``str``, ``bytes``, ``float``, ``bool``). ``type_tag`` may be a tag this
    version does not know (decoded from a newer writer): then there are no bounds."""

    name: str
    type_tag: int
    null_count: int
    value_count: int
    min: Any = None
    max: Any = None
    #: FIXED: the byte width
    width: int = 0
    #: DECIMAL: precision and scale
    precision: int = 0
    scale: int = 0
    #: FLOAT32_NANS / FLOAT64_NANS: how many values are NaN (at least one); 0 otherwise
    nans: int = 0

    @property
    def has_bounds(self) -> bool:
        return self.min is not None and self.max is not None

    @property
    def nan_count(self) -> int | None:
        """How many non-null values are NaN, None when the entry does not tell: exact for
        the ``*_NANS`` tags; 0 for FLOAT32 / FLOAT64 with bounds (a writer writes bounds
        for those tags only when no value is NaN) or without a non-null value; None for a
        float column with values but without bounds (written before the ``*_NANS`` tags:
        NaN was present) and for other types."""
        if self.type_tag in _PLAIN_FLOAT:
            return self.nans
        if self.type_tag in _FLOATS:
            return 0 if self.has_bounds or self.null_count >= self.value_count else None
        return None

    @property
    def known(self) -> bool:
        return self.type_tag in StatsType._value2member_map_

    def arrow_type(self) -> pa.DataType | None:
        """The Arrow type of the tag (timestamps of an instant in UTC); None for OTHER and
        unknown tags."""
        return arrow_type_of(self.type_tag, self.width, self.precision, self.scale)


def arrow_type_of(tag: int, width: int = 0, precision: int = 0,
                  scale: int = 0) -> pa.DataType | None:
    if tag in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[tag]
    if tag == StatsType.FIXED:
        return pa.binary(width)
    if tag == StatsType.DECIMAL and 1 <= precision <= _MAX_DECIMAL_PRECISION:
        return (pa.decimal128(precision, scale) if precision <= 38
                else pa.decimal256(precision, scale))
    return None


def stats_type_of(t: pa.DataType) -> tuple[StatsType, pa.DataType | None]:
    """The tag of an Arrow type and the type its values are reduced in (the tag's own
    type; None when the column has no bounds). Narrow integers widen (``int8``..``uint16``
    to INT32, ``uint32`` to INT64), seconds become milliseconds, ``date64`` days, large and
    view strings and binaries their plain forms, dictionaries their values, so that what a
    writer holds and what the block decodes to get the same tag."""
    if pa.types.is_dictionary(t):
        return stats_type_of(t.value_type)
    if pa.types.is_null(t):
        return StatsType.NULL, None
    if pa.types.is_boolean(t):
        return StatsType.BOOLEAN, pa.bool_()
    if pa.types.is_integer(t):
        if t.bit_width <= 16 or pa.types.is_int32(t):
            return StatsType.INT32, pa.int32()
        if pa.types.is_int64(t) or pa.types.is_uint32(t):
            return StatsType.INT64, pa.int64()
        return StatsType.OTHER, None  # uint64: no Avro type holds it
    if pa.types.is_float32(t):
        return StatsType.FLOAT32, pa.float32()
    if pa.types.is_float64(t):
        return StatsType.FLOAT64, pa.float64()
    if (pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_string_view(t)):
        return StatsType.STRING, pa.string()
    if (pa.types.is_binary(t) or pa.types.is_large_binary(t)
            or pa.types.is_binary_view(t)):
        return StatsType.BYTES, pa.binary()
    if pa.types.is_fixed_size_binary(t) and not pa.types.is_decimal(t):
        return StatsType.FIXED, t
    if pa.types.is_decimal(t) and 0 <= t.scale <= t.precision <= _MAX_DECIMAL_PRECISION:
        return StatsType.DECIMAL, t
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        return StatsType.DATE, pa.date32()
    if pa.types.is_time32(t):
        return StatsType.TIME_MILLIS, pa.time32("ms")
    if pa.types.is_time64(t):
        tag = StatsType.TIME_MICROS if t.unit == "us" else StatsType.TIME_NANOS
        return tag, pa.time64(t.unit)
    if pa.types.is_timestamp(t):
        unit = "ms" if t.unit == "s" else t.unit
        tag = _TS[(unit, t.tz is not None)]
        return tag, _TS_TYPES[tag]
    return StatsType.OTHER, None


# --- which columns ----------------------------------------------------------------------


def _supported(t: pa.DataType) -> bool:
    return stats_type_of(t)[0] not in _NO_BOUNDS


@dataclass(frozen=True)
class StatsColumns:
    """Which columns of a block a writer keeps statistics of (Hudi's rule,
    ``HoodieTableMetadataUtil.getColumnsToIndex``): the three always-indexed meta fields
    the block has, then the listed columns (``column_list``, Hudi's
    ``hoodie.metadata.index.column.stats.column.list``) if any, else the first
    ``max_columns`` top-level non-meta columns in schema order. Only columns of a type with
    bounds (:func:`stats_type_of`) that the block's schema has are kept."""

    column_list: tuple[str, ...] = ()
    max_columns: int = DEFAULT_MAX_COLUMNS

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> StatsColumns:
        listed = tuple(dict.fromkeys(
            c.strip() for c in (props.get(COLUMN_LIST_KEY) or "").split(",") if c.strip()))
        raw = (props.get(MAX_COLUMNS_KEY) or "").strip()
        try:
            limit = int(raw) if raw else DEFAULT_MAX_COLUMNS
        except ValueError:
            limit = -1
        if limit < 0:
            raise UsageError(f"{MAX_COLUMNS_KEY} is not a whole number >= 0", actual=raw)
        return cls(listed, limit)

    def select(self, schema: pa.Schema) -> list[str]:
        types = {f.name: f.type for f in schema}
        out = [c for c in ALWAYS_INDEXED if c in types and _supported(types[c])]
        if self.column_list:
            out += [c for c in self.column_list if c not in out and c in types
                    and _supported(types[c])]
            return out
        meta = set(META_FIELD_NAMES) | {"_hoodie_operation"}
        plain = [f.name for f in schema if f.name not in meta and _supported(f.type)]
        return out + plain[: self.max_columns]


# --- computing --------------------------------------------------------------------------


def _fits(v: Any) -> bool:
    return len(v) <= MAX_BOUND_BYTES


def _params(tag: StatsType, t: pa.DataType | None) -> tuple[int, int, int]:
    """(width, precision, scale) of a FIXED or DECIMAL type; zeros otherwise."""
    if tag == StatsType.FIXED and t is not None:
        return t.byte_width, 0, 0
    if tag == StatsType.DECIMAL and t is not None:
        return 0, t.precision, t.scale
    return 0, 0, 0


def _column_stats(name: str, col: pa.ChunkedArray | pa.Array) -> ColumnStats:
    tag, reduce_type = stats_type_of(col.type)
    rows, nulls = len(col), col.null_count
    width, prec, scale = _params(tag, reduce_type)
    base = ColumnStats(name, int(tag), int(nulls), rows, None, None, width, prec, scale)
    if reduce_type is None or nulls == rows:
        return base
    try:
        arr = col if col.type == reduce_type else col.cast(reduce_type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return ColumnStats(name, int(StatsType.OTHER), int(nulls), rows)
    if tag in _FLOATS:
        is_nan = pc.is_nan(arr)
        nans = int(pc.sum(is_nan).as_py() or 0)  # nulls are not counted
        if nans:  # bounds of the values that are not NaN, and the NaN count
            tag = _WITH_NANS[tag]
            base = ColumnStats(name, int(tag), int(nulls), rows, None, None, nans=nans)
            arr = arr.filter(pc.invert(is_nan))
            if len(arr) == arr.null_count:
                return base  # every non-null value is NaN
    elif tag == StatsType.STRING:
        arr = arr.cast(pa.binary())  # reduce the bytes; decoded below (no UTF-8 check)
    elif tag in _I32 or tag in _I64:
        arr = arr.cast(pa.int32() if tag in _I32 else pa.int64())
    mm = pc.min_max(arr)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if lo is None or hi is None:
        return base
    if tag in _FLOATS or tag in _PLAIN_FLOAT:
        lo = -0.0 if lo == 0 else float(lo)  # -0.0 == 0.0 in filter order: one spelling
        hi = 0.0 if hi == 0 else float(hi)
    elif tag == StatsType.STRING:
        try:
            lo, hi = lo.decode("utf-8"), hi.decode("utf-8")
        except UnicodeDecodeError:
            return base
        if not (_fits(lo.encode("utf-8")) and _fits(hi.encode("utf-8"))):
            return base
    elif tag in (StatsType.BYTES, StatsType.FIXED):
        if not (_fits(lo) and _fits(hi)):
            return base
    return ColumnStats(name, int(tag), int(nulls), rows, lo, hi, width, prec, scale,
                       base.nans)


def compute_column_stats(table: pa.Table | pa.RecordBatch, columns: Sequence[str],
                         types: Mapping[str, pa.DataType] | None = None
                         ) -> ColumnStatsSection:
    """The statistics of ``columns`` of ``table`` (``pyarrow.compute``, per column).

    ``types``: the type each column has in the block (a writer's Avro schema); a column
    is cast to it first, and a column ``table`` lacks is all nulls of that type. A column
    neither has: all nulls, tag NULL."""
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    rows = table.num_rows
    out: list[ColumnStats] = []
    for name in dict.fromkeys(columns):  # per column
        target = types.get(name) if types is not None else None
        if name not in table.column_names:
            tag, reduce_type = (stats_type_of(target) if target is not None
                                else (StatsType.NULL, None))
            out.append(ColumnStats(name, int(tag), rows, rows, None, None,
                                   *_params(tag, reduce_type)))
            continue
        col = table.column(name)
        if target is not None and col.type != target:
            try:
                col = col.cast(target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                out.append(ColumnStats(name, int(StatsType.OTHER), col.null_count, rows))
                continue
        out.append(_column_stats(name, col))
    return ColumnStatsSection(rows, tuple(out))


# --- encoding ---------------------------------------------------------------------------


def _java_bytes(n: int) -> bytes:
    """Shortest big-endian two's complement of ``n`` (``BigInteger.toByteArray``)."""
    length = (n.bit_length() if n >= 0 else (~n).bit_length()) // 8 + 1
    return n.to_bytes(length, "big", signed=True)


def _unscaled(value: decimal.Decimal, scale: int) -> int:
    with decimal.localcontext() as ctx:
        ctx.prec = 200
        return int(value.scaleb(scale))


def decimal_of(unscaled: int, scale: int) -> decimal.Decimal:
    """The exact decimal ``unscaled * 10^-scale`` (whatever the context's precision)."""
    sign = 1 if unscaled < 0 else 0
    return decimal.Decimal((sign, tuple(int(c) for c in str(abs(unscaled))), -scale))


def encode_value(s: ColumnStats, v: Any) -> bytes:
    """One bound of a known tag (spec/index.md §4.11)."""
    tag = s.type_tag
    if tag in _PLAIN_FLOAT:  # NaN tags: bounds as their type's
        tag = int(_PLAIN_FLOAT[StatsType(tag)])
    if tag == StatsType.BOOLEAN:
        return struct.pack("<B", 1 if v else 0)
    if tag in _I32:
        return struct.pack("<i", int(v))
    if tag in _I64:
        return struct.pack("<q", int(v))
    if tag == StatsType.FLOAT32:
        return struct.pack("<f", float(v))
    if tag == StatsType.FLOAT64:
        return struct.pack("<d", float(v))
    if tag == StatsType.STRING:
        raw = str(v).encode("utf-8")
        return struct.pack("<I", len(raw)) + raw
    if tag == StatsType.BYTES:
        return struct.pack("<I", len(v)) + bytes(v)
    if tag == StatsType.FIXED:
        return bytes(v)
    if tag == StatsType.DECIMAL:
        raw = _java_bytes(_unscaled(decimal.Decimal(v), s.scale))
        return struct.pack("<B", len(raw)) + raw
    raise ContentError("a type without bounds", actual=tag)


def _encode_column(s: ColumnStats) -> bytes:
    tag = StatsType(s.type_tag)  # writers write known tags only
    payload = b""
    if tag == StatsType.FIXED:
        payload += struct.pack("<I", s.width)
    elif tag == StatsType.DECIMAL:
        payload += struct.pack("<BB", s.precision, s.scale)
    elif tag in _PLAIN_FLOAT:
        payload += struct.pack("<Q", s.nans)
    bounds = s.has_bounds and tag not in _NO_BOUNDS
    if bounds:
        payload += encode_value(s, s.min) + encode_value(s, s.max)
    name = s.name.encode("utf-8")
    return (struct.pack("<I", len(name)) + name
            + struct.pack("<BBQQI", int(tag), HAS_BOUNDS if bounds else 0, s.null_count,
                          s.value_count, len(payload)) + payload)


# --- decoding ---------------------------------------------------------------------------


class _Reader:
    def __init__(self, buf: bytes | memoryview, base: int, path: str | None) -> None:
        self.buf = bytes(buf)
        self.pos = 0
        self.base = base
        self.path = path

    def at(self, pos: int | None = None) -> int:
        return self.base + (self.pos if pos is None else pos)

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or n > len(self.buf) - self.pos:
            raise LengthError(f"COLUMN_STATS section cut off in {what}", path=self.path,
                              offset=self.at(), expected=n, actual=len(self.buf) - self.pos)
        v = self.buf[self.pos : self.pos + n]
        self.pos += n
        return v

    def unpack(self, fmt: str, what: str) -> tuple[Any, ...]:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), what))

    def text(self, what: str) -> str:
        (n,) = self.unpack("I", what)
        start = self.pos
        raw = self.take(n, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ContentError(f"COLUMN_STATS {what} is not UTF-8", path=self.path,
                               offset=self.at(start)) from None

    def bad(self, message: str, pos: int, **kw: Any) -> ContentError:
        return ContentError(f"COLUMN_STATS {message}", path=self.path, offset=self.at(pos), **kw)


def _decode_value(r: _Reader, tag: StatsType, width: int, precision: int, scale: int,
                  name: str) -> Any:
    what = f"a bound of column {name!r}"
    start = r.pos
    if tag == StatsType.BOOLEAN:
        (b,) = r.unpack("B", what)
        if b > 1:
            raise r.bad(f"boolean bound of {name!r} is not 0 or 1", start, actual=b)
        return bool(b)
    if tag in _I32:
        return r.unpack("i", what)[0]
    if tag in _I64:
        return r.unpack("q", what)[0]
    if tag in (StatsType.FLOAT32, StatsType.FLOAT64):
        (f,) = r.unpack("f" if tag == StatsType.FLOAT32 else "d", what)
        if math.isnan(f):
            raise r.bad(f"float bound of {name!r} is NaN", start)
        return float(f)
    if tag == StatsType.STRING:
        return r.text(what)
    if tag == StatsType.BYTES:
        (n,) = r.unpack("I", what)
        return r.take(n, what)
    if tag == StatsType.FIXED:
        return r.take(width, what)
    if tag == StatsType.DECIMAL:
        (n,) = r.unpack("B", what)
        if n == 0:
            raise r.bad(f"decimal bound of {name!r} has no bytes", start)
        unscaled = int.from_bytes(r.take(n, what), "big", signed=True)
        if abs(unscaled) >= 10 ** precision:
            raise r.bad(f"decimal bound of {name!r} exceeds its precision", start,
                        expected=f"< 10^{precision}", actual=unscaled)
        return decimal_of(unscaled, scale)
    raise r.bad("bounds for a type without bounds", start, actual=int(tag))


def _order_key(tag: StatsType, v: Any) -> Any:
    if tag == StatsType.STRING:
        return v.encode("utf-8")
    return v


def _decode_column(r: _Reader, rows: int) -> ColumnStats:
    entry_at = r.pos
    name = r.text("a column name")
    tag_raw, flags, nulls, values, plen = r.unpack("BBQQI", f"column {name!r}")
    if values > rows or nulls > values:
        raise r.bad(f"counts of column {name!r} are inconsistent", entry_at,
                    expected=f"null count <= value count <= rows ({rows})",
                    actual=(nulls, values))
    payload_at = r.pos
    payload = r.take(plen, f"the payload of column {name!r}")
    if tag_raw not in StatsType._value2member_map_:
        return ColumnStats(name, tag_raw, nulls, values)  # newer type: counts, no bounds
    tag = StatsType(tag_raw)
    p = _Reader(payload, r.base + payload_at, r.path)
    width = precision = scale = nans = 0
    if tag == StatsType.FIXED:
        (width,) = p.unpack("I", f"the width of column {name!r}")
    elif tag in _PLAIN_FLOAT:
        (nans,) = p.unpack("Q", f"the NaN count of column {name!r}")
        if not 1 <= nans <= values - nulls:
            raise r.bad(f"NaN count of column {name!r} is out of range", payload_at,
                        expected=f"1 <= NaN count <= non-null values ({values - nulls})",
                        actual=nans)
    elif tag == StatsType.DECIMAL:
        precision, scale = p.unpack("BB", f"the precision of column {name!r}")
        if not 1 <= precision <= _MAX_DECIMAL_PRECISION or scale > precision:
            raise r.bad(f"decimal type of column {name!r} is out of range", payload_at,
                        expected="1 <= scale <= precision <= 76", actual=(precision, scale))
    lo = hi = None
    if flags & HAS_BOUNDS:
        if tag in _NO_BOUNDS:
            raise r.bad(f"column {name!r} of type {tag.name} has bounds", entry_at)
        if nulls + nans >= values:
            raise r.bad(f"column {name!r} has bounds but no non-null value"
                        + (" that is not NaN" if nans else ""), entry_at)
        bounds_at = p.pos
        vtag = _PLAIN_FLOAT.get(tag, tag)
        lo = _decode_value(p, vtag, width, precision, scale, name)
        hi = _decode_value(p, vtag, width, precision, scale, name)
        if _order_key(tag, lo) > _order_key(tag, hi):
            raise r.bad(f"min of column {name!r} is above its max", payload_at + bounds_at)
    if p.pos != len(p.buf):
        raise r.bad(f"payload of column {name!r} has trailing bytes", payload_at + p.pos,
                    expected=p.pos, actual=len(p.buf))
    return ColumnStats(name, int(tag), nulls, values, lo, hi, width, precision, scale, nans)


@dataclass(frozen=True)
class ColumnStatsSection:
    """A block's COLUMN_STATS: its record count and one entry per column."""

    rows: int
    columns: tuple[ColumnStats, ...] = field(default_factory=tuple)

    def get(self, name: str) -> ColumnStats | None:
        for c in self.columns:
            if c.name == name:
                return c
        return None

    def encode(self) -> bytes:
        parts = [struct.pack("<QI", self.rows, len(self.columns))]
        parts += [_encode_column(c) for c in self.columns]  # per column
        return b"".join(parts)

    @classmethod
    def decode(cls, buf: bytes | memoryview, *, base: int = 0,
               path: str | None = None) -> ColumnStatsSection:
        """Decode a section body; :class:`LengthError` when a field is cut off,
        :class:`ContentError` for values that cannot be (both with the offset)."""
        r = _Reader(buf, base, path)
        rows, count = r.unpack("QI", "the header")
        if count * _MIN_ENTRY > len(r.buf) - r.pos:
            raise LengthError("COLUMN_STATS column count out of range", path=path,
                              offset=base + 8, expected=f"<= {(len(r.buf) - r.pos) // _MIN_ENTRY}",
                              actual=count)
        cols: list[ColumnStats] = []
        seen: set[str] = set()
        for _ in range(count):  # per column
            at = r.pos
            c = _decode_column(r, rows)
            if c.name in seen:
                raise r.bad(f"column {c.name!r} is listed twice", at)
            seen.add(c.name)
            cols.append(c)
        if r.pos != len(r.buf):
            raise r.bad("section has trailing bytes", r.pos, expected=r.pos,
                        actual=len(r.buf))
        return cls(rows, tuple(cols))


__all__ = ["ALWAYS_INDEXED", "COLUMN_LIST_KEY", "DEFAULT_MAX_COLUMNS", "HAS_BOUNDS",
           "MAX_BOUND_BYTES", "MAX_COLUMNS_KEY", "ColumnStats", "ColumnStatsSection",
           "StatsColumns", "StatsType", "arrow_type_of", "compute_column_stats",
           "decimal_of", "encode_value", "stats_type_of"]
