"""The metadata table's ``files`` partition, kept true by every morlog commit (spec/table.md
§15, spec/mdt.md §6).

A commit ``I`` of the data table writes, before the data table's completed instant:

1. ``I.deltacommit.requested`` and ``.inflight`` on the metadata table's (MDT's) timeline
   (``.hoodie/metadata/.hoodie/timeline/`` in layout 2, ``.hoodie/metadata/.hoodie/`` in
   layout 1), the **same instant** as the data table's, as Hudi's metadata writer does
   (``HoodieBackedTableMetadataWriter.update`` -> ``commitInternal``);
2. one HFILE_DATA block with the commit's ``files`` records
   (``HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords``: one record per
   touched partition with the files written and their sizes, and ``__all_partitions__``
   naming every touched partition) in each ``files`` file group that a record maps to
   (``mapRecordKeyToFileGroupIndex``), as a new log file (8+: named after ``I``; 6: appended
   to the log of the slice's base instant);
3. ``I``'s completed delta commit on the MDT timeline with its write stats.

Hudi's readers trust an MDT log block only when its instant is completed on the data
timeline (``HoodieTableMetadataUtil.getValidInstantTimestamps``), so the data instant
completing is what publishes the MDT's records to Hudi; hudi-rs reads the MDT as a table and
needs the MDT's own completed delta commit. A rolled-back data instant is rolled back in the
MDT with the same rollback instant (``HoodieBackedTableMetadataWriter.update(
HoodieRollbackMetadata, ...)``).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa

import morlog.config as conf
from morlog.logformat.blocks import delete_block, hfile_data_block, record_index_block
from morlog.logformat.constants import BlockType, HeaderKey
from morlog.logformat.delete_content import DeleteRecord, OrderingValue, encode_delete_columns
from morlog.logformat.errors import UsageError
from morlog.logformat.hfile.codec import HBASE, HUDI_NATIVE, HFileStyle, decode_hfile, encode_hfile
from morlog.logformat.hfile.content import encode_hfile_records
from morlog.logformat.hfile.record_index import RecordIndexEntries
from morlog.logformat.hudi_bloom import DynamicBloomV0
from morlog.logformat.java_hash import file_group_indexes
from morlog.logformat.mdt_records import (
    ALL_PARTITIONS_KEY,
    files_partition_records,
    files_view,
    metadata_record_schema_json,
    record_index_file_id,
)
from morlog.logformat.naming import DEFAULT_WRITE_TOKEN, BaseFileName, LogFileName
from morlog.logformat.table_files import (
    PARTITION_METADATA_FILE,
    PROPERTIES_FILE,
    format_partition_metadata,
    format_properties,
    table_checksum,
)
from morlog.logformat.timeline_meta import write_stat
from morlog.readers.base_files import BaseFormat
from morlog.readers.logfile import LogFileReader
from morlog.readers.mdt.read import partition_records as mdt_partition_records
from morlog.readers.storage import TableLocation
from morlog.readers.table import Table
from morlog.readers.timeline import Timeline
from morlog.writers.core.commit import CommitHooks, RecordChanges, rollback_instant
from morlog.writers.core.logwriter import LogFileWriter, Mode
from morlog.writers.core.store import WriteStore
from morlog.writers.core.timeline import WRITE_TOKEN, TimelineWriter, timeline_utc
from morlog.writers.mdt import colstats, secondary
from morlog.writers.mdt.keeper import (
    FILES,
    RECORD_INDEX,
    CommitContext,
    FilesKeeper,
    PartitionKeeper,
    RecordIndexKeeper,
    key_to_file_group_index,
)

METADATA_DIR = "metadata"
#: ``MetadataPartitionType.FILES.getFileIdPrefix()``
FILES_FILE_ID_PREFIX = "files-"
#: ``HoodieTableMetadata.SOLO_COMMIT_TIMESTAMP``: the instant that initialises the MDT of a
#: table without completed commits
SOLO_COMMIT_TIMESTAMP = "00000000000000000"
#: the operation of an MDT delta commit (Hudi's fixtures)
UPSERT_OPERATION = "UPSERT_PREPPED"
BOOTSTRAP_OPERATION = "BULK_INSERT_PREPPED"
#: ``HoodieMetadataConfig`` bloom filter of MDT base files: entries per DYNAMIC_V0 row,
#: by table version (Hudi 1.0: 60000, Hudi 1.1: 10000; verified on the fixtures' base files)
_BLOOM_ENTRIES = {8: 60_000, 9: 10_000}
_BLOOM_FPP = 1e-9
_BLOOM_MAX_ENTRIES = 100_000


def metadata_location(location: TableLocation) -> TableLocation:
    """The location of a table's metadata table (``<table>/.hoodie/metadata``)."""
    return dataclasses.replace(location, path=location.join(".hoodie", METADATA_DIR))


