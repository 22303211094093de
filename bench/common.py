"""Shared pieces of ``morlog bench``: test data, timing, goals, the report and its files.

Every scenario returns one report of the same shape (the issue fixes it)::

    {"scenario", "machine": {...}, "params": {...}, "results": {...}, "ratios": {...},
     "goals": {name: {"value", "target", "op", "met"}}}

Times are wall-clock ``time.perf_counter`` seconds, best of ``repeats`` runs, in this one
process. Test data is generated here from a seeded RNG (UUID4 record keys, Hudi-shaped records
of about 200 encoded bytes), so two runs measure the same bytes.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import io
import json
import math
import os
import platform
import random
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO, TypeVar

import fastavro

from morlog.bench.names import INDEX_SCENARIOS
from morlog.logformat.blocks import META_FIELDS, avro_data_block
from morlog.logformat.constants import BlockType
from morlog.logformat.errors import MorlogError, UsageError
from morlog.logformat.index_trailer import CumulativeKind
from morlog.logformat.naming import UNKNOWN_WRITE_TOKEN
from morlog.readers.index import read_stored_index
from morlog.readers.logfile import LogFileReader
from morlog.writers.core.indexed import DEFAULT_CHECKPOINT_EVERY, IndexedLogWriter
from morlog.writers.core.logwriter import LogFileWriter, WriteResult

T = TypeVar("T")

SEED = 20260101
FILE_ID = "b3c1e0a2-5d4f-4e6a-8b7c-9d0e1f2a3b4c-0"
BASE_INSTANT = "20260101000000000"
WRITE_TOKEN = UNKNOWN_WRITE_TOKEN
PARTITION = "city=san_francisco"
SCENARIOS = INDEX_SCENARIOS

#: Hudi's five meta fields, then a trips-like payload: about 200 bytes per encoded record
SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "trips_record",
    "namespace": "hoodie.bench",
    "fields": [{"name": f, "type": ["null", "string"], "default": None} for f in META_FIELDS]
    + [
        {"name": "ts", "type": "long"},
        {"name": "rider", "type": "string"},
        {"name": "driver", "type": "string"},
        {"name": "begin_lat", "type": "double"},
        {"name": "begin_lon", "type": "double"},
        {"name": "end_lat", "type": "double"},
        {"name": "fare", "type": ["null", "double"], "default": None},
    ],
}
#: the writer schema as block headers carry it (computed once, shared by both writers)
SCHEMA_TEXT = json.dumps(SCHEMA, separators=(",", ":"))


class BenchError(MorlogError):
    """A benchmark's own correctness check failed: its numbers would be meaningless."""


#: how to get what the benchmarks need beyond morlog itself (plots, baselines, Spark)
BENCH_EXTRA = "pip install 'morlog[bench]'"


