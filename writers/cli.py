"""The ``morlog`` command: read commands from :mod:`readers.cli` plus the write side."""

from __future__ import annotations

import argparse
import sys

from readers.cli import EXIT_ERROR, add_read_commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="morlog",
        description="Inspect, verify and write Apache Hudi merge-on-read log files.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    add_read_commands(sub)
    from .demo import add_demo_command

    add_demo_command(sub)
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


if __name__ == "__main__":
    sys.exit(main())
