"""Tagging through Hudi's own record index: the ``record_index`` partition of a data table's
metadata table (MDT), read for a batch of keys without opening any data file
(spec/mdt.md §14).

Hudi's record index (RFC-8) maps every record key of the table to its location
(``HoodieRecordIndexInfo``: partition, file id, instant) in N HFile shards, the file groups
``record-index-NNNN-0`` of the MDT partition ``record_index``. A lookup, as Hudi's
``HoodieBackedTableMetadata.readRecordIndex`` / ``getRecordsByKeys`` does it:

1. **Shard** of each key: ``HoodieTableMetadataUtil.mapRecordKeyToFileGroupIndex(key, N)``
   (Java's ``String.hashCode`` over UTF-16 code units, ``abs(abs(h) % N)``), N the number of
   the partition's file groups sorted by file id (``getPartitionLatestMergedFileSlices``);
   computed with numpy for the whole batch (``morlog.logformat.java_hash``).
2. Per shard holding keys of the batch (and only those): the latest base HFile committed on
   the MDT timeline, then the HFILE data and DELETE blocks of the slice's logs
   (``morlog.readers.mdt.read``), oldest first; the newest valid record of a key wins, a
   delete removes it, a ROLLBACK command block voids its target's blocks.
3. **Which blocks count** (``HoodieTableMetadataUtil.getValidInstantTimestamps``, applied as an
   EXACT_MATCH ``InstantRange`` to every log block): completed on the MDT timeline, and its
   instant one of: completed on the data timeline; an MDT delta commit whose instant is not
   pending (requested / inflight) on the data timeline (Hudi: "filter out any MDT instant
   that has pending corespondent dataset instant, this comes from a case that one instant
   fails to commit after MDT had been committed"); an instant a completed data-table rollback
   or restore rolled back; a completed MDT rollback or restore; an MDT delta commit of the
   initialisation instants (``00000000000000…``).

The index is global: a key lives in one (partition, file group); morlog's writers tag every
batch of a table listing it through it, wherever the key lives (:func:`global_record_index`,
``morlog.writers.core.tagging.global_tags``, spec/rli.md §4a). The lookup is as of the
latest instant only (time travel uses the bloom and range tagger, ``morlog.readers.lookup``).
A Hudi 1.1 *partitioned* record index (index definition ``record_index`` with
``isPartitioned`` true) and file groups not named ``record-index-NNNN[-0]`` are refused with
:class:`UnsupportedVersionError`; a shard missing from the sequence, or a shard that does not
decode, is a :class:`ContentError` naming the file or directory (Hudi fails the lookup too).

Cost: the HFile decoder (``morlog.logformat.hfile.codec``) walks cells one by one in Python; the
keys are then matched column-wise (``pyarrow.compute.index_in``) and only the matched values
are Avro-decoded, each distinct value once
(:func:`~morlog.logformat.hfile.record_index.record_index_locations`); the shards' answers
are merged column-wise (no Python object per key).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from morlog.config import INDEX_DEFS_PATH
from morlog.logformat.constants import BlockType
from morlog.logformat.delete_content import decode_delete_columns
from morlog.logformat.errors import (
    ContentError,
    MorlogError,
    UnsupportedVersionError,
    UsageError,
)
from morlog.logformat.hfile.codec import FI_SCHEMA, HFile, decode_hfile
from morlog.logformat.hfile.record_index import location_codes, record_index_locations
from morlog.logformat.java_hash import file_group_indexes
from morlog.readers.mdt.read import (
    MdtSlice,
    MdtView,
    listed_partitions,
    open_mdt,
    partition_slices,
    slice_blocks,
)
from morlog.readers.storage import decoder_errors
from morlog.readers.timeline import Timeline

if TYPE_CHECKING:
    from morlog.readers.table import Table

#: ``HoodieTableMetadataUtil.PARTITION_NAME_RECORD_INDEX``
RECORD_INDEX = "record_index"
#: ``MetadataPartitionType.RECORD_INDEX.getFileIdPrefix()`` + index (+ ``-0``,
#: ``HoodieTableMetadataUtil.getFileIDForFileGroup``)
_SHARD_ID = re.compile(r"record-index-(\d+)(?:-0)?")
#: ``HoodieTimeline.INIT_INSTANT_TS`` prefix of the MDT's own initialisation instants
#: (``SOLO_COMMIT_TIMESTAMP``)
SOLO_COMMIT_TIMESTAMP = "00000000000000"
#: ``HoodieTableConfig.RELATIVE_INDEX_DEFINITION_PATH``
INDEX_DEFS_PROPERTY = INDEX_DEFS_PATH


@dataclass
class IndexLookup:
    """Where each key of a batch lives according to the record index: ``codes[i]`` indexes
    ``groups`` ((partition, file id)), -1 for a key the index does not hold."""

    codes: npt.NDArray[np.int32]
    groups: list[tuple[str, str]]
    #: shards (MDT file groups) read, files read, bytes read, log blocks merged
    shards: int = 0
    files: int = 0
    bytes_read: int = 0
    blocks: int = 0
    #: per shard read: its file id
    shard_ids: list[str] = field(default_factory=list)


def record_index_listed(table: Table) -> bool:
    """Whether the table lists ``record_index`` among its ready MDT partitions."""
    return RECORD_INDEX in listed_partitions(table.config.props)


def global_record_index(table: Table) -> bool:
    """Whether the table's writers tag through a global record index of Hudi's: the
    metadata table's ``record_index`` partition is listed and is not a Hudi 1.1
    *partitioned* record index (index option ``isPartitioned``). Hudi's record index of
    table versions 8 and 9 is global (``SparkMetadataTableRecordIndex.isGlobal``: a key lives
    in one file group of the whole table; spec/rli.md §4a). An index definitions file that
    does not read counts as global: tagging then falls back to every partition's files."""
    if not record_index_listed(table):
        return False
    try:
        definition = _index_definition(table)
    except MorlogError:
        return True
    options = (definition or {}).get("indexOptions") or {}
    return str(options.get("isPartitioned", "false")).strip().lower() != "true"


