"""``morlog slices``, ``snapshot`` and ``tag`` on the real Hudi tables."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from morlog.cli import main
from morlog.readers.lookup import tag_keys
from morlog.readers.table import Table

from .hudi_fixtures import requires_fixtures, tables

pytestmark = requires_fixtures


def _table(name: str) -> Path:
    return next(p for p in tables() if p.name == name)


@pytest.mark.parametrize("path", tables(), ids=lambda p: p.name)
def test_tag_finds_every_live_key_in_its_file_group(path: Path) -> None:
    table = Table(str(path))
    rows = table.read().to_pylist()
    expected = {r["_hoodie_record_key"]: (r["_hoodie_partition_path"],
                                          r["_hoodie_file_name"].split("_")[0]) for r in rows}
    absent = ["no-such-key", "TXN-999", "zzzz"]
    result = tag_keys(str(path), list(expected) + absent)
    got = result.as_dict()
    for k, (part, fid) in expected.items():
        assert got[k] == {"partition": part, "file_id": fid}, k
    assert all(got[k] is None for k in absent)
    # with the partitions known, only those partitions' slices are looked at
    known = tag_keys(str(path), list(expected), [p for p, _ in expected.values()])
    assert known.as_dict() == {k: got[k] for k in expected}
    assert known.stats.slices <= result.stats.slices


def test_tag_ignores_the_rolled_back_instant() -> None:
    path = _table("v6_nonpartitioned_rollback")
    table = Table(str(path))
    assert "20250126040826878" in table.timeline.rolled_back_instants()
    assert tag_keys(str(path), ["no-such-key"]).locations == [None]


def test_slices_json(capsys: pytest.CaptureFixture[str]) -> None:
    path = _table("v6_nonpartitioned_rollback")
    assert main(["slices", str(path), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["partition"] == "" and row["file_id"].startswith("0712b9f9")
    assert row["base_file"].endswith(".parquet") and len(row["log_files"]) == 3
    assert row["instants"]["first"] <= row["instants"]["last"]


def test_snapshot_jsonl_and_parquet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _table("v9_txns_simple_nometa")
    assert main(["snapshot", str(path)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == Table(str(path)).read().num_rows
    assert "_hoodie_commit_time" in lines[0] and "txn_id" in lines[0]
    out = tmp_path / "snap.parquet"
    assert main(["snapshot", str(path), "--format", "parquet", "--out", str(out),
                 "--columns", "txn_id,amount", "--as-of", "20260307135832616"]) == 0
    t = pq.read_table(out)
    assert t.column_names == ["txn_id", "amount"]
    assert t.num_rows == Table(str(path)).read("20260307135832616").num_rows


def test_tag_cli_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _table("v9_txns_simple_nometa")
    keys = tmp_path / "keys.txt"
    keys.write_text("TXN-001\nnope\n")
    assert main(["tag", str(path), "--keys", str(keys), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["nope"] is None
    assert set(out["TXN-001"]) == {"partition", "file_id"}


def test_not_a_table_is_a_clean_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    for cmd in (["slices", str(tmp_path)], ["snapshot", str(tmp_path)]):
        assert main(cmd) == 2
        assert "not a Hudi table" in capsys.readouterr().err


def test_bad_tables_are_typed_errors(tmp_path: Path) -> None:
    from morlog.logformat import UnsupportedVersionError, UsageError
    from morlog.logformat.errors import ContentError

    (tmp_path / ".hoodie").mkdir()
    props = tmp_path / ".hoodie" / "hoodie.properties"
    props.write_text("hoodie.table.type=MERGE_ON_READ\nhoodie.table.version=42\n")
    with pytest.raises(UnsupportedVersionError):
        Table(str(tmp_path))
    props.write_text("hoodie.table.type=COPY_ON_WRITE\nhoodie.table.version=6\n")
    with pytest.raises(UsageError):
        Table(str(tmp_path))
    from morlog.readers.merge import read_base_file

    bad = tmp_path / "f_0-1-1_1.parquet"
    bad.write_bytes(b"PAR1 not really PAR1")
    with pytest.raises(ContentError) as err:
        read_base_file(str(bad))
    assert err.value.path == str(bad)


def test_unknown_columns_are_refused_naming_them_and_the_tables_columns(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from morlog.logformat import UsageError

    path = _table("v9_txns_simple_nometa")
    table = Table(str(path))
    for call in (lambda: table.read(columns=["nope"]),
                 lambda: table.read(columns=["txn_id", "nope", "nada"], where="amount > 0"),
                 lambda: table.snapshot(columns=["nope"])):  # refused before any slice
        with pytest.raises(UsageError) as info:
            call()
        msg = str(info.value)
        assert "unknown column" in msg and "'nope'" in msg and "txn_id" in msg, msg
        assert "expected None" not in msg
    assert table.read(columns=["txn_id"]).column_names == ["txn_id"]
    out = tmp_path / "o.jsonl"
    assert main(["snapshot", str(path), "--columns", "nope", "--out", str(out)]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and "unknown column 'nope'" in cap.err and "txn_id" in cap.err
    assert not out.exists()


def _empty_table(tmp_path: Path) -> Path:
    import pyarrow as pa

    from morlog.writers.client import MorTable

    schema = pa.schema([("uuid", pa.string()), ("ts", pa.int64()), ("fare", pa.float64()),
                        ("city", pa.string())])
    MorTable.create(str(tmp_path / "t"), schema, key_field="uuid", partition_field="city",
                    ordering_field="ts")
    return tmp_path / "t"


def test_snapshot_of_an_empty_table_writes_a_file_of_no_rows_with_the_tables_columns(
        tmp_path: Path) -> None:
    path = _empty_table(tmp_path)
    out = tmp_path / "empty.parquet"
    assert main(["snapshot", str(path), "--format", "parquet", "--out", str(out)]) == 0
    t = pq.read_table(out)
    assert t.num_rows == 0
    assert t.column_names[-4:] == ["uuid", "ts", "fare", "city"]
    assert t.column_names[0] == "_hoodie_commit_time"
    assert t.schema.field("fare").type == "double"
    assert main(["snapshot", str(path), "--format", "parquet", "--out", str(out),
                 "--columns", "fare,uuid"]) == 0
    assert pq.read_table(out).column_names == ["fare", "uuid"]
    got = Table(str(path)).read()
    assert got.num_rows == 0 and got.column_names[-4:] == ["uuid", "ts", "fare", "city"]
    # rows filtered away: still a file, with the table's columns
    real = _table("v9_txns_simple_nometa")
    assert main(["snapshot", str(real), "--format", "parquet", "--out", str(out),
                 "--where", "amount < -1e300", "--columns", "txn_id,amount"]) == 0
    t = pq.read_table(out)
    assert t.num_rows == 0 and t.column_names == ["txn_id", "amount"]


def test_timeline_lists_every_instant(capsys: pytest.CaptureFixture[str]) -> None:
    path = _table("v8_trips_8i3u1d")
    table = Table(str(path))
    files = sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir() if p.is_file())
    assert main(["timeline", str(path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows == [i.as_dict() for i in table.instants()]
    assert [r["instant"] for r in rows] == sorted({f.split("_")[0].split(".")[0]
                                                   for f in files if f[0].isdigit()})
    done = [r for r in rows if r["state"] == "COMPLETED"]
    assert done and all(f"{r['instant']}_{r['completed']}.{r['action']}" in files
                        for r in done)
    assert {r["action"] for r in rows} >= {"deltacommit"}
    # any completed write is an as-of instant
    first = next(r["instant"] for r in rows if r["action"] == "deltacommit")
    assert table.read(first).num_rows > 0
    # version 6: no completion times
    v6 = _table("v6_nonpartitioned_rollback")
    assert main(["timeline", str(v6)]) == 0
    text = capsys.readouterr().out.splitlines()
    assert len(text) == 1 + len(Table(str(v6)).instants())
    assert "rollback" in text[2] and text[2].split()[-1] == "-"
    assert [(i.action, i.state, i.completed) for i in Table(str(v6)).instants()][:2] == [
        ("deltacommit", "COMPLETED", None), ("rollback", "COMPLETED", None)]
