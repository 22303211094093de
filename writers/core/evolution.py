"""How a batch's schema evolves the table's schema on write: Hudi's rules with its defaults.

Hudi's Spark writer deduces the writer schema from the batch's and the table's latest
(``HoodieSchemaUtils.deduceWriterSchema``, hudi-spark-common): the batch schema is first
*canonicalized* against the table's (``AvroSchemaEvolutionUtils.reconcileSchemaRequirements``:
a column keeps the table's nullability, a batch type that promotes to the table's type takes
the table's type, columns take the table's order, new ones after), then checked to be a valid
evolution of the table's (``HoodieSchemaCompatibility.checkValidEvolution``: every record the
table holds reads under the new schema). The result is the schema the commit records
(``extraMetadata.schema``), which readers take as the table's latest
(``TableSchemaResolver``); ``hoodie.table.create.schema`` keeps the schema the table was
created with.

What that gives, and what :func:`evolve` does:

- a batch column the table lacks is a new column, appended after the table's columns (in
  the batch's order); a new field of a struct column is appended to that struct's fields.
  It must be nullable (records written before have no value for it: Avro's resolution
  needs a default, and Hudi's new fields default to null);
- a batch column whose type promotes to the table column's type
  (:func:`morlog.writers.core.promotion.promotes`) is converted to the table's type;
  a table column whose type promotes to the batch's type widens to the batch's type
  (``int -> long`` and so on: the table's older records read cast);
- a new column the batch declares not nullable is refused, unless
  ``hoodie.datasource.write.new.columns.nullable`` (Hudi 0.14.0's
  ``HoodieCommonConfig.MAKE_NEW_COLUMNS_NULLABLE``, default false) or
  ``hoodie.write.set.null.for.missing.columns`` (the key Hudi 0.14.1+ folded it into:
  ``AvroSchemaEvolutionUtils.reconcileSchema`` adds every new column as optional) is
  true: then it is added as nullable;
- a table column the batch lacks follows ``hoodie.write.set.null.for.missing.columns``
  (refused unless set); with ``hoodie.datasource.write.reconcile.schema`` the table's
  schema wins for it (Hudi's legacy reconciliation keeps the wider schema,
  ``HoodieSchemaUtils.reconcileSchemasLegacy``) and it is written NULL;
- anything else (a narrowing, a string into a number, a non-nullable new column, a struct
  into a scalar) is a :class:`~morlog.logformat.errors.UsageError` naming the column (its
  dotted path for nested fields) and the rule, raised before anything is written.

Only the schema is computed here (spec/table.md §7.7); the writer (``MorTable.validate``)
adopts it for its next commit.
"""

from __future__ import annotations

import copy
from typing import Any

import pyarrow as pa

import morlog.config as conf
from morlog.logformat.avroschema import arrow_type_to_avro, avro_to_arrow_schema
from morlog.logformat.errors import UsageError
from morlog.writers.core.promotion import promotes

__all__ = ["evolve"]

NEW_COLUMNS_NULLABLE = conf.NEW_COLUMNS_NULLABLE

_RULE = ("Hudi evolves a table's schema only by new nullable columns (top level or struct "
         "fields) and type promotions (int -> long -> float -> double, string <-> bytes, "
         "wider decimals); HoodieSchemaCompatibility.checkValidEvolution")


def _branch(avro_type: Any) -> tuple[Any, bool]:
    """The non-null branch of an Avro field type and whether it is nullable."""
    if isinstance(avro_type, list):
        rest = [b for b in avro_type if b != "null"]
        return (rest[0] if len(rest) == 1 else avro_type), "null" in avro_type
    return avro_type, False


def _rewrap(avro_type: Any, branch: Any) -> Any:
    """``avro_type`` with its non-null branch replaced by ``branch`` (null kept first)."""
    if isinstance(avro_type, list):
        return ["null", branch] if "null" in avro_type else [branch]
    return branch


def _new_field(f: pa.Field, path: str, namespace: str, where: str | None,
               state: dict[str, bool]) -> dict[str, Any]:
    if not f.nullable and not state.get("nullable"):
        raise UsageError(f"new column {path!r} is not nullable: the records the table holds "
                         "have no value for it (" + _RULE + "); make it nullable, or set "
                         f"{NEW_COLUMNS_NULLABLE}=true to add it as nullable",
                         path=where)
    typ = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
    try:
        t = arrow_type_to_avro(typ, f.name, namespace)
    except UsageError as exc:
        raise UsageError(f"new column {path!r}: {exc.args[0] if exc.args else exc}",
                         path=where) from None
    return {"name": f.name, "type": ["null", t], "default": None}


