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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from morlog.config import RECORD_INDEX_BUILT_AS_OF, RECORD_INDEX_HASH, RECORD_INDEX_SHARDS
from morlog.logformat import file_checksum
from morlog.logformat.constants import BlockType
from morlog.logformat.errors import (
    ContentError,
    DamagedIndexWarning,
    StaleIndexError,
    UnsupportedVersionError,
    UsageError,
)
from morlog.logformat.keybatch import KeyBatch
from morlog.logformat.naming import INFLIGHT, LogFileName
from morlog.logformat.table_files import RECORD_INDEX_ENABLE_PROPERTY
from morlog.logformat.virtual_keys import VirtualKeys, key_array
from morlog.logformat.xxh64 import xxh64_batch

from .base_files import BaseFormat, format_of_path
from .logfile import LogBlock, LogFileReader
from .parallel import default_threads, run_all
from .slice_blocks import effective_blocks
from .storage import TableLocation, decoder_errors
from .table import FileSlice, Table
from .timeline import Timeline

#: where the index lives, under the data table's ``.hoodie``
INDEX_DIR = ("morlog", "record_index")
#: data table property: every morlog writer maintains the index (``true``)
ENABLE_PROPERTY = RECORD_INDEX_ENABLE_PROPERTY
#: index table properties: the shard count, the shard hash, the data instant it was built as of
SHARDS_PROPERTY = RECORD_INDEX_SHARDS
HASH_PROPERTY = RECORD_INDEX_HASH
BUILT_AS_OF_PROPERTY = RECORD_INDEX_BUILT_AS_OF
HASH = "xxh64"
#: the index's columns
SCHEMA = pa.schema([pa.field("key", pa.string(), nullable=False),
                    pa.field("partition", pa.string()), pa.field("file_id", pa.string()),
                    pa.field("instant", pa.string())])
#: data actions whose commits the index mirrors
_MIRRORED = frozenset({"deltacommit", "commit", "replacecommit"})
MAX_SHARDS = 4096


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


