"""The ``morlog`` command-line contract: ``blocks``, ``verify``, ``demo``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from morlog.cli import main
from morlog.logformat import BlockType

from .samples import sample_file, sample_frames

DATA, LAYOUT = sample_file()
CONTRACT_TYPES = {"COMMAND", "DELETE", "CORRUPT", "AVRO_DATA", "HFILE_DATA", "PARQUET_DATA",
                  "CDC_DATA"}


@pytest.fixture
def sample_log(tmp_path: Path) -> Path:
    p = tmp_path / ".fg-0_20250101000000000.log.1_0-1-1"
    p.write_bytes(DATA)
    return p


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_blocks_json_follows_the_contract(sample_log: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "blocks", str(sample_log), "--json")
    assert rc == 0
    rows = json.loads(out)
    assert [(r["offset"], r["size"], BlockType[r["type"]]) for r in rows] == LAYOUT
    frames = sample_frames()
    for row, frame in zip(rows, frames, strict=True):
        assert row["type"] in CONTRACT_TYPES
        assert row["header"] == frame.header.as_dict()
        assert "keys" not in row
    assert [r["records"] for r in rows] == [6, 2, 2, 1, 0]
    assert rows[4]["header"] == {"INSTANT_TIME": "20250101000000005",
                                 "TARGET_INSTANT_TIME": "20250101000000004",
                                 "COMMAND_BLOCK_TYPE": "0"}


def test_blocks_json_keys(sample_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "blocks", str(sample_log), "--json", "--keys")
    rows = json.loads(out)
    assert rc == 0
    assert [r.get("keys") for r in rows] == [
        [f"k{i}" for i in range(6)], ["k1", "k7"], ["k2", "k3"], ["k4"], None]
    rc, out, _ = _run(capsys, "blocks", str(sample_log), "--json", "--keys", "--key-field", "id")
    assert json.loads(out)[0]["keys"] == [f"k{i}" for i in range(6)]


def test_blocks_table_is_readable(sample_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "blocks", str(sample_log))
    assert rc == 0
    lines = out.splitlines()
    assert lines[0] == str(sample_log)
    assert "offset" in lines[1] and "type" in lines[1]
    assert "ROLLBACK of 20250101000000004" in lines[-1]
    assert len(lines) == 2 + len(LAYOUT)


def test_blocks_reports_corrupt_regions(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "torn.log"
    cut = LAYOUT[2][0] + 30
    p.write_bytes(DATA[:cut])
    rc, out, _ = _run(capsys, "blocks", str(p), "--json")
    rows = json.loads(out)
    assert rc == 0
    assert rows[-1]["type"] == "CORRUPT"
    assert (rows[-1]["offset"], rows[-1]["size"]) == (LAYOUT[2][0], cut - LAYOUT[2][0])
    assert rows[-1]["records"] is None and rows[-1]["reason"]


def test_verify_exit_codes_and_offsets(sample_log: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "verify", str(sample_log))
    assert rc == 0 and out.startswith("ok")
    bad = tmp_path / "bad.log"
    data = bytearray(DATA)
    data[LAYOUT[1][0] + 40] ^= 0xFF  # inside the Parquet block's header
    mid = LAYOUT[3][0] + LAYOUT[3][1] - 3  # the reverse pointer of the 4th block
    data[mid] ^= 0x01
    bad.write_bytes(bytes(data))
    rc, out, _ = _run(capsys, "verify", str(bad))
    assert rc == 1
    assert f"{bad}@{LAYOUT[3][0]}: CORRUPT block" in out
    assert out.startswith(f"FAIL {bad}")


@pytest.mark.parametrize("content", [b"", b"garbage that is not a log", b"#HUDI"])
def test_verify_and_blocks_never_trace_back(tmp_path: Path, content: bytes,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "junk.log"
    p.write_bytes(content)
    rc, out, err = _run(capsys, "verify", str(p))
    garbage = content.startswith(b"garbage")
    torn = content == b"#HUDI"  # a first block's write cut after 5 bytes (issue 16)
    assert rc == (1 if garbage or torn else 0)
    if garbage:
        assert "invalid block magic" in out and f"{p}@0" in out
    if torn:
        assert f"{p}@0: torn tail: 5 trailing bytes" in out
    rc, out, err = _run(capsys, "blocks", str(p), "--json")
    assert "Traceback" not in err
    if garbage:
        assert rc == 2 and "invalid block magic" in err
    else:
        assert rc == 0 and json.loads(out) == []


def test_missing_file_is_a_clean_error(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _run(capsys, "blocks", str(tmp_path / "nope.log"))
    assert rc == 2 and "no such log file" in err
    rc, out, _ = _run(capsys, "verify", str(tmp_path / "nope.log"))
    assert rc == 1 and "FAIL" in out


def test_demo_writes_and_verifies_a_sample(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "demo", "--out", str(tmp_path / "demo"))
    assert rc == 0
    assert "ok: every block is well formed" in out
    assert "stored index" in out and "not found" in out
    logs = sorted(p for p in (tmp_path / "demo").glob("city=*/.*.log.*"))
    assert [p.parent.name for p in logs] == ["city=chennai", "city=san_francisco"]
    # the table pipeline: upserts through the write client, read back
    assert "routed into existing file groups" in out and "read back: 6200 rows" in out
    from morlog.readers.table import Table

    assert Table(str(tmp_path / "demo" / "trips_table")).read().num_rows == 6200
    rc, out, _ = _run(capsys, "blocks", str(logs[1]), "--json")
    types = [r["type"] for r in json.loads(out)]
    assert types == ["AVRO_DATA", "PARQUET_DATA", "DELETE", "AVRO_DATA", "COMMAND"]
    rc, out, _ = _run(capsys, "index", str(logs[0]), "--json")
    report = json.loads(out)
    assert [b["carrier"] for b in report["blocks"]] == ["avro", "avro", "parquet"] * 2
    assert report["cumulative"]["stored"] is True
    # running it again replaces the samples instead of appending to them
    assert main(["demo", "--out", str(tmp_path / "demo")]) == 0
    capsys.readouterr()
    assert len(list((tmp_path / "demo").glob("city=*/.*.log.*"))) == 2


def test_console_script_help() -> None:
    exe = Path(sys.executable).parent / "morlog"
    if not exe.exists():
        pytest.skip("morlog console script not installed in this environment")
    out = subprocess.run([str(exe), "blocks", "--help"], capture_output=True, text=True,
                         check=True, env={**os.environ})
    assert "--keys" in out.stdout and "--json" in out.stdout


def test_blocks_through_a_pyarrow_filesystem_uri(sample_log: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "blocks", sample_log.as_uri(), "--json")
    assert rc == 0
    assert [(r["offset"], r["size"], BlockType[r["type"]]) for r in json.loads(out)] == LAYOUT


def test_cdc_blocks_are_listed_with_their_records(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from morlog.logformat import cdc_data_block, encode_block

    from .samples import SCHEMA, record

    p = tmp_path / ".fg-0_20250101000000000.log.1_0-1-1.cdc"
    p.write_bytes(encode_block(cdc_data_block([record("c1", "1", 1), record("c2", "1", 2)],
                                              SCHEMA, "20250101000000001")))
    rc, out, _ = _run(capsys, "blocks", str(p), "--json", "--keys")
    (row,) = json.loads(out)
    assert rc == 0 and row["type"] == "CDC_DATA" and row["records"] == 2
    assert row["keys"] == ["c1", "c2"]


def test_verify_reports_a_block_checksum_mismatch(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A record changed in a block morlog wrote decodes to another record: ``verify`` names
    the block and the checksum mismatch (spec/index.md §4.12); the intact block is ok."""
    from .test_index_vectors import VECTORS, _input

    for case, ok in (("avro-carrier-block-checksum", True),
                     ("avro-carrier-block-checksum-mismatch", False)):
        p = tmp_path / f"{case}.log"
        p.write_bytes(_input(VECTORS / case))
        rc, out, _ = _run(capsys, "verify", str(p))
        assert rc == (0 if ok else 1), out
        if not ok:
            assert f"{p}@0: AVRO_DATA block: " in out and "block checksum mismatch" in out
