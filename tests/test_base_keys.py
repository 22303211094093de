"""The base-key index (spec/index.md §12): the codec, the lookup, and the index on tables.

- the codec (``morlog.logformat.base_keys``): encode/decode round-trips any key list (unicode
  beyond the BMP, empty keys, duplicates, both codecs); ``contains`` equals set membership,
  forced fingerprint collisions included; damaged bytes raise only :class:`MorlogError`;
- the tables (``MorTable``): one index per base file with exactly the file's keys (inserts,
  compaction, virtual keys), none with ``morlog.base.key.index=false``, the cleaner deletes
  them with their base files; tagging through them equals tagging through the footers over
  random histories; a stale or damaged index warns and is not used; hudi-rs reads tables
  with indexes the same.

The byte layout itself is pinned by the vectors of ``spec/vectors/index/base-keys*``
(tests/test_index_vectors.py).
"""

from __future__ import annotations

import os
import random
import shutil
import struct
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.base_keys import (
    CODEC_NONE,
    CODEC_ZSTD,
    HEAD,
    LENGTHS,
    BaseKeys,
    decode_base_keys,
    encode_base_keys,
)
from morlog.logformat.errors import MorlogError, UsageError
from morlog.logformat.keybatch import KeyBatch
from morlog.logformat.virtual_keys import VirtualKeys
from morlog.logformat.xxh64 import xxh64_batch
from morlog.readers.base_keys import BaseKeysWarning, base_keys_dir, base_keys_path
from morlog.readers.lookup import KeyTagger
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig

#: ``HYPOTHESIS_PROFILE=slow`` runs 20 times the examples
SCALE = {"slow": 20, "hunt": 5}.get(os.environ.get("HYPOTHESIS_PROFILE", ""), 1)
NAME = "3c2e1f40-8e3b-4a51-9d5e-2f7b1c0a9e11-0_0-12-34_20250101000000000.parquet"

# --- the codec ------------------------------------------------------------------------------

#: any Unicode but lone surrogates (not UTF-8), beyond the BMP included
KEY = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
#: lists with duplicates and near-misses: a few keys drawn from a small pool, and any others
KEYS = st.lists(st.one_of(st.sampled_from(["", "a", "k1", "k10", "\U0001f600", "é", "e\u0301"]),
                          KEY), max_size=40)
PAIRS = settings(max_examples=60 * SCALE, deadline=None)


def _xxh(keys: list[str]) -> np.ndarray:
    return xxh64_batch(KeyBatch.of(pa.array(keys, pa.string())))


def _stored_order(keys: list[str]) -> list[str]:
    """§12.2: by fingerprint, then key bytes (unsigned)."""
    fps = _xxh(keys).tolist()
    return [k for _, _, k in sorted(zip(fps, (k.encode() for k in keys), keys, strict=True))]


@PAIRS
@given(keys=KEYS, codec=st.sampled_from([CODEC_NONE, CODEC_ZSTD]), name=KEY,
       size=st.integers(0, 2**64 - 1))
def test_round_trip(keys: list[str], codec: int, name: str, size: int) -> None:
    data = encode_base_keys(pa.array(keys, pa.string()), name, size, codec=codec)
    assert data[:4] == b"MBKI" and data[5] == codec
    got = decode_base_keys(data)
    assert (got.base_file, got.base_size, len(got)) == (name, size, len(keys))
    assert got.keys.to_pylist() == _stored_order(keys)
    assert got.fingerprints.dtype == np.uint64
    assert got.fingerprints.tolist() == _xxh(got.keys.to_pylist()).tolist()
    # the caller's hashes, chunked or sliced input, another string type: the same bytes
    arr = pa.array(["pad"] + keys, pa.string()).slice(1)
    assert encode_base_keys(arr, name, size, codec=codec) == data
    assert encode_base_keys(pa.chunked_array([keys[:3], keys[3:]], pa.string()), name, size,
                            codec=codec) == data
    assert encode_base_keys(pa.array(keys, pa.large_string()), name, size, codec=codec) == data
    assert encode_base_keys(pa.array(keys, pa.string()), name, size, codec=codec,
                            hashes=_xxh(keys)) == data
    # every stored key is found, in any order and any number of times
    probe = pa.array(keys[::-1] + keys, pa.string())
    assert got.contains(probe, _xxh(probe.to_pylist())).all()


def test_encode_refuses_what_the_layout_cannot_hold() -> None:
    with pytest.raises(UsageError):
        encode_base_keys(pa.array(["a", None]), NAME, 1)
    with pytest.raises(UsageError):
        encode_base_keys(pa.array(["a"]), NAME, 1, codec=7)
    with pytest.raises(UsageError):
        encode_base_keys(pa.array(["a"]), "n" * 4097, 1)
    with pytest.raises(UsageError):
        encode_base_keys(pa.array(["a", "b"]), NAME, 1, hashes=np.zeros(1, np.uint64))
    assert decode_base_keys(encode_base_keys(pa.array(["a"]), "n" * 4096, 1)).base_file == (
        "n" * 4096)


