"""Which blocks of a file slice's logs may hold, and do hold, each key (spec/index.md §7).

``morlog.readers.probe.SliceProbe.probe(keys)`` reads the slice's cumulative index through
``morlog.readers.slice_index.read_slice_index`` (the newest log file's tail: one ranged read;
when the tail is a delta, the checkpoint: a second read), tests each key against the slice's
cumulative range and filter (delta plus checkpoint), then narrows to blocks by their own
ranges and filters, and confirms candidates against the sorted key lists of only those
blocks. Slices whose newest data block carries no index are answered by the compatibility
path (``morlog.compat.recompute``): every block's keys are recomputed, with the same per-block
answers.

Invariant (tested): every key live in the slice's logs is confirmed in the block that holds
it; deleted or rolled-back keys may still be reported (a false positive costs a key-list
read), never the reverse.
"""

from __future__ import annotations

import os
import threading
import warnings
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from morlog.logformat.blocks import RECORD_KEY_FIELD
from morlog.logformat.constants import HeaderKey
from morlog.logformat.errors import (
    UNUSABLE,
    ChecksumError,
    ContentError,
    MorlogError,
    UnusableIndexWarning,
)
from morlog.logformat.index_trailer import (
    BlockRef,
    Carrier,
    Cumulative,
    Directory,
    KeyRange,
    decode_filter_part,
    decode_keys,
)
from morlog.logformat.indexed_block import BlockKeys
from morlog.logformat.keybatch import KeyBatch
from morlog.logformat.naming import LogFileName
from morlog.logformat.sbbf import SplitBlockBloom, word_masks
from morlog.logformat.virtual_keys import KeyField
from morlog.logformat.xxh64 import xxh64_batch

from .cache import CachedSource
from .index import StoredIndex, block_index, read_parquet_index
from .logfile import LogFileReader
from .slice_index import read_slice_index
from .storage import LocalFileSource, LocalStorage, RangedSource, storage_for

Opener = Callable[[str], RangedSource]


