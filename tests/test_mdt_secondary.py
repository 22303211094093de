"""The metadata table's secondary index partitions kept true by every commit (spec/mdt.md §13).

The judge is the table itself: after each write, the secondary index merged from the
metadata table (Hudi's records and morlog's) must equal the (value, record key) pairs of the
table's rows, with the values rendered by this file's own reference (strings as they are,
dates as epoch days), independent of the module's code. Hudi-written fixtures first prove
the key format, the file group mapping and the reader on Hudi's own bytes.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.blocks import RECORD_KEY_FIELD, delete_block
from morlog.logformat.constants import BlockType, HeaderKey
from morlog.logformat.delete_content import decode_delete_content
from morlog.logformat.errors import MorlogError, UnsupportedSettingError
from morlog.logformat.framing import decode_blocks
from morlog.logformat.hfile.codec import decode_hfile
from morlog.logformat.hfile.content import decode_hfile_records
from morlog.logformat.naming import DEFAULT_WRITE_TOKEN, BaseFileName, LogFileName
from morlog.logformat.table_files import PARTITION_METADATA_FILE, format_partition_metadata
from morlog.logformat.timeline_meta import write_stat
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.core.logwriter import LogFileWriter
from morlog.writers.core.properties import update_properties
from morlog.writers.core.timeline import TimelineWriter
from morlog.writers.mdt.keeper import key_to_file_group_index
from morlog.writers.mdt.plan import PARTITIONS_PROPERTY
from morlog.writers.mdt.secondary import (
    SecondaryIndexKeeper,
    decode_keys,
    file_group_indexes,
    index_changes,
    index_keys,
    java_string_hashes,
    secondary_index,
)
from morlog.writers.mdt.writer import MetadataTable, metadata_location
from morlog.writers.options import WriteConfig

from .hudi_fixtures import MDT_TABLES, fixture_table
from .test_real_table_writes import _copy, _data, _hudi_rs, _later, _rows

#: column_stats and partition_stats dropped (Hudi's switches); files, record_index and the
#: secondary indexes are kept
KEEP = {"hoodie.metadata.index.column.stats.enable": "false",
        "hoodie.metadata.index.partition.stats.enable": "false"}
V8, V9 = MDT_TABLES
#: the fixtures' secondary indexes: name -> column (their .hoodie/.index_defs/index.json)
INDEXES = {V8: {"rider_idx": "rider"},
           V9: {"merchant_idx": "merchant_name", "txn_date_idx": "txn_date"}}
_EPOCH = dt.date(1970, 1, 1)


def _mdt(path: Path) -> MetadataTable:
    t = MorTable(str(path), WriteConfig(hoodie_options=KEEP))
    return MetadataTable(t.store, t.location, mode=t.mode)


def stored(path: Path, name: str) -> list[tuple[str | None, str]]:
    """The index as the metadata table holds it, merged."""
    rows = secondary_index(_mdt(path), name).to_pylist()
    return sorted(((r["secondary_key"], r["record_key"]) for r in rows), key=_order)


def _order(pair: tuple[str | None, str]) -> tuple[bool, str, str]:
    return (pair[0] is not None, pair[0] or "", pair[1])


def _text(v: Any) -> str | None:
    """Hudi's secondary key text of a value (the reference of this file): strings as they
    are, integers in decimal, dates as epoch days (Hudi 1.1: Spark's internal date)."""
    if v is None:
        return None
    if isinstance(v, dt.date):
        return str((v - _EPOCH).days)
    return str(v)


def recomputed(path: Path, column: str) -> list[tuple[str | None, str]]:
    """The (value, record key) pairs of the table's rows; table version 8 (index V1, Hudi
    1.0) indexes no null value."""
    table = Table(str(path))
    t = table.read(columns=[RECORD_KEY_FIELD, column])
    if not t.num_rows:
        return []
    pairs = [(_text(v), k) for v, k in zip(t.column(column).to_pylist(),
                                          t.column(RECORD_KEY_FIELD).to_pylist(), strict=True)]
    if table.version == 8:
        pairs = [p for p in pairs if p[0] is not None]
    return sorted(pairs, key=_order)


def _check(path: Path, indexes: dict[str, str]) -> None:
    for name, column in indexes.items():
        assert stored(path, name) == recomputed(path, column), name


def _si_files(path: Path, name: str, instant: str) -> list[Path]:
    d = path / ".hoodie" / "metadata" / f"secondary_index_{name}"
    return sorted(p for p in d.iterdir() if LogFileName.matches(p.name)
                  and LogFileName.parse(p.name).instant == instant)


def _blocks(files: list[Path]) -> tuple[list[str], list[tuple[str, str]]]:
    """(entry keys, (deleted key, partition path)) of morlog's secondary index logs."""
    entries: list[str] = []
    deletes: list[tuple[str, str]] = []
    for f in files:
        for fr in decode_blocks(f.read_bytes()):
            if fr.block_type == BlockType.HFILE_DATA:
                recs = decode_hfile_records(fr.content, fr.header.get(HeaderKey.SCHEMA) or "")
                assert all(r["type"] == 7 and r["SecondaryIndexMetadata"] == {"isDeleted": False}
                           for r in recs)
                entries += [r["key"] for r in recs]
            elif fr.block_type == BlockType.DELETE:
                deletes += [(str(r.record_key), str(r.partition_path))
                            for r in decode_delete_content(fr.content).records]
    return entries, deletes


# --- Hudi's own bytes -------------------------------------------------------------------------


@pytest.mark.parametrize("name", MDT_TABLES, ids=lambda n: n.split("/")[0])
def test_fixture_index_matches_its_table(name: str) -> None:
    """The merged index Hudi wrote (base files and the delete logs of later commits) equals
    the table's rows: the key format, the null form and the date text on Hudi's bytes."""
    _check(fixture_table(name), INDEXES[name])


@pytest.mark.parametrize("name", MDT_TABLES, ids=lambda n: n.split("/")[0])
def test_fixture_keys_encode_and_map_as_hudis(name: str) -> None:
    """Every key Hudi wrote re-encodes from its decoded (value, record key) to the same
    string, and lies in the file group the module maps it to: the whole key for table
    version 8 (V1), only ``<escaped value>$`` for 9 (V2)."""
    path = fixture_table(name)
    version = 1 if name == V8 else 2
    for index in INDEXES[name]:
        d = path / ".hoodie" / "metadata" / f"secondary_index_{index}"
        fids = sorted({(LogFileName.parse(p.name).file_id if LogFileName.matches(p.name)
                        else BaseFileName.parse(p.name).file_id) for p in d.iterdir()
                       if LogFileName.matches(p.name) or BaseFileName.matches(p.name)})
        assert len(fids) == 10
        keys: list[str] = []
        groups: list[int] = []
        for p in d.iterdir():
            if BaseFileName.matches(p.name):
                data = p.read_bytes()
                schema = decode_hfile(data).file_info[b"schema"].decode()
                found = [r["key"] for r in decode_hfile_records(data, schema)]
                fid = BaseFileName.parse(p.name).file_id
            elif LogFileName.matches(p.name):
                found = [k for k, _ in _blocks([p])[1]] + _blocks([p])[0]
                fid = LogFileName.parse(p.name).file_id
            else:
                continue
            keys += found
            groups += [fids.index(fid)] * len(found)
        assert keys
        arr = pa.array(keys, pa.string())
        decoded = decode_keys(arr, version)
        again = index_keys(decoded.column("secondary_key").combine_chunks(),
                           decoded.column("record_key").combine_chunks(), version)
        assert again.to_pylist() == keys
        mapped = file_group_indexes(arr, decoded.column("secondary_key").combine_chunks(), 10,
                                    version)
        assert mapped.tolist() == groups
        keeper = SecondaryIndexKeeper(f"secondary_index_{index}")
        keeper._version = version  # noqa: SLF001 - the scalar path without a commit
        assert [keeper.file_group_index(k, 10) for k in keys] == groups


# --- writes on copies of the fixtures ----------------------------------------------------------


def _with(batch: pa.Table, column: str, values: list[Any]) -> pa.Table:
    i = batch.schema.get_field_index(column)
    return batch.set_column(i, column, pa.array(values, batch.schema.field(column).type))


def _earlier(batch: pa.Table, ordering: str) -> pa.Table:
    i = batch.schema.get_field_index(ordering)
    col = batch.column(ordering)
    return batch.set_column(i, ordering, pc.subtract(col, pa.scalar(10**6, col.type)))


@pytest.mark.parametrize("name", MDT_TABLES, ids=lambda n: n.split("/")[0])
def test_writes_keep_secondary_indexes_true(tmp_path: Path, name: str) -> None:
    path = _copy(fixture_table(name), tmp_path)
    indexes = INDEXES[name]
    column = next(iter(indexes.values()))
    t = MorTable(str(path), WriteConfig(hoodie_options=KEEP))
    key, ordering = t.key_field, t.ordering_field
    assert ordering is not None
    data = _data(path)
    expected = _rows(data, key)
    # 1. updates that change the indexed value (one of them to a value with '$' and '\')
    upd = _later(_with(data.slice(0, 2), column, ["moved-1", "a$b\\c"]), ordering)
    if name == V9:
        upd = _with(upd, "txn_date", [dt.date(2030, 1, 2), None])
    r = t.upsert(upd)
    assert r.updates == 2
    expected.update(_rows(upd, key))
    _check(path, indexes)
    entries, deletes = _blocks(_si_files(path, next(iter(indexes)), r.instant))
    assert len(entries) == 2 and len(deletes) == 2
    assert "a\\$b\\\\c$" + str(upd.column(key)[1].as_py()) in entries
    assert {p for _, p in deletes} == {f"secondary_index_{next(iter(indexes))}"}
    # 2. an update that keeps the value writes nothing into the index (as Hudi's fixtures)
    same = _later(_data(path).slice(2, 1), ordering)
    r = t.upsert(same)
    assert r.updates == 1
    expected.update(_rows(same, key))
    assert all(_si_files(path, n, r.instant) == [] for n in indexes)
    _check(path, indexes)
    # 3. an update with an older ordering value loses the merge: nothing changes
    before = {n: stored(path, n) for n in indexes}
    old = _earlier(_with(_data(path).slice(3, 1), column, ["never-seen"]), ordering)
    r = t.upsert(old)
    assert {n: stored(path, n) for n in indexes} == before
    assert all(_si_files(path, n, r.instant) == [] for n in indexes)
    _check(path, indexes)
    # 4. inserts: a new key with a value, one with a null value (not indexed in V1)
    ins = _later(_with(data.slice(4, 2), key, ["si-new-1", "si-new-2"]), ordering)
    ins = _with(ins, column, ["fresh", None])
    assert t.insert(ins).inserts == 2
    expected.update(_rows(ins, key))
    _check(path, indexes)
    # 5. a value set to null (V1: its entry goes; V2: a NUL entry replaces it)
    nul = _later(_with(_data(path).slice(0, 1), column, [None]), ordering)
    t.upsert(nul)
    expected.update(_rows(nul, key))
    _check(path, indexes)
    # 6. deletes
    gone = _data(path).slice(1, 2)
    assert t.delete(gone.select(list(t.keygen.required_columns))).deletes == 2
    for k in _rows(gone, key):
        expected.pop(k)
    _check(path, indexes)
    # 7. insert_overwrite of one partition: the replaced groups' entries leave
    over = _later(_with(_data(path).slice(0, 1), column, ["overwritten"]), ordering)
    t.insert_overwrite(over)
    part = t.partition_field
    assert part is not None
    expected = {k: v for k, v in expected.items() if v[part] != over.column(part)[0].as_py()}
    expected.update(_rows(over, key))
    _check(path, indexes)
    assert _rows(_data(path), key) == expected
    # 8. delete_partition: a replace commit writing no file; the partition's entries leave
    other = next(v[part] for v in expected.values()
                 if v[part] != over.column(part)[0].as_py())
    table_part = next(s.partition for s in Table(str(path)).file_slices()
                      if s.partition.endswith(f"={other}") or s.partition == other)
    t.delete_partitions([table_part])
    expected = {k: v for k, v in expected.items() if v[part] != other}
    _check(path, indexes)
    assert _rows(_data(path), key) == expected
    view = Table(str(path))
    assert view.timeline.pending() == []
    assert MetadataTable(t.store, t.location, mode=t.mode).timeline().pending() == []
    assert _rows(_hudi_rs(path), key) == expected


@pytest.mark.parametrize("name", MDT_TABLES, ids=lambda n: n.split("/")[0])
def test_failed_commit_leaves_index_as_before(tmp_path: Path, name: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path = _copy(fixture_table(name), tmp_path)
    indexes = INDEXES[name]
    column = next(iter(indexes.values()))
    t = MorTable(str(path), WriteConfig(hoodie_options=KEEP))
    before = {n: stored(path, n) for n in indexes}
    rows_before = _rows(_data(path), t.key_field)
    upd = _later(_with(_data(path).slice(0, 1), column, ["crash-value"]), t.ordering_field)
    from morlog.writers.mdt import writer as mdt_writer

    real = mdt_writer.MetadataTable.write_commit

    def boom(self: MetadataTable, *a: Any, **k: Any) -> None:
        real(self, *a, **k)
        raise OSError("crash after the MDT commit")

    monkeypatch.setattr(mdt_writer.MetadataTable, "write_commit", boom)
    with pytest.raises((OSError, MorlogError)):
        t.upsert(upd)
    monkeypatch.undo()
    assert {n: stored(path, n) for n in indexes} == before
    assert _rows(_data(path), t.key_field) == rows_before
    assert Table(str(path)).timeline.pending() == []
    _check(path, indexes)
    t.upsert(upd)  # the next writer goes on
    _check(path, indexes)
    assert ("crash-value", str(upd.column(t.key_field)[0].as_py())) in stored(
        path, next(iter(indexes)))


# --- a morlog table with secondary indexes laid out as Hudi lays them out ---------------------


SCHEMA = pa.schema([("id", pa.string()), ("val", pa.string()), ("day", pa.date32()),
                    ("n", pa.int64()), ("ts", pa.int64()), ("part", pa.string())])
MORLOG_INDEXES = {"val_idx": "val", "day_idx": "day"}


def add_secondary_index(path: Path, name: str, column: str, *, groups: int = 4,
                        instant: str = "00000000000000001") -> None:
    """Create secondary index ``name`` on an empty table as Hudi 1.1 does: its definition in
    ``.hoodie/.index_defs/index.json`` (version V2), the MDT partition
    ``secondary_index_<name>`` with ``groups`` file groups (each a log holding an empty
    delete block, write token 0-0-0, as the fixtures' initialisation), an MDT delta commit,
    and the partition listed in ``hoodie.table.metadata.partitions``."""
    t = MorTable(str(path), WriteConfig())
    partition = f"secondary_index_{name}"
    defs_path = path / ".hoodie" / ".index_defs" / "index.json"
    defs_path.parent.mkdir(exist_ok=True)
    defs = json.loads(defs_path.read_text()) if defs_path.exists() else {
        "indexDefinitions": {}}
    defs["indexDefinitions"][partition] = {
        "indexName": partition, "indexType": "secondary_index", "indexFunction": "identity",
        "sourceFields": [column], "indexOptions": {}, "version": "V2"}
    defs_path.write_text(json.dumps(defs, indent=2))
    mloc = metadata_location(t.location)
    d = Path(mloc.path) / partition
    d.mkdir()
    (d / PARTITION_METADATA_FILE).write_text(format_partition_metadata(0, 1))
    w = TimelineWriter(t.store, mloc, layout=2)
    w.write(instant, "requested", {})
    w.write(instant, "inflight", {})
    stats = []
    prefix = partition.replace("_", "-")
    for i in range(groups):
        fid = f"{prefix}-{i:04d}-0"
        res = LogFileWriter(str(d), fid, instant, write_token=DEFAULT_WRITE_TOKEN,
                            mode="rollover", store=t.store).append(delete_block([], instant))
        stats.append(write_stat(partition, fid, f"{partition}/{res.name}", prev_commit=instant,
                                file_size=res.size, log_files=[str(res.name)], base_file=""))
    w.write(instant, "completed", {"partitionToWriteStats": {partition: stats},
                                   "compacted": False, "extraMetadata": {},
                                   "operationType": "UPSERT_PREPPED"})
    props = dict(Table(str(path)).config.props)
    props["hoodie.table.index.defs.path"] = ".hoodie/.index_defs/index.json"
    props[PARTITIONS_PROPERTY] = ",".join([*(props.get(PARTITIONS_PROPERTY) or "files")
                                          .split(","), partition])
    update_properties(t.store, t.location, props)


def morlog_table(path: Path, new_groups: str = "base") -> MorTable:
    """A table version 9 with the two indexes of :data:`MORLOG_INDEXES`; small files, so
    that inserts are routed into existing file groups (log blocks holding inserts, which
    Hudi's writer refuses when a secondary index is enabled) and new groups open often
    (``new_groups="log"``: log-only file groups)."""
    MorTable.create(str(path), SCHEMA, key_field="id", partition_field="part",
                    ordering_field="ts", table_version=9)
    for i, (name, column) in enumerate(MORLOG_INDEXES.items()):
        add_secondary_index(path, name, column, instant=f"0000000000000000{i + 1}")
    return MorTable(str(path), WriteConfig(small_file_limit=2000, max_file_size=4000,
                                           record_size=100,
                                           new_groups="log" if new_groups == "log" else "base"))


_VALUES = st.one_of(st.none(), st.text(alphabet="ab$\\\x00é𝄞", max_size=4))
_ROW = st.tuples(st.integers(0, 11), _VALUES, st.one_of(st.none(), st.integers(0, 3)))
_STEP = st.tuples(st.sampled_from(["upsert", "insert", "delete", "overwrite", "older"]),
                  st.lists(_ROW, min_size=1, max_size=4))


def _batch(rows: list[tuple[int, str | None, int | None]], ts: int) -> pa.Table:
    """One row per key (the last wins); a key's partition follows from the key, so an
    upsert updates it where it lives."""
    seen: dict[str, tuple[Any, ...]] = {}
    for k, v, day in rows:
        seen[f"k{k}"] = (v, day, k % 2)
    ids = list(seen)
    return pa.table({
        "id": ids, "val": [seen[i][0] for i in ids],
        "day": pa.array([None if seen[i][1] is None else _EPOCH + dt.timedelta(days=19737
                                                                                 + seen[i][1])
                         for i in ids], pa.date32()),
        "n": pa.array(range(len(ids)), pa.int64()),
        "ts": pa.array([ts] * len(ids), pa.int64()),
        "part": [f"p{seen[i][2]}" for i in ids]}, schema=SCHEMA)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_STEP, min_size=1, max_size=6), new_groups=st.sampled_from(["base",
                                                                                  "log"]))
