"""Column-wise paths of issue 12 equal the per-record paths they replace, byte for byte.

- indexed Avro blocks built from Arrow (``prepare_avro_arrow``, ``append_avro_arrow``) equal
  those built from per-record dicts (``prepare_avro``, ``append_avro``);
- the record split of Avro content and the key-only decoder give what the per-record loops gave.
"""

from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.compat.recompute import KeyDecoder, avro_block_keys
from morlog.logformat import HeaderKey
from morlog.logformat.avro_content import decode_avro_content, decode_records
from morlog.logformat.avroschema import arrow_to_avro_schema
from morlog.logformat.blocks import (
    RECORD_KEY_FIELD,
    arrow_to_records,
    avro_data_block,
    records_to_arrow,
)
from morlog.logformat.errors import ContentError, MorlogError
from morlog.logformat.indexed_block import PreparedBlock, prepare_avro, prepare_avro_arrow
from morlog.writers.core.indexed import IndexedLogWriter

from . import hudi_fixtures as hf
from .test_avro_columnar import _Names, _trips, records

BASE = "20250101000000000"

KEYS = st.text(alphabet=st.sampled_from("ab\u00e9\ue000\U0001f600z0"), min_size=0, max_size=4)


@st.composite
def keyed_tables(draw: st.DrawFn) -> tuple[str, pa.Table]:
    """A random record schema with a string key field at a random position, and rows."""
    schema, values = draw(records(_Names(), 0, False))
    at = draw(st.integers(0, len(schema["fields"])))
    schema["fields"].insert(at, {"name": RECORD_KEY_FIELD, "type": "string"})
    rows = draw(st.lists(values, min_size=1, max_size=12))
    keys = draw(st.lists(KEYS, min_size=len(rows), max_size=len(rows)))
    for r, k in zip(rows, keys, strict=True):
        r[RECORD_KEY_FIELD] = k
    text = json.dumps(schema)
    return text, records_to_arrow(rows, text)


def _same_prepared(a: PreparedBlock, b: PreparedBlock) -> None:
    assert a.block_type == b.block_type and a.instant == b.instant
    assert a.header == b.header
    assert a.prefix == b.prefix
    assert a.own.sections() == b.own.sections()
    assert a.own.range == b.own.range
    assert (a.own.hashes == b.own.hashes).all()


def _write_both(table: pa.Table, schema: str, batches: int = 2) -> tuple[bytes, bytes]:
    out = []
    for arrow in (False, True):
        with tempfile.TemporaryDirectory() as d:
            w = IndexedLogWriter(d, "fg-0", BASE, write_token="0-1-1", checkpoint_every=2)
            for i in range(batches):
                inst = f"2025010200{i:07d}"
                if arrow:
                    w.append_avro_arrow(table, schema, inst)
                else:
                    w.append_avro(arrow_to_records(table), schema, inst)
            (f,) = Path(d).iterdir()
            out.append(f.read_bytes())
    return out[0], out[1]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keyed_tables())
def test_prepare_avro_arrow_equals_the_dict_path(case: tuple[str, pa.Table]) -> None:
    schema, table = case
    slow = prepare_avro(arrow_to_records(table), schema, "1", key_field=RECORD_KEY_FIELD)
    fast = prepare_avro_arrow(table, schema, "1", key_field=RECORD_KEY_FIELD)
    _same_prepared(slow, fast)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keyed_tables())
def test_indexed_log_files_are_byte_identical(case: tuple[str, pa.Table]) -> None:
    schema, table = case
    slow, fast = _write_both(table, schema, batches=3)
    assert slow == fast


