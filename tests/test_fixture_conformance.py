"""Conformance of morlog's codecs, reader and CLI with real Hudi-written log files.

Every fixture log (standalone ones, data-table logs and metadata-table logs) must parse without
a CORRUPT block, iterate the same way forwards and backwards, re-encode byte for byte, and
decode its contents exactly as ``docs/hudi-format-facts.md`` (sections 2-5, 7 and 11)
describes them. Record payloads are checked with fastavro and pyarrow directly, independently
of morlog's own decoders, and then compared with what morlog decodes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from morlog.cli import main
from morlog.logformat import BlockType, CommandType, HeaderKey, OrderingValue
from morlog.logformat.avro_content import decode_avro_content, encode_avro_content, encode_records
from morlog.logformat.delete_content import (
    DeleteRecord,
    decode_delete_content,
    decode_delete_payload,
    encode_delete_content,
    encode_delete_payload_value,
)
from morlog.logformat.framing import decode_blocks, encode_block
from morlog.logformat.naming import BaseFileName, LogFileName
from morlog.readers import LogFileReader

from . import hudi_fixtures as hf
from .hudi_rs import read_properties

pytestmark = [hf.requires_fixtures, pytest.mark.fixtures]

LOGS = hf.log_files()
EMPTY_DELETE_CONTENT = bytes.fromhex("00000003" "00000001" "00")
INT_WRAPPER = "org.apache.hudi.avro.model.IntWrapper"
#: header keys Hudi 0.x/1.x writers put into the fixtures (facts §3: only ordinals 0-3 occur)
FIXTURE_HEADER_KEYS = {int(k) for k in (HeaderKey.INSTANT_TIME, HeaderKey.TARGET_INSTANT_TIME,
                                        HeaderKey.SCHEMA, HeaderKey.COMMAND_BLOCK_TYPE)}


def _ids(paths: list[Path]) -> list[str]:
    return [hf.fixture_id(p) for p in paths]


def _is_mdt(log: Path) -> bool:
    return ".hoodie/metadata" in log.as_posix()


def _fixture(sub: str) -> Path:
    """The single log file of a standalone fixture directory, or a table by name."""
    assert hf.ROOT is not None
    matches = [p for p in hf.standalone_log_files() if p.parent.name == sub]
    assert len(matches) == 1, (sub, matches)
    return matches[0]


def _table(name: str) -> Path:
    matches = [t for t in hf.tables() if t.name == name]
    assert len(matches) == 1, (name, hf.tables())
    return matches[0]


def _table_logs(table: Path) -> list[Path]:
    """Data-table logs of ``table`` (not those of its metadata table)."""
    return [p for p in LOGS if hf.table_of(p) == table]


def _blocks(path: Path) -> list[dict[str, Any]]:
    """Everything of every block, read while the file is open."""
    out = []
    with LogFileReader(path) as reader:
        for b in reader.blocks():
            info: dict[str, Any] = {"block": b, "content": b.content(), "frame": b.frame(),
                                    "raw": b.raw(), "count": b.record_count()}
            if b.block_type == BlockType.DELETE:
                info["deletes"] = b.delete_records()
            if b.block_type == BlockType.AVRO_DATA:
                info["records"] = b.records()
            if b.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA,
                                BlockType.DELETE):
                info["keys"] = b.keys()
            out.append(info)
    return out


# --- 1. framing -------------------------------------------------------------------------------


def test_fixture_inventory() -> None:
    """The fixture set is the one the facts file describes (so no test silently runs on less)."""
    assert len(LOGS) == 205
    assert len(hf.standalone_log_files()) == 4
    assert sorted(t.name for t in hf.tables()) == [
        "v6_nonpartitioned_rollback", "v6_trips_8i1u", "v8_trips_8i3u1d", "v9_txns_simple_meta",
        "v9_txns_simple_nometa",
    ]
    assert sum(1 for p in LOGS if _is_mdt(p)) == 182


@pytest.mark.parametrize("log", LOGS, ids=_ids(LOGS))
def test_framing_round_trip(log: Path) -> None:
    data = log.read_bytes()
    with LogFileReader(log) as reader:
        forward = list(reader.blocks())
        backward = list(reader.reversed_blocks())
        frames = [b.frame() for b in forward]
        raws = [b.raw() for b in forward]

    assert forward, "a fixture log has at least one block"
    assert [b for b in forward if b.is_corrupt] == []

    def shape(b: Any) -> tuple[Any, ...]:
        return (b.offset, b.size, b.block_type, b.header, b.footer, b.content_offset,
                b.content_length, b.format_version)

    assert [shape(b) for b in backward] == [shape(b) for b in reversed(forward)]

    # blocks tile the file exactly, each block's bytes re-encode from its parsed fields
    pos = 0
    for b, frame, raw in zip(forward, frames, raws, strict=True):
        assert b.offset == pos
        assert b.format_version == 1
        assert encode_block(frame) == raw == data[b.offset : b.offset + b.size]
        # facts §2: reverse pointer = on-disk size - 8, blockLength = size - 14
        (block_length,) = struct.unpack_from(">q", raw, 6)
        (reverse,) = struct.unpack_from(">q", raw, len(raw) - 8)
        assert block_length == b.size - 14
        assert reverse == block_length + 6
        pos += b.size
    assert pos == len(data)
    assert b"".join(encode_block(f) for f in frames) == data
    # the pure in-memory decoder agrees with the lazy file reader
    assert decode_blocks(data, path=str(log)) == frames


# --- 2. block contents ------------------------------------------------------------------------


def _check_avro_block(b: Any, content: bytes) -> None:
    schema_json = b.header.get(HeaderKey.SCHEMA)
    assert schema_json is not None
    parsed = fastavro.parse_schema(json.loads(schema_json))

    # independent framing read (facts §4): i32 version, i32 count, (i32 len, bytes)*
    version, count = struct.unpack_from(">ii", content, 0)
    assert version == 3
    pos = 8
    raw_records = []
    decoded = []
    for _ in range(count):
        (length,) = struct.unpack_from(">i", content, pos)
        pos += 4
        raw = content[pos : pos + length]
        assert len(raw) == length
        pos += length
        buf = io.BytesIO(raw)
        rec = fastavro.schemaless_reader(buf, parsed, None)
        assert buf.tell() == length, "every record consumes exactly its length prefix"
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, rec)
        assert out.getvalue() == raw, "fastavro re-encodes the record byte for byte"
        raw_records.append(raw)
        decoded.append(rec)
    assert pos == len(content), "no bytes after the last record of a Hudi-written block"

    # morlog's codecs agree with the independent read
    framing = decode_avro_content(content)
    assert framing.version == 3
    assert list(framing.records) == raw_records
    assert framing.end == len(content)
    assert encode_avro_content(raw_records, version) == content
    assert encode_avro_content(encode_records(decoded, schema_json), version) == content
    assert b.record_count() == count
    assert b.records() == decoded
    table = b.to_arrow()
    assert table.num_rows == count
    assert table.column_names == [f["name"] for f in json.loads(schema_json)["fields"]]


def _check_delete_block(b: Any, content: bytes) -> None:
    version, value = decode_delete_payload(content)
    assert version == 3
    assert encode_delete_payload_value(value, version) == content

    dc = decode_delete_content(content)
    assert dc.version == 3
    assert encode_delete_content(list(dc.records)) == content
    assert b.delete_records() == dc.records
    assert b.record_count() == len(dc.records) == len(value["deleteRecordList"])

    # facts §5: every fixture delete carries IntWrapper(0) (SQL DELETE's natural order)
    for item, rec in zip(value["deleteRecordList"], dc.records, strict=True):
        assert item["orderingVal"] == (INT_WRAPPER, {"value": 0})
        assert rec.ordering_value == OrderingValue.natural()
        assert isinstance(rec.record_key, str) and rec.record_key
        assert isinstance(rec.partition_path, str)
        assert item["recordKey"] == rec.record_key
        assert item["partitionPath"] == rec.partition_path
    # the same records rebuilt from plain values encode to the same bytes
    rebuilt = [DeleteRecord(r.record_key, r.partition_path, OrderingValue("int", 0))
               for r in dc.records]
    assert encode_delete_content(rebuilt) == content

    if content == EMPTY_DELETE_CONTENT:
        assert dc.records == ()
    # facts §3: data-table deletes and non-empty MDT deletes carry the writer schema
    assert (HeaderKey.SCHEMA in b.header) == bool(dc.records)


def _check_parquet_block(b: Any, content: bytes) -> None:
    assert content[:4] == b"PAR1" and content[-4:] == b"PAR1"
    pf = pq.ParquetFile(pa.BufferReader(content))
    table = b.to_arrow()
    assert b.record_count() == table.num_rows == pf.metadata.num_rows
    assert table.equals(pf.read())
    # facts §5: Hudi's fixture parquet blocks are GZIP, without Hudi bloom/min/max footers
    md = pf.metadata
    for rg in range(md.num_row_groups):
        for col in range(md.num_columns):
            assert md.row_group(rg).column(col).compression == "GZIP"
    kv = md.metadata or {}
    assert b"org.apache.hudi.bloomfilter" not in kv
    assert b"hoodie_min_record_key" not in kv
    assert b.header.get(HeaderKey.SCHEMA) is not None


def _check_hfile_block(b: Any, content: bytes) -> None:
    # facts §5: a whole HFile v3 (spec/mdt.md §2)
    assert content.startswith(b"DATABLK*")
    # trailer version: (minor << 24) | major, major 3; Hudi 0.x/1.1 fixtures minor 0, 1.0 minor 3
    assert content[-3:] == b"\x00\x00\x03" and content[-4] in (0, 3)
    count = b.record_count()
    assert count is not None and count == len(b.records()) == len(b.keys())
    assert b.header.get(HeaderKey.SCHEMA) is not None


def _check_command_block(b: Any, content: bytes) -> None:
    assert content == b""
    assert b.content_length == 0
    assert b.command_type == CommandType.ROLLBACK
    assert b.header.get(HeaderKey.COMMAND_BLOCK_TYPE) == "0"
    assert b.header.get(HeaderKey.TARGET_INSTANT_TIME) is not None
    assert b.record_count() == 0


_CHECKS = {
    BlockType.AVRO_DATA: _check_avro_block,
    BlockType.DELETE: _check_delete_block,
    BlockType.PARQUET_DATA: _check_parquet_block,
    BlockType.HFILE_DATA: _check_hfile_block,
    BlockType.COMMAND: _check_command_block,
}


@pytest.mark.parametrize("log", LOGS, ids=_ids(LOGS))
def test_block_contents(log: Path) -> None:
    name = LogFileName.parse(log.name)
    with LogFileReader(log) as reader:
        for b in reader.blocks():
            assert b.block_type in _CHECKS, f"unexpected block type {b.block_type!r}"
            assert len(b.footer) == 0, "every fixture block has an empty footer"
            assert {k for k, _ in b.header} <= FIXTURE_HEADER_KEYS
            instant = b.header.get(HeaderKey.INSTANT_TIME)
            assert instant is not None and len(instant) == 17 and instant.isdigit()
            if b.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
                assert not _is_mdt(log)
            _CHECKS[b.block_type](b, b.content())
    assert name.ext == "log" and not name.cdc


# --- 3. per-fixture expectations --------------------------------------------------------------


def test_standalone_rollback_fixture() -> None:
    log = _fixture("valid_log_rollback")
    data = log.read_bytes()
    assert len(data) == 105
    name = LogFileName.parse(log.name)
    assert (name.version, name.write_token) == (2, "1-0-1")
    [b] = _blocks(log)
    block = b["block"]
    assert block.block_type == BlockType.COMMAND
    assert block.header.as_dict() == {
        "INSTANT_TIME": "20250126040936578",
        "TARGET_INSTANT_TIME": "20250126040826878",
        "COMMAND_BLOCK_TYPE": "0",
    }
    assert block.target_instant == "20250126040826878"
    assert b["content"] == b""
    assert struct.unpack_from(">q", data, 6)[0] == 91  # blockLength
    assert struct.unpack_from(">q", data, 97)[0] == 97  # reverse pointer


def test_standalone_avro_fixture() -> None:
    log = _fixture("valid_log_avro_data")
    assert log.stat().st_size == 1172
    [b] = _blocks(log)
    block = b["block"]
    assert block.block_type == BlockType.AVRO_DATA
    assert sorted(block.header.as_dict()) == ["INSTANT_TIME", "SCHEMA"]
    assert struct.unpack_from(">i", b["content"], 0)[0] == 3
    assert b["count"] == 1
    assert b["keys"] == ["334e26e9-8355-45cc-97c6-c31daf0df330"]


def test_standalone_parquet_fixture() -> None:
    log = _fixture("valid_log_parquet_data")
    assert log.stat().st_size == 5311
    [b] = _blocks(log)
    assert b["block"].block_type == BlockType.PARQUET_DATA
    assert b["count"] == 1


def test_standalone_delete_fixture() -> None:
    log = _fixture("valid_log_delete")
    assert log.stat().st_size == 1098
    [b] = _blocks(log)
    block = b["block"]
    assert block.block_type == BlockType.DELETE
    records = b["deletes"]
    assert b["count"] == len(records) == 3
    assert len({r.record_key for r in records}) == 3
    assert all(r.ordering_value == OrderingValue("int", 0) for r in records)
    assert b["keys"] == [r.record_key for r in records]


def test_v6_nonpartitioned_rollback_table() -> None:
    table = _table("v6_nonpartitioned_rollback")
    logs = sorted(_table_logs(table), key=lambda p: LogFileName.parse(p.name).sort_key())
    names = [LogFileName.parse(p.name) for p in logs]
    assert [n.version for n in names] == [1, 2, 3]
    types = [[b["block"].block_type for b in _blocks(p)] for p in logs]
    assert types == [[BlockType.PARQUET_DATA], [BlockType.COMMAND], [BlockType.PARQUET_DATA]]
    [first], [rollback], [third] = (_blocks(p) for p in logs)
    # the rollback targets the instant of log.1's block, and sits between the two data logs
    assert rollback["block"].target_instant == first["block"].instant == "20250126040826878"
    assert first["block"].instant < rollback["block"].instant < third["block"].instant
    # facts §11: log.2 is byte-identical to the standalone rollback fixture
    assert logs[1].read_bytes() == _fixture("valid_log_rollback").read_bytes()
    # facts §1: table v6 names carry the base instant, not the delta commit
    bases = [BaseFileName.parse(p.name) for p in table.iterdir() if p.suffix == ".parquet"]
    for n, p in zip(names, logs, strict=True):
        assert any(bf.file_id == n.file_id and bf.instant == n.instant for bf in bases)
        assert all(b["block"].instant != n.instant for b in _blocks(p))


def test_v6_trips_table() -> None:
    [log] = _table_logs(_table("v6_trips_8i1u"))
    [b] = _blocks(log)
    assert b["block"].block_type == BlockType.AVRO_DATA
    assert b["keys"] == ["9909a8b1-2d15-4d3d-8ec9-efc48c536a00"]


@pytest.mark.parametrize("name", ["v9_txns_simple_meta", "v9_txns_simple_nometa"])
def test_v9_tables(name: str) -> None:
    logs = _table_logs(_table(name))
    kinds = Counter(b["block"].block_type for p in logs for b in _blocks(p))
    assert kinds == Counter({BlockType.AVRO_DATA: 3, BlockType.DELETE: 2})
    for p in logs:
        instant = LogFileName.parse(p.name).instant
        # facts §1: table v8+ log names carry the delta commit that wrote them
        assert all(b["block"].instant == instant for b in _blocks(p))


def test_metadata_table_logs() -> None:
    table = _table("v9_txns_simple_meta")
    mdt = table / ".hoodie" / "metadata"
    logs = [p for p in LOGS if hf.table_of(p) == mdt]
    assert len(logs) == 119
    kinds: Counter[BlockType] = Counter()
    empty_deletes = 0
    for p in logs:
        name = LogFileName.parse(p.name)
        for i, b in enumerate(_blocks(p)):
            block = b["block"]
            kinds[block.block_type] += 1
            assert block.block_type in (BlockType.HFILE_DATA, BlockType.DELETE)
            if b["content"] == EMPTY_DELETE_CONTENT:
                empty_deletes += 1
                # facts §5: file-group initialisation: first block, write token 0-0-0
                assert block.block_type == BlockType.DELETE
                assert i == 0 and name.write_token == "0-0-0"
                assert block.header.as_dict() == {"INSTANT_TIME": block.instant}
            elif name.write_token == "0-0-0":
                assert i > 0, "a 0-0-0 initialisation log starts with an empty delete block"
    assert kinds[BlockType.HFILE_DATA] > 0 and kinds[BlockType.DELETE] > 0
    assert empty_deletes == sum(1 for p in logs if LogFileName.parse(p.name).write_token
                                == "0-0-0")
    assert read_properties(mdt / ".hoodie" / "hoodie.properties")[
        "hoodie.table.recordkey.fields"] == "key"


def test_empty_delete_block_bytes() -> None:
    """facts §5: an empty delete list is content ``00000003 00000001 00``."""
    assert encode_delete_content([]) == EMPTY_DELETE_CONTENT
    dc = decode_delete_content(EMPTY_DELETE_CONTENT)
    assert (dc.version, dc.records) == (3, ())
    found = [b for p in LOGS if _is_mdt(p) for b in _blocks(p)
             if b["content"] == EMPTY_DELETE_CONTENT]
    assert found, "the metadata table initialises file groups with empty delete blocks"


# --- 4. the CLI contract ----------------------------------------------------------------------


def _run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``morlog.cli.main(argv)``: exit status and what it printed on stdout."""
    capsys.readouterr()
    code = main(argv)
    return code, capsys.readouterr().out