def test_random_write_sequences_keep_indexes_true(tmp_path_factory: pytest.TempPathFactory,
                                                  steps: list[Any], new_groups: str) -> None:
    """Random upserts (new values, equal values, nulls, values with '$', '\\' and NUL),
    inserts, deletes, insert_overwrites and upserts with an older ordering value on a morlog
    table version 9 with two secondary indexes (a string and a date column): both indexes
    equal the table after every step."""
    path = tmp_path_factory.mktemp("si") / "t"
    t = morlog_table(path, new_groups)
    ts = 1000
    for op, rows in steps:
        ts += 10
        batch = _batch(rows, ts)
        now = Table(str(path)).read(columns=["id"])
        live = set(now.column("id").to_pylist()) if now.num_rows else set()
        if op == "delete":
            t.delete(batch.select(["id", "part"]))
        elif op == "insert":
            fresh = batch.filter(pc.invert(pc.is_in(batch.column("id"),
                                                    value_set=pa.array(sorted(live), pa.string()))))
            if fresh.num_rows:
                t.insert(fresh)
        elif op == "overwrite":
            t.insert_overwrite(batch)
        elif op == "older":
            t.upsert(batch.set_column(4, "ts", pa.array([1] * batch.num_rows, pa.int64())))
        else:
            t.upsert(batch)
        _check(path, MORLOG_INDEXES)
    assert Table(str(path)).timeline.pending() == []


