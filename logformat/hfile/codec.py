"""HFile v3 as Hudi writes it (spec/mdt.md §1): decode to cells, encode cells to bytes.

An HFile is a run of blocks (33-byte header, payload, checksums) then a 4096-byte trailer::

    data blocks (DATABLK*) | meta blocks (METABLKc) | root data index (IDXROOT2)
    | meta index (IDXROOT2) | file info (FILEINF2) | trailer (TRABLK"$ + protobuf)

Each data cell is ``i32 keyLength | i32 valueLength | key | value | u8 mvcc`` where the key
is an HBase KeyValue key: ``u16 rowLength | row | u8 familyLength (0) | qualifier (empty) |
i64 timestamp (Long.MAX_VALUE) | u8 type (4 = Put)``. Hudi stores its record key as the row.

Two writers are reproduced byte for byte (``HFileStyle``): Hudi 1.1's own Java writer
(``HUDI_NATIVE``, table version 9) and HBase 2.4's writer as Hudi 1.0 drives it (``HBASE``,
table version 8). Everything big is done with numpy/struct per block, never per byte; cells
are walked once per cell (each cell's offset depends on the previous one).
"""

from __future__ import annotations

import enum
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from morlog.logformat.crc32c import crc32c, crc32c_chunks
from morlog.logformat.errors import (
    ChecksumError,
    ContentError,
    InvalidMagicError,
    LengthError,
    TruncatedError,
    UnsupportedVersionError,
    UsageError,
)
from morlog.logformat.protobuf import read_varint, varint

# --- constants (hudi-io/hfile_format.md, HFileBlockType.java, HFileTrailer.java) ----------

DATA_MAGIC = b"DATABLK*"
META_MAGIC = b"METABLKc"
ROOT_INDEX_MAGIC = b"IDXROOT2"
FILE_INFO_MAGIC = b"FILEINF2"
TRAILER_MAGIC = b'TRABLK"$'
#: other HFile v3 block magics a reader may meet (HBase writes them; Hudi never does)
OTHER_MAGICS = (b"IDXLEAF2", b"IDXINTE2", b"BLMFBLK2", b"BLMFMET2", b"DFBLMET2",
                b"DATABLKE", b"IDXBLK)+")
PBUF_MAGIC = b"PBUF"
#: magic 8, onDiskSizeWithoutHeader 4, uncompressedSizeWithoutHeader 4, prevBlockOffset 8,
#: checksumType 1, bytesPerChecksum 4, onDiskDataSizeWithHeader 4
BLOCK_HEADER_LEN = 33
TRAILER_LEN = 4096
BYTES_PER_CHECKSUM = 16 * 1024
CHECKSUM_LEN = 4
MAJOR_VERSION = 3
#: KeyValue key suffix after the row: family length 0, no qualifier, Long.MAX_VALUE, Put
KEY_SUFFIX = b"\x00" + b"\x7f" + b"\xff" * 7 + b"\x04"
KEY_SUFFIX_LEN = len(KEY_SUFFIX)
#: the comparator class name both writers put in the trailer
COMPARATOR_CLASS = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
#: ``hoodie.hfile.block.size`` default (HoodieStorageConfig) and HoodieHFileDataBlock's
DEFAULT_BLOCK_SIZE = 1024 * 1024

# file info keys (HFileInfo.java; Hudi's own from HoodieAvroHFileReader/Writer)
FI_LAST_KEY = b"hfile.LASTKEY"
FI_AVG_KEY_LEN = b"hfile.AVG_KEY_LEN"
FI_AVG_VALUE_LEN = b"hfile.AVG_VALUE_LEN"
FI_CREATE_TIME = b"hfile.CREATE_TIME_TS"
FI_KEY_VALUE_VERSION = b"KEY_VALUE_VERSION"
FI_MAX_MVCC = b"MAX_MEMSTORE_TS_KEY"
FI_SCHEMA = b"schema"
FI_MIN_RECORD_KEY = b"minRecordKey"
FI_MAX_RECORD_KEY = b"maxRecordKey"
FI_BLOOM_TYPE = b"bloomFilterTypeCode"
META_BLOOM_FILTER = b"bloomFilter"

_HDR = struct.Struct(">8siiqBii")
_ENTRY = struct.Struct(">qi")
_CELL = struct.Struct(">ii")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class Codec(enum.IntEnum):
    """Trailer ``compression_codec`` (HFileCompressionCodec / HBase Compression.Algorithm)."""

    LZO = 0
    GZ = 1
    NONE = 2
    SNAPPY = 3
    LZ4 = 4
    BZIP2 = 5
    ZSTD = 6


class ChecksumType(enum.IntEnum):
    NULL = 0
    CRC32 = 1
    CRC32C = 2


@dataclass(frozen=True)
class HFileStyle:
    """What distinguishes the two writers whose bytes morlog reproduces (spec/mdt.md §1.7)."""

    name: str
    checksum: ChecksumType
    #: index entries and ``hfile.LASTKEY`` hold the full KeyValue key (HBase) or only
    #: ``u16 rowLength | row`` (Hudi's writer)
    full_index_keys: bool
    #: file info entries sorted by key bytes (HBase's TreeMap) or in Java HashMap order
    sorted_file_info: bool
    #: first byte of the trailer's version int
    minor_version: int
    #: trailer field 4 (total_uncompressed_bytes) is written (HBase only)
    total_uncompressed: bool
    #: the meta index block points back at the data index block (HBase prevBlockOffset)
    chained_index: bool


