"""Column statistics in filter order, for pruning (issue 14; spec/index.md §4.11, §7.6).

Every function returns ``column -> morlog.readers.column_stats.ColumnRange`` under the
statistics convention of ``morlog.readers.predicate`` (*filter order*: bounds compare as the
row filter compares; ``min``/``max`` None with non-null values: no usable bounds;
``null_count == value_count``: every value null; a column left out: nothing known).

- :func:`block_ranges`: one log block, from its stored COLUMN_STATS section (a ranged read
  of the block's end, no record decoded), else recomputed from its records (blocks Hudi
  wrote, morlog blocks older than the section); delete, command and corrupt blocks ``{}``.
- :func:`filter_ranges`: the statistics of an Arrow table (the recompute path; the writer
  computes its section with the same function, ``logformat.column_stats_section``).
- :func:`base_file_ranges`: a base file's own footer (Parquet statistics, converted).
- :func:`mdt_ranges`: Hudi's metadata-table ``column_stats`` records (Java order),
  converted conservatively.
"""

from __future__ import annotations

import decimal
import json
import math
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from morlog.config import NAN_COUNTS
from morlog.logformat.avroschema import avro_to_arrow_schema
from morlog.logformat.blocks import RECORD_KEY_FIELD
from morlog.logformat.column_stats_section import (
    ColumnStats,
    ColumnStatsSection,
    StatsColumns,
    StatsType,
    compute_column_stats,
    decimal_of,
    stats_type_of,
)
from morlog.logformat.constants import BlockType
from morlog.logformat.errors import MorlogError, UnusableIndexWarning, UsageError
from morlog.logformat.virtual_keys import KeyField

from .base_files import BaseFormat, SourceFile
from .cache import CachedSource
from .column_stats import ColumnRange, range_of_stats
from .index import read_stored_index
from .logfile import LogBlock
from .storage import Storage, decoder_errors

#: the Parquet key/value metadata key of the NaN counts morlog's writer records in its base
#: files: JSON ``{"rows": <the file's rows>, "columns": {<float column>: <NaN values>}}``
NAN_COUNTS_KEY = NAN_COUNTS
#: the end of a block fetched in one read: footer map, trailer tail, section table and,
#: usually, the COLUMN_STATS section right before the table
END_WINDOW = 16 * 1024
_DATA = (BlockType.AVRO_DATA, BlockType.PARQUET_DATA)
_INTEGRAL = {StatsType.INT32, StatsType.INT64, StatsType.DATE, StatsType.TIME_MILLIS,
             StatsType.TIME_MICROS, StatsType.TIME_NANOS, StatsType.TIMESTAMP_MILLIS,
             StatsType.TIMESTAMP_MICROS, StatsType.TIMESTAMP_NANOS,
             StatsType.LOCAL_TIMESTAMP_MILLIS, StatsType.LOCAL_TIMESTAMP_MICROS,
             StatsType.LOCAL_TIMESTAMP_NANOS}
_UNITS = {StatsType.TIME_MILLIS: "ms", StatsType.TIME_MICROS: "us", StatsType.TIME_NANOS: "ns",
          StatsType.TIMESTAMP_MILLIS: "ms", StatsType.TIMESTAMP_MICROS: "us",
          StatsType.TIMESTAMP_NANOS: "ns", StatsType.LOCAL_TIMESTAMP_MILLIS: "ms",
          StatsType.LOCAL_TIMESTAMP_MICROS: "us", StatsType.LOCAL_TIMESTAMP_NANOS: "ns"}


def to_range(stats: ColumnStats, file_name: str = "") -> ColumnRange:
    """A section entry as a :class:`ColumnRange` (type: the tag's Arrow type; None for a
    tag without one)."""
    return ColumnRange(file_name, stats.name, stats.min, stats.max, stats.null_count,
                       stats.value_count, 0, 0, stats.arrow_type(), stats.nan_count)


def _all_null(file_name: str, column: str, rows: int) -> ColumnRange:
    return ColumnRange(file_name, column, None, None, rows, rows, 0, 0, None)


