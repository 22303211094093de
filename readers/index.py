"""Reading the index of data blocks (``morlog.readers.index``): stored (index trailer) or
recomputed (``morlog.compat``).

- :func:`read_stored_index` finds a block's index trailer (after the Avro records, or in the
  Parquet footer) and returns a lazy :class:`StoredIndex`: sections are fetched by byte range
  only when asked for (Avro carrier).
- :func:`block_index` gives any data or delete block's per-block index, stored or recomputed.
- :func:`find_tail_index` walks back from the end of a log file, inside one prefetched tail
  window, to the newest data block, and returns its stored index (None when the newest data
  block carries none).

The slice-level chain (tail -> checkpoint -> directory) is read by
``morlog.readers.slice_index``; the ``morlog index`` report is computed by
``morlog.readers.index_report``.
"""

from __future__ import annotations

import base64
import binascii
import struct
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from morlog.compat.recompute import recompute_block_keys
from morlog.logformat.blocks import RECORD_KEY_FIELD
from morlog.logformat.column_stats_section import ColumnStatsSection
from morlog.logformat.constants import MAGIC_LEN, TRAILER_LEN, BlockType
from morlog.logformat.errors import (
    UNUSABLE,
    ContentError,
    MorlogError,
)
from morlog.logformat.errors import UnusableIndexWarning as UnusableIndexWarning  # re-export
from morlog.logformat.index_trailer import (
    PARQUET_KEY,
    TAIL_LEN,
    TRAILER_MAGIC,
    Carrier,
    Cumulative,
    Directory,
    KeyRange,
    Section,
    TrailerLayout,
    decode_bloom,
    decode_keys,
    has_trailer,
    parse_layout,
    section_bytes,
)
from morlog.logformat.indexed_block import BlockKeys
from morlog.logformat.parquet_content import PARQUET_MAGIC
from morlog.logformat.sbbf import SplitBlockBloom
from morlog.logformat.virtual_keys import KeyField

from .cache import CachedSource
from .logfile import LogBlock, LogFileReader
from .storage import RangedSource

T = TypeVar("T")

#: bytes fetched from the end of a log file by a probe's first read
TAIL_WINDOW = 64 * 1024
_FOOTER_AND_POINTER = 4 + TRAILER_LEN  # empty footer map + reverse pointer


@dataclass
class StoredIndex:
    """A block's index trailer; sections decode on demand."""

    carrier: Carrier
    layout: TrailerLayout
    source: RangedSource | None
    #: absolute offset of the trailer's first byte (AVRO carrier)
    trailer_offset: int
    #: the whole trailer (PARQUET carrier, decoded from Base64)
    data: bytes | None = None
    _cache: dict[int, Any] = field(default_factory=dict, repr=False)

    @property
    def length(self) -> int:
        return self.layout.length

    def section_range(self, sid: int) -> tuple[int, int] | None:
        """Absolute (offset, length) of a section (AVRO carrier), None when absent."""
        e = self.layout.entry(sid)
        if e is None:
            return None
        return self.trailer_offset + e.offset, e.length

    def raw(self, sid: int) -> memoryview | None:
        e = self.layout.entry(sid)
        if e is None:
            return None
        path = self.source.name if self.source is not None else None
        if self.data is not None:
            return section_bytes(self.data, 0, e, path=path)
        assert self.source is not None
        buf = self.source.read(self.trailer_offset + e.offset, e.length)
        return section_bytes(buf, -e.offset, e, base=self.trailer_offset, path=path)

    def _get(self, sid: int, decode: Callable[..., T]) -> T | None:
        if sid not in self._cache:
            raw = self.raw(sid)
            entry = self.layout.entry(sid)
            if raw is None or entry is None:
                self._cache[sid] = None
            else:
                path = self.source.name if self.source is not None else None
                self._cache[sid] = decode(raw, base=self.trailer_offset + entry.offset,
                                          path=path)
        return self._cache[sid]  # type: ignore[no-any-return]

    def keys(self) -> pa.Array | None:
        return self._get(Section.KEYS, decode_keys)

    def bloom(self) -> SplitBlockBloom | None:
        return self._get(Section.BLOOM, decode_bloom)

    def key_range(self) -> KeyRange | None:
        return self._get(Section.RANGE, KeyRange.decode)

    def cumulative(self) -> Cumulative | None:
        return self._get(Section.CUMULATIVE, Cumulative.decode)

    def directory(self) -> Directory | None:
        return self._get(Section.DIRECTORY, Directory.decode)

    def column_stats(self) -> ColumnStatsSection | None:
        """The block's COLUMN_STATS section (spec/index.md §4.11), None when it has none."""
        return self._get(Section.COLUMN_STATS, ColumnStatsSection.decode)

    def section_sizes(self) -> dict[str, int]:
        names = {int(s): s.name for s in Section}
        return {names.get(e.id, f"UNKNOWN_{e.id}"): e.length for e in self.layout.sections}

    def block_keys(self) -> BlockKeys | None:
        keys, bloom, rng = self.keys(), self.bloom(), self.key_range()
        if keys is None or bloom is None or rng is None:
            return None
        return BlockKeys(keys, None, bloom, rng)

    def region(self) -> tuple[int, int, int, int, int]:
        """(offset, filter length, filter CRC, keys length, keys CRC) of the block's region
        as a DIRECTORY entry records it (AVRO carrier: one read of the three sections);
        zeros unless BLOOM, RANGE and KEYS sit back to back in that order."""
        b, r, k = (self.section_range(s) for s in (Section.BLOOM, Section.RANGE, Section.KEYS))
        if (self.carrier != Carrier.AVRO or self.source is None or b is None or r is None
                or k is None or b[0] + b[1] != r[0] or r[0] + r[1] != k[0]):
            return (0, 0, 0, 0, 0)
        raw = self.source.read(b[0], b[1] + r[1] + k[1])
        flen = b[1] + r[1]
        return (b[0], flen, zlib.crc32(raw[:flen]), k[1], zlib.crc32(raw[flen:]))


