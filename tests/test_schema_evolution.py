"""Schema evolution (issue 27): a batch with new nullable columns or wider types evolves the
table's schema as Hudi's writer does (``HoodieSchemaUtils.deduceWriterSchema``), readers read
older files under the latest schema, services rewrite to it, and hudi-rs reads the same rows;
any other change is a typed error before anything is written (spec/table.md §7.7)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.blocks import META_FIELDS
from morlog.logformat.errors import UsageError
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig

from .test_real_table_writes import _copy, _digest, _hudi_rs

S1 = pa.struct([("a", pa.int32())])
S2 = pa.struct([("a", pa.int32()), ("b", pa.string())])
SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("n", pa.int32()),
                    ("p", pa.string()), ("s", S1)])
LOG_COMPACT = {"hoodie.log.compaction.blocks.threshold": "2"}


def _rows(t: pa.Table) -> list[dict[str, Any]]:
    if not t.num_rows:
        return []
    t = t.select([c for c in t.column_names if c not in META_FIELDS])
    return sorted(t.to_pylist(), key=lambda r: r["id"])


def _first(path: Path, version: int = 9, carrier: str = "avro") -> MorTable:
    t = MorTable.create(str(path), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", table_version=version,
                        config=WriteConfig(carrier=carrier))  # type: ignore[arg-type]
    t.upsert(pa.table({"id": ["a", "b", "c"], "ts": [1, 1, 1],
                       "n": pa.array([1, 2, 3], pa.int32()), "p": ["x", "y", "x"],
                       "s": pa.array([{"a": 1}, {"a": 2}, None], S1)}))
    return t


def _evolving_batch() -> pa.Table:
    """A new top-level column, a new struct field and ``n`` widened int -> long."""
    return pa.table({"id": ["a", "d"], "ts": [2, 2], "n": pa.array([10, 2**40], pa.int64()),
                     "p": ["x", "y"], "s": pa.array([{"a": 1, "b": "q"}, {"a": 2, "b": None}],
                                                    S2),
                     "extra": [1.5, None]})


EXPECTED = [
    {"id": "a", "ts": 2, "n": 10, "p": "x", "s": {"a": 1, "b": "q"}, "extra": 1.5},
    {"id": "b", "ts": 3, "n": 7, "p": "y", "s": {"a": 5, "b": None}, "extra": 2.0},
    {"id": "c", "ts": 1, "n": 3, "p": "x", "s": None, "extra": None},
    {"id": "d", "ts": 2, "n": 2**40, "p": "y", "s": {"a": 2, "b": None}, "extra": None},
]


@pytest.mark.parametrize("carrier", ["avro", "parquet"])
@pytest.mark.parametrize("version", [6, 8, 9])
def test_an_evolved_table_reads_the_same_in_morlog_and_hudi_rs(tmp_path: Path, version: int,
                                                              carrier: str) -> None:
    path = tmp_path / "t"
    t = _first(path, version, carrier)
    t.upsert(_evolving_batch())
    # a later batch under the old schema (int, no struct field): converted to the new one
    t = MorTable(str(path), WriteConfig(carrier=carrier))  # type: ignore[arg-type]
    t.upsert(pa.table({"id": ["b"], "ts": [3], "n": pa.array([7], pa.int32()), "p": ["y"],
                       "s": pa.array([{"a": 5}], S1), "extra": [2.0]}))
    view = Table(str(path))
    schema = view.schema()
    assert schema.field("n").type == pa.int64()
    assert schema.field("s").type == pa.struct([("a", pa.int32()), ("b", pa.string())])
    assert schema.names[-1] == "extra" and schema.field("extra").nullable
    # the create schema stays; the commits record the evolved schema
    assert "extra" not in view.config.get("hoodie.table.create.schema")
    assert _rows(view.read()) == EXPECTED
    assert _rows(_hudi_rs(path)) == EXPECTED
    # time travel reads the schema of its instant: the first commit had no "extra"
    first = view.timeline.completed()[0].requested
    old = view.read(as_of=first)
    assert "extra" not in old.column_names and old.schema.field("n").type == pa.int32()
    # log compaction, then compaction, rewrite every row under the latest schema
    lc = MorTable(str(path), WriteConfig(carrier=carrier,  # type: ignore[arg-type]
                                         hoodie_options=LOG_COMPACT)).log_compact()
    assert lc.results
    assert _rows(Table(str(path)).read()) == EXPECTED
    assert _rows(_hudi_rs(path)) == EXPECTED
    MorTable(str(path)).compact()
    after = Table(str(path))
    assert all(not s.log_files for s in after.file_slices())
    assert _rows(after.read()) == EXPECTED
    assert _rows(_hudi_rs(path)) == EXPECTED
    import pyarrow.parquet as pq

    for s in after.file_slices():
        assert s.base_file is not None
        got = pq.read_schema(path / s.partition / s.base_file)
        assert got.field("n").type == pa.int64() and "extra" in got.names


def test_the_commit_records_the_evolved_schema(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _first(path).upsert(_evolving_batch())
    view = Table(str(path))
    last = view.timeline.completed()[-1]
    avro = json.loads(view.timeline.metadata(last)["extraMetadata"]["schema"])
    fields = {f["name"]: f for f in avro["fields"]}
    assert [f["name"] for f in avro["fields"]] == ["id", "ts", "n", "p", "s", "extra"]
    assert fields["extra"] == {"name": "extra", "type": ["null", "double"], "default": None}
    assert fields["n"]["type"] == ["null", "long"]
    record = fields["s"]["type"][1]
    assert [f["name"] for f in record["fields"]] == ["a", "b"]
    assert record["fields"][1] == {"name": "b", "type": ["null", "string"], "default": None}


@pytest.mark.parametrize("batch, words", [
    # a narrowing: the table's long values do not fit an int column
    (pa.table({"id": ["a"], "ts": pa.array([2], pa.int32()), "n": pa.array([1], pa.int32()),
               "p": ["x"], "s": pa.array([{"a": 1}], S1)}), None),
    (pa.table({"id": ["a"], "ts": [2], "n": ["7"], "p": ["x"],
               "s": pa.array([{"a": 1}], S1)}), ["'n'", "string", "int32", "Hudi"]),
    (pa.table({"id": ["a"], "ts": [2], "n": pa.array([1], pa.int32()), "p": ["x"],
               "s": pa.array([{"a": "x"}])}), ["'s.a'", "Hudi"]),
    (pa.table({"id": ["a"], "ts": [2], "n": pa.array([1], pa.int32()), "p": ["x"],
               "s": [1]}), ["'s'", "Hudi"]),
    (pa.table({"id": ["a"], "ts": [2], "n": pa.array([1], pa.int32()), "p": ["x"],
               "s": pa.array([{"a": 1}], S1), "req": [1]},
              schema=pa.schema([*SCHEMA, pa.field("req", pa.int64(), nullable=False)])),
     ["'req'", "nullable"]),
    (pa.table({"id": ["a"], "ts": [2], "n": pa.array([1], pa.int32()), "p": ["x"],
               "s": pa.array([{"a": 1}], S1), "x": pa.array([1], pa.uint64())}), ["'x'"]),
])
def test_refused_changes_name_the_column_and_leave_the_table_as_it_was(
        tmp_path: Path, batch: pa.Table, words: list[str] | None) -> None:
    path = tmp_path / "t"
    t = _first(path)
    before = _digest(path)
    if words is None:  # ts is long in the table: an int batch converts, nothing evolves
        t.upsert(batch)
        assert Table(str(path)).schema().field("ts").type == pa.int64()
        return
    with pytest.raises(UsageError) as e:
        t.upsert(batch)
    for w in words:
        assert w in str(e.value)
    assert _digest(path) == before
    # the writer did not keep a half-adopted schema: a plain batch still writes as before
    t.upsert(pa.table({"id": ["z"], "ts": [1], "n": pa.array([1], pa.int32()), "p": ["x"],
                       "s": pa.array([{"a": 1}], S1)}))
    assert Table(str(path)).schema() == Table(str(path)).arrow_schema()


@pytest.mark.parametrize("key", ["hoodie.datasource.write.new.columns.nullable",
                                 "hoodie.write.set.null.for.missing.columns"])
def test_new_columns_nullable_adds_a_not_nullable_new_column_as_nullable(
        tmp_path: Path, key: str) -> None:
    """Hudi 0.14.0's ``hoodie.datasource.write.new.columns.nullable``
    (``HoodieCommonConfig.MAKE_NEW_COLUMNS_NULLABLE``, default false), folded into
    ``hoodie.write.set.null.for.missing.columns`` since 0.14.1 (``reconcileSchema`` adds new
    columns optional): a new column the batch declares NOT NULL is added as nullable."""
    path = tmp_path / "t"
    _first(path)
    schema = pa.schema([*SCHEMA, pa.field("req", pa.int64(), nullable=False)])
    batch = pa.table({"id": ["a"], "ts": [2], "n": pa.array([1], pa.int32()), "p": ["x"],
                      "s": pa.array([{"a": 1}], S1), "req": [7]}, schema=schema)
    before = _digest(path)
    with pytest.raises(UsageError, match="hoodie.datasource.write.new.columns.nullable"):
        MorTable(str(path)).upsert(batch)
    assert _digest(path) == before
    MorTable(str(path), WriteConfig.from_hoodie_options({key: "true"})).upsert(batch)
    view = Table(str(path))
    avro = json.loads(view.timeline.metadata(view.timeline.completed()[-1])
                      ["extraMetadata"]["schema"])
    assert avro["fields"][-1] == {"name": "req", "type": ["null", "long"], "default": None}
    assert view.schema().field("req").nullable
    got = {r["id"]: r["req"] for r in _rows(view.read())}
    assert got == {"a": 7, "b": None, "c": None}
    assert {r["id"]: r["req"] for r in _rows(_hudi_rs(path))} == got


def test_a_failed_write_leaves_no_evolved_schema_in_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _first(path)
    bad = _evolving_batch().set_column(0, "id", pa.array(["a", None]))  # a null key
    with pytest.raises(UsageError):
        t.upsert(bad)
    assert "extra" not in t.data_schema.names and t.data_schema.field("n").type == pa.int32()
    t.upsert(pa.table({"id": ["z"], "ts": [1], "n": pa.array([1], pa.int32()), "p": ["x"],
                       "s": pa.array([{"a": 1}], S1)}))
    assert "extra" not in Table(str(path)).schema().names


def test_missing_columns_follow_the_existing_rule_and_reconcile_keeps_the_table_schema(
        tmp_path: Path) -> None:
    path = tmp_path / "t"
    _first(path).upsert(_evolving_batch())
    lacking = pa.table({"id": ["a"], "ts": [5], "n": [11], "p": ["x"]})
    before = _digest(path)
    with pytest.raises(UsageError, match="hoodie.write.set.null.for.missing.columns"):
        MorTable(str(path)).upsert(lacking)
    assert _digest(path) == before
    t = MorTable(str(path), WriteConfig.from_hoodie_options(
        {"hoodie.datasource.write.reconcile.schema": "true"}))
    t.upsert(lacking.append_column("more", pa.array(["m"])))
    view = Table(str(path))
    assert view.schema().names[-2:] == ["extra", "more"]  # the table's columns kept
    row = [r for r in _rows(view.read()) if r["id"] == "a"][0]
    assert row == {"id": "a", "ts": 5, "n": 11, "p": "x", "s": None, "extra": None,
                   "more": "m"}
    assert [r for r in _rows(_hudi_rs(path)) if r["id"] == "a"][0] == row


@pytest.mark.parametrize("carrier", ["avro", "parquet"])
def test_predicates_and_projections_see_evolved_columns(tmp_path: Path, carrier: str) -> None:
    path = tmp_path / "t"
    t = _first(path, 9, carrier)
    t.compact()  # the first rows in base files that have no "extra" and an int "n"
    # "c" updated in a log block written before the column exists (its statistics in the
    # block and the slice index know no "extra")
    t.upsert(pa.table({"id": ["c"], "ts": [2], "n": pa.array([3], pa.int32()), "p": ["x"],
                       "s": pa.array([None], S1)}))
    MorTable(str(path), WriteConfig(carrier=carrier)).upsert(  # type: ignore[arg-type]
        _evolving_batch())
    view = Table(str(path))
    assert any(s.base_file for s in view.file_slices())

    def ids(where: str) -> list[str]:
        return sorted(view.read(columns=["id", "extra"], where=where)["id"].to_pylist())

    assert ids("extra = 1.5") == ["a"]
    # files written before the column existed hold it as NULL: never pruned by it
    assert ids("extra IS NULL") == ["b", "c", "d"]
    assert ids("n > 8589934592") == ["d"]
    assert ids("n < 5") == ["b", "c"]
    assert view.read(columns=["extra"]).column_names == ["extra"]


def test_new_columns_get_column_stats_in_the_metadata_table(tmp_path: Path) -> None:
    from morlog.writers.mdt.colstats import COLUMN_STATS

    from .hudi_fixtures import fixture_table
    from .test_mdt_colstats import KEEP_STATS, _mdt

    path = _copy(fixture_table("v9_txns_simple_meta/v9_txns_simple_meta"), tmp_path)
    # columns chosen by Hudi's rule (no index definition naming them, as tables of older
    # writers have): the first 32 columns of the schema the commit records. A definition
    # that names its sourceFields is followed as it is (spec/table.md §7.7)
    defs = path / ".hoodie" / ".index_defs" / "index.json"
    doc = json.loads(defs.read_text())
    del doc["indexDefinitions"]["column_stats"]
    defs.write_text(json.dumps(doc))
    t = MorTable(str(path), WriteConfig(hoodie_options=KEEP_STATS))
    data = Table(str(path)).read()
    row = data.select([c for c in data.column_names if c not in META_FIELDS]).slice(0, 1)
    row = row.set_column(row.schema.get_field_index(t.ordering_field), t.ordering_field,
                         pa.array([10**15], row.schema.field(t.ordering_field).type))
    t.upsert(row.append_column("new_col", pa.array([42], pa.int64())))
    instant = Table(str(path)).timeline.completed()[-1].requested
    recs = [r for r in _mdt(path).partition_records(COLUMN_STATS)
            if r.get("ColumnStatsMetadata") and r["ColumnStatsMetadata"]["columnName"]
            == "new_col"]
    assert recs, "the commit that adds new_col indexes it"
    assert any(instant in r["ColumnStatsMetadata"]["fileName"] for r in recs)
    view = Table(str(path))
    key = t.key_field
    got = view.read(columns=[key, "new_col"], where="new_col = 42")
    assert got.column(key).to_pylist() == row.column(key).to_pylist()


def _stats_of(path: Path, column: str) -> list[dict[str, Any]]:
    from morlog.writers.mdt.colstats import COLUMN_STATS

    from .test_mdt_colstats import _mdt

    return [r["ColumnStatsMetadata"] for r in _mdt(path).partition_records(COLUMN_STATS)
            if r.get("ColumnStatsMetadata")
            and r["ColumnStatsMetadata"]["columnName"] == column]


def _block_stats_of(path: Path, instant: str, column: str) -> list[Any]:
    """The stored COLUMN_STATS entries of ``column`` in the data blocks ``instant`` wrote."""
    from morlog.readers.block_stats import stored_column_stats
    from morlog.readers.logfile import LogFileReader

    view = Table(str(path))
    out = []
    for s in view.file_slices():
        for name in s.log_files:
            with LogFileReader(view.storage.source(
                    view.storage.join(view.slice_dir(s.partition), name))) as r:
                for b in r.blocks():
                    if b.instant == instant and b.schema:
                        section = stored_column_stats(b)
                        got = section.get(column) if section is not None else None
                        if got is not None:
                            out.append(got)
    return out


def _txns_row(path: Path, t: MorTable, ts: int) -> pa.Table:
    data = Table(str(path)).read()
    row = data.select([c for c in data.column_names if c not in META_FIELDS
                       and c in t.data_schema.names]).slice(0, 1)
    return row.set_column(row.schema.get_field_index(t.ordering_field), t.ordering_field,
                          pa.array([ts], row.schema.field(t.ordering_field).type))


def test_an_index_definition_of_hudis_columns_follows_a_new_column(tmp_path: Path) -> None:
    """The column_stats definition lists the columns Hudi's rule chose (all of them, fewer
    than 32): Hudi recomputes them from each commit's schema and rewrites the definition
    (``HoodieColumnStatsIndexUtils.updateColsToIndex``), so the commit that adds a column
    indexes it, and so does every later one."""
    from .hudi_fixtures import fixture_table
    from .test_mdt_colstats import KEEP_STATS

    path = _copy(fixture_table("v9_txns_simple_meta/v9_txns_simple_meta"), tmp_path)
    defs = path / ".hoodie" / ".index_defs" / "index.json"
    listed = json.loads(defs.read_text())["indexDefinitions"]["column_stats"]["sourceFields"]
    t = MorTable(str(path), WriteConfig(hoodie_options=KEEP_STATS))
    row = _txns_row(path, t, 10**15).append_column("new_col", pa.array([42], pa.int64()))
    t.upsert(row)
    first = Table(str(path)).timeline.completed()[-1].requested
    assert any(first in r["fileName"] for r in _stats_of(path, "new_col"))
    assert _block_stats_of(path, first, "new_col"), "the commit's blocks keep its stats"
    doc = json.loads(defs.read_text())["indexDefinitions"]
    assert doc["column_stats"]["sourceFields"] == [*listed, "new_col"]
    assert doc["secondary_index_merchant_idx"]["sourceFields"] == ["merchant_name"]
    # the next commit indexes it too, and a column it adds
    t = MorTable(str(path), WriteConfig(hoodie_options=KEEP_STATS))
    ts = t.ordering_field
    row = row.set_column(row.schema.get_field_index(ts), ts,
                         pa.array([10**15 + 1], row.schema.field(ts).type))
    row = row.set_column(row.schema.get_field_index("new_col"), "new_col",
                         pa.array([43], pa.int64())).append_column("more", pa.array(["m"]))
    t.upsert(row)
    second = Table(str(path)).timeline.completed()[-1].requested
    assert any(second in r["fileName"] for r in _stats_of(path, "new_col"))
    assert any(second in r["fileName"] for r in _stats_of(path, "more"))
    # pruning by the new column is sound: files without its statistics are never dropped
    view = Table(str(path))
    key = t.key_field
    all_keys = view.read(columns=[key])[key].to_pylist()
    assert view.read(columns=[key], where="new_col = 43")[key].to_pylist() == \
        row.column(key).to_pylist()
    assert view.read(columns=[key], where="new_col = 42").num_rows == 0
    assert sorted(view.read(columns=[key], where="new_col IS NULL")[key].to_pylist()) == \
        sorted(k for k in all_keys if k not in row.column(key).to_pylist())


def test_a_column_an_index_definition_lists_is_indexed_from_the_commit_that_adds_it(
        tmp_path: Path) -> None:
    from .hudi_fixtures import fixture_table
    from .test_mdt_colstats import KEEP_STATS

    path = _copy(fixture_table("v9_txns_simple_meta/v9_txns_simple_meta"), tmp_path)
    defs = path / ".hoodie" / ".index_defs" / "index.json"
    doc = json.loads(defs.read_text())
    chosen = ["_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key",
              "txn_id", "new_col"]
    doc["indexDefinitions"]["column_stats"]["sourceFields"] = chosen
    defs.write_text(json.dumps(doc))
    # the table does not have new_col yet: writes are not refused for it
    t = MorTable(str(path), WriteConfig(hoodie_options=KEEP_STATS))
    t.upsert(_txns_row(path, t, 10**15).append_column("new_col", pa.array([7], pa.int64())))
    instant = Table(str(path)).timeline.completed()[-1].requested
    assert any(instant in r["fileName"] for r in _stats_of(path, "new_col"))
    assert not any(instant in r["fileName"] for r in _stats_of(path, "amount"))
    assert json.loads(defs.read_text())["indexDefinitions"]["column_stats"][
        "sourceFields"] == chosen


def test_schema_on_read_without_a_history_writes_as_hudi_does(tmp_path: Path) -> None:
    """``hoodie.schema.on.read.enable=true`` on a table without an internal schema: Hudi's
    writer records none (``saveInternalSchema`` needs a history; ``ALTER TABLE`` makes the
    first), and neither does morlog (spec/table.md §7.8)."""
    path = tmp_path / "t"
    _first(path)
    t = MorTable(str(path), WriteConfig.from_hoodie_options(
        {"hoodie.schema.on.read.enable": "true"}))
    t.upsert(_evolving_batch())
    view = Table(str(path))
    assert "latest_schema" not in view.timeline.metadata(view.timeline.completed()[-1])[
        "extraMetadata"]
    assert not (path / ".hoodie" / ".schema").exists()
    assert view.schema().names[-1] == "extra"


# --- the property: random evolutions against a model ------------------------------------------

_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
EVOLUTION_EXAMPLES = {"ci": 30, "slow": 2000, "hunt": 400}.get(_PROFILE, 8)

evolution_ops = st.lists(st.one_of(
    st.tuples(st.just("write"), st.lists(st.integers(0, 7), min_size=1, max_size=4),
              st.booleans()),
    st.tuples(st.just("add_column"), st.sampled_from(["int", "string"])),
    st.tuples(st.just("add_field")),
    st.tuples(st.just("widen")),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 7), min_size=1, max_size=3)),
    st.tuples(st.just("bad"), st.sampled_from(["string_for_number", "not_nullable",
                                               "struct_field_type", "narrow", "missing"])),
    st.tuples(st.just("service"), st.sampled_from(["compact", "logcompact", "clean"])),
), min_size=1, max_size=7)

_WIDER = {pa.int32(): pa.int64(), pa.int64(): pa.float64()}


class _EvolutionModel:
    """What Hudi's rules make of the batches: the columns (top level and struct fields)
    with their types, and every live record under them (None where a write did not know a
    column)."""

    def __init__(self) -> None:
        self.columns: dict[str, pa.DataType] = {"id": pa.string(), "ts": pa.int64(),
                                                "v": pa.int32(), "p": pa.string()}
        self.fields: list[str] = ["a"]  # the struct column "s": a int32, then strings
        self.rows: dict[str, dict[str, Any]] = {}
        self.clock = 0

    def struct_type(self, fields: list[str] | None = None) -> pa.DataType:
        names = self.fields if fields is None else fields
        return pa.struct([(f, pa.int32() if f == "a" else pa.string()) for f in names])

    def batch(self, keys: list[int], narrow: bool) -> pa.Table:
        """Rows of ``keys`` with every column; ``narrow``: ``v`` in its first type (int32),
        the struct without its added fields (both converted by the writer)."""
        self.clock += 1
        ids = [f"k{k}" for k in dict.fromkeys(keys)]
        n = len(ids)
        cols: dict[str, pa.Array] = {}
        for name, typ in self.columns.items():
            if name == "id":
                cols[name] = pa.array(ids)
            elif name == "ts":
                cols[name] = pa.array([self.clock] * n, pa.int64())
            elif name == "p":
                cols[name] = pa.array(["a" if int(i[1:]) % 2 else "b" for i in ids])
            elif name == "v":
                vt = pa.int32() if narrow else typ
                vals = [self.clock * 10 + int(i[1:]) for i in ids]
                cols[name] = pa.array([x + 0.5 if pa.types.is_floating(vt) else x
                                       for x in vals], vt)
            elif pa.types.is_string(typ):
                cols[name] = pa.array([f"{name}-{self.clock}-{i}" for i in ids])
            else:
                cols[name] = pa.array([self.clock] * n, typ)
        fields = ["a"] if narrow else self.fields
        cols["s"] = pa.array([{f: (int(i[1:]) if f == "a" else f"{f}{self.clock}")
                               for f in fields} for i in ids], self.struct_type(fields))
        return pa.table(cols)

    def apply(self, batch: pa.Table) -> None:
        for r in batch.to_pylist():
            row = {name: r.get(name) for name in self.columns}
            row["s"] = {f: r["s"].get(f) for f in self.fields}
            self.rows[r["id"]] = row

    def expected(self) -> list[dict[str, Any]]:
        out = []
        for r in self.rows.values():
            row = {name: r.get(name) for name in self.columns}
            row["s"] = {f: r["s"].get(f) for f in self.fields}
            out.append(row)
        return sorted(out, key=lambda r: r["id"])


def _table_rows(path: Path, model: _EvolutionModel) -> list[dict[str, Any]]:
    got = Table(str(path)).read()
    if not got.num_rows:
        return []
    return sorted(got.select([*model.columns, "s"]).to_pylist(), key=lambda r: r["id"])


@settings(max_examples=EVOLUTION_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(history=evolution_ops, carrier=st.sampled_from(["avro", "parquet"]),
       version=st.sampled_from([6, 8, 9]))
def test_random_evolutions_match_the_model(tmp_path_factory: pytest.TempPathFactory,
                                           history: list[tuple[Any, ...]], carrier: str,
                                           version: int) -> None:
    path = tmp_path_factory.mktemp("evo") / "t"
    model = _EvolutionModel()
    schema = pa.schema([*((n, t) for n, t in model.columns.items()),
                        ("s", model.struct_type())])
    cfg = WriteConfig(carrier=carrier,  # type: ignore[arg-type]
                      hoodie_options={**LOG_COMPACT, "hoodie.cleaner.commits.retained": "1"})
    MorTable.create(str(path), schema, key_field="id", partition_field="p",
                    ordering_field="ts", table_version=version, config=cfg)
    added = 0
    for op in history:
        t = MorTable(str(path), cfg)
        kind = op[0]
        if kind in ("write", "add_column", "add_field", "widen"):
            if kind == "add_column":
                added += 1
                model.columns[f"c{added}"] = pa.int32() if op[1] == "int" else pa.string()
            elif kind == "add_field":
                added += 1
                model.fields.append(f"b{added}")
            elif kind == "widen":
                if model.columns["v"] not in _WIDER:
                    continue
                model.columns["v"] = _WIDER[model.columns["v"]]
            keys = op[1] if kind == "write" else [added % 8, (added + 3) % 8]
            batch = model.batch(keys, narrow=kind == "write" and op[2])
            t.upsert(batch)
            model.apply(batch)
        elif kind == "delete":
            model.clock += 1
            ids = [f"k{k}" for k in dict.fromkeys(op[1])]
            t.delete(pa.table({"id": ids, "p": ["a" if int(i[1:]) % 2 else "b" for i in ids],
                               "ts": [model.clock] * len(ids)}))
            for i in ids:
                model.rows.pop(i, None)
        elif kind == "bad":
            batch = model.batch([1], narrow=False)
            if op[1] == "string_for_number":
                batch = batch.set_column(batch.schema.get_field_index("v"), "v",
                                         pa.array(["7"]))
            elif op[1] == "not_nullable":
                batch = pa.Table.from_arrays(
                    [*batch.columns, pa.array([1], pa.int64())],
                    schema=pa.schema([*batch.schema, pa.field("req", pa.int64(),
                                                              nullable=False)]))
            elif op[1] == "struct_field_type":
                batch = batch.set_column(batch.schema.get_field_index("s"), "s",
                                         pa.array([{"a": "x"}]))
            elif op[1] == "narrow":
                if model.columns["v"] == pa.int32():
                    continue
                batch = batch.set_column(batch.schema.get_field_index("v"), "v",
                                         pa.array([True]))
            else:
                batch = batch.drop_columns(["v"])
            before = _digest(path)
            with pytest.raises(UsageError):
                t.upsert(batch)
            assert _digest(path) == before, op
        else:
            getattr(t, {"compact": "compact", "logcompact": "log_compact",
                        "clean": "clean"}[op[1]])()
        assert _table_rows(path, model) == model.expected(), op
        got = Table(str(path)).schema()
        assert got.field("v").type == model.columns["v"]
        assert got.field("s").type == model.struct_type()
    if not model.rows:
        return
    if len(model.fields) > 1 or model.columns["v"] != pa.int32():
        # hudi-rs (0.5) cannot read a log block whose struct column lacks fields the latest
        # schema has ("reconcile child-count mismatch"), nor a log block lacking a column
        # when another was widened since ("partial-update column 'v' has type Int32 but the
        # table schema expects Int64"; base files it reads): hudi-rs limitations Hudi's Java
        # reader (rewriteRecordWithNewSchema) does not have. After a compaction every row
        # is in a base file under the latest schema
        MorTable(str(path), cfg).compact()
        assert _table_rows(path, model) == model.expected()
    assert _rows(_hudi_rs(path)) == model.expected()


def test_the_evolution_vectors() -> None:
    """spec/vectors/evolution/cases.json (spec/table.md §7.7): the schema each batch makes
    the commit record, or the column its refusal names."""
    from morlog.logformat.avroschema import avro_to_arrow_schema
    from morlog.writers.core.evolution import evolve

    cases = json.loads((Path(__file__).parent.parent / "spec" / "vectors" / "evolution"
                        / "cases.json").read_text())
    assert len(cases) >= 8
    for name, case in cases.items():
        batch = avro_to_arrow_schema(case["batch"])
        if "refused" in case:
            with pytest.raises(UsageError) as e:
                evolve(case["table"], batch, meta_fields=set(META_FIELDS))
            assert repr(case["refused"]) in str(e.value) and "Hudi" in str(e.value), name
            continue
        got = evolve(case["table"], batch, meta_fields=set(META_FIELDS))
        assert (None if got is None else got[0]) == case["evolved"], name


def test_spark_writes_evolve_the_table_like_the_client(spark: Any, tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    path = str(tmp_path / "t")
    opts = {"hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.table.name": "sparky"}
    df1 = spark.createDataFrame([(f"k{i}", "eu" if i % 2 else "us", 1, i) for i in range(20)],
                                "id string, region string, ts long, n int").repartition(2)
    df1.write.format("morlog").options(**opts).mode("append").save(path)
    # a new column and n widened int -> long
    df2 = spark.createDataFrame([(f"k{i}", "eu" if i % 2 else "us", 2, 2**40 + i, f"x{i}")
                                 for i in range(15, 25)],
                                "id string, region string, ts long, n long, extra string")
    df2.write.format("morlog").options(**opts).mode("append").save(path)
    schema = Table(path).schema()
    assert schema.field("n").type == pa.int64() and schema.names[-1] == "extra"
    back = {r.id: r.asDict() for r in spark.read.format("morlog").load(path).collect()}
    assert len(back) == 25
    assert (back["k3"]["n"], back["k3"]["extra"]) == (3, None)
    assert (back["k20"]["n"], back["k20"]["extra"]) == (2**40 + 20, "x20")
    assert _rows(_hudi_rs(Path(path))) == _rows(Table(path).read())
    # a refused change leaves the table as it was
    before = _digest(Path(path))
    bad = spark.createDataFrame([("k1", "eu", 3, "seven")],
                                "id string, region string, ts long, n string")
    with pytest.raises(Exception, match="'n'"):
        bad.write.format("morlog").options(**opts).mode("append").save(path)
    assert _digest(Path(path)) == before


def test_orc_base_files_read_and_compact_under_the_latest_schema(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = MorTable.create(str(path), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", table_version=9,
                        table_properties={"hoodie.table.base.file.format": "ORC"})
    t.upsert(pa.table({"id": ["a", "b", "c"], "ts": [1, 1, 1],
                       "n": pa.array([1, 2, 3], pa.int32()), "p": ["x", "y", "x"],
                       "s": pa.array([{"a": 1}, {"a": 2}, None], S1)}))
    assert all(s.base_file and s.base_file.endswith(".orc")
               for s in Table(str(path)).file_slices())
    MorTable(str(path)).upsert(_evolving_batch())
    want = [r for r in EXPECTED if r["id"] != "b"] + [
        {"id": "b", "ts": 1, "n": 2, "p": "y", "s": {"a": 2, "b": None}, "extra": None}]
    want.sort(key=lambda r: r["id"])
    assert _rows(Table(str(path)).read()) == want
    assert sorted(Table(str(path)).read(columns=["id"], where="extra IS NULL")
                  .column("id").to_pylist()) == ["b", "c", "d"]
    MorTable(str(path)).compact()
    assert all(not s.log_files for s in Table(str(path)).file_slices())
    assert _rows(Table(str(path)).read()) == want


def test_a_writer_opened_before_another_evolved_the_schema_keeps_its_columns(
        tmp_path: Path) -> None:
    path = tmp_path / "t"
    _first(path)
    early = MorTable(str(path))  # reads the schema before the evolution
    MorTable(str(path)).upsert(_evolving_batch())
    # its batch has the old columns: the commit must not record the old schema (which
    # would drop "extra" from the table), nor refuse the batch for lacking it... Hudi's
    # writer deduces its schema from the latest table schema: the batch lacks "extra"
    with pytest.raises(UsageError, match="extra"):
        early.upsert(pa.table({"id": ["c"], "ts": [5], "n": pa.array([9], pa.int32()),
                               "p": ["x"], "s": pa.array([{"a": 3}], S1)}))
    early.upsert(pa.table({"id": ["c"], "ts": [5], "n": pa.array([9], pa.int32()),
                           "p": ["x"], "s": pa.array([{"a": 3}], S1), "extra": [0.5]}))
    view = Table(str(path))
    assert view.schema().names[-1] == "extra" and view.schema().field("n").type == pa.int64()
    row = [r for r in _rows(view.read()) if r["id"] == "c"][0]
    assert row == {"id": "c", "ts": 5, "n": 9, "p": "x", "s": {"a": 3, "b": None},
                   "extra": 0.5}


def test_insert_overwrite_evolves_and_a_refused_one_keeps_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _first(path)
    batch = _evolving_batch().filter(pa.compute.equal(pa.compute.field("p"), "x"))
    t.insert_overwrite(batch)
    view = Table(str(path))
    assert view.schema().names[-1] == "extra"
    assert [r["id"] for r in _rows(view.read())] == ["a", "b"]
    before = _digest(path)
    bad = batch.append_column("more", pa.array([1])).set_column(0, "id", pa.array([None],
                                                                                 pa.string()))
    with pytest.raises(UsageError):
        t.insert_overwrite(bad)
    assert _digest(path) == before and "more" not in t.data_schema.names
