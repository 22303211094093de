"""Distributed writes (``morlog.writers.distributed``, spec/table.md §7.4-§7.6): a batch cut
into arbitrary task slices, each written by its own task, then committed once, reads like the
write client's upsert of the whole batch; failed attempts, aborted jobs and concurrent
writers leave nothing behind.

The oracle is a twin table written by the client (``MorTable.upsert``/``delete``) with the
same batches; both are read by morlog and hudi-rs, and tagged, after every step.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.errors import ConcurrentWriterError, MorlogError
from morlog.readers.lookup import KeyTagger
from morlog.readers.storage import TableLocation
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.distributed import (
    TaskReport,
    abort_write,
    commit_write,
    plan_write,
    write_task,
)
from morlog.writers.options import WriteConfig
from morlog.writers.services.record_index import verify as rli_verify

SCHEMA = pa.schema([("id", pa.string()), ("region", pa.string()), ("ts", pa.int64()),
                    ("amount", pa.float64())])
REGIONS = ("eu", "us", "ap")


def _batch(ids: list[int], ts: list[int]) -> pa.Table:
    return pa.table({"id": [f"k{i:04d}" for i in ids],
                     "region": [REGIONS[i % 3] for i in ids], "ts": ts,
                     "amount": [float(t * 1000 + i) for i, t in zip(ids, ts, strict=True)]},
                    schema=SCHEMA)


def _rows(path: str) -> dict[str, tuple[Any, ...]]:
    return {r["id"]: (r["region"], r["ts"], r["amount"])
            for r in Table(path).read(columns=["id", "region", "ts", "amount"]).to_pylist()}


def _hudi_rs_rows(path: str) -> dict[str, tuple[Any, ...]]:
    import hudi

    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read()
    t = pa.Table.from_batches(batches) if batches else pa.table({"id": pa.array([], pa.string())})
    rows = t.to_pylist()
    out = {r["id"]: (r["region"], r["ts"], r["amount"]) for r in rows}
    assert len(out) == len(rows), "hudi-rs reads a key twice"
    return out


def _create(path: str, cfg: WriteConfig, version: int, rli: bool) -> None:
    MorTable.create(path, SCHEMA, key_field="id", partition_field="region",
                    ordering_field="ts", config=cfg, table_version=version)
    if rli:
        MorTable(path, cfg).build_record_index()


def _distributed(path: str, cfg: WriteConfig, op: str, batch: pa.Table, cuts: list[int],
                 chunk: int) -> None:
    plan = plan_write(TableLocation.of(path), cfg, op, chunk)
    bounds = [0, *sorted(c for c in cuts if 0 < c < batch.num_rows), batch.num_rows]
    reports = [write_task(plan, batch.slice(a, b - a).to_batches(), f"{t}-1-0")
               for t, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True))]
    commit_write(plan, reports)


def _check_tags(path: str) -> None:
    """Every live key is tagged to the one file group that holds it."""
    t = Table(path)
    data = t.read(columns=["id", "region", "_hoodie_file_name"])
    if not data.num_rows:
        return
    tags = KeyTagger(t).tag(data.column("id").combine_chunks(),
                            data.column("region").combine_chunks())
    got = [None if loc is None else loc[1] for loc in tags.locations]
    want = [f.split("_")[0] if f.endswith(".parquet") else f
            for f in data.column("_hoodie_file_name").to_pylist()]
    assert got == want


# (operation, keys, task cuts, chunk rows, the keys twice: copies in two tasks)
step = st.tuples(st.sampled_from(["upsert", "upsert", "delete", "insert"]),
                 st.lists(st.integers(0, 80), min_size=1, max_size=60),
                 st.lists(st.integers(1, 119), max_size=4), st.integers(3, 40), st.booleans())


#: the twin tables' shapes (table version, carrier, new file groups, record index, room
#: left in the small file groups)
SHAPES = dict(version=st.sampled_from([6, 8, 9]), carrier=st.sampled_from(["avro", "parquet"]),
              new_groups=st.sampled_from(["base", "log"]), rli=st.booleans(),
              room=st.sampled_from([None, 4_000, 16_000]))
#: the twin-table property tests' settings (``DW_EXAMPLES`` examples, default 12)
TWIN_EXAMPLES = settings(max_examples=int(os.environ.get("DW_EXAMPLES", "12")), deadline=None,
                         suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                HealthCheck.too_slow])


def _twins(root: Path, version: int, carrier: str, new_groups: str, rli: bool,
           room: int | None) -> tuple[str, str, WriteConfig]:
    """Two equal tables of shape ``SHAPES`` (mine, the twin) and their write config."""
    mine, twin = str(root / "mine"), str(root / "twin")
    cfg = WriteConfig(fsync=False, carrier=carrier, new_groups=new_groups)  # type: ignore[arg-type]
    for p in (mine, twin):
        _create(p, cfg, version, rli)
        MorTable(p, cfg).upsert(_batch(list(range(0, 40, 2)), [1] * 20))
    if room is not None:
        # a maximum file size just above the largest slice leaves little room in the small
        # file groups: tasks compete for it, and copies of a key a task inserted land in a
        # small group and in other tasks' new groups
        cfg = dataclasses.replace(cfg, max_file_size=_largest_slice(mine) + room)
    return mine, twin, cfg


def _twins_agree(mine: str, twin: str, rli: bool) -> None:
    """hudi-rs reads my table as morlog reads the twin; nothing is left in the stage; the
    record index, when kept, verifies."""
    assert _hudi_rs_rows(mine) == _rows(twin)
    temp = os.path.join(mine, ".hoodie", ".temp")
    assert not os.path.isdir(temp) or not os.listdir(temp)
    if rli:
        assert rli_verify(Table(mine)).ok


@TWIN_EXAMPLES
@given(**SHAPES, steps=st.lists(step, min_size=1, max_size=4))
def test_a_batch_cut_into_tasks_reads_like_the_clients_write(
        tmp_path_factory: pytest.TempPathFactory, version: int, carrier: str,
        new_groups: str, rli: bool, room: int | None,
        steps: list[tuple[str, list[int], list[int], int, bool]]) -> None:
    mine, twin, cfg = _twins(tmp_path_factory.mktemp("dw"), version, carrier, new_groups,
                             rli, room)
    for n, (op, ids, cuts, chunk, twice) in enumerate(steps):
        ids = ids + ids if twice else ids
        # repeated keys get distinct ordering values (a tie between tasks resolves by log
        # order, which the client's batch order does not model)
        ts = [2 + n * 100 + j for j in range(len(ids))]
        b = _batch(ids, ts)
        if op == "insert":
            # Hudi's insert does not look keys up: only new keys make the twins agree
            b = _batch([1000 + n * 100 + i for i in ids], ts)
        twin_t = MorTable(twin, cfg)
        getattr(twin_t, op)(b)
        _distributed(mine, cfg, op, b, cuts, chunk)
        assert _rows(mine) == _rows(twin)
        _check_tags(mine)
    _twins_agree(mine, twin, rli)


def _setup(tmp_path: Path, **kw: Any) -> tuple[str, WriteConfig]:
    path = str(tmp_path / "t")
    cfg = WriteConfig(fsync=False, **kw)
    _create(path, cfg, 9, False)
    MorTable(path, cfg).upsert(_batch(list(range(30)), [1] * 30))
    return path, cfg


def _listing(path: str) -> dict[str, bytes]:
    out = {}
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            if f == "morlog.lock":
                continue
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, path)] = fh.read()
    return out


def test_a_failed_attempts_files_are_removed_at_commit(tmp_path: Path) -> None:
    path, cfg = _setup(tmp_path)
    b = _batch(list(range(20, 50)), [5] * 30)
    plan = plan_write(TableLocation.of(path), cfg, "upsert", 100)
    # attempt 0 of task 0 dies after writing (Spark retries it as attempt 1)
    write_task(plan, b.slice(0, 15).to_batches(), "0-1-0")
    reports = [write_task(plan, b.slice(0, 15).to_batches(), "0-1-1"),
               write_task(plan, b.slice(15).to_batches(), "1-1-0")]
    commit_write(plan, reports)
    names = [f for f in _listing(path) if "_0-1-0" in f or ".0-1-0" in f]
    assert not names, names
    rows = _rows(path)
    assert len(rows) == 50 and all(rows[f"k{i:04d}"][1] == 5 for i in range(20, 50))
    assert _hudi_rs_rows(path) == rows


def test_an_aborted_write_leaves_the_table_as_before(tmp_path: Path) -> None:
    path, cfg = _setup(tmp_path)
    before = _listing(path)
    plan = plan_write(TableLocation.of(path), cfg, "upsert", 7)
    write_task(plan, _batch(list(range(20, 50)), [5] * 30).to_batches(), "0-1-0")
    abort_write(plan)
    assert _listing(path) == before


def test_a_commit_that_fails_rolls_back_and_removes_every_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, cfg = _setup(tmp_path)
    rows = _rows(path)
    plan = plan_write(TableLocation.of(path), cfg, "upsert", 7)
    reports = [write_task(plan, _batch(list(range(20, 50)), [5] * 30).to_batches(), "0-1-0")]
    import morlog.writers.distributed as dw

    def boom(*a: Any, **k: Any) -> Any:
        raise OSError("disk gone")

    monkeypatch.setattr(dw, "_remove_duplicate_inserts", boom)
    with pytest.raises(MorlogError):
        commit_write(plan, reports)
    monkeypatch.undo()
    assert _rows(path) == rows
    assert not [f for f in _listing(path) if plan.instant in f and "rollback" not in f
                and ".hoodie/" not in f]
    # the next writer goes on
    MorTable(path, cfg).upsert(_batch([1], [9]))
    assert _rows(path)["k0001"][1] == 9


def test_a_concurrent_write_to_the_same_file_group_is_a_conflict(tmp_path: Path) -> None:
    path, cfg = _setup(tmp_path)
    plan = plan_write(TableLocation.of(path), cfg, "upsert", 100)
    reports = [write_task(plan, _batch([3, 4], [7, 7]).to_batches(), "0-1-0")]
    MorTable(path, cfg).upsert(_batch([3], [6]))  # another writer, same group, meanwhile
    after_other = _rows(path)
    with pytest.raises(ConcurrentWriterError):
        commit_write(plan, reports)
    assert _rows(path) == after_other
    assert _hudi_rs_rows(path) == after_other


def test_a_key_another_writer_inserted_meanwhile_into_another_group_is_a_conflict(
        tmp_path: Path) -> None:
    """Write B plans first (no room in small groups: its new key goes into a new file
    group), write A plans after it and routes the same new key into the partition's small
    file group; B commits, then A. Neither saw the other's copy: the partitions both
    inserted into clash, as when A's copy is in a new group of its own. A was let through
    when its task had only routed its inserts, and the key was there twice."""
    path, cfg = _setup(tmp_path)
    no_room = dataclasses.replace(cfg, max_file_size=1)
    plan_b = plan_write(TableLocation.of(path), no_room, "upsert", 100)
    plan_a = plan_write(TableLocation.of(path), cfg, "upsert", 100)
    assert plan_b.instant < plan_a.instant and not plan_b.small and plan_a.small
    reports_a = [write_task(plan_a, _batch([9999], [7]).to_batches(), "0-1-0")]
    assert reports_a[0].routed == 1 and not reports_a[0].new_groups
    reports_b = [write_task(plan_b, _batch([9999], [6]).to_batches(), "0-1-0")]
    assert reports_b[0].new_groups
    commit_write(plan_b, reports_b)
    after_b = _rows(path)
    with pytest.raises(ConcurrentWriterError, match="partition"):
        commit_write(plan_a, reports_a)
    assert _rows(path) == after_b
    assert _hudi_rs_rows(path) == after_b


def test_tasks_writing_the_same_file_groups_at_once(tmp_path: Path) -> None:
    path, cfg = _setup(tmp_path)
    plan = plan_write(TableLocation.of(path), cfg, "upsert", 4)
    reports: list[TaskReport] = [TaskReport("") for _ in range(4)]
    errors: list[BaseException] = []

    def run(t: int) -> None:
        try:
            ids = list(range(t, 60, 4))
            reports[t] = write_task(plan, _batch(ids, [10 + t] * len(ids)).to_batches(),
                                    f"{t}-1-0")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    commit_write(plan, reports)
    rows = _rows(path)
    assert {k: v[1] for k, v in rows.items()} == {f"k{i:04d}": 10 + i % 4 for i in range(60)}
    assert _hudi_rs_rows(path) == rows
    _check_tags(path)


def test_the_next_client_write_after_a_distributed_one(tmp_path: Path) -> None:
    """The client writes on after tasks left several log files per group (and compaction
    folds them)."""
    path, cfg = _setup(tmp_path)
    twin = str(tmp_path / "twin")
    shutil.copytree(path, twin)
    b = _batch(list(range(0, 45)) + list(range(10, 20)), list(range(100, 155)))
    _distributed(path, cfg, "upsert", b, [11, 23, 37], 6)
    MorTable(twin, cfg).upsert(b)
    nxt = _batch(list(range(5, 50, 3)), [500] * 15)
    for p in (path, twin):
        MorTable(p, cfg).upsert(nxt)
    assert _rows(path) == _rows(twin)
    _check_tags(path)
    MorTable(path, cfg).compact()
    assert _rows(path) == _rows(twin) == _hudi_rs_rows(path)


def test_a_job_that_died_is_rolled_back_by_the_next_writer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver died between the tasks and the commit: the instant stays requested with
    the tasks' files; while its heartbeat is fresh other writers go on beside it, once it
    expired the next writer rolls it back (every marked file, the stage, the markers), for
    table version 6 too, whose task log files are named after their slice."""
    for version in (6, 9):
        path = str(tmp_path / f"v{version}")
        cfg = WriteConfig(fsync=False)
        _create(path, cfg, version, False)
        MorTable(path, cfg).upsert(_batch(list(range(30)), [1] * 30))
        plan = plan_write(TableLocation.of(path), cfg, "upsert", 7)
        write_task(plan, _batch(list(range(20, 50)), [5] * 30).to_batches(), "0-1-0")
        # a writer beside the live write (its heartbeat is fresh): not blocked
        MorTable(path, cfg).upsert(_batch([1], [2]))
        expected = _rows(path)
        assert all(v[1] != 5 for v in expected.values())
        beat = os.path.join(path, ".hoodie", ".heartbeat", plan.instant)
        old = os.path.getmtime(beat) - 3600
        os.utime(beat, (old, old))
        MorTable(path, cfg).upsert(_batch([2], [3]))  # rolls the dead write back
        expected["k0002"] = ("ap", 3, 3002.0)
        assert _rows(path) == expected == _hudi_rs_rows(path)
        left = [f for f in _listing(path)
                if plan.instant in f and "rollback" not in f and "/timeline/" not in f]
        left += [f for f in _listing(path) if "_0-1-0" in f or ".0-1-0" in f]
        assert not left, left
        assert not os.path.exists(os.path.join(path, ".hoodie", ".temp", plan.instant))
        # the dead job's commit, if it ever came: refused, nothing written
        with pytest.raises(ConcurrentWriterError):
            commit_write(plan, [])
        assert _rows(path) == expected


