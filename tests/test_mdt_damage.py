"""A damaged metadata table (issue 23): writers keep going, errors name the file, ``repair``
rebuilds it from the data table (spec/mdt.md §15)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from morlog.logformat.constants import BlockType
from morlog.logformat.errors import MorlogError
from morlog.readers.logfile import LogFileReader
from morlog.readers.mdt.read import damaged_files
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.mdt.plan import live_data_files
from morlog.writers.mdt.writer import MetadataTable
from morlog.writers.repair import MDT_DAMAGED, repair
from morlog.writers.services import cleaning, compaction

SCHEMA = pa.schema([("id", pa.string()), ("p", pa.string()), ("v", pa.int64())])


def _table(path: Path, version: int, commits: int = 4) -> MorTable:
    t = MorTable.create(str(path), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="v", table_version=version)
    for i in range(commits):
        t.upsert(pa.table({"id": [f"k{j}" for j in range(i, i + 4)],
                           "p": ["x", "y", "x", "y"], "v": [i] * 4}))
    return t


def _mdt_logs(path: Path) -> list[Path]:
    d = path / ".hoodie" / "metadata" / "files"
    return sorted((d / n for n in os.listdir(d) if ".log." in n),
                  key=lambda p: p.name.split("_")[1])


def _view_is_true(path: Path) -> bool:
    t = MorTable(str(path))
    view = MetadataTable(t.store, t.location, mode=t.mode).files_view()
    live = {p or ".": f for p, f in live_data_files(t.store, t.table()).items()}
    return view == live


def _rows(path: Path) -> dict[tuple[str, str], int]:
    got = Table(str(path)).read()
    return dict(zip(zip(got.column("p").to_pylist(), got.column("id").to_pylist(),
                        strict=True), got.column("v").to_pylist(), strict=True))


def _damage(path: Path, how: str) -> Path:
    """Damage one file of the MDT; the file."""
    last = _mdt_logs(path)[-1]
    data = last.read_bytes()
    if how == "torn":  # a write cut short: half the last block
        last.write_bytes(data[: len(data) // 2])
    elif how == "length":  # the block length field of the first block overwritten
        last.write_bytes(data[:6] + b"\x7f" * 8 + data[14:])
    elif how == "junk_tail":
        last.write_bytes(data + b"#HUDI#\x00\x00")
    elif how == "content":  # the HFile inside the block garbled, the framing intact
        with LogFileReader(str(last)) as r:
            b = next(b for b in r.blocks() if b.block_type == BlockType.HFILE_DATA)
        at = b.content_offset + 8  # its first data block
        last.write_bytes(data[:at] + b"\xa5" * 64 + data[at + 64:])
    else:
        raise AssertionError(how)
    return last


@pytest.mark.parametrize("version", [8, 9])
@pytest.mark.parametrize("how", ["torn", "length", "junk_tail", "content"])
def test_damaged_mdt_log_writers_go_on_and_repair_rebuilds(tmp_path: Path, version: int,
                                                           how: str) -> None:
    path = tmp_path / "t"
    t = _table(path, version)
    bad = _damage(path, how)
    # the writer reads the MDT with the data logs' recovery (the corrupt block skipped, as
    # Hudi's log reader skips it): the next upsert and the services go on
    t.upsert(pa.table({"id": ["k1"], "p": ["x"], "v": [9]}))
    compaction.compact(t)
    cleaning.clean(t, options={"hoodie.clean.commits.retained": "1"})
    assert Table(str(path)).timeline.pending() == []
    # repair finds the damage, names the file, and rebuilds the MDT from the data table
    plan = repair(str(path)).plan
    found = [f for f in plan.findings if f.kind == MDT_DAMAGED]
    assert [f.path for f in found] == [str(bad)] and all(f.fixable for f in found)
    rows = _rows(path)
    done = repair(str(path), apply=True)
    assert [f.kind for f in done.done] == [MDT_DAMAGED] and not done.skipped
    assert repair(str(path)).plan.findings == []
    assert damaged_files(MorTable(str(path)).table().storage, str(path)) == []
    assert _view_is_true(path)
    assert _rows(path) == rows
    # the rebuilt MDT takes the next commits and stays true
    t = MorTable(str(path))
    t.upsert(pa.table({"id": ["k2", "n1"], "p": ["x", "z"], "v": [10, 1]}))
    t.delete(pa.table({"id": ["k0"], "p": ["x"]}))
    assert _view_is_true(path)
    rows[("x", "k2")] = 10
    rows[("z", "n1")] = 1
    del rows[("x", "k0")]
    assert _rows(path) == rows


def test_torn_mdt_log_no_longer_blocks_clean(tmp_path: Path) -> None:
    """The issue's case: a clean deleted its files, then failed on the torn MDT log and
    stayed inflight; now it completes, and its MDT commit lists the deletes."""
    path = tmp_path / "t"
    t = _table(path, 9, commits=6)
    compaction.compact(t)
    t.upsert(pa.table({"id": ["k1"], "p": ["x"], "v": [9]}))
    _damage(path, "torn")
    report = cleaning.clean(t, options={"hoodie.clean.commits.retained": "1"})
    assert report.results and report.results[-1].deleted
    assert Table(str(path)).timeline.pending() == []
    repair(str(path), apply=True)
    assert _view_is_true(path)


def test_damaged_mdt_base_file_is_found_and_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _table(path, 9, commits=2)
    d = path / ".hoodie" / "metadata" / "files"
    base = next(d / n for n in os.listdir(d) if n.endswith(".hfile"))
    base.write_bytes(os.urandom(200))
    found = [f for f in repair(str(path)).plan.findings if f.kind == MDT_DAMAGED]
    assert [f.path for f in found] == [str(base)]
    repair(str(path), apply=True)
    assert repair(str(path)).plan.findings == [] and _view_is_true(path)


def test_mdt_errors_name_the_file(tmp_path: Path) -> None:
    """Whatever of the MDT a writer cannot read, its error names the file, never
    ``<bytes>``."""
    path = tmp_path / "t"
    t = _table(path, 9, commits=2)
    for log in _mdt_logs(path):
        log.write_bytes(b"garbage!" * 10)  # no block magic: not a log at all
    try:
        t.upsert(pa.table({"id": ["k1"], "p": ["x"], "v": [9]}))
    except MorlogError as exc:
        assert "<bytes>" not in str(exc) and str(path) in str(exc)
    repair(str(path), apply=True)
    assert repair(str(path)).plan.findings == [] and _view_is_true(path)
    MorTable(str(path)).upsert(pa.table({"id": ["k1"], "p": ["x"], "v": [11]}))
    assert _rows(path)[("x", "k1")] == 11
