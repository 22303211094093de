"""Metadata-table records (spec/mdt.md §3): schema, files partition, combine rule."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from morlog.logformat.constants import BlockType, HeaderKey
from morlog.logformat.errors import UsageError
from morlog.logformat.framing import decode_blocks
from morlog.logformat.hfile.codec import decode_hfile
from morlog.logformat.hfile.content import decode_hfile_records, encode_hfile_records
from morlog.logformat.mdt_records import (
    ALL_PARTITIONS_KEY,
    TYPE_FILE_LIST,
    TYPE_PARTITION_LIST,
    combine_files_metadata,
    files_partition_records,
    files_view,
    metadata_record_schema,
    metadata_record_schema_json,
    partitions_view,
)
from tests.hudi_fixtures import ROOT, SKIP_REASON

requires_fixtures = pytest.mark.skipif(ROOT is None, reason=SKIP_REASON)


def _mdt_tables() -> list[Path]:
    if ROOT is None:
        return []
    return sorted(p.parent.parent.parent for p in (ROOT / "tables").glob(
        "*/*/.hoodie/metadata/files"))


def _strip_docs(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _strip_docs(v) for k, v in x.items() if k != "doc"}
    if isinstance(x, list):
        return [_strip_docs(v) for v in x]
    return x


def _files_records(table: Path) -> tuple[list[dict[str, Any]], str]:
    """Every ``files`` record of the metadata table, oldest first (base files by their
    instant, log blocks by their INSTANT_TIME), and the schema of a v9 log block."""
    sources: list[tuple[str, int, list[dict[str, Any]]]] = []
    schema = ""
    md = table / ".hoodie" / "metadata" / "files"
    for p in sorted(md.iterdir()):
        data = p.read_bytes()
        if p.suffix == ".hfile":
            text = decode_hfile(data).file_info[b"schema"].decode()
            sources.append((p.stem.rsplit("_", 1)[1], 0, decode_hfile_records(data, text)))
        elif ".log." in p.name:
            for fr in decode_blocks(data):
                if fr.block_type == BlockType.HFILE_DATA:
                    text = fr.header.get(HeaderKey.SCHEMA) or ""
                    schema = text
                    sources.append((fr.header.get(HeaderKey.INSTANT_TIME) or "", 1,
                                    decode_hfile_records(fr.content, text)))
    sources.sort(key=lambda s: (s[0], s[1]))
    return [r for _, _, rs in sources for r in rs], schema


@requires_fixtures
def test_schema_matches_hudis_header_schema() -> None:
    v9 = [t for t in _mdt_tables() if t.name.startswith("v9_")]
    assert v9
    _, text = _files_records(v9[0])
    assert _strip_docs(json.loads(text)) == metadata_record_schema()


@requires_fixtures
@pytest.mark.parametrize("table", _mdt_tables(), ids=lambda p: p.name)
def test_files_partition_lists_exactly_the_tables_files(table: Path) -> None:
    records, _ = _files_records(table)
    assert {r["type"] for r in records} == {TYPE_PARTITION_LIST, TYPE_FILE_LIST}
    view = files_view(records)
    parts = sorted(d for d in os.listdir(table) if not d.startswith(".") and
                   (table / d / ".hoodie_partition_metadata").is_file())
    assert partitions_view(records) == parts == sorted(view)
    for part, files in view.items():
        on_disk = {f: (table / part / f).stat().st_size for f in os.listdir(table / part)
                   if f != ".hoodie_partition_metadata"}
        assert files == on_disk, part


@requires_fixtures
def test_files_records_reencode_to_hudis_block_bytes() -> None:
    for table in _mdt_tables():
        for p in sorted((table / ".hoodie" / "metadata" / "files").glob(".*.log.*")):
            for fr in decode_blocks(p.read_bytes()):
                if fr.block_type != BlockType.HFILE_DATA:
                    continue
                text = fr.header.get(HeaderKey.SCHEMA) or ""
                hf = decode_hfile(fr.content)
                recs = decode_hfile_records(fr.content, text)
                ct = int.from_bytes(hf.file_info[b"hfile.CREATE_TIME_TS"], "big")
                assert encode_hfile_records(recs, text, style=hf.style,
                                            create_time_ms=ct) == fr.content


def test_files_partition_records_shape() -> None:
    recs = files_partition_records({"p=1": {"a.parquet": 10, ".a.log.1_0-1-1": 7},
                                    "": {"b.parquet": 5}},
                                   deleted={"p=1": ["old.parquet"]})
    assert [r["key"] for r in recs] == [".", ALL_PARTITIONS_KEY, "p=1"]
    by_key = {r["key"]: r for r in recs}
    assert by_key[ALL_PARTITIONS_KEY]["type"] == TYPE_PARTITION_LIST
    assert by_key[ALL_PARTITIONS_KEY]["filesystemMetadata"] == {
        "p=1": {"size": 0, "isDeleted": False}, ".": {"size": 0, "isDeleted": False}}
    assert by_key["p=1"]["type"] == TYPE_FILE_LIST
    assert by_key["p=1"]["filesystemMetadata"]["old.parquet"] == {"size": 0, "isDeleted": True}
    assert files_view(recs) == {".": {"b.parquet": 5},
                                "p=1": {".a.log.1_0-1-1": 7, "a.parquet": 10}}
    with pytest.raises(UsageError):
        files_partition_records({"p": {"a": 0}})
    with pytest.raises(UsageError):
        files_partition_records({"p": {"a": 1}}, deleted={"p": ["a"]})


def test_files_records_round_trip_through_an_hfile_block() -> None:
    text = metadata_record_schema_json()
    recs = files_partition_records({"x": {"f1": 1, "f2": 2}}, new_partitions=["x"])
    assert decode_hfile_records(encode_hfile_records(recs, text), text) == recs


def test_combine_rule() -> None:
    def fi(size: int, deleted: bool = False) -> dict[str, Any]:
        return {"size": size, "isDeleted": deleted}

    old = {"a": fi(10), "b": fi(5)}
    new = {"a": fi(7), "b": fi(0, True), "c": fi(3), "d": fi(0, True)}
    # sizes take the max, a tombstone drops a known file, an unknown tombstone is kept
    assert combine_files_metadata(old, new) == {"a": fi(10), "c": fi(3), "d": fi(0, True)}
    assert combine_files_metadata(None, {"a": fi(1)}) == {"a": fi(1)}
    later = files_partition_records({"p": {"f": 9}})
    first = files_partition_records({"p": {"f": 4, "g": 1}})
    gone = files_partition_records({}, deleted={"p": ["g"]})
    assert files_view([*first, *later, *gone]) == {"p": {"f": 9}}
