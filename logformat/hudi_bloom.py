"""Hudi's bloom filters, bit-exact: SIMPLE and DYNAMIC_V0 (spec/index.md §Hudi filters).

These are the filters Hudi writes into base Parquet footers (``org.apache.hudi.bloomfilter``).
Keys hash with Hadoop's MurmurHash2 port (32-bit, seed chained from the previous hash); bit
``i`` lives in byte ``i // 8`` under mask ``1 << (i % 8)``; the filter is serialized
big-endian and Base64-encoded. Everything is vectorized with numpy over a :class:`KeyBatch`:
no per-key Python loop. Membership tests drop keys as soon as one of their bits is unset, so
absent keys cost about two hash rounds.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from .errors import ContentError, UsageError
from .keybatch import I64, KeyBatch, KeyGroup, as_key_array

_M = np.uint32(0x5BD1E995)
_ROW_HEAD = struct.Struct(">iibi")
_VERSION_MARKER = -1
HASH_JENKINS, HASH_MURMUR = 0, 1

TYPE_SIMPLE = "SIMPLE"
TYPE_DYNAMIC_V0 = "DYNAMIC_V0"
#: Hudi defaults: hoodie.index.bloom.num_entries, .fpp, dynamic max entries
DEFAULT_NUM_ENTRIES = 60_000
DEFAULT_FPP = 1e-9
DEFAULT_MAX_ENTRIES = 100_000

U32 = npt.NDArray[np.uint32]


class _MurmurKeys:
    """The seed-independent half of Hadoop's MurmurHash2 for keys of one byte length.

    Hadoop's ``MurmurHash.hash`` (Hudi's ``org.apache.hudi.common.util.hash.MurmurHash``)
    mixes each little-endian 4-byte word on its own (``k *= m; k ^= k >>> 24; k *= m``)
    before folding it into the running hash (``h *= m; h ^= k``), and folds the 1-3 tail
    bytes in as one XOR of sign-extended, shifted bytes. None of that depends on the seed,
    so it is computed once per key; a round with another seed (Hudi chains ``k`` rounds,
    each seeded with the previous hash) then costs two numpy passes per word.
    ``words[j]`` is the mixed ``j``-th word of every key (one contiguous row per word).
    """

    __slots__ = ("length", "tail", "words")

    def __init__(self, length: int, words: U32, tail: U32 | None) -> None:
        self.length = length
        self.words = words
        self.tail = tail

    @classmethod
    def of(cls, length: int, matrix: npt.NDArray[np.uint8]) -> _MurmurKeys:
        n_words = length >> 2
        n = matrix.shape[0]
        if n_words:
            # a fresh (n_words, n) array: the matrix may be a read-only Arrow buffer
            words = np.array(matrix[:, : n_words * 4].view("<u4").T, dtype=np.uint32,
                             order="C")
            words *= _M
            words ^= words >> np.uint32(24)
            words *= _M
        else:
            words = np.zeros((0, n), dtype=np.uint32)
        left = length - (n_words << 2)
        tail = None
        if left:
            # Java's bytes are signed: tail bytes are sign-extended before shifting (quirk)
            t = matrix[:, length - left :].view(np.int8).astype(np.int32).view(np.uint32)
            tail = t[:, left - 1].copy()
            if left >= 2:
                tail ^= t[:, left - 2] << np.uint32(8)
            if left >= 3:
                tail ^= t[:, left - 3] << np.uint32(16)
        return cls(length, words, tail)

    def __len__(self) -> int:
        return int(self.words.shape[1]) if self.tail is None else len(self.tail)

    def take(self, sel: npt.NDArray[np.bool_] | I64) -> _MurmurKeys:
        return _MurmurKeys(self.length, self.words[:, sel],
                           None if self.tail is None else self.tail[sel])

    def hash(self, seeds: U32) -> U32:
        """One hash round: a new array, ``seeds`` untouched."""
        h = seeds ^ np.uint32(self.length & 0xFFFFFFFF)
        for w in self.words:
            np.multiply(h, _M, out=h)
            np.bitwise_xor(h, w, out=h)
        if self.tail is not None:
            h ^= self.tail
            h *= _M
        t = h >> np.uint32(13)
        h ^= t
        h *= _M
        np.right_shift(h, np.uint32(15), out=t)
        h ^= t
        return h


def _murmur_group(g: KeyGroup, seeds: U32) -> U32:
    """Hadoop MurmurHash2 of every key of one length group, each with its own seed."""
    return _MurmurKeys.of(g.length, g.matrix).hash(seeds)


#: keys hashed per numpy pass while building a filter: the temporaries stay in cache
CHUNK = 32768


def _positions(h: U32, m: int) -> npt.NDArray[np.int32]:
    """Java ``Math.abs(h % m)`` with ``h`` a signed int (truncating remainder, |.| < m)."""
    p = np.fmod(h.view(np.int32), np.int32(m))
    np.abs(p, out=p)
    return p


def murmur_hadoop(key: bytes, seed: int = 0) -> int:
    """One hash as a signed 32-bit int (reference form, for tests and vectors)."""
    arr = np.frombuffer(key, dtype=np.uint8).reshape(1, len(key))
    out = _MurmurKeys.of(len(key), arr).hash(np.array([seed & 0xFFFFFFFF], dtype=np.uint32))
    return int(out.view(np.int32)[0])


def optimal_size(num_entries: int, fpp: float) -> tuple[int, int]:
    """(bits m, hashes k) as Hudi sizes them (Java double math)."""
    if num_entries <= 0 or not 0 < fpp < 1:
        raise UsageError("bloom filter needs num_entries > 0 and 0 < fpp < 1",
                         actual=(num_entries, fpp))
    m = math.ceil(num_entries * (-math.log(fpp)) / (math.log(2) ** 2))
    k = math.ceil(math.log(2) * m / num_entries)
    return m, k


@dataclass
class SimpleBloom:
    """Hudi's SIMPLE filter: one Hadoop bloom filter row."""

    num_bits: int
    num_hashes: int
    hash_type: int = HASH_MURMUR
    bits: npt.NDArray[np.uint8] = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))

    def __post_init__(self) -> None:
        if self.num_bits <= 0 or self.num_hashes <= 0:
            raise UsageError("bloom filter needs positive bit and hash counts",
                             actual=(self.num_bits, self.num_hashes))
        if self.hash_type != HASH_MURMUR:
            raise UsageError("only murmur-hashed Hudi bloom filters are supported",
                             actual=self.hash_type)
        nbytes = (self.num_bits + 7) // 8
        if self.bits.size == 0:
            self.bits = np.zeros(nbytes, dtype=np.uint8)
        elif self.bits.size != nbytes:
            raise UsageError("bit vector size does not match the bit count",
                             expected=nbytes, actual=self.bits.size)

    @classmethod
    def sized(cls, num_entries: int = DEFAULT_NUM_ENTRIES, fpp: float = DEFAULT_FPP
              ) -> SimpleBloom:
        m, k = optimal_size(num_entries, fpp)
        return cls(m, k)

    def add_batch(self, batch: KeyBatch) -> None:
        """Set every key's ``num_hashes`` bits. Setting a bit is idempotent and order-free,
        so keys are hashed a chunk at a time and their bits scattered in bulk."""
        for g in batch:
            if g.length == 0:
                raise UsageError("empty record keys cannot be added to a Hudi bloom filter")
        n = len(batch)
        if n == 0:
            return
        # few bits to set: OR them in place; many: mark a flag per bit, then pack once
        flags = (np.zeros(self.num_bits, dtype=bool)
                 if n * self.num_hashes * 64 >= self.num_bits else None)
        for g in batch:
            for lo in range(0, len(g.index), CHUNK):
                keys = _MurmurKeys.of(g.length, g.matrix[lo : lo + CHUNK])
                h = np.zeros(len(keys), dtype=np.uint32)
                for _ in range(self.num_hashes):
                    h = keys.hash(h)
                    pos = _positions(h, self.num_bits)
                    if flags is not None:
                        flags[pos] = True
                    else:
                        np.bitwise_or.at(self.bits, pos >> 3,
                                         np.left_shift(np.uint8(1), (pos & 7).astype(np.uint8)))
        if flags is not None:
            self.bits |= np.packbits(flags, bitorder="little")

    def add(self, keys: Sequence[str] | pa.Array) -> None:
        self.add_batch(KeyBatch.of(keys))

    def contains_batch(self, batch: KeyBatch, chain: HashChain | None = None
                       ) -> npt.NDArray[np.bool_]:
        if chain is not None:
            return chain.contains(self)
        out = np.zeros(len(batch), dtype=bool)
        for g in batch:
            out[g.index] = self._contains_group(g)
        return out

    def _contains_group(self, g: KeyGroup) -> npt.NDArray[np.bool_]:
        n = len(g.index)
        alive = np.arange(n)
        h = np.zeros(n, dtype=np.uint32)
        keys = _MurmurKeys.of(g.length, g.matrix)
        for _ in range(self.num_hashes):
            if alive.size == 0:
                break
            h = keys.hash(h)
            pos = _positions(h, self.num_bits)
            hit = (self.bits[pos >> 3] >> (pos & 7).astype(np.uint8)) & 1 == 1
            if not hit.all():
                alive, h = alive[hit], h[hit]
                keys = keys.take(hit)
        result = np.zeros(n, dtype=bool)
        result[alive] = True
        return result

    def contains(self, keys: Sequence[str] | pa.Array | KeyBatch,
                 chain: HashChain | None = None) -> npt.NDArray[np.bool_]:
        batch = keys if isinstance(keys, KeyBatch) else KeyBatch.of(keys)
        return self.contains_batch(batch, chain)

    def serialize_row(self) -> bytes:
        return _ROW_HEAD.pack(_VERSION_MARKER, self.num_hashes, self.hash_type,
                              self.num_bits) + self.bits.tobytes()

    def to_base64(self) -> str:
        return base64.b64encode(self.serialize_row()).decode("ascii")