def _key_field(log: Path) -> str | None:
    """``--key-field`` for tables without meta fields: the table's record key field."""
    table = hf.table_of(log)
    if table is None or _is_mdt(log) or not table.name.endswith("_nometa"):
        return None
    return read_properties(table / ".hoodie" / "hoodie.properties")[
        "hoodie.table.recordkey.fields"]


def _expected_keys(b: dict[str, Any], key_field: str) -> list[str]:
    """Record keys read without morlog's key extraction (fastavro / pyarrow directly)."""
    block, content = b["block"], b["content"]
    if block.block_type == BlockType.DELETE:
        _, value = decode_delete_payload(content)
        return [item["recordKey"] for item in value["deleteRecordList"]]
    if block.block_type == BlockType.PARQUET_DATA:
        return pq.read_table(pa.BufferReader(content)).column(key_field).to_pylist()
    parsed = fastavro.parse_schema(json.loads(block.header.get(HeaderKey.SCHEMA)))
    framing = decode_avro_content(content)
    return [fastavro.schemaless_reader(io.BytesIO(raw), parsed, None)[key_field]
            for raw in framing.records]


@pytest.mark.parametrize("log", LOGS, ids=_ids(LOGS))
def test_cli_blocks_json(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key_field = _key_field(log)
    argv = ["blocks", str(log), "--json", "--keys"]
    if key_field is not None:
        argv += ["--key-field", key_field]
    code, out = _run_cli(argv, capsys)
    assert code == 0
    listed = json.loads(out)
    blocks = _blocks(log)
    assert isinstance(listed, list) and len(listed) == len(blocks)
    for obj, b in zip(listed, blocks, strict=True):
        block = b["block"]
        assert {"offset", "size", "type", "header", "records"} <= set(obj)
        assert "error" not in obj
        assert (obj["offset"], obj["size"]) == (block.offset, block.size)
        assert obj["type"] == block.block_type.name
        assert obj["header"] == block.header.as_dict()
        assert obj["records"] == b["count"]
        if block.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.DELETE):
            keys = _expected_keys(b, key_field or "_hoodie_record_key")
            assert obj["keys"] == keys
            if block.block_type != BlockType.DELETE:
                # meta fields present (even in the "nometa" table's log blocks): the table
                # key field and the meta field agree
                meta = _expected_keys(b, "_hoodie_record_key")
                assert keys == meta
        else:
            assert "keys" not in obj


