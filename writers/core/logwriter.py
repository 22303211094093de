"""Writing log files: whole blocks only, exclusive creation, no partial block left behind.

Two modes (spec §7.2):

- ``append``: like Hudi 0.x on file systems with append. The blocks of a write go to the end
  of the newest log file of the (file id, instant) pair; a new file (version 1) is created
  exclusively when there is none. If the newest file's tail is not a valid block (a torn
  write of a crashed writer), the writer does not append after it but rolls over to a new
  version, so that no reader ever has to recover twice.
- ``rollover``: like Hudi 1.x and object stores. Every write creates a new log version. The
  file is written under a temporary name, synced, and published with a hard link that fails if
  the name exists, so another writer's file is never overwritten and no reader sees a
  half-written file.

A write that fails is undone: in append mode the file is truncated back to its previous size,
in rollover mode the temporary file is removed. A process killed mid-append leaves a torn
block that every reader reports as CORRUPT (its reverse pointer is written last).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from morlog.logformat.errors import LogFileExistsError, MorlogError, UsageError, WriteError
from morlog.logformat.framing import BlockFrame, encode_block
from morlog.logformat.naming import LOGFILE_BASE_VERSION, UNKNOWN_WRITE_TOKEN, LogFileName
from morlog.readers.logfile import LogFileReader
from morlog.writers.core.store import LocalStore, WriteStore, write_errors

Mode = Literal["append", "rollover"]
LOCAL = LocalStore()
#: builds the frames of one write once their file and starting offset are known
Builder = Callable[[LogFileName, int], Sequence[BlockFrame]]


@dataclass(frozen=True)
class WrittenBlock:
    offset: int
    size: int


@dataclass(frozen=True)
class WriteResult:
    """Where a write landed: the file and each block's offset and size."""

    path: str
    name: LogFileName
    blocks: tuple[WrittenBlock, ...]
    created: bool

    @property
    def size(self) -> int:
        return sum(b.size for b in self.blocks)


def list_log_files(directory: str, file_id: str, instant: str,
                   store: WriteStore | None = None) -> list[LogFileName]:
    """Log files of (file id, instant) in ``directory``, in Hudi's order."""
    out = []
    for n in (store or LOCAL).listdir(directory):
        if not LogFileName.matches(n):
            continue
        ln = LogFileName.parse(n)
        if ln.file_id == file_id and ln.instant == instant and ln.ext == "log" and not ln.cdc:
            out.append(ln)
    return sorted(out, key=LogFileName.sort_key)


def _tail_is_valid(store: WriteStore, path: str) -> bool:
    """True when the file ends with a valid block (or is empty)."""
    try:
        with LogFileReader(store.storage.source(path)) as reader:
            if reader.source.size == 0:
                return True
            last = next(reader.reversed_blocks(), None)
            return last is not None and not last.is_corrupt and (
                last.offset + last.size == reader.source.size)
    except MorlogError:
        return False