@pytest.mark.parametrize(("prefix", "n", "codec"), [(2000, 600, CODEC_NONE),
                                                    (600, 3000, CODEC_ZSTD),
                                                    (300, 2000, CODEC_ZSTD)])
def test_the_writer_never_writes_what_readers_refuse(prefix: int, n: int, codec: int) -> None:
    """Long keys sharing most of their bytes compress beyond the bound readers check (§12.2:
    raw above 64 times stored and 1 MiB): such a payload is stored as is (codec 0)."""
    keys = ["a" * prefix + str(i) for i in range(n)]
    data = encode_base_keys(pa.array(keys), NAME, 1)
    got = decode_base_keys(data)
    assert sorted(got.keys.to_pylist()) == sorted(keys)
    raw = 12 * n + 4 + sum(len(k) for k in keys)
    stored = len(data) - _fields(data)["payload"]
    assert data[5] == codec
    assert raw == stored if codec == CODEC_NONE else raw <= max(64 * stored, 1 << 20)


@PAIRS
@given(stored=KEYS, probes=KEYS)
def test_contains_is_set_membership(stored: list[str], probes: list[str]) -> None:
    bk = decode_base_keys(encode_base_keys(pa.array(stored, pa.string()), NAME, 7))
    probe = probes + stored[:3]
    got = bk.contains(pa.array(probe, pa.string()), _xxh(probe))
    assert got.tolist() == [k in set(stored) for k in probe]


def _fake_fp(keys: list[str], buckets: int) -> np.ndarray:
    """A fingerprint of few values: many keys share one (collisions XXH64 never shows)."""
    return np.array([zlib.crc32(k.encode()) % buckets for k in keys], dtype=np.uint64)


@PAIRS
@given(stored=KEYS, probes=KEYS, buckets=st.integers(1, 4))
def test_contains_under_fingerprint_collisions(stored: list[str], probes: list[str],
                                               buckets: int) -> None:
    """Every key of a matching fingerprint is compared: a colliding key is never present,
    a stored key is found whatever its place among its fingerprint's keys."""
    fp = _fake_fp(stored, buckets)
    order = sorted(range(len(stored)), key=lambda i: (int(fp[i]), stored[i].encode()))
    bk = BaseKeys(NAME, 1, fp[order] if order else fp,
                  pa.array([stored[i] for i in order], pa.string()))
    # the writer, given these fingerprints, orders equal ones by key bytes (§12.2) too
    written = decode_base_keys(encode_base_keys(pa.array(stored, pa.string()), NAME, 1,
                                                hashes=fp))
    assert written.keys.to_pylist() == bk.keys.to_pylist()
    assert written.fingerprints.tolist() == bk.fingerprints.tolist()
    probe = probes + stored + ["never stored"]
    want = [k in set(stored) for k in probe]
    for index in (bk, written):
        assert index.contains(pa.array(probe, pa.string()),
                              _fake_fp(probe, buckets)).tolist() == want


def test_contains_of_an_empty_index_and_batch() -> None:
    empty = decode_base_keys(encode_base_keys(pa.array([], pa.string()), NAME, 0))
    assert len(empty) == 0
    assert empty.contains(pa.array(["a"]), _xxh(["a"])).tolist() == [False]
    full = decode_base_keys(encode_base_keys(pa.array(["a"]), NAME, 0))
    assert full.contains(pa.array([], pa.string()), np.zeros(0, np.uint64)).tolist() == []


# --- damaged bytes ----------------------------------------------------------------------------

SAMPLE_KEYS = ["k1", "k10", "k2", "", "\U0001f600", "a", "a", "Zürich"]


def _fields(data: bytes) -> dict[str, int]:
    """Where the fields of an index sit: name, lengths, payload."""
    name_len = struct.unpack_from("<I", data, 20)[0]
    return {"name": HEAD.size, "lengths": HEAD.size + name_len,
            "payload": HEAD.size + name_len + LENGTHS.size}


def _refresh_crc(data: bytearray) -> None:
    """A damage the CRC does not see: recompute it over the (changed) payload."""
    if len(data) < HEAD.size:
        return
    f = _fields(bytes(data))
    if len(data) >= f["payload"]:
        struct.pack_into("<I", data, f["lengths"] + 16, zlib.crc32(data[f["payload"]:]))


