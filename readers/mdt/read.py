"""Reading a data table's metadata table (MDT) partitions, for pruning (spec/prune.md §5).

Only what the pruner needs: the live ``column_stats`` records of the MDT, merged as Hudi's
readers merge them (``morlog.readers.column_stats.merge_records``:
``HoodieTableMetadataUtil.mergeColumnStatsRecords``), from

- the partitions the data table lists as ready (``hoodie.table.metadata.partitions`` in its
  ``hoodie.properties``; Hudi reads no other partition: ``HoodieTableConfig
  .getMetadataPartitions``);
- per MDT file group: the latest base HFile committed on the MDT timeline, then the HFILE
  data and delete blocks of the log files in that base file's slice written by instants
  committed on the MDT timeline, ROLLBACK command blocks removing their target's blocks
  (the same membership rules as data tables, ``morlog.readers.table``).

Every failure to read the MDT (absent, damaged, a layout morlog does not know) makes the
pruner fall back to the base files' own footers: statistics are an optimisation, never a
reason to fail a read. Writers keep the MDT true with ``morlog.writers.mdt.writer``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from morlog.config import METADATA_PARTITIONS, TABLE_VERSION
from morlog.logformat.constants import BlockType
from morlog.logformat.delete_content import decode_delete_columns
from morlog.logformat.errors import MorlogError
from morlog.logformat.hfile.codec import decode_hfile
from morlog.logformat.hfile.content import decode_hfile_records
from morlog.logformat.naming import BaseFileName, LogFileName
from morlog.readers.column_stats import merge_records
from morlog.readers.logfile import LogFileReader
from morlog.readers.properties import has_properties, read_properties
from morlog.readers.storage import Storage
from morlog.readers.timeline import Timeline

METADATA_DIR = "metadata"
COLUMN_STATS = "column_stats"
#: ``HoodieTableConfig.TABLE_METADATA_PARTITIONS``
PARTITIONS_PROPERTY = METADATA_PARTITIONS


def listed_partitions(props: Mapping[str, str]) -> set[str]:
    """The MDT partitions a data table's properties list as ready."""
    raw = props.get(PARTITIONS_PROPERTY) or ""
    return {p.strip() for p in raw.split(",") if p.strip()}


@dataclass(frozen=True)
class MdtView:
    """A data table's metadata table opened for reading: where it is, its table version and
    its timeline."""

    storage: Storage
    path: str
    version: int
    timeline: Timeline


@dataclass(frozen=True)
class MdtSlice:
    """The latest file slice of one MDT file group: its base HFile (committed on the MDT
    timeline; None without one) and the log files of the slice, in log order."""

    file_id: str
    directory: str
    base: str | None
    logs: tuple[str, ...]


def open_mdt(storage: Storage, table_path: str) -> MdtView:
    """The metadata table of the data table at ``table_path``."""
    mdt = storage.join(table_path, ".hoodie", METADATA_DIR)
    props, _ = read_properties(storage, mdt)
    version = int((props.get(TABLE_VERSION) or "6").strip() or "6")
    return MdtView(storage, mdt, version, Timeline.load(mdt, version, storage))


def partition_slices(view: MdtView, partition: str) -> list[MdtSlice]:
    """The latest slice of every file group of MDT partition ``partition`` holding any file
    (committed or not), sorted by file id as Hudi sorts them
    (``HoodieTableMetadataUtil.getPartitionLatestMergedFileSlices``)."""
    storage, tl, version = view.storage, view.timeline, view.version
    d = storage.join(view.path, partition)
    names = storage.listdir(d)
    ids: set[str] = set()
    bases: dict[str, list[BaseFileName]] = {}
    logs: dict[str, list[LogFileName]] = {}
    for n in names:
        if LogFileName.matches(n):
            ln = LogFileName.parse(n)
            ids.add(ln.file_id)
            logs.setdefault(ln.file_id, []).append(ln)
        elif BaseFileName.matches(n):
            bn = BaseFileName.parse(n)
            ids.add(bn.file_id)
            if tl.is_committed(bn.instant):
                bases.setdefault(bn.file_id, []).append(bn)
    out: list[MdtSlice] = []
    for fid in sorted(ids):
        base = max(bases[fid], key=lambda b: b.instant) if fid in bases else None
        mine = []
        for ln in logs.get(fid, []):
            if version >= 8:
                done = tl.completion_time(ln.instant)
                if done is None or (base is not None and done < base.instant):
                    continue
            elif base is not None and ln.instant != base.instant:
                continue
            mine.append(ln)
        mine.sort(key=LogFileName.sort_key)
        out.append(MdtSlice(fid, d, storage.join(d, str(base)) if base is not None else None,
                            tuple(storage.join(d, str(ln)) for ln in mine)))
    return out


@dataclass(frozen=True)
class MdtBlock:
    """A data or delete block of an MDT slice's logs that a reader merges."""

    instant: str
    block_type: BlockType
    content: bytes
    schema: str
    path: str | None
    #: where ``content`` starts in its log file (errors name the file offset)
    offset: int = 0


