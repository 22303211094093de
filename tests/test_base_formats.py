"""Base files of every format Hudi writes (spec/table.md "Base files"): Parquet, ORC, Lance.

Twins: a table written by morlog with Parquet base files is copied and its base files
converted to ORC or Lance (same names but the extension, so instants, file ids and meta
columns are identical); snapshot, tagging and Spark reads of the copy must give exactly the
Parquet table's rows. Tables created in ORC or Lance and written by morlog itself must read
like a Parquet table fed the same batches. Judges besides morlog: Java's ORC library (through
Spark's JVM) reads the ORC footer morlog writes, hudi-rs 0.5 reads the Lance tables (it
refuses ORC: "Config value 'orc' is not supported").
"""

from __future__ import annotations

import builtins
import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from morlog.compat.base_footer import encode_base_footer, parse_base_footer
from morlog.compat.orc_footer import add_user_metadata
from morlog.logformat import FormatError, UnsupportedFormatError, UsageError, WriteError
from morlog.logformat.table_files import format_properties, parse_properties
from morlog.readers.base_files import (
    BaseFileReader,
    BaseFormat,
    read_base_file,
    table_base_format,
)
from morlog.readers.lookup import KeyTagger
from morlog.readers.storage import LocalStorage
from morlog.readers.table import Table
from morlog.writers.client import MorTable
from morlog.writers.core.base_file import encode_base_file
from morlog.writers.options import WriteConfig

lance = pytest.importorskip("lance", reason="pylance is not installed (pip install .[lance])")

SCHEMA = pa.schema([("id", pa.string()), ("region", pa.string()), ("ts", pa.int64()),
                    ("amount", pa.float64()), ("n", pa.int32()), ("day", pa.date32()),
                    ("at", pa.timestamp("us", tz="UTC"))])
SMALL = dict(fsync=False, max_file_size=2_000_000, small_file_limit=1_500_000,
             record_size=100)
FORMATS = ["ORC", "LANCE"]
EPOCH = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def _batch(ids: list[int], ts: int) -> pa.Table:
    return pa.table({"id": [f"k{i:04d}" for i in ids],
                     "region": [("eu", "us")[i % 2] for i in ids],
                     "ts": [ts] * len(ids), "amount": [float(ts * 1000 + i) for i in ids],
                     "n": ids, "day": [dt.date(2024, 1, 1 + i % 28) for i in ids],
                     "at": [EPOCH + dt.timedelta(seconds=i, microseconds=ts) for i in ids]},
                    schema=SCHEMA)


def _set_props(path: Path, **changes: str | None) -> None:
    pp = path / ".hoodie" / "hoodie.properties"
    props = parse_properties(pp.read_text(), str(pp))
    for k, v in changes.items():
        key = k.replace("_", ".")
        if v is None:
            props.pop(key, None)
        else:
            props[key] = v
    pp.write_text(format_properties(props))


def _fmt(path: Path, value: str) -> None:
    _set_props(path, hoodie_table_base_file_format=value)


def _write(path: Path, fmt: str) -> None:
    """Create a table of base-file format ``fmt`` and write the same three commits: inserts
    (new base files), updates and routed inserts (logs), deletes."""
    MorTable.create(str(path), SCHEMA, key_field="id", partition_field="region",
                    ordering_field="ts", config=WriteConfig(**SMALL))
    if fmt != "PARQUET":
        _fmt(path, fmt.lower())  # any case, as Hudi's HoodieFileFormat.getValue
    t = MorTable(str(path), WriteConfig(**SMALL))
    t.upsert(_batch(list(range(200)), 1))
    t.upsert(_batch(list(range(150, 400)), 2))
    t.delete(pa.table({"id": ["k0001", "k0002", "zzz"], "region": ["us", "eu", "eu"]}))


def _base_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")
                  and p.suffix in (".parquet", ".orc", ".lance"))


