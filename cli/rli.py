"""``morlog rli build|lookup|verify TABLE``: morlog's record-level index from the command
line (spec/rli.md)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, TextIO

from morlog.cli.common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    Commands,
    add_output_options,
    add_table_argument,
    add_write_options,
    emit_for,
    progress_bar,
)
from morlog.cli.services import table_of
from morlog.logformat.errors import UsageError
from morlog.readers.mdt.record_index import HudiRecordIndex, record_index_listed
from morlog.readers.record_index import RecordIndex
from morlog.readers.table import Table
from morlog.writers.services.record_index import (
    DEFAULT_SHARDS,
    BuildResult,
    VerifyResult,
    build,
    verify,
)


def _build_text(r: BuildResult, out: TextIO) -> None:
    per = f" ({r.bytes / r.entries:.1f} bytes per entry)" if r.entries else ""
    print(f"record index built as of {r.built_as_of or '(empty table)'}: {r.entries} keys of "
          f"{r.slices} file slice(s) in {r.shards} shards, {r.bytes} bytes{per}, "
          f"{r.seconds['total']:.2f} s; every morlog writer now maintains it", file=out)


def cmd_build(args: argparse.Namespace, out: TextIO | None = None) -> int:
    args.dry_run = False
    with progress_bar(args, "reading keys") as progress:
        r = build(table_of(args), args.shards, progress=progress)
    emit_for(args, r, _build_text, out, to_json=lambda x: x.as_dict())
    return EXIT_OK


#: the TABLE argument of ``morlog rli``'s commands
_TABLE_HELP = "table path or URI"
#: the names ``rli lookup`` gives the two indexes
MORLOG_INDEX = "morlog"
HUDI_INDEX = "hudi"
_INDEX_NAMES = {MORLOG_INDEX: "morlog's record index (.hoodie/morlog/record_index)",
                HUDI_INDEX: "Hudi's record index (metadata table partition record_index)"}


@dataclass
class LookupAnswer:
    """Where keys live, and which index said so (``morlog``: morlog's own, ``hudi``: the
    metadata table's ``record_index``; the latter records no instant per key)."""

    index: str
    keys: dict[str, dict[str, str | None] | None]

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "keys": self.keys}


def _lookup_text(r: LookupAnswer, out: TextIO) -> None:
    print(f"# answered by {_INDEX_NAMES[r.index]}", file=out)
    for k, loc in r.keys.items():
        if loc is None:
            where = "new"
        else:
            where = f"{loc['partition'] or '.'}/{loc['file_id']}"
            if loc.get("instant"):
                where += f" ({loc['instant']})"
        print(f"{k}\t{where}", file=out)


def lookup(table: Table, keys: list[str]) -> LookupAnswer:
    """Look ``keys`` up through the index the table has: morlog's record index when the
    table enables it, else Hudi's ``record_index`` when the table lists it; a
    :class:`UsageError` when it has neither."""
    index = RecordIndex.open(table)
    if index is not None:
        found: dict[str, dict[str, str | None] | None] = {
            k: None if v is None else dict(v) for k, v in index.lookup(keys).as_dict().items()}
        return LookupAnswer(MORLOG_INDEX, found)
    if record_index_listed(table):
        h = HudiRecordIndex(table).lookup(keys)
        out: dict[str, dict[str, str | None] | None] = {}
        for k, c in zip(keys, h.codes.tolist(), strict=True):
            out[k] = None if c < 0 else {"partition": h.groups[c][0],
                                         "file_id": h.groups[c][1], "instant": None}
        return LookupAnswer(HUDI_INDEX, out)
    raise UsageError("the table has no record index: neither morlog's (build it with "
                     "'morlog rli build TABLE') nor Hudi's record_index in its metadata "
                     "table", path=table.location.uri)


def cmd_lookup(args: argparse.Namespace, out: TextIO | None = None) -> int:
    r = lookup(Table(args.table), list(args.keys))
    emit_for(args, r, _lookup_text, out, to_json=lambda x: x.as_dict())
    return EXIT_OK


def _open(path: str) -> RecordIndex:
    t = Table(path)
    index = RecordIndex.open(t)
    if index is None:
        raise UsageError("the table has no morlog record index (build it with "
                         "'morlog rli build TABLE')", path=t.location.uri)
    return index


