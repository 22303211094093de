"""Which blocks of a file slice's logs count: the decision shared by the merged snapshot
(``morlog.readers.merge``) and the key lookup (``morlog.readers.lookup`` over
``morlog.readers.probe``), so that both see the same valid blocks of a damaged, failed or
rolled-back log (issue 16).

- Framing: a block counts only if the forward scan of ``morlog.readers.logfile`` (with its
  corrupt-block recovery) yields it as a valid block. The snapshot reads that scan; the
  probe's compatibility path reads the same scan, and its stored path is used only while the
  stored directory still matches the file (``slice_index.directory_matches_tail``).
- Instants: :func:`instant_counts` (not after the snapshot instant, not rolled back by a
  completed rollback or restore, completed on the timeline for table version < 8), asked by
  :func:`effective_blocks` for the snapshot and by ``KeyTagger`` for every block it
  confirms a key in.
- Within the log, :func:`effective_blocks` also applies ROLLBACK command blocks (every earlier
  block of the target instant is removed) and log compaction (``COMPACTED_BLOCK_TIMES``
  blocks replace the blocks of the instants they list, chains followed, at the position of
  the newest instant they replace). The lookup cannot see command blocks in the stored index
  (they hold no records): a key of a block a command block rolled back may still be reported
  present, the safe direction (the next upsert updates it in that file group, it never
  duplicates it). Hudi records such rollbacks on the timeline too, where both rules see them.
"""

from __future__ import annotations

import warnings
from typing import Protocol

from morlog.logformat.constants import BlockType, CommandType, HeaderKey
from morlog.logformat.errors import ChecksumError, CorruptBlockWarning

from .logfile import LogBlock
from .timeline import Timeline


class BlockRules(Protocol):
    """The parts of a merge spec the block rules read."""

    table_version: int
    as_of: str | None


def effective_blocks(blocks: list[LogBlock], timeline: Timeline | None, spec: BlockRules,
                     *, verify: bool = False) -> list[LogBlock]:
    """The data and delete blocks a reader applies, in the order it applies them.

    ``verify`` (readers about to decode the records): a data block whose records do not
    match the checksum its index trailer carries is corrupt, skipped with a
    ``CorruptBlockWarning`` as the scan skips a torn block (spec/index.md §4.12), before
    instants, rollbacks and log compaction are applied. The block's bytes are kept for its
    decode."""
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
        # verified before the instant is looked at: the checksum covers the header, and a
        # damaged instant time must not make a block vanish silently
        if verify and not _verified(b):
            continue
        if not instant_counts(instant, timeline, spec):
            continue
        kept.append(b)
    out = _apply_log_compaction(kept)
    if verify:  # the bytes verify() kept for blocks that will not be decoded
        applied = {id(b) for b in out}
        for b in blocks:
            if id(b) not in applied:
                b.release()
    return out


def _verified(b: LogBlock) -> bool:
    """False when ``b``'s checksum does not match (warned); True otherwise."""
    try:
        b.verify()
    except ChecksumError as exc:
        warnings.warn(f"{b.path}@{b.offset}: corrupt block skipped ({exc.message})",
                      CorruptBlockWarning, stacklevel=3)
        return False
    return True


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




def instant_counts(instant: str, timeline: Timeline | None, spec: BlockRules) -> bool:
    """Whether blocks written by ``instant`` count, as far as the timeline decides: not after
    the snapshot instant, not undone by a completed rollback or restore, and (table version
    < 8, where log files of failed writes stay in the slice) completed on the timeline. The
    key lookup asks this for every block it confirms a key in; :func:`effective_blocks` for
    every block the snapshot merges."""
    if spec.as_of is not None and instant > spec.as_of:
        return False
    if timeline is None:
        return True
    if instant in timeline.rolled_back_instants():
        return False
    return spec.table_version >= 8 or timeline.is_committed(instant, spec.as_of)


__all__ = ["BlockRules", "effective_blocks", "instant_counts"]
