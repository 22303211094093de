"""Repair: find, and when asked remove, what a crashed or hostile writer left in a table.

The library part of ``morlog repair TABLE`` (a dry run unless ``--apply``), after Hudi's CLI
repair commands (``repair deduplicate``, ``repair corrupted clean files``, ``rollback`` of
pending instants). :func:`plan_repair` only reads; :func:`apply_repair` changes the table,
holding the table's writer lock. What it finds:

- ``PENDING_INSTANT``: a delta commit left requested or inflight while no writer holds the
  lock. Applied by the write client's own rollback (:meth:`MorTable.rollback_pending`).
- ``TORN_TAIL``: a log file whose end is not a whole block (a write cut short): bytes after
  the last block that parses. Applied by truncating the file after the last whole block (a
  file with no whole block is deleted); storages that cannot truncate are reported only.
- ``ORPHAN_TEMP``: ``.morlog-tmp-*`` files of writers killed between writing and publishing.
- ``SPARK_STAGING``: ``.hoodie/.temp/spark-*`` folders of Spark write jobs that died before
  committing.
- ``STALE_LOCK``: an S3 lock object whose lease ran out, or that cannot be read (empty, not
  JSON) and is older than the lease.
- ``MDT_DAMAGED``: a file of the metadata table that is damaged (a corrupt block, a torn
  tail, a base file or timeline that does not read: ``morlog.readers.mdt.read
  .damaged_files``). Applied by rebuilding the metadata table from the data table, as
  Hudi's re-bootstrap does (``morlog.writers.mdt.plan.rebuild_metadata_table``).
- ``UNREADABLE_PLAN``: a compaction or log compaction left requested whose plan does not
  decode (``PendingServices.unreadable``). It wrote nothing and can never run; applied by
  deleting its requested file, when no inflight file and no data file carries its instant
  (spec/services.md §4.6).
- ``DAMAGED_BLOCK``: a block of a data log whose framing adds up but that readers cannot
  use: its content or header does not decode, its type or log format version is garbage
  (the scan stops there), or the file's first block magic is damaged (no reader opens the
  file). Readers and the next upsert refuse the slice with an error naming the file, as
  Hudi's do. Applied on local storage by patching the file in place: a damaged first
  magic is written back; a damaged block's reverse pointer is zeroed, which makes its
  framing not add up, so every reader (Hudi's ``HoodieLogFileReader.isBlockCorrupted``
  and morlog's) takes it for a CORRUPT block and skips it (its records are lost, as they
  were). spec/format.md §6.5.
- ``PROPERTIES_BACKUP``: ``hoodie.properties.backup`` left by a properties rewrite that
  died (readers read it while ``hoodie.properties`` is missing). Applied as Hudi's
  ``ConfigUtils.recoverIfNeeded``: a missing file restored from the backup, the backup
  deleted.
- ``PENDING_SERVICE``: a compaction, log compaction or clean left requested or inflight
  while no writer holds the lock. Applied as Hudi does: its plan is executed again
  (``morlog compact`` / ``logcompact`` / ``clean`` do the same); a log compaction whose
  plan can no longer run is dropped, as ``morlog logcompact`` drops it.
- ``LIVE_WRITER`` / ``CORRUPT_BLOCK``: reported, never changed (a writer is committing now;
  a damaged block in the middle of a log, which readers skip as Hudi does).
"""

from __future__ import annotations

import json
import os
import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any

