"""Property tests of the pure codecs: framing, Avro and delete contents, names, schemas."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import string
import warnings

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from morlog.logformat import (
    BlockFrame,
    BlockType,
    DeleteRecord,
    HeaderKey,
    InvalidMagicError,
    LogFileName,
    MetadataMap,
    OrderingValue,
    UnknownBlockTypeError,
    UnknownHeaderKeyError,
    UnknownKeyWarning,
    UnsupportedVersionError,
    decode_block,
    encode_block,
)
from morlog.logformat.avro_content import decode_avro_content, decode_records, encode_avro_content
from morlog.logformat.avroschema import arrow_to_avro_schema, avro_to_arrow_schema
from morlog.logformat.blocks import avro_data_block, decode_data_table, parquet_data_block
from morlog.logformat.delete_content import decode_delete_content, encode_delete_content
from morlog.logformat.errors import HeaderEncodingError
from morlog.logformat.naming import BaseFileName

known_keys = st.sampled_from([int(k) for k in HeaderKey])
header_maps = st.lists(st.tuples(known_keys, st.binary(max_size=40)), max_size=6).map(
    lambda e: MetadataMap(tuple(e)))
frames = st.builds(
    BlockFrame,
    block_type=st.sampled_from([int(t) for t in BlockType if t != BlockType.CORRUPT]),
    header=header_maps,
    content=st.binary(max_size=300),
)


@given(st.lists(frames, min_size=1, max_size=4))
def test_framing_round_trips(fs: list[BlockFrame]) -> None:
    data = b"".join(encode_block(f) for f in fs)
    pos = 0
    for f in fs:
        got, size = decode_block(memoryview(data)[pos:], base=pos)
        assert got == f
        pos += size
    assert pos == len(data)


@given(frames)
def test_block_length_and_reverse_pointer_arithmetic(f: BlockFrame) -> None:
    raw = encode_block(f)
    block_length = int.from_bytes(raw[6:14], "big")
    assert len(raw) == 14 + block_length
    assert int.from_bytes(raw[-8:], "big") == block_length + 6 == len(raw) - 8


def test_typed_errors_name_path_and_offset() -> None:
    good = encode_block(BlockFrame(int(BlockType.COMMAND), MetadataMap.of({
        HeaderKey.INSTANT_TIME: "1"})))
    with pytest.raises(InvalidMagicError) as e1:
        decode_block(b"#HUDX#" + good[6:], base=100, path="f.log")
    assert (e1.value.path, e1.value.offset) == ("f.log", 100)
    assert str(e1.value).startswith("f.log@100: invalid block magic: expected b'#HUDI#'")
    bad_type = good[:18] + (9).to_bytes(4, "big") + good[22:]
    with pytest.raises(UnknownBlockTypeError) as e2:
        decode_block(bad_type, path="f.log")
    assert e2.value.offset == 18 and e2.value.actual == 9
    bad_version = good[:14] + (2).to_bytes(4, "big") + good[18:]
    with pytest.raises(UnsupportedVersionError) as e3:
        decode_block(bad_version, path="f.log")
    assert e3.value.offset == 14 and e3.value.expected == 1 and e3.value.actual == 2


def test_unknown_header_keys_warn_and_survive_or_fail_in_strict_mode() -> None:
    frame = BlockFrame(int(BlockType.COMMAND), MetadataMap(((0, b"1"), (42, b"future"))))
    raw = encode_block(frame)
    with pytest.warns(UnknownKeyWarning, match=r"\[42\]"):
        got, _ = decode_block(raw)
    assert got == frame and encode_block(got) == raw
    assert got.header.as_dict() == {"INSTANT_TIME": "1", "UNKNOWN_42": "future"}
    with pytest.raises(UnknownHeaderKeyError):
        decode_block(raw, strict=True)


def test_non_utf8_header_value_is_a_typed_error_only_when_read() -> None:
    raw = encode_block(BlockFrame(int(BlockType.COMMAND), MetadataMap(((0, b"\xff\xfe"),))))
    got, _ = decode_block(raw, path="x.log")
    assert encode_block(got) == raw
    with pytest.raises(HeaderEncodingError) as err:
        got.header.get(HeaderKey.INSTANT_TIME)
    assert err.value.path == "x.log" and err.value.offset == 22


# --- Avro data block content ------------------------------------------------------------

text = st.text(alphabet=st.characters(codec="utf-8"), max_size=20)
rows = st.lists(
    st.fixed_dictionaries({
        "id": text.filter(bool),
        "ts": st.integers(-(2**63), 2**63 - 1),
        "amount": st.none() | st.floats(allow_nan=False),
        "note": st.none() | text,
        "flag": st.booleans(),
        "blob": st.binary(max_size=10),
    }),
    max_size=20,
)
ROW_SCHEMA = {
    "type": "record", "name": "row", "namespace": "t",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "ts", "type": "long"},
        {"name": "amount", "type": ["null", "double"], "default": None},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "flag", "type": "boolean"},
        {"name": "blob", "type": "bytes"},
    ],
}


@given(rows, st.binary(max_size=30))
def test_avro_content_round_trips_and_ignores_trailing_bytes(records: list[dict[str, object]],
                                                             trailer: bytes) -> None:
    frame = avro_data_block(records, ROW_SCHEMA, "20250101000000000", trailer=trailer)
    got, _ = decode_block(encode_block(frame))
    assert decode_records(got.content, ROW_SCHEMA) == records
    framing = decode_avro_content(got.content)
    assert framing.version == 3 and len(framing) == len(records)
    assert got.content[framing.end:] == trailer
    assert encode_avro_content(framing.records) + trailer == got.content


@pytest.mark.parametrize("version", [1, 2, 3])
def test_avro_content_versions_1_to_3_share_one_layout(version: int) -> None:
    from morlog.logformat.avro_content import encode_records

    raw = encode_records([{"id": "a", "ts": 1, "amount": None, "note": "x", "flag": True,
                           "blob": b""}], ROW_SCHEMA)
    content = encode_avro_content(raw, version=version)
    assert content[:4] == version.to_bytes(4, "big")
    assert decode_records(content, ROW_SCHEMA)[0]["id"] == "a"


@given(rows)
def test_avro_and_parquet_blocks_decode_to_the_same_table(records: list[dict[str, object]]
                                                          ) -> None:
    schema = avro_to_arrow_schema(ROW_SCHEMA)
    table = pa.Table.from_pylist(records, schema=schema)
    a = avro_data_block(records, ROW_SCHEMA, "1")
    p = parquet_data_block(table, "1", schema=ROW_SCHEMA)
    ta = decode_data_table(a.block_type, a.header, a.content)
    tp = decode_data_table(p.block_type, p.header, p.content)
    assert ta.to_pylist() == tp.to_pylist() == records
    assert json.loads(p.header.get(HeaderKey.SCHEMA) or "") == ROW_SCHEMA


# --- delete block content -----------------------------------------------------------------

ordering = st.one_of(
    st.none(),
    st.builds(OrderingValue, st.just("boolean"), st.booleans()),
    st.builds(OrderingValue, st.just("int"), st.integers(-(2**31), 2**31 - 1)),
    st.builds(OrderingValue, st.just("long"), st.integers(-(2**63), 2**63 - 1)),
    st.builds(OrderingValue, st.just("double"), st.floats(allow_nan=False)),
    st.builds(OrderingValue, st.just("string"), text),
    st.builds(OrderingValue, st.just("bytes"), st.binary(max_size=8)),
    st.builds(OrderingValue, st.just("date"), st.dates(dt.date(1970, 1, 1))),
    st.builds(OrderingValue, st.just("decimal"),
              st.decimals(min_value=-(10**10), max_value=10**10, places=15,
                          allow_nan=False, allow_infinity=False)),
    st.builds(OrderingValue, st.just("timestamp_micros"),
              st.datetimes(min_value=dt.datetime(1971, 1, 1), max_value=dt.datetime(2200, 1, 1),
                           timezones=st.just(dt.UTC))),
)
deletes = st.lists(st.builds(DeleteRecord, st.none() | text, st.none() | text, ordering),
                   max_size=10)


@given(deletes)
def test_delete_content_round_trips_with_every_ordering_kind(records: list[DeleteRecord]) -> None:
    content = encode_delete_content(records)
    got = decode_delete_content(content)
    assert got.version == 3
    assert len(got.records) == len(records)
    for a, b in zip(got.records, records, strict=True):
        assert (a.record_key, a.partition_path) == (b.record_key, b.partition_path)
        if b.ordering_value is None:
            assert a.ordering_value is None
        else:
            assert a.ordering_value is not None
            assert a.ordering_value.kind == b.ordering_value.kind
            if isinstance(b.ordering_value.value, decimal.Decimal):
                assert a.ordering_value.value == b.ordering_value.value.quantize(
                    decimal.Decimal(10) ** -15)
            else:
                assert a.ordering_value.value == b.ordering_value.value
    assert encode_delete_content(got.records) == content


def test_delete_ordering_union_branches_are_javas() -> None:
    # wire form is union index (zigzag varint) + primitive
    one = encode_delete_content([DeleteRecord("k", None, OrderingValue("long", 5))])
    assert one[8:] == b"\x02" + b"\x02\x02k" + b"\x00" + b"\x06\x0a" + b"\x00"
    natural = encode_delete_content([DeleteRecord("k", "p", OrderingValue.natural())])
    assert natural[8:] == b"\x02\x02\x02k\x02\x02p\x04\x00\x00"
    assert encode_delete_content([]) == bytes.fromhex("00000003 00000001 00")


# --- names -------------------------------------------------------------------------------

ids = st.text(alphabet=string.ascii_lowercase + string.digits + "-", min_size=1, max_size=12)
instants = st.text(alphabet=string.digits, max_size=17)
tokens = st.tuples(*(st.integers(0, 10**4),) * 3).map(lambda t: "-".join(map(str, t)))


@given(ids, instants, st.integers(0, 10**6), st.none() | tokens, st.booleans())
def test_log_file_names_round_trip(fid: str, inst: str, version: int, token: str | None,
                                   cdc: bool) -> None:
    name = LogFileName(fid, inst, version, token, cdc=cdc and token is not None)
    assert LogFileName.parse(str(name)) == name


def test_log_file_order_is_javas() -> None:
    names = [LogFileName.parse(n) for n in [
        ".f-0_2.log.1_2-0-1", ".f-0_1.log.10_0-0-0", ".f-0_1.log.2_10-0-1", ".f-0_1.log.2_2-0-1",
        ".f-0_1.log.2",
    ]]
    ordered = [str(n) for n in sorted(names, key=LogFileName.sort_key)]
    assert ordered == [".f-0_1.log.2", ".f-0_1.log.2_10-0-1", ".f-0_1.log.2_2-0-1",
                       ".f-0_1.log.10_0-0-0", ".f-0_2.log.1_2-0-1"]


def test_fixture_style_names_parse() -> None:
    n = LogFileName.parse(".0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628.log.2_1-0-1")
    assert (n.file_id, n.instant, n.version, n.write_token) == (
        "0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0", "20250126040823628", 2, "1-0-1")
    mdt = LogFileName.parse(".files-0000-0_00000000000000000.log.1_0-0-0")
    assert mdt.file_id == "files-0000-0"
    archived = LogFileName.parse(".commits_.archive.1_1-0-1")
    assert archived.instant == "" and archived.ext == "archive"
    cdc = LogFileName.parse(".f1-0_20250101.log.1_0-1-2.cdc")
    assert cdc.cdc and str(cdc) == ".f1-0_20250101.log.1_0-1-2.cdc"
    assert not LogFileName.matches("f1-0_0-1-2_20250101.parquet")
    b = BaseFileName.parse("9c6ed25b-6c9d-4793-ad27-1c8518086b6a-0_2-3-8_20260307135827749.parquet")
    assert (b.file_id, b.write_token, b.instant) == (
        "9c6ed25b-6c9d-4793-ad27-1c8518086b6a-0", "2-3-8", "20260307135827749")
    assert str(b) == "9c6ed25b-6c9d-4793-ad27-1c8518086b6a-0_2-3-8_20260307135827749.parquet"


# --- schemas -----------------------------------------------------------------------------

def test_arrow_avro_schema_mapping_round_trips() -> None:
    schema = pa.schema([
        pa.field("s", pa.string(), nullable=False),
        pa.field("i", pa.int32()),
        pa.field("l", pa.int64()),
        pa.field("f", pa.float32()),
        pa.field("d", pa.float64()),
        pa.field("b", pa.bool_()),
        pa.field("bin", pa.binary()),
        pa.field("date", pa.date32()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("lts", pa.timestamp("ms")),
        pa.field("dec", pa.decimal128(20, 4)),
        pa.field("arr", pa.list_(pa.field("element", pa.int64(), nullable=True))),
        pa.field("m", pa.map_(pa.string(), pa.field("value", pa.float64(), nullable=True))),
        pa.field("st", pa.struct([pa.field("x", pa.string())])),
    ])
    assert avro_to_arrow_schema(arrow_to_avro_schema(schema, "r")).equals(schema)


def test_unknown_key_warnings_are_not_raised_for_known_keys() -> None:
    frame = BlockFrame(int(BlockType.COMMAND), MetadataMap.of({k: "v" for k in HeaderKey}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, _ = decode_block(encode_block(frame))
    assert len(got.header) == len(HeaderKey)
