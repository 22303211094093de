"""Hudi's internal schema: the column-id schema of schema-on-read evolution (spec/table.md §7.8).

With ``hoodie.schema.on.read.enable`` Hudi keeps, beside the Avro schema, an *internal
schema* (``org.apache.hudi.internal.schema.InternalSchema``) in which every field, array
element and map key/value has an id that never changes: a rename keeps the id, a drop
removes it, an added column takes a new one (``max_column_id + 1``). A reader maps the
columns of a file written under an older version to the query's by id
(``InternalSchemaMerger``), so renames, drops, reorders and type changes read right.

This module is the codec, nothing else (no timeline, no files):

- :func:`parse` / :func:`to_json`: one schema as ``SerDeHelper.fromJson`` / ``toJson`` read
  and write it (hudi-common ``internal/schema/utils/SerDeHelper.java``): the commit metadata
  extra key ``latest_schema`` (``SerDeHelper.LATEST_SCHEMA``);
- :func:`parse_history` / :func:`history_json`: the ``{"schemas": [...]}`` history of a
  ``.hoodie/.schema/<instant>.schemacommit`` file, newest first
  (``SerDeHelper.parseSchemas`` / ``inheritSchemas``); :func:`search` picks the version of
  an instant (``InternalSchemaUtils.searchSchema``: that version, else the greatest before);
- :func:`from_avro`: the internal schema of an Avro record with Hudi's id assignment
  (``AvroInternalSchemaConverter.visitAvroSchemaToBuildType``: a record's own fields take
  consecutive ids first, the root's from 0, then its nested types in field order);
- :func:`to_avro`: the Avro record Hudi derives from it (``visitInternalSchemaToBuildAvroSchema``).

JSON layout (Jackson, no spaces): ``{"max_column_id":N,"version_id":V,"type":"record",
"fields":[{"id":I,"name":S,"optional":B,"type":T[,"doc":S]},...]}``; a primitive type is its
name (``int``, ``long``, ``string``, ``decimal(P, S)``, ``fixed[N]``, ``timestamp``...), a
nested record ``{"type":"record","fields":[...]}``, an array
``{"type":"array","element_id":I,"element":T,"element_optional":B}``, a map
``{"type":"map","key_id":I,"key":T,"value_id":I,"value":T,"value_optional":B}``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from morlog.logformat.errors import ContentError

__all__ = ["ArrayType", "Field", "InternalSchema", "MapType", "RecordType", "from_avro",
           "history_json", "parse", "parse_history", "reconcile", "search", "to_avro",
           "to_json"]

#: the primitive type names of ``Type.TypeID`` (lower case), as ``toJson`` writes them
PRIMITIVES = frozenset({
    "boolean", "int", "long", "float", "double", "date", "time", "timestamp", "string",
    "uuid", "binary", "time_millis", "timestamp_millis", "local_timestamp_millis",
    "local_timestamp_micros"})
_FIXED = re.compile(r"fixed\[(\d+)\]")
_DECIMAL = re.compile(r"decimal\((\d+),\s+(\d+)\)")


@dataclass(frozen=True)
class Field:
    id: int
    name: str
    optional: bool
    type: Type
    doc: str | None = None


@dataclass(frozen=True)
class RecordType:
    fields: tuple[Field, ...]

    def by_id(self) -> dict[int, Field]:
        return {f.id: f for f in self.fields}

    def by_name(self) -> dict[str, Field]:
        return {f.name: f for f in self.fields}


@dataclass(frozen=True)
class ArrayType:
    element_id: int
    element: Type
    element_optional: bool


@dataclass(frozen=True)
class MapType:
    key_id: int
    key: Type
    value_id: int
    value: Type
    value_optional: bool


#: a primitive (its name), or a nested type
Type: TypeAlias = "str | RecordType | ArrayType | MapType"


@dataclass(frozen=True)
class InternalSchema:
    record: RecordType
    #: the instant (as a number) of the commit that made this version (0: unversioned,
    #: ``InternalSchema.DEFAULT_VERSION_ID``)
    version_id: int = 0
    max_column_id: int = -1
    #: a name a reader of this module may keep for messages (not serialized)
    where: str | None = field(default=None, compare=False)

    @property
    def fields(self) -> tuple[Field, ...]:
        return self.record.fields

    def ids(self) -> dict[int, tuple[str, Type]]:
        """Every id (fields at any depth, array elements, map keys and values) -> (its
        dotted name, its type)."""
        out: dict[int, tuple[str, Type]] = {}
        _collect(self.record, "", out)
        return out


def _collect(t: Type, prefix: str, out: dict[int, tuple[str, Type]]) -> None:
    if isinstance(t, RecordType):
        for f in t.fields:
            name = f"{prefix}{f.name}"
            out[f.id] = (name, f.type)
            _collect(f.type, name + ".", out)
    elif isinstance(t, ArrayType):
        out[t.element_id] = (f"{prefix}element", t.element)
        _collect(t.element, f"{prefix}element.", out)
    elif isinstance(t, MapType):
        out[t.key_id] = (f"{prefix}key", t.key)
        out[t.value_id] = (f"{prefix}value", t.value)
        _collect(t.value, f"{prefix}value.", out)


def _max_id(record: RecordType) -> int:
    ids: dict[int, tuple[str, Type]] = {}
    _collect(record, "", ids)
    return max(ids, default=-1)


# --- JSON ---------------------------------------------------------------------------------


def _bad(what: str, where: str | None, actual: Any = None) -> ContentError:
    return ContentError(f"Hudi internal schema: {what}", path=where,
                        actual=None if actual is None else str(actual)[:200])


def _type_of(node: Any, where: str | None) -> Type:
    if isinstance(node, str):
        name = node.lower()
        if _FIXED.fullmatch(name) or _DECIMAL.fullmatch(name) or name in PRIMITIVES:
            return name
        raise _bad("unknown type name", where, node)
    if not isinstance(node, dict):
        raise _bad("a type is a name or an object", where, node)
    kind = node.get("type")
    try:
        if kind == "record":
            fields = []
            for f in node["fields"]:
                doc = f.get("doc")
                fields.append(Field(int(f["id"]), str(f["name"]), bool(f["optional"]),
                                    _type_of(f["type"], where),
                                    None if doc is None else str(doc)))
            return RecordType(tuple(fields))
        if kind == "array":
            return ArrayType(int(_get(node, "element_id")), _type_of(node["element"], where),
                             bool(node["element_optional"]))
        if kind == "map":
            return MapType(int(_get(node, "key_id")), _type_of(node["key"], where),
                           int(_get(node, "value_id")), _type_of(node["value"], where),
                           bool(node["value_optional"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise _bad(f"a {kind} lacks {exc}", where, node) from None
    raise _bad("unknown nested type", where, kind)


#: the ids' keys as released Hudi writes them (0.11.0 on: ``SerDeHelper``, since 1.x
#: ``HoodieSchemaSerDe``, "wire format keys ... do not adjust"); the hyphenated forms of the
#: code before its release (``version-id``, ``element-id``...) are read as well
_LEGACY = {"version_id": "version-id", "element_id": "element-id", "key_id": "key-id",
           "value_id": "value-id"}


def _get(node: dict[str, Any], key: str) -> Any:
    return node[key] if key in node else node[_LEGACY[key]]


def _schema_of(node: Any, where: str | None) -> InternalSchema:
    if not isinstance(node, dict) or node.get("type") != "record":
        raise _bad("a schema is a record object", where, node)
    record = _type_of(node, where)
    assert isinstance(record, RecordType)
    version = node.get("version_id", node.get(_LEGACY["version_id"]))
    top = node.get("max_column_id")
    try:
        return InternalSchema(record, 0 if version is None else int(version),
                              _max_id(record) if top is None else int(top), where)
    except (TypeError, ValueError):
        raise _bad("version_id and max_column_id are numbers", where, node) from None


def _load(text: str | bytes, where: str | None) -> Any:
    try:
        return json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _bad(f"not JSON ({exc})", where) from None


def parse(text: str | bytes, where: str | None = None) -> InternalSchema | None:
    """One internal schema (``SerDeHelper.fromJson``); None for an empty text (Hudi writes
    ``""`` for an empty schema). ``where``: the file it came from, for errors."""
    if not text or not (text.strip() if isinstance(text, str) else text.strip()):
        return None
    return _schema_of(_load(text, where), where)


def parse_history(text: str | bytes, where: str | None = None) -> dict[int, InternalSchema]:
    """version id -> schema of a history (``SerDeHelper.parseSchemas``)."""
    doc = _load(text, where)
    if not isinstance(doc, dict) or not isinstance(doc.get("schemas"), list):
        raise _bad('a history is {"schemas": [...]}', where, doc)
    out: dict[int, InternalSchema] = {}
    for node in doc["schemas"]:
        if not isinstance(node, dict) or ("version_id" not in node
                                          and _LEGACY["version_id"] not in node):
            raise _bad("a schema of a history has no version_id", where, node)
        s = _schema_of(node, where)
        out[s.version_id] = s
    return out


def search(history: dict[int, InternalSchema], version: int) -> InternalSchema | None:
    """The schema of ``version``, else of the greatest version before it
    (``InternalSchemaUtils.searchSchema``); None when every version is later."""
    if version in history:
        return history[version]
    before = [v for v in history if v < version]
    return history[max(before)] if before else None


def _type_json(t: Type) -> Any:
    if isinstance(t, str):
        return t
    if isinstance(t, RecordType):
        return _record_json(t, None, None)
    if isinstance(t, ArrayType):
        return {"type": "array", "element_id": t.element_id, "element": _type_json(t.element),
                "element_optional": t.element_optional}
    return {"type": "map", "key_id": t.key_id, "key": _type_json(t.key),
            "value_id": t.value_id, "value": _type_json(t.value),
            "value_optional": t.value_optional}


def _record_json(r: RecordType, top: int | None, version: int | None) -> dict[str, Any]:
    # the root always has both (Hudi's int and long fields); a nested record neither
    out: dict[str, Any] = {}
    if top is not None:
        out["max_column_id"] = top
    if version is not None:
        out["version_id"] = version
    out["type"] = "record"
    fields = []
    for f in r.fields:
        node: dict[str, Any] = {"id": f.id, "name": f.name, "optional": f.optional,
                                "type": _type_json(f.type)}
        if f.doc is not None:
            node["doc"] = f.doc
        fields.append(node)
    out["fields"] = fields
    return out


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def to_json(schema: InternalSchema) -> str:
    """``SerDeHelper.toJson(schema)``: the ``latest_schema`` text."""
    return _dumps(_record_json(schema.record, schema.max_column_id, schema.version_id))


def history_json(newest: InternalSchema, older: str | None) -> str:
    """``SerDeHelper.inheritSchemas``: the history text with ``newest`` put first."""
    if not older:
        return '{"schemas":[' + to_json(newest) + "]}"
    head = '{"schemas":['
    if not older.startswith(head):
        raise _bad("a history starts with {\"schemas\":[", None, older[:40])
    return head + to_json(newest) + "," + older[len(head):]


# --- Avro ---------------------------------------------------------------------------------


def _branch(schema: Any) -> tuple[Any, bool]:
    if isinstance(schema, list):
        rest = [b for b in schema if b != "null"]
        if len(rest) != 1:
            raise _bad("a union other than [null, T] has no internal type", None, schema)
        return rest[0], len(rest) != len(schema)
    return schema, schema == "null"


def _avro_primitive(s: Any) -> Type:
    if isinstance(s, dict):
        logical = s.get("logicalType")
        base = s.get("type")
        if logical == "decimal":
            return f"decimal({int(s['precision'])}, {int(s.get('scale', 0))})"
        table = {"date": "date", "time-millis": "time_millis", "time-micros": "time",
                 "timestamp-millis": "timestamp_millis", "timestamp-micros": "timestamp",
                 "local-timestamp-millis": "local_timestamp_millis",
                 "local-timestamp-micros": "local_timestamp_micros", "uuid": "uuid"}
        if logical in table:
            return table[logical]
        if base == "fixed":
            return f"fixed[{int(s['size'])}]"
        if base == "enum":
            return "string"
        return _avro_primitive(base)
    names = {"boolean": "boolean", "int": "int", "long": "long", "float": "float",
             "double": "double", "string": "string", "bytes": "binary"}
    if s in names:
        return names[s]
    raise _bad("an Avro type with no internal type", None, s)


def _visit(s: Any, next_id: list[int], root: bool) -> Type:
    if isinstance(s, list):
        return _visit(_branch(s)[0], next_id, False)
    kind = s.get("type") if isinstance(s, dict) else s
    if kind == "record":
        fields = s.get("fields", [])
        first = 0 if root else next_id[0]
        next_id[0] = first + len(fields)
        types = [_visit(f["type"], next_id, False) for f in fields]
        return RecordType(tuple(
            Field(first + i, f["name"], _branch(f["type"])[1], types[i], f.get("doc"))
            for i, f in enumerate(fields)))
    if kind == "array":
        eid = next_id[0]
        next_id[0] = eid + 1
        items = s["items"]
        return ArrayType(eid, _visit(items, next_id, False), _branch(items)[1])
    if kind == "map":
        kid = next_id[0]
        next_id[0] = kid + 2
        values = s["values"]
        return MapType(kid, "string", kid + 1, _visit(values, next_id, False),
                       _branch(values)[1])
    if isinstance(s, dict) and isinstance(kind, (dict, list)):
        return _visit(kind, next_id, root)
    return _avro_primitive(s)


def from_avro(avro: dict[str, Any] | str, version_id: int = 0) -> InternalSchema:
    """The internal schema of an Avro record (``AvroInternalSchemaConverter.convert``)."""
    doc = json.loads(avro) if isinstance(avro, str) else avro
    record = _visit(doc, [1], True)
    if not isinstance(record, RecordType):
        raise _bad("an internal schema is made of an Avro record", None, doc)
    return InternalSchema(record, version_id, _max_id(record))


def _avro_of(t: Type, name: str) -> Any:
    if isinstance(t, RecordType):
        return {"type": "record", "name": name, "fields": [
            _avro_field(f, f"{name}_{f.name}") for f in t.fields]}
    if isinstance(t, ArrayType):
        item = _avro_of(t.element, name)
        return {"type": "array", "items": ["null", item] if t.element_optional else item}
    if isinstance(t, MapType):
        value = _avro_of(t.value, name)
        return {"type": "map", "values": ["null", value] if t.value_optional else value}
    m = _DECIMAL.fullmatch(t)
    if m:
        p, sc = int(m.group(1)), int(m.group(2))
        size = 1
        while 2.0 ** (8 * size - 1) < 10.0 ** p:
            size += 1
        return {"type": "fixed", "name": f"{name}_fixed", "size": size,
                "logicalType": "decimal", "precision": p, "scale": sc}
    m = _FIXED.fullmatch(t)
    if m:
        return {"type": "fixed", "name": f"{name}_fixed", "size": int(m.group(1))}
    logical = {"date": ("int", "date"), "time": ("long", "time-micros"),
               "time_millis": ("int", "time-millis"),
               "timestamp": ("long", "timestamp-micros"),
               "timestamp_millis": ("long", "timestamp-millis"),
               "local_timestamp_micros": ("long", "local-timestamp-micros"),
               "local_timestamp_millis": ("long", "local-timestamp-millis")}
    if t in logical:
        base, lt = logical[t]
        return {"type": base, "logicalType": lt}
    if t == "uuid":
        return {"type": "fixed", "name": f"{name}_fixed", "size": 16, "logicalType": "uuid"}
    return {"binary": "bytes"}.get(t, t)


def _avro_field(f: Field, name: str) -> dict[str, Any]:
    t = _avro_of(f.type, name)
    out: dict[str, Any] = {"name": f.name, "type": ["null", t] if f.optional else t}
    if f.doc is not None:
        out["doc"] = f.doc
    if f.optional:
        out["default"] = None
    return out


def to_avro(schema: InternalSchema, record_name: str, namespace: str | None = None
            ) -> dict[str, Any]:
    """The Avro record of ``schema`` (``AvroInternalSchemaConverter.convert(schema, name)``:
    optional fields ``["null", T]`` with default null, nested record names
    ``<record>_<field>``, decimals as fixed of the fewest bytes)."""
    out = _avro_of(schema.record, record_name)
    if namespace:
        out = {"type": "record", "name": record_name, "namespace": namespace,
               "fields": out["fields"]}
    return dict(out)


# --- a write's schema into the internal schema ------------------------------------------


def _internal_of(avro_type: Any, counter: list[int]) -> Type:
    """The internal type of a new field's Avro type, nested ids taken after ``counter``."""
    next_id = [counter[0] + 1]
    got = _visit(avro_type, next_id, False)
    counter[0] = next_id[0] - 1
    return got


