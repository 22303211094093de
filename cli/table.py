"""Table commands of the ``morlog`` tool: ``slices``, ``snapshot``, ``timeline``, ``prune``
and ``tag`` (``morlog.cli.table``; errors through
``morlog.cli.common.run_guarded``, results through ``morlog.cli.common.emit``).

``morlog slices TABLE --json``: one object per latest file slice with ``partition``,
``file_id``, ``base_instant``, ``base_file``, ``log_files`` and ``instants`` (first and last
block instant of its logs). ``morlog snapshot TABLE [--as-of I] [--columns a,b]
--format jsonl|parquet [--out FILE] [--json]``: the merged snapshot, Hudi meta columns
included; ``--query-type read_optimized|incremental|cdc [--begin I] [--end I]``: Hudi's
other query types (spec/queries.md), ``--json`` one JSON array of the rows.
``morlog timeline TABLE --json``: one object per instant of the active timeline with
``instant``, ``action``, ``state`` and ``completed`` (:meth:`Table.instants`).
``morlog tag TABLE --keys FILE --json``: key -> ``{"partition", "file_id"}`` or null.
``morlog prune TABLE --where EXPR [--as-of I] [--rule morlog|hudi] --json``: one object
``{"kept": [...], "pruned": [...]}`` whose items are ``{"partition", "file_id", "reason"}``
(``morlog.readers.prune``); ``morlog snapshot ... --where EXPR``: only the rows for which the
predicate is TRUE, read from the slices pruning keeps. A bad expression exits 2 with the
typed error.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import decimal
import json
import sys
from collections.abc import Iterator
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.parquet as pq

from morlog.cli.common import (
    EXIT_OK,
    Commands,
    add_output_options,
    add_table_argument,
    emit_for,
    output,
    read_keys_file,
)
from morlog.logformat.errors import UsageError
from morlog.readers.logfile import LogFileReader
from morlog.readers.lookup import KeyTagger, TagResult
from morlog.readers.prune import RULES, PruneResult, prune
from morlog.readers.table import Table


def _slice_instants(table: Table, partition: str, names: list[str]) -> list[str]:
    directory = table.slice_dir(partition)
    instants: list[str] = []
    for n in names:
        with LogFileReader(table.storage.source(table.storage.join(directory, n))) as r:
            instants.extend(b.instant for b in r.blocks() if b.instant)
    return sorted(set(instants))


def cmd_slices(args: argparse.Namespace, out: TextIO | None = None) -> int:
    table = Table(args.table)
    rows: list[dict[str, Any]] = []
    for s in table.file_slices(table.resolve_instant(args.as_of)):
        instants = _slice_instants(table, s.partition, s.log_files)
        rows.append({"partition": s.partition, "file_id": s.file_id,
                     "base_instant": s.base_instant, "base_file": s.base_file,
                     "log_files": s.log_files,
                     "instants": {"first": instants[0] if instants else None,
                                  "last": instants[-1] if instants else None,
                                  "all": instants}})

    def text(rows: list[dict[str, Any]], o: TextIO) -> None:
        print(f"{table.config.name} (table version {table.version}, "
              f"{table.config.merge_mode})", file=o)
        for r in rows:
            print(f"{r['partition'] or '.'} {r['file_id']} base {r['base_file'] or '-'} "
                  f"logs {len(r['log_files'])} instants {r['instants']['first'] or '-'}.."
                  f"{r['instants']['last'] or '-'}", file=o)

    emit_for(args, rows, text, out)
    return EXIT_OK


def _json_value(v: Any) -> Any:
    if isinstance(v, (dt.datetime, dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, bytes):
        return base64.b64encode(v).decode("ascii")
    if isinstance(v, dict):
        return {k: _json_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    return v


def cmd_snapshot(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Rows stream out as they are merged (one file slice at a time): JSON lines, or a
    Parquet file; ``--json``: one JSON array of the rows (held in memory)."""
    out = output(out)
    table = Table(args.table)
    columns = [c for c in args.columns.split(",") if c] if args.columns else None
    parts = _query_parts(table, args, columns)
    if getattr(args, "json", False):
        if args.format == "parquet":
            raise UsageError("--json prints rows as JSON: not with --format parquet")
        rows = [{k: _json_value(v) for k, v in row.items()}
                for t in parts for row in t.to_pylist()]
        sink = open(args.out, "w", encoding="utf-8") if args.out else out  # noqa: SIM115
        try:
            sink.write(json.dumps(rows, ensure_ascii=False) + "\n")
        finally:
            if sink is not out:
                sink.close()
        return EXIT_OK
    if args.format == "parquet":
        if not args.out:
            raise UsageError("--format parquet needs --out FILE")
        writer = None
        try:
            for t in parts:
                if writer is None:
                    writer = pq.ParquetWriter(args.out, t.schema)
                writer.write_table(t.cast(writer.schema) if t.schema != writer.schema else t)
            if writer is None:
                # no row: still a file, of no rows, with the table's columns
                empty = table.empty(columns)
                writer = pq.ParquetWriter(args.out, empty.schema)
                writer.write_table(empty)
        finally:
            if writer is not None:
                writer.close()
        return EXIT_OK
    sink = open(args.out, "w", encoding="utf-8") if args.out else out  # noqa: SIM115
    try:
        for t in parts:
            for row in t.to_pylist():
                sink.write(json.dumps({k: _json_value(v) for k, v in row.items()},
                                      ensure_ascii=False) + "\n")
    finally:
        if sink is not out:
            sink.close()
    return EXIT_OK