def read_stored_index(source: RangedSource, block_offset: int, block_size: int,
                      block_type: int) -> StoredIndex | None:
    """The index trailer of a well-formed block, or None when it carries none."""
    end = block_offset + block_size
    if block_type == BlockType.AVRO_DATA:
        trailer_end = end - _FOOTER_AND_POINTER
        if block_size < _FOOTER_AND_POINTER + TAIL_LEN + 22:
            return None
        if source.read(trailer_end, 4) != b"\0\0\0\0":
            return None  # a footer map with entries: not written by morlog
        tail = source.read(trailer_end - TAIL_LEN, TAIL_LEN)
        if not has_trailer(tail):
            return None
        # the section table sits right before the tail: fetch both in one go
        head = struct.unpack_from("<QI", tail, 0)
        table_len = head[1] * 24
        available = trailer_end - block_offset
        need = min(available, TAIL_LEN + table_len)
        buf = source.read(trailer_end - need, need)
        layout = parse_layout(buf, base=trailer_end - need, path=source.name,
                              available_before=available)
        return StoredIndex(Carrier.AVRO, layout, source, trailer_end - layout.length)
    if block_type == BlockType.PARQUET_DATA:
        return read_parquet_index(source, end - _FOOTER_AND_POINTER, block_offset)
    return None


def read_parquet_index(source: RangedSource, content_end: int, block_offset: int
                   ) -> StoredIndex | None:
    if content_end - block_offset < 12 + 8:
        return None
    if isinstance(source, CachedSource):  # footer and its length in one read
        block_end = content_end + _FOOTER_AND_POINTER
        lo = max(block_offset, block_end - TAIL_WINDOW)
        source.prefetch(lo, block_end - lo)
    last = source.read(content_end - 8, 8)
    if last[4:] != PARQUET_MAGIC:
        return None
    (footer_len,) = struct.unpack("<i", last[:4])
    if footer_len <= 0 or footer_len > content_end - block_offset - 12:
        raise ContentError("Parquet footer length out of range", path=source.name,
                           offset=content_end - 8, actual=footer_len)
    footer = source.read(content_end - 8 - footer_len, footer_len + 8)
    try:
        md = pq.read_metadata(pa.BufferReader(PARQUET_MAGIC + footer)).metadata or {}
    except Exception as exc:
        raise ContentError(f"Parquet footer does not decode: {exc}", path=source.name,
                           offset=content_end - 8 - footer_len) from None
    text = md.get(PARQUET_KEY)
    if text is None:
        return None
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ContentError("morlog.index is not valid Base64", path=source.name,
                           offset=content_end - 8 - footer_len) from None
    layout = parse_layout(data, path=source.name)
    if layout.length != len(data):
        raise ContentError("morlog.index has bytes before its trailer", path=source.name,
                           offset=content_end - 8 - footer_len)
    return StoredIndex(Carrier.PARQUET, layout, source, 0, data)


