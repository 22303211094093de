"""Issue 16: fuzzing table files. Whatever the bytes of ``hoodie.properties``, a timeline file,
a block's Avro schema header, a base-key index, or any file of a real Hudi table, opening the
table, listing its file slices, reading it and tagging keys raise nothing but
:class:`MorlogError` (and a damaged base-key index changes no answer).

Sized for CI (tens of examples each); ``HYPOTHESIS_PROFILE=slow`` runs 20 times more.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from morlog.logformat.errors import MorlogError, MorlogWarning
from morlog.readers.lookup import KeyTagger
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.options import WriteConfig
from tests.hudi_fixtures import ROOT, SKIP_REASON

SLOW = os.environ.get("HYPOTHESIS_PROFILE") == "slow"
SCHEMA = pa.schema([("id", pa.string()), ("region", pa.string()), ("ts", pa.int64()),
                    ("amount", pa.float64())])


def _n(ci: int) -> int:
    return ci * 20 if SLOW else ci


def _fuzz(n: int) -> Any:
    return settings(max_examples=_n(n), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


def _batch(ids: range, ts: int) -> pa.Table:
    return pa.table({"id": [f"k{i}" for i in ids], "region": ["eu"] * len(ids),
                     "ts": [ts] * len(ids), "amount": [float(i) for i in ids]}, schema=SCHEMA)


def only_typed_errors(root: Path, keys: list[str] | None = None) -> None:
    """Open, list, read (snapshot, read-optimized, incremental) and tag: each step may
    refuse, but only with MorlogError."""
    keys = keys or ["k1", "k7", "nope"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            table = Table(str(root))
        except MorlogError:
            return
        for step in (table.file_slices, table.read, table.read_optimized,
                     lambda: table.incremental("earliest"),
                     lambda: table.incremental("earliest", fallback=True),
                     lambda: KeyTagger(table).tag(keys), lambda: KeyTagger(Table(str(root)))
                     .tag(keys, [table.partitions()[0] if table.partitions() else ""]
                          * len(keys))):
            try:
                step()
            except MorlogError:
                pass


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two morlog tables (Avro and Parquet carriers) with a base file, logs, a rollback."""
    out = {}
    for carrier in ("avro", "parquet"):
        root = tmp_path_factory.mktemp(carrier) / "t"
        t = MorTable.create(str(root), SCHEMA, key_field="id", partition_field="region",
                            ordering_field="ts", config=WriteConfig(fsync=False,
                                                                    carrier=carrier))
        t.upsert(_batch(range(5), 1))
        t.upsert(_batch(range(3, 9), 2))
        t.delete(_batch(range(0, 1), 3))
        (root / ".hoodie" / "20990101000000000.deltacommit.requested").write_text("")
        t.upsert(_batch(range(8, 10), 4))  # rolls the fake pending instant back
        out[carrier] = root
    return out


class _Copy:
    def __init__(self, src: Path) -> None:
        self.dir = tempfile.mkdtemp(prefix="morlog-fuzz-")
        self.root = Path(self.dir) / "t"
        shutil.copytree(src, self.root)

    def __enter__(self) -> Path:
        return self.root

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


# --- hoodie.properties ---------------------------------------------------------------------

_PROP_KEYS = ["hoodie.table.version", "hoodie.table.type", "hoodie.table.recordkey.fields",
              "hoodie.table.partition.fields", "hoodie.table.precombine.field",
              "hoodie.table.create.schema", "hoodie.populate.meta.fields",
              "hoodie.record.merge.mode", "hoodie.timeline.layout.version"]
_VALUES = st.one_of(st.text(max_size=20), st.sampled_from(
    ["six", "", "6", "8", "-1", "99999999999999999999", "MERGE_ON_READ", "id,,", ",",
     "false", "{", "[" * 3000, '{"type":"record","name":"r","fields":[]}', "\\u12",
     "\\", "id:simple"]))


@_fuzz(40)
@given(edits=st.dictionaries(st.sampled_from(_PROP_KEYS), _VALUES, min_size=1, max_size=3),
       junk=st.binary(max_size=30), carrier=st.sampled_from(["avro", "parquet"]))
