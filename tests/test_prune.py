"""Slice pruning (``morlog.readers.prune``, spec/prune.md): the rules case by case, filtered
reads, ``morlog prune``, the fixture tables, and the soundness property test.

THE SOUNDNESS PROPERTY (spec/prune.md §2): on random tables (the real write client with
upserts, inserts, deletes, failed commits, rollbacks, compaction, log compaction and clean;
and TableBuilder tables with ROLLBACK command blocks, failed instants and log compaction
blocks) and random predicates, every slice whose merged rows hold a row where the predicate is
TRUE is kept, by morlog's rule and by Hudi's; morlog prunes every slice Hudi's rule prunes.
``HYPOTHESIS_PROFILE=hunt`` (1500) or ``slow`` (20000) runs many examples,
``MORLOG_PRUNE_EXAMPLES=N`` any number; the default profile runs a few dozen. The counts
(slices, slices with a match, slices pruned by each rule) are printed at the end of the
module (``pytest -s``) and, with ``MORLOG_PRUNE_STATS=FILE``, appended to FILE as JSON.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from morlog.cli import main
from morlog.logformat import HeaderKey
from morlog.logformat.errors import MorlogError, UsageError
from morlog.readers import predicate as pr
from morlog.readers.column_stats import ColumnRange
from morlog.readers.prune import (
    Pruner,
    PruneResult,
    SliceDecision,
    bind_where,
    predicate_schema,
    prune,
    union_ranges,
)
from morlog.readers.table import FileSlice, Table

from .hudi_fixtures import requires_fixtures, tables
from .table_builder import Put, TableBuilder, instant
from .test_table_model import _inject_failure

_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
EXAMPLES = int(os.environ.get("MORLOG_PRUNE_EXAMPLES") or {
    "ci": 60, "slow": 20_000, "hunt": 1500}.get(_PROFILE, 25))


# --- helpers ----------------------------------------------------------------------------------


def _matching(table: Table, s: FileSlice, expr: pr.Expr,
              cache: dict[str, pa.Table] | None = None) -> int:
    """Merged rows of slice ``s`` for which the bound ``expr`` is TRUE."""
    key = f"{s.partition}/{s.file_id}"
    rows = cache.get(key) if cache is not None else None
    if rows is None:
        rows = table.read_slice(s)
        if cache is not None:
            cache[key] = rows
    if not rows.num_rows:
        return 0
    schema = predicate_schema(table)
    for c in pr.columns(expr):
        if c not in rows.column_names:
            rows = rows.append_column(schema.field(c), pa.nulls(rows.num_rows,
                                                               schema.field(c).type))
    return rows.filter(pr.to_arrow(expr)).num_rows


def _ids(result: PruneResult) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    return ({(d.partition, d.file_id) for d in result.kept},
            {(d.partition, d.file_id) for d in result.pruned})


def _decision(result: PruneResult) -> dict[str, SliceDecision]:
    return {d.file_id: d for d in result.kept + result.pruned}


def _builder(tmp: Path, **kw: Any) -> TableBuilder:
    return TableBuilder(str(tmp), **kw)


def _one_group(b: TableBuilder, puts: list[Put]) -> str:
    b.begin(instant(1))
    fid = b.new_group(puts[0].partition, puts, instant(1))
    b.complete(instant(1))
    return fid


# --- the rules, case by case ------------------------------------------------------------------


def test_rollback_block_does_not_keep_a_slice(tmp_path: Path) -> None:
    """A failed commit's block rolled back by a ROLLBACK command block: morlog prunes on the
    base file alone; Hudi's rule keeps the slice (the log file has no statistics)."""
    b = _builder(tmp_path, partitioned=False)
    fid = _one_group(b, [Put("k1", "", 1, 1), Put("k2", "", 1, 2)])
    b.begin(instant(2))
    b.log("", fid, [Put("k1", "", 2, 100)], instant(2))  # fails
    b.rollback(instant(2), instant(3))
    table = Table(str(tmp_path))
    m = _decision(prune(table, "v >= 100"))[fid]
    h = _decision(prune(table, "v >= 100", rule="hudi"))[fid]
    assert (m.kept, m.reason) == (False, "base file excludes")
    assert h.kept and "has no statistics" in h.reason
    assert table.read(where="v >= 100").num_rows == 0
    assert _decision(prune(table, "v = 2"))[fid].kept


def test_delete_block_never_makes_a_slice_match(tmp_path: Path) -> None:
    b = _builder(tmp_path, partitioned=False)
    fid = _one_group(b, [Put("k1", "", 1, 1), Put("k2", "", 1, 5)])
    b.begin(instant(2))
    b.delete("", fid, ["k1"], instant(2))
    b.complete(instant(2))
    table = Table(str(tmp_path))
    m = _decision(prune(table, "v > 50"))[fid]
    assert (m.kept, m.reason) == (False, "base file excludes")
    assert _decision(prune(table, "v > 50", rule="hudi"))[fid].kept
    assert _decision(prune(table, "v = 5"))[fid].kept


def test_failed_commit_block_is_ignored(tmp_path: Path) -> None:
    """A block of a commit that never completed (no rollback yet) holds v=999: it is never
    read, so it never keeps the slice; Hudi's rule keeps it."""
    b = _builder(tmp_path, partitioned=False)
    fid = _one_group(b, [Put("k1", "", 1, 1)])
    b.begin(instant(2))
    b.log("", fid, [Put("k1", "", 2, 7)], instant(2))
    b.complete(instant(2))
    b.begin(instant(3))
    b.log("", fid, [Put("k1", "", 3, 999)], instant(3))  # never completes
    table = Table(str(tmp_path))
    m = _decision(prune(table, "v = 999"))[fid]
    assert (m.kept, m.reason) == (False, "base file and 1 block exclude")
    assert _decision(prune(table, "v = 999", rule="hudi"))[fid].kept
    kept = _decision(prune(table, "v = 7"))[fid]
    assert kept.kept and kept.reason == f"block {instant(2)} may match"