@pytest.mark.parametrize("log", LOGS, ids=_ids(LOGS))
def test_cli_verify(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run_cli(["verify", str(log)], capsys)
    assert code == 0, out
    assert out.startswith("ok ")


def test_cli_console_script_on_fixtures() -> None:
    """The real entry point, in a fresh process: JSON on stdout, verify exits 0 on all logs."""
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    cmd = [sys.executable, "-c", "import sys; from morlog.cli import main; "
           "sys.exit(main(sys.argv[1:]))"]
    log = _fixture("valid_log_rollback")
    cwd = Path(__file__).resolve().parent.parent
    r = subprocess.run([*cmd, "blocks", str(log), "--json"], capture_output=True, text=True,
                       env=env, cwd=cwd, check=False, timeout=120)
    assert r.returncode == 0, r.stderr
    [obj] = json.loads(r.stdout)
    assert obj["type"] == "COMMAND"
    assert obj["header"]["TARGET_INSTANT_TIME"] == "20250126040826878"
    r = subprocess.run([*cmd, "verify", "-q", *map(str, LOGS)], capture_output=True, text=True,
                       env=env, cwd=cwd, check=False, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == ""


def test_cli_output_follows_sys_stdout() -> None:
    """Regression: the commands once bound ``out=sys.stdout`` at import time, so output
    ignored any later redirection of sys.stdout (capsys, contextlib.redirect_stdout)."""
    log = _fixture("valid_log_rollback")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["blocks", str(log), "--json"]) == 0
        assert main(["verify", str(log)]) == 0
    first, second = buf.getvalue().splitlines()
    [obj] = json.loads(first)
    assert obj["type"] == "COMMAND"
    assert second.startswith("ok ")