def _check_valid(bk: BaseKeys) -> None:
    """A decode that succeeds gives something a reader can use."""
    fp = bk.fingerprints
    assert len(fp) == len(bk.keys)
    assert fp.tolist() == sorted(fp.tolist())
    bk.keys.validate(full=True)
    keys = bk.keys.to_pylist()
    bk.contains(pa.array(keys + ["x"], pa.string()), _xxh(keys + ["x"]))


MUTATION = st.tuples(st.sampled_from(["flip", "flip_payload", "set_u32", "set_u64",
                                      "truncate", "junk", "insert", "delete"]),
                     st.floats(0, 1, exclude_max=True), st.integers(0, 2**64 - 1),
                     st.binary(min_size=1, max_size=9))


def _mutate(data: bytearray, how: str, at: float, value: int, junk: bytes,
            targets: list[int], payload: int) -> None:
    i = int(at * len(data)) if data else 0
    if how in ("set_u32", "set_u64") and targets:
        i = targets[int(at * len(targets))]  # a length, count, offset or fingerprint field
    if how == "flip_payload" and len(data) > payload:  # seen by the CRC unless refreshed
        data[payload + int(at * (len(data) - payload))] ^= junk[0] or 1
    elif how == "flip" and data:
        data[i] ^= junk[0] or 1
    elif how == "set_u32" and i + 4 <= len(data):
        struct.pack_into("<I", data, i, value & 0xFFFFFFFF)
    elif how == "set_u64" and i + 8 <= len(data):
        struct.pack_into("<Q", data, i, value)
    elif how == "truncate":
        del data[i:]
    elif how == "junk":
        data[i : i + len(junk)] = junk
    elif how == "insert":
        data[i:i] = junk
    elif how == "delete":
        del data[i : i + len(junk)]


@settings(max_examples=300 * SCALE, deadline=None)
@given(codec=st.sampled_from([CODEC_NONE, CODEC_ZSTD]),
       mutations=st.lists(MUTATION, min_size=1, max_size=3), refresh_crc=st.booleans())
def test_damaged_indexes_raise_only_morlog_errors(codec: int, mutations: list[Any],
                                                  refresh_crc: bool) -> None:
    data = bytearray(encode_base_keys(pa.array(SAMPLE_KEYS), NAME, 1234, codec=codec))
    f = _fields(bytes(data))
    n = len(SAMPLE_KEYS)
    # the integer fields: count, name length, the three lengths, and (codec 0) the arrays
    targets = [16, 20, f["lengths"], f["lengths"] + 8, f["lengths"] + 16]
    if codec == CODEC_NONE:
        targets += [f["payload"] + 8 * i for i in range(n)]
        targets += [f["payload"] + 8 * n + 4 * i for i in range(n + 1)]
    for how, at, value, junk in mutations:
        _mutate(data, how, at, value, junk, targets, f["payload"])
    if refresh_crc:
        _refresh_crc(data)
    try:
        bk = decode_base_keys(bytes(data), path="fuzzed")
    except MorlogError as exc:
        assert exc.path == "fuzzed"
        return
    _check_valid(bk)


@pytest.mark.parametrize("codec", [CODEC_NONE, CODEC_ZSTD])
def test_every_damaged_payload_byte_behind_a_valid_crc(codec: int) -> None:
    """Exhaustively: each payload byte changed (three ways) and the CRC recomputed, so that
    only the payload's own checks (decompression, offsets, order, UTF-8) can tell."""
    data = encode_base_keys(pa.array(SAMPLE_KEYS), NAME, 1234, codec=codec)
    at = _fields(data)["payload"]
    outcomes = {"error": 0, "valid": 0}
    for i in range(at, len(data)):
        for xor in (0x01, 0x80, 0xFF):
            b = bytearray(data)
            b[i] ^= xor
            _refresh_crc(b)
            try:
                bk = decode_base_keys(bytes(b), path="flipped")
            except MorlogError as exc:
                assert exc.path == "flipped"
                outcomes["error"] += 1
                continue
            _check_valid(bk)
            outcomes["valid"] += 1
    assert outcomes["error"] > 0


# --- tables -----------------------------------------------------------------------------------

SCHEMA = pa.schema([("id", pa.string()), ("p", pa.string()), ("ts", pa.int64()),
                    ("v", pa.int64())])
SMALL = {"max_file_size": 4096, "small_file_limit": 2048, "record_size": 512}


def _part(k: str) -> str:
    return "ab"[int(k[1:]) % 2]


def _batch(keys: list[str], ts: int = 1, v: int = 0) -> pa.Table:
    return pa.table({"id": keys, "p": [_part(k) for k in keys], "ts": [ts] * len(keys),
                     "v": [v] * len(keys)}, schema=SCHEMA)


def _create(root: Path, **config: Any) -> MorTable:
    return MorTable.create(str(root), SCHEMA, key_field="id", partition_field="p",
                           ordering_field="ts", config=WriteConfig(fsync=False, **config))


