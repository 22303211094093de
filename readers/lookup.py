"""Table lookup ("tagging"): the partition and file group of each key, or "new".

For each candidate file slice (the key's own partition when the caller knows it, else every
partition): the base file's Hudi footer (min/max key and bloom filter, where its format keeps
them: ``morlog.readers.base_files``) prunes, then the key column confirms; the slice's logs
are probed through their index (stored or recomputed, ``morlog.readers.probe``), which Hudi's
bloom index on MOR tables cannot do. Blocks of instants that failed, were rolled back or come
after the snapshot instant do not count. A key that is live in the table is never missed:
every step only removes keys that provably are not there.

A :class:`KeyTagger` works on an open :class:`~morlog.readers.table.Table` (or opens one at a
:class:`~morlog.readers.storage.TableLocation`): Spark's tagging tasks hand it the location
resolved on the driver.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from morlog.logformat.errors import (
    ContentError,
    FormatError,
    StaleIndexWarning,
    StorageError,
    UnsupportedVersionError,
    UsageError,
)
from morlog.logformat.hudi_bloom import HashChain
from morlog.logformat.keybatch import KeyBatch
from morlog.logformat.sbbf import word_masks
from morlog.logformat.virtual_keys import KeyField, key_array, key_columns
from morlog.logformat.xxh64 import xxh64_batch
from morlog.readers.mdt.record_index import HudiRecordIndex, record_index_listed

from .base_files import BaseFileReader
from .base_keys import BaseKeysFinder
from .probe import RangeTester, SliceProbe
from .slice_blocks import instant_counts
from .storage import RangedSource, Storage, TableLocation, decoder_errors
from .table import FileSlice, Table


def _in_partition(codes: npt.NDArray[np.int32], groups: list[tuple[str, str]],
                  parts: pa.Array) -> npt.NDArray[np.bool_]:
    """Per key: whether the group a global index places it in (``codes`` into ``groups``;
    -1 none) lies in the partition ``parts`` gives the key (False where it has none)."""
    where = pa.array([g[0] for g in groups] or [""], pa.string())
    at = where.take(pa.array(np.where(codes >= 0, codes, 0)))
    same = np.asarray(pc.equal(at, parts).fill_null(False).to_numpy(zero_copy_only=False))
    return same & (codes >= 0)


@dataclass
class TagStats:
    slices: int = 0
    base_footers: int = 0
    base_key_reads: int = 0
    #: base files tagged through their base-key index (no footer, no key column read)
    base_key_indexes: int = 0
    log_probes: int = 0
    reads: int = 0
    bytes_read: int = 0
    #: shards of morlog's record index read (the index answered: no data file opened)
    morlog_index_shards: int = 0
    #: record_index shards (metadata-table file groups) read when Hudi's record index
    #: tagged the batch (0: the bloom and range path); ``slices`` is 0 then
    record_index_shards: int = 0
    #: metadata-table log blocks merged by the record index lookup
    record_index_blocks: int = 0


@dataclass
class TagResult:
    """Where each key of a batch lives. Column-wise: ``codes[i]`` indexes ``groups`` (the
    (partition, file id) holding key ``i``), -1 for a key the table does not hold."""

    key_array: pa.Array
    codes: npt.NDArray[np.int32]
    groups: list[tuple[str, str]]
    stats: TagStats = field(default_factory=TagStats)
    #: keys found in more than one file group (a table Hudi's ``insert`` wrote twice):
    #: key position -> the other (partition, file id) that hold it too
    also: dict[int, list[tuple[str, str]]] = field(default_factory=dict)

    @property
    def keys(self) -> list[str]:
        return list(self.key_array.to_pylist())

    @property
    def locations(self) -> list[tuple[str, str] | None]:
        """Per key: (partition, file id), or None for a new key."""
        table = np.empty(len(self.groups) + 1, dtype=object)
        table[:-1] = self.groups
        table[-1] = None
        return list(table[self.codes].tolist())

    def file_ids(self) -> pa.Array:
        """Per key its file id, null for a new key (one Arrow take over the codes)."""
        return self._by_code(1)

    def partitions(self) -> pa.Array:
        """Per key the partition holding it, null for a new key."""
        return self._by_code(0)

    def _by_code(self, i: int) -> pa.Array:
        values = pa.array([g[i] for g in self.groups] + [None], pa.string())
        codes = np.asarray(self.codes, dtype=np.int64)
        return values.take(pa.array(np.where(codes >= 0, codes, len(self.groups))))

    def as_dict(self) -> dict[str, dict[str, str] | None]:
        return {k: None if loc is None else {"partition": loc[0], "file_id": loc[1]}
                for k, loc in zip(self.keys, self.locations, strict=True)}


class _CountingOpener:
    """Opens slice files through sources whose reads are counted."""

    def __init__(self, storage: Storage, directory: str, sources: list[RangedSource]) -> None:
        self.storage = storage
        self.directory = directory
        self.sources = sources

    def __call__(self, name: str) -> RangedSource:
        src = self.storage.source(self.storage.join(self.directory, name))
        self.sources.append(src)
        return src


class KeyTagger:
    """Finds the file group of keys across a table, as of an instant (through the index
    the table has: morlog's or Hudi's record index, else base-file footers and the logs'
    block indexes).

    >>> tagger = KeyTagger("rides")
    >>> [None if loc is None else loc[0] for loc in tagger.tag(["b", "zz"]).locations]
    ['sf', None]
    """

    def __init__(self, table: Table | TableLocation | str, as_of: str | None = None, *,
                 use_record_index: bool = True, use_morlog_index: bool = True,
                 use_base_keys: bool = True) -> None:
        """``table``: an open table, or its location or path (opened here).
        ``use_morlog_index``: tag through morlog's record index when the table enables it
        and it covers the table (latest instant only; ``morlog.readers.record_index``).
        ``use_record_index``: tag through Hudi's own record index (the metadata table's
        ``record_index`` partition, ``morlog.readers.mdt.record_index``) when the table
        lists one and the tagger is at the latest instant; False (both) forces the bloom and
        range path (verification, tests). A partitioned record index (Hudi 1.1) is not read:
        the bloom and range path tags then. ``use_base_keys``: a base file with a base-key
        index (``morlog.readers.base_keys``) is tagged through it; False: through its footer
        and key column, as Hudi's bloom index does."""
        table = table if isinstance(table, Table) else Table(table)
        self.table = table
        self.use_morlog_index = use_morlog_index and as_of is None
        self.as_of = table.resolve_instant(as_of)
        #: Hudi's record index when it tags this tagger's batches, else None
        self.record_index: HudiRecordIndex | None = None
        if use_record_index and self.as_of is None and record_index_listed(table):
            try:
                self.record_index = HudiRecordIndex(table)
            except UnsupportedVersionError:
                self.record_index = None  # a layout morlog does not read: the normal path
        self.rolled_back = table.timeline.rolled_back_instants()
        self._rules = table.merge_spec(self.as_of)
        self._base_keys = (BaseKeysFinder(table.location, table.storage) if use_base_keys
                           else None)

    @functools.cached_property
    def slices(self) -> list[FileSlice]:
        """The file slices the file probes read (listed on first use: a batch morlog's
        record index tags lists none)."""
        return self.table.file_slices(self.as_of)

    def _valid(self, instant: str) -> bool:
        """Whether a block of ``instant`` counts: the snapshot's rule (``slice_blocks``)."""
        return instant_counts(instant, self.table.timeline, self._rules)

    def tag(self, keys: Sequence[str] | pa.Array,
            partitions: Sequence[str] | pa.Array | None = None) -> TagResult:
        arr = keys if isinstance(keys, pa.Array) else pa.array(list(keys), type=pa.string())
        arr = arr.cast(pa.string())
        if arr.null_count:
            raise UsageError("record keys must not be null")
        if self.use_morlog_index:
            by_index = self._tag_by_morlog_index(arr, partitions)
            if by_index is not None:
                return by_index
        n = len(arr)
        groups: dict[str, npt.NDArray[np.int64]] = {}
        if partitions is not None:
            parts = (partitions if isinstance(partitions, pa.Array) else pa.array(
                list(partitions), type=pa.string())).cast(pa.string())
            if len(parts) != n:
                raise UsageError("one partition per key", expected=n, actual=len(parts))
        if self.record_index is not None:
            return self._tag_by_hudi_index(arr, parts if partitions is not None else None)
        if partitions is not None:
            enc = parts.dictionary_encode()
            codes = enc.indices.to_numpy(zero_copy_only=False)
            order = np.argsort(codes, kind="stable")
            bounds = np.flatnonzero(np.diff(codes[order])) + 1
            for chunk in np.split(order, bounds):
                if chunk.size:
                    groups[enc.dictionary[int(codes[chunk[0]])].as_py()] = chunk.astype(np.int64)
        best_instant = np.array([""] * n, dtype=object)
        found = np.full(n, -1, dtype=np.int32)
        groups_hit: list[tuple[str, str]] = []
        stats = TagStats()
        sources: list[RangedSource] = []
        everyone = np.arange(n, dtype=np.int64)
        prepared: dict[str, PreparedKeys] = {}
        hits = np.zeros(n, dtype=np.int64)
        hit_rows: list[tuple[npt.NDArray[np.int64], FileSlice]] = []
        for s in self.slices:
            idx = groups.get(s.partition) if partitions is not None else everyone
            if idx is None or idx.size == 0:
                continue
            stats.slices += 1
            # keys are prepared once per partition and shared by its slices
            key = s.partition if partitions is not None else ""
            if key not in prepared:
                prepared[key] = PreparedKeys(arr.take(pa.array(idx)))
            local, instants = self._slice_hits(s, prepared[key], stats, sources)
            if local.size == 0:
                continue
            np.add.at(hits, idx[local], 1)
            hit_rows.append((idx[local], s))
            code = len(groups_hit)
            groups_hit.append((s.partition, s.file_id))
            # oldest first: where a key has several hits, the newest is assigned last
            order = np.argsort(instants, kind="stable")
            i, inst = idx[local[order]], instants[order]
            newer = inst >= best_instant[i]
            i, inst = i[newer], inst[newer]
            best_instant[i] = inst
            found[i] = code
        stats.reads = sum(x.stats.reads for x in sources)
        stats.bytes_read = sum(x.stats.bytes_read for x in sources)
        for x in sources:
            x.close()
        also: dict[int, list[tuple[str, str]]] = {}
        if (hits > 1).any():  # duplicates only: rare, so per key
            dup = hits > 1
            for code, (rows, s) in enumerate(hit_rows):
                for i in rows[dup[rows]].tolist():
                    if found[i] != code:
                        also.setdefault(i, []).append((s.partition, s.file_id))
        return TagResult(arr, found, groups_hit, stats, also)

    def _tag_by_morlog_index(self, arr: pa.Array,
                             partitions: Sequence[str] | pa.Array | None) -> TagResult | None:
        """The tags morlog's record index gives (None: the table has no index, or it does
        not cover the table: a warning, and the file probes answer). The index is global:
        a key it places in another partition than ``partitions`` gives is a
        :class:`UsageError` (moving a record between partitions is not supported with it)."""
        from .record_index import DamagedIndexWarning, RecordIndex

        try:
            index = RecordIndex.open(self.table)
            if index is None:
                return None
            missing = index.missing_instants()
            if missing:
                warnings.warn(f"morlog's record index of {self.table.location} misses "
                              f"{len(missing)} data commit(s) (first {missing[0]}); tagging "
                              "reads the table's files instead: rebuild it with "
                              "'morlog rli build'", StaleIndexWarning, stacklevel=3)
                return None
            lk = index.lookup(arr, check=False, instants=False)
        except (FormatError, StorageError) as exc:
            # a damaged index never blocks a write: the file probes answer instead
            warnings.warn(f"morlog's record index of {self.table.location} does not read "
                          f"({type(exc).__name__}: {exc}); tagging reads the table's files "
                          "instead: 'morlog rli verify' reports the damage, 'morlog rli "
                          "build' rebuilds the index", DamagedIndexWarning, stacklevel=3)
            return None
        if partitions is not None and lk.groups:
            parts = (partitions if isinstance(partitions, pa.Array) else pa.array(
                list(partitions), type=pa.string())).cast(pa.string())
            moved = (lk.codes >= 0) & ~_in_partition(lk.codes, lk.groups, parts)
            if moved.any():
                i = int(np.flatnonzero(moved)[0])
                raise UsageError(
                    "morlog's record index is global: a key lives in one partition, and the "
                    f"batch moves {int(moved.sum())} key(s) to another (first "
                    f"{arr[i].as_py()!r}: in {lk.groups[lk.codes[i]][0]!r}, now "
                    f"{parts[i].as_py()!r})", path=self.table.location.uri)
        return TagResult(arr, lk.codes, lk.groups,
                         TagStats(morlog_index_shards=lk.shards_read))

    def _tag_by_hudi_index(self, arr: pa.Array, parts: pa.Array | None) -> TagResult:
        """Tag through Hudi's record index: no data file is opened. The index is global (a
        key lives in one partition); with ``parts`` given, a key the index places in another
        partition than its own is new there, as the bloom and range path finds it."""
        assert self.record_index is not None
        found = self.record_index.lookup(arr)
        codes, groups = found.codes, found.groups
        if parts is not None and len(groups):
            same = _in_partition(codes, groups, parts)
            codes = np.where((codes >= 0) & same, codes, -1).astype(np.int32)
            used = np.unique(codes[codes >= 0])
            remap = np.full(len(groups), -1, dtype=np.int32)
            remap[used] = np.arange(used.size, dtype=np.int32)
            groups = [groups[i] for i in used.tolist()]
            codes = np.where(codes >= 0, remap[np.maximum(codes, 0)], -1).astype(np.int32)
        stats = TagStats(reads=found.files, bytes_read=found.bytes_read,
                         record_index_shards=found.shards, record_index_blocks=found.blocks)
        return TagResult(arr, codes, groups, stats)

    def _slice_hits(self, s: FileSlice, keys: PreparedKeys, stats: TagStats,
                    sources: list[RangedSource]
                    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.object_]]:
        """Indices into ``keys`` of every key found in the slice, and the instant of each
        hit (a key may have several)."""
        directory = self.table.slice_dir(s.partition)
        st = self.table.storage
        found: list[npt.NDArray[np.int64]] = []
        instants: list[npt.NDArray[np.object_]] = []
        if s.base_file is not None:
            bk = (self._base_keys.load(s.partition, s.base_file, directory)
                  if self._base_keys is not None else None)
            if bk is not None:
                stats.base_key_indexes += 1
                base = np.flatnonzero(bk.contains(keys.arr, keys.xxh64, keys.hash_order))
            else:
                base = self._base_hits(st.join(directory, s.base_file), keys, stats, sources)
            found.append(base)
            instants.append(np.full(base.size, s.base_instant, dtype=object))
        if s.log_files:
            stats.log_probes += 1
            probe = SliceProbe(directory, s.log_files, key_field=self.table.key_field,
                               opener=_CountingOpener(st, directory, sources))
            result = probe.probe(keys.arr, keys.xxh64, keys.ranges, keys.word_masks)
            if result.tail_instant is not None and not self._valid(result.tail_instant):
                # the stored index is a block's that does not count here (a failed or
                # rolled-back write, a log compaction after the snapshot instant): it may be
                # narrower than the blocks that do (spec/index.md §6.8), so every block's
                # own keys are read instead
                result = probe.probe_compat(keys.arr, keys.xxh64)
            block_instants = np.array([b.instant for b in result.blocks], dtype=object)
            valid = np.array([self._valid(x) for x in block_instants], dtype=bool)
            # blocks a counting log compaction replaced (the snapshot's rule, slice_blocks)
            replaced = {t for inst, times in result.compactions.items() if self._valid(inst)
                        for t in times}
            if replaced:
                valid &= np.array([x not in replaced for x in block_instants], dtype=bool)
            cols, rows = np.nonzero(result.masks.confirmed & valid[:, None])
            found.append(rows.astype(np.int64))
            instants.append(block_instants[cols])
        if not found:
            return np.zeros(0, np.int64), np.zeros(0, dtype=object)
        return np.concatenate(found), np.concatenate(instants)

    def _base_hits(self, path: str, keys: PreparedKeys, stats: TagStats,
                   sources: list[RangedSource]) -> npt.NDArray[np.int64]:
        """Indices into ``keys`` of the keys in the base file at ``path``."""
        src = self.table.storage.source(path)
        sources.append(src)
        stats.base_footers += 1
        found = base_file_hits(src, self.table.key_field, keys)
        stats.base_key_reads += found.key_column_read
        return found.hits