def _query_parts(table: Table, args: argparse.Namespace, columns: list[str] | None
                 ) -> Iterator[pa.Table]:
    """The rows of ``--query-type`` (spec/queries.md): the snapshot one file slice at a time,
    the other query types as one table."""
    kind = getattr(args, "query_type", None) or "snapshot"
    begin, end = getattr(args, "begin", None), getattr(args, "end", None)
    if kind in ("incremental", "cdc"):
        if args.as_of:
            raise UsageError(f"--query-type {kind} reads --begin/--end, not --as-of")
        if begin is None:
            raise UsageError(f"--query-type {kind} needs --begin INSTANT (or 'earliest')")
    elif begin is not None or end is not None:
        raise UsageError("--begin and --end belong to --query-type incremental or cdc")
    if kind == "snapshot":
        return iter(table.snapshot(args.as_of, columns, args.where))
    if kind == "cdc":
        from morlog.readers.cdc import read_cdc

        if args.where:
            raise UsageError("--where does not apply to --query-type cdc")
        return iter([read_cdc(table, begin, end, columns)])
    return iter([table.read(args.as_of, columns, args.where, query_type=kind, begin=begin,
                            end=end, fallback=getattr(args, "fallback", None))])


def cmd_timeline(args: argparse.Namespace, out: TextIO | None = None) -> int:
    table = Table(args.table)
    rows = [i.as_dict() for i in table.instants()]

    def text(rows: list[dict[str, Any]], o: TextIO) -> None:
        print(f"{table.config.name} (table version {table.version}): {len(rows)} instants "
              "on the active timeline", file=o)
        for r in rows:
            print(f"{r['instant']} {r['action']:<14} {r['state']:<9} "
                  f"{r['completed'] or '-'}", file=o)

    emit_for(args, rows, text, out)
    return EXIT_OK


def _print_pruned(result: PruneResult, out: TextIO, rule: str) -> None:
    n = len(result.kept) + len(result.pruned)
    print(f"{len(result.kept)} of {n} file slices kept, {len(result.pruned)} pruned "
          f"(rule {rule})", file=out)
    for word, items in (("keep ", result.kept), ("prune", result.pruned)):
        for d in items:
            print(f"{word} {d.partition or '.'} {d.file_id}: {d.reason}", file=out)


def cmd_prune(args: argparse.Namespace, out: TextIO | None = None) -> int:
    table = Table(args.table)
    result = prune(table, args.where, args.as_of, rule=args.rule)
    emit_for(args, result, lambda r, o: _print_pruned(r, o, args.rule), out,
             to_json=PruneResult.to_json)
    return EXIT_OK


def _print_tags(result: TagResult, out: TextIO) -> None:
    for k, loc in zip(result.keys, result.locations, strict=True):
        print(f"{k}\t{'new' if loc is None else (loc[0] or '.') + '/' + loc[1]}", file=out)
    st = result.stats
    if st.record_index_shards:
        print(f"Hudi record index: {st.record_index_shards} shards, "
              f"{st.record_index_blocks} log blocks, {st.reads} files, {st.bytes_read} bytes",
              file=sys.stderr)
        return
    print(f"{st.slices} slices, {st.base_footers} base footers, {st.log_probes} log "
          f"probes, {st.reads} ranged reads, {st.bytes_read} bytes", file=sys.stderr)


def cmd_tag(args: argparse.Namespace, out: TextIO | None = None) -> int:
    keys = read_keys_file(args.keys)
    table = Table(args.table)
    result = KeyTagger(table, args.as_of).tag(keys)
    emit_for(args, result, _print_tags, out, to_json=TagResult.as_dict)
    return EXIT_OK


#: the TABLE argument of the commands that read a table
_TABLE_HELP = "table base path (local path or a pyarrow.fs URI)"


def _add_as_of(p: argparse.ArgumentParser, time_travel: bool = True) -> None:
    default = "time travel; default: latest" if time_travel else "default: latest"
    p.add_argument("--as-of", metavar="INSTANT", help=f"instant to read the table at ({default})")


