"""``hoodie.properties`` rewrites never leave a table without properties (spec/table.md §1.1),
and a morlog writer killed before its inflight does not block the next (§9.1)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from morlog.cli import main
from morlog.logformat.errors import UsageError
from morlog.logformat.table_files import PROPERTIES_BACKUP_FILE, PROPERTIES_FILE
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.core.properties import update_properties
from morlog.writers.core.store import ConcurrentWriterError, LocalStore
from morlog.writers.options import WriteConfig

SCHEMA = pa.schema([("id", pa.string()), ("v", pa.int64()), ("p", pa.string())])


def _batch(ids: Any, v: int) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": [f"k{i:05d}" for i in ids], "v": [v] * len(ids),
                     "p": [f"p{i % 3}" for i in ids]}, schema=SCHEMA)


def _table(root: Path) -> MorTable:
    return MorTable.create(str(root), SCHEMA, key_field="id", partition_field="p",
                           ordering_field="v", config=WriteConfig(fsync=False))


def _ids(root: Path) -> list[str]:
    return sorted(Table(str(root)).read(columns=["id"]).column("id").to_pylist())


def test_a_table_with_only_the_backup_reads_writes_and_is_restored(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(10), 1))
    hoodie = root / ".hoodie"
    (hoodie / PROPERTIES_FILE).rename(hoodie / PROPERTIES_BACKUP_FILE)
    assert _ids(root) == [f"k{i:05d}" for i in range(10)]
    assert main(["snapshot", str(root), "--columns", "id"]) == 0
    MorTable(str(root), WriteConfig(fsync=False)).upsert(_batch(range(5, 15), 2))
    assert _ids(root) == [f"k{i:05d}" for i in range(15)]
    # the writer finished the dead rewrite (Hudi's recoverIfNeeded)
    assert (hoodie / PROPERTIES_FILE).read_bytes() == (hoodie / PROPERTIES_BACKUP_FILE
                                                       ).read_bytes()


def test_repair_restores_properties_from_the_backup(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root).upsert(_batch(range(4), 1))
    hoodie = root / ".hoodie"
    before = (hoodie / PROPERTIES_FILE).read_bytes()
    (hoodie / PROPERTIES_FILE).rename(hoodie / PROPERTIES_BACKUP_FILE)
    assert main(["repair", str(root)]) == 1  # found: the file is missing
    assert main(["repair", str(root), "--apply"]) == 0
    assert (hoodie / PROPERTIES_FILE).read_bytes() == before
    assert not (hoodie / PROPERTIES_BACKUP_FILE).exists()
    assert main(["repair", str(root)]) == 0


def test_no_table_is_still_not_a_table(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a Hudi table"):
        Table(str(tmp_path))


@pytest.fixture(params=["atomic", "backup"])
def protocol(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """``atomic``: morlog's local rename; ``backup``: Hudi's backup protocol, as a store
    without an atomic replace runs it."""
    if request.param == "backup":
        monkeypatch.setattr(LocalStore, "can_replace", False)
    return str(request.param)


def test_reads_and_upserts_racing_properties_rewrites_never_fail(
        tmp_path: Path, protocol: str) -> None:
    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(30), 0))
    props = dict(Table(str(root)).config.props)
    stop = threading.Event()
    rewrites = [0]
    errors: list[BaseException] = []

    def rewrite() -> None:  # what `rli build` does to the file, in a tight loop
        store = LocalStore()
        try:
            while not stop.is_set():
                update_properties(store, t.location,
                                  {**props, "morlog.test.flip": str(rewrites[0] % 2)},
                                  fsync=False)
                rewrites[0] += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    th = threading.Thread(target=rewrite)
    th.start()
    try:
        for _ in range(60):
            assert len(_ids(root)) == 30
        for i in range(10):
            MorTable(str(root), WriteConfig(fsync=False)).upsert(_batch(range(30), i + 1))
    finally:
        stop.set()
        th.join()
    assert not errors
    assert rewrites[0] > 20
    t2 = Table(str(root))
    assert t2.read(columns=["v"]).column("v").to_pylist() == [10] * 30


_STORE_OPS = ("read", "create", "delete", "replace")


def test_a_rewrite_killed_at_any_store_operation_leaves_a_readable_table(
        tmp_path: Path, protocol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(6), 1))
    old = dict(Table(str(root)).config.props)
    new = {**old, "morlog.test.key": "new"}
    killed = 0
    originals = {n: getattr(LocalStore, n) for n in _STORE_OPS}

    def wrap(name: str, k: int, calls: list[int]) -> Any:
        orig = originals[name]

        def op(self: LocalStore, *a: Any, **kw: Any) -> Any:
            calls[0] += 1
            if calls[0] == k:
                raise OSError(f"killed at store operation {k} ({name})")
            return orig(self, *a, **kw)
        return op

    for k in range(1, 20):
        calls = [0]
        for n in _STORE_OPS:
            monkeypatch.setattr(LocalStore, n, wrap(n, k, calls))
        try:
            update_properties(LocalStore(), t.location, new, fsync=False)
        except OSError:
            killed += 1
        else:
            break
        finally:
            for n in _STORE_OPS:
                monkeypatch.setattr(LocalStore, n, originals[n])
        props = dict(Table(str(root)).config.props)
        assert props in (old, new), k
        assert len(_ids(root)) == 6
        MorTable(str(root), WriteConfig(fsync=False)).upsert(_batch(range(6), k + 1))
        update_properties(LocalStore(), t.location, old, fsync=False)  # next round
    assert killed >= (1 if protocol == "atomic" else 4)
    assert dict(Table(str(root)).config.props) == new


_KILL_BEFORE_INFLIGHT = textwrap.dedent("""
    import os, signal, sys
    import pyarrow as pa
    from morlog.writers.core import commit
    from morlog.writers.client import MorTable, WriteConfig

    orig = commit.TimelineWriter.write

    def write(self, instant, state, meta, action="deltacommit", *a, **kw):
        if state == "inflight":
            os.kill(os.getpid(), signal.SIGKILL)  # after .requested and the heartbeat
        return orig(self, instant, state, meta, action, *a, **kw)

    commit.TimelineWriter.write = write
    schema = pa.schema([("id", pa.string()), ("v", pa.int64()), ("p", pa.string())])
    t = MorTable(sys.argv[1], WriteConfig(fsync=False))
    t.upsert(pa.table({"id": ["z1"], "v": [9], "p": ["p0"]}, schema=schema))