def _row_header(blob: bytes, pos: int) -> tuple[int, int, int, int]:
    """(nbHash, hashType, vectorSize, next pos) of a row header, legacy form included."""
    if len(blob) - pos < 8:
        raise ContentError("bloom filter row header cut off", offset=pos)
    (first,) = struct.unpack_from(">i", blob, pos)
    if first == _VERSION_MARKER:
        if len(blob) - pos < 13:
            raise ContentError("bloom filter row header cut off", offset=pos)
        k, htype, m = struct.unpack_from(">ibi", blob, pos + 4)
        return k, htype, m, pos + 13
    if first > 0:  # legacy Hadoop form: nbHash first, Jenkins hash implied
        (m,) = struct.unpack_from(">i", blob, pos + 4)
        return first, HASH_JENKINS, m, pos + 8
    raise ContentError("unsupported bloom filter version marker", offset=pos, expected=-1,
                       actual=first)


def _read_row(blob: bytes, pos: int) -> tuple[SimpleBloom, int]:
    k, htype, m, pos = _row_header(blob, pos)
    if m <= 0 or k <= 0 or k > 1000:
        raise ContentError("bloom filter sizes out of range", offset=pos, actual=(m, k))
    nbytes = (m + 7) // 8
    if nbytes > len(blob) - pos:
        raise ContentError("bloom filter bit vector cut off", offset=pos,
                           expected=nbytes, actual=len(blob) - pos)
    if htype != HASH_MURMUR:
        raise ContentError("only murmur-hashed Hudi bloom filters are supported", offset=pos,
                           expected=HASH_MURMUR, actual=htype)
    bits = np.frombuffer(blob, dtype=np.uint8, count=nbytes, offset=pos).copy()
    return SimpleBloom(m, k, htype, bits), pos + nbytes


