"""Writing into the tables Hudi wrote (issue: real Hudi tables).

Each fixture table under ``shared/fixtures/hudi/tables`` is copied, takes an upsert (updates
of existing rows with a later ordering value), an insert (a new key) and a delete through the
write client, and must then read exactly the expected rows in morlog and in hudi-rs, with no
pending instant left. Tables that keep a metadata table with partitions morlog cannot keep are
refused untouched (same files, same bytes) unless the writer turns them off as Hudi's own
writer does, which drops them. A failed write leaves the table reading as before.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from morlog.logformat.blocks import META_FIELDS
from morlog.logformat.errors import MorlogError, UnsupportedSettingError
from morlog.logformat.timeline_meta import decode_avro
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.mdt.plan import listed_partitions
from morlog.writers.options import WriteConfig

from .hudi_fixtures import SKIP_REASON, tables

TABLES = tables()
pytestmark = pytest.mark.skipif(not TABLES, reason=SKIP_REASON)
DROP_MDT = {"hoodie.metadata.enable": "false"}


def _copy(src: Path, tmp: Path) -> Path:
    dst = tmp / src.name
    shutil.copytree(src, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)  # fixtures are read-only
    return dst


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != "morlog.lock"}


def _hudi_rs(path: Path) -> pa.Table:
    import hudi

    batches = hudi.HudiTableBuilder.from_base_uri(str(path)).build().read()
    return pa.Table.from_batches(batches) if batches else pa.table({})


def _rows(t: pa.Table, key: str) -> dict[Any, dict[str, Any]]:
    return {r[key]: {k: v for k, v in r.items() if k not in META_FIELDS}
            for r in t.to_pylist()}


def _data(path: Path) -> pa.Table:
    t = Table(str(path)).read()
    return t.select([c for c in t.column_names if c not in META_FIELDS])


def _new_key(t: pa.Table, key: str) -> pa.Scalar:
    """A key ``t`` (the table's rows) does not hold: an insert of it is an insert, also
    under a global index, which tags inserts (spec/rli.md §4a)."""
    typ = t.schema.field(key).type
    held = set(t.column(key).to_pylist())
    text = pa.types.is_string(typ)
    candidates = (f"morlog-new-key-{n}" if text else 10**6 + n for n in range(len(held) + 1))
    return pa.scalar(next(c for c in candidates if c not in held), typ)


def _later(batch: pa.Table, ordering: str | None) -> pa.Table:
    if ordering is None:
        return batch
    col = batch.column(ordering)
    i = batch.schema.get_field_index(ordering)
    return batch.set_column(i, ordering, pc.add(col, pa.scalar(10**6, col.type)))


def _options(path: Path) -> dict[str, str]:
    """No option: every metadata-table partition the table lists is kept true."""
    return {}


def check_metadata_table(path: Path) -> None:
    """Every partition the table's metadata table lists is true: ``files`` (hudi-rs lists
    through it), ``record_index``, ``column_stats`` / ``partition_stats`` and the secondary
    indexes equal what the table's files and rows say."""
    from morlog.readers.column_stats import INDEX_DEFS_PATH_KEY

    from .test_mdt_colstats import check_stats
    from .test_mdt_secondary import _check as check_secondary
    from .test_record_index_writer import _check as check_record_index

    listed = listed_partitions(Table(str(path)))
    if not listed:
        return
    if "record_index" in listed:
        check_record_index(path)
    if "column_stats" in listed:
        check_stats(path)
    secondary = [p for p in listed if p.startswith("secondary_index_")]
    if secondary:
        import json

        props = Table(str(path)).config.props
        defs = json.loads((path / props[INDEX_DEFS_PATH_KEY]).read_text())["indexDefinitions"]
        check_secondary(path, {p: defs[p]["sourceFields"][0] for p in secondary})


def _without_mdt(path: Path, tmp: Path) -> Path:
    """A copy of the table without ``.hoodie/metadata``, which readers then list directly."""
    dst = tmp / "no_mdt" / path.name
    shutil.copytree(path, dst)
    shutil.rmtree(dst / ".hoodie" / "metadata", ignore_errors=True)
    return dst


def write_three(t: MorTable, path: Path) -> dict[Any, dict[str, Any]]:
    """Through ``t``: update two rows (a later ordering value), insert a new key, delete
    one row; the rows expected afterwards (by record key field)."""
    key = t.key_field
    data = _data(path)
    assert data.num_rows >= 3
    expected = _rows(data, key)
    upd = _later(data.slice(0, 2), t.ordering_field)
    r = t.upsert(upd)
    assert (r.updates, r.inserts) == (2, 0)
    ins = data.slice(2, 1)
    ins = ins.set_column(ins.schema.get_field_index(key), key,
                         pa.array([_new_key(data, key)]))
    assert t.insert(ins).inserts == 1
    gone = data.slice(data.num_rows - 1, 1)
    assert t.delete(gone.select(list(t.keygen.required_columns))).deletes == 1
    expected.update(_rows(upd, key))
    expected.update(_rows(ins, key))
    for k in _rows(gone, key):
        expected.pop(k)
    return expected


