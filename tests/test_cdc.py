"""Issue 26 (part B): CDC log files and the CDC query (spec/cdc.md).

The model-based test runs random histories (upserts, deletes, insert_overwrite,
insert_overwrite_table, delete_partition, compaction, log compaction, a writer killed as it
completes, upserts whose ordering value loses) into a CDC-enabled table in each
supplemental logging mode; the model knows every record's before and after at each commit,
and the CDC query over the whole range and over random sub-ranges returns exactly the
model's changes.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.blocks import META_FIELDS
from morlog.logformat.cdc import DATA_BEFORE_AFTER, LOGGING_MODES
from morlog.logformat.errors import MorlogError, UsageError
from morlog.logformat.naming import LogFileName
from morlog.readers.cdc import read_cdc
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig

SLOW = os.environ.get("HYPOTHESIS_PROFILE") == "slow"
SCHEMA = pa.schema([("id", pa.string()), ("part", pa.string()), ("ts", pa.int64()),
                    ("val", pa.float64()), ("note", pa.string())])
KEYS = 10


def _part(i: int) -> str:
    return f"p{i % 2}"


def _create(path: Path, mode: str, version: int = 9, **props: str) -> MorTable:
    return MorTable.create(str(path), SCHEMA, key_field="id", partition_field="part",
                           ordering_field="ts", table_version=version,
                           config=WriteConfig(fsync=False),
                           table_properties={"hoodie.table.cdc.enabled": "true",
                                             "hoodie.table.cdc.supplemental.logging.mode":
                                                 mode, **props})


def _rows(ids: list[int], step: int) -> pa.Table:
    return pa.table({"id": [f"k{i}" for i in ids], "part": [_part(i) for i in ids],
                     "ts": [step] * len(ids), "val": [step * 100.0 + i for i in ids],
                     "note": [f'n"{step}\\{i}\n' for i in ids]}, schema=SCHEMA)


def _data(image: str | None) -> dict[str, Any] | None:
    if image is None:
        return None
    return {k: v for k, v in json.loads(image).items() if k not in META_FIELDS}


def _actual(table: Table, begin: str | None = None, end: str | None = None
            ) -> list[tuple[Any, ...]]:
    out = []
    for r in read_cdc(table, begin, end).to_pylist():
        b, a = _data(r["before"]), _data(r["after"])
        key = (a or b or {}).get("id")
        out.append((r["ts_ms"], r["op"], key, json.dumps(b, sort_keys=True),
                    json.dumps(a, sort_keys=True)))
    return sorted(out)


def _expect(changes: list[tuple[str, str, str, dict[str, Any] | None, dict[str, Any] | None]]
            ) -> list[tuple[Any, ...]]:
    return sorted((ts, op, key, json.dumps(b, sort_keys=True), json.dumps(a, sort_keys=True))
                  for ts, op, key, b, a in changes)


_ids = st.lists(st.integers(0, KEYS - 1), min_size=1, max_size=5, unique=True)
_op = st.one_of(
    st.tuples(st.just("upsert"), _ids),
    st.tuples(st.just("upsert"), _ids),
    st.tuples(st.just("delete"), _ids),
    st.tuples(st.just("overwrite"), st.integers(0, 1), _ids),
    st.tuples(st.just("compact")),
    st.tuples(st.just("logcompact")),
    st.tuples(st.just("killed"), _ids),
    st.tuples(st.just("drop_partition"), st.integers(0, 1)),
    st.tuples(st.just("stale"), _ids),
    st.tuples(st.just("overwrite_table"), _ids),
)


class _Killed(BaseException):
    """The writer dies as it completes the instant (its CDC files are written already)."""


def _killed_upsert(mt: MorTable, batch: pa.Table) -> None:
    from unittest import mock

    from morlog.writers.core.timeline import TimelineWriter

    real = TimelineWriter.write

    def dying(self: TimelineWriter, instant: str, state: str, *args: Any, **kw: Any) -> Any:
        if state == "completed" and self.location.path == mt.location.path:
            raise _Killed()
        return real(self, instant, state, *args, **kw)

    with mock.patch.object(TimelineWriter, "write", dying), pytest.raises(_Killed):
        mt.upsert(batch)


def _run(root: Path, mode: str, version: int, ops: list[tuple[Any, ...]]
         ) -> tuple[Table, list[tuple[str, str, str, Any, Any]], list[str]]:
    """Run ``ops``; the model's changes (instant, op, key, before, after) and the instants
    of the writes."""
    mt = _create(root, mode, version, **{"hoodie.log.compaction.blocks.threshold": "2"})
    model: dict[str, dict[str, Any]] = {}
    changes: list[tuple[str, str, str, Any, Any]] = []
    instants = []
    for step, op in enumerate(ops, start=1):
        kind = op[0]
        if kind == "upsert":
            batch = _rows(op[1], step)
            inst = mt.upsert(batch).instant
            for r in batch.to_pylist():
                old = model.get(r["id"])
                changes.append((inst, "u" if old else "i", r["id"], old, r))
                model[r["id"]] = r
        elif kind == "delete":
            batch = _rows(op[1], step).select(["id", "part"])
            inst = mt.delete(batch).instant
            for r in batch.to_pylist():
                old = model.pop(r["id"], None)
                if old is not None:
                    changes.append((inst, "d", r["id"], old, None))
        elif kind == "overwrite":
            ids = [i for i in op[2] if i % 2 == op[1]] or [op[1]]
            batch = _rows(ids, step)
            inst = mt.insert_overwrite(batch).instant
            for key, old in sorted(model.items()):
                if old["part"] == _part(op[1]):
                    changes.append((inst, "d", key, old, None))
                    del model[key]
            for r in batch.to_pylist():
                changes.append((inst, "i", r["id"], None, r))
                model[r["id"]] = r
        elif kind == "stale":
            # an upsert whose ordering value loses to the stored one (event-time ordering):
            # the stored record stays, no change; a new key is an insert
            assert Table(str(root)).config.merge_mode == "EVENT_TIME_ORDERING"
            batch = _rows(op[1], 0)
            inst = mt.upsert(batch).instant
            for r in batch.to_pylist():
                old = model.get(r["id"])
                if old is None:
                    changes.append((inst, "i", r["id"], None, r))
                    model[r["id"]] = r
                elif old["ts"] <= r["ts"]:
                    # a tie goes to the incoming record: a new commit time, an update
                    changes.append((inst, "u", r["id"], old, r))
                    model[r["id"]] = r
        elif kind == "drop_partition":
            part = _part(op[1])
            gone = sorted((k, r) for k, r in model.items() if r["part"] == part)
            if not gone:
                continue
            inst = mt.delete_partitions([part]).instant
            for key, old in gone:
                changes.append((inst, "d", key, old, None))
                del model[key]
        elif kind == "overwrite_table":
            batch = _rows(op[1], step)
            inst = mt.insert_overwrite_table(batch).instant
            for key, old in sorted(model.items()):
                changes.append((inst, "d", key, old, None))
            model.clear()
            for r in batch.to_pylist():
                changes.append((inst, "i", r["id"], None, r))
                model[r["id"]] = r
        elif kind == "killed":
            _killed_upsert(mt, _rows(op[1], step))  # the next writer rolls it back
            continue
        elif kind == "compact":
            mt.compact()
            continue
        else:
            mt.log_compact()
            continue
        instants.append(inst)
    table = Table(str(root))
    snapshot = {r["id"]: {k: v for k, v in r.items() if k not in META_FIELDS}
                for r in table.read().to_pylist()}
    assert snapshot == model
    return table, changes, instants


def _bound(table: Table, instant: str) -> str:
    """The range bound that means "after ``instant``": its completion time (8+)."""
    if table.version >= 8:
        info = {i.instant: i for i in table.instants()}[instant]
        assert info.completed is not None
        return info.completed
    return instant


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("mode", LOGGING_MODES)
@settings(max_examples=40 if SLOW else 8, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=7), cut=st.tuples(st.floats(0, 1),
                                                               st.floats(0, 1)))
def test_cdc_query_equals_the_model(mode: str, version: int, ops: list[tuple[Any, ...]],
                                    cut: tuple[float, float]) -> None:
    root = Path(tempfile.mkdtemp(prefix="morlog-cdc-"))
    try:
        table, changes, instants = _run(root / "t", mode, version, ops)
        assert _actual(table) == _expect(changes)
        # a sub-range (begin exclusive, end inclusive) holds the changes of its commits
        lo, hi = sorted(int(c * len(instants)) for c in cut)
        begin = _bound(table, instants[lo - 1]) if lo > 0 else None
        end = _bound(table, instants[hi - 1]) if hi > 0 else None
        if end is not None and begin is not None and end <= begin:
            return
        inside = set(instants[lo:hi] if end is not None else instants[lo:])
        if hi == 0:
            inside = set(instants[lo:]) if end is None else set()
        got = _actual(table, begin, end)
        assert got == _expect([c for c in changes if c[0] in inside])
        cdc_files = [n for _, _, names in os.walk(root) for n in names
                     if LogFileName.matches(n) and LogFileName.parse(n).cdc]
        if mode != DATA_BEFORE_AFTER:
            assert cdc_files == []  # Hudi reads no CDC file of these modes beside a log
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_data_before_after_writes_cdc_files_named_in_cdc_stats(tmp_path: Path) -> None:
    """One CDC log file per file group a delta commit appends to, named like the log file
    it wrote (version 6: the slice's base instant) with the ``.cdc`` suffix; the write stat's
    cdcStats names it with its size; the snapshot ignores it."""
    mt = _create(tmp_path / "t", DATA_BEFORE_AFTER, 6)
    first = mt.upsert(_rows([0, 1, 2], 1)).instant
    inst = mt.upsert(_rows([0, 4], 2)).instant
    table = Table(str(tmp_path / "t"))
    md = table.timeline.metadata(table.timeline.get(inst))  # type: ignore[arg-type]
    stats = [s for ss in md["partitionToWriteStats"].values() for s in ss]
    cdc = {k: v for s in stats for k, v in (s.get("cdcStats") or {}).items()}
    assert len(cdc) == 1
    rel, size = next(iter(cdc.items()))
    name = LogFileName.parse(rel.rsplit("/", 1)[-1])
    assert name.cdc and name.instant == first and name.version == 1
    # the next commit's CDC file in the same slice takes the next version
    again = mt.upsert(_rows([0], 3)).instant
    md = table.timeline.metadata(Table(str(tmp_path / "t")).timeline.get(again))  # type: ignore[arg-type]
    names = [LogFileName.parse(k.rsplit("/", 1)[-1]) for ss in md["partitionToWriteStats"].values()
             for s in ss for k in (s.get("cdcStats") or {})]
    assert [(n.instant, n.version) for n in names] == [(first, 2)]
    assert (tmp_path / "t" / rel).stat().st_size == size
    assert sorted(table.read()["id"].to_pylist()) == ["k0", "k1", "k2", "k4"]
    # the CDC file holds the changes: the CDC query reads them as they are
    (tmp_path / "t" / rel).write_bytes(b"")
    with pytest.raises(MorlogError):
        read_cdc(table, None, None)


def test_the_cdc_query_needs_a_cdc_table(tmp_path: Path) -> None:
    mt = MorTable.create(str(tmp_path / "t"), SCHEMA, key_field="id", partition_field="part",
                         ordering_field="ts", config=WriteConfig(fsync=False))
    mt.upsert(_rows([0], 1))
    with pytest.raises(UsageError, match="hoodie.table.cdc.enabled"):
        read_cdc(Table(str(tmp_path / "t")), None, None)


def test_columns_and_instant_forms(tmp_path: Path) -> None:
    mt = _create(tmp_path / "t", "OP_KEY_ONLY", 6)
    first = mt.upsert(_rows([0, 1], 1)).instant
    mt.upsert(_rows([1], 2))
    table = Table(str(tmp_path / "t"))
    got = read_cdc(table, first, None, columns=["after", "op"])
    assert got.column_names == ["op", "after"] and got["op"].to_pylist() == ["u"]
    # yyyy-MM-dd HH:mm:ss.SSS means the same instant
    t = first
    text = f"{t[:4]}-{t[4:6]}-{t[6:8]} {t[8:10]}:{t[10:12]}:{t[12:14]}.{t[14:17]}"
    assert read_cdc(table, text, None).num_rows == 1
    with pytest.raises(UsageError, match="unknown CDC column"):
        read_cdc(table, None, None, columns=["nope"])


def test_an_unknown_logging_mode_is_refused(tmp_path: Path) -> None:
    from morlog.logformat.errors import UnsupportedSettingError

    with pytest.raises(UnsupportedSettingError):
        _create(tmp_path / "t", "CDC_EVERYTHING")


def test_table_changes_is_the_cdc_query(tmp_path: Path) -> None:
    import morlog

    mt = _create(tmp_path / "t", DATA_BEFORE_AFTER, 9)
    mt.upsert(_rows([0, 1], 1))
    mt.delete(_rows([1], 2).select(["id", "part"]))
    table = morlog.Table(str(tmp_path / "t"))
    assert table.changes().equals(read_cdc(table, None, None))
    assert table.changes(columns=["op"])["op"].to_pylist() == ["i", "i", "d"]


@pytest.mark.parametrize("version", [6, 8, 9])
def test_hudi_rs_reads_a_table_with_cdc_files(tmp_path: Path, version: int) -> None:
    """Snapshot readers ignore CDC log files: hudi-rs reads the rows morlog reads."""
    hudi = pytest.importorskip("hudi")
    mt = _create(tmp_path / "t", DATA_BEFORE_AFTER, version)
    mt.upsert(_rows([0, 1, 2, 3], 1))
    mt.upsert(_rows([0, 2, 5], 2))
    mt.delete(_rows([1], 3).select(["id", "part"]))
    mt.upsert(_rows([3, 6], 4))
    assert list((tmp_path / "t").rglob("*.cdc"))
    batches = hudi.HudiTableBuilder.from_base_uri(str(tmp_path / "t")).build().read()
    theirs = pa.Table.from_batches(batches) if batches else pa.table({})

    def rows(t: pa.Table) -> list[dict[str, Any]]:
        return sorted(({k: v for k, v in r.items() if k not in META_FIELDS}
                       for r in t.to_pylist()), key=lambda r: r["id"])

    ours = Table(str(tmp_path / "t")).read()
    assert rows(theirs) == rows(ours)
    assert sorted(r["id"] for r in rows(ours)) == ["k0", "k2", "k3", "k5", "k6"]


def test_the_metadata_table_lists_cdc_files(tmp_path: Path) -> None:
    """Hudi's files partition lists CDC log files (cdcStats) with the data files; morlog's
    metadata table listing equals the table's files."""
    from morlog.readers.mdt.read import partition_records
    from morlog.readers.storage import LocalStorage

    mt = _create(tmp_path / "t", DATA_BEFORE_AFTER, 9)
    mt.upsert(_rows([0, 2], 1))
    mt.upsert(_rows([0, 4], 2))
    cdc = sorted(p.name for p in (tmp_path / "t").rglob("*.cdc"))
    assert len(cdc) == 1
    listed = {name for r in partition_records(LocalStorage(), str(tmp_path / "t"), "files")
              if r.get("key") == "p0" for name in (r.get("filesystemMetadata") or {})}
    assert cdc[0] in listed


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("policy", [{"hoodie.clean.commits.retained": "1"},
                                    {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
                                     "hoodie.cleaner.fileversions.retained": "1"}],
                         ids=["commits", "versions"])
def test_cleaning_keeps_the_live_slices_of_a_table_with_cdc_files(
        tmp_path: Path, version: int, policy: dict[str, str]) -> None:
    """CDC log files belong to the slice their name's instant picks (version 6: the slice's
    base instant), so the cleaner never takes a CDC file for a newer slice and deletes the
    live one (a CDC file named after its delta commit did that in version 6); the CDC files
    of cleaned slices go with them, and the changes since the clean still read."""
    mt = _create(tmp_path / "t", DATA_BEFORE_AFTER, version, **policy)
    mt.upsert(_rows([0, 2, 4, 6], 1))
    for step in range(2, 6):
        mt.upsert(_rows([0], step))
        mt.clean()
    mt.compact()
    mt.upsert(_rows([2], 7))
    mt.clean()
    last = mt.upsert(_rows([4], 8)).instant
    mt.clean()
    table = Table(str(tmp_path / "t"))
    assert sorted(r["id"] for r in table.read().to_pylist()) == ["k0", "k2", "k4", "k6"]
    before = [i.instant for i in table.instants() if i.instant < last][-1]
    got = table.changes(_bound(table, before) if version >= 8 else before)
    assert [(r["op"], _data(r["after"])["id"]) for r in got.to_pylist()] == [("u", "k4")]


def test_repair_finds_nothing_wrong_with_cdc_files(tmp_path: Path) -> None:
    """CDC blocks carry CDC records, not the table's key column: repair does not take them
    for damaged data blocks (it did, and --apply would have voided them)."""
    from morlog.writers.repair import plan_repair

    mt = _create(tmp_path / "t", DATA_BEFORE_AFTER, 9)
    mt.upsert(_rows([0, 2], 1))
    mt.upsert(_rows([0, 4], 2))
    assert list((tmp_path / "t").rglob("*.cdc"))
    assert plan_repair(str(tmp_path / "t")).findings == []


def test_spark_writes_cdc_files(spark: Any, tmp_path: Path) -> None:
    """``format("morlog")`` and the distributed upsert commit through the same protocol:
    their commits of a CDC table carry CDC files, and the CDC query returns their changes."""
    from morlog.spark import upsert
    from morlog.spark.write import register

    register(spark)
    path = str(tmp_path / "t")
    mt = _create(tmp_path / "t", DATA_BEFORE_AFTER, 9)
    mt.upsert(_rows([0, 1, 2, 3], 1))
    opts = {"hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.table.name": "t"}
    spark.createDataFrame(_rows([0, 5], 2).to_pandas()).write.format("morlog").options(
        **opts).mode("append").save(path)
    upsert(spark, spark.createDataFrame(_rows([1, 6], 3).to_pandas()), path, key="id",
           partition="part", ordering="ts")
    table = Table(path)
    writes = [i.instant for i in table.instants() if i.action == "deltacommit"]
    got = sorted((r["ts_ms"], r["op"], _data(r["after"])["id"])  # type: ignore[index]
                 for r in table.changes(_bound(table, writes[0])).to_pylist())
    assert got == [(writes[1], "i", "k5"), (writes[1], "u", "k0"),
                   (writes[2], "i", "k6"), (writes[2], "u", "k1")]
    md = table.timeline.metadata(table.timeline.get(writes[2]))  # type: ignore[arg-type]
    assert any(s.get("cdcStats") for ss in md["partitionToWriteStats"].values() for s in ss)


@pytest.mark.parametrize("mode", ["append", "rollover"])
def test_a_group_written_twice_in_a_commit_names_its_cdc_file_once(tmp_path: Path,
                                                                   mode: str) -> None:
    """Records and deletes of one group in one commit are two write stats (two log files
    when logs roll over); only the first names the CDC file: Hudi's reader takes the CDC
    files of every stat that names them."""
    mt = MorTable.create(str(tmp_path / "t"), SCHEMA, key_field="id", partition_field="part",
                         ordering_field="ts", table_version=9,
                         config=WriteConfig(fsync=False, mode=mode),  # type: ignore[arg-type]
                         table_properties={"hoodie.table.cdc.enabled": "true"})
    mt.upsert(_rows([0, 2, 4], 1))
    s = mt.table().file_slices(None, "p0")[0]
    with mt.commit("upsert") as c:
        c.start([("p0", s.file_id)])
        writes = mt.write_group(c.instant, "p0", s.file_id, s.base_instant,
                                _rows([0], 2), _rows([2], 2).select(["id", "part"]))
        stats = {"p0": [w.stat(mt.store, mt.path) for w in writes]}
        c.complete(stats, {})
    assert len(stats["p0"]) == 2
    assert [bool(e.get("cdcStats")) for e in stats["p0"]] == [True, False]
    got = sorted((r["op"], _data(r["before"] or r["after"])["id"])  # type: ignore[index]
                 for r in Table(str(tmp_path / "t")).changes(_bound(
                     Table(str(tmp_path / "t")), Table(str(tmp_path / "t")).instants()[0]
                     .instant)).to_pylist())
    assert got == [("d", "k2"), ("u", "k0")]


@settings(max_examples=200 if SLOW else 60, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.text()), max_size=20),
       floats=st.lists(st.one_of(st.none(), st.floats()), min_size=20, max_size=20),
       ints=st.lists(st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)), min_size=20,
                     max_size=20))
