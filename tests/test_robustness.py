"""Bad input: truncation at every offset, random byte flips, hostile length fields.

The reader must return a clean prefix of the blocks plus at most one CORRUPT block, or raise
one of the library's own errors; it must never raise anything else, and never ask for more
bytes than the file holds.
"""

from __future__ import annotations

import os
import struct
import tracemalloc
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from morlog.logformat import BlockType, MorlogError, encode_block
from morlog.logformat.constants import MAGIC
from morlog.logformat.framing import BlockFrame, MetadataMap
from morlog.readers import BytesSource, LogFileReader
from morlog.readers.logfile import LogBlock

from .samples import sample_file

DATA, LAYOUT = sample_file()
#: random byte-flip and garbage cases per test: a thousand in CI (every block region is
#: also flipped deterministically by ``test_byte_flips_in_every_block_region``), fewer on a
#: laptop, many with HYPOTHESIS_PROFILE=slow (MORLOG_FUZZ_EXAMPLES sets the count outright,
#: e.g. 3000 for the former CI count)
FUZZ_EXAMPLES = int(os.environ.get("MORLOG_FUZZ_EXAMPLES") or {"ci": 1000, "slow": 50_000}.get(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"), 300))
#: the framing fields at a block's start (magic, size, version, type, header count and the
#: first header entry) are flipped byte by byte; the rest of the block at this many points
BLOCK_HEAD_BYTES = 48
BODY_POINTS = 24


def _summary(blocks: list[LogBlock]) -> list[tuple[int, int, int]]:
    return [(b.offset, b.size, int(b.block_type)) for b in blocks]


def _read_all(data: bytes) -> list[LogBlock]:
    with LogFileReader(BytesSource(data, "flipped.log")) as reader:
        return list(reader.blocks())


def _exercise(block: LogBlock) -> None:
    """Touch everything a user could ask of a block."""
    block.header.as_dict()
    block.footer.as_dict()
    _ = block.instant, block.schema
    if block.is_corrupt:
        return
    block.record_count()
    t = block.block_type
    if t in (BlockType.AVRO_DATA, BlockType.CDC_DATA, BlockType.PARQUET_DATA):
        block.to_arrow()
        block.keys()
    elif t == BlockType.DELETE:
        block.delete_records()
    elif t == BlockType.COMMAND:
        _ = block.command_type


def test_sample_file_reads_back_whole() -> None:
    blocks = _read_all(DATA)
    assert _summary(blocks) == LAYOUT
    for b in blocks:
        _exercise(b)


def test_truncation_at_every_offset_gives_prefix_plus_at_most_one_corrupt() -> None:
    ends = [off + size for off, size, _ in LAYOUT]
    for n in range(len(DATA) + 1):
        data = DATA[:n]
        complete = [blk for blk in LAYOUT if blk[0] + blk[1] <= n]
        last_end = complete[-1][0] + complete[-1][1] if complete else 0
        expected = list(complete)
        if n - last_end >= len(MAGIC):
            expected.append((last_end, n - last_end, int(BlockType.CORRUPT)))
        with LogFileReader(BytesSource(data, "truncated.log")) as reader:
            forward = _summary(list(reader.blocks()))
            backward = _summary(list(reader.reversed_blocks()))
        assert forward == expected, f"truncated at {n} (block ends {ends})"
        assert backward == list(reversed(expected)), f"reverse, truncated at {n}"


@settings(max_examples=FUZZ_EXAMPLES)
@given(
    flips=st.lists(
        st.tuples(st.integers(0, len(DATA) - 1), st.integers(1, 255)), min_size=1, max_size=4
    )
)
def test_random_byte_flips_raise_only_library_errors(flips: list[tuple[int, int]]) -> None:
    _check_flipped(flips)


def _region_flips() -> list[int]:
    """Offsets that touch every block of the sample file: each byte of its framing head and
    evenly spaced points through the rest (its header, content and footer)."""
    offsets: set[int] = set()
    for off, size, _ in LAYOUT:
        offsets.update(range(off, off + min(size, BLOCK_HEAD_BYTES)))
        body = size - BLOCK_HEAD_BYTES
        if body > 0:
            offsets.update(off + BLOCK_HEAD_BYTES + body * i // BODY_POINTS
                           for i in range(BODY_POINTS))
        offsets.update(range(max(off, off + size - 8), off + size))  # trailing size field
    return sorted(offsets)


def test_byte_flips_in_every_block_region() -> None:
    """The deterministic part of the flip fuzz: every block's framing bytes and points through
    each block's body, flipped one at a time (all bits, and the low bit), must give only library
    errors or a tiling of the file. It makes sure each region is hit whatever the random
    examples above draw."""
    offsets = _region_flips()
    for off, size, _ in LAYOUT:  # every block is touched at its start, inside and at its end
        assert off in offsets and off + size - 1 in offsets
        assert sum(off < o < off + size - 1 for o in offsets) >= min(size - 2, BLOCK_HEAD_BYTES)
    for pos in offsets:
        for x in (0xFF, 0x01):
            _check_flipped([(pos, x)])


def _check_flipped(flips: list[tuple[int, int]]) -> None:
    data = bytearray(DATA)
    for pos, x in flips:
        data[pos] ^= x
    source = BytesSource(bytes(data), "flipped.log")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unknown header keys are warned about, not errors
        try:
            with LogFileReader(source) as reader:
                blocks = list(reader.blocks())
                backward = list(reader.reversed_blocks())
        except MorlogError:
            return
        assert _summary(backward) == list(reversed(_summary(blocks)))
        # blocks tile the file: nothing skipped, nothing read twice
        pos = 0
        for b in blocks:
            assert b.offset == pos
            pos += b.size
        assert len(data) - pos < len(MAGIC)
        for b in blocks:
            try:
                _exercise(b)
            except MorlogError:
                pass
    # every single read stayed within the file (BytesSource checks each request)
    assert source.stats.bytes_read <= 64 * len(data) + 1024


@settings(max_examples=FUZZ_EXAMPLES)
@given(st.binary(min_size=0, max_size=400))
def test_garbage_raises_only_library_errors(junk: bytes) -> None:
    for data in (junk, MAGIC + junk, DATA[:200] + junk):
        try:
            for b in _read_all(data):
                _exercise(b)
        except MorlogError:
            pass


def _block_with(prefix_patch: dict[int, bytes]) -> bytes:
    """The first sample block with bytes replaced at the given offsets."""
    first = bytearray(DATA[: LAYOUT[0][1]])
    for off, raw in prefix_patch.items():
        first[off : off + len(raw)] = raw
    return bytes(first)


HUGE = struct.pack(">q", 2**62)
HUGE32 = struct.pack(">i", 2**31 - 1)


@pytest.mark.parametrize(
    "what, patch",
    [
        ("block length", {6: HUGE}),
        ("header entry count", {22: HUGE32}),
        ("header value length", {30: HUGE32}),
    ],
)
def test_hostile_lengths_allocate_nothing_big(what: str, patch: dict[int, bytes]) -> None:
    data = _block_with(patch)
    tracemalloc.start()
    try:
        blocks = _read_all(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [b.block_type for b in blocks] == [BlockType.CORRUPT], what
    assert blocks[0].reason
    assert peak < 20 * len(data) + 256 * 1024, f"{what}: peak {peak} bytes"


@pytest.mark.parametrize(
    "content",
    [
        struct.pack(">ii", 3, 2**31 - 1),  # record count past the content
        struct.pack(">iii", 3, 1, 2**31 - 1) + b"x",  # record length past the content
        struct.pack(">ii", 3, -5),  # negative count
        struct.pack(">i", 7) + b"\0" * 8,  # unknown content version
        b"\0\0",  # too short for a version
    ],
)
def test_hostile_avro_content_is_a_typed_error(content: bytes) -> None:
    frame = BlockFrame(int(BlockType.AVRO_DATA),
                       MetadataMap.of({0: "20250101000000000", 2: '{"type":"record","name":"r",'
                                       '"fields":[{"name":"a","type":"string"}]}'}), content)
    (block,) = _read_all(encode_block(frame))
    assert block.block_type == BlockType.AVRO_DATA
    tracemalloc.start()
    try:
        with pytest.raises(MorlogError) as err:
            block.to_arrow()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert err.value.path == "flipped.log"
    assert err.value.offset is not None and err.value.offset >= block.content_offset
    assert peak < 1024 * 1024


@pytest.mark.parametrize(
    "content",
    [
        struct.pack(">ii", 3, 2**31 - 1),  # payload length past the content
        struct.pack(">ii", 3, 1) + b"\x7f",  # array count with no items behind it
        struct.pack(">ii", 2, 1) + b"\x00",  # Kryo (version 2): not decodable here
    ],
)
def test_hostile_delete_content_is_a_typed_error(content: bytes) -> None:
    frame = BlockFrame(int(BlockType.DELETE), MetadataMap.of({0: "20250101000000000"}), content)
    (block,) = _read_all(encode_block(frame))
    with pytest.raises(MorlogError):
        block.delete_records()
