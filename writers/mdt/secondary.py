"""The metadata table's secondary index partitions (``secondary_index_<name>``), kept true by
every commit (spec/mdt.md §13).

A secondary index maps each record's value of one column to its record key. Hudi stores it in
the metadata table (MDT) partition ``secondary_index_<name>`` as type-7 records
(``HoodieMetadataPayload``, ``HoodieSecondaryIndexInfo {isDeleted}``) keyed
``<escaped value>$<escaped record key>`` (``SecondaryIndexKeyUtils.constructSecondaryIndexKey``);
the index definition (which column, which layout version) is in the table's index
definition file (``hoodie.table.index.defs.path``, ``HoodieIndexDefinition``).

What a data commit ``I`` adds (``SecondaryIndexRecordGenerationUtils
.convertWriteStatsToSecondaryIndexRecords``): per file group ``I`` writes, the record key ->
value maps of the group's merged file slice before ``I`` and with ``I``'s files; a key new
in the group gives an entry, a key gone gives a delete of its old entry, a changed value a
delete of the old entry and the new entry, an unchanged value nothing. Deletes are delete
records in a DELETE block (a payload with ``isDeleted`` true is a delete,
``HoodieMetadataPayload(String, HoodieSecondaryIndexInfo)``), as Hudi's fixtures hold them.

morlog reads "before" as a snapshot of only the touched file groups, and "after" as the same
file groups read with ``I`` counted as completed (the reader's merge rules decide the winner:
an update with a lower ordering value under EVENT_TIME_ORDERING changes nothing). Replace
commits: the file groups they replace are found from the keys the commit deletes
(``RecordChanges.deleted``) and read as well; their keys leave the index. Everything from
the rows to the MDT keys and their file groups is columnar (pyarrow, numpy); only the
record dicts the MDT writer takes are built per entry.

Two layouts (``HoodieIndexVersion``; spec/mdt.md §13):

- ``V1`` (table version 8, Hudi 1.0): escapes ``\\`` and ``$``; null values are not indexed;
  an entry's file group is ``mapRecordKeyToFileGroupIndex`` of the whole key.
- ``V2`` (table version 9, Hudi 1.1): escapes ``\\``, ``$`` and NUL; a null value is written
  as a single NUL; the file group hashes only ``<escaped value>$``
  (``MetadataPartitionType.SECONDARY_INDEX.getFileGroupMappingFunction``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import morlog.config as conf
from morlog.logformat.errors import MorlogError, UnsupportedSettingError, UsageError
from morlog.logformat.java_hash import java_string_hashes
from morlog.logformat.mdt_records import META_FIELD_NAMES, TYPE_SECONDARY_INDEX
from morlog.logformat.naming import COMPLETED, BaseFileName, LogFileName
from morlog.readers.containment import resolve_under
from morlog.readers.table import FileSlice, Table
from morlog.readers.timeline import Instant, Timeline
from morlog.writers.mdt.keeper import CommitContext, PartitionKeeper, key_to_file_group_index

#: ``HoodieTableMetadataUtil.PARTITION_NAME_SECONDARY_INDEX_PREFIX``
PARTITION_PREFIX = "secondary_index_"
#: ``HoodieTableConfig.RELATIVE_INDEX_DEFINITION_PATH`` and its default
INDEX_DEFS_PROPERTY = conf.INDEX_DEFS_PATH
DEFAULT_INDEX_DEFS_PATH = ".hoodie/.index_defs/index.json"
#: the switch that drops every secondary index (spec/table.md §15)
SWITCH = conf.METADATA_SECONDARY_ENABLE
#: ``HoodieMetadataPayload.SECONDARY_INDEX_RECORD_KEY_SEPARATOR`` and
#: ``SecondaryIndexKeyUtils.ESCAPE_CHAR`` / ``NULL_CHAR``
SEPARATOR = "$"
ESCAPE = "\\"
NULL_CHAR = "\x00"
#: ``HoodieIndexVersion`` of a definition without ``version`` (table version 8)
DEFAULT_VERSION = {8: 1, 9: 2}

if TYPE_CHECKING:
    from morlog.writers.mdt.writer import MetadataTable


@dataclass(frozen=True)
class IndexDefinition:
    """One secondary index (``HoodieIndexDefinition``)."""

    #: the MDT partition, ``secondary_index_<name>`` (the definition's ``indexName``)
    partition: str
    #: the one data column indexed (``sourceFields``)
    field: str
    #: ``HoodieIndexVersion``: 1 or 2
    version: int


def partition_of(name: str) -> str:
    """The MDT partition of index ``name`` (``rider_idx`` or ``secondary_index_rider_idx``)."""
    return name if name.startswith(PARTITION_PREFIX) else PARTITION_PREFIX + name


def _refuse(table: Table, partition: str, why: str) -> UnsupportedSettingError:
    return UnsupportedSettingError(
        f"morlog cannot keep the metadata table's {partition!r} partition true: {why}; set "
        f"{SWITCH}=false to drop it as Hudi's writer does",
        property=conf.METADATA_PARTITIONS,
        value=table.config.get(conf.METADATA_PARTITIONS), path=table.config.path)


def read_definition(table: Table, partition: str) -> IndexDefinition:
    """The definition of secondary index ``partition`` from the table's index definition
    file (``hoodie.table.index.defs.path`` under the table, Hudi's default
    ``.hoodie/.index_defs/index.json``: ``{"indexDefinitions": {partition: {...}}}``), checked
    to be one morlog keeps (an :class:`UnsupportedSettingError` otherwise): type
    ``secondary_index``, function ``identity``, one source field, version ``V1`` on table
    version 8 and ``V2`` on 9 (a missing version is ``V1``)."""
    rel = table.config.get(INDEX_DEFS_PROPERTY) or DEFAULT_INDEX_DEFS_PATH
    try:
        path = resolve_under(table.path, rel)
        data = table.storage.read(path)
    except (MorlogError, OSError) as exc:
        raise _refuse(table, partition, f"its index definition file {rel!r} cannot be read "
                                         f"({exc})") from None
    try:
        defs = json.loads(data.decode("utf-8"))["indexDefinitions"]
        d = defs[partition]
        if not isinstance(d, dict):
            raise TypeError("not an object")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise _refuse(table, partition, f"{rel} holds no definition of it") from None
    if d.get("indexType") != "secondary_index":
        raise _refuse(table, partition, f"its definition has indexType "
                                        f"{d.get('indexType')!r}, not secondary_index")
    if d.get("indexFunction") not in (None, "", "identity"):
        raise _refuse(table, partition, f"it indexes the expression "
                                        f"{d.get('indexFunction')!r}, not a column")
    fields = d.get("sourceFields")
    if not isinstance(fields, list) or len(fields) != 1 or not isinstance(fields[0], str):
        raise _refuse(table, partition, f"it indexes {fields!r}, not exactly one column")
    raw = d.get("version")
    tv = table.version
    if tv not in DEFAULT_VERSION:
        raise _refuse(table, partition, f"table version {tv} has no secondary index layout "
                                        "morlog knows (8: V1, 9: V2)")
    if raw is None:
        version = 1
    elif isinstance(raw, str) and raw.upper() in ("V1", "V2"):
        version = int(raw[1:])
    else:
        raise _refuse(table, partition, f"index version {raw!r} is not V1 or V2")
    if version != DEFAULT_VERSION[tv]:
        raise _refuse(table, partition, f"an index of version V{version} on a table of version "
                                        f"{tv} (morlog writes V1 on 8 and V2 on 9, the "
                                        "versions Hudi creates there)")
    return IndexDefinition(partition, fields[0], version)


# --- values, keys, file groups ---------------------------------------------------------------


def value_type_supported(t: pa.DataType, version: int) -> bool:
    """Whether a column of type ``t`` renders to Hudi's secondary key text in ``version``:
    strings and integers always; dates (epoch days) and UTC timestamps in microseconds
    (epoch microseconds) in V2, as Hudi 1.1's Spark reader context hands them over (its
    ``toString``). Hudi 1.0 renders dates differently in its two code paths, floats depend
    on the JVM's ``Double.toString``, and decimals, booleans, bytes are refused by Hudi."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t):
        return True
    if version >= 2 and pa.types.is_date32(t):
        return True
    return (version >= 2 and pa.types.is_timestamp(t) and t.unit == "us"
            and t.tz is not None)