def require(module: str, scenario: str, dist: str | None = None) -> Any:
    """Import ``module``, an optional dependency of a scenario (the ``bench`` extra).

    Benchmark modules import their extra dependencies only here, inside the scenario that
    needs them, so that ``morlog --help`` and ``morlog bench --help`` work without the extra.
    A missing one is a :class:`UsageError` naming the extra (one line, no traceback).
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UsageError(f"bench {scenario} needs {dist or module}, which is not installed "
                         f"({BENCH_EXTRA})") from None


# --- test data ------------------------------------------------------------------------------


def make_rng(salt: int = 0) -> random.Random:
    return random.Random(SEED + salt)


def make_keys(n: int, rng: random.Random) -> list[str]:
    """``n`` UUID4 record keys (distinct with overwhelming probability)."""
    return [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(n)]


def instant_for(i: int) -> str:
    """The delta-commit instant of block ``i`` (one minute apart, after the base instant)."""
    m = i + 1
    if not 0 < m < 24 * 60:
        raise ValueError("at most 1,439 blocks per benchmark slice")
    return f"20260101{m // 60:02d}{m % 60:02d}00000"


def make_records(keys: Sequence[str], instant: str, rng: random.Random) -> list[dict[str, Any]]:
    return [{
        "_hoodie_commit_time": instant,
        "_hoodie_commit_seqno": f"{instant}_0_{seq}",
        "_hoodie_record_key": key,
        "_hoodie_partition_path": PARTITION,
        "_hoodie_file_name": FILE_ID,
        "ts": 1_700_000_000_000 + rng.randrange(10**9),
        "rider": f"rider-{rng.randrange(1000):03d}",
        "driver": f"driver-{rng.randrange(1000):03d}",
        "begin_lat": rng.random(),
        "begin_lon": rng.random(),
        "end_lat": rng.random(),
        "fare": round(rng.uniform(5, 100), 2),
    } for seq, key in enumerate(keys)]


@dataclass
class SliceData:
    """The records of one file slice, block by block, and which block holds each key."""

    blocks: list[list[dict[str, Any]]]
    instants: list[str]
    keys: list[str]
    #: key -> index of its block
    block_of: dict[str, int] = field(default_factory=dict)

    @property
    def records(self) -> int:
        return sum(len(b) for b in self.blocks)


def make_slice(num_blocks: int, records_per_block: int, rng: random.Random) -> SliceData:
    keys = make_keys(num_blocks * records_per_block, rng)
    blocks: list[list[dict[str, Any]]] = []
    instants: list[str] = []
    block_of: dict[str, int] = {}
    for i in range(num_blocks):
        chunk = keys[i * records_per_block : (i + 1) * records_per_block]
        instants.append(instant_for(i))
        blocks.append(make_records(chunk, instants[-1], rng))
        block_of.update((k, i) for k in chunk)
    return SliceData(blocks, instants, keys, block_of)


def encoded_record_bytes(records: Sequence[dict[str, Any]]) -> float:
    """Mean Avro binary size of ``records`` (schemaless, as in a data block)."""
    parsed = fastavro.parse_schema(SCHEMA)
    total = 0
    for r in records:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, r)
        total += len(buf.getvalue())
    return total / max(1, len(records))


# --- log files ------------------------------------------------------------------------------


def write_indexed(directory: str, data: SliceData, *,
                  checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY) -> list[WriteResult]:
    """The slice as indexed Avro data blocks, one append each (append mode, no fsync)."""
    w = IndexedLogWriter(directory, FILE_ID, BASE_INSTANT, write_token=WRITE_TOKEN,
                         mode="append", checkpoint_every=checkpoint_every, fsync=False)
    return [w.append_avro(recs, SCHEMA_TEXT, inst)
            for recs, inst in zip(data.blocks, data.instants, strict=True)]


def write_plain(directory: str, data: SliceData) -> list[WriteResult]:
    """The slice as plain version-3 Avro data blocks (what Hudi writes), same writer mode."""
    w = LogFileWriter(directory, FILE_ID, BASE_INSTANT, write_token=WRITE_TOKEN,
                      mode="append", fsync=False)
    return [w.append(avro_data_block(recs, SCHEMA_TEXT, inst))
            for recs, inst in zip(data.blocks, data.instants, strict=True)]


def single_file(results: Sequence[WriteResult]) -> tuple[str, list[int]]:
    """The one log file a slice went to, and each block's offset in it."""
    names = {str(r.name) for r in results}
    if len(names) != 1:
        raise BenchError(f"expected the slice in one log file, got {sorted(names)}")
    return names.pop(), [r.blocks[0].offset for r in results]


@dataclass
class IndexBytes:
    """Index trailer bytes of the data blocks of one log file, by section."""

    blocks: int = 0
    indexed_blocks: int = 0
    total: int = 0
    sections: dict[str, int] = field(default_factory=dict)
    full_checkpoints: int = 0
    delta_blocks: int = 0

    @property
    def overhead(self) -> int:
        """Section table and tail: trailer bytes outside every section."""
        return self.total - sum(self.sections.values())

    def split(self) -> dict[str, int]:
        s = self.sections
        return {
            "key_list": s.get("KEYS", 0),
            "per_block_bloom": s.get("BLOOM", 0) + s.get("RANGE", 0),
            "cumulative": s.get("CUMULATIVE", 0) + s.get("DIRECTORY", 0),
            "column_stats": s.get("COLUMN_STATS", 0),
            "checksum": s.get("CHECKSUM", 0),
            "table_and_tail": self.overhead,
        }