@pytest.mark.parametrize("src", TABLES, ids=[p.name for p in TABLES])
def test_upsert_insert_delete_read_right_in_morlog_and_hudi_rs(tmp_path: Path,
                                                               src: Path) -> None:
    path = _copy(src, tmp_path)
    t = MorTable(str(path), WriteConfig(hoodie_options=_options(path)))
    key = t.key_field
    expected = write_three(t, path)
    view = Table(str(path))
    assert view.timeline.pending() == []
    assert _rows(view.read(), key) == expected
    assert _rows(_hudi_rs(path), key) == expected
    assert _rows(_hudi_rs(_without_mdt(path, tmp_path)), key) == expected
    check_metadata_table(path)
    # every completed instant morlog wrote decodes as Hudi's commit metadata
    for inst in view.timeline.completed()[-3:]:
        meta = view.timeline.metadata(inst)
        assert meta["operationType"] in ("UPSERT", "INSERT", "DELETE")
        assert all(s["fileId"] and s["path"] for ss in meta["partitionToWriteStats"].values()
                   for s in ss)


@pytest.mark.parametrize("src", [p for p in TABLES if p.name.startswith(("v8", "v9"))],
                         ids=lambda p: p.name)
def test_table_version_8_and_9_commits_use_layout_2(tmp_path: Path, src: Path) -> None:
    """Completed instants ``<requested>_<completed>.deltacommit`` with Avro commit metadata,
    log files named after the delta commit (one set per commit, Hudi 1.x's naming)."""
    path = _copy(src, tmp_path)
    t = MorTable(str(path), WriteConfig(hoodie_options=_options(path)))
    data = _data(path)
    r = t.upsert(_later(data.slice(0, 1), t.ordering_field))
    timeline = path / ".hoodie" / "timeline"
    done = [p for p in timeline.iterdir() if p.name.startswith(r.instant + "_")]
    assert len(done) == 1 and done[0].name.endswith(".deltacommit")
    completed = done[0].name.split("_")[1].split(".")[0]
    assert completed >= r.instant
    meta = decode_avro(done[0].read_bytes())
    assert meta["operationType"] == "UPSERT"
    assert (timeline / f"{r.instant}.deltacommit.requested").read_bytes() == b""
    logs = [p for p in path.rglob(f".*_{r.instant}.log.*")]
    assert logs, "the update's log file is named after its delta commit"


@pytest.mark.parametrize("src", [p for p in TABLES if Path(p / ".hoodie" / "metadata").is_dir()],
                         ids=lambda p: p.name)
def test_a_metadata_table_morlog_cannot_keep_is_refused_untouched(tmp_path: Path,
                                                                  src: Path) -> None:
    """The table lists an MDT partition morlog cannot keep (an expression index): refused
    before anything is written; with the switch, the MDT is dropped as Hudi does."""
    from morlog.logformat.table_files import format_properties, parse_properties

    path = _copy(src, tmp_path)
    props_path = path / ".hoodie" / "hoodie.properties"
    props = parse_properties(props_path.read_text())
    props["hoodie.table.metadata.partitions"] += ",expr_index_idx_upper"
    props_path.write_text(format_properties(props))
    before = _digest(path)
    with pytest.raises(UnsupportedSettingError) as err:
        MorTable(str(path)).upsert(_data(path).slice(0, 1))
    assert err.value.property == "hoodie.table.metadata.partitions"
    assert "hoodie.metadata" in err.value.message  # names the switch that drops it
    assert _digest(path) == before
    # opting in drops it as Hudi's writer does with the metadata table turned off
    MorTable(str(path), WriteConfig(hoodie_options=DROP_MDT)).upsert(
        _later(_data(path).slice(0, 1), Table(str(path)).config.ordering_fields[0]))
    assert not (path / ".hoodie" / "metadata").exists()
    assert listed_partitions(Table(str(path))) == []
    assert not (path / ".hoodie" / "hoodie.properties.backup").exists()


