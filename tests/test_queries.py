"""Query types (spec/queries.md): incremental reads equal hudi-rs's incremental read on every
pair of consecutive completed instants of the fixture tables and of random morlog-written
histories (upserts, deletes, rolled-back writes, compaction, log compaction, clean), and
the snapshot-as-of oracle (the range's last instant's snapshot, filtered on
``_hoodie_commit_time``); read-optimized reads return the base files only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from morlog.logformat.errors import MissingFileError, MorlogError, UsageError
from morlog.readers.incremental import (
    INCREMENTAL_ACTIONS,
    instants_in_range,
    plan_incremental,
)
from morlog.readers.table import Table
from morlog.readers.timeline import Instant

from .hudi_fixtures import requires_fixtures, tables

EXAMPLES = {"ci": 40, "slow": 2000}.get(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"), 8)
SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("v", pa.int64()),
                    ("p", pa.string())])


def _rows(t: pa.Table | list[pa.RecordBatch], key: str = "_hoodie_record_key"
          ) -> list[dict[str, Any]]:
    if isinstance(t, list):
        t = pa.Table.from_batches(t) if t else pa.table({})
    return sorted(t.to_pylist(), key=lambda r: r[key]) if t.num_rows else []


def _key(table: Table, i: Instant) -> str:
    """The time an incremental range compares for ``i`` (completion time on 8+)."""
    return (i.completed or i.requested) if table.version >= 8 else i.requested


def _hudi_rs_incremental(path: str, begin: str | None, end: str) -> list[dict[str, Any]]:
    import hudi
    from hudi import HudiQueryType, HudiReadOptions

    ht = hudi.HudiTableBuilder.from_base_uri(path).build()
    opts = HudiReadOptions().with_query_type(HudiQueryType.Incremental).with_end_timestamp(end)
    if begin is not None:
        opts = opts.with_start_timestamp(begin)
    return _rows(ht.read(opts))


def _pairs(table: Table) -> list[tuple[Instant | None, Instant]]:
    done = table.timeline.completed(INCREMENTAL_ACTIONS)
    if not done:
        return []
    return list(zip([None, *done[:-1]], done, strict=True))


def _oracle(table: Table, inst: Instant) -> list[dict[str, Any]] | None:
    """The snapshot as of ``inst`` filtered to the records ``inst`` wrote: what Hudi's
    incremental relation returns for the range holding ``inst`` alone (None: a clean has
    given that instant up for time travel, though the range's own files may remain)."""
    try:
        table.check_time_travel(inst.requested)
    except UsageError:
        return None
    snap = table.read(inst.requested)
    if not snap.num_rows:
        return []
    return [r for r in _rows(snap) if r["_hoodie_commit_time"] == inst.requested]


# --- fixtures -------------------------------------------------------------------------------


def _fixture_cases() -> list[Any]:
    out = []
    for path in tables():
        t = Table(str(path))
        if not t.config.populate_meta_fields:
            continue
        for prev, cur in _pairs(t):
            out.append(pytest.param(path, prev.requested if prev else None, cur.requested,
                                    id=f"{path.name}@{cur.requested}"))
    return out


@requires_fixtures
@pytest.mark.hudi_rs
@pytest.mark.parametrize("path, prev, cur", _fixture_cases())
def test_fixture_incremental_equals_hudi_rs(path: Path, prev: str | None, cur: str) -> None:
    table = Table(str(path))
    tl = table.timeline
    p = tl.get(prev) if prev else None
    c = tl.get(cur)
    assert c is not None
    begin = _key(table, p) if p is not None else "earliest"
    mine = _rows(table.incremental(begin, _key(table, c)))
    theirs = _hudi_rs_incremental(str(path), _key(table, p) if p else None, _key(table, c))
    assert mine == theirs
    assert mine == _oracle(table, c)


def test_incremental_refuses_tables_without_meta_fields(tmp_path: Path) -> None:
    from morlog.writers.client import MorTable

    t = MorTable.create(str(tmp_path / "t"), SCHEMA, key_field="id", ordering_field="ts",
                        table_properties={"hoodie.populate.meta.fields": "false"})
    t.upsert(pa.table({"id": ["k"], "ts": [1], "v": [1], "p": ["a"]}, schema=SCHEMA))
    with pytest.raises(UsageError, match="meta field"):
        Table(str(tmp_path / "t")).incremental("earliest")


@requires_fixtures
def test_fixture_ranges_compare_completion_times_on_version_8() -> None:
    """A begin between an instant's requested and completion time keeps the instant on
    version 8+ (Hudi 1.x compares completion times); version 6 compares instant times."""
    (v8,) = [p for p in tables() if p.name == "v8_trips_8i3u1d"]
    t = Table(str(v8))
    first = t.timeline.completed(INCREMENTAL_ACTIONS)[0]
    assert first.completed is not None and first.completed > first.requested
    rng = instants_in_range(t, first.requested, first.completed)
    assert rng.commit_times == (first.requested,)
    assert instants_in_range(t, first.completed, first.completed).instants == ()
    (v6,) = [p for p in tables() if p.name == "v6_trips_8i1u"]
    t6 = Table(str(v6))
    f6 = t6.timeline.completed(INCREMENTAL_ACTIONS)[0]
    assert instants_in_range(t6, f6.requested, None).commit_times[:1] != (f6.requested,)
    assert instants_in_range(t6, "earliest", f6.requested).commit_times == (f6.requested,)


# --- random morlog histories ----------------------------------------------------------------

steps = st.lists(st.one_of(
    st.tuples(st.just("upsert"), st.lists(st.integers(0, 11), min_size=1, max_size=6)),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 11), min_size=1, max_size=3)),
    st.tuples(st.just("fail"), st.lists(st.integers(0, 11), min_size=1, max_size=3)),
    st.tuples(st.just("compact"), st.just([])),
    st.tuples(st.just("logcompact"), st.just([])),
    st.tuples(st.just("clean"), st.just([])),
), min_size=2, max_size=10)


