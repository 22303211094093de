"""The CDC query's work: a table's record-level changes between two instants (spec/cdc.md
§4). :meth:`Table.changes <morlog.readers.table.Table.changes>` (and
:func:`morlog.readers.cdc.read_cdc`) resolve the range and call :func:`table_changes`; this
module does not import ``morlog.readers.table`` (it works on the table it is given).

The query returns Hudi's CDC query columns (``HoodieCDCUtils.CDC_COLUMNS``, the Spark
``CDCRelation.cdcSchema``): ``op`` (``i``, ``u``, ``d``), ``ts_ms`` (the instant of the commit
that made the change), ``before`` and ``after`` (the record before and after the change as a
JSON object, null for an insert's ``before`` and a delete's ``after``), all strings.

Which commits: the completed ``commit``/``deltacommit``/``replacecommit`` instants in the range
(``begin`` exclusive, ``end`` inclusive; table version 8+ by completion time, version 6 by
instant time, as Hudi's incremental queries resolve them) whose operation yields changes
(``WriteOperationType.yieldChanges``: not compaction, log compaction or clustering), as
``HoodieCDCExtractor`` selects them.

Per commit and file group it wrote (``HoodieCDCExtractor.parseWriteStat``):

- AS_IS: the write stat names CDC log files (``cdcStats``) and the table logs
  ``DATA_BEFORE_AFTER``: the CDC blocks are the changes (what morlog writes for its log
  appends, ``morlog.writers.core.cdc``).
- otherwise the changes are inferred, as ``CDCFileGroupIterator`` does for LOG_FILE,
  BASE_FILE_INSERT, BASE_FILE_DELETE and REPLACE_COMMIT: the file group as of the instant
  before the commit against the file group as of the commit (a replaced group has no rows
  after it), keyed by record key. A key only after is an insert, only before a delete, in
  both with a different record an update; an unchanged record is no change (Hudi compares
  the merged record with the one before). The images of inferred changes carry the meta
  fields, as Hudi's (the file slices' rows); those of CDC blocks do not.

Hudi refuses the CDC query on a table without ``hoodie.table.cdc.enabled=true`` ("It isn't a
CDC hudi table"); so does :func:`read_cdc` (:class:`UsageError`). A range that reaches back
before a completed clean's earliest commit to retain is refused as time travel is
(:meth:`Table.check_time_travel`): the files the changes are inferred from are gone.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import morlog.config as conf
from morlog.logformat.blocks import META_FIELDS
from morlog.logformat.cdc import (
    AFTER,
    BEFORE,
    CDC_COLUMNS,
    DATA_BEFORE_AFTER,
    DELETE,
    INSERT,
    OP,
    TS_MS,
    UPDATE,
    check_cdc_rows,
    logging_mode,
)
from morlog.logformat.constants import BlockType
from morlog.logformat.errors import ContentError, UsageError
from morlog.logformat.naming import BaseFileName, LogFileName

from .logfile import LogFileReader
from .storage import BytesSource
from .timeline import Instant

#: the actions whose completed instants may yield changes (``HoodieCDCExtractor``)
CDC_ACTIONS = frozenset({"commit", "deltacommit", "replacecommit"})
#: the operations whose commits yield changes (``WriteOperationType.yieldChanges``, its
#: list; not the prepped inserts, compaction, log compaction, clustering...)
YIELD_CHANGES = frozenset({"INSERT", "UPSERT", "UPSERT_PREPPED", "DELETE", "DELETE_PREPPED",
                           "BULK_INSERT", "DELETE_PARTITION", "INSERT_OVERWRITE",
                           "INSERT_OVERWRITE_TABLE", "BOOTSTRAP"})

CDC_SCHEMA = pa.schema([(OP, pa.string()), (TS_MS, pa.string()), (BEFORE, pa.string()),
                        (AFTER, pa.string())])


def cdc_enabled(table: Any) -> bool:
    """Whether a table (``morlog.readers.table.Table``) has CDC enabled."""
    return (table.config.get(conf.TABLE_CDC_ENABLED) or "false").strip().lower() == "true"


def instants_in_range(table: Any, lo: str | None, hi: str | None) -> list[Instant]:
    """The completed instants of ``table`` in (``lo``, ``hi``] (instants as
    ``yyyyMMddHHmmssSSS``; None: open): by completion time for table version 8+, by
    instant time for version 6; oldest first (by instant time)."""
    out = []
    for inst in table.timeline.instants:
        if not inst.is_completed:
            continue
        t = (inst.completed or inst.requested) if table.version >= 8 else inst.requested
        if lo is not None and t <= lo:
            continue
        if hi is not None and t > hi:
            continue
        out.append(inst)
    return out


def table_changes(table: Any, lo: str | None, hi: str | None,
                  columns: Sequence[str] | None = None) -> pa.Table:
    """The changes of ``table``'s commits in (``lo``, ``hi``] (instants, resolved already)
    as Hudi's CDC query returns them: columns ``op``, ``ts_ms``, ``before``, ``after``
    (strings; ``columns``: a subset, in that order). See the module docstring."""
    if not cdc_enabled(table):
        raise UsageError("the CDC query reads tables with hoodie.table.cdc.enabled=true "
                         "(Hudi: \"It isn't a CDC hudi table\")", path=table.path,
                         expected="true", actual=table.config.get(conf.TABLE_CDC_ENABLED))
    if columns is not None:
        if isinstance(columns, str):
            raise UsageError("columns is a list of column names, not a string", actual=columns)
        unknown = [c for c in columns if c not in CDC_COLUMNS]
        if unknown:
            raise UsageError(f"unknown CDC column(s) {unknown}; the CDC query's columns are "
                             f"{', '.join(CDC_COLUMNS)}", path=table.path)
    mode = logging_mode(table.config.get(conf.TABLE_CDC_LOGGING_MODE))
    reader = _Reader(table, mode)
    parts = [reader.changes(inst) for inst in instants_in_range(table, lo, hi)
             if inst.action in CDC_ACTIONS]
    out = pa.concat_tables([p for p in parts if p.num_rows] or [CDC_SCHEMA.empty_table()])
    if columns is not None:
        out = out.select([c for c in CDC_COLUMNS if c in columns])
    return out


@dataclass
class _Group:
    partition: str
    file_id: str
    #: CDC log files (relative to the table) the write stat names, with their sizes
    cdc_files: tuple[tuple[str, Any], ...] = ()
    #: Hudi's BASE_FILE_INSERT: the commit wrote only a new base file of inserts here
    base_insert: bool = False


class _Reader:
    def __init__(self, table: Any, mode: str) -> None:
        self.table = table
        self.mode = mode
        self._slices: dict[tuple[str, str | None], dict[str, Any]] = {}
        self.key_field = table.key_field

    # --- per commit -------------------------------------------------------------------

    def changes(self, inst: Instant) -> pa.Table:
        md = self.table.timeline.metadata(inst)
        where = self.table.storage.join(self.table.timeline.directory, inst.file_name)
        operation = str(md.get("operationType") or "").upper()
        if operation not in YIELD_CHANGES:
            return CDC_SCHEMA.empty_table()
        groups = _groups(md, where, inst.requested)
        crcs = _crcs(md, where)
        before: list[str | None] = []  # the state before the commit, found once if needed
        parts = []
        for g in groups:
            if g.cdc_files and self.mode == DATA_BEFORE_AFTER:
                parts.append(self._as_is(g, crcs))
            elif g.base_insert:
                # BASE_FILE_INSERT: a new base file of inserts only; no state before it
                parts.append(self._inferred(g, None, inst.requested))
            else:
                if not before:
                    before.append(self._before(inst))
                parts.append(self._inferred(g, before[0], inst.requested))
        parts = [p for p in parts if p.num_rows]
        return pa.concat_tables(parts) if parts else CDC_SCHEMA.empty_table()

    def _before(self, inst: Instant) -> str | None:
        """The as-of instant of the table just before ``inst`` (None: it is the first)."""
        prev = [i.requested for i in self.table.timeline.instants
                if i.is_completed and i.requested < inst.requested]
        if not prev:
            return None
        at = str(prev[-1])
        self.table.check_time_travel(at)
        return at

    # --- AS_IS: CDC blocks --------------------------------------------------------------

    def _as_is(self, g: _Group, crcs: dict[str, int]) -> pa.Table:
        parts = []
        for rel, size in g.cdc_files:
            path = _under(self.table, rel)
            try:
                data = self.table.storage.read(path)
            except OSError:
                raise ContentError("a CDC log file its commit names (cdcStats) is missing",
                                   path=path) from None
            if isinstance(size, int) and not isinstance(size, bool) and len(data) != size:
                # a CDC file is written whole, once: another size is damage (a cut file
                # would lose changes without a word)
                raise ContentError("a CDC log file is not the size its commit recorded "
                                   "(cdcStats)", path=path, expected=size, actual=len(data))
            crc = crcs.get(rel)
            if crc is not None and zlib.crc32(data) != crc:
                raise ContentError("a CDC log file's bytes do not match the CRC-32 its commit "
                                   f"recorded ({conf.STAT_CDC_CRC32})", path=path,
                                   expected=crc, actual=zlib.crc32(data))
            with LogFileReader(BytesSource(data, path)) as r:
                for b in r.blocks():
                    if b.block_type == BlockType.CORRUPT:
                        raise ContentError("a CDC log file holds a damaged block", path=path,
                                           offset=b.offset)
                    if b.block_type != BlockType.CDC_DATA:
                        raise ContentError("a CDC log file holds a block that is not CDC data",
                                           path=path, offset=b.offset,
                                           actual=b.block_type.name)
                    rows = check_cdc_rows(b.to_arrow(), path=path, offset=b.content_offset)
                    if rows.column_names != list(CDC_COLUMNS):
                        raise ContentError("a CDC block of a DATA_BEFORE_AFTER table lacks "
                                           "before and after images", path=path,
                                           offset=b.offset, actual=rows.column_names)
                    parts.append(pa.table({
                        OP: rows.column(OP), TS_MS: rows.column(TS_MS),
                        BEFORE: json_column(rows.column(BEFORE)),
                        AFTER: json_column(rows.column(AFTER))}, schema=CDC_SCHEMA))
        return pa.concat_tables(parts) if parts else CDC_SCHEMA.empty_table()

    # --- inferred -----------------------------------------------------------------------

    def _slice(self, partition: str, fid: str, as_of: str | None) -> Any:
        key = (partition, as_of)
        got = self._slices.get(key)
        if got is None:
            try:
                listed = self.table.file_slices(as_of, partition)
            except FileNotFoundError:
                listed = []
            got = self._slices[key] = {s.file_id: s for s in listed}
        return got.get(fid)

    def _group_rows(self, partition: str, fid: str, as_of: str | None) -> pa.Table | None:
        s = self._slice(partition, fid, as_of)
        if s is None:
            return None
        return self.table.read_slice(s, as_of)

    def _inferred(self, g: _Group, before_at: str | None, instant: str) -> pa.Table:
        before = (self._group_rows(g.partition, g.file_id, before_at)
                  if before_at is not None else None)
        after = self._group_rows(g.partition, g.file_id, instant)
        d = diff_rows(before, after, self.table.key_field)
        n = len(d.op)
        return pa.table({OP: d.op, TS_MS: pa.repeat(pa.scalar(instant, pa.string()), n),
                         BEFORE: json_rows(d.before), AFTER: json_rows(d.after)},
                        schema=CDC_SCHEMA)


def _under(table: Any, rel: str) -> str:
    """A path the commit metadata names, checked to stay inside the table."""
    from .containment import check_file_name

    parts = rel.replace("\\", "/").split("/")
    if not parts or any(p in ("", ".", "..") for p in parts):
        raise ContentError("a cdcStats path leaves the table", path=table.path, actual=rel)
    name = check_file_name(parts[-1])
    # Hudi 0.13 and 0.14 named CDC log files with "-cdc" (their LOG_FILE_PATTERN's "(.cdc)"
    # matches both); the name is checked in today's form and opened as it is
    canonical = name[:-4] + ".cdc" if name.endswith("-cdc") else name
    if not LogFileName.matches(canonical) or not LogFileName.parse(canonical).cdc:
        raise ContentError("a cdcStats path does not name a CDC log file", path=table.path,
                           actual=rel)
    return str(table.storage.join(table.slice_dir("/".join(parts[:-1])), name))


def _crcs(md: dict[str, Any], where: str) -> dict[str, int]:
    """The CRC-32 of each CDC file morlog's commit recorded (none for Hudi's commits)."""
    extra = md.get("extraMetadata")
    raw = extra.get(conf.STAT_CDC_CRC32) if isinstance(extra, dict) else None
    if raw is None:
        return {}
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
            for k, v in value.items()):
        raise ContentError(f"{conf.STAT_CDC_CRC32} is not a map of paths to CRCs", path=where)
    return value


def _base_insert(e: dict[str, Any], instant: str) -> bool:
    """Whether a write stat is a new base file of inserts only (``parseWriteStat``: no CDC
    files, a base file, no update writes and, when counted, as many inserts as writes)."""
    name = str(e.get("path") or "").rsplit("/", 1)[-1]
    if e.get("cdcStats") or not BaseFileName.matches(name):
        return False
    if BaseFileName.parse(name).instant != instant:
        return False
    updates, writes, inserts = (e.get(k) for k in ("numUpdateWrites", "numWrites",
                                                    "numInserts"))
    if isinstance(updates, int) and updates:
        return False
    return not (isinstance(inserts, int) and isinstance(writes, int) and inserts != writes)


def _groups(md: dict[str, Any], where: str, instant: str) -> list[_Group]:
    """The file groups a commit wrote or replaced, with their CDC files, in metadata order."""
    out: dict[tuple[str, str], _Group] = {}
    inserts_only: dict[tuple[str, str], bool] = {}
    stats = md.get("partitionToWriteStats") or {}
    if not isinstance(stats, dict):
        raise ContentError("partitionToWriteStats is not a map", path=where)
    for partition, entries in stats.items():
        if not isinstance(entries, list):
            raise ContentError("a partition's write stats are not a list", path=where,
                               actual=str(partition))
        for e in entries:
            if not isinstance(e, dict) or not isinstance(e.get("fileId"), str):
                raise ContentError("a write stat has no fileId", path=where)
            key = (str(partition), e["fileId"])
            g = out.setdefault(key, _Group(*key))
            inserts_only[key] = inserts_only.get(key, True) and _base_insert(e, instant)
            cdc = e.get("cdcStats")
            if cdc:
                if not isinstance(cdc, dict) or not all(isinstance(k, str) for k in cdc):
                    raise ContentError("cdcStats is not a map of paths", path=where)
                g.cdc_files = tuple(dict.fromkeys([*g.cdc_files, *cdc.items()]))
    replaced = md.get("partitionToReplaceFileIds") or {}
    if not isinstance(replaced, dict):
        raise ContentError("partitionToReplaceFileIds is not a map", path=where)
    for partition, fids in replaced.items():
        if not isinstance(fids, list) or not all(isinstance(f, str) for f in fids):
            raise ContentError("replaced file ids are not a list of strings", path=where)
        for f in fids:
            out.setdefault((str(partition), f), _Group(str(partition), f))
            inserts_only[(str(partition), f)] = False
    for key, g in out.items():
        g.base_insert = inserts_only.get(key, False)
    return list(out.values())


# --- the diff of two states of a file group --------------------------------------------------


@dataclass
class RowChanges:
    """Changes of one file group: ``op`` per change, the rows before (null rows for inserts)
    and after (null rows for deletes), aligned."""

    op: pa.Array
    before: pa.Table
    after: pa.Table


def _keys(t: pa.Table, key_field: Any) -> pa.Array:
    if isinstance(key_field, str):
        col = t.column(key_field)
    else:
        col = key_field.keys(t)
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _conform(t: pa.Table, schema: pa.Schema) -> pa.Table:
    cols = []
    for f in schema:
        if f.name in t.column_names:
            c = t.column(f.name)
            cols.append(c if c.type == f.type else c.cast(f.type))
        else:
            cols.append(pa.nulls(t.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def _unify(before: pa.Table | None, after: pa.Table | None) -> pa.Schema:
    if before is None and after is None:
        return pa.schema([])
    if before is None or after is None:
        return (after if before is None else before).schema  # type: ignore[union-attr]
    names = list(after.column_names) + [n for n in before.column_names
                                        if n not in after.column_names]
    fields = [after.schema.field(n) if n in after.column_names else before.schema.field(n)
              for n in names]
    return pa.schema(fields)


def diff_rows(before: pa.Table | None, after: pa.Table | None, key_field: Any) -> RowChanges:
    """The changes from ``before`` to ``after`` (two states of one file group, merged rows)
    keyed by ``key_field``: inserts, then updates (the record differs), then deletes."""
    schema = _unify(before, after)
    b = _conform(before, schema) if before is not None else schema.empty_table()
    a = _conform(after, schema) if after is not None else schema.empty_table()
    kb = _keys(b, key_field) if b.num_rows else pa.array([], pa.string())
    ka = _keys(a, key_field) if a.num_rows else pa.array([], pa.string())
    in_b = pc.index_in(ka, value_set=kb)          # after row -> before row
    ins = np.flatnonzero(pc.is_null(in_b).to_numpy(zero_copy_only=False))
    both_a = np.flatnonzero(pc.is_valid(in_b).to_numpy(zero_copy_only=False))
    both_b = pc.take(in_b, pa.array(both_a, pa.int64())).to_numpy(zero_copy_only=False)
    gone = np.ones(b.num_rows, dtype=bool)
    gone[both_b.astype(np.int64)] = False
    dels = np.flatnonzero(gone)
    if both_a.size:
        changed = _differ(a.take(pa.array(both_a, pa.int64())),
                          b.take(pa.array(both_b, pa.int64())))
        upd_a, upd_b = both_a[changed], both_b[changed].astype(np.int64)
    else:
        upd_a = upd_b = np.array([], dtype=np.int64)
    none = np.full(0, 0, np.int64)
    b_idx = pa.array(np.concatenate([np.full(len(ins), -1, np.int64), upd_b, dels,
                                     none]), pa.int64())
    a_idx = pa.array(np.concatenate([ins, upd_a, np.full(len(dels), -1, np.int64)]),
                     pa.int64())
    return RowChanges(_ops(len(ins), len(upd_a), len(dels)), _images(b, b_idx),
                      _images(a, a_idx))


def _differ(a: pa.Table, b: pa.Table) -> np.ndarray:
    """Per row, whether two aligned tables of one schema hold different values (nulls equal
    nulls, NaN equals NaN), column by column; nested columns compared by their JSON."""
    out = np.zeros(a.num_rows, dtype=bool)
    for name in a.column_names:
        x, y = a.column(name).combine_chunks(), b.column(name).combine_chunks()
        t = x.type
        if pa.types.is_nested(t) or pa.types.is_dictionary(t):
            x, y = json_values(x), json_values(y)
        neq = pc.fill_null(pc.not_equal(x, y), False)
        if pa.types.is_floating(t):
            neq = pc.and_(neq, pc.invert(pc.and_(pc.fill_null(pc.is_nan(x), False),
                                                 pc.fill_null(pc.is_nan(y), False))))
        one_null = pc.xor(pc.is_null(x), pc.is_null(y))
        out |= np.asarray(pc.or_(neq, one_null).to_numpy(zero_copy_only=False), dtype=bool)
    return out


def _images(t: pa.Table, idx: pa.Array) -> pa.Table:
    """Rows ``idx`` of ``t``; -1: no record (every column null, marked absent)."""
    absent = pc.equal(idx, -1)
    taken = t.take(pc.if_else(absent, pa.scalar(None, pa.int64()), idx))
    return taken.append_column(_ABSENT, absent)


def _ops(n_ins: int, n_upd: int, n_del: int) -> pa.Array:
    codes = np.concatenate([np.zeros(n_ins, np.int8), np.ones(n_upd, np.int8),
                            np.full(n_del, 2, np.int8)])
    return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int8()),
                                          pa.array([INSERT, UPDATE, DELETE])).cast(pa.string())


_ABSENT = "__morlog_absent__"


# --- JSON images (column-wise) ------------------------------------------------------------

_ESCAPES = [("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"),
            ("\b", "\\b"), ("\f", "\\f")]


def _json_string(arr: pa.Array) -> pa.Array:
    s = arr.cast(pa.string()) if not pa.types.is_string(arr.type) else arr
    for old, new in _ESCAPES:
        s = pc.replace_substring(s, old, new)
    if pc.any(pc.fill_null(pc.match_substring_regex(s, "[\\x00-\\x1f]"), False)).as_py():
        for code in range(32):
            ch = chr(code)
            if ch in "\n\r\t\b\f":
                continue
            s = pc.replace_substring(s, ch, f"\\u{code:04x}")
    return pc.binary_join_element_wise(pa.repeat(pa.scalar('"'), len(s)), s,
                                       pa.repeat(pa.scalar('"'), len(s)), "")


def _json_float(arr: pa.Array) -> pa.Array:
    s = arr.cast(pa.string())
    s = pc.replace_substring_regex(s, "^(-?[0-9]+)$", "\\1.0")  # 10.0, as Jackson writes it
    s = pc.replace_substring_regex(s, "^nan$", "NaN")
    s = pc.replace_substring_regex(s, "^inf$", "Infinity")
    return pc.replace_substring_regex(s, "^-inf$", "-Infinity")


def json_values(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The JSON text of every value of ``arr`` (``null`` for nulls), column-wise: strings
    quoted and escaped, numbers and booleans as they are, dates as days and timestamps in
    their unit since the epoch (the values Spark's rows hold), structs as objects, lists
    as arrays, binary as base64 strings, maps as objects, decimals as Java writes them."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    n = len(arr)
    if pa.types.is_dictionary(t):
        return json_values(arr.cast(t.value_type))
    if pa.types.is_null(t):
        return pa.repeat(pa.scalar("null"), n).cast(pa.string())
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        out = _json_string(arr)
    elif pa.types.is_boolean(t):
        out = pc.if_else(arr, "true", "false")
    elif pa.types.is_integer(t):
        out = arr.cast(pa.string())
    elif pa.types.is_floating(t):
        out = _json_float(arr.cast(pa.float64()) if pa.types.is_float16(t) else arr)
    elif pa.types.is_date32(t):
        out = arr.cast(pa.int32()).cast(pa.string())
    elif pa.types.is_timestamp(t) or pa.types.is_time(t) or pa.types.is_date64(t):
        out = arr.cast(pa.int64()).cast(pa.string())
    elif pa.types.is_struct(t):
        fields = [arr.field(i) for i in range(t.num_fields)]
        out = _object([t.field(i).name for i in range(t.num_fields)], fields, n)
        if arr.null_count:
            out = pc.if_else(arr.is_valid(), out, pa.scalar(None, pa.string()))
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        values = json_values(arr.flatten())
        lists = (pa.ListArray if pa.types.is_list(t) else pa.LargeListArray).from_arrays(
            arr.offsets, values)
        joined = pc.binary_join(lists, ",")
        out = pc.binary_join_element_wise(pa.repeat(pa.scalar("["), n), joined,
                                          pa.repeat(pa.scalar("]"), n), "")
        if arr.null_count:
            out = pc.if_else(arr.is_valid(), out, pa.scalar(None, pa.string()))
    elif (pa.types.is_binary(t) or pa.types.is_large_binary(t)
          or pa.types.is_fixed_size_binary(t)):
        out = _json_string(_base64(arr))
    elif pa.types.is_map(t):
        out = _json_map(arr)
    elif pa.types.is_decimal(t):
        # Arrow's text of a decimal is Java's ``BigDecimal.toString`` (Jackson's default):
        # plain unless the adjusted exponent is below -6, then ``1.2E-7``, ``0E-8``
        out = arr.cast(pa.string())
    else:
        raise ContentError("a CDC image holds a type JSON cannot render", actual=str(t))
    return pc.fill_null(out, "null")


_B64 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
                     np.uint8)


def _base64(arr: pa.Array) -> pa.Array:
    """Standard base64 (RFC 4648, padded) of every value of a binary array, as a string
    array (nulls stay null): each value zero-padded to whole 3-byte groups, every group
    cut into four 6-bit indexes of the alphabet, the padding's characters set to ``=``."""
    if pa.types.is_fixed_size_binary(arr.type):
        arr = arr.cast(pa.binary())
    if pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.binary())
    n = len(arr)
    valid = arr.is_valid()
    arr = pc.if_else(valid, arr, pa.scalar(b"", arr.type)) if arr.null_count else arr
    offsets = np.frombuffer(arr.buffers()[1], np.int32, n + 1, arr.offset * 4)
    data = (np.frombuffer(arr.buffers()[2], np.uint8) if arr.buffers()[2] is not None
            else np.zeros(0, np.uint8))
    lengths = np.diff(offsets).astype(np.int64)
    padded = (lengths + 2) // 3 * 3
    starts = np.zeros(n + 1, np.int64)
    np.cumsum(padded, out=starts[1:])
    total = int(starts[-1])
    # each padded byte's source position (pad bytes: -1)
    pos = np.arange(total, dtype=np.int64)
    row = np.repeat(np.arange(n, dtype=np.int64), padded)
    within = pos - starts[row]
    src = np.where(within < lengths[row], offsets[row].astype(np.int64) + within, -1)
    buf = np.where(src >= 0, data[np.clip(src, 0, max(len(data) - 1, 0))]
                   if len(data) else 0, 0).astype(np.uint8)
    g = buf.reshape(-1, 3).astype(np.uint32)
    word = (g[:, 0] << 16) | (g[:, 1] << 8) | g[:, 2]
    idx = np.stack([(word >> 18) & 63, (word >> 12) & 63, (word >> 6) & 63, word & 63],
                   axis=1).reshape(-1)
    chars = _B64[idx]
    out_starts = starts // 3 * 4
    pad = padded - lengths
    ends = out_starts[1:]
    chars[(ends - 1)[pad >= 1]] = ord("=")
    chars[(ends - 2)[pad == 2]] = ord("=")
    text = pa.StringArray.from_buffers(n, pa.py_buffer(out_starts.astype(np.int32).tobytes()),
                                       pa.py_buffer(chars.tobytes()))
    return pc.if_else(valid, text, pa.scalar(None, pa.string())) if not valid.true_count == n \
        else text


