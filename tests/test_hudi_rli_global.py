"""Hudi's own record index (the metadata table's ``record_index`` partition) is a global
index (spec/rli.md §4a): on a table that lists it, morlog's writers tag every key wherever
it lives, so an upsert giving a key another partition never writes a second copy; a delete
removes the key where it lives; ``hoodie.record.index.update.partition.path`` decides
whether the record stays (false) or moves (true). After every write the snapshot holds each
key once, the record_index maps each live key to the file group holding it, hudi-rs reads
the same rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.errors import DamagedIndexWarning
from morlog.readers.mdt.record_index import HudiRecordIndex, global_record_index
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig

from .hudi_fixtures import fixture_table
from .test_real_table_writes import _copy, _data, _hudi_rs, _rows
from .test_record_index_writer import KEEP_RLI, index_of, truth

NAME = "v9_txns_simple_meta/v9_txns_simple_meta"
KEY = "txn_id"
REGIONS = ["apac", "eu", "us"]


def _table(path: Path, move: bool) -> MorTable:
    return MorTable(str(path), WriteConfig(hoodie_options={
        **KEEP_RLI, "hoodie.record.index.update.partition.path": str(move).lower()}))


def _snapshot(path: Path) -> dict[str, dict[str, Any]]:
    data = _data(path)
    keys = data.column(KEY).to_pylist()
    assert len(keys) == len(set(keys)), "a key reads twice"
    return _rows(data, KEY)


def _check(path: Path) -> None:
    """Each key once; the record_index maps every live key to the file group holding it
    (and nothing else); hudi-rs reads the same rows."""
    snap = _snapshot(path)
    held = truth(path)  # asserts each key in one file group
    assert set(held) == set(snap)
    assert index_of(path) == held
    # the reader's lookup agrees (the index morlog tags through)
    keys = sorted(held)
    found = HudiRecordIndex(Table(str(path))).lookup(keys)
    assert [found.groups[c] if c >= 0 else None for c in found.codes.tolist()] == [
        held[k] for k in keys]
    rs = _hudi_rs(path)
    assert rs.num_rows == len(snap)
    assert _rows(rs, KEY).keys() == snap.keys()


def _moved(path: Path, key: str, region: str, ts_add: int = 1000) -> pa.Table:
    data = _data(path)
    row = data.filter(pc.equal(data.column(KEY), key))
    assert row.num_rows == 1
    i = row.schema.get_field_index("region")
    row = row.set_column(i, "region", pa.array([region], row.schema.field("region").type))
    j = row.schema.get_field_index("txn_ts")
    return row.set_column(j, "txn_ts", pc.add(row.column("txn_ts"), ts_add))


def test_fixture_lists_a_global_record_index() -> None:
    assert global_record_index(Table(str(fixture_table(NAME))))


@pytest.mark.parametrize("move", [False, True])
def test_upsert_giving_a_key_another_partition(tmp_path: Path, move: bool) -> None:
    """The reproduction: TXN-015 lives in region=apac; an upsert gives it region eu."""
    path = _copy(fixture_table(NAME), tmp_path)
    t = _table(path, move)
    before = truth(path)
    assert before["TXN-015"][0] == "region=apac"
    r = t.upsert(_moved(path, "TXN-015", "eu"))
    assert (r.updates, r.inserts) == ((0, 1) if move else (1, 0))
    _check(path)
    after = truth(path)
    if move:
        assert after["TXN-015"][0] == "region=eu"
    else:  # written where the key lives: its partition column says eu, its path apac
        assert after["TXN-015"] == before["TXN-015"]
    row = _snapshot(path)["TXN-015"]
    assert row["region"] == "eu"
    # a delete giving yet another partition removes the key where it lives
    gone = _moved(path, "TXN-015", "us").select([KEY, "region"])
    r = t.delete(gone)
    assert r.deletes == 1
    _check(path)
    assert "TXN-015" not in truth(path)


@pytest.mark.parametrize("move", [False, True])
def test_partition_filter_finds_a_row_by_its_column_value(tmp_path: Path, move: bool
                                                          ) -> None:
    """A row written where its key lives (update.partition.path false) has region eu in
    its column and lives under region=apac: a filter on the column finds it there
    (spec/prune.md §10: pruning by path values would drop it)."""
    path = _copy(fixture_table(NAME), tmp_path)
    _table(path, move).upsert(_moved(path, "TXN-015", "eu"))
    got = Table(str(path)).read(where="region = 'eu'")
    assert "TXN-015" in got.column(KEY).to_pylist()
    got = Table(str(path)).read(where="region = 'apac'")
    assert "TXN-015" not in got.column(KEY).to_pylist()


def test_insert_of_a_held_key_in_another_partition_updates_it(tmp_path: Path) -> None:
    path = _copy(fixture_table(NAME), tmp_path)
    t = _table(path, False)
    t.insert(_moved(path, "TXN-015", "us"))
    _check(path)


@pytest.mark.parametrize("move", [False, True])
def test_damaged_record_index_falls_back_to_every_partition(tmp_path: Path,
                                                            move: bool) -> None:
    """The shard of TXN-015 does not decode: a DamagedIndexWarning, and the tagging reads
    every partition's files, so the key is still written once."""
    path = _copy(fixture_table(NAME), tmp_path)
    table = Table(str(path))
    shard = int(HudiRecordIndex(table).shard_of(pa.array(["TXN-015"]))[0])
    d = path / ".hoodie" / "metadata" / "record_index"
    for f in d.glob(f"record-index-{shard:04d}-0_*.hfile"):
        f.write_bytes(b"not an hfile" * 8)
    with pytest.warns(DamagedIndexWarning, match="record_index"):
        _table(path, move).upsert(_moved(path, "TXN-015", "eu"))
    snap = _snapshot(path)  # each key once
    assert "TXN-015" in snap
    held = truth(path)
    assert held["TXN-015"][0] == ("region=eu" if move else "region=apac")
    assert snap["TXN-015"]["region"] == "eu"


