"""The column-wise Avro codec equals the per-record fastavro path, value for value, byte for byte.

Decoding must give the table ``records_to_arrow(decode_records(...))`` gives; encoding must give
the bytes ``encode_records(arrow_to_records(...))`` gives. Schemas or inputs the fast path does
not take raise ``Unsupported`` and the public functions fall back to fastavro.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat import BlockType, HeaderKey
from morlog.logformat.avro_columnar import (
    MAX_ITEM_STEPS,
    Unsupported,
    decode_block_records_to_arrow,
    encode_arrow_to_records,
)
from morlog.logformat.avro_content import decode_records, encode_avro_content, encode_records
from morlog.logformat.blocks import (
    META_FIELDS,
    arrow_to_records,
    avro_data_block,
    avro_data_block_from_arrow,
    block_keys,
    decode_data_table,
    records_to_arrow,
)
from morlog.logformat.errors import ContentError, FormatError, UsageError
from morlog.logformat.framing import decode_blocks

from . import hudi_fixtures as hf

UTC = dt.UTC


def _slow_table(content: bytes, schema_json: str) -> pa.Table:
    return records_to_arrow(decode_records(content, schema_json), schema_json)


def _fast_encode(table: pa.Table, schema_json: str) -> bytes:
    body, count = encode_arrow_to_records(table, schema_json)
    return struct.pack(">ii", 3, count) + body


# --- random schemas and values ------------------------------------------------------------


class _Names:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"


def _ms(d: dt.datetime) -> dt.datetime:
    return d.replace(microsecond=d.microsecond // 1000 * 1000)


PRIMITIVES: list[tuple[Any, st.SearchStrategy[Any]]] = [
    ("boolean", st.booleans()),
    ("int", st.integers(-(2**31), 2**31 - 1)),
    ("long", st.integers(-(2**63), 2**63 - 1)),
    ("float", st.floats(width=32, allow_nan=False)),
    ("double", st.floats(allow_nan=False)),
    ("string", st.text(max_size=12)),
    ("bytes", st.binary(max_size=12)),
    ({"type": "string", "logicalType": "not-a-known-one"}, st.text(max_size=3)),
    ({"type": "int", "logicalType": "date"}, st.dates()),
    ({"type": "int", "logicalType": "time-millis"}, st.times().map(
        lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    ({"type": "long", "logicalType": "time-micros"}, st.times()),
    ({"type": "long", "logicalType": "timestamp-millis"},
     st.datetimes(timezones=st.just(UTC)).map(_ms)),
    ({"type": "long", "logicalType": "timestamp-micros"}, st.datetimes(timezones=st.just(UTC))),
    ({"type": "long", "logicalType": "local-timestamp-millis"}, st.datetimes().map(_ms)),
    ({"type": "long", "logicalType": "local-timestamp-micros"}, st.datetimes()),
]


def _unscaled(precision: int) -> st.SearchStrategy[int]:
    """Unscaled decimal values of at most ``precision`` digits, often at the byte-length
    boundaries of two's complement (+-2**k, +-2**k - 1) and at the precision's ends."""
    top = 10**precision - 1
    edges = st.integers(0, min(126, top.bit_length())).flatmap(
        lambda k: st.sampled_from([2**k, 2**k - 1, -(2**k), -(2**k) + 1])).filter(
        lambda v: -top <= v <= top)
    return st.one_of(st.integers(-top, top), edges, st.sampled_from([0, top, -top]))


def _decimals(precision: int, scale: int) -> st.SearchStrategy[decimal.Decimal]:
    exact = decimal.Context(prec=60)  # the default (28 digits) would round 29-38 digits
    return _unscaled(precision).map(lambda v: decimal.Decimal(v).scaleb(-scale, exact))


@st.composite
def decimal_types(draw: st.DrawFn, names: _Names) -> tuple[Any, st.SearchStrategy[Any]]:
    """A decimal on bytes, or on fixed of the size Hudi gives its precision (the fewest bytes
    holding 10**p - 1 signed) or larger."""
    precision = draw(st.integers(1, 38))
    scale = draw(st.integers(0, precision))
    if draw(st.booleans()):
        t: dict[str, Any] = {"type": "bytes"}
    else:
        size = ((10**precision - 1).bit_length() + 1 + 7) // 8
        t = {"type": "fixed", "name": names("D"),
             "size": draw(st.integers(size, min(16, size + 2)))}
    t.update(logicalType="decimal", precision=precision, scale=scale)
    return t, _decimals(precision, scale)


#: types the fast path hands to fastavro
_WIDE_DECIMAL = {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2}
_WIDE_VALUES = st.integers(-10**39, 10**39).map(
    lambda v: decimal.Decimal(v).scaleb(-2, decimal.Context(prec=60)))
UNSUPPORTED: list[tuple[Any, st.SearchStrategy[Any]]] = [
    (_WIDE_DECIMAL, _WIDE_VALUES),
    ({"type": "array", "items": _WIDE_DECIMAL}, st.lists(_WIDE_VALUES, min_size=1, max_size=3)),
]


@st.composite
def avro_types(draw: st.DrawFn, names: _Names, depth: int, unsupported: bool
               ) -> tuple[Any, st.SearchStrategy[Any]]:
    kinds = ["prim", "prim", "enum", "fixed", "decimal", "nullable"] + (
        ["record", "array", "map"] if depth < 2 else [])
    if unsupported:
        kinds.append("unsupported")
    kind = draw(st.sampled_from(kinds))
    if kind == "prim":
        return draw(st.sampled_from(PRIMITIVES))
    if kind == "unsupported":
        return draw(st.sampled_from(UNSUPPORTED))
    if kind == "decimal":
        return draw(decimal_types(names))
    if kind in ("array", "map"):
        inner, values = draw(avro_types(names, depth + 1, unsupported))
        if kind == "array":
            return {"type": "array", "items": inner}, st.lists(values, max_size=4)
        return ({"type": "map", "values": inner},
                st.dictionaries(st.text(max_size=3), values, max_size=4))
    if kind == "enum":
        symbols = draw(st.lists(st.sampled_from("ABCDEFG"), min_size=1, max_size=4, unique=True))
        return ({"type": "enum", "name": names("E"), "symbols": symbols},
                st.sampled_from(symbols))
    if kind == "fixed":
        size = draw(st.integers(0, 5))
        return ({"type": "fixed", "name": names("F"), "size": size},
                st.binary(min_size=size, max_size=size))
    if kind == "nullable":
        inner, values = draw(avro_types(names, depth, unsupported).filter(
            lambda tv: not isinstance(tv[0], list)))
        first = draw(st.booleans())
        return (["null", inner] if first else [inner, "null"]), st.none() | values
    return draw(records(names, depth + 1, unsupported))


@st.composite
def records(draw: st.DrawFn, names: _Names, depth: int, unsupported: bool
            ) -> tuple[Any, st.SearchStrategy[Any]]:
    n = draw(st.integers(1, 5))
    fields = [(f"f{i}", draw(avro_types(names, depth, unsupported))) for i in range(n)]
    schema = {"type": "record", "name": names("R"), "namespace": "ns",
              "fields": [{"name": name, "type": t} for name, (t, _) in fields]}
    return schema, st.fixed_dictionaries({name: v for name, (_, v) in fields})


@st.composite
def blocks(draw: st.DrawFn, unsupported: bool = False) -> tuple[str, list[dict[str, Any]]]:
    schema, values = draw(records(_Names(), 0, unsupported))
    rows = draw(st.lists(values, max_size=12))
    return json.dumps(schema), rows


def _uses_unsupported(schema_json: str) -> bool:
    text = schema_json
    return any(json.dumps(t)[1:-1] in text for t, _ in UNSUPPORTED)


def _check(schema_json: str, rows: list[dict[str, Any]], trailer: bytes = b"") -> None:
    content = encode_avro_content(encode_records(rows, schema_json))
    slow = _slow_table(content, schema_json)
    header = avro_data_block(rows, schema_json, "1").header
    via_blocks = decode_data_table(int(BlockType.AVRO_DATA), header, content + trailer)
    assert via_blocks.equals(slow) and via_blocks.schema.equals(slow.schema)
    try:
        fast = decode_block_records_to_arrow(content + trailer, schema_json)
    except Unsupported:
        assert _uses_unsupported(schema_json)
    else:
        assert fast.schema.equals(slow.schema)
        assert fast.equals(slow)
        assert fast.to_pylist() == slow.to_pylist()
    try:
        encoded = _fast_encode(slow, schema_json)
    except Unsupported:
        assert _uses_unsupported(schema_json)
    else:
        assert encoded == content
    frame = avro_data_block_from_arrow(slow, "1", schema=schema_json)
    assert frame.content == content


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks(), st.binary(max_size=20))
def test_random_schemas_decode_and_encode_like_fastavro(case: tuple[str, list[Any]],
                                                        trailer: bytes) -> None:
    _check(*case, trailer=trailer)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks(unsupported=True))
def test_unsupported_types_fall_back_to_fastavro(case: tuple[str, list[Any]]) -> None:
    _check(*case)


def test_unsupported_schema_raises_and_public_path_falls_back() -> None:
    schema = json.dumps({"type": "record", "name": "r", "fields": [
        {"name": "k", "type": "string"},
        {"name": "m", "type": {"type": "map", "values": _WIDE_DECIMAL}}]})
    rows = [{"k": "a", "m": {"x": decimal.Decimal("1.25")}}, {"k": "b", "m": {}}]
    frame = avro_data_block(rows, schema, "1")
    with pytest.raises(Unsupported):
        decode_block_records_to_arrow(frame.content, schema)
    table = decode_data_table(frame.block_type, frame.header, frame.content)
    assert table.column("m").to_pylist() == [[("x", decimal.Decimal("1.25"))], []]
    with pytest.raises(Unsupported):
        encode_arrow_to_records(table, schema)
    assert avro_data_block_from_arrow(table, "1", schema=schema).content == frame.content
    assert block_keys(frame.block_type, frame.header, frame.content, key_field="k") == ["a", "b"]


_LONGS = json.dumps({"type": "record", "name": "r", "fields": [
    {"name": "a", "type": {"type": "array", "items": "long"}}]})


def _long(v: int) -> bytes:
    return bytes(encode_records([{"a": [v]}], _LONGS)[0][1:-1])  # the item alone


def test_arrays_in_several_blocks_read_like_fastavro() -> None:
    """Avro lets a writer split an array into blocks (count, items, count, items, ..., 0);
    the column-wise reader reads them as fastavro does."""
    datum = bytes([4]) + _long(1) + _long(-2) + bytes([2]) + _long(300) + bytes([0])
    content = encode_avro_content([datum, bytes([0])])
    fast = decode_block_records_to_arrow(content, _LONGS)
    assert fast.equals(_slow_table(content, _LONGS))
    assert fast.column("a").to_pylist() == [[1, -2, 300], []]


def test_array_blocks_with_byte_sizes_and_very_long_arrays_go_to_fastavro() -> None:
    """A negative block count (the block's byte size follows), or an array longer than the
    reader steps through column-wise: fastavro's answer."""
    items = _long(7) + _long(8)
    sized = bytes([3]) + bytes([len(items) * 2]) + items + bytes([0])  # count -2, then size
    content = encode_avro_content([sized])
    with pytest.raises(Unsupported):
        decode_block_records_to_arrow(content, _LONGS)
    assert _slow_table(content, _LONGS).column("a").to_pylist() == [[7, 8]]
    long_rows = [{"a": list(range(MAX_ITEM_STEPS + 1))}]
    content = encode_avro_content(encode_records(long_rows, _LONGS))
    with pytest.raises(Unsupported):
        decode_block_records_to_arrow(content, _LONGS)
    header = avro_data_block(long_rows, _LONGS, "1").header
    assert decode_data_table(int(BlockType.AVRO_DATA), header, content).column("a") \
        .to_pylist() == [list(range(MAX_ITEM_STEPS + 1))]
    # writing has no such limit: one block, as fastavro writes it
    assert _fast_encode(_slow_table(content, _LONGS), _LONGS) == content


# --- trips-like and meta columns ----------------------------------------------------------


def _trips(n: int) -> pa.Table:
    cols: dict[str, pa.Array] = {f: pa.array([None if i % 7 == 3 else f"{f}-{i}"
                                              for i in range(n)], pa.string()) for f in META_FIELDS}
    cols["uuid"] = pa.array([f"u{i}" for i in range(n)], pa.string())
    cols["ts"] = pa.array([i * 1_000_003 - 2**40 for i in range(n)], pa.int64())
    cols["rider"] = pa.array([None if i % 5 == 0 else f"rider-é✓{i}" for i in range(n)],
                             pa.string())
    cols["fare"] = pa.array([i / 3 for i in range(n)], pa.float64())
    cols["tip"] = pa.array([None if i % 3 == 0 else -i / 7 for i in range(n)], pa.float64())
    cols["seq"] = pa.array([(-1) ** i * i * 40_000 for i in range(n)], pa.int32())
    cols["city"] = pa.array([["sf", "", None][i % 3] for i in range(n)], pa.string())
    return pa.table(cols)


@pytest.mark.parametrize("n", [0, 1, 5000])
def test_trips_with_meta_columns(n: int) -> None:
    table = _trips(n)
    rows = arrow_to_records(table)
    frame = avro_data_block_from_arrow(table, "1")
    schema_json = frame.header.get(HeaderKey.SCHEMA)
    assert schema_json is not None
    assert frame.content == encode_avro_content(encode_records(rows, schema_json))
    fast = decode_block_records_to_arrow(frame.content + b"\x00trailer", schema_json)
    assert fast.equals(_slow_table(frame.content, schema_json))
    assert fast.equals(table)
    keys = block_keys(frame.block_type, frame.header, frame.content)
    assert keys == table.column("_hoodie_record_key").to_pylist()


def _fixed_width_trips(n: int, nulls: bool) -> pa.Table:
    """Columns whose every value encodes to the same bytes per row (one instant, one file,
    keys of one length, small ints, doubles, booleans), where the encoder stacks the columns
    into one byte matrix; ``nulls``: a nullable column breaks the run (a binary piece)."""
    cols: dict[str, pa.Array] = {
        "_hoodie_commit_time": pa.array(["20250101000000000"] * n, pa.string()),
        "_hoodie_record_key": pa.array([f"k{i:06d}" for i in range(n)], pa.string()),
        "_hoodie_file_name": pa.array(["f1-0_0-1-1_20250101000000000.parquet"] * n,
                                      pa.string()),
        "uuid": pa.array([f"{i:08x}-aaaa" for i in range(n)], pa.string()),
        "passengers": pa.array([1 + i % 6 for i in range(n)], pa.int32()),
        "big": pa.array([2**40 + i for i in range(n)], pa.int64()),
        "fare": pa.array([i / 3 for i in range(n)], pa.float64()),
        "ok": pa.array([i % 2 == 0 for i in range(n)], pa.bool_()),
        "empty": pa.array([""] * n, pa.string()),
        "rider": pa.array([None if nulls and i % 4 == 1 else f"r{i % 10}" for i in range(n)],
                          pa.string()),
        "tail": pa.array([f"t{i % 10}" for i in range(n)], pa.string()),
    }
    return pa.table(cols)


@pytest.mark.parametrize(("n", "nulls"), [(1, False), (700, False), (700, True)])
def test_fixed_width_columns_encode_like_fastavro(n: int, nulls: bool) -> None:
    table = _fixed_width_trips(n, nulls)
    frame = avro_data_block_from_arrow(table, "1")
    schema_json = frame.header.get(HeaderKey.SCHEMA)
    assert schema_json is not None
    assert frame.content == encode_avro_content(encode_records(arrow_to_records(table),
                                                               schema_json))
    assert _fast_encode(table, schema_json) == frame.content
    body, count = encode_arrow_to_records(table, schema_json, prefixed=False)
    assert count == n
    assert body == b"".join(encode_records(arrow_to_records(table), schema_json))
    assert decode_block_records_to_arrow(frame.content + b"\x00", schema_json).equals(table)


def test_sliced_and_chunked_inputs_encode_like_fastavro() -> None:
    table = _trips(50)
    pieces = pa.concat_tables([table.slice(3, 10), table.slice(20, 15)])
    frame = avro_data_block_from_arrow(pieces, "1")
    schema_json = frame.header.get(HeaderKey.SCHEMA)
    assert frame.content == encode_avro_content(encode_records(arrow_to_records(pieces),
                                                               schema_json))


# --- bad input goes to the fastavro path and its typed errors ------------------------------


def _content(rows: int = 3) -> tuple[bytes, str]:
    frame = avro_data_block_from_arrow(_trips(rows), "1")
    schema_json = frame.header.get(HeaderKey.SCHEMA)
    assert schema_json is not None
    return frame.content, schema_json


def test_length_prefix_disagreeing_with_encoding_is_a_content_error() -> None:
    content, schema_json = _content()
    (l1,) = struct.unpack_from(">i", content, 8)
    (l2,) = struct.unpack_from(">i", content, 12 + l1)
    d1 = content[12: 12 + l1]
    d2 = content[16 + l1: 16 + l1 + l2]
    # the first record claims one byte more and the second one less: the framing stays whole
    bad = content[:8] + struct.pack(">i", l1 + 1) + d1 + d2[:1] + struct.pack(">i", l2 - 1) \
        + d2[1:] + content[16 + l1 + l2:]
    with pytest.raises(Unsupported):
        decode_block_records_to_arrow(bytes(bad), schema_json)
    with pytest.raises(ContentError):
        decode_data_table(int(BlockType.AVRO_DATA), avro_data_block([], schema_json, "1").header,
                          bytes(bad))


@pytest.mark.parametrize("cut", [7, 9, 20, -1])
def test_truncated_content_is_a_content_error(cut: int) -> None:
    content, schema_json = _content()
    header = avro_data_block([], schema_json, "1").header
    with pytest.raises(Unsupported):
        decode_block_records_to_arrow(content[:cut], schema_json)
    with pytest.raises(FormatError):
        decode_data_table(int(BlockType.AVRO_DATA), header, content[:cut])


def test_non_nullable_column_with_nulls_falls_back_to_fastavro_error() -> None:
    schema = json.dumps({"type": "record", "name": "r",
                         "fields": [{"name": "k", "type": "string"}]})
    table = pa.table({"k": pa.array(["a", None])})
    with pytest.raises(Unsupported):
        encode_arrow_to_records(table, schema)
    with pytest.raises(Exception):  # noqa: B017 - whatever fastavro's path raised before
        avro_data_block_from_arrow(table, "1", schema=schema)


# --- every Avro data block of the real Hudi fixtures --------------------------------------


def _fixture_avro_blocks() -> list[tuple[str, int, bytes, str]]:
    out = []
    for log in hf.log_files():
        try:
            frames = list(decode_blocks(Path(log).read_bytes()))
        except Exception:  # noqa: BLE001 - corrupt-block fixtures are tested elsewhere
            continue
        for i, item in enumerate(frames):
            frame = item[0] if isinstance(item, tuple) else item
            if getattr(frame, "block_type", None) not in (BlockType.AVRO_DATA, BlockType.CDC_DATA):
                continue
            schema = frame.header.get(HeaderKey.SCHEMA)
            if schema is not None:
                out.append((hf.fixture_id(log), i, bytes(frame.content), schema))
    return out


@hf.requires_fixtures
def test_every_fixture_avro_block() -> None:
    cases = _fixture_avro_blocks()
    assert cases, "the fixtures hold Avro data blocks"
    fast_blocks = 0
    for name, i, content, schema_json in cases:
        slow = _slow_table(content, schema_json)
        try:
            fast = decode_block_records_to_arrow(content, schema_json)
        except Unsupported:
            pass
        else:
            fast_blocks += 1
            assert fast.schema.equals(slow.schema), (name, i)
            assert fast.equals(slow), (name, i)
        try:
            encoded = _fast_encode(slow, schema_json)
        except Unsupported:
            continue
        assert encoded == content, (name, i)
    assert fast_blocks, "the fast path reads some fixture blocks"


def test_nested_nullable_records_mixed_nulls_encode_like_fastavro() -> None:
    """The element-wise join of the encoder (a null row contributes no bytes): nullable
    records holding nullable strings, empty strings, fixed(0) and a union whose null branch
    is second, rows null at every level, and inputs sliced and chunked."""
    inner = {"type": "record", "name": "In", "fields": [
        {"name": "s", "type": ["null", "string"]},
        {"name": "z", "type": {"type": "fixed", "name": "Z", "size": 0}},
        {"name": "d", "type": ["double", "null"]},
        {"name": "l", "type": "long"}]}
    schema_json = json.dumps({"type": "record", "name": "R", "fields": [
        {"name": "k", "type": "string"},
        {"name": "r", "type": ["null", inner]},
        {"name": "b", "type": ["null", "boolean"]}]})
    rows = []
    for i in range(3000):
        rec = None if i % 3 == 0 else {
            "s": None if i % 5 == 0 else "x" * (i % 7), "z": b"",
            "d": None if i % 4 == 0 else i / 7, "l": (-1) ** i * i * 1_000_003}
        rows.append({"k": f"key-{i}" * (i % 3), "r": rec, "b": None if i % 2 else i % 4 == 1})
    _check(schema_json, rows)
    table = _slow_table(encode_avro_content(encode_records(rows, schema_json)), schema_json)
    for lo, hi in ((1, 2999), (1000, 1001), (2999, 3000)):
        part = table.slice(lo, hi - lo)
        want = encode_records(rows[lo:hi], schema_json)
        assert _fast_encode(part, schema_json) == encode_avro_content(want)
        chunked = pa.concat_tables([part.slice(0, (hi - lo) // 2), part.slice((hi - lo) // 2)])
        assert _fast_encode(chunked, schema_json) == encode_avro_content(want)


def _decimal_schema(t: dict[str, Any]) -> str:
    return json.dumps({"type": "record", "name": "r", "fields": [{"name": "d", "type": t}]})


def _bytes_datum(raw: bytes) -> bytes:
    """An Avro ``bytes`` datum: zigzag varint length (below 64: one byte), then ``raw``."""
    assert len(raw) < 64
    return bytes([len(raw) * 2]) + raw


@pytest.mark.parametrize("raw", [b"", bytes([1] * 17), (10**5).to_bytes(3, "big"),
                                 (-(10**5)).to_bytes(3, "big", signed=True)])
def test_decimal_bytes_the_fast_path_does_not_read_go_to_fastavro(raw: bytes) -> None:
    """An empty value, more than 16 bytes, or more digits than the precision (fastavro rounds
    those to the precision, then Arrow refuses them): fastavro's answer, not the fast path's."""
    schema = _decimal_schema({"type": "bytes", "logicalType": "decimal", "precision": 5,
                              "scale": 1})
    content = encode_avro_content([_bytes_datum(raw)])
    with pytest.raises(Unsupported):
        decode_block_records_to_arrow(content, schema)
    header = avro_data_block([{"d": decimal.Decimal("1.5")}], schema, "1").header
    try:
        slow: pa.Table | type[Exception] = _slow_table(content, schema)
    except (ContentError, FormatError) as exc:
        slow = type(exc)
    if isinstance(slow, pa.Table):
        assert decode_data_table(int(BlockType.AVRO_DATA), header, content).equals(slow)
    else:
        with pytest.raises(slow):
            decode_data_table(int(BlockType.AVRO_DATA), header, content)


def test_decimal_encoding_matches_java_readers_and_fastavro_lengths() -> None:
    """Hand-checked bytes: fixed values sign-extend to the size; bytes values take
    ``|v|.bit_length() // 8 + 1`` bytes (fastavro's rule: -128 is ``ff 80``)."""
    fixed = _decimal_schema({"type": "fixed", "name": "f", "size": 3, "logicalType": "decimal",
                             "precision": 6, "scale": 2})
    table = pa.table({"d": pa.array([decimal.Decimal("-0.01"), decimal.Decimal("1.28")],
                                    pa.decimal128(6, 2))})
    assert encode_arrow_to_records(table, fixed, prefixed=False)[0] == \
        bytes.fromhex("ffffff" "000080")
    on_bytes = _decimal_schema({"type": "bytes", "logicalType": "decimal", "precision": 6,
                                "scale": 0})
    values = [0, -1, 127, 128, -128, -129, 32767, -32768]
    table = pa.table({"d": pa.array([decimal.Decimal(v) for v in values],
                                    pa.decimal128(6, 0))})
    got = encode_arrow_to_records(table, on_bytes, prefixed=False)[0]
    assert got.hex() == "0200" "02ff" "027f" "040080" "04ff80" "04ff7f" "047fff" "06ff8000"
    assert got == b"".join(encode_records([{"d": decimal.Decimal(v)} for v in values],
                                          on_bytes))


def test_decimal_column_the_fast_path_does_not_encode_goes_to_fastavro() -> None:
    """Another scale than the schema's, or more digits than its precision: Unsupported, and
    the block writer gives fastavro's bytes or its error."""
    schema = _decimal_schema({"type": "bytes", "logicalType": "decimal", "precision": 4,
                              "scale": 2})
    rescale = pa.table({"d": pa.array([decimal.Decimal("1.5")], pa.decimal128(4, 1))})
    with pytest.raises(Unsupported):
        encode_arrow_to_records(rescale, schema)
    assert avro_data_block_from_arrow(rescale, "1", schema=schema).content == \
        encode_avro_content(encode_records([{"d": decimal.Decimal("1.50")}], schema))
    wide = pa.table({"d": pa.array([decimal.Decimal("123.45")], pa.decimal128(10, 2))})
    with pytest.raises(Unsupported):
        encode_arrow_to_records(wide, schema)
    with pytest.raises(UsageError, match="precision"):
        avro_data_block_from_arrow(wide, "1", schema=schema)
    with pytest.raises(UsageError, match="precision"):
        encode_records([{"d": decimal.Decimal("123.45")}], schema)


def test_a_map_with_a_key_twice_reads_as_fastavro_reads_it() -> None:
    """No Avro writer repeats a map key, but bytes may: fastavro keeps one entry (the last
    value, at the first key's place); the column-wise reader leaves such a block to it."""
    schema = json.dumps({"type": "record", "name": "r", "fields": [
        {"name": "m", "type": {"type": "map", "values": "long"}}]})
    twice = bytes([6]) + b"\x02a" + _long(1) + b"\x02b" + _long(2) + b"\x02a" + _long(3) \
        + bytes([0])
    once = bytes([2]) + b"\x02a" + _long(5) + bytes([0])
    content = encode_avro_content([once, twice])
    with pytest.raises(Unsupported):
        decode_block_records_to_arrow(content, schema)
    header = avro_data_block([{"m": {}}], schema, "1").header
    got = decode_data_table(int(BlockType.AVRO_DATA), header, content)
    assert got.column("m").to_pylist() == [[("a", 5)], [("a", 3), ("b", 2)]]
    assert decode_block_records_to_arrow(encode_avro_content([once, once]), schema) \
        .column("m").to_pylist() == [[("a", 5)], [("a", 5)]]  # one key per row: fast path


def test_a_map_column_with_a_key_twice_is_written_as_the_per_record_path_writes_it() -> None:
    """An Arrow map may repeat a key; the per-record path makes each map a dict (the last
    value), and the column-wise writer leaves such a column to it."""
    schema = json.dumps({"type": "record", "name": "r", "fields": [
        {"name": "m", "type": {"type": "map", "values": "long"}}]})
    table = pa.table({"m": pa.array([[("a", 1), ("a", 2)], [("a", 1), ("b", 2)]],
                                    pa.map_(pa.string(), pa.int64()))})
    with pytest.raises(Unsupported):
        encode_arrow_to_records(table, schema)
    expected = encode_avro_content(encode_records([{"m": {"a": 2}}, {"m": {"a": 1, "b": 2}}],
                                                  schema))
    assert avro_data_block_from_arrow(table, "1", schema=schema).content == expected
    assert _fast_encode(table.slice(1), schema) == encode_avro_content(
        encode_records([{"m": {"a": 1, "b": 2}}], schema))
