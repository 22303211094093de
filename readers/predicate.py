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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

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
    raise NotImplementedError  # filled in by the predicate work (issue 14)


def bind(expr: Expr, schema: pa.Schema) -> Expr:
    """``expr`` with every column checked against ``schema`` and every literal converted to
    a value of that column's type; ``UsageError`` naming the column or literal otherwise."""
    raise NotImplementedError


def columns(expr: Expr) -> set[str]:
    """The columns ``expr`` reads."""
    raise NotImplementedError


def to_arrow(expr: Expr) -> pc.Expression:
    """The row filter of a bound ``expr`` (rows where it is TRUE are kept)."""
    raise NotImplementedError


def may_match(expr: Expr, ranges: Mapping[str, ColumnRange], rows: int) -> bool:
    """False only when no row of a file of ``rows`` rows whose columns have ``ranges``
    (filter order, see the module docstring) can make the bound ``expr`` TRUE."""
    raise NotImplementedError


def to_text(expr: Expr) -> str:
    """``expr`` as text that :func:`parse` reads back to the same tree."""
    raise NotImplementedError


__all__ = ["OPS", "And", "Compare", "Expr", "In", "IsNull", "Not", "Or", "bind", "columns",
           "may_match", "parse", "to_arrow", "to_text"]
