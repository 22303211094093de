"""Hudi's cleaner on morlog's tables and on Hudi's (spec/services.md §5, §6).

Tables of versions 6, 8 and 9 take a history of upserts, deletes, compactions and an
insert_overwrite, then a clean. What must hold:

- each policy deletes exactly the files the rules give up, computed here from the file
  listing and the timeline (a slice is a base instant with its base file and logs; never a
  group's latest slice, never the latest slice before the earliest commit to retain; every
  slice of a group replaced before it), not by asking the planner;
- every completed instant at or after the earliest commit retained reads the same rows
  before and after the clean; earlier ones are refused, as Hudi refuses them; hudi-rs reads
  the latest snapshot the same as morlog;
- a pending compaction's slices and savepointed files survive;
- the metadata table is true afterwards (``files`` lists exactly the files on storage,
  deleted files get ``column_stats`` / ``bloom_filters`` tombstones, the other kept
  partitions stay true), also on copies of Hudi's fixture tables;
- a failure in the middle leaves a pending clean that the next clean finishes; a hostile
  plan is refused before anything is deleted; ``morlog clean --dry-run`` changes nothing.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.blocks import META_FIELDS
from morlog.logformat.errors import UsageError, WriteError
from morlog.logformat.mdt_records import partitions_view
from morlog.logformat.naming import BaseFileName, LogFileName
from morlog.logformat.timeline_meta import (
    CLEAN_METADATA_SCHEMA,
    CLEAN_METADATA_SCHEMA_014,
    CLEANER_PLAN_SCHEMA,
    CLEANER_PLAN_SCHEMA_014,
    decode_avro_as,
)
from morlog.readers import column_stats as cs
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.core.timeline import TimelineWriter
from morlog.writers.mdt.writer import MetadataTable
from morlog.writers.options import WriteConfig
from morlog.writers.services import cleaning
from morlog.writers.services.cleaning import (
    CleanPlanError,
    CleanSettings,
    clean,
    inline_clean,
    plan_clean,
    settings_of,
)
from morlog.writers.services.compaction import (
    compact,
    read_plan,
    run_compaction,
    schedule_compaction,
)

from .hudi_fixtures import SKIP_REASON, tables

SCHEMA = pa.schema([("id", pa.string()), ("p", pa.string()), ("ts", pa.int64()),
                    ("v", pa.int64())])
PARTS = "abc"
RETAIN_1 = {"hoodie.clean.commits.retained": "1"}
#: the tests clean when they say so (writes clean automatically by default, as in Hudi)
NO_AUTO_CLEAN = {"hoodie.clean.automatic": "false"}


def _batch(rows: list[tuple[int, int, int]]) -> pa.Table:
    return pa.Table.from_pylist([{"id": f"k{k}", "p": PARTS[k % 3], "ts": ts, "v": v}
                                 for k, ts, v in rows], schema=SCHEMA)


def _keys(ks: list[int]) -> pa.Table:
    return _batch([(k, 0, 0) for k in ks]).select(["id", "p"])


def build(root: Path, version: int, *, new_groups: str = "base") -> MorTable:
    """Several commits, two compactions, deletes, an insert_overwrite (partition ``b``'s
    groups replaced), more commits."""
    t = MorTable.create(str(root), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", table_version=version,
                        config=WriteConfig(fsync=False, new_groups=new_groups,  # type: ignore[arg-type]
                                           hoodie_options=NO_AUTO_CLEAN))
    t.upsert(_batch([(k, 1, k) for k in range(9)]))
    t.upsert(_batch([(0, 2, 10), (1, 2, 11), (2, 2, 12)]))
    compact(t)
    t.upsert(_batch([(3, 3, 13), (4, 3, 14)]))
    t.delete(_keys([5]))
    compact(t)
    t.upsert(_batch([(0, 4, 20), (6, 4, 21)]))
    t.insert_overwrite(_batch([(1, 5, 99)]))
    t.upsert(_batch([(2, 6, 22), (7, 6, 23)]))
    t.upsert(_batch([(0, 7, 30)]))
    compact(t)
    t.upsert(_batch([(3, 8, 31)]))
    return t


def _rows(t: pa.Table) -> dict[str, dict[str, Any]]:
    key = "id" if "id" in t.column_names else t.column_names[0]
    return {r[key]: {k: v for k, v in r.items() if k not in META_FIELDS}
            for r in t.to_pylist()}


def _hudi_rs(path: Path) -> pa.Table:
    import hudi

    batches = hudi.HudiTableBuilder.from_base_uri(str(path)).build().read()
    return pa.Table.from_batches(batches) if batches else pa.table({})


def _hudi_rs_as_of(path: Path, instant: str) -> dict[str, dict[str, Any]]:
    import hudi

    table = hudi.HudiTableBuilder.from_base_uri(str(path)).build()
    batches = table.read(hudi.HudiReadOptions().with_as_of_timestamp(instant))
    return _rows(pa.Table.from_batches(batches)) if batches else {}


def _listing(root: Path) -> set[str]:
    """Every data file of the table, ``partition/name``."""
    out = set()
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".hoodie")]
        rel = os.path.relpath(dirpath, root)
        for f in files:
            if LogFileName.matches(f) or BaseFileName.matches(f):
                out.add(f if rel == "." else f"{rel}/{f}")
    return out


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != "morlog.lock"}


# --- the rules, independently ----------------------------------------------------------------


def _slices(root: Path) -> dict[tuple[str, str], dict[str, list[str]]]:
    """(partition, file id) -> {base instant: file names}, from the listing alone: a base
    file starts the slice of its instant; a log joins the slice its name says (table version
    6) or the latest base instant at or before its own instant (8+: the histories here are
    sequential, so a delta commit completes before the next instant starts)."""
    table = Table(str(root))
    out: dict[tuple[str, str], dict[str, list[str]]] = {}
    for rel in sorted(_listing(root)):
        part, _, name = rel.rpartition("/")
        if BaseFileName.matches(name):
            b = BaseFileName.parse(name)
            out.setdefault((part, b.file_id), {}).setdefault(b.instant, []).append(rel)
    for rel in sorted(_listing(root)):
        part, _, name = rel.rpartition("/")
        if LogFileName.matches(name):
            ln = LogFileName.parse(name)
            group = out.setdefault((part, ln.file_id), {})
            if table.version <= 6:
                key = ln.instant
            else:
                key = max((b for b in group if b <= ln.instant), default=None) or min(
                    [ln.instant, *(k for k in group if k < ln.instant)])
            group.setdefault(key, []).append(rel)
    return out


def _replaced(root: Path) -> dict[tuple[str, str], str]:
    tl = Table(str(root)).timeline
    out: dict[tuple[str, str], str] = {}
    for i in tl.completed(frozenset({"replacecommit"})):
        for part, fids in (tl.metadata(i).get("partitionToReplaceFileIds") or {}).items():
            for f in fids:
                out[(part, f)] = i.requested
    return out


def _completed(root: Path) -> list[str]:
    tl = Table(str(root)).timeline
    return [i.requested for i in tl.instants if i.is_completed
            and i.action in ("commit", "deltacommit", "replacecommit")]


def expected_by_commits(root: Path, ectr: str) -> set[str]:
    """KEEP_LATEST_COMMITS / KEEP_LATEST_BY_HOURS with earliest commit to retain ``ectr``."""
    replaced = _replaced(root)
    out: set[str] = set()
    for key, slices in _slices(root).items():
        if key in replaced:
            if replaced[key] < ectr:
                out.update(f for files in slices.values() for f in files)
            continue
        order = sorted(slices, reverse=True)
        keep = {order[0], next((b for b in order if b < ectr), None)}
        out.update(f for b in order if b < ectr and b not in keep for f in slices[b])
    return out


def expected_by_versions(root: Path, versions: int) -> set[str]:
    replaced = _replaced(root)
    out: set[str] = set()
    for key, slices in _slices(root).items():
        order = sorted(slices, reverse=True)
        gone = order if key in replaced else order[versions:]
        out.update(f for b in gone for f in slices[b])
    return out


def _as_of_reads(root: Path, since: str) -> dict[str, dict[str, Any]]:
    t = Table(str(root))
    return {i: _rows(t.read(as_of=i)) for i in _completed(root) if i >= since}


def _plan_files(plan: dict[str, Any], root: Path) -> set[str]:
    base = os.path.abspath(root)
    return {os.path.relpath(p, base) for p in cleaning.deleted_files(plan)}


def _clean_meta(root: Path, instant: str) -> dict[str, Any]:
    t = Table(str(root))
    inst = t.timeline.get(instant)
    assert inst is not None and inst.is_completed
    schema = CLEAN_METADATA_SCHEMA_014 if t.timeline.layout == 1 else CLEAN_METADATA_SCHEMA
    return decode_avro_as((Path(t.timeline.directory) / inst.file_name).read_bytes(), schema)


def check_files_partition(root: Path) -> None:
    """The MDT's ``files`` partition lists exactly the data files on storage."""
    if not (root / ".hoodie" / "metadata").is_dir():
        return
    t = MorTable(str(root), WriteConfig(fsync=False))
    view = MetadataTable(t.store, t.location, mode="rollover").files_view()
    listed = {(f if k == "." else f"{k}/{f}") for k, files in view.items() for f in files}
    assert listed == _listing(root)


