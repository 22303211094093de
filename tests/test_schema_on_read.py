"""Tables with Hudi's schema-on-read evolution (issue 27; spec/table.md §7.8): renamed, dropped,
reordered and retyped columns are read by column id, in snapshot, time travel, incremental,
read-optimized and predicate reads, the CLI and Spark; writes keep the internal schema as
Hudi's writer does; the internal schema codec follows the conformance vectors
(spec/vectors/internal_schema)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat import internal_schema as isc
from morlog.logformat.blocks import META_FIELDS
from morlog.logformat.errors import ContentError
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig

from .schema_on_read_tables import alter
from .test_real_table_writes import _hudi_rs

VECTORS = Path(__file__).resolve().parent.parent / "spec" / "vectors" / "internal_schema"

S1 = pa.struct([("a", pa.int32()), ("b", pa.string())])
SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("n", pa.int32()),
                    ("p", pa.string()), ("s", S1), ("gone", pa.string())])


def _rows(t: pa.Table) -> list[dict[str, Any]]:
    t = t.select([c for c in t.column_names if c not in META_FIELDS])
    return sorted(t.to_pylist(), key=lambda r: r["id"])


def _table(path: Path, version: int, carrier: str) -> list[tuple[str, str]]:
    """Rows in a compacted base file, then a log block: (instant, completion time) of the
    two writes."""
    cfg = WriteConfig.from_hoodie_options({"hoodie.logfile.data.block.format": carrier})
    t = MorTable.create(str(path), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", table_version=version, config=cfg)
    t.upsert(pa.table({"id": ["a", "b", "c"], "ts": [1, 1, 1],
                       "n": pa.array([1, 2, 3], pa.int32()), "p": ["x", "y", "x"],
                       "s": pa.array([{"a": 1, "b": "p"}, {"a": 2, "b": "q"}, None], S1),
                       "gone": ["g1", "g2", "g3"]}))
    t.compact()
    t.upsert(pa.table({"id": ["b", "d"], "ts": [2, 2], "n": pa.array([20, 40], pa.int32()),
                       "p": ["y", "x"], "s": pa.array([{"a": 22, "b": "r"}, None], S1),
                       "gone": ["g2b", "g4"]}))
    return [(i.requested, i.completed or i.requested)
            for i in Table(str(path)).timeline.completed() if i.action == "deltacommit"]


#: after ALTER TABLE: n renamed num, retyped long and moved first; s.a renamed aa; gone
#: dropped and a new gone added (a new id: the old values must not come back)
AFTER = [
    {"num": 1, "id": "a", "ts": 1, "p": "x", "s": {"aa": 1, "b": "p"}, "gone": None},
    {"num": 20, "id": "b", "ts": 2, "p": "y", "s": {"aa": 22, "b": "r"}, "gone": None},
    {"num": 3, "id": "c", "ts": 1, "p": "x", "s": None, "gone": None},
    {"num": 40, "id": "d", "ts": 2, "p": "x", "s": None, "gone": None},
]


def _evolve(path: Path) -> str:
    alter(path, rename={"n": "num", "s.a": "aa"}, drop=("gone",))
    return alter(path, add=(("gone", "string"),), retype={"num": "long"}, first="num")


@pytest.mark.parametrize("version", [6, 8, 9])
@pytest.mark.parametrize("carrier", ["avro", "parquet"])
def test_renamed_dropped_reordered_and_retyped_columns_read_by_id(
        tmp_path: Path, version: int, carrier: str) -> None:
    path = tmp_path / "t"
    writes = _table(path, version, carrier)
    _evolve(path)
    view = Table(str(path))
    got = view.read()
    assert [c for c in got.column_names if c not in META_FIELDS] == list(AFTER[0])
    assert got.schema.field("num").type == pa.int64()
    assert _rows(got) == AFTER
    # a projection reads the renamed column from the files' old names
    assert sorted(view.read(columns=["id", "num"]).to_pylist(), key=lambda r: r["id"]) == [
        {"id": r["id"], "num": r["num"]} for r in AFTER]
    # a predicate on a renamed column (statistics name "n": never pruned by "num")
    assert sorted(view.read(columns=["id"], where="num > 2")["id"].to_pylist()) == [
        "b", "c", "d"]
    assert view.read(columns=["id"], where="gone = 'g1'").num_rows == 0
    # time travel: the schema of that instant, its names and values
    old = _rows(view.read(as_of=writes[0][0]))
    assert old[0] == {"id": "a", "ts": 1, "n": 1, "p": "x", "s": {"a": 1, "b": "p"},
                      "gone": "g1"}
    # incremental: the records of the second write, under the latest schema
    inc = _rows(view.incremental(writes[0][1]))
    assert inc == [AFTER[1], AFTER[3]]
    ro = _rows(view.read(query_type="read_optimized"))
    assert [r["num"] for r in ro] == [1, 2, 3] and all(r["gone"] is None for r in ro)


def test_the_cli_reads_a_schema_on_read_table(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from morlog.cli import main

    path = tmp_path / "t"
    _table(path, 9, "avro")
    _evolve(path)
    assert main(["snapshot", str(path), "--json", "--columns", "id,num,s"]) == 0
    rows = sorted(json.loads(capsys.readouterr().out), key=lambda r: r["id"])
    assert rows == [{"id": r["id"], "num": r["num"], "s": r["s"]} for r in AFTER]


def test_hudi_rs_reads_the_name_compatible_evolutions_the_same(tmp_path: Path) -> None:
    """hudi-rs has no internal schema (it matches columns by name, as of its HEAD): it
    reads an ALTER that adds columns as morlog does; renames and drops it cannot follow,
    and a type an ALTER widens it refuses in a log block ("partial-update column 'n' has
    type Int32 but the table schema expects Int64"; spec/table.md §7.8)."""
    path = tmp_path / "t"
    _table(path, 9, "avro")
    alter(path, add=(("extra", "double"), ("more", "string")))
    mine = _rows(Table(str(path)).read())
    assert [r["n"] for r in mine] == [1, 20, 3, 40]
    assert all(r["extra"] is None and r["more"] is None for r in mine)
    assert _rows(_hudi_rs(path)) == mine


def _latest(path: Path) -> tuple[str, isc.InternalSchema]:
    view = Table(str(path))
    last = view.timeline.completed()[-1]
    got = isc.parse(view.timeline.metadata(last)["extraMetadata"]["latest_schema"])
    assert got is not None
    return last.requested, got


@pytest.mark.parametrize("version", [6, 9])
def test_writes_keep_the_internal_schema_as_hudis_writer_does(tmp_path: Path,
                                                             version: int) -> None:
    path = tmp_path / "t"
    _table(path, version, "avro")
    altered = _evolve(path)
    _, before = _latest(path)
    t = MorTable(str(path))
    assert t.data_schema.names[0] == "num"  # the latest names
    s2 = pa.struct([("aa", pa.int32()), ("b", pa.string())])
    # a write that leaves the schema as it is records the version as it is
    t.upsert(pa.table({"num": pa.array([100], pa.int64()), "id": ["a"], "ts": [5], "p": ["x"],
                       "s": pa.array([{"aa": 9, "b": "z"}], s2), "gone": ["new"]}))
    instant, same = _latest(path)
    assert same == before and same.version_id == int(altered)
    history = (path / ".hoodie" / ".schema" / f"{instant}.schemacommit").read_text()
    assert isc.parse_history(history) == isc.parse_history(
        (path / ".hoodie" / ".schema" / f"{altered}.schemacommit").read_text())
    # a new column: a new id after max_column_id, a version of the commit's instant
    t.upsert(pa.table({"num": pa.array([7], pa.int64()), "id": ["e"], "ts": [5], "p": ["y"],
                       "s": pa.array([None], s2), "gone": [None], "extra": [2.5]}))
    instant, grown = _latest(path)
    assert grown.version_id == int(instant)
    assert grown.fields[-1] == isc.Field(before.max_column_id + 1, "extra", True, "double")
    assert grown.max_column_id == before.max_column_id + 1
    text = (path / ".hoodie" / ".schema" / f"{instant}.schemacommit").read_text()
    assert text == isc.history_json(grown, history)
    t.delete(pa.table({"id": ["c"], "p": ["x"], "ts": [9]}))
    t.compact()
    want = [{**r, "extra": None} for r in AFTER if r["id"] != "c"]
    want[0] = {**want[0], "num": 100, "ts": 5, "s": {"aa": 9, "b": "z"}, "gone": "new"}
    want.append({"num": 7, "id": "e", "ts": 5, "p": "y", "s": None, "gone": None,
                 "extra": 2.5})
    assert _rows(Table(str(path)).read()) == sorted(want, key=lambda r: r["id"])
    # an ALTER after morlog's writes: renames reach every file, morlog's too
    alter(path, rename={"extra": "bonus", "num": "n2"})
    got = _rows(Table(str(path)).read())
    assert [(r["id"], r["n2"], r["bonus"]) for r in got] == [
        (r["id"], r["num"], r["extra"]) for r in sorted(want, key=lambda r: r["id"])]


@pytest.mark.parametrize("carrier", ["avro", "parquet"])
def test_log_compaction_merges_blocks_of_two_versions_under_the_latest(
        tmp_path: Path, carrier: str) -> None:
    from morlog.readers.logfile import LogFileReader

    path = tmp_path / "t"
    _table(path, 9, carrier)
    alter(path, rename={"n": "num", "s.a": "aa"})
    s2 = pa.struct([("aa", pa.int32()), ("b", pa.string())])
    opts = {"hoodie.log.compaction.blocks.threshold": "2",
            "hoodie.logfile.data.block.format": carrier}
    t = MorTable(str(path), WriteConfig.from_hoodie_options(opts))
    t.upsert(pa.table({"id": ["b"], "ts": [3], "num": pa.array([21], pa.int32()),
                       "p": ["y"], "s": pa.array([{"aa": 23, "b": "s"}], s2),
                       "gone": ["g2c"]}))
    want = _rows(Table(str(path)).read())
    assert [r for r in want if r["id"] == "b"][0]["num"] == 21
    assert t.log_compact().results
    view = Table(str(path))
    assert _rows(view.read()) == want
    # the compacted block is written under the latest names
    s = [s for s in view.file_slices() if s.partition == "y"][0]
    last = s.log_files[-1]
    with LogFileReader(view.storage.source(str(path / "y" / last))) as r:
        names = [b.to_arrow().column_names for b in r.blocks() if b.schema]
    assert names and "num" in names[-1] and "n" not in names[-1]
    MorTable(str(path)).compact()
    assert _rows(Table(str(path)).read()) == want


def test_a_damaged_history_is_a_content_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _table(path, 9, "avro")
    last = Table(str(path)).timeline.completed()[-1].requested
    (path / ".hoodie" / ".schema").mkdir()
    bad = path / ".hoodie" / ".schema" / f"{last}.schemacommit"
    bad.write_text("{}")
    with pytest.raises(ContentError, match="internal schema") as e:
        Table(str(path)).read()
    assert e.value.path is not None and e.value.path.endswith(bad.name)


# --- the codec against the conformance vectors ---------------------------------------------


def _cases() -> list[dict[str, Any]]:
    doc = json.loads((VECTORS / "cases.json").read_text())
    cases: list[dict[str, Any]] = doc["cases"]
    return cases


@pytest.mark.parametrize("case", _cases(), ids=lambda c: str(c["name"]))
def test_the_internal_schema_vectors(case: dict[str, Any]) -> None:
    if "avro" in case:  # an Avro schema -> its internal schema (Hudi's ids)
        got = isc.from_avro(case["avro"], case.get("version_id", 0))
        assert isc.to_json(got) == case["internal"]
    schema = isc.parse(case["internal"])
    assert schema is not None and isc.to_json(schema) == case["internal"]  # round trip
    if "write_avro" in case:
        before = isc.parse(case["before"])
        assert before is not None
        got = isc.reconcile(before, case["write_avro"])
        assert isc.to_json(isc.InternalSchema(got.record, schema.version_id,
                                              got.max_column_id)) == case["internal"]
    if "history_before" in case:
        assert isc.history_json(schema, case["history_before"]) == case["history"]
        versions = isc.parse_history(case["history"])
        for instant, want in case["search"].items():
            found = isc.search(versions, int(instant))
            assert (found.version_id if found else None) == want


def test_spark_reads_a_schema_on_read_table(spark: Any, tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    path = tmp_path / "t"
    _table(path, 9, "parquet")
    _evolve(path)
    df = spark.read.format("morlog").load(str(path))
    assert [c for c in df.columns if c not in META_FIELDS] == list(AFTER[0])
    back = sorted(({k: v for k, v in r.asDict(recursive=True).items() if k not in META_FIELDS}
                   for r in df.collect()), key=lambda r: r["id"])
    assert back == AFTER
    assert sorted(r.id for r in df.where("num > 2").select("id").collect()) == ["b", "c", "d"]


# --- the property: random ALTERs and writes against a model -------------------------------

_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
SOR_EXAMPLES = {"ci": 25, "slow": 1500, "hunt": 300}.get(_PROFILE, 6)

sor_ops = st.lists(st.one_of(
    st.tuples(st.just("write"), st.lists(st.integers(0, 5), min_size=1, max_size=3)),
    st.tuples(st.just("write_new_column"), st.lists(st.integers(0, 5), min_size=1,
                                                     max_size=2)),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 5), min_size=1, max_size=2)),
    st.tuples(st.just("rename"), st.integers(0, 9)),
    st.tuples(st.just("drop"), st.integers(0, 9)),
    st.tuples(st.just("add"), st.sampled_from(["long", "string"]), st.booleans()),
    st.tuples(st.just("widen"), st.integers(0, 9)),
    st.tuples(st.just("compact")),
), min_size=1, max_size=9)


