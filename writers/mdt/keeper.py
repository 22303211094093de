"""The keepers of the metadata table's partitions: what one data commit adds to each MDT
partition (:class:`PartitionKeeper`, given a :class:`CommitContext`), and the keepers of
``files`` and ``record_index``; the index partitions' keepers subclass it in
:mod:`~morlog.writers.mdt.colstats` and :mod:`~morlog.writers.mdt.secondary`, and
:mod:`~morlog.writers.mdt.writer` writes what they return."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from morlog.logformat.errors import UsageError
from morlog.logformat.hfile.record_index import RecordIndexEntries
from morlog.logformat.mdt_records import (
    files_partition_records,
    instant_millis,
    partition_key,
    record_index_record,
)
from morlog.readers.table import Table
from morlog.writers.core.commit import RecordChanges

FILES = "files"

if TYPE_CHECKING:
    from morlog.writers.mdt.writer import MetadataTable


#: ``MetadataPartitionType.RECORD_INDEX.getPartitionPath()``
RECORD_INDEX = "record_index"


def key_to_file_group_index(key: str, count: int) -> int:
    """``HoodieTableMetadataUtil.mapRecordKeyToFileGroupIndex``: Java's ``String.hashCode``
    over UTF-16 code units in 32-bit arithmetic, then ``abs(abs(h) % count)``."""
    h = 0
    data = key.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    a = abs(h) if h != -(1 << 31) else h  # Math.abs(Integer.MIN_VALUE) stays negative
    r = abs(a) % count if a >= 0 else -(abs(a) % count)  # Java's % keeps the sign
    return abs(r)


@dataclasses.dataclass(frozen=True)
class CommitContext:
    """What one data commit (or rollback) changed, as the keepers of MDT partitions see it."""

    #: the data instant (the MDT delta commit has the same time)
    instant: str
    #: data partition -> {file name: its size now} of every data file written or appended to
    written: Mapping[str, Mapping[str, int]]
    #: data partition -> names of data files deleted (a rollback's)
    deleted: Mapping[str, Sequence[str]]
    #: the commit's key-level changes, computed on demand (None: the writer does not know)
    changes: Callable[[], RecordChanges] | None = None
    #: the commit rewrote rows without changing any (a compaction): what indexes record
    #: about keys and values stays (Hudi updates neither the record index nor secondary
    #: indexes for a compaction, spec/services.md §6)
    rewrite: bool = False
    #: a clean (``HoodieCleanMetadata``): ``deleted`` holds every file it attempted per
    #: cleaned partition (``deletePathPatterns``, even when empty); ``files`` gets Hudi's
    #: clean records and ``column_stats`` / ``bloom_filters`` tombstones
    #: (``HoodieTableMetadataUtil.convertMetadataToRecords(HoodieCleanMetadata)``,
    #: spec/services.md §6)
    clean: bool = False
    #: the data partitions a clean deleted whole (``isPartitionDeleted``)
    partitions_deleted: Sequence[str] = ()
    #: the Avro schema (JSON text) the data commit records; None: the table's latest
    #: (a write that adds a column records a schema the timeline does not show yet)
    schema: str | None = None


class PartitionKeeper:
    """Keeps one MDT partition true: the records (and deleted keys) a data commit adds to it.
    Subclasses set :attr:`partition` and implement :meth:`records`."""

    #: the MDT partition (directory) this keeper writes
    partition: str = ""

    def records(self, mdt: MetadataTable, ctx: CommitContext
                ) -> tuple[list[dict[str, Any]], list[str]]:  # pragma: no cover - interface
        """(``HoodieMetadataRecord`` dicts, deleted MDT keys) of ``ctx``."""
        raise NotImplementedError

    def entries(self, mdt: MetadataTable, ctx: CommitContext
                ) -> tuple[RecordIndexEntries, pa.Array] | None:
        """The column-wise form of :meth:`records` (entries, deleted MDT keys), for keepers
        whose records are all alike but for a few columns; None: this keeper has only
        :meth:`records`."""
        return None

    def file_group_index(self, key: str, count: int) -> int:
        """The file group of ``count`` holding MDT key ``key``."""
        return key_to_file_group_index(key, count)

    def check(self, table: Table) -> None:
        """Refuse (``UnsupportedSettingError``, at plan time: before anything is written) a
        table whose partition this keeper cannot keep true; by default every table."""


class FilesKeeper(PartitionKeeper):
    """``files``: ``HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords`` (one
    record per touched partition, ``__all_partitions__``) and tombstones of deleted files."""

    partition = FILES

    def records(self, mdt: MetadataTable, ctx: CommitContext
                ) -> tuple[list[dict[str, Any]], list[str]]:
        if ctx.clean:
            return self._clean_records(ctx)
        return files_partition_records(
            {p: dict(f) for p, f in ctx.written.items()},
            {p: list(n) for p, n in ctx.deleted.items() if n}), []

    @staticmethod
    def _clean_records(ctx: CommitContext) -> tuple[list[dict[str, Any]], list[str]]:
        """``convertMetadataToFilesPartitionRecords(HoodieCleanMetadata)``: per cleaned
        partition one record with a tombstone for each attempted file
        (``createPartitionFilesRecord(partition, {}, deletePathPatterns)``), or, for a
        partition deleted whole, a delete of its key (an empty payload); the partition-list
        record only when partitions were deleted (``createPartitionListRecord(.., true)``)."""
        gone = [p for p in dict.fromkeys(ctx.partitions_deleted) if p in ctx.deleted]
        kept = {p: list(n) for p, n in ctx.deleted.items() if p not in gone}
        recs = files_partition_records({}, kept, new_partitions=[],
                                       deleted_partitions=gone) if kept or gone else []
        return recs, [partition_key(p) for p in gone]


class RecordIndexKeeper(PartitionKeeper):
    """``record_index``: the commit's key changes reduced per key as Hudi does
    (``HoodieTableMetadataUtil.reduceByKeys``: an insert wins over a delete of the same key,
    one of two deletes is kept, two inserts of one key are refused: the record index maps
    each key to one location)."""

    partition = RECORD_INDEX

    def records(self, mdt: MetadataTable, ctx: CommitContext
                ) -> tuple[list[dict[str, Any]], list[str]]:
        """The per-record form of :meth:`entries` (the reference: a dict per key)."""
        if ctx.rewrite:
            return [], []
        if ctx.changes is None:
            _check_no_writes(mdt, ctx)
            return [], []
        changes = ctx.changes()
        millis = instant_millis(ctx.instant, utc=mdt.utc)
        inserted: dict[str, tuple[str, str]] = {}
        for key, part, fid in changes.inserted:
            if key in inserted and inserted[key] != (part, fid):
                raise _two_inserts(key, inserted[key], (part, fid))
            inserted[key] = (part, fid)
        recs = [record_index_record(key, part, fid, millis)
                for key, (part, fid) in inserted.items()]
        dels = [k for k in dict.fromkeys(k for k, _ in changes.deleted) if k not in inserted]
        return recs, dels

    def entries(self, mdt: MetadataTable, ctx: CommitContext
                ) -> tuple[RecordIndexEntries, pa.Array]:
        """:meth:`records` column-wise: the reduced inserts (one entry per key; order not
        significant, the HFile sorts them) and the deleted keys (first appearance order,
        inserted keys left out), with Arrow kernels instead of a dict per key."""
        if ctx.rewrite:
            return RecordIndexEntries.empty(), pa.array([], pa.string())
        if ctx.changes is None:
            _check_no_writes(mdt, ctx)
            return RecordIndexEntries.empty(), pa.array([], pa.string())
        ins, dels = ctx.changes().tables()
        millis = instant_millis(ctx.instant, utc=mdt.utc)
        keys, parts, fids = (ins.column(c).combine_chunks().cast(pa.string())
                             for c in ("key", "partition", "file_id"))
        entries = _reduce_inserts(keys, parts, fids, millis)
        gone = dels.column("key").combine_chunks().cast(pa.string())
        if len(gone):
            codes = pc.dictionary_encode(gone).indices.to_numpy(zero_copy_only=False)
            _, first = np.unique(codes, return_index=True)
            gone = gone.take(pa.array(np.sort(first)))  # each key once, first appearance
            if len(entries):
                gone = gone.filter(pc.invert(pc.is_in(gone, value_set=entries.keys)))
        return entries, gone


def _check_no_writes(mdt: MetadataTable, ctx: CommitContext) -> None:
    if any(ctx.written.values()):
        raise UsageError("this write does not report its key changes, which the "
                         "metadata table's record_index partition needs", path=mdt.path)


def _two_inserts(key: str, first: tuple[str, str], other: tuple[str, str]) -> UsageError:
    return UsageError(
        "two records of one key in a commit (Hudi: \"Two HoodieRecord updates to "
        "RLI is seen for same record key\"): a table with a record index holds "
        "each key once", actual=(key, first, other))


def _reduce_inserts(keys: pa.Array, parts: pa.Array, fids: pa.Array,
                    millis: int) -> RecordIndexEntries:
    """``reduceByKeys`` of inserts column-wise: one entry per key (its first); a key inserted
    at two locations raises the error the per-record path raises for its first such row."""
    n = len(keys)
    if n == 0:
        return RecordIndexEntries(keys, parts, fids, millis)
    order = pc.sort_indices(keys.cast(pa.large_binary())).to_numpy()  # stable
    ks = keys.take(pa.array(order))
    start = np.ones(n, dtype=bool)
    if n > 1:
        start[1:] = ~np.asarray(pc.equal(ks.slice(1), ks.slice(0, n - 1)))
    if bool(start.all()):
        return RecordIndexEntries(keys, parts, fids, millis)
    first = order[np.flatnonzero(start)][np.cumsum(start) - 1]  # each row's first row
    fi, ro = pa.array(first), pa.array(order)
    differs = np.asarray(pc.or_(pc.not_equal(parts.take(fi), parts.take(ro)),
                                pc.not_equal(fids.take(fi), fids.take(ro))))
    if bool(differs.any()):
        at = int(np.argmin(np.where(differs, order, n)))  # the earliest conflicting row
        j, f = int(order[at]), int(first[at])
        raise _two_inserts(keys[j].as_py(), (parts[f].as_py(), fids[f].as_py()),
                           (parts[j].as_py(), fids[j].as_py()))
    keep = pa.array(np.sort(order[start]))
    return RecordIndexEntries(keys.take(keep), parts.take(keep), fids.take(keep), millis)


__all__ = ["CommitContext", "FILES", "FilesKeeper", "PartitionKeeper", "RECORD_INDEX",
           "RecordIndexKeeper", "key_to_file_group_index"]
