"""The one way every reader and writer reads a table's ``hoodie.properties``.

A writer rewrites ``hoodie.properties`` either atomically (morlog on local file systems and
S3) or by Hudi's backup protocol (``HoodieTableConfig.modify``: ``hoodie.properties.backup``
written first, the file deleted and written again, the backup deleted; spec/table.md §1.1).
So a reader, as Hudi's ``ConfigUtils.fetchConfigs``, reads the file, else its backup, and
when neither is there (or neither is usable: empty, or a ``hoodie.table.checksum`` that does
not match) tries again briefly: a writer racing it has one of the two in place a moment
later. Only a ``.hoodie`` holding neither file after the retries is "not a Hudi table".
"""

from __future__ import annotations

import time

from morlog.logformat.errors import ContentError, UsageError
from morlog.logformat.table_files import (
    PROPERTIES_BACKUP_FILE,
    PROPERTIES_FILE,
    parse_properties,
    properties_usable,
)

from .storage import Storage

#: reads of the two files before giving up (Hudi: ``HoodieConfig.MAX_READ_RETRIES``, 5)
READ_ATTEMPTS = 8
#: pause between attempts, seconds (Hudi waits 1 s; morlog's own rewrites are atomic, so
#: only a writer using the backup protocol is ever raced, for the time of one small write)
RETRY_DELAY_SECONDS = 0.05


def properties_paths(storage: Storage, table_path: str) -> tuple[str, str]:
    """``.hoodie/hoodie.properties`` of the table at ``table_path`` and its backup."""
    return (storage.join(table_path, ".hoodie", PROPERTIES_FILE),
            storage.join(table_path, ".hoodie", PROPERTIES_BACKUP_FILE))


def has_properties(storage: Storage, table_path: str) -> bool:
    """Whether a table is at ``table_path``: ``hoodie.properties`` or its backup."""
    return any(storage.isfile(p) for p in properties_paths(storage, table_path))


def _read(storage: Storage, path: str) -> dict[str, str] | None:
    try:
        data = storage.read(path)
    except FileNotFoundError:
        return None
    return parse_properties(data.decode("utf-8", errors="replace"), path)


def read_properties(storage: Storage, table_path: str, *,
                    attempts: int = READ_ATTEMPTS,
                    delay: float = RETRY_DELAY_SECONDS) -> tuple[dict[str, str], str]:
    """The properties of the table at ``table_path`` and the path
    they were read from (``hoodie.properties``, or its backup during a rewrite or after a
    writer died in one). Raises :class:`UsageError` "not a Hudi table" when neither file is
    there, :class:`ContentError` when only unusable ones are."""
    main, backup = properties_paths(storage, table_path)
    unusable: tuple[dict[str, str], str] | None = None
    for attempt in range(max(1, attempts)):
        for path in (main, backup):
            props = _read(storage, path)
            if props is None:
                continue
            if properties_usable(props):
                return props, path
            unusable = (props, path)
        if attempt == 0 and unusable is None and not storage.listdir(
                storage.join(table_path, ".hoodie")):
            break  # no .hoodie folder at all: no writer is rewriting anything here
        if attempt + 1 < attempts:
            time.sleep(delay)
    if unusable is not None:
        props, path = unusable
        if props:
            # a checksum Hudi would refuse, but the only properties there are: read them,
            # as morlog always has (a table renamed by hand keeps its old checksum)
            return props, path
        raise ContentError("hoodie.properties is empty (and no usable backup)", path=path)
    raise UsageError(f"not a Hudi table (no .hoodie/{PROPERTIES_FILE} nor "
                     f"{PROPERTIES_BACKUP_FILE})", path=table_path)


__all__ = ["READ_ATTEMPTS", "RETRY_DELAY_SECONDS", "has_properties", "properties_paths",
           "read_properties"]