class _KeyListCache:
    """Decoded key lists of stored (Avro-carrier) block indexes, kept across probes of this
    process, least recently used dropped first. A commit probes the same log blocks as the
    one before plus its own: without it every block's key list is read and decoded again at
    every commit, work that grows with the slice's logs. An entry is found only by the
    block's directory entry (file, region offsets and lengths, both CRC-32s): the directory
    is read from the file at each probe, so a region rewritten with other bytes is read
    again; a hit equals what decoding those bytes gives (they passed the same CRCs)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.items: OrderedDict[tuple[Any, ...], tuple[Any, ...]] = OrderedDict()
        self.bytes = 0
        self.lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> tuple[Any, ...] | None:
        with self.lock:
            found = self.items.get(key)
            if found is not None:
                self.items.move_to_end(key)
            return found

    def put(self, key: tuple[Any, ...], value: tuple[Any, ...], cost: int) -> None:
        if cost > self.limit:
            return
        with self.lock:
            old = self.items.pop(key, None)
            if old is not None:
                self.bytes -= old[0]
            self.items[key] = (cost, *value)
            self.bytes += cost
            while self.bytes > self.limit and self.items:
                _, dropped = self.items.popitem(last=False)
                self.bytes -= dropped[0]


#: bytes of decoded key lists :class:`_KeyListCache` keeps (keys and their offsets)
KEY_LIST_CACHE_BYTES = 256 * 1024 * 1024
_KEY_LISTS = _KeyListCache(KEY_LIST_CACHE_BYTES)
#: candidates per block above which confirmation joins against all key lists at once
JOIN_RATIO = 8
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class BlockId:
    file: str
    offset: int


@dataclass
class KeyHits:
    """Per key: blocks still candidate after each test (offsets in file order)."""

    range: list[BlockId] = field(default_factory=list)
    bloom: list[BlockId] = field(default_factory=list)
    confirmed: list[BlockId] = field(default_factory=list)


@dataclass
class ProbedBlock:
    """A block of the slice as the probe tests it: its id, its DIRECTORY entry (stored
    index) and whatever of its index has been read so far."""

    id: BlockId
    ref: BlockRef | None
    #: per-block index when already at hand (compat path, or the tail block)
    keys: BlockKeys | None = None
    instant: str = ""
    #: the block's own filter, when read without its key list
    bloom: SplitBlockBloom | None = None
    #: False for blocks the stored cumulative index does not cover (their keys are tested
    #: without it)
    covered: bool = True


@dataclass
class Masks:
    """(blocks x keys) answers of each test, in the order of the blocks and probed keys."""

    range: npt.NDArray[np.bool_]
    bloom: npt.NDArray[np.bool_]
    confirmed: npt.NDArray[np.bool_]


@dataclass
class ProbeResult:
    #: the probed keys, in the order of the masks' columns (:attr:`keys`: as a list)
    key_array: pa.Array
    masks: Masks
    #: True when the slice's cumulative index was read from a stored trailer
    stored: bool
    cumulative: Cumulative | None
    blocks: list[ProbedBlock]
    reads: int
    bytes_read: int
    #: ranged reads and bytes before the per-block confirmation (the footer probe itself)
    probe_reads: int = 0
    probe_bytes: int = 0
    #: the ``INSTANT_TIME`` of the block whose stored index was used (None: compat path);
    #: a caller for whom that instant does not count (failed, rolled back, after its
    #: snapshot) takes :meth:`SliceProbe.probe_compat` instead: such an index may be
    #: narrower than the blocks that do count (a log compaction's, spec/index.md §6.8)
    tail_instant: str | None = None
    #: log compactions seen in the blocks whose headers were read (the compatibility path,
    #: files the stored index does not list): instant -> the instants it replaces
    #: (``COMPACTED_BLOCK_TIMES`` of its data or delete blocks)
    compactions: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _hits: dict[str, KeyHits] | None = None
    _keys: list[str] | None = None

    @property
    def keys(self) -> list[str]:
        """The probed keys as Python strings (built on first use: a tagger that reads only
        the masks never pays for it)."""
        if self._keys is None:
            self._keys = self.key_array.to_pylist()
        return self._keys

    @property
    def hits(self) -> dict[str, KeyHits]:
        """Per key, the block ids of each test (built on first use)."""
        if self._hits is None:
            ids = [b.id for b in self.blocks]
            m = self.masks
            r, b, c = m.range.T, m.bloom.T, m.confirmed.T
            self._hits = {
                k: KeyHits([ids[j] for j in np.flatnonzero(r[i])],
                           [ids[j] for j in np.flatnonzero(b[i])],
                           [ids[j] for j in np.flatnonzero(c[i])])
                for i, k in enumerate(self.keys)}
        return self._hits

    def found(self) -> dict[str, list[BlockId]]:
        """Only the confirmed blocks of each key that has any (cheap for large batches)."""
        ids = [b.id for b in self.blocks]
        cols, rows = np.nonzero(self.masks.confirmed)
        out: dict[str, list[BlockId]] = {}
        for j, i in sorted(zip(cols, rows, strict=True), key=lambda t: (t[1], t[0])):
            out.setdefault(self.keys[i], []).append(ids[j])
        return out


def _prefix_u64(data: bytes | pa.Array) -> npt.NDArray[np.uint64]:
    """First 8 bytes of each key (zero-padded) as big-endian integers: strict order of the
    prefixes implies the same strict order of the keys (byte order)."""
    if isinstance(data, bytes):
        return np.frombuffer(data[:8].ljust(8, b"\0"), dtype=">u8").astype(np.uint64)
    arr = data.cast(pa.large_binary())
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    buf = arr.buffers()[2]
    raw = np.frombuffer(buf, dtype=np.uint8) if buf is not None and len(buf) else np.zeros(
        1, np.uint8)
    cols = np.arange(8, dtype=np.int64)
    idx = offsets[:-1, None] + cols[None, :]
    valid = cols[None, :] < (offsets[1:] - offsets[:-1])[:, None]
    mat = np.where(valid, raw[np.minimum(idx, len(raw) - 1)], 0).astype(np.uint8)
    return np.ascontiguousarray(mat).view(">u8")[:, 0].astype(np.uint64)


class RangeTester:
    """Vectorized ``lo <= key <= hi`` for one batch of keys against many ranges."""

    def __init__(self, keys: pa.Array, prefix: npt.NDArray[np.uint64] | None = None) -> None:
        self.binary = keys if pa.types.is_binary(keys.type) else keys.cast(pa.binary())
        self.prefix = _prefix_u64(self.binary) if prefix is None else prefix

    def subset(self, idx: npt.NDArray[np.int64]) -> RangeTester:
        if idx.size == len(self.prefix):
            return self
        return RangeTester(self.binary.take(pa.array(idx)), self.prefix[idx])

    def test(self, lo: str, hi: str) -> BoolArray:
        lo_b, hi_b = lo.encode(), hi.encode()
        plo, phi = _prefix_u64(lo_b)[0], _prefix_u64(hi_b)[0]
        p = self.prefix
        ge = p > plo
        le = p < phi
        tie_lo = p == plo
        tie_hi = p == phi
        if tie_lo.any():
            sub = self.binary.filter(pa.array(tie_lo))
            ge[tie_lo] = pc.greater_equal(sub, pa.scalar(lo_b, pa.binary())).to_numpy(
                zero_copy_only=False)
        if tie_hi.any():
            sub = self.binary.filter(pa.array(tie_hi))
            le[tie_hi] = pc.less_equal(sub, pa.scalar(hi_b, pa.binary())).to_numpy(
                zero_copy_only=False)
        out: BoolArray = ge & le
        return out


class SliceProbe:
    """Probes the logs of one file slice: ``log_files`` in Hudi's order, newest last (a
    table's slices: :meth:`Table.file_slices <morlog.readers.table.Table.file_slices>`).

    >>> s = next(s for s in Table("rides").file_slices() if s.log_files)
    >>> with SliceProbe(f"rides/{s.partition}", s.log_files) as probe:
    ...     sorted(probe.probe(["a", "zz"]).found())
    ['a']
    """

    def __init__(self, directory: str, log_files: Sequence[str], *,
                 key_field: KeyField = RECORD_KEY_FIELD, fpp: float = 0.01,
                 opener: Opener | None = None) -> None:
        if not log_files:
            raise MorlogError("a file slice probe needs at least one log file", path=directory)
        self.directory = directory
        self.log_files = list(log_files)
        self.key_field = key_field
        self.fpp = fpp
        self._opener = opener or (lambda name: LocalFileSource(os.path.join(directory, name)))
        self._sources: dict[str, RangedSource] = {}
        self._ranges: RangeTester | None = None
        self._word_masks: tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint32]] | None = None
        self._compactions: dict[str, tuple[str, ...]] = {}

    def source(self, name: str) -> RangedSource:
        if name not in self._sources:
            self._sources[name] = CachedSource(self._opener(name))
        return self._sources[name]

    def close(self) -> None:
        for s in self._sources.values():
            s.close()
        self._sources.clear()

    def __enter__(self) -> SliceProbe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _stats(self) -> tuple[int, int]:
        return (sum(s.stats.reads for s in self._sources.values()),
                sum(s.stats.bytes_read for s in self._sources.values()))

    # --- probing --------------------------------------------------------------------------

    def probe(self, keys: Sequence[str] | pa.Array,
              hashes: npt.NDArray[np.uint64] | None = None,
              ranges: RangeTester | None = None,
              filter_masks: npt.NDArray[np.uint32] | None = None) -> ProbeResult:
        """``hashes`` (XXH64 of the keys), ``ranges`` and ``filter_masks``
        (``word_masks(hashes)``)
        may be passed in when the same keys are probed against many slices."""
        arr = keys if isinstance(keys, pa.Array) else pa.array(list(keys), type=pa.string())
        arr = arr.cast(pa.string())
        if hashes is None:
            hashes = xxh64_batch(KeyBatch.of(arr))
        self._ranges = ranges if ranges is not None else RangeTester(arr)
        self._word_masks = None if filter_masks is None else (hashes, filter_masks)
        self._compactions = {}
        try:
            index = read_slice_index(self.log_files, self.source)
        except UNUSABLE as exc:
            # a damaged chain (a checkpoint cut off or overwritten, a cumulative that does
            # not decode): the slice's keys are recomputed from the blocks the forward scan
            # reads, corrupt ones skipped as the merged snapshot skips them (design.md: the
            # cumulative index is only ever a superset of the live keys)
            warnings.warn(f"{self.directory}: the slice's stored cumulative index is "
                          f"unusable ({exc}); keys recomputed from the records",
                          UnusableIndexWarning, stacklevel=2)
            return self._probe_compat(arr, hashes)
        if index is None:  # the newest data block has no stored index: compat path
            return self._probe_compat(arr, hashes)
        strange = sorted(n for n in index.files - set(self.log_files)
                         if not self._later_log_of_group(n))
        if strange:
            # the directories name a file that is no log of this file group (a damaged
            # directory, or a file gone): the stored index cannot stand for the slice.
            # A log of the group outside the slice is fine: a view as of an earlier instant
            # (time travel) leaves out logs whose blocks the caller's instant rules drop
            strange = strange[:3]
            warnings.warn(f"{self.directory}: the slice's stored directory names log files "
                          f"the slice does not hold ({strange}); keys recomputed from the "
                          "records", UnusableIndexWarning, stacklevel=2)
            return self._probe_compat(arr, hashes)
        cum = index.cumulative
        blocks = [b for d in index.directories for b in _blocks_of(d)]
        in_range = self._ranges.test(cum.min_key, cum.max_key)
        wm = self._masks(hashes)
        maybe = in_range & cum.bloom.check_hashes(hashes, wm)
        if index.checkpoint is not None:  # a delta: keys before it are in the checkpoint
            maybe |= in_range & index.checkpoint.bloom.check_hashes(hashes, wm)
        covered_files = index.files
        # log files of the slice that the stored index does not know of (table version 8+
        # writes one log file per delta commit; another writer may have added one):
        # their blocks are recomputed and tested without the cumulative filter
        uncovered = [name for name in self.log_files if name not in covered_files]
        if uncovered:
            blocks.extend(self._recomputed_blocks(uncovered, covered=False))
        probe_reads, probe_bytes = self._stats()
        masks = self._narrow(arr, hashes, maybe, blocks)
        reads, nbytes = self._stats()
        tail = index.directory.blocks[-1].instant if index.directory.blocks else None
        return ProbeResult(arr, masks, True, cum, blocks, reads, nbytes,
                           probe_reads, probe_bytes, tail, dict(self._compactions))

    def probe_compat(self, keys: Sequence[str] | pa.Array,
                     hashes: npt.NDArray[np.uint64] | None = None) -> ProbeResult:
        """:meth:`probe` without the stored cumulative index: every block's keys from its
        own index or records (spec/index.md §7.5)."""
        arr = keys if isinstance(keys, pa.Array) else pa.array(list(keys), type=pa.string())
        arr = arr.cast(pa.string())
        if hashes is None:
            hashes = xxh64_batch(KeyBatch.of(arr))
        if self._ranges is None or len(self._ranges.prefix) != len(arr):
            self._ranges = RangeTester(arr)
        return self._probe_compat(arr, hashes)

    def _later_log_of_group(self, name: str) -> bool:
        """Whether ``name`` is an existing log file of the slice's file group (one the view
        leaves out, e.g. written after the instant a time travel reads as of)."""
        if not LogFileName.matches(name):
            return False
        ids = {LogFileName.parse(n).file_id for n in self.log_files
               if LogFileName.matches(n)}
        if LogFileName.parse(name).file_id not in ids:
            return False
        try:
            _ = self.source(name).size
        except (MorlogError, OSError):
            return False
        return True

    def _recomputed_blocks(self, names: Sequence[str], covered: bool = True
                           ) -> list[ProbedBlock]:
        """The keyed data blocks of ``names`` that the forward scan does not report CORRUPT
        (the scan the merged snapshot reads, format §6.1), with their keys recomputed.
        Which instants count is the caller's business (``slice_blocks.instant_counts``):
        the probe answers, per block, which keys it holds."""
        out = []
        for name in names:
            for block in LogFileReader(self.source(name)).blocks():
                if block.is_corrupt:
                    continue
                times = block.header.get(HeaderKey.COMPACTED_BLOCK_TIMES)
                if times:
                    self._compactions[block.instant or ""] = tuple(
                        t.strip() for t in times.split(",") if t.strip())
                if not block.block_type.is_keyed:
                    continue
                keys, _ = block_index(block, key_field=self.key_field, fpp=self.fpp)
                if keys is not None:
                    out.append(ProbedBlock(BlockId(name, block.offset), None, keys,
                                           block.instant or "", covered=covered))
        return out

    def _probe_compat(self, arr: pa.Array, hashes: npt.NDArray[np.uint64]) -> ProbeResult:
        self._compactions = {}
        blocks = self._recomputed_blocks(self.log_files)
        maybe = np.ones(len(arr), dtype=bool)
        masks = self._narrow(arr, hashes, maybe, blocks)
        reads, nbytes = self._stats()
        return ProbeResult(arr, masks, False, None, blocks, reads, nbytes, reads,
                           nbytes, None, dict(self._compactions))

    def _read_part(self, b: ProbedBlock, offset: int, length: int, crc: int) -> bytes:
        src = self.source(b.id.file)
        raw = src.read(offset, length)
        actual = zlib.crc32(raw)
        if actual != crc:
            raise ChecksumError("index region checksum mismatch", path=src.name, offset=offset,
                                expected=crc, actual=actual)
        return raw

    def _recompute(self, b: ProbedBlock, why: MorlogError) -> BlockKeys | None:
        """The block's keys from its records, when its stored index cannot be used."""
        assert b.ref is not None
        src = self.source(b.id.file)
        warnings.warn(f"{src.name}@{b.ref.block_offset}: stored index unusable ({why}); keys "
                      "recomputed from the records", UnusableIndexWarning, stacklevel=3)
        block = next(iter(LogFileReader(src).blocks(b.ref.block_offset,
                                                     b.ref.block_offset + b.ref.block_size)))
        b.keys, _ = block_index(block, key_field=self.key_field, fpp=self.fpp)
        return b.keys

    def _block_filter(self, b: ProbedBlock) -> SplitBlockBloom | None:
        """The block's own filter; for the AVRO carrier without reading its key list."""
        if b.keys is not None:
            return b.keys.bloom
        if b.bloom is None:
            ref = b.ref
            if ref is not None and ref.carrier == Carrier.AVRO:
                try:
                    raw = self._read_part(b, ref.region_offset, ref.filter_length,
                                          ref.filter_crc32)
                    b.bloom, _ = decode_filter_part(raw, base=ref.region_offset,
                                                    path=self.source(b.id.file).name)
                except MorlogError as exc:
                    keys = self._recompute(b, exc)
                    return None if keys is None else keys.bloom
            else:
                keys = self._block_keys(b)
                return None if keys is None else keys.bloom
        return b.bloom

    def _block_keys(self, b: ProbedBlock) -> BlockKeys | None:
        if b.keys is not None:
            return b.keys
        try:
            return self._stored_block_keys(b)
        except MorlogError as exc:
            return self._recompute(b, exc)

    def _stored_block_keys(self, b: ProbedBlock) -> BlockKeys | None:
        ref = b.ref
        assert ref is not None
        src = self.source(b.id.file)
        if ref.carrier == Carrier.AVRO:
            ident = (self.directory, b.id.file, ref.region_offset, ref.filter_length,
                     ref.keys_length, ref.filter_crc32, ref.keys_crc32, b.bloom is None)
            hit = _KEY_LISTS.get(ident)
            if hit is not None:
                _, keys, bloom, rng = hit
                if b.bloom is None:
                    b.bloom = bloom
                b.keys = BlockKeys(keys, None, b.bloom, rng)
                return b.keys
            if b.bloom is None:  # both parts in one read
                raw = src.read(ref.region_offset, ref.region_length)
                fpart, kpart = raw[: ref.filter_length], raw[ref.filter_length :]
                for part, at, crc in ((fpart, ref.region_offset, ref.filter_crc32),
                                      (kpart, ref.region_offset + ref.filter_length,
                                       ref.keys_crc32)):
                    actual = zlib.crc32(part)
                    if actual != crc:
                        raise ChecksumError("index region checksum mismatch", path=src.name,
                                            offset=at, expected=crc, actual=actual)
                b.bloom, rng = decode_filter_part(fpart, base=ref.region_offset, path=src.name)
            else:
                kpart = self._read_part(b, ref.region_offset + ref.filter_length,
                                        ref.keys_length, ref.keys_crc32)
                rng = KeyRange(ref.key_count, ref.min_key, ref.max_key)
            keys = decode_keys(kpart, base=ref.region_offset + ref.filter_length,
                               path=src.name)
            b.keys = BlockKeys(keys, None, b.bloom, rng)
            _KEY_LISTS.put(ident, (keys, b.bloom, rng), int(keys.nbytes))
        elif ref.carrier == Carrier.PARQUET:
            stored = read_parquet_index(src, ref.block_offset + ref.block_size - 12,
                                    ref.block_offset)
            keys = stored.block_keys() if stored is not None else None
            if keys is None:
                # the directory lists the block as indexed: an index gone missing is damage,
                # and the block's keys are recomputed from its records (never skipped)
                raise ContentError("block listed as indexed carries no stored index",
                                   path=src.name, offset=ref.block_offset)
            b.keys = keys
        else:
            block = next(iter(LogFileReader(src).blocks(ref.block_offset,
                                                         ref.block_offset + ref.block_size)))
            b.keys, _ = block_index(block, key_field=self.key_field, fpp=self.fpp)
        return b.keys

    def _masks(self, hashes: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint32]:
        """The filters' word masks of ``hashes``: the caller's, else computed once here."""
        if self._word_masks is None or self._word_masks[0] is not hashes:
            self._word_masks = (hashes, word_masks(hashes))
        return self._word_masks[1]

    def _narrow(self, arr: pa.Array, hashes: npt.NDArray[np.uint64], maybe: BoolArray,
                blocks: list[ProbedBlock]) -> Masks:
        """Per-block range and filter tests, then exact confirmation.

        With many candidate keys per block (more than ``JOIN_RATIO`` on average), every
        block's key list is read anyway, so the per-block filters are skipped and the
        candidates are joined against all key lists at once; the ``bloom`` answers are then
        those of the cumulative filter (spec/index.md §7.3)."""
        shape = (len(blocks), len(arr))
        masks = Masks(np.zeros(shape, bool), np.zeros(shape, bool), np.zeros(shape, bool))
        covered = np.array([b.covered for b in blocks], dtype=bool)
        # per-block ranges matter only for keys some block may hold: those the cumulative
        # index lets through, or all keys when a block is not covered by it
        tested = np.arange(len(arr)) if not covered.all() else np.flatnonzero(maybe)
        ranges = self._ranges if self._ranges is not None else RangeTester(arr)
        sub = ranges.subset(tested)
        for j, b in enumerate(blocks):
            if b.ref is not None:
                lo, hi = b.ref.min_key, b.ref.max_key
            else:
                assert b.keys is not None
                lo, hi = b.keys.range.min_key, b.keys.range.max_key
            if tested.size:
                masks.range[j, tested] = sub.test(lo, hi)
        cand = masks.range & (maybe[None, :] | ~covered[:, None])
        n_cand = int(cand.any(axis=0).sum())
        if n_cand == 0:
            return masks
        if n_cand >= JOIN_RATIO * max(1, len(blocks)):
            masks.bloom[:] = cand
            self._join(arr, cand, blocks, masks)
            return masks
        word_m = self._masks(hashes)  # shared by every per-block filter test
        with_cand = [j for j in range(len(blocks)) if cand[j].any()]
        self._prefetch(blocks, with_cand, filters=True)
        confirm: list[tuple[int, npt.NDArray[np.int64]]] = []
        for j in with_cand:
            b = blocks[j]
            idx = np.flatnonzero(cand[j])
            bloom = self._block_filter(b)
            if bloom is None:
                continue
            passed = idx[bloom.check_hashes(hashes[idx], word_m[idx])]
            if passed.size:
                masks.bloom[j, passed] = True
                confirm.append((j, passed))
        self._prefetch(blocks, [j for j, _ in confirm], filters=False)
        for j, passed in confirm:
            keys = self._block_keys(blocks[j])
            if keys is None:
                continue
            found = pc.is_in(arr.take(pa.array(passed)), value_set=keys.keys)
            masks.confirmed[j, passed] = np.asarray(found.to_numpy(zero_copy_only=False),
                                                    dtype=bool)
        return masks

    def _prefetch(self, blocks: list[ProbedBlock], which: list[int], *, filters: bool) -> None:
        """Fetch the filter parts (or key parts) of ``blocks[which]`` that are still to be
        read, coalesced per file where the storage wants it (object stores)."""
        per_file: dict[str, list[tuple[int, int]]] = {}
        for j in which:
            b = blocks[j]
            ref = b.ref
            if ref is None or ref.carrier != Carrier.AVRO or b.keys is not None or (
                    filters and b.bloom is not None):
                continue
            if filters:
                rng = (ref.region_offset, ref.filter_length)
            elif b.bloom is None:
                rng = (ref.region_offset, ref.region_length)
            else:
                rng = (ref.region_offset + ref.filter_length, ref.keys_length)
            per_file.setdefault(b.id.file, []).append(rng)
        for name, ranges in per_file.items():
            src = self.source(name)
            if isinstance(src, CachedSource) and len(ranges) > 1:
                src.prefetch_ranges(ranges)

    def _join(self, arr: pa.Array, cand: npt.NDArray[np.bool_], blocks: list[ProbedBlock],
              masks: Masks) -> None:
        """Exact confirmation of many candidates: one hash join against the key lists."""
        lists: list[pa.Array] = []
        owners: list[int] = []
        self._prefetch(blocks, [j for j in range(len(blocks)) if cand[j].any()],
                       filters=False)
        for j, b in enumerate(blocks):
            if not cand[j].any():
                continue
            keys = self._block_keys(b)
            if keys is None or not len(keys.keys):
                continue
            lists.append(keys.keys.cast(pa.string()))
            owners.append(j)
        if not lists:
            return
        any_cand = np.flatnonzero(cand.any(axis=0))
        # hash the candidates (the smaller side) once and scan the key lists against them,
        # in place (no copy of the lists into one array): a position into the candidates per
        # listed key (an Acero hash join of the same two sides costs 7-15x more, hashing both)
        pos = pc.index_in(pa.chunked_array(lists, type=pa.string()),
                          value_set=arr.take(pa.array(any_cand)))
        at = np.asarray(pc.fill_null(pos, -1).to_numpy(), dtype=np.int64)
        rows = np.flatnonzero(at >= 0)
        if rows.size == 0:
            return
        key_at = any_cand[at[rows]]
        # the block of each listed key: by where the lists end, for the hits only
        ends = np.cumsum([len(x) for x in lists])
        block_at = np.asarray(owners, dtype=np.int64)[np.searchsorted(ends, rows,
                                                                        side="right")]
        keep = cand[block_at, key_at]  # a key confirmed only where it was a candidate
        masks.confirmed[block_at[keep], key_at[keep]] = True


