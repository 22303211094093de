"""Hudi's key generators (``morlog.logformat.keygen``): record keys and partition paths.

Judges: (a) the meta columns of every base file of the real Hudi fixture tables; (b) a per-row
reference written here from the rules of ``spec/table.md`` ("Record keys and partition paths"),
against random values; (c) the expected strings of Hudi's own TestTimestampBasedKeyGenerator
and its key generator documentation; (d) typed errors for settings and values morlog refuses.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.errors import UnsupportedSettingError, UsageError
from morlog.logformat.keygen import KeyGenError, KeyGenKind, KeyGenSpec
from morlog.logformat.partition_path import (
    UnsafePathError,
    check_relative_partition_path,
    escape_partition_value,
)
from morlog.logformat.table_files import parse_properties

from .hudi_fixtures import SKIP_REASON, fixture_id, tables

# --- (a) real tables written by Hudi ---------------------------------------------------------

_TABLES = tables()


@pytest.mark.skipif(not _TABLES, reason=SKIP_REASON)
@pytest.mark.parametrize("table", _TABLES, ids=[fixture_id(t) for t in _TABLES])
def test_fixture_tables_keys_and_partition_paths(table: Path) -> None:
    props = parse_properties((table / ".hoodie" / "hoodie.properties").read_text())
    spec = KeyGenSpec.from_properties(props)
    files = [f for f in table.rglob("*.parquet") if ".hoodie" not in f.parts]
    assert files
    rows = 0
    for f in files:
        t = pq.read_table(f)
        assert spec.record_keys(t).to_pylist() == t.column("_hoodie_record_key").to_pylist()
        assert spec.partition_paths(t).to_pylist() == \
            t.column("_hoodie_partition_path").to_pylist()
        rows += t.num_rows
    assert rows > 0


# --- (b) against a per-row reference --------------------------------------------------------

_DEFAULT = "__HIVE_DEFAULT_PARTITION__"


def _ref_string(v: object) -> str | None:
    """Java's toString of the Avro value: the rules of spec/table.md, one value at a time."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dt.datetime):
        return str((v - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1))
    if isinstance(v, dt.date):
        return f"{v.year:04d}-{v.month:02d}-{v.day:02d}"
    return str(v)


def _ref_key(fields: list[str], row: dict[str, object], prefixed: bool) -> str:
    vals = [_ref_string(row[f]) for f in fields]
    if len(fields) == 1 and not prefixed:
        if not vals[0]:
            raise KeyGenError("null or empty")
        return vals[0]
    if all(not v for v in vals):
        raise KeyGenError("all null or empty")
    return ",".join(f"{f}:{'__null__' if v is None else '__empty__' if v == '' else v}"
                    for f, v in zip(fields, vals, strict=True))


def _ref_path(fields: list[str], row: dict[str, object], hive: bool, encode: bool) -> str:
    out = []
    for f in fields:
        v = _ref_string(row[f])
        if not v:
            out.append(f"{f}={_DEFAULT}" if hive else _DEFAULT)
            continue
        if encode:
            v = escape_partition_value(v)
        out.append(f"{f}={v}" if hive else v)
    return "/".join(out)


_text = st.one_of(
    st.none(), st.just(""), st.sampled_from(["/", "=", "%", "a/b", "x=y", "50%", "..", "é€"]),
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x2FFF,
                          blacklist_categories=("Cs",)), max_size=6))
_COLUMNS = {
    "s": (pa.string(), _text),
    "i": (pa.int64(), st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))),
    "b": (pa.bool_(), st.one_of(st.none(), st.booleans())),
    "d": (pa.date32(), st.one_of(st.none(), st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31)))),
    "t": (pa.timestamp("us", tz="UTC"), st.one_of(st.none(), st.datetimes(
        dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31), timezones=st.just(dt.UTC)))),
    "m": (pa.decimal128(20, 8), st.one_of(st.none(), st.decimals(
        min_value=Decimal("-1e11"), max_value=Decimal("1e11"), places=8,
        allow_nan=False, allow_infinity=False))),
}


@st.composite
def _batches(draw: st.DrawFn) -> tuple[pa.Table, list[str], list[str]]:
    names = list(_COLUMNS)
    n = draw(st.integers(1, 8))
    cols = {c: pa.array([draw(_COLUMNS[c][1]) for _ in range(n)], _COLUMNS[c][0])
            for c in names}
    keys = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
    parts = draw(st.lists(st.sampled_from(names), min_size=0, max_size=3, unique=True))
    return pa.table(cols), keys, parts


