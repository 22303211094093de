"""The one reader of a slice's cumulative index chain (tail -> checkpoint -> directory), used
by the probe and by the indexed writer; the errors and warnings it and the codecs raise."""

from __future__ import annotations

import struct
import warnings
import zlib
from pathlib import Path
from typing import Any

import pytest

import morlog.readers.probe as probe_mod
import morlog.writers.core.indexed as indexed_mod
from morlog.logformat import errors
from morlog.logformat.index_trailer import (
    Carrier,
    CumulativeKind,
    Section,
    encode_trailer,
    parse_layout,
    section_bytes,
)
from morlog.readers import LocalFileSource, LogFileReader
from morlog.readers.cache import CachedSource
from morlog.readers.index import find_tail_index, read_stored_index
from morlog.readers.probe import SliceProbe, probe_log_file
from morlog.readers.slice_index import SliceIndex, read_checkpoint, read_slice_index
from morlog.readers.storage import RangedSource
from morlog.writers.core.indexed import IndexedLogWriter

from .test_indexed import BASE, _inst, _slice_files, _write


def _opener(d: Path) -> Any:
    cache: dict[str, RangedSource] = {}

    def source(name: str) -> RangedSource:
        if name not in cache:
            cache[name] = CachedSource(LocalFileSource(str(d / name)))
        return cache[name]
    return source


@pytest.mark.parametrize("carrier", ["avro", "parquet"])
def test_chain_of_a_delta_tail_lists_every_block(tmp_path: Path, carrier: str) -> None:
    w = IndexedLogWriter(tmp_path, "fg-0", BASE, write_token="0-1-1", checkpoint_every=3)
    offsets = [_write(w, [f"k{b}-{i}" for i in range(10)], _inst(b), carrier) for b in range(5)]
    names = _slice_files(tmp_path)
    index = read_slice_index(names, _opener(tmp_path))
    assert isinstance(index, SliceIndex)
    assert index.cumulative.kind == CumulativeKind.DELTA
    assert index.checkpoint is not None and index.checkpoint.kind == CumulativeKind.FULL
    assert index.full is index.checkpoint
    assert [r.block_offset for _, r in index.block_refs()] == offsets
    assert index.checkpoint_at == 3  # full at 0 and 3 (every third block), deltas between
    assert index.tail.offset == offsets[-1] and index.tail_file == names[-1]
    assert index.checkpoint_ref() == index.cumulative.checkpoint
    # following the checkpoint reference by hand gives the same checkpoint
    assert read_checkpoint(_opener(tmp_path), index.cumulative, index.directory) == (
        index.checkpoint, index.checkpoint_directory)


def test_chain_of_a_full_tail_and_of_logs_without_index(tmp_path: Path) -> None:
    w = IndexedLogWriter(tmp_path, "fg-0", BASE, write_token="0-1-1", checkpoint_every=1)
    _write(w, ["a", "b"], _inst(0), "avro")
    index = read_slice_index(_slice_files(tmp_path), _opener(tmp_path))
    assert index is not None and index.checkpoint is None
    assert index.full is index.cumulative and index.directories == [index.directory]
    ref = index.checkpoint_ref()
    assert ref is not None and ref.carrier == Carrier.AVRO
    # a plain (Hudi) data block at the end: no stored index, the caller goes compat
    w.log.append(_plain_block())
    assert read_slice_index(_slice_files(tmp_path), _opener(tmp_path)) is None


def _plain_block() -> Any:
    from morlog.logformat.blocks import avro_data_block

    from .samples import SCHEMA, record

    return avro_data_block([record("p", _inst(9), 0)], SCHEMA, _inst(9))


