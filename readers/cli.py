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
from typing import Any, TextIO

from logformat.blocks import RECORD_KEY_FIELD
from logformat.constants import BlockType, HeaderKey
from logformat.errors import MorlogError

from .logfile import LogBlock, LogFileReader

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_ERROR = 2


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
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with LogFileReader(args.path) as reader:
                rows = [_block_json(b, args.keys, args.key_field) for b in reader.blocks()]
        for w in caught:
            print(f"warning: {w.message}", file=sys.stderr)
    except MorlogError as exc:
        print(f"morlog: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        print(f"morlog: error: {args.path}: {exc.strerror or exc}", file=sys.stderr)
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


def add_read_commands(sub: Any) -> None:
    p = sub.add_parser(
        "blocks",
        help="list the blocks of a log file",
        description="List the blocks of a Hudi log file in file order: offset, size on disk, "
        "type, header, record count. Corrupt or torn regions show as CORRUPT blocks.",
    )
    p.add_argument("path", help="log file (local path, or a pyarrow.fs URI such as s3://...)")
    p.add_argument("--json", action="store_true", help="print a JSON array (the stable format)")
    p.add_argument("--pretty", action="store_true", help="indent the JSON")
    p.add_argument("--keys", action="store_true",
                   help="include the record keys of data and delete blocks")
    p.add_argument("--key-field", default=RECORD_KEY_FIELD,
                   help=f"field holding the record key (default {RECORD_KEY_FIELD}; use the "
                   "table's key field when meta fields are off)")
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
