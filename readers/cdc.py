"""Hudi's CDC query (``hoodie.datasource.query.incremental.format=cdc``): the changes of the
completed writes in ``(begin, end]``.

Placeholder of the query dispatch: the CDC reader replaces this module."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from morlog.config import INCREMENTAL_FORMAT
from morlog.logformat.errors import UnsupportedSettingError

if TYPE_CHECKING:
    from .table import Table


def read_cdc(table: Table, begin: str | None, end: str | None,
             columns: list[str] | None = None) -> pa.Table:
    """The change records (Hudi's ``op``, ``ts_ms``, ``before``, ``after``) of the writes in
    ``(begin, end]``; not read yet: an :class:`UnsupportedSettingError`."""
    raise UnsupportedSettingError("CDC queries need the CDC reader, which this morlog does not "
                                  "have yet", property=INCREMENTAL_FORMAT, value="cdc",
                                  path=table.path)
