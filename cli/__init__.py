"""The ``morlog`` command (``morlog.cli``): read commands, table commands, demos, benchmarks.

Commands live beside what they drive (``morlog.readers.cli``, ``morlog.cli.table``,
``morlog.cli.demo``, ``morlog.cli.spark_demo``, ``morlog.cli.repair``,
``morlog.cli.services``,
``morlog.cli.bench``); every one runs through the same error guard and prints through the
same output helper (``morlog.readers.command``).
"""

from __future__ import annotations

import argparse
import sys

from morlog.cli.common import DEBUG_ENV, run_command
from morlog.cli.read import add_read_commands

EPILOG = (f"Exit status: 0 ok, 1 problems found (verify), 2 error (one line on standard "
          f"error), 3 internal error, 130 interrupted. {DEBUG_ENV}=1 adds tracebacks. "
          "Run 'morlog COMMAND --help' for a command's options.")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="morlog",
        description="Inspect, verify and write Apache Hudi merge-on-read log files and "
        "tables, and their indexes.",
        epilog=EPILOG,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    add_read_commands(sub)
    from morlog.cli.table import add_table_commands

    add_table_commands(sub)
    from morlog.cli.bench import add_bench_command
    from morlog.cli.demo import add_demo_command

    add_demo_command(sub)
    from morlog.cli.spark_demo import add_spark_demo_command

    add_spark_demo_command(sub)
    from morlog.cli.repair import add_repair_command

    add_repair_command(sub)
    from morlog.cli.services import add_service_commands

    add_service_commands(sub)
    from morlog.cli.rli import add_rli_commands

    add_rli_commands(sub)
    add_bench_command(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_command(args)


if __name__ == "__main__":
    sys.exit(main())
