"""Regenerate the CDC block vectors (spec/cdc.md §5): ``python spec/vectors/cdc/regenerate.py``.

One CDC_DATA block per supplemental logging mode, for a table of record
``hoodie.rides.rides_record`` {uuid string, ts long, fare [null, double]}: an insert, an
update and a delete at instant 20250101000000000. ``tests/test_cdc_vectors.py`` encodes the
rows again and compares every byte, and decodes the bytes back to the rows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from morlog.logformat.cdc import (
    DATA_BEFORE,
    DATA_BEFORE_AFTER,
    LOGGING_MODES,
    OP_KEY_ONLY,
    cdc_block,
    cdc_schema,
)
from morlog.logformat.framing import encode_block

HERE = Path(__file__).resolve().parent
INSTANT = "20250101000000000"
TABLE_SCHEMA = {"type": "record", "name": "rides_record", "namespace": "hoodie.rides",
                "fields": [{"name": "uuid", "type": "string"}, {"name": "ts", "type": "long"},
                           {"name": "fare", "type": ["null", "double"], "default": None}]}
IMAGE = pa.struct([pa.field("uuid", pa.string(), nullable=False),
                   pa.field("ts", pa.int64(), nullable=False), ("fare", pa.float64())])
OPS = ["i", "u", "d"]
KEYS = ["a", "b", "c"]
BEFORE = [None, {"uuid": "b", "ts": 1, "fare": 20.0}, {"uuid": "c", "ts": 1, "fare": None}]
AFTER = [{"uuid": "a", "ts": 2, "fare": 10.5}, {"uuid": "b", "ts": 2, "fare": 21.0}, None]


def rows(mode: str) -> pa.Table:
    cols: dict[str, pa.Array] = {"op": pa.array(OPS)}
    if mode == DATA_BEFORE_AFTER:
        cols["ts_ms"] = pa.array([INSTANT] * 3)
        cols["before"] = pa.array(BEFORE, IMAGE)
        cols["after"] = pa.array(AFTER, IMAGE)
    else:
        cols["record_key"] = pa.array(KEYS)
        if mode == DATA_BEFORE:
            cols["before"] = pa.array(BEFORE, IMAGE)
    return pa.table(cols)


def vector(mode: str) -> dict[str, object]:
    schema = cdc_schema(mode, TABLE_SCHEMA)
    text = schema if isinstance(schema, str) else json.dumps(schema, separators=(",", ":"))
    block = encode_block(cdc_block(rows(mode), schema, INSTANT))
    return {"mode": mode, "instant": INSTANT, "schema": text,
            "records": rows(mode).to_pylist(), "block_hex": block.hex()}


def main() -> None:
    out = {"description": "one CDC_DATA block per logging mode (spec/cdc.md §5)",
           "table_schema": TABLE_SCHEMA, "vectors": [vector(m) for m in LOGGING_MODES]}
    assert [v["mode"] for v in out["vectors"]] == [OP_KEY_ONLY, DATA_BEFORE,  # type: ignore
                                                   DATA_BEFORE_AFTER]
    (HERE / "cdc.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
