"""Predicates (readers/predicate.py, spec/predicate.md): the parser and its errors, binding to
a schema, the text round trip, the row filter against a reference evaluator written here,
and the soundness of :func:`may_match` against statistics computed here in filter order.

The references in this file are deliberately naive (per row, per value, in Python): rows are
judged with exact arithmetic (Fraction) and SQL's three-valued logic, statistics by sorting
the Python values (NaN: no bounds; or, NaN-aware, bounds of the values that are not NaN and
a NaN count).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.errors import UsageError
from morlog.readers import predicate as P
from morlog.readers.column_stats import ColumnRange
from morlog.readers.predicate import And, Compare, In, IsNull, Not, Or

D = decimal.Decimal
UTC = dt.UTC


def strict_equal(a: Any, b: Any) -> bool:
    """Equal trees whose literals are also of the same Python types."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (And, Or)):
        return len(a.items) == len(b.items) and all(map(strict_equal, a.items, b.items))
    if isinstance(a, Not):
        return strict_equal(a.item, b.item)
    if isinstance(a, Compare):
        return (a.column, a.op) == (b.column, b.op) and strict_value(a.value, b.value)
    if isinstance(a, In):
        return (a.column == b.column and len(a.values) == len(b.values)
                and all(map(strict_value, a.values, b.values)))
    return bool(a == b)


def strict_value(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, dt.datetime):
        return a == b and (a.tzinfo is None) == (b.tzinfo is None)
    return bool(a == b)


# --- parser ---------------------------------------------------------------------------------

PARSES = [
    ("a > 5", Compare("a", ">", 5)),
    ("5 < a", Compare("a", ">", 5)),
    ("5 <= a", Compare("a", ">=", 5)),
    ("a == 1", Compare("a", "=", 1)),
    ("a <> 1", Compare("a", "!=", 1)),
    ("a != -1", Compare("a", "!=", -1)),
    ("a = 1.50", Compare("a", "=", D("1.50"))),
    ("a = -0.5", Compare("a", "=", D("-0.5"))),
    ("a = .5", Compare("a", "=", D("0.5"))),
    ("a = 1e3", Compare("a", "=", 1000.0)),
    ("a = -1.5E-2", Compare("a", "=", -0.015)),
    ("a = 1e999", Compare("a", "=", math.inf)),
    ("a = FLOAT '-inf'", Compare("a", "=", -math.inf)),
    ("s = 'it''s'", Compare("s", "=", "it's")),
    ("s = ''", Compare("s", "=", "")),
    ("s = '\U0001f600\ue000'", Compare("s", "=", "\U0001f600\ue000")),
    ("b = X'00fF'", Compare("b", "=", b"\x00\xff")),
    ("b = x''", Compare("b", "=", b"")),
    ("f = true", Compare("f", "=", True)),
    ("FALSE = f", Compare("f", "=", False)),
    ("d = DATE '2024-02-29'", Compare("d", "=", dt.date(2024, 2, 29))),
    ("t < TIMESTAMP '2024-01-01 10:00:00'", Compare("t", "<", dt.datetime(2024, 1, 1, 10))),
    ("t < timestamp '2024-01-01T10:00:00.5Z'",
     Compare("t", "<", dt.datetime(2024, 1, 1, 10, 0, 0, 500000, tzinfo=UTC))),
    ("t < TIMESTAMP '2024-01-01 10:00:00.000001-05:30'",
     Compare("t", "<", dt.datetime(2024, 1, 1, 10, 0, 0, 1, tzinfo=dt.timezone(
         -dt.timedelta(hours=5, minutes=30))))),
    ("date = 5", Compare("date", "=", 5)),  # DATE is a keyword only before a string
    ("x = 1", Compare("x", "=", 1)),
    ("a.b_c1 = 1", Compare("a.b_c1", "=", 1)),
    ("`my col` = 1", Compare("my col", "=", 1)),
    ("`a``b` = 1", Compare("a`b", "=", 1)),
    ("`and` = 1", Compare("and", "=", 1)),
    ("`` = 1", Compare("", "=", 1)),
    ("été = 1", Compare("été", "=", 1)),
    ("a IN (1, 2.5, 'x')", In("a", (1, D("2.5"), "x"))),
    ("a NOT IN (1)", Not(In("a", (1,)))),
    ("a IS NULL", IsNull("a")),
    ("a is not null", Not(IsNull("a"))),
    ("a BETWEEN 1 AND 5", And((Compare("a", ">=", 1), Compare("a", "<=", 5)))),
    ("a NOT BETWEEN 1 AND 5", Not(And((Compare("a", ">=", 1), Compare("a", "<=", 5))))),
    ("a = 1 AND b = 2 AND c = 3",
     And((Compare("a", "=", 1), Compare("b", "=", 2), Compare("c", "=", 3)))),
    ("(a = 1 AND b = 2) AND c = 3",
     And((And((Compare("a", "=", 1), Compare("b", "=", 2))), Compare("c", "=", 3)))),
    ("a = 1 OR b = 2 AND c = 3",
     Or((Compare("a", "=", 1), And((Compare("b", "=", 2), Compare("c", "=", 3)))))),
    ("NOT a = 1 AND b = 2", And((Not(Compare("a", "=", 1)), Compare("b", "=", 2)))),
    ("NOT NOT a = 1", Not(Not(Compare("a", "=", 1)))),
    ("not (a = 1 or b = 2)", Not(Or((Compare("a", "=", 1), Compare("b", "=", 2))))),
    ("a BETWEEN 1 AND 2 AND b = 3",
     And((And((Compare("a", ">=", 1), Compare("a", "<=", 2))), Compare("b", "=", 3)))),
    ("TRUE", And(())),
    ("false OR a = 1", Or((Or(()), Compare("a", "=", 1)))),
    ("  a\t>\n5  ", Compare("a", ">", 5)),
]


@pytest.mark.parametrize(("text", "tree"), PARSES)
def test_parse(text: str, tree: P.Expr) -> None:
    got = P.parse(text)
    assert strict_equal(got, tree), got
    assert strict_equal(P.parse(P.to_text(got)), got)


ERRORS = [
    ("", 0, "empty predicate"),
    ("a = NULL", 4, "use IS NULL"),
    ("NULL = a", 0, "use IS NULL"),
    ("a != NULL", 5, "use IS NULL"),
    ("a IN (1, NULL)", 9, "IS NULL"),
    ("a BETWEEN NULL AND 1", 10, "IS NULL"),
    ("a >", 3, "expected a column or a literal"),
    ("(a = 1", 6, "expected ')'"),
    ("a = 1)", 5, "expected AND, OR or the end"),
    ("a = 'x", 4, "unterminated string"),
    ("`a = 1", 0, "unterminated quoted name"),
    ("1 = 2", 0, "needs a column"),
    ("a = b", 4, "two columns"),
    ("a ~ 1", 2, "unexpected character"),
    ("a = 1 AND", 9, "expected a column"),
    ("a IN ()", 6, "expected a column or a literal"),
    ("a IN 1", 5, "expected '('"),
    ("a IN (1 2)", 8, "expected ',' or ')'"),
    ("a IN (b)", 6, "found column"),
    ("5 IN (1)", 0, "needs a column on its left"),
    ("a IS 1", 5, "expected NULL"),
    ("a BETWEEN 1 OR 2", 12, "expected AND"),
    ("a NOT = 1", 2, "expected a comparison operator"),
    ("a", 1, "expected a comparison operator"),
    ("5abc = 1", 1, "after a number"),
    ("a = 1.2.3", 7, "after a number"),
    ("b = X'abc'", 4, "even number of hex digits"),
    ("d = DATE '2024-02-30'", 4, "invalid DATE"),
    ("t = TIMESTAMP '2024-01-01'", 4, "invalid TIMESTAMP"),
    ("t = TIMESTAMP '2024-01-01 25:00:00'", 4, "invalid TIMESTAMP"),
    ("f = FLOAT 'abc'", 4, "invalid FLOAT"),
    ("a = - 'x'", 6, "expected a number"),
    ("and = 1", 0, "expected a column"),
    ("a = 1" + "1" * 5000, 4, "too long"),
]