def test_log_compaction_replaced_blocks_do_not_count(tmp_path: Path) -> None:
    b = _builder(tmp_path, partitioned=False)
    fid = _one_group(b, [Put("k1", "", 1, 1)])
    for n, v in ((2, 500), (3, 3)):
        b.begin(instant(n))
        b.log("", fid, [Put("k1", "", n, v)], instant(n))
        b.complete(instant(n))
    header = {HeaderKey.COMPACTED_BLOCK_TIMES: f"{instant(2)},{instant(3)}"}
    b.begin(instant(4), "logcompaction")
    b.log("", fid, [Put("k1", "", 3, 3)], instant(4), extra_header=header)
    b.complete(instant(4), "deltacommit")
    table = Table(str(tmp_path))
    m = _decision(prune(table, "v = 500"))[fid]
    assert (m.kept, m.reason) == (False, "base file and 1 block exclude")
    # Hudi's rule: the replaced block still lies in a log file with statistics
    assert _decision(prune(table, "v = 500", rule="hudi"))[fid].kept
    assert _decision(prune(table, "v = 3"))[fid].reason == f"block {instant(4)} may match"


def test_empty_slice_is_pruned(tmp_path: Path) -> None:
    """A log-only group whose only commit was rolled back has no rows."""
    b = _builder(tmp_path, partitioned=False)
    b.begin(instant(1))
    fid = b.new_log_group("", [Put("k1", "", 1, 1)], instant(1))  # fails
    b.rollback(instant(1), instant(2))
    table = Table(str(tmp_path))
    m = _decision(prune(table, "v = 1"))[fid]
    assert (m.kept, m.reason) == (False, "empty")
    assert _decision(prune(table, "v = 1", rule="hudi"))[fid].kept


def test_partition_predicate(tmp_path: Path) -> None:
    b = _builder(tmp_path, partitioned=True)
    b.begin(instant(1))
    fa = b.new_group("a", [Put("k1", "a", 1, 1)], instant(1))
    fb = b.new_group("b", [Put("k2", "b", 1, 1)], instant(1))
    b.complete(instant(1))
    table = Table(str(tmp_path))
    for rule in ("morlog", "hudi"):
        d = _decision(prune(table, "p = 'a'", rule=rule))
        assert d[fa].kept and not d[fb].kept and d[fb].reason == "partition values"
        d = _decision(prune(table, "p IN ('a', 'b') AND NOT p = 'b'", rule=rule))
        assert d[fa].kept and not d[fb].kept
        d = _decision(prune(table, "p IS NULL", rule=rule))
        assert not d[fa].kept and not d[fb].kept
    assert table.read(where="p = 'b'").column("id").to_pylist() == ["k2"]


def _set_props(path: Path, **extra: str) -> None:
    from morlog.logformat.table_files import format_properties, parse_properties

    f = path / ".hoodie" / "hoodie.properties"
    props = parse_properties(f.read_text(), str(f))
    props.update(extra)
    f.write_text(format_properties(props))


def test_partial_update_merges_decide_on_the_union(tmp_path: Path) -> None:
    """``ts = 2 AND v = 5``: the base file (ts 1, v 5) and the block (ts 2, v 7) each
    exclude it, so a whole-record merge prunes; a partial-update merge could mix ts of one
    record with v of the other, so the union decides and the slice is kept."""
    b = _builder(tmp_path, partitioned=False)
    fid = _one_group(b, [Put("k1", "", 1, 5)])
    b.begin(instant(2))
    b.log("", fid, [Put("k1", "", 2, 7)], instant(2))
    b.complete(instant(2))
    where = "ts = 2 AND v = 5"
    assert not _decision(prune(Table(str(tmp_path)), where))[fid].kept
    _set_props(tmp_path, **{"hoodie.compaction.payload.class":
                            "org.apache.hudi.common.model.PartialUpdateAvroPayload"})
    d = _decision(prune(Table(str(tmp_path)), where))[fid]
    assert d.kept and "partial updates" in d.reason
    d = _decision(prune(Table(str(tmp_path)), "ts = 3"))[fid]
    assert not d.kept and d.reason == "union of 2 files excludes (partial updates)"


def test_null_handling(tmp_path: Path) -> None:
    b = _builder(tmp_path, partitioned=False)
    fid = _one_group(b, [Put("k1", "", 1, None), Put("k2", "", 1, None)])  # type: ignore[arg-type]
    table = Table(str(tmp_path))
    # every v is NULL: no comparison, IN or NOT of them is TRUE; IS NULL is
    for where in ("v = 1", "v != 1", "NOT v = 1", "v IN (1, 2)", "NOT v IN (1)",
                  "v IS NOT NULL", "NOT (v < 3 OR v >= 3)"):
        assert not _decision(prune(table, where))[fid].kept, where
        assert table.read(where=where).num_rows == 0, where
    for where in ("v IS NULL", "v IS NULL OR v = 1", "NOT v IS NOT NULL"):
        assert _decision(prune(table, where))[fid].kept, where
        assert table.read(where=where).num_rows == 2, where
    b.begin(instant(2))
    b.log("", fid, [Put("k1", "", 2, 4)], instant(2))
    b.complete(instant(2))
    table = Table(str(tmp_path))
    d = _decision(prune(table, "NOT v = 1"))[fid]
    assert d.kept and d.reason == f"block {instant(2)} may match"
    assert table.read(where="NOT v = 1").column("v").to_pylist() == [4]


def test_constant_predicates(tmp_path: Path) -> None:
    b = _builder(tmp_path, partitioned=False)
    fid = _one_group(b, [Put("k1", "", 1, 1)])
    table = Table(str(tmp_path))
    d = _decision(prune(table, pr.Or(())))[fid]  # FALSE
    assert (d.kept, d.reason) == (False, "predicate is never TRUE")
    assert _decision(prune(table, pr.And(())))[fid].kept  # TRUE