""")


def test_a_writer_killed_between_requested_and_inflight_does_not_block(
        tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root).upsert(_batch(range(3), 1))
    r = subprocess.run([sys.executable, "-c", _KILL_BEFORE_INFLIGHT, str(root)],
                       check=False, capture_output=True, timeout=120)
    assert r.returncode == -signal.SIGKILL, r.stderr
    pending = Table(str(root)).timeline.pending()
    assert len(pending) == 1
    assert os.path.exists(root / ".hoodie" / ".heartbeat" / pending[0].requested)
    # the next writer holds the lock, so the dead writer's instant is rolled back at once
    MorTable(str(root), WriteConfig(fsync=False)).upsert(_batch(range(3, 5), 2))
    t = Table(str(root))
    assert not t.timeline.pending()
    assert _ids(root) == [f"k{i:05d}" for i in range(5)]


def test_another_writers_pending_instant_with_a_live_heartbeat_still_blocks(
        tmp_path: Path) -> None:
    """A Hudi writer's instant (empty heartbeat, Hudi's) keeps Hudi's heartbeat rule."""
    root = tmp_path / "t"
    _table(root).upsert(_batch(range(3), 1))
    t = Table(str(root))
    instant = "29990101000000000"
    timeline = Path(t.timeline.directory)
    requested = [n for n in os.listdir(timeline) if n.endswith(".deltacommit.requested")]
    assert requested
    (timeline / f"{instant}.deltacommit.requested").write_bytes(b"")
    hb = root / ".hoodie" / ".heartbeat"
    hb.mkdir(exist_ok=True)
    (hb / instant).write_bytes(b"")
    with pytest.raises(ConcurrentWriterError, match="live heartbeat"):
        MorTable(str(root), WriteConfig(fsync=False)).upsert(_batch(range(3, 5), 2))


@pytest.mark.parametrize("service", ["compaction", "logcompaction", "clean"])
def test_repair_apply_executes_a_pending_service_again(tmp_path: Path, service: str) -> None:
    """A compaction, log compaction or clean left pending by a dead process: repair
    --apply executes its plan again, as Hudi (and the service's own command) does."""
    from morlog.writers.services.cleaning import schedule_clean
    from morlog.writers.services.compaction import schedule_compaction
    from morlog.writers.services.logcompaction import schedule_log_compaction

    root = tmp_path / "t"
    opts = {"hoodie.clean.automatic": "false", "hoodie.clean.commits.retained": "1",
            "hoodie.log.compaction.blocks.threshold": "2"}
    t = MorTable.create(str(root), SCHEMA, key_field="id", partition_field="p",
                        ordering_field="v", table_version=9,
                        config=WriteConfig(fsync=False, hoodie_options=opts))
    for v in range(1, 5):
        t.upsert(_batch(range(6), v))
    if service == "clean":
        from morlog.writers.services.compaction import compact

        compact(t)
        t.upsert(_batch(range(6), 5))
        compact(t)
        instant = schedule_clean(t, force=True)
    elif service == "compaction":
        instant = schedule_compaction(t, force=True)
    else:
        instant = schedule_log_compaction(t)
    assert instant is not None
    before = Table(str(root)).read(columns=["id", "v", "p"]).sort_by("id").to_pylist()
    pending = Table(str(root)).timeline.pending()
    assert [(i.requested, i.action) for i in pending] == [(instant, service)]
    assert main(["repair", str(root)]) == 1
    assert main(["repair", str(root), "--apply"]) == 0
    t2 = Table(str(root))
    assert not t2.timeline.pending()
    done = [n for n in os.listdir(t2.timeline.directory)
            if n.startswith(instant) and n.endswith(f".{service}")
            or n.startswith(instant) and service != "clean" and n.endswith(".commit")
            or n.startswith(instant) and n.endswith(".deltacommit")]
    assert done, os.listdir(t2.timeline.directory)
    assert t2.read(columns=["id", "v", "p"]).sort_by("id").to_pylist() == before
    assert main(["repair", str(root)]) == 0


def test_reads_while_rli_build_runs_never_fail(tmp_path: Path) -> None:
    """The issue's check: `rli build` (which rewrites hoodie.properties twice) in a loop
    while readers read: every read succeeds and sees every row."""
    from morlog.writers.services.record_index import build

    root = tmp_path / "t"
    t = _table(root)
    t.upsert(_batch(range(40), 1))
    stop = threading.Event()
    builds = [0]
    errors: list[BaseException] = []

    def rebuild() -> None:
        try:
            while not stop.is_set():
                build(t, 2)
                builds[0] += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    th = threading.Thread(target=rebuild)
    th.start()
    reads = 0
    try:
        while builds[0] < 8 and not errors:
            Table(str(root))  # opening reads the properties: the racing step
            reads += 1
            if reads % 50 == 0:
                assert len(_ids(root)) == 40
    finally:
        stop.set()
        th.join()
    assert not errors
    assert reads > 50
