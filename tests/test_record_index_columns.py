"""The ``record_index`` partition column-wise (``morlog.logformat.hfile.record_index``, the
keeper's :meth:`~morlog.writers.mdt.keeper.RecordIndexKeeper.entries`, the lookup's
:func:`~morlog.logformat.hfile.record_index.record_index_locations`) against the per-record
path, which stays the reference: the same bytes, the same errors, the same locations."""

from __future__ import annotations

import io
import uuid
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.avro_content import parse_schema
from morlog.logformat.blocks import delete_block
from morlog.logformat.delete_content import DeleteRecord, OrderingValue, encode_delete_columns
from morlog.logformat.errors import ContentError, MorlogError, UsageError
from morlog.logformat.hfile.codec import HBASE, HUDI_NATIVE, decode_hfile
from morlog.logformat.hfile.content import encode_hfile_records
from morlog.logformat.hfile.record_index import (
    RecordIndexEntries,
    encode_record_index_hfile,
    record_index_locations,
)
from morlog.logformat.mdt_records import (
    metadata_record_schema_json,
    record_index_file_id,
    record_index_info,
)
from morlog.writers.client import MorTable
from morlog.writers.core.commit import RecordChanges
from morlog.writers.mdt import writer as mdt_writer
from morlog.writers.mdt.keeper import RECORD_INDEX, CommitContext, RecordIndexKeeper
from morlog.writers.mdt.writer import MetadataTable
from morlog.writers.options import WriteConfig

from .hudi_fixtures import MDT_TABLES, fixture_table
from .test_real_table_writes import _copy

KEEP_RLI = {"hoodie.metadata.index.column.stats.enable": "false",
            "hoodie.metadata.index.partition.stats.enable": "false",
            "hoodie.metadata.index.secondary.enable": "false"}
_UUID = "036ded81-9ed4-479f-bcea-7145dfa0079b"


def _mdt(path: Path) -> MetadataTable:
    t = MorTable(str(path), WriteConfig(hoodie_options=KEEP_RLI, fsync=False))
    return MetadataTable(t.store, t.location, mode=t.mode, fsync=False)


def _schemas() -> list[tuple[str, str]]:
    """(name, SCHEMA text) of both fixtures' record_index blocks, and morlog's own."""
    out = [("morlog", metadata_record_schema_json())]
    for name in MDT_TABLES:
        try:
            path = fixture_table(name)
        except pytest.skip.Exception:
            continue
        out.append((name.split("/")[0], _mdt(path).block_schema(RECORD_INDEX)))
    return out


_SCHEMAS = _schemas()

#: file ids of every encoding: Hudi's ``<uuid>-<n>`` (encoding 0), a bare UUID (index -1),
#: an upper-case UUID (encoding 0, read back lower-case), and strings that only look alike
#: (encoding 1: too many digits, not digits, a UUID missing a character, MDT file ids)
_FILE_IDS = st.one_of(
    st.builds(lambda u, n: f"{u}-{n}", st.uuids().map(str), st.integers(0, 999_999_999)),
    st.uuids().map(str),
    st.uuids().map(lambda u: str(u).upper() + "-0"),
    st.sampled_from([f"{_UUID}-1234567890", f"{_UUID}-x", f"{_UUID}-", _UUID[1:] + "-0",
                     "files-0000-0", "record-index-0003-0", "", "-0", f"{_UUID}--1",
                     f"{_UUID}-0-0", f"{_UUID}-٣", f"{_UUID}-²"]),
    st.text(max_size=40),
)
_KEYS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


def _entries(rows: list[tuple[str, str, str]], millis: int) -> RecordIndexEntries:
    return RecordIndexEntries(pa.array([r[0] for r in rows], pa.string()),
                              pa.array([r[1] for r in rows], pa.string()),
                              pa.array([r[2] for r in rows], pa.string()), millis)


def _outcome(fn: Any) -> Any:
    try:
        return ("ok", fn())
    except MorlogError as exc:
        return (type(exc).__name__, str(exc))


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(_KEYS, st.sampled_from(["", "region=eu", "a/b", "é"]),
                               _FILE_IDS), max_size=60),
       millis=st.integers(-(2**40), 2**42), schema=st.sampled_from(_SCHEMAS),
       style=st.sampled_from([HUDI_NATIVE, HBASE]), block_size=st.sampled_from([64, 700, 2**20]))