def _largest_slice(path: str) -> int:
    mt = MorTable(path, WriteConfig(fsync=False))
    return max(mt.slice_size(s) for s in mt.table().file_slices())


def test_inserts_are_routed_into_small_file_groups_by_every_task(tmp_path: Path) -> None:
    """As the client routes (small file groups first), without a shuffle: each key goes to
    the small group its hash picks, as far as the task claims room there; the tasks never
    take more than the group's room (``hoodie.parquet.max.file.size`` at the record size)."""
    path, cfg = _setup(tmp_path)
    groups_before = {(s.partition, s.file_id) for s in Table(path).file_slices()}
    b = _batch(list(range(100, 400)), [3] * 300)
    _distributed(path, cfg, "upsert", b, [75, 150, 225], 1000)
    after = Table(path)
    groups = {(s.partition, s.file_id) for s in after.file_slices()}
    assert groups == groups_before  # room enough: no new file group
    md = after.timeline.metadata(after.timeline.completed()[-1])["extraMetadata"]
    assert md["morlog.inserts.routed"] == md["morlog.inserts"] == "300"
    assert len(_rows(path)) == 330
    _check_tags(path)
    # a tiny maximum file size: the room of each group is claimed, the rest opens new groups
    small = WriteConfig(fsync=False, max_file_size=_largest_slice(path) + 2_000)
    from morlog.writers.distributed import plan_write as plan_of

    plan = plan_of(TableLocation.of(path), small, "upsert", 1000)
    rooms = {(p, f): n for p, gs in plan.small.items() for f, n in gs}
    assert rooms and all(n > 0 for n in rooms.values())
    from morlog.writers.distributed import abort_write as abort

    abort(plan)
    b2 = _batch(list(range(1000, 4000)), [4] * 3000)
    _distributed(path, small, "upsert", b2, [700, 1500, 2200], 10_000)
    view = Table(path)
    md = view.timeline.metadata(view.timeline.completed()[-1])["extraMetadata"]
    routed = int(md["morlog.inserts.routed"])
    # the tasks together never take more than the groups' room, however small it is
    assert 0 < routed <= sum(rooms.values())
    assert len({(s.partition, s.file_id) for s in view.file_slices()}) > len(groups)
    assert len(_rows(path)) == 3330
    _check_tags(path)


