"""The ``record_index`` partition's HFILE_DATA content held column-wise (spec/mdt.md §7
step 3, §14 step 4).

A record-index cell maps a record key to the Avro encoding of its ``HoodieMetadataRecord``
(type 5) with the key field written as ``""`` (the cell's row holds the key). Every other
field of such a record is the same for every key except ``recordIndexMetadata``, which
depends only on the key's (partition, file id) and the commit's instant. So the value of a
cell is a function of its location: a commit's cells take as many distinct values as it has
distinct (partition, file id) pairs (the file groups it wrote), not one per key.

:func:`encode_record_index_hfile` therefore encodes one record per distinct location, with
the same fastavro call, schema and record as the per-record path
(:func:`~morlog.logformat.hfile.content.encode_hfile_records` of
:func:`~morlog.logformat.mdt_records.record_index_record`, which stays the reference), gives
every key its location's value with one Arrow ``take``, sorts the cells by their UTF-8 key
bytes with ``pyarrow.compute.sort_indices`` and lays them out with
:func:`~morlog.logformat.hfile.codec.encode_hfile` of Arrow arrays: the same bytes, with no Python
object per key. :func:`record_index_locations` is the inverse for a lookup's hits: each
distinct value is decoded once (fastavro, with the reference path's typed errors) and
spread to the hits by its dictionary code.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastavro
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from morlog.logformat.avro_content import parse_schema
from morlog.logformat.errors import ContentError, MorlogError, UsageError
from morlog.logformat.hfile.codec import (
    DEFAULT_BLOCK_SIZE,
    FI_SCHEMA,
    HUDI_NATIVE,
    Codec,
    HFileStyle,
    encode_hfile,
)
from morlog.logformat.mdt_records import record_index_file_id, record_index_record

#: the record key field of the metadata table (``HoodieAvroHFileReader.KEY_FIELD_NAME``)
MDT_KEY_FIELD = "key"


@dataclass(frozen=True)
class RecordIndexEntries:
    """The ``record_index`` entries of one commit, column-wise: key ``keys[i]`` lives in file
    ``file_ids[i]`` of partition ``partitions[i]`` (string arrays without nulls), written at
    ``instant_millis`` (``HoodieRecordIndexInfo.instantTime``)."""

    keys: pa.Array
    partitions: pa.Array
    file_ids: pa.Array
    instant_millis: int

    def __post_init__(self) -> None:
        n = len(self.keys)
        if len(self.partitions) != n or len(self.file_ids) != n:
            raise UsageError("one partition and file id per record index key", expected=n,
                             actual=(len(self.partitions), len(self.file_ids)))
        if self.keys.null_count or self.partitions.null_count or self.file_ids.null_count:
            raise UsageError("record index keys, partitions and file ids must not be null")

    @classmethod
    def empty(cls, instant_millis: int = 0) -> RecordIndexEntries:
        e = pa.array([], pa.string())
        return cls(e, e, e, instant_millis)

    def __len__(self) -> int:
        return len(self.keys)

    def take(self, rows: npt.NDArray[np.int64]) -> RecordIndexEntries:
        idx = pa.array(rows, pa.int64())
        return RecordIndexEntries(self.keys.take(idx), self.partitions.take(idx),
                                  self.file_ids.take(idx), self.instant_millis)

    def records(self) -> list[dict[str, Any]]:
        """The per-record form (``record_index_record`` dicts): the reference path's input."""
        return [record_index_record(k, p, f, self.instant_millis) for k, p, f in zip(
            self.keys.to_pylist(), self.partitions.to_pylist(), self.file_ids.to_pylist(),
            strict=True)]


def _schema_text(schema: str | dict[str, Any]) -> str:
    return schema if isinstance(schema, str) else json.dumps(schema, separators=(",", ":"))


@lru_cache(maxsize=16)
def _parsed(schema: str) -> Any:
    """The parsed schema of a SCHEMA text (one MDT has one or two: parsed once each)."""
    return parse_schema(schema)