def index_bytes(path: str) -> IndexBytes:
    """Walk a log file's blocks and add up their index trailers (kind of cumulative part)."""
    out = IndexBytes()
    with LogFileReader(path) as reader:
        for block in reader.blocks():
            if block.block_type not in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
                continue
            out.blocks += 1
            stored = read_stored_index(reader.source, block.offset, block.size,
                                       block.block_type)
            if stored is None:
                continue
            out.indexed_blocks += 1
            out.total += stored.length
            for name, n in stored.section_sizes().items():
                out.sections[name] = out.sections.get(name, 0) + n
            cum = stored.cumulative()
            if cum is not None:
                if cum.kind == CumulativeKind.FULL:
                    out.full_checkpoints += 1
                else:
                    out.delta_blocks += 1
    return out


# --- timing ---------------------------------------------------------------------------------


def best_of(repeats: int, run: Callable[[], T], setup: Callable[[], None] | None = None
            ) -> tuple[float, T]:
    """Best wall time of ``repeats`` calls of ``run`` (``setup`` before each, untimed), and
    the result of the fastest call."""
    best = math.inf
    results: list[T] = []
    for _ in range(max(1, repeats)):
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        r = run()
        dt = time.perf_counter() - t0
        if dt < best or not results:
            best = dt
            results = [r]
    return best, results[0]


def rate(n: int, seconds: float) -> float:
    return num(n / seconds) if seconds > 0 else 0.0


def ratio(a: float, b: float) -> float:
    return num(a / b) if b else 0.0


def num(x: float, digits: int = 6) -> float:
    """``x`` rounded to ``digits`` significant digits (JSON stays readable, goals exact)."""
    if x == 0 or not math.isfinite(x):
        return 0.0
    return float(f"{x:.{digits}g}")


def progress(msg: str) -> None:
    print(f"morlog bench: {msg}", file=sys.stderr, flush=True)


# --- the report -----------------------------------------------------------------------------


#: how a goal's value compares with its target
GOAL_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": lambda v, t: v >= t, "<=": lambda v, t: v <= t,
    ">": lambda v, t: v > t, "<": lambda v, t: v < t}


