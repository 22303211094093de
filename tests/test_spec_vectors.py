"""The conformance vectors of spec/format.md §10, checked against the code.

Every directory ``spec/vectors/<group>/<case>/`` with a ``case.json`` is one case:

- ``block`` (group ``framing``): ``input.hex`` is one block written by hand from the spec. It
  must decode to the expected fields, and encoding a frame built from the expected fields (not
  from the decoded one) must give exactly the same bytes. Where morlog writes that block
  itself (``writer``), its builder must produce the same bytes too.
- ``file`` (group ``files``): ``input.hex`` is a whole log file. Forward iteration yields
  ``expect_blocks`` (with CORRUPT blocks) and reverse iteration the same list reversed, or
  both raise ``expect_error`` at the given offset.
- ``fixture`` (group ``fixtures``): a real Hudi-written log file, found through
  ``tests.hudi_fixtures`` (never copied here): its SHA-256, its name fields and its block list.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from morlog import logformat
from morlog.logformat import blocks as block_builders
from morlog.logformat.avro_content import read_content_version
from morlog.logformat.avroschema import avro_to_arrow_schema
from morlog.logformat.constants import BlockType
from morlog.logformat.delete_content import DeleteRecord, OrderingValue, decode_delete_content
from morlog.logformat.framing import (
    BlockFrame,
    MetadataMap,
    decode_block,
    decode_blocks,
    encode_block,
)
from morlog.logformat.naming import LogFileName
from morlog.readers import BytesSource, LogBlock, LogFileReader
from tests.hudi_fixtures import ROOT, SKIP_REASON

SPEC = Path(__file__).resolve().parent.parent / "spec"
VECTORS = SPEC / "vectors"
#: vector group -> the kind of case it holds
GROUPS = {"framing": "block", "files": "file", "fixtures": "fixture"}
#: the name sources are given in vectors; error messages start with it
SOURCE_NAME = "input"


def _case_dirs() -> list[Path]:
    """Cases of spec/format.md (spec/vectors/index/ belongs to spec/index.md and has its own
    test module)."""
    return sorted(p.parent for p in VECTORS.glob("*/*/case.json")
                  if p.parent.parent.name in GROUPS)


def _load(case_dir: Path) -> dict[str, Any]:
    return json.loads((case_dir / "case.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _id(case_dir: Path) -> str:
    return f"{case_dir.parent.name}/{case_dir.name}"


def _params(kind: str) -> list[Any]:
    return [pytest.param(d, id=_id(d)) for d in _case_dirs() if _load(d).get("kind") == kind]


def _params_with(kind: str, key: str) -> list[Any]:
    """The cases of ``kind`` whose case.json has ``key``."""
    return [p for p in _params(kind) if key in _load(p.values[0])]


def parse_hex(text: str) -> bytes:
    """``input.hex``: hex digits, whitespace anywhere, ``#`` starts a comment to end of line."""
    digits = "".join(re.sub(r"#.*", "", line) for line in text.splitlines())
    digits = re.sub(r"\s+", "", digits)
    if not re.fullmatch(r"(?:[0-9a-fA-F]{2})*", digits):
        raise ValueError("input.hex holds something other than pairs of hex digits")
    return bytes.fromhex(digits)


def _input(case_dir: Path) -> bytes:
    return parse_hex((case_dir / "input.hex").read_text(encoding="utf-8"))


def _error_type(name: str) -> type[logformat.MorlogError]:
    cls: type[logformat.MorlogError] = getattr(logformat, name)
    assert issubclass(cls, logformat.MorlogError)
    return cls


def _value_bytes(value: str | dict[str, str]) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes.fromhex(value["hex"])


def _map(entries: list[list[Any]], kind: str) -> MetadataMap:
    return MetadataMap(tuple((int(k), _value_bytes(v)) for k, v in entries), kind)


_ORDERING_FROM_JSON: dict[str, Callable[[Any], Any]] = {
    "bytes": bytes.fromhex,
    "decimal": decimal.Decimal,
    "date": dt.date.fromisoformat,
    "time_micros": dt.time.fromisoformat,
    "timestamp_micros": dt.datetime.fromisoformat,
}


