"""The one seam every ``morlog`` command goes through: how commands join the parser, how
errors become messages and exit codes, how results are printed.

- :class:`Commands` is where a command module adds its commands (its ``register(commands)``,
  called by ``morlog.cli.build_parser``): :meth:`Commands.add` makes a command's parser and
  binds it to its ``cmd_x`` function, :meth:`Commands.group` a command with subcommands
  (``morlog rli build``). The options several commands share come from here too:
  :func:`add_output_options` (``--json``, ``--pretty``), :func:`add_table_argument`,
  :func:`add_write_options` (``-o KEY=VALUE``).
- :func:`run_guarded` runs a command and turns what escapes it into an exit code and at most
  one line on standard error: the library's errors (:class:`MorlogError`) and I/O errors
  (:class:`OSError`) print ``morlog: error: ...`` (credentials in URIs redacted) and exit 2; a
  closed pipe (``morlog blocks ... | head``) ends quietly; Ctrl-C exits 130; anything else is
  a bug: ``morlog: internal error (...); rerun with MORLOG_DEBUG=1 ...`` and exit 3.
  ``MORLOG_DEBUG=1`` adds the traceback.
- :func:`emit` prints a command's result: its ``--json`` form (one JSON document, indented
  with ``--pretty``) or its text form; :func:`progress_bar` shows a long service's progress
  on standard error.

Commands are ``cmd_x(args, out=None) -> int`` (``out`` defaults to standard output) and raise
instead of printing their errors; ``morlog.cli.main`` runs them through :func:`run_command`.
Exit codes: 0 ok, 1 problems found (``verify``, a demo that did not check out), 2 error,
3 internal error, 130 interrupted.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO, TypeVar

from morlog.logformat.errors import MorlogError, UsageError, redact

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_ERROR = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
#: set (to anything but "" or "0") to get tracebacks with error messages
DEBUG_ENV = "MORLOG_DEBUG"

T = TypeVar("T")
#: a command: ``cmd_x(args, out)`` computes, prints through :func:`emit` on ``out`` (standard
#: output when None) and returns its exit code; it raises its errors (:func:`run_guarded`)
Command = Callable[[argparse.Namespace, TextIO | None], int]


class Commands:
    """The subcommands of one parser (``morlog``'s, or a group's such as ``morlog rli``):
    what each command module's ``register(commands)`` adds its commands to."""

    def __init__(self, parser: argparse.ArgumentParser, *, dest: str = "command",
                 help: str | None = None) -> None:
        # a command is required; argparse names the missing one in its usage error (exit 2)
        self._sub: Any = parser.add_subparsers(dest=dest, metavar="COMMAND", required=True,
                                               help=help)

    def add(self, name: str, func: Command, *, help: str, description: str,
            epilog: str | None = None) -> argparse.ArgumentParser:
        """The parser of command ``name``, which runs ``func``; the caller adds its options."""
        p: argparse.ArgumentParser = self._sub.add_parser(name, help=help,
                                                          description=description,
                                                          epilog=epilog)
        p.set_defaults(func=func)
        return p

    def group(self, name: str, *, help: str, description: str, epilog: str, dest: str,
              commands_help: str) -> Commands:
        """A command with subcommands of its own (``morlog NAME COMMAND``), which the caller
        adds to the :class:`Commands` returned; ``dest`` names the one given."""
        p = self._sub.add_parser(name, help=help, description=description, epilog=epilog)
        return Commands(p, dest=dest, help=commands_help)


def _debug() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def one_line(text: str) -> str:
    """``text`` on one line (inner line breaks become spaces), credentials redacted."""
    return redact(" ".join(part.strip() for part in text.splitlines() if part.strip()))


def error_line(exc: BaseException, subject: str | None = None) -> str:
    """The one line ``morlog`` prints for an error that ended a command."""
    if isinstance(exc, MorlogError):
        return one_line(f"morlog: error: {exc}")
    if isinstance(exc, OSError):
        where = exc.filename if exc.filename is not None else subject
        prefix = f"{where}: " if where is not None else ""
        return one_line(f"morlog: error: {prefix}{exc.strerror or exc}")
    return one_line(f"morlog: internal error ({type(exc).__name__}: {exc}); rerun with "
                    f"{DEBUG_ENV}=1 for a traceback and please report it")