from morlog.logformat.cdc import check_cdc_rows
from morlog.logformat.constants import BLOCK_PREFIX_LEN, MAGIC, MAGIC_LEN, TRAILER_LEN, BlockType
from morlog.logformat.errors import (
    FormatError,
    MorlogError,
    MorlogWarning,
    UnknownBlockTypeError,
    UnknownHeaderKeyError,
    UnsupportedVersionError,
    UsageError,
)
from morlog.logformat.framing import read_i64
from morlog.logformat.naming import REQUESTED, LogFileName
from morlog.logformat.table_files import PROPERTIES_BACKUP_FILE, PROPERTIES_FILE
from morlog.logformat.virtual_keys import KeyField, key_columns
from morlog.readers.logfile import LogBlock, LogFileReader
from morlog.readers.storage import BytesSource
from morlog.readers.table import Table
from morlog.writers.core.profile import WRITE_VERSIONS
from morlog.writers.core.store import (
    DEFAULT_LEASE_SECONDS,
    DEFAULT_MIN_TEMP_AGE_SECONDS,
    TEMP_PREFIX,
    ArrowStore,
    ConcurrentWriterError,
    LocalStore,
    S3Store,
    WriteStore,
    store_for,
)
from morlog.writers.core.timeline import (
    HEARTBEAT_DIR,
    HEARTBEAT_INTERVAL_MS,
    HEARTBEAT_TOLERABLE_MISSES,
)

PENDING_INSTANT = "PENDING_INSTANT"
TORN_TAIL = "TORN_TAIL"
ORPHAN_TEMP = "ORPHAN_TEMP"
SPARK_STAGING = "SPARK_STAGING"
STALE_LOCK = "STALE_LOCK"
LIVE_WRITER = "LIVE_WRITER"
CORRUPT_BLOCK = "CORRUPT_BLOCK"
MDT_DAMAGED = "MDT_DAMAGED"
UNREADABLE_PLAN = "UNREADABLE_PLAN"
DAMAGED_BLOCK = "DAMAGED_BLOCK"
#: a log format version above this is damage, not a newer writer's (Hudi writes version 1)
_MAX_PLAUSIBLE_VERSION = 255
#: at most this many damaged blocks are patched in one log file per run
_MAX_PATCHES = 64
PROPERTIES_BACKUP = "PROPERTIES_BACKUP"
PENDING_SERVICE = "PENDING_SERVICE"
#: the table services morlog re-executes from their plans, and the command that does too
SERVICE_COMMANDS = {"compaction": "compact", "logcompaction": "logcompact", "clean": "clean"}


@dataclass(frozen=True)
class Finding:
    """One thing left behind: what, where (store path), why, and how it is fixed."""

    kind: str
    path: str
    reason: str
    instant: str | None = None
    #: TORN_TAIL: the file length to keep (the end of the last whole block)
    keep_bytes: int | None = None
    #: whether :func:`apply_repair` fixes it
    fixable: bool = True
    #: STALE_LOCK: the lock object's ETag (deleted only if unchanged)
    etag: str | None = None


@dataclass
class RepairPlan:
    table: str
    findings: list[Finding] = field(default_factory=list)
    live_writer: bool = False

    @property
    def fixable(self) -> list[Finding]:
        return [f for f in self.findings if f.fixable]

    def as_dict(self) -> dict[str, Any]:
        return {"table": self.table, "live_writer": self.live_writer,
                "findings": [asdict(f) for f in self.findings]}


@dataclass
class RepairResult:
    plan: RepairPlan
    done: list[Finding] = field(default_factory=list)
    #: findings not fixed, with the reason
    skipped: list[tuple[Finding, str]] = field(default_factory=list)
    rolled_back: list[str] = field(default_factory=list)


# --- finding -----------------------------------------------------------------------------