@pytest.mark.parametrize(("text", "offset", "message"), ERRORS)
def test_parse_errors(text: str, offset: int, message: str) -> None:
    with pytest.raises(UsageError) as info:
        P.parse(text)
    assert info.value.offset == offset, str(info.value)
    assert message in str(info.value)
    # the excerpt's caret stands under the offending offset
    lines = str(info.value).split("\n")
    assert lines[-1].endswith("^")


def test_error_excerpt_points_at_the_place() -> None:
    with pytest.raises(UsageError) as info:
        P.parse("price > 10 AND qty IN (1, 2,, 3)")
    _, excerpt, caret = str(info.value).split("\n")
    assert excerpt[caret.index("^")] == ","
    assert str(info.value).startswith("predicate@28: ")


def test_limits() -> None:
    deep = "(" * (P.MAX_DEPTH + 1) + "a = 1" + ")" * (P.MAX_DEPTH + 1)
    with pytest.raises(UsageError, match="levels deep"):
        P.parse(deep)
    ok = "(" * (P.MAX_DEPTH - 1) + "a = 1" + ")" * (P.MAX_DEPTH - 1)
    assert P.parse(ok) == Compare("a", "=", 1)
    with pytest.raises(UsageError, match="levels deep"):
        P.parse("NOT " * (P.MAX_DEPTH + 1) + "a = 1")
    with pytest.raises(UsageError, match="longer than"):
        P.parse("a = 1 OR " * (P.MAX_TEXT // 9) + "a = 1")
    with pytest.raises(UsageError, match="text"):
        P.parse(b"a = 1")  # type: ignore[arg-type]
    # a tree nested too deep to walk safely
    e: P.Expr = Compare("a", "=", 1)
    for _ in range(P.MAX_TREE_DEPTH + 5):
        e = Not(And((e, IsNull("a"))))
    with pytest.raises(UsageError, match="levels deep"):
        P.to_text(e)
    with pytest.raises(UsageError, match="levels deep"):
        P.may_match(e, {}, 1)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from("ab1.5'`()=<>!, -eXNOTANDINULLIS\u00e9\U0001f600\n"),
               max_size=40))
def test_parse_fuzz_only_usage_errors(text: str) -> None:
    try:
        e = P.parse(text)
    except UsageError:
        return
    assert strict_equal(P.parse(P.to_text(e)), e)


def test_long_flat_chains_are_fine() -> None:
    # filter pushdown builds binary ORs: bind flattens them instead of recursing
    e: P.Expr = Compare("a", "=", 0)
    for i in range(1, 3000):
        e = Or((e, Compare("a", "=", i)))
    schema = pa.schema([("a", pa.int64())])
    b = P.bind(e, schema)
    assert isinstance(b, Or) and len(b.items) == 3000
    t = pa.table({"a": pa.array([5, 4000, None], pa.int64())})
    assert t.filter(P.to_arrow(b))["a"].to_pylist() == [5]
    e2: P.Expr = Compare("a", "=", 1)
    for _ in range(3001):
        e2 = Not(e2)
    assert P.bind(e2, schema) == Not(Compare("a", "=", 1))
    text = " OR ".join(f"a = {i}" for i in range(5000))
    assert len(P.parse(text).items) == 5000  # type: ignore[union-attr]


# --- text round trip ------------------------------------------------------------------------

names = st.one_of(st.sampled_from(["a", "b.c", "date", "x", "and", "NULL", "a b", "`", "",
                                   "1a", "é", "DATE"]),
                  st.text(max_size=6))
offsets = st.integers(-23 * 60, 23 * 60).map(lambda m: dt.timezone(dt.timedelta(minutes=m)))
literals = st.one_of(
    st.integers(-(2 ** 70), 2 ** 70),
    st.floats().map(lambda f: P.NAN if math.isnan(f) else f),
    st.decimals(allow_nan=False, allow_infinity=False, min_value=-10 ** 30,
                max_value=10 ** 30),
    st.decimals(allow_nan=False, allow_infinity=False, places=40),
    st.text(max_size=8),
    st.binary(max_size=6),
    st.booleans(),
    st.dates(),
    st.datetimes(),
    st.datetimes(timezones=st.one_of(st.just(UTC), offsets)),
)


def trees(leaf_names: Any = names, lits: Any = literals) -> Any:
    ops = st.sampled_from(P.OPS)
    leaves = st.one_of(
        st.builds(Compare, leaf_names, ops, lits),
        st.builds(In, leaf_names, st.lists(lits, min_size=1, max_size=4).map(tuple)),
        st.builds(IsNull, leaf_names),
    )
    return st.recursive(leaves, lambda sub: st.one_of(
        st.builds(Not, sub),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: And(tuple(xs))),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: Or(tuple(xs))),
        st.just(And(())), st.just(Or(())),
    ), max_leaves=8)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(trees())
def test_text_round_trip(e: P.Expr) -> None:
    text = P.to_text(e)
    assert strict_equal(P.parse(text), e), text
    assert P.columns(P.parse(text)) == P.columns(e)


# --- tables, reference rows and reference statistics ----------------------------------------

I8, U64, I64 = pa.int8(), pa.uint64(), pa.int64()
F32, F64 = pa.float32(), pa.float64()
DEC = pa.decimal128(7, 2)
TS_US, TS_MS_UTC, TS_NS = pa.timestamp("us"), pa.timestamp("ms", tz="UTC"), pa.timestamp("ns")
DAY_US = 86_400_000_000
EPOCH = dt.datetime(1970, 1, 1)

# the range of datetime in ms (for the ms column), whole days within it (for date64)
_MS_LO = (dt.datetime.min - EPOCH) // dt.timedelta(milliseconds=1)
_MS_HI = (dt.datetime.max - EPOCH) // dt.timedelta(milliseconds=1)
_DAY_LO = (dt.date.min - dt.date(1970, 1, 1)).days
_DAY_HI = (dt.date.max - dt.date(1970, 1, 1)).days


def _edge_ints(lo: int, hi: int) -> Any:
    return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, 0, lo + 1, hi - 1]),
                     st.integers(-3, 3).filter(lambda v: lo <= v <= hi))


def _chars() -> Any:
    return st.one_of(st.characters(codec="utf-8", max_codepoint=0x7F),
                     st.characters(codec="utf-8", min_codepoint=0xE000, max_codepoint=0xFFFF),
                     st.characters(codec="utf-8", min_codepoint=0x10000))


TEXT = st.text(alphabet=_chars(), max_size=3)

