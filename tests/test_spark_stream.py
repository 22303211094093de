"""``writeStream.format("morlog")``: exactly once across restarts and a killed driver, with
compaction and cleaning running inside the stream (``morlog.spark.stream``).

Every test ends with exactly the model's rows: the input is a folder of Parquet files, one
file a micro-batch (``maxFilesPerTrigger=1``), each an upsert of keys with the batch's
number as ordering value, so the model is a dict updated file by file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (pip install .[spark])")

from morlog.logformat.errors import ContentError, UsageError  # noqa: E402
from morlog.readers.table import Table  # noqa: E402
from morlog.spark.stream import (  # noqa: E402
    SINK_CHECKPOINT_KEY,
    checkpoint_value,
    last_batch,
    stream_options,
)
from morlog.writers.client import MorTable  # noqa: E402
from morlog.writers.options import WriteConfig  # noqa: E402

OPTIONS = {"hoodie.table.name": "stream", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts",
           # services inside the stream: compaction every 2 delta commits, then the clean
           "hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2",
           "hoodie.clean.commits.retained": "1"}
SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("v", pa.float64())])


def _batch(b: int, same_keys: bool = False) -> pa.Table:
    """Micro-batch ``b``: keys b*7 .. b*7+11 (some new, some updates of the last batch), or
    with ``same_keys`` updates of keys 0 .. 11 (every batch a log block in the same groups)."""
    first = 0 if same_keys else b * 7
    ids = [f"k{i:03d}" for i in range(first, first + 12)]
    return pa.table({"id": ids, "ts": [b] * len(ids), "v": [b + i / 100 for i in range(12)]},
                    schema=SCHEMA)


def _add_inputs(folder: Path, batches: range, same_keys: bool = False) -> None:
    folder.mkdir(exist_ok=True)
    for b in batches:
        tmp = folder / f".b{b:04d}.tmp"
        pq.write_table(_batch(b, same_keys), tmp)
        tmp.rename(folder / f"b{b:04d}.parquet")  # the file source sees it whole


def _model(batches: range, same_keys: bool = False) -> dict[str, tuple[int, float]]:
    rows: dict[str, tuple[int, float]] = {}
    for b in batches:
        for r in _batch(b, same_keys).to_pylist():
            rows[r["id"]] = (r["ts"], r["v"])
    return rows


def _rows(path: Path) -> dict[str, tuple[int, float]]:
    t = Table(str(path)).read(columns=["id", "ts", "v"])
    out = {r["id"]: (r["ts"], r["v"]) for r in t.to_pylist()}
    assert len(out) == t.num_rows, "a key is held twice"
    return out


def _checkpoints(path: Path) -> list[int]:
    """The batch id in each completed commit's sink checkpoint, in timeline order."""
    tl = Table(str(path)).timeline
    out = []
    for inst in tl.completed():
        raw = (tl.metadata(inst).get("extraMetadata") or {}).get(SINK_CHECKPOINT_KEY)
        if raw:
            out.append(int(json.loads(raw)["default_single_writer"]))
    return out


def _actions(path: Path) -> list[str]:
    return [i.action for i in Table(str(path)).timeline.completed(
        frozenset({"commit", "deltacommit", "clean"}))]


def _stream(spark: Any, tmp: Path, options: dict[str, str] | None = None) -> None:
    df = (spark.readStream.format("parquet").schema("id string, ts long, v double")
          .option("maxFilesPerTrigger", 1).load(str(tmp / "in")))
    q = (df.writeStream.format("morlog").options(**(options or OPTIONS))
         .option("checkpointLocation", str(tmp / "ck")).trigger(availableNow=True)
         .start(str(tmp / "t")))
    q.awaitTermination()


