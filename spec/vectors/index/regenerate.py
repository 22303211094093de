"""Recipe of the index conformance vectors (spec/index.md §10): writes every case directory.

Usage (from the repository root)::

    python spec/vectors/index/regenerate.py          # (re)write the cases
    python spec/vectors/index/regenerate.py --check  # exit 1 if a case on disk differs

This script is the independent side of the vectors: it builds every byte field by field from
spec/index.md with the standard library (struct, zlib, base64) and the ``xxhash`` package
(the reference XXH64), and it does **not** import morlog. Split-block bloom filter positions
are computed from Parquet's BloomFilter.md algorithm, CRCs with ``zlib.crc32``, Hudi's
MurmurHash with a line-by-line transcription of Hadoop's Java code (facts file §8). The tests
(tests/test_index_vectors.py) then decode these bytes with morlog and encode them back.
"""

from __future__ import annotations

import base64
import json
import math
import struct
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import xxhash

HERE = Path(__file__).resolve().parent

# --- constants of spec/index.md ---------------------------------------------------------

SALT = (0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D,
        0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31)
MAGIC = b"MORLIDX1"
VERSION = 1
KEYS, BLOOM, RANGE, CUMULATIVE, DIRECTORY, COLUMN_STATS, CHECKSUM = 1, 2, 3, 4, 5, 6, 7
SECTION_NAMES = {KEYS: "KEYS", BLOOM: "BLOOM", RANGE: "RANGE", CUMULATIVE: "CUMULATIVE",
                 DIRECTORY: "DIRECTORY", COLUMN_STATS: "COLUMN_STATS", CHECKSUM: "CHECKSUM"}
CHECKSUM_CRC32 = 1
CARRIERS = {0: "NONE", 1: "AVRO", 2: "PARQUET"}
FULL, DELTA = 0, 1
FILTER_SBBF_XXH64 = 1

HEADER_NAMES = {0: "INSTANT_TIME", 1: "TARGET_INSTANT_TIME", 2: "SCHEMA", 3: "COMMAND_BLOCK_TYPE"}

BASE_INSTANT = "20250101000000000"
LOG_1 = ".fg-0_20250101000000000.log.1_0-1-1"
LOG_2 = ".fg-0_20250101000000000.log.2_0-1-1"


# --- annotated hex ----------------------------------------------------------------------


@dataclass
class Hex:
    """Rows of (bytes, comment); renders as ``input.hex`` (spec/format.md §10 syntax)."""

    title: list[str]
    rows: list[tuple[bytes | None, str]] = field(default_factory=list)

    def note(self, text: str) -> None:
        self.rows.append((None, text))

    def add(self, data: bytes, comment: str) -> None:
        self.rows.append((data, comment))

    def extend(self, other: Hex) -> None:
        self.rows.extend(other.rows)

    def data(self) -> bytes:
        return b"".join(d for d, _ in self.rows if d is not None)

    def render(self) -> str:
        out = [f"# {t}" if t else "#" for t in self.title]
        width = 48
        for data, comment in self.rows:
            if data is None:
                out.append(f"# {comment}")
                continue
            if not data:
                out.append(f"{'':<{width}}# {comment} (0 bytes)")
                continue
            for i in range(0, len(data), 16):
                chunk = " ".join(f"{b:02x}" for b in data[i : i + 16])
                text = comment if i == 0 else "  ..."
                out.append(f"{chunk:<{width}} # {text}".rstrip())
        return "\n".join(out) + "\n"


def u8(v: int) -> bytes:
    return struct.pack("<B", v)


def u16(v: int) -> bytes:
    return struct.pack("<H", v)


def u32(v: int) -> bytes:
    return struct.pack("<I", v)


def u64(v: int) -> bytes:
    return struct.pack("<Q", v)


def add_str(h: Hex, text: str, what: str) -> None:
    raw = text.encode("utf-8")
    h.add(u32(len(raw)), f"{what}: length {len(raw)}")
    h.add(raw, f"{what}: {text!r} (UTF-8)")


# --- XXH64 and the split-block bloom filter ---------------------------------------------


def xxh64(key: str) -> int:
    return xxhash.xxh64_intdigest(key.encode("utf-8"), seed=0)


def sbbf_position(key: str, num_blocks: int) -> tuple[int, list[int]]:
    """Parquet's BloomFilter.md: block index and the bit set in each of the 8 words."""
    h = xxh64(key)
    block = ((h >> 32) * num_blocks) >> 32
    x = h & 0xFFFFFFFF
    return block, [((x * s) & 0xFFFFFFFF) >> 27 for s in SALT]


def sbbf_words(keys: list[str], num_blocks: int) -> list[list[int]]:
    words = [[0] * 8 for _ in range(num_blocks)]
    for k in keys:
        block, bits = sbbf_position(k, num_blocks)
        for i, b in enumerate(bits):
            words[block][i] |= 1 << b
    return words


def sbbf_hex(keys: list[str], num_blocks: int, prefix: str = "") -> Hex:
    h = Hex([])
    words = sbbf_words(keys, num_blocks)
    owners: dict[tuple[int, int, int], list[str]] = {}
    for k in keys:
        block, bits = sbbf_position(k, num_blocks)
        for i, b in enumerate(bits):
            owners.setdefault((block, i, b), []).append(k)
    for blk in range(num_blocks):
        for i in range(8):
            w = words[blk][i]
            bits = [b for b in range(32) if w >> b & 1]
            who = ", ".join(f"bit {b} ({'/'.join(owners[(blk, i, b)])})" for b in bits)
            h.add(u32(w), f"{prefix}block {blk} word {i} = 0x{w:08x}" + (f": {who}" if who
                                                                           else ""))
    return h


def sbbf_maybe(words: list[list[int]], key: str) -> bool:
    block, bits = sbbf_position(key, len(words))
    return all(words[block][i] >> b & 1 for i, b in enumerate(bits))


def sbbf_rate(ndv: int, z: int) -> float:
    """Expected false-positive rate (spec/index.md §3.1.5): Poisson mixture over block loads."""
    lam = ndv / z
    hi = int(lam + 12 * math.sqrt(lam) + 30)
    total, log_p = 0.0, -lam
    for j in range(hi + 1):
        if j:
            log_p += math.log(lam) - math.log(j)
        total += math.exp(log_p) * (1.0 - (31.0 / 32.0) ** j) ** 8
    return total


def sbbf_num_blocks(ndv: int, fpp: float = 0.01) -> int:
    """The fewest blocks z >= 1 with sbbf_rate(ndv, z) <= fpp (the rate falls as z grows)."""
    lo, hi = 1, 1
    while sbbf_rate(ndv, hi) > fpp:
        lo, hi = hi + 1, hi * 2
    while lo < hi:
        mid = (lo + hi) // 2
        if sbbf_rate(ndv, mid) <= fpp:
            hi = mid
        else:
            lo = mid + 1
    return hi


def bloom_section(keys: list[str], num_blocks: int) -> Hex:
    h = Hex([])
    h.add(u8(FILTER_SBBF_XXH64), "filter type 1 = split-block bloom filter, XXH64 seed 0")
    h.add(u32(num_blocks), f"block count z = {num_blocks}")
    h.extend(sbbf_hex(keys, num_blocks))
    return h


# --- sections ---------------------------------------------------------------------------


def keys_section(keys: list[str]) -> Hex:
    """KEYS with codec 0 (none): keys must already be sorted by UTF-8 bytes and unique."""
    raws = [k.encode("utf-8") for k in keys]
    assert raws == sorted(set(raws)), "KEYS holds sorted unique keys"
    offsets = [0]
    for r in raws:
        offsets.append(offsets[-1] + len(r))
    raw_len = 4 * (len(keys) + 1) + offsets[-1]
    h = Hex([])
    h.add(u8(0), "codec 0 = none")
    h.add(u32(len(keys)), f"key count n = {len(keys)}")
    h.add(u32(raw_len), f"raw length = 4 * (n + 1) + {offsets[-1]} key bytes = {raw_len}")
    h.add(u32(raw_len), f"payload length = {raw_len} (codec none: equal to the raw length)")
    for i, o in enumerate(offsets):
        h.add(u32(o), f"offset[{i}] = {o}")
    for k, r in zip(keys, raws, strict=True):
        h.add(r, f"key {k!r}")
    return h


def range_section(count: int, lo: str, hi: str) -> Hex:
    h = Hex([])
    h.add(u32(count), f"key count = {count}")
    add_str(h, lo, "min key")
    add_str(h, hi, "max key")
    return h


@dataclass
class Checkpoint:
    file: int
    carrier: int
    region_offset: int
    region_length: int
    region_crc32: int
    cumulative_length: int

    def json(self) -> dict[str, Any]:
        return {"file": self.file, "carrier": CARRIERS[self.carrier],
                "region_offset": self.region_offset, "region_length": self.region_length,
                "region_crc32": self.region_crc32, "cumulative_length": self.cumulative_length}


def cumulative_section(kind: int, scope: str, blocks: int, nkeys: int, lo: str, hi: str,
                       bloom_keys: list[str], num_blocks: int,
                       checkpoint: Checkpoint | None = None) -> Hex:
    h = Hex([])
    h.add(u8(kind), f"kind {kind} = {'FULL' if kind == FULL else 'DELTA'}")
    add_str(h, scope, "scope (base instant of the file slice)")
    h.add(u32(blocks), f"data blocks in scope = {blocks}")
    h.add(u64(nkeys), f"keys in scope (sum of per-block key counts) = {nkeys}")
    add_str(h, lo, "min key of the scope")
    add_str(h, hi, "max key of the scope")
    h.note("filter (same encoding as the BLOOM section)")
    h.extend(bloom_section(bloom_keys, num_blocks))
    if kind == DELTA:
        assert checkpoint is not None
        c = checkpoint
        h.note("checkpoint reference")
        h.add(u32(c.file), f"file ordinal = {c.file}")
        h.add(u8(c.carrier), f"carrier {c.carrier} = {CARRIERS[c.carrier]}")
        h.add(u64(c.region_offset), f"region offset = {c.region_offset}")
        h.add(u32(c.region_length), f"region length = {c.region_length}")
        h.add(u32(c.region_crc32), f"region CRC-32 = 0x{c.region_crc32:08x}")
        h.add(u32(c.cumulative_length), f"CUMULATIVE length = {c.cumulative_length}")
    return h


@dataclass
class Ref:
    file: int
    carrier: int
    block_offset: int
    block_size: int
    region_offset: int
    filter_length: int
    filter_crc32: int
    keys_length: int
    keys_crc32: int
    key_count: int
    instant: str
    min_key: str
    max_key: str

    def json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["carrier"] = CARRIERS[self.carrier]
        return d


def directory_section(files: list[str], refs: list[Ref]) -> Hex:
    h = Hex([])
    h.add(u32(len(files)), f"file count = {len(files)}")
    for i, f in enumerate(files):
        add_str(h, f, f"file {i}")
    h.add(u32(len(refs)), f"block count = {len(refs)}")
    for i, r in enumerate(refs):
        h.note(f"entry {i}")
        h.add(u32(r.file), f"file ordinal = {r.file}")
        h.add(u8(r.carrier), f"carrier {r.carrier} = {CARRIERS.get(r.carrier, 'unknown')}")
        h.add(u64(r.block_offset), f"block offset = {r.block_offset}")
        h.add(u32(r.block_size), f"block size = {r.block_size}")
        h.add(u64(r.region_offset), f"region offset = {r.region_offset}")
        h.add(u32(r.filter_length), f"filter part length = {r.filter_length}")
        h.add(u32(r.filter_crc32), f"filter part CRC-32 = 0x{r.filter_crc32:08x}")
        h.add(u32(r.keys_length), f"keys part length = {r.keys_length}")
        h.add(u32(r.keys_crc32), f"keys part CRC-32 = 0x{r.keys_crc32:08x}")
        h.add(u32(r.key_count), f"key count = {r.key_count}")
        add_str(h, r.instant, "instant")
        add_str(h, r.min_key, "min key")
        add_str(h, r.max_key, "max key")
    return h


