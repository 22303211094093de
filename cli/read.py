"""Read-only commands of the ``morlog`` command-line tool: ``blocks``, ``verify``, ``index``
and ``lookup`` (``morlog.cli.read``; the tool itself is ``morlog.cli``).

Each command computes its result with the readers (``index``: ``morlog.readers.index_report``;
``lookup``: ``morlog.readers.probe``) and prints it through ``morlog.cli.common.emit``;
errors go through the one guard, ``morlog.cli.common.run_guarded``.

The output shapes are a contract (later issues and automated checks parse them):

``morlog blocks PATH --json [--keys]`` prints a JSON array, one object per block in file
order: ``offset`` (of the magic), ``size`` (bytes on disk), ``type``, ``header`` (key name ->
string), ``footer``, ``records`` (record or delete-key count, null when not decodable),
``content_length``, ``reason`` (CORRUPT blocks) and with ``--keys`` a ``keys`` list.

``morlog verify PATH...`` exits 0 when every block of every file is well formed and 1 with a
report of the offsets of the bad blocks; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any, TextIO

from morlog.cli.common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    Commands,
    add_output_options,
    emit,
    emit_for,
    one_line,
    read_keys_file,
)
from morlog.logformat.blocks import RECORD_KEY_FIELD
from morlog.logformat.constants import BlockType, HeaderKey
from morlog.logformat.errors import MorlogError, UsageError
from morlog.readers.index_report import IndexReport, index_report
from morlog.readers.logfile import LogBlock, LogFileReader


def _block_json(block: LogBlock, keys: bool, key_field: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "offset": block.offset,
        "size": block.size,
        "type": block.block_type.name,
        "header": block.header.as_dict(),
        "footer": block.footer.as_dict(),
        "content_length": block.content_length,
        "records": None,
    }
    if block.is_corrupt:
        out["reason"] = block.reason
        return out
    try:
        out["records"] = block.record_count()
    except MorlogError as exc:
        out["error"] = str(exc)
    if keys and block.block_type in (BlockType.AVRO_DATA, BlockType.CDC_DATA,
                                     BlockType.PARQUET_DATA, BlockType.DELETE):
        try:
            out["keys"] = block.keys(key_field)
        except MorlogError as exc:
            out["keys"] = None
            out.setdefault("error", str(exc))
    return out


def _ellipsized(value: str | None, n: int = 40) -> str:
    if value is None:
        return "-"
    return value if len(value) <= n else value[: n - 1] + "…"


def _print_table(path: str, rows: list[dict[str, Any]], out: TextIO) -> None:
    print(path, file=out)
    print(f"{'offset':>10} {'size':>9} {'type':<13} {'instant':<18} {'records':>8}  detail",
          file=out)
    for r in rows:
        h = r["header"]
        detail = ""
        if r["type"] == "COMMAND":
            ctype = h.get(HeaderKey.COMMAND_BLOCK_TYPE.name)
            kind = "ROLLBACK" if ctype == "0" else f"command {ctype}"
            detail = f"{kind} of {h.get(HeaderKey.TARGET_INSTANT_TIME.name, '?')}"
        elif r["type"] == "CORRUPT":
            detail = r.get("reason") or ""
        elif HeaderKey.SCHEMA.name in h:
            try:
                detail = "schema " + str(json.loads(h[HeaderKey.SCHEMA.name]).get("name"))
            except (ValueError, AttributeError):
                detail = "schema ?"
        if "keys" in r and r["keys"] is not None:
            detail += f" keys: {_ellipsized(', '.join(str(k) for k in r['keys']), 60)}"
        if "error" in r:
            detail += f" ERROR: {r['error']}"
        records = "-" if r["records"] is None else str(r["records"])
        instant = h.get(HeaderKey.INSTANT_TIME.name, "-")
        print(f"{r['offset']:>10} {r['size']:>9} {r['type']:<13} {instant:<18} {records:>8}  "
              f"{detail}", file=out)


def block_rows(path: str, keys: bool = False, key_field: str = RECORD_KEY_FIELD
               ) -> list[dict[str, Any]]:
    """The ``morlog blocks --json`` rows of one log file (warnings go to standard error)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with LogFileReader(path) as reader:
            rows = [_block_json(b, keys, key_field) for b in reader.blocks()]
    for w in caught:
        print(one_line(f"warning: {w.message}"), file=sys.stderr)
    return rows


