"""Timeline records of the table services (spec/services.md §2): the compaction and log
compaction plans, the cleaner plan, the clean metadata and the commit metadata completing a
compaction, as ``morlog.logformat.timeline_meta`` encodes them — round trips of generated
records, the bytes Hudi wrote into the fixture tables, and the conformance vectors of
``spec/vectors/timeline/`` built by ``regenerate_services.py``."""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from morlog.logformat import timeline_meta as tm
from morlog.logformat.constants import BlockType, HeaderKey
from morlog.logformat.errors import ContentError, UsageError
from morlog.logformat.framing import decode_blocks
from morlog.logformat.hfile.content import decode_hfile_records
from morlog.logformat.naming import BaseFileName

from .hudi_fixtures import SKIP_REASON, tables
from .test_timeline_vectors import _named, _shape

VECTORS = Path(__file__).resolve().parent.parent / "spec" / "vectors" / "timeline"

#: (latest generation, Hudi 0.14 generation, the fields only the latest has)
GENERATIONS = [
    (tm.COMPACTION_PLAN_SCHEMA, tm.COMPACTION_PLAN_SCHEMA_014, {"missingSchedulePartitions"}),
    (tm.CLEANER_PLAN_SCHEMA, tm.CLEANER_PLAN_SCHEMA_014, {"extraMetadata"}),
    (tm.CLEAN_METADATA_SCHEMA, tm.CLEAN_METADATA_SCHEMA_014, {"extraMetadata"}),
]
SCHEMAS = [s for g in GENERATIONS for s in g[:2]] + [tm.COMMIT_METADATA_SCHEMA]


# --- generated records -------------------------------------------------------------------

_PRIMITIVES: dict[str, st.SearchStrategy[Any]] = {
    "null": st.none(),
    "string": st.text(max_size=12),
    "boolean": st.booleans(),
    "int": st.integers(-(2**31), 2**31 - 1),
    "long": st.integers(-(2**63), 2**63 - 1),
    "double": st.floats(allow_nan=False),
}


def _records(t: Any, names: dict[str, st.SearchStrategy[Any]], ns: str = "") -> Any:
    """A strategy of values of the Avro type ``t`` (named types registered in ``names``)."""
    if isinstance(t, list):
        return st.one_of([_records(x, names, ns) for x in t])
    if isinstance(t, str):
        if t in _PRIMITIVES:
            return _PRIMITIVES[t]
        return names[t if "." in t else f"{ns}.{t}"]
    kind = t["type"]
    if kind == "record":
        ns = t.get("namespace", ns)
        fields = {f["name"]: _records(f["type"], names, ns) for f in t["fields"]}
        names[f"{ns}.{t['name']}"] = strategy = st.fixed_dictionaries(fields)
        return strategy
    if kind == "array":
        return st.lists(_records(t["items"], names, ns), max_size=3)
    if kind == "map":
        return st.dictionaries(st.text(max_size=6), _records(t["values"], names, ns),
                               max_size=3)
    return _records(kind, names, ns)


def _of(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    strategy: st.SearchStrategy[dict[str, Any]] = _records(schema, {})
    return strategy


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: f"{s['name']}-{len(s['fields'])}")
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_round_trip(schema: dict[str, Any], data: st.DataObject) -> None:
    record = data.draw(_of(schema))
    encoded = tm.encode_avro(schema, record, sync_marker=bytes(16))
    assert encoded.endswith(bytes(16))
    assert tm.decode_avro(encoded) == record
    assert tm.decode_avro_as(encoded, schema) == record


@pytest.mark.parametrize("latest, older, extra", GENERATIONS,
                         ids=[g[0]["name"] for g in GENERATIONS])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_generations_read_each_other(latest: dict[str, Any], older: dict[str, Any],
                                     extra: set[str], data: st.DataObject) -> None:
    """A Hudi 0.14 reader of a 1.x record drops the new field; a 1.x reader of a 0.14 record
    gets the new field's default (null): Avro schema resolution, as Hudi's
    ``TimelineMetadataUtils.deserializeAvroMetadata`` does it."""
    new = data.draw(_of(latest))
    assert tm.decode_avro_as(tm.encode_avro(latest, new), older) == {
        k: v for k, v in new.items() if k not in extra}
    old = data.draw(_of(older))
    assert tm.decode_avro_as(tm.encode_avro(older, old), latest) == {
        **old, **dict.fromkeys(extra)}


