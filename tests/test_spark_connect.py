"""morlog's Spark entry points from a Spark Connect client (issue 25): the data source (write
and read), ``morlog.spark.upsert``, ``compact``, ``log_compact``, ``clean``,
``build_record_index`` and ``lookup_record_index``, against a Spark Connect server of the
pip-installed pyspark (``sbin/start-connect-server.sh``) bound to 127.0.0.1 on a free port,
started and stopped by the module's fixture.

The client runs in a process of its own (this file run as a script): once a Python process
holds a Connect session, PySpark sends every ``pyspark.sql.functions`` call to Connect
(``SPARK_CONNECT_MODE_ENABLED``), which would break the test run's classic session
(``tests/spark_session.py``) in the same process. The client returns what it saw as JSON; the
test checks it, and the table (read by morlog's own reader), against a model.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

#: what pyspark's Connect client imports beyond pyspark (pyspark[connect], the connect extra)
CLIENT_MODULES = ("grpc", "grpc_status", "google.protobuf", "zstandard", "pandas")
START_TIMEOUT = 180.0


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _missing(reason: str) -> None:
    """Skip, or fail under CI, where ``make test`` should have installed it."""
    if _ci():
        pytest.fail(f"{reason} (CI=true: make test installs it with the test extra)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install .[spark])")
    import pyspark

    for m in CLIENT_MODULES:
        try:
            found = importlib.util.find_spec(m) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            _missing(f"the Spark Connect client needs {m} (pip install 'morlog[connect]')")
    home = Path(pyspark.__file__).parent
    script = home / "sbin" / "start-connect-server.sh"
    if not script.exists() or not list((home / "jars").glob("spark-connect_*.jar")):
        _missing(f"this pyspark ({pyspark.__version__}) ships no Spark Connect server")
    work = tmp_path_factory.mktemp("connect-server")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")}
    env.update(SPARK_HOME=str(home), SPARK_LOG_DIR=str(work), SPARK_PID_DIR=str(work),
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    log = work / "server.log"
    confs = {"spark.connect.grpc.binding.address": "127.0.0.1",
             "spark.connect.grpc.binding.port": str(port),
             "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
             "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
             "spark.python.worker.reuse": "true"}
    # --wait: in the foreground, in a process group of its own, stopped with it below
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["bash", str(script), "--wait", "--master", "local[2]",
             *(a for k, v in confs.items() for a in ("--conf", f"{k}={v}"))],
            env=env, cwd=work, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("the Spark Connect server did not start:\n"
                                + log.read_text(errors="replace")[-3000:])
                time.sleep(0.2)
        yield f"sc://127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def _rows(ids: range | list[int], ts: int) -> list[tuple[str, str, int, str]]:
    return [(f"k{i:03d}", "eu" if i % 2 else "us", ts, f"v{i}-{ts}") for i in ids]


SCHEMA = "id string, region string, ts long, v string"
NO_AUTO_CLEAN = {"hoodie.clean.automatic": "false"}


def _model() -> dict[str, tuple[str, str, int, str]]:
    """What the client's writes leave (see :func:`client`)."""
    m = {r[0]: r for r in _rows(range(40), 1)}
    m.update({r[0]: r for r in _rows([*range(10), *range(40, 46)], 2)})
    for k in ("k003", "k004"):
        del m[k]
    m.update({r[0]: r for r in _rows([*range(10, 20), *range(46, 52)], 3)})
    del m["k005"]
    m.update({r[0]: r for r in _rows(range(20, 25), 4)})
    return m