def plan_repair(table_path: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS,
                min_temp_age_seconds: float = DEFAULT_MIN_TEMP_AGE_SECONDS,
                now: float | None = None) -> RepairPlan:
    """What :func:`apply_repair` would do to the table at ``table_path`` (reads only)."""
    now = time.time() if now is None else now
    store, inner = store_for(table_path, lease_seconds=lease_seconds)
    plan = RepairPlan(table_path)
    stale = _lock_finding(store, inner, lease_seconds, now)
    if stale is not None:
        plan.findings.append(stale)
    plan.live_writer = stale is None and _lock_held(store, inner)
    if plan.live_writer:
        plan.findings.append(Finding(LIVE_WRITER, store.join(inner, ".hoodie", "morlog.lock"),
                                     "a writer holds the table's lock: nothing is changed",
                                     fixable=False))
    fixable = not plan.live_writer
    plan.findings.extend(_properties_findings(store, inner, fixable))
    fs = store.fs if isinstance(store, ArrowStore) else None
    table = Table(inner, fs)
    plan.findings.extend(_service_findings(store, table, fixable))
    live_instants = set()
    for inst in table.timeline.pending():
        if inst.action in SERVICE_COMMANDS:
            continue
        # a writer with a fresh heartbeat (a distributed write's tasks, a Hudi writer) is
        # alive: its instant is not a dead writer's (spec/table.md §9.1)
        alive = _heartbeat_alive(store, inner, inst.requested)
        if alive:
            live_instants.add(inst.requested)
        ok = (fixable and not alive and inst.action in ("deltacommit", "rollback")
              and table.version in WRITE_VERSIONS)
        why = (f"{inst.action} left {inst.state.lower()} by a writer that is gone"
               if ok else f"pending {inst.action}: "
               + ("a writer is live" if not fixable else
                  "its writer is live (fresh heartbeat)" if alive else
                  "not a delta commit of a table "
                  "version morlog writes (6, 8, 9); roll it back with Hudi's CLI"))
        plan.findings.append(Finding(PENDING_INSTANT, store.join(table.timeline.directory,
                                                                 inst.file_name), why,
                                     instant=inst.requested, fixable=ok))
    for part in table.partitions():
        directory = table.slice_dir(part)
        for name in sorted(store.listdir(directory)):
            if LogFileName.matches(name):
                plan.findings.extend(_log_findings(store, store.join(directory, name), table,
                                                   fixable))
                plan.findings.extend(_block_findings(store, store.join(directory, name),
                                                     table, fixable))
    plan.findings.extend(_mdt_findings(table, fixable))
    plans = _plan_findings(store, table, fixable)
    covered = {f.instant for f in plans}  # reported as UNREADABLE_PLAN instead
    plan.findings = [f for f in plan.findings
                     if f.kind not in (PENDING_INSTANT, PENDING_SERVICE)
                     or f.instant not in covered] + plans
    for path, mtime in _walk_files(store, inner):
        base = path.rsplit("/", 1)[-1]
        if base.startswith(TEMP_PREFIX):
            old = mtime is None or now - mtime >= min_temp_age_seconds
            plan.findings.append(Finding(
                ORPHAN_TEMP, path, "temporary file of a writer that did not publish it"
                if old else "temporary file younger than the minimum age (a writer may "
                "be publishing it)", fixable=fixable and old))
    staging = store.join(inner, ".hoodie", ".temp")
    for d in _subdirs(store, staging):
        if d.startswith("spark-"):
            live = d[len("spark-"):] in live_instants
            plan.findings.append(Finding(SPARK_STAGING, store.join(staging, d),
                                         "stage of a Spark write still running" if live else
                                         "staging folder of a Spark write that did not commit",
                                         fixable=fixable and not live))
    return plan


def _heartbeat_alive(store: WriteStore, inner: str, instant: str) -> bool:
    """Whether ``instant``'s heartbeat file is fresher than Hudi's expiry."""
    mtime = store.mtime(store.join(inner, ".hoodie", HEARTBEAT_DIR, instant))
    expiry = HEARTBEAT_INTERVAL_MS * (HEARTBEAT_TOLERABLE_MISSES + 1) / 1000.0
    return mtime is not None and time.time() - mtime < expiry


def _service_findings(store: WriteStore, table: Table, fixable: bool) -> list[Finding]:
    """``PENDING_SERVICE``: compactions, log compactions and cleans left pending."""
    out = []
    for inst in table.timeline.pending():
        command = SERVICE_COMMANDS.get(inst.action)
        if command is None:
            continue
        ok = fixable and table.version in WRITE_VERSIONS
        why = (f"{inst.action} left {inst.state.lower()}: its plan is executed again, as "
               f"Hudi does ('morlog {command} TABLE' does the same)" if ok else
               f"pending {inst.action}: " + ("a writer is live" if not fixable else
                                             "not a table version morlog writes (6, 8, 9)"))
        out.append(Finding(PENDING_SERVICE, store.join(table.timeline.directory,
                                                       inst.file_name), why,
                           instant=inst.requested, fixable=ok))
    return out


