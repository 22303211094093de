"""Writing tables to S3 (a local moto server): rollover logs, conditional PUTs, the lock
object, failure injection, and hudi-rs reading the result straight from S3."""

from __future__ import annotations

import threading
import urllib.parse
import uuid
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("moto", reason="moto is not installed (pip install .[test])")
pytest.importorskip("boto3", reason="boto3 is not installed (pip install .[test])")

from morlog.logformat.errors import UsageError  # noqa: E402
from morlog.readers.table import Table  # noqa: E402
from morlog.writers.client import ConcurrentWriterError, MorTable
from morlog.writers.core.store import S3Store, store_for  # noqa: E402
from morlog.writers.options import WriteConfig  # noqa: E402

SCHEMA = pa.schema([("id", pa.string()), ("p", pa.string()), ("ts", pa.int64()),
                    ("v", pa.float64())])


def _batch(ids: list[int], ts: int) -> pa.Table:
    return pa.table({"id": [f"k{i:05d}" for i in ids], "p": [("eu", "us")[i % 2] for i in ids],
                     "ts": [ts] * len(ids), "v": [i * 0.5 + ts for i in ids]}, schema=SCHEMA)


def _uri(s3: str, table: str | None = None) -> str:
    """A fresh bucket's table URI (buckets keep tests apart)."""
    import pyarrow.fs as pafs

    bucket = f"t{uuid.uuid4().hex[:12]}"
    uri = f"s3://test:test@{bucket}/{table or 'tbl'}?{s3}"
    fs, _ = pafs.FileSystem.from_uri(uri)
    fs.create_dir(bucket)
    return uri


def _rows(uri: str) -> dict[str, tuple[Any, ...]]:
    return {r["id"]: (r["p"], r["ts"], r["v"]) for r in Table(uri).read().to_pylist()}


def _hudi_rs_rows(uri: str) -> dict[str, tuple[Any, ...]]:
    """The table read by hudi-rs straight from the S3 server."""
    hudi = pytest.importorskip("hudi")
    parts = urllib.parse.urlsplit(uri)
    q = dict(urllib.parse.parse_qsl(parts.query))
    opts = {"aws_endpoint_url": f"{q['scheme']}://{q['endpoint_override']}",
            "aws_allow_http": "true", "aws_access_key_id": "test",
            "aws_secret_access_key": "test", "aws_region": q["region"]}
    base = f"s3://{parts.hostname}{parts.path}"
    table = hudi.HudiTableBuilder.from_base_uri(base).with_storage_options(opts).build()
    return {r["id"]: (r["p"], r["ts"], r["v"])
            for b in table.read() for r in b.to_pylist()}


def _objects(uri: str) -> dict[str, str]:
    """Every object of the table's bucket and its ETag."""
    store, inner = store_for(uri)
    assert isinstance(store, S3Store)
    bucket = inner.split("/", 1)[0]
    out: dict[str, str] = {}
    for page in store.client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            out[o["Key"]] = o["ETag"]
    return out


def _oracle_apply(oracle: dict[str, tuple[Any, ...]], b: pa.Table) -> None:
    for r in b.to_pylist():
        cur = oracle.get(r["id"])
        if cur is None or r["ts"] >= cur[1]:
            oracle[r["id"]] = (r["p"], r["ts"], r["v"])


