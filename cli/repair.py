"""``morlog repair TABLE [--apply] [--json]``: what crashed or hostile writers left in a table,
found (a dry run, the default) and, with ``--apply``, fixed (see ``morlog.writers.repair``).

Exit status: 0 when nothing is left to fix (a clean table, or everything fixed), 1 when
findings remain (a dry run that found something, or findings ``--apply`` could not fix),
2 on an error (one line on standard error).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any, TextIO

from morlog.cli.common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    Commands,
    add_output_options,
    add_table_argument,
    emit_for,
)
from morlog.writers.core.store import DEFAULT_LEASE_SECONDS
from morlog.writers.repair import (
    DEFAULT_MIN_TEMP_AGE_SECONDS,
    Finding,
    RepairResult,
    plan_repair,
    repair,
)


def _line(f: Finding) -> str:
    what = f" {f.instant}" if f.instant else ""
    how = "" if f.fixable else " [reported only]"
    return f"  {f.kind:<15}{what} {f.path}: {f.reason}{how}"


def _report(data: dict[str, Any], out: TextIO) -> None:
    result: RepairResult = data["result"]
    remaining: list[Finding] = data["remaining"]
    plan = result.plan
    if not data["applied"]:
        if not plan.findings:
            print(f"{plan.table}: nothing to repair", file=out)
            return
        print(f"{plan.table}: {len(plan.findings)} finding(s), {len(plan.fixable)} fixable "
              "(dry run: nothing changed; --apply fixes them)", file=out)
        for f in plan.findings:
            print(_line(f), file=out)
        return
    print(f"{plan.table}: fixed {len(result.done)}, skipped {len(result.skipped)}", file=out)
    for f in result.done:
        print("  fixed" + _line(f)[1:], file=out)
    for f, why in result.skipped:
        print(f"  skipped {f.kind} {f.path}: {why}", file=out)
    if remaining:
        print(f"{len(remaining)} finding(s) left:", file=out)
        for f in remaining:
            print(_line(f), file=out)


def _as_json(data: dict[str, Any]) -> dict[str, Any]:
    result: RepairResult = data["result"]
    doc = result.plan.as_dict()
    doc["applied"] = data["applied"]
    if data["applied"]:
        doc["done"] = [asdict(f) for f in result.done]
        doc["skipped"] = [{**asdict(f), "why": why} for f, why in result.skipped]
        doc["rolled_back"] = result.rolled_back
    doc["remaining"] = [asdict(f) for f in data["remaining"]]
    return doc


def cmd_repair(args: argparse.Namespace, out: TextIO | None = None) -> int:
    result = repair(args.table, apply=args.apply, lease_seconds=args.lease,
                    min_temp_age_seconds=args.min_temp_age)
    if args.apply:
        remaining = plan_repair(args.table, lease_seconds=args.lease,
                                min_temp_age_seconds=args.min_temp_age).findings
    else:
        remaining = list(result.plan.findings)
    emit_for(args, {"result": result, "remaining": remaining, "applied": args.apply},
             _report, out, to_json=_as_json)
    return EXIT_PROBLEMS if remaining else EXIT_OK


def register(commands: Commands) -> None:
    p = commands.add(
        "repair", cmd_repair,
        help="find (and with --apply fix) what crashed writers left in a table",
        description="List what crashed, killed or hostile writers left in a table: delta "
        "commits left requested or inflight (PENDING_INSTANT), log files whose end is not a "
        "whole block (TORN_TAIL), temporary files of writers killed before publishing "
        "(ORPHAN_TEMP), staging folders of Spark writes that never committed "
        "(SPARK_STAGING), an S3 lock object whose lease ran out or that cannot be read "
        "(STALE_LOCK), blocks no reader can decode (DAMAGED_BLOCK), damaged files of the "
        "metadata table (MDT_DAMAGED), requested compaction plans that do not decode "
        "(UNREADABLE_PLAN), compactions, log compactions and cleans left pending "
        "(PENDING_SERVICE), hoodie.properties.backup left by a properties rewrite that died "
        "(PROPERTIES_BACKUP); damaged blocks in the middle of a log (CORRUPT_BLOCK) and a writer "
        "holding the lock now (LIVE_WRITER) are reported only. A dry run by default: "
        "nothing changes. With --apply, holding the table's writer lock: pending instants "
        "are rolled back as the write client does, torn tails truncated after the last "
        "whole block, temporary files and staging folders deleted, a stale lock deleted "
        "only if unchanged, undecodable blocks patched so readers skip them as corrupt, "
        "the metadata table rebuilt from the data table, unreadable requested plans "
        "deleted, hoodie.properties restored from its backup; then pending services' plans "
        "are executed again (as morlog compact / logcompact / clean do).",
        epilog="Exit status: 0 nothing left to fix, 1 findings remain (a dry run that found "
        "something, or what --apply could not fix), 2 error.",
    )
    add_table_argument(p)
    p.add_argument("--apply", action="store_true",
                   help="fix the fixable findings (default: a dry run that changes nothing)")
    p.add_argument("--min-temp-age", type=float, default=DEFAULT_MIN_TEMP_AGE_SECONDS,
                   metavar="SECONDS",
                   help="temporary files younger than this may belong to a writer publishing "
                   f"them now and are left alone (default: {DEFAULT_MIN_TEMP_AGE_SECONDS:g})")
    p.add_argument("--lease", type=float, default=DEFAULT_LEASE_SECONDS, metavar="SECONDS",
                   help="S3 writer lock lease: an unreadable lock object older than this is "
                   f"stale (default: {DEFAULT_LEASE_SECONDS:g})")
    add_output_options(p, "print the findings (and what was fixed) as one JSON document")


__all__ = ["cmd_repair", "register"]