#: column -> (Arrow type, strategy of its values, "int" when the values are the type's ints)
COLUMNS: dict[str, tuple[pa.DataType, Any]] = {
    "i8": (I8, _edge_ints(-128, 127)),
    "u64": (U64, _edge_ints(0, 2 ** 64 - 1)),
    "i64": (I64, _edge_ints(-(2 ** 63), 2 ** 63 - 1)),
    "f32": (F32, st.one_of(st.floats(width=32), st.sampled_from([-0.0, 0.0, math.nan]))),
    "f64": (F64, st.one_of(st.floats(), st.sampled_from([-0.0, 0.0, math.nan, math.inf]))),
    "s": (pa.string(), TEXT),
    "ls": (pa.large_string(), TEXT),
    "b": (pa.binary(), st.binary(max_size=3)),
    "fb": (pa.binary(2), st.binary(min_size=2, max_size=2)),
    "dec": (DEC, st.decimals(min_value=D("-99999.99"), max_value=D("99999.99"), places=2)),
    "d": (pa.date32(), st.dates()),
    "d64": (pa.date64(), st.integers(_DAY_LO, _DAY_HI)),
    "ts": (TS_US, st.datetimes()),
    "tsz": (TS_MS_UTC, _edge_ints(_MS_LO, _MS_HI)),
    "tsn": (TS_NS, _edge_ints(-(2 ** 63), 2 ** 63 - 1)),
    "bo": (pa.bool_(), st.booleans()),
}


def make_array(name: str, values: list[Any]) -> pa.Array:
    t, _ = COLUMNS[name]
    if name == "d64":
        return pa.array([None if v is None else v * 86_400_000 for v in values],
                        pa.int64()).cast(t)
    if name in ("tsz", "tsn"):
        return pa.array(values, pa.int64()).cast(t)
    return pa.array(values, t)


def exact_of_column(name: str, arr: pa.Array) -> list[Any]:
    """Each row's value as the reference compares it (None for null): Fractions for exact
    types, floats for floats, microseconds (Fraction) for dates and timestamps."""
    t = arr.type
    if pa.types.is_date32(t):
        return [None if v is None else Fraction(v * DAY_US)
                for v in arr.cast(pa.int32()).to_pylist()]
    if pa.types.is_date64(t) or pa.types.is_timestamp(t):
        per = {"ms": Fraction(1000), "us": Fraction(1), "ns": Fraction(1, 1000)}
        mult = per["ms"] if pa.types.is_date64(t) else per[t.unit]
        return [None if v is None else v * mult for v in arr.cast(pa.int64()).to_pylist()]
    vals = arr.to_pylist()
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        return [None if v is None else Fraction(v) for v in vals]
    return vals


