"""The new hardening modules of issue 16 on their own: partition path encoding and checks,
containment of paths under a table root, and the repair planner (writers/repair.py)."""

from __future__ import annotations

import os
import posixpath
import time
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from morlog.logformat.errors import MorlogError, UsageError
from morlog.logformat.partition_path import (
    DEFAULT_PARTITION_PATH,
    UnsafePathError,
    check_relative_partition_path,
    escape_partition_value,
    is_default_partition,
    partition_path,
    unescape_partition_value,
)
from morlog.readers.containment import check_file_name, is_under, resolve_under
from morlog.readers.logfile import LogFileReader
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig
from morlog.writers.repair import (
    ORPHAN_TEMP,
    PENDING_INSTANT,
    SPARK_STAGING,
    TORN_TAIL,
    plan_repair,
    repair,
)

# --- partition_path ----------------------------------------------------------------------


def test_escape_matches_hudis_character_set() -> None:
    assert escape_partition_value("2024/01/02") == "2024%2F01%2F02"
    assert escape_partition_value('a"#%\'*:=?\\{[]^b') == (
        "a%22%23%25%27%2A%3A%3D%3F%5C%7B%5B%5D%5Eb")
    assert escape_partition_value("\x00\x1f\x7f") == "%00%1F%7F"
    # kept: dots, dash, underscore, space, non-ASCII, '}' and '|'
    assert escape_partition_value("a.b-c_d e}|é") == "a.b-c_d e}|é"
    assert escape_partition_value("") == DEFAULT_PARTITION_PATH
    assert escape_partition_value(None) == DEFAULT_PARTITION_PATH
    assert escape_partition_value("..") == ".."  # not neutralised: the check refuses it


def test_unescape_leaves_non_hex_percent() -> None:
    assert unescape_partition_value("100%") == "100%"
    assert unescape_partition_value("%zz%41") == "%zzA"
    assert unescape_partition_value("%2f") == "/"


@given(st.text(min_size=1))
def test_escape_round_trip(value: str) -> None:
    assert unescape_partition_value(escape_partition_value(value)) == value


@given(st.text(min_size=1, max_size=60).filter(lambda v: v not in (".", "..")
                                               and not v.startswith(".hoodie")))
