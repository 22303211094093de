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
  unsigned byte order (UTF-8 bytes, i.e. code point order); for float columns bounds of
  the non-null values that are not NaN (never NaN themselves);
- ``nan_count`` (float columns): how many non-null values are NaN, None when unknown (NaN
  may be present). NaN makes ``<`` ``<=`` ``>`` ``>=`` ``=`` and IN FALSE, so those are
  decided from the bounds alone; ``!=``, NOT IN and negated orderings are TRUE for NaN and
  need ``nan_count == 0`` to be excluded;
- ``min is None or max is None`` with ``value_count > null_count``: the column has non-null
  values but no usable bounds (bounds in another order, values too long, only NaN ...);
- ``null_count == value_count``: every value is null (also a column the file lacks);
- a column absent from the mapping: nothing is known (any value, nulls included).

Constants: the empty ``And(())`` is TRUE and the empty ``Or(())`` is FALSE (text ``TRUE`` /
``FALSE``); there is no other constant node.

Bound nodes: :func:`bind` sets ``Compare.type`` / ``In.type`` to the column's Arrow type.
That field takes no part in equality (``parse(to_text(bound)) == bound``); :func:`to_arrow`
builds its scalars with it and :func:`may_match` decides a leaf only when the statistics
have the same type.
"""

from __future__ import annotations

import bisect
import datetime as dt
import decimal
import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from morlog.logformat.errors import UsageError

from .column_stats import ColumnRange

#: comparison operators of :class:`Compare`
OPS = ("=", "!=", "<", "<=", ">", ">=")

#: the NaN literal: :func:`parse` and :func:`bind` give this one object for every NaN, so
#: that trees holding NaN compare equal (tuples compare items by identity first)
NAN = float("nan")
#: longest predicate text :func:`parse` accepts (characters)
MAX_TEXT = 100_000
#: deepest nesting of parentheses and NOTs :func:`parse` accepts
MAX_DEPTH = 100
#: deepest tree the other functions accept (trees built directly, e.g. by filter pushdown;
#: :func:`bind` flattens nested ANDs / ORs and double NOTs first)
MAX_TREE_DEPTH = 200


@dataclass(frozen=True)
class Compare:
    """``column op value``; ``value`` is never None (``= NULL`` is not a predicate here).
    ``type``: the column's Arrow type once bound (not part of equality)."""

    column: str
    op: str
    value: Any
    type: pa.DataType | None = field(default=None, compare=False)


@dataclass(frozen=True)
class In:
    """``column IN (values...)``; ``values`` non-empty, no None. Bound: sorted, distinct,
    ``type`` the column's Arrow type (not part of equality)."""

    column: str
    values: tuple[Any, ...]
    type: pa.DataType | None = field(default=None, compare=False)


@dataclass(frozen=True)
class IsNull:
    """``column IS NULL`` (``IS NOT NULL`` is ``Not(IsNull(column))``)."""

    column: str


@dataclass(frozen=True)
class And:
    """TRUE when every item is TRUE (``And(())`` is the constant TRUE)."""

    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Or:
    """TRUE when some item is TRUE (``Or(())`` is the constant FALSE)."""

    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Not:
    item: Expr


Expr = Compare | In | IsNull | And | Or | Not

_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


# --- shape checks ---------------------------------------------------------------------------


def _children(e: Expr) -> tuple[Expr, ...]:
    if isinstance(e, (And, Or)):
        return e.items
    if isinstance(e, Not):
        return (e.item,)
    return ()


def _check_depth(expr: Expr, limit: int = MAX_TREE_DEPTH) -> None:
    """UsageError when ``expr`` is nested deeper than ``limit`` or holds a foreign node."""
    stack: list[tuple[Any, int]] = [(expr, 1)]
    while stack:
        e, d = stack.pop()
        if not isinstance(e, (Compare, In, IsNull, And, Or, Not)):
            raise UsageError(f"not a predicate node: {e!r}")
        if d > limit:
            raise UsageError(f"predicate nested more than {limit} levels deep")
        stack.extend((c, d + 1) for c in _children(e))


def columns(expr: Expr) -> set[str]:
    """The columns ``expr`` reads."""
    out: set[str] = set()
    stack: list[Expr] = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, (Compare, In, IsNull)):
            out.add(e.column)
        else:
            stack.extend(_children(e))
    return out


# --- text -----------------------------------------------------------------------------------

_RESERVED = {"AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "TRUE", "FALSE"}
_TYPED = {"DATE", "TIMESTAMP", "FLOAT"}
_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIMESTAMP = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})[ T]([0-9]{2}):([0-9]{2}):([0-9]{2})"
                        r"(?:\.([0-9]{1,6}))?(Z|z|[+-][0-9]{2}:[0-9]{2})?")
_FLOAT_TEXT = re.compile(r"[+-]?(?:nan|inf|infinity|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
                         r"(?:[eE][+-]?[0-9]+)?)", re.IGNORECASE)
_OPERATORS = ("==", "!=", "<>", "<=", ">=", "=", "<", ">")


@dataclass
class _Tok:
    kind: str  # ident, qident, number, string, hex, op, ( ) , sign, end
    text: str
    pos: int
    value: Any = None


def _plain_ident(name: str) -> bool:
    return (bool(name) and (name[0].isalpha() or name[0] == "_")
            and all(c.isalnum() or c in "_." for c in name)
            and name.upper() not in _RESERVED)


def _syntax(text: str, pos: int, message: str) -> UsageError:
    """A UsageError at ``pos`` of ``text`` with a caret under the place."""
    start, end = max(0, pos - 30), min(len(text), pos + 30)
    head = "..." if start else ""
    tail = "..." if end < len(text) else ""
    snippet = "".join(c if c.isprintable() else " " for c in text[start:end])
    caret = " " * (len(head) + pos - start) + "^"
    return UsageError(f"{message}\n  {head}{snippet}{tail}\n  {caret}",
                      path="predicate", offset=pos)


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c in "(),":
            out.append(_Tok(c, c, i))
            i += 1
            continue
        if c in "+-":
            out.append(_Tok("sign", c, i))
            i += 1
            continue
        op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
        if op is not None:
            out.append(_Tok("op", {"==": "=", "<>": "!="}.get(op, op), i))
            i += len(op)
            continue
        if c in "xX" and text.startswith("'", i + 1):
            s, j = _quoted(text, i + 1, "'")
            if len(s) % 2 or any(ch not in "0123456789abcdefABCDEF" for ch in s):
                raise _syntax(text, i, "a binary literal X'...' holds an even number of hex "
                                       "digits")
            out.append(_Tok("hex", text[i:j], i, bytes.fromhex(s)))
            i = j
            continue
        if c == "'":
            s, j = _quoted(text, i, "'")
            out.append(_Tok("string", text[i:j], i, s))
            i = j
            continue
        if c == "`":
            s, j = _quoted(text, i, "`")
            out.append(_Tok("qident", text[i:j], i, s))
            i = j
            continue
        if "0" <= c <= "9" or (c == "." and i + 1 < n and "0" <= text[i + 1] <= "9"):
            m = _NUMBER.match(text, i)
            assert m is not None
            j = m.end()
            if j < n and (text[j].isalnum() or text[j] in "_.`'"):
                raise _syntax(text, j, "unexpected character after a number")
            out.append(_Tok("number", m.group(), i, _number(text, i, m.group())))
            i = j
            continue
        if c.isalpha() or c == "_":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] in "_."):
                j += 1
            out.append(_Tok("ident", text[i:j], i))
            i = j
            continue
        raise _syntax(text, i, f"unexpected character {c!r}")
    out.append(_Tok("end", "", n))
    return out