def exact_of_literal(name: str, v: Any) -> Any:
    """A literal as the reference compares it with column ``name``'s values."""
    t, _ = COLUMNS[name]
    if pa.types.is_floating(t):
        if isinstance(v, float):
            x = v
        else:
            try:
                x = float(v)
            except OverflowError:
                x = math.inf if v > 0 else -math.inf
        if pa.types.is_float32(t) and not math.isnan(x):
            with np.errstate(over="ignore"):
                x = float(np.float32(x))
        return x
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        if isinstance(v, str):
            v = dt.datetime.fromisoformat(v) if len(v) > 10 else dt.date.fromisoformat(v)
        if isinstance(v, dt.datetime):
            if v.tzinfo is not None:
                v = v.astimezone(UTC).replace(tzinfo=None)
            return Fraction((v - EPOCH) // dt.timedelta(microseconds=1))
        return Fraction((v - dt.date(1970, 1, 1)).days * DAY_US)
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        if isinstance(v, float) and math.isinf(v):
            return v
        return Fraction(v)
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        return v.encode() if isinstance(v, str) else bytes(v)
    return v


def row_truth(e: P.Expr, row: dict[str, Any]) -> bool | None:
    """SQL three-valued truth of the *unbound* ``e`` on one row (exact values)."""
    if isinstance(e, Compare):
        x = row[e.column]
        if x is None:
            return None
        v = exact_of_literal(e.column, e.value)
        return {"=": x == v, "!=": x != v, "<": x < v, "<=": x <= v, ">": x > v,
                ">=": x >= v}[e.op]
    if isinstance(e, In):
        x = row[e.column]
        if x is None:
            return None
        return any(x == exact_of_literal(e.column, v) for v in e.values)
    if isinstance(e, IsNull):
        return row[e.column] is None
    if isinstance(e, Not):
        r = row_truth(e.item, row)
        return None if r is None else not r
    results = [row_truth(i, row) for i in e.items]
    if isinstance(e, And):
        return False if False in results else (None if None in results else True)
    return True if True in results else (None if None in results else False)


def reference_ranges(table: pa.Table) -> dict[str, ColumnRange]:
    """Statistics in filter order, by sorting the Python values: exact min/max of the
    non-null values, none when a float column holds NaN; ints for dates and timestamps."""
    out = {}
    for name in table.column_names:
        arr = table[name].combine_chunks()
        t = arr.type
        if pa.types.is_date32(t):
            vals = arr.cast(pa.int32()).to_pylist()
        elif pa.types.is_date64(t) or pa.types.is_timestamp(t):
            vals = arr.cast(pa.int64()).to_pylist()
        else:
            vals = arr.to_pylist()
        nonnull = [v for v in vals if v is not None]
        lo = hi = None
        if nonnull and not any(isinstance(v, float) and math.isnan(v) for v in nonnull):
            lo, hi = min(nonnull), max(nonnull)
        out[name] = ColumnRange("f", name, lo, hi, arr.null_count, len(arr), type=t)
    return out


def nan_aware_ranges(table: pa.Table) -> dict[str, ColumnRange]:
    """:func:`reference_ranges` with float columns described as NaN-aware producers do:
    bounds of the non-null values that are not NaN, and how many values are NaN."""
    out = reference_ranges(table)
    for name in table.column_names:
        if not pa.types.is_floating(table.schema.field(name).type):
            continue
        vals = [v for v in table[name].to_pylist() if v is not None]
        numbers = [v for v in vals if not math.isnan(v)]
        r = out[name]
        r.min, r.max = (min(numbers), max(numbers)) if numbers else (None, None)
        r.nan_count = len(vals) - len(numbers)
    return out


def _blur(ranges: dict[str, ColumnRange], data: Any) -> None:
    """Forget, at random, what some statistics know (any of them stays sound)."""
    for name in list(ranges):
        how = data.draw(st.sampled_from(["keep", "drop", "nobounds", "nan-unknown"]))
        if how == "drop":
            del ranges[name]
        elif how == "nobounds" and ranges[name].null_count < ranges[name].value_count:
            ranges[name].min = ranges[name].max = None
        elif how == "nan-unknown":
            ranges[name].nan_count = None


# --- literals per column kind (all bindable) --------------------------------------------------

NUMBER_LITS = st.one_of(
    st.integers(-300, 300),
    st.decimals(min_value=-300, max_value=300, places=1),
    st.floats(min_value=-300, max_value=300).map(lambda f: round(f, 1)),
)


def literals_for(name: str, values: list[Any]) -> Any:
    """Literals that bind to column ``name``: its own values, their neighbours, values of
    other kinds the column accepts, out-of-range and never-equal ones."""
    t, gen = COLUMNS[name]
    own = [v for v in values if v is not None]
    base: list[Any] = []
    if name in ("i8", "u64", "i64"):
        lat_lo, lat_hi = {"i8": (-128, 127), "u64": (0, 2 ** 64 - 1),
                          "i64": (-(2 ** 63), 2 ** 63 - 1)}[name]
        near = st.sampled_from(own or [0]).flatmap(lambda v: st.sampled_from([
            v, v - 1, v + 1, D(v) + D("0.5"), D(v) - D("0.5"), float(v)]))
        base = [near, NUMBER_LITS, st.sampled_from([lat_lo - 1, lat_hi + 1, lat_lo, lat_hi,
                                                    math.inf, -math.inf, 10 ** 30,
                                                    D(lat_hi) + D("0.5")])]
    elif name in ("f32", "f64"):
        near = st.sampled_from(own or [0.0])
        base = [near, st.floats(width=32 if name == "f32" else 64),
                st.integers(-(2 ** 30), 2 ** 30), st.decimals(min_value=-300, max_value=300,
                                                              places=1),
                st.sampled_from([P.NAN, -0.0, 0.0, math.inf, -math.inf, 1e300])]
    elif name in ("s", "ls"):
        near = st.sampled_from(own or [""]).flatmap(
            lambda v: st.sampled_from([v, v + "\x00", v[:-1], v + "\U0010ffff"]))
        base = [near, TEXT]
    elif name in ("b", "fb"):
        near = st.sampled_from(own or [b""]).flatmap(
            lambda v: st.sampled_from([v, v + b"\x00", v[:-1], v + b"\xff"]))
        base = [near, st.binary(max_size=3), st.text(max_size=2)]
    elif name == "dec":
        near = st.sampled_from(own or [D(0)]).flatmap(lambda v: st.sampled_from([
            v, v + D("0.01"), v - D("0.005"), v + D("0.005"), float(v), int(v)]))
        base = [near, st.decimals(min_value=-10 ** 6, max_value=10 ** 6, places=3),
                st.integers(-10 ** 6, 10 ** 6), st.sampled_from([D("1e10"), D("-1e10"),
                                                                 math.inf])]
    elif name in ("d", "d64"):
        if name == "d64":
            own = [dt.date(1970, 1, 1) + dt.timedelta(days=v) for v in own]
        near = st.sampled_from(own or [dt.date(2000, 1, 1)])
        base = [near, st.dates(), st.datetimes(),
                near.map(lambda d: d.isoformat()),
                st.datetimes().map(lambda x: x.isoformat(" "))]
    elif name in ("ts", "tsz", "tsn"):
        if name == "tsz":
            own = [EPOCH + dt.timedelta(milliseconds=v) for v in own]
        elif name == "tsn":
            own = [EPOCH + dt.timedelta(microseconds=v // 1000) for v in own]
        near = st.sampled_from(own or [EPOCH]).flatmap(lambda v: st.sampled_from([
            v, v + dt.timedelta(microseconds=1) if v < dt.datetime.max else v,
            v - dt.timedelta(microseconds=1) if v > dt.datetime.min else v]))
        base = [near, st.datetimes(), st.datetimes(timezones=st.just(UTC)),
                st.dates(), near.map(lambda x: x.isoformat(" "))]
    else:
        base = [st.booleans()]
    return st.one_of(*base)


@st.composite
def table_and_tree(draw: Any) -> tuple[pa.Table, P.Expr]:
    names_ = draw(st.lists(st.sampled_from(sorted(COLUMNS)), min_size=1, max_size=4,
                           unique=True))
    n = draw(st.integers(0, 6))
    cols = {}
    for name in names_:
        _, gen = COLUMNS[name]
        vals = draw(st.lists(st.one_of(st.none(), gen), min_size=n, max_size=n))
        cols[name] = vals
    table = pa.table({name: make_array(name, cols[name]) for name in names_})

    def leaf(name: str) -> Any:
        lits = literals_for(name, cols[name])
        return st.one_of(
            st.builds(Compare, st.just(name), st.sampled_from(P.OPS), lits),
            st.builds(In, st.just(name), st.lists(lits, min_size=1, max_size=4).map(tuple)),
            st.just(IsNull(name)),
        )

    leaves = st.sampled_from(names_).flatmap(leaf)
    tree = draw(st.recursive(leaves, lambda sub: st.one_of(
        st.builds(Not, sub),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: And(tuple(xs))),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: Or(tuple(xs))),
    ), max_leaves=6))
    return table, tree


def kept_rows(table: pa.Table, bound: P.Expr) -> list[int]:
    idx = table.append_column("__row", pa.array(range(table.num_rows), pa.int64()))
    return idx.filter(P.to_arrow(bound))["__row"].to_pylist()


def reference_rows(table: pa.Table, tree: P.Expr) -> list[int]:
    cols = {n: exact_of_column(n, table[n].combine_chunks()) for n in table.column_names}
    return [i for i in range(table.num_rows)
            if row_truth(tree, {n: cols[n][i] for n in cols}) is True]


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(table_and_tree(), st.data())
def test_bound_filter_matches_reference_and_statistics_are_sound(
        case: tuple[pa.Table, P.Expr], data: Any) -> None:
    table, tree = case
    bound = P.bind(tree, table.schema)
    # binding keeps the meaning: the Arrow filter keeps exactly the rows the exact
    # reference finds TRUE
    kept = kept_rows(table, bound)
    assert kept == reference_rows(table, tree), P.to_text(bound)
    # the bound tree reads back from its text
    assert strict_equal(P.parse(P.to_text(bound)), bound)
    assert P.columns(bound) == P.columns(tree)
    # soundness: statistics never prune a file holding a matching row; also with some
    # columns unknown or without bounds
    ranges = reference_ranges(table)
    assert P.may_match(bound, ranges, table.num_rows) or not kept, P.to_text(bound)
    for name in list(ranges):
        how = data.draw(st.sampled_from(["keep", "drop", "nobounds"]))
        if how == "drop":
            del ranges[name]
        elif how == "nobounds" and ranges[name].null_count < ranges[name].value_count:
            ranges[name].min = ranges[name].max = None
    assert P.may_match(bound, ranges, table.num_rows) or not kept, P.to_text(bound)
    # NaN-aware statistics: float bounds without NaN, NaN counted (or not known)
    ranges = nan_aware_ranges(table)
    assert P.may_match(bound, ranges, table.num_rows) or not kept, P.to_text(bound)
    _blur(ranges, data)
    assert P.may_match(bound, ranges, table.num_rows) or not kept, P.to_text(bound)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(table_and_tree(), st.data())
def test_statistics_of_any_subset_of_rows_are_sound(case: tuple[pa.Table, P.Expr],
                                                    data: Any) -> None:
    """The table is many files: each contiguous piece is judged on its own statistics."""
    table, tree = case
    bound = P.bind(tree, table.schema)
    n = table.num_rows
    cut = data.draw(st.integers(0, n))
    for piece in (table.slice(0, cut), table.slice(cut)):
        rows = kept_rows(piece, bound)
        assert P.may_match(bound, reference_ranges(piece), piece.num_rows) or not rows
        assert P.may_match(bound, nan_aware_ranges(piece), piece.num_rows) or not rows


# --- float columns: NaN, infinities, -0.0 ------------------------------------------------------

FLOATS = st.one_of(st.none(), st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 0.0]),
                   st.integers(-4, 4).map(float), st.floats(width=32))
FLOAT_LITS = st.one_of(st.sampled_from([P.NAN, math.inf, -math.inf, -0.0, 0.0, 1e300]),
                       st.integers(-5, 5), st.integers(-5, 5).map(lambda v: v + 0.5))


