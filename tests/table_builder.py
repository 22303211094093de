"""A minimal table writer for tests: real table-version-6 MOR tables written with morlog.

It writes what Hudi 0.x writes on a file system with append: ``hoodie.properties``, timeline
files (requested, inflight, completed with JSON metadata), base Parquet files carrying Hudi's
bloom filter and min/max keys (and, on request, morlog's base-key index beside each, as
morlog's writer writes it), logs of indexed blocks (appended per file slice), rollback
instants with ROLLBACK command blocks, and log compactions (one block replacing the blocks of
several instants, ``COMPACTED_BLOCK_TIMES``). Routing is the caller's: it says which file
group each record goes to. The real write client (commit protocol, routing, concurrency) is
``writers``' job; this only builds inputs for read-side tests.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from morlog.compat.base_footer import encode_base_footer
from morlog.logformat import DeleteRecord, HeaderKey, OrderingValue
from morlog.logformat.avroschema import avro_to_arrow_schema
from morlog.logformat.base_keys import encode_base_keys
from morlog.logformat.blocks import META_FIELDS
from morlog.logformat.hudi_bloom import DEFAULT_NUM_ENTRIES
from morlog.logformat.naming import TimelineFileName
from morlog.logformat.table_files import (
    PARTITION_METADATA_FILE,
    format_partition_metadata,
    format_properties,
    partition_depth,
)
from morlog.readers.base_keys import BASE_KEYS_DIR
from morlog.readers.base_keys import SUFFIX as BASE_KEYS_SUFFIX
from morlog.writers.core.indexed import IndexedLogWriter

SCHEMA: dict[str, Any] = {
    "type": "record", "name": "model_record", "namespace": "hoodie.model",
    "fields": [{"name": f, "type": ["null", "string"], "default": None} for f in META_FIELDS]
    + [{"name": "id", "type": "string"}, {"name": "p", "type": "string"},
       {"name": "ts", "type": "long"}, {"name": "v", "type": ["null", "long"], "default": None}],
}
ARROW_SCHEMA = avro_to_arrow_schema(SCHEMA)
BASE_INSTANT = "20250101000000000"


@dataclass(frozen=True)
class Put:
    key: str
    partition: str
    ts: int
    value: int


def instant(n: int) -> str:
    return f"2025010200{n:07d}"


class TableBuilder:
    def __init__(self, path: str, *, partitioned: bool = True, event_time: bool = False,
                 rollover: bool = False, base_keys: bool = False) -> None:
        """``base_keys``: write a base-key index (spec/index.md §12) beside every base
        file."""
        self.path = path
        self.base_keys = base_keys
        self.partitioned = partitioned
        self.rollover = rollover
        os.makedirs(os.path.join(path, ".hoodie"), exist_ok=True)
        payload = ("org.apache.hudi.common.model.DefaultHoodieRecordPayload" if event_time
                   else "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload")
        props = {
            "hoodie.table.type": "MERGE_ON_READ", "hoodie.table.version": "6",
            "hoodie.table.name": "model", "hoodie.table.recordkey.fields": "id",
            "hoodie.table.partition.fields": "p" if partitioned else "",
            "hoodie.table.precombine.field": "ts",
            "hoodie.compaction.payload.class": payload,
            "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator"
            if partitioned else "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
            "hoodie.timeline.layout.version": "1",
            "hoodie.table.create.schema": json.dumps(SCHEMA, separators=(",", ":")),
            "hoodie.datasource.write.hive_style_partitioning": "false",
        }
        with open(os.path.join(path, ".hoodie", "hoodie.properties"), "w") as f:
            f.write(format_properties(props))
        #: (partition, file id) -> base instant of its current slice
        self.groups: dict[tuple[str, str], str] = {}
        self.writers: dict[tuple[str, str], IndexedLogWriter] = {}
        #: instant -> file groups it wrote log blocks to
        self.touched: dict[str, set[tuple[str, str]]] = {}
        #: instant -> (partition, file id, path relative to the table) of files it wrote
        self.written: dict[str, list[tuple[str, str, str]]] = {}

    # --- timeline -------------------------------------------------------------------------

    def _timeline(self, inst: str, action: str, state: str, meta: dict[str, Any]) -> None:
        name = str(TimelineFileName(inst, action, state.upper()))
        with open(os.path.join(self.path, ".hoodie", name), "w") as f:
            json.dump(meta, f)

    def begin(self, inst: str, action: str = "deltacommit") -> None:
        self._timeline(inst, action, "requested", {})
        self._timeline(inst, action, "inflight", {})

    def complete(self, inst: str, action: str = "deltacommit",
                 meta: dict[str, Any] | None = None) -> None:
        """Complete ``inst`` with commit metadata as Hudi 0.x writes it (write stats per
        file written, the writer schema in ``extraMetadata``)."""
        if meta is None:
            stats: dict[str, list[dict[str, Any]]] = {}
            for part, fid, rel in self.written.get(inst, []):
                stats.setdefault(part, []).append({"fileId": fid, "path": rel,
                                                   "partitionPath": part})
            meta = {"partitionToWriteStats": stats, "compacted": False,
                    "extraMetadata": {"schema": json.dumps(SCHEMA, separators=(",", ":"))},
                    "operationType": "UPSERT"}
        self._timeline(inst, action, "completed", meta)

    # --- data -------------------------------------------------------------------------------

    def _dir(self, partition: str) -> str:
        d = os.path.join(self.path, partition) if partition else self.path
        if not os.path.isdir(d):
            os.makedirs(d)
            with open(os.path.join(d, PARTITION_METADATA_FILE), "w") as f:
                f.write(format_partition_metadata(0, partition_depth(partition)))
        return d

    def _rows(self, puts: Sequence[Put], inst: str, fid: str) -> list[dict[str, Any]]:
        return [{"_hoodie_commit_time": inst, "_hoodie_commit_seqno": f"{inst}_0_{i}",
                 "_hoodie_record_key": p.key, "_hoodie_partition_path": p.partition,
                 "_hoodie_file_name": fid, "id": p.key, "p": p.partition, "ts": p.ts,
                 "v": p.value} for i, p in enumerate(puts)]

    def new_group(self, partition: str, puts: Sequence[Put], inst: str) -> str:
        """A new file group with a base file holding ``puts`` (written by ``inst``)."""
        fid = f"{uuid.uuid4()}-0"
        rows = self._rows(puts, inst, fid)
        table = pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)
        md = encode_base_footer(table.column("_hoodie_record_key"), DEFAULT_NUM_ENTRIES)
        table = table.replace_schema_metadata(md)
        name = f"{fid}_0-1-1_{inst}.parquet"
        path = os.path.join(self._dir(partition), name)
        pq.write_table(table, path)
        if self.base_keys:
            d = os.path.join(self.path, ".hoodie", *BASE_KEYS_DIR,
                             *(partition.split("/") if partition else []))
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, name + BASE_KEYS_SUFFIX), "wb") as f:
                f.write(encode_base_keys(table.column("_hoodie_record_key"), name,
                                         os.path.getsize(path)))
        self.written.setdefault(inst, []).append(
            (partition, fid, f"{partition}/{name}" if partition else name))
        self.groups[(partition, fid)] = inst
        return fid

    def new_log_group(self, partition: str, puts: Sequence[Put], inst: str) -> str:
        """A new file group without base file: its records go to a log (table v6 keys the
        slice by the log's instant)."""
        fid = f"{uuid.uuid4()}-0"
        self.groups[(partition, fid)] = inst
        self.log(partition, fid, puts, inst)
        return fid

    def _writer(self, partition: str, fid: str) -> IndexedLogWriter:
        key = (partition, fid)
        if key not in self.writers:
            self.writers[key] = IndexedLogWriter(
                self._dir(partition), fid, self.groups[key], write_token="0-1-1",
                mode="rollover" if self.rollover else "append", key_field="_hoodie_record_key",
                checkpoint_every=3, fsync=False)
        return self.writers[key]

    def log(self, partition: str, fid: str, puts: Sequence[Put], inst: str,
            carrier: str = "avro", extra_header: dict[HeaderKey, str] | None = None) -> None:
        w = self._writer(partition, fid)
        rows = self._rows(puts, inst, fid)
        if carrier == "parquet" and not extra_header:
            r = w.append_parquet(pa.Table.from_pylist(rows, schema=ARROW_SCHEMA), inst,
                                 schema=SCHEMA)
        else:
            r = w.append_avro(rows, SCHEMA, inst, extra_header=extra_header)
        self._wrote(inst, partition, fid, r.path)

    def _wrote(self, inst: str, partition: str, fid: str, path: str) -> None:
        self.touched.setdefault(inst, set()).add((partition, fid))
        name = os.path.basename(path)
        self.written.setdefault(inst, []).append(
            (partition, fid, f"{partition}/{name}" if partition else name))

    def delete(self, partition: str, fid: str, keys: Sequence[str], inst: str,
               extra_header: dict[HeaderKey, str] | None = None) -> None:
        r = self._writer(partition, fid).append_delete(
            [DeleteRecord(k, partition, OrderingValue.natural()) for k in keys], inst,
            schema=SCHEMA, extra_header=extra_header)
        self._wrote(inst, partition, fid, r.path)

    def rollback(self, failed: str, inst: str) -> None:
        """Roll back a failed instant: rollback instant plus command blocks (table v6)."""
        self.begin(inst, "rollback")
        for partition, fid in sorted(self.touched.get(failed, set())):
            self._writer(partition, fid).append_rollback(inst, failed)
        self.complete(inst, "rollback", {"commitsRollback": [failed]})
