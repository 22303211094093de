"""Mapping between Avro schemas (block headers) and Arrow schemas (what users hold).

Hudi's blocks carry an Avro schema in their SCHEMA header even when the content is Parquet.
Neither fastavro nor pyarrow maps one onto the other, so this module does, for the types
Hudi writes: primitives, nullable unions, records, arrays, maps, enums, fixed and the
logical types date, time, timestamp, decimal and uuid.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .errors import ContentError, UsageError

_PRIMITIVES: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}


def _logical(t: dict[str, Any]) -> pa.DataType | None:
    lt = t.get("logicalType")
    base = t.get("type")
    if lt == "date" and base == "int":
        return pa.date32()
    if lt == "time-millis" and base == "int":
        return pa.time32("ms")
    if lt == "time-micros" and base == "long":
        return pa.time64("us")
    if lt == "timestamp-millis" and base == "long":
        return pa.timestamp("ms", tz="UTC")
    if lt == "timestamp-micros" and base == "long":
        return pa.timestamp("us", tz="UTC")
    if lt == "local-timestamp-millis" and base == "long":
        return pa.timestamp("ms")
    if lt == "local-timestamp-micros" and base == "long":
        return pa.timestamp("us")
    if lt == "decimal" and base in ("bytes", "fixed"):
        precision = int(t["precision"])
        scale = int(t.get("scale", 0))
        return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision,
                                                                                     scale)
    if lt == "uuid" and base == "string":
        return pa.string()
    return None


def avro_type_to_arrow(t: Any, named: dict[str, pa.DataType] | None = None
                       ) -> tuple[pa.DataType, bool]:
    """Arrow type of an Avro type and whether it is nullable."""
    named = {} if named is None else named
    if isinstance(t, str):
        if t in _PRIMITIVES:
            return _PRIMITIVES[t], False
        if t == "null":
            return pa.null(), True
        if t in named:
            return named[t], False
        raise UsageError(f"Avro type {t!r} has no Arrow mapping")
    if isinstance(t, list):
        branches = [b for b in t if b != "null"]
        nullable = len(branches) != len(t)
        if len(branches) == 1:
            inner, _ = avro_type_to_arrow(branches[0], named)
            return inner, nullable
        raise UsageError(f"Avro union {json.dumps(t)} has no Arrow mapping")
    if isinstance(t, dict):
        logical = _logical(t)
        if logical is not None:
            return logical, False
        kind = t["type"]
        if kind == "record":
            fields = []
            for f in t["fields"]:
                ft, nullable = avro_type_to_arrow(f["type"], named)
                fields.append(pa.field(f["name"], ft, nullable=nullable))
            st = pa.struct(fields)
            _register(t, st, named)
            return st, False
        if kind == "array":
            it, n = avro_type_to_arrow(t["items"], named)
            return pa.list_(pa.field("element", it, nullable=n)), False
        if kind == "map":
            vt, n = avro_type_to_arrow(t["values"], named)
            return pa.map_(pa.string(), pa.field("value", vt, nullable=n)), False
        if kind == "enum":
            _register(t, pa.string(), named)
            return pa.string(), False
        if kind == "fixed":
            ft = pa.binary(int(t["size"]))
            _register(t, ft, named)
            return ft, False
        return avro_type_to_arrow(kind, named)
    raise UsageError(f"Avro type {t!r} has no Arrow mapping")


def _register(t: dict[str, Any], at: pa.DataType, named: dict[str, pa.DataType]) -> None:
    name = t["name"]
    ns = t.get("namespace")
    named[name] = at
    if ns and "." not in name:
        named[f"{ns}.{name}"] = at


def parse_avro_schema(text: str) -> dict[str, Any]:
    """An Avro record schema's JSON text as a dict; :class:`ContentError` when the text is
    not JSON, is nested too deeply to parse, or is not an object."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ContentError("Avro schema is nested too deeply") from None
    except ValueError as exc:
        raise ContentError(f"Avro schema is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ContentError("an Avro record schema is a JSON object",
                           actual=type(value).__name__)
    return value


def avro_to_arrow_schema(schema: str | dict[str, Any]) -> pa.Schema:
    """Arrow schema of an Avro record schema (JSON text or dict). Text that is not JSON, a
    schema nested too deeply to walk, or a value of the wrong shape is a
    :class:`ContentError`."""
    try:
        s = json.loads(schema) if isinstance(schema, str) else schema
        st, _ = avro_type_to_arrow(s)
    except RecursionError:
        raise ContentError("Avro schema is nested too deeply") from None
    except ValueError as exc:
        raise ContentError(f"Avro schema is not JSON: {exc}") from None
    except (TypeError, KeyError, AttributeError) as exc:
        raise ContentError(f"not a valid Avro schema ({type(exc).__name__}: {exc})"
                           ) from exc
    if not pa.types.is_struct(st):
        raise UsageError("an Avro data block schema must be a record")
    return pa.schema([st.field(i) for i in range(st.num_fields)])


def _arrow_type_to_avro(t: pa.DataType, name: str, namespace: str) -> Any:
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return "int"
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return "long"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes"
    if pa.types.is_fixed_size_binary(t):
        return {"type": "fixed", "name": name, "namespace": namespace, "size": t.byte_width}
    if pa.types.is_date32(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(t):
        unit = "millis" if t.unit in ("s", "ms") else "micros"
        if t.unit == "ns":
            raise UsageError("nanosecond timestamps have no Avro type; cast to microseconds")
        prefix = "timestamp" if t.tz is not None else "local-timestamp"
        return {"type": "long", "logicalType": f"{prefix}-{unit}"}
    if pa.types.is_time32(t):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_time64(t):
        return {"type": "long", "logicalType": "time-micros"}
    if pa.types.is_decimal(t):
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision,
                "scale": t.scale}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        vf = t.value_field
        item = _arrow_type_to_avro(vf.type, f"{name}_element", namespace)
        return {"type": "array", "items": ["null", item] if vf.nullable else item}
    if pa.types.is_map(t):
        if not (pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)):
            raise UsageError("Avro maps need string keys")
        vf = t.item_field
        item = _arrow_type_to_avro(vf.type, f"{name}_value", namespace)
        return {"type": "map", "values": ["null", item] if vf.nullable else item}
    if pa.types.is_struct(t):
        return _record(list(t), name, namespace)
    raise UsageError(f"Arrow type {t} has no Avro mapping")


def _record(fields: Sequence[pa.Field], name: str, namespace: str) -> dict[str, Any]:
    out = []
    for f in fields:
        at = _arrow_type_to_avro(f.type, f.name, f"{namespace}.{name}")
        if f.nullable:
            out.append({"name": f.name, "type": ["null", at], "default": None})
        else:
            out.append({"name": f.name, "type": at})
    return {"type": "record", "name": name, "namespace": namespace, "fields": out}


def arrow_type_to_avro(t: pa.DataType, name: str, namespace: str) -> Any:
    """The Avro type of Arrow type ``t`` (``name``/``namespace``: of the records and fixed
    types it defines), as :func:`arrow_to_avro_schema` writes a field of it."""
    return _arrow_type_to_avro(t, name, namespace)


def arrow_to_avro_schema(schema: pa.Schema, name: str = "record",
                         namespace: str = "hoodie") -> dict[str, Any]:
    """Avro record schema of an Arrow schema (nullable fields become ``["null", T]``)."""
    return _record(list(schema), name, namespace)