# --- each policy, on each table version ------------------------------------------------------


POLICIES = [
    ("KEEP_LATEST_COMMITS", {"hoodie.clean.commits.retained": "1"}),
    ("KEEP_LATEST_COMMITS", {"hoodie.cleaner.commits.retained": "4"}),
    ("KEEP_LATEST_FILE_VERSIONS", {"hoodie.clean.policy": "KEEP_LATEST_FILE_VERSIONS",
                                   "hoodie.clean.fileversions.retained": "1"}),
    ("KEEP_LATEST_FILE_VERSIONS", {"hoodie.cleaner.fileversions.retained": "2"}),
]


@pytest.mark.parametrize("version", [6, 8, 9])
@pytest.mark.parametrize("policy, options", POLICIES,
                         ids=[f"{p}-{'-'.join(o.values())}" for p, o in POLICIES])
def test_each_policy_deletes_exactly_what_its_rules_give_up(
        tmp_path: Path, version: int, policy: str, options: dict[str, str]) -> None:
    root = tmp_path / "t"
    t = build(root, version)
    before_files = _listing(root)
    settings = settings_of(t, options)
    assert settings.policy == policy
    completed = _completed(root)
    if policy == "KEEP_LATEST_COMMITS":
        n = settings.commits_retained
        ectr = completed[len(completed) - n]
        expected = expected_by_commits(root, ectr)
        reads = _as_of_reads(root, ectr)
    else:
        expected = expected_by_versions(root, settings.file_versions_retained)
        ectr, reads = "", {}
    latest = _rows(Table(str(root)).read())
    assert expected, "the history leaves something to clean"
    plan = plan_clean(t, settings=settings)
    assert plan is not None and _plan_files(plan, root) == expected

    report = clean(t, options=options)
    (result,) = report.results
    assert _listing(root) == before_files - expected
    assert {f"{p}/{n}" for p, n in result.deleted} == expected and not result.failed
    assert result.earliest_retained == ectr
    # the completed clean holds Hudi's metadata: what was deleted, per partition
    meta = _clean_meta(root, result.instant)
    assert meta["earliestCommitToRetain"] == ectr
    assert meta["totalFilesDeleted"] == len(expected)
    assert meta["lastCompletedCommitTimestamp"] == completed[-1]
    for part, pm in meta["partitionMetadata"].items():
        assert pm["policy"] == policy and pm["isPartitionDeleted"] is False
        assert {f"{part}/{n}" for n in pm["successDeleteFiles"]} == {
            f for f in expected if f.startswith(f"{part}/")}
    # no retained instant lost a row; the latest reads the same in morlog and hudi-rs
    view = Table(str(root))
    assert _rows(view.read()) == latest
    assert _rows(_hudi_rs(root)) == latest
    assert {i: _rows(view.read(as_of=i)) for i in reads} == reads
    # hudi-rs has no time-travel check, but reads every retained instant the same
    assert {i: _hudi_rs_as_of(root, i) for i in reads} == reads
    check_files_partition(root)
    # nothing more to clean with the same settings
    assert plan_clean(t, settings=settings) is None


