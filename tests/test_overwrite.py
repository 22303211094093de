"""Hudi's replace operations in the Python API: ``MorTable.insert_overwrite``,
``insert_overwrite_table``, ``delete_partitions`` (``morlog.writers.services.overwrite``).

After each operation morlog's reader and hudi-rs (the reference reader) read exactly the
expected rows; the replace commit's timeline files have Hudi's shape; a failed replace commit
is rolled back (its new base files deleted), and one a dead writer left pending is rolled
back by the next writer.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from morlog.logformat.errors import MorlogError, UsageError
from morlog.logformat.timeline_meta import decode_avro
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig


def _batch(ids: list[int], region: str | list[str], ts: int = 1) -> pa.Table:
    regions = region if isinstance(region, list) else [region] * len(ids)
    return pa.table({"id": [f"k{i:03d}" for i in ids], "region": regions,
                     "ts": pa.array([ts] * len(ids), pa.int64()),
                     "amount": [float(ts * 1000 + i) for i in ids]})


def _table(tmp_path: Path, version: int = 6, **cfg: Any) -> MorTable:
    """A table of ``version`` (6 by default: most cases check layout-1 timeline files)."""
    path = str(tmp_path / "t")
    t = MorTable.create(path, _batch([0], "eu").schema, key_field="id",
                        partition_field="region", ordering_field="ts",
                        config=WriteConfig(fsync=False, **cfg), table_version=version)
    t.upsert(_batch(list(range(0, 20)), ["eu" if i % 2 else "us" for i in range(20)]))
    t.upsert(_batch([30, 31], "asia"))
    return t


def _rows(path: str, as_of: str | None = None) -> set[tuple[str, str, int]]:
    return {(r["id"], r["region"], r["ts"]) for r in Table(path).read(as_of).to_pylist()}


def _hudi_rows(path: str) -> set[tuple[str, str, int]]:
    hudi = pytest.importorskip("hudi", reason="hudi (hudi-rs) is not installed")
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read()
    t = pa.Table.from_batches(batches) if batches else pa.table({})
    if not t.num_rows:
        return set()
    return set(zip(t.column("id").to_pylist(), t.column("region").to_pylist(),
                   t.column("ts").to_pylist(), strict=True))


def _both(path: str) -> set[tuple[str, str, int]]:
    mine = _rows(path)
    assert _hudi_rows(path) == mine, "hudi-rs reads other rows than morlog"
    return mine


def _timeline(path: str) -> dict[str, Path]:
    return {p.name: p for p in (Path(path) / ".hoodie").iterdir() if p.is_file()}


def test_insert_overwrite_replaces_the_partitions_the_batch_touches(tmp_path: Path) -> None:
    t = _table(tmp_path)
    before = _rows(t.path)
    live = {(s.partition, s.file_id) for s in t.table().file_slices()}
    r = t.insert_overwrite(_batch([100, 101, 102], "eu", ts=2))
    assert r.operation == "insert_overwrite" and r.inserts == 3
    assert set(r.replaced) == {"eu"}
    assert {("eu", f) for f in r.replaced["eu"]} == {g for g in live if g[0] == "eu"}
    want = {x for x in before if x[1] != "eu"} | {(f"k{i}", "eu", 2) for i in (100, 101, 102)}
    assert _both(t.path) == want
    # the timeline files, as Hudi writes a replace commit (layout 1)
    files = _timeline(t.path)
    assert files[f"{r.instant}.replacecommit.requested"].read_bytes() == b""
    assert f"{r.instant}.replacecommit.inflight" in files
    meta = json.loads(files[f"{r.instant}.replacecommit"].read_text())
    assert meta["operationType"] == "INSERT_OVERWRITE"
    assert meta["partitionToReplaceFileIds"] == r.replaced
    stats = meta["partitionToWriteStats"]
    assert list(stats) == ["eu"] and sum(s["numWrites"] for s in stats["eu"]) == 3
    for s in stats["eu"]:
        assert s["fileId"] not in r.replaced["eu"]  # new file groups, base files
        assert s["path"].endswith(f"_{r.instant}.parquet") and s["partitionPath"] == "eu"
        assert (Path(t.path) / s["path"]).is_file()
    # time travel before the replace still sees the replaced groups
    assert _rows(t.path, str(int(r.instant) - 1)) == before


def test_insert_overwrite_table_replaces_every_file_group(tmp_path: Path) -> None:
    t = _table(tmp_path)
    before = _rows(t.path)
    groups = {(s.partition, s.file_id) for s in t.table().file_slices()}
    r = t.insert_overwrite_table(_batch([7, 8], ["us", "mars"], ts=3))
    assert {(p, f) for p, fs in r.replaced.items() for f in fs} == groups
    assert _both(t.path) == {("k007", "us", 3), ("k008", "mars", 3)}
    meta = json.loads(_timeline(t.path)[f"{r.instant}.replacecommit"].read_text())
    assert meta["operationType"] == "INSERT_OVERWRITE_TABLE"
    assert _rows(t.path, str(int(r.instant) - 1)) == before
    # later writes find the new groups (and none of the replaced ones)
    t.upsert(_batch([7], "us", ts=4))
    assert _both(t.path) == {("k007", "us", 4), ("k008", "mars", 3)}
    # an empty batch empties the table
    t.insert_overwrite_table(_batch([], "us"))
    assert _both(t.path) == set()


def test_delete_partitions_by_name_and_pattern(tmp_path: Path) -> None:
    t = _table(tmp_path)
    before = _rows(t.path)
    r = t.delete_partitions(["asia"])
    assert set(r.replaced) == {"asia"} and r.inserts == 0
    meta = json.loads(_timeline(t.path)[f"{r.instant}.replacecommit"].read_text())
    assert meta["operationType"] == "DELETE_PARTITION"
    assert meta["partitionToWriteStats"] == {}
    assert _both(t.path) == {x for x in before if x[1] != "asia"}
    r = t.delete_partitions(["u*", "nowhere"])
    assert set(r.replaced) == {"us"}
    assert _both(t.path) == {x for x in before if x[1] == "eu"}
    with pytest.raises(UsageError, match="at least one partition"):
        t.delete_partitions([])
    with pytest.raises(UsageError):
        t.delete_partitions(["../elsewhere"])


def test_a_failed_replace_commit_is_rolled_back(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(tmp_path, max_file_size=2000, record_size=100)  # 20 records per new group
    before = _rows(t.path)
    real = MorTable.write_group
    calls: list[str] = []

    def failing(self: MorTable, *a: Any, **kw: Any) -> Any:
        out = real(self, *a, **kw)
        calls.append(a[2])
        if len(calls) == 2:
            raise OSError("disk full (injected)")
        return out

    monkeypatch.setattr(MorTable, "write_group", failing)
    with pytest.raises(Exception, match="injected"):
        t.insert_overwrite_table(_batch(list(range(200, 260)), "eu", ts=5))
    monkeypatch.undo()
    assert len(calls) == 2
    # the new base files are gone, the instant is rolled back, the table reads as before
    assert not [p for p in (Path(t.path) / "eu").iterdir()
                if any(p.name.startswith(f) for f in calls)]
    files = _timeline(t.path)
    assert not [n for n in files if n.endswith((".replacecommit.requested",
                                                ".replacecommit.inflight"))]
    assert [n for n in files if n.endswith(".rollback")]
    assert _both(t.path) == before


def test_a_replace_commit_a_dead_writer_left_is_rolled_back_by_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(tmp_path)
    before = _rows(t.path)
    real = MorTable.write_group
    written: list[str] = []

    def dying(self: MorTable, *a: Any, **kw: Any) -> Any:
        out = real(self, *a, **kw)
        written.extend(w.path for w in out)
        raise KeyboardInterrupt  # a BaseException: the writer "dies", nothing rolled back

    monkeypatch.setattr(MorTable, "write_group", dying)
    with pytest.raises(KeyboardInterrupt):
        t.insert_overwrite(_batch([500], "us", ts=6))
    monkeypatch.undo()
    pending = [n for n in _timeline(t.path) if n.endswith(".replacecommit.inflight")]
    assert len(pending) == 1 and written and all(Path(p).is_file() for p in written)
    assert _both(t.path) == before  # readers ignore the pending instant
    r = t.upsert(_batch([1], "eu", ts=7))
    assert r.rolled_back == [pending[0].split(".")[0]]
    assert not any(Path(p).exists() for p in written)
    assert not [n for n in _timeline(t.path) if ".replacecommit" in n]
    assert _both(t.path) == (before - {("k001", "eu", 1)}) | {("k001", "eu", 7)}


def test_a_pending_clustering_plan_of_hudi_is_left_alone(tmp_path: Path) -> None:
    t = _table(tmp_path)
    hoodie = Path(t.path) / ".hoodie"
    plan = hoodie / "20000101000000000.replacecommit.requested"
    out = io.BytesIO()
    fastavro.writer(out, {"type": "record", "name": "HoodieRequestedReplaceMetadata",
                          "fields": [{"name": "operationType", "type": "string"}]},
                    [{"operationType": "CLUSTER"}])
    plan.write_bytes(out.getvalue())  # a clustering plan written by Hudi
    r = t.upsert(_batch([2], "us", ts=8))
    assert r.rolled_back == [] and plan.read_bytes() == out.getvalue()
    # a plan that does not decode: morlog cannot tell which file groups it holds, so it
    # refuses to write (a typed error) rather than guess
    plan.write_bytes(b"Obj\x01 garbage")
    with pytest.raises(MorlogError):
        t.upsert(_batch([3], "us", ts=9))


def test_replace_operations_refuse_a_bad_batch_before_writing(tmp_path: Path) -> None:
    t = _table(tmp_path)
    n = len(_timeline(t.path))
    with pytest.raises(UsageError, match="lacks key or partition fields"):
        t.insert_overwrite(pa.table({"region": ["eu"], "ts": [1]}))
    with pytest.raises(UsageError, match="null or empty"):
        t.insert_overwrite_table(pa.table({"id": [None], "region": ["eu"], "ts": [1],
                                           "amount": [1.0]}))
    assert len(_timeline(t.path)) == n


@pytest.mark.parametrize("version", [8, 9])
def test_replace_commits_in_timeline_layout_2(tmp_path: Path, version: int) -> None:
    """Table versions 8/9: ``<instant>_<completed>.replacecommit`` with Avro metadata
    carrying ``partitionToReplaceFileIds``; morlog and hudi-rs read the replaced state."""
    t = _table(tmp_path, version)
    before = _rows(t.path)
    r = t.insert_overwrite(_batch([100, 101], "eu", ts=2))
    assert _both(t.path) == {x for x in before if x[1] != "eu"} | {
        ("k100", "eu", 2), ("k101", "eu", 2)}
    tl = Path(t.path) / ".hoodie" / "timeline"
    (done,) = [p for p in tl.iterdir() if p.name.startswith(r.instant + "_")]
    assert done.name.endswith(".replacecommit")
    meta = decode_avro(done.read_bytes())
    assert meta["operationType"] == "INSERT_OVERWRITE"
    assert meta["partitionToReplaceFileIds"] == r.replaced
    r2 = t.delete_partitions(["asia"])
    assert {x[1] for x in _both(t.path)} == {"eu", "us"}
    assert r2.replaced and set(r2.replaced) == {"asia"}
