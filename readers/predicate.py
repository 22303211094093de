"""Row predicates for pruning and filtering (issue 14; spec/predicate.md).

A predicate is a small immutable tree: comparisons, IN, IS NULL, AND, OR, NOT on named
columns (data or partition columns). The same tree is

- parsed from SQL-like text (:func:`parse`: ``a > 5 AND b IN ('x','y')``),
- bound to a table's Arrow schema (:func:`bind`: literals become values of the column's type),
- applied to rows (:func:`to_arrow`: a ``pyarrow.compute.Expression``; a row is kept only
  when the predicate is TRUE, SQL's three-valued logic),
- and decided against column statistics (:func:`may_match`: False only when no row of a
  file with those statistics can make the predicate TRUE).

Statistics convention (shared by every producer of ranges for pruning): a mapping column ->
``morlog.readers.column_stats.ColumnRange`` in *filter order*, the order in which
:func:`to_arrow` compares values:

- ``min``/``max`` are exact bounds of the non-null values, as plain Python values in
  ``ColumnRange``'s representation (ints for date/time/timestamp columns in the column
  type's unit, ``Decimal``, ``str``, ``bytes``, ``float``, ``bool``); strings and bytes in
  unsigned byte order (UTF-8 bytes, i.e. code point order);
- ``min is None or max is None`` with ``value_count > null_count``: the column has non-null
  values but no usable bounds (NaN present or possible, bounds in another order, values too
  long ...);
- ``null_count == value_count``: every value is null (also a column the file lacks);
- a column absent from the mapping: nothing is known (any value, nulls included).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from morlog.logformat.errors import UsageError

from .column_stats import ColumnRange

#: comparison operators of :class:`Compare`
OPS = ("=", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True)
class Compare:
    """``column op value``; ``value`` is never None (``= NULL`` is not a predicate here)."""

    column: str
    op: str
    value: Any


@dataclass(frozen=True)
class In:
    """``column IN (values...)``; ``values`` non-empty, no None."""

    column: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class IsNull:
    """``column IS NULL`` (``IS NOT NULL`` is ``Not(IsNull(column))``)."""

    column: str


@dataclass(frozen=True)
class And:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Or:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Not:
    item: Expr


Expr = Compare | In | IsNull | And | Or | Not


def parse(text: str) -> Expr:
    """The predicate of SQL-like ``text``; ``UsageError`` naming the offset on bad syntax."""
    return _tmp_parse(text)


def bind(expr: Expr, schema: pa.Schema) -> Expr:
    """``expr`` with every column checked against ``schema`` and every literal converted to
    a value of that column's type; ``UsageError`` naming the column or literal otherwise."""
    return _tmp_bind(expr, schema)


def columns(expr: Expr) -> set[str]:
    """The columns ``expr`` reads."""
    if isinstance(expr, (Compare, In, IsNull)):
        return {expr.column}
    if isinstance(expr, Not):
        return columns(expr.item)
    out: set[str] = set()
    for e in expr.items:
        out |= columns(e)
    return out


def to_arrow(expr: Expr) -> pc.Expression:
    """The row filter of a bound ``expr`` (rows where it is TRUE are kept)."""
    return _tmp_to_arrow(expr)


def may_match(expr: Expr, ranges: Mapping[str, ColumnRange], rows: int) -> bool:
    """False only when no row of a file of ``rows`` rows whose columns have ``ranges``
    (filter order, see the module docstring) can make the bound ``expr`` TRUE."""
    if rows <= 0:
        return False
    return _tmp_can(expr, ranges, True)


def to_text(expr: Expr) -> str:
    """``expr`` as text that :func:`parse` reads back to the same tree."""
    return _tmp_text(expr)


# --- TEMPORARY (wt-prune): a minimal implementation so that the pruner can be written and
# tested before the predicate work (wt-pred) lands; main's version replaces all of this. ---

_TOKEN = re.compile(r"""\s*(?:(?P<num>-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)|(?P<str>'(?:[^']|'')*')"""
                    r"""|(?P<op><=|>=|!=|<>|=|<|>|\(|\)|,)|(?P<id>[A-Za-z_][A-Za-z0-9_.]*)"""
                    r"""|(?P<qid>`[^`]+`))""")