def _expect(fn):  # type: ignore[no-untyped-def]
    try:
        return fn(), None
    except (KeyGenError, UnsafePathError) as e:
        return None, type(e)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_batches(), st.booleans(), st.booleans(), st.sampled_from(["6", "8", "9"]),
       st.sampled_from([None, "true", "false"]))
def test_complex_matches_reference(data: tuple[pa.Table, list[str], list[str]], hive: bool,
                                   encode: bool, version: str, new_encoding: str | None) -> None:
    batch, keys, parts = data
    props = {"hoodie.table.version": version,
             "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
             "hoodie.table.recordkey.fields": ",".join(keys),
             "hoodie.table.partition.fields": ",".join(parts),
             "hoodie.datasource.write.hive_style_partitioning": str(hive).lower(),
             "hoodie.datasource.write.partitionpath.urlencode": str(encode).lower()}
    if new_encoding is not None:
        props["hoodie.write.complex.keygen.new.encoding"] = new_encoding
    spec = KeyGenSpec.from_properties(props)
    prefixed = len(keys) > 1 or int(version) >= 9 or new_encoding != "true"
    rows = batch.to_pylist()
    want_keys, key_err = _expect(lambda: [_ref_key(keys, r, prefixed) for r in rows])
    got_keys, got_key_err = _expect(lambda: spec.record_keys(batch).to_pylist())
    assert (got_keys, got_key_err) == (want_keys, key_err)
    def want_paths() -> list[str]:
        out = [_ref_path(parts, r, hive, encode) if parts else "" for r in rows]
        for p in out:
            if parts:
                check_relative_partition_path(p)
        return out

    assert _expect(lambda: spec.partition_paths(batch).to_pylist()) == _expect(want_paths)


@settings(max_examples=200, deadline=None)
@given(_batches(), st.booleans(), st.booleans())
def test_simple_matches_reference(data: tuple[pa.Table, list[str], list[str]], hive: bool,
                                  encode: bool) -> None:
    batch, keys, parts = data
    spec = KeyGenSpec.from_properties({
        "hoodie.table.keygenerator.type": "SIMPLE", "hoodie.table.version": "8",
        "hoodie.table.recordkey.fields": keys[0],
        "hoodie.table.partition.fields": parts[0] if parts else "",
        "hoodie.datasource.write.hive_style_partitioning": str(hive).lower(),
        "hoodie.datasource.write.partitionpath.urlencode": str(encode).lower()})
    rows = batch.to_pylist()
    assert _expect(lambda: spec.record_keys(batch).to_pylist()) == \
        _expect(lambda: [_ref_key(keys[:1], r, False) for r in rows])
    if parts:
        assert _expect(lambda: spec.partition_paths(batch).to_pylist()) == _expect(
            lambda: [check_relative_partition_path(_ref_path(parts[:1], r, hive, encode))
                     for r in rows])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-(2**40), 2**40)), min_size=1, max_size=20),
       st.sampled_from(["yyyy/MM/dd", "yyyy-MM-dd HH", "yyyyMMddHHmmss", "yyyy-MM-dd hh a",
                        "D'-'yyyy", "yy-M-d H:m:s.SSS", "EEE MMM d yyyy", "yyyy-MM-dd HH:mm Z",
                        "yyyy-MM-dd'T'HH:mm:ssZZ"]),
       st.sampled_from(["UTC", "GMT+8:00", "GMT-05:30", "Asia/Kolkata", "EST",
                        "America/Sao_Paulo"]))
def test_timestamp_column_wise_matches_per_value(values: list[int | None], pattern: str,
                                                 zone: str) -> None:
    """The Arrow strftime path and the per-value Joda formatter agree."""
    from morlog.logformat import joda_time as jt

    spec = KeyGenSpec.from_properties({
        "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
        "hoodie.table.recordkey.fields": "k", "hoodie.table.partition.fields": "ts",
        "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
        "hoodie.keygen.timebased.output.dateformat": pattern,
        "hoodie.keygen.timebased.output.timezone": zone})
    batch = pa.table({"k": ["x"] * len(values), "ts": pa.array(values, pa.int64())})
    tokens = jt.parse_pattern(pattern)
    tz = jt.java_zone(zone)
    want = [jt.format_instant(tokens, 1 if v is None else v, tz) for v in values]
    try:
        got = spec.partition_paths(batch).to_pylist()
    except UnsafePathError:
        return
    assert got == want