def test_hfile_bytes_equal_per_record_path(rows: list[tuple[str, str, str]], millis: int,
                                           schema: tuple[str, str], style: Any,
                                           block_size: int) -> None:
    """Random keys (Unicode, beyond U+FFFF, duplicates), file ids of every encoding, both
    fixtures' schemas, both writer styles, one or many blocks: the column-wise HFile is the
    per-record path's, byte for byte; duplicate keys fail alike."""
    entries = _entries(rows, millis)
    text = schema[1]

    def columnwise() -> bytes:
        return encode_record_index_hfile(entries, text, style=style, block_size=block_size,
                                         create_time_ms=1234)

    def per_record() -> bytes:
        return encode_hfile_records(entries.records(), text, style=style,
                                    block_size=block_size, create_time_ms=1234)

    try:
        want = _outcome(per_record)
    except ValueError:  # a file id whose tail is a non-ASCII digit: the reference's own
        with pytest.raises(ValueError):
            columnwise()
        return
    assert _outcome(columnwise) == want


def test_astral_keys_sort_by_utf8_bytes() -> None:
    """U+FFFF and U+1F600: UTF-8 puts the astral key last, as the per-record path does (Java
    String order would put it first; spec/mdt.md §2 and the content module's docstring)."""
    rows = [("\U0001F600", "p", _UUID + "-0"), ("\uffff", "p", _UUID + "-0"),
            ("a", "p", "raw-id")]
    got = encode_record_index_hfile(_entries(rows, 5), metadata_record_schema_json())
    assert got == encode_hfile_records(_entries(rows, 5).records(),
                                       metadata_record_schema_json())
    assert decode_hfile(got).keys == [b"a", "\uffff".encode(), "\U0001F600".encode()]


def _reference_locations(values: list[bytes], keys: list[bytes], schema: str
                         ) -> list[tuple[str, str]]:
    """The lookup's decoding before the column-wise path: fastavro per value."""
    parsed = parse_schema(schema)
    out = []
    for key, value in zip(keys, values, strict=True):
        buf = io.BytesIO(value)
        try:
            rec = fastavro.schemaless_reader(buf, parsed, None)
        except Exception as exc:
            raise ContentError(f"record_index record does not decode: {exc}") from None
        info = rec.get("recordIndexMetadata") if isinstance(rec, dict) else None
        if not isinstance(info, dict):
            raise ContentError("record_index record without recordIndexMetadata", actual=key)
        try:
            out.append((str(info["partitionName"]), record_index_file_id(info)))
        except (KeyError, TypeError, ValueError) as exc:
            raise ContentError(f"record_index entry does not name a file: {exc}") from None
    return out


def _kind(fn: Any) -> Any:
    try:
        return fn()
    except ContentError as exc:
        return ContentError, exc.message.split(":")[0]


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.tuples(_KEYS, st.sampled_from(["", "p1", "é"]),
                               st.sampled_from([_UUID + "-0", _UUID, "raw", _UUID + "-7"])),
                     min_size=1, max_size=30, unique_by=lambda r: r[0]),
       schema=st.sampled_from(_SCHEMAS), flips=st.lists(
           st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 255)),
           max_size=3), cut=st.none() | st.integers(0, 10**6))
def test_lookup_locations_equal_fastavro(rows: list[tuple[str, str, str]],
                                         schema: tuple[str, str],
                                         flips: list[tuple[int, int, int]],
                                         cut: int | None) -> None:
    """Hits' values decoded column-wise equal fastavro's per value, also on flipped or cut
    bytes, where both raise ContentError (the same message)."""
    entries = _entries(rows, 1772922372542)
    hf = decode_hfile(encode_record_index_hfile(entries, schema[1]))
    values = list(hf.values)
    for row, at, byte in flips:
        v = bytearray(values[row % len(values)])
        if v:
            v[at % len(v)] = byte
        values[row % len(values)] = bytes(v)
    if cut is not None:
        v = values[cut % len(values)]
        values[cut % len(values)] = v[: cut % (len(v) + 1)]
    want = _kind(lambda: _reference_locations(values, hf.keys, schema[1]))

    def columnwise() -> list[tuple[str, str]]:
        p, f = record_index_locations(pa.array(values, pa.binary()),
                                      pa.array(hf.keys, pa.binary()), schema[1])
        return list(zip(p.to_pylist(), f.to_pylist(), strict=True))

    assert _kind(columnwise) == want
    if not flips and cut is None:
        expect = {k: (p, record_index_file_id(record_index_info(p, f, 0))) for k, p, f in rows}
        assert columnwise() == [expect[k.decode()] for k in hf.keys]


def test_lookup_without_schema_or_with_a_bad_one() -> None:
    v = pa.array([b"\x00"], pa.binary())
    with pytest.raises(ContentError, match="no schema"):
        record_index_locations(v, v, "")
    with pytest.raises(ContentError, match="does not parse"):
        record_index_locations(v, v, "{not json")


class _Fake:
    """What the keeper asks of the metadata table."""

    path = "mdt"
    utc = True


_CHANGE_KEYS = st.sampled_from(["a", "b", "c", "é", "\U0001F600", "k1", "k2"])
_LOCS = st.sampled_from([("p", _UUID + "-0"), ("p", _UUID + "-1"), ("q", "raw")])