def filter_ranges(table: pa.Table, columns: Sequence[str], file_name: str = ""
                  ) -> dict[str, ColumnRange]:
    """The filter-order statistics of ``columns`` of ``table`` (``pyarrow.compute`` per
    column): exact min/max of the non-null values (float columns: of those that are not
    NaN, with the NaN count), none for a string or bytes bound longer than
    ``MAX_BOUND_BYTES`` or a type without bounds; columns ``table`` lacks: all null."""
    section = compute_column_stats(table, columns)
    return {s.name: to_range(s, file_name) for s in section.columns}


# --- log blocks ---------------------------------------------------------------------------


def _block_columns(block: LogBlock) -> set[str] | None:
    """The top-level columns of a block's SCHEMA header (None when it has none usable)."""
    text = block.schema
    if not text:
        return None
    try:
        return set(avro_to_arrow_schema(text).names)
    except MorlogError:
        return None


def stored_column_stats(block: LogBlock) -> ColumnStatsSection | None:
    """The block's stored COLUMN_STATS section (one read of the block's last
    ``END_WINDOW`` bytes in the usual case, never the records), None when it has none. A
    section that cannot be used (damaged, unknown trailer version) is None with an
    :class:`UnusableIndexWarning`: its statistics are recomputed by the caller."""
    if block.block_type not in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
        return None
    cached = CachedSource(block.source)
    end = block.offset + block.size
    start = max(block.offset, end - END_WINDOW)
    cached.prefetch(start, end - start)
    try:
        stored = read_stored_index(cached, block.offset, block.size, block.block_type)
        return stored.column_stats() if stored is not None else None
    except MorlogError as exc:
        warnings.warn(f"{block.path}@{block.offset}: stored column statistics unusable "
                      f"({exc}); recomputed from the records", UnusableIndexWarning,
                      stacklevel=3)
        return None


def block_ranges(block: LogBlock, key_field: KeyField = RECORD_KEY_FIELD,
                 columns: Sequence[str] | None = None) -> dict[str, ColumnRange]:
    """The filter-order ranges of one log block's records.

    - Data blocks with a stored COLUMN_STATS section: its entries (no record decoded);
      ``columns`` None: every stored column. A requested column the section lacks is
      all null when the block's schema lacks it too, else recomputed from the records.
    - Data blocks without one (Hudi's, or morlog's older ones): recomputed from the
      decoded records (:func:`filter_ranges`); ``columns`` None: Hudi's default choice
      (``StatsColumns().select``) of the block's columns. Columns the records lack: all
      null.
    - Delete, command, CDC and corrupt blocks: ``{}`` (they hold no rows a reader returns);
      HFile blocks (the metadata table's) and blocks whose schema has no Arrow form: only
      what is stored (nothing is recomputed: left out, i.e. unknown).

    ``key_field``: how the table keys its records. With virtual keys (a table without meta
    fields) ``_hoodie_record_key`` is no column of the blocks; it is then left out rather
    than reported all null. ``ColumnRange.file_name`` is the log file's name."""
    if block.is_corrupt or block.block_type not in _DATA:
        return {}
    name = os.path.basename(block.path or "")
    virtual = not isinstance(key_field, str)
    stored = stored_column_stats(block)
    out: dict[str, ColumnRange] = {}
    missing: list[str]
    if stored is not None:
        wanted = [c.name for c in stored.columns] if columns is None else list(columns)
        schema_cols = _block_columns(block)
        missing = []
        for col in dict.fromkeys(wanted):  # per column
            entry = stored.get(col)
            if entry is not None:
                out[col] = to_range(entry, name)
            elif schema_cols is not None and col not in schema_cols:
                if not (virtual and col == RECORD_KEY_FIELD):
                    out[col] = _all_null(name, col, stored.rows)
            else:
                missing.append(col)
        if not missing:
            return out
    else:
        missing = list(dict.fromkeys(columns)) if columns is not None else []
    try:
        table = block.to_arrow()  # the compatibility path: decode the records once
    except UsageError:
        return out  # a schema without an Arrow form (unions...): nothing more is known
    if columns is None and stored is None:
        missing = StatsColumns().select(table.schema)
    if virtual:
        missing = [c for c in missing if c != RECORD_KEY_FIELD or c in table.column_names]
    out.update(filter_ranges(table, missing, name))
    return out


# --- base files ---------------------------------------------------------------------------


