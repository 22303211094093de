"""Reading a table that uses Hudi's schema-on-read evolution (spec/table.md §7.8).

A table written with ``hoodie.schema.on.read.enable=true`` records Hudi's internal schema
(:mod:`morlog.logformat.internal_schema`: column ids) in the commit metadata extra key
``latest_schema`` of its commits and keeps the history in
``.hoodie/.schema/<instant>.schemacommit`` (``FileBasedInternalSchemaStorageManager``).
``ALTER TABLE`` renames, drops, reorders and retypes columns by an empty commit that records
the new version (Spark's ``AlterTableCommand.commitWithSchema``); data files are never
rewritten. A reader maps every file's columns to the query's by id.

The schema of a file written by instant ``T`` (base file: its name's instant; log block:
its ``INSTANT_TIME`` header) is found as ``InternalSchemaCache.getInternalSchemaByVersionId``
finds it: the ``latest_schema`` of the completed commit ``T``; else the history's version of
``T`` or the greatest before it (``InternalSchemaUtils.searchSchema``); else (``T`` wrote
before the table had an internal schema) the internal schema of ``T``'s Avro schema, meta
fields first, with Hudi's id assignment (``AvroInternalSchemaConverter.convert``), which is
how the first version was made. The query schema is the latest version (a snapshot) or
the version of ``as_of`` (time travel).

:meth:`SchemaOnRead.conform` gives a file's rows under the query schema: each query column
(and struct field, at any depth, and a list's struct elements) takes the file's column of
the same id, whatever its name there, cast to the query's type; a query column the file
lacks is absent (the merge fills it NULL); a file column whose id the query lacks (dropped)
is gone, even when a later column took its name.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from morlog.logformat import internal_schema as isc
from morlog.logformat.blocks import META_FIELDS
from morlog.logformat.errors import ContentError, FormatError, UnsupportedVersionError

if TYPE_CHECKING:
    from .table import Table

__all__ = ["LATEST_SCHEMA", "SCHEMA_DIR", "SchemaOnRead", "history_text"]

#: ``SerDeHelper.LATEST_SCHEMA``: the commit metadata extra key of the internal schema
LATEST_SCHEMA = "latest_schema"
#: ``FileBasedInternalSchemaStorageManager.SCHEMA_NAME`` (under ``.hoodie``)
SCHEMA_DIR = ".schema"
#: the completed schema-commit file suffix (``HoodieTimeline.SCHEMA_COMMIT_ACTION``)
SCHEMA_COMMIT = "schemacommit"
#: the actions of Hudi's commits timeline (``getCommitsTimeline``)
_COMMITS = frozenset({"commit", "deltacommit", "replacecommit"})


def history_text(table: Table) -> tuple[str, str] | None:
    """The text and path of the history file Hudi reads
    (``getHistorySchemaStrByGivenValidCommits``): the greatest ``<instant>.schemacommit``
    whose instant is a completed commit; None when there is none."""
    st = table.storage
    directory = st.join(table.path, ".hoodie", SCHEMA_DIR)
    if SCHEMA_DIR not in st.listdir(st.join(table.path, ".hoodie")):
        return None
    done = {i.requested for i in table.timeline.completed(_COMMITS)}
    # "<instant>.schemacommit" (a name with a completion time, "<instant>_<time>", is read
    # by its instant too); the requested and inflight files are empty
    names = sorted((n for n in st.listdir(directory)
                    if n.endswith("." + SCHEMA_COMMIT)
                    and n.split(".")[0].split("_")[0] in done),
                   key=lambda n: n.split(".")[0].split("_")[0])
    if not names:
        return None
    path = st.join(directory, names[-1])
    return st.read(path).decode("utf-8", "replace"), path


class SchemaOnRead:
    """The internal schemas of one table and the query schema of one read."""

    def __init__(self, table: Table, latest: isc.InternalSchema, history: dict[
            int, isc.InternalSchema], extras: dict[str, dict[str, Any]]) -> None:
        self.table = table
        self.history = history
        #: the completed commits' extra metadata, by instant
        self._extras = extras
        self.latest = latest
        self._cache: dict[str, isc.InternalSchema | None] = {}

    @classmethod
    def of(cls, table: Table) -> SchemaOnRead | None:
        """The table's internal schemas; None when it has none (a table without
        schema-on-read evolution)."""
        tl = table.timeline
        extras: dict[str, dict[str, Any]] = {}
        latest: isc.InternalSchema | None = None
        for inst in tl.completed(_COMMITS):
            try:
                md = tl.metadata(inst)
            except (FormatError, UnsupportedVersionError):
                continue
            extra = md.get("extraMetadata")
            if isinstance(extra, dict):
                extras[inst.requested] = extra
        got = history_text(table)
        history = isc.parse_history(got[0], got[1]) if got else {}
        for t in sorted(extras, reverse=True):  # TableSchemaResolver: the latest commit's
            text = extras[t].get(LATEST_SCHEMA)
            if isinstance(text, str) and text:
                latest = isc.parse(text, table.storage.join(tl.directory, t))
                break
        if latest is None and history:
            latest = history[max(history)]
        if latest is None:
            return None
        return cls(table, latest, history, extras)

    def at(self, instant: str | None) -> isc.InternalSchema | None:
        """The internal schema files written by ``instant`` were written under (module
        docstring); None: unknown (read by name)."""
        if instant is None:
            return None
        if instant in self._cache:
            return self._cache[instant]
        got: isc.InternalSchema | None = None
        extra = self._extras.get(instant, {})
        text = extra.get(LATEST_SCHEMA)
        if isinstance(text, str) and text:
            got = isc.parse(text, instant)
        if got is None and self.history and instant.isdigit():
            got = isc.search(self.history, int(instant))
        if got is None:
            avro = extra.get("schema")
            if isinstance(avro, str) and avro.strip():
                try:
                    doc = json.loads(avro)
                    names = {f.get("name") for f in doc.get("fields", [])}
                    meta = [{"name": n, "type": ["null", "string"], "default": None}
                            for n in META_FIELDS if n not in names]
                    got = isc.from_avro({**doc, "fields": meta + list(doc["fields"])})
                except (ValueError, KeyError, TypeError, AttributeError, ContentError):
                    got = None
        self._cache[instant] = got
        return got

    def query(self, as_of: str | None) -> isc.InternalSchema:
        """The schema a read returns: the latest version, or that of ``as_of``."""
        if as_of is None:
            return self.latest
        if as_of in self._extras:
            got = self.at(as_of)
            if got is not None:
                return got
        if self.history and as_of.isdigit():
            found = isc.search(self.history, int(as_of))
            if found is not None:
                return found
        return self.latest

    def stable(self) -> bool:
        """Whether every version gives every column id the same name and type (statistics
        of any file then name the columns a predicate names: pruning stays sound)."""
        seen: dict[int, tuple[str, Any]] = {}
        names: dict[str, int] = {}
        for s in [self.latest, *self.history.values()]:
            for i, (name, typ) in s.ids().items():
                if seen.setdefault(i, (name, typ)) != (name, typ):
                    return False
                if names.setdefault(name, i) != i:
                    return False
        return True

    def file_columns(self, instant: str | None, query: isc.InternalSchema,
                     names: Sequence[str]) -> list[str]:
        """The columns to read from a file of ``instant`` for the query columns ``names``
        (their names in that file)."""
        file = self.at(instant)
        if file is None:
            return list(names)
        qf = query.record.by_name()
        ff = file.record.by_id()
        out = []
        for n in names:
            f = qf.get(n)
            if f is None:
                out.append(n)  # not an internal-schema column (read by name)
            elif f.id in ff:
                out.append(ff[f.id].name)
        return list(dict.fromkeys(out))

    def conform(self, t: pa.Table, instant: str | None, query: isc.InternalSchema,
                target: pa.Schema, where: str | None = None) -> pa.Table:
        """``t`` (a file's rows, written by ``instant``) under the query schema: its
        columns renamed, dropped and cast by id; columns it lacks are left out."""
        file = self.at(instant)
        fields = []
        cols = []
        qf = query.record.by_name()
        by_id = file.record.by_id() if file is not None else {}
        present = set(t.column_names)
        for tf in target:
            q = qf.get(tf.name)
            if q is None or file is None:
                src = tf.name if tf.name in present else None
                ftype: isc.Type | None = q.type if q is not None else None
            else:
                f = by_id.get(q.id)
                src = f.name if f is not None and f.name in present else None
                ftype = f.type if f is not None else None
            if src is None:
                continue
            col = t.column(src)
            qtype = q.type if q is not None else None
            cols.append(_project(col, ftype, qtype, tf.type, f"{where}: {tf.name}"))
            fields.append(tf)
        # columns the merge adds (key, sequence) are kept as they are
        for name in t.column_names:
            if name.startswith("__morlog_"):
                cols.append(t.column(name))
                fields.append(t.schema.field(name))
        return pa.Table.from_arrays(cols, schema=pa.schema(fields))


def _project(col: pa.ChunkedArray | pa.Array, ftype: isc.Type | None,
             qtype: isc.Type | None, target: pa.DataType, where: str
             ) -> pa.ChunkedArray | pa.Array:
    """``col`` under the query's type: as it is when nothing differs (no copy), cast when
    only the type does, rebuilt chunk by chunk when nested fields map by id."""
    nested = isinstance(qtype, (isc.RecordType, isc.ArrayType))
    if col.type == target and (not nested or ftype == qtype):
        return col
    if not nested:
        return _proj(col, ftype, qtype, target, where)  # a cast, chunked or not
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    return pa.chunked_array([_proj(c, ftype, qtype, target, where) for c in chunks],
                            type=target)


def _proj(arr: Any, ftype: isc.Type | None, qtype: isc.Type | None,
          target: pa.DataType, where: str) -> Any:
    if (isinstance(ftype, isc.RecordType) and isinstance(qtype, isc.RecordType)
            and pa.types.is_struct(arr.type) and pa.types.is_struct(target)):
        by_id = ftype.by_id()
        qnames = qtype.by_name()
        names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
        children = []
        for i in range(target.num_fields):
            tf = target.field(i)
            q = qnames.get(tf.name)
            f = by_id.get(q.id) if q is not None else None
            if f is not None and f.name in names:
                child = arr.field(names.index(f.name))
                children.append(_proj(child, f.type, q.type if q else None, tf.type,
                                      f"{where}.{tf.name}"))
            else:
                children.append(pa.nulls(len(arr), tf.type))
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if (isinstance(ftype, isc.ArrayType) and isinstance(qtype, isc.ArrayType)
            and (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type))
            and (pa.types.is_list(target) or pa.types.is_large_list(target))
            and ftype.element_id == qtype.element_id):
        values = _proj(arr.values, ftype.element, qtype.element, target.value_type,
                       f"{where}.element")
        mask = arr.is_null() if arr.null_count else None
        cls = pa.LargeListArray if pa.types.is_large_list(target) else pa.ListArray
        offsets = arr.offsets
        if pa.types.is_large_list(target) != pa.types.is_large_list(arr.type):
            offsets = offsets.cast(pa.int64() if pa.types.is_large_list(target)
                                   else pa.int32())
        return cls.from_arrays(offsets, values, type=target, mask=mask)
    if arr.type == target:
        return arr
    try:
        return pc.cast(arr, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise ContentError(f"a column written as {arr.type} does not read as {target} "
                           f"under the table's internal schema: {exc}", path=where) from None


class Reading:
    """One read's mapping of files to the query schema (``MergeSpec.evolve``)."""

    def __init__(self, sor: SchemaOnRead, query: isc.InternalSchema,
                 target: pa.Schema) -> None:
        self.sor = sor
        self.query = query
        #: the Arrow schema of the query (meta fields first)
        self.target = target

    def columns(self, instant: str | None, names: Sequence[str]) -> list[str]:
        return self.sor.file_columns(instant, self.query, names)

    def apply(self, t: pa.Table, instant: str | None, where: str | None = None) -> pa.Table:
        return self.sor.conform(t, instant, self.query, self.target, where)
