"""morlog's record-level index (issue 15; RFC-8's mapping in morlog's own format,
spec/rli.md): reading it.

The index is a merge-on-read table of its own at ``.hoodie/morlog/record_index`` inside the
data table, non-partitioned, keyed by ``key`` (no meta fields), with one file group per shard
(``morlog-rli-NNNN-0``; a key's shard is XXH64 of its UTF-8 bytes, seed 0, modulo the shard
count). Each row maps a record key of the data table to the ``partition`` and ``file_id``
of the file group holding it and the data ``instant`` that placed it there. Its blocks are
morlog's indexed Parquet data blocks (sorted keys, blooms, min/max) and delete blocks; its
base files are Parquet.

Which of its instants count (:func:`index_timeline`): a delta commit that mirrors a data
instant (the same instant time: every commit of a morlog writer writes one, completed just
before the data instant) counts only while that data instant is committed and not rolled
back; the index's own instants (its bootstrap, compactions, log compactions, cleans) count
when completed. So a reader never sees the index ahead of the data, whatever crashed where.

An index is usable when it covers the data timeline (:meth:`RecordIndex.missing_instants`):
every completed data write after the instant the bootstrap was built as of has its index
instant. A writer that does not maintain it (Hudi's own, an older morlog) leaves it stale:
lookups then raise :class:`StaleIndexError`, and tagging falls back to the file probes.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from morlog.logformat.errors import ContentError, UsageError
from morlog.logformat.keybatch import KeyBatch
from morlog.logformat.naming import INFLIGHT
from morlog.logformat.xxh64 import xxh64_batch

from .storage import TableLocation
from .table import FileSlice, Table
from .timeline import Timeline

#: where the index lives, under the data table's ``.hoodie``
INDEX_DIR = ("morlog", "record_index")
#: data table property: every morlog writer maintains the index (``true``)
ENABLE_PROPERTY = "morlog.record.index.enable"
#: index table properties: the shard count, the shard hash, the data instant it was built as of
SHARDS_PROPERTY = "morlog.record.index.shards"
HASH_PROPERTY = "morlog.record.index.hash"
BUILT_AS_OF_PROPERTY = "morlog.record.index.built.as.of"
HASH = "xxh64"
#: the index's columns
SCHEMA = pa.schema([pa.field("key", pa.string(), nullable=False),
                    pa.field("partition", pa.string()), pa.field("file_id", pa.string()),
                    pa.field("instant", pa.string())])
#: data actions whose commits the index mirrors
_MIRRORED = frozenset({"deltacommit", "commit", "replacecommit"})
MAX_SHARDS = 4096


class StaleIndexError(ContentError):
    """The index does not cover every completed write of the data table."""


def shard_file_id(shard: int) -> str:
    """File id of shard ``shard``."""
    return f"morlog-rli-{shard:04d}-0"


def shard_of_file_id(fid: str) -> int | None:
    parts = fid.split("-")
    if len(parts) == 4 and parts[:2] == ["morlog", "rli"] and parts[2].isdigit():
        return int(parts[2])
    return None


def shards_of(keys: pa.Array | pa.ChunkedArray, shards: int) -> npt.NDArray[np.int64]:
    """The shard of every key: XXH64 (seed 0) of its UTF-8 bytes modulo ``shards``."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64)
    h = xxh64_batch(KeyBatch.of(keys))
    return (h % np.uint64(shards)).astype(np.int64)


def index_location(data: TableLocation) -> TableLocation:
    """The index table's location inside the data table at ``data``."""
    return dataclasses.replace(data, path=data.join(".hoodie", *INDEX_DIR))


def enabled(table: Table) -> bool:
    """Whether the data table says its writers maintain the index."""
    return (table.config.get(ENABLE_PROPERTY) or "").strip().lower() == "true"


