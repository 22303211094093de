"""morlog's record-level index (``morlog.readers.record_index``,
``morlog.writers.services.record_index``, spec/rli.md): build, lookup, maintenance by every
write, crash windows, staleness, the CLI, and real Hudi tables; keys given other partitions
(§4a, both values of ``hoodie.record.index.update.partition.path``), damaged shard files, and
the oracle of every operation with the index on
(``test_every_operation_keeps_the_index_exact``). The table oracle with the index on:
``tests/test_table_model.py`` (``test_refused_and_failed_batches_leave_the_table_as_before``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from morlog.cli import main
from morlog.logformat.errors import MorlogError, UsageError
from morlog.readers.lookup import KeyTagger, StaleIndexWarning
from morlog.readers.record_index import (
    ENABLE_PROPERTY,
    RecordIndex,
    StaleIndexError,
    index_location,
    shard_file_id,
    shards_of,
)
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig
from morlog.writers.services.record_index import build, table_entries, verify

from .hudi_fixtures import requires_fixtures, tables
from .test_table_model import _inject_failure

SCHEMA = pa.schema([("id", pa.string()), ("v", pa.int64()), ("p", pa.string())])


def _batch(ids: Any, v: int) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": [f"k{i:05d}" for i in ids], "v": [v] * len(ids),
                     "p": [f"p{i % 3}" for i in ids]}, schema=SCHEMA)


def _table(root: Path, **cfg: Any) -> MorTable:
    return MorTable.create(str(root), SCHEMA, key_field="id", partition_field="p",
                           ordering_field="v", config=WriteConfig(fsync=False, **cfg))


def _agree(root: Path, probe: list[str]) -> None:
    """Index equals the table; tags through it place every live key where the merged
    snapshot has it and say "new" for the rest (the file probes may also name the group
    of a deleted key: its base file still holds it), and agree with the file probes on
    the live keys."""
    v = verify(Table(str(root)))
    assert v.ok, v.as_dict(5)
    live, _ = table_entries(Table(str(root)))
    where = {r["key"]: {"partition": r["partition"], "file_id": r["file_id"]}
             for r in live.to_pylist()}
    by_index = KeyTagger(Table(str(root))).tag(probe)
    by_files = KeyTagger(Table(str(root)), use_morlog_index=False).tag(probe).as_dict()
    assert by_index.stats.morlog_index_shards > 0
    assert by_index.as_dict() == {k: where.get(k) for k in probe}
    assert {k: by_files[k] for k in probe if k in where} == {
        k: where[k] for k in probe if k in where}


def test_build_lookup_and_shards(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    t.upsert(_batch(range(2000), 1))
    r = build(t, 5)
    assert (r.entries, r.shards) == (2000, 5) and r.bytes > 0
    table = Table(str(tmp_path / "t"))
    assert table.config.get(ENABLE_PROPERTY) == "true"
    index = RecordIndex(table)
    keys = [f"k{i:05d}" for i in (0, 7, 1999, 2000, 12345)]
    got = index.lookup(keys).as_dict()
    want = KeyTagger(table, use_morlog_index=False).tag(keys).as_dict()
    assert {k: None if x is None else {"partition": x["partition"], "file_id": x["file_id"]}
            for k, x in got.items()} == want
    assert got["k02000"] is None and got["k00007"]["instant"] == r.built_as_of
    # every entry sits in the shard its key hashes to
    for k, s in index.slices().items():
        keys_k = index.read_shard(s).column("key")
        assert s.file_id == shard_file_id(k)
        assert set(shards_of(keys_k, 5).tolist()) <= {k}
    _agree(tmp_path / "t", keys)


def test_every_write_keeps_it_true(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(300), 1))
    build(t, 4)
    probe = [f"k{i:05d}" for i in range(0, 1200, 7)]
    t.upsert(_batch(range(250, 600), 2))  # updates and inserts (routed into small groups)
    _agree(root, probe)
    t.delete(_batch(range(0, 40), 3).select(["id", "p"]))
    _agree(root, probe)
    t.insert(_batch(range(600, 700), 4))
    _agree(root, probe)
    t.insert_overwrite(_batch([i for i in range(1000, 1030) if i % 3 == 1], 5))  # p1 replaced
    _agree(root, probe + [f"k{i:05d}" for i in range(1000, 1030)])
    t.delete_partitions(["p2"])
    _agree(root, probe)
    t.upsert(_batch(range(40, 50), 6))  # deleted keys come back
    _agree(root, probe)


def test_services_on_the_data_table_leave_it_true(tmp_path: Path) -> None:
    from morlog.writers.services.cleaning import clean
    from morlog.writers.services.compaction import compact
    from morlog.writers.services.logcompaction import log_compact

    root = tmp_path / "t"
    t = MorTable.create(str(root), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="v", config=WriteConfig(fsync=False, hoodie_options={
                            "hoodie.log.compaction.blocks.threshold": "2",
                            "hoodie.cleaner.commits.retained": "1"}))
    t.upsert(_batch(range(200), 1))
    build(t, 3)
    for v in range(2, 5):
        t.upsert(_batch(range(v * 10, v * 10 + 50), v))
    probe = [f"k{i:05d}" for i in range(0, 260, 3)]
    assert log_compact(t).results
    _agree(root, probe)
    assert compact(t).results
    _agree(root, probe)
    clean(t)
    _agree(root, probe)
    t.upsert(_batch(range(500, 520), 9))
    _agree(root, probe + ["k00510"])


@pytest.mark.parametrize("where", ["log", "parquet", "inflight"])
def test_a_failed_write_leaves_it_equal_to_the_table(tmp_path: Path, where: str) -> None:
    root = tmp_path / "t"
    t = _table(root, route_inserts=False)  # inserts make base files, updates logs
    t.upsert(_batch(range(100), 1))
    build(t, 2)
    mp = pytest.MonkeyPatch()
    _inject_failure(mp, where, persistent=False)
    try:
        with pytest.raises(MorlogError):
            t.upsert(_batch(range(50, 400), 2))
    finally:
        mp.undo()
    _agree(root, [f"k{i:05d}" for i in range(0, 400, 5)])
    t.upsert(_batch(range(390, 410), 3))
    _agree(root, [f"k{i:05d}" for i in range(0, 420, 5)])


def test_index_ahead_of_the_data_is_hidden_until_the_rollback(tmp_path: Path) -> None:
    """A writer dies after the index instant completed and before the data instant did:
    readers must not see the index entries; the next writer rolls both back."""
    from morlog.writers.core import commit as commit_mod

    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(50), 1))
    build(t, 2)
    real = commit_mod.TimelineWriter.write

    def die(self: Any, instant: str, state: str, meta: Any, action: str = "deltacommit"
            ) -> Any:
        if state == "completed" and action == "deltacommit" and ".hoodie/morlog" not in \
                self.location.path:
            raise KeyboardInterrupt  # the data instant never completes
        return real(self, instant, state, meta, action)

    mp = pytest.MonkeyPatch()
    mp.setattr(commit_mod.TimelineWriter, "write", die)
    try:
        with pytest.raises(KeyboardInterrupt):
            t.upsert(_batch(range(40, 90), 2))
    finally:
        mp.undo()
    index = RecordIndex(Table(str(root)))
    raw = {i.requested: i.is_completed for i in index.raw_timeline.instants}
    assert any(raw.values())  # the index instant completed ...
    got = index.lookup([f"k{i:05d}" for i in (45, 60, 89)]).as_dict()
    assert got["k00060"] is None and got["k00089"] is None  # ... and stays hidden
    assert got["k00045"] is not None
    # the next writer rolls back the data instant and the index's
    t.store.lock(str(root)).release()
    t.upsert(_batch(range(95, 99), 3))
    _agree(root, [f"k{i:05d}" for i in range(0, 100)])


def test_a_writer_that_does_not_maintain_it_makes_it_stale(tmp_path: Path) -> None:
    from morlog.writers.core.properties import update_properties

    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(60), 1))
    build(t, 2)
    props = dict(Table(str(root)).config.props)
    update_properties(t.store, t.location, {**props, ENABLE_PROPERTY: "false"})
    t.upsert(_batch(range(100, 120), 2))  # as Hudi's own writer would: index not told
    update_properties(t.store, t.location, props)
    table = Table(str(root))
    with pytest.raises(StaleIndexError):
        RecordIndex(table).lookup(["k00001"])
    v = verify(table)
    assert not v.ok and len(v.missing) == 20 and len(v.stale) == 1
    with pytest.warns(StaleIndexWarning):
        tags = KeyTagger(table).tag(["k00110"])
    assert tags.stats.morlog_index_shards == 0 and tags.as_dict()["k00110"] is not None
    assert main(["rli", "verify", str(root)]) == 1
    build(t, 2)  # a rebuild makes it current
    _agree(root, ["k00110", "k00001"])


MOVE = "hoodie.record.index.update.partition.path"


def _rows(root: Path) -> list[tuple[str, str, int, str]]:
    """(key, stored partition, v, p column) of every row of the snapshot, sorted."""
    return sorted((r["id"], r["_hoodie_partition_path"], r["v"], r["p"])
                  for r in Table(str(root)).read().to_pylist())


@pytest.mark.parametrize("operation", ["insert", "upsert"])
def test_a_key_given_another_partition_stays_where_it_lives_by_default(
        tmp_path: Path, operation: str) -> None:
    """Issue 23: ``insert`` did not tag, so a key living in another partition was written a
    second time (``rli verify``: 1 in the wrong file group). With Hudi's default
    ``hoodie.record.index.update.partition.path=false`` the record is written where the key
    lives (HoodieIndexUtils.tagGlobalLocationBackToRecords tags it to the existing
    location)."""
    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(3), 1))  # k00001 lives in p1
    build(t, 2)
    getattr(t, operation)(pa.table({"id": ["k00001"], "v": [2], "p": ["p2"]}, schema=SCHEMA))
    assert main(["rli", "verify", str(root)]) == 0
    assert [r for r in _rows(root) if r[0] == "k00001"] == [("k00001", "p1", 2, "p2")]
    _agree(root, ["k00001", "k00002"])


@pytest.mark.parametrize("operation", ["insert", "upsert"])
def test_a_key_given_another_partition_moves_when_asked(tmp_path: Path,
                                                       operation: str) -> None:
    """``hoodie.record.index.update.partition.path=true``: a delete in the old partition and
    an insert in the new; the key reads once, from the new partition."""
    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(3), 1))
    build(t, 2)
    mover = MorTable(str(root), WriteConfig(fsync=False, hoodie_options={MOVE: "true"}))
    getattr(mover, operation)(pa.table({"id": ["k00001", "k00007"], "v": [2, 2],
                                        "p": ["p2", "p1"]}, schema=SCHEMA))
    assert main(["rli", "verify", str(root)]) == 0
    assert [r for r in _rows(root) if r[0] in ("k00001", "k00007")] == [
        ("k00001", "p2", 2, "p2"), ("k00007", "p1", 2, "p1")]
    _agree(root, ["k00001", "k00002", "k00007"])
    # and back again, by a later upsert
    mover.upsert(pa.table({"id": ["k00001"], "v": [3], "p": ["p0"]}, schema=SCHEMA))
    assert [r for r in _rows(root) if r[0] == "k00001"] == [("k00001", "p0", 3, "p0")]
    _agree(root, ["k00001"])
    # a stored record with the greater ordering value wins Hudi's merge: it stays
    mover.upsert(pa.table({"id": ["k00001"], "v": [2], "p": ["p1"]}, schema=SCHEMA))
    assert [r for r in _rows(root) if r[0] == "k00001"] == [("k00001", "p0", 3, "p0")]
    _agree(root, ["k00001"])


def test_a_delete_in_another_partition_removes_the_key(tmp_path: Path) -> None:
    """Issue 23's lost delete: a global index deletes the key wherever it lives."""
    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(6), 1))
    build(t, 2)
    r = t.delete(pa.table({"id": ["k00001", "k00002"], "p": ["p0", "p0"]}))
    assert r.deletes == 2
    assert {x[0] for x in _rows(root)} == {"k00000", "k00003", "k00004", "k00005"}
    _agree(root, ["k00001", "k00002", "k00003"])