# --- builders and decoding -----------------------------------------------------------------

def test_builders_fill_what_hudi_fills() -> None:
    plan = tm.compaction_plan([], log_compaction=True)
    assert plan["strategy"] == {"compactorClassName": tm.LOG_COMPACTION_EXECUTOR,
                                "strategyParams": {}, "version": 1}
    assert plan["preserveHoodieMetadata"] is True and plan["version"] == 2
    assert plan["missingSchedulePartitions"] == []
    major = tm.compaction_plan([])
    assert major["strategy"] is None and major["preserveHoodieMetadata"] is False
    part = tm.clean_partition_metadata("p", "KEEP_LATEST_COMMITS", ["a", "b"], ["c"])
    assert part["deletePathPatterns"] == ["a", "b", "c"] and part["isPartitionDeleted"] is False
    meta = tm.clean_metadata("2", 1, "", {"p": part})
    assert meta["totalFilesDeleted"] == 2 and meta["version"] == 2
    cleaner = tm.cleaner_plan("KEEP_LATEST_FILE_VERSIONS", {"p": ["/t/p/a"]})
    assert cleaner["filesToBeDeletedPerPartition"] == {}
    assert cleaner["filePathsToBeDeletedPerPartition"] == {
        "p": [{"filePath": "/t/p/a", "isBootstrapBaseFile": False}]}
    with pytest.raises(UsageError):
        tm.cleaner_plan("KEEP_EVERYTHING", {})
    # a slice without base file: the write is estimated at hoodie.parquet.max.file.size
    assert tm.compaction_metrics([80], None) == {
        "TOTAL_IO_READ_MB": 0.0, "TOTAL_IO_WRITE_MB": 120.0, "TOTAL_IO_MB": 120.0,
        "TOTAL_LOG_FILES_SIZE": 80.0, "TOTAL_LOG_FILES": 1.0}
    assert tm.compaction_metrics([3 * 2**20], 2**21)["TOTAL_IO_MB"] == 7.0


def test_decode_avro_as_refuses_what_is_not_the_record() -> None:
    assert tm.decode_avro_as(b"", tm.COMPACTION_PLAN_SCHEMA) == {}
    rollback = tm.rollback_plan("1", "deltacommit", [])
    with pytest.raises(ContentError):
        tm.decode_avro_as(rollback, tm.COMPACTION_PLAN_SCHEMA)
    with pytest.raises(ContentError):
        tm.decode_avro_as(b"Obj\x01garbage", tm.CLEANER_PLAN_SCHEMA, "x.clean.requested")


# --- the fixtures' own bytes ----------------------------------------------------------------

def _timelines() -> list[Path]:
    """The layout-2 timeline directories of the fixture tables and their metadata tables."""
    out = []
    for t in tables():
        for d in (t / ".hoodie" / "timeline", t / ".hoodie" / "metadata" / ".hoodie" / "timeline"):
            if d.is_dir():
                out.append(d)
    return out


def _body(data: bytes) -> bytes:
    """What follows an object container's header: the block(s) and the closing sync marker
    (a file of one block ends with its sync marker, which also closes the header)."""
    sync = data[-16:]
    return data[data.index(sync) + 16:]


def _instants(suffix: str) -> list[Path]:
    found = sorted(p for d in _timelines() for p in d.glob(f"*{suffix}"))
    if not found:
        pytest.skip(SKIP_REASON if not tables() else f"no {suffix} among the fixtures")
    return found


def _table_of(timeline_file: Path) -> Path:
    return timeline_file.parent.parent.parent


