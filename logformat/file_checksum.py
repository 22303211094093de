"""A whole-file checksum kept inside a Parquet file's own footer (spec/rli.md §1a).

Parquet's page CRCs do not cover the footer (schema, row counts, offsets, statistics), so
a byte flipped there may still decode to other rows. A file *sealed* here carries, in its
footer's key/value metadata, the entry ``morlog.file.checksum`` whose value is 24 ASCII
lowercase hex digits: the CRC-32 (ISO-HDLC, zlib's) of the whole file and the file's length
in bytes (8 + 16 digits). The CRC is computed over the file's bytes with those 24 value
bytes read as 24 ASCII ``0`` (the placeholder the writer encodes first: the value has a
fixed width, so patching it in does not move a byte).

The entry is found without a Parquet decoder: in the footer (the ``footer length`` bytes
before the file's last 8), the Thrift compact encoding of the key/value pair,
``0x18 0x14 "morlog.file.checksum" 0x18 0x18`` followed by the value, must occur exactly
once. Any single changed byte of a sealed file is then found (:func:`check_sealed`): a byte
outside the value changes the CRC (CRC-32 detects every error burst of 32 bits or fewer);
a byte of the value makes it name another CRC or length than the file has (or not be hex);
a byte of the encoded key makes the entry not found; a truncation changes the length.
"""

from __future__ import annotations

import zlib

from morlog.config import BASE_FILE_CHECKSUM, FILE_CHECKSUM

from .errors import ChecksumError, ContentError

#: table property (hoodie.properties): every Parquet base file of the table is sealed
#: (value ``crc32``; written by morlog's record index table, spec/rli.md §1a)
PROPERTY = BASE_FILE_CHECKSUM
PROPERTY_VALUE = "crc32"
#: the footer key/value metadata key of the checksum
KEY = FILE_CHECKSUM.encode("ascii")
#: the width of its value: 8 hex digits of CRC-32, 16 of the file length
WIDTH = 24
PLACEHOLDER = b"0" * WIDTH
#: the Thrift compact encoding of a KeyValue before its value: field 1 (binary) the key,
#: field 2 (binary) of WIDTH bytes
_PREFIX = b"\x18" + bytes([len(KEY)]) + KEY + b"\x18" + bytes([WIDTH])
_MAGIC = b"PAR1"
_HEX = frozenset(b"0123456789abcdef")


def _value_at(data: bytes | memoryview, path: str | None) -> int:
    """The offset of the checksum value in the Parquet file ``data`` (a ContentError naming
    ``path`` when the footer does not hold the entry exactly once)."""
    n = len(data)
    if n < 12 or bytes(data[n - 4:]) != _MAGIC:
        raise ContentError("not a Parquet file (no PAR1 magic at its end)", path=path)
    footer_len = int.from_bytes(bytes(data[n - 8:n - 4]), "little")
    start = n - 8 - footer_len
    if footer_len <= 0 or start < 4:
        raise ContentError("Parquet footer length out of range", path=path,
                           offset=n - 8, actual=footer_len)
    footer = bytes(data[start:n - 8])
    at = footer.find(_PREFIX)
    if at < 0 or footer.find(_PREFIX, at + 1) >= 0 or at + len(_PREFIX) + WIDTH > len(footer):
        raise ContentError(f"the Parquet footer does not hold one {KEY.decode()} entry "
                           "(the file is damaged or was not sealed)", path=path, offset=start)
    return start + at + len(_PREFIX)


def _crc(data: bytes | memoryview, at: int) -> int:
    """The CRC-32 of ``data`` with its WIDTH bytes at ``at`` read as the placeholder (no
    copy of the file)."""
    view = memoryview(data)
    crc = zlib.crc32(view[:at])
    crc = zlib.crc32(PLACEHOLDER, crc)
    return zlib.crc32(view[at + WIDTH:], crc)


def seal(data: bytes) -> bytes:
    """``data`` (a Parquet file written with the entry ``KEY: PLACEHOLDER`` in its footer's
    key/value metadata) with the placeholder replaced by the file's CRC-32 and length."""
    at = _value_at(data, "<new base file>")
    if data[at:at + WIDTH] != PLACEHOLDER:
        raise ContentError("the Parquet footer's checksum entry is not the placeholder",
                           path="<new base file>", offset=at)
    value = f"{_crc(data, at):08x}{len(data):016x}".encode("ascii")
    return data[:at] + value + data[at + WIDTH:]


def check_sealed(data: bytes | memoryview, path: str | None) -> None:
    """A :class:`ContentError` naming ``path`` unless the Parquet file ``data`` is sealed
    (:func:`seal`) and its bytes are those the writer sealed (a :class:`ChecksumError` when
    the CRC differs)."""
    at = _value_at(data, path)
    raw = bytes(data[at:at + WIDTH])
    if not set(raw) <= _HEX:
        raise ContentError(f"the {KEY.decode()} value is not hex digits", path=path,
                           offset=at, actual=raw)
    crc, size = int(raw[:8], 16), int(raw[8:], 16)
    if size != len(data):
        raise ContentError("the file's length is not the one its checksum entry records "
                           "(truncated or extended)", path=path, expected=size,
                           actual=len(data))
    got = _crc(data, at)
    if got != crc:
        raise ChecksumError("file checksum mismatch: the file's bytes are damaged",
                            path=path, expected=crc, actual=got)


__all__ = ["KEY", "PLACEHOLDER", "PROPERTY", "PROPERTY_VALUE", "WIDTH", "check_sealed", "seal"]