HUDI_NATIVE = HFileStyle("hudi-native", ChecksumType.NULL, False, False, 0, False, False)
HBASE = HFileStyle("hbase", ChecksumType.CRC32C, True, True, 3, True, True)


@dataclass(frozen=True)
class BlockInfo:
    magic: bytes
    offset: int
    on_disk_size: int  # header + compressed payload + checksums
    uncompressed_size: int  # payload only
    prev_offset: int
    checksum_type: int


@dataclass(frozen=True)
class Trailer:
    """The trailer's protobuf fields (absent ones are None) and its version."""

    fields: Mapping[int, int | bytes]
    major_version: int
    minor_version: int

    def get(self, number: int, default: int = 0) -> int:
        v = self.fields.get(number, default)
        return v if isinstance(v, int) else default

    @property
    def codec(self) -> Codec:
        return Codec(self.get(12, Codec.NONE))

    @property
    def entry_count(self) -> int:
        return self.get(7)


@dataclass(frozen=True, eq=False)
class HFile:
    """A decoded HFile: cells in file order plus everything a re-encoder needs."""

    keys: list[bytes]
    values: list[bytes]
    file_info: dict[bytes, bytes]
    meta_blocks: dict[bytes, bytes]
    trailer: Trailer
    blocks: tuple[BlockInfo, ...]
    #: the full KeyValue keys of the cells (row with its suffix), kept to check the suffix
    key_suffixes_ok: bool = True

    @property
    def codec(self) -> Codec:
        return self.trailer.codec

    @property
    def style(self) -> HFileStyle:
        """The writer style these bytes follow (by checksum type and trailer version)."""
        return HBASE if self.trailer.minor_version == HBASE.minor_version else HUDI_NATIVE


# --- small codecs ---------------------------------------------------------------------------


def _pb_fields(buf: bytes | memoryview, pos: int, end: int, *, base: int,
               path: str | None) -> list[tuple[int, int | bytes]]:
    out: list[tuple[int, int | bytes]] = []
    while pos < end:
        tag, pos = read_varint(buf, pos, end, base=base, path=path)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise ContentError("protobuf field number 0", path=path, offset=base + pos)
        if wire == 0:
            v, pos = read_varint(buf, pos, end, base=base, path=path)
            out.append((number, v))
        elif wire == 2:
            n, pos = read_varint(buf, pos, end, base=base, path=path)
            if n > end - pos:
                raise LengthError("protobuf field longer than its message", path=path,
                                  offset=base + pos, expected=f"<= {end - pos}", actual=n)
            out.append((number, bytes(buf[pos:pos + n])))
            pos += n
        elif wire == 1 and end - pos >= 8:
            out.append((number, int.from_bytes(buf[pos:pos + 8], "little")))
            pos += 8
        elif wire == 5 and end - pos >= 4:
            out.append((number, int.from_bytes(buf[pos:pos + 4], "little")))
            pos += 4
        else:
            raise ContentError("unsupported protobuf wire type", path=path, offset=base + pos,
                               actual=wire)
    return out


def _pb_bytes(number: int, value: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(value)) + value


def _pb_int(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def _write_vint(value: int) -> bytes:
    """Hadoop ``WritableUtils.writeVInt`` (block index key lengths)."""
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    length = -112
    if value < 0:
        value ^= -1
        length = -120
    tmp = value
    while tmp:
        tmp >>= 8
        length -= 1
    nbytes = -(length + 120) if length < -120 else -(length + 112)
    return struct.pack(">b", length) + value.to_bytes(nbytes, "big")


def _read_vint(buf: bytes | memoryview, pos: int, end: int, *, base: int,
               path: str | None) -> tuple[int, int]:
    if pos >= end:
        raise TruncatedError("index key length cut off", path=path, offset=base + pos)
    first = struct.unpack_from(">b", buf, pos)[0]
    pos += 1
    if first >= -112:
        return first, pos
    negative = first < -120
    n = -(first + 120) if negative else -(first + 112)
    if n > end - pos:
        raise TruncatedError("index key length cut off", path=path, offset=base + pos)
    value = int.from_bytes(buf[pos:pos + n], "big")
    return (value ^ -1 if negative else value), pos + n


def java_string_hash(text: str) -> int:
    """``String.hashCode`` over UTF-16 code units, as a signed 32-bit int."""
    units = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):  # file-info key names only: a few dozen characters
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def java_hashmap_order(keys: Sequence[str]) -> list[str]:
    """The iteration order of a ``java.util.HashMap`` after putting ``keys`` in this order
    (default capacity 16, load factor 0.75; a bucket keeps insertion order)."""
    cap = 16
    while len(keys) > cap * 3 // 4:
        cap *= 2

    def bucket(k: str) -> int:
        h = java_string_hash(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (cap - 1)

    indexed = sorted(enumerate(keys), key=lambda p: (bucket(p[1]), p[0]))
    return [k for _, k in indexed]


def _gzip(raw: bytes) -> bytes:
    """What HBase's/Hudi's GZ codec writes: a 10-byte header with mtime 0 and OS 0, raw
    deflate at zlib's default level, CRC-32 and length (verified byte-identical)."""
    c = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15, 8,
                         zlib.Z_DEFAULT_STRATEGY)
    body = c.compress(raw) + c.flush()
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00" + body
            + struct.pack("<II", zlib.crc32(raw), len(raw) & 0xFFFFFFFF))


