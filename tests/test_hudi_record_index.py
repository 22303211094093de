"""Tagging through Hudi's own record index (spec/mdt.md §14, ``morlog.readers
.hudi_record_index``): the index lookup equals the bloom and range tagger and the snapshot on
the fixtures Hudi wrote, after morlog's writes and after failed writes; the shard hash is
Java's; no data file is opened; a damaged or unknown index is a typed error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from morlog.logformat.blocks import RECORD_KEY_FIELD
from morlog.logformat.constants import BlockType
from morlog.logformat.delete_content import decode_delete_content
from morlog.logformat.errors import ContentError, MorlogError, UnsupportedVersionError
from morlog.logformat.hfile.codec import decode_hfile
from morlog.logformat.java_hash import file_group_indexes
from morlog.readers.logfile import LogFileReader
from morlog.readers.lookup import KeyTagger
from morlog.readers.mdt.read import open_mdt, partition_slices
from morlog.readers.mdt.record_index import RECORD_INDEX, HudiRecordIndex
from morlog.readers.storage import LocalStorage
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig

from .hudi_fixtures import MDT_TABLES, fixture_table
from .test_real_table_writes import _copy, _data, _later, write_three
from .test_record_index_writer import KEEP_RLI, truth
from .test_table_model import _inject_failure

_IDS = [n.split("/")[0] for n in MDT_TABLES]
ABSENT = ["absent-key", "", "zzzz", "\u00e9t\u00e9", "\U0001F600-emoji", "rli-a"]


def _keys(path: Path) -> list[str]:
    return [str(k) for k in Table(str(path)).read(columns=[RECORD_KEY_FIELD])
            .column(RECORD_KEY_FIELD).to_pylist()]


def check(path: Path, extra: list[str] | None = None) -> None:
    """Index lookup == bloom and range tagger == the snapshot's key -> file group."""
    keys = _keys(path) + ABSENT + (extra or [])
    table = Table(str(path))
    by_index = KeyTagger(table).tag(keys)
    assert by_index.stats.record_index_shards > 0, "the record index was not used"
    assert by_index.stats.slices == 0
    plain = KeyTagger(Table(str(path)), use_record_index=False).tag(keys)
    assert plain.stats.record_index_shards == 0
    assert by_index.locations == plain.locations
    want = truth(path)
    assert by_index.locations == [want.get(k) for k in keys]


@pytest.mark.parametrize("name", MDT_TABLES, ids=_IDS)
def test_index_tags_as_the_table_holds(name: str) -> None:
    path = fixture_table(name)
    check(path)


@pytest.mark.parametrize("name", MDT_TABLES, ids=_IDS)
def test_index_with_partitions_given(name: str) -> None:
    """With each key's partition given, a key placed elsewhere is new there (as the bloom
    and range tagger finds it)."""
    path = fixture_table(name)
    want = truth(path)
    keys = sorted(want)
    parts = [want[k][0] for k in keys]
    parts[0] = parts[0] + "-elsewhere"
    keys.append("absent-key")
    parts.append(parts[1])
    a = KeyTagger(Table(str(path))).tag(keys, parts)
    b = KeyTagger(Table(str(path)), use_record_index=False).tag(keys, parts)
    assert a.stats.record_index_shards > 0
    assert a.locations == b.locations
    assert a.locations[0] is None and a.locations[-1] is None
    assert a.locations[1:-1] == [want[k] for k in keys[1:-1]]


@pytest.mark.parametrize("name", MDT_TABLES, ids=_IDS)
def test_every_fixture_entry_lives_in_the_shard_the_hash_names(name: str) -> None:
    """Every key in every record_index file Hudi wrote (base files and log blocks, counted or
    not) hashes to its file group's position."""
    path = fixture_table(name)
    view = open_mdt(LocalStorage(), str(path))
    shards = partition_slices(view, RECORD_INDEX)
    directory = Path(view.path) / RECORD_INDEX
    seen = 0
    for pos, s in enumerate(shards):
        keys: list[str] = []
        for f in sorted(directory.iterdir()):
            if s.file_id not in f.name:
                continue
            if f.name.endswith(".hfile"):
                keys += [k.decode() for k in decode_hfile(f.read_bytes()).keys]
            elif ".log." in f.name:
                with LogFileReader(str(f)) as r:
                    for b in r.blocks():
                        if b.block_type == BlockType.HFILE_DATA:
                            keys += [k.decode() for k in decode_hfile(b.content()).keys]
                        elif b.block_type == BlockType.DELETE:
                            keys += [str(x.record_key) for x in
                                     decode_delete_content(b.content()).records]
        if keys:
            got = file_group_indexes(pa.array(keys, pa.string()), len(shards))
            assert set(got.tolist()) == {pos}, s.file_id
        seen += len(keys)
    assert seen > 0