def test_index_on_unsupported_column_refused_before_any_write(tmp_path: Path) -> None:
    """A secondary index whose column's key text morlog cannot produce (a float), or with no
    definition, is refused when the writer opens the table, before anything is written;
    Hudi's switch drops it."""
    path = tmp_path / "t"
    MorTable.create(str(path), SCHEMA.append(pa.field("f", pa.float64())), key_field="id",
                    partition_field="part", ordering_field="ts", table_version=9)
    add_secondary_index(path, "f_idx", "f")
    with pytest.raises(UnsupportedSettingError, match="float|double"):
        MorTable(str(path), WriteConfig())
    (path / ".hoodie" / ".index_defs" / "index.json").write_text(
        json.dumps({"indexDefinitions": {}}))
    with pytest.raises(UnsupportedSettingError, match="no definition"):
        MorTable(str(path), WriteConfig())
    t = MorTable(str(path), WriteConfig(
        hoodie_options={"hoodie.metadata.index.secondary.enable": "false"}))
    t.insert(_batch([(1, "x", 0)], 5).append_column("f", pa.array([1.5])))
    assert "secondary_index_f_idx" not in (Table(str(path)).config.get(PARTITIONS_PROPERTY)
                                           or "")


# --- keys: escaping, nulls, hashes -------------------------------------------------------------