class _Model:
    """Hudi's reading of a schema-on-read table: columns by id, names and types as the latest
    version says; a record's value of a column written before a drop never comes back."""

    def __init__(self) -> None:
        self.cols: dict[int, tuple[str, str]] = {0: ("c0", "int"), 1: ("c1", "string")}
        self.next_id = 2
        self.rows: dict[str, dict[int, Any]] = {}
        self.dropped: list[str] = []
        self.ts = 0
        self.n = 0

    def fresh(self) -> str:
        self.n += 1
        return f"col{self.n}"

    def arrow(self, t: str) -> pa.DataType:
        return {"int": pa.int32(), "long": pa.int64(), "string": pa.string()}[t]

    def value(self, t: str, k: int) -> Any:
        return str(k * 7 + self.ts) if t == "string" else k * 1000 + self.ts

    def batch(self, keys: list[int], extra: tuple[int, str] | None = None) -> pa.Table:
        self.ts += 1
        cols: dict[str, pa.Array] = {
            "id": pa.array([f"k{k}" for k in keys]), "ts": pa.array([self.ts] * len(keys)),
            "p": pa.array(["x" if k % 2 else "y" for k in keys])}
        ids = sorted(self.cols) + ([extra[0]] if extra else [])
        for cid in ids:
            name, t = self.cols[cid] if cid in self.cols else (extra[1], "long")  # type: ignore[index]
            cols[name] = pa.array([self.value(t, k) for k in keys], self.arrow(t))
        for k in keys:
            self.rows[f"k{k}"] = {cid: self.value(
                self.cols[cid][1] if cid in self.cols else "long", k) for cid in ids}
        return pa.table(cols)

    def expected(self) -> list[dict[str, Any]]:
        out = []
        for key, vals in sorted(self.rows.items()):
            r: dict[str, Any] = {"id": key}
            for cid, (name, _) in sorted(self.cols.items()):
                r[name] = vals.get(cid)
            out.append(r)
        return out