def _convert(src: Path, dst: Path, fmt: str, footer: bool) -> None:
    """Copy the Parquet table ``src`` to ``dst`` with its base files in format ``fmt``
    (same name, other extension); ``footer``: with Hudi's bloom filter and min/max keys
    (written by morlog's writer), else plain pyarrow/pylance files without them."""
    shutil.copytree(src, dst)
    _fmt(dst, fmt)
    for p in _base_files(dst):
        records = pq.read_table(p)
        records = records.replace_schema_metadata(None)  # pyarrow puts the footer there
        target = p.with_suffix("." + fmt.lower())
        if footer:
            md = encode_base_footer(records.column("_hoodie_record_key"))
            target.write_bytes(encode_base_file(records, BaseFormat(fmt), {}, md))
        elif fmt == "ORC":
            orc.write_table(records, str(target))
        else:
            w = lance.file.LanceFileWriter(str(target), records.schema)
            w.write_batch(records)
            w.close()
        p.unlink()


def _sorted(t: pa.Table) -> list[dict[str, Any]]:
    return t.sort_by("_hoodie_record_key").to_pylist()


@pytest.fixture(scope="module")
def parquet_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("twins") / "parquet"
    _write(path, "PARQUET")
    return path


@pytest.fixture(scope="module", params=[(f, footer) for f in FORMATS for footer in (True, False)],
                ids=lambda p: f"{p[0]}-{'footer' if p[1] else 'plain'}")
def twin(request: pytest.FixtureRequest, parquet_table: Path) -> Path:
    fmt, footer = request.param
    dst = parquet_table.parent / f"{fmt}-{footer}"
    _convert(parquet_table, dst, fmt, footer)
    return dst


def test_the_twin_holds_only_its_format(twin: Path) -> None:
    names = {p.suffix for p in _base_files(twin)}
    assert names == {"." + Table(str(twin)).base_format.ext}
    assert len(_base_files(twin)) == 2


def test_snapshot_of_a_twin_is_the_parquet_snapshot(parquet_table: Path, twin: Path) -> None:
    want = Table(str(parquet_table)).read()
    got = Table(str(twin)).read()
    assert got.num_rows == want.num_rows == 398
    assert _sorted(got) == _sorted(want)
    cols = ["id", "amount"]
    assert _sorted(Table(str(twin)).read(columns=["_hoodie_record_key", *cols])) == _sorted(
        Table(str(parquet_table)).read(columns=["_hoodie_record_key", *cols]))


def test_time_travel_of_a_twin(parquet_table: Path, twin: Path) -> None:
    first = Table(str(parquet_table)).timeline.instants[0].requested
    assert _sorted(Table(str(twin)).read(as_of=first)) == _sorted(
        Table(str(parquet_table)).read(as_of=first))


def test_tagging_a_twin_finds_what_the_parquet_table_holds(parquet_table: Path,
                                                          twin: Path) -> None:
    keys = [f"k{i:04d}" for i in range(0, 420, 7)] + ["k0001", "k0002", "nope", ""]
    want = KeyTagger(Table(str(parquet_table)), use_base_keys=False).tag(keys)
    got = KeyTagger(Table(str(twin))).tag(keys)
    assert got.locations == want.locations
    assert got.as_dict()["nope"] is None and got.as_dict()["k0000"] is not None
    assert got.stats.base_footers == want.stats.base_footers == 2
    # the Parquet table's base files have base-key indexes (the twin's were converted)
    indexed = KeyTagger(Table(str(parquet_table))).tag(keys)
    assert indexed.locations == want.locations
    assert (indexed.stats.base_key_indexes, indexed.stats.base_footers) == (2, 0)
    # with partitions known
    parts = [("eu", "us")[int(k[1:]) % 2] if k.startswith("k") else "eu" for k in keys]
    assert KeyTagger(Table(str(twin))).tag(keys, parts).locations == want.locations


