"""The conformance vectors of spec/index.md §10, checked against the code.

Every directory ``spec/vectors/index/<case>/`` with a ``case.json`` is one case; its ``kind``
says what a conforming implementation must do with it. ``input.hex`` (where present) was
written field by field from the spec by ``spec/vectors/index/regenerate.py``, which does not
import morlog: these tests decode those bytes with morlog's functions and, where morlog
encodes the structure, encode the expected values back to exactly the same bytes.
"""

from __future__ import annotations

import decimal
import importlib.util
import json
import math
import re
import sys
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from morlog.logformat import errors
from morlog.logformat.base_keys import decode_base_keys, encode_base_keys
from morlog.logformat.block_checksum import avro_checksum, verify_block
from morlog.logformat.blocks import decode_block_records
from morlog.logformat.column_stats_section import (
    ColumnStats,
    ColumnStatsSection,
    StatsType,
    compute_column_stats,
)
from morlog.logformat.constants import BlockType
from morlog.logformat.hudi_bloom import DynamicBloomV0, SimpleBloom, murmur_hadoop, parse_hudi_bloom
from morlog.logformat.index_trailer import (
    BlockChecksum,
    BlockRef,
    Carrier,
    CheckpointRef,
    Cumulative,
    CumulativeKind,
    Directory,
    KeyRange,
    Section,
    UnknownSectionWarning,
    decode_bloom,
    decode_filter_part,
    decode_keys,
    encode_bloom,
    encode_keys,
    encode_trailer,
    has_trailer,
    parse_layout,
    section_bytes,
    sorted_unique_keys,
)
from morlog.logformat.keybatch import KeyBatch
from morlog.logformat.sbbf import SplitBlockBloom, blocks_for
from morlog.logformat.xxh64 import xxh64_batch
from morlog.readers import BytesSource, LogFileReader
from morlog.readers.index import block_index, find_tail_index, read_stored_index
from morlog.readers.probe import probe_log_file

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "spec" / "vectors" / "index"
KINDS = {"xxh64", "sbbf", "sbbf-sizing", "keys-section", "range-section", "bloom-section",
         "cumulative-section", "directory-section", "trailer", "trailer-error",
         "section-error", "hudi-murmur", "hudi-murmur-raw", "hudi-bloom", "avro-carrier",
         "column-stats-section", "base-keys", "base-keys-error", "checksum-mismatch"}
#: section-error cases: which decoder reads them
DECODERS: dict[str, Any] = {"KEYS": decode_keys, "BLOOM": decode_bloom,
                            "RANGE": KeyRange.decode, "CUMULATIVE": Cumulative.decode,
                            "DIRECTORY": Directory.decode,
                            "COLUMN_STATS": ColumnStatsSection.decode}


def _case_dirs() -> list[Path]:
    return sorted(p.parent for p in VECTORS.glob("*/case.json"))


