"""The one Spark session of the test run (session-scoped ``spark`` fixture, made available to
every test module by ``conftest.py``): ``local[2,2]``, UI off, workers on this interpreter,
``format("morlog")`` registered (so that the suite also runs where morlog is importable
but not installed; ``tests/test_packaging.py`` checks that the installed wheel and the
checkout's ``make setup`` environment are found without registering)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install .[spark])")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from morlog.spark.write import register

    # local[2,2]: two threads, a failed task is retried once (the retry test needs it)
    session = (SparkSession.builder.master("local[2,2]").appName("morlog-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.python.worker.reuse", "true")
               .config("spark.ui.showConsoleProgress", "false")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()
