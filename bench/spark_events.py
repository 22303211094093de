"""Where a timed Spark call spent its time, from Spark's own event log.

``morlog bench spark`` times each write by the wall clock; this module splits that time the
way Spark records it: the jobs the call ran (``SparkListenerJobStart``/``JobEnd``), their
stages and tasks (``SparkListenerTaskEnd``: launch and finish times, the executor's run
time), and what is left outside every job: the driver's own work (planning the query, the
data source's ``writer()`` and ``commit()``, morlog's planning and commit on the driver).

The sessions the benchmark starts write an uncompressed, unrolled event log
(:func:`event_log_confs`); a session it did not start (an active one, a Spark Connect
server) has none, and the split is then left out. Spark flushes the log at each job's end,
so every task of a finished job is on disk when :func:`read_events` reads it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

#: the events this module reads (the others are skipped before parsing their JSON)
_WANTED = ("SparkListenerJobStart", "SparkListenerJobEnd", "SparkListenerTaskEnd")


def event_log_confs(directory: str) -> dict[str, str]:
    """Spark settings for a session that logs its events as plain JSON lines under
    ``directory`` (created here): one file per application, not compressed, not rolled."""
    os.makedirs(directory, exist_ok=True)
    return {"spark.eventLog.enabled": "true",
            "spark.eventLog.dir": "file://" + os.path.abspath(directory),
            "spark.eventLog.compress": "false",
            "spark.eventLog.rolling.enabled": "false"}


def event_log_dir(conf: Any) -> str | None:
    """The local directory of a session's event log (``conf``: its ``spark.conf``), or None
    when it keeps none there (not enabled, compressed, or not on the local file system)."""
    try:
        enabled = str(conf.get("spark.eventLog.enabled", "false")).lower() == "true"
        compressed = str(conf.get("spark.eventLog.compress", "true")).lower() == "true"
        where = str(conf.get("spark.eventLog.dir", ""))
    except Exception:  # a Connect server may refuse to show its settings
        return None
    if not enabled or compressed or not where.startswith("file:"):
        return None
    path = where[len("file:"):]
    while path.startswith("//"):
        path = path[1:]
    return path if os.path.isdir(path) else None


@dataclass
class _Job:
    start: float
    end: float | None = None
    stages: int = 0
    tasks: int = 0
    task_seconds: float = 0.0
    stage_ids: set[int] = field(default_factory=set)


def read_events(directory: str) -> list[_Job]:
    """Every job of every application logged under ``directory``, with its tasks."""
    jobs: dict[tuple[str, int], _Job] = {}
    stage_job: dict[tuple[str, int], tuple[str, int]] = {}
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not any(w in line[:60] for w in _WANTED):
                    continue
                try:
                    e = json.loads(line)
                except json.JSONDecodeError:
                    continue  # the last line of a log still being written
                kind = e.get("Event")
                if kind == "SparkListenerJobStart":
                    job = _Job(e["Submission Time"] / 1000.0)
                    job.stage_ids = set(e.get("Stage IDs", []))
                    job.stages = len(job.stage_ids)
                    jobs[(name, e["Job ID"])] = job
                    for s in job.stage_ids:
                        stage_job[(name, s)] = (name, e["Job ID"])
                elif kind == "SparkListenerJobEnd":
                    found = jobs.get((name, e["Job ID"]))
                    if found is not None:
                        found.end = e["Completion Time"] / 1000.0
                elif kind == "SparkListenerTaskEnd":
                    owner = jobs.get(stage_job.get((name, e.get("Stage ID", -1)), ("", -1)))
                    info = e.get("Task Info", {})
                    if owner is not None and info.get("Finish Time"):
                        owner.tasks += 1
                        owner.task_seconds += (info["Finish Time"] - info["Launch Time"]) / 1000
    return list(jobs.values())


def split(jobs: list[_Job], start: float, end: float) -> dict[str, Any]:
    """The jobs submitted between ``start`` and ``end`` (epoch seconds: one timed call):
    how many, their stages and tasks, the wall time inside some job (their union), the sum of
    their tasks' times, and the call's time outside every job (the driver's own work)."""
    mine = sorted((j for j in jobs if start <= j.start <= end and j.end is not None),
                  key=lambda j: j.start)
    inside = 0.0
    reach = start
    for j in mine:
        assert j.end is not None
        lo, hi = max(j.start, reach), min(j.end, end)
        if hi > lo:
            inside += hi - lo
        reach = max(reach, hi)
    wall = end - start
    return {"jobs": len(mine), "stages": sum(j.stages for j in mine),
            "tasks": sum(j.tasks for j in mine),
            "task_seconds": round(sum(j.task_seconds for j in mine), 3),
            "in_jobs_seconds": round(inside, 3),
            "outside_jobs_seconds": round(max(0.0, wall - inside), 3)}


__all__ = ["event_log_confs", "event_log_dir", "read_events", "split"]
