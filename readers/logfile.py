"""Reading a log file (``morlog.readers.logfile``): lazy block iteration, both directions,
with corrupt-block recovery.

The scan follows Hudi's Java reader (spec §6): a block whose framing does not add up (length
past the end of the file, reverse pointer mismatch, no magic right after it, inconsistent
inner lengths) becomes a CORRUPT block that covers everything up to the next ``#HUDI#``, and
the scan resumes there. A file that does not start with the magic, an unknown block type or an
unsupported log format version raise the library's typed errors, as Java throws on them.

An unsupported version is not corruption (``UnsupportedVersionError`` is not a
``FormatError``): it stops the scan instead of becoming a CORRUPT block.

Content bytes are read only when asked for (:meth:`LogBlock.content`); other parts of a block
(its index trailer, say) by ranged reads of :attr:`LogBlock.source`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from morlog.logformat import blocks as _blocks
from morlog.logformat.block_checksum import verify_block
from morlog.logformat.constants import (
    BLOCK_PREFIX_LEN,
    MAGIC,
    MAGIC_LEN,
    MAX_BLOCK_LENGTH,
    MIN_BLOCK_LENGTH_V1,
    TRAILER_LEN,
    BlockType,
    CommandType,
    HeaderKey,
)
from morlog.logformat.delete_content import (
    DeleteColumns,
    DeleteRecord,
    decode_delete_columns,
    decode_delete_content,
)
from morlog.logformat.errors import (
    FormatError,
    InvalidMagicError,
    MorlogError,
    UnknownBlockTypeError,
    UnknownHeaderKeyError,
    UnsupportedVersionError,
    UsageError,
)
from morlog.logformat.framing import BlockFrame, BlockHead, MetadataMap, decode_block_head, read_i64
from morlog.logformat.parquet_content import parquet_file

from .storage import RangedSource, open_source

#: first read at a block: enough for the framing of small blocks and the header of large ones
HEAD_WINDOW = 64 * 1024
#: corrupt-block recovery scans for the next magic in windows of this size (as Java does)
SCAN_WINDOW = 1024 * 1024

#: blocks whose records a CHECKSUM may cover (indexed data blocks, spec/index.md §4.12)
_CHECKED = (BlockType.AVRO_DATA, BlockType.PARQUET_DATA)

#: errors that stop a scan instead of becoming a CORRUPT block (Java throws on them too)
_STOPS_SCAN = (UnknownBlockTypeError, UnsupportedVersionError, UnknownHeaderKeyError)


@dataclass
class LogBlock:
    """One block of a log file. Framing is decoded; content is read on demand."""

    offset: int
    size: int
    block_type: BlockType
    header: MetadataMap
    footer: MetadataMap
    content_offset: int
    content_length: int
    format_version: int = 1
    #: why a CORRUPT block is corrupt
    reason: str | None = None
    _source: RangedSource | None = field(default=None, repr=False, compare=False)
    #: the whole block, when the scan's first read held it already (small blocks)
    _raw: bytes | None = field(default=None, repr=False, compare=False)
    #: content bytes :meth:`verify` read and checked, for the next decode to take
    _checked: bytes | None = field(default=None, repr=False, compare=False)
    #: a Parquet block's content opened by :meth:`verify` (footer parsed once), with
    #: ``_checked``
    _checked_pf: Any = field(default=None, repr=False, compare=False)

    @property
    def is_corrupt(self) -> bool:
        return self.block_type == BlockType.CORRUPT

    @property
    def path(self) -> str | None:
        return self._source.name if self._source is not None else None

    @property
    def source(self) -> RangedSource:
        """The file the block was read from, for ranged reads of its parts (its index
        trailer, say) without reading the whole block."""
        if self._source is None:
            raise UsageError("this block was not read from a file")
        return self._source

    @property
    def instant(self) -> str | None:
        return self.header.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant(self) -> str | None:
        return self.header.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def schema(self) -> str | None:
        return self.header.get(HeaderKey.SCHEMA)

    @property
    def command_type(self) -> CommandType | None:
        if self.block_type != BlockType.COMMAND:
            return None
        return _blocks.command_type(self.header)

    def content(self) -> bytes:
        """The block's content bytes (one ranged read, none for a small block whose bytes
        the scan read already)."""
        if self.content_length == 0:
            return b""
        if self._raw is not None:
            start = self.content_offset - self.offset
            return self._raw[start : start + self.content_length]
        if self._source is None:
            return b""
        return self._source.read(self.content_offset, self.content_length)

    def verify(self) -> bool:
        """Check the block's header and records against the CHECKSUM its index trailer
        carries (spec/index.md §4.12): True when it matches, False when the block carries
        none (not a data block, or a block without that section: unverified). A mismatch
        raises ``ChecksumError``; readers then treat the block as corrupt. The bytes read
        are kept for the next decode of the block (one read, not two)."""
        if self.block_type not in _CHECKED or self.content_length == 0:
            return False
        prefix = BLOCK_PREFIX_LEN
        head_len = self.content_offset - self.offset - prefix
        if self._raw is not None:
            head = self._raw[prefix : prefix + head_len]
            start = self.content_offset - self.offset
            content = self._raw[start : start + self.content_length]
        elif self._source is not None:
            # two reads, not one sliced in two: slicing the content out of the block's
            # bytes copied it whole
            head = self._source.read(self.offset + prefix, head_len)
            content = self._source.read(self.content_offset, self.content_length)
        else:
            return False
        pf = None
        if self.block_type == BlockType.PARQUET_DATA:
            try:
                pf = parquet_file(content, **self._where())
            except MorlogError:
                pf = None  # verify_block and the decode say what is wrong
        self._checked_pf = None
        ok = verify_block(self.block_type, head, content, base=self.content_offset,
                          path=self.path, parquet=pf)
        self._checked, self._checked_pf = content, pf
        return ok

    def release(self) -> None:
        """Drop the bytes :meth:`verify` kept (the block will not be decoded)."""
        self._checked = self._checked_pf = None

    def verified_content(self) -> bytes:
        """:meth:`content`, checked against the block's CHECKSUM when it carries one
        (``ChecksumError`` on a mismatch): what every decode of the records reads."""
        return self._take_verified()[0]

    def _take_verified(self) -> tuple[bytes, Any]:
        """:meth:`verified_content` and the Parquet file :meth:`verify` opened on it (None
        when it opened none)."""
        if self.block_type not in _CHECKED:
            return self.content(), None
        if self._checked is None:
            self.verify()
        content, pf = self._checked, self._checked_pf
        self._checked = self._checked_pf = None
        if content is None:
            return self.content(), None
        return content, pf

    def raw(self) -> bytes:
        """The whole block as on disk (for CORRUPT blocks: the bytes it covers)."""
        return self.source.read(self.offset, self.size)

    def frame(self) -> BlockFrame:
        return BlockFrame(int(self.block_type), self.header, self.content(), self.footer,
                          self.format_version)

    # --- typed content ------------------------------------------------------------------

    def _where(self) -> dict[str, Any]:
        return {"base": self.content_offset, "path": self.path}

    def record_count(self) -> int | None:
        """Records (data, HFile included) or keys (delete); None for CORRUPT blocks."""
        if self.is_corrupt:
            return None
        return _blocks.record_count(self.block_type, self.verified_content(), **self._where())

    def keys(self, key_field: str = _blocks.RECORD_KEY_FIELD) -> list[str | None]:
        return _blocks.block_keys(self.block_type, self.header, self.verified_content(),
                                  key_field=key_field, **self._where())

    def records(self) -> list[dict[str, Any]]:
        """Decoded records of an Avro, CDC or HFile data block, as dicts."""
        return _blocks.decode_block_records(self.block_type, self.header, self.verified_content(),
                                            **self._where())

    def to_arrow(self) -> pa.Table:
        """Records of an Avro, CDC or Parquet data block as an Arrow table."""
        content, pf = self._take_verified()
        return _blocks.decode_data_table(self.block_type, self.header, content,
                                         parquet=pf, **self._where())

    def delete_records(self) -> tuple[DeleteRecord, ...]:
        return decode_delete_content(self.content(), **self._where()).records

    def delete_columns(self) -> DeleteColumns:
        """The records of a delete block column-wise (no Python object per record)."""
        return decode_delete_columns(self.content(), **self._where())


def _head_to_block(head: BlockHead, source: RangedSource, raw: bytes | None = None) -> LogBlock:
    """The block of a decoded head; ``raw``: the whole block when the caller holds it already
    (then ``content()`` needs no second read)."""
    return LogBlock(head.offset, head.size, BlockType(head.block_type), head.header,
                    head.footer, head.content_offset, head.content_length, head.format_version,
                    None, source, raw)


class LogFileReader:
    """Blocks of one log file, forwards (with recovery) or backwards (reverse pointers).

    The log file of the second upsert of the :meth:`MorTable.create
    <morlog.writers.client.MorTable.create>` example:

    >>> from pathlib import Path
    >>> log = next(Path("rides", "sf").glob(".*.log.*"))
    >>> [(b.block_type.name, b.header.as_dict()["INSTANT_TIME"] == b.instant)
    ...  for b in LogFileReader(log).blocks()]
    [('AVRO_DATA', True)]
    """

    def __init__(self, source: RangedSource | str | os.PathLike[str], *,
                 strict: bool = False) -> None:
        self.source = source if isinstance(source, RangedSource) else open_source(source)
        self.strict = strict
        #: after a scan to the end of the file: (offset, length) of trailing bytes too short
        #: to hold a block's magic (1-5 bytes: a block's write cut right after it started).
        #: The scan ends there, as Java's reader does (end of file while reading the magic);
        #: ``morlog verify`` reports them as a torn tail.
        self.torn_tail: tuple[int, int] | None = None

    @property
    def path(self) -> str:
        return self.source.name

    def __enter__(self) -> LogFileReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.source.close()

    def __iter__(self) -> Iterator[LogBlock]:
        return self.blocks()

    # --- forward ------------------------------------------------------------------------

    def blocks(self, start: int = 0, limit: int | None = None) -> Iterator[LogBlock]:
        """Blocks from ``start`` (a block's magic) up to ``limit`` (default: end of file)."""
        end = self.source.size if limit is None else limit
        pos = start
        while end - pos >= MAGIC_LEN:
            first = self.source.read(pos, min(HEAD_WINDOW, end - pos))
            if first[:MAGIC_LEN] != MAGIC:
                raise InvalidMagicError("invalid block magic", path=self.path, offset=pos,
                                        expected=MAGIC, actual=first[:MAGIC_LEN])
            try:
                block = self._read_block(pos, end, first)
            except _STOPS_SCAN:
                raise
            except FormatError as exc:
                nxt = self._next_magic(pos + MAGIC_LEN, end)
                yield LogBlock(pos, nxt - pos, BlockType.CORRUPT, MetadataMap(),
                               MetadataMap(kind="footer"), pos + BLOCK_PREFIX_LEN, 0, 1,
                               exc.message, self.source)
                pos = nxt
                continue
            yield block
            pos = block.offset + block.size
        if limit is None and pos < end:
            self.torn_tail = (pos, end - pos)

    def _read_block(self, pos: int, end: int, first: bytes) -> LogBlock:
        """Validate and decode the block at ``pos``; FormatError when its framing is bad."""
        path = self.path
        if len(first) < BLOCK_PREFIX_LEN:
            raise FormatError("block length cut off", path=path, offset=pos + MAGIC_LEN)
        block_length = read_i64(first, MAGIC_LEN)
        available = end - pos - BLOCK_PREFIX_LEN
        if not MIN_BLOCK_LENGTH_V1 <= block_length <= min(available, MAX_BLOCK_LENGTH):
            raise FormatError(
                f"block length {block_length} out of range "
                f"{MIN_BLOCK_LENGTH_V1}..{min(available, MAX_BLOCK_LENGTH)}", path=path,
                offset=pos + MAGIC_LEN)
        total = BLOCK_PREFIX_LEN + block_length
        block_end = pos + total
        # Java's check: reverse pointer == blockLength + 6, then the magic or end of file
        after = min(end - block_end, MAGIC_LEN)
        if len(first) >= total + after:
            tail = first[total - TRAILER_LEN : total + after]
        else:
            tail = self.source.read(block_end - TRAILER_LEN, TRAILER_LEN + after)
        reverse = read_i64(tail, 0)
        if reverse != block_length + MAGIC_LEN:
            raise FormatError(f"reverse pointer {reverse} does not match block length "
                              f"{block_length}", path=path, offset=block_end - TRAILER_LEN)
        if after == MAGIC_LEN and tail[TRAILER_LEN:] != MAGIC:
            raise FormatError("no block magic after the block", path=path, offset=block_end)
        raw = first[:total] if len(first) >= total else None
        return _head_to_block(self._decode_head(pos, total, first), self.source, raw)

    def _decode_head(self, pos: int, total: int, first: bytes) -> BlockHead:
        kw: dict[str, Any] = {"base": pos, "path": self.path, "strict": self.strict}
        if len(first) >= total:
            return decode_block_head(memoryview(first)[:total], **kw)
        tail_len = min(total, HEAD_WINDOW)
        footer_buf = self.source.read(pos + total - tail_len, tail_len)
        try:
            return decode_block_head(first, footer_buf=footer_buf, **kw)
        except _STOPS_SCAN:
            raise
        except Exception:
            # a header or footer larger than the windows: read the block whole (its size
            # was checked against the file size already)
            return decode_block_head(self.source.read(pos, total), **kw)

    def _next_magic(self, start: int, end: int) -> int:
        """Offset of the next magic at or after ``start``, or ``end``."""
        pos = start
        while pos < end:
            n = min(SCAN_WINDOW, end - pos)
            window = self.source.read(pos, n)
            i = window.find(MAGIC)
            if i >= 0:
                return pos + i
            if pos + n >= end:
                break
            pos += n - (MAGIC_LEN - 1)  # windows overlap so a split magic is found
        return end

    # --- backward -----------------------------------------------------------------------

    def reversed_blocks(self) -> Iterator[LogBlock]:
        """Blocks from the last to the first, following reverse pointers.

        When a reverse pointer does not lead to a valid block (a torn tail, trailing junk,
        garbage between blocks), the file is scanned forwards instead and the blocks before
        that point are yielded in reverse, so both directions agree.
        """
        end = self.source.size
        while end > 0:
            block = self.block_ending_at(end)
            if block is None:
                yield from reversed([b for b in self.blocks() if b.offset < end])
                return
            yield block
            end = block.offset

    def block_ending_at(self, end: int) -> LogBlock | None:
        """The valid block that ends exactly at ``end``, if the reverse pointer finds one
        and the bytes after ``end`` are a magic or the end of the file."""
        if end < BLOCK_PREFIX_LEN + MIN_BLOCK_LENGTH_V1:
            return None
        reverse = read_i64(self.source.read(end - TRAILER_LEN, TRAILER_LEN), 0)
        start = end - TRAILER_LEN - reverse
        if reverse < MIN_BLOCK_LENGTH_V1 or start < 0:
            return None
        first = self.source.read(start, min(HEAD_WINDOW, end - start))
        if first[:MAGIC_LEN] != MAGIC:
            return None
        try:
            block = self._read_block(start, self.source.size, first)
        except _STOPS_SCAN:
            raise
        except FormatError:
            return None
        return block if block.offset + block.size == end else None
