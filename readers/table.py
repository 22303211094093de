"""A Hudi merge-on-read table: properties, timeline, partitions, file groups, file slices.

Slice membership follows Hudi (facts §1): for table version <= 6 a log file belongs to the
slice whose base instant equals the instant in its name; for 8+ to the slice with the largest
base instant not after the completion time of the log's delta commit (the newest slice while
it is pending; a group without base file keys its slice by the log's own instant). Files of
failed or pending writes and file groups replaced by completed replace commits are left out.
Base files are those of the table's ``hoodie.table.base.file.format``
(``morlog.readers.base_files``); a base file of another format in a partition is a
:class:`~morlog.logformat.errors.FormatError`, never left out silently.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from morlog.logformat.blocks import META_FIELDS, RECORD_KEY_FIELD
from morlog.logformat.errors import ContentError, FormatError, UnsupportedVersionError, UsageError
from morlog.logformat.naming import BaseFileName, LogFileName
from morlog.logformat.partition_path import check_relative_partition_path
from morlog.logformat.table_files import (
    PARTITION_METADATA_FILE,
    PROPERTIES_FILE,
    parse_properties,
)

from .base_files import BaseFormat, check_base_file, table_base_format
from .containment import check_file_name, resolve_under
from .merge import MergeSpec, read_slice
from .storage import TableLocation
from .timeline import Timeline

PARTITION_METADATA = PARTITION_METADATA_FILE
#: layout 1 (Hudi 0.x, versions 4-6) and layout 2 (Hudi 1.x, versions 8-9)
SUPPORTED_TABLE_VERSIONS = frozenset({4, 5, 6, 8, 9})
__all__ = ["META_FIELDS", "FileSlice", "Table", "TableConfig", "query_instant"]


@dataclass(frozen=True)
class TableConfig:
    props: dict[str, str]
    #: the ``hoodie.properties`` file the settings were read from (for error messages)
    path: str | None = None

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.props.get(key, default)

    @property
    def version(self) -> int:
        """``hoodie.table.version``; a :class:`FormatError` naming the file and the setting
        when it is not a (small) decimal number."""
        raw = (self.props.get("hoodie.table.version", "0") or "0").strip()
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 9):
            raise FormatError("hoodie.table.version is not a table version number",
                              path=self.path, actual=raw[:40])
        return int(raw)

    @property
    def base_format(self) -> BaseFormat:
        """``hoodie.table.base.file.format`` (default PARQUET); an
        :class:`~morlog.logformat.errors.UnsupportedFormatError` naming the setting for HFILE
        or a value Hudi does not know."""
        return table_base_format(self.props, self.path)

    @property
    def table_type(self) -> str:
        return self.props.get("hoodie.table.type", "COPY_ON_WRITE")

    @property
    def name(self) -> str:
        return self.props.get("hoodie.table.name", "")

    @property
    def record_key_fields(self) -> list[str]:
        raw = self.props.get("hoodie.table.recordkey.fields", "")
        return [f for f in raw.split(",") if f]

    @property
    def record_key_field(self) -> str:
        """The first record key field; a :class:`FormatError` naming the file and the
        setting when ``hoodie.table.recordkey.fields`` names none."""
        fields = self.record_key_fields
        if not fields:
            raise FormatError("hoodie.table.recordkey.fields names no record key field",
                              path=self.path)
        return fields[0]

    @property
    def partition_fields(self) -> list[str]:
        raw = self.props.get("hoodie.table.partition.fields", "")
        return [f.split(":")[0] for f in raw.split(",") if f]

    @property
    def ordering_fields(self) -> list[str]:
        raw = (self.props.get("hoodie.table.ordering.fields")
               or self.props.get("hoodie.table.precombine.field") or "")
        return [f for f in raw.split(",") if f]

    @property
    def populate_meta_fields(self) -> bool:
        return self.props.get("hoodie.populate.meta.fields", "true").lower() != "false"

    @property
    def key_generator(self) -> str:
        return (self.props.get("hoodie.table.keygenerator.class")
                or self.props.get("hoodie.table.keygenerator.type") or "")

    @property
    def hive_style_partitioning(self) -> bool:
        return self.props.get("hoodie.datasource.write.hive_style_partitioning",
                              "false").lower() == "true"

    @property
    def merge_mode(self) -> str:
        """COMMIT_TIME_ORDERING or EVENT_TIME_ORDERING (CUSTOM payloads are not supported)."""
        mode = self.props.get("hoodie.record.merge.mode")
        if mode:
            return mode
        payload = self.props.get("hoodie.compaction.payload.class", "")
        if payload.endswith("DefaultHoodieRecordPayload") or payload.endswith(
                "EventTimeAvroPayload"):
            return "EVENT_TIME_ORDERING"
        return "COMMIT_TIME_ORDERING"


@dataclass
class FileSlice:
    partition: str
    file_id: str
    #: the slice's base instant (for a log-only slice: the instant of its first log)
    base_instant: str
    base_file: str | None = None
    log_files: list[str] = field(default_factory=list)

    @property
    def directory_rel(self) -> str:
        return self.partition

    def log_names(self) -> list[LogFileName]:
        return [LogFileName.parse(n) for n in self.log_files]


def _plain_name(name: str) -> bool:
    try:
        check_file_name(name)
    except UsageError:
        return False
    return True


_TIME_FORMATS = {10: "%Y-%m-%d", 19: "%Y-%m-%d %H:%M:%S", 23: "%Y-%m-%d %H:%M:%S.%f"}


def query_instant(text: str) -> str:
    """Hudi's ``as.of.instant`` value as an instant: digits (``yyyyMMddHHmmssSSS``) as they
    are; ``yyyy-MM-dd HH:mm:ss[.SSS]`` and ``yyyy-MM-dd`` (its midnight) rewritten in the
    same clock, as Hudi's ``HoodieSqlCommonUtils.formatQueryInstant`` does; a
    :class:`UsageError` otherwise."""
    import datetime as _dt

    value = text.strip()
    if value.isdigit():
        return value
    fmt = _TIME_FORMATS.get(len(value))
    if fmt is not None:
        try:
            t = _dt.datetime.strptime(value, fmt)
        except ValueError:
            pass
        else:
            return t.strftime("%Y%m%d%H%M%S") + f"{t.microsecond // 1000:03d}"
    raise UsageError("an instant is yyyyMMddHHmmssSSS, or a time yyyy-MM-dd HH:mm:ss[.SSS] "
                     "or a date yyyy-MM-dd", actual=text)


class Table:
    """A merge-on-read table on the local file system or any ``pyarrow.fs`` filesystem."""

    def __init__(self, path: str | TableLocation, filesystem: Any = None) -> None:
        """``path``: a local path, a URI (``s3://bucket/table``) read through pyarrow.fs, or a
        :class:`~morlog.readers.storage.TableLocation` resolved already; ``filesystem``: a
        ``pyarrow.fs`` filesystem for ``path``."""
        self.location = TableLocation.of(path, filesystem)
        self.storage = self.location.storage
        path = self.location.path
        props_path = self.storage.join(path, ".hoodie", PROPERTIES_FILE)
        if not self.storage.isfile(props_path):
            raise UsageError("not a Hudi table (no .hoodie/hoodie.properties)", path=path)
        self.path = path
        text = self.storage.read(props_path).decode("utf-8", errors="replace")
        self.config = TableConfig(parse_properties(text, props_path), props_path)
        if self.config.version not in SUPPORTED_TABLE_VERSIONS:
            raise UnsupportedVersionError("unsupported table version (hoodie.table.version)",
                                          path=props_path,
                                          expected=sorted(SUPPORTED_TABLE_VERSIONS),
                                          actual=self.config.version)
        if self.config.table_type != "MERGE_ON_READ":
            raise UsageError("morlog reads merge-on-read tables (hoodie.table.type)",
                             path=props_path,
                             expected="MERGE_ON_READ", actual=self.config.table_type)
        #: the format of the table's base files (``hoodie.table.base.file.format``)
        self.base_format = self._base_format()
        self.timeline = Timeline.load(path, self.config.version, self.storage)

    def _base_format(self) -> BaseFormat:
        """The base-file format of a data table (HFILE refused: the metadata table's)."""
        return self.config.base_format

    @property
    def version(self) -> int:
        return self.config.version

    @property
    def key_field(self) -> str:
        """The field readers key records by: the meta field, or the configured key field."""
        if self.config.populate_meta_fields:
            return RECORD_KEY_FIELD
        fields = self.config.record_key_fields
        if len(fields) != 1:
            raise UsageError("tables without meta fields need exactly one record key field",
                             path=self.path, actual=fields)
        return fields[0]

    def merge_spec(self, as_of: str | None = None,
                   columns: list[str] | None = None) -> MergeSpec:
        ordering = self.config.ordering_fields
        return MergeSpec(key_field=self.key_field,
                         ordering_field=ordering[0] if ordering else None,
                         merge_mode=self.config.merge_mode, table_version=self.version,
                         as_of=as_of, columns=columns)

    def resolve_instant(self, as_of: str | None) -> str | None:
        """``as_of`` as an instant (None: the latest state): an instant
        (``yyyyMMddHHmmssSSS``), or Hudi's other ``as.of.instant`` formats (see
        :func:`query_instant`)."""
        if as_of is None:
            return None
        return query_instant(as_of)

    def arrow_schema(self) -> pa.Schema:
        """The table's schema: ``hoodie.table.create.schema`` with Hudi's meta fields first
        (when the table populates them)."""
        from morlog.logformat.avroschema import avro_to_arrow_schema

        text = self.config.get("hoodie.table.create.schema")
        if not text:
            raise UsageError("table has no hoodie.table.create.schema", path=self.path)
        try:
            schema = avro_to_arrow_schema(text)
        except ContentError as exc:
            raise exc.at(self.config.path) from exc.__cause__
        if self.config.populate_meta_fields:
            meta = [pa.field(n, pa.string()) for n in META_FIELDS if n not in schema.names]
            schema = pa.schema(meta + list(schema))
        return schema

    def read_slice(self, s: FileSlice, as_of: str | None = None,
                   columns: list[str] | None = None) -> pa.Table:
        """The merged records of one file slice (memory bounded by that slice)."""
        spec = self.merge_spec(as_of, columns)
        out = read_slice(self.slice_dir(s.partition), s.base_file, s.log_files, spec,
                         self.timeline, self.storage)
        if columns is not None and out.num_columns:
            out = out.select([c for c in columns if c in out.column_names])
        return out

    def snapshot(self, as_of: str | None = None, columns: list[str] | None = None
                 ) -> Iterator[pa.Table]:
        """The table as of ``as_of`` (default: latest), one merged file slice at a time."""
        as_of = self.resolve_instant(as_of)
        for s in self.file_slices(as_of):
            t = self.read_slice(s, as_of, columns)
            if t.num_rows:
                yield t

    def read(self, as_of: str | None = None, columns: list[str] | None = None) -> pa.Table:
        """The whole snapshot in memory (small tables; prefer :meth:`snapshot`)."""
        parts = list(self.snapshot(as_of, columns))
        if not parts:
            return pa.table({})
        try:
            return pa.concat_tables(parts, promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return pa.concat_tables(parts)

    def slice_dir(self, partition: str) -> str:
        """The directory of a partition, checked to lie under the table root (a partition
        name comes from a listing or from commit metadata: never trusted to stay inside)."""
        if not partition:
            return self.path
        check_relative_partition_path(partition)
        return resolve_under(self.path, partition)

    def partitions(self) -> list[str]:
        """Relative partition paths ("" for a non-partitioned table): the directories that
        hold a ``.hoodie_partition_metadata`` file."""
        if not self.config.partition_fields:
            return [""]
        out = []
        stack = [""]
        while stack:
            rel = stack.pop()
            for d in self.storage.subdirs(self.slice_dir(rel)):
                if d.startswith(".") or not _plain_name(d):
                    continue  # hidden, or a name no partition path can have
                child = f"{rel}/{d}" if rel else d
                if PARTITION_METADATA in self.storage.listdir(self.slice_dir(child)):
                    out.append(child)
                stack.append(child)
        return sorted(out)

    def file_slices(self, as_of: str | None = None, partition: str | None = None
                    ) -> list[FileSlice]:
        """The latest file slice of every file group as of ``as_of`` (default: now)."""
        replaced = self.timeline.replaced_file_groups(as_of)
        out = []
        for part in [partition] if partition is not None else self.partitions():
            for s in self._partition_slices(part, self.slice_dir(part), as_of):
                if (part, s.file_id) not in replaced:
                    out.append(s)
        return out

    def _partition_slices(self, part: str, directory: str, as_of: str | None
                          ) -> Iterator[FileSlice]:
        names = self.storage.listdir(directory)
        bases: dict[str, list[BaseFileName]] = {}
        logs: dict[str, list[LogFileName]] = {}
        tl = self.timeline
        for n in names:
            if LogFileName.matches(n):
                ln = LogFileName.parse(n)
                if ln.ext == "log" and not ln.cdc:
                    logs.setdefault(ln.file_id, []).append(ln)
            elif check_base_file(n, self.base_format, self.storage.join(directory, n)):
                bf = BaseFileName.parse(n)
                if tl.is_committed(bf.instant, as_of):
                    bases.setdefault(bf.file_id, []).append(bf)
        for fid in sorted(set(bases) | set(logs)):
            yield self._latest_slice(part, fid, bases.get(fid, []), logs.get(fid, []), as_of)

    def _latest_slice(self, part: str, fid: str, bases: list[BaseFileName],
                      logs: list[LogFileName], as_of: str | None) -> FileSlice:
        base = max(bases, key=lambda b: b.instant) if bases else None
        tl = self.timeline
        mine: list[LogFileName] = []
        if self.version <= 6:
            # logs named after the base instant, plus those of later slices whose base file
            # does not exist yet (a pending compaction): Hudi merges those into this slice
            key = base.instant if base else None
            for ln in logs:
                if key is None or ln.instant >= key:
                    mine.append(ln)
            if key is None and mine:
                # a log-only group: its slice is keyed by the oldest log instant
                key = min(ln.instant for ln in mine)
        else:
            key = base.instant if base else None
            for ln in logs:
                if not tl.is_committed(ln.instant, as_of):
                    continue  # uncommitted log files are not part of any slice (8+)
                done = tl.completion_time(ln.instant) or ln.instant
                if key is None or done >= key:
                    mine.append(ln)
            if key is None and mine:
                key = min(ln.instant for ln in mine)
        mine.sort(key=LogFileName.sort_key)
        return FileSlice(part, fid, key or "", str(base) if base else None,
                         [str(n) for n in mine])