@pytest.mark.parametrize("rli", [False, True])
def test_a_key_two_tasks_inserted_wins_in_its_small_group(tmp_path: Path, rli: bool) -> None:
    """Two tasks insert the same new keys: the first claims every slot of the small groups'
    room (its copies routed there), the second finds none (its copies in new groups of its
    own) and has the greater ordering value. The commit removes the second task's copies
    from its new groups and writes the winning rows into the keys' small groups; keys the
    first task could not route either lose their older copy. Reads like the client's upsert
    of both slices, one copy a key, tagged where it lives, the record index true."""
    path, twin = str(tmp_path / "t"), str(tmp_path / "twin")
    cfg = WriteConfig(fsync=False)
    for p in (path, twin):
        _create(p, cfg, 9, rli)
        MorTable(p, cfg).upsert(_batch(list(range(30)), [1] * 30))
    small = WriteConfig(fsync=False, max_file_size=_largest_slice(path) + 1_500)
    ids = list(range(100, 400))
    first, second = _batch(ids, [5] * len(ids)), _batch(ids, [9] * len(ids))
    plan = plan_write(TableLocation.of(path), small, "upsert", 10_000)
    assert plan.small and all(room > 0 for gs in plan.small.values() for _f, room in gs)
    reports = [write_task(plan, first.to_batches(), "0-1-0"),
               write_task(plan, second.to_batches(), "1-1-0")]
    # the first task took the room; the second routed nothing
    assert reports[0].routed > 0 and reports[1].routed == 0 and reports[1].new_groups
    commit_write(plan, reports)
    MorTable(twin, small).upsert(pa.concat_tables([first, second]))
    got = _rows(path)
    assert got == _rows(twin)
    assert all(got[f"k{i:04d}"][1] == 9 for i in ids)
    view = Table(path)
    md = view.timeline.metadata(view.timeline.completed()[-1])["extraMetadata"]
    assert 0 < int(md["morlog.inserts.routed"]) < len(ids)
    assert _hudi_rs_rows(path) == got
    _check_tags(path)
    if rli:
        assert rli_verify(Table(path)).ok


