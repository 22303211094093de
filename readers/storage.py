"""Where tables live and ranged-read sources: the only way readers touch bytes.

:class:`TableLocation` is a table's place, resolved once per operation from the user's path or
URI (:meth:`TableLocation.of`) and handed down to tables, taggers, write stores, log writers
and Spark tasks (it pickles; its filesystem is rebuilt lazily, never pickled, and its ``repr``
never shows a URI's credentials). :class:`Storage` is directory-level access to that place.

A source knows its size and answers ``read(offset, length)``; every request is checked against
the size before anything is allocated, and every read is counted (``stats``), so that tests and
benchmarks can prove how much of a file a lookup touched.

- :class:`LocalFileSource`: a local file (``os.pread``, no shared file position).
- :class:`ArrowFileSource`: any ``pyarrow.fs`` filesystem (S3, GCS, HDFS, local) by URI.
- :class:`BytesSource`: bytes in memory (tests, vectors).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import pyarrow as pa

from morlog.logformat.errors import (
    ContentError,
    LengthError,
    MissingFileError,
    MorlogError,
    StorageError,
    TruncatedError,
    UsageError,
    redact,
)
from morlog.logformat.partition_path import check_relative_partition_path


@dataclass
class ReadStats:
    reads: int = 0
    bytes_read: int = 0

    def reset(self) -> None:
        self.reads = 0
        self.bytes_read = 0


@runtime_checkable
class RangedSource(Protocol):
    name: str

    @property
    def stats(self) -> ReadStats: ...

    @property
    def size(self) -> int: ...

    def read(self, offset: int, length: int) -> bytes: ...

    def close(self) -> None: ...


#: object stores: nearby ranges are fetched in one request when the gap between them is at
#: most this (a request costs about as much as reading a megabyte more)
REMOTE_COALESCE_GAP = 1 << 20
#: and a coalesced request is at most this long
COALESCE_MAX = 16 << 20


class SourceBase:
    """What every ranged source shares: its name, size, read statistics and bounds checks."""
    name: str
    stats: ReadStats
    _size: int
    #: gap up to which a reader of many small ranges should fetch them together (0: never)
    coalesce_gap = 0

    @property
    def size(self) -> int:
        return self._size

    def _check(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0 or offset + length > self._size:
            raise LengthError("read past the end of the file", path=self.name, offset=offset,
                              expected=f"range within 0..{self._size}",
                              actual=f"{offset}+{length}")

    def _count(self, data: bytes, offset: int, length: int) -> bytes:
        if len(data) != length:
            raise TruncatedError("short read (file changed while reading?)", path=self.name,
                                 offset=offset, expected=length, actual=len(data))
        self.stats.reads += 1
        self.stats.bytes_read += length
        return data

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()  # type: ignore[attr-defined]


class LocalFileSource(SourceBase):
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.name = os.fspath(path)
        self.stats = ReadStats()
        self._fd = os.open(self.name, os.O_RDONLY)
        self._size = os.fstat(self._fd).st_size

    def read(self, offset: int, length: int) -> bytes:
        if self._fd < 0:
            raise UsageError("read from a closed log file", path=self.name, offset=offset)
        self._check(offset, length)
        return self._count(os.pread(self._fd, length, offset), offset, length)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class BytesSource(SourceBase):
    def __init__(self, data: bytes, name: str = "<bytes>") -> None:
        self.name = name
        self.stats = ReadStats()
        self._data = bytes(data)
        self._size = len(self._data)

    def read(self, offset: int, length: int) -> bytes:
        self._check(offset, length)
        return self._count(self._data[offset : offset + length], offset, length)

    def close(self) -> None:
        pass


def storage_error(exc: BaseException, path: str, what: str) -> StorageError:
    """``exc`` (pyarrow's ``ArrowInvalid``/``OSError``, a boto3 error, ...) met while
    ``what`` at ``path``, as the library's typed error. The URI and the original message
    are redacted; the original is not chained (``from None`` by the caller): its text may
    hold the raw credentials of the URI, which ``redact`` can no longer find once pyarrow
    quoted them."""
    detail = redact(str(exc)) if "://" not in str(exc) and "@" not in str(exc) else ""
    reason = f"{what} failed ({type(exc).__name__}{': ' + detail if detail else ''})"
    if isinstance(exc, FileNotFoundError):
        return MissingFileError(f"no such file ({what})", path=path)
    return StorageError(reason, path=path)


@contextmanager
def decoder_errors(path: str | None, what: str) -> Iterator[None]:
    """The one boundary where a third-party decoder's errors (pyarrow's Parquet reader,
    fastavro) become the library's: a :class:`ContentError` naming ``path`` (a vanished
    file: :class:`MissingFileError`), the original kept as ``__cause__``. The library's own
    errors pass through unchanged."""
    try:
        yield
    except MorlogError:
        raise
    except FileNotFoundError as exc:
        raise MissingFileError(f"no such file ({what})", path=path) from exc
    except Exception as exc:  # noqa: BLE001 - third-party decoders only (see above)
        raise ContentError(f"{what}: {type(exc).__name__}: {exc}", path=path) from exc


def _from_uri(uri: str) -> tuple[Any, str]:
    """``pyarrow.fs.FileSystem.from_uri``, its errors typed and the URI redacted."""
    import pyarrow.fs as pafs

    try:
        fs, inner = pafs.FileSystem.from_uri(uri)
    except (pa.ArrowException, OSError, ValueError, TypeError) as exc:
        raise storage_error(exc, uri, "resolving the URI") from None
    return fs, inner


class ArrowFileSource(SourceBase):
    """A file on any pyarrow filesystem; ``read`` maps to one ranged request (``read_at``)."""

    def __init__(self, path: str, filesystem: Any = None) -> None:

        shown = path
        if filesystem is None:
            filesystem, path = _from_uri(path)
        self.name = path
        self.stats = ReadStats()
        if getattr(filesystem, "type_name", "") != "local":
            self.coalesce_gap = REMOTE_COALESCE_GAP
        try:
            self._file = filesystem.open_input_file(path)
            self._size = int(self._file.size())
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise storage_error(exc, shown, "opening the file") from None

    def read(self, offset: int, length: int) -> bytes:
        self._check(offset, length)
        try:
            data = self._file.read_at(length, offset)
        except (pa.ArrowException, OSError) as exc:
            raise storage_error(exc, self.name, f"reading {length} bytes at {offset}"
                                ) from None
        return self._count(data if isinstance(data, bytes) else data.to_pybytes(), offset,
                           length)

    def close(self) -> None:
        self._file.close()


def open_source(path: str | os.PathLike[str], filesystem: Any = None) -> RangedSource:
    """A source for a local path, or for a URI (``s3://...``) through pyarrow.fs."""
    p = os.fspath(path)
    if filesystem is not None or "://" in p:
        return ArrowFileSource(p, filesystem)
    if not os.path.isfile(p):
        raise UsageError("no such log file", path=p)
    return LocalFileSource(p)


class Storage:
    """Directory-level access to where a table lives: the local file system or any
    ``pyarrow.fs`` filesystem (S3, GCS, HDFS...). Paths are plain strings in the storage's
    own form (local paths, or ``bucket/key`` for object stores)."""

    def join(self, *parts: str) -> str:
        raise NotImplementedError

    def listdir(self, path: str) -> list[str]:
        """Names in a directory ([] when it does not exist)."""
        raise NotImplementedError

    def subdirs(self, path: str) -> list[str]:
        raise NotImplementedError

    def sizes(self, path: str) -> dict[str, int]:
        """Size of every file in a directory, from one listing ({} when it does not exist)."""
        raise NotImplementedError

    def versions(self, path: str) -> dict[str, tuple[int, int]]:
        """Size and modification time (ns; 0 where the storage gives none) of every file in
        a directory, from one listing ({} when it does not exist): a file rewritten in
        place shows a new version."""
        raise NotImplementedError

    def isfile(self, path: str) -> bool:
        raise NotImplementedError

    def read(self, path: str) -> bytes:
        raise NotImplementedError

    def size(self, path: str) -> int:
        raise NotImplementedError

    def source(self, path: str) -> RangedSource:
        raise NotImplementedError

    def open_input(self, path: str) -> Any:
        """Something ``pyarrow.parquet.ParquetFile`` opens."""
        raise NotImplementedError


def _file_stats(path: str) -> list[tuple[str, os.stat_result]]:
    """(name, stat) of every file in a directory ([] when it does not exist). A file that
    goes while the directory is read (another writer's temporary file, published and
    removed) is left out: it must not empty the whole listing."""
    out = []
    try:
        with os.scandir(path) as it:
            for e in it:
                try:
                    if e.is_file():
                        out.append((e.name, e.stat()))
                except FileNotFoundError:
                    continue
    except (FileNotFoundError, NotADirectoryError):
        return []
    return out


class LocalStorage(Storage):
    def join(self, *parts: str) -> str:
        return os.path.join(*parts)

    def listdir(self, path: str) -> list[str]:
        try:
            return os.listdir(path)
        except (FileNotFoundError, NotADirectoryError):
            return []

    def subdirs(self, path: str) -> list[str]:
        return [n for n in self.listdir(path) if os.path.isdir(os.path.join(path, n))]

    def versions(self, path: str) -> dict[str, tuple[int, int]]:
        return {name: (st.st_size, st.st_mtime_ns) for name, st in _file_stats(path)}

    def sizes(self, path: str) -> dict[str, int]:
        return {name: st.st_size for name, st in _file_stats(path)}

    def isfile(self, path: str) -> bool:
        return os.path.isfile(path)

    def read(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def size(self, path: str) -> int:
        return os.path.getsize(path)

    def source(self, path: str) -> RangedSource:
        return LocalFileSource(path)

    def open_input(self, path: str) -> Any:
        return path


class ArrowStorage(Storage):
    def __init__(self, filesystem: Any) -> None:
        self.fs = filesystem

    def join(self, *parts: str) -> str:
        return "/".join(p.strip("/") for p in parts if p)

    def _infos(self, path: str) -> list[Any]:
        import pyarrow.fs as pafs

        try:
            return list(self.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)))
        except (FileNotFoundError, OSError):
            return []

    def listdir(self, path: str) -> list[str]:
        return [i.base_name for i in self._infos(path)]

    def subdirs(self, path: str) -> list[str]:
        import pyarrow.fs as pafs

        return [i.base_name for i in self._infos(path) if i.type == pafs.FileType.Directory]

    def versions(self, path: str) -> dict[str, tuple[int, int]]:
        import pyarrow.fs as pafs

        return {i.base_name: (int(i.size), int(i.mtime_ns or 0)) for i in self._infos(path)
                if i.type == pafs.FileType.File}

    def sizes(self, path: str) -> dict[str, int]:
        import pyarrow.fs as pafs

        return {i.base_name: int(i.size) for i in self._infos(path)
                if i.type == pafs.FileType.File}

    def isfile(self, path: str) -> bool:
        import pyarrow.fs as pafs

        return bool(self.fs.get_file_info(path).type == pafs.FileType.File)

    def read(self, path: str) -> bytes:
        try:
            with self.fs.open_input_file(path) as f:
                return bytes(f.read())
        except (pa.ArrowException, OSError) as exc:
            raise storage_error(exc, path, "reading the file") from None

    def size(self, path: str) -> int:
        try:
            return int(self.fs.get_file_info(path).size)
        except (pa.ArrowException, OSError) as exc:
            raise storage_error(exc, path, "reading the file's size") from None

    def source(self, path: str) -> RangedSource:
        return ArrowFileSource(path, self.fs)

    def open_input(self, path: str) -> Any:
        return self.fs.open_input_file(path)


