"""Regenerate the schema-evolution conformance vectors (spec/table.md §7.7).

``cases.json``: for each case the table's write schema (``table``: an Avro record, meta
fields first, as ``hoodie.table.create.schema`` or a commit's schema with Hudi's meta fields
added), the batch's schema (``batch``: Avro JSON of the batch's Arrow schema, format §5.1
mapping) and either the schema the commit records (``evolved``: the table's write schema
after the write, or null when the write leaves it as it is) or the words the refusal names
(``refused``: the column the refusal names; the message also names Hudi's rule). Run from the repository root with the project's environment:
``python spec/vectors/evolution/regenerate.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from morlog.logformat.avroschema import avro_to_arrow_schema
from morlog.logformat.blocks import META_FIELDS
from morlog.logformat.errors import UsageError
from morlog.writers.core.evolution import evolve

HERE = Path(__file__).parent


def _meta() -> list[dict[str, Any]]:
    return [{"name": n, "type": ["null", "string"], "doc": "", "default": None}
            for n in META_FIELDS]


def _opt(t: Any) -> list[Any]:
    return ["null", t]


TABLE = {"type": "record", "name": "trips_record", "namespace": "hoodie.trips", "fields": [
    *_meta(),
    {"name": "id", "type": "string"},
    {"name": "ts", "type": "long"},
    {"name": "n", "type": _opt("int"), "default": None},
    {"name": "loc", "type": _opt({"type": "record", "name": "loc", "namespace":
                                  "hoodie.trips.trips_record", "fields": [
                                      {"name": "lat", "type": _opt("float"),
                                       "default": None}]}), "default": None},
    {"name": "tag", "type": _opt("string"), "default": None},
]}


def _batch(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "record", "name": "batch", "namespace": "b", "fields": list(fields)}


_ID = {"name": "id", "type": "string"}
_TS = {"name": "ts", "type": "long"}
_N_INT = {"name": "n", "type": _opt("int"), "default": None}
_LOC = {"name": "loc", "type": _opt({"type": "record", "name": "loc", "namespace": "b",
                                     "fields": [{"name": "lat", "type": _opt("float"),
                                                 "default": None}]}), "default": None}
_TAG = {"name": "tag", "type": _opt("string"), "default": None}

CASES: dict[str, dict[str, Any]] = {
    "same-schema": {"batch": _batch(_ID, _TS, _N_INT, _LOC, _TAG)},
    "narrower-batch-type": {"batch": _batch(_ID, {"name": "ts", "type": "int"}, _N_INT, _LOC,
                                            _TAG)},
    "new-column-and-widened-int": {"batch": _batch(
        {"name": "fare", "type": _opt("double"), "default": None}, _ID, _TS,
        {"name": "n", "type": _opt("long"), "default": None}, _LOC, _TAG)},
    "new-struct-field-float-to-double": {"batch": _batch(_ID, _TS, _N_INT, {
        "name": "loc", "type": _opt({"type": "record", "name": "loc", "namespace": "b",
                                     "fields": [
                                         {"name": "lat", "type": _opt("double"),
                                          "default": None},
                                         {"name": "lon", "type": _opt("double"),
                                          "default": None}]}), "default": None}, _TAG)},
    "refused-string-into-int": {"column": "n", "batch": _batch(
        _ID, _TS, {"name": "n", "type": _opt("string"), "default": None}, _LOC, _TAG)},
    "refused-new-required-column": {"column": "req", "batch": _batch(
        _ID, _TS, _N_INT, _LOC, _TAG, {"name": "req", "type": "long"})},
    "refused-struct-into-scalar": {"column": "loc", "batch": _batch(
        _ID, _TS, _N_INT, {"name": "loc", "type": _opt("string"), "default": None}, _TAG)},
    "refused-struct-field-narrowed": {"column": "loc.lat", "batch": _batch(
        _ID, _TS, _N_INT, {"name": "loc", "type": _opt({
            "type": "record", "name": "loc", "namespace": "b", "fields": [
                {"name": "lat", "type": _opt("boolean"), "default": None}]}),
            "default": None}, _TAG)},
}


def main() -> None:
    out = {}
    for name, case in CASES.items():
        batch = avro_to_arrow_schema(case["batch"])
        entry: dict[str, Any] = {"table": TABLE, "batch": case["batch"]}
        try:
            got = evolve(TABLE, batch, meta_fields=set(META_FIELDS))
            entry["evolved"] = None if got is None else got[0]
        except UsageError as exc:
            column = case["column"]
            if repr(column) not in str(exc) or "Hudi" not in str(exc):
                raise SystemExit(f"{name}: the refusal does not name {column!r}: {exc}")
            entry["refused"] = column
        out[name] = entry
    (HERE / "cases.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