def index_timeline(index: Timeline, data: Timeline) -> Timeline:
    """The index's timeline as readers must see it (module docstring): a completed delta
    commit mirroring a data instant is shown pending unless that data instant is committed
    and not rolled back."""
    rolled = data.rolled_back_instants()
    out = []
    for i in index.instants:
        if (i.is_completed and i.action == "deltacommit" and data.get(i.requested) is not None
                and (not data.is_committed(i.requested) or i.requested in rolled)):
            i = dataclasses.replace(i, state=INFLIGHT, completed=None)
        out.append(i)
    return Timeline(index.directory, out, index.layout, index.storage)


@dataclass
class IndexLookup:
    """Where each key of a batch lives by the index: ``codes[i]`` indexes ``groups``
    ((partition, file id)), -1 for a key the index does not hold; ``instants[i]`` the data
    instant of its entry ("" when absent)."""

    keys: pa.Array
    codes: npt.NDArray[np.int32]
    groups: list[tuple[str, str]]
    instants: pa.Array
    shards_read: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, dict[str, str] | None]:
        out: dict[str, dict[str, str] | None] = {}
        for k, c, inst in zip(self.keys.to_pylist(), self.codes.tolist(),
                              self.instants.to_pylist(), strict=True):
            if c < 0:
                out[k] = None
            else:
                p, f = self.groups[c]
                out[k] = {"partition": p, "file_id": f, "instant": inst}
        return out


