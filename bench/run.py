"""Run ``morlog bench`` scenarios (``morlog.bench.run``): one, or ``all`` of them with their
reports combined; the command itself is ``morlog.cli.bench``.

Each scenario writes ``DIR/<scenario>.json`` and, when matplotlib is installed,
``DIR/<scenario>.png``. ``all`` runs every scenario (writing their files too) and reports them
as one object: ``params``, ``results`` and ``ratios`` keyed by scenario, ``goals`` merged
(``upsert`` needs pyspark: without it ``all`` skips it with a warning, and ``prune`` its Spark
queries; ``scale`` and ``compaction``'s table run at 200,000 rows there unless ``--rows`` says
otherwise).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable
from typing import Any

from morlog.bench import append, compaction, incremental, lookup, probe, prune, rli, scale, tag
from morlog.bench import spark as spark_bench
from morlog.bench import spark_upsert as upsert
from morlog.bench.common import (
    SCENARIOS,
    Plotter,
    machine,
    plot_goals,
    progress,
    write_outputs,
)
from morlog.bench.names import ALL_SCENARIOS, DEFAULT_OUT
from morlog.bench.spark_events import event_log_confs
from morlog.logformat.errors import UsageError

Runner = Callable[..., dict[str, Any]]

#: every scenario, in the order ``all`` runs them (``tag``, ``upsert``, ``scale`` after those
#: of ``common``)
assert set(SCENARIOS) <= set(ALL_SCENARIOS)
#: repeats when --repeats is not given and not --quick (3 unless listed: a full upsert run
#: takes minutes, a scale run at 1,000,000 rows too)
DEFAULT_REPEATS: dict[str, int] = {"upsert": 1, "scale": 2, "spark": 1}

RUNNERS: dict[str, tuple[Runner, Plotter]] = {
    "probe": (probe.run, probe.plot),
    "lookup": (lookup.run, lookup.plot),
    "append": (append.run, append.plot),
    "tag": (tag.run, tag.plot),
    "upsert": (upsert.run, upsert.plot),
    "scale": (scale.run, scale.plot),
    "compaction": (compaction.run, compaction.plot),
    "prune": (prune.run, prune.plot),
    "rli": (rli.run, rli.plot),
    "spark": (spark_bench.run, spark_bench.plot),
    "incremental": (incremental.run, incremental.plot),
}


#: the scenarios that run Spark on this process's session (``bench all`` starts one for them
#: all, and stops it after the last: one start-up instead of one each)
SPARK_SCENARIOS = ("upsert", "prune", "spark")


def _shared_spark(stack: contextlib.ExitStack) -> bool:
    """Start the session the Spark scenarios of ``bench all`` share (with an event log, so
    that ``bench spark`` can split its batches), unless one is active already; it stops when
    ``stack`` closes."""
    logs = stack.enter_context(tempfile.TemporaryDirectory(prefix="morlog-bench-events-"))
    session = upsert.start_spark(event_log_confs(logs))
    if session.owned:
        stack.callback(session.spark.stop)
    return True


def combine(reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One report of several scenarios: parts keyed by scenario, goals merged."""
    goals: dict[str, dict[str, Any]] = {}
    for name, rep in reports.items():
        for g, entry in rep["goals"].items():
            goals[g if g not in goals else f"{name}.{g}"] = entry
    return {
        "scenario": "all",
        "machine": machine(),
        "params": {n: r["params"] for n, r in reports.items()},
        "results": {n: r["results"] for n, r in reports.items()},
        "ratios": {n: r["ratios"] for n, r in reports.items()},
        "goals": goals,
    }


def run_bench(scenario: str, *, out: str = DEFAULT_OUT, quick: bool = False,
              repeats: int | None = None, rows: str | None = None,
              timeout: float | None = None) -> tuple[dict[str, Any], list[str]]:
    """Run one scenario (or ``all``); return its report and the files written.

    ``rows`` (``"100000,1000000"``: ``scale``'s sizes, the largest ``compaction``'s and
    ``incremental``'s table)
    and ``timeout`` (seconds per step, ``scale``'s)."""
    if scenario not in (*ALL_SCENARIOS, "all"):
        raise UsageError("unknown benchmark scenario", expected=[*ALL_SCENARIOS, "all"],
                         actual=scenario)
    if repeats is not None and repeats < 1:
        raise UsageError("--repeats must be at least 1", actual=repeats)
    if timeout is not None and scenario not in ("scale", "all"):
        raise UsageError("--timeout is an option of bench scale", actual=scenario)
    if rows is not None and scenario not in ("scale", "compaction", "incremental", "all"):
        raise UsageError("--rows is an option of bench scale, compaction and incremental",
                         actual=scenario)
    if timeout is not None and timeout <= 0:
        raise UsageError("--timeout must be positive", actual=timeout)
    sizes = scale.parse_rows(rows) if rows is not None else None
    if sizes is None and scenario == "all" and not quick:
        sizes = scale.ALL_ROWS
    names = ALL_SCENARIOS if scenario == "all" else (scenario,)
    reports: dict[str, dict[str, Any]] = {}
    written: list[str] = []
    shared = False
    with contextlib.ExitStack() as stack:
        for name in names:
            if name in ("upsert", "spark") and scenario == "all" and not upsert.available():
                progress(f"warning: pyspark is not installed; skipping the {name} scenario")
                continue
            if (name in SPARK_SCENARIOS and scenario == "all" and upsert.available()
                    and not shared):
                shared = _shared_spark(stack)
            run, plot = RUNNERS[name]
            n = repeats if repeats is not None else (1 if quick else
                                                     DEFAULT_REPEATS.get(name, 3))
            extra: dict[str, Any] = ({"rows": sizes, "timeout": timeout} if name == "scale"
                                     else {})
            if name in ("compaction", "incremental") and sizes is not None:
                extra = {"rows": max(sizes)}  # one table: one size, the largest
            reports[name] = run(quick=quick, repeats=n, **extra)
            written += write_outputs(reports[name], out, plot)
    if scenario != "all":
        return reports[scenario], written
    report = combine(reports)
    written += write_outputs(report, out, plot_goals)
    return report, written


__all__ = ["ALL_SCENARIOS", "DEFAULT_REPEATS", "RUNNERS", "combine", "run_bench"]