# --- the trailer ------------------------------------------------------------------------


@dataclass
class Tail:
    """Overrides for corrupt cases; None = the correct value."""

    length: int | None = None
    version: int = VERSION
    flags: int = 0
    reserved: int = 0
    magic: bytes = MAGIC
    table_crc: Callable[[int], int] | None = None
    entry_flags: int = 0


def trailer(sections: list[tuple[int, Hex]], tail: Tail | None = None,
            entry_patch: Callable[[int, int, int], tuple[int, int]] | None = None
            ) -> tuple[Hex, list[dict[str, Any]], int]:
    """Sections, table, tail. Returns the rows, the table as JSON and the trailer length."""
    t = tail or Tail()
    h = Hex([])
    entries = []
    pos = 0
    for sid, body in sections:
        data = body.data()
        name = SECTION_NAMES.get(sid, f"unknown id {sid}")
        h.note(f"section {name} (id {sid}): trailer offset {pos}, {len(data)} bytes")
        h.extend(body)
        off, ln = (pos, len(data)) if entry_patch is None else entry_patch(sid, pos, len(data))
        entries.append({"id": sid, "flags": t.entry_flags, "crc32": zlib.crc32(data),
                        "offset": off, "length": ln})
        pos += len(data)
    table = b"".join(u16(e["id"]) + u16(e["flags"]) + u32(e["crc32"]) + u64(e["offset"])
                     + u64(e["length"]) for e in entries)
    length = pos + len(table) + 32 if t.length is None else t.length
    head = u64(length) + u32(len(entries)) + u16(t.version) + u16(t.flags)
    crc = zlib.crc32(table + head)
    if t.table_crc is not None:
        crc = t.table_crc(crc)
    h.note(f"section table: {len(entries)} entries of 24 bytes")
    for e in entries:
        name = SECTION_NAMES.get(e["id"], f"unknown id {e['id']}")
        h.add(u16(e["id"]), f"section id {e['id']} = {name}")
        h.add(u16(e["flags"]), f"section flags = 0x{e['flags']:04x}")
        h.add(u32(e["crc32"]), f"section CRC-32 = 0x{e['crc32']:08x}")
        h.add(u64(e["offset"]), f"section offset = {e['offset']}")
        h.add(u64(e["length"]), f"section length = {e['length']}")
    h.note("tail (32 bytes)")
    h.add(u64(length), f"trailer length = {length}")
    h.add(u32(len(entries)), f"section count = {len(entries)}")
    h.add(u16(t.version), f"trailer version = {t.version}")
    h.add(u16(t.flags), f"trailer flags = 0x{t.flags:04x}")
    h.add(u32(crc), f"table CRC-32 = 0x{crc:08x} (table + first 16 tail bytes)")
    h.add(u32(t.reserved), f"reserved = 0x{t.reserved:08x}")
    h.add(t.magic, f"magic {t.magic.decode('ascii', 'replace')!r}")
    return h, entries, length


# --- Hudi's MurmurHash and filters ------------------------------------------------------


def murmur_hadoop(data: bytes, seed: int, sign_extend: bool = True) -> int:
    """Hadoop's MurmurHash2 (32-bit) as Java computes it; returns a signed int."""
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

    def tail_byte(b: int) -> int:  # Java bytes are signed: sign-extended before shifting
        return (b - 256 if b > 127 and sign_extend else b) & mask

    if left:
        if left >= 3:
            h ^= (tail_byte(data[-3]) << 16) & mask
        if left >= 2:
            h ^= (tail_byte(data[-2]) << 8) & mask
        h ^= tail_byte(data[-1])
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - 2**32 if h >= 2**31 else h


def hudi_chain(key: str, k: int, m: int) -> tuple[list[int], list[int]]:
    hashes, positions = [], []
    h = 0
    for _ in range(k):
        h = murmur_hadoop(key.encode("utf-8"), h)
        hashes.append(h)
        positions.append(abs(int(math.fmod(h, m))))  # Java remainder: sign of the dividend
    return hashes, positions


def hudi_optimal_size(n: int, fpp: float) -> tuple[int, int]:
    m = math.ceil(n * (-math.log(fpp)) / (math.log(2) ** 2))
    return m, math.ceil(math.log(2) * m / n)


def hudi_row(keys: list[str], m: int, k: int) -> bytearray:
    bits = bytearray((m + 7) // 8)
    for key in keys:
        for p in hudi_chain(key, k, m)[1]:
            bits[p >> 3] |= 1 << (p & 7)
    return bits


def hudi_row_hex(h: Hex, keys: list[str], m: int, k: int, what: str) -> None:
    h.add(struct.pack(">i", -1), f"{what}: version marker -1")
    h.add(struct.pack(">i", k), f"{what}: nbHash k = {k}")
    h.add(struct.pack(">B", 1), f"{what}: hash type 1 = MURMUR")
    h.add(struct.pack(">i", m), f"{what}: vector size m = {m} bits")
    bits = hudi_row(keys, m, k)
    pos = sorted({p for key in keys for p in hudi_chain(key, k, m)[1]})
    h.add(bytes(bits), f"{what}: bit vector, {len(bits)} bytes (bits {pos}; keys {keys})")


# --- log framing (big-endian, spec/format.md §2) for the carrier vectors ----------------


def header_map(header: list[tuple[int, str]]) -> Hex:
    hmap = Hex([])
    hmap.add(struct.pack(">i", len(header)), f"header map: entry count {len(header)}")
    for key, value in header:
        raw = value.encode("utf-8")
        name = HEADER_NAMES[key]
        hmap.add(struct.pack(">i", key), f"header key {key} = {name}")
        hmap.add(struct.pack(">i", len(raw)), f"{name}: value length {len(raw)}")
        hmap.add(raw, f"{name}: {value if len(value) <= 20 else 'Avro schema JSON'}")
    return hmap


def block_head(block_type: int, header: list[tuple[int, str]], content_length: int) -> bytes:
    """The bytes a CHECKSUM starts with (§4.12): log format version, block type, header map,
    content length (big-endian framing, format §2)."""
    return (struct.pack(">ii", 1, block_type) + header_map(header).data()
            + struct.pack(">q", content_length))


def checksum_section(covered: int, crc: int) -> Hex:
    h = Hex([])
    h.add(u8(CHECKSUM_CRC32), "algorithm 1 = CRC-32 (zlib, ISO-HDLC)")
    h.add(u64(covered), f"covered length = {covered} bytes (head + records)")
    h.add(u32(crc), f"CRC-32 = 0x{crc:08x}")
    return h


def framed_block(h: Hex, block_type: int, header: list[tuple[int, str]], content: Hex,
                 type_name: str) -> int:
    hmap = header_map(header)
    hlen, clen = len(hmap.data()), len(content.data())
    length = 24 + hlen + clen + 4
    h.add(b"#HUDI#", f"magic (log format, big-endian framing; block of {length + 14} bytes)")
    h.add(struct.pack(">q", length), f"blockLength = {length}")
    h.add(struct.pack(">i", 1), "log format version 1")
    h.add(struct.pack(">i", block_type), f"block type {block_type} = {type_name}")
    h.extend(hmap)
    h.add(struct.pack(">q", clen), f"contentLength = {clen}")
    h.extend(content)
    h.add(struct.pack(">i", 0), "footer map: entry count 0 (always empty)")
    h.add(struct.pack(">q", length + 6), f"reverse pointer = {length + 6}")
    return length + 14


def avro_string(text: str) -> bytes:
    raw = text.encode("utf-8")
    n = len(raw) << 1  # zigzag of a non-negative long
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out) + raw


# --- the cases --------------------------------------------------------------------------


Case = tuple[dict[str, Any], Hex | None]
CASES: dict[str, Callable[[], Case]] = {}


def case(name: str) -> Callable[[Callable[[], Case]], Callable[[], Case]]:
    def deco(fn: Callable[[], Case]) -> Callable[[], Case]:
        CASES[name] = fn
        return fn

    return deco


XXH_KEYS = ["", "a", "1", "k10", "TXN-001", "c8abbe79-8d89-47ea-b4ce-4d224bae5bfa", "Zürich-😀"]


@case("xxh64-keys")
def _xxh64() -> Case:
    rows = []
    for k in XXH_KEYS:
        h = xxh64(k)
        rows.append({"key": k, "utf8_hex": k.encode("utf-8").hex(), "xxh64": f"{h:016x}",
                     "xxh64_decimal": h})
    return {"description": "XXH64 (seed 0) of the UTF-8 bytes of record keys: empty, short "
            "(< 4 bytes), 4-7 bytes, 8+ bytes, 32+ bytes (the four-lane stripe path), and "
            "non-ASCII. Values from the xxhash package (the reference implementation).",
            "spec": "§3.2", "kind": "xxh64", "seed": 0, "keys": rows}, None


def _sbbf_case(keys: list[str], num_blocks: int, description: str) -> Case:
    positions = []
    for k in keys:
        block, bits = sbbf_position(k, num_blocks)
        h = xxh64(k)
        positions.append({"key": k, "xxh64": f"{h:016x}", "block": block, "bits": bits})
    h = sbbf_hex(keys, num_blocks)
    h.title = [f"Split-block bloom filter, z = {num_blocks} block(s), keys {keys} "
               "(spec/index.md §3.1).",
               "Blocks in order, 8 words per block, each word a little-endian u32.",
               "Written by regenerate.py from Parquet's algorithm (xxhash package), not morlog."]
    words = sbbf_words(keys, num_blocks)
    absent = {k: sbbf_maybe(words, k) for k in ["k3", "zz", "TXN-002"]}
    return {"description": description, "spec": "§3.1", "kind": "sbbf",
            "num_blocks": num_blocks, "keys": keys, "positions": positions,
            "absent": absent, "sized_blocks_at_1_percent": sbbf_num_blocks(len(keys))}, h


@case("sbbf-one-block")
def _sbbf1() -> Case:
    return _sbbf_case(["k1", "k10", "k2"], 1, "A one-block (32-byte) split-block bloom filter "
                      "of three keys: every key sets one bit in each of the 8 words; the "
                      "filter the index writes for these keys at 1 % (sizing gives z = 1).")


@case("sbbf-three-blocks")
def _sbbf3() -> Case:
    return _sbbf_case(["1", "TXN-001", "b"], 3, "A three-block filter: block index "
                      "((h >> 32) * 3) >> 32 puts '1' and 'TXN-001' in block 2 (their bits "
                      "OR together) and 'b' in block 1; block 0 stays empty.")


@case("sbbf-sizing")
def _sizing() -> Case:
    rows = []
    for fpp in (0.01, 0.001):
        for ndv in (1, 3, 100, 1000, 10_000, 100_000, 500_000):
            z = sbbf_num_blocks(ndv, fpp)
            rows.append({"ndv": ndv, "fpp": fpp, "num_blocks": z,
                         "bits_per_key": round(256 * z / ndv, 3),
                         "rate_at_z": sbbf_rate(ndv, z),
                         "rate_at_z_minus_1": sbbf_rate(ndv, z - 1) if z > 1 else None})
    return {"description": "Filter sizing: the fewest blocks z whose expected false-positive "
            "rate (Poisson mixture) is <= fpp, for a few key counts at 1 % and 0.1 %. A "
            "writer SHOULD size this way; readers never depend on it.", "spec": "§3.1.5",
            "kind": "sbbf-sizing", "sizes": rows}, None