@st.composite
def float_table_and_tree(draw: Any, nan_literals: bool = True) -> tuple[pa.Table, P.Expr]:
    """A table of float32 / float64 columns full of NaN, infinities, ±0.0 and NULLs, and a
    random tree over them (``nan_literals``: NaN among the IN literals too)."""
    n = draw(st.integers(0, 8))
    table = pa.table({"f32": pa.array(draw(st.lists(FLOATS, min_size=n, max_size=n)), F32),
                      "f64": pa.array(draw(st.lists(FLOATS, min_size=n, max_size=n)), F64)})
    in_lits = FLOAT_LITS if nan_literals else FLOAT_LITS.filter(
        lambda v: not (isinstance(v, float) and math.isnan(v)))

    def leaf(name: str) -> Any:
        return st.one_of(
            st.builds(Compare, st.just(name), st.sampled_from(P.OPS), FLOAT_LITS),
            st.builds(In, st.just(name), st.lists(in_lits, min_size=1, max_size=3).map(tuple)),
            st.builds(lambda a, b: And((Compare(name, ">=", a), Compare(name, "<=", b))),
                      FLOAT_LITS, FLOAT_LITS),  # BETWEEN
            st.just(IsNull(name)),
        )

    leaves = st.sampled_from(["f32", "f64"]).flatmap(leaf)
    tree = draw(st.recursive(leaves, lambda sub: st.one_of(
        st.builds(Not, sub),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: And(tuple(xs))),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: Or(tuple(xs))),
    ), max_leaves=5))
    return table, tree


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(float_table_and_tree(), st.data())
def test_nan_aware_statistics_never_prune_a_match(case: tuple[pa.Table, P.Expr],
                                                  data: Any) -> None:
    """Bounds that leave NaN out, with the NaN count known or not, never prune a file (or
    any two pieces of it) that holds a row the filter keeps."""
    table, tree = case
    bound = P.bind(tree, table.schema)
    kept = kept_rows(table, bound)
    assert kept == reference_rows(table, tree), P.to_text(bound)
    ranges = nan_aware_ranges(table)
    assert P.may_match(bound, ranges, table.num_rows) or not kept, P.to_text(bound)
    _blur(ranges, data)
    assert P.may_match(bound, ranges, table.num_rows) or not kept, P.to_text(bound)
    cut = data.draw(st.integers(0, table.num_rows))
    for piece in (table.slice(0, cut), table.slice(cut)):
        ranges = nan_aware_ranges(piece)
        if data.draw(st.booleans()):
            for r in ranges.values():
                r.nan_count = None
        assert P.may_match(bound, ranges, piece.num_rows) or not kept_rows(piece, bound)


def spark_truth(e: P.Expr, row: dict[str, Any]) -> bool | None:
    """Three-valued truth of an unbound tree under Spark's float order: NaN above every
    number and equal to itself, -0.0 = 0.0 (the tree's float literals taken as doubles,
    rounded to float32 for ``f32``)."""
    def key(name: str, v: Any) -> tuple[int, float]:
        x = exact_of_literal(name, v)
        return (1, 0.0) if math.isnan(x) else (0, x)

    if isinstance(e, Compare):
        x = row[e.column]
        if x is None:
            return None
        a, b = key(e.column, x), key(e.column, e.value)
        return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b,
                ">=": a >= b}[e.op]
    if isinstance(e, In):
        x = row[e.column]
        if x is None:
            return None
        return any(key(e.column, x) == key(e.column, v) for v in e.values)
    if isinstance(e, IsNull):
        return row[e.column] is None
    if isinstance(e, Not):
        r = spark_truth(e.item, row)
        return None if r is None else not r
    results = [spark_truth(i, row) for i in e.items]
    if isinstance(e, And):
        return False if False in results else (None if None in results else True)
    return True if True in results else (None if None in results else False)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(float_table_and_tree(nan_literals=False), st.data())
def test_nan_largest_is_sparks_order(case: tuple[pa.Table, P.Expr], data: Any) -> None:
    """``nan_largest`` of a bound tree keeps exactly the rows Spark's order finds TRUE, and
    NaN-aware statistics never prune such a row."""
    table, tree = case
    spark = P.nan_largest(P.bind(tree, table.schema))
    kept = kept_rows(table, spark)
    cols = {n: table[n].to_pylist() for n in table.column_names}
    want = [i for i in range(table.num_rows)
            if spark_truth(tree, {n: cols[n][i] for n in cols}) is True]
    assert kept == want, P.to_text(spark)
    ranges = nan_aware_ranges(table)
    _blur(ranges, data)
    assert P.may_match(spark, ranges, table.num_rows) or not kept, P.to_text(spark)


def nan_rng(lo: Any, hi: Any, nan: int | None, t: pa.DataType = F64, nulls: int = 0,
            values: int = 10) -> dict[str, ColumnRange]:
    if t == F32:  # bounds are values of the column's type
        lo, hi = (None if v is None else float(np.float32(v)) for v in (lo, hi))
    return {"x": ColumnRange("f", "x", lo, hi, nulls, values, type=t, nan_count=nan)}


NAN_CASES = [
    # (predicate, min, max of the numbers, NaN count (None: unknown), may match)
    ("x > 1000", 1.0, 99.99, None, False),  # the fares: NaN is not > 1000
    ("x >= 5000", 1.0, 99.99, 3, False),
    ("x >= 5000", None, None, 10, False),  # every value NaN
    ("x IS NOT NULL", None, None, 10, True),  # NaN is not NULL
    ("x IN (1000, 2000)", 1.0, 99.99, None, False),
    ("x BETWEEN 100 AND 200", 1.0, 99.99, None, False),
    ("x = 100", 1.0, 99.99, None, False),
    ("x < 0", -0.0, 0.0, None, False),  # -0.0 is not below 0
    ("x < FLOAT '-Infinity'", -math.inf, math.inf, None, False),
    ("x > FLOAT 'Infinity'", -math.inf, math.inf, None, False),
    ("x != 5", 5.0, 5.0, None, True),  # NaN != 5
    ("x != 5", 5.0, 5.0, 2, True),
    ("x != 5", 5.0, 5.0, 0, False),
    ("x != 5", None, None, 10, True),
    ("NOT x < 5", 1.0, 4.0, None, True),  # NOT (NaN < 5) is TRUE
    ("NOT x < 5", 1.0, 4.0, 0, False),
    ("NOT x < 5", None, None, 10, True),
    ("x NOT IN (5)", 5.0, 5.0, None, True),
    ("x NOT IN (5)", 5.0, 5.0, 0, False),
    ("x NOT BETWEEN 1 AND 99.99", 1.0, 99.99, None, True),
    ("x NOT BETWEEN 1 AND 99.99", 1.0, 99.99, 0, False),
    ("NOT (x < 5) AND NOT (x > 3)", 1.0, 10.0, None, True),  # NaN satisfies both
    ("NOT (x < 5) AND NOT (x > 3)", 1.0, 10.0, 0, False),
    ("NOT (x < 5) AND x < 3", 1.0, 10.0, None, False),  # NaN fails x < 3
    ("NOT (x >= 5 OR x IS NULL)", 6.0, 9.0, None, True),
    ("NOT (x >= 5 OR x IS NULL)", 6.0, 9.0, 0, False),
]


@pytest.mark.parametrize(("text", "lo", "hi", "nan", "may"), NAN_CASES)
def test_may_match_three_valued_on_floats(text: str, lo: Any, hi: Any, nan: int | None,
                                          may: bool) -> None:
    for t in (F64, F32):
        bound = P.bind(P.parse(text), pa.schema([("x", t)]))
        assert P.may_match(bound, nan_rng(lo, hi, nan, t), 10) is may, (text, t)


def test_float32_literal_rounds_before_the_bounds() -> None:
    """99.99 in a float32 column is float32(99.99): a maximum of exactly that value does
    not hold a value above it."""
    top = float(np.float32(99.99))
    bound = P.bind(P.parse("x > 99.99"), pa.schema([("x", F32)]))
    assert not P.may_match(bound, nan_rng(1.0, top, None, F32), 10)
    assert P.may_match(bound, nan_rng(1.0, float(np.nextafter(np.float32(top), np.float32(1e9))),
                                      None, F32), 10)