def test_the_option_is_checked_and_registered(tmp_path: Path) -> None:
    from morlog.writers.options import parse_write_options

    assert parse_write_options({MOVE: "TRUE"}).config.hoodie_options[MOVE] == "true"
    with pytest.raises(UsageError, match=MOVE):
        parse_write_options({MOVE: "sometimes"})
    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(3), 1))
    build(t, 2)
    odd = MorTable(str(root), WriteConfig(fsync=False, hoodie_options={MOVE: "maybe"}))
    with pytest.raises(UsageError, match=MOVE):
        odd.upsert(_batch(range(2), 2))


def test_insert_overwrite_of_a_key_living_elsewhere_is_refused(tmp_path: Path) -> None:
    """An ``insert_overwrite`` batch holding a key that lives in a partition it does not
    replace would leave the key twice: refused before the first byte; a key of a replaced
    partition may change partition, and delete_partition and insert_overwrite_table keep
    the index exact."""
    from .test_table_model import _snapshot_files

    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(9), 1))
    build(t, 2)
    before = _snapshot_files(root)
    with pytest.raises(UsageError, match="does not replace"):
        t.insert_overwrite(pa.table({"id": ["k00001"], "v": [2], "p": ["p2"]}, schema=SCHEMA))
    assert _snapshot_files(root) == before
    # p1 and p2 replaced: k00001 (of p1) may go to p2
    t.insert_overwrite(pa.table({"id": ["k00001", "k00002"], "v": [2, 2], "p": ["p2", "p1"]},
                                schema=SCHEMA))
    assert main(["rli", "verify", str(root)]) == 0
    assert {x[0] for x in _rows(root)} == {"k00000", "k00003", "k00006", "k00001", "k00002"}
    t.delete_partitions(["p0"])
    assert main(["rli", "verify", str(root)]) == 0
    t.insert_overwrite_table(_batch([5, 6], 3))
    assert main(["rli", "verify", str(root)]) == 0
    assert {x[0] for x in _rows(root)} == {"k00005", "k00006"}