def _same_kind(file_type: pa.DataType, table_type: pa.DataType) -> bool:
    """Whether footer values of ``file_type`` are values of ``table_type`` as they are."""
    ftag, fred = stats_type_of(file_type)
    ttag, tred = stats_type_of(table_type)
    if ftag != ttag or fred != tred or pa.types.is_unsigned_integer(file_type):
        return False  # unsigned: Parquet orders them unsigned, the raw values are signed
    if ttag in _UNITS:  # no seconds: Parquet has none, the raw values would be in ms
        return (getattr(file_type, "unit", None) == getattr(table_type, "unit", None)
                == _UNITS[ttag])
    if ttag == StatsType.DATE:
        return bool(pa.types.is_date32(file_type) and pa.types.is_date32(table_type))
    return True


def _raw_value(raw: Any, tag: StatsType, t: pa.DataType) -> Any:
    """A Parquet statistics value (its physical form) as a filter-order value; None when
    it cannot be one."""
    if tag == StatsType.BOOLEAN:
        return bool(raw) if isinstance(raw, (bool, int)) else None
    if tag in _INTEGRAL:
        return int(raw) if isinstance(raw, int) and not isinstance(raw, bool) else None
    if tag == StatsType.DECIMAL:
        if isinstance(raw, (bytes, bytearray)):
            if not raw:
                return None
            unscaled = int.from_bytes(raw, "big", signed=True)
        elif isinstance(raw, int):
            unscaled = raw
        else:
            return None
        return decimal_of(unscaled, t.scale)
    if tag == StatsType.STRING:
        if isinstance(raw, str):
            return raw
        try:
            return bytes(raw).decode("utf-8")
        except (UnicodeDecodeError, TypeError):
            return None  # e.g. a truncated bound cut inside a character
    if tag in (StatsType.BYTES, StatsType.FIXED):
        return bytes(raw) if isinstance(raw, (bytes, bytearray)) else None
    if tag in (StatsType.FLOAT32, StatsType.FLOAT64):
        # Parquet writers leave NaN out of min/max (parquet.thrift ColumnOrder); a NaN
        # bound (parquet-mr orders NaN last) bounds nothing
        if isinstance(raw, float) and not math.isnan(raw):
            return raw
        return None
    return None  # other types


def footer_nan_counts(metadata: Any) -> dict[str, int]:
    """The NaN counts morlog's writer records in a Parquet base file's key/value metadata
    (:data:`NAN_COUNTS_KEY`, spec/prune.md §4.1): column -> NaN values, for the top-level
    float columns it lists; empty when the key is absent, malformed or written for another
    row count (a file rewritten by a tool that copied the metadata)."""
    kv = metadata.metadata or {}
    raw = kv.get(NAN_COUNTS_KEY.encode("utf-8"))
    if raw is None:
        return {}
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}
    if not isinstance(doc, dict) or doc.get("rows") != int(metadata.num_rows):
        return {}
    cols = doc.get("columns")
    if not isinstance(cols, dict):
        return {}
    return {str(k): v for k, v in cols.items()
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0}


def parquet_footer_ranges(metadata: Any, file_schema: pa.Schema, arrow_schema: pa.Schema,
                          columns: Sequence[str], file_name: str = ""
                          ) -> dict[str, ColumnRange]:
    """:func:`base_file_ranges` of a Parquet footer (``pyarrow.parquet.FileMetaData``)."""
    rows = int(metadata.num_rows)
    paths = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    nan_counts = footer_nan_counts(metadata)
    out: dict[str, ColumnRange] = {}
    for col in dict.fromkeys(columns):  # per column
        if col not in arrow_schema.names:
            continue
        t = arrow_schema.field(col).type
        tag, rtype = stats_type_of(t)
        if col not in file_schema.names:  # the merged read fills it with nulls
            out[col] = ColumnRange(file_name, col, None, None, rows, rows, 0, 0, rtype)
            continue
        i = paths.get(col)
        if i is None:  # nested: its leaves are other paths
            continue
        ft = file_schema.field(col).type
        bounded = rtype is not None and _same_kind(ft, t)
        nulls, lo, hi, known = 0, None, None, True
        for g in range(metadata.num_row_groups):  # per row group
            rg = metadata.row_group(g)
            st = rg.column(i).statistics
            if st is None or not st.has_null_count:
                known = False
                break
            n = int(st.null_count)
            nulls += n
            if not bounded or n >= rg.num_rows:
                continue  # no bounds wanted, or a row group of nulls only
            a = _raw_value(st.min_raw, tag, t) if st.has_min_max else None
            b = _raw_value(st.max_raw, tag, t) if st.has_min_max else None
            if a is None or b is None:
                bounded = False
                continue
            lo = a if lo is None or a < lo else lo
            hi = b if hi is None or b > hi else hi
        if not known:
            continue  # without a null count nothing is known
        if not bounded:
            lo = hi = None
        nan: int | None = None
        if tag in (StatsType.FLOAT32, StatsType.FLOAT64):
            counted = nan_counts.get(col)
            nan = counted if counted is not None and counted <= rows - nulls else None
        out[col] = ColumnRange(file_name, col, lo, hi, nulls, rows, 0, 0, rtype, nan)
    return out


