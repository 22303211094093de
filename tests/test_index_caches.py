"""Per-process caches of the index paths whose work grew with a slice's logs at every commit.

Readers (readers/probe.py ``_KeyListCache``): key lists of stored block indexes are decoded
once; a second probe of the same slice decodes no key list again and answers the same; a block
rewritten with other keys is never answered from the cache. Writers (writers/core/indexed.py
``_MergedCache``): the next writer of a slice starts its full checkpoint from the hashes the
last one merged; the files written are byte for byte those written without the cache."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from morlog.readers import probe as probe_mod
from morlog.readers.probe import SliceProbe
from morlog.writers.core import indexed as indexed_mod
from morlog.writers.core.indexed import IndexedLogWriter
from morlog.writers.core.logwriter import list_log_files

from .samples import SCHEMA, record

BASE = "20250101000000000"


def _write_slice(d: Path, prefix: str, blocks: int = 4, per: int = 50) -> list[str]:
    w = IndexedLogWriter(d, "fg-0", BASE, write_token="0-1-1", checkpoint_every=100)
    for b in range(blocks):
        instant = f"2025010200{b:07d}"
        recs: list[dict[str, Any]] = [record(f"{prefix}{b}-{i:03d}", instant, i, seq=i)
                                      for i in range(per)]
        w.append_avro(recs, SCHEMA, instant)
    return [str(n) for n in list_log_files(str(d), "fg-0", BASE)]


def _probe(d: Path, files: list[str], keys: list[str]) -> Any:
    with SliceProbe(str(d), files) as p:
        return p.probe(keys)


@pytest.fixture(autouse=True)
def _cold_cache() -> None:
    for cache in (getattr(probe_mod, "_KEY_LISTS", None),
                  getattr(indexed_mod, "_MERGED", None)):
        if cache is not None:
            _clear(cache)


def _clear(cache: Any) -> None:
    with cache.lock:
        cache.items.clear()
        cache.bytes = 0


def _count_decodes(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[int]:
    """The lengths of the key lists ``module.decode_keys`` decodes from now on."""
    decoded: list[int] = []
    real = module.decode_keys

    def counting(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        decoded.append(len(out))
        return out

    monkeypatch.setattr(module, "decode_keys", counting)
    return decoded


def test_second_probe_decodes_no_key_list_again_and_answers_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    decoded = _count_decodes(monkeypatch, probe_mod)
    files = _write_slice(tmp_path, "k")
    # every block holds candidates: each block's key list is needed
    keys = [f"k{b}-{i:03d}" for b in range(4) for i in range(0, 50, 5)] + ["k9-none"]
    first = _probe(tmp_path, files, keys)
    at_first = len(decoded)
    assert at_first >= 3, decoded  # the tail block's keys may come with the stored index
    second = _probe(tmp_path, files, keys)
    assert len(decoded) == at_first, "a key list decoded again"
    assert second.hits == first.hits
    assert (second.masks.confirmed == first.masks.confirmed).all()
    assert sum(len(h.confirmed) for h in second.hits.values()) == len(keys) - 1
    assert second.keys == keys


def test_a_rewritten_block_is_never_answered_from_the_cache(tmp_path: Path) -> None:
    d = tmp_path / "p"
    files = _write_slice(d, "a")
    keys = [f"a{b}-{i:03d}" for b in range(4) for i in range(50)]
    assert sum(len(h.confirmed) for h in _probe(d, files, keys).hits.values()) == len(keys)
    # the same directory, file names and block layout, other keys of the same lengths
    shutil.rmtree(d)
    assert _write_slice(d, "b") == files
    res = _probe(d, files, keys + [f"b{b}-{i:03d}" for b in range(4) for i in range(50)])
    found = {k for k, h in res.hits.items() if h.confirmed}
    assert found == {f"b{b}-{i:03d}" for b in range(4) for i in range(50)}


@pytest.mark.parametrize("delta_max_keys", [1, 45])
def test_writers_of_later_commits_merge_only_the_new_blocks_same_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, delta_max_keys: int) -> None:
    """Each commit a new writer (state rebuilt from the stored directory), full checkpoints
    at every block (delta_max_keys=1) or every few: the files equal those written with the
    cache emptied before each commit, and the cached run reads fewer key lists."""
    decoded = _count_decodes(monkeypatch, indexed_mod)
    reads = {}
    for run, cold in (("cold", True), ("warm", False)):
        d = tmp_path / run
        decoded.clear()
        for b in range(7):
            if cold:
                _clear(getattr(indexed_mod, "_MERGED", probe_mod._KEY_LISTS))
            w = IndexedLogWriter(d, "fg-0", BASE, write_token="0-1-1", checkpoint_every=3,
                                 delta_max_keys=delta_max_keys)
            instant = f"2025010200{b:07d}"
            w.append_avro([record(f"w{b}-{i:03d}", instant, i, seq=i) for i in range(30)],
                          SCHEMA, instant)
        reads[run] = len(decoded)
    cold_files = sorted(p.name for p in (tmp_path / "cold").iterdir())
    assert cold_files == sorted(p.name for p in (tmp_path / "warm").iterdir())
    for name in cold_files:
        assert (tmp_path / "cold" / name).read_bytes() == (tmp_path / "warm" / name).read_bytes()
    assert reads["warm"] < reads["cold"], reads
    # and the slice answers for every key written
    files = [str(n) for n in list_log_files(str(tmp_path / "warm"), "fg-0", BASE)]
    keys = [f"w{b}-{i:03d}" for b in range(7) for i in range(30)]
    res = _probe(tmp_path / "warm", files, keys)
    assert all(h.confirmed for h in res.hits.values())
