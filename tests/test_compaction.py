"""Compaction (issue 13, spec/services.md §4): morlog's tables of versions 6, 8 and 9 and the
fixture tables Hudi wrote; the timeline Hudi's readers expect, the rows unchanged at every
retained instant in morlog and hudi-rs, the metadata table kept true, failures undone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from morlog.logformat.errors import MorlogError, UsageError
from morlog.logformat.naming import BaseFileName
from morlog.logformat.timeline_meta import (
    COMPACTION_PLAN_SCHEMA,
    COMPACTION_PLAN_SCHEMA_014,
    decode_avro,
    decode_avro_as,
)
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig
from morlog.writers.services.compaction import (
    CompactionSettings,
    compact,
    delta_commits_since_compaction,
    inline_compaction,
    pending_compactions,
    run_compaction,
    schedule_compaction,
)

from .hudi_fixtures import tables
from .test_real_table_writes import _copy, _hudi_rs, check_metadata_table, write_three

SCHEMA = pa.schema([("id", pa.string()), ("p", pa.string()), ("ts", pa.int64()),
                    ("v", pa.float64())])
#: a record's fields that a compaction keeps (``_hoodie_file_name`` names the new file)
_KEPT = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
         "_hoodie_partition_path", "id", "p", "ts", "v"]


def _batch(keys: list[int], ts: int) -> pa.Table:
    return pa.table({"id": pa.array([f"k{k:03d}" for k in keys]),
                     "p": pa.array(["a" if k % 2 else "b" for k in keys]),
                     "ts": pa.array([ts] * len(keys), pa.int64()),
                     "v": pa.array([float(k * 10 + ts) for k in keys])}, schema=SCHEMA)


def _rows(t: pa.Table, cols: list[str] = _KEPT) -> list[dict[str, Any]]:
    if not t.num_rows:
        return []
    return sorted(t.select([c for c in cols if c in t.column_names]).to_pylist(),
                  key=lambda r: r["id"])


def _history(path: Path, version: int, carrier: str = "avro") -> MorTable:
    """Inserts, updates (newer and older ordering values), deletes and re-inserts."""
    t = MorTable.create(str(path), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", table_version=version,
                        config=WriteConfig(carrier=carrier))  # type: ignore[arg-type]
    t.upsert(_batch(list(range(30)), 5))
    t.upsert(_batch(list(range(10, 20)), 6))
    t.upsert(_batch(list(range(15, 25)), 1))  # older ordering values: no change
    t.delete(_batch([2, 3, 11], 9).select(["id", "p", "ts"]))
    t.upsert(_batch([3, 40, 41], 7))  # a re-insert and new keys
    return t


def _hudi_rs_as_of(path: Path, instant: str) -> pa.Table:
    import hudi

    batches = hudi.HudiTableBuilder.from_base_uri(str(path)).build().read(
        hudi.HudiReadOptions().with_as_of_timestamp(instant))
    return pa.Table.from_batches(batches) if batches else pa.table({})


def _timeline_dir(path: Path, version: int) -> Path:
    return path / ".hoodie" / ("timeline" if version >= 8 else "")


@pytest.mark.parametrize("carrier", ["avro", "parquet"])
@pytest.mark.parametrize("version", [6, 8, 9])
def test_compaction_keeps_every_row_and_empties_the_logs(tmp_path: Path, version: int,
                                                         carrier: str) -> None:
    path = tmp_path / "t"
    t = _history(path, version, carrier)
    view = Table(str(path))
    instants = [i.requested for i in view.timeline.completed()]
    before = {i: _rows(view.read(as_of=i)) for i in instants}
    latest = _rows(view.read())
    report = compact(t)
    assert len(report.results) == 1
    c = report.results[0].instant
    after = Table(str(path))
    assert after.timeline.pending() == []
    assert all(not s.log_files and s.base_file for s in after.file_slices())
    assert all(BaseFileName.parse(s.base_file).instant == c for s in after.file_slices()
               if s.base_file)
    assert _rows(after.read()) == latest
    # every earlier instant reads as before (time travel sees the old slices), in morlog
    # and in hudi-rs
    for i in [*instants, c]:
        want = before.get(i, latest)
        assert _rows(after.read(as_of=i)) == want, i
        assert _rows(_hudi_rs_as_of(path, i)) == want, i
    # records keep their last write's commit time; _hoodie_file_name names the new file
    names = {s.base_file for s in after.file_slices()}
    assert set(after.read().column("_hoodie_file_name").to_pylist()) == names
    hudi = _hudi_rs(path)
    assert _rows(hudi) == latest
    # the timeline: plan (Avro), empty inflight, completed commit (compacted, COMPACT)
    tl = _timeline_dir(path, version)
    req = tl / f"{c}.compaction.requested"
    schema = COMPACTION_PLAN_SCHEMA_014 if version == 6 else COMPACTION_PLAN_SCHEMA
    plan = decode_avro_as(req.read_bytes(), schema)
    assert {(o["partitionPath"], o["fileId"]) for o in plan["operations"]} == {
        (s.partition, s.file_id) for s in after.file_slices()}
    assert (tl / f"{c}.compaction.inflight").read_bytes() == b""
    done = [p for p in tl.iterdir() if p.name.startswith(c) and p.name.endswith(".commit")]
    assert len(done) == 1
    data = done[0].read_bytes()
    meta = json.loads(data) if version == 6 else decode_avro(data)
    assert meta["compacted"] is True and meta["operationType"] == "COMPACT"
    stats = [s for ss in meta["partitionToWriteStats"].values() for s in ss]
    assert sorted(s["path"].rsplit("/", 1)[-1] for s in stats) == sorted(names)
    assert sum(s["numWrites"] for s in stats) == len(latest)


@pytest.mark.parametrize("version", [6, 9])
def test_writes_while_a_compaction_is_pending_land_in_the_new_slice(tmp_path: Path,
                                                                    version: int) -> None:
    path = tmp_path / "t"
    t = _history(path, version)
    c = schedule_compaction(t, force=True)
    assert c is not None and pending_compactions(Table(str(path))) == [c]
    r = t.upsert(_batch([1, 4, 50], 8))  # updates of planned groups, and a new key
    expected = _rows(Table(str(path)).read())
    assert r.inserts_routed_to_existing == 0  # no inserts routed into a pending group
    res = run_compaction(t, c)
    view = Table(str(path))
    assert _rows(view.read()) == expected
    assert _rows(_hudi_rs(path)) == expected
    # the update written meanwhile stays a log of the new slice, read over the new base
    slices = {s.file_id: s for s in view.file_slices()}
    compacted = {f for _, f, n in res.compacted if n is not None}
    assert any(slices[f].log_files for f in compacted)
    compact(t)
    assert all(not s.log_files for s in Table(str(path)).file_slices())
    assert _rows(Table(str(path)).read()) == expected


def test_a_compaction_killed_mid_way_is_cleaned_up_and_run_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The process dies after one new base file: the instant stays inflight, the table
    reads as before; the next compaction removes the partial file and runs the plan."""
    path = tmp_path / "t"
    t = _history(path, 9)
    expected = _rows(Table(str(path)).read())
    c = schedule_compaction(t, force=True)
    assert c is not None

    class Killed(BaseException):
        pass

    real = MorTable.write_base
    calls = {"n": 0}

    def dying(self: MorTable, *a: Any, **k: Any) -> str:
        real(self, *a, **k)
        calls["n"] += 1
        raise Killed()

    monkeypatch.setattr(MorTable, "write_base", dying)
    monkeypatch.setattr(MorTable, "thread_count", lambda self: 1)
    with pytest.raises(Killed):
        run_compaction(t, c)
    monkeypatch.undo()
    view = Table(str(path))
    assert [(i.requested, i.state) for i in view.timeline.pending()] == [(c, "INFLIGHT")]
    assert list(path.rglob(f"*_{c}.parquet"))  # the partial output is there
    assert _rows(view.read()) == expected  # readers ignore it
    t.store.lock(str(path)).release()  # a dead process's lock
    compact(t)
    view = Table(str(path))
    assert view.timeline.pending() == []
    assert _rows(view.read()) == expected
    assert _rows(_hudi_rs(path)) == expected
    assert len(list(path.rglob(f"*_{c}.parquet"))) == len(view.file_slices())


