"""``morlog bench``: every scenario runs (quick sizes) and reports the issue's JSON shape.

``morlog bench all --quick`` runs once for the module (:func:`quick_all`): it runs every
scenario as ``morlog bench SCENARIO --quick`` does (the same runner, sizes and one repeat)
and writes each scenario's report to ``DIR/<scenario>.json``, so the tests of a scenario's
results read that file instead of running the scenario a second time (each Spark scenario
starts Spark sessions of its own: a minute apiece on a 2-core machine). The single-scenario
command line (``bench probe --json``, ``bench incremental --rows``, ``bench scale
--timeout``...) keeps tests of its own.
"""

from __future__ import annotations

import importlib.util
import json
import operator
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from morlog.bench.run import ALL_SCENARIOS
from morlog.cli import main

TOP_KEYS = {"scenario", "machine", "params", "results", "ratios", "goals"}
MACHINE_KEYS = {"python", "platform", "cpu_count", "numpy", "pyarrow", "fastavro"}
GOALS = {
    "probe": {"sbbf_vs_pybloom_speedup", "hudi_dynamic_absent_keys_per_s",
              "hudi_dynamic_build_keys_per_s"},
    "lookup": {"indexed_vs_compat_speedup", "probe_reads", "bytes_read_over_index_bytes"},
    "append": {"indexed_over_plain_time", "index_share_of_data"},
    "tag": {"tag_vs_bloom_index_baseline_speedup", "tag_keys_per_s"},
    "upsert": {"files_vs_baseline", "time_vs_baseline", "spark_vs_python_client"},
    "spark": {"data_source_vs_client", "spark_upsert_vs_client"},
    "scale": {"create_vs_delta_rs", "upsert_vs_delta_rs_merge", "upsert_rows_per_s",
              "upsert_last_over_first_batch",
              "read_avro_vs_hudi_rs", "read_avro_peak_rss_vs_hudi_rs",
              "read_parquet_vs_hudi_rs", "read_parquet_vs_delta_rs",
              "tag_100k_vs_bloom_index_speedup", "tag_100k_keys_per_s",
              "tag_100k_record_index_vs_bloom_index_speedup",
              "tag_100k_record_index_keys_per_s", "create_vs_pypaimon",
              "create_peak_rss_vs_pypaimon", "upsert_vs_pypaimon", "upsert_peak_rss_vs_pypaimon",
              "read_avro_vs_pypaimon", "read_avro_peak_rss_vs_pypaimon",
              "compact_vs_delta_rs", "read_compacted_vs_delta_rs"},
    "compaction": {"read_speedup_after_log_compaction", "log_compaction_bytes_vs_compaction",
                   "compaction_time_vs_base_file_write", "cumulative_fpp_after_vs_configured",
                   "table_read_speedup_after_log_compaction",
                   "table_log_compaction_bytes_vs_compaction",
                   "table_compaction_time_vs_base_file_write"},
    "prune": {"pruned_superset_of_hudi", "unsound_prunes", "pruned_fraction_morlog_minus_hudi",
              "read_time_ratio_minus_kept_fraction"},
    "rli": {"bytes_per_mapping", "lookup_100k_ms", "tag_keys_per_s", "tag_vs_bloom_baseline"},
    "incremental": {"slices_read_over_touched", "incremental_time_vs_snapshot"},
}
OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}


def _check_report(report: dict[str, Any], scenario: str) -> None:
    assert set(report) == TOP_KEYS
    assert report["scenario"] == scenario
    assert MACHINE_KEYS <= set(report["machine"])
    assert report["machine"]["numpy"] and report["machine"]["pyarrow"]
    for part in ("params", "results", "ratios"):
        assert isinstance(report[part], dict) and report[part], part
    assert report["params"]["quick"] is True
    want = GOALS[scenario]
    assert set(report["goals"]) == want
    for name, g in report["goals"].items():
        assert set(g) == {"value", "target", "op", "met"}, name
        assert g["op"] in OPS, name
        assert isinstance(g["value"], int | float) and not isinstance(g["value"], bool), name
        assert isinstance(g["target"], int | float), name
        assert isinstance(g["met"], bool), name
        assert g["met"] == OPS[g["op"]](g["value"], g["target"]), name


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, json.loads(out), err