def render_values(col: pa.Array | pa.ChunkedArray, version: int) -> pa.Array:
    """The secondary key text of every value of ``col`` (null stays null); a
    :class:`UsageError` for a type :func:`value_type_supported` refuses."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    t = arr.type
    if not value_type_supported(t, version):
        raise UsageError(f"a secondary index value of type {t} has no Hudi text form here",
                         actual=str(t))
    if pa.types.is_date32(t):
        arr = arr.cast(pa.int32())
    elif pa.types.is_timestamp(t):
        arr = arr.cast(pa.int64())
    return arr.cast(pa.string())


def escape(values: pa.Array, version: int) -> pa.Array:
    """``SecondaryIndexKeyUtils.escapeSpecialChars`` column-wise: ``\\`` and ``$`` (and NUL
    in V2) prefixed with ``\\``; a null becomes a single NUL (V2; V1 never sees one)."""
    out = pc.replace_substring(values, ESCAPE, ESCAPE + ESCAPE)
    out = pc.replace_substring(out, SEPARATOR, ESCAPE + SEPARATOR)
    if version >= 2:
        out = pc.replace_substring(out, NULL_CHAR, ESCAPE + NULL_CHAR)
    return pc.fill_null(out, NULL_CHAR)


def index_keys(values: pa.Array, record_keys: pa.Array, version: int) -> pa.Array:
    """The MDT keys ``<escaped value>$<escaped record key>``
    (``SecondaryIndexKeyUtils.constructSecondaryIndexKey``)."""
    return pc.binary_join_element_wise(escape(values, version), escape(record_keys, version),
                                       SEPARATOR)


_KEY_RE = r"(?s)^(?P<value>(?:[^\\$]|\\.)*)\$(?P<record_key>.*)$"


def decode_keys(keys: pa.Array, version: int) -> pa.Table:
    """``SecondaryIndexKeyUtils.getSecondaryKeyRecordKeyPair`` column-wise: the value and
    record key of each MDT key (split at the first unescaped ``$``, unescaped; a value that
    is a single NUL is null in V2)."""
    parts = pc.extract_regex(keys, _KEY_RE)
    if parts.null_count:
        raise UsageError("a secondary index key without an unescaped '$'",
                         actual=keys.filter(pc.is_null(parts))[0].as_py())
    raw_value = parts.field("value")
    value = pc.replace_substring_regex(raw_value, r"(?s)\\(.)", r"\1")
    if version >= 2:
        value = pc.if_else(pc.equal(raw_value, NULL_CHAR), pa.scalar(None, pa.string()), value)
    record_key = pc.replace_substring_regex(parts.field("record_key"), r"(?s)\\(.)", r"\1")
    return pa.table({"secondary_key": value, "record_key": record_key})


def file_group_indexes(keys: pa.Array, values: pa.Array, count: int, version: int
                       ) -> np.ndarray:
    """The file group (of ``count``) of each MDT key (``values``: its unescaped value):
    ``mapRecordKeyToFileGroupIndex`` of the whole key (V1) or of ``<escaped value>$`` (V2),
    ``abs(abs(h) mod count)`` in Java's int arithmetic."""
    hashed = keys if version < 2 else pc.binary_join_element_wise(
        escape(values, version), pa.scalar("", pa.string()), SEPARATOR)
    out: np.ndarray = np.abs(java_string_hashes(hashed)) % count
    return out