def register(commands: Commands) -> None:
    p = commands.add(
        "slices", cmd_slices, help="list a table's latest file slices",
        description="List the latest file slice of every file group: "
        "partition, file id, base file, log files (in Hudi's order) and the "
        "range of instants in the logs. With --json: one object per slice "
        "(partition, file_id, base_instant, base_file, log_files, instants).")
    add_table_argument(p, _TABLE_HELP, metavar=None)
    _add_as_of(p)
    add_output_options(p, "print a JSON array, one object per file slice")

    s = commands.add(
        "snapshot", cmd_snapshot, help="read a table's merged snapshot",
        description="Read the merged snapshot (base files merged with their "
        "logs, Hudi's merge semantics) at the latest or a given instant, one "
        "file slice at a time, and write it as JSON lines (one object per row; "
        "dates and times ISO 8601, decimals as strings, bytes Base64) or as a "
        "Parquet file. Hudi's meta columns are included. --query-type reads "
        "Hudi's other query types: read_optimized, incremental and cdc over "
        "(--begin, --end].")
    add_table_argument(s, _TABLE_HELP, metavar=None)
    _add_as_of(s)
    s.add_argument("--columns", metavar="A,B",
                   help="comma-separated columns (default: all, meta included)")
    s.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl",
                   help="output format (default jsonl: one JSON object per row)")
    s.add_argument("--out", metavar="FILE",
                   help="output file (required for parquet; default stdout)")
    s.add_argument("--where", metavar="EXPR",
                   help="only rows for which this predicate is TRUE (comparisons, IN, IS "
                   "[NOT] NULL, AND, OR, NOT on data and partition columns); file slices "
                   "that cannot hold such a row are not read (see 'morlog prune')")
    s.add_argument("--query-type", choices=["snapshot", "read_optimized", "incremental", "cdc"],
                   default="snapshot",
                   help="Hudi's query types (hoodie.datasource.query.type): snapshot (merged, "
                   "default); read_optimized (the latest base files only, no log merged); "
                   "incremental (the latest state, as of --end, of the records the writes "
                   "in (--begin, --end] wrote; only the file groups they wrote are read); cdc "
                   "(the changes of those writes, Hudi's op/ts_ms/before/after)")
    s.add_argument("--begin", metavar="INSTANT",
                   help="incremental/cdc: exclusive start (hoodie.datasource.read.begin."
                   "instanttime): a completion time on table version 8+, an instant time on "
                   "6, in the forms --as-of takes, or 'earliest'")
    s.add_argument("--end", metavar="INSTANT",
                   help="incremental/cdc: inclusive end (default: the latest)")
    s.add_argument("--fallback", action="store_true", default=None,
                   help="incremental: when the range reaches archived instants or files a "
                   "clean deleted, scan the latest file slices instead of failing "
                   "(hoodie.datasource.read.incr.fallback.fulltablescan.enable)")
    s.add_argument("--json", action="store_true",
                   help="print one JSON array of the rows (instead of JSON lines)")

    tl = commands.add(
        "timeline", cmd_timeline, help="list a table's instants",
        description="List every instant of the table's active timeline, "
        "oldest first: requested time, action, state (REQUESTED, INFLIGHT, "
        "COMPLETED) and completion time (table version 8+; '-' for pending "
        "instants and for version 6 tables, whose timeline records none). "
        "The instant of a completed write is what --as-of takes. Archived "
        "instants are not listed. With --json: one object per instant "
        "(instant, action, state, completed).")
    add_table_argument(tl, _TABLE_HELP, metavar=None)
    add_output_options(tl, "print a JSON array, one object per instant")

    pr = commands.add(
        "prune", cmd_prune, help="which file slices a predicate needs",
        description="Decide, for every latest file slice, whether it may "
        "hold a row of the merged snapshot for which the predicate is TRUE, "
        "from partition values and column statistics (base files: the "
        "metadata table's column_stats or the file's footer; logs: each "
        "valid data block's statistics; blocks of failed or rolled-back "
        "commits, delete and command blocks never keep a slice). Prints a "
        "summary and one line per slice with the reason; with --json one "
        "object {\"kept\": [...], \"pruned\": [...]} whose items are "
        "{\"partition\", \"file_id\", \"reason\"}. A bad expression exits 2.")
    add_table_argument(pr, _TABLE_HELP, metavar=None)
    pr.add_argument("--where", required=True, metavar="EXPR",
                    help="the predicate, e.g. \"fare > 40 AND city IN ('chennai', 'sao_paulo')\"")
    _add_as_of(pr)
    pr.add_argument("--rule", choices=list(RULES), default="morlog",
                    help="morlog's rule (default), or Hudi's rule on the same statistics "
                    "(a file without statistics keeps its slice), for comparison")
    add_output_options(pr, "print one JSON object {kept, pruned}")

    t = commands.add(
        "tag", cmd_tag, help="find the file group of keys",
        description="For each key (one per line in FILE): its partition and "
        "file group, or 'new' (null with --json) when the key is not in the "
        "table. Uses base-file footers and the logs' indexes (stored or "
        "recomputed); the number of reads goes to standard error.")
    add_table_argument(t, _TABLE_HELP, metavar=None)
    t.add_argument("--keys", required=True, metavar="FILE", help="file with one key per line")
    _add_as_of(t, time_travel=False)
    add_output_options(t, "print a JSON object: key -> {partition, file_id} or null")
