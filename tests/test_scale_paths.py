"""Column-wise paths of issue 12 equal the per-record paths they replace, byte for byte.

- indexed Avro blocks built from Arrow (``prepare_avro_arrow``, ``append_avro_arrow``) equal
  those built from per-record dicts (``prepare_avro``, ``append_avro``);
- the record split of Avro content and the key-only decoder give what the per-record loops gave.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.avroschema import arrow_to_avro_schema
from morlog.logformat.blocks import RECORD_KEY_FIELD, arrow_to_records, records_to_arrow
from morlog.logformat.errors import MorlogError
from morlog.logformat.indexed_block import PreparedBlock, prepare_avro, prepare_avro_arrow
from morlog.writers.indexed import IndexedLogWriter

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