# --- (c) Hudi's documented timestamp cases ---------------------------------------------------


def _paths(spec: KeyGenSpec, values: list[object], typ: pa.DataType | None = None) -> list[str]:
    batch = pa.table({"k": ["a"] * len(values), "c": pa.array(values, typ)})
    return spec.partition_paths(batch).to_pylist()


TZ = "hoodie.keygen.timebased.timezone"
IN_FMT = "hoodie.keygen.timebased.input.dateformat"
IN_TZ = "hoodie.keygen.timebased.input.timezone"
OUT_TZ = "hoodie.keygen.timebased.output.timezone"
UNIT = "hoodie.keygen.timebased.timestamp.scalar.time.unit"
CONSISTENT = "hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled"


def _spec(ttype: str, out: str, props: dict[str, str]) -> KeyGenSpec:
    base = {"hoodie.table.keygenerator.class":
            "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
            "hoodie.table.recordkey.fields": "k", "hoodie.table.partition.fields": "c",
            "hoodie.keygen.timebased.timestamp.type": ttype,
            "hoodie.keygen.timebased.output.dateformat": out}
    return KeyGenSpec.from_properties({**base, **props})


# (type, output format, settings, values, arrow type, expected): TestTimestampBasedKeyGenerator
_HUDI_CASES = [
    ("EPOCHMILLISECONDS", "yyyy-MM-dd hh", {TZ: "GMT+8:00"}, [1578283932000, None], None,
     ["2020-01-06 12", "1970-01-01 08"]),
    ("EPOCHMILLISECONDS", "yyyy-MM-dd hh", {TZ: "GMT"}, [1578283932000], None,
     ["2020-01-06 04"]),
    ("EPOCHMILLISECONDS", "yyyy-MM-dd hh", {TZ: "GMT+8:00"}, [Decimal("1578283932000.0001")],
     pa.decimal128(20, 4), ["2020-01-06 12"]),
    ("DATE_STRING", "yyyy-MM-dd hh", {TZ: "GMT+8:00", IN_FMT: "yyyy-MM-dd hh:mm:ss"},
     ["2020-01-06 12:12:12"], None, ["2020-01-06 12"]),
    ("DATE_STRING", "yyyy-MM-dd hh", {TZ: "GMT", IN_FMT: "yyyy-MM-dd hh:mm:ss"},
     ["2020-01-06 12:12:12"], None, ["2020-01-06 12"]),
    ("DATE_STRING", "yyyy-MM-dd hh:mm:ss", {TZ: "GMT", IN_FMT: "yyyy-MM-dd hh:mm:ss"},
     [None], pa.string(), ["1970-01-01 12:00:00"]),
    ("EPOCHMICROSECONDS", "yyyy-MM-dd hh", {TZ: "GMT+8:00"}, [1578283932123456], None,
     ["2020-01-06 12"]),
    ("EPOCHMICROSECONDS", "yyyy-MM-dd hh", {TZ: "GMT+8:00"},
     [Decimal("1578283932123456.0001")], pa.decimal128(20, 4), ["2020-01-06 12"]),
    ("SCALAR", "yyyy-MM-dd hh", {TZ: "GMT", UNIT: "days"}, [20000, None], None,
     ["2024-10-04 12", "1970-01-02 12"]),
    ("SCALAR", "yyyy-MM-dd", {TZ: "GMT", UNIT: "DAYS"}, [18736], None, ["2021-04-19"]),
    ("SCALAR", "yyyy/MM/dd", {TZ: "GMT", UNIT: "MICROSECONDS", CONSISTENT: "true"},
     [dt.datetime(2021, 12, 3, 6, 43, 26, tzinfo=dt.UTC), None], pa.timestamp("us", tz="UTC"),
     ["2021/12/03", "1970/01/01"]),
    ("DATE_STRING", "yyyyMMddHH", {IN_FMT: "yyyy-MM-dd'T'HH:mm:ss.SSSZ", OUT_TZ: "GMT"},
     ["2020-04-01T13:01:33.428Z"], None, ["2020040113"]),
    ("DATE_STRING", "yyyyMMddHH", {IN_FMT: "yyyy-MM-dd'T'HH:mm:ss.SSSZ", OUT_TZ: "",
                                   IN_TZ: ""}, ["2020-04-01T13:01:33.428Z"], None,
     ["2020040113"]),
    ("DATE_STRING", "yyyyMMddHH",
     {IN_FMT: "yyyy-MM-dd'T'HH:mm:ssZ,yyyy-MM-dd'T'HH:mm:ss.SSSZ", OUT_TZ: "UTC"},
     ["2020-04-01T13:01:33.428Z", "2020-04-01T13:01:33Z", "2020-04-01T13:01:33-05:00",
      "2020-04-01T13:01:33.123-05:00"], None,
     ["2020040113", "2020040113", "2020040118", "2020040118"]),
    ("DATE_STRING", "yyyyMMddHH",
     {IN_FMT: "yyyy-MM-dd'T'HH:mm:ssZ,yyyy-MM-dd'T'HH:mm:ss.SSSZ", OUT_TZ: "EST"},
     ["2020-04-01T13:01:33.123Z"], None, ["2020040109"]),
    ("DATE_STRING", "MM/dd/yyyy",
     {IN_FMT: "yyyy-MM-dd'T'HH:mm:ssZ,yyyy-MM-dd'T'HH:mm:ss.SSSZ,yyyyMMdd", IN_TZ: "UTC",
      OUT_TZ: "UTC"}, ["20200401"], None, ["04/01/2020"]),
    # deprecated names of the settings (hoodie.deltastreamer.keygen.timebased.*)
    ("EPOCHMILLISECONDS", "yyyy-MM-dd hh",
     {"hoodie.deltastreamer.keygen.timebased.timezone": "GMT+8:00"}, [1578283932000], None,
     ["2020-01-06 12"]),
]


