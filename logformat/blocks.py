"""Typed views of block contents and pure builders of the blocks morlog writes.

Builders return :class:`~morlog.logformat.framing.BlockFrame` values; ``encode_block`` turns
them into bytes. Decoders take a block's type, header and content bytes and return records, keys or
counts; they never touch files.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from morlog.logformat.hfile.codec import HUDI_NATIVE, HFileStyle
from morlog.logformat.hfile.content import (
    MDT_KEY_FIELD,
    decode_hfile_records,
    encode_hfile_records,
    hfile_block_keys,
    hfile_record_count,
)
from morlog.logformat.hfile.record_index import RecordIndexEntries, encode_record_index_hfile

from .avro_columnar import Unsupported, decode_block_records_to_arrow, encode_arrow_to_records
from .avro_content import (
    decode_avro_content,
    decode_records,
    encode_avro_content,
    encode_records,
    parse_schema,
    read_record_count,
)
from .avroschema import arrow_to_avro_schema, avro_to_arrow_schema
from .constants import CURRENT_CONTENT_VERSION, BlockType, CommandType, HeaderKey
from .delete_content import DeleteRecord, decode_delete_columns, encode_delete_content
from .errors import ContentError, UsageError
from .framing import BlockFrame, MetadataMap
from .parquet_content import (
    DEFAULT_COMPRESSION,
    decode_parquet_content,
    encode_parquet_content,
    parquet_num_rows,
)

#: record key meta field present when ``hoodie.populate.meta.fields`` is true
RECORD_KEY_FIELD = "_hoodie_record_key"
META_FIELDS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)


def make_header(instant: str, extra: Mapping[HeaderKey, str] | None = None) -> MetadataMap:
    """INSTANT_TIME first, then the other keys in ordinal order (any order is valid)."""
    values: dict[HeaderKey, str] = {HeaderKey.INSTANT_TIME: instant}
    for key in sorted(extra or {}):
        if key == HeaderKey.INSTANT_TIME:
            raise UsageError("INSTANT_TIME is given by the instant argument")
        values[key] = (extra or {})[key]
    return MetadataMap.of(values)


def _schema_text(schema: str | dict[str, Any]) -> str:
    return schema if isinstance(schema, str) else json.dumps(schema, separators=(",", ":"))


def avro_data_block(
    records: Sequence[dict[str, Any]],
    schema: str | dict[str, Any],
    instant: str,
    *,
    extra_header: Mapping[HeaderKey, str] | None = None,
    block_type: BlockType = BlockType.AVRO_DATA,
    trailer: bytes = b"",
) -> BlockFrame:
    """An Avro data block (content version 3) of ``records`` under the writer ``schema``.

    ``trailer`` is appended after the last record (the index trailer of indexed blocks).
    """
    text = _schema_text(schema)
    raw = encode_records(records, text)
    header = make_header(instant, {HeaderKey.SCHEMA: text, **(extra_header or {})})
    return BlockFrame(int(block_type), header, encode_avro_content(raw) + trailer)


#: what sends a block to the per-record fastavro path: a schema or value the column-wise codec
#: does not handle (it raises Unsupported), and, defensively, any error of numpy or Arrow inside
#: it; the fastavro path then gives the result or the typed error it always gave
FAST_PATH_MISSES = (Unsupported, ValueError, TypeError, IndexError, KeyError, OverflowError,
                    pa.ArrowException)


def _has_map(t: pa.DataType) -> bool:
    if pa.types.is_map(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_map(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_map(t.value_type)
    return False


def _avro_value(v: Any, t: pa.DataType) -> Any:
    """Arrow's Python value of type ``t`` in the shape fastavro wants (maps as dicts)."""
    if v is None:
        return None
    if pa.types.is_map(t):
        return {k: _avro_value(x, t.item_type) for k, x in v}
    if pa.types.is_struct(t):
        return {f.name: _avro_value(v[f.name], f.type) for f in t}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_avro_value(x, t.value_type) for x in v]
    return v


def arrow_to_records(table: pa.Table | pa.RecordBatch) -> list[dict[str, Any]]:
    """Rows of ``table`` as dicts fastavro can encode (Arrow maps become dicts)."""
    rows: list[dict[str, Any]] = table.to_pylist()
    mapped = [f for f in table.schema if _has_map(f.type)]
    for f in mapped:
        for row in rows:
            row[f.name] = _avro_value(row[f.name], f.type)
    return rows


def avro_data_block_from_arrow(table: pa.Table | pa.RecordBatch, instant: str, *,
                               schema: str | dict[str, Any] | None = None,
                               extra_header: Mapping[HeaderKey, str] | None = None
                               ) -> BlockFrame:
    avro = schema if schema is not None else arrow_to_avro_schema(table.schema)
    text = _schema_text(avro)
    try:  # column-wise; byte-identical to the per-record path below
        body, count = encode_arrow_to_records(table, text)
    except FAST_PATH_MISSES:
        return avro_data_block(arrow_to_records(table), text, instant, extra_header=extra_header)
    header = make_header(instant, {HeaderKey.SCHEMA: text, **(extra_header or {})})
    prefix = struct.pack(">ii", CURRENT_CONTENT_VERSION.number, count)
    return BlockFrame(int(BlockType.AVRO_DATA), header, prefix + body)


