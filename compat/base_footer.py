"""Hudi's index in base Parquet files' footers (facts §9): bloom filter and min/max key.

Pure: :func:`parse_base_footer` takes the Parquet key/value metadata
(``pyarrow.parquet.read_metadata(...).metadata``) and returns what Hudi stored there;
:func:`encode_base_footer` makes that metadata for a base file's record keys (as Hudi's
writers do: a DYNAMIC_V0 bloom filter, min and max key). ``morlog.readers`` fetches footers,
``morlog.writers.client`` and ``morlog.bench.tag`` write them; this only encodes and interprets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from morlog.logformat.errors import ContentError, UsageError
from morlog.logformat.hudi_bloom import (
    DEFAULT_NUM_ENTRIES,
    DynamicBloomV0,
    HudiBloom,
    parse_hudi_bloom,
)

BLOOM_KEY = b"org.apache.hudi.bloomfilter"
LEGACY_BLOOM_KEY = b"com.uber.hoodie.bloomfilter"
TYPE_CODE_KEY = b"hoodie_bloom_filter_type_code"
MIN_KEY = b"hoodie_min_record_key"
MAX_KEY = b"hoodie_max_record_key"


@dataclass
class BaseFileIndex:
    """What a Hudi base file's footer says about its keys (any part may be missing)."""

    bloom: HudiBloom | None
    type_code: str | None
    min_key: str | None
    max_key: str | None

    def may_contain_range(self, key: str) -> bool:
        """False only when the stored min/max rule ``key`` out under both orders Hudi's
        writers use: Java String order (UTF-16 code units, Avro writer) and byte order
        (Spark row writer). They agree unless keys hold characters beyond U+FFFF."""
        return _inside(key, self.min_key, self.max_key, "utf-8") or _inside(
            key, self.min_key, self.max_key, "utf-16-be")


def _inside(key: str, lo: str | None, hi: str | None, codec: str) -> bool:
    k = key.encode(codec, "surrogatepass")
    if lo is not None and k < lo.encode(codec, "surrogatepass"):
        return False
    return not (hi is not None and k > hi.encode(codec, "surrogatepass"))


def _text(md: Mapping[bytes, bytes], key: bytes) -> str | None:
    raw = md.get(key)
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ContentError(f"footer value of {key.decode()} is not UTF-8") from None


def parse_base_footer(md: Mapping[bytes, bytes] | None) -> BaseFileIndex:
    """Interpret a base file's key/value metadata (absent keys give None fields)."""
    md = md or {}
    text = _text(md, BLOOM_KEY) or _text(md, LEGACY_BLOOM_KEY)
    type_code = _text(md, TYPE_CODE_KEY)
    bloom = parse_hudi_bloom(text, type_code) if text else None
    return BaseFileIndex(bloom, type_code or ("SIMPLE" if bloom is not None else None),
                         _text(md, MIN_KEY), _text(md, MAX_KEY))


def encode_base_footer(keys: pa.Array | pa.ChunkedArray,
                       num_entries: int = DEFAULT_NUM_ENTRIES) -> dict[bytes, bytes]:
    """The key/value metadata Hudi keeps in a base file's footer for its record ``keys``: a
    DYNAMIC_V0 bloom filter of ``num_entries`` entries and the min/max key (byte order, which
    is Java's order too unless a key holds a character beyond U+FFFF). No key (an empty
    base file, e.g. a compacted slice whose records were all deleted): the empty filter
    and no min/max key, as ``HoodieAvroWriteSupport.finalizeWrite`` leaves it."""
    arr = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    arr = arr.cast(pa.string())
    if arr.null_count:
        raise UsageError("a base file footer needs keys that are not null")
    bloom = DynamicBloomV0(num_entries)
    if len(arr) == 0:
        return {BLOOM_KEY: bloom.to_base64().encode(), TYPE_CODE_KEY: b"DYNAMIC_V0"}
    bloom.add(arr)
    # one linear pass in byte order (no sort): the keys' UTF-8 bytes as Hudi stores them
    bounds = pc.min_max(arr.cast(pa.binary()))
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    return {BLOOM_KEY: bloom.to_base64().encode(), TYPE_CODE_KEY: b"DYNAMIC_V0",
            MIN_KEY: lo, MAX_KEY: hi}