def _json_map(arr: pa.Array) -> pa.Array:
    """A map array as JSON objects (keys as their text, values as JSON), entries in order."""
    n = len(arr)
    # (``keys``/``items`` are the whole child arrays, whatever the slice)
    first, last = arr.offsets[0].as_py(), arr.offsets[-1].as_py()
    keys = _json_string(arr.keys.slice(first, last - first).cast(pa.string()))
    values = json_values(arr.items.slice(first, last - first))
    pairs = pc.binary_join_element_wise(keys, values, ":")
    offsets = pc.subtract(arr.offsets, arr.offsets[0])
    lists = pa.ListArray.from_arrays(offsets, pairs)
    joined = pc.binary_join(lists, ",")
    out = pc.binary_join_element_wise(pa.repeat(pa.scalar("{"), n), joined,
                                      pa.repeat(pa.scalar("}"), n), "")
    return pc.if_else(arr.is_valid(), out, pa.scalar(None, pa.string())) if arr.null_count \
        else out


def _object(names: list[str], columns: list[pa.Array], n: int) -> pa.Array:
    if not names:
        return pa.repeat(pa.scalar("{}"), n).cast(pa.string())
    parts: list[Any] = []
    for i, (name, col) in enumerate(zip(names, columns, strict=True)):
        key = _json_string(pa.array([name])).to_pylist()[0]
        parts.append(pa.repeat(pa.scalar(("{" if i == 0 else ",") + key + ":"), n))
        parts.append(json_values(col))
    parts.append(pa.repeat(pa.scalar("}"), n))
    return pc.binary_join_element_wise(*parts, "")


