"""Parquet data block content (spec §5.3): a complete Parquet file, no version prefix."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import ContentError

PARQUET_MAGIC = b"PAR1"
#: Hudi's current default ``hoodie.parquet.compression.codec`` (``HoodieStorageConfig``;
#: Hudi 0.x defaulted to gzip, which its older Parquet log blocks show); writers pass the
#: table's setting
DEFAULT_COMPRESSION = "snappy"


def _check(content: bytes | memoryview, base: int, path: str | None) -> None:
    if len(content) < 12 or bytes(content[:4]) != PARQUET_MAGIC:
        raise ContentError("Parquet data block content does not start with PAR1", path=path,
                           offset=base, expected=PARQUET_MAGIC, actual=bytes(content[:4]))
    if bytes(content[-4:]) != PARQUET_MAGIC:
        raise ContentError("Parquet data block content does not end with PAR1", path=path,
                           offset=base + len(content) - 4, expected=PARQUET_MAGIC,
                           actual=bytes(content[-4:]))


def parquet_file(content: bytes | memoryview, *, base: int = 0,
                 path: str | None = None) -> pq.ParquetFile:
    """Open the embedded Parquet file (reads its footer only)."""
    _check(content, base, path)
    try:
        return pq.ParquetFile(pa.BufferReader(pa.py_buffer(content)))
    except Exception as exc:  # ArrowInvalid, OSError...
        raise ContentError(f"Parquet data block footer does not decode: {exc}", path=path,
                           offset=base) from None


def parquet_num_rows(content: bytes | memoryview, *, base: int = 0,
                     path: str | None = None) -> int:
    return int(parquet_file(content, base=base, path=path).metadata.num_rows)


def parquet_key_value_metadata(content: bytes | memoryview, *, base: int = 0,
                               path: str | None = None) -> dict[bytes, bytes]:
    md = parquet_file(content, base=base, path=path).metadata.metadata
    return dict(md) if md else {}


_DICTIONARY_READABLE = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
                        pa.types.is_large_binary)


#: Hudi's meta columns of few distinct values in a file (one commit, partition and file
#: name per base file or block; more only after a log compaction or a clustering)
LOW_CARDINALITY = ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_file_name")


def dictionary_columns(pf: pq.ParquetFile, columns: Sequence[str] | None = None,
                       schema: pa.Schema | None = None) -> list[str]:
    """The columns of ``pf`` (of ``columns``, when given) read as Arrow dictionaries, then
    cast to their plain type: Hudi's low-cardinality meta columns (:data:`LOW_CARDINALITY`)
    where they are strings. That is about twice as fast as the Parquet reader's own dense
    decode of their dictionary pages.

    Chosen by name, not by the column chunks' metadata: on a damaged footer pyarrow aborts
    the process when a chunk's metadata is looked at (a ``ParquetException`` it does not
    convert), while the read itself raises an error morlog reports. ``schema``:
    ``pf.schema_arrow`` when the caller has it."""
    want = None if columns is None else set(columns)
    out = []
    for f in schema if schema is not None else pf.schema_arrow:
        if f.name not in LOW_CARDINALITY or (want is not None and f.name not in want):
            continue
        if any(t(f.type) for t in _DICTIONARY_READABLE):
            out.append(f.name)
    return out


def read_parquet_table(source: Any, pf: pq.ParquetFile | None = None,
                       columns: Sequence[str] | None = None, *,
                       validate: bool = False) -> pa.Table:
    """``ParquetFile(source).read(columns)``, the same table (types, values, schema
    metadata), with the dictionary-encoded string columns (:func:`dictionary_columns`)
    decoded as dictionaries and cast to their plain type. ``pf``: ``source`` opened already
    (its footer is not parsed again); ``validate``: check the values fully (UTF-8 of
    strings), the dictionary columns on their dictionaries, before they are expanded."""
    pf = pf if pf is not None else pq.ParquetFile(source)
    cols = None if columns is None else list(columns)
    plain = pf.schema_arrow
    dict_cols = dictionary_columns(pf, cols, plain)
    if dict_cols:
        table = pq.ParquetFile(source, metadata=pf.metadata,
                               read_dictionary=dict_cols).read(columns=cols)
    else:
        table = pf.read(columns=cols)
    if validate:
        table.validate(full=True)
    if not dict_cols:
        return table
    for name in dict_cols:
        i = table.schema.get_field_index(name)
        if i < 0 or not pa.types.is_dictionary(table.schema.field(i).type):
            continue
        f = plain.field(name)
        table = table.set_column(i, f, table.column(i).cast(f.type))
    return table


def decode_parquet_content(content: bytes | memoryview, *, columns: list[str] | None = None,
                           base: int = 0, path: str | None = None,
                           pf: pq.ParquetFile | None = None) -> pa.Table:
    """The records of a Parquet data block's content; ``pf``: the content opened already
    (:func:`parquet_file`, whose footer is then not parsed a second time)."""
    if pf is None:
        pf = parquet_file(content, base=base, path=path)
    try:
        # Parquet readers do not check that string values are UTF-8: a damaged byte would
        # reach users as an Arrow string that fails later, far from the block
        return read_parquet_table(pa.BufferReader(pa.py_buffer(content)), pf, columns,
                                  validate=True)
    except Exception as exc:
        raise ContentError(f"Parquet data block does not decode: {exc}", path=path,
                           offset=base) from None


def encode_parquet_content(table: pa.Table, *, compression: str = DEFAULT_COMPRESSION,
                           key_value_metadata: dict[str, str] | None = None) -> bytes:
    """Write ``table`` as one Parquet file; ``key_value_metadata`` goes into the footer's
    key/value metadata only. (Put into the Arrow schema's metadata instead, it would be
    stored twice: as its own entry and again inside the Base64 of ``ARROW:schema``, which
    doubled the footer of an indexed block.)"""
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, table.schema, compression=compression) as w:
        w.write_table(table)
        if key_value_metadata:
            w.add_key_value_metadata(key_value_metadata)
    return bytes(sink.getvalue().to_pybytes())
