"""Base-file Parquet options from the table's hoodie.parquet.* settings."""

from __future__ import annotations

import io
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from morlog.logformat.errors import UsageError
from morlog.writers.core.base_file import (
    BLOCK_SIZE,
    COMPRESSION_CODEC,
    DICTIONARY_ENABLED,
    PAGE_SIZE,
    dictionary_columns,
    encode_base_file,
    parquet_write_options,
    row_group_rows,
)


def test_hudi_defaults() -> None:
    assert parquet_write_options({}) == {
        "compression": "snappy", "use_dictionary": True, "data_page_size": 1 << 20,
        "dictionary_pagesize_limit": 1 << 20, "data_page_version": "1.0"}


@pytest.mark.parametrize("codec,expected,level", [
    ("GZIP", "gzip", 6), ("zstd", "zstd", 3), ("UNCOMPRESSED", "none", None),
    ("snappy", "snappy", None), ("", "snappy", None)])
def test_codecs_and_parquet_mr_levels(codec: str, expected: str, level: int | None) -> None:
    opts = parquet_write_options({COMPRESSION_CODEC: codec})
    assert opts["compression"] == expected and opts.get("compression_level") == level


def test_page_size_and_dictionary() -> None:
    opts = parquet_write_options({PAGE_SIZE: "65536", DICTIONARY_ENABLED: "False"})
    assert (opts["data_page_size"], opts["dictionary_pagesize_limit"]) == (65536, 65536)
    assert opts["use_dictionary"] is False


def test_dictionary_only_where_it_pays() -> None:
    """parquet-mr's test on a column's first values: a dictionary where it makes the column
    smaller (few distinct values), plain where it would not (unique keys, measurements);
    nested columns keep it; the setting off turns it off everywhere."""
    import numpy as np

    from morlog.readers.base_files import BaseFormat

    n = 40_000
    rng = np.random.default_rng(7)
    table = pa.table({
        "key": [f"key-{i:08d}" for i in range(n)],
        "city": pa.array(["sf", "nyc", "chennai"] * (n // 3) + ["sf"] * (n % 3)),
        "lat": rng.random(n),
        "passengers": rng.integers(1, 5, n),
        "empty": pa.nulls(n, pa.int64()),
        "nested": pa.array([{"a": "x", "b": int(i % 2)} for i in range(n)]),
    })
    cols = dictionary_columns(table)
    assert {"city", "passengers", "nested.a", "nested.b"} <= set(cols)
    assert not {"key", "lat"} & set(cols)
    for props, dictionary in (({}, True), ({DICTIONARY_ENABLED: "false"}, False)):
        data = encode_base_file(table, BaseFormat.PARQUET, props, {})
        md = pq.read_metadata(io.BytesIO(data)).row_group(0)
        enc = {md.column(i).path_in_schema: md.column(i).encodings
               for i in range(md.num_columns)}
        assert ("RLE_DICTIONARY" in enc["city"]) is dictionary
        assert "RLE_DICTIONARY" not in enc["key"] and "RLE_DICTIONARY" not in enc["lat"]
        assert pq.read_table(io.BytesIO(data)).equals(table)


@pytest.mark.parametrize("props", [{COMPRESSION_CODEC: "lzo"}, {PAGE_SIZE: "0"},
                                   {PAGE_SIZE: "1MB"}, {DICTIONARY_ENABLED: "yes"},
                                   {BLOCK_SIZE: "-1"}])
def test_bad_settings_are_usage_errors(props: dict[str, str]) -> None:
    with pytest.raises(UsageError):
        parquet_write_options(props)
        row_group_rows(pa.table({"a": [1]}), props)


def test_row_groups_follow_the_block_size_and_files_read_back() -> None:
    table = pa.table({"k": [f"key-{i:06d}" for i in range(10_000)],
                      "v": list(range(10_000))})
    per_row = table.nbytes // table.num_rows
    props = {BLOCK_SIZE: str(per_row * 2500), COMPRESSION_CODEC: "zstd"}
    rows = row_group_rows(table, props)
    assert rows == 2500
    assert row_group_rows(table, {}) >= table.num_rows  # 120 MiB: one group
    assert row_group_rows(table.slice(0, 0), props) == 1
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, table.schema, store_schema=False,
                          **parquet_write_options(props)) as w:
        w.write_table(table, row_group_size=rows)
    md = pq.read_metadata(io.BytesIO(buf.getvalue()))
    assert md.num_row_groups == 4
    assert md.row_group(0).column(0).compression == "ZSTD"
    assert pq.read_table(io.BytesIO(buf.getvalue())).equals(table)


@pytest.mark.parametrize("codec, expected", [(None, "SNAPPY"), ("gzip", "GZIP"),
                                             ("zstd", "ZSTD")])
def test_parquet_log_blocks_follow_the_compression_codec(tmp_path: Any, codec: str | None,
                                                         expected: str) -> None:
    """Parquet-carrier log blocks use the writer's ``hoodie.parquet.compression.codec``
    (Hudi's ``HoodieParquetDataBlock`` does; default snappy), like the base files."""
    from morlog.readers.logfile import LogFileReader
    from morlog.writers.client import MorTable
    from morlog.writers.options import WriteConfig

    schema = pa.schema([("id", pa.string()), ("v", pa.int64())])
    opts = {} if codec is None else {"hoodie.parquet.compression.codec": codec}
    cfg = WriteConfig(carrier="parquet", new_groups="log", hoodie_options=opts)
    t = MorTable.create(str(tmp_path / "t"), schema, key_field="id", config=cfg)
    t.upsert(pa.table({"id": ["a", "b"], "v": [1, 2]}, schema=schema))
    (log,) = list((tmp_path / "t").glob(".*.log.*"))
    with LogFileReader(str(log)) as reader:
        (block,) = list(reader.blocks())
        content = block.content()
        assert block.to_arrow().num_rows == 2
    pf = pq.ParquetFile(pa.BufferReader(content))
    assert {pf.metadata.row_group(0).column(i).compression
            for i in range(pf.metadata.num_columns)} == {expected}