def test_fuzz_hoodie_properties(built: dict[str, Path], edits: dict[str, str], junk: bytes,
                                carrier: str) -> None:
    with _Copy(built[carrier]) as root:
        p = root / ".hoodie" / "hoodie.properties"
        lines = [ln for ln in p.read_text().splitlines()
                 if ln.split("=", 1)[0] not in edits]
        p.write_bytes(("\n".join(lines + [f"{k}={v}" for k, v in edits.items()]) + "\n")
                      .encode("utf-8", "surrogatepass") + junk)
        only_typed_errors(root)
        try:
            MorTable(str(root))
        except MorlogError:
            pass


@_fuzz(30)
@given(data=st.binary(max_size=400))
def test_fuzz_hoodie_properties_random_bytes(built: dict[str, Path], data: bytes) -> None:
    with _Copy(built["avro"]) as root:
        (root / ".hoodie" / "hoodie.properties").write_bytes(data)
        only_typed_errors(root)


# --- timeline files ------------------------------------------------------------------------

_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda c: st.lists(c, max_size=4) | st.dictionaries(
                         st.sampled_from(["partitionToWriteStats", "partitionToReplaceFileIds",
                                          "commitsRollback", "instantsRollback", "commitTime",
                                          "morlogFileGroups", "partition", "fileId", "path",
                                          "x"]), c, max_size=4), max_leaves=12)
_TIMELINE_BYTES = st.one_of(
    _JSON.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=200),
    st.binary(max_size=200).map(lambda b: b"Obj\x01" + b),
    st.integers(1000, 200_000).map(lambda n: b"[" * n + b"]" * n),
    st.integers(1000, 200_000).map(lambda n: b'{"a":' * n + b"1" + b"}" * n),
    st.sampled_from([b'{"commitsRollback": [{"x": 1}]}', b'{"instantsRollback": [1, null]}',
                     b'{"partitionToReplaceFileIds": {"eu": 5}}',
                     b'{"partitionToReplaceFileIds": []}', b'{"commitsRollback": 7}']))


@_fuzz(60)
@given(action=st.sampled_from(["rollback", "replacecommit", "deltacommit", "restore",
                               "deltacommit.inflight", "commit", "clean"]),
       data=_TIMELINE_BYTES, carrier=st.sampled_from(["avro", "parquet"]),
       replace_existing=st.booleans())
def test_fuzz_timeline_files(built: dict[str, Path], action: str, data: bytes, carrier: str,
                             replace_existing: bool) -> None:
    with _Copy(built[carrier]) as root:
        hoodie = root / ".hoodie"
        existing = sorted(hoodie.glob(f"*.{action}"))
        target = existing[-1] if replace_existing and existing else (
            hoodie / f"20990101000000001.{action}")
        target.write_bytes(data)
        only_typed_errors(root)


# --- the Avro schema header of a block -----------------------------------------------------


def _schema_span(data: bytes) -> tuple[int, int]:
    start = data.find(b'{"type":"record"')
    assert start >= 0, "no schema header"
    depth = 0
    for i in range(start, len(data)):
        depth += {ord("{"): 1, ord("}"): -1}.get(data[i], 0)
        if depth == 0:
            return start, i + 1
    return start, len(data)


@_fuzz(60)
@given(where=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(1, 255)),
                      min_size=1, max_size=3),
       carrier=st.sampled_from(["avro", "parquet"]))
def test_fuzz_block_schema_header(built: dict[str, Path], where: list[tuple[float, int]],
                                  carrier: str) -> None:
    with _Copy(built[carrier]) as root:
        for log in sorted((root / "eu").glob(".*.log.*")):
            data = bytearray(log.read_bytes())
            start, end = _schema_span(bytes(data))
            for frac, xor in where:
                data[start + int(frac * (end - start))] ^= xor
            log.write_bytes(bytes(data))
        only_typed_errors(root)


# --- real Hudi tables ----------------------------------------------------------------------


def _fixture_tables() -> list[Path]:
    if ROOT is None:
        return []
    out = []
    for d in sorted((ROOT / "tables").iterdir()):
        inner = d / d.name
        if inner.is_dir() and (inner / ".hoodie" / "hoodie.properties").is_file():
            out.append(inner)
    return out


def _files(root: Path) -> Iterator[Path]:
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.stat().st_size <= 2_000_000 and "__MACOSX" not in p.parts:
            yield p


TABLES = _fixture_tables()