def _rebuild(fs: Any) -> Any:
    return fs


@dataclass(frozen=True, eq=True)
class TableLocation:
    """A table's place, resolved once from a local path or a URI (``s3://bucket/t?...``).

    Picklable (Spark ships it to executors): it holds the user's URI, the path in the
    storage's own form and what rebuilds the ``pyarrow.fs`` filesystem; the filesystem and
    the :class:`Storage` are built on first use in each process and never pickled. Its
    ``repr`` redacts a URI's credentials.
    """

    #: the path or URI as the user gave it (may hold credentials: never print it unredacted)
    uri: str = field(repr=False)
    #: the table's path in the storage's own form (a local path, or ``bucket/key``)
    path: str
    #: ``local``: the local file system through ``os``; ``arrow``: a ``pyarrow.fs`` filesystem
    kind: Literal["local", "arrow"] = "local"
    #: the pyarrow filesystem's ``type_name`` ("s3", "gcs", ...; "" when local)
    fs_type: str = ""
    #: the caller passed the filesystem (it was not resolved from the URI)
    explicit_fs: bool = False
    #: rebuilds the filesystem in another process (the filesystem's own ``__reduce__``)
    fs_factory: tuple[Any, tuple[Any, ...]] | None = field(default=None, repr=False,
                                                           compare=False)
    #: boto3 client arguments for S3 conditional writes (endpoint, region, credentials)
    s3_client_args: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)
    _cache: dict[str, Any] = field(default_factory=dict, init=False, repr=False,
                                   compare=False)

    @classmethod
    def of(cls, path: str | os.PathLike[str] | TableLocation,
           filesystem: Any = None) -> TableLocation:
        """``path`` itself when it is a location already, else :meth:`resolve` of it."""
        if isinstance(path, TableLocation):
            if filesystem is not None:
                raise UsageError("pass a filesystem with a path, not with a location")
            return path
        return cls.resolve(os.fspath(path), filesystem)

    @classmethod
    def resolve(cls, path: str, filesystem: Any = None) -> TableLocation:
        """Parse a path or URI (the only place one is parsed). ``filesystem``: a
        ``pyarrow.fs`` filesystem that ``path`` is a path of."""
        if filesystem is not None:
            loc = cls(path, path, "arrow", str(getattr(filesystem, "type_name", "")), True,
                      _reduce(filesystem))
            loc._cache["fs"] = filesystem
            return loc
        if path.startswith("file:/") and not path.startswith("file://"):
            return cls(path, path[len("file:"):])  # Hadoop's form (Spark's paths): file:/abs
        if path.startswith("file://localhost/"):
            return cls(path, path[len("file://localhost"):])
        if "://" not in path:
            return cls(path, path)
        fs, inner = _from_uri(path)
        fs_type = str(getattr(fs, "type_name", ""))
        if fs_type == "local":
            return cls(path, inner)
        try:
            client_args = _s3_client_args(path, getattr(fs, "region", None)) if (
                fs_type == "s3") else ()
        except ValueError as exc:
            raise storage_error(exc, path, "resolving the URI") from None
        loc = cls(path, inner, "arrow", fs_type, False, _reduce(fs), client_args)
        loc._cache["fs"] = fs
        return loc

    def __repr__(self) -> str:
        return f"TableLocation({redact(self.uri)!r}, path={self.path!r})"

    def __str__(self) -> str:
        return redact(self.uri)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_cache"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)

    @property
    def filesystem(self) -> Any:
        """The ``pyarrow.fs`` filesystem (None for a local path), built once per process."""
        if self.kind == "local":
            return None
        fs = self._cache.get("fs")
        if fs is None:
            assert self.fs_factory is not None
            make, args = self.fs_factory
            fs = self._cache["fs"] = make(*args)
        return fs

    @property
    def storage(self) -> Storage:
        """Directory-level access to the table's place, built once per process."""
        st: Storage | None = self._cache.get("storage")
        if st is None:
            st = self._cache["storage"] = (LocalStorage() if self.kind == "local"
                                           else ArrowStorage(self.filesystem))
        return st

    def join(self, *parts: str) -> str:
        """A path under the table (in the storage's form)."""
        return self.storage.join(self.path, *parts)

    def partition_path(self, partition: str) -> str:
        """The directory of a partition ("" : the table's own directory); an
        :class:`UnsafePathError` for a partition that is not a safe relative path (``..``,
        absolute, ``.hoodie``..., see ``morlog.logformat.partition_path``), so no path built
        here leaves the table."""
        return self.join(check_relative_partition_path(partition)) if partition else self.path


