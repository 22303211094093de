"""Hudi's replace operations: ``insert_overwrite``, ``insert_overwrite_table``,
``delete_partition``.

Each is one *replace commit* (action ``replacecommit``) through the commit protocol of
``morlog.writers.core.commit``, as Hudi writes it (``SparkInsertOverwriteCommitActionExecutor``,
``SparkInsertOverwriteTableCommitActionExecutor``, ``SparkDeletePartitionCommitActionExecutor``
in hudi-spark-client, org/apache/hudi/table/action/commit/):

- the batch's records go to *new* file groups (base files), never into existing ones;
- the completed instant's metadata is Hudi's ``HoodieReplaceCommitMetadata`` (JSON in
  timeline layout 1): the write stats of the new file groups (``partitionToWriteStats``),
  ``partitionToReplaceFileIds`` (partition -> the file ids of every file group that was live
  in it when the commit began) and ``operationType`` ``INSERT_OVERWRITE`` /
  ``INSERT_OVERWRITE_TABLE`` / ``DELETE_PARTITION``;
- readers (morlog's ``Table``, hudi-rs, Hudi) drop the replaced file groups from every
  snapshot at or after the instant; earlier snapshots (time travel) still see them. Their
  files stay until a cleaner removes them.

Which file groups are replaced: ``insert_overwrite`` the groups of the partitions the batch
has records in; ``insert_overwrite_table`` every group of the table; ``delete_partition`` the
groups of the partitions named (writing no records).

A replace commit that fails is rolled back as a delta commit is (its new base files deleted,
its pending instant removed); one a dead writer left pending is rolled back by the next
writer. The requested file is empty (Hudi's ``ClusteringUtils`` reads an empty requested
replace commit as "not a clustering"), which is also how the next writer tells morlog's
pending replace commits from Hudi's clustering plans, which it leaves alone.

Functions take an open :class:`~morlog.writers.client.MorTable`; the table's methods of the
same names call them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import morlog.config as conf
from morlog.logformat.blocks import RECORD_KEY_FIELD
from morlog.logformat.errors import UsageError
from morlog.logformat.partition_path import check_relative_partition_path
from morlog.readers.table import FileSlice, Table
from morlog.writers.core.commit import CommitResult, RecordChanges
from morlog.writers.core.tagging import global_tags

if TYPE_CHECKING:
    from morlog.writers.client import MorTable

#: Hudi's operation names (``WriteOperationType``, lower case as the data source takes them)
INSERT_OVERWRITE = "insert_overwrite"
INSERT_OVERWRITE_TABLE = "insert_overwrite_table"
DELETE_PARTITION = "delete_partition"
REPLACE_OPERATIONS = (INSERT_OVERWRITE, INSERT_OVERWRITE_TABLE, DELETE_PARTITION)


def insert_overwrite(table: MorTable, batch: pa.Table | pa.RecordBatch) -> CommitResult:
    """Replace the data of the partitions ``batch`` has records in with its records."""
    return _replace(table, _as_table(batch), INSERT_OVERWRITE, None)


def insert_overwrite_table(table: MorTable, batch: pa.Table | pa.RecordBatch
                           ) -> CommitResult:
    """Replace all the table's data with ``batch``'s records (an empty batch empties it)."""
    return _replace(table, _as_table(batch), INSERT_OVERWRITE_TABLE, None)


def delete_partitions(table: MorTable, partitions: Iterable[str]) -> CommitResult:
    """Drop every record of ``partitions`` (relative partition paths as stored, e.g.
    ``city=paris`` on a Hive-style table; a ``*`` matches within a path segment, as Hudi's
    ``hoodie.datasource.write.partitions.to.delete`` allows). A name matching no partition
    replaces nothing."""
    names = [p.strip() for p in partitions if p.strip()]
    if not names:
        raise UsageError("delete_partition needs at least one partition path",
                         path=table.uri)
    for p in names:
        check_relative_partition_path(p)
    return _replace(table, None, DELETE_PARTITION, names)


def partitions_of(table: MorTable, batch: pa.Table) -> list[str]:
    """The relative partition paths of ``batch``'s records (sorted, each once)."""
    if not batch.num_rows:
        return []
    return sorted(set(table.partition_paths(batch).to_pylist()))


def _as_table(batch: pa.Table | pa.RecordBatch) -> pa.Table:
    return batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])


