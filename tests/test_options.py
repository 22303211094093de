"""Hudi's write options -> morlog's write settings (``morlog.writers.options``), the one
mapping of the Python API (``WriteConfig.from_hoodie_options``) and the Spark data source."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from morlog.logformat.errors import UsageError
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import (
    IGNORED_HOODIE_OPTIONS,
    SPARK_ALIASES,
    WriteConfig,
    parse_write_options,
)


def test_hudi_keys_set_the_write_config() -> None:
    cfg = WriteConfig.from_hoodie_options({
        "hoodie.logfile.data.block.format": "parquet",
        "hoodie.parquet.max.file.size": "1000000",
        "hoodie.parquet.small.file.limit": 500000,
        "hoodie.logfile.to.parquet.compression.ratio": "0.5",
        "hoodie.write.set.null.for.missing.columns": "true",
        "hoodie.parquet.compression.codec": "zstd",
        "hoodie.parquet.block.size": "1048576",
        "hoodie.parquet.page.size": "65536",
        "hoodie.parquet.dictionary.enabled": "false",
        "hoodie.metadata.enable": False,
    })
    assert cfg.carrier == "parquet"
    assert (cfg.max_file_size, cfg.small_file_limit) == (1_000_000, 500_000)
    assert cfg.log_to_parquet_ratio == 0.5 and cfg.set_null_for_missing_columns
    assert cfg.hoodie_options == {"hoodie.parquet.compression.codec": "zstd",
                                  "hoodie.parquet.block.size": "1048576",
                                  "hoodie.parquet.page.size": "65536",
                                  "hoodie.parquet.dictionary.enabled": "false",
                                  "hoodie.metadata.enable": "false"}
    # morlog's own names stay as aliases
    cfg = WriteConfig.from_hoodie_options({"morlog.carrier": "parquet", "morlog.new.groups":
                                           "log", "morlog.route.inserts": "false",
                                           "morlog.max.file.size": "9", "morlog.record.size":
                                           "100"})
    assert (cfg.carrier, cfg.new_groups, cfg.route_inserts, cfg.max_file_size,
            cfg.record_size) == ("parquet", "log", False, 9, 100)
    assert WriteConfig.from_hoodie_options({}) == WriteConfig()


def test_table_options_operations_and_table_properties() -> None:
    o = parse_write_options({
        "hoodie.table.name": "trips", "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.table.ordering.fields": "ts",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.datasource.write.operation": "BULK_INSERT",
        "hoodie.datasource.write.hive_style_partitioning": "TRUE",
        "hoodie.datasource.write.partitionpath.urlencode": "true",
        "hoodie.datasource.write.keygenerator.class":
            "org.apache.hudi.keygen.SimpleKeyGenerator",
        "hoodie.datasource.write.keygenerator.type": "SIMPLE",
        "hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING",
    })
    assert (o.table_name, o.key, o.partition, o.ordering) == ("trips", "uuid", "city", "ts")
    assert (o.operation, o.operation_name) == ("insert", "bulk_insert")
    assert o.event_time_ordering is False
    assert o.table_properties == {
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.partitionpath.urlencode": "true",
        "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
        "hoodie.table.keygenerator.type": "SIMPLE"}
    for op in ("upsert", "insert", "delete", "insert_overwrite", "insert_overwrite_table",
               "delete_partition"):
        assert parse_write_options({"hoodie.datasource.write.operation": op}).operation == op
    o = parse_write_options({"hoodie.datasource.write.operation": "delete_partition",
                             "hoodie.datasource.write.partitions.to.delete": "a, b/c,"})
    assert o.partitions_to_delete == ["a", "b/c"]
    # precombine and Hudi 1.x's ordering fields are the same notion: they must agree
    assert parse_write_options({"hoodie.datasource.write.precombine.field": "ts",
                                "hoodie.table.ordering.fields": "ts"}).ordering == "ts"
    with pytest.raises(UsageError, match="contradicts"):
        parse_write_options({"hoodie.datasource.write.precombine.field": "ts",
                             "hoodie.table.ordering.fields": "other"})


def test_record_size_estimate_options_are_hudis() -> None:
    """Hudi's record size estimate settings (``morlog.writers.core.sizing``) are accepted and
    mapped; before they were refused as unsupported Hudi options."""
    cfg = WriteConfig.from_hoodie_options({
        "hoodie.copyonwrite.record.size.estimate": "300",
        "hoodie.record.size.estimation.threshold": "0",
        "_hoodie.record.size.estimator.max.commits": "2"})
    assert (cfg.record_size_estimate, cfg.record_size_threshold,
            cfg.record_size_max_commits, cfg.record_size) == (300, 0.0, 2, None)
    defaults = WriteConfig()
    assert (defaults.record_size_estimate, defaults.record_size_threshold,
            defaults.record_size_max_commits) == (1024, 1.0, 5)
    with pytest.raises(UsageError, match="hoodie.record.size.estimation.threshold must be 0"):
        parse_write_options({"hoodie.record.size.estimation.threshold": "-1"})
    with pytest.raises(UsageError, match="hoodie.copyonwrite.record.size.estimate"):
        parse_write_options({"hoodie.copyonwrite.record.size.estimate": "0"})


def test_refusals_name_the_option() -> None:
    with pytest.raises(UsageError, match="hoodie.datasource.write.table.type=COPY_ON_WRITE"):
        parse_write_options({"hoodie.datasource.write.table.type": "COPY_ON_WRITE"})
    with pytest.raises(UsageError, match="unknown morlog option 'morlog.colour'"):
        parse_write_options({"morlog.colour": "red"})
    with pytest.raises(UsageError, match="unsupported Hudi write option "
                       "'hoodie.datasource.write.payload.class'"):
        parse_write_options({"hoodie.datasource.write.payload.class": "x.Y"})
    with pytest.raises(UsageError, match="unknown write option 'colour'"):
        parse_write_options({"colour": "red"})
    with pytest.raises(UsageError, match="unsupported hoodie.datasource.write.operation"):
        parse_write_options({"hoodie.datasource.write.operation": "upsert_prepped"})
    with pytest.raises(UsageError, match="hoodie.logfile.data.block.format"):
        parse_write_options({"hoodie.logfile.data.block.format": "hfile"})
    with pytest.raises(UsageError, match="hoodie.parquet.max.file.size must be a whole"):
        parse_write_options({"hoodie.parquet.max.file.size": "big"})
    with pytest.raises(UsageError, match="hoodie.write.set.null.for.missing.columns"):
        parse_write_options({"hoodie.write.set.null.for.missing.columns": "maybe"})
    with pytest.raises(UsageError, match="hoodie.write.lock.wait_time_ms must be 0 or more"):
        parse_write_options({"hoodie.write.lock.wait_time_ms": "-1"})
    with pytest.raises(UsageError, match="one record key field"):
        parse_write_options({"hoodie.datasource.write.recordkey.field": "a,b"})
    # the Spark source's short aliases are the Spark source's only
    with pytest.raises(UsageError, match="unknown write option 'key'"):
        parse_write_options({"key": "id"})
    o = parse_write_options({"key": "id", "path": "/x", "table": "t"}, spark_aliases=True)
    assert (o.key, o.path, o.table_name) == ("id", "/x", "t")
    assert set(SPARK_ALIASES) == {"path", "table", "key", "partition", "ordering",
                                  "operation"}


def test_engine_tuning_options_of_hudi_are_accepted_and_ignored() -> None:
    assert {"hoodie.upsert.shuffle.parallelism",
            "hoodie.insert.shuffle.parallelism"} <= IGNORED_HOODIE_OPTIONS
    o = parse_write_options({k: "2" for k in IGNORED_HOODIE_OPTIONS})
    assert o.config == WriteConfig() and o.table_properties == {}


def test_options_create_the_table_they_describe(tmp_path: Path) -> None:
    o = parse_write_options({
        "hoodie.table.name": "trips", "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING"})
    batch = pa.table({"uuid": ["a"], "city": ["paris"], "ts": [1]})
    t = MorTable.create_from_options(str(tmp_path / "t"), batch.schema, o)
    t.upsert(batch)
    assert (tmp_path / "t" / "city=paris").is_dir()
    props = Table(str(tmp_path / "t")).config.props
    assert props["hoodie.table.name"] == "trips"
    assert props["hoodie.datasource.write.hive_style_partitioning"] == "true"
    assert props["hoodie.record.merge.mode"] == "COMMIT_TIME_ORDERING"  # a version-9 table
    o.check_table(t)  # the same options fit
    for opt, value in (("hoodie.table.name", "other"),
                       ("hoodie.datasource.write.recordkey.field", "ts"),
                       ("hoodie.datasource.write.partitionpath.field", "uuid")):
        with pytest.raises(UsageError, match="differs from the table's"):
            parse_write_options({opt: value}).check_table(t)
    with pytest.raises(UsageError, match="needs hoodie.datasource.write.recordkey.field"):
        MorTable.create_from_options(str(tmp_path / "u"), batch.schema,
                                     parse_write_options({}))