def _compress(raw: bytes, codec: Codec) -> bytes:
    if codec == Codec.NONE:
        return raw
    if codec == Codec.GZ:
        return _gzip(raw)
    raise UsageError("morlog writes HFile blocks with codec NONE or GZ only",
                     actual=codec.name)


def _decompress(data: bytes | memoryview, codec: Codec, size: int, *, base: int,
                path: str | None) -> bytes:
    if codec == Codec.NONE:
        raw = bytes(data)
    elif codec == Codec.GZ:
        try:
            d = zlib.decompressobj(31)
            raw = d.decompress(bytes(data), size + 1)
        except zlib.error as exc:
            raise ContentError(f"HFile block does not gunzip: {exc}", path=path,
                               offset=base) from None
    else:
        raise UnsupportedVersionError("HFile compression codec not supported", path=path,
                                      offset=base, expected=["NONE", "GZ"], actual=codec.name)
    if len(raw) != size:
        raise LengthError("HFile block payload size differs from its header", path=path,
                          offset=base, expected=size, actual=len(raw))
    return raw


def _checksums(data: bytes, ctype: ChecksumType) -> bytes:
    """Checksum bytes for ``data`` (header + on-disk payload), one i32 per 16 KiB chunk.

    NULL still reserves the four bytes per chunk (zeros), as both writers do."""
    n = -(-len(data) // BYTES_PER_CHECKSUM)
    if ctype == ChecksumType.NULL:
        return bytes(CHECKSUM_LEN * n)
    if ctype == ChecksumType.CRC32C:
        return crc32c_chunks(data, BYTES_PER_CHECKSUM).astype(">u4").tobytes()
    view = memoryview(data)  # CRC32: zlib per 16 KiB chunk
    return b"".join(struct.pack(">I", zlib.crc32(view[i:i + BYTES_PER_CHECKSUM]))
                    for i in range(0, len(data), BYTES_PER_CHECKSUM))


# --- decoding -------------------------------------------------------------------------------


def decode_trailer(data: bytes | memoryview, *, base: int = 0,
                   path: str | None = None) -> Trailer:
    """The trailer: the last 4096 bytes of ``data``."""
    n = len(data)
    if n < TRAILER_LEN:
        raise TruncatedError("HFile shorter than its 4096-byte trailer", path=path,
                             offset=base, expected=f">= {TRAILER_LEN}", actual=n)
    t0 = n - TRAILER_LEN
    magic = bytes(data[t0:t0 + 8])
    if magic != TRAILER_MAGIC:
        raise InvalidMagicError("invalid HFile trailer magic", path=path, offset=base + t0,
                                expected=TRAILER_MAGIC, actual=magic)
    (version,) = _I32.unpack_from(data, n - 4)
    major, minor = version & 0xFFFFFF, (version >> 24) & 0xFF
    if major != MAJOR_VERSION:
        raise UnsupportedVersionError("HFile major version not supported", path=path,
                                      offset=base + n - 4, expected=MAJOR_VERSION, actual=major)
    size, pos = read_varint(data, t0 + 8, n - 4, base=base, path=path)
    if size > n - 4 - pos:
        raise LengthError("trailer protobuf longer than the trailer", path=path,
                          offset=base + t0 + 8, expected=f"<= {n - 4 - pos}", actual=size)
    fields = dict(_pb_fields(data, pos, pos + size, base=base, path=path))
    for number in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12):
        if number in fields and not isinstance(fields[number], int):
            raise ContentError("trailer field has the wrong wire type", path=path,
                               offset=base + t0, actual=number)
    codec = fields.get(12, int(Codec.NONE))
    if codec not in Codec._value2member_map_:
        raise UnsupportedVersionError("unknown HFile compression codec", path=path,
                                      offset=base + t0, expected=[c.value for c in Codec],
                                      actual=codec)
    return Trailer(fields, major, minor)