def _index_definition(table: Table) -> dict[str, Any] | None:
    """The ``record_index`` entry of the table's index definitions file, if any."""
    rel = table.config.get(INDEX_DEFS_PROPERTY)
    if not rel:
        return None
    st = table.storage
    path = st.join(table.path, *[p for p in rel.strip().split("/") if p])
    if not st.isfile(path):
        return None
    try:
        defs = json.loads(st.read(path))
    except (ValueError, RecursionError) as exc:
        raise ContentError(f"index definitions are not JSON: {exc}", path=path) from None
    entry = defs.get("indexDefinitions", {}).get(RECORD_INDEX) if isinstance(defs, dict) else None
    return entry if isinstance(entry, dict) else None


def valid_instants(data: Timeline, mdt: Timeline) -> set[str]:
    """``HoodieTableMetadataUtil.getValidInstantTimestamps``: the instants whose MDT log
    blocks a reader of the MDT merges (besides being completed on the MDT timeline)."""
    pending = {i.requested for i in data.instants if not i.is_completed}
    valid = {i.requested for i in data.instants if i.is_completed}
    valid |= {i.requested for i in mdt.instants
              if i.is_completed and i.action == "deltacommit" and i.requested not in pending}
    # instants rolled back by completed data-table rollbacks and restores (Hudi: those later
    # than the earliest valid instant; a rollback older than every valid instant undid no
    # instant with a block here)
    valid |= data.rolled_back_instants()
    valid |= {i.requested for i in mdt.instants
              if i.is_completed and i.action in ("rollback", "restore")}
    valid |= {i.requested for i in mdt.instants if i.is_completed
              and i.action == "deltacommit" and i.requested.startswith(SOLO_COMMIT_TIMESTAMP)}
    return valid


