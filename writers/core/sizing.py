"""How many records fit in a file group: the average record size, as Hudi estimates it.

Insert routing (``MorTable.insert_bins``, shared by the write client and Spark's distributed
upsert) packs records into file groups up to ``hoodie.parquet.max.file.size`` at an estimated
number of bytes per record. Hudi's estimate (``AverageRecordSizeEstimator``, apache/hudi
``hudi-client/hudi-client-common/src/main/java/org/apache/hudi/estimator/
AverageRecordSizeEstimator.java``; before 1.0 ``UpsertPartitioner.averageBytesPerRecord``,
``hudi-client/hudi-spark-client/.../table/action/commit/UpsertPartitioner.java``):

- read the newest completed ``commit`` / ``deltacommit`` instants, at most
  ``_hoodie.record.size.estimator.max.commits`` of them (default 5);
- of a delta commit, only the write stats of base files count (a log's bytes say little of
  the Parquet size); of a commit (compaction), the commit's totals;
- a stat (or a commit's total) counts only when its bytes exceed
  ``hoodie.record.size.estimation.threshold`` (default 1.0) times
  ``hoodie.parquet.small.file.limit``: small files measure Parquet's fixed overhead more
  than the records;
- the estimate is the counted bytes over the counted records (integer division); with
  nothing counted, ``hoodie.copyonwrite.record.size.estimate`` (default 1024).

An unreadable commit metadata is skipped, as Hudi's estimator skips it (it is fail-safe: a
size estimate never fails a write). ``WriteConfig.record_size`` (``morlog.record.size``),
when set, replaces the estimate.
"""

from __future__ import annotations

from typing import Any

import morlog.config as conf
from morlog.logformat.errors import MorlogError
from morlog.logformat.naming import BaseFileName
from morlog.readers.table import Table

#: hoodie.copyonwrite.record.size.estimate: bytes per record before any commit measured one
DEFAULT_RECORD_SIZE_ESTIMATE = conf.default_int(conf.RECORD_SIZE_ESTIMATE)
#: hoodie.record.size.estimation.threshold: a file counts above this x small.file.limit
DEFAULT_ESTIMATION_THRESHOLD = conf.default_float(conf.RECORD_SIZE_ESTIMATION_THRESHOLD)
#: _hoodie.record.size.estimator.max.commits: the newest commits read
DEFAULT_ESTIMATOR_MAX_COMMITS = conf.default_int(conf.RECORD_SIZE_ESTIMATOR_MAX_COMMITS)

RECORD_SIZE_ESTIMATE = conf.RECORD_SIZE_ESTIMATE
ESTIMATION_THRESHOLD = conf.RECORD_SIZE_ESTIMATION_THRESHOLD
ESTIMATOR_MAX_COMMITS = conf.RECORD_SIZE_ESTIMATOR_MAX_COMMITS

#: the completed actions Hudi's estimator reads (a completed compaction is a ``commit``)
_ACTIONS = frozenset({"commit", "deltacommit"})


def average_record_size(table: Table, *, small_file_limit: int,
                        default: int = DEFAULT_RECORD_SIZE_ESTIMATE,
                        threshold: float = DEFAULT_ESTIMATION_THRESHOLD,
                        max_commits: int = DEFAULT_ESTIMATOR_MAX_COMMITS) -> int:
    """Bytes per record of a base file of ``table``, from its newest completed commits'
    write stats (see the module's docstring), else ``default``."""
    floor = threshold * small_file_limit
    total_bytes = total_records = 0
    timeline = table.timeline
    newest = sorted(timeline.completed(_ACTIONS), key=lambda i: i.requested, reverse=True)
    for instant in newest[:max(0, max_commits)]:
        try:
            meta = timeline.metadata(instant)
        except MorlogError:
            continue
        stats = [s for entries in (meta.get("partitionToWriteStats") or {}).values()
                 for s in entries or () if isinstance(s, dict)]
        if instant.action == "deltacommit":
            counted = [(_int(s.get("totalWriteBytes")), _int(s.get("numWrites")))
                       for s in stats if _is_base_file(s.get("path"))]
        else:
            counted = [(sum(_int(s.get("totalWriteBytes")) for s in stats),
                        sum(_int(s.get("numWrites")) for s in stats))]
        for size, records in counted:
            if size > floor and records > 0:
                total_bytes += size
                total_records += records
    if total_bytes > 0 and total_records > 0:
        return max(1, total_bytes // total_records)
    return default


def _is_base_file(path: Any) -> bool:
    return isinstance(path, str) and BaseFileName.matches(path.rsplit("/", 1)[-1])


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


__all__ = ["DEFAULT_ESTIMATION_THRESHOLD", "DEFAULT_ESTIMATOR_MAX_COMMITS",
           "DEFAULT_RECORD_SIZE_ESTIMATE", "ESTIMATION_THRESHOLD", "ESTIMATOR_MAX_COMMITS",
           "RECORD_SIZE_ESTIMATE", "average_record_size"]
