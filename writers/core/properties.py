"""Replacing a table's ``hoodie.properties`` so that a reader always finds one (spec/table.md
§1.1): an atomic replace where the store has one, Hudi's backup protocol elsewhere, and the
recovery of a rewrite that died (Hudi's ``HoodieTableConfig.recoverIfNeeded``)."""

from __future__ import annotations

from morlog.logformat.table_files import (
    PROPERTIES_BACKUP_FILE,
    PROPERTIES_FILE,
    format_properties,
)
from morlog.readers.storage import TableLocation
from morlog.writers.core.store import WriteStore


def update_properties(store: WriteStore, location: TableLocation, props: dict[str, str],
                      *, fsync: bool = True) -> None:
    """Replace ``hoodie.properties`` with ``props`` (the caller holds the writer lock) so
    that a reader never finds the table without properties (spec/table.md §1.1):

    - first, as Hudi's ``HoodieTableConfig.modify`` (``recoverIfNeeded``), a rewrite that
      died is finished: a missing file is restored from ``hoodie.properties.backup``;
    - where the store replaces a file atomically (local: a temporary file renamed over it;
      S3: one ``PUT`` with ``If-Match``), the file is replaced and a backup left by
      another writer is deleted;
    - elsewhere Hudi's backup protocol: the backup written, the file deleted and written
      again, the backup deleted (readers fall back to the backup in between)."""
    hoodie = store.join(location.path, ".hoodie")
    path = store.join(hoodie, PROPERTIES_FILE)
    backup = store.join(hoodie, PROPERTIES_BACKUP_FILE)
    restore_properties(store, location.path, fsync=fsync)
    data = format_properties(props).encode("utf-8")
    if store.can_replace:
        store.replace(path, data, sync=fsync)
        store.delete(backup)
        return
    store.delete(backup)
    store.create(backup, store.read(path), sync=fsync)
    store.delete(path)
    store.create(path, data, sync=fsync)
    store.delete(backup)


def restore_properties(store: WriteStore, table_path: str, *, fsync: bool = True) -> bool:
    """Finish a rewrite of ``hoodie.properties`` that died (Hudi's
    ``ConfigUtils.recoverIfNeeded``): when the file is missing and its backup exists, the
    file is created from the backup; True if it was. The backup stays until the next
    rewrite (or ``repair``) deletes it, so a reader always finds one of the two."""
    hoodie = store.join(table_path, ".hoodie")
    path = store.join(hoodie, PROPERTIES_FILE)
    backup = store.join(hoodie, PROPERTIES_BACKUP_FILE)
    if store.exists(path):
        return False
    try:
        data = store.read(backup)
    except FileNotFoundError:
        return False
    return store.create(path, data, sync=fsync)


__all__ = ["restore_properties", "update_properties"]