def _section_case(kind: str, spec: str, description: str, body: Hex, title: str,
                  **fields: Any) -> Case:
    body.title = [title, "Little-endian integers (spec/index.md §4.1). Written by "
                  "regenerate.py from the spec, not by morlog."]
    return {"description": description, "spec": spec, "kind": kind, **fields}, body


@case("keys-section-uncompressed")
def _keys() -> Case:
    keys = ["k1", "k10", "k2"]
    return _section_case("keys-section", "§4.4", "KEYS section, codec 0 (none), three keys "
                         "sorted by UTF-8 bytes ('k10' before 'k2').", keys_section(keys),
                         "KEYS section (id 1), codec 0, keys k1 k10 k2.", keys=keys,
                         unsorted=["k2", "k10", "k1", "k2"])


@case("keys-section-utf8-byte-order")
def _keys_order() -> Case:
    keys = ["a", "\uff21", "\U0001f600"]
    return _section_case("keys-section", "§4.4", "KEYS sorts by UTF-8 bytes (= code points): "
                         "U+FF21 (EF BC A1) sorts before U+1F600 (F0 9F 98 80), although "
                         "Java's UTF-16 String order puts the surrogate pair D83D DE00 first.",
                         keys_section(keys), "KEYS section, codec 0: 'a', U+FF21, U+1F600.",
                         keys=keys, unsorted=["\U0001f600", "a", "\uff21", "a"])


@case("range-section")
def _range() -> Case:
    return _section_case("range-section", "§4.6", "RANGE section: key count 3, min 'k1', "
                         "max 'k2'.", range_section(3, "k1", "k2"),
                         "RANGE section (id 3).", count=3, min_key="k1", max_key="k2")


@case("bloom-section")
def _bloom() -> Case:
    keys = ["k1", "k10", "k2"]
    return _section_case("bloom-section", "§4.5", "BLOOM section: filter type 1, z = 1, the "
                         "filter of case sbbf-one-block.", bloom_section(keys, 1),
                         "BLOOM section (id 2).", keys=keys, num_blocks=1)


@case("cumulative-full-section")
def _cum_full() -> Case:
    keys = ["k1", "k2", "k3", "k4", "k5"]
    body = cumulative_section(FULL, BASE_INSTANT, 2, 5, "k1", "k5", keys, 1)
    return _section_case("cumulative-section", "§4.7", "CUMULATIVE section, kind FULL: scope, "
                         "2 blocks, 5 keys, range k1..k5, a one-block filter of k1..k5, no "
                         "checkpoint reference.", body, "CUMULATIVE section (id 4), FULL.",
                         cumulative={"kind": "FULL", "scope": BASE_INSTANT, "blocks": 2,
                                     "keys": 5, "min_key": "k1", "max_key": "k5",
                                     "bloom_keys": keys, "num_blocks": 1,
                                     "checkpoint": None})


@case("cumulative-delta-section")
def _cum_delta() -> Case:
    cp = Checkpoint(0, 1, 4242, 317, 0x1234ABCD, 110)
    body = cumulative_section(DELTA, BASE_INSTANT, 3, 6, "k1", "k6", ["k6"], 1, cp)
    return _section_case("cumulative-section", "§4.7", "CUMULATIVE section, kind DELTA: the "
                         "filter holds only the keys since the checkpoint ('k6'), the range "
                         "is the whole scope's, then the checkpoint reference (illustrative "
                         "offsets and CRC).", body, "CUMULATIVE section (id 4), DELTA.",
                         cumulative={"kind": "DELTA", "scope": BASE_INSTANT, "blocks": 3,
                                     "keys": 6, "min_key": "k1", "max_key": "k6",
                                     "bloom_keys": ["k6"], "num_blocks": 1,
                                     "checkpoint": cp.json()})


DIRECTORY_REFS = [
    Ref(0, 0, 0, 1172, 0, 0, 0, 0, 0, 1, "20250102000000001", "h1", "h1"),
    Ref(0, 1, 1172, 2301, 3201, 53, 0x0BADF00D, 36, 0x5EED1234, 3, "20250102000000002", "k1",
        "k2"),
    Ref(1, 2, 0, 5311, 0, 0, 0, 0, 0, 2, "20250102000000003", "p1", "p2"),
]


@case("directory-section")
def _directory() -> Case:
    files = [LOG_1, LOG_2]
    body = directory_section(files, DIRECTORY_REFS)
    return _section_case("directory-section", "§4.8", "DIRECTORY section: two log files; a "
                         "block without index (carrier NONE, e.g. written by Hudi), an Avro "
                         "carrier block with its KEYS/BLOOM/RANGE region, a Parquet carrier "
                         "block in the second file (illustrative offsets and CRC).", body,
                         "DIRECTORY section (id 5).", files=files,
                         blocks=[r.json() for r in DIRECTORY_REFS])


def _region(keys: list[str], lo: str, hi: str) -> list[tuple[int, Hex]]:
    """A block's region as writers lay it out (§4.3): the filter part (BLOOM, RANGE), then
    the keys part (KEYS)."""
    return [(BLOOM, bloom_section(keys, 1)), (RANGE, range_section(len(keys), lo, hi)),
            (KEYS, keys_section(keys))]


def _trailer_case(name: str, description: str, sections: list[tuple[int, Hex]],
                  tail: Tail | None = None, *, kind: str = "trailer",
                  entry_patch: Callable[[int, int, int], tuple[int, int]] | None = None,
                  extra_title: str = "", **fields: Any) -> Case:
    h, entries, length = trailer(sections, tail, entry_patch)
    h.title = [f"Index trailer: {name}. {extra_title}".strip(),
               "Trailer integers little-endian (spec/index.md §4.1); CRC-32 = zlib.crc32.",
               "Written field by field by regenerate.py from the spec (not by morlog)."]
    cj: dict[str, Any] = {"description": description, "spec": "§4", "kind": kind, **fields}
    if kind == "trailer":
        cj.update(length=length, version=VERSION, sections=entries)
    return cj, h


KEYS3 = ["k1", "k10", "k2"]


@case("trailer-bloom-range-keys")
def _trailer_min() -> Case:
    return _trailer_case("BLOOM + RANGE + KEYS", "A minimal complete trailer: BLOOM (z = 1), "
                         "RANGE and KEYS (codec 0) of keys k1 k10 k2 in the order writers lay "
                         "out a block's region (filter part, then keys part; §4.3), the "
                         "section table (3 entries) and the 32-byte tail.",
                         _region(KEYS3, "k1", "k2"), keys=KEYS3, range=[3, "k1", "k2"],
                         flags=0)


@case("trailer-unknown-section-99")
def _trailer_unknown() -> Case:
    future = Hex([])
    future.add(b"future\x00\x01", "body of a section this version does not know")
    return _trailer_case("unknown section id 99", "The minimal trailer plus a section with id "
                         "99 after KEYS. A reader MUST skip it (it is listed in the table, "
                         "so nothing else moves) and warn: UnknownSectionWarning; the known "
                         "sections decode as usual.",
                         _region(KEYS3, "k1", "k2") + [(99, future)], keys=KEYS3,
                         range=[3, "k1", "k2"], flags=0, warns="UnknownSectionWarning",
                         unknown=[99])


@case("trailer-reserved-bits-set")
def _trailer_flags() -> Case:
    return _trailer_case("flags and reserved set", "Trailer flags 0x8001, section flags "
                         "0x0100 and a reserved word 0xffffffff, all written as 0 by this "
                         "version: a reader ignores them (they are covered by the table CRC "
                         "except the reserved word) and reads the trailer normally.",
                         _region(KEYS3, "k1", "k2"),
                         Tail(flags=0x8001, reserved=0xFFFFFFFF, entry_flags=0x0100),
                         keys=KEYS3, range=[3, "k1", "k2"], flags=0x8001)


def _error_case(name: str, description: str, tail: Tail | None, error: str, offset: int | None,
                *, entry_patch: Callable[[int, int, int], tuple[int, int]] | None = None,
                stage: str = "layout", truncate: int | None = None,
                flip_at: int | None = None) -> Case:
    cj, h = _trailer_case(name, description, _region(KEYS3, "k1", "k2"), tail,
                          kind="trailer-error", entry_patch=entry_patch,
                          expect_error={"type": error, "offset": offset}, stage=stage)
    if truncate is not None or flip_at is not None:
        data = bytearray(h.data())
        if flip_at is not None:
            data[flip_at] ^= 0x01
        if truncate is not None:
            data = data[-truncate:]
        change = (f"only its last {truncate} bytes" if truncate is not None
                  else f"byte {flip_at} XOR 0x01")
        raw = Hex(h.title + [f"The bytes of the valid minimal trailer, then changed: {change}."])
        for i in range(0, len(data), 16):
            raw.add(bytes(data[i : i + 16]), f"bytes {i}..{min(i + 16, len(data)) - 1}")
        h = raw
    return cj, h


_VALID_LEN = 193  # length of the minimal trailer (asserted in main)


@case("trailer-error-bad-magic")
def _err_magic() -> Case:
    return _error_case("bad tail magic", "The last 8 bytes are 'MORLIDX2' instead of "
                       "'MORLIDX1': not an index trailer. InvalidMagicError at the magic "
                       "(buffer length - 8).", Tail(magic=b"MORLIDX2"), "InvalidMagicError",
                       _VALID_LEN - 8)


@case("trailer-error-bad-table-crc")
def _err_crc() -> Case:
    return _error_case("bad table CRC", "The table CRC-32 does not match the section table "
                       "and the first 16 tail bytes (its value is XOR 0xffffffff). "
                       "ContentError at the first byte of the section table.",
                       Tail(table_crc=lambda c: c ^ 0xFFFFFFFF), "ContentError",
                       _VALID_LEN - 32 - 3 * 24)


@case("trailer-error-length-past-buffer")
def _err_len() -> Case:
    return _error_case("trailer length past the buffer", "trailerLength says 4096 but only "
                       f"{_VALID_LEN} bytes exist before the trailer's end (the table CRC is "
                       "valid for that value, so only the length is wrong). LengthError at the "
                       "trailerLength field (buffer length - 32).", Tail(length=4096),
                       "LengthError", _VALID_LEN - 32)


@case("trailer-error-unsupported-version")
def _err_version() -> Case:
    return _error_case("trailer version 2", "Trailer version 2 (unknown to a version-1 "
                       "reader), everything else valid, CRC included. UnsupportedVersionError "
                       "at the version field (buffer length - 20); the block's index is "
                       "unusable, its records are not.", Tail(version=2),
                       "UnsupportedVersionError", _VALID_LEN - 20)


@case("trailer-error-section-out-of-range")
def _err_section_range() -> Case:
    def patch(sid: int, off: int, ln: int) -> tuple[int, int]:
        return (off, ln + 100) if sid == RANGE else (off, ln)

    return _error_case("section past the sections area", "The RANGE entry's length is 100 "
                       "bytes too long, so the section would run into the table (table CRC "
                       "recomputed). LengthError at that table entry.", None, "LengthError",
                       _VALID_LEN - 32 - 2 * 24, entry_patch=patch)


