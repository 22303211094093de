"""Avro data block content, versions 1-3 (spec §5.1), and CDC block content (same layout).

Content::

    i32 contentVersion | i32 recordCount | recordCount x (i32 length L | L bytes Avro binary)

Records are Avro binary encoded with the block header's SCHEMA as writer schema: no container
file, no sync marker. Encoding and decoding of the records themselves is fastavro's job.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import fastavro
import numpy as np
import numpy.typing as npt

from .constants import CONTENT_VERSIONS, CURRENT_CONTENT_VERSION
from .errors import ContentError, LengthError, TruncatedError, UnsupportedVersionError, UsageError

_I32 = struct.Struct(">i")
_II = struct.Struct(">ii")


@dataclass(frozen=True, eq=False)
class AvroContent:
    """The framing of an Avro data block's content: version and where each record is.

    ``starts`` (of each record's datum, after its length prefix) and ``lengths`` are int64
    arrays; ``records`` (the raw datums as bytes) is built on first use only.
    """

    version: int
    data: bytes | memoryview
    starts: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.int64]
    #: offset of the end of the last record inside the content; bytes after it (an index
    #: trailer written by morlog, ignored by stock readers) start here
    end: int

    def __len__(self) -> int:
        return len(self.starts)

    @property
    def ends(self) -> npt.NDArray[np.int64]:
        return self.starts + self.lengths

    @cached_property
    def records(self) -> tuple[bytes, ...]:
        data = self.data
        return tuple(bytes(data[s:e]) for s, e in zip(self.starts.tolist(),
                                                      self.ends.tolist(), strict=True))


def read_content_version(content: bytes | memoryview, *, base: int = 0,
                         path: str | None = None) -> int:
    if len(content) < 4:
        raise TruncatedError("content version cut off", path=path, offset=base)
    (version,) = _I32.unpack_from(content, 0)
    if version not in CONTENT_VERSIONS:
        raise UnsupportedVersionError("unknown block content version", path=path, offset=base,
                                      expected=sorted(CONTENT_VERSIONS), actual=version)
    return int(version)


def read_record_count(content: bytes | memoryview, *, base: int = 0,
                      path: str | None = None) -> int:
    """The record count of an Avro data block, reading only its first 8 bytes."""
    read_content_version(content, base=base, path=path)
    if len(content) < 8:
        raise TruncatedError("record count cut off", path=path, offset=base + 4)
    (count,) = _I32.unpack_from(content, 4)
    # every record takes at least its 4-byte length prefix
    if count < 0 or count * 4 > len(content) - 8:
        raise LengthError("record count out of range", path=path, offset=base + 4,
                          expected=f"0..{(len(content) - 8) // 4}", actual=count)
    return int(count)


def record_spans(content: bytes | memoryview, count: int, *, base: int = 0,
                 path: str | None = None
                 ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int]:
    """Start of each record's datum, its length, and the end of the last record.

    Each offset depends on the lengths before it, so this walks the prefixes; the walk
    touches integers only (no object per record) and every length is checked before use.
    """
    n = len(content)
    lengths = [0] * count
    pos = 8
    unpack = _I32.unpack_from
    for i in range(count):
        if n - pos < 4:
            raise TruncatedError("record length cut off", path=path, offset=base + pos)
        (length,) = unpack(content, pos)
        if length < 0 or length > n - pos - 4:
            raise LengthError("record length out of range", path=path, offset=base + pos,
                              expected=f"0..{n - pos - 4}", actual=length)
        lengths[i] = length
        pos += 4 + length
    lens = np.array(lengths, dtype=np.int64)
    starts = np.empty(count, dtype=np.int64)
    if count:
        starts[0] = 12
        np.cumsum(lens[:-1] + 4, out=starts[1:])
        starts[1:] += 12
    return starts, lens, pos


def decode_avro_content(content: bytes | memoryview, *, base: int = 0,
                        path: str | None = None) -> AvroContent:
    """Split the content into records; every length is checked before use."""
    version = read_content_version(content, base=base, path=path)
    count = read_record_count(content, base=base, path=path)
    starts, lengths, end = record_spans(content, count, base=base, path=path)
    return AvroContent(version, content, starts, lengths, end)


def encode_avro_content(records: Sequence[bytes], version: int = CURRENT_CONTENT_VERSION.number
                        ) -> bytes:
    if version not in CONTENT_VERSIONS:
        raise UsageError("unknown content version", expected=sorted(CONTENT_VERSIONS),
                         actual=version)
    parts = [_II.pack(version, len(records))]
    for rec in records:
        parts.append(_I32.pack(len(rec)))
        parts.append(rec)
    return b"".join(parts)


@lru_cache(maxsize=256)
def _parse_schema_cached(schema_json: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_json), named_schemas={})


def parse_schema(schema: str | dict[str, Any], *, path: str | None = None,
                 offset: int | None = None) -> Any:
    """Parse an Avro schema (JSON text or dict) with fastavro; typed error on bad input."""
    text = schema if isinstance(schema, str) else json.dumps(schema, sort_keys=True)
    try:
        return _parse_schema_cached(text)
    except Exception as exc:  # fastavro raises many types for bad schemas
        raise ContentError(f"invalid Avro schema: {exc}", path=path, offset=offset) from None


def decode_record(raw: bytes, parsed_schema: Any, *, base: int = 0,
                  path: str | None = None) -> dict[str, Any]:
    """Decode one Avro-binary record; it must consume exactly ``len(raw)`` bytes."""
    buf = io.BytesIO(raw)
    try:
        rec = fastavro.schemaless_reader(buf, parsed_schema, None)
    except Exception as exc:  # EOFError, ValueError, UnicodeDecodeError, IndexError...
        raise ContentError(f"Avro record does not decode: {type(exc).__name__}: {exc}",
                           path=path, offset=base) from None
    if buf.tell() != len(raw):
        raise ContentError("Avro record length does not match its encoding", path=path,
                           offset=base, expected=len(raw), actual=buf.tell())
    if not isinstance(rec, dict):
        raise ContentError("Avro data block schema is not a record schema", path=path,
                           offset=base)
    return rec


def decode_records(content: bytes | memoryview, schema: str | dict[str, Any], *,
                   base: int = 0, path: str | None = None) -> list[dict[str, Any]]:
    """Decode every record of an Avro data block's content with its writer schema."""
    parsed = parse_schema(schema, path=path, offset=base)
    framing = decode_avro_content(content, base=base, path=path)
    out = []
    pos = base + 8
    for raw in framing.records:
        out.append(decode_record(raw, parsed, base=pos + 4, path=path))
        pos += 4 + len(raw)
    return out


def encode_record(record: dict[str, Any], parsed_schema: Any) -> bytes:
    buf = io.BytesIO()
    try:
        fastavro.schemaless_writer(buf, parsed_schema, record)
    except Exception as exc:
        raise UsageError(f"record does not match the Avro schema: {type(exc).__name__}: {exc}"
                         ) from None
    return buf.getvalue()


def encode_records(records: Iterable[dict[str, Any]], schema: str | dict[str, Any]) -> list[bytes]:
    parsed = parse_schema(schema)
    return [encode_record(r, parsed) for r in records]