def _tmp_tokens(text: str) -> list[tuple[str, Any, int]]:
    out: list[tuple[str, Any, int]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise UsageError(f"bad predicate at offset {pos}", actual=text[pos:pos + 20])
        at = m.start(m.lastgroup) if m.lastgroup else pos
        kind = m.lastgroup or ""
        raw = m.group(kind)
        if kind == "num":
            val: Any = int(raw) if re.fullmatch(r"-?\d+", raw) else float(raw)
        elif kind == "str":
            val = raw[1:-1].replace("''", "'")
        elif kind == "qid":
            kind, val = "id", raw[1:-1]
        else:
            val = raw
        out.append((kind, val, at))
        pos = m.end()
    return out


class _TmpParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tmp_tokens(text)
        self.i = 0

    def peek(self) -> tuple[str, Any, int]:
        return self.toks[self.i] if self.i < len(self.toks) else ("end", None, len(self.text))

    def kw(self, word: str) -> bool:
        k, v, _ = self.peek()
        if k == "id" and isinstance(v, str) and v.upper() == word:
            self.i += 1
            return True
        return False

    def expect(self, value: str) -> None:
        k, v, at = self.peek()
        if v != value or k not in ("op",):
            raise UsageError(f"bad predicate at offset {at}: expected {value!r}",
                             actual=self.text[at:at + 20])
        self.i += 1

    def fail(self, what: str) -> UsageError:
        _, _, at = self.peek()
        return UsageError(f"bad predicate at offset {at}: expected {what}",
                          actual=self.text[at:at + 20])

    def or_(self) -> Expr:
        items = [self.and_()]
        while self.kw("OR"):
            items.append(self.and_())
        return items[0] if len(items) == 1 else Or(tuple(items))

    def and_(self) -> Expr:
        items = [self.not_()]
        while self.kw("AND"):
            items.append(self.not_())
        return items[0] if len(items) == 1 else And(tuple(items))

    def not_(self) -> Expr:
        if self.kw("NOT"):
            return Not(self.not_())
        return self.primary()

    def literal(self) -> Any:
        k, v, _ = self.peek()
        if k in ("num", "str"):
            self.i += 1
            return v
        if k == "id" and str(v).upper() in ("TRUE", "FALSE"):
            self.i += 1
            return str(v).upper() == "TRUE"
        raise self.fail("a literal")

    def primary(self) -> Expr:
        k, v, _ = self.peek()
        if k == "op" and v == "(":
            self.i += 1
            e = self.or_()
            self.expect(")")
            return e
        if k != "id":
            raise self.fail("a column")
        self.i += 1
        col = str(v)
        if self.kw("IS"):
            neg = self.kw("NOT")
            if not self.kw("NULL"):
                raise self.fail("NULL")
            return Not(IsNull(col)) if neg else IsNull(col)
        neg = self.kw("NOT")
        if self.kw("IN"):
            self.expect("(")
            vals = [self.literal()]
            while self.peek()[1] == ",":
                self.i += 1
                vals.append(self.literal())
            self.expect(")")
            e: Expr = In(col, tuple(vals))
            return Not(e) if neg else e
        if neg:
            raise self.fail("IN")
        k2, op, _ = self.peek()
        if k2 != "op" or op not in (*OPS, "<>"):
            raise self.fail("a comparison")
        self.i += 1
        return Compare(col, "!=" if op == "<>" else op, self.literal())

    def parse(self) -> Expr:
        if not self.toks:
            raise UsageError("empty predicate")
        e = self.or_()
        if self.i != len(self.toks):
            raise self.fail("end of predicate")
        return e


def _tmp_parse(text: str) -> Expr:
    return _TmpParser(text).parse()


def _tmp_value(value: Any, t: pa.DataType, column: str) -> Any:
    import decimal

    if isinstance(value, bool) != pa.types.is_boolean(t):
        raise UsageError(f"literal {value!r} does not fit column {column!r} of type {t}")
    try:
        if pa.types.is_integer(t):
            if isinstance(value, float) and not value.is_integer():
                raise UsageError(f"literal {value!r} is not an integer ({column!r})")
            return int(value)
        if pa.types.is_floating(t):
            return float(value)
        if pa.types.is_decimal(t):
            return decimal.Decimal(str(value))
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            if not isinstance(value, str):
                raise UsageError(f"literal {value!r} is not a string ({column!r})")
            return value
        if pa.types.is_boolean(t):
            return bool(value)
    except (ValueError, decimal.InvalidOperation) as exc:
        raise UsageError(f"literal {value!r} does not fit column {column!r}") from exc
    raise UsageError(f"column {column!r} of type {t}: not supported by the temporary binder")


def _tmp_bind(expr: Expr, schema: pa.Schema) -> Expr:
    def field(c: str) -> pa.DataType:
        i = schema.get_field_index(c)
        if i < 0:
            raise UsageError(f"unknown column {c!r}", expected=schema.names)
        return schema.field(i).type

    if isinstance(expr, Compare):
        return Compare(expr.column, expr.op, _tmp_value(expr.value, field(expr.column),
                                                        expr.column))
    if isinstance(expr, In):
        t = field(expr.column)
        return In(expr.column, tuple(_tmp_value(v, t, expr.column) for v in expr.values))
    if isinstance(expr, IsNull):
        field(expr.column)
        return expr
    if isinstance(expr, Not):
        return Not(_tmp_bind(expr.item, schema))
    items = tuple(_tmp_bind(e, schema) for e in expr.items)
    return And(items) if isinstance(expr, And) else Or(items)


def _tmp_to_arrow(expr: Expr) -> pc.Expression:
    if isinstance(expr, Compare):
        f, v = pc.field(expr.column), pc.scalar(expr.value)
        return {"=": f == v, "!=": f != v, "<": f < v, "<=": f <= v, ">": f > v,
                ">=": f >= v}[expr.op]
    if isinstance(expr, In):
        f = pc.field(expr.column)
        out = f == pc.scalar(expr.values[0])
        for v in expr.values[1:]:
            out = out | (f == pc.scalar(v))
        return out
    if isinstance(expr, IsNull):
        return pc.field(expr.column).is_null()
    if isinstance(expr, Not):
        return ~_tmp_to_arrow(expr.item)
    parts = [_tmp_to_arrow(e) for e in expr.items]
    out = parts[0]
    for p in parts[1:]:
        out = (out & p) if isinstance(expr, And) else (out | p)
    return out


def _tmp_cmp(op: str, lo: Any, hi: Any, v: Any, want: bool) -> bool:
    if not want:
        op = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}[op]
    if op == "=":
        return bool(lo <= v <= hi)
    if op == "!=":
        return not (lo == hi == v)
    if op == "<":
        return bool(lo < v)
    if op == "<=":
        return bool(lo <= v)
    if op == ">":
        return bool(hi > v)
    return bool(hi >= v)