@pytest.mark.skipif(ROOT is None, reason=SKIP_REASON)
@pytest.mark.skipif(ROOT is not None and not TABLES, reason="no fixture tables found")
@_fuzz(60)
@given(pick=st.integers(0, 10_000), which=st.integers(0, 10_000),
       how=st.sampled_from(["flip", "truncate", "junk", "empty"]),
       at=st.floats(0, 1, exclude_max=True), junk=st.binary(min_size=1, max_size=64))
def test_fuzz_real_fixture_tables(pick: int, which: int, how: str, at: float, junk: bytes
                                  ) -> None:
    src = TABLES[pick % len(TABLES)]
    with _Copy(src) as root:
        files = [p for p in _files(root) if ".hoodie/metadata" not in str(p)] or list(
            _files(root))
        target = files[which % len(files)]
        data = bytearray(target.read_bytes())
        i = int(at * len(data)) if data else 0
        if how == "flip" and data:
            data[i] ^= junk[0] or 1
        elif how == "truncate":
            del data[i:]
        elif how == "junk":
            data[i : i + len(junk)] = junk
        else:
            data = bytearray()
        target.write_bytes(bytes(data))
        only_typed_errors(root)


# --- base-key indexes (spec/index.md §12) --------------------------------------------------

_TAG_KEYS = [f"k{i}" for i in range(12)] + ["nope"]
_PRISTINE: dict[str, Any] = {}


def _index_files(root: Path) -> list[Path]:
    return sorted((root / ".hoodie" / "morlog" / "base_keys").rglob("*.keys"))


def _answers(root: Path) -> Any:
    """Tags (without and with the keys' partition) and the rows' keys."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = Table(str(root))
        return (KeyTagger(table).tag(_TAG_KEYS).locations,
                KeyTagger(table).tag(_TAG_KEYS, ["eu"] * len(_TAG_KEYS)).locations,
                sorted(table.read().column("id").to_pylist()))


@_fuzz(40)
@given(how=st.sampled_from(["flip", "truncate", "junk", "empty", "insert", "other-file",
                            "other-size", "directory"]),
       which=st.integers(0, 100), at=st.floats(0, 1, exclude_max=True),
       junk=st.binary(min_size=1, max_size=64), carrier=st.sampled_from(["avro", "parquet"]))
def test_fuzz_base_key_indexes(built: dict[str, Path], how: str, which: int, at: float,
                               junk: bytes, carrier: str) -> None:
    """A damaged, stale or foreign base-key index never changes a tag or a row, and never
    lets anything but a MorlogError out (the reader warns and reads the base file)."""
    from morlog.logformat.base_keys import decode_base_keys, encode_base_keys
    from morlog.readers.base_keys import BaseKeysWarning

    if carrier not in _PRISTINE:
        _PRISTINE[carrier] = _answers(built[carrier])
    with _Copy(built[carrier]) as root:
        indexes = _index_files(root)
        assert indexes, "the fixture's base files have indexes"
        target = indexes[which % len(indexes)]
        data = bytearray(target.read_bytes())
        i = int(at * len(data))
        if how == "flip":
            data[i] ^= junk[0] or 1
        elif how == "truncate":
            del data[i:]
        elif how == "junk":
            data[i : i + len(junk)] = junk
        elif how == "insert":
            data[i:i] = junk
        elif how == "empty":
            data = bytearray()
        elif how in ("other-file", "other-size"):  # valid bytes, but not this file's index
            bk = decode_base_keys(bytes(data))
            name = bk.base_file + ("x" if how == "other-file" else "")
            size = bk.base_size + (len(junk) if how == "other-size" else 0)
            data = bytearray(encode_base_keys(bk.keys[: len(bk.keys) // 2], name, size))
        if how == "directory":
            target.unlink()
            target.mkdir()
        else:
            target.write_bytes(bytes(data))
        only_typed_errors(root)
        assert _answers(root) == _PRISTINE[carrier]
        if how in ("empty", "other-file", "other-size"):
            with pytest.warns(BaseKeysWarning):
                KeyTagger(Table(str(root))).tag(_TAG_KEYS)


# --- a damaged block, then the next upsert (issue 23) ----------------------------------------


@pytest.fixture(scope="module")
def built_versions(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], Path]:
    """Avro and Parquet carriers, table versions 6 (blocks appended to one log per slice)
    and 9 (a log file per commit): a base file, logs of updates and a delete."""
    out = {}
    for carrier in ("avro", "parquet"):
        for version in (6, 9):
            root = tmp_path_factory.mktemp(f"{carrier}{version}") / "t"
            t = MorTable.create(str(root), SCHEMA, key_field="id", partition_field="region",
                                ordering_field="ts", table_version=version,
                                config=WriteConfig(fsync=False, carrier=carrier))
            t.upsert(_batch(range(5), 1))
            t.upsert(_batch(range(3, 9), 2))
            t.delete(_batch(range(0, 1), 3))
            t.upsert(_batch(range(8, 12), 4))
            out[(carrier, version)] = root
    return out


_UPSERT = [1, 4, 7, 12]


def _upsert_then_read(root: Path) -> None:
    """The next upsert of keys of the damaged file group, then the table read back: every
    key once, the upserted keys with their new values, every live key tagged where it
    lives (the cumulative index a superset of the live keys)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        MorTable(str(root)).upsert(_batch(_UPSERT, 10))
        got = Table(str(root)).read()
        ids = got.column("id").to_pylist()
        assert len(ids) == len(set(ids))
        ts = dict(zip(ids, got.column("ts").to_pylist(), strict=True))
        # exactly the upsert's: a flip in an older block's records is caught by the block's
        # checksum (spec/index.md §4.12), it never raises an ordering value unnoticed
        assert all(ts.get(f"k{i}") == 10 for i in _UPSERT), ts
        table = Table(str(root))
        groups = {(s.partition, s.file_id) for s in table.file_slices()}
        tagged = KeyTagger(table).tag(ids)
        for key, loc in zip(ids, tagged.locations, strict=True):
            assert loc in groups, key