def _hudi_escape(s: str | None, version: int) -> str:
    """``SecondaryIndexKeyUtils.escapeSpecialChars``, character by character (the reference)."""
    if s is None:
        return "\x00"
    specials = "\\$\x00" if version >= 2 else "\\$"
    return "".join("\\" + c if c in specials else c for c in s)


def _java_hash(s: str) -> int:
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


_TEXT = st.text(alphabet=st.sampled_from(["a", "$", "\\", "\x00", "é", "𝄞", "\n", "z"]),
                max_size=6)


@settings(max_examples=200, deadline=None)
@given(pairs=st.lists(st.tuples(st.one_of(st.none(), _TEXT), _TEXT.filter(bool)), max_size=8),
       version=st.sampled_from([1, 2]), count=st.integers(1, 13))
def test_keys_escape_decode_and_map_as_hudi(pairs: list[tuple[str | None, str]], version: int,
                                            count: int) -> None:
    """Keys with the separator, the escape character, NUL and nulls: built as Hudi's
    character-by-character escaping builds them, decoded back to the same (value, record
    key), and mapped to Hudi's file group (V1 whole key, V2 ``<escaped value>$``)."""
    if version == 1:
        pairs = [(v, k) for v, k in pairs if v is not None]  # V1 never writes a null
    values = pa.array([v for v, _ in pairs], pa.string())
    rks = pa.array([k for _, k in pairs], pa.string())
    keys = index_keys(values, rks, version)
    expected = [_hudi_escape(v, version) + "$" + _hudi_escape(k, version) for v, k in pairs]
    assert keys.to_pylist() == expected
    back = decode_keys(keys, version)
    if version == 2:
        assert back.column("secondary_key").to_pylist() == [v for v, _ in pairs]
    else:  # V1 keeps a NUL as it is
        assert back.column("secondary_key").to_pylist() == [v for v, _ in pairs]
    assert back.column("record_key").to_pylist() == [k for _, k in pairs]
    hashed = [(k if version == 1 else _hudi_escape(v, version) + "$") for (v, _), k in
              zip(pairs, expected, strict=True)]
    want = [abs(_java_hash(h)) % count for h in hashed]
    assert file_group_indexes(keys, values, count, version).tolist() == want
    assert [key_to_file_group_index(h, count) for h in hashed] == want


