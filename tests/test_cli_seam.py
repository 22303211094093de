"""The ``morlog`` command is one room, ``cli/`` (``morlog.cli``): one parser, which every command
module joins through the one seam of ``morlog.cli.common`` (``Commands``, the shared options,
the error guard, the output helpers)."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path
from typing import TextIO

import pytest

from morlog.cli import main
from morlog.cli.common import (
    EXIT_ERROR,
    Commands,
    add_output_options,
    add_table_argument,
    add_write_options,
    run_command,
    write_options,
)

REPO = Path(__file__).resolve().parent.parent
#: the folders installed as morlog's packages (pyproject.toml)
PACKAGE_FOLDERS = ["api", "logformat", "compat", "readers", "writers", "bench", "cli"]
#: argparse's calls that make parsers and bind commands, and the one file each may stand in
PARSER_CALLS = {"ArgumentParser": "cli/__init__.py", "add_subparsers": "cli/common.py",
                "add_parser": "cli/common.py", "set_defaults": "cli/common.py"}


def _called_names(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            out.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
    return out


def _imports_argparse(tree: ast.AST) -> bool:
    return any(isinstance(n, ast.Import) and any(a.name == "argparse" for a in n.names)
               or isinstance(n, ast.ImportFrom) and n.module == "argparse"
               for n in ast.walk(tree))


def test_the_command_line_lives_in_cli_and_joins_one_parser_through_the_seam() -> None:
    """No module outside cli/ parses a command line; inside, only the seam makes parsers and
    binds commands to them (the top-level parser in cli/__init__.py)."""
    stray: list[str] = []
    for folder in PACKAGE_FOLDERS:
        for py in sorted((REPO / folder).rglob("*.py")):
            rel = py.relative_to(REPO).as_posix()
            tree = ast.parse(py.read_text(), rel)
            if folder != "cli" and _imports_argparse(tree):
                stray.append(f"{rel} imports argparse: commands live in cli/")
            for call in sorted(_called_names(tree) & set(PARSER_CALLS)):
                if PARSER_CALLS[call] != rel:
                    stray.append(f"{rel} calls {call}: add commands through "
                                 "morlog.cli.common.Commands")
    assert not stray, "\n".join(stray)


def test_a_command_joins_the_parser_through_commands() -> None:
    parser = argparse.ArgumentParser(prog="probe")
    ran: list[tuple[str, dict[str, str], bool]] = []

    def cmd_probe(args: argparse.Namespace, out: TextIO | None = None) -> int:
        ran.append((args.table, write_options(args), args.json))
        return 7

    p = Commands(parser).add("probe", cmd_probe, help="a probe", description="a probe command")
    add_table_argument(p)
    add_write_options(p)
    add_output_options(p, "print JSON")
    args = parser.parse_args(["probe", "t1", "-o", "hoodie.a=1", "-o", " b = 2 ", "--json"])
    assert args.command == "probe"
    assert run_command(args) == 7
    assert ran == [("t1", {"hoodie.a": "1", "b": "2"}, True)]
    with pytest.raises(SystemExit) as exc:  # a command is required: argparse's usage error
        parser.parse_args([])
    assert exc.value.code == 2


def test_a_group_has_commands_of_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="probe")
    group = Commands(parser).group("idx", help="an index", description="index commands",
                                   epilog="exit 0", dest="idx_command",
                                   commands_help="build or drop")
    group.add("build", lambda args, out=None: 3, help="build it", description="build the index")
    args = parser.parse_args(["idx", "build"])
    assert (args.command, args.idx_command) == ("idx", "build")
    assert run_command(args) == 3
    with pytest.raises(SystemExit):
        parser.parse_args(["idx", "--help"])
    shown = capsys.readouterr().out
    assert "build or drop" in shown and "index commands" in shown and "exit 0" in shown


@pytest.mark.parametrize("bad", ["no-equals-sign", "=value"])
def test_a_write_option_that_is_no_key_value_pair_is_a_usage_error(
        bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["compact", str(tmp_path), "-o", bad])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == EXIT_ERROR
    assert len(err) == 1 and err[0].startswith("morlog: error: an option is KEY=VALUE")
    assert bad in err[0]
