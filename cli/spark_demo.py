"""``morlog spark-demo`` (``morlog.cli.spark_demo``): the main job. Upsert batches into a
table from Spark, report each commit, read the table back; ``--master`` runs the same pipeline
on a cluster."""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import shutil
import time
import uuid
from typing import Any, TextIO

import morlog.config as conf
from morlog.cli.common import EXIT_OK, EXIT_PROBLEMS, Commands, output
from morlog.logformat.errors import UsageError
from morlog.readers.table import Table
from morlog.readers.timeline import Timeline


def _key(i: int) -> str:
    return str(uuid.UUID(bytes=hashlib.md5(f"ride-{i}".encode()).digest(), version=4))


def run(master: str, path: str, batches: int, rows: int, out: TextIO) -> int:
    if importlib.util.find_spec("pyspark") is None:
        raise UsageError("spark-demo needs pyspark, which is not installed "
                         "(pip install 'morlog[spark]')")
    from morlog.spark.write import session

    t0 = time.perf_counter()
    spark, created = session(master, "morlog-demo")
    print(f"morlog spark-demo: Spark {spark.version} on {master} "
          f"(started in {time.perf_counter() - t0:.1f} s); table at {path}", file=out)
    if os.path.isdir(path):
        shutil.rmtree(path)
    # a few-thousand-row demo shows routing only with small files: 1 MB "max file size"
    opts = {conf.TABLE_NAME: "rides", conf.WRITE_RECORDKEY_FIELD: "uuid",
            conf.WRITE_PARTITIONPATH_FIELD: "city",
            conf.WRITE_PRECOMBINE_FIELD: "ts",
            conf.MAX_FILE_SIZE: "1000000", conf.SMALL_FILE_LIMIT: "900000"}
    cities = ["san_francisco", "sao_paulo", "chennai"]
    written = 0
    try:
        for b in range(batches):
            n_upd = 0 if b == 0 else int(rows * 0.3)
            ids = list(range(written - n_upd, written)) + list(
                range(written, written + rows - n_upd))
            written += rows - n_upd
            data = [(_key(i), cities[i % 3], 1_700_000_000_000 + b, f"rider-{i % 9}",
                     10.0 + (i % 40) + b) for i in ids]
            df = spark.createDataFrame(data, "uuid string, city string, ts long, "
                                       "rider string, fare double").repartition(4)
            t = time.perf_counter()
            df.write.format("morlog").options(**opts).mode("append").save(path)
            secs = time.perf_counter() - t
            _report(path, secs, out)
        back = spark.read.format("morlog").load(path)
        t = time.perf_counter()
        n = back.count()
        by_city = {r["city"]: r["count"] for r in back.groupBy("city").count().collect()}
        slices = Table(path).file_slices()
        print(f"  read back with Spark: {n} rows in {back.rdd.getNumPartitions()} Spark "
              f"partitions (one per file slice; {len(slices)} file groups), per city "
              f"{dict(sorted(by_city.items()))} ({time.perf_counter() - t:.1f} s)", file=out)
        return EXIT_OK if n == written else EXIT_PROBLEMS
    finally:
        if created:
            spark.stop()


def _report(path: str, seconds: float, out: TextIO) -> None:
    table = Table(path)
    tl: Timeline = table.timeline
    last = tl.completed()[-1]
    extra: dict[str, Any] = tl.metadata(last).get("extraMetadata", {})
    print(f"  commit {last.requested}: {extra.get(conf.STAT_INSERTS)} inserts "
          f"({extra.get(conf.STAT_INSERTS_ROUTED)} routed into existing file groups), "
          f"{extra.get(conf.STAT_UPDATES)} updates; {extra.get(conf.STAT_GROUPS_TOUCHED)} file "
          f"groups touched, {extra.get(conf.STAT_FILES_CREATED)} new files; "
          f"{seconds:.1f} s end to end ({extra.get(conf.STAT_SECONDS)} s in the commit)",
          file=out)


def cmd_spark_demo(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = output(out)
    return run(args.master, args.out, args.batches, args.rows, out)


def register(commands: Commands) -> None:
    p = commands.add(
        "spark-demo", cmd_spark_demo,
        help="the demo pipeline on Spark: upsert batches, report each commit, read back",
        description="Create a table and upsert batches into it with "
        "df.write.format('morlog') (70 %% inserts, routed by the Spark tasks into small "
        "file groups), print "
        "what each commit did, then read the table back with spark.read.format('morlog'). "
        "Needs pyspark. Exit status 0, or 1 when the rows read back are not the rows "
        "written.",
    )
    p.add_argument("--master", default="local[2]",
                   help="Spark master (default local[2]; a cluster URL runs the same job)")
    p.add_argument("--out", default=os.path.join("out", "spark_demo_table"),
                   help="table path (default out/spark_demo_table; replaced on each run)")
    p.add_argument("--batches", type=int, default=5, help="upsert batches (default 5)")
    p.add_argument("--rows", type=int, default=3000, help="rows per batch (default 3000)")
