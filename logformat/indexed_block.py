"""Building indexed data blocks: the two carriers of one logical index (spec/index.md §5).

- Avro carrier: content version 3 exactly as Hudi writes it, then the index trailer.
- Parquet carrier: records sorted by key in a whole Parquet file whose key/value metadata holds
  the same trailer, Base64-encoded, under ``morlog.index``; plus Hudi's own
  ``hoodie_min_record_key`` / ``hoodie_max_record_key`` (plain strings, Hudi's exact format).

Blocks are built in two steps because the trailer lists the block's own position in the file:
:func:`prepare_avro` (:func:`prepare_avro_arrow` from Arrow) / :func:`prepare_parquet` encode
the records and the per-block index sections, then :meth:`PreparedBlock.finish` adds the
cumulative and directory sections once the block's offset is known, and returns the frame.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .avro_columnar import encode_arrow_to_records
from .avro_content import encode_avro_content, encode_records
from .avroschema import arrow_to_avro_schema, avro_to_arrow_schema
from .block_checksum import avro_checksum, parquet_checksum
from .blocks import FAST_PATH_MISSES, arrow_to_records, make_header, records_to_arrow
from .column_stats_section import StatsColumns, compute_column_stats
from .constants import BLOCK_PREFIX_LEN, CURRENT_CONTENT_VERSION, BlockType, HeaderKey
from .errors import MorlogError, UsageError
from .framing import BlockFrame, block_head, encode_map
from .index_trailer import (
    BLOCK_CHECKSUM,
    CHECKSUM_CRC32,
    ENTRY_LEN,
    PARQUET_KEY,
    TAIL_LEN,
    BlockChecksum,
    Cumulative,
    Directory,
    KeyRange,
    Section,
    encode_bloom,
    encode_keys,
    encode_trailer,
    sorted_unique_keys,
)
from .keybatch import KeyBatch
from .parquet_content import DEFAULT_COMPRESSION, encode_parquet_content
from .sbbf import DEFAULT_FPP, SplitBlockBloom
from .xxh64 import U64, xxh64_batch

HUDI_MIN_KEY = "hoodie_min_record_key"
HUDI_MAX_KEY = "hoodie_max_record_key"


class BlockKeys:
    """The per-block half of the index: sorted unique keys, their hashes, filter and range.

    ``hashes`` (XXH64 of the keys) are computed on first use: writers need them to build
    cumulative filters, probes never do.
    """

    def __init__(self, keys: pa.Array, hashes: U64 | None, bloom: SplitBlockBloom,
                 range: KeyRange) -> None:
        self.keys = keys
        self._hashes = hashes
        self.bloom = bloom
        self.range = range
        self._sections: list[tuple[int, bytes]] | None = None

    @property
    def hashes(self) -> U64:
        if self._hashes is None:
            self._hashes = xxh64_batch(KeyBatch.of(self.keys))
        return self._hashes

    @classmethod
    def of(cls, keys: pa.Array | Sequence[str], fpp: float = DEFAULT_FPP) -> BlockKeys:
        sk = sorted_unique_keys(keys if isinstance(keys, pa.Array) else pa.array(
            list(keys), type=pa.string()))
        if len(sk) == 0:
            raise UsageError("an indexed data block needs at least one record")
        hashes = xxh64_batch(KeyBatch.of(sk))
        bloom = SplitBlockBloom.for_hashes(hashes, fpp)
        return cls(sk, hashes, bloom, KeyRange(len(sk), sk[0].as_py(), sk[-1].as_py()))

    def sections(self) -> list[tuple[int, bytes]]:
        """BLOOM, RANGE (the "filter part"), then KEYS: the block's region. A probe reads
        the filter part alone, and the key list only when the filter says maybe."""
        if self._sections is None:
            self._sections = [(Section.BLOOM, encode_bloom(self.bloom)),
                              (Section.RANGE, self.range.encode()),
                              (Section.KEYS, encode_keys(self.keys))]
        return self._sections

    def filter_part(self) -> bytes:
        return b"".join(body for sid, body in self.sections() if sid != Section.KEYS)

    def keys_part(self) -> bytes:
        return b"".join(body for sid, body in self.sections() if sid == Section.KEYS)


#: given the absolute offsets of the region and of the [CUMULATIVE, DIRECTORY] part, return
#: those two sections (the writer's cumulative state decides what goes in them)
CumulativeFn = Callable[["Placement"], tuple[Cumulative, Directory]]


@dataclass(frozen=True)
class Placement:
    """Where a block's index sections land in the log file (absolute offsets)."""

    block_offset: int
    block_size: int
    region_offset: int
    region_length: int
    #: offset and length of the [CUMULATIVE, DIRECTORY] sections
    probe_offset: int
    probe_length: int
    #: length of the CUMULATIVE section (the first part of the probe sections)
    cumulative_length: int = 0