def _fail_upsert(t: Any, batch: pa.Table) -> None:
    """An upsert whose log append fails after its bytes landed: rolled back in the call."""
    from morlog.writers.core import store as store_mod

    mp = pytest.MonkeyPatch()
    real = store_mod.LocalStore.append

    def append(self: Any, path: str, produce: Any, *, sync: bool = True) -> int:
        real(self, path, produce, sync=sync)
        raise OSError(28, "No space left on device")

    mp.setattr(store_mod.LocalStore, "append", append)
    try:
        t.upsert(batch)
    except (MorlogError, OSError):
        pass
    finally:
        mp.undo()


def _run_history(root: Path, history: list[tuple[str, list[int]]], version: int,
                 partitioned: bool) -> None:
    from dataclasses import replace

    from morlog.writers.client import MorTable
    from morlog.writers.services.cleaning import clean
    from morlog.writers.services.compaction import compact
    from morlog.writers.services.logcompaction import log_compact

    t = MorTable.create(str(root), SCHEMA, key_field="id",
                        partition_field="p" if partitioned else None, ordering_field="ts",
                        table_version=version)
    live: dict[int, str] = {}
    ts = 0
    for op, keys in history:
        ts += 1
        ks = list(dict.fromkeys(keys))
        if op in ("upsert", "fail"):
            parts = [live.get(k, "ab"[k % 2] if partitioned else "x") for k in ks]
            batch = pa.table({"id": [f"k{k:02d}" for k in ks], "ts": [ts] * len(ks),
                              "v": [ts * 100 + k for k in ks], "p": parts}, schema=SCHEMA)
            if op == "fail":
                _fail_upsert(t, batch)
                continue
            t.upsert(batch)
            for k, part in zip(ks, parts, strict=True):
                live[k] = part
        elif op == "delete":
            gone = [k for k in ks if k in live]
            if gone:
                t.delete(pa.table({"id": [f"k{k:02d}" for k in gone],
                                   "ts": [ts] * len(gone), "v": [0] * len(gone),
                                   "p": [live[k] for k in gone]}, schema=SCHEMA))
                for k in gone:
                    del live[k]
        elif op == "compact":
            compact(t)
        elif op == "logcompact":
            lt = MorTable(str(root), replace(t.config, hoodie_options={
                **t.config.hoodie_options, "hoodie.log.compaction.blocks.threshold": "2"}))
            log_compact(lt)
        elif op == "clean":
            clean(t, options={"hoodie.clean.commits.retained": "1"})