def _prefix_of(key: str) -> str:
    """``SecondaryIndexKeyUtils.getUnescapedSecondaryKeyPrefixFromSecondaryIndexKey``: the key
    up to and including its first unescaped ``$``."""
    escaped = False
    for i, c in enumerate(key):
        if escaped:
            escaped = False
        elif c == ESCAPE:
            escaped = True
        elif c == SEPARATOR:
            return key[: i + 1]
    raise UsageError("a secondary index key without an unescaped '$'", actual=key)


# --- what a commit changes ---------------------------------------------------------------------

_ROWS = pa.schema([("g", pa.int32()), ("rk", pa.string()), ("s", pa.string())])


def index_changes(before: pa.Table, after: pa.Table, version: int
                  ) -> tuple[pa.Table, pa.Table]:
    """The entries to write and the entries to delete, given the file groups' record key ->
    value rows before and after a commit (columns ``g`` file group, ``rk`` record key, ``s``
    value text or null): per file group and key, a new key or a changed value writes the
    new entry, a gone key or a changed value deletes the old one, an equal value (null equal
    to null) does nothing; V1 ignores null values (Hudi 1.0 indexes none). An entry both
    written and deleted is written (a key moving between file groups; Hudi's
    ``reduceByKeys`` prefers the non-deleted record). Both results: columns ``key`` (MDT
    key) and ``value``, distinct keys, sorted."""
    b = before.select(_ROWS.names).cast(_ROWS)
    a = after.select(_ROWS.names).cast(_ROWS)
    b = b.append_column("in_b", pa.array(np.ones(b.num_rows, dtype=bool)))
    a = a.append_column("in_a", pa.array(np.ones(a.num_rows, dtype=bool)))
    j = b.join(a, keys=["g", "rk"], join_type="full outer", left_suffix="_b",
               right_suffix="_a", use_threads=False)
    in_b = pc.fill_null(j.column("in_b"), False)
    in_a = pc.fill_null(j.column("in_a"), False)
    sb, sa = j.column("s_b"), j.column("s_a")
    same = pc.or_(pc.and_(pc.is_null(sb), pc.is_null(sa)), pc.fill_null(pc.equal(sb, sa), False))
    changed = pc.and_(pc.and_(in_b, in_a), pc.invert(same))
    put = pc.and_(in_a, pc.or_(pc.invert(in_b), changed))
    drop = pc.and_(in_b, pc.or_(pc.invert(in_a), changed))
    if version < 2:
        put = pc.and_(put, pc.is_valid(sa))
        drop = pc.and_(drop, pc.is_valid(sb))
    rk = j.column("rk")

    def entries(mask: Any, values: Any) -> pa.Table:
        v = values.filter(mask).combine_chunks()
        k = index_keys(v, rk.filter(mask).combine_chunks(), version)
        t = pa.table({"key": k, "value": v})
        t = t.group_by("key", use_threads=False).aggregate([("value", "first")])
        t = t.rename_columns(["key", "value"])
        return t.sort_by("key")

    puts = entries(put, sa)
    drops = entries(drop, sb)
    drops = drops.filter(pc.invert(pc.is_in(drops.column("key"), value_set=puts.column("key"))))
    return puts, drops