@dataclass(frozen=True)
class QuickAll:
    """``morlog bench all --quick --json``'s run: exit status, printed report, stderr and
    the output folder."""

    rc: int
    report: dict[str, Any]
    err: str
    out: Path

    def scenario(self, name: str) -> tuple[int, dict[str, Any], str]:
        """Scenario ``name``'s report as ``bench NAME --quick --json`` prints it (its file,
        checked against the combined report's parts), with the run's exit status and
        stderr."""
        assert name in self.report["results"], f"bench all did not run {name}"
        report: dict[str, Any] = json.loads((self.out / f"{name}.json").read_text())
        assert report["scenario"] == name
        for part in ("params", "results", "ratios"):
            assert report[part] == self.report[part][name], (name, part)
        for g, entry in report["goals"].items():  # combine prefixes a name taken before
            assert entry in (self.report["goals"].get(g), self.report["goals"].get(
                f"{name}.{g}")), (name, g)
        return self.rc, report, self.err


@pytest.fixture(scope="module")
def quick_all(tmp_path_factory: pytest.TempPathFactory) -> QuickAll:
    """One ``bench all --quick`` run in a process of its own, as a user runs it: its Spark
    scenarios start their own session (one this test worker shares with other test files
    would keep no event log, and the Spark batches could not be split)."""
    out_dir = tmp_path_factory.mktemp("bench-all")
    code = ("import sys\nfrom morlog.cli import main\n"
            "sys.exit(main(['bench', 'all', '--quick', '--json', '--out', sys.argv[1]]))")
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
    r = subprocess.run([sys.executable, "-c", code, str(out_dir)], capture_output=True,
                       text=True, env=env, timeout=1800, check=False)
    return QuickAll(r.returncode, json.loads(r.stdout) if r.stdout.strip() else {}, r.stderr,
                    out_dir)


@pytest.mark.parametrize("scenario", ["probe", "lookup", "append", "tag", "rli"])
def test_bench_scenario_reports_the_json_shape(scenario: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               quick_all: QuickAll) -> None:
    """Probe through its own command line (``bench probe --json``: the report it prints and
    the file it writes agree), the others from :func:`quick_all`'s run."""
    if scenario == "probe":
        rc, report, err = _run(capsys, "bench", scenario, "--quick", "--json", "--out",
                               str(tmp_path))
        out = tmp_path
    else:
        (rc, report, err), out = quick_all.scenario(scenario), quick_all.out
    assert rc == 0, err
    _check_report(report, scenario)
    if scenario == "probe":  # the quick build still crosses into Hudi's bounded mode
        hudi = report["results"]["hudi_dynamic_v0"]
        assert hudi["big_build_bounded"] is True and hudi["big_build_rows"] == 2
    written = out / f"{scenario}.json"
    assert written.exists()
    on_disk = json.loads(written.read_text())
    assert on_disk["goals"] == report["goals"]
    assert on_disk["results"] == report["results"]
    png = out / f"{scenario}.png"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not png.exists()
        assert "matplotlib is not installed" in err
    else:
        assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_measures_what_it_says(quick_all: QuickAll) -> None:
    _, lookup, _ = quick_all.scenario("lookup")
    r = lookup["results"]
    assert r["indexed"]["stored_index_used"] is True
    assert r["compat"]["stored_index_used"] is False
    for path in ("indexed", "compat"):
        answers = r[path]["answers"]
        assert answers["present_keys_confirmed"] == lookup["params"]["present_lookup_keys"]
        assert answers["absent_keys_confirmed"] == 0
    assert 0 < r["slice"]["index_bytes"] < r["slice"]["indexed_log_bytes"]
    assert r["indexed"]["probe_reads"] <= r["indexed"]["reads"]

    _, append, _ = quick_all.scenario("append")
    pol = append["results"]["policies"]
    assert set(pol) == {"1", "4", "8", "16"}
    assert pol["1"]["delta_blocks"] == 0  # every block a full checkpoint
    assert pol["1"]["full_checkpoints"] == append["params"]["blocks"]
    split = append["results"]["indexed"]["index_split"]
    assert sum(split.values()) == append["results"]["indexed"]["index_bytes"]


