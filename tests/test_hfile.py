"""HFile codec (spec/mdt.md §1-2): real Hudi files, byte-identical re-encoding, round trips,
hostile bytes, and the conformance vectors under spec/vectors/hfile/."""

from __future__ import annotations

import json
import os
import random
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat import blocks as block_builders
from morlog.logformat.constants import BlockType, HeaderKey
from morlog.logformat.crc32c import crc32c, crc32c_chunks
from morlog.logformat.errors import MorlogError, UsageError
from morlog.logformat.framing import decode_blocks, encode_block
from morlog.logformat.hfile.codec import (
    DATA_MAGIC,
    HBASE,
    HUDI_NATIVE,
    Codec,
    decode_hfile,
    encode_hfile,
    reencode_args,
)
from morlog.logformat.hfile.content import decode_hfile_records, encode_hfile_records
from tests.hudi_fixtures import ROOT, SKIP_REASON, fixture_id

requires_fixtures = pytest.mark.skipif(ROOT is None, reason=SKIP_REASON)
VECTORS = Path(__file__).resolve().parent.parent / "spec" / "vectors" / "hfile"


def _hfiles() -> list[Path]:
    if ROOT is None:
        return []
    return sorted(p for p in (ROOT / "tables").glob("*/*/.hoodie/metadata/**/*.hfile"))


def _mdt_logs() -> list[Path]:
    if ROOT is None:
        return []
    return sorted(p for p in (ROOT / "tables").glob("*/*/.hoodie/metadata/**/.*.log.*"))


def _hfile_blocks() -> list[tuple[str, bytes, dict[HeaderKey, str | None]]]:
    out = []
    for p in _mdt_logs():
        for i, fr in enumerate(decode_blocks(p.read_bytes(), path=str(p))):
            if fr.block_type == BlockType.HFILE_DATA:
                header = {HeaderKey.SCHEMA: fr.header.get(HeaderKey.SCHEMA)}
                out.append((f"{fixture_id(p)}#{i}", fr.content, header))
    return out


def _reencode(data: bytes, block_size: int = 1 << 20) -> bytes:
    hf = decode_hfile(data)
    a = reencode_args(hf)
    return encode_hfile(hf.keys, hf.values, file_info=a.file_info, meta_blocks=a.meta_blocks,
                        codec=a.codec, style=a.style, create_time_ms=a.create_time_ms,
                        block_size=block_size)


# --- CRC-32C ----------------------------------------------------------------------------------


def _crc32c_slow(data: bytes) -> int:
    reg = 0xFFFFFFFF
    for b in data:
        reg ^= b
        for _ in range(8):
            reg = (reg >> 1) ^ (0x82F63B78 if reg & 1 else 0)
    return reg ^ 0xFFFFFFFF


def test_crc32c_vectors() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # RFC 3720 check value
    rnd = random.Random(7)
    for n in (1, 2, 3, 4, 5, 63, 1000, 16384, 16385, 40000):
        data = rnd.randbytes(n)
        got = [int(x) for x in crc32c_chunks(data, 16384)]
        assert got == [_crc32c_slow(data[i:i + 16384]) for i in range(0, n, 16384)]


# --- real Hudi files --------------------------------------------------------------------------


@requires_fixtures
@pytest.mark.parametrize("path", _hfiles(), ids=fixture_id)
def test_fixture_hfile_decodes_and_reencodes_byte_identically(path: Path) -> None:
    data = path.read_bytes()
    hf = decode_hfile(data, path=str(path))
    assert len(hf.keys) == hf.trailer.entry_count
    assert hf.keys == sorted(hf.keys) and len(set(hf.keys)) == len(hf.keys)
    assert hf.key_suffixes_ok  # family 0, no qualifier, Long.MAX_VALUE, Put
    assert hf.codec == Codec.GZ
    # Hudi's base files carry the schema, the key range and the bloom filter meta block
    assert hf.file_info[b"schema"].startswith(b'{"type":"record","name":"HoodieMetadataRecord"')
    assert hf.file_info[b"bloomFilterTypeCode"] == b"DYNAMIC_V0"
    assert list(hf.meta_blocks) == [b"bloomFilter"]
    if hf.keys:
        assert hf.file_info[b"minRecordKey"] == hf.keys[0]
        assert hf.file_info[b"maxRecordKey"] == hf.keys[-1]
    # table version 8 (Hudi 1.0) files come from HBase's writer, version 9 from Hudi's own
    assert hf.style is (HBASE if "/v8_" in str(path) else HUDI_NATIVE)
    assert _reencode(data) == data


