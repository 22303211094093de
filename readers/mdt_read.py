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
reason to fail a read. Writers keep the MDT true with ``morlog.writers.mdt_writer``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from morlog.logformat.constants import BlockType
from morlog.logformat.delete_content import decode_delete_content
from morlog.logformat.errors import MorlogError
from morlog.logformat.hfile import decode_hfile
from morlog.logformat.hfile_content import decode_hfile_records
from morlog.logformat.naming import BaseFileName, LogFileName
from morlog.logformat.table_files import PROPERTIES_FILE, parse_properties

from .column_stats import merge_records
from .logfile import LogFileReader
from .storage import Storage
from .timeline import Timeline

METADATA_DIR = "metadata"
COLUMN_STATS = "column_stats"
#: ``HoodieTableConfig.TABLE_METADATA_PARTITIONS``
PARTITIONS_PROPERTY = "hoodie.table.metadata.partitions"


def listed_partitions(props: Mapping[str, str]) -> set[str]:
    """The MDT partitions a data table's properties list as ready."""
    raw = props.get(PARTITIONS_PROPERTY) or ""
    return {p.strip() for p in raw.split(",") if p.strip()}


def partition_records(storage: Storage, table_path: str, partition: str
                      ) -> list[dict[str, Any]]:
    """The records and deletes (``{"deleted": key}``) of MDT partition ``partition``, oldest
    first per file group, as a reader of the MDT merges them."""
    mdt = storage.join(table_path, ".hoodie", METADATA_DIR)
    props_path = storage.join(mdt, ".hoodie", PROPERTIES_FILE)
    props = parse_properties(storage.read(props_path).decode("utf-8", errors="replace"),
                             props_path)
    version = int((props.get("hoodie.table.version") or "6").strip() or "6")
    tl = Timeline.load(mdt, version, storage)
    d = storage.join(mdt, partition)
    names = storage.listdir(d)
    bases: dict[str, list[BaseFileName]] = {}
    logs: dict[str, list[LogFileName]] = {}
    for n in names:
        if LogFileName.matches(n):
            ln = LogFileName.parse(n)
            logs.setdefault(ln.file_id, []).append(ln)
        elif BaseFileName.matches(n):
            bn = BaseFileName.parse(n)
            if tl.is_committed(bn.instant):
                bases.setdefault(bn.file_id, []).append(bn)
    out: list[dict[str, Any]] = []
    for fid in sorted(set(bases) | set(logs)):
        base = max(bases[fid], key=lambda b: b.instant) if fid in bases else None
        if base is not None:
            data = storage.read(storage.join(d, str(base)))
            hf = decode_hfile(data, path=storage.join(d, str(base)))
            schema = hf.file_info.get(b"schema", b"").decode("utf-8")
            out += decode_hfile_records(data, schema, path=storage.join(d, str(base)))
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
        blocks: list[tuple[str, list[dict[str, Any]]]] = []
        rolled: set[str] = set()
        for ln in mine:
            with LogFileReader(storage.source(storage.join(d, str(ln)))) as r:
                for b in r.blocks():
                    inst = b.instant or ""
                    if b.block_type == BlockType.COMMAND:
                        rolled.add(b.target_instant or "")
                    elif b.is_corrupt or not tl.is_committed(inst):
                        continue
                    elif b.block_type == BlockType.HFILE_DATA:
                        blocks.append((inst, decode_hfile_records(
                            b.content(), b.schema or "", path=b.path)))
                    elif b.block_type == BlockType.DELETE:
                        blocks.append((inst, [{"deleted": x.record_key} for x in
                                              decode_delete_content(b.content()).records]))
        out += [rec for inst, recs in blocks if inst not in rolled for rec in recs]
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


__all__ = ["COLUMN_STATS", "column_stats_index", "listed_partitions", "partition_records"]