@pytest.mark.parametrize("version", [6, 9])
def test_keep_latest_by_hours_retains_the_commits_of_the_last_hours(
        tmp_path: Path, version: int) -> None:
    root = tmp_path / "t"
    t = build(root, version)
    completed = _completed(root)
    pivot = completed[-3]
    at = _dt.datetime.strptime(pivot[:14], "%Y%m%d%H%M%S") + _dt.timedelta(
        milliseconds=int(pivot[14:17]))
    settings = settings_of(t, {"hoodie.clean.hours.retained": "5"})
    assert settings.policy == "KEEP_LATEST_BY_HOURS"  # inferred from the one key given
    plan = plan_clean(t, settings=settings, now=at + _dt.timedelta(hours=5))
    assert plan is not None
    assert plan["earliestInstantToRetain"]["timestamp"] == pivot
    assert _plan_files(plan, root) == expected_by_commits(root, pivot)
    # all commits are younger than a day: the default keeps everything
    assert plan_clean(t, settings=settings_of(
        t, {"hoodie.clean.policy": "KEEP_LATEST_BY_HOURS"})) is None


def test_default_settings_keep_ten_commits(tmp_path: Path) -> None:
    small = tmp_path / "small"
    t = MorTable.create(str(small), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", table_version=9,
                        config=WriteConfig(fsync=False, hoodie_options=NO_AUTO_CLEAN))
    for i in range(4):
        t.upsert(_batch([(0, i, i)]))
    compact(t)
    for i in range(5):
        t.upsert(_batch([(0, 10 + i, i)]))
    assert len(_completed(small)) == 10
    before = _tree(small)
    assert clean(t).results == [] and _tree(small) == before  # 10 commits: all retained
    root = tmp_path / "t"
    t = build(root, 9)
    t.upsert(_batch([(0, 50, 1)]))
    t.upsert(_batch([(0, 51, 1)]))
    completed = _completed(root)
    assert len(completed) > 10
    ectr = completed[len(completed) - 10]
    expected = expected_by_commits(root, ectr)
    (result,) = clean(t).results
    assert result.earliest_retained == ectr
    assert expected and {f"{p}/{n}" for p, n in result.deleted} == expected


# --- hypothesis: random histories ------------------------------------------------------------


history = st.lists(st.one_of(
    st.tuples(st.just("upsert"), st.lists(st.integers(0, 8), min_size=1, max_size=4)),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 8), min_size=1, max_size=2)),
    st.tuples(st.just("compact")),
    st.tuples(st.just("overwrite"), st.integers(0, 8)),
), min_size=2, max_size=7)


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=history, version=st.sampled_from([6, 9]), retained=st.integers(1, 4),
       new_groups=st.sampled_from(["base", "log"]))