def test_the_footer_prunes_where_the_format_keeps_it(twin: Path) -> None:
    base = _base_files(twin)[0]
    with BaseFileReader(LocalStorage().source(str(base))) as r:
        info = r.footer()
        keys = r.read(["_hoodie_record_key"]).column(0).to_pylist()
    footer = twin.name.endswith("True")
    assert (info.bloom is not None) is footer
    if footer:
        assert (info.min_key, info.max_key) == (min(keys), max(keys))
        assert info.type_code == "DYNAMIC_V0"
    # absent keys: with a footer the key column is not read at all
    from morlog.readers.lookup import PreparedKeys, base_file_hits

    src = LocalStorage().source(str(base))
    hits = base_file_hits(src, "_hoodie_record_key", PreparedKeys(pa.array(["zz1", "zz2"])))
    src.close()
    assert hits.hits.size == 0 and hits.key_column_read is not footer


def test_spark_reads_a_twin_like_the_parquet_table(spark: Any, parquet_table: Path,  # noqa: F811
                                                   twin: Path) -> None:
    df = spark.read.format("morlog").load(str(twin))
    got = sorted((r.asDict() for r in df.collect()), key=lambda r: r["_hoodie_record_key"])
    want = _sorted(Table(str(parquet_table)).read())
    assert [r["_hoodie_record_key"] for r in got] == [r["_hoodie_record_key"] for r in want]
    assert [r["amount"] for r in got] == [r["amount"] for r in want]
    assert [(r["n"], r["day"]) for r in got] == [(r["n"], r["day"]) for r in want]


@pytest.mark.parametrize("fmt", FORMATS)
def test_morlog_writes_base_files_in_the_tables_format(tmp_path: Path, parquet_table: Path,
                                                       fmt: str) -> None:
    path = tmp_path / fmt
    _write(path, fmt)
    assert {p.suffix for p in _base_files(path)} == {"." + fmt.lower()}
    data = ["id", "region", "ts", "amount", "n", "day", "at"]

    def rows(p: Path) -> list[dict[str, Any]]:
        return Table(str(p)).read(columns=data).select(data).sort_by("id").to_pylist()

    assert rows(path) == rows(parquet_table)
    got = Table(str(path)).read()
    assert got.schema.field("at").type == pa.timestamp("us", tz="UTC")
    # every base file carries Hudi's index, and it is right
    for base in _base_files(path):
        with BaseFileReader(LocalStorage().source(str(base))) as r:
            info = r.footer()
            keys = r.read(["_hoodie_record_key"]).column(0)
        assert info.bloom is not None and info.type_code == "DYNAMIC_V0"
        assert (info.min_key, info.max_key) == (pc.min(keys).as_py(), pc.max(keys).as_py())
    keys = [f"k{i:04d}" for i in range(0, 420, 3)]
    assert KeyTagger(Table(str(path))).tag(keys).as_dict().keys() == set(keys)
    found = {k for k, v in KeyTagger(Table(str(path))).tag(keys).as_dict().items() if v}
    assert found == {k for k in keys if int(k[1:]) < 400 and k not in ("k0001", "k0002")}


def test_hudi_rs_reads_the_lance_tables_morlog_writes(tmp_path: Path,
                                                      parquet_table: Path) -> None:
    hudi = pytest.importorskip("hudi")
    path = tmp_path / "lance"
    _write(path, "LANCE")

    def rows(p: Path) -> list[tuple[Any, ...]]:
        batches = hudi.HudiTableBuilder.from_base_uri(str(p)).build().read()
        t = pa.Table.from_batches(batches)
        return sorted((r["id"], r["ts"], r["amount"]) for r in t.to_pylist())

    assert rows(path) == rows(parquet_table)
    assert len(rows(path)) == 398


def test_hudi_rs_refuses_orc_tables(tmp_path: Path) -> None:
    hudi = pytest.importorskip("hudi")
    path = tmp_path / "orc"
    _write(path, "ORC")
    with pytest.raises(Exception, match="(?i)orc.*not supported"):
        hudi.HudiTableBuilder.from_base_uri(str(path)).build().read()


