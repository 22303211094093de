"""Reading tables and log files on S3 through pyarrow.fs, against a local S3 server (moto)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("moto", reason="moto is not installed (pip install .[test])")

from morlog.cli import main  # noqa: E402
from morlog.readers import LogFileReader  # noqa: E402
from morlog.readers.lookup import KeyTagger  # noqa: E402
from morlog.readers.table import Table  # noqa: E402

from .hudi_fixtures import requires_fixtures, standalone_log_files, tables  # noqa: E402


def _upload(query: str, local: Path, bucket: str, key: str) -> str:
    import pyarrow.fs as pafs

    uri = f"s3://test:test@{bucket}/{key}?{query}"
    fs, path = pafs.FileSystem.from_uri(uri)
    fs.create_dir(bucket)
    if local.is_dir():
        pafs.copy_files(str(local), path, source_filesystem=pafs.LocalFileSystem(),
                        destination_filesystem=fs)
    else:
        with fs.open_output_stream(path) as out:
            out.write(local.read_bytes())
    return uri


def _rows(t: Table) -> list[dict[str, Any]]:
    return sorted(t.read().to_pylist(), key=lambda r: r["_hoodie_record_key"])


@requires_fixtures
@pytest.mark.parametrize("path", tables(), ids=lambda p: p.name)
def test_tables_on_s3_read_like_local_ones(s3: str, path: Path) -> None:
    uri = _upload(s3, path, "tables", path.name)
    remote, local = Table(uri), Table(str(path))
    assert remote.partitions() == local.partitions()
    for part in local.partitions():  # one listing gives every file's size
        want = local.storage.sizes(local.slice_dir(part))
        assert want and remote.storage.sizes(remote.slice_dir(part)) == want
    assert _rows(remote) == _rows(local)
    for inst in [i.requested for i in local.timeline.completed()][:3]:
        assert sorted(remote.read(inst).to_pylist(), key=str) == sorted(
            local.read(inst).to_pylist(), key=str)
    keys = [r["_hoodie_record_key"] for r in _rows(local)] + ["nope"]
    assert KeyTagger(remote).tag(keys).as_dict() == KeyTagger(local).tag(keys).as_dict()


@requires_fixtures
def test_log_files_on_s3_through_the_cli(s3: str, capsys: pytest.CaptureFixture[str]) -> None:
    for log in standalone_log_files():
        uri = _upload(s3, log, "logs", log.name)
        assert main(["blocks", uri, "--json"]) == 0
        remote = json.loads(capsys.readouterr().out)
        assert main(["blocks", str(log), "--json"]) == 0
        assert remote == json.loads(capsys.readouterr().out)
        with LogFileReader(uri) as r:
            assert [b.offset for b in r.blocks()] == [b.offset for b in r.reversed_blocks()]
        assert main(["lookup", uri, "some-key", "--json"]) == 0
        remote_lookup = json.loads(capsys.readouterr().out)
        assert main(["lookup", str(log), "some-key", "--json"]) == 0
        assert remote_lookup == json.loads(capsys.readouterr().out)


def test_client_written_table_read_from_s3(s3: str, tmp_path: Path) -> None:
    import pyarrow as pa

    from morlog.writers.client import MorTable
    from morlog.writers.options import WriteConfig

    schema = pa.schema([("id", pa.string()), ("p", pa.string()), ("ts", pa.int64())])
    t = MorTable.create(str(tmp_path / "t"), schema, key_field="id", partition_field="p",
                        ordering_field="ts", config=WriteConfig(fsync=False))
    t.upsert(pa.table({"id": ["a", "b", "c"], "p": ["x", "y", "x"], "ts": [1, 1, 1]},
                      schema=schema))
    t.upsert(pa.table({"id": ["b", "d"], "p": ["y", "x"], "ts": [2, 2]}, schema=schema))
    uri = _upload(s3, tmp_path / "t", "written", "t")
    rows = {r["id"]: r["ts"] for r in Table(uri).read().to_pylist()}
    assert rows == {"a": 1, "b": 2, "c": 1, "d": 2}
