"""The write client: commits, routing, bad input, concurrency, failure at every step."""

from __future__ import annotations

import dataclasses
import fcntl
import os
import re
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat import UsageError
from morlog.readers.table import Table
from morlog.writers.client import ConcurrentWriterError, MorTable
from morlog.writers.core.timeline import TimelineWriter
from morlog.writers.options import WriteConfig

SCHEMA = pa.schema([("id", pa.string()), ("region", pa.string()), ("ts", pa.int64()),
                    ("amount", pa.float64())])
#: small limits so that a few hundred rows exercise routing (a Hudi base file's default
#: bloom filter footer alone is ~450 KB)
SMALL = dict(fsync=False, max_file_size=2_000_000, small_file_limit=1_500_000,
             record_size=100)


def _batch(ids: list[int], ts: int, regions: tuple[str, ...] = ("eu", "us")) -> pa.Table:
    return pa.table({"id": [f"k{i:04d}" for i in ids],
                     "region": [regions[i % len(regions)] for i in ids],
                     "ts": [ts] * len(ids), "amount": [float(ts * 1000 + i) for i in ids]},
                    schema=SCHEMA)


def _rows(path: Path) -> dict[str, tuple[Any, ...]]:
    return {r["id"]: (r["region"], r["ts"], r["amount"])
            for r in Table(str(path)).read().to_pylist()}


def _hudi_rs_rows(path: Path) -> dict[str, tuple[Any, ...]]:
    import hudi

    batches = hudi.HudiTableBuilder.from_base_uri(str(path)).build().read()
    t = pa.Table.from_batches(batches) if batches else pa.table({})
    return {r["id"]: (r["region"], r["ts"], r["amount"]) for r in t.to_pylist()}


def _listing(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")
                  if p.name != "morlog.lock")


@pytest.mark.parametrize("carrier", ["avro", "parquet"])
def test_upserts_and_deletes_read_back_like_the_oracle(tmp_path: Path, carrier: str) -> None:
    t = MorTable.create(str(tmp_path), SCHEMA, key_field="id", partition_field="region",
                        ordering_field="ts", config=WriteConfig(carrier=carrier, **SMALL))
    oracle: dict[str, tuple[Any, ...]] = {}

    def apply(b: pa.Table) -> None:
        for r in b.to_pylist():
            oracle[r["id"]] = (r["region"], r["ts"], r["amount"])

    b1 = _batch(list(range(200)), 1)
    r1 = t.upsert(b1)
    apply(b1)
    assert (r1.inserts, r1.updates) == (200, 0) and r1.new_groups
    b2 = _batch(list(range(150, 400)), 2)
    r2 = t.upsert(b2)
    apply(b2)
    assert (r2.inserts, r2.updates) == (200, 50)
    # inserts went into the existing small groups' logs, no new files for them
    assert r2.inserts_routed_to_existing == 200 and not r2.new_groups
    r3 = t.delete(pa.table({"id": ["k0001", "k0002", "zzz"], "region": ["us", "eu", "eu"]}))
    assert r3.deletes == 2
    oracle.pop("k0001")
    oracle.pop("k0002")
    assert _rows(tmp_path) == oracle
    assert _hudi_rs_rows(tmp_path) == oracle


def test_new_groups_open_only_when_no_capacity_is_left(tmp_path: Path) -> None:
    cfg = WriteConfig(fsync=False, max_file_size=700_000, small_file_limit=650_000,
                      record_size=100)
    t = MorTable.create(str(tmp_path), SCHEMA, key_field="id", config=cfg)
    r1 = t.upsert(_batch(list(range(100)), 1, ("x",)))
    assert len(r1.new_groups) == 1
    (s,) = Table(str(tmp_path)).file_slices()
    size = os.path.getsize(tmp_path / s.base_file)  # type: ignore[operator]
    room = (cfg.max_file_size - size) // 100
    r2 = t.upsert(_batch(list(range(100, 100 + room + 50)), 2, ("x",)))
    assert r2.inserts_routed_to_existing == room
    assert len(r2.new_groups) == 1  # the 50 that did not fit


