"""``morlog compact TABLE``: Hudi's table services from the command line (spec/services.md).

Each command plans and runs its service on every file slice that needs it; ``--dry-run``
prints the plan and changes nothing; ``--json`` prints one JSON document; a progress bar
goes to standard error while file groups are written (terminals only). ``-o KEY=VALUE``
passes Hudi's write options (``hoodie.*``), as the write client takes them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, Protocol, TextIO, TypeVar

from morlog.cli.common import (
    EXIT_OK,
    Commands,
    add_output_options,
    add_table_argument,
    add_write_options,
    emit_for,
    progress_bar,
    write_options,
)
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig
from morlog.writers.services.cleaning import CleanReport, clean
from morlog.writers.services.compaction import CompactReport, compact
from morlog.writers.services.logcompaction import LogCompactReport, log_compact


def table_of(args: argparse.Namespace) -> MorTable:
    """The table ``args.table``, opened with the ``-o`` write options given."""
    return MorTable(args.table, WriteConfig.from_hoodie_options(write_options(args)))


class _Report(Protocol):
    def as_dict(self) -> dict[str, Any]: ...


R = TypeVar("R", bound=_Report)


def _run_service(args: argparse.Namespace, out: TextIO | None, doing: str,
                 service: Callable[..., R], text: Callable[[R, TextIO], None]) -> int:
    """Run ``service`` on the table (``--dry-run``, a progress bar ``doing``) and print its
    report."""
    with progress_bar(args, doing) as progress:
        report = service(table_of(args), dry_run=args.dry_run, progress=progress)
    emit_for(args, report, text, out, to_json=lambda r: r.as_dict())
    return EXIT_OK


def _compact_text(report: CompactReport, out: TextIO) -> None:
    if report.dry_run:
        if not report.planned:
            print("nothing to compact: no latest file slice has log files", file=out)
            return
        for p in report.planned:
            if p.get("pending"):
                print(f"pending compaction {p['instant']}: would run", file=out)
            else:
                base = p["base_file"] or "(no base file)"
                print(f"would compact {p['partition'] or '.'}/{p['file_id']}: {base} + "
                      f"{len(p['log_files'])} log file(s), "
                      f"{int(p['metrics']['TOTAL_LOG_FILES_SIZE'])} log bytes", file=out)
        print("(dry run: nothing changed)", file=out)
        return
    if not report.results:
        print("nothing to compact: no latest file slice has log files", file=out)
        return
    for r in report.results:
        groups = [g for g in r.compacted if g[2] is not None]
        print(f"compaction {r.instant}: {len(r.compacted)} file group(s), {len(groups)} new "
              f"base file(s), {r.records_written} records, {r.bytes_written} bytes in "
              f"{r.seconds:.2f} s", file=out)


def cmd_compact(args: argparse.Namespace, out: TextIO | None = None) -> int:
    return _run_service(args, out, "compacting", compact, _compact_text)


def _clean_text(report: CleanReport, out: TextIO) -> None:
    for instant in report.pending:
        verb = "would finish" if report.dry_run else "finished"
        print(f"pending clean {instant}: {verb} from its plan", file=out)
    plan = report.plan
    if report.dry_run:
        if plan is None:
            print("nothing to clean: every file slice is needed by a retained instant",
                  file=out)
        else:
            keep = (plan.get("earliestInstantToRetain") or {}).get("timestamp") or "-"
            per = plan.get("filePathsToBeDeletedPerPartition") or {}
            print(f"would clean ({plan['policy']}, earliest commit to retain {keep}):",
                  file=out)
            for part, entries in sorted(per.items()):
                names = [str(e["filePath"]).rsplit("/", 1)[-1] for e in entries]
                print(f"  {part or '.'}: {len(names)} file(s): {', '.join(names)}", file=out)
            for part in plan.get("partitionsToBeDeleted") or []:
                print(f"  {part}: the partition would be deleted", file=out)
        print("(dry run: nothing changed)", file=out)
        return
    if not report.results:
        print("nothing to clean: every file slice is needed by a retained instant", file=out)
        return
    for r in report.results:
        keep = r.earliest_retained or "-"
        gone = f", {len(r.partitions_deleted)} partition(s) deleted" if (
            r.partitions_deleted) else ""
        print(f"clean {r.instant} ({r.policy}, earliest commit to retain {keep}): "
              f"{len(r.deleted)} file(s) deleted, {len(r.failed)} already gone{gone} in "
              f"{r.seconds:.2f} s", file=out)


def cmd_clean(args: argparse.Namespace, out: TextIO | None = None) -> int:
    return _run_service(args, out, "cleaning", clean, _clean_text)


def _logcompact_text(report: LogCompactReport, out: TextIO) -> None:
    for instant, why in report.dropped:
        print(f"dropped pending log compaction {instant}: {why}", file=out)
    if report.dry_run:
        if not report.planned:
            print("nothing to log-compact: no latest file slice has enough small log blocks",
                  file=out)
            return
        for p in report.planned:
            if p.get("pending"):
                what = "would be dropped" if p.get("refused") else "would run"
                print(f"pending log compaction {p['instant']}: {what}", file=out)
            else:
                print(f"would log-compact {p['partition'] or '.'}/{p['file_id']}: "
                      f"{len(p['log_files'])} log file(s), "
                      f"{int(p['metrics']['TOTAL_LOG_FILES_SIZE'])} log bytes", file=out)
        print("(dry run: nothing changed)", file=out)
        return
    if not report.results:
        print("nothing to log-compact: no latest file slice has enough small log blocks",
              file=out)
        return
    for r in report.results:
        replaced = sum(len(g[3]) for g in r.compacted)
        print(f"log compaction {r.instant}: {len(r.compacted)} file group(s), "
              f"{replaced} instant(s) replaced by {r.blocks_written} block(s): "
              f"{r.records_written} records, {r.deletes_written} deletes, "
              f"{r.bytes_written} bytes in {r.seconds:.2f} s", file=out)


def cmd_logcompact(args: argparse.Namespace, out: TextIO | None = None) -> int:
    return _run_service(args, out, "log-compacting", log_compact, _logcompact_text)


def _common(p: argparse.ArgumentParser, what: str) -> None:
    add_table_argument(p)
    p.add_argument("--dry-run", action="store_true",
                   help=f"print what {what} would do and change nothing")
    add_write_options(p)
    add_output_options(p, "print the plan and what ran as one JSON document")


def register(commands: Commands) -> None:
    p = commands.add(
        "compact", cmd_compact,
        help="compact file slices: base file and logs merged into a new base file",
        description="Run the compactions pending on the table's timeline, then plan one "
        "over every latest file slice that has log files (file groups under pending "
        "clustering excepted) and run it, holding the table's writer lock: afterwards no "
        "latest slice has log files. Each slice's base file and logs are merged with the "
        "table's merge rules into a new base file of the table's format (with Hudi's "
        "footers), which starts the file group's next slice; the metadata table is kept "
        "true in the same instant. The timeline holds Hudi's compaction plan "
        "(<instant>.compaction.requested), .inflight and the completed commit, which Hudi "
        "and hudi-rs read. A failed compaction is undone and its plan left requested: the "
        "next 'morlog compact' runs it again. Old slices stay for readers of earlier "
        "instants until 'morlog clean' removes them.",
        epilog="Exit status: 0 ok, 2 error (one line on standard error).",
    )
    _common(p, "compaction")
    p = commands.add(
        "logcompact", cmd_logcompact,
        help="log-compact file slices: runs of log blocks merged into new indexed blocks",
        description="Run the log compactions pending on the table's timeline (dropping "
        "those that may never run, because a compaction came after them), then plan one "
        "over every latest file slice whose logs hold a run of at least "
        "hoodie.log.compaction.blocks.threshold (default 5) blocks smaller than "
        "morlog.log.compaction.max.block.bytes (default 128 MiB), file groups under a "
        "pending compaction, log compaction or clustering excepted, and run it, holding "
        "the table's writer lock (RFC-48). Each run's blocks (not the base file) are "
        "merged with the table's merge rules into new indexed blocks in a new log file of "
        "the slice, listing the instants they replace in COMPACTED_BLOCK_TIMES: the live "
        "records (cut at hoodie.logfile.data.block.max.size) and a delete block of the "
        "keys the run deletes. Their index covers exactly the blocks that still count, so "
        "deleted and rolled-back keys leave it. The metadata table is kept true in the "
        "same instant. The timeline holds Hudi's log compaction plan "
        "(<instant>.logcompaction.requested), .inflight and the completed deltacommit. A "
        "failed log compaction is undone and its plan left requested: the next run "
        "executes it again.",
        epilog="Options: -o hoodie.log.compaction.blocks.threshold=N, "
        "-o hoodie.logfile.data.block.max.size=BYTES, "
        "-o morlog.log.compaction.max.block.bytes=BYTES, and Hudi's write options. "
        "Exit status: 0 ok, 2 error (one line on standard error).",
    )
    _common(p, "log compaction")

    p = commands.add(
        "clean", cmd_clean,
        help="clean: delete the file slices no retained instant needs",
        description="Finish the cleans pending on the table's timeline, then plan one with "
        "Hudi's cleaner policy and run it, holding the table's writer lock. With no option "
        "Hudi's defaults apply (hoodie.clean.policy=KEEP_LATEST_COMMITS, "
        "hoodie.clean.commits.retained=10); e.g. -o hoodie.clean.commits.retained=1 cleans "
        "aggressively, -o hoodie.clean.policy=KEEP_LATEST_FILE_VERSIONS with "
        "hoodie.clean.fileversions.retained=N keeps N slices per file group. Never deleted: "
        "a file group's latest slice, the latest slice before the earliest commit to "
        "retain, slices a pending compaction needs, savepointed files. File groups replaced "
        "(insert_overwrite, delete_partition, clustering) before the earliest commit to "
        "retain are deleted whole. The timeline holds Hudi's clean plan "
        "(<instant>.clean.requested), .inflight and the completed clean, and the metadata "
        "table is kept true in the same instant. Time travel to an instant before the "
        "earliest commit retained is refused afterwards, as Hudi refuses it. A clean that "
        "fails stays pending; the next 'morlog clean' finishes it from its plan.",
        epilog="Exit status: 0 ok, 2 error (one line on standard error).",
    )
    _common(p, "the clean")


__all__ = ["cmd_clean", "cmd_compact", "cmd_logcompact", "register", "table_of"]
