"""Where writers put bytes: the local file system, or an object store through ``pyarrow.fs``.

Every file a writer creates is published whole and never overwrites another (spec §7.2):

- :class:`LocalStore`: a temporary file, synced, then hard-linked into place (``link`` fails
  when the name exists). Appends hold an ``flock`` and are truncated back on failure. The
  table's writer lock is an ``flock`` on ``.hoodie/morlog.lock``, released by the kernel when
  the process dies.
- :class:`S3Store`: objects are published by one PUT with ``If-None-Match: *`` (S3's conditional
  write), so two writers can never both create one name and no reader sees half an object.
  Object stores cannot append, so log writes roll over (a new log version per write). The
  writer lock is a lock object created the same way, holding an owner and a lease; a lock
  whose lease ran out (its writer died) is taken over with ``If-Match`` on its ETag.
  Data goes through ``pyarrow.fs`` for reads; conditional PUTs need ``boto3`` (the ``s3``
  extra), as ``pyarrow.fs`` has no conditional write.

Other ``pyarrow.fs`` filesystems have no atomic exclusive create: :func:`store_at` refuses
them unless the caller promises a single writer (``single_writer=True``).

:func:`store_at` makes the store for a ``morlog.readers.storage.TableLocation`` (resolved
once per operation, never re-parsed here; an S3 store's boto3 client is built from what the
location recorded); :func:`store_for` resolves a path or URI first.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from morlog.logformat.errors import ConcurrentWriterError, MorlogError, UsageError, WriteError
from morlog.readers.storage import ArrowStorage, LocalStorage, Storage, TableLocation


@contextmanager
def write_errors(what: str, path: str) -> Iterator[None]:
    """Re-raise an ``OSError`` of the storage (disk full, I/O error, permission) inside the
    block as a :class:`WriteError` naming ``path`` and ``what`` failed; the library's own
    errors (a :class:`StorageError` is an ``OSError`` too) pass as they are."""
    try:
        yield
    except MorlogError:
        raise
    except OSError as exc:
        raise WriteError(f"{what} failed: {_oserror(exc)}", path=path) from exc


def _oserror(exc: OSError) -> str:
    return f"{type(exc).__name__}: {exc.strerror or exc}"


class WriterLock:
    """A held writer lock; :meth:`check` raises when it was lost, :meth:`release` frees it."""

    def check(self) -> None:
        """Raise :class:`ConcurrentWriterError` if another writer took the lock over."""

    def release(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> WriterLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class WriteStore:
    """Write access to where a table lives (paths in the storage's own form)."""

    #: appends to existing files are possible (else every log write rolls over)
    can_append = False
    #: the read side of the same place
    storage: Storage

    def join(self, *parts: str) -> str:
        return self.storage.join(*parts)

    def listdir(self, directory: str) -> list[str]:
        return self.storage.listdir(directory)

    def exists(self, path: str) -> bool:
        return self.storage.isfile(path)

    def size(self, path: str) -> int:
        return self.storage.size(path)

    def read(self, path: str) -> bytes:
        return self.storage.read(path)

    def basename(self, path: str) -> str:
        return path.rstrip("/").rsplit("/", 1)[-1]

    def relpath(self, path: str, start: str) -> str:
        start = start.rstrip("/") + "/"
        if not path.startswith(start):
            raise UsageError(f"path is not under the table {start!r}", path=path)
        return path[len(start):]

    def mtime(self, path: str) -> float | None:
        """When ``path`` was last modified (seconds since the epoch), None if absent."""
        raise NotImplementedError

    def makedirs(self, directory: str) -> None:
        """Make ``directory`` exist (a no-op on object stores)."""

    def create(self, path: str, data: bytes, *, sync: bool = True) -> bool:
        """Publish ``data`` whole as a new file at ``path``; False if the name is taken."""
        raise NotImplementedError

    def delete(self, path: str) -> bool:
        """Delete ``path``; False if it did not exist."""
        raise NotImplementedError

    #: :meth:`replace` swaps a file atomically (readers see the old bytes or the new)
    can_replace = False

    def replace(self, path: str, data: bytes, *, sync: bool = True) -> None:
        """Replace the existing file ``path`` with ``data`` atomically (only where
        :attr:`can_replace`; a mutable table file such as ``hoodie.properties``, rewritten
        by a writer holding the lock)."""
        raise UsageError("this storage cannot replace a file atomically", path=path)

    def remove_tree(self, directory: str) -> None:
        """Delete ``directory`` and everything under it (no-op if absent)."""
        for name in self.listdir(directory):
            self.delete(self.join(directory, name))
        for sub in self.storage.subdirs(directory):
            self.remove_tree(self.join(directory, sub))

    def append(self, path: str, produce: Callable[[int], bytes], *, sync: bool = True) -> int:
        """Append ``produce(current size)`` to ``path`` under an exclusive lock, all or
        nothing; returns the offset it starts at."""
        raise UsageError("this storage cannot append; write logs in rollover mode", path=path)

    def truncate(self, path: str, size: int) -> None:
        raise UsageError("this storage cannot truncate", path=path)

    #: how long :meth:`lock` waits for the writer that holds the lock to release it
    #: (``hoodie.write.lock.wait_time_ms``; 0: not at all). Writers hold it for a commit's
    #: planning and publishing only, so waiting is what a second writer wants; a store made
    #: without a config does not wait (``repair`` asks whether a writer is live)
    lock_wait_seconds = 0.0

    def lock(self, table_path: str) -> WriterLock:
        """Take the table's writer lock, waiting up to :attr:`lock_wait_seconds` for the
        writer holding it, or raise :class:`ConcurrentWriterError`."""
        deadline = time.monotonic() + self.lock_wait_seconds
        pause = 0.01
        while True:
            try:
                return self.try_lock(table_path)
            except ConcurrentWriterError as exc:
                left = deadline - time.monotonic()
                if left <= 0:
                    if self.lock_wait_seconds <= 0:
                        raise
                    raise ConcurrentWriterError(
                        f"{exc.message} (waited {self.lock_wait_seconds:g} s for it: "
                        "hoodie.write.lock.wait_time_ms)", path=exc.path) from None
                time.sleep(min(pause, left))
                pause = min(2 * pause, 1.0)

    def try_lock(self, table_path: str) -> WriterLock:
        """Take the table's writer lock now or raise :class:`ConcurrentWriterError`."""
        raise NotImplementedError


# --- local ------------------------------------------------------------------------------


class _FlockLock(WriterLock):
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LocalStore(WriteStore):
    can_append = True

    def __init__(self) -> None:
        self.storage = LocalStorage()

    def basename(self, path: str) -> str:
        return os.path.basename(path)

    def relpath(self, path: str, start: str) -> str:
        return os.path.relpath(path, start)

    def mtime(self, path: str) -> float | None:
        try:
            return os.stat(path).st_mtime
        except FileNotFoundError:
            return None

    def makedirs(self, directory: str) -> None:
        with write_errors("creating the directory", directory):
            os.makedirs(directory, exist_ok=True)

    def create(self, path: str, data: bytes, *, sync: bool = True) -> bool:
        with write_errors("creating the file", path):
            return self._create(path, data, sync=sync)

    def _create(self, path: str, data: bytes, *, sync: bool) -> bool:
        if os.path.exists(path):
            return False
        directory = os.path.dirname(path) or "."
        os.makedirs(directory, exist_ok=True)

        def publish(tmp: str) -> bool:
            try:
                os.link(tmp, path)  # fails if the name exists: never overwrite
            except FileExistsError:
                return False
            return True

        return self._staged(directory, data, sync, publish)

    @staticmethod
    def _staged(directory: str, data: bytes, sync: bool, publish: Callable[[str], bool]
                ) -> bool:
        """``data`` written (and synced) to a temporary file of ``directory``, then
        ``publish(tmp)`` puts it under its name (False: it did not); the temporary name
        never stays."""
        tmp = os.path.join(directory, f"{TEMP_PREFIX}{uuid.uuid4().hex}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            try:
                _write_all(fd, data)
                if sync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            done = publish(tmp)
            if done and sync:
                _fsync_dir(directory)
            return done
        finally:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass

    can_replace = True

    def replace(self, path: str, data: bytes, *, sync: bool = True) -> None:
        with write_errors("replacing the file", path):
            self._replace(path, data, sync=sync)

    def _replace(self, path: str, data: bytes, *, sync: bool) -> None:
        # a synced temporary file renamed over the name: rename(2) is atomic
        def publish(tmp: str) -> bool:
            os.replace(tmp, path)
            return True

        self._staged(os.path.dirname(path) or ".", data, sync, publish)

    def remove_tree(self, directory: str) -> None:
        shutil.rmtree(directory, ignore_errors=True)

    def delete(self, path: str) -> bool:
        try:
            os.unlink(path)
            return True
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise WriteError(f"deleting the file failed: {_oserror(exc)}", path=path) from exc

    def append(self, path: str, produce: Callable[[int], bytes], *, sync: bool = True) -> int:
        with write_errors("appending to the file", path):
            return self._append(path, produce, sync=sync)

    def _append(self, path: str, produce: Callable[[int], bytes], *, sync: bool) -> int:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    raise WriteError("another writer is appending to this log file",
                                     path=path) from None
                raise
            start = os.fstat(fd).st_size
            data = produce(start)
            try:
                _write_all(fd, data)
                if sync:
                    os.fsync(fd)
            except BaseException as exc:
                os.ftruncate(fd, start)
                if isinstance(exc, OSError):
                    raise WriteError(f"append failed, file restored: {exc}", path=path,
                                     offset=start) from exc
                raise
            return start
        finally:
            os.close(fd)

    def truncate(self, path: str, size: int) -> None:
        with write_errors(f"truncating the file to {size} bytes", path):
            fd = os.open(path, os.O_WRONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                os.ftruncate(fd, size)
            finally:
                os.close(fd)

    def try_lock(self, table_path: str) -> WriterLock:
        path = os.path.join(table_path, ".hoodie", "morlog.lock")
        with write_errors("opening the writer lock file", path):
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise ConcurrentWriterError("another writer is committing to this table",
                                            path=table_path) from None
            raise WriteError(f"taking the writer lock failed: {_oserror(exc)}",
                             path=path) from exc
        return _FlockLock(fd)


# --- pyarrow.fs -------------------------------------------------------------------------


class ArrowStore(WriteStore):
    """Any ``pyarrow.fs`` filesystem, for a caller that guarantees a single writer: creation
    checks that the name is free, then writes (not atomic against another writer)."""

    def __init__(self, filesystem: Any) -> None:
        self.fs = filesystem
        self.storage = ArrowStorage(filesystem)

    def create(self, path: str, data: bytes, *, sync: bool = True) -> bool:
        if self.exists(path):
            return False
        try:
            with self.fs.open_output_stream(path) as out:
                out.write(data)
        except OSError as exc:
            try:  # no half-written object left behind
                self.fs.delete_file(path)
            except OSError:
                pass
            raise WriteError(f"writing the file failed: {_oserror(exc)}", path=path) from exc
        return True

    def mtime(self, path: str) -> float | None:
        import pyarrow.fs as pafs

        info = self.fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound or info.mtime is None:
            return None
        return float(info.mtime.timestamp())

    def delete(self, path: str) -> bool:
        if not self.exists(path):
            return False
        with write_errors("deleting the file", path):
            self.fs.delete_file(path)
        return True

    def remove_tree(self, directory: str) -> None:
        """The folder and its name: on an object store pyarrow keeps an empty ``folder/``
        marker object when the last file under a prefix is deleted, so deleting the files
        one by one would leave the folder listed."""
        import pyarrow.fs as pafs

        if self.fs.get_file_info(directory).type == pafs.FileType.NotFound:
            return
        with write_errors("deleting the folder", directory):
            self.fs.delete_dir(directory)

    def try_lock(self, table_path: str) -> WriterLock:
        return _NoLock()


class _NoLock(WriterLock):
    def release(self) -> None:
        pass


#: how long a lock object holds without its writer (a commit must finish within it)
DEFAULT_LEASE_SECONDS = 3600.0


def precondition_failed(exc: Exception) -> bool:
    """Whether an S3 request failed on its condition (``If-None-Match``/``If-Match``)."""
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
    return code in ("PreconditionFailed", "ConditionalRequestConflict", "412")


class S3Store(ArrowStore):
    """S3 (or an S3-compatible server): conditional PUTs publish files and hold the lock."""

    def __init__(self, filesystem: Any, client: Any,
                 lease_seconds: float = DEFAULT_LEASE_SECONDS) -> None:
        super().__init__(filesystem)
        self.client = client
        self.lease_seconds = lease_seconds

    @staticmethod
    def bucket_key(path: str) -> tuple[str, str]:
        """(bucket, key) of a store path ``bucket/key``."""
        bucket, _, key = path.partition("/")
        return bucket, key

    def create(self, path: str, data: bytes, *, sync: bool = True) -> bool:
        bucket, key = self.bucket_key(path)
        try:
            self.client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
        except Exception as exc:
            if precondition_failed(exc):
                return False
            raise WriteError(f"S3 PUT failed: {exc}", path=path) from exc
        return True

    can_replace = True

    def replace(self, path: str, data: bytes, *, sync: bool = True) -> None:
        # one PUT is atomic per object; If-Match on the ETag read just before makes it a
        # compare-and-swap (a writer outside morlog's lock that changed the file meanwhile
        # is not overwritten)
        bucket, key = self.bucket_key(path)
        try:
            etag = self.client.head_object(Bucket=bucket, Key=key)["ETag"]
            self.client.put_object(Bucket=bucket, Key=key, Body=data, IfMatch=etag)
        except Exception as exc:
            if precondition_failed(exc):
                raise ConcurrentWriterError("another writer changed the file meanwhile",
                                            path=path) from None
            raise WriteError(f"S3 PUT replacing the file failed: {exc}", path=path) from exc

    def try_lock(self, table_path: str) -> WriterLock:
        bucket, key = self.bucket_key(self.join(table_path, ".hoodie", "morlog.lock"))
        owner = uuid.uuid4().hex

        def body() -> bytes:
            return json.dumps({"owner": owner, "host": socket.gethostname(),
                               "pid": os.getpid(),
                               "expires": time.time() + self.lease_seconds}).encode()

        try:
            r = self.client.put_object(Bucket=bucket, Key=key, Body=body(), IfNoneMatch="*")
            return _ObjectLock(self, bucket, key, r["ETag"], owner)
        except Exception as exc:
            if not precondition_failed(exc):
                raise WriteError(f"S3 PUT of the lock failed: {exc}",
                                 path=f"{bucket}/{key}") from exc
        # held: take it over only if its lease ran out (its writer died)
        held, info, expires = self._read_lock(bucket, key)
        if held is not None and expires < time.time():
            try:
                r = self.client.put_object(Bucket=bucket, Key=key, Body=body(),
                                           IfMatch=held["ETag"])
                return _ObjectLock(self, bucket, key, r["ETag"], owner)
            except Exception as exc:
                if not precondition_failed(exc):
                    raise WriteError(f"S3 PUT taking over the lock failed: {exc}",
                                     path=f"{bucket}/{key}") from exc
        who = (f" by {info.get('host')} pid {info.get('pid')}"
               if info.get("host") is not None else "")
        raise ConcurrentWriterError(
            f"another writer is committing to this table (lock object held{who})",
            path=table_path)

    def _read_lock(self, bucket: str, key: str
                   ) -> tuple[dict[str, Any] | None, dict[str, Any], float]:
        """(the lock object's GET response or None if gone or unreadable, its JSON object,
        when its lease ends). A lock whose body is not a JSON object with a numeric
        ``expires`` (empty, cut short, garbage, another writer's format) expires at its
        LastModified plus this store's lease."""
        try:
            held = self.client.get_object(Bucket=bucket, Key=key)
            raw = held["Body"].read()
        except Exception:
            return None, {}, float("inf")
        try:
            info = json.loads(raw)
        except (ValueError, RecursionError):
            info = None
        if not isinstance(info, dict):
            info = {}
        expires = info.get("expires")
        if isinstance(expires, (int, float)) and not isinstance(expires, bool):
            return held, info, float(expires)
        modified = held.get("LastModified")
        if modified is None:
            return held, info, float("inf")
        return held, info, modified.timestamp() + self.lease_seconds


class _ObjectLock(WriterLock):
    def __init__(self, store: S3Store, bucket: str, key: str, etag: str, owner: str) -> None:
        self.store, self.bucket, self.key, self.etag, self.owner = store, bucket, key, etag, owner
        self.held = True

    def check(self) -> None:
        try:
            head = self.store.client.head_object(Bucket=self.bucket, Key=self.key)
        except Exception:
            head = {}
        if head.get("ETag") != self.etag:
            raise ConcurrentWriterError("the writer lock was taken over (lease ran out)",
                                        path=f"{self.bucket}/{self.key}")

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        try:
            self.store.client.delete_object(Bucket=self.bucket, Key=self.key,
                                            IfMatch=self.etag)
        except Exception as exc:
            if not precondition_failed(exc):
                raise


def _s3_client(location: TableLocation) -> Any:
    """A boto3 client for the endpoint, region and credentials the location's URI names."""
    try:
        import boto3  # type: ignore[import-untyped]
    except ImportError:
        raise UsageError("writing to S3 needs boto3 for conditional writes "
                         "(pip install 'morlog[s3]')", path=location.uri) from None
    return boto3.client("s3", **dict(location.s3_client_args))


def store_for(path: str | TableLocation, filesystem: Any = None, *,
              single_writer: bool = False,
              lease_seconds: float = DEFAULT_LEASE_SECONDS) -> tuple[WriteStore, str]:
    """The write store for a table path, URI or location, and the path in the store's form
    (a string is resolved here, once: pass a :class:`TableLocation` where one exists)."""
    loc = TableLocation.of(path, filesystem)
    return store_at(loc, single_writer=single_writer, lease_seconds=lease_seconds), loc.path


def store_at(location: TableLocation, *, single_writer: bool = False,
             lease_seconds: float = DEFAULT_LEASE_SECONDS,
             lock_wait_seconds: float = 0.0) -> WriteStore:
    """The write store for a resolved table location; its :meth:`~WriteStore.lock` waits
    up to ``lock_wait_seconds`` for another writer's lock."""
    store: WriteStore
    if location.kind == "local" or location.fs_type == "local":
        store = LocalStore()
    elif location.fs_type == "s3" and not location.explicit_fs:
        store = S3Store(location.filesystem, _s3_client(location), lease_seconds)
    elif single_writer:
        store = ArrowStore(location.filesystem)
    else:
        raise UsageError("this file system has no atomic exclusive create, so concurrent "
                         "writers cannot be kept apart; pass an s3:// URI, or "
                         "single_writer=True if this is the only writer", path=location.uri)
    store.lock_wait_seconds = max(0.0, float(lock_wait_seconds))
    return store


__all__ = ["ArrowStore", "ConcurrentWriterError", "LocalStore", "S3Store", "WriteStore",
           "WriterLock", "precondition_failed", "store_at", "store_for"]


#: the name prefix of a file a local store writes before publishing it under its name
TEMP_PREFIX = ".morlog-tmp-"
#: a temp file younger than this may belong to a writer that is publishing it right now
DEFAULT_MIN_TEMP_AGE_SECONDS = 60.0


def sweep_orphan_temps(store: WriteStore, directories: list[str], *,
                       min_age_seconds: float = DEFAULT_MIN_TEMP_AGE_SECONDS,
                       now: float | None = None) -> list[str]:
    """Delete the ``.morlog-tmp-*`` files older than ``min_age_seconds`` directly in each
    of ``directories`` (local stores only: other stores publish without temporary files);
    the paths deleted. The caller holds the table's writer lock."""
    if not isinstance(store, LocalStore):
        return []
    now = time.time() if now is None else now
    out = []
    for d in directories:
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            if not e.name.startswith(TEMP_PREFIX):
                continue
            try:
                st = e.stat(follow_symlinks=False)
                if now - st.st_mtime >= min_age_seconds and store.delete(e.path):
                    out.append(e.path)
            except OSError:
                continue
    return out