def test_bench_tag_checks_both_methods(quick_all: QuickAll) -> None:
    rc, report, err = quick_all.scenario("tag")
    assert rc == 0, err
    r, p = report["results"], report["params"]
    assert r["locations_agree"] is True
    batch = r["batch"]
    assert batch["keys"] == p["batch_keys"]
    assert 0 < batch["log_only_update_keys"] < batch["update_keys"]
    slices = p["partitions"] * p["groups_per_partition"]
    assert r["table"]["slices"] == slices
    for method in ("morlog", "baseline"):
        m = r[method]
        assert m["answers"] == {"update_keys_found": batch["update_keys"],
                                "insert_keys_found": 0}
        assert m["reads"] > 0 and m["bytes_read"] > 0
        assert m["reads_per_1k_keys"] == pytest.approx(m["reads"] * 1000 / batch["keys"],
                                                       rel=1e-5)
    assert r["morlog"]["stats"]["log_probes"] == slices
    log_part = r["morlog"]["log_part"]
    assert 0 < log_part["reads"] < r["morlog"]["reads"]
    assert log_part["log_hits"] == r["baseline"]["stats"]["log_hits"] > 0
    base = r["baseline"]
    assert base["stats"]["log_blocks_decoded"] == slices * p["log_blocks"]
    assert base["stats"]["log_keys_decoded"] == r["table"]["log_records"]
    assert 0 < base["stats"]["base_candidates"] < batch["keys"]  # the footers prune
    assert base["reads"] == base["base_part"]["reads"] + base["log_part"]["reads"]
    assert r["setup_seconds"] > 0
    top = r["profile_top"]
    assert 1 <= len(top) <= 5 and all(t.startswith("readers/") for t in top)


def test_bench_rli_checks_every_method(quick_all: QuickAll) -> None:
    rc, report, err = quick_all.scenario("rli")
    assert rc == 0, err
    r, p = report["results"], report["params"]
    keys = p["keys"]
    assert r["table"]["keys"] == keys == r["bootstrap"]["entries"]
    assert p["shards"] == 16 and r["bootstrap"]["index"]["shards_with_slices"] == 16
    assert r["bootstrap"]["index"]["entries"] == keys
    assert report["goals"]["bytes_per_mapping"]["value"] == pytest.approx(
        r["bootstrap"]["bytes"] / keys, rel=1e-5)
    look = r["lookup"]
    assert look["threads"] == 1 and look["shards_read"] == 16
    assert look["answers"] == {"present_keys_found": p["lookup_keys"] // 2,
                               "absent_keys_found": 0}
    assert report["goals"]["lookup_100k_ms"]["value"] == look["ms"]
    assert look["profile_top"] and all(x.startswith("readers/") for x in look["profile_top"])
    tag = r["tag"]
    assert tag["locations_agree"] is True
    assert tag["answers"]["update_keys_found"] == tag["batch"]["update_keys"]
    assert tag["index"]["shards_read"] == 16 and tag["file_probes"]["stats"]["slices"] > 0
    up = r["upserts"]
    assert len(up["seconds"]) == up["count"] == p["upserts"]
    assert up["live_keys"] == keys + up["inserted_keys"] == up["index"]["entries"]
    assert up["index"]["log_blocks"] > 0  # the index's shards have logs now
    assert up["lookup"]["answers"]["present_keys_found"] == p["lookup_keys"] // 2


