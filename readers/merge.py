"""Merged snapshot of a file slice: base file plus logs, with Hudi's merge semantics (facts §7).

Which blocks count is decided by ``morlog.readers.slice_blocks.effective_blocks``, the one
rule the key lookup applies too (corrupt blocks, rollbacks, failed instants, log compaction).
The surviving blocks are applied oldest to newest, grouped by instant in order of first
appearance.

How records merge, per key: COMMIT_TIME_ORDERING takes the latest record or delete.
EVENT_TIME_ORDERING keeps the record with the greatest ordering value, the later one on ties;
a delete with the natural ordering value (int 0) removes whatever came before it, a delete
with a real ordering value competes like a record. Merging is vectorized: every record gets
a sequence number and the winner of each key is found with Arrow sorts, not a Python loop.
Delete blocks are read column-wise (``decode_delete_columns``): keys, natural order and
ordering values come as arrays, converted to the ordering column's type per kind; only an
``ArrayWrapper`` (several ordering fields) or values only fastavro gives take objects.

Several ordering fields (``hoodie.table.ordering.fields=a,b``, Hudi 1.1) compare as a tuple,
field by field, the first difference deciding (``ArrayComparable.compareTo``); a null field
value counts as the default ordering value, int 0 (``OrderingValues.create`` through
``handleNullValue``), so a null numeric field sorts as 0. A delete's ordering value is then an
``ArrayWrapper`` of one value per field (``morlog.logformat.delete_content``).

Record keys: the key column (``_hoodie_record_key``), or, for a table that populates no meta
fields, derived from the key fields (``morlog.logformat.virtual_keys``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from morlog.logformat.arrow_sort import from_numpy, rank_nulls_first, to_numpy
from morlog.logformat.blocks import RECORD_KEY_FIELD
from morlog.logformat.constants import BlockType
from morlog.logformat.delete_content import (
    ARRAY_BRANCH,
    DeleteColumns,
    branch_python,
)
from morlog.logformat.errors import ContentError
from morlog.logformat.naming import BaseFileName
from morlog.logformat.virtual_keys import KeyField, key_array, key_columns

from .base_files import read_base_file
from .logfile import LogBlock, LogFileReader
from .slice_blocks import effective_blocks
from .storage import LocalStorage, Storage
from .timeline import Timeline

SEQ, DEL, ORD, KEY = "__morlog_seq", "__morlog_delete", "__morlog_ord", "__morlog_key"
#: the key group of a merge candidate
GROUP = "__morlog_group"
COMMIT_TIME, EVENT_TIME = "COMMIT_TIME_ORDERING", "EVENT_TIME_ORDERING"


@dataclass
class MergeSpec:
    #: the key column, or the key fields of a table without meta fields
    key_field: KeyField = RECORD_KEY_FIELD
    ordering_field: str | None = None
    merge_mode: str = COMMIT_TIME
    table_version: int = 6
    as_of: str | None = None
    columns: Sequence[str] | None = None
    #: every ordering field, in comparison order (empty: ``ordering_field`` alone)
    ordering_fields: tuple[str, ...] = ()
    #: a schema-on-read table's mapping of each file's columns to the query schema by
    #: column id (``morlog.readers.schema_on_read.Reading``); None: columns match by name
    evolve: Any = None

    @property
    def orderings(self) -> tuple[str, ...]:
        """The ordering fields records compare by (lexicographically when several)."""
        if self.ordering_fields:
            return tuple(self.ordering_fields)
        return (self.ordering_field,) if self.ordering_field else ()

    def needed_columns(self) -> list[str]:
        """The columns a projection must keep for merging: key and ordering fields."""
        return [*key_columns(self.key_field), *self.orderings]


def _frames(blocks: list[LogBlock], spec: MergeSpec, base_seq: int, schema_ref: list[pa.Schema]
            ) -> tuple[list[pa.Table], DeleteRows]:
    """Record tables (with SEQ) of data blocks, and the deletes column-wise."""
    tables: list[pa.Table] = []
    parts: list[DeleteColumns] = []
    seq = base_seq
    seqs: list[np.ndarray] = []
    for b in blocks:
        if b.block_type == BlockType.DELETE:
            cols = b.delete_columns()
            if cols.keys.null_count:  # a delete without a key deletes nothing
                cols = cols.take(np.flatnonzero(cols.keys.is_valid().to_numpy(
                    zero_copy_only=False)))
            parts.append(cols)
            seqs.append(np.arange(seq, seq + len(cols), dtype=np.int64))
            seq += len(cols)
            continue
        t = b.to_arrow()
        if spec.evolve is not None:
            t = spec.evolve.apply(t, b.instant, b.path)
        missing = [c for c in key_columns(spec.key_field) if c not in t.column_names]
        if missing:
            raise ContentError(f"data block has no key field {missing[0]!r}",
                               path=b.path, offset=b.offset, actual=t.column_names[:20])
        keys = key_array(t, spec.key_field, path=b.path)
        if spec.columns is not None:
            need = spec.needed_columns()
            keep = [c for c in t.column_names if c in spec.columns or c in need]
            t = t.select(keep)
        n = t.num_rows
        t = t.append_column(KEY, keys)
        t = t.append_column(SEQ, from_numpy(np.arange(seq, seq + n, dtype=np.int64)))
        seq += n
        tables.append(t)
        schema_ref.append(t.schema)
    return tables, DeleteRows.of(parts, seqs)


def merge_slice(base_table: pa.Table | None, blocks: list[LogBlock], spec: MergeSpec
                ) -> pa.Table:
    """The merged records of a slice (base records first, then the blocks in order). A
    slice without a block to apply reads as its base file, as Hudi's and hudi-rs's readers
    read a file slice without log files: its rows as they are (no key grouping, no copy;
    a base file's keys are distinct when morlog wrote it, and Hudi returns a bulk insert's
    repeated keys as they are)."""
    schemas: list[pa.Schema] = []
    parts: list[pa.Table] = []
    if base_table is not None:
        missing = [c for c in key_columns(spec.key_field) if c not in base_table.column_names]
        if missing:
            raise ContentError(f"base file has no key field {missing[0]!r}",
                               actual=base_table.column_names[:20])
        if not blocks:
            return base_table
        keyed = base_table.append_column(KEY, key_array(base_table, spec.key_field))
        parts.append(keyed.append_column(
            SEQ, from_numpy(np.arange(base_table.num_rows, dtype=np.int64))))
        schemas.append(parts[0].schema)
    start = base_table.num_rows if base_table is not None else 0
    tables, deletes = _frames(blocks, spec, start, schemas)
    parts.extend(tables)
    if not parts and not deletes:
        return pa.table({})
    target = _unified_schema(schemas) if schemas else None
    records = (pa.concat_tables([conform(p, target) for p in parts]) if parts and target
               is not None else None)
    return _pick_winners(records, deletes, spec, n_base=start)


def _unified_schema(schemas: list[pa.Schema]) -> pa.Schema:
    try:
        return pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return schemas[-1]


def conform(t: pa.Table, schema: pa.Schema) -> pa.Table:
    """``t`` in ``schema``'s column order and types: columns cast where they differ, absent
    ones null (rows of blocks or files written under another schema of the table)."""
    cols = []
    for f in schema:
        if f.name in t.column_names:
            col = t.column(f.name)
            cols.append(col if col.type == f.type else col.cast(f.type))
        else:
            cols.append(pa.nulls(t.num_rows, type=f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def _ord_name(i: int) -> str:
    return ORD if i == 0 else f"{ORD}{i}"


def _ordering_column(col: Any, several: bool) -> Any:
    """An ordering column as it compares: with several ordering fields a null numeric value
    is the default ordering value 0 (``OrderingValues.handleNullValue``)."""
    if several and col.null_count and (pa.types.is_integer(col.type)
                                       or pa.types.is_floating(col.type)
                                       or pa.types.is_decimal(col.type)):
        return pc.fill_null(col, pa.scalar(0).cast(col.type))
    return col


def _delete_ordering(values: Sequence[Any], i: int, several: bool) -> list[Any]:
    """The i-th field's ordering value of each delete (None: natural, or not given)."""
    out: list[Any] = []
    for v in values:
        if v is None:
            out.append(None)
        elif several:
            parts = v if isinstance(v, tuple) else (v,)
            item = parts[i] if i < len(parts) else None
            out.append(None if item is None else getattr(item, "value", item))
        else:
            out.append(v if i == 0 else None)
    return out