def block_index(block: LogBlock, *, key_field: KeyField = RECORD_KEY_FIELD, fpp: float = 0.01
                ) -> tuple[BlockKeys | None, StoredIndex | None]:
    """A data or delete block's per-block index: stored when it has a usable one, else
    recomputed from its records (a damaged or unknown stored index never hides keys)."""
    try:
        stored = read_stored_index(block.source, block.offset, block.size, block.block_type)
        keys = stored.block_keys() if stored is not None else None
    except MorlogError as exc:
        warnings.warn(f"{block.path}@{block.offset}: stored index unusable ({exc}); keys "
                      "recomputed from the records", UnusableIndexWarning, stacklevel=2)
        stored, keys = None, None
    if keys is not None:
        return keys, stored
    stored = None
    if block.block_type not in (BlockType.AVRO_DATA, BlockType.CDC_DATA,
                                BlockType.PARQUET_DATA, BlockType.DELETE):
        return None, None
    return recompute_block_keys(block.block_type, block.header, block.verified_content(),
                                key_field=key_field, fpp=fpp, base=block.content_offset,
                                path=block.path), None


@dataclass
class TailIndex:
    """The newest data block of a log file and its stored index."""

    offset: int
    size: int
    index: StoredIndex


def _index_trusted_from_end(source: RangedSource, start: int, end: int) -> StoredIndex | None:
    """The stored index of the block ``[start, end)`` judged from its end alone: an empty
    footer map, then a CRC-checked index trailer (Avro) or a Parquet footer carrying one."""
    if end - start < 64 or source.read(end - _FOOTER_AND_POINTER, 4) != b"\0\0\0\0":
        return None
    tail = source.read(end - _FOOTER_AND_POINTER - 8, 8)
    try:
        if tail == TRAILER_MAGIC:
            return read_stored_index(source, start, end - start, BlockType.AVRO_DATA)
        if tail[4:] == PARQUET_MAGIC:
            return read_stored_index(source, start, end - start, BlockType.PARQUET_DATA)
    except UNUSABLE:
        return None
    return None


def find_tail_index(source: RangedSource, window: int = TAIL_WINDOW) -> TailIndex | None:
    """Walk back from the end of the file to the newest data block; one read in the common
    case. None when the file has no valid data block at its end with a stored index.

    Blocks inside the tail window are validated as a forward scan would. The newest data
    block usually starts before the window; reading its header would cost a second read, so
    it is accepted on its end alone: the reverse pointer, an empty footer map and an index
    trailer whose section table passes its CRC-32 (a torn write cannot end like that, since
    the reverse pointer is written last)."""
    cached = source if isinstance(source, CachedSource) else CachedSource(source)
    cached.prefetch(cached.size - window, window)
    window_start = max(0, cached.size - window)
    reader = LogFileReader(cached)
    end = cached.size
    while end > MAGIC_LEN:
        if end - TRAILER_LEN >= window_start:
            reverse = struct.unpack(">q", cached.read(end - TRAILER_LEN, TRAILER_LEN))[0]
            start = end - TRAILER_LEN - reverse
            if 0 <= start < window_start:
                stored = _index_trusted_from_end(cached, start, end)
                if stored is not None:
                    return TailIndex(start, end - start, stored)
        try:
            block = reader.block_ending_at(end)
        except MorlogError:
            return None
        if block is None or block.is_corrupt:
            return None
        if block.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
            try:
                stored = read_stored_index(cached, block.offset, block.size, block.block_type)
            except UNUSABLE:
                return None
            return None if stored is None else TailIndex(block.offset, block.size, stored)
        if block.block_type in (BlockType.COMMAND, BlockType.DELETE):
            end = block.offset  # rollbacks and deletes never narrow the cumulative index
            continue
        return None
    return None


def has_keyed_block(source: RangedSource) -> bool:
    """Whether a log file holds a keyed data block (True as well when it cannot be read to
    the end: callers then take the careful path)."""
    try:
        return any(b.block_type.is_keyed for b in LogFileReader(source).reversed_blocks())
    except MorlogError:
        return True
