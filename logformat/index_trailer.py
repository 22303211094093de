"""The index trailer of indexed data blocks (spec/index.md).

An indexed Avro data block's content is a plain version-3 content followed by this trailer;
stock readers stop after ``record count`` records and never look at it. A Parquet data block
carries the same trailer bytes, Base64-encoded, under the key ``morlog.index`` of its Parquet
key/value metadata.

Layout (all integers little-endian; strings are u32 length + UTF-8)::

    section*                       per-block sections first, probe sections last
    section table                  count x (u16 id, u16 flags, u32 crc32, u64 offset, u64 length)
    tail (32 bytes)                u64 trailerLength, u32 sectionCount, u16 version, u16 flags,
                                   u32 tableCrc32, u32 reserved (0), magic "MORLIDX1"

Offsets in the section table are relative to the trailer's first byte. ``tableCrc32`` covers
the section table and the tail's first 16 bytes; each section has its own CRC-32 (zlib's,
ISO-HDLC) so a reader that fetched only some sections can check them.

Sections: KEYS (sorted unique keys), BLOOM (split-block filter of the keys), RANGE (key count,
min, max), CUMULATIVE (the file slice's filter and range up to this block: a full checkpoint or
a delta since the last checkpoint with a pointer to it), DIRECTORY (the data blocks the
cumulative part covers, with where their per-block sections are), COLUMN_STATS (per-block
column statistics), CHECKSUM (a CRC-32 of the block's header and records,
``morlog.logformat.block_checksum``).
"""

from __future__ import annotations

import enum
import struct
import warnings
import zlib
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import morlog.config as conf

from .errors import (
    ChecksumError,
    ContentError,
    InvalidMagicError,
    LengthError,
    UnknownSectionWarning,
    UnsupportedVersionError,
    UsageError,
)
from .sbbf import SplitBlockBloom

TRAILER_MAGIC = b"MORLIDX1"
TRAILER_VERSION = 1
TAIL = struct.Struct("<QIHHII8s")
TAIL_LEN = TAIL.size  # 32
ENTRY = struct.Struct("<HHIQQ")
ENTRY_LEN = ENTRY.size  # 24
#: Parquet key/value metadata key of the Parquet carrier
PARQUET_KEY = conf.INDEX_TRAILER_KEY.encode()

#: a KEYS section's decompressed size may be at most this many times its payload
MAX_KEYS_RATIO = 256
FILTER_SBBF_XXH64 = 1
CODEC_NONE = 0
CODEC_ZSTD = 1


class Section(enum.IntEnum):
    KEYS = 1
    BLOOM = 2
    RANGE = 3
    CUMULATIVE = 4
    DIRECTORY = 5
    COLUMN_STATS = 6
    CHECKSUM = 7


class CumulativeKind(enum.IntEnum):
    FULL = 0
    DELTA = 1


class Carrier(enum.IntEnum):
    """Where a block's index lives: how a reader gets at it."""

    NONE = 0  # no stored index: recompute from the records (compatibility reader)
    AVRO = 1  # trailer after the records: sections readable by byte range
    PARQUET = 2  # trailer Base64-encoded in the Parquet footer: read the block's footer


# --- primitive writers/readers -----------------------------------------------------------


class _Out:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def u8(self, v: int) -> None:
        self.parts.append(struct.pack("<B", v))

    def u32(self, v: int) -> None:
        self.parts.append(struct.pack("<I", v))

    def u64(self, v: int) -> None:
        self.parts.append(struct.pack("<Q", v))

    def str(self, v: str) -> None:
        b = v.encode("utf-8")
        self.u32(len(b))
        self.parts.append(b)

    def raw(self, b: bytes) -> None:
        self.parts.append(b)

    def bytes(self) -> bytes:
        return b"".join(self.parts)