def test_upserts_on_s3_roll_over_and_never_rewrite_an_object(s3: str) -> None:
    """Table version 6 on S3: every write a new log version of the slice's log."""
    uri = _uri(s3)
    t = MorTable.create(uri, SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", table_version=6)
    assert t.mode == "rollover"
    oracle: dict[str, tuple[Any, ...]] = {}
    seen: dict[str, str] = {}
    batches = [_batch(list(range(0, 40)), 1), _batch(list(range(20, 60)), 2),
               _batch(list(range(10, 30)) + list(range(60, 70)), 3)]
    for b in batches:
        r = t.upsert(b)
        _oracle_apply(oracle, b)
        now = _objects(uri)
        # nothing written before changed or vanished, except the lock object
        changed = {k for k, e in seen.items() if now.get(k) != e and not k.endswith(".lock")}
        assert changed == set()
        seen = now
        assert r.files_created, "every commit on S3 creates files (new log versions)"
    assert _rows(uri) == oracle
    assert _hudi_rs_rows(uri) == oracle
    # rollover: several log versions per file group, each one write
    logs = [k for k in seen if "/." in k and ".log." in k]
    versions = {int(k.rsplit(".log.", 1)[1].split("_")[0]) for k in logs}
    assert max(versions) >= 2
    t.delete(_batch(list(range(0, 5)), 9).select(["id", "p"]))
    for i in range(5):
        oracle.pop(f"k{i:05d}")
    assert _rows(uri) == oracle
    assert _hudi_rs_rows(uri) == oracle
    assert not any(k.endswith("morlog.lock") for k in _objects(uri)), "lock released"


def test_conditional_create_never_overwrites(s3: str) -> None:
    store, inner = store_for(_uri(s3))
    path = store.join(inner, "x", "file")
    assert store.create(path, b"first")
    assert not store.create(path, b"second")
    assert store.read(path) == b"first"
    assert store.delete(path)
    assert not store.delete(path)


def test_append_mode_is_refused_on_s3(s3: str) -> None:
    uri = _uri(s3)
    MorTable.create(uri, SCHEMA, key_field="id", partition_field="p")
    with pytest.raises(UsageError, match="rollover"):
        MorTable(uri, WriteConfig(mode="append"))


def test_a_concurrent_writer_on_s3_gets_a_clear_error(s3: str) -> None:
    uri = _uri(s3)
    t = MorTable.create(uri, SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", config=WriteConfig(lock_wait_seconds=0.2))
    t.upsert(_batch([1, 2, 3], 1))
    before = _rows(uri)
    other = MorTable(uri)
    lock = other.writer_lock()
    try:
        # the writer waits hoodie.write.lock.wait_time_ms for the lock object, then fails
        with pytest.raises(ConcurrentWriterError, match=r"another writer.*waited 0\.2 s"):
            t.upsert(_batch([4, 5], 2))
    finally:
        lock.release()
    assert _rows(uri) == before
    t.upsert(_batch([4, 5], 2))
    assert set(_rows(uri)) == set(before) | {"k00004", "k00005"}


def test_racing_writers_on_s3_one_wins_per_commit(s3: str) -> None:
    """Writers started together: each commit either lands whole or fails with
    ConcurrentWriterError; nothing is lost or interleaved."""
    uri = _uri(s3)
    MorTable.create(uri, SCHEMA, key_field="id", partition_field="p", ordering_field="ts")
    results: list[str] = []
    barrier = threading.Barrier(4)

    def writer(n: int) -> None:
        t = MorTable(uri)
        barrier.wait()
        try:
            t.upsert(_batch(list(range(n * 100, n * 100 + 10)), n))
            results.append(f"ok{n}")
        except ConcurrentWriterError:
            results.append(f"busy{n}")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    ok = sorted(int(r[2:]) for r in results if r.startswith("ok"))
    assert len(results) == 4 and ok
    expected = {f"k{i:05d}" for n in ok for i in range(n * 100, n * 100 + 10)}
    assert set(_rows(uri)) == expected
    assert set(_hudi_rs_rows(uri)) == expected


def test_a_lock_whose_lease_ran_out_is_taken_over(s3: str) -> None:
    uri = _uri(s3)
    MorTable.create(uri, SCHEMA, key_field="id", partition_field="p")
    dead = MorTable(uri, WriteConfig(lock_lease_seconds=0.0)).writer_lock()  # never released
    t = MorTable(uri, WriteConfig(lock_lease_seconds=60.0))
    t.upsert(_batch([1], 1))  # takes the stale lock over
    with pytest.raises(ConcurrentWriterError, match="taken over"):
        dead.check()
    live = t.writer_lock()
    try:
        with pytest.raises(ConcurrentWriterError):
            # a live lease is respected (no wait: the test's lease would run out in it)
            MorTable(uri, WriteConfig(lock_wait_seconds=0)).writer_lock()
    finally:
        live.release()


class Killed(BaseException):
    """The writer process dies (not an error it could handle and roll back)."""


#: PUTs of the second commit: requested, heartbeat, inflight, one new log version per
#: partition (2), completed
@pytest.mark.parametrize("fail_at", range(1, 7))
def test_a_writer_dying_on_s3_leaves_the_table_as_before(s3: str, fail_at: int) -> None:
    """The n-th object PUT of a commit fails (the writer dies there): the table reads as
    before; the next writer rolls the instant back and commits."""
    uri = _uri(s3)
    t = MorTable.create(uri, SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts")
    t.upsert(_batch(list(range(20)), 1))
    before = _rows(uri)
    assert isinstance(t.store, S3Store)
    real = t.store.create
    calls = {"n": 0}

    def dying(path: str, data: bytes, *, sync: bool = True) -> bool:
        calls["n"] += 1
        if calls["n"] == fail_at:
            raise Killed("killed")
        return real(path, data, sync=sync)

    t.store.create = dying  # type: ignore[method-assign]
    b = _batch(list(range(10, 30)), 2)
    try:
        t.upsert(b)
        died = False
    except Killed:
        died = True
    finally:
        t.store.create = real  # type: ignore[method-assign]
        # a dead process's lock stays; the test releases it as the lease would run out
        t.store.client.delete_object(Bucket=t.path.split("/", 1)[0],
                                     Key=t.path.split("/", 1)[1] + "/.hoodie/morlog.lock")
    # file groups are written on parallel threads: the other group's PUT may still land
    assert died and calls["n"] >= fail_at
    assert _rows(uri) == before
    assert _hudi_rs_rows(uri) == before
    r = MorTable(uri).upsert(_batch([99], 3))
    oracle = dict(before)
    _oracle_apply(oracle, _batch([99], 3))
    assert _rows(uri) == oracle
    assert _hudi_rs_rows(uri) == oracle
    assert r.rolled_back or fail_at == 1


@pytest.mark.parametrize("fail_at", range(2, 7))
def test_a_put_failing_on_s3_is_rolled_back_by_the_same_call(s3: str, fail_at: int) -> None:
    """The n-th object PUT of a commit fails with an error (the writer lives): the call
    rolls its instant back, releases the lock and raises a typed error."""
    from morlog.logformat.errors import WriteError

    uri = _uri(s3)
    t = MorTable.create(uri, SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts")
    t.upsert(_batch(list(range(20)), 1))
    before = _rows(uri)
    real = t.store.create
    calls = {"n": 0}

    def failing(path: str, data: bytes, *, sync: bool = True) -> bool:
        calls["n"] += 1
        if calls["n"] == fail_at:
            raise RuntimeError("503 Slow Down")
        return real(path, data, sync=sync)

    t.store.create = failing  # type: ignore[method-assign]
    try:
        with pytest.raises(WriteError, match="rolled back"):
            t.upsert(_batch(list(range(10, 30)), 2))
    finally:
        t.store.create = real  # type: ignore[method-assign]
    assert _rows(uri) == before
    assert Table(uri).timeline.pending() == []
    r = MorTable(uri).upsert(_batch([99], 3))  # the lock was released by the failed call
    assert not r.rolled_back
    oracle = dict(before)
    _oracle_apply(oracle, _batch([99], 3))
    assert _rows(uri) == oracle


def test_errors_never_show_credentials(s3: str, capsys: pytest.CaptureFixture[str]) -> None:
    from morlog.cli import main
    from morlog.logformat.errors import redact

    uri = _uri(s3).replace("test:test@", "AKIDSECRET:s3cr%2Fet@")
    MorTable.create(uri, SCHEMA, key_field="id", partition_field="p")
    with pytest.raises(UsageError) as exc:
        MorTable.create(uri, SCHEMA, key_field="id", partition_field="p")
    assert "s3cr" not in str(exc.value) and "AKIDSECRET" not in str(exc.value)
    assert "s3://***@" in str(exc.value)
    missing = uri.replace("/tbl?", "/nope?")
    assert main(["slices", missing, "--json"]) != 0
    err = capsys.readouterr().err
    assert err and "s3cr" not in err and "AKIDSECRET" not in err
    assert redact("s3://k:s/ec+ret@b/p?x=1") == "s3://***@b/p?x=1"
    assert redact("/data/a@b/file") == "/data/a@b/file"  # not a URI: unchanged


def test_properties_are_replaced_in_one_put_and_the_backup_is_read(s3: str) -> None:
    """spec/table.md §1.1 on S3: one conditional PUT replaces hoodie.properties (no moment
    without it); a table left with only the backup reads, writes and is restored."""
    from morlog.logformat.table_files import PROPERTIES_BACKUP_FILE, PROPERTIES_FILE
    from morlog.writers.core.properties import update_properties

    uri = _uri(s3)
    t = MorTable.create(uri, SCHEMA, key_field="id", partition_field="p",
                        ordering_field="ts", table_version=6)
    t.upsert(_batch([1, 2], 1))
    props = dict(Table(uri).config.props)
    store = t.store
    assert isinstance(store, S3Store)
    deletes: list[str] = []
    real_delete = store.delete

    def delete(path: str) -> bool:
        deletes.append(path)
        return real_delete(path)

    store.delete = delete  # type: ignore[method-assign]
    update_properties(store, t.location, {**props, "morlog.test": "1"})
    assert not any(p.endswith(PROPERTIES_FILE) for p in deletes)
    assert Table(uri).config.props["morlog.test"] == "1"
    bucket, key = store.bucket_key(store.join(t.location.path, ".hoodie", PROPERTIES_FILE))
    body = store.client.get_object(Bucket=bucket, Key=key)["Body"].read()
    store.client.put_object(Bucket=bucket, Key=key + ".backup", Body=body)
    store.client.delete_object(Bucket=bucket, Key=key)
    assert key.endswith(PROPERTIES_FILE) and (key + ".backup").endswith(PROPERTIES_BACKUP_FILE)
    assert set(_rows(uri)) == {"k00001", "k00002"}
    MorTable(uri).upsert(_batch([3], 2))
    assert set(_rows(uri)) == {"k00001", "k00002", "k00003"}
    assert store.client.get_object(Bucket=bucket, Key=key)["Body"].read() == body


def test_a_removed_folder_leaves_no_empty_folder_on_s3(s3: str) -> None:
    """Removing a folder (a Spark write's staging folder, a dropped partition) removes its
    name too: pyarrow keeps an empty "folder/" marker object when the last file under a
    prefix is deleted, which ``morlog repair`` took for a Spark write that never committed
    (SPARK_STAGING, after every successful data source write on S3)."""
    from morlog.writers.repair import plan_repair

    uri = _uri(s3)
    MorTable.create(uri, _batch([1], 1).schema, key_field="id", ordering_field="ts")
    store, inner = store_for(uri)
    stage = store.join(inner, ".hoodie", ".temp", "spark-0123")
    for name in ("part-0.arrow", "sub/part-1.arrow"):
        assert store.create(store.join(stage, name), b"x")
    assert [f.kind for f in plan_repair(uri).findings] == ["SPARK_STAGING"]
    store.remove_tree(stage)
    assert not store.storage.subdirs(store.join(inner, ".hoodie", ".temp"))
    assert plan_repair(uri).findings == []
    store.remove_tree(stage)  # absent: nothing to do