def file_group_id(index: int) -> str:
    """The file id of ``files`` file group ``index`` (``files-0000-0``;
    ``HoodieTableMetadataUtil.getFileIDForFileGroup``)."""
    return f"{FILES_FILE_ID_PREFIX}{index:04d}-0"


def _style(version: int) -> tuple[HFileStyle, int]:
    """HFile writer style and creation time of a table version's MDT files (Hudi 1.0 writes
    HBase-style HFiles with creation time 0, Hudi 1.1 its native ones)."""
    if version == 8:
        return HBASE, 0
    return HUDI_NATIVE, int(time.time() * 1000)


#: MDT partition (or name prefix ending in ``_``) -> the keeper class that keeps it true
KEEPERS: dict[str, Callable[[str], PartitionKeeper]] = {
    FILES: lambda _p: FilesKeeper(),
    RECORD_INDEX: lambda _p: RecordIndexKeeper(),
    "column_stats": lambda _p: colstats.ColumnStatsKeeper(),
    "partition_stats": lambda _p: colstats.PartitionStatsKeeper(),
    "bloom_filters": lambda _p: colstats.BloomFiltersKeeper(),
    "secondary_index_": lambda p: secondary.SecondaryIndexKeeper(p),
}


def keeper_for(partition: str) -> PartitionKeeper | None:
    """The keeper of MDT partition ``partition`` (None: morlog cannot keep it true)."""
    for name, make in KEEPERS.items():
        if partition == name or (name.endswith("_") and partition.startswith(name)):
            return make(partition)
    return None