def test_why_may_match_names_the_reason() -> None:
    schema = pa.schema([("x", F64), ("y", I64)])

    def why(text: str, ranges: dict[str, ColumnRange]) -> tuple[bool, tuple[str, ...]]:
        return P.why_may_match(P.bind(P.parse(text), schema), ranges, 10)

    assert why("x != 5", nan_rng(5.0, 5.0, None)) == (True, ("NaN may be present in x",))
    assert why("x != 5", nan_rng(5.0, 5.0, 2)) == (True, ("x holds NaN",))
    assert why("x != 5", nan_rng(5.0, 5.0, 0)) == (False, ())
    assert why("x > 5", nan_rng(1.0, 9.0, None)) == (True, ())  # the bounds allow it
    assert why("x > 5", nan_rng(None, None, None)) == (True, ("no bounds for x",))
    assert why("x > 5", {}) == (True, ("no statistics for x",))
    assert why("y > 5", nan_rng(1.0, 9.0, 0)) == (True, ("no statistics for y",))
    # an excluded branch leaves no reason behind; an undecided one does
    assert why("(x > 100 AND y > 5) OR x != 5", nan_rng(5.0, 5.0, None)) == (
        True, ("NaN may be present in x",))
    assert why("x > 100 AND y > 5", nan_rng(5.0, 5.0, None)) == (False, ())
    ints = {"y": ColumnRange("f", "y", 1.0, 2.0, 0, 10, type=F64)}
    assert why("y > 5", ints) == (True, ("statistics of y are of another type",))


# --- binding --------------------------------------------------------------------------------

SCHEMA = pa.schema([("a", I8), ("u", U64), ("f", F32), ("g", F64), ("dec", DEC),
                    ("s", pa.string()), ("b", pa.binary()), ("fb", pa.binary(2)),
                    ("d", pa.date32()), ("ts", TS_US), ("tsz", TS_MS_UTC), ("tsn", TS_NS),
                    ("bo", pa.bool_()), ("l", pa.list_(pa.int32())),
                    ("dup", I8), ("dup", I8)])


@pytest.mark.parametrize(("text", "bound_text"), [
    ("a = 1", "a = 1"),
    ("a = 1.0", "a = 1"),
    ("a = 1.5", "a > 1 AND a < 2"),
    ("a != 1.5", "NOT (a > 1 AND a < 2)"),
    ("a < 1.5", "a <= 1"),
    ("a <= -1.5", "a <= -2"),
    ("a > 1.5", "a > 1"),
    ("a >= -1.5", "a > -2"),
    ("a < 1000", "a <= 127"),
    ("a > 1000", "a > 127"),
    ("a = 1000", "a > 127"),
    ("a != 1000", "a <= 127"),
    ("a < -1000", "a < -128"),
    ("a >= -1000", "a >= -128"),
    ("a < 1e999", "a <= 127"),
    ("a IN (3, 1.5, 1, 3, 1000)", "a IN (1, 3)"),
    ("a IN (1.5, 1000)", "a > 1 AND a < 2"),
    ("a NOT IN (1.5)", "NOT (a > 1 AND a < 2)"),
    ("u = 18446744073709551615", "u = 18446744073709551615"),
    ("u > -1", "u >= 0"),
    ("f = 0.5", "f = 0.5e0"),
    ("f = 1e39", "f = FLOAT 'Infinity'"),
    ("g = 0.1", "g = 0.1e0"),
    ("g = 3", "g = 3.0e0"),
    ("g IN (FLOAT 'nan', 1)", "g IN (1.0e0)"),
    ("g IN (FLOAT 'nan')", "g < 0.0e0 AND g > 0.0e0"),
    ("dec = 1.5", "dec = 1.50"),
    ("dec = 1.555", "dec > 1.55 AND dec < 1.56"),
    ("dec < 1.555", "dec <= 1.55"),
    ("dec > 100000", "dec > 99999.99"),
    ("dec = 2", "dec = 2.00"),
    ("s = 'x'", "s = 'x'"),
    ("b = 'é'", "b = X'c3a9'"),
    ("fb = X'00'", "fb = X'00'"),
    ("d = '2024-01-01'", "d = DATE '2024-01-01'"),
    ("d = TIMESTAMP '2024-01-01 10:00:00'", "d > DATE '2024-01-01' AND d < DATE '2024-01-02'"),
    ("d < TIMESTAMP '2024-01-01 10:00:00'", "d <= DATE '2024-01-01'"),
    ("d >= TIMESTAMP '2024-01-01 00:00:00'", "d >= DATE '2024-01-01'"),
    ("ts = DATE '2024-01-01'", "ts = TIMESTAMP '2024-01-01 00:00:00'"),
    ("ts = '2024-01-01 10:00:00.5'", "ts = TIMESTAMP '2024-01-01 10:00:00.500000'"),
    ("ts = TIMESTAMP '2024-01-01 10:00:00+01:00'", "ts = TIMESTAMP '2024-01-01 09:00:00'"),
    ("tsz = TIMESTAMP '2024-01-01 10:00:00'", "tsz = TIMESTAMP '2024-01-01 10:00:00Z'"),
    ("tsz < TIMESTAMP '2024-01-01 10:00:00.0005Z'", "tsz <= TIMESTAMP '2024-01-01 10:00:00Z'"),
    ("tsz = TIMESTAMP '2024-01-01 10:00:00.0005Z'",
     "tsz > TIMESTAMP '2024-01-01 10:00:00Z' AND tsz < TIMESTAMP '2024-01-01 10:00:00.001000Z'"),
    ("tsn < TIMESTAMP '3000-01-01 00:00:00'",
     "tsn <= TIMESTAMP '2262-04-11 23:47:16.854775' OR tsn > TIMESTAMP "
     "'2262-04-11 23:47:16.854775'"),
    ("tsn > TIMESTAMP '3000-01-01 00:00:00'",
     "tsn < TIMESTAMP '2262-04-11 23:47:16.854775' AND tsn > TIMESTAMP "
     "'2262-04-11 23:47:16.854775'"),
    ("tsn > TIMESTAMP '1000-01-01 00:00:00'",
     "tsn <= TIMESTAMP '1677-09-21 00:12:43.145225' OR tsn > TIMESTAMP "
     "'1677-09-21 00:12:43.145225'"),
    ("bo = TRUE", "bo = TRUE"),
    ("l IS NULL", "l IS NULL"),
    ("NOT NOT a = 1", "a = 1"),
    ("(a = 1 AND (a = 2 AND a = 3)) OR (a = 4 OR a = 5)",
     "(a = 1 AND a = 2 AND a = 3) OR a = 4 OR a = 5"),
    ("TRUE AND FALSE", "FALSE"),  # the empty AND (TRUE) flattens away
])
def test_bind(text: str, bound_text: str) -> None:
    bound = P.bind(P.parse(text), SCHEMA)
    assert P.to_text(bound) == bound_text
    assert strict_equal(P.parse(P.to_text(bound)), bound)


@pytest.mark.parametrize(("text", "message"), [
    ("zz = 1", "unknown column 'zz'; the columns are: a, u, f"),
    ("dup = 1", "ambiguous"),
    ("a = 'x'", "column 'a' (int8): literal 'x' is text"),
    ("a = TRUE", "literal TRUE is a boolean, not a number"),
    ("a = X'00'", "not a number"),
    ("a = FLOAT 'nan'", "NaN"),
    ("f = 'x'", "column 'f' (float): literal 'x' is text"),
    ("s = 5", "literal 5 is a number, not a string"),
    ("bo = 1", "not TRUE or FALSE"),
    ("b = 5", "not a binary value"),
    ("d = 5", "not a date or timestamp"),
    ("d = 'yesterday'", "literal 'yesterday' is not a date or timestamp"),
    ("ts = DATE '2024-01-01' AND tsz = 'x'", "column 'tsz'"),
    ("l = 1", "column 'l' of type list<item: int32> cannot be compared"),
    ("l IN (1)", "cannot be compared"),
])
def test_bind_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        P.bind(P.parse(text), SCHEMA)
    assert message in str(info.value)