def test_log_only_new_groups(tmp_path: Path) -> None:
    t = MorTable.create(str(tmp_path), SCHEMA, key_field="id", partition_field="region",
                        config=WriteConfig(new_groups="log", **SMALL))
    t.upsert(_batch(list(range(50)), 1))
    slices = Table(str(tmp_path)).file_slices()
    assert slices and all(s.base_file is None and s.log_files for s in slices)
    t.upsert(_batch(list(range(25, 75)), 2))
    assert len(_rows(tmp_path)) == 75
    assert _hudi_rs_rows(tmp_path) == _rows(tmp_path)


def test_duplicates_in_a_batch_combine_by_ordering_field(tmp_path: Path) -> None:
    t = MorTable.create(str(tmp_path), SCHEMA, key_field="id", ordering_field="ts",
                        config=WriteConfig(**SMALL))
    b = pa.table({"id": ["a", "a", "b", "a"], "region": ["r"] * 4, "ts": [3, 9, 1, 9],
                  "amount": [1.0, 2.0, 3.0, 4.0]}, schema=SCHEMA)
    t.upsert(b)
    assert _rows(tmp_path) == {"a": ("r", 9, 4.0), "b": ("r", 1, 3.0)}


# (key, partition, ordering value) of a batch's records: few keys, so copies meet
_COPIES = st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["eu", "us"]),
                             st.integers(0, 3)), min_size=1, max_size=25)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=_COPIES, second=_COPIES, rli=st.booleans())
def test_duplicates_combine_by_key_and_partition_unless_the_index_is_global(
        tmp_path_factory: pytest.TempPathFactory, first: list[tuple[int, str, int]],
        second: list[tuple[int, str, int]], rli: bool) -> None:
    """Hudi combines a batch's copies of a record by record key and partition path, and by
    record key alone when the index is global (``HoodieWriteHelper.deduplicateRecords``):
    with a non-global index a key may live in two partitions, one record in each. The
    winner: the greatest ordering value, the later copy on ties. Model: per (key,
    partition), or per key with morlog's record index (global), the winner of each batch
    over the stored record (a global index writes the record where its key lives, its
    partition column as the batch gives it)."""
    path = tmp_path_factory.mktemp("dups")
    t = MorTable.create(str(path), SCHEMA, key_field="id", partition_field="region",
                        ordering_field="ts", config=WriteConfig(**SMALL))
    if rli:
        t.build_record_index()
    model: dict[Any, tuple[str, int, float]] = {}
    for n, batch in enumerate((first, second)):
        won: dict[Any, tuple[str, int, float]] = {}
        for i, (k, region, ts) in enumerate(batch):
            ident = k if rli else (k, region)
            if ident not in won or ts >= won[ident][1]:
                won[ident] = (region, ts, float(n * 100 + i))
        for ident, (region, ts, amount) in won.items():
            old = model.get(ident)
            if old is None or ts >= old[1]:
                model[ident] = (region, ts, amount)
        t.upsert(pa.table({"id": [f"k{k}" for k, _, _ in batch],
                           "region": [r for _, r, _ in batch],
                           "ts": [ts for _, _, ts in batch],
                           "amount": [float(n * 100 + i) for i in range(len(batch))]},
                          schema=SCHEMA))
    got = sorted((r["id"], r["region"], r["ts"], r["amount"])
                 for r in Table(str(path)).read().to_pylist())
    want = sorted((f"k{ident if rli else ident[0]}", *v) for ident, v in model.items())
    assert got == want


