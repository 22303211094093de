"""The one error guard and the one output seam every ``morlog`` command goes through
(``morlog.cli.common``), the index report computed in ``morlog.readers``, and the help
of every command."""

from __future__ import annotations

import argparse
import errno
import io
import json
from pathlib import Path
from typing import Any, NoReturn

import pytest

import morlog.cli.read as read_cli
from morlog.cli import build_parser, main
from morlog.cli.common import (
    EXIT_ERROR,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    emit,
    run_guarded,
)
from morlog.logformat.errors import ContentError
from morlog.readers.index_report import IndexReport, index_report
from morlog.writers.core.indexed import IndexedLogWriter

from .samples import sample_file

DATA, _ = sample_file()


def _raise(exc: BaseException) -> Any:
    def fn() -> NoReturn:
        raise exc
    return fn


def _guarded(capsys: pytest.CaptureFixture[str], exc: BaseException,
             subject: str | None = None) -> tuple[int, str, str]:
    rc = run_guarded(_raise(exc), subject=subject)
    out, err = capsys.readouterr()
    return rc, out, err


def test_library_errors_are_one_redacted_line_and_exit_2(capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.delenv("MORLOG_DEBUG", raising=False)
    exc = ContentError("bad content\nsecond line", path="s3://AKID:secret@bucket/f.log",
                       offset=12, expected="x", actual="y")
    rc, out, err = _guarded(capsys, exc)
    assert rc == EXIT_ERROR == 2 and out == ""
    assert err == ("morlog: error: s3://***@bucket/f.log@12: bad content second line: "
                   "expected 'x', got 'y'\n")


def test_error_texts_print_an_expectation_only_when_there_is_one() -> None:
    from morlog.logformat.errors import UsageError
    from morlog.logformat.naming import LogFileName

    assert str(UsageError("bad", actual=7)) == "bad: got 7"
    assert str(UsageError("bad", expected=1, actual=None)) == "bad: expected 1, got None"
    assert str(ContentError("bad", path="f", offset=3)) == "f@3: bad"
    with pytest.raises(UsageError) as info:
        LogFileName.parse("nope.txt")
    assert "expected None" not in str(info.value) and str(info.value).endswith(": got 'nope.txt'")


def test_io_errors_name_the_file_and_exit_2(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MORLOG_DEBUG", raising=False)
    exc = FileNotFoundError(errno.ENOENT, "No such file or directory", "/no/keys.txt")
    rc, _, err = _guarded(capsys, exc, subject="/the/table")
    assert rc == 2 and err == "morlog: error: /no/keys.txt: No such file or directory\n"
    rc, _, err = _guarded(capsys, PermissionError(errno.EACCES, "Permission denied"),
                          subject="s3://k:s@b/t")
    assert rc == 2 and err == "morlog: error: s3://***@b/t: Permission denied\n"


def test_internal_errors_are_one_line_exit_3_and_trace_back_on_request(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MORLOG_DEBUG", raising=False)
    rc, _, err = _guarded(capsys, RuntimeError("oops\nat s3://a:b@c/d"))
    assert rc == EXIT_INTERNAL == 3
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("morlog: internal error (RuntimeError: oops at s3://***@c/d)")
    assert "rerun with MORLOG_DEBUG=1" in err
    monkeypatch.setenv("MORLOG_DEBUG", "1")
    rc, _, err = _guarded(capsys, RuntimeError("oops"))
    assert rc == 3 and "Traceback (most recent call last)" in err
    assert err.splitlines()[-1].startswith("morlog: internal error (RuntimeError: oops)")


def test_interrupts_and_closed_pipes(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _guarded(capsys, KeyboardInterrupt())
    assert rc == EXIT_INTERRUPTED == 130 and err == "morlog: interrupted\n"
    rc, out, err = _guarded(capsys, BrokenPipeError(errno.EPIPE, "Broken pipe"))
    assert rc == EXIT_ERROR and out == "" and err == ""
    assert run_guarded(lambda: 0) == EXIT_OK and run_guarded(lambda: 1) == 1


def test_every_command_runs_through_the_guard(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MORLOG_DEBUG", raising=False)
    log = tmp_path / "f.log"
    log.write_bytes(DATA)
    assert main(["lookup", str(log)]) == 2
    assert capsys.readouterr().err == "morlog: error: no keys given\n"
    assert main(["lookup", str(log), "--keys-file", str(tmp_path / "none.txt")]) == 2
    assert capsys.readouterr().err == (f"morlog: error: {tmp_path / 'none.txt'}: No such file "
                                       "or directory\n")
    assert main(["tag", str(tmp_path), "--keys", str(log)]) == 2
    assert capsys.readouterr().err.startswith(f"morlog: error: {log}@")  # not UTF-8 text
    keys = tmp_path / "keys.txt"
    keys.write_text("k1\n")
    assert main(["tag", str(tmp_path), "--keys", str(keys)]) == 2
    assert "not a Hudi table" in capsys.readouterr().err

    def boom(*a: Any, **k: Any) -> NoReturn:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(read_cli, "block_rows", boom)
    assert main(["blocks", str(log), "--json"]) == 3
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("morlog: internal error (ZeroDivisionError")
    assert main(["bench", "probe", "--repeats", "0", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("morlog: error: --repeats must be at least 1")


def test_emit_prints_the_json_or_the_text_form() -> None:
    data = {"b": [1, 2], "a": None}

    def text(d: dict[str, Any], o: io.StringIO | Any) -> None:
        print(f"{len(d)} entries", file=o)

    for as_json, pretty, expected in ((False, False, "2 entries\n"),
                                      (True, False, '{"b": [1, 2], "a": null}\n'),
                                      (True, True, json.dumps(data, indent=2) + "\n")):
        out = io.StringIO()
        emit(data, text, out=out, as_json=as_json, pretty=pretty)
        assert out.getvalue() == expected
    out = io.StringIO()
    emit(3, lambda d, o: None, out=out, as_json=True, to_json=lambda n: {"n": n})
    assert out.getvalue() == '{"n": 3}\n'
    with pytest.raises(ValueError):
        emit(float("nan"), text, out=io.StringIO(), as_json=True, allow_nan=False)


def test_the_index_report_is_computed_in_readers_and_printed_by_the_cli(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = IndexedLogWriter(tmp_path, "fg-0", "20250101000000000", checkpoint_every=2)
    w.append_avro([{"_hoodie_record_key": f"k{i}", "v": i} for i in range(4)],
                  {"type": "record", "name": "r", "fields": [
                      {"name": "_hoodie_record_key", "type": "string"},
                      {"name": "v", "type": "long"}]}, "20250101000000001")
    (path,) = [str(p) for p in tmp_path.glob(".*.log.*")]
    report = index_report(path)
    assert isinstance(report, IndexReport)
    (row,) = report.blocks
    assert (row.carrier, row.stored, row.keys, row.min_key, row.max_key) == (
        "avro", True, 4, "k0", "k3")
    assert report.cumulative is not None and report.cumulative.kind == "FULL"
    assert main(["index", path, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == report.as_dict()
    assert list(printed["blocks"][0]) == ["offset", "size", "instant", "carrier", "stored",
                                          "keys", "min_key", "max_key", "bloom_type",
                                          "bloom_bytes", "index_bytes"]
    assert list(printed["cumulative"]) == ["stored", "offset", "kind", "scope", "blocks",
                                           "keys", "min_key", "max_key", "bloom_type",
                                           "bloom_bytes", "checkpoint"]
    # a log without stored indexes: the cumulative figures are recomputed
    plain = tmp_path / "plain.log"
    plain.write_bytes(DATA)
    rep = index_report(str(plain)).as_dict()
    assert rep["cumulative"]["kind"] == "RECOMPUTED" and "scope" not in rep["cumulative"]
    assert all(b["carrier"] == "none" and "index_bytes" not in b for b in rep["blocks"])


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def test_every_command_explains_itself_and_its_options() -> None:
    parser = build_parser()
    assert "Exit status" in parser.format_help()
    commands = _subparsers(parser)
    assert set(commands) == {"blocks", "verify", "index", "lookup", "slices", "snapshot",
                             "tag", "demo", "spark-demo", "bench", "repair", "compact",
                             "clean", "logcompact", "prune", "rli", "timeline"}
    for name, sub in commands.items():
        assert sub.description and len(sub.description) > 100, name
        for action in sub._actions:
            assert action.help, f"{name} {action.dest} has no help"