def base_file_ranges(storage: Storage, path: str, base_format: BaseFormat | str,
                     arrow_schema: pa.Schema, columns: Sequence[str]
                     ) -> dict[str, ColumnRange]:
    """The filter-order ranges of a base file from its own footer (no row read).

    Parquet: per column the row groups' statistics (pyarrow's, which already ignores
    statistics of writers known to order them wrongly): null counts summed (a row group
    without one: the column is left out), value count = rows, bounds = min of the mins and
    max of the maxes of the physical values, kept only when the file's type is the table's
    (``arrow_schema``) type and the order is filter order: strings and bytes (Parquet's
    unsigned byte order), integers, dates, times, timestamps, decimals, booleans, floats
    (bounds of the values that are not NaN, which Parquet writers leave out of min/max; a
    NaN bound is no bound; the NaN count from :data:`NAN_COUNTS_KEY` when morlog wrote the
    file, else unknown); never unsigned integers. Columns the file lacks: all null (the
    merged read fills them with nulls). ORC, Lance and HFile base files: ``{}`` (morlog
    reads no statistics of theirs)."""
    fmt = base_format if isinstance(base_format, BaseFormat) else BaseFormat(
        str(base_format).upper())
    if fmt is not BaseFormat.PARQUET:
        return {}
    import pyarrow.parquet as pq

    src = storage.source(path)
    try:
        with decoder_errors(path, "base file footer does not decode"):
            pf = pq.ParquetFile(pa.PythonFile(SourceFile(src), mode="r"))
            md, file_schema = pf.metadata, pf.schema_arrow
            return parquet_footer_ranges(md, file_schema, arrow_schema, columns,
                                         os.path.basename(path))
    finally:
        src.close()


# --- the metadata table's column_stats ----------------------------------------------------

#: strings whose every character is below this agree in UTF-16 and code point order
_UTF16_SAFE = 0xE000


def _utf16_safe(s: str) -> bool:
    """Every character below U+E000 and none a surrogate code point (which valid text
    cannot hold): such a string compares the same in UTF-16 and in code point order."""
    return s.isascii() or all(ord(ch) < _UTF16_SAFE and not 0xD800 <= ord(ch) <= 0xDFFF
                              for ch in s)  # per bound, not per record


def _mdt_bounds(lo: Any, hi: Any, tag: StatsType) -> tuple[Any, Any]:
    if lo is None or hi is None:
        return None, None
    if tag == StatsType.BOOLEAN:
        ok = isinstance(lo, bool) and isinstance(hi, bool)
    elif tag in _INTEGRAL:
        ok = all(isinstance(v, int) and not isinstance(v, bool) for v in (lo, hi))
    elif tag == StatsType.DECIMAL:
        ok = all(isinstance(v, decimal.Decimal) and v.is_finite() for v in (lo, hi))
    elif tag == StatsType.STRING:
        ok = isinstance(lo, str) and isinstance(hi, str) and _utf16_safe(lo) and \
            _utf16_safe(hi)
    elif tag in (StatsType.FLOAT32, StatsType.FLOAT64):  # NaN is Double.compare's largest
        ok = all(isinstance(v, float) and not math.isnan(v) for v in (lo, hi))
    else:  # bytes and fixed (Java's signed byte order), other types
        ok = False
    if not ok or lo > hi:
        return None, None
    return lo, hi