class MetadataTable:
    """The metadata table of one data table, as far as morlog writes it."""

    def __init__(self, store: WriteStore, location: TableLocation, *, mode: Mode,
                 fsync: bool = True) -> None:
        self.store = store
        self.data_location = location
        self.location = metadata_location(location)
        self.path = self.location.path
        self.mode: Mode = mode
        self.fsync = fsync
        self._props: dict[str, str] | None = None
        self._utc: bool | None = None

    @property
    def props(self) -> dict[str, str]:
        if self._props is None:
            from morlog.readers.properties import read_properties

            self._props = read_properties(self.store.storage, self.path)[0]
        return self._props

    @property
    def version(self) -> int:
        return int(self.props.get(conf.TABLE_VERSION, "6"))

    @property
    def layout(self) -> int:
        return 2 if self.version >= 8 else 1

    def timeline(self) -> Timeline:
        return Timeline.load(self.path, self.version, self.location.storage)

    def writer(self) -> TimelineWriter:
        return TimelineWriter(self.store, self.location, layout=self.layout, fsync=self.fsync,
                              utc=self.utc)

    def files_dir(self) -> str:
        return self.partition_dir(FILES)

    def partition_dir(self, partition: str) -> str:
        """The directory of MDT partition ``partition``."""
        return self.store.join(self.path, partition)

    def file_groups(self, partition: str = FILES) -> list[str]:
        """The file ids of MDT partition ``partition`` on storage, sorted (Hudi sorts file
        slices by file id)."""
        ids = set()
        for name in self.store.listdir(self.partition_dir(partition)):
            if LogFileName.matches(name):
                ids.add(LogFileName.parse(name).file_id)
            elif BaseFileName.matches(name):
                ids.add(BaseFileName.parse(name).file_id)
        return sorted(ids)

    # --- writing ---------------------------------------------------------------------------

    def write_commit(self, ctx: CommitContext, keepers: Sequence[PartitionKeeper]) -> None:
        """One MDT delta commit ``ctx.instant`` holding, for each of ``keepers``, the records
        and deletes that keep its MDT partition true after the data commit (``files``
        always: readers of the MDT need its instant's ``files`` records)."""
        tl = self.timeline()
        if tl.get(ctx.instant) is not None:
            # a re-attempt of an instant the MDT has seen (Hudi's commitInternal rolls it back)
            self.roll_back(ctx.instant, None)
        #: (MDT partition, file id) -> (HFILE records, deleted keys)
        work: dict[tuple[str, str], tuple[_Records, _Deletes]] = {}
        for keeper in keepers:
            columns = keeper.entries(self, ctx)
            if columns is not None:
                if len(columns[0]) or len(columns[1]):
                    self._shard_entries(keeper.partition, *columns, work)
                continue
            recs, dels = keeper.records(self, ctx)
            if not recs and not dels:
                continue
            part = keeper.partition
            groups = self._groups(part)
            lists: dict[str, tuple[list[dict[str, Any]], list[str]]] = {}
            for rec in recs:
                fid = groups[keeper.file_group_index(str(rec["key"]), len(groups))]
                lists.setdefault(fid, ([], []))[0].append(rec)
            for key in dels:
                fid = groups[keeper.file_group_index(key, len(groups))]
                lists.setdefault(fid, ([], []))[1].append(key)
            work.update({(part, fid): lists[fid] for fid in lists})
        self._write_work(ctx.instant, work)

    def _groups(self, part: str) -> list[str]:
        groups = self.file_groups(part)
        if not groups:
            if part != FILES:
                raise UsageError(f"the metadata table's {part} partition holds no file "
                                 "group", path=self.partition_dir(part))
            groups = [file_group_id(0)]
        return groups

    def _shard_entries(self, part: str, entries: RecordIndexEntries, gone: pa.Array,
                       work: dict[tuple[str, str], tuple[_Records, _Deletes]]) -> None:
        """Column-wise entries and deleted keys of MDT partition ``part`` into ``work``, by
        the file group each key hashes to (``file_group_indexes``, vectorized; the order of
        the deleted keys kept within a group)."""
        groups = self._groups(part)
        none = RecordIndexEntries.empty(entries.instant_millis)
        for g, rows in _by_shard(entries.keys, len(groups)):
            work[(part, groups[g])] = (entries.take(rows), pa.array([], pa.string()))
        for g, rows in _by_shard(gone, len(groups)):
            recs, _ = work.get((part, groups[g]), (none, None))
            work[(part, groups[g])] = (recs, gone.take(pa.array(rows)))

    def write_files_commit(self, instant: str, written: Mapping[str, Mapping[str, int]],
                           deleted: Mapping[str, Sequence[str]] | None = None,
                           changes: RecordChanges | None = None) -> None:
        """One MDT delta commit ``instant`` with the ``files`` records of ``written``
        (partition -> {file name: size}) and the tombstones of ``deleted``, and, when
        ``changes`` is given, the ``record_index`` records of the commit's key changes."""
        keepers: list[PartitionKeeper] = [FilesKeeper()]
        if changes is not None:
            keepers.append(RecordIndexKeeper())
        self.write_commit(CommitContext(instant, written, deleted or {},
                                        (lambda: changes) if changes is not None else None),
                          keepers)

    def _write_work(self, instant: str,
                    work: dict[tuple[str, str], tuple[_Records, _Deletes]]) -> None:
        tl = self.timeline()
        w = self.writer()
        w.write(instant, "requested", {})
        inflight: dict[str, list[dict[str, Any]]] = {}
        for part, fid in sorted(work):
            inflight.setdefault(part, []).append(write_stat(part, fid))
        w.write(instant, "inflight", {
            "partitionToWriteStats": inflight,
            "compacted": False, "extraMetadata": {}, "operationType": UPSERT_OPERATION})
        style, created = _style(self.version)
        schemas = {part: self.block_schema(part) for part in {FILES, *(p for p, _ in work)}}
        stats: dict[str, list[dict[str, Any]]] = {}
        for (part, fid), (recs, dels) in sorted(work.items()):
            d = self.partition_dir(part)
            self.store.makedirs(d)
            schema = schemas[part]
            blocks = []
            if isinstance(recs, RecordIndexEntries):
                if len(recs):
                    blocks.append(record_index_block(recs, schema, instant, style=style,
                                                     create_time_ms=created))
            elif recs:
                blocks.append(hfile_data_block(recs, schema, instant, style=style,
                                               create_time_ms=created))
            if isinstance(dels, pa.Array):
                if len(dels):  # HFILE deletes: Hudi's natural order, IntWrapper(0)
                    parts = pa.nulls(len(dels), pa.string()).fill_null(part)
                    blocks.append(delete_block(encode_delete_columns(dels, parts), instant,
                                               schema=schema))
            elif dels:
                blocks.append(delete_block([DeleteRecord(k, part, OrderingValue.natural())
                                            for k in dels], instant, schema=schema))
            if self.layout == 2:
                lw = LogFileWriter(d, fid, instant, write_token=WRITE_TOKEN, mode="rollover",
                                   fsync=self.fsync, store=self.store)
            else:
                lw = LogFileWriter(d, fid, self._base_instant(tl, fid, part),
                                   write_token=WRITE_TOKEN, mode=self.mode, fsync=self.fsync,
                                   store=self.store)
            r = lw.append(blocks)
            name = str(r.name)
            n = len(recs) + len(dels)
            st = write_stat(part, fid, f"{part}/{name}", prev_commit=instant,
                            num_writes=n, num_update_writes=len(recs),
                            file_size=r.size, log_files=[name], base_file="")
            if dels:
                st["numDeletes"] = len(dels)
            st["logVersion"] = r.name.version
            st["logOffset"] = r.blocks[0].offset if r.blocks else 0
            stats.setdefault(part, []).append(st)
        w.write(instant, "completed", {
            "partitionToWriteStats": stats, "compacted": False,
            "extraMetadata": {"schema": _without_meta_fields(schemas[FILES])},
            "operationType": UPSERT_OPERATION})

    def record_index_work(self, instant: str, changes: RecordChanges
                          ) -> dict[str, tuple[list[dict[str, Any]], list[str]]]:
        """``record_index`` file id -> (records, deleted keys) of a commit's key changes
        (:class:`RecordIndexKeeper`)."""
        recs, dels = RecordIndexKeeper().records(
            self, CommitContext(instant, {}, {}, lambda: changes))
        groups = self.file_groups(RECORD_INDEX)
        out: dict[str, tuple[list[dict[str, Any]], list[str]]] = {}
        for r in recs:
            out.setdefault(groups[key_to_file_group_index(str(r["key"]), len(groups))],
                           ([], []))[0].append(r)
        for k in dels:
            out.setdefault(groups[key_to_file_group_index(k, len(groups))], ([], []))[1].append(k)
        return out

    @property
    def utc(self) -> bool:
        """Instant times are UTC (``hoodie.table.timeline.timezone=UTC``), else local."""
        if self._utc is None:
            from morlog.readers.properties import read_properties

            props = read_properties(self.store.storage, self.data_location.path)[0]
            self._utc = timeline_utc(props)
        return self._utc

    def block_schema(self, partition: str = FILES) -> str:
        """The SCHEMA of the newest block (or base file) of MDT partition ``partition``
        (a partition without any: ``files``'s): the record schema
        of the Hudi version that wrote the MDT, which new blocks keep (hudi-rs refuses a
        file slice whose blocks' schemas do not reconcile, e.g. Hudi 1.0's and 1.1's column
        statistics records); a new MDT's: ``HoodieMetadataRecord`` of Hudi 1.1."""
        d = self.partition_dir(partition)
        names = self.store.listdir(d)
        logs = sorted((LogFileName.parse(n) for n in names if LogFileName.matches(n)),
                      key=lambda x: (x.instant, x.version), reverse=True)
        for ln in logs:
            # with the data logs' recovery: a torn or corrupt block is skipped, as Hudi's
            # log reader skips it (spec/mdt.md §15)
            with LogFileReader(self.location.storage.source(self.store.join(d, str(ln)))
                               ) as reader:
                for blk in reader.reversed_blocks():
                    if blk.block_type == BlockType.HFILE_DATA:
                        text = blk.header.get(HeaderKey.SCHEMA)
                        if text:
                            return text
        bases = sorted((BaseFileName.parse(n) for n in names if BaseFileName.matches(n)),
                       key=lambda b: b.instant, reverse=True)
        for b in bases:
            bp = self.store.join(d, str(b))
            info = decode_hfile(self.store.read(bp), path=bp).file_info
            if b"schema" in info:
                return info[b"schema"].decode("utf-8")
        if partition != FILES:
            return self.block_schema(FILES)
        return metadata_record_schema_json()

    def _base_instant(self, tl: Timeline, fid: str, partition: str = FILES) -> str:
        """Layout 1: the base instant of the file group's latest slice (its log's name)."""
        names = self.store.listdir(self.partition_dir(partition))
        bases = [BaseFileName.parse(n).instant for n in names
                 if BaseFileName.matches(n) and BaseFileName.parse(n).file_id == fid
                 and tl.is_committed(BaseFileName.parse(n).instant)]
        if bases:
            return max(bases)
        logs = [LogFileName.parse(n).instant for n in names
                if LogFileName.matches(n) and LogFileName.parse(n).file_id == fid]
        return min(logs) if logs else SOLO_COMMIT_TIMESTAMP

    # --- rollback --------------------------------------------------------------------------

    def roll_back(self, failed: str, rollback_instant_time: str | None) -> bool:
        """Make the MDT forget ``failed`` (any state) as Hudi does: roll back its own delta
        commit of that instant. False when the MDT never saw it."""
        tl = self.timeline()
        inst = tl.get(failed)
        if inst is None or inst.action != "deltacommit":
            return False
        if inst.is_completed:
            # back to inflight first: a crash from here leaves a pending MDT instant, which
            # the data table's next rollback of the same instant finishes
            self.store.delete(self.store.join(tl.directory, inst.file_name))
        view = _MetadataView(self.location)
        rollback_instant(self.store, self.location, self.writer(), view, failed, self.mode,
                         self.fsync, instant=rollback_instant_time)
        return True

    # --- reading ---------------------------------------------------------------------------

    def files_records(self) -> list[dict[str, Any]]:
        """The ``files`` records a reader of the MDT merges, oldest first: the latest
        committed base file of each file group, then the blocks of committed delta commits
        in its slice (rolled-back instants dropped)."""
        return [r for r in self.partition_records(FILES) if r is not None and "key" in r]

    def partition_records(self, partition: str) -> list[dict[str, Any]]:
        """The records and deletes of MDT partition ``partition`` a reader merges, oldest
        first per file group (``morlog.readers.mdt.read.partition_records``: the latest
        committed base file's records, then the HFILE and delete blocks of committed delta
        commits in its slice, rolled-back instants dropped). A delete is
        ``{"deleted": key}``."""
        return mdt_partition_records(self.data_location.storage, self.data_location.path,
                                     partition)

    def record_index(self) -> pa.Table:
        """The ``record_index`` partition merged as Hudi's readers merge it: the latest
        record of each key, a delete removing the key, committed MDT instants only.
        Columns: ``key``, ``partition``, ``file_id``, ``instant_millis``
        (``HoodieRecordIndexInfo.instantTime``), sorted by key."""
        merged: dict[str, dict[str, Any] | None] = {}
        for r in self.partition_records(RECORD_INDEX):
            if "deleted" in r:
                merged[r["deleted"]] = None
            else:
                merged[r["key"]] = r["recordIndexMetadata"]
        live = sorted((k, v) for k, v in merged.items() if v is not None)
        return pa.table({
            "key": pa.array([k for k, _ in live], pa.string()),
            "partition": pa.array([v["partitionName"] for _, v in live], pa.string()),
            "file_id": pa.array([record_index_file_id(v) for _, v in live], pa.string()),
            "instant_millis": pa.array([v["instantTime"] for _, v in live], pa.int64()),
        })

    def files_view(self) -> dict[str, dict[str, int]]:
        """``{partition key: {file name: size}}`` the ``files`` partition lists now (a
        delete of a partition's key, a clean's deleted partition, drops what came before)."""
        records: list[dict[str, Any]] = []
        for r in self.partition_records(FILES):  # per (commit, partition)
            if "deleted" in r:
                records = [x for x in records if x["key"] != r["deleted"]]
            elif "key" in r:
                records.append(r)
        return files_view(records)