def test_random_histories_keep_every_retained_instant(
        tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[Any, ...]], version: int,
        retained: int, new_groups: str) -> None:
    root = tmp_path_factory.mktemp("h") / "t"
    t = MorTable.create(str(root), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", table_version=version,
                        config=WriteConfig(fsync=False, new_groups=new_groups,  # type: ignore[arg-type]
                                           hoodie_options=NO_AUTO_CLEAN))
    t.upsert(_batch([(k, 0, k) for k in range(9)]))
    for n, op in enumerate(ops, 1):
        if op[0] == "upsert":
            t.upsert(_batch([(k, n, 100 * n + k) for k in dict.fromkeys(op[1])]))
        elif op[0] == "delete":
            t.delete(_keys(list(dict.fromkeys(op[1]))))
        elif op[0] == "compact":
            compact(t)
        else:
            t.insert_overwrite(_batch([(op[1], n, -n)]))
    completed = _completed(root)
    options = {"hoodie.clean.commits.retained": str(retained)}
    latest = _rows(Table(str(root)).read())
    if len(completed) <= retained:
        assert plan_clean(t, settings=settings_of(t, options)) is None
        return
    ectr = completed[len(completed) - retained]
    expected = expected_by_commits(root, ectr)
    reads = _as_of_reads(root, ectr)
    before = _listing(root)
    clean(t, options=options)
    assert _listing(root) == before - expected
    view = Table(str(root))
    assert view.timeline.pending() == []
    assert {i: _rows(view.read(as_of=i)) for i in reads} == reads
    assert _rows(view.read()) == latest
    check_files_partition(root)


# --- pending services and savepoints ---------------------------------------------------------


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("options", [RETAIN_1, {"hoodie.clean.fileversions.retained": "1"}],
                         ids=["commits", "versions"])
def test_a_pending_compactions_slices_survive(tmp_path: Path, version: int,
                                              options: dict[str, str]) -> None:
    root = tmp_path / "t"
    t = build(root, version)
    t.upsert(_batch([(0, 8, 40), (3, 8, 41)]))
    instant = schedule_compaction(t, force=True)
    assert instant is not None
    plan = read_plan(t, t.table(), instant)
    needed = {f"{op['partitionPath']}/{n}" for op in plan["operations"]
              for n in [op["dataFilePath"], *op["deltaFilePaths"]] if n}
    listed = _listing(root)
    t.upsert(_batch([(0, 9, 50), (6, 9, 51)]))  # logs into the slices the compaction starts
    latest = _rows(Table(str(root)).read())
    after_plan = needed | (_listing(root) - listed)
    assert needed < after_plan
    clean(t, options=options)
    assert after_plan <= _listing(root)
    assert _rows(Table(str(root)).read()) == latest
    run_compaction(t, instant)
    assert _rows(Table(str(root)).read()) == latest
    clean(t, options=RETAIN_1)
    assert _rows(Table(str(root)).read()) == latest == _rows(_hudi_rs(root))


def _savepoint(root: Path, instant: str, files: dict[str, list[str]]) -> None:
    """A completed savepoint instant (``HoodieSavepointMetadata``) naming ``files``."""
    schema = {"type": "record", "name": "HoodieSavepointMetadata",
              "namespace": "org.apache.hudi.avro.model", "fields": [
                  {"name": "savepointedBy", "type": "string"},
                  {"name": "savepointedAt", "type": "long"},
                  {"name": "comments", "type": "string"},
                  {"name": "partitionMetadata", "type": {"type": "map", "values": {
                      "type": "record", "name": "HoodieSavepointPartitionMetadata",
                      "fields": [{"name": "partitionPath", "type": "string"},
                                 {"name": "savepointDataFile",
                                  "type": {"type": "array", "items": "string"}}]}}},
                  {"name": "version", "type": ["int", "null"], "default": 1}]}
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [{
        "savepointedBy": "test", "savepointedAt": 0, "comments": "",
        "partitionMetadata": {p: {"partitionPath": p, "savepointDataFile": names}
                              for p, names in files.items()}, "version": 1}])
    t = Table(str(root))
    d = Path(t.timeline.directory)
    (d / f"{instant}.savepoint.inflight").write_bytes(b"")
    name = f"{instant}.savepoint" if t.timeline.layout == 1 else f"{instant}_{instant}.savepoint"
    (d / name).write_bytes(buf.getvalue())


@pytest.mark.parametrize("version", [6, 9])
def test_a_savepointed_file_survives(tmp_path: Path, version: int) -> None:
    root = tmp_path / "t"
    t = build(root, version)
    first = _completed(root)[0]
    old = sorted(f for f in _listing(root) if first in f and f.endswith(".parquet"))[0]
    part, _, name = old.rpartition("/")
    _savepoint(root, first, {part: [name]})
    plan = plan_clean(t, settings=settings_of(t, RETAIN_1))
    assert plan is not None
    assert old not in _plan_files(plan, root)
    if version >= 8:  # Hudi 1.x notes the savepoints it saw (HUDI-7104)
        assert plan["extraMetadata"] == {"savepointed_timestamps": first}
    clean(t, options=RETAIN_1)
    assert (root / old).is_file()


# --- time travel -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", [6, 8])
def test_time_travel_before_the_earliest_retained_commit_is_refused(
        tmp_path: Path, version: int) -> None:
    root = tmp_path / "t"
    t = build(root, version)
    completed = _completed(root)
    early = completed[1]
    assert _rows(Table(str(root)).read(as_of=early))  # readable before any clean
    (result,) = clean(t, options={"hoodie.clean.commits.retained": "3"}).results
    keep = result.earliest_retained
    assert keep == completed[-3]
    with pytest.raises(UsageError) as exc:
        Table(str(root)).read(as_of=early)
    assert early in exc.value.message and result.instant in exc.value.message
    with pytest.raises(UsageError):
        list(Table(str(root)).snapshot(as_of=completed[-4]))
    assert Table(str(root)).read(as_of=keep).num_rows > 0


