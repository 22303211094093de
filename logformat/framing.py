"""Log format version 1 block framing: one encoder and one decoder per structure (spec §2).

A block on disk::

    magic "#HUDI#" | i64 blockLength | i32 formatVersion | i32 blockType | header map
    | i64 contentLength | content | footer map | i64 reversePointer

All integers are big-endian two's complement. ``blockLength`` counts the bytes after itself
through the reverse pointer; the reverse pointer is ``blockLength + 6`` (magic through footer).

Everything here is pure: bytes in, values out. Decoders take a ``base`` offset and a ``path`` so
that their errors name the place in the file the bytes came from.
"""

from __future__ import annotations

import struct
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from .constants import (
    BLOCK_PREFIX_LEN,
    LOG_FORMAT_VERSIONS,
    MAGIC,
    MAGIC_LEN,
    MAX_BLOCK_LENGTH,
    MIN_BLOCK_LENGTH_V1,
    TRAILER_LEN,
    BlockType,
    FooterKey,
    HeaderKey,
)
from .errors import (
    HeaderEncodingError,
    InvalidMagicError,
    LengthError,
    TruncatedError,
    UnknownBlockTypeError,
    UnknownHeaderKeyError,
    UnknownKeyWarning,
    UnsupportedVersionError,
    UsageError,
)

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_II = struct.Struct(">ii")


@dataclass(frozen=True)
class MetadataMap:
    """A header or footer map: ordered ``(key ordinal, raw value bytes)`` entries.

    Order is kept so that re-encoding reproduces the original bytes (Java writes a HashMap,
    so the order on disk is arbitrary). Values are kept as bytes; :meth:`get` decodes UTF-8.
    """

    entries: tuple[tuple[int, bytes], ...] = ()
    #: the enum the ordinals belong to (HeaderKey for headers, FooterKey for footers)
    kind: str = "header"
    #: where the map starts in its file, for error messages
    path: str | None = field(default=None, compare=False)
    offset: int | None = field(default=None, compare=False)

    @classmethod
    def of(cls, values: Mapping[HeaderKey, str] | None = None, kind: str = "header") -> MetadataMap:
        """Build a map from key -> string value, in the given order."""
        if not values:
            return cls((), kind)
        return cls(tuple((int(k), v.encode("utf-8")) for k, v in values.items()), kind)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        return iter(self.entries)

    def __contains__(self, key: object) -> bool:
        return any(k == key for k, _ in self.entries)

    def raw(self, key: int) -> bytes | None:
        for k, v in self.entries:
            if k == key:
                return v
        return None

    def get(self, key: int) -> str | None:
        """The value of ``key`` as a string, or None when absent."""
        value = self.raw(key)
        if value is None:
            return None
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            name = key_name(key, self.kind)
            raise HeaderEncodingError(
                f"{self.kind} value of {name} is not valid UTF-8 (byte {exc.start})",
                path=self.path,
                offset=self.offset,
            ) from None

    def known_keys(self) -> list[int]:
        return [k for k, _ in self.entries if _is_known(k, self.kind)]

    def unknown_keys(self) -> list[int]:
        return [k for k, _ in self.entries if not _is_known(k, self.kind)]

    def as_dict(self) -> dict[str, str]:
        """Key name -> string value (unknown keys named ``UNKNOWN_<ordinal>``)."""
        return {key_name(k, self.kind): self.get(k) or "" for k, _ in self.entries}


def _is_known(key: int, kind: str) -> bool:
    enum_cls = HeaderKey if kind == "header" else FooterKey
    return key in enum_cls._value2member_map_


def key_name(key: int, kind: str = "header") -> str:
    enum_cls = HeaderKey if kind == "header" else FooterKey
    member = enum_cls._value2member_map_.get(key)
    return member.name if member is not None else f"UNKNOWN_{key}"


def encode_map(m: MetadataMap | Sequence[tuple[int, bytes]]) -> bytes:
    entries = m.entries if isinstance(m, MetadataMap) else tuple(m)
    parts = [_I32.pack(len(entries))]
    for key, value in entries:
        parts.append(_II.pack(key, len(value)))
        parts.append(value)
    return b"".join(parts)


