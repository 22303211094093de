"""``morlog bench probe``: membership-test throughput of the filters.

1M UUID keys, half of them present, are tested against a filter built from the present half at
1 % false-positive rate:

- morlog's split-block bloom filter (``SplitBlockBloom.check`` on an Arrow array, hashing
  included; the hashing share is reported separately),
- pybloom-live at the same rate (``k in bf`` over a Python list; it is slow, so a sample of
  the same mix is timed and its keys/s extrapolated),
- Hudi's DYNAMIC_V0 filter with Hudi's defaults (60,000 entries a row, 1e-9, at most
  100,000 entries: two rows at most), built from 60,000 present keys and tested with those
  keys and, separately, with 1M absent keys (the common case of an index lookup); and,
  with the same defaults, built from 1M keys (a real-sized base file: two rows, then the
  bounded round-robin mode for every key past 120,000).

Measured false-positive rates come from the absent keys of each test.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from morlog.logformat import hudi_bloom
from morlog.logformat.hudi_bloom import DynamicBloomV0
from morlog.logformat.keybatch import KeyBatch
from morlog.logformat.sbbf import SplitBlockBloom
from morlog.logformat.xxh64 import xxh64_batch

from .common import (
    BenchError,
    bar,
    best_of,
    goal,
    make_keys,
    make_report,
    make_rng,
    num,
    progress,
    rate,
    ratio,
    require,
)

HUDI_NUM_ENTRIES = hudi_bloom.DEFAULT_NUM_ENTRIES
HUDI_FPP = hudi_bloom.DEFAULT_FPP
HUDI_MAX_ENTRIES = hudi_bloom.DEFAULT_MAX_ENTRIES


@dataclass(frozen=True)
class ProbeSizes:
    probe_keys: int = 1_000_000
    fpp: float = 0.01
    pybloom_sample_keys: int = 100_000
    hudi_present_keys: int = HUDI_NUM_ENTRIES
    hudi_absent_keys: int = 1_000_000
    hudi_build_keys: int = 1_000_000


FULL = ProbeSizes()
QUICK = ProbeSizes(50_000, 0.01, 5_000, 3_000, 50_000, 130_000)


def run(*, quick: bool = False, repeats: int = 3) -> dict[str, Any]:
    s = QUICK if quick else FULL
    bloom_filter = require("pybloom_live", "probe", "pybloom-live").BloomFilter  # fail first
    rng = make_rng(1)
    half = s.probe_keys // 2
    progress(f"probe: generating {s.probe_keys:,} keys")
    present = make_keys(half, rng)
    absent = make_keys(s.probe_keys - half, rng)
    pool = present + absent
    order = list(range(len(pool)))
    rng.shuffle(order)
    mixed = [pool[i] for i in order]
    is_present = np.array([i < half for i in order], dtype=bool)
    probe_arr = pa.array(mixed, type=pa.string())
    present_arr = pa.array(present, type=pa.string())

    # --- morlog SBBF ---------------------------------------------------------------------
    progress("probe: split-block bloom filter")
    sbbf_build_s, sbbf = best_of(repeats, lambda: SplitBlockBloom.for_keys(present_arr, s.fpp))
    sbbf_check_s, sbbf_hits = best_of(repeats, lambda: sbbf.check(probe_arr))
    hash_s, hashes = best_of(repeats, lambda: xxh64_batch(KeyBatch.of(probe_arr)))
    check_h_s, _ = best_of(repeats, lambda: sbbf.check_hashes(hashes))
    if not sbbf_hits[is_present].all():
        raise BenchError("split-block bloom filter missed a key it holds")
    sbbf_fpp = float(sbbf_hits[~is_present].mean()) if (~is_present).any() else 0.0

    # --- pybloom-live ----------------------------------------------------------------------
    progress("probe: pybloom-live")

    def build_pybloom() -> Any:
        bf = bloom_filter(capacity=half, error_rate=s.fpp)
        for k in present:
            bf.add(k)
        return bf

    py_build_s, bf = best_of(repeats, build_pybloom)
    sample = mixed[: s.pybloom_sample_keys]
    sample_present = is_present[: len(sample)]
    py_check_s, py_hits_list = best_of(repeats, lambda: [k in bf for k in sample])
    py_hits = np.array(py_hits_list, dtype=bool)
    if not py_hits[sample_present].all():
        raise BenchError("pybloom-live missed a key it holds")
    py_fpp = float(py_hits[~sample_present].mean()) if (~sample_present).any() else 0.0
    py_rate = rate(len(sample), py_check_s)

    # --- Hudi DYNAMIC_V0 (Hudi's defaults) -----------------------------------------------
    progress("probe: Hudi DYNAMIC_V0")
    hudi_present = present[: s.hudi_present_keys]
    hudi_absent = present[s.hudi_present_keys :] + absent
    if len(hudi_absent) < s.hudi_absent_keys:
        hudi_absent += make_keys(s.hudi_absent_keys - len(hudi_absent), rng)
    hudi_absent = hudi_absent[: s.hudi_absent_keys]
    hp_arr = pa.array(hudi_present, type=pa.string())
    ha_arr = pa.array(hudi_absent, type=pa.string())

    def build_hudi() -> DynamicBloomV0:
        d = DynamicBloomV0(HUDI_NUM_ENTRIES, HUDI_FPP, HUDI_MAX_ENTRIES)
        d.add(hp_arr)
        return d

    hudi_build_s, hudi = best_of(repeats, build_hudi)
    hudi_present_s, hudi_p_hits = best_of(repeats, lambda: hudi.contains(hp_arr))
    hudi_absent_s, hudi_a_hits = best_of(repeats, lambda: hudi.contains(ha_arr))
    if not hudi_p_hits.all():
        raise BenchError("Hudi DYNAMIC_V0 filter missed a key it holds")
    hudi_fpp = float(hudi_a_hits.mean()) if len(hudi_a_hits) else 0.0
    hudi_absent_rate = rate(len(hudi_absent), hudi_absent_s)

    build_keys = pool[: s.hudi_build_keys]
    if len(build_keys) < s.hudi_build_keys:
        build_keys = build_keys + make_keys(s.hudi_build_keys - len(build_keys), rng)
    hb_arr = pa.array(build_keys, type=pa.string())

    def build_hudi_big() -> DynamicBloomV0:
        d = DynamicBloomV0(HUDI_NUM_ENTRIES, HUDI_FPP, HUDI_MAX_ENTRIES)
        d.add(hb_arr)
        return d

    hudi_big_s, hudi_big = best_of(repeats, build_hudi_big)
    if not hudi_big.contains(hb_arr.slice(0, min(len(hb_arr), 50_000))).all():
        raise BenchError("Hudi DYNAMIC_V0 filter built from many keys missed one of them")
    hudi_build_rate = rate(len(build_keys), hudi_big_s)

    sbbf_rate = rate(s.probe_keys, sbbf_check_s)
    results: dict[str, Any] = {
        "sbbf": {
            "build_seconds": num(sbbf_build_s),
            "check_seconds": num(sbbf_check_s),
            "keys_per_s": sbbf_rate,
            "hash_seconds": num(hash_s),
            "check_hashes_seconds": num(check_h_s),
            "check_hashes_keys_per_s": rate(s.probe_keys, check_h_s),
            "hashing_share_of_check": ratio(hash_s, sbbf_check_s),
            "bytes": sbbf.nbytes,
            "measured_fpp": num(sbbf_fpp),
        },
        "pybloom": {
            "build_seconds": num(py_build_s),
            "sample_keys": len(sample),
            "sample_check_seconds": num(py_check_s),
            "keys_per_s": py_rate,
            "extrapolated_check_seconds": num(s.probe_keys / py_rate) if py_rate else 0.0,
            "bytes": int(bf.num_bits) // 8,
            "measured_fpp": num(py_fpp),
        },
        "hudi_dynamic_v0": {
            "rows": len(hudi.rows),
            "num_hashes": hudi.rows[0].num_hashes,
            "bytes": sum(int(r.bits.nbytes) for r in hudi.rows),
            "build_seconds": num(hudi_build_s),
            "present_keys": len(hudi_present),
            "present_check_seconds": num(hudi_present_s),
            "present_keys_per_s": rate(len(hudi_present), hudi_present_s),
            "absent_keys": len(hudi_absent),
            "absent_check_seconds": num(hudi_absent_s),
            "absent_keys_per_s": hudi_absent_rate,
            "measured_fpp": num(hudi_fpp),
            "big_build_keys": len(build_keys),
            "big_build_seconds": num(hudi_big_s),
            "big_build_keys_per_s": hudi_build_rate,
            "big_build_rows": len(hudi_big.rows),
            "big_build_bounded": hudi_big.bounded,
        },
    }
    ratios = {
        "sbbf_vs_pybloom_speedup": ratio(sbbf_rate, py_rate),
        "sbbf_vs_hudi_dynamic_absent_speedup": ratio(sbbf_rate, hudi_absent_rate),
        "sbbf_bytes_over_pybloom_bytes": ratio(sbbf.nbytes, results["pybloom"]["bytes"]),
        "sbbf_fpp_over_target": ratio(sbbf_fpp, s.fpp),
        "pybloom_fpp_over_target": ratio(py_fpp, s.fpp),
    }
    goals = {
        "sbbf_vs_pybloom_speedup": goal(ratios["sbbf_vs_pybloom_speedup"], 10, ">="),
        "hudi_dynamic_absent_keys_per_s": goal(hudi_absent_rate, 1_000_000, ">="),
        "hudi_dynamic_build_keys_per_s": goal(hudi_build_rate, 1_000_000, ">="),
    }
    params: dict[str, Any] = {
        **asdict(s),
        "present_keys": half,
        "absent_keys": s.probe_keys - half,
        "key_kind": "UUID4 strings (36 bytes), seeded RNG",
        "sbbf_timing": "SplitBlockBloom.check on one Arrow string array, XXH64 hashing included",
        "pybloom_timing": (f"'k in bf' over a Python list of a {len(sample):,}-key sample of "
                           "the same mix; keys/s extrapolated to the whole probe"),
        "pybloom_capacity": half,
        "hudi_num_entries": HUDI_NUM_ENTRIES,
        "hudi_fpp": HUDI_FPP,
        "hudi_max_entries": HUDI_MAX_ENTRIES,
        "hudi_timing": ("DynamicBloomV0.contains on Arrow arrays: the present keys, then "
                        "absent keys separately"),
        "hudi_build_timing": ("DynamicBloomV0.add of one Arrow string array of "
                              "hudi_build_keys keys into an empty filter (Hudi's defaults)"),
        "repeats": repeats,
        "quick": quick,
    }
    return make_report("probe", params, results, ratios, goals)


def plot(plt: Any, report: dict[str, Any]) -> Any:
    r = report["results"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    bar(axes[0], ["SBBF", "pybloom-live", "Hudi V0\nabsent", "Hudi V0\npresent"],
        [r["sbbf"]["keys_per_s"], r["pybloom"]["keys_per_s"],
         r["hudi_dynamic_v0"]["absent_keys_per_s"], r["hudi_dynamic_v0"]["present_keys_per_s"]],
        "membership tests per second", "keys/s", log=True)
    target = report["params"]["fpp"]
    bar(axes[1], ["SBBF", "pybloom-live", "Hudi V0"],
        [r["sbbf"]["measured_fpp"] * 100, r["pybloom"]["measured_fpp"] * 100,
         r["hudi_dynamic_v0"]["measured_fpp"] * 100],
        f"measured false-positive rate (target {target:.0%}; Hudi 1e-9)", "%", fmt="{:.3f}")
    axes[1].axhline(target * 100, color="black", linewidth=1, linestyle="--")
    bar(axes[2], ["SBBF", "pybloom-live", "Hudi V0"],
        [r["sbbf"]["bytes"] / 1024, r["pybloom"]["bytes"] / 1024,
         r["hudi_dynamic_v0"]["bytes"] / 1024],
        "filter size", "KiB")
    fig.suptitle(f"morlog bench probe: {report['params']['probe_keys']:,} keys, "
                 f"{report['params']['present_keys']:,} in the filter", fontsize=11)
    return fig
