"""Writing indexed data blocks into a file slice's logs (spec/index.md §6):
``morlog.writers.core.indexed``.

:class:`IndexedLogWriter` appends Avro-carrier or Parquet-carrier data blocks whose trailer
holds the per-block index and the slice's cumulative index. The cumulative part is a *full
checkpoint* (filter over every key of the slice, directory of every data block) every
``checkpoint_every`` data blocks or when the keys since the last checkpoint exceed
``delta_max_keys``; blocks in between carry a *delta* (filter over the keys since the
checkpoint, directory of those blocks) and a pointer to the checkpoint. A probe therefore reads
the file's tail and, at most, the checkpoint: two ranged reads.

The writer keeps the slice's key hashes in memory between appends. When it starts on a slice
that already has logs, it first reads the newest block's stored index (and its checkpoint)
through ``morlog.readers.slice_index.read_slice_index``, the reader the probe uses too:
their directories list every data block of the slice, so the state is rebuilt from two reads,
and a block's key hashes are read only when a filter needs them (the blocks since the
checkpoint for a delta; all of them, once per ``checkpoint_every`` blocks, for a full
checkpoint). When the tail cannot be trusted for that (no stored index at the newest data
block, another scope, log files the directory does not know of), it scans the logs once:
stored indexes are read from their trailers, blocks without one (Hudi's own, or a corrupt
tail's neighbours) are recomputed by the compatibility reader. It continues the newest
checkpoint when the scan confirms it, and starts with a new full checkpoint otherwise.
"""

from __future__ import annotations

import hashlib
import os
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from morlog.logformat.blocks import RECORD_KEY_FIELD, delete_block, rollback_block
from morlog.logformat.column_stats_section import StatsColumns
from morlog.logformat.constants import BlockType, CommandType, HeaderKey
from morlog.logformat.delete_content import DeleteRecord
from morlog.logformat.errors import UNUSABLE, MorlogError, UsageError
from morlog.logformat.framing import BlockFrame
from morlog.logformat.index_trailer import (
    BlockRef,
    Carrier,
    CheckpointRef,
    Cumulative,
    CumulativeKind,
    Directory,
    decode_keys,
)
from morlog.logformat.indexed_block import (
    BlockKeys,
    Placement,
    PreparedBlock,
    prepare_avro,
    prepare_avro_arrow,
    prepare_parquet,
)
from morlog.logformat.keybatch import KeyBatch
from morlog.logformat.naming import UNKNOWN_WRITE_TOKEN, LogFileName
from morlog.logformat.parquet_content import DEFAULT_COMPRESSION
from morlog.logformat.sbbf import DEFAULT_FPP, SplitBlockBloom
from morlog.logformat.virtual_keys import KeyField
from morlog.logformat.xxh64 import U64, xxh64_batch
from morlog.readers.cache import CachedSource
from morlog.readers.index import block_index, find_tail_index, has_keyed_block
from morlog.readers.logfile import LogBlock, LogFileReader
from morlog.readers.slice_index import SliceIndex, checkpoint_location, read_slice_index
from morlog.readers.storage import LocalStorage, RangedSource, Storage
from morlog.writers.core.logwriter import LogFileWriter, Mode, WriteResult
from morlog.writers.core.store import WriteStore

DEFAULT_CHECKPOINT_EVERY = 8
#: Hudi's default choice of columns (``getColumnsToIndex`` without a column list)
DEFAULT_STATS_COLUMNS = StatsColumns()
DEFAULT_DELTA_MAX_KEYS = 16_384


@dataclass
class _SliceBlock:
    """A data block of the slice as the writer's state knows it."""

    ref: BlockRef
    file_name: str
    #: the block's key hashes; None until read (state rebuilt from a stored directory)
    hashes: U64 | None
    #: for full checkpoints: where their [CUMULATIVE, DIRECTORY] sections are
    checkpoint: CheckpointRef | None = None


#: reads the key hashes of a block the state knows only by its directory entry
HashLoader = Callable[[_SliceBlock], U64]


