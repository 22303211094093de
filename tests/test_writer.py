"""The log file writer: append and rollover modes, exclusivity, no partial block on failure."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from morlog.logformat import BlockType, LogFileExistsError, LogFileName, WriteError, encode_block
from morlog.logformat.blocks import avro_data_block, rollback_block
from morlog.readers import LogFileReader
from morlog.writers import LogFileWriter, list_log_files

from .samples import SCHEMA, record, sample_frames

BASE = "20250101000000000"


def _blocks(path: str) -> list[tuple[int, int, BlockType]]:
    with LogFileReader(path) as r:
        return [(b.offset, b.size, b.block_type) for b in r.blocks()]


def _frame(instant: str, n: int = 3) -> object:
    return avro_data_block([record(f"k{i}", instant, i) for i in range(n)], SCHEMA, instant)


def test_append_mode_appends_to_one_file(tmp_path: Path) -> None:
    w = LogFileWriter(tmp_path, "fg-0", BASE, write_token="0-1-1", mode="append")
    frames = sample_frames()
    results = [w.append(f) for f in frames]
    assert len({r.path for r in results}) == 1
    assert results[0].created and not any(r.created for r in results[1:])
    assert results[0].name == LogFileName("fg-0", BASE, 1, "0-1-1")
    expected = [(b.offset, b.size, BlockType(f.block_type))
                for r, f in zip(results, frames, strict=True) for b in r.blocks]
    assert _blocks(results[0].path) == expected
    assert Path(results[0].path).read_bytes() == b"".join(encode_block(f) for f in frames)


def test_one_append_call_writes_several_blocks(tmp_path: Path) -> None:
    w = LogFileWriter(tmp_path, "fg-0", BASE)
    frames = sample_frames()
    result = w.append(frames)
    assert [b.size for b in result.blocks] == [len(encode_block(f)) for f in frames]
    assert len(_blocks(result.path)) == len(frames)


def test_rollover_mode_creates_a_new_version_per_write(tmp_path: Path) -> None:
    w = LogFileWriter(tmp_path, "fg-0", BASE, write_token="3-4-5", mode="rollover")
    paths = [w.append(f).path for f in sample_frames()[:3]]
    names = [LogFileName.parse(os.path.basename(p)) for p in paths]
    assert [n.version for n in names] == [1, 2, 3]
    assert all(n.write_token == "3-4-5" for n in names)
    assert [len(_blocks(p)) for p in paths] == [1, 1, 1]
    assert list_log_files(str(tmp_path), "fg-0", BASE) == names
    assert not [n for n in os.listdir(tmp_path) if "tmp" in n]


def test_rollover_never_overwrites_another_writers_file(tmp_path: Path) -> None:
    w = LogFileWriter(tmp_path, "fg-0", BASE, write_token="0-1-1", mode="rollover")
    first = w.append(_frame("20250101000000001"))
    # another writer takes the next version name between our listing and our create
    other = tmp_path / str(LogFileName("fg-0", BASE, 2, "0-1-1"))
    theirs = encode_block(rollback_block("20250101000000009", "20250101000000008"))
    other.write_bytes(theirs)
    real_existing = w.existing
    w.existing = lambda: [first.name]  # type: ignore[method-assign]
    second = w.append(_frame("20250101000000002"))
    w.existing = real_existing  # type: ignore[method-assign]
    assert second.name.version == 3
    assert other.read_bytes() == theirs


def test_append_mode_refuses_to_race_for_a_new_file(tmp_path: Path) -> None:
    w = LogFileWriter(tmp_path, "fg-0", BASE, write_token="0-1-1", mode="append")
    target = tmp_path / str(LogFileName("fg-0", BASE, 1, "0-1-1"))
    theirs = encode_block(_frame("20250101000000005"))  # type: ignore[arg-type]
    target.write_bytes(theirs)
    w.existing = lambda: []  # type: ignore[method-assign]
    with pytest.raises(LogFileExistsError) as err:
        w.append(_frame("20250101000000001"))
    assert err.value.path == str(target)
    assert target.read_bytes() == theirs


def test_append_after_a_torn_tail_rolls_over(tmp_path: Path) -> None:
    w = LogFileWriter(tmp_path, "fg-0", BASE, write_token="0-1-1", mode="append")
    r1 = w.append(_frame("20250101000000001"))
    r2 = w.append(_frame("20250101000000002"))
    # a writer crashed in the middle of its block
    with open(r1.path, "r+b") as f:
        f.truncate(r2.blocks[0].offset + r2.blocks[0].size - 10)
    r3 = w.append(_frame("20250101000000003"))
    assert r3.created and r3.name.version == 2
    assert [t for _, _, t in _blocks(r1.path)] == [BlockType.AVRO_DATA, BlockType.CORRUPT]
    assert [t for _, _, t in _blocks(r3.path)] == [BlockType.AVRO_DATA]


def test_failed_append_leaves_no_partial_block(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    w = LogFileWriter(tmp_path, "fg-0", BASE, mode="append")
    r1 = w.append(_frame("20250101000000001"))
    before = Path(r1.path).read_bytes()
    real_write = os.write
    calls = {"n": 0}

    def failing_write(fd: int, data: bytes | memoryview) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data)[:100])  # a short write first...
        raise OSError(28, "No space left on device")  # ...then the disk is full

    monkeypatch.setattr(os, "write", failing_write)
    with pytest.raises(WriteError) as err:
        w.append(_frame("20250101000000002", n=50))
    monkeypatch.undo()
    assert err.value.path == r1.path and err.value.offset == len(before)
    assert Path(r1.path).read_bytes() == before
    assert len(_blocks(r1.path)) == 1


def test_failed_rollover_write_leaves_no_file(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    w = LogFileWriter(tmp_path, "fg-0", BASE, mode="rollover")
    w.append(_frame("20250101000000001"))
    before = sorted(os.listdir(tmp_path))

    def failing_write(fd: int, data: bytes | memoryview) -> int:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "write", failing_write)
    with pytest.raises(WriteError, match="Input/output error"):  # typed, naming the file
        w.append(_frame("20250101000000002"))
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == before


def test_concurrent_appender_gets_a_clear_error(tmp_path: Path) -> None:
    w = LogFileWriter(tmp_path, "fg-0", BASE, mode="append")
    r1 = w.append(_frame("20250101000000001"))
    with open(r1.path, "ab") as other:
        fcntl.flock(other.fileno(), fcntl.LOCK_EX)
        with pytest.raises(WriteError, match="another writer"):
            w.append(_frame("20250101000000002"))
    assert len(_blocks(r1.path)) == 1


def test_fsync_on_commit_worthy_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    w = LogFileWriter(tmp_path, "fg-0", BASE, mode="append")
    w.append(_frame("20250101000000001"))  # new file: file and directory
    assert len(synced) == 2
    w.append(_frame("20250101000000002"))  # append: the file
    assert len(synced) == 3
    w.append(_frame("20250101000000003"), sync=False)
    assert len(synced) == 3


def test_writer_rejects_bad_names(tmp_path: Path) -> None:
    from morlog.logformat import UsageError

    with pytest.raises(UsageError):
        LogFileWriter(tmp_path, "fg_0", BASE)
    with pytest.raises(UsageError):
        LogFileWriter(tmp_path, "fg-0", BASE, write_token="x")
    with pytest.raises(UsageError):
        LogFileWriter(tmp_path, "fg-0", BASE, mode="overwrite")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        LogFileWriter(tmp_path, "fg-0", BASE).append([])