def decode_map(
    buf: bytes | memoryview,
    pos: int,
    end: int,
    *,
    kind: str = "header",
    base: int = 0,
    path: str | None = None,
    strict: bool = False,
) -> tuple[MetadataMap, int]:
    """Decode a map starting at ``buf[pos]`` that must end at or before ``buf[end]``.

    Returns the map and the position after it. Every count and length is checked against
    ``end`` before anything is sliced.
    """
    start = pos
    if end - pos < 4:
        raise TruncatedError(f"{kind} map count cut off", path=path, offset=base + pos)
    (count,) = _I32.unpack_from(buf, pos)
    pos += 4
    # each entry takes at least 8 bytes: a count that cannot fit is corrupt, not a big alloc
    if count < 0 or count * 8 > end - pos:
        raise LengthError(
            f"{kind} map entry count out of range",
            path=path,
            offset=base + start,
            expected=f"0..{(end - pos) // 8}",
            actual=count,
        )
    entries: list[tuple[int, bytes]] = []
    for _ in range(count):
        if end - pos < 8:
            raise TruncatedError(f"{kind} map entry cut off", path=path, offset=base + pos)
        key, length = _II.unpack_from(buf, pos)
        if length < 0 or length > end - pos - 8:
            raise LengthError(
                f"{kind} value length out of range",
                path=path,
                offset=base + pos + 4,
                expected=f"0..{end - pos - 8}",
                actual=length,
            )
        pos += 8
        entries.append((key, bytes(buf[pos : pos + length])))
        pos += length
    m = MetadataMap(tuple(entries), kind, path, base + start)
    unknown = m.unknown_keys()
    if unknown:
        if strict:
            raise UnknownHeaderKeyError(
                f"unknown {kind} key ordinal",
                path=path,
                offset=base + start,
                expected=[int(k) for k in (HeaderKey if kind == "header" else FooterKey)],
                actual=unknown[0],
            )
        warnings.warn(
            f"{path or '<bytes>'}@{base + start}: skipped unknown {kind} key ordinal(s) {unknown}",
            UnknownKeyWarning,
            stacklevel=2,
        )
    return m, pos


@dataclass(frozen=True)
class BlockFrame:
    """One version-1 block, content as raw bytes. ``encode_block`` is its exact inverse."""

    block_type: int
    header: MetadataMap = MetadataMap()
    content: bytes = b""
    footer: MetadataMap = MetadataMap(kind="footer")
    format_version: int = 1

    @property
    def type(self) -> BlockType:
        return BlockType(self.block_type)


def block_length_of(frame: BlockFrame) -> int:
    return 4 + 4 + len(encode_map(frame.header)) + 8 + len(frame.content) + len(
        encode_map(frame.footer)
    ) + TRAILER_LEN


def block_head(block_type: int, header: MetadataMap, content_length: int,
               format_version: int = 1) -> bytes:
    """A block's head as written: format version, block type, header map, content length
    (what the block CHECKSUM starts with, spec/index.md §4.12)."""
    return _II.pack(format_version, block_type) + encode_map(header) + _I64.pack(
        content_length)


def encode_block(frame: BlockFrame) -> bytes:
    """The exact bytes of ``frame`` on disk."""
    if frame.format_version != 1:
        raise UsageError("morlog writes log format version 1 only", actual=frame.format_version)
    if frame.block_type == BlockType.CORRUPT:
        raise UsageError("CORRUPT blocks are synthesized by readers and never written")
    body = b"".join((block_head(frame.block_type, frame.header, len(frame.content),
                                frame.format_version),
                     frame.content, encode_map(frame.footer)))
    block_length = len(body) + TRAILER_LEN
    if block_length > MAX_BLOCK_LENGTH:
        raise UsageError(
            "block too large: Hudi readers cannot read blocks of 2 GiB or more",
            expected=f"<= {MAX_BLOCK_LENGTH}",
            actual=block_length,
        )
    return b"".join((MAGIC, _I64.pack(block_length), body, _I64.pack(block_length + MAGIC_LEN)))


@dataclass(frozen=True)
class BlockHead:
    """Everything of a block except its content bytes (what a lazy reader keeps)."""

    offset: int
    block_length: int
    format_version: int
    block_type: int
    header: MetadataMap
    #: absolute offset and length of the content
    content_offset: int
    content_length: int
    footer: MetadataMap

    @property
    def size(self) -> int:
        return BLOCK_PREFIX_LEN + self.block_length

    @property
    def end(self) -> int:
        return self.offset + self.size


def check_magic(buf: bytes | memoryview, pos: int, *, base: int, path: str | None) -> None:
    got = bytes(buf[pos : pos + MAGIC_LEN])
    if got != MAGIC:
        raise InvalidMagicError("invalid block magic", path=path, offset=base + pos,
                                expected=MAGIC, actual=got)


def read_i64(buf: bytes | memoryview, pos: int) -> int:
    return int(_I64.unpack_from(buf, pos)[0])


def check_block_length(block_length: int, available: int, *, offset: int, path: str | None) -> None:
    """``available``: bytes after the length field up to the end of the file."""
    if block_length < MIN_BLOCK_LENGTH_V1 or block_length > min(available, MAX_BLOCK_LENGTH):
        raise LengthError(
            "block length out of range",
            path=path,
            offset=offset,
            expected=f"{MIN_BLOCK_LENGTH_V1}..{min(available, MAX_BLOCK_LENGTH)}",
            actual=block_length,
        )