@pytest.mark.parametrize("case", _HUDI_CASES, ids=[f"{c[0]}-{i}" for i, c in
                                                    enumerate(_HUDI_CASES)])
def test_hudi_timestamp_cases(case: tuple) -> None:  # type: ignore[type-arg]
    ttype, out, props, values, typ, expected = case
    assert _paths(_spec(ttype, out, props), values, typ) == expected


def test_timestamp_hive_style_and_urlencode() -> None:
    spec = _spec("EPOCHMILLISECONDS", "yyyy-MM-dd HH:mm", {
        TZ: "UTC", "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.partitionpath.urlencode": "true"})
    assert _paths(spec, [1578283932000]) == ["c=2020-01-06 04%3A12"]


def test_custom_keygen_simple_and_timestamp_fields() -> None:
    spec = KeyGenSpec.from_properties({
        "hoodie.table.version": "8", "hoodie.table.keygenerator.type": "CUSTOM",
        "hoodie.table.recordkey.fields": "id",
        "hoodie.table.partition.fields": "city:simple,ts:timestamp",
        "hoodie.keygen.timebased.timestamp.type": "UNIX_TIMESTAMP",
        "hoodie.keygen.timebased.output.dateformat": "yyyyMMdd",
        "hoodie.keygen.timebased.output.timezone": "UTC",
        "hoodie.datasource.write.hive_style_partitioning": "true"})
    assert spec.kind is KeyGenKind.CUSTOM and spec.partition_fields == ("city", "ts")
    batch = pa.table({"id": ["k1", "k2"], "city": ["sf", None], "ts": [1706800227, None]})
    assert spec.record_keys(batch).to_pylist() == ["k1", "k2"]
    assert spec.partition_paths(batch).to_pylist() == [
        "city=sf/ts=20240201", f"city={_DEFAULT}/ts=19700101"]


def test_nested_fields_and_null_parents() -> None:
    spec = KeyGenSpec.from_properties({
        "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
        "hoodie.table.version": "9", "hoodie.table.recordkey.fields": "a.b,id",
        "hoodie.table.partition.fields": "a.c"})
    a = pa.array([{"b": 1, "c": "x"}, None], pa.struct([("b", pa.int32()), ("c", pa.string())]))
    batch = pa.table({"a": a, "id": ["p", "q"]})
    assert spec.required_columns == ("a", "id")
    assert spec.record_keys(batch).to_pylist() == ["a.b:1,id:p", "a.b:__null__,id:q"]
    assert spec.partition_paths(batch).to_pylist() == ["x", _DEFAULT]


