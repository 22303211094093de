"""Which blocks of a file slice's logs count: the ONE decision shared by the merged snapshot
(``morlog.readers.merge``) and the key lookup (``morlog.readers.probe`` /
``morlog.readers.lookup``), so that both see the same valid blocks of a damaged or rolled-back
log (spec §7, issue 16).

CORRUPT blocks (corrupt-block recovery of ``morlog.readers.logfile``) are skipped; a ROLLBACK
command block removes every earlier block of its target instant; blocks after the snapshot
instant are skipped, and for table version < 8 so are blocks of instants that are not
completed on the timeline. Log-compacted blocks (``COMPACTED_BLOCK_TIMES``) replace the blocks
of the instants they list (chains followed), at the position of the newest instant they
replace.
"""

from __future__ import annotations

from typing import Protocol

from morlog.logformat.constants import BlockType, CommandType, HeaderKey

from .logfile import LogBlock
from .timeline import Timeline


class BlockRules(Protocol):
    """The parts of a merge spec the block rules read."""

    table_version: int
    as_of: str | None


def effective_blocks(blocks: list[LogBlock], timeline: Timeline | None, spec: BlockRules
                     ) -> list[LogBlock]:
    """The data and delete blocks a reader applies, in the order it applies them."""
    kept: list[LogBlock] = []
    for b in blocks:
        if b.is_corrupt:
            continue
        instant = b.instant or ""
        if b.block_type == BlockType.COMMAND:
            if b.command_type == CommandType.ROLLBACK:
                target = b.target_instant
                kept = [k for k in kept if k.instant != target]
            continue
        if b.block_type not in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA,
                                BlockType.DELETE, BlockType.HFILE_DATA):
            continue
        if spec.as_of is not None and instant > spec.as_of:
            continue
        if spec.table_version < 8 and timeline is not None and not timeline.is_committed(
                instant, spec.as_of):
            continue
        kept.append(b)
    return _apply_log_compaction(kept)


def _apply_log_compaction(blocks: list[LogBlock]) -> list[LogBlock]:
    compacted: dict[str, str] = {}  # instant -> the compacted block's instant replacing it
    for b in blocks:
        times = b.header.get(HeaderKey.COMPACTED_BLOCK_TIMES)
        if times:
            for t in times.split(","):
                compacted[t.strip()] = b.instant or ""
    if not compacted:
        return blocks

    def final(instant: str) -> str:
        seen = set()
        while instant in compacted and instant not in seen:
            seen.add(instant)
            instant = compacted[instant]
        return instant

    by_instant: dict[str, list[LogBlock]] = {}
    order: list[str] = []
    for b in blocks:
        i = b.instant or ""
        if i not in by_instant:
            by_instant[i] = []
            order.append(i)
        by_instant[i].append(b)
    out: list[LogBlock] = []
    placed: set[str] = set()
    # newest to oldest: a replaced instant's slot goes to its final compacted block, once,
    # at the position of the newest instant it replaces
    slots: list[str] = []
    for i in reversed(order):
        target = final(i) if i in compacted else (None if i in compacted.values() else i)
        if target is None:
            continue  # a compacted block is only emitted through the instants it replaces
        if target in placed:
            continue
        placed.add(target)
        slots.append(target)
    for t in reversed(slots):
        out.extend(by_instant.get(t, []))
    return out




def log_valid_blocks(blocks: list[LogBlock]) -> list[LogBlock]:
    """The blocks the log itself leaves valid (no timeline: corrupt-block recovery, rollback
    command blocks and log compaction), as :func:`effective_blocks` decides them."""
    return effective_blocks(blocks, None, _LogOnly())


class _LogOnly:
    table_version = 8
    as_of: str | None = None


__all__ = ["BlockRules", "effective_blocks", "log_valid_blocks"]
