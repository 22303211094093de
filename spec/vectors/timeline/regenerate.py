"""Regenerate the timeline-metadata conformance vectors (spec/table.md §4, §8).

Each case is ``<case>/case.json`` (the record, its schema name and the sync marker) and
``<case>/expected.hex`` (the Avro object container morlog writes for it). Run from the
repository root with the project's environment: ``python spec/vectors/timeline/regenerate.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

from morlog.logformat import timeline_meta as tm

HERE = Path(__file__).parent
SYNC = bytes(range(16))
CASES = {
    "layout2-deltacommit": ("COMMIT_METADATA_SCHEMA", {
        "partitionToWriteStats": {"city=sf": [tm.write_stat(
            "city=sf", "f1-0", "city=sf/.f1-0_20250101000000000.log.1_0-1-1",
            num_writes=2, file_size=1234)]},
        "compacted": False,
        "extraMetadata": {"schema": "{\"type\":\"record\",\"name\":\"r\",\"fields\":[]}",
                          "morlog.inserts": "2"},
        "version": 1, "operationType": "UPSERT"}),
    "rollback-metadata": ("ROLLBACK_METADATA_SCHEMA", {
        "startRollbackTime": "20250101000001000", "timeTakenInMillis": 12,
        "totalFilesDeleted": 1, "commitsRollback": ["20250101000000500"],
        "partitionMetadata": {"city=sf": {
            "partitionPath": "city=sf",
            "successDeleteFiles": [".f1-0_20250101000000500.log.1_0-1-1"],
            "failedDeleteFiles": [], "rollbackLogFiles": None,
            "logFilesFromFailedCommit": None}},
        "version": 1,
        "instantsRollback": [{"commitTime": "20250101000000500", "action": "deltacommit"}]}),
    "rollback-plan": ("ROLLBACK_PLAN_SCHEMA", {
        "instantToRollback": {"commitTime": "20250101000000500", "action": "deltacommit"},
        "RollbackRequests": [{"partitionPath": "city=sf", "fileId": "",
                              "latestBaseInstant": "",
                              "filesToBeDeleted": [".f1-0_20250101000000500.log.1_0-1-1"],
                              "logBlocksToBeDeleted": {}}],
        "version": 1}),
}


def main() -> None:
    for case, (schema, record) in CASES.items():
        d = HERE / case
        d.mkdir(exist_ok=True)
        (d / "case.json").write_text(json.dumps(
            {"schema": schema, "sync_marker": SYNC.hex(), "record": record}, indent=1) + "\n")
        data = tm.encode_avro(getattr(tm, schema), record, sync_marker=SYNC)
        (d / "expected.hex").write_text(data.hex() + "\n")


if __name__ == "__main__":
    main()
