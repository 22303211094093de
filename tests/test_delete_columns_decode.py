"""Delete block content decoded column-wise (``decode_delete_columns``) equals the fastavro
decode field by field, on random record lists of every ordering kind, on every delete block
of the real Hudi fixtures, and on truncated or mutated bytes (same records or the same typed
error, never another exception) (spec/format.md §5.2)."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import math
import re
import struct
from pathlib import Path
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.constants import BlockType
from morlog.logformat.delete_content import (
    _PARSED,
    ARRAY_KIND,
    ORDERING_ARROW_TYPES,
    DeleteColumns,
    DeleteRecord,
    OrderingValue,
    _decode_columns,
    _Miss,
    _zigzag_varint,
    decode_delete_columns,
    decode_delete_content,
    decode_delete_content_fastavro,
    delete_records_to_payload,
    encode_delete_content,
)
from morlog.logformat.errors import MorlogError, UnsupportedVersionError
from morlog.readers import LogFileReader
from morlog.readers.logfile import LogBlock

from . import hudi_fixtures as hf

_UTC = dt.UTC
_TEXT = st.text(max_size=16)  # non-ASCII, surrogate-free (UTF-8 encodable)
_DEC = st.integers(-(10**30) + 1, 10**30 - 1).map(lambda i: decimal.Decimal(i).scaleb(-15))
_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "boolean": st.booleans(),
    "int": st.integers(-(2**31), 2**31 - 1),
    "long": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(width=32),
    "double": st.floats(),
    "bytes": st.binary(max_size=16),
    "string": _TEXT,
    "date": st.dates(),
    "decimal": _DEC,
    "time_micros": st.times(),
    "timestamp_micros": st.datetimes(timezones=st.just(_UTC)),
}
_SINGLE = st.one_of(*[v.map(lambda x, k=k: OrderingValue(k, x)) for k, v in _VALUES.items()])
_ARRAY = st.lists(st.one_of(st.none(), _SINGLE), max_size=3).map(
    lambda vs: OrderingValue(ARRAY_KIND, tuple(vs)))


def _records(ordering: st.SearchStrategy[Any], max_size: int = 30
             ) -> st.SearchStrategy[list[DeleteRecord]]:
    rec = st.builds(DeleteRecord, st.one_of(st.none(), _TEXT), st.one_of(st.none(), _TEXT),
                    ordering)
    return st.lists(rec, max_size=max_size)


def _one_kind() -> st.SearchStrategy[list[DeleteRecord]]:
    """Records whose ordering values are of one kind (or null): the usual block."""
    return st.sampled_from(sorted(_VALUES)).flatmap(lambda k: _records(st.one_of(
        st.none(), _VALUES[k].map(lambda x: OrderingValue(k, x)))))


def _norm(v: Any) -> Any:
    """A value compared exactly: floats by their bits (NaN payloads too), datetimes with
    their tzinfo, every value with its type."""
    if isinstance(v, OrderingValue):
        return ("OV", v.kind, _norm(v.value))
    if isinstance(v, tuple):
        return tuple(_norm(x) for x in v)
    if isinstance(v, float):
        return ("float", struct.pack("<d", v))
    if isinstance(v, dt.datetime):
        return ("datetime", v, v.tzinfo)
    if isinstance(v, decimal.Decimal):
        return ("decimal", v.as_tuple())
    return (type(v).__name__, v)


def _rows(records: Any) -> list[Any]:
    return [(r.record_key, r.partition_path, _norm(r.ordering_value)) for r in records]


def _error(exc: MorlogError) -> Any:
    """A typed error as compared: its type and message (object addresses in fastavro's
    messages, ``<_io.BytesIO object at 0x...>``, differ from one decode to the next)."""
    return ("error", type(exc).__name__, re.sub(r" at 0x[0-9a-f]+", "", str(exc)))


def _outcome(fn: Any, content: bytes) -> Any:
    try:
        return ("ok", _rows(fn(content).records))
    except MorlogError as exc:
        return _error(exc)


def _columns_outcome(content: bytes) -> Any:
    try:
        cols = decode_delete_columns(content)
    except MorlogError as exc:
        return _error(exc)
    _check_columns(cols)
    return ("ok", _rows(cols.records()))


def _check_columns(cols: DeleteColumns) -> None:
    """The columns agree with the records they give (types, lengths, branches)."""
    n = len(cols)
    assert cols.keys.type == pa.string() and len(cols.keys) == n
    assert cols.partitions.type == pa.string() and len(cols.partitions) == n
    assert cols.branches.dtype == np.int8
    for b, arr in cols.values.items():
        assert arr.type == ORDERING_ARROW_TYPES[b]
        assert len(arr) == int(np.count_nonzero(cols.branches == b))


def _same(records: list[DeleteRecord]) -> DeleteColumns:
    content = encode_delete_content(records)
    want = decode_delete_content_fastavro(content)
    cols = decode_delete_columns(content)
    _check_columns(cols)
    assert cols.version == want.version == 3
    assert cols.keys.to_pylist() == [r.record_key for r in want.records]
    assert cols.partitions.to_pylist() == [r.partition_path for r in want.records]
    assert _rows(cols.records()) == _rows(want.records)
    assert _rows(decode_delete_content(content).records) == _rows(want.records)
    return cols


@settings(max_examples=400, deadline=None)
@given(records=_one_kind())
def test_one_kind_decodes_column_wise_as_fastavro(records: list[DeleteRecord]) -> None:
    cols = _same(records)
    big_decimal = any(r.ordering_value is not None and r.ordering_value.kind == "decimal"
                      and abs(r.ordering_value.value) >= decimal.Decimal(2) ** 95 / 10**15
                      for r in records)
    if not big_decimal:  # the fast path, not the fallback, decoded them
        assert cols.objects is None and cols.complete


@settings(max_examples=300, deadline=None)
@given(records=_records(st.one_of(st.none(), _SINGLE, _ARRAY)))
def test_mixed_kinds_and_array_wrapper_decode_as_fastavro(records: list[DeleteRecord]) -> None:
    cols = _same(records)
    natural = [r.ordering_value is None or (r.ordering_value.kind == "int"
                                            and r.ordering_value.value == 0) for r in records]
    assert cols.natural().tolist() == natural


def test_empty_list() -> None:
    cols = _same([])
    assert len(cols) == 0 and cols.objects is None


def _raw_content(records: list[DeleteRecord], blocks: list[int], sized: bool,
                 pad_varints: bool = False) -> bytes:
    """The payload with the array split into blocks of the given sizes (negative counts
    with byte sizes when ``sized``), as another Avro writer could lay it out."""
    items = delete_records_to_payload(records)["deleteRecordList"]
    item_schema = _PARSED["fields"][0]["type"]["items"]
    enc = []
    for it in items:
        b = io.BytesIO()
        fastavro.schemaless_writer(b, item_schema, it)
        enc.append(b.getvalue())
    out = bytearray()
    pos = 0
    for n in blocks:
        chunk = b"".join(enc[pos:pos + n])
        pos += n
        if sized:
            out += _zz(-n) + _zz(len(chunk))
        else:
            out += _zz(n, pad_varints)
        out += chunk
    assert pos == len(enc)
    out += b"\x00"
    return struct.pack(">ii", 3, len(out)) + bytes(out)


def _zz(v: int, pad: bool = False) -> bytes:
    out = bytearray(_zigzag_varint(v))
    if pad:  # a non-canonical (padded) varint: fastavro reads it, the fast path does not
        out[-1] |= 0x80
        out.append(0)
    return bytes(out)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), records=_records(st.one_of(st.none(), _SINGLE), max_size=20),
       sized=st.booleans(), pad=st.booleans())
def test_several_array_blocks(data: st.DataObject, records: list[DeleteRecord], sized: bool,
                              pad: bool) -> None:
    n = len(records)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=4)))
    sizes = [b - a for a, b in zip([0, *cuts], [*cuts, n], strict=True) if b > a]
    content = _raw_content(records, sizes, sized, pad_varints=pad and not sized)
    assert _columns_outcome(content) == _outcome(decode_delete_content_fastavro, content)
    if len(sizes) <= 16 and not pad and not any(
            r.ordering_value is not None and r.ordering_value.kind == "decimal"
            for r in records):
        _decode_columns(3, content[8:])  # the fast path took them


def test_wrong_block_byte_size_falls_back_to_fastavro() -> None:
    """fastavro ignores an array block's byte size; a wrong one only moves the decode to it."""
    recs = [DeleteRecord("a", "p", OrderingValue("long", 5)), DeleteRecord("b", None, None)]
    content = bytearray(_raw_content(recs, [2], sized=True))
    content[9] += 2  # the byte size (after the count -2 at offset 8)
    with pytest.raises(_Miss):
        _decode_columns(3, bytes(content[8:]))
    assert _columns_outcome(bytes(content)) == _outcome(decode_delete_content_fastavro,
                                                        bytes(content))
    assert _columns_outcome(bytes(content))[0] == "ok"