def _base_files(root: Path) -> dict[tuple[str, str], Path]:
    """(partition, name) -> path of every base file on storage."""
    return {(str(p.parent.relative_to(root)) if p.parent != root else "", p.name): p
            for p in root.rglob("*.parquet") if ".hoodie" not in p.relative_to(root).parts}


def _index_files(root: Path) -> dict[tuple[str, str], Path]:
    """(partition, base file name) -> path of every base-key index on storage."""
    top = root / ".hoodie" / "morlog" / "base_keys"
    out = {}
    for p in top.rglob("*.keys") if top.exists() else []:
        part = str(p.parent.relative_to(top)) if p.parent != top else ""
        out[(part, p.name[: -len(".keys")])] = p
    return out


def _check_indexes(root: Path, key_column: Any = None) -> int:
    """Every base file has exactly one index, of its name, size and keys (a multiset);
    returns the number of indexes."""
    bases, indexes = _base_files(root), _index_files(root)
    assert set(indexes) == set(bases)
    for (part, name), path in bases.items():
        data = indexes[(part, name)].read_bytes()
        assert data[5] == CODEC_ZSTD  # morlog writes zstd (§12.2)
        bk = decode_base_keys(data)
        assert (bk.base_file, bk.base_size) == (name, path.stat().st_size)
        rows = pq.read_table(path)
        keys = (rows.column("_hoodie_record_key").to_pylist() if key_column is None
                else key_column(rows).to_pylist())
        assert sorted(bk.keys.to_pylist()) == sorted(keys)
        # each fingerprint is its own key's XXH64: the index a fresh encode of the keys gives
        assert (bk.fingerprints == xxh64_batch(KeyBatch.of(bk.keys))).all()
        assert data == encode_base_keys(pa.array(keys, pa.string()), name, bk.base_size)
    loc = Table(str(root)).location
    for part, name in indexes:  # where the reader looks (§12.1)
        assert Path(base_keys_path(loc, part, name)) == indexes[(part, name)]
        assert Path(base_keys_dir(loc, part)) == indexes[(part, name)].parent
    return len(indexes)


def _tags(root: Path, keys: list[str], *, use_base_keys: bool = True,
          partitions: list[str] | None = None) -> Any:
    return KeyTagger(Table(str(root)), use_base_keys=use_base_keys).tag(keys, partitions)


def _same_tags(root: Path, keys: list[str]) -> Any:
    """Tags through the indexes equal tags through the footers (with and without the keys'
    partitions); returns the indexed result."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", BaseKeysWarning)
        got = _tags(root, keys)
    want = _tags(root, keys, use_base_keys=False)
    assert got.locations == want.locations
    assert got.also == want.also
    assert got.stats.base_footers == 0
    assert got.stats.base_key_indexes == want.stats.base_footers
    parts = [_part(k) for k in keys]
    assert (_tags(root, keys, partitions=parts).locations
            == _tags(root, keys, use_base_keys=False, partitions=parts).locations)
    return got


def test_inserts_write_one_index_per_base_file(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _create(root, **SMALL)
    keys = [f"k{i}" for i in range(60)]
    t.insert(_batch(keys))
    assert _check_indexes(root) >= 4  # several groups per partition (small files)
    tags = _same_tags(root, keys + ["k999", "k998"])
    assert tags.stats.base_key_indexes == len(_base_files(root))
    assert all(loc is not None for loc in tags.locations[:60])
    assert tags.locations[60:] == [None, None]
    # the index lives under .hoodie: the table's own listing and reads never see it
    assert Table(str(root)).read().num_rows == 60


def test_inserts_index_keys_with_the_hashes_of_the_uniqueness_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch without repeated keys was hashed once to prove it: new base files' indexes
    take their fingerprints from those hashes (each file's rows' own), not a second hashing;
    a batch whose repeats were combined hashes its surviving keys again."""
    import morlog.writers.client as client_mod

    passed: list[bool] = []
    real = client_mod.encode_base_keys

    def spy(keys: pa.Array, name: str, size: int, **kw: Any) -> bytes:
        passed.append(kw.get("hashes") is not None)
        return real(keys, name, size, **kw)

    monkeypatch.setattr(client_mod, "encode_base_keys", spy)
    root = tmp_path / "t"
    t = _create(root, **SMALL)
    t.insert(_batch([f"k{i}" for i in range(0, 120, 2)]))
    assert len(passed) >= 4 and all(passed)
    passed.clear()
    t.insert(_batch([f"k{i}" for i in [*range(1, 120, 2), 5, 7]], ts=2))  # repeats combined
    assert passed and not any(passed)
    _check_indexes(root)
    assert Table(str(root)).read().num_rows == 120