def test_build_refuses_keys_in_two_groups(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(10), 1))
    t.upsert(pa.table({"id": ["k00001"], "v": [2], "p": ["p2"]}, schema=SCHEMA))
    with pytest.raises(UsageError, match="unique keys"):
        build(t, 2)
    assert Table(str(root)).config.get(ENABLE_PROPERTY) is None


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(30), 1))
    assert main(["rli", "lookup", str(root), "k00001"]) == 2  # not built
    capsys.readouterr()
    assert main(["rli", "build", str(root), "--shards", "3", "--json"]) == 0
    built = json.loads(capsys.readouterr().out)
    assert built["entries"] == 30 and built["shards"] == 3
    assert main(["rli", "lookup", str(root), "k00001", "nope", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["index"] == "morlog"
    assert got["keys"]["nope"] is None and got["keys"]["k00001"]["partition"] == "p1"
    assert main(["rli", "verify", str(root), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    assert main(["rli", "build", str(root), "--shards", "0"]) == 2


def test_the_index_table_reads_as_a_hudi_table(tmp_path: Path) -> None:
    """The index is a Hudi merge-on-read table (version 6, no meta fields): hudi-rs reads
    the same entries."""
    hudi = pytest.importorskip("hudi", reason="hudi-rs is not installed (pip install .[bench])")
    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(100), 1))
    build(t, 2)
    t.upsert(_batch(range(90, 130), 2))
    t.delete(_batch(range(0, 5), 3).select(["id", "p"]))
    loc = index_location(t.location)
    got = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(loc.path).build().read())
    assert sorted(got.column("key").to_pylist()) == sorted(
        RecordIndex(Table(str(root))).entries().column("key").to_pylist())


@requires_fixtures
@pytest.mark.parametrize("src", tables(), ids=lambda p: p.name)
def test_on_hudi_tables(tmp_path: Path, src: Path) -> None:
    """Built on every Hudi fixture table (versions 6, 8, 9; metadata table kept true too),
    then updates in place and deletes by morlog's client: the index stays equal."""
    from morlog.logformat.blocks import META_FIELDS
    from morlog.logformat.virtual_keys import key_array

    root = tmp_path / "t"
    shutil.copytree(src, root)
    t = MorTable(str(root), WriteConfig(fsync=False))
    try:
        r = build(t, 4)
    except UsageError as exc:
        assert "unique keys" in exc.message  # a table Hudi's insert wrote a key twice into
        return
    rows = Table(str(root)).read()
    assert r.entries == rows.num_rows
    live = key_array(rows, Table(str(root)).key_field).to_pylist() if rows.num_rows else []
    probe = live[:50] + ["no-such-key"]
    _agree(root, probe)
    if rows.num_rows < 4:
        return
    data = rows.drop_columns([c for c in rows.column_names if c in META_FIELDS])
    t.upsert(data.slice(0, 3))  # updates in place: the index does not change
    _agree(root, probe)
    t.delete(data.slice(0, 2).select([c for c in t.keygen.required_columns
                                      if c in data.column_names]))
    _agree(root, probe)
    assert RecordIndex(Table(str(root))).lookup(live[:2]).as_dict() == dict.fromkeys(live[:2])


@settings(max_examples=10, deadline=None)
@given(keys=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=50),
       shards=st.integers(1, 40))
def test_shard_hash_is_xxh64_of_utf8_modulo_shards(keys: list[str], shards: int) -> None:
    import xxhash

    got = shards_of(pa.array(keys, pa.string()), shards).tolist()
    assert got == [xxhash.xxh64_intdigest(k.encode("utf-8"), seed=0) % shards for k in keys]


def test_spark_build_with_retried_tasks_and_spark_upserts(spark: Any, tmp_path: Path) -> None:
    """The distributed build (a task per data slice, a task per shard; every shard task's
    first attempt fails after writing its file) equals the table, and Spark upserts keep it
    true (their tagging tasks read it)."""
    from morlog.spark.write import build_record_index, upsert

    from .test_spark import _df, _fail_first_attempt

    path = str(tmp_path / "s")
    cfg = WriteConfig(fsync=False, max_file_size=2_000_000, small_file_limit=1_500_000,
                      record_size=100)
    kw: dict[str, Any] = dict(key="id", partition="region", ordering="ts", config=cfg)
    upsert(spark, _df(spark, range(400), 1), path, **kw)
    r = build_record_index(spark, path, 3, task_hook=_fail_first_attempt())
    assert r.entries == 400
    index_dir = index_location(Table(path).location).path
    bases = [n for n in Path(index_dir).iterdir() if n.suffix == ".parquet"]
    assert len(bases) == 3  # a retried shard task left no second file
    _agree(Path(path), [f"k{i:04d}" for i in range(0, 700, 3)])
    upsert(spark, _df(spark, range(300, 600), 2), path, **kw)
    dels = spark.createDataFrame([("k0003", "eu"), ("k0004", "us")], "id string, region string")
    upsert(spark, dels, path, operation="delete", **kw)
    _agree(Path(path), [f"k{i:04d}" for i in range(0, 700, 3)])


def test_services_on_the_index_shards(tmp_path: Path) -> None:
    """After enough commits the index's shards are log-compacted, compacted and cleaned
    inline (the index's own instants, which count once completed), and it stays exact;
    then the data table's own services (log compaction, compaction, clean) keep it so."""
    from morlog.writers.services.cleaning import clean
    from morlog.writers.services.compaction import compact
    from morlog.writers.services.logcompaction import log_compact

    root = tmp_path / "t"
    t = MorTable.create(str(root), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="v", config=WriteConfig(fsync=False, hoodie_options={
                            "hoodie.log.compaction.blocks.threshold": "2",
                            "hoodie.cleaner.commits.retained": "1"}))
    t.upsert(_batch(range(60), 1))
    build(t, 2)
    probe = [f"k{i:05d}" for i in range(0, 200, 3)]
    for n in range(12):
        t.upsert(_batch(range(100 + 5 * n, 105 + 5 * n), n + 2))
        t.upsert(_batch(range(n, n + 3), n + 2))  # updates in place: no index block
        if n % 4 == 3:
            t.delete(_batch([n], 0).select(["id", "p"]))
    index_dir = index_location(t.location).path
    names = [p.name for p in (Path(index_dir) / ".hoodie").iterdir()]
    done = {i.action for i in RecordIndex(Table(str(root))).raw_timeline.instants
            if i.is_completed}
    assert {"commit", "clean"} <= done  # the shards' compactions and a clean
    assert any(n.endswith(".logcompaction.requested") for n in names)
    assert len([n for n in Path(index_dir).iterdir() if n.suffix == ".parquet"]) == 4
    _agree(root, probe)
    assert main(["rli", "verify", str(root)]) == 0
    # the data table's services on top
    assert log_compact(t).results
    _agree(root, probe)
    assert compact(t).results
    _agree(root, probe)
    clean(t)
    _agree(root, probe)
    t.upsert(_batch(range(300, 310), 40))
    _agree(root, probe + ["k00305"])
    assert main(["rli", "verify", str(root)]) == 0


# --- the lookup's direct shard probe (RecordIndex.probe_shard) against the general merge ----


def _general(index: RecordIndex, s: Any) -> dict[str, tuple[str, str, str]]:
    """A shard's live entries by the general merge (``Table.read_slice``)."""
    t = index.table.read_slice(s, None, ["key", "partition", "file_id", "instant"])
    return {r["key"]: (r["partition"], r["file_id"], r["instant"]) for r in t.to_pylist()}


def _probe_agrees(root: Path, probe: list[str]) -> dict[str, int]:
    """Every shard's direct probe and read equal the general merge, and so does a lookup of
    ``probe`` (duplicates included), on one thread and on several. Returns the shapes of
    the shard slices seen."""
    index = RecordIndex(Table(str(root)))
    assert index._direct()
    shapes = {"base_only": 0, "base_and_logs": 0, "logs_only": 0, "delete_blocks": 0}
    want: dict[str, tuple[str, str, str]] = {}
    for s in index.slices().values():
        general = _general(index, s)
        want.update(general)
        direct = {r["key"]: (r["partition"], r["file_id"], r["instant"])
                  for r in index.read_shard(s).to_pylist()}
        assert direct == general
        keys = pa.array(sorted(set(probe)), pa.string())
        at, locs = index.probe_shard(s, keys)
        got = {keys[int(i)].as_py(): (r["partition"], r["file_id"], r["instant"])
               for i, r in zip(at.tolist(), locs.to_pylist(), strict=True)}
        assert got == {k: general[k] for k in keys.to_pylist() if k in general}
        kind = ("base_only" if not s.log_files else "logs_only" if s.base_file is None
                else "base_and_logs")
        shapes[kind] += 1
        d = index.table.slice_dir(s.partition)
        for log in s.log_files:
            from morlog.logformat.constants import BlockType
            from morlog.readers.logfile import LogFileReader

            with LogFileReader(index.table.storage.join(d, log)) as r:
                shapes["delete_blocks"] += sum(b.block_type == BlockType.DELETE
                                               for b in r.blocks())
    for threads in (1, 3):
        got = index.lookup(probe, threads=threads).as_dict()
        assert got == {k: None if k not in want else dict(zip(
            ("partition", "file_id", "instant"), want[k], strict=True)) for k in probe}
    return shapes