def secondary_index_record(key: str) -> dict[str, Any]:
    """The type-7 record of MDT key ``key`` (``HoodieMetadataPayload
    .createSecondaryIndexRecord``, ``isDeleted`` false)."""
    rec: dict[str, Any] = {n: None for n in META_FIELD_NAMES}
    rec.update(key=key, type=TYPE_SECONDARY_INDEX, filesystemMetadata=None,
               BloomFilterMetadata=None, ColumnStatsMetadata=None, recordIndexMetadata=None,
               SecondaryIndexMetadata={"isDeleted": False})
    return rec


def _with_instant(table: Table, instant: str) -> Table:
    """``table`` read as if its pending ``instant`` were completed (its files counted)."""
    tl = table.timeline
    done = Instant(instant, "deltacommit", COMPLETED, instant, "")
    view = copy.copy(table)
    view.timeline = Timeline(tl.directory, [i for i in tl.instants if i.requested != instant]
                             + [done], tl.layout, tl.storage)
    return view


def _written_groups(ctx: CommitContext) -> list[tuple[str, str]]:
    """(partition, file id) of every data file group the commit wrote."""
    out: dict[tuple[str, str], None] = {}
    for part, files in ctx.written.items():
        for name in files:
            if LogFileName.matches(name):
                out[(part, LogFileName.parse(name).file_id)] = None
            elif BaseFileName.matches(name):
                out[(part, BaseFileName.parse(name).file_id)] = None
    return list(out)