def test_compaction_writes_an_index_for_its_base_file(tmp_path: Path) -> None:
    from morlog.writers.services.compaction import compact

    root = tmp_path / "t"
    t = _create(root)
    t.upsert(_batch([f"k{i}" for i in range(10)]))
    t.upsert(_batch([f"k{i}" for i in range(5, 15)], ts=2, v=1))  # updates and inserts
    t.delete(_batch(["k0", "k1"]))
    before = set(_base_files(root))
    compact(t)
    new = set(_base_files(root)) - before
    assert new and _check_indexes(root) == len(before) + len(new)
    keys = [f"k{i}" for i in range(20)]
    tags = _same_tags(root, keys)
    assert tags.locations[:2] == [None, None] and None not in tags.locations[2:15]
    # every key deleted, then compacted: indexes of no keys
    t.delete(_batch([f"k{i}" for i in range(2, 15)], ts=9))
    compact(t)
    _check_indexes(root)
    latest = Table(str(root)).file_slices()
    assert len(latest) == 2
    for s in latest:
        assert s.base_file is not None and not s.log_files
        assert len(decode_base_keys(_index_files(root)[(s.partition, s.base_file)]
                                    .read_bytes())) == 0
    assert _same_tags(root, keys).locations == [None] * 20


@pytest.mark.parametrize("how", ["config", "option"])
def test_the_option_turns_indexes_off(tmp_path: Path, how: str) -> None:
    from morlog.writers.services.compaction import compact

    root = tmp_path / "t"
    cfg = (WriteConfig(fsync=False, base_key_index=False) if how == "config" else
           WriteConfig.from_hoodie_options({"morlog.base.key.index": "false"}))
    assert cfg.base_key_index is False
    assert WriteConfig.from_hoodie_options({"morlog.base.key.index": "true"}).base_key_index
    t = MorTable.create(str(root), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", config=cfg)
    keys = [f"k{i}" for i in range(10)]
    t.upsert(_batch(keys))
    t.upsert(_batch(keys[:4], ts=2))
    compact(t)
    assert _base_files(root) and not _index_files(root)
    tags = _tags(root, keys)
    assert tags.stats.base_key_indexes == 0 and tags.stats.base_footers > 0
    assert None not in tags.locations


def test_the_cleaner_deletes_the_indexes_of_the_base_files_it_deletes(tmp_path: Path) -> None:
    from morlog.writers.services.cleaning import clean
    from morlog.writers.services.compaction import compact

    root = tmp_path / "t"
    t = _create(root)
    keys = [f"k{i}" for i in range(12)]
    t.upsert(_batch(keys))
    first = set(_base_files(root))
    t.upsert(_batch(keys[:6], ts=2))
    compact(t)
    t.upsert(_batch(keys[6:], ts=3))
    compact(t)
    assert set(_index_files(root)) == set(_base_files(root)) > first
    report = clean(t, options={"hoodie.clean.commits.retained": "1"})
    deleted = {(p, n) for r in report.results for p, n in r.deleted}
    assert first <= deleted  # the first base files are two slices old
    assert set(_index_files(root)) == set(_base_files(root))
    assert not set(_index_files(root)) & deleted
    _check_indexes(root)
    _same_tags(root, keys + ["k99"])
    # a whole partition dropped and cleaned: none of its indexes stays behind
    t.delete_partitions(["a"])
    t.upsert(_batch(["k1"], ts=4))  # the replace commit is no longer the one retained
    clean(t, options={"hoodie.clean.commits.retained": "1"})
    assert not [k for k in _index_files(root) if k[0] == "a"]
    assert set(_index_files(root)) == set(_base_files(root))
    _same_tags(root, keys)


def test_a_write_whose_index_fails_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    """§12.1: a write whose index cannot be written fails like one whose base file cannot
    (rolled back: no base file, no index); a compaction so failed leaves its plan requested,
    and the next run replaces what the failed attempt left."""
    from morlog.logformat.errors import WriteError
    from morlog.writers.core import store as store_mod
    from morlog.writers.core.timeline import TimelineWriter
    from morlog.writers.services.compaction import compact

    root = tmp_path / "t"
    t = _create(root)
    real_create = store_mod.LocalStore.create

    def no_index(self: Any, path: str, data: bytes, *, sync: bool = True) -> bool:
        if path.endswith(".keys"):
            raise OSError(28, "No space left on device")
        return real_create(self, path, data, sync=sync)

    keys = [f"k{i}" for i in range(8)]
    monkeypatch.setattr(store_mod.LocalStore, "create", no_index)
    with pytest.raises(WriteError):
        t.upsert(_batch(keys))
    monkeypatch.undo()
    view = Table(str(root))
    assert view.timeline.pending() == [] and view.read().num_rows == 0
    assert not _base_files(root) and not _index_files(root)
    t.upsert(_batch(keys))
    t.upsert(_batch(keys[:3], ts=2))
    before = set(_index_files(root))
    # the compaction's index fails: the plan stays requested, no new base file stays
    monkeypatch.setattr(store_mod.LocalStore, "create", no_index)
    with pytest.raises(WriteError):
        compact(t)
    monkeypatch.undo()
    assert [i.action for i in Table(str(root)).timeline.pending()] == ["compaction"]
    assert set(_base_files(root)) == before == set(_index_files(root))
    # the compaction fails after writing base files and indexes; their indexes stay behind,
    # damaged here, and the next run writes the same base files and replaces them
    real_write = TimelineWriter.write

    def no_commit(self: Any, instant: str, state: str, meta: Any,
                  action: str = "deltacommit") -> Any:
        if state == "completed" and action == "commit":
            raise OSError(5, "I/O error")
        return real_write(self, instant, state, meta, action)

    monkeypatch.setattr(TimelineWriter, "write", no_commit)
    with pytest.raises(WriteError):
        compact(t)
    monkeypatch.undo()
    left = set(_index_files(root)) - before
    assert left and not set(_base_files(root)) - before
    for k in left:
        _index_files(root)[k].write_bytes(b"left by a failed attempt")
    compact(t)
    assert Table(str(root)).timeline.pending() == []
    assert set(_index_files(root)) - before == left
    _check_indexes(root)
    _same_tags(root, keys + ["k9"])


@pytest.mark.parametrize("partitioned", [True, False])
def test_the_next_writer_sweeps_temporary_files_left_in_index_directories(
        tmp_path: Path, partitioned: bool) -> None:
    """A writer that died while publishing an index leaves its temporary file in the index
    directory; the next writer removes it, as in the partitions."""
    import time

    root = tmp_path / "t"
    t = MorTable.create(str(root), SCHEMA, key_field="id",
                        partition_field="p" if partitioned else None, ordering_field="ts",
                        config=WriteConfig(fsync=False))
    t.upsert(_batch(["k1", "k2"]))
    (index,) = [p for p in _index_files(root).values() if p.parent.name in ("a", "base_keys")]
    orphan = index.parent / ".morlog-tmp-dead"
    orphan.write_bytes(index.read_bytes()[:10])
    past = time.time() - 2 * 86400  # old enough for any age rule
    os.utime(orphan, (past, past))
    t.upsert(_batch(["k3"], ts=2))
    assert not orphan.exists() and index.exists()


HISTORY = st.lists(st.one_of(
    st.tuples(st.just("upsert"), st.lists(st.integers(0, 30), min_size=1, max_size=12)),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 30), min_size=1, max_size=6)),
    st.tuples(st.just("compact")),
), min_size=1, max_size=5)