def test_a_failed_compaction_is_undone_and_its_plan_stays(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    path = tmp_path / "t"
    t = _history(path, 6)
    files_before = sorted(str(p.relative_to(path)) for p in path.rglob("*")
                          if p.is_file() and ".hoodie" not in p.parts)
    c = schedule_compaction(t, force=True)
    assert c is not None
    real = MorTable.write_base
    calls = {"n": 0}

    def second_fails(self: MorTable, *a: Any, **k: Any) -> str:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        return real(self, *a, **k)

    monkeypatch.setattr(MorTable, "write_base", second_fails)
    monkeypatch.setattr(MorTable, "thread_count", lambda self: 1)
    with pytest.raises(MorlogError, match="compaction .* failed and was undone"):
        run_compaction(t, c)
    monkeypatch.undo()
    files_after = sorted(str(p.relative_to(path)) for p in path.rglob("*")
                         if p.is_file() and ".hoodie" not in p.parts)
    assert files_after == files_before  # its base files are gone
    view = Table(str(path))
    assert [(i.requested, i.action, i.state) for i in view.timeline.pending()] == [
        (c, "compaction", "REQUESTED")]
    res = run_compaction(t, c)
    assert res.instant == c and Table(str(path)).timeline.pending() == []


@pytest.mark.parametrize("src", tables(), ids=lambda p: p.name)
def test_fixture_tables_compact_and_keep_their_metadata_table(tmp_path: Path,
                                                              src: Path) -> None:
    path = _copy(src, tmp_path)
    t = MorTable(str(path))
    key = t.key_field
    expected = write_three(t, path)
    report = compact(t)
    view = Table(str(path))
    assert view.timeline.pending() == []
    assert all(not s.log_files for s in view.file_slices())
    got = {r[key]: r for r in view.read().to_pylist()}
    assert got.keys() == expected.keys()
    hudi = {r[key]: r for r in _hudi_rs(path).to_pylist()}
    assert hudi.keys() == expected.keys()
    for k, row in expected.items():
        for col, v in row.items():
            if col != "_hoodie_file_name":
                assert got[k][col] == v, (k, col)
                assert hudi[k][col] == v, (k, col)
    check_metadata_table(path)
    # the rows of the compacted groups (groups without logs are not rewritten)
    compacted = {f for r in report.results for _, f, _ in r.compacted}
    rows = view.read(columns=["_hoodie_file_name"]).column(0).to_pylist()
    assert report.results[-1].records_written == sum(
        BaseFileName.parse(n).file_id in compacted for n in rows)


def test_the_trigger_counts_delta_commits_since_the_last_compaction(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = MorTable.create(str(path), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts")
    for i in range(4):
        t.upsert(_batch([1, 2, i + 10], i + 1))
    assert delta_commits_since_compaction(Table(str(path)))[0] == 4
    assert schedule_compaction(t) is None  # 4 < hoodie.compact.inline.max.delta.commits
    t.upsert(_batch([1, 2], 9))
    c = schedule_compaction(t)
    assert c is not None
    run_compaction(t, c)
    assert delta_commits_since_compaction(Table(str(path)))[0] == 0
    t.upsert(_batch([1], 10))
    assert delta_commits_since_compaction(Table(str(path)))[0] == 1
    assert CompactionSettings.of({"hoodie.compact.inline.trigger.strategy": "num_or_time",
                                  "hoodie.compact.inline.max.delta.seconds": "0"}).trigger \
        == "NUM_OR_TIME"
    tt = MorTable(str(path), WriteConfig(hoodie_options={
        "hoodie.compact.inline.trigger.strategy": "TIME_ELAPSED",
        "hoodie.compact.inline.max.delta.seconds": "0"}))
    assert schedule_compaction(tt) is not None  # zero seconds have passed: it fires


@pytest.mark.parametrize(("key", "value"), [
    ("hoodie.compact.inline", "yes"), ("hoodie.compact.inline.max.delta.commits", "x"),
    ("hoodie.compact.inline.trigger.strategy", "SOMETIMES"),
    ("hoodie.compaction.strategy", "org.example.MyStrategy")])
def test_bad_compaction_settings_are_refused_naming_them(key: str, value: str) -> None:
    with pytest.raises(UsageError, match=key.replace(".", r"\.")):
        CompactionSettings.of({key: value})


def test_inline_compaction_after_writes(tmp_path: Path) -> None:
    """hoodie.compact.inline: every write checks the trigger and compacts when it fires;
    hoodie.compact.schedule.inline: only the plan."""
    path = tmp_path / "t"
    MorTable.create(str(path), SCHEMA, key_field="id", partition_field="p",
                    ordering_field="ts")
    t = MorTable(str(path), WriteConfig(hoodie_options={
        "hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2"}))
    t.upsert(_batch([1, 2, 3], 1))
    t.upsert(_batch([1, 2], 2))  # the second delta commit: compacted after it
    view = Table(str(path))
    assert [i.action for i in view.timeline.completed()][-1] == "commit"
    assert all(not s.log_files for s in view.file_slices())
    assert inline_compaction(t) is None  # nothing new since
    path2 = tmp_path / "s"
    MorTable.create(str(path2), SCHEMA, key_field="id", partition_field="p",
                    ordering_field="ts")
    s = MorTable(str(path2), WriteConfig(hoodie_options={
        "hoodie.compact.schedule.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "1"}))
    s.upsert(_batch([1, 2, 3], 1))
    s.upsert(_batch([1], 2))
    assert len(pending_compactions(Table(str(path2)))) == 1


def test_cli_dry_run_changes_nothing_and_json_reports(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    from morlog.cli import main

    path = tmp_path / "t"
    _history(path, 9)
    tree = {p: p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}
    assert main(["compact", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would compact" in out and "dry run" in out
    assert {p: p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()} == tree
    assert main(["compact", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["dry_run"] is False and len(doc["compactions"]) == 1
    assert {(g["partition"], g["file_id"]) for g in doc["compactions"][0]["file_groups"]} == {
        (o["partitionPath"], o["fileId"]) for o in doc["planned"]}
    assert all(not s.log_files for s in Table(str(path)).file_slices())
    assert main(["compact", str(path)]) == 0
    assert "nothing to compact" in capsys.readouterr().out
    assert main(["compact", str(path), "-o", "hoodie.compact.inline.trigger.strategy=X"]) == 2


def test_a_hostile_plan_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """A plan naming a file outside its partition: typed error, nothing written."""
    from morlog.logformat.timeline_meta import compaction_operation, compaction_plan
    from morlog.writers.core.timeline import TimelineWriter, new_instant

    path = tmp_path / "t"
    t = _history(path, 9)
    s = Table(str(path)).file_slices()[0]
    bad = compaction_operation(s.partition, s.file_id, s.base_instant,
                               ["../../../etc/passwd"], s.base_file)
    c = new_instant()
    TimelineWriter(t.store, t.location, layout=2).write(c, "requested",
                                                         compaction_plan([bad]), "compaction")
    tree = {p: p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}
    with pytest.raises(MorlogError):
        run_compaction(t, c)
    assert {p: p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
            and p.name != "morlog.lock"} == {p: b for p, b in tree.items()
                                             if p.name != "morlog.lock"}
    shutil.rmtree(path)


def test_compaction_on_spark_one_task_per_slice(tmp_path: Path, spark: Any) -> None:
    from morlog.spark.write import compact as spark_compact

    path = tmp_path / "t"
    _history(path, 9)
    expected = _rows(Table(str(path)).read())
    report = spark_compact(spark, str(path))
    assert len(report.results) == 1 and report.results[0].records_written == len(expected)
    view = Table(str(path))
    assert view.timeline.pending() == [] and all(not s.log_files for s in view.file_slices())
    assert _rows(view.read()) == expected
    assert _rows(_hudi_rs(path)) == expected


def test_a_retried_task_replaces_its_failed_attempts_file(tmp_path: Path) -> None:
    """A task's retry finds the file its failed attempt left under the operation's own name
    and replaces it: one base file per group, the rows right."""
    from morlog.writers.services.compaction import compact_operation

    path = tmp_path / "t"
    t = _history(path, 6)
    expected = _rows(Table(str(path)).read())
    c = schedule_compaction(t, force=True)
    assert c is not None
    plan_groups = {s.file_id: s.partition for s in Table(str(path)).file_slices()}
    for fid, part in plan_groups.items():  # each attempt died half-way through its file
        (path / part / f"{fid}_0-1-1_{c}.parquet").write_bytes(b"PAR1 torn")

    def runner(mt: MorTable, instant: str, ops: list[dict[str, Any]]) -> list[Any]:
        return [compact_operation(mt, instant, op, retry=True) for op in ops]

    run_compaction(t, c, runner=runner)
    view = Table(str(path))
    assert _rows(view.read()) == expected
    assert _rows(_hudi_rs(path)) == expected
    assert len(list(path.rglob(f"*_{c}.parquet"))) == len(plan_groups)


def test_inline_compaction_with_the_spark_writer(tmp_path: Path, spark: Any) -> None:
    """``df.write.format("morlog")`` with ``hoodie.compact.inline``: the driver compacts
    after the write that fires the trigger."""
    from morlog.spark.write import register

    register(spark)
    path = tmp_path / "t"
    opts = {"hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2"}
    spark.createDataFrame(_batch([1, 2, 3], 1).to_pandas()).write.format("morlog") \
        .options(**opts).mode("overwrite").save(str(path))
    spark.createDataFrame(_batch([1, 2], 2).to_pandas()).write.format("morlog") \
        .options(**opts).mode("append").save(str(path))
    view = Table(str(path))
    assert "commit" in [i.action for i in view.timeline.completed()]
    assert all(not s.log_files for s in view.file_slices())
    assert _rows(view.read(), ["id", "ts", "v"]) == _rows(
        pa.concat_tables([_batch([3], 1), _batch([1, 2], 2)]), ["id", "ts", "v"])