def test_a_restarted_query_commits_each_batch_once_and_skips_the_replay(
        spark: Any, tmp_path: Path) -> None:
    _add_inputs(tmp_path / "in", range(0, 3))
    _stream(spark, tmp_path)
    assert _checkpoints(tmp_path / "t") == [0, 1, 2]
    assert _rows(tmp_path / "t") == _model(range(0, 3))
    # the query died after the table committed batch 2 but before Spark recorded it:
    # Spark replays batch 2 on restart, and the sink must not commit it again
    for name in ("2", ".2.crc"):
        (tmp_path / "ck" / "commits" / name).unlink(missing_ok=True)
    before = Table(str(tmp_path / "t")).timeline.completed()
    _add_inputs(tmp_path / "in", range(3, 6))
    _stream(spark, tmp_path)
    assert _checkpoints(tmp_path / "t") == [0, 1, 2, 3, 4, 5]
    assert _rows(tmp_path / "t") == _model(range(0, 6))
    # nothing of the replay is left: no new instant came between batch 2's and batch 3's
    after = Table(str(tmp_path / "t")).timeline.completed()
    assert after[:len(before)] == before
    assert not list((tmp_path / "t" / ".hoodie" / ".temp").glob("spark-*"))
    # compaction and cleaning ran inside the stream, between micro-batches
    actions = _actions(tmp_path / "t")
    assert "commit" in actions and "clean" in actions
    assert actions.index("commit") < len(actions) - 1


def _operations(path: Path) -> list[str]:
    tl = Table(str(path)).timeline
    return [str(tl.metadata(i).get("operationType")) for i in tl.completed()]


def test_async_compaction_and_log_compaction_run_inside_the_stream(
        spark: Any, tmp_path: Path) -> None:
    opts = {**{k: v for k, v in OPTIONS.items() if k != "hoodie.compact.inline"},
            "hoodie.compact.inline.max.delta.commits": "4",
            "hoodie.log.compaction.inline": "true",
            "hoodie.log.compaction.blocks.threshold": "2"}
    _add_inputs(tmp_path / "in", range(0, 5), same_keys=True)
    _stream(spark, tmp_path, opts)  # hoodie.datasource.compaction.async.enable: Hudi's true
    assert _rows(tmp_path / "t") == _model(range(0, 5), same_keys=True)
    compactions = _actions(tmp_path / "t").count("commit")
    assert compactions >= 1
    assert "LOG_COMPACT" in _operations(tmp_path / "t")
    off = {**opts, "hoodie.datasource.compaction.async.enable": "false"}
    _add_inputs(tmp_path / "in", range(5, 9), same_keys=True)
    _stream(spark, tmp_path, off)
    assert _actions(tmp_path / "t").count("commit") == compactions
    assert _checkpoints(tmp_path / "t") == list(range(9))
    assert _rows(tmp_path / "t") == _model(range(0, 9), same_keys=True)


