"""``morlog bench SCENARIO [--json] [--out DIR] [--quick]`` (``morlog.cli.bench``): run the
benchmarks of the issue (:func:`morlog.bench.run.run_bench`, which says what ``all`` does).

Each scenario prints one JSON object (``--json``) or a readable summary, and writes
``DIR/<scenario>.json`` and, when matplotlib is installed, ``DIR/<scenario>.png``.
"""

from __future__ import annotations

import argparse
from typing import TextIO

from morlog.bench.names import ALL_SCENARIOS, DEFAULT_OUT, SCALE_TIMEOUT
from morlog.cli.common import EXIT_OK, Commands, emit


def cmd_bench(args: argparse.Namespace, out: TextIO | None = None) -> int:
    # the scenarios' code (pyspark, delta-rs, matplotlib...) loads only to run one
    from morlog.bench.common import print_summary
    from morlog.bench.run import run_bench

    report, written = run_bench(args.scenario, out=args.out, quick=args.quick,
                                repeats=args.repeats, rows=args.rows, timeout=args.timeout)
    # the report is always indented, and strict JSON (no NaN)
    emit(report, lambda r, o: print_summary(r, written, o), out=out, as_json=args.json,
         pretty=True, allow_nan=False)
    return EXIT_OK


def register(commands: Commands) -> None:
    p = commands.add(
        "bench", cmd_bench,
        help="measure filter, lookup, append, tagging, Spark upsert, scale, compaction, "
        "pruning, record index and incremental query performance",
        description="Benchmarks of the index: 'probe' (filter membership tests: morlog's "
        "split-block bloom filter vs pybloom-live vs Hudi's DYNAMIC_V0), 'lookup' (record-key "
        "lookups in one file slice, indexed vs compatibility path), 'append' (writing indexed "
        "vs plain blocks, index bytes, checkpoint policies), 'tag' (tagging an upsert batch "
        "against a generated MOR table: morlog's table lookup vs what Hudi's bloom index can "
        "do, every log block's keys read), 'upsert' (upsert batches from Spark: morlog's insert "
        "routing vs every batch's inserts in new file groups, files and time; needs "
        "pyspark), 'scale' (create, 10 upserts, compaction, snapshot reads before and "
        "after it, and tagging (through the base-key indexes, and through morlog's record "
        "index) of an N-row trips table side by side with delta-rs, hudi-rs and pypaimon, "
        "each step in its own "
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
        "baseline, then 10 upserts), 'spark' (batches of 100,000 rows, 30 %% updates, into "
        "a 1,000,000-row table through df.write.format('morlog') and morlog.spark.upsert "
        "against the Python write client on local[2] and local-cluster[2,1,1024] (not with "
        "--quick), with a no-op data source as Spark's floor: time, rows/s, driver memory; needs "
        "pyspark), 'incremental' (one commit's changes pulled from a "
        "table of --rows N records (default 1,000,000) and 50 commits: file slices read vs "
        "those the commit wrote, time vs a full snapshot read), or 'all'. "
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
                   help="scale: table sizes, e.g. 100000,1000000; compaction and "
                   "incremental: the table's size (the largest given); default 1,000,000, "
                   "20,000 with "
                   "--quick, 200,000 in 'all'")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help=f"scale: per-step limit; a step over it is recorded as a timeout "
                   f"(default {SCALE_TIMEOUT:.0f})")


__all__ = ["cmd_bench", "register"]