def _quoted(text: str, i: int, q: str) -> tuple[str, int]:
    """The content of the ``q``-quoted token at ``i`` (doubled quotes unescaped) and the
    offset after it."""
    parts: list[str] = []
    j = i + 1
    while True:
        k = text.find(q, j)
        if k < 0:
            raise _syntax(text, i, "unterminated " + ("string" if q == "'" else "quoted name"))
        parts.append(text[j:k])
        if text.startswith(q, k + 1):
            parts.append(q)
            j = k + 2
            continue
        return "".join(parts), k + 1


def _number(text: str, pos: int, s: str) -> Any:
    if "e" in s or "E" in s:
        return float(s)  # overflow gives inf, as in SQL engines' double parsing
    if "." in s:
        return decimal.Decimal(s)
    try:
        return int(s)
    except ValueError:
        raise _syntax(text, pos, "integer literal too long") from None


def _typed_literal(text: str, tok: _Tok, kind: str, s: str) -> Any:
    if kind == "DATE":
        m = _DATE.fullmatch(s)
        try:
            if m:
                return dt.date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:
            pass
        raise _syntax(text, tok.pos, f"invalid DATE literal {s!r} (yyyy-mm-dd)")
    if kind == "TIMESTAMP":
        stamp = _timestamp_text(s)
        if stamp is None:
            raise _syntax(text, tok.pos, f"invalid TIMESTAMP literal {s!r} "
                                         "(yyyy-mm-dd hh:mm:ss[.ffffff][Z|+hh:mm])")
        return stamp
    if not _FLOAT_TEXT.fullmatch(s):
        raise _syntax(text, tok.pos, f"invalid FLOAT literal {s!r}")
    number = float(s)
    return NAN if math.isnan(number) else number


