"""The cumulative index of a file slice: the chain tail -> checkpoint -> directory (spec/index.md
§6, §7.2), read in one place for every reader and writer of it.

The newest data block of a slice's logs stores the slice's cumulative index: a *full
checkpoint* (filter over every key, directory of every data block) or a *delta* (filter and
directory of the blocks since the checkpoint, plus a reference to the checkpoint).
:func:`read_slice_index` follows that chain: the newest log file's tail (one ranged read),
then, for a delta, the checkpoint it points at (a second read), and returns a
:class:`SliceIndex` holding both cumulatives and both directories.

Used by ``morlog.readers.probe.SliceProbe`` (which keys may be in which block) and by
``morlog.writers.core.indexed`` (rebuilding a writer's state from two reads instead of a scan).
:func:`read_checkpoint` and :func:`checkpoint_location` are the two directions of a
checkpoint reference: following one, and making one for a block that holds a checkpoint.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from morlog.logformat.errors import ChecksumError, ContentError
from morlog.logformat.index_trailer import (
    BlockRef,
    Carrier,
    CheckpointRef,
    Cumulative,
    CumulativeKind,
    Directory,
    Section,
)

from .index import StoredIndex, TailIndex, find_tail_index, has_keyed_block, read_parquet_index
from .storage import RangedSource

#: opens a log file of the slice by name (callers cache: a name is opened more than once)
SourceOf = Callable[[str], RangedSource]


@dataclass(frozen=True)
class SliceIndex:
    """A slice's stored cumulative index, as its newest data block gives it."""

    #: the log file holding the newest data block, and that block with its stored index
    tail_file: str
    tail: TailIndex
    #: the tail block's cumulative (FULL or DELTA) and directory
    cumulative: Cumulative
    directory: Directory
    #: the full checkpoint a DELTA points at, and its directory (None when the tail is FULL)
    checkpoint: Cumulative | None = None
    checkpoint_directory: Directory | None = None

    @property
    def full(self) -> Cumulative:
        """The newest full checkpoint: the tail's own cumulative or the one it points at."""
        return self.checkpoint if self.checkpoint is not None else self.cumulative

    @property
    def directories(self) -> list[Directory]:
        """The directories that together list every data block covered, oldest first."""
        if self.checkpoint_directory is None:
            return [self.directory]
        return [self.checkpoint_directory, self.directory]

    def block_refs(self) -> list[tuple[str, BlockRef]]:
        """Every data block the index covers, oldest first, with its log file's name."""
        return [(d.files[r.file], r) for d in self.directories for r in d.blocks]

    @property
    def files(self) -> set[str]:
        """The log files named by the directories."""
        return {f for d in self.directories for f in d.files}

    @property
    def checkpoint_at(self) -> int:
        """Position in :meth:`block_refs` of the block holding the full checkpoint."""
        return len(self.directories[0].blocks) - 1

    def checkpoint_ref(self) -> CheckpointRef | None:
        """Where the full checkpoint lies, as a later delta points at it (its file ordinal
        relative to the tail's directory for a delta, 0 for a full tail: writers re-index
        by name); None when a full tail's sections are not laid out as one region."""
        if self.cumulative.kind == CumulativeKind.DELTA:
            return self.cumulative.checkpoint
        return checkpoint_location(self.tail.index, self.tail.offset, self.tail.size)


def read_slice_index(log_files: Sequence[str], source: SourceOf) -> SliceIndex | None:
    """Follow the chain tail -> checkpoint -> directory of a slice's logs (``log_files`` in
    Hudi's order, newest last; ``source`` opens one by name).

    Files holding only command or delete blocks are skipped (rollbacks and deletes never
    narrow the cumulative index). None when the newest data block carries no stored index
    or its index lacks the cumulative sections: the caller then takes the compatibility
    path. A checkpoint that cannot be read raises the library's errors."""
    located = _newest_stored_index(log_files, source)
    if located is None:
        return None
    name, tail = located
    cum, directory = tail.index.cumulative(), tail.index.directory()
    if cum is None or directory is None:
        return None
    if not directory_matches_tail(directory, name, tail):
        return None  # the file no longer is as indexed: the scan decides (compat path)
    if cum.kind != CumulativeKind.DELTA:
        return SliceIndex(name, tail, cum, directory)
    full, cp_dir = read_checkpoint(source, cum, directory)
    return SliceIndex(name, tail, cum, directory, full, cp_dir)