class _In:
    def __init__(self, buf: bytes | memoryview, base: int, path: str | None, what: str) -> None:
        self.buf = memoryview(buf)
        self.pos = 0
        self.base = base
        self.path = path
        self.what = what

    def _need(self, n: int) -> None:
        if n < 0 or n > len(self.buf) - self.pos:
            raise LengthError(f"{self.what} section cut off", path=self.path,
                              offset=self.base + self.pos, expected=n,
                              actual=len(self.buf) - self.pos)

    def u8(self) -> int:
        self._need(1)
        v = self.buf[self.pos]
        self.pos += 1
        return int(v)

    def u32(self) -> int:
        self._need(4)
        (v,) = struct.unpack_from("<I", self.buf, self.pos)
        self.pos += 4
        return int(v)

    def u64(self) -> int:
        self._need(8)
        (v,) = struct.unpack_from("<Q", self.buf, self.pos)
        self.pos += 8
        return int(v)

    def take(self, n: int) -> memoryview:
        self._need(n)
        v = self.buf[self.pos : self.pos + n]
        self.pos += n
        return v

    def str(self) -> str:
        n = self.u32()
        raw = self.take(n)
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            raise ContentError(f"{self.what} section holds invalid UTF-8", path=self.path,
                               offset=self.base + self.pos - n) from None

    def done(self) -> None:
        if self.pos != len(self.buf):
            raise ContentError(f"{self.what} section has trailing bytes", path=self.path,
                               offset=self.base + self.pos, expected=len(self.buf),
                               actual=self.pos)


# --- sections --------------------------------------------------------------------------


def sorted_unique_keys(keys: pa.Array | list[str]) -> pa.Array:
    """Keys sorted by their UTF-8 bytes, duplicates removed, as an Arrow string array."""
    arr = keys if isinstance(keys, pa.Array) else pa.array(keys, type=pa.string())
    if arr.null_count:
        raise ContentError("record keys must not be null")
    arr = arr.cast(pa.string())
    # sorting the binary view sorts by bytes (UTF-8 order = code point order)
    b = pc.unique(arr.cast(pa.binary()))
    b = b.take(pc.sort_indices(b))
    return b.cast(pa.string())


def encode_keys(keys: pa.Array, codec: int = CODEC_ZSTD) -> bytes:
    """KEYS section of already sorted unique keys (``codec`` 1 falls back to 0 for raw
    bytes zstd shrinks beyond ``MAX_KEYS_RATIO``, which readers refuse)."""
    arr = keys.cast(pa.string())
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype="<i4")[arr.offset : arr.offset + n + 1]
    start = int(offsets[0]) if n else 0
    data_buf = arr.buffers()[2]
    data = bytes(data_buf)[start : int(offsets[-1])] if n and data_buf is not None else b""
    raw = (offsets - start).astype("<u4").tobytes() + data
    payload = raw
    if codec == CODEC_ZSTD:
        payload = pa.Codec("zstd").compress(raw, asbytes=True)
        if len(raw) > MAX_KEYS_RATIO * len(payload) + 4096:
            # shrunk beyond what readers decompress (long keys sharing most of their bytes):
            # stored as is, which every reader accepts
            codec, payload = CODEC_NONE, raw
    elif codec != CODEC_NONE:
        raise UsageError("unknown key list codec", expected=[CODEC_NONE, CODEC_ZSTD],
                         actual=codec)
    out = _Out()
    out.u8(codec)
    out.u32(n)
    out.u32(len(raw))
    out.u32(len(payload))
    out.raw(payload)
    return out.bytes()


def decode_keys(buf: bytes | memoryview, *, base: int = 0, path: str | None = None) -> pa.Array:
    r = _In(buf, base, path, "KEYS")
    keys = _read_keys(r)
    r.done()
    return keys


