"""``morlog bench prune``: column-statistics pruning of file slices (issue 14, HUDI-8389).

**The table** (morlog's write client, table version 6: a rollback appends ROLLBACK command
blocks to the logs the failed commit wrote to, as Hudi 0.x does; ``WriteConfig(fsync=False)``,
no metadata table, automatic cleaning off): 4 partitions (``city``) x 50 file groups = 200
file slices (``--quick``: 2 x 10 = 20), each a base file of 300 rows (``--quick``: 100) with
columns of a clear order per file group ``g`` (0..199, partition ``g // 50``):

- ``id`` (int64, the record key): ``g * 1000 + i`` for row ``i``;
- ``fare`` (double): uniform in [1, 100), a tenth of the rows NULL in the groups
  ``g % 40 == 7``;
- ``ts`` (timestamp, microseconds, UTC): 2024-01-01 plus ``g`` hours plus ``i`` seconds;
- ``city`` (string): the partition column.

Then a log history, one commit each, in this order:

1. *update*: the slices ``g % 4 == 3`` (a quarter) get an ordinary update block: a tenth of
   their rows with new fares and ``ts`` half a second later (still inside the group's hour);
2. *rollback*: an upsert into the slices ``g % 4 == 1`` with ``(g // 4) % 3 == 0`` (NULL fares,
   ``ts`` in 2099) whose process dies before completing the instant (its completed instant
   file removed, as a crash leaves the table); the next commit rolls it back, leaving the
   failed data block and a ROLLBACK command block in each of those logs;
3. *delete*: a delete of a fifth of the rows of the slices ``g % 4 == 1``,
   ``(g // 4) % 3 == 1`` (a delete block each; this commit is the one that rolls back 2.);
4. *failed*: like 2. into the slices ``g % 4 == 1``, ``(g // 4) % 3 == 2``, and left pending
   (no writer came after it): a data block of a failed commit in each of those logs.

So a quarter of the slices (50) hold rollback, delete or failed-commit blocks, about a third
each; the benchmark checks the logs hold exactly that before measuring.

**The predicates** (8, SQL-like text of ``morlog.readers.predicate``; group numbers for the
full table, scaled for ``--quick``): a range on ``id`` (groups 41-43), an IN of four ids, a
partition equality, a ``ts`` range (groups 100-104), ``fare IS NULL``, an OR of two ``id``
ranges, a NOT of a range, and one that no row matches (``ts`` in 2090 or later: only the
failed commits' rows would match it, and those are not part of the table).

**Per predicate**:

- slices pruned by morlog's rule (``prune(..., rule="morlog")``) and by Hudi's rule
  (``rule="hudi"``: a log file without statistics, one holding a delete, command or failed
  block, keeps its slice), as fractions of all slices and of the 50 special slices, and per
  kind of slice;
- **soundness**: the merged snapshot (every slice read, ``Table.read_slice``) filtered with
  the predicate (pyarrow) gives the slices that hold a matching row; a pruned slice among them
  (either rule) stops the benchmark (``BenchError``: it never reports an unsound result);
  ``Table.read(where=...)`` must return exactly those rows;
- hudi-rs (``hudi``): ``HudiTable.read(HudiReadOptions(filters=[(column, op, value)...]))``
  where the predicate is an AND of comparisons and INs (others are skipped, saying so); its
  rows (checked against the snapshot), time, and the slices ``get_file_slices`` plans with
  the same filters (hudi-rs 0.5 prunes a MOR snapshot by partition values only);
- query time of ``Table(path).read(where=...)`` (pruning, then the filter on the rows of the
  kept slices) vs ``Table(path).read()`` plus the same pyarrow filter (no pruning: the full
  read timed once, best of repeats, plus this predicate's filter on it), each opening the
  table itself; and of Spark:
  ``spark.read.format("morlog").load(path).filter(EXPR).count()`` with the read option
  ``filter.pushdown`` true vs false (set per query), on the first
  predicates only (``spark_predicates`` in the params: a query reads every slice in a Python
  task without pushdown, about 0.1 s a slice on two cores), one run each after an untimed
  warm-up query, which setting runs first alternating from predicate to predicate;
  ``local[2]``, UI off, workers on this interpreter. Without pyspark the Spark part is
  skipped, saying so; with ``--quick`` it runs only in a Spark session that is running
  already (a test's), as starting one takes longer than the rest of the quick run.

**Goals**:

- ``pruned_superset_of_hudi``: (predicate, slice) cases where Hudi's rule prunes a slice
  morlog keeps; target ``<= 0``;
- ``unsound_prunes``: pruned slices (either rule) holding a matching row; target ``<= 0``
  (the run stops before reporting one);
- ``pruned_fraction_morlog_minus_hudi``: on the 50 rollback/delete/failed slices, the
  fraction morlog prunes minus the fraction Hudi's rule prunes, averaged over the
  predicates; target ``> 0``;
- ``read_time_ratio_minus_kept_fraction``: time proportional to the slices kept:
  (pruned read time / unpruned read time) minus (kept slices / all slices), averaged over the
  predicates; target ``<= 0.25`` (pruning itself reads every slice's base-file footer and
  log block headers, so a read that keeps nothing still costs something: the ratios split the
  pruned read into ``prune()``'s own time and the rest, reading the kept slices).
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import re
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import morlog.config as conf
from morlog.logformat.constants import BlockType, CommandType
from morlog.readers import predicate as pr
from morlog.readers.logfile import LogFileReader
from morlog.readers.prune import PruneResult, bind_where, prune
from morlog.readers.table import FileSlice, Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig

from .common import BenchError, best_of, goal, make_report, num, progress, require
from .common import ratio as div
from .spark_prune import PUSHDOWN_OPTION, spark_queries

TABLE_VERSION = 6
CITIES = ("amsterdam", "berlin", "chennai", "sao_paulo", "seattle", "tokyo", "lima", "oslo")
#: ids of file group g: g * ID_STRIDE + row
ID_STRIDE = 1000
SECOND = 1_000_000
HOUR = 3600 * SECOND
#: 2024-01-01T00:00:00Z in microseconds
T0 = 1_704_067_200 * SECOND
#: the ``ts`` of the failed commits' rows (2099-01-01): matched only by the no-match predicate
FAILED_TS = 4_070_908_800 * SECOND
#: the no-match predicate's lower bound (2090-01-01)
NO_MATCH_TS = "2090-01-01 00:00:00Z"
#: kinds of slices: the special ones (a quarter), then the others
SPECIAL = ("rollback", "delete", "failed")
KINDS = (*SPECIAL, "update", "plain")
GOAL_SUPERSET = 0.0
GOAL_UNSOUND = 0.0
GOAL_GAIN = 0.0
GOAL_PROPORTIONAL = 0.25
NO_CLEAN = {conf.CLEAN_AUTOMATIC: "false"}


@dataclass(frozen=True)
class Sizes:
    partitions: int = 4
    groups_per_partition: int = 50
    rows_per_group: int = 300
    #: the predicates the Spark queries run (the first ones of :func:`predicates`)
    spark_predicates: int = 2

    @property
    def groups(self) -> int:
        return self.partitions * self.groups_per_partition


FULL = Sizes()
QUICK = Sizes(partitions=2, groups_per_partition=10, rows_per_group=100, spark_predicates=1)

SCHEMA = pa.schema([("id", pa.int64()), ("city", pa.string()), ("fare", pa.float64()),
                    ("ts", pa.timestamp("us", tz="UTC"))])


def kind_of(g: int) -> str:
    """What the log history does to file group ``g``'s slice."""
    if g % 4 == 1:
        return SPECIAL[(g // 4) % 3]
    return "update" if g % 4 == 3 else "plain"


# --- the table ------------------------------------------------------------------------------


def _rows(s: Sizes, groups: Sequence[int], first: int, count: int, *, fare: np.ndarray | None,
          ts_shift: int = 0, null_fare: np.ndarray | None = None,
          ts: int | None = None) -> pa.Table:
    """Rows ``first .. first + count - 1`` of each of ``groups`` (numpy, no row loops)."""
    g = np.repeat(np.asarray(groups, np.int64), count)
    i = np.tile(np.arange(first, first + count, dtype=np.int64), len(groups))
    cities = np.array(CITIES[: s.partitions], dtype=object)[g // s.groups_per_partition]
    ts_col = (np.full(g.size, ts, np.int64) if ts is not None
              else T0 + g * HOUR + i * SECOND + ts_shift)
    fares = (pa.nulls(g.size, pa.float64()) if fare is None
             else pa.array(fare, pa.float64(), mask=null_fare))
    return pa.table({"id": pa.array(g * ID_STRIDE + i, pa.int64()),
                     "city": pa.array(cities, pa.string()), "fare": fares,
                     "ts": pa.array(ts_col, pa.timestamp("us", tz="UTC"))}, schema=SCHEMA)


def _config(s: Sizes) -> WriteConfig:
    # one new file group per rows_per_group inserts (records counted as one byte each), no
    # inserts routed into existing groups: every base file is exactly one group's rows
    return WriteConfig(fsync=False, new_groups="base", route_inserts=False, record_size=1,
                       max_file_size=s.rows_per_group, small_file_limit=0,
                       hoodie_options=dict(NO_CLEAN))


def _crash(path: str, instant: str) -> None:
    """Leave ``instant`` as a writer that died before completing it leaves it: requested and
    inflight on the timeline, its blocks in the logs (table version 6: ``.hoodie/``)."""
    completed = os.path.join(path, ".hoodie", f"{instant}.deltacommit")
    if not os.path.exists(completed) or not os.path.exists(completed + ".inflight"):
        raise BenchError(f"instant {instant} has no completed and inflight file to turn "
                         "into a failed commit")
    os.remove(completed)


@dataclass
class Built:
    path: str
    seconds: float
    commits: dict[str, str]
    groups: dict[str, list[int]]


def build(path: str, s: Sizes) -> Built:
    """The table of the module docstring."""
    rng = np.random.default_rng(1400)
    n, r = s.groups, s.rows_per_group
    by_kind = {k: [g for g in range(n) if kind_of(g) == k] for k in KINDS}
    t0 = time.perf_counter()
    mt = MorTable.create(path, SCHEMA, key_field="id", partition_field="city",
                         config=_config(s), table_version=TABLE_VERSION)
    g_all = np.repeat(np.arange(n), r)
    i_all = np.tile(np.arange(r), n)
    nulls = (g_all % 40 == 7) & (i_all % 10 == 5)
    base = _rows(s, range(n), 0, r, fare=rng.uniform(1, 100, n * r), null_fare=nulls)
    c = mt.insert(base)
    commits = {"insert": c.instant}
    if len(c.new_groups) != n:
        raise BenchError(f"the insert made {len(c.new_groups)} file groups, not {n}")
    k = max(1, r // 10)
    upd = by_kind["update"]
    c = mt.upsert(_rows(s, upd, 0, k, fare=rng.uniform(1, 100, len(upd) * k),
                        ts_shift=SECOND // 2))
    commits["update"] = c.instant
    if c.updates != len(upd) * k or c.inserts:
        raise BenchError(f"the update commit tagged {c.updates} updates, {c.inserts} inserts")
    rb = by_kind["rollback"]
    c = mt.upsert(_rows(s, rb, r // 4, k, fare=None, ts=FAILED_TS))
    _crash(path, c.instant)
    commits["rolled_back"] = c.instant
    dl = by_kind["delete"]
    d = max(1, r // 5)
    c = mt.delete(_rows(s, dl, r // 2, d, fare=None).select(["id", "city"]))
    commits["delete"] = c.instant
    if c.rolled_back != [commits["rolled_back"]] or c.deletes != len(dl) * d:
        raise BenchError(f"the delete commit rolled back {c.rolled_back} and deleted "
                         f"{c.deletes} rows")
    fl = by_kind["failed"]
    c = mt.upsert(_rows(s, fl, r // 4, k, fare=None, ts=FAILED_TS))
    _crash(path, c.instant)
    commits["failed"] = c.instant
    return Built(path, time.perf_counter() - t0, commits, by_kind)


def log_census(table: Table, s: FileSlice) -> Counter[str]:
    """The blocks of a slice's logs by what they are to a reader: data blocks of completed
    instants, of pending ones, delete blocks, ROLLBACK command blocks."""
    done = {i.requested for i in table.timeline.completed()}
    out: Counter[str] = Counter()
    directory = table.slice_dir(s.partition)
    for name in s.log_files:
        with LogFileReader(table.storage.source(table.storage.join(directory, name))) as r:
            for b in r.blocks():
                if b.block_type == BlockType.DELETE:
                    out["delete"] += 1
                elif b.block_type == BlockType.COMMAND:
                    out["rollback" if b.command_type == CommandType.ROLLBACK
                        else "command"] += 1
                else:
                    out["data" if b.instant in done else "data_of_pending"] += 1
    return out


#: what each kind's logs must hold (block counts by :func:`log_census`)
EXPECTED_LOGS: dict[str, dict[str, int]] = {
    "rollback": {"data_of_pending": 1, "rollback": 1},
    "delete": {"delete": 1},
    "failed": {"data_of_pending": 1},
    "update": {"data": 1},
    "plain": {},
}


@dataclass
class Snapshot:
    """Every slice's merged rows, with the slice's position in ``slices``."""

    slices: list[FileSlice]
    rows: pa.Table
    position: np.ndarray
    group: list[int]
    kind: list[str]
    logs: dict[str, dict[str, int]]


def snapshot(table: Table, s: Sizes) -> Snapshot:
    """Read each slice once (the reference for soundness) and check it is what the build
    says: one file group's ids, logs holding what its kind must."""
    slices = table.file_slices()
    if len(slices) != s.groups:
        raise BenchError(f"the table has {len(slices)} file slices, not {s.groups}")
    parts, pos, group, kinds = [], [], [], []
    logs: dict[str, dict[str, int]] = {}
    for j, sl in enumerate(slices):
        t = table.read_slice(sl)
        ids = t.column("id")
        lo, hi = pc.min(ids).as_py(), pc.max(ids).as_py()
        if lo is None or lo // ID_STRIDE != hi // ID_STRIDE:
            raise BenchError(f"slice {sl.partition}/{sl.file_id} holds ids {lo}..{hi}, not "
                             "one file group's")
        g = lo // ID_STRIDE
        k = kind_of(g)
        census = dict(log_census(table, sl))
        if census != EXPECTED_LOGS[k]:
            raise BenchError(f"slice of group {g} ({k}) has log blocks {census}, expected "
                             f"{EXPECTED_LOGS[k]}")
        logs[k] = census
        parts.append(t)
        pos.append(np.full(t.num_rows, j, np.int32))
        group.append(g)
        kinds.append(k)
    rows = pa.concat_tables(parts)
    return Snapshot(slices, rows, np.concatenate(pos), group, kinds, logs)


# --- the predicates -------------------------------------------------------------------------


def _stamp(us: int) -> str:
    d = dt.datetime.fromtimestamp(us / SECOND, dt.UTC)
    return f"TIMESTAMP '{d:%Y-%m-%d %H:%M:%S}Z'"


def predicates(s: Sizes) -> dict[str, str]:
    """Name -> predicate text; selective on the full table (1-5 % of the slices, but the
    partition equality), in the order the Spark queries take them."""
    n, st = s.groups, ID_STRIDE
    a, k = n // 5 + 1, max(1, n * 15 // 1000)  # groups 41-43 of 200
    tsg, tsk = n // 2, max(1, n // 40)  # groups 100-104
    ins = sorted({5, (n * 77 // 200) * st + 123, (n * 3 // 4) * st + 200,
                  (n - 1) * st + s.rows_per_group - 1})
    neg = max(1, n * 3 // 100)  # groups 0-5
    return {
        "id_range": f"id >= {a * st} AND id < {(a + k) * st}",
        "no_match": f"ts >= TIMESTAMP '{NO_MATCH_TS}'",
        "id_in": f"id IN ({', '.join(map(str, ins))})",
        "partition_eq": f"city = '{CITIES[2 % s.partitions]}'",
        "ts_range": f"ts >= {_stamp(T0 + tsg * HOUR)} AND ts < {_stamp(T0 + (tsg + tsk) * HOUR)}",
        "fare_is_null": "fare IS NULL",
        "id_or_ranges": f"id < {2 * st} OR id >= {(n - 2) * st}",
        "not_range": f"NOT (id >= {neg * st})",
    }


def hudi_filters(text: str) -> tuple[list[tuple[str, str, str]] | None, str]:
    """hudi-rs filters ``(column, op, value)`` for a predicate that is an AND of comparisons
    and INs, else (None, why not)."""
    e = pr.parse(text)
    items = e.items if isinstance(e, pr.And) else (e,)
    out: list[tuple[str, str, str]] = []
    for x in items:
        if isinstance(x, pr.Compare):
            out.append((x.column, x.op, _hudi_value(x.value)))
        elif isinstance(x, pr.In):
            out.append((x.column, "IN", ",".join(_hudi_value(v) for v in x.values)))
        else:
            what = type(x).__name__.upper().replace("ISNULL", "IS NULL")
            return None, f"hudi-rs filters are an AND of comparisons and IN lists; not {what}"
    return out, ""


def _hudi_value(v: Any) -> str:
    if isinstance(v, dt.datetime):
        return v.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return str(v)


# --- measuring ------------------------------------------------------------------------------


def _reasons(r: PruneResult) -> dict[str, int]:
    c = Counter(re.sub(r"[0-9]{14,}", "<instant>", re.sub(r"log file \S+", "log file <name>",
                                                         d.reason))
                for d in r.kept + r.pruned)
    return dict(c.most_common())


def _sorted_ids(t: pa.Table) -> np.ndarray:
    if not t.num_rows:
        return np.zeros(0, np.int64)
    return np.sort(t.column("id").to_numpy())


def _prune_fresh(path: str, text: str, rule: str) -> PruneResult:
    """``prune`` on a table opened here (timeline and listing inside the timed call)."""
    return prune(Table(path), text, rule=rule)


def _read_where(path: str, text: str) -> pa.Table:
    return Table(path).read(where=text)


def pruning(table: Table, snap: Snapshot, text: str, repeats: int
            ) -> dict[str, Any]:
    """Both rules' decisions on one predicate, checked against the snapshot."""
    expr = bind_where(table, text)
    order = {(x.partition, x.file_id): j for j, x in enumerate(snap.slices)}
    runs: dict[str, PruneResult] = {}
    seconds: dict[str, float] = {}
    for rule in ("morlog", "hudi"):
        seconds[rule], runs[rule] = best_of(
            repeats, functools.partial(_prune_fresh, table.path, text, rule))
    pruned = {rule: {order[(d.partition, d.file_id)] for d in r.pruned}
              for rule, r in runs.items()}
    is_match = _match_mask(snap.rows, expr)
    matched = snap.rows.filter(pa.array(is_match))
    match_pos = np.unique(snap.position[is_match])
    matching = set(match_pos.tolist())
    unsound = {rule: sorted(p & matching) for rule, p in pruned.items()}
    for rule, bad in unsound.items():
        if bad:
            s0 = snap.slices[bad[0]]
            raise BenchError(f"UNSOUND: {rule}'s rule pruned {len(bad)} slice(s) holding rows "
                             f"where {text!r} is TRUE, e.g. {s0.partition}/{s0.file_id} "
                             f"(group {snap.group[bad[0]]}, {snap.kind[bad[0]]})")
    n = len(snap.slices)
    special = {j for j, k in enumerate(snap.kind) if k in SPECIAL}
    by_kind = {k: {"slices": sum(1 for x in snap.kind if x == k),
                   "pruned_morlog": sum(1 for j in pruned["morlog"] if snap.kind[j] == k),
                   "pruned_hudi": sum(1 for j in pruned["hudi"] if snap.kind[j] == k)}
               for k in KINDS}
    ns = max(1, len(special))
    return {
        "where": text,
        "matching_rows": int(matched.num_rows),
        "matching_slices": len(matching),
        "kept": {rule: n - len(p) for rule, p in pruned.items()},
        "pruned_fraction": {rule: num(len(p) / n) for rule, p in pruned.items()},
        "special_pruned_fraction": {rule: num(len(p & special) / ns)
                                    for rule, p in pruned.items()},
        "hudi_prunes_morlog_keeps": len(pruned["hudi"] - pruned["morlog"]),
        "unsound_prunes": sum(len(b) for b in unsound.values()),
        "by_kind": by_kind,
        "prune_seconds": {rule: num(v) for rule, v in seconds.items()},
        "reasons": {rule: _reasons(r) for rule, r in runs.items()},
        "_matched": matched,
    }


def _match_mask(rows: pa.Table, expr: pr.Expr) -> np.ndarray:
    """Which rows of ``rows`` the bound predicate keeps (TRUE; NULL is not kept)."""
    if not rows.num_rows:
        return np.zeros(0, bool)
    marked = rows.append_column("__row", pa.array(np.arange(rows.num_rows)))
    keep = marked.filter(pr.to_arrow(expr)).column("__row").to_numpy()
    out = np.zeros(rows.num_rows, bool)
    out[keep] = True
    return out


def read_times(path: str, per: dict[str, dict[str, Any]], repeats: int) -> dict[str, Any]:
    """``Table.read(where=...)`` vs the full read plus the same filter, per predicate; both
    must return the rows the snapshot says match."""
    Table(path).read()  # warm the page cache
    full_s, full = best_of(repeats, lambda: Table(path).read())
    out: dict[str, Any] = {"full_read_seconds": num(full_s), "full_read_rows": full.num_rows,
                           "predicates": {}}
    for name, p in per.items():
        text = p["where"]
        arrow = pr.to_arrow(bind_where(Table(path), text))
        filter_s, filtered = best_of(repeats, functools.partial(full.filter, arrow))
        pruned_s, got = best_of(repeats, functools.partial(_read_where, path, text))
        want = _sorted_ids(p["_matched"])
        for label, t in (("Table.read(where=...)", got), ("the filtered full read", filtered)):
            if not np.array_equal(_sorted_ids(t), want):
                raise BenchError(f"{name}: {label} returned {t.num_rows} rows, the snapshot "
                                 f"has {len(want)} matching rows")
        unpruned_s = full_s + filter_s
        n = p["slices"]
        kept = p["kept"]["morlog"] / n
        ratio = pruned_s / unpruned_s if unpruned_s else 0.0
        # what deciding costs (prune() alone, timed apart) and what is left: reading the
        # kept slices and filtering their rows
        deciding = min(p["prune_seconds"]["morlog"], pruned_s)
        out["predicates"][name] = {
            "pruned_seconds": num(pruned_s), "unpruned_seconds": num(unpruned_s),
            "filter_seconds": num(filter_s), "rows": got.num_rows,
            "time_ratio": num(ratio), "kept_fraction": num(kept),
            "ratio_minus_kept_fraction": num(ratio - kept),
            "speedup": div(unpruned_s, pruned_s),
            "prune_seconds": num(deciding),
            "prune_share_of_pruned_read": div(deciding, pruned_s),
            "reading_kept_ratio_minus_kept_fraction": num(
                (pruned_s - deciding) / unpruned_s - kept if unpruned_s else 0.0)}
    return out


def _not_fatal(exc: BaseException) -> bool:
    # hudi-rs reports unsupported input as a Rust panic (a BaseException)
    return not isinstance(exc, KeyboardInterrupt | SystemExit | GeneratorExit)


def hudi_rs_reads(hudi: Any, path: str, per: dict[str, dict[str, Any]], repeats: int
                  ) -> dict[str, Any]:
    """hudi-rs's filtered snapshot read where its filters express the predicate."""
    def table() -> Any:
        return hudi.HudiTableBuilder.from_base_uri(path).build()

    def rows(batches: list[pa.RecordBatch]) -> pa.Table:
        return pa.Table.from_batches(batches) if batches else pa.table({"id": pa.array(
            [], pa.int64())})

    def read_with(opts: Any) -> pa.Table:
        return rows(table().read(opts))

    out: dict[str, Any] = {"version": getattr(hudi, "__version__", None)}
    try:
        full_s, full = best_of(repeats, lambda: rows(table().read()))
        out["full_read_seconds"] = num(full_s)
        out["full_read_rows"] = full.num_rows
    except BaseException as exc:
        if not _not_fatal(exc):
            raise
        out["full_read_error"] = f"{type(exc).__name__}: {exc}"[:300]
    preds: dict[str, Any] = {}
    for name, p in per.items():
        filters, why = hudi_filters(p["where"])
        if filters is None:
            preds[name] = {"skipped": why}
            continue
        entry: dict[str, Any] = {"filters": [list(f) for f in filters]}
        try:
            opts = hudi.HudiReadOptions(filters=filters)
            sec, got = best_of(repeats, functools.partial(read_with, opts))
            planned = len(table().get_file_slices(opts))
        except BaseException as exc:
            if not _not_fatal(exc):
                raise
            entry["error"] = f"{type(exc).__name__}: {exc}"[:300]
            preds[name] = entry
            continue
        n = p["slices"]
        entry.update({
            "seconds": num(sec), "rows": got.num_rows,
            "rows_agree": bool(np.array_equal(_sorted_ids(got), _sorted_ids(p["_matched"]))),
            "slices_planned": planned, "pruned_fraction": num(1 - planned / n)})
        preds[name] = entry
    out["predicates"] = preds
    return out


# --- the scenario ---------------------------------------------------------------------------


def _mean(xs: Sequence[float]) -> float:
    return num(sum(xs) / len(xs)) if xs else 0.0


def run(*, quick: bool = False, repeats: int = 3) -> dict[str, Any]:
    s = QUICK if quick else FULL
    hudi = require("hudi", "prune")
    preds = predicates(s)
    spark_names = list(preds)[: s.spark_predicates]
    with tempfile.TemporaryDirectory(prefix="morlog-bench-prune-") as tmp:
        path = os.path.join(tmp, "table")
        progress(f"prune: building {s.partitions} partitions x {s.groups_per_partition} file "
                 f"groups x {s.rows_per_group} rows and the log history")
        b = build(path, s)
        table = Table(path)
        snap = snapshot(table, s)
        per: dict[str, dict[str, Any]] = {}
        for name, text in preds.items():
            progress(f"prune: {name}: {text} ({repeats}x per rule)")
            per[name] = pruning(table, snap, text, repeats)
            per[name]["slices"] = len(snap.slices)
        progress(f"prune: Table reads with and without pruning ({repeats}x)")
        reads = read_times(path, per, repeats)
        progress(f"prune: hudi-rs filtered reads ({repeats}x)")
        hudi_rs = hudi_rs_reads(hudi, path, per, repeats)
        spark = spark_queries(path, per, spark_names, quick=quick)
    for p in per.values():
        del p["_matched"], p["slices"]
    n = len(snap.slices)
    special = sum(1 for k in snap.kind if k in SPECIAL)
    gain = [p["special_pruned_fraction"]["morlog"] - p["special_pruned_fraction"]["hudi"]
            for p in per.values()]
    rp = reads["predicates"]
    ratios: dict[str, Any] = {
        "pruned_fraction_morlog_mean": _mean([p["pruned_fraction"]["morlog"]
                                              for p in per.values()]),
        "pruned_fraction_hudi_mean": _mean([p["pruned_fraction"]["hudi"]
                                            for p in per.values()]),
        "special_pruned_fraction_morlog_mean": _mean(
            [p["special_pruned_fraction"]["morlog"] for p in per.values()]),
        "special_pruned_fraction_hudi_mean": _mean(
            [p["special_pruned_fraction"]["hudi"] for p in per.values()]),
        "pruned_fraction_morlog_minus_hudi": _mean(gain),
        "read_time_ratio_mean": _mean([r["time_ratio"] for r in rp.values()]),
        "kept_fraction_mean": _mean([r["kept_fraction"] for r in rp.values()]),
        "read_time_ratio_minus_kept_fraction": _mean([r["ratio_minus_kept_fraction"]
                                                      for r in rp.values()]),
        "read_speedup_mean": _mean([r["speedup"] for r in rp.values()]),
        "prune_share_of_pruned_read_mean": _mean([r["prune_share_of_pruned_read"]
                                                  for r in rp.values()]),
        "reading_kept_ratio_minus_kept_fraction": _mean(
            [r["reading_kept_ratio_minus_kept_fraction"] for r in rp.values()]),
    }
    hp = [h for h in hudi_rs.get("predicates", {}).values() if "seconds" in h]
    if hp:
        ratios["hudi_rs_pruned_fraction_mean"] = _mean([h["pruned_fraction"] for h in hp])
        ratios["hudi_rs_predicates_expressed"] = len(hp)
    sp = list(spark.get("predicates", {}).values())
    if sp:
        ratios["spark_pushdown_on_vs_off_mean"] = _mean([e["on_vs_off"] for e in sp])
    superset = sum(p["hudi_prunes_morlog_keeps"] for p in per.values())
    unsound = sum(p["unsound_prunes"] for p in per.values())
    goals = {
        "pruned_superset_of_hudi": goal(superset, GOAL_SUPERSET, "<="),
        "unsound_prunes": goal(unsound, GOAL_UNSOUND, "<="),
        "pruned_fraction_morlog_minus_hudi": goal(ratios["pruned_fraction_morlog_minus_hudi"],
                                                  GOAL_GAIN, ">"),
        "read_time_ratio_minus_kept_fraction": goal(
            ratios["read_time_ratio_minus_kept_fraction"], GOAL_PROPORTIONAL, "<="),
    }
    params = {
        "quick": quick, "repeats": repeats, "table_version": TABLE_VERSION,
        "partitions": s.partitions, "groups_per_partition": s.groups_per_partition,
        "slices": n, "rows_per_group": s.rows_per_group, "special_slices": special,
        "slices_by_kind": {k: sum(1 for x in snap.kind if x == k) for k in KINDS},
        "logs_by_kind": snap.logs, "predicates": preds, "spark_predicates": spark_names,
        "spark_runs": 1, "pushdown_option": PUSHDOWN_OPTION,
    }
    results = {
        "build": {"seconds": num(b.seconds), "commits": b.commits,
                  "snapshot_rows": snap.rows.num_rows},
        "predicates": per, "table_read": reads, "hudi_rs": hudi_rs, "spark": spark,
    }
    return make_report("prune", params, results, ratios, goals)


def _grouped(ax: Any, names: Sequence[str], series: dict[str, Sequence[float | None]],
             title: str, ylabel: str, fmt: str = "{:.2g}") -> None:
    colors = ["#4878a8", "#e0a040", "#6aa86a", "#b05050"]
    width = 0.8 / max(1, len(series))
    x = np.arange(len(names))
    for i, (label, values) in enumerate(series.items()):
        vals = [0.0 if v is None else float(v) for v in values]
        bars = ax.bar(x + (i - (len(series) - 1) / 2) * width, vals, width, label=label,
                      color=colors[i % len(colors)])
        for bar_, v in zip(bars, values, strict=True):
            ax.annotate("n/a" if v is None else fmt.format(v),
                        (bar_.get_x() + bar_.get_width() / 2, bar_.get_height()),
                        ha="center", va="bottom", fontsize=6)
    ax.set_xticks(x)
    ax.set_xticklabels(list(names), rotation=30, ha="right", fontsize=7)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(ylabel)
    top = max((float(v) for vs in series.values() for v in vs if v is not None), default=1.0)
    ax.set_ylim(0, 1.3 * top if top > 0 else 1.0)  # room for the legend above the bars
    ax.legend(fontsize=7, loc="upper center", ncol=len(series))


def plot(plt: Any, report: dict[str, Any]) -> Any:
    r = report["results"]
    per = r["predicates"]
    names = list(per)
    fig, axes = plt.subplots(2, 2, figsize=(14, 9))
    hrs = r["hudi_rs"].get("predicates", {})
    _grouped(axes[0][0], names, {
        "morlog": [per[n]["pruned_fraction"]["morlog"] for n in names],
        "Hudi's rule": [per[n]["pruned_fraction"]["hudi"] for n in names],
        "hudi-rs (plans)": [hrs.get(n, {}).get("pruned_fraction") for n in names]},
        f"slices pruned, of all {report['params']['slices']}", "fraction")
    _grouped(axes[0][1], names, {
        "morlog": [per[n]["special_pruned_fraction"]["morlog"] for n in names],
        "Hudi's rule": [per[n]["special_pruned_fraction"]["hudi"] for n in names]},
        f"slices pruned, of the {report['params']['special_slices']} with rollback, delete "
        "or failed-commit blocks", "fraction")
    rp = r["table_read"]["predicates"]
    _grouped(axes[1][0], names, {
        "Table.read(where=...)": [rp[n]["pruned_seconds"] for n in names],
        "of which prune()": [rp[n]["prune_seconds"] for n in names],
        "full read + filter": [rp[n]["unpruned_seconds"] for n in names]},
        "Table query time (kept fraction: "
        + ", ".join(f"{rp[n]['kept_fraction']:.2g}" for n in names) + ")", "seconds",
        fmt="{:.3g}")
    sp = r["spark"].get("predicates", {})
    if sp:
        sn = list(sp)
        _grouped(axes[1][1], sn, {
            "pushdown on": [sp[n]["pushdown_on_seconds"] for n in sn],
            "pushdown off": [sp[n]["pushdown_off_seconds"] for n in sn]},
            f"Spark filter().count() ({PUSHDOWN_OPTION})", "seconds", fmt="{:.3g}")
    else:
        axes[1][1].set_axis_off()
        axes[1][1].set_title(f"Spark: {r['spark'].get('skipped', 'not run')}", fontsize=10)
    p = report["params"]
    fig.suptitle(f"morlog bench prune: {p['slices']} file slices ({p['special_slices']} with "
                 f"rollback/delete/failed blocks), {p['rows_per_group']} rows each",
                 fontsize=11)
    return fig


__all__ = ["build", "hudi_filters", "kind_of", "plot", "predicates", "run"]