def _rerun_services(plan: RepairPlan, lease_seconds: float, result: RepairResult) -> None:
    """Execute the plans of the pending services again, oldest first (each takes the writer
    lock itself); a log compaction whose plan can no longer run is dropped."""
    pending = sorted((f for f in plan.findings if f.kind == PENDING_SERVICE and f.fixable),
                     key=lambda f: f.instant or "")
    if not pending:
        return
    from morlog.writers.client import MorTable
    from morlog.writers.options import WriteConfig
    from morlog.writers.services.cleaning import run_clean
    from morlog.writers.services.compaction import run_compaction
    from morlog.writers.services.logcompaction import (
        discard_log_compaction,
        refusal,
        run_log_compaction,
    )

    mt = MorTable(plan.table, WriteConfig(lock_lease_seconds=lease_seconds))
    for f in pending:
        assert f.instant is not None
        # the timeline file is <instant>.<action>.<state> in both layouts
        action = f.path.replace("\\", "/").rsplit("/", 1)[-1].split(".")[1]
        try:
            if action == "compaction":
                run_compaction(mt, f.instant)
            elif action == "logcompaction":
                if refusal(mt.table(), f.instant) is not None:
                    discard_log_compaction(mt, f.instant)
                else:
                    run_log_compaction(mt, f.instant)
            else:
                run_clean(mt, f.instant)
            result.done.append(f)
        except MorlogError as exc:
            result.skipped.append((f, f"{exc.message} (retry with 'morlog "
                                      f"{SERVICE_COMMANDS.get(action, action)} TABLE')"))


def _properties_findings(store: WriteStore, inner: str, fixable: bool) -> list[Finding]:
    """``PROPERTIES_BACKUP``: a backup of ``hoodie.properties`` a rewrite left behind."""
    backup = store.join(inner, ".hoodie", PROPERTIES_BACKUP_FILE)
    if not store.exists(backup):
        return []
    missing = not store.exists(store.join(inner, ".hoodie", PROPERTIES_FILE))
    why = ("hoodie.properties is missing (a rewrite died): restored from the backup"
           if missing else "backup left by a properties rewrite that died: deleted")
    return [Finding(PROPERTIES_BACKUP, backup, why, fixable=fixable)]


def _apply_properties_backup(store: WriteStore, f: Finding) -> None:
    """Restore ``hoodie.properties`` from the backup if missing, then delete the backup."""
    from morlog.writers.core.properties import restore_properties

    inner = f.path.rsplit("/.hoodie/", 1)[0] if "/.hoodie/" in f.path else f.path
    restore_properties(store, inner)
    store.delete(f.path)


def _log_findings(store: WriteStore, path: str, table: Table, fixable: bool
                  ) -> list[Finding]:
    try:
        size = store.size(path)
        # the scan is about framing: what the blocks' headers hold (an unknown key, an
        # index a reader cannot use) is not repair's output
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MorlogWarning)
            with LogFileReader(table.storage.source(path)) as reader:
                blocks = list(reader.blocks())
    except MorlogError:
        return []  # a scan that stops: DAMAGED_BLOCK (_block_findings)
    good_end = 0
    out: list[Finding] = []
    for b in blocks:
        if not b.is_corrupt:
            good_end = b.offset + b.size
    for b in blocks:
        if b.is_corrupt and b.offset < good_end:
            out.append(Finding(CORRUPT_BLOCK, path, f"damaged block at offset {b.offset} "
                               f"({b.reason}); readers skip it", fixable=False))
    if good_end < size:
        tail = size - good_end
        reason = (f"{tail} bytes after the last whole block" if tail >= MAGIC_LEN or blocks
                  else f"{tail} bytes, no whole block")
        out.append(Finding(TORN_TAIL, path, f"torn tail: {reason}", keep_bytes=good_end,
                           fixable=fixable))
    return out


