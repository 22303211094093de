"""Partition column values parsed back from partition paths (tables whose data files drop
the partition columns). Apart from :mod:`.table` so that the pruner reaches them without
importing the table (``tests/test_layering.py``: no import cycles among readers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from morlog.config import DROP_PARTITION_COLUMNS
from morlog.logformat.errors import ContentError, UsageError

if TYPE_CHECKING:
    from .table import Table


class PartitionColumns:
    """Partition column values parsed back from a partition path, for tables written with
    ``hoodie.datasource.write.drop.partition.columns=true`` (the data files hold no partition
    columns; Hudi's readers take the values from the path, and ``TableSchemaResolver
    .appendPartitionColumns`` adds the columns, as strings where the table schema has none).

    The path is split as the key generator built it (``morlog.logformat.keygen``): one
    segment per partition field, ``field=value`` when Hive-style, URL-decoded when
    ``hoodie.datasource.write.partitionpath.urlencode``; ``__HIVE_DEFAULT_PARTITION__`` is
    null. Timestamp-formatted partition values and slash-separated dates do not parse back:
    such tables are refused (:class:`UnsupportedSettingError`)."""

    def __init__(self, fields: list[str], types: dict[str, pa.DataType], hive: bool,
                 urlencode: bool, where: str | None) -> None:
        self.fields = fields
        self.types = types
        self.hive = hive
        self.urlencode = urlencode
        self.where = where

    @classmethod
    def of(cls, table: Table) -> PartitionColumns:
        from morlog.logformat.keygen import KeyGenSpec

        cfg = table.config
        spec = KeyGenSpec.from_properties(cfg.props)
        check_partition_columns_parse(spec, cfg.path)
        types: dict[str, pa.DataType] = {}
        try:
            schema = table.arrow_schema()
        except (UsageError, ContentError):
            schema = pa.schema([])
        for f in spec.partition_fields:
            i = schema.get_field_index(f)
            types[f] = schema.field(i).type if i >= 0 else pa.string()
        return cls(list(spec.partition_fields), types, spec.hive_style, spec.urlencode,
                   cfg.path)

    def values(self, partition: str) -> dict[str, str | None]:
        """The value of each partition field in ``partition`` (a relative path)."""
        from urllib.parse import unquote

        from morlog.logformat.partition_path import DEFAULT_PARTITION_PATH

        segments = partition.split("/") if partition else []
        if len(segments) != len(self.fields):
            raise ContentError(f"partition path {partition!r} does not hold one segment per "
                               f"partition field {self.fields}", path=self.where)
        out: dict[str, str | None] = {}
        for name, seg in zip(self.fields, segments, strict=True):
            value = seg
            if self.hive:
                prefix = f"{name}="
                if not seg.startswith(prefix):
                    raise ContentError(f"partition path segment {seg!r} is not {prefix}...",
                                       path=self.where)
                value = seg[len(prefix):]
            if self.urlencode:
                value = unquote(value)
            out[name] = None if value == DEFAULT_PARTITION_PATH else value
        return out

    def restore(self, rows: pa.Table, partition: str) -> pa.Table:
        """``rows`` (one slice of ``partition``) with the partition columns put back."""
        n = rows.num_rows
        for name, value in self.values(partition).items():
            t = self.types.get(name, pa.string())
            text = pa.scalar(value, pa.string())
            try:
                scalar = text.cast(t)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                t, scalar = pa.string(), text
            col = pa.repeat(scalar, n) if value is not None else pa.nulls(n, t)
            if name in rows.column_names:
                rows = rows.set_column(rows.column_names.index(name), name, col)
            else:
                rows = rows.append_column(pa.field(name, t), col)
        return rows


def check_partition_columns_parse(spec: Any, where: str | None) -> None:
    """:class:`UnsupportedSettingError` when partition values cannot be parsed back from
    partition paths (needed when the data files drop the partition columns)."""
    from morlog.logformat.errors import UnsupportedSettingError

    key = DROP_PARTITION_COLUMNS
    if any(p.timestamp for p in spec.partition_spec):
        raise UnsupportedSettingError(
            "partition values formatted by the timestamp key generator cannot be parsed "
            "back from the partition path, so the partition columns cannot be dropped",
            property=key, value="true", path=where)
    if spec.slash_separated_date:
        raise UnsupportedSettingError(
            "slash-separated date partition paths do not parse back into partition values, "
            "so the partition columns cannot be dropped", property=key, value="true",
            path=where)
    nested = [f for f in spec.partition_fields if "." in f]
    if nested:
        # HoodieDatasetBulkInsertHelper.dropPartitionColumns keeps nested fields
        raise UnsupportedSettingError(
            f"nested partition fields {nested} cannot be dropped from the data files",
            property=key, value="true", path=where)