def _quiet_stdout() -> None:
    """After a broken pipe: point standard output at /dev/null so that the interpreter's
    final flush does not complain."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        pass


def run_guarded(fn: Callable[[], int], *, subject: str | None = None,
                err: TextIO | None = None) -> int:
    """Run ``fn`` (a command); return its exit code, or the code of what escaped it after
    printing one line on ``err`` (standard error). ``subject`` names what the command works
    on (its path), for I/O errors that do not name a file."""
    stream = err if err is not None else sys.stderr
    try:
        return int(fn())
    except BrokenPipeError:
        _quiet_stdout()  # the reader went away (| head): nothing to say
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("morlog: interrupted", file=stream)
        return EXIT_INTERRUPTED
    except (MorlogError, OSError) as exc:
        if _debug():
            traceback.print_exc(file=stream)
        print(error_line(exc, subject), file=stream)
        return EXIT_ERROR
    except Exception as exc:  # a bug: one line, the traceback behind a flag
        if _debug():
            traceback.print_exc(file=stream)
        print(error_line(exc, subject), file=stream)
        return EXIT_INTERNAL


def command_subject(args: argparse.Namespace) -> str | None:
    """What a command works on (a log file or a table path), for error lines."""
    for name in ("path", "table"):
        value = getattr(args, name, None)
        if isinstance(value, str):
            return value
    paths = getattr(args, "paths", None)
    return paths[0] if isinstance(paths, list) and len(paths) == 1 else None


def run_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the command ``args.func`` that argparse picked, through the guard."""
    func: Callable[..., int] = args.func
    return run_guarded(lambda: func(args, out), subject=command_subject(args))


def output(out: TextIO | None) -> TextIO:
    """Where a command prints: ``out``, or standard output."""
    return out if out is not None else sys.stdout


def emit(data: T, text: Callable[[T, TextIO], None], *, out: TextIO | None = None,
         as_json: bool = False, pretty: bool = False, allow_nan: bool = True,
         to_json: Callable[[T], Any] | None = None) -> None:
    """Print a command's result: one JSON document (``as_json``; indented when ``pretty``;
    ``to_json`` turns ``data`` into plain lists and dicts first when it is not already) or
    its text form, ``text(data, out)``; credentials in URIs are redacted (spec §9)."""
    stream = output(out)
    buf = io.StringIO()  # every line goes through redact: paths may be URIs with secrets
    if as_json:
        doc = to_json(data) if to_json is not None else data
        json.dump(doc, buf, indent=2 if pretty else None, allow_nan=allow_nan)
        buf.write("\n")
    else:
        text(data, buf)
    stream.write(redact(buf.getvalue()))


def emit_for(args: argparse.Namespace, data: T, text: Callable[[T, TextIO], None],
             out: TextIO | None = None, *, to_json: Callable[[T], Any] | None = None) -> None:
    """:func:`emit` as the command line asked for it (``--json``, ``--pretty``)."""
    emit(data, text, out=out, as_json=bool(getattr(args, "json", False)),
         pretty=bool(getattr(args, "pretty", False)), to_json=to_json)


def read_keys_file(path: str) -> list[str]:
    """Record keys, one per line (blank lines skipped), of a UTF-8 text file."""
    try:
        with open(path, encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f if line.strip()]
    except UnicodeDecodeError as exc:
        raise UsageError("keys file is not UTF-8 text", path=path, offset=exc.start) from None


def add_output_options(p: argparse.ArgumentParser, json_help: str) -> None:
    """The ``--json`` and ``--pretty`` options of a command with a JSON form."""
    p.add_argument("--json", action="store_true", help=json_help)
    p.add_argument("--pretty", action="store_true", help="indent the JSON (with --json)")


#: the TABLE argument of the commands that change a table
TABLE_HELP = "table path or URI (s3://bucket/table?...)"


def add_table_argument(p: argparse.ArgumentParser, help: str = TABLE_HELP, *,
                       metavar: str | None = "TABLE") -> None:
    """The table a command works on, its first argument (``args.table``)."""
    p.add_argument("table", metavar=metavar, help=help)


def add_write_options(p: argparse.ArgumentParser) -> None:
    """``-o KEY=VALUE``, repeatable: Hudi's write options, as the write client takes them
    (:func:`write_options` reads them)."""
    p.add_argument("-o", "--option", action="append", metavar="KEY=VALUE",
                   help="a Hudi write option (hoodie.*), repeatable")


def write_options(args: argparse.Namespace) -> dict[str, str]:
    """The ``-o KEY=VALUE`` options given (:func:`add_write_options`), by key."""
    out: dict[str, str] = {}
    for pair in args.option or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError("an option is KEY=VALUE", actual=pair)
        out[key.strip()] = value.strip()
    return out


@contextmanager
def progress_bar(args: argparse.Namespace, what: str
                 ) -> Iterator[Callable[[int, int], None] | None]:
    """A tqdm bar on standard error (not with --json, not when stderr is no terminal): the
    ``progress(done, total)`` callback a long service takes, or None."""
    if args.json:
        yield None
        return
    from tqdm import tqdm

    bar: Any = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, desc=what, unit="file group", disable=None, leave=False)
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        yield update
    finally:
        if bar is not None:
            bar.close()


__all__ = ["DEBUG_ENV", "EXIT_ERROR", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_OK",
           "EXIT_PROBLEMS", "TABLE_HELP", "Command", "Commands", "add_output_options",
           "add_table_argument", "add_write_options", "command_subject", "emit", "emit_for",
           "error_line", "one_line", "output", "progress_bar", "read_keys_file", "run_command",
           "run_guarded", "write_options"]
