"""Running independent jobs on a few threads (Parquet, Arrow and the file reads release the
GIL): the write client's file groups, the services' slices, the record index's shards."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

_J = TypeVar("_J")
_R = TypeVar("_R")


def default_threads() -> int:
    """The machine's cores, at most 4."""
    return max(1, min(4, os.cpu_count() or 1))


def run_all(fn: Callable[[_J], _R], jobs: Sequence[_J], threads: int,
            name: str = "morlog") -> list[_R]:
    """``fn`` of every job, in job order, on up to ``threads`` threads. The first failure
    cancels the jobs not started, waits for the running ones and is raised (a commit then
    rolls back whatever any job wrote)."""
    if threads <= 1 or len(jobs) <= 1:
        return [fn(j) for j in jobs]
    with ThreadPoolExecutor(max_workers=min(threads, len(jobs)),
                            thread_name_prefix=name) as pool:
        futures = [pool.submit(fn, j) for j in jobs]
        try:
            return [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            wait(futures)
            raise


__all__ = ["default_threads", "run_all"]