@dataclass
class BaseHits:
    #: indices into the prepared keys of the keys the base file holds
    hits: npt.NDArray[np.int64]
    #: keys left by the footer's min/max and bloom filter
    candidates: int
    key_column_read: bool


def base_file_hits(src: RangedSource, key_field: KeyField, keys: PreparedKeys) -> BaseHits:
    """Which of ``keys`` a base file (any format, by its extension) holds: Hudi's index in
    its footer (bloom filter, min/max key), where the file has one, prunes, then its key
    column confirms exactly. Reads are counted at ``src`` (Parquet and ORC; pylance opens a
    Lance file itself)."""
    with BaseFileReader(src) as reader:
        return _hits(reader, key_field, keys)


def _hits(reader: BaseFileReader, key_field: KeyField, keys: PreparedKeys) -> BaseHits:
    info = reader.footer()
    cand = np.ones(len(keys.arr), dtype=bool)
    if info.bloom is not None:
        cand &= info.bloom.contains(keys.batch, keys.chain)
    if info.min_key is not None and info.max_key is not None:
        cand &= keys.in_range(info.min_key, info.max_key)
    idx = np.flatnonzero(cand)
    if idx.size == 0:
        return BaseHits(idx, 0, False)
    need = list(key_columns(key_field))
    missing = [c for c in need if c not in reader.names]
    if missing:
        raise ContentError(f"base file has no key field {missing[0]!r}", path=reader.name)
    with decoder_errors(reader.name, "base file key column does not decode"):
        # a table without meta fields: keys derived from the key fields (no footer index
        # then: Hudi writes no bloom filter or min/max key, HoodieAvroParquetWriter)
        col = key_array(reader.read(need), key_field, path=reader.name)
    cand_keys = keys.arr.take(pa.array(idx))
    # hash the (few) candidates and scan the file's keys, not the other way round
    in_file = col.filter(pc.is_in(col, value_set=cand_keys))
    if len(in_file) == 0:
        return BaseHits(idx[:0], int(idx.size), True)
    present = pc.is_in(cand_keys, value_set=in_file).to_numpy(zero_copy_only=False)
    return BaseHits(idx[present], int(idx.size), True)


