"""Split-block bloom filter (Parquet's SBBF) with XXH64: the filter of morlog's indexed blocks.

The algorithm is Parquet's (``BloomFilter.md``): the filter is ``z`` blocks of eight 32-bit
words; a key's 64-bit XXH64 hash (seed 0) picks block ``((h >> 32) * z) >> 32``, and its low 32
bits ``x`` set one bit per word: bit ``(x * SALT[i]) >> 27`` of word ``i``. Words are stored
little-endian, blocks in order. One difference from Parquet's writers is sizing: morlog keeps
``z`` at the exact number of blocks the target false-positive rate needs instead of rounding
the byte size up to a power of two (spec/index.md explains the measurement).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from .errors import ContentError, UsageError
from .keybatch import KeyBatch
from .xxh64 import U64, xxh64_batch

SALT = np.array([0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D,
                 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31], dtype=np.uint32)
BLOCK_BYTES = 32
WORDS = 8
DEFAULT_FPP = 0.01
#: upper bound on one filter (same as Parquet's writers)
MAX_BYTES = 128 * 1024 * 1024
#: the first bit of each word of a block
_WORD_BITS = np.arange(WORDS, dtype=np.uint32) * np.uint32(32)


def expected_fpp(ndv: int, num_blocks: int) -> float:
    """False-positive rate of a filter of ``num_blocks`` holding ``ndv`` keys.

    Keys spread over blocks as a Poisson process with mean ``ndv / num_blocks``; a block that
    holds ``j`` keys answers yes for a foreign key with probability ``(1 - (31/32)**j) ** 8``.
    """
    lam = ndv / num_blocks
    if lam == 0:
        return 0.0
    j = np.arange(int(lam + 12 * math.sqrt(lam) + 30) + 1, dtype=np.float64)
    log_fact = np.concatenate(([0.0], np.cumsum(np.log(j[1:]))))
    pmf = np.exp(j * math.log(lam) - lam - log_fact)
    return float(np.sum(pmf * (1.0 - (31.0 / 32.0) ** j) ** 8))


@functools.lru_cache(maxsize=4096)
def blocks_for(ndv: int, fpp: float = DEFAULT_FPP) -> int:
    """The fewest blocks that keep ``expected_fpp(ndv, blocks) <= fpp`` (at least 1).

    Parquet's writers use the bound ``-8 ndv / ln(1 - fpp ** (1/8))`` bits and round up to a
    power of two; the bound alone ignores how unevenly keys load the blocks (measured 1.47 %
    for a 1 % target), and the rounding wastes up to half the bytes. This searches the exact
    count instead, starting from the bound.
    """
    if not 0 < fpp < 1:
        raise UsageError("false-positive rate must be in (0, 1)", actual=fpp)
    if ndv <= 0:
        return 1
    limit = MAX_BYTES // BLOCK_BYTES
    bits = -8.0 * ndv / math.log(1.0 - fpp ** (1.0 / 8.0))
    lo = max(1, min(limit, math.ceil(bits / 256)))
    if expected_fpp(ndv, lo) <= fpp:
        return lo
    hi = lo
    while hi < limit and expected_fpp(ndv, hi) > fpp:
        hi = min(limit, hi * 2)
    while lo < hi:  # smallest z with expected_fpp <= fpp, in (lo, hi]
        mid = (lo + hi) // 2
        if expected_fpp(ndv, mid) <= fpp:
            hi = mid
        else:
            lo = mid + 1
    return hi


def word_masks(h: U64) -> npt.NDArray[np.uint32]:
    """(n, 8) C-contiguous word masks of hashed keys (independent of the filter size)."""
    return np.ascontiguousarray(_masks(h.astype(np.uint32)))


def _masks(x: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """(n, 8) word masks of the low hash halves ``x``."""
    with np.errstate(over="ignore"):
        y = x[:, None] * SALT[None, :]
    out: npt.NDArray[np.uint32] = np.left_shift(np.uint32(1), y >> np.uint32(27))
    return out


@dataclass
class SplitBlockBloom:
    """A split-block bloom filter; ``words`` is ``(num_blocks, 8)`` uint32."""

    words: npt.NDArray[np.uint32]

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, SplitBlockBloom) and self.words.shape == other.words.shape
                and bool((self.words == other.words).all()))

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def empty(cls, num_blocks: int) -> SplitBlockBloom:
        if num_blocks <= 0 or num_blocks > MAX_BYTES // BLOCK_BYTES:
            raise UsageError("split-block bloom filter block count out of range",
                             actual=num_blocks)
        return cls(np.zeros((num_blocks, WORDS), dtype=np.uint32))

    @classmethod
    def for_keys(cls, keys: Sequence[str] | pa.Array | KeyBatch, fpp: float = DEFAULT_FPP,
                 ndv: int | None = None) -> SplitBlockBloom:
        batch = keys if isinstance(keys, KeyBatch) else KeyBatch.of(keys)
        return cls.for_hashes(xxh64_batch(batch), fpp, ndv)

    @classmethod
    def for_hashes(cls, hashes: U64, fpp: float = DEFAULT_FPP, ndv: int | None = None
                   ) -> SplitBlockBloom:
        f = cls.empty(blocks_for(len(hashes) if ndv is None else ndv, fpp))
        f.insert_hashes(hashes)
        return f

    @property
    def num_blocks(self) -> int:
        return int(self.words.shape[0])

    @property
    def nbytes(self) -> int:
        return self.num_blocks * BLOCK_BYTES

    def _block_index(self, h: U64) -> npt.NDArray[np.int64]:
        with np.errstate(over="ignore"):
            return (((h >> np.uint64(32)) * np.uint64(self.num_blocks)) >> np.uint64(32)
                    ).astype(np.int64)

    def insert_hashes(self, h: U64) -> None:
        if h.size == 0:
            return
        # each key sets bit ``block * 256 + word * 32 + (x * SALT[word]) >> 27`` of the filter
        # (< 2**30 bits: uint32 positions, built in place). Setting bits is idempotent, so a
        # plain scatter into a bit array does what a (much slower) unbuffered bitwise_or.at
        # would; then pack into little-endian words
        with np.errstate(over="ignore"):
            block = (((h >> np.uint64(32)) * np.uint64(self.num_blocks)) >> np.uint64(32)
                     ).astype(np.uint32)
            pos = h.astype(np.uint32)[:, None] * SALT[None, :]
        pos >>= np.uint32(27)
        pos += _WORD_BITS[None, :]
        pos += (block << np.uint32(8))[:, None]
        flat = np.zeros(self.num_blocks * 256, dtype=bool)
        flat[pos.ravel()] = True
        self.words |= np.packbits(flat, bitorder="little").view("<u4").reshape(
            -1, WORDS).astype(np.uint32, copy=False)

    def insert(self, keys: Sequence[str] | pa.Array | KeyBatch) -> None:
        batch = keys if isinstance(keys, KeyBatch) else KeyBatch.of(keys)
        self.insert_hashes(xxh64_batch(batch))

    def check_hashes(self, h: U64, masks: npt.NDArray[np.uint32] | None = None
                     ) -> npt.NDArray[np.bool_]:
        """Membership of hashed keys; ``masks`` (``word_masks(h)``) may be passed in when
        the same keys are checked against many filters."""
        if h.size == 0:
            return np.zeros(0, dtype=bool)
        idx = self._block_index(h)
        m = word_masks(h) if masks is None else masks
        # a key is in when (word & mask) == mask for all 8 words: XOR, then OR four u64 lanes
        miss = ((self.words[idx] & m) ^ m).view(np.uint64)
        out: npt.NDArray[np.bool_] = (miss[:, 0] | miss[:, 1] | miss[:, 2] | miss[:, 3]) == 0
        return out

    def check(self, keys: Sequence[str] | pa.Array | KeyBatch) -> npt.NDArray[np.bool_]:
        batch = keys if isinstance(keys, KeyBatch) else KeyBatch.of(keys)
        return self.check_hashes(xxh64_batch(batch))

    def union(self, other: SplitBlockBloom) -> SplitBlockBloom:
        if other.num_blocks != self.num_blocks:
            raise UsageError("only filters of the same size can be merged",
                             expected=self.num_blocks, actual=other.num_blocks)
        return SplitBlockBloom(self.words | other.words)

    def fill_ratio(self) -> float:
        bits = np.unpackbits(self.words.view(np.uint8)).sum()
        return float(bits) / (self.num_blocks * 256)

    def to_bytes(self) -> bytes:
        return self.words.astype("<u4").tobytes()

    @classmethod
    def from_bytes(cls, data: bytes | memoryview, *, base: int = 0,
                   path: str | None = None) -> SplitBlockBloom:
        n = len(data)
        if n == 0 or n % BLOCK_BYTES or n > MAX_BYTES:
            raise ContentError("split-block bloom filter size must be a positive multiple "
                               "of 32 bytes", path=path, offset=base, actual=n)
        words = np.frombuffer(data, dtype="<u4").astype(np.uint32).reshape(-1, WORDS)
        return cls(words)
