"""HFILE_DATA block content (block type 4; spec/mdt.md §2): one whole HFile of records.

Each cell maps a record key (UTF-8, the row of the cell) to the Avro binary encoding of the
record under the block's SCHEMA header, with the key field (``key`` in the metadata table)
set to ``""`` so the key is not stored twice (``HoodieHFileDataBlock.serializeRecord``). The
HFile's file info carries the schema text under ``schema``. Cells are sorted by key, keys
are unique, blocks are 1 MiB (``HoodieHFileDataBlock``), codec GZ.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

import fastavro

from morlog.logformat.avro_content import parse_schema
from morlog.logformat.errors import ContentError, UsageError
from morlog.logformat.hfile.codec import (
    DEFAULT_BLOCK_SIZE,
    FI_SCHEMA,
    HUDI_NATIVE,
    Codec,
    HFile,
    HFileStyle,
    decode_hfile,
    encode_hfile,
    hfile_entry_count,
)

#: the record key field of the metadata table (``HoodieAvroHFileReader.KEY_FIELD_NAME``)
MDT_KEY_FIELD = "key"


def _schema_text(schema: str | dict[str, Any]) -> str:
    return schema if isinstance(schema, str) else json.dumps(schema, separators=(",", ":"))


def decode_hfile_content(content: bytes | memoryview, *, base: int = 0,
                         path: str | None = None) -> HFile:
    return decode_hfile(content, base=base, path=path)


def hfile_record_count(content: bytes | memoryview, *, base: int = 0,
                       path: str | None = None) -> int:
    """Number of records, read from the trailer only."""
    return hfile_entry_count(content, base=base, path=path)


def hfile_block_keys(content: bytes | memoryview, *, base: int = 0,
                     path: str | None = None) -> list[str]:
    return _keys(decode_hfile(content, base=base, path=path), base, path)


def _keys(hf: HFile, base: int, path: str | None) -> list[str]:
    try:
        return [k.decode("utf-8") for k in hf.keys]
    except UnicodeDecodeError as exc:
        raise ContentError(f"HFile record key is not UTF-8: {exc}", path=path,
                           offset=base) from None


def decode_hfile_records(content: bytes | memoryview, schema: str | dict[str, Any], *,
                         key_field: str = MDT_KEY_FIELD, base: int = 0,
                         path: str | None = None) -> list[dict[str, Any]]:
    """The records of an HFILE_DATA block, in key order, with ``key_field`` restored from the
    cell keys.

    A union with several record branches (the column statistics value wrappers) decodes to
    ``(record full name, value)``, which :func:`encode_hfile_records` takes back, so the
    branch Hudi chose survives a round trip (``IntWrapper`` and ``DateWrapper`` look alike)."""
    parsed = parse_schema(_schema_text(schema), path=path, offset=base)
    hf = decode_hfile(content, base=base, path=path)
    keys = _keys(hf, base, path)
    names = {f["name"] for f in parsed["fields"]}
    out = []
    for key, value in zip(keys, hf.values, strict=True):  # fastavro: one call per record
        buf = io.BytesIO(value)
        try:
            rec = fastavro.schemaless_reader(buf, parsed, None, return_record_name=True,
                                             return_record_name_override=True)
        except Exception as exc:  # fastavro raises many types on hostile bytes
            raise ContentError(f"HFile record value does not decode: {exc}", path=path,
                               offset=base) from None
        if buf.tell() != len(value) or not isinstance(rec, dict):
            raise ContentError("HFile record value has trailing bytes", path=path,
                               offset=base, expected=len(value), actual=buf.tell())
        if key_field in names:
            rec[key_field] = key
        out.append(rec)
    return out


def encode_hfile_records(records: Sequence[dict[str, Any]], schema: str | dict[str, Any], *,
                         key_field: str = MDT_KEY_FIELD, style: HFileStyle = HUDI_NATIVE,
                         codec: Codec = Codec.GZ, block_size: int = DEFAULT_BLOCK_SIZE,
                         create_time_ms: int = 0) -> bytes:
    """HFILE_DATA content for ``records`` (any order; sorted here by UTF-8 key bytes).

    Keys must be unique (Hudi refuses duplicates too). Hudi sorts by Java String order,
    which equals byte order for keys without characters above U+FFFF."""
    text = _schema_text(schema)
    parsed = parse_schema(text)
    if key_field not in {f["name"] for f in parsed["fields"]}:
        raise UsageError(f"key field {key_field!r} is not in the schema")
    keyed = []
    for rec in records:  # one Avro encoding per record (fastavro)
        key = rec.get(key_field)
        if not isinstance(key, str):
            raise UsageError(f"record key field {key_field!r} must be a string",
                             actual=type(key).__name__)
        buf = io.BytesIO()
        try:
            fastavro.schemaless_writer(buf, parsed, {**rec, key_field: ""})
        except Exception as exc:
            raise UsageError(f"record does not encode with the schema: {exc}") from None
        keyed.append((key.encode("utf-8"), buf.getvalue()))
    keyed.sort(key=lambda kv: kv[0])
    return encode_hfile([k for k, _ in keyed], [v for _, v in keyed],
                        file_info={FI_SCHEMA: text.encode("utf-8")}, codec=codec,
                        style=style, block_size=block_size, create_time_ms=create_time_ms)