class PreparedKeys:
    """A batch of keys prepared once for many slices: Hudi's murmur chain, XXH64, prefixes."""

    def __init__(self, arr: pa.Array) -> None:
        self.arr = arr
        self.batch = KeyBatch.of(arr)
        self.chain = HashChain(self.batch)
        self._xxh64: npt.NDArray[np.uint64] | None = None
        self.ranges = RangeTester(arr)
        # byte order equals Java's UTF-16 order unless a key holds a character beyond U+FFFF
        # (4-byte UTF-8 sequences start with 0xF0..0xF4)
        buf = arr.cast(pa.large_string()).buffers()[2]
        self.bmp_only = buf is None or not (np.frombuffer(buf, np.uint8) >= 0xF0).any()

    @property
    def xxh64(self) -> npt.NDArray[np.uint64]:
        """XXH64 of the keys (log probes), computed on first use."""
        if self._xxh64 is None:
            self._xxh64 = xxh64_batch(self.batch)
        return self._xxh64

    @functools.cached_property
    def word_masks(self) -> npt.NDArray[np.uint32]:
        """The split-block filters' word masks of :attr:`xxh64`, shared by every slice's
        filters (computed once per batch, not once per slice)."""
        return word_masks(self.xxh64)

    @functools.cached_property
    def hash_order(self) -> npt.NDArray[np.intp]:
        """The keys in :attr:`xxh64` order, shared by every base-key index lookup."""
        return np.argsort(self.xxh64)

    def in_range(self, lo: str, hi: str) -> npt.NDArray[np.bool_]:
        """Hudi's min/max test (both orders, see morlog.compat.base_footer), vectorized."""
        if self.bmp_only and not _beyond_bmp(lo) and not _beyond_bmp(hi):
            return self.ranges.test(lo, hi)
        from morlog.compat.base_footer import BaseFileIndex

        info = BaseFileIndex(None, None, lo, hi)
        return np.array([info.may_contain_range(k) for k in self.arr.to_pylist()], dtype=bool)


def _beyond_bmp(s: str) -> bool:
    return any(ord(c) > 0xFFFF for c in s)


def tag_keys(table_path: str | TableLocation, keys: Sequence[str],
             partitions: Sequence[str] | None = None, as_of: str | None = None) -> TagResult:
    """The (partition, file id) holding each of ``keys`` in the table at ``table_path``
    (None for a key it does not hold), as of ``as_of``; ``partitions``: the partition of
    each key when known (only those partitions are looked at). See :class:`KeyTagger`.

    >>> result = tag_keys("rides", ["a", "zz"])
    >>> [None if loc is None else loc[0] for loc in result.locations]
    ['sf', None]
    """
    return KeyTagger(Table(table_path), as_of).tag(keys, partitions)