def _read_keys(r: _In) -> pa.Array:
    path, base = r.path, r.base
    codec, n, raw_len, payload_len = r.u8(), r.u32(), r.u32(), r.u32()
    payload_at = base + r.pos
    payload = bytes(r.take(payload_len))
    # the decompressed size is allocated up front: bound it by the payload it comes from
    limit = payload_len if codec == CODEC_NONE else MAX_KEYS_RATIO * payload_len + 4096
    if raw_len < 4 * (n + 1) or raw_len > limit:
        raise LengthError("key list length out of range", path=path, offset=base + 5,
                          expected=f"{4 * (n + 1)}..{limit}", actual=raw_len)
    if codec == CODEC_ZSTD:
        try:
            raw = pa.Codec("zstd").decompress(payload, decompressed_size=raw_len, asbytes=True)
        except (pa.ArrowInvalid, OSError) as exc:
            raise ContentError(f"key list does not decompress: {exc}", path=path,
                               offset=payload_at) from None
    elif codec == CODEC_NONE:
        raw = payload
    else:
        raise ContentError("unknown key list codec", path=path, offset=base,
                           expected=[CODEC_NONE, CODEC_ZSTD], actual=codec)
    if len(raw) != raw_len:
        raise LengthError("key list length mismatch", path=path, offset=base + 5,
                          expected=raw_len, actual=len(raw))
    offsets = np.frombuffer(raw, dtype="<u4", count=n + 1)
    data_len = raw_len - 4 * (n + 1)
    if offsets[0] != 0 or offsets[-1] != data_len or (np.diff(offsets.astype(np.int64)) < 0).any():
        raise ContentError("key list offsets are inconsistent", path=path, offset=payload_at)
    arr = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets.astype("<i4")),
                                                 pa.py_buffer(raw[4 * (n + 1) :])])
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise ContentError(f"key list is not valid UTF-8: {exc}", path=path,
                           offset=payload_at) from None
    return arr


def encode_bloom(bloom: SplitBlockBloom) -> bytes:
    return struct.pack("<BI", FILTER_SBBF_XXH64, bloom.num_blocks) + bloom.to_bytes()


def _read_bloom(r: _In) -> SplitBlockBloom:
    ftype = r.u8()
    if ftype != FILTER_SBBF_XXH64:
        raise ContentError("unknown bloom filter type", path=r.path, offset=r.base + r.pos - 1,
                           expected=FILTER_SBBF_XXH64, actual=ftype)
    nblocks = r.u32()
    if nblocks == 0 or nblocks * 32 > len(r.buf) - r.pos:
        raise LengthError("bloom filter size out of range", path=r.path,
                          offset=r.base + r.pos - 4, expected=f"1..{(len(r.buf) - r.pos) // 32}",
                          actual=nblocks)
    return SplitBlockBloom.from_bytes(bytes(r.take(nblocks * 32)), base=r.base + r.pos,
                                      path=r.path)


def decode_bloom(buf: bytes | memoryview, *, base: int = 0,
                 path: str | None = None) -> SplitBlockBloom:
    r = _In(buf, base, path, "BLOOM")
    f = _read_bloom(r)
    r.done()
    return f


def decode_filter_part(buf: bytes | memoryview, *, base: int = 0, path: str | None = None
                       ) -> tuple[SplitBlockBloom, KeyRange]:
    """A block's BLOOM and RANGE sections, read as one byte range (self-delimiting bodies)."""
    r = _In(buf, base, path, "BLOOM/RANGE")
    bloom = _read_bloom(r)
    rng = KeyRange(r.u32(), r.str(), r.str())
    r.done()
    return bloom, rng


@dataclass(frozen=True)
class KeyRange:
    count: int
    min_key: str
    max_key: str

    def encode(self) -> bytes:
        out = _Out()
        out.u32(self.count)
        out.str(self.min_key)
        out.str(self.max_key)
        return out.bytes()

    @classmethod
    def decode(cls, buf: bytes | memoryview, *, base: int = 0,
               path: str | None = None) -> KeyRange:
        r = _In(buf, base, path, "RANGE")
        v = cls(r.u32(), r.str(), r.str())
        r.done()
        return v