def test_json_images_parse_back_to_the_values(values: list[str | None],
                                              floats: list[float | None],
                                              ints: list[int | None]) -> None:
    """The column-wise JSON of images is JSON that parses back to each row's values
    (strings with quotes, backslashes, control and non-ASCII characters; floats with NaN and
    infinities; 64-bit integers; nested records and lists; null records)."""
    import math

    from morlog.readers.changes import json_rows

    n = len(values)
    inner = pa.StructArray.from_arrays(
        [pa.array(ints[:n], pa.int64()), pa.array([[v, v] if v else None for v in values],
                                                   pa.list_(pa.string()))],
        names=["i", "l"], mask=pa.array([i % 3 == 2 for i in range(n)], pa.bool_()))
    t = pa.table({"s": pa.array(values, pa.string()), "f": pa.array(floats[:n], pa.float64()),
                  "r": inner, "b": pa.array([i % 2 == 0 for i in range(n)], pa.bool_())})
    got = [json.loads(j) for j in json_rows(t).to_pylist()]
    for row, want in zip(got, t.to_pylist(), strict=True):
        assert list(row) == ["s", "f", "r", "b"]
        assert row["s"] == want["s"] and row["r"] == want["r"] and row["b"] == want["b"]
        f, w = row["f"], want["f"]
        assert (f is None and w is None) or (math.isnan(f) and math.isnan(w)) or f == w