def _delete_records(items: list[dict[str, Any]]) -> tuple[DeleteRecord, ...]:
    out = []
    for item in items:
        o = item["ordering"]
        ordering = None
        if o is not None:
            convert = _ORDERING_FROM_JSON.get(o["kind"], lambda v: v)
            ordering = OrderingValue(o["kind"], convert(o["value"]))
        out.append(DeleteRecord(item["record_key"], item["partition_path"], ordering))
    return tuple(out)


def _plain(value: Any) -> Any:
    """A decoded value as a vector writes it: decimals as text, map entries as pairs."""
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _plain_rows(table: pa.Table) -> list[dict[str, Any]]:
    return [_plain(r) for r in table.to_pylist()]


def _arrow_rows(rows: list[dict[str, Any]], schema: dict[str, Any]) -> pa.Table:
    """A vector's ``arrow_records`` as the Arrow table of ``schema``."""
    target = avro_to_arrow_schema(schema)
    cols = []
    for f in target:
        values = [r[f.name] for r in rows]
        if pa.types.is_decimal(f.type):
            values = [decimal.Decimal(v) for v in values]
        elif pa.types.is_map(f.type):
            values = [[tuple(e) for e in v] for v in values]
        cols.append(pa.array(values, f.type))
    return pa.Table.from_arrays(cols, schema=target)


def _warns(case: dict[str, Any]) -> contextlib.AbstractContextManager[Any]:
    if case.get("warns"):
        return pytest.warns(getattr(logformat, case["warns"]))
    return contextlib.nullcontext()


def _summary(block: LogBlock) -> dict[str, Any]:
    return {"offset": block.offset, "size": block.size, "type": block.block_type.name}


# --- the vector tree itself ------------------------------------------------------------


def test_vector_tree_is_well_formed() -> None:
    dirs = _case_dirs()
    assert dirs, "no vectors found under spec/vectors"
    for group in GROUPS:
        assert any(d.parent.name == group for d in dirs), f"no {group} vectors"
    for d in dirs:
        case = _load(d)
        assert d.parent.name in GROUPS, d
        assert case["kind"] == GROUPS[d.parent.name], d
        assert case["description"] and case["spec"].startswith("§"), d
        assert (d / "input.hex").is_file() == (case["kind"] != "fixture"), d