@case("trailer-error-section-crc")
def _err_section_crc() -> Case:
    keys_at = 37 + 16  # after BLOOM (37 bytes) and RANGE (16 bytes)
    return _error_case("section CRC mismatch", "One byte of the KEYS section (its last key "
                       f"byte, trailer offset {keys_at + 35}) is changed after the CRCs were "
                       "computed. The layout parses; reading the KEYS section raises "
                       f"ContentError at the section's first byte ({keys_at}).", None,
                       "ContentError", keys_at, stage="section", flip_at=keys_at + 35)


@case("trailer-error-tail-cut-off")
def _err_short() -> Case:
    return _error_case("tail cut off", "Only the last 31 bytes of a trailer: shorter than the "
                       "32-byte tail. LengthError at offset 0.", None, "LengthError", 0,
                       truncate=31)


def _section_error(name: str, kind: str, description: str, h: Hex, error: str) -> Case:
    h.title = [f"{name}: a malformed section (spec/index.md §4.10).",
               "Written by regenerate.py, not by morlog."]
    return {"description": description, "spec": "§4.10", "kind": "section-error",
            "section": kind, "expect_error": {"type": error}}, h


@case("section-error-keys-unknown-codec")
def _serr_codec() -> Case:
    h = keys_section(["a"])
    data = bytearray(h.data())
    data[0] = 7
    out = Hex([])
    out.add(bytes(data[:1]), "codec 7: unknown")
    out.add(bytes(data[1:]), "rest of a valid one-key KEYS section")
    return _section_error("keys-unknown-codec", "KEYS", "KEYS with codec 7: ContentError "
                          "(codecs are 0 none and 1 zstd).", out, "ContentError")


@case("section-error-keys-offsets")
def _serr_offsets() -> Case:
    h = Hex([])
    h.add(u8(0), "codec 0")
    h.add(u32(2), "key count 2")
    h.add(u32(14), "raw length 14 = 4 * 3 + 2")
    h.add(u32(14), "payload length 14")
    h.add(u32(0), "offset[0] = 0")
    h.add(u32(2), "offset[1] = 2: decreasing afterwards")
    h.add(u32(1), "offset[2] = 1, but the key bytes are 2: inconsistent")
    h.add(b"ab", "key bytes")
    return _section_error("keys-offsets", "KEYS", "KEYS whose last offset is not the key-byte "
                          "length (and offsets decrease): ContentError.", h, "ContentError")


@case("section-error-bloom-zero-blocks")
def _serr_bloom0() -> Case:
    h = Hex([])
    h.add(u8(1), "filter type 1")
    h.add(u32(0), "block count 0: a filter has at least one block")
    return _section_error("bloom-zero-blocks", "BLOOM", "BLOOM with z = 0: LengthError.", h,
                          "LengthError")


@case("section-error-bloom-unknown-type")
def _serr_bloom_type() -> Case:
    h = bloom_section(["a"], 1)
    data = h.data()
    out = Hex([])
    out.add(u8(2), "filter type 2: unknown")
    out.add(data[1:5], "block count 1")
    out.add(data[5:], "32 bytes of filter")
    return _section_error("bloom-unknown-type", "BLOOM", "BLOOM with filter type 2: "
                          "ContentError.", out, "ContentError")


@case("section-error-range-trailing-bytes")
def _serr_range() -> Case:
    h = range_section(1, "a", "a")
    h.add(b"\x00", "one byte too many")
    return _section_error("range-trailing-bytes", "RANGE", "RANGE followed by a stray byte "
                          "inside the section: ContentError.", h, "ContentError")


@case("section-error-cumulative-unknown-kind")
def _serr_kind() -> Case:
    h = cumulative_section(FULL, BASE_INSTANT, 1, 1, "a", "a", ["a"], 1)
    data = h.data()
    out = Hex([])
    out.add(u8(2), "kind 2: unknown (0 FULL, 1 DELTA)")
    out.add(data[1:], "rest of a valid FULL section")
    return _section_error("cumulative-unknown-kind", "CUMULATIVE", "CUMULATIVE with kind 2: "
                          "ContentError.", out, "ContentError")


@case("section-error-directory-unknown-file")
def _serr_dir() -> Case:
    ref = Ref(1, 1, 0, 500, 300, 50, 0, 30, 0, 1, "20250102000000001", "a", "a")
    h = directory_section([LOG_1], [ref])
    return _section_error("directory-unknown-file", "DIRECTORY", "DIRECTORY entry with file "
                          "ordinal 1 while only one file is listed: ContentError.", h,
                          "ContentError")


@case("section-error-carrier-unknown")
def _serr_carrier() -> Case:
    ref = Ref(0, 3, 0, 500, 300, 50, 0, 30, 0, 1, "20250102000000001", "a", "a")
    h = directory_section([LOG_1], [ref])
    return _section_error("carrier-unknown", "DIRECTORY", "DIRECTORY entry with carrier 3 "
                          "(known: 0 NONE, 1 AVRO, 2 PARQUET): ContentError.", h,
                          "ContentError")


# COLUMN_STATS (§4.11): type tags, value encodings, the writer's bound rules

STATS_TAGS = {"OTHER": 0, "BOOLEAN": 1, "INT32": 2, "INT64": 3, "FLOAT32": 4, "FLOAT64": 5,
              "STRING": 6, "BYTES": 7, "FIXED": 8, "DECIMAL": 9, "DATE": 10, "TIME_MILLIS": 11,
              "TIME_MICROS": 12, "TIME_NANOS": 13, "TIMESTAMP_MILLIS": 14,
              "TIMESTAMP_MICROS": 15, "TIMESTAMP_NANOS": 16, "LOCAL_TIMESTAMP_MILLIS": 17,
              "LOCAL_TIMESTAMP_MICROS": 18, "LOCAL_TIMESTAMP_NANOS": 19, "NULL": 20,
              "FLOAT32_NANS": 21, "FLOAT64_NANS": 22}
#: float tags holding NaN (§4.11.2): their bounds are encoded as the plain float tag's
_NAN_TAGS = {"FLOAT32_NANS": "FLOAT32", "FLOAT64_NANS": "FLOAT64"}
_I32_TAGS = {"INT32", "DATE", "TIME_MILLIS"}
_I64_TAGS = {"INT64", "TIME_MICROS", "TIME_NANOS", "TIMESTAMP_MILLIS", "TIMESTAMP_MICROS",
             "TIMESTAMP_NANOS", "LOCAL_TIMESTAMP_MILLIS", "LOCAL_TIMESTAMP_MICROS",
             "LOCAL_TIMESTAMP_NANOS"}
MAX_BOUND_BYTES = 256


def shortest_twos_complement(n: int) -> bytes:
    """Java's BigInteger.toByteArray: the shortest big-endian two's complement."""
    length = (n.bit_length() if n >= 0 else (~n).bit_length()) // 8 + 1
    return n.to_bytes(length, "big", signed=True)


def stats_value(h: Hex, tag: str, v: Any, what: str, scale: int = 0) -> None:
    """One bound, as §4.11.2 encodes it (``v`` as in case.json: hex for bytes, a string for
    decimals)."""
    if tag == "BOOLEAN":
        h.add(u8(1 if v else 0), f"{what}: {str(v).lower()}")
    elif tag in _I32_TAGS:
        h.add(struct.pack("<i", v), f"{what}: i32 {v}")
    elif tag in _I64_TAGS:
        h.add(struct.pack("<q", v), f"{what}: i64 {v}")
    elif tag == "FLOAT32":
        h.add(struct.pack("<f", float(v)), f"{what}: f32 {float(v)!r}")
    elif tag == "FLOAT64":
        h.add(struct.pack("<d", float(v)), f"{what}: f64 {float(v)!r}")
    elif tag == "STRING":
        add_str(h, v, what)
    elif tag == "BYTES":
        raw = bytes.fromhex(v)
        h.add(u32(len(raw)), f"{what}: length {len(raw)}")
        h.add(raw, f"{what}: bytes {v}")
    elif tag == "FIXED":
        h.add(bytes.fromhex(v), f"{what}: fixed bytes {v}")
    elif tag == "DECIMAL":
        digits, _, frac = v.lstrip("-").partition(".")
        assert len(frac) == scale, (v, scale)
        unscaled = int(digits + frac) * (-1 if v.startswith("-") else 1)
        raw = shortest_twos_complement(unscaled)
        h.add(u8(len(raw)), f"{what}: {len(raw)} bytes of unscaled value")
        h.add(raw, f"{what}: unscaled {unscaled} = {v} at scale {scale} (big-endian)")
    else:
        raise ValueError(tag)


def stats_entry(h: Hex, e: dict[str, Any], *, tag_override: int | None = None,
                payload_override: bytes | None = None, flags: int | None = None,
                payload_length: int | None = None,
                payload_note: str = "payload of a type this version does not know") -> None:
    tag = e["type"]
    code = STATS_TAGS.get(tag, tag_override)
    assert code is not None
    bounds = e.get("min") is not None
    payload = Hex([])
    if tag == "FIXED":
        payload.add(u32(e["width"]), f"{e['name']}: parameter width {e['width']}")
    elif tag == "DECIMAL":
        payload.add(u8(e["precision"]), f"{e['name']}: parameter precision {e['precision']}")
        payload.add(u8(e["scale"]), f"{e['name']}: parameter scale {e['scale']}")
    elif tag in _NAN_TAGS:
        payload.add(u64(e["nans"]), f"{e['name']}: NaN count {e['nans']}")
    if bounds:
        vtag = _NAN_TAGS.get(tag, tag)
        stats_value(payload, vtag, e["min"], f"{e['name']}: min", e.get("scale", 0))
        stats_value(payload, vtag, e["max"], f"{e['name']}: max", e.get("scale", 0))
    if payload_override is not None:
        payload = Hex([])
        payload.add(payload_override, f"{e['name']}: {payload_note}")
    data = payload.data()
    h.note(f"column {e['name']!r}")
    add_str(h, e["name"], "name")
    h.add(u8(code), f"type tag {code} = {tag}")
    fl = (1 if bounds else 0) if flags is None else flags
    h.add(u8(fl), f"flags 0x{fl:02x}" + (" (HAS_BOUNDS)" if fl & 1 else " (no bounds)"))
    h.add(u64(e["null_count"]), f"null count {e['null_count']}")
    h.add(u64(e["value_count"]), f"value count {e['value_count']}")
    ln = len(data) if payload_length is None else payload_length
    h.add(u32(ln), f"payload length {ln}")
    h.extend(payload)


def stats_section(rows: int, entries: list[dict[str, Any]], **overrides: Any) -> Hex:
    h = Hex([])
    h.add(u64(rows), f"rows {rows}")
    h.add(u32(len(entries)), f"column count {len(entries)}")
    for i, e in enumerate(entries):
        stats_entry(h, e, **(overrides if i == len(entries) - 1 else {}))
    return h


def _utf8_key(v: Any) -> Any:
    return v.encode("utf-8") if isinstance(v, str) else v


