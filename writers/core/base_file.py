"""How base files are written: Parquet (options from ``hoodie.parquet.*``), ORC and Lance.

:func:`encode_base_file` makes a base file of the table's format
(``hoodie.table.base.file.format``, ``morlog.readers.base_files``) with Hudi's index of its
keys where Hudi's writer of that format keeps it: the Parquet footer's key/value metadata
(facts §9), ORC user metadata (``HoodieAvroOrcWriter``: the same keys plus the Avro schema
under ``orc.avro.schema``; pyarrow's ORC writer has no user metadata, so they are added to
the footer by ``morlog.compat.orc_footer``), Lance schema metadata (``HoodieBaseLanceWriter``
adds the same keys through ``LanceFileWriter.addSchemaMetadata``). ORC files are compressed
with ``hoodie.orc.compression.codec`` (Hudi's default ZLIB).

Parquet:

Hudi's Parquet writers (``HoodieBaseParquetWriter`` in hudi-hadoop-common,
org/apache/hudi/io/hadoop/) build parquet-mr's writer from four settings, whose keys and
defaults are in ``HoodieStorageConfig`` (hudi-common/src/main/java/org/apache/hudi/common/
config/HoodieStorageConfig.java):

- ``hoodie.parquet.compression.codec``: the codec, ``snappy`` by default in current Hudi
  (releases before 1.0 documented ``gzip``);
- ``hoodie.parquet.block.size``: the row group size in bytes, 120 MiB;
- ``hoodie.parquet.page.size``: the data page size in bytes, 1 MiB; Hudi passes the same
  number as the dictionary page size;
- ``hoodie.parquet.dictionary.enabled``: dictionary encoding, on.

Pages are written in Parquet's version 1 layout (parquet-mr's default writer version).
parquet-mr compresses gzip pages at zlib's default level (6) and zstd pages at level 3,
while Arrow's own defaults differ (gzip 9: several times slower for about the same size),
so the level is set explicitly. pyarrow sizes row groups in rows, not bytes:
:func:`row_group_rows` converts Hudi's byte size with the table's in-memory bytes per row.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import morlog.config as conf
from morlog.compat.orc_footer import add_user_metadata
from morlog.logformat import file_checksum
from morlog.logformat.errors import UsageError
from morlog.readers.base_files import BaseFormat, require_lance
from morlog.readers.block_stats import NAN_COUNTS_KEY

COMPRESSION_CODEC = conf.PARQUET_COMPRESSION_CODEC
BLOCK_SIZE = conf.PARQUET_BLOCK_SIZE
PAGE_SIZE = conf.PARQUET_PAGE_SIZE
DICTIONARY_ENABLED = conf.PARQUET_DICTIONARY_ENABLED

#: Hudi's defaults for the settings above (HoodieStorageConfig)
DEFAULTS: dict[str, str] = {
    COMPRESSION_CODEC: "snappy",
    BLOCK_SIZE: str(120 * 1024 * 1024),
    PAGE_SIZE: str(1024 * 1024),
    DICTIONARY_ENABLED: "true",
}

#: Hudi's codec names (parquet-mr's CompressionCodecName, any case) -> pyarrow's
_CODECS = {"uncompressed": "none", "none": "none", "snappy": "snappy", "gzip": "gzip",
           "zstd": "zstd"}
#: the levels parquet-mr compresses at when none is configured
_LEVELS = {"gzip": 6, "zstd": 3}


def _setting(props: Mapping[str, str], key: str) -> str:
    value = props.get(key)
    return DEFAULTS[key] if value is None or not str(value).strip() else str(value).strip()


def positive_int(key: str, raw: str) -> int:
    """The value of setting ``key`` as a positive whole number; a :class:`UsageError`
    naming the setting otherwise (the write options share it)."""
    try:
        n = int(raw)
    except ValueError:
        raise UsageError(f"{key} must be a whole number", actual=raw) from None
    if n <= 0:
        raise UsageError(f"{key} must be positive", actual=n)
    return n


def _positive(props: Mapping[str, str], key: str) -> int:
    return positive_int(key, _setting(props, key))


def parquet_write_options(props: Mapping[str, str]) -> dict[str, Any]:
    """Keyword arguments for ``pyarrow.parquet.ParquetWriter`` that write a base file as
    Hudi's writer would under the table's ``hoodie.parquet.*`` settings (defaults where a
    setting is absent). The row group size goes to ``write_table`` instead: see
    :func:`row_group_rows`."""
    codec = _setting(props, COMPRESSION_CODEC).lower()
    if codec not in _CODECS:
        raise UsageError(f"unsupported {COMPRESSION_CODEC} for base files",
                         expected=sorted(_CODECS), actual=codec)
    compression = _CODECS[codec]
    flag = _setting(props, DICTIONARY_ENABLED).lower()
    if flag not in ("true", "false"):
        raise UsageError(f"{DICTIONARY_ENABLED} must be true or false", actual=flag)
    page = _positive(props, PAGE_SIZE)
    out: dict[str, Any] = {
        "compression": compression,
        "use_dictionary": flag == "true",
        "data_page_size": page,
        "dictionary_pagesize_limit": page,
        "data_page_version": "1.0",
    }
    if compression in _LEVELS:
        out["compression_level"] = _LEVELS[compression]
    return out


#: rows of each column the dictionary decision looks at
DICTIONARY_SAMPLE = 16_384


def dictionary_columns(table: pa.Table) -> list[str]:
    """The leaf columns of ``table`` worth dictionary encoding: those whose first
    ``DICTIONARY_SAMPLE`` values take fewer bytes as a dictionary plus bit-packed indices than
    plain, the test parquet-mr makes on a column's first page before it keeps the dictionary
    (``DictionaryValuesWriter.isCompressionSatisfying``). pyarrow keeps trying a dictionary
    until it outgrows the page size, which costs 2-3x the write time on columns of unique
    values (keys, sequence numbers, measurements). Nested columns keep the dictionary."""
    import math

    import pyarrow.parquet as pq

    out: list[str] = []
    nested = False
    for name, col in zip(table.column_names, table.columns, strict=True):
        t = col.type
        if pa.types.is_nested(t):
            nested = True
            continue
        sample = col.slice(0, DICTIONARY_SAMPLE)
        values = sample.drop_null() if sample.null_count else sample
        n = len(values)
        if n == 0:
            out.append(name)
            continue
        distinct = pc.unique(values)
        plain = values.nbytes if not (pa.types.is_string(t) or pa.types.is_binary(t)) \
            else values.nbytes + 4 * n - 4 * (n + 1)  # lengths instead of offsets
        bits = max(1, math.ceil(math.log2(len(distinct) + 1)))
        if distinct.nbytes + n * bits / 8 < plain:
            out.append(name)
    if nested:
        # leaf paths of the nested columns, as Parquet names them
        buf = io.BytesIO()
        pq.write_table(table.schema.empty_table(), buf)
        schema = pq.ParquetFile(io.BytesIO(buf.getvalue())).schema
        flat = set(table.column_names)
        out += [schema.column(i).path for i in range(len(schema))
                if schema.column(i).path not in flat]
    return out


def row_group_rows(table: pa.Table, props: Mapping[str, str]) -> int:
    """Rows per row group for ``ParquetWriter.write_table(..., row_group_size=...)``:
    ``hoodie.parquet.block.size`` bytes at the table's in-memory bytes per row (at least
    one row; the whole table when it is empty)."""
    block = _positive(props, BLOCK_SIZE)
    if table.num_rows == 0:
        return 1
    per_row = max(1, int(table.nbytes) // int(table.num_rows))
    return max(1, block // per_row)


ORC_COMPRESSION_CODEC = conf.ORC_COMPRESSION_CODEC
#: the Avro schema's key in ORC user metadata (``HoodieOrcConfig.AVRO_SCHEMA_METADATA_KEY``)
ORC_AVRO_SCHEMA_KEY = b"orc.avro.schema"
#: Hudi's ORC codec names (ORC's CompressionKind, any case) -> pyarrow's
_ORC_CODECS = {"none": "uncompressed", "zlib": "zlib", "snappy": "snappy", "lz4": "lz4",
               "zstd": "zstd"}


def orc_write_options(props: Mapping[str, str]) -> dict[str, Any]:
    """Keyword arguments for ``pyarrow.orc.write_table`` under ``hoodie.orc.*``."""
    raw = props.get(ORC_COMPRESSION_CODEC)
    codec = "zlib" if raw is None or not str(raw).strip() else str(raw).strip().lower()
    if codec not in _ORC_CODECS:
        raise UsageError(f"unsupported {ORC_COMPRESSION_CODEC} for base files",
                         expected=sorted(c.upper() for c in _ORC_CODECS), actual=raw)
    return {"compression": _ORC_CODECS[codec]}


def nan_counts_entry(records: pa.Table) -> dict[bytes, bytes]:
    """The key/value metadata entry recording how many values of each top-level float32 /
    float64 column of ``records`` are NaN (``morlog.nan_counts``, spec/prune.md §4.1), so
    that pruning can exclude NaN from a base file: ``{}`` when there is no such column.
    ``pyarrow.compute`` per column."""
    counts = {name: int(pc.sum(pc.is_nan(col)).as_py() or 0)
              for name, col in zip(records.column_names, records.columns, strict=True)
              if pa.types.is_float32(col.type) or pa.types.is_float64(col.type)}
    if not counts:
        return {}
    doc = {"rows": records.num_rows, "columns": counts}
    return {NAN_COUNTS_KEY.encode("utf-8"): json.dumps(doc, sort_keys=True,
                                                       separators=(",", ":")).encode("utf-8")}


def _sealed(props: Mapping[str, str]) -> bool:
    """Whether the table seals its Parquet base files with a whole-file checksum
    (``morlog.base.file.checksum=crc32``: morlog's record index, spec/rli.md §1a)."""
    raw = props.get(file_checksum.PROPERTY)
    if raw is None or not str(raw).strip():
        return False
    if str(raw).strip().lower() != file_checksum.PROPERTY_VALUE:
        raise UsageError(f"unsupported {file_checksum.PROPERTY}",
                         expected=file_checksum.PROPERTY_VALUE, actual=raw)
    return True


def encode_base_file(records: pa.Table, fmt: BaseFormat, props: Mapping[str, str],
                     footer: Mapping[bytes, bytes], avro_schema: str | None = None) -> bytes:
    """The bytes of a base file of format ``fmt`` holding ``records`` (meta columns first),
    with ``footer`` (``morlog.compat.base_footer.encode_base_footer``) where Hudi's writer of
    the format keeps it; ``props``: the table's properties and write settings; ``avro_schema``
    (JSON): stored by ORC files as Hudi's ORC writer does."""
    if fmt is BaseFormat.PARQUET:
        import pyarrow.parquet as pq

        buf = io.BytesIO()
        opts = parquet_write_options(props)
        if opts["use_dictionary"] is True:
            opts["use_dictionary"] = dictionary_columns(records)
        sealed = _sealed(props)
        extra = {file_checksum.KEY: file_checksum.PLACEHOLDER} if sealed else {}
        with pq.ParquetWriter(buf, records.schema, store_schema=False, **opts) as w:
            w.add_key_value_metadata({**footer, **nan_counts_entry(records), **extra})
            w.write_table(records, row_group_size=row_group_rows(records, props))
        return file_checksum.seal(buf.getvalue()) if sealed else buf.getvalue()
    if _sealed(props):
        raise UsageError(f"{file_checksum.PROPERTY} needs Parquet base files",
                         expected="PARQUET", actual=fmt.value)
    if fmt is BaseFormat.ORC:
        import pyarrow.orc as orc

        sink = pa.BufferOutputStream()
        orc.write_table(records, sink, **orc_write_options(props))
        items = dict(footer)
        if avro_schema is not None:
            items[ORC_AVRO_SCHEMA_KEY] = avro_schema.encode("utf-8")
        return add_user_metadata(sink.getvalue().to_pybytes(), items)
    if fmt is not BaseFormat.LANCE:
        raise UsageError(f"morlog writes no {fmt.value} base files of a data table",
                         expected=["PARQUET", "ORC", "LANCE"], actual=fmt.value)
    lance_file = require_lance()
    with tempfile.TemporaryDirectory(prefix="morlog-lance-") as d:
        path = os.path.join(d, "base.lance")
        w = lance_file.LanceFileWriter(path, records.schema.remove_metadata())
        for batch in records.to_batches():
            w.write_batch(batch)
        for k, v in footer.items():
            w.add_schema_metadata(k.decode("utf-8"), v.decode("utf-8"))
        w.close()
        with open(path, "rb") as f:
            return f.read()