def _check_history(root: Path) -> None:
    table = Table(str(root))
    for prev, cur in _pairs(table):
        begin = _key(table, prev) if prev is not None else None
        end = _key(table, cur)
        plan_needs_fallback = False
        try:
            mine = _rows(table.incremental(begin or "earliest", end))
        except MissingFileError:
            # a clean deleted files the range's commits wrote: Hudi's error without the
            # fallback, and the latest slices filtered on the range's commit times with it
            plan_needs_fallback = True
            event("a range over cleaned files")
            full = _rows(table.incremental(begin or "earliest", end, fallback=True))
            latest = _rows(table.read()) if table.read().num_rows else []
            assert full == [r for r in latest if r["_hoodie_commit_time"] == cur.requested]
        if plan_needs_fallback:
            continue
        event(f"range of a {cur.action}" + (" with rows" if mine else ""))
        expected = _oracle(table, cur)
        if expected is not None:
            assert mine == expected, (begin, end)
        assert mine == _hudi_rs_incremental(str(root), begin, end), (begin, end)


@pytest.mark.hudi_rs
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(history=steps, version=st.sampled_from([6, 8]), partitioned=st.booleans())
def test_random_histories_incremental_equals_hudi_rs(
        tmp_path_factory: pytest.TempPathFactory, history: list[tuple[str, list[int]]],
        version: int, partitioned: bool) -> None:
    root = tmp_path_factory.mktemp("incr") / "t"
    _run_history(root, history, version, partitioned)
    _check_history(root)