def test_direct_probe_equals_the_general_merge(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(400), 1))
    build(t, 4)
    probe = [f"k{i:05d}" for i in range(0, 900, 3)] + ["k00003", "k00003", "nope"]
    assert _probe_agrees(root, probe)["base_only"] == 4
    t.upsert(_batch(range(350, 500), 2))  # inserts: data blocks in every shard
    t.delete(_batch(range(0, 60), 3).select(["id", "p"]))  # delete blocks
    t.upsert(_batch(range(20, 30), 4))  # deleted keys placed again
    t.delete(_batch(range(20, 25), 5).select(["id", "p"]))  # and deleted once more
    shapes = _probe_agrees(root, probe)
    assert shapes["base_and_logs"] == 4 and shapes["delete_blocks"] > 0


def test_direct_probe_through_index_services(tmp_path: Path) -> None:
    """Many commits: the index's own log compaction (5 blocks) and compaction (10 delta
    commits) run inline; the probe reads what they leave, equal to the general merge."""
    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(100), 1))
    build(t, 2)
    for n in range(2, 16):
        t.upsert(_batch(range(n * 20, n * 20 + 30), n))
        if n % 4 == 0:
            t.delete(_batch(range(n, n + 3), n).select(["id", "p"]))
    index = RecordIndex(Table(str(root)))
    actions = {i.action for i in index.raw_timeline.instants if i.is_completed}
    assert {"commit", "clean"} <= actions, actions  # compaction and clean ran
    requested = {p.name.split(".")[1] for p in (Path(index.location.path) / ".hoodie").iterdir()
                 if p.name.endswith(".requested")}
    assert "logcompaction" in requested
    for s in index.slices().values():  # the clean kept at most two slices per shard
        files = [p.name for p in Path(index.location.path).iterdir()
                 if p.name.lstrip(".").startswith(s.file_id) and p.suffix == ".parquet"]
        assert len(files) <= 2
    _agree(root, [f"k{i:05d}" for i in range(0, 360, 2)])


def test_spark_lookup_by_shard(spark: Any, tmp_path: Path) -> None:
    from morlog.spark.source import lookup_record_index

    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(500), 1))
    build(t, 4)
    t.delete(_batch(range(0, 10), 2).select(["id", "p"]))
    keys = [f"k{i:05d}" for i in range(0, 600, 7)]
    df = spark.createDataFrame([(k, n) for n, k in enumerate(keys)], "key string, n long")
    out = lookup_record_index(df, str(root)).collect()
    assert sorted(r.n for r in out) == list(range(len(keys)))
    want = RecordIndex(Table(str(root))).lookup(keys).as_dict()
    got = {r.key: None if r._rli_file_id is None else {
        "partition": r._rli_partition, "file_id": r._rli_file_id, "instant": r._rli_instant}
        for r in out}
    assert got == want and got["k00007"] is None and got["k00014"] is not None


    probe = [f"k{i:05d}" for i in range(0, 400, 2)]
    for v in range(2, 16):
        t.upsert(_batch(range(100 + v * 10, 110 + v * 10), v))
        t.delete(_batch(range(v * 3, v * 3 + 2), v).select(["id", "p"]))
        _probe_agrees(root, probe)
    index = RecordIndex(Table(str(root)))
    actions = {i.action for i in index.raw_timeline.completed()}
    assert "commit" in actions  # a compaction of the index ran