def stats_of_values(name: str, tag: str, values: list[Any], **params: Any) -> dict[str, Any]:
    """The entry §4.11.3 prescribes for a column of ``values`` (None = null; floats may be
    "NaN"; bytes as hex; decimals as strings at the column's scale)."""
    present = [v for v in values if v is not None]
    e: dict[str, Any] = {"name": name, "type": tag, "null_count": len(values) - len(present),
                         "value_count": len(values), "min": None, "max": None, **params}
    if tag in ("OTHER", "NULL") or not present:
        return e
    if tag in ("FLOAT32", "FLOAT64"):
        nans = sum(1 for v in present if v == "NaN")
        if nans:  # the NaN tag: the NaN count, bounds of the other values
            e["type"], e["nans"] = tag + "_NANS", nans
        nums = [float(v) for v in present if v != "NaN"]
        if not nums:
            return e
        lo, hi = min(nums), max(nums)
        e["min"], e["max"] = (-0.0 if lo == 0 else lo), (0.0 if hi == 0 else hi)
        return e
    if tag == "DECIMAL":
        from decimal import Decimal

        lo_d, hi_d = min(map(Decimal, present)), max(map(Decimal, present))
        e["min"], e["max"] = str(lo_d), str(hi_d)
        return e
    if tag in ("BYTES", "FIXED"):
        raws = sorted(bytes.fromhex(v) for v in present)
        if len(raws[0]) > MAX_BOUND_BYTES or len(raws[-1]) > MAX_BOUND_BYTES:
            return e
        e["min"], e["max"] = raws[0].hex(), raws[-1].hex()
        return e
    ordered = sorted(present, key=_utf8_key)  # strings by UTF-8 bytes; numbers, booleans
    lo, hi = ordered[0], ordered[-1]
    if tag == "STRING" and max(len(lo.encode()), len(hi.encode())) > MAX_BOUND_BYTES:
        return e
    e["min"], e["max"] = lo, hi
    return e


LONG_TEXT = "x" * 300  # longer than MAX_BOUND_BYTES: the bounds are dropped, not truncated
STATS_COLUMNS = [  # name, tag, Arrow type (for the writer-side check), 4 values, parameters
    ("_hoodie_record_key", "STRING", "string", ["k1", "k10", "k2", "k3"], {}),
    ("id", "INT64", "int64", [42, None, -5, 7], {}),
    ("n", "INT32", "int32", [3, 0, 7, None], {}),
    ("flag", "BOOLEAN", "bool", [True, False, None, True], {}),
    ("price", "FLOAT64", "double", [2.5, 0.0, None, -0.0], {}),
    ("ratio", "FLOAT32", "float", [1.5, "NaN", 0.25, None], {}),
    ("fare", "FLOAT64", "double", ["NaN", 99.99, "NaN", -0.0], {}),
    ("only_nan", "FLOAT64", "double", ["NaN", None, "NaN", "NaN"], {}),
    ("name", "STRING", "string", ["\U0001f600", "\uff21", "a", None], {}),
    ("blob", "BYTES", "binary", ["8001", "", "7f", None], {}),
    ("code", "FIXED", "fixed_size_binary[2]", ["ff00", "0001", None, "8000"], {"width": 2}),
    ("amount", "DECIMAL", "decimal128(10, 2)", ["123.45", "-1.50", None, "0.00"],
     {"precision": 10, "scale": 2}),
    ("day", "DATE", "date32", [19000, 19500, None, 19001], {}),
    ("t", "TIME_MILLIS", "time32[ms]", [1000, 86399000, None, 5], {}),
    ("ts", "TIMESTAMP_MICROS", "timestamp[us, tz=UTC]",
     [1700000000000000, -1, None, 1700000000000001], {}),
    ("lts", "LOCAL_TIMESTAMP_MILLIS", "timestamp[ms]", [0, None, None, 86400000], {}),
    ("long_text", "STRING", "string", [LONG_TEXT, "b", None, "a"], {}),
    ("empty", "STRING", "string", [None, None, None, None], {}),
    ("nested", "OTHER", "struct<a: int32>", [{"a": 1}, None, {"a": 2}, {"a": 3}], {}),
    ("nothing", "NULL", "null", [None, None, None, None], {}),
]


def _stats_entries() -> list[dict[str, Any]]:
    return [stats_of_values(n, tag, vals, **params) for n, tag, _, vals, params in STATS_COLUMNS]


@case("column-stats-section")
def _column_stats() -> Case:
    entries = _stats_entries()
    body = stats_section(4, entries)
    return _section_case(
        "column-stats-section", "§4.11", "COLUMN_STATS of a 4-row block with a column of "
        "every tag kind: bounds in filter order (strings by UTF-8 bytes: U+FF21 before "
        "U+1F600; bytes unsigned; a zero float min written -0.0 and max +0.0; decimals as "
        "the shortest two's complement of the unscaled value); a float column holding NaN "
        "with the tag FLOAT32_NANS / FLOAT64_NANS, its NaN count and the bounds of the "
        "other values (none when every value is NaN or null); no bounds for a string longer "
        "than 256 bytes, a column of nulls, OTHER and NULL. "
        "'records' are the column values a writer computes this section from (§4.11.3).",
        body, "COLUMN_STATS section (id 6).", rows=4, columns=entries,
        records=[{"name": n, "arrow_type": at, "values": vals}
                 for n, _, at, vals, _p in STATS_COLUMNS])


@case("column-stats-unknown-tag")
def _column_stats_unknown() -> Case:
    known = stats_of_values("id", "INT64", [1, 2, None], )
    future = {"name": "future", "type": "tag 99", "null_count": 0, "value_count": 3,
              "min": None, "max": None}
    body = stats_section(3, [known, future], tag_override=99,
                         payload_override=b"\x05\x00\x00\x00hello", flags=1)
    return _section_case(
        "column-stats-section", "§4.11.4", "COLUMN_STATS with an entry of type tag 99 (a "
        "type of a later version) with HAS_BOUNDS and a 9-byte payload: a reader skips the "
        "payload, keeps the counts and has no bounds for that column; the other entry "
        "decodes as usual. Writers of this version never write such an entry.", body,
        "COLUMN_STATS section (id 6) with an unknown type tag.", rows=3,
        columns=[known, {**future, "type": 99}], unknown_tags=[99])


@case("trailer-with-column-stats")
def _trailer_stats() -> Case:
    entry = stats_of_values("_hoodie_record_key", "STRING", KEYS3)
    return _trailer_case("BLOOM + RANGE + KEYS + COLUMN_STATS", "The minimal trailer plus "
                         "a COLUMN_STATS section (id 6) after KEYS, the last section before "
                         "the table as writers place it (§4.3): statistics of the key "
                         "column of the 3 records.",
                         _region(KEYS3, "k1", "k2") + [(COLUMN_STATS, stats_section(3, [entry]))],
                         keys=KEYS3, range=[3, "k1", "k2"], flags=0,
                         column_stats={"rows": 3, "columns": [entry]})


def _stats_error(name: str, description: str, rows: int, entries: list[dict[str, Any]],
                 error: str, **overrides: Any) -> Case:
    return _section_error(name, "COLUMN_STATS", description,
                          stats_section(rows, entries, **overrides), error)


@case("section-error-column-stats-nan-bound")
def _serr_stats_nan() -> Case:
    e = {"name": "x", "type": "FLOAT64", "null_count": 0, "value_count": 1, "min": "nan",
         "max": 1.0}
    return _stats_error("column-stats-nan-bound", "A FLOAT64 entry whose min is NaN: NaN "
                        "is never a bound. ContentError.", 1, [e], "ContentError")


@case("section-error-column-stats-nan-count")
def _serr_stats_nan_count() -> Case:
    e = {"name": "x", "type": "FLOAT64_NANS", "null_count": 1, "value_count": 3, "nans": 3,
         "min": None, "max": None}
    return _stats_error("column-stats-nan-count", "A FLOAT64_NANS entry counting 3 NaN "
                        "among 2 non-null values (the count is 1 to the non-null values). "
                        "ContentError.", 3, [e], "ContentError")


@case("section-error-column-stats-bounds-of-nans")
def _serr_stats_nan_bounds() -> Case:
    e = {"name": "x", "type": "FLOAT32_NANS", "null_count": 1, "value_count": 3, "nans": 2,
         "min": 1.0, "max": 2.0}
    return _stats_error("column-stats-bounds-of-nans", "HAS_BOUNDS on a FLOAT32_NANS "
                        "column whose every non-null value is NaN. ContentError.", 3, [e],
                        "ContentError")


@case("section-error-column-stats-min-above-max")
def _serr_stats_order() -> Case:
    e = {"name": "x", "type": "STRING", "null_count": 0, "value_count": 2,
         "min": "\U0001f600", "max": "\uff21"}
    return _stats_error("column-stats-min-above-max", "A STRING entry whose min (U+1F600, "
                        "F0 9F 98 80) is above its max (U+FF21, EF BC A1) in UTF-8 byte order "
                        "(although below it in UTF-16 order). ContentError.", 2, [e],
                        "ContentError")


@case("section-error-column-stats-counts")
def _serr_stats_counts() -> Case:
    e = {"name": "x", "type": "INT32", "null_count": 5, "value_count": 4, "min": None,
         "max": None}
    return _stats_error("column-stats-counts", "Null count 5 above the value count 4. "
                        "ContentError.", 4, [e], "ContentError")


@case("section-error-column-stats-bounds-of-nulls")
def _serr_stats_null_bounds() -> Case:
    e = {"name": "x", "type": "INT32", "null_count": 4, "value_count": 4, "min": 1,
         "max": 2}
    return _stats_error("column-stats-bounds-of-nulls", "HAS_BOUNDS on a column whose "
                        "every value is null. ContentError.", 4, [e], "ContentError")


@case("section-error-column-stats-duplicate-name")
def _serr_stats_dup() -> Case:
    e = {"name": "x", "type": "INT32", "null_count": 0, "value_count": 1, "min": 1, "max": 1}
    return _stats_error("column-stats-duplicate-name", "Two entries named 'x'. "
                        "ContentError.", 1, [e, e], "ContentError")


@case("section-error-column-stats-payload-cut-off")
def _serr_stats_cut() -> Case:
    e = {"name": "x", "type": "INT64", "null_count": 0, "value_count": 1, "min": 1, "max": 1}
    return _stats_error("column-stats-payload-cut-off", "The payload length says 100 "
                        "bytes, 16 follow. LengthError.", 1, [e], "LengthError",
                        payload_length=100)


@case("section-error-column-stats-payload-trailing")
def _serr_stats_trailing() -> Case:
    e = {"name": "x", "type": "INT32", "null_count": 0, "value_count": 1, "min": 1, "max": 1}
    return _stats_error("column-stats-payload-trailing", "An INT32 entry whose payload "
                        "length is 9: one byte after min and max. ContentError (the payload "
                        "of a known tag holds exactly its fields).", 1, [e], "ContentError",
                        payload_override=struct.pack("<ii", 1, 1) + b"\x00",
                        payload_note="min 1, max 1 (i32), then a stray byte 00")


@case("section-error-column-stats-decimal-precision")
def _serr_stats_decimal() -> Case:
    e = {"name": "x", "type": "DECIMAL", "null_count": 0, "value_count": 1, "min": "1.00",
         "max": "10.00", "precision": 3, "scale": 2}
    return _stats_error("column-stats-decimal-precision", "A DECIMAL(3, 2) entry whose max "
                        "10.00 (unscaled 1000) needs 4 digits. ContentError.", 1, [e],
                        "ContentError")


# Hudi filters (facts file §8)

FACTS_M, FACTS_K = 2_587_966, 30


