"""Timeline metadata: the contents of commit, rollback and rollback-plan instant files.

Hudi serialises these records with its Avro models (``hudi-common/src/main/avro/``:
``HoodieCommitMetadata.avsc``, ``HoodieRollbackMetadata.avsc``, ``HoodieRollbackPlan.avsc``,
``HoodieInstantInfo`` inside them) into an Avro object container file with the null codec
(``TimelineMetadataUtils.serializeAvroMetadata``). Which instants use which encoding:

- rollback plans (``<t>.rollback.requested``) and rollback metadata (completed rollbacks):
  Avro in every timeline layout (verified on the version-6 fixture's rollback);
- commit metadata (``deltacommit``, ``commit``, ``replacecommit``), completed and inflight:
  JSON in layout 1 (table version <= 6, ``HoodieCommitMetadata.toJsonString``), Avro in layout
  2 (table version 8+, ``CommitMetadataSerDeV2``; verified on the version-9 fixtures);
- ``<t>.deltacommit.requested``: empty in both layouts.

The schemas are built here from the field lists of Hudi's models (names, order, types and
defaults are what a reader resolves against; ``avro.java.string`` annotations are irrelevant to
resolution and left out). Records are plain dicts; missing nullable fields encode as null.
"""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro

from .errors import ContentError

_NS = "org.apache.hudi.avro.model"


def _opt(t: Any) -> dict[str, Any]:
    return {"type": ["null", t], "default": None}


def _field(name: str, t: Any) -> dict[str, Any]:
    return {"name": name, **_opt(t)}


#: HoodieWriteStat: one file written by a commit (fields in Hudi's order)
_WRITE_STAT_FIELDS: list[tuple[str, Any]] = [
    ("fileId", "string"), ("path", "string"), ("prevCommit", "string"),
    ("numWrites", "long"), ("numDeletes", "long"), ("numUpdateWrites", "long"),
    ("totalWriteBytes", "long"), ("totalWriteErrors", "long"), ("partitionPath", "string"),
    ("totalLogRecords", "long"), ("totalLogFiles", "long"),
    ("totalUpdatedRecordsCompacted", "long"), ("numInserts", "long"),
    ("totalLogBlocks", "long"), ("totalCorruptLogBlock", "long"),
    ("totalRollbackBlocks", "long"), ("fileSizeInBytes", "long"), ("logVersion", "int"),
    ("logOffset", "long"), ("baseFile", "string"),
    ("logFiles", {"type": "array", "items": "string"}),
    ("cdcStats", {"type": "map", "values": "long"}), ("prevBaseFile", "string"),
    ("minEventTime", "long"), ("maxEventTime", "long"),
    ("runtimeStats", {"type": "record", "name": "HoodieRuntimeStats", "namespace": _NS,
                      "fields": [_field("totalScanTime", "long"),
                                 _field("totalCreateTime", "long"),
                                 _field("totalUpsertTime", "long")]}),
    ("totalLogFilesCompacted", "long"), ("totalLogReadTimeMs", "long"),
    ("totalLogSizeCompacted", "long"), ("tempPath", "string"), ("numUpdates", "long"),
]

def _commit_fields() -> list[dict[str, Any]]:
    stat = {"type": "record", "name": "HoodieWriteStat", "namespace": _NS,
            "fields": [_field(n, t) for n, t in _WRITE_STAT_FIELDS]}
    return [_field("partitionToWriteStats", {"type": "map", "values": {
                "type": "array", "items": stat}}),
            _field("compacted", "boolean"),
            _field("extraMetadata", {"type": "map", "values": "string"}),
            {"name": "version", "type": ["int", "null"], "default": 1},
            _field("operationType", "string")]


COMMIT_METADATA_SCHEMA: dict[str, Any] = {
    "type": "record", "name": "HoodieCommitMetadata", "namespace": _NS,
    "fields": _commit_fields()}
#: HoodieReplaceCommitMetadata: commit metadata plus the file groups a replace commit replaces
REPLACE_COMMIT_METADATA_SCHEMA: dict[str, Any] = {
    "type": "record", "name": "HoodieReplaceCommitMetadata", "namespace": _NS,
    "fields": [*_commit_fields(),
               _field("partitionToReplaceFileIds", {"type": "map", "values": {
                   "type": "array", "items": "string"}})]}

_INSTANT_INFO: dict[str, Any] = {
    "type": "record", "name": "HoodieInstantInfo", "namespace": _NS,
    "fields": [{"name": "commitTime", "type": "string"}, {"name": "action", "type": "string"}]}

ROLLBACK_PLAN_SCHEMA: dict[str, Any] = {
    "type": "record", "name": "HoodieRollbackPlan", "namespace": _NS,
    "fields": [
        {"name": "instantToRollback", "type": ["null", _INSTANT_INFO], "default": None},
        {"name": "RollbackRequests", "type": ["null", {"type": "array", "items": {
            "type": "record", "name": "HoodieRollbackRequest", "namespace": _NS,
            "fields": [
                {"name": "partitionPath", "type": "string"},
                _field("fileId", "string"),
                _field("latestBaseInstant", "string"),
                {"name": "filesToBeDeleted", "type": {"type": "array", "items": "string"},
                 "default": []},
                _field("logBlocksToBeDeleted", {"type": "map", "values": "long"}),
            ]}}], "default": None},
        {"name": "version", "type": ["int", "null"], "default": 1},
    ]}