#: what one MDT file group gets in a commit: records (per record, or record-index entries
#: column-wise) and deleted keys (a list, or a string array)
_Records: TypeAlias = list[dict[str, Any]] | RecordIndexEntries
_Deletes: TypeAlias = list[str] | pa.Array


def _by_shard(keys: pa.Array, count: int) -> list[tuple[int, npt.NDArray[np.int64]]]:
    """(file group position, rows in their order) of every group ``keys`` hash to
    (``mapRecordKeyToFileGroupIndex``, vectorized)."""
    if not len(keys):
        return []
    shard = file_group_indexes(keys, count)
    order = np.argsort(shard, kind="stable")
    bounds = np.flatnonzero(np.diff(shard[order])) + 1
    return [(int(shard[rows[0]]), rows) for rows in np.split(order, bounds)]


def _without_meta_fields(schema: str) -> str:
    """A record schema's text without the ``_hoodie_*`` meta fields (what an MDT commit's
    ``extraMetadata.schema`` holds)."""
    parsed = json.loads(schema)
    parsed["fields"] = [f for f in parsed["fields"] if not f["name"].startswith("_hoodie_")]
    return json.dumps(parsed, separators=(",", ":"))


class _MetadataView(Table):
    """The MDT as :func:`~morlog.writers.core.commit.rollback_instant` sees it: its partitions
    are the directories holding Hudi's partition metadata (the MDT has no partition fields)."""

    def _base_format(self) -> BaseFormat:
        return BaseFormat.HFILE  # listed in file slices, never read as rows

    def partitions(self) -> list[str]:
        return sorted(d for d in self.storage.subdirs(self.path) if not d.startswith(".")
                      and PARTITION_METADATA_FILE in self.storage.listdir(
                          self.storage.join(self.path, d)))