def test_complex_single_field_encoding() -> None:
    base = {"hoodie.table.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
            "hoodie.table.recordkey.fields": "id", "hoodie.table.partition.fields": "p"}
    batch = pa.table({"id": ["k"], "p": ["x"]})

    def key(**props: str) -> str:
        spec = KeyGenSpec.from_properties({**base, **props})
        return spec.record_keys(batch).to_pylist()[0]

    assert key(**{"hoodie.table.version": "6"}) == "id:k"
    assert key(**{"hoodie.table.version": "8"}) == "id:k"
    nk = "hoodie.write.complex.keygen.new.encoding"
    assert KeyGenSpec.from_properties({**base, "hoodie.table.version": "8"},
                                      {nk: "true"}).record_keys(batch).to_pylist() == ["k"]
    assert KeyGenSpec.from_properties({**base, "hoodie.table.version": "9"},
                                      {nk: "true"}).record_keys(batch).to_pylist() == ["id:k"]
    enc = "hoodie.table.complex.keygen.encoding"
    assert key(**{"hoodie.table.version": "9", enc: "VALUE_ONLY"}) == "k"
    assert key(**{"hoodie.table.version": "8", enc: "field_prefixed", nk: "true"}) == "id:k"


@pytest.mark.parametrize(("keys", "parts", "kind"), [
    ("id", "", KeyGenKind.NON_PARTITION), ("id", "p", KeyGenKind.SIMPLE),
    ("id,x", "p", KeyGenKind.COMPLEX), ("id", "p,q", KeyGenKind.COMPLEX),
    ("id", "p:simple", KeyGenKind.CUSTOM), ("id,x", "", KeyGenKind.NON_PARTITION)])
def test_inferred_kind(keys: str, parts: str, kind: KeyGenKind) -> None:
    spec = KeyGenSpec.from_properties({"hoodie.table.recordkey.fields": keys,
                                       "hoodie.table.partition.fields": parts})
    assert spec.kind is kind
    assert spec.is_partitioned == (kind is not KeyGenKind.NON_PARTITION)


def test_value_string_forms() -> None:
    spec = KeyGenSpec.from_properties({
        "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
        "hoodie.table.version": "9",
        "hoodie.table.recordkey.fields": "i,b,d,t,m,n", "hoodie.table.partition.fields": ""})
    batch = pa.table({
        "i": pa.array([-5], pa.int8()), "b": [True],
        "d": pa.array([dt.date(2024, 1, 15)]),
        "t": pa.array([dt.datetime(2024, 1, 15, 10, 30, tzinfo=dt.UTC)],
                      pa.timestamp("us", tz="UTC")),
        "m": pa.array([Decimal("1250.00")], pa.decimal128(15, 2)),
        "n": pa.array([Decimal("1E-8")], pa.decimal128(20, 10))})
    assert spec.record_keys(batch).to_pylist() == [
        "i:-5,b:true,d:2024-01-15,t:1705314600000000,m:1250.00,n:1.00E-8"]
    assert spec.partition_paths(batch).to_pylist() == [""]


# --- (d) typed errors -----------------------------------------------------------------------


@pytest.mark.parametrize(("props", "prop"), [
    ({"hoodie.table.keygenerator.class": "com.acme.MyKeyGen"},
     "hoodie.table.keygenerator.class"),
    ({"hoodie.table.keygenerator.type": "USER_PROVIDED"}, "hoodie.table.keygenerator.type"),
    ({"hoodie.table.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
      "hoodie.keygen.timebased.timestamp.type": "NANOS"}, "hoodie.keygen.timebased.timestamp.type"),
    ({"hoodie.table.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
      "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
      "hoodie.keygen.timebased.output.dateformat": "yyyy-ww"},
     "hoodie.keygen.timebased.output.dateformat"),
    ({"hoodie.table.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
      "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
      "hoodie.keygen.timebased.output.dateformat": "yyyy"},
     "hoodie.keygen.timebased.output.timezone"),
    ({"hoodie.table.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
      "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
      "hoodie.keygen.timebased.output.dateformat": "yyyy",
      "hoodie.keygen.timebased.timezone": "Mars/Olympus"}, "hoodie.keygen.timebased.timezone"),
    ({"hoodie.table.keygenerator.class": "org.apache.hudi.keygen.CustomKeyGenerator"},
     "hoodie.table.partition.fields"),
    ({"hoodie.table.recordkey.fields": ""}, "hoodie.table.recordkey.fields"),
    ({"hoodie.table.keygenerator.type": "SIMPLE", "hoodie.table.recordkey.fields": "a,b"},
     "hoodie.table.recordkey.fields"),
    ({"hoodie.table.complex.keygen.encoding": "BOTH",
      "hoodie.table.keygenerator.type": "COMPLEX"}, "hoodie.table.complex.keygen.encoding"),
])
def test_unsupported_settings(props: dict[str, str], prop: str) -> None:
    base = {"hoodie.table.recordkey.fields": "k", "hoodie.table.partition.fields": "p"}
    with pytest.raises(UnsupportedSettingError) as e:
        KeyGenSpec.from_properties({**base, **props})
    assert isinstance(e.value, UsageError)
    assert e.value.property == prop
    assert prop in str(e.value)