class _MergedCache:
    """The sorted, unique key hashes of a slice's blocks as a writer of this process last
    merged them (a full checkpoint), by the identity of those blocks (their directory
    entries, in order: file, offsets, sizes, key-list CRC, key count, instant, key range),
    least recently used dropped first. The next commit's writer rebuilds its state from the
    stored directory; without this it reads every block's key list and sorts every hash of
    the slice again at each full checkpoint, work that grows with the slice's logs. With it,
    it merges only the blocks after the cached ones. A hit equals what reading and merging
    those blocks gives: the same blocks (same entries), the same hashes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.items: OrderedDict[tuple[str, bytes], U64] = OrderedDict()
        self.bytes = 0
        self.lock = threading.Lock()

    def get(self, key: tuple[str, bytes]) -> U64 | None:
        with self.lock:
            found = self.items.get(key)
            if found is not None:
                self.items.move_to_end(key)
            return found

    def put(self, key: tuple[str, bytes], hashes: U64) -> None:
        cost = int(hashes.nbytes)
        if cost > self.limit:
            return
        hashes.flags.writeable = False  # shared: never changed in place
        with self.lock:
            old = self.items.pop(key, None)
            if old is not None:
                self.bytes -= int(old.nbytes)
            self.items[key] = hashes
            self.bytes += cost
            while self.bytes > self.limit and self.items:
                _, dropped = self.items.popitem(last=False)
                self.bytes -= int(dropped.nbytes)


#: bytes of merged slice hashes :class:`_MergedCache` keeps (8 per key)
MERGED_CACHE_BYTES = 256 * 1024 * 1024
_MERGED = _MergedCache(MERGED_CACHE_BYTES)


@dataclass
class SliceIndexState:
    """What the next indexed block of a file slice needs to know about the earlier ones."""

    scope: str
    entries: list[_SliceBlock] = field(default_factory=list)
    #: log files of the slice known to hold no data block in scope (a log compaction's
    #: replaced files, spec/index.md §6.5): listed in every directory, without entries
    known_files: list[str] = field(default_factory=list)
    checkpoint_at: int | None = None
    min_key: str | None = None
    max_key: str | None = None
    #: key hashes of the slice, sorted and unique (exact sizes for full checkpoints), and
    #: the blocks' hashes not merged into it yet (merged only when a checkpoint needs them)
    _merged: U64 = field(default_factory=lambda: np.zeros(0, np.uint64))
    _unmerged: list[U64] = field(default_factory=list)
    #: entries whose hashes are not read yet, and how to read them
    _lazy: list[_SliceBlock] = field(default_factory=list)
    loader: HashLoader | None = None
    #: where the slice lives (its directory), for :data:`_MERGED`; None: not cached
    cache_key: str | None = None

    def hashes_of(self, entry: _SliceBlock) -> U64:
        if entry.hashes is None:
            if self.loader is None:
                raise UsageError("slice state has a block without key hashes")
            entry.hashes = self.loader(entry)
        return entry.hashes

    @property
    def files(self) -> list[str]:
        out: list[str] = list(dict.fromkeys(self.known_files))
        for e in self.entries:
            if e.file_name not in out:
                out.append(e.file_name)
        return out

    @staticmethod
    def _merge(merged: U64, hashes: U64) -> U64:
        new = np.unique(hashes)
        if merged.size:
            pos = np.searchsorted(merged, new)
            pos[pos == merged.size] = 0
            new = new[merged[pos] != new]
        out = np.concatenate([merged, new])
        out.sort(kind="stable")  # two sorted runs: a linear-time merge
        return out

    def _prefix_ids(self) -> list[tuple[str, bytes]]:
        """Per entry, the identity of the entries up to it (for :data:`_MERGED`)."""
        h = hashlib.sha256()
        out = []
        for e in self.entries:
            r = e.ref
            h.update(repr((e.file_name, int(r.carrier), r.block_offset, r.block_size,
                           r.region_offset, r.filter_length, r.keys_length, r.keys_crc32,
                           r.key_count, r.instant, r.min_key, r.max_key)).encode())
            out.append((self.cache_key or "", h.digest()))
        return out

    def _adopt_cached(self) -> None:
        """A state rebuilt from the stored directory (nothing read yet): start from the
        merged hashes of its longest prefix that this process merged before (the previous
        commit's full checkpoint), and read only the blocks after it."""
        if (self.cache_key is None or self._unmerged or self._merged.size
                or len(self._lazy) != len(self.entries)):
            return
        ids = self._prefix_ids()
        for i in range(len(ids) - 1, -1, -1):
            found = _MERGED.get(ids[i])
            if found is not None:
                self._merged = found
                self._lazy = self._lazy[i + 1 :]
                return

    def remember(self) -> None:
        """Keep the merged hashes of every entry for the next writer of this slice in this
        process (called once they are merged: after a full checkpoint)."""
        if self.cache_key is not None and self.entries and not (self._lazy
                                                                 or self._unmerged):
            _MERGED.put(self._prefix_ids()[-1], self._merged)

    @property
    def all_hashes(self) -> U64:
        """Every key hash of the slice, sorted and unique."""
        self._adopt_cached()
        if self._lazy:
            self._unmerged.extend(self.hashes_of(e) for e in self._lazy)
            self._lazy = []
        if self._unmerged:
            self._merged = self._merge(self._merged, np.concatenate(self._unmerged))
            self._unmerged = []
        return self._merged

    def add_merged(self, entry: _SliceBlock, merged: U64) -> None:
        """:meth:`add` of an entry whose hashes ``merged`` already holds with every earlier
        entry's (:meth:`with_hashes`): the state's merged hashes are ``merged``."""
        self.add(entry)
        if entry.hashes is not None and not self._lazy and len(self._unmerged) == 1:
            self._merged = merged
            self._unmerged = []
            self.remember()

    def with_hashes(self, hashes: U64) -> U64:
        """``all_hashes`` merged with ``hashes``, without changing state."""
        return self._merge(self.all_hashes, hashes)

    def add(self, entry: _SliceBlock) -> None:
        if entry.hashes is None:
            self._lazy.append(entry)
        else:
            self._unmerged.append(entry.hashes)
        self.entries.append(entry)
        lo, hi = entry.ref.min_key, entry.ref.max_key
        if entry.ref.key_count:
            if self.min_key is None or lo.encode() < self.min_key.encode():
                self.min_key = lo
            if self.max_key is None or hi.encode() > self.max_key.encode():
                self.max_key = hi

    def since_checkpoint(self) -> list[_SliceBlock]:
        return self.entries if self.checkpoint_at is None else self.entries[
            self.checkpoint_at + 1 :]


def _filter_of_blocks(hashes: Sequence[U64], fpp: float) -> SplitBlockBloom:
    """A filter of the keys of a few blocks, sized for the sum of their (per-block unique)
    counts: an overestimate only when a key repeats inside the delta window."""
    allh = np.concatenate(list(hashes)) if hashes else np.zeros(0, np.uint64)
    return SplitBlockBloom.for_hashes(allh, fpp)


class IndexedLogWriter:
    """Appends indexed data blocks (and plain delete/rollback blocks) to one file slice.

    ``instant`` names the log files (the slice's base instant for table version 6, the delta
    commit for 8+); ``scope`` is the file slice the cumulative index belongs to (default:
    ``instant``); ``slice_log_files`` lists the slice's log files of other instants, so that
    the cumulative index covers them too.

    >>> schema = {"type": "record", "name": "trip", "fields": [
    ...     {"name": "uuid", "type": "string"}, {"name": "fare", "type": "double"}]}
    >>> w = IndexedLogWriter("logs/part", "f1-0", "20250101000000000", key_field="uuid")
    >>> res = w.append_avro([{"uuid": "k1", "fare": 1.5}], schema, "20250101000100000")
    >>> [(b.block_type.name, b.record_count()) for b in LogFileReader(res.path).blocks()]
    [('AVRO_DATA', 1)]
    """

    def __init__(self, directory: str | os.PathLike[str], file_id: str, instant: str, *,
                 write_token: str = UNKNOWN_WRITE_TOKEN, mode: Mode = "append",
                 key_field: KeyField = RECORD_KEY_FIELD, fpp: float = DEFAULT_FPP,
                 scope: str | None = None, checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY,
                 delta_max_keys: int = DEFAULT_DELTA_MAX_KEYS, fsync: bool = True,
                 slice_log_files: Sequence[str] = (), store: WriteStore | None = None,
                 state: SliceIndexState | None = None,
                 column_stats: StatsColumns | None = DEFAULT_STATS_COLUMNS) -> None:
        if checkpoint_every < 1 or delta_max_keys < 1:
            raise UsageError("checkpoint_every and delta_max_keys must be >= 1")
        self.log = LogFileWriter(directory, file_id, instant, write_token=write_token,
                                 mode=mode, fsync=fsync, store=store)
        self.key_field = key_field
        self.fpp = fpp
        self.scope = instant if scope is None else scope
        self.checkpoint_every = checkpoint_every
        self.delta_max_keys = delta_max_keys
        #: earlier log files of the same file slice under other instants (table version 8+
        #: writes one set of log files per delta commit), oldest first
        self.slice_log_files = [LogFileName.parse(os.path.basename(n)) for n in slice_log_files]
        #: given: the blocks the next indexed block's cumulative index covers (a log
        #: compaction's exact state, :func:`load_slice_state` with ``keep``); else read
        #: from the slice's logs on first use
        self._state: SliceIndexState | None = state
        #: which columns every data block keeps statistics of (its COLUMN_STATS section,
        #: spec/index.md §4.11); None: no section
        self.column_stats = column_stats

    @property
    def state(self) -> SliceIndexState:
        if self._state is None:
            own = self.log.existing()
            files = [n for n in self.slice_log_files if n not in own] + own
            self._state = load_slice_state(self.log.directory, files, scope=self.scope,
                                           key_field=self.key_field, fpp=self.fpp,
                                           storage=self.log.store.storage)
        return self._state

    # --- data blocks ----------------------------------------------------------------------

    def append_avro(self, records: Sequence[dict[str, Any]], schema: str | dict[str, Any],
                    instant: str, *, extra_header: Mapping[HeaderKey, str] | None = None,
                    sync: bool | None = None) -> WriteResult:
        prepared = prepare_avro(records, schema, instant, key_field=self._key_column(None),
                                fpp=self.fpp, extra_header=extra_header,
                                column_stats=self.column_stats)
        return self._append_indexed(prepared, sync)

    def append_avro_arrow(self, table: pa.Table | pa.RecordBatch, schema: str | dict[str, Any],
                          instant: str, *, extra_header: Mapping[HeaderKey, str] | None = None,
                          sync: bool | None = None, keys: pa.Array | None = None
                          ) -> WriteResult:
        """:meth:`append_avro` of an Arrow table's rows (the same bytes, built column-wise);
        ``keys``: the rows' record keys when they carry none (virtual keys)."""
        prepared = prepare_avro_arrow(table, schema, instant, key_field=self._key_column(keys),
                                      fpp=self.fpp, extra_header=extra_header, keys=keys,
                                      column_stats=self.column_stats)
        return self._append_indexed(prepared, sync)

    def append_parquet(self, table: pa.Table, instant: str, *,
                       schema: str | dict[str, Any] | None = None,
                       sync: bool | None = None,
                       compression: str = DEFAULT_COMPRESSION,
                       keys: pa.Array | None = None,
                       extra_header: Mapping[HeaderKey, str] | None = None) -> WriteResult:
        """A Parquet-carrier data block; ``compression``: the Parquet codec (the writer's
        ``hoodie.parquet.compression.codec``, as Hudi's Parquet log blocks use it);
        ``keys``: the rows' record keys when they carry none (virtual keys)."""
        prepared = prepare_parquet(table, instant, key_field=self._key_column(keys),
                                   schema=schema, fpp=self.fpp, compression=compression,
                                   keys=keys, extra_header=extra_header,
                                   column_stats=self.column_stats)
        return self._append_indexed(prepared, sync)

    def _key_column(self, keys: pa.Array | None) -> str:
        if isinstance(self.key_field, str):
            return self.key_field
        if keys is None:
            raise UsageError("a table without meta fields: the writer passes the record keys")
        return RECORD_KEY_FIELD

    def append_delete(self, records: Sequence[DeleteRecord] | bytes, instant: str, *,
                      schema: str | dict[str, Any] | None = None,
                      extra_header: Mapping[HeaderKey, str] | None = None) -> WriteResult:
        """Deletes leave the cumulative index as it is: deleted keys stay false positives.
        ``records``: the delete records, or delete block content encoded already."""
        return self.log.append(delete_block(records, instant, schema=schema,
                                            extra_header=extra_header))

    def append_rollback(self, instant: str, target_instant: str) -> WriteResult:
        return self.log.append(rollback_block(instant, target_instant))

    def _append_indexed(self, prepared: PreparedBlock, sync: bool | None) -> WriteResult:
        state = self.state
        own = prepared.own
        pending = state.since_checkpoint()
        full = (state.checkpoint_at is None or len(pending) + 1 >= self.checkpoint_every
                or sum(int(e.ref.key_count) for e in pending) + own.range.count
                > self.delta_max_keys)
        carrier = Carrier.AVRO if prepared.block_type == BlockType.AVRO_DATA else Carrier.PARQUET
        built: dict[str, Any] = {}
        # the cumulative filter does not depend on where the block lands: build it once
        blooms: list[SplitBlockBloom] = []
        merged: list[U64] = []  # a full checkpoint's hashes: the state's after this block

        def build(name: LogFileName, offset: int) -> list[BlockFrame]:
            file_name = str(name)
            frame, placement, probe = prepared.finish(
                offset, lambda p: self._cumulative(state, own, prepared.instant, file_name,
                                                   carrier, p, full, blooms, merged))
            built.update(file=file_name, placement=placement, frame=frame, probe=probe)
            return [frame]

        result = self.log.append_built(build, sync=sync)
        placement: Placement = built["placement"]
        ref = self._own_ref(state, own, prepared.instant, built["file"], carrier, placement)
        entry = _SliceBlock(ref, built["file"], own.hashes)
        if full:
            entry.checkpoint = self._checkpoint_ref(state, built["file"], carrier, placement,
                                                    built["probe"])
        if merged:
            state.add_merged(entry, merged[0])
        else:
            state.add(entry)
        if full:
            state.checkpoint_at = len(state.entries) - 1
        return result

    # --- cumulative sections -------------------------------------------------------------------

    def _own_ref(self, state: SliceIndexState, own: BlockKeys, instant: str, file_name: str,
                 carrier: Carrier, p: Placement) -> BlockRef:
        files = state.files + ([file_name] if file_name not in state.files else [])
        if p.region_length:
            fpart, kpart = own.filter_part(), own.keys_part()
            region = (p.region_offset, len(fpart), zlib.crc32(fpart), len(kpart),
                      zlib.crc32(kpart))
        else:
            region = (0, 0, 0, 0, 0)
        return BlockRef(files.index(file_name), carrier, p.block_offset, p.block_size,
                        *region, own.range.count, instant, own.range.min_key,
                        own.range.max_key)

    def _cumulative(self, state: SliceIndexState, own: BlockKeys, instant: str, file_name: str,
                    carrier: Carrier, p: Placement, full: bool,
                    blooms: list[SplitBlockBloom],
                    merged: list[U64] | None = None) -> tuple[Cumulative, Directory]:
        files = state.files + ([file_name] if file_name not in state.files else [])
        own_ref = self._own_ref(state, own, instant, file_name, carrier, p)
        lo = min((state.min_key or own.range.min_key, own.range.min_key), key=str.encode)
        hi = max((state.max_key or own.range.max_key, own.range.max_key), key=str.encode)
        nblocks = len(state.entries) + 1
        nkeys = sum(int(e.ref.key_count) for e in state.entries) + own.range.count
        if full:
            if not blooms:
                every = state.with_hashes(own.hashes)
                if merged is not None:
                    merged.append(every)
                blooms.append(SplitBlockBloom.for_hashes(every, self.fpp))
            bloom = blooms[0]
            directory = Directory(tuple(files), tuple([_ref_among(e, files) for e in
                                                       state.entries] + [own_ref]))
            return Cumulative(CumulativeKind.FULL, self.scope, nblocks, nkeys, lo, hi,
                              bloom), directory
        pending = state.since_checkpoint()
        if not blooms:
            blooms.append(_filter_of_blocks([state.hashes_of(e) for e in pending] + [own.hashes],
                                    self.fpp))
        bloom = blooms[0]
        assert state.checkpoint_at is not None
        cp_entry = state.entries[state.checkpoint_at]
        assert cp_entry.checkpoint is not None
        cp = cp_entry.checkpoint
        cp = CheckpointRef(files.index(cp_entry.file_name), cp.carrier, cp.region_offset,
                           cp.region_length, cp.region_crc32, cp.cumulative_length)
        directory = Directory(tuple(files), tuple([_ref_among(e, files) for e in pending] +
                                                  [own_ref]))
        return Cumulative(CumulativeKind.DELTA, self.scope, nblocks, nkeys, lo, hi, bloom,
                          cp), directory

    def _checkpoint_ref(self, state: SliceIndexState, file_name: str, carrier: Carrier,
                        p: Placement, probe: bytes) -> CheckpointRef:
        files = state.files + ([file_name] if file_name not in state.files else [])
        if carrier == Carrier.AVRO:
            return CheckpointRef(files.index(file_name), carrier, p.probe_offset,
                                 p.probe_length, zlib.crc32(probe), p.cumulative_length)
        return CheckpointRef(files.index(file_name), carrier, p.block_offset, p.block_size, 0)


def _ref_among(e: _SliceBlock, files: list[str]) -> BlockRef:
    r = e.ref
    return BlockRef(files.index(e.file_name), r.carrier, r.block_offset, r.block_size,
                    r.region_offset, r.filter_length, r.filter_crc32, r.keys_length,
                    r.keys_crc32, r.key_count, r.instant, r.min_key, r.max_key)


#: which data blocks of a scan the state keeps: (log file name, block offset) -> keep?
BlockFilter = Callable[[str, int], bool]


def load_slice_state(directory: str, log_files: Sequence[LogFileName], *, scope: str,
                     key_field: KeyField = RECORD_KEY_FIELD, fpp: float = DEFAULT_FPP,
                     storage: Storage | None = None,
                     keep: BlockFilter | None = None) -> SliceIndexState:
    """Rebuild a slice's index state: from the newest block's stored index when it covers
    every data block of ``log_files``, else by scanning the log files once (compat for old
    blocks).

    The scan leaves out the blocks a morlog log compaction replaced (:func:`_undone`) and
    lists every file holding a data block in the directories
    (:attr:`SliceIndexState.known_files`). ``keep``: scan, and keep only the data blocks it
    accepts (a log compaction: the blocks neither replaced nor undone, spec/index.md §6.8);
    a new full checkpoint starts."""
    st = storage or LocalStorage()
    loader = _hash_loader(st, directory, key_field, fpp)
    if log_files and keep is None:
        fast = _state_from_tail(st, directory, log_files, scope, loader)
        if fast is not None:
            return fast
    state = SliceIndexState(scope, loader=loader)
    full_blocks: dict[tuple[str, int], CheckpointRef] = {}
    scanned: list[tuple[str, LogBlock, BlockKeys | None, Any]] = []
    for name in log_files:
        with LogFileReader(st.source(st.join(directory, str(name)))) as reader:
            for block in reader.blocks():
                if block.is_corrupt:
                    continue
                if not block.block_type.is_keyed:
                    if block.block_type in (BlockType.COMMAND, BlockType.DELETE):
                        scanned.append((str(name), block, None, None))
                    continue
                # every file holding a data block is known: its blocks are entries, or were
                # replaced by a log compaction (listed without entries, so that probes do
                # not take the file for one the index does not know)
                if str(name) not in state.known_files:
                    state.known_files.append(str(name))
                if keep is not None and not keep(str(name), block.offset):
                    continue
                keys, stored = block_index(block, key_field=key_field, fpp=fpp)
                if keys is None:
                    continue  # no record carries a key
                carrier = stored.carrier if stored is not None else Carrier.NONE
                region = (0, 0, 0, 0, 0)
                if stored is not None and stored.carrier == Carrier.AVRO:
                    region = stored.region()
                    if region[1] == 0:  # sections not laid out as a region: recompute later
                        carrier = Carrier.NONE
                if stored is not None:
                    try:
                        cp = checkpoint_location(stored, block.offset, block.size)
                    except UNUSABLE:
                        cp = None  # a damaged checkpoint is no checkpoint: later deltas
                        # are not built on it (a new full one starts)
                    if cp is not None:
                        full_blocks[(str(name), block.offset)] = cp
                ref = BlockRef(0, carrier, block.offset, block.size, *region,
                               keys.range.count, block.instant or "",
                               keys.range.min_key, keys.range.max_key)
                scanned.append((str(name), block, keys, ref))
    for fname, block, keys, ref in (scanned if keep is not None else _undone(scanned)):
        if keys is None:
            continue
        state.add(_SliceBlock(ref, fname, keys.hashes,
                              full_blocks.get((fname, block.offset))))
    if keep is None:
        _adopt_newest_checkpoint(state, st, directory, log_files)
    return state


def _undone(scanned: list[tuple[str, LogBlock, BlockKeys | None, Any]]
            ) -> list[tuple[str, LogBlock, BlockKeys | None, Any]]:
    """The scanned data blocks less those of the instants a log compaction replaced, when
    leaving them out cannot hide a live key (spec/index.md §6.8): the compaction's instant
    is targeted by no ROLLBACK command block of the slice, and either its data blocks carry
    morlog's index (a morlog log compaction, whose dead attempts are undone before any writer
    writes, ``morlog.writers.services.logcompaction``) or it wrote no data block at all (its run
    merged to deletes only: the replaced blocks hold no key live in the logs, whether it
    counts or not). So the cumulative index stays exact after log compactions. Rolled-back
    blocks stay (§6.7: the index keeps them as a superset)."""
    rolled = {b.target_instant for _, b, _, _ in scanned
              if b.block_type == BlockType.COMMAND and b.command_type == CommandType.ROLLBACK}
    indexed: dict[str, bool] = {}  # compacted instant -> all its data blocks indexed
    listed: dict[str, set[str]] = {}
    for _, block, keys, ref in scanned:
        times = block.header.get(HeaderKey.COMPACTED_BLOCK_TIMES)
        inst = block.instant or ""
        if not times or inst in rolled:
            continue
        listed.setdefault(inst, set()).update(t.strip() for t in times.split(",") if t.strip())
        if keys is not None:
            indexed[inst] = indexed.get(inst, True) and ref.carrier != Carrier.NONE
    replaced = {t for inst, times in listed.items() if indexed.get(inst, True) for t in times}
    return [x for x in scanned if x[2] is not None and (x[1].instant or "") not in replaced]


def _hash_loader(storage: Storage, directory: str, key_field: KeyField, fpp: float) -> HashLoader:
    def load(entry: _SliceBlock) -> U64:
        ref = entry.ref
        src = storage.source(storage.join(directory, entry.file_name))
        try:
            if ref.carrier == Carrier.AVRO and ref.keys_length:
                # the block's key list alone, by the range and CRC its directory entry gives
                at = ref.region_offset + ref.filter_length
                raw = src.read(at, ref.keys_length)
                if zlib.crc32(raw) == ref.keys_crc32:
                    try:
                        listed = decode_keys(raw, base=at, path=src.name)
                    except MorlogError:
                        listed = None
                    if listed is not None and len(listed) == ref.key_count:
                        return xxh64_batch(KeyBatch.of(listed))
            # other carriers, or a damaged key list: the block's index, else its records
            block = next(iter(LogFileReader(src).blocks(ref.block_offset,
                                                         ref.block_offset + ref.block_size)))
            if block.is_corrupt:
                # damaged since it was indexed (``morlog repair`` marks an undecodable block
                # corrupt): readers skip it, so none of its keys is live; the index built on
                # this state is still a superset of the live keys (design.md)
                return np.zeros(0, np.uint64)
            keys, _ = block_index(block, key_field=key_field, fpp=fpp)
        finally:
            src.close()
        if keys is None or keys.range.count != ref.key_count:
            raise MorlogError("a block listed in the slice's directory changed",
                              path=src.name, offset=ref.block_offset)
        return keys.hashes
    return load


class _Sources:
    """Opens the slice's log files by name, each once, with prefetched ranges cached."""

    def __init__(self, storage: Storage, directory: str) -> None:
        self.storage = storage
        self.directory = directory
        self.opened: dict[str, RangedSource] = {}

    def __call__(self, name: str) -> RangedSource:
        if name not in self.opened:
            self.opened[name] = CachedSource(self.storage.source(
                self.storage.join(self.directory, name)))
        return self.opened[name]

    def close(self) -> None:
        for src in self.opened.values():
            src.close()


def _state_from_tail(storage: Storage, directory: str, log_files: Sequence[LogFileName],
                     scope: str, loader: HashLoader) -> SliceIndexState | None:
    """The state from the slice's stored cumulative index (the newest data block's, and its
    checkpoint: ``morlog.readers.slice_index``), without reading the other blocks; None when
    that index cannot stand for the whole slice."""
    names = [str(n) for n in log_files]
    source = _Sources(storage, directory)
    try:
        index = read_slice_index(names, source)
        if index is None or index.cumulative.scope != scope:
            return None
        cp_ref = index.checkpoint_ref()
        if cp_ref is None:
            return None
        refs = index.block_refs()
        if len(refs) != index.cumulative.blocks or refs[-1][0] != index.tail_file or (
                refs[-1][1].block_offset != index.tail.offset):
            return None
        known = {f for f, _ in refs}
        if not known <= set(names):
            return None  # the directory names a file that is gone
        # files the directories list without entries hold no data block in scope (a log
        # compaction replaced theirs, spec/index.md §6.5)
        quiet = [f for d in index.directories for f in d.files
                 if f not in known and f in names]
        checkpoint_at = index.checkpoint_at
        # log files the directory does not know must hold no data block, unless they are
        # siblings of the tail's file (written side by side from the same earlier blocks)
        unknown = [n for n in names if n not in known and n not in quiet
                   and has_keyed_block(source(n))]
        if unknown:
            side = _siblings(names, source, index, unknown, scope)
            if side is None:
                return None
            refs, checkpoint_at, cp_ref = side
    except MorlogError:
        return None
    finally:
        source.close()
    state = SliceIndexState(scope, loader=loader, cache_key=f"{type(storage).__name__}|"
                            f"{directory}")
    state.known_files = list(dict.fromkeys(quiet))
    for f, ref in refs:
        state.add(_SliceBlock(ref, f, None))
    state.entries[checkpoint_at].checkpoint = cp_ref
    state.checkpoint_at = checkpoint_at
    return state


def _ref_id(f: str, r: BlockRef) -> tuple[Any, ...]:
    """A directory entry as a comparable value (its file by name, not by ordinal)."""
    return (f, int(r.carrier), r.block_offset, r.block_size, r.region_offset, r.filter_length,
            r.filter_crc32, r.keys_length, r.keys_crc32, r.key_count, r.instant, r.min_key,
            r.max_key)


def _siblings(names: list[str], source: Callable[[str], RangedSource], tail: SliceIndex,
              unknown: list[str], scope: str
              ) -> tuple[list[tuple[str, BlockRef]], int, CheckpointRef] | None:
    """The blocks and checkpoint of a slice whose newest data blocks were written by
    *siblings*: writers side by side (the tasks of one distributed write, spec/table.md
    §7.6), each indexing its own blocks (in one log file or several) from the same earlier
    blocks without knowing the others'. Each sibling's chain (the stored index of its newest
    block) lists the same earlier blocks first, then its own; the earlier blocks' files
    precede the siblings' in log order. The slice's blocks are then the earlier ones and
    every sibling's own, in log order, and the checkpoint to continue from is the newest one
    of a chain whose directory is exactly the blocks up to it in that order (spec/index.md
    §6.7). None when the shape does not hold (the caller scans)."""
    at_name = {n: i for i, n in enumerate(names)}  # log order
    chains: list[tuple[list[tuple[str, BlockRef]], SliceIndex]] = [(tail.block_refs(), tail)]
    for u in unknown:
        idx = read_slice_index(names[: at_name[u] + 1], source)
        if (idx is None or idx.tail_file != u or idx.cumulative.scope != scope
                or idx.checkpoint_ref() is None):
            return None
        refs_u = idx.block_refs()
        if len(refs_u) != idx.cumulative.blocks or refs_u[-1][0] != u or (
                refs_u[-1][1].block_offset != idx.tail.offset) or not (
                {f for f, _ in refs_u} <= at_name.keys()):
            return None
        chains.append((refs_u, idx))
    ids = [[_ref_id(f, r) for f, r in refs] for refs, _ in chains]
    # a writer's chain at an earlier file of its own is a prefix of its newest: keep the
    # longest chain of each writer
    keep = [i for i, a in enumerate(ids)
            if not any(j != i and len(b) > len(a) and b[:len(a)] == a
                       for j, b in enumerate(ids))]
    keep = [i for n, i in enumerate(keep) if ids[i] not in [ids[k] for k in keep[:n]]]
    if len(keep) < 2:
        return None
    common = 0
    while all(len(ids[i]) > common for i in keep) and len({ids[i][common] for i in keep}) == 1:
        common += 1
    first = chains[keep[0]][0][:common]
    own = [chains[i][0][common:] for i in keep]
    own_files = [{f for f, _ in o} for o in own]
    if any(not o for o in own) or sum(len(f) for f in own_files) != len(set().union(*own_files)):
        return None  # a writer knew another's blocks, or two wrote into one file
    if first and max(at_name[f] for f in {f for f, _ in first}) > min(
            at_name[f] for fs in own_files for f in fs):
        return None  # an earlier block's file sorts after a sibling's: not in log order
    combined = first + sorted((e for o in own for e in o),
                              key=lambda e: (at_name[e[0]], e[1].block_offset))
    every = [_ref_id(f, r) for f, r in combined]
    best: tuple[int, CheckpointRef] | None = None
    for i in keep:
        idx = chains[i][1]
        at, ref = idx.checkpoint_at, idx.checkpoint_ref()
        if ref is None or ids[i][: at + 1] != every[: at + 1]:
            continue  # its checkpoint does not list exactly the blocks before it
        if best is None or at > best[0]:
            best = (at, ref)
    if best is None:
        return None
    return combined, best[0], best[1]


def _adopt_newest_checkpoint(state: SliceIndexState, storage: Storage, directory: str,
                         log_files: Sequence[LogFileName]) -> None:
    """Adopt the newest stored checkpoint when everything after it was scanned as well."""
    if not state.entries or not log_files:
        return
    # the file of the newest data block: newer files hold command or delete blocks only
    last = state.entries[-1]
    src = storage.source(storage.join(directory, last.file_name))
    points_at: str | None = None
    try:
        tail = find_tail_index(src)
        # may read more of the file (a large index): before the source is closed
        cum = (tail.index.cumulative() if tail is not None
               and tail.offset == last.ref.block_offset else None)
        if tail is not None and cum is not None and cum.kind == CumulativeKind.DELTA:
            # the file of the checkpoint the tail continues from (named in its directory)
            files = tail.index.directory()
            cp = cum.checkpoint
            if files is not None and cp is not None and 0 <= cp.file < len(files.files):
                points_at = files.files[cp.file]
    except MorlogError:
        cum = None
    finally:
        src.close()
    if cum is not None and cum.scope == state.scope and cum.blocks != len(state.entries):
        _adopt_siblings_checkpoint(state, storage, directory, log_files)
        return
    if cum is None or cum.scope != state.scope:
        return  # blocks without an index came after it, or another scope: start afresh
    # the checkpoint the tail's own chain continues from (a full tail: itself), as the state
    # from the tail takes it; not merely the newest full section found, which sibling files
    # (spec/table.md §7.6) may hold without listing each other's blocks
    if cum.kind != CumulativeKind.DELTA:
        if last.checkpoint is not None:
            state.checkpoint_at = len(state.entries) - 1
        return
    cp = cum.checkpoint
    for i in range(len(state.entries) - 1, -1, -1):
        e = state.entries[i]
        if (cp is not None and e.checkpoint is not None and e.file_name == points_at
                and (e.checkpoint.carrier, e.checkpoint.region_offset,
                     e.checkpoint.region_length) == (cp.carrier, cp.region_offset,
                                                     cp.region_length)):
            state.checkpoint_at = i
            return


def _adopt_siblings_checkpoint(state: SliceIndexState, storage: Storage, directory: str,
                               log_files: Sequence[LogFileName]) -> None:
    """The scan's counterpart of :func:`_siblings`: when the blocks scanned are exactly the
    earlier blocks and the sibling files' own, in that order, adopt the first sibling's
    checkpoint, as the state from the tails does (both ways give the same state)."""
    names = [str(n) for n in log_files]
    source = _Sources(storage, directory)
    try:
        index = read_slice_index(names, source)
        if index is None:
            return
        known = index.files
        unknown = [n for n in names if n not in known and has_keyed_block(source(n))]
        side = _siblings(names, source, index, unknown, state.scope) if unknown else None
    except MorlogError:
        return
    finally:
        source.close()
    if side is None:
        return
    refs, at, _ = side
    if [(f, r.block_offset) for f, r in refs] != [(e.file_name, e.ref.block_offset)
                                                   for e in state.entries]:
        return
    if state.entries[at].checkpoint is not None:
        state.checkpoint_at = at
