"""``morlog bench append``: the cost of writing indexed blocks, in time and bytes.

50 blocks of 2,000 records (about 200 bytes each, UUID keys) are appended to one file slice
(one log file, append mode, fsync off) as indexed Avro data blocks and, for comparison, as
plain version-3 Avro data blocks of the same records: the time ratio, the data bytes, and the
index bytes as a share of the data bytes, split into the key lists (KEYS), the per-block
filters (BLOOM + RANGE), the cumulative part (CUMULATIVE + DIRECTORY) and the section tables.

The same slice is written once per checkpoint policy (``checkpoint_every`` in 1, 4, 8, 16,
everything else at the writer's defaults): write time, index share and what a lookup reads
with each, so the spec can justify the default. Note that the writer also starts a full
checkpoint once ``delta_max_keys`` keys piled up since the last one, which caps long delta
runs: the number of full checkpoints actually written is reported.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import pyarrow as pa

from morlog.readers.probe import ProbeResult, SliceProbe
from morlog.writers.core.indexed import DEFAULT_CHECKPOINT_EVERY, DEFAULT_DELTA_MAX_KEYS
from morlog.writers.core.logwriter import WriteResult

from .common import (
    SliceData,
    bar,
    best_of,
    encoded_record_bytes,
    goal,
    index_bytes,
    make_keys,
    make_report,
    make_rng,
    make_slice,
    num,
    progress,
    rate,
    ratio,
    single_file,
    write_indexed,
    write_plain,
)
from .lookup import check_answers


@dataclass(frozen=True)
class AppendSizes:
    blocks: int = 50
    records_per_block: int = 2_000
    policies: tuple[int, ...] = (1, 4, 8, 16)
    policy_probe_keys: int = 1_000


FULL = AppendSizes()
QUICK = AppendSizes(25, 200, (1, 4, 8, 16), 200)


class _Runs:
    """A fresh directory for every timed write; only the latest one is kept on disk."""

    def __init__(self, root: str, label: str) -> None:
        self.root = root
        self.label = label
        self.n = 0
        self.current = ""

    def next(self) -> None:
        if self.current:
            shutil.rmtree(self.current, ignore_errors=True)
        self.n += 1
        self.current = os.path.join(self.root, f"{self.label}-{self.n}")

    @property
    def path(self) -> str:
        return self.current


def _timed_write(root: str, label: str, repeats: int, write: Callable[[str], list[WriteResult]]
                 ) -> tuple[float, str, str, list[int]]:
    """Best time of ``write`` into fresh directories; the kept directory, file, offsets."""
    runs = _Runs(root, label)
    seconds, results = best_of(repeats, lambda: write(runs.path), runs.next)
    file, offsets = single_file(results)
    return seconds, runs.path, file, offsets


def _indexed(data: SliceData, every: int) -> Callable[[str], list[WriteResult]]:
    return lambda d: write_indexed(d, data, checkpoint_every=every)


def run(*, quick: bool = False, repeats: int = 3) -> dict[str, Any]:
    s = QUICK if quick else FULL
    rng = make_rng(3)
    progress(f"append: generating {s.blocks} blocks x {s.records_per_block:,} records")
    data = make_slice(s.blocks, s.records_per_block, rng)
    n_present = s.policy_probe_keys // 2
    present = rng.sample(data.keys, n_present)
    absent = make_keys(s.policy_probe_keys - n_present, rng)
    probe_keys = pa.array(present + absent, type=pa.string())
    policies = tuple(dict.fromkeys((*s.policies, DEFAULT_CHECKPOINT_EVERY)))

    with tempfile.TemporaryDirectory(prefix="morlog-bench-append-") as tmp:
        progress("append: plain blocks")
        plain_s, plain_dir, plain_file, _ = _timed_write(tmp, "plain", repeats,
                                                         lambda d: write_plain(d, data))
        plain_bytes = os.path.getsize(os.path.join(plain_dir, plain_file))
        per_policy: dict[str, dict[str, Any]] = {}
        for every in policies:
            progress(f"append: indexed blocks, checkpoint_every={every}")
            idx_s, idx_dir, idx_file, offsets = _timed_write(tmp, f"indexed-{every}", repeats,
                                                             _indexed(data, every))
            path = os.path.join(idx_dir, idx_file)
            ib = index_bytes(path)
            with SliceProbe(idx_dir, [idx_file]) as p:
                t0 = time.perf_counter()
                res: ProbeResult = p.probe(probe_keys)
                probe_s = time.perf_counter() - t0
            check_answers(res, f"checkpoint_every={every}", present, absent, data, idx_file,
                          offsets)
            split = ib.split()
            per_policy[str(every)] = {
                "write_seconds": num(idx_s),
                "indexed_over_plain_time": ratio(idx_s, plain_s),
                "log_bytes": os.path.getsize(path),
                "index_bytes": ib.total,
                "index_share_of_data": ratio(ib.total, plain_bytes),
                "index_split": split,
                "index_sections": dict(sorted(ib.sections.items())),
                "full_checkpoints": ib.full_checkpoints,
                "delta_blocks": ib.delta_blocks,
                "tail_cumulative": (res.cumulative.kind.name if res.cumulative is not None
                                    else None),
                "probe_reads": res.probe_reads,
                "probe_bytes": res.probe_bytes,
                "lookup_reads": res.reads,
                "lookup_bytes_read": res.bytes_read,
                "lookup_seconds": num(probe_s),
            }

    main = per_policy[str(DEFAULT_CHECKPOINT_EVERY)]
    idx_total = max(1, main["index_bytes"])
    results: dict[str, Any] = {
        "records": data.records,
        "record_bytes_avg": num(encoded_record_bytes(data.blocks[0][:200])),
        "plain": {
            "seconds": num(plain_s),
            "records_per_s": rate(data.records, plain_s),
            "data_bytes": plain_bytes,
        },
        "indexed": {
            "checkpoint_every": DEFAULT_CHECKPOINT_EVERY,
            "seconds": main["write_seconds"],
            "records_per_s": rate(data.records, main["write_seconds"]),
            "log_bytes": main["log_bytes"],
            "index_bytes": main["index_bytes"],
            "index_split": main["index_split"],
            "index_sections": main["index_sections"],
            "full_checkpoints": main["full_checkpoints"],
            "delta_blocks": main["delta_blocks"],
        },
        "policies": {k: v for k, v in per_policy.items() if int(k) in s.policies},
    }
    split = main["index_split"]
    ratios = {
        "indexed_over_plain_time": main["indexed_over_plain_time"],
        "index_share_of_data": main["index_share_of_data"],
        "indexed_log_over_plain_log": ratio(main["log_bytes"], plain_bytes),
        "key_list_share_of_index": ratio(split["key_list"], idx_total),
        "per_block_bloom_share_of_index": ratio(split["per_block_bloom"], idx_total),
        "cumulative_share_of_index": ratio(split["cumulative"], idx_total),
        "column_stats_share_of_index": ratio(split["column_stats"], idx_total),
        "checksum_share_of_index": ratio(split["checksum"], idx_total),
        "table_and_tail_share_of_index": ratio(split["table_and_tail"], idx_total),
    }
    goals = {
        "indexed_over_plain_time": goal(ratios["indexed_over_plain_time"], 1.3, "<="),
        "index_share_of_data": goal(ratios["index_share_of_data"], 0.20, "<="),
    }
    params: dict[str, Any] = {
        **asdict(s),
        "key_kind": "UUID4 strings (36 bytes), seeded RNG",
        "writer": "append mode, one log file, one block per append, fsync off for both",
        "index": f"IndexedLogWriter defaults (fpp 0.01, checkpoint_every "
                 f"{DEFAULT_CHECKPOINT_EVERY}, delta_max_keys {DEFAULT_DELTA_MAX_KEYS})",
        "data_bytes": "size of the plain log file (the same records without index)",
        "policy_probe": f"one SliceProbe.probe of {s.policy_probe_keys:,} keys (half present) "
                        "per policy, timed once",
        "repeats": repeats,
        "quick": quick,
    }
    return make_report("append", params, results, ratios, goals)


def plot(plt: Any, report: dict[str, Any]) -> Any:
    r = report["results"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.4))
    bar(axes[0], ["plain", "indexed"], [r["plain"]["seconds"], r["indexed"]["seconds"]],
        f"writing {r['records']:,} records", "seconds", fmt="{:.2f}")
    split = r["indexed"]["index_split"]
    data = r["plain"]["data_bytes"]
    bar(axes[1], ["key list", "per-block\nbloom", "cumulative", "column\nstats", "tables"],
        [100 * split[k] / data for k in ("key_list", "per_block_bloom", "cumulative",
                                         "column_stats", "table_and_tail")],
        "index bytes, % of data bytes", "%", fmt="{:.2f}")
    pol = r["policies"]
    names = list(pol)
    x = list(range(len(names)))
    ax = axes[2]
    b1 = ax.bar([i - 0.2 for i in x], [100 * pol[n]["index_share_of_data"] for n in names],
                width=0.4, color="#4878a8", label="index % of data")
    ax.set_xticks(x, [f"every {n}" for n in names])
    ax.set_ylabel("index % of data")
    ax2 = ax.twinx()
    b2 = ax2.bar([i + 0.2 for i in x], [pol[n]["probe_reads"] for n in names], width=0.4,
                 color="#e0a040", label="probe reads")
    ax2.set_ylabel("probe reads")
    ax2.set_ylim(0, max(3, max(pol[n]["probe_reads"] for n in names) + 1))
    ax.set_title("checkpoint_every", fontsize=10)
    ax.legend(handles=[b1, b2], loc="upper right", fontsize=8)
    fig.suptitle(f"morlog bench append: {report['params']['blocks']} blocks x "
                 f"{report['params']['records_per_block']:,} records", fontsize=11)
    return fig