def test_union_ranges() -> None:
    a = {"x": ColumnRange("a", "x", 1, 5, 0, 3), "y": ColumnRange("a", "y", "b", "c", 1, 2)}
    b = {"x": ColumnRange("b", "x", 3, 9, 1, 4), "y": ColumnRange("b", "y", None, None, 2, 2)}
    u = union_ranges([a, b])
    assert (u["x"].min, u["x"].max, u["x"].null_count, u["x"].value_count) == (1, 9, 1, 7)
    # an all-null part has no bounds and loses none
    assert (u["y"].min, u["y"].max, u["y"].null_count, u["y"].value_count) == ("b", "c", 3, 4)
    c = {"x": ColumnRange("c", "x", None, None, 0, 2)}  # values without bounds (NaN...)
    assert union_ranges([a, c])["x"].min is None and "y" not in union_ranges([a, c])
    # bounds of different types (timestamps in ms and in us) do not compare
    ms = {"t": ColumnRange("a", "t", 1000, 2000, 0, 1, type=pa.timestamp("ms"))}
    us = {"t": ColumnRange("b", "t", 1_500_000, 1_600_000, 0, 1, type=pa.timestamp("us"))}
    assert union_ranges([ms, us])["t"].min is None
    assert union_ranges([ms, ms])["t"].min == 1000


def test_bad_rule_and_bad_expressions(tmp_path: Path) -> None:
    b = _builder(tmp_path, partitioned=False)
    _one_group(b, [Put("k1", "", 1, 1)])
    table = Table(str(tmp_path))
    with pytest.raises(UsageError):
        prune(table, "v = 1", rule="spark")
    for bad in ("v = ", "nope = 1", "v = 'text'", "(v = 1", ""):
        with pytest.raises(UsageError):
            prune(table, bad)
        with pytest.raises(UsageError):
            table.read(where=bad)


# --- reads with a filter and the command ------------------------------------------------------


def _builder_table(tmp: Path) -> Path:
    b = _builder(tmp, partitioned=True)
    b.begin(instant(1))
    fa = b.new_group("a", [Put(f"a{i}", "a", 1, i) for i in range(5)], instant(1))
    fb = b.new_group("b", [Put(f"b{i}", "b", 1, 10 + i) for i in range(5)], instant(1))
    b.complete(instant(1))
    b.begin(instant(2))
    b.log("a", fa, [Put("a1", "a", 2, 50)], instant(2))
    b.delete("b", fb, ["b2"], instant(2))
    b.complete(instant(2))
    b.begin(instant(3))
    b.log("b", fb, [Put("b3", "b", 3, 77)], instant(3))
    b.rollback(instant(3), instant(4))
    return tmp


WHERES = ["v > 12", "v = 50", "v IN (3, 77, 14)", "p = 'a' AND v < 3", "NOT v <= 10",
          "v IS NULL OR id = 'b4'", "ts >= 2", "v = 77"]


def test_read_where_equals_filtering_the_full_read(tmp_path: Path) -> None:
    table = Table(str(_builder_table(tmp_path)))
    full = table.read()
    for where in WHERES:
        expr = bind_where(table, where)
        want = sorted(full.filter(pr.to_arrow(expr)).to_pylist(), key=lambda r: r["id"])
        got = sorted(table.read(where=where).to_pylist(), key=lambda r: r["id"])
        assert got == want, where
        cols = table.read(columns=["id"], where=where)
        ids = sorted(cols.column("id").to_pylist()) if cols.num_rows else []
        assert ids == [r["id"] for r in want], where
        assert not cols.num_rows or cols.column_names == ["id"]
    assert table.read(where="v = 77").num_rows == 0  # only in a rolled-back block