def _exact_decimal(wrapped: Any, vtype: Any, value: Any) -> Any:
    """A V2 decimal bound (``BytesWrapper`` of the unscaled value, scale in the value
    type's ``additionalInfo`` ``"p,s"``) decoded exactly; other forms as unwrapped."""
    rec = wrapped[1] if isinstance(wrapped, tuple) else wrapped
    raw = rec.get("value") if isinstance(rec, Mapping) else None
    if not isinstance(raw, (bytes, bytearray)) or not isinstance(vtype, Mapping):
        return value
    try:
        scale = int(str(vtype.get("additionalInfo") or "").split(",")[1])
    except (IndexError, ValueError):
        return None
    return decimal_of(int.from_bytes(raw, "big", signed=True), scale) if raw else None


def _is_log_file(name: str) -> bool:
    """Whether a data file name is a log file's (``.{fileId}_{instant}.log.{version}...``)."""
    return name.startswith(".") and ".log." in name


def mdt_ranges(stats: Iterable[Mapping[str, Any]], types: Mapping[str, pa.DataType]
               ) -> dict[str, dict[str, ColumnRange]]:
    """Hudi's metadata-table column statistics as filter-order ranges: file name ->
    column -> range.

    ``stats``: live ``HoodieMetadataColumnStats`` values of the ``column_stats`` partition,
    one per (file, column), e.g. ``readers.column_stats.merge_records(
    mdt.partition_records("column_stats")).values()`` (tombstones are skipped here too);
    ``types``: the table's column types (its Arrow schema). Hudi keeps bounds in Java order
    (``String.compareTo``: UTF-16 code units; ``ByteBuffer.compareTo``: signed bytes;
    ``Double.compare``: NaN largest), so bounds are kept only where that order is filter
    order: integers, dates, times, timestamps, decimals and booleans as they are; strings
    only when both bounds hold nothing but characters below U+E000 (then UTF-16 order and
    code point order agree on every comparison with them, spec/index.md §7.6); bytes and
    fixed never. Floats: for log files, whose records Hudi reduced in ``Double.compare``
    order (NaN largest), the bounds when both are numbers, and then no value is NaN; for
    base files the column is left out (unknown), so that the pruner reads the footer:
    Hudi merges the row groups' footer statistics after parquet-mr dropped those of row
    groups holding NaN, so a base file's record may not bound every number of the file.
    Counts are Hudi's (value count = rows of the file). A column of an unknown type, or a
    value of an unexpected kind, has no bounds."""
    out: dict[str, dict[str, ColumnRange]] = {}
    for s in stats:  # one per (file, column)
        if s.get("isDeleted"):
            continue
        col = str(s.get("columnName"))
        t = types.get(col)
        if t is None:
            continue
        r = range_of_stats(s, t)
        tag, reduce_type = stats_type_of(t)
        lo, hi = r.min, r.max
        if tag == StatsType.DECIMAL:  # V2: the unscaled bytes, exactly at any precision
            lo, hi = (_exact_decimal(s.get(f), s.get("valueType"), v)
                      for f, v in (("minValue", lo), ("maxValue", hi)))
        nan: int | None = None
        if tag in (StatsType.FLOAT32, StatsType.FLOAT64):
            if not _is_log_file(r.file_name):
                continue  # a base file: its footer knows more (see the docstring)
            # a log file's records were reduced in Double.compare order, NaN largest: a
            # maximum that is a number proves that no value is NaN
            lo, hi = _mdt_bounds(lo, hi, tag)
            nan = 0 if hi is not None else None
        else:
            lo, hi = _mdt_bounds(lo, hi, tag)
        if r.value_count < r.null_count:
            continue  # inconsistent counts: nothing is known
        rng = ColumnRange(r.file_name, col, lo, hi, r.null_count, r.value_count, 0, 0,
                          reduce_type, nan)
        out.setdefault(r.file_name, {})[col] = rng
    return out


__all__ = ["END_WINDOW", "NAN_COUNTS_KEY", "base_file_ranges", "block_ranges", "filter_ranges",
           "footer_nan_counts", "mdt_ranges", "parquet_footer_ranges", "stored_column_stats",
           "to_range"]
