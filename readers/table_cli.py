"""Table commands of the ``morlog`` tool: ``slices``, ``snapshot`` and ``tag``.

``morlog slices TABLE --json``: one object per latest file slice with ``partition``,
``file_id``, ``base_instant``, ``base_file``, ``log_files`` and ``instants`` (first and last
block instant of its logs). ``morlog snapshot TABLE [--as-of I] [--columns a,b]
--format jsonl|parquet [--out FILE]``: the merged snapshot, Hudi meta columns included.
``morlog tag TABLE --keys FILE --json``: key -> ``{"partition", "file_id"}`` or null.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import decimal
import json
import sys
from typing import Any, TextIO

import pyarrow.parquet as pq

from morlog.logformat.errors import UsageError

from .cli import EXIT_ERROR, EXIT_OK, _guarded
from .logfile import LogFileReader
from .lookup import KeyTagger
from .table import Table


def _guard(fn: Any) -> Any:
    """A command that prints the library's and I/O errors in one line (readers.cli)."""
    def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
        result = _guarded(args.table, lambda: int(fn(args, out if out is not None
                                                     else sys.stdout)))
        return EXIT_ERROR if result is None else result
    return run


def _slice_instants(table: Table, partition: str, names: list[str]) -> list[str]:
    directory = table.slice_dir(partition)
    instants: list[str] = []
    for n in names:
        with LogFileReader(table.storage.source(table.storage.join(directory, n))) as r:
            instants.extend(b.instant for b in r.blocks() if b.instant)
    return sorted(set(instants))


@_guard
def cmd_slices(args: argparse.Namespace, out: TextIO) -> int:
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
    if args.json:
        json.dump(rows, out, indent=2 if args.pretty else None)
        out.write("\n")
    else:
        print(f"{table.config.name} (table version {table.version}, "
              f"{table.config.merge_mode})", file=out)
        for r in rows:
            print(f"{r['partition'] or '.'} {r['file_id']} base {r['base_file'] or '-'} "
                  f"logs {len(r['log_files'])} instants {r['instants']['first'] or '-'}.."
                  f"{r['instants']['last'] or '-'}", file=out)
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


@_guard
def cmd_snapshot(args: argparse.Namespace, out: TextIO) -> int:
    table = Table(args.table)
    columns = [c for c in args.columns.split(",") if c] if args.columns else None
    parts = table.snapshot(args.as_of, columns)
    if args.format == "parquet":
        if not args.out:
            raise UsageError("--format parquet needs --out FILE")
        writer = None
        try:
            for t in parts:
                if writer is None:
                    writer = pq.ParquetWriter(args.out, t.schema)
                writer.write_table(t.cast(writer.schema) if t.schema != writer.schema else t)
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


@_guard
def cmd_tag(args: argparse.Namespace, out: TextIO) -> int:
    with open(args.keys, encoding="utf-8") as f:
        keys = [line.rstrip("\n") for line in f if line.strip()]
    table = Table(args.table)
    result = KeyTagger(table, args.as_of).tag(keys)
    if args.json:
        json.dump(result.as_dict(), out, indent=2 if args.pretty else None)
        out.write("\n")
    else:
        for k, loc in zip(result.keys, result.locations, strict=True):
            print(f"{k}\t{'new' if loc is None else (loc[0] or '.') + '/' + loc[1]}", file=out)
        st = result.stats
        print(f"{st.slices} slices, {st.base_footers} base footers, {st.log_probes} log "
              f"probes, {st.reads} ranged reads, {st.bytes_read} bytes", file=sys.stderr)
    return EXIT_OK


def add_table_commands(sub: Any) -> None:
    p = sub.add_parser("slices", help="list a table's latest file slices",
                       description="List the latest file slice of every file group: "
                       "partition, file id, base file, log files (in Hudi's order) and the "
                       "range of instants in the logs.")
    p.add_argument("table", help="table base path")
    p.add_argument("--as-of", help="instant to read the table at (time travel)")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.add_argument("--pretty", action="store_true", help="indent the JSON")
    p.set_defaults(func=cmd_slices)

    s = sub.add_parser("snapshot", help="read a table's merged snapshot",
                       description="Read the merged snapshot (base files merged with their "
                       "logs, Hudi's merge semantics) at the latest or a given instant, one "
                       "file slice at a time.")
    s.add_argument("table", help="table base path")
    s.add_argument("--as-of", help="instant to read the table at (time travel)")
    s.add_argument("--columns", help="comma-separated columns (default: all, meta included)")
    s.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl",
                   help="output format (default jsonl: one JSON object per row)")
    s.add_argument("--out", help="output file (required for parquet; default stdout)")
    s.set_defaults(func=cmd_snapshot)

    t = sub.add_parser("tag", help="find the file group of keys",
                       description="For each key (one per line in FILE): its partition and "
                       "file group, or null when the key is not in the table. Uses base-file "
                       "footers and the logs' indexes (stored or recomputed).")
    t.add_argument("table", help="table base path")
    t.add_argument("--keys", required=True, metavar="FILE", help="file with one key per line")
    t.add_argument("--as-of", help="instant to read the table at")
    t.add_argument("--json", action="store_true", help="print a JSON object key -> location")
    t.add_argument("--pretty", action="store_true", help="indent the JSON")
    t.set_defaults(func=cmd_tag)