@pytest.mark.parametrize("bad, match", [
    (pa.table({"region": ["x"], "ts": [1], "amount": [1.0]}),
     r"lacks key or partition fields \['id'\]"),
    (pa.table({"id": [None, "b"], "region": ["x", "x"], "ts": [1, 1],
               "amount": [1.0, 1.0]}), "field 'id' is null or empty"),
    # a new column is no longer refused: it evolves the table's schema (issue 27,
    # tests/test_schema_evolution.py); a non-nullable one is
    (pa.table({"id": ["a"], "region": ["x"], "ts": [1], "amount": [1.0], "extra": [1]},
              schema=pa.schema([*SCHEMA, pa.field("extra", pa.int64(), nullable=False)])),
     "new column 'extra' is not nullable"),
    (pa.table({"id": ["a"], "region": ["x"], "ts": ["not a number"], "amount": [1.0]}),
     "column 'ts' is string in the batch and int64 in the table"),
    # strings that parse as numbers are refused too (Hudi: no string -> number promotion)
    (pa.table({"id": ["a"], "region": ["x"], "ts": ["7"], "amount": [1.0]}),
     "column 'ts' is string in the batch and int64 in the table"),
    (pa.table({"id": ["a"], "region": ["x"], "ts": [1], "amount": ["1.5"]}),
     "column 'amount' is string in the batch and double in the table"),
    (pa.table({"id": ["a"], "region": ["x"], "ts": [True], "amount": [1.0]}),
     "column 'ts' is bool in the batch and int64 in the table"),
    # a promotion Hudi allows, but the value does not fit the table's type exactly
    (pa.table({"id": ["a"], "region": ["x"], "ts": [1], "amount": [2**53 + 1]}),
     "column 'amount' of type int64 does not convert to the table's double"),
    (pa.table({"id": ["a"], "ts": [1], "amount": [1.0]}),
     r"lacks key or partition fields \['region'\]"),
])
def test_bad_batches_change_nothing(tmp_path: Path, bad: pa.Table, match: str) -> None:
    t = MorTable.create(str(tmp_path), SCHEMA, key_field="id", partition_field="region",
                        config=WriteConfig(**SMALL))
    t.upsert(_batch([1, 2], 1))
    before = _listing(tmp_path)
    with pytest.raises(UsageError, match=match):
        t.upsert(bad)
    assert _listing(tmp_path) == before


def test_batches_take_hudis_type_promotions_only(tmp_path: Path) -> None:
    from morlog.writers.core.promotion import promotes

    schema = pa.schema([("id", pa.string()), ("i", pa.int32()), ("l", pa.int64()),
                        ("f", pa.float32()), ("d", pa.float64()), ("s", pa.string()),
                        ("b", pa.binary()), ("m", pa.decimal128(10, 2))])
    t = MorTable.create(str(tmp_path), schema, key_field="id", config=WriteConfig(**SMALL))
    # int -> long -> float -> double, string <-> bytes, a wider decimal: written as the
    # table's types
    t.upsert(pa.table({"id": ["a"], "i": pa.array([1], pa.int16()),
                       "l": pa.array([2], pa.int32()), "f": pa.array([3], pa.int64()),
                       "d": pa.array([4.5], pa.float32()), "s": pa.array([b"x"], pa.binary()),
                       "b": ["y"], "m": pa.array([Decimal("1.0")], pa.decimal128(5, 1))}))
    got = Table(str(tmp_path)).read(columns=list(schema.names))
    assert got.schema == schema
    assert got.to_pylist()[0] == {"id": "a", "i": 1, "l": 2, "f": 3.0, "d": 4.5, "s": "x",
                                  "b": b"y", "m": Decimal("1.00")}
    before = _listing(tmp_path)
    # a wider batch type (int64 into an int column...) widens the table's column instead
    # (tests/test_schema_evolution.py); what neither promotes to the other is refused
    for col, value, src in [("s", pa.array([True]), "bool"),
                            ("l", pa.array(["1"]), "string"),
                            ("m", pa.array([1], pa.decimal128(10, 3)), "decimal128(10, 3)")]:
        batch = pa.table({"id": ["b"], col: value})
        with pytest.raises(UsageError, match=re.escape(
                f"column '{col}' is {src} in the batch and {schema.field(col).type} in the "
                "table")):
            MorTable(str(tmp_path), WriteConfig(**SMALL, set_null_for_missing_columns=True)
                     ).upsert(batch)
    assert _listing(tmp_path) == before
    # nested and zoned types follow the same rules
    assert promotes(pa.list_(pa.int32()), pa.list_(pa.int64()))
    assert not promotes(pa.list_(pa.string()), pa.list_(pa.float64()))
    assert not promotes(pa.timestamp("us"), pa.timestamp("us", tz="UTC"))
    assert promotes(pa.timestamp("ms", tz="Etc/UTC"), pa.timestamp("us", tz="UTC"))
    assert promotes(pa.struct([("x", pa.int32())]),
                    pa.struct([("x", pa.int64()), ("y", pa.string())]))
    assert not promotes(pa.uint64(), pa.int64())


