"""Spark's distributed upsert without Spark (``morlog.spark.write.upsert``, spec/table.md
§7.9): its three task functions run in this process on a batch cut into arbitrary input
slices and shuffled as Spark shuffles them (by record key, then by file group), then the
write commits once. It must read like the write client's write of the whole batch.

The oracle is a twin table written by the client with the same batches; both are read by
morlog (and, at the end, hudi-rs), and tagged, after every step.
"""

from __future__ import annotations

import uuid
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.arrow_sort import sort_indices_nulls_first
from morlog.readers.storage import TableLocation
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.distributed import (
    abort_write,
    commit_write,
    insert_bins,
    plan_write,
    write_routed_task,
)
from morlog.writers.options import WriteConfig

from .test_distributed_write import (
    SHAPES,
    TWIN_EXAMPLES,
    _batch,
    _check_tags,
    _create,
    _rows,
    _twins,
    _twins_agree,
)

sw = pytest.importorskip("morlog.spark.write", reason="pyspark is not installed (.[spark])")


def _shuffle(t: pa.Table, column: str, tasks: int) -> list[pa.Table]:
    """``t``'s rows spread over ``tasks`` by a hash of ``column`` (a test's stand-in for
    Spark's hash partitioning), each keeping the rows' order."""
    where = [zlib.crc32(str(v).encode()) % tasks for v in t.column(column).to_pylist()]
    at = pa.array(where, pa.int64())
    return [t.filter(pc.equal(at, i)) for i in range(tasks)]


def _run(fn: Any, t: pa.Table, rows: int) -> list[pa.RecordBatch]:
    return list(fn(iter(t.to_batches(max_chunksize=rows)))) if t.num_rows else []


def _routed(path: str, cfg: WriteConfig, op: str, batch: pa.Table, cuts: list[int],
            tasks: int, chunk: int) -> dict[str, Any]:
    """``batch`` written as ``morlog.spark.write.upsert`` writes it: tagged in input slices
    cut at ``cuts``, shuffled by record key to ``tasks`` routing tasks, shuffled by file
    group to ``tasks`` write tasks (Arrow batches of a few rows, so that state crosses
    batches), committed. The commit's result."""
    location = TableLocation.of(path)
    table = MorTable(path, cfg)
    plan = plan_write(location, cfg, op, chunk)
    combine = op != "delete"
    rules = sw._BatchRules(table.keygen, table.ordering_field if combine else None,
                           tuple(table.ordering_fields) if combine else (), delete=not combine)
    if combine:
        batch = batch.append_column(sw._SEQ, pa.array(range(batch.num_rows), pa.int64()))
    bounds = [0, *sorted(c for c in cuts if 0 < c < batch.num_rows), batch.num_rows]
    tagged_parts = [b for a, e in zip(bounds[:-1], bounds[1:], strict=True)
                    for b in _run(sw._tagger(location, rules, plan if combine else None),
                                  batch.slice(a, e - a), 9)]
    if not tagged_parts:
        abort_write(plan)
        return {}
    tagged = pa.Table.from_batches(tagged_parts)
    if combine:
        ident = [sw._KEY] if plan.global_index else [sw._KEY, sw._PART, sw._FID]
        order = ([(c, "ascending") for c in ident]
                 + [(f, "descending") for f in table.ordering_fields]
                 + [(sw._SEQ, "descending")])
        routed_parts = [b for part in _shuffle(tagged, sw._KEY, tasks)
                        for b in _run(sw._router(plan, ident, False),
                                      part.take(sort_indices_nulls_first(part, order)), 4)]
        routed = pa.Table.from_batches(routed_parts).drop_columns(
            [sw._SEQ, sw._OLDPART, sw._OLDFID])
    else:
        routed = tagged.filter(pc.is_valid(tagged.column(sw._FID))).drop_columns(
            [sw._OLDPART, sw._OLDFID])
        n = routed.num_rows
        for name, flag in ((sw._NEW, False), (sw._INS, False), (sw._DEL, True)):
            routed = routed.append_column(name, pa.repeat(pa.scalar(flag), n))
    reports = []
    for i, part in enumerate(_shuffle(routed, sw._FID, tasks)):
        rows = part.sort_by([(sw._FID, "ascending")])
        reports.append(write_routed_task(plan, rows.to_batches(max_chunksize=5),
                                         f"{i}-2-{100 + i}"))
    result = commit_write(plan, reports)
    return result.summary()


# (operation, keys, input cuts, tasks, chunk rows, the keys twice)
step = st.tuples(st.sampled_from(["upsert", "upsert", "delete", "insert"]),
                 st.lists(st.integers(0, 80), min_size=1, max_size=60),
                 st.lists(st.integers(1, 119), max_size=3), st.integers(1, 3),
                 st.integers(3, 40), st.booleans())