@dataclass(frozen=True)
class BlockRef:
    """A data block of the file slice, as the DIRECTORY section lists it."""

    file: int  # ordinal into Directory.files
    carrier: Carrier
    block_offset: int
    block_size: int
    #: AVRO carrier: where the block's [BLOOM, RANGE] sections (the "filter part") start,
    #: followed directly by its KEYS section; lengths and CRC-32s of both parts. All 0 for
    #: the other carriers.
    region_offset: int
    filter_length: int
    filter_crc32: int
    keys_length: int
    keys_crc32: int
    key_count: int
    instant: str
    min_key: str
    max_key: str

    @property
    def indexed(self) -> bool:
        return self.carrier != Carrier.NONE

    @property
    def region_length(self) -> int:
        return self.filter_length + self.keys_length


@dataclass(frozen=True)
class Directory:
    files: tuple[str, ...] = ()
    blocks: tuple[BlockRef, ...] = ()

    def encode(self) -> bytes:
        out = _Out()
        out.u32(len(self.files))
        for f in self.files:
            out.str(f)
        out.u32(len(self.blocks))
        for b in self.blocks:
            out.u32(b.file)
            out.u8(int(b.carrier))
            out.u64(b.block_offset)
            out.u32(b.block_size)
            out.u64(b.region_offset)
            out.u32(b.filter_length)
            out.u32(b.filter_crc32)
            out.u32(b.keys_length)
            out.u32(b.keys_crc32)
            out.u32(b.key_count)
            out.str(b.instant)
            out.str(b.min_key)
            out.str(b.max_key)
        return out.bytes()

    @classmethod
    def decode(cls, buf: bytes | memoryview, *, base: int = 0,
               path: str | None = None) -> Directory:
        r = _In(buf, base, path, "DIRECTORY")
        nfiles = r.u32()
        if nfiles * 4 > len(r.buf):
            raise LengthError("directory file count out of range", path=path, offset=base,
                              actual=nfiles)
        files = tuple(r.str() for _ in range(nfiles))
        nblocks = r.u32()
        if nblocks * 57 > len(r.buf) - r.pos:
            raise LengthError("directory block count out of range", path=path,
                              offset=base + r.pos - 4, actual=nblocks)
        blocks = []
        for _ in range(nblocks):
            ref = BlockRef(r.u32(), _carrier(r), r.u64(), r.u32(), r.u64(), r.u32(), r.u32(),
                           r.u32(), r.u32(), r.u32(), r.str(), r.str(), r.str())
            if ref.file >= nfiles:
                raise ContentError("directory entry names an unknown file", path=path,
                                   offset=base + r.pos, expected=f"< {nfiles}", actual=ref.file)
            blocks.append(ref)
        r.done()
        return cls(files, tuple(blocks))


def _carrier(r: _In) -> Carrier:
    raw = r.u8()
    if raw not in Carrier._value2member_map_:
        raise ContentError("unknown index carrier", path=r.path, offset=r.base + r.pos - 1,
                           expected=[int(c) for c in Carrier], actual=raw)
    return Carrier(raw)


@dataclass(frozen=True)
class CheckpointRef:
    """Where the last full checkpoint's [CUMULATIVE, DIRECTORY] sections are.

    AVRO carrier: the byte range of those two sections and their CRC-32. PARQUET carrier: the
    byte range of the whole checkpoint block (its footer holds them), CRC-32 0.
    """

    file: int  # ordinal into the DIRECTORY files of the block that holds this reference
    carrier: Carrier
    region_offset: int
    region_length: int
    region_crc32: int
    #: bytes of the region that are the CUMULATIVE section (the DIRECTORY follows)
    cumulative_length: int = 0


