"""Only the library's typed errors escape (issue 23): storage failures on the write path,
damaged bytes on the read path."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from morlog.logformat.errors import HeartbeatWarning, MorlogError, WriteError
from morlog.readers.table import Table

from .test_prune import _SCHEMA, _rows
from .test_table_model import _inject_failure


def _client_table(root: Path, version: int = 6) -> Any:
    from morlog.writers.client import MorTable
    from morlog.writers.options import WriteConfig

    cfg = WriteConfig(fsync=False, new_groups="base", route_inserts=False, carrier="avro",
                      hoodie_options={"hoodie.log.compaction.blocks.threshold": "2"})
    return MorTable.create(str(root), _SCHEMA, key_field="id", partition_field="p",
                           ordering_field="ts", event_time_ordering=False, config=cfg,
                           table_version=version)


def test_rolling_back_a_pending_instant_on_a_full_disk_is_a_write_error(
        tmp_path: Path) -> None:
    """The failing example of ``test_soundness_on_write_client_tables``: a write fails and
    so does its rollback (disk full on every log append), leaving its instant pending; the
    next write rolls it back on entering, and the disk is still full: a WriteError naming
    the log file, not a raw OSError(28), and the log is as it was."""
    t = _client_table(tmp_path)
    home: dict[str, str] = {}
    batch = _rows([(0, 9, 3, False)], 20, home)
    t.upsert(batch)  # a new base file (the example's first "fail" hits no log)
    home["k00"] = "a"
    t.upsert(_rows([(0, 0, 0, False)], 2, home))  # the group's first log file
    mp = pytest.MonkeyPatch()
    _inject_failure(mp, "log", persistent=True)
    try:
        with pytest.raises(WriteError, match="stays pending"):
            t.upsert(batch)
    finally:
        mp.undo()
    t.store.lock(str(tmp_path)).release()
    assert Table(str(tmp_path)).timeline.pending()
    logs = sorted(tmp_path.glob("a/.*.log.*"))
    assert logs
    before = {p: p.read_bytes() for p in logs}
    _inject_failure(mp, "log", persistent=False)
    try:
        with pytest.raises(WriteError) as info:
            t.upsert(batch)
    finally:
        mp.undo()
    assert not isinstance(info.value, FileNotFoundError)
    assert ".log." in str(info.value) and "No space left" in str(info.value)
    assert {p: p.read_bytes() for p in logs} == before  # the landed bytes were cut back
    t.store.lock(str(tmp_path)).release()
    # the disk has room again: the next write rolls the pending instant back and lands
    t.upsert(batch)
    rows = Table(str(tmp_path)).read().to_pylist()
    assert [(r["id"], r["ts"]) for r in rows] == [("k00", 9)]
    assert not Table(str(tmp_path)).timeline.pending()


def _enospc(*_a: Any, **_k: Any) -> Any:
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("call", ["create", "replace", "append", "truncate", "delete",
                                  "makedirs"])
def test_local_store_writes_raise_write_errors_naming_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str) -> None:
    from morlog.writers.core.store import LocalStore

    st = LocalStore()
    path = str(tmp_path / "f.log")
    Path(path).write_bytes(b"old")
    if call in ("create", "replace", "append"):
        monkeypatch.setattr(os, "write", _enospc)
    elif call == "truncate":
        monkeypatch.setattr(os, "ftruncate", _enospc)
    elif call == "delete":
        monkeypatch.setattr(os, "unlink", _enospc)
    else:
        monkeypatch.setattr(os, "mkdir", _enospc)
    target = str(tmp_path / "new.log") if call == "create" else path
    with pytest.raises(WriteError) as info:
        if call == "create":
            st.create(target, b"data")
        elif call == "replace":
            st.replace(target, b"data")
        elif call == "append":
            st.append(target, lambda _start: b"more")
        elif call == "truncate":
            st.truncate(target, 1)
        elif call == "delete":
            st.delete(target)
        else:
            target = str(tmp_path / "d" / "e")
            st.makedirs(target)
    monkeypatch.undo()
    assert info.value.path == target
    assert Path(path).read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.log"]  # no temporary left


def test_log_writer_maps_a_store_oserror_on_create(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from morlog.logformat import rollback_block
    from morlog.writers.core import store as store_mod
    from morlog.writers.core.logwriter import LogFileWriter

    monkeypatch.setattr(store_mod.LocalStore, "create", _enospc)
    w = LogFileWriter(str(tmp_path), "f1-0", "20250101000000000")
    with pytest.raises(WriteError) as info:
        w.append(rollback_block("20250101000300000", target_instant="20250101000200000"))
    assert info.value.path is not None and ".f1-0_20250101000000000.log.1_" in info.value.path
    assert list(tmp_path.iterdir()) == []
    assert isinstance(info.value, MorlogError)



def test_repair_scan_keeps_unknown_header_key_warnings_to_itself(tmp_path: Path) -> None:
    """A block whose header holds a key this morlog does not know is a valid block (readers
    warn and skip the key): repair's plan lists no finding for it and lets no
    UnknownKeyWarning out of its scan."""
    import warnings

    from morlog.logformat import rollback_block
    from morlog.logformat.framing import BlockFrame, MetadataMap, encode_block
    from morlog.writers.repair import plan_repair

    t = _client_table(tmp_path)
    home: dict[str, str] = {}
    t.upsert(_rows([(0, 9, 3, False)], 1, home))
    home["k00"] = "a"
    t.upsert(_rows([(0, 0, 0, False)], 2, home))
    (log,) = tmp_path.glob("a/.*.log.*")
    rb = rollback_block("20250101000300000", target_instant="20250101000200000")
    odd = BlockFrame(rb.block_type, MetadataMap(rb.header.entries + ((42, b"future"),)),
                     rb.content, rb.footer)
    with log.open("ab") as fh:
        fh.write(encode_block(odd))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        plan = plan_repair(str(tmp_path))
    assert [str(w.message) for w in seen] == []
    assert [f.kind for f in plan.findings] == []


# --- invalid UTF-8 in Hudi-style Avro blocks (no index trailer, no checksum) ---------------


def _hudi_style_table(root: Path) -> tuple[Path, int, int]:
    """A table version 6 whose one file group's log holds a plain Avro data block and a
    plain delete block as Hudi writes them (no morlog index trailer, so no checksum), and
    the bytes from the first block's records to the end (absolute file offsets
    ``[lo, hi)``)."""
    from morlog.logformat import DeleteRecord, OrderingValue
    from morlog.logformat.blocks import avro_data_block, delete_block
    from morlog.readers.logfile import LogFileReader
    from morlog.writers.core.logwriter import LogFileWriter

    from .table_builder import SCHEMA, Put, TableBuilder, instant

    b = TableBuilder(str(root))
    inst = instant(1)
    b.begin(inst)
    fid = f"{'a' * 8}-0000-0000-0000-{'b' * 12}-0"
    puts = [Put(f"k{i:02d}", "p1", i, i) for i in range(12)]
    rows = b._rows(puts, inst, fid)
    rows[3]["id"] = rows[3]["_hoodie_record_key"] = "k03\u00e9\u4e2d"  # multi-byte too
    res = LogFileWriter(b._dir("p1"), fid, inst, write_token="0-1-1", fsync=False).append(
        avro_data_block(rows, SCHEMA, inst))
    b.groups[("p1", fid)] = inst
    b._wrote(inst, "p1", fid, res.path)
    b.complete(inst)
    deleting = instant(2)
    b.begin(deleting)
    LogFileWriter(b._dir("p1"), fid, inst, write_token="0-1-1", fsync=False).append(
        delete_block([DeleteRecord(k, "p1", OrderingValue.natural())
                      for k in ("k05", "k07é", "k09")], deleting, schema=SCHEMA))
    b._wrote(deleting, "p1", fid, res.path)
    b.complete(deleting)
    with LogFileReader(res.path) as reader:
        first = next(iter(reader.blocks()))
        lo = first.content_offset + 8  # records follow version and count
        hi = reader.source.size
    return Path(res.path), lo, hi


def _only_typed(root: Path) -> str:
    from morlog.readers.lookup import KeyTagger

    warnings_mod = __import__("warnings")
    with warnings_mod.catch_warnings():
        warnings_mod.simplefilter("ignore")
        out = "same"
        for step in (lambda: Table(str(root)).read(),
                     lambda: Table(str(root)).read(columns=["id", "v"]),
                     lambda: pa.concat_tables(list(Table(str(root)).snapshot())),
                     lambda: KeyTagger(Table(str(root))).tag(["k01", "k03", "zz"])):
            try:
                got = step()
            except MorlogError:
                out = "error"
                continue
            if isinstance(got, pa.Table):
                got.validate(full=True)  # no invalid UTF-8 handed out
                got.to_pylist()
    return out


def test_invalid_utf8_in_a_hudi_style_avro_block_is_a_content_error(tmp_path: Path) -> None:
    log, lo, hi = _hudi_style_table(tmp_path / "t")
    data = log.read_bytes()
    at = data.index("\u4e2d".encode(), lo, hi)  # in the data block
    bad = bytearray(data)
    bad[at + 1] = 0x41  # a CJK lead byte followed by 'A': not UTF-8
    log.write_bytes(bytes(bad))
    with pytest.raises(MorlogError) as info:
        Table(str(tmp_path / "t")).read()
    assert info.value.path is not None and info.value.path.endswith(log.name)
    assert info.value.offset is not None and lo - 100 <= info.value.offset < hi


_HUDI_STYLE: dict[str, Any] = {}


@pytest.mark.parametrize("seed", range(3))
def test_fuzz_string_bytes_of_hudi_style_avro_blocks_raise_only_typed_errors(
        tmp_path_factory: pytest.TempPathFactory, seed: int) -> None:
    """Bytes of the string values of a plain Avro block (the compat path: no trailer, no
    checksum) turned into invalid UTF-8 (high bit set, a lead byte before ASCII, a lone
    continuation, a surrogate): every read step raises a MorlogError or returns Arrow data
    that validates and converts to Python (``to_pylist``)."""
    import random
    import re
    import shutil

    if "src" not in _HUDI_STYLE:
        src = tmp_path_factory.mktemp("hudi-style") / "t"
        _HUDI_STYLE["src"] = (src, *_hudi_style_table(src))
    src, log, lo, hi = _HUDI_STYLE["src"]
    rel = log.relative_to(src)
    data = log.read_bytes()
    spans = [(m.start(), m.end()) for m in re.finditer(rb"[ -~]{2,}", data[lo:hi])]
    rnd = random.Random(seed)
    outcomes = []
    for n in range(25):
        a, b = rnd.choice(spans)
        i = lo + rnd.randrange(a, b)
        bad = bytearray(data)
        how = n % 4
        if how == 0:
            bad[i] |= 0x80
        elif how == 1:
            bad[i] = 0xC3 if rnd.random() < 0.5 else 0xE4
        elif how == 2:
            bad[i] = 0x80 | rnd.randrange(0x40)
        else:
            bad[i:i + 3] = b"\xed\xa0\x80"[: len(bad[i:i + 3])]
        root = tmp_path_factory.mktemp("flip") / "t"
        shutil.copytree(src, root)
        (root / rel).write_bytes(bytes(bad))
        outcomes.append(_only_typed(root))
        shutil.rmtree(root)
    assert "error" in outcomes, outcomes


# --- HFile errors carry file offsets -------------------------------------------------------


def test_errors_of_a_damaged_mdt_hfile_block_name_the_file_offset(tmp_path: Path) -> None:
    """A damaged HFILE_DATA block of the metadata table morlog writes: the error names the
    log file and the offset in that file (the content's offset plus the offset inside the
    HFile), not the offset inside the block's content."""
    from morlog.logformat.constants import BlockType
    from morlog.logformat.errors import FormatError
    from morlog.readers.logfile import LogFileReader
    from morlog.readers.mdt.read import damaged_files, partition_records
    from morlog.readers.storage import LocalStorage
    from morlog.writers.client import MorTable
    from morlog.writers.options import WriteConfig

    root = tmp_path / "t"
    t = MorTable.create(str(root), _SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", config=WriteConfig(fsync=False),
                        table_version=9)
    t.upsert(_rows([(0, 1, 0, False), (1, 1, 1, False)], 1, {}))
    found = []
    for log in sorted((root / ".hoodie" / "metadata").rglob("*.log.*")):
        with LogFileReader(str(log)) as reader:
            found += [(log, b.content_offset) for b in reader.blocks()
                      if b.block_type == BlockType.HFILE_DATA]
    assert found, "the metadata table holds HFile blocks"
    log, at = found[-1]
    data = bytearray(log.read_bytes())
    assert data[at:at + 8] == b"DATABLK*"
    data[at + 3] ^= 0xFF  # the first HFile block's magic
    log.write_bytes(bytes(data))
    with pytest.raises(FormatError) as info:
        partition_records(LocalStorage(), str(root), "files")
    assert info.value.path == str(log)
    assert info.value.offset == at
    (why,) = [w for p, w in damaged_files(LocalStorage(), str(root)) if p == str(log)]
    assert f"@{at}:" in why