def test_bind_errors_on_built_trees() -> None:
    with pytest.raises(UsageError, match="IS NULL"):
        P.bind(Compare("a", "=", None), SCHEMA)
    with pytest.raises(UsageError, match="IS NULL"):
        P.bind(In("a", (1, None)), SCHEMA)
    with pytest.raises(UsageError, match="at least one"):
        P.bind(In("a", ()), SCHEMA)
    with pytest.raises(UsageError, match="operator"):
        P.bind(Compare("a", "~", 1), SCHEMA)
    with pytest.raises(UsageError, match="not a predicate"):
        P.bind(And(("a = 1",)), SCHEMA)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="Unicode"):
        P.bind(Compare("s", "=", "\ud800"), SCHEMA)
    with pytest.raises(UsageError, match="finite"):
        P.bind(Compare("dec", "=", D("NaN")), SCHEMA)
    with pytest.raises(UsageError, match="Schema"):
        P.bind(Compare("a", "=", 1), {"a": I8})  # type: ignore[arg-type]


def test_bind_rounds_float32_literals_exactly() -> None:
    # 2**60 + 2**36 + 1 lies just above the midpoint of two float32 values; rounding it to
    # float64 first lands on the midpoint and then (ties to even) on the wrong neighbour
    b = P.bind(Compare("f", "=", 2 ** 60 + 2 ** 36 + 1), SCHEMA)
    assert isinstance(b, Compare) and b.value == 2.0 ** 60 + 2.0 ** 37
    b = P.bind(Compare("f", "=", 2 ** 60 + 2 ** 36), SCHEMA)  # a tie: to even
    assert isinstance(b, Compare) and b.value == 2.0 ** 60
    b = P.bind(Compare("f", "<", 10 ** 400), SCHEMA)
    assert isinstance(b, Compare) and b.value == math.inf
    b = P.bind(Compare("f", "=", D("1e-99999")), SCHEMA)
    assert isinstance(b, Compare) and b.value == 0.0
    b = P.bind(Compare("a", "<", D("1e999999999")), SCHEMA)  # no huge integer is built
    assert P.to_text(b) == "a <= 127"
    b = P.bind(Compare("a", ">", D("-1e-999999999")), SCHEMA)
    assert P.to_text(b) == "a > -1"


def test_bound_type_is_kept_but_not_compared() -> None:
    b = P.bind(P.parse("u = 5 AND a IN (2, 1)"), SCHEMA)
    assert isinstance(b, And)
    assert b.items[0].type == U64 and b.items[1].type == I8  # type: ignore[union-attr]
    assert b.items[1].values == (1, 2)  # type: ignore[union-attr]
    assert b == P.parse("u = 5 AND a IN (1, 2)")


# --- rows -----------------------------------------------------------------------------------


def _rows(arr: pa.Array, text: str, name: str = "x") -> list[Any]:
    t = pa.table({name: arr})
    return t.filter(P.to_arrow(P.bind(P.parse(text), t.schema)))[name].to_pylist()


def test_to_arrow_three_valued_logic() -> None:
    arr = pa.array([1, None, 3], I64)
    assert _rows(arr, "x IN (1)") == [1]
    assert _rows(arr, "x NOT IN (1)") == [3]  # NULL NOT IN (...) is NULL, not TRUE
    assert _rows(arr, "NOT x = 1") == [3]
    assert _rows(arr, "x IS NULL") == [None]
    assert _rows(arr, "x IS NOT NULL") == [1, 3]
    assert _rows(arr, "NOT (x = 1 AND x = 2)") == [1, 3]
    assert _rows(arr, "x = 1 OR x IS NULL") == [1, None]
    assert _rows(arr, "TRUE") == [1, None, 3]
    assert _rows(arr, "FALSE") == []
    assert _rows(arr, "NOT FALSE") == [1, None, 3]


def test_to_arrow_floats_follow_ieee() -> None:
    arr = pa.array([math.nan, 0.0, -0.0, 1.0, None, math.inf], F64)
    assert _rows(arr, "x IN (0.0)") == [0.0, -0.0]
    assert _rows(arr, "x IN (-0.0)") == [0.0, -0.0]
    assert _rows(arr, "x IN (FLOAT 'nan')") == []
    assert len(_rows(arr, "x NOT IN (FLOAT 'nan')")) == 5  # NaN included
    assert _rows(arr, "x = FLOAT 'nan'") == []
    assert len(_rows(arr, "x != FLOAT 'nan'")) == 5
    assert _rows(arr, "x > 0") == [1.0, math.inf]
    assert _rows(arr, "x >= FLOAT 'inf'") == [math.inf]
    f32 = pa.array([0.1, 0.5], F32)
    assert _rows(f32, "x = 0.1") == [pytest.approx(0.1)]


def test_to_arrow_bytes_and_text_in_code_point_order() -> None:
    arr = pa.array(["\ue000", "\U00010000", "a"])
    assert _rows(arr, "x > '\ue000'") == ["\U00010000"]
    barr = pa.array([b"\x80", b"\x7f", b""])
    assert _rows(barr, "x > X'7f'") == [b"\x80"]
    fb = pa.array([b"ab", b"\xff\x00"], pa.binary(2))
    assert _rows(fb, "x > 'b'") == [b"\xff\x00"]
    assert _rows(fb, "x IN (X'ff00', X'ff')") == [b"\xff\x00"]
    # views: Arrow 26 cannot filter them at all; only IS NULL binds
    view = pa.schema([("x", pa.string_view())])
    with pytest.raises(UsageError, match="cannot be compared"):
        P.bind(P.parse("x > 'a'"), view)
    assert P.bind(P.parse("x IS NULL"), view) == IsNull("x")


def test_to_arrow_wide_and_zoned_types() -> None:
    u = pa.array([2 ** 64 - 1, 1], U64)
    assert _rows(u, "x > 5") == [2 ** 64 - 1]
    assert _rows(u, "x = 18446744073709551615") == [2 ** 64 - 1]
    paris = pa.array([0, 3_600_000], pa.timestamp("ms", tz="Europe/Paris"))
    assert len(_rows(paris, "x >= TIMESTAMP '1970-01-01 01:00:00'")) == 1
    assert len(_rows(paris, "x >= TIMESTAMP '1970-01-01 01:00:00+01:00'")) == 2


# --- statistics -----------------------------------------------------------------------------


def rng(col: str, lo: Any, hi: Any, t: pa.DataType, nulls: int = 0, values: int = 10
        ) -> dict[str, ColumnRange]:
    return {col: ColumnRange("f", col, lo, hi, nulls, values, type=t)}