def _timestamp_text(s: str) -> dt.datetime | None:
    m = _TIMESTAMP.fullmatch(s)
    if not m:
        return None
    try:
        tz: dt.tzinfo | None = None
        if m[8] in ("Z", "z"):
            tz = dt.UTC
        elif m[8]:
            sign = -1 if m[8][0] == "-" else 1
            hh, mm = int(m[8][1:3]), int(m[8][4:6])
            if mm > 59:
                return None
            tz = dt.timezone(sign * dt.timedelta(hours=hh, minutes=mm))
        micro = int((m[7] or "").ljust(6, "0"))
        return dt.datetime(int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]),
                           micro, tzinfo=tz)
    except ValueError:
        return None


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> _Tok:
        t = self.toks[self.i]
        self.i = min(self.i + 1, len(self.toks) - 1)
        return t

    def kw(self, word: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t.kind == "ident" and t.text.upper() == word

    def err(self, tok: _Tok, message: str) -> UsageError:
        found = "the end" if tok.kind == "end" else repr(tok.text)
        return _syntax(self.text, tok.pos, f"{message}, found {found}")

    def expect_kw(self, word: str, message: str) -> None:
        if not self.kw(word):
            raise self.err(self.peek(), message)
        self.next()

    def expr(self, depth: int) -> Expr:
        items = [self.conj(depth)]
        while self.kw("OR"):
            self.next()
            items.append(self.conj(depth))
        return items[0] if len(items) == 1 else Or(tuple(items))

    def conj(self, depth: int) -> Expr:
        items = [self.neg(depth)]
        while self.kw("AND"):
            self.next()
            items.append(self.neg(depth))
        return items[0] if len(items) == 1 else And(tuple(items))

    def neg(self, depth: int) -> Expr:
        count = 0
        while self.kw("NOT"):
            tok = self.next()
            count += 1
            if depth + count > MAX_DEPTH:
                raise _syntax(self.text, tok.pos, f"nested more than {MAX_DEPTH} levels deep")
        e = self.primary(depth + count)
        for _ in range(count):
            e = Not(e)
        return e

    def primary(self, depth: int) -> Expr:
        tok = self.peek()
        if tok.kind == "(":
            if depth + 1 > MAX_DEPTH:
                raise _syntax(self.text, tok.pos, f"nested more than {MAX_DEPTH} levels deep")
            self.next()
            e = self.expr(depth + 1)
            if self.peek().kind != ")":
                raise self.err(self.peek(), "expected ')' or AND/OR")
            self.next()
            return e
        if (self.kw("TRUE") or self.kw("FALSE")) and self.peek(1).kind != "op":
            self.next()
            return And(()) if tok.text.upper() == "TRUE" else Or(())
        return self.predicate()

    def operand(self) -> tuple[str, Any, _Tok]:
        """("column", name, tok), ("value", literal, tok) or ("null", None, tok)."""
        tok = self.peek()
        if tok.kind == "qident":
            self.next()
            return "column", tok.value, tok
        if tok.kind == "ident":
            word = tok.text.upper()
            if word in _TYPED and self.peek(1).kind == "string":
                self.next()
                s = self.next()
                return "value", _typed_literal(self.text, tok, word, s.value), tok
            if word in ("TRUE", "FALSE"):
                self.next()
                return "value", word == "TRUE", tok
            if word == "NULL":
                self.next()
                return "null", None, tok
            if word in _RESERVED:
                raise self.err(tok, "expected a column or a literal")
            self.next()
            return "column", tok.text, tok
        if tok.kind in ("string", "hex"):
            self.next()
            return "value", tok.value, tok
        if tok.kind == "sign":
            self.next()
            num = self.peek()
            if num.kind != "number":
                raise self.err(num, f"expected a number after '{tok.text}'")
            self.next()
            v = num.value
            if tok.text == "-":
                v = v.copy_negate() if isinstance(v, decimal.Decimal) else -v
            return "value", v, tok
        if tok.kind == "number":
            self.next()
            return "value", tok.value, tok
        raise self.err(tok, "expected a column or a literal")

    def literal(self, context: str) -> Any:
        kind, v, tok = self.operand()
        if kind == "null":
            raise _syntax(self.text, tok.pos, f"NULL {context} never matches: use IS NULL or "
                                              "IS NOT NULL")
        if kind != "value":
            raise _syntax(self.text, tok.pos, f"expected a literal {context}, found column "
                                              f"{v!r}")
        return v

    def predicate(self) -> Expr:
        kind, left, ltok = self.operand()
        tok = self.peek()
        if tok.kind == "op":
            self.next()
            rkind, right, rtok = self.operand()
            if "null" in (kind, rkind):
                where = ltok if kind == "null" else rtok
                raise _syntax(self.text, where.pos, f"'{tok.text} NULL' is never true: use IS "
                                                    "NULL or IS NOT NULL")
            if kind == "column" and rkind == "value":
                return Compare(left, tok.text, right)
            if kind == "value" and rkind == "column":
                return Compare(right, _FLIP[tok.text], left)
            if kind == "column":
                raise _syntax(self.text, rtok.pos, "comparing two columns is not supported")
            raise _syntax(self.text, ltok.pos, "a comparison needs a column on one side")
        is_pred = (self.kw("IS") or self.kw("IN") or self.kw("BETWEEN")
                   or (self.kw("NOT") and (self.kw("IN", 1) or self.kw("BETWEEN", 1))))
        if not is_pred:
            raise self.err(tok, "expected a comparison operator, IN, IS or BETWEEN")
        if kind != "column":
            raise _syntax(self.text, ltok.pos, f"{tok.text.upper()} needs a column on its left")
        if self.kw("IS"):
            self.next()
            negated = self.kw("NOT")
            if negated:
                self.next()
            self.expect_kw("NULL", "expected NULL after IS [NOT]")
            return Not(IsNull(left)) if negated else IsNull(left)
        negated = self.kw("NOT")
        if negated:
            self.next()
        if self.kw("IN"):
            self.next()
            if self.peek().kind != "(":
                raise self.err(self.peek(), "expected '(' after IN")
            self.next()
            values = [self.literal("in an IN list")]
            while self.peek().kind == ",":
                self.next()
                values.append(self.literal("in an IN list"))
            if self.peek().kind != ")":
                raise self.err(self.peek(), "expected ',' or ')' in the IN list")
            self.next()
            e: Expr = In(left, tuple(values))
        else:
            self.next()  # BETWEEN
            lo = self.literal("in BETWEEN")
            self.expect_kw("AND", "expected AND in BETWEEN ... AND ...")
            hi = self.literal("in BETWEEN")
            e = And((Compare(left, ">=", lo), Compare(left, "<=", hi)))
        return Not(e) if negated else e


def parse(text: str) -> Expr:
    """The predicate of SQL-like ``text``; ``UsageError`` naming the offset on bad syntax
    (grammar: spec/predicate.md §2)."""
    if not isinstance(text, str):
        raise UsageError(f"a predicate is text, got {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise UsageError(f"predicate text longer than {MAX_TEXT} characters")
    p = _Parser(text)
    if p.peek().kind == "end":
        raise _syntax(text, 0, "empty predicate")
    e = p.expr(0)
    if p.peek().kind != "end":
        raise p.err(p.peek(), "expected AND, OR or the end")
    return e


def _literal_text(v: Any) -> str:
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "FLOAT 'NaN'"
        if math.isinf(v):
            return "FLOAT 'Infinity'" if v > 0 else "FLOAT '-Infinity'"
        r = repr(v)
        return r if ("e" in r or "E" in r) else r + "e0"
    if isinstance(v, decimal.Decimal):
        if not v.is_finite():
            raise UsageError(f"decimal literal {v} has no text form")
        s = format(v, "f")
        return s if "." in s else s + ".0"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, (bytes, bytearray)):
        return "X'" + bytes(v).hex() + "'"
    if isinstance(v, dt.datetime):
        s = (f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:"
             f"{v.second:02d}" + (f".{v.microsecond:06d}" if v.microsecond else ""))
        off = v.utcoffset()
        if off is None:
            return f"TIMESTAMP '{s}'"
        if off == dt.timedelta(0):
            return f"TIMESTAMP '{s}Z'"
        secs = int(off.total_seconds())
        if secs % 60 or off.microseconds:
            return _literal_text(v.astimezone(dt.UTC))
        sign, secs = ("-", -secs) if secs < 0 else ("+", secs)
        return f"TIMESTAMP '{s}{sign}{secs // 3600:02d}:{secs % 3600 // 60:02d}'"
    if isinstance(v, dt.date):
        return f"DATE '{v.year:04d}-{v.month:02d}-{v.day:02d}'"
    raise UsageError(f"literal {v!r} ({type(v).__name__}) has no text form")


def _ident_text(name: str) -> str:
    return name if _plain_ident(name) else "`" + name.replace("`", "``") + "`"


def _text(e: Expr, top: bool) -> str:
    if isinstance(e, Compare):
        return f"{_ident_text(e.column)} {e.op} {_literal_text(e.value)}"
    if isinstance(e, In):
        return (f"{_ident_text(e.column)} IN ("
                + ", ".join(_literal_text(v) for v in e.values) + ")")
    if isinstance(e, IsNull):
        return f"{_ident_text(e.column)} IS NULL"
    if isinstance(e, Not):
        inner = e.item
        if isinstance(inner, IsNull):
            return f"{_ident_text(inner.column)} IS NOT NULL"
        if isinstance(inner, In):
            return (f"{_ident_text(inner.column)} NOT IN ("
                    + ", ".join(_literal_text(v) for v in inner.values) + ")")
        return f"NOT {_text(inner, False)}"
    word = "AND" if isinstance(e, And) else "OR"
    if not e.items:
        return "TRUE" if isinstance(e, And) else "FALSE"
    if len(e.items) == 1:
        return _text(e.items[0], top)
    body = f" {word} ".join(_text(i, False) for i in e.items)
    return body if top else f"({body})"


def to_text(expr: Expr) -> str:
    """``expr`` as text that :func:`parse` reads back to the same tree (an AND / OR of one
    item is written as that item)."""
    _check_depth(expr)
    return _text(expr, True)


# --- binding --------------------------------------------------------------------------------

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_DAY_US = 86_400_000_000
_US_PER = {"s": 1_000_000, "ms": 1_000, "us": 1}
_INF = float("inf")


def _kind(t: pa.DataType) -> str:
    """The family of a column type for predicates ('' when comparisons are not supported)."""
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        return "float"
    if pa.types.is_decimal(t):
        return "decimal"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if (pa.types.is_binary(t) or pa.types.is_large_binary(t)
            or pa.types.is_fixed_size_binary(t)):
        return "binary"
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp"
    return ""


class _Lattice:
    """The values of an integer-like column type as integer *units* (ints; unscaled decimals;
    days for dates; the unit for timestamps): ``lo``/``hi`` the type's extremes, ``value``
    a unit count as the bound literal (None when no Python value stands for it)."""

    def __init__(self, t: pa.DataType) -> None:
        self.t = t
        if pa.types.is_integer(t):
            bits = t.bit_width
            signed = pa.types.is_signed_integer(t)
            self.lo = -(1 << (bits - 1)) if signed else 0
            self.hi = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
        elif pa.types.is_decimal(t):
            self.hi = 10 ** t.precision - 1
            self.lo = -self.hi
        elif pa.types.is_date32(t):
            self.lo, self.hi = -(1 << 31), (1 << 31) - 1
        elif pa.types.is_date64(t):
            self.lo, self.hi = -(1 << 63) // 86_400_000 + 1, ((1 << 63) - 1) // 86_400_000
        else:  # timestamp
            self.lo, self.hi = -(1 << 63), (1 << 63) - 1

    def value(self, n: int) -> Any:
        t = self.t
        if pa.types.is_integer(t):
            return n
        if pa.types.is_decimal(t):
            return decimal.Decimal(f"{n}E-{t.scale}")
        if pa.types.is_date32(t) or pa.types.is_date64(t):
            try:
                return dt.date.fromordinal(_EPOCH_ORDINAL + n)
            except (ValueError, OverflowError):
                return None
        if t.unit == "ns":
            if n % 1000:
                return None
            micros = n // 1000
        else:
            micros = n * _US_PER[t.unit]
        try:
            v = _EPOCH + dt.timedelta(microseconds=micros)
        except OverflowError:
            return None
        return v.replace(tzinfo=dt.UTC) if t.tz is not None else v

    def inner(self, n: int, up: bool) -> int:
        """The unit nearest ``n`` (moving up when ``up``, else down) that :meth:`value` can
        stand for."""
        t = self.t
        m = n
        if pa.types.is_timestamp(t) and t.unit == "ns":
            m = -((-n) // 1000) * 1000 if up else n // 1000 * 1000
        elif pa.types.is_timestamp(t):
            per = _US_PER[t.unit]
            first = -((-_micros(dt.datetime.min)) // per)
            last = _micros(dt.datetime.max) // per
            m = max(n, first) if up else min(n, last)
        elif pa.types.is_date(t):
            first, last = (dt.date.min.toordinal() - _EPOCH_ORDINAL,
                           dt.date.max.toordinal() - _EPOCH_ORDINAL)
            m = max(n, first) if up else min(n, last)
        if self.value(m) is None:
            raise UsageError(f"no literal can stand for the edge of {t}")
        return m


def _micros(v: dt.datetime) -> int:
    """Microseconds since the epoch (a naive datetime read as UTC)."""
    if v.tzinfo is not None and v.utcoffset() is not None:
        return (v - _EPOCH_UTC) // dt.timedelta(microseconds=1)
    return (v.replace(tzinfo=None) - _EPOCH) // dt.timedelta(microseconds=1)


def _exact_number(v: Any) -> Fraction | float:
    """The exact value of a number literal (±inf for infinities and huge decimals)."""
    if isinstance(v, float):
        return v if math.isinf(v) else Fraction(v)
    if isinstance(v, decimal.Decimal):
        if v.is_zero():
            return Fraction(0)
        if v.adjusted() > 1000:
            return _INF if v > 0 else -_INF
        if v.adjusted() < -1000:  # below every unit of every type: 0 < |v| < 1e-1000
            return Fraction(1 if v > 0 else -1, 10 ** 1001)
        return Fraction(v)
    return Fraction(v)


def _describe(t: pa.DataType) -> str:
    return str(t)


def _lit_error(column: str, t: pa.DataType, v: Any, why: str) -> UsageError:
    return UsageError(f"column {column!r} ({_describe(t)}): literal {_show(v)} {why}")


def _show(v: Any) -> str:
    try:
        s = _literal_text(v)
    except UsageError:
        s = repr(v)
    return s if len(s) <= 80 else s[:77] + "..."


def _temporal_units(column: str, t: pa.DataType, v: Any) -> Fraction:
    """A date / timestamp literal as exact units of the lattice of ``t``."""
    if isinstance(v, str):
        parsed: Any = _timestamp_text(v)
        if parsed is None:
            m = _DATE.fullmatch(v)
            try:
                parsed = dt.date(int(m[1]), int(m[2]), int(m[3])) if m else None
            except ValueError:
                parsed = None
        if parsed is None:
            want = "yyyy-mm-dd" if pa.types.is_date(t) else "yyyy-mm-dd[ hh:mm:ss[.ffffff]]"
            raise _lit_error(column, t, v, f"is not a date or timestamp ({want})")
        v = parsed
    if isinstance(v, dt.datetime):
        micros = _micros(v)
    elif isinstance(v, dt.date):
        micros = (v.toordinal() - _EPOCH_ORDINAL) * _DAY_US
    else:
        raise _lit_error(column, t, v, f"is a {_lit_kind(v)}, not a date or timestamp")
    if pa.types.is_date(t):
        return Fraction(micros, _DAY_US)
    if t.unit == "ns":
        return Fraction(micros * 1000)
    return Fraction(micros, _US_PER[t.unit])


def _lit_kind(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float, decimal.Decimal)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "binary value"
    if isinstance(v, dt.datetime):
        return "timestamp"
    if isinstance(v, dt.date):
        return "date"
    return type(v).__name__


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)


def _float_value(column: str, t: pa.DataType, v: Any) -> float:
    """A number literal rounded to the nearest value of float column type ``t`` (ties to
    even), as storing it in that column would."""
    if isinstance(v, decimal.Decimal) and not v.is_finite():
        raise _lit_error(column, t, v, "is not a finite decimal")
    try:
        x = float(v)
    except OverflowError:
        x = _INF if v > 0 else -_INF
    if math.isnan(x):
        return NAN
    if pa.types.is_float64(t):
        return x
    with np.errstate(over="ignore"):
        c = np.float32(x)
    if math.isinf(x) or x == 0 or (isinstance(v, float) and float(c) == x):
        return float(c)
    exact = Fraction(v) if not isinstance(v, float) else Fraction(x)
    f32max = Fraction(float(np.finfo(np.float32).max))
    half_ulp = Fraction(2) ** 103  # half of the last step below 2**128
    if abs(exact) >= f32max + half_ulp:
        return _INF if exact > 0 else -_INF
    with np.errstate(over="ignore"):
        cands = [np.nextafter(c, np.float32(-np.inf)), c, np.nextafter(c, np.float32(np.inf))]
    best: np.float32 | None = None
    for cand in cands:
        if not np.isfinite(cand):
            continue
        if best is None:
            best = cand
            continue
        d_new, d_old = abs(Fraction(float(cand)) - exact), abs(Fraction(float(best)) - exact)
        even = int(cand.view(np.uint32)) % 2 == 0
        if d_new < d_old or (d_new == d_old and even):
            best = cand
    assert best is not None
    return float(best)


def _never(column: str, x: Any, t: pa.DataType) -> Expr:
    """FALSE for every non-null value, NULL for null (``c < x AND c > x``)."""
    return And((Compare(column, "<", x, t), Compare(column, ">", x, t)))


def _always(column: str, x: Any, t: pa.DataType) -> Expr:
    """TRUE for every non-null value of a type without NaN, NULL for null."""
    return Or((Compare(column, "<=", x, t), Compare(column, ">", x, t)))


def _lattice_compare(column: str, op: str, r: Fraction | float, lat: _Lattice) -> Expr:
    """``column op r`` for an exact ``r`` on an integer-like type, rewritten so that its
    literal is a value of the type and its meaning is unchanged (spec/predicate.md §3.3)."""
    t = lat.t
    if r > lat.hi or r < lat.lo:
        above = r > lat.hi
        all_true = op in (("<", "<=", "!=") if above else (">", ">=", "!="))
        edge = lat.hi if above else lat.lo
        v = lat.value(edge)
        if v is not None:
            if above:
                return Compare(column, "<=" if all_true else ">", v, t)
            return Compare(column, ">=" if all_true else "<", v, t)
        x = lat.value(lat.inner(edge, up=not above))
        return _always(column, x, t) if all_true else _never(column, x, t)
    assert isinstance(r, Fraction)
    if r.denominator == 1:
        v = lat.value(int(r))
        if v is None:
            raise UsageError(f"column {column!r} ({t}): no literal stands for {r}")
        return Compare(column, op, v, t)
    f = math.floor(r)
    fv = lat.value(f)
    if fv is None:
        raise UsageError(f"column {column!r} ({t}): no literal stands for {f}")
    if op in ("<", "<="):
        return Compare(column, "<=", fv, t)
    if op in (">", ">="):
        return Compare(column, ">", fv, t)
    uv = lat.value(f + 1) if f + 1 <= lat.hi else None
    eq = _never(column, fv, t) if uv is None else And(
        (Compare(column, ">", fv, t), Compare(column, "<", uv, t)))
    return eq if op == "=" else Not(eq)


def _exact_of(column: str, t: pa.DataType, v: Any) -> Fraction | float:
    """The exact value of literal ``v`` in the units of the lattice of ``t``."""
    kind = _kind(t)
    if kind in ("date", "timestamp"):
        return _temporal_units(column, t, v)
    if not _is_number(v):
        why = "is text: numbers are written without quotes" if isinstance(v, str) else \
            f"is a {_lit_kind(v)}, not a number"
        raise _lit_error(column, t, v, why)
    if isinstance(v, float) and math.isnan(v):
        raise _lit_error(column, t, v, "is NaN, which a non-float column cannot be compared "
                                       "with")
    if isinstance(v, decimal.Decimal) and not v.is_finite():
        raise _lit_error(column, t, v, "is not a finite decimal")
    r = _exact_number(v)
    if kind == "decimal" and not isinstance(r, float):
        r = r * 10 ** t.scale
    return r


def _convert_plain(column: str, t: pa.DataType, v: Any) -> Any:
    """A literal as a value of a bool / float / string / binary column."""
    kind = _kind(t)
    if kind == "bool":
        if not isinstance(v, bool):
            raise _lit_error(column, t, v, f"is a {_lit_kind(v)}, not TRUE or FALSE")
        return v
    if kind == "float":
        if not _is_number(v):
            why = "is text: numbers are written without quotes" if isinstance(v, str) else \
                f"is a {_lit_kind(v)}, not a number"
            raise _lit_error(column, t, v, why)
        return _float_value(column, t, v)
    if kind == "string":
        if not isinstance(v, str):
            raise _lit_error(column, t, v, f"is a {_lit_kind(v)}, not a string (quote it)")
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise _lit_error(column, t, v, "is not valid Unicode text") from None
        return v
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, str):
        try:
            return v.encode("utf-8")
        except UnicodeEncodeError:
            raise _lit_error(column, t, v, "is not valid Unicode text") from None
    raise _lit_error(column, t, v, f"is a {_lit_kind(v)}, not a binary value (X'...')")


def _field_type(column: str, schema: pa.Schema) -> pa.DataType:
    i = schema.get_field_index(column)
    if i < 0:
        if schema.get_all_field_indices(column):
            raise UsageError(f"column {column!r} is ambiguous: the schema has it more than "
                             "once")
        names = list(schema.names)
        shown = ", ".join(names[:60]) + (", ..." if len(names) > 60 else "")
        raise UsageError(f"unknown column {column!r}; the columns are: {shown}")
    return schema.field(i).type


def _comparable_type(column: str, t: pa.DataType) -> str:
    kind = _kind(t)
    if not kind:
        raise UsageError(f"column {column!r} of type {t} cannot be compared (only IS NULL "
                         "applies to it)")
    return kind


def _bind_compare(e: Compare, schema: pa.Schema) -> Expr:
    if e.op not in OPS:
        raise UsageError(f"unknown comparison operator {e.op!r} (one of {', '.join(OPS)})")
    if e.value is None:
        raise UsageError(f"column {e.column!r}: comparing with NULL is never true; use IS "
                         "NULL")
    t = _field_type(e.column, schema)
    kind = _comparable_type(e.column, t)
    if kind in ("int", "decimal", "date", "timestamp"):
        return _lattice_compare(e.column, e.op, _exact_of(e.column, t, e.value), _Lattice(t))
    return Compare(e.column, e.op, _convert_plain(e.column, t, e.value), t)


def _bind_in(e: In, schema: pa.Schema) -> Expr:
    if not e.values:
        raise UsageError(f"column {e.column!r}: an IN list needs at least one value")
    if any(v is None for v in e.values):
        raise UsageError(f"column {e.column!r}: NULL in an IN list never matches; use IS NULL")
    t = _field_type(e.column, schema)
    kind = _comparable_type(e.column, t)
    kept: list[Any] = []
    if kind in ("int", "decimal", "date", "timestamp"):
        lat = _Lattice(t)
        for v in e.values:  # per distinct literal
            r = _exact_of(e.column, t, v)
            if not isinstance(r, float) and r.denominator == 1 and lat.lo <= r <= lat.hi:
                kept_v = lat.value(int(r))
                if kept_v is not None:
                    kept.append(kept_v)
        if not kept:  # no value of the type equals any literal
            return _lattice_compare(e.column, "=", _exact_of(e.column, t, e.values[0]), lat)
    else:
        for v in e.values:
            c = _convert_plain(e.column, t, v)
            if not (isinstance(c, float) and math.isnan(c)):  # NaN equals nothing
                kept.append(c)
        if not kept:
            return _never(e.column, 0.0, t)
    distinct = sorted(set(kept))
    return In(e.column, tuple(distinct), t)


def bind(expr: Expr, schema: pa.Schema) -> Expr:
    """``expr`` with every column checked against ``schema`` and every literal converted to
    a value of that column's type; ``UsageError`` naming the column or literal otherwise.

    Nested ANDs / ORs are flattened and double NOTs dropped (same meaning). A comparison
    whose literal no value of the column's type equals is rewritten to one with the same
    meaning for every value of the type (``int_col < 1.5`` -> ``int_col <= 1``,
    ``int_col = 1.5`` -> ``int_col > 1 AND int_col < 2``; spec/predicate.md §3); float
    columns take the literal rounded to the column's type."""
    if not isinstance(schema, pa.Schema):
        raise UsageError(f"bind needs a pyarrow.Schema, got {type(schema).__name__}")
    out = _bind(expr, schema, 1)
    _check_depth(out)
    return out


def _bind(expr: Expr, schema: pa.Schema, depth: int) -> Expr:
    if depth > MAX_TREE_DEPTH:
        raise UsageError(f"predicate nested more than {MAX_TREE_DEPTH} levels deep")
    negations = 0
    while isinstance(expr, Not):
        negations += 1
        expr = expr.item
    if isinstance(expr, Compare):
        out: Expr = _bind_compare(expr, schema)
    elif isinstance(expr, In):
        out = _bind_in(expr, schema)
    elif isinstance(expr, IsNull):
        _field_type(expr.column, schema)
        out = IsNull(expr.column)
    elif isinstance(expr, (And, Or)):
        kind = type(expr)
        items: list[Expr] = []
        stack: list[Any] = [iter(expr.items)]
        while stack:  # flatten AND-in-AND / OR-in-OR without recursion
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                continue
            if type(nxt) is kind:
                stack.append(iter(nxt.items))
                continue
            items.append(nxt)
        bound = tuple(_bind(i, schema, depth + 1) for i in items)
        out = bound[0] if len(bound) == 1 else kind(bound)
    else:
        raise UsageError(f"not a predicate node: {expr!r}")
    if negations % 2:
        out = Not(out)
    return out


# --- rows -----------------------------------------------------------------------------------


def _scalar(v: Any, t: pa.DataType | None) -> pa.Scalar:
    if t is None:
        return pa.scalar(v)
    if pa.types.is_fixed_size_binary(t):
        return pa.scalar(v, pa.binary())
    return pa.scalar(v, t)


def _field(column: str, t: pa.DataType | None) -> pc.Expression:
    f = pc.field(column)
    if t is not None and pa.types.is_fixed_size_binary(t):
        return f.cast(pa.binary())  # literals of any length compare with it
    return f


_NULL_BOOL = pa.nulls(1, pa.bool_())[0]  # (pa.scalar would import pandas at import time)


def _arrow(e: Expr) -> pc.Expression:
    if isinstance(e, Compare):
        f, s = _field(e.column, e.type), _scalar(e.value, e.type)
        op = e.op
        if op == "=":
            return f == s
        if op == "!=":
            return f != s
        if op == "<":
            return f < s
        if op == "<=":
            return f <= s
        if op == ">":
            return f > s
        if op == ">=":
            return f >= s
        raise UsageError(f"unknown comparison operator {op!r}")
    if isinstance(e, In):
        f = _field(e.column, e.type)
        values = list(e.values)
        t = e.type
        is_float = (t is not None and pa.types.is_floating(t)) or (
            t is None and all(isinstance(v, float) for v in values))
        if is_float:
            # is_in matches NaN with NaN and tells -0.0 from 0.0; SQL equality does neither
            values = [v + 0.0 for v in values if not math.isnan(v)]
            f = f + _scalar(0.0, t)
        vt = pa.binary() if t is not None and pa.types.is_fixed_size_binary(t) else t
        value_set = pa.array(values, type=vt)
        found = f.isin(value_set) if len(values) else pc.scalar(False)
        # SQL: NULL IN (...) is NULL, not FALSE (it matters under NOT)
        return pc.if_else(pc.field(e.column).is_valid(), found, _NULL_BOOL)
    if isinstance(e, IsNull):
        return pc.field(e.column).is_null()
    if isinstance(e, Not):
        return ~_arrow(e.item)
    if isinstance(e, And):
        if not e.items:
            return pc.scalar(True)
        out = _arrow(e.items[0])
        for i in e.items[1:]:
            out = out & _arrow(i)
        return out
    if isinstance(e, Or):
        if not e.items:
            return pc.scalar(False)
        out = _arrow(e.items[0])
        for i in e.items[1:]:
            out = out | _arrow(i)
        return out
    raise UsageError(f"not a predicate node: {e!r}")


def to_arrow(expr: Expr) -> pc.Expression:
    """The row filter of a bound ``expr`` (rows where it is TRUE are kept; AND, OR, NOT in
    Kleene logic, a comparison with NULL is NULL)."""
    _check_depth(expr)
    return _arrow(expr)


# --- statistics -----------------------------------------------------------------------------


def _units(v: Any, t: pa.DataType) -> Any:
    """A bound literal (or a ``ColumnRange`` bound) in ``ColumnRange``'s representation of
    type ``t``: ints in the type's unit for dates and timestamps, the value otherwise."""
    if isinstance(v, bool) or not isinstance(v, (dt.date, dt.datetime)):
        return v
    micros = (_micros(v) if isinstance(v, dt.datetime)
              else (v.toordinal() - _EPOCH_ORDINAL) * _DAY_US)
    if pa.types.is_date32(t):
        return Fraction(micros, _DAY_US)
    if pa.types.is_date64(t):
        return Fraction(micros, 1000)
    if pa.types.is_timestamp(t):
        return micros * 1000 if t.unit == "ns" else Fraction(micros, _US_PER[t.unit])
    return v


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


@functools.lru_cache(maxsize=256)
def _sorted_units(values: tuple[Any, ...], t: pa.DataType) -> tuple[Any, ...]:
    """The IN literals in the statistics' representation, NaN dropped, sorted (per distinct
    literal, once per list)."""
    return tuple(sorted(_units(v, t) for v in values if not _is_nan(v)))


class _Leaf:
    """What the statistics of one column allow."""

    def __init__(self, r: ColumnRange | None, rows: int) -> None:
        self.r = r
        self.known = r is not None
        self.may_nan = self.only_nan = False
        if r is None:
            return
        self.nonnull = r.value_count - r.null_count
        self.bounds = self.nonnull > 0 and r.min is not None and r.max is not None
        self.all_null = self.nonnull <= 0
        self.may_null = r.null_count > 0 or self.all_null or r.value_count != rows
        if r.type is not None and pa.types.is_floating(r.type) and self.nonnull > 0:
            nan = r.nan_count
            #: a non-null value may be NaN / every non-null value is NaN
            self.may_nan = nan is None or nan > 0
            self.only_nan = nan is not None and nan >= self.nonnull

    def undecided(self, column: str, t: pa.DataType | None) -> str:
        """Why a test on this column is not decided by its bounds (for reports)."""
        r = self.r
        assert r is not None
        if t is None:
            return f"{column} is not bound"
        if r.type is None or r.type != t:
            return f"statistics of {column} are of another type"
        return f"no bounds for {column}"

    def nan_note(self, column: str) -> str:
        r = self.r
        assert r is not None
        return (f"NaN may be present in {column}" if r.nan_count is None
                else f"{column} holds NaN")


def _note(notes: list[str] | None, text: str) -> None:
    if notes is not None:
        notes.append(text)


def _nan_true(op: str, negated: bool) -> bool:
    """Whether a NaN value makes ``c op v`` (NOT it when ``negated``) TRUE, for a literal
    ``v`` that is not NaN: only ``!=`` is TRUE for NaN, so under NOT every other one."""
    return (op == "!=") != negated


def _range_space(leaf: _Leaf, t: pa.DataType | None) -> tuple[Any, Any] | None:
    """(min, max) comparable with literals bound to ``t``; None when the statistics are of
    another type or have no bounds."""
    r = leaf.r
    assert r is not None
    if t is None or not leaf.bounds or r.type is None or r.type != t:
        return None
    return _units(r.min, t), _units(r.max, t)


def _cmp_may(e: Compare, negated: bool, leaf: _Leaf, notes: list[str] | None) -> bool:
    if not leaf.known:
        _note(notes, f"no statistics for {e.column}")
        return True
    if leaf.all_null:
        return False  # a comparison with NULL is never TRUE (nor its NOT)
    if _is_nan(e.value):
        # NaN equals and orders with nothing: ``c != NaN`` is TRUE and the rest FALSE for
        # every value; so NOT turns them round (NOT (c < NaN) is TRUE, not c >= NaN)
        return (e.op == "!=") != negated
    if leaf.may_nan and _nan_true(e.op, negated):
        _note(notes, leaf.nan_note(e.column))
        return True  # a NaN value makes it TRUE
    if leaf.only_nan:
        return False  # every non-null value is NaN, which makes it FALSE
    # from here a matching value is a number (NaN makes the test FALSE or is absent): the
    # bounds of the values that are not NaN decide
    op = _NEGATE[e.op] if negated else e.op
    space = _range_space(leaf, e.type)
    if space is None:
        _note(notes, leaf.undecided(e.column, e.type))
        return True
    lo, hi = space
    v = _units(e.value, e.type) if e.type is not None else e.value
    try:
        if op == "=":
            return bool(lo <= v <= hi)
        if op == "!=":
            return not (lo == v == hi)
        if op == "<":
            return bool(lo < v)
        if op == "<=":
            return bool(lo <= v)
        if op == ">":
            return bool(hi > v)
        if op == ">=":
            return bool(hi >= v)
    except TypeError:
        _note(notes, f"statistics of {e.column} are of another type")
        return True  # statistics of an unexpected Python type: nothing is known
    return True


def _step(t: pa.DataType | None) -> Fraction | None:
    """The distance between neighbouring values of an integer-like type in the statistics'
    representation (None: not integer-like)."""
    if t is None:
        return None
    if pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_date(t) \
            or pa.types.is_timestamp(t):
        return Fraction(1)
    if pa.types.is_decimal(t):
        return Fraction(1, 10 ** t.scale)
    return None


def _on_grid(v: Any, step: Fraction) -> Fraction | None:
    """``v`` as an exact Fraction when it is a multiple of ``step``, else None."""
    if isinstance(v, float) or not isinstance(v, (int, Fraction, decimal.Decimal)):
        return None
    if isinstance(v, decimal.Decimal) and not v.is_finite():
        return None
    f = Fraction(v)
    return f if (f / step).denominator == 1 else None


def _in_may(e: In, negated: bool, leaf: _Leaf, notes: list[str] | None) -> bool:
    if not leaf.known:
        _note(notes, f"no statistics for {e.column}")
        return True
    if leaf.all_null:
        return False
    if leaf.may_nan and negated:  # NaN is in no list: NOT IN is TRUE for it
        _note(notes, leaf.nan_note(e.column))
        return True
    if leaf.only_nan:
        return False
    space = _range_space(leaf, e.type)
    if space is None:
        _note(notes, leaf.undecided(e.column, e.type))
        return True
    lo, hi = space
    try:
        values = _sorted_units(tuple(e.values), e.type) if e.type is not None else None
        if values is None:
            return True
        a, b = bisect.bisect_left(values, lo), bisect.bisect_right(values, hi)
        inside = b - a  # literals within [min, max]
        if not negated:
            return inside > 0
        # NOT IN: FALSE for a value only when it equals a literal; prune when every value
        # the range allows is a literal
        if lo == hi:
            return inside == 0
        step = _step(e.type)
        glo = _on_grid(lo, step) if step is not None else None
        ghi = _on_grid(hi, step) if step is not None else None
        if step is None or glo is None or ghi is None:
            return True
        count = (ghi - glo) / step + 1  # values of the type within [min, max]
        return inside < count
    except (TypeError, decimal.InvalidOperation):
        _note(notes, f"statistics of {e.column} are of another type")
        return True


def _effective(e: Expr, negated: bool) -> tuple[Expr, bool]:
    while isinstance(e, Not):
        e, negated = e.item, not negated
    return e, negated


def _and_may(items: Sequence[Expr], negated: bool, ranges: Mapping[str, ColumnRange],
             rows: int, notes: list[str] | None) -> bool:
    """May every item (each negated when ``negated``) be TRUE for one row?"""
    if not all(_may(i, negated, ranges, rows, notes) for i in items):
        return False
    # one row holds one value per column: the comparisons on a column must hold together.
    # A NaN value satisfies no ordering but may satisfy negated ones: the intersection of
    # the bounds is about numbers, and a column that may hold NaN escapes it when NaN
    # satisfies every comparison taken into it
    bounds: dict[str, list[Any]] = {}
    nan_escapes: dict[str, bool] = {}
    for item in items:
        leaf_e, neg = _effective(item, negated)
        if not isinstance(leaf_e, Compare) or leaf_e.column not in ranges:
            continue
        op = _NEGATE[leaf_e.op] if neg else leaf_e.op
        if op == "!=" or _is_nan(leaf_e.value) or leaf_e.type is None:
            continue
        leaf = _Leaf(ranges[leaf_e.column], rows)
        space = _range_space(leaf, leaf_e.type)
        if space is None:
            continue
        v = _units(leaf_e.value, leaf_e.type)
        st = bounds.setdefault(leaf_e.column, [space[0], False, space[1], False, leaf_e.type])
        nan_escapes[leaf_e.column] = nan_escapes.get(leaf_e.column, leaf.may_nan) and \
            _nan_true(leaf_e.op, neg)
        try:
            if op in (">", ">=", "="):
                strict = op == ">"
                if v > st[0] or (v == st[0] and strict):
                    st[0], st[1] = v, strict
            if op in ("<", "<=", "="):
                strict = op == "<"
                if v < st[2] or (v == st[2] and strict):
                    st[2], st[3] = v, strict
        except TypeError:
            bounds.pop(leaf_e.column, None)
    for column, (lo, lo_open, hi, hi_open, t) in bounds.items():
        if nan_escapes.get(column):
            continue  # a NaN value may satisfy all of them
        try:
            if lo > hi or (lo == hi and (lo_open or hi_open)):
                return False
            step = _step(t)
            glo = _on_grid(lo, step) if step is not None else None
            ghi = _on_grid(hi, step) if step is not None else None
            if step is not None and glo is not None and ghi is not None:
                # integer-like: an open bound is the closed bound one step inside
                if (glo + (step if lo_open else 0)) > (ghi - (step if hi_open else 0)):
                    return False
        except (TypeError, decimal.InvalidOperation):
            continue
    return True


def _may(e: Expr, negated: bool, ranges: Mapping[str, ColumnRange], rows: int,
         notes: list[str] | None = None) -> bool:
    """May ``e`` (NOT ``e`` when ``negated``) be TRUE for some row? NOT is pushed down: over
    AND / OR by De Morgan, into a comparison as the opposite comparison (a NaN value, TRUE
    under the negation of an ordering, is taken care of by the leaves). ``notes``: the
    reasons tests were left undecided are appended (those of a subtree that came out False
    are removed again)."""
    e, negated = _effective(e, negated)
    if isinstance(e, Compare):
        leaf = _Leaf(ranges.get(e.column), rows)
        return _cmp_may(e, negated, leaf, notes)
    if isinstance(e, In):
        return _in_may(e, negated, _Leaf(ranges.get(e.column), rows), notes)
    if isinstance(e, IsNull):
        leaf = _Leaf(ranges.get(e.column), rows)
        if not leaf.known:
            _note(notes, f"no statistics for {e.column}")
            return True
        return leaf.nonnull > 0 if negated else leaf.may_null
    conj = isinstance(e, And) != negated  # NOT (a OR b) is (NOT a) AND (NOT b)
    assert isinstance(e, (And, Or))
    mark = len(notes) if notes is not None else 0
    if conj:
        out = _and_may(e.items, negated, ranges, rows, notes)
    else:
        out = any(_may(i, negated, ranges, rows, notes) for i in e.items)
    if not out and notes is not None:
        del notes[mark:]
    return out


def may_match(expr: Expr, ranges: Mapping[str, ColumnRange], rows: int) -> bool:
    """False only when no row of a file of ``rows`` rows whose columns have ``ranges``
    (filter order, see the module docstring) can make the bound ``expr`` TRUE."""
    if rows <= 0:
        return False
    _check_depth(expr)
    return _may(expr, False, ranges, rows)


def why_may_match(expr: Expr, ranges: Mapping[str, ColumnRange], rows: int
                  ) -> tuple[bool, tuple[str, ...]]:
    """:func:`may_match` and, when it is True, why the statistics could not exclude a
    match: the distinct reasons of the tests left undecided, in the order met (``no
    statistics for fare``, ``no bounds for fare``, ``NaN may be present in fare``, ``fare
    holds NaN``, ``statistics of fare are of another type``); empty when the bounds
    themselves allow a match."""
    if rows <= 0:
        return False, ()
    _check_depth(expr)
    notes: list[str] = []
    out = _may(expr, False, ranges, rows, notes)
    return out, (tuple(dict.fromkeys(notes)) if out else ())


def _is_nan_test(column: str, t: pa.DataType) -> Expr:
    """TRUE exactly for a NaN value (NULL for NULL): ``NOT (c <= +inf)``."""
    return Not(Compare(column, "<=", math.inf, t))


def nan_largest(expr: Expr) -> Expr:
    """The bound ``expr`` rewritten so that its IEEE meaning (:func:`to_arrow`) is its
    meaning under Spark's float order, where NaN is larger than every number and equal to
    itself: on float columns ``c > v`` and ``c >= v`` also hold for NaN, and comparisons
    with a NaN literal test for NaN. Every other node keeps its meaning in both orders
    (``-0.0 = 0.0`` in both; NaN in no IN list after binding). Used for the filters Spark
    pushes (spec/prune.md §8.1), so that pruning with NaN-aware statistics stays sound."""
    _check_depth(expr)

    def walk(e: Expr) -> Expr:
        if isinstance(e, Compare) and e.type is not None and pa.types.is_floating(e.type):
            if _is_nan(e.value):
                nan = _is_nan_test(e.column, e.type)
                number = Compare(e.column, "<=", math.inf, e.type)
                return {"=": nan, ">=": nan, "<=": Or((number, nan)), "<": number,
                        "!=": number, ">": And((number, nan))}[e.op]
            if e.op in (">", ">="):
                return Or((e, _is_nan_test(e.column, e.type)))
            return e
        if isinstance(e, Not):
            return Not(walk(e.item))
        if isinstance(e, And):
            return And(tuple(walk(i) for i in e.items))
        if isinstance(e, Or):
            return Or(tuple(walk(i) for i in e.items))
        return e

    return walk(expr)


__all__ = ["MAX_DEPTH", "MAX_TEXT", "MAX_TREE_DEPTH", "NAN", "OPS", "And", "Compare", "Expr", "In",
           "IsNull", "Not", "Or", "bind", "columns", "may_match", "nan_largest", "parse",
           "to_arrow", "to_text", "why_may_match"]