def test_bench_spark_compares_spark_writes_with_the_client(quick_all: QuickAll) -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install .[spark])")
    rc, report, err = quick_all.scenario("spark")
    assert rc == 0, err
    _check_report(report, "spark")
    r, p = report["results"], report["params"]
    for m in ("python_client", "data_source", "spark_upsert", "noop_data_source"):
        assert len(r[m]["batch_seconds"]) == p["batches"]
        assert r[m]["rows_per_s"] == pytest.approx(
            p["batches"] * p["rows_per_batch"] / r[m]["total_seconds"], rel=1e-3)
        # the driver side's peaks by role: its Python, its JVM, the JVM's Python workers
        assert r[m]["driver_python_mb"] > 0 and r[m]["driver_jvm_mb"] > 0
        assert r[m]["python_worker_mb"] > 0
        assert r[m]["driver_side_mb"] >= r[m]["driver_jvm_mb"] + r[m]["driver_python_mb"]
    # Spark's own account of each Spark batch (the bench's session logs its events): the
    # data source is one job of one stage, one task per input file; the wall time splits
    # into time inside jobs and the driver's own time outside them
    for m in ("data_source", "spark_upsert", "noop_data_source"):
        assert len(r[m]["spark_split"]) == p["batches"]
        for split, wall in zip(r[m]["spark_split"], r[m]["batch_seconds"], strict=True):
            assert split["jobs"] >= 1 and split["tasks"] >= 1
            assert split["in_jobs_seconds"] + split["outside_jobs_seconds"] == pytest.approx(
                wall, abs=0.05)
    assert all(x["jobs"] == 1 for x in r["data_source"]["spark_split"])
    assert all(x["jobs"] > 1 for x in r["spark_upsert"]["spark_split"])
    # the least a data-source write could take: the no-op floor plus the client's CPU
    # split over the cores
    assert r["python_client"]["cpu_seconds"] > 0
    assert report["ratios"]["data_source_bound_vs_client"] >= report["ratios"][
        "noop_data_source_vs_client"]
    # Spark's own floor: a Python data source that writes nothing, no table to read back
    assert "files" not in r["noop_data_source"]
    assert report["ratios"]["noop_data_source_vs_client"] > 0
    # --quick leaves the local-cluster half out (the cluster tests run its measure())
    assert "local_cluster" not in r and "cluster_data_source_vs_client" not in report["goals"]
    # every table read back the same before a number was reported
    updates = round(p["rows_per_batch"] * p["update_share"])
    assert r["checks"]["rows"] == p["table_rows"] + p["batches"] * (p["rows_per_batch"]
                                                                   - updates)
    assert report["ratios"]["data_source_vs_client"] == pytest.approx(
        r["data_source"]["total_seconds"] / r["python_client"]["total_seconds"], rel=1e-3)
    assert (quick_all.out / "spark.json").exists()


def test_bench_upsert_compares_routing_with_new_file_groups(quick_all: QuickAll) -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install .[spark])")
    rc, report, err = quick_all.scenario("upsert")
    assert rc == 0, err
    _check_report(report, "upsert")
    assert (quick_all.out / "upsert.json").exists()
    r, p = report["results"], report["params"]
    assert p["repeats"] == 1
    data = r["data"]
    assert data["rows_written"] == p["batches"] * p["rows_per_batch"]
    assert data["distinct_keys"] == data["inserts"] < data["rows_written"]
    edges = r["size_histogram_edges"]
    for method in ("morlog", "baseline", "morlog_parquet", "python_client"):
        m = r[method]
        assert m["read_back"]["rows"] == data["distinct_keys"]
        assert m["read_back"]["latest_versions"] is True
        assert len(m["batch_seconds"]) == len(m["commits"]) == p["batches"]
        f = m["files"]
        assert f["data_files"] == f["base_files"] + f["log_files"] == f["files_in_latest_slices"]
        assert f["files_created_per_timeline"] == f["data_files"]
        assert sum(m["size_histogram"]) == f["data_files"]
        assert len(m["size_histogram"]) == len(edges) - 1
        assert sum(c["inserts"] for c in m["commits"]) == data["inserts"]
        assert sum(c["updates"] for c in m["commits"]) == data["updates"]
    morlog, baseline = r["morlog"], r["baseline"]
    # routing: only the first batch opens file groups; the baseline opens some every batch
    assert morlog["files"]["file_groups"] == p["partitions"]
    assert all(c["inserts_routed"] == c["inserts"] for c in morlog["commits"][1:])
    assert all(c["inserts_routed"] == 0 and c["groups_new"] > 0 for c in baseline["commits"])
    assert morlog["files"]["data_files"] < baseline["files"]["data_files"]
    assert report["ratios"]["files_vs_baseline"] == pytest.approx(
        morlog["files"]["data_files"] / baseline["files"]["data_files"], rel=1e-5)
    # the Python client on the same batches: the same routing, the ratio its goal reads
    client = r["python_client"]
    assert client["files"]["file_groups"] == p["partitions"]
    assert client["files"]["data_files"] == morlog["files"]["data_files"]
    assert report["ratios"]["spark_vs_python_client"] == pytest.approx(
        morlog["total_seconds"] / client["total_seconds"], rel=1e-3)


