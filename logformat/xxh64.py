"""XXH64 (xxHash, 64-bit) over a :class:`KeyBatch`, vectorized with numpy.

One numpy pass per 8-byte lane position across all keys of one length: the per-key work is in
C, the Python loop runs over byte positions (a few dozen for typical keys), not keys.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from .keybatch import KeyBatch, KeyGroup

U64 = npt.NDArray[np.uint64]

P1 = np.uint64(0x9E3779B185EBCA87)
P2 = np.uint64(0xC2B2AE3D27D4EB4F)
P3 = np.uint64(0x165667B19E3779F9)
P4 = np.uint64(0x85EBCA77C2B2AE63)
P5 = np.uint64(0x27D4EB2F165667C5)


def _rotl(x: U64, r: int) -> U64:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _round(acc: U64, lane: U64) -> U64:
    acc = acc + lane * P2
    acc = _rotl(acc, 31)
    return acc * P1


def _merge(acc: U64, val: U64) -> U64:
    acc = acc ^ _round(np.zeros_like(val), val)
    return acc * P1 + P4


def xxh64_group(g: KeyGroup, seed: int = 0) -> U64:
    """XXH64 of every key of one length group."""
    n, L = g.matrix.shape
    s = np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
    m = g.matrix
    with np.errstate(over="ignore"):
        pos = 0
        if L >= 32:
            v1 = np.full(n, s + P1 + P2, dtype=np.uint64)
            v2 = np.full(n, s + P2, dtype=np.uint64)
            v3 = np.full(n, s, dtype=np.uint64)
            v4 = np.full(n, s - P1, dtype=np.uint64)
            stripes = L // 32
            lanes = np.ascontiguousarray(m[:, : stripes * 32]).view("<u8")
            for i in range(stripes):
                v1 = _round(v1, lanes[:, 4 * i])
                v2 = _round(v2, lanes[:, 4 * i + 1])
                v3 = _round(v3, lanes[:, 4 * i + 2])
                v4 = _round(v4, lanes[:, 4 * i + 3])
            h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
            h = _merge(h, v1)
            h = _merge(h, v2)
            h = _merge(h, v3)
            h = _merge(h, v4)
            pos = stripes * 32
        else:
            h = np.full(n, s + P5, dtype=np.uint64)
        h = h + np.uint64(L)
        while L - pos >= 8:
            lane = np.ascontiguousarray(m[:, pos : pos + 8]).view("<u8")[:, 0]
            h = h ^ _round(np.zeros(n, dtype=np.uint64), lane)
            h = _rotl(h, 27) * P1 + P4
            pos += 8
        if L - pos >= 4:
            word = np.ascontiguousarray(m[:, pos : pos + 4]).view("<u4")[:, 0].astype(np.uint64)
            h = h ^ (word * P1)
            h = _rotl(h, 23) * P2 + P3
            pos += 4
        while pos < L:
            h = h ^ (m[:, pos].astype(np.uint64) * P5)
            h = _rotl(h, 11) * P1
            pos += 1
        h = h ^ (h >> np.uint64(33))
        h = h * P2
        h = h ^ (h >> np.uint64(29))
        h = h * P3
        h = h ^ (h >> np.uint64(32))
    return h


#: rows hashed per numpy pass: small enough that the temporaries stay in cache
CHUNK = 16384


def xxh64_batch(batch: KeyBatch, seed: int = 0) -> U64:
    """XXH64 of every key, in the batch's order."""
    out = np.zeros(len(batch), dtype=np.uint64)
    for g in batch:
        for lo in range(0, len(g.index), CHUNK):
            part = KeyGroup(g.length, g.index[lo : lo + CHUNK], g.matrix[lo : lo + CHUNK])
            out[part.index] = xxh64_group(part, seed)
    return out


def key_groups(keys: pa.Array, hashes: U64 | None = None) -> npt.NDArray[np.int64]:
    """A group number per key, equal exactly for equal keys: keys sorted by XXH64
    (``hashes`` when the caller has them), neighbours sharing a hash compared byte for byte
    (3-5x faster than hashing the strings into a dictionary); a hash shared by two
    different keys, or a null key, falls back to ``dictionary_encode``."""
    n = len(keys)
    if n == 0 or keys.null_count:
        enc = pc.dictionary_encode(keys)
        return np.asarray(enc.indices.fill_null(len(enc.dictionary)).to_numpy(),
                          dtype=np.int64)
    h = xxh64_batch(KeyBatch.of(keys)) if hashes is None else hashes
    o = np.argsort(h)  # ties need no order: equal hashes get one group number below
    hs = h[o]
    same = hs[1:] == hs[:-1]
    pairs = np.flatnonzero(same)
    if pairs.size:
        a = keys.take(pa.array(o[pairs]))
        b = keys.take(pa.array(o[pairs + 1]))
        if not pc.all(pc.equal(a, b)).as_py():
            enc = pc.dictionary_encode(keys)
            return np.asarray(enc.indices.to_numpy(), dtype=np.int64)
    g = np.empty(n, dtype=np.int64)
    g[o] = np.concatenate(([0], np.cumsum(~same)))
    return g


def all_distinct(keys: pa.Array) -> bool:
    """Whether no key of ``keys`` (no nulls) repeats: distinct XXH64 hashes prove it (a
    sort of 64-bit integers, 3x faster than hashing the strings into a set); keys sharing
    a hash are compared exactly (:func:`key_groups`)."""
    if len(keys) < 2:
        return True
    return distinct_hashes(keys)[0]


def distinct_hashes(keys: pa.Array) -> tuple[bool, U64]:
    """:func:`all_distinct` and the XXH64 of every key it hashed for the answer, for a caller
    that needs them again (a base file's key index)."""
    h = xxh64_batch(KeyBatch.of(keys)) if len(keys) else np.zeros(0, np.uint64)
    if len(keys) < 2 or not bool((np.diff(np.sort(h)) == 0).any()):
        return True, h
    return int(key_groups(keys, h).max()) + 1 == len(keys), h