class MetadataWriter(CommitHooks):
    """Keeps the MDT partitions it is given (``files`` first) true in every commit and
    rollback (:class:`CommitHooks`)."""

    def __init__(self, store: WriteStore, location: TableLocation, *, mode: Mode,
                 fsync: bool = True, partitions: Sequence[str] = (FILES,)) -> None:
        self.mdt = MetadataTable(store, location, mode=mode, fsync=fsync)
        wanted = list(dict.fromkeys([FILES, *partitions]))
        missing = [p for p in wanted if keeper_for(p) is None]
        if missing:
            raise UsageError("no keeper for these metadata table partitions", actual=missing)
        self.keepers: list[PartitionKeeper] = [k for p in wanted
                                               if (k := keeper_for(p)) is not None]

    def committing(self, instant: str, written: dict[str, dict[str, int]],
                   changes: Callable[[], RecordChanges] | None = None, *,
                   rewrite: bool = False, schema: str | None = None) -> None:
        self.mdt.write_commit(CommitContext(instant, written, {}, changes, rewrite,
                                            schema=schema), self.keepers)

    def cleaned(self, instant: str, deleted: Mapping[str, Sequence[str]],
                partitions_deleted: Sequence[str] = ()) -> None:
        """The MDT delta commit of clean ``instant`` (``HoodieBackedTableMetadataWriter
        .update(HoodieCleanMetadata, instant)``): ``deleted`` maps each cleaned partition to
        the file names it attempted (``deletePathPatterns``)."""
        self.mdt.write_commit(CommitContext(instant, {}, deleted, clean=True,
                                            partitions_deleted=tuple(partitions_deleted)),
                              self.keepers)

    def rolled_back(self, failed: str, rollback_instant: str,
                    deleted: dict[str, list[str]]) -> None:
        self.mdt.roll_back(failed, rollback_instant)
        if not any(deleted.values()):
            return
        # data files that the MDT still lists (another instant's) are recorded as deleted
        listed = self.mdt.files_view()
        gone = {p: [n for n in names if n in listed.get(p or ".", {})]
                for p, names in deleted.items()}
        gone = {p: n for p, n in gone.items() if n}
        if gone:
            self.mdt.write_commit(CommitContext(rollback_instant, {}, gone), self.keepers)


