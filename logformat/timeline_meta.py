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

from .errors import ContentError, UsageError

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
    # keyed by the whole schema: Hudi releases write different field lists under one record
    # name (e.g. HoodieCompactionPlan of 0.14 and of 1.1)
    key = json.dumps(schema, sort_keys=True)
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
        # Hudi's JSON commit metadata has no version field (the Avro record's)
        return json.dumps({"compacted": False, **{k: v for k, v in meta.items()
                                                  if k != "version"}},
                          indent=2).encode("utf-8")
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



# ---------------------------------------------------------------------------------------------
# Table services: compaction, log compaction and cleaning (spec/services.md §2)
#
# Field lists from Hudi's models in hudi-common/src/main/avro/: HoodieCompactionOperation.avsc
# (which defines HoodieCompactionPlan), HoodieCompactionStrategy.avsc, HoodieCleanerPlan.avsc
# (with HoodieActionInstant and HoodieCleanFileInfo), HoodieCleanMetadata.avsc and
# HoodieCleanPartitionMetadata.avsc. Two generations are kept: the one Hudi 1.1 writes (and
# the version-8/9 fixtures hold) and the one of Hudi 0.14 (``*_014``). A reader resolves either
# against the other (Avro schema resolution: unknown writer fields skipped, missing ones take
# their defaults), so both are readable by every release; see :func:`decode_avro_as`.
# ---------------------------------------------------------------------------------------------


def _required(name: str, t: Any) -> dict[str, Any]:
    """A field Hudi declares without a default (a reader cannot fill it in)."""
    return {"name": name, "type": t}


def _version_field() -> dict[str, Any]:
    return {"name": "version", "type": ["int", "null"], "default": 1}


def _strings() -> dict[str, Any]:
    return {"type": "array", "items": "string"}


def _string_map() -> dict[str, Any]:
    return {"type": "map", "values": "string"}


def _compaction_operation() -> dict[str, Any]:
    """HoodieCompactionOperation: one file slice to compact. File names, not paths, since plan
    version 2 (``CompactionUtils.buildFromFileSlice``)."""
    return {"type": "record", "name": "HoodieCompactionOperation", "namespace": _NS,
            "fields": [
                _required("baseInstantTime", ["null", "string"]),
                _field("deltaFilePaths", _strings()),
                _field("dataFilePath", "string"),
                _required("fileId", ["null", "string"]),
                _field("partitionPath", "string"),
                _field("metrics", {"type": "map", "values": "double"}),
                _field("bootstrapFilePath", "string"),
            ]}


def _compaction_strategy() -> dict[str, Any]:
    """HoodieCompactionStrategy: set by log compaction plans (compactor class and params)."""
    return {"type": "record", "name": "HoodieCompactionStrategy", "namespace": _NS,
            "fields": [_field("compactorClassName", "string"),
                       _field("strategyParams", _string_map()),
                       _version_field()]}


def _compaction_plan(missing_partitions: bool) -> dict[str, Any]:
    fields = [
        _field("operations", {"type": "array", "items": _compaction_operation()}),
        _field("extraMetadata", _string_map()),
        _version_field(),
        _field("strategy", _compaction_strategy()),
        {"name": "preserveHoodieMetadata", "type": ["boolean", "null"], "default": False},
    ]
    if missing_partitions:  # HUDI-8780 (incremental table services), Hudi 1.0.1+
        fields.append(_field("missingSchedulePartitions", _strings()))
    return {"type": "record", "name": "HoodieCompactionPlan", "namespace": _NS,
            "fields": fields}


#: HoodieCompactionPlan as Hudi 1.0.1+ and 1.1 write it (``<t>.compaction.requested`` and
#: ``<t>.logcompaction.requested``; the fixtures' plans)
COMPACTION_PLAN_SCHEMA: dict[str, Any] = _compaction_plan(True)
#: HoodieCompactionPlan of Hudi 0.14.x and 1.0.0 (no ``missingSchedulePartitions``)
COMPACTION_PLAN_SCHEMA_014: dict[str, Any] = _compaction_plan(False)


def _action_instant() -> dict[str, Any]:
    """HoodieActionInstant: an instant's requested time, action and state name."""
    return {"type": "record", "name": "HoodieActionInstant", "namespace": _NS,
            "fields": [_required("timestamp", "string"), _required("action", "string"),
                       _required("state", "string")]}


