"""Record keys of tables without meta fields (``hoodie.populate.meta.fields=false``).

Such a table's base files and data blocks still carry the five ``_hoodie_*`` columns (the
write schema is ``HoodieAvroUtils.addMetadataFields`` of the table schema), but they are null:
``HoodieAvroParquetWriter.writeAvroWithMetadata`` and ``HoodieAppendHandle
.populateMetadataFields`` fill them only when meta fields are populated (Spark's row-writer
bulk insert leaves empty strings there: ``HoodieDatasetBulkInsertHelper``). A reader derives
each record's key from the key fields, as Hudi's ``RecordContext.virtualKeyExtractor`` does:

- one record key field: the field's value as a string (no ``field:`` prefix, whatever the key
  generator); a null value is an error (``HoodieKeyException``);
- several: ``f1:v1,f2:v2`` with ``__null__`` / ``__empty__`` placeholders
  (``KeyGenerator.constructRecordKey``), the complex key generator's form.

Delete blocks keep the keys the writer's key generator made, as in any table.

:class:`VirtualKeys` stands where a key column name stands elsewhere (``KeyField``): readers
and the index recomputation ask :func:`key_array` for the keys of a decoded batch and
:func:`key_columns` for the columns that batch needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from .errors import ContentError
from .keygen import KeyGenError, KeyGenKind, KeyGenSpec


@dataclass(frozen=True)
class VirtualKeys:
    """The record key fields of a table without meta fields (dotted names for nested
    fields), in key order."""

    fields: tuple[str, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        """The top-level columns a batch must carry to derive its keys."""
        return tuple(dict.fromkeys(f.split(".")[0] for f in self.fields))

    def _spec(self) -> KeyGenSpec:
        return KeyGenSpec(kind=KeyGenKind.COMPLEX, key_fields=self.fields, partition_spec=(),
                          single_key_field_prefixed=len(self.fields) > 1)

    def keys(self, batch: pa.Table | pa.RecordBatch, *, path: str | None = None
             ) -> pa.Array:
        """The record key of every row of ``batch``, column-wise; a :class:`ContentError`
        for a row Hudi's reader cannot key (a null single key field, all key fields null or
        empty)."""
        missing = [c for c in self.columns if c not in batch.schema.names]
        if missing:
            raise ContentError(f"records lack the record key fields {missing} (the table "
                               "populates no meta fields)", path=path,
                               actual=batch.schema.names[:20])
        if len(self.fields) == 1 and "." not in self.fields[0]:
            col = batch.column(self.fields[0])
            if isinstance(col, pa.ChunkedArray):
                col = col.combine_chunks()
            if col.null_count:
                raise ContentError(f"a record has a null record key field {self.fields[0]!r}",
                                   path=path)
            if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                return col.cast(pa.string())  # empty strings are keys to Hudi's reader
        try:
            return self._spec().record_keys(batch)
        except KeyGenError as exc:
            raise ContentError(f"records cannot be keyed: {exc}", path=path) from None


#: how a batch's record keys are found: a key column, or derived from the key fields
KeyField = str | VirtualKeys


def key_columns(key_field: KeyField) -> tuple[str, ...]:
    """The columns a batch needs for its keys."""
    return key_field.columns if isinstance(key_field, VirtualKeys) else (key_field,)


def key_array(batch: pa.Table | pa.RecordBatch, key_field: KeyField, *,
              path: str | None = None) -> pa.Array:
    """The keys of ``batch`` as strings (a key column cast to strings, or derived)."""
    if isinstance(key_field, VirtualKeys):
        return key_field.keys(batch, path=path)
    if key_field not in batch.schema.names:
        raise ContentError(f"records have no key field {key_field!r}", path=path,
                           actual=batch.schema.names[:20])
    col = batch.column(key_field)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    return col.cast(pa.string())


__all__ = ["KeyField", "VirtualKeys", "key_array", "key_columns"]