def _walk_files(store: WriteStore, root: str) -> list[tuple[str, float | None]]:
    """Every file under ``root`` with its modification time (seconds since the epoch)."""
    out: list[tuple[str, float | None]] = []
    if isinstance(store, LocalStore):
        for d, _dirs, files in os.walk(root):
            for f in files:
                p = os.path.join(d, f)
                try:
                    out.append((p, os.lstat(p).st_mtime))
                except FileNotFoundError:
                    pass
        return out
    if isinstance(store, ArrowStore):
        import pyarrow.fs as pafs

        try:
            infos = store.fs.get_file_info(pafs.FileSelector(root, recursive=True,
                                                             allow_not_found=True))
        except OSError as exc:
            raise UsageError(f"cannot list the table: {exc}", path=root) from None
        for i in infos:
            if i.type == pafs.FileType.File:
                out.append((i.path, i.mtime.timestamp() if i.mtime is not None else None))
    return out


def _subdirs(store: WriteStore, directory: str) -> list[str]:
    try:
        return sorted(store.storage.subdirs(directory))
    except (OSError, MorlogError):
        return []


def _lock_held(store: WriteStore, inner: str) -> bool:
    if isinstance(store, S3Store):
        return _s3_lock_info(store, inner) is not None
    if isinstance(store, LocalStore):
        if not os.path.isdir(os.path.join(inner, ".hoodie")):
            return False
        try:
            store.lock(inner).release()
        except ConcurrentWriterError:
            return True
    return False


def _s3_lock_info(store: S3Store, inner: str) -> dict[str, Any] | None:
    bucket, key = store.bucket_key(store.join(inner, ".hoodie", "morlog.lock"))
    try:
        obj = store.client.get_object(Bucket=bucket, Key=key)
    except Exception as exc:
        code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
        if code in ("NoSuchKey", "404"):
            return None
        raise UsageError(f"cannot read the lock object: {type(exc).__name__}",
                         path=f"{bucket}/{key}") from None
    body = obj["Body"].read()
    try:
        info = json.loads(body)
        if not isinstance(info, dict):
            raise ValueError("not an object")
    except (ValueError, RecursionError):
        info = {}
    modified = obj.get("LastModified")
    return {"info": info, "etag": obj.get("ETag"), "bucket": bucket, "key": key,
            "modified": modified.timestamp() if modified is not None else None,
            "readable": bool(info)}


def _lock_finding(store: WriteStore, inner: str, lease: float, now: float) -> Finding | None:
    if not isinstance(store, S3Store):
        return None  # local locks are flocks: the kernel frees them when the writer dies
    held = _s3_lock_info(store, inner)
    if held is None:
        return None
    info = held["info"]
    path = f"{held['bucket']}/{held['key']}"
    raw = info.get("expires")
    # the same rule as the writer's (S3Store.lock): a numeric lease end, else LastModified
    expires = (float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool)
               else None)
    if expires is not None:
        stale = expires < now
        why = "lease ran out"
    else:
        stale = held["modified"] is not None and held["modified"] + lease < now
        why = "unreadable lock object older than the lease"
    if not stale:
        return None
    return Finding(STALE_LOCK, path, why, etag=held["etag"])


# --- applying ----------------------------------------------------------------------------


def apply_repair(plan: RepairPlan, *, lease_seconds: float = DEFAULT_LEASE_SECONDS
                 ) -> RepairResult:
    """Fix the plan's fixable findings, holding the writer lock; raises
    :class:`ConcurrentWriterError` when another writer holds it."""
    store, inner = store_for(plan.table, lease_seconds=lease_seconds)
    result = RepairResult(plan)
    for f in plan.findings:
        if f.kind == STALE_LOCK and f.fixable and isinstance(store, S3Store):
            bucket, key = store.bucket_key(f.path)
            try:
                store.client.delete_object(Bucket=bucket, Key=key, IfMatch=f.etag)
                result.done.append(f)
            except Exception as exc:
                result.skipped.append((f, f"lock object changed: {type(exc).__name__}"))
    lock = store.lock(inner)
    try:
        for f in plan.findings:
            if not f.fixable or f.kind in (STALE_LOCK, PENDING_INSTANT, MDT_DAMAGED,
                                           UNREADABLE_PLAN, DAMAGED_BLOCK, PENDING_SERVICE):
                if not f.fixable:
                    result.skipped.append((f, f.reason))
                continue
            try:
                _apply_one(store, f)
                result.done.append(f)
            except MorlogError as exc:
                result.skipped.append((f, exc.message))
            except OSError as exc:
                result.skipped.append((f, f"{type(exc).__name__}: {exc.strerror or ''}"))
        _apply_blocks(store, plan, result)
        _apply_mdt(store, plan, result, lease_seconds)
        _apply_plans(store, plan, result)
        pending = [f for f in plan.findings if f.kind == PENDING_INSTANT and f.fixable]
        if pending:
            from morlog.writers.client import MorTable
            from morlog.writers.options import WriteConfig

            rolled = MorTable(plan.table, WriteConfig(lock_lease_seconds=lease_seconds)
                              ).rollback_pending()
            result.rolled_back = rolled
            for f in pending:
                (result.done.append(f) if f.instant in rolled
                 else result.skipped.append((f, "not rolled back")))
    finally:
        lock.release()
    _rerun_services(plan, lease_seconds, result)
    return result