def _pick_winners(records: pa.Table | None,
                  deletes: DeleteRows | Sequence[tuple[str, int, bool, Any]],
                  spec: MergeSpec, n_base: int = 0) -> pa.Table:
    """The winner of each key among ``records`` and ``deletes`` (column-wise, or as
    ``(key, seq, natural, ordering value)`` tuples). The first ``n_base`` records are the
    base file's: a key it holds more than once merges with the logs at its first copy only,
    and its later copies are kept as they are, as Hudi's reader returns them (the log record
    leaves its map at the first base record of the key:
    ``KeyBasedFileGroupRecordBuffer.hasNextBaseRecord``)."""
    if records is None:
        return pa.table({})
    if not isinstance(deletes, DeleteRows):
        deletes = DeleteRows.of_tuples(deletes)
    n = records.num_rows
    orderings = spec.orderings
    event = (spec.merge_mode == EVENT_TIME and bool(orderings)
             and all(f in records.column_names for f in orderings))
    several = len(orderings) > 1
    cols: dict[str, Any] = {
        KEY: records.column(KEY),
        SEQ: records.column(SEQ),
        DEL: from_numpy(np.zeros(n, dtype=bool)),
        "__row": from_numpy(np.arange(n, dtype=np.int64)),
    }
    ord_types: list[pa.DataType] = []
    if event:
        for i, f in enumerate(orderings):
            col = _ordering_column(records.column(f), several)
            cols[_ord_name(i)] = col
            ord_types.append(col.type)
    cand = pa.table(cols)
    nat = deletes.natural
    if len(deletes):
        nd = len(deletes)
        dcols: dict[str, Any] = {
            KEY: deletes.keys, SEQ: from_numpy(deletes.seq),
            DEL: from_numpy(np.ones(nd, dtype=bool)),
            "__row": from_numpy(np.full(nd, -1, dtype=np.int64))}
        if event:
            # a natural delete carries no ordering value: null sorts first, so any later
            # record of the key beats it, and the barrier below removes all earlier entries
            for i, t in enumerate(ord_types):
                dcols[_ord_name(i)] = deletes.ordering(i, t, several)
        cand = pa.concat_tables([cand, pa.table(dcols).select(cand.column_names)])
    # keys grouped once; the base file's later copies of a key leave the candidates (their
    # rows are kept below)
    groups = key_groups(cand.column(KEY))
    later = _later_copies(groups[:n_base])
    if later.size:
        stay = np.ones(cand.num_rows, dtype=bool)
        stay[later] = False  # the first rows of ``cand`` are the records, in order
        cand, groups = cand.filter(from_numpy(stay)), groups[stay]
    if len(deletes) and event and nat.any():
        bar = pa.table({KEY: deletes.keys.filter(from_numpy(nat)),
                        "__bar": from_numpy(deletes.seq[nat])})
        bar = bar.group_by(KEY).aggregate([("__bar", "max")])
        # the join reorders the rows: the groups travel with them as a column
        j = cand.append_column(GROUP, from_numpy(groups)).join(
            bar, KEY, join_type="left outer", use_threads=False)
        keep = pc.greater_equal(j.column(SEQ), j.column("__bar_max").fill_null(-1))
        cand = j.filter(keep).drop_columns(["__bar_max"])
        groups = to_numpy(cand.column(GROUP))
    mask = np.zeros(n, dtype=bool)
    mask[later] = True
    if cand.num_rows == 0:
        return keep_rows(records.drop_columns([SEQ, KEY]), mask)
    win = _winners(cand, len(ord_types), groups)
    alive = win & ~to_numpy(cand.column(DEL))
    mask[to_numpy(cand.column("__row"))[alive]] = True
    # the winners in record order: a filter, not a take of the (many-chunked) records
    # the key and sequence columns dropped first: filtering copies every column it keeps
    return keep_rows(records.drop_columns([SEQ, KEY]), mask)