PRUNES = [
    # (predicate, schema column type, min, max, null_count, value_count)
    ("x > 10", I64, 1, 5, 0, 10),
    ("x >= 6", I64, 1, 5, 0, 10),
    ("x < 1", I64, 1, 5, 0, 10),
    ("x = 7", I64, 1, 5, 0, 10),
    ("x = 1.5", I64, 0, 10, 0, 10),  # x > 1 AND x < 2: no integer between
    ("x != 3", I64, 3, 3, 2, 10),
    ("NOT x = 3", I64, 3, 3, 2, 10),
    ("x IN (0, 6, 100)", I64, 1, 5, 0, 10),
    ("x NOT IN (1, 2, 3)", I64, 1, 3, 0, 10),
    ("x NOT IN (TRUE, FALSE)", pa.bool_(), False, True, 0, 10),
    ("x NOT IN (1.00, 1.01, 1.02)", DEC, D("1.00"), D("1.02"), 0, 10),
    ("x IS NULL", I64, 1, 5, 0, 10),
    ("x IS NOT NULL", I64, None, None, 10, 10),
    ("x = 1", I64, None, None, 10, 10),  # every value null
    ("x > 1 AND x < 3 AND x != 0 AND x > 2", I64, 0, 10, 0, 10),
    ("x > 5 AND x < 3", I64, 0, 10, 0, 10),
    ("NOT (x <= 5 OR x > 1)", I64, 0, 10, 0, 10),
    ("NOT (x < 5 OR x IS NULL)", I64, 0, 4, 3, 10),
    ("x > 1 OR x < 0", I64, 0, 1, 0, 10),
    ("x > 'm'", pa.string(), "a", "l\U0010ffff", 0, 10),
    ("x < '\ue000'", pa.string(), "\ue000", "\U00010000", 0, 10),
    ("x > X'80'", pa.binary(), b"\x00", b"\x7f\xff", 0, 10),
    ("x > 0.5", F64, -1.0, 0.5, 0, 10),
    ("x > 0 AND x < 0", F64, -1.0, 1.0, 0, 10),
    ("x = FLOAT 'nan'", F64, -1.0, 1.0, 0, 10),
    ("x < 1.555", DEC, D("1.56"), D("2.00"), 0, 10),
    ("x = 1.555", DEC, D("0"), D("9"), 0, 10),
    ("x = TIMESTAMP '2024-01-01 00:00:00'", TS_US, 0, 10, 0, 10),
    ("x >= DATE '2024-01-01'", pa.date32(), 0, 19722, 0, 10),
    ("x < 1000 AND x > 1000", TS_NS, 0, 10, 0, 10),
    ("FALSE", I64, 1, 5, 0, 10),
    ("NOT TRUE", I64, 1, 5, 0, 10),
]


@pytest.mark.parametrize(("text", "t", "lo", "hi", "nulls", "values"), PRUNES)
def test_may_match_prunes(text: str, t: pa.DataType, lo: Any, hi: Any, nulls: int,
                          values: int) -> None:
    if text == "x < 1000 AND x > 1000":
        text = "x < TIMESTAMP '3000-01-01 00:00:00' AND x > TIMESTAMP '3000-01-01 00:00:00'"
    bound = P.bind(P.parse(text), pa.schema([("x", t)]))
    assert not P.may_match(bound, rng("x", lo, hi, t, nulls, values), values)


KEEPS = [
    ("x > 4", I64, 1, 5, 0, 10),
    ("x != 3", I64, 3, 4, 0, 10),
    ("x NOT IN (1, 3)", I64, 1, 3, 0, 10),
    ("x NOT IN (1.00, 1.02)", DEC, D("1.00"), D("1.02"), 0, 10),
    ("x IS NULL", I64, 1, 5, 1, 10),
    ("x IS NULL", I64, None, None, 0, 0),  # a column the file lacks: all null
    ("x IS NOT NULL", I64, 1, 5, 9, 10),
    ("x > 1 AND x < 3", I64, 0, 10, 0, 10),
    ("x = 1.5", F64, 0.0, 10.0, 0, 10),
    ("x != 0", F64, -0.0, 0.5, 0, 10),
    ("x > 0", F64, None, None, 0, 10),  # NaN possible: no bounds
    ("x < 0", F64, None, None, 0, 10),
    ("x != FLOAT 'nan'", F64, 1.0, 1.0, 0, 10),
    ("x > 'l'", pa.string(), "a", "l\U0010ffff", 0, 10),
    ("x IN ('b')", pa.string(), "a", "c", 0, 10),
    ("TRUE", I64, 1, 5, 0, 10),
]


@pytest.mark.parametrize(("text", "t", "lo", "hi", "nulls", "values"), KEEPS)
def test_may_match_keeps(text: str, t: pa.DataType, lo: Any, hi: Any, nulls: int,
                         values: int) -> None:
    bound = P.bind(P.parse(text), pa.schema([("x", t)]))
    assert P.may_match(bound, rng("x", lo, hi, t, nulls, values), 10)


def test_may_match_unknowns_never_prune() -> None:
    schema = pa.schema([("x", I64), ("y", I64)])
    bound = P.bind(P.parse("x > 10"), schema)
    assert P.may_match(bound, {}, 5)  # column without statistics
    assert P.may_match(bound, rng("y", 1, 5, I64), 5)
    # statistics of another type than the bound literal: never decided
    assert P.may_match(bound, rng("x", 1, 5, pa.int32()), 5)
    assert P.may_match(bound, rng("x", 1, 5, None), 5)
    # an unbound tree has no type: only the all-null rule applies
    assert P.may_match(P.parse("x > 10"), rng("x", 1, 5, I64), 5)
    assert not P.may_match(P.parse("x > 10"), rng("x", None, None, I64, 5, 5), 5)
    # statistics of an unexpected Python type: unknown, no exception
    assert P.may_match(bound, rng("x", "a", "b", I64), 5)
    # no rows: nothing matches, not even TRUE
    assert not P.may_match(P.parse("TRUE"), {}, 0)


def test_may_match_long_in_lists_bisect() -> None:
    schema = pa.schema([("x", I64)])
    bound = P.bind(In("x", tuple(range(0, 200_000, 2))), schema)
    assert P.may_match(bound, rng("x", 1001, 1003, I64), 10)
    assert not P.may_match(bound, rng("x", 1001, 1001, I64), 10)
    assert not P.may_match(bound, rng("x", 500_001, 900_000, I64), 10)
    neg = Not(bound)
    assert not P.may_match(neg, rng("x", 1000, 1000, I64), 10)
    assert P.may_match(neg, rng("x", 1000, 1002, I64), 10)


def test_timestamp_statistics_in_the_column_unit() -> None:
    schema = pa.schema([("t", TS_MS_UTC), ("d", pa.date64())])
    noon = 1_704_110_400_000  # 2024-01-01 12:00:00 UTC in ms
    r = rng("t", noon, noon + 1000, TS_MS_UTC)
    assert P.may_match(P.bind(P.parse("t = TIMESTAMP '2024-01-01 12:00:01Z'"), schema), r, 10)
    assert not P.may_match(P.bind(P.parse("t > TIMESTAMP '2024-01-01 12:00:01Z'"), schema),
                           r, 10)
    assert not P.may_match(P.bind(P.parse("t < TIMESTAMP '2024-01-01 13:00:00+01:00'"),
                                  schema), r, 10)
    day = 19723 * 86_400_000  # 2024-01-01 in ms
    r = rng("d", day, day, pa.date64())
    assert P.may_match(P.bind(P.parse("d = DATE '2024-01-01'"), schema), r, 10)
    assert not P.may_match(P.bind(P.parse("d > DATE '2024-01-01'"), schema), r, 10)


def test_columns() -> None:
    e = P.parse("a = 1 AND (`b c` IS NULL OR NOT d IN (1)) AND a > 2")
    assert P.columns(e) == {"a", "b c", "d"}
    assert P.columns(P.parse("TRUE")) == set()


def _spec_examples() -> list[tuple[str, str]]:
    from pathlib import Path

    spec = (Path(__file__).resolve().parent.parent / "spec" / "predicate.md").read_text()
    section = spec.split("## 8. Examples", 1)[1].split("## 9.", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`") and cells[1].startswith("`"):
            rows.append((cells[0][1:-1], cells[1][1:-1]))
    return rows


def test_spec_examples() -> None:
    schema = pa.schema([("i", I8), ("f", F32), ("dec", DEC), ("d", pa.date32()),
                        ("ts", TS_US), ("s", pa.string())])
    examples = _spec_examples()
    assert len(examples) >= 10
    for text, bound_text in examples:
        bound = P.bind(P.parse(text), schema)
        assert P.to_text(bound) == bound_text, text
        assert strict_equal(P.parse(bound_text), bound)