@settings(max_examples=50 * SCALE, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(history=HISTORY, new_groups=st.sampled_from(["base", "log"]), small=st.booleans())
def test_tags_through_indexes_equal_tags_through_footers(
        tmp_path_factory: pytest.TempPathFactory, history: list[tuple[Any, ...]],
        new_groups: str, small: bool) -> None:
    from morlog.writers.services.compaction import compact

    root = tmp_path_factory.mktemp("hist") / "t"
    t = _create(root, new_groups=new_groups, **(SMALL if small else {}))
    live: set[str] = set()
    for n, op in enumerate(history):
        keys = sorted({f"k{i}" for i in op[1]}) if len(op) > 1 else []
        if op[0] == "upsert":
            t.upsert(_batch(keys, ts=n, v=n))
            live |= set(keys)
        elif op[0] == "delete":
            t.delete(_batch(keys, ts=n))
            live -= set(keys)
        else:
            compact(t)
    _check_indexes(root)
    probe = [f"k{i}" for i in range(32)]
    tags = _same_tags(root, probe)
    # live keys are found; a deleted key may still be (its group holds it until compacted)
    located = {k for k, loc in zip(probe, tags.locations, strict=True) if loc}
    assert live <= located and "k31" not in located
    view = Table(str(root))
    for inst in view.timeline.instants:  # time travel: older slices' base files have theirs
        if inst.state == "COMPLETED":
            then = KeyTagger(view, as_of=inst.requested).tag(probe)
            assert then.stats.base_footers == 0
            assert then.locations == KeyTagger(view, as_of=inst.requested,
                                               use_base_keys=False).tag(probe).locations


# --- an index that does not match its base file ------------------------------------------


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "t"
    t = _create(root)
    keys = [f"k{i}" for i in range(20)]
    t.upsert(_batch(keys))
    t.upsert(_batch(keys[:3] + ["k20", "k21"], ts=2))  # logs beside the base files
    assert _check_indexes(root) == 2
    return root, keys + ["k20", "k21", "k22", "nope"]


def _warned_tags(root: Path, keys: list[str], damaged: int = 1) -> Any:
    """Tagging warns once per unusable index, and the footer path answers for it."""
    with pytest.warns(BaseKeysWarning) as caught:
        got = _tags(root, keys)
    assert len([w for w in caught if issubclass(w.category, BaseKeysWarning)]) == damaged
    want = _tags(root, keys, use_base_keys=False)
    assert got.locations == want.locations
    assert (got.stats.base_footers, got.stats.base_key_indexes) == (
        damaged, want.stats.base_footers - damaged)
    return got


def test_a_base_file_rewritten_under_its_name_is_not_tagged_by_its_old_index(
        indexed: tuple[Path, list[str]]) -> None:
    """A retried task rewrote the base file (other rows, another size): the index of the
    first attempt must not answer for it."""
    root, keys = indexed
    (part, name), path = sorted(_base_files(root).items())[0]
    rows = pq.read_table(path)
    kept = rows.slice(0, rows.num_rows // 2)
    pq.write_table(kept.replace_schema_metadata(rows.schema.metadata), path)
    gone = set(rows.column("id").to_pylist()) - set(kept.column("id").to_pylist())
    old = decode_base_keys(_index_files(root)[(part, name)].read_bytes())
    assert gone and old.base_size != path.stat().st_size
    got = _warned_tags(root, keys)
    located = dict(zip(keys, got.locations, strict=True))
    # the dropped keys are not in the rewritten file (those updated since live in its log)
    in_log = {"k0", "k1", "k2"}
    assert all(located[k] is None for k in gone - in_log)


def test_an_index_naming_another_file_is_not_used(indexed: tuple[Path, list[str]]) -> None:
    root, keys = indexed
    (a, b) = sorted(_index_files(root).items())
    shutil.copyfile(a[1], b[1])  # b's index now describes a's base file
    _warned_tags(root, keys)


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "junk", "zstd-payload"])
def test_a_damaged_index_warns_and_the_footer_answers(indexed: tuple[Path, list[str]],
                                                      damage: str) -> None:
    root, keys = indexed
    path = sorted(_index_files(root).values())[0]
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x40
    elif damage == "truncate":
        del data[len(data) - 3 :]
    elif damage == "empty":
        data = bytearray()
    elif damage == "junk":
        data = bytearray(random.Random(7).randbytes(len(data)))
    else:  # a payload that is not zstd, with its CRC: only decompression can tell
        at = _fields(bytes(data))["payload"]
        data[at:] = bytes(len(data) - at)
        _refresh_crc(data)
    path.write_bytes(bytes(data))
    _warned_tags(root, keys)