@dataclass
class DynamicBloomV0:
    """Hudi's DYNAMIC_V0 filter: rows of equal size, a new row every ``num_entries`` adds."""

    num_entries: int
    fpp: float = DEFAULT_FPP
    max_entries: int = DEFAULT_MAX_ENTRIES
    rows: list[SimpleBloom] = field(default_factory=list)
    current_nb_record: int = 0
    bounded: bool = False
    cur_idx: int = 0
    #: outer header as serialized (nbHash, hashType, vectorSize)
    _header: tuple[int, int, int] | None = None

    def __post_init__(self) -> None:
        if not self.rows:
            self.rows = [SimpleBloom.sized(self.num_entries, self.fpp)]
        if self._header is None:
            r = self.rows[0]
            self._header = (r.num_hashes, r.hash_type, r.num_bits)

    def _new_row(self) -> SimpleBloom:
        r = self.rows[0]
        return SimpleBloom(r.num_bits, r.num_hashes, r.hash_type)

    def add(self, keys: Sequence[str] | pa.Array | pa.ChunkedArray) -> None:
        """Add keys in order, bit-exact with Hudi's writer adding them one at a time.

        Which row each key lands in is a pure function of its position and the counters
        (:meth:`plan`), and setting bits is order-free, so each row takes all its keys in
        one vectorized :meth:`SimpleBloom.add_batch`, in every mode.
        """
        arr = as_key_array(keys)
        n = len(arr)
        if n == 0:
            return
        if arr.null_count:
            raise UsageError("record keys must not be null")
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset:arr.offset + n + 1]
        if (offsets[1:] == offsets[:-1]).any():
            raise UsageError("empty record keys cannot be added to a Hudi bloom filter")
        for row, start, stop, step in self.plan(n):
            part = (arr.slice(start, stop - start) if step == 1
                    else arr.take(pa.array(np.arange(start, stop, step, dtype=np.int64))))
            self.rows[row].add_batch(KeyBatch.of(part))

    def plan(self, n: int) -> list[tuple[int, int, int, int]]:
        """Route the next ``n`` keys as Hudi would and advance the counters: a list of
        ``(row, start, stop, step)``, the keys ``range(start, stop, step)`` going to ``row``.

        Hudi's rule (``InternalDynamicBloomFilter.add``/``getActiveStandardBF`` in
        hudi-common/src/main/java/org/apache/hudi/common/bloom/), key by key: once bounded,
        the key goes to row ``curMatrixIndex++ % rows``; otherwise, when the last row holds
        ``nr`` keys (``currentNbRecord >= nr``), a new row starts (counter back to 0) while
        ``rows * nr < maxNr``, else the filter becomes bounded and this one key goes to row
        0 *without* advancing ``curMatrixIndex`` (so row 0 takes the next key too); below
        ``nr`` the key goes to the last row. The counter counts every key added, so in
        bounded mode it keeps growing past ``nr``.
        """
        runs: list[tuple[int, int, int, int]] = []
        pos = 0
        while pos < n and not self.bounded:
            if self.current_nb_record >= self.num_entries:
                if len(self.rows) * self.num_entries < self.max_entries:
                    self.rows.append(self._new_row())
                    self.current_nb_record = 0
                else:
                    self.bounded = True
                    runs.append((0, pos, pos + 1, 1))
                    self.current_nb_record += 1
                    pos += 1
                    continue
            take = min(n - pos, self.num_entries - self.current_nb_record)
            runs.append((len(self.rows) - 1, pos, pos + take, 1))
            self.current_nb_record += take
            pos += take
        left = n - pos
        if left:
            nrows = len(self.rows)
            for j in range(min(left, nrows)):  # key pos + j goes to row (cur_idx + j) % rows
                runs.append(((self.cur_idx + j) % nrows, pos + j, n, nrows))
            self.cur_idx += left
            self.current_nb_record += left
        return runs

    def contains(self, keys: Sequence[str] | pa.Array | KeyBatch,
                 chain: HashChain | None = None) -> npt.NDArray[np.bool_]:
        batch = keys if isinstance(keys, KeyBatch) else KeyBatch.of(keys)
        out = np.zeros(len(batch), dtype=bool)
        for row in self.rows:
            out |= row.contains_batch(batch, chain)
        return out

    def serialize(self) -> bytes:
        assert self._header is not None
        k, htype, m = self._header
        head = struct.pack(">iibi", _VERSION_MARKER, k, htype, m)
        head += struct.pack(">iii", self.num_entries, self.current_nb_record, len(self.rows))
        return head + b"".join(r.serialize_row() for r in self.rows)

    def to_base64(self) -> str:
        return base64.b64encode(self.serialize()).decode("ascii")