def shard_count(props: Any, path: str | None) -> int:
    """The shard count an index table's properties hold (a ``ContentError`` naming ``path``
    when it is not 1..MAX_SHARDS)."""
    raw = (props.get(SHARDS_PROPERTY) or "").strip()
    if not raw.isdigit() or not 0 < int(raw) <= MAX_SHARDS:
        raise ContentError("bad shard count of the record index", path=path,
                           expected=f"1..{MAX_SHARDS}", actual=raw)
    return int(raw)


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
        self.shards = shard_count(props, props.path)
        h = (props.get(HASH_PROPERTY) or "").strip()
        if h != HASH:
            raise ContentError("unknown shard hash of the record index", path=props.path,
                               expected=HASH, actual=h)
        self.built_as_of = (props.get(BUILT_AS_OF_PROPERTY) or "").strip()
        #: every base file of the shards carries a whole-file checksum, checked on open
        #: (an index built before it was added has none: rebuild to get it)
        self.sealed = self.table.sealed_base_files
        self.raw_timeline = self.table.timeline
        self.table.timeline = index_timeline(self.raw_timeline, data.timeline)
        #: instant -> (file id, log file) of its log writes (completed index instants)
        self._writes: dict[str, list[tuple[str, str]]] = {}

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

    def log_writes(self, s: FileSlice) -> list[tuple[str, str]]:
        """(instant, log file name) of every log write the completed, counting index
        instants after slice ``s``'s base instant made to its file group, by their commit
        metadata (what :func:`check_shard_blocks` expects to read back)."""
        out: list[tuple[str, str]] = []
        # only the instants since the slice's base (the shards are compacted every few
        # commits): the metadata of each is read once per RecordIndex
        for i in self.table.timeline.completed(frozenset({"deltacommit"})):
            if i.requested < s.base_instant:
                continue
            writes = self._writes.get(i.requested)
            if writes is None:
                # built whole, then published: shards are probed on threads, and a list
                # published empty and filled after would tell another shard's probe that
                # nothing was written to it (its lost log then read as no entries)
                stats = self.table.timeline.metadata(i).get("partitionToWriteStats") or {}
                writes = [(str(st.get("fileId")), name)
                          for st in (stats.get("", []) if isinstance(stats, dict) else [])
                          for name in [str(st.get("path") or "").rsplit("/", 1)[-1]]
                          if ".log." in name and int(st.get("numWrites") or 0) > 0]
                writes = self._writes.setdefault(i.requested, writes)
            # every log write of the slice, listed or not: a log file that went missing
            # (deleted, or cut to nothing and left out of the listing) is damage too
            out += [(i.requested, name) for fid, name in writes
                    if fid == s.file_id and _log_of_slice(name, s.base_instant)]
        return out

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
        """The live entries of one shard (merged). A slice that is only a Parquet base file
        is read straight (its rows are the entries); one with logs through the general
        merge (``Table.read_slice``). Damage is a typed error naming a file of the shard."""
        with decoder_errors(self._slice_file(s), "record index shard does not decode"):
            return self._read_shard(s)

    def _lost_logs(self, s: FileSlice) -> None:
        """A :class:`ContentError` when completed index instants wrote log files to slice
        ``s`` and the listing shows none (a log file cut to nothing is not listed: its
        entries would be lost without a word)."""
        if not s.log_files and self.log_writes(s):
            check_shard_blocks([], self.location, self.log_writes(s),
                               self.table.slice_dir(s.partition))

    def _read_shard(self, s: FileSlice) -> pa.Table:
        self._lost_logs(s)
        base = (self._base_file(s) if not s.log_files and s.base_file is not None
                and self._direct() else None)
        if base is not None:
            with decoder_errors(self._slice_file(s), "record index base file does not decode"):
                t = base.read(columns=list(SCHEMA.names), use_threads=False)
        else:
            directory = self.table.slice_dir(s.partition)
            check_shard_blocks(shard_log_blocks(self.table.storage, directory, s.log_files),
                               self.location, self.log_writes(s), directory)
            t = self.table.read_slice(s, None, list(SCHEMA.names))
        if t.num_rows == 0:
            return SCHEMA.empty_table()
        t = t.select(list(SCHEMA.names))
        out = pa.Table.from_arrays([_strings(c) for c in t.columns], schema=SCHEMA)
        _check_utf8(out, self._slice_file(s))
        return out

    def _slice_file(self, s: FileSlice) -> str:
        """A file of shard slice ``s`` to name in its errors (its base file, else its
        latest log)."""
        name = s.base_file or (s.log_files[-1] if s.log_files else s.file_id)
        return self._path(s, name)

    def _direct(self) -> bool:
        """Whether the shards can be read without the general merge: the latest write of a
        key wins (no ordering field), keys are the ``key`` column."""
        spec = self.table.merge_spec(None)
        return not spec.orderings and spec.key_field in ("key", VirtualKeys(("key",)))

    def _base_file(self, s: FileSlice) -> pq.ParquetFile | None:
        """The shard's base file opened with pyarrow (None: not Parquet)."""
        assert s.base_file is not None
        path = self._path(s, s.base_file)
        if format_of_path(path) is not BaseFormat.PARQUET:
            return None
        with decoder_errors(path, "record index base file does not open"):
            if not self.sealed:
                return pq.ParquetFile(self.table.storage.open_input(path),
                                      read_dictionary=list(_LOCATION))
            # the whole file is read once (the probe reads all its columns anyway), checked
            # against its checksum, and decoded from those same bytes (spec/rli.md §1a)
            data = self.table.storage.read(path)
            file_checksum.check_sealed(data, path)
            return pq.ParquetFile(pa.BufferReader(data), read_dictionary=list(_LOCATION))

    def _path(self, s: FileSlice, name: str) -> str:
        """The path of file ``name`` of shard slice ``s``."""
        return self.table.storage.join(self.table.slice_dir(s.partition), name)

    def probe_shard(self, s: FileSlice, keys: pa.Array, *, instants: bool = True
                    ) -> tuple[npt.NDArray[np.int64], pa.Table]:
        """Which of ``keys`` (distinct) shard slice ``s`` holds: their indices into ``keys``
        and their (partition, file_id, instant) rows, in that order (``instants`` False:
        the instant column is not read, null).

        Only what the keys need is read: the base file's key and location columns (the
        latter dictionary encoded, taken at the hits), every counting log block's keys (and
        its location columns at the hits). The sources are applied oldest first, the latest
        write of a key winning (a delete removes it), as the general merge does for a table
        without an ordering field; otherwise (or a base file that is not Parquet) the shard
        is merged in full (:meth:`read_shard`) and probed."""
        self._lost_logs(s)
        base = self._base_file(s) if s.base_file is not None and self._direct() else None
        if self._direct() and (s.base_file is None or base is not None):
            return self._probe_direct(s, base, keys, instants)
        entries = self.read_shard(s)
        pos = pc.index_in(keys, value_set=entries.column("key"))
        hit = np.asarray(pos.is_valid().to_numpy(zero_copy_only=False))
        at = np.asarray(pos.fill_null(0).to_numpy(zero_copy_only=False))[hit]
        return (np.flatnonzero(hit).astype(np.int64),
                entries.select(list(_LOCATION)).take(pa.array(at)).cast(_LOCATION_SCHEMA))

    def _probe_direct(self, s: FileSlice, base: pq.ParquetFile | None, keys: pa.Array,
                      instants: bool) -> tuple[npt.NDArray[np.int64], pa.Table]:
        m = len(keys)
        cols = list(_LOCATION if instants else _LOCATION[:2])
        #: per key: the source (0: base file, i: the i-th applied block) of its latest write,
        #: -1 none, -2 a delete; and its row there
        src = np.full(m, -1, dtype=np.int64)
        row = np.zeros(m, dtype=np.int64)
        sources: list[Any] = []  # per source: a table with the location columns, or None

        def apply(source: int, source_keys: pa.Array) -> None:
            pos = pc.index_in(source_keys, value_set=keys)
            rows = np.flatnonzero(np.asarray(pos.is_valid().to_numpy(zero_copy_only=False)))
            if rows.size == 0:
                return
            at = np.asarray(pos.drop_null().to_numpy(), dtype=np.int64)
            if np.bincount(at, minlength=m).max() > 1:
                # a key twice in one source: its later row wins
                last = rows.size - 1 - np.unique(at[::-1], return_index=True)[1]
                at, rows = at[last], rows[last]
            src[at] = source
            row[at] = rows

        if base is not None:
            assert s.base_file is not None
            with decoder_errors(self._path(s, s.base_file),
                                "record index base file does not decode"):
                bt = base.read(columns=["key", *cols], use_threads=False)
            sources.append(bt)
            bk = key_array(bt, self.table.key_field, path=self.location.uri)
            searched = _sorted_hits(bk, keys)
            if searched is None:
                apply(0, bk)
            else:
                src[searched[0]] = 0
                row[searched[0]] = searched[1]
        else:
            sources.append(None)
        if s.log_files:
            st = self.table.storage
            directory = self.table.slice_dir(s.partition)
            readers = []
            try:
                blocks: list[LogBlock] = []
                for name in s.log_files:
                    path = st.join(directory, name)
                    with _log_errors(path):
                        r = LogFileReader(st.source(path))
                        readers.append(r)
                        blocks.extend(r.blocks())
                check_shard_blocks(blocks, self.location, self.log_writes(s), directory)
                for b in effective_blocks(blocks, self.table.timeline,
                                          self.table.merge_spec(None)):
                    with decoder_errors(b.path, "record index log block does not decode"):
                        if b.block_type == BlockType.DELETE:
                            sources.append(None)
                            apply(-2, pc.drop_null(b.delete_columns().keys))
                            continue
                        t = b.to_arrow()
                    sources.append(t)
                    apply(len(sources) - 1, key_array(t, self.table.key_field, path=b.path))
            finally:
                for r in readers:
                    r.close()
        hit = np.flatnonzero(src >= 0)
        parts: list[pa.Table] = []
        order: list[npt.NDArray[np.int64]] = []
        for k in np.unique(src[hit]).tolist():
            idx = hit[src[hit] == k]
            where = pa.array(row[idx])
            loc = sources[k]
            loc = pa.table([_strings(_column(loc, c).take(where)) if c in cols
                            else pa.nulls(idx.size, pa.string()) for c in _LOCATION],
                           schema=_LOCATION_SCHEMA)
            parts.append(loc)
            order.append(idx)
        if not parts:
            return np.zeros(0, np.int64), _LOCATION_SCHEMA.empty_table()
        return np.concatenate(order), pa.concat_tables(parts)

    def entries(self, threads: int | None = None) -> pa.Table:
        """Every live entry, sorted by key."""
        slices = list(self.slices().values())
        parts = _map(self.read_shard, slices, threads)
        t = pa.concat_tables([SCHEMA.empty_table(), *parts]) if parts else SCHEMA.empty_table()
        return t.sort_by("key")

    def lookup(self, keys: Sequence[str] | pa.Array, *, threads: int | None = None,
               check: bool = True, instants: bool = True) -> IndexLookup:
        """Where each key lives: keys split by shard, each shard probed once
        (:meth:`probe_shard`; threads: ``threads``, default the machine's cores, at most 4).
        ``instants`` False: the entries' instants are not read (``IndexLookup.instants``
        all null), as tagging needs only the file groups."""
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
        # each distinct key once (distinct hashes: distinct keys, the common case; else
        # the keys are deduplicated)
        h = xxh64_batch(KeyBatch.of(arr)) if n else np.zeros(0, np.uint64)
        hs = np.sort(h)
        if n and (hs[1:] == hs[:-1]).any():
            enc = arr.dictionary_encode()
            uniq = enc.dictionary
            back: npt.NDArray[np.int64] | None = enc.indices.to_numpy(zero_copy_only=False)
            shard = shards_of(uniq, self.shards)
        else:
            uniq, back = arr, None
            shard = (h % np.uint64(self.shards)).astype(np.int64)
        slices = self.slices()
        wanted = sorted(set(np.unique(shard).tolist()) & set(slices))
        # a stable sort of 16-bit integers is a radix sort (MAX_SHARDS < 2**16)
        order = np.argsort(shard.astype(np.uint16), kind="stable")
        bounds = np.searchsorted(shard[order], np.arange(self.shards + 1))

        def probe(k: int) -> tuple[npt.NDArray[np.int64], pa.Table]:
            rows = order[bounds[k]:bounds[k + 1]]
            # a damaged page may decode to indices or strings that are not valid: typed
            with decoder_errors(self._slice_file(slices[k]), "record index shard does "
                                "not decode"):
                at, locs = self.probe_shard(slices[k], uniq.take(pa.array(rows)),
                                            instants=instants)
            _check_utf8(locs, self._slice_file(slices[k]))
            return rows[at], locs

        t1 = time.perf_counter()
        results = _map(probe, wanted, threads)
        t2 = time.perf_counter()
        m = len(uniq)
        codes_u = np.full(m, -1, dtype=np.int32)
        found = [(rows, locs) for rows, locs in results if rows.size]
        groups: list[tuple[str, str]] = []
        inst_at = np.full(m, 0, dtype=np.int64)
        inst_values = pa.array([""], pa.string())
        if found:
            rows = np.concatenate([r for r, _ in found])
            locs = pa.concat_tables([t for _, t in found]).combine_chunks()
            pid = pc.binary_join_element_wise(locs.column("partition").fill_null(""),
                                              locs.column("file_id").fill_null(""), "\x00")
            genc = pid.combine_chunks().dictionary_encode()
            codes_u[rows] = genc.indices.to_numpy(zero_copy_only=False)
            groups = [tuple(g.split("\x00", 1)) for g in genc.dictionary.to_pylist()]
            inst_values = pa.concat_arrays([
                pa.array([""], pa.string()),
                locs.column("instant").fill_null("").combine_chunks().cast(pa.string())])
            inst_at[rows] = np.arange(1, rows.size + 1)
        codes = codes_u if back is None else codes_u[back]
        inst = (inst_values.take(pa.array(inst_at if back is None else inst_at[back]))
                if instants else pa.nulls(n, pa.string()))
        return IndexLookup(arr, codes, groups, inst, shards_read=len(wanted),
                           seconds={"prepare": t1 - t0, "probe": t2 - t1,
                                    "assemble": time.perf_counter() - t2})