def test_javas_orc_library_reads_the_footer_morlog_writes(spark: Any,  # noqa: F811
                                                          tmp_path: Path) -> None:
    path = tmp_path / "orc"
    _write(path, "ORC")
    base = str(_base_files(path)[0])
    jvm = spark._jvm
    reader = jvm.org.apache.orc.OrcFile.createReader(
        jvm.org.apache.hadoop.fs.Path(base),
        jvm.org.apache.orc.OrcFile.readerOptions(spark._jsc.hadoopConfiguration()))
    utf8 = jvm.java.nio.charset.StandardCharsets.UTF_8

    def value(key: str) -> str:
        return str(utf8.decode(reader.getMetadataValue(key)).toString())

    keys = set(reader.getMetadataKeys())
    assert {"org.apache.hudi.bloomfilter", "hoodie_bloom_filter_type_code",
            "hoodie_min_record_key", "hoodie_max_record_key", "orc.avro.schema"} <= keys
    assert str(reader.getCompressionKind().toString()) == "ZLIB"  # Hudi's default codec
    md = {k.encode(): value(k).encode() for k in keys}
    ours = orc.ORCFile(base).metadata
    assert md == dict(ours)
    info = parse_base_footer(md)
    assert info.bloom is not None and info.min_key == value("hoodie_min_record_key")
    assert spark.read.orc(base).count() == int(reader.getNumberOfRows())


@pytest.mark.parametrize("codec", ["uncompressed", "zlib", "snappy", "zstd", "lz4"])
def test_orc_user_metadata_survives_every_codec_and_big_values(codec: str) -> None:
    t = pa.table({"a": [str(i) for i in range(3000)], "b": list(range(3000))})
    sink = pa.BufferOutputStream()
    orc.write_table(t, sink, compression=codec)
    big = bytes(range(256)) * 2000  # longer than a compression block: several chunks
    out = add_user_metadata(sink.getvalue().to_pybytes(), {b"k1": big, b"k2": b"v"})
    f = orc.ORCFile(pa.BufferReader(out))
    assert dict(f.metadata) == {b"k1": big, b"k2": b"v"}
    assert f.read().equals(t)


def test_orc_footer_patch_rejects_foreign_bytes() -> None:
    with pytest.raises(FormatError, match="not an ORC file"):
        add_user_metadata(b"PAR1....", {b"k": b"v"})
    with pytest.raises(FormatError):
        add_user_metadata(b"ORC" + b"\x00" * 8 + b"\x30", {b"k": b"v"})


# --- the table's format setting ----------------------------------------------------------


@pytest.mark.parametrize(("value", "want"), [(None, "PARQUET"), ("parquet", "PARQUET"),
                                             ("Orc", "ORC"), ("LANCE", "LANCE"),
                                             (" lance ", "LANCE")])
def test_format_values(value: str | None, want: str) -> None:
    props = {} if value is None else {"hoodie.table.base.file.format": value}
    assert table_base_format(props) is BaseFormat(want)
    assert table_base_format({"hoodie.table.ro.file.format": want}) is BaseFormat(want)


@pytest.mark.parametrize("value", ["HFILE", "hfile", "AVRO", "delta"])
def test_unsupported_formats_are_typed_errors_when_a_table_is_opened(tmp_path: Path,
                                                                     value: str) -> None:
    MorTable.create(str(tmp_path), SCHEMA, key_field="id", config=WriteConfig(**SMALL))
    _fmt(tmp_path, value)
    for opener in (Table, MorTable):
        with pytest.raises(UnsupportedFormatError,
                           match=f"hoodie.table.base.file.format={value}") as e:
            opener(str(tmp_path))
        assert e.value.actual == value
        assert e.value.expected == ["PARQUET", "ORC", "LANCE"]
    if value.upper() == "HFILE":
        assert "metadata table" in str(e.value)