def _clean_file_info() -> dict[str, Any]:
    """HoodieCleanFileInfo: one file a clean deletes (full path) and whether it is a
    bootstrap source file."""
    return {"type": "record", "name": "HoodieCleanFileInfo", "namespace": _NS,
            "fields": [_field("filePath", "string"), _field("isBootstrapBaseFile", "boolean")]}


def _cleaner_plan(extra: bool) -> dict[str, Any]:
    fields = [
        {"name": "earliestInstantToRetain", "type": ["null", _action_instant()],
         "default": None},
        {"name": "lastCompletedCommitTimestamp", "type": "string", "default": ""},
        _required("policy", "string"),
        # deprecated (plan version 1: file names per partition)
        _field("filesToBeDeletedPerPartition", {"type": "map", "values": _strings()}),
        _version_field(),
        _field("filePathsToBeDeletedPerPartition",
               {"type": "map", "values": {"type": "array", "items": _clean_file_info()}}),
        _field("partitionsToBeDeleted", _strings()),
    ]
    if extra:  # HUDI-7104: savepointed timestamps for incremental cleaning, Hudi 1.0+
        fields.append(_field("extraMetadata", _string_map()))
    return {"type": "record", "name": "HoodieCleanerPlan", "namespace": _NS, "fields": fields}


#: HoodieCleanerPlan as Hudi 1.0 and 1.1 write it (``<t>.clean.requested``)
CLEANER_PLAN_SCHEMA: dict[str, Any] = _cleaner_plan(True)
#: HoodieCleanerPlan of Hudi 0.14.x (no ``extraMetadata``)
CLEANER_PLAN_SCHEMA_014: dict[str, Any] = _cleaner_plan(False)

_CLEAN_PARTITION_NAME = f"{_NS}.HoodieCleanPartitionMetadata"


def _clean_partition_metadata() -> dict[str, Any]:
    """HoodieCleanPartitionMetadata: what a clean did in one partition (file names)."""
    return {"type": "record", "name": "HoodieCleanPartitionMetadata", "namespace": _NS,
            "fields": [_required("partitionPath", "string"), _required("policy", "string"),
                       _required("deletePathPatterns", _strings()),
                       _required("successDeleteFiles", _strings()),
                       _required("failedDeleteFiles", _strings()),
                       _field("isPartitionDeleted", "boolean")]}


def _clean_metadata(extra: bool) -> dict[str, Any]:
    fields = [
        _required("startCleanTime", "string"),
        _required("timeTakenInMillis", "long"),
        _required("totalFilesDeleted", "int"),
        _required("earliestCommitToRetain", "string"),
        {"name": "lastCompletedCommitTimestamp", "type": "string", "default": ""},
        _required("partitionMetadata", {"type": "map", "values": _clean_partition_metadata()}),
        _version_field(),
        _field("bootstrapPartitionMetadata", {"type": "map", "values": _CLEAN_PARTITION_NAME}),
    ]
    if extra:  # HUDI-7104, Hudi 1.0+ (copied from the plan's extraMetadata)
        fields.append(_field("extraMetadata", _string_map()))
    return {"type": "record", "name": "HoodieCleanMetadata", "namespace": _NS,
            "fields": fields}


#: HoodieCleanMetadata as Hudi 1.0 and 1.1 write it (the completed ``<t>.clean``)
CLEAN_METADATA_SCHEMA: dict[str, Any] = _clean_metadata(True)
#: HoodieCleanMetadata of Hudi 0.14.x (no ``extraMetadata``)
CLEAN_METADATA_SCHEMA_014: dict[str, Any] = _clean_metadata(False)

#: version of compaction plans Hudi writes (``CompactionUtils.LATEST_COMPACTION_METADATA_VERSION``)
COMPACTION_PLAN_VERSION = 2
#: version of clean plans and clean metadata Hudi writes
#: (``CleanPlanner.LATEST_CLEAN_PLAN_VERSION``, ``CleanerUtils.LATEST_CLEAN_METADATA_VERSION``)
CLEAN_VERSION = 2
#: the compactor class a log compaction plan names (``HoodieLogCompactionPlanGenerator``)
LOG_COMPACTION_EXECUTOR = "org.apache.hudi.table.action.compact.LogCompactionExecutionHelper"
#: extra metadata key of a clean plan listing the savepoints seen (``CleanerUtils``)
SAVEPOINTED_TIMESTAMPS = "savepointed_timestamps"
#: the cleaner policies (``HoodieCleaningPolicy``)
CLEANER_POLICIES = ("KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS", "KEEP_LATEST_BY_HOURS")