@pytest.mark.parametrize("kind,value", [
    ("int", -(2**31)), ("int", 2**31 - 1), ("long", -(2**63)), ("long", 2**63 - 1),
    ("date", dt.date(1, 1, 1)), ("date", dt.date(9999, 12, 31)),
    ("time_micros", dt.time(0)), ("time_micros", dt.time(23, 59, 59, 999999)),
    ("timestamp_micros", dt.datetime(1, 1, 1, tzinfo=_UTC)),
    ("timestamp_micros", dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=_UTC)),
    ("decimal", decimal.Decimal(2**95 - 1).scaleb(-15)),
    ("decimal", decimal.Decimal(-(2**95)).scaleb(-15)),
    ("decimal", decimal.Decimal(10**30 - 1).scaleb(-15)),  # 13 bytes: the fastavro path
    ("decimal", decimal.Decimal(0).scaleb(-15)),
    ("float", float("nan")), ("double", float("-inf")), ("bytes", b""), ("string", "ü€😀"),
])
def test_boundary_values(kind: str, value: Any) -> None:
    _same([DeleteRecord("k", "p", OrderingValue(kind, value)), DeleteRecord(None, None, None)])


def _patch(content: bytes, old: bytes, new: bytes) -> bytes:
    payload = content[8:].replace(old, new, 1)
    return struct.pack(">ii", 3, len(payload)) + payload


