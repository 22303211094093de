"""Sample schemas, records and log files built with morlog's own writer API (test data)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from morlog.logformat import DeleteRecord, OrderingValue, encode_block
from morlog.logformat.avroschema import avro_to_arrow_schema
from morlog.logformat.blocks import (
    META_FIELDS,
    avro_data_block,
    delete_block,
    parquet_data_block,
    rollback_block,
)
from morlog.logformat.framing import BlockFrame

SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "sample_record",
    "namespace": "hoodie.sample",
    "fields": [{"name": f, "type": ["null", "string"], "default": None} for f in META_FIELDS]
    + [
        {"name": "id", "type": "string"},
        {"name": "ts", "type": "long"},
        {"name": "amount", "type": ["null", "double"], "default": None},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}


def record(key: str, instant: str, ts: int, amount: float | None = 1.0,
           note: str | None = "n", seq: int = 0, file_id: str = "fg-0") -> dict[str, Any]:
    return {
        "_hoodie_commit_time": instant,
        "_hoodie_commit_seqno": f"{instant}_0_{seq}",
        "_hoodie_record_key": key,
        "_hoodie_partition_path": "p",
        "_hoodie_file_name": file_id,
        "id": key,
        "ts": ts,
        "amount": amount,
        "note": note,
    }


def arrow_schema() -> pa.Schema:
    return avro_to_arrow_schema(SCHEMA)


def sample_frames() -> list[BlockFrame]:
    """One block of every kind the writer makes, with a few records each."""
    i1, i2, i3, i4, r5 = (f"2025010100000000{i}" for i in range(1, 6))
    return [
        avro_data_block([record(f"k{i}", i1, i, seq=i) for i in range(6)], SCHEMA, i1),
        parquet_data_block(
            pa.Table.from_pylist([record(f"k{i}", i2, 10 + i) for i in (1, 7)],
                                 schema=arrow_schema()),
            i2, schema=SCHEMA),
        delete_block([DeleteRecord("k2", "p", OrderingValue.natural()),
                      DeleteRecord("k3", "p", OrderingValue("long", 99))], i3, schema=SCHEMA),
        avro_data_block([record("k4", i4, 40, note="é✓")], SCHEMA, i4),
        rollback_block(r5, i4),
    ]


def sample_file() -> tuple[bytes, list[tuple[int, int, int]]]:
    """Bytes of a sample log file and its blocks as (offset, size, type)."""
    parts = [encode_block(f) for f in sample_frames()]
    layout = []
    pos = 0
    for f, p in zip(sample_frames(), parts, strict=True):
        layout.append((pos, len(p), f.block_type))
        pos += len(p)
    return b"".join(parts), layout



def next_block_both_ways(d: Any, make: Any, write: Any) -> Any:
    """The next block of the slice in directory ``d`` (a ``Path``), written by the writer
    ``make(directory)`` returns with ``write(writer)``: once on a copy where the writer
    takes its state from the stored tails, once on a copy where it must scan every block.
    Both hold the same blocks, continue from the same checkpoint (a ref's file index is its
    directory's; writers re-index by name) and leave byte-identical files. Returns the
    writer from the tails."""
    import dataclasses
    import os
    import shutil

    import pytest

    import morlog.writers.core.indexed as indexed_mod

    fast_dir, scan_dir = d.parent / f"{d.name}-fast", d.parent / f"{d.name}-scan"
    shutil.copytree(d, fast_dir)
    shutil.copytree(d, scan_dir)
    fast = make(fast_dir)
    write(fast)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(indexed_mod, "_state_from_tail", lambda *a, **k: None)
        scan = make(scan_dir)
        write(scan)
        assert [(e.file_name, dataclasses.replace(e.ref, file=0))
                for e in fast.state.entries] == [
            (e.file_name, dataclasses.replace(e.ref, file=0)) for e in scan.state.entries]
        assert fast.state.checkpoint_at == scan.state.checkpoint_at
    names = sorted(os.listdir(fast_dir))
    assert names == sorted(os.listdir(scan_dir))
    for n in names:
        assert (fast_dir / n).read_bytes() == (scan_dir / n).read_bytes(), n
    return fast