def _apply_one(store: WriteStore, f: Finding) -> None:
    if f.kind == PROPERTIES_BACKUP:
        _apply_properties_backup(store, f)
    elif f.kind == TORN_TAIL:
        assert f.keep_bytes is not None
        if f.keep_bytes == 0:
            store.delete(f.path)
        else:
            store.truncate(f.path, f.keep_bytes)
    elif f.kind == ORPHAN_TEMP:
        store.delete(f.path)
    elif f.kind == SPARK_STAGING:
        store.remove_tree(f.path)


# --- the metadata table -----------------------------------------------------------------------


def _mdt_findings(table: Table, fixable: bool) -> list[Finding]:
    """``MDT_DAMAGED`` for each damaged file of the table's metadata table."""
    from morlog.readers.mdt.read import damaged_files

    return [Finding(MDT_DAMAGED, path, f"metadata table: {why}; --apply rebuilds the "
                    "metadata table from the data table", fixable=fixable)
            for path, why in damaged_files(table.storage, table.path)]


def _apply_mdt(store: WriteStore, plan: RepairPlan, result: RepairResult,
               lease_seconds: float) -> None:
    """Rebuild the metadata table once for all ``MDT_DAMAGED`` findings (the caller holds
    the writer lock)."""
    found = [f for f in plan.findings if f.kind == MDT_DAMAGED and f.fixable]
    if not found:
        return
    from morlog.writers.client import MorTable
    from morlog.writers.mdt.plan import rebuild_metadata_table
    from morlog.writers.options import WriteConfig

    mt = MorTable(plan.table, WriteConfig(lock_lease_seconds=lease_seconds))
    try:
        rebuild_metadata_table(store, mt.location, mt.table(), fsync=mt.config.fsync)
    except (MorlogError, OSError) as exc:
        why = exc.message if isinstance(exc, MorlogError) else f"{type(exc).__name__}: {exc}"
        result.skipped.extend((f, why) for f in found)
        return
    result.done.extend(found)


# --- service plans that do not decode ------------------------------------------------------


def _plan_findings(store: WriteStore, table: Table, fixable: bool) -> list[Finding]:
    """``UNREADABLE_PLAN`` for each requested compaction or log compaction whose plan does
    not decode; fixable when no data file carries its instant (a base file of an attempt;
    table version 6: logs written into the slice it starts, which need the plan)."""
    unreadable: dict[str, MorlogError] = {}
    inflight: set[str] = set()
    for pending in table.timeline.pending():
        if pending.action in ("compaction", "logcompaction"):
            try:
                table.timeline.plan(pending)
            except FormatError as bad:
                unreadable[pending.requested] = bad
                if pending.state != REQUESTED:
                    inflight.add(pending.requested)
    if not unreadable:
        return []
    from morlog.writers.mdt.plan import data_files

    named: dict[str, str] = {}
    for _part, directory, name, at in data_files(store, table):
        if at in unreadable:
            named.setdefault(at, store.join(directory, name))
    out = []
    for instant, exc in sorted(unreadable.items()):
        path = exc.path or instant
        if instant in inflight:
            out.append(Finding(UNREADABLE_PLAN, path, f"plan does not decode ({exc.message}) "
                               "and the instant is inflight (it may have written files): "
                               "roll it back with Hudi's CLI", instant=instant,
                               fixable=False))
        elif instant in named:
            out.append(Finding(UNREADABLE_PLAN, path, f"plan does not decode ({exc.message}) "
                               f"and {named[instant]} carries its instant: restore the plan "
                               "or roll it back with Hudi's CLI", instant=instant,
                               fixable=False))
        else:
            out.append(Finding(UNREADABLE_PLAN, path, f"plan does not decode ({exc.message}); "
                               "requested, it wrote nothing: --apply deletes it",
                               instant=instant, fixable=fixable))
    return out