@pytest.mark.parametrize("case", ["int_wide", "date_far", "time_neg", "ts_far", "bool_2",
                                  "bad_utf8", "surrogate", "neg_branch", "branch_13",
                                  "neg_len", "overlong_varint", "trailing", "huge_count"])
def test_bytes_the_fast_path_refuses(case: str) -> None:
    """Values and framings only fastavro decides: the column-wise decoder gives its result or
    its typed error."""
    base = encode_delete_content([DeleteRecord("kk", "pp", OrderingValue("long", 7))])
    tail = b"\x06\x0e"  # LongWrapper branch, zigzag 7
    raw = {
        "int_wide": _patch(base, tail, b"\x04" + _zz(2**40)),
        "date_far": _patch(base, tail, b"\x10" + _zz(3_000_000)),
        "time_neg": _patch(base, tail, b"\x14" + _zz(-1)),
        "ts_far": _patch(base, tail, b"\x16" + _zz(2**62)),
        "bool_2": _patch(base, tail, b"\x02\x02"),
        "bad_utf8": _patch(base, b"\x04kk", b"\x04\xff\xfe"),
        "surrogate": _patch(base, b"\x04kk", b"\x06\xed\xa0\x80"),
        "neg_branch": _patch(base, tail, b"\x01"),
        "branch_13": _patch(base, tail, b"\x1a"),
        "neg_len": _patch(base, b"\x04kk", b"\x03kk"),
        "overlong_varint": _patch(base, tail, b"\x06\x8e\x00"),
        "trailing": _patch(base, tail, tail + b"\x00"),
        "huge_count": _patch(base, base[8:9], b"\xfe\xff\xff\xff\xff\xff\xff\xff\x7f"),
    }[case]
    with pytest.raises(_Miss):
        _decode_columns(3, raw[8:])
    assert _columns_outcome(raw) == _outcome(decode_delete_content_fastavro, raw)