def test_hudis_write_options_create_a_cdc_table(tmp_path: Path) -> None:
    """``hoodie.table.cdc.enabled`` and the logging mode as write options (Hudi's CDC
    quick start passes them to the first write) create a CDC table: the client's and
    Spark's ``format("morlog")`` share this parsing."""
    from morlog.writers.options import parse_write_options

    opts = parse_write_options({"hoodie.datasource.write.recordkey.field": "id",
                                "hoodie.datasource.write.partitionpath.field": "part",
                                "hoodie.datasource.write.precombine.field": "ts",
                                "hoodie.table.cdc.enabled": "true",
                                "hoodie.table.cdc.supplemental.logging.mode": "data_before"})
    mt = MorTable.create_from_options(str(tmp_path / "t"), SCHEMA, opts)
    mt.upsert(_rows([0], 1))
    table = Table(str(tmp_path / "t"))
    assert table.config.get("hoodie.table.cdc.supplemental.logging.mode") == "DATA_BEFORE"
    assert table.changes()["op"].to_pylist() == ["i"]
    with pytest.raises(UsageError, match="logging mode"):
        parse_write_options({"hoodie.table.cdc.supplemental.logging.mode": "everything"})


def test_cdc_files_named_as_hudi_0_14_named_them_are_read(tmp_path: Path) -> None:
    """Hudi 0.13/0.14 wrote CDC log files with a ``-cdc`` suffix; cdcStats names them."""
    mt = _create(tmp_path / "t", DATA_BEFORE_AFTER, 6)
    mt.upsert(_rows([0, 2], 1))
    inst = mt.upsert(_rows([0], 2)).instant
    want = Table(str(tmp_path / "t")).changes().to_pylist()
    timeline = tmp_path / "t" / ".hoodie" / f"{inst}.deltacommit"
    md = json.loads(timeline.read_text())
    for stats in md["partitionToWriteStats"].values():
        for s in stats:
            for rel, size in list((s.get("cdcStats") or {}).items()):
                old = tmp_path / "t" / rel
                old.rename(old.with_name(old.name[:-4] + "-cdc"))
                s["cdcStats"] = {rel[:-4] + "-cdc": size}
    md["extraMetadata"].pop("morlog.cdc.crc32")
    timeline.write_text(json.dumps(md))
    assert Table(str(tmp_path / "t")).changes().to_pylist() == want
    assert sorted(Table(str(tmp_path / "t")).read()["id"].to_pylist()) == ["k0", "k2"]


