"""``morlog bench SCENARIO [--json] [--out DIR] [--quick]`` (``morlog.bench.cli``): run the
benchmarks of the issue.

Each scenario prints one JSON object (``--json``) or a readable summary, and writes
``DIR/<scenario>.json`` and, when matplotlib is installed, ``DIR/<scenario>.png``. ``all``
runs every scenario (writing their files too) and reports them as one object:
``params``, ``results`` and ``ratios`` keyed by scenario, ``goals`` merged (``upsert`` needs
pyspark: without it ``all`` skips it with a warning, and ``prune`` its Spark queries;
``scale`` and ``compaction``'s table run at 200,000 rows there unless ``--rows`` says
otherwise).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, TextIO

from morlog.logformat.errors import UsageError
from morlog.readers.command import EXIT_OK, emit

from . import append, compaction, lookup, probe, prune, rli, scale, tag
from . import spark_upsert as upsert
from .common import (
    DEFAULT_OUT,
    SCENARIOS,
    Plotter,
    machine,
    plot_goals,
    print_summary,
    progress,
    write_outputs,
)

Runner = Callable[..., dict[str, Any]]

#: every scenario, in the order ``all`` runs them (``tag``, ``upsert``, ``scale`` after those
#: of ``common``)
ALL_SCENARIOS: tuple[str, ...] = tuple(dict.fromkeys((*SCENARIOS, "tag", "upsert", "scale",
                                                      "compaction", "prune", "rli")))
#: repeats when --repeats is not given and not --quick (3 unless listed: a full upsert run
#: takes minutes, a scale run at 1,000,000 rows too)
DEFAULT_REPEATS: dict[str, int] = {"upsert": 1, "scale": 2}

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
}


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

    ``rows`` (``"100000,1000000"``: ``scale``'s sizes, the largest ``compaction``'s table)
    and ``timeout`` (seconds per step, ``scale``'s)."""
    if scenario not in (*ALL_SCENARIOS, "all"):
        raise UsageError("unknown benchmark scenario", expected=[*ALL_SCENARIOS, "all"],
                         actual=scenario)
    if repeats is not None and repeats < 1:
        raise UsageError("--repeats must be at least 1", actual=repeats)
    if timeout is not None and scenario not in ("scale", "all"):
        raise UsageError("--timeout is an option of bench scale", actual=scenario)
    if rows is not None and scenario not in ("scale", "compaction", "all"):
        raise UsageError("--rows is an option of bench scale and bench compaction",
                         actual=scenario)
    if timeout is not None and timeout <= 0:
        raise UsageError("--timeout must be positive", actual=timeout)
    sizes = scale.parse_rows(rows) if rows is not None else None
    if sizes is None and scenario == "all" and not quick:
        sizes = scale.ALL_ROWS
    names = ALL_SCENARIOS if scenario == "all" else (scenario,)
    reports: dict[str, dict[str, Any]] = {}
    written: list[str] = []
    for name in names:
        if name == "upsert" and scenario == "all" and not upsert.available():
            progress("warning: pyspark is not installed; skipping the upsert scenario")
            continue
        run, plot = RUNNERS[name]
        n = repeats if repeats is not None else (1 if quick else DEFAULT_REPEATS.get(name, 3))
        extra: dict[str, Any] = {"rows": sizes, "timeout": timeout} if name == "scale" else {}
        if name == "compaction" and sizes is not None:
            extra = {"rows": max(sizes)}  # its table scenario: one size, the largest
        reports[name] = run(quick=quick, repeats=n, **extra)
        written += write_outputs(reports[name], out, plot)
    if scenario != "all":
        return reports[scenario], written
    report = combine(reports)
    written += write_outputs(report, out, plot_goals)
    return report, written


def cmd_bench(args: argparse.Namespace, out: TextIO | None = None) -> int:
    report, written = run_bench(args.scenario, out=args.out, quick=args.quick,
                                repeats=args.repeats, rows=args.rows, timeout=args.timeout)
    # the report is always indented, and strict JSON (no NaN)
    emit(report, lambda r, o: print_summary(r, written, o), out=out, as_json=args.json,
         pretty=True, allow_nan=False)
    return EXIT_OK


def add_bench_command(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="measure filter, lookup, append, tagging, Spark upsert, scale, compaction, "
        "pruning and record index performance",
        description="Benchmarks of the index: 'probe' (filter membership tests: morlog's "
        "split-block bloom filter vs pybloom-live vs Hudi's DYNAMIC_V0), 'lookup' (record-key "
        "lookups in one file slice, indexed vs compatibility path), 'append' (writing indexed "
        "vs plain blocks, index bytes, checkpoint policies), 'tag' (tagging an upsert batch "
        "against a generated MOR table: morlog's table lookup vs what Hudi's bloom index can "
        "do, every log block's keys read), 'upsert' (upsert batches from Spark: morlog's insert "
        "routing vs every batch's inserts in new file groups, files and time; needs "
        "pyspark), 'scale' (create, 10 upserts, snapshot reads and tagging (through the "
        "base-key indexes, and through morlog's record index) of an N-row "
        "trips table side by side with delta-rs and hudi-rs, each step in its own "
        "subprocess: time and peak memory; --rows N[,N...], default 1,000,000), "
        "'compaction' (log compaction and compaction of one file slice of 50 upserts with "
        "updates and deletes, and of a 4-partition table (--rows N, default 1,000,000, "
        "then 10 upserts): merged read time before and after log compaction, bytes each "
        "service writes, compaction time vs writing the same rows as new base files, the "
        "slice's cumulative index false-positive rate for non-live keys), 'prune' "
        "(column-statistics pruning of 200 file slices, a quarter with rollback, delete or "
        "failed-commit blocks: slices pruned by morlog vs Hudi's rule, soundness against the "
        "merged snapshot, hudi-rs's filtered read, Table and Spark query times with and "
        "without pruning; needs hudi, Spark optional), 'rli' (the record "
        "index on 1,000,000 keys in 16 shards: bytes per mapping, a 100,000-key lookup on "
        "one core, bootstrap time, tagging through it vs the file probes and the bloom-index "
        "baseline, then 10 upserts), or 'all'. "
        "Prints one JSON object (--json) or a summary, and writes DIR/<scenario>.json and "
        "DIR/<scenario>.png (the plot needs matplotlib).",
    )
    p.add_argument("scenario", choices=[*ALL_SCENARIOS, "all"], help="what to measure")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"directory for <scenario>.json and .png (default: {DEFAULT_OUT}/)")
    p.add_argument("--quick", action="store_true",
                   help="about 20x smaller sizes and one repeat (smoke test)")
    p.add_argument("--repeats", type=int, default=None, metavar="N",
                   help="timed runs per measurement, best kept (default: 3, 1 for upsert, "
                   "2 for scale; 1 with --quick)")
    p.add_argument("--rows", default=None, metavar="N[,N...]",
                   help="scale: table sizes, e.g. 100000,1000000; compaction: the table "
                   "scenario's size (the largest given); default 1,000,000, 20,000 with "
                   "--quick, 200,000 in 'all'")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help=f"scale: per-step limit; a step over it is recorded as a timeout "
                   f"(default {scale.DEFAULT_TIMEOUT:.0f})")
    p.set_defaults(func=cmd_bench)


__all__ = ["add_bench_command", "cmd_bench", "combine", "run_bench"]
