"""Delete block content built column-wise equals the per-record encoding, for every ordering
column type a writer meets (spec/format.md §5.2)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from morlog.logformat.delete_content import (
    DeleteRecord,
    OrderingValue,
    decode_delete_content,
    encode_delete_columns,
    encode_delete_content,
)

_TEXT = st.text(max_size=12)


def _per_record(keys: list[str], parts: list[str], ords: list[object] | None) -> bytes:
    return encode_delete_content([
        DeleteRecord(k, p, OrderingValue.natural() if ords is None or ords[i] is None
                     else OrderingValue.infer(ords[i]))
        for i, (k, p) in enumerate(zip(keys, parts, strict=True))])


_ORDERINGS = st.one_of(
    st.none(),
    st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))).map(
        lambda v: pa.array(v, pa.int64())),
    st.lists(st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1))).map(
        lambda v: pa.array(v, pa.int32())),
    st.lists(st.one_of(st.none(), st.booleans())).map(lambda v: pa.array(v, pa.bool_())),
    st.lists(st.floats(allow_nan=False)).map(lambda v: pa.array(v, pa.float64())),
    st.lists(st.one_of(st.none(), st.floats(allow_nan=False, width=32))).map(
        lambda v: pa.array(v, pa.float32())),
    st.lists(st.one_of(st.none(), _TEXT)).map(lambda v: pa.array(v, pa.string())),
    st.lists(st.one_of(st.none(), st.datetimes(min_value=dt.datetime(1970, 1, 1)))).map(
        lambda v: pa.array(v, pa.timestamp("us"))),
)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), ordering=_ORDERINGS)
def test_column_wise_delete_content_is_the_per_record_encoding(
        data: st.DataObject, ordering: pa.Array | None) -> None:
    n = len(ordering) if ordering is not None else data.draw(st.integers(0, 20))
    keys = data.draw(st.lists(_TEXT, min_size=n, max_size=n))
    parts = data.draw(st.lists(_TEXT, min_size=n, max_size=n))
    got = encode_delete_columns(pa.array(keys, pa.string()), pa.array(parts, pa.string()),
                                ordering)
    assert got == _per_record(keys, parts,
                              None if ordering is None else ordering.to_pylist())
    assert [r.record_key for r in decode_delete_content(got).records] == keys


def test_lengths_must_agree() -> None:
    from morlog.logformat.errors import UsageError

    with pytest.raises(UsageError, match="one partition"):
        encode_delete_columns(pa.array(["a"]), pa.array(["p", "q"]))


@pytest.mark.parametrize("ordering", [
    None, pa.array([1, None, 3], pa.int64()), pa.array([1, 2, 3], pa.uint32()),
    pa.array([True, None, False]), pa.array([0.5, 1.5, -2.0]), pa.array(["a", "b", "c"])])
def test_common_ordering_types_take_no_per_record_path(
        monkeypatch: pytest.MonkeyPatch, ordering: pa.Array | None) -> None:
    from morlog.logformat import delete_content

    def per_record(*_a: object) -> bytes:
        raise AssertionError("per-record path taken")

    keys, parts = pa.array(["k1", "k2", "k3"]), pa.array(["p", "p", "q"])
    expected = _per_record(keys.to_pylist(), parts.to_pylist(),
                           None if ordering is None else ordering.to_pylist())
    monkeypatch.setattr(delete_content, "_encode_rows", per_record)
    assert encode_delete_columns(keys, parts, ordering) == expected


def test_no_ordering_writes_null_ordering_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """Several ordering fields: every delete has a null ordering value (branch 0)."""
    from morlog.logformat import delete_content

    keys, parts = pa.array(["a", "b"]), pa.array(["p", "q"])
    expected = encode_delete_content([DeleteRecord("a", "p", None), DeleteRecord("b", "q", None)])
    monkeypatch.setattr(delete_content, "_encode_rows", lambda *a, **k: b"")
    got = encode_delete_columns(keys, parts, pa.array([1, 2]), no_ordering=True)
    assert got == expected
    assert [r.ordering_value for r in decode_delete_content(got).records] == [None, None]
