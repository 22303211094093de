"""Read-only commands of the ``morlog`` command-line tool: ``blocks`` and ``verify``.

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
from collections.abc import Callable
from typing import Any, TextIO, TypeVar

from morlog.logformat.blocks import RECORD_KEY_FIELD
from morlog.logformat.constants import BlockType, HeaderKey
from morlog.logformat.errors import MorlogError, redact

from .logfile import LogBlock, LogFileReader

T = TypeVar("T")

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_ERROR = 2


def _guarded(path: str, fn: Callable[[], T]) -> T | None:
    """Run ``fn``; on the library's errors or I/O errors print one line and return None."""
    try:
        return fn()
    except MorlogError as exc:
        print(f"morlog: error: {exc}", file=sys.stderr)
    except BrokenPipeError:
        raise  # the reader went away (| head): main() ends quietly
    except OSError as exc:
        print(redact(f"morlog: error: {path}: {exc.strerror or exc}"), file=sys.stderr)
    return None


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


def _short(value: str | None, n: int = 40) -> str:
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
            detail += f" keys: {_short(', '.join(str(k) for k in r['keys']), 60)}"
        if "error" in r:
            detail += f" ERROR: {r['error']}"
        records = "-" if r["records"] is None else str(r["records"])
        instant = h.get(HeaderKey.INSTANT_TIME.name, "-")
        print(f"{r['offset']:>10} {r['size']:>9} {r['type']:<13} {instant:<18} {records:>8}  "
              f"{detail}", file=out)