# --- a new table's metadata table ----------------------------------------------------------


def metadata_table_properties(*, name: str, version: int) -> dict[str, str]:
    """``.hoodie/metadata/.hoodie/hoodie.properties`` of a new table's MDT, as Hudi's
    ``HoodieBackedTableMetadataWriter.initializeMetaClient`` creates it (the fixtures' MDTs;
    table name ``<name>_metadata``, ``HoodieTableMetadata.METADATA_TABLE_NAME_SUFFIX``; no
    database name, so the checksum is CRC-32 of ``.<name>_metadata``, as on the fixtures)."""
    mdt_name = f"{name}_metadata"
    return {
        conf.PAYLOAD_CLASS: "org.apache.hudi.metadata.HoodieMetadataPayload",
        conf.TABLE_INITIAL_VERSION: str(version),
        conf.KEYGEN_TYPE: "HOODIE_TABLE_METADATA",
        conf.TABLE_TYPE: "MERGE_ON_READ",
        conf.ARCHIVELOG_FOLDER: "history",
        conf.TIMELINE_LAYOUT_VERSION: "2",
        conf.TIMELINE_HISTORY_PATH: "history",
        conf.TABLE_CHECKSUM: table_checksum(mdt_name),
        conf.DROP_PARTITION_COLUMNS: "false",
        conf.RECORD_MERGE_STRATEGY_ID: "00000000-0000-0000-0000-000000000000",
        conf.RECORDKEY_FIELDS: "key",
        conf.TABLE_NAME: mdt_name,
        conf.TIMELINE_PATH: "timeline",
        conf.POPULATE_META_FIELDS: "false",
        conf.BASE_FILE_FORMAT: "HFILE",
        conf.RECORD_MERGE_MODE: "CUSTOM",
        conf.TABLE_VERSION: str(version),
    }