@dataclass(frozen=True)
class Cumulative:
    kind: CumulativeKind
    #: the file slice this cumulative state belongs to (its base instant; "" for none)
    scope: str
    blocks: int
    keys: int
    min_key: str
    max_key: str
    #: FULL: every key of the scope; DELTA: keys of blocks after the checkpoint
    bloom: SplitBlockBloom
    checkpoint: CheckpointRef | None = None

    def encode(self) -> bytes:
        out = _Out()
        out.u8(int(self.kind))
        out.str(self.scope)
        out.u32(self.blocks)
        out.u64(self.keys)
        out.str(self.min_key)
        out.str(self.max_key)
        out.raw(encode_bloom(self.bloom))
        if self.kind == CumulativeKind.DELTA:
            if self.checkpoint is None:
                raise ContentError("a DELTA cumulative section needs a checkpoint reference")
            c = self.checkpoint
            out.u32(c.file)
            out.u8(int(c.carrier))
            out.u64(c.region_offset)
            out.u32(c.region_length)
            out.u32(c.region_crc32)
            out.u32(c.cumulative_length)
        return out.bytes()

    @classmethod
    def decode(cls, buf: bytes | memoryview, *, base: int = 0,
               path: str | None = None) -> Cumulative:
        r = _In(buf, base, path, "CUMULATIVE")
        raw_kind = r.u8()
        if raw_kind not in CumulativeKind._value2member_map_:
            raise ContentError("unknown cumulative kind", path=path, offset=base,
                               expected=[0, 1], actual=raw_kind)
        kind = CumulativeKind(raw_kind)
        scope, blocks, keys = r.str(), r.u32(), r.u64()
        min_key, max_key = r.str(), r.str()
        bloom = _read_bloom(r)
        checkpoint = None
        if kind == CumulativeKind.DELTA:
            checkpoint = CheckpointRef(r.u32(), _carrier(r), r.u64(), r.u32(), r.u32(), r.u32())
        r.done()
        return cls(kind, scope, blocks, keys, min_key, max_key, bloom, checkpoint)


@dataclass(frozen=True)
class BlockChecksum:
    """The CHECKSUM section (spec/index.md §4.12): a checksum of the block's bytes outside
    the trailer (``morlog.logformat.block_checksum`` says which)."""

    #: ``CHECKSUM_CRC32`` (1); readers leave a block of another algorithm unverified
    algorithm: int
    #: how many bytes the checksum covers
    length: int
    value: int

    def encode(self) -> bytes:
        return BLOCK_CHECKSUM.pack(self.algorithm, self.length, self.value)

    @classmethod
    def decode(cls, buf: bytes | memoryview, *, base: int = 0,
               path: str | None = None) -> BlockChecksum:
        r = _In(buf, base, path, "CHECKSUM")
        v = cls(r.u8(), r.u64(), r.u32())
        r.done()
        return v


#: CHECKSUM section body: u8 algorithm, u64 covered length, u32 value
BLOCK_CHECKSUM = struct.Struct("<BQI")
#: CHECKSUM algorithm 1: CRC-32 of zlib (ISO-HDLC), as the trailer's own CRCs
CHECKSUM_CRC32 = 1


# --- the trailer -------------------------------------------------------------------------


@dataclass(frozen=True)
class SectionEntry:
    id: int
    flags: int
    crc32: int
    offset: int
    length: int


@dataclass
class TrailerLayout:
    """The parsed section table and tail of a trailer (no section decoded yet)."""

    length: int
    version: int
    flags: int
    sections: list[SectionEntry] = field(default_factory=list)

    def entry(self, sid: int) -> SectionEntry | None:
        for e in self.sections:
            if e.id == sid:
                return e
        return None

    def unknown(self) -> list[int]:
        return [e.id for e in self.sections if e.id not in Section._value2member_map_]


def encode_trailer(sections: list[tuple[int, bytes]]) -> bytes:
    """Sections in the given order, then the table and the tail."""
    parts = []
    entries = []
    pos = 0
    for sid, body in sections:
        entries.append(ENTRY.pack(sid, 0, zlib.crc32(body), pos, len(body)))
        parts.append(body)
        pos += len(body)
    table = b"".join(entries)
    length = pos + len(table) + TAIL_LEN
    head = struct.pack("<QIHH", length, len(sections), TRAILER_VERSION, 0)
    crc = zlib.crc32(table + head)
    tail = TAIL.pack(length, len(sections), TRAILER_VERSION, 0, crc, 0, TRAILER_MAGIC)
    return b"".join(parts) + table + tail