ROLLBACK_METADATA_SCHEMA: dict[str, Any] = {
    "type": "record", "name": "HoodieRollbackMetadata", "namespace": _NS,
    "fields": [
        {"name": "startRollbackTime", "type": "string"},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "totalFilesDeleted", "type": "int"},
        {"name": "commitsRollback", "type": {"type": "array", "items": "string"}},
        {"name": "partitionMetadata", "type": {"type": "map", "values": {
            "type": "record", "name": "HoodieRollbackPartitionMetadata", "namespace": _NS,
            "fields": [
                {"name": "partitionPath", "type": "string"},
                {"name": "successDeleteFiles", "type": {"type": "array", "items": "string"}},
                {"name": "failedDeleteFiles", "type": {"type": "array", "items": "string"}},
                _field("rollbackLogFiles", {"type": "map", "values": "long"}),
                _field("logFilesFromFailedCommit", {"type": "map", "values": "long"}),
            ]}}},
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "instantsRollback", "type": {"type": "array", "items": _INSTANT_INFO},
         "default": []},
    ]}

_PARSED: dict[str, Any] = {}


def _parsed(schema: dict[str, Any]) -> Any:
    key = schema["name"]
    if key not in _PARSED:
        _PARSED[key] = fastavro.parse_schema(schema)
    return _PARSED[key]


def write_stat(partition: str, file_id: str, path: str | None = None, *,
               prev_commit: str = "null", num_writes: int = 0, num_inserts: int = 0,
               num_update_writes: int = 0, num_deletes: int = 0, file_size: int = 0,
               log_files: list[str] | None = None, base_file: str | None = None
               ) -> dict[str, Any]:
    """One HoodieWriteStat with Hudi's zeros where a writer has no count."""
    return {"fileId": file_id, "path": path, "prevCommit": prev_commit,
            "numWrites": num_writes, "numDeletes": num_deletes,
            "numUpdateWrites": num_update_writes, "totalWriteBytes": file_size,
            "totalWriteErrors": 0, "partitionPath": partition, "totalLogRecords": 0,
            "totalLogFiles": None, "totalUpdatedRecordsCompacted": 0,
            "numInserts": num_inserts, "totalLogBlocks": 0, "totalCorruptLogBlock": 0,
            "totalRollbackBlocks": 0, "fileSizeInBytes": file_size, "logVersion": None,
            "logOffset": None, "baseFile": base_file, "logFiles": log_files,
            "cdcStats": None, "prevBaseFile": None, "minEventTime": None,
            "maxEventTime": None, "runtimeStats": None, "totalLogFilesCompacted": 0,
            "totalLogReadTimeMs": 0, "totalLogSizeCompacted": 0, "tempPath": None,
            "numUpdates": 0}


def encode_avro(schema: dict[str, Any], record: dict[str, Any],
                sync_marker: bytes | None = None) -> bytes:
    """One record as an Avro object container file (null codec), as Hudi writes it.
    ``sync_marker``: the file's 16-byte sync marker (default random, as Hudi's; given by
    the conformance vectors to make the bytes reproducible)."""
    out = io.BytesIO()
    if sync_marker is None:
        fastavro.writer(out, _parsed(schema), [record], codec="null")
    else:
        fastavro.writer(out, _parsed(schema), [record], codec="null", sync_marker=sync_marker)
    return out.getvalue()


def encode_commit_metadata(meta: dict[str, Any], layout: int) -> bytes:
    """Commit metadata for timeline ``layout`` (1: JSON, 2: Avro); ``meta`` holds
    ``partitionToWriteStats``, ``extraMetadata``, ``operationType`` and optionally
    ``compacted`` and ``partitionToReplaceFileIds`` (replace commits)."""
    replace = "partitionToReplaceFileIds" in meta
    if layout == 1:
        return json.dumps({"compacted": False, **meta}, indent=2).encode("utf-8")
    record = {"compacted": False, "version": 1, **meta}
    return encode_avro(REPLACE_COMMIT_METADATA_SCHEMA if replace else COMMIT_METADATA_SCHEMA,
                       record)


def decode_avro(data: bytes, where: str | None = None) -> dict[str, Any]:
    """The first record of an Avro container ({} when it holds none); ``ContentError``
    when the bytes do not decode."""
    try:
        records = list(fastavro.reader(io.BytesIO(data)))
    except Exception as exc:  # fastavro raises many types on hostile bytes
        raise ContentError(f"timeline metadata does not decode: {exc}", path=where) from None
    first = records[0] if records else {}
    return first if isinstance(first, dict) else {}


def rollback_plan(failed: str, action: str, requests: list[dict[str, Any]]) -> bytes:
    """``<t>.rollback.requested``: the instant to roll back and a request per file group."""
    return encode_avro(ROLLBACK_PLAN_SCHEMA, {
        "instantToRollback": {"commitTime": failed, "action": action},
        "RollbackRequests": requests, "version": 1})


def rollback_metadata(start: str, failed: str, action: str, millis: int,
                      partitions: dict[str, dict[str, Any]]) -> bytes:
    """A completed rollback: ``partitions`` maps a partition to its
    HoodieRollbackPartitionMetadata (files deleted, log files given a rollback block)."""
    deleted = sum(len(p.get("successDeleteFiles", [])) for p in partitions.values())
    return encode_avro(ROLLBACK_METADATA_SCHEMA, {
        "startRollbackTime": start, "timeTakenInMillis": millis,
        "totalFilesDeleted": deleted, "commitsRollback": [failed],
        "partitionMetadata": partitions, "version": 1,
        "instantsRollback": [{"commitTime": failed, "action": action}]})


__all__ = ["COMMIT_METADATA_SCHEMA", "REPLACE_COMMIT_METADATA_SCHEMA",
           "ROLLBACK_METADATA_SCHEMA", "ROLLBACK_PLAN_SCHEMA", "decode_avro", "encode_avro",
           "encode_commit_metadata", "rollback_metadata", "rollback_plan", "write_stat"]