def keep_rows(table: pa.Table, mask: np.ndarray) -> pa.Table:
    """``table.filter(mask)``: the same rows and values, but a record batch of ``table``
    whose rows all stay is kept as it is (no copy), and one whose rows all go is dropped
    (the rows of a block no later block updates, a base file no block touches)."""
    if mask.all():
        return table
    out = []
    start = 0
    for batch in table.to_batches():
        m = mask[start:start + batch.num_rows]
        start += batch.num_rows
        if m.all():
            out.append(batch)
        elif m.any():
            out.append(batch.filter(from_numpy(m)))
    return pa.Table.from_batches(out, schema=table.schema)


def key_groups(keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A group number per key, equal exactly for equal keys (null keys: one group of their
    own), from Arrow's hash table (``dictionary_encode``: 20 ms for 150,000 keys here,
    against 30 ms for the XXH64 sort of ``morlog.logformat.xxh64.key_groups``)."""
    arr = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    enc = pc.dictionary_encode(arr)
    idx = enc.indices
    if idx.null_count:
        idx = idx.fill_null(len(enc.dictionary))
    return np.asarray(to_numpy(idx), dtype=np.int64)


def _ordering_values(col: pa.Array | pa.ChunkedArray, idx: np.ndarray) -> np.ndarray:
    """Values of ``col`` at ``idx`` that sort as ``col`` does with nulls first: integers
    without nulls as they are, anything else as dense ranks of the values taken."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_integer(arr.type) and arr.null_count == 0:
        return np.asarray(to_numpy(arr)[idx])
    return np.asarray(to_numpy(rank_nulls_first(arr.take(from_numpy(idx)))))