def _simple(root: Path, version: int = 8) -> Any:
    from morlog.writers.client import MorTable

    t = MorTable.create(str(root), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", table_version=version)
    for i in range(4):
        t.upsert(pa.table({"id": [f"k{i}", "k0"], "ts": [i + 1, i + 1], "v": [i, 10 * i],
                           "p": ["a" if i % 2 else "b", "b"]}, schema=SCHEMA))
    return t


def test_incremental_reads_only_the_slices_the_range_wrote(tmp_path: Path) -> None:
    _simple(tmp_path / "t")
    table = Table(str(tmp_path / "t"))
    done = table.timeline.completed(INCREMENTAL_ACTIONS)
    # the third write touched k2 (partition b) and k0 (partition b): one file group
    plan = plan_incremental(table, _key(table, done[1]), _key(table, done[2]))
    assert {(s.partition, s.file_id) for s in plan.slices} == {
        (s.partition, s.file_id) for s in table.file_slices() if s.partition == "b"}
    assert len(plan.slices) < len(table.file_slices())
    rows = table.incremental(_key(table, done[1]), _key(table, done[2]),
                             columns=["id", "v"])
    assert _rows(rows, "id") == [{"id": "k0", "v": 20}, {"id": "k2", "v": 2}]
    # projection and a predicate apply
    assert table.incremental(_key(table, done[1]), _key(table, done[2]), columns=["id"],
                             where="v > 5").to_pylist() == [{"id": "k0"}]
    # end defaults to the latest; begin 'earliest' takes every instant
    assert _rows(table.incremental("earliest"), "id") == _rows(table.read(), "id")
    # the same through Table.read
    assert _rows(table.read(query_type="incremental", begin=_key(table, done[1]),
                            end=_key(table, done[2])), "id") == _rows(
        table.incremental(_key(table, done[1]), _key(table, done[2])), "id")


def test_incremental_range_formats_and_errors(tmp_path: Path) -> None:
    _simple(tmp_path / "t")
    table = Table(str(tmp_path / "t"))
    done = table.timeline.completed(INCREMENTAL_ACTIONS)
    last = done[-1].completed
    assert last is not None
    # yyyy-MM-dd HH:mm:ss.SSS, as as.of.instant takes it
    text = f"{last[:4]}-{last[4:6]}-{last[6:8]} {last[8:10]}:{last[10:12]}:{last[12:14]}." \
           f"{last[14:17]}"
    assert instants_in_range(table, "earliest", text).commit_times == tuple(
        i.requested for i in done)
    # a range with nothing in it is no row, with the table's columns
    empty = table.incremental(last, None)
    assert empty.num_rows == 0 and "id" in empty.column_names
    with pytest.raises(UsageError, match="instant"):
        table.incremental("yesterday")
    with pytest.raises(UsageError, match="needs begin"):
        table.read(query_type="incremental")
    with pytest.raises(UsageError, match="query type"):
        table.read(query_type="realtime")
    with pytest.raises(UsageError, match="unknown column"):
        table.incremental("earliest", columns=["nope"])


def test_incremental_after_a_clean_falls_back_or_fails(tmp_path: Path) -> None:
    """A clean deleted the files the first writes wrote: without the fallback the range is
    Hudi's missing-file error (typed, naming the file and the option); with it every latest
    slice is scanned and filtered on the range's commit times."""
    from morlog.writers.services.cleaning import clean
    from morlog.writers.services.compaction import compact

    t = _simple(tmp_path / "t")
    compact(t)
    t.upsert(pa.table({"id": ["k9"], "ts": [9], "v": [9], "p": ["a"]}, schema=SCHEMA))
    clean(t, options={"hoodie.clean.commits.retained": "1"})
    table = Table(str(tmp_path / "t"))
    done = table.timeline.completed(INCREMENTAL_ACTIONS)
    begin, second = _key(table, done[0]), done[1]
    with pytest.raises(MissingFileError, match="fallback.fulltablescan") as exc:
        table.incremental(begin, _key(table, second))
    assert exc.value.path is not None
    rows = _rows(table.incremental(begin, _key(table, second), fallback=True))
    latest = _rows(table.read())
    assert rows == [r for r in latest if r["_hoodie_commit_time"] == second.requested]
    assert [r["id"] for r in rows] == ["k1"]  # written by the second commit only
    plan = plan_incremental(table, begin, _key(table, second), fallback=True)
    assert plan.full_scan


@pytest.mark.parametrize("version", [6, 8])
def test_incremental_range_reaching_archived_instants(tmp_path: Path, version: int) -> None:
    """Instants older than the active timeline (an archive folder holds them): the fallback
    scans the latest slices for records after begin; without it version 8+ is an error and
    version 6 reads the active instants of the range (Hudi's V1 relation)."""
    _simple(tmp_path / "t", version)
    table = Table(str(tmp_path / "t"))
    done = table.timeline.completed(INCREMENTAL_ACTIONS)
    # archive the first commit by hand: its timeline files move out of the active timeline
    tl_dir = Path(table.timeline.directory)
    archive = (tl_dir / "history") if version >= 8 else (tl_dir / "archived")
    archive.mkdir(exist_ok=True)
    for f in tl_dir.iterdir():
        if f.is_file() and f.name.startswith(done[0].requested):
            f.rename(archive / f.name)
    (archive / "manifest_1").write_text("x")
    table = Table(str(tmp_path / "t"))
    rng = instants_in_range(table, "earliest", None)
    assert rng.archived
    fall = _rows(table.incremental("earliest", fallback=True), "id")
    assert fall == _rows(table.read(), "id")
    if version >= 8:
        with pytest.raises(UsageError, match="archived"):
            table.incremental("earliest")
    else:
        active = {i.requested for i in table.timeline.completed(INCREMENTAL_ACTIONS)}
        rows = table.incremental("earliest").to_pylist()
        assert rows and {r["_hoodie_commit_time"] for r in rows} <= active
    # a range after the archived instants is read as usual
    later = table.timeline.completed(INCREMENTAL_ACTIONS)
    assert not instants_in_range(table, _key(table, later[0]), None).archived


# --- read optimized -------------------------------------------------------------------------


def test_read_optimized_reads_base_files_only(tmp_path: Path) -> None:
    from morlog.writers.services.compaction import compact

    t = _simple(tmp_path / "t")
    table = Table(str(tmp_path / "t"))
    base_rows = _rows(table.read_optimized(), "id")
    # MorTable writes new file groups as base files: only those rows, no log merged
    assert all(r["_hoodie_commit_time"] == r["_hoodie_commit_seqno"].split("_")[0]
               for r in base_rows)
    snap = _rows(table.read(), "id")
    assert base_rows != snap  # k0's updates sit in logs
    compact(t)
    table = Table(str(tmp_path / "t"))
    assert all(not s.log_files for s in table.file_slices())
    assert _rows(table.read_optimized(), "id") == _rows(table.read(), "id")
    t.upsert(pa.table({"id": ["k0"], "ts": [50], "v": [-1], "p": ["b"]}, schema=SCHEMA))
    table = Table(str(tmp_path / "t"))
    ro = {r["id"]: r["v"] for r in table.read_optimized(columns=["id", "v"]).to_pylist()}
    assert ro["k0"] == 30  # the compacted value, not the log's -1
    assert table.read(query_type="read_optimized", columns=["id"], where="v = 30"
                      ).to_pylist() == [{"id": "k0"}]
    with pytest.raises(UsageError, match="begin and end"):
        table.read(query_type="read_optimized", begin="earliest")


# --- CLI ------------------------------------------------------------------------------------


def test_cli_snapshot_query_types(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import pyarrow.parquet as pq

    from morlog.cli import main

    _simple(tmp_path / "t")
    path = str(tmp_path / "t")
    table = Table(path)
    done = table.timeline.completed(INCREMENTAL_ACTIONS)
    b, e = _key(table, done[1]), _key(table, done[2])
    # snapshot: unchanged (JSON lines), and --json prints one array
    assert main(["snapshot", path, "--columns", "id,v"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert sorted(lines, key=lambda r: r["id"]) == _rows(table.read(columns=["id", "v"]), "id")
    assert main(["snapshot", path, "--query-type", "snapshot", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == table.read().num_rows
    # incremental
    assert main(["snapshot", path, "--query-type", "incremental", "--begin", b, "--end", e,
                 "--columns", "id,v", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert sorted(got, key=lambda r: r["id"]) == [{"id": "k0", "v": 20}, {"id": "k2", "v": 2}]
    out = tmp_path / "incr.parquet"
    assert main(["snapshot", path, "--query-type", "incremental", "--begin", b, "--end", e,
                 "--format", "parquet", "--out", str(out)]) == 0
    assert _rows(pq.read_table(out)) == _rows(table.incremental(b, e))
    # read optimized
    assert main(["snapshot", path, "--query-type", "read_optimized", "--json"]) == 0
    ro = json.loads(capsys.readouterr().out)
    assert sorted(r["id"] for r in ro) == sorted(table.read_optimized().column("id").to_pylist())
    assert len(ro) < table.read().num_rows + 1 and ro != lines
    # typed errors: exit 2 with the message, nothing on stdout
    for argv, words in (
            (["--query-type", "incremental"], "needs --begin"),
            (["--query-type", "incremental", "--begin", b, "--as-of", e], "not --as-of"),
            (["--begin", b], "belong to --query-type"),
            (["--query-type", "cdc", "--begin", b], "hoodie.table.cdc.enabled=true"),
            (["--query-type", "incremental", "--begin", "nope"], "instant")):
        assert main(["snapshot", path, *argv]) == 2, argv
        cap = capsys.readouterr()
        assert cap.out == "" and words in cap.err, (argv, cap.err)


def test_cli_snapshot_help_explains_the_query_types(capsys: pytest.CaptureFixture[str]
                                                    ) -> None:
    from morlog.cli import main

    with pytest.raises(SystemExit):
        main(["snapshot", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("--query-type", "read_optimized", "incremental", "--begin", "--end",
                  "completion time", "earliest", "--json"):
        assert words in text, words


# --- where hudi-rs differs from Hudi Java (spec/queries.md §7) -------------------------------


@pytest.mark.hudi_rs
def test_event_time_ordering_differs_from_hudi_rs_as_hudi_java_does(tmp_path: Path) -> None:
    """An update with a lower ordering value loses the merge: Hudi Java (and morlog) merge
    the whole slice, so the record keeps its older commit time and is not in the range;
    hudi-rs reads the range's files alone and returns the losing update."""
    from morlog.writers.client import MorTable

    s = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("v", pa.int64())])
    t = MorTable.create(str(tmp_path / "t"), s, key_field="id", ordering_field="ts",
                        event_time_ordering=True, table_version=8)
    t.upsert(pa.table({"id": ["k", "j"], "ts": [10, 1], "v": [1, 1]}, schema=s))
    t.upsert(pa.table({"id": ["k", "j"], "ts": [5, 2], "v": [2, 2]}, schema=s))
    table = Table(str(tmp_path / "t"))
    c = [_key(table, i) for i in table.timeline.completed(INCREMENTAL_ACTIONS)]
    mine = table.incremental(c[0], c[1], columns=["id", "ts", "v"]).to_pylist()
    assert mine == [{"id": "j", "ts": 2, "v": 2}]
    assert table.read(columns=["id", "v"], where="id = 'k'").to_pylist() == [
        {"id": "k", "v": 1}]
    theirs = [{k: r[k] for k in ("id", "ts", "v")}
              for r in _hudi_rs_incremental(str(tmp_path / "t"), c[0], c[1])]
    assert sorted(theirs, key=lambda r: r["id"]) == [{"id": "j", "ts": 2, "v": 2},
                                                     {"id": "k", "ts": 5, "v": 2}]


@pytest.mark.hudi_rs
def test_cleaned_range_differs_from_hudi_rs(tmp_path: Path) -> None:
    """Over files a clean deleted, hudi-rs returns no row; Hudi Java (and morlog) fail, or
    scan the latest slices with the fallback."""
    from morlog.writers.services.cleaning import clean
    from morlog.writers.services.compaction import compact

    t = _simple(tmp_path / "t")
    compact(t)
    t.upsert(pa.table({"id": ["k9"], "ts": [9], "v": [9], "p": ["a"]}, schema=SCHEMA))
    clean(t, options={"hoodie.clean.commits.retained": "1"})
    table = Table(str(tmp_path / "t"))
    done = table.timeline.completed(INCREMENTAL_ACTIONS)
    b, e = _key(table, done[0]), _key(table, done[1])
    with pytest.raises(MissingFileError):
        table.incremental(b, e)
    assert [r["id"] for r in table.incremental(b, e, fallback=True).to_pylist()] == ["k1"]
    try:
        theirs = _hudi_rs_incremental(str(tmp_path / "t"), b, e)
    except ValueError:  # no batch at all
        theirs = []
    assert theirs == []


def test_incremental_refuses_damaged_write_stats_with_the_commit_file(tmp_path: Path) -> None:
    """Commit metadata whose write stats are not what Hudi writes is a ContentError naming
    the commit file, never a crash or a silently empty answer."""
    import json

    from morlog.logformat.errors import ContentError

    _simple(tmp_path / "t", version=6)
    table = Table(str(tmp_path / "t"))
    last = table.timeline.completed(INCREMENTAL_ACTIONS)[-1]
    f = Path(table.timeline.directory) / last.file_name
    md = json.loads(f.read_text())
    for bad in ([1, 2], {"b": "x"}, {"b": [3]}, {"../x": []}):
        f.write_text(json.dumps({**md, "partitionToWriteStats": bad}))
        with pytest.raises(ContentError) as info:
            Table(str(tmp_path / "t")).incremental(table.timeline.completed(
                INCREMENTAL_ACTIONS)[-2].requested)
        assert info.value.path is not None and last.file_name in info.value.path