def decode_block_head(
    buf: bytes | memoryview,
    *,
    base: int = 0,
    path: str | None = None,
    strict: bool = False,
    footer_buf: bytes | memoryview | None = None,
) -> BlockHead:
    """Decode a block's framing from ``buf``, which starts at the magic.

    ``buf`` must hold the whole block, or at least everything through the content length
    field when ``footer_buf`` (the block's last ``footer + 8`` bytes or more, ending at the
    block's end) is given. Structure inside the block must add up exactly; the reverse
    pointer must equal blockLength + 6.
    """
    if len(buf) < BLOCK_PREFIX_LEN:
        raise TruncatedError("block prefix cut off", path=path, offset=base)
    check_magic(buf, 0, base=base, path=path)
    block_length = read_i64(buf, MAGIC_LEN)
    if block_length < MIN_BLOCK_LENGTH_V1 or block_length > MAX_BLOCK_LENGTH:
        raise LengthError("block length out of range", path=path, offset=base + MAGIC_LEN,
                          expected=f"{MIN_BLOCK_LENGTH_V1}..{MAX_BLOCK_LENGTH}",
                          actual=block_length)
    end = BLOCK_PREFIX_LEN + block_length  # relative end of block
    have = min(len(buf), end)
    if have < BLOCK_PREFIX_LEN + 8:
        raise TruncatedError("block cut off before its type", path=path, offset=base + have)
    version, btype = _II.unpack_from(buf, BLOCK_PREFIX_LEN)
    vinfo = LOG_FORMAT_VERSIONS.get(version)
    if vinfo is None or not vinfo.supported:
        raise UnsupportedVersionError(
            "unsupported log format version", path=path, offset=base + BLOCK_PREFIX_LEN,
            expected=1, actual=version,
        )
    if btype not in BlockType._value2member_map_ or btype == BlockType.CORRUPT:
        raise UnknownBlockTypeError(
            "unknown block type ordinal" if btype != BlockType.CORRUPT else
            "block type CORRUPT (2) is never written; readers only synthesize it",
            path=path, offset=base + BLOCK_PREFIX_LEN + 4,
            expected="0, 1, 3..6", actual=btype,
        )
    pos = BLOCK_PREFIX_LEN + 8
    # the header must leave room for content length, footer count and reverse pointer
    header, pos = decode_map(buf, pos, min(have, end - 8 - 4 - TRAILER_LEN), kind="header",
                             base=base, path=path, strict=strict)
    if have - pos < 8:
        raise TruncatedError("content length cut off", path=path, offset=base + pos)
    content_length = read_i64(buf, pos)
    pos += 8
    room = end - pos - 4 - TRAILER_LEN
    if content_length < 0 or content_length > room:
        raise LengthError("content length out of range", path=path, offset=base + pos - 8,
                          expected=f"0..{room}", actual=content_length)
    content_pos = pos
    footer_pos = pos + content_length
    if footer_buf is None:
        fb: bytes | memoryview = buf
        fb_base = 0
    else:
        fb = footer_buf
        fb_base = end - len(footer_buf)
        if footer_pos < fb_base:
            raise UsageError("footer_buf does not reach back to the footer map")
    if len(fb) + fb_base < end:
        raise TruncatedError("block cut off before its end", path=path,
                             offset=base + len(fb) + fb_base)
    footer, fend = decode_map(memoryview(fb)[footer_pos - fb_base :], 0, end - TRAILER_LEN -
                              footer_pos, kind="footer", base=base + footer_pos, path=path,
                              strict=strict)
    if footer_pos + fend != end - TRAILER_LEN:
        raise LengthError("footer map does not end where the reverse pointer starts", path=path,
                          offset=base + footer_pos + fend, expected=end - TRAILER_LEN,
                          actual=footer_pos + fend)
    reverse = read_i64(fb, end - TRAILER_LEN - fb_base)
    if reverse != block_length + MAGIC_LEN:
        raise LengthError("reverse pointer does not match block length", path=path,
                          offset=base + end - TRAILER_LEN, expected=block_length + MAGIC_LEN,
                          actual=reverse)
    return BlockHead(base, block_length, version, btype, header, base + content_pos,
                     content_length, footer)


def decode_block(
    buf: bytes | memoryview, *, base: int = 0, path: str | None = None, strict: bool = False
) -> tuple[BlockFrame, int]:
    """Decode one complete block at the start of ``buf``; return it and its size on disk."""
    head = decode_block_head(buf, base=base, path=path, strict=strict)
    c0 = head.content_offset - base
    content = bytes(buf[c0 : c0 + head.content_length])
    return BlockFrame(head.block_type, head.header, content, head.footer,
                      head.format_version), head.size


def decode_blocks(data: bytes, *, path: str | None = None,
                  strict: bool = False) -> list[BlockFrame]:
    """Decode a whole, well-formed log file held in memory (no corruption recovery)."""
    out = []
    pos = 0
    view = memoryview(data)
    while len(data) - pos >= MAGIC_LEN:
        frame, size = decode_block(view[pos:], base=pos, path=path, strict=strict)
        out.append(frame)
        pos += size
    return out