def _replace(table: MorTable, batch: pa.Table | None, operation: str,
             partitions: list[str] | None) -> CommitResult:

    t0 = time.perf_counter()
    data = None if batch is None else table.validate(batch, "insert")
    keys = parts = None
    if data is not None:
        # refuses bad keys and partition values before any write
        keys, parts = table.keys_of(data)
    with table.commit(operation, action="replacecommit") as c:
        view = c.table()
        result = CommitResult(c.instant, operation, rolled_back=c.rolled_back)
        live: dict[str, list[str]] = {}
        for s in view.file_slices():
            live.setdefault(s.partition, []).append(s.file_id)
        groups = [] if data is None else _plan_groups(table, data)
        if operation == INSERT_OVERWRITE_TABLE:
            targets = list(live)
        elif operation == INSERT_OVERWRITE:
            targets = sorted({p for p, _, _ in groups})
        else:
            assert partitions is not None
            targets = _matching(partitions, list(live))
        if keys is not None and parts is not None and operation == INSERT_OVERWRITE:
            _refuse_keys_elsewhere(table, view, keys, parts, targets)
        result.replaced = {p: sorted(live[p]) for p in targets if live.get(p)}
        result.seconds["plan"] = time.perf_counter() - t0
        c.start([(p, f) for p, f, _ in groups])
        t1 = time.perf_counter()
        stats: dict[str, list[dict[str, Any]]] = {}
        for part, fid, rows in groups:
            for w in table.write_group(c.instant, part, fid, None, rows, None):
                stats.setdefault(part, []).append(w.stat(table.store, table.path))
                result.groups_touched[(part, fid)] = w.num_writes
                result.new_groups.append((part, fid))
                result.inserts += w.num_writes
                if w.created:
                    result.files_created.append(w.path)
        result.seconds["write"] = time.perf_counter() - t1
        result.seconds["total"] = time.perf_counter() - t0
        summary = {**result.summary(), conf.STAT_GROUPS_REPLACED: str(
            sum(len(v) for v in result.replaced.values()))}
        replaced_slices = [s for s in view.file_slices()
                           if s.file_id in result.replaced.get(s.partition, ())]

        def changes() -> RecordChanges:
            # the keys of the replaced groups leave the table, the new groups' keys enter it
            # (Hudi's record index: deletes for the replaced file groups' keys, reduced
            # against the inserts of the same commit, an insert winning)
            def with_cols(keys: Any, **values: str) -> pa.Table:
                n = len(keys)
                return pa.table({"key": pa.array(keys).cast(pa.string()), **{
                    k: pa.repeat(pa.scalar(v, pa.string()), n) for k, v in values.items()}})

            deleted = [with_cols(_slice_keys(table, view, s), partition=s.partition)
                       for s in replaced_slices]
            inserted = [with_cols(table.keys_of(rows)[0], partition=part, file_id=fid)
                        for part, fid, rows in groups]
            return RecordChanges.of_arrays(
                pa.concat_tables(inserted) if inserted else None,
                pa.concat_tables(deleted) if deleted else None)

        c.complete(stats, summary, replaced=result.replaced, changes=changes)
    table.table_services()
    return result


def _refuse_keys_elsewhere(table: MorTable, view: Table, keys: pa.Array, parts: pa.Array,
                           targets: list[str]) -> None:
    """With a global record index (morlog's, or Hudi's ``record_index``): a
    :class:`UsageError` when a record of an ``insert_overwrite`` batch has a key that lives
    in a partition the commit does not replace (it would live twice; spec/rli.md §4a).
    Checked before anything is written."""

    found = global_tags(view, keys, parts)
    if found is None or not found.moved.any():
        return
    tags = found.tags
    where = pa.array([g[0] for g in tags.groups] or [""], pa.string())
    at = where.take(pa.array(np.where(tags.codes >= 0, tags.codes, 0)))
    kept = np.asarray(pc.invert(pc.is_in(at, value_set=pa.array(targets, pa.string())))
                      .to_numpy(zero_copy_only=False))
    outside = np.flatnonzero(found.moved & kept)
    if outside.size:
        i = int(outside[0])
        raise UsageError(
            "the table's record index is global (a key lives in one partition): "
            f"{outside.size} record(s) of the insert_overwrite batch have keys that live in "
            f"partitions it does not replace (first {keys[i].as_py()!r}: in "
            f"{at[i].as_py()!r}, batch {parts[i].as_py()!r}); upsert them, or overwrite "
            "those partitions too", path=table.uri, actual=int(outside.size))


def _slice_keys(table: MorTable, view: Table, s: FileSlice) -> pa.Array:
    """The record keys a file slice holds now (merged: deleted keys are gone)."""
    if view.config.populate_meta_fields:
        rows = view.read_slice(s, columns=[RECORD_KEY_FIELD])
        return (pa.array([], pa.string()) if not rows.num_rows
                else rows.column(RECORD_KEY_FIELD).combine_chunks())
    rows = view.read_slice(s)
    return (pa.array([], pa.string()) if not rows.num_rows
            else table.keygen.record_keys(rows))


def _plan_groups(table: MorTable, data: pa.Table) -> list[tuple[str, str, pa.Table]]:
    """(partition, new file id, records) of every new file group: each partition's records
    in groups of at most the maximum file size (at the table's estimated record size)."""
    if data.num_rows == 0:
        return []
    paths = table.partition_paths(data)
    size = table.record_size()
    out = []
    for part in sorted(set(paths.to_pylist())):
        rows = data.filter(pc.equal(paths, part))
        start = 0
        for fid, n, _new in table.insert_bins(part, rows.num_rows, size, {}):
            out.append((part, fid, rows.slice(start, n)))
            start += n
    return out


def _matching(patterns: list[str], partitions: list[str]) -> list[str]:
    """The partitions each pattern names (``*``: any characters but ``/``; nothing else is
    special)."""
    out: list[str] = []
    for pat in patterns:
        if "*" in pat:
            rx = re.compile("[^/]*".join(re.escape(x) for x in pat.split("*")))
            out += [p for p in partitions if rx.fullmatch(p)]
        elif pat in partitions:
            out.append(pat)
    return sorted(set(out))


__all__ = ["DELETE_PARTITION", "INSERT_OVERWRITE", "INSERT_OVERWRITE_TABLE",
           "REPLACE_OPERATIONS", "delete_partitions", "insert_overwrite",
           "insert_overwrite_table", "partitions_of"]