def _merge(path: str, avro_type: Any, table_t: pa.DataType, batch_t: pa.DataType,
           namespace: str, state: dict[str, bool], where: str | None) -> Any:
    """The table field's Avro type after the batch's type ``batch_t`` is written into it."""
    if batch_t == table_t or pa.types.is_null(batch_t):
        return avro_type
    if pa.types.is_dictionary(batch_t):
        return _merge(path, avro_type, table_t, batch_t.value_type, namespace, state, where)
    branch, _ = _branch(avro_type)
    if pa.types.is_struct(table_t) and pa.types.is_struct(batch_t) and isinstance(
            branch, dict) and branch.get("type") == "record":
        record = dict(branch)
        ns = f"{record.get('namespace') or namespace}.{record.get('name', '')}"
        fields = [dict(f) for f in record.get("fields", [])]
        by_name = {f["name"]: i for i, f in enumerate(fields)}
        batch_names = {batch_t.field(i).name for i in range(batch_t.num_fields)}
        for i in range(table_t.num_fields):
            tf = table_t.field(i)
            if tf.name not in batch_names and not tf.nullable:
                raise UsageError(f"struct field {path}.{tf.name} is missing from the batch "
                                 "and not nullable in the table (" + _RULE + ")", path=where)
        for i in range(batch_t.num_fields):
            bf = batch_t.field(i)
            sub = f"{path}.{bf.name}"
            if bf.name in by_name:
                j = by_name[bf.name]
                fields[j]["type"] = _merge(sub, fields[j]["type"], table_t.field(bf.name).type,
                                           bf.type, ns, state, where)
            else:
                fields.append(_new_field(bf, sub, ns, where, state))
                state["changed"] = True
        record["fields"] = fields
        return _rewrap(avro_type, record)
    if promotes(batch_t, table_t):
        return avro_type  # the batch's values converted to the table's type
    if promotes(table_t, batch_t):
        try:
            widened = arrow_type_to_avro(batch_t, path.rsplit(".", 1)[-1], namespace)
        except UsageError as exc:
            raise UsageError(f"column {path!r}: {exc.args[0] if exc.args else exc}",
                             path=where) from None
        state["changed"] = True
        return _rewrap(avro_type, widened)
    raise UsageError(f"column {path!r} is {batch_t} in the batch and {table_t} in the table: "
                     "neither promotes to the other (" + _RULE + "); convert the column "
                     "before writing", path=where)


def evolve(avro_schema: dict[str, Any], batch: pa.Schema, *, meta_fields: frozenset[str]
           | set[str] = frozenset(), where: str | None = None,
           new_columns_nullable: bool = False) -> tuple[dict[str, Any], pa.Schema] | None:
    """The table's write schema (``avro_schema``: an Avro record, meta fields included)
    evolved by a batch of schema ``batch``, with its Arrow form; None when the batch leaves
    it as it is. A :class:`UsageError` naming the column when Hudi refuses the change.
    Columns of ``batch`` named in ``meta_fields`` are ignored. ``new_columns_nullable``
    (``hoodie.datasource.write.new.columns.nullable``, or
    ``hoodie.write.set.null.for.missing.columns``): a new column the batch declares not
    nullable is added as nullable instead of refused."""
    table = avro_to_arrow_schema(avro_schema)
    fields = [dict(f) for f in copy.deepcopy(avro_schema.get("fields", []))]
    by_name = {f["name"]: i for i, f in enumerate(fields)}
    namespace = f"{avro_schema.get('namespace') or 'hoodie'}.{avro_schema.get('name', '')}"
    state = {"changed": False, "nullable": new_columns_nullable}
    for bf in batch:
        if bf.name in meta_fields:
            continue
        if bf.name in by_name:
            j = by_name[bf.name]
            fields[j]["type"] = _merge(bf.name, fields[j]["type"], table.field(bf.name).type,
                                       bf.type, namespace, state, where)
        else:
            fields.append(_new_field(bf, bf.name, namespace, where, state))
            by_name[bf.name] = len(fields) - 1
            state["changed"] = True
    if not state["changed"]:
        return None
    out = {**avro_schema, "fields": fields}
    return out, avro_to_arrow_schema(out)