def test_a_base_file_of_another_format_is_never_ignored(parquet_table: Path,
                                                        tmp_path: Path) -> None:
    path = tmp_path / "mixed"
    shutil.copytree(parquet_table, path)
    base = _base_files(path)[0]
    orc.write_table(pq.read_table(base), str(base.with_suffix(".orc")))
    with pytest.raises(FormatError, match="ORC base file in a table whose "
                                          "hoodie.table.base.file.format is PARQUET"):
        Table(str(path)).read()
    with pytest.raises(FormatError):  # the slices are listed on the first lookup
        KeyTagger(Table(str(path))).tag(["any-key"])


def test_missing_pylance_names_the_extra(parquet_table: Path, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "lance"
    _convert(parquet_table, path, "LANCE", True)
    real = builtins.__import__

    def no_lance(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "lance" or name.startswith("lance."):
            raise ImportError("No module named 'lance'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_lance)
    table = Table(str(path))  # opening needs no pylance
    for call in (table.read, lambda: KeyTagger(table).tag(["k0000"])):
        with pytest.raises(UsageError, match=r"pip install 'morlog\[lance\]'"):
            call()
    with pytest.raises(UsageError, match=r"morlog\[lance\]"):
        MorTable(str(path), WriteConfig(route_inserts=False, **SMALL)).insert(_batch([900], 9))


@pytest.mark.parametrize("fmt", FORMATS)
def test_rollback_deletes_the_failed_instants_base_files(tmp_path: Path, fmt: str) -> None:
    _write(tmp_path, fmt)
    before = Table(str(tmp_path)).read()
    t = MorTable(str(tmp_path), WriteConfig(**SMALL))
    records = t.validate(_batch([1000, 1002], 5), "insert")
    fid = "0b0b0b0b-0000-0000-0000-000000000000-0"
    with pytest.raises(WriteError, match="rolled back: RuntimeError: boom"):
        with t.commit("insert") as c:
            c.start([("eu", fid)])
            t.write_group(c.instant, "eu", fid, None, records, None)
            assert any(p.name.startswith(fid) for p in _base_files(tmp_path))
            raise RuntimeError("boom")
    assert not any(p.name.startswith(fid) for p in _base_files(tmp_path))
    assert _sorted(Table(str(tmp_path)).read()) == _sorted(before)


def test_read_base_file_by_extension(twin: Path) -> None:
    base = _base_files(twin)[0]
    t = read_base_file(str(base), ["id", "_hoodie_record_key", "nope"])
    assert t.column_names == ["_hoodie_record_key", "id"]
    with pytest.raises(UsageError, match="not a base file"):
        read_base_file(str(twin / ".hoodie" / "hoodie.properties"))


@pytest.mark.parametrize("fmt", FORMATS)
def test_spark_writes_into_a_table_of_each_format(spark: Any, tmp_path: Path,  # noqa: F811
                                                  fmt: str) -> None:
    path = tmp_path / fmt
    schema = pa.schema([("id", pa.string()), ("region", pa.string()), ("ts", pa.int64()),
                        ("amount", pa.float64())])
    MorTable.create(str(path), schema, key_field="id", partition_field="region",
                    ordering_field="ts", config=WriteConfig(**SMALL))
    _fmt(path, fmt)
    df = spark.createDataFrame([(f"k{i}", ("eu", "us")[i % 2], 1, float(i)) for i in range(30)],
                               "id string, region string, ts long, amount double")
    df.repartition(2).write.format("morlog").mode("append").save(str(path))
    df2 = spark.createDataFrame([(f"k{i}", ("eu", "us")[i % 2], 2, float(100 + i))
                                 for i in range(20, 40)], df.schema)
    df2.write.format("morlog").mode("append").save(str(path))
    assert {p.suffix for p in _base_files(path)} == {"." + fmt.lower()}
    rows = {r["id"]: (r["ts"], r["amount"]) for r in Table(str(path)).read().to_pylist()}
    assert len(rows) == 40 and rows["k25"] == (2, 125.0) and rows["k5"] == (1, 5.0)
    back = spark.read.format("morlog").load(str(path))
    assert {r.id: (r.ts, r.amount) for r in back.collect()} == rows