@settings(max_examples=200, deadline=None)
@given(strings=st.lists(st.text(max_size=20), max_size=10))
def test_vectorized_hash_is_javas_string_hash(strings: list[str]) -> None:
    got = java_string_hashes(pa.array(strings, pa.string()))
    assert got.tolist() == [_java_hash(s) for s in strings]
    sliced = pa.array(["x", *strings, "y"], pa.string()).slice(1, len(strings))
    assert java_string_hashes(sliced).tolist() == [_java_hash(s) for s in strings]


def test_changes_of_one_file_group() -> None:
    """What a commit writes: a changed value deletes the old entry and writes the new one,
    an equal value (nulls included) does nothing, a gone key deletes, a new key writes; a
    key moving between file groups with its value is written, not deleted. V1 skips nulls."""
    def rows(g: list[int], rk: list[str], s: list[str | None]) -> pa.Table:
        return pa.table({"g": pa.array(g, pa.int32()), "rk": rk, "s": pa.array(s, pa.string())})

    before = rows([0, 0, 0, 0, 1, 0], ["a", "b", "c", "n", "m", "x"],
                  ["1", "2", "3", None, "7", "5"])
    after = rows([0, 0, 0, 0, 2, 0], ["a", "b", "d", "n", "m", "x"],
                 ["1", "9", "4", None, "7", None])
    puts, drops = index_changes(before, after, 2)
    assert puts.column("key").to_pylist() == ["\x00$x", "4$d", "7$m", "9$b"]
    assert drops.column("key").to_pylist() == ["2$b", "3$c", "5$x"]
    puts, drops = index_changes(before, after, 1)
    assert puts.column("key").to_pylist() == ["4$d", "7$m", "9$b"]
    assert drops.column("key").to_pylist() == ["2$b", "3$c", "5$x"]
    empty = rows([], [], [])
    assert index_changes(empty, empty, 2)[0].num_rows == 0


def test_reader_takes_latest_record_per_key(tmp_path: Path) -> None:
    """A key written, deleted and written again reads present; written then deleted reads
    absent (the reader's merge over one file group's log blocks)."""
    path = tmp_path / "t"
    t = morlog_table(path)
    t.insert(_batch([(1, "a", 0), (2, "b", 0)], 10))
    t.upsert(_batch([(1, "c", 0)], 20))
    t.upsert(_batch([(1, "a", 0)], 30))
    t.delete(_batch([(2, "b", 0)], 40).select(["id", "part"]))
    assert stored(path, "val_idx") == [("a", "k1")]
    assert stored(path, "day_idx") == [("19737", "k1")]
