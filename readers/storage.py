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

from logformat.errors import LengthError, TruncatedError, UsageError


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


class _SourceBase:
    name: str
    stats: ReadStats
    _size: int

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