def test_prune_command_json_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_builder_table(tmp_path))
    assert main(["prune", path, "--where", "v = 50", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"kept", "pruned"}
    items = doc["kept"] + doc["pruned"]
    assert len(items) == 2 and all(set(i) == {"partition", "file_id", "reason"} for i in items)
    assert [i["partition"] for i in doc["kept"]] == ["a"]
    assert [(i["partition"], i["reason"]) for i in doc["pruned"]] == [
        ("b", "base file excludes")]
    assert main(["prune", path, "--where", "v = 77", "--json", "--rule", "hudi"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [i["partition"] for i in doc["kept"]] == ["b"]  # the rollback block keeps it
    assert main(["prune", path, "--where", "v = 77"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "0 of 2 file slices kept, 2 pruned (rule morlog)"
    for bad in ("v = ", "nope = 1"):
        assert main(["prune", path, "--where", bad, "--json"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("morlog: error: ") and len(err.splitlines()) == 1


def test_snapshot_command_where(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_builder_table(tmp_path))
    assert main(["snapshot", path, "--where", "v > 12", "--columns", "id,v"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted((r["id"], r["v"]) for r in rows) == [("a1", 50), ("b3", 13), ("b4", 14)]
    assert main(["snapshot", path, "--where", "v >"]) == 2


# --- the real Hudi tables ---------------------------------------------------------------------


FIXTURE_WHERES = {
    "v6_nonpartitioned_rollback": ["id > 2", "name = 'Alice'", "id IS NULL",
                                   "isActive = FALSE OR longField < 0"],
    "trips": ["fare > 40", "rider = 'rider-A'", "city = 'chennai' AND fare < 30",
              "driver IN ('driver-K', 'driver-M') OR ts < 1695100000000"],
    "txns": ["amount > 100", "merchant_name = 'GrabFood'", "txn_id = 'TXN-001' OR "
             "region = 'apac'", "NOT currency = 'USD'"],
}


def _fixture_wheres(path: Path) -> list[str]:
    names = {f.name for f in Table(str(path)).arrow_schema()}
    for key, wheres in FIXTURE_WHERES.items():
        if key in path.name or key in str(path):
            usable = [w for w in wheres if all(
                c in names for c in pr.columns(pr.parse(w)))]
            if usable:
                return usable
    # any table: a selective predicate on its first integer or string data column
    schema = Table(str(path)).arrow_schema()
    out = []
    for f in schema:
        if f.name.startswith("_hoodie"):
            continue
        if pa.types.is_integer(f.type):
            out.append(f"{f.name} > 0")
        elif pa.types.is_string(f.type):
            out.append(f"{f.name} = 'zzz'")
    return out[:3]


@requires_fixtures
@pytest.mark.parametrize("path", tables(), ids=lambda p: p.name)
def test_fixture_tables_keep_every_slice_with_a_match(path: Path) -> None:
    table = Table(str(path))
    cache: dict[str, pa.Table] = {}
    wheres = _fixture_wheres(path)
    assert wheres
    for where in wheres:
        expr = bind_where(table, where)
        full = table.read()
        want = sorted(map(str, full.filter(pr.to_arrow(expr)).to_pylist())) if \
            full.num_rows else []
        assert sorted(map(str, table.read(where=where).to_pylist())) == want, where
        for rule in ("morlog", "hudi"):
            result = prune(table, expr, rule=rule)
            kept, pruned = _ids(result)
            for s in table.file_slices():
                if _matching(table, s, expr, cache):
                    assert (s.partition, s.file_id) in kept, (where, rule)


@requires_fixtures
def test_fixture_base_files_use_the_metadata_tables_column_stats() -> None:
    path = next(p for p in tables() if p.name.startswith("v8_trips"))
    table = Table(str(path))
    pruner = Pruner(table, bind_where(table, "rider = 'x'"), None, "morlog")
    sources = {pruner.base_ranges(s)[1] for s in table.file_slices() if s.base_file}
    assert sources == {"mdt"}
    ranges, _ = pruner.base_ranges(table.file_slices()[0])
    assert isinstance(ranges["rider"].min, str)
    # doubles: a base file's MDT record merges row groups whose NaN statistics parquet-mr
    # dropped, so the footer is read instead; it bounds the numbers, NaN count unknown
    pruner = Pruner(table, bind_where(table, "rider = 'x' AND fare > 1"), None, "morlog")
    sources = {pruner.base_ranges(s)[1] for s in table.file_slices() if s.base_file}
    assert sources == {"footer"}
    ranges, _ = pruner.base_ranges(table.file_slices()[0])
    fare = ranges["fare"]
    assert isinstance(fare.min, float) and fare.min <= fare.max and fare.nan_count is None
    d = {x.file_id: x for x in prune(table, "rider = 'rider-A'").pruned}
    assert any(x.reason == "base file excludes" for x in d.values())


@requires_fixtures
def test_damaged_metadata_table_falls_back_to_footers(tmp_path: Path) -> None:
    src = next(p for p in tables() if p.name.startswith("v8_trips"))
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    for f in (dst / ".hoodie" / "metadata" / "column_stats").iterdir():
        f.write_bytes(b"garbage")
    table = Table(str(dst))
    pruner = Pruner(table, bind_where(table, "rider = 'x'"), None, "morlog")
    assert {pruner.base_ranges(s)[1] for s in table.file_slices() if s.base_file} == {
        "footer"}
    assert _ids(prune(table, "rider = 'rider-A'")) == _ids(prune(Table(str(src)),
                                                                  "rider = 'rider-A'"))


# --- doubles (NaN) ---------------------------------------------------------------------------

_FARES = pa.schema([("id", pa.string()), ("city", pa.string()), ("ts", pa.int64()),
                    ("fare", pa.float64())])


def _fare_table(root: Path) -> Any:
    """10 partitions of 20 trips each, fares up to 99.99 with NaN and -0.0 among them,
    compacted into base files morlog wrote; then one partition gets fares >= 5000 in its
    logs."""
    from morlog.writers.client import MorTable
    from morlog.writers.options import WriteConfig
    from morlog.writers.services.compaction import compact

    t = MorTable.create(str(root), _FARES, key_field="id", partition_field="city",
                        ordering_field="ts", config=WriteConfig(fsync=False))
    rows = [{"id": f"t{c}-{i:02d}", "city": f"c{c}", "ts": 1,
             "fare": math.nan if i == 3 else (-0.0 if i == 4 else 99.99 - i)}
            for c in range(10) for i in range(20)]
    t.insert(pa.Table.from_pylist(rows, schema=_FARES))
    compact(t)
    t.upsert(pa.Table.from_pylist([{"id": "t7-01", "city": "c7", "ts": 2, "fare": 5000.0},
                                   {"id": "t7-02", "city": "c7", "ts": 2, "fare": 7250.5}],
                                  schema=_FARES))
    return t


def test_doubles_prune_from_base_files_and_blocks(tmp_path: Path) -> None:
    """Issue 23: every base file's fare maximum is 99.99 (NaN present); one partition holds
    fare >= 5000 in its logs: exactly that slice is kept (all ten were, when a footer's
    double bounds were never used)."""
    _fare_table(tmp_path / "t")
    table = Table(str(tmp_path / "t"))
    slices = table.file_slices()
    assert len(slices) == 10 and all(s.base_file for s in slices)
    r = prune(table, "fare >= 5000")
    assert [d.partition for d in r.kept] == ["c7"]
    assert r.kept[0].reason.startswith("block ") and r.kept[0].reason.endswith(" may match")
    assert {d.reason for d in r.pruned} == {"base file excludes"}
    got = table.read(where="fare >= 5000")
    assert sorted(got["fare"].to_pylist()) == [5000.0, 7250.5]
    # orderings, =, IN and BETWEEN prune whatever NaN the files hold
    for where in ("fare > 10000", "fare IN (1000, 2000)", "fare BETWEEN 100 AND 200",
                  "fare = 100", "fare < -1"):
        assert not prune(table, where).kept, where
    # the forms NaN satisfies need the NaN count morlog's base files record: they hold NaN
    r = prune(table, "NOT (fare < 1000)")
    assert len(r.kept) == 10
    assert {d.reason for d in r.kept if d.partition != "c7"} == {
        "base file may match: fare holds NaN"}


def test_base_files_record_their_nan_counts(tmp_path: Path) -> None:
    """morlog's Parquet base files carry ``morlog.nan_counts``: with it a base file without
    NaN excludes ``!=`` and negated orderings; without it (Hudi's files) NaN may be there."""
    import pyarrow.parquet as pq

    from morlog.readers.block_stats import NAN_COUNTS_KEY, footer_nan_counts
    from morlog.writers.client import MorTable
    from morlog.writers.options import WriteConfig
    from morlog.writers.services.compaction import compact

    root = tmp_path / "t"
    t = MorTable.create(str(root), _FARES, key_field="id", partition_field="city",
                        ordering_field="ts", config=WriteConfig(fsync=False))
    t.insert(pa.Table.from_pylist(
        [{"id": "a", "city": "x", "ts": 1, "fare": 5.0},
         {"id": "b", "city": "x", "ts": 1, "fare": 5.0},
         {"id": "c", "city": "y", "ts": 1, "fare": 5.0},
         {"id": "d", "city": "y", "ts": 1, "fare": math.nan}], schema=_FARES))
    compact(t)
    table = Table(str(root))
    by_city = {s.partition: s for s in table.file_slices()}
    md = pq.ParquetFile(root / "x" / str(by_city["x"].base_file)).metadata
    assert footer_nan_counts(md) == {"fare": 0}
    assert json.loads(md.metadata[NAN_COUNTS_KEY.encode()]) == {"columns": {"fare": 0},
                                                                "rows": 2}
    d = _decision(prune(table, "fare != 5"))
    assert not d[by_city["x"].file_id].kept
    assert d[by_city["y"].file_id].reason == "base file may match: fare holds NaN"
    # a footer without the key (Hudi's writers): NaN may be present
    meta = dict(md.metadata)
    del meta[NAN_COUNTS_KEY.encode()]
    path = root / "x" / str(by_city["x"].base_file)
    data = pq.read_table(path)
    pq.write_table(data.replace_schema_metadata(meta), path, store_schema=False)
    d = _decision(prune(Table(str(root)), "fare != 5"))
    assert d[by_city["x"].file_id].reason == (
        "base file may match: NaN may be present in fare")
    assert not _decision(prune(Table(str(root)), "fare > 5"))[by_city["x"].file_id].kept


_VECTORS = Path(__file__).resolve().parent.parent / "spec" / "vectors" / "prune"


def _float_value(v: Any) -> Any:
    return float(v) if isinstance(v, str) else v


def test_nan_counts_vector(tmp_path: Path) -> None:
    """spec/vectors/prune/nan-counts: the entry writers record, and what readers take from
    entries (valid, other layouts, wrong row count, counts out of range, not JSON)."""
    import pyarrow.parquet as pq

    from morlog.readers.block_stats import NAN_COUNTS_KEY, parquet_footer_ranges
    from morlog.writers.core.base_file import nan_counts_entry

    case = json.loads((_VECTORS / "nan-counts" / "case.json").read_text(encoding="utf-8"))
    types = {"double": pa.float64(), "float": pa.float32(), "string": pa.string()}
    for w in case["write"]:
        t = pa.table({c["name"]: pa.array([_float_value(v) if c["type"] != "string" else v
                                           for v in c["values"]], types[c["type"]])
                      for c in w["columns"]})
        want = {} if w["key"] is None else {w["key"].encode(): w["value"].encode()}
        assert nan_counts_entry(t) == want
    for i, r in enumerate(case["read"]):
        rows = r["rows"]
        t = pa.table({name: pa.array([1.0] * n + [None] * (rows - n), pa.float64())
                      for name, n in r["non_null"].items()})
        path = tmp_path / f"{i}.parquet"
        with pq.ParquetWriter(path, t.schema) as pw:
            pw.add_key_value_metadata({NAN_COUNTS_KEY: r["value"]})
            pw.write_table(t)
        pf = pq.ParquetFile(path)
        got = parquet_footer_ranges(pf.metadata, pf.schema_arrow, t.schema, t.column_names)
        assert {c: g.nan_count for c, g in got.items() if g.nan_count is not None} == \
            r["counts"], r["value"]


def test_prune_command_says_why_slices_are_kept(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    _fare_table(tmp_path / "t")
    assert main(["prune", str(tmp_path / "t"), "--where", "fare != 50"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "10 of 10 file slices kept, 0 pruned (rule morlog)"
    assert lines[1].split()[:2] == ["keep", "c0"] and lines[1].endswith(
        ": base file may match: fare holds NaN")


# --- THE SOUNDNESS PROPERTY TEST --------------------------------------------------------------


#: per kind of table: tables, (table, predicate) cases, slice decisions, decisions on slices
#: with a match, slices pruned by morlog's rule and by Hudi's
STATS: dict[str, dict[str, int]] = {}


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    for kind, c in STATS.items():
        n = max(c["slices"], 1)
        print(f"\nprune soundness ({kind}): {c['tables']} tables, {c['cases']} (table, "
              f"predicate) cases, {c['slices']} slice decisions, {c['matching']} with a "
              f"match; pruned: morlog {c['pruned_morlog']} ({c['pruned_morlog'] / n:.1%}), "
              f"Hudi's rule {c['pruned_hudi']} ({c['pruned_hudi'] / n:.1%})")
        out = os.environ.get("MORLOG_PRUNE_STATS")
        if out:
            with open(out, "a", encoding="utf-8") as f:
                f.write(json.dumps({"kind": kind, **c, "profile": _PROFILE}) + "\n")


def _check_soundness(path: str, exprs: list[pr.Expr], kind: str) -> None:
    """The property on one table: every slice with a match is kept by both rules, and
    morlog prunes every slice Hudi's rule prunes."""
    stats = STATS.setdefault(kind, dict.fromkeys(
        ("tables", "cases", "slices", "matching", "pruned_morlog", "pruned_hudi"), 0))
    table = Table(path)
    slices = table.file_slices()
    schema = predicate_schema(table)
    cache: dict[str, pa.Table] = {}
    full: pa.Table | None = None
    stats["tables"] += 1
    for raw in exprs:
        expr = pr.bind(raw, schema)
        m = prune(table, expr, slices=slices)
        h = prune(table, expr, slices=slices, rule="hudi")
        kept_m, pruned_m = _ids(m)
        kept_h, pruned_h = _ids(h)
        stats["cases"] += 1
        for s in slices:
            stats["slices"] += 1
            if _matching(table, s, expr, cache):
                stats["matching"] += 1
                where = (pr.to_text(raw), s.partition, s.file_id, _decision(m)[s.file_id])
                assert (s.partition, s.file_id) in kept_m, where
                assert (s.partition, s.file_id) in kept_h, where
        assert pruned_h <= pruned_m, (pr.to_text(raw), pruned_h - pruned_m)
        stats["pruned_morlog"] += len(pruned_m)
        stats["pruned_hudi"] += len(pruned_h)
        if len(pruned_m) > len(pruned_h):
            event("morlog prunes more than Hudi's rule")
        elif pruned_m:
            event("both prune")
        # the filtered read is the full read filtered
        if full is None:
            full = table.read()
        got = table.read(where=expr)
        want = full.filter(pr.to_arrow(expr)) if full.num_rows else full
        assert sorted(map(str, got.to_pylist())) == sorted(map(str, want.to_pylist()))


#: literal values per column of the random tables (small domains: predicates select)
_LITS: dict[str, Any] = {
    "id": st.integers(0, 20).map(lambda n: f"k{n:02d}"),
    "p": st.sampled_from(["a", "b", "c"]),
    "ts": st.integers(-1, 12),
    "v": st.integers(-2, 60),
    "f": st.one_of(st.floats(-5, 40, allow_nan=False, width=32).map(float),
                   st.sampled_from([-0.0, 0.0, math.inf, -math.inf])),
}


def _leaf(columns: tuple[str, ...]) -> st.SearchStrategy[pr.Expr]:
    col = st.sampled_from(columns)
    return st.one_of(
        col.flatmap(lambda c: st.builds(pr.Compare, st.just(c), st.sampled_from(pr.OPS),
                                        _LITS[c])),
        col.flatmap(lambda c: st.lists(_LITS[c], min_size=1, max_size=3).map(
            lambda vs, c=c: pr.In(c, tuple(dict.fromkeys(vs))))),
        col.map(pr.IsNull),
    )


def predicates(columns: tuple[str, ...]) -> st.SearchStrategy[pr.Expr]:
    return st.recursive(_leaf(columns), lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: pr.And(tuple(xs))),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: pr.Or(tuple(xs))),
        inner.map(pr.Not)), max_leaves=4)


_SCHEMA = pa.schema([("id", pa.string()), ("p", pa.string()), ("ts", pa.int64()),
                     ("v", pa.int64()), ("f", pa.float64())])

client_ops = st.lists(st.one_of(
    st.tuples(st.just("upsert"), st.lists(st.tuples(st.integers(0, 15), st.integers(0, 9),
                                                    st.integers(0, 4), st.booleans()),
                                          min_size=1, max_size=6)),
    st.tuples(st.just("insert"), st.lists(st.integers(16, 20), min_size=1, max_size=3)),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 20), min_size=1, max_size=3)),
    st.tuples(st.just("fail"), st.lists(st.integers(0, 20), min_size=1, max_size=3),
              st.sampled_from(["log", "parquet", "inflight"]), st.booleans()),
    st.tuples(st.just("compact")),
    st.tuples(st.just("logcompact")),
    st.tuples(st.just("clean")),
), min_size=1, max_size=8)


def _rows(keys: list[tuple[int, int, int, bool]], n: int, home: dict[str, str]
          ) -> pa.Table:
    rows = {}
    for k, ts, spread, nan in keys:
        key = f"k{k:02d}"
        v = None if spread == 4 else n * 7 + spread  # later commits hold larger values
        special = {0: math.nan, 1: math.inf, 2: -0.0}.get(spread) if nan else None
        rows[key] = {"id": key, "p": home.get(key, "abc"[k % 3]), "ts": ts, "v": v,
                     "f": special if special is not None else (None if v is None
                                                               else v / 2)}
    return pa.Table.from_pylist(list(rows.values()), schema=_SCHEMA)


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(history=client_ops, version=st.sampled_from([6, 9]), event_time=st.booleans(),
       new_groups=st.sampled_from(["base", "log"]), route=st.booleans(),
       carrier=st.sampled_from(["avro", "parquet"]),
       exprs=st.lists(predicates(("id", "p", "ts", "v", "f")), min_size=3, max_size=6))
def test_soundness_on_write_client_tables(tmp_path_factory: pytest.TempPathFactory,
                                          history: list[tuple[Any, ...]], version: int,
                                          event_time: bool, new_groups: str, route: bool,
                                          carrier: str, exprs: list[pr.Expr]) -> None:
    from morlog.writers.client import MorTable
    from morlog.writers.options import WriteConfig
    from morlog.writers.services.cleaning import clean
    from morlog.writers.services.compaction import compact
    from morlog.writers.services.logcompaction import log_compact

    root = tmp_path_factory.mktemp("ptable")
    cfg = WriteConfig(fsync=False, new_groups=new_groups,  # type: ignore[arg-type]
                      route_inserts=route, carrier=carrier,  # type: ignore[arg-type]
                      hoodie_options={"hoodie.log.compaction.blocks.threshold": "2"})
    t = MorTable.create(str(root), _SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", event_time_ordering=event_time, config=cfg,
                        table_version=version)
    home: dict[str, str] = {}  # a key stays in its first partition
    for n, op in enumerate(history, 1):
        kind = op[0]
        if kind in ("upsert", "insert"):
            keys = op[1] if kind == "upsert" else [(k, n % 10, n % 4, False) for k in op[1]]
            batch = _rows(keys, n, home)
            (t.upsert if kind == "upsert" else t.insert)(batch)
            for r in batch.to_pylist():
                home.setdefault(r["id"], r["p"])
        elif kind == "delete":
            keys = [f"k{k:02d}" for k in dict.fromkeys(op[1]) if f"k{k:02d}" in home]
            if keys:
                t.delete(pa.Table.from_pylist([{"id": k, "p": home[k]} for k in keys]))
        elif kind == "fail":
            batch = _rows([(k, 9, 3, False) for k in op[1]], 20, home)
            mp = pytest.MonkeyPatch()
            _inject_failure(mp, op[2], op[3])
            try:
                t.upsert(batch)
                for r in batch.to_pylist():
                    home.setdefault(r["id"], r["p"])
            except MorlogError:
                event(f"failed write ({op[2]}, {'persistent' if op[3] else 'once'})")
            finally:
                mp.undo()
            t.store.lock(str(root)).release()
        else:
            try:
                if kind == "compact":
                    compact(t)
                elif kind == "logcompact":
                    log_compact(t)
                else:
                    clean(t, options={"hoodie.clean.commits.retained": "1"})
                event(kind)
            except MorlogError as exc:  # e.g. a service refused while a write is pending
                event(f"{kind} refused: {type(exc).__name__}")
    _check_soundness(str(root), exprs, f"write client, table version {version}")


builder_ops = st.lists(st.one_of(
    st.tuples(st.just("commit"), st.lists(st.tuples(st.integers(0, 15), st.integers(0, 9),
                                                    st.booleans()), min_size=1, max_size=6),
              st.sampled_from(["new_group", "log_group", "route", "route_parquet"])),
    st.tuples(st.just("fail"), st.lists(st.integers(0, 15), min_size=1, max_size=3)),
    st.tuples(st.just("rollback")),
    st.tuples(st.just("logcompact")),
), min_size=1, max_size=9)


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(history=builder_ops, partitioned=st.booleans(), event_time=st.booleans(),
       rollover=st.booleans(),
       exprs=st.lists(predicates(("id", "p", "ts", "v")), min_size=3, max_size=6))
def test_soundness_on_builder_tables(tmp_path_factory: pytest.TempPathFactory,
                                     history: list[tuple[Any, ...]], partitioned: bool,
                                     event_time: bool, rollover: bool,
                                     exprs: list[pr.Expr]) -> None:
    """TableBuilder tables (v6): ROLLBACK command blocks, blocks of failed instants left in
    the logs, log compaction blocks (``COMPACTED_BLOCK_TIMES``), deletes."""
    path = str(tmp_path_factory.mktemp("btable"))
    b = TableBuilder(path, partitioned=partitioned, event_time=event_time, rollover=rollover)
    parts = ["a", "b"] if partitioned else [""]
    home: dict[str, tuple[str, str]] = {}
    live: dict[str, Put] = {}
    failed: list[str] = []
    logged: dict[tuple[str, str], list[str]] = {}
    for n, op in enumerate(history, 1):
        inst = instant(n)
        if op[0] in ("commit", "fail"):
            ok = op[0] == "commit"
            writes = op[1] if ok else [(k, 9, False) for k in op[1]]
            mode = op[2] if ok else "route"
            b.begin(inst)
            groups: dict[tuple[str, str], list[Put]] = {}
            fresh: dict[str, list[Put]] = {}
            dels: dict[tuple[str, str], list[str]] = {}
            for k, ts, dele in {f"k{k:02d}": (k, ts, d) for k, ts, d in writes}.values():
                key = f"k{k:02d}"
                g = home.get(key)
                if dele:
                    if g is not None and key in live:
                        dels.setdefault(g, []).append(key)
                    continue
                put = Put(key, g[0] if g else parts[k % len(parts)], ts,
                          n * 7 + k % 5 if k % 6 else None)  # type: ignore[arg-type]
                (groups.setdefault(g, []) if g else fresh.setdefault(put.partition, [])
                 ).append(put)
            for part, puts in fresh.items():
                existing = [g for g in b.groups if g[0] == part]
                if mode.startswith("route") and existing:
                    groups.setdefault(existing[n % len(existing)], []).extend(puts)
                    continue
                fid = (b.new_log_group if mode == "log_group" else b.new_group)(
                    part, puts, inst)
                for p in puts:
                    home[p.key] = (part, fid)
                    if ok:
                        live[p.key] = p
                if mode == "log_group" and ok:
                    logged.setdefault((part, fid), []).append(inst)
            for g, puts in groups.items():
                b.log(g[0], g[1], puts, inst, "parquet" if mode == "route_parquet" else "avro")
                for p in puts:
                    home.setdefault(p.key, g)
                    if ok:
                        live[p.key] = p
                if ok:
                    logged.setdefault(g, []).append(inst)
            for g, keys in dels.items():
                b.delete(g[0], g[1], keys, inst)
                for k in keys:
                    if ok:
                        live.pop(k, None)
            if ok:
                b.complete(inst)
            else:
                failed.append(inst)
        elif op[0] == "rollback" and failed:
            b.rollback(failed.pop(), inst)
        elif op[0] == "logcompact":
            _builder_log_compact(b, path, logged, inst)
    _check_soundness(path, exprs, "TableBuilder")


def _builder_log_compact(b: TableBuilder, path: str, logged: dict[tuple[str, str], list[str]],
                         inst: str) -> None:
    """What a log compaction writes for the first group with two logged instants: one data
    block of the group's merged log records, replacing those instants."""
    for g, instants in logged.items():
        if len(instants) < 2:
            continue
        table = Table(path)
        s = next((x for x in table.file_slices() if (x.partition, x.file_id) == g), None)
        if s is None:
            return
        rows = table.read_slice(replace(s, base_file=None))
        if not rows.num_rows:
            return
        puts = [Put(r["id"], r["p"], r["ts"], r["v"]) for r in rows.to_pylist()]
        header = {HeaderKey.COMPACTED_BLOCK_TIMES: ",".join(instants)}
        b.begin(inst, "logcompaction")
        b.log(g[0], g[1], puts, inst, extra_header=header)
        b.complete(inst, "deltacommit")
        logged[g] = [inst]
        event("log compaction")
        return


_TRIPS_LITS: dict[str, Any] = {
    "rider": st.sampled_from(["rider-A", "rider-E", "rider-I", "rider-Z1", "rider-Z5", "s"]),
    "driver": st.sampled_from(["driver-K", "driver-Q", "driver-Z", "a"]),
    "fare": st.floats(0, 600, allow_nan=False, width=32).map(float),
    "ts": st.integers(1695000000000, 1695400000000),
    "city": st.sampled_from(["chennai", "san_francisco", "sao_paulo", "x"]),
    "uuid": st.sampled_from(["u1", "u3", "334e26e9-8355-45cc-97c6-c31daf0df330"]),
}

trips_ops = st.lists(st.one_of(
    st.tuples(st.just("upsert"), st.lists(st.tuples(st.integers(0, 5), st.integers(0, 2),
                                                    st.integers(0, 50)),
                                          min_size=1, max_size=4)),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 5), min_size=1, max_size=2)),
    st.tuples(st.just("fail"), st.lists(st.integers(0, 5), min_size=1, max_size=2),
              st.booleans()),
    st.tuples(st.just("compact")),
), min_size=1, max_size=5)


@requires_fixtures
@settings(max_examples=max(5, EXAMPLES // 3), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(history=trips_ops, exprs=st.lists(
    st.recursive(st.sampled_from(sorted(_TRIPS_LITS)).flatmap(
        lambda c: st.one_of(st.builds(pr.Compare, st.just(c), st.sampled_from(pr.OPS),
                                      _TRIPS_LITS[c]),
                            st.lists(_TRIPS_LITS[c], min_size=1, max_size=2).map(
                                lambda vs, c=c: pr.In(c, tuple(dict.fromkeys(vs)))))),
        lambda inner: st.one_of(st.lists(inner, min_size=2, max_size=2).map(
            lambda xs: pr.And(tuple(xs))), st.lists(inner, min_size=2, max_size=2).map(
            lambda xs: pr.Or(tuple(xs))), inner.map(pr.Not)), max_leaves=3),
    min_size=3, max_size=5))
def test_soundness_on_a_hudi_table_with_mdt_column_stats(
        tmp_path_factory: pytest.TempPathFactory, history: list[tuple[Any, ...]],
        exprs: list[pr.Expr]) -> None:
    """Hudi's v8 trips table (its MDT lists ``column_stats``: base files are decided from
    it) written on by morlog's client: upserts, deletes, failed writes, compaction."""
    from morlog.writers.client import MorTable
    from morlog.writers.options import WriteConfig
    from morlog.writers.services.compaction import compact

    src = next(p for p in tables() if p.name.startswith("v8_trips"))
    root = tmp_path_factory.mktemp("trips") / "t"
    shutil.copytree(src, root)
    t = MorTable(str(root), WriteConfig(fsync=False, hoodie_options={
        "hoodie.metadata.index.secondary.enable": "false"}))
    cities = ["chennai", "san_francisco", "sao_paulo"]

    def batch(items: list[tuple[int, int, int]], n: int) -> pa.Table:
        rows = {f"u{k}": {"ts": 1695159649087 + n * 1000 + k, "uuid": f"u{k}",
                          "rider": f"rider-Z{k}", "driver": f"driver-{'QZ'[k % 2]}",
                          "fare": float(100 * n + f), "city": cities[k % 3]}
                for k, _, f in items}
        return pa.Table.from_pylist(list(rows.values()), schema=t.data_schema)

    written: set[int] = set()
    for n, op in enumerate(history, 1):
        if op[0] == "upsert":
            t.upsert(batch(op[1], n))
            written |= {k for k, _, _ in op[1]}
        elif op[0] == "delete":
            keys = [k for k in dict.fromkeys(op[1]) if k in written]
            if keys:
                t.delete(batch([(k, 0, 0) for k in keys], n).select(["uuid", "city"]))
        elif op[0] == "fail":
            mp = pytest.MonkeyPatch()
            _inject_failure(mp, "log", op[2])
            try:
                t.upsert(batch([(k, 0, 77) for k in op[1]], 9))
                written |= set(op[1])
            except MorlogError:
                event("failed write")
            finally:
                mp.undo()
            t.store.lock(str(root)).release()
        else:
            try:
                compact(t)
                event("compaction")
            except MorlogError:
                event("compaction refused")
    table = Table(str(root))
    pruner = Pruner(table, bind_where(table, "fare > 0"), None, "morlog")
    sources = {pruner.base_ranges(s)[1] for s in table.file_slices() if s.base_file}
    event("base ranges from " + "+".join(sorted(sources)))
    _check_soundness(str(root), exprs, "Hudi v8 table with MDT column_stats")