def cmd_blocks(args: argparse.Namespace, out: TextIO | None = None) -> int:
    rows = block_rows(args.path, args.keys, args.key_field)
    emit_for(args, rows, lambda r, o: _print_table(args.path, r, o), out)
    return EXIT_OK


def verify_file(path: str) -> list[str]:
    """Problems found in one log file (empty when every block is well formed). Errors that
    stop the scan are problems too: ``verify`` reports them and goes on with the next file."""
    problems: list[str] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with LogFileReader(path) as reader:
                for block in reader.blocks():
                    problems.extend(_verify_block(block))
                if reader.torn_tail is not None:
                    at, n = reader.torn_tail
                    problems.append(f"{reader.path}@{at}: torn tail: {n} trailing bytes of a "
                                    "block whose write was cut short")
        for w in caught:
            problems.append(f"warning: {w.message}")
    except MorlogError as exc:
        problems.append(f"{exc}")
    except OSError as exc:
        problems.append(f"{path}: {exc.strerror or exc}")
    return problems


def _verify_block(block: LogBlock) -> list[str]:
    where = f"{block.path}@{block.offset}"
    if block.is_corrupt:
        return [f"{where}: CORRUPT block of {block.size} bytes: {block.reason}"]
    try:
        block.header.as_dict()
        block.footer.as_dict()
        t = block.block_type
        if t in (BlockType.AVRO_DATA, BlockType.CDC_DATA, BlockType.PARQUET_DATA):
            block.to_arrow()
        elif t == BlockType.DELETE:
            block.delete_records()
        elif t == BlockType.COMMAND:
            if block.command_type is None:
                return [f"{where}: command block without COMMAND_BLOCK_TYPE"]
    except MorlogError as exc:
        return [f"{where}: {block.block_type.name} block: {exc}"]
    return []


def _print_verified(results: list[tuple[str, list[str]]], quiet: bool, out: TextIO) -> None:
    for path, problems in results:
        if problems:
            print(f"FAIL {path}", file=out)
            for p in problems:
                print(f"  {p}", file=out)
        elif not quiet:
            print(f"ok   {path}", file=out)


def cmd_verify(args: argparse.Namespace, out: TextIO | None = None) -> int:
    results = [(path, verify_file(path)) for path in args.paths]
    emit(results, lambda r, o: _print_verified(r, args.quiet, o), out=out)
    return EXIT_PROBLEMS if any(problems for _, problems in results) else EXIT_OK


def _print_index(report: IndexReport, out: TextIO) -> None:
    print(report.path, file=out)
    print(f"{'offset':>10} {'carrier':<8} {'stored':<6} {'keys':>7} {'bloom B':>8}  min .. max",
          file=out)
    for r in report.blocks:
        print(f"{r.offset:>10} {r.carrier:<8} {str(r.stored).lower():<6} "
              f"{r.keys:>7} {r.bloom_bytes:>8}  {_ellipsized(r.min_key)} .. "
              f"{_ellipsized(r.max_key)}", file=out)
    c = report.cumulative
    if c:
        print(f"cumulative ({'stored' if c.stored else 'recomputed'}, {c.kind}): "
              f"{c.blocks} blocks, {c.keys} keys, {_ellipsized(c.min_key)} .. "
              f"{_ellipsized(c.max_key)}, filter {c.bloom_bytes} bytes", file=out)


def cmd_index(args: argparse.Namespace, out: TextIO | None = None) -> int:
    report = index_report(args.path, args.key_field)
    emit_for(args, report, _print_index, out, to_json=IndexReport.as_dict)
    return EXIT_OK