def slice_blocks(view: MdtView, s: MdtSlice, counts: Callable[[str], bool] | None = None
                 ) -> list[MdtBlock]:
    """The HFILE data and DELETE blocks of slice ``s`` a reader merges, oldest first:
    written by instants committed on the MDT timeline (and, with ``counts``, for which
    ``counts(instant)`` holds), without those of the instants ROLLBACK command blocks of the
    slice target; CORRUPT blocks are skipped (Hudi's log reader skips them too)."""
    tl = view.timeline
    blocks: list[MdtBlock] = []
    rolled: set[str] = set()
    for path in s.logs:
        with LogFileReader(view.storage.source(path)) as r:
            for b in r.blocks():
                inst = b.instant or ""
                if b.block_type == BlockType.COMMAND:
                    rolled.add(b.target_instant or "")
                elif b.is_corrupt or not tl.is_committed(inst):
                    continue
                elif counts is not None and not counts(inst):
                    continue
                elif b.block_type in (BlockType.HFILE_DATA, BlockType.DELETE):
                    blocks.append(MdtBlock(inst, b.block_type, b.content(), b.schema or "",
                                           b.path, b.content_offset))
    return [b for b in blocks if b.instant not in rolled]


def partition_records(storage: Storage, table_path: str, partition: str
                      ) -> list[dict[str, Any]]:
    """The records and deletes (``{"deleted": key}``) of MDT partition ``partition``, oldest
    first per file group, as a reader of the MDT merges them."""
    view = open_mdt(storage, table_path)
    out: list[dict[str, Any]] = []
    for s in partition_slices(view, partition):
        if s.base is not None:
            data = storage.read(s.base)
            hf = decode_hfile(data, path=s.base)
            schema = hf.file_info.get(b"schema", b"").decode("utf-8")
            out += decode_hfile_records(data, schema, path=s.base)
        for b in slice_blocks(view, s):
            if b.block_type == BlockType.HFILE_DATA:
                out += decode_hfile_records(b.content, b.schema, base=b.offset,
                                            path=b.path)
            else:
                # the keys column-wise; a dict per key is this function's result
                out += [{"deleted": k} for k in
                        decode_delete_columns(b.content, base=b.offset,
                                              path=b.path).keys.to_pylist()]
    return out


def column_stats_index(storage: Storage, table_path: str, props: Mapping[str, str]
                       ) -> dict[str, dict[str, Any]] | None:
    """The live ``column_stats`` of the MDT: record key (``morlog.readers.column_stats
    .column_stats_key`` of column, partition and file name) -> ``HoodieMetadataColumnStats``
    (Java order: see ``morlog.readers.column_stats``); None when the table lists no
    ``column_stats`` partition or its MDT cannot be read."""
    if COLUMN_STATS not in listed_partitions(props):
        return None
    try:
        return merge_records(partition_records(storage, table_path, COLUMN_STATS))
    except (MorlogError, OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


def damaged_files(storage: Storage, table_path: str) -> list[tuple[str, str]]:
    """(path, why) of every file of the data table's metadata table that is damaged
    (spec/mdt.md §15): a log file with a corrupt block, a torn tail or a block whose
    content does not decode, a base HFile or the MDT's ``hoodie.properties`` or timeline
    that does not read. Readers skip a corrupt
    block as Hudi does, but the records it held are gone from the MDT, so ``repair``
    rebuilds an MDT with any of these. Empty for a table without an MDT."""
    mdt = storage.join(table_path, ".hoodie", METADATA_DIR)
    if not has_properties(storage, mdt):
        return []
    out: list[tuple[str, str]] = []
    try:
        open_mdt(storage, table_path)
    except (MorlogError, OSError, ValueError) as exc:
        return [(storage.join(mdt, ".hoodie"), f"the metadata table does not open: {exc}")]
    for part in sorted(storage.subdirs(mdt)):
        if part.startswith("."):
            continue
        d = storage.join(mdt, part)
        for name in sorted(storage.listdir(d)):
            path = storage.join(d, name)
            try:
                if LogFileName.matches(name):
                    with LogFileReader(storage.source(path)) as r:
                        blocks = list(r.blocks())
                        bad = [b for b in blocks if b.is_corrupt]
                        torn = r.torn_tail
                        for b in blocks:  # content a reader of the MDT decodes
                            if b.block_type == BlockType.HFILE_DATA:
                                decode_hfile_records(b.content(), b.schema or "",
                                                     base=b.content_offset, path=path)
                            elif b.block_type == BlockType.DELETE:
                                decode_delete_columns(b.content(), base=b.content_offset,
                                                      path=path)
                    if bad:
                        out.append((path, f"corrupt block at offset {bad[0].offset} "
                                          f"({bad[0].reason})"))
                    elif torn is not None:
                        out.append((path, f"torn tail: {torn[1]} bytes at offset {torn[0]} "
                                          "are not a whole block"))
                elif BaseFileName.matches(name):
                    decode_hfile(storage.read(path), path=path)
            except (MorlogError, OSError, ValueError) as exc:
                out.append((path, f"does not read: {exc}"))
    return out


__all__ = ["COLUMN_STATS", "MdtBlock", "MdtSlice", "MdtView", "column_stats_index",
           "damaged_files", "listed_partitions", "open_mdt", "partition_records",
           "partition_slices", "slice_blocks"]