def compaction_operation(partition: str, file_id: str, base_instant: str,
                         log_files: list[str], base_file: str | None = None, *,
                         metrics: dict[str, float] | None = None) -> dict[str, Any]:
    """One HoodieCompactionOperation: the slice ``base_instant`` of ``file_id`` with its base
    file name (None for a log-only slice) and log file names, oldest first."""
    return {"baseInstantTime": base_instant, "deltaFilePaths": list(log_files),
            "dataFilePath": base_file, "fileId": file_id, "partitionPath": partition,
            "metrics": metrics, "bootstrapFilePath": None}


def compaction_metrics(log_sizes: list[int], base_size: int | None,
                       max_file_size: int = 120 * 1024 * 1024) -> dict[str, float]:
    """The metrics Hudi's default strategy records per operation
    (``FileSliceMetricUtils.addFileSliceCommonMetrics``): sizes in whole MiB (truncated,
    ``FSUtils.getSizeInMB``), the write estimated as the base file's size, else
    ``hoodie.parquet.max.file.size``."""
    mib = 1024 * 1024
    logs = sum(s for s in log_sizes if s >= 0)
    base = base_size or 0
    read = (base + logs) // mib
    write = (base if base > 0 else max_file_size) // mib
    return {"TOTAL_IO_READ_MB": float(read), "TOTAL_IO_WRITE_MB": float(write),
            "TOTAL_IO_MB": float(read + write), "TOTAL_LOG_FILES_SIZE": float(logs),
            "TOTAL_LOG_FILES": float(len(log_sizes))}


def compaction_plan(operations: list[dict[str, Any]], *, log_compaction: bool = False,
                    extra_metadata: dict[str, str] | None = None,
                    missing_partitions: list[str] | None = None) -> dict[str, Any]:
    """A HoodieCompactionPlan as Hudi 1.1 schedules it: version 2; a compaction plan carries
    no strategy and ``preserveHoodieMetadata`` false
    (``CompactionStrategy.generateCompactionPlan``), a log compaction plan the log compaction
    executor, empty params and
    ``preserveHoodieMetadata`` true (``HoodieLogCompactionPlanGenerator.getCompactionPlan``).
    ``missing_partitions``: partitions left out (Hudi writes ``[]`` when none, with
    ``hoodie.table.services.incremental.enabled``, default true)."""
    strategy = ({"compactorClassName": LOG_COMPACTION_EXECUTOR, "strategyParams": {},
                 "version": 1} if log_compaction else None)
    missing = [] if missing_partitions is None else missing_partitions
    return {"operations": operations, "extraMetadata": extra_metadata if extra_metadata
            is not None else {}, "version": COMPACTION_PLAN_VERSION, "strategy": strategy,
            "preserveHoodieMetadata": log_compaction, "missingSchedulePartitions": missing}


def action_instant(timestamp: str, action: str, state: str = "COMPLETED") -> dict[str, str]:
    """A HoodieActionInstant (``state`` is the ``HoodieInstant.State`` name)."""
    return {"timestamp": timestamp, "action": action, "state": state}


def cleaner_plan(policy: str, files: dict[str, list[str]], *,
                 earliest_to_retain: dict[str, str] | None = None,
                 last_completed_commit: str = "", partitions_to_delete: list[str] | None = None,
                 extra_metadata: dict[str, str] | None = None) -> dict[str, Any]:
    """A HoodieCleanerPlan as ``CleanPlanActionExecutor.requestClean`` builds it: ``files``
    maps a partition to the full paths to delete (``filePathsToBeDeletedPerPartition``; plan
    version 2), the deprecated ``filesToBeDeletedPerPartition`` is an empty map."""
    if policy not in CLEANER_POLICIES:
        raise UsageError("unknown cleaner policy", actual=policy)
    return {"earliestInstantToRetain": earliest_to_retain,
            "lastCompletedCommitTimestamp": last_completed_commit, "policy": policy,
            "filesToBeDeletedPerPartition": {}, "version": CLEAN_VERSION,
            "filePathsToBeDeletedPerPartition": {
                part: [{"filePath": f, "isBootstrapBaseFile": False} for f in paths]
                for part, paths in files.items()},
            "partitionsToBeDeleted": list(partitions_to_delete or []),
            "extraMetadata": extra_metadata if extra_metadata is not None else {}}


