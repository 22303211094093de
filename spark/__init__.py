"""morlog on Spark: ``format("morlog")``, the distributed upsert and the distributed services.

The Spark room (the ``spark`` extra: pyspark and pandas, Java 17)::

    morlog.spark.source          the read half of the data source: spark.read.format("morlog"),
                                 filter pushdown, the record index lookup of a DataFrame
    morlog.spark.write           the data source with its writer (df.write.format("morlog")),
                                 save modes, the distributed upsert, compaction, log
                                 compaction, cleaning and record index build
    morlog.spark.stream          the streaming sink: df.writeStream.format("morlog"), exactly
                                 once by Hudi's checkpoint in the commits, services inside
    morlog.spark.stream_source   the streaming source: spark.readStream.format("morlog")
    morlog.spark.sql             Spark SQL's options and Hudi's SQL table properties
    morlog.spark.pyspark_morlog  installs as the top-level ``pyspark_morlog``: PySpark 4 finds
                                 format("morlog") by it with no register() call

The names below are the public Spark API::

    from morlog.spark import register, upsert
    register(spark)   # from a source checkout; an installed morlog is found without it
    upsert(spark, df, path, key="id", partition="region", ordering="ts")

``import morlog.spark`` loads neither pyspark nor a JVM: a name is imported from its module on
first use, and without pyspark that use is a :class:`~morlog.logformat.errors.UsageError`
naming the extra to install.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from morlog.logformat.errors import UsageError

SPARK_EXTRA = "pip install 'morlog[spark]'"
#: the packages the Spark modules import when they load (the ``spark`` extra's)
_EXTRA_PACKAGES = ("pyspark", "py4j", "pandas")

# name -> module, loaded on first use
_PUBLIC = {
    **dict.fromkeys(("LOOKUP_COLUMNS", "READ_OPTIONS", "MorlogReadSource", "lookup_record_index",
                     "register_reader"), "morlog.spark.source"),
    **dict.fromkeys(("PUSHDOWN_CONF", "SAVE_MODES", "MorlogDataSource", "MorlogPushdownDataSource",
                     "build_record_index", "clean", "compact", "log_compact", "register", "save",
                     "session", "table_exists", "upsert"), "morlog.spark.write"),
}

if TYPE_CHECKING:
    from morlog.spark.source import (
        LOOKUP_COLUMNS,
        READ_OPTIONS,
        MorlogReadSource,
        lookup_record_index,
        register_reader,
    )
    from morlog.spark.write import (
        PUSHDOWN_CONF,
        SAVE_MODES,
        MorlogDataSource,
        MorlogPushdownDataSource,
        build_record_index,
        clean,
        compact,
        log_compact,
        register,
        save,
        session,
        table_exists,
        upsert,
    )

__all__ = [
    "LOOKUP_COLUMNS", "PUSHDOWN_CONF", "READ_OPTIONS", "SAVE_MODES", "SPARK_EXTRA",
    "MorlogDataSource", "MorlogPushdownDataSource", "MorlogReadSource", "build_record_index",
    "clean", "compact", "log_compact", "lookup_record_index", "register", "register_reader",
    "save", "session", "table_exists", "upsert",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'morlog.spark' has no attribute {name!r}")
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing not in _EXTRA_PACKAGES:
            raise
        raise UsageError(f"morlog.spark.{name} needs {missing}, which is not installed "
                         f"({SPARK_EXTRA})") from None
    value = getattr(loaded, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
