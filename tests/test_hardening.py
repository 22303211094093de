"""Issue 16 (hardening): one test per finding, against the public API. Every test here
states the behaviour the issue asks for; they fail until the fixes are wired in.

Assumptions kept few and explicit:

- A refused batch or bad table file raises some :class:`MorlogError` (the exact subclass,
  e.g. an ``UnsafePathError``, is not decided yet).
- "No pending instant, no lock left" is checked through ``Table.timeline.pending()`` and by
  taking the table's lock (local ``flock``) after the failed call.
- The ``morlog repair`` command takes ``TABLE`` and ``--apply``, dry run by default.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import shutil
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.cli import main
from morlog.logformat.errors import CorruptBlockWarning, MorlogError, MorlogWarning
from morlog.readers.logfile import LogFileReader
from morlog.readers.lookup import KeyTagger
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig

SCHEMA = pa.schema([("id", pa.string()), ("region", pa.string()), ("ts", pa.int64()),
                    ("amount", pa.float64())])
FAST = dict(fsync=False)
SLOW = os.environ.get("HYPOTHESIS_PROFILE") == "slow"


def _examples(n: int) -> int:
    return n * 20 if SLOW else n


def _batch(ids: Any, ts: int | None = 1, region: str | None = "eu") -> pa.Table:
    ids = list(ids)
    return pa.table({"id": [f"k{i}" for i in ids], "region": [region] * len(ids),
                     "ts": [ts] * len(ids), "amount": [float(i) for i in ids]}, schema=SCHEMA)


def _create(path: Path, version: int = 6, **cfg: Any) -> MorTable:
    """A table of ``version`` (6: logs appended to, as several damage cases need)."""
    return MorTable.create(str(path), SCHEMA, key_field="id", partition_field="region",
                           ordering_field="ts", config=WriteConfig(**{**FAST, **cfg}),
                           table_version=version)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _rows(path: Path) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in Table(str(path)).read().to_pylist()}


def _assert_clean(table: Path) -> None:
    """No pending instant, no lock held: the next writer finds the table as before."""
    assert Table(str(table)).timeline.pending() == [], "a pending instant was left"
    fd = os.open(table / ".hoodie" / "morlog.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if a lock was left held
    finally:
        os.close(fd)


def _assert_writable(t: MorTable, table: Path, n_before: int) -> None:
    r = t.upsert(_batch([9000], 1))
    assert r.inserts == 1
    assert len(_rows(table)) == n_before + 1


def _cli(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse
            rc = int(exc.code or 0)
    return rc, out.getvalue() + err.getvalue()


# --- 1. partition values escape the table ------------------------------------------------


@pytest.mark.parametrize("value", ["..", "../escape", "ABSOLUTE", ".", ".hoodie",
                                   ".hoodie/x", "a/../../escape"])
def test_partition_values_never_leave_the_table(tmp_path: Path, value: str) -> None:
    root = tmp_path / "t"
    t = _create(root)
    t.upsert(_batch(range(3)))
    if value == "ABSOLUTE":
        value = str(tmp_path / "abs")
    outside = _files(tmp_path) - {f"t/{f}" for f in _files(root)} - {"t"}
    inside = _files(root)
    with pytest.raises(MorlogError):
        t.upsert(_batch([100], 2, region=value))
    assert _files(tmp_path) - {f"t/{f}" for f in _files(root)} - {"t"} == outside, \
        "files written outside the table"
    assert _files(root) - inside <= {".hoodie/morlog.lock"}, "refused batch wrote files"
    _assert_clean(root)
    _assert_writable(t, root, 3)


@pytest.mark.parametrize("value", ["", None])
def test_empty_partition_values_go_to_hudis_default_partition(tmp_path: Path,
                                                              value: str | None) -> None:
    """Hudi's key generators write a null or empty partition value to
    ``__HIVE_DEFAULT_PARTITION__`` (KeyGenUtils); so does morlog, inside the table."""
    root = tmp_path / "t"
    t = _create(root)
    t.upsert(_batch(range(3)))
    t.upsert(_batch([100], 2, region=value))
    assert (root / "__HIVE_DEFAULT_PARTITION__" / ".hoodie_partition_metadata").is_file()
    rows = Table(str(root)).read().to_pylist()
    assert [r["_hoodie_partition_path"] for r in rows if r["id"] == "k100"] == [
        "__HIVE_DEFAULT_PARTITION__"]


# --- 2. hostile timeline: rollback deletes outside the table ------------------------------


def test_hostile_inflight_cannot_make_rollback_delete_outside(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _create(root)
    t.upsert(_batch(range(3)))
    failed = "20990101000000000"
    fid = f"{uuid.uuid4()}-0"
    victim = tmp_path / "victim"
    victim.mkdir()
    target = victim / f"{fid}_0-1-1_{failed}.parquet"
    target.write_bytes(b"precious")
    hoodie = root / ".hoodie"
    (hoodie / f"{failed}.deltacommit.requested").write_text("")
    (hoodie / f"{failed}.deltacommit.inflight").write_text(json.dumps(
        {"morlogFileGroups": [{"partition": "../victim", "fileId": fid},
                              {"partition": str(victim), "fileId": fid}]}))
    try:
        t.upsert(_batch([50], 2))
    except MorlogError:
        pass  # refusing the hostile metadata is fine; deleting outside is not
    assert target.exists(), "the rollback deleted a file outside the table"
    assert target.read_bytes() == b"precious"


# --- 3. one bad batch leaves the table unwritable -----------------------------------------


@pytest.mark.parametrize("value", ["a\x00b", "x" * 300])
def test_bad_partition_value_fails_typed_before_writing(tmp_path: Path, value: str) -> None:
    root = tmp_path / "t"
    t = _create(root)
    t.upsert(_batch(range(3)))
    timeline = sorted(os.listdir(root / ".hoodie"))
    with pytest.raises(MorlogError):
        t.upsert(_batch([100], 2, region=value))
    assert sorted(os.listdir(root / ".hoodie")) == timeline, "timeline files were written"
    _assert_clean(root)
    _assert_writable(t, root, 3)


def test_failure_after_the_first_byte_is_rolled_back_by_the_same_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from morlog.writers.core import store as store_mod

    root = tmp_path / "t"
    t = _create(root)
    t.upsert(_batch(range(3)))
    real = store_mod.LocalStore.create

    def failing(self: Any, path: str, data: bytes, *, sync: bool = True) -> bool:
        if path.endswith(".parquet"):
            raise OSError(28, "No space left on device")
        return real(self, path, data, sync=sync)

    monkeypatch.setattr(store_mod.LocalStore, "create", failing)
    with pytest.raises(MorlogError):  # typed (a WriteError), not the raw OSError
        t.upsert(_batch(range(100, 103), 2, region="us"))
    monkeypatch.undo()
    _assert_clean(root)  # rolled back by the failing call itself
    _assert_writable(t, root, 3)


# --- 4. updates silently lost or nulled ---------------------------------------------------


def _stored(tmp_path: Path) -> tuple[MorTable, Path]:
    root = tmp_path / "t"
    t = _create(root)
    t.upsert(_batch([1], ts=5))  # k1: ts 5, amount 1.0
    return t, root


def test_batch_without_ordering_column_is_refused(tmp_path: Path) -> None:
    t, root = _stored(tmp_path)
    batch = pa.table({"id": ["k1"], "region": ["eu"], "amount": [99.0]})
    with pytest.raises(MorlogError):  # Hudi: the ordering (precombine) field must be there
        t.upsert(batch)
    assert _rows(root)["k1"]["amount"] == 1.0
    _assert_clean(root)


def test_batch_with_null_ordering_value_is_refused(tmp_path: Path) -> None:
    t, root = _stored(tmp_path)
    with pytest.raises(MorlogError):
        t.upsert(_batch([1], ts=None))
    assert _rows(root)["k1"]["ts"] == 5
    _assert_clean(root)


def test_batch_without_a_data_column_does_not_null_the_stored_value(tmp_path: Path) -> None:
    t, root = _stored(tmp_path)
    batch = pa.table({"id": ["k1"], "region": ["eu"], "ts": pa.array([6], pa.int64())})
    try:
        t.upsert(batch)
    except MorlogError:
        assert _rows(root)["k1"]["amount"] == 1.0  # refused (Hudi's default)
    else:
        # accepted only as a partial update that keeps the stored value
        assert _rows(root)["k1"]["amount"] == 1.0, "the stored value was overwritten by NULL"
    _assert_clean(root)


def test_empty_record_key_is_refused(tmp_path: Path) -> None:
    t, root = _stored(tmp_path)
    batch = pa.table({"id": [""], "region": ["eu"], "ts": pa.array([6], pa.int64()),
                      "amount": [2.0]}, schema=SCHEMA)
    with pytest.raises(MorlogError):  # Hudi: a record key may not be null or empty
        t.upsert(batch)
    assert set(_rows(root)) == {"k1"}
    _assert_clean(root)


# --- 5. lookup and snapshot disagree on a damaged Parquet-carrier log ---------------------


def _three_block_table(root: Path, carrier: str) -> tuple[MorTable, Path]:
    """One log-only file group of three blocks, each inserting keys of its own (k0-k4,
    k5-k9, k10-k14); the returned client opens new file groups for every insert, so a key
    the lookup misses shows up twice after the next upsert."""
    t = _create(root, carrier=carrier, new_groups="log")
    for i in range(3):  # inserts routed into the one small group: one block each
        t.upsert(_batch(range(5 * i, 5 * i + 5), i + 1))
    (log,) = list((root / "eu").glob(".*.log.*"))
    return _reinserting(root, carrier), log


def _reinserting(root: Path, carrier: str) -> MorTable:
    return MorTable(str(root), WriteConfig(**FAST, carrier=carrier, new_groups="log",
                                           route_inserts=False))


def _check_lookup_matches_snapshot(t: MorTable, root: Path) -> None:
    # a damaged stored index is recovered from with a documented UnusableIndexWarning (keys
    # recomputed from the records); only errors and disagreement fail the check
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MorlogWarning)
        _lookup_matches_snapshot(t, root)


def _lookup_matches_snapshot(t: MorTable, root: Path) -> None:
    try:
        table = Table(str(root))
        snap = table.read()
        keys = snap.column("id").to_pylist() if snap.num_rows else []
        tags = KeyTagger(table).tag(keys, ["eu"] * len(keys))
    except MorlogError:
        return  # refusing the damaged log with a typed error is allowed (as Avro does)
    missing = [k for k, loc in zip(keys, tags.locations, strict=True) if loc is None]
    assert missing == [], f"snapshot shows keys the lookup says are absent: {missing}"
    try:
        t.upsert(_batch(range(15), 10))
    except MorlogError:
        return
    ids = Table(str(root)).read().column("id").to_pylist()
    assert len(ids) == len(set(ids)), "the upsert inserted keys again (duplicates)"


@pytest.mark.parametrize("carrier", ["parquet", "avro"])
def test_garbage_inside_a_block_lookup_and_snapshot_agree(tmp_path: Path,
                                                          carrier: str) -> None:
    t, log = _three_block_table(tmp_path / "t", carrier)
    data = log.read_bytes()
    with LogFileReader(str(log)) as r:
        blocks = list(r.blocks())
    mid = blocks[1].offset + blocks[1].size // 2
    log.write_bytes(data[:mid] + b"GARBAGE!" * 3 + data[mid:])
    _check_lookup_matches_snapshot(t, tmp_path / "t")


@pytest.fixture(scope="module")
def damaged_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tmpl") / "t"
    _three_block_table(root, "parquet")
    return root


_DAMAGE = st.tuples(st.sampled_from(["insert", "overwrite", "truncate", "delete_range"]),
                    st.floats(0, 1), st.binary(min_size=1, max_size=40))


@settings(max_examples=_examples(20), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=st.lists(_DAMAGE, min_size=1, max_size=3))
def test_damaged_logs_never_make_the_next_upsert_duplicate(
        damaged_template: Path, tmp_path: Path, damage: list[tuple[str, float, bytes]]) -> None:
    root = tmp_path / f"t{uuid.uuid4().hex[:8]}"
    shutil.copytree(damaged_template, root)
    (log,) = list((root / "eu").glob(".*.log.*"))
    data = bytearray(log.read_bytes())
    for kind, where, junk in damage:
        at = int(where * len(data))
        if kind == "insert":
            data[at:at] = junk
        elif kind == "overwrite":
            data[at : at + len(junk)] = junk
        elif kind == "truncate":
            del data[max(1, at):]
        else:
            del data[at : at + len(junk)]
    log.write_bytes(bytes(data))
    t = _reinserting(root, "parquet")
    _check_lookup_matches_snapshot(t, root)
    shutil.rmtree(root)


# --- 6. credentials printed --------------------------------------------------------------

SECRET = "s3cr3tVALUEzz"


def _s3_log(s3: str, tmp_path: Path, secret: str = SECRET) -> str:
    """A valid log file uploaded to a fresh bucket; its URI with ``secret`` in it."""
    import urllib.parse

    import pyarrow.fs as pafs

    root = tmp_path / "t"
    t = _create(root, new_groups="log")
    t.upsert(_batch(range(3)))
    (log,) = list((root / "eu").glob(".*.log.*"))
    bucket = f"b{uuid.uuid4().hex[:12]}"
    fs, _ = pafs.FileSystem.from_uri(f"s3://AKIDEXAMPLE:{SECRET}@{bucket}/x?{s3}")
    fs.create_dir(bucket)
    with fs.open_output_stream(f"{bucket}/{log.name}") as f:
        f.write(log.read_bytes())
    return f"s3://AKIDEXAMPLE:{urllib.parse.quote(secret, safe='')}@{bucket}/{log.name}?{s3}"


@pytest.mark.parametrize("command", [["verify"], ["blocks"], ["index"]])
def test_cli_never_prints_the_secret(s3: str, tmp_path: Path, command: list[str]) -> None:
    uri = _s3_log(s3, tmp_path)
    argv = [*command, uri]
    rc, out = _cli(argv)
    assert rc == 0, out
    assert SECRET not in out


@pytest.mark.parametrize("uri", [
    "s3://bucket/x?endpoint_override=h&secret_key=QSECRETq",
    "s3://bucket/x?session_token=QSECRETq&region=r",
    "https://h/x?X-Amz-Credential=AK%2F1&X-Amz-Signature=QSECRETq",
    "s3://AK:Zqa@QSECRETq@bucket/x",
    "s3://AK:Zqa#QSECRETq@bucket/x",
    "s3://AK:Zqa?QSECRETq@bucket/x",
])
def test_errors_mask_whole_userinfo_and_secret_query_parameters(uri: str) -> None:
    # MorlogError documents that a URI's credentials never reach its message or ``path``
    for exc in (MorlogError(f"cannot open {uri}", path=uri),
                MorlogError("failed", path=uri).at(offset_base=3)):
        assert "QSECRETq" not in str(exc) and "QSECRETq" not in (exc.path or "")


def _fragments(secret: str) -> list[str]:
    for sep in "@#? ":
        secret = secret.replace(sep, "|")
    return [f for f in secret.split("|") if f]


@pytest.mark.parametrize("secret", ["Zqa@Xwb@Vyc", "Zqa#Xwb", "Zqa?Xwb", "Zqa Xwb",
                                    "Zqa@Xwb#Vyc?Utd Sre"])
def test_secret_with_special_characters_never_escapes(s3: str, secret: str) -> None:
    bucket = f"b{uuid.uuid4().hex[:12]}"
    uri = f"s3://AKIDEXAMPLE:{secret}@{bucket}/t?{s3}"  # raw, as users paste it
    with pytest.raises(MorlogError) as info:  # not pyarrow's ArrowInvalid
        Table(uri)
    text = str(info.value) + repr(info.value.args)
    rc, out = _cli(["verify", uri])
    assert rc != 0
    for frag in _fragments(secret):
        assert frag not in text, f"{frag!r} of the secret in {text!r}"
        assert frag not in out, f"{frag!r} of the secret in {out!r}"


# --- 7. untyped errors on damaged table files ---------------------------------------------


def _table_with_data(root: Path) -> MorTable:
    t = _create(root, new_groups="log")
    t.upsert(_batch(range(3)))
    t.upsert(_batch(range(2, 5), 2))
    return t


def _set_prop(root: Path, key: str, value: str) -> None:
    p = root / ".hoodie" / "hoodie.properties"
    lines = [ln for ln in p.read_text().splitlines() if not ln.startswith(key + "=")]
    p.write_text("\n".join([*lines, f"{key}={value}"]) + "\n")


def _every_entry_point(root: Path) -> None:
    """Open, list, read, tag and write: each may refuse, only with MorlogError."""
    for step in (lambda: Table(str(root)).file_slices(), lambda: Table(str(root)).read(),
                 lambda: Table(str(root)).arrow_schema(),
                 lambda: KeyTagger(Table(str(root))).tag(["k1"], ["eu"]),
                 lambda: MorTable(str(root), WriteConfig(**FAST)).upsert(_batch([1], 9))):
        try:
            step()
        except MorlogError:
            pass


def test_non_numeric_table_version_is_a_typed_error(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table_with_data(root)
    _set_prop(root, "hoodie.table.version", "six")
    with pytest.raises(MorlogError):
        Table(str(root))  # plain reads too
    _every_entry_point(root)


def test_empty_record_key_fields_is_a_typed_error(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table_with_data(root)
    _set_prop(root, "hoodie.table.recordkey.fields", "")
    with pytest.raises(MorlogError):
        MorTable(str(root))
    _every_entry_point(root)


def _deep(n: int) -> str:
    return "[" * n + "]" * n


def test_deeply_nested_schema_is_a_typed_error(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table_with_data(root)
    nested = '{"type":"record","name":"r","fields":[{"name":"a","type":' + (
        '{"type":"array","items":' * 5000) + '"int"' + "}" * 5000 + "}]}"
    _set_prop(root, "hoodie.table.create.schema", nested)
    with pytest.raises(MorlogError):
        Table(str(root)).arrow_schema()
    _every_entry_point(root)
    # a writer takes the schema of the latest commit (Hudi's TableSchemaResolver) and falls
    # back to the create schema only on a table without commits
    empty = tmp_path / "empty"
    _create(empty)
    _set_prop(empty, "hoodie.table.create.schema", nested)
    with pytest.raises(MorlogError):
        MorTable(str(empty))


@pytest.mark.parametrize("action", ["rollback", "replacecommit"])
def test_deeply_nested_timeline_json_is_a_typed_error(tmp_path: Path, action: str) -> None:
    root = tmp_path / "t"
    _table_with_data(root)
    (root / ".hoodie" / f"20990101000000000.{action}").write_text(_deep(200_000))
    _every_entry_point(root)


def _flip_in(path: Path, needle: bytes, which: int | None = None) -> list[int]:
    data = path.read_bytes()
    spots = [i for i in range(len(data)) if data.startswith(needle, i)]
    assert spots, f"{needle!r} not in {path.name}"
    return spots if which is None else [spots[which]]


@pytest.mark.parametrize("carrier", ["avro", "parquet"])
def test_flipped_byte_in_key_field_name_is_a_typed_error(tmp_path: Path, carrier: str) -> None:
    root = tmp_path / "t"
    _create(root, new_groups="log", carrier=carrier).upsert(_batch(range(3)))
    (log,) = list((root / "eu").glob(".*.log.*"))
    good = log.read_bytes()
    # the Avro schema header names the key field; a Parquet block's footer names its column.
    # Both are covered by the block's checksum (spec/index.md §4.12): the block is corrupt,
    # skipped with a warning, as the first read shows before any write changes the table
    first = True
    for at in _flip_in(log, b"_hoodie_record_key"):
        for delta in (1, 5, 17):
            bad = bytearray(good)
            bad[at + delta] ^= 0x01
            log.write_bytes(bytes(bad))
            if first:
                with pytest.warns(CorruptBlockWarning, match="corrupt block skipped"):
                    assert Table(str(root)).read().num_rows == 0
                first = False
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CorruptBlockWarning)
                _every_entry_point(root)
    log.write_bytes(good)


def test_missing_s3_log_is_a_typed_error(s3: str) -> None:
    import pyarrow.fs as pafs

    bucket = f"b{uuid.uuid4().hex[:12]}"
    fs, _ = pafs.FileSystem.from_uri(f"s3://test:test@{bucket}/x?{s3}")
    fs.create_dir(bucket)
    with pytest.raises(MorlogError):
        LogFileReader(f"s3://test:test@{bucket}/missing.log?{s3}")


# --- 8. stuck locks and leftovers ----------------------------------------------------------


@pytest.mark.parametrize("body", [b"", b"not json", b"[1, 2]", b'{"expires": "soon"}'])
def test_unreadable_s3_lock_is_taken_over_after_the_lease(s3: str, body: bytes) -> None:
    import pyarrow.fs as pafs

    from morlog.writers.core.store import S3Store

    bucket = f"b{uuid.uuid4().hex[:12]}"
    uri = f"s3://test:test@{bucket}/t?{s3}"
    fs, _ = pafs.FileSystem.from_uri(uri)
    fs.create_dir(bucket)
    cfg = WriteConfig(lock_lease_seconds=1.0)
    t = MorTable.create(uri, SCHEMA, key_field="id", partition_field="region",
                        ordering_field="ts", config=cfg)
    t.upsert(_batch(range(3)))
    assert isinstance(t.store, S3Store)
    t.store.client.put_object(Bucket=bucket, Key="t/.hoodie/morlog.lock", Body=body)
    time.sleep(2.5)  # older than the lease (1 s), with slack for the server's clock
    t.upsert(_batch([7], 2))
    assert "k7" in {r["id"] for r in Table(uri).read().to_pylist()}


def test_orphaned_temp_files_are_removed_by_the_next_writer(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _create(root)
    t.upsert(_batch(range(3)))
    orphans = [root / ".morlog-tmp-dead1", root / "eu" / ".morlog-tmp-dead2",
               root / ".hoodie" / ".morlog-tmp-dead3"]
    past = time.time() - 2 * 86400  # old enough for any age rule
    for p in orphans:
        p.write_bytes(b"half a file")
        os.utime(p, (past, past))
    t.upsert(_batch([3], 2))
    assert [p for p in orphans if p.exists()] == []


@pytest.mark.parametrize("tail", [1, 2, 3, 4, 5])
def test_verify_reports_a_torn_tail(tmp_path: Path, tail: int) -> None:
    root = tmp_path / "t"
    _table_with_data(root)
    (log,) = list((root / "eu").glob(".*.log.*"))
    with open(log, "ab") as f:
        f.write(b"#HUDI#"[:tail])  # the next block's write cut after ``tail`` bytes
    rc, out = _cli(["verify", str(log)])
    assert rc == 1, out
    assert "ok" not in out.split()


def test_repair_command_dry_run_then_apply(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _table_with_data(root)
    (log,) = list((root / "eu").glob(".*.log.*"))
    size = log.stat().st_size
    with open(log, "ab") as f:
        f.write(b"#HUDI#\x00\x00")
    (root / ".hoodie" / "20990101000000000.deltacommit.requested").write_text("")
    orphan = root / "eu" / ".morlog-tmp-dead"
    orphan.write_bytes(b"x")
    os.utime(orphan, (time.time() - 86400,) * 2)
    rc, out = _cli(["repair", str(root)])
    assert rc in (0, 1), out
    for what in ("20990101000000000", log.name, orphan.name):
        assert what in out
    assert orphan.exists() and log.stat().st_size == size + 8  # dry run: nothing changed
    rc, out = _cli(["repair", str(root), "--apply"])
    assert rc == 0, out
    assert not orphan.exists()
    assert Table(str(root)).timeline.pending() == []
    with LogFileReader(str(log)) as r:
        assert not any(b.is_corrupt for b in r.blocks())
    _assert_writable(t, root, len(_rows(root)))
