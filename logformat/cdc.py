"""CDC data blocks: Hudi's change-data-capture log records (spec/cdc.md).

A CDC log file (``.<fileId>_<instant>.log.<version>_<writeToken>.cdc``, Hudi's
``HoodieCDCUtils.CDC_LOGFILE_SUFFIX``) holds CDC_DATA blocks (block type 6,
``HoodieCDCDataBlock``): the layout of an Avro data block (spec/format.md §5.1) whose
records follow the schema of the table's ``hoodie.table.cdc.supplemental.logging.mode``
(``HoodieCDCUtils.schemaBySupplementalLoggingMode``):

- ``OP_KEY_ONLY``: record ``Record`` {``op``, ``record_key``}, both ``["string", "null"]``;
- ``DATA_BEFORE``: record ``CDC`` {``op``, ``record_key``, ``before``};
- ``DATA_BEFORE_AFTER``: record ``CDC`` {``op``, ``ts_ms``, ``before``, ``after``};

``op`` is ``i``, ``u`` or ``d`` (``HoodieCDCOperation``), ``ts_ms`` the commit's instant,
``before``/``after`` the record without Hudi's meta fields (``["null", <table record>]``).
Blocks carry the INSTANT_TIME and SCHEMA headers only (``HoodieCDCLogger``).
"""

from __future__ import annotations

import json
import struct
from typing import Any

import pyarrow as pa

from .avro_columnar import encode_arrow_to_records
from .blocks import FAST_PATH_MISSES, avro_data_block, make_header
from .constants import CURRENT_CONTENT_VERSION, BlockType, HeaderKey
from .errors import ContentError, UsageError
from .framing import BlockFrame

OP_KEY_ONLY = "OP_KEY_ONLY"
DATA_BEFORE = "DATA_BEFORE"
DATA_BEFORE_AFTER = "DATA_BEFORE_AFTER"
#: ``HoodieCDCSupplementalLoggingMode``'s values (Hudi parses the property upper-cased)
LOGGING_MODES = (OP_KEY_ONLY, DATA_BEFORE, DATA_BEFORE_AFTER)

#: ``HoodieCDCOperation`` values
INSERT, UPDATE, DELETE = "i", "u", "d"
OPERATIONS = (INSERT, UPDATE, DELETE)

OP = "op"
TS_MS = "ts_ms"
BEFORE = "before"
AFTER = "after"
RECORD_KEY = "record_key"
#: the columns of Hudi's CDC query (``HoodieCDCUtils.CDC_COLUMNS``)
CDC_COLUMNS = (OP, TS_MS, BEFORE, AFTER)

#: ``HoodieCDCUtils.CDC_SCHEMA_OP_AND_RECORDKEY_STRING``, verbatim
OP_KEY_SCHEMA_TEXT = ('{"type":"record","name":"Record","fields":['
                      '{"name":"op","type":["string","null"]},'
                      '{"name":"record_key","type":["string","null"]}]}')


def logging_mode(value: str | None) -> str:
    """The logging mode a property value names (Hudi's default ``DATA_BEFORE_AFTER``);
    :class:`UsageError` for any other value."""
    mode = (value or DATA_BEFORE_AFTER).strip().upper()
    if mode not in LOGGING_MODES:
        raise UsageError("unknown CDC supplemental logging mode", expected=list(LOGGING_MODES),
                         actual=value)
    return mode


def _nullable(t: Any) -> list[Any]:
    return ["null", t]


def _full_name(record: dict[str, Any]) -> str:
    name = str(record.get("name", ""))
    ns = record.get("namespace")
    return name if "." in name or not ns else f"{ns}.{name}"


