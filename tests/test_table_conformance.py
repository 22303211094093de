"""Snapshots of the real Hudi tables equal hudi-rs, at the latest and at every completed instant.

Known hudi-rs gaps (facts §12) are listed in ``HUDI_RS_KNOWN_GAPS`` with the reason; cases in it
are checked against Hudi's documented semantics instead. None of the fixture tables hits one
today (no log compaction, only IntWrapper(0) deletes), so the list is empty and a test keeps it
honest: an entry that stops differing must be removed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from morlog.readers.table import Table

from .hudi_fixtures import ROOT, requires_fixtures, tables

pytestmark = [requires_fixtures, pytest.mark.hudi_rs]

#: (table name, instant or None) -> why hudi-rs is wrong there
HUDI_RS_KNOWN_GAPS: dict[tuple[str, str | None], str] = {}


def _rows(t: pa.Table | list[pa.RecordBatch], key: str) -> list[dict[str, Any]]:
    if isinstance(t, list):
        t = pa.Table.from_batches(t) if t else pa.table({})
    return sorted(t.to_pylist(), key=lambda r: r[key]) if t.num_rows else []


def _cases() -> list[Any]:
    out = []
    for path in tables():
        t = Table(str(path))
        for inst in [None] + [i.requested for i in t.timeline.completed()]:
            out.append(pytest.param(path, inst, id=f"{path.name}@{inst or 'latest'}"))
    return out


@pytest.mark.parametrize("path, as_of", _cases())
def test_snapshot_equals_hudi_rs(path: Path, as_of: str | None) -> None:
    import hudi
    from hudi import HudiReadOptions

    table = Table(str(path))
    mine = _rows(table.read(as_of), "_hoodie_record_key")
    ht = hudi.HudiTableBuilder.from_base_uri(str(path)).build()
    batches = ht.read(HudiReadOptions().with_as_of_timestamp(as_of)) if as_of else ht.read()
    theirs = _rows(batches, "_hoodie_record_key")
    gap = HUDI_RS_KNOWN_GAPS.get((path.name, as_of))
    if gap is None:
        assert mine == theirs
    else:
        assert mine != theirs, f"known gap no longer differs, remove it: {gap}"


def test_fixture_tables_are_all_covered() -> None:
    names = {p.name for p in tables()}
    assert {"v6_trips_8i1u", "v6_nonpartitioned_rollback", "v9_txns_simple_meta",
            "v9_txns_simple_nometa"} <= names
    assert ROOT is not None


def test_projection_and_slices() -> None:
    path = next(p for p in tables() if p.name == "v9_txns_simple_nometa")
    table = Table(str(path))
    full = table.read()
    proj = table.read(columns=["txn_id", "amount"])
    assert proj.column_names == ["txn_id", "amount"]
    assert sorted(proj.to_pylist(), key=lambda r: r["txn_id"]) == sorted(
        full.select(["txn_id", "amount"]).to_pylist(), key=lambda r: r["txn_id"])
    slices = table.file_slices()
    assert {s.partition for s in slices} == {"region=apac", "region=eu", "region=us"}
    # the replace commit's file groups are gone; compaction started new slices
    assert all(s.base_file is not None for s in slices)
    assert table.config.merge_mode == "EVENT_TIME_ORDERING"
    assert table.config.ordering_fields == ["txn_ts"]


def test_v6_rollback_table_drops_the_rolled_back_block() -> None:
    path = next(p for p in tables() if p.name == "v6_nonpartitioned_rollback")
    table = Table(str(path))
    (s,) = table.file_slices()
    assert [n.split(".log.")[1][:1] for n in s.log_files] == ["1", "2", "3"]
    rows = table.read().to_pylist()
    assert len(rows) == 3
    # the rolled-back instant's data never shows, at any instant
    rolled_back = "20250126040826878"
    assert all(r["_hoodie_commit_time"] != rolled_back for r in rows)
