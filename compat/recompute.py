"""Recomputing the index of blocks that carry none (spec/index.md §7.5).

Hudi's own Avro blocks (content versions 1-3), Parquet blocks without ``morlog.index`` and
delete blocks get their keys, filter and range recomputed from their records, giving the same
answers as the stored index would. Only the key is decoded: for an Avro record whose fields
before the key are primitives (the five Hudi meta fields, typically), a hand decoder skips them
and reads the key string, several times faster than decoding whole records with fastavro;
other schemas fall back to fastavro.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from morlog.logformat.avro_columnar import (
    decode_block_records_to_arrow,
    decode_column,
)
from morlog.logformat.avro_content import (
    AvroContent,
    decode_avro_content,
    decode_record,
    decode_records,
    parse_schema,
)
from morlog.logformat.blocks import FAST_PATH_MISSES, RECORD_KEY_FIELD
from morlog.logformat.constants import BlockType, HeaderKey
from morlog.logformat.delete_content import decode_delete_columns
from morlog.logformat.errors import ContentError, UsageError
from morlog.logformat.framing import MetadataMap
from morlog.logformat.indexed_block import BlockKeys
from morlog.logformat.parquet_content import decode_parquet_content
from morlog.logformat.virtual_keys import KeyField, VirtualKeys

Skip = Callable[[bytes, int], int]


def _varint_end(buf: bytes, pos: int) -> int:
    """Position after a zigzag varint starting at ``pos``."""
    n = len(buf)
    while pos < n:
        b = buf[pos]
        pos += 1
        if b < 0x80:
            return pos
    raise IndexError("varint runs past the record")


def _read_long(buf: bytes, pos: int) -> tuple[int, int]:
    shift = 0
    acc = 0
    n = len(buf)
    while True:
        if pos >= n or shift > 63:
            raise IndexError("varint runs past the record")
        b = buf[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    return (acc >> 1) ^ -(acc & 1), pos


def _skip_sized(buf: bytes, pos: int) -> int:
    length, pos = _read_long(buf, pos)
    if length < 0 or pos + length > len(buf):
        raise IndexError("length runs past the record")
    return pos + length


_FIXED = {"boolean": 1, "float": 4, "double": 8}


def _primitive_skip(t: Any) -> Skip | None:
    if isinstance(t, dict):
        if t.get("type") in ("int", "long") and "logicalType" in t:
            return _varint_end
        if t.get("type") == "fixed":
            size = int(t["size"])
            return lambda buf, pos: pos + size
        if t.get("type") in ("string", "bytes") and t.get("logicalType") in (None, "uuid",
                                                                              "decimal"):
            return _skip_sized
        return None
    if t in ("int", "long"):
        return _varint_end
    if t in ("string", "bytes"):
        return _skip_sized
    if t in _FIXED:
        width = _FIXED[t]
        return lambda buf, pos: pos + width
    if t == "null":
        return lambda buf, pos: pos
    return None


def _field_skip(t: Any) -> Skip | None:
    if isinstance(t, list):
        branches = [_primitive_skip(b) for b in t]
        if any(b is None for b in branches):
            return None
        fixed = [b for b in branches if b is not None]

        def skip_union(buf: bytes, pos: int) -> int:
            idx, pos = _read_long(buf, pos)
            if not 0 <= idx < len(fixed):
                raise IndexError("union branch out of range")
            return fixed[idx](buf, pos)

        return skip_union
    return _primitive_skip(t)


class KeyDecoder:
    """Reads only the key field of Avro-binary records of one writer schema."""

    def __init__(self, schema: str | dict[str, Any], key_field: str) -> None:
        s = json.loads(schema) if isinstance(schema, str) else schema
        names = [f["name"] for f in s.get("fields", [])]
        if key_field not in names:
            raise UsageError(f"key field {key_field!r} is not in the schema")
        at = names.index(key_field)
        fields = s["fields"]
        skips = [_field_skip(f["type"]) for f in fields[:at]]
        key_type = fields[at]["type"]
        self.key_field = key_field
        self._schema = schema
        self._schema_text = schema if isinstance(schema, str) else json.dumps(
            schema, separators=(",", ":"))
        self._nullable = isinstance(key_type, list)
        self._string_branch = (key_type.index("string") if self._nullable and "string" in
                               key_type else None)
        plain_string = key_type == "string" or (self._nullable and self._string_branch is
                                                not None and len(key_type) == 2)
        self.fast = all(s is not None for s in skips) and plain_string
        self._skips: list[Skip] = [s for s in skips if s is not None]

    def key_array(self, content: bytes | memoryview, framing: AvroContent) -> pa.Array | None:
        """The keys of every record of ``framing`` (of ``content``) as an Arrow string array,
        column-wise; None when the columnar reader cannot prove it reads what :meth:`keys`
        reads (the fields up to the key; whole records when :meth:`keys` decodes whole
        records): then :meth:`keys` is the way, record by record."""
        try:
            if self.fast:
                col = decode_column(content, self._schema_text, self.key_field,
                                    framing.starts, framing.ends)
            else:
                table = decode_block_records_to_arrow(content, self._schema_text)
                col = table.column(self.key_field).combine_chunks()
        except FAST_PATH_MISSES:
            return None
        return col if pa.types.is_string(col.type) else None

    def keys(self, raw_records: tuple[bytes, ...]) -> list[str | None]:
        if not self.fast:
            parsed = parse_schema(self._schema)
            return [decode_record(r, parsed)[self.key_field] for r in raw_records]
        out: list[str | None] = []
        skips = self._skips
        for raw in raw_records:
            pos = 0
            for skip in skips:
                pos = skip(raw, pos)
            if self._nullable:
                branch, pos = _read_long(raw, pos)
                if branch != self._string_branch:
                    out.append(None)
                    continue
            length, pos = _read_long(raw, pos)
            if length < 0 or pos + length > len(raw):
                raise IndexError("key runs past the record")
            out.append(raw[pos : pos + length].decode("utf-8"))
        return out


def avro_block_keys(header: MetadataMap, content: bytes, *,
                    key_field: KeyField = RECORD_KEY_FIELD,
                    base: int = 0, path: str | None = None) -> list[str | None]:
    """Keys of an Avro (or CDC) data block, decoding only what comes before the key."""
    keys = _avro_keys(header, content, key_field, base, path)
    return keys if isinstance(keys, list) else keys.to_pylist()


def avro_block_key_array(header: MetadataMap, content: bytes, *,
                         key_field: KeyField = RECORD_KEY_FIELD, base: int = 0,
                         path: str | None = None) -> pa.Array:
    """:func:`avro_block_keys` as an Arrow string array (column-wise when it can be)."""
    keys = _avro_keys(header, content, key_field, base, path)
    return pa.array(keys, type=pa.string()) if isinstance(keys, list) else keys


def _avro_keys(header: MetadataMap, content: bytes, key_field: KeyField, base: int,
               path: str | None) -> pa.Array | list[str | None]:
    schema = header.get(HeaderKey.SCHEMA)
    if schema is None:
        raise ContentError("data block has no SCHEMA header", path=path, offset=base)
    if isinstance(key_field, VirtualKeys):
        # no key column (meta fields not populated): the records are decoded and keyed as
        # Hudi's reader keys them (morlog.logformat.virtual_keys)
        try:
            table = decode_block_records_to_arrow(content, schema)
        except FAST_PATH_MISSES:
            records = decode_records(content, schema, base=base, path=path)
            table = pa.Table.from_pylist(list(records))
        return key_field.keys(table, path=path)
    framing = decode_avro_content(content, base=base, path=path)
    try:
        decoder = KeyDecoder(schema, key_field)
        col = decoder.key_array(content, framing)
        return decoder.keys(framing.records) if col is None else col
    except (IndexError, UnicodeDecodeError, ValueError) as exc:
        # the hand decoder found bytes it cannot walk: let fastavro say what is wrong
        decode_records(content, schema, base=base, path=path)
        raise ContentError(f"key field does not decode: {exc}", path=path,
                           offset=base) from None


def block_keys(block_type: int, header: MetadataMap, content: bytes, *,
               key_field: KeyField = RECORD_KEY_FIELD, base: int = 0,
               path: str | None = None) -> list[str | None]:
    """Keys of any data or delete block, by the cheapest decoding that works."""
    keys: list[str | None] = block_key_array(block_type, header, content,
                                             key_field=key_field, base=base,
                                             path=path).to_pylist()
    return keys


def block_key_array(block_type: int, header: MetadataMap, content: bytes, *,
                    key_field: KeyField = RECORD_KEY_FIELD, base: int = 0,
                    path: str | None = None) -> pa.Array:
    """:func:`block_keys` as one Arrow string array (nulls kept): a Parquet block's key
    column stays in Arrow, never a Python list."""
    if block_type in (BlockType.AVRO_DATA, BlockType.CDC_DATA):
        return avro_block_key_array(header, content, key_field=key_field, base=base,
                                    path=path)
    if block_type == BlockType.PARQUET_DATA:
        if isinstance(key_field, VirtualKeys):
            table = decode_parquet_content(content, columns=list(key_field.columns),
                                           base=base, path=path)
            return key_field.keys(table, path=path)
        table = decode_parquet_content(content, columns=[key_field], base=base, path=path)
        col = table.column(0)
        return (col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)).cast(pa.string())
    if block_type == BlockType.DELETE:
        return decode_delete_columns(content, base=base, path=path).keys
    raise UsageError(f"block type {BlockType(block_type).name} holds no keys")


def recompute_block_keys(block_type: int, header: MetadataMap, content: bytes, *,
                         key_field: KeyField = RECORD_KEY_FIELD, fpp: float = 0.01,
                         base: int = 0,
                         path: str | None = None) -> BlockKeys | None:
    """The per-block index a block would carry; None when it has no (non-null) key."""
    keys = block_key_array(block_type, header, content, key_field=key_field, base=base,
                           path=path)
    if keys.null_count:
        keys = keys.drop_null()
    if len(keys) == 0:
        return None
    return BlockKeys.of(keys, fpp)