class RecordIndex:
    """The record index of a data table (open with :meth:`open`)."""

    def __init__(self, data: Table) -> None:
        self.data = data
        self.location = index_location(data.location)
        try:
            self.table = Table(self.location)
        except UsageError as exc:
            raise ContentError("the record index is enabled but its table is missing "
                               f"({exc.message}); rebuild it with 'morlog rli build'",
                               path=self.location.uri) from None
        props = self.table.config
        raw = (props.get(SHARDS_PROPERTY) or "").strip()
        if not raw.isdigit() or not 0 < int(raw) <= MAX_SHARDS:
            raise ContentError("bad shard count of the record index", path=props.path,
                               expected=f"1..{MAX_SHARDS}", actual=raw)
        self.shards = int(raw)
        h = (props.get(HASH_PROPERTY) or "").strip()
        if h != HASH:
            raise ContentError("unknown shard hash of the record index", path=props.path,
                               expected=HASH, actual=h)
        self.built_as_of = (props.get(BUILT_AS_OF_PROPERTY) or "").strip()
        self.raw_timeline = self.table.timeline
        self.table.timeline = index_timeline(self.raw_timeline, data.timeline)

    @classmethod
    def open(cls, data: Table) -> RecordIndex | None:
        """The index of ``data``; None when the table does not enable one."""
        return cls(data) if enabled(data) else None

    def missing_instants(self) -> list[str]:
        """Completed data writes after the build that the index has no completed instant
        for (empty: the index covers the table)."""
        have = {i.requested for i in self.raw_timeline.instants if i.is_completed}
        return [i.requested for i in self.data.timeline.completed(_MIRRORED)
                if i.requested > self.built_as_of and i.requested not in have]

    def check_current(self) -> None:
        """A :class:`StaleIndexError` naming the first uncovered data instant, if any."""
        missing = self.missing_instants()
        if missing:
            raise StaleIndexError(
                f"the record index misses {len(missing)} data commit(s) (first {missing[0]}: "
                "written by a writer that does not maintain it); rebuild it with "
                "'morlog rli build'", path=self.location.uri, actual=missing[0])

    def slices(self) -> dict[int, FileSlice]:
        """Shard -> its latest file slice (shards without one hold no key)."""
        out: dict[int, FileSlice] = {}
        for s in self.table.file_slices():
            k = shard_of_file_id(s.file_id)
            if k is None or k >= self.shards or s.partition:
                raise ContentError("a file group that is no shard of the record index",
                                   path=self.location.uri, actual=(s.partition, s.file_id))
            out[k] = s
        return out

    def read_shard(self, s: FileSlice) -> pa.Table:
        """The live entries of one shard (merged)."""
        t = self.table.read_slice(s, None, list(SCHEMA.names))
        if t.num_rows == 0:
            return SCHEMA.empty_table()
        return t.select(list(SCHEMA.names))

    def entries(self, threads: int | None = None) -> pa.Table:
        """Every live entry, sorted by key."""
        slices = list(self.slices().values())
        parts = _map(self.read_shard, slices, threads)
        t = pa.concat_tables([SCHEMA.empty_table(), *parts]) if parts else SCHEMA.empty_table()
        return t.sort_by("key")

    def lookup(self, keys: Sequence[str] | pa.Array, *, threads: int | None = None,
               check: bool = True) -> IndexLookup:
        """Where each key lives: keys split by shard, each shard read once and probed
        (threads: ``threads``, default the machine's cores, at most 4)."""
        import time

        t0 = time.perf_counter()
        if check:
            self.check_current()
        arr = keys if isinstance(keys, pa.Array) else pa.array(list(keys), type=pa.string())
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        arr = arr.cast(pa.string())
        if arr.null_count:
            raise UsageError("record keys must not be null")
        n = len(arr)
        shard = shards_of(arr, self.shards)
        slices = self.slices()
        wanted = sorted(set(np.unique(shard).tolist()) & set(slices))
        order = np.argsort(shard, kind="stable")
        bounds = np.searchsorted(shard[order], np.arange(self.shards + 1))

        def probe(k: int) -> tuple[npt.NDArray[np.int64], pa.Table, npt.NDArray[np.int64]]:
            rows = order[bounds[k]:bounds[k + 1]]
            entries = self.read_shard(slices[k])
            pos = pc.index_in(arr.take(pa.array(rows)), value_set=entries.column("key"))
            hit = ~np.asarray(pos.is_null().to_numpy(zero_copy_only=False))
            at = np.asarray(pos.fill_null(0).to_numpy(zero_copy_only=False))[hit]
            return rows[hit], entries, at.astype(np.int64)

        t1 = time.perf_counter()
        results = _map(probe, wanted, threads)
        t2 = time.perf_counter()
        codes = np.full(n, -1, dtype=np.int32)
        instants = np.full(n, "", dtype=object)
        loc_parts: list[pa.Table] = []
        loc_rows: list[npt.NDArray[np.int64]] = []
        for rows, entries, at in results:
            if rows.size:
                loc_parts.append(entries.take(pa.array(at)).select(["partition", "file_id",
                                                                   "instant"]))
                loc_rows.append(rows)
        groups: list[tuple[str, str]] = []
        if loc_parts:
            locs = pa.concat_tables(loc_parts)
            rows = np.concatenate(loc_rows)
            pid = pc.binary_join_element_wise(locs.column("partition").fill_null(""),
                                              locs.column("file_id").fill_null(""), "\x00")
            enc = pid.combine_chunks().dictionary_encode()
            codes[rows] = enc.indices.to_numpy(zero_copy_only=False)
            groups = [tuple(g.split("\x00", 1)) for g in enc.dictionary.to_pylist()]  # type: ignore[misc]
            instants[rows] = np.asarray(locs.column("instant").fill_null("").to_numpy(
                zero_copy_only=False), dtype=object)
        return IndexLookup(arr, codes, groups, pa.array(instants, type=pa.string()),
                           shards_read=len(wanted),
                           seconds={"prepare": t1 - t0, "probe": t2 - t1,
                                    "assemble": time.perf_counter() - t2})


def _map(fn, jobs, threads):  # type: ignore[no-untyped-def]
    n = threads if threads is not None else max(1, min(4, os.cpu_count() or 1))
    if n <= 1 or len(jobs) <= 1:
        return [fn(j) for j in jobs]
    with ThreadPoolExecutor(max_workers=min(n, len(jobs)),
                            thread_name_prefix="morlog-rli") as pool:
        return list(pool.map(fn, jobs))


__all__ = ["BUILT_AS_OF_PROPERTY", "ENABLE_PROPERTY", "HASH", "HASH_PROPERTY", "INDEX_DIR",
           "SCHEMA", "SHARDS_PROPERTY", "IndexLookup", "RecordIndex", "StaleIndexError",
           "enabled", "index_location", "index_timeline", "shard_file_id",
           "shard_of_file_id", "shards_of"]
