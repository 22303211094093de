"""Base files of every format Hudi writes: Parquet, ORC and Lance (spec/table.md §"Base files").

The one place that knows base-file formats. A table's format is its
``hoodie.table.base.file.format`` (Hudi's ``HoodieTableConfig.BASE_FILE_FORMAT``; alternative
key ``hoodie.table.ro.file.format``; default PARQUET; any case). Hudi's values and extensions
are those of ``HoodieFileFormat``: PARQUET ``.parquet``, ORC ``.orc``, LANCE ``.lance`` and
HFILE ``.hfile`` (the metadata table's, which morlog does not read). A value morlog cannot read
is an :class:`~morlog.logformat.errors.UnsupportedFormatError` naming the setting, raised when
the table is opened, never an empty read.

Reading: Parquet through ``pyarrow.parquet``, ORC through ``pyarrow.orc``, Lance through
pylance (``lance.file.LanceFileReader``; the optional ``morlog[lance]`` extra, imported only
when a Lance file is read). Hudi's index of a base file (facts §9: bloom filter, its type code,
min/max record key) is read where the format keeps it: the Parquet footer's key/value
metadata, ORC user metadata (``HoodieAvroOrcWriter``), Lance schema metadata
(``HoodieBaseLanceWriter``); a file without it is searched by its key column alone.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from enum import Enum
from types import ModuleType
from typing import Any

import pyarrow as pa

from morlog.compat.base_footer import BaseFileIndex, parse_base_footer
from morlog.config import BASE_FILE_FORMAT, RO_FILE_FORMAT
from morlog.logformat.errors import (
    FormatError,
    MorlogError,
    UnsupportedFormatError,
    UsageError,
)
from morlog.logformat.file_checksum import check_sealed
from morlog.logformat.naming import BaseFileName

from .storage import LocalFileSource, LocalStorage, RangedSource, Storage, decoder_errors

#: the table property naming the format of its base files, and its older alternative
FORMAT_PROPERTY = BASE_FILE_FORMAT
FORMAT_PROPERTY_ALT = RO_FILE_FORMAT
LANCE_EXTRA = "pip install 'morlog[lance]'"


class BaseFormat(Enum):
    """A base-file format morlog reads and writes (value: Hudi's name of it)."""

    PARQUET = "PARQUET"
    ORC = "ORC"
    LANCE = "LANCE"
    #: the metadata table's base files: listed in its file slices, never read as rows here
    #: (``morlog.logformat.hfile.codec`` decodes them); a data table with it is refused
    HFILE = "HFILE"

    @property
    def ext(self) -> str:
        """The file extension without the dot (``HoodieFileFormat``'s, lower case)."""
        return self.value.lower()

    @property
    def extension(self) -> str:
        return "." + self.ext


#: every base-file extension Hudi writes (``HoodieFileFormat.BASE_FILE_EXTENSIONS``) and its
#: format's name; HFILE is known but not read by morlog
HUDI_BASE_EXTENSIONS = {"parquet": "PARQUET", "orc": "ORC", "lance": "LANCE", "hfile": "HFILE"}


def table_base_format(props: Mapping[str, str], path: str | None = None) -> BaseFormat:
    """The base-file format of a table with properties ``props`` (``path``: the
    ``hoodie.properties`` file, for the error); :class:`UnsupportedFormatError` naming the
    setting and its value for HFILE or a value Hudi does not know."""
    raw = props.get(FORMAT_PROPERTY)
    key = FORMAT_PROPERTY
    if raw is None or not raw.strip():
        alt = props.get(FORMAT_PROPERTY_ALT)
        if alt is not None and alt.strip():
            raw, key = alt, FORMAT_PROPERTY_ALT
    if raw is None or not raw.strip():
        return BaseFormat.PARQUET
    value = raw.strip().upper()
    try:
        if value == BaseFormat.HFILE.value:
            raise ValueError(value)
        return BaseFormat(value)
    except ValueError:
        why = ("HFILE base files (Hudi's metadata table) are not read by morlog"
               if value == "HFILE" else "not a base-file format Hudi writes")
        raise UnsupportedFormatError(f"{key}={raw.strip()}: {why}", path=path,
                                     expected=[f.value for f in DATA_FORMATS],
                                     actual=raw.strip()) from None


#: the formats of a data table's base files
DATA_FORMATS = (BaseFormat.PARQUET, BaseFormat.ORC, BaseFormat.LANCE)


def _refuse_hfile(fmt: BaseFormat, path: str) -> None:
    if fmt is BaseFormat.HFILE:
        raise UnsupportedFormatError("HFILE base files hold the metadata table's records, "
                                     "which morlog reads with its HFile codec, not as rows",
                                     path=path, expected=[f.value for f in DATA_FORMATS],
                                     actual=fmt.value)


def base_file_format(name: str) -> str | None:
    """The Hudi format name of a base file name's extension (PARQUET, ORC, LANCE, HFILE),
    None when ``name`` is no base file name (any case of the extension counts)."""
    if not BaseFileName.matches(name):
        return None
    return HUDI_BASE_EXTENSIONS.get(BaseFileName.parse(name).ext.lower())


def check_base_file(name: str, fmt: BaseFormat, path: str | None = None) -> bool:
    """True when ``name`` is a base file of format ``fmt``; False when it is no base file at
    all; a :class:`FormatError` when it is a base file of another format (such a file would
    otherwise be silently left out of the table)."""
    found = base_file_format(name)
    if found is None:
        return False
    if BaseFileName.parse(name).ext != fmt.ext:
        raise FormatError(f"a {found} base file in a table whose {FORMAT_PROPERTY} is "
                          f"{fmt.value}", path=path or name, expected=f"*{fmt.extension}",
                          actual=name)
    return True


def format_of_path(path: str) -> BaseFormat:
    """The format of a base file by its extension (a :class:`UsageError` for others)."""
    ext = path.rsplit(".", 1)[-1] if "." in os.path.basename(path) else ""
    try:
        return BaseFormat(ext.upper())
    except ValueError:
        raise UsageError("not a base file morlog reads", path=path,
                         expected=[f.extension for f in DATA_FORMATS], actual=f".{ext}") from None


#: the Avro schema in an ORC base file's user metadata (``HoodieOrcConfig``)
ORC_AVRO_SCHEMA_KEY = b"orc.avro.schema"


def orc_conform(table: pa.Table, md: Mapping[bytes, bytes] | None) -> pa.Table:
    """ORC columns in the types of the Avro schema Hudi's ORC writer stores with the file
    (``orc.avro.schema``; ``OrcUtils.readAvroSchema`` prefers it to the ORC types): ORC keeps
    timestamps in nanoseconds, the Avro schema says micros or millis. Unchanged without it."""
    raw = (md or {}).get(ORC_AVRO_SCHEMA_KEY)
    if not raw:
        return table
    from morlog.logformat.avroschema import avro_to_arrow_schema

    try:
        want = avro_to_arrow_schema(raw.decode("utf-8"))
    except (MorlogError, UnicodeDecodeError):
        return table  # an unusable hint: the file's own types stand
    cols = []
    for f in table.schema:
        col = table.column(f.name)
        target = want.field(f.name).type if f.name in want.names else f.type
        if target != f.type and pa.types.is_timestamp(f.type) and pa.types.is_timestamp(target):
            col = col.cast(target)
        cols.append(col)
    return pa.table(cols, names=table.column_names)


def require_lance() -> ModuleType:
    """pylance's ``lance.file`` module; a :class:`UsageError` naming the extra without it."""
    try:
        import lance.file as lance_file
    except ImportError:
        raise UsageError(f"Lance base files need pylance: {LANCE_EXTRA}") from None
    module: ModuleType = lance_file
    return module


class SourceFile:
    """A file-like view of a ranged source, so that pyarrow's readers count their reads."""

    def __init__(self, src: RangedSource) -> None:
        self.src = src
        self.pos = 0
        self.closed = False

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else (self.pos + offset if whence == 1 else
                                               self.src.size + offset)
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            n = self.src.size - self.pos
        n = min(n, self.src.size - self.pos)
        data = self.src.read(self.pos, n) if n > 0 else b""
        self.pos += len(data)
        return data

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


@contextmanager
def _local_path(name: str, local: bool, fetch: Any) -> Iterator[str]:
    """A local path holding the file ``name``: itself when ``local``, else a temporary copy
    of ``fetch()``'s bytes (pylance opens files by path)."""
    if local:
        yield name
        return
    fd, tmp = tempfile.mkstemp(suffix=".lance")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(fetch())
        yield tmp
    finally:
        os.unlink(tmp)


class BaseFileReader:
    """One base file opened for reading: its column names, Hudi's index in its footer, and
    columns. Parquet and ORC read through ``src`` (reads counted there); Lance opens the file
    by its path (a temporary local copy for remote storage)."""

    def __init__(self, src: RangedSource, fmt: BaseFormat | None = None) -> None:
        self.src = src
        self.name = src.name
        self.format = fmt or format_of_path(src.name)
        _refuse_hfile(self.format, self.name)
        self._lance_path: Any = None
        with decoder_errors(self.name, "base file footer does not decode"):
            if self.format is BaseFormat.PARQUET:
                import pyarrow.parquet as pq

                self._pf = pq.ParquetFile(pa.PythonFile(SourceFile(src), mode="r"))
                self.schema: pa.Schema = self._pf.schema_arrow
                self._md: Mapping[bytes, bytes] | None = self._pf.metadata.metadata
            elif self.format is BaseFormat.ORC:
                import pyarrow.orc as orc

                self._of = orc.ORCFile(pa.PythonFile(SourceFile(src), mode="r"))
                self.schema = self._of.schema
                self._md = self._of.metadata
            else:
                lance_file = require_lance()
                self._lance_ctx = _local_path(src.name, isinstance(src, LocalFileSource),
                                              lambda: src.read(0, src.size))
                self._lance_path = self._lance_ctx.__enter__()
                self._lance = lance_file
                meta = lance_file.LanceFileReader(self._lance_path).metadata()
                self.schema = meta.schema
                self._md = meta.schema.metadata

    @property
    def names(self) -> list[str]:
        return list(self.schema.names)

    def footer(self) -> BaseFileIndex:
        """Hudi's bloom filter and min/max record key, where the file holds them."""
        return parse_base_footer(self._md)

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        """The file's records (``columns``: those of them the file has, in file order)."""
        cols = None if columns is None else [c for c in self.names if c in columns]
        with decoder_errors(self.name, "base file does not decode"):
            if self.format is BaseFormat.PARQUET:
                return self._pf.read(columns=cols, use_threads=False)
            if self.format is BaseFormat.ORC:
                if cols is not None and not cols:
                    return pa.table({})
                return orc_conform(self._of.read(columns=cols), self._md)
            if cols is not None and not cols:
                return pa.table({})
            reader = self._lance.LanceFileReader(self._lance_path, columns=cols)
            return reader.read_all().to_table()

    def close(self) -> None:
        if self._lance_path is not None:
            self._lance_ctx.__exit__(None, None, None)
            self._lance_path = None

    def __enter__(self) -> BaseFileReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_base_file(path: str, columns: Sequence[str] | None = None,
                   storage: Storage | None = None, fmt: BaseFormat | None = None,
                   sealed: bool = False) -> pa.Table:
    """A base file's records (``columns``: those of them it has, in file order), any format
    by its extension (or ``fmt``). Parquet and ORC are read through the storage's native
    input file. ``sealed``: the table seals its Parquet base files
    (``morlog.logformat.file_checksum``): the file is read whole, checked and decoded from
    those bytes."""
    st = storage or LocalStorage()
    fmt = fmt or format_of_path(path)
    _refuse_hfile(fmt, path)
    with decoder_errors(path, "base file does not decode"):
        if fmt is BaseFormat.PARQUET:
            import pyarrow.parquet as pq

            from morlog.logformat.parquet_content import read_parquet_table

            if sealed:
                data = st.read(path)
                check_sealed(data, path)
                source: Any = pa.BufferReader(data)
            else:
                source = st.open_input(path)
            pf = pq.ParquetFile(source)
            names = pf.schema_arrow.names
            return read_parquet_table(source, pf, None if columns is None else
                                      [c for c in names if c in columns])
        if fmt is BaseFormat.ORC:
            import pyarrow.orc as orc

            of = orc.ORCFile(st.open_input(path))
            names = of.schema.names
            cols = None if columns is None else [c for c in names if c in columns]
            if cols is not None and not cols:
                return pa.table({})
            return orc_conform(of.read(columns=cols), of.metadata)
        lance_file = require_lance()
        with _local_path(path, isinstance(st, LocalStorage), lambda: st.read(path)) as local:
            names = lance_file.LanceFileReader(local).metadata().schema.names
            cols = None if columns is None else [c for c in names if c in columns]
            if cols is not None and not cols:
                return pa.table({})
            return lance_file.LanceFileReader(local, columns=cols).read_all().to_table()


__all__ = ["FORMAT_PROPERTY", "FORMAT_PROPERTY_ALT", "HUDI_BASE_EXTENSIONS", "LANCE_EXTRA",
           "BaseFileReader", "BaseFormat", "SourceFile", "base_file_format", "check_base_file",
           "format_of_path", "read_base_file", "require_lance", "table_base_format"]