def test_kryo_versions_keep_their_error() -> None:
    for version in (1, 2):
        content = struct.pack(">ii", version, 3) + b"\x01\x02\x03"
        with pytest.raises(UnsupportedVersionError):
            decode_delete_columns(content)
        assert _columns_outcome(content) == _outcome(decode_delete_content_fastavro, content)


# --- fuzz --------------------------------------------------------------------------------


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), records=_records(st.one_of(st.none(), _SINGLE, _ARRAY), max_size=8))
def test_mutated_payloads_give_fastavros_outcome(data: st.DataObject,
                                                 records: list[DeleteRecord]) -> None:
    content = bytearray(encode_delete_content(records))
    payload = content[8:]
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["set", "cut", "insert", "drop"]))
        i = data.draw(st.integers(0, max(0, len(payload) - 1)))
        if op == "set" and payload:
            payload[i] = data.draw(st.integers(0, 255))
        elif op == "cut":
            del payload[i:]
        elif op == "insert":
            payload[i:i] = data.draw(st.binary(min_size=1, max_size=4))
        elif payload:
            del payload[i]
    fix_length = data.draw(st.booleans())
    n = len(payload) if fix_length else struct.unpack(">i", bytes(content[4:8]))[0]
    mutated = struct.pack(">ii", 3, n) + bytes(payload)
    assert _columns_outcome(mutated) == _outcome(decode_delete_content_fastavro, mutated)


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=64))
def test_random_payloads_give_fastavros_outcome(raw: bytes) -> None:
    content = struct.pack(">ii", 3, len(raw)) + raw
    assert _columns_outcome(content) == _outcome(decode_delete_content_fastavro, content)
    assert _columns_outcome(raw) == _outcome(decode_delete_content_fastavro, raw)


def test_hostile_varints_allocate_nothing_large() -> None:
    """Counts and lengths near 2**63 are refused before anything is sized by them."""
    for body in (b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # count -2**63
                 b"\x02\x02" + b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01" + b"\x00" * 8,
                 b"\x01" + b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01"):
        content = struct.pack(">ii", 3, len(body)) + body
        assert _columns_outcome(content) == _outcome(decode_delete_content_fastavro, content)
        assert _columns_outcome(content)[0] == "error"


# --- the column-wise helpers -------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(data=st.data(), parts=st.lists(_records(st.one_of(st.none(), _SINGLE, _ARRAY),
                                               max_size=8), min_size=1, max_size=3))
def test_take_and_concat_keep_the_records(data: st.DataObject,
                                          parts: list[list[DeleteRecord]]) -> None:
    cols = [decode_delete_columns(encode_delete_content(p)) for p in parts]
    every = [r for p in parts for r in p]
    both = DeleteColumns.concat(cols)
    _check_columns(both)
    want = _rows(decode_delete_content_fastavro(encode_delete_content(every)).records)
    assert _rows(both.records()) == want
    idx = data.draw(st.lists(st.integers(0, max(0, len(every) - 1)),
                             max_size=len(every) and 12))
    taken = both.take(np.array(idx, dtype=np.int64))
    _check_columns(taken)
    assert _rows(taken.records()) == [want[i] for i in idx]
    column = both.ordering_column()
    kinds = {r.ordering_value.kind for r in every if r.ordering_value is not None}
    if len(kinds) == 1 and both.complete:
        assert column is not None
        kind = next(iter(kinds))
        assert [_norm(None if v is None else OrderingValue(kind, v))
                for v in _python(column)] == [w[2] for w in want]
    elif len(kinds) > 1:
        assert column is None