def test_indexes_of_a_table_without_meta_fields_hold_the_derived_keys(tmp_path: Path) -> None:
    """``hoodie.populate.meta.fields=false``: the base files hold no record key; the index
    holds the key generator's keys (``id:<id>,sub:<sub>``) and tags them."""
    from morlog.writers.services.compaction import compact

    schema = pa.schema([("id", pa.string()), ("sub", pa.int64()), ("p", pa.string()),
                        ("ts", pa.int64())])
    root = tmp_path / "t"
    t = MorTable.create(str(root), schema, key_field="id", partition_field="p",
                        ordering_field="ts", table_version=9, table_properties={
                            "hoodie.populate.meta.fields": "false",
                            "hoodie.table.recordkey.fields": "id,sub",
                            "hoodie.table.keygenerator.type": "COMPLEX"},
                        config=WriteConfig(fsync=False))
    assert not t.populate_meta_fields

    def batch(ids: range, ts: int) -> pa.Table:
        return pa.table({"id": [f"k{i}" for i in ids], "sub": [i % 2 for i in ids],
                         "p": ["ab"[i % 2] for i in ids], "ts": [ts] * len(ids)}, schema)

    t.upsert(batch(range(10), 1))
    t.upsert(batch(range(5, 12), 2))
    compact(t)
    derived = VirtualKeys(("id", "sub"))
    assert _check_indexes(root, derived.keys) >= 2
    for path in _base_files(root).values():
        assert pq.read_table(path).column("_hoodie_record_key").null_count == pq.read_metadata(
            path).num_rows
    keys = [f"id:k{i},sub:{i % 2}" for i in range(14)] + ["id:k1,sub:0", "k1"]
    got = _tags(root, keys)
    want = _tags(root, keys, use_base_keys=False)
    assert got.locations == want.locations and got.stats.base_key_indexes > 0
    assert [loc is not None for loc in got.locations] == [True] * 12 + [False] * 4


