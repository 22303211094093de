"""What other (Hudi) writers left on the timeline is respected (issue: real Hudi tables, 4).

- a file group under a pending compaction takes new logs in the slice the compaction starts
  (table version 6: logs named after the compaction instant) and no routed inserts;
- a file group under a pending clustering takes no routed inserts, and updates to it are
  refused (Hudi's default update strategy rejects them);
- a pending delta commit of another writer with a live heartbeat is never rolled back (a
  ``ConcurrentWriterError``); one whose heartbeat expired (or that has none) is, as Hudi's
  next writer does.
"""

from __future__ import annotations

import io
import os
import time
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from morlog.logformat.errors import UsageError
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.core.store import ConcurrentWriterError
from morlog.writers.options import WriteConfig

SCHEMA = pa.schema([("id", pa.string()), ("part", pa.string()), ("ts", pa.int64())])


def _batch(ids: list[int], ts: int) -> pa.Table:
    return pa.table({"id": [f"k{i}" for i in ids], "part": ["p"] * len(ids),
                     "ts": [ts] * len(ids)}, schema=SCHEMA)


def _rows(path: Path) -> dict[str, int]:
    return {r["id"]: r["ts"] for r in Table(str(path)).read().to_pylist()}


def _hudi_rs(path: Path) -> dict[str, int]:
    import hudi

    batches = hudi.HudiTableBuilder.from_base_uri(str(path)).build().read()
    t = pa.Table.from_batches(batches) if batches else pa.table({})
    return {r["id"]: r["ts"] for r in t.to_pylist()}


def _avro(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), [record])
    return out.getvalue()


_SLICE = {"type": "record", "name": "Op", "fields": [
    {"name": "fileId", "type": "string"}, {"name": "partitionPath", "type": "string"},
    {"name": "baseInstantTime", "type": "string"}]}


def _timeline(path: Path, version: int) -> Path:
    return path / ".hoodie" / ("timeline" if version >= 8 else "")


def _one_group(tmp_path: Path, version: int) -> tuple[Path, MorTable, str, str]:
    path = tmp_path / f"t{version}"
    t = MorTable.create(str(path), SCHEMA, key_field="id", partition_field="part",
                        ordering_field="ts", table_version=version,
                        config=WriteConfig(fsync=False))
    r = t.upsert(_batch(list(range(5)), 1))
    ((part, fid),) = r.groups_touched
    return path, t, fid, r.instant


@pytest.mark.parametrize("version", [6, 9])
def test_pending_compaction_new_logs_go_to_the_new_slice(tmp_path: Path, version: int) -> None:
    path, t, fid, base = _one_group(tmp_path, version)
    compaction = str(int(base) + 1000)
    plan = {"type": "record", "name": "HoodieCompactionPlan", "fields": [
        {"name": "operations", "type": {"type": "array", "items": _SLICE}}]}
    (_timeline(path, version) / f"{compaction}.compaction.requested").write_bytes(
        _avro(plan, {"operations": [{"fileId": fid, "partitionPath": "p",
                                     "baseInstantTime": base}]}))
    r = t.upsert(_batch([1, 2, 9], 5))  # two updates, one insert
    assert r.updates == 2 and r.inserts == 1
    assert r.inserts_routed_to_existing == 0  # the group under compaction takes no inserts
    logs = [p.name for p in (path / "p").iterdir() if p.name.startswith(f".{fid}_")]
    if version == 6:
        assert logs and all(n.startswith(f".{fid}_{compaction}.log.") for n in logs)
    else:
        assert logs and all(n.startswith(f".{fid}_{r.instant}.log.") for n in logs)
    expected = {f"k{i}": 1 for i in range(5)} | {"k1": 5, "k2": 5, "k9": 5}
    assert _rows(path) == expected
    if version >= 8:
        assert _hudi_rs(path) == expected
    # table version 6: hudi-rs 0.5 reads only the slice named after the base file and skips
    # the logs of the pending compaction's slice, which Hudi's Java file-system view merges
    # in (getLatestMergedFileSlicesBeforeOrOn); morlog follows Java there


@pytest.mark.parametrize("version", [6, 9])
def test_pending_clustering_refuses_updates_and_takes_no_inserts(tmp_path: Path,
                                                                 version: int) -> None:
    path, t, fid, base = _one_group(tmp_path, version)
    clustering = str(int(base) + 1000)
    plan = {"type": "record", "name": "HoodieRequestedReplaceMetadata", "fields": [
        {"name": "operationType", "type": "string"},
        {"name": "clusteringPlan", "type": {"type": "record", "name": "Plan", "fields": [
            {"name": "inputGroups", "type": {"type": "array", "items": {
                "type": "record", "name": "Group", "fields": [
                    {"name": "slices", "type": {"type": "array", "items": _SLICE}}]}}}]}}]}
    action = "clustering" if version >= 8 else "replacecommit"
    (_timeline(path, version) / f"{clustering}.{action}.requested").write_bytes(_avro(plan, {
        "operationType": "CLUSTER", "clusteringPlan": {"inputGroups": [{"slices": [
            {"fileId": fid, "partitionPath": "p", "baseInstantTime": base}]}]}}))
    before = sorted(p.name for p in path.rglob("*") if p.name != "morlog.lock")
    with pytest.raises(UsageError, match="pending clustering"):
        t.upsert(_batch([1], 5))
    assert sorted(p.name for p in path.rglob("*") if p.name != "morlog.lock") == before
    r = t.upsert(_batch([7, 8], 5))  # inserts only: a new file group
    assert r.inserts == 2 and r.inserts_routed_to_existing == 0 and r.new_groups