@dataclass
class PreparedBlock:
    block_type: BlockType
    instant: str
    header: Any  # MetadataMap
    #: content bytes before the trailer (Avro) or the Parquet table to write (Parquet)
    prefix: bytes
    table: pa.Table | None
    own: BlockKeys
    compression: str = DEFAULT_COMPRESSION
    #: the COLUMN_STATS section body (spec/index.md §4.11), None: the block carries none
    stats: bytes | None = None

    def _stats_sections(self) -> list[tuple[int, bytes]]:
        return [] if self.stats is None else [(Section.COLUMN_STATS, self.stats)]

    def finish(self, block_offset: int, cumulative: CumulativeFn
               ) -> tuple[BlockFrame, Placement, bytes]:
        """The frame, where its sections land, and the bytes of its [CUMULATIVE, DIRECTORY]
        sections. ``cumulative`` is called twice (the second time with the final offsets);
        it should cache what does not depend on them."""
        own = self.own.sections()
        region_len = sum(len(b) for _, b in own)
        # the cumulative sections have sizes that do not depend on the offsets (fixed-width
        # fields): learn them from a provisional placement first
        cum, directory = cumulative(Placement(block_offset, 0, 0, region_len, 0, 0))
        cum_len, dir_len = len(cum.encode()), len(directory.encode())
        if self.block_type == BlockType.AVRO_DATA:
            # every offset follows by arithmetic: build the block once
            content_offset = block_offset + BLOCK_PREFIX_LEN + 8 + len(
                encode_map(self.header)) + 8
            extra = self._stats_sections()
            trailer_len = (region_len + cum_len + dir_len + sum(len(b) for _, b in extra)
                           + BLOCK_CHECKSUM.size
                           + (len(own) + 3 + len(extra)) * ENTRY_LEN + TAIL_LEN)
            trailer_offset = content_offset + len(self.prefix)
            size = trailer_offset + trailer_len + 4 + 8 - block_offset
            placement = Placement(block_offset, size, trailer_offset, region_len,
                                  trailer_offset + region_len, cum_len + dir_len, cum_len)
            cum, directory = cumulative(placement)
            probe: list[tuple[int, bytes]] = [(Section.CUMULATIVE, cum.encode()),
                                              (Section.DIRECTORY, directory.encode())]
            # the checksum covers the head and the records, which the trailer's length
            # (fixed by now) is all it depends on: it is the last section written
            head = block_head(BlockType.AVRO_DATA, self.header, len(self.prefix) + trailer_len)
            check: list[tuple[int, bytes]] = [
                (Section.CHECKSUM, avro_checksum(head, self.prefix).encode())]
            frame = self._frame(encode_trailer(own + probe + extra + check))
            if len(frame.content) + content_offset - block_offset + 12 != size:
                raise UsageError("index section sizes changed with their offsets")
            return frame, placement, b"".join(body for _, body in probe)
        # Parquet carrier: the block's size is known only once the Parquet file is written.
        # The trailer's fields are fixed-width, so its Base64 text keeps its length when the
        # offsets change, and it sits verbatim (uncompressed) in the Parquet footer's
        # key/value metadata: write the file once, then patch the final trailer in place.
        # The CHECKSUM (last section, fixed size) is patched in the same way: it covers the
        # content with the Base64 text's bytes counted as zeros (spec/index.md §4.12).
        probe = [(Section.CUMULATIVE, cum.encode()), (Section.DIRECTORY, directory.encode())]
        unset: list[tuple[int, bytes]] = [
            (Section.CHECKSUM, BlockChecksum(CHECKSUM_CRC32, 0, 0).encode())]
        first = base64.b64encode(encode_trailer(own + probe + self._stats_sections() + unset))
        frame = self._frame_b64(first)
        placement = self._placement(block_offset, frame)
        cum, directory = cumulative(placement)
        probe = [(Section.CUMULATIVE, cum.encode()), (Section.DIRECTORY, directory.encode())]
        placed = base64.b64encode(encode_trailer(own + probe + self._stats_sections() + unset))
        if len(placed) != len(first) or frame.content.count(first) != 1:
            raise UsageError("index section sizes changed with their offsets")
        content = frame.content.replace(first, placed)
        head = block_head(BlockType.PARQUET_DATA, frame.header, len(content))
        patched: list[tuple[int, bytes]] = [
            (Section.CHECKSUM, parquet_checksum(head, content, placed).encode())]
        final = base64.b64encode(encode_trailer(own + probe + self._stats_sections() + patched))
        if len(final) != len(placed) or content.count(placed) != 1:
            raise UsageError("index section sizes changed with their offsets")
        frame = BlockFrame(frame.block_type, frame.header, content.replace(placed, final))
        return frame, placement, b"".join(body for _, body in probe)

    def _frame(self, trailer: bytes) -> BlockFrame:
        if self.block_type == BlockType.AVRO_DATA:
            return BlockFrame(int(BlockType.AVRO_DATA), self.header, self.prefix + trailer)
        return self._frame_b64(base64.b64encode(trailer))

    def _frame_b64(self, trailer_b64: bytes) -> BlockFrame:
        assert self.table is not None
        content = encode_parquet_content(
            self.table, compression=self.compression,
            key_value_metadata={PARQUET_KEY.decode(): trailer_b64.decode("ascii"),
                                HUDI_MIN_KEY: self.own.range.min_key,
                                HUDI_MAX_KEY: self.own.range.max_key})
        return BlockFrame(int(BlockType.PARQUET_DATA), self.header, content)

    def _placement(self, block_offset: int, frame: BlockFrame) -> Placement:
        """Parquet carrier: the sections sit Base64-encoded in the footer (no byte range)."""
        size = BLOCK_PREFIX_LEN + 8 + len(encode_map(frame.header)) + 8 + len(
            frame.content) + 4 + 8
        return Placement(block_offset, size, 0, 0, 0, 0, 0)