def _later_copies(groups: np.ndarray) -> np.ndarray:
    """Positions in ``groups`` whose group occurs at an earlier position (ascending)."""
    if groups.size < 2 or int(np.bincount(groups).max()) < 2:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(groups, kind="stable")  # within a group: by position
    s = groups[order]
    later = np.zeros(groups.size, dtype=bool)
    later[1:] = s[1:] == s[:-1]
    return np.sort(order[later]).astype(np.int64)


def _winners(cand: pa.Table, n_ord: int, groups: np.ndarray | None = None) -> np.ndarray:
    """Which candidates win their key: the greatest by (ordering values, nulls first; then
    SEQ). Keys are grouped by hashing (:func:`key_groups`; ``groups``: the caller's),
    not by sorting strings; only the candidates of keys that occur more than once are
    sorted, on integers (ordering values as they are, or as dense ranks)."""
    g = key_groups(cand.column(KEY)) if groups is None else groups
    counts = np.bincount(g)
    multi = counts[g] > 1
    win = ~multi
    idx = np.flatnonzero(multi)
    if idx.size:
        sort_cols = [to_numpy(cand.column(SEQ))[idx]]
        for i in reversed(range(n_ord)):  # np.lexsort: the last key is the primary one
            sort_cols.append(_ordering_values(cand.column(_ord_name(i)), idx))
        gi = g[idx]
        sort_cols.append(gi)
        o = np.lexsort(sort_cols)
        go = gi[o]
        last = np.ones(o.size, dtype=bool)
        last[:-1] = go[:-1] != go[1:]
        win[idx[o[last]]] = True
    return np.asarray(win, dtype=bool)


