"""A requested compaction whose plan does not decode (issue 23): writers go on without it,
warning with the file's name, and ``repair --apply`` removes it (spec/services.md §4.6)."""

from __future__ import annotations

import glob
import os
import warnings
from pathlib import Path

import pyarrow as pa
import pytest

from morlog.logformat.errors import ContentError, MorlogWarning
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig
from morlog.writers.repair import UNREADABLE_PLAN, repair
from morlog.writers.services import cleaning, compaction, logcompaction

SCHEMA = pa.schema([("id", pa.string()), ("p", pa.string()), ("v", pa.int64())])


def _table(path: Path, version: int) -> MorTable:
    t = MorTable.create(str(path), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="v", table_version=version)
    for i in range(3):
        t.upsert(pa.table({"id": [f"k{j}" for j in range(i, i + 4)],
                           "p": ["x", "y", "x", "y"], "v": [i] * 4}))
    return t


def _garble(path: Path, action: str, seed: int = 0) -> Path:
    found = glob.glob(str(path / ".hoodie" / "**" / f"*.{action}.requested"), recursive=True)
    assert len(found) == 1
    p = Path(found[0])
    p.write_bytes(os.urandom(64 + seed) if seed else b"\x00garbage" * 40)
    return p


def _rows(path: Path) -> dict[tuple[str, str], int]:
    got = Table(str(path)).read()
    return dict(zip(zip(got.column("p").to_pylist(), got.column("id").to_pylist(),
                        strict=True), got.column("v").to_pylist(), strict=True))


@pytest.mark.parametrize("version", [6, 8, 9])
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_garbage_compaction_plan_does_not_stop_writes(tmp_path: Path, version: int,
                                                      seed: int) -> None:
    path = tmp_path / "t"
    t = _table(path, version)
    compaction.schedule_compaction(t, force=True)
    bad = _garble(path, "compaction", seed)
    with pytest.warns(MorlogWarning, match=str(bad)):
        t.upsert(pa.table({"id": ["k1", "n1"], "p": ["x", "z"], "v": [9, 1]}))
    with pytest.warns(MorlogWarning, match=str(bad)):
        t.delete(pa.table({"id": ["k2"], "p": ["x"]}))
    with pytest.warns(MorlogWarning, match=str(bad)):
        compaction.compact(t)  # the other slices are compacted; the bad plan is skipped
    with pytest.warns(MorlogWarning, match=str(bad)):
        cleaning.clean(t)
    rows = _rows(path)
    assert rows[("x", "k1")] == 9 and rows[("z", "n1")] == 1 and ("x", "k2") not in rows
    # running it names the file
    with pytest.raises(ContentError, match=str(bad)):
        compaction.run_compaction(t, bad.name.split(".")[0])
    plan = repair(str(path)).plan
    assert [(f.kind, f.path, f.fixable) for f in plan.findings] == [
        (UNREADABLE_PLAN, str(bad), True)]
    done = repair(str(path), apply=True)
    assert [f.kind for f in done.done] == [UNREADABLE_PLAN] and not bad.exists()
    assert repair(str(path)).plan.findings == []
    with warnings.catch_warnings():
        warnings.simplefilter("error", MorlogWarning)
        t.upsert(pa.table({"id": ["k3"], "p": ["y"], "v": [5]}))
        compaction.compact(t)
    rows[("y", "k3")] = 5
    assert _rows(path) == rows


def test_v6_plan_needed_by_its_logs_is_refused_naming_the_file(tmp_path: Path) -> None:
    """Table version 6: logs written into the slice a pending compaction starts are named
    after it; without the plan their slice is unknown, so a write to that group is refused
    (the plan file named) and repair reports the plan without deleting it."""
    path = tmp_path / "t"
    t = _table(path, 6)
    instant = compaction.schedule_compaction(t, force=True)
    t.upsert(pa.table({"id": ["k1"], "p": ["x"], "v": [7]}))  # into the compaction's slice
    assert instant is not None
    assert any(".log." in n and instant in n for n in os.listdir(path / "x"))
    bad = _garble(path, "compaction")
    with pytest.raises(ContentError, match=str(bad)):
        t.upsert(pa.table({"id": ["k1"], "p": ["x"], "v": [8]}))
    found = [f for f in repair(str(path)).plan.findings if f.kind == UNREADABLE_PLAN]
    assert len(found) == 1 and not found[0].fixable and "carries its instant" in found[0].reason
    repair(str(path), apply=True)
    assert bad.exists()


def test_inflight_garbage_plan_is_not_deleted(tmp_path: Path) -> None:
    """An inflight compaction may have written base files: repair reports it without
    deleting it, and writers refuse naming the plan file."""
    path = tmp_path / "t"
    t = _table(path, 9)
    instant = compaction.schedule_compaction(t, force=True)
    assert instant is not None
    req = _garble(path, "compaction")
    inflight = req.with_name(req.name.replace(".requested", ".inflight"))
    inflight.write_bytes(b"")
    plan = repair(str(path)).plan
    assert [(f.kind, f.fixable) for f in plan.findings] == [(UNREADABLE_PLAN, False)]
    with pytest.raises(ContentError, match=str(req)):
        t.upsert(pa.table({"id": ["k1"], "p": ["x"], "v": [9]}))
    repair(str(path), apply=True)
    assert req.exists()


def test_garbage_log_compaction_plan_is_dropped(tmp_path: Path) -> None:
    """A requested log compaction whose plan does not decode is dropped by the next log
    compaction (Hudi deletes a log compaction's plan when it rolls one back)."""
    path = tmp_path / "t"
    _table(path, 9)
    t = MorTable(str(path), WriteConfig(
        hoodie_options={logcompaction.BLOCKS_THRESHOLD: "2"}))
    instant = logcompaction.schedule_log_compaction(t)
    assert instant is not None
    bad = _garble(path, "logcompaction")
    with pytest.warns(MorlogWarning, match=str(bad)):
        t.upsert(pa.table({"id": ["k2"], "p": ["x"], "v": [7]}))
    report = logcompaction.log_compact(t)
    assert report.dropped[0][0] == instant and not bad.exists()
    assert repair(str(path)).plan.findings == []