@_fuzz(60)
@given(carrier=st.sampled_from(["avro", "parquet"]), version=st.sampled_from([6, 9]),
       which=st.integers(0, 10_000), at=st.floats(0, 1, exclude_max=True),
       how=st.sampled_from(["flip", "truncate"]), xor=st.integers(1, 255))
def test_fuzz_damaged_block_then_upsert(built_versions: dict[tuple[str, int], Path],
                                        carrier: str, version: int, which: int, at: float,
                                        how: str, xor: int) -> None:
    """Bytes flipped or cut inside a data or delete block of a log, then an upsert of keys
    of that file group: it succeeds and the table reads consistently, or it raises a typed
    error naming a file of the table, which ``morlog repair --apply`` fixes (the next upsert
    then succeeds and the table reads consistently)."""
    from morlog.logformat.constants import BlockType
    from morlog.readers.logfile import LogFileReader
    from morlog.writers.repair import repair

    with _Copy(built_versions[(carrier, version)]) as root:
        spots = []
        for log in sorted((root / "eu").glob(".*.log.*")):
            with LogFileReader(str(log)) as r:
                spots += [(log, b.offset, b.size) for b in r.blocks()
                          if b.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA,
                                              BlockType.DELETE)]
        log, offset, size = spots[which % len(spots)]
        data = bytearray(log.read_bytes())
        pos = offset + int(at * size)
        if how == "flip":
            data[pos] ^= xor
        else:
            del data[pos:]
        log.write_bytes(bytes(data))
        try:
            _upsert_then_read(root)
        except MorlogError as exc:
            assert exc.path is not None and str(root) in exc.path, exc
            with warnings.catch_warnings():  # what the scan meets (unknown header keys)
                warnings.simplefilter("ignore")
                result = repair(str(root), apply=True)
            assert not result.skipped, result.skipped
            _upsert_then_read(root)


# --- silent corruption of log records (issue 23, spec/index.md §4.12) -------------------------


def _record_regions(root: Path) -> list[tuple[Path, int, int, tuple[int, int] | None]]:
    """The bytes of every data block of the table's data logs that a flip could turn into
    other records: (log file, first, end, the ``morlog.index`` value's range to leave out).
    From the block's format version field through its last record (Avro carrier: up to the
    trailer; Parquet carrier: the whole Parquet file but the Base64 trailer, which the
    trailer's own CRCs cover)."""
    import base64

    from morlog.logformat.constants import BlockType
    from morlog.logformat.index_trailer import PARQUET_KEY, parse_layout
    from morlog.logformat.parquet_content import parquet_key_value_metadata
    from morlog.readers.logfile import LogFileReader

    out: list[tuple[Path, int, int, tuple[int, int] | None]] = []
    for log in sorted(p for p in root.rglob("*.log.*") if ".hoodie" not in p.parts):
        with LogFileReader(str(log)) as reader:
            for b in reader.blocks():
                content = b.content()
                if b.block_type == BlockType.AVRO_DATA:
                    t = parse_layout(content).length
                    out.append((log.relative_to(root), b.offset + 14,
                                b.content_offset + len(content) - t, None))
                elif b.block_type == BlockType.PARQUET_DATA:
                    text = parquet_key_value_metadata(content)[PARQUET_KEY]
                    assert parse_layout(base64.b64decode(text))
                    at = b.content_offset + content.rindex(text)
                    out.append((log.relative_to(root), b.offset + 14,
                                b.content_offset + len(content), (at, at + len(text))))
    return out


