"""Key fingerprint files (spec/table.md §7.5): the sorted XXH64 hashes of the keys one task of
a distributed write inserted, with the row each came from, bucketed by the hash's top bits so
that the commit can merge the files of all tasks one bucket at a time (bounded memory) and
find the keys two tasks both inserted.

Layout, all integers little-endian::

    magic       8 bytes  "MORLFP01"
    bits        u32      bucket bits B (the top B bits of a hash choose its bucket)
    count       u64      N, the number of entries
    offsets     (2^B + 1) x u64   entry index where bucket b starts; offsets[2^B] = N
    hashes      N x u64  ascending (a bucket's entries are contiguous)
    rows        N x u32  the task-local row of each hash, in the same order
    crc32       u32      CRC-32 (zlib) of every byte before it

Pure codec: no I/O. ``morlog.writers.core.fingerprints`` reads the files by byte range.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import ChecksumError, ContentError, UsageError

MAGIC = b"MORLFP01"
#: 1,024 buckets: 10M keys are about 10k per bucket, 120 KiB of a bucket in memory
DEFAULT_BUCKET_BITS = 10
MAX_BUCKET_BITS = 16
_HEAD = struct.Struct("<8sIQ")


@dataclass(frozen=True)
class FingerprintHeader:
    """What the head of a fingerprint file says: the buckets and where each one's entries
    are (byte ranges are computed from it, see :meth:`hash_range` / :meth:`row_range`)."""

    bits: int
    count: int
    offsets: npt.NDArray[np.uint64]

    @property
    def size(self) -> int:
        """Bytes of magic, bits, count and offsets."""
        return header_size(self.bits)

    def file_size(self) -> int:
        return self.size + self.count * 12 + 4

    def hash_range(self, first: int, last: int | None = None) -> tuple[int, int]:
        """(offset, length) in the file of the hashes of buckets ``first`` to ``last``
        (inclusive; default ``first``): consecutive buckets are contiguous."""
        lo, hi = int(self.offsets[first]), int(self.offsets[(first if last is None
                                                             else last) + 1])
        return self.size + lo * 8, (hi - lo) * 8

    def row_range(self, first: int, last: int | None = None) -> tuple[int, int]:
        """(offset, length) in the file of the rows of buckets ``first`` to ``last``."""
        lo, hi = int(self.offsets[first]), int(self.offsets[(first if last is None
                                                             else last) + 1])
        return self.size + self.count * 8 + lo * 4, (hi - lo) * 4


def header_size(bits: int) -> int:
    return _HEAD.size + ((1 << bits) + 1) * 8


def encode_fingerprints(hashes: npt.NDArray[np.uint64], rows: npt.NDArray[Any], *,
                        bits: int = DEFAULT_BUCKET_BITS) -> bytes:
    """The file of ``hashes`` (one per inserted key, distinct) and their ``rows``."""
    if not 0 <= bits <= MAX_BUCKET_BITS:
        raise UsageError("fingerprint bucket bits", expected=f"0..{MAX_BUCKET_BITS}",
                         actual=bits)
    h = np.asarray(hashes, dtype=np.uint64)
    r = np.asarray(rows)
    if h.shape != r.shape or h.ndim != 1:
        raise UsageError("one row per hash", expected=h.shape, actual=r.shape)
    if r.size and (int(r.min()) < 0 or int(r.max()) > 0xFFFFFFFF):
        raise UsageError("fingerprint rows fit in 32 bits", actual=int(r.max()))
    order = np.argsort(h)  # no ties to order: equal hashes are refused below
    h = h[order]
    r = r[order].astype(np.uint32)
    if h.size > 1 and bool(np.any(h[1:] == h[:-1])):
        raise UsageError("fingerprints of one task are distinct (combine duplicates first)")
    offsets = _offsets(h, bits)
    body = b"".join((_HEAD.pack(MAGIC, bits, h.size), offsets.astype("<u8").tobytes(),
                     h.astype("<u8").tobytes(), r.astype("<u4").tobytes()))
    return body + struct.pack("<I", zlib.crc32(body))


def _offsets(sorted_hashes: npt.NDArray[np.uint64], bits: int) -> npt.NDArray[np.uint64]:
    buckets = (sorted_hashes >> np.uint64(64 - bits)) if bits else np.zeros(
        sorted_hashes.size, dtype=np.uint64)
    edges = np.arange((1 << bits) + 1, dtype=np.uint64)
    return np.searchsorted(buckets, edges, side="left").astype(np.uint64)


def decode_header(head: bytes, file_size: int, path: str | None = None) -> FingerprintHeader:
    """The header of a fingerprint file from its first bytes (at least
    ``header_size(bits)``); every field is checked against ``file_size`` (a
    :class:`ContentError` naming ``path`` otherwise)."""
    if len(head) < _HEAD.size:
        raise ContentError("fingerprint file too short", path=path)
    magic, bits, count = _HEAD.unpack_from(head, 0)
    if magic != MAGIC:
        raise ContentError("not a fingerprint file (magic)", path=path)
    if bits > MAX_BUCKET_BITS:
        raise ContentError("fingerprint bucket bits", path=path, actual=bits)
    need = header_size(bits)
    if len(head) < need or file_size != need + count * 12 + 4:
        raise ContentError("fingerprint file size does not match its header", path=path,
                           expected=need + count * 12 + 4, actual=file_size)
    offsets = np.frombuffer(head, dtype="<u8", count=(1 << bits) + 1,
                            offset=_HEAD.size).astype(np.uint64)
    if int(offsets[0]) != 0 or int(offsets[-1]) != count or bool(
            np.any(offsets[1:] < offsets[:-1])):
        raise ContentError("fingerprint bucket offsets are not ascending to the count",
                           path=path)
    return FingerprintHeader(bits, count, offsets)


def check_file(data: bytes, path: str | None = None) -> FingerprintHeader:
    """Check a whole fingerprint file (header, CRC, bucket order); its header."""
    header = decode_header(data, len(data), path)
    stored = struct.unpack_from("<I", data, len(data) - 4)[0]
    got = zlib.crc32(data[:-4])
    if stored != got:
        raise ChecksumError("fingerprint file checksum mismatch", expected=stored, actual=got,
                            path=path)
    return header


def bucket_entries(header: FingerprintHeader, bucket: int, hashes: bytes, rows: bytes,
                   path: str | None = None, last: int | None = None
                   ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint32]]:
    """The hashes and rows of bucket ``bucket`` (to bucket ``last``, inclusive, when given)
    from the bytes of their two ranges, checked to belong each to its bucket (by the
    header's offsets) and to ascend strictly."""
    last = bucket if last is None else last
    h = np.frombuffer(hashes, dtype="<u8").astype(np.uint64)
    r = np.frombuffer(rows, dtype="<u4").astype(np.uint32)
    if h.size != r.size:
        raise ContentError("fingerprint bucket lengths differ", path=path)
    if h.size:
        if header.bits:
            sizes = np.diff(header.offsets[bucket:last + 2].astype(np.int64)).astype(np.int64)
            if int(sizes.sum()) != h.size:
                raise ContentError("fingerprint bucket lengths differ", path=path)
            want = np.repeat(np.arange(bucket, last + 1, dtype=np.uint64), sizes)
            wrong = bool(np.any((h >> np.uint64(64 - header.bits)) != want))
        else:
            wrong = False
        if wrong or bool(np.any(h[1:] <= h[:-1])):
            raise ContentError("fingerprint bucket is not sorted or holds other buckets' "
                               "hashes", path=path, actual=bucket)
    return h, r


#: reads ``length`` bytes at ``offset`` of one file
ReadRange = Callable[[int, int], bytes]
#: bytes read at once while checking a file's CRC
_CHUNK = 1 << 20


@dataclass(frozen=True)
class FingerprintFile:
    """One task's fingerprint file as the merge sees it: a name for errors, its size, and a
    ranged reader."""

    name: str
    size: int
    read: ReadRange


@dataclass(frozen=True)
class SharedKeys:
    """Entries whose hash is in more than one file: per entry its hash, the index of its file
    in the merge's list and its row there, ordered by hash then file."""

    hashes: npt.NDArray[np.uint64]
    files: npt.NDArray[np.int64]
    rows: npt.NDArray[np.uint32]


def open_file(f: FingerprintFile) -> FingerprintHeader:
    """The checked header of ``f``, after its CRC is checked over the whole file in chunks
    (memory: one chunk)."""
    if f.size < _HEAD.size + 4:
        raise ContentError("fingerprint file too short", path=f.name, actual=f.size)
    bits = _HEAD.unpack(f.read(0, _HEAD.size))[1]
    if bits > MAX_BUCKET_BITS:
        raise ContentError("fingerprint bucket bits", path=f.name, actual=bits)
    header = decode_header(f.read(0, min(header_size(bits), f.size)), f.size, f.name)
    crc = 0
    for at in range(0, f.size - 4, _CHUNK):
        crc = zlib.crc32(f.read(at, min(_CHUNK, f.size - 4 - at)), crc)
    stored = struct.unpack("<I", f.read(f.size - 4, 4))[0]
    if stored != crc:
        raise ChecksumError("fingerprint file checksum mismatch", expected=stored, actual=crc,
                            path=f.name)
    return header


#: the merge reads runs of consecutive buckets of about this many entries in all files
#: (at least one bucket): 768 KiB of hashes and rows, and one pass of numpy per run rather
#: than per bucket (1,024 buckets of a few entries each cost more in Python than in I/O)
RUN_ENTRIES = 1 << 16


def _runs(headers: Sequence[FingerprintHeader], buckets: int) -> list[tuple[int, int]]:
    """(first, last) bucket of each run: consecutive buckets, cut where the entries of all
    files together pass another ``RUN_ENTRIES``."""
    total = np.zeros(buckets + 1, dtype=np.int64)
    for h in headers:
        total += h.offsets.astype(np.int64)
    marks = np.arange(RUN_ENTRIES, int(total[-1]), RUN_ENTRIES, dtype=np.int64)
    # the bucket holding each mark ends a run
    ends = np.unique(np.searchsorted(total[1:], marks, side="left"))
    starts = np.concatenate([[0], ends + 1])
    lasts = np.concatenate([ends, [buckets - 1]])
    return [(int(a), int(b)) for a, b in zip(starts, lasts, strict=True) if a <= b]


def find_shared(files: Sequence[FingerprintFile]) -> SharedKeys:
    """The entries whose hash more than one of ``files`` holds, merged a run of buckets at
    a time (memory: about ``RUN_ENTRIES`` entries, or one bucket of every file when a bucket
    holds more). The files' bucket bits must agree."""
    headers = [open_file(f) for f in files]
    bits = {h.bits for h in headers}
    if len(bits) > 1:
        raise ContentError("fingerprint files of one write differ in bucket bits",
                           actual=sorted(bits))
    out_h: list[npt.NDArray[np.uint64]] = []
    out_f: list[npt.NDArray[np.int64]] = []
    out_r: list[npt.NDArray[np.uint32]] = []
    if len(files) < 2:
        return _shared(out_h, out_f, out_r)
    for first, last in _runs(headers, 1 << bits.pop()):
        parts_h, parts_f, parts_r = [], [], []
        for i, (f, h) in enumerate(zip(files, headers, strict=True)):
            ho, hn = h.hash_range(first, last)
            if not hn:
                continue
            ro, rn = h.row_range(first, last)
            bh, br = bucket_entries(h, first, f.read(ho, hn), f.read(ro, rn), f.name, last)
            parts_h.append(bh)
            parts_r.append(br)
            parts_f.append(np.full(bh.size, i, dtype=np.int64))
        if len(parts_h) < 2:
            continue
        hh = np.concatenate(parts_h)
        ff = np.concatenate(parts_f)
        rr = np.concatenate(parts_r)
        order = np.lexsort((ff, hh))
        hh, ff, rr = hh[order], ff[order], rr[order]
        same = hh[1:] == hh[:-1]
        keep = np.zeros(hh.size, dtype=bool)
        keep[1:] |= same
        keep[:-1] |= same
        if keep.any():
            out_h.append(hh[keep])
            out_f.append(ff[keep])
            out_r.append(rr[keep])
    return _shared(out_h, out_f, out_r)


def _shared(out_h: list[npt.NDArray[np.uint64]], out_f: list[npt.NDArray[np.int64]],
            out_r: list[npt.NDArray[np.uint32]]) -> SharedKeys:
    if not out_h:
        return SharedKeys(np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.uint32))
    return SharedKeys(np.concatenate(out_h), np.concatenate(out_f), np.concatenate(out_r))


__all__ = ["DEFAULT_BUCKET_BITS", "MAGIC", "MAX_BUCKET_BITS", "RUN_ENTRIES", "FingerprintFile",
           "FingerprintHeader", "ReadRange", "SharedKeys", "bucket_entries", "check_file",
           "decode_header", "encode_fingerprints", "find_shared", "header_size", "open_file"]