def location_codes(partitions: pa.Array, file_ids: pa.Array
                   ) -> tuple[npt.NDArray[np.int64], list[tuple[str, str]]]:
    """A code per row and the distinct (partition, file id) pairs the codes index, in order
    of first appearance (one Python tuple per distinct pair, none per row)."""
    pd = pc.dictionary_encode(partitions.cast(pa.string()))
    fd = pc.dictionary_encode(file_ids.cast(pa.string()))
    pi = pd.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    fi = fd.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    width = max(len(fd.dictionary), 1)
    distinct, first, inverse = np.unique(pi * width + fi, return_index=True,
                                         return_inverse=True)
    by_first = np.argsort(first)  # distinct pairs in order of first appearance
    rank = np.empty_like(by_first)
    rank[by_first] = np.arange(by_first.size)
    pnames = pd.dictionary.to_pylist()
    fnames = fd.dictionary.to_pylist()
    pairs = [(pnames[c // width], fnames[c % width]) for c in distinct[by_first].tolist()]
    return rank[inverse.reshape(-1)].astype(np.int64), pairs


def record_index_values(entries: RecordIndexEntries, schema: str | dict[str, Any], *,
                        key_field: str = MDT_KEY_FIELD) -> pa.Array:
    """The HFile cell value of every entry (``large_binary``, in entry order): the Avro
    encoding of its ``record_index`` record with ``key_field`` ``""``, made once per distinct
    (partition, file id) with the reference path's fastavro call."""
    parsed = _parsed(_schema_text(schema))
    codes, pairs = location_codes(entries.partitions, entries.file_ids)
    encoded = []
    for part, fid in pairs:  # one Avro encoding per file group written, not per key
        rec = record_index_record("", part, fid, entries.instant_millis)
        buf = io.BytesIO()
        try:
            fastavro.schemaless_writer(buf, parsed, {**rec, key_field: ""})
        except Exception as exc:
            raise UsageError(f"record does not encode with the schema: {exc}") from None
        encoded.append(buf.getvalue())
    return pa.array(encoded, pa.large_binary()).take(pa.array(codes, pa.int64()))


def encode_record_index_hfile(entries: RecordIndexEntries, schema: str | dict[str, Any], *,
                              key_field: str = MDT_KEY_FIELD, style: HFileStyle = HUDI_NATIVE,
                              codec: Codec = Codec.GZ, block_size: int = DEFAULT_BLOCK_SIZE,
                              create_time_ms: int = 0) -> bytes:
    """HFILE_DATA content of ``entries``: the bytes of
    ``encode_hfile_records(entries.records(), schema, ...)`` (cells sorted by UTF-8 key
    bytes, keys unique: a duplicate raises the same :class:`UsageError`), column-wise."""
    text = _schema_text(schema)
    parsed = _parsed(text)
    if key_field not in {f["name"] for f in parsed["fields"]}:
        raise UsageError(f"key field {key_field!r} is not in the schema")
    values = record_index_values(entries, text, key_field=key_field)
    keys = entries.keys.cast(pa.string()).cast(pa.large_binary())
    order = pc.sort_indices(keys)  # stable, unsigned byte order: the reference's sort
    return encode_hfile(keys.take(order), values.take(order),
                               file_info={FI_SCHEMA: text.encode("utf-8")}, codec=codec,
                               style=style, block_size=block_size,
                               create_time_ms=create_time_ms)


def _decode_location(value: bytes, parsed: Any, key: Any, where: str | None
                     ) -> tuple[str, str]:
    """(partition, file id) of one record-index cell value (fastavro), or ContentError."""
    buf = io.BytesIO(value)
    try:
        rec = fastavro.schemaless_reader(buf, parsed, None)
    except Exception as exc:  # fastavro raises many types on hostile bytes
        raise ContentError(f"record_index record does not decode: {exc}", path=where) from None
    info = rec.get("recordIndexMetadata") if isinstance(rec, dict) else None
    if not isinstance(info, dict):
        raise ContentError("record_index record without recordIndexMetadata", path=where,
                           actual=key)
    try:
        return str(info["partitionName"]), record_index_file_id(info)
    except (KeyError, TypeError, ValueError) as exc:
        raise ContentError(f"record_index entry does not name a file: {exc}",
                           path=where) from None


def record_index_locations(values: pa.Array, keys: pa.Array, schema: str, *,
                           where: str | None = None) -> tuple[pa.Array, pa.Array]:
    """(partition, file id) string arrays of record-index cell ``values`` (binary; ``keys``
    their cells' rows, named in errors): each distinct value decoded once, as the reference
    path decodes every value (fastavro; a value that does not decode, lacks
    ``recordIndexMetadata`` or names no file raises :class:`ContentError`)."""
    n = len(values)
    if n == 0:
        e = pa.array([], pa.string())
        return e, e
    if not schema:
        raise ContentError("record_index HFile has no schema", path=where)
    try:
        parsed = _parsed(schema)
    except MorlogError as exc:
        raise ContentError(f"record_index schema does not parse: {exc.message}",
                           path=where) from None
    enc = pc.dictionary_encode(values.cast(pa.large_binary()))
    codes = enc.indices.to_numpy(zero_copy_only=False)
    _, first = np.unique(codes, return_index=True)  # a row holding each distinct value
    distinct = enc.dictionary.to_pylist()
    locs = [_decode_location(v, parsed, keys[int(r)].as_py(), where)
            for v, r in zip(distinct, first.tolist(), strict=True)]  # per distinct value
    idx = pa.array(codes)
    return (pa.array([p for p, _ in locs], pa.string()).take(idx),
            pa.array([f for _, f in locs], pa.string()).take(idx))


__all__ = ["RecordIndexEntries", "encode_record_index_hfile", "location_codes",
           "record_index_locations", "record_index_values"]