class SecondaryIndexKeeper(PartitionKeeper):
    """Keeps ``secondary_index_<name>`` true: the entries and deletes of each commit's
    changed values (module docstring, spec/mdt.md §13)."""

    def __init__(self, partition: str) -> None:
        self.partition = partition
        #: MDT key -> file group index of the last commit's entries, with the group count
        self._groups: dict[str, int] = {}
        self._count = 0
        self._version = 1

    # --- plan time ---------------------------------------------------------------------

    def check(self, table: Table) -> None:
        """An :class:`UnsupportedSettingError` (before anything is written) unless the table's
        definition of this index is one morlog keeps and its column renders to Hudi's text
        (:func:`value_type_supported`)."""
        d = read_definition(table, self.partition)
        try:
            schema = table.arrow_schema()
        except MorlogError as exc:
            raise _refuse(table, self.partition, f"the table's schema is unknown ({exc})"
                          ) from None
        if d.field not in schema.names:
            raise _refuse(table, self.partition, f"it indexes {d.field!r}, which is not a "
                                                 "top-level column of the table")
        t = schema.field(d.field).type
        if not value_type_supported(t, d.version):
            raise _refuse(table, self.partition, f"its column {d.field!r} has type {t}, whose "
                                                 f"V{d.version} key text morlog does not write "
                                                 "(strings, integers; V2 also dates and UTC "
                                                 "microsecond timestamps)")
        if not table.config.populate_meta_fields and len(table.config.record_key_fields) != 1:
            raise _refuse(table, self.partition, "the table has neither meta fields nor a "
                                                 "single record key field")

    # --- commit time -------------------------------------------------------------------

    def records(self, mdt: MetadataTable, ctx: CommitContext
                ) -> tuple[list[dict[str, Any]], list[str]]:
        if ctx.rewrite:  # a compaction: the rows, hence their values, stay as they were
            return [], []
        table = Table(mdt.data_location)
        pending = table.timeline.get(ctx.instant)
        written = _written_groups(ctx)
        replace = (pending is not None and not pending.is_completed
                   and pending.action == "replacecommit")
        if replace and ctx.changes is None:
            raise UsageError("this replace commit does not report the keys it removes, which "
                             f"the metadata table's {self.partition} partition needs",
                             path=mdt.path)
        if not written and not replace:
            return [], []
        d = read_definition(table, self.partition)
        self._version = d.version
        before_view, after_view = table, _with_instant(table, ctx.instant)
        groups: list[tuple[str, str]] = list(written)
        gone: dict[str, pa.Array] = {}  # partition -> keys the commit deleted there
        if replace:
            assert ctx.changes is not None
            deleted = ctx.changes().deleted
            if deleted:
                pairs = pa.array(deleted, type=pa.struct([("k", pa.string()),
                                                          ("p", pa.string())]))
                for p in pc.unique(pairs.field("p")).to_pylist():
                    gone[p] = pairs.field("k").filter(pc.equal(pairs.field("p"), p))
        mine = set(written)
        extra = [(p, s.file_id) for p in gone for s in before_view.file_slices(partition=p)
                 if (p, s.file_id) not in mine]
        groups += extra
        before = self._rows(before_view, groups, d)
        after_written = self._rows(after_view, written, d)
        if extra:
            # a group a replace commit replaced keeps no key the commit deleted
            first = len(written)
            rest = before.filter(pc.greater_equal(before.column("g"), first))
            keep = np.ones(rest.num_rows, dtype=bool)
            gidx = rest.column("g").to_numpy()
            for i, (p, _f) in enumerate(extra):
                sel = gidx == first + i
                if sel.any():
                    keys = rest.column("rk").filter(pa.array(sel))
                    keep[sel] = ~pc.is_in(keys, value_set=gone[p]).to_numpy(
                        zero_copy_only=False)
            after = pa.concat_tables([after_written, rest.filter(pa.array(keep))])
        else:
            after = after_written
        puts, drops = index_changes(before, after, d.version)
        count = len(mdt.file_groups(self.partition))
        self._count = count
        self._groups = {}
        if count:
            for t in (puts, drops):
                idx = file_group_indexes(t.column("key").combine_chunks(),
                                         t.column("value").combine_chunks(), count, d.version)
                self._groups.update(zip(t.column("key").to_pylist(), idx.tolist(),
                                        strict=True))
        recs = [secondary_index_record(k) for k in puts.column("key").to_pylist()]
        return recs, drops.column("key").to_pylist()

    def file_group_index(self, key: str, count: int) -> int:
        """The file group of MDT key ``key`` (V1: the whole key; V2: its value prefix)."""
        if count == self._count and key in self._groups:
            return self._groups[key]
        return key_to_file_group_index(key if self._version < 2 else _prefix_of(key), count)

    def _rows(self, view: Table, groups: Sequence[tuple[str, str]], d: IndexDefinition
              ) -> pa.Table:
        """Columns ``g`` (position in ``groups``), ``rk``, ``s`` of the merged rows of the
        file groups ``groups`` in ``view`` (record key and indexed column only)."""
        slices: dict[str, dict[str, FileSlice]] = {}
        for p in dict.fromkeys(p for p, _ in groups):
            slices[p] = {s.file_id: s for s in view.file_slices(partition=p)}
        key = view.key_field
        key_cols = [key] if isinstance(key, str) else list(key.columns)
        parts = []
        for i, (p, fid) in enumerate(groups):
            s = slices[p].get(fid)
            if s is None:
                continue
            rows = view.read_slice(s, columns=list(dict.fromkeys([*key_cols, d.field])))
            if not rows.num_rows:
                continue
            if isinstance(key, str):
                rk = rows.column(key).cast(pa.string())
            else:  # virtual keys: derived as Hudi's reader derives them
                rk = key.keys(rows)
            if d.field in rows.column_names:
                values = render_values(rows.column(d.field), d.version)
            else:  # a column the slice's files do not have yet
                values = pa.nulls(rows.num_rows, pa.string())
            parts.append(pa.table({
                "g": pa.array(np.full(rows.num_rows, i, dtype=np.int32)),
                "rk": rk.combine_chunks() if isinstance(rk, pa.ChunkedArray) else rk,
                "s": values}, schema=_ROWS))
        return pa.concat_tables(parts) if parts else _ROWS.empty_table()


