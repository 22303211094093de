"""TEMPORARY (wt-prune): a minimal stand-in for the per-block statistics module that the
statistics work (wt-stats) builds. It recomputes every range by decoding (no stored
COLUMN_STATS section yet) so that the pruner can be written and tested; main's version
replaces this whole file.

Ranges are in *filter order* (``morlog.readers.predicate``'s convention).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from morlog.logformat.blocks import RECORD_KEY_FIELD
from morlog.logformat.constants import BlockType
from morlog.logformat.virtual_keys import KeyField

from .base_files import BaseFormat, read_base_file
from .column_stats import ColumnRange
from .logfile import LogBlock
from .storage import Storage

_DATA = (BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.HFILE_DATA)


def _plain(v: Any, t: pa.DataType) -> Any:
    if v is None:
        return None
    return v


def _column_range(name: str, col: pa.ChunkedArray | pa.Array, file_name: str) -> ColumnRange:
    n = len(col)
    nulls = col.null_count
    t = col.type
    lo: Any = None
    hi: Any = None
    if nulls < n:
        if pa.types.is_floating(t):
            has_nan = bool(pc.any(pc.is_nan(col)).as_py())
            if not has_nan:
                mm = pc.min_max(col)
                lo, hi = mm["min"].as_py(), mm["max"].as_py()
        elif pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_timestamp(t):
            ints = col.cast(pa.int64() if not pa.types.is_date32(t) and not
                            pa.types.is_time32(t) else pa.int32())
            mm = pc.min_max(ints)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
        elif (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
              or pa.types.is_binary(t) or pa.types.is_large_binary(t)
              or pa.types.is_boolean(t) or pa.types.is_decimal(t)):
            mm = pc.min_max(col)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
    return ColumnRange(file_name, name, _plain(lo, t), _plain(hi, t), nulls, n, type=t)


def filter_ranges(table: pa.Table, columns: Sequence[str] | None) -> dict[str, ColumnRange]:
    """Filter-order statistics of ``table``'s ``columns`` (all when None); a column the
    table lacks is all null."""
    out: dict[str, ColumnRange] = {}
    for c in (columns if columns is not None else table.column_names):
        if c in table.column_names:
            out[c] = _column_range(c, table.column(c), "")
        else:
            out[c] = ColumnRange("", c, None, None, table.num_rows, table.num_rows)
    return out


def block_ranges(block: LogBlock, key_field: KeyField = RECORD_KEY_FIELD,
                 columns: Sequence[str] | None = None) -> dict[str, ColumnRange]:
    """Ranges of a data block's columns (recomputed by decoding); ``{}`` for other blocks."""
    if block.block_type not in _DATA:
        return {}
    return filter_ranges(block.to_arrow(), columns)


def base_file_ranges(storage: Storage, path: str, base_format: BaseFormat,
                     arrow_schema: pa.Schema, columns: Sequence[str] | None
                     ) -> dict[str, ColumnRange]:
    """Ranges of a base file (recomputed by reading the file)."""
    t = read_base_file(path, None, storage)
    return filter_ranges(t, columns)



def mdt_ranges(stats: Any, types: Any) -> dict[str, dict[str, ColumnRange]]:
    """TEMPORARY: Hudi's MDT ``column_stats`` values (Java order) as filter-order ranges,
    file name -> column -> range: strings keep their bounds only when both bounds hold code
    points below U+E000 (UTF-16 and code point order agree then), floats, binary, times
    and timestamps keep none."""
    from .column_stats import range_of_stats

    out: dict[str, dict[str, ColumnRange]] = {}
    for s in stats:
        if s.get("isDeleted"):
            continue
        col = str(s.get("columnName"))
        t = types.get(col)
        if t is None:
            continue
        r = range_of_stats(s, t)
        lo, hi = r.min, r.max
        ok = lo is not None and hi is not None
        if ok and (pa.types.is_string(t) or pa.types.is_large_string(t)):
            ok = all(isinstance(v, str) and all(ord(c) < 0xE000 for c in v) for v in (lo, hi))
        elif ok and not (pa.types.is_integer(t) or pa.types.is_boolean(t)
                         or pa.types.is_decimal(t) or pa.types.is_date(t)):
            ok = False
        out.setdefault(r.file_name, {})[col] = ColumnRange(
            r.file_name, col, lo if ok else None, hi if ok else None, r.null_count,
            r.value_count, type=t)
    return out


__all__ = ["base_file_ranges", "block_ranges", "filter_ranges", "mdt_ranges"]