def _blocks_of(directory: Directory) -> list[ProbedBlock]:
    return [ProbedBlock(BlockId(directory.files[r.file], r.block_offset), r, None, r.instant)
            for r in directory.blocks]


def probe_log_file(path: str, keys: Sequence[str] | pa.Array, *,
                   key_field: KeyField = RECORD_KEY_FIELD) -> ProbeResult:
    """Probe a single log file (its own slice for the purpose of the probe): which of
    ``keys`` each of its data blocks may hold (range, bloom filter) and does hold
    (confirmed from the block's key list), from the index trailers alone.

    >>> from pathlib import Path
    >>> log = str(next(Path("rides", "sf").glob(".*.log.*")))
    >>> probe_log_file(log, ["a", "b"]).masks.confirmed.tolist()
    [[True, False]]
    """
    storage, inner = storage_for(path)
    directory, _, name = inner.rpartition("/") if "/" in inner else (".", "", inner)
    if isinstance(storage, LocalStorage):
        directory, name = os.path.dirname(inner) or ".", os.path.basename(inner)
    with SliceProbe(directory, [name], key_field=key_field,
                    opener=lambda n: storage.source(storage.join(directory, n))) as p:
        return p.probe(keys)


__all__ = ["BlockId", "KeyHits", "Masks", "ProbeResult", "ProbedBlock", "SliceProbe",
           "StoredIndex", "probe_log_file"]