_OPS = st.lists(st.tuples(st.sampled_from(["upsert", "insert", "delete"]),
                          st.lists(st.tuples(st.integers(0, 19), st.sampled_from(REGIONS)),
                                   min_size=1, max_size=4)),
                min_size=1, max_size=4)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(ops=_OPS, move=st.booleans())
def test_history_keeps_record_index_true(tmp_path_factory: pytest.TempPathFactory,
                                         ops: list[tuple[str, list[tuple[int, str]]]],
                                         move: bool) -> None:
    """A history of upserts, inserts and deletes with keys moving between partitions:
    after every step the snapshot equals a dict model (key -> region and amount), each key
    once, the record_index maps each live key to its file group (no entry for a deleted
    key), and hudi-rs reads the same rows."""
    path = _copy(fixture_table(NAME), tmp_path_factory.mktemp("h"))
    t = _table(path, move)
    base = _data(path)
    template = base.slice(0, 1)
    model = {r[KEY]: (r["region"], r["txn_ts"]) for r in base.to_pylist()}
    where = {k: p for k, (p, _) in truth(path).items()}
    ts = 1_900_000_000_000
    for op, picks in ops:
        batch: dict[str, tuple[str, int]] = {}
        for n, region in picks:
            ts += 1
            batch[f"TXN-{n:03d}"] = (region, ts)
        rows = []
        for k, (region, stamp) in batch.items():
            r = template.to_pylist()[0]
            r.update({KEY: k, "region": region, "txn_ts": stamp})
            rows.append(r)
        tb = pa.Table.from_pylist(rows, schema=template.schema)
        if op == "delete":
            t.delete(tb.select([KEY, "region"]))
            for k in batch:
                model.pop(k, None)
                where.pop(k, None)
        else:
            getattr(t, op)(tb)
            for k, (region, stamp) in batch.items():
                if k in model and not move:
                    model[k] = (region, stamp)  # stays in where[k]
                else:
                    model[k] = (region, stamp)
                    where[k] = f"region={region}"
        snap = _snapshot(path)
        assert {k: (v["region"], v["txn_ts"]) for k, v in snap.items()} == model
        held = truth(path)
        assert {k: p for k, (p, _) in held.items()} == where
        assert index_of(path) == held
        rs = _hudi_rs(path)  # hudi-rs reads the same rows
        assert {r[KEY]: (r["region"], r["txn_ts"]) for r in rs.to_pylist()} == model
        assert rs.num_rows == len(model)


