"""The ``morlog`` command: read commands, table commands, demos and benchmarks."""

from __future__ import annotations

import argparse
import os
import sys

from morlog.logformat.errors import MorlogError, redact
from morlog.readers.cli import EXIT_ERROR, add_read_commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="morlog",
        description="Inspect, verify and write Apache Hudi merge-on-read log files.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    add_read_commands(sub)
    from morlog.readers.table_cli import add_table_commands

    add_table_commands(sub)
    from morlog.bench.cli import add_bench_command
    from morlog.writers.demo import add_demo_command

    add_demo_command(sub)
    from morlog.writers.spark_demo import add_spark_demo_command

    add_spark_demo_command(sub)
    add_bench_command(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("morlog: interrupted", file=sys.stderr)
        return 130
    except MorlogError as exc:
        print(f"morlog: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # a bug: say so in one line, keep the traceback behind a flag
        if os.environ.get("MORLOG_DEBUG"):
            raise
        print(redact(f"morlog: internal error ({type(exc).__name__}: {exc}); rerun with "
                     "MORLOG_DEBUG=1 for a traceback and please report it"), file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