def test_bench_compaction_measures_both_services_on_the_same_table(
        quick_all: QuickAll) -> None:
    rc, report, err = quick_all.scenario("compaction")
    assert rc == 0, err
    _check_report(report, "compaction")
    png = quick_all.out / "compaction.png"
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    p, r = report["params"], report["results"]
    assert p["repeats"] == 1 and p["table_version"] == 9 and p["carrier"] == "avro"
    for name in ("slice", "table"):
        m = r[name]
        # every copy read the same rows before and after each service, as generated
        checks = m["checks"]
        assert checks["ok"] is True, (name, checks)
        assert checks["read_before"] == checks["read_after_log_compaction"] == checks[
            "read_after_compaction"]
        assert m["read"]["rows"] == checks["expected"]["rows"]
        lc, c, bw = m["log_compaction"], m["compaction"], m["base_file_write"]
        groups = m["build"]["file_groups"]
        assert lc["instants"] == 1 and lc["file_groups"] == groups
        assert 0 < lc["bytes_written"] <= lc["table_bytes_growth"]
        assert c["file_groups"] == groups and c["latest_slices_with_logs"] == 0
        assert c["records_written"] == bw["rows"] == m["read"]["rows"]
        assert 0 < c["bytes_written"] <= c["table_bytes_growth"]
        assert bw["base_files"] >= 1 and bw["base_file_bytes"] > 0
        for key, value in report["ratios"].items():
            if key.startswith("table_") == (name == "table") and key in report["goals"]:
                assert report["goals"][key]["value"] == value
    sl = r["slice"]
    rounds, per = p["rounds"], p["records_per_round"]
    b = sl["build"]
    assert b["file_groups"] == 1 and b["base_files"] == 0
    assert b["commits"] == 2 * rounds - 1 == b["log_files"]  # an upsert and a delete a round
    assert b["deletes"] == (rounds - 1) * round(per * p["delete_share"])
    assert b["updates"] == (rounds - 1) * round(per * p["update_share"])
    assert sl["read"]["rows"] == b["inserts"] - b["deletes"]
    # log compaction replaced every instant's blocks (the data and the delete blocks)
    assert sl["log_compaction"]["replaced_instants"] == b["commits"]
    assert sl["log_compaction"]["records_written"] == sl["read"]["rows"]
    # a log-only slice whose every block is compacted needs no delete block
    assert sl["log_compaction"]["deletes_written"] == 0
    ci = sl["cumulative_index"]
    assert ci["configured_fpp"] == 0.01 and ci["deleted_keys"] == b["deletes"]
    before, after = ci["before"], ci["after"]
    # every record written is in it, deleted keys too; afterwards only the live ones
    assert before["cumulative_key_entries"] == b["inserts"] + b["updates"]
    assert before["deleted_rate"] == 1.0 and before["deleted_keys_maybe"] == b["deletes"]
    assert after["cumulative_key_entries"] == sl["read"]["rows"]
    assert after["blocks_covered"] == 1
    # exact: the deleted keys are gone from it (left: the filter's own false positives)
    assert after["deleted_rate"] < 0.05
    assert before["never_written_keys_maybe"] < ci["never_written_keys"] // 10
    assert after["non_live_rate"] < before["non_live_rate"]
    tag = sl["tag_non_live_keys"]
    assert tag["after"]["found"] == 0 <= tag["before"]["found"] <= b["deletes"]
    t = r["table"]["build"]
    assert t["rows"] == 20_000 and t["file_groups"] == t["base_files"] == 4
    assert t["log_files"] == 40  # ten upserts into four file groups


