"""The base-key index: every record key of one base file, sorted by hash (spec/index.md §12).

A base file's keys stored where tagging reads them in one small read, instead of decoding
Hudi's DYNAMIC_V0 footer filter (hundreds of KB) and reading the file's key column. All
integers little-endian::

    magic "MBKI" | u8 version (1) | u8 codec (0 none, 1 zstd) | u16 flags (0)
    u64 base_size      byte size of the base file the keys are of
    u32 count          number of keys
    u32 name_length    | name_length bytes: the base file's name (UTF-8)
    u64 raw_length     length of the payload before compression
    u64 stored_length  length of the payload as stored
    u32 crc32          zlib CRC-32 of the stored payload
    stored payload, then nothing

    payload = count x u64 fingerprint | (count + 1) x u32 offset | key bytes

``fingerprint[i]`` is XXH64 (seed 0) of key ``i``'s UTF-8 bytes; keys are ordered by
(fingerprint, key bytes), ``offset[0] = 0``, offsets never decrease and the last equals the
length of the key bytes. Pure: bytes in, arrays out.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from .errors import ChecksumError, ContentError, LengthError, TruncatedError, UsageError
from .keybatch import KeyBatch
from .xxh64 import xxh64_batch

MAGIC = b"MBKI"
VERSION = 1
CODEC_NONE, CODEC_ZSTD = 0, 1
_CODEC_NAMES = {CODEC_NONE: None, CODEC_ZSTD: "zstd"}
HEAD = struct.Struct("<4sBBHQII")  # magic, version, codec, flags, base_size, count, name_len
LENGTHS = struct.Struct("<QQI")  # raw_length, stored_length, crc32
#: the largest base file name a reader accepts (Hudi's names are under 200 bytes)
MAX_NAME = 4096


def max_raw_length(stored_length: int) -> int:
    """The largest payload a reader decompresses from ``stored_length`` zstd bytes: more is
    taken for damage (no buffer is allocated for it), so writers never claim more."""
    return max(64 * stored_length, 1 << 20)

U64 = npt.NDArray[np.uint64]


@dataclass(frozen=True)
class BaseKeys:
    """A decoded base-key index."""

    base_file: str
    base_size: int
    #: XXH64 of every key, ascending
    fingerprints: U64
    #: the keys in fingerprint order
    keys: pa.StringArray

    def __len__(self) -> int:
        return len(self.keys)

    def contains(self, keys: pa.Array, hashes: U64,
                 order: npt.NDArray[np.intp] | None = None) -> npt.NDArray[np.bool_]:
        """Which of ``keys`` (with their XXH64 ``hashes``) are in the index, exactly: the
        fingerprints narrow, the key bytes confirm (several keys of one fingerprint too).
        ``order``: ``np.argsort(hashes)``, when the caller looks the same keys up in many
        indexes."""
        fp = self.fingerprints
        out = np.zeros(len(hashes), dtype=bool)
        if fp.size == 0 or len(hashes) == 0:
            return out
        # sorted needles: the binary searches walk the fingerprints in order (cache-friendly)
        if order is None:
            order = np.argsort(hashes)
        h = np.asarray(hashes, dtype=np.uint64)[order]
        lo = np.searchsorted(fp, h, side="left")
        found = fp[np.minimum(lo, fp.size - 1)] == h
        sel = np.flatnonzero(found)
        if sel.size == 0:
            return out
        probe = order[sel]
        lo = lo[sel]
        reps = np.searchsorted(fp, h[sel], side="right") - lo
        which = np.repeat(probe, reps)
        at = np.repeat(lo, reps) + (
            np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps))
        same = pc.equal(self.keys.take(pa.array(at)), keys.take(pa.array(which)))
        hit = which[np.asarray(same.to_numpy(zero_copy_only=False), dtype=bool)]
        out[hit] = True
        return out


def encode_base_keys(keys: pa.Array, base_file: str, base_size: int, *,
                     hashes: U64 | None = None, codec: int = CODEC_ZSTD) -> bytes:
    """The index of ``keys`` (the record keys of the base file ``base_file`` of
    ``base_size`` bytes); ``hashes``: their XXH64 when the caller has it. ``codec`` 1 falls
    back to 0 for a payload zstd shrinks beyond :func:`max_raw_length`."""
    if codec not in _CODEC_NAMES:
        raise UsageError("unknown base-key index codec", expected=sorted(_CODEC_NAMES),
                         actual=codec)
    arr = keys.cast(pa.string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count:
        raise UsageError("record keys must not be null", path=base_file)
    n = len(arr)
    fp = xxh64_batch(KeyBatch.of(arr)) if hashes is None else np.asarray(hashes, np.uint64)
    if len(fp) != n:
        raise UsageError("one hash per key", expected=n, actual=len(fp))
    # by fingerprint, then key bytes (equal fingerprints are rare: sort only those). Not a
    # stable sort: ties are ordered by key bytes below, and equal keys are equal bytes (numpy's
    # quicksort of 64-bit integers is 5x faster than its stable sort here)
    order = np.argsort(fp)
    fp = fp[order]
    if n > 1 and bool((fp[1:] == fp[:-1]).any()):
        t = pa.table({"f": pa.array(fp), "k": arr.take(pa.array(order)).cast(pa.binary()),
                      "i": pa.array(order)})
        t = t.sort_by([("f", "ascending"), ("k", "ascending")])
        order = t.column("i").to_numpy()
    sorted_keys = arr.take(pa.array(order)) if n else arr
    offs_buf, data_buf = sorted_keys.buffers()[1], sorted_keys.buffers()[2]
    if n:
        assert offs_buf is not None
        offs = np.frombuffer(offs_buf, dtype=np.int32)[sorted_keys.offset:
                                                       sorted_keys.offset + n + 1]
        start, end = int(offs[0]), int(offs[-1])
        if end - start >= 2**31:
            raise UsageError("base-key index over 2 GiB of keys", path=base_file)
        # a view of the key bytes: the payload below is the one copy
        data: memoryview | bytes = b"" if data_buf is None else memoryview(data_buf)[start:end]
        rel = (offs - start).astype("<u4")
    else:
        data, rel = b"", np.zeros(1, dtype="<u4")
    raw = b"".join((fp.astype("<u8", copy=False).data, rel.data, data))
    name = base_file.encode("utf-8")
    if len(name) > MAX_NAME:
        raise UsageError("base file name too long for a base-key index", path=base_file)
    stored = raw if codec == CODEC_NONE else pa.compress(raw, codec=_CODEC_NAMES[codec],
                                                         asbytes=True)
    if len(raw) > max_raw_length(len(stored)):
        # compressed beyond what readers accept (long keys sharing most of their bytes):
        # stored as is, which every reader accepts
        codec, stored = CODEC_NONE, raw
    return (HEAD.pack(MAGIC, VERSION, codec, 0, base_size, n, len(name)) + name
            + LENGTHS.pack(len(raw), len(stored), zlib.crc32(stored)) + stored)


def decode_base_keys(data: bytes | memoryview, *, path: str | None = None) -> BaseKeys:
    """Decode and check an index: only morlog's typed errors for any bytes."""
    view = memoryview(data)
    if len(view) < HEAD.size:
        raise TruncatedError("base-key index header cut off", path=path, offset=0,
                             expected=HEAD.size, actual=len(view))
    magic, version, codec, flags, base_size, n, name_len = HEAD.unpack_from(view, 0)
    if magic != MAGIC:
        raise ContentError("not a base-key index (magic)", path=path, offset=0,
                           expected=MAGIC, actual=bytes(magic))
    if version != VERSION:
        raise ContentError("base-key index version not supported", path=path, offset=4,
                           expected=VERSION, actual=version)
    if codec not in _CODEC_NAMES or flags != 0:
        raise ContentError("base-key index codec or flags unknown", path=path, offset=5,
                           actual=(codec, flags))
    if name_len > MAX_NAME:
        raise LengthError("base-key index name length out of range", path=path, offset=20,
                          expected=f"0..{MAX_NAME}", actual=name_len)
    at = HEAD.size + name_len
    if len(view) < at + LENGTHS.size:
        raise TruncatedError("base-key index header cut off", path=path, offset=HEAD.size,
                             expected=at + LENGTHS.size, actual=len(view))
    try:
        name = bytes(view[HEAD.size:at]).decode("utf-8")
    except UnicodeDecodeError:
        raise ContentError("base-key index name is not UTF-8", path=path,
                           offset=HEAD.size) from None
    raw_len, stored_len, crc = LENGTHS.unpack_from(view, at)
    at += LENGTHS.size
    if stored_len != len(view) - at:
        raise LengthError("base-key index payload length does not match the file",
                          path=path, offset=at - LENGTHS.size, expected=len(view) - at,
                          actual=stored_len)
    fixed = 8 * n + 4 * (n + 1)
    if raw_len < fixed or raw_len - fixed >= 2**31 or (
            codec == CODEC_NONE and raw_len != stored_len):
        raise LengthError("base-key index payload length out of range", path=path,
                          offset=at - LENGTHS.size, expected=f">= {fixed}", actual=raw_len)
    stored = view[at:]
    actual = zlib.crc32(stored)
    if actual != crc:
        raise ChecksumError("base-key index checksum mismatch", path=path, offset=at,
                            expected=crc, actual=actual)
    if codec == CODEC_NONE:
        raw: bytes | memoryview | pa.Buffer = stored
    else:
        # a payload claimed larger than zstd can expand these bytes to is damage, and no
        # buffer is allocated for it
        if raw_len > max_raw_length(stored_len):
            raise LengthError("base-key index raw length beyond its compressed size",
                              path=path, offset=at - LENGTHS.size, actual=raw_len)
        try:
            raw = pa.decompress(stored, raw_len, codec=_CODEC_NAMES[codec])
        except (pa.ArrowException, OSError, ValueError) as exc:  # ArrowIOError: an OSError
            raise ContentError(f"base-key index payload does not decompress: {exc}",
                               path=path, offset=at) from None
    buf = np.frombuffer(raw, dtype=np.uint8)
    if buf.size != raw_len:
        raise LengthError("base-key index payload size", path=path, offset=at,
                          expected=raw_len, actual=buf.size)
    fp = buf[: 8 * n].view("<u8").astype(np.uint64, copy=False)
    offs = buf[8 * n : fixed].view("<u4")
    body = raw_len - fixed
    if offs[0] != 0 or int(offs[-1]) != body or (n and bool((np.diff(offs.astype(np.int64))
                                                                < 0).any())):
        raise ContentError("base-key index offsets out of order", path=path, offset=at)
    if n > 1 and bool((fp[1:] < fp[:-1]).any()):
        raise ContentError("base-key index fingerprints out of order", path=path, offset=at)
    keys = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offs.astype(np.int32)),
                                                  pa.py_buffer(buf[fixed:])])
    try:
        keys.validate(full=True)
    except pa.ArrowInvalid:
        raise ContentError("base-key index keys are not UTF-8", path=path, offset=at) from None
    return BaseKeys(name, int(base_size), fp, keys)


__all__ = ["CODEC_NONE", "CODEC_ZSTD", "MAGIC", "VERSION", "BaseKeys", "decode_base_keys",
           "encode_base_keys", "max_raw_length"]
