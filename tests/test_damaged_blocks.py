"""A damaged block of a data log (issue 23): the next upsert goes on where the damage is in
the stored index only; a block no reader can use is refused naming the file, and
``repair --apply`` patches the file so readers skip it as a corrupt block (spec/format.md
§6.5)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pyarrow as pa
import pytest

from morlog.logformat.constants import MAGIC, TRAILER_LEN, BlockType
from morlog.logformat.errors import CorruptBlockWarning, InvalidMagicError
from morlog.readers.logfile import LogFileReader
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig
from morlog.writers.repair import DAMAGED_BLOCK, repair

SCHEMA = pa.schema([("id", pa.string()), ("p", pa.string()), ("ts", pa.int64())])


def _batch(ids: range | list[int], ts: int) -> pa.Table:
    return pa.table({"id": [f"k{i}" for i in ids], "p": ["x"] * len(ids),
                     "ts": [ts] * len(ids)}, schema=SCHEMA)


def _table(path: Path, version: int, carrier: str = "avro") -> MorTable:
    t = MorTable.create(str(path), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", table_version=version,
                        config=WriteConfig(fsync=False, carrier=carrier))
    t.upsert(_batch(range(4), 1))
    t.upsert(_batch(range(2, 6), 2))
    t.upsert(_batch(range(5, 8), 3))
    return t


def _logs(path: Path) -> list[Path]:
    return sorted((path / "x").glob(".*.log.*"), key=lambda p: p.name.split("_")[1])


def _data_blocks(log: Path) -> list[tuple[int, int, int]]:
    with LogFileReader(str(log)) as r:
        return [(b.offset, b.size, b.content_offset) for b in r.blocks()
                if b.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA)]


def _rows(path: Path) -> dict[str, int]:
    got = Table(str(path)).read()
    return dict(zip(got.column("id").to_pylist(), got.column("ts").to_pylist(), strict=True))


@pytest.mark.parametrize("carrier", ["avro", "parquet"])
def test_checkpoint_cut_off_does_not_stop_the_next_upsert(tmp_path: Path,
                                                          carrier: str) -> None:
    """Table version 9: the newest block's delta cumulative points at the full checkpoint
    in the first log; that log cut in half, the probe and the writer recompute keys from
    the blocks the scan reads (it raised ``LengthError`` from the checkpoint read)."""
    path = tmp_path / "t"
    t = _table(path, 9, carrier)
    first = _logs(path)[0]
    first.write_bytes(first.read_bytes()[: first.stat().st_size // 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t.upsert(_batch([1, 6, 9], 10))
        rows = _rows(path)
    assert rows["k1"] == 10 and rows["k6"] == 10 and rows["k9"] == 10
    assert rows["k7"] == 3  # the blocks after the cut stay


def test_damaged_first_magic_is_written_back(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _table(path, 9)
    log = _logs(path)[-1]
    data = bytearray(log.read_bytes())
    data[2] ^= 0x10
    log.write_bytes(bytes(data))
    with pytest.raises(InvalidMagicError, match=str(log)):
        t.upsert(_batch([1], 10))
    found = [f for f in repair(str(path)).plan.findings if f.kind == DAMAGED_BLOCK]
    assert [(f.path, f.fixable) for f in found] == [(str(log), True)]
    repair(str(path), apply=True)
    assert log.read_bytes()[:6] == MAGIC and repair(str(path)).plan.findings == []
    t.upsert(_batch([1], 10))
    rows = _rows(path)
    assert rows["k1"] == 10 and rows["k7"] == 3  # the block's records are back


@pytest.mark.parametrize("carrier", ["avro", "parquet"])
def test_undecodable_block_is_patched_to_corrupt(tmp_path: Path, carrier: str) -> None:
    """Table version 6 (one log, blocks appended): the first block's records garbled; the
    read refuses naming the file; repair zeroes exactly that block's reverse pointer, then
    every reader skips it and the next upsert works."""
    path = tmp_path / "t"
    t = _table(path, 6, carrier)
    (log,) = _logs(path)
    blocks = _data_blocks(log)
    assert len(blocks) >= 2
    offset, size, content = blocks[0]
    data = bytearray(log.read_bytes())
    before = bytes(data)
    data[content + 4:content + 44] = b"\xff" * 40  # the first records (Parquet: its pages)
    log.write_bytes(bytes(data))
    # morlog's readers skip it at once (its CHECKSUM fails, spec/index.md §4.12); Hudi's,
    # which check no checksum, would decode it: repair makes every reader skip it
    with pytest.warns(CorruptBlockWarning, match=str(log)):
        _rows(path)
    found = [f for f in repair(str(path)).plan.findings if f.kind == DAMAGED_BLOCK]
    assert len(found) == 1 and f"offset {offset}" in found[0].reason
    repair(str(path), apply=True)
    after = log.read_bytes()
    end = offset + size
    assert after[end - TRAILER_LEN:end] == bytes(TRAILER_LEN)
    assert after[:end - TRAILER_LEN] == bytes(data[:end - TRAILER_LEN])
    assert after[end:] == before[end:]
    with LogFileReader(str(log)) as r:
        kinds = [(b.offset, b.block_type) for b in r.blocks()]
    assert (offset, BlockType.CORRUPT) in kinds
    t.upsert(_batch([1, 6], 10))
    rows = _rows(path)
    # the skipped block held k2..k5 at ts 2: k4 was only there, k2 and k3 are the base
    # file's again, k5 the next block's
    assert "k4" not in rows and rows["k2"] == 1 and rows["k5"] == 3
    assert rows["k1"] == 10 and rows["k6"] == 10 and rows["k7"] == 3
    # what is left is a corrupt block, which readers skip: reported, nothing to fix
    left = repair(str(path)).plan.findings
    assert [(f.kind, f.fixable) for f in left] == [("CORRUPT_BLOCK", False)]