def _block(data: bytes | memoryview, pos: int, limit: int, codec: Codec, *, base: int,
           path: str | None, magic: bytes | None = None) -> tuple[BlockInfo, bytes]:
    """Read the block at ``pos`` (ending at or before ``limit``); return it and its payload."""
    if pos < 0 or limit - pos < BLOCK_HEADER_LEN:
        raise TruncatedError("HFile block header cut off", path=path, offset=base + max(pos, 0))
    got, on_disk, usize, prev, ctype, bpc, data_with_header = _HDR.unpack_from(data, pos)
    if magic is not None and got != magic:
        raise InvalidMagicError("invalid HFile block magic", path=path, offset=base + pos,
                                expected=magic, actual=got)
    if on_disk < 0 or on_disk > limit - pos - BLOCK_HEADER_LEN:
        raise LengthError("HFile block on-disk size out of range", path=path,
                          offset=base + pos + 8, expected=f"0..{limit - pos - BLOCK_HEADER_LEN}",
                          actual=on_disk)
    if usize < 0:
        raise LengthError("negative HFile block size", path=path, offset=base + pos + 12,
                          actual=usize)
    if ctype not in ChecksumType._value2member_map_:
        raise ContentError("unknown HFile checksum type", path=path, offset=base + pos + 24,
                           expected=[c.value for c in ChecksumType], actual=ctype)
    if bpc <= 0:
        raise LengthError("bytes per checksum must be positive", path=path,
                          offset=base + pos + 25, actual=bpc)
    payload_len = data_with_header - BLOCK_HEADER_LEN
    if payload_len < 0 or payload_len > on_disk:
        raise LengthError("HFile block data size out of range", path=path,
                          offset=base + pos + 29, expected=f"{BLOCK_HEADER_LEN}.."
                          f"{BLOCK_HEADER_LEN + on_disk}", actual=data_with_header)
    nsum = CHECKSUM_LEN * -(-data_with_header // bpc)
    if payload_len + nsum != on_disk:
        raise LengthError("HFile block checksum bytes do not fill its on-disk size", path=path,
                          offset=base + pos + 8, expected=payload_len + nsum, actual=on_disk)
    end = pos + data_with_header
    if ctype != ChecksumType.NULL:
        covered = bytes(data[pos:end])
        stored = np.frombuffer(bytes(data[end:end + nsum]), dtype=">u4").astype(np.uint32)
        if ctype == ChecksumType.CRC32C and bpc == BYTES_PER_CHECKSUM:
            computed = crc32c_chunks(covered, bpc)
        else:
            fn = crc32c if ctype == ChecksumType.CRC32C else zlib.crc32
            computed = np.array([fn(covered[i:i + bpc]) for i in range(0, len(covered), bpc)],
                                dtype=np.uint32)
        bad = np.flatnonzero(computed != stored)
        if bad.size:
            i = int(bad[0])
            raise ChecksumError("HFile block checksum mismatch", path=path,
                                offset=base + pos + i * bpc, expected=int(stored[i]),
                                actual=int(computed[i]))
    raw = _decompress(memoryview(data)[pos + BLOCK_HEADER_LEN:end], codec, usize,
                      base=base + pos + BLOCK_HEADER_LEN, path=path)
    return BlockInfo(got, pos, BLOCK_HEADER_LEN + on_disk, usize, prev, ctype), raw


def _index_entries(raw: bytes, count: int, *, base: int,
                   path: str | None) -> tuple[list[tuple[int, int, bytes]], int]:
    out = []
    pos = 0
    n = len(raw)
    for _ in range(count):  # one entry per block, not per record
        if n - pos < _ENTRY.size:
            raise TruncatedError("block index entry cut off", path=path, offset=base + pos)
        offset, size = _ENTRY.unpack_from(raw, pos)
        klen, pos = _read_vint(raw, pos + _ENTRY.size, n, base=base, path=path)
        if klen < 0 or klen > n - pos:
            raise LengthError("block index key length out of range", path=path,
                              offset=base + pos, expected=f"0..{n - pos}", actual=klen)
        out.append((offset, size, raw[pos:pos + klen]))
        pos += klen
    return out, pos


def decode_file_info(raw: bytes, *, base: int = 0, path: str | None = None) -> dict[bytes, bytes]:
    """The payload of a FILEINF2 block: ``PBUF`` + delimited ``InfoProto``."""
    if raw[:4] != PBUF_MAGIC:
        raise InvalidMagicError("file info does not start with PBUF", path=path, offset=base,
                                expected=PBUF_MAGIC, actual=raw[:4])
    size, pos = read_varint(raw, 4, len(raw), base=base, path=path)
    if size > len(raw) - pos:
        raise LengthError("file info protobuf longer than its block", path=path,
                          offset=base + 4, expected=f"<= {len(raw) - pos}", actual=size)
    info: dict[bytes, bytes] = {}
    for number, entry in _pb_fields(raw, pos, pos + size, base=base, path=path):
        if number != 1 or not isinstance(entry, bytes):
            continue
        pair = dict(_pb_fields(entry, 0, len(entry), base=base, path=path))
        first, second = pair.get(1), pair.get(2)
        if not isinstance(first, bytes) or not isinstance(second, bytes):
            raise ContentError("file info entry lacks its key or value", path=path,
                               offset=base + pos)
        info[first] = second
    return info


def _cells(raw: bytes, *, base: int, path: str | None,
           mvcc: bool) -> tuple[list[int], list[int], list[int], list[int], bool]:
    """Row and value spans of the cells of one data block payload."""
    rows_at: list[int] = []
    rows_len: list[int] = []
    vals_at: list[int] = []
    vals_len: list[int] = []
    suffix_ok = True
    pos = 0
    n = len(raw)
    extra = 1 if mvcc else 0
    unpack = _CELL.unpack_from
    while pos < n:  # cells chain: each offset depends on the previous cell
        if n - pos < 10:
            raise TruncatedError("HFile cell header cut off", path=path, offset=base + pos)
        klen, vlen = unpack(raw, pos)
        if klen < 2 + KEY_SUFFIX_LEN or vlen < 0 or klen + vlen + extra > n - pos - 8:
            raise LengthError("HFile cell lengths out of range", path=path, offset=base + pos,
                              expected=f"key >= 12, total <= {n - pos - 8}",
                              actual=(klen, vlen))
        (rlen,) = _U16.unpack_from(raw, pos + 8)
        if rlen > klen - 2 - KEY_SUFFIX_LEN:
            raise LengthError("HFile row length longer than its key", path=path,
                              offset=base + pos + 8, expected=f"<= {klen - 12}", actual=rlen)
        if rlen != klen - 2 - KEY_SUFFIX_LEN:
            suffix_ok = False
        rows_at.append(pos + 10)
        rows_len.append(rlen)
        vals_at.append(pos + 8 + klen)
        vals_len.append(vlen)
        pos += 8 + klen + vlen
        if mvcc:
            if raw[pos] > 127:  # a Hadoop VLong: Hudi always writes 0
                raise ContentError("HFile cell MVCC timestamp is not a one-byte vlong",
                                   path=path, offset=base + pos, expected=0, actual=raw[pos])
            pos += 1
    return rows_at, rows_len, vals_at, vals_len, suffix_ok


def _slices(buf: bytes, starts: list[int], lengths: list[int]) -> list[bytes]:
    return [buf[s:s + n] for s, n in zip(starts, lengths, strict=True)]


def decode_hfile(data: bytes | memoryview, *, base: int = 0, path: str | None = None) -> HFile:
    """Decode a whole HFile held in memory (compression NONE or GZ)."""
    data = bytes(data)
    trailer = decode_trailer(data, base=base, path=path)
    limit = len(data) - TRAILER_LEN
    codec = trailer.codec
    load = trailer.get(2)
    if not 0 <= load <= limit:
        raise LengthError("load-on-open offset out of range", path=path, offset=base + limit,
                          expected=f"0..{limit}", actual=load)
    root_info, root_raw = _block(data, load, limit, codec, base=base, path=path,
                                 magic=ROOT_INDEX_MAGIC)
    levels = trailer.get(8, 1)
    if levels != 1:
        raise UnsupportedVersionError("multi-level HFile data index not supported", path=path,
                                      offset=base + load, expected=1, actual=levels)
    data_index, _ = _index_entries(root_raw, trailer.get(5), base=base + load, path=path)
    meta_at = load + root_info.on_disk_size
    meta_info, meta_raw = _block(data, meta_at, limit, codec, base=base, path=path,
                                 magic=ROOT_INDEX_MAGIC)
    meta_index, _ = _index_entries(meta_raw, trailer.get(6), base=base + meta_at, path=path)
    fi_at = trailer.get(1, meta_at + meta_info.on_disk_size)
    fi_info, fi_raw = _block(data, fi_at, limit, codec, base=base, path=path,
                             magic=FILE_INFO_MAGIC)
    file_info = decode_file_info(fi_raw, base=base + fi_at + BLOCK_HEADER_LEN, path=path)
    mvcc = _I32.unpack(file_info.get(FI_KEY_VALUE_VERSION, b"\x00\x00\x00\x01")[-4:].rjust(
        4, b"\x00"))[0] == 1
    blocks: list[BlockInfo] = []
    keys: list[bytes] = []
    values: list[bytes] = []
    suffix_ok = True
    for offset, size, _key in data_index:  # one iteration per data block
        if offset < 0 or size < BLOCK_HEADER_LEN or offset + size > load:
            raise LengthError("data block index entry out of range", path=path,
                              offset=base + load, expected=f"inside 0..{load}",
                              actual=(offset, size))
        info, raw = _block(data, offset, offset + size, codec, base=base, path=path,
                           magic=DATA_MAGIC)
        if info.on_disk_size != size:
            raise LengthError("data block size differs from its index entry", path=path,
                              offset=base + offset, expected=size, actual=info.on_disk_size)
        blocks.append(info)
        ra, rl, va, vl, ok = _cells(raw, base=base + offset + BLOCK_HEADER_LEN, path=path,
                                    mvcc=mvcc)
        suffix_ok = suffix_ok and ok
        keys.extend(_slices(raw, ra, rl))
        values.extend(_slices(raw, va, vl))
    meta_blocks: dict[bytes, bytes] = {}
    for offset, size, name in meta_index:
        if offset < 0 or offset + size > load:
            raise LengthError("meta block index entry out of range", path=path,
                              offset=base + meta_at, actual=(offset, size))
        info, raw = _block(data, offset, offset + size, codec, base=base, path=path,
                           magic=META_MAGIC)
        blocks.append(info)
        meta_blocks[name] = raw
    if len(keys) != trailer.entry_count:
        raise LengthError("HFile cell count differs from the trailer's entry count", path=path,
                          offset=base + limit, expected=trailer.entry_count, actual=len(keys))
    blocks.sort(key=lambda b: b.offset)
    blocks.extend((root_info, meta_info, fi_info))
    return HFile(keys, values, file_info, meta_blocks, trailer, tuple(blocks), suffix_ok)


def hfile_entry_count(data: bytes | memoryview, *, base: int = 0,
                      path: str | None = None) -> int:
    """Number of cells, from the trailer alone."""
    return decode_trailer(data, base=base, path=path).entry_count


# --- encoding -------------------------------------------------------------------------------


def check_sorted_unique(keys: Sequence[bytes], *, what: str = "HFile keys") -> None:
    """Raise :class:`UsageError` unless ``keys`` ascend strictly (unsigned byte order)."""
    for i in range(1, len(keys)):  # bytes comparison is C; one compare per key
        if not keys[i - 1] < keys[i]:
            _unsorted(keys[i - 1], keys[i], i, what)


def _unsorted(before: bytes, key: bytes, i: int, what: str) -> None:
    kind = "duplicate" if before == key else "out of order"
    raise UsageError(f"{what} must be sorted ascending and unique: {kind} key at "
                     f"position {i}", expected=f"> {before!r}", actual=key)


def check_sorted_unique_array(keys: pa.Array, *, what: str = "HFile keys") -> None:
    """:func:`check_sorted_unique` of a binary Arrow array, in one Arrow comparison."""
    n = len(keys)
    if n < 2:
        return
    ok = pc.less(keys.slice(0, n - 1), keys.slice(1))
    if ok.null_count or not pc.all(ok).as_py():
        i = int(np.flatnonzero(~np.asarray(ok.fill_null(False)))[0]) + 1
        _unsorted(keys[i - 1].as_py(), keys[i].as_py(), i, what)


@dataclass(frozen=True)
class _Column:
    """Byte strings held column-wise: their concatenated bytes and n + 1 offsets."""

    data: npt.NDArray[np.uint8]
    offsets: npt.NDArray[np.int64]

    @classmethod
    def of_list(cls, items: Sequence[bytes]) -> _Column:
        lengths = np.fromiter((len(x) for x in items), dtype=np.int64, count=len(items))
        offsets = np.zeros(len(items) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return cls(np.frombuffer(b"".join(items), dtype=np.uint8), offsets)

    @classmethod
    def of_array(cls, arr: pa.Array) -> _Column:
        """A binary (or string) Arrow array without nulls."""
        arr = arr.cast(pa.large_binary())
        n = len(arr)
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset: arr.offset + n + 1]
        buf = arr.buffers()[2]
        data = (np.frombuffer(buf, dtype=np.uint8) if buf is not None
                else np.zeros(0, dtype=np.uint8))
        data = data[int(offsets[0]) if n else 0: int(offsets[-1]) if n else 0]
        return cls(data, offsets - offsets[0])

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def lengths(self) -> npt.NDArray[np.int64]:
        return np.diff(self.offsets)

    def at(self, i: int) -> bytes:
        return self.data[int(self.offsets[i]): int(self.offsets[i + 1])].tobytes()


def _scatter(out: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], col: _Column) -> None:
    """Copy item ``i`` of ``col`` to ``out[starts[i]:]`` for every ``i`` (vectorized)."""
    lengths = col.lengths()
    out[np.repeat(starts - col.offsets[:-1], lengths) + np.arange(col.data.size)] = col.data


