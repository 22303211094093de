"""A base file holding a key more than once (Hudi's ``insert`` and ``bulk_insert`` do not
combine a batch's duplicates by default), in a file slice with logs: the key's first copy
merges with the logs, its later copies are returned as they are, as Hudi's reader returns
them (``KeyBasedFileGroupRecordBuffer.hasNextBaseRecord`` removes the log record at the
first base record of the key; spec/queries.md §2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from morlog.readers.merge import KEY, SEQ, MergeSpec, _pick_winners
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig

MODES = [MergeSpec(ordering_field="ts", merge_mode="EVENT_TIME_ORDERING"),
         MergeSpec(ordering_field="ts", merge_mode="COMMIT_TIME_ORDERING")]


def _rows(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


@st.composite
def slices(draw: st.DrawFn) -> tuple[pa.Table, int, list[tuple[str, int, bool, Any]]]:
    """Records (base rows first, keys drawn from a small pool so that they repeat; then log
    rows) and deletes (natural, or with an ordering value), sequence numbers in order."""
    pool = ["a", "b", "c", "d"]
    n_base = draw(st.integers(0, 8))
    n_log = draw(st.integers(0, 6))
    keys = [draw(st.sampled_from(pool)) for _ in range(n_base + n_log)]
    ts = [draw(st.integers(0, 3)) for _ in keys]
    records = pa.table({"id": pa.array(keys, pa.string()), "ts": pa.array(ts, pa.int64()),
                        "v": pa.array(range(len(keys)), pa.int64()),
                        KEY: pa.array(keys, pa.string()),
                        SEQ: pa.array(np.arange(len(keys), dtype=np.int64))})
    deletes = []
    for i in range(draw(st.integers(0, 3))):
        natural = draw(st.booleans())
        deletes.append((draw(st.sampled_from(pool)), len(keys) + i, natural,
                        None if natural else draw(st.integers(0, 3))))
    return records, n_base, deletes


@settings(max_examples=300, deadline=None)
@given(case=slices(), mode=st.sampled_from(MODES))
def test_later_base_copies_stay_and_the_first_merges(
        case: tuple[pa.Table, int, list[tuple[str, int, bool, Any]]], mode: MergeSpec) -> None:
    """The merge of a slice whose base repeats keys is the merge of the slice without the
    repeated copies, plus those copies as they are."""
    records, n_base, deletes = case
    keys = records.column("id").to_pylist()
    seen: set[str] = set()
    later = []
    for i in range(n_base):
        if keys[i] in seen:
            later.append(i)
        seen.add(keys[i])
    keep = np.ones(records.num_rows, dtype=bool)
    keep[later] = False
    without = records.filter(pa.array(keep))
    want = _pick_winners(without, deletes, mode, n_base=n_base - len(later))
    copies = records.take(pa.array(later, pa.int64())).drop_columns([SEQ, KEY])
    got = _pick_winners(records, deletes, mode, n_base=n_base)
    assert _rows(got) == _rows(pa.concat_tables([want, copies]))
    # the rows stay in record order: the copies where the base file has them
    order = got.column("v").to_pylist()
    assert order == sorted(order)


def _table_with_a_repeated_key(root: Path) -> MorTable:
    """A version-6 table (no metadata table, no base-key index: the footer tags) whose one
    base file holds key k1 twice, the copy with v=-1, as Hudi's insert can leave it."""
    schema = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("v", pa.int64())])
    cfg = WriteConfig.from_hoodie_options({"hoodie.write.table.version": "6",
                                           "hoodie.metadata.enable": "false",
                                           "morlog.base.key.index": "false"})
    t = MorTable.create(str(root), schema, key_field="id", ordering_field="ts", config=cfg)
    t.insert(pa.table({"id": ["k0", "k1", "k2"], "ts": [1, 1, 1], "v": [0, 1, 2]},
                      schema=schema))
    [base] = [p for p in root.iterdir() if p.suffix == ".parquet"]
    f = pq.ParquetFile(base)
    rows = f.read()
    copy = rows.filter(pa.array([k == "k1" for k in rows.column("id").to_pylist()]))
    copy = copy.set_column(copy.schema.get_field_index("v"), "v", pa.array([-1], pa.int64()))
    doubled = pa.concat_tables([rows, copy]).replace_schema_metadata(rows.schema.metadata)
    pq.write_table(doubled, base)  # the footer's Hudi metadata (bloom filter, min/max) kept
    return t


def test_a_table_whose_base_file_repeats_a_key(tmp_path: Path) -> None:
    t = _table_with_a_repeated_key(tmp_path)
    assert sorted(r["v"] for r in Table(str(tmp_path)).read().to_pylist()) == [-1, 0, 1, 2]
    # an update of k1: the first copy takes it, the later one stays as it was
    t.upsert(pa.table({"id": ["k1"], "ts": [5], "v": [10]},
                      schema=pa.schema([("id", pa.string()), ("ts", pa.int64()),
                                        ("v", pa.int64())])))
    got = Table(str(tmp_path)).read(columns=["id", "v"]).to_pylist()
    assert sorted((r["id"], r["v"]) for r in got) == [("k0", 0), ("k1", -1), ("k1", 10),
                                                       ("k2", 2)]
    # a delete of k1: the first copy goes, the later one stays
    t.delete(pa.table({"id": ["k1"]}))
    got = Table(str(tmp_path)).read(columns=["id", "v"]).to_pylist()
    assert sorted((r["id"], r["v"]) for r in got) == [("k0", 0), ("k1", -1), ("k2", 2)]
    # compaction writes the snapshot it reads
    before = _rows(Table(str(tmp_path)).read(columns=["id", "v"]))
    t.compact()
    assert _rows(Table(str(tmp_path)).read(columns=["id", "v"])) == before