@pytest.mark.parametrize("n", [1, 7, 5000])
def test_trips_blocks_are_byte_identical(n: int) -> None:
    table = _trips(n).drop_columns([RECORD_KEY_FIELD]).append_column(
        RECORD_KEY_FIELD, pa.array([f"k{i % 4000:05d}" for i in range(n)], pa.large_string()))
    table = pa.concat_tables([table.slice(0, n // 2), table.slice(n // 2)])  # chunked

    schema = json.dumps(arrow_to_avro_schema(table.schema), separators=(",", ":"))
    slow, fast = _write_both(table, schema)
    assert slow == fast


def _error(fn: Any) -> tuple[type, str]:
    try:
        fn()
    except (MorlogError, pa.ArrowException, TypeError, ValueError) as exc:
        return type(exc), str(exc)
    raise AssertionError("no error")


@pytest.mark.parametrize("keys", [[], ["a", None], [1, 2]])
def test_bad_keys_fail_as_on_the_dict_path(keys: list[Any]) -> None:
    table = pa.table({RECORD_KEY_FIELD: pa.array(keys), "v": pa.array(range(len(keys)),
                                                                      pa.int64())})
    schema = json.dumps({"type": "record", "name": "r", "fields": [
        {"name": RECORD_KEY_FIELD, "type": ["null", "string", "long"]},
        {"name": "v", "type": "long"}]})
    assert _error(lambda: prepare_avro_arrow(table, schema, "1", key_field=RECORD_KEY_FIELD)) \
        == _error(lambda: prepare_avro(arrow_to_records(table), schema, "1",
                                       key_field=RECORD_KEY_FIELD))


def test_missing_key_column_is_a_usage_error() -> None:
    table = pa.table({"v": pa.array([1], pa.int64())})
    schema = json.dumps({"type": "record", "name": "r", "fields": [
        {"name": "v", "type": "long"}]})
    assert _error(lambda: prepare_avro_arrow(table, schema, "1", key_field=RECORD_KEY_FIELD)) \
        == _error(lambda: prepare_avro(arrow_to_records(table), schema, "1",
                                       key_field=RECORD_KEY_FIELD))


# --- the record split and the key-only decoder ----------------------------------------------


def _old_split(content: bytes) -> tuple[tuple[bytes, ...], int]:
    """The per-record split as it was (framing checks aside: the inputs here are valid)."""
    (count,) = struct.unpack_from(">i", content, 4)
    pos, out = 8, []
    for _ in range(count):
        (length,) = struct.unpack_from(">i", content, pos)
        out.append(content[pos + 4: pos + 4 + length])
        pos += 4 + length
    return tuple(out), pos


def _outcome(fn: Any) -> Any:
    try:
        return ("ok", fn())
    except (MorlogError, IndexError, UnicodeDecodeError, ValueError) as exc:
        return ("error", type(exc).__name__)


def _keys_both(header: Any, content: bytes) -> tuple[Any, Any]:
    """Keys by the column-wise decoder and by the per-record one (as before)."""
    def old() -> list[str | None]:
        framing = decode_avro_content(content)
        try:
            return KeyDecoder(header.get(HeaderKey.SCHEMA), RECORD_KEY_FIELD).keys(
                framing.records)
        except (IndexError, UnicodeDecodeError, ValueError):
            decode_records(content, header.get(HeaderKey.SCHEMA))
            raise ContentError("key field does not decode") from None
    return (_outcome(lambda: avro_block_keys(header, content)), _outcome(old))


@st.composite
def key_blocks(draw: st.DrawFn) -> tuple[Any, bytes]:
    schema, table = draw(keyed_tables())
    if draw(st.booleans()):  # a nullable key, some nulls
        s = json.loads(schema)
        for f in s["fields"]:
            if f["name"] == RECORD_KEY_FIELD:
                f["type"] = draw(st.sampled_from([["null", "string"], ["string", "null"]]))
        schema = json.dumps(s)
        rows = arrow_to_records(table)
        for r in rows:
            if draw(st.booleans()):
                r[RECORD_KEY_FIELD] = None
        table = records_to_arrow(rows, schema)
    frame = avro_data_block(arrow_to_records(table), schema, "1")
    content = bytes(frame.content) + draw(st.binary(max_size=8))
    if draw(st.booleans()) and len(content) > 8:  # damage a byte after the header
        at = draw(st.integers(8, len(content) - 1))
        content = content[:at] + bytes([draw(st.integers(0, 255))]) + content[at + 1:]
    return frame.header, content


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key_blocks())
def test_split_and_keys_equal_the_per_record_loops(case: tuple[Any, bytes]) -> None:
    header, content = case
    try:
        framing = decode_avro_content(content)
    except MorlogError:
        return
    records, end = _old_split(content)
    assert (framing.records, framing.end, len(framing)) == (records, end, len(records))
    new, old = _keys_both(header, content)
    assert new == old


@hf.requires_fixtures
def test_fixture_blocks_split_and_keys_as_before() -> None:
    from .test_avro_columnar import _fixture_avro_blocks
    checked = 0
    for name, i, content, schema in _fixture_avro_blocks():
        framing = decode_avro_content(content)
        assert (framing.records, framing.end) == _old_split(content), (name, i)
        names = [f["name"] for f in json.loads(schema)["fields"]]
        if RECORD_KEY_FIELD in names:
            header = avro_data_block([], schema, "1").header
            new, old = _keys_both(header, content)
            assert new == old, (name, i)
            checked += 1
    assert checked


@settings(max_examples=200, deadline=None)
@given(st.lists(KEYS.filter(bool), min_size=0, max_size=60), st.booleans())
def test_key_groups_are_exact(keys: list[str], collide: bool) -> None:
    """The merge's grouping of keys by XXH64 puts two rows in one group exactly when their
    keys are equal, a hash shared by different keys included (then dictionary_encode)."""
    from unittest import mock

    import numpy as np

    import morlog.logformat.xxh64 as xxh64

    arr = pa.array(keys, pa.string())
    if collide:  # every key hashes the same
        with mock.patch.object(xxh64, "xxh64_batch",
                               lambda b: np.zeros(len(b), dtype=np.uint64)):
            g = xxh64.key_groups(arr)
    else:
        g = xxh64.key_groups(arr)
    assert len(g) == len(keys)
    first: dict[str, int] = {}
    for k, gi in zip(keys, g.tolist(), strict=True):
        assert first.setdefault(k, gi) == gi
    assert len(set(g.tolist())) == len(set(keys))


def test_distinct_batch_keys_by_hash() -> None:
    """The writer's batch uniqueness check by XXH64: exact with colliding hashes too."""
    from unittest import mock

    import numpy as np

    import morlog.logformat.xxh64 as xxh64

    assert xxh64.all_distinct(pa.array(["a", "b", "c"]))
    assert not xxh64.all_distinct(pa.array(["a", "b", "a"]))
    with mock.patch.object(xxh64, "xxh64_batch", lambda b: np.zeros(len(b), dtype=np.uint64)):
        assert xxh64.all_distinct(pa.array(["a", "b", "c"]))
        assert not xxh64.all_distinct(pa.array(["a", "b", "b"]))
