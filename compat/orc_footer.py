"""User metadata in an ORC file's footer: where Hudi keeps its index of an ORC base file.

Hudi's ORC writer (``HoodieAvroOrcWriter``, hudi-hadoop-common org/apache/hudi/io/hadoop/)
stores the keys of facts §9 (bloom filter, its type code, min/max record key) and the Avro
schema (``orc.avro.schema``) as ORC *user metadata* items; ``OrcUtils.readFooter`` reads
them back. pyarrow's ORC writer cannot add user metadata, so :func:`add_user_metadata`
appends the items to the footer of a file pyarrow wrote. Pure: bytes in, bytes out.

The ORC tail (Apache ORC specification, "File Tail")::

    ... stripes ... | Metadata | Footer | PostScript | one byte: PostScript length

The PostScript is an uncompressed protobuf message (field 1 ``footerLength``, field 2
``compression``, field 3 ``compressionBlockSize``, ...). The Footer is a protobuf message
whose field 5 is ``repeated UserMetadataItem metadata`` (item: field 1 ``name`` string,
field 2 ``value`` bytes). When the file is compressed, the Footer is a compressed stream: a
sequence of chunks, each with a 3-byte little-endian header ``length << 1 | original``
(``original`` = 1: the chunk is stored uncompressed), no chunk longer than the compression
block size. Protobuf concatenation merges repeated fields, so appending encoded items to the
Footer (as original chunks when compressed) adds them without touching anything else; the
PostScript is rewritten with the new ``footerLength``.
"""

from __future__ import annotations

from collections.abc import Mapping

from morlog.logformat.errors import FormatError, UsageError
from morlog.logformat.protobuf import read_varint, varint

_PS_FOOTER_LENGTH = 1
_PS_COMPRESSION = 2
_PS_BLOCK_SIZE = 3
_FOOTER_METADATA = 5
_ITEM_NAME, _ITEM_VALUE = 1, 2
_WIRE_VARINT, _WIRE_I64, _WIRE_LEN, _WIRE_I32 = 0, 1, 2, 5
#: ORC's CompressionKind NONE
_NONE = 0
#: the ORC default when the PostScript has no compressionBlockSize
_DEFAULT_BLOCK = 256 * 1024
#: a chunk header holds 23 bits of length
_MAX_CHUNK = (1 << 23) - 1


def _fields(buf: bytes, path: str | None) -> list[tuple[int, int, int | bytes, bytes]]:
    """Fields of a protobuf message: (number, wire type, value, raw bytes of the field)."""
    out: list[tuple[int, int, int | bytes, bytes]] = []
    pos = 0
    while pos < len(buf):
        start = pos
        tag, pos = read_varint(buf, pos, len(buf), path=path)
        number, wire = tag >> 3, tag & 7
        value: int | bytes
        if wire == _WIRE_VARINT:
            value, pos = read_varint(buf, pos, len(buf), path=path)
        elif wire == _WIRE_LEN:
            n, pos = read_varint(buf, pos, len(buf), path=path)
            if n > len(buf) - pos:
                raise FormatError("ORC postscript: field runs past its end", path=path,
                                  offset=pos, expected=len(buf) - pos, actual=n)
            value, pos = buf[pos : pos + n], pos + n
        elif wire in (_WIRE_I64, _WIRE_I32):
            width = 8 if wire == _WIRE_I64 else 4
            if width > len(buf) - pos:
                raise FormatError("ORC postscript: truncated field", path=path, offset=pos)
            value, pos = buf[pos : pos + width], pos + width
        else:
            raise FormatError("ORC postscript: unknown protobuf wire type", path=path,
                              offset=start, expected=[0, 1, 2, 5], actual=wire)
        out.append((number, wire, value, buf[start:pos]))
    return out


def encode_user_metadata(items: Mapping[bytes, bytes]) -> bytes:
    """``items`` as Footer field-5 entries (``UserMetadataItem`` messages), in order."""
    out = bytearray()
    for name, value in items.items():
        item = (varint(_ITEM_NAME << 3 | _WIRE_LEN) + varint(len(name)) + bytes(name)
                + varint(_ITEM_VALUE << 3 | _WIRE_LEN) + varint(len(value)) + bytes(value))
        out += varint(_FOOTER_METADATA << 3 | _WIRE_LEN) + varint(len(item)) + item
    return bytes(out)


def _original_chunks(payload: bytes, block: int) -> bytes:
    out = bytearray()
    step = max(1, min(block, _MAX_CHUNK))
    for i in range(0, len(payload), step):
        part = payload[i : i + step]
        out += (len(part) << 1 | 1).to_bytes(3, "little") + part
    return bytes(out)


def add_user_metadata(data: bytes, items: Mapping[bytes, bytes],
                      path: str | None = None) -> bytes:
    """The ORC file ``data`` with ``items`` added to its footer's user metadata (items of
    the same name already there are not removed: write each name once)."""
    if not items:
        return data
    if len(data) < 4 or data[:3] != b"ORC":
        raise FormatError("not an ORC file", path=path, expected=b"ORC", actual=data[:3])
    ps_len = data[-1]
    ps_start = len(data) - 1 - ps_len
    if ps_len == 0 or ps_start < 3:
        raise FormatError("ORC postscript length out of range", path=path,
                          offset=len(data) - 1, actual=ps_len)
    ps = data[ps_start:-1]
    fields = _fields(ps, path)
    values = {n: v for n, w, v, _ in fields if w == _WIRE_VARINT}
    footer_len = values.get(_PS_FOOTER_LENGTH)
    if not isinstance(footer_len, int) or footer_len > ps_start - 3:
        raise FormatError("ORC footer length out of range", path=path, offset=ps_start,
                          expected=f"<= {ps_start - 3}", actual=footer_len)
    compression = values.get(_PS_COMPRESSION, _NONE)
    block = values.get(_PS_BLOCK_SIZE, _DEFAULT_BLOCK)
    assert isinstance(compression, int) and isinstance(block, int)
    payload = encode_user_metadata(items)
    extra = payload if compression == _NONE else _original_chunks(payload, block)
    new_ps = bytearray()
    for number, _wire, _value, raw in fields:
        if number == _PS_FOOTER_LENGTH:
            new_ps += varint(_PS_FOOTER_LENGTH << 3 | _WIRE_VARINT)
            new_ps += varint(footer_len + len(extra))
        else:
            new_ps += raw
    if len(new_ps) > 255:
        raise UsageError("ORC postscript would exceed 255 bytes", path=path,
                         actual=len(new_ps))
    return data[:ps_start] + extra + bytes(new_ps) + bytes([len(new_ps)])


__all__ = ["add_user_metadata", "encode_user_metadata"]