def _tmp_can(expr: Expr, ranges: Mapping[str, ColumnRange], want: bool) -> bool:
    """Whether some row can make ``expr`` evaluate to ``want`` (never NULL)."""
    if isinstance(expr, Not):
        return _tmp_can(expr.item, ranges, not want)
    if isinstance(expr, (And, Or)):
        conj = isinstance(expr, And) == want
        results = (_tmp_can(e, ranges, want) for e in expr.items)
        return all(results) if conj else any(results)
    r = ranges.get(expr.column)
    if r is None:
        return True
    if isinstance(expr, IsNull):
        return r.null_count > 0 if want else r.value_count > r.null_count
    if r.value_count <= r.null_count:
        return False
    if r.min is None or r.max is None:
        return True
    try:
        if isinstance(expr, Compare):
            if isinstance(expr.value, float) and expr.value != expr.value:
                return True
            return _tmp_cmp(expr.op, r.min, r.max, expr.value, want)
        if want:
            return any(r.min <= v <= r.max for v in expr.values)
        return not (r.min == r.max and r.min in expr.values)
    except TypeError:
        return True


def _tmp_lit(v: Any) -> str:
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return str(v)


def _tmp_text(expr: Expr) -> str:
    if isinstance(expr, Compare):
        return f"`{expr.column}` {expr.op} {_tmp_lit(expr.value)}"
    if isinstance(expr, In):
        return f"`{expr.column}` IN ({', '.join(_tmp_lit(v) for v in expr.values)})"
    if isinstance(expr, IsNull):
        return f"`{expr.column}` IS NULL"
    if isinstance(expr, Not):
        return f"NOT ({_tmp_text(expr.item)})"
    sep = " AND " if isinstance(expr, And) else " OR "
    return "(" + sep.join(_tmp_text(e) for e in expr.items) + ")"

# --- end of TEMPORARY ---


__all__ = ["OPS", "And", "Compare", "Expr", "In", "IsNull", "Not", "Or", "bind", "columns",
           "may_match", "parse", "to_arrow", "to_text"]