class HudiRecordIndex:
    """Hudi's record index of a data table, as of the table's latest instant."""

    def __init__(self, table: Table) -> None:
        if not record_index_listed(table):
            raise UsageError("the table lists no record_index metadata partition "
                             "(hoodie.table.metadata.partitions)", path=table.config.path)
        definition = _index_definition(table)
        options = (definition or {}).get("indexOptions") or {}
        if str(options.get("isPartitioned", "false")).strip().lower() == "true":
            raise UnsupportedVersionError(
                "a partitioned record index (Hudi 1.1 index option isPartitioned) is not "
                "read by morlog", path=table.config.get(INDEX_DEFS_PROPERTY),
                expected="isPartitioned=false", actual="true")
        self.table = table
        self.view: MdtView = open_mdt(table.storage, table.path)
        self.shards: list[MdtSlice] = partition_slices(self.view, RECORD_INDEX)
        directory = table.storage.join(self.view.path, RECORD_INDEX)
        if not self.shards:
            raise ContentError("the record_index partition has no file group", path=directory)
        numbers = []
        for s in self.shards:
            m = _SHARD_ID.fullmatch(s.file_id)
            if m is None:
                raise UnsupportedVersionError("a record_index file group morlog does not know",
                                              path=directory, expected="record-index-NNNN-0",
                                              actual=s.file_id)
            numbers.append(int(m.group(1)))
        if numbers != list(range(len(numbers))):
            missing = sorted(set(range(max(numbers) + 1)) - set(numbers))
            raise ContentError("a record_index shard is missing: keys would hash to the wrong "
                               "file group", path=directory,
                               expected=f"record-index-{missing[0]:04d}-0" if missing
                               else list(range(len(numbers))), actual=numbers)
        self._valid = valid_instants(table.timeline, self.view.timeline)

    @property
    def shard_count(self) -> int:
        return len(self.shards)

    def counts(self, instant: str) -> bool:
        """Whether an MDT log block of ``instant`` counts (besides being completed on the
        MDT timeline)."""
        return instant in self._valid

    def shard_of(self, keys: pa.Array) -> npt.NDArray[np.int64]:
        """The shard (file group position) of each key."""
        return file_group_indexes(keys, len(self.shards))

    def lookup(self, keys: Sequence[str] | pa.Array) -> IndexLookup:
        arr = keys if isinstance(keys, pa.Array) else pa.array(list(keys), type=pa.string())
        arr = arr.cast(pa.string())
        if arr.null_count:
            raise UsageError("record keys must not be null")
        n = len(arr)
        codes = np.full(n, -1, dtype=np.int32)
        out = IndexLookup(codes, [])
        if n == 0:
            return out
        shard = self.shard_of(arr)
        order = np.argsort(shard, kind="stable")
        bounds = np.flatnonzero(np.diff(shard[order])) + 1
        rows: list[npt.NDArray[np.int64]] = []
        parts: list[pa.Array] = []
        fids: list[pa.Array] = []
        for chunk in np.split(order, bounds):  # one iteration per shard
            s = self.shards[int(shard[chunk[0]])]
            found = self._lookup_shard(s, arr.take(pa.array(chunk)).cast(pa.binary()), out)
            hit = found.hit()
            rows.append(chunk[hit])
            parts.append(found.partitions(hit))
            fids.append(found.file_ids(hit))
        where = np.concatenate(rows)
        if where.size:
            hit_codes, out.groups = location_codes(pa.concat_arrays(parts),
                                                   pa.concat_arrays(fids))
            codes[where] = hit_codes
        return out

    def _lookup_shard(self, s: MdtSlice, keys: pa.Array, out: IndexLookup) -> _ShardState:
        """The location of each of ``keys`` (binary) the shard holds."""
        out.shards += 1
        out.shard_ids.append(s.file_id)
        state = _ShardState(len(keys))
        st = self.view.storage
        if s.base is not None:
            try:
                data = st.read(s.base)
            except FileNotFoundError:
                raise ContentError("a record_index base file is missing", path=s.base) from None
            out.files += 1
            out.bytes_read += len(data)
            with decoder_errors(s.base, "record_index base file does not decode"):
                hf = decode_hfile(data, path=s.base)
            self._apply_hfile(hf, hf.file_info.get(FI_SCHEMA, b"").decode("utf-8", "replace"),
                              keys, state, s.base)
        try:
            blocks = slice_blocks(self.view, s, self.counts)
        except FileNotFoundError as exc:
            raise ContentError("a record_index log file is missing",
                               path=exc.filename or s.directory) from None
        out.files += len(s.logs)
        out.bytes_read += sum(len(b.content) for b in blocks)
        for b in blocks:
            out.blocks += 1
            where = b.path or s.directory
            if b.block_type == BlockType.HFILE_DATA:
                with decoder_errors(where, "record_index log block does not decode"):
                    hf = decode_hfile(b.content, base=b.offset, path=where)
                self._apply_hfile(hf, b.schema, keys, state, where)
            else:
                with decoder_errors(where, "record_index delete block does not decode"):
                    gone = pc.drop_null(decode_delete_columns(b.content, base=b.offset,
                                                                  path=where).keys)
                if len(gone):
                    hit = pc.is_in(keys, value_set=gone.cast(pa.binary())).to_numpy(
                        zero_copy_only=False)
                    state.source[hit] = -1
        return state

    @staticmethod
    def _apply_hfile(hf: HFile, schema: str, keys: pa.Array, state: _ShardState,
                     where: str) -> None:
        """Set the location of every key of ``keys`` the HFile holds (its cells' rows matched
        column-wise; only the matched values are decoded, each distinct value once)."""
        if not hf.keys:
            return
        pos = pc.index_in(keys, value_set=pa.array(hf.keys, pa.binary())).to_numpy(
            zero_copy_only=False)
        hit = np.flatnonzero(~np.isnan(pos) if pos.dtype.kind == "f" else pos >= 0)
        if hit.size == 0:
            return
        cells = pa.array(pos[hit].astype(np.int64))
        parts, fids = record_index_locations(
            pa.array(hf.values, pa.binary()).take(cells), keys.take(pa.array(hit)), schema,
            where=where)
        state.set(hit, parts, fids)