def cmd_blocks(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout

    def rows_of() -> list[dict[str, Any]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with LogFileReader(args.path) as reader:
                rows = [_block_json(b, args.keys, args.key_field) for b in reader.blocks()]
        for w in caught:
            print(f"warning: {w.message}", file=sys.stderr)
        return rows

    rows = _guarded(args.path, rows_of)
    if rows is None:
        return EXIT_ERROR
    if args.json:
        json.dump(rows, out, indent=2 if args.pretty else None)
        out.write("\n")
    else:
        _print_table(args.path, rows, out)
    return EXIT_OK


def verify_file(path: str) -> list[str]:
    """Problems found in one log file (empty when every block is well formed)."""
    problems: list[str] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with LogFileReader(path) as reader:
                n = 0
                for block in reader.blocks():
                    n += 1
                    problems.extend(_verify_block(block))
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


def cmd_verify(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    status = EXIT_OK
    for path in args.paths:
        problems = verify_file(path)
        if problems:
            status = EXIT_PROBLEMS
            print(f"FAIL {path}", file=out)
            for p in problems:
                print(f"  {p}", file=out)
        elif not args.quiet:
            print(f"ok   {path}", file=out)
    return status


def _carrier_name(block: LogBlock, stored: bool) -> str:
    if not stored:
        return "none"
    return "avro" if block.block_type == BlockType.AVRO_DATA else "parquet"


def index_report(path: str, key_field: str = RECORD_KEY_FIELD) -> dict[str, Any]:
    """The ``morlog index --json`` object of one log file."""
    from morlog.logformat.sbbf import SplitBlockBloom

    from .index import block_index, find_tail_index

    rows: list[dict[str, Any]] = []
    last_stored = None
    recomputed_hashes = []
    lo: str | None = None
    hi: str | None = None
    with LogFileReader(path) as reader:
        for block in reader.blocks():
            if block.is_corrupt or not block.block_type.is_data or (
                    block.block_type == BlockType.HFILE_DATA):
                continue
            keys, stored = block_index(block, key_field=key_field)
            row: dict[str, Any] = {"offset": block.offset, "size": block.size,
                                   "instant": block.instant,
                                   "carrier": _carrier_name(block, stored is not None),
                                   "stored": stored is not None, "keys": 0, "min_key": None,
                                   "max_key": None, "bloom_type": None, "bloom_bytes": 0}
            if keys is not None:
                row.update(keys=keys.range.count, min_key=keys.range.min_key,
                           max_key=keys.range.max_key, bloom_type="SBBF_XXH64",
                           bloom_bytes=keys.bloom.nbytes)
                recomputed_hashes.append(keys.hashes)
                lo = keys.range.min_key if lo is None or keys.range.min_key.encode() < \
                    lo.encode() else lo
                hi = keys.range.max_key if hi is None or keys.range.max_key.encode() > \
                    hi.encode() else hi
            if stored is not None:
                row["index_bytes"] = stored.section_sizes()
            rows.append(row)
        tail = find_tail_index(reader.source)
    if tail is not None and (cum := tail.index.cumulative()) is not None:
        last_stored = {"stored": True, "offset": tail.offset, "kind": cum.kind.name,
                       "scope": cum.scope, "blocks": cum.blocks, "keys": cum.keys,
                       "min_key": cum.min_key, "max_key": cum.max_key,
                       "bloom_type": "SBBF_XXH64", "bloom_bytes": cum.bloom.nbytes,
                       "checkpoint": None if cum.checkpoint is None else {
                           "offset": cum.checkpoint.region_offset,
                           "length": cum.checkpoint.region_length}}
    cumulative: dict[str, Any] | None = last_stored
    if cumulative is None and rows:
        import numpy as np

        allh = np.unique(np.concatenate(recomputed_hashes)) if recomputed_hashes else None
        bloom_bytes = 0
        if allh is not None:
            from morlog.logformat.sbbf import blocks_for

            f = SplitBlockBloom.empty(blocks_for(len(allh)))
            bloom_bytes = f.nbytes
        cumulative = {"stored": False, "offset": rows[-1]["offset"], "kind": "RECOMPUTED",
                      "blocks": len(rows), "keys": sum(r["keys"] for r in rows),
                      "min_key": lo, "max_key": hi, "bloom_type": "SBBF_XXH64",
                      "bloom_bytes": bloom_bytes}
    return {"path": path, "blocks": rows, "cumulative": cumulative}


def cmd_index(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    report = _guarded(args.path, lambda: index_report(args.path, args.key_field))
    if report is None:
        return EXIT_ERROR
    if args.json:
        json.dump(report, out, indent=2 if args.pretty else None)
        out.write("\n")
        return EXIT_OK
    print(args.path, file=out)
    print(f"{'offset':>10} {'carrier':<8} {'stored':<6} {'keys':>7} {'bloom B':>8}  min .. max",
          file=out)
    for r in report["blocks"]:
        print(f"{r['offset']:>10} {r['carrier']:<8} {str(r['stored']).lower():<6} "
              f"{r['keys']:>7} {r['bloom_bytes']:>8}  {_short(r['min_key'])} .. "
              f"{_short(r['max_key'])}", file=out)
    c = report["cumulative"]
    if c:
        print(f"cumulative ({'stored' if c['stored'] else 'recomputed'}, {c['kind']}): "
              f"{c['blocks']} blocks, {c['keys']} keys, {_short(c['min_key'])} .. "
              f"{_short(c['max_key'])}, filter {c['bloom_bytes']} bytes", file=out)
    return EXIT_OK


def cmd_lookup(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    from .probe import probe_log_file

    keys = list(args.keys)
    if args.keys_file:
        with open(args.keys_file, encoding="utf-8") as f:
            keys.extend(line.rstrip("\n") for line in f if line.strip())
    if not keys:
        print("morlog: error: no keys given", file=sys.stderr)
        return EXIT_ERROR
    result = _guarded(args.path, lambda: probe_log_file(args.path, keys,
                                                         key_field=args.key_field))
    if result is None:
        return EXIT_ERROR
    report = {k: {"range": [b.offset for b in h.range], "bloom": [b.offset for b in h.bloom],
                  "confirmed": [b.offset for b in h.confirmed]}
              for k, h in result.hits.items()}
    if args.json:
        json.dump(report, out, indent=2 if args.pretty else None)
        out.write("\n")
    else:
        for k, h in report.items():
            where = ", ".join(str(o) for o in h["confirmed"]) or "not found"
            print(f"{k}: {where}  (range {len(h['range'])}, bloom {len(h['bloom'])})", file=out)
        print(f"{'stored' if result.stored else 'recomputed'} index; {result.reads} ranged "
              f"reads, {result.bytes_read} bytes ({result.probe_reads} reads for the probe)",
              file=out)
    return EXIT_OK


def _output_and_key_options(p: argparse.ArgumentParser, json_help: str) -> None:
    p.add_argument("--json", action="store_true", help=json_help)
    p.add_argument("--pretty", action="store_true", help="indent the JSON")
    p.add_argument("--key-field", default=RECORD_KEY_FIELD,
                   help=f"field holding the record key (default {RECORD_KEY_FIELD}; use the "
                   "table's key field when meta fields are off)")


def add_read_commands(sub: Any) -> None:
    p = sub.add_parser(
        "blocks",
        help="list the blocks of a log file",
        description="List the blocks of a Hudi log file in file order: offset, size on disk, "
        "type, header, record count. Corrupt or torn regions show as CORRUPT blocks.",
    )
    p.add_argument("path", help="log file (local path, or a pyarrow.fs URI such as s3://...)")
    p.add_argument("--keys", action="store_true",
                   help="include the record keys of data and delete blocks")
    _output_and_key_options(p, "print a JSON array (the stable format)")
    p.set_defaults(func=cmd_blocks)

    v = sub.add_parser(
        "verify",
        help="check that every block of log files is well formed",
        description="Check every block: framing, header encoding and content decoding. Exit "
        "status 0 when all is well, 1 when a block is corrupt (the report names its offset), "
        "2 on usage errors.",
    )
    v.add_argument("paths", nargs="+", metavar="PATH", help="log files")
    v.add_argument("-q", "--quiet", action="store_true", help="report failures only")
    v.set_defaults(func=cmd_verify)

    ix = sub.add_parser(
        "index",
        help="show the index of each data block and the cumulative index",
        description="Show each data block's index (sorted keys, filter, min/max): read from "
        "its index trailer when it has one (stored), recomputed from its records otherwise; "
        "and the cumulative index of the newest data block.",
    )
    ix.add_argument("path", help="log file")
    _output_and_key_options(ix, "print a JSON object")
    ix.set_defaults(func=cmd_index)

    lk = sub.add_parser(
        "lookup",
        help="find which blocks of a log file hold keys",
        description="Probe a log file for keys: for each key, the blocks still candidate after "
        "the min/max test (range), after the filter test (bloom) and after the exact key-list "
        "test (confirmed), by block offset. Uses the stored index from one ranged read at the "
        "tail of the file; recomputes it for logs without one.",
    )
    lk.add_argument("path", help="log file")
    lk.add_argument("keys", nargs="*", metavar="KEY", help="record keys")
    lk.add_argument("--keys-file", help="file with one key per line")
    _output_and_key_options(lk, "print a JSON object keyed by key")
    lk.set_defaults(func=cmd_lookup)