def bootstrap_base_file(version: int, file_name: str, *, schema: str | None = None,
                        create_time_ms: int | None = None,
                        files: Mapping[str, Mapping[str, int]] | None = None) -> bytes:
    """The ``files`` base HFile of a new MDT: for an empty table one ``__all_partitions__``
    record listing no partition (``initializeFilesPartition`` of an empty table); with
    ``files`` (data partition -> {file name: size}, a non-empty table's listing, as
    ``initializeFromFilesystem`` gathers it) one record per partition and
    ``__all_partitions__`` naming them. With the base file's bloom filter and key range
    (``HoodieAvroHFileWriter``)."""
    text = schema or metadata_record_schema_json()
    listing = {p: f for p, f in (files or {}).items() if f}
    rec = files_partition_records(listing) if listing else [_empty_partition_list()]
    if version == 8:  # Hudi 1.0 filled the file-name meta field of base file records
        for r in rec:
            r["_hoodie_file_name"] = file_name
    style, created = _style(version)
    if create_time_ms is not None:
        created = create_time_ms
    content = encode_hfile_records(rec, text, style=style, create_time_ms=created)
    hf = decode_hfile(content)
    bloom = DynamicBloomV0(_BLOOM_ENTRIES.get(version, 10_000), _BLOOM_FPP, _BLOOM_MAX_ENTRIES)
    keys = sorted(str(r["key"]) for r in rec)
    bloom.add(keys)
    info = {b"schema": text.encode("utf-8"), b"bloomFilterTypeCode": b"DYNAMIC_V0",
            b"minRecordKey": keys[0].encode(), b"maxRecordKey": keys[-1].encode()}
    return encode_hfile(list(hf.keys), list(hf.values), file_info=info,
                        meta_blocks={b"bloomFilter": bloom.to_base64().encode("ascii")},
                        style=style, create_time_ms=created)