def avro_block_stats(table: pa.Table, schema_text: str,
                     columns: StatsColumns | None) -> bytes | None:
    """The COLUMN_STATS body of an Avro-carrier block holding ``table``'s rows: the
    columns ``columns`` selects from the block's schema, each cast to the type the block
    decodes to (``avro_to_arrow_schema``), so that statistics recomputed from the block
    equal them. None when no statistics are kept."""
    if columns is None:
        return None
    try:
        arrow = avro_to_arrow_schema(schema_text)
    except MorlogError:
        return None
    names = columns.select(arrow)
    types = {n: arrow.field(n).type for n in names}
    return compute_column_stats(table, names, types).encode()


def parquet_block_stats(table: pa.Table, columns: StatsColumns | None) -> bytes | None:
    """The COLUMN_STATS body of a Parquet-carrier block of ``table`` (its own types: the
    block decodes to the Parquet file itself)."""
    if columns is None:
        return None
    return compute_column_stats(table, columns.select(table.schema)).encode()


def prepare_avro(records: Sequence[dict[str, Any]], schema: str | dict[str, Any], instant: str,
                 *, key_field: str, fpp: float = DEFAULT_FPP,
                 extra_header: Mapping[HeaderKey, str] | None = None,
                 column_stats: StatsColumns | None = None) -> PreparedBlock:
    """``column_stats``: which columns get a COLUMN_STATS entry (None: no section)."""
    text = schema if isinstance(schema, str) else json.dumps(schema, separators=(",", ":"))
    try:
        keys = [r[key_field] for r in records]
    except KeyError:
        raise UsageError(f"records have no key field {key_field!r}") from None
    own = BlockKeys.of(keys, fpp)
    prefix = encode_avro_content(encode_records(records, text))
    header = make_header(instant, {HeaderKey.SCHEMA: text, **(extra_header or {})})
    stats = None
    if column_stats is not None:
        try:  # the per-record path: records to Arrow once more for the statistics
            stats = avro_block_stats(records_to_arrow(records, text), text, column_stats)
        except MorlogError:
            stats = None  # readers recompute them from the records
    return PreparedBlock(BlockType.AVRO_DATA, instant, header, prefix, None, own, stats=stats)


