"""Tagging a batch through a global index (spec/rli.md): where each key of the batch lives
now, in any partition, by morlog's record index or Hudi's ``record_index`` in the metadata
table (:func:`global_tags`); which copy wins when a key moves partition
(:func:`stored_wins`), and Hudi's ``hoodie.record.index.update.partition.path``."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

import morlog.config as conf
from morlog.logformat.errors import (
    FormatError,
    MorlogError,
    StorageError,
    UsageError,
)
from morlog.logformat.partition_path import check_relative_partition_path
from morlog.logformat.virtual_keys import key_array, key_columns
from morlog.readers.lookup import KeyTagger, TagResult
from morlog.readers.record_index import (
    DamagedIndexWarning,
    enabled,
)
from morlog.readers.table import Table

#: Hudi's write option for a global record index (``HoodieIndexConfig.
#: RECORD_INDEX_UPDATE_PARTITION_PATH_ENABLE``, default ``false``): a record whose key lives in
#: another partition than the batch gives it is moved there (``true``: a delete in the old
#: partition and an insert in the new) or written where the key lives (``false``)
UPDATE_PARTITION_PATH = conf.RECORD_INDEX_UPDATE_PARTITION_PATH


UPDATE_PARTITION_PATH_DEFAULT = "false"


def update_partition_path(options: Mapping[str, str]) -> bool:
    """``hoodie.record.index.update.partition.path`` of a write's Hudi options (Hudi's
    default ``false``); another value than true or false is a :class:`UsageError`."""
    raw = str(options.get(UPDATE_PARTITION_PATH, UPDATE_PARTITION_PATH_DEFAULT)).strip()
    if raw.lower() not in ("true", "false"):
        raise UsageError(f"{UPDATE_PARTITION_PATH} must be true or false", actual=raw)
    return raw.lower() == "true"


@dataclass
class GlobalTags:
    """Where each key of a batch lives in a table whose writers keep morlog's record index
    (a global index: a key lives in one file group of the whole table). ``tags``: the file
    group of every key, wherever it is; ``moved[i]``: key ``i`` lives in another partition
    than the batch gives it."""

    tags: TagResult
    moved: npt.NDArray[np.bool_]


def global_index(table: Table) -> bool:
    """Whether ``table``'s writers tag through a global index (a key lives in one file
    group of the whole table): morlog's record index enabled, or Hudi's own global
    ``record_index`` (spec/rli.md §4a). Hudi combines a batch's duplicates by record key
    alone then, and by record key and partition path otherwise
    (``HoodieWriteHelper.deduplicateRecords``: the combine key is the record key when
    ``index.isGlobal()``, else the whole ``HoodieKey``)."""
    from morlog.readers.mdt.record_index import global_record_index

    return enabled(table) or global_record_index(table)


def global_tags(table: Table, keys: pa.Array, parts: pa.Array) -> GlobalTags | None:
    """The global tags of a batch (``keys`` and their ``parts``) when ``table`` has a
    global record index: morlog's (enabled), or Hudi's own, the metadata table's
    ``record_index`` partition listed in ``hoodie.table.metadata.partitions`` (not a Hudi
    1.1 partitioned one; spec/rli.md §4a); else None. The index answers when it covers the
    table and reads; otherwise (stale, damaged: a warning) the file probes of every
    partition do, so the answer is global either way."""
    if not global_index(table):
        return None
    morlog_index = enabled(table)
    which = "morlog's record index" if morlog_index else "the metadata table's record_index"
    try:
        tags = KeyTagger(table).tag(keys, None)
        damaged = ((tags.stats.morlog_index_shards or tags.stats.record_index_shards)
                   and not _groups_live(table, tags.groups))
        reason = "names file groups the table does not have"
    except (FormatError, StorageError) as exc:
        damaged, reason = True, f"does not read ({type(exc).__name__}: {exc})"
    if damaged:
        fix = ("'morlog rli verify' reports it, 'morlog rli build' rebuilds the index"
               if morlog_index else "rebuild the metadata table")
        warnings.warn(f"{which} of {table.location.uri} {reason} (damaged); tagging reads "
                      f"the table's files instead: {fix}", DamagedIndexWarning, stacklevel=3)
        tags = KeyTagger(table, use_morlog_index=False, use_record_index=False).tag(keys,
                                                                                    None)
    codes = tags.codes
    where = pa.array([g[0] for g in tags.groups] or [""], pa.string())
    at = where.take(pa.array(np.where(codes >= 0, codes, 0)))
    same = np.asarray(pc.equal(at, parts.cast(pa.string())).fill_null(False)
                      .to_numpy(zero_copy_only=False))
    moved = (codes >= 0) & ~same
    return GlobalTags(tags, moved)


def _groups_live(table: Table, groups: list[tuple[str, str]]) -> bool:
    """Whether every (partition, file id) the index answered is a file group of the table
    (a damaged entry may name another, or no safe path at all); lists only the partitions
    named."""
    live: set[tuple[str, str]] = set()
    for p in sorted({g[0] for g in groups}):
        try:
            if p:
                check_relative_partition_path(p)
            live |= {(s.partition, s.file_id) for s in table.file_slices(partition=p)}
        except MorlogError:
            return False
    return all(g in live for g in groups)


def stored_wins(table: Table, found: GlobalTags, batch: pa.Table,
                keys: pa.Array) -> npt.NDArray[np.bool_]:
    """Per record of ``batch``: whether a key that would move (``found.moved``) stays
    where it lives because the stored record wins the merge with it (event-time ordering:
    its ordering values, compared as a tuple, are greater; on ties the incoming record
    wins). Hudi merges the two before it moves a record
    (``HoodieIndexUtils.mergeForPartitionUpdatesAndDeletionsIfNeeded``): the merged record
    is the stored one then, and stays in its partition. Only the slices holding moving keys
    are read, only their key and ordering columns."""
    from morlog.readers.merge import EVENT_TIME

    out = np.zeros(len(keys), dtype=bool)
    spec = table.merge_spec(None)
    fields = list(spec.orderings)
    if (spec.merge_mode != EVENT_TIME or not fields or not found.moved.any()
            or any(f not in batch.column_names for f in fields)):
        return out
    tags = found.tags
    slices = {(s.partition, s.file_id): s for s in table.file_slices()}
    moving = np.flatnonzero(found.moved)
    for code in np.unique(tags.codes[moving]).tolist():
        rows = moving[tags.codes[moving] == code]
        s = slices.get(tags.groups[code])
        if s is None:
            continue
        stored = table.read_slice(s, None, [*key_columns(table.key_field), *fields])
        if stored.num_rows == 0:
            continue
        skeys = key_array(stored, table.key_field, path=table.path)
        at = pc.index_in(keys.take(pa.array(rows)), value_set=skeys)
        hit = np.asarray(at.is_valid().to_numpy(zero_copy_only=False))
        if not hit.any():
            continue
        pos = pa.array(np.asarray(at.fill_null(0).to_numpy(zero_copy_only=False))[hit])
        mine = rows[hit]
        greater = np.zeros(mine.size, dtype=bool)
        equal = np.ones(mine.size, dtype=bool)
        for f in fields:
            old = stored.column(f).take(pos)
            new = batch.column(f).take(pa.array(mine)).cast(old.type)
            gt = np.asarray(pc.greater(old, new).fill_null(False)
                            .to_numpy(zero_copy_only=False))
            eq = np.asarray(pc.equal(old, new).fill_null(False)
                            .to_numpy(zero_copy_only=False))
            greater |= equal & gt
            equal &= eq
        out[mine] = greater
    return out


__all__ = ["GlobalTags", "UPDATE_PARTITION_PATH", "UPDATE_PARTITION_PATH_DEFAULT", "global_index",
           "global_tags",
           "stored_wins", "update_partition_path"]