def _flip_outcome(root: Path, pristine: list[Any]) -> str:
    """What a snapshot makes of the table: 'error' (a MorlogError), 'checksum' (a block
    skipped for its checksum), 'torn' (the scan found a CORRUPT block), 'same' rows, or
    'SILENT' (other rows, nothing said)."""
    from morlog.logformat.errors import CorruptBlockWarning
    from morlog.readers.logfile import LogFileReader

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            got = sorted(Table(str(root)).read().to_pylist(),
                         key=str)
        except MorlogError:
            return "error"
        if any(issubclass(w.category, CorruptBlockWarning) for w in caught):
            return "checksum"
        for log in (p for p in root.rglob("*.log.*") if ".hoodie" not in p.parts):
            with LogFileReader(str(log)) as reader:
                if any(b.is_corrupt for b in reader.blocks()):
                    return "torn"
    return "same" if got == pristine else "SILENT"


def _pristine_rows(root: Path) -> list[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sorted(Table(str(root)).read().to_pylist(),
                      key=str)


def _flip(root: Path, region: tuple[Path, int, int, tuple[int, int] | None], at: float,
          xor: int) -> None:
    rel, lo, hi, skip = region
    size = hi - lo - (skip[1] - skip[0] if skip else 0)
    i = lo + int(at * size)
    if skip is not None and i >= skip[0]:
        i += skip[1] - skip[0]
    path = root / rel
    data = bytearray(path.read_bytes())
    data[i] ^= xor
    path.write_bytes(bytes(data))


@_fuzz(60)
@given(carrier=st.sampled_from(["avro", "parquet"]), which=st.integers(0, 100),
       at=st.floats(0, 1, exclude_max=True), xor=st.integers(1, 255))
def test_fuzz_record_bytes_never_decode_silently(built: dict[str, Path], carrier: str,
                                                 which: int, at: float, xor: int) -> None:
    """A byte flipped anywhere in the header or records of a block morlog wrote is a typed
    error or a corrupt block (torn framing, or a CHECKSUM mismatch skipped with a warning):
    never other records without a word (issue 23 found 15 of 300 such flips)."""
    key = f"rows-{carrier}"
    if key not in _PRISTINE:
        _PRISTINE[key] = _pristine_rows(built[carrier])
        _PRISTINE[f"regions-{carrier}"] = _record_regions(built[carrier])
    regions = _PRISTINE[f"regions-{carrier}"]
    assert len(regions) >= 2, "the fixture's logs hold data blocks"
    with _Copy(built[carrier]) as root:
        _flip(root, regions[which % len(regions)], at, xor)
        assert _flip_outcome(root, _PRISTINE[key]) != "SILENT"


def test_record_byte_flips_counted(built: dict[str, Path]) -> None:
    """The count of issue 23 (300 flips), seeded: 0 silent, and the checksum is what
    catches most of them (the framing alone catches only flips in lengths and counts)."""
    import random

    rng = random.Random(23)
    counts: dict[str, int] = {}
    for carrier in ("avro", "parquet"):
        pristine = _pristine_rows(built[carrier])
        regions = _record_regions(built[carrier])
        for _ in range(150):
            with _Copy(built[carrier]) as root:
                _flip(root, rng.choice(regions), rng.random(), rng.randrange(1, 256))
                outcome = _flip_outcome(root, pristine)
            counts[outcome] = counts.get(outcome, 0) + 1
    assert counts.get("SILENT", 0) == 0, counts
    assert counts.get("checksum", 0) > 200, counts


@pytest.mark.parametrize("carrier", ["avro", "parquet"])
def test_a_damaged_instant_time_is_a_corrupt_block_not_a_vanished_one(
        tmp_path: Path, carrier: str) -> None:
    """A block whose INSTANT_TIME header changed names an instant the timeline does not
    have: under table version 6 (only completed instants' blocks count) the snapshot dropped
    it as a failed write's, silently. The checksum covers the header and is checked before
    the instant: a warned corrupt block."""
    from morlog.logformat.errors import CorruptBlockWarning
    from morlog.readers.logfile import LogFileReader

    root = tmp_path / "t"
    t = MorTable.create(str(root), SCHEMA, key_field="id", partition_field="region",
                        ordering_field="ts", table_version=6,
                        config=WriteConfig(fsync=False, carrier=carrier))  # type: ignore[arg-type]
    t.upsert(_batch(range(5), 1))
    t.upsert(_batch(range(3, 9), 2))
    (log,) = sorted(p for p in root.rglob("*.log.*") if ".hoodie" not in p.parts)
    with LogFileReader(str(log)) as reader:
        b = next(b for b in reader.blocks() if b.block_type.is_data)
    data = bytearray(log.read_bytes())
    assert b.instant is not None
    at = data.index(b.instant.encode(), b.offset, b.content_offset)
    data[at + len(b.instant) - 1] ^= 0x01  # the last digit: another, unknown instant
    log.write_bytes(bytes(data))
    with pytest.warns(CorruptBlockWarning, match=rf"{log.name}@{b.offset}: corrupt block"):
        Table(str(root)).read()


# --- CDC log files (spec/cdc.md) -----------------------------------------------------------


@pytest.fixture(scope="module")
def built_cdc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A table version 6 logging DATA_BEFORE_AFTER: CDC log files beside its log appends."""
    root = tmp_path_factory.mktemp("cdc") / "t"
    t = MorTable.create(str(root), SCHEMA, key_field="id", partition_field="region",
                        ordering_field="ts", table_version=6,
                        config=WriteConfig(fsync=False),
                        table_properties={"hoodie.table.cdc.enabled": "true"})
    t.upsert(_batch(range(5), 1))
    t.upsert(_batch(range(3, 9), 2))
    t.delete(_batch(range(0, 2), 3))
    return root


def _cdc_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.cdc"))


def _drop_cdc_crcs(root: Path) -> None:
    """The commits as Hudi writes them: cdcStats, no morlog CRC."""
    from morlog.config import STAT_CDC_CRC32

    for f in (root / ".hoodie").glob("*.deltacommit"):
        md = json.loads(f.read_text())
        md.get("extraMetadata", {}).pop(STAT_CDC_CRC32, None)
        f.write_text(json.dumps(md))


def _damage(path: Path, how: str, at: float, xor: int, junk: bytes) -> None:
    data = bytearray(path.read_bytes())
    i = int(at * len(data))
    if how == "flip":
        data[i] ^= xor
    elif how == "cut":
        del data[i:]
    else:
        data[i:i] = junk or b"\x00"
    path.write_bytes(bytes(data))


@_fuzz(40)
@given(how=st.sampled_from(["flip", "cut", "junk"]), which=st.integers(0, 100),
       at=st.floats(0, 1, exclude_max=True), xor=st.integers(1, 255),
       junk=st.binary(min_size=1, max_size=40), crc=st.booleans())
def test_fuzz_damaged_cdc_files_are_typed_errors(built_cdc: Path, how: str, which: int,
                                                 at: float, xor: int, junk: bytes,
                                                 crc: bool) -> None:
    """A CDC log file damaged anywhere (a flipped byte, cut, bytes inserted): with morlog's
    CRC the CDC query refuses it with a typed error, never other changes; without (a commit
    as Hudi writes it) it raises nothing but :class:`MorlogError` (a cut or grown file is
    still refused: its size is not the one cdcStats records)."""
    from morlog.readers.cdc import read_cdc

    pristine = read_cdc(Table(str(built_cdc)), None, None)
    with _Copy(built_cdc) as root:
        if not crc:
            _drop_cdc_crcs(root)
        files = _cdc_files(root)
        assert files, "the fixture holds CDC log files"
        _damage(files[which % len(files)], how, at, xor, junk)
        try:
            with warnings.catch_warnings():  # warnings are typed too (MorlogWarning)
                warnings.simplefilter("ignore", MorlogWarning)
                got = read_cdc(Table(str(root)), None, None)
        except MorlogError:
            return
        assert not crc and how == "flip", "a damaged CDC file read without an error"
        assert got.schema == pristine.schema