def _check_prune(report: dict[str, Any]) -> None:
    _check_report(report, "prune")
    p, r = report["params"], report["results"]
    n = p["slices"]
    assert n == p["partitions"] * p["groups_per_partition"] == 20
    kinds = p["slices_by_kind"]
    assert sum(kinds.values()) == n
    assert kinds["rollback"] + kinds["delete"] + kinds["failed"] == p["special_slices"] == n // 4
    assert all(kinds[k] for k in ("rollback", "delete", "failed", "update"))
    # the logs hold what the history says: the rolled-back commit's block and the ROLLBACK
    # command block, a delete block, a block of the commit left pending, an update block
    assert p["logs_by_kind"] == {"rollback": {"data_of_pending": 1, "rollback": 1},
                                 "delete": {"delete": 1}, "failed": {"data_of_pending": 1},
                                 "update": {"data": 1}, "plain": {}}
    assert set(r["predicates"]) == set(p["predicates"]) and len(p["predicates"]) == 8
    for name, q in r["predicates"].items():
        assert q["unsound_prunes"] == 0 and q["hudi_prunes_morlog_keeps"] == 0, name
        # every slice holding a match is kept; morlog keeps no more than Hudi's rule
        assert q["matching_slices"] <= q["kept"]["morlog"] <= q["kept"]["hudi"], name
        assert sum(k["slices"] for k in q["by_kind"].values()) == n
        assert q["by_kind"]["plain"]["pruned_morlog"] == q["by_kind"]["plain"]["pruned_hudi"]
        if name != "partition_eq":  # Hudi's rule keeps every slice with such blocks
            for kind in ("rollback", "delete", "failed"):
                assert q["by_kind"][kind]["pruned_hudi"] == 0, (name, kind)
        read = r["table_read"]["predicates"][name]
        assert read["rows"] == q["matching_rows"]
        assert read["kept_fraction"] == pytest.approx(q["kept"]["morlog"] / n)
    # the predicates are selective, and only the failed commits' rows would match no_match
    assert r["predicates"]["no_match"]["matching_rows"] == 0
    assert r["predicates"]["no_match"]["kept"]["morlog"] == 0
    assert r["predicates"]["no_match"]["kept"]["hudi"] == p["special_slices"]
    assert r["predicates"]["fare_is_null"]["matching_rows"] > 0
    assert report["goals"]["pruned_fraction_morlog_minus_hudi"]["met"] is True
    hrs = r["hudi_rs"]["predicates"]
    assert {n for n, h in hrs.items() if "skipped" in h} == {"fare_is_null", "id_or_ranges",
                                                             "not_range"}
    for name, h in hrs.items():
        if "skipped" not in h:
            assert h["rows_agree"] is True and h["rows"] == r["predicates"][name][
                "matching_rows"], (name, h)