def _reduce(fs: Any) -> tuple[Any, tuple[Any, ...]]:
    try:
        make, args = fs.__reduce__()[:2]
        return make, tuple(args)
    except (TypeError, AttributeError, ValueError):
        return _rebuild, (fs,)


def _s3_client_args(uri: str, region: str | None) -> tuple[tuple[str, str], ...]:
    """boto3 client arguments for the endpoint, region and credentials a pyarrow S3 URI names
    (``region``: the one pyarrow resolved, when the URI names none)."""
    parts = urllib.parse.urlsplit(uri)
    q = dict(urllib.parse.parse_qsl(parts.query))
    kwargs: dict[str, str] = {}
    if q.get("endpoint_override"):
        ep = q["endpoint_override"]
        kwargs["endpoint_url"] = ep if "://" in ep else f"{q.get('scheme', 'https')}://{ep}"
    if q.get("region") or region:
        kwargs["region_name"] = q.get("region") or region or ""
    if parts.username:
        kwargs["aws_access_key_id"] = urllib.parse.unquote(parts.username)
        kwargs["aws_secret_access_key"] = urllib.parse.unquote(parts.password or "")
    return tuple(kwargs.items())


def storage_for(path: str | TableLocation, filesystem: Any = None) -> tuple[Storage, str]:
    """The storage a table path lives on, and the path in that storage's form."""
    loc = TableLocation.of(path, filesystem)
    return loc.storage, loc.path
