"""``morlog bench incremental``: pulling one commit's changes from a large table.

A table (morlog's write client, table version 9) of ``rows`` records (default 1,000,000) in
8 partitions, split into many file groups by a small maximum base file size, takes 50
commits: the insert of every row, then 49 upserts of ``batch`` records each (updates of a
run of neighbouring keys, all in one partition, a different one per commit: recent data, as
incremental pipelines see it). The incremental query of
one commit ``(previous completion, its completion]`` (``Table.incremental``) is timed against
the full snapshot read (``Table.read``), and the file slices it read are counted against the
file slices the commit wrote (its commit metadata's write stats) and all the table's.

Goals: the incremental read reads at most the slices the commit touched
(``slices_read_over_touched`` <= 1) and takes at most a tenth of the snapshot's time
(``incremental_time_vs_snapshot`` <= 0.1). Checks: the rows equal the snapshot as of that
commit filtered on ``_hoodie_commit_time``.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa

import morlog.config as conf
from morlog.readers.incremental import INCREMENTAL_ACTIONS, plan_incremental
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig

from .common import bar, best_of, goal, make_report, num, progress, ratio

GOAL_SLICES = 1.0
GOAL_TIME = 0.1
PARTITIONS = 8
SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("fare", pa.float64()),
                    ("note", pa.string()), ("city", pa.string())])


@dataclass(frozen=True)
class Sizes:
    rows: int = 1_000_000
    commits: int = 50
    batch: int = 2_000
    #: the largest base file the insert writes (splits each partition into file groups)
    max_file_size: int = 4 << 20


FULL = Sizes()
QUICK = Sizes(rows=20_000, commits=12, batch=200, max_file_size=128 << 10)


def _config(sizes: Sizes) -> WriteConfig:
    return WriteConfig(fsync=False, small_file_limit=0, max_file_size=sizes.max_file_size,
                       hoodie_options={conf.CLEAN_AUTOMATIC: "false",
                                       conf.COMPACT_INLINE: "false"})


def _rows(ids: np.ndarray, ts: int, rng: np.random.Generator) -> pa.Table:
    n = len(ids)
    return pa.table({
        "id": pa.array([f"k{i:08d}" for i in ids.tolist()]),
        "ts": pa.array(np.full(n, ts, dtype=np.int64)),
        "fare": pa.array(rng.random(n) * 100),
        "note": pa.array([f"note-{ts}-{i % 97}" for i in ids.tolist()]),
        "city": pa.array([f"c{i % PARTITIONS}" for i in ids.tolist()]),
    }, schema=SCHEMA)


def build(path: str, sizes: Sizes) -> None:
    """The table: one insert of every row, then ``commits - 1`` upserts of one partition."""
    rng = np.random.default_rng(26)
    t = MorTable.create(path, SCHEMA, key_field="id", partition_field="city",
                        ordering_field="ts", config=_config(sizes), table_version=9)
    progress(f"incremental: inserting {sizes.rows:,} rows")
    t.insert(_rows(np.arange(sizes.rows), 1, rng))
    per_part = np.arange(sizes.rows)
    for c in range(1, sizes.commits):
        part = c % PARTITIONS
        keys = per_part[per_part % PARTITIONS == part]
        # a run of neighbouring keys, as updates of recent data are (one or two file groups)
        n = min(sizes.batch, len(keys))
        start = int(rng.integers(0, len(keys) - n + 1))
        pick = keys[start:start + n]
        t.upsert(_rows(pick, c + 1, rng))
    progress(f"incremental: {sizes.commits} commits written")


def _touched(table: Table, requested: str) -> int:
    inst = table.timeline.get(requested)
    assert inst is not None
    md = table.timeline.metadata(inst)
    stats = md.get("partitionToWriteStats") or {}
    return len({(p, w.get("fileId")) for p, ws in stats.items() for w in ws})


def measure(path: str, repeats: int) -> dict[str, Any]:
    table = Table(path)
    done = table.timeline.completed(INCREMENTAL_ACTIONS)
    prev, cur = done[-2], done[-1]  # the last commit's changes
    begin, end = prev.completed or prev.requested, cur.completed or cur.requested
    plan = plan_incremental(table, begin, end)
    all_slices = len(table.file_slices())
    snap_s, snap = best_of(repeats, lambda: Table(path).read())
    incr_s, incr = best_of(repeats, lambda: Table(path).incremental(begin, end))
    as_of = Table(path).read(cur.requested)
    mask = pa.compute.equal(as_of.column("_hoodie_commit_time"), cur.requested)
    expected = as_of.filter(mask)
    same = (sorted(incr.column("id").to_pylist()) == sorted(expected.column("id").to_pylist())
            and incr.num_rows == expected.num_rows)
    return {
        "commit": cur.requested,
        "range": [begin, end],
        "slices": {"read": len(plan.slices), "touched": _touched(table, cur.requested),
                   "table": all_slices, "full_scan": plan.full_scan},
        "snapshot": {"seconds": num(snap_s), "rows": snap.num_rows},
        "incremental": {"seconds": num(incr_s), "rows": incr.num_rows},
        "checks": {"ok": bool(same), "expected_rows": expected.num_rows},
    }


def run(*, quick: bool = False, repeats: int = 3, rows: int | None = None) -> dict[str, Any]:
    sizes = QUICK if quick else FULL
    if rows is not None:
        sizes = Sizes(rows=rows, commits=sizes.commits, batch=min(sizes.batch, rows),
                      max_file_size=sizes.max_file_size)
    work = tempfile.mkdtemp(prefix="morlog-bench-incremental-")
    try:
        path = f"{work}/t"
        build(path, sizes)
        res = measure(path, repeats)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sl = res["slices"]
    time_ratio = ratio(res["incremental"]["seconds"], res["snapshot"]["seconds"])
    slices_ratio = ratio(sl["read"], max(sl["touched"], 1))
    goals = {
        "slices_read_over_touched": goal(slices_ratio, GOAL_SLICES, "<="),
        "incremental_time_vs_snapshot": goal(time_ratio, GOAL_TIME, "<="),
    }
    params = {"quick": quick, "repeats": repeats, **asdict(sizes), "partitions": PARTITIONS,
              "table_version": 9,
              "how": "Table.incremental of the last commit vs Table.read of the whole table"}
    ratios = {"incremental_time_vs_snapshot": num(time_ratio),
              "slices_read_over_touched": num(slices_ratio),
              "slices_read_over_table": num(ratio(sl["read"], max(sl["table"], 1)))}
    return make_report("incremental", params, res, ratios, goals)


def plot(plt: Any, report: dict[str, Any]) -> Any:
    r = report["results"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.4))
    bar(axes[0], ["snapshot", "incremental"],
        [r["snapshot"]["seconds"], r["incremental"]["seconds"]],
        "read time: whole table vs one commit's changes", "seconds", fmt="{:.3g}")
    sl = r["slices"]
    bar(axes[1], ["read", "touched", "table"], [sl["read"], sl["touched"], sl["table"]],
        "file slices", "slices", fmt="{:.0f}")
    p = report["params"]
    fig.suptitle(f"morlog bench incremental: {p['rows']:,} rows, {p['commits']} commits, "
                 f"batches of {p['batch']:,}", fontsize=11)
    return fig


__all__ = ["FULL", "QUICK", "Sizes", "build", "measure", "plot", "run"]