def _python(column: pa.Array) -> list[Any]:
    if pa.types.is_timestamp(column.type):
        return column.cast(pa.timestamp("us", tz="+00:00")).to_pylist()
    return column.to_pylist()


def test_from_records_keeps_only_exact_values() -> None:
    recs = [DeleteRecord("a", None, OrderingValue("int", 2**40)),
            DeleteRecord("b", "p", OrderingValue("decimal", decimal.Decimal("1.5"))),
            DeleteRecord("c", "p", OrderingValue("long", 3)),
            DeleteRecord("d", "p", OrderingValue("float", math.nan))]
    cols = DeleteColumns.from_records(3, recs)
    assert set(cols.values) == {3}
    assert not cols.complete
    assert cols.records() == tuple(recs)[:3] + (cols.records()[3],)
    assert cols.natural().tolist() == [False, False, False, False]


# --- the real Hudi fixtures --------------------------------------------------------------


def _fixture_delete_blocks() -> list[tuple[str, int, bytes]]:
    out = []
    for log in hf.log_files():
        with LogFileReader(str(log)) as r:
            for b in r.blocks():
                if b.block_type == BlockType.DELETE and not b.is_corrupt:
                    out.append((hf.fixture_id(Path(log)), b.offset, bytes(b.content())))
    return out


@hf.requires_fixtures
def test_every_fixture_delete_block_decodes_the_same_both_ways() -> None:
    blocks = _fixture_delete_blocks()
    if not blocks:
        pytest.skip("the Hudi fixtures hold no delete block")
    records = 0
    for where, offset, content in blocks:
        want = _outcome(decode_delete_content_fastavro, content)
        assert _columns_outcome(content) == want, (where, offset)
        if want[0] == "ok":
            records += len(want[1])
            cols = decode_delete_columns(content)
            if cols.version == 3 and all(r[2] is None or r[2][1] != ARRAY_KIND
                                         for r in want[1]):
                _decode_columns(3, bytes(content[8:8 + struct.unpack(">i", content[4:8])[0]]))
    assert records > 0


# --- the merge: deletes column-wise give the per-record merge's result -------------------

_TARGETS = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(),
            pa.uint64(), pa.float32(), pa.float64(), pa.string(), pa.large_string(),
            pa.binary(), pa.large_binary(), pa.bool_(), pa.date32(), pa.timestamp("us"),
            pa.timestamp("us", tz="UTC"), pa.timestamp("ms"), pa.timestamp("us", tz="Asia/Tokyo"),
            pa.decimal128(30, 15), pa.decimal128(10, 2), pa.time64("us")]


def _convert_outcome(fn: Any) -> Any:
    try:
        return ("ok", _python(fn()))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return ("fails",)


@settings(max_examples=400, deadline=None)
@given(data=st.data(), kind=st.sampled_from(sorted(_VALUES)), target=st.sampled_from(_TARGETS))
def test_exact_casts_convert_as_python_values_do(data: st.DataObject, kind: str,
                                                 target: pa.DataType) -> None:
    from morlog.logformat.delete_content import branch_python
    from morlog.readers.merge import _convert, _exact_cast

    recs = data.draw(st.lists(_VALUES[kind].map(
        lambda v: DeleteRecord("k", None, OrderingValue(kind, v))), max_size=6))
    cols = decode_delete_columns(encode_delete_content(recs))
    if not cols.values:
        return
    (b, values), = cols.values.items()
    if not _exact_cast(values.type, target):
        return
    want = _convert_outcome(lambda: pa.array(branch_python(b, values), type=target))
    got = _convert(b, values, target)
    if want[0] == "fails":
        assert got is None
    else:
        assert got is not None and got.type == target
        assert [_norm(v) for v in _python(got)] == [_norm(v) for v in want[1]]


def _same_array(a: pa.Array, b: pa.Array) -> bool:
    """Equal type and values, every NaN equal to every NaN (as the merge compares them)."""
    def canon(v: Any) -> Any:
        return "NaN" if isinstance(v, float) and math.isnan(v) else v

    return bool(a.type == b.type and [canon(v) for v in a.to_pylist()]
                == [canon(v) for v in b.to_pylist()])