def test_every_encoded_value_passes_the_check(value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return  # lone surrogates are refused by the check: not a file name
    enc = escape_partition_value(value)
    assert "/" not in enc
    assert check_relative_partition_path(enc) == enc


@pytest.mark.parametrize("bad", ["", ".", "..", "../x", "a/../../x", "a/./b", "/abs", "a//b",
                                 "a/", ".hoodie", ".hoodie/x", ".hoodiex", "a\\b", "a\x00b",
                                 "a\nb", "a\x7fb", "x" * 256, "a/" + "é" * 128])
def test_check_refuses_unsafe_paths(bad: str) -> None:
    with pytest.raises(UnsafePathError):
        check_relative_partition_path(bad)
    assert issubclass(UnsafePathError, UsageError)


@pytest.mark.parametrize("good", ["eu", "2024/01/02", "a.b", "...", "x" * 255, "é" * 127,
                                  "region=eu/day=1", "a/.hoodie", "__HIVE_DEFAULT_PARTITION__"])
def test_check_accepts_safe_paths(good: str) -> None:
    assert check_relative_partition_path(good) == good


@given(st.lists(st.sampled_from(["a", "b", ".", "..", "", "/", ".hoodie", "x.y"]),
                min_size=1, max_size=8).map("".join))
def test_no_accepted_path_escapes_after_normalisation(path: str) -> None:
    try:
        check_relative_partition_path(path)
    except UnsafePathError:
        return
    joined = posixpath.normpath(posixpath.join("/root/table", path))
    assert joined.startswith("/root/table/")
    assert not joined.startswith("/root/table/.hoodie")


def test_partition_path_joins_fields() -> None:
    assert partition_path(["a", "b"], ["x", None], hive_style=True) == (
        f"a=x/b={DEFAULT_PARTITION_PATH}")
    assert partition_path(["a"], ["2024/01"], urlencode=True) == "2024%2F01"
    assert partition_path(["a"], ["2024/01"]) == "2024/01"
    with pytest.raises(UnsafePathError):
        partition_path(["a"], [".."], urlencode=True)
    with pytest.raises(UnsafePathError):
        partition_path(["a"], ["../x"])
    assert partition_path(["a"], ["../x"], urlencode=True) == "..%2Fx"
    assert is_default_partition("a=" + DEFAULT_PARTITION_PATH) and is_default_partition("default")


# --- containment -------------------------------------------------------------------------


@pytest.mark.parametrize("root", ["/t", "t", "bucket/t", "s3://k:s@bucket/t?x=1"])
def test_resolve_under_joins_inside(root: str) -> None:
    out = resolve_under(root, "a/b")
    assert "a/b" in out
    assert resolve_under(root, "a/../b").split("?")[0].endswith("/b")


@pytest.mark.parametrize("rel", ["..", "../victim", "a/../../x", "/etc/passwd", "s3://o/x",
                                 "a\\..\\..", "a\x00"])
@pytest.mark.parametrize("root", ["/t", "t", "bucket/t", "s3://bucket/t?x=1"])
def test_resolve_under_refuses_escapes(root: str, rel: str) -> None:
    with pytest.raises(UnsafePathError):
        resolve_under(root, rel)


@given(st.lists(st.sampled_from(["a", "..", ".", "b", ""]), max_size=8).map("/".join))
def test_resolve_under_result_is_under_root(rel: str) -> None:
    try:
        out = resolve_under("/r/t", rel)
    except UnsafePathError:
        return
    assert is_under("/r/t", out)


def test_resolve_under_symlinks(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "out").mkdir()
    os.symlink(tmp_path / "out", tmp_path / "t" / "link")
    resolve_under(str(tmp_path / "t"), "link/x")
    with pytest.raises(UnsafePathError):
        resolve_under(str(tmp_path / "t"), "link/x", follow_symlinks=True)


def test_check_file_name() -> None:
    assert check_file_name("a.log") == "a.log"
    for bad in ("", ".", "..", "a/b", "a\\b", "a\x00"):
        with pytest.raises(UnsafePathError):
            check_file_name(bad)


# --- repair ------------------------------------------------------------------------------

SCHEMA = pa.schema([("id", pa.string()), ("region", pa.string()), ("ts", pa.int64()),
                    ("amount", pa.float64())])


def _batch(ids: range, ts: int) -> pa.Table:
    return pa.table({"id": [f"k{i}" for i in ids], "region": ["eu"] * len(ids),
                     "ts": [ts] * len(ids), "amount": [float(i) for i in ids]}, schema=SCHEMA)


def _table(path: Path) -> MorTable:
    """A version-6 table (layout 1: the repair cases write its timeline files by hand)."""
    t = MorTable.create(str(path), SCHEMA, key_field="id", partition_field="region",
                        ordering_field="ts", config=WriteConfig(fsync=False, new_groups="log"),
                        table_version=6)
    t.upsert(_batch(range(5), 1))
    t.upsert(_batch(range(3, 8), 2))
    return t


def _log(path: Path) -> Path:
    return next((path / "eu").glob(".*.log.*"))


def _old(p: Path) -> None:
    past = time.time() - 7200
    os.utime(p, (past, past))


def test_repair_on_a_clean_table_finds_nothing(tmp_path: Path) -> None:
    _table(tmp_path / "t")
    assert plan_repair(str(tmp_path / "t")).findings == []


def test_repair_dry_run_lists_and_apply_fixes(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _table(root)
    before = Table(str(root)).read().num_rows
    log = _log(root)
    whole = log.stat().st_size
    with open(log, "ab") as f:
        f.write(b"#HUDI#\x00\x00\x00")  # a block write cut short
    (root / ".hoodie" / "20990101000000000.deltacommit.requested").write_text("")
    (root / ".hoodie" / "20990101000000000.deltacommit.inflight").write_text("{}")
    for p in (root / ".morlog-tmp-a", root / "eu" / ".morlog-tmp-b",
              root / ".hoodie" / ".morlog-tmp-c"):
        p.write_bytes(b"x")
        _old(p)
    young = root / "eu" / ".morlog-tmp-young"
    young.write_bytes(b"y")
    stage = root / ".hoodie" / ".temp" / "spark-dead"
    stage.mkdir(parents=True)
    (stage / "part-0.arrow").write_bytes(b"z")

    dry = repair(str(root))
    kinds = sorted(f.kind for f in dry.plan.findings)
    assert kinds == sorted([TORN_TAIL, PENDING_INSTANT, ORPHAN_TEMP, ORPHAN_TEMP, ORPHAN_TEMP,
                            ORPHAN_TEMP, SPARK_STAGING])
    assert [f for f in dry.plan.findings if f.path == str(young)][0].fixable is False
    assert log.stat().st_size == whole + 9 and young.exists() and stage.exists()  # dry run

    done = repair(str(root), apply=True)
    assert not done.skipped or all(not f.fixable for f, _ in done.skipped)
    assert done.rolled_back == ["20990101000000000"]
    assert log.stat().st_size >= whole  # truncated, then the rollback block appended
    assert young.exists() and not (root / ".morlog-tmp-a").exists() and not stage.exists()
    assert Table(str(root)).timeline.pending() == []
    assert Table(str(root)).read().num_rows == before
    with LogFileReader(str(log)) as r:
        assert not any(b.is_corrupt for b in r.blocks())
    assert repair(str(root)).plan.fixable == []  # only the young temp file is left
    t.upsert(_batch(range(8, 10), 3))
    assert Table(str(root)).read().num_rows == before + 2


def test_repair_does_not_touch_a_table_with_a_live_writer(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _table(root)
    (root / ".hoodie" / "20990101000000000.deltacommit.requested").write_text("")
    lock = t.store.lock(t.path)
    try:
        plan = plan_repair(str(root))
        assert plan.live_writer
        assert all(not f.fixable for f in plan.findings)
        with pytest.raises(MorlogError):
            repair(str(root), apply=True)
    finally:
        lock.release()
    assert (root / ".hoodie" / "20990101000000000.deltacommit.requested").exists()


def test_repair_torn_whole_file_is_deleted(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root)
    junk = root / "eu" / ".ffffffff-0000-0000-0000-000000000000-0_20200101000000000.log.1_0-1-1"
    junk.write_bytes(b"#HUD")
    plan = plan_repair(str(root))
    torn = [f for f in plan.findings if f.kind == TORN_TAIL]
    assert [(f.path, f.keep_bytes) for f in torn] == [(str(junk), 0)]
    repair(str(root), apply=True)
    assert not junk.exists()


@pytest.mark.parametrize("partition", ["..", "../x", "/abs", ".hoodie", "a/../..", "a\x00b"])
def test_a_table_location_never_builds_a_partition_path_outside(tmp_path: Path,
                                                                partition: str) -> None:
    from morlog.readers.storage import TableLocation

    loc = TableLocation.resolve(str(tmp_path / "t"))
    with pytest.raises(UnsafePathError):
        loc.partition_path(partition)
    assert loc.partition_path("") == loc.path
    assert loc.partition_path("city=x/2024").startswith(loc.path)