def client(url: str, path: str) -> dict[str, Any]:
    """The Connect client's work (in its own process): every entry point once."""
    from pyspark.sql import SparkSession

    import morlog.spark as ms
    from morlog.writers.options import WriteConfig

    spark = SparkSession.builder.remote(url).getOrCreate()
    assert type(spark).__module__.startswith("pyspark.sql.connect")
    ms.register(spark)  # spark.dataSource.register, available under Connect
    same, created = ms.session("local[1]", "ignored")  # the active (Connect) session
    assert same is spark and not created
    opts = {"hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.table.name": "c",
            **NO_AUTO_CLEAN}

    def df(rows: list[tuple[str, str, int, str]]) -> Any:
        return spark.createDataFrame(rows, SCHEMA)

    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    # the data source: create, upsert (updates and inserts), delete
    df(_rows(range(40), 1)).write.format("morlog").options(**opts).mode("append").save(path)
    (df(_rows([*range(10), *range(40, 46)], 2)).write.format("morlog").options(**opts)
     .mode("append").save(path))
    (df(_rows([3, 4], 9)).write.format("morlog").options(**opts)
     .option("hoodie.datasource.write.operation", "delete").mode("append").save(path))
    # the distributed upsert: updates and inserts, then a delete
    cfg = WriteConfig(fsync=False, hoodie_options=dict(NO_AUTO_CLEAN))
    kw: dict[str, Any] = dict(key="id", partition="region", ordering="ts", config=cfg)
    up = ms.upsert(spark, df(_rows([*range(10, 20), *range(46, 52)], 3)), path, **kw)
    out["upsert_inserts"] = int(up["morlog.inserts"])
    ms.upsert(spark, df(_rows([5], 9)), path, operation="delete", **kw)
    # the services
    lc = ms.log_compact(spark, path, {"hoodie.log.compaction.blocks.threshold": "2",
                                      **NO_AUTO_CLEAN})
    out["log_compacted"] = sum(len(r.compacted) for r in lc.results)
    c = ms.compact(spark, path, dict(NO_AUTO_CLEAN))
    out["compacted"] = sum(len(r.compacted) for r in c.results)
    ms.upsert(spark, df(_rows(range(20, 25), 4)), path, **kw)
    cl = ms.clean(spark, path, {"hoodie.clean.commits.retained": "1", **NO_AUTO_CLEAN})
    out["cleaned"] = sum(len(r.deleted) for r in cl.results)
    rli = ms.build_record_index(spark, path, 3)
    out["rli_entries"] = rli.entries
    found = ms.lookup_record_index(
        spark.createDataFrame([(k,) for k in ("k000", "k003", "k051", "k999")], "id string"),
        path, key="id").toArrow()
    out["lookup"] = {k: f for k, f in zip(found.column("id").to_pylist(),
                                          found.column("_rli_file_id").to_pylist(), strict=True)}
    back = spark.read.format("morlog").load(path).select("id", "region", "ts", "v").toArrow()
    out["read"] = sorted(tuple(r.values()) for r in back.to_pylist())
    out["seconds"] = round(time.perf_counter() - t0, 1)
    spark.stop()
    return out


def test_every_entry_point_through_spark_connect(connect_url: str, tmp_path: Path) -> None:
    """Through Connect: writes by the data source and by ``upsert`` (updates, inserts,
    deletes), log compaction, compaction, clean, the record index built and looked up;
    the table equals the model, read back through Connect and by morlog."""
    from morlog.readers.record_index import RecordIndex
    from morlog.readers.table import Table

    path = str(tmp_path / "t")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    run = subprocess.run([sys.executable, __file__, connect_url, path], env=env,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-5000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    model = _model()
    expected = sorted(model.values())
    assert [tuple(r) for r in got["read"]] == expected
    table = Table(path)
    mine = table.read(columns=["id", "region", "ts", "v"]).to_pylist()
    assert sorted(tuple(r.values()) for r in mine) == expected
    assert got["upsert_inserts"] == 6
    assert got["log_compacted"] >= 1 and got["compacted"] >= 1 and got["cleaned"] >= 1
    assert got["rli_entries"] == len(model)
    index = RecordIndex.open(table)
    assert index is not None
    index.check_current()
    slices = {s.file_id: s.partition for s in table.file_slices()}
    lookup = got["lookup"]
    assert lookup["k003"] is None and lookup["k999"] is None  # deleted, never written
    assert slices[lookup["k000"]] == "us" and slices[lookup["k051"]] == "eu"
    print(f"Spark Connect client: {got['seconds']} s")


if __name__ == "__main__":  # the Connect client's process
    print(json.dumps(client(sys.argv[1], sys.argv[2])))