@pytest.mark.skipif(not tables(), reason=SKIP_REASON)
def test_compaction_plans_reencode_to_hudis_bytes() -> None:
    """Every ``compaction.requested`` Hudi 1.0/1.1 wrote: the same schema (names, order,
    types, defaults), the record decoded and encoded again gives the same block bytes, and
    morlog's builders rebuild it from the plan's file names and the files' sizes."""
    for p in _instants(".compaction.requested"):
        data = p.read_bytes()
        reader = fastavro.reader(io.BytesIO(data))
        assert _shape(_named(reader.writer_schema)) == _shape(_named(tm.COMPACTION_PLAN_SCHEMA))
        assert set(reader.metadata) == {"avro.schema"}  # Hudi omits avro.codec (null)
        plan = next(iter(reader))
        mine = tm.encode_avro(tm.COMPACTION_PLAN_SCHEMA, plan, sync_marker=data[-16:])
        assert _body(mine) == _body(data), p.name
        assert tm.decode_avro_as(data, tm.COMPACTION_PLAN_SCHEMA) == plan
        table = _table_of(p)
        ops = []
        for op in plan["operations"]:
            part = table / op["partitionPath"]
            logs = [(part / f).stat().st_size for f in op["deltaFilePaths"]]
            base = (part / op["dataFilePath"]).stat().st_size if op["dataFilePath"] else None
            ops.append(tm.compaction_operation(
                op["partitionPath"], op["fileId"], op["baseInstantTime"], op["deltaFilePaths"],
                op["dataFilePath"], metrics=tm.compaction_metrics(logs, base)))
        assert tm.compaction_plan(ops, extra_metadata=plan["extraMetadata"]) == plan, p.name
        if "metadata" not in p.parts:
            # the data table's default LogFileSizeBasedCompactionStrategy orders operations
            # by total log size, largest first (the metadata table uses another strategy)
            sizes = [op["metrics"]["TOTAL_LOG_FILES_SIZE"] for op in plan["operations"]]
            assert sizes == sorted(sizes, reverse=True)


@pytest.mark.skipif(not tables(), reason=SKIP_REASON)
def test_compaction_inflight_is_empty() -> None:
    for p in _instants(".compaction.inflight"):
        assert p.stat().st_size == 0, p


@pytest.mark.skipif(not tables(), reason=SKIP_REASON)
def test_compaction_commits_reencode_and_match_their_plans() -> None:
    """The completed compaction (``<C>_<done>.commit``): commit metadata Hudi's way (compacted,
    COMPACT, version null), byte-identical when re-encoded, one write stat per planned file
    group naming a new base file ``<fileId>_<token>_<C>.<ext>`` that exists with that size."""
    for plan_file in _instants(".compaction.requested"):
        instant = plan_file.name.split(".")[0]
        done = sorted(plan_file.parent.glob(f"{instant}_*.commit"))
        assert len(done) == 1, plan_file
        data = done[0].read_bytes()
        reader = fastavro.reader(io.BytesIO(data))
        assert _shape(_named(reader.writer_schema)) == _shape(_named(tm.COMMIT_METADATA_SCHEMA))
        meta = next(iter(reader))
        mine = tm.encode_avro(tm.COMMIT_METADATA_SCHEMA, meta, sync_marker=data[-16:])
        assert _body(mine) == _body(data)
        assert (meta["compacted"], meta["operationType"], meta["version"]) == (
            True, "COMPACT", None)
        assert set(meta["extraMetadata"]) == {"schema"}
        rebuilt = tm.compaction_commit_metadata(meta["partitionToWriteStats"],
                                                meta["extraMetadata"]["schema"])
        assert rebuilt == meta
        plan = tm.decode_avro_as(plan_file.read_bytes(), tm.COMPACTION_PLAN_SCHEMA)
        planned = {(op["partitionPath"], op["fileId"]): op for op in plan["operations"]}
        stats = [s for ss in meta["partitionToWriteStats"].values() for s in ss]
        written = {(s["partitionPath"], s["fileId"]) for s in stats}
        if "metadata" in plan_file.parts:
            # a file group whose merge holds no record gets no base file and no write stat
            # (the metadata table's record index groups holding only their empty first block)
            assert written <= set(planned)
        else:
            assert written == set(planned)
        table = _table_of(plan_file)
        for s in stats:
            op = planned[(s["partitionPath"], s["fileId"])]
            name = BaseFileName.parse(s["path"].rsplit("/", 1)[-1])
            assert (name.file_id, name.instant) == (s["fileId"], instant)
            assert s["totalLogFilesCompacted"] == len(op["deltaFilePaths"])
            if op["dataFilePath"] is not None:  # merged into the old base file
                assert (s["prevCommit"], s["prevBaseFile"]) == (
                    op["baseInstantTime"], op["dataFilePath"])
            else:  # a log-only slice: a new file is created
                assert (s["prevCommit"], s["prevBaseFile"]) == ("null", None)
            assert (table / s["path"]).stat().st_size == s["fileSizeInBytes"]
            if s["path"].endswith(".parquet"):
                # each record keeps the commit time and sequence number of its last write;
                # the file name field names the new file
                rows = pq.read_table(table / s["path"], columns=[
                    "_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_file_name"]
                                     ).to_pylist()
                assert rows and {r["_hoodie_file_name"] for r in rows} == {
                    s["path"].rsplit("/", 1)[-1]}
                assert all(r["_hoodie_commit_time"] < instant and r["_hoodie_commit_seqno"]
                           .startswith(r["_hoodie_commit_time"] + "_") for r in rows)