def has_trailer(buf: bytes | memoryview) -> bool:
    """True when ``buf`` (ending where a trailer would end) ends with the trailer magic."""
    return len(buf) >= TAIL_LEN and bytes(buf[-8:]) == TRAILER_MAGIC


def parse_layout(buf: bytes | memoryview, *, base: int = 0, path: str | None = None,
                 available_before: int | None = None) -> TrailerLayout:
    """Parse the tail and section table from ``buf``, which ends where the trailer ends.

    ``buf`` may hold only the end of the trailer; it must hold the table and the tail.
    ``base`` is the absolute offset of ``buf[0]``. ``available_before`` bounds the trailer
    length (bytes of content before the end of ``buf``).
    """
    if len(buf) < TAIL_LEN:
        raise LengthError("index trailer tail cut off", path=path, offset=base,
                          expected=TAIL_LEN, actual=len(buf))
    tail_at = len(buf) - TAIL_LEN
    length, count, version, flags, crc, _reserved, magic = TAIL.unpack_from(buf, tail_at)
    if magic != TRAILER_MAGIC:
        raise InvalidMagicError("invalid index trailer magic", path=path,
                                offset=base + len(buf) - 8, expected=TRAILER_MAGIC,
                                actual=bytes(magic))
    if version != TRAILER_VERSION:
        raise UnsupportedVersionError("unsupported index trailer version", path=path,
                                      offset=base + tail_at + 12, expected=TRAILER_VERSION,
                                      actual=version)
    limit = available_before if available_before is not None else len(buf)
    table_len = count * ENTRY_LEN
    if length > limit or length < TAIL_LEN + table_len:
        raise LengthError("index trailer length out of range", path=path,
                          offset=base + tail_at, expected=f"{TAIL_LEN + table_len}..{limit}",
                          actual=length)
    if table_len > tail_at:
        raise LengthError("index section table not in the buffer", path=path,
                          offset=base + tail_at, expected=table_len, actual=tail_at)
    table = bytes(buf[tail_at - table_len : tail_at])
    actual_crc = zlib.crc32(table + bytes(buf[tail_at : tail_at + 16]))
    if actual_crc != crc:
        raise ChecksumError("index section table checksum mismatch", path=path,
                            offset=base + tail_at - table_len, expected=crc,
                            actual=actual_crc)
    body_len = length - TAIL_LEN - table_len
    entries = []
    for i in range(count):
        e = SectionEntry(*ENTRY.unpack_from(table, i * ENTRY_LEN))
        if e.offset + e.length > body_len:
            raise LengthError("index section out of range", path=path,
                              offset=base + tail_at - table_len + i * ENTRY_LEN,
                              expected=f"<= {body_len}", actual=e.offset + e.length)
        entries.append(e)
    layout = TrailerLayout(length, version, flags, entries)
    unknown = layout.unknown()
    if unknown:
        warnings.warn(f"{path or '<bytes>'}@{base}: skipped unknown index section id(s) "
                      f"{unknown}", UnknownSectionWarning, stacklevel=2)
    return layout


def section_bytes(buf: bytes | memoryview, trailer_start_in_buf: int, entry: SectionEntry, *,
                  base: int = 0, path: str | None = None) -> memoryview:
    """One section's bytes out of ``buf``, checked against its CRC."""
    lo = trailer_start_in_buf + entry.offset
    if lo < 0 or lo + entry.length > len(buf):
        raise LengthError("index section not in the buffer", path=path, offset=base + lo)
    view = memoryview(buf)[lo : lo + entry.length]
    actual_crc = zlib.crc32(view)
    if actual_crc != entry.crc32:
        raise ChecksumError(f"index section {entry.id} checksum mismatch", path=path,
                            offset=base + lo, expected=entry.crc32, actual=actual_crc)
    return view
