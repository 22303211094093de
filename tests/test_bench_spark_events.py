"""``morlog.bench.spark_events``: a timed call's jobs, stages and tasks from Spark's event log.

The log is written here as Spark 4 writes it (one JSON object per line, times in epoch
milliseconds); a real session's log is read by the ``bench spark`` test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from morlog.bench.spark_events import event_log_confs, event_log_dir, read_events, split


def _log(path: Path, jobs: list[tuple[int, float, float, list[int], list[tuple[float, float]]]],
         tail: str = "") -> None:
    """``jobs``: (id, start s, end s, stage ids, tasks (launch s, finish s) of the first
    stage)."""
    lines = [{"Event": "SparkListenerApplicationStart", "Timestamp": 0}]
    for jid, start, end, stages, tasks in jobs:
        lines.append({"Event": "SparkListenerJobStart", "Job ID": jid,
                      "Submission Time": int(start * 1000), "Stage IDs": stages})
        for a, z in tasks:
            lines.append({"Event": "SparkListenerTaskEnd", "Stage ID": stages[0],
                          "Task Info": {"Launch Time": int(a * 1000),
                                        "Finish Time": int(z * 1000)}})
        lines.append({"Event": "SparkListenerJobEnd", "Job ID": jid,
                      "Completion Time": int(end * 1000)})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines) + tail)


def test_a_call_is_split_into_its_jobs_tasks_and_the_driver_time_outside_them(
        tmp_path: Path) -> None:
    _log(tmp_path / "app-1", [
        (0, 100.0, 101.0, [0], [(100.1, 100.9)]),                  # before the call
        (1, 110.5, 111.5, [1, 2], [(110.6, 111.4), (110.6, 111.2)]),
        (2, 111.2, 112.0, [3], [(111.3, 111.9)]),                  # overlaps job 1
        (3, 113.0, 113.5, [4], [(113.1, 113.4)]),
    ], tail='{"Event": "SparkListenerJobStart", "Job ID": 9, "Subm')  # cut mid-line
    jobs = read_events(str(tmp_path))
    assert len(jobs) == 4
    got = split(jobs, 110.0, 114.0)
    assert got["jobs"] == 3 and got["stages"] == 4 and got["tasks"] == 4
    assert got["task_seconds"] == pytest.approx(0.8 + 0.6 + 0.6 + 0.3)
    # the union of the jobs' intervals: 110.5-112.0 and 113.0-113.5, counted once
    assert got["in_jobs_seconds"] == pytest.approx(2.0)
    assert got["outside_jobs_seconds"] == pytest.approx(2.0)
    assert split(jobs, 120.0, 121.0) == {"jobs": 0, "stages": 0, "tasks": 0,
                                         "task_seconds": 0.0, "in_jobs_seconds": 0.0,
                                         "outside_jobs_seconds": 1.0}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 50), st.floats(0, 10)), max_size=8),
       st.floats(0, 40), st.floats(1, 40))
def test_inside_and_outside_add_up_to_the_call(tmp_path_factory: pytest.TempPathFactory,
                                               spans: list[tuple[float, float]],
                                               start: float, length: float) -> None:
    d = tmp_path_factory.mktemp("log")
    _log(d / "app", [(i, a, a + n, [i], []) for i, (a, n) in enumerate(spans)])
    got = split(read_events(str(d)), start, start + length)
    assert got["in_jobs_seconds"] + got["outside_jobs_seconds"] == pytest.approx(
        length, abs=2e-3)
    assert 0 <= got["in_jobs_seconds"] <= length + 1e-3


def test_the_session_settings_name_a_plain_local_log(tmp_path: Path) -> None:
    confs = event_log_confs(str(tmp_path / "ev"))
    assert confs["spark.eventLog.compress"] == "false"
    assert event_log_dir(confs) == str(tmp_path / "ev")
    # not enabled, compressed, or elsewhere than the local disk: no split
    assert event_log_dir({**confs, "spark.eventLog.enabled": "false"}) is None
    assert event_log_dir({**confs, "spark.eventLog.compress": "true"}) is None
    assert event_log_dir({**confs, "spark.eventLog.dir": "s3a://bucket/logs"}) is None