def test_probe_and_writer_both_read_the_chain_through_it(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    w = IndexedLogWriter(tmp_path, "fg-0", BASE, write_token="0-1-1", checkpoint_every=2)
    for b in range(3):
        _write(w, [f"k{b}-{i}" for i in range(5)], _inst(b), "avro")
    calls: list[str] = []

    def spy(who: str) -> Any:
        def read(*a: Any, **k: Any) -> SliceIndex | None:
            calls.append(who)
            return read_slice_index(*a, **k)
        return read

    monkeypatch.setattr(probe_mod, "read_slice_index", spy("probe"))
    monkeypatch.setattr(indexed_mod, "read_slice_index", spy("writer"))
    names = _slice_files(tmp_path)
    expected = read_slice_index(names, _opener(tmp_path))
    assert expected is not None
    with SliceProbe(str(tmp_path), names) as p:
        res = p.probe(["k0-1", "k2-4", "nope"])
    assert res.stored and res.cumulative == expected.cumulative
    assert [b.id.offset for b in res.blocks] == [r.block_offset
                                                 for _, r in expected.block_refs()]
    w2 = IndexedLogWriter(tmp_path, "fg-0", BASE, write_token="0-1-1", checkpoint_every=2)
    state = w2.state
    assert [(e.file_name, e.ref) for e in state.entries] == expected.block_refs()
    assert state.checkpoint_at == expected.checkpoint_at
    assert calls == ["probe", "writer"]


def test_an_unsupported_trailer_version_is_not_corruption_and_falls_back(tmp_path: Path
                                                                         ) -> None:
    assert not issubclass(errors.UnsupportedVersionError, errors.FormatError)
    assert issubclass(errors.UnsupportedVersionError, errors.MorlogError)
    w = IndexedLogWriter(tmp_path, "fg-0", BASE, write_token="0-1-1")
    _write(w, [f"v{i}" for i in range(8)], _inst(0), "avro")
    (name,) = _slice_files(tmp_path)
    path = tmp_path / name
    data = bytearray(path.read_bytes())
    # the trailer ends 12 bytes before the block (empty footer map, reverse pointer); its
    # version field is 20 bytes before that
    struct.pack_into("<H", data, len(data) - 12 - 20, 2)
    path.write_bytes(bytes(data))
    with LogFileReader(str(path)) as r:
        (block,) = list(r.blocks())  # the block itself is fine: no CORRUPT block
        assert not block.is_corrupt
        with pytest.raises(errors.UnsupportedVersionError):
            read_stored_index(block.source, block.offset, block.size, block.block_type)
    with LocalFileSource(str(path)) as src:
        assert find_tail_index(src) is None
    with pytest.warns(errors.UnusableIndexWarning, match="unsupported index trailer version"):
        res = probe_log_file(str(path), ["v3", "zz"])
    assert not res.stored
    assert [len(res.hits[k].confirmed) for k in ("v3", "zz")] == [1, 0]


def test_checksum_errors_carry_the_stored_and_the_computed_crc() -> None:
    trailer = bytearray(encode_trailer([(Section.KEYS, b"some key bytes")]))
    layout = parse_layout(bytes(trailer))
    entry = layout.entry(Section.KEYS)
    assert entry is not None
    trailer[entry.offset] ^= 0x01
    with pytest.raises(errors.ChecksumError) as info:
        section_bytes(bytes(trailer), 0, entry, base=100, path="input")
    err = info.value
    assert isinstance(err, errors.ContentError)  # still a ContentError (spec/index.md §4)
    actual = zlib.crc32(bytes(trailer[entry.offset : entry.offset + entry.length]))
    assert err.expected == f"0x{entry.crc32:08x}" and err.actual == f"0x{actual:08x}"
    assert (err.path, err.offset) == ("input", 100 + entry.offset)
    assert f"expected '0x{entry.crc32:08x}', got '0x{actual:08x}'" in str(err)
    moved = err.at("file.log", 1000)
    assert isinstance(moved, errors.ChecksumError) and moved.expected == err.expected
    # the section table's CRC
    table = bytearray(encode_trailer([(Section.KEYS, b"k")]))
    table[len(table) - 32 - 24 + 2] ^= 0x01  # the flags of the one table entry
    with pytest.raises(errors.ChecksumError) as info2:
        parse_layout(bytes(table))
    assert info2.value.expected != info2.value.actual


def test_every_warning_has_one_base() -> None:
    for w in (errors.UnknownKeyWarning, errors.UnknownSectionWarning,
              errors.UnusableIndexWarning):
        assert issubclass(w, errors.MorlogWarning) and issubclass(w, UserWarning)
    # the old import places still work
    from morlog.logformat.framing import UnknownKeyWarning
    from morlog.logformat.index_trailer import UnknownSectionWarning
    from morlog.readers.index import UnusableIndexWarning

    assert (UnknownKeyWarning, UnknownSectionWarning, UnusableIndexWarning) == (
        errors.UnknownKeyWarning, errors.UnknownSectionWarning, errors.UnusableIndexWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", errors.MorlogWarning)
        warnings.warn("quiet", errors.UnknownSectionWarning, stacklevel=1)