def test_a_killed_driver_restarts_from_its_checkpoint(spark: Any, tmp_path: Path) -> None:
    """The driver process (Python and its JVM) SIGKILLed while the stream runs, then the
    query started again on the same checkpoint by another driver (the test run's session: a
    third JVM start-up would prove nothing more): every batch once, the model's rows."""
    n = 4
    _add_inputs(tmp_path / "in", range(0, n))
    driver = Path(__file__).with_name("stream_driver.py")
    args = [sys.executable, str(driver), str(tmp_path / "t"), str(tmp_path / "in"),
            str(tmp_path / "ck"), json.dumps(OPTIONS)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([*args, "1.0"], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if (tmp_path / "t" / ".hoodie").exists() and len(_checkpoints(tmp_path / "t")) >= 2:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the stream ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    killed_at = _checkpoints(tmp_path / "t")
    assert 2 <= len(killed_at) < n
    _stream(spark, tmp_path)  # tmp_path/in -> tmp_path/t, checkpoint tmp_path/ck, as above
    assert _checkpoints(tmp_path / "t") == list(range(n))
    assert _rows(tmp_path / "t") == _model(range(0, n))


# --- the checkpoint, without Spark ------------------------------------------------------------


def _commit_with(path: Path, extra: dict[str, str], rows: int = 1) -> None:
    mt = MorTable(str(path), WriteConfig(fsync=False, commit_metadata=extra))
    mt.upsert(_batch(0).slice(0, rows))


def test_last_batch_reads_the_newest_checkpoint_of_its_identifier(tmp_path: Path) -> None:
    path = tmp_path / "t"
    MorTable.create(str(path), SCHEMA, key_field="id", ordering_field="ts",
                    config=WriteConfig(fsync=False))
    assert last_batch(Table(str(path)), "a") is None
    _commit_with(path, {SINK_CHECKPOINT_KEY: checkpoint_value("a", 7)})
    _commit_with(path, {SINK_CHECKPOINT_KEY: checkpoint_value("b", 3)})  # another stream
    _commit_with(path, {})  # a batch write
    table = Table(str(path))
    assert last_batch(table, "a") == 7
    assert last_batch(table, "b") == 3
    assert last_batch(table, "c") is None
    _commit_with(path, {SINK_CHECKPOINT_KEY: checkpoint_value("a", 8)})
    assert last_batch(Table(str(path)), "a") == 8
    _commit_with(path, {SINK_CHECKPOINT_KEY: "not json"})
    with pytest.raises(ContentError, match="_hudi_streaming_sink_checkpoint"):
        last_batch(Table(str(path)), "a")


def test_the_checkpoint_is_hudis_json_map() -> None:
    assert json.loads(checkpoint_value("default_single_writer", 12)) == {
        "default_single_writer": "12"}


def test_stream_options_take_hudis_keys_and_refuse_unknown_ones() -> None:
    settings, opts = stream_options({
        "checkpointLocation": "/x", "path": "/t",
        "hoodie.datasource.write.streaming.checkpoint.identifier": "w1",
        "hoodie.datasource.compaction.async.enable": "false",
        "hoodie.datasource.write.recordkey.field": "id"})
    assert (settings.identifier, settings.async_compaction) == ("w1", False)
    assert opts.key == "id" and opts.path == "/t"
    assert stream_options({})[0].identifier == "default_single_writer"
    with pytest.raises(UsageError, match="no.such"):
        stream_options({"no.such": "1"})
    with pytest.raises(UsageError, match="true or false"):
        stream_options({"hoodie.datasource.compaction.async.enable": "maybe"})


# --- the streaming source ---------------------------------------------------------------------


def test_a_stream_reads_each_new_commits_records_once(spark: Any, tmp_path: Path) -> None:
    """readStream.format("morlog"): the first micro-batch reads every completed commit, a
    restarted query only the commits completed after its checkpoint's offset; compaction
    emits nothing (``morlog.spark.stream_source``)."""
    path = tmp_path / "t"
    mt = MorTable.create(str(path), SCHEMA, key_field="id", ordering_field="ts",
                         config=WriteConfig(fsync=False))

    def upsert(rows: list[tuple[str, int]]) -> None:
        mt.upsert(pa.table({"id": [r[0] for r in rows], "ts": [r[1] for r in rows],
                            "v": [float(r[1]) for r in rows]}, schema=SCHEMA))

    def run() -> set[tuple[str, int]]:
        q = (spark.readStream.format("morlog").load(str(path)).select("id", "ts")
             .writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start())
        q.awaitTermination()
        out = spark.read.parquet(str(tmp_path / "out")).collect()
        assert len(out) == len({(r.id, r.ts) for r in out}), "a record emitted twice"
        return {(r.id, r.ts) for r in out}

    upsert([("a", 1), ("b", 1)])
    upsert([("b", 2), ("c", 1)])
    assert run() == {("a", 1), ("b", 2), ("c", 1)}
    upsert([("a", 3)])
    mt.compact()
    assert run() == {("a", 1), ("b", 2), ("c", 1), ("a", 3)}
    assert run() == {("a", 1), ("b", 2), ("c", 1), ("a", 3)}  # nothing new, nothing again