def _apply_plans(store: WriteStore, plan: RepairPlan, result: RepairResult) -> None:
    """Delete the requested files of the fixable ``UNREADABLE_PLAN`` findings, each only
    while it is still requested (no inflight file; the caller holds the writer lock)."""
    for f in plan.findings:
        if f.kind != UNREADABLE_PLAN or not f.fixable:
            continue
        inflight = f.path.replace(".requested", ".inflight")
        if inflight != f.path and store.exists(inflight):
            result.skipped.append((f, "it is inflight now"))
            continue
        try:
            store.delete(f.path)
            result.done.append(f)
        except (MorlogError, OSError) as exc:
            result.skipped.append((f, f"{type(exc).__name__}: {exc}"))


# --- damaged blocks of data logs ---------------------------------------------------------------


@dataclass(frozen=True)
class _Patch:
    offset: int
    data: bytes
    reason: str


def _undecodable(block: LogBlock, key_field: KeyField | None) -> str | None:
    """Why a block whose framing adds up cannot be used by readers (None: it can): its
    header or content does not decode, or a data block lacks the table's key columns."""
    try:
        block.header.as_dict()
        t = block.block_type
        if t == BlockType.CDC_DATA:
            # CDC records (op, record_key / ts_ms, images) carry no meta key column
            check_cdc_rows(block.to_arrow(), path=block.path, offset=block.content_offset)
        elif t in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
            names = block.to_arrow().column_names
            missing = [c for c in (key_columns(key_field) if key_field is not None else ())
                       if c not in names]
            if missing:
                return f"data block has no key column {missing[0]!r}"
        elif t == BlockType.HFILE_DATA:
            block.records()
        elif t == BlockType.DELETE:
            block.delete_columns()
        elif t == BlockType.COMMAND:
            _ = block.command_type
    except MorlogError as exc:
        return exc.message
    return None


def _first_damage(source: BytesSource, key_field: KeyField | None) -> _Patch | None:
    """The first damage of a log file held in memory that a patch fixes (see
    ``DAMAGED_BLOCK``), or None."""
    size = source.size
    if size >= MAGIC_LEN and source.read(0, MAGIC_LEN) != MAGIC:
        return _Patch(0, MAGIC, "the file's first block magic is damaged "
                      f"({source.read(0, MAGIC_LEN)!r}): no reader opens the file")
    pos = 0
    try:
        for b in LogFileReader(source).blocks():
            pos = b.offset + b.size
            if b.is_corrupt:
                continue
            why = _undecodable(b, key_field)
            if why is not None:
                return _Patch(b.offset + b.size - TRAILER_LEN, bytes(TRAILER_LEN),
                              f"block at offset {b.offset} does not decode ({why})")
    except (UnknownBlockTypeError, UnsupportedVersionError, UnknownHeaderKeyError) as exc:
        # the block at ``pos`` framed well (its length, reverse pointer and the magic after
        # it were checked before its head was decoded), but its head is garbage
        if isinstance(exc, UnsupportedVersionError) and isinstance(exc.actual, int) and (
                0 <= exc.actual <= _MAX_PLAUSIBLE_VERSION):
            return None  # maybe a newer writer's block: never touched
        length = read_i64(source.read(pos + MAGIC_LEN, 8), 0)
        end = pos + BLOCK_PREFIX_LEN + length
        return _Patch(end - TRAILER_LEN, bytes(TRAILER_LEN),
                      f"block at offset {pos}: {exc.message} (the scan stops there)")
    except MorlogError:
        return None
    return None


