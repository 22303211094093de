"""Indexed data blocks: both carriers, the cumulative index, probes, compat equivalence."""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.cli import main
from morlog.logformat import BlockType, DeleteRecord, OrderingValue
from morlog.logformat.blocks import avro_data_block
from morlog.logformat.index_trailer import Carrier, CumulativeKind
from morlog.readers import LocalFileSource, LogFileReader
from morlog.readers.index import find_tail_index, read_stored_index
from morlog.readers.probe import SliceProbe, probe_log_file
from morlog.writers import LogFileWriter
from morlog.writers.core.indexed import IndexedLogWriter
from morlog.writers.core.logwriter import list_log_files

from .samples import SCHEMA, arrow_schema, next_block_both_ways, record

BASE = "20250101000000000"
#: random histories for the invariant test: more in CI, many more with HYPOTHESIS_PROFILE=slow
INVARIANT_EXAMPLES = {"ci": 150, "slow": 3000}.get(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"), 40)


def _inst(i: int) -> str:
    return f"2025010200{i:07d}"


def _records(keys: list[str], instant: str) -> list[dict[str, Any]]:
    return [record(k, instant, n, seq=n) for n, k in enumerate(keys)]


def _write(w: IndexedLogWriter, keys: list[str], instant: str, carrier: str) -> int:
    recs = _records(keys, instant)
    if carrier == "parquet":
        r = w.append_parquet(pa.Table.from_pylist(recs, schema=arrow_schema()), instant,
                             schema=SCHEMA)
    else:
        r = w.append_avro(recs, SCHEMA, instant)
    return r.blocks[0].offset


def _slice_files(d: Path) -> list[str]:
    return [str(n) for n in list_log_files(str(d), "fg-0", BASE)]


@pytest.mark.parametrize("carrier", ["avro", "parquet"])
def test_each_carrier_finds_every_key_and_only_those(tmp_path: Path, carrier: str) -> None:
    w = IndexedLogWriter(tmp_path, "fg-0", BASE, write_token="0-1-1", checkpoint_every=3)
    where: dict[str, int] = {}
    for b in range(7):
        keys = [str(uuid.UUID(int=b * 1000 + i)) for i in range(40)]
        off = _write(w, keys, _inst(b), carrier)
        where.update({k: off for k in keys})
    (path,) = _slice_files(tmp_path)
    absent = [str(uuid.UUID(int=10**9 + i)) for i in range(300)]
    res = probe_log_file(str(tmp_path / path), list(where) + absent)
    assert res.stored
    for k, off in where.items():
        assert [b.offset for b in res.hits[k].confirmed] == [off]
        assert off in [b.offset for b in res.hits[k].bloom]
    assert not any(res.hits[k].confirmed for k in absent)
    # the cumulative filter keeps most absent keys away from the per-block filters
    assert sum(1 for k in absent if res.hits[k].bloom) < 30
    assert res.probe_reads <= 2


@pytest.mark.parametrize("carrier", ["avro", "parquet"])
def test_stored_index_round_trips_through_the_block(tmp_path: Path, carrier: str) -> None:
    w = IndexedLogWriter(tmp_path, "fg-0", BASE, write_token="0-1-1")
    keys = ["b", "a", "c", "a2"]
    _write(w, keys, _inst(1), carrier)
    (path,) = _slice_files(tmp_path)
    with LogFileReader(str(tmp_path / path)) as r:
        (block,) = list(r.blocks())
        stored = read_stored_index(r.source, block.offset, block.size, block.block_type)
        assert stored is not None
        assert stored.carrier == (Carrier.AVRO if carrier == "avro" else Carrier.PARQUET)
        assert stored.keys().to_pylist() == ["a", "a2", "b", "c"]  # type: ignore[union-attr]
        rng = stored.key_range()
        assert rng is not None and (rng.count, rng.min_key, rng.max_key) == (4, "a", "c")
        cum = stored.cumulative()
        assert cum is not None and cum.kind == CumulativeKind.FULL and cum.scope == BASE
        # stock decoding still sees exactly the records (the trailer is invisible to it)
        assert sorted(block.keys()) == sorted(keys)  # type: ignore[type-var]
        assert block.record_count() == 4
        if carrier == "parquet":
            assert block.keys() == sorted(keys)  # records sorted by key
            from morlog.logformat.parquet_content import parquet_key_value_metadata

            md = parquet_key_value_metadata(block.content())
            assert md[b"hoodie_min_record_key"] == b"a"
            assert md[b"hoodie_max_record_key"] == b"c"


def test_checkpoints_follow_the_policy(tmp_path: Path) -> None:
    w = IndexedLogWriter(tmp_path, "fg-0", BASE, checkpoint_every=4, delta_max_keys=25)
    kinds = []
    for b in range(10):
        n = 30 if b == 6 else 5  # block 6 alone exceeds delta_max_keys
        _write(w, [f"b{b}-{i}" for i in range(n)], _inst(b), "avro")
        (path,) = _slice_files(tmp_path)
        with LocalFileSource(str(tmp_path / path)) as src:
            tail = find_tail_index(src)
            assert tail is not None
            cum = tail.index.cumulative()
            assert cum is not None
            kinds.append(cum.kind)
            assert cum.blocks == b + 1
    F, D = CumulativeKind.FULL, CumulativeKind.DELTA
    # every 4th block (0, 4), and block 6 because the delta would exceed 25 keys
    assert kinds == [F, D, D, D, F, D, F, D, D, D]


def test_compat_path_gives_the_same_answers(tmp_path: Path) -> None:
    indexed_dir, plain_dir = tmp_path / "indexed", tmp_path / "plain"
    w = IndexedLogWriter(indexed_dir, "fg-0", BASE, checkpoint_every=2)
    p = LogFileWriter(plain_dir, "fg-0", BASE)
    keys_by_block = [[f"k{(b * 7 + i) % 50:03d}" for i in range(12)] for b in range(6)]
    for b, keys in enumerate(keys_by_block):
        _write(w, keys, _inst(b), "avro")
        p.append(avro_data_block(_records(keys, _inst(b)), SCHEMA, _inst(b)))
    probe_keys = [f"k{i:03d}" for i in range(60)]
    a = probe_log_file(str(indexed_dir / _slice_files(indexed_dir)[0]), probe_keys)
    b = probe_log_file(str(plain_dir / _slice_files(plain_dir)[0]), probe_keys)
    assert a.stored and not b.stored
    # block offsets differ between the two files: compare by block ordinal
    order_a = {blk.id: i for i, blk in enumerate(a.blocks)}
    order_b = {blk.id: i for i, blk in enumerate(b.blocks)}
    for k in probe_keys:
        assert [order_a[x] for x in a.hits[k].confirmed] == [order_b[x] for x in
                                                             b.hits[k].confirmed]
        assert [order_a[x] for x in a.hits[k].range] == [order_b[x] for x in b.hits[k].range]
        expected = [i for i, keys in enumerate(keys_by_block) if k in keys]
        assert [order_a[x] for x in a.hits[k].confirmed] == expected


def test_mixed_log_old_blocks_then_indexed(tmp_path: Path) -> None:
    plain = LogFileWriter(tmp_path, "fg-0", BASE, write_token="0-1-1")
    old_keys = [f"old{i}" for i in range(20)]
    plain.append(avro_data_block(_records(old_keys, _inst(0)), SCHEMA, _inst(0)))
    w = IndexedLogWriter(tmp_path, "fg-0", BASE, write_token="0-1-1")
    _write(w, [f"new{i}" for i in range(20)], _inst(1), "avro")
    (path,) = _slice_files(tmp_path)
    res = probe_log_file(str(tmp_path / path), old_keys + ["new3", "none"])
    assert res.stored
    assert all(len(res.hits[k].confirmed) == 1 for k in old_keys + ["new3"])
    assert not res.hits["none"].confirmed
    with LocalFileSource(str(tmp_path / path)) as src:
        tail = find_tail_index(src)
        assert tail is not None
        d = tail.index.directory()
        assert d is not None and [b.carrier for b in d.blocks] == [Carrier.NONE, Carrier.AVRO]


def test_torn_tail_then_new_writer_rebuilds_from_compat(tmp_path: Path) -> None:
    w = IndexedLogWriter(tmp_path, "fg-0", BASE, write_token="0-1-1")
    _write(w, ["a", "b"], _inst(0), "avro")
    _write(w, ["c", "d"], _inst(1), "avro")
    (first,) = _slice_files(tmp_path)
    with open(tmp_path / first, "ab") as f:
        f.write(b"#HUDI#\x00\x00\x00\x00\x00\x00\x10\x00torn")  # a crashed writer's block
    assert probe_log_file(str(tmp_path / first), ["a", "d"]).hits["d"].confirmed
    w2 = IndexedLogWriter(tmp_path, "fg-0", BASE, write_token="0-1-1")
    _write(w2, ["e"], _inst(2), "avro")
    files = _slice_files(tmp_path)
    assert len(files) == 2  # rolled over instead of appending after the torn block
    with SliceProbe(str(tmp_path), files) as probe:
        res = probe.probe(["a", "c", "e", "x"])
    assert res.stored and res.cumulative is not None and res.cumulative.blocks == 3
    assert {k: len(h.confirmed) for k, h in res.hits.items()} == {"a": 1, "c": 1, "e": 1, "x": 0}


def test_rollover_mode_spans_files(tmp_path: Path) -> None:
    w = IndexedLogWriter(tmp_path, "fg-0", BASE, write_token="0-1-1", mode="rollover",
                         checkpoint_every=3)
    for b in range(5):
        _write(w, [f"r{b}-{i}" for i in range(10)], _inst(b), "avro" if b % 2 else "parquet")
    files = _slice_files(tmp_path)
    assert len(files) == 5
    with SliceProbe(str(tmp_path), files) as probe:
        res = probe.probe([f"r{b}-3" for b in range(5)] + ["zz"])
    for b in range(5):
        (hit,) = res.hits[f"r{b}-3"].confirmed
        assert hit.file == files[b] and hit.offset == 0
    assert not res.hits["zz"].confirmed
    assert res.probe_reads <= 2


def test_stock_readers_read_indexed_blocks(tmp_path: Path) -> None:
    from .hudi_rs import make_table, read_log_files

    table = tmp_path / "t"
    make_table(table, SCHEMA, record_key="id")
    part = table / "p"
    w = IndexedLogWriter(part, "fg-0", BASE, write_token="0-1-1")
    _write(w, ["a", "b", "c"], _inst(1), "avro")
    _write(w, ["b", "d"], _inst(2), "parquet")
    w.append_delete([DeleteRecord("c", "p", OrderingValue.natural())], _inst(3), schema=SCHEMA)
    _write(w, ["e"], _inst(4), "avro")
    (name,) = _slice_files(part)
    batch = read_log_files(table, [f"p/{name}"])
    rows = {r["id"]: r for r in batch.to_pylist()}
    assert sorted(rows) == ["a", "b", "d", "e"]
    assert rows["b"]["_hoodie_commit_time"] == _inst(2)
    # and morlog's own reading of the same blocks agrees record for record
    with LogFileReader(str(part / name)) as r:
        data = [b for b in r.blocks() if b.block_type in (BlockType.AVRO_DATA,
                                                          BlockType.PARQUET_DATA)]
        assert [len(b.to_arrow()) for b in data] == [3, 2, 1]


def test_cli_index_and_lookup_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    w = IndexedLogWriter(tmp_path, "fg-0", BASE, checkpoint_every=2)
    offs = [_write(w, [f"c{b}-{i}" for i in range(5)], _inst(b), c)
            for b, c in enumerate(["avro", "parquet", "avro"])]
    (path,) = _slice_files(tmp_path)
    full = str(tmp_path / path)
    assert main(["index", full, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [b["offset"] for b in report["blocks"]] == offs
    assert [b["carrier"] for b in report["blocks"]] == ["avro", "parquet", "avro"]
    for b in report["blocks"]:
        assert b["stored"] is True and b["keys"] == 5 and b["bloom_type"] == "SBBF_XXH64"
        assert b["bloom_bytes"] > 0 and b["min_key"] <= b["max_key"]
    cum = report["cumulative"]
    assert cum["stored"] is True and (cum["min_key"], cum["max_key"]) == ("c0-0", "c2-4")
    assert main(["lookup", full, "c1-2", "nope", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["c1-2"] == {"range": [offs[1]], "bloom": [offs[1]], "confirmed": [offs[1]]}
    assert out["nope"]["confirmed"] == []


# --- the invariant, on random histories ---------------------------------------------------

ops = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.sampled_from(["avro", "parquet"]),
                  st.lists(st.integers(0, 60), min_size=1, max_size=15)),
        st.tuples(st.just("delete"), st.lists(st.integers(0, 60), min_size=1, max_size=5)),
        st.tuples(st.just("rollback")),
        st.tuples(st.just("restart")),
        st.tuples(st.just("tear")),
    ),
    min_size=1, max_size=12,
)


@settings(max_examples=INVARIANT_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=ops, mode=st.sampled_from(["append", "rollover"]),
       every=st.integers(1, 4))
def test_cumulative_index_covers_every_key_of_the_logs(tmp_path_factory: pytest.TempPathFactory,
                                                       history: list[tuple[Any, ...]],
                                                       mode: str, every: int) -> None:
    d = tmp_path_factory.mktemp("slice")

    def writer() -> IndexedLogWriter:
        return IndexedLogWriter(d, "fg-0", BASE, write_token="0-1-1",
                                mode=mode, checkpoint_every=every, fsync=False)  # type: ignore[arg-type]

    w = writer()
    written: dict[str, set[tuple[str, int]]] = {}  # key -> blocks holding it
    last_instant = None
    for step, op in enumerate(history):
        inst = _inst(step)
        if op[0] == "write":
            keys = sorted({f"key-{n:03d}" for n in op[2]})
            recs = _records(keys, inst)
            if op[1] == "parquet":
                r = w.append_parquet(pa.Table.from_pylist(recs, schema=arrow_schema()), inst,
                                     schema=SCHEMA)
            else:
                r = w.append_avro(recs, SCHEMA, inst)
            for k in keys:
                written.setdefault(k, set()).add((os.path.basename(r.path),
                                                  r.blocks[0].offset))
            last_instant = inst
        elif op[0] == "delete":
            w.append_delete([DeleteRecord(f"key-{n:03d}", "p") for n in op[1]], inst)
        elif op[0] == "rollback" and last_instant is not None:
            w.append_rollback(inst, last_instant)  # rolled-back keys may stay candidates
        elif op[0] == "restart":
            w = writer()
        elif op[0] == "tear":
            files = _slice_files(d)
            if files and mode == "append":
                with open(d / files[-1], "ab") as f:
                    f.write(b"#HUDI#\x00\x00\x00\x00\x00\x00\x00\x40")
                w = writer()
        files = _slice_files(d)
        if not files:
            continue
        probe_keys = [f"key-{n:03d}" for n in range(0, 70)]
        with SliceProbe(str(d), files) as probe:
            res = probe.probe(probe_keys)
        for k in probe_keys:
            got = {(b.file, b.offset) for b in res.hits[k].confirmed}
            assert got == written.get(k, set()), (k, step)
            bloom = {(b.file, b.offset) for b in res.hits[k].bloom}
            rng = {(b.file, b.offset) for b in res.hits[k].range}
            assert got <= bloom <= rng


@pytest.mark.parametrize("carrier", ["avro", "parquet"])
def test_join_and_per_block_confirmation_agree(tmp_path: Path, carrier: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import morlog.readers.probe as probe_mod

    w = IndexedLogWriter(tmp_path, "fg-0", BASE, checkpoint_every=3)
    for b in range(6):  # overlapping keys: updates land in several blocks
        _write(w, [f"j{(b * 5 + i) % 40:02d}" for i in range(12)], _inst(b), carrier)
    (path,) = _slice_files(tmp_path)
    keys = [f"j{i:02d}" for i in range(50)]
    monkeypatch.setattr(probe_mod, "JOIN_RATIO", 10**9)
    per_block = probe_log_file(str(tmp_path / path), keys)
    monkeypatch.setattr(probe_mod, "JOIN_RATIO", 0)
    joined = probe_log_file(str(tmp_path / path), keys)
    assert (per_block.masks.confirmed == joined.masks.confirmed).all()
    assert (per_block.masks.range == joined.masks.range).all()
    assert (per_block.masks.bloom <= joined.masks.bloom).all()
    assert sum(len(v) for v in joined.found().values()) == int(joined.masks.confirmed.sum())
    assert any(len(v) > 1 for v in joined.found().values())


def test_join_maps_hits_to_their_blocks_when_blocks_are_passed_over(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks whose key range holds no candidate are left out of the join: every hit still
    lands on the block that lists the key (the hits are mapped back through the lists'
    ends, not a copy of every list)."""
    import morlog.readers.probe as probe_mod

    w = IndexedLogWriter(tmp_path, "fg-0", BASE, checkpoint_every=4)
    ranges = ["a", "m", "b", "n", "a", "z"]
    for b, prefix in enumerate(ranges):
        _write(w, [f"{prefix}{(b * 3 + i) % 20:02d}" for i in range(10)], _inst(b), "avro")
    (path,) = _slice_files(tmp_path)
    keys = [f"{p}{i:02d}" for p in "abz" for i in range(20)]
    monkeypatch.setattr(probe_mod, "JOIN_RATIO", 10**9)
    per_block = probe_log_file(str(tmp_path / path), keys)
    monkeypatch.setattr(probe_mod, "JOIN_RATIO", 0)
    joined = probe_log_file(str(tmp_path / path), keys)
    assert (per_block.masks.confirmed == joined.masks.confirmed).all()
    # blocks 1 and 3 (m.., n..) hold none of the keys; the others each confirm theirs
    assert joined.masks.confirmed.sum(axis=1).tolist() == [10, 0, 10, 0, 10, 10]


@pytest.mark.parametrize("carrier", ["avro", "parquet"])
def test_big_blocks_probe_in_two_reads_and_torn_ones_fall_back(tmp_path: Path,
                                                                carrier: str) -> None:
    w = IndexedLogWriter(tmp_path, "fg-0", BASE, checkpoint_every=2, fsync=False)
    keys_of = []
    for b in range(3):  # each block is far larger than the 64 KiB tail window
        keys = [str(uuid.UUID(int=(b + 1) * 10**6 + i)) for i in range(1500)]
        recs = [record(k, _inst(b), i, note=hashlib.sha256(k.encode()).hexdigest() * 2)
                for i, k in enumerate(keys)]
        if carrier == "parquet":
            w.append_parquet(pa.Table.from_pylist(recs, schema=arrow_schema()), _inst(b),
                             schema=SCHEMA)
        else:
            w.append_avro(recs, SCHEMA, _inst(b))
        keys_of.append(keys)
    (path,) = _slice_files(tmp_path)
    full = tmp_path / path
    with LogFileReader(str(full)) as r:
        assert min(b.size for b in r.blocks()) > 64 * 1024
    probe_keys = [k[7] for k in keys_of] + ["absent"]
    res = probe_log_file(str(full), probe_keys)
    assert res.stored and res.probe_reads <= 2
    assert [len(res.hits[k].confirmed) for k in probe_keys] == [1, 1, 1, 0]
    with open(full, "r+b") as f:  # a crash tore the newest block's last bytes
        f.truncate(full.stat().st_size - 10)
    torn = probe_log_file(str(full), probe_keys)
    assert not torn.stored  # the torn tail is not trusted: recomputed from the records
    assert [len(torn.hits[k].confirmed) for k in probe_keys] == [1, 1, 0, 0]


def test_table_v8_slices_span_instants(tmp_path: Path) -> None:
    """Table version 8+: one set of log files per delta commit, all in one file slice."""
    first = IndexedLogWriter(tmp_path, "fg-0", _inst(1), scope=BASE, write_token="0-1-1")
    _write(first, ["a", "b"], _inst(1), "avro")
    older = [str(n) for n in list_log_files(str(tmp_path), "fg-0", _inst(1))]
    # a writer that knows the slice's earlier files covers them in its cumulative index
    second = IndexedLogWriter(tmp_path, "fg-0", _inst(2), scope=BASE, write_token="0-1-1",
                              slice_log_files=older)
    _write(second, ["c"], _inst(2), "avro")
    newer = [str(n) for n in list_log_files(str(tmp_path), "fg-0", _inst(2))]
    with SliceProbe(str(tmp_path), older + newer) as probe:
        res = probe.probe(["a", "c", "x"])
    assert res.cumulative is not None and res.cumulative.blocks == 2
    assert [len(res.hits[k].confirmed) for k in "acx"] == [1, 1, 0]
    # a writer that did not know them: the probe notices the uncovered file and recomputes
    third = IndexedLogWriter(tmp_path, "fg-0", _inst(3), scope=BASE, write_token="0-1-1")
    _write(third, ["d"], _inst(3), "avro")
    newest = [str(n) for n in list_log_files(str(tmp_path), "fg-0", _inst(3))]
    with SliceProbe(str(tmp_path), older + newer + newest) as probe:
        res = probe.probe(["a", "b", "c", "d", "x"])
    assert [len(res.hits[k].confirmed) for k in "abcdx"] == [1, 1, 1, 1, 0]


def test_damaged_stored_index_never_hides_keys(tmp_path: Path) -> None:
    from morlog.readers.index import UnusableIndexWarning

    w = IndexedLogWriter(tmp_path, "fg-0", BASE, write_token="0-1-1")
    _write(w, [f"d{i}" for i in range(20)], _inst(0), "avro")
    (path,) = _slice_files(tmp_path)
    with LogFileReader(str(tmp_path / path)) as r:
        (block,) = list(r.blocks())
        stored = read_stored_index(r.source, block.offset, block.size, block.block_type)
        assert stored is not None
        from morlog.logformat.index_trailer import Section

        keys_at = stored.section_range(Section.KEYS)
    assert keys_at is not None
    data = bytearray((tmp_path / path).read_bytes())
    data[keys_at[0] + 20] ^= 0xFF  # one flipped byte inside the stored key list
    (tmp_path / path).write_bytes(bytes(data))
    # a delta needs no key list of the checkpoint block: the writer never reads it
    w2 = IndexedLogWriter(tmp_path, "fg-0", BASE, write_token="0-1-1")
    _write(w2, ["e0"], _inst(1), "avro")
    # a full checkpoint needs every block's hashes: the damaged list is recomputed
    with pytest.warns(UnusableIndexWarning):
        w3 = IndexedLogWriter(tmp_path, "fg-0", BASE, write_token="0-1-1", checkpoint_every=1)
        _write(w3, ["e1"], _inst(2), "avro")
    probe = ["d3", "d17", "e0", "e1", "zz"]
    with pytest.warns(UnusableIndexWarning):
        res = probe_log_file(str(tmp_path / path), probe)
    assert [len(res.hits[k].confirmed) for k in probe] == [1, 1, 1, 1, 0]
    with LocalFileSource(str(tmp_path / path)) as src:
        tail = find_tail_index(src)
        assert tail is not None
        cum = tail.index.cumulative()
        assert cum is not None and cum.kind == CumulativeKind.FULL and cum.keys == 22


def test_a_new_writer_continues_a_large_checkpoint(tmp_path: Path) -> None:
    """A fresh writer (new process) adopts the stored checkpoint even when the cumulative
    section lies outside the first tail read: its next block stays a delta."""
    kw: dict[str, Any] = dict(checkpoint_every=8, delta_max_keys=10**6, fsync=False)
    keys_of = [[f"{b}-{i:06d}" for i in range(20_000)] for b in range(4)]
    first = IndexedLogWriter(tmp_path, "fg-0", BASE, **kw)
    for b in range(3):
        first.log.append(avro_data_block([record(k, _inst(b), 0) for k in keys_of[b]],
                                         SCHEMA, _inst(b)))
        # plain blocks, then indexed ones carry the cumulative over all of them
    second = IndexedLogWriter(tmp_path, "fg-0", BASE, **kw)
    _write(second, keys_of[0][:10] + [f"x{i}" for i in range(5)], _inst(3), "avro")
    third = IndexedLogWriter(tmp_path, "fg-0", BASE, **kw)
    _write(third, [f"y{i}" for i in range(5)], _inst(4), "avro")
    (path,) = _slice_files(tmp_path)
    with LocalFileSource(str(tmp_path / path)) as src:
        tail = find_tail_index(src)
        assert tail is not None
        cum = tail.index.cumulative()
        assert cum is not None and cum.blocks == 5
        assert cum.kind == CumulativeKind.DELTA  # the second writer's checkpoint adopted
    assert third.state.checkpoint_at == 3
    probe = [keys_of[1][7], keys_of[2][19_999], "x3", "y4", "absent"]
    res = probe_log_file(str(tmp_path / path), probe)
    assert [len(res.hits[k].confirmed) for k in probe] == [1, 1, 1, 1, 0]


@settings(max_examples=max(20, INVARIANT_EXAMPLES // 2), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=ops, mode=st.sampled_from(["append", "rollover"]),
       every=st.integers(1, 4), carrier=st.sampled_from(["avro", "parquet"]))
def test_state_from_the_tail_writes_the_same_bytes_as_a_full_scan(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
        history: list[tuple[Any, ...]], mode: str, every: int, carrier: str) -> None:
    """A writer that rebuilds its state from the newest block's stored index (two reads)
    writes byte for byte the block a writer that scanned every block would write."""


    d = tmp_path_factory.mktemp("slice")
    kw: dict[str, Any] = dict(write_token="0-1-1", mode=mode, checkpoint_every=every,
                              fsync=False)
    w = IndexedLogWriter(d, "fg-0", BASE, **kw)
    for step, op in enumerate(history):
        inst = _inst(step)
        if op[0] == "write":
            _write(w, sorted({f"key-{n:03d}" for n in op[2]}), inst, op[1])
        elif op[0] == "delete":
            w.append_delete([DeleteRecord(f"key-{n:03d}", "p") for n in op[1]], inst)
        elif op[0] in ("restart", "tear"):
            w = IndexedLogWriter(d, "fg-0", BASE, **kw)
    keys = ["key-001", "key-500", "new-key"]
    next_block_both_ways(d, lambda at: IndexedLogWriter(at, "fg-0", BASE, **kw),
                         lambda w: _write(w, keys, _inst(99), carrier))


def test_object_store_probes_coalesce_the_index_parts_they_read(tmp_path: Path) -> None:
    """Where requests are dear (object stores), the per-block filter and key parts a probe
    needs are fetched in a few coalesced reads; the answers do not change."""
    w = IndexedLogWriter(tmp_path, "fg-0", BASE, fsync=False)
    keys_of = []
    for b in range(30):
        # random keys: every block's min/max spans nearly the whole key space
        keys = [str(uuid.UUID(bytes=hashlib.sha256(f"{b}/{i}".encode()).digest()[:16]))
                for i in range(100)]
        _write(w, keys, _inst(b), "avro")
        keys_of.append(keys)
    (name,) = _slice_files(tmp_path)

    def opener(gap: int) -> Any:
        def open_(n: str) -> LocalFileSource:
            src = LocalFileSource(str(tmp_path / n))
            src.coalesce_gap = gap
            return src
        return open_

    cases = {"one key": [keys_of[17][3]], "absent": ["not-there"],
             "batch": [k for ks in keys_of for k in ks[:5]] + ["x", "y"]}
    for label, probe_keys in cases.items():
        with SliceProbe(str(tmp_path), [name], opener=opener(0)) as p:
            plain = p.probe(probe_keys)
        with SliceProbe(str(tmp_path), [name], opener=opener(1 << 20)) as p:
            merged = p.probe(probe_keys)
        assert (plain.masks.confirmed == merged.masks.confirmed).all(), label
        assert (plain.masks.bloom == merged.masks.bloom).all(), label
        assert merged.reads <= 4, (label, merged.reads)
        if label != "absent":
            assert plain.reads > 10, (label, plain.reads)  # one read per block part


# --- the CHECKSUM section (spec/index.md §4.12) ------------------------------------------------


def _written_blocks(tmp_path: Path, carrier: str) -> tuple[Path, list[Any]]:
    w = IndexedLogWriter(tmp_path, "fg-0", BASE, write_token="0-1-1")
    for i in range(3):
        _write(w, [f"k{i}-{j}" for j in range(40)], _inst(i), carrier)
    (path,) = [tmp_path / n for n in _slice_files(tmp_path)]
    with LogFileReader(str(path)) as r:
        return path, [b for b in r.blocks() if b.block_type.is_data]


@pytest.mark.parametrize("carrier", ["avro", "parquet"])
def test_block_checksum_is_the_crc_of_head_and_records(tmp_path: Path, carrier: str) -> None:
    """Every block the writer writes carries a CHECKSUM, recomputed here from §4.12.2 with
    zlib and pyarrow alone: the head, then the records (Avro: up to the trailer; Parquet: the
    whole file with the morlog.index text counted as zeros)."""
    import base64
    import struct
    import zlib

    import pyarrow.parquet as pq

    path, blocks = _written_blocks(tmp_path, carrier)
    data = path.read_bytes()
    assert len(blocks) == 3
    for b in blocks:
        end = b.content_offset + b.content_length
        content = data[b.content_offset : end]
        if carrier == "avro":
            (t_len,) = struct.unpack_from("<Q", data, end - 32)
            trailer = content[-t_len:]
            covered = data[b.offset + 14 : end - t_len]
        else:
            text = pq.read_metadata(pa.BufferReader(content)).metadata[b"morlog.index"]
            trailer = base64.b64decode(text)
            footer_len = struct.unpack_from("<i", content, len(content) - 8)[0]
            at = content.index(text, len(content) - 8 - footer_len)
            covered = (data[b.offset + 14 : b.content_offset] + content[:at]
                       + bytes(len(text)) + content[at + len(text) :])
        # CHECKSUM is the last section: its 13 bytes end where the section table starts
        (count,) = struct.unpack_from("<I", trailer, len(trailer) - 24)
        table_at = len(trailer) - 32 - 24 * count
        sid, _, _, off, length = struct.unpack_from("<HHIQQ", trailer, table_at + 24 * (count - 1))
        assert (sid, length, off + length) == (7, 13, table_at)
        algorithm, n, value = struct.unpack_from("<BQI", trailer, off)
        assert (algorithm, n, value) == (1, len(covered), zlib.crc32(covered))
        assert b.verify() is True
        assert b.to_arrow().num_rows == 40


@pytest.mark.parametrize("carrier", ["avro", "parquet"])
def test_block_checksum_mismatch_is_a_corrupt_block(tmp_path: Path, carrier: str) -> None:
    """A byte changed in a block's records: decoding it is ChecksumError (at the content's
    first byte, naming the file); deciding which blocks count skips it as corrupt with a
    warning naming file and offset, and keeps the others."""
    from morlog.logformat.errors import ChecksumError, CorruptBlockWarning
    from morlog.readers.slice_blocks import effective_blocks

    path, blocks = _written_blocks(tmp_path, carrier)
    victim = blocks[1]
    data = bytearray(path.read_bytes())
    # a byte of the first record (Avro: after version, count and length; Parquet: in the
    # first data page, after PAR1 and the page header)
    data[victim.content_offset + (14 if carrier == "avro" else 40)] ^= 0x01
    path.write_bytes(bytes(data))
    with LogFileReader(str(path)) as r:
        now = [b for b in r.blocks() if b.block_type.is_data]
        assert [b.offset for b in now] == [b.offset for b in blocks]  # the framing is intact
        with pytest.raises(ChecksumError) as info:
            now[1].to_arrow()
        assert (info.value.path, info.value.offset) == (str(path), victim.content_offset)

        class Rules:
            table_version = 6
            as_of = None

        with pytest.warns(CorruptBlockWarning, match=rf"@{victim.offset}: corrupt block"):
            kept = effective_blocks(now, None, Rules(), verify=True)
        assert [b.offset for b in kept] == [blocks[0].offset, blocks[2].offset]
        assert [b.to_arrow().num_rows for b in kept] == [40, 40]


def test_blocks_without_checksum_are_read_unverified(tmp_path: Path) -> None:
    """A Parquet block whose trailer has no CHECKSUM (written before §4.12) reads as before."""
    import base64

    from morlog.logformat.framing import encode_block
    from morlog.logformat.index_trailer import Section, encode_trailer, parse_layout, section_bytes
    from morlog.logformat.parquet_content import (
        decode_parquet_content,
        encode_parquet_content,
        parquet_key_value_metadata,
    )
    from morlog.readers import BytesSource

    path, blocks = _written_blocks(tmp_path, "parquet")
    b = blocks[0]
    content = b.content()
    md = parquet_key_value_metadata(content)
    trailer = base64.b64decode(md[b"morlog.index"])
    layout = parse_layout(trailer)
    old = encode_trailer([(e.id, bytes(section_bytes(trailer, 0, e))) for e in layout.sections
                          if e.id != Section.CHECKSUM])
    md[b"morlog.index"] = base64.b64encode(old)
    stale = encode_parquet_content(decode_parquet_content(content), key_value_metadata={
        k.decode(): v.decode() for k, v in md.items() if not k.startswith(b"ARROW")})
    frame = b.frame()
    data = encode_block(type(frame)(frame.block_type, frame.header, stale))
    (old_block,) = LogFileReader(BytesSource(data, "old")).blocks()
    assert old_block.verify() is False
    assert old_block.to_arrow().equals(b.to_arrow())