def _load(case_dir: Path) -> dict[str, Any]:
    return json.loads((case_dir / "case.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _params(kind: str) -> list[Any]:
    return [pytest.param(d, id=d.name) for d in _case_dirs() if _load(d)["kind"] == kind]


def parse_hex(text: str) -> bytes:
    """``input.hex``: hex digit pairs, whitespace anywhere, ``#`` comments to end of line."""
    digits = re.sub(r"\s+", "", "".join(re.sub(r"#.*", "", ln) for ln in text.splitlines()))
    if not re.fullmatch(r"(?:[0-9a-fA-F]{2})*", digits):
        raise ValueError("input.hex holds something other than pairs of hex digits")
    return bytes.fromhex(digits)


def _input(case_dir: Path) -> bytes:
    return parse_hex((case_dir / "input.hex").read_text(encoding="utf-8"))


def _filter(keys: list[str], num_blocks: int) -> SplitBlockBloom:
    f = SplitBlockBloom.empty(num_blocks)
    f.insert(keys)
    return f


def _regenerate_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("index_vectors_regenerate",
                                                  VECTORS / "regenerate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


# --- the vector set itself ---------------------------------------------------------------


def test_every_case_is_well_formed() -> None:
    dirs = _case_dirs()
    assert len(dirs) >= 30
    for d in dirs:
        case = _load(d)
        assert case["kind"] in KINDS, d.name
        assert case["description"] and case["spec"].startswith("§"), d.name
        if (d / "input.hex").exists():
            assert _input(d), d.name


def test_vectors_match_their_recipe() -> None:
    """The files on disk are exactly what regenerate.py writes, and it stays independent."""
    source = (VECTORS / "regenerate.py").read_text(encoding="utf-8")
    assert not re.search(r"^\s*(from|import)\s+(logformat|readers|writers|compat)\b", source,
                         re.M)
    built = _regenerate_module().build_all()
    assert sorted(built) == [d.name for d in _case_dirs()]
    for name, files in built.items():
        for fname, text in files.items():
            assert (VECTORS / name / fname).read_text(encoding="utf-8") == text, (name, fname)


# --- hashes and filters ------------------------------------------------------------------


@pytest.mark.parametrize("case_dir", _params("xxh64"))
def test_xxh64(case_dir: Path) -> None:
    case = _load(case_dir)
    rows = case["keys"]
    assert case["seed"] == 0
    for row in rows:
        assert row["key"].encode("utf-8").hex() == row["utf8_hex"]
        (h,) = xxh64_batch(KeyBatch.of([row["key"]]))
        assert f"{int(h):016x}" == row["xxh64"] and int(h) == row["xxh64_decimal"]
    # all at once: keys of every length in one batch, answers in the caller's order
    got = xxh64_batch(KeyBatch.of([r["key"] for r in rows]))
    assert [f"{int(h):016x}" for h in got] == [r["xxh64"] for r in rows]


@pytest.mark.parametrize("case_dir", _params("sbbf"))
def test_split_block_bloom_filter(case_dir: Path) -> None:
    case, data = _load(case_dir), _input(case_dir)
    z, keys = case["num_blocks"], case["keys"]
    f = _filter(keys, z)
    assert f.to_bytes() == data
    assert SplitBlockBloom.from_bytes(data) == f
    assert f.check(keys).all()
    absent = case["absent"]
    assert f.check(list(absent)).tolist() == list(absent.values())
    for p in case["positions"]:  # one key alone sets exactly its 8 bits in its block
        one = _filter([p["key"]], z)
        expected = np.zeros((z, 8), dtype=np.uint32)
        expected[p["block"]] = [1 << b for b in p["bits"]]
        assert (one.words == expected).all(), p["key"]
        (h,) = xxh64_batch(KeyBatch.of([p["key"]]))
        assert f"{int(h):016x}" == p["xxh64"]
    assert blocks_for(len(keys), 0.01) == case["sized_blocks_at_1_percent"]


@pytest.mark.parametrize("case_dir", _params("sbbf-sizing"))
def test_split_block_bloom_filter_sizing(case_dir: Path) -> None:
    for row in _load(case_dir)["sizes"]:
        assert blocks_for(row["ndv"], row["fpp"]) == row["num_blocks"], row
        assert SplitBlockBloom.for_keys([str(i) for i in range(row["ndv"])],
                                        fpp=row["fpp"]).num_blocks == row["num_blocks"]


@pytest.mark.parametrize("case_dir", _params("hudi-murmur"))
def test_hudi_murmur_chain(case_dir: Path) -> None:
    case = _load(case_dir)
    m, k = case["num_bits"], case["num_hashes"]
    for row in case["keys"]:
        key = row["key"].encode("utf-8")
        h = 0
        for expected in row["hashes"]:  # each hash seeds the next one
            h = murmur_hadoop(key, h)
            assert h == expected, row["key"]
        f = SimpleBloom(m, k)
        f.add([row["key"]])
        for pos in row["positions"]:
            assert f.bits[pos >> 3] >> (pos & 7) & 1, (row["key"], pos)


@pytest.mark.parametrize("case_dir", _params("hudi-murmur-raw"))
def test_hudi_murmur_sign_extended_tail(case_dir: Path) -> None:
    for row in _load(case_dir)["keys"]:
        data = bytes.fromhex(row["utf8_hex"])
        assert data == row["key"].encode("utf-8")
        assert murmur_hadoop(data, row["seed"]) == row["hash"]
        assert row["hash"] != row["hash_if_tail_bytes_were_masked"]


@pytest.mark.parametrize("case_dir", _params("hudi-bloom"))
def test_hudi_bloom_filters(case_dir: Path) -> None:
    case, data = _load(case_dir), _input(case_dir)
    keys = case["keys"]
    if case["type_code"] == "SIMPLE":
        f = SimpleBloom(case["num_bits"], case["num_hashes"])
        f.add(keys)
        assert f.serialize_row() == data and f.to_base64() == case["base64"]
        parsed = parse_hudi_bloom(case["base64"])
        assert isinstance(parsed, SimpleBloom)
        assert parsed.serialize_row() == data
        assert parsed.contains(keys).all()
        absent = case["absent"]
        assert parsed.contains(list(absent)).tolist() == list(absent.values())
        return
    d = DynamicBloomV0(case["num_entries"], case["fpp"], case["max_entries"])
    d.add(keys)
    assert d.serialize() == data and d.to_base64() == case["base64"]
    one_by_one = DynamicBloomV0(case["num_entries"], case["fpp"], case["max_entries"])
    for key in keys:  # the growth rule counts adds, however they are batched
        one_by_one.add([key])
    assert one_by_one.serialize() == data
    assert [(r.num_bits, r.num_hashes) for r in d.rows] == [
        (case["num_bits"], case["num_hashes"])] * len(case["rows"])
    for row, row_keys in zip(d.rows, case["rows"], strict=True):
        alone = SimpleBloom(case["num_bits"], case["num_hashes"])
        alone.add(row_keys)
        assert row.serialize_row() == alone.serialize_row()
    for code in (case["type_code"], case["type_code"].lower()):  # type codes: any case
        parsed = parse_hudi_bloom(case["base64"], code)
        assert isinstance(parsed, DynamicBloomV0)
        assert parsed.serialize() == data
        assert parsed.current_nb_record == case["current_nb_record"]
        assert parsed.contains(keys).all()


# --- sections ----------------------------------------------------------------------------


@pytest.mark.parametrize("case_dir", _params("keys-section"))
def test_keys_section(case_dir: Path) -> None:
    case, data = _load(case_dir), _input(case_dir)
    keys = case["keys"]
    assert decode_keys(data).to_pylist() == keys
    assert encode_keys(pa.array(keys, type=pa.string()), codec=0) == data
    assert sorted_unique_keys(case["unsorted"]).to_pylist() == keys
    # a zstd-compressed list (codec 1) holds the same keys
    assert decode_keys(encode_keys(pa.array(keys, type=pa.string()), codec=1)).to_pylist() == keys


@pytest.mark.parametrize(("prefix", "n"), [(2000, 100), (500, 2000), (2, 50)])
def test_keys_sections_morlog_writes_are_ones_it_reads(prefix: int, n: int) -> None:
    """Long keys sharing most of their bytes: zstd shrinks them past the bound readers
    check before allocating (§11 point 4); the writer stores those raw bytes as is."""
    keys = sorted_unique_keys(["a" * prefix + f"{i:06d}" for i in range(n)])
    data = encode_keys(keys)
    assert decode_keys(data).to_pylist() == keys.to_pylist()
    raw = 4 * (n + 1) + sum(len(k) for k in keys.to_pylist())
    assert data[0] == (0 if prefix == 2000 else 1)
    assert raw == int.from_bytes(data[5:9], "little")


@pytest.mark.parametrize("case_dir", _params("range-section"))
def test_range_section(case_dir: Path) -> None:
    case, data = _load(case_dir), _input(case_dir)
    rng = KeyRange(case["count"], case["min_key"], case["max_key"])
    assert KeyRange.decode(data) == rng
    assert rng.encode() == data


@pytest.mark.parametrize("case_dir", _params("bloom-section"))
def test_bloom_section(case_dir: Path) -> None:
    case, data = _load(case_dir), _input(case_dir)
    f = _filter(case["keys"], case["num_blocks"])
    assert decode_bloom(data) == f
    assert encode_bloom(f) == data


def _cumulative(c: dict[str, Any]) -> Cumulative:
    cp = c["checkpoint"]
    ref = None if cp is None else CheckpointRef(
        cp["file"], Carrier[cp["carrier"]], cp["region_offset"], cp["region_length"],
        cp["region_crc32"], cp["cumulative_length"])
    return Cumulative(CumulativeKind[c["kind"]], c["scope"], c["blocks"], c["keys"],
                      c["min_key"], c["max_key"], _filter(c["bloom_keys"], c["num_blocks"]),
                      ref)


@pytest.mark.parametrize("case_dir", _params("cumulative-section"))
def test_cumulative_section(case_dir: Path) -> None:
    case, data = _load(case_dir), _input(case_dir)
    expected = _cumulative(case["cumulative"])
    assert Cumulative.decode(data) == expected
    assert expected.encode() == data


def _ref(b: dict[str, Any]) -> BlockRef:
    return BlockRef(b["file"], Carrier[b["carrier"]], b["block_offset"], b["block_size"],
                    b["region_offset"], b["filter_length"], b["filter_crc32"],
                    b["keys_length"], b["keys_crc32"], b["key_count"], b["instant"],
                    b["min_key"], b["max_key"])


@pytest.mark.parametrize("case_dir", _params("directory-section"))
def test_directory_section(case_dir: Path) -> None:
    case, data = _load(case_dir), _input(case_dir)
    expected = Directory(tuple(case["files"]), tuple(_ref(b) for b in case["blocks"]))
    got = Directory.decode(data)
    assert got == expected
    assert [b.indexed for b in got.blocks] == [b["carrier"] != "NONE" for b in case["blocks"]]
    assert expected.encode() == data


@pytest.mark.parametrize("case_dir", _params("section-error"))
def test_malformed_sections_are_rejected(case_dir: Path) -> None:
    case, data = _load(case_dir), _input(case_dir)
    error = getattr(errors, case["expect_error"]["type"])
    with pytest.raises(error):
        DECODERS[case["section"]](data)


def _stats_value(tag: str, v: Any, scale: int) -> Any:
    if v is None:
        return None
    if tag in ("BYTES", "FIXED"):
        return bytes.fromhex(v)
    if tag == "DECIMAL":
        return decimal.Decimal(v).quantize(decimal.Decimal(1).scaleb(-scale))
    if tag in ("FLOAT32", "FLOAT64", "FLOAT32_NANS", "FLOAT64_NANS"):
        return float(v)
    return v


def _column_stats(c: dict[str, Any]) -> ColumnStats:
    tag = c["type"]
    code = StatsType[tag] if isinstance(tag, str) else tag
    scale = c.get("scale", 0)
    return ColumnStats(c["name"], int(code), c["null_count"], c["value_count"],
                       _stats_value(str(tag), c["min"], scale),
                       _stats_value(str(tag), c["max"], scale), c.get("width", 0),
                       c.get("precision", 0), scale, c.get("nans", 0))


_ARROW_TYPES = {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32(),
                "bool": pa.bool_(), "double": pa.float64(), "float": pa.float32(),
                "binary": pa.binary(), "fixed_size_binary[2]": pa.binary(2),
                "decimal128(10, 2)": pa.decimal128(10, 2), "date32": pa.date32(),
                "time32[ms]": pa.time32("ms"), "timestamp[us, tz=UTC]": pa.timestamp("us", "UTC"),
                "timestamp[ms]": pa.timestamp("ms"),
                "struct<a: int32>": pa.struct([("a", pa.int32())]), "null": pa.null()}


def _record_column(r: dict[str, Any]) -> pa.Array:
    t = _ARROW_TYPES[r["arrow_type"]]
    vals = r["values"]
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        vals = [None if v is None else bytes.fromhex(v) for v in vals]
    elif pa.types.is_decimal(t):
        vals = [None if v is None else decimal.Decimal(v) for v in vals]
    elif pa.types.is_floating(t):
        vals = [None if v is None else float(v) for v in vals]
    if pa.types.is_temporal(t):
        storage = pa.int32() if t.bit_width == 32 else pa.int64()
        return pa.array(vals, storage).cast(t)
    return pa.array(vals, t)


@pytest.mark.parametrize("case_dir", _params("column-stats-section"))
def test_column_stats_section(case_dir: Path) -> None:
    case, data = _load(case_dir), _input(case_dir)
    expected = ColumnStatsSection(case["rows"], tuple(_column_stats(c) for c in case["columns"]))
    got = ColumnStatsSection.decode(data)
    assert got == expected
    for g, c in zip(got.columns, case["columns"], strict=True):
        assert g.has_bounds == (c["min"] is not None)  # -0.0 and false are bounds too
        assert g.known == isinstance(c["type"], str)
        if isinstance(c["type"], str) and c["type"].startswith("FLOAT") and g.has_bounds:
            assert math.copysign(1, g.min) == math.copysign(1, float(c["min"]))
    if case.get("unknown_tags"):
        return  # writers never write tags they do not know
    assert expected.encode() == data
    if "records" in case:  # the writer's side: these column values give exactly these bytes
        table = pa.table({r["name"]: _record_column(r) for r in case["records"]})
        assert compute_column_stats(table, table.column_names).encode() == data


# --- the base-key index (§12) -----------------------------------------------------------


@pytest.mark.parametrize("case_dir", _params("base-keys"))
def test_base_keys(case_dir: Path) -> None:
    case, data = _load(case_dir), _input(case_dir)
    keys, name, size = case["keys"], case["base_file"], case["base_size"]
    got = decode_base_keys(data, path="input")
    assert (got.base_file, got.base_size, len(got)) == (name, size, len(keys))
    assert got.keys.to_pylist() == keys
    assert [f"{int(f):016x}" for f in got.fingerprints] == case["fingerprints"]
    assert [f"{int(f):016x}" for f in xxh64_batch(KeyBatch.of(keys))] == case["fingerprints"]
    assert data[5] == case["codec"]
    # encoding gives the same bytes, in whatever order the base file holds the keys (codec 1:
    # a compressor's bytes are its own; the vector's hand-made frame is only decoded)
    for order in (keys, case["unsorted"]):
        encoded = encode_base_keys(pa.array(order, pa.string()), name, size,
                                   codec=case["codec"])
        if encoded != data:  # (zstd writes such a frame for tiny payloads: often equal)
            assert case["codec"] == 1
            again = decode_base_keys(encoded)
            assert (again.base_file, again.base_size, again.keys.to_pylist(),
                    again.fingerprints.tolist()) == (name, size, keys,
                                                     got.fingerprints.tolist())
    # lookup: exactly the stored keys
    probe = keys + case["absent"]
    hits = got.contains(pa.array(probe, pa.string()), xxh64_batch(KeyBatch.of(probe)))
    assert hits.tolist() == [True] * len(keys) + [False] * len(case["absent"])
    # codec 1 (zstd bytes depend on the library): the same keys back
    z = decode_base_keys(encode_base_keys(pa.array(case["unsorted"], pa.string()), name, size))
    assert z.keys.to_pylist() == keys and z.fingerprints.tolist() == got.fingerprints.tolist()


@pytest.mark.parametrize("case_dir", _params("base-keys-error"))
def test_corrupt_base_keys(case_dir: Path) -> None:
    case, data = _load(case_dir), _input(case_dir)
    exp = case["expect_error"]
    error = getattr(errors, exp["type"])
    assert issubclass(error, errors.MorlogError)
    with pytest.raises(error) as info:
        decode_base_keys(data, path="input")
    assert info.value.offset == exp["offset"]
    assert info.value.path == "input"


# --- the trailer -------------------------------------------------------------------------


def _layout(case: dict[str, Any], data: bytes) -> Any:
    if "warns" in case:
        with pytest.warns(UnknownSectionWarning, match=r"unknown index section id\(s\) \[99\]"):
            return parse_layout(data, path="input")
    return parse_layout(data, path="input")


@pytest.mark.parametrize("case_dir", _params("trailer"))
def test_trailer(case_dir: Path) -> None:
    case, data = _load(case_dir), _input(case_dir)
    assert has_trailer(data)
    layout = _layout(case, data)
    assert (layout.length, layout.version, layout.flags) == (case["length"], case["version"],
                                                              case["flags"])
    assert [(e.id, e.flags, e.crc32, e.offset, e.length) for e in layout.sections] == [
        (s["id"], s["flags"], s["crc32"], s["offset"], s["length"]) for s in case["sections"]]
    assert layout.unknown() == case.get("unknown", [])
    bodies = {}
    for e in layout.sections:  # every section checks out against its CRC
        bodies[e.id] = bytes(section_bytes(data, len(data) - layout.length, e))
    keys, rng = case["keys"], KeyRange(*case["range"])
    assert decode_keys(bodies[Section.KEYS]).to_pylist() == keys
    assert KeyRange.decode(bodies[Section.RANGE]) == rng
    bloom = decode_bloom(bodies[Section.BLOOM])
    assert bloom == SplitBlockBloom.for_keys(keys) and bloom.check(keys).all()
    # the region: BLOOM and RANGE back to back (the filter part, read as one range), then KEYS
    b_entry, r_entry, k_entry = (layout.entry(s) for s in (Section.BLOOM, Section.RANGE,
                                                             Section.KEYS))
    assert b_entry is not None and r_entry is not None and k_entry is not None
    assert b_entry.offset + b_entry.length == r_entry.offset
    assert r_entry.offset + r_entry.length == k_entry.offset
    assert decode_filter_part(data[b_entry.offset : k_entry.offset]) == (bloom, rng)
    if any(s["flags"] for s in case["sections"]) or case["flags"]:
        return  # morlog writes flags and reserved words as 0 only
    sections = [(Section.BLOOM, encode_bloom(SplitBlockBloom.for_keys(keys))),
                (Section.RANGE, rng.encode()),
                (Section.KEYS, encode_keys(pa.array(keys, type=pa.string()), codec=0))]
    if "column_stats" in case:  # COLUMN_STATS follows the region
        cs = case["column_stats"]
        stats = ColumnStatsSection(cs["rows"], tuple(_column_stats(c) for c in cs["columns"]))
        assert ColumnStatsSection.decode(bodies[Section.COLUMN_STATS]) == stats
        sections.append((Section.COLUMN_STATS, stats.encode()))
    sections += [(e.id, bodies[e.id]) for e in layout.sections if e.id in layout.unknown()]
    assert encode_trailer(sections) == data


@pytest.mark.parametrize("case_dir", _params("trailer-error"))
def test_corrupt_trailers(case_dir: Path) -> None:
    case, data = _load(case_dir), _input(case_dir)
    exp = case["expect_error"]
    error = getattr(errors, exp["type"])
    if case["stage"] == "layout":
        with pytest.raises(error) as info:
            parse_layout(data, path="input")
    else:
        layout = parse_layout(data, path="input")
        entry = layout.entry(Section.KEYS)
        assert entry is not None
        with pytest.raises(error) as info:
            section_bytes(data, len(data) - layout.length, entry, path="input")
    assert info.value.offset == exp["offset"]
    assert info.value.path == "input"
    assert has_trailer(data) == (exp["type"] != "InvalidMagicError" and len(data) >= 32)


# --- the Avro carrier --------------------------------------------------------------------


@pytest.mark.parametrize("case_dir", _params("avro-carrier"))
def test_avro_carrier(case_dir: Path, tmp_path: Path) -> None:
    case, data = _load(case_dir), _input(case_dir)
    exp = case["block"]
    reader = LogFileReader(BytesSource(data, "input"))
    blocks = list(reader.blocks())
    block = blocks[0]
    assert (block.offset, block.size, block.block_type) == (exp["offset"], exp["size"],
                                                            BlockType.AVRO_DATA)
    assert block.content_offset == exp["content_offset"]
    # what a stock reader sees: exactly the records, the trailer is invisible
    assert block.record_count() == len(exp["record_keys"])
    assert block.keys(case["key_field"]) == exp["record_keys"]
    stored = read_stored_index(reader.source, block.offset, block.size, block.block_type)
    assert stored is not None and stored.carrier == Carrier.AVRO
    assert stored.trailer_offset == exp["trailer_offset"] and stored.length == exp[
        "trailer_length"]
    # the trailer ends right before the empty footer map and the reverse pointer
    assert stored.trailer_offset + stored.length == block.offset + block.size - 12
    assert data[block.offset + block.size - 12 : block.offset + block.size - 8] == b"\0" * 4
    keys = exp["keys"]
    assert stored.keys().to_pylist() == keys  # type: ignore[union-attr]
    assert stored.key_range() == KeyRange(len(keys), keys[0], keys[-1])
    cum, c = stored.cumulative(), exp["cumulative"]
    assert cum is not None and cum.checkpoint is None
    assert (cum.kind.name, cum.scope, cum.blocks, cum.keys, cum.min_key, cum.max_key) == (
        c["kind"], c["scope"], c["blocks"], c["keys"], c["min_key"], c["max_key"])
    assert cum.bloom.check(keys).all()
    directory = stored.directory()
    assert directory is not None and list(directory.files) == exp["directory_files"]
    (own,) = directory.blocks
    region = exp["region"]
    assert (own.file, own.carrier, own.block_offset, own.block_size) == (
        0, Carrier.AVRO, block.offset, block.size)
    assert (own.region_offset, own.filter_length, own.filter_crc32, own.keys_length,
            own.keys_crc32) == (region["offset"], region["filter_length"],
                                region["filter_crc32"], region["keys_length"],
                                region["keys_crc32"])
    at, flen = region["offset"], region["filter_length"]
    fpart, kpart = data[at : at + flen], data[at + flen : at + flen + region["keys_length"]]
    assert (zlib.crc32(fpart), zlib.crc32(kpart)) == (region["filter_crc32"],
                                                      region["keys_crc32"])
    got_bloom, got_range = decode_filter_part(fpart)
    assert got_range == KeyRange(len(keys), keys[0], keys[-1]) and got_bloom.check(keys).all()
    assert decode_keys(kpart).to_pylist() == keys
    per_block, from_trailer = block_index(block)
    assert from_trailer is not None and per_block is not None
    assert per_block.keys.to_pylist() == keys
    tail = find_tail_index(BytesSource(data, "input"))
    assert tail is not None and tail.offset == case["tail_block_offset"]
    # the CHECKSUM (§4.12): present and matching, or absent (a block written before it was
    # specified: valid, unverified)
    assert block.verify() is case.get("verified", False)
    layout = parse_layout(data[: stored.trailer_offset + stored.length])
    entry = layout.entry(Section.CHECKSUM)
    assert (entry is not None) is case.get("verified", False)
    if entry is not None:
        c = exp["checksum"]
        body = bytes(section_bytes(data, stored.trailer_offset, entry))
        check = BlockChecksum.decode(body)
        assert (check.algorithm, check.length, check.value) == (
            c["algorithm"], c["covered_length"], c["crc32"])
        head = data[c["covered_from"] : block.content_offset]
        prefix = data[block.content_offset : c["covered_to"]]
        assert avro_checksum(head, prefix) == check and check.encode() == body
        assert verify_block(BlockType.AVRO_DATA, head, data[block.content_offset :
                                                                  stored.trailer_offset
                                                                  + stored.length])
    # the whole path: a probe confirms exactly the keys of the block
    path = tmp_path / case["file_name"]
    path.write_bytes(data)
    res = probe_log_file(str(path), keys + ["k3", "zz"])
    assert res.stored
    assert {k: [b.offset for b in h.confirmed] for k, h in res.hits.items()} == {
        **{k: [exp["offset"]] for k in keys}, "k3": [], "zz": []}


@pytest.mark.parametrize("case_dir", _params("checksum-mismatch"))
def test_checksum_mismatch(case_dir: Path) -> None:
    """A record changed after the checksum was taken still decodes, to another record: the
    CHECKSUM makes it a ChecksumError wherever records are decoded, and a corrupt block that
    readers skip with a warning (§4.12)."""
    from morlog.logformat.errors import ChecksumError, CorruptBlockWarning
    from morlog.readers.slice_blocks import effective_blocks

    case, data = _load(case_dir), _input(case_dir)
    exp = case["expect_error"]
    block = next(LogFileReader(BytesSource(data, "input")).blocks())
    assert block.block_type == BlockType.AVRO_DATA  # the framing is intact
    # without the checksum, the damage is silent: the records decode to other keys
    assert [r[case["key_field"]] for r in decode_block_records(
        block.block_type, block.header, block.content())] == case["damaged_record_keys"]
    for decode in (block.verify, block.to_arrow, block.records, block.record_count,
                   lambda: block.keys(case["key_field"])):
        with pytest.raises(getattr(errors, exp["type"])) as info:
            decode()
        assert info.value.offset == exp["offset"] and info.value.path == "input"
    assert isinstance(info.value, ChecksumError)
    # a probe reads the stored index only (its sections have their own CRCs): no records
    keys, stored = block_index(block)
    assert stored is not None and keys is not None

    class Rules:
        table_version = 6
        as_of = None

    with pytest.warns(CorruptBlockWarning, match=rf"input@{block.offset}: corrupt block"):
        assert effective_blocks([block], None, Rules(), verify=True) == []
    assert effective_blocks([block], None, Rules()) == [block]  # unverified: framing only