# --- reading -----------------------------------------------------------------------------------


def secondary_index(mdt: MetadataTable, name: str) -> pa.Table:
    """Secondary index ``name`` (``rider_idx`` or ``secondary_index_rider_idx``) as Hudi's
    readers merge it: per MDT key the latest record of committed MDT instants (base file,
    then log blocks oldest first), a delete (or ``isDeleted`` true) removing it; each key
    decoded into ``secondary_key`` (the value text, null for V2's NUL) and ``record_key``,
    sorted by both."""
    partition = partition_of(name)
    table = Table(mdt.data_location)
    try:
        version = read_definition(table, partition).version
    except UnsupportedSettingError:
        version = DEFAULT_VERSION.get(table.version, 2)
    recs = mdt.partition_records(partition)
    keys = [r["deleted"] if "deleted" in r else r["key"] for r in recs]
    dead = ["deleted" in r or bool((r.get("SecondaryIndexMetadata") or {}).get("isDeleted"))
            for r in recs]
    t = pa.table({"key": pa.array(keys, pa.string()), "dead": pa.array(dead, pa.bool_()),
                  "seq": pa.array(np.arange(len(keys), dtype=np.int64))})
    if t.num_rows:
        # the latest record or delete of each key (seq is the row number)
        last = t.group_by("key", use_threads=False).aggregate([("seq", "max")])
        t = t.take(last.column("seq_max"))
    return _decode_live(t, version)


def _decode_live(t: pa.Table, version: int) -> pa.Table:
    live = t.filter(pc.invert(t.column("dead"))) if t.num_rows else t
    out = decode_keys(live.column("key").combine_chunks() if live.num_rows
                      else pa.array([], pa.string()), version)
    return out.sort_by([("secondary_key", "ascending"), ("record_key", "ascending")])


__all__ = ["DEFAULT_INDEX_DEFS_PATH", "INDEX_DEFS_PROPERTY", "PARTITION_PREFIX",
           "IndexDefinition", "SecondaryIndexKeeper", "decode_keys", "escape",
           "file_group_indexes", "index_changes", "index_keys", "java_string_hashes",
           "partition_of", "read_definition", "render_values", "secondary_index",
           "secondary_index_record", "value_type_supported"]