def _log_of_slice(name: str, base_instant: str) -> bool:
    """Whether log file ``name`` belongs to the slice keyed ``base_instant`` (logs named
    after the slice's base instant, or after a delta commit since)."""
    if not LogFileName.matches(name):
        return False
    return LogFileName.parse(name).instant >= base_instant


def check_shard_blocks(blocks: Sequence[LogBlock], index: TableLocation,
                       written: Sequence[tuple[str, str]] = (), directory: str = "") -> None:
    """A :class:`ContentError` naming the file when a shard's logs lost blocks: readers skip
    corrupt blocks (a writer that died mid-block left it) and cannot see blocks of a log
    cut short, which for the index would silently lose entries. ``written``: (instant, log
    file name) of every completed index instant's log write to this slice
    (:meth:`RecordIndex.log_writes`): each must have a readable block. A corrupt block is
    explained when a rollback command block follows it (the next writer rolled the dead one
    back), or when it is the slice's last block while an index instant is pending (a write
    in progress, or a dead writer not yet rolled back)."""
    have = {(b.instant, (b.path or "").rsplit("/", 1)[-1]) for b in blocks
            if not b.is_corrupt}
    for inst, name in written:
        if (inst, name) not in have:
            raise ContentError(f"a record index log lost the block of instant {inst} (its "
                               "entries would be lost); rebuild the index with 'morlog rli "
                               "build'", path=f"{directory}/{name}" if directory else name)
    bad = [i for i, b in enumerate(blocks) if b.is_corrupt]
    if not bad:
        return
    for i in bad:
        if any(b.block_type == BlockType.COMMAND for b in blocks[i + 1:]):
            continue
        if i == len(blocks) - 1 and Table(index).timeline.pending():
            continue
        b = blocks[i]
        raise ContentError("a record index log holds a damaged block (its entries would be "
                           "lost); rebuild the index with 'morlog rli build'", path=b.path,
                           offset=b.offset)


