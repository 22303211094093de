"""``format("morlog")`` in every Spark session, with no ``register`` call.

PySpark 4 looks up Python data sources when a session first uses one: a Python worker
imports every installed top-level module whose name starts with ``pyspark_`` and registers
the module's ``DefaultSource`` (a ``pyspark.sql.datasource.DataSource`` subclass) under its
``name()`` (``pyspark/sql/worker/lookup_data_sources.py``). This module is that entry point
for morlog; it lives in ``spark/pyspark_morlog/`` and installs as ``pyspark_morlog``.

``DefaultSource`` is resolved on first access, so importing this module (or ``morlog``)
loads neither pyspark nor a JVM. Found by PySpark's lookup where it is installed as a
package (a wheel, ``pip install morlog``) and in a checkout's ``make setup`` environment
(the editable install maps it through an import hook that ``pkgutil.iter_modules`` does not
list, so ``make setup`` also puts a directory linking to it on ``sys.path``); elsewhere
call ``morlog.spark.register(spark)``. The lookup runs in the Python Spark starts
(``spark.pyspark.python``, ``PYSPARK_PYTHON``): morlog must be installed there.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "DefaultSource":
        from morlog.spark.write import MorlogDataSource

        return MorlogDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DefaultSource"]