def _empty_partition_list() -> dict[str, Any]:
    """``HoodieMetadataPayload.createPartitionListRecord`` of no partitions."""
    rec = files_partition_records({}, new_partitions=[ALL_PARTITIONS_KEY])[0]
    rec["filesystemMetadata"] = {}
    return rec


def create_metadata_table(store: WriteStore, location: TableLocation, *, name: str,
                          version: int, fsync: bool = True,
                          files: Mapping[str, Mapping[str, int]] | None = None) -> None:
    """Create the MDT of a new, empty table of ``version`` 8 or 9 with its ``files``
    partition, as Hudi initialises it (``initializeFromFilesystem``): MDT properties, then
    delta commit ``00000000000000000`` with the file group's first log (an empty delete
    block, write token ``0-0-0``, ``initializeFileGroups``) and base HFile (the bulk insert
    of ``__all_partitions__``). The caller lists ``files`` in the data table's
    ``hoodie.table.metadata.partitions`` afterwards.

    ``files``: the data files of a table that has some (data partition -> {file name:
    size}), which the base file lists (a rebuild, ``morlog.writers.mdt.plan
    .rebuild_metadata_table``); the bootstrap instant stays ``00000000000000000``."""
    if version < 8:
        raise UsageError("morlog creates metadata tables for table versions 8 and 9",
                         actual=version)
    mloc = metadata_location(location)
    hoodie = store.join(mloc.path, ".hoodie")
    store.makedirs(store.join(hoodie, "timeline"))
    props = metadata_table_properties(name=name, version=version)
    if not store.create(store.join(hoodie, PROPERTIES_FILE),
                        format_properties(props).encode("utf-8"), sync=fsync):
        raise UsageError("a metadata table exists already", path=mloc.path)
    w = TimelineWriter(store, mloc, layout=2, fsync=fsync)
    instant = SOLO_COMMIT_TIMESTAMP
    w.write(instant, "requested", {})
    w.write(instant, "inflight", {})
    d = store.join(mloc.path, FILES)
    store.makedirs(d)
    store.create(store.join(d, PARTITION_METADATA_FILE),
                 format_partition_metadata(int(time.time()), 1).encode(), sync=fsync)
    fid = file_group_id(0)
    LogFileWriter(d, fid, instant, write_token=DEFAULT_WRITE_TOKEN, mode="rollover",
                  fsync=fsync, store=store).append(delete_block([], instant))
    base = str(BaseFileName(fid, WRITE_TOKEN, instant, "hfile"))
    data = bootstrap_base_file(version, base, files=files)
    if not store.create(store.join(d, base), data, sync=fsync):
        raise UsageError("the metadata table's base file exists already", path=d)
    n = 1 + sum(1 for f in (files or {}).values() if f)
    stat = write_stat(FILES, fid, f"{FILES}/{base}", num_writes=n, num_inserts=n,
                      file_size=len(data))
    w.write(instant, "completed", {
        "partitionToWriteStats": {FILES: [stat]}, "compacted": False,
        "extraMetadata": {"schema": metadata_record_schema_json(meta_fields=False)},
        "operationType": BOOTSTRAP_OPERATION})


__all__ = ["BOOTSTRAP_OPERATION", "FILES_FILE_ID_PREFIX", "KEEPERS", "METADATA_DIR",
           "MetadataTable", "MetadataWriter", "SOLO_COMMIT_TIMESTAMP", "UPSERT_OPERATION",
           "bootstrap_base_file", "create_metadata_table", "file_group_id", "keeper_for",
           "metadata_location", "metadata_table_properties"]