def shard_log_blocks(storage: Any, directory: str, log_files: Sequence[str]
                     ) -> list[LogBlock]:
    """Every block of a shard slice's log files, in order (typed errors naming the file)."""
    blocks: list[LogBlock] = []
    for name in log_files:
        path = storage.join(directory, name)
        with _log_errors(path), \
                LogFileReader(storage.source(path)) as r:
            blocks.extend(r.blocks())
    return blocks


@contextmanager
def _log_errors(path: str) -> Iterator[None]:
    """Reading a shard's log file ``path``: decoder errors typed (``decoder_errors``), and
    a log format version this reader does not know is damage too (a changed version byte
    of a block read as a newer format blocked every write): a :class:`ContentError`."""
    try:
        with decoder_errors(path, "record index log file does not read"):
            yield
    except UnsupportedVersionError as exc:
        raise ContentError(f"record index log file does not read: {exc.message}",
                           path=exc.path or path, offset=exc.offset, expected=exc.expected,
                           actual=exc.actual) from exc


def _check_utf8(t: pa.Table, path: str) -> None:
    """A :class:`ContentError` naming ``path`` when a string of ``t`` is not valid UTF-8
    (Parquet's reader does not check: a damaged page may decode to such bytes)."""
    with decoder_errors(path, "record index entries are not valid UTF-8"):
        t.validate(full=True)