def test_bench_prune_is_sound_and_prunes_what_hudi_cannot(quick_all: QuickAll) -> None:
    pytest.importorskip("hudi")
    rc, report, err = quick_all.scenario("prune")
    assert rc == 0, err
    _check_prune(report)
    png = quick_all.out / "prune.png"
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_prune_spark_queries_with_and_without_pushdown(
        spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--quick runs the Spark queries in a running session (the tests' one)."""
    from morlog.spark.write import PUSHDOWN_CONF

    pytest.importorskip("hudi")
    rc, report, err = _run(capsys, "bench", "prune", "--quick", "--json", "--out",
                           str(tmp_path))
    assert rc == 0, err
    _check_prune(report)
    sp = report["results"]["spark"]
    assert list(sp["predicates"]) == report["params"]["spark_predicates"] == ["id_range"]
    q = sp["predicates"]["id_range"]
    assert q["rows"] == report["results"]["predicates"]["id_range"]["matching_rows"] > 0
    assert q["pushdown_on_seconds"] > 0 and q["pushdown_off_seconds"] > 0
    # the session's pushdown setting is left as it was (on: register sets it)
    assert spark.conf.get(PUSHDOWN_CONF, None) == "true"
    # with pushdown the read planned only the slices pruning keeps
    assert sp["option"] == "filter.pushdown"


def test_bench_all_merges_the_scenarios(quick_all: QuickAll) -> None:
    rc, report, tmp_path = quick_all.rc, quick_all.report, quick_all.out
    assert rc == 0, quick_all.err
    assert set(report) == TOP_KEYS and report["scenario"] == "all"
    ran = {n for n in GOALS
           if n not in ("upsert", "spark") or importlib.util.find_spec("pyspark")}
    want: set[str] = set()  # a goal name a scenario before took is prefixed (combine)
    for name in ALL_SCENARIOS:
        if name in ran:
            want |= {g if g not in want else f"{name}.{g}" for g in GOALS[name]}
    assert set(report["goals"]) == want
    for name in ran:
        assert name in report["results"] and name in report["params"]
        assert (tmp_path / f"{name}.json").exists()
    assert (tmp_path / "all.json").exists()


def test_bench_summary_is_readable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["bench", "probe", "--quick", "--out", str(tmp_path)])
    out, _ = capsys.readouterr()
    assert rc == 0
    assert "goals:" in out and "sbbf_vs_pybloom_speedup" in out
    assert str(tmp_path / "probe.json") in out


def test_bench_rejects_bad_repeats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["bench", "probe", "--quick", "--repeats", "0", "--out", str(tmp_path)])
    _, err = capsys.readouterr()
    assert rc == 2 and "repeats" in err


SCALE_STEPS = {"create": {"morlog", "delta_rs", "pypaimon", "pypaimon_py"},
               "upsert": {"morlog", "morlog_parquet", "delta_rs", "pypaimon", "pypaimon_py"},
               "compact": {"morlog", "delta_rs"},
               "read_avro": {"morlog", "hudi_rs", "pypaimon", "pypaimon_py"},
               "read_parquet": {"morlog", "hudi_rs", "delta_rs"},
               "read_compacted": {"morlog", "delta_rs"},
               "tag": {"morlog", "morlog_rli", "bloom_index", "pypaimon"}}