class LogFileWriter:
    """Appends blocks to the log of one file group (``file_id``) for one log instant.

    ``instant`` is what goes into the file name: the base instant of the file slice for table
    version 6, the delta commit instant for table version 8+. ``store``: where the files go
    (local by default); a store that cannot append (object stores) needs ``mode="rollover"``.

    >>> from morlog.logformat import rollback_block
    >>> w = LogFileWriter("logs/part", "f1-0", "20250101000000000")
    >>> res = w.append(rollback_block("20250101000300000", target_instant="20250101000200000"))
    >>> [b.block_type.name for b in LogFileReader(res.path).blocks()]
    ['COMMAND']
    """

    def __init__(self, directory: str | os.PathLike[str], file_id: str, instant: str, *,
                 write_token: str = UNKNOWN_WRITE_TOKEN, mode: Mode = "append",
                 fsync: bool = True, store: WriteStore | None = None) -> None:
        if mode not in ("append", "rollover"):
            raise UsageError("mode must be 'append' or 'rollover'", actual=mode)
        self.store = store or LOCAL
        self.directory = os.fspath(directory)
        if mode == "append" and not self.store.can_append:
            raise UsageError("this storage cannot append to files: use mode='rollover'",
                             path=self.directory)
        # validates file id, instant and token
        self._proto = LogFileName(file_id, instant, LOGFILE_BASE_VERSION, write_token)
        self.mode: Mode = mode
        self.fsync = fsync

    @property
    def file_id(self) -> str:
        return self._proto.file_id

    @property
    def instant(self) -> str:
        return self._proto.instant

    def existing(self) -> list[LogFileName]:
        return list_log_files(self.directory, self.file_id, self.instant, self.store)

    def append(self, frames: Sequence[BlockFrame] | BlockFrame, *,
               sync: bool | None = None) -> WriteResult:
        """Write ``frames`` as consecutive blocks in one write; all or nothing."""
        if isinstance(frames, BlockFrame):
            frames = [frames]
        if not frames:
            raise UsageError("nothing to write")
        fixed = list(frames)
        return self.append_built(lambda _name, _offset: fixed, sync=sync)

    def append_built(self, build: Builder, *, sync: bool | None = None) -> WriteResult:
        """Like :meth:`append`, with frames built by ``build(file name, offset)`` once the
        writer knows where they land (indexed blocks record their own position)."""
        do_sync = self.fsync if sync is None else sync
        with write_errors("creating the log directory", self.directory):
            self.store.makedirs(self.directory)
        if self.mode == "append":
            latest = self.existing()
            if latest:
                target = latest[-1]
                path = self.store.join(self.directory, str(target))
                # another write token's file may be a task's of a distributed write still
                # pending, whose rollback deletes the file (spec/table.md §7.6): never
                # append there, roll over (as Hudi's writers roll over to their own token)
                if target.write_token == self._proto.write_token and _tail_is_valid(
                        self.store, path):
                    return self._append_to(path, target, build, do_sync)
                return self._create_new(build, do_sync, target.version + 1)
        return self._create_new(build, do_sync, None)

    def _append_to(self, path: str, name: LogFileName, build: Builder,
                   do_sync: bool) -> WriteResult:
        encoded: list[bytes] = []
        began: list[int] = []

        def produce(start: int) -> bytes:
            began.append(start)
            encoded.extend(_encode(build(name, start)))
            return b"".join(encoded)

        try:
            start = self.store.append(path, produce, sync=do_sync)
        except MorlogError:
            raise
        except OSError as exc:
            # a store's append is all or nothing; one that failed untyped may have left
            # some of the bytes: cut the file back to where the write began
            restored = ""
            if began:
                try:
                    if self.store.size(path) > began[0]:
                        self.store.truncate(path, began[0])
                    restored = ", file restored"
                except (MorlogError, OSError) as undo:
                    restored = f", and restoring the file failed too ({undo})"
            raise WriteError(f"appending to the log file failed ({type(exc).__name__}: "
                             f"{exc.strerror or exc}){restored}", path=path,
                             offset=began[0] if began else None) from exc
        return WriteResult(path, name, _layout(start, encoded), False)

    def _create_new(self, build: Builder, do_sync: bool, version: int | None) -> WriteResult:
        v = version if version is not None else _next_version(self.existing())
        for _ in range(1000):
            name = self._proto.with_version(v)
            encoded = _encode(build(name, 0))
            path = self.store.join(self.directory, str(name))
            with write_errors("creating the log file", path):
                created = self.store.create(path, b"".join(encoded), sync=do_sync)
            if created:
                return WriteResult(path, name, _layout(0, encoded), True)
            if self.mode == "append" and version is None:
                raise LogFileExistsError("log file was created by another writer meanwhile",
                                         path=path)
            v += 1
        raise WriteError("no free log version found", path=self.directory)


def _encode(frames: Sequence[BlockFrame]) -> list[bytes]:
    if not frames:
        raise UsageError("nothing to write")
    return [encode_block(f) for f in frames]


def _next_version(existing: list[LogFileName]) -> int:
    return max((n.version for n in existing), default=0) + 1


def _layout(start: int, encoded: list[bytes]) -> tuple[WrittenBlock, ...]:
    out = []
    pos = start
    for e in encoded:
        out.append(WrittenBlock(pos, len(e)))
        pos += len(e)
    return tuple(out)


def discard_uncommitted(directory: str, file_id: str, base_instant: str, instant: str,
                        store: WriteStore | None = None) -> int:
    """Remove what an earlier attempt of the same (uncommitted) ``instant`` wrote to a file
    group's logs: trailing blocks of ``instant`` are truncated away (append mode) and log
    files holding only its blocks are deleted (rollover mode). Returns the bytes removed.

    Only safe while ``instant`` is not completed and the caller owns the file group for that
    instant (one task per file group): it makes task retries idempotent.
    """
    st = store or LOCAL
    removed = 0
    for name in list_log_files(directory, file_id, base_instant, st):
        path = st.join(directory, str(name))
        with LogFileReader(st.storage.source(path)) as reader:
            size = reader.source.size
            blocks = list(reader.blocks())
        ours = [b for b in blocks if not b.is_corrupt and b.instant == instant]
        if not ours:
            continue
        if len(ours) == len(blocks):
            removed += size
            with write_errors("deleting the log file", path):
                st.delete(path)
            continue
        first = min(b.offset for b in ours)
        if all(b.offset >= first for b in blocks if b.instant == instant) and all(
                b.instant == instant or b.is_corrupt for b in blocks if b.offset >= first):
            removed += size - first
            with write_errors(f"truncating the log file to {first} bytes", path):
                st.truncate(path, first)
    return removed