@pytest.mark.parametrize("name", MDT_TABLES, ids=_IDS)
def test_no_data_file_is_opened(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = fixture_table(name)
    opened: list[str] = []
    real_source, real_read = LocalStorage.source, LocalStorage.read

    def source(self: LocalStorage, p: str) -> Any:
        opened.append(p)
        return real_source(self, p)

    def read(self: LocalStorage, p: str) -> bytes:
        opened.append(p)
        return real_read(self, p)

    keys = _keys(path) + ABSENT
    monkeypatch.setattr(LocalStorage, "source", source)
    monkeypatch.setattr(LocalStorage, "read", read)
    r = KeyTagger(Table(str(path))).tag(keys)
    assert sum(loc is not None for loc in r.locations) == len(keys) - len(ABSENT)
    hoodie = str(path / ".hoodie")
    outside = [p for p in opened if not p.startswith(hoodie)]
    assert outside == [], "data files were opened"
    assert any("record_index" in p for p in opened)
    # the bloom and range path opens data files (the counter sees them)
    opened.clear()
    KeyTagger(Table(str(path)), use_record_index=False).tag(keys)
    assert [p for p in opened if not p.startswith(hoodie)]


@pytest.mark.parametrize("name", MDT_TABLES, ids=_IDS)
def test_only_shards_with_keys_are_read(name: str) -> None:
    path = fixture_table(name)
    idx = HudiRecordIndex(Table(str(path)))
    keys = _keys(path)[:1]
    r = idx.lookup(keys)
    assert r.shards == 1
    assert r.shard_ids == [idx.shards[int(idx.shard_of(pa.array(keys))[0])].file_id]
    assert idx.lookup([]).shards == 0


@pytest.mark.parametrize("name", MDT_TABLES, ids=_IDS)
def test_time_travel_uses_the_bloom_and_range_path(name: str) -> None:
    path = fixture_table(name)
    table = Table(str(path))
    last = table.timeline.completed()[-1].requested
    tagger = KeyTagger(table, as_of=last)
    assert tagger.record_index is None
    assert tagger.tag(_keys(path)).stats.record_index_shards == 0


@pytest.mark.parametrize("name", MDT_TABLES, ids=_IDS)
def test_after_morlog_writes(tmp_path: Path, name: str) -> None:
    path = _copy(fixture_table(name), tmp_path)
    t = MorTable(str(path), WriteConfig(hoodie_options=KEEP_RLI))
    write_three(t, path)
    check(path)
    data = _data(path)
    key = t.key_field
    more = data.slice(0, 2)
    typ = more.schema.field(key).type
    more = more.set_column(more.schema.get_field_index(key), key,
                           pa.array(["rli-a", "rli-b"], typ) if pa.types.is_string(typ)
                           else pa.array([7_000_001, 7_000_002], typ))
    r = t.upsert(pa.concat_tables([_later(data.slice(2, 1), t.ordering_field), more]))
    assert r.inserts == 2 and r.updates == 1
    check(path)
    d = _data(path)
    t.delete(d.slice(d.num_rows - 2, 2).select(list(t.keygen.required_columns)))
    check(path)


@pytest.mark.parametrize("name", MDT_TABLES, ids=_IDS)
@pytest.mark.parametrize("where", ["inflight", "log"])
def test_after_a_failed_write(tmp_path: Path, name: str, where: str,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    path = _copy(fixture_table(name), tmp_path)
    t = MorTable(str(path), WriteConfig(hoodie_options=KEEP_RLI))
    data = _data(path)
    key = t.key_field
    new = data.slice(0, 1)
    typ = new.schema.field(key).type
    new = new.set_column(new.schema.get_field_index(key), key,
                         pa.array(["rli-fail"], typ) if pa.types.is_string(typ)
                         else pa.array([7_000_009], typ))
    _inject_failure(monkeypatch, where, persistent=False)
    try:
        t.upsert(pa.concat_tables([new, _later(data.slice(1, 1), t.ordering_field)]))
    except MorlogError:
        pass
    monkeypatch.undo()
    check(path, ["rli-fail"])
    MorTable(str(path), WriteConfig(hoodie_options=KEEP_RLI)).upsert(new)
    check(path, ["rli-fail"])


@pytest.mark.parametrize("name", MDT_TABLES, ids=_IDS)
def test_mdt_commit_of_a_data_instant_left_pending_does_not_count(tmp_path: Path,
                                                                  name: str) -> None:
    """A crash after the MDT delta commit completed and before the data commit did: the data
    instant stays inflight; its record_index blocks do not count
    (``getValidInstantTimestamps``), as its data blocks do not."""
    path = _copy(fixture_table(name), tmp_path)
    t = MorTable(str(path), WriteConfig(hoodie_options=KEEP_RLI))
    data = _data(path)
    key = t.key_field
    new = data.slice(0, 1)
    typ = new.schema.field(key).type
    new = new.set_column(new.schema.get_field_index(key), key,
                         pa.array(["rli-pending"], typ) if pa.types.is_string(typ)
                         else pa.array([7_000_010], typ))
    gone = data.slice(1, 1).select(list(t.keygen.required_columns))
    t.upsert(new)
    t.delete(gone)
    timeline = path / ".hoodie" / "timeline"
    last = sorted(timeline.glob("*_*.deltacommit"))[-2:]  # the upsert's and the delete's
    for f in last:
        f.unlink()  # back to inflight on the data timeline only
    mdt_done = {f.name.split("_")[0] for f in
                (path / ".hoodie" / "metadata" / ".hoodie" / "timeline").glob("*_*.deltacommit")}
    assert {f.name.split("_")[0] for f in last} <= mdt_done
    table = Table(str(path))
    assert {i.requested for i in table.timeline.pending()} >= {f.name.split("_")[0] for f in last}
    check(path, ["rli-pending"])
    assert KeyTagger(table).tag(["rli-pending"]).locations == [None]


def _java_hash_reference(s: str) -> int:
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _reference_shard(s: str, n: int) -> int:
    """``Math.abs(Math.abs(h) % n)`` with Java's int semantics, written out."""
    h = _java_hash_reference(s)
    a = h if h == -(1 << 31) else abs(h)  # Math.abs(Integer.MIN_VALUE) is MIN_VALUE
    r = abs(a) % n
    r = -r if a < 0 else r  # Java's % takes the dividend's sign
    return abs(r)


_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)


@given(st.lists(_TEXT, max_size=30), st.integers(1, 1000))
@settings(max_examples=200, deadline=None)
def test_shard_hash_is_javas(keys: list[str], n: int) -> None:
    got = file_group_indexes(pa.array(keys, pa.string()), n).tolist()
    assert got == [_reference_shard(k, n) for k in keys]


def test_shard_hash_edges() -> None:
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE; beyond the BMP: surrogate pairs
    keys = ["polygenelubricants", "", "a", "\U0001F600", "x\U00010000y", "\uffff"]
    assert _java_hash_reference("polygenelubricants") == -(1 << 31)
    for n in (1, 3, 10, 7919):
        assert file_group_indexes(pa.array(keys), n).tolist() == [
            _reference_shard(k, n) for k in keys]


def _partitioned(path: Path) -> None:
    defs = path / ".hoodie" / ".index_defs" / "index.json"
    doc = json.loads(defs.read_text())
    doc["indexDefinitions"].setdefault("record_index", {  # v8 (Hudi 1.0) lists none
        "indexName": "record_index", "indexType": "record_index", "indexFunction": "",
        "sourceFields": [], "indexOptions": {}, "version": "V1"})
    doc["indexDefinitions"]["record_index"]["indexOptions"]["isPartitioned"] = "true"
    defs.write_text(json.dumps(doc))


@pytest.mark.parametrize("name", MDT_TABLES, ids=_IDS)
def test_partitioned_record_index_is_refused_and_the_tagger_falls_back(
        tmp_path: Path, name: str) -> None:
    path = _copy(fixture_table(name), tmp_path)
    _partitioned(path)
    with pytest.raises(UnsupportedVersionError, match="partitioned"):
        HudiRecordIndex(Table(str(path)))
    r = KeyTagger(Table(str(path))).tag(_keys(path))
    assert r.stats.record_index_shards == 0
    want = truth(path)
    assert r.locations == [want[k] for k in _keys(path)]


@pytest.mark.parametrize("name", MDT_TABLES, ids=_IDS)
def test_a_missing_shard_is_a_content_error(tmp_path: Path, name: str) -> None:
    path = _copy(fixture_table(name), tmp_path)
    d = path / ".hoodie" / "metadata" / RECORD_INDEX
    for f in d.iterdir():
        if "record-index-0003-0" in f.name:
            f.unlink()
    with pytest.raises(ContentError, match="shard is missing") as e:
        KeyTagger(Table(str(path))).tag(_keys(path))
    assert e.value.path == str(d)


@pytest.mark.parametrize("name", MDT_TABLES, ids=_IDS)
def test_a_damaged_shard_is_a_content_error_naming_it(tmp_path: Path, name: str) -> None:
    path = _copy(fixture_table(name), tmp_path)
    d = path / ".hoodie" / "metadata" / RECORD_INDEX
    table = Table(str(path))
    idx = HudiRecordIndex(table)
    keys = _keys(path)
    shard = idx.shards[int(idx.shard_of(pa.array(keys[:1]))[0])]
    victim = shard.base or shard.logs[-1]
    data = Path(victim).read_bytes()
    if shard.base is not None:
        Path(victim).write_bytes(data[:100] + bytes(200) + data[300:])
    else:
        shutil.copy(victim, victim + ".keep")
        Path(victim).write_bytes(data[:-60] + bytes(60))
    with pytest.raises(ContentError) as e:
        KeyTagger(Table(str(path))).tag(keys[:1])
    assert str(d) in str(e.value.path)