@pytest.mark.parametrize("src", TABLES, ids=[p.name for p in TABLES])
def test_a_failed_write_leaves_the_table_reading_as_before(tmp_path: Path, src: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    path = _copy(src, tmp_path)
    cfg = WriteConfig(hoodie_options=_options(path))
    t = MorTable(str(path), cfg)
    key = t.key_field
    # the metadata table is dropped by a first write (the switch is the user's opt-in)
    t.upsert(_later(_data(path).slice(0, 1), t.ordering_field))
    before = _rows(Table(str(path)).read(), key)
    calls = {"n": 0}
    real = MorTable.write_group

    def failing(self: MorTable, *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        real(self, *args, **kwargs)
        raise OSError(5, "disk failed after a file group was written")

    monkeypatch.setattr(MorTable, "write_group", failing)
    with pytest.raises(MorlogError, match="rolled back"):
        MorTable(str(path), cfg).upsert(_later(_data(path).slice(1, 2), t.ordering_field))
    monkeypatch.undo()
    assert calls["n"] >= 1
    view = Table(str(path))
    assert view.timeline.pending() == []
    assert _rows(view.read(), key) == before
    assert _rows(_hudi_rs(path), key) == before
    rollbacks = [i for i in view.timeline.instants if i.action == "rollback"]
    assert rollbacks and rollbacks[-1].is_completed
    assert len(view.timeline.rolled_back_instants()) >= 1


_TYPES = pa.schema([
    ("id", pa.string()), ("p", pa.string()), ("ts", pa.int64()),
    ("m", pa.map_(pa.string(), pa.int64())), ("a", pa.list_(pa.string())),
    ("s", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ("d", pa.decimal128(10, 2)), ("dt", pa.date32()), ("t", pa.timestamp("us", tz="UTC")),
    ("b", pa.binary()), ("f", pa.float64()), ("bo", pa.bool_()), ("n", pa.int32())])


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("carrier", ["avro", "parquet"])
def test_every_column_type_round_trips(tmp_path: Path, version: int, carrier: str) -> None:
    """Maps, arrays, nested records, decimals, dates, timestamps, bytes, floats, booleans
    and nullable columns, written as base files and as log blocks of either carrier, read
    back the same by morlog and hudi-rs."""
    import datetime as dt
    import decimal

    rows = [{"id": f"k{i}", "p": "x", "ts": i, "m": [("a", i)], "a": ["u", None],
             "s": {"x": i, "y": None}, "d": decimal.Decimal(f"{i}.25"),
             "dt": dt.date(2024, 1, i + 1),
             "t": dt.datetime(2024, 1, 1, i, tzinfo=dt.UTC),
             "b": bytes([i, 0]), "f": i / 3, "bo": i % 2 == 0, "n": None if i else 7}
            for i in range(3)]
    path = tmp_path / "t"
    t = MorTable.create(str(path), _TYPES, key_field="id", partition_field="p",
                        ordering_field="ts", table_version=version,
                        config=WriteConfig(carrier=carrier))  # type: ignore[arg-type]
    t.upsert(pa.Table.from_pylist(rows, _TYPES))
    update = dict(rows[0], ts=10, m=[("z", 9)], s={"x": 5, "y": "q"}, n=None)
    t.upsert(pa.Table.from_pylist([update], _TYPES))
    expected = {r["id"]: r for r in [update, *rows[1:]]}
    assert _rows(Table(str(path)).read(), "id") == expected
    assert _rows(_hudi_rs(path), "id") == expected


# several ordering fields (version 9), hoodie.populate.meta.fields=false and
# hoodie.datasource.write.drop.partition.columns=true are written now; their refused
# combinations: tests/test_virtual_keys.py and tests/test_ordering_fields.py
_REFUSED = [
    ("hoodie.table.type", "COPY_ON_WRITE"),
    ("hoodie.table.version", "7"),
    ("hoodie.table.version", "not-a-number"),
    ("hoodie.timeline.layout.version", "1"),
    ("hoodie.table.keygenerator.type", "USER_PROVIDED"),
    ("hoodie.table.keygenerator.class", "com.example.MyKeyGenerator"),
    ("hoodie.table.ordering.fields", "no_such_column"),
    ("hoodie.record.merge.mode", "CUSTOM"),
    ("hoodie.record.merge.strategy.id", "1897ef5f-18bc-4557-939c-9d6a8afd1519"),
    ("hoodie.table.cdc.supplemental.logging.mode", "CDC_NOPE"),
    ("hoodie.bootstrap.base.path", "/elsewhere"),
    ("hoodie.table.format", "iceberg"),
    ("hoodie.table.recordkey.fields", ""),
    ("hoodie.table.metadata.partitions", "files"),
]


@pytest.mark.parametrize("key, value", _REFUSED, ids=[f"{k}={v}" for k, v in _REFUSED])
def test_a_setting_morlog_cannot_honour_is_refused_untouched(tmp_path: Path, key: str,
                                                            value: str) -> None:
    """A typed error naming the property, raised before anything is written."""
    from morlog.logformat.table_files import format_properties, parse_properties

    src = next((p for p in TABLES if p.name == "v9_txns_simple_nometa"), None)
    if src is None:
        pytest.skip("fixture table v9_txns_simple_nometa is absent")
    path = _copy(src, tmp_path)
    batch = _data(path).slice(0, 1)
    props_file = path / ".hoodie" / "hoodie.properties"
    props = parse_properties(props_file.read_text())
    props[key] = value
    props_file.write_text(format_properties(props))
    before = _digest(path)
    with pytest.raises(MorlogError) as err:
        MorTable(str(path)).upsert(batch)
    assert key in (getattr(err.value, "property", None) or str(err.value))
    assert _digest(path) == before


@pytest.mark.parametrize("src", TABLES, ids=[p.name for p in TABLES])
def test_spark_writes_into_every_fixture_table(tmp_path: Path, src: Path, spark: Any) -> None:
    """``df.write.format("morlog")`` (upsert, insert, then delete) into a copy of each
    fixture table, its whole metadata table kept; morlog and hudi-rs read the expected
    rows."""
    from morlog.spark.write import register

    register(spark)
    path = _copy(src, tmp_path)
    t = MorTable(str(path), WriteConfig(hoodie_options=_options(path)))
    key = t.key_field
    data = _data(path)
    expected = _rows(data, key)
    upd = _later(data.slice(0, 2), t.ordering_field)
    opts = {**_options(path), "hoodie.datasource.write.operation": "upsert"}
    (spark.createDataFrame(upd).write.format("morlog").options(**opts)
     .mode("append").save(str(path)))
    expected.update(_rows(upd, key))
    ins = data.slice(2, 1)
    ins = ins.set_column(ins.schema.get_field_index(key), key, pa.array([_new_key(data, key)]))
    (spark.createDataFrame(ins).write.format("morlog")
     .options(**{**opts, "hoodie.datasource.write.operation": "insert"})
     .mode("append").save(str(path)))
    expected.update(_rows(ins, key))
    gone = data.slice(data.num_rows - 1, 1).select(list(t.keygen.required_columns))
    (spark.createDataFrame(gone).write.format("morlog")
     .options(**{**opts, "hoodie.datasource.write.operation": "delete"})
     .mode("append").save(str(path)))
    for k in _rows(gone, key):
        expected.pop(k)
    view = Table(str(path))
    assert view.timeline.pending() == []
    assert _rows(view.read(), key) == expected
    assert _rows(_hudi_rs(path), key) == expected
    check_metadata_table(path)


@pytest.mark.parametrize("version", [6, 9])
def test_enum_and_fixed_columns_of_a_hudi_schema(tmp_path: Path, version: int) -> None:
    """A table schema with an Avro enum and a fixed type (which Arrow batches carry as
    strings and fixed-size binaries) takes writes and reads back the symbols and bytes.
    (hudi-rs 0.5 cannot read such a table once it has both a base file and a log: it
    decodes the log's enum as an Arrow dictionary and refuses to reconcile it with the base
    file's string column.)"""
    import json

    schema = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("color", pa.string()),
                        ("fx", pa.binary(4))])
    avro = {"type": "record", "name": "t_record", "namespace": "hoodie.t", "fields": [
        {"name": "id", "type": "string"}, {"name": "ts", "type": "long"},
        {"name": "color", "type": ["null", {"type": "enum", "name": "Color",
                                            "symbols": ["RED", "GREEN"]}], "default": None},
        {"name": "fx", "type": ["null", {"type": "fixed", "name": "F4", "size": 4}],
         "default": None}]}
    path = str(tmp_path / "t")
    MorTable.create(path, schema, key_field="id", ordering_field="ts", table_version=version,
                    table_properties={"hoodie.table.create.schema": json.dumps(avro)})
    t = MorTable(path)
    t.upsert(pa.table({"id": ["a", "b"], "ts": [1, 1], "color": ["RED", "GREEN"],
                       "fx": [b"abcd", None]}, schema=schema))
    t.upsert(pa.table({"id": ["a"], "ts": [2], "color": ["GREEN"], "fx": [b"wxyz"]},
                      schema=schema))
    rows = Table(path).read(columns=["id", "color", "fx"]).sort_by("id").to_pylist()
    assert rows == [{"id": "a", "color": "GREEN", "fx": b"wxyz"},
                    {"id": "b", "color": "GREEN", "fx": None}]
    with pytest.raises(MorlogError):  # not a symbol of the enum: refused, table as before
        t.upsert(pa.table({"id": ["c"], "ts": [3], "color": ["BLUE"], "fx": [None]},
                          schema=schema))
    assert len(Table(path).read()) == 2