def test_partition_filter_under_morlogs_own_index(tmp_path: Path) -> None:
    """The same rule under morlog's record index: a row kept in its key's partition with
    another partition-column value is found by a filter on that value."""
    from morlog.writers.services.record_index import build

    schema = pa.schema([("id", pa.string()), ("v", pa.int64()), ("p", pa.string())])
    t = MorTable.create(str(tmp_path / "t"), schema, key_field="id", partition_field="p",
                        ordering_field="v", config=WriteConfig(fsync=False))
    t.upsert(pa.table({"id": ["a", "b"], "v": [1, 1], "p": ["x", "y"]}, schema=schema))
    build(t, 2)
    t = MorTable(str(tmp_path / "t"), WriteConfig(fsync=False))
    t.upsert(pa.table({"id": ["a"], "v": [2], "p": ["y"]}, schema=schema))
    table = Table(str(tmp_path / "t"))
    assert [s.partition for s in table.file_slices()
            if "a" in table.read_slice(s, columns=["id"]).column("id").to_pylist()] == ["x"]
    assert sorted(table.read(where="p = 'y'").column("id").to_pylist()) == ["a", "b"]
    assert table.read(where="p = 'x'").num_rows == 0


@pytest.mark.parametrize("move", [False, True])
def test_spark_upsert_tags_through_hudis_record_index(spark: Any, tmp_path: Path,
                                                      move: bool) -> None:
    """Spark's distributed upsert tags globally through the record_index the same way."""
    from morlog.spark.write import upsert

    path = _copy(fixture_table(NAME), tmp_path)
    before = truth(path)
    row = _moved(path, "TXN-015", "eu")
    df = spark.createDataFrame(row.to_pandas())
    cfg = WriteConfig(fsync=False, hoodie_options={
        **KEEP_RLI, "hoodie.record.index.update.partition.path": str(move).lower()})
    upsert(spark, df, str(path), key=KEY, partition="region", ordering="txn_ts", config=cfg)
    _check(path)
    after = truth(path)
    assert after["TXN-015"][0] == ("region=eu" if move else before["TXN-015"][0])
    assert _snapshot(path)["TXN-015"]["region"] == "eu"
    gone = spark.createDataFrame([("TXN-015", "us")], "txn_id string, region string")
    upsert(spark, gone, str(path), key=KEY, partition="region", ordering="txn_ts",
           config=cfg, operation="delete")
    _check(path)
    assert "TXN-015" not in truth(path)


def test_insert_overwrite_refuses_a_key_living_in_a_partition_it_keeps(tmp_path: Path
                                                                        ) -> None:
    """insert_overwrite of region=eu with TXN-015 (living in apac, which it keeps) would
    leave the key twice: refused before anything is written (spec/rli.md §4a)."""
    from morlog.logformat.errors import UsageError

    path = _copy(fixture_table(NAME), tmp_path)
    before = _snapshot(path)
    with pytest.raises(UsageError, match="record index is global"):
        _table(path, False).insert_overwrite(_moved(path, "TXN-015", "eu"))
    assert _snapshot(path) == before
    _check(path)


def test_hudis_rule_still_prunes_by_path(tmp_path: Path) -> None:
    """The comparison rule models Hudi's reader, which prunes partitions by path values:
    it drops the slice of a row kept in apac whose column says eu; morlog's rule keeps it."""
    from morlog.readers.prune import prune

    path = _copy(fixture_table(NAME), tmp_path)
    _table(path, False).upsert(_moved(path, "TXN-015", "eu"))
    table = Table(str(path))
    fid = truth(path)["TXN-015"]
    kept = {r: {(s.partition, s.file_id)
                for s in prune(table, "region = 'eu'", rule=r).kept_slices}
            for r in ("morlog", "hudi")}
    assert fid in kept["morlog"] and fid not in kept["hudi"]