def test_bench_scale_runs_every_engine_on_the_same_data(quick_all: QuickAll) -> None:
    pytest.importorskip("deltalake")
    pytest.importorskip("hudi")
    from morlog.bench.scale import paimon_python

    assert paimon_python() is not None  # make setup builds pypaimon's environment
    rc, report, err = quick_all.scenario("scale")
    assert rc == 0, err
    _check_report(report, "scale")
    p = report["params"]
    assert p["rows"] == [20_000] and p["goals_at_rows"] == 20_000
    r = report["results"]["20000"]
    for step, engines in SCALE_STEPS.items():
        assert set(r[step]) == engines, step
        for engine, m in r[step].items():
            assert m["status"] == "ok", (step, engine, m)
            assert m["seconds"] > 0 and m["peak_rss_bytes"] >= m["rss_before_bytes"] > 0
    for engine, m in r["upsert"].items():  # every engine's time per batch
        assert len(m["batch_seconds"]) == 10 and all(x > 0 for x in m["batch_seconds"]), engine
    # every engine read the same snapshot, and both taggers gave the same answers
    checks = r["checks"]
    assert all(c["ok"] for k, c in checks.items() if k != "expected"), checks
    reads = ("read_avro", "read_parquet", "read_compacted")
    assert {k for k in checks if k.startswith("read_")} == {
        f"{s}.{e}" for s in reads for e in SCALE_STEPS[s]} | {"read_compacted"}
    # each compacted table reads as it did before compaction; morlog's has no log left
    for engine in SCALE_STEPS["read_compacted"]:
        c = checks[f"read_compacted.{engine}"]
        assert c["before_compaction"] == {"rows": c["rows"], "ts_sum": c["ts_sum"]}, engine
    compacted = r["compact"]["morlog"]
    assert checks["compact.morlog"]["ok"] and compacted["slices_with_logs_after"] == 0
    assert compacted["file_groups"] > 0 and compacted["rows_written"] > 0
    assert "numFilesAdded" in r["compact"]["delta_rs"]["metrics"]
    for name in ("compact_vs_delta_rs", "read_compacted_vs_delta_rs"):  # both measured
        assert report["goals"][name]["value"] > 0, name
    assert report["ratios"]["20000"]["upsert_and_compact_vs_delta_rs"] > 0
    assert checks["tag"]["found"] == {e: checks["tag"]["expected_found"]
                                      for e in SCALE_STEPS["tag"]}
    # morlog tags base files through their base-key indexes, or through its record index
    assert r["tag"]["morlog"]["base_key_indexes"] > 0
    assert r["tag"]["morlog_rli"]["record_index_shards_read"] > 0
    data = report["results"]["data"]["20000"]
    assert checks["expected"]["rows"] == data["distinct_keys_after_upserts"]
    assert data["upsert_updates"] == 6_000 and data["upsert_inserts"] == 14_000
    assert r["read_avro"]["morlog"]["columns"] == 17  # 12 columns and Hudi's 5 meta fields
    assert r["read_parquet"]["delta_rs"]["columns"] == 12
    png = quick_all.out / "scale.png"
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_scale_records_timeouts_instead_of_failing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("deltalake")
    pytest.importorskip("hudi")
    rc, report, err = _run(capsys, "bench", "scale", "--rows", "200", "--timeout", "0.01",
                           "--json", "--out", str(tmp_path))
    assert rc == 0, err
    r = report["results"]["200"]
    assert r["create"]["morlog"]["status"] == "timeout"
    assert r["upsert"]["morlog"]["status"] == "skipped"
    for name, g in report["goals"].items():
        assert g["met"] is False and "status" in g, name
    assert (tmp_path / "scale.json").exists()


def test_bench_scale_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from morlog.bench.scale import parse_rows

    assert parse_rows("1_000_000,100000") == (100_000, 1_000_000)
    for argv in (["bench", "probe", "--quick", "--rows", "1000"],
                 ["bench", "scale", "--rows", "ten"],
                 ["bench", "scale", "--rows", "10"],
                 ["bench", "scale", "--timeout", "0"]):
        rc = main([*argv, "--out", str(tmp_path)])
        _, err = capsys.readouterr()
        assert rc == 2, argv
        assert "--rows" in err or "--timeout" in err, err


def test_bench_incremental_reads_only_the_slices_the_commit_wrote(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, report, err = _run(capsys, "bench", "incremental", "--quick", "--rows", "4000",
                           "--json", "--out", str(tmp_path))
    assert rc == 0, err
    _check_report(report, "incremental")
    p, r = report["params"], report["results"]
    assert p["rows"] == 4000 and p["commits"] >= 2
    sl = r["slices"]
    assert 0 < sl["read"] <= sl["touched"] < sl["table"] and not sl["full_scan"]
    assert report["goals"]["slices_read_over_touched"]["met"] is True
    assert r["checks"]["ok"] is True
    assert r["incremental"]["rows"] == r["checks"]["expected_rows"] > 0
    assert r["snapshot"]["rows"] == 4000
    assert json.loads((tmp_path / "incremental.json").read_text())["goals"] == report["goals"]
    if importlib.util.find_spec("matplotlib") is not None:
        assert (tmp_path / "incremental.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