def test_custom_keygen_types_from_overrides() -> None:
    props = {"hoodie.table.version": "6", "hoodie.table.recordkey.fields": "k",
             "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.CustomKeyGenerator",
             "hoodie.table.partition.fields": "p"}
    with pytest.raises(UnsupportedSettingError):
        KeyGenSpec.from_properties(props)
    spec = KeyGenSpec.from_properties(
        props, {"hoodie.datasource.write.partitionpath.field": "p:SIMPLE"})
    assert spec.partition_paths(pa.table({"k": ["a"], "p": ["x"]})).to_pylist() == ["x"]


@pytest.mark.parametrize("value", [None, ""])
def test_simple_key_null_or_empty_refused(value: str | None) -> None:
    spec = KeyGenSpec.from_properties({"hoodie.table.recordkey.fields": "k",
                                       "hoodie.table.partition.fields": "p"})
    with pytest.raises(KeyGenError, match="row 1"):
        spec.record_keys(pa.table({"k": pa.array(["a", value], pa.string()),
                                   "p": ["x", "y"]}))


def test_complex_key_all_null_refused() -> None:
    spec = KeyGenSpec.from_properties({"hoodie.table.recordkey.fields": "a,b",
                                       "hoodie.table.partition.fields": ""})
    batch = pa.table({"a": pa.array([None, ""], pa.string()), "b": pa.array([None, None],
                                                                           pa.int32())})
    with pytest.raises(KeyGenError, match="row 0"):
        spec.record_keys(batch)


@pytest.mark.parametrize("value", ["..", "a/../b", ".hoodie", "a//b", "/abs"])
def test_unsafe_partition_values_refused(value: str) -> None:
    spec = KeyGenSpec.from_properties({"hoodie.table.recordkey.fields": "k",
                                       "hoodie.table.partition.fields": "p"})
    with pytest.raises(UnsafePathError):
        spec.partition_paths(pa.table({"k": ["a"], "p": [value]}))
    encoded = KeyGenSpec.from_properties({"hoodie.table.recordkey.fields": "k",
                                          "hoodie.table.partition.fields": "p",
                                          "hoodie.datasource.write.partitionpath.urlencode":
                                          "true"})
    if value in ("..", ".hoodie"):
        with pytest.raises(UnsafePathError):  # '.' is not escaped
            encoded.partition_paths(pa.table({"k": ["a"], "p": [value]}))
    else:
        assert "/" not in encoded.partition_paths(pa.table({"k": ["a"], "p": [value]}))[0].as_py()


@pytest.mark.parametrize(("col", "typ"), [([1.5], pa.float64()), ([b"x"], pa.binary()),
                                          ([dt.datetime(2024, 1, 1)], pa.timestamp("ns"))])
def test_unsupported_value_types_refused(col: list[object], typ: pa.DataType) -> None:
    spec = KeyGenSpec.from_properties({"hoodie.table.recordkey.fields": "k",
                                       "hoodie.table.partition.fields": ""})
    with pytest.raises(KeyGenError):
        spec.record_keys(pa.table({"k": pa.array(col, typ)}))


def test_missing_column_and_bad_date_string() -> None:
    spec = KeyGenSpec.from_properties({"hoodie.table.recordkey.fields": "k",
                                       "hoodie.table.partition.fields": "p"})
    with pytest.raises(KeyGenError, match="'p'"):
        spec.partition_paths(pa.table({"k": ["a"]}))
    ds = _spec("DATE_STRING", "yyyy", {IN_FMT: "yyyy-MM-dd", IN_TZ: "UTC", OUT_TZ: "UTC"})
    with pytest.raises(KeyGenError):
        _paths(ds, ["2020/01/01"])
    with pytest.raises(KeyGenError):  # no zone in the string and none configured
        _paths(_spec("DATE_STRING", "yyyy", {IN_FMT: "yyyy-MM-dd", OUT_TZ: "UTC"}),
               ["2020-01-01"])