@pytest.mark.parametrize("rli", [False, True])
def test_copies_of_a_key_in_two_partitions_across_tasks_combine_as_the_client(
        tmp_path: Path, rli: bool) -> None:
    """Tasks write copies of the same new keys to two partitions. With a non-global index
    Hudi combines copies by key and partition path (``HoodieWriteHelper.
    deduplicateRecords``): a key then lives in both partitions, once in each, and only the
    copies of one partition combine across tasks; with morlog's record index (global) one
    copy of the key is left. Reads like the client's upsert of all the tasks' rows."""
    path, twin = str(tmp_path / "t"), str(tmp_path / "twin")
    cfg = WriteConfig(fsync=False)
    for p in (path, twin):
        _create(p, cfg, 9, rli)
        MorTable(p, cfg).upsert(_batch(list(range(30)), [1] * 30))
    ids = [f"k{i:04d}" for i in range(100, 160)]

    def rows(region: str, ts: int) -> pa.Table:
        return pa.table({"id": ids, "region": [region] * len(ids), "ts": [ts] * len(ids),
                         "amount": [float(ts)] * len(ids)}, schema=SCHEMA)

    tasks = [pa.concat_tables([rows("eu", 5), rows("us", 3)]),
             pa.concat_tables([rows("eu", 7), rows("ap", 2)])]
    plan = plan_write(TableLocation.of(path), cfg, "upsert", 10_000)
    commit_write(plan, [write_task(plan, b.to_batches(), f"{t}-1-0")
                        for t, b in enumerate(tasks)])
    MorTable(twin, cfg).upsert(pa.concat_tables(tasks))

    def both(p: str) -> list[tuple[Any, ...]]:
        return sorted((r["id"], r["region"], r["ts"]) for r in Table(p).read(
            columns=["id", "region", "ts"]).to_pylist())

    got = both(path)
    assert got == both(twin)
    new = [r for r in got if r[0] in set(ids)]
    if rli:
        assert len(new) == len(ids) and {r[2] for r in new} == {7}
        assert rli_verify(Table(path)).ok
    else:
        assert sorted({(r[1], r[2]) for r in new}) == [("ap", 2), ("eu", 7), ("us", 3)]
        assert len(new) == 3 * len(ids)