_ORD_COLUMNS = {
    "long": (st.integers(-5, 5), pa.int64()),
    "int": (st.integers(-5, 5), pa.int32()),
    "double": (st.floats(-3, 3, allow_nan=False), pa.float64()),
    "string": (st.sampled_from(["a", "b", "c"]), pa.string()),
}


def _legacy(recs: list[DeleteRecord], seq0: int) -> list[tuple[str, int, bool, Any]]:
    """The deletes as the per-record merge built them (key, seq, natural, ordering)."""
    out = []
    seq = seq0
    for r in recs:
        if r.record_key is None:
            continue
        ov = r.ordering_value
        nat = ov is None or (ov.kind == "int" and ov.value == 0)
        out.append((r.record_key, seq, nat, None if nat or ov is None else ov.value))
        seq += 1
    return out


@settings(max_examples=300, deadline=None)
@given(data=st.data(), col=st.sampled_from(sorted(_ORD_COLUMNS)),
       dkinds=st.lists(st.sampled_from(["long", "int", "double", "string", "boolean", "date",
                                        "timestamp_micros"]), min_size=1, max_size=2),
       mode=st.sampled_from(["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"]),
       several=st.booleans(), with_array=st.booleans())
def test_merge_with_delete_columns_equals_the_per_record_merge(
        data: st.DataObject, col: str, dkinds: list[str], mode: str, several: bool,
        with_array: bool) -> None:
    from morlog.readers.merge import KEY, SEQ, DeleteRows, MergeSpec, _pick_winners

    vals, vtype = _ORD_COLUMNS[col]
    keys = st.sampled_from(["k1", "k2", "k3", "k4"])
    n = data.draw(st.integers(0, 8))
    rkeys = data.draw(st.lists(keys, min_size=n, max_size=n))
    rords = data.draw(st.lists(st.one_of(st.none(), vals), min_size=n, max_size=n))
    table = {KEY: pa.array(rkeys, pa.string()), "ts": pa.array(rords, vtype),
             SEQ: pa.array(np.arange(n, dtype=np.int64))}
    if several:
        table["ts2"] = pa.array(data.draw(st.lists(st.one_of(st.none(), vals), min_size=n,
                                                   max_size=n)), vtype)
    records = pa.table(table)
    ordering = st.one_of(st.none(), st.just(OrderingValue.natural()),
                         *[_VALUES[k].map(lambda v, k=k: OrderingValue(k, v)) for k in dkinds],
                         vals.map(lambda v: OrderingValue.infer(v)))
    if with_array:
        ordering = st.one_of(ordering, _ARRAY)
    blocks = data.draw(st.lists(st.lists(st.builds(DeleteRecord, st.one_of(st.none(), keys),
                                                   st.none(), ordering), max_size=6),
                                max_size=3))
    spec = MergeSpec(key_field=KEY, merge_mode=mode,
                     ordering_fields=("ts", "ts2") if several else ("ts",))
    parts, seqs, legacy = [], [], []
    seq = n
    for recs in blocks:
        cols = decode_delete_columns(encode_delete_content(recs))
        keep = np.flatnonzero(cols.keys.is_valid().to_numpy(zero_copy_only=False))
        parts.append(cols.take(keep))
        seqs.append(np.arange(seq, seq + keep.size, dtype=np.int64))
        legacy += _legacy(recs, seq)
        seq += keep.size
    rows, old = DeleteRows.of(parts, seqs), DeleteRows.of_tuples(legacy)
    assert rows.keys.equals(old.keys) and rows.seq.tolist() == old.seq.tolist()
    assert rows.natural.tolist() == old.natural.tolist()
    for i in range(2 if several else 1):
        for t in (vtype, pa.int64(), pa.string(), pa.float64()):
            assert _same_array(rows.ordering(i, t, several), old.ordering(i, t, several))
    want = _pick_winners(records, legacy, spec)
    got = _pick_winners(records, rows, spec)
    assert got.equals(want)


