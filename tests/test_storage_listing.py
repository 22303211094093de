"""Local directory listings while another writer publishes files beside them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from morlog.readers.storage import LocalStorage


def test_a_file_gone_mid_listing_does_not_empty_the_listing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer's temporary file, published by a link and removed, may vanish between the
    directory read and its stat: the listing leaves it out and keeps every other file (it
    used to return an empty listing, and a reader saw a partition without files)."""
    for name in ("a.parquet", ".tmp-b", "c.log"):
        (tmp_path / name).write_bytes(b"x" * 3)
    real = os.scandir

    class Gone:
        def __init__(self, entry: Any) -> None:
            self._e = entry
            self.name = entry.name

        def is_file(self) -> bool:
            return True

        def stat(self) -> os.stat_result:
            raise FileNotFoundError(self.name)

    class Scan:
        def __init__(self, path: str) -> None:
            self._it = real(path)

        def __enter__(self) -> Any:
            return (Gone(e) if e.name.startswith(".tmp") else e for e in self._it)

        def __exit__(self, *exc: object) -> None:
            self._it.close()

    monkeypatch.setattr(os, "scandir", Scan)
    st = LocalStorage()
    assert st.sizes(str(tmp_path)) == {"a.parquet": 3, "c.log": 3}
    assert set(st.versions(str(tmp_path))) == {"a.parquet", "c.log"}


@pytest.mark.parametrize("form", ["file:{}", "file://{}", "file://localhost{}", "{}"])
def test_every_form_of_a_local_uri_is_the_same_table(tmp_path: Path, form: str) -> None:
    """``file:/abs`` (Hadoop's and Spark's form) and ``file://localhost/abs`` name the local
    path; ``file:/abs`` used to be taken for a relative path named ``file:`` under the
    working directory, and the table was written there."""
    import pyarrow as pa

    from morlog.readers.storage import TableLocation
    from morlog.readers.table import Table
    from morlog.writers.client import MorTable

    root = tmp_path / "t"
    uri = form.format(root.as_posix())
    assert TableLocation.of(uri).path == root.as_posix()
    schema = pa.schema([("id", pa.string()), ("v", pa.int64())])
    MorTable.create(uri, schema, key_field="id")
    MorTable(uri).upsert(pa.table({"id": ["a"], "v": [1]}, schema=schema))
    assert (root / ".hoodie" / "hoodie.properties").is_file()
    assert Table(root.as_posix()).read(columns=["id", "v"]).to_pylist() == [{"id": "a", "v": 1}]
