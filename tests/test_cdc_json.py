"""The JSON images of the CDC query (``morlog.readers.changes.json_values``), column-wise for
every type: binary as base64 strings, maps as objects, decimals as Java's
``BigDecimal.toString`` writes them; checked against Python's ``json``/``base64``/``Decimal``
value by value, on sliced arrays too."""

from __future__ import annotations

import base64
import decimal
import json
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from morlog.readers.changes import json_values


def _oracle(v: Any, t: pa.DataType) -> str:
    if v is None:
        return "null"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return json.dumps(base64.b64encode(v).decode("ascii"))
    if pa.types.is_decimal(t):
        return str(v)
    if pa.types.is_map(t):
        return "{" + ",".join(json.dumps(str(k), ensure_ascii=False) + ":" + _oracle(x, t.item_type)
                              for k, x in v) + "}"
    if pa.types.is_integer(t):
        return str(v)
    raise AssertionError(t)


def _check(arr: pa.Array, start: int, stop: int) -> None:
    part = arr.slice(start, max(stop - start, 0))
    got = json_values(part).to_pylist()
    assert got == [_oracle(v, part.type) for v in part.to_pylist()]
    for text in got:
        json.loads(text)  # each is valid JSON


slices = st.tuples(st.integers(0, 40), st.integers(0, 40))


@settings(max_examples=150, deadline=None)
@given(values=st.lists(st.none() | st.binary(max_size=70), max_size=40), cut=slices,
       large=st.booleans())
def test_binary_values_are_base64_strings(values: list[bytes | None],
                                          cut: tuple[int, int], large: bool) -> None:
    _check(pa.array(values, pa.large_binary() if large else pa.binary()), *cut)


@settings(max_examples=50, deadline=None)
@given(values=st.lists(st.none() | st.binary(min_size=5, max_size=5), max_size=20), cut=slices)
def test_fixed_size_binary_values(values: list[bytes | None], cut: tuple[int, int]) -> None:
    _check(pa.array(values, pa.binary(5)), *cut)


@settings(max_examples=150, deadline=None)
@given(scale=st.integers(0, 20), data=st.data(), cut=slices)
def test_decimals_are_written_as_java_does(scale: int, data: st.DataObject,
                                           cut: tuple[int, int]) -> None:
    precision = data.draw(st.integers(max(scale, 1), 38))
    unscaled = st.integers(-(10 ** precision - 1), 10 ** precision - 1)
    values = data.draw(st.lists(st.none() | unscaled.map(
        lambda u: decimal.Decimal(u).scaleb(-scale, decimal.Context(prec=80))), max_size=30))
    _check(pa.array(values, pa.decimal128(precision, scale)), *cut)


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.none() | st.lists(st.tuples(st.text(max_size=6),
                                                       st.none() | st.integers(-9, 99)),
                                             max_size=4), max_size=25), cut=slices)
def test_maps_are_objects(values: list[list[tuple[str, int | None]] | None],
                          cut: tuple[int, int]) -> None:
    _check(pa.array(values, pa.map_(pa.string(), pa.int64())), *cut)


def test_a_null_typed_column_is_null_and_an_unknown_type_is_typed() -> None:
    assert json_values(pa.nulls(3)).to_pylist() == ["null"] * 3
    import pytest

    from morlog.logformat.errors import ContentError

    with pytest.raises(ContentError):
        json_values(pa.array([1, 2], pa.duration("s")))