@settings(max_examples=300, deadline=None)
@given(records=st.one_of(_one_kind(), _records(st.one_of(st.none(), _SINGLE, _ARRAY),
                                               max_size=8)))
def test_column_records_encode_as_the_records(records: list[DeleteRecord]) -> None:
    from morlog.logformat.delete_content import encode_delete_column_records

    content = encode_delete_content(records)
    cols = decode_delete_columns(content)
    assert encode_delete_column_records(cols) == content
    for b in cols.present:  # one block per kind, as log compaction writes them
        rows = cols.rows(b)
        part = cols.take(rows)
        assert encode_delete_column_records(part) == encode_delete_content(
            [records[i] for i in rows.tolist()])


# --- no per-record path on the merged read and log compaction's merge --------------------


def _slice_with_deletes(directory: Path, kind: str) -> list[LogBlock]:
    from morlog.logformat.blocks import delete_block, parquet_data_block
    from morlog.logformat.delete_content import encode_delete_columns
    from morlog.writers.core.logwriter import LogFileWriter

    n = 200
    keys = [f"key-{i:04d}" for i in range(n)]
    t = pa.table({"_hoodie_record_key": pa.array(keys), "ts": pa.array(np.arange(n) * 10),
                  "v": pa.array(np.arange(n))})
    w = LogFileWriter(directory, "f1", "20250101000000000", fsync=False)
    w.append(parquet_data_block(t, "20250101000000001"))
    rng = np.random.default_rng(5)
    for i in range(3):
        sel = rng.choice(n, 60, replace=False)
        dk = pa.array([keys[j] for j in sel])
        ts = sel * 10 + rng.integers(-15, 15, sel.size)
        ordering = {"long": pa.array(ts, pa.int64()), "none": None,
                    "double": pa.array(ts.astype(float))}[kind]
        content = encode_delete_columns(dk, pa.array(["p"] * sel.size), ordering)
        w.append(delete_block(content, f"2025010100000000{i + 2}"))
    (name,) = [p.name for p in directory.iterdir()]
    with LogFileReader(str(directory / name)) as r:
        return [b for b in r.blocks()]


@pytest.mark.parametrize("kind", ["long", "none", "double"])
@pytest.mark.parametrize("mode", ["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"])
def test_merge_and_log_compaction_build_no_object_per_delete(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, mode: str) -> None:
    from morlog.logformat import delete_content
    from morlog.readers.merge import MergeSpec, merge_slice
    from morlog.writers.services.logcompaction import merge_log_records

    blocks = _slice_with_deletes(tmp_path, kind)
    spec = MergeSpec(ordering_field="ts", merge_mode=mode)
    with_objects = merge_slice(None, blocks, spec)
    logs_with_objects = merge_log_records(blocks, spec)

    def per_record(*_a: object, **_k: object) -> Any:
        raise AssertionError("per-record path taken")

    for name in ("decode_delete_content_fastavro", "decode_delete_payload"):
        monkeypatch.setattr(delete_content, name, per_record)
    monkeypatch.setattr(delete_content.DeleteColumns, "ordering_values", per_record)
    monkeypatch.setattr(delete_content.DeleteColumns, "records", per_record)
    monkeypatch.setattr(delete_content, "OrderingValue", per_record)
    # no cached decode: the blocks are read again
    blocks = [b for b in blocks]
    assert merge_slice(None, blocks, spec).equals(with_objects)
    logs = merge_log_records(blocks, spec)
    assert logs.records.equals(logs_with_objects.records)
    assert logs.deletes.keys.equals(logs_with_objects.deletes.keys)
    assert logs.barriers.keys.equals(logs_with_objects.barriers.keys)
    from morlog.writers.services.logcompaction import _by_ordering_kind

    for part in _by_ordering_kind(logs.deletes):
        delete_content.encode_delete_column_records(part)