def _visible(t: pa.Table, model: _Model) -> list[dict[str, Any]]:
    names = ["id", *(n for _, (n, _) in sorted(model.cols.items()))]
    if not t.num_rows:
        return []
    return sorted(t.select(names).to_pylist(), key=lambda r: r["id"])


@settings(max_examples=SOR_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(history=sor_ops, version=st.sampled_from([6, 9]))
def test_random_alters_and_writes_match_the_model(tmp_path_factory: pytest.TempPathFactory,
                                                  history: list[tuple[Any, ...]],
                                                  version: int) -> None:
    path = tmp_path_factory.mktemp("sor") / "t"
    model = _Model()
    schema = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("p", pa.string()),
                        ("c0", pa.int32()), ("c1", pa.string())])
    MorTable.create(str(path), schema, key_field="id", partition_field="p",
                    ordering_field="ts", table_version=version).upsert(model.batch([0, 1, 2]))
    # the first ALTER makes the internal schema (a rename of nothing: the same columns)
    alter(path)
    for op in history:
        kind = op[0]
        data = sorted(model.cols)
        if kind == "write":
            MorTable(str(path)).upsert(model.batch(sorted(set(op[1]))))
        elif kind == "write_new_column":
            name = model.fresh()
            cid = model.next_id
            model.next_id += 1
            batch = model.batch(sorted(set(op[1])), (cid, name))
            MorTable(str(path)).upsert(batch)
            model.cols[cid] = (name, "long")
            for vals in model.rows.values():
                vals.setdefault(cid, None)
        elif kind == "delete":
            keys = sorted(set(op[1]))
            model.ts += 1
            MorTable(str(path)).delete(pa.table({
                "id": [f"k{k}" for k in keys], "p": ["x" if k % 2 else "y" for k in keys],
                "ts": [model.ts] * len(keys)}))
            for k in keys:
                model.rows.pop(f"k{k}", None)
        elif kind in ("rename", "drop", "widen") and data:
            cid = data[op[1] % len(data)]
            name, t = model.cols[cid]
            if kind == "rename":
                new = model.fresh()
                alter(path, rename={name: new})
                model.cols[cid] = (new, t)
            elif kind == "drop":
                alter(path, drop=(name,))
                del model.cols[cid]
                model.dropped.append(name)
            elif t == "int":
                alter(path, retype={name: "long"})
                model.cols[cid] = (name, "long")
        elif kind == "add":
            reuse = op[2] and [n for n in model.dropped
                               if n not in {v[0] for v in model.cols.values()}]
            name = reuse[0] if reuse else model.fresh()
            alter(path, add=((name, op[1]),))
            model.cols[model.next_id] = (name, op[1])
            model.next_id += 1
        elif kind == "compact":
            MorTable(str(path)).compact()
        got = _visible(Table(str(path)).read(), model)
        assert got == model.expected(), (op, model.cols)