def _damage_patches(data: bytes, name: str, key_field: KeyField | None) -> list[_Patch]:
    """The patches that make every block of a log file either usable or CORRUPT (applied
    in order; each found on the file as the ones before leave it)."""
    buf = bytearray(data)
    out: list[_Patch] = []
    for _ in range(_MAX_PATCHES):
        with warnings.catch_warnings():  # what the scan meets is reported as findings
            warnings.simplefilter("ignore")
            patch = _first_damage(BytesSource(bytes(buf), name), key_field)
        if patch is None:
            break
        buf[patch.offset:patch.offset + len(patch.data)] = patch.data
        out.append(patch)
    return out


def _key_field(table: Table) -> KeyField | None:
    """The key columns readers require of the table's data blocks (None: unknown)."""
    try:
        return table.key_field
    except MorlogError:
        return None


def _block_findings(store: WriteStore, path: str, table: Table, fixable: bool
                    ) -> list[Finding]:
    """``DAMAGED_BLOCK`` for each block of the log file at ``path`` that readers cannot
    use and a patch fixes."""
    try:
        patches = _damage_patches(store.read(path), path, _key_field(table))
    except (MorlogError, OSError):
        return []
    local = isinstance(store, LocalStore)
    return [Finding(DAMAGED_BLOCK, path, p.reason + ("; --apply makes readers skip it as a "
                                                     "corrupt block" if local else
                                                     "; this storage cannot patch files"),
                    fixable=fixable and local) for p in patches]


def _apply_blocks(store: WriteStore, plan: RepairPlan, result: RepairResult) -> None:
    """Patch the log files of the fixable ``DAMAGED_BLOCK`` findings in place (local
    storage; the caller holds the writer lock): the patches are found again on the file as
    it is now, so a file changed since the plan gets only what it still needs."""
    by_path: dict[str, list[Finding]] = {}
    for f in plan.findings:
        if f.kind == DAMAGED_BLOCK and f.fixable:
            by_path.setdefault(f.path, []).append(f)
    key_field: KeyField | None = None
    if by_path:
        fs = store.fs if isinstance(store, ArrowStore) else None
        key_field = _key_field(Table(store_for(plan.table)[1], fs))
    for path, found in by_path.items():
        try:
            patches = _damage_patches(store.read(path), path, key_field)
            with open(path, "r+b") as fh:
                for p in patches:
                    fh.seek(p.offset)
                    fh.write(p.data)
                fh.flush()
                os.fsync(fh.fileno())
            result.done.extend(found)
        except (MorlogError, OSError) as exc:
            result.skipped.extend((f, f"{type(exc).__name__}: {exc}") for f in found)


def repair(table_path: str, *, apply: bool = False,
           lease_seconds: float = DEFAULT_LEASE_SECONDS,
           min_temp_age_seconds: float = DEFAULT_MIN_TEMP_AGE_SECONDS) -> RepairResult:
    """Plan, and with ``apply`` fix; a dry run by default (nothing changes)."""
    plan = plan_repair(table_path, lease_seconds=lease_seconds,
                       min_temp_age_seconds=min_temp_age_seconds)
    if not apply:
        return RepairResult(plan)
    return apply_repair(plan, lease_seconds=lease_seconds)


__all__ = ["CORRUPT_BLOCK", "DAMAGED_BLOCK", "DEFAULT_MIN_TEMP_AGE_SECONDS", "LIVE_WRITER",
           "MDT_DAMAGED", "ORPHAN_TEMP",
           "PENDING_INSTANT", "PENDING_SERVICE", "PROPERTIES_BACKUP", "SERVICE_COMMANDS",
           "SPARK_STAGING", "STALE_LOCK", "TORN_TAIL", "UNREADABLE_PLAN", "Finding",
           "RepairPlan", "RepairResult", "apply_repair", "plan_repair", "repair"]