@case("hudi-murmur-facts")
def _murmur_facts() -> Case:
    expected = {  # verbatim from the facts file §8 (verified against Hudi-written filters)
        "1": {"hashes": [1228156847, 121740187], "positions": [1460963, 105785, 1189081,
                                                               2066078]},
        "TXN-001": {"hashes": [-1349093075], "positions": [762789, 591431, 1893349, 899664]},
    }
    for key, exp in expected.items():  # the transcription reproduces them
        hashes, positions = hudi_chain(key, FACTS_K, FACTS_M)
        assert hashes[: len(exp["hashes"])] == exp["hashes"], key
        assert positions[:4] == exp["positions"], key
    return {"description": "Hadoop MurmurHash2 chain of Hudi's bloom filters with Hudi's "
            "defaults (m = 2,587,966 bits, k = 30): h1 = murmur(key, 0), h(i+1) = "
            "murmur(key, h(i)); position = |h rem m| (Java remainder). Values from the facts "
            "file §8, which reproduce the bytes of Hudi-written base-file filters.",
            "spec": "§3.3", "kind": "hudi-murmur", "num_bits": FACTS_M, "num_hashes": FACTS_K,
            "keys": [{"key": k, **v} for k, v in expected.items()],
            "provenance": "verified (facts §8)"}, None


@case("hudi-murmur-sign-extended-tail")
def _murmur_tail() -> Case:
    rows = []
    for key in ["é", "aé", "Zürich-é"]:
        data = key.encode("utf-8")
        rows.append({"key": key, "utf8_hex": data.hex(), "seed": 0,
                     "hash": murmur_hadoop(data, 0),
                     "hash_if_tail_bytes_were_masked": murmur_hadoop(data, 0, False)})
    return {"description": "Non-ASCII tail bytes: Java sign-extends bytes >= 0x80 of the 1-3 "
            "byte tail before shifting them in (Hadoop quirk), so these hashes differ from a "
            "masked-byte MurmurHash2. Values from regenerate.py's transcription of the Java "
            "code.", "spec": "§3.3", "kind": "hudi-murmur-raw", "keys": rows,
            "provenance": "Java source only (facts §8 quirk); no Hudi-written file has "
            "non-ASCII keys"}, None


@case("hudi-simple-bloom")
def _hudi_simple() -> Case:
    keys, m, k = ["1", "TXN-001"], 20, 3
    h = Hex(["Hudi SIMPLE bloom filter, m = 20 bits, k = 3, keys '1' and 'TXN-001' "
             "(spec/index.md §3.3).",
             "Big-endian (Java DataOutputStream); bit i in byte i/8 under 1 << (i % 8).",
             "Written by regenerate.py, not by morlog."])
    hudi_row_hex(h, keys, m, k, "row")
    return {"description": "A small SIMPLE filter (one row): version marker, k, hash type, m, "
            "bit vector; its Base64 string is what a base file's footer holds.",
            "spec": "§3.3", "kind": "hudi-bloom", "type_code": "SIMPLE", "num_bits": m,
            "num_hashes": k, "keys": keys,
            "absent": {a: all(hudi_row(keys, m, k)[p >> 3] >> (p & 7) & 1
                              for p in hudi_chain(a, k, m)[1]) for a in ["2", "TXN-002"]},
            "base64": base64.b64encode(h.data()).decode("ascii")}, h


@case("hudi-dynamic-v0-bounded")
def _hudi_dynamic() -> Case:
    n, fpp, max_entries = 2, 0.1, 4
    m, k = hudi_optimal_size(n, fpp)
    keys = [str(i) for i in range(1, 8)]
    # growth rule (facts §8): 1,2 -> row 0; 3,4 -> row 1 (new row); 5 -> row 0 (bound reached,
    # curIdx stays 0); then round-robin rows 0, 1: 6 -> row 0, 7 -> row 1
    rows = [["1", "2", "5", "6"], ["3", "4", "7"]]
    current = 5  # 2 adds to row 1, then 3 adds after the bound, all counted
    h = Hex([f"Hudi DYNAMIC_V0 filter: numEntries 2, fpp 0.1 (m = {m}, k = {k}), max entries "
             "4, keys '1'..'7' added in order (spec/index.md §3.3).",
             "Big-endian. Written by regenerate.py, not by morlog."])
    h.add(struct.pack(">i", -1), "outer header: version marker -1")
    h.add(struct.pack(">i", k), f"outer header: nbHash k = {k}")
    h.add(struct.pack(">B", 1), "outer header: hash type 1 = MURMUR")
    h.add(struct.pack(">i", m), f"outer header: vector size m = {m}")
    h.add(struct.pack(">i", n), f"nr (numEntries, a row's capacity) = {n}")
    h.add(struct.pack(">i", current), f"currentNbRecord = {current}")
    h.add(struct.pack(">i", len(rows)), f"row count = {len(rows)}")
    for i, rk in enumerate(rows):
        hudi_row_hex(h, rk, m, k, f"row {i}")
    return {"description": "DYNAMIC_V0 growth rule with a bound: keys 1-2 fill row 0, key 3 "
            "opens row 1, key 5 finds rows * numEntries >= max entries and goes to row 0 "
            "(round-robin starts with curIdx 0, so row 0 is used twice in a row), key 6 row 0, "
            "key 7 row 1. currentNbRecord keeps counting: 5.", "spec": "§3.3",
            "kind": "hudi-bloom", "type_code": "DYNAMIC_V0", "num_entries": n, "fpp": fpp,
            "max_entries": max_entries, "num_bits": m, "num_hashes": k, "keys": keys,
            "rows": rows, "current_nb_record": current,
            "base64": base64.b64encode(h.data()).decode("ascii"),
            "provenance": "growth rule from Java source (facts §8); multi-row filters are "
            "not in any Hudi-written fixture"}, h


# the Avro carrier: a whole log file with one indexed block

AVRO_SCHEMA = ('{"type":"record","name":"r","fields":'
               '[{"name":"_hoodie_record_key","type":"string"}]}')
AVRO_RECORD_KEYS = ["k2", "k1", "k10"]  # record order; KEYS holds them sorted
AVRO_INSTANT = "20250102000000001"


def _avro_carrier_block(file_hex: Hex, *, checksum: bool = False,
                        damage: tuple[str, str] | None = None) -> dict[str, Any]:
    """Appends the indexed Avro block at offset 0 of ``file_hex``; returns its facts.
    ``checksum``: the trailer ends with a CHECKSUM section (§4.12); ``damage``: (old, new)
    record key written in place of ``old`` after the checksum was taken (same length)."""
    header = [(0, AVRO_INSTANT), (2, AVRO_SCHEMA)]
    hmap_len = 4 + sum(8 + len(v.encode()) for _, v in header)
    content_offset = 30 + hmap_len

    def records(keys: list[str]) -> Hex:
        prefix = Hex([])
        prefix.add(struct.pack(">i", 3), "content version 3 (big-endian, format §5.1)")
        prefix.add(struct.pack(">i", 3), "record count 3")
        for key in keys:
            rec = avro_string(key)
            prefix.add(struct.pack(">i", len(rec)), f"record length {len(rec)}")
            prefix.add(rec, f"record: _hoodie_record_key = {key!r} (Avro string)")
        return prefix

    prefix = records(AVRO_RECORD_KEYS)
    trailer_offset = content_offset + len(prefix.data())
    keys = sorted(AVRO_RECORD_KEYS, key=str.encode)
    region = _region(keys, keys[0], keys[-1])
    filter_part = region[0][1].data() + region[1][1].data()
    keys_part = region[2][1].data()

    def build(block_size: int, check: Hex | None) -> tuple[Hex, int]:
        ref = Ref(0, 1, 0, block_size, trailer_offset, len(filter_part),
                  zlib.crc32(filter_part), len(keys_part), zlib.crc32(keys_part), 3,
                  AVRO_INSTANT, keys[0], keys[-1])
        n = sbbf_num_blocks(len(keys))
        cum = cumulative_section(FULL, BASE_INSTANT, 1, 3, keys[0], keys[-1], keys, n)
        secs = region + [(CUMULATIVE, cum), (DIRECTORY, directory_section([LOG_1], [ref]))]
        if check is not None:
            secs.append((CHECKSUM, check))
        h, _, length = trailer(secs)
        return h, length

    placeholder = checksum_section(0, 0) if checksum else None
    t, length = build(0, placeholder)
    size = 38 + hmap_len + len(prefix.data()) + length + 4  # S = 38 + H + C + F (format §2.4)
    facts: dict[str, Any] = {}
    check = None
    if checksum:  # the head's content length is known once the trailer's length is
        head = block_head(3, header, len(prefix.data()) + length)
        covered = head + prefix.data()
        crc = zlib.crc32(covered)
        check = checksum_section(len(covered), crc)
        facts["checksum"] = {"algorithm": CHECKSUM_CRC32, "covered_from": 14,
                             "covered_to": trailer_offset, "covered_length": len(covered),
                             "crc32": crc}
    t, length2 = build(size, check)
    assert length2 == length  # fixed-width fields: the size does not change (§6.6)
    content = Hex([])
    if damage is not None:
        prefix = records([damage[1] if k == damage[0] else k for k in AVRO_RECORD_KEYS])
        content.note(f"damaged after the checksum was taken: record {damage[0]!r} now reads "
                     f"{damage[1]!r} (one byte)")
    content.extend(prefix)
    content.note(f"index trailer ({length} bytes) at file offset {trailer_offset}")
    content.extend(t)
    got = framed_block(file_hex, 3, header, content, "AVRO_DATA")
    assert got == size
    return {"offset": 0, "size": size, "content_offset": content_offset,
            "trailer_offset": trailer_offset, "trailer_length": length,
            "region": {"offset": trailer_offset, "filter_length": len(filter_part),
                       "filter_crc32": zlib.crc32(filter_part), "keys_length": len(keys_part),
                       "keys_crc32": zlib.crc32(keys_part)},
            "record_keys": AVRO_RECORD_KEYS, "keys": keys,
            "cumulative": {"kind": "FULL", "scope": BASE_INSTANT, "blocks": 1, "keys": 3,
                           "min_key": keys[0], "max_key": keys[-1]},
            "directory_files": [LOG_1], **facts}


@case("avro-carrier-block")
def _avro_carrier() -> Case:
    h = Hex(["A log file holding one indexed Avro data block (spec/index.md §5.1): content",
             "version 3, record count, records, then the index trailer, ending right before",
             "the empty footer map and the reverse pointer. Written by regenerate.py."])
    facts = _avro_carrier_block(h)
    return {"description": "One Avro data block with an index trailer (KEYS codec 0, BLOOM, "
            "RANGE, CUMULATIVE FULL, DIRECTORY listing the block itself). A stock reader "
            "reads exactly the 3 records; the tail locator finds the trailer from the end of "
            "the file.", "spec": "§5.1", "kind": "avro-carrier", "file_name": LOG_1,
            "key_field": "_hoodie_record_key", "block": facts, "tail_block_offset": 0}, h


@case("avro-carrier-then-rollback")
def _avro_carrier_rollback() -> Case:
    h = Hex(["The file of avro-carrier-block followed by a 105-byte ROLLBACK command block",
             "(format §3.4): the tail locator walks back over it to the data block",
             "(spec/index.md §7.1). Written by regenerate.py."])
    facts = _avro_carrier_block(h)
    h.note("a ROLLBACK command block (format §3.4)")
    empty = Hex([])
    framed_block(h, 0, [(0, "20250103000000000"), (1, AVRO_INSTANT), (3, "0")], empty,
                 "COMMAND")
    return {"description": "An indexed Avro block, then a rollback command block. Deletes "
            "and rollbacks never narrow the index, so the locator skips them and uses the "
            "data block's trailer.", "spec": "§7.1", "kind": "avro-carrier",
            "file_name": LOG_1, "key_field": "_hoodie_record_key", "block": facts,
            "tail_block_offset": 0}, h


