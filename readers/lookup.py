"""Table lookup ("tagging"): the partition and file group of each key, or "new".

For each candidate file slice (the key's own partition when the caller knows it, else every
partition): the base file's Hudi footer (min/max key and bloom filter) prunes, then the key
column confirms; the slice's logs are probed through their index (stored or recomputed,
readers/probe.py), which Hudi's bloom index on MOR tables cannot do. Blocks of instants that
failed, were rolled back or come after the snapshot instant do not count. A key that is live
in the table is never missed: every step only removes keys that provably are not there.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from compat.base_footer import parse_base_footer
from logformat.errors import UsageError

from .probe import SliceProbe
from .storage import LocalFileSource, RangedSource
from .table import FileSlice, Table


@dataclass
class TagStats:
    slices: int = 0
    base_footers: int = 0
    base_key_reads: int = 0
    log_probes: int = 0
    reads: int = 0
    bytes_read: int = 0


@dataclass
class TagResult:
    keys: list[str]
    #: per key: (partition, file id) or None for a new key
    locations: list[tuple[str, str] | None]
    stats: TagStats = field(default_factory=TagStats)

    def as_dict(self) -> dict[str, dict[str, str] | None]:
        return {k: None if loc is None else {"partition": loc[0], "file_id": loc[1]}
                for k, loc in zip(self.keys, self.locations, strict=True)}


class _CountingOpener:
    """Opens slice files through sources whose reads are counted."""

    def __init__(self, directory: str, sources: list[RangedSource]) -> None:
        self.directory = directory
        self.sources = sources

    def __call__(self, name: str) -> RangedSource:
        src = LocalFileSource(os.path.join(self.directory, name))
        self.sources.append(src)
        return src


class TableIndex:
    """Finds the file group of keys across a table, as of an instant."""

    def __init__(self, table: Table, as_of: str | None = None) -> None:
        self.table = table
        self.as_of = table.resolve_instant(as_of)
        self.slices = table.file_slices(self.as_of)
        self.rolled_back = table.timeline.rolled_back_instants()

    def _valid(self, instant: str) -> bool:
        return instant not in self.rolled_back and self.table.timeline.is_committed(
            instant, self.as_of)

    def tag(self, keys: Sequence[str] | pa.Array,
            partitions: Sequence[str] | pa.Array | None = None) -> TagResult:
        arr = keys if isinstance(keys, pa.Array) else pa.array(list(keys), type=pa.string())
        arr = arr.cast(pa.string())
        if arr.null_count:
            raise UsageError("record keys must not be null")
        n = len(arr)
        parts = None
        if partitions is not None:
            parts = (partitions if isinstance(partitions, pa.Array) else pa.array(
                list(partitions), type=pa.string())).cast(pa.string())
            if len(parts) != n:
                raise UsageError("one partition per key", expected=n, actual=len(parts))
        best_instant = np.array([""] * n, dtype=object)
        found_part = np.array([None] * n, dtype=object)
        found_fid = np.array([None] * n, dtype=object)
        stats = TagStats()
        sources: list[RangedSource] = []
        for s in self.slices:
            if parts is not None:
                idx = np.flatnonzero(pc.equal(parts, pa.scalar(s.partition)).to_numpy(
                    zero_copy_only=False))
            else:
                idx = np.arange(n)
            if idx.size == 0:
                continue
            stats.slices += 1
            sub = arr.take(pa.array(idx))
            for local, instant in self._slice_hits(s, sub, stats, sources):
                i = idx[local]
                if instant >= best_instant[i]:
                    best_instant[i] = instant
                    found_part[i] = s.partition
                    found_fid[i] = s.file_id
        stats.reads = sum(x.stats.reads for x in sources)
        stats.bytes_read = sum(x.stats.bytes_read for x in sources)
        for x in sources:
            x.close()
        locations = [None if p is None else (p, f) for p, f in zip(found_part, found_fid,
                                                                   strict=True)]
        return TagResult(arr.to_pylist(), locations, stats)

    def _slice_hits(self, s: FileSlice, keys: pa.Array, stats: TagStats,
                    sources: list[RangedSource]) -> list[tuple[int, str]]:
        """(index into ``keys``, instant) of every key found in the slice."""
        directory = os.path.join(self.table.path, s.partition) if s.partition else (
            self.table.path)
        hits: list[tuple[int, str]] = []
        if s.base_file is not None:
            hits.extend(self._base_hits(os.path.join(directory, s.base_file), s, keys, stats,
                                        sources))
        if s.log_files:
            stats.log_probes += 1
            probe = SliceProbe(directory, s.log_files, key_field=self.table.key_field,
                               opener=_CountingOpener(directory, sources))
            result = probe.probe(keys)
            instants = [b.instant for b in result.blocks]
            rows, cols = np.nonzero(result.masks.confirmed.T)
            for i, j in zip(rows, cols, strict=True):
                if self._valid(instants[j]):
                    hits.append((int(i), instants[j]))
        return hits

    def _base_hits(self, path: str, s: FileSlice, keys: pa.Array, stats: TagStats,
                   sources: list[RangedSource]) -> list[tuple[int, str]]:
        src = LocalFileSource(path)
        sources.append(src)
        stats.base_footers += 1
        pf = pq.ParquetFile(pa.PythonFile(_SourceFile(src), mode="r"))
        info = parse_base_footer(pf.metadata.metadata)
        cand = np.ones(len(keys), dtype=bool)
        if info.bloom is not None:
            cand &= info.bloom.contains(keys)
        if info.min_key is not None or info.max_key is not None:
            py = keys.to_pylist()
            cand &= np.array([info.may_contain_range(k) for k in py], dtype=bool)
        idx = np.flatnonzero(cand)
        if idx.size == 0:
            return []
        stats.base_key_reads += 1
        column = pf.read(columns=[self.table.key_field]).column(0)
        present = pc.is_in(keys.take(pa.array(idx)), value_set=column.combine_chunks().cast(
            pa.string())).to_numpy(zero_copy_only=False)
        base_instant = s.base_instant
        return [(int(i), base_instant) for i in idx[present]]


class _SourceFile:
    """A file-like view of a ranged source, so pyarrow's Parquet reader counts its reads."""

    def __init__(self, src: RangedSource) -> None:
        self.src = src
        self.pos = 0
        self.closed = False

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else (self.pos + offset if whence == 1 else
                                               self.src.size + offset)
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            n = self.src.size - self.pos
        n = min(n, self.src.size - self.pos)
        data = self.src.read(self.pos, n) if n > 0 else b""
        self.pos += len(data)
        return data

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


def tag_keys(table_path: str, keys: Sequence[str], partitions: Sequence[str] | None = None,
             as_of: str | None = None) -> TagResult:
    return TableIndex(Table(table_path), as_of).tag(keys, partitions)