def test_not_a_table_and_existing_table(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a Hudi table"):
        MorTable(str(tmp_path))
    MorTable.create(str(tmp_path), SCHEMA, key_field="id")
    with pytest.raises(UsageError, match="exists already"):
        MorTable.create(str(tmp_path), SCHEMA, key_field="id")
    with pytest.raises(UsageError, match="not in the schema"):
        MorTable.create(str(tmp_path / "x"), SCHEMA, key_field="nope")


def test_a_concurrent_writer_gets_a_clear_error(tmp_path: Path) -> None:
    """A writer finding the lock held waits hoodie.write.lock.wait_time_ms for it, then
    fails naming the wait, nothing written; 0 fails at once."""
    t = MorTable.create(str(tmp_path), SCHEMA, key_field="id", config=WriteConfig(**SMALL))
    t.upsert(_batch([1], 1))
    before = _listing(tmp_path)
    with open(tmp_path / ".hoodie" / "morlog.lock", "a") as other:
        fcntl.flock(other.fileno(), fcntl.LOCK_EX)
        cfg = WriteConfig.from_hoodie_options({"hoodie.write.lock.wait_time_ms": "300"})
        assert cfg.lock_wait_seconds == 0.3
        start = time.monotonic()
        with pytest.raises(ConcurrentWriterError, match=r"waited 0\.3 s .*wait_time_ms"):
            MorTable(str(tmp_path), dataclasses.replace(cfg, **SMALL)).upsert(_batch([2], 2))
        assert time.monotonic() - start >= 0.3
        with pytest.raises(ConcurrentWriterError) as exc:
            MorTable(str(tmp_path), WriteConfig(**SMALL, lock_wait_seconds=0)).upsert(
                _batch([2], 2))
        assert "waited" not in str(exc.value)
    assert _listing(tmp_path) == before
    t.upsert(_batch([3], 3))  # the lock is free again
    assert set(_rows(tmp_path)) == {"k0001", "k0003"}


def test_a_writer_waits_for_the_lock_another_writer_holds(tmp_path: Path) -> None:
    """The default wait (Hudi's 60 s): a writer that finds the lock held commits once the
    holder releases it (a driver killed mid-commit leaves a lock until its processes end)."""
    t = MorTable.create(str(tmp_path), SCHEMA, key_field="id", config=WriteConfig(**SMALL))
    t.upsert(_batch([1], 1))
    assert WriteConfig().lock_wait_seconds == 60.0
    other = open(tmp_path / ".hoodie" / "morlog.lock", "a")
    fcntl.flock(other.fileno(), fcntl.LOCK_EX)
    release = threading.Timer(0.5, other.close)
    release.start()
    start = time.monotonic()
    try:
        r = MorTable(str(tmp_path), WriteConfig(**SMALL)).upsert(_batch([2], 2))
    finally:
        release.join()
    assert time.monotonic() - start >= 0.5
    assert r.inserts == 1
    assert set(_rows(tmp_path)) == {"k0001", "k0002"}


class Crash(BaseException):  # a writer dying (not an error it can handle)
    pass


STEPS = ["requested", "inflight", "first_group", "completed"]


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("new_groups", ["base", "log"])
def test_a_writer_dying_at_any_step_leaves_the_table_as_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str, new_groups: str) -> None:
    cfg = WriteConfig(new_groups=new_groups, **SMALL)  # type: ignore[arg-type]
    t = MorTable.create(str(tmp_path), SCHEMA, key_field="id", partition_field="region",
                        ordering_field="ts", config=cfg)
    t.upsert(_batch(list(range(40)), 1))
    before = _rows(tmp_path)
    real_timeline = TimelineWriter.write
    real_log_writer = MorTable._log_writer

    def timeline(self: TimelineWriter, instant: str, state: str, meta: dict[str, Any],
                 action: str = "deltacommit") -> None:
        if action == "deltacommit" and state == step:
            raise Crash(step)
        real_timeline(self, instant, state, meta, action)

    calls = {"n": 0}

    def log_writer(self: MorTable, partition: str, fid: str, base: str,
                   *args: Any) -> Any:
        calls["n"] += 1
        if step == "first_group" and calls["n"] == 2:
            raise Crash(step)  # dies after writing one file group's blocks
        return real_log_writer(self, partition, fid, base, *args)

    monkeypatch.setattr(TimelineWriter, "write", timeline)
    monkeypatch.setattr(MorTable, "_log_writer", log_writer)
    with pytest.raises(Crash):
        MorTable(str(tmp_path), cfg).upsert(_batch(list(range(20, 80)), 2))
    monkeypatch.undo()
    assert _rows(tmp_path) == before  # readers ignore the dead writer's work
    assert _hudi_rs_rows(tmp_path) == before
    # the next writer rolls the failed instant back, then commits
    r = MorTable(str(tmp_path), cfg).upsert(_batch([100], 3))
    pending = Table(str(tmp_path)).timeline.pending()
    assert not pending
    after = _rows(tmp_path)
    assert after == {**before, "k0100": ("eu", 3, 3100.0)}
    assert _hudi_rs_rows(tmp_path) == after
    if step != "requested":
        assert r.rolled_back


