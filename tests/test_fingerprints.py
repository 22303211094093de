"""Key fingerprint files of a distributed write (spec/table.md §7.5,
``morlog.logformat.fingerprints``): the bytes, the merge that finds hashes several tasks hold
(against a set oracle), and hostile files."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from morlog.logformat import fingerprints
from morlog.logformat.errors import ChecksumError, ContentError, UsageError
from morlog.logformat.fingerprints import (
    MAGIC,
    FingerprintFile,
    check_file,
    encode_fingerprints,
    find_shared,
    header_size,
)

VECTORS = Path(__file__).resolve().parent.parent / "spec" / "vectors" / "fingerprints"


def _file(name: str, data: bytes) -> FingerprintFile:
    return FingerprintFile(name, len(data), lambda o, n: data[o:o + n])


def test_the_layout_is_as_specified() -> None:
    hashes = np.array([0xF000000000000001, 0x0000000000000005, 0x8000000000000000],
                      dtype=np.uint64)
    data = encode_fingerprints(hashes, np.array([7, 8, 9]), bits=1)
    assert data[:8] == MAGIC
    assert struct.unpack_from("<IQ", data, 8) == (1, 3)
    # bucket 0: hashes below 2^63; bucket 1: the others
    assert np.frombuffer(data, "<u8", 3, 20).tolist() == [0, 1, 3]
    at = header_size(1)
    assert np.frombuffer(data, "<u8", 3, at).tolist() == [5, 0x8000000000000000,
                                                          0xF000000000000001]
    assert np.frombuffer(data, "<u4", 3, at + 24).tolist() == [8, 9, 7]
    assert struct.unpack("<I", data[-4:])[0] == zlib.crc32(data[:-4])
    assert len(data) == at + 3 * 12 + 4
    assert check_file(data).count == 3


def test_the_conformance_vector() -> None:
    v = json.loads((VECTORS / "fingerprints.json").read_text())
    data = encode_fingerprints(np.array([int(h, 16) for h in v["hashes"]], dtype=np.uint64),
                               np.array(v["rows"]), bits=v["bits"])
    assert data.hex() == v["file_hex"]


def test_the_identity_vector() -> None:
    """What a distributed write hashes per inserted record: the key, or the key, a NUL byte
    and the partition path without a global index (spec/table.md §7.5)."""
    import pyarrow as pa

    from morlog.logformat.keybatch import KeyBatch
    from morlog.logformat.xxh64 import xxh64_batch
    from morlog.writers.distributed import _ident

    v = json.loads((VECTORS / "identities.json").read_text(encoding="utf-8"))
    for c in v["cases"]:
        ident = _ident(pa.array([c["key"]]), pa.array([c["partition"]]),
                       not c["global_index"])
        assert ident[0].as_py().encode() == bytes.fromhex(c["hashed_hex"]), c
        assert f"{int(xxh64_batch(KeyBatch.of(ident))[0]):016x}" == c["fingerprint"], c


@settings(max_examples=80, deadline=None)
@given(tasks=st.lists(st.dictionaries(st.integers(0, 2**64 - 1), st.integers(0, 2**32 - 1),
                                      max_size=40), min_size=1, max_size=5),
       bits=st.integers(0, 6), shared=st.integers(0, 2**64 - 1),
       run=st.sampled_from([1, 2, 5, 17, fingerprints.RUN_ENTRIES]))
def test_the_merge_finds_exactly_the_hashes_several_files_hold(
        tasks: list[dict[int, int]], bits: int, shared: int, run: int) -> None:
    """``run``: the entries of a run of buckets the merge reads at once (small ones make
    runs of one bucket, of several, and buckets larger than a run)."""
    if len(tasks) > 1:  # make sure some hash is shared
        tasks[0][shared] = 1
        tasks[-1][shared] = 2
    files = [_file(f"t{i}", encode_fingerprints(np.array(list(t), dtype=np.uint64),
                                                np.array(list(t.values()), dtype=np.int64),
                                                bits=bits))
             for i, t in enumerate(tasks)]
    with mock.patch.object(fingerprints, "RUN_ENTRIES", run):
        got = find_shared(files)
    want = sorted((h, i, row) for i, t in enumerate(tasks) for h, row in t.items()
                  if sum(h in u for u in tasks) > 1)
    assert list(zip(got.hashes.tolist(), got.files.tolist(), got.rows.tolist(),
                    strict=True)) == want


def test_a_task_never_writes_a_hash_twice_and_rows_fit_32_bits() -> None:
    with pytest.raises(UsageError, match="distinct"):
        encode_fingerprints(np.array([1, 1], dtype=np.uint64), np.array([0, 1]))
    with pytest.raises(UsageError, match="32 bits"):
        encode_fingerprints(np.array([1], dtype=np.uint64), np.array([2**32]))
    with pytest.raises(UsageError, match="bucket bits"):
        encode_fingerprints(np.array([1], dtype=np.uint64), np.array([0]), bits=17)


def test_every_damaged_byte_is_a_typed_error() -> None:
    data = encode_fingerprints(np.arange(1, 40, dtype=np.uint64) * 0x0123456789ABCDEF,
                               np.arange(39), bits=2)
    other = _file("ok", encode_fingerprints(np.array([5], dtype=np.uint64), np.array([0]),
                                            bits=2))
    for at in range(len(data)):
        bad = bytearray(data)
        bad[at] ^= 0x5A
        with pytest.raises((ContentError, ChecksumError)):
            find_shared([_file("bad", bytes(bad)), other])
    for cut in (0, 7, 20, len(data) - 1):
        with pytest.raises(ContentError):
            find_shared([_file("cut", data[:cut]), other])


def test_a_hash_in_another_bucket_is_refused_even_with_a_true_checksum() -> None:
    """A file whose CRC is right but one hash sits under another bucket's offsets (a
    writer's bug, not damage): the merge refuses it whether it reads that bucket alone or in
    a run with its neighbours."""
    hashes = np.array([1, 2, 3, 2**62 + 1, 2**62 + 2, 2**63 + 5], dtype=np.uint64)
    data = bytearray(encode_fingerprints(hashes, np.arange(6), bits=2))
    head = header_size(2)
    # the third hash (bucket 0) rewritten into bucket 1's range of values; still ascending
    struct.pack_into("<Q", data, head + 2 * 8, 2**62)
    struct.pack_into("<I", data, len(data) - 4, zlib.crc32(bytes(data[:-4])))
    other = _file("ok", encode_fingerprints(np.array([2], dtype=np.uint64), np.array([0]),
                                            bits=2))
    for run in (1, fingerprints.RUN_ENTRIES):
        with mock.patch.object(fingerprints, "RUN_ENTRIES", run), pytest.raises(
                ContentError, match="other buckets"):
            find_shared([_file("forged", bytes(data)), other])


def test_files_with_other_bucket_bits_are_refused() -> None:
    a = _file("a", encode_fingerprints(np.array([1], dtype=np.uint64), np.array([0]), bits=1))
    b = _file("b", encode_fingerprints(np.array([1], dtype=np.uint64), np.array([0]), bits=2))
    with pytest.raises(ContentError, match="bucket bits"):
        find_shared([a, b])