class _ShardState:
    """Where each key of a shard's batch stands while its blocks are merged: ``source[i]``
    indexes the locations set so far (-1: not held), newest last."""

    def __init__(self, n: int) -> None:
        self.source = np.full(n, -1, dtype=np.int64)
        self._parts: list[pa.Array] = []
        self._fids: list[pa.Array] = []
        self._count = 0

    def set(self, rows: npt.NDArray[np.int64], parts: pa.Array, fids: pa.Array) -> None:
        self.source[rows] = self._count + np.arange(len(rows))
        self._parts.append(parts)
        self._fids.append(fids)
        self._count += len(rows)

    def hit(self) -> npt.NDArray[np.int64]:
        return np.flatnonzero(self.source >= 0)

    def partitions(self, hit: npt.NDArray[np.int64]) -> pa.Array:
        return self._take(self._parts, hit)

    def file_ids(self, hit: npt.NDArray[np.int64]) -> pa.Array:
        return self._take(self._fids, hit)

    def _take(self, chunks: list[pa.Array], hit: npt.NDArray[np.int64]) -> pa.Array:
        if not chunks:
            return pa.array([], pa.string())
        return pa.concat_arrays(chunks).take(pa.array(self.source[hit]))


__all__ = ["RECORD_INDEX", "HudiRecordIndex", "IndexLookup", "global_record_index",
           "record_index_listed",
           "valid_instants"]
