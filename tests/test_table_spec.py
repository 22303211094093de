"""The files the write client writes, checked against spec/table.md."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from morlog.compat.base_footer import parse_base_footer
from morlog.logformat import BlockType
from morlog.logformat.table_files import parse_properties
from morlog.logformat.timeline_meta import decode_avro
from morlog.readers import LogFileReader
from morlog.readers.table import Table
from morlog.writers.client import MorTable, new_instant
from morlog.writers.core.timeline import TimelineWriter
from morlog.writers.options import WriteConfig

SCHEMA = pa.schema([("id", pa.string()), ("part", pa.string()), ("ts", pa.int64()),
                    ("note", pa.string())])
CFG = WriteConfig(fsync=False, max_file_size=2_000_000, small_file_limit=1_500_000,
                  record_size=100)


def _batch(ids: range, ts: int) -> pa.Table:
    return pa.table({"id": [f"k{i:03d}" for i in ids], "part": ["p1" if i % 2 else "p2"
                                                                   for i in ids],
                     "ts": [ts] * len(ids), "note": [f"n{i}" for i in ids]}, schema=SCHEMA)


@pytest.fixture(params=[6, 9], ids=["v6", "v9"])
def table(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Path, MorTable]:
    t = MorTable.create(str(tmp_path), SCHEMA, key_field="id", partition_field="part",
                        ordering_field="ts", name="spec_table", config=CFG,
                        table_version=request.param)
    return tmp_path, t


def _timeline(path: Path, t: MorTable) -> Path:
    return path / ".hoodie" / ("timeline" if t.version >= 8 else "")


def _commit_meta(data: bytes, t: MorTable) -> dict[str, Any]:
    """Commit metadata: JSON in layout 1, Avro in layout 2 (spec/table.md)."""
    out: dict[str, Any] = decode_avro(data) if t.version >= 8 else json.loads(data)
    return out


def test_properties(table: tuple[Path, MorTable]) -> None:
    path, t = table
    props = parse_properties((path / ".hoodie" / "hoodie.properties").read_text())
    assert props["hoodie.table.type"] == "MERGE_ON_READ"
    assert props["hoodie.table.version"] == str(t.version)
    assert props["hoodie.table.name"] == "spec_table"
    assert props["hoodie.table.recordkey.fields"] == "id"
    assert props["hoodie.table.partition.fields"] == "part"
    if t.version == 6:
        assert props["hoodie.table.precombine.field"] == "ts"
        assert props["hoodie.timeline.layout.version"] == "1"
        assert props["hoodie.compaction.payload.class"].endswith("DefaultHoodieRecordPayload")
    else:
        assert props["hoodie.table.ordering.fields"] == "ts"
        assert props["hoodie.timeline.layout.version"] == "2"
        assert props["hoodie.timeline.path"] == "timeline"
        assert props["hoodie.record.merge.mode"] == "EVENT_TIME_ORDERING"
        assert props["hoodie.table.keygenerator.type"] == "SIMPLE"
        assert props["hoodie.table.checksum"] == str(zlib.crc32(b".spec_table"))
        assert (path / ".hoodie" / "timeline").is_dir()
    schema = json.loads(props["hoodie.table.create.schema"])
    names = [f["name"] for f in schema["fields"]]
    assert names == ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                     "_hoodie_partition_path", "_hoodie_file_name", "id", "part", "ts", "note"]
    assert all(f["type"] == ["null", "string"] for f in schema["fields"][:5])
    assert Table(str(path)).config.merge_mode == "EVENT_TIME_ORDERING"


def test_instants_increase() -> None:
    assert re.fullmatch(r"\d{17}", new_instant())
    assert new_instant("99990101000000000") == "99990101000000001"


def test_timeline_files_and_commit_metadata(table: tuple[Path, MorTable]) -> None:
    path, t = table
    r = t.upsert(_batch(range(20), 1))
    hoodie = _timeline(path, t)
    names = sorted(p.name for p in hoodie.iterdir() if p.is_file())
    i = r.instant
    (done,) = [n for n in names if n.endswith(".deltacommit")]
    if t.version == 6:
        assert done == f"{i}.deltacommit"
        assert names == [done, f"{i}.deltacommit.inflight", f"{i}.deltacommit.requested",
                         "hoodie.properties", "morlog.lock"]
    else:  # <requested>_<completed>.deltacommit, the completion time not before it
        assert re.fullmatch(rf"{i}_(\d{{17}})\.deltacommit", done)
        assert done.split("_")[1][:17] >= i
        assert names == [f"{i}.deltacommit.inflight", f"{i}.deltacommit.requested", done]
    assert (hoodie / f"{i}.deltacommit.requested").read_bytes() == b""  # as Hudi's
    inflight = _commit_meta((hoodie / f"{i}.deltacommit.inflight").read_bytes(), t)
    # the workload profile: every file group the commit writes, as write stats
    assert {(p, s["fileId"]) for p, ss in inflight["partitionToWriteStats"].items()
            for s in ss} == set(r.groups_touched)
    assert inflight["extraMetadata"] == {"morlog.writer": "1"}
    assert not (path / ".hoodie" / ".heartbeat" / i).exists()  # removed once done
    meta = _commit_meta((hoodie / done).read_bytes(), t)
    assert meta["operationType"] == "UPSERT" and meta["compacted"] is False
    assert json.loads(meta["extraMetadata"]["schema"])["name"] == "spec_table_record"
    assert meta["extraMetadata"]["morlog.inserts"] == "20"
    stats = [s for part in meta["partitionToWriteStats"].values() for s in part]
    assert sum(s["numWrites"] for s in stats) == 20
    for s in stats:
        assert (path / s["path"]).is_file()
        assert s["path"].startswith(s["partitionPath"] + "/")
    for part in ("p1", "p2"):
        md = (path / part / ".hoodie_partition_metadata").read_text()
        assert "partitionDepth=1" in md and "commitTime=" in md


def test_base_files_carry_hudis_footer(table: tuple[Path, MorTable]) -> None:
    path, t = table
    t.upsert(_batch(range(30), 1))
    bases = sorted(path.rglob("*.parquet"))
    assert bases
    for b in bases:
        assert re.fullmatch(r"[0-9a-f-]+-0_0-1-1_\d{17}\.parquet", b.name)
        pf = pq.ParquetFile(b)
        md = pf.metadata.metadata
        assert b"ARROW:schema" not in md
        info = parse_base_footer(md)
        assert info.type_code == "DYNAMIC_V0"
        keys = pf.read(columns=["_hoodie_record_key"]).column(0).to_pylist()
        assert info.min_key == min(keys) and info.max_key == max(keys)
        assert info.bloom is not None and info.bloom.contains(keys).all()
        assert pf.metadata.row_group(0).column(0).compression == "SNAPPY"  # Hudi's default
        rows = pf.read().to_pylist()
        fid = b.name.split("_")[0]
        instant = b.name.rsplit("_", 1)[1].split(".")[0]
        for n, row in enumerate(rows):
            assert row["_hoodie_commit_time"] == instant
            assert row["_hoodie_commit_seqno"] == f"{instant}_0_{n}"
            assert row["_hoodie_record_key"] == row["id"]
            assert row["_hoodie_partition_path"] == row["part"] == b.parent.name
            assert row["_hoodie_file_name"] == fid


class WriterDied(BaseException):
    """The writer process dies (an error it lives through is rolled back by the call)."""


def test_rollback_files(table: tuple[Path, MorTable], monkeypatch: pytest.MonkeyPatch) -> None:
    path, t = table
    t.upsert(_batch(range(10), 1))
    real = TimelineWriter.write

    def die_before_completion(self: TimelineWriter, instant: str, state: str,
                              meta: dict[str, Any], action: str = "deltacommit") -> None:
        if state == "completed" and action == "deltacommit":
            raise WriterDied("writer died")
        real(self, instant, state, meta, action)

    monkeypatch.setattr(TimelineWriter, "write", die_before_completion)
    with pytest.raises(WriterDied):
        t.upsert(_batch(range(5, 15), 2))
    monkeypatch.undo()
    failed = Table(str(path)).timeline.pending()[0].requested
    r = t.upsert(_batch(range(20, 22), 3))
    assert r.rolled_back == [failed]
    hoodie = _timeline(path, t)
    assert not list(hoodie.glob(f"{failed}.*"))  # the failed instant's files are gone
    assert not list(path.rglob(f"*{failed}*"))  # and every data file named after it
    (rb,) = list(hoodie.glob("*.rollback"))
    meta = decode_avro(rb.read_bytes())  # Avro, as Hudi's rollback metadata
    assert meta["commitsRollback"] == [failed]
    assert meta["instantsRollback"] == [{"commitTime": failed, "action": "deltacommit"}]
    requested = rb.name.split("_")[0].split(".")[0]
    plan = decode_avro((hoodie / f"{requested}.rollback.requested").read_bytes())
    assert plan["instantToRollback"] == {"commitTime": failed, "action": "deltacommit"}
    logs_given_a_block = [k for m in meta["partitionMetadata"].values()
                          for k in (m["rollbackLogFiles"] or {})]
    targets = []
    for log in path.rglob(".*.log.*"):
        with LogFileReader(str(log)) as reader:
            targets += [b.target_instant for b in reader.blocks()
                        if b.block_type == BlockType.COMMAND]
    if t.version == 6:
        # a ROLLBACK command block targets the failed instant in the logs it wrote to
        assert logs_given_a_block and all((path / k).is_file() for k in logs_given_a_block)
        assert failed in targets
    else:
        # table version 8+: every log file carries its delta commit, so deleting is all
        deleted = [f for m in meta["partitionMetadata"].values()
                   for f in m["successDeleteFiles"]]
        assert deleted and all(failed in f for f in deleted)
        assert not logs_given_a_block and not targets


def test_base_files_follow_the_hoodie_parquet_write_options(tmp_path: Path) -> None:
    """``hoodie.parquet.compression.codec`` set by the writer reaches the base files."""
    path = str(tmp_path / "t")
    schema = pa.schema([("id", pa.string()), ("v", pa.int64())])
    MorTable.create(path, schema, key_field="id")
    cfg = WriteConfig(hoodie_options={"hoodie.parquet.compression.codec": "zstd"})
    MorTable(path, cfg).upsert(pa.table({"id": ["a", "b"], "v": [1, 2]}))
    bases = list(Path(path).glob("*.parquet"))
    assert bases
    assert all(pq.ParquetFile(b).metadata.row_group(0).column(0).compression == "ZSTD"
               for b in bases)