def prepare_avro_arrow(table: pa.Table | pa.RecordBatch, schema: str | dict[str, Any],
                       instant: str, *, key_field: str, fpp: float = DEFAULT_FPP,
                       extra_header: Mapping[HeaderKey, str] | None = None,
                       keys: pa.Array | None = None,
                       column_stats: StatsColumns | None = None) -> PreparedBlock:
    """:func:`prepare_avro` of ``table``'s rows, column-wise: the same block, byte for byte,
    as ``prepare_avro(arrow_to_records(table), ...)``, without a Python object per record.
    Keys, order, filter and range come from Arrow kernels; the records from
    :func:`~.avro_columnar.encode_arrow_to_records`. Tables the column-wise codec does not
    take (or keys that are not strings) go through the per-record path.

    ``keys``: the record key of every row when the records carry none (a table without
    meta fields, ``morlog.logformat.virtual_keys``); the index is built from them."""
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    text = schema if isinstance(schema, str) else json.dumps(schema, separators=(",", ":"))
    if keys is not None:
        return _prepare_avro_keyed(table, text, instant, keys, fpp, extra_header,
                                   column_stats)
    if key_field not in table.column_names:
        raise UsageError(f"records have no key field {key_field!r}")
    col = table.column(key_field)
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return prepare_avro(arrow_to_records(table), text, instant, key_field=key_field,
                            fpp=fpp, extra_header=extra_header, column_stats=column_stats)
    if table.num_rows == 0 or col.null_count:  # the per-record path says what is wrong
        return prepare_avro(arrow_to_records(table), text, instant, key_field=key_field,
                            fpp=fpp, extra_header=extra_header, column_stats=column_stats)
    try:
        body, count = encode_arrow_to_records(table, text)
    except FAST_PATH_MISSES:
        return prepare_avro(arrow_to_records(table), text, instant, key_field=key_field,
                            fpp=fpp, extra_header=extra_header, column_stats=column_stats)
    own = BlockKeys.of(col.combine_chunks(), fpp)
    prefix = struct.pack(">ii", CURRENT_CONTENT_VERSION.number, count) + body
    header = make_header(instant, {HeaderKey.SCHEMA: text, **(extra_header or {})})
    return PreparedBlock(BlockType.AVRO_DATA, instant, header, prefix, None, own,
                         stats=avro_block_stats(table, text, column_stats))


def _prepare_avro_keyed(table: pa.Table, text: str, instant: str, keys: pa.Array, fpp: float,
                        extra_header: Mapping[HeaderKey, str] | None,
                        column_stats: StatsColumns | None = None) -> PreparedBlock:
    """An Avro block of ``table``'s rows indexed by the given ``keys`` (one per row)."""
    keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    if len(keys) != table.num_rows or keys.null_count or table.num_rows == 0:
        raise UsageError("one non-null key per record", expected=table.num_rows,
                         actual=len(keys))
    try:
        body, count = encode_arrow_to_records(table, text)
        prefix = struct.pack(">ii", CURRENT_CONTENT_VERSION.number, count) + body
    except FAST_PATH_MISSES:
        prefix = encode_avro_content(encode_records(arrow_to_records(table), text))
    own = BlockKeys.of(keys.cast(pa.string()), fpp)
    header = make_header(instant, {HeaderKey.SCHEMA: text, **(extra_header or {})})
    return PreparedBlock(BlockType.AVRO_DATA, instant, header, prefix, None, own,
                         stats=avro_block_stats(table, text, column_stats))


def prepare_parquet(table: pa.Table, instant: str, *, key_field: str,
                    schema: str | dict[str, Any] | None = None, fpp: float = DEFAULT_FPP,
                    compression: str = DEFAULT_COMPRESSION,
                    keys: pa.Array | None = None,
                    extra_header: Mapping[HeaderKey, str] | None = None,
                    column_stats: StatsColumns | None = None) -> PreparedBlock:
    """A Parquet-carrier block, records sorted by key; ``keys``: the record key of every
    row when the records carry none (virtual keys); ``extra_header``: more header entries
    (a log compaction's ``COMPACTED_BLOCK_TIMES``); ``column_stats``: which columns get a
    COLUMN_STATS entry (None: no section)."""
    if keys is None:
        if key_field not in table.column_names:
            raise UsageError(f"table has no key column {key_field!r}")
        key_col = table.column(key_field)
    else:
        key_col = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
        if len(key_col) != table.num_rows or key_col.null_count:
            raise UsageError("one non-null key per record", expected=table.num_rows,
                             actual=len(key_col))
        key_col = key_col.cast(pa.string())
    order = pc.sort_indices(key_col.cast(pa.binary()))  # records sorted by key bytes
    table = table.take(order)
    own = BlockKeys.of(pc.take(key_col, order).combine_chunks()
                       if isinstance(key_col, pa.ChunkedArray) else pc.take(key_col, order), fpp)
    avro = schema if schema is not None else arrow_to_avro_schema(table.schema)
    text = avro if isinstance(avro, str) else json.dumps(avro, separators=(",", ":"))
    header = make_header(instant, {HeaderKey.SCHEMA: text, **(extra_header or {})})
    return PreparedBlock(BlockType.PARQUET_DATA, instant, header, b"", table, own, compression,
                         stats=parquet_block_stats(table, column_stats))
