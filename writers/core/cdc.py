"""Writing CDC log files for a commit of a table with ``hoodie.table.cdc.enabled=true``
(spec/cdc.md §3).

Where Hudi writes CDC data: its merge handles (``HoodieMergeHandleWithChangeLog``, through
``HoodieCDCLogger``) write one CDC log file beside every base file they rewrite; its append
handles (the log appends of merge-on-read tables) write none, and its CDC reader infers their
changes from the log and the slice before (``HoodieCDCExtractor``: LOG_FILE), as it infers
those of new base files (BASE_FILE_INSERT) and replaced file groups (REPLACE_COMMIT).

morlog rewrites no base file on a write (updates and deletes go to logs), so in the
``OP_KEY_ONLY`` and ``DATA_BEFORE`` modes it writes no CDC file at all, as Hudi's Spark writer
of a merge-on-read table: Hudi's reader takes a CDC file of those modes only beside a base file
(``parseWriteStat`` reads the write stat's path as the base file after the change), so a CDC
file beside a log append would break its CDC query. In the ``DATA_BEFORE_AFTER`` mode (Hudi's
default) the CDC records are complete and Hudi's reader takes them as they are (AS_IS, from
``cdcStats`` alone): there, each file group a delta commit writes to a log gets one CDC log
file ``.<fileId>_<instant>.log.<version>_<writeToken>.cdc`` with one
CDC_DATA block of the group's changes, and the group's write stat names it in ``cdcStats``
(path relative to the table -> size), so readers need not merge the slice before. The file
is named like the log file the commit wrote in the group (the slice's base instant in table
version 6, the commit's instant in 8+; the next free version), published before the commit
completes; a rollback deletes it (:func:`cdc_files_of`). Compaction and log compaction
write none (their changes are none).

The changes are the file group's merged rows before the commit against its merged rows with
the commit (``morlog.readers.changes.diff_rows``, the same rule the reader infers with); the
images hold the data fields (``HoodieCDCLogger`` removes the meta fields).
"""

from __future__ import annotations

import zlib
from typing import Any

import pyarrow as pa

import morlog.config as conf
from morlog.logformat.avroschema import avro_to_arrow_schema
from morlog.logformat.cdc import (
    AFTER,
    BEFORE,
    DATA_BEFORE_AFTER,
    OP,
    TS_MS,
    cdc_block,
    cdc_schema,
    logging_mode,
)
from morlog.logformat.errors import UsageError
from morlog.logformat.framing import encode_block
from morlog.logformat.naming import COMPLETED, LOGFILE_BASE_VERSION, LogFileName
from morlog.readers.changes import cdc_enabled, data_images, diff_rows
from morlog.readers.logfile import LogBlock, LogFileReader
from morlog.readers.merge import merge_slice
from morlog.readers.parallel import default_threads, run_all
from morlog.readers.slice_blocks import effective_blocks
from morlog.readers.storage import TableLocation
from morlog.readers.table import Table
from morlog.readers.timeline import Instant, Timeline
from morlog.writers.core.store import WriteStore
from morlog.writers.core.timeline import WRITE_TOKEN

#: the operations whose commits carry CDC files (not the services')
_SERVICE_OPERATIONS = frozenset({"compact", "log_compact", "logcompact", "cluster"})


def writes_cdc(table: Table) -> bool:
    """Whether commits of ``table`` write CDC log files (CDC enabled, DATA_BEFORE_AFTER)."""
    if not cdc_enabled(table):
        return False
    return logging_mode(table.config.get(conf.TABLE_CDC_LOGGING_MODE)) == DATA_BEFORE_AFTER


def _with_instant(table: Table, location: TableLocation, instant: str, action: str) -> Table:
    """``table`` read as if ``instant`` had completed (its blocks visible): the group's rows
    after the commit, before the commit is completed."""
    after = Table(location)
    tl = after.timeline
    done = Instant(instant, action, COMPLETED, None, "")
    after.timeline = Timeline(tl.directory, [*tl.instants, done], tl.layout, tl.storage)
    return after


