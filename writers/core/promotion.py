"""Which column types a batch may bring into a table column: Hudi's type promotions.

A writer converts a batch column to the table's type only when Hudi would read the batch's
values with the table's schema: Avro's reader/writer schema resolution as Hudi applies it
(``org.apache.hudi.avro.AvroSchemaCompatibility.calculateCompatibility``, used through
``AvroSchemaUtils.isSchemaCompatible`` when a write's schema is checked against the
table's): the same type, or ``int -> long -> float -> double``, ``string <-> bytes``. On
top of Avro's physical types, the logical ones keep their meaning: a decimal only widens
(scale and integer digits both kept, as ``SchemaChangeUtils.isTypeUpdateAllow`` allows
decimal -> decimal), an instant (a timestamp with a zone, whatever its name) stays an instant
and a local timestamp (no zone) stays local, changing unit only without losing a value,
a date stays a date. Values are converted with Arrow's safe casts, so a ``long`` above 2**53
does not silently round into a ``double`` and bytes that are not UTF-8 do not become a
string. Anything else (a string holding ``"1.5"`` for a double column) is a
:class:`~morlog.logformat.errors.UsageError` naming the column and both types, raised before
anything is written (spec/table.md §7.2 "Batch column types"); a batch type the table's type
promotes to (a double for a long column, a long for an int column) widens the table's column
first (schema evolution: :mod:`morlog.writers.core.evolution`, spec/table.md §7.7)."""

from __future__ import annotations

import pyarrow as pa

from morlog.logformat.errors import UsageError

__all__ = ["check_promotion", "promote_column"]


def _int_rank(t: pa.DataType) -> int | None:
    """0: fits Avro ``int`` (32-bit), 1: needs Avro ``long``; None: not an integer."""
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t) or (
            pa.types.is_uint8(t) or pa.types.is_uint16(t)):
        return 0
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return 1
    return None  # uint64 holds values no Avro long does


def _stringish(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def _binaryish(t: pa.DataType) -> bool:
    return bool(pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t))


def _listish(t: pa.DataType) -> bool:
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t)
                or pa.types.is_fixed_size_list(t) or pa.types.is_list_view(t)
                or pa.types.is_large_list_view(t))


def promotes(src: pa.DataType, dst: pa.DataType) -> bool:
    """Whether values of type ``src`` may be written into a column of type ``dst``."""
    if src == dst or pa.types.is_null(src):
        return True  # a column of nulls holds no value to convert
    if pa.types.is_dictionary(src):
        return promotes(src.value_type, dst)
    rank = _int_rank(src)
    if rank is not None:
        target = _int_rank(dst)
        if target is not None:
            return target >= rank and not (pa.types.is_unsigned_integer(dst)
                                           and not pa.types.is_unsigned_integer(src))
        return bool(pa.types.is_float32(dst) or pa.types.is_float64(dst))
    if pa.types.is_float16(src) or pa.types.is_float32(src):
        return bool(pa.types.is_float32(dst) or pa.types.is_float64(dst))
    if _stringish(src) or _binaryish(src):
        return _stringish(dst) or _binaryish(dst)
    if pa.types.is_decimal(src):
        return bool(pa.types.is_decimal(dst) and dst.scale >= src.scale
                    and dst.precision - dst.scale >= src.precision - src.scale)
    if pa.types.is_timestamp(src):
        # zoned values are instants stored in UTC whatever the zone's name ("UTC",
        # "Etc/UTC", "+01:00": the same instant); a zone-less one is a local time
        return pa.types.is_timestamp(dst) and (src.tz is None) == (dst.tz is None)
    if pa.types.is_date(src):
        return bool(pa.types.is_date(dst))
    if pa.types.is_time(src):
        return bool(pa.types.is_time(dst))
    if pa.types.is_struct(src):
        if not pa.types.is_struct(dst):
            return False
        names = [dst.field(i).name for i in range(dst.num_fields)]
        for i in range(src.num_fields):
            f = src.field(i)
            if f.name not in names or not promotes(f.type, dst.field(f.name).type):
                return False
        # a table field the batch lacks is read as null: it must be nullable
        have = {src.field(i).name for i in range(src.num_fields)}
        return all(dst.field(n).nullable for n in names if n not in have)
    if _listish(src):
        return _listish(dst) and promotes(src.value_type, dst.value_type)
    if pa.types.is_map(src):
        return (pa.types.is_map(dst) and promotes(src.key_type, dst.key_type)
                and promotes(src.item_type, dst.item_type))
    return False


def check_promotion(name: str, src: pa.DataType, dst: pa.DataType,
                    where: str | None = None) -> None:
    """A :class:`UsageError` naming the column and both types when ``src`` does not
    promote to ``dst`` (:func:`promotes`)."""
    if not promotes(src, dst):
        raise UsageError(
            f"column {name!r} is {src} in the batch and {dst} in the table: not one of "
            "Hudi's type promotions (int -> long -> float -> double, string <-> bytes, wider "
            "decimals); convert the column before writing", path=where)


def promote_column(name: str, col: pa.ChunkedArray | pa.Array, dst: pa.DataType,
                   where: str | None = None) -> pa.ChunkedArray | pa.Array:
    """``col`` as type ``dst``: checked with :func:`check_promotion`, converted with a safe
    cast (a value the table's type cannot hold exactly is a :class:`UsageError` naming the
    column and both types)."""
    if col.type == dst:
        return col
    check_promotion(name, col.type, dst, where)
    try:
        return col.cast(dst, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise UsageError(f"column {name!r} of type {col.type} does not convert to the "
                         f"table's {dst} without changing a value: {exc}", path=where) from None