def cmd_lookup(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from morlog.readers.probe import ProbeResult, probe_log_file

    keys = list(args.keys)
    if args.keys_file:
        keys.extend(read_keys_file(args.keys_file))
    if not keys:
        raise UsageError("no keys given")
    result = probe_log_file(args.path, keys, key_field=args.key_field)
    report = {k: {"range": [b.offset for b in h.range], "bloom": [b.offset for b in h.bloom],
                  "confirmed": [b.offset for b in h.confirmed]}
              for k, h in result.hits.items()}

    def text(rep: dict[str, dict[str, list[int]]], o: TextIO,
             res: ProbeResult = result) -> None:
        for k, h in rep.items():
            where = ", ".join(str(off) for off in h["confirmed"]) or "not found"
            print(f"{k}: {where}  (range {len(h['range'])}, bloom {len(h['bloom'])})", file=o)
        print(f"{'stored' if res.stored else 'recomputed'} index; {res.reads} ranged "
              f"reads, {res.bytes_read} bytes ({res.probe_reads} reads for the probe)",
              file=o)

    emit_for(args, report, text, out)
    return EXIT_OK


def _output_and_key_options(p: argparse.ArgumentParser, json_help: str) -> None:
    add_output_options(p, json_help)
    p.add_argument("--key-field", default=RECORD_KEY_FIELD,
                   help=f"field holding the record key (default {RECORD_KEY_FIELD}; use the "
                   "table's key field when meta fields are off)")


_PATH_HELP = "log file (local path, or a pyarrow.fs URI such as s3://...)"


def register(commands: Commands) -> None:
    p = commands.add(
        "blocks", cmd_blocks,
        help="list the blocks of a log file",
        description="List the blocks of a Hudi log file in file order: offset, size on disk, "
        "type, instant, record count and a detail (schema name, rollback target, why a "
        "region is CORRUPT). Corrupt or torn regions show as CORRUPT blocks, as Hudi's reader "
        "sees them. With --json: one object per block (offset, size, type, header, footer, "
        "records, content_length, reason; keys with --keys). Exit status 0, or 2 when the "
        "file cannot be read at all.",
    )
    p.add_argument("path", help=_PATH_HELP)
    p.add_argument("--keys", action="store_true",
                   help="include the record keys of data and delete blocks")
    _output_and_key_options(p, "print a JSON array, one object per block (the stable format)")

    v = commands.add(
        "verify", cmd_verify,
        help="check that every block of log files is well formed",
        description="Check every block of every file: framing, header encoding and content "
        "decoding. Prints 'ok   PATH' or 'FAIL PATH' with one indented line per problem "
        "(offset and reason). Exit status 0 when all is well, 1 when a problem was found, 2 "
        "on usage errors.",
    )
    v.add_argument("paths", nargs="+", metavar="PATH", help="log files (paths or URIs)")
    v.add_argument("-q", "--quiet", action="store_true",
                   help="print failures only (no 'ok' lines)")

    ix = commands.add(
        "index", cmd_index,
        help="show the index of each data block and the cumulative index",
        description="Show each data block's index (key count, min/max key, filter size): "
        "read from its index trailer when it has one (stored; carrier avro or parquet), "
        "recomputed from its records otherwise (carrier none); then the cumulative index the "
        "newest data block stores (FULL checkpoint or DELTA), or the figures recomputed over "
        "all blocks when none is stored. With --json: an object with path, blocks and "
        "cumulative.",
    )
    ix.add_argument("path", help=_PATH_HELP)
    _output_and_key_options(ix, "print a JSON object (path, blocks, cumulative)")

    lk = commands.add(
        "lookup", cmd_lookup,
        help="find which blocks of a log file hold keys",
        description="Probe a log file for keys: for each key, the blocks still candidate after "
        "the min/max test (range), after the filter test (bloom) and after the exact key-list "
        "test (confirmed), by block offset; then how many ranged reads it took. Uses the "
        "stored index from one ranged read at the tail of the file; recomputes it for logs "
        "without one.",
    )
    lk.add_argument("path", help=_PATH_HELP)
    lk.add_argument("keys", nargs="*", metavar="KEY", help="record keys")
    lk.add_argument("--keys-file", metavar="FILE",
                    help="file with one key per line (added to the KEYs given)")
    _output_and_key_options(lk, "print a JSON object: key -> {range, bloom, confirmed} "
                            "block offsets")