def write_cdc_files(store: WriteStore, location: TableLocation, before: Table, instant: str,
                    action: str, operation: str, schema: dict[str, Any],
                    stats: dict[str, list[dict[str, Any]]], *, fsync: bool) -> dict[str, int]:
    """Write the CDC log files of a commit about to complete and add ``cdcStats`` to the
    write stats of their file groups (in place); the files written (path relative to the
    table -> CRC-32 of the file's bytes, which the commit records in its extra metadata).
    ``before``: the table when the commit began; ``schema``: the commit's data schema (no
    meta fields)."""
    if operation.lower() in _SERVICE_OPERATIONS or not writes_cdc(before):
        return {}
    targets = []
    for partition, entries in stats.items():
        for e in entries:
            name = str(e.get("path", "")).rsplit("/", 1)[-1]
            if not LogFileName.matches(name):
                continue  # a new base file: its changes are its rows (BASE_FILE_INSERT)
            ln = LogFileName.parse(name)
            if ln.cdc or ln.ext != "log":
                continue
            targets.append((partition, e, ln.instant))
    if not targets:
        return {}
    after = _with_instant(before, location, instant, action)
    data_schema = avro_to_arrow_schema(schema)
    text = cdc_schema(DATA_BEFORE_AFTER, schema)
    written: dict[str, int] = {}
    groups = list(dict.fromkeys((p, str(e["fileId"]), li) for p, e, li in targets))

    # each partition listed once per state
    parts = sorted({p for p, _, _ in groups})
    then = {p: {s.file_id: s for s in before.file_slices(None, p)} for p in parts}
    now = {p: {s.file_id: s for s in after.file_slices(None, p)} for p in parts}

    logs: dict[tuple[str, str], list[str]] = {}
    for p, e, _ in targets:
        names = logs.setdefault((p, str(e["fileId"])), [])
        name = str(e["path"]).rsplit("/", 1)[-1]
        if name not in names:
            names.append(name)

    def changes(job: tuple[str, str, str]) -> pa.Table | None:
        partition, fid, _ = job
        old, new = then[partition].get(fid), now[partition].get(fid)
        rows_before = before.read_slice(old) if old is not None else None
        if before.config.drop_partition_columns:
            rows_after = after.read_slice(new) if new is not None else None
        else:
            # the state after: the commit's own blocks merged onto the state before (one
            # read of the group, not two; the merge is the readers' own)
            rows_after = _apply(after, partition, logs[(partition, fid)], instant,
                                rows_before)
        d = diff_rows(rows_before, rows_after, before.key_field)
        n = len(d.op)
        if not n:
            return None
        return pa.table({OP: d.op, TS_MS: pa.repeat(pa.scalar(instant, pa.string()), n),
                         BEFORE: data_images(d.before, data_schema),
                         AFTER: data_images(d.after, data_schema)})

    # the groups' slices are read on a few threads (each holds two states of one group)
    found = run_all(changes, groups, min(4, default_threads()), "morlog-cdc")
    stat_of: dict[tuple[str, str], dict[str, int]] = {}
    for (partition, fid, log_instant), table in zip(groups, found, strict=True):
        if table is None:
            stat_of[(partition, fid)] = {}
            continue
        data = encode_block(cdc_block(table, text, instant))
        directory = location.partition_path(partition)
        # named like the log file the commit wrote: the slice's base instant in table
        # version 6 (where a name's instant picks the file slice, and CDC files belong to
        # slices as Hudi's file system view lists them), the commit's instant in 8+
        version = 1 + max((n.version for n in _cdc_names(store, directory)
                           if n.file_id == fid and n.instant == log_instant),
                          default=LOGFILE_BASE_VERSION - 1)
        fname = str(LogFileName(fid, log_instant, version, WRITE_TOKEN, cdc=True))
        path = store.join(directory, fname)
        if not store.create(path, data, sync=fsync):
            raise UsageError("a CDC log file of this name exists already", path=path)
        rel = f"{partition}/{fname}" if partition else fname
        written[rel] = zlib.crc32(data)
        stat_of[(partition, fid)] = {rel: len(data)}
    for partition, e, _ in targets:
        # on the group's first write stat only: Hudi's reader takes the CDC files of every
        # write stat that names them (two stats naming one file would double its changes)
        cdc = stat_of.pop((partition, str(e["fileId"])), None)
        if cdc:
            e["cdcStats"] = cdc
    return written


def _apply(after: Table, partition: str, log_files: list[str], instant: str,
           rows_before: pa.Table | None) -> pa.Table | None:
    """The group's merged rows with the blocks ``instant`` wrote to ``log_files`` merged
    onto ``rows_before`` (its merged rows before them)."""
    directory = after.slice_dir(partition)
    spec = after.merge_spec()
    readers: list[LogFileReader] = []
    blocks: list[LogBlock] = []
    try:
        for name in log_files:
            r = LogFileReader(after.storage.source(after.storage.join(directory, name)))
            readers.append(r)
            blocks.extend(b for b in r.blocks() if not b.is_corrupt and b.instant == instant)
        applied = effective_blocks(blocks, after.timeline, spec, verify=True)
        if not applied:
            return rows_before
        out = merge_slice(rows_before, applied, spec)
    finally:
        for r in readers:
            r.close()
    return out if out.num_columns else None


def _cdc_names(store: WriteStore, directory: str) -> list[LogFileName]:
    out = []
    for n in store.listdir(directory):
        if LogFileName.matches(n):
            ln = LogFileName.parse(n)
            if ln.cdc:
                out.append(ln)
    return out


def cdc_files_of(store: WriteStore, directory: str, instant: str) -> list[str]:
    """Names of the CDC log files in ``directory`` that ``instant`` wrote: those named after
    it, and (table version 6, named after their slice) those whose first block's
    INSTANT_TIME is ``instant``. What a rollback of ``instant`` deletes."""
    from morlog.logformat.errors import MorlogError
    from morlog.readers.logfile import LogFileReader

    out = []
    for ln in _cdc_names(store, directory):
        name = str(ln)
        if ln.instant == instant:
            out.append(name)
            continue
        if ln.instant > instant:
            continue  # a slice that began after the instant holds none of its files
        try:
            with LogFileReader(store.storage.source(store.join(directory, name))) as r:
                first = next(r.blocks(), None)
                if first is not None and first.instant == instant:
                    out.append(name)
        except (MorlogError, OSError):
            continue  # not readable: not provably the instant's; repair reports it
    return out


__all__ = ["cdc_files_of", "write_cdc_files", "writes_cdc"]