def _ordering_array(values: Sequence[Any], t: pa.DataType | None) -> pa.Array:
    try:
        return pa.array(list(values), type=t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return pa.nulls(len(values), type=t or pa.null())


def _exact_cast(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether casting an ordering kind's Arrow values to ``target`` gives what
    ``pa.array`` of their Python values with that type gives (the same values, or a failure
    for the same inputs): checked by tests/test_delete_columns_decode.py."""
    if source == target:
        return True
    if pa.types.is_integer(source):
        return bool(pa.types.is_integer(target) or target in (pa.float32(), pa.float64()))
    if source == pa.float32():
        return bool(target == pa.float64())
    if pa.types.is_string(source):
        return bool(pa.types.is_large_string(target))
    if pa.types.is_binary(source):
        return bool(pa.types.is_large_binary(target))
    if pa.types.is_timestamp(source):
        return bool(pa.types.is_timestamp(target) and target.unit == source.unit)
    return False


def _convert(branch: int, values: pa.Array, t: pa.DataType) -> pa.Array | None:
    """Delete ordering values of one kind as type ``t``, as ``_ordering_array`` converts
    them; None where it would fail."""
    if _exact_cast(values.type, t):
        try:
            return values.cast(t)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            return None
    try:
        return pa.array(branch_python(branch, values), type=t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return None


@dataclass
class DeleteRows:
    """The deletes of a slice that carry a key, in order, column-wise: key, sequence number,
    natural order, and the records themselves for their ordering values."""

    keys: pa.Array
    seq: np.ndarray
    natural: np.ndarray
    cols: DeleteColumns | None = None
    #: the ordering values as Python values (the tuple form), when ``cols`` is None
    raw: Sequence[Any] | None = None

    def __len__(self) -> int:
        return int(self.seq.size)

    @classmethod
    def of(cls, parts: Sequence[DeleteColumns], seqs: Sequence[np.ndarray]) -> DeleteRows:
        cols = DeleteColumns.concat(parts)
        seq = np.concatenate(seqs) if seqs else np.zeros(0, dtype=np.int64)
        return cls(cols.keys, seq, cols.natural(), cols)

    @classmethod
    def of_tuples(cls, deletes: Sequence[tuple[str, int, bool, Any]]) -> DeleteRows:
        if not deletes:
            return cls(pa.array([], pa.string()), np.zeros(0, dtype=np.int64),
                       np.zeros(0, dtype=bool), raw=[])
        dkeys, dseq, dnat, dord = zip(*deletes, strict=True)
        return cls(pa.array(dkeys, pa.string()), np.asarray(dseq, dtype=np.int64),
                   np.asarray(dnat, dtype=bool), raw=dord)

    def ordering(self, i: int, t: pa.DataType, several: bool) -> pa.Array:
        """The ``i``-th ordering field's value of each delete as type ``t`` (null: natural,
        or not given); all null where the values do not convert."""
        n = len(self)
        cols = self.cols
        if cols is None or not cols.complete or ARRAY_BRANCH in cols.present:
            # several ordering fields (ArrayWrapper), or values only objects hold
            if cols is not None:
                raw: Sequence[Any] = [None if ov is None else ov.value
                                      for ov in cols.ordering_values()]
            else:
                raw = self.raw or [None] * n
            real = [None if x else v for x, v in zip(self.natural.tolist(), raw, strict=True)]
            return _ordering_array(_delete_ordering(real, i, several), t)
        if i > 0:  # a single value orders by the first field only
            return pa.nulls(n, t)
        real_rows = ~self.natural
        pieces, positions = [], []
        for b in cols.present:
            rows = np.flatnonzero((cols.branches == b) & real_rows) if b else None
            if rows is None or not rows.size:
                continue
            conv = _convert(b, cols.branch_values(b, rows), t)
            if conv is None:  # one value that does not convert: none does
                return pa.nulls(n, t)
            pieces.append(conv)
            positions.append(rows)
        if not pieces:
            return pa.nulls(n, t)
        where = np.full(n, -1, dtype=np.int64)
        where[np.concatenate(positions)] = np.arange(sum(len(p) for p in pieces))
        return pa.concat_arrays(pieces).take(pa.array(where, mask=where < 0))


def read_slice(directory: str, base_file: str | None, log_files: Sequence[str],
               spec: MergeSpec, timeline: Timeline | None,
               storage: Storage | None = None, sealed: bool = False) -> pa.Table:
    """Merged records of one file slice (``directory`` holds its files; ``sealed``: its
    base file's whole-file checksum is checked, ``read_base_file``)."""
    st = storage or LocalStorage()
    base = None
    if base_file is not None:
        want = None
        if spec.columns is not None:
            want = list(dict.fromkeys([*spec.columns, *spec.needed_columns()]))
        path = st.join(directory, base_file)
        instant = None
        if spec.evolve is not None:
            instant = BaseFileName.parse(base_file).instant
            if want is not None:
                want = spec.evolve.columns(instant, want)
        base = read_base_file(path, want, st, sealed=sealed)
        if spec.evolve is not None:
            base = spec.evolve.apply(base, instant, path)
        missing = [c for c in key_columns(spec.key_field) if c not in base.column_names]
        if missing:
            raise ContentError(f"base file has no key field {missing[0]!r}", path=path)
    blocks: list[LogBlock] = []
    readers = []
    try:
        for name in log_files:
            r = LogFileReader(st.source(st.join(directory, name)))
            readers.append(r)
            blocks.extend(r.blocks())
        applied = effective_blocks(blocks, timeline, spec, verify=True)
        return merge_slice(base, applied, spec)
    finally:
        for r in readers:
            r.close()