def goal(value: float, target: float, op: str) -> dict[str, Any]:
    if op not in GOAL_OPS:
        raise ValueError(f"goal op must be one of {', '.join(GOAL_OPS)}, not {op!r}")
    v = num(float(value))
    return {"value": v, "target": target, "op": op, "met": bool(GOAL_OPS[op](v, target))}


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git_revision() -> str | None:
    """``git describe --always --dirty`` of the source tree morlog runs from, if any."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        r = subprocess.run(["git", "-C", here, "describe", "--always", "--dirty"],
                           capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() or None if r.returncode == 0 else None


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "cpu_count": os.cpu_count(),
        "morlog": _version("morlog"),
        "morlog_git": _git_revision(),
        "numpy": _version("numpy"),
        "pyarrow": _version("pyarrow"),
        "fastavro": _version("fastavro"),
        "pybloom_live": _version("pybloom-live"),
        "matplotlib": _version("matplotlib"),
    }


def make_report(scenario: str, params: dict[str, Any], results: dict[str, Any],
                ratios: dict[str, Any], goals: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"scenario": scenario, "machine": machine(), "params": params, "results": results,
            "ratios": ratios, "goals": goals}


Plotter = Callable[[Any, dict[str, Any]], Any]


def _pyplot() -> Any | None:
    try:
        mpl = importlib.import_module("matplotlib")
    except ImportError:
        return None
    mpl.use("Agg")
    return importlib.import_module("matplotlib.pyplot")


def write_outputs(report: dict[str, Any], out_dir: str, plot: Plotter) -> list[str]:
    """``out_dir/<scenario>.json`` and, with matplotlib, ``out_dir/<scenario>.png``."""
    os.makedirs(out_dir, exist_ok=True)
    name = report["scenario"]
    written = []
    path = os.path.join(out_dir, f"{name}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2, allow_nan=False)
        f.write("\n")
    written.append(path)
    png = os.path.join(out_dir, f"{name}.png")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a plotting library's deprecations are not ours
        plt = _pyplot()
        if plt is None:
            print(f"morlog bench: warning: matplotlib is not installed; {png} not written "
                  f"({BENCH_EXTRA})", file=sys.stderr)
            return written
        fig = plot(plt, report)
        try:
            fig.tight_layout()
            fig.savefig(png, dpi=110)
        finally:
            plt.close(fig)
    written.append(png)
    return written


def bar(ax: Any, labels: Sequence[str], values: Sequence[float], title: str, ylabel: str,
        *, log: bool = False, fmt: str = "{:,.0f}") -> None:
    """One labelled bar chart on ``ax``."""
    bars = ax.bar(list(labels), list(values), color=["#4878a8", "#e0a040", "#6aa86a",
                                                      "#b05050", "#8060a0"][: len(labels)])
    for b, v in zip(bars, values, strict=True):
        ax.annotate(fmt.format(v), (b.get_x() + b.get_width() / 2, b.get_height()),
                    ha="center", va="bottom", fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.tick_params(axis="x", labelsize=8)


def plot_goals(plt: Any, report: dict[str, Any]) -> Any:
    """Each goal's value against its target (value / target, or target / value for <=)."""
    goals = report["goals"]
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(goals) + 1.5))
    names = list(goals)
    scores = []
    for n in names:
        g = goals[n]
        v, t = float(g["value"]), float(g["target"])
        if g["op"] in (">=", ">"):
            s = v / t if t else (10.0 if g["met"] else 0.0)
        else:
            s = t / v if v else (10.0 if g["met"] else 0.0)
        scores.append(s)
    colors = ["#6aa86a" if goals[n]["met"] else "#b05050" for n in names]
    scores = [min(max(x, 1e-3), 1e3) for x in scores]
    ax.barh(names, scores, color=colors)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_xscale("log")
    for i, n in enumerate(names):
        g = goals[n]
        ax.annotate(f"{g['value']:.4g} {g['op']} {g['target']:.4g}", (scores[i], i),
                    va="center", fontsize=8, xytext=(3, 0), textcoords="offset points")
    ax.set_xlabel("goal score: value / target (>=, >), target / value (<=, <); >= 1 is "
                  "met (10: a met goal whose target or value is 0)")
    ax.set_title(f"morlog bench {report['scenario']}: goals", fontsize=10)
    return fig


# --- text output ----------------------------------------------------------------------------


def _fmt(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
    return str(v)


def _walk(d: dict[str, Any], indent: int, out: TextIO) -> None:
    for k, v in d.items():
        if isinstance(v, dict):
            print(f"{' ' * indent}{k}:", file=out)
            _walk(v, indent + 2, out)
        else:
            print(f"{' ' * indent}{k:<40} {_fmt(v)}", file=out)


def print_summary(report: dict[str, Any], written: Sequence[str], out: TextIO) -> None:
    print(f"morlog bench {report['scenario']}", file=out)
    for part in ("params", "results", "ratios"):
        print(f"{part}:", file=out)
        _walk(report[part], 2, out)
    print("goals:", file=out)
    for name, g in report["goals"].items():
        mark = "MET   " if g["met"] else "MISSED"
        print(f"  [{mark}] {name}: {_fmt(g['value'])} (target {g['op']} {_fmt(g['target'])})",
              file=out)
    if written:
        print("wrote " + ", ".join(written), file=out)
