"""``morlog.spark``, the Spark room: its public names, and ``import morlog.spark`` without a
JVM (and without pyspark, where a name's use says which extra to install)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: what Spark users call (README, spec): each is a public name of ``morlog.spark``
CALLED = {"register", "session", "save", "upsert", "compact", "log_compact", "clean",
          "build_record_index", "lookup_record_index", "MorlogDataSource", "PUSHDOWN_CONF"}


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=120, check=False)


_WITHOUT_PYSPARK = """
import json, sys
sys.modules["pyspark"] = None   # as if the spark extra were not installed
import morlog.spark
out = {"loaded": [m for m in ("pyspark", "py4j", "pandas", "morlog.spark.write",
                              "morlog.spark.source") if sys.modules.get(m) is not None],
       "all": morlog.spark.__all__}
from morlog.errors import UsageError
try:
    morlog.spark.upsert
except UsageError as exc:
    out["attr"] = str(exc)
try:
    from morlog.spark import register
except UsageError as exc:
    out["from"] = str(exc)
try:
    morlog.spark.no_such_name
except AttributeError as exc:
    out["unknown"] = str(exc)
print(json.dumps(out))
"""


def test_import_morlog_spark_needs_no_pyspark_and_a_use_names_the_extra() -> None:
    r = _run(_WITHOUT_PYSPARK)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["loaded"] == []
    assert CALLED <= set(got["all"])
    assert got["attr"].startswith("morlog.spark.upsert needs pyspark, which is not installed")
    assert "pip install 'morlog[spark]'" in got["attr"]
    assert "morlog.spark.register needs pyspark" in got["from"]
    assert "pip install 'morlog[spark]'" in got["from"]
    assert "no attribute 'no_such_name'" in got["unknown"]


def test_import_morlog_spark_starts_no_jvm() -> None:
    r = _run("import sys, morlog.spark; print([m for m in ('pyspark', 'py4j', "
             "'morlog.spark.write', 'morlog.spark.source') if m in sys.modules])")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_the_public_names_are_the_modules_objects() -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install .[spark])")
    import morlog.spark
    from morlog.spark import source, write

    for name in morlog.spark.__all__:
        if name == "SPARK_EXTRA":
            continue
        home = source if name in source.__all__ else write
        assert getattr(morlog.spark, name) is getattr(home, name), name
        assert name in home.__all__, f"{name} is not public in {home.__name__}"
    assert set(dir(morlog.spark)) >= set(morlog.spark.__all__)


def test_pyspark_morlog_gives_the_data_source_of_morlog_spark() -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install .[spark])")
    import pyspark_morlog

    import morlog.spark

    assert pyspark_morlog.DefaultSource is morlog.spark.MorlogDataSource
    assert pyspark_morlog.DefaultSource.name() == "morlog"