def test_every_vector_cites_an_existing_spec_section() -> None:
    spec = (SPEC / "format.md").read_text(encoding="utf-8")
    sections = set(re.findall(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", spec, flags=re.M))
    for d in _case_dirs():
        ref = _load(d)["spec"].removeprefix("§")
        assert ref in sections, f"{_id(d)} cites spec §{ref}, which has no heading"


def test_parse_hex_rejects_stray_characters() -> None:
    assert parse_hex("23 48 # magic\n  55\t44\n") == b"#HUD"
    with pytest.raises(ValueError):
        parse_hex("23 4")
    with pytest.raises(ValueError):
        parse_hex("zz")


# --- block vectors ----------------------------------------------------------------------


@pytest.mark.parametrize("case_dir", _params("block"))
def test_block_vector_decodes(case_dir: Path) -> None:
    case = _load(case_dir)
    data = _input(case_dir)
    assert len(data) == case["size"]
    with _warns(case):
        frame, size = decode_block(data, path=SOURCE_NAME)
    assert size == len(data)
    assert frame.format_version == 1
    assert frame.block_type == BlockType[case["type"]]
    assert list(frame.header) == list(_map(case["header"], "header"))
    assert list(frame.footer) == list(_map(case["footer"], "footer"))
    assert frame.content == bytes.fromhex(case["content_hex"])
    # blockLength and reverse pointer (spec §2.2)
    block_length = int.from_bytes(data[6:14], "big", signed=True)
    assert block_length == case["block_length"] == len(data) - 14
    assert int.from_bytes(data[-8:], "big", signed=True) == block_length + 6

    if "content_version" in case:
        assert read_content_version(frame.content) == case["content_version"]
    if "records" in case:
        assert block_builders.decode_avro_records(frame.header, frame.content) == case["records"]
        assert block_builders.record_count(frame.block_type, frame.content) == len(
            case["records"])
    if "arrow_records" in case:
        table = block_builders.decode_data_table(frame.block_type, frame.header, frame.content)
        assert _plain_rows(table) == case["arrow_records"]
    if "delete_records" in case:
        got = decode_delete_content(frame.content)
        assert got.version == case["content_version"]
        assert got.records == _delete_records(case["delete_records"])
    if "header_text_error" in case:
        spec = case["header_text_error"]
        with pytest.raises(_error_type(spec["type"])):
            frame.header.get(spec["key"])


@pytest.mark.parametrize("case_dir", _params("block"))
def test_block_vector_encodes_from_expected_fields(case_dir: Path) -> None:
    case = _load(case_dir)
    expected = BlockFrame(
        int(BlockType[case["type"]]),
        _map(case["header"], "header"),
        bytes.fromhex(case["content_hex"]),
        _map(case["footer"], "footer"),
    )
    assert encode_block(expected).hex() == _input(case_dir).hex()


@pytest.mark.parametrize("case_dir", _params_with("block", "writer"))
def test_block_vector_is_what_morlog_writes(case_dir: Path) -> None:
    """spec §7.1: morlog's builders produce exactly these bytes."""
    case = _load(case_dir)
    w = case["writer"]
    if w["builder"] == "rollback_block":
        frame = block_builders.rollback_block(w["instant"], w["target_instant"])
    elif w["builder"] == "delete_block":
        frame = block_builders.delete_block(list(_delete_records(case["delete_records"])),
                                            w["instant"])
    elif w["builder"] == "avro_data_block":
        frame = block_builders.avro_data_block(case["records"], w["schema"], w["instant"])
    elif w["builder"] == "avro_data_block_from_arrow":
        frame = block_builders.avro_data_block_from_arrow(
            _arrow_rows(case["arrow_records"], w["schema"]), w["instant"],
            schema=json.dumps(w["schema"], separators=(",", ":")))
    else:
        raise AssertionError(f"unknown builder {w['builder']}")
    assert encode_block(frame).hex() == _input(case_dir).hex()


@pytest.mark.parametrize("case_dir", _params("block"))
def test_block_vector_through_the_file_reader(case_dir: Path) -> None:
    case = _load(case_dir)
    data = _input(case_dir)
    reader = LogFileReader(BytesSource(data, SOURCE_NAME))
    with _warns(case):
        got = list(reader.blocks())
    assert [_summary(b) for b in got] == [{"offset": 0, "size": len(data), "type": case["type"]}]
    block = got[0]
    assert list(block.header) == list(_map(case["header"], "header"))
    assert block.content() == bytes.fromhex(case["content_hex"])
    assert block.content_offset == 22 + len(logformat.framing.encode_map(block.header)) + 8
    with _warns(case):
        assert [_summary(b) for b in reader.reversed_blocks()] == [_summary(block)]


@pytest.mark.parametrize("case_dir", _params_with("block", "strict_error"))
def test_block_vector_strict_mode(case_dir: Path) -> None:
    case = _load(case_dir)
    err = case["strict_error"]
    data = _input(case_dir)
    with pytest.raises(_error_type(err["type"])) as info:
        decode_block(data, path=SOURCE_NAME, strict=True)
    assert info.value.offset == err["offset"]
    reader = LogFileReader(BytesSource(data, SOURCE_NAME), strict=True)
    with pytest.raises(_error_type(err["type"])) as info:
        list(reader.blocks())
    assert info.value.offset == err["offset"]
    assert str(info.value).startswith(f"{SOURCE_NAME}@{err['offset']}: ")


# --- file vectors -----------------------------------------------------------------------


def _iterate(blocks: Iterator[LogBlock], seen: list[dict[str, Any]]) -> None:
    for b in blocks:
        seen.append(_summary(b))
        if b.is_corrupt and b.reason is None:
            # spec §4: a well-framed block with type 2 on disk is reported as it is
            assert int.from_bytes(b.raw()[18:22], "big") == BlockType.CORRUPT
        elif b.is_corrupt:
            # spec §6.1: a synthesized CORRUPT block has no header, footer or content
            assert len(b.header) == 0 and len(b.footer) == 0 and b.content_length == 0
            assert b.raw()[:6] == logformat.MAGIC
            assert b.reason


@pytest.mark.parametrize("case_dir", _params("file"))
def test_file_vector_forward(case_dir: Path) -> None:
    case = _load(case_dir)
    reader = LogFileReader(BytesSource(_input(case_dir), SOURCE_NAME))
    seen: list[dict[str, Any]] = []
    if "expect_error" in case:
        err = case["expect_error"]
        with pytest.raises(_error_type(err["type"])) as info:
            _iterate(reader.blocks(), seen)
        assert info.value.offset == err["offset"]
        if "message" in err:
            assert str(info.value) == err["message"]
        assert seen == case.get("blocks_before_error", [])
    else:
        _iterate(reader.blocks(), seen)
        assert seen == case["expect_blocks"]


@pytest.mark.parametrize("case_dir", _params("file"))
def test_file_vector_reverse(case_dir: Path) -> None:
    case = _load(case_dir)
    reader = LogFileReader(BytesSource(_input(case_dir), SOURCE_NAME))
    seen: list[dict[str, Any]] = []
    if "expect_error" in case:
        err = case["expect_error"]
        with pytest.raises(_error_type(err["type"])) as info:
            _iterate(reader.reversed_blocks(), seen)
        assert info.value.offset == err["offset"]
    else:
        _iterate(reader.reversed_blocks(), seen)
        assert seen == list(reversed(case["expect_blocks"]))


# --- fixture vectors --------------------------------------------------------------------


@pytest.mark.fixtures
@pytest.mark.parametrize("case_dir", _params("fixture"))
def test_fixture_vector(case_dir: Path) -> None:
    if ROOT is None:
        pytest.skip(SKIP_REASON)
    case = _load(case_dir)
    path = ROOT / case["fixture"]
    data = path.read_bytes()
    assert len(data) == case["size"]
    assert hashlib.sha256(data).hexdigest() == case["sha256"]

    name = LogFileName.parse(path.name)
    fields = case["file_name"]
    assert (name.file_id, name.instant, name.version, name.write_token, name.ext, name.cdc) == (
        fields["file_id"], fields["instant"], fields["version"], fields["write_token"],
        fields["ext"], fields["cdc"])
    assert str(name) == path.name

    with LogFileReader(str(path)) as reader:
        got = list(reader.blocks())
        assert len(got) == len(case["blocks"])
        for block, exp in zip(got, case["blocks"], strict=True):
            _check_fixture_block(block, exp, data)
        assert [_summary(b) for b in reader.reversed_blocks()] == [
            _summary(b) for b in reversed(got)]
    # the whole file re-encodes byte for byte from its decoded frames (spec §7.1)
    assert b"".join(encode_block(f) for f in decode_blocks(data)) == data


def _check_fixture_block(block: LogBlock, exp: dict[str, Any], data: bytes) -> None:
    assert _summary(block) == {k: exp[k] for k in ("offset", "size", "type")}
    assert block.size - 14 == exp["block_length"]
    raw = data[block.offset : block.offset + block.size]
    assert int.from_bytes(raw[-8:], "big", signed=True) == exp["block_length"] + 6
    assert list(block.header) == list(_map(exp["header"], "header"))
    assert list(block.footer) == list(_map(exp["footer"], "footer"))
    assert (block.content_offset, block.content_length) == (exp["content_offset"],
                                                            exp["content_length"])
    content = block.content()
    assert content[:8].hex() == exp["content_head_hex"]
    assert block.record_count() == exp["records"]
    if "content_version" in exp:
        assert read_content_version(content) == exp["content_version"]
    if "delete_records" in exp:
        assert block.delete_records() == _delete_records(exp["delete_records"])
    if "keys" in exp:
        assert block.keys(exp["key_field"]) == exp["keys"]
    if "target_instant" in exp:
        assert block.target_instant == exp["target_instant"]
        assert block.command_type == logformat.CommandType.ROLLBACK
    assert encode_block(block.frame()) == raw