def directory_matches_tail(directory: Directory, name: str, tail: TailIndex) -> bool:
    """Whether the stored directory still describes the tail file as it is: its newest entry
    in that file is the tail block, at the offset and size where the tail was found, and the
    earlier entries of that file lie before it without overlapping.

    Bytes inserted into or cut from the file after it was indexed (a damaged log) shift the
    tail block away from the offset the directory recorded; the directory's offsets are then
    stale, and keys of blocks the forward scan still reads would be looked up at the wrong
    place. The caller then recomputes from a scan, as the merged snapshot reads the file."""
    mine = [r for r in directory.blocks
            if 0 <= r.file < len(directory.files) and directory.files[r.file] == name]
    if not mine:
        return False
    last = mine[-1]
    if (last.block_offset, last.block_size) != (tail.offset, tail.size):
        return False
    end = 0
    for r in mine[:-1]:
        if r.block_offset < end or r.block_offset + r.block_size > tail.offset:
            return False
        end = r.block_offset + r.block_size
    return True


def _newest_stored_index(log_files: Sequence[str], source: SourceOf
                         ) -> tuple[str, TailIndex] | None:
    """The newest data block's stored index and its file, skipping files of command and
    delete blocks; None when the newest data block has none."""
    for name in reversed(log_files):
        src = source(name)
        tail = find_tail_index(src)
        if tail is not None:
            return name, tail
        if has_keyed_block(src):
            return None
    return None


def read_checkpoint(source: SourceOf, cum: Cumulative, directory: Directory
                    ) -> tuple[Cumulative, Directory]:
    """The full checkpoint a delta cumulative points at: its cumulative and directory
    (``source`` opens a log file of the slice by name). One ranged read for the AVRO carrier,
    CRC-checked; the checkpoint block's trailer for the PARQUET carrier."""
    cp = cum.checkpoint
    if cp is None:
        raise ContentError("a delta cumulative without a checkpoint reference")
    if not 0 <= cp.file < len(directory.files):
        raise ContentError("checkpoint reference names an unknown file",
                           expected=f"< {len(directory.files)}", actual=cp.file)
    src = source(directory.files[cp.file])
    if cp.carrier == Carrier.AVRO:
        region = src.read(cp.region_offset, cp.region_length)
        crc = zlib.crc32(region)
        if crc != cp.region_crc32:
            raise ChecksumError("checkpoint region checksum mismatch", path=src.name,
                                offset=cp.region_offset, expected=cp.region_crc32, actual=crc)
        n = cp.cumulative_length
        full = Cumulative.decode(region[:n], base=cp.region_offset, path=src.name)
        d = Directory.decode(region[n:], base=cp.region_offset + n, path=src.name)
    else:
        stored = read_parquet_index(src, cp.region_offset + cp.region_length - 12,
                                    cp.region_offset)
        if stored is None:
            raise ContentError("checkpoint block has no index", path=src.name,
                               offset=cp.region_offset)
        c, d2 = stored.cumulative(), stored.directory()
        if c is None or d2 is None:
            raise ContentError("checkpoint block lacks cumulative sections", path=src.name,
                               offset=cp.region_offset)
        full, d = c, d2
    if full.kind != CumulativeKind.FULL:
        raise ContentError("checkpoint reference does not lead to a full checkpoint",
                           path=src.name, offset=cp.region_offset)
    return full, d


def checkpoint_location(stored: StoredIndex, block_offset: int, block_size: int
                        ) -> CheckpointRef | None:
    """Where a block's full checkpoint lies, as a later delta points at it (file ordinal 0:
    writers re-index by name); None when the block holds no full checkpoint, or its
    CUMULATIVE and DIRECTORY sections are not laid out as one region (AVRO carrier: reads
    that region once for its CRC)."""
    cum = stored.cumulative()
    if cum is None or cum.kind != CumulativeKind.FULL:
        return None
    if stored.carrier == Carrier.PARQUET:
        return CheckpointRef(0, Carrier.PARQUET, block_offset, block_size, 0)
    if stored.carrier != Carrier.AVRO or stored.source is None:
        return None
    cr = stored.section_range(Section.CUMULATIVE)
    dr = stored.section_range(Section.DIRECTORY)
    if cr is None or dr is None or cr[0] + cr[1] != dr[0]:
        return None  # not laid out as one region
    length = dr[0] + dr[1] - cr[0]
    raw = stored.source.read(cr[0], length)
    return CheckpointRef(0, Carrier.AVRO, cr[0], length, zlib.crc32(raw), cr[1])


__all__ = ["SliceIndex", "SourceOf", "checkpoint_location", "directory_matches_tail",
           "read_checkpoint", "read_slice_index"]