@pytest.mark.skipif(not tables(), reason=SKIP_REASON)
def test_metadata_table_records_a_compaction_as_added_base_files() -> None:
    """The metadata table gets a delta commit at the compaction's instant whose ``files``
    records add exactly the new base files with their sizes and delete nothing
    (``HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords``); the record index
    gets nothing (``convertMetadataToRecordIndexRecords`` skips COMPACT)."""
    checked = 0
    for plan_file in _instants(".compaction.requested"):
        table = _table_of(plan_file)
        mdt = table / ".hoodie" / "metadata"
        if "metadata" in plan_file.parts or not (mdt / "files").is_dir():
            continue
        instant = plan_file.name.split(".")[0]
        assert list((mdt / ".hoodie" / "timeline").glob(f"{instant}_*.deltacommit"))
        meta = tm.decode_avro(next(plan_file.parent.glob(f"{instant}_*.commit")).read_bytes())
        expected = {part: {s["path"].rsplit("/", 1)[-1]: s["fileSizeInBytes"] for s in stats}
                    for part, stats in meta["partitionToWriteStats"].items()}
        got: dict[str, dict[str, int]] = {}
        for log in (mdt / "files").glob(f".files-*_{instant}.log.*"):
            for fr in decode_blocks(log.read_bytes()):
                if fr.block_type != BlockType.HFILE_DATA:
                    continue
                text = fr.header.get(HeaderKey.SCHEMA) or ""
                for r in decode_hfile_records(fr.content, text):
                    if r["type"] == 2:  # a partition's file list
                        files = r["filesystemMetadata"]
                        assert not any(v["isDeleted"] for v in files.values())
                        got[r["key"]] = {k: v["size"] for k, v in files.items()}
        assert got == expected
        assert not list((mdt / "record_index").glob(f".*_{instant}.log.*"))
        checked += 1
    if not checked:
        pytest.skip("no fixture table with a metadata table has a compaction")


# --- conformance vectors ----------------------------------------------------------------------

def _generator() -> Any:
    path = VECTORS / "regenerate_services.py"
    spec = importlib.util.spec_from_file_location("regenerate_services", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATOR = _generator()


@pytest.mark.parametrize("case", sorted(GENERATOR.CASES))
def test_service_vectors_are_stable(case: str) -> None:
    """Each vector is what the builders and the encoder give today: the record in
    ``case.json`` is the generator's, and encoding it gives ``expected.hex``."""
    schema_name, record = GENERATOR.CASES[case]
    spec = json.loads((VECTORS / case / "case.json").read_text())
    expected = bytes.fromhex((VECTORS / case / "expected.hex").read_text().strip())
    assert spec["schema"] == schema_name
    assert spec["record"] == json.loads(json.dumps(record))
    sync = bytes.fromhex(spec["sync_marker"])
    assert sync == GENERATOR.SYNC
    assert tm.encode_avro(getattr(tm, schema_name), record, sync_marker=sync) == expected
    reader = fastavro.reader(io.BytesIO(expected))
    assert reader.writer_schema["name"].endswith(getattr(tm, schema_name)["name"])