def _merge_record(record: RecordType, avro: dict[str, Any], counter: list[int]) -> RecordType:
    by_name = {f.name: i for i, f in enumerate(record.fields)}
    fields = list(record.fields)
    for af in avro.get("fields", []):
        branch, optional = _branch(af["type"])
        kind = branch.get("type") if isinstance(branch, dict) else branch
        if af["name"] in by_name:
            i = by_name[af["name"]]
            f = fields[i]
            if isinstance(f.type, RecordType) and kind == "record":
                t: Type = _merge_record(f.type, branch, counter)
            elif isinstance(f.type, str) and kind not in ("record", "array", "map"):
                t = _avro_primitive(branch)  # a type change (a promotion the write made)
            else:
                t = f.type
            if t != f.type:
                fields[i] = Field(f.id, f.name, f.optional, t, f.doc)
            continue
        counter[0] += 1
        fid = counter[0]
        t = _internal_of(branch, counter)
        fields.append(Field(fid, af["name"], True, t, af.get("doc")))
    return RecordType(tuple(fields))


def reconcile(schema: InternalSchema, avro: dict[str, Any] | str) -> InternalSchema:
    """``schema`` after a write whose Avro schema (meta fields included) is ``avro``, as
    ``AvroSchemaEvolutionUtils.reconcileSchema`` makes it: a column (or struct field) the
    internal schema lacks is added, optional, with the next ids (``max_column_id + 1``...); a
    primitive type the write changed (a promotion) is updated in place, its id kept; columns
    the write lacks are kept. ``schema`` itself (its version) when nothing changes."""
    doc = json.loads(avro) if isinstance(avro, str) else avro
    counter = [schema.max_column_id]
    record = _merge_record(schema.record, doc, counter)
    if record == schema.record:
        return schema
    return InternalSchema(record, schema.version_id, counter[0], schema.where)