def cdc_data_block(records: Sequence[dict[str, Any]], schema: str | dict[str, Any],
                   instant: str) -> BlockFrame:
    return avro_data_block(records, schema, instant, block_type=BlockType.CDC_DATA)


def delete_block(records: Sequence[DeleteRecord] | bytes, instant: str, *,
                 schema: str | dict[str, Any] | None = None,
                 extra_header: Mapping[HeaderKey, str] | None = None) -> BlockFrame:
    """A delete block (content version 3) of ``records``, or of content encoded already
    (``encode_delete_columns``). Hudi's data-table writers add the table schema."""
    extra = dict(extra_header or {})
    if schema is not None:
        extra[HeaderKey.SCHEMA] = _schema_text(schema)
    content = records if isinstance(records, bytes) else encode_delete_content(records)
    return BlockFrame(int(BlockType.DELETE), make_header(instant, extra), content)


def rollback_block(instant: str, target_instant: str) -> BlockFrame:
    """A ROLLBACK command block: ``instant`` rolls back every earlier block of ``target``."""
    header = make_header(instant, {HeaderKey.TARGET_INSTANT_TIME: target_instant,
                                   HeaderKey.COMMAND_BLOCK_TYPE: str(int(CommandType.ROLLBACK))})
    return BlockFrame(int(BlockType.COMMAND), header, b"")


def parquet_data_block(table: pa.Table, instant: str, *,
                       schema: str | dict[str, Any] | None = None,
                       compression: str = DEFAULT_COMPRESSION,
                       key_value_metadata: dict[str, str] | None = None) -> BlockFrame:
    avro = schema if schema is not None else arrow_to_avro_schema(table.schema)
    content = encode_parquet_content(table, compression=compression,
                                     key_value_metadata=key_value_metadata)
    return BlockFrame(int(BlockType.PARQUET_DATA),
                      make_header(instant, {HeaderKey.SCHEMA: _schema_text(avro)}), content)


def hfile_data_block(records: Sequence[dict[str, Any]], schema: str | dict[str, Any],
                     instant: str, *, key_field: str = MDT_KEY_FIELD,
                     style: HFileStyle = HUDI_NATIVE, create_time_ms: int = 0,
                     extra_header: Mapping[HeaderKey, str] | None = None) -> BlockFrame:
    """An HFILE_DATA block (metadata table): ``records`` keyed by ``key_field``, as Hudi
    1.1's writer lays them out (spec/mdt.md §2)."""
    text = _schema_text(schema)
    content = encode_hfile_records(records, text, key_field=key_field, style=style,
                                   create_time_ms=create_time_ms)
    header = make_header(instant, {HeaderKey.SCHEMA: text, **(extra_header or {})})
    return BlockFrame(int(BlockType.HFILE_DATA), header, content)


def record_index_block(entries: RecordIndexEntries, schema: str | dict[str, Any],
                       instant: str, *, style: HFileStyle = HUDI_NATIVE,
                       create_time_ms: int = 0) -> BlockFrame:
    """The HFILE_DATA block of ``record_index`` entries, column-wise: the bytes of
    :func:`hfile_data_block` of their records (``entries.records()``)."""
    text = _schema_text(schema)
    content = encode_record_index_hfile(entries, text, style=style,
                                        create_time_ms=create_time_ms)
    return BlockFrame(int(BlockType.HFILE_DATA), make_header(instant, {HeaderKey.SCHEMA: text}),
                      content)


# --- decoding ---------------------------------------------------------------------------


def command_type(header: MetadataMap) -> CommandType | None:
    raw = header.get(HeaderKey.COMMAND_BLOCK_TYPE)
    if raw is None:
        return None
    try:
        return CommandType(int(raw))
    except ValueError:
        raise ContentError("unknown command block type", path=header.path,
                           offset=header.offset, expected=[c.value for c in CommandType],
                           actual=raw) from None


def record_count(block_type: int, content: bytes | memoryview, *, base: int = 0,
                 path: str | None = None) -> int | None:
    """Records (data) or keys (delete) in a block; None when the content is opaque."""
    if block_type in (BlockType.AVRO_DATA, BlockType.CDC_DATA):
        return read_record_count(content, base=base, path=path)
    if block_type == BlockType.DELETE:
        return len(decode_delete_columns(content, base=base, path=path))
    if block_type == BlockType.PARQUET_DATA:
        return parquet_num_rows(content, base=base, path=path)
    if block_type == BlockType.HFILE_DATA:
        return hfile_record_count(content, base=base, path=path)
    if block_type == BlockType.COMMAND:
        return 0
    return None