def test_spark_writes_a_schema_on_read_table_keeping_its_internal_schema(
        spark: Any, tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    path = tmp_path / "t"
    _table(path, 9, "avro")
    altered = _evolve(path)
    _, before = _latest(path)
    opts = {"hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.datasource.write.precombine.field": "ts"}
    df = spark.createDataFrame(
        [(50, "a", 9, "x", (5, "w"), "again", "new")],
        "num long, id string, ts long, p string, s struct<aa:int,b:string>, gone string, "
        "added string")
    df.write.format("morlog").options(**opts).mode("append").save(str(path))
    instant, after = _latest(path)
    assert after.version_id == int(instant) != int(altered)
    assert after.fields[-1] == isc.Field(before.max_column_id + 1, "added", True, "string")
    got = {r["id"]: r for r in _rows(Table(str(path)).read())}
    assert got["a"] == {"num": 50, "id": "a", "ts": 9, "p": "x", "s": {"aa": 5, "b": "w"},
                        "gone": "again", "added": "new"}
    assert got["b"] == {**AFTER[1], "added": None}


def test_the_wire_keys_are_released_hudis_and_the_pre_release_ones_read() -> None:
    """Released Hudi writes ``version_id``/``element_id``/``key_id``/``value_id`` (and the
    commit key ``latest_schema``); the hyphenated keys of its code before the release read
    as the same schema."""
    text = ('{"max_column_id":5,"version_id":20240101000000000,"type":"record","fields":['
            '{"id":0,"name":"id","optional":false,"type":"string"},'
            '{"id":1,"name":"tags","optional":true,"type":{"type":"array","element_id":3,'
            '"element":"int","element_optional":true}},'
            '{"id":2,"name":"m","optional":true,"type":{"type":"map","key_id":4,"key":"string",'
            '"value_id":5,"value":"long","value_optional":true}}]}')
    s = isc.parse(text)
    assert s is not None and isc.to_json(s) == text
    legacy = (text.replace('"version_id"', '"version-id"').replace('"element_id"', '"element-id"')
              .replace('"key_id"', '"key-id"').replace('"value_id"', '"value-id"'))
    assert isc.parse(legacy) == s
    assert isc.parse_history('{"schemas":[' + legacy + "]}") == {s.version_id: s}