def clean_partition_metadata(partition: str, policy: str, deleted: list[str],
                             failed: list[str] | None = None, *,
                             partition_deleted: bool = False) -> dict[str, Any]:
    """What a clean did in one partition: file names (not paths) attempted, deleted and
    failed (``CleanActionExecutor.deleteFilesFunc``, ``CleanerUtils.convertCleanMetadata``)."""
    failed = list(failed or [])
    return {"partitionPath": partition, "policy": policy,
            "deletePathPatterns": [*deleted, *failed], "successDeleteFiles": list(deleted),
            "failedDeleteFiles": failed, "isPartitionDeleted": partition_deleted}


def clean_metadata(start: str, millis: int, earliest_to_retain: str,
                   partitions: dict[str, dict[str, Any]], *, last_completed_commit: str = "",
                   extra_metadata: dict[str, str] | None = None) -> dict[str, Any]:
    """A HoodieCleanMetadata (``CleanerUtils.convertCleanMetadata``): ``earliest_to_retain``
    is "" when the policy has none; ``totalFilesDeleted`` counts the successful deletes."""
    return {"startCleanTime": start, "timeTakenInMillis": millis,
            "totalFilesDeleted": sum(len(p["successDeleteFiles"]) for p in partitions.values()),
            "earliestCommitToRetain": earliest_to_retain,
            "lastCompletedCommitTimestamp": last_completed_commit,
            "partitionMetadata": partitions, "version": CLEAN_VERSION,
            "bootstrapPartitionMetadata": {},
            "extraMetadata": extra_metadata if extra_metadata is not None else {}}


def compaction_commit_metadata(stats: dict[str, list[dict[str, Any]]], schema: str, *,
                               log_compaction: bool = False) -> dict[str, Any]:
    """The commit metadata completing a compaction (``commit``) or a log compaction
    (``deltacommit``): ``compacted`` true (``CommonClientUtils.stitchCompactionHoodieWriteStats``),
    operation ``COMPACT`` / ``LOG_COMPACT`` and the writer schema; Hudi 1.x leaves ``version``
    null (verified on the fixtures). Encode with :func:`encode_commit_metadata`."""
    return {"partitionToWriteStats": stats, "compacted": True,
            "extraMetadata": {"schema": schema}, "version": None,
            "operationType": "LOG_COMPACT" if log_compaction else "COMPACT"}


def decode_avro_as(data: bytes, schema: dict[str, Any],
                   where: str | None = None) -> dict[str, Any]:
    """The first record of an Avro container read with ``schema`` as the reader schema, so
    that any Hudi release's version of the record comes back in one shape (fields the writer
    lacks take their defaults, fields the reader lacks are dropped). {} when the file holds
    no record (an empty pending instant); ``ContentError`` when the bytes do not decode or
    the writer's record is another one."""
    if not data:
        return {}
    try:
        records = list(fastavro.reader(io.BytesIO(data), reader_schema=_parsed(schema)))
    except Exception as exc:  # fastavro raises many types on hostile bytes
        raise ContentError(f"timeline metadata does not decode as {schema['name']}: {exc}",
                           path=where) from None
    first = records[0] if records else {}
    return first if isinstance(first, dict) else {}


__all__ = ["CLEANER_PLAN_SCHEMA", "CLEANER_PLAN_SCHEMA_014", "CLEANER_POLICIES",
           "CLEAN_METADATA_SCHEMA", "CLEAN_METADATA_SCHEMA_014", "CLEAN_VERSION",
           "COMMIT_METADATA_SCHEMA", "COMPACTION_PLAN_SCHEMA", "COMPACTION_PLAN_SCHEMA_014",
           "COMPACTION_PLAN_VERSION", "LOG_COMPACTION_EXECUTOR", "REPLACE_COMMIT_METADATA_SCHEMA",
           "ROLLBACK_METADATA_SCHEMA", "ROLLBACK_PLAN_SCHEMA", "SAVEPOINTED_TIMESTAMPS",
           "action_instant", "clean_metadata", "clean_partition_metadata", "cleaner_plan",
           "compaction_commit_metadata", "compaction_metrics", "compaction_operation",
           "compaction_plan", "decode_avro", "decode_avro_as", "encode_avro",
           "encode_commit_metadata", "rollback_metadata", "rollback_plan", "write_stat"]