class HashChain:
    """The chained murmur hashes of one batch of keys, computed round by round on demand and
    shared by every filter tested with it (a table lookup tests the same keys against the
    filters of many base files, which all use Hudi's default hash count)."""

    def __init__(self, batch: KeyBatch) -> None:
        self.batch = batch
        self.rounds: list[U32] = []  # rounds[i][j]: i-th chained hash of key j (batch order)
        self._keys: list[_MurmurKeys] | None = None

    def _round(self, i: int) -> U32:
        if self._keys is None:
            self._keys = [_MurmurKeys.of(g.length, g.matrix) for g in self.batch]
        while len(self.rounds) <= i:
            prev = self.rounds[-1] if self.rounds else np.zeros(len(self.batch), np.uint32)
            nxt = np.zeros(len(self.batch), dtype=np.uint32)
            for g, keys in zip(self.batch, self._keys, strict=True):
                nxt[g.index] = keys.hash(prev[g.index])
            self.rounds.append(nxt)
        return self.rounds[i]

    def contains(self, f: SimpleBloom) -> npt.NDArray[np.bool_]:
        alive = np.arange(len(self.batch))
        for i in range(f.num_hashes):
            if alive.size == 0:
                break
            pos = _positions(self._round(i)[alive], f.num_bits)
            alive = alive[(f.bits[pos >> 3] >> (pos & 7).astype(np.uint8)) & 1 == 1]
        out = np.zeros(len(self.batch), dtype=bool)
        out[alive] = True
        return out


