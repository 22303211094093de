"""``morlog demo`` (``morlog.cli.demo``): write sample log files with every block kind the
writers make, show them with the read commands of ``morlog.cli.read``.

First the log of one file group of a trips table: two commits of Avro data, one of Parquet
data, a delete, a commit that fails and its rollback command block, printed the way
``morlog blocks`` prints it and checked with ``morlog verify``. Then a file slice of indexed
blocks (both carriers), shown with ``morlog index`` and probed with ``morlog lookup``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time
import uuid
from typing import Any, TextIO

import pyarrow as pa

from morlog.cli.common import EXIT_OK, EXIT_PROBLEMS, Commands, output
from morlog.cli.read import cmd_blocks, cmd_index, cmd_lookup, verify_file
from morlog.logformat import DeleteRecord, OrderingValue
from morlog.logformat.blocks import (
    META_FIELDS,
    avro_data_block,
    delete_block,
    parquet_data_block,
    rollback_block,
)
from morlog.logformat.naming import LogFileName
from morlog.writers.core.indexed import IndexedLogWriter
from morlog.writers.core.logwriter import LogFileWriter

FILE_ID = "2f6b1c3e-4d5a-4b6c-9d7e-8f9a0b1c2d3e-0"
BASE_INSTANT = "20260101000000000"

SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "trips_record",
    "namespace": "hoodie.trips",
    "fields": [{"name": f, "type": ["null", "string"], "default": None} for f in META_FIELDS]
    + [
        {"name": "ts", "type": "long"},
        {"name": "uuid", "type": "string"},
        {"name": "rider", "type": ["null", "string"], "default": None},
        {"name": "fare", "type": ["null", "double"], "default": None},
        {"name": "city", "type": ["null", "string"], "default": None},
    ],
}


def _trip(i: int, instant: str, seq: int, fare: float, city: str = "san_francisco"
          ) -> dict[str, Any]:
    key = demo_key(i)
    return {
        "_hoodie_commit_time": instant,
        "_hoodie_commit_seqno": f"{instant}_0_{seq}",
        "_hoodie_record_key": key,
        "_hoodie_partition_path": f"city={city}",
        "_hoodie_file_name": FILE_ID,
        "ts": 1_700_000_000_000 + i,
        "uuid": key,
        "rider": f"rider-{i % 7}",
        "fare": fare,
        "city": city,
    }


def demo_key(i: int) -> str:
    """A deterministic, random-looking UUID record key."""
    return str(uuid.UUID(bytes=hashlib.md5(f"trip-{i}".encode()).digest(), version=4))


def write_sample(directory: str, out: TextIO | None = None) -> str:
    """Write the sample log into ``directory``; return its path."""
    out = output(out)
    writer = LogFileWriter(directory, FILE_ID, BASE_INSTANT, write_token="0-1-1", mode="append")
    steps: list[tuple[str, Any]] = []

    c1 = "20260101000100000"
    steps.append((f"commit {c1}: 5 inserts (Avro data block)",
                  avro_data_block([_trip(i, c1, i, 10.0 + i) for i in range(5)], SCHEMA, c1)))
    c2 = "20260101000200000"
    table = pa.Table.from_pylist([_trip(i, c2, i, 20.0 + i) for i in (1, 2, 5)],
                                 schema=_arrow_schema())
    steps.append((f"commit {c2}: 2 updates + 1 insert (Parquet data block)",
                  parquet_data_block(table, c2, schema=SCHEMA)))
    c3 = "20260101000300000"
    gone = _trip(3, c3, 0, 0.0)
    steps.append((f"commit {c3}: delete 1 key (delete block)",
                  delete_block([DeleteRecord(gone["uuid"], gone["_hoodie_partition_path"],
                                             OrderingValue.natural())], c3, schema=SCHEMA)))
    c4 = "20260101000400000"
    steps.append((f"commit {c4}: 2 updates of a writer that then fails (Avro data block)",
                  avro_data_block([_trip(i, c4, i, 99.0) for i in (0, 4)], SCHEMA, c4)))
    r5 = "20260101000500000"
    steps.append((f"rollback {r5} of the failed commit {c4} (command block)",
                  rollback_block(r5, c4)))

    path = ""
    for what, frame in steps:
        t0 = time.perf_counter()
        result = writer.append(frame)
        ms = (time.perf_counter() - t0) * 1000
        path = result.path
        b = result.blocks[0]
        print(f"  {what}: {b.size} bytes at offset {b.offset} ({ms:.1f} ms)", file=out)
    return path


def _arrow_schema() -> pa.Schema:
    from morlog.logformat.avroschema import avro_to_arrow_schema

    return avro_to_arrow_schema(SCHEMA)


def cmd_demo(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = output(out)
    target = os.path.join(args.out, "city=san_francisco")
    if os.path.isdir(target):
        for name in os.listdir(target):
            if LogFileName.matches(name):
                os.unlink(os.path.join(target, name))
    else:
        os.makedirs(target)
    print(f"morlog demo: writing a sample log file under {target}", file=out)
    path = write_sample(target, out)
    print(f"\n$ morlog blocks {path}", file=out)
    cmd_blocks(argparse.Namespace(path=path, json=False, pretty=False, keys=False,
                                  key_field="_hoodie_record_key"), out)
    problems = verify_file(path)
    print(f"\n$ morlog verify {path}", file=out)
    print("ok: every block is well formed" if not problems else "\n".join(problems), file=out)
    indexed = write_indexed_sample(os.path.join(args.out, "city=chennai"), out)
    print(f"\n$ morlog index {indexed}", file=out)
    cmd_index(argparse.Namespace(path=indexed, json=False, pretty=False,
                                 key_field="_hoodie_record_key"), out)
    probe = [demo_key(1000 * 3 + 7), demo_key(10**9)]
    print(f"\n$ morlog lookup {indexed} {' '.join(probe)}", file=out)
    cmd_lookup(argparse.Namespace(path=indexed, keys=probe, keys_file=None, json=False,
                                  pretty=False, key_field="_hoodie_record_key"), out)
    table_path = os.path.join(args.out, "trips_table")
    table_pipeline(table_path, out)
    print(f"\nNext: morlog blocks --json --keys {path}", file=out)
    print(f"      morlog slices {table_path}; morlog snapshot {table_path}", file=out)
    return EXIT_OK if not problems else EXIT_PROBLEMS


def table_pipeline(path: str, out: TextIO, batches: int = 4, rows: int = 2000) -> None:
    """Create a table and upsert batches (70 % inserts) through the write client; print what
    each commit did, then read the table back."""
    import shutil

    from morlog.readers.table import Table
    from morlog.writers.client import MorTable
    from morlog.writers.options import WriteConfig

    if os.path.isdir(path):
        shutil.rmtree(path)
    schema = pa.schema([("uuid", pa.string()), ("city", pa.string()), ("ts", pa.int64()),
                        ("rider", pa.string()), ("fare", pa.float64())])
    # small files so that the demo's few thousand rows show routing into existing groups
    cfg = WriteConfig(max_file_size=1_000_000, small_file_limit=900_000, record_size=120)
    table = MorTable.create(path, schema, key_field="uuid", partition_field="city",
                            ordering_field="ts", config=cfg)
    print(f"\nmorlog demo: table pipeline at {path} ({batches} upsert batches of {rows} rows, "
          "70 % inserts)", file=out)
    cities = ["san_francisco", "sao_paulo", "chennai"]
    written = 0
    for b in range(batches):
        n_upd = 0 if b == 0 else int(rows * 0.3)
        ids = list(range(written - n_upd, written)) + list(range(written, written + rows -
                                                                  n_upd))
        written += rows - n_upd
        batch = pa.table({"uuid": [demo_key(i) for i in ids],
                          "city": [cities[i % 3] for i in ids],
                          "ts": [1_700_000_000_000 + b] * len(ids),
                          "rider": [f"rider-{i % 7}" for i in ids],
                          "fare": [10.0 + (i % 50) + b for i in ids]}, schema=schema)
        r = table.upsert(batch)
        print(f"  commit {r.instant}: {r.inserts} inserts ({r.inserts_routed_to_existing} "
              f"routed into existing file groups), {r.updates} updates; "
              f"{len(r.groups_touched)} file groups touched, {len(r.files_created)} new files, "
              f"{1000 * r.seconds['total']:.0f} ms", file=out)
    t = Table(path)
    n = sum(x.num_rows for x in t.snapshot())
    slices = t.file_slices()
    print(f"  read back: {n} rows in {len(slices)} file groups "
          f"({sum(len(s.log_files) for s in slices)} log files)", file=out)


def write_indexed_sample(directory: str, out: TextIO) -> str:
    """Six commits of indexed blocks (Avro and Parquet carriers) into one file slice."""
    if os.path.isdir(directory):
        for name in os.listdir(directory):
            if LogFileName.matches(name):
                os.unlink(os.path.join(directory, name))
    writer = IndexedLogWriter(directory, FILE_ID, BASE_INSTANT, write_token="0-1-1",
                              checkpoint_every=4)
    print(f"\nmorlog demo: writing indexed blocks under {directory}", file=out)
    path = ""
    for c in range(6):
        instant = f"202601010{c + 1:02d}000000"
        trips = [_trip(1000 * c + i, instant, i, 5.0 + i, "chennai") for i in range(200)]
        t0 = time.perf_counter()
        if c % 3 == 2:
            table = pa.Table.from_pylist(trips, schema=_arrow_schema())
            result = writer.append_parquet(table, instant, schema=SCHEMA)
            kind = "Parquet carrier"
        else:
            result = writer.append_avro(trips, SCHEMA, instant)
            kind = "Avro carrier"
        ms = (time.perf_counter() - t0) * 1000
        path = result.path
        b = result.blocks[0]
        print(f"  commit {instant}: 200 inserts, indexed block ({kind}), {b.size} bytes at "
              f"offset {b.offset} ({ms:.1f} ms)", file=out)
    return path


def register(commands: Commands) -> None:
    p = commands.add(
        "demo", cmd_demo,
        help="write a sample log file and show its blocks",
        description="Write a sample Hudi log file with Avro, Parquet, delete and rollback "
        "blocks (append mode), then list and verify it; write a file slice of indexed blocks "
        "(both carriers) and show its index and a key lookup; then upsert batches into a "
        "sample table through the write client and read it back. Exit status 0, or 1 when "
        "the sample does not verify.",
    )
    p.add_argument("--out", default=os.path.join("out", "demo"),
                   help="directory for the sample (default: out/demo); earlier demo logs "
                   "there are replaced")


__all__ = ["cmd_demo", "register", "write_sample"]