def test_direct_probe_of_log_only_shards(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    """Shards that are logs only (no base file): the index written with new groups as
    logs (the writer makes base files today; the reader must not depend on it)."""
    import morlog.writers.client as client

    made = client.record_index_client

    def logs_only(*args: Any, **kwargs: Any) -> Any:
        mt = made(*args, **kwargs)
        mt.config.new_groups = "log"
        return mt

    monkeypatch.setattr(client, "record_index_client", logs_only)
    root = tmp_path / "t"
    t = _table(root)
    build(t, 3)  # an empty table: no shard has a slice yet
    t.upsert(_batch(range(200), 1))
    t.delete(_batch(range(0, 30), 2).select(["id", "p"]))
    t.upsert(_batch(range(10, 15), 3))
    shapes = _probe_agrees(root, [f"k{i:05d}" for i in range(0, 260, 2)])
    assert shapes["logs_only"] == 3 and shapes["delete_blocks"] > 0
    _agree(root, [f"k{i:05d}" for i in range(0, 260, 5)])


def test_sorted_hits_equal_hashing() -> None:
    """The binary search on a sorted base file's keys (``_sorted_hits``) finds what
    ``index_in`` finds, and declines what it cannot search."""
    import hashlib

    import numpy as np
    import pyarrow.compute as pc

    from morlog.readers.record_index import _sorted_hits

    def h(i: int) -> str:
        return hashlib.md5(str(i).encode()).hexdigest()

    base = pa.array(sorted(h(i) for i in range(0, 3000, 2)), pa.string())
    probe = pa.array([h(i) for i in range(1500, 4500)] + ["f" * 32, "0" * 32], pa.string())
    got = _sorted_hits(base, probe)
    assert got is not None
    pos = pc.index_in(probe, value_set=base)
    want = np.flatnonzero(pos.is_valid().to_numpy(zero_copy_only=False))
    assert got[0].tolist() == want.tolist() and got[0].size == 750
    assert got[1].tolist() == pos.drop_null().to_numpy().tolist()
    # sliced arrays (offsets) too
    assert _sorted_hits(base.slice(10), probe.slice(3)) is not None
    # declined: keys of other lengths, short keys, a shared 8-byte prefix, unsorted
    assert _sorted_hits(base, pa.array([h(1), "short-key"])) is None
    assert _sorted_hits(pa.array(["k0001", "k0002"]), pa.array(["k0001", "k0003"])) is None
    assert _sorted_hits(pa.array(["prefix00a", "prefix00b"]), pa.array(["prefix00a"])) is None
    lo, hi = sorted([h(1), h(2)])
    assert _sorted_hits(pa.array([hi, lo]), pa.array([lo])) is None


def test_direct_probe_with_long_keys(tmp_path: Path) -> None:
    """Keys of one length (32 hex digits): base files are searched, not hashed."""
    import hashlib

    def batch(ids: Any, v: int) -> pa.Table:
        ids = list(ids)
        return pa.table({"id": [hashlib.md5(str(i).encode()).hexdigest() for i in ids],
                         "v": [v] * len(ids), "p": [f"p{i % 3}" for i in ids]},
                        schema=SCHEMA)

    root = tmp_path / "t"
    t = _table(root)
    t.upsert(batch(range(600), 1))
    build(t, 4)
    probe = batch(range(0, 1200, 3), 0).column("id").to_pylist()
    _probe_agrees(root, probe)
    t.upsert(batch(range(500, 700), 2))
    t.delete(batch(range(0, 50), 3).select(["id", "p"]))
    shapes = _probe_agrees(root, probe + probe[:5])
    assert shapes["base_and_logs"] == 4 and shapes["delete_blocks"] > 0


def test_shard_vectors() -> None:
    """spec/vectors/rli/shards.json (spec/rli.md §1)."""
    doc = json.loads((Path(__file__).parent.parent / "spec" / "vectors" / "rli" /
                      "shards.json").read_text(encoding="utf-8"))
    assert len(doc["cases"]) >= 20
    for c in doc["cases"]:
        got = int(shards_of(pa.array([c["key"]], pa.string()), c["shards"])[0])
        assert got == c["shard"] and shard_file_id(got) == c["file_id"], c


def test_file_checksum_vectors() -> None:
    """spec/vectors/rli/file_checksum.json (spec/rli.md §1a): sealing the file written with
    the placeholder gives the sealed bytes; a reader accepts the sealed file and rejects
    every damaged one (a typed error naming the file)."""
    from morlog.logformat import file_checksum
    from morlog.logformat.errors import ChecksumError, ContentError

    doc = json.loads((Path(__file__).parent.parent / "spec" / "vectors" / "rli" /
                      "file_checksum.json").read_text(encoding="utf-8"))
    sealed = bytes.fromhex(doc["sealed_hex"])
    assert file_checksum.seal(bytes.fromhex(doc["unsealed_hex"])) == sealed
    at = doc["value_offset"]
    assert sealed[at:at + file_checksum.WIDTH].decode() == doc["value"]
    assert doc["value"] == f"{doc['crc32']}{doc['length']:016x}" and len(sealed) == doc["length"]
    assert len(doc["cases"]) >= 8
    for c in doc["cases"]:
        data = bytes.fromhex(c["file_hex"]) if "file_hex" in c else sealed
        damage = c.get("damage", {})
        if "flip" in damage:
            p = damage["flip"]
            data = data[:p] + bytes([data[p] ^ 0xFF]) + data[p + 1:]
        if "truncate" in damage:
            data = data[:damage["truncate"]]
        if c["ok"]:
            file_checksum.check_sealed(data, "shard.parquet")
            continue
        with pytest.raises(ContentError, match="shard.parquet") as err:
            file_checksum.check_sealed(data, "shard.parquet")
        if c.get("error") == "ChecksumError":
            assert isinstance(err.value, ChecksumError), c["name"]


# --- damaged shard files (issue 23: untyped pyarrow errors blocked every write) ------------


def _damaged_table(root: Path) -> MorTable:
    """A table with the index on whose shards have a base file and a log file each; new
    keys go to new file groups (a key the index lost would be written twice)."""
    t = _table(root, route_inserts=False)
    t.upsert(_batch(range(60), 1))
    build(t, 2)
    t.upsert(_batch(range(55, 75), 2))  # inserts: index log blocks
    return t


def _shard_files(root: Path) -> list[Path]:
    d = Path(index_location(Table(str(root)).location).path)
    return sorted(p for p in d.iterdir() if p.is_file())


def _damage(path: Path, how: str, at: float) -> None:
    data = bytearray(path.read_bytes())
    pos = min(len(data) - 1, int(at * len(data)))
    if how == "truncate":
        del data[pos:]
    else:
        data[pos] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_shard_probe_sees_every_log_write_while_another_reads_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The log writes the index's commits made to each shard (what a probe must read back,
    so that a log cut to nothing is found) are read once and shared by the shards' probes,
    which run on threads. They were memoised as a list published empty and filled after:
    a probe asking while another filled it got no expected writes, read its lost log as
    "no entries" and tagged its keys as new, so the upsert wrote them twice (the fuzz test
    below found it about once in 30 runs). Here one probe is held inside the read of the
    metadata of the commit that wrote the logs while the other asks."""
    import threading

    from morlog.readers.timeline import Timeline

    root = tmp_path / "t"
    _damaged_table(root)
    index = RecordIndex(Table(str(root)))
    slices = index.slices()
    assert sorted(slices) == [0, 1] and all(s.log_files for s in slices.values())
    read, inside, go = Timeline.metadata, threading.Event(), threading.Event()
    holder: list[int] = []

    last = max(i.requested for i in index.table.timeline.completed())

    def metadata(self: Timeline, instant: Any) -> dict[str, Any]:
        if threading.get_ident() in holder and instant.requested == last:
            inside.set()
            go.wait(10)
        return read(self, instant)

    monkeypatch.setattr(Timeline, "metadata", metadata)
    first: list[Any] = []

    def probe() -> None:
        holder.append(threading.get_ident())
        first.append(index.log_writes(slices[0]))

    worker = threading.Thread(target=probe)
    worker.start()
    assert inside.wait(10)
    second = index.log_writes(slices[1])  # asked while the other probe reads
    go.set()
    worker.join(10)
    assert [name for _, name in second] == slices[1].log_files
    assert [name for _, name in first[0]] == slices[0].log_files


def test_a_damaged_shard_base_file_is_typed_and_writes_go_on(tmp_path: Path) -> None:
    """Issue 23: a shard base file cut in half raised ``ArrowInvalid: Parquet magic bytes
    not found`` from tagging (the next upsert), lookup and verify (CLI exit 3). Now: a
    ContentError naming the file; tagging falls back to the table's files with a
    DamagedIndexWarning (a MorlogWarning); verify reports the shard (exit 1); a rebuild
    makes the index exact again."""
    from morlog.logformat.errors import ContentError, MorlogWarning
    from morlog.readers.record_index import DamagedIndexWarning

    root = tmp_path / "t"
    t = _damaged_table(root)
    base = next(p for p in _shard_files(root) if p.suffix == ".parquet"
                and p.name.startswith(shard_file_id(0)))
    _damage(base, "truncate", 0.5)
    keys = [f"k{i:05d}" for i in range(80)]
    with pytest.raises(ContentError) as err:
        RecordIndex(Table(str(root))).lookup(keys)
    assert base.name in str(err.value)
    assert issubclass(DamagedIndexWarning, MorlogWarning)
    with pytest.warns(DamagedIndexWarning, match=base.name):
        r = t.upsert(_batch(range(70, 90), 3))  # updates and inserts: not blocked
    assert (r.updates, r.inserts) == (5, 15)
    got = {x["id"]: x["v"] for x in Table(str(root)).read().to_pylist()}
    assert len(got) == 90 and got["k00071"] == 3 and got["k00001"] == 1
    v = verify(Table(str(root)))
    assert not v.ok and v.damaged and base.name in v.damaged[0]
    assert main(["rli", "verify", str(root)]) == 1
    assert main(["rli", "lookup", str(root), *keys[:5]]) == 2
    build(t, 2)
    _agree(root, keys + ["k00089"])


@settings(max_examples=40, deadline=None)
@given(which=st.integers(0, 50), how=st.sampled_from(["truncate", "flip"]),
       at=st.floats(0.0, 0.999))
def test_fuzzed_shard_files_raise_only_typed_errors(which: int, how: str, at: float) -> None:
    """A shard base file or log file truncated or with a byte flipped: lookup, verify and
    the CLI raise only the library's typed errors (exit 0, 1 or 2, never 3); lookup either
    finds the damage (a FormatError; verify then reports the shard, the upsert warns) or
    answers as before; an upsert still succeeds and reads back, each key once."""
    import tempfile
    import warnings

    from morlog.logformat.errors import FormatError
    from morlog.readers.record_index import DamagedIndexWarning

    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "t"
        t = _damaged_table(root)
        files = _shard_files(root)
        keys = [f"k{i:05d}" for i in range(80)]
        truth = RecordIndex(Table(str(root))).lookup(keys).as_dict()
        _damage(files[which % len(files)], how, at)
        try:
            found = RecordIndex(Table(str(root))).lookup(keys).as_dict() != truth
            assert not found, "the damaged shard answers wrong"
        except FormatError:
            found = True
        try:
            assert verify(Table(str(root))).damaged or not found
        except MorlogError:
            pass
        assert main(["rli", "verify", str(root)]) in (0, 1, 2)
        assert main(["rli", "lookup", str(root), "k00001", "k00070"]) in (0, 2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t.upsert(_batch(range(50, 95), 4))  # keys of base files, of logs, new ones
        assert not found or any(issubclass(w.category, DamagedIndexWarning) for w in caught)
        rows = Table(str(root)).read().to_pylist()
        got = {x["id"]: x["v"] for x in rows}
        assert len(rows) == len(got) == 95, "a key reads twice"
        assert all(got[f"k{i:05d}"] == 4 for i in range(50, 95))
        assert got["k00001"] == 1


#: every how-many bytes of a shard base file the sweep flips one (and each of the footer's
#: last 40 bytes); every how-many of those positions it also truncates the file there, and
#: runs an upsert (a position whose damage goes unseen always runs one)
_SWEEP_STEP = 19
_SWEEP_EVERY = 5


def _mutated(data: bytes, how: str, pos: int) -> bytes:
    """``data`` cut at ``pos`` (``truncate``) or with its byte there flipped."""
    return data[:pos] if how == "truncate" else data[:pos] + bytes([data[pos] ^ 0xFF]) + \
        data[pos + 1:]


def _answers(root: Path, keys: list[str], damaged: str) -> dict[str, Any] | None:
    """The index's answers for ``keys``; None when the lookup finds damage (a FormatError,
    which must name the file ``damaged``)."""
    from morlog.logformat.errors import FormatError

    try:
        return RecordIndex(Table(str(root))).lookup(keys).as_dict()
    except FormatError as exc:
        assert damaged in str(exc), exc
        return None


def _sweep_positions(size: int) -> list[tuple[str, int]]:
    at = sorted(set(range(0, size, _SWEEP_STEP)) | set(range(max(0, size - 40), size)))
    return [("flip", p) for p in at] + [("truncate", p) for p in at[::_SWEEP_EVERY]]


def test_every_byte_of_a_shard_base_file_is_covered(tmp_path: Path) -> None:
    """A deterministic sweep over one shard base file (a flipped byte every _SWEEP_STEP
    bytes and at each of the footer's last 40, truncations): a flip that still decoded
    (a key's bytes, a dictionary index, a row count of the footer) made the index answer
    wrong, and the next upsert wrote a key the table held a second time. Now every change
    is damage: lookup raises a typed error naming the file, verify reports the shard, the
    upsert warns (DamagedIndexWarning), tags through the table's files and writes each key
    once."""
    import warnings

    from morlog.readers.record_index import DamagedIndexWarning

    root = tmp_path / "t"
    _damaged_table(root)
    keys = [f"k{i:05d}" for i in range(80)]
    truth = RecordIndex(Table(str(root))).lookup(keys).as_dict()
    base = next(p for p in _shard_files(root) if p.suffix == ".parquet"
                and p.name.startswith(shard_file_id(0)))
    data = base.read_bytes()
    wrong: list[str] = []
    for n, (how, pos) in enumerate(_sweep_positions(len(data))):
        base.write_bytes(_mutated(data, how, pos))
        got = _answers(root, keys, base.name)
        if got is not None and got != truth:
            wrong.append(f"{how}@{pos}: lookup answers differ")
        if got is None and not verify(Table(str(root))).damaged:
            wrong.append(f"{how}@{pos}: verify reports no damage")
        if got is None and n % _SWEEP_EVERY:
            continue
        copy = tmp_path / "upsert"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(root, copy)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            MorTable(str(copy), WriteConfig(fsync=False, route_inserts=False)).upsert(
                _batch(range(50, 95), 4))
        rows = Table(str(copy)).read().to_pylist()
        if len(rows) != len({x["id"] for x in rows}) or len(rows) != 95:
            wrong.append(f"{how}@{pos}: {len(rows)} rows for "
                         f"{len({x['id'] for x in rows})} keys")
        if got is None and not any(issubclass(w.category, DamagedIndexWarning)
                                   for w in caught):
            wrong.append(f"{how}@{pos}: the upsert did not warn")
    base.write_bytes(data)
    assert not wrong, wrong


def test_only_the_index_tables_base_files_are_sealed(tmp_path: Path) -> None:
    """spec/rli.md §1a: the build and the index's compaction seal every base file of the
    index (the footer entry checks); the data table's base files carry no such entry."""
    import pyarrow.parquet as pq

    from morlog.logformat import file_checksum

    root = tmp_path / "t"
    t = _damaged_table(root)
    assert Table(index_location(Table(str(root)).location)).sealed_base_files
    assert not Table(str(root)).sealed_base_files
    t.record_index_client().compact()
    index_bases = [p for p in _shard_files(root) if p.suffix == ".parquet"]
    assert len(index_bases) == 4  # the build's and the compaction's
    for p in index_bases:
        file_checksum.check_sealed(p.read_bytes(), str(p))
    data_bases = [p for p in root.rglob("*.parquet") if ".hoodie" not in p.parts]
    assert data_bases
    for p in data_bases:
        assert file_checksum.KEY not in (pq.ParquetFile(p).metadata.metadata or {})


def test_index_compaction_does_not_seal_a_damaged_base_file(tmp_path: Path) -> None:
    """A shard base file changed by a byte so that it still decodes, to other entries:
    compacting that shard (its base file and logs merged into a new base file) read it
    unchecked and wrote the wrong entries into a new base file with a valid checksum.
    Every read of a base file of the index table checks it: the compaction fails
    (ChecksumError naming the file) and writes nothing."""
    import pyarrow.parquet as pq

    from morlog.logformat.errors import ContentError

    root = tmp_path / "t"
    t = _damaged_table(root)
    base = next(p for p in _shard_files(root) if p.suffix == ".parquet"
                and p.name.startswith(shard_file_id(0)))
    data = base.read_bytes()
    want = pq.read_table(pa.BufferReader(data))
    for pos in range(4, len(data) - 8):
        flipped = _mutated(data, "flip", pos)
        try:
            got = pq.read_table(pa.BufferReader(flipped))
            got.validate(full=True)
        except Exception:  # noqa: BLE001 - looking for a change that still decodes
            continue
        if not got.equals(want):
            break
    else:
        pytest.skip("no single byte change of this file still decodes")
    base.write_bytes(flipped)
    before = sorted(p.name for p in _shard_files(root))
    idx = t.record_index_client()
    with pytest.raises(ContentError, match=base.name):
        idx.compact()
    assert not [n for n in (p.name for p in _shard_files(root)) if n not in before
                and n.endswith(".parquet")]


def test_bytes_of_a_shard_log_are_damage_or_change_nothing(tmp_path: Path) -> None:
    """A sweep over a shard log (each of its first 40 bytes, then every 13th; truncations
    every 61st): lookup raises a FormatError naming the log or answers as before. A flipped
    byte of the first block's log format version (offset 14) raised
    UnsupportedVersionError, which is no FormatError: tagging did not take it as damage
    and the upsert failed. Now it is a ContentError; the upsert warns and goes on."""

    from morlog.logformat.errors import ContentError

    root = tmp_path / "t"
    t = _damaged_table(root)
    keys = [f"k{i:05d}" for i in range(80)]
    truth = RecordIndex(Table(str(root))).lookup(keys).as_dict()
    log = next(p for p in _shard_files(root) if ".log." in p.name)
    data = log.read_bytes()
    at = sorted(set(range(40)) | set(range(0, len(data), 13)))
    wrong: list[str] = []
    for how, pos in [("flip", p) for p in at] + [("truncate", p)
                                                 for p in range(0, len(data), 61)]:
        log.write_bytes(_mutated(data, how, pos))
        try:
            got = _answers(root, keys, log.name)
        except MorlogError as exc:
            wrong.append(f"{how}@{pos}: {type(exc).__name__}, not a FormatError")
            continue
        if got is None:
            continue
        if got != truth:
            wrong.append(f"{how}@{pos}: lookup answers differ")
    assert not wrong, wrong
    log.write_bytes(data[:14] + bytes([data[14] ^ 0xFF]) + data[15:])
    with pytest.raises(ContentError, match="log format version"):
        RecordIndex(Table(str(root))).lookup(keys)
    _upsert_past_the_damage(t, root, _batch(range(50, 95), 4), 95)


def test_a_truncated_shard_log_is_damage_not_lost_entries(tmp_path: Path) -> None:
    """A shard log cut inside its block: readers skip a corrupt block (a writer that died
    mid-block), so the index silently lost the block's entries and an upsert of those keys
    wrote them a second time. Now a corrupt block nothing explains is a ContentError naming
    the log; writes tag through the files and the keys stay once."""
    from morlog.logformat.errors import ContentError

    root = tmp_path / "t"
    t = _damaged_table(root)
    log = next(p for p in _shard_files(root) if ".log." in p.name)
    _damage(log, "truncate", 0.5)
    with pytest.raises(ContentError, match="damaged block|lost the block") as err:
        RecordIndex(Table(str(root))).lookup([f"k{i:05d}" for i in range(80)])
    assert log.name in str(err.value)
    v = verify(Table(str(root)))
    assert v.damaged and not v.missing
    with pytest.warns(UserWarning):
        t.upsert(_batch(range(55, 75), 5))
    rows = Table(str(root)).read().to_pylist()
    assert len(rows) == len({x["id"] for x in rows}) == 75
    build(t, 2)
    _agree(root, [f"k{i:05d}" for i in range(80)])


# --- the oracle: every operation with the index on, against a dict model ---------------------

_KEYS = st.integers(0, 9)
_PART = st.sampled_from(["a", "b", "c"])
_ROWS = st.lists(st.tuples(_KEYS, _PART, st.integers(0, 3)), min_size=1, max_size=5,
                 unique_by=lambda r: r[0])
_OPS = st.one_of(
    st.tuples(st.sampled_from(["upsert", "insert", "bulk_insert"]), st.booleans(), _ROWS),
    st.tuples(st.just("delete"), _PART, st.lists(_KEYS, min_size=1, max_size=4, unique=True)),
    st.tuples(st.sampled_from(["insert_overwrite", "insert_overwrite_table"]), st.just(None),
              _ROWS),
    st.tuples(st.just("delete_partition"), _PART, st.just(None)))
_MSCHEMA = pa.schema([("id", pa.string()), ("p", pa.string()), ("ts", pa.int64()),
                      ("v", pa.int64())])


def _oracle_write(model: dict[str, tuple[str, str, int, int]], move: bool,
                  rows: list[tuple[int, str, int]], n: int) -> None:
    """Hudi's global index: a new key goes to its partition; a key living there is updated
    (the greater ts wins, the later on ties); a key living in another partition moves
    (``move``: a delete there and an insert, unless the stored record has the greater ts
    and so wins Hudi's merge: it stays) or is updated where it lives (written there with
    its own partition column)."""
    for k, p, ts in rows:
        key = f"k{k}"
        old = model.get(key)
        if old is None:
            model[key] = (p, p, ts, n)
        elif old[0] != p and move:
            if ts >= old[2]:
                model[key] = (p, p, ts, n)
        elif ts >= old[2]:
            model[key] = (old[0], p, ts, n)


@settings(max_examples=30, deadline=None)
@given(ops=st.lists(_OPS, min_size=1, max_size=10), routed=st.booleans())
def test_every_operation_keeps_the_index_exact(ops: list[tuple[Any, Any, Any]],
                                               routed: bool) -> None:
    """Issue 23's oracle: upsert, insert and bulk_insert with keys given other partitions
    (both values of hoodie.record.index.update.partition.path), deletes naming any
    partition, insert_overwrite(_table) and delete_partition, on a table with morlog's
    record index: after every step the snapshot equals the dict model (key -> stored
    partition, partition column, ts, step), ``rli verify`` is clean, and tagging through
    the index places every key. A refused insert_overwrite changes no byte."""
    import tempfile

    from morlog.writers.options import OPERATIONS

    from .test_table_model import _snapshot_files

    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "t"
        cfg = dict(fsync=False, route_inserts=routed)
        t = MorTable.create(str(root), _MSCHEMA, key_field="id", partition_field="p",
                            ordering_field="ts", config=WriteConfig(**cfg))  # type: ignore[arg-type]
        t.upsert(pa.table({"id": ["k0", "k1"], "p": ["a", "b"], "ts": [0, 0], "v": [0, 0]},
                          schema=_MSCHEMA))
        build(t, 3)
        tables = {m: MorTable(str(root), WriteConfig(**cfg, hoodie_options={  # type: ignore[arg-type]
            MOVE: str(m).lower()})) for m in (False, True)}
        model: dict[str, tuple[str, str, int, int]] = {"k0": ("a", "a", 0, 0),
                                                       "k1": ("b", "b", 0, 0)}
        for n, (op, arg, rows) in enumerate(ops, start=1):
            batch = None if rows is None or op == "delete" else pa.table(
                {"id": [f"k{k}" for k, _, _ in rows], "p": [p for _, p, _ in rows],
                 "ts": [ts for *_, ts in rows], "v": [n] * len(rows)}, schema=_MSCHEMA)
            if op in ("upsert", "insert", "bulk_insert"):
                assert batch is not None
                getattr(tables[arg], OPERATIONS[op])(batch)
                _oracle_write(model, arg, rows, n)
            elif op == "delete":
                gone = [f"k{k}" for k in rows]
                t.delete(pa.table({"id": gone, "p": [arg] * len(gone)}))
                for k in gone:
                    model.pop(k, None)
            elif op == "insert_overwrite":
                assert batch is not None
                parts = {p for _, p, _ in rows}
                if any(f"k{k}" in model and model[f"k{k}"][0] not in parts
                       for k, _, _ in rows):
                    before = _snapshot_files(root)
                    with pytest.raises(UsageError, match="does not replace"):
                        t.insert_overwrite(batch)
                    assert _snapshot_files(root) == before
                else:
                    t.insert_overwrite(batch)
                    model = {k: x for k, x in model.items() if x[0] not in parts}
                    model.update({f"k{k}": (p, p, ts, n) for k, p, ts in rows})
            elif op == "insert_overwrite_table":
                assert batch is not None
                t.insert_overwrite_table(batch)
                model = {f"k{k}": (p, p, ts, n) for k, p, ts in rows}
            else:
                t.delete_partitions([arg])
                model = {k: x for k, x in model.items() if x[0] != arg}
            got = {r["id"]: (r["_hoodie_partition_path"], r["p"], r["ts"], r["v"])
                   for r in Table(str(root)).read().to_pylist()}
            assert Table(str(root)).read().num_rows == len(got), "a key reads twice"
            assert got == model, (n, op, arg, rows)
            v = verify(Table(str(root)))
            assert v.ok, v.as_dict(5)
            tags = KeyTagger(Table(str(root))).tag([f"k{k}" for k in range(10)])
            assert tags.stats.morlog_index_shards > 0 or not model
            assert {k: (x or {}).get("partition") for k, x in tags.as_dict().items()} == {
                f"k{k}": model[f"k{k}"][0] if f"k{k}" in model else None for k in range(10)}


@pytest.mark.parametrize("name", ["v8_trips_8i3u1d/v8_trips_8i3u1d",
                                  "v9_txns_simple_meta/v9_txns_simple_meta"],
                         ids=lambda n: n.split("/")[0])
def test_lookup_through_hudis_record_index(name: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 23: ``rli lookup`` on a table with Hudi's own record_index (metadata table)
    said "no morlog record index". It answers through that index and says so."""
    from morlog.logformat.blocks import RECORD_KEY_FIELD

    from .hudi_fixtures import fixture_table

    path = fixture_table(name)
    keys = [str(k) for k in Table(str(path)).read(columns=[RECORD_KEY_FIELD])
            .column(RECORD_KEY_FIELD).to_pylist()[:5]] + ["no-such-key"]
    want = KeyTagger(Table(str(path)), use_record_index=False,
                     use_morlog_index=False).tag(keys).as_dict()
    assert main(["rli", "lookup", str(path), *keys, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["index"] == "hudi"
    assert {k: None if x is None else {"partition": x["partition"], "file_id": x["file_id"]}
            for k, x in got["keys"].items()} == want
    assert main(["rli", "lookup", str(path), keys[0]]) == 0
    assert "answered by Hudi's record index" in capsys.readouterr().out


def test_spark_writes_with_keys_in_other_partitions(spark: Any, tmp_path: Path) -> None:
    """Spark with the index on: the distributed upsert writes a key given another partition
    where it lives (update.partition.path false) and deletes it wherever it lives; with the
    option true it moves it (a delete where it lives, an insert in its partition) unless the
    stored record has the greater ordering value; ``format("morlog")`` inserts
    (bulk_insert) move keys too. ``rli verify`` is clean after each, every key reads
    once."""
    from morlog.spark.write import upsert

    from .test_spark import _df

    path = str(tmp_path / "s")
    cfg = WriteConfig(fsync=False)
    kw: dict[str, Any] = dict(key="id", partition="region", ordering="ts", config=cfg)
    upsert(spark, _df(spark, range(20), 1), path, **kw)  # k0001 in eu, k0002 in us
    build(MorTable(path, cfg), 2)
    schema = "id string, region string, ts long, amount double"
    swapped = spark.createDataFrame([("k0001", "us", 2, 1.0), ("k0002", "eu", 2, 2.0)], schema)
    upsert(spark, swapped, path, operation="insert", **kw)

    def where() -> dict[str, tuple[str, str, int]]:
        rows = Table(path).read().to_pylist()
        assert len(rows) == len({r["id"] for r in rows}), "a key reads twice"
        return {r["id"]: (r["_hoodie_partition_path"], r["region"], r["ts"]) for r in rows}

    assert where()["k0001"] == ("eu", "us", 2) and where()["k0002"] == ("us", "eu", 2)
    assert main(["rli", "verify", path]) == 0
    mover = WriteConfig(fsync=False, hoodie_options={MOVE: "true"})
    moving = spark.createDataFrame([("k0001", "us", 3, 1.0), ("k0002", "eu", 1, 2.0),
                                    ("k0005", "us", 3, 5.0), ("k0030", "eu", 3, 3.0)], schema)
    upsert(spark, moving, path, **{**kw, "config": mover})
    got = where()
    assert got["k0001"] == ("us", "us", 3)  # moved
    assert got["k0002"] == ("us", "eu", 2)  # the stored record (ts 2 > 1) stays
    assert got["k0005"] == ("us", "us", 3) and got["k0030"] == ("eu", "eu", 3)
    assert main(["rli", "verify", path]) == 0
    dels = spark.createDataFrame([("k0003", "us")], "id string, region string")
    upsert(spark, dels, path, operation="delete", **kw)  # k0003 lives in eu
    assert "k0003" not in where() and main(["rli", "verify", path]) == 0
    (spark.createDataFrame([("k0004", "eu", 3, 4.0)], schema).write
     .format("morlog").option("hoodie.datasource.write.operation", "bulk_insert")
     .option(MOVE, "true").mode("append").save(path))
    assert where()["k0004"] == ("eu", "eu", 3)
    assert main(["rli", "verify", path]) == 0


@pytest.mark.parametrize("move", [False, True])
def test_spark_upsert_combines_a_keys_copies_bound_for_several_partitions(
        spark: Any, tmp_path: Path, move: bool) -> None:
    """With a global index, copies of one key headed for several partitions are one record
    (Hudi's ``HoodieWriteHelper.deduplicateRecords`` combines by key alone then): the
    distributed upsert keeps the copy with the greatest ordering value, whichever input
    partition it came from, and writes it where the write client writes it (moved or not).
    The client on a copy of the table is the oracle; no key reads twice."""
    from morlog.spark.write import upsert

    from .test_spark import _df

    path = tmp_path / "s"
    cfg = WriteConfig(fsync=False, hoodie_options={MOVE: str(move).lower()})
    kw: dict[str, Any] = dict(key="id", partition="region", ordering="ts", config=cfg)
    upsert(spark, _df(spark, range(20), 1), str(path), **kw)  # k0001 in eu, k0002 in us
    build(MorTable(str(path), cfg), 2)
    shutil.copytree(path, tmp_path / "client")
    rows = [("k0001", "us", 3, 1.0), ("k0001", "eu", 2, 9.0),  # lives in eu: us wins
            ("k0002", "eu", 1, 2.0), ("k0002", "us", 4, 8.0),  # lives in us: us wins
            ("k0003", "us", 5, 3.0), ("k0003", "eu", 5, 7.0),  # a tie: the later row
            ("k0050", "eu", 1, 5.0), ("k0050", "us", 2, 6.0)]  # new: us wins
    schema = "id string, region string, ts long, amount double"
    upsert(spark, spark.createDataFrame(rows, schema), str(path), **kw)
    MorTable(str(tmp_path / "client"), cfg).upsert(
        pa.Table.from_pylist([dict(zip(("id", "region", "ts", "amount"), r, strict=True))
                              for r in rows]))

    def where(root: Path) -> dict[str, tuple[str, str, int, float]]:
        got = Table(str(root)).read().to_pylist()
        assert len(got) == len({r["id"] for r in got}), "a key reads twice"
        return {r["id"]: (r["_hoodie_partition_path"], r["region"], r["ts"], r["amount"])
                for r in got}

    spark_rows, client_rows = where(path), where(tmp_path / "client")
    assert spark_rows == client_rows
    assert spark_rows["k0050"] == ("us", "us", 2, 6.0)
    assert spark_rows["k0001"] == (("us", "us", 3, 1.0) if move else ("eu", "us", 3, 1.0))
    assert spark_rows["k0003"][3] == 7.0
    assert main(["rli", "verify", str(path)]) == 0


def test_an_entry_naming_no_file_group_of_the_table_is_not_trusted(tmp_path: Path) -> None:
    """A damaged entry that decodes (a flipped byte in a file id, even a NUL: an untyped
    ValueError from the file system before) names a file group the table does not have:
    writers warn and tag through the table's files."""
    from morlog.readers.record_index import DamagedIndexWarning
    from morlog.writers.client import record_index_client

    root = tmp_path / "t"
    t = _table(root, route_inserts=False)
    t.upsert(_batch(range(6), 1))
    build(t, 2)
    idx = record_index_client(t.location, False)
    idx.upsert(pa.table({"key": ["k00001", "k00002"], "partition": ["p1", "p2\x00"],
                         "file_id": ["nope\x00-0", "x-0"], "instant": ["1", "1"]},
                        schema=idx.data_schema))
    with pytest.warns(DamagedIndexWarning, match="does not have"):
        r = t.upsert(_batch([1, 2, 9], 2))
    assert (r.updates, r.inserts) == (2, 1)
    rows = Table(str(root)).read().to_pylist()
    assert len(rows) == len({x["id"] for x in rows}) == 7
    assert main(["rli", "verify", str(root)]) == 1
    build(t, 2)
    _agree(root, [f"k{i:05d}" for i in range(10)])


def test_a_shard_log_file_gone_from_the_listing_is_damage(tmp_path: Path) -> None:
    """A shard's log file deleted (or cut to nothing and left out of a listing): the
    commit metadata says an index instant wrote it, so lookup and verify report the shard
    damaged instead of answering without its entries (they did: the expected log writes
    were only those of the files listed), and the next upsert tags through the table's
    files and writes no key twice."""

    from morlog.logformat.errors import FormatError

    root = tmp_path / "t"
    t = _damaged_table(root)
    log = [p for p in _shard_files(root) if p.name.startswith(".") and ".log." in p.name][-1]
    log.unlink()
    keys = [f"k{i:05d}" for i in range(80)]
    with pytest.raises(FormatError) as err:
        RecordIndex(Table(str(root))).lookup(keys)
    assert log.name in str(err.value)
    _upsert_past_the_damage(t, root, _batch(range(60, 90), 5), 90)


def _upsert_past_the_damage(t: Any, root: Path, batch: pa.Table, total: int) -> None:
    """The index reads as damaged; an upsert warns (DamagedIndexWarning), falls back to the
    file probes and leaves ``total`` rows, one a key."""
    import warnings

    from morlog.readers.record_index import DamagedIndexWarning

    assert verify(Table(str(root))).damaged
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t.upsert(batch)
    assert any(issubclass(w.category, DamagedIndexWarning) for w in caught)
    rows = Table(str(root)).read().to_pylist()
    assert len(rows) == len({r["id"] for r in rows}) == total
