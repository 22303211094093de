"""Regenerate the internal-schema conformance vectors (spec/table.md §7.8).

``cases.json``: for each case ``internal``, one internal schema as Hudi's
``SerDeHelper.toJson`` writes it (the ``latest_schema`` commit metadata value; a reader must
parse it and write it back byte for byte) and, optionally:

- ``avro`` (and ``version_id``): an Avro record whose internal schema (Hudi's
  ``AvroInternalSchemaConverter.convert``: a record's own fields take consecutive ids first,
  the root's from 0, then its nested types in field order; an array element takes one id, a
  map key and value two) is ``internal``;
- ``history_before``, ``history`` and ``search``: the history text of
  ``.hoodie/.schema/<instant>.schemacommit`` before and after ``internal`` is added
  (``SerDeHelper.inheritSchemas``: newest first), and, for some instants, the
  ``version_id`` of the version files written by that instant were written under
  (``InternalSchemaUtils.searchSchema``: that version, else the greatest before; null: none);
- ``before`` and ``write_avro``: the version before a write and the write's Avro schema (meta
  fields first); ``internal`` is the version the write records
  (``AvroSchemaEvolutionUtils.reconcileSchema``: a new column takes ``max_column_id + 1``,
  optional; a widened type changes in place; ``version_id`` the write's instant).

The ids of the ``nested`` case were worked out by hand from Hudi's algorithm (top-level ids
0-5; ``s``'s fields 6-7; ``arr``'s element 8 and its field 9; ``m``'s key 10, value 11), not
only produced by morlog's code. Run from the repository root with the project's
environment: ``python spec/vectors/internal_schema/regenerate.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from morlog.logformat import internal_schema as isc
from morlog.logformat.blocks import META_FIELDS

HERE = Path(__file__).parent


def _meta() -> list[dict[str, Any]]:
    return [{"name": n, "type": ["null", "string"], "doc": "", "default": None}
            for n in META_FIELDS]


FLAT = {"type": "record", "name": "trips_record", "namespace": "hoodie.trips", "fields": [
    *_meta(),
    {"name": "id", "type": "string"},
    {"name": "ts", "type": "long"},
    {"name": "n", "type": ["null", "int"], "default": None}]}

NESTED = {"type": "record", "name": "r", "fields": [
    {"name": "id", "type": "string"},
    {"name": "s", "type": ["null", {"type": "record", "name": "s", "fields": [
        {"name": "a", "type": "int"},
        {"name": "b", "type": ["null", "string"], "default": None}]}], "default": None},
    {"name": "arr", "type": ["null", {"type": "array", "items": {
        "type": "record", "name": "e", "fields": [{"name": "x", "type": "long"}]}}],
     "default": None},
    {"name": "m", "type": {"type": "map", "values": ["null", "long"]}},
    {"name": "d", "type": {"type": "fixed", "name": "d_fixed", "size": 5,
                           "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "t", "type": {"type": "long", "logicalType": "timestamp-micros"}}]}


def cases() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    flat = isc.from_avro(FLAT, 20240101000000000)
    out.append({"name": "flat_with_meta_fields", "avro": FLAT,
                "version_id": 20240101000000000, "internal": isc.to_json(flat)})
    nested = isc.from_avro(NESTED)
    out.append({"name": "nested_types", "avro": NESTED, "internal": isc.to_json(nested)})
    # ALTER TABLE RENAME COLUMN n TO num, then ADD COLUMNS (extra double): a second version
    first = isc.history_json(flat, None)
    fields = [isc.Field(f.id, "num" if f.name == "n" else f.name, f.optional, f.type, f.doc)
              for f in flat.fields]
    fields.append(isc.Field(flat.max_column_id + 1, "extra", True, "double"))
    second = isc.InternalSchema(isc.RecordType(tuple(fields)), 20240102000000000,
                                flat.max_column_id + 1)
    out.append({"name": "rename_then_add_history", "internal": isc.to_json(second),
                "history_before": first, "history": isc.history_json(second, first),
                "search": {"20231231000000000": None,
                           "20240101000000000": 20240101000000000,
                           "20240101120000000": 20240101000000000,
                           "20240102000000000": 20240102000000000,
                           "20250101000000000": 20240102000000000}})
    # a write whose Avro schema adds a column and widens n (int -> long): the version after
    # it (AvroSchemaEvolutionUtils.reconcileSchema; version_id the write's instant)
    write = {**FLAT, "fields": [*FLAT["fields"][:7],
                                {"name": "n", "type": ["null", "long"], "default": None},
                                {"name": "extra", "type": ["null", "string"],
                                 "default": None}]}
    after = isc.reconcile(flat, write)
    after = isc.InternalSchema(after.record, 20240103000000000, after.max_column_id)
    out.append({"name": "write_adds_and_widens", "before": isc.to_json(flat),
                "write_avro": write, "internal": isc.to_json(after)})
    return out


def main() -> None:
    doc = {"spec": "spec/table.md §7.8", "cases": cases()}
    (HERE / "cases.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
