"""``morlog bench``: benchmarks of morlog's index (filters, lookups, appends).

Scenarios live in :mod:`.probe`, :mod:`.lookup` and :mod:`.append`; :mod:`.common` holds the
test data generator, timing and the report; :mod:`.cli` the command.
"""

from __future__ import annotations

from .cli import add_bench_command, run_bench

__all__ = ["add_bench_command", "run_bench"]
