"""Ranged-read sources: the only way readers touch bytes.

A source knows its size and answers ``read(offset, length)``; every request is checked against
the size before anything is allocated, and every read is counted (``stats``), so that tests and
benchmarks can prove how much of a file a lookup touched.

- :class:`LocalFileSource`: a local file (``os.pread``, no shared file position).
- :class:`ArrowFileSource`: any ``pyarrow.fs`` filesystem (S3, GCS, HDFS, local) by URI.
- :class:`BytesSource`: bytes in memory (tests, vectors).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from morlog.logformat.errors import LengthError, TruncatedError, UsageError


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


class _SourceBase:
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


class LocalFileSource(_SourceBase):
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


class BytesSource(_SourceBase):
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


class ArrowFileSource(_SourceBase):
    """A file on any pyarrow filesystem; ``read`` maps to one ranged request (``read_at``)."""

    def __init__(self, path: str, filesystem: Any = None) -> None:
        import pyarrow.fs as pafs

        if filesystem is None:
            filesystem, path = pafs.FileSystem.from_uri(path)
        self.name = path
        self.stats = ReadStats()
        if getattr(filesystem, "type_name", "") != "local":
            self.coalesce_gap = REMOTE_COALESCE_GAP
        self._file = filesystem.open_input_file(path)
        self._size = int(self._file.size())

    def read(self, offset: int, length: int) -> bytes:
        self._check(offset, length)
        data = self._file.read_at(length, offset)
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

    def sizes(self, path: str) -> dict[str, int]:
        try:
            with os.scandir(path) as it:
                return {e.name: e.stat().st_size for e in it if e.is_file()}
        except (FileNotFoundError, NotADirectoryError):
            return {}

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

    def sizes(self, path: str) -> dict[str, int]:
        import pyarrow.fs as pafs

        return {i.base_name: int(i.size) for i in self._infos(path)
                if i.type == pafs.FileType.File}

    def isfile(self, path: str) -> bool:
        import pyarrow.fs as pafs

        return bool(self.fs.get_file_info(path).type == pafs.FileType.File)

    def read(self, path: str) -> bytes:
        with self.fs.open_input_file(path) as f:
            return bytes(f.read())

    def size(self, path: str) -> int:
        return int(self.fs.get_file_info(path).size)

    def source(self, path: str) -> RangedSource:
        return ArrowFileSource(path, self.fs)

    def open_input(self, path: str) -> Any:
        return self.fs.open_input_file(path)


def storage_for(path: str, filesystem: Any = None) -> tuple[Storage, str]:
    """The storage a table path lives on, and the path in that storage's form."""
    if filesystem is not None:
        return ArrowStorage(filesystem), path
    if "://" in path:
        import pyarrow.fs as pafs

        fs, inner = pafs.FileSystem.from_uri(path)
        return ArrowStorage(fs), inner
    return LocalStorage(), path
