"""What a commit to a table with Hudi's internal schema records (spec/table.md §7.8).

Hudi's writer, on a table whose history holds an internal schema
(``BaseHoodieWriteClient.saveInternalSchema``, run for writers with
``hoodie.schema.on.read.enable``): the version of the commit's instant
(``InternalSchemaUtils.searchSchema`` over the history) reconciled with the commit's Avro
schema (``AvroSchemaEvolutionUtils.reconcileSchema``: new columns get new ids, promoted types
change in place); unchanged, the commit's ``latest_schema`` is that version as it was and the
history is written again under the commit's instant; changed, the new version takes the
commit's instant as its ``version_id``, is the commit's ``latest_schema`` and is put first in
the history. The history file ``.hoodie/.schema/<instant>.schemacommit`` (with empty
``.requested`` and ``.inflight`` files) is written before the commit completes
(``FileBasedInternalSchemaStorageManager.persistHistorySchemaStr``); a commit that never
completes leaves files of an instant that is no completed commit, which readers ignore.

morlog records it for every commit of a table that has a history, whatever the writer's
``hoodie.schema.on.read.enable`` (a commit without ``latest_schema`` would make Hudi's readers
take the table for one without an internal schema and lose the renames); a table without a
history gets none (Hudi's first version comes from ``ALTER TABLE``).
"""

from __future__ import annotations

from typing import Any

from morlog.logformat import internal_schema as isc
from morlog.logformat.blocks import META_FIELDS
from morlog.readers.schema_on_read import SCHEMA_COMMIT, SCHEMA_DIR, history_text
from morlog.readers.table import Table
from morlog.writers.core.store import WriteStore

__all__ = ["record_internal_schema"]


def record_internal_schema(store: WriteStore, view: Table, instant: str,
                           schema: dict[str, Any], *, fsync: bool = True) -> str | None:
    """Write the history file of the commit ``instant`` whose Avro schema (no meta fields)
    is ``schema`` and return its ``latest_schema`` text; None (nothing written) for a table
    without a history."""
    got = history_text(view)
    if got is None:
        return None
    text, where = got
    history = isc.parse_history(text, where)
    current = isc.search(history, int(instant)) if instant.isdigit() else None
    if current is None:
        current = history[max(history)]
    names = {f.get("name") for f in schema.get("fields", [])}
    meta = [{"name": n, "type": ["null", "string"], "default": None}
            for n in META_FIELDS if n not in names]
    evolved = isc.reconcile(current, {**schema, "fields": meta + list(schema["fields"])})
    if evolved is current:
        latest, new_history = isc.to_json(current), text
    else:
        evolved = isc.InternalSchema(evolved.record, int(instant), evolved.max_column_id)
        latest, new_history = isc.to_json(evolved), isc.history_json(evolved, text)
    directory = store.join(view.path, ".hoodie", SCHEMA_DIR)
    store.makedirs(directory)
    base = store.join(directory, f"{instant}.{SCHEMA_COMMIT}")
    store.replace(base + ".requested", b"", sync=fsync)
    store.replace(base + ".inflight", b"", sync=fsync)
    store.replace(base, new_history.encode("utf-8"), sync=fsync)
    return latest