@requires_fixtures
def test_fixture_hfile_data_blocks_decode_and_reencode_byte_identically() -> None:
    blocks = _hfile_blocks()
    assert len(blocks) >= 100
    for name, content, header in blocks:
        hf = decode_hfile(content, path=name)
        assert content.startswith(DATA_MAGIC)
        assert hf.meta_blocks == {}
        assert hf.file_info[b"schema"].decode() == header[HeaderKey.SCHEMA]
        records = decode_hfile_records(content, header[HeaderKey.SCHEMA], path=name)
        assert [r["key"] for r in records] == [k.decode() for k in hf.keys]
        assert _reencode(content) == content, name
        # records -> content reproduces Hudi's bytes (Avro, map order, sorting, file info)
        ct = int.from_bytes(hf.file_info[b"hfile.CREATE_TIME_TS"], "big")
        again = encode_hfile_records(records, header[HeaderKey.SCHEMA], style=hf.style,
                                     create_time_ms=ct)
        assert again == content, name


def _table_of_mdt(path: Path) -> Path:
    return next(p for p in path.parents if p.name == "metadata").parent.parent


@requires_fixtures
def test_record_index_keys_are_the_tables_record_keys() -> None:
    checked = 0
    for table in sorted({_table_of_mdt(p) for p in _hfiles()}):
        ri = table / ".hoodie" / "metadata" / "record_index"
        if not ri.is_dir():
            continue
        index: dict[str, dict[str, object]] = {}
        for p in sorted(ri.iterdir()):
            if p.suffix == ".hfile":
                data = p.read_bytes()
                schema = decode_hfile(data).file_info[b"schema"].decode()
                for r in decode_hfile_records(data, schema):
                    index[r["key"]] = r["recordIndexMetadata"]
            elif ".log." in p.name:
                for fr in decode_blocks(p.read_bytes()):
                    if fr.block_type == BlockType.HFILE_DATA:
                        for r in decode_hfile_records(fr.content, fr.header.get(HeaderKey.SCHEMA)):
                            index[r["key"]] = r["recordIndexMetadata"]
        keys: set[str] = set()
        file_ids: dict[str, set[str]] = {}
        for dirpath, _d, files in os.walk(table):
            if ".hoodie" in dirpath:
                continue
            part = os.path.relpath(dirpath, table)
            for f in files:
                if f.endswith(".parquet"):
                    keys.update(pq.read_table(Path(dirpath) / f,
                                              columns=["_hoodie_record_key"]).column(0)
                                .to_pylist())
                    file_ids.setdefault(part, set()).add(f.split("_")[0])
        assert set(index) == keys, table.name
        for info in index.values():
            assert info["fileIdEncoding"] == 0 and info["fileId"] == ""
            hi, lo = int(info["fileIdHighBits"]), int(info["fileIdLowBits"])
            u = uuid.UUID(int=((hi & (2**64 - 1)) << 64) | (lo & (2**64 - 1)))
            assert f"{u}-{info['fileIndex']}" in file_ids[str(info["partitionName"])]
        checked += 1
    assert checked >= 2


# --- encoder properties -----------------------------------------------------------------------


def test_unsorted_or_duplicate_keys_are_refused() -> None:
    with pytest.raises(UsageError, match="out of order"):
        encode_hfile([b"b", b"a"], [b"", b""])
    with pytest.raises(UsageError, match="duplicate"):
        encode_hfile([b"a", b"a"], [b"", b""])
    with pytest.raises(UsageError):
        encode_hfile([b"a"], [])


_keys = st.lists(st.binary(min_size=0, max_size=40), max_size=120, unique=True).map(sorted)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keys=_keys, data=st.data(), block_size=st.sampled_from([1, 64, 300, 4096, 1 << 20]),
       style=st.sampled_from([HUDI_NATIVE, HBASE]), codec=st.sampled_from([Codec.GZ,
                                                                          Codec.NONE]))
