"""Parquet data block content (spec §5.3): a complete Parquet file, no version prefix."""

from __future__ import annotations

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


def decode_parquet_content(content: bytes | memoryview, *, columns: list[str] | None = None,
                           base: int = 0, path: str | None = None) -> pa.Table:
    pf = parquet_file(content, base=base, path=path)
    try:
        table = pf.read(columns=columns)
        # Parquet readers do not check that string values are UTF-8: a damaged byte would
        # reach users as an Arrow string that fails later, far from the block
        table.validate(full=True)
        return table
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
