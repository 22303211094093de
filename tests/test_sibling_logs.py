"""Sibling log files: several writers of one file slice side by side (the tasks of one
distributed write, spec/table.md §7.6), each indexing its blocks from the same earlier state
without knowing the others' (spec/index.md §6.7).

The next writer takes its state from the siblings' tails (a few reads, no scan of the
slice): the same state, and the same bytes, as a writer that scans every block; every key
stays findable through the stored index."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import morlog.writers.core.indexed as indexed_mod
from morlog.readers.probe import SliceProbe
from morlog.readers.storage import LocalStorage
from morlog.writers.core.indexed import IndexedLogWriter
from morlog.writers.core.logwriter import list_log_files

from .samples import SCHEMA, arrow_schema, next_block_both_ways, record

BASE = "20250101000000000"
EXAMPLES = {"ci": 60, "slow": 1500}.get(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"), 25)


def _inst(i: int) -> str:
    return f"2025010200{i:07d}"


def _files(d: Path) -> list[str]:
    return [str(n) for n in list_log_files(str(d), "fg-0", BASE)]


def _write(w: IndexedLogWriter, keys: list[str], instant: str, carrier: str
           ) -> tuple[str, int]:
    recs = [record(k, instant, n, seq=n) for n, k in enumerate(keys)]
    if carrier == "parquet":
        r = w.append_parquet(pa.Table.from_pylist(recs, schema=arrow_schema()), instant,
                             schema=SCHEMA)
    else:
        r = w.append_avro(recs, SCHEMA, instant)
    return os.path.basename(r.path), r.blocks[0].offset


# one writer of a round: its blocks (carrier, keys), and whether it starts only after the
# round's earlier writers wrote (it then knows their blocks: not a sibling of them)
writer_step = st.tuples(
    st.lists(st.tuples(st.sampled_from(["avro", "parquet"]),
                       st.lists(st.integers(0, 60), min_size=1, max_size=25)),
             min_size=1, max_size=2),
    st.booleans())
rounds = st.lists(st.lists(writer_step, min_size=1, max_size=3), min_size=1, max_size=5)


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=rounds, mode=st.sampled_from(["append", "rollover"]),
       every=st.integers(1, 4), delta_keys=st.sampled_from([10, 16_384]),
       carrier=st.sampled_from(["avro", "parquet"]))
def test_siblings_index_every_key_and_the_next_writer_reads_their_tails(
        tmp_path_factory: pytest.TempPathFactory, history: list[list[Any]], mode: str,
        every: int, delta_keys: int, carrier: str) -> None:
    d = tmp_path_factory.mktemp("slice")
    kw: dict[str, Any] = dict(mode=mode, checkpoint_every=every, delta_max_keys=delta_keys,
                              fsync=False)
    written: dict[str, set[tuple[str, int]]] = {}
    step = 0
    for r, writers in enumerate(history):
        inst = _inst(r)
        # the round's writers take their state before any of them writes (side by side),
        # except a late one, which starts after the writers before it are done
        ws: list[IndexedLogWriter | None] = [None] * len(writers)
        for i, (_, late) in enumerate(writers):
            if not late:
                ws[i] = IndexedLogWriter(d, "fg-0", BASE, write_token=f"{i}-{r}-0", **kw)
                assert ws[i] is not None
                _ = ws[i].state  # type: ignore[union-attr]
        for i, (blocks, _) in enumerate(writers):
            w = ws[i] or IndexedLogWriter(d, "fg-0", BASE, write_token=f"{i}-{r}-0", **kw)
            for c, nums in blocks:
                keys = sorted({f"key-{n:03d}" for n in nums})
                at = _write(w, keys, inst, c)
                for k in keys:
                    written.setdefault(k, set()).add(at)
                step += 1
        probe_keys = [f"key-{n:03d}" for n in range(0, 70)]
        with SliceProbe(str(d), _files(d)) as probe:
            res = probe.probe(probe_keys)
        for k in probe_keys:
            got = {(b.file, b.offset) for b in res.hits[k].confirmed}
            assert got == written.get(k, set()), (k, r)
            bloom = {(b.file, b.offset) for b in res.hits[k].bloom}
            assert got <= bloom <= {(b.file, b.offset) for b in res.hits[k].range}
    # the next writer: from the tails, and from a scan of every block; the same state and
    # the same bytes
    if not any(late for writers in history for _, late in writers):
        # side by side only: the tails stand for the slice (no scan)
        assert indexed_mod._state_from_tail(
            LocalStorage(), str(d), list_log_files(str(d), "fg-0", BASE), BASE,
            lambda e: e.hashes) is not None
    nkw = dict(kw, write_token="9-99-0")
    next_block_both_ways(d, lambda at: IndexedLogWriter(at, "fg-0", BASE, **nkw),
                         lambda w: _write(w, ["key-001", "key-500", "new-key"], _inst(99),
                                          carrier))
    fast_dir = d.parent / f"{d.name}-fast"
    # and every key is found through the last writer's index
    with SliceProbe(str(fast_dir), _files(fast_dir)) as probe:
        res = probe.probe([*written, "new-key"])
    for k, blocks in written.items():
        assert {(b.file, b.offset) for b in res.hits[k].confirmed} >= blocks, k


@pytest.mark.parametrize("every", [1, 2, 8])
@pytest.mark.parametrize("late", [False, True])
@pytest.mark.parametrize("earlier", [True, False])
def test_two_tasks_then_the_next_writer(tmp_path: Path, every: int, late: bool,
                                        earlier: bool) -> None:
    """Two writers side by side (after two earlier blocks, or as the slice's first: both
    then write a full checkpoint), and, ``late``, a third that starts once they are done
    and so knows both: the next writer takes its state from the tails (no scan) and
    continues from a checkpoint that lists exactly the blocks before it, never from a
    sibling's full checkpoint that misses the other's block; a scan adopts the same."""
    d = tmp_path / "slice"
    d.mkdir()
    kw: dict[str, Any] = dict(mode="rollover", checkpoint_every=every, fsync=False)
    keys = ["key-010", "key-011", "key-020"]
    if earlier:
        first = IndexedLogWriter(d, "fg-0", BASE, write_token="0-0-0", **kw)
        _write(first, ["key-001", "key-002"], _inst(0), "avro")
        _write(first, ["key-003"], _inst(1), "avro")
        keys += ["key-001", "key-002", "key-003"]
    a = IndexedLogWriter(d, "fg-0", BASE, write_token="0-1-0", **kw)
    b = IndexedLogWriter(d, "fg-0", BASE, write_token="1-1-0", **kw)
    _ = a.state, b.state  # both start from the same two blocks
    _write(a, ["key-010", "key-011"], _inst(2), "avro")
    _write(b, ["key-020"], _inst(2), "parquet")
    if late:
        c = IndexedLogWriter(d, "fg-0", BASE, write_token="2-1-0", **kw)
        _write(c, ["key-030"], _inst(2), "avro")
        keys.append("key-030")
    else:
        assert indexed_mod._state_from_tail(
            a.log.store.storage, str(d), list_log_files(str(d), "fg-0", BASE), BASE,
            lambda e: e.hashes) is not None
    nkw = dict(kw, write_token="9-99-0")
    fast = next_block_both_ways(d, lambda at: IndexedLogWriter(at, "fg-0", BASE, **nkw),
                                lambda w: _write(w, ["key-001", "next"], _inst(99), "avro"))
    # the checkpoint continued from lists exactly the blocks before it, in log order
    assert fast.state.checkpoint_at is not None
    with SliceProbe(str(d.parent / f"{d.name}-fast"), _files(d.parent / f"{d.name}-fast")
                    ) as probe:
        res = probe.probe([*keys, "next", "absent"])
    assert all(res.hits[k].confirmed for k in [*keys, "next"])
    assert not res.hits["absent"].confirmed