@TWIN_EXAMPLES
@given(**SHAPES, steps=st.lists(step, min_size=1, max_size=4))
def test_the_distributed_upserts_stages_read_like_the_clients_write(
        tmp_path_factory: pytest.TempPathFactory, version: int, carrier: str,
        new_groups: str, rli: bool, room: int | None,
        steps: list[tuple[str, list[int], list[int], int, int, bool]]) -> None:
    """Any input slicing, any number of tasks, copies of a key in several slices: the
    table reads as the client's twin after every step, every key tagged to the one group
    holding it, hudi-rs reads the same rows, nothing is left in ``.hoodie/.temp``."""
    mine, twin, cfg = _twins(tmp_path_factory.mktemp("rw"), version, carrier, new_groups,
                             rli, room)
    for n, (op, ids, cuts, tasks, chunk, twice) in enumerate(steps):
        ids = ids + ids if twice else ids
        ts = [2 + n * 100 + j for j in range(len(ids))]
        b = _batch(ids, ts)
        if op == "insert":
            # Hudi's insert does not look keys up: only new keys make the twins agree
            b = _batch([1000 + n * 100 + i for i in ids], ts)
        getattr(MorTable(twin, cfg), op)(b)
        _routed(mine, cfg, op, b, cuts, tasks, chunk)
        assert _rows(mine) == _rows(twin)
        _check_tags(mine)
    _twins_agree(mine, twin, rli)


def test_a_file_group_gets_one_log_file_per_commit_from_any_number_of_tasks(
        tmp_path: Path) -> None:
    """Every row of a file group reaches one write task (the shuffle by file group): an
    upsert from three input slices and three tasks appends one log file to each group it
    updates, routed inserts included, where the data source's tasks append one each."""
    path = str(tmp_path / "t")
    cfg = WriteConfig(fsync=False)
    _create(path, cfg, 9, False)
    MorTable(path, cfg).upsert(_batch(list(range(60)), [1] * 60))
    before = {(s.partition, s.file_id): len(s.log_files) for s in Table(path).file_slices()}
    got = _routed(path, cfg, "upsert", _batch(list(range(30, 90)), [2] * 60), [20, 40], 3,
                  1000)
    assert got["morlog.updates"] == "30" and got["morlog.inserts"] == "30"
    assert got["morlog.inserts.routed"] == "30"  # room enough: into the small groups
    after = {(s.partition, s.file_id): len(s.log_files) for s in Table(path).file_slices()}
    assert set(after) == set(before)
    assert all(after[g] - before[g] == 1 for g in after)
    assert len(_rows(path)) == 90
    _check_tags(path)


@settings(max_examples=50, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rooms=st.lists(st.integers(0, 500), max_size=4), count=st.integers(0, 3000),
       max_rows=st.integers(1, 700))
def test_the_routing_tasks_bins_are_the_clients(tmp_path: Path, rooms: list[int], count: int,
                                                max_rows: int) -> None:
    """``insert_bins`` of a plan: the small groups' room first, in the plan's order, then
    new groups of the maximum file size in rows, their ids UUID 5 of the instant, partition
    and bin number (the same in every routing task) - the client's plan
    (``MorTable.insert_bins``) for the same groups, new groups' ids aside."""
    from morlog.writers.distributed import WritePlan

    record = 100
    cfg = WriteConfig(fsync=False, max_file_size=max_rows * record)
    small = tuple((f"g{i}-0", r) for i, r in enumerate(rooms) if r > 0)
    plan = WritePlan(TableLocation.of(str(tmp_path)), cfg, "upsert", "20261128000000000",
                     frozenset(), 10, {"p": small}, False, record)
    bins = insert_bins(plan, "p", count)
    assert sum(n for _, n, _ in bins) == count
    assert all(n > 0 for _, n, _ in bins)
    old = [(f, n) for f, n, new in bins if not new]
    left = count
    want = []
    for f, r in small:
        if left <= 0:
            break
        want.append((f, min(left, r)))
        left -= min(left, r)
    assert old == want
    news = [(f, n) for f, n, new in bins if new]
    assert [n for _, n in news] == [min(max_rows, left - i * max_rows)
                                    for i in range(len(news))]
    ns = uuid.UUID("6d6f726c-6f67-5370-8172-6b2d67726f75")
    assert [f for f, _ in news] == [
        f"{uuid.uuid5(ns, f'20261128000000000/p/{i}')}-0" for i in range(len(news))]
    assert insert_bins(plan, "p", count) == bins