def test_time_travel_after_a_file_versions_clean_is_refused_before_the_timeline(
        tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = build(root, 9)
    (result,) = clean(t, options={"hoodie.clean.policy": "KEEP_LATEST_FILE_VERSIONS",
                                  "hoodie.clean.fileversions.retained": "1"}).results
    assert result.earliest_retained == ""
    first = _completed(root)[0]
    with pytest.raises(UsageError) as exc:
        Table(str(root)).read(as_of=str(int(first) - 1))
    assert result.instant in exc.value.message
    Table(str(root)).read(as_of=first)  # the first completed write is on the timeline


# --- the metadata table ----------------------------------------------------------------------


def test_bloom_filters_and_files_get_the_cleans_tombstones(tmp_path: Path) -> None:
    from .test_mdt_colstats import add_bloom_filters_partition

    root = tmp_path / "t"
    t = build(root, 9)
    add_bloom_filters_partition(root)
    t = MorTable(str(root), WriteConfig(fsync=False))
    compact(t)  # new base files: bloom records
    t.upsert(_batch([(0, 20, 1)]))
    (result,) = clean(t, options=RETAIN_1).results
    mdt = MetadataTable(t.store, t.location, mode="rollover")
    blooms = [r for r in mdt.partition_records("bloom_filters")
              if "key" in r and r["BloomFilterMetadata"]["timestamp"] == result.instant]
    deleted_bases = {(p, n) for p, n in result.deleted if BaseFileName.matches(n)}
    assert deleted_bases
    assert {r["key"] for r in blooms} == {cs.bloom_filter_key(p, n) for p, n in deleted_bases}
    for r in blooms:
        assert r["BloomFilterMetadata"] == {"type": "", "timestamp": result.instant,
                                            "bloomFilter": b"", "isDeleted": True}
    check_files_partition(root)
    # the MDT delta commit carries the clean's instant and completed before the clean
    assert mdt.timeline().get(result.instant).is_completed  # type: ignore[union-attr]
    assert _rows(_hudi_rs(root)) == _rows(Table(str(root)).read())


def test_a_deleted_partition_leaves_the_files_partition(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = build(root, 9)
    t.delete_partitions(["c"])
    t.upsert(_batch([(0, 30, 1)]))
    (result,) = clean(t, options=RETAIN_1).results
    assert result.partitions_deleted == ["c"]
    assert not (root / "c").exists()
    meta = _clean_meta(root, result.instant)
    assert meta["partitionMetadata"]["c"]["isPartitionDeleted"] is True
    mdt = MetadataTable(t.store, t.location, mode="rollover")
    assert "c" not in mdt.files_view()
    assert "c" not in partitions_view(mdt.files_records())
    check_files_partition(root)
    latest = _rows(Table(str(root)).read())
    assert {r["p"] for r in latest.values()} == {"a", "b"}
    assert _rows(_hudi_rs(root)) == latest


FIXTURES = tables()


@pytest.mark.skipif(not FIXTURES, reason=SKIP_REASON)
@pytest.mark.parametrize("src", FIXTURES, ids=[p.name for p in FIXTURES])
def test_hudi_tables_compacted_and_cleaned_stay_true(tmp_path: Path, src: Path) -> None:
    from .test_real_table_writes import _copy, check_metadata_table, write_three

    path = _copy(src, tmp_path)
    t = MorTable(str(path), WriteConfig(fsync=False))
    compact(t)
    expected = write_three(t, path)
    key = t.key_field
    completed = _completed(path)
    reads = {i: _rows_by(Table(str(path)).read(as_of=i), key) for i in completed[-1:]}
    before = _listing(path)
    report = clean(t, options=RETAIN_1)
    (result,) = report.results
    gone = {f"{p}/{n}" if p else n for p, n in result.deleted}
    assert gone and _listing(path) == before - gone
    view = Table(str(path))
    assert view.timeline.pending() == []
    assert _rows_by(view.read(), key) == expected
    assert _rows_by(_hudi_rs(path), key) == expected
    assert {i: _rows_by(view.read(as_of=i), key) for i in reads} == reads
    check_metadata_table(path)
    check_files_partition(path)
    listed = view.config.get("hoodie.table.metadata.partitions") or ""
    if "column_stats" in listed:
        mdt = MetadataTable(t.store, t.location, mode="rollover")
        live = cs.merge_records(mdt.partition_records("column_stats"))
        names = {n for _, n in result.deleted}
        assert not [k for k, v in live.items() if v["fileName"] in names]
        tombs = [r["ColumnStatsMetadata"] for r in mdt.partition_records("column_stats")
                 if "key" in r and r["ColumnStatsMetadata"]["isDeleted"]]
        assert {s["fileName"] for s in tombs} == names
        assert all(s["valueCount"] == s["nullCount"] == -1 and s["minValue"] is None
                   for s in tombs)


def _rows_by(t: pa.Table, key: str) -> dict[Any, dict[str, Any]]:
    return {r[key]: {k: v for k, v in r.items() if k not in META_FIELDS}
            for r in t.to_pylist()}


# --- failures and hostile plans --------------------------------------------------------------


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("where", ["delete", "completed"])
def test_a_failure_in_the_middle_leaves_a_clean_the_next_one_finishes(
        tmp_path: Path, version: int, where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from morlog.writers.core import store as store_mod

    root = tmp_path / "t"
    t = build(root, version)
    plan = plan_clean(t, settings=settings_of(t, RETAIN_1))
    assert plan is not None
    expected = _plan_files(plan, root)
    latest = _rows(Table(str(root)).read())
    before = _listing(root)
    calls = {"n": 0}
    if where == "delete":
        real = store_mod.LocalStore.delete

        def delete(self: Any, path: str) -> bool:
            if LogFileName.matches(os.path.basename(path)) or path.endswith(".parquet"):
                calls["n"] += 1
                if calls["n"] == 2:  # one file is gone already: the failure is in the middle
                    raise OSError(5, "I/O error")
            return real(self, path)
        monkeypatch.setattr(store_mod.LocalStore, "delete", delete)
    else:
        real_w = TimelineWriter.write

        def write(self: Any, instant: str, state: str, meta: Any,
                  action: str = "deltacommit") -> str:
            if action == "clean" and state == "completed" and calls["n"] == 0:
                calls["n"] += 1
                raise OSError(5, "I/O error")
            return str(real_w(self, instant, state, meta, action))
        monkeypatch.setattr(TimelineWriter, "write", write)
    with pytest.raises(WriteError) as exc:
        clean(t, options=RETAIN_1)
    assert "next 'morlog clean' finishes it" in exc.value.message
    monkeypatch.undo()
    view = Table(str(root))
    (pending,) = view.timeline.pending()
    assert (pending.action, pending.state) == ("clean", "INFLIGHT")
    assert _rows(view.read()) == latest
    gone_first = before - _listing(root)
    # a delete failing in the middle: one file went before it; at completion: all of them
    assert gone_first <= expected
    assert len(gone_first) == 1 if where == "delete" else gone_first == expected
    report = clean(t, options=RETAIN_1)
    assert report.pending == [pending.requested]
    assert report.results[0].instant == pending.requested
    assert _listing(root) == before - expected
    view = Table(str(root))
    assert view.timeline.pending() == []
    assert _rows(view.read()) == latest == _rows(_hudi_rs(root))
    meta = _clean_meta(root, pending.requested)
    failed = {f"{p}/{n}" for p, m in meta["partitionMetadata"].items()
              for n in m["failedDeleteFiles"]}
    assert failed == gone_first  # deleted by the first attempt: gone when re-run
    check_files_partition(root)


def _hostile_cases(root: Path) -> list[tuple[str, dict[str, Any]]]:
    a = sorted(f for f in _listing(root) if f.startswith("a/"))[0]
    name = a.split("/")[1]
    base = os.path.abspath(root)
    outside = os.path.join(os.path.dirname(base), "victim", name)
    return [
        ("outside", {"a": [outside]}),
        ("dotdot", {"a": [f"{base}/a/../../victim/{name}"]}),
        ("other partition", {"b": [f"{base}/a/{name}"]}),
        ("properties", {"a": [f"{base}/.hoodie/hoodie.properties"]}),
        ("partition metadata", {"a": [f"{base}/a/.hoodie_partition_metadata"]}),
        ("unsafe partition", {"../victim": [outside]}),
        ("scheme elsewhere", {"a": [f"s3a://bucket/{name}"]}),
        ("table root", {"": [f"{base}/{name}"]}),
    ]


@pytest.mark.parametrize("case", range(8))
def test_a_hostile_plan_is_refused_and_nothing_is_deleted(tmp_path: Path, case: int) -> None:
    root = tmp_path / "t"
    t = build(root, 9)
    what, files = _hostile_cases(root)[case]
    victim = tmp_path / "victim"
    victim.mkdir()
    name = sorted(f for f in _listing(root) if f.startswith("a/"))[0].split("/")[1]
    (victim / name).write_bytes(b"not the table's")
    plan = plan_clean(t, settings=settings_of(t, RETAIN_1))
    assert plan is not None
    good = next(iter(plan["filePathsToBeDeletedPerPartition"].values()))[0]
    plan["filePathsToBeDeletedPerPartition"] = {
        p: [good, *({"filePath": f, "isBootstrapBaseFile": False} for f in fs)]
        for p, fs in files.items()}
    TimelineWriter(t.store, t.location, layout=2).write("29990101000000000", "requested",
                                                        plan, "clean")
    before = _tree(root)
    with pytest.raises(CleanPlanError):
        clean(t)
    assert _tree(root) == before, what
    assert (victim / name).read_bytes() == b"not the table's"


def test_a_hostile_partition_to_delete_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = build(root, 9)
    plan = plan_clean(t, settings=settings_of(t, RETAIN_1))
    assert plan is not None
    for bad in ["../victim", ".hoodie", "a/.."]:
        plan["partitionsToBeDeleted"] = [bad]
        w = TimelineWriter(t.store, t.location, layout=2)
        w.write("29990101000000000", "requested", plan, "clean")
        before = _tree(root)
        with pytest.raises(CleanPlanError):
            clean(t)
        assert _tree(root) == before
        w.remove_pending("29990101000000000", "clean")


def test_a_version_1_plan_of_file_names_is_run(tmp_path: Path) -> None:
    """Plans of version 1 list names per partition (``filesToBeDeletedPerPartition``); they
    are made full paths as ``CleanPlanV2MigrationHandler`` does, then checked and run."""
    root = tmp_path / "t"
    t = build(root, 6)
    plan = plan_clean(t, settings=settings_of(t, RETAIN_1))
    assert plan is not None
    expected = _plan_files(plan, root)
    plan["filesToBeDeletedPerPartition"] = {
        p: [e["filePath"].rsplit("/", 1)[1] for e in es]
        for p, es in plan.pop("filePathsToBeDeletedPerPartition").items()}
    plan["version"] = 1
    TimelineWriter(t.store, t.location, layout=1).write("29990101000000000", "requested",
                                                        plan, "clean")
    before = _listing(root)
    (result,) = clean(t).results
    assert result.instant == "29990101000000000"
    assert _listing(root) == before - expected


# --- timeline bytes --------------------------------------------------------------------------


@pytest.mark.parametrize("version", [6, 9])
def test_the_clean_instant_files_are_hudis(tmp_path: Path, version: int) -> None:
    root = tmp_path / "t"
    t = build(root, version)
    (result,) = clean(t, options=RETAIN_1).results
    d = Path(Table(str(root)).timeline.directory)
    k = result.instant
    schema = CLEANER_PLAN_SCHEMA_014 if version == 6 else CLEANER_PLAN_SCHEMA
    requested = decode_avro_as((d / f"{k}.clean.requested").read_bytes(), schema)
    inflight = decode_avro_as((d / f"{k}.clean.inflight").read_bytes(), schema)
    assert requested == inflight  # the plan again (Hudi 0.14 / 1.0 read it from there)
    assert requested["version"] == 2 and requested["filesToBeDeletedPerPartition"] == {}
    assert all(os.path.isabs(e["filePath"]) for es in
               requested["filePathsToBeDeletedPerPartition"].values() for e in es)
    done = [n for n in os.listdir(d) if n.startswith(k) and n.endswith(".clean")]
    assert len(done) == 1 and (done[0] == f"{k}.clean" if version == 6
                               else done[0].startswith(f"{k}_"))
    meta = _clean_meta(root, k)
    assert meta["version"] == 2 and meta["startCleanTime"] == k
    assert meta["bootstrapPartitionMetadata"] == {}


# --- settings, trigger, inline ---------------------------------------------------------------


def test_settings_take_hudis_names_old_and_new() -> None:
    assert CleanSettings.of({}) == CleanSettings()
    s = CleanSettings.of({"hoodie.cleaner.policy": "keep_latest_file_versions",
                          "hoodie.cleaner.fileversions.retained": "5",
                          "hoodie.clean.max.commits": "3",
                          "hoodie.cleaner.incremental.mode": "false",
                          "hoodie.clean.automatic": "false"})
    assert (s.policy, s.file_versions_retained, s.max_commits, s.incremental, s.automatic) == (
        "KEEP_LATEST_FILE_VERSIONS", 5, 3, False, False)
    # the 1.x key wins over the older one
    assert CleanSettings.of({"hoodie.clean.commits.retained": "2",
                             "hoodie.cleaner.commits.retained": "7"}).commits_retained == 2
    assert CleanSettings.of({"hoodie.clean.trigger.max.commits": "4"}).max_commits == 4
    # inferred policy only when one retained key is given
    assert CleanSettings.of({"hoodie.clean.fileversions.retained": "1"}).policy == \
        "KEEP_LATEST_FILE_VERSIONS"
    assert CleanSettings.of({"hoodie.clean.fileversions.retained": "1",
                             "hoodie.clean.hours.retained": "1"}).policy == \
        "KEEP_LATEST_COMMITS"
    for bad in [{"hoodie.clean.policy": "KEEP_ALL"}, {"hoodie.clean.commits.retained": "x"},
                {"hoodie.clean.commits.retained": "-1"}, {"hoodie.clean.automatic": "yes"},
                {"hoodie.clean.trigger.strategy": "TIME"}]:
        with pytest.raises(UsageError):
            CleanSettings.of(bad)


def test_inline_clean_follows_the_trigger(tmp_path: Path) -> None:
    root = tmp_path / "t"
    opts = {"hoodie.clean.commits.retained": "1", "hoodie.clean.max.commits": "3"}
    build(root, 9)
    # the writer does not clean by itself here; ``t`` runs the inline clean it would run
    w = MorTable(str(root), WriteConfig(fsync=False, hoodie_options=NO_AUTO_CLEAN))
    t = MorTable(str(root), WriteConfig(fsync=False, hoodie_options=opts))
    report = inline_clean(t)
    assert report is not None and len(report.results) == 1  # no clean yet: all commits count
    compact(w)
    w.upsert(_batch([(0, 40, 1)]))
    # two commits since the last clean: something to clean, but below the trigger
    assert plan_clean(t) is not None
    before = _tree(root)
    report = inline_clean(t)
    assert report is not None and report.results == [] and _tree(root) == before
    w.upsert(_batch([(0, 41, 1)]))
    report = inline_clean(t)
    assert report is not None and len(report.results) == 1 and report.results[0].deleted
    off = MorTable(str(root), WriteConfig(fsync=False, hoodie_options={
        **opts, "hoodie.clean.automatic": "false"}))
    assert inline_clean(off) is None


# --- the command line ------------------------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    from morlog.cli import main

    rc = main(list(argv))
    out, _ = capsys.readouterr()
    return rc, out


def test_cli_dry_run_changes_nothing_and_json_has_the_plan(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "t"
    build(root, 9)
    before = _tree(root)
    rc, out = _cli(capsys, "clean", str(root), "--dry-run")
    assert rc == 0 and "nothing to clean" in out and _tree(root) == before
    rc, out = _cli(capsys, "clean", str(root), "--dry-run", "--json", "-o",
                   "hoodie.clean.commits.retained=1")
    assert rc == 0 and _tree(root) == before
    doc = json.loads(out)
    assert doc["dry_run"] is True and doc["cleans"] == []
    plan = doc["plan"]
    assert plan["policy"] == "KEEP_LATEST_COMMITS"
    completed = _completed(root)
    assert plan["earliestInstantToRetain"]["timestamp"] == completed[-1]
    expected = expected_by_commits(root, completed[-1])
    assert _plan_files(plan, root) == expected
    rc, out = _cli(capsys, "clean", str(root), "--dry-run", "-o",
                   "hoodie.clean.commits.retained=1")
    assert rc == 0 and "would clean" in out and _tree(root) == before
    rc, out = _cli(capsys, "clean", str(root), "-o", "hoodie.clean.commits.retained=1")
    assert rc == 0 and f"{len(expected)} file(s) deleted" in out
    assert _listing(root) == {f for f in before if not f.startswith(".hoodie")
                              and (LogFileName.matches(f.rsplit("/", 1)[-1])
                                   or BaseFileName.matches(f.rsplit("/", 1)[-1]))} - expected
    rc, out = _cli(capsys, "clean", str(root), "--json", "-o",
                   "hoodie.clean.commits.retained=1")
    assert rc == 0 and json.loads(out)["cleans"] == []


def test_cli_reports_a_refused_plan_as_an_error(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "t"
    t = build(root, 9)
    plan = plan_clean(t, settings=settings_of(t, RETAIN_1))
    assert plan is not None
    plan["filePathsToBeDeletedPerPartition"] = {"a": [{"filePath": "/etc/passwd",
                                                       "isBootstrapBaseFile": False}]}
    TimelineWriter(t.store, t.location, layout=2).write("29990101000000000", "requested",
                                                        plan, "clean")
    before = _tree(root)
    from morlog.cli import main

    assert main(["clean", str(root)]) == 2
    assert "outside the table" in capsys.readouterr().err
    assert _tree(root) == before



def test_a_clean_on_spark_deletes_what_the_local_clean_deletes(tmp_path: Path,
                                                               spark: Any) -> None:
    """``morlog.spark.clean``: the same plan, files deleted by Spark tasks (one per
    partition); the same files gone as a local clean of a copy, the rows the same."""
    from morlog.spark.write import clean as spark_clean

    root = tmp_path / "t"
    build(root, 9)
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    clean(MorTable(str(copy)), options=RETAIN_1)
    report = spark_clean(spark, str(root), RETAIN_1)
    assert report.results and any(r.deleted for r in report.results)
    assert _listing(root) == _listing(copy)
    assert _rows(Table(str(root)).read()) == _rows(Table(str(copy)).read())
    assert Table(str(root)).timeline.pending() == []
    check_files_partition(root)


def test_writes_clean_automatically_by_default(tmp_path: Path) -> None:
    """hoodie.clean.automatic (Hudi's default true): after a write, the slices no retained
    instant needs are cleaned, as a clean run by hand would; false leaves them."""
    root, manual = tmp_path / "auto", tmp_path / "manual"
    for path, options in ((root, {}), (manual, NO_AUTO_CLEAN)):
        t = MorTable.create(str(path), SCHEMA, key_field="id", partition_field="p",
                            ordering_field="ts",
                            config=WriteConfig(fsync=False, hoodie_options={
                                **options, "hoodie.clean.commits.retained": "2"}))
        t.upsert(_batch([(k, 1, k) for k in range(4)]))
        for i in range(3):  # three new slices of k0's file group
            t.upsert(_batch([(0, 2 + i, 10 + i)]))
            compact(t)
        t.upsert(_batch([(1, 9, 11)]))
    assert [i.action for i in Table(str(root)).timeline.completed(frozenset({"clean"}))]
    assert not Table(str(manual)).timeline.completed(frozenset({"clean"}))
    before = len(_listing(manual))
    clean(MorTable(str(manual)), options={"hoodie.clean.commits.retained": "2"})
    # the same files gone (the names differ: file ids and instants are the tables' own)
    assert len(_listing(manual)) < before
    assert len(_listing(root)) == len(_listing(manual))
    assert {k: {c: v for c, v in r.items() if not c.startswith("_hoodie")}
            for k, r in _rows(Table(str(root)).read()).items()} == {
        k: {c: v for c, v in r.items() if not c.startswith("_hoodie")}
        for k, r in _rows(Table(str(manual)).read()).items()}