def test_a_heartbeat_that_cannot_be_removed_after_the_commit_warns_and_frees_the_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The instant completed: the write succeeded, so no error (a caller retrying it would
    write the rows again); a HeartbeatWarning names the file, and the lock is free."""
    from morlog.writers.core import store as store_mod

    t = _client_table(tmp_path)
    real = store_mod.LocalStore.delete

    def delete(self: Any, path: str) -> bool:
        if ".heartbeat" in path:
            raise OSError(errno.EIO, "Input/output error")
        return real(self, path)

    monkeypatch.setattr(store_mod.LocalStore, "delete", delete)
    with pytest.warns(HeartbeatWarning, match="heartbeat"):
        t.upsert(_rows([(0, 1, 0, False)], 1, {}))
    monkeypatch.undo()
    t.store.lock(str(tmp_path)).release()  # free: a ConcurrentWriterError if still held
    assert [r["id"] for r in Table(str(tmp_path)).read().to_pylist()] == ["k00"]


class _FullFs:
    """A ``pyarrow.fs`` filesystem whose output streams fail after writing a first byte
    (disk full, a dropped connection), over the local file system."""

    def __init__(self) -> None:
        import pyarrow.fs as pafs

        self.local = pafs.LocalFileSystem()

    def get_file_info(self, path: Any) -> Any:
        return self.local.get_file_info(path)

    def delete_file(self, path: str) -> None:
        self.local.delete_file(path)

    def open_output_stream(self, path: str) -> Any:
        inner = self.local.open_output_stream(path)

        class _Stream:
            def __enter__(self) -> Any:
                return self

            def __exit__(self, *exc: object) -> None:
                inner.close()

            def write(self, data: bytes) -> None:
                inner.write(data[:1])
                raise OSError(errno.ENOSPC, "No space left on device")

        return _Stream()


def test_arrow_store_create_that_fails_is_a_write_error_leaving_no_file(
        tmp_path: Path) -> None:
    from morlog.writers.core.store import ArrowStore

    st = ArrowStore(_FullFs())
    path = str(tmp_path / "x.log")
    with pytest.raises(WriteError) as info:
        st.create(path, b"data")
    assert info.value.path == path
    assert list(tmp_path.iterdir()) == []  # no half-written file
