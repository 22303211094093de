"""The Spark part of ``morlog bench prune`` (``morlog.bench.prune``): the same predicates as
``spark.read.format("morlog").load(path).filter(EXPR).count()`` with the read option
``filter.pushdown`` true and false, set per query (``MorlogFilteringReader.pushFilters``; the
session has ``spark.sql.python.filterPushdown.enabled`` on, as ``register`` sets it, so that
Spark accepts the reader that takes filters). pyspark is imported here only, when the
scenario runs."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from .common import BenchError, num, progress
from .common import ratio as div
from .spark_upsert import available

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
PUSHDOWN_OPTION = "filter.pushdown"
MASTER = "local[2]"


def spark_queries(path: str, per: dict[str, dict[str, Any]], names: Sequence[str], *,
                  quick: bool = False) -> dict[str, Any]:
    """``filter(EXPR).count()`` on ``format("morlog")`` with pushdown off and on (off first
    for the first predicate, on first for the second, and so on), one run each after an
    untimed warm-up query (``quick``: only in a Spark session that is running already, and
    without the warm-up)."""
    if not available():
        return {"skipped": "pyspark is not installed"}
    from pyspark.sql import SparkSession

    from morlog.spark.write import session

    if quick and SparkSession.getActiveSession() is None:
        return {"skipped": "--quick without a running Spark session (starting one takes "
                           "longer than the rest of the quick run)"}

    t0 = time.perf_counter()
    spark, owned = session(MASTER, "morlog-bench-prune")
    out: dict[str, Any] = {"version": spark.version, "master": MASTER,
                           "session_start_seconds": num(time.perf_counter() - t0),
                           "option": PUSHDOWN_OPTION, "predicates": {}}
    before = spark.conf.get(PUSHDOWN_CONF, None)
    spark.conf.set(PUSHDOWN_CONF, "true")

    def count(text: str, pushdown: str) -> tuple[float, int]:
        t = time.perf_counter()
        got = (spark.read.format("morlog").option(PUSHDOWN_OPTION, pushdown).load(path)
               .filter(text).count())
        return time.perf_counter() - t, int(got)

    try:
        if not quick:  # a quick run's numbers are a smoke test: no warm-up
            progress("prune: Spark warm-up query (untimed)")
            out["warm_up_seconds"] = num(count(per[names[0]]["where"], "false")[0])
        for i, name in enumerate(names):
            p = per[name]
            entry: dict[str, Any] = {"where": p["where"]}
            runs = [("pushdown_off", "false"), ("pushdown_on", "true")]
            # alternate which runs first: the session keeps warming up, which would favour
            # whichever setting always ran second
            for label, conf in runs if i % 2 == 0 else runs[::-1]:
                progress(f"prune: Spark {name}, {PUSHDOWN_OPTION}={conf}")
                sec, got = count(p["where"], conf)
                if got != p["matching_rows"]:
                    raise BenchError(f"Spark ({PUSHDOWN_OPTION}={conf}) counted {got} rows "
                                     f"where {p['where']!r}, the snapshot has "
                                     f"{p['matching_rows']}")
                entry[f"{label}_seconds"] = num(sec)
            entry["rows"] = p["matching_rows"]
            entry["on_vs_off"] = div(entry["pushdown_on_seconds"], entry["pushdown_off_seconds"])
            out["predicates"][name] = entry
    finally:
        if before is None:
            spark.conf.unset(PUSHDOWN_CONF)
        else:
            spark.conf.set(PUSHDOWN_CONF, before)
        if owned:
            spark.stop()
    return out


__all__ = ["MASTER", "PUSHDOWN_CONF", "PUSHDOWN_OPTION", "spark_queries"]