def test_insert_skips_the_lookup_like_hudi(tmp_path: Path) -> None:
    t = MorTable.create(str(tmp_path), SCHEMA, key_field="id", config=WriteConfig(**SMALL))
    t.upsert(_batch([1, 2], 1, ("x",)))
    r = t.insert(_batch([2, 3], 2, ("x",)))
    assert (r.inserts, r.updates) == (2, 0)
    # both inserts went into the one small file group, where the slice merge keeps one
    # record per key (the later one): an insert elsewhere would have left two
    assert r.inserts_routed_to_existing == 2 and not r.new_groups
    rows = {row["id"]: row["ts"] for row in Table(str(tmp_path)).read().to_pylist()}
    assert rows == {"k0001": 1, "k0002": 2, "k0003": 2}


def _count_resolutions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every resolution of a path or URI into a TableLocation, from now on."""
    from morlog.readers.storage import TableLocation

    real = TableLocation.resolve.__func__  # type: ignore[attr-defined]
    calls: list[str] = []

    def counting(cls: type[TableLocation], path: str, filesystem: Any = None
                 ) -> TableLocation:
        calls.append(path)
        return real(cls, path, filesystem)  # type: ignore[no-any-return]

    monkeypatch.setattr(TableLocation, "resolve", classmethod(counting))
    return calls


def test_an_upsert_resolves_the_table_path_once(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    MorTable.create(str(tmp_path), SCHEMA, key_field="id", partition_field="region",
                    ordering_field="ts", config=WriteConfig(**SMALL)).upsert(
        _batch(list(range(40)), 1))
    calls = _count_resolutions(monkeypatch)
    t = MorTable(str(tmp_path), WriteConfig(**SMALL))
    r = t.upsert(_batch(list(range(20, 80)), 2))  # tags, routes, writes logs and base files
    assert r.updates == 20 and r.inserts == 40
    assert calls == [str(tmp_path)]  # once, by the constructor
    t.delete(_batch([1, 2], 3))
    assert calls == [str(tmp_path)]  # an open table never parses its path again


def test_file_groups_written_in_parallel_come_back_in_job_order_and_stop_at_a_failure(
) -> None:
    """``run_all``: results in job order whatever finishes first; the first failure is
    raised after the running jobs finish, and jobs not yet started never run."""
    import threading
    import time as _time

    from morlog.readers.parallel import run_all

    assert run_all(lambda j: (_time.sleep(0.01 * (5 - j)), j * j)[1], list(range(5)), 3) \
        == [0, 1, 4, 9, 16]
    started: list[int] = []
    lock = threading.Lock()

    def job(j: int) -> int:
        with lock:
            started.append(j)
        if j == 1:
            raise ValueError("group 1 failed")
        _time.sleep(0.05)
        return j

    with pytest.raises(ValueError, match="group 1"):
        run_all(job, list(range(50)), 2)
    assert len(started) < 50
    assert run_all(lambda j: j + 1, [1, 2], 1) == [2, 3]


def _wide_batch(ids: range, ts: int, width: int = 600) -> pa.Table:
    """String-heavy rows: ``width`` random hex characters each (Parquet's encodings and
    snappy leave them about as large as they are)."""
    import random

    rnd = random.Random(ids.start)
    return pa.table({"id": [f"k{i:06d}" for i in ids], "ts": [ts] * len(ids),
                     "payload": [rnd.randbytes(width // 2).hex() for _ in ids]})


WIDE = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("payload", pa.string())])
#: file sizes that a few thousand wide rows fill; a base file carries Hudi's bloom filter
#: footer (~450 KB) besides its rows
WIDE_CFG = dict(fsync=False, max_file_size=4 * 1024 * 1024, small_file_limit=2 * 1024 * 1024)


def _base_files(path: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in path.rglob("*.parquet")
            if ".hoodie" not in p.parts}


def test_base_files_stay_under_the_max_file_size_with_string_heavy_rows(tmp_path: Path
                                                                        ) -> None:
    """Inserts are packed at Hudi's record size estimate (``morlog.writers.core.sizing``):
    1024 bytes a record before any commit, then the bytes over the records of the newest
    commits' base files larger than the threshold. Before, the client counted a quarter of
    the batch's Arrow size per record (~165 bytes here), so one group took every insert of
    a batch and its base file grew past the maximum.

    Tolerance 2%: the estimate is the mean size of records in files of the same rows, their
    fixed footer spread over fewer records than a full file holds (so it errs large); what
    is left is the spread of Parquet's compressed size between batches of random strings."""
    from morlog.writers.core.sizing import average_record_size

    path = tmp_path / "t"
    cfg = WriteConfig(**WIDE_CFG)  # type: ignore[arg-type]
    table = MorTable.create(str(path), WIDE, key_field="id", ordering_field="ts", config=cfg)
    assert table.record_size() == 1024  # no commit yet: hoodie.copyonwrite.record.size.estimate
    sizes: list[int] = []
    for b in range(3):
        table.upsert(_wide_batch(range(b * 8000, (b + 1) * 8000), 1))
        files = _base_files(path)
        assert max(files.values()) <= cfg.max_file_size * 1.02, files
        sizes.append(table.record_size())
    # measured: the newest commits' base files above the small-file limit (and only those)
    counted = {n: s for n, s in _base_files(path).items() if s > cfg.small_file_limit}
    assert counted
    assert 600 < sizes[-1] < 1024
    # every batch's rows are read back
    assert Table(str(path)).read(columns=["id"]).num_rows == 24000
    # the threshold: with files never above it, the default stays
    assert average_record_size(table.table(), small_file_limit=10 * cfg.max_file_size,
                               default=777) == 777
    # only the newest max_commits commits are read; none: the default
    assert average_record_size(table.table(), small_file_limit=cfg.small_file_limit,
                               max_commits=0, default=555) == 555
    # WriteConfig.record_size, when set, replaces the estimate
    fixed = MorTable(str(path), WriteConfig(fsync=False, record_size=123))
    assert fixed.record_size() == 123
