"""Log compaction (issue 13, RFC-48, spec/services.md §3): morlog's tables of versions 6, 8
and 9 and the fixture tables Hudi wrote. After a log compaction the table reads as before at
every retained instant and tags keys as before (the new blocks' index is exact: keys deleted
or rolled back in the replaced blocks are gone from it), the timeline holds Hudi's records,
the metadata table stays true; the scenarios of RFC-48 (a writer between plan and
execution, a failed and a killed attempt, output cut into several blocks, a compaction
scheduled meanwhile) and chains of log compactions."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.constants import BlockType, HeaderKey
from morlog.logformat.errors import MorlogError, UsageError
from morlog.logformat.naming import LogFileName
from morlog.logformat.timeline_meta import (
    COMPACTION_PLAN_SCHEMA,
    COMPACTION_PLAN_SCHEMA_014,
    LOG_COMPACTION_EXECUTOR,
    decode_avro,
    decode_avro_as,
)
from morlog.readers.logfile import LogFileReader
from morlog.readers.lookup import KeyTagger
from morlog.readers.probe import SliceProbe
from morlog.readers.slice_index import read_slice_index
from morlog.readers.storage import LocalFileSource
from morlog.readers.table import FileSlice, Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig
from morlog.writers.services.compaction import compact, schedule_compaction
from morlog.writers.services.logcompaction import (
    LogCompactionSettings,
    choose_run,
    inline_log_compaction,
    log_compact,
    pending_log_compactions,
    plan_log_compaction,
    run_log_compaction,
    schedule_log_compaction,
)

from .hudi_fixtures import tables
from .test_real_table_writes import _copy, _hudi_rs, check_metadata_table, write_three

SCHEMA = pa.schema([("id", pa.string()), ("p", pa.string()), ("ts", pa.int64()),
                    ("v", pa.float64())])
EXAMPLES = {"ci": 60, "slow": 2000}.get(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"), 15)


def _key(k: int) -> str:
    return f"k{k:03d}"


def _batch(keys: list[int], ts: int) -> pa.Table:
    return pa.table({"id": pa.array([_key(k) for k in keys]),
                     "p": pa.array(["a" if k % 2 else "b" for k in keys]),
                     "ts": pa.array([ts] * len(keys), pa.int64()),
                     "v": pa.array([float(k * 10 + ts) for k in keys])}, schema=SCHEMA)


def _rows(t: pa.Table) -> list[dict[str, Any]]:
    return sorted(t.to_pylist(), key=lambda r: r["id"]) if t.num_rows else []


def _create(path: Path, version: int, carrier: str = "avro", *, event_time: bool = True,
            options: dict[str, str] | None = None) -> MorTable:
    return MorTable.create(str(path), SCHEMA, key_field="id", partition_field="p",
                           ordering_field="ts", table_version=version,
                           event_time_ordering=event_time,
                           config=WriteConfig(carrier=carrier,  # type: ignore[arg-type]
                                              hoodie_options=options or {}))


def _history(t: MorTable) -> None:
    """A base file per group, then eight delta commits: updates (newer and older ordering
    values), deletes with and without an ordering value, re-inserts, keys inserted into the
    logs and deleted there again (k050..k053)."""
    t.upsert(_batch(list(range(20)), 5))
    t.upsert(_batch([1, 2, 3, 50, 51, 52, 53], 6))  # k050.. go to the groups' logs
    t.upsert(_batch([4, 5, 6], 7))
    t.upsert(_batch([1, 7], 3))  # older ordering value: no change
    t.delete(_batch([2, 50, 51], 9).select(["id", "p", "ts"]))
    t.delete(_batch([52, 53, 8], 0).select(["id", "p"]))  # natural deletes
    t.upsert(_batch([8, 9, 10, 60], 11))  # k008 back after a natural delete, k060 new
    t.upsert(_batch([2, 11], 12))  # k002 back after a delete
    t.upsert(_batch([12, 13, 14], 13))


KEYS = [_key(k) for k in range(70)]


def _snapshot(path: Path) -> dict[str | None, tuple[list[dict[str, Any]], dict[str, Any]]]:
    """Rows and tags as of every completed instant and now."""
    view = Table(str(path))
    out: dict[str | None, tuple[list[dict[str, Any]], dict[str, Any]]] = {}
    for i in [None, *[x.requested for x in view.timeline.completed()]]:
        out[i] = (_rows(view.read(as_of=i)), KeyTagger(view, i).tag(KEYS).as_dict())
    return out


def _log_blocks(path: Path, s: FileSlice) -> list[tuple[str, Any]]:
    d = path / s.partition if s.partition else path
    out = []
    for name in s.log_files:
        with LogFileReader(LocalFileSource(str(d / name))) as r:
            out += [(name, b) for b in r.blocks()]
    return out


def _timeline(path: Path, version: int) -> Path:
    return path / ".hoodie" / ("timeline" if version >= 8 else "")


def _check_same(path: Path, before: dict[str | None, Any], instant: str, *,
                exact: bool = True) -> None:
    """Rows equal at every instant. Tags: every key live at an instant keeps its file group
    as of that instant, a key never written is new. Now (``exact``: the new blocks hold the
    slice's stored index) a key that is in no base file and live in no log is new: the
    index no longer holds keys deleted in the replaced blocks; else it may still."""
    after = _snapshot(path)
    assert after.keys() >= before.keys()
    in_base = _base_keys(path)
    for i, (rows, tags) in before.items():
        assert after[i][0] == rows, i
        live = {r["id"] for r in rows}
        now = after[i][1]
        for k in KEYS:
            if k in live:
                assert now[k] == tags[k], (i, k)
            elif tags[k] is None:
                assert now[k] is None, (i, k)  # never more than before
            elif i is None and exact and k not in in_base:
                assert now[k] is None, k  # deleted in the logs: gone from the index
            else:
                assert now[k] in (None, tags[k]), (i, k)


def _base_keys(path: Path) -> set[str]:
    import pyarrow.parquet as pq

    view = Table(str(path))
    out: set[str] = set()
    for s in view.file_slices():
        if s.base_file:
            d = path / s.partition if s.partition else path
            out |= set(pq.read_table(d / s.base_file, columns=["_hoodie_record_key"])
                       .column(0).to_pylist())
    return out


# --- reading as before, timeline, new blocks ------------------------------------------------


@pytest.mark.parametrize("carrier", ["avro", "parquet"])
@pytest.mark.parametrize("version", [6, 8, 9])
def test_log_compaction_reads_and_tags_as_before(tmp_path: Path, version: int,
                                                 carrier: str) -> None:
    path = tmp_path / "t"
    # the output block type is the log compaction's own setting (Parquet unless set): each
    # carrier's table gets the other output type
    out_format = "parquet" if carrier == "avro" else "avro"
    t = _create(path, version, carrier,
                options={"morlog.log.compaction.block.format": out_format})
    _history(t)
    before = _snapshot(path)
    old = {s.file_id: s for s in Table(str(path)).file_slices()}
    tags_before = before[None][1]
    # before: keys inserted and deleted in the logs are still tagged (the superset index)
    assert tags_before[_key(50)] is not None and tags_before[_key(52)] is not None
    report = log_compact(t)
    assert len(report.results) == 1
    res = report.results[0]
    L = res.instant
    _check_same(path, before, L)
    view = Table(str(path))
    assert view.timeline.pending() == []
    # the timeline: Hudi's plan, an empty inflight, a completed deltacommit (LOG_COMPACT)
    tl = _timeline(path, version)
    schema = COMPACTION_PLAN_SCHEMA_014 if version == 6 else COMPACTION_PLAN_SCHEMA
    plan = decode_avro_as((tl / f"{L}.logcompaction.requested").read_bytes(), schema)
    assert plan["strategy"]["compactorClassName"] == LOG_COMPACTION_EXECUTOR
    assert plan["preserveHoodieMetadata"] is True and plan["version"] == 2
    assert plan["extraMetadata"] == {"morlog.writer": "1"}
    assert {o["fileId"] for o in plan["operations"]} == set(old)
    for o in plan["operations"]:
        s = old[o["fileId"]]
        assert o["deltaFilePaths"] == s.log_files and o["dataFilePath"] == s.base_file
        assert o["baseInstantTime"] == s.base_instant
    assert (tl / f"{L}.logcompaction.inflight").read_bytes() == b""
    done = [p for p in tl.iterdir() if p.name.startswith(L) and p.name.endswith(".deltacommit")]
    assert len(done) == 1
    data = done[0].read_bytes()
    meta = json.loads(data) if version == 6 else decode_avro(data)
    assert meta["compacted"] is True and meta["operationType"] == "LOG_COMPACT"
    stats = [s for ss in meta["partitionToWriteStats"].values() for s in ss]
    assert sorted(s["path"].rsplit("/", 1)[-1] for s in stats) == sorted(
        n for g in res.compacted for n in g[2])
    for stat in stats:
        assert stat["prevCommit"] == old[stat["fileId"]].base_instant
        assert stat["fileSizeInBytes"] == (path / stat["path"]).stat().st_size
    # the new blocks: one new log file per group, every block of instant L listing the
    # replaced instants newest first
    for part, fid, names, replaced in res.compacted:
        s = old[fid]
        instants = sorted({b.instant for _, b in _log_blocks(path, s)
                           if b.block_type != BlockType.COMMAND})
        assert replaced == sorted(instants, reverse=True)
        (name,) = names
        ln = LogFileName.parse(name)
        if version >= 8:
            assert ln.instant == L and ln.version == 1
        else:
            assert ln.instant == s.base_instant
            assert ln.version == max(LogFileName.parse(n).version for n in s.log_files) + 1
        d = path / part
        with LogFileReader(LocalFileSource(str(d / name))) as r:
            blocks = list(r.blocks())
        assert blocks and all(b.instant == L for b in blocks)
        assert all(b.header.get(HeaderKey.COMPACTED_BLOCK_TIMES) == ",".join(replaced)
                   for b in blocks)
        kinds = [b.block_type for b in blocks]
        data_kind = BlockType.PARQUET_DATA if out_format == "parquet" else BlockType.AVRO_DATA
        assert set(kinds) <= {data_kind, BlockType.DELETE} and data_kind in kinds
    # the new files are part of the latest slices
    for s in view.file_slices():
        assert any(n in s.log_files for g in res.compacted if g[1] == s.file_id for n in g[2])


def test_the_new_blocks_and_their_order(tmp_path: Path) -> None:
    """Event-time ordering: the natural delete a surviving record follows (k008) in a block
    before the records; the records sorted by key; the deleted keys' delete records as read
    (ordering value kept), one delete block per ordering-value kind (hudi-rs refuses mixed
    ones), sorted by key."""
    from morlog.logformat.delete_content import OrderingValue

    path = tmp_path / "t"
    t = _create(path, 9, options={"morlog.log.compaction.block.format": "avro"})
    _history(t)
    res = log_compact(t).results[0]
    got = {}
    for part, _, (name,), _ in res.compacted:
        with LogFileReader(LocalFileSource(str(path / part / name))) as r:
            got[part] = [("D", [(x.record_key, x.ordering_value) for x in b.delete_records()])
                         if b.block_type == BlockType.DELETE
                         else ("R", b.to_arrow().column("id").to_pylist()) for b in r.blocks()]
    nat, nine = OrderingValue("int", 0), OrderingValue("long", 9)
    assert got["a"] == [("R", [_key(k) for k in (1, 3, 5, 7, 9, 11, 13)]),
                        ("D", [(_key(51), nine)]), ("D", [(_key(53), nat)])]
    assert got["b"] == [("D", [(_key(8), nat)]),
                        ("R", [_key(k) for k in (2, 4, 6, 8, 10, 12, 14, 60)]),
                        ("D", [(_key(50), nine)]), ("D", [(_key(52), nat)])]
    # commit-time ordering: no barrier, deletes as they were last written
    path2 = tmp_path / "c"
    t2 = _create(path2, 9, event_time=False)
    _history(t2)
    res2 = log_compact(t2).results[0]
    for part, _, (name,), _ in res2.compacted:
        with LogFileReader(LocalFileSource(str(path2 / part / name))) as r:
            kinds = [b.block_type for b in r.blocks()]
        assert kinds[0] == BlockType.PARQUET_DATA  # the default output block type


@pytest.mark.parametrize("version", [6, 9])
def test_the_new_index_is_exact(tmp_path: Path, version: int,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The cumulative index of the new blocks covers exactly the keys live in the logs:
    keys deleted in the replaced blocks and keys of a rolled-back write are gone; later
    writes keep it exact (their directory lists the replaced files without entries)."""
    path = tmp_path / "t"
    t = _create(path, version)
    _history(t)
    # a write that fails after its block landed: rolled back by the same call
    from morlog.writers.core import store as store_mod

    real = store_mod.LocalStore.append if version == 6 else store_mod.LocalStore.create

    def failing(self: Any, p: str, *a: Any, **k: Any) -> Any:
        out = real(self, p, *a, **k)
        if ".log." in p:
            raise OSError(28, "No space left on device")
        return out

    monkeypatch.setattr(store_mod.LocalStore, "append" if version == 6 else "create", failing)
    with pytest.raises(MorlogError):
        t.upsert(_batch([30, 31], 14))  # k030, k031 only in the failed block
    monkeypatch.undo()
    view = Table(str(path))
    live = {r["id"] for r in view.read().to_pylist()}
    L = log_compact(t).results[0].instant
    view = Table(str(path))
    for s in view.file_slices():
        d = path / s.partition
        index = read_slice_index(s.log_files, lambda n, d=d: LocalFileSource(str(d / n)))
        assert index is not None
        refs = index.block_refs()
        assert {r.instant for _, r in refs} == {L}
        listed: set[str] = set()
        for f, r in refs:
            with LogFileReader(LocalFileSource(str(d / f))) as lr:
                (b,) = list(lr.blocks(r.block_offset, r.block_offset + r.block_size))
            listed |= {k for k in b.to_arrow().column("_hoodie_record_key").to_pylist()}
        # exactly the slice's keys whose last write in the logs is no delete (k001 and
        # k007 too: their older ordering values lose to the base file's, not to the logs')
        log_live = {_key(k) for k in [*range(1, 15), 60] if "ab"[k % 2 == 0] == s.partition}
        assert listed == log_live
        assert index.cumulative.keys == len(listed)
        assert index.cumulative.min_key == min(listed)
        assert index.cumulative.max_key == max(listed)
        # every log file holding a data block is listed (the replaced ones without entries)
        with_data = {n for n, b in _log_blocks(path, s) if b.block_type.is_keyed}
        assert with_data <= set(index.files) and with_data - {f for f, _ in refs}
    tags = KeyTagger(view).tag([_key(k) for k in (30, 31, 50, 51, 52, 53)]).as_dict()
    assert all(v is None for v in tags.values()), tags
    # a later write keeps the index exact and reads the state from the tail (no scan)
    t.upsert(_batch([1, 61], 20))
    view = Table(str(path))
    s = next(s for s in view.file_slices() if s.partition == "a")
    d = path / "a"
    index = read_slice_index(s.log_files, lambda n: LocalFileSource(str(d / n)))
    assert index is not None
    assert {r.instant for _, r in index.block_refs()} <= {L, view.timeline.completed()[-1]
                                                          .requested}
    assert KeyTagger(view).tag([_key(51), _key(61)]).as_dict()[_key(51)] is None
    assert _key(61) not in live
    # the probe takes the stored index and tests no replaced block
    probe = SliceProbe(str(d), s.log_files)
    r = probe.probe([_key(51), _key(1)])
    assert r.stored and {b.instant for b in r.blocks} == {
        L, view.timeline.completed()[-1].requested}


# --- RFC-48 scenarios ---------------------------------------------------------------------


@pytest.mark.parametrize("version", [6, 9])
def test_a_write_between_plan_and_execution_is_not_replaced(tmp_path: Path,
                                                             version: int) -> None:
    """A delta commit completing between the plan and its execution: its blocks are not
    replaced and win where they are newer, in morlog and (Java semantics) in Hudi."""
    path = tmp_path / "t"
    t = _create(path, version, event_time=False)
    _history(t)
    L = schedule_log_compaction(t)
    assert L is not None and pending_log_compactions(Table(str(path))) == [L]
    r = t.upsert(_batch([1, 4, 12, 62], 30))  # updates of planned groups, a new key
    # the writer wrote as usual: no log named after the pending log compaction (v6)
    for p in path.rglob(f"*_{L}.log.*"):
        pytest.fail(f"a write named a log after the pending log compaction: {p}")
    expected = _snapshot(path)
    res = run_log_compaction(t, L)
    for _, _, _, replaced in res.compacted:
        assert r.instant not in replaced
    # version 8+: the write's log file sorts after the new one (it is named after a later
    # instant) and its index, written before, still holds the replaced blocks' keys
    _check_same(path, expected, L, exact=version < 8)
    got = {x["id"]: x["v"] for x in Table(str(path)).read().to_pylist()}
    assert got[_key(1)] == 40.0 and got[_key(4)] == 70.0 and got[_key(62)] == 650.0
    # the next write rebuilds its index without the replaced blocks: exact again
    t.upsert(_batch([1, 2], 31))
    tags = KeyTagger(Table(str(path))).tag([_key(k) for k in (50, 51, 52, 53)]).as_dict()
    assert all(v is None for v in tags.values()), tags


@pytest.mark.parametrize("version", [6, 8])
def test_a_failed_log_compaction_is_undone_and_runs_again(tmp_path: Path, version: int,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    path = tmp_path / "t"
    t = _create(path, version)
    _history(t)
    before = _snapshot(path)
    files = sorted(str(p.relative_to(path)) for p in path.rglob("*")
                   if p.is_file() and ".hoodie" not in p.parts)
    L = schedule_log_compaction(t)
    assert L is not None
    from morlog.writers.core.indexed import IndexedLogWriter

    real = IndexedLogWriter.append_delete
    calls = {"n": 0}

    def second_fails(self: IndexedLogWriter, *a: Any, **k: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        return real(self, *a, **k)

    monkeypatch.setattr(IndexedLogWriter, "append_delete", second_fails)
    t.config.write_threads = 1
    with pytest.raises(MorlogError, match="log compaction .* failed and was undone"):
        run_log_compaction(t, L)
    monkeypatch.undo()
    assert sorted(str(p.relative_to(path)) for p in path.rglob("*")
                  if p.is_file() and ".hoodie" not in p.parts) == files
    view = Table(str(path))
    assert [(i.requested, i.action, i.state) for i in view.timeline.pending()] == [
        (L, "logcompaction", "REQUESTED")]
    assert _snapshot(path) == before
    res = log_compact(t)  # the next run executes the plan left requested
    assert [r.instant for r in res.results][0] == L
    _check_same(path, before, L)


@pytest.mark.parametrize("version", [6, 9])
def test_a_killed_log_compaction_is_undone_by_the_next_writer(
        tmp_path: Path, version: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The process dies after the first new block: the instant stays inflight and readers
    ignore its blocks; the next write undoes it before tagging (its narrow index would hide
    the replaced blocks' keys), then the plan runs."""
    path = tmp_path / "t"
    t = _create(path, version)
    _history(t)
    L = schedule_log_compaction(t)
    assert L is not None

    class Killed(BaseException):
        pass

    from morlog.writers.core.indexed import IndexedLogWriter

    def dying(real: Any) -> Any:
        def append(self: IndexedLogWriter, *a: Any, **k: Any) -> Any:
            real(self, *a, **k)
            raise Killed()
        return append

    for name in ("append_avro_arrow", "append_parquet"):  # whichever the output uses
        monkeypatch.setattr(IndexedLogWriter, name, dying(getattr(IndexedLogWriter, name)))
    t.config.write_threads = 1
    with pytest.raises(Killed):
        run_log_compaction(t, L)
    monkeypatch.undo()
    t.store.lock(str(path)).release()  # a dead process's lock
    view = Table(str(path))
    assert [(i.requested, i.state) for i in view.timeline.pending()] == [(L, "INFLIGHT")]
    leftovers = [p for p in path.rglob(".*.log.*") if any(
        b.instant == L for b in LogFileReader(LocalFileSource(str(p))).blocks())]
    assert leftovers
    before = _snapshot(path)
    # tagging by a reader meanwhile: the inflight instant's index is not trusted
    assert before[None][1][_key(3)] is not None
    r = t.upsert(_batch([3, 15], 40))  # existing keys: updates, never new inserts
    assert (r.updates, r.inserts) == (2, 0)
    assert L in r.rolled_back
    assert not any(p.exists() for p in leftovers)
    view = Table(str(path))
    assert [(i.requested, i.state) for i in view.timeline.pending()] == [(L, "REQUESTED")]
    before = _snapshot(path)
    res = log_compact(t)
    assert res.results[0].instant == L
    _check_same(path, before, L, exact=version < 8)


@pytest.mark.parametrize("out_format", ["parquet", "avro"])
def test_output_larger_than_the_block_size_is_cut_into_several_blocks(tmp_path: Path,
                                                                      out_format: str
                                                                      ) -> None:
    path = tmp_path / "t"
    t = _create(path, 9, options={"hoodie.logfile.data.block.max.size": "1500",
                                  "morlog.log.compaction.max.block.bytes": str(1 << 20),
                                  "morlog.log.compaction.block.format": out_format})
    t.upsert(_batch(list(range(0, 200, 2)), 1))  # one partition, a base file
    for ts in range(2, 8):
        t.upsert(_batch(list(range(0, 200, 2)), ts))
    before = _snapshot(path)
    res = log_compact(t).results[0]
    _check_same(path, before, res.instant)
    view = Table(str(path))
    (s,) = view.file_slices()
    (name,) = res.compacted[0][2]
    with LogFileReader(LocalFileSource(str(path / "b" / name))) as r:
        kind = BlockType.AVRO_DATA if out_format == "avro" else BlockType.PARQUET_DATA
        blocks = [b for b in r.blocks() if b.block_type == kind]
        ranges = [(b.to_arrow().column("id")[0].as_py(), b.to_arrow().column("id")[-1].as_py())
                  for b in blocks]
    assert len(blocks) > 3
    # sorted by key and cut: the blocks' key ranges do not overlap
    assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    # every key is confirmed in exactly one block of the new file
    probe = SliceProbe(str(path / "b"), s.log_files)
    found = probe.probe([_key(k) for k in range(0, 200, 2)]).found()
    assert all(len(v) == 1 and v[0].file == name for v in found.values())
    assert len(found) == 100


@pytest.mark.parametrize("version", [6, 9])
def test_a_compaction_scheduled_meanwhile_makes_it_refuse(tmp_path: Path,
                                                          version: int) -> None:
    """A compaction later than a pending log compaction: the log compaction refuses to run
    (nothing written); ``log_compact`` drops its plan; the compaction runs."""
    path = tmp_path / "t"
    t = _create(path, version)
    _history(t)
    expected = _rows(Table(str(path)).read().drop_columns(["_hoodie_file_name"]))
    L = schedule_log_compaction(t)
    assert L is not None
    C = schedule_compaction(t, force=True)  # groups under a log compaction are eligible
    assert C is not None and C > L
    tree = {p: p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
            and p.name != "morlog.lock"}
    with pytest.raises(UsageError, match="refuses to run"):
        run_log_compaction(t, L)
    assert {p: p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
            and p.name != "morlog.lock"} == tree
    report = log_compact(t)
    assert report.dropped and report.dropped[0][0] == L and not report.results
    assert pending_log_compactions(Table(str(path))) == []
    compact(t)
    view = Table(str(path))
    assert view.timeline.pending() == []
    assert _rows(view.read().drop_columns(["_hoodie_file_name"])) == expected


@pytest.mark.parametrize("version", [6, 8])
def test_chains_of_log_compactions(tmp_path: Path, version: int) -> None:
    """A second log compaction over a slice that holds a compacted block replaces that
    block's instant (not the instants it replaced) and the plain instants after it."""
    path = tmp_path / "t"
    t = _create(path, version)
    _history(t)
    first = log_compact(t).results[0]
    for ts in range(20, 26):
        t.upsert(_batch([1, 2, 3, 70 + ts], ts))
    t.delete(_batch([2, 91], 30).select(["id", "p", "ts"]))
    before = _snapshot(path)
    second = log_compact(t).results[0]
    assert second.instant > first.instant
    for _, fid, _, replaced in second.compacted:
        assert first.instant in replaced
        earlier = next(g[3] for g in first.compacted if g[1] == fid)
        assert not set(earlier) & set(replaced)
        assert replaced == sorted(replaced, reverse=True)
    _check_same(path, before, second.instant)
    assert _rows(_hudi_rs(path)) == before[None][0]


def test_the_size_rule_leaves_large_blocks_alone(tmp_path: Path) -> None:
    """Blocks of ``morlog.log.compaction.max.block.bytes`` or more are not rewritten: the
    newest run of smaller instants is merged, in its place before the large block."""
    path = tmp_path / "t"
    # small blocks here are 2-4 KB (index trailer with COLUMN_STATS, a directory growing
    # with the slice), the large one ~27 KB
    t = _create(path, 9, options={"morlog.log.compaction.max.block.bytes": "6000"})
    t.upsert(_batch([0, 2], 1))
    for ts in range(2, 7):
        t.upsert(_batch([0, 2, 4], ts))
    big = t.upsert(_batch(list(range(0, 400, 2)), 7))  # one large block
    for ts in range(8, 14):
        t.upsert(_batch([0, 6], ts))
    before = _snapshot(path)
    res = log_compact(t).results[0]
    (_, _, _, replaced) = res.compacted[0]
    assert big.instant not in replaced and len(replaced) == 6
    assert min(replaced) > big.instant  # the newest run
    _check_same(path, before, res.instant)
    # with the size rule off (every block small), the large block is merged too
    t2 = MorTable(str(path), WriteConfig(hoodie_options={
        "morlog.log.compaction.max.block.bytes": str(1 << 30)}))
    res2 = log_compact(t2).results
    assert res2 and big.instant in res2[0].compacted[0][3]


def test_scheduling_counts_blocks_as_hudi_and_skips_busy_groups(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _create(path, 9)
    t.upsert(_batch([0, 1], 1))
    for ts in range(2, 5):
        t.upsert(_batch([0, 1], ts))
    assert plan_log_compaction(t) == []  # 3 blocks per group < 5
    t.delete(_batch([0], 9).select(["id", "p", "ts"]))  # a delete block counts
    t.upsert(_batch([0, 1], 10))
    ops = plan_log_compaction(t)
    assert [o["partitionPath"] for o in ops] == ["b"]  # k000's group: 5 blocks; k001's: 4
    t3 = MorTable(str(path), WriteConfig(hoodie_options={
        "hoodie.log.compaction.blocks.threshold": "4"}))
    assert len(plan_log_compaction(t3)) == 2
    L = schedule_log_compaction(t3)
    assert L is not None
    assert plan_log_compaction(t3) == []  # both groups under the pending log compaction
    assert choose_run([], LogCompactionSettings()) == []


@pytest.mark.parametrize(("key", "value"), [
    ("hoodie.log.compaction.blocks.threshold", "x"), ("hoodie.log.compaction.inline", "yes"),
    ("hoodie.logfile.data.block.max.size", "0"),
    ("morlog.log.compaction.max.block.bytes", "-1"),
    ("morlog.log.compaction.block.format", "orc")])
def test_bad_settings_are_refused_naming_them(key: str, value: str) -> None:
    with pytest.raises(UsageError, match=key.replace(".", r"\.")):
        LogCompactionSettings.of({key: value})


def test_settings_defaults() -> None:
    s = LogCompactionSettings.of({})
    assert (s.blocks_threshold, s.inline, s.data_block_max_bytes, s.max_block_bytes,
            s.block_format) == (5, False, 256 * 1024 * 1024, 128 * 1024 * 1024, "parquet")
    assert LogCompactionSettings.of({"morlog.log.compaction.block.format": " AVRO "}
                                    ).block_format == "avro"
    assert LogCompactionSettings.of({"hoodie.logfile.data.block.max.size": "1000"}
                                    ).max_block_bytes == 500


def test_inline_log_compaction(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _create(path, 9, options={"hoodie.log.compaction.inline": "true",
                                  "hoodie.log.compaction.blocks.threshold": "3"})
    t.upsert(_batch([1, 2], 1))
    for ts in range(2, 5):
        t.upsert(_batch([1], ts))
    # the write client ran it after the write that reached the threshold
    view = Table(str(path))
    done = [i for i in view.timeline.completed() if i.action == "deltacommit"]
    metas = [view.timeline.metadata(i) for i in done]
    assert any(m.get("operationType") == "LOG_COMPACT" for m in metas)
    assert view.timeline.pending() == []
    assert inline_log_compaction(t) is not None  # nothing left: an empty report
    off = MorTable(str(path))
    assert inline_log_compaction(off) is None


def test_inline_log_compaction_with_the_spark_writer(tmp_path: Path, spark: Any) -> None:
    """``df.write.format("morlog")`` with ``hoodie.log.compaction.inline``: the driver runs
    the log compaction after the write that reaches the threshold."""
    from morlog.spark.write import register

    register(spark)
    path = tmp_path / "t"
    opts = {"hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.log.compaction.inline": "true",
            "hoodie.log.compaction.blocks.threshold": "3"}
    for ts, keys in ((1, [1, 2]), (2, [1]), (3, [1]), (4, [1, 2])):
        spark.createDataFrame(_batch(keys, ts).to_pandas()).write.format("morlog") \
            .options(**opts).mode("append").save(str(path))
    view = Table(str(path))
    metas = [view.timeline.metadata(i) for i in view.timeline.completed()
             if i.action == "deltacommit"]
    assert [m.get("operationType") for m in metas].count("LOG_COMPACT") == 1
    assert view.timeline.pending() == []
    assert _rows(view.read(columns=SCHEMA.names)) == _rows(_batch([1, 2], 4))


# --- property: random histories ------------------------------------------------------------

history_ops = st.lists(st.one_of(
    st.tuples(st.just("upsert"), st.lists(st.integers(0, 12), min_size=1, max_size=5),
              st.integers(0, 9)),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 12), min_size=1, max_size=3),
              st.booleans()),
    st.tuples(st.just("logcompact")),
), min_size=3, max_size=14)


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(history=history_ops, event_time=st.booleans(), version=st.sampled_from([6, 9]),
       carrier=st.sampled_from(["avro", "parquet"]))
def test_random_histories_read_the_same_after_each_log_compaction(
        tmp_path_factory: pytest.TempPathFactory, history: list[tuple[Any, ...]],
        event_time: bool, version: int, carrier: str) -> None:
    path = tmp_path_factory.mktemp("t") / "t"
    t = _create(path, version, carrier, event_time=event_time,
                options={"hoodie.log.compaction.blocks.threshold": "2"})
    t.upsert(_batch([0, 1, 2, 3], 1))
    for n, op in enumerate(history):
        if op[0] == "upsert":
            t.upsert(_batch(sorted(set(op[1])), op[2]))
        elif op[0] == "delete":
            batch = _batch(sorted(set(op[1])), n % 5)
            # with or without an ordering value (natural deletes)
            t.delete(batch.select(["id", "p", "ts"] if op[2] else ["id", "p"]))
        else:
            before = _snapshot(path)
            report = log_compact(t)
            if report.results:
                _check_same(path, before, report.results[0].instant)
            else:
                assert _snapshot(path) == before


# --- the metadata table and Hudi's tables ---------------------------------------------------


@pytest.mark.parametrize("src", tables(), ids=lambda p: p.name)
def test_fixture_tables_log_compact_and_keep_their_metadata_table(tmp_path: Path,
                                                                  src: Path) -> None:
    from .test_metadata_writer import _mdt, _on_disk

    path = _copy(src, tmp_path)
    t = MorTable(str(path), WriteConfig(hoodie_options={
        "hoodie.log.compaction.blocks.threshold": "2"}))
    key = t.key_field
    expected = write_three(t, path)
    expected_b = write_three(t, path)
    del expected
    view = Table(str(path))
    instants = [i.requested for i in view.timeline.completed()]
    before = {i: sorted(view.read(as_of=i).to_pylist(), key=lambda r: str(r[key]))
              for i in instants[-4:]}
    report = log_compact(t)
    assert report.results, "two upserts, an insert and a delete make a run of two blocks"
    view = Table(str(path))
    assert view.timeline.pending() == []
    got = {r[key]: r for r in view.read().to_pylist()}
    assert got.keys() == expected_b.keys()
    for i, rows in before.items():
        assert sorted(view.read(as_of=i).to_pylist(), key=lambda r: str(r[key])) == rows, i
    hudi = {r[key]: r for r in _hudi_rs(path).to_pylist()}
    assert hudi.keys() == expected_b.keys()
    for k, row in expected_b.items():
        for col, v in row.items():
            assert got[k][col] == v, (k, col)
            assert hudi[k][col] == v, (k, col)
    if (path / ".hoodie" / "metadata").is_dir():
        assert _mdt(path).files_view() == _on_disk(path)
    check_metadata_table(path)


# --- distributed on Spark, retried tasks ---------------------------------------------------


def _l_blocks(path: Path, instant: str) -> list[tuple[str, int, int]]:
    """(partition, block type, records) of every block log compaction ``instant`` wrote."""
    out = []
    for p in sorted(path.rglob(".*.log.*")):
        if ".hoodie" in p.relative_to(path).parts:
            continue  # the metadata table's logs
        with LogFileReader(LocalFileSource(str(p))) as r:
            for b in r.blocks():
                if b.instant == instant:
                    n = (len(b.delete_records()) if b.block_type == BlockType.DELETE
                         else b.to_arrow().num_rows)
                    out.append((p.parent.name, int(b.block_type), n))
    return sorted(out)


@pytest.mark.parametrize("version", [6, 9])
def test_log_compaction_on_spark_one_task_per_slice(tmp_path: Path, spark: Any,
                                                    version: int) -> None:
    """``morlog.spark.log_compact``: the same result as the local run (rows at every
    instant, tags, the blocks written), read the same by hudi-rs."""
    from morlog.spark.write import log_compact as spark_log_compact

    local, dist = tmp_path / "local", tmp_path / "spark"
    for p in (local, dist):
        _history(_create(p, version))
    before = _snapshot(dist)
    theirs = _rows(_hudi_rs(dist))
    report = spark_log_compact(spark, str(dist))
    (res,) = report.results
    assert len(res.compacted) == 2  # one task per planned slice: both groups
    _check_same(dist, before, res.instant)
    assert Table(str(dist)).timeline.pending() == []
    assert _rows(_hudi_rs(dist)) == theirs
    (mine,) = log_compact(MorTable(str(local))).results
    assert _l_blocks(dist, res.instant) == _l_blocks(local, mine.instant)
    assert (res.records_written, res.deletes_written, res.blocks_written) == (
        mine.records_written, mine.deletes_written, mine.blocks_written)


@pytest.mark.parametrize("torn", [False, True])
@pytest.mark.parametrize("version", [6, 9])
def test_a_retried_log_compaction_task_leaves_no_duplicate(
        tmp_path: Path, version: int, torn: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A task's first attempt wrote its slice's blocks (all of them, or died after the
    first) and was lost; the retry removes them before writing: the blocks of the instant
    are those of a clean run, the rows and tags those of before."""
    from morlog.writers.core.indexed import IndexedLogWriter
    from morlog.writers.services.logcompaction import log_compact_operation

    clean_path, path = tmp_path / "clean", tmp_path / "t"
    for p in (clean_path, path):
        _history(_create(p, version))
    (clean,) = log_compact(MorTable(str(clean_path))).results
    t = MorTable(str(path))
    before = _snapshot(path)
    L = schedule_log_compaction(t)
    assert L is not None

    class Lost(Exception):
        pass

    def runner(mt: MorTable, instant: str, ops: list[dict[str, Any]]) -> list[Any]:
        out = []
        for op in ops:
            if torn:
                with monkeypatch.context() as m:
                    for name in ("append_avro_arrow", "append_parquet", "append_delete"):
                        real = getattr(IndexedLogWriter, name)

                        def dying(self: Any, *a: Any, _real: Any = real, **k: Any) -> Any:
                            _real(self, *a, **k)
                            raise Lost()
                        m.setattr(IndexedLogWriter, name, dying)
                    with pytest.raises(Lost):
                        log_compact_operation(mt, instant, op)
            else:
                log_compact_operation(mt, instant, op)  # its result never reached the driver
            assert _l_blocks(path, instant)  # the lost attempt's blocks are there
            out.append(log_compact_operation(mt, instant, op, retry=True))
        return out

    res = run_log_compaction(t, L, runner=runner)
    assert _l_blocks(path, L) == _l_blocks(clean_path, clean.instant)
    assert (res.records_written, res.blocks_written) == (clean.records_written,
                                                         clean.blocks_written)
    _check_same(path, before, L)


# --- hudi-rs: no log compaction support ------------------------------------------------------


@pytest.mark.parametrize("event_time", [False, True])
@pytest.mark.parametrize("version", [6, 9])
def test_hudi_rs_reads_the_same_as_before_the_log_compaction(tmp_path: Path, version: int,
                                                            event_time: bool) -> None:
    """hudi-rs 0.5 ignores COMPACTED_BLOCK_TIMES: it reads the replaced blocks and the new
    ones (spec/services.md §7.2, known hudi-rs gap). Its merge does not depend on the
    order of the blocks (``RecordMerger::merge_record_batches``: per key the record with the
    greatest ordering value then ``_hoodie_commit_seqno``, which a log compaction keeps;
    deletes by greatest ordering value then commit time), so it returns what it returned
    before the log compaction, also with a write between the plan and its execution whose
    blocks come before the new log file (version 6). morlog reads as Hudi's Java reader
    (``scanInternalV2``: the compacted blocks in the place of the newest instant they
    replace)."""
    path = tmp_path / "t"
    t = _create(path, version, event_time=event_time)
    _history(t)
    L = schedule_log_compaction(t)
    assert L is not None
    t.upsert(_batch([1, 4], 30))  # version 6: appended to a planned log, before L's file
    t.delete(_batch([3], 31).select(["id", "p", "ts"]))
    theirs_before = _rows(_hudi_rs(path))
    ours_before = _rows(Table(str(path)).read())
    run_log_compaction(t, L)
    assert _rows(Table(str(path)).read()) == ours_before
    assert _rows(_hudi_rs(path)) == theirs_before
    got = {r["id"]: r["v"] for r in ours_before}
    assert got[_key(1)] == 40.0 and got[_key(4)] == 70.0 and _key(3) not in got


# --- command line ---------------------------------------------------------------------------


def test_cli_dry_run_json_and_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    from morlog.cli import main

    path = tmp_path / "t"
    t = _create(path, 9)
    t.upsert(_batch([1, 2], 1))
    for ts in range(2, 6):
        t.upsert(_batch([1, 2], ts))
    tree = {p: p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}
    assert main(["logcompact", str(path), "--dry-run"]) == 0
    assert "nothing to log-compact" in capsys.readouterr().out  # 4 blocks < 5
    assert main(["logcompact", str(path), "--dry-run", "-o",
                 "hoodie.log.compaction.blocks.threshold=4"]) == 0
    out = capsys.readouterr().out
    assert "would log-compact" in out and "dry run" in out
    assert {p: p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()} == tree
    assert main(["logcompact", str(path), "--json", "-o",
                 "hoodie.log.compaction.blocks.threshold=4"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["dry_run"] is False and len(doc["log_compactions"]) == 1
    lc = doc["log_compactions"][0]
    assert {(g["partition"], g["file_id"]) for g in lc["file_groups"]} == {
        (o["partitionPath"], o["fileId"]) for o in doc["planned"]}
    assert all(len(g["replaced_instants"]) == 4 for g in lc["file_groups"])
    assert main(["logcompact", str(path), "-o", "hoodie.log.compaction.blocks.threshold=2"]
                ) == 0
    assert "nothing to log-compact" in capsys.readouterr().out  # one compacted block each
    assert main(["logcompact", str(path), "-o", "hoodie.log.compaction.blocks.threshold=x"]
                ) == 2
    assert "blocks.threshold" in capsys.readouterr().err


# --- object stores ------------------------------------------------------------------------


@pytest.mark.parametrize("version", [6, 9])
def test_log_compaction_on_s3(s3: str, version: int) -> None:
    """On an object store every block is a new log object (no appends): the new blocks land
    in new versions, the rows read the same in morlog and in hudi-rs (from S3)."""
    pytest.importorskip("moto", reason="moto is not installed (pip install .[test])")
    from .test_s3_write import _hudi_rs_rows, _uri
    from .test_s3_write import _rows as s3_rows

    uri = _uri(s3)
    t = MorTable.create(uri, SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", table_version=version,
                        config=WriteConfig(hoodie_options={
                            "hoodie.log.compaction.blocks.threshold": "3"}))
    t.upsert(_batch(list(range(12)), 1))
    for ts in range(2, 5):
        t.upsert(_batch([1, 2, 3, 20 + ts], ts))
    t.delete(_batch([3, 22], 9).select(["id", "p", "ts"]))
    before = s3_rows(uri)
    res = log_compact(t).results
    assert res and all(g[2] for g in res[0].compacted)
    assert s3_rows(uri) == before
    if version >= 8:
        assert _hudi_rs_rows(uri) == before