def cdc_schema(mode: str, data_schema: dict[str, Any]) -> dict[str, Any] | str:
    """The CDC record schema of ``mode`` for a table whose record schema (meta fields
    removed) is ``data_schema``; OP_KEY_ONLY: Hudi's fixed schema text."""
    mode = logging_mode(mode)
    if mode == OP_KEY_ONLY:
        return OP_KEY_SCHEMA_TEXT
    if data_schema.get("type") != "record":
        raise UsageError("a CDC schema nests a record schema", actual=data_schema.get("type"))
    string = _nullable("string")
    image = _nullable(data_schema)
    fields: list[dict[str, Any]] = [{"name": OP, "type": string, "doc": "", "default": None}]
    if mode == DATA_BEFORE_AFTER:
        fields += [{"name": TS_MS, "type": string, "doc": "", "default": None},
                   {"name": BEFORE, "type": image, "doc": "", "default": None},
                   # the record is defined once; the second use names it (as Avro's
                   # Schema.toString writes a schema that uses a named type twice)
                   {"name": AFTER, "type": _nullable(_full_name(data_schema)), "doc": "",
                    "default": None}]
    else:
        fields += [{"name": RECORD_KEY, "type": string, "doc": "", "default": None},
                   {"name": BEFORE, "type": image, "doc": "", "default": None}]
    out: dict[str, Any] = {"type": "record", "name": "CDC"}
    if data_schema.get("namespace"):
        out["namespace"] = data_schema["namespace"]
    out["doc"] = ""
    out["fields"] = fields
    return out


def _schema_text(schema: dict[str, Any] | str) -> str:
    return schema if isinstance(schema, str) else json.dumps(schema, separators=(",", ":"))


def cdc_block(rows: pa.Table, schema: dict[str, Any] | str, instant: str) -> BlockFrame:
    """A CDC_DATA block of ``rows`` (the mode's columns, in its order: ``op`` and
    ``record_key``/``ts_ms`` strings, ``before``/``after`` structs of the data fields) with
    the INSTANT_TIME and SCHEMA headers. Encoded column-wise; byte-identical to Avro's
    record-at-a-time encoding."""
    text = _schema_text(schema)
    names = [f["name"] for f in json.loads(text)["fields"]]
    if rows.column_names != names:
        raise UsageError("CDC rows do not have the mode's columns", expected=names,
                         actual=rows.column_names)
    header = make_header(instant, {HeaderKey.SCHEMA: text})
    try:
        body, count = encode_arrow_to_records(rows, text)
    except FAST_PATH_MISSES:
        frame = avro_data_block(rows.to_pylist(), text, instant, block_type=BlockType.CDC_DATA)
        return BlockFrame(int(BlockType.CDC_DATA), header, frame.content)
    prefix = struct.pack(">ii", CURRENT_CONTENT_VERSION.number, count)
    return BlockFrame(int(BlockType.CDC_DATA), header, prefix + body)


def check_cdc_rows(rows: pa.Table, *, path: str | None = None, offset: int = 0) -> pa.Table:
    """The decoded records of a CDC block checked: an ``op`` column of ``i``/``u``/``d``
    only, and the columns of one of the modes; a :class:`ContentError` otherwise."""
    names = rows.column_names
    if names not in ([OP, RECORD_KEY], [OP, RECORD_KEY, BEFORE], [OP, TS_MS, BEFORE, AFTER]):
        raise ContentError("a CDC block's records have none of the logging modes' fields",
                           path=path, offset=offset, actual=names)
    import pyarrow.compute as pc

    op = rows.column(OP)
    if not pa.types.is_string(op.type):
        raise ContentError("a CDC record's op is not a string", path=path, offset=offset)
    bad = pc.invert(pc.fill_null(pc.is_in(op, pa.array(OPERATIONS)), False))
    if pc.any(bad).as_py():
        raise ContentError("a CDC record's op is not i, u or d", path=path, offset=offset,
                           actual=op.filter(bad)[0].as_py())
    return rows


__all__ = ["AFTER", "BEFORE", "CDC_COLUMNS", "DATA_BEFORE", "DATA_BEFORE_AFTER", "DELETE",
           "INSERT", "LOGGING_MODES", "OP", "OPERATIONS", "OP_KEY_ONLY", "OP_KEY_SCHEMA_TEXT",
           "RECORD_KEY", "TS_MS", "UPDATE", "cdc_block", "cdc_schema", "check_cdc_rows",
           "logging_mode"]
