"""The seams every ``morlog`` command goes through: one error guard, one output helper, the
exit codes.

- :func:`run_guarded` runs a command and turns what escapes it into an exit code and at most
  one line on standard error: the library's errors (:class:`MorlogError`) and I/O errors
  (:class:`OSError`) print ``morlog: error: ...`` (credentials in URIs redacted) and exit 2; a
  closed pipe (``morlog blocks ... | head``) ends quietly; Ctrl-C exits 130; anything else is
  a bug: ``morlog: internal error (...); rerun with MORLOG_DEBUG=1 ...`` and exit 3.
  ``MORLOG_DEBUG=1`` adds the traceback.
- :func:`emit` prints a command's result: its ``--json`` form (one JSON document, indented
  with ``--pretty``) or its text form.

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
from collections.abc import Callable
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


def emit(data: T, text: Callable[[T, TextIO], None], *, out: TextIO | None = None,
         as_json: bool = False, pretty: bool = False, allow_nan: bool = True,
         to_json: Callable[[T], Any] | None = None) -> None:
    """Print a command's result: one JSON document (``as_json``; indented when ``pretty``;
    ``to_json`` turns ``data`` into plain lists and dicts first when it is not already) or
    its text form, ``text(data, out)``; credentials in URIs are redacted (spec §9)."""
    stream = out if out is not None else sys.stdout
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


__all__ = ["DEBUG_ENV", "EXIT_ERROR", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_OK",
           "EXIT_PROBLEMS", "add_output_options", "command_subject", "emit", "emit_for",
           "error_line", "one_line", "read_keys_file", "run_command", "run_guarded"]