def json_rows(t: pa.Table) -> pa.Array:
    """Each row of ``t`` as a JSON object of its columns in order (a row the diff marks
    absent: null)."""
    names = [n for n in t.column_names if n != _ABSENT]
    out = _object(names, [t.column(c).combine_chunks() for c in names], t.num_rows)
    if _ABSENT in t.column_names:
        absent = pc.fill_null(t.column(_ABSENT).combine_chunks(), False)
        out = pc.if_else(absent, pa.scalar(None, pa.string()), out)
    return out


def json_column(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A struct column of images as JSON objects (null images stay null)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_struct(arr.type):
        raise ContentError("a CDC image is not a record", actual=str(arr.type))
    out = json_values(arr)
    return pc.if_else(arr.is_valid(), out, pa.scalar(None, pa.string()))


def data_images(rows: pa.Table, data_schema: pa.Schema) -> pa.Array:
    """``rows`` (a diff's images, meta fields included) as a struct column of the data
    fields only (Hudi's CDC blocks hold records without meta fields); absent rows null."""
    t = _conform(rows.select([c for c in rows.column_names
                              if c not in META_FIELDS and c != _ABSENT]), data_schema)
    mask = None
    if _ABSENT in rows.column_names:
        mask = pc.fill_null(rows.column(_ABSENT).combine_chunks(), False)
    struct = pa.StructArray.from_arrays([c.combine_chunks() for c in t.columns],
                                        fields=list(data_schema),
                                        mask=mask)
    return struct


__all__ = ["CDC_SCHEMA", "RowChanges", "cdc_enabled", "data_images", "diff_rows",
           "instants_in_range", "json_column", "json_rows", "json_values", "table_changes"]