def _fixed_width(a: pa.Array) -> npt.NDArray[np.uint8] | None:
    """The strings of ``a`` as rows of one byte length (a 2-d uint8 view, no copy); None
    unless every string has that length, at least 8 bytes."""
    if not isinstance(a, pa.Array) or a.type != pa.string() or a.null_count or len(a) == 0:
        return None
    off = np.frombuffer(a.buffers()[1], dtype=np.int32)[a.offset : a.offset + len(a) + 1]
    width = int(off[1] - off[0])
    if width < 8 or (np.diff(off) != width).any():
        return None
    data = np.frombuffer(a.buffers()[2], dtype=np.uint8)[off[0] : off[-1]]
    return data.reshape(len(a), width)


def _sorted_hits(base: pa.Array, keys: pa.Array
                 ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """(indices into ``keys``, rows of ``base``) of the keys ``base`` holds, by binary search
    on the keys' first 8 bytes, when those are strictly increasing along ``base`` (a base file
    of the index: sorted by key, one row per key; random keys differ there) and all keys
    have one byte length; None otherwise (the caller hashes instead)."""
    b = _fixed_width(base)
    k = _fixed_width(keys)
    if b is None or k is None or b.shape[1] != k.shape[1]:
        return None
    bp = np.ascontiguousarray(b[:, :8]).view(">u8").ravel()
    if bp.size > 1 and not (bp[1:] > bp[:-1]).all():
        return None
    kp = np.ascontiguousarray(k[:, :8]).view(">u8").ravel()
    order = np.argsort(kp)  # sorted needles: a cache-friendly search
    i = np.empty(kp.size, dtype=np.int64)
    i[order] = np.searchsorted(bp, kp[order])
    cand = np.flatnonzero(i < bp.size)
    ic = i[cand]
    same = bp[ic] == kp[cand]
    cand, ic = cand[same], ic[same]
    # the whole key (as raw bytes: numpy compares fixed-width voids byte for byte)
    width = b.shape[1]
    full = b.reshape(-1).view(f"V{width}")[ic] == k.reshape(-1).view(f"V{width}")[cand]
    return cand[full].astype(np.int64), ic[full]


_J = TypeVar("_J")
_R = TypeVar("_R")

#: the location columns of an entry
_LOCATION = ("partition", "file_id", "instant")
_LOCATION_SCHEMA = pa.schema([SCHEMA.field(c) for c in _LOCATION])


def _column(t: pa.Table, name: str) -> pa.ChunkedArray:
    """Column ``name`` of ``t`` (nulls where ``t`` has no such column)."""
    if name not in t.column_names:
        return pa.chunked_array([pa.nulls(t.num_rows, pa.string())])
    return t.column(name)


def _strings(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """``col`` as plain strings (a dictionary-encoded column decoded: after any take, so
    that only the rows taken are)."""
    return col if col.type == pa.string() else col.cast(pa.string())


def _map(fn: Callable[[_J], _R], jobs: Sequence[_J], threads: int | None) -> list[_R]:
    return run_all(fn, jobs, default_threads() if threads is None else threads, "morlog-rli")


__all__ = ["BUILT_AS_OF_PROPERTY", "ENABLE_PROPERTY", "HASH", "HASH_PROPERTY", "INDEX_DIR",
           "SCHEMA", "SHARDS_PROPERTY", "DamagedIndexWarning", "IndexLookup", "RecordIndex",
           "StaleIndexError", "check_shard_blocks", "shard_log_blocks",
           "enabled", "index_location", "index_timeline", "shard_file_id",
           "shard_count", "shard_of_file_id", "shards_of"]