@pytest.mark.parametrize("name", ["v8_trips_8i3u1d/v8_trips_8i3u1d",
                                  "v9_txns_simple_meta/v9_txns_simple_meta"])
def test_a_hudi_table_with_every_index_takes_cdc_files(tmp_path: Path, name: str) -> None:
    """A Hudi-written table (metadata table with files, column_stats, partition_stats,
    record_index, secondary indexes) switched to CDC: morlog's upsert writes CDC files, the
    files partition lists them, no column statistics cover them (Hudi's come from the
    write stats' paths), the CDC query returns the updates and hudi-rs reads the rows
    morlog reads."""
    import shutil

    from morlog.logformat.table_files import format_properties, parse_properties
    from morlog.readers.mdt.read import partition_records
    from morlog.readers.storage import LocalStorage
    from tests.hudi_fixtures import fixture_table

    hudi = pytest.importorskip("hudi")
    root = tmp_path / "t"
    shutil.copytree(fixture_table(name), root)
    pf = root / ".hoodie" / "hoodie.properties"
    props = parse_properties(pf.read_text())
    props["hoodie.table.cdc.enabled"] = "true"
    pf.write_text(format_properties(props))
    table = Table(str(root))
    rows = table.read()
    ordering = table.config.ordering_fields[0]
    batch = rows.select([c for c in rows.column_names if c not in META_FIELDS]).slice(0, 2)
    batch = batch.set_column(batch.column_names.index(ordering), ordering,
                             pa.compute.add(batch.column(ordering), 1))
    mt = MorTable(str(root), WriteConfig(
        hoodie_options={"hoodie.metadata.index.secondary.enable": "false"}))
    mt.upsert(batch)
    cdc = sorted(p.name for p in root.rglob("*.cdc"))
    assert cdc
    table = Table(str(root))
    assert table.changes(table.instants()[-2].completed)["op"].to_pylist() == ["u", "u"]
    storage = LocalStorage()
    listed = {n for r in partition_records(storage, str(root), "files")
              for n in (r.get("filesystemMetadata") or {})}
    assert set(cdc) <= listed
    stats = json.dumps(partition_records(storage, str(root), "column_stats"), default=str)
    assert ".cdc" not in stats
    theirs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(root)).build()
                                   .read())
    key = table.config.record_key_fields[0]

    def data(t: pa.Table) -> list[dict[str, Any]]:
        return sorted(({k: v for k, v in r.items() if k not in META_FIELDS}
                       for r in t.to_pylist()), key=lambda r: str(r[key]))

    assert data(theirs) == data(table.read())


def test_cdc_of_a_table_that_drops_partition_columns(tmp_path: Path) -> None:
    """A table that drops partition columns from its data files: the CDC blocks' images
    are records of the commit's schema, which lacks them (as Hudi's writer schema does)."""
    mt = _create(tmp_path / "t", DATA_BEFORE_AFTER, 9,
                 **{"hoodie.datasource.write.drop.partition.columns": "true"})
    first = mt.upsert(_rows([0, 2], 1)).instant
    mt.upsert(_rows([0], 2))
    mt.delete(_rows([2], 3).select(["id", "part"]))
    table = Table(str(tmp_path / "t"))
    got = [(r["op"], _data(r["before"]), _data(r["after"]))
           for r in table.changes(_bound(table, first)).to_pylist()]
    def row(ids: list[int], step: int) -> dict[str, Any]:
        r = _rows(ids, step).to_pylist()[0]
        del r["part"]
        return r

    assert got == [("u", row([0], 1), row([0], 2)), ("d", row([2], 1), None)]