@settings(max_examples=60, deadline=None)
@given(size=st.integers(0, 3 * 4096), window=st.sampled_from([1, 7, 4096]),
       ranges=st.lists(st.tuples(st.integers(0, 3 * 4096), st.integers(0, 5000)),
                       max_size=30))
def test_windowed_reads_return_the_ranges_asked(size: int, window: int,
                                                ranges: list[tuple[int, int]]) -> None:
    """The fingerprint merge's reads through two cached windows give exactly the bytes a
    direct ranged read gives, and the same error past the end."""
    from morlog.logformat.errors import LengthError
    from morlog.readers.cache import CachedSource
    from morlog.readers.storage import BytesSource

    data = bytes((i * 7 + 3) % 251 for i in range(size))
    direct, windows = BytesSource(data), CachedSource(BytesSource(data), window=window)
    for offset, length in ranges:
        if offset + length <= size:
            assert windows.read(offset, length) == direct.read(offset, length)
        else:
            with pytest.raises(LengthError):
                windows.read(offset, length)


def test_the_fingerprint_merge_reads_each_file_in_few_requests(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The commit's merge of the tasks' fingerprint files asks each file for two ranges per
    bucket (2,048 at the default bucket bits): one GET each on an object store made a
    25k-row data-source write take 22-28 s on a moto S3 server against 1 s on disk. Read
    through windows, each small file is read in a few requests."""
    from morlog.readers.storage import LocalFileSource

    path = str(tmp_path / "t")
    cfg = WriteConfig(fsync=False)
    _create(path, cfg, 9, False)
    reads: dict[str, int] = {}
    real = LocalFileSource.read

    def counted(self: LocalFileSource, offset: int, length: int) -> bytes:
        if self.name.endswith(".fp"):
            reads[self.name] = reads.get(self.name, 0) + 1
        return real(self, offset, length)

    monkeypatch.setattr(LocalFileSource, "read", counted)
    batch = _batch(list(range(4000)), [1] * 4000)
    _distributed(path, cfg, "upsert", batch, [1000, 2000, 3000], 1000)
    assert len(reads) == 4 and max(reads.values()) <= 8, reads
    assert len(_rows(path)) == 4000


@pytest.mark.parametrize("which", ["fp", "keys"])
def test_damaged_task_files_fail_the_commit_typed_and_leave_the_table(
        tmp_path: Path, which: str) -> None:
    """A fingerprint or key file damaged between the tasks and the commit: a typed error
    naming the file, the instant rolled back, the table as before."""
    from morlog.logformat.errors import FormatError

    path, cfg = _setup(tmp_path)
    rows = _rows(path)
    plan = plan_write(TableLocation.of(path), cfg, "upsert", 1000)
    b = _batch(list(range(100, 140)), [3] * 40)
    reports = [write_task(plan, b.slice(0, 20).to_batches(), "0-1-0"),
               write_task(plan, b.slice(10).to_batches(), "1-1-0")]  # 10 keys twice
    stage = os.path.join(path, ".hoodie", ".temp", f"spark-{plan.instant}")
    victim = sorted(f for f in os.listdir(stage) if f.endswith("." + which))[0]
    with open(os.path.join(stage, victim), "r+b") as f:
        f.seek(40)
        byte = f.read(1)
        f.seek(40)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(FormatError) as err:
        commit_write(plan, reports)
    assert victim in str(err.value) or stage in str(err.value)
    assert _rows(path) == rows == _hudi_rs_rows(path)
    MorTable(path, cfg).upsert(_batch([5], [9]))  # the next writer goes on


def test_the_key_file_vector() -> None:
    """spec/vectors/distributed/keys.json: the trailer morlog appends to an Arrow IPC key
    file, and the rows a reader gets back (spec/table.md §7.6)."""
    import json

    from morlog.logformat.errors import ChecksumError
    from morlog.writers.distributed import open_keys, seal_keys

    v = json.loads((Path(__file__).resolve().parent.parent / "spec" / "vectors"
                    / "distributed" / "keys.json").read_text())
    body = bytes.fromhex(v["body_hex"])
    sealed = seal_keys(body)
    assert sealed[len(body):].hex() == v["trailer_hex"]
    assert sealed[len(body):len(body) + 8] == b"MORLKEY1"
    assert open_keys(sealed, "k").read_all().to_pylist() == v["rows"]
    for at in (0, len(body) // 2, len(sealed) - 1):
        bad = bytearray(sealed)
        bad[at] ^= 0x01
        with pytest.raises((ChecksumError, MorlogError)):
            open_keys(bytes(bad), "k")


def test_repair_leaves_a_live_write_alone_and_cleans_a_dead_one(tmp_path: Path) -> None:
    from morlog.writers.repair import apply_repair, plan_repair

    path, cfg = _setup(tmp_path)
    rows = _rows(path)
    plan = plan_write(TableLocation.of(path), cfg, "upsert", 7)
    write_task(plan, _batch(list(range(20, 50)), [5] * 30).to_batches(), "0-1-0")
    live = plan_repair(path)
    assert live.findings and not any(f.fixable for f in live.findings)
    beat = os.path.join(path, ".hoodie", ".heartbeat", plan.instant)
    os.utime(beat, (1, 1))
    dead = plan_repair(path)
    assert {f.kind for f in dead.findings if f.fixable} >= {"PENDING_INSTANT", "SPARK_STAGING"}
    apply_repair(dead)
    assert plan_repair(path).findings == []
    assert _rows(path) == rows == _hudi_rs_rows(path)
    assert not [f for f in _listing(path) if "_0-1-0" in f or ".0-1-0" in f]


def test_two_distributed_writes_at_once_on_other_file_groups(tmp_path: Path) -> None:
    """Two jobs planned one after the other, running at once, updating other file groups:
    a pending write is no conflict (it checks the other at its own commit), so the first to
    commit succeeds and so does the second; a job whose instant is older than a write that
    completed meanwhile is refused."""
    path, cfg = _setup(tmp_path)
    loc = TableLocation.of(path)
    eu = [i for i in range(30) if REGIONS[i % 3] == "eu"]
    us = [i for i in range(30) if REGIONS[i % 3] == "us"]
    a = plan_write(loc, cfg, "upsert", 100)
    b = plan_write(loc, cfg, "upsert", 100)
    ra = [write_task(a, _batch(eu, [7] * len(eu)).to_batches(), "0-1-0")]
    rb = [write_task(b, _batch(us, [8] * len(us)).to_batches(), "0-2-0")]
    commit_write(a, ra)
    commit_write(b, rb)
    rows = _rows(path)
    assert all(rows[f"k{i:04d}"][1] == 7 for i in eu)
    assert all(rows[f"k{i:04d}"][1] == 8 for i in us)
    assert rows == _hudi_rs_rows(path)
    # the other order: the older job finds a later instant completed
    c = plan_write(loc, cfg, "upsert", 100)
    d = plan_write(loc, cfg, "upsert", 100)
    rc = [write_task(c, _batch(eu, [9] * len(eu)).to_batches(), "0-3-0")]
    rd = [write_task(d, _batch(us, [10] * len(us)).to_batches(), "0-4-0")]
    commit_write(d, rd)
    with pytest.raises(ConcurrentWriterError):
        commit_write(c, rc)
    rows = _rows(path)
    assert all(rows[f"k{i:04d}"][1] == 7 for i in eu)
    assert all(rows[f"k{i:04d}"][1] == 10 for i in us)


@pytest.mark.parametrize("version", [6, 9])
def test_a_task_lists_the_table_once_not_per_chunk(tmp_path: Path, version: int,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A task attempt opens the table and lists its partitions once (from table version 8;
    version 6: once per chunk, whose slices list the task's own earlier log files), not
    once per chunk for the tagging, the routing and the group writes each (on S3 every
    listing is a request per partition). The table reads as the client's write."""
    path, twin = str(tmp_path / "t"), str(tmp_path / "twin")
    cfg = WriteConfig(fsync=False)
    for p in (path, twin):
        _create(p, cfg, version, False)
        MorTable(p, cfg).upsert(_batch(list(range(30)), [1] * 30))
    b = _batch(list(range(20, 60)), list(range(5, 45)))
    MorTable(twin, cfg).upsert(b)
    plan = plan_write(TableLocation.of(path), cfg, "upsert", 10)  # 4 chunks of 10 rows
    opened, listed = [0], [0]
    init, partitions = Table.__init__, Table.partitions

    def counting_init(self: Table, *a: Any, **k: Any) -> None:
        opened[0] += 1
        init(self, *a, **k)

    def counting_partitions(self: Table) -> list[str]:
        listed[0] += 1
        return partitions(self)

    monkeypatch.setattr(Table, "__init__", counting_init)
    monkeypatch.setattr(Table, "partitions", counting_partitions)
    report = write_task(plan, b.to_batches(max_chunksize=7), "0-1-0")
    monkeypatch.undo()
    chunks = 4 if version < 8 else 1
    assert (opened[0], listed[0]) == (chunks, chunks)
    commit_write(plan, [report])
    assert _rows(path) == _rows(twin)
    _check_tags(path)
