"""Protocol-buffer varints, the one wire primitive the HFile trailer and the ORC footer share
(https://protobuf.dev/programming-guides/encoding/#varints)."""

from __future__ import annotations

from .errors import ContentError, TruncatedError


def varint(value: int) -> bytes:
    """Base-128 varint; a negative value as 10-byte two's complement (uint64)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_varint(buf: bytes | memoryview, pos: int, end: int, *, base: int = 0,
                path: str | None = None) -> tuple[int, int]:
    """(value, position after it) of the varint at ``buf[pos:end]``; ``TruncatedError`` when
    it is cut off at ``end``, ``ContentError`` when longer than 10 bytes (offsets reported as
    ``base + position``)."""
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise TruncatedError("protobuf varint cut off", path=path, offset=base + pos)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ContentError("protobuf varint longer than 10 bytes", path=path,
                               offset=base + pos)


__all__ = ["read_varint", "varint"]