@settings(max_examples=200, deadline=None)
@given(ins=st.lists(st.tuples(_CHANGE_KEYS, _LOCS), max_size=12),
       dels=st.lists(st.tuples(_CHANGE_KEYS, st.sampled_from(["p", "q"])), max_size=12))
def test_keeper_entries_equal_records(ins: list[tuple[str, tuple[str, str]]],
                                      dels: list[tuple[str, str]]) -> None:
    """``reduceByKeys`` column-wise: the same entries, the same deleted keys in the same
    order, the same refusal of a key inserted at two locations (same key and pair named)."""
    changes = RecordChanges([(k, p, f) for k, (p, f) in ins], dels)
    ctx = CommitContext("20260307162612542", {}, {}, lambda: changes)
    keeper = RecordIndexKeeper()
    mdt: Any = _Fake()

    def per_record() -> Any:
        recs, gone = keeper.records(mdt, ctx)
        return sorted(recs, key=lambda r: r["key"]), gone

    def columnwise() -> Any:
        entries, gone = keeper.entries(mdt, ctx)
        return sorted(entries.records(), key=lambda r: r["key"]), gone.to_pylist()

    want = _outcome(per_record)
    got = _outcome(columnwise)
    assert got == want
    if want[0] != "ok":
        with pytest.raises(UsageError) as a:
            per_record()
        with pytest.raises(UsageError) as b:
            columnwise()
        assert a.value.actual == b.value.actual


def test_rewrite_and_unknown_changes() -> None:
    keeper = RecordIndexKeeper()
    mdt: Any = _Fake()
    entries, gone = keeper.entries(mdt, CommitContext("20260307162612542", {}, {},
                                                      rewrite=True))
    assert (len(entries), len(gone)) == (0, 0)
    with pytest.raises(UsageError, match="key changes"):
        keeper.entries(mdt, CommitContext("20260307162612542", {"p": {"f": 1}}, {}))


def test_delete_block_column_wise_equals_records() -> None:
    """The MDT's delete block of record_index keys, column-wise: Hudi's natural order."""
    keys = ["k", "é", "\U0001F600", ""]
    want = delete_block([DeleteRecord(k, RECORD_INDEX, OrderingValue.natural()) for k in keys],
                        "20260307162612542")
    got = delete_block(encode_delete_columns(pa.array(keys), pa.array([RECORD_INDEX] * 4)),
                       "20260307162612542")
    assert got == want


def _record_index_files(path: Path) -> dict[str, bytes]:
    d = path / ".hoodie" / "metadata" / RECORD_INDEX
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


@pytest.mark.parametrize("name", MDT_TABLES, ids=lambda n: n.split("/")[0])
def test_commit_writes_the_per_record_paths_bytes(tmp_path: Path, name: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit with inserts (keys in many shards, Hudi-style and other file ids, a key
    inserted twice at one place) and deletes (repeated, one of an inserted key) writes the
    same record_index files, byte for byte, through the column-wise path as through the
    per-record one (the keeper's ``entries`` switched off), on table versions 8 and 9."""
    fixture = fixture_table(name)
    style = mdt_writer._style
    monkeypatch.setattr(mdt_writer, "_style", lambda v: (style(v)[0], 1_772_922_372_542))
    ins = [(f"key-{i}" + "\u00e9\U0001F600"[: i % 3], f"p{i % 3}",
            f"{uuid.UUID(int=i * 7919)}-{i % 4}" if i % 5 else f"raw-{i % 2}")
           for i in range(400)]
    ins.append(ins[0])
    dels = [(f"gone-{i % 50}", "p0") for i in range(120)] + [(ins[3][0], "p1")]
    changes = RecordChanges(ins, dels)
    files = {}
    for label, columnwise in (("columns", True), ("records", False)):
        path = _copy(fixture, tmp_path / label)
        if not columnwise:
            monkeypatch.setattr(RecordIndexKeeper, "entries", lambda self, mdt, ctx: None)
        _mdt(path).write_files_commit("20300101000000000", {}, changes=changes)
        files[label] = _record_index_files(path)
    assert files["columns"] == files["records"]
    assert any("20300101000000000" in n for n in files["columns"])


@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 3000))
def test_large_entries_many_blocks(n: int) -> None:
    """Thousands of keys over several HFile blocks, both styles."""
    rows = [(f"k{i * 7919 % n:06d}", "p", f"{_UUID}-{i % 3}") for i in range(n)]
    for style in (HUDI_NATIVE, HBASE):
        e = _entries(rows, 1)
        assert (encode_record_index_hfile(e, metadata_record_schema_json(), style=style,
                                          block_size=4096)
                == encode_hfile_records(e.records(), metadata_record_schema_json(),
                                        style=style, block_size=4096))
