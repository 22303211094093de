"""``morlog bench lookup``: key lookups in one file slice, indexed vs compatibility path.

One file slice of 50 blocks x 2,000 records (about 200 bytes each, UUID keys) is written twice
into one log file each (append mode): once with :class:`IndexedLogWriter`, once as plain
version-3 Avro data blocks, which is what Hudi writes and what :class:`SliceProbe` answers by
its compatibility path (every block's keys recomputed). 100,000 lookup keys, half drawn from
the slice and half absent, are probed against each with a fresh :class:`SliceProbe` per
repeat (no caching across repeats; the OS page cache is warm, files are local).

Every answer is checked: a present key confirmed in exactly the block that holds it, an
absent key in none. A failed check stops the benchmark (its numbers would mean nothing).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import asdict, dataclass
from typing import Any

import pyarrow as pa

from morlog.readers.probe import BlockId, ProbeResult, SliceProbe
from morlog.readers.storage import REMOTE_COALESCE_GAP, LocalFileSource

from .common import (
    BenchError,
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


@dataclass(frozen=True)
class LookupSizes:
    blocks: int = 50
    records_per_block: int = 2_000
    lookup_keys: int = 100_000


FULL = LookupSizes()
QUICK = LookupSizes(25, 200, 5_000)


def _probe(directory: str, file: str, keys: pa.Array, coalesce_gap: int = 0) -> ProbeResult:
    """A fresh probe; ``coalesce_gap`` > 0 reads as on an object store (nearby index parts
    fetched together, morlog.readers.cache)."""
    def opener(name: str) -> LocalFileSource:
        src = LocalFileSource(os.path.join(directory, name))
        src.coalesce_gap = coalesce_gap
        return src

    with SliceProbe(directory, [file], opener=opener) as p:
        return p.probe(keys)


def check_answers(res: ProbeResult, label: str, present: list[str], absent: list[str],
                  data: SliceData, file: str, offsets: list[int]) -> dict[str, int]:
    """Raise :class:`BenchError` unless every answer is exact."""
    hits = res.hits
    for k in present:
        h = hits.get(k)
        want = [BlockId(file, offsets[data.block_of[k]])]
        if h is None or h.confirmed != want:
            got = None if h is None else h.confirmed
            raise BenchError(f"{label} lookup: present key {k} confirmed in {got}, "
                             f"expected {want}")
    for k in absent:
        h = hits.get(k)
        if h is None:
            raise BenchError(f"{label} lookup: no answer for absent key {k}")
        if h.confirmed:
            raise BenchError(f"{label} lookup: absent key {k} confirmed in {h.confirmed}")
    return {"present_keys_confirmed": len(present), "absent_keys_confirmed": 0}


def _probe_numbers(seconds: float, nkeys: int, res: ProbeResult) -> dict[str, Any]:
    return {
        "seconds": num(seconds),
        "keys_per_s": rate(nkeys, seconds),
        "stored_index_used": res.stored,
        "tail_cumulative": res.cumulative.kind.name if res.cumulative is not None else None,
        "reads": res.reads,
        "bytes_read": res.bytes_read,
        "probe_reads": res.probe_reads,
        "probe_bytes": res.probe_bytes,
    }


def run(*, quick: bool = False, repeats: int = 3) -> dict[str, Any]:
    s = QUICK if quick else FULL
    rng = make_rng(2)
    progress(f"lookup: generating {s.blocks} blocks x {s.records_per_block:,} records")
    data = make_slice(s.blocks, s.records_per_block, rng)
    n_present = s.lookup_keys // 2
    present = rng.sample(data.keys, n_present)
    absent = make_keys(s.lookup_keys - n_present, rng)
    mixed = present + absent
    rng.shuffle(mixed)
    keys = pa.array(mixed, type=pa.string())
    one = pa.array([present[0]], type=pa.string())
    none = pa.array([absent[0]], type=pa.string())

    with tempfile.TemporaryDirectory(prefix="morlog-bench-lookup-") as tmp:
        idx_dir, plain_dir = os.path.join(tmp, "indexed"), os.path.join(tmp, "plain")
        progress("lookup: writing the slice (indexed and plain)")
        idx_file, idx_offsets = single_file(write_indexed(idx_dir, data))
        plain_file, plain_offsets = single_file(write_plain(plain_dir, data))
        idx_size = os.path.getsize(os.path.join(idx_dir, idx_file))
        plain_size = os.path.getsize(os.path.join(plain_dir, plain_file))
        ib = index_bytes(os.path.join(idx_dir, idx_file))

        progress(f"lookup: probing {s.lookup_keys:,} keys, indexed")
        idx_s, idx_res = best_of(repeats, lambda: _probe(idx_dir, idx_file, keys))
        progress(f"lookup: probing {s.lookup_keys:,} keys, compatibility path")
        compat_s, compat_res = best_of(repeats, lambda: _probe(plain_dir, plain_file, keys))
        one_idx_s, one_idx = best_of(repeats, lambda: _probe(idx_dir, idx_file, one))
        one_compat_s, one_compat = best_of(repeats, lambda: _probe(plain_dir, plain_file, one))
        none_idx_s, none_idx = best_of(repeats, lambda: _probe(idx_dir, idx_file, none))
        remote_one = _probe(idx_dir, idx_file, one, REMOTE_COALESCE_GAP)
        remote_all = _probe(idx_dir, idx_file, keys, REMOTE_COALESCE_GAP)

    if not idx_res.stored:
        raise BenchError("indexed lookup did not use the stored index")
    if compat_res.stored:
        raise BenchError("plain-block lookup used a stored index")
    idx_check = check_answers(idx_res, "indexed", present, absent, data, idx_file, idx_offsets)
    compat_check = check_answers(compat_res, "compat", present, absent, data, plain_file,
                                 plain_offsets)
    for res, label, file, offsets in ((one_idx, "indexed", idx_file, idx_offsets),
                                      (one_compat, "compat", plain_file, plain_offsets)):
        check_answers(res, f"single-key {label}", [present[0]], [], data, file, offsets)
    check_answers(none_idx, "single absent key indexed", [], [absent[0]], data, idx_file,
                  idx_offsets)
    check_answers(remote_one, "single-key object store", [present[0]], [], data, idx_file,
                  idx_offsets)
    check_answers(remote_all, "object store", present, absent, data, idx_file, idx_offsets)

    indexed = _probe_numbers(idx_s, s.lookup_keys, idx_res)
    indexed["answers"] = idx_check
    compat = _probe_numbers(compat_s, s.lookup_keys, compat_res)
    compat["answers"] = compat_check
    results: dict[str, Any] = {
        "slice": {
            "records": data.records,
            "blocks": s.blocks,
            "record_bytes_avg": num(encoded_record_bytes(data.blocks[0][:200])),
            "indexed_log_bytes": idx_size,
            "plain_log_bytes": plain_size,
            "index_bytes": ib.total,
            "index_sections": dict(sorted(ib.sections.items())),
            "index_split": ib.split(),
            "full_checkpoints": ib.full_checkpoints,
            "delta_blocks": ib.delta_blocks,
        },
        "indexed": indexed,
        "compat": compat,
        "single_key": {
            "indexed": _probe_numbers(one_idx_s, 1, one_idx),
            "compat": _probe_numbers(one_compat_s, 1, one_compat),
            "indexed_absent_key": _probe_numbers(none_idx_s, 1, none_idx),
        },
        # reads as on an object store: nearby index parts coalesced (gap up to 1 MiB); the
        # ranged-read counts are what an object store would be sent (timing is local)
        "object_store_reads": {
            "single_key": {"reads": remote_one.reads, "bytes_read": remote_one.bytes_read},
            "batch": {"reads": remote_all.reads, "bytes_read": remote_all.bytes_read},
        },
    }
    ratios = {
        "indexed_vs_compat_speedup": ratio(compat_s, idx_s),
        "single_key_indexed_vs_compat_speedup": ratio(one_compat_s, one_idx_s),
        "bytes_read_over_index_bytes": ratio(idx_res.bytes_read, ib.total),
        "indexed_bytes_read_over_compat": ratio(idx_res.bytes_read, compat_res.bytes_read),
        "single_key_bytes_read_over_index_bytes": ratio(one_idx.bytes_read, ib.total),
        "single_key_object_store_reads_over_local": ratio(remote_one.reads, one_idx.reads),
    }
    goals = {
        "indexed_vs_compat_speedup": goal(ratios["indexed_vs_compat_speedup"], 20, ">="),
        "probe_reads": goal(idx_res.probe_reads, 2, "<="),
        "bytes_read_over_index_bytes": goal(ratios["bytes_read_over_index_bytes"], 1.5, "<="),
    }
    params: dict[str, Any] = {
        **asdict(s),
        "present_lookup_keys": n_present,
        "absent_lookup_keys": s.lookup_keys - n_present,
        "key_kind": "UUID4 strings (36 bytes), seeded RNG",
        "writer": "append mode, one log file per slice, fsync off",
        "index": "IndexedLogWriter defaults (fpp 0.01, checkpoint_every 8, "
                 "delta_max_keys 16384)",
        "timing": "SliceProbe(...).probe(keys) on one Arrow array, fresh SliceProbe per "
                  "repeat, local files, warm OS page cache",
        "repeats": repeats,
        "quick": quick,
    }
    return make_report("lookup", params, results, ratios, goals)


def plot(plt: Any, report: dict[str, Any]) -> Any:
    r = report["results"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    bar(axes[0], ["indexed", "compat"],
        [r["indexed"]["keys_per_s"], r["compat"]["keys_per_s"]],
        f"{report['params']['lookup_keys']:,}-key lookup", "keys/s")
    bar(axes[1], ["indexed\nread", "indexed\nprobe", "compat\nread", "index\nbytes"],
        [r["indexed"]["bytes_read"] / 1024, r["indexed"]["probe_bytes"] / 1024,
         r["compat"]["bytes_read"] / 1024, r["slice"]["index_bytes"] / 1024],
        "bytes read vs index bytes of the slice", "KiB", log=True)
    bar(axes[2], ["indexed", "compat"],
        [r["single_key"]["indexed"]["seconds"] * 1000,
         r["single_key"]["compat"]["seconds"] * 1000],
        "one-key lookup", "ms", fmt="{:.2f}")
    fig.suptitle(f"morlog bench lookup: {r['slice']['blocks']} blocks, "
                 f"{r['slice']['records']:,} records", fontsize=11)
    return fig
