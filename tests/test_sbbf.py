"""XXH64 and the split-block bloom filter of indexed blocks."""

from __future__ import annotations

import random
import uuid

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from hypothesis import given
from hypothesis import strategies as st

from morlog.logformat.errors import ContentError, UsageError
from morlog.logformat.keybatch import KeyBatch
from morlog.logformat.sbbf import SALT, SplitBlockBloom, blocks_for, expected_fpp
from morlog.logformat.xxh64 import xxh64_batch


@given(st.lists(st.binary(max_size=100), max_size=50), st.integers(0, 2**64 - 1))
def test_xxh64_matches_the_reference_library(keys: list[bytes], seed: int) -> None:
    got = xxh64_batch(KeyBatch.of(pa.array(keys, type=pa.binary())), seed)
    assert [int(h) for h in got] == [xxhash.xxh64_intdigest(k, seed=seed) for k in keys]


def test_xxh64_chunks_and_lengths_mixed() -> None:
    rng = random.Random(3)
    keys = [bytes(rng.randrange(256) for _ in range(rng.randrange(90))) for _ in range(40_000)]
    got = xxh64_batch(KeyBatch.of(pa.array(keys, type=pa.binary())))
    assert [int(h) for h in got] == [xxhash.xxh64_intdigest(k) for k in keys]


def _reference_positions(key: bytes, num_blocks: int) -> tuple[int, list[int]]:
    """Block and per-word bit of a key, straight from Parquet's BloomFilter.md."""
    h = xxhash.xxh64_intdigest(key)
    block = ((h >> 32) * num_blocks) >> 32
    x = h & 0xFFFFFFFF
    return block, [((x * int(s)) & 0xFFFFFFFF) >> 27 for s in SALT]


@given(st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=50), st.integers(1, 40))
def test_bit_layout_is_parquets(keys: list[str], num_blocks: int) -> None:
    f = SplitBlockBloom.empty(num_blocks)
    f.insert(keys)
    expected = np.zeros((num_blocks, 8), dtype=np.uint32)
    for k in keys:
        block, bits = _reference_positions(k.encode(), num_blocks)
        for i, b in enumerate(bits):
            expected[block, i] |= np.uint32(1 << b)
    assert (f.words == expected).all()
    raw = f.to_bytes()
    assert len(raw) == 32 * num_blocks
    # little-endian words, blocks in order
    assert int.from_bytes(raw[4:8], "little") == int(expected[0, 1])


def test_bit_layout_of_a_large_filter_filled_twice() -> None:
    """The vectorised insert (uint32 bit positions, built in place) sets Parquet's bits in
    a filter of many blocks, and a second insert ORs into the first's words."""
    rng = random.Random(11)
    keys = [uuid.UUID(int=rng.getrandbits(128)).hex for _ in range(3000)]
    num_blocks = 70_001
    f = SplitBlockBloom.empty(num_blocks)
    f.insert(keys[:1000])
    f.insert_hashes(xxh64_batch(KeyBatch.of(keys[1000:])))
    expected = np.zeros((num_blocks, 8), dtype=np.uint32)
    for k in keys:
        block, bits = _reference_positions(k.encode(), num_blocks)
        for i, b in enumerate(bits):
            expected[block, i] |= np.uint32(1 << b)
    assert f.words.dtype == np.uint32 and f.words.shape == (num_blocks, 8)
    assert (f.words == expected).all()
    assert f == SplitBlockBloom.from_bytes(expected.astype("<u4").tobytes())


@given(st.lists(st.text(max_size=40), max_size=400))
def test_no_false_negatives_and_round_trip(keys: list[str]) -> None:
    f = SplitBlockBloom.for_keys(keys)
    assert f.check(keys).all()
    g = SplitBlockBloom.from_bytes(f.to_bytes())
    assert g.to_bytes() == f.to_bytes() and g.check(keys).all()


@pytest.mark.parametrize("fpp", [0.01, 0.001])
def test_measured_false_positive_rate_is_within_1_5x(fpp: float) -> None:
    present = pa.array([str(uuid.UUID(int=random.Random(1).getrandbits(128) ^ i))
                        for i in range(20_000)])
    rng = random.Random(2)
    absent = pa.array([str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(400_000)])
    f = SplitBlockBloom.for_keys(present, fpp=fpp)
    rate = float(f.check(absent).mean())
    assert rate <= 1.5 * fpp, rate
    assert rate >= fpp / 3  # not absurdly oversized either


def test_sizing_is_the_smallest_that_meets_the_rate() -> None:
    for n in (1, 100, 2000, 123_457):
        z = blocks_for(n, 0.01)
        assert expected_fpp(n, z) <= 0.01
        if z > 1:
            assert expected_fpp(n, z - 1) > 0.01
    with pytest.raises(UsageError):
        blocks_for(10, 1.5)


def test_union_and_bad_bytes() -> None:
    a = SplitBlockBloom.for_keys(["a", "b"], ndv=100)
    b = SplitBlockBloom.for_keys(["c"], ndv=100)
    assert a.union(b).check(["a", "b", "c"]).all()
    with pytest.raises(UsageError):
        a.union(SplitBlockBloom.empty(a.num_blocks + 1))
    for bad in (b"", b"x" * 33):
        with pytest.raises(ContentError):
            SplitBlockBloom.from_bytes(bad)