def _encode_cells(keys: _Column, values: _Column) -> tuple[
        bytes, npt.NDArray[np.int64], int, int]:
    """All cells back to back, each cell's end offset, and the total row and value bytes
    (vectorized)."""
    n = len(keys)
    klen = keys.lengths()
    vlen = values.lengths()
    if n and int(klen.max()) > 0x7FFF:
        raise UsageError("HFile row keys are limited to 32767 bytes", actual=int(klen.max()))
    cell = 8 + 2 + klen + KEY_SUFFIX_LEN + vlen + 1
    ends = np.cumsum(cell)
    starts = ends - cell
    total = int(ends[-1]) if n else 0
    out = np.zeros(total, dtype=np.uint8)
    head = np.zeros(n, dtype=[("k", ">i4"), ("v", ">i4"), ("r", ">u2")])
    head["k"] = 2 + klen + KEY_SUFFIX_LEN
    head["v"] = vlen
    head["r"] = klen
    head_bytes = head.view(np.uint8).reshape(n, 10)
    idx10 = starts[:, None] + np.arange(10)
    out[idx10] = head_bytes
    # rows: gather the concatenated keys into their places
    kstart = starts + 10
    _scatter(out, kstart, keys)
    suffix = np.frombuffer(KEY_SUFFIX, dtype=np.uint8)
    out[(kstart + klen)[:, None] + np.arange(KEY_SUFFIX_LEN)] = suffix
    _scatter(out, kstart + klen + KEY_SUFFIX_LEN, values)
    # the MVCC byte (0) stays as allocated
    return out.tobytes(), ends, int(klen.sum()), int(vlen.sum())


