"""Regenerate the table-service timeline vectors (spec/services.md §2, §7).

Same layout as ``regenerate.py`` (``<case>/case.json`` with the record, its schema name and the
sync marker; ``<case>/expected.hex`` with the Avro object container morlog writes), for the
compaction and log compaction plans, the cleaner plan, the clean metadata (each in Hudi 1.x's
and Hudi 0.14's generation of the schema) and the commit metadata completing a compaction and
a log compaction (layout 2). Every record is built by ``morlog.logformat.timeline_meta``'s own
builders. Run from the repository root with the project's environment:
``python spec/vectors/timeline/regenerate_services.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from morlog.logformat import timeline_meta as tm

HERE = Path(__file__).parent
SYNC = bytes(range(16, 32))

FID = "f1-0"
BASE = "20250101000000000"
BASE_FILE = f"{FID}_0-1-1_{BASE}.parquet"
LOGS = [f".{FID}_20250101000001000.log.1_0-1-1", f".{FID}_20250101000002000.log.1_0-1-1"]
SCHEMA = '{"type":"record","name":"r","fields":[]}'


def _operation() -> dict[str, Any]:
    return tm.compaction_operation("city=sf", FID, BASE, LOGS, BASE_FILE,
                                   metrics=tm.compaction_metrics([1100, 900], 436000))


def _stat(log_compaction: bool) -> dict[str, Any]:
    if log_compaction:
        path = f"city=sf/.{FID}_20250101000003000.log.1_0-1-1"
    else:
        path = f"city=sf/{FID}_0-1-1_20250101000003000.parquet"
    stat = tm.write_stat("city=sf", FID, path, prev_commit=BASE, num_writes=3,
                         num_update_writes=1, num_deletes=1, file_size=4321)
    stat.update(totalLogRecords=4, totalUpdatedRecordsCompacted=4, totalLogBlocks=2,
                totalLogFilesCompacted=2, totalLogSizeCompacted=2000,
                prevBaseFile=None if log_compaction else BASE_FILE)
    return stat


def _cleaner_plan() -> dict[str, Any]:
    return tm.cleaner_plan(
        "KEEP_LATEST_COMMITS",
        {"city=sf": [f"/tables/t/city=sf/{BASE_FILE}", f"/tables/t/city=sf/{LOGS[0]}"]},
        earliest_to_retain=tm.action_instant("20250101000005000", "deltacommit"),
        last_completed_commit="20250101000009000")


def _clean_metadata() -> dict[str, Any]:
    part = tm.clean_partition_metadata("city=sf", "KEEP_LATEST_COMMITS", [BASE_FILE, LOGS[0]])
    return tm.clean_metadata("20250101000010000", 25, "20250101000005000", {"city=sf": part},
                             last_completed_commit="20250101000009000")


def _without(record: dict[str, Any], *fields: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in fields}


CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "compaction-plan": ("COMPACTION_PLAN_SCHEMA", tm.compaction_plan([_operation()])),
    "compaction-plan-014": ("COMPACTION_PLAN_SCHEMA_014", _without(
        tm.compaction_plan([_operation()]), "missingSchedulePartitions")),
    "logcompaction-plan": ("COMPACTION_PLAN_SCHEMA",
                           tm.compaction_plan([_operation()], log_compaction=True)),
    "cleaner-plan": ("CLEANER_PLAN_SCHEMA", _cleaner_plan()),
    "cleaner-plan-014": ("CLEANER_PLAN_SCHEMA_014", _without(_cleaner_plan(), "extraMetadata")),
    "clean-metadata": ("CLEAN_METADATA_SCHEMA", _clean_metadata()),
    "clean-metadata-014": ("CLEAN_METADATA_SCHEMA_014",
                           _without(_clean_metadata(), "extraMetadata")),
    "compaction-commit": ("COMMIT_METADATA_SCHEMA", tm.compaction_commit_metadata(
        {"city=sf": [_stat(False)]}, SCHEMA)),
    "logcompaction-commit": ("COMMIT_METADATA_SCHEMA", tm.compaction_commit_metadata(
        {"city=sf": [_stat(True)]}, SCHEMA, log_compaction=True)),
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
