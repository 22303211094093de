"""Test tables with Hudi's schema-on-read evolution, made as Hudi's ``ALTER TABLE`` makes them
(spec/table.md §7.8 "Test tables").

:func:`alter` is Spark's ``AlterTableCommand`` (hudi-spark-datasource, ``Spark3
AlterTableCommand`` / ``AlterTableCommand.commitWithSchema``) in Python:

1. the table's current internal schema: the ``latest_schema`` of its latest commit, else the
   history's latest version, else (the first ``ALTER``) the internal schema of its latest Avro
   schema with the meta fields first (``AvroInternalSchemaConverter.convert``, ids by Hudi's
   assignment);
2. the change (``TableChanges.ColumnUpdateChange`` / ``ColumnDeleteChange`` /
   ``ColumnAddChange`` applied by ``SchemaChangeUtils.applyTableChanges2Schema``): a rename
   keeps the id, a type change keeps the id, a drop removes the field, an added column takes
   ``max_column_id + 1`` and is optional, a reorder moves fields; ``max_column_id`` never
   goes down;
3. an empty delta commit (``WriteOperationType.ALTER_SCHEMA``, no write stats; through
   morlog's commit protocol, so the metadata table follows) whose extra
   metadata holds ``latest_schema`` (the new schema, ``version_id`` the commit's instant) and
   ``schema`` (its Avro form, meta fields included), and, before it completes, the history
   file ``.hoodie/.schema/<instant>.schemacommit`` (with empty ``.requested`` and
   ``.inflight`` files) holding ``SerDeHelper.inheritSchemas(new, old history)``.

Data files are not touched: renamed and dropped columns live on in them under their old
names, which is what readers must map by id.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from morlog.logformat import internal_schema as isc
from morlog.logformat.blocks import META_FIELDS
from morlog.readers.schema_on_read import LATEST_SCHEMA, history_text
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig


def current(path: Path) -> tuple[isc.InternalSchema, str, dict[str, Any]]:
    """The table's internal schema (step 1), its history text and its latest Avro schema."""
    view = Table(str(path))
    tl = view.timeline
    avro: dict[str, Any] | None = None
    latest: isc.InternalSchema | None = None
    for inst in reversed(tl.completed(frozenset({"commit", "deltacommit", "replacecommit"}))):
        extra = tl.metadata(inst).get("extraMetadata") or {}
        if avro is None and extra.get("schema"):
            avro = json.loads(extra["schema"])
        if latest is None and extra.get(LATEST_SCHEMA):
            latest = isc.parse(extra[LATEST_SCHEMA])
        if avro is not None and latest is not None:
            break
    got = history_text(view)
    history = got[0] if got else ""
    if latest is None and history:
        h = isc.parse_history(history)
        latest = h[max(h)]
    assert avro is not None, "the table records an Avro schema"
    if latest is None:
        names = {f["name"] for f in avro["fields"]}
        meta = [{"name": n, "type": ["null", "string"], "default": None}
                for n in META_FIELDS if n not in names]
        latest = isc.from_avro({**avro, "fields": meta + avro["fields"]})
    return latest, history, avro


def _parse_type(t: str) -> isc.Type:
    got = isc.parse(json.dumps({"type": "record", "fields": [
        {"id": 0, "name": "x", "optional": True, "type": t}]}))
    assert got is not None
    return got.fields[0].type


def _rename_in(record: isc.RecordType, path: list[str], new: str) -> isc.RecordType:
    fields = list(record.fields)
    for i, f in enumerate(fields):
        if f.name == path[0]:
            if len(path) == 1:
                fields[i] = replace(f, name=new)
            else:
                assert isinstance(f.type, isc.RecordType)
                fields[i] = replace(f, type=_rename_in(f.type, path[1:], new))
            return isc.RecordType(tuple(fields))
    raise KeyError(".".join(path))


def alter(path: Path, *, rename: dict[str, str] | None = None,
          drop: tuple[str, ...] = (), add: tuple[tuple[str, str], ...] = (),
          retype: dict[str, str] | None = None, first: str | None = None) -> str:
    """One ``ALTER TABLE`` on the table at ``path`` (module docstring); returns its instant.
    ``rename``: old name (``s.a`` for a struct field) -> new; ``drop``: top-level columns;
    ``add``: (name, internal type) appended as optional columns; ``retype``: name -> internal
    type (``long``, ``double``, ``string``, ``decimal(10, 2)``...); ``first``: a column moved
    to the first data position (after the meta fields, ``ALTER COLUMN c FIRST``)."""
    old, history, avro = current(path)
    record = old.record
    top = old.max_column_id
    for a, b in (rename or {}).items():
        record = _rename_in(record, a.split("."), b)
    fields = [f for f in record.fields if f.name not in drop]
    for name, t in add:
        top += 1
        fields.append(isc.Field(top, name, True, _parse_type(t)))
    for name, t in (retype or {}).items():
        fields = [replace(f, type=_parse_type(t)) if f.name == name else f for f in fields]
    if first is not None:
        moved = [f for f in fields if f.name == first]
        rest = [f for f in fields if f.name != first]
        n_meta = sum(1 for f in rest if f.name in META_FIELDS)
        fields = rest[:n_meta] + moved + rest[n_meta:]
    avro_new = isc.to_avro(isc.InternalSchema(isc.RecordType(tuple(fields))),
                           avro.get("name", "record"), avro.get("namespace"))
    # the commit protocol of morlog's writer (lock, timeline, metadata table), its schema the
    # Avro form of the new version (meta fields included, as Hudi's)
    c = MorTable(str(path), WriteConfig(fsync=False)).commit("alter_schema")
    c.schema = avro_new
    with c:
        new = isc.InternalSchema(isc.RecordType(tuple(fields)), int(c.instant), top)
        c.extra_metadata = {LATEST_SCHEMA: isc.to_json(new)}
        c.start([])
        schema_dir = path / ".hoodie" / ".schema"
        schema_dir.mkdir(exist_ok=True)
        (schema_dir / f"{c.instant}.schemacommit.requested").write_bytes(b"")
        (schema_dir / f"{c.instant}.schemacommit.inflight").write_bytes(b"")
        (schema_dir / f"{c.instant}.schemacommit").write_text(
            isc.history_json(new, history), encoding="utf-8")
        c.complete({}, {})
    return c.instant
