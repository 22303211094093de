"""Hudi's SIMPLE and DYNAMIC_V0 bloom filters: bit-exact against Hudi-written base files."""

from __future__ import annotations

import random
import string
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from morlog.logformat.errors import ContentError
from morlog.logformat.hudi_bloom import (
    DEFAULT_NUM_ENTRIES,
    DynamicBloomV0,
    SimpleBloom,
    murmur_hadoop,
    optimal_size,
    parse_hudi_bloom,
)
from morlog.logformat.keybatch import KeyBatch

from .hudi_fixtures import ROOT, requires_fixtures


def _reference_murmur(data: bytes, seed: int, sign_extend: bool = True) -> int:
    """Straight transcription of the algorithm in the facts file (Java int semantics)."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    h = (seed ^ len(data)) & mask
    n4 = len(data) >> 2
    for i in range(n4):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = (h * m) & mask
        h ^= k
    left = len(data) - 4 * n4

    def signed_byte(b: int) -> int:
        return (b - 256 if b > 127 and sign_extend else b) & mask

    if left:
        if left >= 3:
            h ^= (signed_byte(data[-3]) << 16) & mask
        if left >= 2:
            h ^= (signed_byte(data[-2]) << 8) & mask
        h ^= signed_byte(data[-1])
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - 2**32 if h >= 2**31 else h


def test_hash_vectors_from_the_facts_file() -> None:
    h1 = murmur_hadoop(b"1", 0)
    assert (h1, murmur_hadoop(b"1", h1)) == (1228156847, 121740187)
    assert murmur_hadoop(b"TXN-001", 0) == -1349093075
    m = 2_587_966
    f = SimpleBloom(m, 30)
    f.add(["1"])
    expected = [1460963, 105785, 1189081, 2066078]
    for p in expected:
        assert f.bits[p >> 3] & (1 << (p & 7))


@given(st.binary(min_size=1, max_size=40), st.integers(-(2**31), 2**31 - 1))
def test_vectorized_murmur_equals_the_reference(data: bytes, seed: int) -> None:
    assert murmur_hadoop(data, seed) == _reference_murmur(data, seed)


def test_sign_extended_tail_quirk() -> None:
    # a tail byte >= 0x80 XORs in sign-extended high bits
    assert murmur_hadoop("aé".encode(), 0) == _reference_murmur("aé".encode(), 0)
    masked = _reference_murmur(b"a\xc3", 0, sign_extend=False)
    assert murmur_hadoop(b"a\xc3", 0) == _reference_murmur(b"a\xc3", 0) != masked


def test_sizing_matches_hudi() -> None:
    assert optimal_size(60_000, 1e-9) == (2_587_966, 30)
    assert optimal_size(1000, 0.01) == (9586, 7)


def _fixture_base_files() -> list[Path]:
    if ROOT is None:
        return []
    out = []
    for p in sorted((ROOT / "tables").rglob("*.parquet")):
        md = pq.read_metadata(p).metadata or {}
        if b"org.apache.hudi.bloomfilter" in md:
            out.append(p)
    return out


@requires_fixtures
@pytest.mark.parametrize("path", _fixture_base_files(), ids=lambda p: p.name)
def test_fixture_filters_rebuild_byte_for_byte(path: Path) -> None:
    md = pq.read_metadata(path).metadata
    stored = md[b"org.apache.hudi.bloomfilter"].decode()
    type_code = md.get(b"hoodie_bloom_filter_type_code", b"").decode() or None
    keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0).combine_chunks()
    parsed = parse_hudi_bloom(stored, type_code)
    assert parsed.contains(keys).all()
    assert md[b"hoodie_min_record_key"].decode() == min(keys.to_pylist())
    assert md[b"hoodie_max_record_key"].decode() == max(keys.to_pylist())
    rebuilt: SimpleBloom | DynamicBloomV0
    if type_code == "DYNAMIC_V0":
        rebuilt = DynamicBloomV0(DEFAULT_NUM_ENTRIES)
    else:
        rebuilt = SimpleBloom.sized()
    rebuilt.add(keys)
    assert rebuilt.to_base64() == stored


@requires_fixtures
def test_every_fixture_table_has_filters_to_check() -> None:
    assert len(_fixture_base_files()) >= 20


keys_st = st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=300, unique=True)


@given(keys_st)
def test_no_false_negatives_and_round_trip(keys: list[str]) -> None:
    simple = SimpleBloom.sized(max(len(keys), 1), 0.01)
    simple.add(keys)
    assert simple.contains(keys).all()
    again = parse_hudi_bloom(simple.to_base64())
    assert isinstance(again, SimpleBloom)
    assert again.to_base64() == simple.to_base64() and again.contains(keys).all()
    dyn = DynamicBloomV0(max(len(keys) // 3, 1), 0.01, max_entries=max(len(keys) // 2, 1))
    dyn.add(keys)
    assert dyn.contains(keys).all()
    back = parse_hudi_bloom(dyn.to_base64(), "DYNAMIC_V0")
    assert back.to_base64() == dyn.to_base64() and back.contains(keys).all()


def test_dynamic_growth_rule() -> None:
    f = DynamicBloomV0(10, 0.01, max_entries=20)
    f.add([f"k{i}" for i in range(10)])
    assert (len(f.rows), f.current_nb_record) == (1, 10)
    f.add(["k10"])
    assert (len(f.rows), f.current_nb_record) == (2, 1)
    f.add([f"k{i}" for i in range(11, 20)])
    assert (len(f.rows), f.current_nb_record) == (2, 10)
    # bound reached: row 0 twice, then round robin 1, 0, 1...
    before = [r.bits.copy() for r in f.rows]
    f.add(["x0"])
    assert f.bounded and (before[0] != f.rows[0].bits).any()
    assert (before[1] == f.rows[1].bits).all()
    probe = [r.bits.copy() for r in f.rows]
    f.add(["x1"])
    assert (probe[1] == f.rows[1].bits).all() and (probe[0] != f.rows[0].bits).any()
    f.add(["x2"])
    assert (probe[1] != f.rows[1].bits).any()
    assert f.current_nb_record == 13
    # batched adds make the same filter as one-by-one adds
    g = DynamicBloomV0(10, 0.01, max_entries=20)
    for k in [f"k{i}" for i in range(20)] + ["x0", "x1", "x2"]:
        g.add([k])
    assert g.to_base64() == f.to_base64()


def test_false_positive_rate_is_near_the_configured_rate() -> None:
    rng = random.Random(7)
    keys = ["".join(rng.choices(string.ascii_letters, k=16)) for _ in range(5000)]
    probes = ["".join(rng.choices(string.ascii_letters, k=17)) for _ in range(200_000)]
    f = SimpleBloom.sized(5000, 0.01)
    f.add(keys)
    rate = float(np.mean(f.contains(probes)))
    assert 0.005 < rate < 0.015


def test_key_batches_keep_the_callers_order() -> None:
    keys = ["bb", "a", "ccc", "dd", "", "e"]
    batch = KeyBatch.of(pa.array(keys))
    seen = {}
    for g in batch:
        for i, row in zip(g.index, g.matrix, strict=True):
            seen[int(i)] = bytes(row).decode()
    assert [seen[i] for i in range(len(keys))] == keys


@pytest.mark.parametrize("text", ["not base64!", "AAAA", "/////wAAAB4BACd9PgAA"])
def test_bad_serialized_filters_are_typed_errors(text: str) -> None:
    with pytest.raises(ContentError):
        parse_hudi_bloom(text)
    with pytest.raises(ContentError):
        parse_hudi_bloom(text, "DYNAMIC_V0")


@requires_fixtures
@pytest.mark.parametrize("path", _fixture_base_files()[:8], ids=lambda p: p.name)
def test_base_footer_reader_answers_for_every_key(path: Path) -> None:
    from morlog.compat.base_footer import parse_base_footer

    info = parse_base_footer(pq.read_metadata(path).metadata)
    keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0).to_pylist()
    assert info.bloom is not None and info.type_code == "DYNAMIC_V0"
    assert all(info.may_contain_range(k) for k in keys)
    assert not info.may_contain_range("\x00") and not info.may_contain_range("\U0010ffff")
    assert info.bloom.contains(keys).all()


def test_base_footer_without_hudi_keys() -> None:
    from morlog.compat.base_footer import parse_base_footer

    info = parse_base_footer({b"writer.model.name": b"avro"})
    assert (info.bloom, info.type_code, info.min_key, info.max_key) == (None, None, None, None)
    assert info.may_contain_range("anything")
    simple = SimpleBloom.sized(10, 0.01)
    simple.add(["k"])
    info = parse_base_footer({b"com.uber.hoodie.bloomfilter": simple.to_base64().encode()})
    assert info.type_code == "SIMPLE" and info.bloom is not None and info.bloom.contains(["k"])[0]


@given(keys_st, st.lists(st.text(min_size=1, max_size=30), max_size=200))
def test_shared_hash_chain_gives_the_same_answers(keys: list[str], probes: list[str]) -> None:
    from morlog.logformat.hudi_bloom import HashChain

    filters = [SimpleBloom.sized(max(len(keys), 1), 0.01), SimpleBloom.sized(100, 0.001)]
    for f in filters:
        f.add(keys)
    batch = KeyBatch.of(pa.array(keys + probes, type=pa.string()))
    chain = HashChain(batch)
    for f in filters:  # one chain, filters of different sizes and hash counts
        assert (f.contains(batch, chain) == f.contains(batch)).all()


class _ReferenceDynamic:
    """Hudi's DYNAMIC_V0 filter written the slow, obvious way: one key at a time, following
    ``InternalDynamicBloomFilter.add``/``getActiveStandardBF`` (hudi-common, package
    org.apache.hudi.common.bloom) line by line, bits set with the reference murmur."""

    def __init__(self, nr: int, fpp: float, max_nr: int) -> None:
        self.m, self.k = optimal_size(nr, fpp)
        self.nr, self.max_nr = nr, max_nr
        self.count = 0
        self.reached_max = False
        self.cur_index = 0
        self.matrix = [bytearray((self.m + 7) // 8)]

    def _active(self) -> bytearray | None:
        if self.reached_max:
            row = self.matrix[self.cur_index % len(self.matrix)]
            self.cur_index += 1
            return row
        if self.count >= self.nr and len(self.matrix) * self.nr < self.max_nr:
            return None
        if self.count >= self.nr and len(self.matrix) * self.nr >= self.max_nr:
            self.reached_max = True
            return self.matrix[0]
        return self.matrix[-1]

    def add(self, key: str) -> None:
        row = self._active()
        if row is None:
            self.matrix.append(bytearray((self.m + 7) // 8))
            row = self.matrix[-1]
            self.count = 0
        h = 0
        for _ in range(self.k):
            h = _reference_murmur(key.encode(), h)
            p = abs(h) % self.m  # Java: Math.abs(h % m), the remainder taking h's sign
            row[p >> 3] |= 1 << (p & 7)
        self.count += 1

    def serialize(self) -> bytes:
        def head(k: int, m: int) -> bytes:
            return (-1).to_bytes(4, "big", signed=True) + k.to_bytes(4, "big") + b"\x01" + \
                m.to_bytes(4, "big")

        out = head(self.k, self.m) + self.nr.to_bytes(4, "big") + \
            self.count.to_bytes(4, "big") + len(self.matrix).to_bytes(4, "big")
        return out + b"".join(head(self.k, self.m) + bytes(r) for r in self.matrix)


@st.composite
def _dynamic_case(draw: st.DrawFn) -> tuple[int, float, int, list[str], list[int]]:
    nr = draw(st.integers(3, 50))
    fpp = draw(st.sampled_from([0.3, 0.05, 0.01]))
    # max entries from "one row only" to "several rows", so every mode and edge is crossed
    max_nr = draw(st.integers(1, 4 * nr + 1))
    keys = draw(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=260))
    cuts = sorted(draw(st.lists(st.integers(0, len(keys)), max_size=6)))
    return nr, fpp, max_nr, keys, cuts


@given(_dynamic_case(), st.sampled_from(["list", "string", "large", "sliced", "chunked"]))
def test_vectorized_dynamic_add_equals_the_per_key_reference(
        case: tuple[int, float, int, list[str], list[int]], form: str) -> None:
    nr, fpp, max_nr, keys, cuts = case
    ref = _ReferenceDynamic(nr, fpp, max_nr)
    for key in keys:
        ref.add(key)
    f = DynamicBloomV0(nr, fpp, max_nr)
    for lo, hi in zip([0, *cuts], [*cuts, len(keys)], strict=True):
        part = keys[lo:hi]
        if form == "list":
            f.add(part)
        elif form == "string":
            f.add(pa.array(part, type=pa.string()))
        elif form == "large":
            f.add(pa.array(part, type=pa.large_string()))
        elif form == "sliced":  # a non-zero Arrow offset
            f.add(pa.array(["pad", *part, "pad"], type=pa.string()).slice(1, len(part)))
        else:
            f.add(pa.chunked_array([part[: len(part) // 2], part[len(part) // 2 :]],
                                   type=pa.string()))
    assert f.serialize() == ref.serialize()
    assert (len(f.rows), f.current_nb_record, f.bounded) == (
        len(ref.matrix), ref.count, ref.reached_max)
    assert f.contains(keys).all()


@pytest.mark.parametrize("nr,max_nr,n", [(5, 5, 23), (5, 12, 40), (5, 15, 15), (5, 16, 31),
                                         (7, 100, 70), (3, 1, 10)])
def test_dynamic_boundaries_in_one_add_and_key_by_key(nr: int, max_nr: int, n: int) -> None:
    keys = [f"key-{i:04d}" for i in range(n)]
    ref = _ReferenceDynamic(nr, 0.05, max_nr)
    for key in keys:
        ref.add(key)
    whole = DynamicBloomV0(nr, 0.05, max_nr)
    whole.add(keys)
    single = DynamicBloomV0(nr, 0.05, max_nr)
    for key in keys:
        single.add([key])
    assert whole.serialize() == ref.serialize() == single.serialize()


def test_bad_keys_leave_the_dynamic_filter_untouched() -> None:
    from morlog.logformat.errors import UsageError

    f = DynamicBloomV0(3, 0.05, 6)
    f.add(["a", "b"])
    before = f.serialize()
    for bad in (["c", "", "d"], pa.array(["c", None], type=pa.string())):
        with pytest.raises(UsageError):
            f.add(bad)
        assert f.serialize() == before and f.current_nb_record == 2