def _require_schema(header: MetadataMap, base: int, path: str | None) -> str:
    schema = header.get(HeaderKey.SCHEMA)
    if schema is None:
        raise ContentError("data block has no SCHEMA header", path=path, offset=base)
    return schema


def decode_avro_records(header: MetadataMap, content: bytes | memoryview, *, base: int = 0,
                        path: str | None = None) -> list[dict[str, Any]]:
    return decode_records(content, _require_schema(header, base, path), base=base, path=path)


def decode_block_records(block_type: int, header: MetadataMap, content: bytes | memoryview, *,
                         base: int = 0, path: str | None = None) -> list[dict[str, Any]]:
    """Decoded records of an Avro, CDC or HFile data block, as dicts (HFile: key order)."""
    if block_type == BlockType.HFILE_DATA:
        return decode_hfile_records(content, _require_schema(header, base, path), base=base,
                                    path=path)
    return decode_avro_records(header, content, base=base, path=path)


def records_to_arrow(records: Sequence[dict[str, Any]], schema: str | dict[str, Any], *,
                     base: int = 0, path: str | None = None) -> pa.Table:
    arrow_schema = avro_to_arrow_schema(schema)
    try:
        return pa.Table.from_pylist(list(records), schema=arrow_schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
        raise ContentError(f"records do not convert to Arrow: {exc}", path=path,
                           offset=base) from None


def decode_data_table(block_type: int, header: MetadataMap, content: bytes | memoryview, *,
                      base: int = 0, path: str | None = None, parquet: Any = None
                      ) -> pa.Table:
    """The records of an Avro, CDC, Parquet or HFile data block as an Arrow table
    (``parquet``: a Parquet block's content opened already, its footer parsed)."""
    if block_type in (BlockType.AVRO_DATA, BlockType.CDC_DATA):
        schema = _require_schema(header, base, path)
        try:  # column-wise; equal to the per-record path below
            return decode_block_records_to_arrow(content, schema, base=base, path=path)
        except FAST_PATH_MISSES:
            pass
        records = decode_records(content, schema, base=base, path=path)
        return records_to_arrow(records, schema, base=base, path=path)
    if block_type == BlockType.PARQUET_DATA:
        return decode_parquet_content(content, base=base, path=path, pf=parquet)
    if block_type == BlockType.HFILE_DATA:
        schema = _require_schema(header, base, path)
        records = decode_hfile_records(content, schema, base=base, path=path)
        return records_to_arrow(records, schema, base=base, path=path)
    raise UsageError(f"block type {BlockType(block_type).name} holds no decodable records")


def block_keys(block_type: int, header: MetadataMap, content: bytes | memoryview, *,
               key_field: str = RECORD_KEY_FIELD, base: int = 0,
               path: str | None = None) -> list[str | None]:
    """Record keys of a data block (from ``key_field``) or delete block, in block order."""
    if block_type == BlockType.DELETE:
        cols = decode_delete_columns(content, base=base, path=path)
        return list(cols.keys.to_pylist())
    if block_type in (BlockType.AVRO_DATA, BlockType.CDC_DATA):
        schema = _require_schema(header, base, path)
        parsed = parse_schema(schema, path=path, offset=base)
        names = {f["name"] for f in parsed["fields"]}
        if key_field not in names:
            raise ContentError(f"key field {key_field!r} is not in the block schema", path=path,
                               offset=base)
        try:  # column-wise when the keys are strings (Python values equal fastavro's)
            table = decode_block_records_to_arrow(content, schema, base=base, path=path)
            keys = table.column(key_field)
            if pa.types.is_string(keys.type):
                return keys.to_pylist()  # type: ignore[no-any-return]
        except FAST_PATH_MISSES:
            pass
        return [r[key_field] for r in decode_records(content, schema, base=base, path=path)]
    if block_type == BlockType.PARQUET_DATA:
        table = decode_parquet_content(content, base=base, path=path)
        if key_field not in table.column_names:
            raise ContentError(f"key field {key_field!r} is not a column of the block",
                               path=path, offset=base)
        try:
            return table.column(key_field).to_pylist()  # type: ignore[no-any-return]
        except (UnicodeDecodeError, pa.ArrowException) as exc:
            # pyarrow does not validate strings it reads from Parquet: damaged bytes show
            # up here, when the keys become Python strings
            raise ContentError(f"key column does not decode: {exc}", path=path,
                               offset=base) from None
    if block_type == BlockType.HFILE_DATA:  # the cell keys are the record keys
        return list(hfile_block_keys(content, base=base, path=path))
    raise UsageError(f"block type {BlockType(block_type).name} holds no keys")


def avro_trailing_bytes(content: bytes | memoryview, *, base: int = 0,
                        path: str | None = None) -> bytes:
    """Bytes after the last record of an Avro data block (empty for Hudi's own blocks)."""
    framing = decode_avro_content(content, base=base, path=path)
    return bytes(content[framing.end :])