@case("avro-carrier-block-checksum")
def _avro_carrier_checksum() -> Case:
    h = Hex(["The block of avro-carrier-block as morlog writes it since §4.12: its trailer",
             "ends with a CHECKSUM section, the CRC-32 of the block's bytes from the log",
             "format version field through the last record. Written by regenerate.py."])
    facts = _avro_carrier_block(h, checksum=True)
    return {"description": "An indexed Avro block whose trailer carries a CHECKSUM (§4.12) "
            "that matches: readers verify it and read the 3 records.", "spec": "§4.12",
            "kind": "avro-carrier", "file_name": LOG_1, "key_field": "_hoodie_record_key",
            "block": facts, "tail_block_offset": 0, "verified": True}, h


@case("avro-carrier-block-checksum-mismatch")
def _avro_carrier_checksum_bad() -> Case:
    h = Hex(["avro-carrier-block-checksum with one record byte changed after the checksum",
             "was taken: record 'k2' reads 'k3'. The framing, the records and the trailer",
             "all decode; only the CHECKSUM tells. Written by regenerate.py."])
    facts = _avro_carrier_block(h, checksum=True, damage=("k2", "k3"))
    return {"description": "A damaged record that still decodes (a different key): the "
            "CHECKSUM does not match, so a reader reports ChecksumError where it decodes the "
            "records and a snapshot skips the block as corrupt (§4.12).", "spec": "§4.12",
            "kind": "checksum-mismatch", "file_name": LOG_1,
            "key_field": "_hoodie_record_key", "block": facts,
            "damaged_record_keys": ["k3", "k1", "k10"],
            "expect_error": {"type": "ChecksumError", "offset": facts["content_offset"]}}, h


# the base-key index (§12): a file of its own beside each base file

BK_MAGIC = b"MBKI"
BK_MAX_NAME = 4096
BK_FILE = "3c2e1f40-8e3b-4a51-9d5e-2f7b1c0a9e11-0_0-12-34_20250101000000000.parquet"
BK_SIZE = 434_567
BK_CODECS = {0: "payload stored as is", 1: "zstd"}


def bk_order(keys: list[bytes]) -> list[bytes]:
    """Stored order (§12.2): by XXH64 of the UTF-8 bytes, then by the bytes (unsigned)."""
    return sorted(keys, key=lambda k: (xxhash.xxh64_intdigest(k, seed=0), k))


@dataclass
class BK:
    """The fields of one base-key index; None: the value §12.2 prescribes for the keys."""

    keys: list[bytes]
    name: bytes = BK_FILE.encode("utf-8")
    base_size: int = BK_SIZE
    magic: bytes = BK_MAGIC
    version: int = 1
    codec: int = 0
    flags: int = 0
    count: int | None = None
    raw_length: int | None = None
    stored_length: int | None = None
    crc32: Callable[[int], int] | None = None
    fingerprints: list[int] | None = None
    offsets: list[int] | None = None
    #: a stored payload given as is (codec 1 cases), replacing the three arrays
    payload: bytes | None = None
    #: codec 1 written by hand: the payload in one zstd frame of one raw block (RFC 8878)
    zstd_frame: bool = False
    notes: dict[str, str] = field(default_factory=dict)


def bk_hex(f: BK) -> Hex:
    keys = f.keys
    fps = ([xxhash.xxh64_intdigest(k, seed=0) for k in keys] if f.fingerprints is None
           else f.fingerprints)
    offsets = [0]
    for k in keys:
        offsets.append(offsets[-1] + len(k))
    offsets = offsets if f.offsets is None else f.offsets
    body = Hex([])
    if f.payload is None:
        for i, (k, fp) in enumerate(zip(keys, fps, strict=True)):
            body.add(u64(fp), f"fingerprint[{i}] = 0x{fp:016x}" + f.notes.get(
                f"fp{i}", f" = XXH64({_bk_key(k)})"))
        for i, o in enumerate(offsets):
            body.add(u32(o), f"offset[{i}] = {o}" + f.notes.get(f"off{i}", ""))
        for i, k in enumerate(keys):
            body.add(k, f"key {i}: {_bk_key(k)}")
        if not keys:
            body.add(b"", "key bytes")
    else:
        body.add(f.payload, f.notes.get("payload", "stored payload"))
    raw = body.data()
    if f.zstd_frame:
        body = zstd_raw_frame(body)
    stored = body.data()
    n = len(keys) if f.count is None else f.count
    raw_len = len(raw) if f.raw_length is None else f.raw_length
    stored_len = len(stored) if f.stored_length is None else f.stored_length
    crc = zlib.crc32(stored)
    crc = crc if f.crc32 is None else f.crc32(crc)
    h = Hex([])
    h.add(f.magic, f"magic {f.magic.decode('ascii', 'replace')!r}" + f.notes.get("magic", ""))
    h.add(u8(f.version), f"version {f.version}" + f.notes.get("version", ""))
    h.add(u8(f.codec), f"codec {f.codec}" + (f" = {BK_CODECS[f.codec]}" if f.codec in BK_CODECS
                                             else ": unknown"))
    h.add(u16(f.flags), f"flags 0x{f.flags:04x}" + f.notes.get("flags", ""))
    h.add(u64(f.base_size), f"base_size = {f.base_size} (bytes of the base file)")
    h.add(u32(n), f"count n = {n}" + f.notes.get("count", ""))
    h.add(u32(len(f.name)), f"name_length = {len(f.name)}" + f.notes.get("name_length", ""))
    shown = f.name if len(f.name) <= 80 else f.name[:20] + b"..." + f.name[-20:]
    h.add(f.name, f"name {shown.decode('utf-8', 'backslashreplace')!r}"
          + f.notes.get("name", " (UTF-8)"))
    fixed = 12 * n + 4
    h.add(u64(raw_len), f"raw_length = {raw_len}" + f.notes.get(
        "raw_length", f" = 12 * n + 4 + {raw_len - fixed} key bytes"))
    h.add(u64(stored_len), f"stored_length = {stored_len}" + f.notes.get(
        "stored_length", " (the bytes left)"))
    h.add(u32(crc), f"crc32 = 0x{crc:08x}" + f.notes.get("crc32", " (zlib CRC-32 of the "
                                                                  "stored payload)"))
    h.note("payload: n x u64 fingerprint | (n + 1) x u32 offset | key bytes"
           + (", in a zstd frame" if f.zstd_frame else ""))
    h.extend(body)
    return h


def zstd_raw_frame(content: Hex) -> Hex:
    """``content`` as one zstd frame (RFC 8878 §3.1.1) holding one raw (uncompressed)
    block: any zstd decoder gives ``content`` back, and no compressor is involved."""
    data = content.data()
    assert len(data) < 256, "a one-byte frame content size"
    h = Hex([])
    h.add(u32(0xFD2FB528), "zstd frame: magic 0xFD2FB528")
    h.add(u8(0x20), "zstd frame header descriptor 0x20: single segment, 1-byte content "
          "size, no checksum, no dictionary")
    h.add(u8(len(data)), f"zstd frame content size = {len(data)}")
    h.add((len(data) << 3 | 1).to_bytes(3, "little"), f"zstd block header: last block, raw, "
          f"size {len(data)}")
    h.extend(content)
    return h


def _bk_key(k: bytes) -> str:
    try:
        return repr(k.decode("utf-8"))
    except UnicodeDecodeError:
        return f"bytes {k.hex()} (not UTF-8)"


def bk_cut(h: Hex, keep: int, title: list[str]) -> Hex:
    """The first ``keep`` bytes of ``h``, its rows' comments kept."""
    out = Hex(title)
    left = keep
    for data, comment in h.rows:
        if data is None:
            continue
        if left <= 0:
            break
        part = data[:left]
        out.add(part, comment if len(part) == len(data)
                else f"{comment} -- cut off after {len(part)} of {len(data)} bytes")
        left -= len(part)
    return out


def _bk_title(what: str) -> list[str]:
    return [f"Base-key index: {what} (spec/index.md §12.2).",
            "Little-endian integers. Written field by field by regenerate.py from the spec "
            "(xxhash package, zlib.crc32), not by morlog."]


def _bk_case(name: str, description: str, keys: list[str], unsorted: list[str],
             absent: list[str], *, codec: int = 0) -> Case:
    raws = bk_order([k.encode("utf-8") for k in keys])
    h = bk_hex(BK(raws, codec=codec, zstd_frame=codec == 1))
    h.title = _bk_title(name)
    stored = [r.decode("utf-8") for r in raws]
    assert sorted(stored) == sorted(unsorted)
    return {"description": description, "spec": "§12.2", "kind": "base-keys", "codec": codec,
            "base_file": BK_FILE, "base_size": BK_SIZE, "keys": stored,
            "fingerprints": [f"{xxhash.xxh64_intdigest(r, seed=0):016x}" for r in raws],
            "unsorted": unsorted, "absent": absent}, h


@case("base-keys-three-ascii")
def _bk_ascii() -> Case:
    keys = ["k1", "k10", "k2"]
    return _bk_case("three ASCII keys", "The base-key index of a base file holding k1, k10 "
                    "and k2, codec 0: keys in XXH64 order (not byte order), offsets into the "
                    "key bytes.", keys, ["k1", "k2", "k10"], ["k3", "k", "k100", ""])


@case("base-keys-utf8-and-duplicates")
def _bk_utf8() -> Case:
    keys = ["a", "\uff21", "\U0001f600", "Zürich-😀", "", "a"]
    return _bk_case("non-ASCII keys, an empty key, a duplicate", "Keys with 2-, 3- and "
                    "4-byte UTF-8 sequences (U+00FC, U+FF21, U+1F600 beyond the BMP), the "
                    "empty key (offsets equal) and 'a' twice: a base file holding a key twice "
                    "lists it twice, next to each other (equal fingerprint, equal bytes).",
                    keys, ["\U0001f600", "a", "", "Zürich-😀", "a", "\uff21"],
                    ["A", "\uff41", "Zurich-😀", "\U0001f601", "aa"])


@case("base-keys-empty")
def _bk_empty() -> Case:
    return _bk_case("no keys", "The index of a base file without records: n = 0, one offset "
                    "(0), no key bytes; raw_length 4.", [], [], ["k1", ""])


@case("base-keys-zstd-raw-block")
def _bk_zstd() -> Case:
    keys = ["k1", "k10", "k2"]
    return _bk_case("codec 1, a zstd frame written by hand", "The index of "
                    "base-keys-three-ascii with codec 1: the payload is one zstd frame "
                    "holding one raw block (RFC 8878), so the bytes do not depend on a "
                    "compressor. A reader decodes it to the same keys; a writer's zstd bytes "
                    "differ (it compresses), so only decoding is pinned.", keys,
                    ["k1", "k2", "k10"], ["k3"], codec=1)


KEYS3_B = bk_order([b"k1", b"k10", b"k2"])
BK_LENGTHS_AT = 24 + len(BK_FILE)  # offset of raw_length: header (24 bytes) + name
BK_PAYLOAD_AT = BK_LENGTHS_AT + 20


def _bk_error(name: str, description: str, f: BK, error: str, offset: int | None,
              *, cut: int | None = None) -> Case:
    h = bk_hex(f)
    title = _bk_title(f"{name}, an error")
    if cut is not None:
        h = bk_cut(h, cut, title + [f"The first {cut} bytes of an index."])
    h.title = title if cut is None else h.title
    return {"description": description, "spec": "§12.2", "kind": "base-keys-error",
            "expect_error": {"type": error, "offset": offset}}, h