def _verify_text(r: VerifyResult, out: TextIO) -> None:
    if r.ok:
        print(f"ok: the record index holds exactly the table's {r.keys} keys", file=out)
        return
    for d in r.damaged[:20]:
        print(f"DAMAGED: {d}", file=out)
    if r.damaged:
        print(f"the record index has {len(r.damaged)} damaged shard(s) (their keys are not "
              "compared; writers tag through the table's files meanwhile): rebuild it with "
              "'morlog rli build'", file=out)
        if not (r.missing or r.extra or r.misplaced or r.stale):
            return
    print(f"DIFFERENT: index {r.entries} entries, table {r.keys} keys; {len(r.missing)} "
          f"missing, {len(r.extra)} extra, {len(r.misplaced)} in the wrong file group"
          + (f"; misses {len(r.stale)} data commit(s)" if r.stale else ""), file=out)
    for k in r.missing[:20]:
        print(f"  missing {k}", file=out)
    for k in r.extra[:20]:
        print(f"  extra   {k}", file=out)
    for m in r.misplaced[:20]:
        print(f"  moved   {m['key']}: index {m['i_partition'] or '.'}/{m['i_file_id']}, "
              f"table {m['partition'] or '.'}/{m['file_id']}", file=out)
    for i in r.stale[:20]:
        print(f"  not indexed: data commit {i}", file=out)


def cmd_verify(args: argparse.Namespace, out: TextIO | None = None) -> int:
    t = Table(args.table)
    _open(args.table)
    r = verify(t)
    emit_for(args, r, _verify_text, out, to_json=lambda x: x.as_dict())
    return EXIT_OK if r.ok else EXIT_PROBLEMS


def register(commands: Commands) -> None:
    rli = commands.group(
        "rli", help="morlog's record-level index: build, lookup, verify",
        description="A key -> file group index of the whole table (RFC-8's mapping in "
        "morlog's indexed log format: shards of sorted keys with blooms), kept true by "
        "every morlog writer once built (spec/rli.md).",
        epilog="Exit status: 0 ok, 1 verify found differences, 2 error.",
        dest="rli_command", commands_help="build, lookup or verify")
    p = rli.add(
        "build", cmd_build, help="build (or rebuild) the index and enable it",
        description="Read every live key of the table (one file slice at a time), write "
        "the index table under .hoodie/morlog/record_index with one base file per shard, "
        "and set morlog.record.index.enable=true in hoodie.properties: from then on every "
        "morlog writer (client, Spark, services) keeps it true in the same instant as its "
        "data. Holds the table's writer lock. The keys must be unique across the table.",
        epilog="Exit status: 0 ok, 2 error.")
    add_table_argument(p, _TABLE_HELP)
    p.add_argument("--shards", type=int, default=DEFAULT_SHARDS,
                   help=f"number of shards (file groups; default {DEFAULT_SHARDS}); fixed "
                   "until the next build")
    add_write_options(p)
    add_output_options(p, "print what was built as one JSON object")
    p = rli.add(
        "lookup", cmd_lookup, help="where keys live, by the index",
        description="For each KEY: the partition, file group and instant of its entry, or "
        "'new', through the index the table has: morlog's record index, else Hudi's "
        "record_index (metadata table; no instant per key); the first line (JSON: 'index') "
        "says which answered. Refuses morlog's index when it misses data commits (written "
        "by a writer that does not maintain it).", epilog="Exit status: 0 ok, 2 error.")
    add_table_argument(p, _TABLE_HELP)
    p.add_argument("keys", metavar="KEY", nargs="+", help="record keys")
    add_output_options(p, "print one JSON object: {index: morlog|hudi, keys: key -> "
                       "{partition, file_id, instant} or null}")
    p = rli.add(
        "verify", cmd_verify, help="compare the index with the table",
        description="Read the table's live keys and the index and report keys the index "
        "misses, holds in excess or places in the wrong file group, and data commits it "
        "does not cover.", epilog="Exit status: 0 equal, 1 different, 2 error.")
    add_table_argument(p, _TABLE_HELP)
    add_output_options(p, "print the comparison as one JSON object")


__all__ = ["HUDI_INDEX", "MORLOG_INDEX", "LookupAnswer", "lookup", "register"]
