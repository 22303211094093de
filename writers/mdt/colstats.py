"""The metadata table's ``column_stats``, ``partition_stats`` and ``bloom_filters`` partitions,
kept true by every morlog commit (spec/mdt.md §8-§11).

Keepers (:class:`~morlog.writers.mdt.keeper.PartitionKeeper`) registered in
``mdt_writer.KEEPERS``; their records go into the same MDT delta commit as ``files``:

- :class:`ColumnStatsKeeper` (``HoodieTableMetadataUtil.convertMetadataToColumnStatsRecords``):
  one type-3 record per indexed column of every data file the commit wrote (Parquet base
  files: footer statistics; log files: the records of the commit's data blocks);
- :class:`PartitionStatsKeeper` (``convertMetadataToPartitionStatRecords``): one type-6
  record per indexed column of every partition the commit wrote, the statistics of the
  partition's latest file slices (the commit's files, the others' from ``column_stats``),
  ``isTightBound`` true;
- :class:`BloomFiltersKeeper` (``convertMetadataToBloomFilterRecords``): one type-4 record
  per new base file with the bloom filter of its footer.

A rollback writes nothing into these partitions: Hudi rolls the MDT delta commit back whole
and converts a rollback's metadata into ``files`` records only
(``HoodieTableMetadataUtil.convertMetadataToRecords(HoodieRollbackMetadata)``: "All other
partitions are handled by actual rollback of the deltacommit").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

import morlog.config as conf
from morlog.logformat.avroschema import avro_to_arrow_schema
from morlog.logformat.constants import BlockType, HeaderKey
from morlog.logformat.errors import (
    FormatError,
    UnsupportedSettingError,
    UnsupportedVersionError,
    UsageError,
)
from morlog.logformat.mdt_records import (
    TYPE_BLOOM_FILTER,
    TYPE_COLUMN_STATS,
    TYPE_PARTITION_STATS,
)
from morlog.logformat.naming import BaseFileName, LogFileName
from morlog.readers import column_stats as cs
from morlog.readers.logfile import LogFileReader
from morlog.readers.properties import read_properties
from morlog.readers.table import Table
from morlog.writers.mdt.keeper import CommitContext, PartitionKeeper

#: ``MetadataPartitionType`` partition paths
COLUMN_STATS = "column_stats"
PARTITION_STATS = "partition_stats"
BLOOM_FILTERS = "bloom_filters"
#: ``HoodieIndexConfig.BLOOM_FILTER_TYPE`` and its default
BLOOM_TYPE_KEY = conf.BLOOM_FILTER_TYPE
DEFAULT_BLOOM_TYPE = "DYNAMIC_V0"
#: Parquet footer keys of a base file's bloom filter (``HoodieAvroWriteSupport``)
_BLOOM_FOOTER_KEYS = (b"org.apache.hudi.bloomfilter", b"com.uber.hoodie.bloomfilter")
_DATA_BLOCKS = (BlockType.AVRO_DATA, BlockType.PARQUET_DATA)

if TYPE_CHECKING:
    from morlog.writers.mdt.writer import MetadataTable


class _Commit:
    """What the keepers of one commit share: the data table's settings and the column ranges
    of the files the commit wrote (computed once)."""

    def __init__(self, mdt: MetadataTable, ctx: CommitContext,
                 table: Table | None = None) -> None:
        self.mdt = mdt
        self.ctx = ctx
        self.table = table if table is not None else Table(mdt.data_location)
        self.storage = self.table.storage
        self.props = self.table.config.props
        self.version = self.table.version
        self.index_defs = self._index_defs()
        cdef = self.index_defs.get(COLUMN_STATS)
        #: index version V2 (Hudi 1.1, table version 9): ``valueType`` and the primitive
        #: wrappers (``HoodieIndexVersion.getCurrentVersion`` unless the definition says)
        self.v2 = (str(cdef["version"]).upper() != "V1" if cdef and cdef.get("version")
                   else self.version >= 9)
        self.pv2 = self.version >= 9
        schema = self.table.config.get(conf.TABLE_CREATE_SCHEMA)
        if not schema:
            raise UsageError("the table has no hoodie.table.create.schema, which column "
                             "statistics need", path=self.table.config.path)
        create = schema
        schema = _evolved(create, ctx.schema if ctx is not None else None)
        self.types = {f.name: f.type for f in self.table.arrow_schema()}
        self.types.update((f.name, f.type) for f in self.table.schema()
                          if f.name not in self.types)  # columns earlier commits added
        if ctx is not None and ctx.schema:
            self.types.update((f.name, f.type) for f in avro_to_arrow_schema(ctx.schema))
        #: the index definition's columns when this commit changes them (rewritten with
        #: the commit, as Hudi's ``updateColumnsToIndexWithColStats``); None: unchanged
        self.redefined: list[str] | None = None
        listed = [str(c) for c in (cdef or {}).get("sourceFields") or []]
        if listed and listed == cs.columns_to_index(
                self.props, _evolved(create, _latest_schema(self.table)), None, v2=self.v2):
            # the definition holds the columns Hudi's rule chose (the first 32, or the
            # column list): Hudi recomputes them from every commit's schema
            # (HoodieColumnStatsIndexUtils.updateColsToIndex), so a new column is indexed
            # by the commit that adds it
            self.columns = cs.columns_to_index(self.props, schema, None, v2=self.v2)
            if self.columns != listed:
                self.redefined = self.columns
        elif listed:
            # an explicit list: its columns as the table has them (a listed column the
            # table does not have yet is indexed from the commit that adds it)
            self.columns = [c for c in listed if c in self.types]
        else:
            self.columns = cs.columns_to_index(self.props, schema, cdef, v2=self.v2)
        missing = [c for c in self.columns if c not in self.types]
        if missing:
            raise UsageError("morlog computes column statistics of top-level columns of the "
                             "table schema only", actual=missing, path=self.table.config.path)
        self._ranges: dict[str, list[cs.ColumnRange]] | None = None

    def _index_defs(self) -> dict[str, Any]:
        rel = self.props.get(cs.INDEX_DEFS_PATH_KEY)
        if not rel:
            return {}
        path = self.storage.join(self.table.path, rel)
        if not self.storage.isfile(path):
            return {}
        try:
            parsed = json.loads(self.storage.read(path).decode("utf-8"))
        except ValueError as exc:
            raise UsageError("the table's index definitions are not JSON", path=path) from exc
        defs = parsed.get("indexDefinitions") if isinstance(parsed, dict) else None
        return defs if isinstance(defs, dict) else {}

    def file_path(self, partition: str, name: str) -> str:
        return self.storage.join(self.table.path, partition, name) if partition else \
            self.storage.join(self.table.path, name)

    @property
    def ranges(self) -> dict[str, list[cs.ColumnRange]]:
        """partition -> the ranges of every file the commit wrote there."""
        if self._ranges is None:
            out: dict[str, list[cs.ColumnRange]] = {}
            for part, files in sorted(self.ctx.written.items()):
                for name in sorted(_data_files(files)):  # per file
                    out.setdefault(part, []).extend(self.file_ranges(part, name))
            self._ranges = out
        return self._ranges

    def file_ranges(self, partition: str, name: str) -> list[cs.ColumnRange]:
        """The ranges of one data file (``readColumnRangeMetadataFrom``: Parquet base files
        and log files; other formats get none)."""
        path = self.file_path(partition, name)
        if LogFileName.matches(name):
            return cs.table_ranges(self._log_records(path), name, self.columns, self.types)
        if BaseFileName.matches(name) and name.endswith(".parquet"):
            pf = pq.ParquetFile(self.storage.open_input(path))
            return cs.parquet_ranges(pf.metadata, pf.schema_arrow, name, self.columns)
        return []

    def _log_records(self, path: str) -> pa.Table:
        """The records of the commit's data blocks in a log file (what its
        ``HoodieAppendHandle`` wrote), indexed columns only."""
        parts = []
        with LogFileReader(self.storage.source(path)) as reader:
            for block in reader:  # per block
                if block.block_type not in _DATA_BLOCKS:
                    continue
                if block.header.get(HeaderKey.INSTANT_TIME) != self.ctx.instant:
                    continue
                t = block.to_arrow()
                cols = [c for c in self.columns if c in t.column_names]
                t = t.select(cols)
                parts.append(t.cast(pa.schema([pa.field(c, self.types.get(c, t.schema.field(c)
                                                                          .type))
                                               for c in cols])))
        if not parts:
            return pa.table({})
        return pa.concat_tables(parts, promote_options="default")


def _latest_schema(table: Table) -> str | None:
    """The Avro schema the table's latest completed write recorded (its
    ``extraMetadata.schema``), None when none did."""
    tl = table.timeline
    for inst in reversed(tl.completed(frozenset({"commit", "deltacommit", "replacecommit"}))):
        try:
            extra = tl.metadata(inst).get("extraMetadata")
        except (FormatError, UnsupportedVersionError):
            continue
        text = extra.get("schema") if isinstance(extra, dict) else None
        if isinstance(text, str) and text.strip():
            return text
    return None


def redefine_columns(mdt: MetadataTable, c: _Commit) -> None:
    """Rewrite the ``column_stats`` index definition's ``sourceFields`` to the columns the
    commit indexed (Hudi's ``createOrUpdateColumnStatsIndexDefinition`` after a commit whose
    schema changed them); the other definitions are kept as they are."""
    if c.redefined is None:
        return
    rel = c.props.get(cs.INDEX_DEFS_PATH_KEY)
    if not rel:
        return
    path = c.storage.join(c.table.path, rel)
    doc = json.loads(c.storage.read(path).decode("utf-8"))
    doc["indexDefinitions"][COLUMN_STATS]["sourceFields"] = list(c.redefined)
    mdt.store.replace(path, (json.dumps(doc, indent=2, separators=(",", " : "))
                             + "\n").encode("utf-8"), sync=mdt.fsync)


def _evolved(create: str, commit: str | None) -> str:
    """The schema whose columns the statistics cover: the create schema's fields (their
    order kept), with the types the commit's schema gives them, then the fields a later
    write added (the commit that adds a column indexes it, as Hudi's
    ``HoodieTableMetadataUtil.getColumnsToIndex`` reads the writer's schema)."""
    if not commit:
        return create
    try:
        c, w = json.loads(create), json.loads(commit)
        cf, wf = list(c["fields"]), list(w["fields"])
    except (ValueError, KeyError, TypeError):
        return create
    latest = {f.get("name"): f for f in wf if isinstance(f, dict)}
    names = {f.get("name") for f in cf if isinstance(f, dict)}
    fields = [latest.get(f.get("name"), f) if isinstance(f, dict) else f for f in cf]
    fields += [f for f in wf if isinstance(f, dict) and f.get("name") not in names]
    return json.dumps({**c, "fields": fields})


_LAST: list[_Commit] = []


def _commit(mdt: MetadataTable, ctx: CommitContext) -> _Commit:
    """The shared state of ``ctx`` (one commit at a time: the last one is kept)."""
    if _LAST and _LAST[0].ctx is ctx and _LAST[0].mdt is mdt:
        return _LAST[0]
    c = _Commit(mdt, ctx)
    _LAST[:] = [c]
    return c


def _check_settings(table: Table, partition: str) -> None:
    """Plan time: the settings column statistics need (a create schema, top-level indexed
    columns, ``column_stats`` listed for ``partition_stats``), or an
    :class:`UnsupportedSettingError` before anything is written."""
    try:
        _Commit(None, None, table)  # type: ignore[arg-type]
        if partition == PARTITION_STATS and COLUMN_STATS not in _listed(table.config.props):
            raise UsageError("partition_stats needs the column_stats partition (Hudi: "
                             "\"Column stats partition must be enabled to generate partition "
                             "stats\")")
    except UsageError as exc:
        raise UnsupportedSettingError(
            f"morlog cannot keep the metadata table's {partition} partition true: "
            f"{exc.message}; set {_SWITCH[partition]}=false to drop it as Hudi's writer does",
            property=conf.METADATA_PARTITIONS,
            value=table.config.get(conf.METADATA_PARTITIONS),
            path=table.config.path) from None


#: Hudi's write option that turns each partition off
_SWITCH = {COLUMN_STATS: conf.METADATA_COLUMN_STATS_ENABLE,
           PARTITION_STATS: conf.METADATA_PARTITION_STATS_ENABLE}


class ColumnStatsKeeper(PartitionKeeper):
    """``column_stats``: ``HoodieMetadataPayload.createColumnStatsRecords`` of every file the
    commit wrote; nothing on a rollback."""

    partition = COLUMN_STATS

    def check(self, table: Table) -> None:
        _check_settings(table, self.partition)

    def records(self, mdt: MetadataTable, ctx: CommitContext
                ) -> tuple[list[dict[str, Any]], list[str]]:
        if ctx.clean:
            return self._tombstones(mdt, ctx), []
        if not any(ctx.written.values()):
            return [], []
        c = _commit(mdt, ctx)
        recs = [cs.metadata_record(cs.column_stats_key(r.column, part, r.file_name),
                                   TYPE_COLUMN_STATS, cs.stats_metadata(r, v2=c.v2))
                for part, ranges in c.ranges.items() for r in ranges]  # per file and column
        redefine_columns(mdt, c)
        return recs, []

    @staticmethod
    def _tombstones(mdt: MetadataTable, ctx: CommitContext) -> list[dict[str, Any]]:
        """A clean's records (``convertMetadataToColumnStatsRecords(HoodieCleanMetadata)``,
        Hudi 1.0 and 1.1): per file it attempted (base and log files) and indexed column, a
        tombstone of stub statistics (``HoodieColumnRangeMetadata.stub``: no min/max, counts
        and sizes -1, value type NULL in index version V2) with ``isDeleted`` true."""
        if not any(ctx.deleted.values()):
            return []
        c = _commit(mdt, ctx)
        return [cs.metadata_record(
                    cs.column_stats_key(col, part, name), TYPE_COLUMN_STATS,
                    cs.stats_metadata(cs.ColumnRange(name, col, None, None, -1, -1, -1, -1),
                                      v2=c.v2, is_deleted=True))
                for part, names in sorted(ctx.deleted.items()) for name in names  # per file
                for col in c.columns]


class PartitionStatsKeeper(PartitionKeeper):
    """``partition_stats``: per partition the commit wrote and indexed column, the merged
    statistics of the partition's latest file slices (including the commit's files), read
    from ``column_stats`` for the files the commit did not write, ``isTightBound`` true
    (``convertMetadataToPartitionStatRecords`` with ``isShouldScanColStatsForTightBound``)."""

    partition = PARTITION_STATS

    def check(self, table: Table) -> None:
        _check_settings(table, self.partition)

    def records(self, mdt: MetadataTable, ctx: CommitContext
                ) -> tuple[list[dict[str, Any]], list[str]]:
        if not any(ctx.written.values()):
            return [], []
        c = _commit(mdt, ctx)
        if COLUMN_STATS not in _listed(c.props):
            raise UsageError("the metadata table's partition_stats needs its column_stats "
                             "partition (Hudi: \"Column stats partition must be enabled to "
                             "generate partition stats\")", path=mdt.path)
        live = cs.merge_records(mdt.partition_records(COLUMN_STATS))
        recs: list[dict[str, Any]] = []
        for part in sorted(p for p, f in ctx.written.items() if _data_files(f)):
            data = _data_files(ctx.written[part])
            names = _latest_slice_files(c.table, part, data)
            new = {r.file_name for r in c.ranges.get(part, [])} | set(data)
            pid = cs.hash_id(cs.partition_identifier(part))
            old: dict[str, list[cs.ColumnRange]] = {}
            for key, stats in live.items():  # per (file, column) of the MDT
                if key[12:24] != pid or stats.get("fileName") not in names \
                        or stats.get("fileName") in new:
                    continue
                col = str(stats.get("columnName"))
                old.setdefault(col, []).append(cs.range_of_stats(stats, c.types.get(col)))
            mine: dict[str, list[cs.ColumnRange]] = {}
            for r in c.ranges.get(part, []):
                mine.setdefault(r.column, []).append(r)
            for col in c.columns:
                merged = cs.merge_ranges([*mine.get(col, []), *old.get(col, [])], part)
                if merged is None:
                    continue
                recs.append(cs.metadata_record(
                    cs.partition_stats_key(col, part), TYPE_PARTITION_STATS,
                    cs.stats_metadata(merged, v2=c.pv2, is_tight_bound=True)))
        return recs, []


def _listed(props: Mapping[str, str]) -> set[str]:
    return {p.strip() for key in (conf.METADATA_PARTITIONS,
                                  conf.METADATA_PARTITIONS_INFLIGHT)
            for p in (props.get(key) or "").split(",") if p.strip()}


def _data_files(files: Mapping[str, int]) -> dict[str, int]:
    """The data files of a commit's written files: not its CDC log files, which the files
    partition lists (cdcStats) but no column statistics cover (Hudi's column stats come
    from the write stats' paths only)."""
    return {n: size for n, size in files.items()
            if not (n.endswith(".cdc") or n.endswith("-cdc"))}


def _latest_slice_files(table: Table, partition: str, written: Mapping[str, int]) -> set[str]:
    """The files of the partition's latest file slices once the commit's files are in
    (``getPartitionLatestFileSlicesIncludingInflight``): a new base file starts its file
    group's new slice, a new log file joins its group's latest slice."""
    slices: dict[str, set[str]] = {}
    for s in table.file_slices(partition=partition):
        slices[s.file_id] = {*([s.base_file] if s.base_file else []), *s.log_files}
    for name in sorted(written, key=lambda n: LogFileName.matches(n)):
        if LogFileName.matches(name):
            slices.setdefault(LogFileName.parse(name).file_id, set()).add(name)
        elif BaseFileName.matches(name):
            slices[BaseFileName.parse(name).file_id] = {name}
    return {n for names in slices.values() for n in names}


class BloomFiltersKeeper(PartitionKeeper):
    """``bloom_filters``: ``HoodieMetadataPayload.createBloomFilterMetadataRecord`` of every
    base file the commit wrote (log files change no bloom filter), with the Base64 text of
    the footer's filter, the writer's filter type and the commit's instant."""

    partition = BLOOM_FILTERS

    def records(self, mdt: MetadataTable, ctx: CommitContext
                ) -> tuple[list[dict[str, Any]], list[str]]:
        if ctx.clean:
            # convertMetadataToBloomFilterRecords(HoodieCleanMetadata): per deleted base
            # file a record with an empty type and filter, the clean's instant, isDeleted
            return [cs.metadata_record(
                        cs.bloom_filter_key(part, name), TYPE_BLOOM_FILTER,
                        bloom={"type": "", "timestamp": ctx.instant, "bloomFilter": b"",
                               "isDeleted": True})
                    for part, names in sorted(ctx.deleted.items())
                    for name in names if BaseFileName.matches(name)], []  # per file
        if not any(ctx.written.values()):
            return [], []
        loc = mdt.data_location
        storage = loc.storage
        props = _data_props(mdt)
        kind = props.get(BLOOM_TYPE_KEY) or DEFAULT_BLOOM_TYPE
        recs = []
        for part, files in sorted(ctx.written.items()):
            for name in sorted(files):  # per file
                if not (BaseFileName.matches(name) and name.endswith(".parquet")):
                    continue
                path = storage.join(loc.path, part, name) if part else storage.join(loc.path,
                                                                                    name)
                meta = pq.ParquetFile(storage.open_input(path)).metadata.metadata or {}
                text = next((meta[k] for k in _BLOOM_FOOTER_KEYS if k in meta), None)
                if text is None:
                    continue  # Hudi: "Failed to read bloom filter", no record
                recs.append(cs.metadata_record(
                    cs.bloom_filter_key(part, name), TYPE_BLOOM_FILTER,
                    bloom={"type": kind, "timestamp": ctx.instant, "bloomFilter": bytes(text),
                           "isDeleted": False}))
        return recs, []


def _data_props(mdt: MetadataTable) -> dict[str, str]:
    loc = mdt.data_location
    return read_properties(loc.storage, loc.path)[0]


def column_stats(mdt: MetadataTable, partition: str = COLUMN_STATS) -> pa.Table:
    """The live ``column_stats`` (or ``partition_stats``) of the MDT as an Arrow table
    (:func:`morlog.readers.column_stats.live_column_stats`): committed MDT instants only,
    records of one key merged as ``mergeColumnStatsRecords``, tombstones dropped."""
    return cs.live_column_stats(mdt.partition_records(partition))


__all__ = ["BLOOM_FILTERS", "COLUMN_STATS", "PARTITION_STATS", "BloomFiltersKeeper",
           "ColumnStatsKeeper", "PartitionStatsKeeper", "column_stats"]
