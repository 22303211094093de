"""The CDC block vectors (spec/cdc.md §5, spec/vectors/cdc): every byte of a CDC_DATA block
of each logging mode, encoded from the vector's rows and decoded back."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from morlog.logformat.cdc import LOGGING_MODES, OP_KEY_SCHEMA_TEXT, cdc_schema
from morlog.logformat.constants import BlockType, HeaderKey
from morlog.readers.logfile import LogFileReader
from morlog.readers.storage import BytesSource

HERE = Path(__file__).resolve().parent.parent / "spec" / "vectors" / "cdc"
DATA = json.loads((HERE / "cdc.json").read_text())


def _regenerate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cdc_vectors_regenerate",
                                                  HERE / "regenerate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REGEN = _regenerate()


def _by_mode(mode: str) -> dict[str, Any]:
    return next(v for v in DATA["vectors"] if v["mode"] == mode)


@pytest.mark.parametrize("mode", LOGGING_MODES)
def test_the_block_bytes_are_the_vectors(mode: str) -> None:
    assert REGEN.vector(mode) == _by_mode(mode)


@pytest.mark.parametrize("mode", LOGGING_MODES)
def test_the_vector_decodes_to_its_records(mode: str) -> None:
    v = _by_mode(mode)
    data = bytes.fromhex(v["block_hex"])
    with LogFileReader(BytesSource(data, "vector")) as r:
        blocks = list(r.blocks())
    assert [b.block_type for b in blocks] == [BlockType.CDC_DATA]
    b = blocks[0]
    assert list(b.header) == [(HeaderKey.INSTANT_TIME, v["instant"].encode()),
                              (HeaderKey.SCHEMA, v["schema"].encode())]
    assert b.to_arrow().to_pylist() == v["records"] == REGEN.rows(mode).to_pylist()
    assert b.records() == v["records"]  # the record-at-a-time decoder agrees


def test_the_schemas_are_hudis() -> None:
    """OP_KEY_ONLY: HoodieCDCUtils.CDC_SCHEMA_OP_AND_RECORDKEY_STRING verbatim; the others:
    record CDC in the table's namespace, op/record_key or op/ts_ms nullable strings, the
    images the table record (defined once, then named)."""
    table = DATA["table_schema"]
    assert cdc_schema("op_key_only", table) == OP_KEY_SCHEMA_TEXT
    before = cdc_schema("DATA_BEFORE", table)
    assert isinstance(before, dict)
    assert [f["name"] for f in before["fields"]] == ["op", "record_key", "before"]
    assert before["name"] == "CDC" and before["namespace"] == "hoodie.rides"
    both = cdc_schema("data_before_after", table)
    assert isinstance(both, dict)
    assert [f["name"] for f in both["fields"]] == ["op", "ts_ms", "before", "after"]
    assert both["fields"][2]["type"] == ["null", table]
    assert both["fields"][3]["type"] == ["null", "hoodie.rides.rides_record"]