HudiBloom = SimpleBloom | DynamicBloomV0


def parse_hudi_bloom(text: str | bytes, type_code: str | None = None) -> HudiBloom:
    """Decode a Base64 filter from a Parquet footer; ``type_code`` absent means SIMPLE."""
    try:
        blob = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ContentError(f"bloom filter is not valid Base64: {exc}") from None
    kind = (type_code or TYPE_SIMPLE).upper()
    if kind == TYPE_SIMPLE:
        row, end = _read_row(blob, 0)
        if end != len(blob):
            raise ContentError("trailing bytes after a SIMPLE bloom filter", offset=end)
        return row
    if kind != TYPE_DYNAMIC_V0:
        raise ContentError("unknown bloom filter type code", expected=[TYPE_SIMPLE,
                           TYPE_DYNAMIC_V0], actual=type_code)
    k, htype, m, pos = _row_header(blob, 0)
    if len(blob) - pos < 12:
        raise ContentError("dynamic bloom filter header cut off", offset=pos)
    nr, cur, nrows = struct.unpack_from(">iii", blob, pos)
    pos += 12
    if nrows <= 0 or nrows > len(blob) // 13:
        raise ContentError("dynamic bloom filter row count out of range", offset=pos - 4,
                           actual=nrows)
    rows = []
    for _ in range(nrows):
        row, pos = _read_row(blob, pos)
        rows.append(row)
    if pos != len(blob):
        raise ContentError("trailing bytes after a DYNAMIC_V0 bloom filter", offset=pos)
    f = DynamicBloomV0(nr, DEFAULT_FPP, DEFAULT_MAX_ENTRIES, rows, cur, _header=(k, htype, m))
    return f