def test_encode_decode_round_trip(keys: list[bytes], data: st.DataObject, block_size: int,
                                  style: object, codec: Codec) -> None:
    values = data.draw(st.lists(st.binary(max_size=200), min_size=len(keys),
                                max_size=len(keys)))
    blob = encode_hfile(keys, values, block_size=block_size, style=style,  # type: ignore[arg-type]
                        codec=codec, file_info={b"schema": b"{}"})
    hf = decode_hfile(blob)
    assert hf.keys == keys and hf.values == values
    assert hf.style is style and hf.codec == codec
    assert hf.file_info[b"schema"] == b"{}"
    data_blocks = sum(b.magic == DATA_MAGIC for b in hf.blocks)
    assert data_blocks == hf.trailer.get(5)
    if block_size == 1:
        assert data_blocks == len(keys)  # one cell per block
    assert _reencode(blob, block_size) == blob


def test_large_input_splits_into_blocks_of_the_default_size() -> None:
    n = 40_000
    keys = [f"key-{i:08d}".encode() for i in range(n)]
    values = [bytes(30)] * n
    hf = decode_hfile(encode_hfile(keys, values))
    data_blocks = [b for b in hf.blocks if b.magic == DATA_MAGIC]
    assert len(data_blocks) == 3  # 40,000 cells of 63 bytes = 2.52 MB over 1 MiB blocks
    assert all(b.uncompressed_size <= 1 << 20 for b in data_blocks)
    assert hf.keys == keys


def test_hfile_data_block_builder_round_trip() -> None:
    from morlog.logformat.mdt_records import files_partition_records, metadata_record_schema_json

    schema = metadata_record_schema_json()
    records = files_partition_records({"p=1": {"a.parquet": 10}, "": {"b.parquet": 5}})
    frame = block_builders.hfile_data_block(records, schema, "20260101000000000")
    [back] = decode_blocks(encode_block(frame))
    assert back.block_type == BlockType.HFILE_DATA
    assert block_builders.record_count(back.block_type, back.content) == 3
    assert block_builders.block_keys(back.block_type, back.header, back.content) == [
        ".", "__all_partitions__", "p=1"]
    assert block_builders.decode_block_records(back.block_type, back.header,
                                               back.content) == records


# --- hostile bytes ----------------------------------------------------------------------------


def _fuzz_inputs() -> list[bytes]:
    out = [encode_hfile([b"a", b"bb", b"ccc"], [b"x", b"", b"zz"], style=HBASE,
                        block_size=16),
           encode_hfile([b"a", b"bb"], [b"x", b"y"], codec=Codec.NONE)]
    if ROOT is not None:
        out += [p.read_bytes() for p in _hfiles()[:3]]
        out += [c for _, c, _ in _hfile_blocks()[:3]]
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_damaged_hfiles_raise_only_typed_errors(data: st.DataObject) -> None:
    blob = bytearray(data.draw(st.sampled_from(_fuzz_inputs())))
    mode = data.draw(st.sampled_from(["truncate", "flip", "both"]))
    if mode in ("flip", "both"):
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, len(blob) - 1))
            blob[i] ^= 1 << data.draw(st.integers(0, 7))
    if mode in ("truncate", "both"):
        blob = blob[: data.draw(st.integers(0, len(blob)))]
    try:
        decode_hfile(bytes(blob))
    except MorlogError:
        pass


def test_every_single_byte_truncation_of_a_small_hfile_is_typed() -> None:
    blob = encode_hfile([b"k1", b"k2"], [b"v1", b"v2"], style=HBASE)
    for n in range(len(blob)):
        with pytest.raises(MorlogError):
            decode_hfile(blob[:n])


# --- conformance vectors ----------------------------------------------------------------------


def _vector_cases() -> list[Path]:
    return sorted(p.parent for p in VECTORS.glob("*/case.json"))


@pytest.mark.parametrize("case", _vector_cases(), ids=lambda p: p.name)
def test_hfile_vector(case: Path) -> None:
    spec = json.loads((case / "case.json").read_text())
    blob = bytes.fromhex("".join((case / "input.hex").read_text().split()))
    hf = decode_hfile(blob, path="input")
    assert [k.hex() for k in hf.keys] == [c[0] for c in spec["cells"]]
    assert [v.hex() for v in hf.values] == [c[1] for c in spec["cells"]]
    assert {k.decode(): v.hex() for k, v in hf.file_info.items()} == spec["file_info"]
    style = {"hudi-native": HUDI_NATIVE, "hbase": HBASE}[spec["style"]]
    again = encode_hfile([bytes.fromhex(c[0]) for c in spec["cells"]],
                         [bytes.fromhex(c[1]) for c in spec["cells"]],
                         codec=Codec[spec["codec"]], style=style,
                         create_time_ms=spec["create_time_ms"],
                         block_size=spec.get("block_size", 1 << 20))
    assert again == blob
