"""The ``morlog`` command (``morlog.cli``): read commands, table commands, demos, benchmarks.

One parser: each command module (``read``: blocks, verify, index, lookup; ``table``: slices,
snapshot, timeline, prune, tag; ``demo``; ``spark_demo``; ``repair``; ``services``: compact,
logcompact, clean; ``rli``; ``bench``) adds its commands to it with its ``register``, through
the one seam of ``morlog.cli.common``; every command runs through the same error guard and
prints through the same output helper there.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from morlog.cli import bench, demo, read, repair, rli, services, spark_demo, table
from morlog.cli.common import DEBUG_ENV, Commands, run_command

EPILOG = (f"Exit status: 0 ok, 1 problems found (verify), 2 error (one line on standard "
          f"error), 3 internal error, 130 interrupted. {DEBUG_ENV}=1 adds tracebacks. "
          "Run 'morlog COMMAND --help' for a command's options.")

#: the command modules' ``register``, in the order ``morlog --help`` lists their commands
REGISTER: tuple[Callable[[Commands], None], ...] = (
    read.register, table.register, demo.register, spark_demo.register, repair.register,
    services.register, rli.register, bench.register)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="morlog",
        description="Inspect, verify and write Apache Hudi merge-on-read log files and "
        "tables, and their indexes.",
        epilog=EPILOG,
    )
    commands = Commands(parser)
    for register in REGISTER:
        register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_command(args)


if __name__ == "__main__":
    sys.exit(main())
