"""``morlog.follow``: the records of each newly completed commit, as a Python loop
(``morlog.readers.follow``; the Spark streaming source uses the same offsets and seam)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import morlog
from morlog.readers.follow import CommitChanges
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64())])


def _keys(c: CommitChanges) -> set[tuple[str, int]]:
    return {(r["id"], r["ts"]) for r in c.rows.select(["id", "ts"]).to_pylist()}


def test_follow_yields_each_commits_records_once_and_goes_on_from_an_offset(
        tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    mt = MorTable.create(path, SCHEMA, key_field="id", ordering_field="ts",
                         config=WriteConfig(fsync=False))
    mt.upsert(pa.table({"id": ["a", "b"], "ts": [1, 1]}, schema=SCHEMA))
    mt.upsert(pa.table({"id": ["b", "c"], "ts": [2, 1]}, schema=SCHEMA))
    seen = list(morlog.follow(path, wait=False))
    # each commit's records as that commit left them (Hudi's incremental query to its end)
    assert [_keys(c) for c in seen] == [{("a", 1), ("b", 1)}, {("b", 2), ("c", 1)}]
    mt.upsert(pa.table({"id": ["a"], "ts": [3]}, schema=SCHEMA))
    mt.compact()  # a service writes no record of its own: it emits nothing
    more = list(morlog.follow(path, since=seen[-1].completed, wait=False))
    assert [_keys(c) for c in more] == [{("a", 3)}]
    assert list(morlog.follow(path, since=more[-1].completed, wait=False)) == []