def _foreign_pending(path: Path, version: int, instant: str) -> None:
    """A pending delta commit written by another writer (no morlog marker)."""
    tl = _timeline(path, version)
    (tl / f"{instant}.deltacommit.requested").write_bytes(b"")
    (tl / f"{instant}.deltacommit.inflight").write_bytes(b"")


@pytest.mark.parametrize("version", [6, 9])
def test_a_live_foreign_writer_is_never_rolled_back(tmp_path: Path, version: int) -> None:
    path, t, _, base = _one_group(tmp_path, version)
    foreign = str(int(base) + 10)
    _foreign_pending(path, version, foreign)
    hb = path / ".hoodie" / ".heartbeat"
    hb.mkdir(exist_ok=True)
    (hb / foreign).write_bytes(b"")  # fresh heartbeat: its writer is alive
    with pytest.raises(ConcurrentWriterError, match=foreign):
        t.upsert(_batch([1], 5))
    assert [i.requested for i in Table(str(path)).timeline.pending()] == [foreign]
    # three missed heartbeats later (Hudi's expiry) the instant counts as failed
    old = time.time() - 200
    os.utime(hb / foreign, (old, old))
    r = t.upsert(_batch([1], 5))
    assert r.rolled_back == [foreign]
    assert Table(str(path)).timeline.pending() == []
    assert _rows(path)["k1"] == 5


@pytest.mark.parametrize("version", [6, 9])
def test_a_foreign_instant_without_heartbeat_is_rolled_back(tmp_path: Path,
                                                            version: int) -> None:
    path, t, _, base = _one_group(tmp_path, version)
    foreign = str(int(base) + 10)
    _foreign_pending(path, version, foreign)
    r = t.upsert(_batch([2], 5))
    assert r.rolled_back == [foreign]
    assert _hudi_rs(path)["k2"] == 5


@pytest.mark.parametrize("version", [6, 9])
def test_keys_held_twice_are_updated_and_deleted_everywhere(tmp_path: Path,
                                                            version: int) -> None:
    """Hudi's ``insert`` may leave a key in two file groups; an upsert then updates both
    copies and a delete removes both, as Hudi's index tags every copy."""
    path = tmp_path / "t"
    t = MorTable.create(str(path), SCHEMA, key_field="id", partition_field="part",
                        ordering_field="ts", table_version=version,
                        config=WriteConfig(fsync=False, route_inserts=False))
    t.insert(_batch([1, 2], 1))
    t.insert(_batch([1, 3], 1))  # k1 again, in a new file group
    ids = sorted(r["id"] for r in Table(str(path)).read().to_pylist())
    assert ids == ["k1", "k1", "k2", "k3"]
    r = t.upsert(_batch([1], 7))
    assert r.updates == 1 and len(r.groups_touched) == 2
    rows = Table(str(path)).read().to_pylist()
    assert sorted((x["id"], x["ts"]) for x in rows) == [("k1", 7), ("k1", 7), ("k2", 1),
                                                        ("k3", 1)]
    t.delete(_batch([1], 8).select(["id", "part"]))
    assert sorted(x["id"] for x in Table(str(path)).read().to_pylist()) == ["k2", "k3"]
    assert sorted(_hudi_rs(path)) == ["k2", "k3"]


def test_repair_rolls_back_a_dead_writers_instant_and_its_metadata_table_commit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Table version 9 with a metadata table: a writer that dies after the metadata table's
    delta commit completed, before the data instant, leaves both to ``morlog repair
    --apply``, which rolls back both; hudi-rs (which lists files through the metadata table)
    and morlog read the table as before."""
    from morlog.cli import main
    from morlog.writers.core.timeline import TimelineWriter
    from morlog.writers.mdt.writer import MetadataTable

    path = tmp_path / "t"
    t = MorTable.create(str(path), SCHEMA, key_field="id", partition_field="part",
                        ordering_field="ts", config=WriteConfig(fsync=False))
    t.upsert(_batch([1, 2], 1))
    before = _rows(path)
    real = TimelineWriter.write

    class Died(BaseException):
        pass

    def dying(self: TimelineWriter, instant: str, state: str, meta: Any,
              action: str = "deltacommit") -> str:
        if state == "completed" and action == "deltacommit" and "metadata" not in \
                self.directory:
            raise Died()
        return str(real(self, instant, state, meta, action))

    monkeypatch.setattr(TimelineWriter, "write", dying)
    with pytest.raises(Died):
        t.upsert(_batch([3], 2))
    monkeypatch.undo()
    (failed,) = [i.requested for i in Table(str(path)).timeline.pending()]
    mdt = MetadataTable(t.store, t.location, mode=t.mode)
    assert mdt.timeline().get(failed) is not None  # the MDT saw the dead commit
    assert main(["repair", str(path), "--apply"]) == 0
    assert Table(str(path)).timeline.pending() == []
    inst = mdt.timeline().get(failed)
    assert inst is None or not inst.is_completed
    assert _rows(path) == before == _hudi_rs(path)
    on_disk = {p.name for p in (path / "p").iterdir() if not p.name.startswith(".hoodie")}
    assert set(mdt.files_view()["p"]) == on_disk