def _split_blocks(ends: npt.NDArray[np.int64], block_size: int,
                  style: HFileStyle) -> list[tuple[int, int]]:
    """Cell ranges ``[i, j)`` of each data block, per the writer's flush rule.

    Hudi's writer flushes before a cell that would take the block past ``block_size``;
    HBase flushes before a cell once the block holds ``block_size`` bytes or more.
    """
    out = []
    n = len(ends)
    i = 0
    while i < n:  # one iteration per data block
        start = int(ends[i - 1]) if i else 0
        if style.full_index_keys:  # HBase: finish once the block reached block_size
            j = int(np.searchsorted(ends, start + block_size, side="left")) + 1
        else:
            j = int(np.searchsorted(ends, start + block_size, side="right"))
        j = min(max(j, i + 1), n)
        out.append((i, j))
        i = j
    return out


def _block_bytes(magic: bytes, raw: bytes, prev: int, codec: Codec,
                 ctype: ChecksumType) -> bytes:
    payload = _compress(raw, codec)
    head = _HDR.pack(magic, len(payload) + CHECKSUM_LEN * -(-(BLOCK_HEADER_LEN + len(payload))
                                                             // BYTES_PER_CHECKSUM),
                     len(raw), prev, int(ctype), BYTES_PER_CHECKSUM,
                     BLOCK_HEADER_LEN + len(payload))
    body = head + payload
    return body + _checksums(body, ctype)


def _index_key(row: bytes, style: HFileStyle) -> bytes:
    key = _U16.pack(len(row)) + row
    return key + KEY_SUFFIX if style.full_index_keys else key


def _index_raw(entries: Sequence[tuple[int, int, bytes]]) -> bytes:
    return b"".join(_ENTRY.pack(o, s) + _write_vint(len(k)) + k for o, s, k in entries)


def encode_file_info(info: Mapping[bytes, bytes]) -> bytes:
    """``PBUF`` + delimited ``InfoProto`` with the entries in the mapping's order."""
    body = b"".join(_pb_bytes(1, _pb_bytes(1, k) + _pb_bytes(2, v)) for k, v in info.items())
    return PBUF_MAGIC + varint(len(body)) + body


def _order_file_info(info: Mapping[bytes, bytes], style: HFileStyle) -> dict[bytes, bytes]:
    if style.sorted_file_info:
        return {k: info[k] for k in sorted(info)}
    names = [k.decode("utf-8", "surrogateescape") for k in info]
    return {n.encode("utf-8", "surrogateescape"): info[n.encode("utf-8", "surrogateescape")]
            for n in java_hashmap_order(names)}


def encode_hfile(
    keys: Sequence[bytes] | pa.Array,
    values: Sequence[bytes] | pa.Array,
    *,
    file_info: Mapping[bytes, bytes] | None = None,
    meta_blocks: Mapping[bytes, bytes] | None = None,
    codec: Codec = Codec.GZ,
    style: HFileStyle = HUDI_NATIVE,
    block_size: int = DEFAULT_BLOCK_SIZE,
    create_time_ms: int = 0,
) -> bytes:
    """An HFile holding ``keys[i] -> values[i]`` (row keys strictly ascending).

    ``file_info`` adds entries to the ones the writer computes (last key, average key and
    value length, creation time, MVCC markers); ``meta_blocks`` are written in the given
    order (Hudi: ``bloomFilter``). With ``style`` and ``create_time_ms`` taken from a decoded
    Hudi file, the output reproduces Hudi's bytes (spec/mdt.md §1.7).

    ``keys`` and ``values`` may be binary Arrow arrays (no nulls; keys ascending by unsigned
    bytes): the same bytes, with no Python object per cell.
    """
    if len(keys) != len(values):
        raise UsageError("keys and values differ in length", expected=len(keys),
                         actual=len(values))
    if isinstance(keys, pa.Array) and isinstance(values, pa.Array):
        if keys.null_count or values.null_count:
            raise UsageError("HFile keys and values must not be null")
        keys = keys.cast(pa.large_binary())
        check_sorted_unique_array(keys)
        key_col, value_col = _Column.of_array(keys), _Column.of_array(values)
    else:
        key_list = [bytes(k) for k in keys]
        check_sorted_unique(key_list)
        key_col, value_col = _Column.of_list(key_list), _Column.of_list(
            [bytes(v) for v in values])
    return _encode_hfile(key_col, value_col, file_info=file_info, meta_blocks=meta_blocks,
                         codec=codec, style=style, block_size=block_size,
                         create_time_ms=create_time_ms)


def _encode_hfile(keys: _Column, values: _Column, *, file_info: Mapping[bytes, bytes] | None,
                  meta_blocks: Mapping[bytes, bytes] | None, codec: Codec, style: HFileStyle,
                  block_size: int, create_time_ms: int) -> bytes:
    if block_size <= 0:
        raise UsageError("block_size must be positive", actual=block_size)
    cells, ends, row_bytes, vlen = _encode_cells(keys, values)
    out: list[bytes] = []
    offset = 0
    data_index: list[tuple[int, int, bytes]] = []
    total_uncompressed = 0
    for i, j in _split_blocks(ends, block_size, style):
        a = int(ends[i - 1]) if i else 0
        raw = cells[a:int(ends[j - 1])]
        blk = _block_bytes(DATA_MAGIC, raw, -1, codec, style.checksum)
        data_index.append((offset, len(blk), _index_key(keys.at(i), style)))
        out.append(blk)
        offset += len(blk)
        total_uncompressed += BLOCK_HEADER_LEN + len(raw)
    data_bytes = len(cells)
    meta_index: list[tuple[int, int, bytes]] = []
    for name, payload in (meta_blocks or {}).items():
        blk = _block_bytes(META_MAGIC, bytes(payload), -1, codec, style.checksum)
        meta_index.append((offset, len(blk), bytes(name)))
        out.append(blk)
        offset += len(blk)
        total_uncompressed += BLOCK_HEADER_LEN + len(payload)
    load_on_open = offset
    root_raw = _index_raw(data_index)
    blk = _block_bytes(ROOT_INDEX_MAGIC, root_raw, -1, codec, style.checksum)
    out.append(blk)
    offset += len(blk)
    meta_raw = _index_raw(meta_index)
    blk = _block_bytes(ROOT_INDEX_MAGIC, meta_raw, load_on_open if style.chained_index else -1,
                       codec, style.checksum)
    out.append(blk)
    offset += len(blk)
    # HBase counts every block but the root data index, plus the trailer (spec/mdt.md §1.6)
    total_uncompressed += BLOCK_HEADER_LEN + len(meta_raw) + TRAILER_LEN
    n = len(keys)
    klen = row_bytes + (n * (2 + KEY_SUFFIX_LEN) if style.full_index_keys else 0)
    info: dict[bytes, bytes] = {FI_MAX_MVCC: _I64.pack(0)}
    info.update({bytes(k): bytes(v) for k, v in (file_info or {}).items()})
    if n or not style.full_index_keys:
        info[FI_LAST_KEY] = _index_key(keys.at(n - 1), style) if n else b""
    info[FI_AVG_KEY_LEN] = _I32.pack(klen // n if n else 0)
    info[FI_CREATE_TIME] = _I64.pack(create_time_ms)
    info[FI_AVG_VALUE_LEN] = _I32.pack(vlen // n if n else 0)
    info.setdefault(FI_KEY_VALUE_VERSION, _I32.pack(1))
    fi_raw = encode_file_info(_order_file_info(info, style))
    file_info_offset = offset
    blk = _block_bytes(FILE_INFO_MAGIC, fi_raw, -1, codec, style.checksum)
    out.append(blk)
    offset += len(blk)
    total_uncompressed += BLOCK_HEADER_LEN + len(fi_raw)
    first_data = data_index[0][0] if data_index else -1
    last_data = data_index[-1][0] if data_index else (-1 if style.full_index_keys else 0)
    fields: list[bytes] = [
        _pb_int(1, file_info_offset),
        _pb_int(2, load_on_open),
        _pb_int(3, len(root_raw) if style.full_index_keys else data_bytes),
    ]
    if style.total_uncompressed:
        fields.append(_pb_int(4, total_uncompressed))
    fields += [
        _pb_int(5, len(data_index)),
        _pb_int(6, len(meta_index)),
        _pb_int(7, n),
        _pb_int(8, 1),
        _pb_int(9, first_data),
        _pb_int(10, last_data),
        _pb_bytes(11, COMPARATOR_CLASS.encode()),
        _pb_int(12, int(codec)),
    ]
    proto = b"".join(fields)
    trailer = bytearray(TRAILER_LEN)
    head = TRAILER_MAGIC + varint(len(proto)) + proto
    trailer[:len(head)] = head
    trailer[-4:] = _I32.pack(style.minor_version << 24 | MAJOR_VERSION)
    out.append(bytes(trailer))
    return b"".join(out)


@dataclass(frozen=True)
class ReencodeArgs:
    """The writer inputs recoverable from a decoded Hudi HFile (see :func:`reencode_args`)."""

    file_info: dict[bytes, bytes]
    meta_blocks: dict[bytes, bytes]
    codec: Codec
    style: HFileStyle
    create_time_ms: int
    extra: dict[str, object] = field(default_factory=dict)


#: file info entries the writer computes itself
COMPUTED_FILE_INFO = frozenset({FI_LAST_KEY, FI_AVG_KEY_LEN, FI_AVG_VALUE_LEN, FI_CREATE_TIME,
                                FI_KEY_VALUE_VERSION,
                                FI_MAX_MVCC})


def reencode_args(hf: HFile) -> ReencodeArgs:
    """What to pass to :func:`encode_hfile` to rebuild ``hf``'s bytes."""
    fi = {k: v for k, v in hf.file_info.items() if k not in COMPUTED_FILE_INFO}
    raw_ct = hf.file_info.get(FI_CREATE_TIME, b"\x00" * 8)
    create = _I64.unpack(raw_ct)[0] if len(raw_ct) == 8 else 0
    return ReencodeArgs(fi, dict(hf.meta_blocks), hf.codec, hf.style, create)
