"""A Structured Streaming driver for ``tests/test_spark_stream.py``, run as its own process
(the test SIGKILLs it mid-stream): streams the Parquet files of an input folder, one file a
micro-batch, into a morlog table and stops when every file is written (``availableNow``).

    python tests/stream_driver.py TABLE INPUT CHECKPOINT OPTIONS_JSON [SECONDS_PER_BATCH]
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator

import pyarrow as pa


def main(argv: list[str]) -> None:
    table, source, checkpoint, options = argv[:4]
    pause = float(argv[4]) if len(argv) > 4 else 0.0
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from morlog.spark.write import register

    spark = (SparkSession.builder.master("local[2]").appName("morlog-stream-test")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    df = (spark.readStream.format("parquet").schema("id string, ts long, v double")
          .option("maxFilesPerTrigger", 1).load(source))
    if pause:
        def slow(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            time.sleep(pause)  # a micro-batch lasts a while: the kill lands inside one
            yield from batches
        df = df.mapInArrow(slow, df.schema)
    q = (df.writeStream.format("morlog").options(**json.loads(options))
         .option("checkpointLocation", checkpoint).trigger(availableNow=True).start(table))
    q.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