def test_nested_hive_style_and_default_partitions(tmp_path: Path) -> None:
    """The index directory mirrors the partition path: nested values, Hive-style names,
    Hudi's default partition for a null value."""
    root = tmp_path / "t"
    t = MorTable.create(str(root), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", config=WriteConfig(fsync=False),
                        table_properties={
                            "hoodie.datasource.write.hive_style_partitioning": "true"})
    keys = [f"k{i}" for i in range(8)]
    parts = ["eu/2025/01", "us", "eu/2025/02", None, "eu/2025/01", "us", None, "eu/2025/02"]
    t.upsert(pa.table({"id": keys, "p": parts, "ts": [1] * 8, "v": [0] * 8}, schema=SCHEMA))
    assert sorted(_index_files(root)) == sorted(_base_files(root))
    assert {p for p, _ in _index_files(root)} == {
        "p=eu/2025/01", "p=eu/2025/02", "p=us", "p=__HIVE_DEFAULT_PARTITION__"}
    assert _check_indexes(root) == 4
    got = _tags(root, keys + ["k9"])
    assert got.locations == _tags(root, keys + ["k9"], use_base_keys=False).locations
    assert got.stats.base_key_indexes == 4 and got.locations[-1] is None


@pytest.mark.parametrize(("version", "metadata"), [(9, True), (9, False), (6, False)])
def test_hudi_rs_reads_a_table_with_indexes(tmp_path: Path, version: int,
                                            metadata: bool) -> None:
    """hudi-rs lists partitions through the metadata table or the file system: the
    indexes under ``.hoodie`` are in neither."""
    hudi = pytest.importorskip("hudi", reason="the hudi package (hudi-rs) is not installed")
    from morlog.writers.services.compaction import compact

    from .hudi_rs import rows

    root = tmp_path / "t"
    t = MorTable.create(str(root), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", table_version=version, config=WriteConfig(
                            fsync=False,
                            hoodie_options={"hoodie.metadata.enable": str(metadata).lower()}))
    keys = [f"k{i}" for i in range(16)]
    t.upsert(_batch(keys))
    t.upsert(_batch(keys[:5], ts=2, v=1))
    compact(t)
    t.upsert(_batch(keys[3:8] + ["k16"], ts=3, v=2))
    t.delete(_batch(["k9"]))
    assert _check_indexes(root) >= 4
    ours = rows(Table(str(root)).read(), "id", ["id", "p", "ts", "v"])
    batches = hudi.HudiTableBuilder.from_base_uri(str(root)).build().read()
    theirs = rows(pa.Table.from_batches(batches), "id", ["id", "p", "ts", "v"])
    assert theirs == ours and len(ours) == 16
    assert Table(str(root)).partitions() == ["a", "b"]
    assert os.path.isdir(root / ".hoodie" / "morlog" / "base_keys" / "a")


def test_indexes_on_s3(s3: str) -> None:
    """On an object store (a local moto server): written beside each base file, used by
    tagging, deleted by the cleaner."""
    pytest.importorskip("boto3", reason="boto3 is not installed (pip install .[test])")
    import uuid

    import pyarrow.fs as pafs

    from morlog.writers.services.cleaning import clean
    from morlog.writers.services.compaction import compact

    bucket = f"t{uuid.uuid4().hex[:12]}"
    uri = f"s3://test:test@{bucket}/tbl?{s3}"
    fs, _ = pafs.FileSystem.from_uri(uri)
    fs.create_dir(bucket)
    t = MorTable.create(uri, SCHEMA, key_field="id", partition_field="p", ordering_field="ts",
                        config=WriteConfig(fsync=False))
    keys = [f"k{i}" for i in range(10)]
    t.upsert(_batch(keys))
    t.upsert(_batch(keys[:4], ts=2))
    compact(t)

    def objects() -> tuple[set[str], set[str]]:
        names = [i.path for i in fs.get_file_info(pafs.FileSelector(f"{bucket}/tbl",
                                                                    recursive=True))]
        return ({n.rsplit("/", 1)[1] for n in names if n.endswith(".parquet")},
                {n.rsplit("/", 1)[1][: -len(".keys")] for n in names if n.endswith(".keys")})

    bases, indexes = objects()
    assert len(bases) == 4 and indexes == bases
    got = KeyTagger(Table(uri)).tag(keys + ["k99"])
    want = KeyTagger(Table(uri), use_base_keys=False).tag(keys + ["k99"])
    assert got.locations == want.locations and got.locations[-1] is None
    assert (got.stats.base_key_indexes, got.stats.base_footers) == (2, 0)
    t.upsert(_batch(keys[4:], ts=3))
    compact(t)
    report = clean(t, options={"hoodie.clean.commits.retained": "1"})
    deleted = {n for r in report.results for _, n in r.deleted}
    bases, indexes = objects()
    assert deleted and not deleted & bases and indexes == bases