@case("base-keys-error-bad-magic")
def _bke_magic() -> Case:
    return _bk_error("bad magic", "Magic 'MBKX' instead of 'MBKI': not a base-key index. "
                     "ContentError at offset 0.",
                     BK(KEYS3_B, magic=b"MBKX", notes={"magic": ": not MBKI"}), "ContentError",
                     0)


@case("base-keys-error-version-2")
def _bke_version() -> Case:
    return _bk_error("version 2", "Version 2, unknown to a version-1 reader; everything else "
                     "valid. ContentError at the version byte (4).",
                     BK(KEYS3_B, version=2, notes={"version": ": unknown"}), "ContentError", 4)


@case("base-keys-error-unknown-codec")
def _bke_codec() -> Case:
    return _bk_error("codec 2", "Codec 2 (known: 0 none, 1 zstd). ContentError at the codec "
                     "byte (5).", BK(KEYS3_B, codec=2), "ContentError", 5)


@case("base-keys-error-flags-set")
def _bke_flags() -> Case:
    return _bk_error("flags set", "Flags 0x0001: version 1 defines no flag, a reader refuses "
                     "any. ContentError at offset 5 (codec and flags are checked together).",
                     BK(KEYS3_B, flags=1, notes={"flags": ": must be 0"}), "ContentError", 5)


@case("base-keys-error-name-too-long")
def _bke_name_long() -> Case:
    name = ("n" * (BK_MAX_NAME + 1 - len(".parquet")) + ".parquet").encode("ascii")
    return _bk_error("name of 4097 bytes", "A name of 4097 bytes, one over the limit (the "
                     "whole index follows, valid otherwise). LengthError at the name_length "
                     "field (20).", BK([b"k1"], name=name, notes={"name_length": ": over 4096"}),
                     "LengthError", 20)


@case("base-keys-error-name-not-utf8")
def _bke_name_utf8() -> Case:
    name = b"\xff" + BK_FILE.encode("ascii")[1:]
    return _bk_error("name not UTF-8", "The name's first byte is 0xff, never in UTF-8. "
                     "ContentError at the name (24).",
                     BK(KEYS3_B, name=name, notes={"name": ": byte 0xff is not UTF-8"}),
                     "ContentError", 24)


@case("base-keys-error-stored-length")
def _bke_stored() -> Case:
    f = BK(KEYS3_B)
    stored = len(bk_hex(f).data()) - BK_PAYLOAD_AT
    return _bk_error("stored_length past the file", f"stored_length says {stored + 1} bytes, "
                     f"{stored} follow (the file was cut or the field is damaged). LengthError "
                     f"at raw_length ({BK_LENGTHS_AT}).",
                     BK(KEYS3_B, stored_length=stored + 1,
                        notes={"stored_length": f": {stored} bytes follow"}),
                     "LengthError", BK_LENGTHS_AT)


@case("base-keys-error-raw-length-below-arrays")
def _bke_raw_small() -> Case:
    return _bk_error("raw_length below 12 n + 4", "count says 4 keys, the payload (raw_length "
                     "= stored_length = 47) holds the arrays of 3: below 12 * 4 + 4 = 52. "
                     f"LengthError at raw_length ({BK_LENGTHS_AT}).",
                     BK(KEYS3_B, count=4, notes={"count": ": the payload holds 3 keys",
                                                 "raw_length": ": below 12 * 4 + 4 = 52"}),
                     "LengthError", BK_LENGTHS_AT)


@case("base-keys-error-raw-length-not-stored-length")
def _bke_raw_other() -> Case:
    return _bk_error("codec 0, raw_length differs", "Codec 0 with raw_length 48 and "
                     "stored_length 47: a payload stored as is has one length. LengthError at "
                     f"raw_length ({BK_LENGTHS_AT}).",
                     BK(KEYS3_B, raw_length=48, notes={"raw_length": ": not stored_length"}),
                     "LengthError", BK_LENGTHS_AT)


@case("base-keys-error-zstd-raw-length-too-large")
def _bke_zstd_big() -> Case:
    payload = bytes.fromhex("28b52ffd") + b"twelve bytes"
    raw = (1 << 20) + 1
    return _bk_error("codec 1, raw_length beyond the payload", f"Codec 1, a 16-byte payload "
                     f"claiming raw_length {raw}: above 64 times stored_length and above "
                     "1 MiB, so no reader allocates it. LengthError at raw_length "
                     f"({BK_LENGTHS_AT}).",
                     BK([b"k1"], codec=1, raw_length=raw, payload=payload,
                        notes={"raw_length": ": over max(64 * 16, 2^20)",
                               "payload": "zstd magic, then 12 bytes"}),
                     "LengthError", BK_LENGTHS_AT)


@case("base-keys-error-zstd-not-a-frame")
def _bke_zstd_bad() -> Case:
    payload = b"not a zstd frame"
    return _bk_error("codec 1, payload not zstd", "Codec 1 with a payload that is not a zstd "
                     "frame (CRC valid): it does not decompress. ContentError at the payload "
                     f"({BK_PAYLOAD_AT}).",
                     BK([b"k1"], codec=1, raw_length=24, payload=payload,
                        notes={"raw_length": ": 12 * 1 + 4 + 8", "payload": "ASCII "
                               "'not a zstd frame'"}),
                     "ContentError", BK_PAYLOAD_AT)


@case("base-keys-error-zstd-short")
def _bke_zstd_short() -> Case:
    return _bk_error("codec 1, payload shorter than raw_length", "Codec 1: the zstd frame "
                     "(one raw block, as in base-keys-zstd-raw-block) holds the 47 payload "
                     "bytes of three keys, raw_length says 55. ContentError at the payload "
                     f"({BK_PAYLOAD_AT}): the payload does not decompress to raw_length bytes.",
                     BK(KEYS3_B, codec=1, zstd_frame=True, raw_length=55,
                        notes={"raw_length": ": the frame holds 47"}),
                     "ContentError", BK_PAYLOAD_AT)


@case("base-keys-error-raw-length-2-gib")
def _bke_raw_huge() -> Case:
    raw = 12 * 3 + 4 + 2**31
    return _bk_error("raw_length 2 GiB past the arrays", f"Codec 1 with raw_length {raw} = "
                     "12 n + 4 + 2^31 (n = 3): key bytes of 2 GiB or more cannot be addressed "
                     "by u32 offsets. LengthError at raw_length "
                     f"({BK_LENGTHS_AT}).",
                     BK(KEYS3_B, codec=1, zstd_frame=True, raw_length=raw,
                        notes={"raw_length": ": 12 n + 4 + 2^31"}),
                     "LengthError", BK_LENGTHS_AT)


@case("base-keys-error-crc")
def _bke_crc() -> Case:
    return _bk_error("CRC mismatch", "crc32 is the payload's CRC XOR 0xffffffff. "
                     f"ChecksumError at the payload ({BK_PAYLOAD_AT}).",
                     BK(KEYS3_B, crc32=lambda c: c ^ 0xFFFFFFFF,
                        notes={"crc32": ": wrong (the payload's XOR 0xffffffff)"}),
                     "ChecksumError", BK_PAYLOAD_AT)


def _bk_offsets(offsets: list[int], what: str, description: str, name: str) -> Case:
    good = _key_offsets(KEYS3_B)
    notes = {f"off{i}": f": {what}" for i, o in enumerate(offsets) if o != good[i]}
    return _bk_error(name, description + f" ContentError at the payload ({BK_PAYLOAD_AT}).",
                     BK(KEYS3_B, offsets=offsets, notes=notes), "ContentError", BK_PAYLOAD_AT)


def _key_offsets(keys: list[bytes]) -> list[int]:
    out = [0]
    for k in keys:
        out.append(out[-1] + len(k))
    return out


@case("base-keys-error-offsets-not-from-0")
def _bke_off0() -> Case:
    good = _key_offsets(KEYS3_B)
    return _bk_offsets([1] + good[1:], "not 0", "offset[0] = 1 (the others valid).",
                       "offsets not starting at 0")


@case("base-keys-error-offsets-decreasing")
def _bke_offdec() -> Case:
    good = _key_offsets(KEYS3_B)
    bad = [good[0], good[2], good[1], good[3]]
    assert bad[1] > bad[2]
    return _bk_offsets(bad, "swapped", f"offset[1] = {bad[1]} > offset[2] = {bad[2]} "
                       "(first and last valid).", "decreasing offsets")


@case("base-keys-error-offsets-end")
def _bke_offend() -> Case:
    good = _key_offsets(KEYS3_B)
    return _bk_offsets(good[:-1] + [good[-1] - 1], "not the key bytes' length",
                       f"offset[3] = {good[-1] - 1} while {good[-1]} key bytes follow.",
                       "last offset short of the key bytes")


@case("base-keys-error-fingerprints-out-of-order")
def _bke_fp() -> Case:
    keys = list(reversed(KEYS3_B))
    notes = {f"fp{i}": f" = XXH64({_bk_key(k)}), descending" for i, k in enumerate(keys)}
    return _bk_error("fingerprints descending", "The three keys listed in descending "
                     "fingerprint order (offsets and key bytes consistent with it). "
                     f"ContentError at the payload ({BK_PAYLOAD_AT}).",
                     BK(keys, notes=notes), "ContentError", BK_PAYLOAD_AT)


@case("base-keys-error-key-not-utf8")
def _bke_key() -> Case:
    keys = bk_order([b"k1", b"k\xff"])
    return _bk_error("a key not UTF-8", "The key bytes 6b ff (0xff never occurs in UTF-8), "
                     "its fingerprint XXH64 of those bytes, in order. ContentError at the "
                     f"payload ({BK_PAYLOAD_AT}).", BK(keys), "ContentError", BK_PAYLOAD_AT)


@case("base-keys-error-header-cut-off")
def _bke_cut() -> Case:
    return _bk_error("header cut off", "Only the first 20 bytes of a valid index: fewer "
                     "than the 24-byte header. TruncatedError at offset 0.", BK(KEYS3_B),
                     "TruncatedError", 0, cut=20)


@case("base-keys-error-lengths-cut-off")
def _bke_cut2() -> Case:
    return _bk_error("lengths cut off", "The header and the name, then 10 of the 20 bytes of "
                     "raw_length, stored_length and crc32. TruncatedError at offset 24 (the "
                     "end of the fixed header).", BK(KEYS3_B), "TruncatedError", 24,
                     cut=BK_LENGTHS_AT + 10)


# --- driver -----------------------------------------------------------------------------


def build_all() -> dict[str, dict[str, str]]:
    """case name -> {file name -> text}."""
    out: dict[str, dict[str, str]] = {}
    for name, fn in CASES.items():
        cj, h = fn()
        files = {"case.json": json.dumps(cj, indent=2, ensure_ascii=False) + "\n"}
        if h is not None:
            files["input.hex"] = h.render()
        out[name] = files
    minimal = CASES["trailer-bloom-range-keys"]()[0]
    assert minimal["length"] == _VALID_LEN, minimal["length"]
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    built = build_all()
    differ = []
    for name, files in built.items():
        d = HERE / name
        for fname, text in files.items():
            p = d / fname
            if check:
                if not p.exists() or p.read_text(encoding="utf-8") != text:
                    differ.append(str(p.relative_to(HERE)))
            else:
                d.mkdir(exist_ok=True)
                p.write_text(text, encoding="utf-8")
    stale = sorted(p.parent.name for p in HERE.glob("*/case.json") if p.parent.name not in built)
    if check:
        for item in differ + [f"{s}/ (no longer generated)" for s in stale]:
            print(f"differs: {item}")
        return 1 if differ or stale else 0
    print(f"wrote {len(built)} cases under {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
